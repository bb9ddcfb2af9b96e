//! Test and benchmark harness: an in-process host with the aggregated API server registered
//! behind it (as `flotilla local-up` does), Clusters whose status the test writes itself, and
//! helpers to create and wait for bindings.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::path::Path;
use std::time::Duration;

use flotilla_karmada_api::{Cluster, ResourceBinding};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

pub use flotilla_testwait::eventually;

/// How long a test waits for what it expects.
pub const WAIT: Duration = Duration::from_secs(60);

pub struct Env {
    pub client: kube::Client,
    pub host: flotilla_host::RunningHost,
    pub aggregated: flotilla_aggregated::RunningAggregated,
    pub dir: tempfile::TempDir,
}

pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    flotilla_testenv::client_for(kubeconfig, None)
        .await
        .unwrap()
}

impl Env {
    pub async fn start() -> Env {
        let flotilla_testenv::ControlPlane {
            dir,
            host,
            aggregated,
            client,
        } = flotilla_testenv::ControlPlane::start().await.unwrap();
        Env {
            client,
            host,
            aggregated,
            dir,
        }
    }

    pub async fn stop(self) {
        self.aggregated.stop().await;
        self.host.stop().await;
    }

    pub fn clusters(&self) -> Api<Cluster> {
        Api::all(self.client.clone())
    }

    pub fn bindings(&self) -> Api<ResourceBinding> {
        Api::namespaced(self.client.clone(), "default")
    }

    /// Creates a Cluster and writes its status: Ready, apps/v1 Deployment served, `cpu`
    /// cores free (allocatable `cpu`+1, allocated 1) on one node, 110 pods.
    /// Writes `default/<name>`'s `status.aggregatedStatus`, as the binding controller would.
    pub async fn set_aggregated_status(&self, name: &str, items: Vec<Value>) {
        self.bindings()
            .patch_status(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"aggregatedStatus": items}})),
            )
            .await
            .unwrap();
    }

    pub async fn add_cluster(&self, name: &str, cpu: u32) {
        let c: Cluster = serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"},
        }))
        .unwrap();
        self.clusters()
            .create(&PostParams::default(), &c)
            .await
            .unwrap();
        self.set_capacity(name, cpu).await;
    }

    /// Rewrites a Cluster's status with `cpu` free cores.
    pub async fn set_capacity(&self, name: &str, cpu: u32) {
        let status = json!({"status": {
            "kubernetesVersion": "v1.33.2",
            "conditions": [{
                "type": "Ready", "status": "True", "reason": "ClusterReady",
                "message": "cluster is healthy and ready to accept workloads",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }],
            "apiEnablements": [{
                "groupVersion": "apps/v1",
                "resources": [{"name": "deployments", "kind": "Deployment"}],
            }],
            "resourceSummary": {
                "allocatable": {"cpu": (cpu + 1).to_string(), "memory": "64Gi", "pods": "110"},
                "allocated": {"cpu": "1", "memory": "1Gi", "pods": "10"},
                "allocating": {},
            },
            "nodeCapacities": [{
                "count": 1,
                "available": {"cpu": cpu.to_string(), "memory": "63Gi", "pods": "100"},
            }],
        }});
        self.clusters()
            .patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();
    }

    /// Sets a Cluster's taints.
    pub async fn set_taints(&self, name: &str, taints: Value) {
        self.clusters()
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"taints": taints}})),
            )
            .await
            .unwrap();
    }

    /// Creates `default/<name>` for Deployment `default/<template>`.
    pub async fn create_binding(
        &self,
        name: &str,
        template: &str,
        replicas: i32,
        cpu: Option<&str>,
        placement: Value,
    ) -> ResourceBinding {
        let mut spec = json!({
            "resource": {
                "apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                "name": template, "uid": format!("uid-{template}"),
            },
            "replicas": replicas,
            "placement": placement,
        });
        if let Some(cpu) = cpu {
            spec["replicaRequirements"] = json!({"resourceRequest": {"cpu": cpu}});
        }
        self.create_binding_spec(name, spec).await
    }

    /// Creates `default/<name>` with this spec.
    pub async fn create_binding_spec(&self, name: &str, spec: Value) -> ResourceBinding {
        let rb: ResourceBinding = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec,
        }))
        .unwrap();
        self.bindings()
            .create(&PostParams::default(), &rb)
            .await
            .unwrap()
    }

    /// Polls `default/<name>` until `check` holds.
    pub async fn wait_binding(
        &self,
        name: &str,
        what: &str,
        check: impl Fn(&ResourceBinding) -> bool,
    ) -> ResourceBinding {
        eventually(&format!("binding {name}: {what}"), WAIT, || async {
            let rb = self.bindings().get(name).await.unwrap();
            if check(&rb) {
                Ok(rb)
            } else {
                Err(format!("{:#}", serde_json::to_value(&rb).unwrap()))
            }
        })
        .await
    }

    /// Events about `kind/name` in `namespace` (as kubectl describe finds them).
    pub async fn events_for(&self, namespace: &str, kind: &str, name: &str) -> Vec<Event> {
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        let selector = format!("involvedObject.kind={kind},involvedObject.name={name}");
        api.list(&ListParams::default().fields(&selector))
            .await
            .unwrap()
            .items
    }

    /// Polls until an event with `reason` about `kind/name` exists.
    pub async fn wait_event(&self, kind: &str, name: &str, reason: &str) -> Event {
        eventually(
            &format!("a {reason} event about {kind}/{name}"),
            WAIT,
            || async {
                self.events_for("default", kind, name)
                    .await
                    .into_iter()
                    .find(|e| e.reason.as_deref() == Some(reason))
            },
        )
        .await
    }
}

/// `spec.clusters` as (name, replicas).
pub fn targets(rb: &ResourceBinding) -> Vec<(String, i32)> {
    rb.spec
        .clusters
        .iter()
        .map(|t| (t.name.clone(), t.replicas))
        .collect()
}

pub fn pairs(p: &[(&str, i32)]) -> Vec<(String, i32)> {
    p.iter().map(|(n, r)| ((*n).to_string(), *r)).collect()
}

/// The `Scheduled` condition's (status, reason, message).
pub fn scheduled(rb: &ResourceBinding) -> Option<(String, String, String)> {
    rb.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Scheduled")
            .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
    })
}

/// Scheduled=True for the current generation.
pub fn is_scheduled(rb: &ResourceBinding) -> bool {
    scheduled(rb).is_some_and(|(s, _, _)| s == "True")
        && rb
            .status
            .as_ref()
            .and_then(|s| s.scheduler_observed_generation)
            == rb.metadata.generation
}

pub fn dynamic_placement() -> Value {
    json!({"replicaScheduling": {
        "replicaSchedulingType": "Divided",
        "replicaDivisionPreference": "Weighted",
        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
    }})
}

/// Options for tests: no reservation carry-over between sequential bindings (the test
/// clusters never report usage), fast retries.
pub fn test_options() -> flotilla_scheduler_controller::SchedulerOptions {
    flotilla_scheduler_controller::SchedulerOptions {
        reservation_ttl: Duration::ZERO,
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_secs(2),
        ..Default::default()
    }
}
