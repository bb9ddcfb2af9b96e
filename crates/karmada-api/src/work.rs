//! `work.karmada.io/v1alpha1` Work: the final manifests for one member cluster (in namespace
//! `karmada-es-<cluster>`) and their observed status there. The names and annotations that tie
//! Works to clusters and member objects are in `flotilla_names::karmada`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Work condition type: the manifests were applied to the member cluster.
pub const WORK_APPLIED: &str = "Applied";
/// Work condition type: the applied resources exist in the member cluster.
pub const WORK_AVAILABLE: &str = "Available";
/// Work condition type: whether the Work is sent to its member cluster (False while
/// `suspendDispatching` holds it back).
pub const WORK_DISPATCHING: &str = "Dispatching";

/// Desired state of a Work.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "work.karmada.io",
    version = "v1alpha1",
    kind = "Work",
    plural = "works",
    singular = "work",
    shortname = "wk",
    category = "karmada-io",
    namespaced,
    status = "WorkStatus",
    derive = "PartialEq",
    doc = "Work defines a list of resources to be deployed on the member cluster.",
    printcolumn(
        name = "WORKLOAD-KIND",
        type_ = "string",
        json_path = ".spec.workload.manifests[*].kind"
    ),
    printcolumn(
        name = "APPLIED",
        type_ = "string",
        json_path = ".status.conditions[?(@.type==\"Applied\")].status"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct WorkSpec {
    /// The manifests.
    #[serde(default, skip_serializing_if = "WorkloadTemplate::is_empty")]
    pub workload: WorkloadTemplate,
    /// Stop applying this Work to its cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_dispatching: Option<bool>,
    /// Keep the member objects when this Work is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,
}

/// The manifests of a Work.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct WorkloadTemplate {
    /// Whole Kubernetes objects to apply.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Manifest>,
}

impl WorkloadTemplate {
    /// True without manifests.
    pub fn is_empty(&self) -> bool {
        self.manifests.is_empty()
    }
}

/// One Kubernetes object (a JSON object with apiVersion, kind, metadata...).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(transparent)]
pub struct Manifest(pub Map<String, Value>);

impl JsonSchema for Manifest {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Manifest".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        crate::schemas::embedded_resource(generator)
    }
}

impl Manifest {
    fn str_at(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(Value::as_str)
    }

    fn metadata_str(&self, key: &str) -> Option<&str> {
        self.0.get("metadata")?.get(key)?.as_str()
    }

    /// `apiVersion`, if a string.
    pub fn api_version(&self) -> Option<&str> {
        self.str_at("apiVersion")
    }

    /// `kind`, if a string.
    pub fn kind(&self) -> Option<&str> {
        self.str_at("kind")
    }

    /// `metadata.name`, if a string.
    pub fn name(&self) -> Option<&str> {
        self.metadata_str("name")
    }

    /// `metadata.namespace`, if a string.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata_str("namespace")
    }

    /// The object as a JSON value.
    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }
}

impl TryFrom<Value> for Manifest {
    type Error = crate::ApiError;

    fn try_from(value: Value) -> Result<Self, Self::Error> {
        match value {
            Value::Object(map) => Ok(Manifest(map)),
            other => Err(crate::ApiError::NotAnObject(json_kind(&other))),
        }
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Observed state of a Work.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkStatus {
    /// Conditions (`Applied`, `Progressing`, `Available`, `Degraded`, `Dispatching`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schemas::conditions")]
    pub conditions: Vec<Condition>,
    /// Status of each manifest in the member cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_statuses: Vec<ManifestStatus>,
}

/// The status of one applied manifest.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ManifestStatus {
    /// Which manifest.
    pub identifier: ResourceIdentifier,
    /// The member object's `status`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schemas::free_object")]
    pub status: Option<Value>,
    /// Health as interpreted for its kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

/// Identifies a manifest of a Work and the member object it became.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash, JsonSchema)]
pub struct ResourceIdentifier {
    /// Index in `spec.workload.manifests`.
    pub ordinal: i32,
    /// API group; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name.
    pub resource: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// Health of a member object.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ResourceHealth {
    /// Healthy.
    Healthy,
    /// Unhealthy.
    Unhealthy,
    /// Not known (no health rule for the kind, or not observed yet).
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn manifest_accessors_read_the_object() {
        let m = Manifest::try_from(json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "ns"}
        }))
        .unwrap();
        assert_eq!(m.api_version(), Some("v1"));
        assert_eq!(m.kind(), Some("ConfigMap"));
        assert_eq!(m.name(), Some("cfg"));
        assert_eq!(m.namespace(), Some("ns"));
        let cluster_scoped =
            Manifest::try_from(json!({"kind": "Namespace", "metadata": {"name": "x"}})).unwrap();
        assert_eq!(cluster_scoped.namespace(), None);
        assert_eq!(cluster_scoped.api_version(), None);
        assert_eq!(cluster_scoped.into_value()["kind"], "Namespace");
    }

    #[test]
    fn a_manifest_must_be_an_object() {
        let err = Manifest::try_from(json!([1])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a manifest must be a JSON object, not array"
        );
        assert!(serde_json::from_value::<Manifest>(json!("x")).is_err());
    }

    #[test]
    fn empty_workload_and_core_group_are_omitted() {
        let spec = WorkSpec::default();
        assert_eq!(serde_json::to_value(&spec).unwrap(), json!({}));
        let id = ResourceIdentifier {
            ordinal: 0,
            version: "v1".into(),
            kind: "ConfigMap".into(),
            resource: "configmaps".into(),
            name: "cfg".into(),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&id).unwrap(),
            json!({"ordinal": 0, "version": "v1", "kind": "ConfigMap", "resource": "configmaps", "name": "cfg"})
        );
    }
}
