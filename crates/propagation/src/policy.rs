//! Which policy claims a template (pure; KARMADA-FACTS "Policy matching").
//!
//! A selector matches a template by apiVersion and kind, then namespace (when given), then
//! name (when given; the label selector is ignored) or labels. The selector that matched most
//! specifically gives the policy its *implicit* priority for that template: name >
//! labelSelector > kind only. Among matching policies the winner has the highest
//! `spec.priority`, then the highest implicit priority, then the smallest name.
//! PropagationPolicies (namespaced, in the template's namespace) are tried before
//! ClusterPropagationPolicies.
//!
//! A claimed template keeps its policy while the policy exists and still matches, unless a
//! policy with `preemption: Always` takes it: a PropagationPolicy of higher priority than the
//! claiming PropagationPolicy, any PropagationPolicy over a ClusterPropagationPolicy, or a
//! ClusterPropagationPolicy of higher priority than the claiming ClusterPropagationPolicy
//! (Karmada's preemption rules: a cluster-wide policy never preempts a namespaced one).

use std::cmp::Ordering;

use flotilla_apimachinery::selector::LabelSelector;
use flotilla_karmada_api::policy::{PreemptionBehavior, PropagationSpec, ResourceSelector};
use serde_json::{Map, Value};

/// How specifically a selector matched (Karmada's implicit priority).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImplicitPriority {
    /// Matched by apiVersion/kind only.
    Kind = 1,
    /// Matched by a label selector.
    Labels = 2,
    /// Matched by name.
    Name = 3,
}

/// Namespaced PropagationPolicy or ClusterPropagationPolicy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PolicyScope {
    /// `PropagationPolicy`.
    Namespaced,
    /// `ClusterPropagationPolicy`.
    Cluster,
}

/// Identifies a policy.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PolicyId {
    pub scope: PolicyScope,
    /// Empty for ClusterPropagationPolicies.
    pub namespace: String,
    pub name: String,
}

/// What matching needs of a policy.
#[derive(Clone, Debug)]
pub struct PolicyView {
    pub id: PolicyId,
    pub priority: i32,
    pub preemption: bool,
    pub selectors: Vec<CompiledSelector>,
    /// Being deleted: claims nothing new and loses what it has.
    pub deleting: bool,
}

impl PolicyView {
    /// The view of a policy's spec; `None` when a label selector does not parse (the host's
    /// validation rejects those, so this only guards against old stored objects).
    pub fn new(id: PolicyId, spec: &PropagationSpec, deleting: bool) -> Option<Self> {
        let selectors = spec
            .resource_selectors
            .iter()
            .map(CompiledSelector::new)
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            id,
            priority: spec.priority.unwrap_or(0),
            preemption: spec.preemption.unwrap_or_default() == PreemptionBehavior::Always,
            selectors,
            deleting,
        })
    }

    /// The implicit priority this policy matches the template with, if it does.
    pub fn matches(&self, t: &TemplateView<'_>) -> Option<ImplicitPriority> {
        if self.id.scope == PolicyScope::Namespaced
            && t.namespace != Some(self.id.namespace.as_str())
        {
            return None;
        }
        self.selectors.iter().filter_map(|s| s.matches(t)).max()
    }
}

/// A resource selector with its label selector parsed once.
#[derive(Clone, Debug)]
pub struct CompiledSelector {
    api_version: String,
    kind: String,
    namespace: Option<String>,
    name: Option<String>,
    labels: Option<LabelSelector>,
}

impl CompiledSelector {
    pub fn new(s: &ResourceSelector) -> Option<Self> {
        let labels = match &s.label_selector {
            Some(ls) => {
                let value = serde_json::to_value(ls).ok()?;
                Some(LabelSelector::from_object(&value).ok()?)
            }
            None => None,
        };
        Some(Self {
            api_version: s.api_version.clone(),
            kind: s.kind.clone(),
            namespace: s.namespace.clone().filter(|n| !n.is_empty()),
            name: s.name.clone().filter(|n| !n.is_empty()),
            labels,
        })
    }

    /// How specifically this selector matches the template, if it does.
    pub fn matches(&self, t: &TemplateView<'_>) -> Option<ImplicitPriority> {
        if self.api_version != t.api_version || self.kind != t.kind {
            return None;
        }
        if let Some(ns) = &self.namespace {
            if t.namespace != Some(ns.as_str()) {
                return None;
            }
        }
        if let Some(name) = &self.name {
            return (name == t.name).then_some(ImplicitPriority::Name);
        }
        match &self.labels {
            Some(ls) => ls.matches(t.labels).then_some(ImplicitPriority::Labels),
            None => Some(ImplicitPriority::Kind),
        }
    }
}

/// What matching needs of a template.
#[derive(Clone, Copy, Debug)]
pub struct TemplateView<'a> {
    pub api_version: &'a str,
    pub kind: &'a str,
    pub namespace: Option<&'a str>,
    pub name: &'a str,
    pub labels: Option<&'a Map<String, Value>>,
}

/// The best of `policies` for the template (all of one scope), with its implicit priority.
fn best<'p>(
    policies: &'p [PolicyView],
    t: &TemplateView<'_>,
) -> Option<(&'p PolicyView, ImplicitPriority)> {
    policies
        .iter()
        .filter(|p| !p.deleting)
        .filter_map(|p| p.matches(t).map(|m| (p, m)))
        .min_by(|(a, am), (b, bm)| {
            b.priority
                .cmp(&a.priority)
                .then(bm.cmp(am))
                .then_with(|| a.id.name.cmp(&b.id.name))
        })
}

/// Whether `challenger` may take the template from `holder`.
fn preempts(challenger: &PolicyView, holder: &PolicyView) -> bool {
    if !challenger.preemption || challenger.id == holder.id {
        return false;
    }
    match (challenger.id.scope, holder.id.scope) {
        (PolicyScope::Namespaced, PolicyScope::Cluster) => true,
        (PolicyScope::Cluster, PolicyScope::Namespaced) => false,
        _ => challenger.priority.cmp(&holder.priority) == Ordering::Greater,
    }
}

/// The policy holding the template (`claimed`), while it exists, is not being deleted and
/// still selects the template: a different [`decide`] result is then a preemption.
pub fn holder<'p>(
    t: &TemplateView<'_>,
    claimed: Option<&PolicyId>,
    namespaced: &'p [PolicyView],
    cluster: &'p [PolicyView],
) -> Option<&'p PolicyView> {
    claimed.and_then(|id| {
        let pool = match id.scope {
            PolicyScope::Namespaced => namespaced,
            PolicyScope::Cluster => cluster,
        };
        pool.iter()
            .find(|p| &p.id == id && !p.deleting && p.matches(t).is_some())
    })
}

/// The policy that should claim the template: `claimed` is the one holding it now.
/// `namespaced` and `cluster` are every PropagationPolicy and ClusterPropagationPolicy
/// (namespaced ones of other namespaces never match).
pub fn decide<'p>(
    t: &TemplateView<'_>,
    claimed: Option<&PolicyId>,
    namespaced: &'p [PolicyView],
    cluster: &'p [PolicyView],
) -> Option<&'p PolicyView> {
    let best_namespaced = best(namespaced, t).map(|(p, _)| p);
    let best_cluster = best(cluster, t).map(|(p, _)| p);
    match holder(t, claimed, namespaced, cluster) {
        Some(holder) => {
            for challenger in [best_namespaced, best_cluster].into_iter().flatten() {
                if preempts(challenger, holder) {
                    return Some(challenger);
                }
            }
            Some(holder)
        }
        None => best_namespaced.or(best_cluster),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(scope: PolicyScope, ns: &str, name: &str, spec: Value) -> PolicyView {
        let spec: PropagationSpec = serde_json::from_value(spec).unwrap();
        PolicyView::new(
            PolicyId {
                scope,
                namespace: ns.into(),
                name: name.into(),
            },
            &spec,
            false,
        )
        .unwrap()
    }

    fn deploy_selector(extra: Value) -> Value {
        let mut s = json!({"apiVersion": "apps/v1", "kind": "Deployment"});
        if let (Some(m), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        s
    }

    fn pp(name: &str, priority: i32, preemption: bool, selector: Value) -> PolicyView {
        policy(
            PolicyScope::Namespaced,
            "default",
            name,
            json!({"resourceSelectors": [deploy_selector(selector)], "priority": priority,
                   "preemption": if preemption {"Always"} else {"Never"}}),
        )
    }

    fn cpp(name: &str, priority: i32, preemption: bool, selector: Value) -> PolicyView {
        let mut p = pp(name, priority, preemption, selector);
        p.id.scope = PolicyScope::Cluster;
        p.id.namespace = String::new();
        p
    }

    fn labels() -> Map<String, Value> {
        json!({"app": "web", "tier": "front"})
            .as_object()
            .cloned()
            .unwrap()
    }

    fn template(labels: &Map<String, Value>) -> TemplateView<'_> {
        TemplateView {
            api_version: "apps/v1",
            kind: "Deployment",
            namespace: Some("default"),
            name: "web",
            labels: Some(labels),
        }
    }

    fn winner(claimed: Option<&PolicyId>, n: &[PolicyView], c: &[PolicyView]) -> Option<String> {
        let l = labels();
        decide(&template(&l), claimed, n, c).map(|p| p.id.name.clone())
    }

    #[test]
    fn selectors_match_by_kind_namespace_name_and_labels() {
        let l = labels();
        let t = template(&l);
        let cases = [
            (json!({}), Some(ImplicitPriority::Kind)),
            (json!({"name": "web"}), Some(ImplicitPriority::Name)),
            (json!({"name": "other"}), None),
            // A name makes the label selector irrelevant.
            (
                json!({"name": "web", "labelSelector": {"matchLabels": {"app": "nope"}}}),
                Some(ImplicitPriority::Name),
            ),
            (
                json!({"labelSelector": {"matchLabels": {"app": "web"}}}),
                Some(ImplicitPriority::Labels),
            ),
            (
                json!({"labelSelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}}),
                None,
            ),
            (
                json!({"namespace": "default"}),
                Some(ImplicitPriority::Kind),
            ),
            (json!({"namespace": "other"}), None),
        ];
        for (selector, expected) in cases {
            let p = pp("p", 0, false, selector.clone());
            assert_eq!(p.matches(&t), expected, "{selector}");
        }
        let mut other_kind = pp("p", 0, false, json!({}));
        other_kind.selectors = vec![
            CompiledSelector::new(
                &serde_json::from_value(json!({"apiVersion": "apps/v1", "kind": "StatefulSet"}))
                    .unwrap(),
            )
            .unwrap(),
        ];
        assert_eq!(other_kind.matches(&t), None);
        let mut elsewhere = pp("p", 0, false, json!({}));
        elsewhere.id.namespace = "other".into();
        assert_eq!(
            elsewhere.matches(&t),
            None,
            "a PropagationPolicy selects only its namespace"
        );
    }

    #[test]
    fn winner_by_priority_then_specificity_then_name() {
        let n = [
            pp("b-kind", 0, false, json!({})),
            pp("a-kind", 0, false, json!({})),
        ];
        assert_eq!(winner(None, &n, &[]).as_deref(), Some("a-kind"));
        let n = [
            pp("a-kind", 0, false, json!({})),
            pp(
                "z-labels",
                0,
                false,
                json!({"labelSelector": {"matchLabels": {"app": "web"}}}),
            ),
        ];
        assert_eq!(winner(None, &n, &[]).as_deref(), Some("z-labels"));
        let n = [
            pp("by-name", 0, false, json!({"name": "web"})),
            pp(
                "by-labels",
                0,
                false,
                json!({"labelSelector": {"matchLabels": {"app": "web"}}}),
            ),
        ];
        assert_eq!(winner(None, &n, &[]).as_deref(), Some("by-name"));
        let n = [
            pp("by-name", 0, false, json!({"name": "web"})),
            pp("kind-high", 5, false, json!({})),
        ];
        assert_eq!(winner(None, &n, &[]).as_deref(), Some("kind-high"));
    }

    #[test]
    fn namespaced_policies_come_before_cluster_ones() {
        let n = [pp("ns", 0, false, json!({}))];
        let c = [cpp("cluster", 100, false, json!({"name": "web"}))];
        assert_eq!(winner(None, &n, &c).as_deref(), Some("ns"));
        assert_eq!(winner(None, &[], &c).as_deref(), Some("cluster"));
        assert_eq!(winner(None, &[], &[]), None);
    }

    #[test]
    fn a_claim_is_kept_unless_preempted() {
        let low = pp("low", 0, false, json!({}));
        let high = pp("high", 10, false, json!({}));
        let claim = low.id.clone();
        // Without preemption the holder keeps it even though a better policy exists.
        assert_eq!(
            winner(Some(&claim), &[low.clone(), high.clone()], &[]).as_deref(),
            Some("low")
        );
        let high_preempting = pp("high", 10, true, json!({}));
        assert_eq!(
            winner(Some(&claim), &[low.clone(), high_preempting], &[]).as_deref(),
            Some("high")
        );
        // Equal priority never preempts.
        let equal = pp("equal", 0, true, json!({"name": "web"}));
        assert_eq!(
            winner(Some(&claim), &[low.clone(), equal], &[]).as_deref(),
            Some("low")
        );
        // A namespaced policy with preemption takes a template from a cluster policy.
        let c = [cpp("cluster", 100, false, json!({}))];
        let cclaim = c[0].id.clone();
        assert_eq!(
            winner(Some(&cclaim), &[pp("ns", 0, true, json!({}))], &c).as_deref(),
            Some("ns")
        );
        assert_eq!(
            winner(Some(&cclaim), &[pp("ns", 0, false, json!({}))], &c).as_deref(),
            Some("cluster")
        );
        // A cluster policy never takes one from a namespaced policy.
        let c = [cpp("cluster", 100, true, json!({}))];
        assert_eq!(
            winner(Some(&claim), std::slice::from_ref(&low), &c).as_deref(),
            Some("low")
        );
    }

    #[test]
    fn a_lost_or_deleted_claim_is_rematched() {
        let mut gone = pp("gone", 50, false, json!({}));
        gone.deleting = true;
        let other = pp("other", 0, false, json!({}));
        assert_eq!(
            winner(Some(&gone.id.clone()), &[gone, other.clone()], &[]).as_deref(),
            Some("other")
        );
        let no_longer = pp("narrowed", 50, false, json!({"name": "api"}));
        assert_eq!(
            winner(Some(&no_longer.id.clone()), &[no_longer, other], &[]).as_deref(),
            Some("other")
        );
    }
}
