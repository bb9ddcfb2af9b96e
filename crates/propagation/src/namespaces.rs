//! Namespace sync: every namespace of the host exists in every member cluster, as Karmada's
//! namespace sync controller does, so workloads applied into a namespace find it there. Each
//! (namespace, cluster) pair is a Work in `karmada-es-<cluster>` holding the Namespace; the
//! execution controller applies it (a namespace the member already had is used as it is) and
//! deletes it with the Work when the host namespace goes (only where Flotilla created it).
//!
//! Skipped: `default`, the skipped namespaces ([`crate::skipped`]: Karmada's reserved ones,
//! execution namespaces among them, and those matching `--skipped-propagating-namespaces`,
//! default `kube-.*`), and namespaces labelled `namespace.karmada.io/skip-auto-propagation:
//! "true"`. A cluster joined later gets every namespace: any change of namespaces,
//! Clusters or these Works re-computes the whole desired set (cheap: it is in memory) and
//! writes only the differences.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use flotilla_karmada_api::Cluster;
use flotilla_karmada_api::work::{Manifest, Work, WorkSpec, WorkloadTemplate};
use flotilla_names::karmada;
use flotilla_scheduler::ClusterSnapshot;
use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use tracing::warn;

use crate::overrides::{Matched, OverridePolicies};
use crate::skipped::SkippedNamespaces;
use crate::{Context, Error, NAMESPACE_MANAGER, Shared, is_not_found};
use flotilla_controller_runtime::reflector::{identity_only, wait_ready};
use flotilla_controller_runtime::{Action, Controller, ReflectorSpec};

/// Label on the Works of the namespace sync.
pub const NAMESPACE_WORK_LABEL: &str = "namespace.flotilla.io/sync";

/// Whether namespace `name` (with `labels`) is propagated to members.
pub fn propagated(
    name: &str,
    labels: &BTreeMap<String, String>,
    skipped: &SkippedNamespaces,
) -> bool {
    !never_propagated(name, skipped)
        && labels
            .get(karmada::NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL)
            .is_none_or(|v| v != "true")
}

/// Whether namespace `name` is not propagated whatever its labels say: `default` and the
/// skipped ones (an execution namespace per member among them).
fn never_propagated(name: &str, skipped: &SkippedNamespaces) -> bool {
    name == "default" || skipped.skipped(name)
}

/// The manifest of a host namespace in members: its name, labels and annotations (minus
/// kubectl's bookkeeping), and the Work annotations.
pub fn namespace_manifest(ns: &Namespace, cluster: &str, work_name: &str) -> Value {
    let mut labels = ns.labels().clone();
    labels.insert(
        karmada::MANAGED_BY_KARMADA_LABEL.to_string(),
        karmada::MANAGED_BY_KARMADA_LABEL_VALUE.to_string(),
    );
    let mut annotations = ns.annotations().clone();
    annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    annotations.insert(
        karmada::WORK_NAMESPACE_ANNOTATION.to_string(),
        karmada::execution_namespace(cluster),
    );
    annotations.insert(
        karmada::WORK_NAME_ANNOTATION.to_string(),
        work_name.to_string(),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": ns.name_any(), "labels": labels, "annotations": annotations},
    })
}

/// Whether a Work is one of the namespace sync's.
pub(crate) fn is_namespace_work(w: &Work) -> bool {
    w.labels()
        .get(NAMESPACE_WORK_LABEL)
        .is_some_and(|v| v == "true")
}

/// The Clusters the namespace sync places namespaces in (joined and not being deleted): a
/// pass is needed when this set changes, not at each of their status writes.
#[derive(Default)]
pub(crate) struct Members(std::sync::Mutex<BTreeSet<String>>);

impl Members {
    /// Records a change of `cluster` (`deleted` when it is gone); whether the set changed.
    pub(crate) fn changed(&self, cluster: &Cluster, deleted: bool) -> bool {
        let name = cluster.name_any();
        let member = !deleted && cluster.metadata.deletion_timestamp.is_none();
        match self.0.lock() {
            Ok(mut set) if member => set.insert(name),
            Ok(mut set) => set.remove(&name),
            // A panic while holding the set: pass anyway, a pass is always correct.
            Err(_) => true,
        }
    }
}

/// Empties a namespace that its labels keep from being propagated down to what decides
/// that: its name and labels, and whether it is being deleted. (Namespaces never propagated,
/// an execution namespace per member above all, are not cached at all.)
fn trim_unpropagated(ns: &mut Namespace, skipped: &SkippedNamespaces) {
    let name = ns.metadata.name.as_deref().unwrap_or_default();
    if !propagated(name, ns.labels(), skipped) {
        identity_only(&mut ns.metadata);
        ns.spec = None;
        ns.status = None;
    }
}

/// The namespace sync's name in metrics.
pub(crate) const CONTROLLER: &str = "namespace";

/// Runs the namespace sync: `controller` (one key: every pass looks at everything) is
/// queued on every change of namespaces, of the [`Members`] and of namespace Works.
pub(crate) async fn run(ctx: Arc<Context>, shared: Shared, controller: Controller<()>) {
    let skipped = ctx.opts.skipped_namespaces.clone();
    let namespaces = ctx
        .manager
        .reflector_with::<Namespace>("propagated", move || {
            let (never, trimmed) = (skipped.clone(), skipped.clone());
            ReflectorSpec::default()
                .keep(move |ns: &Namespace| {
                    !never_propagated(ns.metadata.name.as_deref().unwrap_or_default(), &never)
                })
                .trim(move |ns: &mut Namespace| trim_unpropagated(ns, &trimmed))
        });
    controller.watches(&namespaces, |_, _| Some(()));
    let (clusters, works, overrides) = (shared.clusters, shared.works, shared.overrides);
    if !namespaces.ready().await || !wait_ready(&clusters).await || !wait_ready(&works).await {
        return;
    }
    let namespaces = namespaces.store().clone();
    controller
        .run(move |()| {
            let (ctx, namespaces, clusters, works, overrides) = (
                ctx.clone(),
                namespaces.clone(),
                clusters.clone(),
                works.clone(),
                overrides.clone(),
            );
            async move {
                let namespace_works: Vec<Arc<Work>> = works
                    .state()
                    .into_iter()
                    .filter(|w| is_namespace_work(w))
                    .collect();
                if sync(
                    &ctx,
                    &namespaces.state(),
                    &clusters.state(),
                    &namespace_works,
                    &overrides,
                )
                .await
                {
                    Ok(Action::Done)
                } else {
                    Err(Error::NamespaceSync)
                }
            }
        })
        .await;
}

/// One pass: writes missing or outdated namespace Works and deletes those no longer wanted.
async fn sync(
    ctx: &Context,
    namespaces: &[Arc<Namespace>],
    clusters: &[Arc<Cluster>],
    works: &[Arc<Work>],
    overrides: &OverridePolicies,
) -> bool {
    let mut ok = true;
    let mut wanted: BTreeSet<(String, String)> = BTreeSet::new();
    let existing: BTreeMap<(String, String), &Arc<Work>> = works
        .iter()
        .filter_map(|w| Some(((w.namespace()?, w.name_any()), w)))
        .collect();
    // The namespaces to propagate, picked once per pass and not once per cluster: the host
    // holds an execution namespace per cluster, none of them propagated, so per cluster this
    // was clusters x clusters at every change (minutes of CPU while 5,000 members joined).
    let propagating: Vec<(&Arc<Namespace>, String, Option<Matched>)> = namespaces
        .iter()
        .filter(|ns| {
            ns.metadata.deletion_timestamp.is_none()
                && propagated(
                    ns.metadata.name.as_deref().unwrap_or_default(),
                    ns.labels(),
                    &ctx.opts.skipped_namespaces,
                )
        })
        .map(|ns| {
            let work_name = karmada::work_name("", &ns.name_any(), "Namespace");
            // The ClusterOverridePolicies selecting it (Namespaces are cluster-scoped:
            // OverridePolicies never do), as Karmada's namespace sync applies them.
            let matched = serde_json::to_value(ns.as_ref())
                .map(|v| overrides.matching(&v))
                .ok();
            (ns, work_name, matched)
        })
        .collect();
    for cluster in clusters {
        if cluster.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let cluster_name = cluster.name_any();
        let work_ns = karmada::execution_namespace(&cluster_name);
        // Built only when an override rule asks which cluster this is.
        let snapshot = std::cell::OnceCell::new();
        for (ns, work_name, matched) in &propagating {
            wanted.insert((work_ns.clone(), work_name.clone()));
            let mut manifest = namespace_manifest(ns, &cluster_name, work_name);
            if let Some(matched) = matched {
                let policies = matched.policies();
                if !policies.is_empty() {
                    let applied =
                        flotilla_overrides::apply_overrides(&mut manifest, &policies, |affinity| {
                            let snapshot =
                                snapshot.get_or_init(|| ClusterSnapshot::from_cluster(cluster));
                            flotilla_scheduler::filter::matches_affinity(snapshot, affinity)
                        });
                    if let Err(e) = applied {
                        // Left as it is in this cluster; the policy's admission refuses most
                        // such rules, and its next change brings a new pass.
                        warn!(namespace = %ns.name_any(), cluster = %cluster_name, error = %e, "overriding a namespace failed");
                        continue;
                    }
                }
            }
            let Ok(manifest) = Manifest::try_from(manifest) else {
                continue;
            };
            let spec = WorkSpec {
                workload: WorkloadTemplate {
                    manifests: vec![manifest],
                },
                ..Default::default()
            };
            if existing
                .get(&(work_ns.clone(), work_name.clone()))
                .is_some_and(|w| w.spec == spec && w.metadata.deletion_timestamp.is_none())
            {
                continue;
            }
            let body = json!({
                "apiVersion": "work.karmada.io/v1alpha1",
                "kind": "Work",
                "metadata": {"name": work_name, "namespace": work_ns,
                             "labels": {NAMESPACE_WORK_LABEL: "true"}},
                "spec": spec,
            });
            let api: Api<Work> = Api::namespaced(ctx.host.clone(), &work_ns);
            if let Err(e) = api
                .patch(
                    work_name,
                    &PatchParams::apply(NAMESPACE_MANAGER).force(),
                    &Patch::Apply(&body),
                )
                .await
            {
                // A cluster just joined may not have its execution namespace yet.
                warn!(work = %work_name, namespace = %work_ns, error = %e, "writing a namespace Work failed; retrying");
                ok = false;
            } else {
                ctx.metrics.wrote("namespace_work");
            }
        }
    }
    tracing::debug!(
        namespaces = namespaces.len(),
        wanted = wanted.len(),
        existing = existing.len(),
        "namespace sync pass"
    );
    for ((ns, name), work) in &existing {
        if wanted.contains(&(ns.clone(), name.clone()))
            || work.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let api: Api<Work> = Api::namespaced(ctx.host.clone(), ns);
        match api.delete(name, &DeleteParams::background()).await {
            Ok(_) => ctx.metrics.wrote("namespace_work_delete"),
            Err(e) if is_not_found(&e) => {}
            Err(e) => {
                warn!(work = %name, namespace = %ns, error = %e, "deleting a namespace Work failed; retrying");
                ok = false;
            }
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_namespace_that_is_not_propagated_keeps_only_what_decides_it() {
        let namespace = |name: &str| -> Namespace {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": name, "uid": "u1", "resourceVersion": "7",
                    "labels": {"team": "a"}, "annotations": {"note": "x"},
                    "deletionTimestamp": "2026-01-01T00:00:00Z",
                    "managedFields": [{"manager": "m", "operation": "Apply"}]},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }))
            .unwrap()
        };
        let defaults = SkippedNamespaces::default();
        let mut user = namespace("shop");
        trim_unpropagated(&mut user, &defaults);
        assert_eq!(
            user,
            namespace("shop"),
            "a propagated namespace is kept whole"
        );

        let execution = karmada::execution_namespace("m1");
        let mut trimmed = namespace(&execution);
        trim_unpropagated(&mut trimmed, &defaults);
        let full = namespace(&execution);
        assert_eq!(trimmed.metadata.name, full.metadata.name);
        assert_eq!(trimmed.metadata.uid, full.metadata.uid);
        assert_eq!(
            trimmed.metadata.resource_version,
            full.metadata.resource_version
        );
        assert_eq!(trimmed.metadata.labels, full.metadata.labels);
        assert_eq!(
            trimmed.metadata.deletion_timestamp,
            full.metadata.deletion_timestamp
        );
        assert_eq!(trimmed.metadata.annotations, None);
        assert_eq!(trimmed.metadata.managed_fields, None);
        assert_eq!((trimmed.spec, trimmed.status), (None, None));

        // A pattern the operator skips counts as not propagated too.
        let mut skipped = namespace("tmp-1");
        trim_unpropagated(&mut skipped, &SkippedNamespaces::new(&["tmp-.*"]).unwrap());
        assert_eq!(skipped.status, None);
        // A user's karmada-* namespace is propagated.
        let mut demo = namespace("karmada-demo");
        trim_unpropagated(&mut demo, &defaults);
        assert_eq!(demo, namespace("karmada-demo"));
    }

    #[test]
    fn only_joining_and_leaving_clusters_call_for_a_pass() {
        let cluster = |name: &str, ready: &str, deleting: bool| -> Cluster {
            serde_json::from_value(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": name,
                    "deletionTimestamp": deleting.then_some("2026-01-01T00:00:00Z")},
                "spec": {"syncMode": "Push"},
                "status": {"conditions": [{"type": "Ready", "status": ready, "reason": "r",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
            }))
            .unwrap()
        };
        let members = Members::default();
        assert!(members.changed(&cluster("m1", "False", false), false));
        assert!(members.changed(&cluster("m2", "False", false), false));
        // Status writes (and relists) of a joined cluster: nothing to do.
        assert!(!members.changed(&cluster("m1", "True", false), false));
        assert!(!members.changed(&cluster("m1", "True", false), false));
        // Being deleted, then gone: one pass for the first, none for the second.
        assert!(members.changed(&cluster("m1", "True", true), false));
        assert!(!members.changed(&cluster("m1", "True", true), true));
        assert!(members.changed(&cluster("m2", "False", false), true));
        assert!(members.changed(&cluster("m1", "True", false), false));
    }

    #[test]
    fn system_and_opted_out_namespaces_stay_home() {
        let none = BTreeMap::new();
        let defaults = SkippedNamespaces::default();
        let tmp = SkippedNamespaces::new(&["tmp-.*"]).unwrap();
        assert!(propagated("team-x", &none, &defaults));
        assert!(
            propagated("karmada-demo", &none, &defaults),
            "a user's namespace"
        );
        for n in [
            "default",
            "kube-system",
            "kube-public",
            karmada::NAMESPACE_KARMADA_SYSTEM,
            &karmada::execution_namespace("m1"),
            karmada::NAMESPACE_KARMADA_CLUSTER,
        ] {
            assert!(!propagated(n, &none, &defaults), "{n}");
        }
        let mut skip = BTreeMap::new();
        skip.insert(
            karmada::NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL.to_string(),
            "true".to_string(),
        );
        assert!(!propagated("team-x", &skip, &defaults));
        assert!(!propagated("tmp-1", &none, &tmp));
        // Not cached at all: those the name alone keeps home. A label can change; a name not.
        assert!(never_propagated(
            &karmada::execution_namespace("m1"),
            &defaults
        ));
        assert!(never_propagated("tmp-1", &tmp));
        assert!(never_propagated("default", &defaults));
        assert!(!never_propagated("team-x", &defaults));
        assert!(!never_propagated("tmp-1", &defaults));
    }

    #[test]
    fn the_manifest_keeps_labels_and_points_to_its_work() {
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-x", "uid": "u", "resourceVersion": "9",
                         "labels": {"team": "x"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "n"}},
            "status": {"phase": "Active"}
        }))
        .unwrap();
        let m = namespace_manifest(&ns, "m1", "team-x-abc");
        assert_eq!(
            m,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-x",
                "labels": {"team": "x", karmada::MANAGED_BY_KARMADA_LABEL: "true"},
                "annotations": {"note": "n",
                                karmada::WORK_NAMESPACE_ANNOTATION: karmada::execution_namespace("m1"),
                                karmada::WORK_NAME_ANNOTATION: "team-x-abc"}}})
        );
    }
}
