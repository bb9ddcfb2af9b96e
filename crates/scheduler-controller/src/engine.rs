//! The scheduler controller: leader election around it; per term, subscriptions to the
//! manager's shared watches of Clusters, ResourceBindings and ClusterResourceBindings feeding
//! the cluster index, the binding cache and the controller's queue, and the reconcile that
//! plans each binding and writes the result.
//!
//! Writes per scheduled binding: one JSON merge patch of the spec (`clusters`,
//! `gracefulEvictionTasks`, guarded by `resourceVersion`), then one merge patch of the
//! `status` subresource; each only when it changes something. The objects those writes
//! return are remembered until the watch delivers something at least as new, so a worker
//! never decides on a cache that lags behind its own writes.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use flotilla_controller_runtime::{
    Action, ControllerOptions, EventRecorder, EventRequest, Manager, ReconcileError, WorkQueue,
};
use flotilla_karmada_api::{Cluster, ClusterResourceBinding, ResourceBinding};
use flotilla_leader::TermEnd;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use parking_lot::{Mutex, RwLock};
use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::clusters::{ClusterChange, ClusterIndex, ReservationBook};
use crate::decide::{self, Binding, BindingKey, PlanOptions};
use crate::metrics::{Metrics, Outcome};
use crate::{
    EVENT_EVICT, EVENT_EVICT_SUCCEED, EVENT_SCHEDULE_FAILED, EVENT_SCHEDULE_SUCCEED, Error,
    FIELD_MANAGER, SchedulerOptions,
};

/// The scheduler's name among controllers (its `flotilla_controller_*` metrics).
const CONTROLLER: &str = "scheduler";

/// Write failures are retried after the queue's backoff; a conflict too, since the watch has
/// to bring the newer binding first.
impl ReconcileError for Error {}

/// Extra wait after a toleration or grace deadline, so the recheck lands after it.
const RECHECK_SLACK: Duration = Duration::from_millis(50);

/// Runs until `stop` turns true: directly, or whenever this process holds the Lease
/// (`flotilla_leader::run_elected`, one engine run per term). The manager's watches outlive
/// the terms: a new term subscribes to what they hold instead of listing again.
pub(crate) async fn run(
    manager: Arc<Manager>,
    opts: SchedulerOptions,
    metrics: Arc<Metrics>,
    mut stop: watch::Receiver<bool>,
) {
    let shutdown = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let host = manager.client().clone();
    flotilla_leader::run_elected(host, opts.leader.clone(), shutdown, |mut term| {
        let (manager, opts, metrics) = (manager.clone(), opts.clone(), metrics.clone());
        async move {
            if term.elected() {
                tracing::info!("acquired the scheduler Lease; scheduling");
            }
            metrics.set_active(true);
            run_engine(&manager, opts, metrics.clone(), async move {
                if term.ended().await == TermEnd::Lost {
                    tracing::warn!(
                        "lost the scheduler Lease; stopping scheduling, competing again"
                    );
                }
            })
            .await;
            metrics.set_active(false);
        }
    })
    .await;
}

/// State shared by the subscriptions and the reconciles of one engine run (one term).
struct Shared {
    client: kube::Client,
    plan_opts: PlanOptions,
    metrics: Arc<Metrics>,
    clusters: ClusterIndex,
    bindings: RwLock<HashMap<BindingKey, Arc<Binding>>>,
    /// Objects returned by our own writes, newer than the cache until the watch catches up.
    written: Mutex<HashMap<BindingKey, Arc<Binding>>>,
    book: Mutex<ReservationBook>,
    /// Application failover: since when each binding's copy on each cluster is Unhealthy.
    /// In memory, as Karmada's controller keeps it: a new term starts counting afresh.
    unhealthy: Mutex<HashMap<BindingKey, decide::UnhealthySince>>,
    /// Duplicated bindings queued because a cluster changed what the filters read: their
    /// next pass is recorded (`lastScheduledTime`, the success Event) even when its result is
    /// the one they have, as Karmada's scheduler records every pass it makes.
    placement_looks: Mutex<HashSet<BindingKey>>,
    queue: Arc<WorkQueue<BindingKey>>,
    events: EventRecorder,
}

/// One term of scheduling: the scheduler controller on the manager's shared watches of
/// Clusters, ResourceBindings and ClusterResourceBindings, until `until`.
async fn run_engine(
    manager: &Manager,
    opts: SchedulerOptions,
    metrics: Arc<Metrics>,
    until: impl Future<Output = ()>,
) {
    let client = manager.client().clone();
    let (events, event_task) = if opts.events {
        let (recorder, task) = EventRecorder::start(
            client.clone(),
            opts.scheduler_name.clone(),
            opts.event_dedupe_window,
        );
        (recorder, Some(task))
    } else {
        (EventRecorder::disabled(), None)
    };
    // A new term counts unhealthy copies afresh.
    metrics.unhealthy_copies(0);
    let controller = manager.controller::<BindingKey>(
        CONTROLLER,
        &ControllerOptions {
            workers: opts.workers,
            retry_base: opts.backoff_base,
            retry_max: opts.backoff_max,
            report_queue_depth: true,
        },
    );
    let shared = Arc::new(Shared {
        client,
        plan_opts: PlanOptions {
            scheduler_name: opts.scheduler_name.clone(),
            default_toleration_seconds: opts.default_toleration_seconds,
            eviction_grace_period: opts.eviction_grace_period,
        },
        metrics,
        clusters: ClusterIndex::new(),
        bindings: RwLock::new(HashMap::new()),
        written: Mutex::new(HashMap::new()),
        book: Mutex::new(ReservationBook::new(opts.reservation_ttl)),
        unhealthy: Mutex::new(HashMap::new()),
        placement_looks: Mutex::new(HashSet::new()),
        queue: controller.queue().clone(),
        events,
    });
    let clusters = manager.reflector::<Cluster>();
    let bindings = manager.reflector::<ResourceBinding>();
    let cluster_bindings = manager.reflector::<ClusterResourceBinding>();
    let subscriptions = [
        clusters.subscribe_scoped({
            let shared = shared.clone();
            move |c: &Cluster, deleted| cluster_seen(&shared, c, deleted)
        }),
        bindings.subscribe_scoped({
            let shared = shared.clone();
            move |b: &ResourceBinding, deleted| binding_event(&shared, b.clone().into(), deleted)
        }),
        cluster_bindings.subscribe_scoped({
            let shared = shared.clone();
            move |b: &ClusterResourceBinding, deleted| {
                binding_event(&shared, b.clone().into(), deleted)
            }
        }),
    ];
    let queue = shared.queue.clone();
    let until = std::pin::pin!(until);
    let mut until = until;
    // Deciding before the first lists would find no cluster at all.
    let ready = async {
        clusters.ready().await && bindings.ready().await && cluster_bindings.ready().await
    };
    let ready = tokio::select! {
        ready = ready => ready,
        () = &mut until => false,
    };
    if ready {
        // The lists are in the stores, perhaps not yet reported to this term's subscribers:
        // take them from the stores (seeing an object twice is harmless). A term starts by
        // looking at every binding once: deadlines may have passed while nobody led.
        for c in clusters.store().state() {
            cluster_seen(&shared, &c, false);
        }
        tracing::debug!(clusters = shared.clusters.names().len(), "Clusters listed");
        let held = bindings
            .store()
            .state()
            .into_iter()
            .map(|b| Binding::from((*b).clone()));
        let held_cluster = cluster_bindings
            .store()
            .state()
            .into_iter()
            .map(|b| Binding::from((*b).clone()));
        for b in held.chain(held_cluster) {
            binding_seen(&shared, b, true);
        }
        let run = controller.run({
            let shared = shared.clone();
            move |key: BindingKey| {
                let shared = shared.clone();
                async move { process(&shared, &key).await }
            }
        });
        let mut run = std::pin::pin!(run);
        tokio::select! {
            () = &mut run => {}
            () = &mut until => {
                // Workers finish the binding in hand (its writes land) and take no other.
                queue.shut_down();
                run.await;
            }
        }
    }
    queue.shut_down();
    drop(subscriptions);
    // The recorder's last clone goes with `shared`; the writer then drains its backlog.
    drop(shared);
    if let Some(task) = event_task {
        let _ = task.await;
    }
}

/// A Cluster the watch reports: into the index, and the bindings it can affect queued.
fn cluster_seen(shared: &Shared, cluster: &Cluster, deleted: bool) {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    if deleted {
        if shared.clusters.remove(&name) {
            cluster_changed(shared, &name, removed());
        }
    } else {
        let change = shared.clusters.apply(cluster, Timestamp::now());
        cluster_changed(shared, &name, change);
    }
}

/// The change of a cluster that went away: it matters to the bindings on it.
fn removed() -> ClusterChange {
    ClusterChange {
        matters: true,
        taints: true,
        usage_grew: true,
        fit: true,
    }
}

/// Queues the bindings a cluster change can affect: those waiting for capacity or a cluster,
/// (when taints changed or the cluster went) those placed on it, and (when what the filters
/// read changed) the Duplicated ones, which Karmada re-places whenever it looks at them.
fn cluster_changed(shared: &Shared, name: &str, change: ClusterChange) {
    if change.usage_grew {
        shared.book.lock().clear(name);
    }
    if !change.matters {
        return;
    }
    let bindings = shared.bindings.read();
    for (key, b) in bindings.iter() {
        let placed_here = change.taints && b.spec.clusters.iter().any(|t| t.name == name);
        let duplicated = change.fit && decide::is_duplicated(b);
        if duplicated {
            shared.placement_looks.lock().insert(key.clone());
        }
        if placed_here || duplicated || decide::is_waiting(b) {
            shared.queue.add(key.clone());
        }
    }
}

/// A binding the watch reports (changed, or gone).
fn binding_event(shared: &Shared, b: Binding, deleted: bool) {
    if !deleted {
        binding_seen(shared, b, false);
        return;
    }
    shared.bindings.write().remove(&b.key);
    shared.written.lock().remove(&b.key);
    let mut all = shared.unhealthy.lock();
    if all.remove(&b.key).is_some() {
        shared
            .metrics
            .unhealthy_copies(all.values().map(|s| s.len()).sum());
    }
}

fn binding_seen(shared: &Shared, b: Binding, relisted: bool) {
    let key = b.key.clone();
    let responsible = decide::is_responsible(&b, &shared.plan_opts.scheduler_name);
    let interesting = responsible
        && (relisted
            || decide::schedule_trigger(&b).is_some()
            || !b.spec.graceful_eviction_tasks.is_empty()
            // Application failover follows every status change (health comes that way).
            || decide::application_failover(&b).is_some());
    {
        let mut written = shared.written.lock();
        if let Some(w) = written.get(&key) {
            if newer_or_same(&b, w) {
                written.remove(&key);
            }
        }
    }
    tracing::debug!(binding = %key, revision = ?b.revision(), relisted, interesting, "binding seen");
    shared.bindings.write().insert(key.clone(), Arc::new(b));
    if interesting {
        shared.queue.add(key);
    }
}

/// Whether `a` is at least as new as `b` (by numeric resourceVersion; unknown: yes).
fn newer_or_same(a: &Binding, b: &Binding) -> bool {
    match (a.revision(), b.revision()) {
        (Some(x), Some(y)) => x >= y,
        _ => true,
    }
}

/// The freshest copy of a binding: the cache, or our own last write when newer.
fn current(shared: &Shared, key: &BindingKey) -> Option<Arc<Binding>> {
    let cached = shared.bindings.read().get(key).cloned()?;
    let written = shared.written.lock().get(key).cloned();
    match written {
        Some(w) if !newer_or_same(&cached, &w) => Some(w),
        _ => Some(cached),
    }
}

/// Schedules one binding: plans it, writes what changed, records the outcome.
async fn process(shared: &Arc<Shared>, key: &BindingKey) -> Result<Action, Error> {
    let started = Instant::now();
    let Some(binding) = current(shared, key) else {
        return Ok(Action::Done);
    };
    let now = Timestamp::now();
    let snapshot = shared.clusters.snapshot();
    let unhealthy = {
        let mut all = shared.unhealthy.lock();
        let since = decide::track_unhealthy(
            &binding,
            all.get(key).unwrap_or(&decide::UnhealthySince::new()),
            now,
        );
        if since.is_empty() {
            all.remove(key);
        } else {
            tracing::debug!(binding = %key, unhealthy = ?since, "unhealthy copies");
            all.insert(key.clone(), since.clone());
        }
        shared
            .metrics
            .unhealthy_copies(all.values().map(|s| s.len()).sum());
        since
    };
    let placement_look = shared.placement_looks.lock().remove(key);
    let (mut plan, reserved) = {
        let mut book = shared.book.lock();
        let algo = Instant::now();
        let plan = decide::plan_with(
            &binding,
            &snapshot,
            book.current(algo),
            &shared.plan_opts,
            &unhealthy,
            now,
        );
        shared.metrics.algorithm(algo.elapsed().as_secs_f64());
        let mut reserved = Vec::new();
        if let Some(Ok(result)) = &plan.result {
            reserved = decide::added_replicas(&binding.spec.clusters, &result.clusters);
            for (cluster, n) in &reserved {
                book.reserve(cluster, &plan.per_replica, *n, algo);
            }
        }
        (plan, reserved)
    };
    let release = |shared: &Shared| {
        let mut book = shared.book.lock();
        for (cluster, n) in &reserved {
            book.release(cluster, &plan.per_replica, *n);
        }
    };

    let mut latest = binding.clone();
    if plan.spec_changed(&binding) {
        match write_spec(shared, &binding, &plan).await {
            Ok(b) => latest = Arc::new(b),
            Err(e) => {
                release(shared);
                shared
                    .metrics
                    .attempt(Outcome::Error, started.elapsed().as_secs_f64());
                return Err(e);
            }
        }
        shared.written.lock().insert(key.clone(), latest.clone());
        // Evictions that ended with this write: a task gone, or a cluster left at once.
        let ended = binding
            .spec
            .graceful_eviction_tasks
            .iter()
            .map(|t| t.from_cluster.as_str())
            .filter(|c| !plan.tasks.iter().any(|t| t.from_cluster == *c))
            .chain(
                plan.evicted_now
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !plan.tasks.iter().any(|t| t.from_cluster == *c)),
            );
        for cluster in ended {
            for involved in [binding_ref(&binding), template_ref(&binding)] {
                shared.events.record(EventRequest {
                    involved,
                    type_: "Normal",
                    reason: EVENT_EVICT_SUCCEED,
                    message: format!("Evict from cluster {cluster} succeed."),
                });
            }
        }
        for cluster in plan.evicted_now.iter().chain(&plan.moved_off) {
            shared.metrics.evicted();
            let why = if plan.app_failed_now.contains(cluster) {
                "the application there has been unhealthy longer than its failover tolerates"
            } else if plan.moved_off.contains(cluster) {
                "a reschedule moved its replicas to other clusters"
            } else {
                "it has a NoExecute taint the placement does not tolerate"
            };
            tracing::info!(binding = %key, %cluster, why, "evicting");
            shared.events.record(EventRequest {
                involved: binding_ref(&binding),
                type_: "Warning",
                reason: EVENT_EVICT,
                message: format!("Evicting the workload from cluster {cluster}: {why}"),
            });
        }
    }

    if placement_look && plan.scheduled_time.is_none() && matches!(plan.result, Some(Ok(_))) {
        plan.scheduled_time = Some(now);
    }
    if let Some(recheck) = plan.recheck {
        shared.queue.add_after(key.clone(), recheck + RECHECK_SLACK);
    }
    let Some(result) = &plan.result else {
        return Ok(Action::Done);
    };
    if let Some(patch) = decide::status_patch(
        &latest.status,
        latest.metadata.generation,
        result,
        plan.scheduled_time,
        now,
    ) {
        match write_status(shared, &latest, patch).await {
            Ok(b) => {
                latest = Arc::new(b);
                shared.written.lock().insert(key.clone(), latest.clone());
            }
            Err(e) => {
                shared
                    .metrics
                    .attempt(Outcome::Error, started.elapsed().as_secs_f64());
                return Err(e);
            }
        }
        record_outcome(shared, &latest, result);
    }
    match result {
        Ok(_) => {
            shared
                .metrics
                .attempt(Outcome::Scheduled, started.elapsed().as_secs_f64());
            Ok(Action::Done)
        }
        Err(e) => {
            shared
                .metrics
                .attempt(Outcome::Unschedulable, started.elapsed().as_secs_f64());
            tracing::debug!(binding = %key, reason = e.reason(), "unschedulable; retrying after backoff");
            Ok(Action::RequeueWithBackoff)
        }
    }
}

fn record_outcome(
    shared: &Shared,
    binding: &Binding,
    result: &Result<flotilla_scheduler::ScheduleResult, flotilla_scheduler::ScheduleError>,
) {
    let (type_, reason, message) = match result {
        Ok(r) => (
            "Normal",
            EVENT_SCHEDULE_SUCCEED,
            format!(
                "{} Result: {}",
                decide::SCHEDULED_MESSAGE,
                decide::result_text(&r.clusters)
            ),
        ),
        Err(e) => ("Warning", EVENT_SCHEDULE_FAILED, e.message().to_owned()),
    };
    for involved in [binding_ref(binding), template_ref(binding)] {
        shared.events.record(EventRequest {
            involved,
            type_,
            reason,
            message: message.clone(),
        });
    }
}

fn binding_ref(b: &Binding) -> ObjectReference {
    ObjectReference {
        api_version: Some("work.karmada.io/v1alpha2".into()),
        kind: Some(b.key.kind().into()),
        namespace: b.key.namespace().map(str::to_owned),
        name: Some(b.key.name().to_owned()),
        uid: b.metadata.uid.clone(),
        ..ObjectReference::default()
    }
}

fn template_ref(b: &Binding) -> ObjectReference {
    let r = &b.spec.resource;
    ObjectReference {
        api_version: Some(r.api_version.clone()),
        kind: Some(r.kind.clone()),
        namespace: r.namespace.clone(),
        name: Some(r.name.clone()),
        uid: r.uid.clone(),
        ..ObjectReference::default()
    }
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    }
}

fn null_if_empty<T: serde::Serialize>(v: &[T]) -> Value {
    if v.is_empty() { Value::Null } else { json!(v) }
}

async fn write_spec(shared: &Shared, b: &Binding, plan: &decide::Plan) -> Result<Binding, Error> {
    let patch = json!({
        "metadata": {"resourceVersion": b.metadata.resource_version},
        "spec": {
            "clusters": null_if_empty(&plan.clusters),
            "gracefulEvictionTasks": null_if_empty(&plan.tasks),
        },
    });
    merge_patch(shared, &b.key, &patch, false)
        .await
        .map_err(|source| Error::WriteSpec {
            binding: b.key.to_string(),
            source,
        })
}

/// One JSON merge patch of a ResourceBinding or ClusterResourceBinding (its `status`
/// subresource when `status`), returning the written binding.
async fn merge_patch(
    shared: &Shared,
    key: &BindingKey,
    patch: &Value,
    status: bool,
) -> Result<Binding, kube::Error> {
    // A write that hangs (seen under heavy load, cause not yet found) must not hold the
    // binding's worker for the client's 295 s read timeout: give up and retry with backoff.
    match tokio::time::timeout(WRITE_TIMEOUT, merge_patch_once(shared, key, patch, status)).await {
        Ok(result) => result,
        Err(_) => Err(kube::Error::Service(Box::new(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {WRITE_TIMEOUT:?}"),
        )))),
    }
}

/// How long one write of a binding may take before it is retried.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

async fn merge_patch_once(
    shared: &Shared,
    key: &BindingKey,
    patch: &Value,
    status: bool,
) -> Result<Binding, kube::Error> {
    let pp = patch_params();
    let patch = Patch::Merge(patch);
    match key {
        BindingKey::Namespaced { namespace, name } => {
            let api: Api<ResourceBinding> = Api::namespaced(shared.client.clone(), namespace);
            let written = if status {
                api.patch_status(name, &pp, &patch).await
            } else {
                api.patch(name, &pp, &patch).await
            };
            written.map(Binding::from)
        }
        BindingKey::Cluster { name } => {
            let api: Api<ClusterResourceBinding> = Api::all(shared.client.clone());
            let written = if status {
                api.patch_status(name, &pp, &patch).await
            } else {
                api.patch(name, &pp, &patch).await
            };
            written.map(Binding::from)
        }
    }
}

async fn write_status(shared: &Shared, b: &Binding, mut patch: Value) -> Result<Binding, Error> {
    // The conditions list is replaced as a whole: guard it against a concurrent writer of
    // another condition (FullyApplied) with the resourceVersion we read.
    if let Some(obj) = patch.as_object_mut() {
        obj.insert(
            "metadata".into(),
            json!({"resourceVersion": b.metadata.resource_version}),
        );
    }
    merge_patch(shared, &b.key, &patch, true)
        .await
        .map_err(|source| Error::WriteStatus {
            binding: b.key.to_string(),
            source,
        })
}
