//! The collector's IO: discovery of the host's resources, one metadata watch per resource
//! feeding the [`Graph`], and the workers that turn queued [`Work`] into live reads,
//! DELETEs and metadata patches, as [`crate::decide`] says.
//!
//! Nothing is deleted on the graph's word alone: the object and each of its owners are read
//! live first (the watches may lag), and references match owners by uid.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::core::PartialObjectMeta;
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot, watch};
use tracing::Instrument;

use crate::decide::{
    self, DependentAction, FINALIZER_FOREGROUND, FINALIZER_ORPHAN, ForegroundAction, OwnerLookup,
    OwnerState, Policy,
};
use crate::graph::{Graph, ObjectInfo, OwnerRef, Resource, Work};
use crate::{Error, GcOptions, Metrics, error_chain};
use flotilla_controller_runtime::{Action, Controller, ControllerOptions, Manager, WorkQueue};

const CRD_GROUP: &str = "apiextensions.k8s.io";
const CRD_PLURAL: &str = "customresourcedefinitions";

/// State shared by the discovery loop, the watches and the workers.
pub struct Shared {
    client: kube::Client,
    opts: GcOptions,
    graph: Mutex<Graph>,
    pub(crate) queue: Arc<WorkQueue<Work>>,
    pub(crate) metrics: Metrics,
    /// `(group, kind)` → the resource to read owners of that kind through.
    kinds: RwLock<HashMap<(String, String), Arc<Resource>>>,
    rediscover: Notify,
    synced: watch::Sender<bool>,
}

/// A task aborted when dropped, so the discovery loop's watches end with it.
use flotilla_tasks::{AbortOnDrop, Tasks};

/// The collector's name in the controller runtime's metrics.
const CONTROLLER: &str = "garbage-collector";

/// Starts discovery (which starts the watches) and the workers, on `manager`.
pub(crate) fn start(manager: &Manager, opts: GcOptions) -> (Arc<Shared>, Tasks) {
    let controller = manager.controller::<Work>(
        CONTROLLER,
        &ControllerOptions {
            workers: opts.workers,
            retry_base: opts.retry_base,
            retry_max: opts.retry_max,
            ..ControllerOptions::default()
        },
    );
    let shared = Arc::new(Shared {
        client: manager.client().clone(),
        opts,
        graph: Mutex::new(Graph::new()),
        queue: controller.queue().clone(),
        metrics: Metrics::new(),
        kinds: RwLock::new(HashMap::new()),
        rediscover: Notify::new(),
        synced: watch::channel(false).0,
    });
    let tasks = manager.component_tasks();
    tasks.spawn("gc-discovery", discovery_loop(shared.clone()));
    tasks.spawn("gc-workers", workers(shared.clone(), controller));
    (shared, tasks)
}

impl Shared {
    pub(crate) async fn synced(&self) {
        let mut rx = self.synced.subscribe();
        // The sender lives as long as `self`: an error cannot happen while we hold it.
        let _ = rx.wait_for(|s| *s).await;
    }

    fn enqueue(&self, work: Vec<Work>) {
        for w in work {
            self.queue.add(w);
        }
    }

    fn api(&self, resource: &Resource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) if resource.namespaced => {
                Api::namespaced_with(self.client.clone(), ns, &resource.api)
            }
            _ => Api::all_with(self.client.clone(), &resource.api),
        }
    }
}

// === discovery ===

/// Discovers the served resources, keeps one watch per resource that supports list, watch
/// and delete, and declares the graph synced once the first discovery's lists are done.
async fn discovery_loop(shared: Arc<Shared>) {
    let mut watches: HashMap<(String, String), (Arc<Resource>, AbortOnDrop)> = HashMap::new();
    let mut sync_waiter: Option<AbortOnDrop> = None;
    loop {
        match discover(&shared).await {
            Ok(resources) => {
                let first = sync_waiter.is_none();
                let mut init_done = Vec::new();
                let wanted: HashSet<(String, String)> = resources
                    .iter()
                    .map(|r| (r.api.group.clone(), r.api.plural.clone()))
                    .collect();
                let gone: Vec<(String, String)> = watches
                    .keys()
                    .filter(|k| !wanted.contains(*k))
                    .cloned()
                    .collect();
                for key in gone {
                    if let Some((resource, task)) = watches.remove(&key) {
                        drop(task);
                        forget_resource(&shared, &resource);
                    }
                }
                for resource in resources {
                    let key = (resource.api.group.clone(), resource.api.plural.clone());
                    // A new preferred version restarts the watch; its first list replaces
                    // what the old one showed.
                    if watches.get(&key).is_some_and(|(r, _)| **r == *resource) {
                        continue;
                    }
                    let (tx, rx) = oneshot::channel();
                    init_done.push(rx);
                    tracing::debug!(resource = %resource.display(), version = %resource.api.version, "watching");
                    let task = tokio::spawn(watch_resource(shared.clone(), resource.clone(), tx));
                    watches.insert(key, (resource, AbortOnDrop(task)));
                }
                shared.metrics.set_resources(watches.len());
                if first {
                    let s = shared.clone();
                    sync_waiter = Some(AbortOnDrop(tokio::spawn(async move {
                        let all = futures::future::join_all(init_done);
                        if tokio::time::timeout(s.opts.sync_timeout, all)
                            .await
                            .is_err()
                        {
                            tracing::warn!(
                                timeout = ?s.opts.sync_timeout,
                                "not every resource was listed in time; collecting anyway"
                            );
                        }
                        s.synced.send_replace(true);
                    })));
                }
            }
            Err(e) => {
                shared.metrics.error(e.kind());
                tracing::warn!(error = %error_chain(&e), "discovery failed");
                if sync_waiter.is_none() {
                    // Nothing runs before the first discovery: try again soon.
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                    continue;
                }
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(shared.opts.rediscovery_period) => {}
            _ = shared.rediscover.notified() => {
                // CRD changes come in bursts (create, then Established): one discovery for
                // the burst.
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// The resources to watch (preferred version of each group), and the owner-kind index.
async fn discover(shared: &Shared) -> Result<Vec<Arc<Resource>>, Error> {
    let discovery = match Discovery::new(shared.client.clone()).run_aggregated().await {
        Ok(d) => d,
        // Servers without aggregated discovery answer the per-group documents.
        Err(_) => Discovery::new(shared.client.clone())
            .run()
            .await
            .map_err(Error::Discover)?,
    };
    let mut watched = Vec::new();
    let mut kinds = HashMap::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            let resource = Arc::new(Resource {
                namespaced: caps.scope == Scope::Namespaced,
                api: ar,
            });
            if caps.supports_operation(verbs::GET) {
                kinds.insert(
                    (resource.api.group.clone(), resource.api.kind.clone()),
                    resource.clone(),
                );
            }
            let ignored = shared
                .opts
                .ignored_resources
                .iter()
                .any(|(g, p)| *g == resource.api.group && *p == resource.api.plural);
            if !ignored
                && [verbs::LIST, verbs::WATCH, verbs::DELETE]
                    .iter()
                    .all(|v| caps.supports_operation(v))
            {
                watched.push(resource);
            }
        }
    }
    *shared.kinds.write() = kinds;
    Ok(watched)
}

/// A resource no longer served: its objects are gone for the graph (their dependents are
/// looked at; live reads decide).
fn forget_resource(shared: &Shared, resource: &Resource) {
    let work = {
        let mut g = shared.graph.lock();
        let mut work = Vec::new();
        for uid in g.uids_of(resource) {
            work.extend(g.remove(&uid));
        }
        shared.metrics.set_objects(g.observed());
        work
    };
    shared.enqueue(work);
}

// === watches ===

async fn watch_resource(
    shared: Arc<Shared>,
    resource: Arc<Resource>,
    init_done: oneshot::Sender<()>,
) {
    // Metadata only: the graph needs nothing else, and Secrets' data stays on the server.
    let api: Api<PartialObjectMeta<DynamicObject>> =
        Api::all_with(shared.client.clone(), &resource.api);
    let stream = watcher::watcher(api, watcher::Config::default()).default_backoff();
    futures::pin_mut!(stream);
    let mut init_done = Some(init_done);
    // uids listed since the last (re)list began: what is not among them when it ends is gone.
    let mut relisted: Option<HashSet<String>> = None;
    let is_crd = resource.api.group == CRD_GROUP && resource.api.plural == CRD_PLURAL;
    while let Some(event) = stream.next().await {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                shared.metrics.error("watch");
                tracing::warn!(resource = %resource.display(), error = %error_chain(&e), "watch failed; retrying");
                continue;
            }
        };
        let work = {
            let mut g = shared.graph.lock();
            let work = match event {
                Event::Init => {
                    relisted = Some(HashSet::new());
                    Vec::new()
                }
                Event::InitApply(obj) => match object_info(&resource, obj) {
                    Some(info) => {
                        if let Some(seen) = relisted.as_mut() {
                            seen.insert(info.uid.clone());
                        }
                        g.upsert(info)
                    }
                    None => Vec::new(),
                },
                Event::InitDone => {
                    let seen = relisted.take().unwrap_or_default();
                    let mut work = Vec::new();
                    for uid in g.uids_of(&resource) {
                        if !seen.contains(&uid) {
                            work.extend(g.remove(&uid));
                        }
                    }
                    if let Some(tx) = init_done.take() {
                        let _ = tx.send(());
                    }
                    work
                }
                Event::Apply(obj) => match object_info(&resource, obj) {
                    Some(info) => g.upsert(info),
                    None => Vec::new(),
                },
                Event::Delete(obj) => match obj.metadata.uid {
                    Some(uid) => g.remove(&uid),
                    None => Vec::new(),
                },
            };
            shared.metrics.set_objects(g.observed());
            work
        };
        shared.enqueue(work);
        if is_crd {
            // A CRD added, changed (Established) or removed changes what is served.
            shared.rediscover.notify_one();
        }
    }
}

/// What the graph keeps of a watched object (`None` without a uid: nothing can own or be
/// owned by it).
fn object_info(
    resource: &Arc<Resource>,
    obj: PartialObjectMeta<DynamicObject>,
) -> Option<ObjectInfo> {
    let m = obj.metadata;
    let uid = m.uid?;
    Some(ObjectInfo {
        resource: resource.clone(),
        namespace: m.namespace.filter(|_| resource.namespaced),
        name: m.name.unwrap_or_default(),
        uid,
        owners: m
            .owner_references
            .unwrap_or_default()
            .into_iter()
            .map(|o| OwnerRef {
                api_version: o.api_version,
                kind: o.kind,
                name: o.name,
                uid: o.uid,
                block_owner_deletion: o.block_owner_deletion == Some(true),
            })
            .collect(),
        deleting: m.deletion_timestamp.is_some(),
        finalizers: m.finalizers.unwrap_or_default(),
    })
}

// === workers ===

async fn workers(shared: Arc<Shared>, controller: Controller<Work>) {
    // The graph is incomplete until the first lists are done: an owner not listed yet would
    // look absent (live reads would save us, at the cost of one read per dependent).
    shared.synced().await;
    controller
        .run(move |work: Work| {
            let shared = shared.clone();
            async move {
                let span = match &work {
                    Work::AttemptToDelete(uid) => {
                        tracing::info_span!("gc_attempt_to_delete", %uid, object = tracing::field::Empty)
                    }
                    Work::Orphan(uid) => {
                        tracing::info_span!("gc_orphan", %uid, object = tracing::field::Empty)
                    }
                };
                let result = process(&shared, &work).instrument(span).await;
                shared.metrics.processed();
                if let Err(e) = &result {
                    shared.metrics.error(e.kind());
                }
                result.map(|()| Action::Done)
            }
        })
        .await;
}

async fn process(shared: &Shared, work: &Work) -> Result<(), Error> {
    match work {
        Work::AttemptToDelete(uid) => attempt_to_delete(shared, uid).await,
        Work::Orphan(uid) => orphan_dependents(shared, uid).await,
    }
}

/// The live object if it still is the one with `uid` (same name, other uid: a new object
/// that the graph has not seen yet, for us the old one is gone).
async fn get_live(shared: &Shared, item: &ObjectInfo) -> Result<Option<DynamicObject>, Error> {
    let live = get_by_name(
        shared,
        &item.resource,
        item.namespace.as_deref(),
        &item.name,
    )
    .await?;
    Ok(live.filter(|o| o.metadata.uid.as_deref() == Some(item.uid.as_str())))
}

async fn get_by_name(
    shared: &Shared,
    resource: &Resource,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<DynamicObject>, Error> {
    shared
        .api(resource, namespace)
        .get_opt(name)
        .await
        .map_err(|source| Error::Get {
            resource: resource.display(),
            name: name.to_string(),
            source,
        })
}

/// The graph lost sight of `uid` (a live read says it is gone): as if deleted.
fn virtual_delete(shared: &Shared, uid: &str) {
    let work = {
        let mut g = shared.graph.lock();
        let work = g.remove(uid);
        shared.metrics.set_objects(g.observed());
        work
    };
    shared.enqueue(work);
}

async fn attempt_to_delete(shared: &Shared, uid: &str) -> Result<(), Error> {
    let item = {
        let g = shared.graph.lock();
        if !g.needs_attention(uid) {
            return Ok(());
        }
        match g.get(uid) {
            Some(i) => i.clone(),
            None => return Ok(()),
        }
    };
    tracing::Span::current().record("object", tracing::field::display(&item.key()));
    let Some(live) = get_live(shared, &item).await? else {
        virtual_delete(shared, uid);
        return Ok(());
    };
    let finalizers = live.metadata.finalizers.clone().unwrap_or_default();
    if live.metadata.deletion_timestamp.is_some() {
        if finalizers.iter().any(|f| f == FINALIZER_FOREGROUND) {
            return process_deleting_dependents(shared, &item).await;
        }
        // On its way out already; its dependents are looked at once it is gone.
        return Ok(());
    }
    let refs = live.metadata.owner_references.clone().unwrap_or_default();
    if refs.is_empty() {
        return Ok(());
    }
    let mut owners = Vec::with_capacity(refs.len());
    for r in &refs {
        owners.push((r.uid.clone(), owner_state(shared, &item, r).await?));
    }
    let (has_dependents, dependent_deleting_dependents) = {
        let g = shared.graph.lock();
        let deps = g.dependents(uid);
        (
            !deps.is_empty(),
            deps.iter().any(|d| d.deleting_dependents()),
        )
    };
    let action = decide::attempt_to_delete(
        &finalizers,
        &owners,
        has_dependents,
        dependent_deleting_dependents,
    );
    tracing::debug!(object = %item.key(), ?owners, ?action, "decided");
    match action {
        DependentAction::Nothing => Ok(()),
        DependentAction::Retry => {
            let unknown = refs
                .iter()
                .zip(&owners)
                .find(|(_, (_, s))| *s == OwnerState::Unknown)
                .map(|(r, _)| (r.api_version.clone(), r.kind.clone()))
                .unwrap_or_default();
            Err(Error::UnknownOwnerKind {
                api_version: unknown.0,
                kind: unknown.1,
            })
        }
        DependentAction::RemoveOwnerRefs(uids) => {
            if patch_owner_refs(shared, &item, |refs| {
                decide::owner_refs_without(refs, &uids)
            })
            .await?
            {
                shared.metrics.references_removed();
                tracing::info!(object = %item.key(), resource = %item.resource.display(), owners = ?uids, "removed references to absent owners");
            }
            Ok(())
        }
        DependentAction::Delete { policy, unblock } => {
            if !unblock.is_empty() {
                patch_owner_refs(shared, &item, |refs| {
                    decide::owner_refs_unblocked(refs, &unblock)
                })
                .await?;
            }
            delete(shared, &item, policy).await
        }
    }
}

/// Where the owner `r` of `item` stands, by a live read in the right namespace.
async fn owner_state(
    shared: &Shared,
    item: &ObjectInfo,
    r: &OwnerReference,
) -> Result<OwnerState, Error> {
    let (group, _) = decide::split_api_version(&r.api_version);
    let resource = shared
        .kinds
        .read()
        .get(&(group.to_string(), r.kind.clone()))
        .cloned();
    let Some(resource) = resource else {
        return Ok(OwnerState::Unknown);
    };
    match decide::owner_lookup(item.namespace.as_deref(), resource.namespaced) {
        OwnerLookup::Invalid => {
            tracing::warn!(
                object = %item.key(),
                owner_kind = %r.kind,
                owner = %r.name,
                "a cluster-scoped object cannot be owned by a namespaced one; reference ignored"
            );
            // Unresolvable: never collected on its account (Kubernetes since 1.20).
            Ok(OwnerState::Solid)
        }
        OwnerLookup::At(ns) => {
            let live = get_by_name(shared, &resource, ns.as_deref(), &r.name).await?;
            let live = live.as_ref().map(|o| {
                (
                    o.metadata.uid.as_deref().unwrap_or_default(),
                    o.metadata.deletion_timestamp.is_some(),
                    o.metadata.finalizers.as_deref().unwrap_or_default(),
                )
            });
            Ok(decide::classify_live(&r.uid, live))
        }
    }
}

/// An owner deleting in the foreground: its blocking dependents go first, then its
/// finalizer.
async fn process_deleting_dependents(shared: &Shared, item: &ObjectInfo) -> Result<(), Error> {
    let views = shared.graph.lock().dependent_views(&item.uid);
    match decide::foreground_step(&views) {
        ForegroundAction::RemoveFinalizer => {
            if remove_finalizer(shared, item, FINALIZER_FOREGROUND).await? {
                shared.metrics.finalizer_removed(FINALIZER_FOREGROUND);
                tracing::info!(object = %item.key(), resource = %item.resource.display(), "dependents gone; foreground deletion finished");
            }
        }
        ForegroundAction::DeleteDependents(uids) => {
            for u in uids {
                shared.queue.add(Work::AttemptToDelete(u));
            }
        }
    }
    Ok(())
}

/// An owner deleting with the orphan finalizer: its dependents lose their references to
/// it, then it loses the finalizer.
async fn orphan_dependents(shared: &Shared, uid: &str) -> Result<(), Error> {
    let Some(item) = shared.graph.lock().get(uid).cloned() else {
        return Ok(());
    };
    tracing::Span::current().record("object", tracing::field::display(&item.key()));
    let Some(live) = get_live(shared, &item).await? else {
        virtual_delete(shared, uid);
        return Ok(());
    };
    let orphaning = live.metadata.deletion_timestamp.is_some()
        && live
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == FINALIZER_ORPHAN);
    if !orphaning {
        return Ok(());
    }
    let dependents: Vec<ObjectInfo> = shared
        .graph
        .lock()
        .dependents(uid)
        .into_iter()
        .cloned()
        .collect();
    let owner = [uid.to_string()];
    for d in &dependents {
        if patch_owner_refs(shared, d, |refs| decide::owner_refs_without(refs, &owner)).await? {
            shared.metrics.orphaned();
        }
    }
    if remove_finalizer(shared, &item, FINALIZER_ORPHAN).await? {
        shared.metrics.finalizer_removed(FINALIZER_ORPHAN);
        tracing::info!(object = %item.key(), resource = %item.resource.display(), dependents = dependents.len(), "dependents orphaned");
    }
    Ok(())
}

async fn delete(shared: &Shared, item: &ObjectInfo, policy: Policy) -> Result<(), Error> {
    let params = DeleteParams {
        propagation_policy: Some(match policy {
            Policy::Background => kube::api::PropagationPolicy::Background,
            Policy::Foreground => kube::api::PropagationPolicy::Foreground,
            Policy::Orphan => kube::api::PropagationPolicy::Orphan,
        }),
        // Only the object we looked at: a new one under the same name is not ours to delete.
        preconditions: Some(Preconditions {
            uid: Some(item.uid.clone()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match shared
        .api(&item.resource, item.namespace.as_deref())
        .delete(&item.name, &params)
        .await
    {
        Ok(_) => {
            shared.metrics.deleted(policy.label());
            tracing::info!(object = %item.key(), resource = %item.resource.display(), policy = policy.label(), "deleted: no owner left");
            Ok(())
        }
        // Gone already, or replaced by another object of that name.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(source) => Err(Error::Delete {
            resource: item.resource.display(),
            name: item.key(),
            source,
        }),
    }
}

/// Rewrites `item`'s ownerReferences with `edit` (which returns `None` for "nothing to do")
/// on the live object, with its resourceVersion as precondition; true when written.
async fn patch_owner_refs(
    shared: &Shared,
    item: &ObjectInfo,
    edit: impl Fn(&[OwnerReference]) -> Option<Vec<OwnerReference>>,
) -> Result<bool, Error> {
    patch_metadata(shared, item, |live| {
        let refs = live
            .metadata
            .owner_references
            .as_deref()
            .unwrap_or_default();
        edit(refs)
            .map(|new| {
                if new.is_empty() {
                    Value::Null
                } else {
                    serde_json::to_value(new).unwrap_or(Value::Null)
                }
            })
            .map(|v| ("ownerReferences", v))
    })
    .await
}

/// Removes `finalizer` from the live `item`; true when written.
async fn remove_finalizer(
    shared: &Shared,
    item: &ObjectInfo,
    finalizer: &str,
) -> Result<bool, Error> {
    patch_metadata(shared, item, |live| {
        let fs = live.metadata.finalizers.as_deref().unwrap_or_default();
        decide::finalizers_without(fs, finalizer).map(|new| {
            (
                "finalizers",
                if new.is_empty() {
                    Value::Null
                } else {
                    json!(new)
                },
            )
        })
    })
    .await
}

/// Reads `item`, lets `edit` compute one metadata field from it, and merge-patches it with
/// the read's resourceVersion as precondition; a conflict means someone else wrote in
/// between, so it starts over on a fresh read. False when the object is gone or `edit`
/// has nothing to change.
async fn patch_metadata(
    shared: &Shared,
    item: &ObjectInfo,
    edit: impl Fn(&DynamicObject) -> Option<(&'static str, Value)>,
) -> Result<bool, Error> {
    let api = shared.api(&item.resource, item.namespace.as_deref());
    let attempts = shared.opts.conflict_attempts.max(1);
    for _ in 0..attempts {
        let Some(live) = get_live(shared, item).await? else {
            return Ok(false);
        };
        let Some((field, value)) = edit(&live) else {
            return Ok(false);
        };
        let rv = live.metadata.resource_version.clone().unwrap_or_default();
        let patch = json!({"metadata": {"resourceVersion": rv, field: value}});
        match api
            .patch(&item.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => return Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(false),
            Err(source) => {
                return Err(Error::Patch {
                    resource: item.resource.display(),
                    name: item.key(),
                    source,
                });
            }
        }
    }
    Err(Error::Conflicts {
        resource: item.resource.display(),
        name: item.key(),
        attempts,
    })
}
