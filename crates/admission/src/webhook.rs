//! The webhooks of one stored configuration, with the defaults kube-apiserver applies
//! (`failurePolicy: Fail`, `matchPolicy: Equivalent`, `timeoutSeconds: 10`, empty selectors,
//! `scope: "*"`, service port 443, `reinvocationPolicy: Never`), ready for matching and
//! calling. Configurations are called in name order and their webhooks in list order, as
//! kube-apiserver does.

use std::time::Duration;

use base64::Engine;
use flotilla_apimachinery::selector::LabelSelector;
use k8s_openapi::api::admissionregistration::v1 as adm;
use serde_json::Value;

use crate::AdmissionError;

/// Mutating or validating.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WebhookKind {
    Mutating,
    Validating,
}

/// Where a webhook is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientConfig {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`: the API server resolves the Service and verifies the serving
    /// certificate for `<name>.<namespace>.svc`.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SideEffects {
    None,
    NoneOnDryRun,
    Some,
    Unknown,
}

impl SideEffects {
    /// Whether the webhook may be called for a dry-run request.
    pub fn dry_run_safe(self) -> bool {
        matches!(self, SideEffects::None | SideEffects::NoneOnDryRun)
    }
}

/// One rule with its operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    pub scope: String,
}

/// A webhook ready to match and call.
#[derive(Debug, Clone)]
pub struct Webhook {
    pub kind: WebhookKind,
    pub name: String,
    /// The configuration it comes from.
    pub configuration: String,
    pub client: ClientConfig,
    /// PEM roots from `clientConfig.caBundle`; empty means the server's defaults.
    pub ca_bundle: Option<String>,
    pub rules: Vec<Rule>,
    pub failure_policy: FailurePolicy,
    /// `matchPolicy: Equivalent` (the default) also matches other versions of the resource.
    pub match_equivalent: bool,
    pub namespace_selector: LabelSelector,
    pub object_selector: LabelSelector,
    pub side_effects: SideEffects,
    pub timeout: Duration,
    pub review_versions: Vec<String>,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke_if_needed: bool,
    /// `matchConditions` (CEL) are not evaluated: the webhook is called and decides.
    pub has_match_conditions: bool,
}

/// The webhooks of a stored configuration of `kind`, in call order.
pub fn webhooks_of(kind: WebhookKind, config: &Value) -> Result<Vec<Webhook>, AdmissionError> {
    let name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let err = |message: String| AdmissionError::Configuration {
        name: name.clone(),
        message,
    };
    match kind {
        WebhookKind::Mutating => {
            let c: adm::MutatingWebhookConfiguration =
                serde_json::from_value(config.clone()).map_err(|e| err(e.to_string()))?;
            c.webhooks
                .unwrap_or_default()
                .into_iter()
                .map(|w| {
                    let reinvoke = w.reinvocation_policy.as_deref() == Some("IfNeeded");
                    let mut hook = common(
                        kind,
                        &name,
                        Parts {
                            name: w.name,
                            client: w.client_config,
                            rules: w.rules,
                            failure_policy: w.failure_policy,
                            match_policy: w.match_policy,
                            namespace_selector: w.namespace_selector,
                            object_selector: w.object_selector,
                            side_effects: w.side_effects,
                            timeout_seconds: w.timeout_seconds,
                            review_versions: w.admission_review_versions,
                            match_conditions: w.match_conditions.is_some_and(|m| !m.is_empty()),
                        },
                    )?;
                    hook.reinvoke_if_needed = reinvoke;
                    Ok(hook)
                })
                .collect()
        }
        WebhookKind::Validating => {
            let c: adm::ValidatingWebhookConfiguration =
                serde_json::from_value(config.clone()).map_err(|e| err(e.to_string()))?;
            c.webhooks
                .unwrap_or_default()
                .into_iter()
                .map(|w| {
                    common(
                        kind,
                        &name,
                        Parts {
                            name: w.name,
                            client: w.client_config,
                            rules: w.rules,
                            failure_policy: w.failure_policy,
                            match_policy: w.match_policy,
                            namespace_selector: w.namespace_selector,
                            object_selector: w.object_selector,
                            side_effects: w.side_effects,
                            timeout_seconds: w.timeout_seconds,
                            review_versions: w.admission_review_versions,
                            match_conditions: w.match_conditions.is_some_and(|m| !m.is_empty()),
                        },
                    )
                })
                .collect()
        }
    }
}

/// The fields mutating and validating webhooks share.
struct Parts {
    name: String,
    client: adm::WebhookClientConfig,
    rules: Option<Vec<adm::RuleWithOperations>>,
    failure_policy: Option<String>,
    match_policy: Option<String>,
    namespace_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    object_selector: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
    side_effects: String,
    timeout_seconds: Option<i32>,
    review_versions: Vec<String>,
    match_conditions: bool,
}

fn common(kind: WebhookKind, configuration: &str, p: Parts) -> Result<Webhook, AdmissionError> {
    let client = match (&p.client.url, &p.client.service) {
        (Some(url), _) => ClientConfig::Url(url.clone()),
        (None, Some(svc)) => ClientConfig::Service {
            namespace: svc.namespace.clone(),
            name: svc.name.clone(),
            path: svc.path.clone().unwrap_or_default(),
            port: svc.port.and_then(|p| u16::try_from(p).ok()).unwrap_or(443),
        },
        (None, None) => {
            return Err(AdmissionError::Configuration {
                name: configuration.into(),
                message: format!(
                    "webhook {}: clientConfig has neither url nor service",
                    p.name
                ),
            });
        }
    };
    let ca_bundle = match &p.client.ca_bundle {
        Some(bytes) if !bytes.0.is_empty() => Some(String::from_utf8(bytes.0.clone()).map_err(
            |_| AdmissionError::Configuration {
                name: configuration.into(),
                message: format!("webhook {}: caBundle is not PEM text", p.name),
            },
        )?),
        _ => None,
    };
    let selector = |field: &'static str,
                    s: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>|
     -> Result<LabelSelector, AdmissionError> {
        match s {
            None => Ok(LabelSelector::everything()),
            Some(s) => {
                let v = serde_json::to_value(s).map_err(|e| AdmissionError::Selector {
                    webhook: p.name.clone(),
                    field,
                    message: e.to_string(),
                })?;
                LabelSelector::from_object(&v).map_err(|e| AdmissionError::Selector {
                    webhook: p.name.clone(),
                    field,
                    message: e.to_string(),
                })
            }
        }
    };
    let namespace_selector = selector("namespaceSelector", p.namespace_selector.clone())?;
    let object_selector = selector("objectSelector", p.object_selector.clone())?;
    let rules = p
        .rules
        .unwrap_or_default()
        .into_iter()
        .map(|r| Rule {
            operations: r.operations.unwrap_or_default(),
            api_groups: r.api_groups.unwrap_or_default(),
            api_versions: r.api_versions.unwrap_or_default(),
            resources: r.resources.unwrap_or_default(),
            scope: r.scope.unwrap_or_else(|| "*".into()),
        })
        .collect();
    Ok(Webhook {
        kind,
        name: p.name,
        configuration: configuration.into(),
        client,
        ca_bundle,
        rules,
        failure_policy: match p.failure_policy.as_deref() {
            Some("Ignore") => FailurePolicy::Ignore,
            _ => FailurePolicy::Fail,
        },
        match_equivalent: p.match_policy.as_deref() != Some("Exact"),
        namespace_selector,
        object_selector,
        side_effects: match p.side_effects.as_str() {
            "None" => SideEffects::None,
            "NoneOnDryRun" => SideEffects::NoneOnDryRun,
            "Some" => SideEffects::Some,
            _ => SideEffects::Unknown,
        },
        timeout: Duration::from_secs(
            p.timeout_seconds
                .and_then(|t| u64::try_from(t).ok())
                .unwrap_or(10),
        ),
        review_versions: p.review_versions,
        reinvoke_if_needed: false,
        has_match_conditions: p.match_conditions,
    })
}

/// Decodes a base64 `caBundle` string as it appears in JSON (for callers holding raw JSON).
pub fn decode_ca_bundle(b64: &str) -> Option<String> {
    base64::engine::general_purpose::STANDARD
        .decode(b64)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_kube_apiservers() {
        let config = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "cfg"},
            "webhooks": [{
                "name": "deny.example.com",
                "clientConfig": {"url": "https://127.0.0.1:9443/validate"},
                "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        });
        let hooks = webhooks_of(WebhookKind::Validating, &config).unwrap();
        assert_eq!(hooks.len(), 1);
        let h = &hooks[0];
        assert_eq!(h.configuration, "cfg");
        assert_eq!(h.failure_policy, FailurePolicy::Fail);
        assert!(h.match_equivalent);
        assert_eq!(h.timeout, Duration::from_secs(10));
        assert_eq!(h.rules[0].scope, "*");
        assert!(h.namespace_selector.is_empty() && h.object_selector.is_empty());
        assert_eq!(
            h.client,
            ClientConfig::Url("https://127.0.0.1:9443/validate".into())
        );
    }

    #[test]
    fn service_reference_defaults_port_443_and_reads_the_ca_bundle() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let b64 = base64::engine::general_purpose::STANDARD.encode(pem);
        let config = json!({
            "metadata": {"name": "m"},
            "webhooks": [{
                "name": "label.example.com",
                "clientConfig": {"service": {"namespace": "ops", "name": "hooks", "path": "/mutate"}, "caBundle": b64},
                "sideEffects": "NoneOnDryRun",
                "admissionReviewVersions": ["v1"],
                "reinvocationPolicy": "IfNeeded",
                "failurePolicy": "Ignore",
                "matchPolicy": "Exact",
                "timeoutSeconds": 3,
            }],
        });
        let h = &webhooks_of(WebhookKind::Mutating, &config).unwrap()[0];
        assert_eq!(
            h.client,
            ClientConfig::Service {
                namespace: "ops".into(),
                name: "hooks".into(),
                path: "/mutate".into(),
                port: 443
            }
        );
        assert_eq!(h.ca_bundle.as_deref(), Some(pem));
        assert!(h.reinvoke_if_needed);
        assert_eq!(h.failure_policy, FailurePolicy::Ignore);
        assert!(!h.match_equivalent);
        assert_eq!(h.timeout, Duration::from_secs(3));
        assert_eq!(h.side_effects, SideEffects::NoneOnDryRun);
        assert_eq!(decode_ca_bundle(&b64).as_deref(), Some(pem));
    }

    #[test]
    fn a_bad_selector_is_an_error() {
        let config = json!({
            "metadata": {"name": "m"},
            "webhooks": [{
                "name": "x.example.com",
                "clientConfig": {"url": "https://127.0.0.1/"},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "objectSelector": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
            }],
        });
        assert!(matches!(
            webhooks_of(WebhookKind::Validating, &config),
            Err(AdmissionError::Selector {
                field: "objectSelector",
                ..
            })
        ));
    }
}
