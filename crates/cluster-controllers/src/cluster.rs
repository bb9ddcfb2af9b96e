//! The cluster controller: for every Cluster, the finalizer `karmada.io/cluster-controller`
//! and the execution namespace `karmada-es-<cluster>`; the not-ready / unreachable taints
//! following the Ready condition the status controller writes ([`crate::taints`]); and, once
//! the Cluster is being deleted, cleanup in order — delete its Works, wait until they are
//! gone (their own finalizers may hold them), delete the namespace, wait, delete the
//! cluster's heartbeat Lease, then release the Cluster by removing the finalizer.
//!
//! Beside the reconciler runs the health monitor ([`crate::monitor`]), which turns Ready
//! Unknown for clusters whose status nobody posts any more.
//!
//! Writes are JSON merge patches carrying the resourceVersion read, so a concurrent change
//! (someone else's finalizer or taint) makes the write fail with a conflict and the
//! reconcile runs again on fresh data instead of overwriting it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use flotilla_controller_runtime::{Action, ControllerOptions, Manager, ReflectorSpec};
use flotilla_karmada_api::Cluster;
use flotilla_names::karmada;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::jiff::Timestamp;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use kube::runtime::reflector::ObjectRef;
use parking_lot::Mutex;
use serde_json::json;
use tracing::{Instrument, debug, info, info_span};

use crate::readiness::CONDITION_READY;
use crate::taints::desired_taints;
use crate::{
    AbortOnDrop, CLUSTER_FIELD_MANAGER, ControllerManagerOptions, Error, Metrics, error_chain,
};

const CONTROLLER: &str = "cluster";

struct Context {
    host: kube::Client,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
    /// When each cluster's execution namespace was last seen to exist, so the steady state
    /// costs no request per reconcile (status writes trigger many).
    namespaces_seen: Mutex<HashMap<String, Instant>>,
}

fn works_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work"),
        "works",
    )
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn already_exists(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// Runs the controller on `manager`'s shared cache of trimmed Clusters until the task is
/// aborted.
pub(crate) async fn run(
    manager: Arc<Manager>,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
    liveness: Arc<crate::status::schedule::Liveness>,
) {
    let ctx = Arc::new(Context {
        host: manager.client().clone(),
        opts,
        metrics,
        namespaces_seen: Mutex::new(HashMap::new()),
    });
    // Neither this controller nor the monitor reads a member's discovery or capacity: the
    // trimmed cache (shared with propagation) does not keep them (thousands of members: most
    // of what a Cluster costs).
    let clusters = manager.reflector_with::<Cluster>(Cluster::TRIMMED_CACHE, || {
        ReflectorSpec::default().trim(Cluster::trim_for_cache)
    });
    let controller = manager.controller::<String>(
        CONTROLLER,
        &ControllerOptions {
            workers: usize::from(ctx.opts.cluster_syncs.max(1)),
            // A failed reconcile is retried after `retry_delay`, every time.
            retry_base: ctx.opts.retry_delay,
            retry_max: ctx.opts.retry_delay,
            report_queue_depth: true,
        },
    );
    controller.watches(&clusters, |cluster: &Cluster, deleted| {
        cluster.metadata.name.clone().filter(|_| !deleted)
    });
    // The health monitor judges from the same cache of Clusters; it ends with this task.
    let _monitor = AbortOnDrop(tokio::spawn(
        crate::monitor::run(
            ctx.host.clone(),
            clusters.store().clone(),
            ctx.opts.clone(),
            ctx.metrics.clone(),
            liveness,
        )
        .instrument(info_span!("cluster_monitor")),
    ));
    if !clusters.ready().await {
        return;
    }
    let store = clusters.store().clone();
    controller
        .run(move |name: String| {
            let (ctx, cluster) = (ctx.clone(), store.get(&ObjectRef::new(&name)));
            async move {
                match cluster {
                    Some(cluster) => reconcile(cluster, ctx).await,
                    None => Ok(Action::Done),
                }
            }
        })
        .await;
}

/// One look at a cluster. A conflict (someone, often the status controller, wrote the
/// Cluster meanwhile) is looked at again after `deletion_poll`: the watch brings the new
/// version, and the retry covers a missed event. Other failures go back to the runtime,
/// which logs them and retries after `retry_delay`.
async fn reconcile(cluster: Arc<Cluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let name = cluster.metadata.name.clone().ok_or(Error::NoName)?;
    let span = info_span!("reconcile_cluster", cluster = %name);
    let result = async {
        if cluster.metadata.deletion_timestamp.is_some() {
            finalize(&cluster, &name, &ctx).await
        } else {
            apply(&cluster, &name, &ctx).await
        }
    }
    .instrument(span)
    .await;
    ctx.metrics.reconciled(CONTROLLER, result.is_ok());
    match result {
        Err(e) if e.is_conflict() => {
            debug!(cluster = %name, error = %error_chain(&e), "cluster changed under the reconcile");
            ctx.metrics.error(CONTROLLER, "conflict");
            Ok(Action::RequeueAfter(ctx.opts.deletion_poll))
        }
        Err(e) => {
            ctx.metrics.error(CONTROLLER, e.kind());
            Err(e)
        }
        ok => ok,
    }
}

fn has_finalizer(cluster: &Cluster) -> bool {
    cluster
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == karmada::CLUSTER_CONTROLLER_FINALIZER)
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(CLUSTER_FIELD_MANAGER.into()),
        ..Default::default()
    }
}

/// A live cluster: finalizer and taints (one write), then the namespace.
async fn apply(cluster: &Cluster, name: &str, ctx: &Context) -> Result<Action, Error> {
    let api: Api<Cluster> = Api::all(ctx.host.clone());
    let mut metadata = serde_json::Map::new();
    let mut spec = serde_json::Map::new();
    if !has_finalizer(cluster) {
        let mut finalizers = cluster.metadata.finalizers.clone().unwrap_or_default();
        finalizers.push(karmada::CLUSTER_CONTROLLER_FINALIZER.to_string());
        metadata.insert("finalizers".into(), json!(finalizers));
    }
    let ready = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == CONDITION_READY));
    if let Some(taints) = desired_taints(
        &cluster.spec.taints,
        ready,
        ctx.opts.no_execute_taints,
        Timestamp::now(),
    ) {
        info!(
            ready = ready.map(|c| c.status.as_str()),
            taints = taints.len(),
            "updating taints"
        );
        spec.insert("taints".into(), json!(taints));
    }
    if !metadata.is_empty() || !spec.is_empty() {
        metadata.insert(
            "resourceVersion".into(),
            json!(cluster.metadata.resource_version),
        );
        let mut patch = json!({ "metadata": metadata });
        if !spec.is_empty() {
            patch["spec"] = serde_json::Value::Object(spec.clone());
        }
        api.patch(name, &patch_params(), &Patch::Merge(&patch))
            .await
            .map_err(|source| {
                if spec.is_empty() {
                    Error::AddFinalizer {
                        cluster: name.to_string(),
                        source,
                    }
                } else {
                    Error::UpdateTaints {
                        cluster: name.to_string(),
                        source,
                    }
                }
            })?;
    }
    ensure_namespace(name, ctx).await?;
    Ok(Action::RequeueAfter(ctx.opts.resync_period))
}

async fn ensure_namespace(cluster: &str, ctx: &Context) -> Result<(), Error> {
    let fresh = ctx
        .namespaces_seen
        .lock()
        .get(cluster)
        .is_some_and(|t| t.elapsed() < ctx.opts.resync_period);
    if fresh {
        return Ok(());
    }
    let namespace = karmada::execution_namespace(cluster);
    let api: Api<Namespace> = Api::all(ctx.host.clone());
    let existing = api
        .get_opt(&namespace)
        .await
        .map_err(|source| Error::ReadNamespace {
            namespace: namespace.clone(),
            source,
        })?;
    match existing {
        Some(ns) if ns.metadata.deletion_timestamp.is_some() => {
            // Left over from an earlier cluster of the same name: wait for it to go.
            return Err(Error::NamespaceTerminating { namespace });
        }
        Some(_) => {}
        None => {
            let ns = Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(namespace.clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            let params = PostParams {
                field_manager: Some(CLUSTER_FIELD_MANAGER.into()),
                ..Default::default()
            };
            match api.create(&params, &ns).await {
                Ok(_) => info!(%namespace, "created the execution namespace"),
                Err(e) if already_exists(&e) => {}
                Err(source) => return Err(Error::CreateNamespace { namespace, source }),
            }
        }
    }
    ctx.namespaces_seen
        .lock()
        .insert(cluster.to_string(), Instant::now());
    Ok(())
}

/// A cluster being deleted: Works, then the namespace, then the finalizer.
async fn finalize(cluster: &Cluster, name: &str, ctx: &Context) -> Result<Action, Error> {
    if !has_finalizer(cluster) {
        return Ok(Action::Done);
    }
    ctx.namespaces_seen.lock().remove(name);
    let namespace = karmada::execution_namespace(name);
    let works: Api<DynamicObject> =
        Api::namespaced_with(ctx.host.clone(), &namespace, &works_resource());
    let remaining = match works.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) if not_found(&e) => Vec::new(),
        Err(source) => return Err(Error::ListWorks { namespace, source }),
    };
    if !remaining.is_empty() {
        for work in &remaining {
            if work.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let work_name = work.metadata.name.clone().unwrap_or_default();
            match works.delete(&work_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(e) if not_found(&e) => {}
                Err(source) => {
                    return Err(Error::DeleteWork {
                        namespace,
                        name: work_name,
                        source,
                    });
                }
            }
        }
        info!(
            works = remaining.len(),
            "waiting for the cluster's Works to go"
        );
        return Ok(Action::RequeueAfter(ctx.opts.deletion_poll));
    }
    let namespaces: Api<Namespace> = Api::all(ctx.host.clone());
    let existing = namespaces
        .get_opt(&namespace)
        .await
        .map_err(|source| Error::ReadNamespace {
            namespace: namespace.clone(),
            source,
        })?;
    if let Some(ns) = existing {
        if ns.metadata.deletion_timestamp.is_none() {
            match namespaces
                .delete(&namespace, &DeleteParams::default())
                .await
            {
                Ok(_) => info!(%namespace, "deleting the execution namespace"),
                Err(e) if not_found(&e) => {}
                Err(source) => return Err(Error::DeleteNamespace { namespace, source }),
            }
        }
        return Ok(Action::RequeueAfter(ctx.opts.deletion_poll));
    }
    // Last, the heartbeat Lease (nothing else removes it: owner references are not acted
    // on everywhere). The status controller never recreates the Lease of a deleted Cluster.
    if crate::lease::delete(&ctx.host, name).await? {
        info!("deleted the cluster's heartbeat Lease");
    }
    let finalizers: Vec<&String> = cluster
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != karmada::CLUSTER_CONTROLLER_FINALIZER)
        .collect();
    let patch = json!({"metadata": {
        "finalizers": finalizers,
        "resourceVersion": cluster.metadata.resource_version,
    }});
    let api: Api<Cluster> = Api::all(ctx.host.clone());
    match api
        .patch(name, &patch_params(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => info!("cleaned up; released the cluster"),
        Err(e) if not_found(&e) => {}
        Err(source) => {
            return Err(Error::RemoveFinalizer {
                cluster: name.to_string(),
                source,
            });
        }
    }
    Ok(Action::Done)
}
