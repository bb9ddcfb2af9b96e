//! Objects a workload's pods cannot start without, which `propagateDeps: true` sends to the
//! same clusters (Karmada's `dependencies.go` with the pod visitors it lifts from
//! Kubernetes): ConfigMaps and Secrets named by volumes, projections, env and envFrom,
//! image pull Secrets, the ServiceAccount unless it is `default`, and PVCs.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::Kind;
use crate::fields::str_at;

/// A namespaced object a template depends on. Ordered by apiVersion, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dependency {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// Volume sources that name a Secret: (source, pointer to the Secret's name in it).
const SECRET_VOLUME_REFS: &[(&str, &str)] = &[
    ("secret", "/secretName"),
    ("azureFile", "/secretName"),
    ("cephfs", "/secretRef/name"),
    ("cinder", "/secretRef/name"),
    ("flexVolume", "/secretRef/name"),
    ("rbd", "/secretRef/name"),
    ("scaleIO", "/secretRef/name"),
    ("iscsi", "/secretRef/name"),
    ("storageos", "/secretRef/name"),
    ("csi", "/nodePublishSecretRef/name"),
];

/// Objects the template's pod spec refers to, deduplicated and sorted.
pub fn dependencies(obj: &Value) -> Vec<Dependency> {
    let kind = Kind::of(obj);
    let Some(spec) = kind.pod_spec_path().and_then(|p| obj.pointer(p)) else {
        return Vec::new();
    };
    let namespace = str_at(obj, "/metadata/namespace");
    let mut found: BTreeSet<(&'static str, &str)> = BTreeSet::new();

    for key in ["containers", "initContainers", "ephemeralContainers"] {
        for c in list(spec, key) {
            for env in list(c, "env") {
                found.insert(("Secret", str_at(env, "/valueFrom/secretKeyRef/name")));
                found.insert(("ConfigMap", str_at(env, "/valueFrom/configMapKeyRef/name")));
            }
            for from in list(c, "envFrom") {
                found.insert(("Secret", str_at(from, "/secretRef/name")));
                found.insert(("ConfigMap", str_at(from, "/configMapRef/name")));
            }
        }
    }
    for s in list(spec, "imagePullSecrets") {
        found.insert(("Secret", str_at(s, "/name")));
    }
    for vol in list(spec, "volumes") {
        for (source, pointer) in SECRET_VOLUME_REFS {
            if let Some(src) = vol.get(*source) {
                found.insert(("Secret", str_at(src, pointer)));
            }
        }
        found.insert(("ConfigMap", str_at(vol, "/configMap/name")));
        for p in vol
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            found.insert(("Secret", str_at(p, "/secret/name")));
            found.insert(("ConfigMap", str_at(p, "/configMap/name")));
        }
        found.insert((
            "PersistentVolumeClaim",
            str_at(vol, "/persistentVolumeClaim/claimName"),
        ));
    }
    let sa = str_at(spec, "/serviceAccountName");
    if sa != "default" {
        found.insert(("ServiceAccount", sa));
    }
    // A StatefulSet creates the claims of its volumeClaimTemplates in the member itself; a
    // same-named claim on the host is a placeholder, not something to propagate.
    let claim_templates: BTreeSet<&str> = if kind == Kind::StatefulSet {
        list(
            obj.pointer("/spec").unwrap_or(&Value::Null),
            "volumeClaimTemplates",
        )
        .map(|t| str_at(t, "/metadata/name"))
        .collect()
    } else {
        BTreeSet::new()
    };
    found
        .into_iter()
        .filter(|(kind, name)| {
            let template_claim = *kind == "PersistentVolumeClaim" && claim_templates.contains(name);
            !name.is_empty() && !template_claim
        })
        .map(|(kind, name)| Dependency {
            api_version: "v1".to_string(),
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        })
        .collect()
}

fn list<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dep(kind: &str, name: &str) -> Dependency {
        Dependency {
            api_version: "v1".into(),
            kind: kind.into(),
            namespace: "ns".into(),
            name: name.into(),
        }
    }

    fn workload(api_version: &str, kind: &str, pod_spec: Value) -> Value {
        json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"template": {"spec": pod_spec}}})
    }

    fn everything() -> Value {
        json!({
            "serviceAccountName": "runner",
            "imagePullSecrets": [{"name": "pull"}],
            "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "init-env"}}]}],
            "containers": [{
                "name": "c",
                "env": [
                    {"name": "A", "valueFrom": {"secretKeyRef": {"name": "env-secret", "key": "k"}}},
                    {"name": "B", "valueFrom": {"configMapKeyRef": {"name": "env-cm", "key": "k"}}},
                    {"name": "C", "value": "plain"},
                ],
                "envFrom": [{"secretRef": {"name": "env-secret"}}],
            }],
            "volumes": [
                {"name": "v1", "secret": {"secretName": "vol-secret"}},
                {"name": "v2", "configMap": {"name": "vol-cm"}},
                {"name": "v3", "projected": {"sources": [
                    {"secret": {"name": "proj-secret"}}, {"configMap": {"name": "proj-cm"}},
                    {"serviceAccountToken": {"path": "t"}}]}},
                {"name": "v4", "persistentVolumeClaim": {"claimName": "data"}},
                {"name": "v5", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret"}}},
                {"name": "v6", "emptyDir": {}},
            ],
        })
    }

    #[test]
    fn every_reference_once_sorted() {
        let got = dependencies(&workload("apps/v1", "Deployment", everything()));
        let want = vec![
            dep("ConfigMap", "env-cm"),
            dep("ConfigMap", "init-env"),
            dep("ConfigMap", "proj-cm"),
            dep("ConfigMap", "vol-cm"),
            dep("PersistentVolumeClaim", "data"),
            dep("Secret", "csi-secret"),
            dep("Secret", "env-secret"),
            dep("Secret", "proj-secret"),
            dep("Secret", "pull"),
            dep("Secret", "vol-secret"),
            dep("ServiceAccount", "runner"),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn per_kind() {
        let spec = json!({"containers": [{"name": "c"}], "serviceAccountName": "sa",
            "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]});
        let sa_and_pvc = vec![
            dep("PersistentVolumeClaim", "data"),
            dep("ServiceAccount", "sa"),
        ];
        let table: Vec<(&str, Value, Vec<Dependency>)> = vec![
            (
                "deployment",
                workload("apps/v1", "Deployment", spec.clone()),
                sa_and_pvc.clone(),
            ),
            (
                "replicaset",
                workload("apps/v1", "ReplicaSet", spec.clone()),
                sa_and_pvc.clone(),
            ),
            (
                "daemonset",
                workload("apps/v1", "DaemonSet", spec.clone()),
                sa_and_pvc.clone(),
            ),
            (
                "job",
                workload("batch/v1", "Job", spec.clone()),
                sa_and_pvc.clone(),
            ),
            (
                "cronjob",
                json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"namespace": "ns"},
                    "spec": {"jobTemplate": {"spec": {"template": {"spec": spec.clone()}}}}}),
                sa_and_pvc.clone(),
            ),
            (
                "pod",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ns"}, "spec": spec.clone()}),
                sa_and_pvc.clone(),
            ),
            (
                "statefulset drops claims of its templates",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"namespace": "ns"},
                    "spec": {"template": {"spec": spec.clone()},
                        "volumeClaimTemplates": [{"metadata": {"name": "data"}}]}}),
                vec![dep("ServiceAccount", "sa")],
            ),
            (
                "default service account is not a dependency",
                workload(
                    "apps/v1",
                    "Deployment",
                    json!({"containers": [], "serviceAccountName": "default"}),
                ),
                vec![],
            ),
            (
                "service",
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"template": {"spec": spec.clone()}}}),
                vec![],
            ),
            ("crd", workload("example.io/v1", "Deployment", spec), vec![]),
        ];
        for (name, obj, want) in table {
            assert_eq!(dependencies(&obj), want, "{name}");
        }
    }
}
