//! admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and
//! ValidatingWebhookConfiguration: kube-apiserver's defaults (`failurePolicy: Fail`,
//! `matchPolicy: Equivalent`, empty selectors, `timeoutSeconds: 10`, `scope: "*"`, service
//! port 443, `reinvocationPolicy: Never`) and the checks users meet: qualified unique webhook
//! names, exactly one of `url`/`service`, https URLs without query or fragment, known
//! operations, scopes and policies, `sideEffects` None/NoneOnDryRun, a v1-compatible
//! `admissionReviewVersions`, timeouts of 1–30 s and well-formed selectors.

use std::collections::BTreeSet;

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhookConfiguration,
    WebhookClientConfig,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::{Value, json};

use crate::field::{Errs, index, join};
use crate::kind::Ctx;

/// The parts of a webhook both kinds share, borrowed for the checks.
struct Hook<'a> {
    name: &'a str,
    client: &'a WebhookClientConfig,
    rules: Option<&'a Vec<RuleWithOperations>>,
    failure_policy: Option<&'a str>,
    match_policy: Option<&'a str>,
    namespace_selector: Option<&'a LabelSelector>,
    object_selector: Option<&'a LabelSelector>,
    side_effects: &'a str,
    timeout_seconds: Option<i32>,
    review_versions: &'a [String],
}

pub(crate) fn validate_mutating(ctx: &Ctx<'_, MutatingWebhookConfiguration>, errs: &mut Errs) {
    let hooks = ctx.new.webhooks.as_deref().unwrap_or_default();
    let mut seen = BTreeSet::new();
    for (i, w) in hooks.iter().enumerate() {
        let path = index("webhooks", i);
        check_hook(
            &path,
            &Hook {
                name: &w.name,
                client: &w.client_config,
                rules: w.rules.as_ref(),
                failure_policy: w.failure_policy.as_deref(),
                match_policy: w.match_policy.as_deref(),
                namespace_selector: w.namespace_selector.as_ref(),
                object_selector: w.object_selector.as_ref(),
                side_effects: &w.side_effects,
                timeout_seconds: w.timeout_seconds,
                review_versions: &w.admission_review_versions,
            },
            &mut seen,
            errs,
        );
        errs.one_of(
            &join(&path, "reinvocationPolicy"),
            w.reinvocation_policy.as_deref(),
            &["Never", "IfNeeded"],
        );
    }
}

pub(crate) fn validate_validating(ctx: &Ctx<'_, ValidatingWebhookConfiguration>, errs: &mut Errs) {
    let hooks = ctx.new.webhooks.as_deref().unwrap_or_default();
    let mut seen = BTreeSet::new();
    for (i, w) in hooks.iter().enumerate() {
        check_hook(
            &index("webhooks", i),
            &Hook {
                name: &w.name,
                client: &w.client_config,
                rules: w.rules.as_ref(),
                failure_policy: w.failure_policy.as_deref(),
                match_policy: w.match_policy.as_deref(),
                namespace_selector: w.namespace_selector.as_ref(),
                object_selector: w.object_selector.as_ref(),
                side_effects: &w.side_effects,
                timeout_seconds: w.timeout_seconds,
                review_versions: &w.admission_review_versions,
            },
            &mut seen,
            errs,
        );
    }
}

fn check_hook<'a>(path: &str, w: &Hook<'a>, seen: &mut BTreeSet<&'a str>, errs: &mut Errs) {
    let name_path = join(path, "name");
    if w.name.is_empty() {
        errs.required(&name_path, "");
    } else if !qualified(w.name) {
        errs.invalid(
            &name_path,
            &json!(w.name),
            "should be a domain with at least three segments separated by dots",
        );
    } else if !seen.insert(w.name) {
        errs.duplicate(&name_path, &json!(w.name));
    }
    check_client(&join(path, "clientConfig"), w.client, errs);
    for (i, rule) in w.rules.into_iter().flatten().enumerate() {
        check_rule(&index(&join(path, "rules"), i), rule, errs);
    }
    errs.one_of(
        &join(path, "failurePolicy"),
        w.failure_policy,
        &["Ignore", "Fail"],
    );
    errs.one_of(
        &join(path, "matchPolicy"),
        w.match_policy,
        &["Exact", "Equivalent"],
    );
    let side = join(path, "sideEffects");
    if w.side_effects.is_empty() {
        errs.required(&side, "");
    } else if !matches!(w.side_effects, "None" | "NoneOnDryRun") {
        errs.not_supported(&side, w.side_effects, &["None", "NoneOnDryRun"]);
    }
    if let Some(t) = w.timeout_seconds {
        if !(1..=30).contains(&t) {
            errs.invalid(
                &join(path, "timeoutSeconds"),
                &json!(t),
                "the timeout value must be between 1 and 30 seconds",
            );
        }
    }
    let versions = join(path, "admissionReviewVersions");
    if w.review_versions.is_empty() {
        errs.required(&versions, "must specify one of v1, v1beta1");
    } else {
        let mut seen_versions = BTreeSet::new();
        for (i, v) in w.review_versions.iter().enumerate() {
            if !seen_versions.insert(v.as_str()) {
                errs.duplicate(&index(&versions, i), &json!(v));
            }
        }
        if !w
            .review_versions
            .iter()
            .any(|v| v == "v1" || v == "v1beta1")
        {
            errs.invalid(
                &versions,
                &json!(w.review_versions),
                "must include at least one of v1, v1beta1",
            );
        }
    }
    for (field, selector) in [
        ("namespaceSelector", w.namespace_selector),
        ("objectSelector", w.object_selector),
    ] {
        if let Some(sel) = selector {
            let v = serde_json::to_value(sel).unwrap_or(Value::Null);
            if let Err(e) = flotilla_apimachinery::selector::LabelSelector::from_object(&v) {
                errs.invalid(&join(path, field), &v, &e.to_string());
            }
        }
    }
}

fn qualified(name: &str) -> bool {
    name.split('.').count() >= 3 && crate::names::dns1123_subdomain(name).is_ok()
}

fn check_client(path: &str, c: &WebhookClientConfig, errs: &mut Errs) {
    match (&c.url, &c.service) {
        (Some(_), Some(_)) | (None, None) => {
            errs.required(path, "exactly one of url or service is required");
        }
        (Some(url), None) => {
            let p = join(path, "url");
            let detail = match url.split_once("://") {
                Some(("https", rest)) => {
                    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
                    if authority.is_empty() {
                        Some("host must be specified")
                    } else if authority.contains('@') {
                        Some("user information is not permitted in the URL")
                    } else if url.contains('?') {
                        Some("query parameters are not allowed")
                    } else if url.contains('#') {
                        Some("fragments are not allowed")
                    } else {
                        None
                    }
                }
                Some(_) => Some("'https' is the only allowed URL scheme"),
                None => Some("host must be specified"),
            };
            if let Some(detail) = detail {
                errs.invalid(&p, &json!(url), detail);
            }
        }
        (None, Some(svc)) => {
            let p = join(path, "service");
            if svc.name.is_empty() {
                errs.required(&join(&p, "name"), "service name is required");
            }
            if svc.namespace.is_empty() {
                errs.required(&join(&p, "namespace"), "service namespace is required");
            }
            if let Some(path_str) = &svc.path {
                if !path_str.starts_with('/') {
                    errs.invalid(&join(&p, "path"), &json!(path_str), "must start with a '/'");
                }
            }
            if let Some(port) = svc.port {
                errs.port(&join(&p, "port"), port);
            }
        }
    }
}

fn check_rule(path: &str, r: &RuleWithOperations, errs: &mut Errs) {
    let ops = r.operations.as_deref().unwrap_or_default();
    let ops_path = join(path, "operations");
    if ops.is_empty() {
        errs.required(&ops_path, "");
    }
    if ops.len() > 1 && ops.iter().any(|o| o == "*") {
        errs.invalid(
            &ops_path,
            &json!(ops),
            "if '*' is present, must not specify other operations",
        );
    }
    for (i, op) in ops.iter().enumerate() {
        if !matches!(
            op.as_str(),
            "*" | "CREATE" | "UPDATE" | "DELETE" | "CONNECT"
        ) {
            errs.not_supported(
                &index(&ops_path, i),
                op,
                &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
            );
        }
    }
    for field in ["apiGroups", "apiVersions", "resources"] {
        let list = match field {
            "apiGroups" => r.api_groups.as_deref(),
            "apiVersions" => r.api_versions.as_deref(),
            _ => r.resources.as_deref(),
        }
        .unwrap_or_default();
        let p = join(path, field);
        if list.is_empty() {
            errs.required(&p, "");
        } else if list.len() > 1 && list.iter().any(|v| v == "*") {
            errs.invalid(
                &p,
                &json!(list),
                "if '*' is present, must not specify other values",
            );
        }
    }
    for (i, res) in r.resources.iter().flatten().enumerate() {
        let p = index(&join(path, "resources"), i);
        let mut parts = res.splitn(2, '/');
        let resource = parts.next().unwrap_or_default();
        let sub = parts.next();
        if resource.is_empty() || sub.is_some_and(str::is_empty) {
            errs.invalid(
                &p,
                &json!(res),
                "resource and subresource must not be empty",
            );
        }
        if sub.is_some_and(|s| s.contains('/')) {
            errs.invalid(
                &p,
                &json!(res),
                "must be of the form 'resource' or 'resource/subresource'",
            );
        }
    }
    errs.one_of(
        &join(path, "scope"),
        r.scope.as_deref(),
        &["Cluster", "Namespaced", "*"],
    );
}

/// Defaults of both kinds (`mutating` adds `reinvocationPolicy`).
fn default_webhooks(obj: &mut Value, mutating: bool) {
    let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for w in hooks.iter_mut().filter_map(Value::as_object_mut) {
        w.entry("failurePolicy").or_insert(json!("Fail"));
        w.entry("matchPolicy").or_insert(json!("Equivalent"));
        w.entry("namespaceSelector").or_insert(json!({}));
        w.entry("objectSelector").or_insert(json!({}));
        w.entry("timeoutSeconds").or_insert(json!(10));
        if mutating {
            w.entry("reinvocationPolicy").or_insert(json!("Never"));
        }
        if let Some(svc) = w
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            svc.entry("port").or_insert(json!(443));
        }
        if let Some(rules) = w.get_mut("rules").and_then(Value::as_array_mut) {
            for r in rules.iter_mut().filter_map(Value::as_object_mut) {
                r.entry("scope").or_insert(json!("*"));
            }
        }
    }
}

pub(crate) fn default_mutating(obj: &mut Value) {
    default_webhooks(obj, true);
}

pub(crate) fn default_validating(obj: &mut Value) {
    default_webhooks(obj, false);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::extension_resources;

    fn validate(kind: &str, obj: serde_json::Value) -> Vec<String> {
        let def = extension_resources()
            .into_iter()
            .find(|d| d.kind == kind)
            .unwrap();
        let mut obj = obj;
        if let Some(d) = &def.default {
            d(&mut obj);
        }
        let v = (def.validate.as_ref().unwrap())(&obj, None);
        v.causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn config(kind: &str, hook: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": kind,
            "metadata": {"name": "cfg"},
            "webhooks": [hook],
        })
    }

    fn good() -> serde_json::Value {
        json!({
            "name": "labels.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/mutate"},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        })
    }

    #[test]
    fn a_good_configuration_passes_and_is_defaulted() {
        for kind in [
            "MutatingWebhookConfiguration",
            "ValidatingWebhookConfiguration",
        ] {
            assert!(validate(kind, config(kind, good())).is_empty());
        }
        let def = extension_resources()
            .into_iter()
            .find(|d| d.kind == "MutatingWebhookConfiguration")
            .unwrap();
        let mut obj = config("MutatingWebhookConfiguration", good());
        (def.default.as_ref().unwrap())(&mut obj);
        let w = &obj["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
    }

    #[test]
    fn bad_configurations_name_the_field() {
        let kind = "ValidatingWebhookConfiguration";
        let cases: Vec<(serde_json::Value, &str)> = vec![
            (json!({"name": "short.name"}), "webhooks[0].name"),
            (
                json!({"clientConfig": {"url": "http://127.0.0.1/"}}),
                "webhooks[0].clientConfig.url",
            ),
            (
                json!({"clientConfig": {"url": "https://127.0.0.1/?a=b"}}),
                "webhooks[0].clientConfig.url",
            ),
            (json!({"clientConfig": {}}), "webhooks[0].clientConfig"),
            (json!({"sideEffects": "Some"}), "webhooks[0].sideEffects"),
            (json!({"timeoutSeconds": 31}), "webhooks[0].timeoutSeconds"),
            (
                json!({"admissionReviewVersions": ["v2"]}),
                "webhooks[0].admissionReviewVersions",
            ),
            (
                json!({"rules": [{"operations": ["PATCH"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"]}]}),
                "webhooks[0].rules[0].operations[0]",
            ),
            (
                json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Everywhere"}]}),
                "webhooks[0].rules[0].scope",
            ),
            (
                json!({"failurePolicy": "Sometimes"}),
                "webhooks[0].failurePolicy",
            ),
        ];
        for (patch, field) in cases {
            let mut hook = good();
            for (k, v) in patch.as_object().unwrap() {
                hook[k] = v.clone();
            }
            let errs = validate(kind, config(kind, hook));
            assert!(
                errs.iter().any(|e| e.starts_with(field)),
                "{patch} should fail on {field}: {errs:?}"
            );
        }
        let mut dup = config(kind, good());
        dup["webhooks"] = json!([good(), good()]);
        assert!(
            validate(kind, dup)
                .iter()
                .any(|e| e.starts_with("webhooks[1].name"))
        );
    }
}
