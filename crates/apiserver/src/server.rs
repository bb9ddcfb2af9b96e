//! The server: shared state ([`ApiServer`]), the axum router, and the dispatcher that turns a
//! resource request into a verb on a [`ResourceDef`] over storage.
//!
//! ```text
//!  request -> panic guard -> trace span -> authn -> /version /healthz /metrics /openapi
//!                                                -> service-account issuer (OIDC) documents
//!                                                -> /api /apis discovery
//!                                                -> resource verbs (handlers, watch)
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_storage::Storage;
use http::{Method, StatusCode, header};
use serde_json::{Value, json};
use tracing::Instrument;

use crate::audit::AuditLog;
use crate::auth::{self, PeerIdentity, TokenAuthenticator, TokenAuthenticators, UserInfo};
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::request::{ApiPath, Query, ResourcePath, parse_api_path};
use crate::response::{error_response, json_value};
use crate::{discovery, handlers, namespaces, openapi, openapi_v2};

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest accepted request body (kube-apiserver: 3 MiB).
    pub max_body_bytes: usize,
    /// Deadline of a non-watch request.
    pub request_timeout: Duration,
    /// `/version` `minor` (kubectl on these machines picks its binary from it).
    pub minor: String,
    pub git_version: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 3 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            minor: "32".into(),
            git_version: "v1.32.0-flotilla".into(),
        }
    }
}

/// Everything a request handler needs.
pub struct ApiServer {
    pub registry: Arc<Registry>,
    pub storage: Arc<dyn Storage>,
    pub config: ServerConfig,
    pub metrics: Metrics,
    /// Every bearer-token authenticator (static tokens, service-account tokens), in order.
    pub tokens: Option<Arc<dyn TokenAuthenticator>>,
    /// Issues and checks service-account tokens (`serviceaccounts/token`), when configured.
    pub service_account_issuer: Option<Arc<crate::serviceaccount::TokenIssuer>>,
    /// Authorization; `None` allows every authenticated request (simulated members, tests).
    pub authorizer: Option<Arc<dyn crate::authz::Authorizer>>,
    /// The RBAC index when this server evaluates RBAC itself (fed from its storage; answers
    /// access reviews).
    pub rbac: Option<Arc<flotilla_rbac::RbacAuthorizer>>,
    pub audit: Option<Arc<AuditLog>>,
    /// API aggregation (present when APIServices are served).
    pub aggregator: Option<Arc<crate::aggregator::Aggregator>>,
    pub openapi: openapi::OpenApiCache,
    /// Merge schemas of custom resources (from their CRD's schema), by (group, plural), for
    /// server-side apply of list-map fields.
    pub merge_schemas: dashmap::DashMap<(String, String), Arc<flotilla_merge::Schema>>,
    /// Dynamic admission (present when the webhook configuration kinds are served).
    pub admission: Option<Arc<crate::admission::Admission>>,
    /// Custom subresources by (group, plural, subresource).
    pub subresource_handlers:
        dashmap::DashMap<(String, String, String), Arc<dyn SubresourceHandler>>,
    /// The background loops (APIServices, CRDs, RBAC, namespace cleanup) and whatever else
    /// runs with this server; `tasks.shutdown` stops and joins them.
    pub tasks: crate::tasks::Tasks,
}

/// Serves a subresource the generic verbs do not cover (a `proxy` to another server, ...).
/// Gets the request untouched (body unread, so it can stream).
#[async_trait::async_trait]
pub trait SubresourceHandler: Send + Sync {
    async fn handle(
        &self,
        server: &Arc<ApiServer>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Response;
}

/// The optional parts of a server.
#[derive(Default)]
pub struct ServerOptions {
    pub tokens: Option<Arc<dyn TokenAuthenticator>>,
    /// Service-account tokens: serves `serviceaccounts/token`, accepts the tokens it issued
    /// (after `tokens`) and publishes the issuer's OIDC documents.
    pub service_account_issuer: Option<Arc<crate::serviceaccount::TokenIssuer>>,
    /// RBAC evaluated here over this server's own Role/Binding objects.
    pub rbac: Option<Arc<flotilla_rbac::RbacAuthorizer>>,
    /// Another authorizer (e.g. delegated to a host with SubjectAccessReview); takes
    /// precedence over `rbac` for requests.
    pub authorizer: Option<Arc<dyn crate::authz::Authorizer>>,
    pub audit: Option<Arc<AuditLog>>,
    /// The front-proxy client certificate and key (PEM) the aggregator presents to
    /// extension API servers.
    pub proxy_client: Option<(String, String)>,
}

impl ApiServer {
    pub fn new(
        registry: Arc<Registry>,
        storage: Arc<dyn Storage>,
        config: ServerConfig,
    ) -> Arc<Self> {
        Self::with_options(registry, storage, config, ServerOptions::default())
    }

    pub fn with_options(
        registry: Arc<Registry>,
        storage: Arc<dyn Storage>,
        config: ServerConfig,
        options: ServerOptions,
    ) -> Arc<Self> {
        let aggregator = registry
            .get("apiregistration.k8s.io", "v1", "apiservices")
            .map(|_| Arc::new(crate::aggregator::Aggregator::new(options.proxy_client)));
        let metrics = Metrics::new();
        let admission = registry
            .any_version(crate::admission::GROUP, "validatingwebhookconfigurations")
            .map(|_| {
                Arc::new(crate::admission::Admission::new(
                    storage.clone(),
                    registry.clone(),
                    metrics.webhooks(),
                ))
            });
        crate::binding::advertise(&registry);
        let mut authenticators: Vec<Arc<dyn TokenAuthenticator>> =
            options.tokens.into_iter().collect();
        if let Some(issuer) = &options.service_account_issuer {
            crate::serviceaccount::advertise(&registry);
            authenticators.push(Arc::new(
                crate::serviceaccount::ServiceAccountAuthenticator::new(
                    issuer.clone(),
                    registry.clone(),
                    storage.clone(),
                ),
            ));
        }
        let tokens =
            match authenticators.len() {
                0 => None,
                1 => authenticators.pop(),
                _ => Some(Arc::new(TokenAuthenticators::new(authenticators))
                    as Arc<dyn TokenAuthenticator>),
            };
        let server = Arc::new(Self {
            admission,
            registry,
            storage,
            config,
            metrics,
            tokens,
            service_account_issuer: options.service_account_issuer.clone(),
            authorizer: options.authorizer.or_else(|| {
                options
                    .rbac
                    .clone()
                    .map(|r| r as Arc<dyn crate::authz::Authorizer>)
            }),
            rbac: options.rbac,
            audit: options.audit,
            aggregator,
            openapi: openapi::OpenApiCache::default(),
            merge_schemas: dashmap::DashMap::new(),
            subresource_handlers: dashmap::DashMap::new(),
            tasks: crate::tasks::Tasks::new(),
        });
        if let Some(issuer) = options.service_account_issuer {
            crate::serviceaccount::install(&server, issuer);
        }
        crate::binding::install(&server);
        server
    }

    /// The HTTP router serving this API server.
    /// Serves `group`/`plural`/`{name}`/`subresource` with `handler`.
    pub fn add_subresource_handler(
        &self,
        group: &str,
        plural: &str,
        subresource: &str,
        handler: Arc<dyn SubresourceHandler>,
    ) {
        self.subresource_handlers
            .insert((group.into(), plural.into(), subresource.into()), handler);
    }

    pub fn router(self: &Arc<Self>) -> Router {
        Router::new()
            .fallback(entry)
            .with_state(self.clone())
            .layer(tower_http::catch_panic::CatchPanicLayer::custom(
                panic_response,
            ))
    }

    /// Starts background work: RBAC indexing (before it returns, so the first request is
    /// authorized against stored policy), the CRD controller, and namespace termination a
    /// restart may have interrupted. All of it runs in [`ApiServer::tasks`], which
    /// `tasks.shutdown` stops and joins.
    pub async fn start_background(self: &Arc<Self>) -> Result<(), flotilla_storage::StorageError> {
        if let Some(authz) = &self.rbac {
            crate::rbac_sync::start(self.storage.clone(), authz.clone(), &self.tasks).await?;
        }
        namespaces::resume_terminating(self.clone());
        crate::aggregator::start(self.clone()).await;
        if self
            .registry
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .is_some()
        {
            crate::crds::start(self.clone()).await;
        }
        Ok(())
    }
}

fn panic_response(_err: Box<dyn std::any::Any + Send + 'static>) -> Response {
    error_response(&ApiError::internal(
        "an internal error occurred while handling the request",
    ))
}

/// What the metrics and logs call a request.
struct RequestLabel {
    verb: &'static str,
    resource: String,
}

/// Who made a request and as whom it ran, for logs and audit.
#[derive(Default)]
struct Caller {
    user: Option<UserInfo>,
    impersonator: Option<UserInfo>,
}

async fn entry(State(server): State<Arc<ApiServer>>, req: Request) -> Response {
    let start = Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let uri = req
        .uri()
        .path_and_query()
        .map(|pq| pq.to_string())
        .unwrap_or_else(|| path.clone());
    let user_agent = req
        .headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let span = tracing::info_span!("request", %method, path = %path, user = tracing::field::Empty);
    let mut caller = Caller::default();
    let (resp, label) = async {
        let unknown = || RequestLabel {
            verb: "unknown",
            resource: String::new(),
        };
        let public = auth::is_public_path(&path);
        let peer = req.extensions().get::<PeerIdentity>().cloned();
        let user =
            match auth::authenticate(peer.as_ref(), req.headers(), server.tokens.as_ref()).await {
                Ok(u) => Some(u),
                Err(_) if public => None,
                Err(e) => return (error_response(&e), unknown()),
            };
        let user = match user {
            Some(u) => {
                match crate::authz::impersonate(server.authorizer.as_deref(), &u, req.headers())
                    .await
                {
                    Ok(Some(as_user)) => {
                        caller.impersonator = Some(u);
                        Some(as_user)
                    }
                    Ok(None) => Some(u),
                    Err(e) => {
                        caller.user = Some(u);
                        return (error_response(&e), unknown());
                    }
                }
            }
            None => None,
        };
        caller.user = user.clone();
        if let Some(u) = &user {
            tracing::Span::current().record("user", u.name.as_str());
            if let Some(authz) = &server.authorizer {
                if !public {
                    let api_path = parse_api_path(&path);
                    let watch = Query::parse(req.uri().query()).flag("watch");
                    let attrs = crate::authz::RequestAttributes::for_request(
                        req.method(),
                        &path,
                        api_path.as_ref(),
                        watch,
                    );
                    if let Err(e) = authz.authorize(u, &attrs).await {
                        let resource = match attrs.subresource.as_str() {
                            "" => attrs.resource.clone(),
                            sub => format!("{}/{sub}", attrs.resource),
                        };
                        return (
                            error_response(&e),
                            RequestLabel {
                                verb: static_verb(&attrs.verb),
                                resource,
                            },
                        );
                    }
                }
            }
        }
        route(&server, req, user, &user_agent).await
    }
    .instrument(span.clone())
    .await;
    let code = resp.status().as_u16();
    let elapsed = start.elapsed();
    server
        .metrics
        .observe(label.verb, &label.resource, code, elapsed);
    span.in_scope(|| {
        tracing::info!(verb = label.verb, resource = %label.resource, code, latency_ms = elapsed.as_secs_f64() * 1000.0, "handled")
    });
    if let Some(audit) = &server.audit {
        audit.record(&serde_json::json!({
            "time": crate::objects::now_rfc3339(),
            "user": caller.user.as_ref().map(|u| u.name.clone()),
            "groups": caller.user.as_ref().map(|u| u.groups.clone()),
            "impersonatedBy": caller.impersonator.as_ref().map(|u| u.name.clone()),
            "verb": label.verb,
            "resource": label.resource,
            "method": method.as_str(),
            "requestURI": uri,
            "namespace": audit_namespace(&path),
            "code": code,
            "latencyMs": (elapsed.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
        }));
    }
    resp
}

async fn route(
    server: &Arc<ApiServer>,
    req: Request,
    user: Option<UserInfo>,
    user_agent: &str,
) -> (Response, RequestLabel) {
    let path = req.uri().path().to_string();
    let label = |verb: &'static str| RequestLabel {
        verb,
        resource: String::new(),
    };
    match path.as_str() {
        "/version" => {
            return (
                json_value(StatusCode::OK, &version_info(&server.config)),
                label("get"),
            );
        }
        "/healthz" | "/livez" | "/readyz" | "/healthz/ping" | "/livez/ping" | "/readyz/ping" => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            return (r, label("get"));
        }
        _ => {}
    }
    let Some(user) = user else {
        return (
            error_response(&ApiError::unauthorized("Unauthorized")),
            label("unknown"),
        );
    };
    if path == "/metrics" {
        return (server.metrics.render(), label("get"));
    }
    if let Some(agg) = &server.aggregator {
        let api_part = path.strip_prefix("/openapi/v3").unwrap_or(&path);
        if let Some(backend) = agg.remote_for_path(api_part) {
            let resource = path
                .split('/')
                .nth(if api_part.len() < path.len() { 6 } else { 4 })
                .unwrap_or_default()
                .to_string();
            let verb = if req.method() == Method::GET {
                "get"
            } else {
                "proxy"
            };
            return (
                crate::aggregator::proxy(backend, req, &user).await,
                RequestLabel { verb, resource },
            );
        }
    }
    if let Some(issuer) = &server.service_account_issuer {
        if req.method() == Method::GET {
            if let Some(resp) = crate::serviceaccount::serve_oidc(issuer, &path) {
                return (resp, label("get"));
            }
        }
    }
    if path == "/openapi/v3" || path.starts_with("/openapi/v3/") {
        return (openapi::serve(server, &path), label("get"));
    }
    if path == "/openapi/v2" || path == openapi_v2::LEGACY_PATH {
        return (
            openapi_v2::serve(server, &path, req.headers()),
            label("get"),
        );
    }
    let Some(api_path) = parse_api_path(&path) else {
        return (
            error_response(&ApiError::path_not_found()),
            label("unknown"),
        );
    };
    let headers = req.headers().clone();
    match api_path {
        ApiPath::Root { legacy } if req.method() == Method::GET => (
            discovery::root(&server.registry, legacy, &headers, &external_groups(server)),
            label("get"),
        ),
        ApiPath::Group { group } if req.method() == Method::GET => (
            discovery::group(&server.registry, &group, &external_groups(server))
                .unwrap_or_else(|e| error_response(&e)),
            label("get"),
        ),
        ApiPath::GroupVersion { group, version } if req.method() == Method::GET => (
            discovery::group_version(&server.registry, &group, &version)
                .unwrap_or_else(|e| error_response(&e)),
            label("get"),
        ),
        ApiPath::Resource(rp) => {
            let Some(def) = server.registry.get(&rp.group, &rp.version, &rp.resource) else {
                return (
                    error_response(&ApiError::path_not_found()),
                    label("unknown"),
                );
            };
            let resource = match &rp.subresource {
                Some(s) => format!("{}/{}", def.plural, s),
                None => def.plural.clone(),
            };
            let connect = rp.subresource.as_ref().is_some_and(|sub| {
                server.subresource_handlers.contains_key(&(
                    def.group.clone(),
                    def.plural.clone(),
                    sub.clone(),
                ))
            });
            // A custom subresource's verb is the one authorization used (POST = create).
            let verb = if connect {
                let watch = Query::parse(req.uri().query()).flag("watch");
                crate::authz::resource_verb(req.method(), &rp, watch)
            } else {
                verb_of(req.method(), &rp, &req)
            };
            let resp = if verb == "watch" || connect {
                resource_request(server, def, rp, req, user, user_agent, verb).await
            } else {
                match tokio::time::timeout(
                    server.config.request_timeout,
                    resource_request(server, def, rp, req, user, user_agent, verb),
                )
                .await
                {
                    Ok(r) => r,
                    Err(_) => error_response(&ApiError::timeout(format!(
                        "request did not complete within {}s",
                        server.config.request_timeout.as_secs()
                    ))),
                }
            };
            (resp, RequestLabel { verb, resource })
        }
        _ => (
            error_response(&ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            )),
            label("unknown"),
        ),
    }
}

fn verb_of(method: &Method, rp: &ResourcePath, req: &Request) -> &'static str {
    let q = Query::parse(req.uri().query());
    match (method.as_str(), rp.name.is_some()) {
        ("GET", false) if q.flag("watch") => "watch",
        ("GET", false) => "list",
        ("GET", true) if q.flag("watch") => "watch",
        ("GET", true) => "get",
        ("POST", false) => "create",
        ("PUT", true) => "update",
        ("PATCH", true) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "unknown",
    }
}

#[allow(clippy::too_many_arguments)]
async fn resource_request(
    server: &Arc<ApiServer>,
    def: Arc<ResourceDef>,
    rp: ResourcePath,
    req: Request,
    user: UserInfo,
    user_agent: &str,
    verb: &'static str,
) -> Response {
    if def.create_only && verb != "create" {
        return error_response(&ApiError::method_not_allowed(format!(
            "{} only supports create",
            flotilla_apimachinery::status::qualified_resource(&def.group, &def.plural)
        )));
    }
    if def.namespaced && rp.namespace.is_none() && !matches!(verb, "list" | "watch") {
        return error_response(&ApiError::path_not_found());
    }
    if !def.namespaced && rp.namespace.is_some() {
        return error_response(&ApiError::path_not_found());
    }
    if let Some(sub) = rp.subresource.as_deref() {
        let handler = server
            .subresource_handlers
            .get(&(def.group.clone(), def.plural.clone(), sub.to_string()))
            .map(|h| h.value().clone());
        if let Some(handler) = handler {
            return handler.handle(server, &def, &rp, req, &user).await;
        }
        if rp.sub_path.is_some() {
            return error_response(&ApiError::path_not_found());
        }
    }
    let (parts, body) = req.into_parts();
    let query = Query::parse(parts.uri.query());
    match rp.subresource.as_deref() {
        None => {}
        Some("scale") if def.scale.is_some() => {}
        Some(sub) if def.subresource_path(sub).is_some() => {}
        Some(_) => return error_response(&ApiError::path_not_found()),
    }
    let body = if matches!(
        verb,
        "create" | "update" | "patch" | "delete" | "deletecollection"
    ) {
        match handlers::read_body(server, body).await {
            Ok(b) => b,
            Err(e) => return error_response(&e),
        }
    } else {
        Bytes::new()
    };
    let ctx = handlers::RequestContext {
        server: server.clone(),
        def,
        path: rp,
        query,
        headers: parts.headers,
        user,
        user_agent: user_agent.to_string(),
    };
    if let (Some(authz), "update" | "patch") = (&server.authorizer, verb) {
        let objects = ctx.objects();
        if let Err(e) = crate::authz::authorize_subresource_write(
            authz.as_ref(),
            &objects,
            &ctx.path,
            &ctx.user,
        )
        .await
        {
            return error_response(&e);
        }
    }
    let result = match verb {
        "get" => handlers::get(&ctx).await,
        "list" => handlers::list(&ctx).await,
        "watch" => crate::watch::watch(&ctx).await,
        "create" => handlers::create(&ctx, &body).await,
        "update" => handlers::update(&ctx, &body).await,
        "patch" => handlers::patch(&ctx, &body).await,
        "delete" => handlers::delete(&ctx, &body).await,
        "deletecollection" => handlers::delete_collection(&ctx, &body).await,
        _ => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    };
    result.unwrap_or_else(|e| error_response(&e))
}

/// The namespace a request path is in, for the audit log.
fn audit_namespace(path: &str) -> Option<String> {
    match parse_api_path(path) {
        Some(ApiPath::Resource(rp)) => rp.namespace,
        _ => None,
    }
}

/// Verbs as static labels for metrics (anything else is `other`).
fn static_verb(verb: &str) -> &'static str {
    match verb {
        "get" => "get",
        "list" => "list",
        "watch" => "watch",
        "create" => "create",
        "update" => "update",
        "patch" => "patch",
        "delete" => "delete",
        "deletecollection" => "deletecollection",
        "impersonate" => "impersonate",
        "post" => "post",
        "put" => "put",
        _ => "other",
    }
}

fn external_groups(server: &ApiServer) -> Vec<crate::aggregator::ExternalGroup> {
    server
        .aggregator
        .as_ref()
        .map(|a| a.external_groups())
        .unwrap_or_default()
}

fn version_info(config: &ServerConfig) -> Value {
    json!({
        "major": "1",
        "minor": config.minor,
        "gitVersion": config.git_version,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.23.0",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, if std::env::consts::ARCH == "x86_64" { "amd64" } else { std::env::consts::ARCH }),
    })
}
