//! API aggregation (kube-aggregator): `APIService` objects put a group/version either in this
//! server ("Local", no `spec.service`) or behind an extension API server, to which every
//! request under `/apis/{group}/{version}` is proxied over TLS. The proxy verifies the backend
//! with the APIService's `caBundle` (or skips verification when `insecureSkipTLSVerify`),
//! authenticates with the front-proxy client certificate and passes the caller in
//! `X-Remote-User`, `X-Remote-Group` and `X-Remote-Extra-*`. Responses stream through
//! (watches), and connection upgrades (exec, port-forward) are spliced.
//!
//! `spec.service` is resolved as kube-aggregator does, through the Service's EndpointSlices
//! (label [`SERVICE_NAME_LABEL`] in the Service's namespace): every ready address is a
//! replica of the extension server. Requests are spread round-robin over the replicas that
//! passed their last check; a replica that cannot be connected to is marked down and the
//! request goes to the next one (any request: the replica never saw it), as does an
//! idempotent request (GET, HEAD, OPTIONS) that failed in another way. A watch cut by a dying
//! replica is re-established by its client and lands on a live one.
//!
//! Flotilla also runs outside Kubernetes, where nothing maintains EndpointSlices unless the
//! extension servers write their own (`flotilla aggregated-apiserver` does): without any,
//! the annotation [`URL_ANNOTATION`] gives the backend's base URL directly (e.g.
//! `https://127.0.0.1:7443`).
//!
//! A controller follows the APIService objects, checks each backend every few seconds by
//! fetching its discovery document, records the result in `status.conditions[Available]`,
//! and keeps that discovery document so `/api`, `/apis` and `/openapi/v3` show the
//! extension's resources. Requests for an unavailable APIService get 503.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use base64::Engine;
use flotilla_apimachinery::ApiError;
use http::{Uri, header};
use parking_lot::RwLock;
use serde_json::Value;

use crate::proxy::{ListRequest, Upstream, remote_user_headers, try_forward};
use crate::response::error_response;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::objects::meta_str;

/// Base URL of an extension API server reached without a Kubernetes Service.
pub const URL_ANNOTATION: &str = "apiregistration.flotilla.io/url";
/// The label tying an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// Largest request body kept to send to another replica after a failed attempt.
const MAX_RETRY_BODY: usize = 16 << 20;
pub const APISERVICE_PREFIX: &str = "/apiregistration.k8s.io/apiservices/";

/// One APIService as the aggregator sees it.
pub struct Backend {
    pub name: String,
    pub group: String,
    pub version: String,
    pub group_priority: i64,
    pub version_priority: i64,
    /// Served by this server.
    pub local: bool,
    /// `spec.service`, resolved through its EndpointSlices.
    pub(crate) service: Option<ServiceRef>,
    /// The [`URL_ANNOTATION`] address, used while the Service has no endpoints.
    pub(crate) fallback: Option<Uri>,
    /// How the replicas are reached (caBundle, front-proxy identity).
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The replicas, as last resolved.
    pub(crate) endpoints: RwLock<Vec<Arc<Endpoint>>>,
    /// Round-robin position.
    next: AtomicUsize,
    pub(crate) state: RwLock<BackendState>,
}

/// `spec.service` of an APIService.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServiceRef {
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) port: i64,
}

/// One replica of an extension API server.
pub struct Endpoint {
    pub url: String,
    pub(crate) upstream: Upstream,
    /// False after a failed check or connection; true again after a passed check.
    pub(crate) healthy: AtomicBool,
}

#[derive(Clone, Default)]
pub(crate) struct BackendState {
    pub(crate) available: bool,
    pub(crate) reason: String,
    pub(crate) message: String,
    /// The backend's `APIResourceList` for this group/version.
    pub(crate) discovery: Option<Value>,
}

impl Backend {
    pub fn available(&self) -> bool {
        self.local || self.state.read().available
    }

    /// The replicas' URLs and whether each is considered up.
    pub fn endpoints(&self) -> Vec<(String, bool)> {
        self.endpoints
            .read()
            .iter()
            .map(|e| (e.url.clone(), e.healthy.load(Ordering::Relaxed)))
            .collect()
    }

    /// The replicas in the order to try them for one request: those up, starting at the
    /// next in turn, then those down (their last check may be stale).
    fn pick(&self) -> Vec<Arc<Endpoint>> {
        let all = self.endpoints.read().clone();
        if all.is_empty() {
            return all;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % all.len();
        let rotated = all[start..].iter().chain(&all[..start]);
        let (up, down): (Vec<_>, Vec<_>) = rotated
            .cloned()
            .partition(|e| e.healthy.load(Ordering::Relaxed));
        up.into_iter().chain(down).collect()
    }

    /// Replaces the replicas by `urls`, keeping the connections of those still there.
    pub(crate) fn set_endpoints(&self, urls: Vec<Uri>) -> bool {
        let Some(tls) = &self.tls else {
            return false;
        };
        let mut current = self.endpoints.write();
        let same = current.len() == urls.len()
            && current
                .iter()
                .zip(&urls)
                .all(|(e, u)| e.url == u.to_string());
        if same {
            return false;
        }
        let next: Vec<Arc<Endpoint>> = urls
            .into_iter()
            .map(|u| {
                let url = u.to_string();
                current
                    .iter()
                    .find(|e| e.url == url)
                    .cloned()
                    .unwrap_or_else(|| {
                        Arc::new(Endpoint {
                            url,
                            upstream: Upstream::new(u, tls),
                            healthy: AtomicBool::new(true),
                        })
                    })
            })
            .collect();
        *current = next;
        true
    }
    pub fn discovery(&self) -> Option<Value> {
        self.state.read().discovery.clone()
    }
}

/// An aggregated group for discovery: name, then versions (preferred first) with their
/// resource lists.
pub struct ExternalGroup {
    pub name: String,
    pub versions: Vec<(String, Option<Value>)>,
}

/// The aggregator's state: backends by (group, version).
pub struct Aggregator {
    pub(crate) backends: RwLock<BTreeMap<(String, String), Arc<Backend>>>,
    /// The front-proxy client certificate and key (PEM).
    proxy_identity: Option<(String, String)>,
}

impl Aggregator {
    pub fn new(proxy_identity: Option<(String, String)>) -> Self {
        Self {
            backends: RwLock::new(BTreeMap::new()),
            proxy_identity,
        }
    }

    /// The remote backend serving `path`, if `path` is under an aggregated group/version.
    pub fn remote_for_path(&self, path: &str) -> Option<Arc<Backend>> {
        let rest = path.strip_prefix("/apis/")?;
        let mut parts = rest.split('/');
        let group = parts.next()?;
        let version = parts.next()?;
        let b = self
            .backends
            .read()
            .get(&(group.to_string(), version.to_string()))
            .cloned()?;
        (!b.local).then_some(b)
    }

    /// Groups served only by remote backends, ordered by priority, for discovery.
    pub fn external_groups(&self) -> Vec<ExternalGroup> {
        let backends = self.backends.read();
        let mut by_group: BTreeMap<String, Vec<Arc<Backend>>> = BTreeMap::new();
        for b in backends.values().filter(|b| !b.local) {
            by_group.entry(b.group.clone()).or_default().push(b.clone());
        }
        let mut groups: Vec<(i64, ExternalGroup)> = by_group
            .into_iter()
            .map(|(name, mut bs)| {
                bs.sort_by(|a, b| {
                    b.version_priority.cmp(&a.version_priority).then_with(|| {
                        crate::registry::version_priority(&b.version)
                            .cmp(&crate::registry::version_priority(&a.version))
                    })
                });
                let priority = bs.iter().map(|b| b.group_priority).max().unwrap_or(0);
                let versions = bs
                    .iter()
                    .filter(|b| b.available())
                    .map(|b| (b.version.clone(), b.discovery()))
                    .collect();
                (priority, ExternalGroup { name, versions })
            })
            .filter(|(_, g)| !g.versions.is_empty())
            .collect();
        groups.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        groups.into_iter().map(|(_, g)| g).collect()
    }

    pub(crate) fn build_backend(&self, obj: &Value) -> Result<Backend, String> {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let name = meta_str(obj, "name").unwrap_or_default().to_string();
        let group = spec
            .get("group")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let version = spec
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let group_priority = spec
            .get("groupPriorityMinimum")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let version_priority = spec
            .get("versionPriority")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let local = spec.get("service").is_none_or(Value::is_null);
        let mut backend = Backend {
            name,
            group,
            version,
            group_priority,
            version_priority,
            local,
            service: None,
            fallback: None,
            tls: None,
            endpoints: RwLock::new(Vec::new()),
            next: AtomicUsize::new(0),
            state: RwLock::new(BackendState::default()),
        };
        if local {
            return Ok(backend);
        }
        let service = spec.get("service").cloned().unwrap_or(Value::Null);
        backend.service = Some(ServiceRef {
            namespace: service
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            name: service
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            port: service.get("port").and_then(Value::as_i64).unwrap_or(443),
        });
        if let Some(url) = obj
            .pointer(&format!(
                "/metadata/annotations/{}",
                URL_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
        {
            let base: Uri = url
                .parse()
                .map_err(|e| format!("invalid {URL_ANNOTATION} {url:?}: {e}"))?;
            if base.scheme_str() != Some("https") || base.host().is_none() {
                return Err(format!(
                    "invalid {URL_ANNOTATION} {url:?}: must be an https URL with a host"
                ));
            }
            backend.fallback = Some(base);
        }
        let insecure = spec.get("insecureSkipTLSVerify").and_then(Value::as_bool) == Some(true);
        let ca = match spec.get("caBundle").and_then(Value::as_str) {
            Some(b64) => {
                let der = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|e| format!("caBundle is not base64: {e}"))?;
                vec![String::from_utf8(der).map_err(|_| "caBundle is not PEM text".to_string())?]
            }
            None => Vec::new(),
        };
        let identity = self
            .proxy_identity
            .as_ref()
            .map(|(c, k)| (c.as_str(), k.as_str()));
        let tls = flotilla_pki::client_config(&ca, identity, insecure)
            .map_err(|e| format!("caBundle: {e}"))?;
        backend.tls = Some(tls);
        if let Some(base) = backend.fallback.clone() {
            backend.set_endpoints(vec![base]);
        }
        Ok(backend)
    }
}

// === Endpoints ===

/// The base URLs of the ready endpoints in one EndpointSlice, on the port that matches the
/// Service's `port` (else the one named `https`, else the slice's only or first port).
pub fn slice_urls(slice: &Value, service_port: i64) -> Vec<Uri> {
    let ports = slice
        .get("ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let port_of = |p: &Value| p.get("port").and_then(Value::as_i64);
    let port = ports
        .iter()
        .find(|p| port_of(p) == Some(service_port))
        .or_else(|| {
            ports
                .iter()
                .find(|p| p.get("name").and_then(Value::as_str) == Some("https"))
        })
        .or_else(|| ports.first())
        .and_then(port_of)
        .unwrap_or(service_port);
    let mut urls = Vec::new();
    for endpoint in slice
        .get("endpoints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        // Only an explicit `ready: false` excludes an endpoint (unknown means ready).
        if endpoint
            .pointer("/conditions/ready")
            .and_then(Value::as_bool)
            == Some(false)
        {
            continue;
        }
        for address in endpoint
            .get("addresses")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            let host = if address.contains(':') {
                format!("[{address}]")
            } else {
                address.to_string()
            };
            if let Ok(uri) = format!("https://{host}:{port}").parse::<Uri>() {
                urls.push(uri);
            }
        }
    }
    urls
}

/// Proxies one request to `backend` on behalf of `user`, to one of its replicas.
pub async fn proxy(backend: Arc<Backend>, req: Request, user: &UserInfo) -> Response {
    if !backend.available() {
        let mut e = ApiError::service_unavailable(format!(
            "the server is currently unable to handle the request: APIService {} is not available: {}",
            backend.name,
            backend.state.read().message
        ));
        e.retry_after_seconds = Some(1);
        return error_response(&e);
    }
    let endpoints = backend.pick();
    let Some(first) = endpoints.first() else {
        return error_response(&ApiError::service_unavailable(format!(
            "APIService {} has no backend",
            backend.name
        )));
    };
    let path = req.uri().path().to_string();
    let query = req.uri().query().map(str::to_string);
    let unreachable = |message: &str| {
        let mut err = ApiError::service_unavailable(format!(
            "error trying to reach service: APIService {}: {message}",
            backend.name
        ));
        err.retry_after_seconds = Some(1);
        error_response(&err)
    };
    // One replica, or a connection upgrade (its body cannot be replayed): one attempt.
    if endpoints.len() == 1 || is_upgrade(&req) {
        return match try_forward(
            &first.upstream,
            req,
            &path,
            query.as_deref(),
            remote_user_headers(user),
        )
        .await
        {
            Ok(resp) => resp,
            Err(e) => {
                if e.connect {
                    first.healthy.store(false, Ordering::Relaxed);
                }
                unreachable(&e.message)
            }
        };
    }
    // Several replicas: keep the request so it can go to the next one.
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, MAX_RETRY_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return error_response(&ApiError::bad_request(format!(
                "reading the request body: {e}"
            )));
        }
    };
    let idempotent = matches!(
        parts.method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    let mut last = String::new();
    for endpoint in &endpoints {
        let mut again = http::Request::builder()
            .method(parts.method.clone())
            .uri(parts.uri.clone())
            .version(parts.version);
        if let Some(h) = again.headers_mut() {
            h.extend(parts.headers.clone());
        }
        if let Some(list) = parts.extensions.get::<ListRequest>() {
            if let Some(ext) = again.extensions_mut() {
                ext.insert(*list);
            }
        }
        let Ok(again) = again.body(Body::from(body.clone())) else {
            break;
        };
        match try_forward(
            &endpoint.upstream,
            again,
            &path,
            query.as_deref(),
            remote_user_headers(user),
        )
        .await
        {
            Ok(resp) => return resp,
            Err(e) => {
                tracing::debug!(apiservice = %backend.name, endpoint = %endpoint.url, error = %e.message, "replica unreachable");
                if e.connect {
                    endpoint.healthy.store(false, Ordering::Relaxed);
                }
                last = e.message;
                // A write that may have reached the replica is not sent twice.
                if !(e.connect || idempotent) {
                    break;
                }
            }
        }
    }
    unreachable(&last)
}

fn is_upgrade(req: &Request) -> bool {
    req.headers()
        .get(header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.to_ascii_lowercase()
                .split(',')
                .any(|t| t.trim() == "upgrade")
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn ready_endpoints_on_the_service_port() {
        let slice = json!({
            "addressType": "IPv4",
            "ports": [{"name": "metrics", "port": 9090}, {"name": "https", "port": 7443}],
            "endpoints": [
                {"addresses": ["127.0.0.1"], "conditions": {"ready": true}},
                {"addresses": ["127.0.0.2"]},
                {"addresses": ["127.0.0.3"], "conditions": {"ready": false}},
            ],
        });
        let urls: Vec<String> = slice_urls(&slice, 443).iter().map(Uri::to_string).collect();
        assert_eq!(urls, ["https://127.0.0.1:7443/", "https://127.0.0.2:7443/"]);
        let urls: Vec<String> = slice_urls(&slice, 9090)
            .iter()
            .map(Uri::to_string)
            .collect();
        assert_eq!(urls, ["https://127.0.0.1:9090/", "https://127.0.0.2:9090/"]);
        let v6 = json!({"ports": [{"port": 443}], "endpoints": [{"addresses": ["::1"]}]});
        let urls: Vec<String> = slice_urls(&v6, 443).iter().map(Uri::to_string).collect();
        assert_eq!(urls, ["https://[::1]:443/"]);
        assert!(slice_urls(&json!({}), 443).is_empty());
    }

    fn remote_backend() -> Backend {
        let agg = Aggregator::new(None);
        agg.build_backend(&json!({
            "metadata": {"name": "v1.x.example.com",
                         "annotations": {URL_ANNOTATION: "https://127.0.0.1:9"}},
            "spec": {"group": "x.example.com", "version": "v1", "insecureSkipTLSVerify": true,
                     "service": {"namespace": "x", "name": "x"}},
        }))
        .unwrap()
    }

    #[test]
    fn the_annotation_is_the_only_endpoint_until_the_service_resolves() {
        let b = remote_backend();
        assert_eq!(b.endpoints(), [("https://127.0.0.1:9/".to_string(), true)]);
        assert_eq!(
            b.service,
            Some(ServiceRef {
                namespace: "x".into(),
                name: "x".into(),
                port: 443
            })
        );
    }

    #[test]
    fn requests_take_turns_over_replicas_up_and_try_those_down_last() {
        let b = remote_backend();
        let urls = [
            "https://127.0.0.1:1",
            "https://127.0.0.1:2",
            "https://127.0.0.1:3",
        ];
        assert!(b.set_endpoints(urls.iter().map(|u| u.parse().unwrap()).collect()));
        let order =
            |b: &Backend| -> Vec<String> { b.pick().iter().map(|e| e.url.clone()).collect() };
        let firsts: Vec<String> = (0..3).map(|_| order(&b)[0].clone()).collect();
        assert_eq!(
            firsts,
            [
                "https://127.0.0.1:1/",
                "https://127.0.0.1:2/",
                "https://127.0.0.1:3/"
            ]
        );
        b.endpoints.read()[1]
            .healthy
            .store(false, Ordering::Relaxed);
        for _ in 0..3 {
            let o = order(&b);
            assert_eq!(o.len(), 3);
            assert_eq!(o[2], "https://127.0.0.1:2/", "{o:?}");
        }
        // The same set again keeps the endpoints (and their connections and state).
        assert!(!b.set_endpoints(urls.iter().map(|u| u.parse().unwrap()).collect()));
        assert!(!b.endpoints.read()[1].healthy.load(Ordering::Relaxed));
    }
}
