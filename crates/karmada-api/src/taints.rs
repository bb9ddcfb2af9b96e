//! `policy.karmada.io/v1alpha1` ClusterTaintPolicy: taints put on (and taken off) member
//! clusters when their conditions match, which the scheduler and failover then act on.
//!
//! Flotilla stores and serves the kind; its cluster controller puts Karmada's built-in
//! not-ready/unreachable taints on clusters but does not evaluate these policies yet.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::policy::ClusterAffinity;

/// Match operator: the condition's status is one of `statusValues`.
pub const MATCH_CONDITION_IN: &str = "In";
/// Match operator: the condition's status is none of `statusValues`.
pub const MATCH_CONDITION_NOT_IN: &str = "NotIn";

/// Desired behaviour of a ClusterTaintPolicy.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "policy.karmada.io",
    version = "v1alpha1",
    kind = "ClusterTaintPolicy",
    plural = "clustertaintpolicies",
    singular = "clustertaintpolicy",
    derive = "PartialEq",
    doc = "ClusterTaintPolicy taints member clusters whose conditions match, and removes the taints when they recover."
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTaintPolicySpec {
    /// Clusters the policy applies to; absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_clusters: Option<ClusterAffinity>,
    /// The taints are added when all of these match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_on_conditions: Vec<MatchCondition>,
    /// The taints are removed when all of these match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_on_conditions: Vec<MatchCondition>,
    /// The taints.
    #[schemars(length(min = 1))]
    pub taints: Vec<Taint>,
}

/// A requirement on one condition of a Cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchCondition {
    /// Condition type (`Ready`, ...).
    pub condition_type: String,
    /// [`MATCH_CONDITION_IN`] or [`MATCH_CONDITION_NOT_IN`] (Karmada's schema leaves the
    /// value open).
    pub operator: String,
    /// Condition statuses (`True`, `False`, `Unknown`).
    pub status_values: Vec<String>,
}

/// A taint to put on a cluster (a core/v1 Taint without `timeAdded`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    pub effect: String,
    /// Taint value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}
