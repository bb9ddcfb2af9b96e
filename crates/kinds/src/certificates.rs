//! certificates.k8s.io/v1 CertificateSigningRequest, with kube-apiserver's rules:
//!
//! - create records who asks ([`prepare_create`]: `spec.username`, `uid`, `groups`, `extra`
//!   from the requesting user, whatever the client sent) and starts with an empty status;
//! - validation ([`validate_csr`]): `spec.request` is a PEM `CERTIFICATE REQUEST` whose
//!   signature verifies, `signerName` is required and well formed, `usages` come from the
//!   known set without duplicates, `expirationSeconds` is at least 600, conditions have a type
//!   and a status (only `True` for Approved, Denied and Failed), Approved and Denied exclude
//!   each other, no type repeats, `status.certificate` holds only CERTIFICATE PEM blocks; on
//!   update Approved/Denied/Failed conditions are never removed and an issued certificate
//!   never changes. Problems already stored are tolerated, as kube does for old data;
//! - updates ([`prepare_update`]): the spec never changes after create; writes to the object
//!   keep its status (the generic `status` semantics), `status` writes keep the Approved and
//!   Denied conditions (only `approval` may add them), `approval` writes change only the
//!   conditions (a partial subresource on `.status.conditions`), and both stamp new
//!   conditions' `lastUpdateTime`/`lastTransitionTime`;
//! - writing `approval` also needs `approve` on `signers` of certificates.k8s.io named after
//!   the signer (or `<domain>/*`), as kube's CertificateApproval admission asks
//!   ([`approval_subresource`]).

use std::sync::Arc;

use chrono::{SecondsFormat, Utc};
use flotilla_apimachinery::{Cause, PartialSubresource, Permission, Requester};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use serde_json::{Map, Value, json};

use crate::field::{Errs, index, join};
use crate::kind::Ctx;

pub(crate) const GROUP: &str = "certificates.k8s.io";
/// The signer name v1 refuses (v1beta1's default).
const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";

/// The usages kube accepts, sorted as its error message lists them.
const USAGES: &[&str] = &[
    "any",
    "cert sign",
    "client auth",
    "code signing",
    "content commitment",
    "crl sign",
    "data encipherment",
    "decipher only",
    "digital signature",
    "email protection",
    "encipher only",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "key agreement",
    "key encipherment",
    "microsoft sgc",
    "netscape sgc",
    "ocsp signing",
    "s/mime",
    "server auth",
    "signing",
    "timestamping",
];

/// Condition types that may only be `True` when present.
const TRUE_ONLY: &[&str] = &["Approved", "Denied", "Failed"];

/// The longest domain part (a DNS-1123 subdomain) and path part of a signer name.
const MAX_SIGNER_DOMAIN: usize = 253;
const MAX_SIGNER_PATH: usize = 253 + 63 + 1;

/// The `approval` subresource: writes only `.status.conditions`, and its writers need
/// `approve` on the request's signer.
pub(crate) fn approval_subresource() -> PartialSubresource {
    PartialSubresource {
        name: "approval".into(),
        path: ".status.conditions".into(),
        permission: Some(Arc::new(approve_permission)),
    }
}

/// `approve` on `signers/<signerName>` or `signers/<domain>/*` (kube checks the stored
/// object, so a write cannot change the signer it is judged by).
fn approve_permission(stored: &Value) -> Option<Permission> {
    let signer = stored
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let domain = signer.split('/').next().unwrap_or_default();
    Some(Permission {
        verb: "approve".into(),
        group: GROUP.into(),
        resource: "signers".into(),
        names: vec![signer.to_string(), format!("{domain}/*")],
        message: format!("user not permitted to approve requests with signerName {signer:?}"),
    })
}

/// Records the requesting user in the spec (replacing whatever the client sent) and starts
/// with an empty status: nobody creates a pre-approved request.
pub(crate) fn prepare_create(obj: &mut Value, who: Option<&Requester<'_>>) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    root.insert("status".into(), json!({}));
    let spec = root
        .entry("spec")
        .or_insert_with(|| Value::Object(Map::new()));
    // A spec of the wrong JSON type is left for validation to reject.
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    for field in ["username", "uid", "groups", "extra"] {
        spec.remove(field);
    }
    let Some(who) = who else { return };
    spec.insert("username".into(), json!(who.name));
    if !who.uid.is_empty() {
        spec.insert("uid".into(), json!(who.uid));
    }
    if !who.groups.is_empty() {
        spec.insert("groups".into(), json!(who.groups));
    }
    if !who.extra.is_empty() {
        spec.insert("extra".into(), json!(who.extra));
    }
}

/// The update rules that depend on the path written (see the module docs).
pub(crate) fn prepare_update(
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) -> Vec<Cause> {
    let mut errs = Errs::default();
    if let Some(map) = new.as_object_mut() {
        match old.get("spec") {
            Some(spec) => {
                map.insert("spec".into(), spec.clone());
            }
            None => {
                map.remove("spec");
            }
        }
    }
    match subresource {
        Some("status") => {
            for t in ["Approved", "Denied"] {
                if !preserve_conditions(new, old, t) {
                    let (n, o) = (conditions_of(new, t).len(), conditions_of(old, t).len());
                    // Removals are reported by validation, for every path.
                    if n > o {
                        errs.forbidden(
                            "status.conditions",
                            &format!("updates may not add a condition of type {t:?}"),
                        );
                    }
                }
            }
            stamp_conditions(new, old);
        }
        Some("approval") => stamp_conditions(new, old),
        _ => {}
    }
    errs.into_causes()
}

fn conditions(obj: &Value) -> &[Value] {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn conditions_of<'a>(obj: &'a Value, t: &str) -> Vec<&'a Value> {
    conditions(obj)
        .iter()
        .filter(|c| c.get("type").and_then(Value::as_str) == Some(t))
        .collect()
}

/// Puts the stored conditions of type `t` back in place of the new ones when there are as
/// many; false (and nothing changed) when instances were added or removed.
fn preserve_conditions(new: &mut Value, old: &Value, t: &str) -> bool {
    let olds: Vec<Value> = conditions_of(old, t).into_iter().cloned().collect();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return olds.is_empty();
    };
    let slots: Vec<usize> = list
        .iter()
        .enumerate()
        .filter(|(_, c)| c.get("type").and_then(Value::as_str) == Some(t))
        .map(|(i, _)| i)
        .collect();
    if slots.len() != olds.len() {
        return false;
    }
    for (slot, value) in slots.into_iter().zip(olds) {
        list[slot] = value;
    }
    true
}

/// Fills `lastUpdateTime` where missing with now, and `lastTransitionTime` where missing with
/// the stored condition's of the same type and status, else now.
fn stamp_conditions(new: &mut Value, old: &Value) {
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
    let old_conditions = conditions(old).to_vec();
    let Some(list) = new
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let missing = |c: &Map<String, Value>, key: &str| c.get(key).is_none_or(Value::is_null);
    for c in list.iter_mut().filter_map(Value::as_object_mut) {
        if missing(c, "lastUpdateTime") {
            c.insert("lastUpdateTime".into(), json!(now));
        }
        if missing(c, "lastTransitionTime") {
            let earlier = old_conditions
                .iter()
                .filter_map(Value::as_object)
                .find(|o| {
                    o.get("type") == c.get("type")
                        && o.get("status") == c.get("status")
                        && !missing(o, "lastTransitionTime")
                })
                .and_then(|o| o.get("lastTransitionTime").cloned());
            c.insert(
                "lastTransitionTime".into(),
                earlier.unwrap_or_else(|| json!(now)),
            );
        }
    }
}

/// What stored data may already get wrong without failing every later update.
#[derive(Default)]
struct Tolerated {
    both_approved_and_denied: bool,
    legacy_signer: bool,
    duplicate_condition_types: bool,
    empty_condition_type: bool,
    arbitrary_certificate: bool,
    unknown_usages: bool,
    duplicate_usages: bool,
}

impl Tolerated {
    fn of(new: &CertificateSigningRequest, old: Option<&CertificateSigningRequest>) -> Self {
        let Some(old) = old else {
            return Self::default();
        };
        let types: Vec<&str> = typed_conditions(old).map(|c| c.type_.as_str()).collect();
        let usages = old.spec.usages.as_deref().unwrap_or_default();
        let certificate = |c: &CertificateSigningRequest| {
            c.status
                .as_ref()
                .and_then(|s| s.certificate.as_ref())
                .map(|b| b.0.clone())
                .unwrap_or_default()
        };
        let old_cert = certificate(old);
        Self {
            both_approved_and_denied: types.contains(&"Approved") && types.contains(&"Denied"),
            legacy_signer: old.spec.signer_name == LEGACY_UNKNOWN_SIGNER,
            duplicate_condition_types: has_duplicates(&types),
            empty_condition_type: types.contains(&""),
            arbitrary_certificate: certificate(new) == old_cert
                || certificate_problem(&old_cert).is_some(),
            unknown_usages: usages.iter().any(|u| !USAGES.contains(&u.as_str())),
            duplicate_usages: has_duplicates(usages),
        }
    }
}

fn has_duplicates<T: PartialEq>(items: &[T]) -> bool {
    items
        .iter()
        .enumerate()
        .any(|(i, a)| items[..i].contains(a))
}

fn typed_conditions(
    csr: &CertificateSigningRequest,
) -> impl Iterator<Item = &CertificateSigningRequestCondition> {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
}

pub(crate) fn validate_csr(ctx: &Ctx<'_, CertificateSigningRequest>, errs: &mut Errs) {
    let csr = ctx.new;
    let old = ctx.old.map(|(o, _)| o);
    let tolerated = Tolerated::of(csr, old);
    let spec = &csr.spec;

    if let Err(e) = flotilla_pki::parse_certificate_request(&spec.request.0) {
        errs.invalid_shown("spec.request", "\"<request data>\"", &e.to_string());
    }
    let usages = spec.usages.as_deref().unwrap_or_default();
    if usages.is_empty() {
        errs.required("spec.usages", "");
    }
    for (i, usage) in usages.iter().enumerate() {
        let at = index("spec.usages", i);
        if !tolerated.unknown_usages && !USAGES.contains(&usage.as_str()) {
            errs.not_supported(&at, usage, USAGES);
        }
        if !tolerated.duplicate_usages && usages[..i].contains(usage) {
            errs.duplicate(&at, &Value::from(usage.as_str()));
        }
    }
    if !tolerated.legacy_signer && spec.signer_name == LEGACY_UNKNOWN_SIGNER {
        errs.invalid(
            "spec.signerName",
            &Value::from(spec.signer_name.as_str()),
            "the legacy signerName is not allowed via this API version",
        );
    } else {
        validate_signer_name("spec.signerName", &spec.signer_name, errs);
    }
    if let Some(seconds) = spec.expiration_seconds.filter(|s| *s < 600) {
        errs.invalid(
            "spec.expirationSeconds",
            &Value::from(seconds),
            "may not specify a duration less than 600 seconds (10 minutes)",
        );
    }
    validate_conditions(csr, &tolerated, errs);
    if !tolerated.arbitrary_certificate {
        let cert = csr
            .status
            .as_ref()
            .and_then(|s| s.certificate.as_ref())
            .map(|b| b.0.as_slice())
            .unwrap_or_default();
        if let Some(problem) = certificate_problem(cert) {
            errs.invalid_shown("status.certificate", "\"<certificate data>\"", &problem);
        }
    }

    if let Some(old) = old {
        for t in TRUE_ONLY {
            let count = |c: &CertificateSigningRequest| {
                typed_conditions(c).filter(|x| x.type_ == *t).count()
            };
            if count(csr) < count(old) {
                errs.forbidden(
                    "status.conditions",
                    &format!("updates may not remove a condition of type {t:?}"),
                );
            }
        }
        let cert = |c: &CertificateSigningRequest| {
            c.status
                .as_ref()
                .and_then(|s| s.certificate.as_ref())
                .map(|b| b.0.clone())
                .unwrap_or_default()
        };
        let (new_cert, old_cert) = (cert(csr), cert(old));
        if new_cert != old_cert && !old_cert.is_empty() {
            errs.forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            );
        }
    }
}

fn validate_conditions(csr: &CertificateSigningRequest, tolerated: &Tolerated, errs: &mut Errs) {
    let path = "status.conditions";
    let mut seen: Vec<&str> = Vec::new();
    let (mut approved, mut denied) = (false, false);
    for (i, c) in typed_conditions(csr).enumerate() {
        let at = index(path, i);
        let t = c.type_.as_str();
        if t.is_empty() && !tolerated.empty_condition_type {
            errs.required(&join(&at, "type"), "");
        }
        let allowed: &[&str] = if TRUE_ONLY.contains(&t) {
            &["True"]
        } else {
            &["False", "True", "Unknown"]
        };
        if c.status.is_empty() {
            errs.required(&join(&at, "status"), "");
        } else if !allowed.contains(&c.status.as_str()) {
            errs.not_supported(&join(&at, "status"), &c.status, allowed);
        }
        if !tolerated.both_approved_and_denied {
            let exclusive = match t {
                "Approved" => {
                    approved = true;
                    denied
                }
                "Denied" => {
                    denied = true;
                    approved
                }
                _ => false,
            };
            if exclusive {
                errs.invalid(
                    path,
                    &Value::from(t),
                    "Approved and Denied conditions are mutually exclusive",
                );
            }
        }
        if !tolerated.duplicate_condition_types {
            if seen.contains(&t) {
                errs.duplicate(&join(&at, "type"), &Value::from(t));
            }
            seen.push(t);
        }
    }
}

/// kube's signer name rule: `<domain>/<path>`, the domain made of DNS-1123 labels with at
/// least one dot, the path of DNS-1123 subdomains separated by dots.
fn validate_signer_name(field: &str, name: &str, errs: &mut Errs) {
    if name.is_empty() {
        errs.required(field, "");
        return;
    }
    let Some((domain, path)) = name.split_once('/').filter(|(_, p)| !p.contains('/')) else {
        errs.invalid(
            field,
            &Value::from(name),
            "must be a fully qualified domain and path of the form 'example.com/signer-name'",
        );
        return;
    };
    if domain.len() > MAX_SIGNER_DOMAIN {
        errs.too_long(field, MAX_SIGNER_DOMAIN);
    }
    let labels: Vec<&str> = domain.split('.').collect();
    for label in &labels {
        if let Err(m) = flotilla_apimachinery::names::is_dns1123_label(label) {
            errs.invalid(
                field,
                &Value::from(domain),
                &format!("validating label {label:?}: {m}"),
            );
            break;
        }
    }
    if labels.len() < 2 {
        errs.invalid(
            field,
            &Value::from(domain),
            "should be a domain with at least two segments separated by dots",
        );
    }
    for part in path.split('.') {
        if let Err(m) = flotilla_apimachinery::names::is_dns1123_subdomain(part) {
            errs.invalid(
                field,
                &Value::from(path),
                &format!("validating label {part:?}: {m}"),
            );
            break;
        }
    }
    if name.len() > MAX_SIGNER_DOMAIN + MAX_SIGNER_PATH + 1 {
        errs.too_long(field, MAX_SIGNER_DOMAIN + MAX_SIGNER_PATH + 1);
    }
}

/// Why `pem` is not a series of CERTIFICATE PEM blocks (empty is fine: not issued yet).
fn certificate_problem(pem: &[u8]) -> Option<String> {
    if pem.is_empty() {
        return None;
    }
    flotilla_pki::certificate_pem_problem(pem)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use base64::Engine;
    use flotilla_apimachinery::ResourceDef;
    use serde_json::{Value, json};

    use super::*;

    const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

    fn def() -> ResourceDef {
        crate::certificate_resources().remove(0)
    }

    fn b64(bytes: &[u8]) -> String {
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    fn request_pem(cn: &str) -> String {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.serialize_request(&key).unwrap().pem().unwrap()
    }

    fn csr(name: &str) -> Value {
        json!({
            "apiVersion": "certificates.k8s.io/v1",
            "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {
                "request": b64(request_pem("agent").as_bytes()),
                "signerName": CLIENT_SIGNER,
                "usages": ["client auth", "digital signature"],
            },
        })
    }

    /// `field: message` of every cause of validating `obj` (against `old` on updates).
    fn check(obj: &Value, old: Option<&Value>) -> Vec<String> {
        let v = (def().validate.unwrap())(obj, old);
        assert!(v.decode_error.is_none(), "{:?}", v.decode_error);
        v.causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn with(mut obj: Value, pointer: &str, value: Value) -> Value {
        let (parent, key) = pointer.rsplit_once('/').unwrap();
        obj.pointer_mut(parent).unwrap()[key] = value;
        obj
    }

    fn approved(obj: Value) -> Value {
        with(
            obj,
            "/status",
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "R"}]}),
        )
    }

    #[test]
    fn registration_matches_kube() {
        let d = def();
        assert_eq!(
            (d.group.as_str(), d.version.as_str(), d.plural.as_str()),
            ("certificates.k8s.io", "v1", "certificatesigningrequests")
        );
        assert!(!d.namespaced);
        assert_eq!(d.short_names, ["csr"]);
        assert!(d.has_status);
        assert_eq!(d.subresource_path("approval"), Some(".status.conditions"));
        let columns: Vec<&str> = d
            .printer
            .as_ref()
            .unwrap()
            .columns
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(
            columns,
            [
                "Name",
                "Age",
                "SignerName",
                "Requestor",
                "RequestedDuration",
                "Condition"
            ]
        );
        let schemas = d.openapi.as_ref().unwrap();
        assert_eq!(
            schemas.root,
            "io.k8s.api.certificates.v1.CertificateSigningRequest"
        );
    }

    #[test]
    fn a_good_request_is_valid() {
        assert_eq!(check(&csr("a"), None), Vec::<String>::new());
        // Any name kube accepts for CSRs, e.g. with colons.
        assert_eq!(
            check(&with(csr("a"), "/metadata/name", json!("node-csr:x")), None),
            Vec::<String>::new()
        );
    }

    #[test]
    fn the_request_must_be_a_signed_pem_csr() {
        let not_pem = with(csr("a"), "/spec/request", json!(b64(b"hello")));
        assert_eq!(
            check(&not_pem, None),
            [
                "spec.request: Invalid value: \"<request data>\": PEM block type must be CERTIFICATE REQUEST"
            ]
        );
        // A certificate is not a request.
        let ca = flotilla_pki::CertificateAuthority::generate("ca").unwrap();
        let cert = with(
            csr("a"),
            "/spec/request",
            json!(b64(ca.cert_pem().as_bytes())),
        );
        assert_eq!(check(&cert, None).len(), 1);
        // A request whose signature does not verify.
        let pem = request_pem("x");
        let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let mut der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .unwrap();
        let last = der.len() - 1;
        der[last] ^= 1;
        let tampered = format!(
            "-----BEGIN CERTIFICATE REQUEST-----\n{}\n-----END CERTIFICATE REQUEST-----\n",
            b64(&der)
        );
        let causes = check(
            &with(csr("a"), "/spec/request", json!(b64(tampered.as_bytes()))),
            None,
        );
        assert_eq!(causes.len(), 1);
        assert!(
            causes[0].contains("signature does not verify"),
            "{causes:?}"
        );
    }

    #[test]
    fn signer_names() {
        let cases: &[(&str, &str)] = &[
            ("", "spec.signerName: Required value"),
            (
                "nodomain",
                "spec.signerName: Invalid value: \"nodomain\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
            ),
            (
                "a/b/c",
                "spec.signerName: Invalid value: \"a/b/c\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
            ),
            (
                "example/signer",
                "spec.signerName: Invalid value: \"example\": should be a domain with at least two segments separated by dots",
            ),
            (
                "Example.com/signer",
                "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ),
            (
                "kubernetes.io/legacy-unknown",
                "spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version",
            ),
        ];
        for (name, expected) in cases {
            let obj = with(csr("a"), "/spec/signerName", json!(name));
            assert_eq!(check(&obj, None), [*expected], "{name}");
        }
        let missing = {
            let mut o = csr("a");
            o["spec"].as_object_mut().unwrap().remove("signerName");
            o
        };
        assert_eq!(check(&missing, None), ["spec.signerName: Required value"]);
        for ok in ["example.com/x", "a.b.c/my.signer-1", CLIENT_SIGNER] {
            let obj = with(csr("a"), "/spec/signerName", json!(ok));
            assert_eq!(check(&obj, None), Vec::<String>::new(), "{ok}");
        }
    }

    #[test]
    fn usages_and_duration() {
        let none = with(csr("a"), "/spec/usages", json!([]));
        assert_eq!(check(&none, None), ["spec.usages: Required value"]);
        let bad = with(
            csr("a"),
            "/spec/usages",
            json!(["client auth", "flying", "client auth"]),
        );
        let causes = check(&bad, None);
        assert_eq!(causes.len(), 2, "{causes:?}");
        assert!(
            causes[0].starts_with(
                "spec.usages[1]: Unsupported value: \"flying\": supported values: \"any\", \"cert sign\""
            ),
            "{causes:?}"
        );
        assert_eq!(
            causes[1],
            "spec.usages[2]: Duplicate value: \"client auth\""
        );
        let short = with(csr("a"), "/spec/expirationSeconds", json!(599));
        assert_eq!(
            check(&short, None),
            [
                "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"
            ]
        );
        let ten_minutes = with(csr("a"), "/spec/expirationSeconds", json!(600));
        assert_eq!(check(&ten_minutes, None), Vec::<String>::new());
    }

    #[test]
    fn condition_rules() {
        let conds = |c: Value| with(csr("a"), "/status", json!({"conditions": c}));
        assert_eq!(
            check(
                &conds(
                    json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}])
                ),
                None
            ),
            [
                "status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
            ]
        );
        assert_eq!(
            check(
                &conds(json!([{"type": "Approved", "status": "False"}])),
                None
            ),
            [
                "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""
            ]
        );
        assert_eq!(
            check(
                &conds(json!([{"type": "Custom", "status": "Maybe"}, {"type": "", "status": ""}])),
                None
            ),
            [
                "status.conditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\"",
                "status.conditions[1].type: Required value",
                "status.conditions[1].status: Required value",
            ]
        );
        assert_eq!(
            check(
                &conds(
                    json!([{"type": "Failed", "status": "True"}, {"type": "Failed", "status": "True"}])
                ),
                None
            ),
            ["status.conditions[1].type: Duplicate value: \"Failed\""]
        );
        let bad_cert = with(csr("a"), "/status", json!({"certificate": b64(b"junk")}));
        assert_eq!(
            check(&bad_cert, None),
            [
                "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
            ]
        );
    }

    #[test]
    fn updates_never_remove_decisions_nor_change_a_certificate() {
        let old = approved(csr("a"));
        let removed = with(old.clone(), "/status/conditions", json!([]));
        assert_eq!(
            check(&removed, Some(&old)),
            [
                "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
            ]
        );
        let ca = flotilla_pki::CertificateAuthority::generate("ca").unwrap();
        let issued = with(
            old.clone(),
            "/status/certificate",
            json!(b64(ca.cert_pem().as_bytes())),
        );
        assert_eq!(check(&issued, Some(&old)), Vec::<String>::new());
        let other = flotilla_pki::CertificateAuthority::generate("other").unwrap();
        let changed = with(
            issued.clone(),
            "/status/certificate",
            json!(b64(other.cert_pem().as_bytes())),
        );
        assert_eq!(
            check(&changed, Some(&issued)),
            ["status.certificate: Forbidden: updates may not modify existing certificate content"]
        );
        // Stored data that already breaks a rule does not block later updates.
        let both = with(
            csr("a"),
            "/status",
            json!({"conditions": [{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}),
        );
        let labelled = with(both.clone(), "/metadata/labels", json!({"a": "b"}));
        assert_eq!(check(&labelled, Some(&both)), Vec::<String>::new());
    }

    #[test]
    fn create_records_the_requester_over_what_the_client_sent() {
        let prepare = def().prepare_create.unwrap();
        let mut obj = with(csr("a"), "/spec/username", json!("forged"));
        obj["spec"]["groups"] = json!(["system:masters"]);
        obj["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
        let groups = vec!["agents".to_string(), "system:authenticated".to_string()];
        let extra = BTreeMap::from([("scopes".to_string(), vec!["a".to_string()])]);
        let who = Requester {
            name: "alice",
            uid: "u-1",
            groups: &groups,
            extra: &extra,
        };
        prepare(&mut obj, Some(&who));
        assert_eq!(obj["spec"]["username"], "alice");
        assert_eq!(obj["spec"]["uid"], "u-1");
        assert_eq!(obj["spec"]["groups"], json!(groups));
        assert_eq!(obj["spec"]["extra"], json!({"scopes": ["a"]}));
        assert_eq!(obj["status"], json!({}));
        // Empty uid and groups are left out.
        let no_extra = BTreeMap::new();
        let who = Requester {
            name: "bob",
            uid: "",
            groups: &[],
            extra: &no_extra,
        };
        let mut obj = with(csr("b"), "/spec/uid", json!("forged"));
        prepare(&mut obj, Some(&who));
        assert_eq!(obj["spec"]["username"], "bob");
        assert!(obj["spec"].get("uid").is_none());
        assert!(obj["spec"].get("groups").is_none());
        // Without a user (the server's own writes) nobody is claimed.
        let mut obj = with(csr("c"), "/spec/username", json!("forged"));
        prepare(&mut obj, None);
        assert!(obj["spec"].get("username").is_none());
        // A spec of the wrong type is left for validation.
        let mut bad = json!({"spec": "nope"});
        prepare(&mut bad, Some(&who));
        assert_eq!(bad["spec"], "nope");
    }

    #[test]
    fn updates_keep_the_spec_and_status_keeps_the_decision() {
        let prepare = def().prepare_update.unwrap();
        let old = approved(csr("a"));
        // Any path: the spec stays.
        let mut new = with(old.clone(), "/spec/signerName", json!("example.com/other"));
        assert!(prepare(&mut new, &old, None).is_empty());
        assert_eq!(new["spec"], old["spec"]);

        // status: an edited Approved condition is put back, others may change and get stamped.
        let mut new = with(
            old.clone(),
            "/status/conditions",
            json!([{"type": "Approved", "status": "True", "reason": "Edited"}, {"type": "Failed", "status": "True"}]),
        );
        assert!(prepare(&mut new, &old, Some("status")).is_empty());
        assert_eq!(new["status"]["conditions"][0]["reason"], "R");
        let failed = &new["status"]["conditions"][1];
        assert!(failed["lastUpdateTime"].is_string(), "{failed}");
        assert!(failed["lastTransitionTime"].is_string(), "{failed}");

        // status may not add a decision.
        let pending = csr("p");
        let mut new = approved(pending.clone());
        let causes = prepare(&mut new, &pending, Some("status"));
        assert_eq!(
            causes[0].message,
            "Forbidden: updates may not add a condition of type \"Approved\""
        );

        // approval may; an unchanged condition keeps its transition time.
        let old = with(
            csr("a"),
            "/status",
            json!({"conditions": [{"type": "Custom", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}),
        );
        let mut new = with(
            old.clone(),
            "/status/conditions",
            json!([{"type": "Custom", "status": "True"}, {"type": "Approved", "status": "True"}]),
        );
        assert!(prepare(&mut new, &old, Some("approval")).is_empty());
        assert_eq!(
            new["status"]["conditions"][0]["lastTransitionTime"],
            "2024-01-01T00:00:00Z"
        );
        assert!(new["status"]["conditions"][1]["lastTransitionTime"].is_string());
    }

    #[test]
    fn approval_needs_approve_on_the_signer_or_its_domain() {
        let p = approve_permission(&csr("a")).unwrap();
        assert_eq!(
            (p.verb.as_str(), p.group.as_str(), p.resource.as_str()),
            ("approve", "certificates.k8s.io", "signers")
        );
        assert_eq!(p.names, [CLIENT_SIGNER, "kubernetes.io/*"]);
        assert_eq!(
            p.message,
            "user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""
        );
    }
}
