//! OverridePolicies and ClusterOverridePolicies in the binding controller: which of them apply
//! to a template (resource selectors, and so Karmada's implicit priority; `flotilla_overrides`
//! owns the order and the overriders), and which bindings a change concerns, so that a
//! policy change re-renders only the Works of the templates it selected before or selects
//! now, and a Cluster's labels, provider, region or zones changing re-renders only the Works
//! of the bindings in that cluster.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use flotilla_karmada_api::Cluster;
use flotilla_karmada_api::binding::{ClusterResourceBinding, ResourceBinding};
use flotilla_karmada_api::overrides::{ClusterOverridePolicy, OverridePolicy, OverrideSpec};
use flotilla_karmada_api::policy::ResourceSelector;
use flotilla_overrides::{MatchedPolicy, OverrideScope};
use kube::ResourceExt;
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::{Map, Value};

use crate::binding_key::BindingKey;
use crate::policy::{CompiledSelector, ImplicitPriority, TemplateView};
use crate::templates::{Templates, cached_template};

/// A policy (either kind) held for one rendering.
#[derive(Clone)]
pub(crate) enum HeldPolicy {
    Namespaced(Arc<OverridePolicy>),
    Cluster(Arc<ClusterOverridePolicy>),
}

impl HeldPolicy {
    fn spec(&self) -> &OverrideSpec {
        match self {
            HeldPolicy::Namespaced(p) => &p.spec,
            HeldPolicy::Cluster(p) => &p.spec,
        }
    }

    fn scope(&self) -> OverrideScope {
        match self {
            HeldPolicy::Namespaced(_) => OverrideScope::Namespaced,
            HeldPolicy::Cluster(_) => OverrideScope::Cluster,
        }
    }

    fn name(&self) -> &str {
        match self {
            HeldPolicy::Namespaced(p) => p.metadata.name.as_deref().unwrap_or_default(),
            HeldPolicy::Cluster(p) => p.metadata.name.as_deref().unwrap_or_default(),
        }
    }
}

/// The policies that match one template, with their implicit priority.
pub(crate) struct Matched(Vec<(HeldPolicy, u8)>);

impl Matched {
    /// The engine's view, in application order.
    pub fn policies(&self) -> Vec<MatchedPolicy<'_>> {
        let mut out: Vec<MatchedPolicy<'_>> = self
            .0
            .iter()
            .map(|(p, priority)| MatchedPolicy {
                scope: p.scope(),
                name: p.name(),
                implicit_priority: *priority,
                spec: p.spec(),
            })
            .collect();
        flotilla_overrides::sort_for_application(&mut out);
        out
    }

    /// Whether some matched rule is limited to some clusters.
    pub fn has_targets(&self) -> bool {
        self.0.iter().any(|(p, _)| {
            p.spec()
                .effective_rules()
                .iter()
                .any(|r| r.target_cluster.is_some())
        })
    }
}

/// How specifically `selectors` select the template; empty selectors select every template
/// (as specifically as a kind-only selector, Karmada's "match all"). A label selector that does
/// not parse selects nothing.
pub(crate) fn selects(
    selectors: &[ResourceSelector],
    t: &TemplateView<'_>,
) -> Option<ImplicitPriority> {
    if selectors.is_empty() {
        return Some(ImplicitPriority::Kind);
    }
    selectors
        .iter()
        .filter_map(|s| CompiledSelector::new(s)?.matches(t))
        .max()
}

/// The two override policy caches.
#[derive(Clone)]
pub(crate) struct OverridePolicies {
    pub namespaced: Store<OverridePolicy>,
    pub cluster: Store<ClusterOverridePolicy>,
}

impl OverridePolicies {
    /// The policies that apply to `template`: ClusterOverridePolicies, and the
    /// OverridePolicies of its namespace. Policies being deleted no longer apply.
    pub fn matching(&self, template: &Value) -> Matched {
        let view = view_of(template);
        let mut out = Vec::new();
        for p in self.cluster.state() {
            if p.metadata.deletion_timestamp.is_some() {
                continue;
            }
            if let Some(priority) = selects(&p.spec.resource_selectors, &view) {
                out.push((HeldPolicy::Cluster(p), priority as u8));
            }
        }
        if let Some(ns) = view.namespace {
            for p in self.namespaced.state() {
                if p.metadata.deletion_timestamp.is_some()
                    || p.metadata.namespace.as_deref() != Some(ns)
                {
                    continue;
                }
                if let Some(priority) = selects(&p.spec.resource_selectors, &view) {
                    out.push((HeldPolicy::Namespaced(p), priority as u8));
                }
            }
        }
        Matched(out)
    }

    /// Whether any policy exists.
    pub fn any(&self) -> bool {
        !self.cluster.state().is_empty() || !self.namespaced.state().is_empty()
    }
}

/// The matching view of a template.
pub(crate) fn view_of(template: &Value) -> TemplateView<'_> {
    TemplateView {
        api_version: template
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        kind: template
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        namespace: template
            .pointer("/metadata/namespace")
            .and_then(Value::as_str),
        name: template
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        labels: template
            .pointer("/metadata/labels")
            .and_then(Value::as_object),
    }
}

/// A change the binding controller must look at for overrides.
#[derive(Clone, Debug)]
pub(crate) enum OverrideChange {
    /// An OverridePolicy (namespace, name) or ClusterOverridePolicy (no namespace).
    Policy {
        namespace: Option<String>,
        name: String,
    },
    /// A Cluster.
    Cluster(String),
}

/// What override rules can see of a Cluster.
#[derive(Clone, Debug, PartialEq, Default)]
struct ClusterFacts {
    labels: BTreeMap<String, String>,
    provider: Option<String>,
    region: Option<String>,
    zone: Option<String>,
    zones: Vec<String>,
}

fn facts(c: &Cluster) -> ClusterFacts {
    ClusterFacts {
        labels: c.metadata.labels.clone().unwrap_or_default(),
        provider: c.spec.provider.clone(),
        region: c.spec.region.clone(),
        zone: c.spec.zone.clone(),
        zones: c.spec.zones.clone(),
    }
}

/// Turns [`OverrideChange`]s into the bindings to render again. It remembers each policy's
/// last selectors (a policy that stops selecting a template must render it again, without
/// the policy) and each Cluster's last labels and location.
pub(crate) struct ChangeTracker {
    policies: OverridePolicies,
    bindings: Store<ResourceBinding>,
    cluster_bindings: Store<ClusterResourceBinding>,
    clusters: Store<Cluster>,
    templates: Templates,
    selectors: HashMap<(Option<String>, String), Vec<ResourceSelector>>,
    facts: HashMap<String, ClusterFacts>,
}

impl ChangeTracker {
    pub fn new(
        policies: OverridePolicies,
        bindings: Store<ResourceBinding>,
        cluster_bindings: Store<ClusterResourceBinding>,
        clusters: Store<Cluster>,
        templates: Templates,
    ) -> Self {
        Self {
            policies,
            bindings,
            cluster_bindings,
            clusters,
            templates,
            selectors: HashMap::new(),
            facts: HashMap::new(),
        }
    }

    /// The bindings `change` concerns.
    pub fn affected(&mut self, change: &OverrideChange) -> Vec<BindingKey> {
        match change {
            OverrideChange::Policy { namespace, name } => {
                let key = (namespace.clone(), name.clone());
                let now = match namespace {
                    Some(ns) => self
                        .policies
                        .namespaced
                        .get(&ObjectRef::new(name).within(ns))
                        .map(|p| p.spec.resource_selectors.clone()),
                    None => self
                        .policies
                        .cluster
                        .get(&ObjectRef::new(name))
                        .map(|p| p.spec.resource_selectors.clone()),
                };
                let before = match &now {
                    Some(s) => self.selectors.insert(key, s.clone()),
                    None => self.selectors.remove(&key),
                };
                let sets: Vec<Vec<ResourceSelector>> = before.into_iter().chain(now).collect();
                self.bindings_selected(namespace.as_deref(), &sets)
            }
            OverrideChange::Cluster(name) => {
                let now = self.clusters.get(&ObjectRef::new(name)).map(|c| facts(&c));
                let before = match &now {
                    Some(f) => self.facts.insert(name.clone(), f.clone()),
                    None => self.facts.remove(name),
                };
                // New, gone or unchanged: the binding controller already follows Clusters
                // joining and leaving through the scheduler's placements.
                if before.is_none() || now.is_none() || before == now || !self.policies.any() {
                    return Vec::new();
                }
                self.bindings_in(name)
            }
        }
    }

    /// Bindings whose template one of `sets` selects (`namespace`: an OverridePolicy's).
    fn bindings_selected(
        &self,
        namespace: Option<&str>,
        sets: &[Vec<ResourceSelector>],
    ) -> Vec<BindingKey> {
        let mut out = Vec::new();
        let mut consider = |key: BindingKey, r: &flotilla_karmada_api::binding::ObjectReference| {
            if namespace.is_some() && r.namespace.as_deref() != namespace {
                return;
            }
            let labels = self.template_labels(r);
            let view = TemplateView {
                api_version: &r.api_version,
                kind: &r.kind,
                namespace: r.namespace.as_deref(),
                name: &r.name,
                labels: labels.as_ref(),
            };
            if sets.iter().any(|s| selects(s, &view).is_some()) {
                out.push(key);
            }
        };
        for b in self.bindings.state() {
            consider(
                BindingKey {
                    namespace: b.namespace(),
                    name: b.name_any(),
                },
                &b.spec.resource,
            );
        }
        if namespace.is_none() {
            for b in self.cluster_bindings.state() {
                consider(
                    BindingKey {
                        namespace: None,
                        name: b.name_any(),
                    },
                    &b.spec.resource,
                );
            }
        }
        out
    }

    fn template_labels(
        &self,
        r: &flotilla_karmada_api::binding::ObjectReference,
    ) -> Option<Map<String, Value>> {
        let gvk = crate::registry::gvk_of(&r.api_version, &r.kind);
        let t = cached_template(&self.templates, &gvk, r.namespace.as_deref(), &r.name)??;
        Some(
            t.labels()
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    }

    /// Bindings with a Work in `cluster`.
    fn bindings_in(&self, cluster: &str) -> Vec<BindingKey> {
        let mut out = Vec::new();
        for b in self.bindings.state() {
            if b.spec
                .all_target_clusters()
                .iter()
                .any(|t| t.name == cluster)
            {
                out.push(BindingKey {
                    namespace: b.namespace(),
                    name: b.name_any(),
                });
            }
        }
        for b in self.cluster_bindings.state() {
            if b.spec
                .all_target_clusters()
                .iter()
                .any(|t| t.name == cluster)
            {
                out.push(BindingKey {
                    namespace: None,
                    name: b.name_any(),
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn selector(v: Value) -> ResourceSelector {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn empty_selectors_select_everything_as_a_kind_match_and_names_win() {
        let t = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}}});
        let view = view_of(&t);
        assert_eq!(selects(&[], &view), Some(ImplicitPriority::Kind));
        let by_kind = selector(json!({"apiVersion": "apps/v1", "kind": "Deployment"}));
        let by_label = selector(json!({"apiVersion": "apps/v1", "kind": "Deployment",
                                       "labelSelector": {"matchLabels": {"app": "web"}}}));
        let by_name =
            selector(json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}));
        let other = selector(json!({"apiVersion": "v1", "kind": "ConfigMap"}));
        assert_eq!(
            selects(std::slice::from_ref(&by_kind), &view),
            Some(ImplicitPriority::Kind)
        );
        assert_eq!(
            selects(&[by_kind, by_label.clone()], &view),
            Some(ImplicitPriority::Labels)
        );
        assert_eq!(
            selects(&[by_label, by_name], &view),
            Some(ImplicitPriority::Name)
        );
        assert_eq!(selects(&[other], &view), None);
    }
}

#[cfg(test)]
mod tracker_tests {
    use super::*;
    use kube::runtime::reflector::store::Writer;
    use kube::runtime::watcher::Event;
    use serde_json::json;

    fn store<K>(items: Vec<Value>) -> (Writer<K>, Store<K>)
    where
        K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + 'static,
    {
        let mut w = Writer::<K>::default();
        for item in items {
            w.apply_watcher_event(&Event::Apply(serde_json::from_value(item).unwrap()));
        }
        let r = w.as_reader();
        (w, r)
    }

    fn binding(name: &str, cluster: &str) -> Value {
        json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
               "metadata": {"name": format!("{name}-deployment"), "namespace": "demo"},
               "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment",
                                     "namespace": "demo", "name": name},
                        "clusters": [{"name": cluster, "replicas": 1}]}})
    }

    fn policy(selects: &str) -> Value {
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
               "metadata": {"name": "p", "namespace": "demo"},
               "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": selects}]}})
    }

    fn member(name: &str, region: &str) -> Value {
        json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
               "metadata": {"name": name}, "spec": {"syncMode": "Push", "region": region}})
    }

    fn names(keys: Vec<BindingKey>) -> Vec<String> {
        let mut n: Vec<String> = keys.into_iter().map(|k| k.name).collect();
        n.sort();
        n
    }

    #[test]
    fn a_policy_change_concerns_the_bindings_it_selected_or_selects_and_no_other() {
        let (_b, bindings) = store::<ResourceBinding>(vec![
            binding("web", "m1"),
            binding("api", "m2"),
            binding("db", "m1"),
        ]);
        let (_cb, cluster_bindings) = store::<ClusterResourceBinding>(vec![]);
        let (mut pw, namespaced) = store::<OverridePolicy>(vec![policy("web")]);
        let (_cp, cluster) = store::<ClusterOverridePolicy>(vec![]);
        let (mut cw, clusters) = store::<Cluster>(vec![member("m1", "eu"), member("m2", "us")]);
        let mut tracker = ChangeTracker::new(
            OverridePolicies {
                namespaced,
                cluster,
            },
            bindings,
            cluster_bindings,
            clusters,
            Arc::new(crate::templates::TemplateCache::new(Default::default())),
        );
        let change = OverrideChange::Policy {
            namespace: Some("demo".into()),
            name: "p".into(),
        };
        assert_eq!(names(tracker.affected(&change)), ["web-deployment"]);
        // It moves from web to api: both need rendering again, db does not.
        pw.apply_watcher_event(&Event::Apply(
            serde_json::from_value(policy("api")).unwrap(),
        ));
        assert_eq!(
            names(tracker.affected(&change)),
            ["api-deployment", "web-deployment"]
        );
        // Deleted: what it selected last.
        pw.apply_watcher_event(&Event::Delete(
            serde_json::from_value(policy("api")).unwrap(),
        ));
        assert_eq!(names(tracker.affected(&change)), ["api-deployment"]);

        // Clusters: the first sight records; a status-only change concerns nothing; a region
        // change concerns the bindings in that cluster, while policies exist.
        let m1 = OverrideChange::Cluster("m1".into());
        assert!(tracker.affected(&m1).is_empty());
        assert!(tracker.affected(&m1).is_empty());
        cw.apply_watcher_event(&Event::Apply(
            serde_json::from_value(member("m1", "ap")).unwrap(),
        ));
        assert!(
            tracker.affected(&m1).is_empty(),
            "no override policy exists, nothing to render again"
        );
        pw.apply_watcher_event(&Event::Apply(
            serde_json::from_value(policy("web")).unwrap(),
        ));
        cw.apply_watcher_event(&Event::Apply(
            serde_json::from_value(member("m1", "eu")).unwrap(),
        ));
        assert_eq!(
            names(tracker.affected(&m1)),
            ["db-deployment", "web-deployment"]
        );
    }
}
