//! `networking.karmada.io/v1alpha1` MultiClusterService and MultiClusterIngress: a Service
//! exposed across clusters (cross-cluster discovery or a load balancer in front of several
//! clusters), and an Ingress routing to such services.
//!
//! Flotilla stores and serves both kinds; it runs no multi-cluster networking controller yet.

use k8s_openapi::api::core::v1::LoadBalancerStatus;
use k8s_openapi::api::networking::v1::{IngressLoadBalancerStatus, IngressSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Exposure type: the service is reachable from the other member clusters.
pub const EXPOSURE_TYPE_CROSS_CLUSTER: &str = "CrossCluster";
/// Exposure type: the service is reachable from outside through a load balancer.
pub const EXPOSURE_TYPE_LOAD_BALANCER: &str = "LoadBalancer";
/// MultiClusterService condition type: the Service was applied to the clusters.
pub const MCS_SERVICE_APPLIED: &str = "ServiceApplied";
/// MultiClusterService condition type: the EndpointSlices reached the consumer clusters.
pub const MCS_ENDPOINT_SLICE_DISPATCHED: &str = "EndpointSliceDispatched";

/// Desired behaviour of a MultiClusterService (named after the Service it exposes).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "networking.karmada.io",
    version = "v1alpha1",
    kind = "MultiClusterService",
    plural = "multiclusterservices",
    singular = "multiclusterservice",
    shortname = "mcs",
    category = "karmada-io",
    namespaced,
    status = "MultiClusterServiceStatus",
    derive = "PartialEq",
    doc = "MultiClusterService exposes the Service of the same name across member clusters."
)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterServiceSpec {
    /// How the service is exposed (`CrossCluster`, `LoadBalancer`; Karmada's schema leaves
    /// the values open).
    pub types: Vec<String>,
    /// Ports exposed (for `LoadBalancer`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ExposurePort>,
    /// Deprecated: the clusters the service is exposed to; use `consumerClusters`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub range: Option<ExposureRange>,
    /// Deprecated: use `providerClusters`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_provision_clusters: Vec<String>,
    /// Deprecated: use `consumerClusters`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_consumption_clusters: Vec<String>,
    /// Clusters whose endpoints serve the service; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_clusters: Vec<ClusterSelector>,
    /// Clusters whose clients can reach the service; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumer_clusters: Vec<ClusterSelector>,
}

/// A cluster named by a MultiClusterService.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterSelector {
    /// Cluster name.
    pub name: String,
}

/// A port of a MultiClusterService.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ExposurePort {
    /// Port name, matching the Service's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Port number.
    pub port: i32,
}

/// Clusters a MultiClusterService is exposed to (deprecated form).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureRange {
    /// Cluster names; empty: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

/// Observed state of a MultiClusterService: a core/v1 ServiceStatus.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterServiceStatus {
    /// Conditions (`ServiceApplied`, `EndpointSliceDispatched`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schemas::conditions_by_type")]
    pub conditions: Vec<Condition>,
    /// The load balancer, for `LoadBalancer` exposure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerStatus>,
}

/// The fields of a MultiClusterIngress: an Ingress whose `spec` is optional (kube's
/// `no_spec` puts this struct's fields at the top level, so the root's `spec` is this
/// struct's optional `spec`).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "networking.karmada.io",
    version = "v1alpha1",
    kind = "MultiClusterIngress",
    plural = "multiclusteringresses",
    singular = "multiclusteringress",
    shortname = "mci",
    category = "karmada-io",
    namespaced,
    no_spec,
    status = "MultiClusterIngressStatus",
    derive = "PartialEq",
    doc = "MultiClusterIngress routes traffic to services that run in several member clusters."
)]
pub struct MultiClusterIngressFields {
    /// The routing, as a networking/v1 Ingress spells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<IngressSpec>,
}

/// Observed state of a MultiClusterIngress.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterIngressStatus {
    /// The load balancer (an Ingress's `status.loadBalancer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<IngressLoadBalancerStatus>,
    /// Clusters traffic is kept away from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traffic_block_clusters: Vec<String>,
    /// Where each backend service runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_locations: Vec<ServiceLocation>,
}

/// The clusters a backend service of a MultiClusterIngress runs in.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ServiceLocation {
    /// Service name.
    pub name: String,
    /// Cluster names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
}
