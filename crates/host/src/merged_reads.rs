//! The host's merged reads: GET, LIST and WATCH of the configured workload resources are
//! answered by the merged view (the template store and every member cluster, merged by
//! `flotilla_fanout`); writes stay on the template store. This is the REST storage the host
//! installs for those resources ([`install`]).
//!
//! - Where the merged view is: in this process (`local-up`), the aggregated server's
//!   `MergedStore`, called as a REST storage (no request leaves the process, and the read is
//!   authorized once, here); otherwise the `v1alpha1.search.karmada.io` APIService, asked
//!   through the aggregator as the caller (`X-Remote-*`), its JSON answers read back into
//!   objects, so this server encodes them as it encodes its own.
//! - Flotilla's own components (their group, [`MergedReadsConfig::bypass_groups`]) and
//!   requests with `X-Flotilla-Read-From: templates` read the template store itself.
//! - Writes after a merged read: a composite resourceVersion is replaced by the template's
//!   own before the store checks it (in the decoded body, whatever its encoding), the merge's
//!   own annotations are dropped, and a write to an object only members hold answers 404
//!   naming the member's `clusters/{name}/proxy`.

use std::sync::Arc;

use axum::body::Body;
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::aggregator::Aggregator;
use flotilla_apiserver::authz::{Authorizer, RequestAttributes};
use flotilla_fanout::CompositeVersion;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::objects::{DeleteOptions, Patch};
use flotilla_generic_store::request::ResourceVersion;
use flotilla_generic_store::rest::{
    GenericStore, ListAnswer, NewObject, Object, ObjectAnswer, PatchBody, RestStorage, WatchAnswer,
    WatchEvent,
};
use flotilla_names::merged_reads;
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use http::{HeaderMap, Method, header};
use http_body_util::{BodyExt, BodyStream};
use serde_json::Value;

/// Where the merged view is.
#[derive(Clone)]
pub enum ReadTransport {
    /// In this process: the aggregated server's merged store, called directly.
    InProcess(Arc<dyn RestStorage>),
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
        authorizer: server.authorizer.clone(),
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
    /// The host's authorizer: a failed write looks the object up in the members only for a
    /// caller who may `get` it (the read the write's answer reveals).
    authorizer: Option<Arc<dyn Authorizer>>,
    bypass_groups: Vec<String>,
}

/// Where one read goes.
enum Reader<'a> {
    /// The template store.
    Templates,
    /// The merged store in this process.
    InProcess(&'a dyn RestStorage),
    /// The search APIService, over HTTP.
    Remote,
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

    fn reader(&self, ctx: &RequestContext) -> Reader<'_> {
        if self.bypass(ctx) {
            return Reader::Templates;
        }
        match &self.transport {
            ReadTransport::InProcess(store) => Reader::InProcess(store.as_ref()),
            // No aggregated server serves it (no `v1alpha1.search.karmada.io` APIService):
            // the host's own store answers.
            ReadTransport::ApiService if self.search_backend().is_none() => Reader::Templates,
            ReadTransport::ApiService => Reader::Remote,
        }
    }

    fn search_backend(&self) -> Option<Arc<flotilla_apiserver::aggregator::Backend>> {
        self.aggregator
            .as_ref()
            .and_then(|a| a.remote_for_path(merged_reads::SEARCH_PROXY_PREFIX))
    }

    /// Sends a GET of `path_and_query` (a path under `/api` or `/apis`) to the search
    /// APIService as `user`, asking for JSON; the answer's status, warnings and body.
    async fn send(
        &self,
        path_and_query: &str,
        headers: &HeaderMap,
        user: &UserInfo,
    ) -> Result<http::Response<Body>, ApiError> {
        let backend = self
            .search_backend()
            .ok_or_else(|| ApiError::service_unavailable("the search APIService is not served"))?;
        let uri = format!("{}{path_and_query}", merged_reads::SEARCH_PROXY_PREFIX);
        let mut builder = http::Request::builder()
            .method(Method::GET)
            .uri(&uri)
            .header(header::ACCEPT, "application/json");
        if let Some(agent) = headers.get(header::USER_AGENT) {
            builder = builder.header(header::USER_AGENT, agent);
        }
        let req = builder
            .body(Body::empty())
            .map_err(|e| ApiError::bad_request(format!("invalid path {uri:?}: {e}")))?;
        let resp = flotilla_apiserver::aggregator::proxy(backend, req, user).await;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let code = resp.status().as_u16();
        let body = resp
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        Err(ApiError::from_status(code, &body))
    }

    /// A remote answer's JSON body and warnings.
    async fn remote_json(&self, ctx: &RequestContext) -> Result<(Value, Vec<String>), ApiError> {
        let resp = self.send(&ctx.info.uri, &ctx.headers, &ctx.user).await?;
        let warnings = warnings_of(resp.headers());
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| ApiError::service_unavailable(format!("reading the merged read: {e}")))?
            .to_bytes();
        let value = serde_json::from_slice(&body).map_err(|e| {
            ApiError::service_unavailable(format!("the merged read is not JSON: {e}"))
        })?;
        Ok((value, warnings))
    }

    /// The member clusters holding the object a failed write named, from a merged GET; none
    /// for a caller who may not `get` it (the search path authorizes that GET itself; in
    /// process, it is authorized here).
    async fn member_clusters(&self, ctx: &RequestContext) -> Vec<String> {
        if let Some(authz) = &self.authorizer {
            let mut attrs = RequestAttributes::for_request(&ctx.info);
            attrs.verb = "get".into();
            attrs.subresource.clear();
            if authz.authorize(&ctx.user, &attrs).await.is_err() {
                return Vec::new();
            }
        }
        let object = match self.reader(ctx) {
            Reader::Templates => return Vec::new(),
            Reader::InProcess(store) => match store.get(ctx).await {
                Ok(answer) => answer.object.into_value(),
                Err(_) => return Vec::new(),
            },
            Reader::Remote => match self
                .send(&ctx.info.path, &HeaderMap::new(), &ctx.user)
                .await
            {
                Ok(resp) => match resp.into_body().collect().await {
                    Ok(body) => serde_json::from_slice(&body.to_bytes()).unwrap_or_default(),
                    Err(_) => return Vec::new(),
                },
                Err(_) => return Vec::new(),
            },
        };
        flotilla_fanout::cluster_replicas(&object)
            .into_iter()
            .map(|(c, _)| c)
            .collect()
    }

    /// Runs a write; a 404 for an object members hold becomes a pointer to the member.
    async fn write(
        &self,
        ctx: &RequestContext,
        result: Result<ObjectAnswer, ApiError>,
    ) -> Result<ObjectAnswer, ApiError> {
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

/// The `Warning` headers' texts.
fn warnings_of(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(|w| {
            let text = w.splitn(3, ' ').nth(2).unwrap_or(w);
            text.trim_matches('"')
                .replace("\\\"", "\"")
                .replace("\\\\", "\\")
        })
        .collect()
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

/// A written object with a merged read's traces removed: a composite resourceVersion becomes
/// the template's own (or an error when there is no template) and the merge's annotations go.
fn to_template_object(ctx: &RequestContext, object: &mut Value) -> Result<(), ApiError> {
    let Some(Value::Object(meta)) = object.get_mut("metadata") else {
        return Ok(());
    };
    if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
        for key in flotilla_fanout::RESERVED_ANNOTATIONS {
            annotations.remove(*key);
        }
    }
    if let Some(Value::String(rv)) = meta.get_mut("resourceVersion") {
        if let Some(own) = template_version(ctx, rv)? {
            *rv = own;
        }
    }
    Ok(())
}

/// The template's own revision for a composite resourceVersion `rv` (`None` when `rv` is not
/// composite); an error when there is no template (the object exists only in members).
fn template_version(ctx: &RequestContext, rv: &str) -> Result<Option<String>, ApiError> {
    if !CompositeVersion::is_composite(rv) {
        return Ok(None);
    }
    let version = CompositeVersion::parse(rv).map_err(|e| ApiError::bad_request(e.to_string()))?;
    match version.template_object() {
        Some(own) => Ok(Some(own.to_string())),
        None => {
            let clusters: Vec<String> = version.members.keys().cloned().collect();
            Err(member_only(ctx, &clusters))
        }
    }
}

/// A patch with a merged read's traces removed: in the object a merge or apply patch
/// carries, and in the values a JSON patch tests or sets `/metadata/resourceVersion` to.
fn to_template_patch(ctx: &RequestContext, patch: &mut Patch) -> Result<(), ApiError> {
    match patch {
        Patch::Merge(v) | Patch::Strategic(v) | Patch::Apply { body: v, .. } => {
            to_template_object(ctx, v)
        }
        Patch::Json(Value::Array(ops)) => {
            for op in ops {
                if op.get("path").and_then(Value::as_str) != Some("/metadata/resourceVersion") {
                    continue;
                }
                if let Some(Value::String(rv)) = op.get_mut("value") {
                    if let Some(own) = template_version(ctx, rv)? {
                        *rv = own;
                    }
                }
            }
            Ok(())
        }
        Patch::Json(_) => Ok(()),
    }
}

/// A remote list, read back into a list answer.
fn list_answer(mut list: Value, warnings: Vec<String>) -> ListAnswer {
    let text = |list: &Value, pointer: &str| {
        list.pointer(pointer)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let items = match list.get_mut("items").map(Value::take) {
        Some(Value::Array(items)) => items.into_iter().map(Object::Built).collect(),
        _ => Vec::new(),
    };
    ListAnswer {
        items,
        resource_version: text(&list, "/metadata/resourceVersion").unwrap_or_default(),
        continue_token: text(&list, "/metadata/continue").filter(|c| !c.is_empty()),
        remaining: list
            .pointer("/metadata/remainingItemCount")
            .and_then(Value::as_u64)
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX)),
        warnings,
    }
}

/// One line of a remote watch as an event; `None` for a line that is not one.
fn watch_event(line: &str) -> Option<WatchEvent> {
    let mut v: Value = serde_json::from_str(line).ok()?;
    let object = v.get_mut("object").map(Value::take).unwrap_or(Value::Null);
    Some(match v.get("type").and_then(Value::as_str)? {
        "ADDED" => WatchEvent::Added(Object::Built(object)),
        "MODIFIED" => WatchEvent::Modified(Object::Built(object)),
        "DELETED" => WatchEvent::Deleted(Object::Built(object)),
        "BOOKMARK" => WatchEvent::Bookmark {
            resource_version: object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            initial_events_end: object
                .pointer("/metadata/annotations/k8s.io~1initial-events-end")
                .is_some(),
        },
        _ => {
            let code = object.get("code").and_then(Value::as_u64).unwrap_or(500);
            let body = serde_json::to_vec(&object).unwrap_or_default();
            WatchEvent::Error(ApiError::from_status(
                u16::try_from(code).unwrap_or(500),
                &body,
            ))
        }
    })
}

#[async_trait::async_trait]
impl RestStorage for MergedReadStorage {
    async fn get(&self, ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
        match self.reader(ctx) {
            Reader::Templates => GenericStore.get(ctx).await,
            Reader::InProcess(store) => store.get(ctx).await,
            Reader::Remote => {
                let (object, warnings) = self.remote_json(ctx).await?;
                let mut answer = ObjectAnswer::ok(Object::Built(object));
                answer.warnings = warnings;
                Ok(answer)
            }
        }
    }

    async fn list(&self, ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
        match self.reader(ctx) {
            Reader::Templates => GenericStore.list(ctx).await,
            Reader::InProcess(store) => store.list(ctx).await,
            Reader::Remote => {
                let (list, warnings) = self.remote_json(ctx).await?;
                Ok(list_answer(list, warnings))
            }
        }
    }

    async fn watch(&self, ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
        match self.reader(ctx) {
            Reader::Templates => GenericStore.watch(ctx).await,
            Reader::InProcess(store) => store.watch(ctx).await,
            Reader::Remote => {
                let resp = self.send(&ctx.info.uri, &ctx.headers, &ctx.user).await?;
                let warnings = warnings_of(resp.headers());
                let lines = BodyStream::new(resp.into_body())
                    .try_filter_map(|frame| async move { Ok(frame.into_data().ok()) })
                    .map_err(std::io::Error::other)
                    .into_async_read()
                    .lines();
                let events = lines
                    .take_while(|line| std::future::ready(line.is_ok()))
                    .filter_map(|line| std::future::ready(line.ok().and_then(|l| watch_event(&l))));
                let mut answer = WatchAnswer::new(events.boxed());
                answer.warnings = warnings;
                Ok(answer)
            }
        }
    }

    async fn create(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        GenericStore.create(ctx, body).await
    }

    async fn update(
        &self,
        ctx: &RequestContext,
        mut body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        to_template_object(ctx, &mut body.value)?;
        let result = GenericStore.update(ctx, body).await;
        self.write(ctx, result).await
    }

    async fn patch(
        &self,
        ctx: &RequestContext,
        mut body: PatchBody,
    ) -> Result<ObjectAnswer, ApiError> {
        to_template_patch(ctx, &mut body.patch)?;
        let result = GenericStore.patch(ctx, body).await;
        self.write(ctx, result).await
    }

    async fn delete(
        &self,
        ctx: &RequestContext,
        mut options: DeleteOptions,
    ) -> Result<ObjectAnswer, ApiError> {
        if let Some(rv) = &options.resource_version {
            if let Some(own) = template_version(ctx, rv.as_str())? {
                options.resource_version = Some(ResourceVersion::new(&own));
            }
        }
        let result = GenericStore.delete(ctx, options).await;
        self.write(ctx, result).await
    }

    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ListAnswer, ApiError> {
        GenericStore.delete_collection(ctx, options).await
    }

    fn table_resource(&self, ctx: &RequestContext) -> Arc<ResourceDef> {
        match self.reader(ctx) {
            Reader::Templates => ctx.def.clone(),
            Reader::InProcess(store) => store.table_resource(ctx),
            Reader::Remote => Arc::new(flotilla_fanout::merged_resource(&ctx.def)),
        }
    }
}
