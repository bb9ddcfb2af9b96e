//! `policy.karmada.io/v1alpha1` OverridePolicy and ClusterOverridePolicy: per-cluster changes
//! applied to a template before it is sent to a member cluster.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::policy::{ClusterAffinity, ResourceSelector};

/// Desired behaviour of an OverridePolicy or ClusterOverridePolicy.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "policy.karmada.io",
    version = "v1alpha1",
    kind = "OverridePolicy",
    plural = "overridepolicies",
    singular = "overridepolicy",
    shortname = "op",
    category = "karmada-io",
    namespaced,
    derive = "PartialEq",
    doc = "OverridePolicy represents the policy that overrides a group of resources to one or more clusters."
)]
#[serde(rename_all = "camelCase")]
pub struct OverrideSpec {
    /// The resources this policy applies to; empty: every resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<ResourceSelector>,

    /// Rules, each for a set of clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub override_rules: Vec<RuleWithCluster>,

    /// Deprecated: use `overrideRules`. Clusters the top-level `overriders` apply to; ignored
    /// when `overrideRules` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,

    /// Deprecated: use `overrideRules`. Ignored when `overrideRules` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overriders: Option<Overriders>,
}

impl OverrideSpec {
    /// The rules in effect: `overrideRules`, or else the deprecated top-level
    /// `targetCluster`/`overriders` pair as one rule (Karmada's reading).
    pub fn effective_rules(&self) -> Vec<RuleWithCluster> {
        if !self.override_rules.is_empty() {
            return self.override_rules.clone();
        }
        match &self.overriders {
            Some(overriders) => vec![RuleWithCluster {
                target_cluster: self.target_cluster.clone(),
                overriders: overriders.clone(),
            }],
            None => Vec::new(),
        }
    }
}

/// The spec of a [`ClusterOverridePolicy`]: the same [`OverrideSpec`] (field access goes
/// through `Deref`).
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "policy.karmada.io",
    version = "v1alpha1",
    kind = "ClusterOverridePolicy",
    plural = "clusteroverridepolicies",
    singular = "clusteroverridepolicy",
    shortname = "cop",
    category = "karmada-io",
    derive = "PartialEq",
    doc = "ClusterOverridePolicy represents the cluster-wide policy that overrides a group of resources to one or more clusters."
)]
#[serde(transparent)]
pub struct ClusterOverrideSpec(pub OverrideSpec);

crate::spec_newtype!(ClusterOverrideSpec, OverrideSpec);

/// Overriders for the clusters `targetCluster` selects (all clusters when absent).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithCluster {
    /// Clusters this rule applies to; absent: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    /// The changes. Karmada applies them in the order image, command, args, labels,
    /// annotations, field, plaintext.
    pub overriders: Overriders,
}

/// The changes of one rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overriders {
    /// JSON-pointer changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plaintext: Vec<PlaintextOverrider>,
    /// Container image changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_overrider: Vec<ImageOverrider>,
    /// Container command changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_overrider: Vec<CommandArgsOverrider>,
    /// Container args changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args_overrider: Vec<CommandArgsOverrider>,
    /// Label changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_overrider: Vec<LabelAnnotationOverrider>,
    /// Annotation changes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations_overrider: Vec<LabelAnnotationOverrider>,
    /// Changes inside string fields holding JSON or YAML documents.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_overrider: Vec<FieldOverrider>,
}

impl Overriders {
    /// True when no overrider is set.
    pub fn is_empty(&self) -> bool {
        self.plaintext.is_empty()
            && self.image_overrider.is_empty()
            && self.command_overrider.is_empty()
            && self.args_overrider.is_empty()
            && self.labels_overrider.is_empty()
            && self.annotations_overrider.is_empty()
            && self.field_overrider.is_empty()
    }
}

/// An override operation.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
#[serde(rename_all = "lowercase")]
pub enum OverriderOperator {
    /// Add (or append).
    Add,
    /// Remove.
    Remove,
    /// Replace.
    Replace,
}

/// Label or annotation changes.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct LabelAnnotationOverrider {
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// Keys and values (values unused for `remove`).
    pub value: BTreeMap<String, String>,
}

/// A change to one component of container images.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct ImageOverrider {
    /// Which image field to change; absent: every container (and init container) image of
    /// the workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<ImagePredicate>,
    /// Registry, Repository or Tag.
    pub component: ImageComponent,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The new value (unused for `remove`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// Names the image field to change.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct ImagePredicate {
    /// JSON pointer to the image field (`/spec/template/spec/containers/0/image`).
    /// It starts with `/`; a `~` in a key is written `~0`, a `/` `~1`.
    #[schemars(schema_with = "json_pointer_schema")]
    pub path: String,
}

/// A part of an image reference.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[schemars(transform = crate::schemas::drop_description)]
pub enum ImageComponent {
    /// `registry.example.com[:port]`.
    Registry,
    /// `library/nginx`.
    Repository,
    /// `1.25` (or a digest).
    Tag,
}

/// A change to one container's command or args.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandArgsOverrider {
    /// Container name.
    pub container_name: String,
    /// add (append) or remove.
    #[schemars(schema_with = "add_remove_schema")]
    pub operator: OverriderOperator,
    /// Items to append or remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value: Vec<String>,
}

/// Karmada allows only `add` and `remove` for command/args.
fn add_remove_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "description": "add or remove.",
        "type": "string",
        "enum": ["add", "remove"],
    })
}

/// A JSON pointer (RFC 6901) as the overriders take one: one or more `/`-prefixed tokens,
/// `~` written only as `~0` (a `~`) or `~1` (a `/`). Karmada's schema leaves these fields plain
/// strings and its webhook parses them; a pattern says the same in the schema, so any host
/// refuses a bad pointer with 422 and `kubectl explain` shows the rule.
pub const JSON_POINTER_PATTERN: &str = "^(/([^~]|~[01])*)+$";

/// A string field holding a JSON pointer ([`JSON_POINTER_PATTERN`]).
fn json_pointer_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": JSON_POINTER_PATTERN,
    })
}

/// A JSON-pointer change.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
pub struct PlaintextOverrider {
    /// JSON pointer of the field.
    /// It starts with `/`; a `~` in a key is written `~0`, a `/` `~1`.
    #[schemars(schema_with = "json_pointer_schema")]
    pub path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The value (any JSON; unused for `remove`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schemas::any_json")]
    pub value: Option<Value>,
}

/// Changes inside a string field that holds a JSON or YAML document (e.g. a ConfigMap entry).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldOverrider {
    /// JSON pointer of the string field.
    /// It starts with `/`; a `~` in a key is written `~0`, a `/` `~1`.
    #[schemars(schema_with = "json_pointer_schema")]
    pub field_path: String,
    /// Changes when the field holds JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json: Vec<FieldPatchOperation>,
    /// Changes when the field holds YAML.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yaml: Vec<FieldPatchOperation>,
}

/// One change inside a JSON or YAML document held in a string field.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldPatchOperation {
    /// JSON pointer inside the document.
    /// It starts with `/`; a `~` in a key is written `~0`, a `/` `~1`.
    #[schemars(schema_with = "json_pointer_schema")]
    pub sub_path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The value (any JSON; unused for `remove`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::schemas::any_json")]
    pub value: Option<Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn overriders(path: &str) -> Overriders {
        Overriders {
            plaintext: vec![PlaintextOverrider {
                path: path.into(),
                operator: OverriderOperator::Remove,
                value: None,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn override_rules_win_over_the_deprecated_fields() {
        let spec = OverrideSpec {
            override_rules: vec![RuleWithCluster {
                target_cluster: None,
                overriders: overriders("/a"),
            }],
            target_cluster: Some(ClusterAffinity {
                cluster_names: vec!["m1".into()],
                ..Default::default()
            }),
            overriders: Some(overriders("/b")),
            ..Default::default()
        };
        let rules = spec.effective_rules();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].overriders.plaintext[0].path, "/a");
    }

    #[test]
    fn deprecated_fields_make_one_rule_and_nothing_makes_none() {
        let spec = OverrideSpec {
            target_cluster: Some(ClusterAffinity {
                cluster_names: vec!["m1".into()],
                ..Default::default()
            }),
            overriders: Some(overriders("/b")),
            ..Default::default()
        };
        let rules = spec.effective_rules();
        assert_eq!(rules.len(), 1);
        assert_eq!(
            rules[0].target_cluster.as_ref().unwrap().cluster_names,
            ["m1"]
        );
        assert!(OverrideSpec::default().effective_rules().is_empty());
        assert!(Overriders::default().is_empty());
        assert!(!overriders("/x").is_empty());
    }

    #[test]
    fn enum_values_are_karmadas() {
        assert_eq!(
            serde_json::to_value(OverriderOperator::Replace).unwrap(),
            json!("replace")
        );
        assert_eq!(
            serde_json::to_value(ImageComponent::Registry).unwrap(),
            json!("Registry")
        );
        assert!(serde_json::from_value::<OverriderOperator>(json!("Replace")).is_err());
    }

    #[test]
    fn cluster_spec_serialises_like_the_namespaced_one() {
        let spec = OverrideSpec {
            overriders: Some(overriders("/c")),
            ..Default::default()
        };
        let cluster = ClusterOverrideSpec::from(spec.clone());
        assert_eq!(
            serde_json::to_value(&cluster).unwrap(),
            serde_json::to_value(&spec).unwrap()
        );
        assert!(cluster.resource_selectors.is_empty());
    }
}
