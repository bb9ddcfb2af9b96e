//! Dynamic admission on the write path: the `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` objects in this server's storage, the HTTPS calls to their
//! webhooks, and the order kube-apiserver keeps (mutating webhooks one after another, in
//! configuration-name order, patches applied as they come, `IfNeeded` webhooks called once
//! more when a later one changed the object; then validating webhooks, all at once).
//!
//! Matching and the AdmissionReview itself are [`flotilla_admission`]'s; this module does
//! the IO: reading configurations (parsed once per resourceVersion, read on every write so a
//! new configuration applies to the next request), the namespace's labels for
//! `namespaceSelector`, resolving `clientConfig.service` through the stored Service (an
//! `ExternalName` or a cluster IP, with the certificate checked for `<name>.<namespace>.svc`
//! as kube-apiserver does), and pooled TLS clients per webhook.
//!
//! Writes to the webhook configurations themselves are never admitted by webhooks (so a
//! broken webhook cannot lock its own configuration), as in kube-apiserver.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use flotilla_admission::{
    AdmissionError, Attributes, ClientConfig, FailurePolicy, RuleMatch, Verdict, Webhook,
    WebhookKind, denial, review_request, webhooks_of,
};
use flotilla_apimachinery::ApiError;
use flotilla_storage::{Revision, Storage};
use http::{Uri, header};
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::TokioExecutor;
use parking_lot::Mutex;
use serde_json::Value;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The versions a resource is served at: webhooks match a request's version against them
/// (`matchPolicy: Equivalent`). The server's registry answers.
pub trait ServedVersions: Send + Sync {
    /// The versions `resource` of `group` is served at.
    fn served_versions(&self, group: &str, resource: &str) -> Vec<String>;
}

/// The group whose objects are never sent to webhooks.
pub const GROUP: &str = "admissionregistration.k8s.io";
const MUTATING_PREFIX: &str = "/admissionregistration.k8s.io/mutatingwebhookconfigurations/";
const VALIDATING_PREFIX: &str = "/admissionregistration.k8s.io/validatingwebhookconfigurations/";
/// Largest webhook answer read.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Webhooks by configuration key, with the revision they were parsed at.
type ParsedConfigurations = HashMap<String, (Revision, Arc<Vec<Webhook>>)>;

/// A webhook request's body.
type Body = http_body_util::Full<bytes::Bytes>;

type WebhookClient = Client<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>, Body>;

/// Dynamic admission for one API server.
pub struct Admission {
    storage: Arc<dyn Storage>,
    versions: Arc<dyn ServedVersions>,
    /// Parsed webhooks by configuration key, with the revision they were parsed at.
    parsed: Mutex<ParsedConfigurations>,
    /// TLS clients by webhook (configuration, revision, name, resolved address).
    clients: Mutex<HashMap<String, WebhookClient>>,
    metrics: WebhookMetrics,
}

impl Admission {
    pub fn new(
        storage: Arc<dyn Storage>,
        versions: Arc<dyn ServedVersions>,
        metrics: WebhookMetrics,
    ) -> Self {
        Self {
            storage,
            versions,
            metrics,
            parsed: Mutex::new(HashMap::new()),
            clients: Mutex::new(HashMap::new()),
        }
    }

    /// Whether writes of `group` go through webhooks.
    pub fn admits(group: &str) -> bool {
        group != GROUP
    }

    /// The webhooks of `kind`, configurations in name order.
    async fn webhooks(&self, kind: WebhookKind) -> Result<Vec<Webhook>, ApiError> {
        let prefix = match kind {
            WebhookKind::Mutating => MUTATING_PREFIX,
            WebhookKind::Validating => VALIDATING_PREFIX,
        };
        // From the cache, as kube-apiserver reads its webhook configurations from an
        // informer: every write asks, and a configuration written through another replica
        // a moment ago may apply a moment later.
        let listed = self
            .storage
            .list_cached(prefix, &Default::default())
            .await
            .map_err(|e| ApiError::internal(format!("listing webhook configurations: {e}")))?;
        let mut items: Vec<_> = listed.items.iter().collect();
        items.sort_by(|a, b| a.key.cmp(&b.key));
        let mut out = Vec::new();
        let mut parsed = self.parsed.lock();
        for obj in items {
            let fresh = match parsed.get(&obj.key) {
                Some((rev, hooks)) if *rev == obj.revision => hooks.clone(),
                _ => {
                    let hooks = match webhooks_of(kind, &obj.value()) {
                        Ok(h) => Arc::new(h),
                        Err(e) => {
                            // Validation keeps bad configurations out; one written by an
                            // older server is skipped rather than failing every write.
                            tracing::warn!(key = %obj.key, error = %e, "skipping webhook configuration");
                            Arc::new(Vec::new())
                        }
                    };
                    parsed.insert(obj.key.clone(), (obj.revision, hooks.clone()));
                    hooks
                }
            };
            out.extend(fresh.iter().cloned());
        }
        // Configurations deleted since: forget them and their clients.
        if parsed.len() > listed.items.len() + 16 {
            let live: std::collections::HashSet<&str> =
                listed.items.iter().map(|o| o.key.as_str()).collect();
            parsed.retain(|k, _| live.contains(k.as_str()) || !k.starts_with(prefix));
            self.clients.lock().clear();
        }
        Ok(out)
    }

    fn versions_of(&self, attrs: &Attributes) -> Vec<String> {
        self.versions.served_versions(&attrs.group, &attrs.resource)
    }

    async fn namespace_labels(
        &self,
        namespace: &str,
    ) -> Result<Option<serde_json::Map<String, Value>>, ApiError> {
        let ns = self
            .storage
            .get_cached(&format!("/core/namespaces/{namespace}"))
            .await
            .map_err(|e| ApiError::internal(format!("reading namespace {namespace}: {e}")))?;
        Ok(ns.and_then(|o| {
            o.value()
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
        }))
    }

    /// Whether `hook` is called for `attrs` (and how its rules matched).
    async fn selects(
        &self,
        hook: &Webhook,
        attrs: &Attributes,
        versions: &[String],
        ns_labels: &mut Option<Option<serde_json::Map<String, Value>>>,
    ) -> Result<Option<RuleMatch>, ApiError> {
        let matched = hook.match_rules(attrs, versions);
        if matched == RuleMatch::None || !hook.match_object(attrs) {
            return Ok(None);
        }
        if hook.needs_namespace(attrs) && ns_labels.is_none() {
            *ns_labels = Some(self.namespace_labels(&attrs.namespace).await?);
        }
        let labels = ns_labels.as_ref().and_then(|l| l.as_ref());
        Ok(hook.match_namespace(attrs, labels).then_some(matched))
    }

    /// Runs the mutating webhooks over `attrs.object`; returns their warnings.
    pub async fn mutate(&self, attrs: &mut Attributes) -> Result<Vec<String>, ApiError> {
        let hooks = self.webhooks(WebhookKind::Mutating).await?;
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        let versions = self.versions_of(attrs);
        let mut ns_labels = None;
        let mut warnings = Vec::new();
        // IfNeeded webhooks called, with the object as it was right after their call.
        let mut reinvocable: Vec<(usize, Option<Value>)> = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            let Some(matched) = self.selects(hook, attrs, &versions, &mut ns_labels).await? else {
                continue;
            };
            self.call_mutating(hook, attrs, &matched, &mut warnings)
                .await?;
            if hook.reinvoke_if_needed {
                reinvocable.push((i, attrs.object.clone()));
            }
        }
        for (i, after) in reinvocable {
            if attrs.object == after {
                continue;
            }
            let hook = &hooks[i];
            if let Some(matched) = self.selects(hook, attrs, &versions, &mut ns_labels).await? {
                self.call_mutating(hook, attrs, &matched, &mut warnings)
                    .await?;
            }
        }
        Ok(warnings)
    }

    async fn call_mutating(
        &self,
        hook: &Webhook,
        attrs: &mut Attributes,
        matched: &RuleMatch,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        let Some(verdict) = self.call(hook, attrs, matched).await? else {
            return Ok(());
        };
        warnings.extend(verdict.warnings);
        let Some(patch) = verdict.patch else {
            return Ok(());
        };
        let Some(object) = attrs.object.as_mut() else {
            return Ok(());
        };
        // The patch is against the object in the version the webhook was sent.
        let original_av = object.get("apiVersion").cloned();
        if let RuleMatch::Equivalent(v) = matched {
            let av = if attrs.group.is_empty() {
                v.clone()
            } else {
                format!("{}/{v}", attrs.group)
            };
            object["apiVersion"] = Value::String(av);
        }
        json_patch::patch(object, &patch).map_err(|e| {
            ApiError::internal(format!(
                "admission webhook \"{}\" returned a patch that does not apply: {e}",
                hook.name
            ))
        })?;
        if let Some(av) = original_av {
            object["apiVersion"] = av;
        }
        Ok(())
    }

    /// Runs the validating webhooks (concurrently); returns their warnings.
    pub async fn validate(&self, attrs: &Attributes) -> Result<Vec<String>, ApiError> {
        let hooks = self.webhooks(WebhookKind::Validating).await?;
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        let versions = self.versions_of(attrs);
        let mut ns_labels = None;
        let mut selected = Vec::new();
        for hook in &hooks {
            if let Some(m) = self.selects(hook, attrs, &versions, &mut ns_labels).await? {
                selected.push((hook, m));
            }
        }
        let results =
            futures::future::join_all(selected.iter().map(|(h, m)| self.call(h, attrs, m))).await;
        let mut warnings = Vec::new();
        for result in results {
            if let Some(v) = result? {
                warnings.extend(v.warnings);
            }
        }
        Ok(warnings)
    }

    /// Calls one webhook. `Ok(None)` when a failure is ignored by `failurePolicy: Ignore`;
    /// a denial is an error.
    async fn call(
        &self,
        hook: &Webhook,
        attrs: &Attributes,
        matched: &RuleMatch,
    ) -> Result<Option<Verdict>, ApiError> {
        if attrs.dry_run && !hook.side_effects.dry_run_safe() {
            return Err(ApiError::new(
                400,
                "BadRequest",
                format!(
                    "admission webhook \"{}\" does not support dry run",
                    hook.name
                ),
            ));
        }
        let uid = uuid::Uuid::new_v4().to_string();
        let started = std::time::Instant::now();
        let outcome = async {
            if !hook.review_versions.iter().any(|v| v == "v1") {
                return Err(format!(
                    "webhook does not accept v1 AdmissionReview (admissionReviewVersions: {:?})",
                    hook.review_versions
                ));
            }
            let body = review_request(attrs, matched, &uid);
            let answer = tokio::time::timeout(hook.timeout, self.post(hook, &body))
                .await
                .map_err(|_| "context deadline exceeded".to_string())??;
            Verdict::read(hook, &answer, &uid).map_err(|e| match e {
                AdmissionError::Response(m) => m,
                other => other.to_string(),
            })
        }
        .await;
        let label = match (&outcome, hook.failure_policy) {
            (Ok(v), _) if v.allowed => "allowed",
            (Ok(_), _) => "rejected",
            (Err(_), FailurePolicy::Ignore) => "ignored",
            (Err(_), FailurePolicy::Fail) => "error",
        };
        self.metrics.observe(
            &hook.name,
            hook.kind == WebhookKind::Mutating,
            attrs.operation.as_str(),
            label,
            started.elapsed(),
        );
        match outcome {
            Ok(v) if v.allowed => Ok(Some(v)),
            Ok(v) => {
                let (code, reason, message) = denial(&hook.name, v.status.as_ref());
                Err(ApiError::new(code, &reason, message))
            }
            Err(e) => match hook.failure_policy {
                FailurePolicy::Ignore => {
                    tracing::warn!(webhook = %hook.name, error = %e, "webhook failed; ignored by failurePolicy");
                    Ok(None)
                }
                FailurePolicy::Fail => Err(ApiError::internal(format!(
                    "Internal error occurred: failed calling webhook \"{}\": failed to call webhook: {e}",
                    hook.name
                ))),
            },
        }
    }

    /// POSTs the review and returns the answer's body.
    async fn post(&self, hook: &Webhook, review: &Value) -> Result<bytes::Bytes, String> {
        let (uri, resolver, key) = self.endpoint(hook).await?;
        let client = {
            let mut clients = self.clients.lock();
            match clients.get(&key) {
                Some(c) => c.clone(),
                None => {
                    let roots: Vec<String> = hook.ca_bundle.iter().cloned().collect();
                    let mut tls = (*flotilla_pki::client_config(&roots, None, false)
                        .map_err(|e| format!("caBundle: {e}"))?)
                    .clone();
                    tls.alpn_protocols.clear();
                    let mut http = HttpConnector::new_with_resolver(resolver);
                    http.enforce_http(false);
                    http.set_nodelay(true);
                    let https = hyper_rustls::HttpsConnectorBuilder::new()
                        .with_tls_config(tls)
                        .https_only()
                        .enable_http1()
                        .enable_http2()
                        .wrap_connector(http);
                    let c: WebhookClient = Client::builder(TokioExecutor::new()).build(https);
                    clients.insert(key, c.clone());
                    c
                }
            }
        };
        let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
        let req = http::Request::post(uri.clone())
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json")
            .body(Body::from(body))
            .map_err(|e| e.to_string())?;
        let resp = client
            .request(req)
            .await
            .map_err(|e| format!("Post \"{uri}\": {}", flotilla_apimachinery::error_chain(&e)))?;
        let status = resp.status();
        let bytes = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|e| format!("reading the response: {e}"))?
            .to_bytes();
        if !status.is_success() {
            return Err(format!(
                "the server responded with status {}",
                status.as_u16()
            ));
        }
        Ok(bytes)
    }

    /// The URL to call, the resolver to reach it and the client cache key.
    async fn endpoint(&self, hook: &Webhook) -> Result<(Uri, Resolver, String), String> {
        let key_base = format!("{}/{}", hook.configuration, hook.name);
        match &hook.client {
            ClientConfig::Url(url) => {
                let uri: Uri = url
                    .parse()
                    .map_err(|e| format!("invalid url {url:?}: {e}"))?;
                Ok((
                    uri,
                    Resolver::System,
                    format!("{key_base}/{url}/{:?}", hook.ca_bundle),
                ))
            }
            ClientConfig::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let svc = self
                    .storage
                    .get(&format!("/core/services/{namespace}/{name}"))
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| format!("service \"{name}\" not found"))?;
                let spec = svc.value().get("spec").cloned().unwrap_or(Value::Null);
                let target = match spec.get("type").and_then(Value::as_str) {
                    Some("ExternalName") => spec
                        .get("externalName")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    _ => spec
                        .get("clusterIP")
                        .and_then(Value::as_str)
                        .filter(|ip| !ip.is_empty() && *ip != "None")
                        .map(str::to_string),
                }
                .ok_or_else(|| {
                    format!(
                        "service {namespace}/{name} has neither an externalName nor a cluster IP"
                    )
                })?;
                let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.as_str(), *port))
                    .await
                    .map_err(|e| format!("resolving {target}: {e}"))?
                    .collect();
                let host = format!("{name}.{namespace}.svc");
                let uri: Uri = format!("https://{host}:{port}{path}")
                    .parse()
                    .map_err(|e| format!("invalid service path {path:?}: {e}"))?;
                Ok((
                    uri,
                    Resolver::Fixed(Arc::new(addrs.clone())),
                    format!("{key_base}/{host}/{addrs:?}/{:?}", hook.ca_bundle),
                ))
            }
        }
    }
}

/// Name resolution for webhook connections: the system's, or the addresses a Service
/// resolved to (so the URL keeps the `<name>.<namespace>.svc` host the certificate names).
#[derive(Clone)]
enum Resolver {
    System,
    Fixed(Arc<Vec<SocketAddr>>),
}

impl tower::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>,
    >;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        match self {
            Resolver::Fixed(addrs) => {
                let addrs = addrs.as_ref().clone();
                Box::pin(async move { Ok(addrs.into_iter()) })
            }
            Resolver::System => Box::pin(async move {
                // The connector sets the URL's port on each address.
                let addrs: Vec<SocketAddr> =
                    tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
                Ok(addrs.into_iter())
            }),
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    name: String,
    /// `admit` (mutating) or `validating`, as kube-apiserver labels them.
    r#type: String,
    operation: String,
    /// `allowed`, `rejected`, `error` or `ignored` (a failure under `failurePolicy: Ignore`).
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLatencyLabels {
    name: String,
    r#type: String,
}

type WebhookLatencyFamily = Family<WebhookLatencyLabels, Histogram, fn() -> Histogram>;

/// The admission webhook metrics, registered in the server's metrics.
#[derive(Clone)]
pub struct WebhookMetrics {
    calls: Family<WebhookLabels, Counter>,
    latency: WebhookLatencyFamily,
}

impl WebhookMetrics {
    /// The metrics, registered in `registry` under kube-apiserver's names.
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            calls: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.0005, 2.0, 16))
            }),
        };
        registry.register(
            "apiserver_admission_webhook_request",
            "Admission webhook calls by webhook, type, operation and outcome",
            metrics.calls.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook call latency by webhook and type",
            metrics.latency.clone(),
        );
        metrics
    }

    /// Records one call of webhook `name`.
    pub fn observe(
        &self,
        name: &str,
        mutating: bool,
        operation: &str,
        outcome: &str,
        elapsed: Duration,
    ) {
        let kind = if mutating { "admit" } else { "validating" };
        self.calls
            .get_or_create(&WebhookLabels {
                name: name.into(),
                r#type: kind.into(),
                operation: operation.into(),
                outcome: outcome.into(),
            })
            .inc();
        self.latency
            .get_or_create(&WebhookLatencyLabels {
                name: name.into(),
                r#type: kind.into(),
            })
            .observe(elapsed.as_secs_f64());
    }
}
