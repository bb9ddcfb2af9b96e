//! The `admission.k8s.io/v1` AdmissionReview a webhook is sent and what its answer means:
//! the response must name the request's uid; a mutating webhook's patch must be a base64
//! `JSONPatch`; a denial becomes the error kube-apiserver returns (`admission webhook "<name>"
//! denied the request: <message>`, code at least 400).

use base64::Engine;
use serde_json::{Value, json};

use crate::AdmissionError;
use crate::matching::{Attributes, RuleMatch};
use crate::webhook::{Webhook, WebhookKind};

/// The AdmissionReview sent for `attrs`, with `uid` as the request uid. Under an
/// equivalent-version match the kind, resource and objects are in that version and
/// `requestKind`/`requestResource` keep the original.
pub fn review_request(attrs: &Attributes, matched: &RuleMatch, uid: &str) -> Value {
    let version = match matched {
        RuleMatch::Equivalent(v) => v.as_str(),
        _ => attrs.version.as_str(),
    };
    // The object's own kind stays as it is for subresources with another kind (Scale).
    let own_kind = attrs.kind_group == attrs.group && attrs.kind_version == attrs.version;
    let kind_version = if own_kind {
        version
    } else {
        attrs.kind_version.as_str()
    };
    let api_version = |v: &str| {
        if attrs.group.is_empty() {
            v.to_string()
        } else {
            format!("{}/{v}", attrs.group)
        }
    };
    let in_version = |o: &Option<Value>| -> Value {
        match o {
            Some(o) => {
                let mut o = o.clone();
                if own_kind && version != attrs.version {
                    if let Some(m) = o.as_object_mut() {
                        m.insert("apiVersion".into(), json!(api_version(version)));
                    }
                }
                o
            }
            None => Value::Null,
        }
    };
    let mut options = attrs.options.clone();
    if let Some(m) = options.as_object_mut() {
        m.insert("kind".into(), json!(attrs.operation.options_kind()));
        m.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    }
    let mut request = json!({
        "uid": uid,
        "kind": {"group": attrs.kind_group, "version": kind_version, "kind": attrs.kind},
        "resource": {"group": attrs.group, "version": version, "resource": attrs.resource},
        "requestKind": {"group": attrs.kind_group, "version": attrs.kind_version, "kind": attrs.kind},
        "requestResource": {"group": attrs.group, "version": attrs.version, "resource": attrs.resource},
        "name": attrs.name,
        "operation": attrs.operation.as_str(),
        "userInfo": {
            "username": attrs.user.username,
            "uid": attrs.user.uid,
            "groups": attrs.user.groups,
            "extra": attrs.user.extra,
        },
        "object": in_version(&attrs.object),
        "oldObject": in_version(&attrs.old_object),
        "dryRun": attrs.dry_run,
        "options": options,
    });
    if let Some(m) = request.as_object_mut() {
        if !attrs.subresource.is_empty() {
            m.insert("subResource".into(), json!(attrs.subresource));
            m.insert("requestSubResource".into(), json!(attrs.subresource));
        }
        if attrs.namespaced && !attrs.namespace.is_empty() {
            m.insert("namespace".into(), json!(attrs.namespace));
        }
    }
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": request,
    })
}

/// A webhook's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allowed: bool,
    /// `response.status` (a metav1.Status), when given.
    pub status: Option<Value>,
    /// The decoded JSONPatch of a mutating webhook.
    pub patch: Option<json_patch::Patch>,
    pub warnings: Vec<String>,
}

impl Verdict {
    /// Reads an AdmissionReview response for request `uid` from `webhook`.
    pub fn read(webhook: &Webhook, body: &[u8], uid: &str) -> Result<Self, AdmissionError> {
        let review: Value = serde_json::from_slice(body).map_err(|e| {
            AdmissionError::Response(format!("the response is not an AdmissionReview: {e}"))
        })?;
        if review.get("apiVersion").and_then(Value::as_str) != Some("admission.k8s.io/v1")
            || review.get("kind").and_then(Value::as_str) != Some("AdmissionReview")
        {
            return Err(AdmissionError::Response(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview".into(),
            ));
        }
        let Some(response) = review.get("response") else {
            return Err(AdmissionError::Response(
                "webhook response was absent".into(),
            ));
        };
        let got = response
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if got != uid {
            return Err(AdmissionError::Response(format!(
                "expected response.uid=\"{uid}\", got \"{got}\""
            )));
        }
        let allowed = response
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let patch = match response.get("patch").and_then(Value::as_str) {
            None | Some("") => None,
            Some(b64) => {
                if webhook.kind == WebhookKind::Validating {
                    return Err(AdmissionError::Response(
                        "validating webhook may not return a patch".into(),
                    ));
                }
                match response.get("patchType").and_then(Value::as_str) {
                    Some("JSONPatch") => {}
                    other => {
                        return Err(AdmissionError::Response(format!(
                            "webhook returned a patch with patchType {:?}; only \"JSONPatch\" is supported",
                            other.unwrap_or_default()
                        )));
                    }
                }
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| {
                        AdmissionError::Response(format!("the patch is not base64: {e}"))
                    })?;
                Some(serde_json::from_slice(&raw).map_err(|e| {
                    AdmissionError::Response(format!("the patch is not a JSONPatch: {e}"))
                })?)
            }
        };
        let warnings = response
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Self {
            allowed,
            status: response.get("status").cloned(),
            patch,
            warnings,
        })
    }
}

/// The error of a denial by `webhook`, as kube-apiserver returns it: `(code, reason,
/// message)`. The code is the webhook's when it is 400 or more, else 400.
pub fn denial(webhook: &str, status: Option<&Value>) -> (u16, String, String) {
    let field = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400);
    let reason = field("reason");
    let message = field("message");
    let denied = format!("admission webhook \"{webhook}\" denied the request");
    let message = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    (code, reason, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matching::{Operation, UserInfo};
    use crate::webhook::webhooks_of;

    fn hook(kind: WebhookKind) -> Webhook {
        let config = json!({"metadata": {"name": "c"}, "webhooks": [{
            "name": "h.example.com",
            "clientConfig": {"url": "https://127.0.0.1/"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }]});
        webhooks_of(kind, &config).unwrap().remove(0)
    }

    fn attrs() -> Attributes {
        Attributes {
            operation: Operation::Update,
            group: "example.com".into(),
            version: "v2".into(),
            resource: "widgets".into(),
            subresource: "status".into(),
            kind_group: "example.com".into(),
            kind_version: "v2".into(),
            kind: "Widget".into(),
            namespaced: true,
            namespace: "ns".into(),
            name: "w".into(),
            object: Some(json!({"apiVersion": "example.com/v2", "kind": "Widget"})),
            old_object: None,
            dry_run: true,
            user: UserInfo {
                username: "alice".into(),
                groups: vec!["devs".into()],
                ..Default::default()
            },
            options: json!({"fieldManager": "kubectl"}),
        }
    }

    #[test]
    fn request_carries_everything_and_converts_for_equivalent_matches() {
        let r = review_request(&attrs(), &RuleMatch::Equivalent("v1".into()), "u-1");
        let req = &r["request"];
        assert_eq!(r["kind"], "AdmissionReview");
        assert_eq!(req["uid"], "u-1");
        assert_eq!(req["operation"], "UPDATE");
        assert_eq!(req["kind"]["version"], "v1");
        assert_eq!(req["requestKind"]["version"], "v2");
        assert_eq!(req["object"]["apiVersion"], "example.com/v1");
        assert_eq!(req["oldObject"], Value::Null);
        assert_eq!(req["subResource"], "status");
        assert_eq!(req["namespace"], "ns");
        assert_eq!(req["dryRun"], true);
        assert_eq!(req["userInfo"]["username"], "alice");
        assert_eq!(req["options"]["kind"], "UpdateOptions");
        assert_eq!(req["options"]["fieldManager"], "kubectl");
    }

    fn response(body: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": body}),
        )
        .unwrap()
    }

    #[test]
    fn reads_patches_and_warnings() {
        let patch = json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]);
        let b64 = base64::engine::general_purpose::STANDARD.encode(patch.to_string());
        let v = Verdict::read(
            &hook(WebhookKind::Mutating),
            &response(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": b64, "warnings": ["careful"]})),
            "u",
        )
        .unwrap();
        assert!(v.allowed);
        assert_eq!(v.warnings, vec!["careful".to_string()]);
        let mut obj = json!({"metadata": {}});
        json_patch::patch(&mut obj, &v.patch.unwrap()).unwrap();
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
    }

    #[test]
    fn rejects_bad_answers() {
        let m = hook(WebhookKind::Mutating);
        let wrong_uid = Verdict::read(&m, &response(json!({"uid": "x", "allowed": true})), "u");
        assert!(
            matches!(wrong_uid, Err(AdmissionError::Response(m)) if m.contains("response.uid"))
        );
        assert!(Verdict::read(&m, b"nonsense", "u").is_err());
        let no_type = Verdict::read(
            &m,
            &response(json!({"uid": "u", "allowed": true, "patch": "W10="})),
            "u",
        );
        assert!(no_type.is_err());
        let validating_patch = Verdict::read(
            &hook(WebhookKind::Validating),
            &response(
                json!({"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": "W10="}),
            ),
            "u",
        );
        assert!(validating_patch.is_err());
    }

    #[test]
    fn denials_read_as_kube_apiservers() {
        assert_eq!(
            denial(
                "deny.example.com",
                Some(&json!({"code": 403, "message": "name is reserved"}))
            ),
            (
                403,
                String::new(),
                "admission webhook \"deny.example.com\" denied the request: name is reserved"
                    .into()
            )
        );
        assert_eq!(
            denial("d", Some(&json!({"code": 200, "reason": "NoWay"}))),
            (
                400,
                "NoWay".into(),
                "admission webhook \"d\" denied the request: NoWay".into()
            )
        );
        assert_eq!(
            denial("d", None).2,
            "admission webhook \"d\" denied the request without explanation"
        );
    }
}
