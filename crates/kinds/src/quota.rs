//! core/v1 LimitRange and ResourceQuota, and the resource quantity rules they share with
//! PersistentVolume capacities: a quantity must parse and must not be negative; resource names
//! are standard (`cpu`, `memory`, `requests.storage`, ...) or fully qualified
//! (`example.com/gpu`, `count/deployments.apps`).
//!
//! On the host these are templates: nothing enforces a quota or applies a limit range there,
//! and nothing fills `ResourceQuota.status` (a member's quota controller does).

use std::collections::{BTreeMap, BTreeSet};

use flotilla_apimachinery::quantity::{self, Round};
use k8s_openapi::api::core::v1::{LimitRange, ResourceQuota};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, index, join, key};
use crate::kind::Ctx;

/// A resource list as decoded.
type Resources = BTreeMap<String, Quantity>;

/// Parsed quantities of one limit item: list (`max`, `min`, ...) -> resource -> (milli-value,
/// text as written).
type Bounds = BTreeMap<&'static str, BTreeMap<String, (i64, String)>>;

/// The value of a quantity in milli-units, or a cause when it does not parse.
pub(crate) fn milli(q: &Quantity, field: &str, errs: &mut Errs) -> Option<i64> {
    let parsed = quantity::parse(&q.0, true, Round::Up);
    if parsed.is_none() {
        errs.invalid(
            field,
            &Value::from(q.0.as_str()),
            "quantities must match the regular expression \
             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        );
    }
    parsed
}

/// A quantity that parses and is not negative; its milli-value.
pub(crate) fn non_negative(q: &Quantity, field: &str, errs: &mut Errs) -> Option<i64> {
    let v = milli(q, field, errs)?;
    if v < 0 {
        errs.invalid_shown(field, &q.0, "must be greater than or equal to 0");
    }
    Some(v)
}

/// Names that are counts, which must be whole numbers.
fn is_integer_resource(name: &str) -> bool {
    matches!(
        name,
        "pods"
            | "services"
            | "replicationcontrollers"
            | "resourcequotas"
            | "secrets"
            | "configmaps"
            | "persistentvolumeclaims"
            | "services.nodeports"
            | "services.loadbalancers"
    ) || name.starts_with("count/")
}

/// The resource names containers and limit ranges know without a domain prefix.
pub(crate) fn is_standard_container_resource(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// The resource names a quota knows without a domain prefix.
fn is_standard_quota_resource(name: &str) -> bool {
    is_integer_resource(name)
        || matches!(
            name,
            "cpu"
                | "memory"
                | "ephemeral-storage"
                | "storage"
                | "requests.cpu"
                | "requests.memory"
                | "requests.storage"
                | "requests.ephemeral-storage"
                | "limits.cpu"
                | "limits.memory"
                | "limits.ephemeral-storage"
        )
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
}

/// A qualified resource name; unqualified ones must satisfy `standard` (else `message`).
pub(crate) fn resource_name(
    name: &str,
    field: &str,
    standard: fn(&str) -> bool,
    message: &str,
    errs: &mut Errs,
) {
    if let Err(m) = flotilla_apimachinery::names::is_qualified_name(name) {
        errs.invalid(field, &Value::from(name), &m);
    } else if !name.contains('/') && !standard(name) {
        errs.invalid(field, &Value::from(name), message);
    }
}

const LIMIT_TYPES: &[&str] = &["Container", "PersistentVolumeClaim", "Pod"];

pub(crate) fn validate_limitrange(ctx: &Ctx<'_, LimitRange>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else { return };
    let mut types = BTreeSet::new();
    for (i, item) in spec.limits.iter().enumerate() {
        let at = index("spec.limits", i);
        let kind = item.type_.as_str();
        let type_path = join(&at, "type");
        if let Err(m) = flotilla_apimachinery::names::is_qualified_name(kind) {
            errs.invalid(&type_path, &Value::from(kind), &m);
        } else if !kind.contains('/') && !LIMIT_TYPES.contains(&kind) {
            errs.invalid(
                &type_path,
                &Value::from(kind),
                "must be a standard limit type or fully qualified",
            );
        }
        if !types.insert(kind) {
            errs.duplicate(&type_path, &Value::from(kind));
        }
        let container_like = kind == "Pod" || kind == "Container";
        let mut values: Bounds = BTreeMap::new();
        let mut check_list =
            |list: &'static str, resources: Option<&Resources>, errs: &mut Errs| {
                for (name, q) in resources.into_iter().flatten() {
                    let field = key(&join(&at, list), name);
                    if container_like {
                        resource_name(
                            name,
                            &field,
                            is_standard_container_resource,
                            "must be a standard resource for containers",
                            errs,
                        );
                    } else {
                        resource_name(
                            name,
                            &field,
                            |n| is_standard_container_resource(n) || n == "storage",
                            "must be a standard resource type or fully qualified",
                            errs,
                        );
                    }
                    if let Some(v) = non_negative(q, &field, errs) {
                        let entry = values.entry(list).or_default();
                        entry.insert(name.clone(), (v, q.0.clone()));
                    }
                }
            };
        check_list("max", item.max.as_ref(), errs);
        check_list("min", item.min.as_ref(), errs);
        if kind == "Pod" {
            if item.default.as_ref().is_some_and(|d| !d.is_empty()) {
                errs.forbidden(
                    &join(&at, "default"),
                    "may not be specified when `type` is 'Pod'",
                );
            }
            if item.default_request.as_ref().is_some_and(|d| !d.is_empty()) {
                errs.forbidden(
                    &join(&at, "defaultRequest"),
                    "may not be specified when `type` is 'Pod'",
                );
            }
        } else {
            check_list("default", item.default.as_ref(), errs);
            check_list("defaultRequest", item.default_request.as_ref(), errs);
        }
        if kind == "PersistentVolumeClaim" {
            let has = |l: Option<&Resources>| l.is_some_and(|m| m.contains_key("storage"));
            if !has(item.min.as_ref()) && !has(item.max.as_ref()) {
                errs.required(
                    &join(&at, "limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                );
            }
        }
        check_list(
            "maxLimitRequestRatio",
            item.max_limit_request_ratio.as_ref(),
            errs,
        );
        compare_limits(&at, &values, errs);
    }
}

/// The ordering rules between min, defaultRequest, default and max of each resource, and the
/// lower bound of `maxLimitRequestRatio`.
fn compare_limits(at: &str, values: &Bounds, errs: &mut Errs) {
    let names: BTreeSet<&str> = values
        .values()
        .flat_map(|m| m.keys().map(String::as_str))
        .collect();
    for name in names {
        let get = |list: &str| {
            values
                .get(list)
                .and_then(|m| m.get(name))
                .map(|(v, text)| (*v, text.as_str()))
        };
        let (min, max) = (get("min"), get("max"));
        let (default, request) = (get("default"), get("defaultRequest"));
        let path = |list: &str| key(&join(at, list), name);
        if let (Some(lo), Some(hi)) = (min, max)
            && lo.0 > hi.0
        {
            let m = format!("min value {} is greater than max value {}", lo.1, hi.1);
            errs.invalid_shown(&path("min"), lo.1, &m);
        }
        if let (Some(lo), Some(r)) = (min, request)
            && lo.0 > r.0
        {
            let m = format!(
                "min value {} is greater than default request value {}",
                lo.1, r.1
            );
            errs.invalid_shown(&path("defaultRequest"), r.1, &m);
        }
        if let (Some(r), Some(hi)) = (request, max)
            && r.0 > hi.0
        {
            let m = format!(
                "default request value {} is greater than max value {}",
                r.1, hi.1
            );
            errs.invalid_shown(&path("defaultRequest"), r.1, &m);
        }
        if let (Some(r), Some(d)) = (request, default)
            && r.0 > d.0
        {
            let m = format!(
                "default request value {} is greater than default limit value {}",
                r.1, d.1
            );
            errs.invalid_shown(&path("defaultRequest"), r.1, &m);
        }
        if let (Some(lo), Some(d)) = (min, default)
            && lo.0 > d.0
        {
            let m = format!("min value {} is greater than default value {}", lo.1, d.1);
            errs.invalid_shown(&path("default"), lo.1, &m);
        }
        if let (Some(d), Some(hi)) = (default, max)
            && d.0 > hi.0
        {
            let m = format!("default value {} is greater than max value {}", d.1, hi.1);
            errs.invalid_shown(&path("default"), hi.1, &m);
        }
        if let Some(ratio) = get("maxLimitRequestRatio")
            && ratio.0 < 1000
        {
            let m = format!("ratio {} is less than 1", ratio.1);
            errs.invalid_shown(&path("maxLimitRequestRatio"), ratio.1, &m);
        }
    }
}

/// For `Container` items: an absent default limit is the max, an absent default request is
/// the default limit, else the min.
pub(crate) fn default_limitrange(obj: &mut Value) {
    let Some(spec) = defaults::existing(obj, "spec") else {
        return;
    };
    for item in defaults::items(spec, "limits") {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let list = |item: &Value, name: &str| {
            item.get(name)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (max, min) = (list(item, "max"), list(item, "min"));
        let mut default = list(item, "default");
        for (k, v) in max {
            default.entry(k).or_insert(v);
        }
        let mut request = list(item, "defaultRequest");
        for (k, v) in default.iter().chain(min.iter()) {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        if let Some(m) = item.as_object_mut() {
            if !default.is_empty() {
                m.insert("default".into(), Value::Object(default));
            }
            if !request.is_empty() {
                m.insert("defaultRequest".into(), Value::Object(request));
            }
        }
    }
}

const QUOTA_SCOPES: &[&str] = &[
    "BestEffort",
    "CrossNamespacePodAffinity",
    "NotBestEffort",
    "NotTerminating",
    "PriorityClass",
    "Terminating",
    "VolumeAttributesClass",
];

/// Whether a quota scope may limit a standard resource.
fn scope_allows(scope: &str, resource: &str) -> bool {
    let compute = matches!(
        resource,
        "pods"
            | "cpu"
            | "memory"
            | "requests.cpu"
            | "requests.memory"
            | "limits.cpu"
            | "limits.memory"
    );
    match scope {
        "BestEffort" | "CrossNamespacePodAffinity" => resource == "pods",
        "Terminating" | "NotTerminating" | "NotBestEffort" | "PriorityClass" => compute,
        "VolumeAttributesClass" => matches!(
            resource,
            "persistentvolumeclaims" | "requests.storage" | "storage"
        ),
        _ => true,
    }
}

fn quota_resources(resources: Option<&Resources>, path: &str, errs: &mut Errs) {
    for (name, q) in resources.into_iter().flatten() {
        let field = key(path, name);
        resource_name(
            name,
            &field,
            is_standard_quota_resource,
            "must be a standard resource for quota",
            errs,
        );
        if let Some(v) = non_negative(q, &field, errs)
            && is_integer_resource(name)
            && v % 1000 != 0
        {
            errs.invalid_shown(&field, &q.0, "must be an integer");
        }
    }
}

pub(crate) fn validate_resourcequota(ctx: &Ctx<'_, ResourceQuota>, errs: &mut Errs) {
    if let Some(spec) = &ctx.new.spec {
        quota_resources(spec.hard.as_ref(), "spec.hard", errs);
        let scopes = spec.scopes.as_deref().unwrap_or_default();
        let shown = json!(scopes);
        for scope in scopes {
            if !QUOTA_SCOPES.contains(&scope.as_str()) {
                errs.invalid("spec.scopes", &shown, "unsupported scope");
                continue;
            }
            let hard = spec.hard.iter().flat_map(|h| h.keys());
            for resource in hard {
                if is_standard_quota_resource(resource)
                    && !resource.contains('/')
                    && !scope_allows(scope, resource)
                {
                    errs.invalid(
                        "spec.scopes",
                        &shown,
                        "unsupported scope applied to resource",
                    );
                }
            }
        }
        let has = |s: &str| scopes.iter().any(|x| x == s);
        if (has("BestEffort") && has("NotBestEffort"))
            || (has("Terminating") && has("NotTerminating"))
        {
            errs.invalid("spec.scopes", &shown, "conflicting scopes");
        }
        if let Some(selector) = &spec.scope_selector {
            for (i, req) in selector.match_expressions.iter().flatten().enumerate() {
                let at = index("spec.scopeSelector.matchExpressions", i);
                errs.one_of(
                    &join(&at, "scopeName"),
                    Some(req.scope_name.as_str()),
                    QUOTA_SCOPES,
                );
                let values = req.values.as_deref().unwrap_or_default();
                match req.operator.as_str() {
                    "In" | "NotIn" if values.is_empty() => errs.required(
                        &join(&at, "values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                    ),
                    "Exists" | "DoesNotExist" if !values.is_empty() => errs.invalid(
                        &join(&at, "values"),
                        &json!(values),
                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                    ),
                    "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                    other => errs.not_supported(
                        &join(&at, "operator"),
                        other,
                        &["DoesNotExist", "Exists", "In", "NotIn"],
                    ),
                }
            }
        }
    }
    if let Some(status) = &ctx.new.status {
        quota_resources(status.hard.as_ref(), "status.hard", errs);
        quota_resources(status.used.as_ref(), "status.used", errs);
    }
    if let Some((old, _)) = ctx.old {
        let set = |q: &ResourceQuota| -> BTreeSet<String> {
            q.spec
                .iter()
                .flat_map(|s| s.scopes.iter().flatten().cloned())
                .collect()
        };
        if set(ctx.new) != set(old) {
            let shown = json!(ctx.new.spec.as_ref().and_then(|s| s.scopes.clone()));
            errs.invalid("spec.scopes", &shown, "field is immutable");
        }
    }
}
