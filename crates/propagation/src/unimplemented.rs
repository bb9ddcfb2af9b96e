//! The PropagationPolicy fields Flotilla accepts but does not act on yet (pure).
//!
//! The host stores every field of Karmada's current API, so a Karmada user's policy applies
//! unchanged; where Flotilla's detector, scheduler or binding controller does not implement
//! what a field asks for, the detector says so with a Warning Event on the policy
//! ([`REASON`]), once per policy generation, naming the fields ([`message`]). Nothing is
//! rejected. [`unimplemented_fields`] is the one place that decides which fields those are;
//! when a feature lands, its line goes.
//!
//! What Flotilla does implement of a policy: `resourceSelectors`, `priority`, `preemption`,
//! `placement.clusterAffinity` / `clusterAffinities` (names, exclusions, label and field
//! selectors), `clusterTolerations`, `spreadConstraints`, `replicaScheduling`,
//! `schedulerName`, `conflictResolution`, `suspension`, `preserveResourcesOnDeletion`,
//! `propagateDeps`, `failover.cluster.purgeMode` and `failover.application`
//! (`decisionConditions`, `purgeMode`, `gracePeriodSeconds`).

use flotilla_karmada_api::policy::PropagationSpec;

/// Event reason of the warning.
pub const REASON: &str = "FeatureNotImplemented";

/// The fields `spec` sets that Flotilla does not implement, as JSON paths under `spec`, in a
/// fixed order. Fields left at their "off" value (`false`, empty) do not count.
pub fn unimplemented_fields(spec: &PropagationSpec) -> Vec<&'static str> {
    let mut fields = Vec::new();
    if spec.association == Some(true) {
        fields.push("association");
    }
    if !spec.dependent_overrides.is_empty() {
        fields.push("dependentOverrides");
    }
    if spec.activation_preference.is_some() {
        fields.push("activationPreference");
    }
    if spec.schedule_priority.is_some() {
        fields.push("schedulePriority");
    }
    if let Some(placement) = &spec.placement {
        if placement
            .cluster_affinities
            .iter()
            .any(|t| !t.overflow_affinities.is_empty())
        {
            fields.push("placement.clusterAffinities[].overflowAffinities");
        }
        if placement.workload_affinity.is_some() {
            fields.push("placement.workloadAffinity");
        }
    }
    if let Some(failover) = &spec.failover {
        if failover
            .application
            .as_ref()
            .is_some_and(|a| a.state_preservation.is_some())
        {
            fields.push("failover.application.statePreservation");
        }
        if failover
            .cluster
            .as_ref()
            .is_some_and(|c| c.state_preservation.is_some())
        {
            fields.push("failover.cluster.statePreservation");
        }
    }
    fields
}

/// The warning's message for `fields` (from [`unimplemented_fields`]).
pub fn message(fields: &[&str]) -> String {
    format!(
        "Flotilla does not implement spec.{} yet: accepted and stored, without effect",
        fields.join(", spec.")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(extra: serde_json::Value) -> PropagationSpec {
        let mut value = json!({
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]
        });
        if let (Some(v), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            v.extend(extra.clone());
        }
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn implemented_fields_raise_nothing() {
        let s = spec(json!({
            "priority": 5,
            "preemption": "Always",
            "schedulerName": "default-scheduler",
            "conflictResolution": "Overwrite",
            "preserveResourcesOnDeletion": true,
            "suspension": {"dispatchingOnClusters": {"clusterNames": ["m1"]}},
            "failover": {"cluster": {"purgeMode": "Directly"},
                         "application": {"decisionConditions": {"tolerationSeconds": 60},
                                         "purgeMode": "Graciously", "gracePeriodSeconds": 120}},
            "placement": {
                "clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"]}],
                "clusterTolerations": [{"key": "k", "operator": "Exists"}],
                "spreadConstraints": [{"spreadByField": "region", "minGroups": 1}],
                "replicaScheduling": {"replicaSchedulingType": "Divided",
                                      "replicaDivisionPreference": "Weighted",
                                      "weightPreference": {"dynamicWeight": "AvailableReplicas"}}
            }
        }));
        assert_eq!(unimplemented_fields(&s), Vec::<&str>::new());
    }

    #[test]
    fn off_values_raise_nothing() {
        let s = spec(json!({
            "association": false,
            "propagateDeps": false,
            "dependentOverrides": [],
            "placement": {"clusterAffinities": [{"affinityName": "a", "overflowAffinities": []}]}
        }));
        assert_eq!(unimplemented_fields(&s), Vec::<&str>::new());
    }

    #[test]
    fn each_unimplemented_field_is_named() {
        let cases = [
            (json!({"association": true}), "association"),
            (json!({"dependentOverrides": ["op"]}), "dependentOverrides"),
            (
                json!({"activationPreference": "Lazy"}),
                "activationPreference",
            ),
            (
                json!({"schedulePriority": {"priorityClassSource": "KubePriorityClass",
                                            "priorityClassName": "high"}}),
                "schedulePriority",
            ),
            (
                json!({"placement": {"clusterAffinities": [
                    {"affinityName": "a"},
                    {"affinityName": "b", "overflowAffinities": [{"affinityName": "c"}]}]}}),
                "placement.clusterAffinities[].overflowAffinities",
            ),
            (
                json!({"placement": {"workloadAffinity": {"antiAffinity": {"groupByLabelKey": "g"}}}}),
                "placement.workloadAffinity",
            ),
            (
                json!({"failover": {"application": {"decisionConditions": {},
                                                    "statePreservation": {"rules": []}}}}),
                "failover.application.statePreservation",
            ),
            (
                json!({"failover": {"cluster": {"statePreservation": {"rules": []}}}}),
                "failover.cluster.statePreservation",
            ),
        ];
        for (extra, field) in cases {
            assert_eq!(
                unimplemented_fields(&spec(extra.clone())),
                [field],
                "{extra}"
            );
        }
    }

    #[test]
    fn several_fields_come_in_a_fixed_order_in_one_message() {
        let s = spec(json!({
            "placement": {"workloadAffinity": {"affinity": {"groupByLabelKey": "g"}}},
            "schedulePriority": {"priorityClassSource": "KubePriorityClass",
                                 "priorityClassName": "high"},
            "association": true
        }));
        let fields = unimplemented_fields(&s);
        assert_eq!(
            fields,
            [
                "association",
                "schedulePriority",
                "placement.workloadAffinity"
            ]
        );
        assert_eq!(
            message(&fields),
            "Flotilla does not implement spec.association, spec.schedulePriority, \
             spec.placement.workloadAffinity yet: accepted and stored, without effect"
        );
    }
}
