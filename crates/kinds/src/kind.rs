//! The glue that turns a k8s-openapi type plus a few kind-specific functions into a
//! [`ResourceDef`]: names and scope from the type, validation that decodes into the type,
//! defaulting on the raw object, the Table printer and the OpenAPI schemas.

use std::sync::Arc;

use flotilla_apimachinery::resource::{DefaultFn, PruneFn, ValidateFn, Validation};
use flotilla_apimachinery::{ResourceDef, TablePrinter};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::decode::decode;
use crate::field::Errs;
use crate::meta::{NameRule, validate_metadata};
use crate::openapi;

/// Whether a k8s-openapi scope is namespaced.
pub(crate) trait Scoped {
    const NAMESPACED: bool;
}
impl Scoped for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}
impl Scoped for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// What a kind-specific check sees: the decoded object, its raw JSON (to tell absent fields
/// from zero values), and on updates the stored object in both forms.
pub(crate) struct Ctx<'a, T> {
    pub new: &'a T,
    pub raw: &'a Value,
    pub old: Option<(&'a T, &'a Value)>,
}

/// A kind's semantic checks.
pub(crate) type Check<T> = fn(&Ctx<'_, T>, &mut Errs);

/// The Table printer of a resource, from `flotilla-printers`.
fn printer(group: &str, plural: &str) -> Option<TablePrinter> {
    flotilla_printers::builtin_printer(group, plural)
}

/// A [`ResourceDef`] for `T` with names, scope, strategic merge, printer and OpenAPI schemas
/// filled in; the caller adds short names, categories, subresources and hooks.
pub(crate) fn def<T>() -> ResourceDef
where
    T: Resource + JsonSchema,
    T::Scope: Scoped,
{
    let mut d = ResourceDef::new(
        T::GROUP,
        T::VERSION,
        T::KIND,
        T::URL_PATH_SEGMENT,
        T::Scope::NAMESPACED,
    )
    .with_strategic_merge();
    d.generation = keeps_generation(T::GROUP, T::KIND);
    d.printer = printer(T::GROUP, T::URL_PATH_SEGMENT);
    d.openapi = Some(Arc::new(openapi::schemas_for::<T>()));
    d
}

/// The built-in kinds whose objects kube-apiserver gives a `metadata.generation` (their
/// registry strategies set it to 1 at create and count changes of what is not metadata or
/// status), as (group, kind). Every other built-in kind has none: ConfigMaps, Secrets,
/// Services, Namespaces, Nodes, PVCs and PVs, ServiceAccounts, Endpoints, Events, Leases,
/// RBAC objects, quotas, priority and storage classes. (Custom resources always have one.)
const KINDS_WITH_GENERATION: &[(&str, &str)] = &[
    ("", "Pod"),
    ("", "PodTemplate"),
    ("", "ReplicationController"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("policy", "PodDisruptionBudget"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "IngressClass"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "MutatingAdmissionPolicyBinding",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
];

/// Whether objects of this built-in kind carry `metadata.generation`.
pub(crate) fn keeps_generation(group: &str, kind: &str) -> bool {
    KINDS_WITH_GENERATION.contains(&(group, kind))
}

/// Validation for `T`: decode (collecting unknown fields), check metadata by `rule`, then run
/// `check`. Works on objects before or after defaulting.
pub(crate) fn validator<T>(rule: NameRule, check: Check<T>) -> ValidateFn
where
    T: DeserializeOwned + 'static,
{
    Arc::new(move |raw: &Value, old: Option<&Value>| validate_with::<T>(raw, old, rule, check))
}

fn validate_with<T: DeserializeOwned>(
    raw: &Value,
    old: Option<&Value>,
    rule: NameRule,
    check: Check<T>,
) -> Validation {
    let mut out = Validation::default();
    let decoded = match decode::<T>(raw) {
        Ok(d) => d,
        Err((err, unknown)) => {
            out.decode_error = Some(err.to_string());
            out.unknown_fields = unknown;
            return out;
        }
    };
    out.unknown_fields = decoded.unknown_fields;
    // A stored object that no longer decodes cannot be compared against; skip update rules.
    let old_decoded = old.and_then(|o| decode::<T>(o).ok().map(|d| (d.value, o)));
    let ctx = Ctx {
        new: &decoded.value,
        raw,
        old: old_decoded.as_ref().map(|(t, v)| (t, *v)),
    };
    let mut errs = Errs::default();
    validate_metadata(raw, rule, &mut errs);
    check(&ctx, &mut errs);
    out.causes = errs.into_causes();
    out
}

/// Pruning for `T`: a round trip through the typed value, which drops every field `T` does not
/// declare (kube-apiserver's decoding does the same) and returns their paths. An object that
/// does not decode is left alone; validation reports why.
pub(crate) fn pruner<T>() -> PruneFn
where
    T: DeserializeOwned + serde::Serialize + 'static,
{
    Arc::new(|raw: &mut Value| {
        let Ok(decoded) = decode::<T>(raw) else {
            return Vec::new();
        };
        if decoded.unknown_fields.is_empty() {
            return Vec::new();
        }
        if let Ok(typed) = serde_json::to_value(&decoded.value) {
            *raw = typed;
        }
        decoded.unknown_fields
    })
}

/// Wraps a defaulting function.
pub(crate) fn defaulter(f: fn(&mut Value)) -> DefaultFn {
    Arc::new(f)
}

/// A check with nothing kind-specific.
pub(crate) fn no_check<T>(_: &Ctx<'_, T>, _: &mut Errs) {}
