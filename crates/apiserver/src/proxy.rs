//! Forwarding a request to another HTTPS server and streaming the answer back: the part API
//! aggregation and the cluster proxy share. Credentials and identity headers of the incoming
//! request are never forwarded (the caller adds the ones the upstream should see); responses
//! stream (watches); `Connection: Upgrade` requests (exec, attach, port-forward over SPDY or
//! WebSocket) are spliced byte for byte after the upstream switches protocols. Redirects are
//! neither followed nor passed on ([`redirect_refused`]).

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderName, HeaderValue, Uri, header};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

pub type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Body>;

/// A server requests are forwarded to: its base URL and pooled clients.
pub struct Upstream {
    pub base: Uri,
    client: HttpsClient,
    /// HTTP/1.1 only: for upgrades, which cannot run over HTTP/2, and for [`ListRequest`]s.
    http1_client: HttpsClient,
}

/// Marks a request (in its extensions) as a list, whose answer may be tens of megabytes: it is
/// forwarded over HTTP/1.1. HTTP/2 moves a large body in 16 KB DATA frames under flow control
/// and costs more per byte; a LIST of 5,000 Clusters (38 MB) through the host took 79 ms
/// over HTTP/2 and 58 to 69 ms over HTTP/1.1 (p50 of 12, idle `local-up`). Other requests
/// keep HTTP/2, which costs less CPU per small request under concurrency and multiplexes
/// watches on one connection.
#[derive(Debug, Clone, Copy)]
pub struct ListRequest;

impl Upstream {
    /// Clients for `base` with `tls` (its ALPN list is replaced: HTTP/2 when the upstream
    /// offers it, HTTP/1.1 for upgrades and lists).
    pub fn new(base: Uri, tls: &rustls::ClientConfig) -> Self {
        let mut tls = tls.clone();
        tls.alpn_protocols.clear();
        // TCP_NODELAY: a proxied request is a few small TLS records each way; with Nagle the
        // later ones wait for an ACK, which cost about 20% more CPU per request and lower
        // throughput in the aggregation benchmark (crates/host/benches/aggregation.rs).
        // HTTP/2 is kept: under concurrency it costs less CPU per request than a pool of
        // HTTP/1.1 connections and it multiplexes long-running watches on one connection.
        let tcp = || {
            let mut http = HttpConnector::new();
            http.enforce_http(false);
            http.set_nodelay(true);
            http
        };
        let all = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls.clone())
            .https_only()
            .enable_all_versions()
            .wrap_connector(tcp());
        let h1 = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .wrap_connector(tcp());
        Self {
            base,
            client: Client::builder(TokioExecutor::new()).build(all),
            http1_client: Client::builder(TokioExecutor::new()).build(h1),
        }
    }

    /// `base` + `path` (+ `?query`), keeping a path prefix of the base URL.
    pub fn uri(&self, path: &str, query: Option<&str>) -> Result<Uri, String> {
        let prefix = self.base.path().trim_end_matches('/');
        let pq = match query {
            Some(q) => format!("{prefix}{path}?{q}"),
            None => format!("{prefix}{path}"),
        };
        let mut parts = self.base.clone().into_parts();
        parts.path_and_query = Some(
            pq.parse()
                .map_err(|e| format!("invalid path {path:?}: {e}"))?,
        );
        Uri::from_parts(parts).map_err(|e| e.to_string())
    }

    /// A plain request with a timeout, for health and discovery checks.
    pub async fn send(
        &self,
        req: http::Request<Body>,
    ) -> Result<http::Response<hyper::body::Incoming>, String> {
        self.client
            .request(req)
            .await
            .map_err(|e| flotilla_apimachinery::error_chain(&e))
    }
}

/// Headers never forwarded: the caller's credentials, impersonation and identity headers
/// (the forwarder sets its own), and hop-by-hop headers.
fn dropped_header(name: &str, upgrade: bool) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "authorization"
        || lower == "host"
        || lower.starts_with("impersonate-")
        || lower.starts_with("x-remote-")
        || matches!(
            lower.as_str(),
            "keep-alive" | "proxy-connection" | "te" | "trailer" | "transfer-encoding"
        )
        || (!upgrade && matches!(lower.as_str(), "connection" | "upgrade"))
}

/// Forwards `req` to `upstream` at `path`/`query` with `add` headers. `Err` carries a
/// message when the upstream cannot be reached.
pub async fn forward(
    upstream: &Upstream,
    req: Request,
    path: &str,
    query: Option<&str>,
    add: Vec<(HeaderName, HeaderValue)>,
) -> Result<Response, String> {
    try_forward(upstream, req, path, query, add)
        .await
        .map_err(|e| e.message)
}

/// Why a request got no response from the upstream.
#[derive(Debug, Clone)]
pub struct Unreached {
    pub message: String,
    /// The connection could not be made: the upstream never saw the request, so it is safe
    /// to send it elsewhere whatever its method.
    pub connect: bool,
}

/// [`forward`], telling a failure to connect from other failures.
pub async fn try_forward(
    upstream: &Upstream,
    mut req: Request,
    path: &str,
    query: Option<&str>,
    add: Vec<(HeaderName, HeaderValue)>,
) -> Result<Response, Unreached> {
    let unreached = |message: String| Unreached {
        message,
        connect: false,
    };
    let upgrade = req
        .headers()
        .get(header::CONNECTION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.to_ascii_lowercase()
                .split(',')
                .any(|t| t.trim() == "upgrade")
        });
    let uri = upstream.uri(path, query).map_err(unreached)?;
    let incoming_upgrade = if upgrade {
        Some(hyper::upgrade::on(&mut req))
    } else {
        None
    };
    let http1 = upgrade || req.extensions().get::<ListRequest>().is_some();
    let (parts, body) = req.into_parts();
    let mut out = http::Request::builder()
        .method(parts.method.clone())
        .uri(uri);
    for (name, value) in parts.headers.iter() {
        if !dropped_header(name.as_str(), upgrade) {
            out = out.header(name, value);
        }
    }
    for (name, value) in add {
        out = out.header(name, value);
    }
    let out = out
        .body(if upgrade { Body::empty() } else { body })
        .map_err(|e| unreached(e.to_string()))?;
    let sent = if http1 {
        upstream.http1_client.request(out).await
    } else {
        upstream.client.request(out).await
    };
    let mut resp = sent.map_err(|e| Unreached {
        message: flotilla_apimachinery::error_chain(&e),
        connect: e.is_connect(),
    })?;
    if resp.status() == http::StatusCode::SWITCHING_PROTOCOLS {
        if let Some(incoming) = incoming_upgrade {
            let outgoing = hyper::upgrade::on(&mut resp);
            tokio::spawn(async move {
                match (incoming.await, outgoing.await) {
                    (Ok(a), Ok(b)) => {
                        let mut a = hyper_util::rt::TokioIo::new(a);
                        let mut b = hyper_util::rt::TokioIo::new(b);
                        let _ = tokio::io::copy_bidirectional(&mut a, &mut b).await;
                    }
                    (a, b) => tracing::debug!(
                        ok_in = a.is_ok(),
                        ok_out = b.is_ok(),
                        "upgrade through a proxy failed"
                    ),
                }
            });
        }
        let (parts, _) = resp.into_parts();
        return Ok(Response::from_parts(parts, Body::empty()));
    }
    if is_redirect(&resp) {
        tracing::info!(
            upstream = %upstream.base,
            status = resp.status().as_u16(),
            "refused to forward a redirect from the upstream"
        );
        return Ok(crate::response::error_response(&redirect_refused()));
    }
    Ok(resp.map(Body::new))
}

/// A redirect the upstream answered: a 3xx with somewhere to go.
fn is_redirect<B>(resp: &http::Response<B>) -> bool {
    resp.status().is_redirection() && resp.headers().contains_key(header::LOCATION)
}

/// What the caller gets instead of an upstream's redirect. Passed on, a redirect would send
/// the caller (kubectl follows redirects, and client-go adds its credentials for the host to
/// every request, the redirected one too) wherever the upstream likes; kube-apiserver's
/// aggregator refuses them the same way (`--aggregator-reject-forwarding-redirect`, on by
/// default). Nor does anything here follow one: the upstream's clients never do, so the
/// credentials sent upstream reach only the upstream itself.
pub fn redirect_refused() -> flotilla_apimachinery::ApiError {
    flotilla_apimachinery::ApiError::new(
        502,
        "BadGateway",
        "the backend attempted to redirect this request, which is not permitted",
    )
}

/// `X-Remote-*` headers naming `user`, as an authenticating front proxy sends them.
pub fn remote_user_headers(
    user: &flotilla_generic_store::UserInfo,
) -> Vec<(HeaderName, HeaderValue)> {
    identity_headers(
        user,
        "x-remote-user",
        "x-remote-group",
        "x-remote-extra-",
        |_| true,
    )
}

/// `Impersonate-*` headers naming `user` (without the groups every authenticated user has).
pub fn impersonation_headers(
    user: &flotilla_generic_store::UserInfo,
) -> Vec<(HeaderName, HeaderValue)> {
    identity_headers(
        user,
        "impersonate-user",
        "impersonate-group",
        "impersonate-extra-",
        |g| g != "system:authenticated" && g != "system:unauthenticated",
    )
}

fn identity_headers(
    user: &flotilla_generic_store::UserInfo,
    user_header: &'static str,
    group_header: &'static str,
    extra_prefix: &str,
    keep_group: impl Fn(&str) -> bool,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    if let Ok(v) = HeaderValue::from_str(&user.name) {
        out.push((HeaderName::from_static(user_header), v));
    }
    for g in user.groups.iter().filter(|g| keep_group(g)) {
        if let Ok(v) = HeaderValue::from_str(g) {
            out.push((HeaderName::from_static(group_header), v));
        }
    }
    for (k, values) in &user.extra {
        let encoded: String = form_urlencoded::byte_serialize(k.as_bytes()).collect();
        if let Ok(name) = HeaderName::from_bytes(format!("{extra_prefix}{encoded}").as_bytes()) {
            for v in values {
                if let Ok(v) = HeaderValue::from_str(v) {
                    out.push((name.clone(), v));
                }
            }
        }
    }
    out
}
