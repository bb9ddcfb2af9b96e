//! Cluster filters: cluster affinity (names, exclusions, label and field selectors), taints
//! against tolerations, API enablement, deletion and eviction; and the NoExecute taint
//! helpers the scheduling loop uses for failover.

use std::collections::BTreeMap;

use flotilla_karmada_api::policy::{ClusterAffinity, FieldSelector};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::snapshot::ClusterSnapshot;

/// Whether `cluster` passes `affinity` (every given part must match).
pub fn matches_affinity(cluster: &ClusterSnapshot, affinity: &ClusterAffinity) -> bool {
    AffinityMatcher::new(affinity).matches(cluster)
}

/// A [`ClusterAffinity`] prepared for matching many clusters: name lists sorted once, so a
/// long `clusterNames` list costs a binary search per cluster rather than a scan.
#[derive(Clone, Debug)]
pub struct AffinityMatcher<'p> {
    names: Vec<&'p str>,
    exclude: Vec<&'p str>,
    labels: Option<&'p LabelSelector>,
    fields: Option<&'p FieldSelector>,
}

impl<'p> AffinityMatcher<'p> {
    /// Prepares `affinity`.
    pub fn new(affinity: &'p ClusterAffinity) -> Self {
        let sorted = |v: &'p [String]| {
            let mut s: Vec<&'p str> = v.iter().map(String::as_str).collect();
            s.sort_unstable();
            s
        };
        AffinityMatcher {
            names: sorted(&affinity.cluster_names),
            exclude: sorted(&affinity.exclude_clusters),
            labels: affinity.label_selector.as_ref(),
            fields: affinity.field_selector.as_ref(),
        }
    }

    /// The affinity is a plain list of cluster names (nothing else constrains it).
    pub fn names_only(&self) -> Option<&[&'p str]> {
        (!self.names.is_empty()
            && self.exclude.is_empty()
            && self.labels.is_none()
            && self.fields.is_none())
        .then_some(&self.names)
    }

    /// Whether `cluster` passes.
    pub fn matches(&self, cluster: &ClusterSnapshot) -> bool {
        let name = cluster.name.as_str();
        if !self.names.is_empty() && self.names.binary_search(&name).is_err() {
            return false;
        }
        if !self.exclude.is_empty() && self.exclude.binary_search(&name).is_ok() {
            return false;
        }
        if let Some(selector) = self.labels {
            if !matches_labels(selector, &cluster.labels) {
                return false;
            }
        }
        if let Some(selector) = self.fields {
            if !matches_fields(selector, cluster) {
                return false;
            }
        }
        true
    }
}

/// Label selector semantics (matchLabels and matchExpressions, all must hold). Unknown
/// operators match nothing.
pub fn matches_labels(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    if let Some(want) = &selector.match_labels {
        if !want.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            return false;
        }
    }
    let Some(expressions) = &selector.match_expressions else {
        return true;
    };
    expressions.iter().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.contains(v)),
            "NotIn" => value.is_none_or(|v| !values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    })
}

/// Field selector over `provider`, `region` and `zone`. For `zone`, a cluster spanning
/// several zones is `In` when all its zones are listed and `NotIn` when none is.
pub fn matches_fields(selector: &FieldSelector, cluster: &ClusterSnapshot) -> bool {
    selector.match_expressions.iter().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let present: &[String] = match e.key.as_str() {
            "provider" => cluster.provider.as_slice(),
            "region" => cluster.region.as_slice(),
            "zone" => &cluster.zones,
            _ => return false,
        };
        match e.operator.as_str() {
            "In" => !present.is_empty() && present.iter().all(|v| values.contains(v)),
            "NotIn" => present.iter().all(|v| !values.contains(v)),
            "Exists" => !present.is_empty(),
            "DoesNotExist" => present.is_empty(),
            _ => false,
        }
    })
}

/// Whether one toleration tolerates `taint`: the effect matches (empty tolerates every
/// effect), and either the operator is `Exists` (an empty key then matches every key) or the
/// keys and values are equal (`Equal`, the default operator).
pub fn toleration_matches(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = toleration.effect.as_deref() {
        if !effect.is_empty() && effect != taint.effect {
            return false;
        }
    }
    let key = toleration.key.as_deref().unwrap_or_default();
    match toleration.operator.as_deref().unwrap_or("Equal") {
        "Exists" => key.is_empty() || key == taint.key,
        "Equal" | "" => {
            key == taint.key
                && toleration.value.as_deref().unwrap_or_default()
                    == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// Whether any of `tolerations` tolerates `taint`.
pub fn tolerates(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| toleration_matches(t, taint))
}

/// For a cluster's taints and a placement's tolerations, when the binding must leave the
/// cluster because of NoExecute taints: `None` = never (no NoExecute taint, or all tolerated
/// without a time limit), `Some(0)` = now (an untolerated NoExecute taint), `Some(secs)` = the
/// smallest `tolerationSeconds` among the tolerations matching a NoExecute taint (negative
/// counts as 0).
pub fn no_execute_eviction_after(
    placement_tolerations: &[Toleration],
    taints: &[Taint],
) -> Option<u64> {
    let mut min: Option<u64> = None;
    for taint in taints.iter().filter(|t| t.effect == "NoExecute") {
        let mut tolerated = false;
        for toleration in placement_tolerations {
            if !toleration_matches(toleration, taint) {
                continue;
            }
            tolerated = true;
            if let Some(secs) = toleration.toleration_seconds {
                let secs = u64::try_from(secs).unwrap_or(0);
                min = Some(min.map_or(secs, |m| m.min(secs)));
            }
        }
        if !tolerated {
            return Some(0);
        }
    }
    min
}

/// Why a cluster was filtered out; the text follows the count in the NoClusterFit message.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rejection {
    /// Failed the (term's) cluster affinity.
    Affinity,
    /// Has a NoSchedule/NoExecute taint the placement does not tolerate.
    Taint(String),
    /// Does not serve the template's API.
    ApiMissing,
    /// Is being deleted.
    Deleting,
    /// The binding is being evicted from it.
    Evicting,
    /// Lacks the property a spread constraint groups by.
    MissingProperty(String),
}

impl Rejection {
    /// The text after `N cluster(s)` in the message.
    pub fn text(&self) -> String {
        match self {
            Rejection::Affinity => "did not match the placement cluster affinity constraint".into(),
            Rejection::Taint(t) => format!("had untolerated taint {t}"),
            Rejection::ApiMissing => "did not have the API resource".into(),
            Rejection::Deleting => "were being deleted".into(),
            Rejection::Evicting => "were being evicted from".into(),
            Rejection::MissingProperty(p) => format!("did not have the {p} property"),
        }
    }
}

/// `{key: value}` (or `{key}`) as in the taint filter's message.
pub(crate) fn taint_text(taint: &Taint) -> String {
    match taint.value.as_deref() {
        Some(v) if !v.is_empty() => format!("{{{}: {}}}", taint.key, v),
        _ => format!("{{{}}}", taint.key),
    }
}

/// The first NoSchedule/NoExecute taint not tolerated. A cluster the binding already uses
/// passes whatever its taints, as in Karmada: evicting from it when a NoExecute taint is no
/// longer tolerated is the failover's job (with the placement's tolerationSeconds, or the
/// default toleration), not the filter's, which would drop it at the next scale at once.
pub(crate) fn untolerated_taint<'a>(
    tolerations: &[Toleration],
    taints: &'a [Taint],
    already_placed: bool,
) -> Option<&'a Taint> {
    if already_placed {
        return None;
    }
    taints.iter().find(|t| {
        matches!(t.effect.as_str(), "NoExecute" | "NoSchedule") && !tolerates(tolerations, t)
    })
}

/// Builds the NoClusterFit message from per-reason counts.
pub(crate) fn no_fit_message(total: usize, rejections: &BTreeMap<Rejection, usize>) -> String {
    let mut parts: Vec<String> = rejections
        .iter()
        .map(|(r, n)| format!("{n} cluster(s) {}", r.text()))
        .collect();
    parts.sort();
    if parts.is_empty() {
        format!("0/{total} clusters are available: no cluster is registered.")
    } else {
        format!("0/{total} clusters are available: {}.", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSelectorRequirement;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: Some(value.into()).filter(|v: &String| !v.is_empty()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str, secs: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()).filter(|v: &String| !v.is_empty()),
            operator: Some(op.into()).filter(|v: &String| !v.is_empty()),
            value: Some(value.into()).filter(|v: &String| !v.is_empty()),
            effect: Some(effect.into()).filter(|v: &String| !v.is_empty()),
            toleration_seconds: secs,
        }
    }

    #[test]
    fn toleration_table() {
        let t = taint("dedicated", "gpu", "NoSchedule");
        let cases = [
            (tol("dedicated", "Equal", "gpu", "NoSchedule", None), true),
            (tol("dedicated", "", "gpu", "NoSchedule", None), true),
            (tol("dedicated", "Equal", "cpu", "NoSchedule", None), false),
            (tol("dedicated", "Exists", "", "NoSchedule", None), true),
            (tol("dedicated", "Exists", "", "", None), true),
            (tol("dedicated", "Equal", "gpu", "", None), true),
            (tol("dedicated", "Exists", "", "NoExecute", None), false),
            (tol("other", "Exists", "", "", None), false),
            (tol("", "Exists", "", "", None), true),
            (tol("", "Exists", "", "NoExecute", None), false),
            (tol("dedicated", "Gt", "gpu", "", None), false),
        ];
        for (i, (toleration, want)) in cases.iter().enumerate() {
            assert_eq!(toleration_matches(toleration, &t), *want, "case {i}");
        }
        let no_value = taint("unreachable", "", "NoExecute");
        assert!(toleration_matches(
            &tol("unreachable", "Equal", "", "NoExecute", None),
            &no_value
        ));
    }

    #[test]
    fn no_execute_eviction() {
        let ne = taint("not-ready", "", "NoExecute");
        let ns = taint("maint", "", "NoSchedule");
        assert_eq!(
            no_execute_eviction_after(&[], std::slice::from_ref(&ns)),
            None
        );
        assert_eq!(
            no_execute_eviction_after(&[], &[ns.clone(), ne.clone()]),
            Some(0)
        );
        let forever = tol("not-ready", "Exists", "", "NoExecute", None);
        let five = tol("not-ready", "Exists", "", "", Some(300));
        let two = tol("", "Exists", "", "", Some(120));
        assert_eq!(
            no_execute_eviction_after(std::slice::from_ref(&forever), std::slice::from_ref(&ne)),
            None
        );
        assert_eq!(
            no_execute_eviction_after(&[forever, five.clone()], std::slice::from_ref(&ne)),
            Some(300)
        );
        assert_eq!(
            no_execute_eviction_after(&[five, two], std::slice::from_ref(&ne)),
            Some(120)
        );
        let negative = tol("not-ready", "Exists", "", "", Some(-5));
        assert_eq!(no_execute_eviction_after(&[negative], &[ne]), Some(0));
    }

    #[test]
    fn untolerated_respects_existing_placement() {
        let taints = [
            taint("maint", "", "NoSchedule"),
            taint("soft", "", "PreferNoSchedule"),
        ];
        assert!(untolerated_taint(&[], &taints, false).is_some());
        assert!(untolerated_taint(&[], &taints, true).is_none());
        let ne = [taint("down", "x", "NoExecute")];
        assert!(untolerated_taint(&[], &ne, false).is_some());
        // Already placed there: eviction, not the filter, deals with NoExecute.
        assert!(untolerated_taint(&[], &ne, true).is_none());
        assert_eq!(taint_text(&ne[0]), "{down: x}");
    }

    fn snap() -> ClusterSnapshot {
        ClusterSnapshot {
            name: "m1".into(),
            labels: [("env".to_owned(), "prod".to_owned())].into(),
            provider: Some("aws".into()),
            region: Some("eu".into()),
            zones: vec!["eu-1".into(), "eu-2".into()],
            ..ClusterSnapshot::default()
        }
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    #[test]
    fn label_selector_table() {
        let c = snap();
        let cases = [
            (vec![expr("env", "In", &["prod", "dev"])], true),
            (vec![expr("env", "In", &["dev"])], false),
            (vec![expr("env", "NotIn", &["dev"])], true),
            (vec![expr("tier", "NotIn", &["dev"])], true),
            (vec![expr("env", "Exists", &[])], true),
            (vec![expr("tier", "Exists", &[])], false),
            (vec![expr("tier", "DoesNotExist", &[])], true),
            (vec![expr("env", "Bogus", &[])], false),
        ];
        for (i, (exprs, want)) in cases.into_iter().enumerate() {
            let sel = LabelSelector {
                match_expressions: Some(exprs),
                match_labels: None,
            };
            assert_eq!(matches_labels(&sel, &c.labels), want, "case {i}");
        }
        let by_labels = LabelSelector {
            match_labels: Some([("env".to_owned(), "prod".to_owned())].into()),
            match_expressions: None,
        };
        assert!(matches_labels(&by_labels, &c.labels));
        let by_labels = LabelSelector {
            match_labels: Some([("env".to_owned(), "dev".to_owned())].into()),
            match_expressions: None,
        };
        assert!(!matches_labels(&by_labels, &c.labels));
    }

    fn field(key: &str, op: &str, values: &[&str]) -> FieldSelector {
        FieldSelector {
            match_expressions: vec![NodeSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
            }],
        }
    }

    #[test]
    fn field_selector_table() {
        let c = snap();
        let cases = [
            (field("provider", "In", &["aws", "gcp"]), true),
            (field("provider", "NotIn", &["aws"]), false),
            (field("region", "In", &["us"]), false),
            (field("region", "NotIn", &["us"]), true),
            (field("zone", "In", &["eu-1", "eu-2", "eu-3"]), true),
            (field("zone", "In", &["eu-1"]), false),
            (field("zone", "NotIn", &["eu-3"]), true),
            (field("zone", "NotIn", &["eu-2"]), false),
            (field("region", "Exists", &[]), true),
            (field("region", "DoesNotExist", &[]), false),
            (field("name", "In", &["m1"]), false),
        ];
        for (i, (sel, want)) in cases.into_iter().enumerate() {
            assert_eq!(matches_fields(&sel, &c), want, "case {i}");
        }
        let mut bare = snap();
        bare.provider = None;
        assert!(matches_fields(
            &field("provider", "DoesNotExist", &[]),
            &bare
        ));
        assert!(!matches_fields(&field("provider", "In", &["aws"]), &bare));
    }

    #[test]
    fn affinity_names_and_exclude() {
        let c = snap();
        let mut a = ClusterAffinity::default();
        assert!(matches_affinity(&c, &a));
        a.cluster_names = vec!["m2".into()];
        assert!(!matches_affinity(&c, &a));
        a.cluster_names = vec!["m1".into()];
        assert!(matches_affinity(&c, &a));
        a.exclude_clusters = vec!["m1".into()];
        assert!(!matches_affinity(&c, &a));
    }
}
