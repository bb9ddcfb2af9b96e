//! The host's merged reads: GET, LIST and WATCH of the configured workload resources are
//! answered by the aggregated API server's merged view (`search.karmada.io`
//! `proxying/karmada/proxy`), which asks the template store and every member cluster; writes
//! stay on the template store. This is the REST storage the host installs for those
//! resources ([`install`]).
//!
//! - Transport: in-process (`local-up`), the aggregated server's router is called in memory
//!   as a trusted front proxy would call it — no TLS, no socket; otherwise the request takes
//!   the authenticated aggregation path of the `v1alpha1.search.karmada.io` APIService.
//!   Either way the caller's identity goes along (`X-Remote-*`), so members are asked as the
//!   caller.
//! - Flotilla's own components (their group, [`MergedReadsConfig::bypass_groups`]) and
//!   requests with `X-Flotilla-Read-From: templates` read the template store itself.
//! - Writes after a merged read: a composite resourceVersion is replaced by the template's
//!   own before the store checks it, the merge's own annotations are dropped, and a write to
//!   an object only members hold answers 404 naming the member's `clusters/{name}/proxy`.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::ApiError;
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::UserInfo;
use flotilla_apiserver::aggregator::Aggregator;
use flotilla_apiserver::auth::PeerIdentity;
use flotilla_apiserver::context::RequestContext;
use flotilla_apiserver::proxy::remote_user_headers;
use flotilla_apiserver::rest::{GenericStore, RestStorage};
use flotilla_core::merged_reads;
use flotilla_fanout::CompositeVersion;
use http::{HeaderMap, Method, header};
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

/// How a merged read reaches the aggregated API server.
#[derive(Clone)]
pub enum ReadTransport {
    /// The aggregated server runs in this process: its router, called in memory.
    InProcess(axum::Router),
    /// Through the host's aggregator to the `v1alpha1.search.karmada.io` APIService.
    ApiService,
}

/// Which resources are merged, and who reads templates instead.
#[derive(Clone, Debug)]
pub struct MergedReadsConfig {
    /// `plural.group` (`pods` for the core group).
    pub resources: Vec<String>,
    /// Callers in any of these groups read the template store.
    pub bypass_groups: Vec<String>,
}

impl Default for MergedReadsConfig {
    fn default() -> Self {
        Self {
            resources: merged_reads::default_resources(),
            bypass_groups: vec![flotilla_pki::COMPONENTS_GROUP.to_string()],
        }
    }
}

/// Installs merged reads for `config.resources` on `server`: returns the resources that are
/// not served by it (a typo in a flag), which are left alone.
pub fn install(
    server: &ApiServer,
    transport: ReadTransport,
    config: &MergedReadsConfig,
) -> Vec<String> {
    let storage: Arc<dyn RestStorage> = Arc::new(MergedReadStorage {
        transport,
        aggregator: server.aggregator.clone(),
        bypass_groups: config.bypass_groups.clone(),
    });
    let mut unknown = Vec::new();
    for name in &config.resources {
        let (group, plural) = merged_reads::parse_resource(name);
        if server.registry.any_version(&group, &plural).is_none() {
            unknown.push(name.clone());
            continue;
        }
        server
            .registry
            .set_storage(&group, &plural, storage.clone());
    }
    unknown
}

/// The REST storage of a merged resource.
pub struct MergedReadStorage {
    transport: ReadTransport,
    /// The host's aggregator, which reaches the search APIService ([`ReadTransport::ApiService`]).
    aggregator: Option<Arc<Aggregator>>,
    bypass_groups: Vec<String>,
}

impl MergedReadStorage {
    /// Whether this read goes to the template store.
    fn bypass(&self, ctx: &RequestContext) -> bool {
        ctx.user
            .groups
            .iter()
            .any(|g| self.bypass_groups.contains(g))
            || ctx
                .headers
                .get(merged_reads::TEMPLATE_READ_HEADER)
                .and_then(|v| v.to_str().ok())
                == Some(merged_reads::TEMPLATE_READ_VALUE)
    }

    /// Sends a GET for `path_and_query` (a path under `/api` or `/apis`) to the merged view;
    /// `None` when no aggregated server serves it (no `v1alpha1.search.karmada.io`
    /// APIService), and the host's own store answers.
    async fn send(
        &self,
        path_and_query: &str,
        headers: &HeaderMap,
        user: &UserInfo,
    ) -> Result<Option<Response>, ApiError> {
        let uri = format!("{}{path_and_query}", merged_reads::SEARCH_PROXY_PREFIX);
        let mut builder = http::Request::builder().method(Method::GET).uri(&uri);
        for (name, value) in headers {
            if forwarded(name.as_str()) {
                builder = builder.header(name, value);
            }
        }
        let mut req = builder
            .body(Body::empty())
            .map_err(|e| ApiError::bad_request(format!("invalid path {uri:?}: {e}")))?;
        match &self.transport {
            ReadTransport::InProcess(router) => {
                for (name, value) in remote_user_headers(user) {
                    req.headers_mut().append(name, value);
                }
                req.extensions_mut().insert(PeerIdentity {
                    user: None,
                    front_proxy: true,
                });
                let resp = router.clone().oneshot(req).await.map_err(|e| match e {})?;
                Ok(Some(resp))
            }
            ReadTransport::ApiService => {
                let Some(backend) = self
                    .aggregator
                    .as_ref()
                    .and_then(|a| a.remote_for_path(merged_reads::SEARCH_PROXY_PREFIX))
                else {
                    return Ok(None);
                };
                Ok(Some(
                    flotilla_apiserver::aggregator::proxy(backend, req, user).await,
                ))
            }
        }
    }

    async fn merged(&self, ctx: &RequestContext) -> Result<Option<Response>, ApiError> {
        if self.bypass(ctx) {
            return Ok(None);
        }
        self.send(&ctx.info.uri, &ctx.headers, &ctx.user).await
    }

    /// The member clusters holding the object a failed write named, from a merged GET.
    async fn member_clusters(&self, ctx: &RequestContext) -> Vec<String> {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT,
            http::HeaderValue::from_static("application/json"),
        );
        let Ok(Some(resp)) = self.send(&ctx.info.path, &headers, &ctx.user).await else {
            return Vec::new();
        };
        if !resp.status().is_success() {
            return Vec::new();
        }
        let Ok(body) = resp.into_body().collect().await else {
            return Vec::new();
        };
        serde_json::from_slice::<Value>(&body.to_bytes())
            .map(|obj| {
                flotilla_fanout::cluster_replicas(&obj)
                    .into_iter()
                    .map(|(c, _)| c)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Runs a write; a 404 for an object members hold becomes a pointer to the member.
    async fn write(
        &self,
        ctx: &RequestContext,
        result: Result<Response, ApiError>,
    ) -> Result<Response, ApiError> {
        match result {
            Err(e) if e.code == 404 && ctx.path.name.is_some() => {
                let clusters = self.member_clusters(ctx).await;
                if clusters.is_empty() {
                    Err(e)
                } else {
                    Err(member_only(ctx, &clusters))
                }
            }
            other => other,
        }
    }
}

/// Headers a merged read carries to the aggregated server: content negotiation and the
/// client's name; credentials and identity are set by the transport.
fn forwarded(name: &str) -> bool {
    matches!(name, "accept" | "user-agent" | "accept-encoding")
}

fn member_only(ctx: &RequestContext, clusters: &[String]) -> ApiError {
    let name = ctx.path.name.clone().unwrap_or_default();
    let through: Vec<String> = clusters
        .iter()
        .map(|c| {
            format!(
                "/apis/cluster.karmada.io/v1alpha1/clusters/{c}/proxy{}",
                ctx.info.path
            )
        })
        .collect();
    let mut e = ApiError::not_found(&ctx.def.group, &ctx.def.plural, &name);
    e.message = format!(
        "{} \"{name}\" has no template on the host; it exists only in member cluster(s) {}: change it there through {}",
        ctx.def.plural,
        clusters.join(", "),
        through.join(" or ")
    );
    e
}

/// A write body with a merged read's traces removed: a composite resourceVersion becomes the
/// template's own (or an error when there is no template) and the merge's annotations go.
/// Bodies that are not JSON objects (YAML, protobuf, JSON patches) pass unchanged.
fn template_body(ctx: &RequestContext, body: &Bytes) -> Result<Bytes, ApiError> {
    let Ok(Value::Object(mut obj)) = serde_json::from_slice::<Value>(body) else {
        return Ok(body.clone());
    };
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return Ok(body.clone());
    };
    let mut changed = false;
    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
        for key in flotilla_fanout::RESERVED_ANNOTATIONS {
            changed |= annotations.remove(*key).is_some();
        }
    }
    changed |= to_template_version(ctx, meta)?;
    if !changed {
        return Ok(body.clone());
    }
    serde_json::to_vec(&obj)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// Replaces a composite `resourceVersion` in `fields` (an object's metadata, DeleteOptions'
/// preconditions) with the template's own revision; an error when there is no template (the
/// object exists only in members). True when it changed something.
fn to_template_version(
    ctx: &RequestContext,
    fields: &mut serde_json::Map<String, Value>,
) -> Result<bool, ApiError> {
    let Some(composite) = fields
        .get("resourceVersion")
        .and_then(Value::as_str)
        .filter(|rv| CompositeVersion::is_composite(rv))
        .map(CompositeVersion::parse)
    else {
        return Ok(false);
    };
    let version = composite.map_err(|e| ApiError::bad_request(e.to_string()))?;
    match version.template_object() {
        Some(own) => {
            fields.insert("resourceVersion".into(), Value::String(own.to_string()));
            Ok(true)
        }
        None => {
            let clusters: Vec<String> = version.members.keys().cloned().collect();
            Err(member_only(ctx, &clusters))
        }
    }
}

/// DeleteOptions whose `preconditions.resourceVersion` came from a merged read, checked
/// against the template's own revision.
fn template_delete_options(ctx: &RequestContext, body: &Bytes) -> Result<Bytes, ApiError> {
    let Ok(Value::Object(mut options)) = serde_json::from_slice::<Value>(body) else {
        return Ok(body.clone());
    };
    let Some(Value::Object(preconditions)) = options.get_mut("preconditions") else {
        return Ok(body.clone());
    };
    if !to_template_version(ctx, preconditions)? {
        return Ok(body.clone());
    }
    serde_json::to_vec(&options)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(e.to_string()))
}

#[async_trait::async_trait]
impl RestStorage for MergedReadStorage {
    async fn get(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        match self.merged(ctx).await? {
            Some(resp) => Ok(resp),
            None => GenericStore.get(ctx).await,
        }
    }

    async fn list(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        match self.merged(ctx).await? {
            Some(resp) => Ok(resp),
            None => GenericStore.list(ctx).await,
        }
    }

    async fn watch(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        match self.merged(ctx).await? {
            Some(resp) => Ok(resp),
            None => GenericStore.watch(ctx).await,
        }
    }

    async fn update(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        let body = template_body(ctx, body)?;
        let result = GenericStore.update(ctx, &body).await;
        self.write(ctx, result).await
    }

    async fn patch(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        let body = template_body(ctx, body)?;
        let result = GenericStore.patch(ctx, &body).await;
        self.write(ctx, result).await
    }

    async fn delete(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        let body = template_delete_options(ctx, body)?;
        let result = GenericStore.delete(ctx, &body).await;
        self.write(ctx, result).await
    }

    async fn create(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        GenericStore.create(ctx, body).await
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        body: &Bytes,
    ) -> Result<Response, ApiError> {
        GenericStore.delete_collection(ctx, body).await
    }
}
