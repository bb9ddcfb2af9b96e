//! `policy.karmada.io/v1alpha1` FederatedResourceQuota: a resource quota for a namespace
//! across all member clusters, optionally split statically per cluster, with the use
//! summed in its status.
//!
//! Flotilla stores and serves the kind; it enforces no federated quota yet.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cluster::ResourceList;

/// Desired state of a FederatedResourceQuota.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "policy.karmada.io",
    version = "v1alpha1",
    kind = "FederatedResourceQuota",
    plural = "federatedresourcequotas",
    singular = "federatedresourcequota",
    category = "karmada-io",
    namespaced,
    status = "FederatedResourceQuotaStatus",
    derive = "PartialEq",
    doc = "FederatedResourceQuota limits the resources a namespace uses across member clusters.",
    printcolumn(name = "OVERALL", type_ = "string", json_path = ".status.overall"),
    printcolumn(
        name = "OVERALL_USED",
        type_ = "string",
        json_path = ".status.overallUsed"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuotaSpec {
    /// Limits over all clusters together.
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub overall: ResourceList,
    /// Fixed per-cluster shares, each applied as a ResourceQuota in that cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_assignments: Vec<StaticClusterAssignment>,
}

/// The share of one cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterAssignment {
    /// Cluster name.
    pub cluster_name: String,
    /// Its limits.
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub hard: ResourceList,
}

/// Observed state of a FederatedResourceQuota.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuotaStatus {
    /// The limits in force.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub overall: ResourceList,
    /// Use over all clusters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub overall_used: ResourceList,
    /// Limits and use per cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<ClusterQuotaStatus>,
}

/// The quota of one cluster: a core/v1 ResourceQuotaStatus with the cluster's name.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQuotaStatus {
    /// Cluster name.
    pub cluster_name: String,
    /// Limits in that cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub hard: ResourceList,
    /// Use in that cluster.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub used: ResourceList,
}
