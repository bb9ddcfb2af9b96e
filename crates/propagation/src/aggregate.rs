//! From Works to the binding's status (pure): one `aggregatedStatus` item per target cluster
//! whose Work has been tried (applied or not, with the member's message), the member object's
//! reflected status and health, and the `FullyApplied` condition, True only when every target
//! cluster's Work is applied. Conditions keep their lastTransitionTime while their status
//! holds, so an unchanged outcome writes nothing.

use flotilla_karmada_api::binding::{AggregatedStatusItem, BINDING_FULLY_APPLIED, TargetCluster};
use flotilla_karmada_api::work::{WORK_APPLIED, WorkStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// FullyApplied reasons and messages (Karmada's).
pub const REASON_FULLY_APPLIED_SUCCESS: &str = "FullyAppliedSuccess";
pub const REASON_FULLY_APPLIED_FAILED: &str = "FullyAppliedFailed";
pub const MESSAGE_FULLY_APPLIED_SUCCESS: &str = "All works have been successfully applied";
pub const MESSAGE_FULLY_APPLIED_FAILED: &str =
    "Failed to apply all works, see status.aggregatedStatus for details";

/// The Work of one cluster as the aggregation sees it.
#[derive(Clone, Debug)]
pub struct ClusterWork<'a> {
    pub cluster: &'a str,
    pub status: Option<&'a WorkStatus>,
}

/// `aggregatedStatus` items, in cluster-name order, for the target clusters whose Work has an
/// Applied condition; the item's status and health are those of the Work's first manifest
/// (a binding's Work holds its template's one manifest).
pub fn aggregated_items(
    targets: &[TargetCluster],
    works: &[ClusterWork<'_>],
) -> Vec<AggregatedStatusItem> {
    let mut items: Vec<AggregatedStatusItem> = targets
        .iter()
        .filter_map(|t| {
            let work = works.iter().find(|w| w.cluster == t.name)?;
            let status = work.status?;
            let applied = status.conditions.iter().find(|c| c.type_ == WORK_APPLIED)?;
            let ok = applied.status == "True";
            let manifest = status
                .manifest_statuses
                .iter()
                .min_by_key(|m| m.identifier.ordinal);
            Some(AggregatedStatusItem {
                cluster_name: t.name.clone(),
                status: manifest.and_then(|m| m.status.clone()),
                applied: Some(ok),
                applied_message: (!ok && !applied.message.is_empty())
                    .then(|| applied.message.clone()),
                health: manifest.and_then(|m| m.health),
            })
        })
        .collect();
    items.sort_by(|a, b| a.cluster_name.cmp(&b.cluster_name));
    items
}

/// Whether every target cluster's Work is applied (false without targets).
pub fn fully_applied(targets: &[TargetCluster], items: &[AggregatedStatusItem]) -> bool {
    !targets.is_empty()
        && targets.iter().all(|t| {
            items
                .iter()
                .any(|i| i.cluster_name == t.name && i.applied == Some(true))
        })
}

/// A condition of `type_`, keeping the lastTransitionTime of `current` when the status is
/// unchanged.
pub fn condition(
    current: &[Condition],
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    generation: Option<i64>,
) -> Condition {
    let status = if ok { "True" } else { "False" };
    let last_transition_time = match current.iter().find(|c| c.type_ == type_) {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(Timestamp::now()),
    };
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time,
        observed_generation: generation,
    }
}

/// `conditions` with `new` replacing the condition of its type.
pub fn with_condition(conditions: &[Condition], new: Condition) -> Vec<Condition> {
    let mut out: Vec<Condition> = conditions
        .iter()
        .filter(|c| c.type_ != new.type_)
        .cloned()
        .collect();
    out.push(new);
    out.sort_by(|a, b| a.type_.cmp(&b.type_));
    out
}

/// The FullyApplied condition for `items`.
pub fn fully_applied_condition(
    current: &[Condition],
    targets: &[TargetCluster],
    items: &[AggregatedStatusItem],
) -> Condition {
    let ok = fully_applied(targets, items);
    let (reason, message) = if ok {
        (REASON_FULLY_APPLIED_SUCCESS, MESSAGE_FULLY_APPLIED_SUCCESS)
    } else {
        (REASON_FULLY_APPLIED_FAILED, MESSAGE_FULLY_APPLIED_FAILED)
    };
    condition(current, BINDING_FULLY_APPLIED, ok, reason, message, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(applied: &str, message: &str, replicas: i64) -> WorkStatus {
        serde_json::from_value(json!({
            "conditions": [{"type": "Applied", "status": applied, "reason": "r", "message": message,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "manifestStatuses": [{"identifier": {"ordinal": 0, "group": "apps", "version": "v1",
                                  "kind": "Deployment", "resource": "deployments", "namespace": "d", "name": "web"},
                                  "status": {"replicas": replicas}, "health": "Healthy"}]
        }))
        .unwrap()
    }

    fn targets(names: &[&str]) -> Vec<TargetCluster> {
        names
            .iter()
            .map(|n| TargetCluster {
                name: n.to_string(),
                replicas: 1,
                components: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn items_follow_targets_and_report_failures() {
        let ok = status("True", "", 3);
        let failed = status("False", "forbidden: no", 0);
        let stale = status("True", "", 9);
        let works = [
            ClusterWork {
                cluster: "m2",
                status: Some(&failed),
            },
            ClusterWork {
                cluster: "m1",
                status: Some(&ok),
            },
            ClusterWork {
                cluster: "gone",
                status: Some(&stale),
            },
            ClusterWork {
                cluster: "m3",
                status: None,
            },
        ];
        let t = targets(&["m1", "m2", "m3"]);
        let items = aggregated_items(&t, &works);
        assert_eq!(
            serde_json::to_value(&items).unwrap(),
            json!([
                {"clusterName": "m1", "status": {"replicas": 3}, "applied": true, "health": "Healthy"},
                {"clusterName": "m2", "status": {"replicas": 0}, "applied": false,
                 "appliedMessage": "forbidden: no", "health": "Healthy"},
            ])
        );
        assert!(!fully_applied(&t, &items));
        let t2 = targets(&["m1"]);
        assert!(fully_applied(&t2, &aggregated_items(&t2, &works)));
        assert!(!fully_applied(&[], &[]));
    }

    #[test]
    fn conditions_keep_their_transition_time_while_status_holds() {
        let t = targets(&["m1"]);
        let ok = status("True", "", 1);
        let items = aggregated_items(
            &t,
            &[ClusterWork {
                cluster: "m1",
                status: Some(&ok),
            }],
        );
        let first = fully_applied_condition(&[], &t, &items);
        assert_eq!(first.status, "True");
        assert_eq!(first.reason, REASON_FULLY_APPLIED_SUCCESS);
        let mut old = first.clone();
        old.last_transition_time = Time(Timestamp::UNIX_EPOCH);
        let again = fully_applied_condition(std::slice::from_ref(&old), &t, &items);
        assert_eq!(again.last_transition_time, old.last_transition_time);
        let failed = fully_applied_condition(std::slice::from_ref(&old), &t, &[]);
        assert_eq!(failed.status, "False");
        assert_ne!(failed.last_transition_time, old.last_transition_time);
        let merged = with_condition(&[old, first.clone()], failed.clone());
        assert_eq!(merged, vec![failed]);
    }
}
