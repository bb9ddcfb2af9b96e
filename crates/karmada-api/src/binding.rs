//! `work.karmada.io/v1alpha2` ResourceBinding and ClusterResourceBinding: one template, the
//! placement it inherited from its policy, the scheduler's result, and the status aggregated
//! from the member clusters.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::cluster::ResourceList;
use crate::policy::{ConflictResolution, FailoverBehavior, Placement, PurgeMode, Suspension};
use crate::work::ResourceHealth;

/// Binding condition type: the scheduler has placed the binding.
pub const BINDING_SCHEDULED: &str = "Scheduled";
/// Binding condition type: every Work of the binding is applied.
pub const BINDING_FULLY_APPLIED: &str = "FullyApplied";
/// Scheduled condition reason: success.
pub const REASON_SUCCESS: &str = "Success";
/// Scheduled condition reason: scheduler error.
pub const REASON_SCHEDULER_ERROR: &str = "SchedulerError";
/// Scheduled condition reason: no cluster passed the filters.
pub const REASON_NO_CLUSTER_FIT: &str = "NoClusterFit";
/// Scheduled condition reason: not enough capacity.
pub const REASON_UNSCHEDULABLE: &str = "Unschedulable";

/// Desired state of a ResourceBinding or ClusterResourceBinding.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "work.karmada.io",
    version = "v1alpha2",
    kind = "ResourceBinding",
    plural = "resourcebindings",
    singular = "resourcebinding",
    shortname = "rb",
    category = "karmada-io",
    namespaced,
    status = "ResourceBindingStatus",
    derive = "PartialEq",
    doc = "ResourceBinding represents a binding of a kind of resources with a PropagationPolicy.",
    printcolumn(
        name = "SCHEDULED",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Scheduled\")].status"
    ),
    printcolumn(
        name = "FULLYAPPLIED",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"FullyApplied\")].status"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    /// The template.
    pub resource: ObjectReference,

    /// Propagate the template's dependencies too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagate_deps: Option<bool>,

    /// What one replica needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ReplicaRequirements>,

    /// Replicas of the template (0 for kinds without replicas).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i32,

    /// The parts of a workload made of several pod templates (e.g. a job's leader and
    /// workers), each with its replicas and per-replica requirements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,

    /// The scheduling result: target clusters and their replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,

    /// Placement copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,

    /// Clusters being left, kept until the replacement is ready.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graceful_eviction_tasks: Vec<GracefulEvictionTask>,

    /// Bindings that depend on this one (for dependencies), with their placements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<BindingSnapshot>,

    /// Scheduler responsible for this binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,

    /// Failover behaviour copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverBehavior>,

    /// Conflict resolution copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "Abort"))]
    pub conflict_resolution: Option<ConflictResolution>,

    /// When set later than the last scheduling, the binding is rescheduled from scratch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_triggered_at: Option<Time>,

    /// Suspension copied from the policy, plus scheduling suspension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<BindingSuspension>,

    /// Keep member objects when the template is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,

    /// Scheduling priority, resolved from the policy's `schedulePriority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<BindingSchedulePriority>,

    /// The workload-affinity groups this binding belongs to, resolved from the policy's
    /// `placement.workloadAffinity` and the template's labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity_groups: Option<WorkloadAffinityGroups>,
}

impl ResourceBindingSpec {
    /// Where the template goes: the scheduler's `clusters`, then each cluster the bindings
    /// in `requiredBy` need it in that is not among them (with no replicas of its own), as
    /// Karmada merges them for dependencies.
    pub fn all_target_clusters(&self) -> Vec<TargetCluster> {
        let mut out = self.clusters.clone();
        for snapshot in &self.required_by {
            for c in &snapshot.clusters {
                if !out.iter().any(|t| t.name == c.name) {
                    out.push(TargetCluster {
                        name: c.name.clone(),
                        ..TargetCluster::default()
                    });
                }
            }
        }
        out
    }
}

/// The resolved scheduling priority of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct BindingSchedulePriority {
    /// Priority value; higher is scheduled first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub priority: Option<i32>,
}

/// The workload-affinity groups of a binding (`<label key>=<value>` of its template).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityGroups {
    /// The affinity group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity_group: Option<String>,
    /// The anti-affinity group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anti_affinity_group: Option<String>,
}

/// One part of a multi-template workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// Name of the part, unique in the workload.
    #[schemars(length(max = 32))]
    pub name: String,
    /// Replicas of this part.
    pub replicas: i32,
    /// What one replica of this part needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ComponentReplicaRequirements>,
}

/// What one replica of a [`Component`] needs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentReplicaRequirements {
    /// Node constraints of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    /// Resource requests of one replica.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub resource_request: ResourceList,
    /// Priority class of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
}

// serde's `skip_serializing_if` passes a reference.
fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// The spec of a [`ClusterResourceBinding`]: the same [`ResourceBindingSpec`] (field access
/// goes through `Deref`).
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "work.karmada.io",
    version = "v1alpha2",
    kind = "ClusterResourceBinding",
    plural = "clusterresourcebindings",
    singular = "clusterresourcebinding",
    shortname = "crb",
    category = "karmada-io",
    status = "ResourceBindingStatus",
    derive = "PartialEq",
    doc = "ClusterResourceBinding represents a binding of a kind of resources with a ClusterPropagationPolicy.",
    printcolumn(
        name = "SCHEDULED",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Scheduled\")].status"
    ),
    printcolumn(
        name = "FULLYAPPLIED",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"FullyApplied\")].status"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(transparent)]
pub struct ClusterResourceBindingSpec(pub ResourceBindingSpec);

crate::spec_newtype!(ClusterResourceBindingSpec, ResourceBindingSpec);

/// Reference to the template of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace; absent for cluster-scoped templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// resourceVersion the binding was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// What one replica of the template needs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaRequirements {
    /// Node constraints of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    /// Resource requests of one replica.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub resource_request: ResourceList,
    /// Namespace of the template (for quota).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Priority class of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
}

/// Node constraints of the template's pods.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaim {
    /// Required node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_node_affinity: Option<NodeSelector>,
    /// Node selector.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// A cluster chosen by the scheduler and its replicas.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub struct TargetCluster {
    /// Cluster name.
    pub name: String,
    /// Replicas assigned (0 for kinds without replicas).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: i32,
    /// For multi-component workloads: the replicas of each component in this cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<TargetComponent>,
}

/// The replicas of one component placed in a cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub struct TargetComponent {
    /// Component name.
    pub name: String,
    /// Replicas of it in the cluster.
    pub replicas: i32,
}

/// A cluster being left, with what to do with it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GracefulEvictionTask {
    /// Cluster being left.
    pub from_cluster: String,
    /// How to purge the old copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purge_mode: Option<PurgeMode>,
    /// Replicas that were on that cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Machine-readable reason.
    #[schemars(
        length(min = 1, max = 32),
        pattern(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    )]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub message: Option<String>,
    /// Controller that created the task.
    pub producer: String,
    /// With `Gracefully`: maximum wait before deleting the old copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    /// Keep the old copy until this is cleared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_deletion: Option<bool>,
    /// State preserved from the old copy (label key -> value).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub preserved_label_state: BTreeMap<String, String>,
    /// When the task was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// Clusters of the binding before the failover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters_before_failover: Vec<String>,
}

impl GracefulEvictionTask {
    /// Whether the Work on the cluster being left stays while the task lasts: for every
    /// purge mode but `Directly` (and its old name `Immediately`), whose Work goes at once,
    /// as Karmada's binding controller treats those clusters as orphans.
    pub fn keeps_work(&self) -> bool {
        self.purge_mode.map(PurgeMode::canonical) != Some(PurgeMode::Directly)
    }
}

/// A binding that depends on this one, with its clusters.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BindingSnapshot {
    /// Namespace of the dependent binding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the dependent binding.
    pub name: String,
    /// Its scheduling result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
}

/// Suspension of a binding: the policy's, plus scheduling.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct BindingSuspension {
    /// Dispatching suspension (inline in the JSON).
    #[serde(flatten)]
    pub suspension: Suspension,
    /// Suspend scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<bool>,
}

/// Observed state of a binding.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingStatus {
    /// Generation the scheduler last acted on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_observed_generation: Option<i64>,
    /// The `clusterAffinities` term the last scheduling used.
    #[serde(
        default,
        rename = "schedulerObservingAffinityName",
        skip_serializing_if = "Option::is_none"
    )]
    pub scheduler_observed_affinity_name: Option<String>,
    /// When the binding was last scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scheduled_time: Option<Time>,
    /// Conditions (`Scheduled`, `FullyApplied`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schemas::conditions")]
    pub conditions: Vec<Condition>,
    /// Status from each target cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
}

/// The status of the template's copy in one cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedStatusItem {
    /// Cluster name.
    pub cluster_name: String,
    /// The member object's `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schemas::free_object")]
    pub status: Option<Value>,
    /// Whether the Work was applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<bool>,
    /// Why it failed to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_message: Option<String>,
    /// Health of the member object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_by_clusters_join_the_targets_once_without_replicas() {
        let spec: ResourceBindingSpec = serde_json::from_value(serde_json::json!({
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
            "clusters": [{"name": "m1", "replicas": 2}],
            "requiredBy": [
                {"namespace": "d", "name": "a-deployment", "clusters": [{"name": "m1", "replicas": 1}, {"name": "m2", "replicas": 3}]},
                {"namespace": "d", "name": "b-deployment", "clusters": [{"name": "m2", "replicas": 1}, {"name": "m3"}]}
            ]
        }))
        .unwrap();
        let all: Vec<(String, i32)> = spec
            .all_target_clusters()
            .into_iter()
            .map(|t| (t.name, t.replicas))
            .collect();
        assert_eq!(all, [("m1".into(), 2), ("m2".into(), 0), ("m3".into(), 0)]);
    }
}
