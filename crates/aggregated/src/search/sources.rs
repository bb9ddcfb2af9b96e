//! The two kinds of source a merged read asks: the host's template store ([`Templates`]: in
//! this process, its generic store called directly; otherwise through the aggregated
//! server's host client, explicitly asking for templates so the host does not route the read
//! back here) and each member cluster (through its shared connection, as the
//! caller: `Impersonate-*` headers, so the member's RBAC applies). Both answer the same three
//! questions: one object, one list (with its resourceVersion) and a watch as a stream of
//! parsed event lines.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use flotilla_apimachinery::ApiError;
use flotilla_apiserver::proxy::{Upstream, impersonation_headers};
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::request::RequestInfo;
use flotilla_generic_store::rest::{GenericStore, Object, RestStorage, WatchEvent};
use futures::{AsyncBufReadExt, Stream, StreamExt, TryStreamExt};
use http::{HeaderName, HeaderValue, Method, header};
use http_body_util::{BodyExt, BodyStream};
use serde_json::Value;

/// The header that asks the host for its template store, past merged reads (the host's
/// `MergedReadStorage` answers such reads itself).
pub const TEMPLATE_READ_HEADER: &str = flotilla_names::TEMPLATE_READ_HEADER;

/// Why a source did not give an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SourceError {
    /// 404: the source does not have the object.
    NotFound,
    /// 410: the resourceVersion asked for is no longer available at the source.
    Expired(String),
    /// Anything else (unreachable, refused, timed out), with a message for a warning.
    Failed(String),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::NotFound => f.write_str("not found"),
            SourceError::Expired(m) | SourceError::Failed(m) => f.write_str(m),
        }
    }
}

/// One line of a watch: its type (`ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK`, `ERROR`) and
/// object.
#[derive(Debug, Clone)]
pub struct WatchLine {
    pub event_type: String,
    pub object: Value,
}

pub type WatchLines = Pin<Box<dyn Stream<Item = Result<WatchLine, SourceError>> + Send>>;

/// The host's template store, read in this process: its generic store, called without a
/// request (no HTTP, no filter chain: the merged read was authorized where it entered).
#[async_trait::async_trait]
pub trait TemplateStore: Send + Sync {
    /// A GET of `path?query` (an object, or a list with `metadata.resourceVersion` and
    /// `items`), as the host would answer it.
    async fn get(&self, path: &str, query: &str, user: &UserInfo) -> Result<Value, SourceError>;
    /// A watch of `path?query`.
    async fn watch(
        &self,
        path: &str,
        query: &str,
        user: &UserInfo,
    ) -> Result<WatchLines, SourceError>;
}

/// Where templates are read.
#[derive(Clone)]
pub enum Templates {
    /// Over the network, through the host's API with the template header.
    Remote(kube::Client),
    /// The host's store in this process.
    InProcess(Arc<dyn TemplateStore>),
}

/// Where a source is: the template store or one member.
#[derive(Clone)]
pub enum Endpoint {
    /// The template store, read for `user` (who was authorized for the merged read).
    Host(Templates, UserInfo),
    Member {
        cluster: String,
        upstream: Arc<Upstream>,
        token: Option<String>,
        /// The caller, impersonated; `None` asks as the member's own credentials (the
        /// per-cluster caches, which serve every caller).
        user: Option<UserInfo>,
    },
}

impl Endpoint {
    /// The source's name in warnings.
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Host(..) => "the template store".to_string(),
            Endpoint::Member { cluster, .. } => format!("cluster {cluster:?}"),
        }
    }

    /// GET `path?query` as JSON, within `timeout`.
    pub async fn get_json(
        &self,
        path: &str,
        query: &str,
        timeout: Duration,
    ) -> Result<Value, SourceError> {
        bounded(timeout, async {
            let bytes = match self {
                Endpoint::Host(Templates::InProcess(store), user) => {
                    return store.get(path, query, user).await;
                }
                Endpoint::Host(Templates::Remote(client), _) => {
                    let req = host_request(path, query)?;
                    client
                        .request_text(req)
                        .await
                        .map(String::into_bytes)
                        .map_err(kube_error)?
                }
                Endpoint::Member { .. } => {
                    self.member_bytes(Method::GET, path, query, None).await?
                }
            };
            parse_json(&bytes)
        })
        .await
    }

    /// A watch of `path?query` (the query carries `watch=1` and where to start); opening it
    /// is bounded by `timeout`, the stream itself is not.
    pub async fn watch(
        &self,
        path: &str,
        query: &str,
        timeout: Duration,
    ) -> Result<WatchLines, SourceError> {
        if let Endpoint::Host(Templates::InProcess(store), user) = self {
            return bounded(timeout, store.watch(path, query, user)).await;
        }
        let open = async {
            let lines: Pin<Box<dyn Stream<Item = std::io::Result<String>> + Send>> = match self {
                Endpoint::Host(Templates::InProcess(_), _) => {
                    return Err(SourceError::Failed("not a remote source".into()));
                }
                Endpoint::Host(Templates::Remote(client), _) => {
                    let req = host_request(path, query)?;
                    let reader = client.request_stream(req).await.map_err(kube_error)?;
                    Box::pin(reader.lines())
                }
                Endpoint::Member { .. } => {
                    let resp = self.send_member(Method::GET, path, query, None).await?;
                    let status = resp.status();
                    if !status.is_success() {
                        let body = resp
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        return Err(status_error(status.as_u16(), &body));
                    }
                    let frames = BodyStream::new(resp.into_body())
                        .try_filter_map(|frame| async move { Ok(frame.into_data().ok()) })
                        .map_err(std::io::Error::other);
                    Box::pin(frames.into_async_read().lines())
                }
            };
            Ok::<_, SourceError>(lines)
        };
        let lines = tokio::time::timeout(timeout, open)
            .await
            .unwrap_or_else(|_| {
                Err(SourceError::Failed(format!("no answer within {timeout:?}")))
            })?;
        Ok(Box::pin(lines.filter_map(|line| async move {
            match line {
                Ok(l) if l.trim().is_empty() => None,
                Ok(l) => Some(parse_line(&l)),
                Err(e) => Some(Err(SourceError::Failed(format!("the watch broke: {e}")))),
            }
        })))
    }

    /// POSTs `body` to a member (as its own credentials or the caller), within `timeout`.
    pub async fn post_json(
        &self,
        path: &str,
        body: &Value,
        timeout: Duration,
    ) -> Result<Value, SourceError> {
        bounded(timeout, async {
            let bytes = self
                .member_bytes(Method::POST, path, "", Some(body.to_string()))
                .await?;
            parse_json(&bytes)
        })
        .await
    }

    /// A member's answer body; a non-2xx answer is the error its `Status` says.
    async fn member_bytes(
        &self,
        method: Method,
        path: &str,
        query: &str,
        body: Option<String>,
    ) -> Result<Vec<u8>, SourceError> {
        let resp = self.send_member(method, path, query, body).await?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| SourceError::Failed(format!("reading the answer: {e}")))?
            .to_bytes();
        if !status.is_success() {
            return Err(status_error(status.as_u16(), &bytes));
        }
        Ok(bytes.to_vec())
    }

    async fn send_member(
        &self,
        method: Method,
        path: &str,
        query: &str,
        body: Option<String>,
    ) -> Result<http::Response<hyper::body::Incoming>, SourceError> {
        let Endpoint::Member {
            upstream,
            token,
            user,
            ..
        } = self
        else {
            return Err(SourceError::Failed("not a member".into()));
        };
        let uri = upstream
            .uri(path, (!query.is_empty()).then_some(query))
            .map_err(SourceError::Failed)?;
        let mut builder = http::Request::builder()
            .method(method)
            .uri(uri)
            .header(header::ACCEPT, "application/json");
        if body.is_some() {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
        }
        if let Some(user) = user {
            for (name, value) in impersonation_headers(user) {
                builder = builder.header(name, value);
            }
        }
        if let Some(t) = token {
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer {t}")) {
                builder = builder.header(header::AUTHORIZATION, v);
            }
        }
        let req = builder
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .map_err(|e| SourceError::Failed(e.to_string()))?;
        upstream.send(req).await.map_err(SourceError::Failed)
    }
}

/// The template store of a host API server in this process.
pub struct HostTemplates {
    /// Weak: the host outlives its readers, and must not be kept by them.
    server: std::sync::Weak<flotilla_apiserver::ApiServer>,
}

impl HostTemplates {
    pub fn new(server: &Arc<flotilla_apiserver::ApiServer>) -> Self {
        Self {
            server: Arc::downgrade(server),
        }
    }

    /// The request `path?query` as the host's generic store gets it.
    fn context(
        &self,
        path: &str,
        query: &str,
        user: &UserInfo,
    ) -> Result<RequestContext, SourceError> {
        let server = self
            .server
            .upgrade()
            .ok_or_else(|| SourceError::Failed("the host is shutting down".into()))?;
        let uri: http::Uri = if query.is_empty() {
            path.parse()
        } else {
            format!("{path}?{query}").parse()
        }
        .map_err(|e| SourceError::Failed(format!("invalid path {path:?}: {e}")))?;
        let info = RequestInfo::parse(&Method::GET, &uri, &http::HeaderMap::new());
        let rp = info
            .resource()
            .cloned()
            .ok_or_else(|| SourceError::Failed(format!("{path:?} is not a resource path")))?;
        let def = server
            .registry
            .get(&rp.group, &rp.version, &rp.resource)
            .ok_or(SourceError::NotFound)?;
        Ok(RequestContext {
            store: server.store.clone(),
            def,
            path: rp,
            info: Arc::new(info),
            headers: http::HeaderMap::new(),
            user: user.clone(),
        })
    }
}

/// A store's refusal as a source's.
fn api_error(e: ApiError) -> SourceError {
    match e.code {
        404 => SourceError::NotFound,
        410 => SourceError::Expired(e.message),
        code => SourceError::Failed(format!("HTTP {code}: {}", e.message)),
    }
}

#[async_trait::async_trait]
impl TemplateStore for HostTemplates {
    async fn get(&self, path: &str, query: &str, user: &UserInfo) -> Result<Value, SourceError> {
        let ctx = self.context(path, query, user)?;
        if ctx.path.name.is_some() {
            let answer = GenericStore.get(&ctx).await.map_err(api_error)?;
            return Ok(answer.object.into_value());
        }
        let list = GenericStore.list(&ctx).await.map_err(api_error)?;
        let items: Vec<Value> = list.items.into_iter().map(Object::into_value).collect();
        Ok(serde_json::json!({
            "metadata": {"resourceVersion": list.resource_version},
            "items": items,
        }))
    }

    async fn watch(
        &self,
        path: &str,
        query: &str,
        user: &UserInfo,
    ) -> Result<WatchLines, SourceError> {
        let ctx = self.context(path, query, user)?;
        let answer = GenericStore.watch(&ctx).await.map_err(api_error)?;
        Ok(Box::pin(answer.events.filter_map(|event| async move {
            let event_type = event.type_name().to_string();
            match event {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    Some(Ok(WatchLine {
                        event_type,
                        object: o.into_value(),
                    }))
                }
                WatchEvent::Bookmark {
                    resource_version, ..
                } => Some(Ok(WatchLine {
                    event_type,
                    object: serde_json::json!({"metadata": {"resourceVersion": resource_version}}),
                })),
                WatchEvent::Error(e) => Some(Err(api_error(e))),
            }
        })))
    }
}

/// `work`, or a failure naming `timeout` when it takes longer.
async fn bounded<T>(
    timeout: Duration,
    work: impl std::future::Future<Output = Result<T, SourceError>>,
) -> Result<T, SourceError> {
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| Err(SourceError::Failed(format!("no answer within {timeout:?}"))))
}

fn parse_json(bytes: &[u8]) -> Result<Value, SourceError> {
    serde_json::from_slice(bytes)
        .map_err(|e| SourceError::Failed(format!("the answer is not JSON: {e}")))
}

fn host_request(path: &str, query: &str) -> Result<http::Request<Vec<u8>>, SourceError> {
    let uri = if query.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{query}")
    };
    http::Request::builder()
        .method(Method::GET)
        .uri(uri)
        .header(header::ACCEPT, "application/json")
        .header(
            HeaderName::from_static(TEMPLATE_READ_HEADER),
            HeaderValue::from_static(flotilla_names::TEMPLATE_READ_VALUE),
        )
        .body(Vec::new())
        .map_err(|e| SourceError::Failed(e.to_string()))
}

fn kube_error(e: kube::Error) -> SourceError {
    match e {
        kube::Error::Api(status) if status.code == 404 => SourceError::NotFound,
        kube::Error::Api(status) if status.code == 410 => SourceError::Expired(status.message),
        other => SourceError::Failed(flotilla_apimachinery::error_chain(&other)),
    }
}

/// The error of a non-2xx answer, from its `Status` body when it has one.
fn status_error(code: u16, body: &[u8]) -> SourceError {
    api_error(ApiError::from_status(code, body))
}

fn parse_line(line: &str) -> Result<WatchLine, SourceError> {
    let mut v: Value = serde_json::from_str(line)
        .map_err(|e| SourceError::Failed(format!("a watch event is not JSON: {e}")))?;
    let event_type = v
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let object = v.get_mut("object").map(Value::take).unwrap_or(Value::Null);
    if event_type == "ERROR" {
        let code = object.get("code").and_then(Value::as_u64).unwrap_or(0);
        let message = object
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the watch failed")
            .to_string();
        return Err(if code == 410 {
            SourceError::Expired(message)
        } else {
            SourceError::Failed(message)
        });
    }
    Ok(WatchLine { event_type, object })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_lines_parse_events_and_errors() {
        let ok = parse_line(r#"{"type":"ADDED","object":{"metadata":{"name":"a"}}}"#).unwrap();
        assert_eq!(ok.event_type, "ADDED");
        assert_eq!(ok.object["metadata"]["name"], "a");
        let gone = parse_line(r#"{"type":"ERROR","object":{"code":410,"message":"too old"}}"#);
        assert_eq!(gone.unwrap_err(), SourceError::Expired("too old".into()));
        assert!(matches!(
            parse_line("{not json"),
            Err(SourceError::Failed(_))
        ));
    }

    #[test]
    fn status_bodies_become_source_errors() {
        assert_eq!(status_error(404, b"{}"), SourceError::NotFound);
        assert_eq!(
            status_error(403, br#"{"message":"forbidden: no"}"#),
            SourceError::Failed("HTTP 403: forbidden: no".into())
        );
    }
}
