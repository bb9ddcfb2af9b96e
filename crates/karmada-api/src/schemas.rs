//! Hand-written schema fragments for fields whose Rust type says less than the CRD must.
//!
//! schemars describes a `serde_json::Value` as the empty schema (`true`), which a CRD cannot
//! carry: a structural schema needs a type on every node unless the node keeps unknown fields.
//! These functions are used with `#[schemars(schema_with = ...)]`.

use schemars::{Schema, SchemaGenerator, json_schema};

/// Any JSON value, kept as sent (Karmada's `apiextensionsv1.JSON`, e.g. a plaintext override
/// value or a JSON-patch value).
pub(crate) fn any_json(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A JSON object whose content is not described (Karmada's `runtime.RawExtension` status).
pub(crate) fn free_object(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A whole Kubernetes object (apiVersion, kind, metadata, ...) embedded in another one, as in a
/// Work's manifests. The server checks its `apiVersion`, `kind` and `metadata` and keeps the rest.
pub(crate) fn embedded_resource(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// Removes a type's own description, so that the description of the field using it shows
/// instead (kube's handling of `Option<enum>` would otherwise replace the field's with the
/// type's).
pub(crate) fn drop_description(schema: &mut Schema) {
    schema.remove("description");
}

/// Quantity grammar: optional sign, a decimal number, then a binary-SI, decimal-SI or exponent
/// suffix.
const QUANTITY_PATTERN: &str = r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+))?$";

/// A resource quantity (`500m`, `2Gi`, `3`): integer or string, strings checked against the
/// quantity grammar so that a malformed request is refused by the server, not by a controller.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "pattern": QUANTITY_PATTERN,
        "x-kubernetes-int-or-string": true,
    })
}

/// A `ResourceList`: resource name -> [`quantity`].
pub(crate) fn resource_list(generator: &mut SchemaGenerator) -> Schema {
    let value = quantity(generator);
    json_schema!({
        "type": "object",
        "additionalProperties": value,
    })
}

/// A metav1 `LabelSelector` whose `matchExpressions[].operator` must be one of the four
/// operators, so a selector that could never be evaluated is refused with a 422 when the
/// policy is written, not found later by the detector.
pub(crate) fn label_selector(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "A label query over a set of resources.",
        "type": "object",
        "properties": {
            "matchLabels": {
                "description": "Labels that must all be present with these values.",
                "type": "object",
                "additionalProperties": {"type": "string"},
            },
            "matchExpressions": {
                "description": "Requirements that must all hold.",
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["key", "operator"],
                    "properties": {
                        "key": {"type": "string"},
                        "operator": {
                            "type": "string",
                            "enum": ["In", "NotIn", "Exists", "DoesNotExist"],
                        },
                        "values": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
        "x-kubernetes-map-type": "atomic",
    })
}

/// A list of metav1 `Condition`s with the constraints the API machinery declares for them
/// (status `True`/`False`/`Unknown`, bounded reason and message, qualified-name type), as
/// Karmada's CRDs carry them. k8s-openapi's own schema has the fields but not the constraints.
/// The list is atomic for server-side apply, as in Karmada's binding and Work CRDs.
pub(crate) fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Conditions, at most one per type.",
        "type": "array",
        "items": condition(),
    })
}

/// [`conditions`] as a list map keyed by `type` (server-side apply merges conditions of
/// different types), as the Multi-Cluster Services API declares its conditions.
pub(crate) fn conditions_by_type(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "Conditions, one per type.",
        "type": "array",
        "items": condition(),
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
    })
}

/// One metav1 `Condition`.
fn condition() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "type": {
                "description": "Type of the condition, CamelCase or a qualified name.",
                "type": "string",
                "maxLength": 316,
                "pattern": CONDITION_TYPE_PATTERN,
            },
            "status": {
                "description": "True, False or Unknown.",
                "type": "string",
                "enum": ["True", "False", "Unknown"],
            },
            "observedGeneration": {
                "description": "The object's generation the condition was set for.",
                "type": "integer",
                "format": "int64",
                "minimum": 0,
            },
            "lastTransitionTime": {
                "description": "When the status last changed.",
                "type": "string",
                "format": "date-time",
            },
            "reason": {
                "description": "Machine-readable CamelCase reason of the last transition.",
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "pattern": CONDITION_REASON_PATTERN,
            },
            "message": {
                "description": "Human-readable details of the last transition.",
                "type": "string",
                "maxLength": 32768,
            },
        },
    })
}

/// A condition type: a name, optionally prefixed with a DNS subdomain and `/`.
const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// A condition reason: starts with a letter, then letters, digits, `_`, `,` and `:`.
const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";
