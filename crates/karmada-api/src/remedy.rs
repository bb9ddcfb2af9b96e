//! `remedy.karmada.io/v1alpha1` Remedy: actions taken on member clusters whose conditions
//! match (for instance, steer traffic away from a cluster whose service DNS fails).
//!
//! Flotilla stores and serves the kind; it runs no remedy controller yet.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Remedy action: take the cluster out of multi-cluster ingress traffic.
pub const ACTION_TRAFFIC_CONTROL: &str = "TrafficControl";
/// Cluster condition type a remedy can match: in-cluster service DNS works.
pub const CONDITION_SERVICE_DOMAIN_NAME_RESOLUTION_READY: &str = "ServiceDomainNameResolutionReady";

/// Desired behaviour of a Remedy.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "remedy.karmada.io",
    version = "v1alpha1",
    kind = "Remedy",
    plural = "remedies",
    singular = "remedy",
    category = "karmada-io",
    derive = "PartialEq",
    doc = "Remedy takes actions on the member clusters whose conditions match."
)]
#[serde(rename_all = "camelCase")]
pub struct RemedySpec {
    /// Clusters the remedy watches; absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// The actions are taken when any of these matches; empty: always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decision_matches: Vec<DecisionMatch>,
    /// Actions (e.g. [`ACTION_TRAFFIC_CONTROL`]; Karmada's schema leaves the values open).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// Clusters by name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// Cluster names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

/// One trigger of a remedy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionMatch {
    /// A condition of the Cluster object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_condition_match: Option<ClusterConditionRequirement>,
}

/// A requirement on one condition of a Cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConditionRequirement {
    /// Condition type (e.g. [`CONDITION_SERVICE_DOMAIN_NAME_RESOLUTION_READY`]).
    pub condition_type: String,
    /// How the condition's status is compared.
    pub operator: ClusterConditionOperator,
    /// The status compared with (`True`, `False`, `Unknown`).
    pub condition_status: String,
}

/// Comparison of a condition's status.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ClusterConditionOperator {
    /// The status equals `conditionStatus`.
    Equal,
    /// The status differs from `conditionStatus`.
    NotEqual,
}
