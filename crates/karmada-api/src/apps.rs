//! `apps.karmada.io/v1alpha1` WorkloadRebalancer: a one-off request to reschedule some
//! workloads from scratch (as if newly created), with the outcome per workload in its status.
//!
//! Flotilla stores and serves the kind; it runs no rebalancer controller yet (setting a
//! binding's `spec.rescheduleTriggeredAt` by hand has the same effect on Flotilla's scheduler).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Rebalance result: the workload's binding was marked for rescheduling.
pub const REBALANCE_SUCCESSFUL: &str = "Successful";
/// Rebalance result: it could not be.
pub const REBALANCE_FAILED: &str = "Failed";
/// Rebalance failure reason: the workload has no binding.
pub const REBALANCE_REFERENCED_BINDING_NOT_FOUND: &str = "ReferencedBindingNotFound";

/// Desired behaviour of a WorkloadRebalancer.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.karmada.io",
    version = "v1alpha1",
    kind = "WorkloadRebalancer",
    plural = "workloadrebalancers",
    singular = "workloadrebalancer",
    status = "WorkloadRebalancerStatus",
    derive = "PartialEq",
    doc = "WorkloadRebalancer asks for some workloads to be rescheduled from scratch."
)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancerSpec {
    /// The workloads (resource templates) to reschedule.
    #[schemars(length(min = 1))]
    pub workloads: Vec<ObjectReference>,
    /// Delete this object this many seconds after every workload is done; absent: keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// A resource template.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version (`apps/v1`).
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Name.
    pub name: String,
    /// Namespace; absent for cluster-scoped templates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// Observed state of a WorkloadRebalancer.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancerStatus {
    /// The outcome per workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_workloads: Vec<ObservedWorkload>,
    /// The generation this status is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When every workload was done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_time: Option<Time>,
}

/// The outcome for one workload.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ObservedWorkload {
    /// The workload.
    pub workload: ObjectReference,
    /// [`REBALANCE_SUCCESSFUL`] or [`REBALANCE_FAILED`]; absent while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// Why it failed (e.g. [`REBALANCE_REFERENCED_BINDING_NOT_FOUND`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}
