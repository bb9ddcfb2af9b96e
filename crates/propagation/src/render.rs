//! A binding's Work for one member cluster (pure): the template copied without what belongs
//! to the host (identity, revision, ownership, status), that cluster's replicas set, and the
//! labels and annotations that trace the member object back to its Work and template.
//!
//! Besides `metadata.{uid, resourceVersion, generation, creationTimestamp, deletionTimestamp,
//! deletionGracePeriodSeconds, managedFields, ownerReferences, finalizers, selfLink}` and
//! `status`, the fields a member fills in itself are dropped so that applying does not fight
//! the member: a Service's `clusterIP(s)` (unless headless), a Job's generated selector and
//! controller-uid labels (unless `manualSelector`), a Pod's `nodeName`, a ServiceAccount's
//! `secrets` (`flotilla_names::karmada::strip_instance_fields`). A template's own
//! `work.karmada.io/conflict-resolution` annotation wins over the binding's
//! `conflictResolution`. The OverridePolicies and ClusterOverridePolicies that match the template
//! (`flotilla_overrides`) are applied after the replicas are set and before Flotilla's own
//! labels and annotations are added, as Karmada's binding controller does; the Work records
//! them in Karmada's `policy.karmada.io/applied-(cluster-)overrides` annotations.

use std::collections::BTreeMap;

use flotilla_karmada_api::binding::ResourceBindingSpec;
use flotilla_karmada_api::policy::ConflictResolution;
use flotilla_karmada_api::work::{Manifest, WorkSpec, WorkloadTemplate};
use flotilla_names::karmada;
use flotilla_overrides::{AppliedOverrides, MatchedPolicy};
use flotilla_scheduler::ClusterSnapshot;
use serde_json::{Map, Value, json};

use crate::Error;

/// What a Work is built from, besides the template.
#[derive(Clone, Debug)]
pub struct Rendering<'a> {
    /// The binding's namespace (empty for a ClusterResourceBinding) and name.
    pub binding_namespace: &'a str,
    pub binding_name: &'a str,
    /// The binding's uid: the permanent id its Works are labelled with.
    pub binding_id: &'a str,
    pub spec: &'a ResourceBindingSpec,
    /// The override policies matching the template, in application order.
    pub overrides: &'a [MatchedPolicy<'a>],
}

/// A Work to write: its namespace, name, labels, annotations and spec.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderedWork {
    pub namespace: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub spec: WorkSpec,
    /// The override rules applied to the manifest (for the binding controller's events).
    pub overrides: flotilla_overrides::AppliedOverrides,
}

impl RenderedWork {
    /// Marks the Work and its manifests with the Work's permanent id (Karmada's
    /// `work.karmada.io/permanent-id`, drawn once when the Work is first written and kept
    /// after: the caller passes the id the Work has).
    pub fn with_permanent_id(mut self, id: &str) -> Self {
        self.labels
            .insert(karmada::WORK_PERMANENT_ID_LABEL.to_string(), id.to_string());
        for manifest in &mut self.spec.workload.manifests {
            if let Some(Value::Object(meta)) = manifest.0.get_mut("metadata") {
                string_map(meta, "labels")
                    .insert(karmada::WORK_PERMANENT_ID_LABEL.into(), json!(id));
            }
        }
        self
    }

    /// The Work as a server-side apply body.
    pub fn to_apply_body(&self) -> Value {
        json!({
            "apiVersion": "work.karmada.io/v1alpha1",
            "kind": "Work",
            "metadata": {
                "name": self.name,
                "namespace": self.namespace,
                "labels": self.labels,
                "annotations": self.annotations,
                // Set at creation, so the execution controller need not add it in a second
                // write; it removes it once the member objects are gone.
                "finalizers": [karmada::EXECUTION_CONTROLLER_FINALIZER],
            },
            "spec": self.spec,
        })
    }
}

fn string_map<'m>(meta: &'m mut Map<String, Value>, key: &str) -> &'m mut Map<String, Value> {
    let entry = meta
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(m) => m,
        // Replaced by an object just above.
        _ => unreachable!("metadata map is an object"),
    }
}

/// The label naming a binding's permanent id on its Works: ResourceBindings and
/// ClusterResourceBindings (no namespace) have one each.
pub fn binding_id_label(binding_namespace: &str) -> &'static str {
    if binding_namespace.is_empty() {
        karmada::CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL
    } else {
        karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL
    }
}

impl Rendering<'_> {
    /// The annotations naming the binding: its namespace and name (a ResourceBinding) or
    /// name (a ClusterResourceBinding), on Works and member objects alike.
    fn binding_annotations(&self) -> Vec<(&'static str, &str)> {
        if self.binding_namespace.is_empty() {
            vec![(
                karmada::CLUSTER_RESOURCE_BINDING_ANNOTATION,
                self.binding_name,
            )]
        } else {
            vec![
                (
                    karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION,
                    self.binding_namespace,
                ),
                (karmada::RESOURCE_BINDING_NAME_ANNOTATION, self.binding_name),
            ]
        }
    }

    /// The manifest for `cluster`: the stripped template with that cluster's replicas and the
    /// overrides of rules without `targetCluster`.
    pub fn manifest(
        &self,
        template: &Value,
        cluster: &str,
        work_name: &str,
    ) -> Result<Value, Error> {
        self.render(template, cluster, work_name, None)
            .map(|(manifest, _)| manifest)
    }

    /// The manifest for `cluster` (described by `target`, when known, for the override
    /// rules' `targetCluster`), and the overrides applied to it.
    fn render(
        &self,
        template: &Value,
        cluster: &str,
        work_name: &str,
        target: Option<&ClusterSnapshot>,
    ) -> Result<(Value, AppliedOverrides), Error> {
        let mut obj = template.clone();
        let generation = template
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        let uid = template
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        let Value::Object(map) = &mut obj else {
            return Err(Error::TemplateNotObject);
        };
        karmada::strip_instance_fields(map);
        let api_version = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = map
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if flotilla_interpreter::has_replicas(&api_version, &kind) {
            // Divided: among all targets, so that a Job's completions add up exactly.
            // Duplicated (or no replica scheduling): each cluster runs the whole workload, a
            // Job's completions undivided, as Karmada's binding controller does.
            let targets = &self.spec.clusters;
            let divided = self
                .spec
                .placement
                .as_ref()
                .and_then(|p| p.replica_scheduling.as_ref())
                .is_some_and(|r| {
                    r.replica_scheduling_type.unwrap_or_default()
                        == flotilla_karmada_api::policy::ReplicaSchedulingType::Divided
                });
            let mine = targets.iter().find(|t| t.name == cluster);
            let revised = if let (true, Some(_)) = (divided, mine) {
                flotilla_interpreter::revise_replicas_among(&mut obj, cluster, targets)
            } else if let Some(t) = mine {
                flotilla_interpreter::revise_replicas(&mut obj, t.replicas, t.replicas)
            } else {
                flotilla_interpreter::revise_replicas(&mut obj, 0, self.spec.replicas)
            };
            revised.map_err(|source| Error::Interpret {
                kind: kind.clone(),
                source,
            })?;
        }
        let applied = flotilla_overrides::apply_overrides(&mut obj, self.overrides, |affinity| {
            target.is_some_and(|t| flotilla_scheduler::filter::matches_affinity(t, affinity))
        })
        .map_err(|source| Error::Override {
            cluster: cluster.to_string(),
            source,
        })?;
        let Value::Object(map) = &mut obj else {
            return Err(Error::TemplateNotObject);
        };
        let meta = string_map(map, "metadata");
        let labels = string_map(meta, "labels");
        labels.insert(karmada::MANAGED_BY_KARMADA_LABEL.into(), json!("true"));
        // The binding that put it there, as Karmada marks member objects.
        labels.insert(
            binding_id_label(self.binding_namespace).into(),
            json!(self.binding_id),
        );
        let annotations = string_map(meta, "annotations");
        for (key, value) in self.binding_annotations() {
            annotations.insert(key.into(), json!(value));
        }
        annotations.insert(
            karmada::WORK_NAMESPACE_ANNOTATION.into(),
            json!(karmada::execution_namespace(cluster)),
        );
        annotations.insert(karmada::WORK_NAME_ANNOTATION.into(), json!(work_name));
        if let Some(g) = generation {
            annotations.insert(
                karmada::RESOURCE_TEMPLATE_GENERATION_ANNOTATION.into(),
                json!(g.to_string()),
            );
        }
        if let Some(uid) = uid {
            annotations.insert(karmada::RESOURCE_TEMPLATE_UID_ANNOTATION.into(), json!(uid));
        }
        // The template's own annotation, when valid, wins over the policy's field (as in
        // Karmada): `flotillactl promote` marks an adopted object so, whatever policy takes it.
        let from_template = annotations
            .get(karmada::CONFLICT_RESOLUTION_ANNOTATION)
            .and_then(Value::as_str)
            .is_some_and(|v| {
                v == karmada::CONFLICT_RESOLUTION_OVERWRITE
                    || v == karmada::CONFLICT_RESOLUTION_ABORT
            });
        if !from_template {
            let resolution = match self.spec.conflict_resolution.unwrap_or_default() {
                ConflictResolution::Overwrite => karmada::CONFLICT_RESOLUTION_OVERWRITE,
                ConflictResolution::Abort => karmada::CONFLICT_RESOLUTION_ABORT,
            };
            annotations.insert(
                karmada::CONFLICT_RESOLUTION_ANNOTATION.into(),
                json!(resolution),
            );
        }
        Ok((obj, applied))
    }

    /// The Work of `template` for `cluster` (described by `target`, when known).
    pub fn work(
        &self,
        template: &Value,
        cluster: &str,
        target: Option<&ClusterSnapshot>,
    ) -> Result<RenderedWork, Error> {
        let kind = template.get("kind").and_then(Value::as_str).unwrap_or("");
        let namespace = template
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("");
        let name = template
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let work_name = karmada::work_name(namespace, name, kind);
        let (manifest, applied) = self.render(template, cluster, &work_name, target)?;
        let manifest = Manifest::try_from(manifest).map_err(|_| Error::TemplateNotObject)?;
        let mut labels = BTreeMap::new();
        labels.insert(
            binding_id_label(self.binding_namespace).to_string(),
            self.binding_id.to_string(),
        );
        labels.insert(
            karmada::MANAGED_BY_KARMADA_LABEL.to_string(),
            "true".to_string(),
        );
        let mut annotations: BTreeMap<String, String> = self
            .binding_annotations()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        for (key, value) in applied.annotations() {
            annotations.insert(key.to_string(), value);
        }
        let suspended = self.spec.suspension.as_ref().is_some_and(|s| {
            s.suspension.dispatching == Some(true)
                || s.suspension
                    .dispatching_on_clusters
                    .as_ref()
                    .is_some_and(|c| c.cluster_names.iter().any(|n| n == cluster))
        });
        Ok(RenderedWork {
            namespace: karmada::execution_namespace(cluster),
            name: work_name,
            labels,
            annotations,
            overrides: applied,
            spec: WorkSpec {
                workload: WorkloadTemplate {
                    manifests: vec![manifest],
                },
                suspend_dispatching: suspended.then_some(true),
                preserve_resources_on_deletion: self
                    .spec
                    .preserve_resources_on_deletion
                    .filter(|p| *p),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: Value) -> ResourceBindingSpec {
        serde_json::from_value(v).unwrap()
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo", "uid": "u-1", "resourceVersion": "42",
                         "generation": 3, "creationTimestamp": "2026-01-01T00:00:00Z",
                         "managedFields": [{"manager": "kubectl"}], "finalizers": ["x"],
                         "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "o"}],
                         "labels": {"app": "web"}},
            "spec": {"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"replicas": 6}
        })
    }

    #[test]
    fn a_work_per_cluster_carries_that_clusters_replicas_and_no_host_fields() {
        let s = spec(
            json!({"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "demo", "name": "web"},
                            "replicas": 6,
                            "clusters": [{"name": "m1", "replicas": 4}, {"name": "m2", "replicas": 2}]}),
        );
        let r = Rendering {
            binding_namespace: "demo",
            binding_name: "web-deployment",
            binding_id: "b-1",
            spec: &s,
            overrides: &[],
        };
        let w = r.work(&deployment(), "m2", None).unwrap();
        assert_eq!(w.namespace, karmada::execution_namespace("m2"));
        assert!(w.name.starts_with("web-"), "{}", w.name);
        assert_eq!(
            w.labels[karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL],
            "b-1"
        );
        assert_eq!(
            w.annotations[karmada::RESOURCE_BINDING_NAME_ANNOTATION],
            "web-deployment"
        );
        assert_eq!(
            w.annotations[karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION],
            "demo"
        );
        let m = w.spec.workload.manifests[0].clone().into_value();
        assert_eq!(m["spec"]["replicas"], 2);
        assert!(m.get("status").is_none());
        let meta = m["metadata"].as_object().unwrap();
        for gone in karmada::INSTANCE_METADATA {
            assert!(!meta.contains_key(gone), "{gone} kept");
        }
        assert_eq!(meta["labels"]["app"], "web");
        assert_eq!(meta["labels"][karmada::MANAGED_BY_KARMADA_LABEL], "true");
        assert_eq!(
            meta["annotations"][karmada::WORK_NAME_ANNOTATION],
            json!(w.name)
        );
        assert_eq!(
            meta["annotations"][karmada::WORK_NAMESPACE_ANNOTATION],
            json!(karmada::execution_namespace("m2"))
        );
        assert_eq!(
            meta["annotations"][karmada::RESOURCE_TEMPLATE_GENERATION_ANNOTATION],
            "3"
        );
        assert_eq!(
            meta["annotations"][karmada::RESOURCE_TEMPLATE_UID_ANNOTATION],
            "u-1"
        );
        assert_eq!(
            meta["annotations"][karmada::CONFLICT_RESOLUTION_ANNOTATION],
            "abort"
        );
        // The same template and binding always give the same Work name.
        assert_eq!(r.work(&deployment(), "m1", None).unwrap().name, w.name);
        // A cluster not in the result gets 0 replicas.
        let m = r
            .work(&deployment(), "m9", None)
            .unwrap()
            .spec
            .workload
            .manifests[0]
            .clone()
            .into_value();
        assert_eq!(m["spec"]["replicas"], 0);
    }

    #[test]
    fn member_filled_fields_are_dropped() {
        let s = spec(
            json!({"resource": {"apiVersion": "v1", "kind": "Service", "name": "s"},
                            "conflictResolution": "Overwrite"}),
        );
        let r = Rendering {
            binding_namespace: "demo",
            binding_name: "s-service",
            binding_id: "b",
            spec: &s,
            overrides: &[],
        };
        let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "demo"},
                         "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80}]}});
        let m = r.manifest(&svc, "m1", "w").unwrap();
        assert!(m["spec"].get("clusterIP").is_none());
        assert_eq!(m["spec"]["ports"][0]["port"], 80);
        assert_eq!(
            m["metadata"]["annotations"][karmada::CONFLICT_RESOLUTION_ANNOTATION],
            "overwrite"
        );
        // A template's own annotation wins over the policy's conflictResolution; an invalid
        // one is replaced by it.
        for (own, applied) in [
            ("abort", "abort"),
            ("overwrite", "overwrite"),
            ("bogus", "overwrite"),
        ] {
            let mut marked = svc.clone();
            marked["metadata"]["annotations"] =
                json!({karmada::CONFLICT_RESOLUTION_ANNOTATION: own});
            assert_eq!(
                r.manifest(&marked, "m1", "w").unwrap()["metadata"]["annotations"]
                    [karmada::CONFLICT_RESOLUTION_ANNOTATION],
                applied
            );
        }
        let headless = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                              "spec": {"clusterIP": "None"}});
        assert_eq!(
            r.manifest(&headless, "m1", "w").unwrap()["spec"]["clusterIP"],
            "None"
        );
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                         "spec": {"selector": {"matchLabels": {"controller-uid": "x"}},
                                  "template": {"metadata": {"labels": {"controller-uid": "x", "job-name": "j", "app": "a"}}}}});
        let m = r.manifest(&job, "m1", "w").unwrap();
        assert!(m["spec"].get("selector").is_none());
        assert_eq!(
            m["spec"]["template"]["metadata"]["labels"],
            json!({"app": "a"})
        );
    }

    #[test]
    fn suspension_and_preservation_reach_the_work() {
        let s = spec(
            json!({"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
                            "suspension": {"dispatchingOnClusters": {"clusterNames": ["m2"]}},
                            "preserveResourcesOnDeletion": true}),
        );
        let r = Rendering {
            binding_namespace: "",
            binding_name: "c-configmap",
            binding_id: "b",
            spec: &s,
            overrides: &[],
        };
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        let w1 = r.work(&cm, "m1", None).unwrap();
        let w2 = r.work(&cm, "m2", None).unwrap();
        assert_eq!(w1.spec.suspend_dispatching, None);
        assert_eq!(w2.spec.suspend_dispatching, Some(true));
        assert_eq!(w1.spec.preserve_resources_on_deletion, Some(true));
        assert!(
            !w1.annotations
                .contains_key(karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION)
        );
        assert_eq!(
            w1.labels[karmada::CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL],
            "b"
        );
        assert_eq!(
            w1.annotations[karmada::CLUSTER_RESOURCE_BINDING_ANNOTATION],
            "c-configmap"
        );
        let m = w1.spec.workload.manifests[0].clone().into_value();
        assert_eq!(m["data"]["k"], "v");
    }
}
