//! `multicluster.x-k8s.io/v1alpha1` ServiceExport and ServiceImport: the Kubernetes
//! Multi-Cluster Services API (KEP-1645), whose CRDs Karmada ships and its multi-cluster
//! service controllers use. A ServiceExport marks the Service of the same name as exported
//! to the cluster set; a ServiceImport is how clusters consume it.
//!
//! Flotilla stores and serves both kinds; it runs no multi-cluster service controller yet.

use k8s_openapi::api::core::v1::SessionAffinityConfig;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The fields of a ServiceExport besides metadata and status: none (the name says which
/// Service is exported). kube's `no_spec` keeps the object without a `spec`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "ServiceExport",
    plural = "serviceexports",
    singular = "serviceexport",
    shortname = "svcex",
    namespaced,
    no_spec,
    status = "ServiceExportStatus",
    derive = "PartialEq",
    doc = "ServiceExport exports the Service of the same name to the cluster set.",
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct ServiceExportFields {}

/// Observed state of a ServiceExport.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ServiceExportStatus {
    /// Conditions (`Valid`, `Conflict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schemas::conditions_by_type")]
    pub conditions: Vec<Condition>,
}

/// The fields of a ServiceImport besides metadata and status: an optional `spec` (kube's
/// `no_spec` puts this struct's fields at the top level).
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multicluster.x-k8s.io",
    version = "v1alpha1",
    kind = "ServiceImport",
    plural = "serviceimports",
    singular = "serviceimport",
    shortname = "svcim",
    namespaced,
    no_spec,
    status = "ServiceImportStatus",
    derive = "PartialEq",
    doc = "ServiceImport describes a service imported from the cluster set.",
    printcolumn(
        name = "Type",
        type_ = "string",
        description = "How the imported service is reached",
        json_path = ".spec.type"
    ),
    printcolumn(
        name = "IP",
        type_ = "string",
        description = "Cluster-set virtual IP of the imported service",
        json_path = ".spec.ips"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
pub struct ServiceImportFields {
    /// The imported service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ServiceImportSpec>,
}

/// An imported service.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceImportSpec {
    /// Its ports.
    #[schemars(extend("x-kubernetes-list-type" = "atomic"))]
    pub ports: Vec<ServicePort>,
    /// Its virtual IP, for `ClusterSetIP`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1))]
    pub ips: Vec<String>,
    /// How it is reached.
    #[serde(rename = "type")]
    pub type_: ServiceImportType,
    /// `ClientIP` or `None`, as for a Service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity: Option<String>,
    /// Client-IP affinity settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
}

/// How an imported service is reached.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ServiceImportType {
    /// Through one cluster-set virtual IP.
    ClusterSetIP,
    /// Through the backends' own addresses (headless).
    Headless,
}

/// A port of an imported service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// Port name, unique in the service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `TCP`, `UDP` or `SCTP` (default `TCP`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Application protocol (`http`, `kubernetes.io/h2c`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
    /// Port number.
    pub port: i32,
}

/// Observed state of a ServiceImport.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ServiceImportStatus {
    /// The clusters that export the service.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend(
        "x-kubernetes-list-type" = "map",
        "x-kubernetes-list-map-keys" = ["cluster"]
    ))]
    pub clusters: Vec<ClusterStatus>,
}

/// A cluster exporting an imported service.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct ClusterStatus {
    /// Cluster name.
    pub cluster: String,
}
