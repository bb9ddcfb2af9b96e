//! Health of a member object (Karmada's `healthy.go`, plus a Job rule), recorded per manifest
//! in `Work.status.manifestStatuses[].health` and from there in the binding.

use flotilla_karmada_api::work::ResourceHealth;
use serde_json::Value;

use crate::Kind;
use crate::fields::{condition_true, generation, int_at, opt_int, str_at};

/// Health of a member object. Kinds without a rule are Healthy, as Karmada treats them;
/// Unknown only for something that is not an object at all.
pub fn health(obj: &Value) -> ResourceHealth {
    if !obj.is_object() {
        return ResourceHealth::Unknown;
    }
    let healthy = match Kind::of(obj) {
        Kind::Deployment | Kind::StatefulSet => {
            let updated = int_at(obj, "/status/updatedReplicas");
            observed(obj)
                && opt_int(obj, "/spec/replicas").is_none_or(|want| updated >= want)
                && int_at(obj, "/status/availableReplicas") >= updated
        }
        Kind::ReplicaSet => {
            observed(obj)
                && opt_int(obj, "/spec/replicas")
                    .is_none_or(|want| int_at(obj, "/status/availableReplicas") >= want)
        }
        Kind::DaemonSet => {
            let updated = int_at(obj, "/status/updatedNumberScheduled");
            observed(obj)
                && updated >= int_at(obj, "/status/desiredNumberScheduled")
                && int_at(obj, "/status/numberAvailable") >= updated
        }
        Kind::Job => !obj
            .get("status")
            .is_some_and(|s| condition_true(s, "Failed")),
        Kind::Pod => match str_at(obj, "/status/phase") {
            "Succeeded" => true,
            "Running" => obj
                .get("status")
                .is_some_and(|s| condition_true(s, "Ready")),
            _ => false,
        },
        Kind::Service => {
            str_at(obj, "/spec/type") != "LoadBalancer"
                || obj
                    .pointer("/status/loadBalancer/ingress")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .any(|i| !str_at(i, "/ip").is_empty() || !str_at(i, "/hostname").is_empty())
        }
        Kind::PersistentVolumeClaim => str_at(obj, "/status/phase") == "Bound",
        Kind::CronJob | Kind::Ingress | Kind::Other => true,
    };
    if healthy {
        ResourceHealth::Healthy
    } else {
        ResourceHealth::Unhealthy
    }
}

/// The workload controller has seen the current spec.
fn observed(obj: &Value) -> bool {
    int_at(obj, "/status/observedGeneration") == generation(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ResourceHealth::{Healthy, Unhealthy, Unknown};
    use serde_json::json;

    fn deploy(generation: i64, replicas: i64, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "generation": generation},
            "spec": {"replicas": replicas}, "status": status})
    }

    #[test]
    fn workloads() {
        let table: Vec<(&str, Value, ResourceHealth)> = vec![
            (
                "deployment ready",
                deploy(
                    2,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Healthy,
            ),
            (
                "deployment not observed",
                deploy(
                    3,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 3}),
                ),
                Unhealthy,
            ),
            (
                "deployment rolling",
                deploy(
                    2,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 2, "availableReplicas": 3}),
                ),
                Unhealthy,
            ),
            (
                "deployment updated but unavailable",
                deploy(
                    2,
                    3,
                    json!({"observedGeneration": 2, "updatedReplicas": 3, "availableReplicas": 1}),
                ),
                Unhealthy,
            ),
            (
                "deployment no status yet",
                deploy(1, 3, json!(null)),
                Unhealthy,
            ),
            (
                "deployment scaled to 0",
                deploy(4, 0, json!({"observedGeneration": 4})),
                Healthy,
            ),
            (
                "statefulset ready",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 1},
                    "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "updatedReplicas": 2, "availableReplicas": 2}}),
                Healthy,
            ),
            (
                "replicaset short",
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generation": 1},
                    "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "availableReplicas": 1}}),
                Unhealthy,
            ),
            (
                "replicaset ready",
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generation": 1},
                    "spec": {"replicas": 2}, "status": {"observedGeneration": 1, "availableReplicas": 2}}),
                Healthy,
            ),
            (
                "daemonset ready",
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
                    "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3}}),
                Healthy,
            ),
            (
                "daemonset updating",
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
                    "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 2, "numberAvailable": 2}}),
                Unhealthy,
            ),
        ];
        for (name, obj, want) in table {
            assert_eq!(health(&obj), want, "{name}");
        }
    }

    #[test]
    fn other_kinds() {
        let table: Vec<(&str, Value, ResourceHealth)> = vec![
            (
                "job running",
                json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"active": 1}}),
                Healthy,
            ),
            (
                "job failed",
                json!({"apiVersion": "batch/v1", "kind": "Job",
                    "status": {"conditions": [{"type": "Failed", "status": "True"}]}}),
                Unhealthy,
            ),
            (
                "pod running ready",
                json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True"}]}}),
                Healthy,
            ),
            (
                "pod running not ready",
                json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running",
                    "conditions": [{"type": "Ready", "status": "False"}]}}),
                Unhealthy,
            ),
            (
                "pod succeeded",
                json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Succeeded"}}),
                Healthy,
            ),
            (
                "pod pending",
                json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Pending"}}),
                Unhealthy,
            ),
            (
                "pvc bound",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound"}}),
                Healthy,
            ),
            (
                "pvc pending",
                json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Pending"}}),
                Unhealthy,
            ),
            (
                "clusterip service",
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"}}),
                Healthy,
            ),
            (
                "loadbalancer without ingress",
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
                    "status": {"loadBalancer": {}}}),
                Unhealthy,
            ),
            (
                "loadbalancer with hostname",
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
                    "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example"}]}}}),
                Healthy,
            ),
            (
                "configmap",
                json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                Healthy,
            ),
            (
                "crd",
                json!({"apiVersion": "example.io/v1", "kind": "Widget", "status": {"ok": false}}),
                Healthy,
            ),
            ("not an object", json!("x"), Unknown),
        ];
        for (name, obj, want) in table {
            assert_eq!(health(&obj), want, "{name}");
        }
    }
}
