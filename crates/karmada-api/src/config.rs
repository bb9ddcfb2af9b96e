//! `config.karmada.io/v1alpha1` ResourceInterpreterCustomization and
//! ResourceInterpreterWebhookConfiguration: how Karmada learns the replicas, status, health
//! and dependencies of kinds it does not know, by Lua scripts or by calling webhooks.
//!
//! Flotilla stores and serves both kinds; its own interpreter (`flotilla-interpreter`) has
//! built-in rules and does not run these scripts or call these webhooks yet.

use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The interpreter operations a webhook can serve (`RuleWithOperations.operations`); `*`
/// means all. Karmada's schema leaves the field a free string.
pub const INTERPRETER_OPERATIONS: [&str; 10] = [
    "*",
    "InterpretReplica",
    "InterpretComponent",
    "ReviseReplica",
    "InterpretStatus",
    "Prune",
    "Retain",
    "AggregateStatus",
    "InterpretHealth",
    "InterpretDependency",
];

/// Desired behaviour of a ResourceInterpreterCustomization: the kind it is for and its
/// scripts.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "config.karmada.io",
    version = "v1alpha1",
    kind = "ResourceInterpreterCustomization",
    plural = "resourceinterpretercustomizations",
    singular = "resourceinterpretercustomization",
    shortname = "ric",
    category = "karmada-io",
    derive = "PartialEq",
    doc = "ResourceInterpreterCustomization teaches the resource interpreter about one kind with Lua scripts.",
    printcolumn(
        name = "TARGET-API-VERSION",
        type_ = "string",
        json_path = ".spec.target.apiVersion"
    ),
    printcolumn(
        name = "TARGET-KIND",
        type_ = "string",
        json_path = ".spec.target.kind"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterCustomizationSpec {
    /// The kind the scripts are for.
    pub target: CustomizationTarget,
    /// The scripts, one per interpreter operation.
    pub customizations: CustomizationRules,
}

/// The kind a customization applies to.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizationTarget {
    /// API version of the kind (`apps/v1`).
    pub api_version: String,
    /// The kind.
    pub kind: String,
}

/// A script per interpreter operation; an absent one leaves the built-in behaviour.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizationRules {
    /// Keeps fields the member cluster changed (`Retain(desired, observed)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<LuaScript>,
    /// Replicas and per-replica requirements (`GetReplicas(obj)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_resource: Option<LuaScript>,
    /// Components of a multi-template workload (`GetComponents(obj)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_resource: Option<LuaScript>,
    /// Sets the replicas for one cluster (`ReviseReplica(obj, replicas)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_revision: Option<LuaScript>,
    /// The status reported back from a member (`ReflectStatus(observed)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reflection: Option<LuaScript>,
    /// Folds the members' statuses into the template (`AggregateStatus(desired, items)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_aggregation: Option<LuaScript>,
    /// Health of a member object (`InterpretHealth(observed)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_interpretation: Option<LuaScript>,
    /// Objects the workload depends on (`GetDependencies(desired)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_interpretation: Option<LuaScript>,
}

/// A Lua script defining the function its operation calls.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LuaScript {
    /// The script's source.
    pub lua_script: String,
}

/// The fields of a ResourceInterpreterWebhookConfiguration, which has no `spec`: its
/// `webhooks` sit at the top level of the object (kube's `no_spec` lifts them there).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "config.karmada.io",
    version = "v1alpha1",
    kind = "ResourceInterpreterWebhookConfiguration",
    plural = "resourceinterpreterwebhookconfigurations",
    singular = "resourceinterpreterwebhookconfiguration",
    category = "karmada-io",
    no_spec,
    derive = "PartialEq",
    doc = "ResourceInterpreterWebhookConfiguration names the webhooks that interpret kinds for Karmada."
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterWebhooks {
    /// The webhooks.
    pub webhooks: Vec<ResourceInterpreterWebhook>,
}

/// One interpreter webhook: where it is and which kinds and operations it serves.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterWebhook {
    /// Qualified name of the webhook (`workloads.example.com`).
    pub name: String,
    /// How to reach it (URL or Service, and the CA bundle to verify it).
    pub client_config: WebhookClientConfig,
    /// Kinds and operations it serves; it is called when any rule matches.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleWithOperations>,
    /// Seconds to wait for an answer (Karmada's default: 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// Versions of the interpreter context (request/response) the webhook understands, in
    /// order of preference.
    pub interpreter_context_versions: Vec<String>,
}

/// Operations on a set of kinds.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithOperations {
    /// The operations (see [`INTERPRETER_OPERATIONS`]).
    pub operations: Vec<String>,
    /// The kinds (inline in the JSON).
    #[serde(flatten)]
    pub rule: Rule,
}

/// A set of kinds by group, version and kind; `*` matches all.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    /// API groups (`""` for the core group).
    pub api_groups: Vec<String>,
    /// API versions.
    pub api_versions: Vec<String>,
    /// Kinds.
    pub kinds: Vec<String>,
}
