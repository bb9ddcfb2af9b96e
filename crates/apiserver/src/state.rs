//! The state of one API server ([`ApiServer`]): its registry of resources, its storage, its
//! settings, authentication and authorization, aggregation, the OpenAPI and discovery
//! caches, what REST storages work with, and its background tasks. Building it and serving
//! it is [`crate::server`]; what works over it imports this module only.

use std::sync::Arc;
use std::time::Duration;

use flotilla_storage::Storage;

use crate::audit::AuditLog;
use crate::auth::TokenAuthenticator;
use crate::metrics::Metrics;
use crate::registry::Registry;
use crate::subresource::SubresourceHandler;
use crate::{discovery, openapi};
use flotilla_generic_store::context::StoreContext;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Largest accepted request body (kube-apiserver: 3 MiB).
    pub max_body_bytes: usize,
    /// Deadline of a non-watch request.
    pub request_timeout: Duration,
    /// Read-only requests served at once; past it, 429 (0: no limit). See [`crate::inflight`].
    pub max_requests_inflight: usize,
    /// Mutating requests served at once; past it, 429 (0: no limit).
    pub max_mutating_requests_inflight: usize,
    /// `/version` `minor` (kubectl on these machines picks its binary from it).
    pub minor: String,
    pub git_version: String,
    /// Largest object the generic store writes, as encoded for storage; larger ones get 413.
    pub max_object_bytes: usize,
    /// The random part of names made from `generateName`.
    pub name_generator: flotilla_generic_store::objects::NameGenerator,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 3 * 1024 * 1024,
            request_timeout: Duration::from_secs(60),
            max_requests_inflight: crate::inflight::DEFAULT_MAX_REQUESTS_INFLIGHT,
            max_mutating_requests_inflight: crate::inflight::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
            minor: "32".into(),
            git_version: "v1.32.0-flotilla".into(),
            max_object_bytes: flotilla_generic_store::objects::DEFAULT_MAX_OBJECT_BYTES,
            name_generator: flotilla_generic_store::objects::NameGenerator::default(),
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
    pub discovery: discovery::DiscoveryCache,
    /// What REST storages work with (storage, object limits, merge schemas, admission).
    pub store: Arc<StoreContext>,
    /// The background loops (APIServices, CRDs, RBAC, namespace cleanup) and whatever else
    /// runs with this server; `tasks.shutdown` stops and joins them.
    pub tasks: crate::tasks::Tasks,
    /// The max-in-flight limits.
    pub inflight: crate::inflight::InFlightLimits,
    /// The filters every request passes before it is routed, in order.
    pub filters: Vec<crate::filters::Filter>,
}

impl ApiServer {
    /// Serves `group`/`plural`/`{name}`/`subresource` with `handler` (see
    /// [`Registry::add_subresource`]).
    pub fn add_subresource_handler(
        &self,
        group: &str,
        plural: &str,
        subresource: &str,
        handler: Arc<dyn SubresourceHandler>,
    ) {
        self.registry
            .add_subresource(group, plural, subresource, handler);
    }
}
