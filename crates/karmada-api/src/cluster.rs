//! `cluster.karmada.io/v1alpha1` Cluster: a member cluster as Karmada describes it, plus the
//! per-node capacity summary Flotilla's scheduler uses for node-level fit.
//!
//! Flotilla serves Cluster from its aggregated server, not as a CRD; the derived schema is still
//! useful for OpenAPI publishing and validation there.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Resource name -> quantity (core/v1 `ResourceList`).
pub type ResourceList = BTreeMap<String, Quantity>;

/// Desired state of a member cluster.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "cluster.karmada.io",
    version = "v1alpha1",
    kind = "Cluster",
    plural = "clusters",
    singular = "cluster",
    status = "ClusterStatus",
    derive = "PartialEq",
    doc = "Cluster represents the desired state and status of a member cluster.",
    printcolumn(
        name = "Version",
        type_ = "string",
        json_path = ".status.kubernetesVersion"
    ),
    printcolumn(name = "Mode", type_ = "string", json_path = ".spec.syncMode"),
    printcolumn(
        name = "Ready",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Ready\")].status"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Zones",
        type_ = "string",
        json_path = ".spec.zones",
        priority = 1
    ),
    printcolumn(
        name = "Region",
        type_ = "string",
        json_path = ".spec.region",
        priority = 1
    ),
    printcolumn(
        name = "Provider",
        type_ = "string",
        json_path = ".spec.provider",
        priority = 1
    ),
    printcolumn(
        name = "API-Endpoint",
        type_ = "string",
        json_path = ".spec.apiEndpoint",
        priority = 1
    ),
    printcolumn(
        name = "Proxy-URL",
        type_ = "string",
        json_path = ".spec.proxyURL",
        priority = 1
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Unique identifier of the cluster (usually the UID of its kube-system namespace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 128000))]
    pub id: Option<String>,

    /// How the control plane reaches the cluster.
    pub sync_mode: ClusterSyncMode,

    /// API endpoint of the member cluster: hostname, hostname:port, IP, IP:port or URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_endpoint: Option<String>,

    /// Secret holding `token` and `caBundle` for reaching the member cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,

    /// Secret holding the token used to impersonate callers on the member cluster (proxy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonator_secret_ref: Option<LocalSecretReference>,

    /// Do not verify the member cluster's serving certificate.
    #[serde(
        default,
        rename = "insecureSkipTLSVerification",
        skip_serializing_if = "Option::is_none"
    )]
    pub insecure_skip_tls_verification: Option<bool>,

    /// Proxy used to reach the member cluster (http, https or socks5 URL).
    #[serde(default, rename = "proxyURL", skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,

    /// Extra headers sent to the proxy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub proxy_header: BTreeMap<String, String>,

    /// Cloud provider name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,

    /// Region the cluster is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,

    /// Zone the cluster is in (deprecated in favour of `zones`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,

    /// Failure zones the cluster spans.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,

    /// Taints; workloads not tolerating them are not scheduled (or are evicted) here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,

    /// Resource models: grades of node size used to summarise allocatable capacity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_models: Vec<ResourceModel>,
}

/// How the control plane synchronises with a member cluster.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ClusterSyncMode {
    /// The control plane pushes resources to the member cluster.
    Push,
    /// An agent in the member cluster pulls resources from the control plane.
    Pull,
}

impl ClusterSyncMode {
    /// The value as written in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterSyncMode::Push => "Push",
            ClusterSyncMode::Pull => "Pull",
        }
    }
}

/// A Secret by namespace and name.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct LocalSecretReference {
    /// Namespace of the Secret.
    pub namespace: String,
    /// Name of the Secret.
    pub name: String,
}

/// One grade of node size: nodes whose allocatable resources fall in every range.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ResourceModel {
    /// Grade index, starting at 0.
    #[schemars(range(min = 0))]
    pub grade: u32,
    /// Per-resource `[min, max)` ranges.
    pub ranges: Vec<ResourceModelRange>,
}

/// A `[min, max)` range of one resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ResourceModelRange {
    /// Resource name (`cpu`, `memory`, ...).
    pub name: String,
    /// Inclusive lower bound.
    #[schemars(schema_with = "crate::schemas::quantity")]
    pub min: Quantity,
    /// Exclusive upper bound.
    #[schemars(schema_with = "crate::schemas::quantity")]
    pub max: Quantity,
}

/// Cluster condition type: the member answers its health checks.
pub const CONDITION_READY: &str = "Ready";

/// Observed state of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Kubernetes version of the member cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,

    /// APIs served by the member cluster, from discovery.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_enablements: Vec<ApiEnablement>,

    /// Conditions (`Ready`, `CompleteAPIEnablements`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// Node counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_summary: Option<NodeSummary>,

    /// Cluster-wide resource totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_summary: Option<ResourceSummary>,

    /// Flotilla extension: free capacity of schedulable nodes, grouped (see
    /// [`NodeCapacityGroup`]). Karmada has no such field; Karmada clients ignore it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub node_capacities: Vec<NodeCapacityGroup>,
}

/// The resources served for one group/version.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiEnablement {
    /// `group/version` (`v1` for the core group).
    pub group_version: String,
    /// Resources of that group/version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResource>,
}

/// One served resource.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct ApiResource {
    /// Plural resource name.
    pub name: String,
    /// Kind.
    pub kind: String,
}

/// Node counts of a member cluster.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// All nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_num: Option<i32>,
    /// Ready nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_num: Option<i32>,
}

/// Cluster-wide resource totals.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// Sum of node allocatable resources (pods included as `pods`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub allocatable: ResourceList,
    /// Requests of pods not yet bound to a node.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub allocating: ResourceList,
    /// Requests of bound pods that have not finished.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub allocated: ResourceList,
    /// Node counts per resource-model grade.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocatable_modelings: Vec<AllocatableModeling>,
}

/// Number of nodes whose allocatable resources fall in one grade.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct AllocatableModeling {
    /// Grade index of `spec.resourceModels`.
    #[schemars(range(min = 0))]
    pub grade: u32,
    /// Number of nodes in that grade.
    #[schemars(range(min = 0))]
    pub count: i64,
}

/// Flotilla extension to Cluster status: `count` schedulable nodes that each have at least
/// `available` free.
///
/// Why grouped rather than one entry per node: a member may have thousands of nodes and the
/// whole Cluster object must stay small, while the scheduler only needs to know how many
/// replicas of a given request fit, node by node (a replica must fit on one node, so
/// cluster-wide sums overestimate fragmented clusters).
///
/// Semantics the producer (cluster status controller) follows and the consumer (scheduler)
/// relies on:
/// - only Ready nodes that are not `spec.unschedulable` are counted;
/// - a node's free capacity is its allocatable minus the requests of its pods that have not
///   Succeeded/Failed, per resource, with `pods` as a resource (allocatable pods minus pod
///   count); resources absent from `available` mean "none free";
/// - nodes with identical free capacity share one entry; to keep the list short a producer may
///   round free capacity *down* before grouping (so estimates stay safe);
/// - replicas of request `r` that fit: sum over groups of
///   `count * min over resources k in r of floor(available[k] / r[k])`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct NodeCapacityGroup {
    /// Number of nodes with this free capacity.
    #[schemars(range(min = 1))]
    pub count: i32,
    /// Free capacity of each of those nodes.
    #[schemars(schema_with = "crate::schemas::resource_list")]
    pub available: ResourceList,
}

impl ClusterStatus {
    /// Whether the `Ready` condition is True.
    pub fn is_ready(&self) -> bool {
        self.conditions
            .iter()
            .any(|c| c.type_ == CONDITION_READY && c.status == "True")
    }
}

impl Cluster {
    /// Whether the cluster has a status whose `Ready` condition is True.
    pub fn is_ready(&self) -> bool {
        self.status.as_ref().is_some_and(ClusterStatus::is_ready)
    }

    /// The name of the shared cache of Clusters kept as [`Cluster::trim_for_cache`] leaves
    /// them (one watch for every controller of a process that reads no more).
    pub const TRIMMED_CACHE: &'static str = "trimmed";

    /// Drops from a cached copy what only the status controller and the scheduler read:
    /// `status.apiEnablements` (the member's discovery, most of a Cluster's size),
    /// `spec.resourceModels` (nine grades by default), `status.resourceSummary` and
    /// `status.nodeCapacities`; and `managedFields`, which no controller reads. Such a copy
    /// must never be written back whole (merge patches of other fields are fine).
    pub fn trim_for_cache(&mut self) {
        self.metadata.managed_fields = None;
        self.spec.resource_models = Vec::new();
        if let Some(status) = &mut self.status {
            status.api_enablements = Vec::new();
            status.resource_summary = None;
            status.node_capacities = Vec::new();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cluster_trimmed_for_a_cache_keeps_all_but_what_only_status_and_scheduling_read() {
        let mut cluster: Cluster = serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "m1", "labels": {"a": "b"},
                "managedFields": [{"manager": "flotilla", "operation": "Update"}]},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1",
                "taints": [{"key": "k", "effect": "NoSchedule"}],
                "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]}]},
            "status": {"kubernetesVersion": "v1.33.0",
                "apiEnablements": [{"groupVersion": "v1", "resources": [{"name": "pods", "kind": "Pod"}]}],
                "nodeSummary": {"totalNum": 3, "readyNum": 3},
                "resourceSummary": {"allocatable": {"cpu": "3"}},
                "nodeCapacities": [{"count": 3, "available": {"cpu": "1"}}],
                "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap();
        let mut expected = cluster.clone();
        cluster.trim_for_cache();
        assert!(cluster.metadata.managed_fields.is_none());
        assert!(cluster.status.as_ref().unwrap().api_enablements.is_empty());
        expected.metadata.managed_fields = None;
        expected.spec.resource_models.clear();
        let status = expected.status.as_mut().unwrap();
        assert!(status.resource_summary.is_some() && !status.node_capacities.is_empty());
        status.api_enablements.clear();
        status.resource_summary = None;
        status.node_capacities.clear();
        assert_eq!(cluster, expected);
        assert!(cluster.is_ready());
    }

    #[test]
    fn sync_mode_strings() {
        for mode in [ClusterSyncMode::Push, ClusterSyncMode::Pull] {
            assert_eq!(serde_json::to_value(mode).unwrap(), json!(mode.as_str()));
        }
    }

    #[test]
    fn acronym_fields_keep_karmadas_spelling() {
        let spec: ClusterSpec = serde_json::from_value(json!({
            "syncMode": "Pull",
            "insecureSkipTLSVerification": true,
            "proxyURL": "http://p:3128"
        }))
        .unwrap();
        assert_eq!(spec.insecure_skip_tls_verification, Some(true));
        assert_eq!(spec.proxy_url.as_deref(), Some("http://p:3128"));
        let back = serde_json::to_value(&spec).unwrap();
        assert_eq!(back["insecureSkipTLSVerification"], json!(true));
        assert_eq!(back["proxyURL"], json!("http://p:3128"));
    }

    #[test]
    fn sync_mode_is_required() {
        assert!(
            serde_json::from_value::<ClusterSpec>(json!({"apiEndpoint": "https://x"})).is_err()
        );
    }
}
