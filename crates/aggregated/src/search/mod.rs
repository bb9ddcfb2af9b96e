//! Merged reads: `search.karmada.io/v1alpha1` `proxying/karmada/proxy/{api|apis}/...` answers
//! GET, LIST and WATCH of the configured workload resources by asking the host's template
//! store and every Ready member cluster concurrently and merging the answers with
//! `flotilla_fanout` (one item per namespace/name, status summed, the clusters holding it
//! named). The host routes its own reads of those resources here (its `MergedReadStorage`), and a
//! client can point kubectl at the path directly, which also works where the host is a real
//! kube-apiserver.
//!
//! ```text
//!  request ──► parse the inner path (RequestInfo) ──► authorize the inner request
//!          ──► clusters: Ready, allowed by a `cluster.karmada.io/name` selector
//!          ──► template store (host) ┐
//!              member 1..N (as the   ├─ concurrently, each bounded by the member timeout;
//!              caller, impersonated) ┘  a failed member becomes a Warning header
//!          ──► merge (flotilla_fanout) ──► JSON, Table (+CLUSTERS) or a watch stream
//! ```
//!
//! Writes are not served here: they go to the host's template store.

mod cache;
mod sources;
mod watch;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::authz::RequestAttributes;
use flotilla_apiserver::handlers::{encode_object, list_response, watch_response};
use flotilla_apiserver::response::{error_response, negotiate};
use flotilla_apiserver::subresource::SubresourceHandler;
use flotilla_fanout::{
    ClusterFilter, CompositeVersion, ContinueToken, MemberObject, SourceObject, Sources,
};
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::{RequestContext, StoreContext};
use flotilla_generic_store::filter::Selection;
use flotilla_generic_store::request::{ListOptions, RequestInfo, ResourcePath, Verb};
use flotilla_generic_store::rest::{ListAnswer, Object, ObjectAnswer, RestStorage, WatchAnswer};
use flotilla_names::merged_reads;
use serde_json::{Value, json};
use tracing::Instrument;

use crate::members::MemberConnections;
pub use sources::{
    Endpoint, HostTemplates, SourceError, TEMPLATE_READ_HEADER, TemplateStore, Templates,
};

/// The resource Karmada serves the search proxy under.
pub const PROXYING: &str = "proxying";

/// `search.karmada.io/v1alpha1 proxying`: cluster-scoped, with the `proxy` subresource (the
/// only thing it serves).
pub fn proxying_resource() -> ResourceDef {
    let mut def = ResourceDef::new(
        merged_reads::SEARCH_GROUP,
        merged_reads::SEARCH_VERSION,
        "Proxying",
        PROXYING,
        false,
    );
    def.connect_subresources = vec!["proxy".into()];
    def
}

/// Whether `attrs` is a request to the search proxy, whose handler authorizes the request it
/// carries (the caller needs `get`/`list`/`watch` on the merged resource, not on `proxying`).
pub fn authorized_by_handler(attrs: &RequestAttributes) -> bool {
    attrs.resource_request
        && attrs.api_group == merged_reads::SEARCH_GROUP
        && attrs.resource == PROXYING
        && attrs.subresource == "proxy"
}

/// How merged reads behave.
#[derive(Debug, Clone)]
pub struct MergedReadOptions {
    /// The resources merged, as `plural.group` (`pods` for the core group).
    pub resources: Vec<String>,
    /// How long one member may take to answer before the read goes on without it.
    pub member_timeout: Duration,
    /// Per-cluster watch caches of the merged resources (LIST and GET read memory).
    pub cache: bool,
    /// The caches hold at most this many objects in all; reads past it stay uncached.
    pub cache_max_objects: usize,
    /// Merged GETs and LISTs fanned out at once; past it, 429 (0: no bound). See
    /// [`default_max_merged_reads_inflight`].
    pub max_inflight: usize,
}

/// Merged reads fanned out at once per CPU by default.
pub const MERGED_READS_INFLIGHT_PER_CPU: usize = 8;

/// The default bound of merged reads fanned out at once (`--max-merged-reads-inflight`):
/// [`MERGED_READS_INFLIGHT_PER_CPU`] per CPU this process may use.
///
/// A merged read is a read of the template store, one per member and a merge. With the
/// member caches it is CPU work in this process (the merge and its encoding) around one
/// round trip for the templates, so a few per CPU keep the CPUs busy, and more only queue
/// for them: every read in flight gets slower with each one admitted. 200 merged LISTs at
/// once on two CPUs had a p99 of 4.7 s; past the bound a read is told to retry (429,
/// `Retry-After: 1`) rather than slow down the ones being served. kube-apiserver's read limit
/// (400) is for reads of one store; a merged read costs several.
pub fn default_max_merged_reads_inflight() -> usize {
    MERGED_READS_INFLIGHT_PER_CPU * std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Default for MergedReadOptions {
    fn default() -> Self {
        Self {
            resources: merged_reads::default_resources(),
            member_timeout: Duration::from_secs(5),
            cache: true,
            cache_max_objects: 1_000_000,
            max_inflight: default_max_merged_reads_inflight(),
        }
    }
}

/// What every merged read shares.
pub(crate) struct Shared {
    pub members: Arc<MemberConnections>,
    /// The host, for discovery under the search path.
    pub host: kube::Client,
    /// Where templates are read.
    pub templates: Templates,
    /// The merged resources by (group, version, plural), their printers extended with the
    /// CLUSTERS columns.
    pub resources: BTreeMap<(String, String, String), Arc<ResourceDef>>,
    pub member_timeout: Duration,
    pub caches: Option<cache::MemberCaches>,
    pub clusters: ClusterIndex,
}

/// The merged reads' REST storage: GET, LIST and WATCH of a merged resource, answered with
/// merged objects. Served on the search proxy's paths ([`SearchProxy`]) and, in one process,
/// installed by the host on its own resources (the host's `MergedReadStorage` calls it: no
/// request leaves the process).
pub struct MergedStore {
    /// The aggregated server the reads are served from (weak: the server holds the store
    /// through its handler): its storage of Clusters, its metrics.
    server: std::sync::Weak<ApiServer>,
    shared: Arc<Shared>,
    /// The fan-outs of GETs and LISTs under way, bounded by [`MergedReadOptions::max_inflight`].
    fanouts: FanOutLimit,
}

/// The `proxying/proxy` handler: the request the path carries, authorized and answered by
/// the [`MergedStore`].
pub struct SearchProxy {
    /// The server this proxy serves in (weak: the server holds the proxy): its authorizer.
    server: std::sync::Weak<ApiServer>,
    store: Arc<MergedStore>,
}

/// The bound of merged reads fanned out at once, and a gauge of them on `/metrics`. Watches
/// are not counted (they last as long as the client wants, as the in-flight limits leave
/// them), nor are the callers the in-flight limits exempt.
struct FanOutLimit {
    places: Option<tokio::sync::Semaphore>,
    current: prometheus_client::metrics::gauge::Gauge,
}

/// A merged read's place among the fan-outs; freed when dropped.
struct FanOut<'a> {
    _permit: Option<tokio::sync::SemaphorePermit<'a>>,
    current: &'a prometheus_client::metrics::gauge::Gauge,
}

impl Drop for FanOut<'_> {
    fn drop(&mut self) {
        self.current.dec();
    }
}

impl FanOutLimit {
    fn new(server: &ApiServer, max: usize) -> Self {
        let current = prometheus_client::metrics::gauge::Gauge::default();
        server.metrics.register(
            "flotilla_merged_reads_inflight",
            "Merged GETs and LISTs being fanned out to the member clusters",
            current.clone(),
        );
        Self {
            places: (max > 0).then(|| tokio::sync::Semaphore::new(max)),
            current,
        }
    }

    /// A place for a merged read by `user`, or the 429 to answer when none is free.
    fn admit(&self, user: &UserInfo) -> Result<FanOut<'_>, ApiError> {
        let permit = match &self.places {
            Some(places) if !flotilla_apiserver::inflight::exempt_user(user) => Some(
                places
                    .try_acquire()
                    .map_err(|_| flotilla_apiserver::inflight::too_many())?,
            ),
            _ => None,
        };
        self.current.inc();
        Ok(FanOut {
            _permit: permit,
            current: &self.current,
        })
    }
}

impl SearchProxy {
    /// The search proxy of `store`, served by `server`.
    pub fn new(server: &Arc<ApiServer>, store: Arc<MergedStore>) -> Self {
        Self {
            server: Arc::downgrade(server),
            store,
        }
    }

    /// Names in `resources` that are no built-in resource.
    pub fn unknown_resources(resources: &[String]) -> Vec<String> {
        let builtins = flotilla_kinds::builtin_resources();
        resources
            .iter()
            .filter(|name| {
                let (group, plural) = merged_reads::parse_resource(name);
                !builtins
                    .iter()
                    .any(|d| d.group == group && d.plural == plural)
            })
            .cloned()
            .collect()
    }
}

impl MergedStore {
    /// Merged reads of `options.resources` (looked up among the built-in kinds; unknown names
    /// are reported by [`SearchProxy::unknown_resources`]), their templates read from
    /// `templates`.
    pub fn new(
        server: &Arc<ApiServer>,
        members: Arc<MemberConnections>,
        host: kube::Client,
        templates: Templates,
        options: &MergedReadOptions,
    ) -> Self {
        let builtins = flotilla_kinds::builtin_resources();
        let mut resources = BTreeMap::new();
        for name in &options.resources {
            let (group, plural) = merged_reads::parse_resource(name);
            for def in builtins
                .iter()
                .filter(|d| d.group == group && d.plural == plural)
            {
                resources.insert(
                    (def.group.clone(), def.version.clone(), def.plural.clone()),
                    Arc::new(flotilla_fanout::merged_resource(def)),
                );
            }
        }
        let caches = options.cache.then(|| {
            cache::MemberCaches::new(
                server,
                members.clone(),
                options.cache_max_objects,
                options.member_timeout,
            )
        });
        Self {
            server: Arc::downgrade(server),
            fanouts: FanOutLimit::new(server, options.max_inflight),
            shared: Arc::new(Shared {
                members,
                host,
                templates,
                resources,
                member_timeout: options.member_timeout,
                clusters: ClusterIndex::new(),
                caches,
            }),
        }
    }
}

#[async_trait::async_trait]
impl SubresourceHandler for SearchProxy {
    async fn handle(
        &self,
        store: &Arc<StoreContext>,
        _def: &Arc<ResourceDef>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Response {
        let Some(server) = self.server.upgrade() else {
            return error_response(&ApiError::service_unavailable(
                "the server is shutting down",
            ));
        };
        match self.serve(&server, store, path, req, user).await {
            Ok(resp) => resp,
            Err(e) => error_response(&e),
        }
    }

    fn carried_request(&self, info: &RequestInfo) -> Option<RequestInfo> {
        let sub_path = info.resource()?.sub_path.as_deref().unwrap_or("/");
        let query = info.uri.split_once('?').map(|(_, q)| q);
        carried(sub_path, query, &info.method, &http::HeaderMap::new()).ok()
    }
}

/// The request a search-proxy path carries: `sub_path` (`/apis/apps/v1/deployments`) with
/// the proxy request's query.
fn carried(
    sub_path: &str,
    query: Option<&str>,
    method: &http::Method,
    headers: &http::HeaderMap,
) -> Result<RequestInfo, ApiError> {
    let uri: http::Uri = match query {
        Some(q) => format!("{sub_path}?{q}"),
        None => sub_path.to_string(),
    }
    .parse()
    .map_err(|e| ApiError::bad_request(format!("invalid path {sub_path:?}: {e}")))?;
    Ok(RequestInfo::parse(method, &uri, headers))
}

/// The API path of `def`'s collection (in `namespace`, when given) or of object `name`.
pub(crate) fn resource_path(
    def: &ResourceDef,
    namespace: Option<&str>,
    name: Option<&str>,
) -> String {
    let mut p = if def.group.is_empty() {
        format!("/api/{}", def.version)
    } else {
        format!("/apis/{}/{}", def.group, def.version)
    };
    if let Some(ns) = namespace {
        p.push_str(&format!("/namespaces/{ns}"));
    }
    p.push('/');
    p.push_str(&def.plural);
    if let Some(n) = name {
        p.push('/');
        p.push_str(n);
    }
    p
}

/// One parsed merged read.
#[derive(Clone)]
pub(crate) struct Read {
    pub def: Arc<ResourceDef>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub options: ListOptions,
    pub filter: ClusterFilter,
    /// The label selector without the cluster part, for the sources.
    pub selector: Option<String>,
    pub user: UserInfo,
}

impl Read {
    /// The source path of the collection or of the named object.
    pub fn path(&self, named: bool) -> String {
        let name = if named { self.name.as_deref() } else { None };
        resource_path(&self.def, self.namespace.as_deref(), name)
    }

    /// The query sent to every source: the selectors, plus where to read from.
    pub fn source_query(&self, extra: &[(&str, &str)]) -> String {
        let mut q = form_urlencoded::Serializer::new(String::new());
        if let Some(s) = &self.selector {
            q.append_pair("labelSelector", s);
        }
        if let Some(f) = &self.options.field_selector {
            q.append_pair("fieldSelector", f);
        }
        for (k, v) in extra {
            q.append_pair(k, v);
        }
        q.finish()
    }
}

impl SearchProxy {
    async fn serve(
        &self,
        server: &Arc<ApiServer>,
        store: &Arc<StoreContext>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Result<Response, ApiError> {
        let sub_path = path.sub_path.as_deref().unwrap_or("/");
        crate::proxy::check_proxy_path(sub_path).map_err(ApiError::bad_request)?;
        let inner = carried(sub_path, req.uri().query(), req.method(), req.headers())?;
        let Some(rp) = inner.resource().cloned() else {
            return self.store.discovery(&inner, req.headers()).await;
        };
        let def = self.store.resource(&rp.group, &rp.version, &rp.resource)?;
        if rp.subresource.is_some() {
            return Err(ApiError::path_not_found());
        }
        if !matches!(inner.verb, Verb::Get | Verb::List | Verb::Watch) {
            return Err(ApiError::method_not_allowed(format!(
                "merged reads serve get, list and watch; {} {} is written to the host's template store",
                inner.verb.as_str(),
                def.plural
            )));
        }
        // Refused before anything else is done for it, as the in-flight limits refuse before
        // authorization: a refusal must cost less than an answer.
        let place = match inner.verb {
            Verb::Watch => None,
            _ => Some(self.store.fanouts.admit(user)?),
        };
        if let Some(authz) = &server.authorizer {
            authz
                .authorize(user, &RequestAttributes::for_request(&inner))
                .await?;
        }
        inner.options()?;
        let verb = inner.verb;
        let ctx = RequestContext {
            store: store.clone(),
            def,
            path: rp,
            info: Arc::new(inner),
            headers: req.headers().clone(),
            user: user.clone(),
        };
        let read = self.store.read(&ctx)?;
        let span =
            tracing::debug_span!("merged read", verb = verb.as_str(), resource = %read.def.plural);
        async {
            let format = negotiate(&ctx.headers)?;
            let include = ctx.include_object();
            Ok(match verb {
                Verb::Get => encode_object(
                    &read.def,
                    &read.def,
                    format,
                    include,
                    self.store.get_merged(server, &read, place).await?,
                ),
                Verb::Watch => watch_response(
                    &read.def,
                    read.def.clone(),
                    format,
                    include,
                    self.store.watch_merged(server, read.clone()).await?,
                ),
                _ => {
                    let answer = self.store.list_merged(server, &read, place).await?;
                    list_response(&read.def, &read.def, format, include, answer).await
                }
            })
        }
        .instrument(span)
        .await
    }
}

impl MergedStore {
    /// The merged resource `group/version/plural`, with its printer's cluster columns.
    fn resource(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Arc<ResourceDef>, ApiError> {
        self.shared
            .resources
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
            .ok_or_else(|| {
                let resource = if group.is_empty() {
                    plural.to_string()
                } else {
                    format!("{plural}.{group}")
                };
                let mut e = ApiError::path_not_found();
                e.message = format!(
                    "the server could not find the requested resource: {resource} ({version}) is not a merged resource"
                );
                e
            })
    }

    /// The merged read `ctx` asks for.
    fn read(&self, ctx: &RequestContext) -> Result<Read, ApiError> {
        let def = self.resource(&ctx.def.group, &ctx.def.version, &ctx.def.plural)?;
        let options = ctx.info.options()?.list.clone();
        let (filter, selector) = flotilla_fanout::split_selector(options.label_selector.as_deref())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        Ok(Read {
            def,
            namespace: ctx.path.namespace.clone(),
            name: ctx.path.name.clone(),
            options,
            filter,
            selector,
            user: ctx.user.clone(),
        })
    }

    fn server(&self) -> Result<Arc<ApiServer>, ApiError> {
        self.server
            .upgrade()
            .ok_or_else(|| ApiError::service_unavailable("the server is shutting down"))
    }

    /// One member's part of a list, with its version: from its cache when that can answer,
    /// else asked.
    async fn member_list(
        &self,
        server: &Arc<ApiServer>,
        read: &Read,
        selection: Option<&Selection>,
        member: &Endpoint,
        path: &str,
        query: &str,
    ) -> Result<(Vec<Arc<dyn SourceObject + Send + Sync>>, Option<String>), SourceError> {
        if let (Some(caches), Some(selection)) = (&self.shared.caches, selection) {
            let cached = caches
                .list(
                    member,
                    &read.def,
                    read.namespace.as_deref(),
                    selection,
                    &read.user,
                    server,
                )
                .await;
            match cached {
                Some(Ok((items, rv))) => {
                    let items = items
                        .into_iter()
                        .map(|o| o as Arc<dyn SourceObject + Send + Sync>)
                        .collect();
                    return Ok((items, Some(rv)));
                }
                Some(Err(e)) => return Err(e),
                None => {}
            }
        }
        let list = member
            .get_json(path, query, self.shared.member_timeout)
            .await?;
        let rv = list_version(&list);
        let items = list_items(list)
            .into_iter()
            .map(|o| Arc::new(o) as Arc<dyn SourceObject + Send + Sync>)
            .collect();
        Ok((items, rv))
    }

    /// Discovery and `/version` under the search path come from the host, so that kubectl
    /// pointed at the path (`--server .../proxying/karmada/proxy`) finds the resources.
    async fn discovery(
        &self,
        inner: &RequestInfo,
        headers: &http::HeaderMap,
    ) -> Result<Response, ApiError> {
        let path = inner.path.as_str();
        let discovery = path == "/version"
            || path == "/api"
            || path == "/apis"
            || path.starts_with("/api/")
            || path.starts_with("/apis/");
        if inner.method != http::Method::GET || !discovery {
            return Err(ApiError::path_not_found());
        }
        let mut builder = http::Request::builder()
            .method(http::Method::GET)
            .uri(inner.uri.as_str());
        if let Some(accept) = headers.get(http::header::ACCEPT) {
            builder = builder.header(http::header::ACCEPT, accept);
        }
        let req = builder
            .body(kube::client::Body::empty())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let answer = self
            .shared
            .host
            .send(req)
            .await
            .map_err(|e| template_error(SourceError::Failed(e.to_string())))?;
        let (parts, body) = answer.into_parts();
        let bytes = http_body_util::BodyExt::collect(body)
            .await
            .map_err(|e| template_error(SourceError::Failed(e.to_string())))?
            .to_bytes();
        let mut resp = Response::new(axum::body::Body::from(bytes));
        *resp.status_mut() = parts.status;
        if let Some(ct) = parts.headers.get(http::header::CONTENT_TYPE) {
            resp.headers_mut()
                .insert(http::header::CONTENT_TYPE, ct.clone());
        }
        Ok(resp)
    }

    /// A merged GET; `_place` is its place among the fan-outs, held until it is answered.
    async fn get_merged(
        &self,
        server: &Arc<ApiServer>,
        read: &Read,
        _place: Option<FanOut<'_>>,
    ) -> Result<ObjectAnswer, ApiError> {
        let name = read.name.clone().unwrap_or_default();
        let (members, mut warnings) = member_endpoints(&self.shared, server, read).await;
        let path = read.path(true);
        let timeout = self.shared.member_timeout;
        let template = self.templates(read);
        let (name, path) = (name.as_str(), path.as_str());
        let member_get = |m: &Endpoint| {
            let m = m.clone();
            async move {
                if let Some(caches) = &self.shared.caches {
                    let cached = caches
                        .get(
                            &m,
                            &read.def,
                            read.namespace.as_deref(),
                            name,
                            &read.user,
                            server,
                        )
                        .await;
                    match cached {
                        Some(Ok(Some(obj))) => return Ok(obj),
                        Some(Ok(None)) => return Err(SourceError::NotFound),
                        Some(Err(e)) => return Err(e),
                        None => {}
                    }
                }
                m.get_json(path, "", timeout).await
            }
        };
        let (template, answers) = futures::join!(
            template.get_json(path, "", timeout),
            futures::future::join_all(members.iter().map(member_get))
        );
        let template = match template {
            Ok(t) => Some(t),
            Err(SourceError::NotFound) => None,
            Err(e) => return Err(template_error(e)),
        };
        let mut held: Vec<(String, Value)> = Vec::new();
        for (endpoint, answer) in members.iter().zip(answers) {
            match answer {
                Ok(obj) => held.push((cluster_of(endpoint), obj)),
                Err(SourceError::NotFound) => {}
                Err(e) => warnings.push(missing(endpoint, &e)),
            }
        }
        if held.is_empty() && (template.is_none() || read.filter.is_restricted()) {
            return Err(ApiError::not_found(&read.def.group, &read.def.plural, name));
        }
        let merged = match (template, held.is_empty()) {
            // No member holds it (yet): the template as it is, with its own numeric
            // resourceVersion, as a GET on one cluster answers.
            (Some(template), true) => template,
            (template, _) => {
                let objects: Vec<MemberObject<'_>> = held
                    .iter()
                    .map(|(cluster, object)| MemberObject::new(cluster, object))
                    .collect();
                flotilla_fanout::merge_item(template.as_ref(), &objects)
            }
        };
        let mut answer = ObjectAnswer::ok(Object::Built(merged));
        answer.warnings = warnings;
        Ok(answer)
    }

    /// The template store, read for `read`'s caller.
    fn templates(&self, read: &Read) -> Endpoint {
        Endpoint::Host(self.shared.templates.clone(), read.user.clone())
    }

    /// A merged LIST; `_place` as for [`MergedStore::get_merged`].
    async fn list_merged(
        &self,
        server: &Arc<ApiServer>,
        read: &Read,
        _place: Option<FanOut<'_>>,
    ) -> Result<ListAnswer, ApiError> {
        let continued = read
            .options
            .continue_token
            .as_deref()
            .map(ContinueToken::parse)
            .transpose()
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        check_list_version(&read.options)?;
        let (members, mut warnings) = member_endpoints(&self.shared, server, read).await;
        // A continued list reads every source at the positions of its first page, so the
        // pages are one snapshot; a source that no longer has them ends the list with 410.
        let at = continued.as_ref().map(|c| &c.version);
        let timeout = self.shared.member_timeout;
        let path = read.path(false);
        let query_at = |position: Option<&String>| match position {
            Some(rv) => {
                read.source_query(&[("resourceVersion", rv), ("resourceVersionMatch", "Exact")])
            }
            None => read.source_query(&[]),
        };
        let template_query = query_at(at.and_then(|v| v.template.as_ref()));
        let member_queries: Vec<String> = members
            .iter()
            .map(|m| query_at(at.and_then(|v| v.members.get(&cluster_of(m)))))
            .collect();
        let host = self.templates(read);
        // Reads at an exact position (continued lists) go to the members themselves.
        let selection = match (&self.shared.caches, &continued) {
            (Some(_), None) => {
                let options = ListOptions {
                    label_selector: read.selector.clone().filter(|s| !s.is_empty()),
                    ..read.options.clone()
                };
                Some(Selection::from_options(&read.def, &options)?)
            }
            _ => None,
        };
        let path = path.as_str();
        let (template, answers) = futures::join!(
            host.get_json(path, &template_query, timeout),
            futures::future::join_all(
                members
                    .iter()
                    .zip(&member_queries)
                    .map(|(m, q)| self.member_list(server, read, selection.as_ref(), m, path, q))
            )
        );
        let expired = |e: &SourceError| {
            ApiError::expired(format!(
                "the continue token is too old ({e}); list again without it"
            ))
        };
        let template = match template {
            Ok(t) => t,
            Err(e @ SourceError::Expired(_)) if continued.is_some() => return Err(expired(&e)),
            Err(e) => return Err(template_error(e)),
        };
        let mut position = CompositeVersion {
            template: list_version(&template),
            ..CompositeVersion::default()
        };
        let mut sources: Sources<Arc<dyn SourceObject + Send + Sync>> = Sources {
            templates: list_items(template),
            ..Sources::default()
        };
        for (endpoint, answer) in members.iter().zip(answers) {
            let cluster = cluster_of(endpoint);
            match answer {
                Ok((items, rv)) => {
                    if let Some(rv) = rv {
                        position.members.insert(cluster.clone(), rv);
                    }
                    sources.members.insert(cluster, items);
                }
                Err(e @ SourceError::Expired(_)) if continued.is_some() => {
                    return Err(expired(&e));
                }
                Err(e) => warnings.push(missing(endpoint, &e)),
            }
        }
        let merged = flotilla_fanout::merge_list(&sources, &read.filter);
        let after = continued
            .as_ref()
            .map(|c| (c.namespace.as_str(), c.name.as_str()));
        let limit = read.options.limit.map(|l| l as usize);
        let page = flotilla_fanout::page(merged, limit, after);
        let version = match &continued {
            Some(c) => c.version.clone(),
            None => position,
        };
        let continue_token = page.last.as_ref().map(|(namespace, name)| {
            ContinueToken {
                version: version.clone(),
                namespace: namespace.clone(),
                name: name.clone(),
            }
            .encode()
        });
        Ok(ListAnswer {
            items: page.items.into_iter().map(Object::Built).collect(),
            resource_version: version.encode(),
            continue_token,
            remaining: page.remaining,
            warnings,
        })
    }

    /// A merged WATCH.
    async fn watch_merged(
        &self,
        server: &Arc<ApiServer>,
        read: Read,
    ) -> Result<WatchAnswer, ApiError> {
        watch::serve(self.shared.clone(), server.clone(), read).await
    }
}

#[async_trait::async_trait]
impl RestStorage for MergedStore {
    async fn get(&self, ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
        let place = self.fanouts.admit(&ctx.user)?;
        let (server, read) = (self.server()?, self.read(ctx)?);
        self.get_merged(&server, &read, Some(place)).await
    }
    async fn list(&self, ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
        let place = self.fanouts.admit(&ctx.user)?;
        let (server, read) = (self.server()?, self.read(ctx)?);
        self.list_merged(&server, &read, Some(place)).await
    }
    async fn watch(&self, ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
        let (server, read) = (self.server()?, self.read(ctx)?);
        self.watch_merged(&server, read).await
    }
    fn table_resource(&self, ctx: &RequestContext) -> Arc<ResourceDef> {
        self.resource(&ctx.def.group, &ctx.def.version, &ctx.def.plural)
            .unwrap_or_else(|_| ctx.def.clone())
    }
}

/// A list's resourceVersion must be empty, `0` or one this server issued.
fn check_list_version(options: &ListOptions) -> Result<(), ApiError> {
    match options.resource_version.as_ref().map(|v| v.as_str()) {
        None | Some("") | Some("0") => Ok(()),
        Some(rv) => CompositeVersion::parse(rv)
            .map(|_| ())
            .map_err(|e| ApiError::bad_request(e.to_string())),
    }
}

fn template_error(e: SourceError) -> ApiError {
    let mut err =
        ApiError::service_unavailable(format!("the host's template store did not answer: {e}"));
    err.retry_after_seconds = Some(1);
    err
}

pub(crate) fn missing(endpoint: &Endpoint, e: &SourceError) -> String {
    format!("{} is missing from this answer: {e}", endpoint.describe())
}

pub(crate) fn cluster_of(endpoint: &Endpoint) -> String {
    match endpoint {
        Endpoint::Member { cluster, .. } => cluster.clone(),
        Endpoint::Host(..) => String::new(),
    }
}

pub(crate) fn list_version(list: &Value) -> Option<String> {
    list.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

pub(crate) fn list_items(mut list: Value) -> Vec<Value> {
    match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

/// What a merged read needs of one stored Cluster: its name, whether it is Ready, and its
/// connection fields (`{"spec": ...}`, as [`MemberConnections::upstream`] reads them).
pub(crate) struct IndexedCluster {
    pub name: String,
    pub ready: bool,
    pub connection: Value,
}

/// The stored Clusters, each parsed once per version. Every merged read asks which members
/// to read; parsing every Cluster for that (statuses of tens of KB each) cost more than the
/// read itself with a hundred members.
pub(crate) struct ClusterIndex {
    /// The storage prefix of Clusters (building the Cluster definition generates its schema).
    prefix: String,
    entries: parking_lot::Mutex<std::collections::HashMap<String, (u64, Arc<IndexedCluster>)>>,
}

impl ClusterIndex {
    fn new() -> Self {
        Self {
            prefix: flotilla_generic_store::objects::collection_prefix(
                &crate::cluster::cluster_resource(),
                None,
            ),
            entries: Default::default(),
        }
    }

    pub async fn current(&self, server: &ApiServer) -> Vec<Arc<IndexedCluster>> {
        let listed = match server.storage.list(&self.prefix, &Default::default()).await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(error = %e, "listing Clusters for a merged read");
                return Vec::new();
            }
        };
        let mut entries = self.entries.lock();
        let mut current = Vec::with_capacity(listed.items.len());
        let mut seen = std::collections::HashSet::with_capacity(listed.items.len());
        for stored in &listed.items {
            seen.insert(stored.key.clone());
            if let Some((revision, c)) = entries.get(&stored.key) {
                if *revision == stored.revision {
                    current.push(c.clone());
                    continue;
                }
            }
            let v = stored.value();
            let indexed = Arc::new(IndexedCluster {
                name: v
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                ready: is_ready(&v),
                connection: json!({"spec": v.get("spec").cloned().unwrap_or(Value::Null)}),
            });
            entries.insert(stored.key.clone(), (stored.revision, indexed.clone()));
            current.push(indexed);
        }
        entries.retain(|key, _| seen.contains(key));
        current
    }
}

/// Whether a stored Cluster's Ready condition is True (the API type's rule).
fn is_ready(cluster: &Value) -> bool {
    cluster
        .get("status")
        .and_then(|s| serde_json::from_value::<flotilla_karmada_api::ClusterStatus>(s.clone()).ok())
        .is_some_and(|s| s.is_ready())
}

/// The members a read asks: Ready clusters the read's cluster filter allows, each with its
/// connection; warnings name the allowed clusters left out and why.
pub(crate) async fn member_endpoints(
    shared: &Shared,
    server: &ApiServer,
    read: &Read,
) -> (Vec<Endpoint>, Vec<String>) {
    let mut endpoints = Vec::new();
    let mut warnings = Vec::new();
    let clusters = shared.clusters.current(server).await;
    if let Some(caches) = &shared.caches {
        let served: Vec<String> = clusters
            .iter()
            .filter(|c| c.ready)
            .map(|c| c.name.clone())
            .collect();
        caches.retain_clusters(&served);
    }
    let mut asked = Vec::new();
    for cluster in clusters {
        let name = cluster.name.clone();
        if !read.filter.allows(&name) {
            continue;
        }
        if !cluster.ready {
            warnings.push(format!(
                "cluster {name:?} is missing from this answer: it is not Ready"
            ));
            continue;
        }
        asked.push((name, cluster));
    }
    // Concurrently: a connection whose credentials are due to be read again costs a round
    // trip to the host, and a hundred of those in a row would hold the read up.
    let connections = futures::future::join_all(
        asked
            .iter()
            .map(|(name, c)| shared.members.upstream(name, &c.connection)),
    )
    .await;
    for ((name, _), connection) in asked.into_iter().zip(connections) {
        match connection {
            Ok((upstream, token)) => endpoints.push(Endpoint::Member {
                cluster: name,
                upstream,
                token,
                user: Some(read.user.clone()),
            }),
            Err(e) => warnings.push(format!(
                "cluster {name:?} is missing from this answer: {}",
                e.message
            )),
        }
    }
    (endpoints, warnings)
}
