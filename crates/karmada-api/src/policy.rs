//! `policy.karmada.io/v1alpha1` PropagationPolicy and ClusterPropagationPolicy: which
//! templates to propagate and where (placement, replica division, failover).
//!
//! The placement types here are shared with the bindings (`work.karmada.io/v1alpha2`), which
//! carry a copy of the winning policy's placement.
//!
//! Field defaults Karmada declares in its CRDs (priority 0, preemption Never, conflict
//! resolution Abort, scheduler `default-scheduler`, replica scheduling Divided, purge mode
//! Gracefully, toleration 300 s) are schema `default`s, applied by the API server; the Rust
//! fields stay `Option` so that what was sent round-trips, and each enum's [`Default`] is
//! Karmada's default for use with `unwrap_or_default()`.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// The scheduler name Karmada defaults to.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// Desired behaviour of a PropagationPolicy or ClusterPropagationPolicy.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "policy.karmada.io",
    version = "v1alpha1",
    kind = "PropagationPolicy",
    plural = "propagationpolicies",
    singular = "propagationpolicy",
    shortname = "pp",
    category = "karmada-io",
    namespaced,
    derive = "PartialEq",
    doc = "PropagationPolicy represents the policy that propagates a group of resources to one or more clusters.",
    printcolumn(
        name = "CONFLICT-RESOLUTION",
        type_ = "string",
        json_path = ".spec.conflictResolution"
    ),
    printcolumn(name = "PRIORITY", type_ = "string", json_path = ".spec.priority"),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PropagationSpec {
    /// The resources this policy propagates.
    #[schemars(length(min = 1))]
    pub resource_selectors: Vec<ResourceSelector>,

    /// Deprecated predecessor of `propagateDeps`: select the resources the selected ones refer
    /// to as well. Accepted and stored; Flotilla does not act on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub association: Option<bool>,

    /// Propagate the resources the selected ones depend on (ConfigMaps, Secrets, ...) too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate_deps: Option<bool>,

    /// Where to propagate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,

    /// Explicit priority; the highest-priority matching policy wins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub priority: Option<i32>,

    /// Whether this policy may take resources from lower-priority policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Never"))]
    pub preemption: Option<PreemptionBehavior>,

    /// OverridePolicies that must exist before propagation starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependent_overrides: Vec<String>,

    /// Scheduler that schedules the bindings of this policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "default-scheduler"))]
    pub scheduler_name: Option<String>,

    /// Failover behaviour on application or cluster failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverBehavior>,

    /// What to do when the resource already exists in a member cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Abort"))]
    pub conflict_resolution: Option<ConflictResolution>,

    /// When policy changes take effect (`Lazy`: on the next template change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activation_preference: Option<ActivationPreference>,

    /// Suspends dispatching, to all or some clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,

    /// Keep member objects when the template is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,

    /// Where the scheduling priority of the selected workloads comes from (a PriorityClass):
    /// higher-priority bindings are scheduled first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<SchedulePriority>,
}

/// The scheduling priority of the workloads a policy selects: the value of a PriorityClass.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulePriority {
    /// Where the PriorityClass is looked up. Karmada's schema admits only
    /// `KubePriorityClass` for now; the other two are reserved.
    #[schemars(schema_with = "priority_class_source_schema")]
    pub priority_class_source: PriorityClassSource,
    /// The PriorityClass to use.
    pub priority_class_name: String,
}

/// Where a [`SchedulePriority`] finds its PriorityClass.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum PriorityClassSource {
    /// A `scheduling.k8s.io/v1` PriorityClass of the host, named by `priorityClassName`.
    KubePriorityClass,
    /// The pod template's own `priorityClassName` (reserved by Karmada, not admitted yet).
    PodPriorityClass,
    /// A Karmada FederatedPriorityClass (reserved by Karmada, not admitted yet).
    FederatedPriorityClass,
}

/// Karmada's schema admits one of the three sources so far.
fn priority_class_source_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Where the PriorityClass is looked up: KubePriorityClass.",
        "type": "string",
        "enum": ["KubePriorityClass"],
    })
}

/// The spec of a [`ClusterPropagationPolicy`]: the same [`PropagationSpec`] (field access goes
/// through `Deref`).
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "policy.karmada.io",
    version = "v1alpha1",
    kind = "ClusterPropagationPolicy",
    plural = "clusterpropagationpolicies",
    singular = "clusterpropagationpolicy",
    shortname = "cpp",
    category = "karmada-io",
    derive = "PartialEq",
    doc = "ClusterPropagationPolicy represents the cluster-wide policy that propagates a group of resources to one or more clusters.",
    printcolumn(
        name = "CONFLICT-RESOLUTION",
        type_ = "string",
        json_path = ".spec.conflictResolution"
    ),
    printcolumn(name = "PRIORITY", type_ = "string", json_path = ".spec.priority"),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(transparent)]
pub struct ClusterPropagationSpec(pub PropagationSpec);

crate::spec_newtype!(ClusterPropagationSpec, PropagationSpec);

/// Selects resource templates by apiVersion/kind and optionally namespace, name or labels.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSelector {
    /// API version of the targets (`apps/v1`).
    pub api_version: String,
    /// Kind of the targets.
    pub kind: String,
    /// Namespace of the targets; empty: the policy's own scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the target; empty: all. When set, `labelSelector` is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Label query over the targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schemas::label_selector")]
    pub label_selector: Option<LabelSelector>,
}

/// Field filter over clusters (`provider`, `region`, `zone` with `In`/`NotIn`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldSelector {
    /// Requirements, all of which must hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
}

/// Suspension of parts of propagation.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// Stop dispatching to all clusters (only `true` is meaningful).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching: Option<bool>,
    /// Stop dispatching to these clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatching_on_clusters: Option<SuspendClusters>,
}

/// Clusters to which dispatching is suspended.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuspendClusters {
    /// Cluster names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

/// How to treat the copy left on the cluster an application moves away from.
///
/// Karmada's names are `Directly`, `Gracefully` and `Never`. Up to v1.14 they were
/// `Immediately` and `Graciously` (with `Never`); v1.15 to v1.18 accept those as deprecated
/// aliases and v1.19 drops them. Flotilla accepts them as v1.18 does, so older manifests
/// apply unchanged, keeps what was sent (an object round-trips), and acts on
/// [`PurgeMode::canonical`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum PurgeMode {
    /// Never evict; users clean up.
    Never,
    /// Evict at once.
    Directly,
    /// Evict once the new copy is healthy or a timeout passed.
    #[default]
    Gracefully,
    /// Deprecated alias of `Directly`.
    Immediately,
    /// Deprecated alias of `Gracefully`.
    Graciously,
}

impl PurgeMode {
    /// The current name of this mode (`Immediately` is `Directly`, `Graciously` is
    /// `Gracefully`).
    pub fn canonical(self) -> PurgeMode {
        match self {
            PurgeMode::Immediately => PurgeMode::Directly,
            PurgeMode::Graciously => PurgeMode::Gracefully,
            other => other,
        }
    }
}

/// Failover behaviours.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailoverBehavior {
    /// On application failure; absent: no application failover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub application: Option<ApplicationFailoverBehavior>,
    /// On cluster failure; absent: the controller's default behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterFailoverBehavior>,
}

/// Application failover behaviour.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationFailoverBehavior {
    /// Conditions that must all hold before failing over.
    pub decision_conditions: DecisionConditions,
    /// What to do with the old copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "application_purge_mode_schema")]
    pub purge_mode: Option<PurgeMode>,
    /// With `Gracefully`: how long to wait for the new copy before deleting the old one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    /// State carried over to the new cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_preservation: Option<StatePreservation>,
}

/// Cluster failover behaviour.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterFailoverBehavior {
    /// What to do with the old copy (`Directly` or `Gracefully`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "cluster_purge_mode_schema")]
    pub purge_mode: Option<PurgeMode>,
    /// State carried over to the new cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_preservation: Option<StatePreservation>,
}

/// Karmada's application failover takes the three modes and the two deprecated aliases.
fn application_purge_mode_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "PurgeMode for application failover: Directly, Gracefully or Never (Immediately and Graciously are deprecated aliases).",
        "type": "string",
        "enum": ["Directly", "Gracefully", "Never", "Immediately", "Graciously"],
        "default": "Gracefully",
    })
}

/// Karmada narrows cluster failover to two of the three purge modes (it never took the
/// deprecated aliases there: cluster failover came after they were deprecated).
fn cluster_purge_mode_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "PurgeMode for cluster failover: Directly or Gracefully.",
        "type": "string",
        "enum": ["Directly", "Gracefully"],
        "default": "Gracefully",
    })
}

/// Conditions to meet before failing over.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionConditions {
    /// Seconds to wait after the failure is seen (0: at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 300))]
    pub toleration_seconds: Option<i32>,
}

/// State to preserve across a failover.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct StatePreservation {
    /// Rules, one per preserved value.
    pub rules: Vec<StatePreservationRule>,
}

/// One preserved value: a JSONPath into the old object's status, re-injected as a label.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatePreservationRule {
    /// Label key the value is passed under.
    pub alias_label_name: String,
    /// JSONPath evaluated against the object's `status`.
    #[serde(rename = "jsonPath")]
    pub json_path: String,
}

/// Where resources go.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// Clusters to choose from. Not together with `clusterAffinities`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// Cluster groups tried in order. Not together with `clusterAffinity`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_affinities: Vec<ClusterAffinityTerm>,
    /// Taints on clusters these resources tolerate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_tolerations: Vec<Toleration>,
    /// Spread over cluster groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub spread_constraints: Vec<SpreadConstraint>,
    /// How replicas are assigned to clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_scheduling: Option<ReplicaSchedulingStrategy>,
    /// Placement relative to other workloads (co-location and separation by a label of the
    /// templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity: Option<WorkloadAffinity>,
}

/// Affinity and anti-affinity between workloads; both, when given, must hold.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinity {
    /// Go to clusters that already run workloads of the same group (a group's first
    /// workload is not held back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<WorkloadAffinityTerm>,
    /// Stay away from clusters that already run workloads of the same group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affinity: Option<WorkloadAntiAffinityTerm>,
}

/// Co-location with the workloads of a group.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityTerm {
    /// Label key of the templates whose value names the group (groups are per namespace).
    pub group_by_label_key: String,
}

/// Separation from the workloads of a group.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAntiAffinityTerm {
    /// Label key of the templates whose value names the group (groups are per namespace).
    pub group_by_label_key: String,
}

/// Cluster property used to group clusters for spreading.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
#[serde(rename_all = "lowercase")]
pub enum SpreadFieldValue {
    /// Each cluster is a group.
    Cluster,
    /// Group by `spec.region`.
    Region,
    /// Group by `spec.zone(s)`.
    Zone,
    /// Group by `spec.provider`.
    Provider,
}

/// A spread constraint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpreadConstraint {
    /// Cluster field to group by; not together with `spreadByLabel`. Neither: `cluster`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_by_field: Option<SpreadFieldValue>,
    /// Cluster label key to group by; not together with `spreadByField`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_by_label: Option<String>,
    /// At most this many groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub max_groups: Option<i32>,
    /// At least this many groups (Karmada's default: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub min_groups: Option<i32>,
}

/// A filter over clusters; every given part must match.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// Cluster labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schemas::label_selector")]
    pub label_selector: Option<LabelSelector>,
    /// Cluster fields.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_selector: Option<FieldSelector>,
    /// Cluster names to select.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
    /// Cluster names to ignore.
    #[serde(default, rename = "exclude", skip_serializing_if = "Vec::is_empty")]
    pub exclude_clusters: Vec<String>,
}

/// A named cluster group of `clusterAffinities`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinityTerm {
    /// Name of the group.
    #[schemars(length(min = 1, max = 32))]
    pub affinity_name: String,
    /// The group's filter (inline in the JSON).
    #[serde(flatten)]
    pub affinity: ClusterAffinity,
    /// Further groups added one after another, in order, when the clusters of this one lack
    /// capacity (and given up in reverse order on scale-down); a cluster counts in the first
    /// group that names it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overflow_affinities: Vec<OverflowClusterAffinity>,
}

/// A named overflow group of a [`ClusterAffinityTerm`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverflowClusterAffinity {
    /// Name of the group.
    #[schemars(length(min = 1, max = 32))]
    pub affinity_name: String,
    /// The group's filter (inline in the JSON).
    #[serde(flatten)]
    pub affinity: ClusterAffinity,
}

/// How replicas are scheduled.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ReplicaSchedulingType {
    /// Every selected cluster gets all replicas.
    Duplicated,
    /// Replicas are divided among the selected clusters.
    #[default]
    Divided,
}

/// How divided replicas are split.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ReplicaDivisionPreference {
    /// As few clusters as capacity allows.
    Aggregated,
    /// By weight (`weightPreference`).
    Weighted,
}

/// Replica assignment strategy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaSchedulingStrategy {
    /// Duplicated or Divided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Divided"))]
    pub replica_scheduling_type: Option<ReplicaSchedulingType>,
    /// With Divided: Aggregated or Weighted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_division_preference: Option<ReplicaDivisionPreference>,
    /// With Weighted: the weights; absent means equal weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight_preference: Option<ClusterPreferences>,
}

/// Weights of clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPreferences {
    /// Static weights.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_weight_list: Vec<StaticClusterWeight>,
    /// Dynamic weights; when set, `staticWeightList` is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dynamic_weight: Option<DynamicWeightFactor>,
}

/// A static weight for the clusters a filter selects.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterWeight {
    /// The clusters this weight applies to.
    pub target_cluster: ClusterAffinity,
    /// The weight.
    #[schemars(range(min = 1))]
    pub weight: i64,
}

/// Source of dynamic weights.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum DynamicWeightFactor {
    /// Weight = replicas the cluster can still hold.
    AvailableReplicas,
}

/// Whether a policy preempts resources claimed by lower-priority policies.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum PreemptionBehavior {
    /// Preemption allowed.
    Always,
    /// Never preempt.
    #[default]
    Never,
}

/// What to do when a propagated resource already exists in a member cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ConflictResolution {
    /// Overwrite the existing resource.
    Overwrite,
    /// Stop propagating it.
    #[default]
    Abort,
}

/// When policy changes take effect on the templates they match.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ActivationPreference {
    /// On the template's next change.
    Lazy,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn enum_values_are_karmadas() {
        let cases = [
            (
                serde_json::to_value(SpreadFieldValue::Region).unwrap(),
                "region",
            ),
            (
                serde_json::to_value(ReplicaSchedulingType::Duplicated).unwrap(),
                "Duplicated",
            ),
            (
                serde_json::to_value(ReplicaDivisionPreference::Aggregated).unwrap(),
                "Aggregated",
            ),
            (
                serde_json::to_value(DynamicWeightFactor::AvailableReplicas).unwrap(),
                "AvailableReplicas",
            ),
            (
                serde_json::to_value(ConflictResolution::Overwrite).unwrap(),
                "Overwrite",
            ),
            (
                serde_json::to_value(PreemptionBehavior::Always).unwrap(),
                "Always",
            ),
            (
                serde_json::to_value(PurgeMode::Directly).unwrap(),
                "Directly",
            ),
            (
                serde_json::to_value(PurgeMode::Immediately).unwrap(),
                "Immediately",
            ),
            (
                serde_json::to_value(PurgeMode::Graciously).unwrap(),
                "Graciously",
            ),
            (
                serde_json::to_value(ActivationPreference::Lazy).unwrap(),
                "Lazy",
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(value, json!(expected));
        }
    }

    #[test]
    fn karmada_defaults() {
        assert_eq!(ConflictResolution::default(), ConflictResolution::Abort);
        assert_eq!(PreemptionBehavior::default(), PreemptionBehavior::Never);
        assert_eq!(
            ReplicaSchedulingType::default(),
            ReplicaSchedulingType::Divided
        );
        assert_eq!(PurgeMode::default(), PurgeMode::Gracefully);
    }

    #[test]
    fn deprecated_purge_modes_are_aliases() {
        assert_eq!(PurgeMode::Immediately.canonical(), PurgeMode::Directly);
        assert_eq!(PurgeMode::Graciously.canonical(), PurgeMode::Gracefully);
        for m in [PurgeMode::Directly, PurgeMode::Gracefully, PurgeMode::Never] {
            assert_eq!(m.canonical(), m);
        }
        let parsed: PurgeMode = serde_json::from_value(json!("Graciously")).unwrap();
        assert_eq!(parsed, PurgeMode::Graciously);
    }

    #[test]
    fn affinity_term_keeps_its_filter_inline() {
        let term: ClusterAffinityTerm = serde_json::from_value(json!({
            "affinityName": "primary", "clusterNames": ["m1"], "exclude": ["m2"]
        }))
        .unwrap();
        assert_eq!(term.affinity.cluster_names, ["m1"]);
        assert_eq!(term.affinity.exclude_clusters, ["m2"]);
        assert_eq!(
            serde_json::to_value(&term).unwrap(),
            json!({"affinityName": "primary", "clusterNames": ["m1"], "exclude": ["m2"]})
        );
    }

    #[test]
    fn cluster_spec_derefs_and_serialises_like_the_namespaced_one() {
        let spec: PropagationSpec = serde_json::from_value(json!({
            "resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}],
            "priority": 3
        }))
        .unwrap();
        let mut cluster = ClusterPropagationSpec::from(spec.clone());
        assert_eq!(cluster.priority, Some(3));
        cluster.priority = Some(4);
        assert_eq!(cluster.0.priority, Some(4));
        cluster.priority = Some(3);
        assert_eq!(
            serde_json::to_value(&cluster).unwrap(),
            serde_json::to_value(&spec).unwrap()
        );
    }

    #[test]
    fn overflow_affinities_keep_their_filters_inline() {
        let input = json!({
            "affinityName": "primary", "clusterNames": ["m1"],
            "overflowAffinities": [
                {"affinityName": "burst", "labelSelector": {"matchLabels": {"tier": "burst"}}},
                {"affinityName": "last", "clusterNames": ["m9"], "exclude": ["m8"]}
            ]
        });
        let term: ClusterAffinityTerm = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(term.overflow_affinities.len(), 2);
        assert_eq!(term.overflow_affinities[1].affinity.cluster_names, ["m9"]);
        assert_eq!(
            term.overflow_affinities[1].affinity.exclude_clusters,
            ["m8"]
        );
        assert_eq!(serde_json::to_value(&term).unwrap(), input);
    }

    #[test]
    fn newer_spec_fields_round_trip_and_stay_absent_when_unset() {
        let input = json!({
            "resourceSelectors": [{"apiVersion": "batch/v1", "kind": "Job"}],
            "association": true,
            "schedulePriority": {"priorityClassSource": "KubePriorityClass",
                                 "priorityClassName": "batch-high"},
            "placement": {"workloadAffinity": {
                "affinity": {"groupByLabelKey": "app.group"},
                "antiAffinity": {"groupByLabelKey": "replica.set"}}}
        });
        let spec: PropagationSpec = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(spec.association, Some(true));
        assert_eq!(
            spec.schedule_priority
                .as_ref()
                .unwrap()
                .priority_class_source,
            PriorityClassSource::KubePriorityClass
        );
        let affinity = spec.placement.as_ref().unwrap().workload_affinity.as_ref();
        assert_eq!(
            affinity
                .unwrap()
                .anti_affinity
                .as_ref()
                .unwrap()
                .group_by_label_key,
            "replica.set"
        );
        assert_eq!(serde_json::to_value(&spec).unwrap(), input);
        let bare: PropagationSpec = serde_json::from_value(
            json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "Pod"}]}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&bare).unwrap(),
            json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "Pod"}]})
        );
        // Karmada reserves the other two sources; the Rust type knows them.
        assert_eq!(
            serde_json::to_value(PriorityClassSource::PodPriorityClass).unwrap(),
            json!("PodPriorityClass")
        );
    }

    #[test]
    fn unknown_enum_values_do_not_parse() {
        assert!(serde_json::from_value::<ReplicaSchedulingType>(json!("divided")).is_err());
    }
}
