//! The cluster status controller: a work queue of Push-mode Clusters, each synced every
//! `status_period` (with jitter) by a bounded pool of workers, so its cost per cluster per
//! period is one sync and the number of members being talked to at once never exceeds
//! `probe_concurrency`, however many clusters there are. A slow or dead member only ever
//! holds one worker for a bounded time (every call to it is bounded by `probe_timeout`), and
//! once reported not Ready it is synced less and less often ([`schedule`]).
//!
//! ```text
//!  watch Clusters ─▶ kept Clusters (no discovery) ─▶ queue (due time per Push cluster; a
//!                                  changed endpoint / secretRef / proxy starts afresh)
//!  pool of ≤ probe_concurrency workers, per due cluster:
//!    credentials (Secret) ─▶ reader ─▶ /readyz ──▶ Ready condition (failure threshold)
//!                                    └▶ /version + discovery (every api_enablements_period
//!                                       and on reconnect)
//!                                    └▶ list nodes + pods ─▶ summaries
//!    (the connection kept for the next sync, or closed before the write and its TLS
//!     session resumed next time: `keep_member_connections`)
//!    desired status ── merge patch of the difference ─▶ clusters/NAME/status (only changes)
//!    back in the queue after the period less up to 10% jitter, or the back-off while failing
//! ```
//!
//! No heartbeat Lease is kept for Push clusters (as in Karmada, the Lease is the Pull-mode
//! agent's); the health monitor in this process learns from [`schedule::Liveness`] that
//! this controller is alive, and the Ready condition carries what the probes saw.
//!
//! Besides Ready the status carries the `CompleteAPIEnablements` condition of the last
//! discovery ([`crate::conditions`]) and, when the Cluster has `spec.resourceModels`, the
//! node count per grade in `resourceSummary.allocatableModelings` ([`crate::modeling`]).

pub(crate) mod kept;
pub(crate) mod member;
pub(crate) mod probe;
pub mod schedule;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_karmada_api::cluster::{
    AllocatableModeling, ApiEnablement, ClusterSyncMode, ResourceSummary,
};
use flotilla_karmada_api::{Cluster, ClusterStatus};
use flotilla_membership::{MemberReader, MembershipError};
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event, watcher as watch_stream};
use serde_json::json;
use tokio::task::JoinSet;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::conditions::{self, CONDITION_COMPLETE_API_ENABLEMENTS, api_enablements_condition};
use crate::diff::merge_patch;
use crate::modeling::{Grades, ModelError};
use crate::readiness::{
    CONDITION_READY, Observed, REASON_INSECURE_ENDPOINT, Streak, Thresholds, ready_condition,
    with_condition,
};
use crate::resources::Summary;
use crate::{ControllerManagerOptions, Error, Metrics, STATUS_FIELD_MANAGER, error_chain};
use flotilla_membership::MemberTarget as Target;
use flotilla_pod_resources::Resources;
use kept::{KeptCluster, KeptClusters, KeptStatus};
use schedule::{Liveness, jittered, next_delay, next_sync};

/// A healthy member's credentials Secret is read again every this many discovery periods
/// (5 minutes by default).
const CREDENTIALS_PERIODS: u32 = 5;

/// The status controller's name in metrics and logs (its member probes count as part of it).
pub(crate) const CONTROLLER: &str = "cluster-status";

struct Shared {
    host: kube::Client,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
    clusters: KeptClusters,
}

/// One Push cluster in the queue.
struct Slot {
    /// Changed when the cluster must start afresh (new endpoint or credentials reference):
    /// a sync of an older generation still in flight has its result dropped. Unique across
    /// slots, so a cluster deleted and created again is another generation.
    generation: u64,
    /// The generation of the sync in flight, if any.
    in_flight: Option<u64>,
    /// Bumped at each scheduling: queue entries with an older ticket are stale.
    ticket: u64,
    /// The cluster's state while it waits; `None` while a worker has it.
    idle: Option<Box<ClusterWorker>>,
}

/// What a finished sync hands back to the queue.
struct Done {
    name: String,
    generation: u64,
    worker: Box<ClusterWorker>,
    delay: Duration,
}

/// The queue of Push clusters and the pool syncing them.
struct Queue {
    shared: Arc<Shared>,
    liveness: Arc<Liveness>,
    slots: HashMap<String, Slot>,
    due: BinaryHeap<Reverse<(Instant, u64, String)>>,
    pool: JoinSet<Done>,
    /// Which cluster (and generation) each running task syncs, to recover from a panic.
    running: HashMap<tokio::task::Id, (String, u64)>,
    limit: usize,
    next_generation: u64,
}

impl Queue {
    fn schedule(&mut self, name: &str, at: Instant) {
        if let Some(slot) = self.slots.get_mut(name) {
            slot.ticket += 1;
            self.due.push(Reverse((at, slot.ticket, name.to_string())));
            self.liveness.due(name, at);
        }
    }

    fn generation(&mut self) -> u64 {
        self.next_generation += 1;
        self.next_generation
    }

    fn fresh_worker(&self, name: &str) -> Box<ClusterWorker> {
        Box::new(ClusterWorker::new(name.to_string(), self.shared.clone()))
    }

    fn on_cluster(&mut self, cluster: Cluster) {
        let name = cluster.name_any();
        if cluster.spec.sync_mode == ClusterSyncMode::Pull {
            // An agent inside a Pull-mode member reports its status; probing it from here
            // would fight that agent (and the control plane may not reach it at all).
            self.forget(&name, "cluster is in Pull mode; not synced here");
            return;
        }
        let kept = Arc::new(KeptCluster::new(cluster));
        let previous = self.shared.clusters.insert(name.clone(), kept.clone());
        // Most events are status writes: nothing to do for them. (A cluster is kept exactly
        // while it has a slot.)
        if previous.is_some_and(|p| p.target == kept.target) {
            return;
        }
        let fresh = self.fresh_worker(&name);
        let generation = self.generation();
        if let Some(slot) = self.slots.get_mut(&name) {
            info!(cluster = %name, "endpoint or credentials reference changed; reconnecting");
            slot.generation = generation;
            if slot.idle.is_some() {
                slot.idle = Some(fresh);
                self.schedule(&name, Instant::now());
            }
            // Else the running sync's result is replaced when it comes back.
            return;
        }
        let slot = Slot {
            generation,
            in_flight: None,
            ticket: 0,
            idle: Some(fresh),
        };
        self.slots.insert(name.clone(), slot);
        // At once: the pool bounds how many run together.
        self.schedule(&name, Instant::now());
    }

    fn forget(&mut self, name: &str, why: &str) {
        self.shared.clusters.remove(name);
        if self.slots.remove(name).is_some() {
            self.liveness.forget(name);
            info!(cluster = %name, "{why}");
        }
    }

    fn retain(&mut self, seen: &HashSet<String>) {
        self.shared.clusters.retain(|name| seen.contains(name));
        self.slots.retain(|name, _| seen.contains(name));
        self.liveness.retain(|name| seen.contains(name));
    }

    /// Starts due syncs while the pool has room; when the next one is due otherwise.
    fn start_due(&mut self) -> Option<Instant> {
        let now = Instant::now();
        while self.pool.len() < self.limit {
            let Reverse((at, ..)) = self.due.peek()?;
            if *at > now {
                return Some(*at);
            }
            let Reverse((_, ticket, name)) = self.due.pop()?;
            let Some(slot) = self.slots.get_mut(&name) else {
                continue;
            };
            if slot.ticket != ticket {
                continue;
            }
            let Some(mut worker) = slot.idle.take() else {
                continue;
            };
            let generation = slot.generation;
            slot.in_flight = Some(generation);
            self.liveness.running(&name);
            let metrics = self.shared.metrics.clone();
            let span = info_span!("cluster_status", cluster = %name);
            let task_name = name.clone();
            let handle = self.pool.spawn(
                async move {
                    metrics.sync_started();
                    let delay = worker.sync_and_report().await;
                    metrics.sync_finished();
                    Done {
                        name: task_name,
                        generation,
                        worker,
                        delay,
                    }
                }
                .instrument(span),
            );
            self.running.insert(handle.id(), (name, generation));
        }
        // Full: the next start follows a finished sync.
        None
    }

    fn on_done(&mut self, done: Result<(tokio::task::Id, Done), tokio::task::JoinError>) {
        self.liveness.progressed();
        let (name, generation, worker, delay) = match done {
            Ok((id, done)) => {
                self.running.remove(&id);
                (done.name, done.generation, Some(done.worker), done.delay)
            }
            Err(e) => {
                let Some((name, generation)) = self.running.remove(&e.id()) else {
                    return;
                };
                self.shared.metrics.error(CONTROLLER, "panic");
                warn!(cluster = %name, error = %e, "cluster status sync ended abnormally; starting afresh");
                (name, generation, None, self.shared.opts.status_period)
            }
        };
        let fresh = self.fresh_worker(&name);
        let Some(slot) = self.slots.get_mut(&name) else {
            // Deleted (or turned Pull) meanwhile.
            return;
        };
        if slot.in_flight != Some(generation) {
            // A sync for a slot since deleted and created again: the new slot is not ours.
            return;
        }
        slot.in_flight = None;
        let (worker, at) = match worker {
            Some(w) if slot.generation == generation => (w, Instant::now() + delay),
            // Reconnect at once with the new target; or after a panic, after a period.
            Some(_) => (fresh, Instant::now()),
            None => (fresh, Instant::now() + jittered(delay)),
        };
        slot.idle = Some(worker);
        self.schedule(&name, at);
    }
}

/// Runs the queue until the task is aborted (which drops, and so aborts, every sync in
/// flight).
pub(crate) async fn run(
    host: kube::Client,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
    liveness: Arc<Liveness>,
) {
    let api: Api<Cluster> = Api::all(host.clone());
    let limit = opts.probe_concurrency.max(1);
    let shared = Arc::new(Shared {
        host,
        opts,
        metrics,
        clusters: KeptClusters::default(),
    });
    let mut events = watch_stream(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut queue = Queue {
        shared: shared.clone(),
        liveness,
        slots: HashMap::new(),
        due: BinaryHeap::new(),
        pool: JoinSet::new(),
        running: HashMap::new(),
        limit,
        next_generation: 0,
    };
    let mut relisted: Option<HashSet<String>> = None;
    loop {
        let next = queue.start_due();
        let wake = async {
            match next {
                Some(at) => tokio::time::sleep_until(at.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else { return };
                match event {
                    Ok(Event::Init) => relisted = Some(HashSet::new()),
                    Ok(Event::InitApply(cluster)) => {
                        if let Some(seen) = &mut relisted {
                            seen.insert(cluster.name_any());
                        }
                        queue.on_cluster(cluster);
                    }
                    Ok(Event::Apply(cluster)) => queue.on_cluster(cluster),
                    Ok(Event::Delete(cluster)) => {
                        queue.forget(&cluster.name_any(), "cluster gone; no longer synced");
                    }
                    Ok(Event::InitDone) => {
                        if let Some(seen) = relisted.take() {
                            queue.retain(&seen);
                        }
                    }
                    Err(e) => {
                        shared.metrics.error(CONTROLLER, "watch");
                        warn!(error = %error_chain(&e), "watching clusters failed; backing off");
                    }
                }
            }
            Some(done) = queue.pool.join_next_with_id(), if !queue.pool.is_empty() => {
                queue.on_done(done);
            }
            () = wake => {}
        }
    }
}

/// How one cluster's member is reached: the reader built from its credentials. When
/// connections are kept ([`ControllerManagerOptions::keep_member_connections`]) its
/// connection stays open between syncs; otherwise it is closed when the sync is done, and
/// the next sync's connection resumes its TLS session.
struct Connection {
    target: Target,
    /// [`flotilla_membership::MemberCredentials::fingerprint`] of the credentials the reader
    /// was built with: at thousands of members the keys and certificates themselves add up,
    /// and the reader holds what it needs of them.
    credentials: u64,
    reader: Arc<MemberReader>,
}

/// The last status this task wrote, and the resourceVersion it was written over: until the
/// kept Cluster moves past that version it is stale, and the written status is the better
/// base.
struct Written {
    over_version: Option<String>,
    status: KeptStatus,
}

/// The status a sync wants, over a base without its discovery ([`KeptStatus`]). The
/// discovery (`apiEnablements`) is in it only when this sync made one that differs from the
/// base's; otherwise it is empty, and a write leaves the published one as it is.
struct Desired {
    status: ClusterStatus,
}

impl Desired {
    fn same_as(&self, base: &KeptStatus) -> bool {
        self.status.api_enablements.is_empty() && base.is(&self.status)
    }
}

/// One cluster's state between syncs.
struct ClusterWorker {
    name: String,
    shared: Arc<Shared>,
    connection: Option<Connection>,
    credentials_read: Option<Instant>,
    /// Since when probes have failed without a success in between.
    failing_since: Option<Instant>,
    /// Since when probes have succeeded without a failure in between.
    healthy_since: Option<Instant>,
    /// Whether the last probe got an answer.
    reachable: bool,
    discovered: Option<Instant>,
    version: Option<String>,
    /// A discovery not yet published: group/versions and whether every document was read.
    enablements: Option<(Vec<ApiEnablement>, bool)>,
    /// Whether any discovery of this member succeeded (its result is then in the status).
    ever_discovered: bool,
    /// The node/pod summaries of this sync's lists, until published.
    summary: Option<Summary>,
    written: Option<Written>,
    /// Consecutive failing probes made while the cluster was already reported not Ready:
    /// the back-off step.
    failures_reported: u32,
    /// Whether the last status this task wrote (or found) says Ready=True.
    reported_ready: bool,
}

impl ClusterWorker {
    fn new(name: String, shared: Arc<Shared>) -> Self {
        Self {
            name,
            shared,
            connection: None,
            credentials_read: None,
            failing_since: None,
            healthy_since: None,
            reachable: false,
            discovered: None,
            version: None,
            enablements: None,
            ever_discovered: false,
            summary: None,
            written: None,
            failures_reported: 0,
            reported_ready: false,
        }
    }

    fn opts(&self) -> &ControllerManagerOptions {
        &self.shared.opts
    }

    /// One sync; the delay until the next one (jitter included).
    async fn sync_and_report(&mut self) -> Duration {
        let result = self.sync().await;
        self.shared.metrics.reconciled(CONTROLLER, result.is_ok());
        if let Err(e) = result {
            self.shared.metrics.error(CONTROLLER, e.kind());
            warn!(error = %error_chain(&e), "cluster status sync failed");
        }
        let opts = self.opts();
        let delay = next_delay(
            opts.status_period,
            opts.unreachable_backoff_max,
            self.failures_reported,
        );
        // Probes that disagree with the reported condition: sync again when their streak
        // reaches its threshold, so the change is reported then and not up to a period later.
        let now = Instant::now();
        let pending = match (self.failing_since, self.healthy_since) {
            (Some(since), _) if self.reported_ready => Some((since, opts.failure_threshold)),
            (_, Some(since)) if !self.reported_ready => Some((since, opts.success_threshold)),
            _ => None,
        };
        next_sync(
            delay,
            pending.map(|(since, threshold)| (now.saturating_duration_since(since), threshold)),
        )
    }

    /// A reader of the member built from the current credentials. The Secret is read
    /// at every probe while the member fails (a rotated token is the likely cause of an
    /// outage we can fix ourselves) and otherwise every [`CREDENTIALS_PERIODS`] discovery
    /// periods: credentials that still work can wait, and each read is a request to the host
    /// (at 5,000 members and one a minute, 83 per second).
    async fn member_reader(&mut self, target: &Target) -> Result<Arc<MemberReader>, Error> {
        let reread = self
            .opts()
            .api_enablements_period
            .saturating_mul(CREDENTIALS_PERIODS);
        let due = self.connection.as_ref().is_none_or(|c| c.target != *target)
            || self.failing_since.is_some()
            || self.credentials_read.is_none_or(|t| t.elapsed() >= reread);
        let timeout = self.opts().probe_timeout;
        let connection = match self.connection.take() {
            Some(c) if !due => c,
            current => {
                let credentials =
                    member::read_credentials(&self.shared.host, &self.name, target, timeout)
                        .await?;
                self.credentials_read = Some(Instant::now());
                let fingerprint = credentials.fingerprint();
                match current {
                    Some(c) if c.target == *target && c.credentials == fingerprint => c,
                    current => {
                        if current.is_some() {
                            info!("member credentials changed; reconnecting");
                        }
                        self.discovered = None;
                        let reader =
                            member::reader(&self.name, target, &credentials, timeout).await?;
                        Connection {
                            target: target.clone(),
                            credentials: fingerprint,
                            reader: Arc::new(reader),
                        }
                    }
                }
            }
        };
        let reader = connection.reader.clone();
        self.connection = Some(connection);
        Ok(reader)
    }

    /// One health probe; the member's reader, for the rest of the sync.
    async fn observe(&mut self, target: &Target) -> (Observed, Option<Arc<MemberReader>>) {
        let reader = match self.member_reader(target).await {
            Ok(reader) => reader,
            Err(Error::Credentials {
                source: e @ MembershipError::PlainHttp { .. },
                ..
            }) => {
                if self.failing_since.is_none() {
                    warn!(error = %e, "not contacting the member");
                }
                return (
                    Observed::Refused {
                        reason: REASON_INSECURE_ENDPOINT,
                        message: e.to_string(),
                    },
                    None,
                );
            }
            Err(e) => {
                if self.failing_since.is_none() {
                    warn!(error = %error_chain(&e), "cannot connect to the member");
                } else {
                    debug!(error = %error_chain(&e), "still cannot connect to the member");
                }
                return (Observed::Unreachable, None);
            }
        };
        let timeout = self.opts().probe_timeout;
        let started = Instant::now();
        let (observed, detail) = match tokio::time::timeout(timeout, probe::health(&reader)).await {
            Ok(result) => result,
            Err(_) => (
                Observed::Unreachable,
                format!("health probe timed out after {timeout:?}"),
            ),
        };
        let outcome = match observed {
            Observed::Healthy => "healthy",
            Observed::Unhealthy => "unhealthy",
            Observed::Unreachable => "unreachable",
            Observed::Refused { .. } => "refused",
        };
        self.shared
            .metrics
            .probed(outcome, started.elapsed().as_secs_f64());
        if observed != Observed::Healthy {
            if self.failing_since.is_none() {
                warn!(outcome, %detail, "member health probe failed");
            } else {
                debug!(outcome, %detail, "member health probe still failing");
            }
        }
        (observed, Some(reader))
    }

    /// Node/pod summaries and discovery for a healthy member through its `reader`;
    /// `reconnected` refreshes discovery at once.
    async fn refresh_member(&mut self, reader: &MemberReader, reconnected: bool) {
        let period = self.opts().api_enablements_period;
        let timeout = self.opts().probe_timeout;
        let metrics = self.shared.metrics.clone();
        if reconnected {
            self.discovered = None;
        }
        // Two lists: give them two probes' time.
        let rounding = &self.shared.opts.capacity_rounding;
        match tokio::time::timeout(timeout * 2, member::summarize_member(reader, rounding)).await {
            Ok(Ok(summary)) => self.summary = Some(summary),
            Ok(Err(e)) => {
                metrics.error(CONTROLLER, "list");
                warn!(error = %error_chain(&e), "listing the member's nodes and pods failed");
            }
            Err(_) => {
                metrics.error(CONTROLLER, "list");
                warn!("listing the member's nodes and pods timed out");
            }
        }
        if self.discovered.is_some_and(|t| t.elapsed() < period) {
            return;
        }
        match tokio::time::timeout(timeout, probe::version(reader)).await {
            Ok(Ok(v)) => self.version = Some(v),
            Ok(Err(e)) => warn!(error = %error_chain(&e), "reading the member version failed"),
            Err(_) => warn!("reading the member version timed out"),
        }
        // Discovery reads a few dozen documents; give it more than one probe's time.
        match tokio::time::timeout(timeout * 3, probe::api_enablements(reader)).await {
            Ok(Ok((enablements, complete))) => {
                if !complete {
                    warn!("some discovery documents of the member could not be read");
                }
                self.enablements = Some((enablements, complete));
                self.ever_discovered = true;
                self.discovered = Some(Instant::now());
            }
            Ok(Err(e)) => {
                metrics.error(CONTROLLER, "discovery");
                warn!(error = %error_chain(&e), "member discovery failed");
                self.discovery_failed();
            }
            Err(_) => {
                metrics.error(CONTROLLER, "discovery");
                warn!("member discovery timed out");
                self.discovery_failed();
            }
        }
    }

    /// Discovery failed as a whole (retried at the next sync). The last good result, if
    /// any, stays published with its condition; with none, the member is published as
    /// having no known APIs (CompleteAPIEnablements=False, Empty) as Karmada does.
    fn discovery_failed(&mut self) {
        if !self.ever_discovered {
            self.enablements = Some((Vec::new(), false));
        }
    }

    async fn sync(&mut self) -> Result<(), Error> {
        let Some(kept) = self.shared.clusters.get(&self.name) else {
            // Deleted: the supervisor is about to stop this task.
            return Ok(());
        };
        // A streak starts when the probe that began it was sent, not when it gave up: a
        // member going down is then reported one period plus the threshold after, at most.
        let probed = Instant::now();
        let (observed, reader) = self.observe(&kept.target).await;
        let now = Instant::now();
        if observed == Observed::Healthy {
            if self.failing_since.take().is_some() {
                info!("member healthy again");
            }
            self.healthy_since.get_or_insert(probed);
        } else {
            self.failing_since.get_or_insert(probed);
            self.healthy_since = None;
        }
        let reconnected = observed.reached() && !self.reachable;
        self.reachable = observed.reached();
        if !observed.reached() {
            // A member that cannot be reached keeps nothing to reach it with (its TLS
            // configuration and sessions). The next probe builds them again; it re-reads the
            // credentials while failing anyway.
            self.connection = None;
        }
        if let (Observed::Healthy, Some(reader)) = (&observed, &reader) {
            self.refresh_member(reader, reconnected).await;
        }
        // Unless connections are kept, this one closes here, before the status is written:
        // between syncs the member then holds no socket.
        if let Some(reader) = reader {
            if !self.opts().keep_member_connections {
                reader.disconnect();
            }
        }

        // Once the kept Cluster has caught up with the last write, that copy is dropped.
        let written = self
            .written
            .take()
            .filter(|w| w.over_version == kept.resource_version);
        let kept_base = match &written {
            Some(w) => &w.status,
            None => &kept.status,
        };
        let base = match kept_base.status() {
            Ok(base) => base,
            Err(source) => {
                let e = Error::EncodeStatus {
                    cluster: self.name.clone(),
                    source,
                };
                self.written = written;
                return Err(e);
            }
        };
        let desired =
            self.desired_status(&base, kept_base.enablements, &observed, &kept.grades, now);
        let reported_ready = desired
            .status
            .conditions
            .iter()
            .any(|c| c.type_ == CONDITION_READY && c.status == "True");
        // Back off only once the failure is reported: the failure threshold is counted in
        // probes made every period.
        self.reported_ready = reported_ready;
        self.failures_reported = if observed == Observed::Healthy || reported_ready {
            0
        } else {
            self.failures_reported.saturating_add(1)
        };
        if desired.same_as(kept_base) {
            self.written = written;
        } else if let Err(e) = self
            .write(kept.resource_version.as_ref(), &base, desired.status)
            .await
        {
            // The last write stays the better base until the kept Cluster shows it.
            self.written = written;
            return Err(e);
        }
        if observed == Observed::Healthy {
            // Published (a healthy sync puts them in the status, or found them there): the
            // status is their copy from now on, and the next sync lists and discovers anew.
            self.enablements = None;
            self.summary = None;
        }
        Ok(())
    }

    fn desired_status(
        &self,
        base: &ClusterStatus,
        published_enablements: u64,
        observed: &Observed,
        grades: &Result<Option<Grades>, ModelError>,
        now: Instant,
    ) -> Desired {
        let opts = self.opts();
        let since =
            |t: Option<Instant>| t.map_or(Duration::ZERO, |t| now.saturating_duration_since(t));
        let streak = Streak {
            failing_for: since(self.failing_since),
            succeeding_for: since(self.healthy_since),
        };
        let thresholds = Thresholds {
            failure: opts.failure_threshold,
            success: opts.success_threshold,
        };
        let current = base.conditions.iter().find(|c| c.type_ == CONDITION_READY);
        let ready = ready_condition(current, observed, streak, thresholds, Timestamp::now());
        let mut desired = ClusterStatus {
            conditions: with_condition(&base.conditions, ready),
            ..base.clone()
        };
        if *observed != Observed::Healthy {
            // Keep the last known picture of the member; only the condition says it is stale.
            return Desired { status: desired };
        }
        if let Some(v) = &self.version {
            desired.kubernetes_version = Some(v.clone());
        }
        if let Some((enablements, complete)) = &self.enablements {
            if kept::fingerprint(enablements) != published_enablements {
                // Only a discovery that differs is written (whole).
                desired.api_enablements = enablements.clone();
            }
            let current = conditions::find(&base.conditions, CONDITION_COMPLETE_API_ENABLEMENTS);
            let condition =
                api_enablements_condition(current, enablements.len(), *complete, Timestamp::now());
            desired.conditions = with_condition(&desired.conditions, condition);
        }
        if let Some(summary) = &self.summary {
            desired.node_summary = Some(summary.node_summary.clone());
            desired.resource_summary = Some(ResourceSummary {
                allocatable: summary.allocatable.to_list(),
                allocating: summary.allocating.to_list(),
                allocated: summary.allocated.to_list(),
                allocatable_modelings: self.modelings(grades, &summary.free, base),
            });
            desired.node_capacities = summary.node_capacities.clone();
        }
        Desired { status: desired }
    }

    /// `allocatableModelings` from the nodes' free capacity; unusable models keep the last
    /// published value.
    fn modelings(
        &self,
        grades: &Result<Option<Grades>, ModelError>,
        free: &[Resources],
        base: &ClusterStatus,
    ) -> Vec<AllocatableModeling> {
        match grades {
            Ok(Some(grades)) => grades.count(free),
            Ok(None) => Vec::new(),
            Err(e) => {
                debug!(error = %e, "spec.resourceModels unusable; allocatableModelings not updated");
                base.resource_summary
                    .as_ref()
                    .map(|r| r.allocatable_modelings.clone())
                    .unwrap_or_default()
            }
        }
    }

    async fn write(
        &mut self,
        over_version: Option<&String>,
        base: &ClusterStatus,
        desired: ClusterStatus,
    ) -> Result<(), Error> {
        let encode = |s: &ClusterStatus| {
            serde_json::to_value(s).map_err(|source| Error::EncodeStatus {
                cluster: self.name.clone(),
                source,
            })
        };
        let Some(patch) = merge_patch(&encode(base)?, &encode(&desired)?) else {
            return Ok(());
        };
        let api: Api<Cluster> = Api::all(self.shared.host.clone());
        let params = PatchParams {
            field_manager: Some(STATUS_FIELD_MANAGER.into()),
            ..Default::default()
        };
        let written = api
            .patch_status(
                &self.name,
                &params,
                &Patch::Merge(json!({ "status": patch })),
            )
            .await
            .map_err(|source| Error::WriteStatus {
                cluster: self.name.clone(),
                source,
            })?;
        self.shared.metrics.status_written();
        let was = base.conditions.iter().find(|c| c.type_ == CONDITION_READY);
        let now = desired
            .conditions
            .iter()
            .find(|c| c.type_ == CONDITION_READY);
        if was.map(|c| &c.status) != now.map(|c| &c.status) {
            info!(
                ready = now.map(|c| c.status.as_str()),
                reason = now.map(|c| c.reason.as_str()),
                "cluster readiness changed"
            );
        }
        self.written = Some(Written {
            over_version: over_version.cloned(),
            status: KeptStatus::new(written.status.unwrap_or(desired)),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn status(version: &str, group_versions: &[&str]) -> ClusterStatus {
        serde_json::from_value(json!({
            "kubernetesVersion": version,
            "apiEnablements": group_versions.iter()
                .map(|gv| json!({"groupVersion": gv, "resources": [{"name": "things", "kind": "Thing"}]}))
                .collect::<Vec<_>>(),
            "nodeSummary": {"totalNum": 3, "readyNum": 3},
        }))
        .unwrap()
    }

    #[test]
    fn a_status_without_a_new_discovery_keeps_the_published_one() {
        let base = KeptStatus::new(status("v1.33.0", &["v1", "apps/v1"]));
        let same = Desired {
            status: base.status().unwrap(),
        };
        assert!(same.status.api_enablements.is_empty());
        assert!(same.same_as(&base));

        let mut newer = base.status().unwrap();
        newer.kubernetes_version = Some("v1.33.1".into());
        let newer = Desired { status: newer };
        assert!(!newer.same_as(&base));
        // The patch carries the new version and leaves the published discovery alone.
        let patch = merge_patch(
            &serde_json::to_value(base.status().unwrap()).unwrap(),
            &serde_json::to_value(&newer.status).unwrap(),
        );
        assert_eq!(patch, Some(json!({"kubernetesVersion": "v1.33.1"})));
    }

    #[test]
    fn a_new_discovery_is_written_whole_when_it_differs() {
        let base = KeptStatus::new(status("v1.33.0", &["v1", "apps/v1"]));
        let fewer = status("v1.33.0", &["v1"]);
        let desired = Desired {
            status: fewer.clone(),
        };
        assert!(!desired.same_as(&base));
        let patch = merge_patch(
            &serde_json::to_value(base.status().unwrap()).unwrap(),
            &serde_json::to_value(&desired.status).unwrap(),
        );
        assert_eq!(
            patch,
            Some(json!({"apiEnablements": serde_json::to_value(&fewer.api_enablements).unwrap()}))
        );
    }
}
