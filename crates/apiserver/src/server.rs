//! The server's assembly and serving: how an [`ApiServer`] is built from its options (the
//! built-in storages and subresources installed), its background loops, the axum router,
//! the filters every request passes and the dispatcher that hands a resource request to the
//! [`RestStorage`] the [`Registry`] holds for its resource. The server's state itself is
//! [`crate::state`]; the modules that work over it (APIServices, CRDs, namespaces, reviews)
//! import that, and only this module imports them.
//!
//! ```text
//!  request -> panic guard -> request info (parsed once) -> trace span -> the filters
//!          (filters.rs: authn -> impersonation -> in-flight -> authz) -> /version /healthz /metrics /openapi
//!                                    -> service-account issuer (OIDC) documents
//!                                    -> APIService proxy | /api /apis discovery
//!                                    -> resource: custom subresource | RestStorage verb
//!          -> metrics, debug log line, audit record (all from the request info)
//! ```

use std::sync::Arc;
use std::time::Instant;

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
use crate::auth::{PeerIdentity, TokenAuthenticator, TokenAuthenticators};
use crate::filters::{Filter, Filtered};
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::response::{error_response, json_value};
use crate::state::{ApiServer, ServerConfig};
use crate::subresource::SubresourceHandler;
use crate::{discovery, handlers, namespaces, openapi, openapi_v2};
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::{RequestContext, StoreContext};
use flotilla_generic_store::request::{ApiPath, RequestInfo, ResourcePath, Verb};
use flotilla_generic_store::rest::RestStorage;

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
    /// Compiled-in validating admission checks, in order (see [`flotilla_generic_store::builtin_admission`]).
    pub admission_plugins:
        Vec<Arc<dyn flotilla_generic_store::builtin_admission::ValidatingPlugin>>,
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
            .any_version(
                flotilla_generic_store::admission::GROUP,
                "validatingwebhookconfigurations",
            )
            .map(|_| {
                Arc::new(flotilla_generic_store::admission::Admission::new(
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
        let inflight = crate::inflight::InFlightLimits::new(
            config.max_requests_inflight,
            config.max_mutating_requests_inflight,
        );
        inflight.register(&metrics);
        let store = Arc::new(StoreContext {
            storage: storage.clone(),
            max_body_bytes: config.max_body_bytes,
            max_object_bytes: config.max_object_bytes,
            name_generator: config.name_generator.clone(),
            merge_schemas: Arc::default(),
            admission,
            admission_plugins: options.admission_plugins,
        });
        let authorizer = options.authorizer.or_else(|| {
            options
                .rbac
                .clone()
                .map(|r| r as Arc<dyn crate::authz::Authorizer>)
        });
        let server = Arc::new(Self {
            filters: Filter::chain(authorizer.is_some()),
            inflight,
            store,
            registry,
            storage,
            config,
            metrics,
            tokens,
            service_account_issuer: options.service_account_issuer.clone(),
            authorizer,
            rbac: options.rbac,
            audit: options.audit,
            aggregator,
            openapi: openapi::OpenApiCache::default(),
            discovery: discovery::DiscoveryCache::default(),
            tasks: crate::tasks::Tasks::new(),
        });
        if let Some(issuer) = options.service_account_issuer {
            crate::serviceaccount::install(&server.registry, issuer);
        }
        crate::binding::install(&server.registry);
        crate::reviews::ReviewStorage::install(&server);
        namespaces::NamespaceStorage::install(&server);
        server
    }

    /// The HTTP router serving this API server.
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
        crate::apiservices::start(self.clone()).await;
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

async fn entry(State(server): State<Arc<ApiServer>>, mut req: Request) -> Response {
    let started = Instant::now();
    let info = Arc::new(RequestInfo::parse(req.method(), req.uri(), req.headers()));
    req.extensions_mut().insert(info.clone());
    let span = tracing::debug_span!("request", method = %info.method, path = %info.path, user = tracing::field::Empty);
    let version = req.version();
    let mut state = Filtered::new(info, started);
    let peer = req.extensions().get::<PeerIdentity>().cloned();
    let resp = async {
        for filter in &server.filters {
            if let Err(e) = filter
                .apply(&server, req.headers(), peer.as_ref(), &mut state)
                .await
            {
                return error_response(&e);
            }
        }
        let resp = route(&server, req, &state.info, state.user.clone()).await;
        state.hold_until_sent(resp, &server)
    }
    .instrument(span.clone())
    .await;
    crate::filters::observe(&server, &state, resp, version, &span)
}

async fn route(
    server: &Arc<ApiServer>,
    req: Request,
    info: &Arc<RequestInfo>,
    user: Option<UserInfo>,
) -> Response {
    let path = info.path.as_str();
    match path {
        "/version" => return json_value(StatusCode::OK, &version_info(&server.config)),
        "/healthz" | "/livez" | "/readyz" | "/healthz/ping" | "/livez/ping" | "/readyz/ping" => {
            let mut r = Response::new(Body::from("ok"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            return r;
        }
        _ => {}
    }
    let Some(user) = user else {
        return error_response(&ApiError::unauthorized("Unauthorized"));
    };
    if path == "/metrics" {
        return server.metrics.render();
    }
    if let Some(agg) = &server.aggregator {
        let api_part = path.strip_prefix("/openapi/v3").unwrap_or(path);
        if let Some(backend) = agg.remote_for_path(api_part) {
            let mut req = req;
            if info.verb == Verb::List {
                req.extensions_mut().insert(crate::proxy::ListRequest);
            }
            return crate::aggregator::proxy(backend, req, &user).await;
        }
    }
    if let Some(issuer) = &server.service_account_issuer {
        if req.method() == Method::GET {
            if let Some(resp) = crate::serviceaccount::serve_oidc(issuer, path) {
                return resp;
            }
        }
    }
    if path == "/openapi/v3" || path.starts_with("/openapi/v3/") {
        return openapi::serve(
            &server.openapi,
            &server.registry,
            server.aggregator.as_deref(),
            &server.config.git_version,
            path,
        );
    }
    if path == "/openapi/v2" || path == openapi_v2::LEGACY_PATH {
        return openapi_v2::serve(
            &server.openapi.v2,
            &server.registry,
            &server.config.git_version,
            path,
            req.headers(),
        );
    }
    let Some(api_path) = &info.api else {
        return error_response(&ApiError::path_not_found());
    };
    match api_path {
        ApiPath::Root { legacy } if info.verb == Verb::Get => discovery::root(
            &server.registry,
            &server.discovery,
            *legacy,
            req.headers(),
            &external_groups(server),
        ),
        ApiPath::Group { group } if info.verb == Verb::Get => {
            discovery::group(&server.registry, group, &external_groups(server))
                .unwrap_or_else(|e| error_response(&e))
        }
        ApiPath::GroupVersion { group, version } if info.verb == Verb::Get => {
            discovery::group_version(&server.registry, &server.discovery, group, version)
                .unwrap_or_else(|e| error_response(&e))
        }
        ApiPath::Resource(rp) => {
            let Some((def, storage)) =
                server
                    .registry
                    .resolve(&rp.group, &rp.version, &rp.resource)
            else {
                return error_response(&ApiError::path_not_found());
            };
            let custom = rp
                .subresource
                .as_deref()
                .and_then(|sub| server.registry.subresource(&def.group, &def.plural, sub));
            let request = ResourceRequest {
                server,
                def,
                storage,
                custom,
                path: rp,
                info,
                user,
            };
            if info.verb == Verb::Watch || request.custom.is_some() {
                request.serve(req).await
            } else {
                match tokio::time::timeout(server.config.request_timeout, request.serve(req)).await
                {
                    Ok(r) => r,
                    Err(_) => error_response(&ApiError::timeout(format!(
                        "request did not complete within {}s",
                        server.config.request_timeout.as_secs()
                    ))),
                }
            }
        }
        _ => error_response(&ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// A routed resource request: the resource, what serves it and who asks.
struct ResourceRequest<'a> {
    server: &'a Arc<ApiServer>,
    def: Arc<ResourceDef>,
    storage: Arc<dyn RestStorage>,
    /// The handler of a custom subresource the request targets.
    custom: Option<Arc<dyn SubresourceHandler>>,
    path: &'a ResourcePath,
    info: &'a Arc<RequestInfo>,
    user: UserInfo,
}

impl ResourceRequest<'_> {
    async fn serve(self, req: Request) -> Response {
        self.dispatch(req)
            .await
            .unwrap_or_else(|e| error_response(&e))
    }

    async fn dispatch(self, req: Request) -> Result<Response, ApiError> {
        let (def, rp, verb) = (&self.def, self.path, self.info.verb);
        if def.create_only && verb != Verb::Create {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                flotilla_apimachinery::status::qualified_resource(&def.group, &def.plural)
            )));
        }
        if def.namespaced && rp.namespace.is_none() && !matches!(verb, Verb::List | Verb::Watch) {
            return Err(ApiError::path_not_found());
        }
        if !def.namespaced && rp.namespace.is_some() {
            return Err(ApiError::path_not_found());
        }
        // PUT and PATCH are routes of named objects only (their verbs are still update and
        // patch for authorization, as in kube's request info).
        if matches!(verb, Verb::Update | Verb::Patch) && rp.name.is_none() {
            return Err(ApiError::method_not_allowed(
                "the server does not allow this method on the requested resource",
            ));
        }
        if let Some(handler) = &self.custom {
            return Ok(handler
                .handle(&self.server.store, &self.def, rp, req, &self.user)
                .await);
        }
        if rp.sub_path.is_some() {
            return Err(ApiError::path_not_found());
        }
        match rp.subresource.as_deref() {
            None => {}
            Some("scale") if def.scale.is_some() => {}
            Some(sub) if def.subresource_path(sub).is_some() => {}
            Some(_) => return Err(ApiError::path_not_found()),
        }
        let (parts, body) = req.into_parts();
        let body = if verb.has_body() {
            handlers::read_body(self.server.store.max_body_bytes, &parts.headers, body).await?
        } else {
            Bytes::new()
        };
        self.info.options()?;
        let ctx = RequestContext {
            store: self.server.store.clone(),
            def: self.def.clone(),
            path: rp.clone(),
            info: self.info.clone(),
            headers: parts.headers,
            user: self.user,
        };
        if let (Some(authz), Verb::Update | Verb::Patch) = (&self.server.authorizer, verb) {
            crate::authz::authorize_subresource_write(
                authz.as_ref(),
                &ctx.def,
                &ctx.path,
                &ctx.user,
                || async {
                    let name = ctx.path.name.as_deref().unwrap_or_default();
                    ctx.objects().get(ctx.path.namespace.as_deref(), name).await
                },
            )
            .await?;
        }
        handlers::serve(self.storage.as_ref(), &ctx, verb, &body).await
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
