//! The CSR signer of `kubernetes.io/kube-apiserver-client`, as kube-controller-manager's
//! csrsigning controller runs it: it follows the CertificateSigningRequests, and for each one
//! that is Approved (not Denied, not Failed), addressed to this signer and without a
//! certificate yet, it issues a client certificate from the host's cluster CA (subject CN and
//! O from the request, client-auth usage) and writes it to `status.certificate` through the
//! `status` subresource. Requests this signer cannot honour (usages other than `client auth`,
//! `digital signature` and `key encipherment`, or without `client auth`; a request it cannot
//! sign) get a `Failed` condition (reason `SignerValidationFailure`) instead. Other signers'
//! requests are left alone.
//!
//! ```text
//!  storage watch (csr) -> decide (pure) -> Sign  -> CA -> status.certificate   (status write)
//!                                       -> Fail  ------> Failed condition     (status write)
//!                                       -> Skip
//! ```
//!
//! Why it runs inside the host API server process rather than in the controller-manager: the
//! host holds the cluster CA key (it generated it and signs its own serving and admin
//! certificates with it), and the certificates issued here are exactly those the host's
//! client-certificate authentication trusts. Running it elsewhere would mean handing the CA
//! key to another process. Its writes go through the same REST semantics the API applies
//! (status subresource, CSR validation, optimistic concurrency), in-process and without
//! authorization, as the server's own bootstrap writes do. With several host replicas on one
//! etcd each runs a signer; a replica that loses the write race gets a conflict and finds the
//! certificate already issued.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use chrono::{DateTime, SecondsFormat, Utc};
use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::informer::{Handler, Informer};
use flotilla_generic_store::objects::{Objects, WriteOptions, collection_prefix};
use flotilla_generic_store::request::FieldValidation;
use flotilla_pki::{CertificateAuthority, CertificateRequest, SigningProfile};
use flotilla_storage::{EventType, StoredObject, WatchEvent};
use serde_json::{Value, json};

/// The signer name served here.
pub const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The field manager of the signer's status writes.
const FIELD_MANAGER: &str = "flotilla-csr-signer";
/// Certificates start this long before they are issued (clock skew between machines).
const BACKDATE: chrono::Duration = chrono::Duration::minutes(5);
/// Below this validity the end is not backdated too (kube: 5 minutes is ~1% of 8 hours).
const SHORT: chrono::Duration = chrono::Duration::hours(8);
/// The shortest validity issued, whatever was asked (twice the backdating).
const MIN_DURATION: chrono::Duration = chrono::Duration::minutes(10);
/// How long a failed write waits before the request is looked at again.
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// Settings of the signer.
#[derive(Debug, Clone)]
pub struct SignerOptions {
    /// The longest validity issued (kube's `--cluster-signing-duration`); a request's
    /// `spec.expirationSeconds` may only shorten it.
    pub max_duration: Duration,
}

impl Default for SignerOptions {
    fn default() -> Self {
        Self {
            max_duration: Duration::from_secs(365 * 24 * 3600),
        }
    }
}

/// What to do with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing for this signer to do (not approved, decided already, another signer, issued).
    Skip(&'static str),
    /// Mark the request `Failed` with this message.
    Fail(String),
    /// Issue a certificate for the request with this profile.
    Sign {
        request: Box<CertificateRequest>,
        profile: SigningProfile,
    },
}

fn has_condition(csr: &Value, t: &str) -> bool {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == t && c["status"] == "True")
}

/// The usages kube's signer accepts for client certificates: `client auth` required,
/// `digital signature` and `key encipherment` optional, nothing else.
fn check_client_usages(usages: &[String]) -> Result<(), String> {
    let mut client_auth = false;
    for usage in usages {
        match usage.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(format!("invalid usage for client certificate: {other}")),
        }
    }
    if !client_auth {
        return Err("missing required usage for client certificate: client auth".into());
    }
    Ok(())
}

/// The validity of a certificate issued at `now`: the requested duration (at least ten
/// minutes) capped at `max`, starting five minutes early; long-lived certificates end five
/// minutes early too, as kube's signer does.
pub fn validity(
    expiration_seconds: Option<i64>,
    max: Duration,
    now: DateTime<Utc>,
) -> (DateTime<Utc>, DateTime<Utc>) {
    let max = chrono::Duration::from_std(max).unwrap_or(chrono::Duration::days(365));
    let ttl = match expiration_seconds {
        None => max,
        Some(s) => chrono::Duration::try_seconds(s)
            .unwrap_or(max)
            .clamp(MIN_DURATION, max.max(MIN_DURATION)),
    };
    let not_after = if ttl < SHORT {
        now + ttl
    } else {
        now + ttl - BACKDATE
    };
    (now - BACKDATE, not_after)
}

/// Decides what the signer does with `csr` (a CertificateSigningRequest as JSON) at `now`.
pub fn decide(csr: &Value, options: &SignerOptions, now: DateTime<Utc>) -> Decision {
    if !has_condition(csr, "Approved") || has_condition(csr, "Denied") {
        return Decision::Skip("not approved");
    }
    if has_condition(csr, "Failed") {
        return Decision::Skip("failed");
    }
    if csr.pointer("/spec/signerName").and_then(Value::as_str) != Some(KUBE_APISERVER_CLIENT_SIGNER)
    {
        return Decision::Skip("another signer");
    }
    if csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty())
    {
        return Decision::Skip("issued");
    }
    let pem = match csr
        .pointer("/spec/request")
        .and_then(Value::as_str)
        .map(|b| base64::engine::general_purpose::STANDARD.decode(b))
    {
        Some(Ok(pem)) => pem,
        _ => return Decision::Fail("spec.request is not base64 data".into()),
    };
    let request = match flotilla_pki::parse_certificate_request(&pem) {
        Ok(r) => r,
        Err(e) => return Decision::Fail(format!("unable to parse csr: {e}")),
    };
    let usages: Vec<String> = csr
        .pointer("/spec/usages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    if let Err(e) = check_client_usages(&usages) {
        return Decision::Fail(e);
    }
    // A client certificate without a CN authenticates nobody (kube would sign it anyway).
    if request.common_name.as_deref().is_none_or(str::is_empty) {
        return Decision::Fail(
            "the request's subject has no common name (the user a client certificate names)".into(),
        );
    }
    let expiration = csr
        .pointer("/spec/expirationSeconds")
        .and_then(Value::as_i64);
    let (not_before, not_after) = validity(expiration, options.max_duration, now);
    Decision::Sign {
        request: Box::new(request),
        profile: SigningProfile {
            usages,
            not_before,
            not_after,
        },
    }
}

/// Why handling one request did not finish (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum SignerError {
    #[error("writing the status of CSR {name}: {message}")]
    WriteStatus { name: String, message: String },
}

/// Starts the signer over the server's storage, in the server's background tasks (it stops
/// with them); false when the server does not serve CSRs.
pub fn start(server: Arc<ApiServer>, ca: CertificateAuthority, options: SignerOptions) -> bool {
    let Some(def) = server
        .registry
        .get("certificates.k8s.io", "v1", "certificatesigningrequests")
    else {
        return false;
    };
    let prefix = collection_prefix(&def, None);
    let informer = Informer::new(server.storage.clone(), prefix).with_backoff(RETRY_AFTER);
    let tasks = server.tasks.clone();
    let signer = SignerSync {
        signer: Signer {
            server,
            def,
            ca,
            options,
        },
        retry: BTreeSet::new(),
    };
    let token = tasks.token();
    tasks.spawn("csr-signer", async move {
        informer.run(signer, token).await;
    })
}

struct Signer {
    server: Arc<ApiServer>,
    def: Arc<ResourceDef>,
    ca: CertificateAuthority,
    options: SignerOptions,
}

/// Handles every listed request and each change; requests whose write failed are looked at
/// again with a re-list after [`RETRY_AFTER`].
struct SignerSync {
    signer: Signer,
    /// Requests whose handling failed since the last list.
    retry: BTreeSet<String>,
}

impl Handler for SignerSync {
    async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
        self.retry.clear();
        for obj in &items {
            self.signer
                .handle_logged(&obj.value(), &mut self.retry)
                .await;
        }
    }

    async fn changed(&mut self, event: WatchEvent) {
        if event.event_type != EventType::Deleted {
            self.signer
                .handle_logged(&event.object.value(), &mut self.retry)
                .await;
        }
    }

    fn relist_after(&self) -> Option<Duration> {
        (!self.retry.is_empty()).then_some(RETRY_AFTER)
    }
}

impl Signer {
    fn objects(&self) -> Objects<'_> {
        Objects::new(&self.def, &self.server.storage)
    }

    async fn handle_logged(&self, csr: &Value, retry: &mut BTreeSet<String>) {
        let name = csr
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Err(e) = self.handle(csr, &name).await {
            tracing::warn!(csr = %name, error = %e, "CSR signer: will retry");
            retry.insert(name);
        }
    }

    async fn handle(&self, csr: &Value, name: &str) -> Result<(), SignerError> {
        let mut status = csr.get("status").cloned().unwrap_or_else(|| json!({}));
        match decide(csr, &self.options, Utc::now()) {
            Decision::Skip(_) => return Ok(()),
            Decision::Sign { request, profile } => match self.ca.sign_request(&request, &profile) {
                Ok(pem) => {
                    tracing::info!(csr = %name, user = ?request.common_name, groups = ?request.organizations, not_after = %profile.not_after, "CSR signer: issued a client certificate");
                    status["certificate"] =
                        json!(base64::engine::general_purpose::STANDARD.encode(pem));
                }
                Err(e) => add_failed(&mut status, &e.to_string()),
            },
            Decision::Fail(message) => {
                tracing::info!(csr = %name, %message, "CSR signer: request refused");
                add_failed(&mut status, &message);
            }
        }
        let mut updated = csr.clone();
        updated["status"] = status;
        let opts = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            field_validation: FieldValidation::Strict,
            dry_run: false,
        };
        match self
            .objects()
            .update(None, name, updated, Some("status"), &opts)
            .await
        {
            Ok(_) => Ok(()),
            // Changed or deleted meanwhile: the watch brings the newer version.
            Err(e) if e.code == 409 || e.code == 404 => Ok(()),
            Err(e) => Err(SignerError::WriteStatus {
                name: name.to_string(),
                message: e.message,
            }),
        }
    }
}

/// Appends the `Failed` condition kube's signer writes.
fn add_failed(status: &mut Value, message: &str) {
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
    let condition = json!({
        "type": "Failed",
        "status": "True",
        "reason": "SignerValidationFailure",
        "message": message,
        "lastUpdateTime": now,
    });
    match status.get_mut("conditions").and_then(Value::as_array_mut) {
        Some(list) => list.push(condition),
        None => status["conditions"] = json!([condition]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request_b64(cn: Option<&str>) -> String {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::default();
        params.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, cn);
        }
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "agents");
        let pem = params.serialize_request(&key).unwrap().pem().unwrap();
        base64::engine::general_purpose::STANDARD.encode(pem)
    }

    fn csr(conditions: &[&str]) -> Value {
        let conditions: Vec<Value> = conditions
            .iter()
            .map(|t| json!({"type": t, "status": "True"}))
            .collect();
        json!({
            "metadata": {"name": "a"},
            "spec": {"request": request_b64(Some("agent-1")), "signerName": KUBE_APISERVER_CLIENT_SIGNER,
                     "usages": ["client auth", "digital signature", "key encipherment"]},
            "status": {"conditions": conditions},
        })
    }

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn decision(obj: &Value) -> Decision {
        decide(obj, &SignerOptions::default(), now())
    }

    #[test]
    fn only_approved_undecided_unissued_requests_of_this_signer_are_signed() {
        assert_eq!(decision(&csr(&[])), Decision::Skip("not approved"));
        assert_eq!(
            decision(&csr(&["Approved", "Denied"])),
            Decision::Skip("not approved")
        );
        assert_eq!(
            decision(&csr(&["Approved", "Failed"])),
            Decision::Skip("failed")
        );
        let mut other = csr(&["Approved"]);
        other["spec"]["signerName"] = json!("example.com/other");
        assert_eq!(decision(&other), Decision::Skip("another signer"));
        let mut issued = csr(&["Approved"]);
        issued["status"]["certificate"] = json!("LS0t");
        assert_eq!(decision(&issued), Decision::Skip("issued"));
        // An Approved condition that is not True does not count.
        let mut unsure = csr(&[]);
        unsure["status"]["conditions"] = json!([{"type": "Approved", "status": "Unknown"}]);
        assert_eq!(decision(&unsure), Decision::Skip("not approved"));

        let Decision::Sign { request, profile } = decision(&csr(&["Approved"])) else {
            panic!("expected a signature");
        };
        assert_eq!(request.common_name.as_deref(), Some("agent-1"));
        assert_eq!(request.organizations, ["agents"]);
        assert_eq!(
            profile.usages,
            ["client auth", "digital signature", "key encipherment"]
        );
        // No expirationSeconds: the maximum, a year, backdated by five minutes at both ends.
        assert_eq!(profile.not_before, now() - chrono::Duration::minutes(5));
        assert_eq!(
            profile.not_after,
            now() + chrono::Duration::days(365) - chrono::Duration::minutes(5)
        );
    }

    #[test]
    fn usages_other_than_client_ones_fail_the_request() {
        let mut serving = csr(&["Approved"]);
        serving["spec"]["usages"] = json!(["client auth", "server auth"]);
        assert_eq!(
            decision(&serving),
            Decision::Fail("invalid usage for client certificate: server auth".into())
        );
        let mut no_client = csr(&["Approved"]);
        no_client["spec"]["usages"] = json!(["digital signature"]);
        assert_eq!(
            decision(&no_client),
            Decision::Fail("missing required usage for client certificate: client auth".into())
        );
        let mut no_cn = csr(&["Approved"]);
        no_cn["spec"]["request"] = json!(request_b64(None));
        assert!(matches!(decision(&no_cn), Decision::Fail(m) if m.contains("no common name")));
    }

    #[test]
    fn durations_are_capped_and_floored() {
        let max = Duration::from_secs(24 * 3600);
        // Shorter than asked maximum, short-lived: not backdated at the end.
        let (nb, na) = validity(Some(3600), max, now());
        assert_eq!(nb, now() - chrono::Duration::minutes(5));
        assert_eq!(na, now() + chrono::Duration::hours(1));
        // More than the maximum: the maximum (long-lived: end backdated).
        let (_, na) = validity(Some(10 * 24 * 3600), max, now());
        assert_eq!(
            na,
            now() + chrono::Duration::hours(24) - chrono::Duration::minutes(5)
        );
        // Less than ten minutes (only stored data can say so): ten minutes.
        let (_, na) = validity(Some(60), max, now());
        assert_eq!(na, now() + chrono::Duration::minutes(10));
    }

    #[test]
    fn failed_condition_is_appended() {
        let mut status = json!({"conditions": [{"type": "Approved", "status": "True"}]});
        add_failed(&mut status, "nope");
        let c = &status["conditions"][1];
        assert_eq!(c["type"], "Failed");
        assert_eq!(c["reason"], "SignerValidationFailure");
        assert_eq!(c["message"], "nope");
        let mut empty = json!({});
        add_failed(&mut empty, "x");
        assert_eq!(empty["conditions"].as_array().unwrap().len(), 1);
    }
}
