//! Retention (Karmada's `Retain` interpretation): when a member object is written over with
//! a full replacement (a takeover under `conflictResolution: Overwrite`), what of the member's
//! own copy is kept. The rest of the object becomes the desired one: a member's extra
//! container or field goes.
//!
//! Every kind keeps the member's `resourceVersion` (the write is conditional on it),
//! `finalizers` and `ownerReferences`, and the labels and annotations only the member has
//! (for a key both have, the desired value wins). Per kind, as Karmada's defaults:
//!
//! | kind | kept from the member |
//! |---|---|
//! | Pod | `spec.nodeName`, `spec.serviceAccountName`, `spec.volumes`, each container's and init container's `volumeMounts` (by container name) |
//! | Service | `spec.clusterIP` (when set), `spec.healthCheckNodePort` (when > 0) |
//! | ServiceAccount | `secrets`: the desired ones, then the member's others |
//! | PersistentVolumeClaim | `spec.volumeName` (when set) |
//! | PersistentVolume | `spec.claimRef` |
//! | Job | `spec.selector.matchLabels`, `spec.template.metadata.labels` (the controller's uid labels) |
//! | Secret of type `kubernetes.io/service-account-token` | `data` (the token controller's) |
//! | Deployment labelled `resourcetemplate.karmada.io/retain-replicas=true` | `spec.replicas` |

use serde_json::{Map, Value};

pub use flotilla_names::karmada::RETAIN_REPLICAS_LABEL;

/// `desired` with what the member's `observed` copy keeps (see the module docs).
pub fn retain(desired: &mut Value, observed: &Value) {
    let (Some(d), Some(o)) = (desired.as_object_mut(), observed.as_object()) else {
        return;
    };
    retain_metadata(d, o);
    let api_version = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = o.get("kind").and_then(Value::as_str).unwrap_or("");
    match (api_version, kind) {
        ("v1", "Pod") => {
            for field in ["nodeName", "serviceAccountName", "volumes"] {
                copy(d, o, &["spec", field]);
            }
            for list in ["containers", "initContainers"] {
                retain_volume_mounts(d, o, list);
            }
        }
        ("v1", "Service") => {
            if str_at(o, &["spec", "clusterIP"]).is_some_and(|ip| !ip.is_empty()) {
                copy(d, o, &["spec", "clusterIP"]);
            }
            if at(o, &["spec", "healthCheckNodePort"])
                .and_then(Value::as_i64)
                .is_some_and(|p| p > 0)
            {
                copy(d, o, &["spec", "healthCheckNodePort"]);
            }
        }
        ("v1", "ServiceAccount") => {
            let mut secrets: Vec<Value> = at(d, &["secrets"])
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for s in at(o, &["secrets"])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let name = s.get("name");
                if !secrets.iter().any(|x| x.get("name") == name) {
                    secrets.push(s.clone());
                }
            }
            if !secrets.is_empty() {
                d.insert("secrets".into(), Value::Array(secrets));
            }
        }
        ("v1", "PersistentVolumeClaim")
            if str_at(o, &["spec", "volumeName"]).is_some_and(|v| !v.is_empty()) =>
        {
            copy(d, o, &["spec", "volumeName"]);
        }
        ("v1", "PersistentVolume") => copy(d, o, &["spec", "claimRef"]),
        ("v1", "Secret") if str_at(o, &["type"]) == Some("kubernetes.io/service-account-token") => {
            copy(d, o, &["data"]);
        }
        ("batch/v1", "Job") => {
            copy(d, o, &["spec", "selector", "matchLabels"]);
            copy(d, o, &["spec", "template", "metadata", "labels"]);
        }
        ("apps/v1", "Deployment") => {
            let retained = at(d, &["metadata", "labels", RETAIN_REPLICAS_LABEL])
                .and_then(Value::as_str)
                == Some("true");
            if retained {
                copy(d, o, &["spec", "replicas"]);
            }
        }
        _ => {}
    }
}

/// resourceVersion, finalizers, ownerReferences from the member; labels and annotations
/// merged (the member's own keys kept, the desired value winning on shared keys).
fn retain_metadata(d: &mut Map<String, Value>, o: &Map<String, Value>) {
    for field in ["resourceVersion", "finalizers", "ownerReferences"] {
        copy(d, o, &["metadata", field]);
    }
    for field in ["labels", "annotations"] {
        let Some(theirs) = at(o, &["metadata", field]).and_then(Value::as_object) else {
            continue;
        };
        let meta = entry_obj(d, "metadata");
        let ours = entry_obj(meta, field);
        for (k, v) in theirs {
            ours.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

/// Each desired container of `list` keeps the `volumeMounts` of the member's container of
/// the same name.
fn retain_volume_mounts(d: &mut Map<String, Value>, o: &Map<String, Value>, list: &str) {
    let theirs: Vec<Value> = at(o, &["spec", list])
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(Value::Object(spec)) = d.get_mut("spec") else {
        return;
    };
    let Some(Value::Array(ours)) = spec.get_mut(list) else {
        return;
    };
    for container in ours.iter_mut() {
        let name = container.get("name").cloned();
        let mounts = theirs
            .iter()
            .find(|c| c.get("name") == name.as_ref())
            .and_then(|c| c.get("volumeMounts"))
            .cloned();
        if let (Some(mounts), Value::Object(c)) = (mounts, container) {
            c.insert("volumeMounts".into(), mounts);
        }
    }
}

fn at<'a>(o: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(o.get(*first)?, |v, k| v.get(*k))
}

fn str_at<'a>(o: &'a Map<String, Value>, path: &[&str]) -> Option<&'a str> {
    at(o, path).and_then(Value::as_str)
}

fn entry_obj<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    let v = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    match v {
        Value::Object(m) => m,
        _ => unreachable!("made an object above"),
    }
}

/// Sets `path` in `d` to the member's value there (or removes it when the member has none).
fn copy(d: &mut Map<String, Value>, o: &Map<String, Value>, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let value = at(o, path).cloned();
    let mut target = d;
    for p in parents {
        if value.is_none() && !target.get(*p).is_some_and(Value::is_object) {
            return;
        }
        target = entry_obj(target, p);
    }
    match value {
        Some(v) => {
            target.insert((*last).to_string(), v);
        }
        None => {
            target.remove(*last);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_names::karmada;
    use serde_json::json;

    #[test]
    fn a_takeover_keeps_the_members_bookkeeping_and_drops_its_extras() {
        let mut desired = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "host"},
                         "annotations": {karmada::WORK_NAME_ANNOTATION: "web-1"}},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}});
        let observed = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "resourceVersion": "77", "finalizers": ["x/y"],
                         "labels": {"tier": "member", "team": "a"}},
            "spec": {"replicas": 9, "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "s"}]}}}});
        retain(&mut desired, &observed);
        assert_eq!(desired["metadata"]["resourceVersion"], "77");
        assert_eq!(desired["metadata"]["finalizers"], json!(["x/y"]));
        assert_eq!(
            desired["metadata"]["labels"],
            json!({"app": "web", "tier": "host", "team": "a"})
        );
        assert_eq!(desired["spec"]["replicas"], 3, "no retain-replicas label");
        assert_eq!(
            desired["spec"]["template"]["spec"]["containers"],
            json!([{"name": "app", "image": "app:2"}])
        );
        // With the label, the member's replicas (its HPA's) stay.
        desired["metadata"]["labels"][RETAIN_REPLICAS_LABEL] = json!("true");
        retain(&mut desired, &observed);
        assert_eq!(desired["spec"]["replicas"], 9);
    }

    #[test]
    fn per_kind_fields() {
        let mut svc =
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"ports": [{"port": 80}]}});
        retain(
            &mut svc,
            &json!({"apiVersion": "v1", "kind": "Service",
                    "spec": {"clusterIP": "10.0.0.7", "healthCheckNodePort": 0}}),
        );
        assert_eq!(
            svc["spec"],
            json!({"ports": [{"port": 80}], "clusterIP": "10.0.0.7"})
        );

        let mut pod =
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c"}]}});
        retain(
            &mut pod,
            &json!({"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "n1",
                "serviceAccountName": "default", "volumes": [{"name": "tok"}],
                "containers": [{"name": "c", "volumeMounts": [{"name": "tok", "mountPath": "/t"}]}]}}),
        );
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(
            pod["spec"]["containers"][0]["volumeMounts"][0]["name"],
            "tok"
        );

        let mut sa =
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "secrets": [{"name": "a"}]});
        retain(
            &mut sa,
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "secrets": [{"name": "b"}, {"name": "a"}]}),
        );
        assert_eq!(sa["secrets"], json!([{"name": "a"}, {"name": "b"}]));

        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "host"}});
        retain(
            &mut cm,
            &json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "member", "extra": "x"}}),
        );
        assert_eq!(
            cm["data"],
            json!({"k": "host"}),
            "a ConfigMap keeps nothing of its data"
        );
    }
}
