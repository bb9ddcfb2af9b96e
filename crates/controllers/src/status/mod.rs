//! The cluster status controller: one independent task per Cluster refreshes its `status`
//! every `status_period`, so a slow or dead member only ever delays its own task (every call
//! to it is bounded by `probe_timeout`).
//!
//! ```text
//!  watch Clusters ─▶ reflector store ─▶ supervisor: one task per Push-mode Cluster,
//!                                       restarted when endpoint / secretRef / proxy change
//!  task, every period:
//!    credentials (Secret) ─▶ client ─▶ /readyz ──▶ Ready condition (failure threshold)
//!                                    └▶ /version + discovery (every api_enablements_period
//!                                       and on reconnect)
//!                                    └▶ node + pod watches ─▶ summaries
//!    desired status ── merge patch of the difference ─▶ clusters/NAME/status (only changes)
//!  lease task, every lease_duration × fraction: renew karmada-cluster/NAME (crate::lease)
//! ```
//!
//! Besides Ready the status carries the `CompleteAPIEnablements` condition of the last
//! discovery ([`crate::conditions`]) and, when the Cluster has `spec.resourceModels`, the
//! node count per grade in `resourceSummary.allocatableModelings` ([`crate::modeling`]).

pub(crate) mod member;
pub(crate) mod probe;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_api::cluster::{
    AllocatableModeling, ApiEnablement, ClusterSyncMode, ResourceModel, ResourceSummary,
};
use flotilla_api::{Cluster, ClusterStatus};
use flotilla_membership::MemberCredentials;
use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::watcher::{self, Event, watcher as watch_stream};
use kube::runtime::{WatchStreamExt, reflector as reflect};
use serde_json::json;
use tracing::{Instrument, debug, info, info_span, warn};

use crate::conditions::{self, CONDITION_COMPLETE_API_ENABLEMENTS, api_enablements_condition};
use crate::diff::merge_patch;
use crate::modeling;
use crate::readiness::{
    CONDITION_READY, Observed, Streak, Thresholds, ready_condition, with_condition,
};
use crate::resources::Resources;
use crate::{
    AbortOnDrop, ControllerManagerOptions, Error, Metrics, STATUS_FIELD_MANAGER, error_chain,
};
use flotilla_membership::MemberTarget as Target;
use member::MemberWatches;

/// The status controller's name in metrics and logs (its heartbeat Leases and member
/// watches count as part of it).
pub(crate) const CONTROLLER: &str = "cluster-status";

struct Shared {
    host: kube::Client,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
    clusters: Store<Cluster>,
}

/// One cluster's tasks and what the status task was started for.
struct Worker {
    target: Target,
    _task: AbortOnDrop,
    /// Renews the cluster's heartbeat Lease; kept across reconnections.
    _lease: AbortOnDrop,
}

/// Runs the supervisor until the task is aborted (which drops, and so aborts, every
/// per-cluster task and member watch).
pub(crate) async fn run(
    host: kube::Client,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
) {
    let (store, writer) = reflector::store();
    let api: Api<Cluster> = Api::all(host.clone());
    let shared = Arc::new(Shared {
        host,
        opts,
        metrics,
        clusters: store,
    });
    let mut events = reflect(writer, watch_stream(api, watcher::Config::default()))
        .default_backoff()
        .boxed();
    let mut workers: HashMap<String, Worker> = HashMap::new();
    let mut relisted: Option<HashSet<String>> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Init) => relisted = Some(HashSet::new()),
            Ok(Event::InitApply(cluster)) => {
                if let Some(seen) = &mut relisted {
                    seen.insert(cluster.name_any());
                }
                ensure_worker(&mut workers, &cluster, &shared);
            }
            Ok(Event::Apply(cluster)) => ensure_worker(&mut workers, &cluster, &shared),
            Ok(Event::Delete(cluster)) => {
                if workers.remove(&cluster.name_any()).is_some() {
                    info!(cluster = %cluster.name_any(), "cluster gone; stopped its status task");
                }
            }
            Ok(Event::InitDone) => {
                if let Some(seen) = relisted.take() {
                    workers.retain(|name, _| seen.contains(name));
                }
            }
            Err(e) => {
                shared.metrics.error(CONTROLLER, "watch");
                warn!(error = %error_chain(&e), "watching clusters failed; backing off");
            }
        }
    }
}

fn ensure_worker(workers: &mut HashMap<String, Worker>, cluster: &Cluster, shared: &Arc<Shared>) {
    let name = cluster.name_any();
    if cluster.spec.sync_mode == ClusterSyncMode::Pull {
        // An agent inside a Pull-mode member reports its status; probing it from here
        // would fight that agent (and the control plane may not reach it at all).
        if workers.remove(&name).is_some() {
            info!(cluster = %name, "cluster switched to Pull mode; stopped its status task");
        }
        return;
    }
    let target = Target::of(cluster);
    let spawn_status = || {
        let worker = ClusterWorker::new(name.clone(), shared.clone());
        AbortOnDrop(tokio::spawn(
            worker
                .run()
                .instrument(info_span!("cluster_status", cluster = %name)),
        ))
    };
    if let Some(worker) = workers.get_mut(&name) {
        if worker.target != target {
            info!(cluster = %name, "endpoint or credentials reference changed; reconnecting");
            worker.target = target;
            worker._task = spawn_status();
        }
        return;
    }
    let task = spawn_status();
    let lease = AbortOnDrop(tokio::spawn(
        crate::lease::run(
            shared.host.clone(),
            name.clone(),
            shared.clusters.clone(),
            shared.opts.clone(),
            shared.metrics.clone(),
        )
        .instrument(info_span!("cluster_lease", cluster = %name)),
    ));
    workers.insert(
        name,
        Worker {
            target,
            _task: task,
            _lease: lease,
        },
    );
}

/// A stable offset within `period` derived from `name` (FNV-1a), spreading clusters' syncs.
fn phase(name: &str, period: Duration) -> Duration {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let millis = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
    Duration::from_millis(hash % millis)
}

/// The member connection of one cluster.
struct Connection {
    target: Target,
    credentials: MemberCredentials,
    client: kube::Client,
    watches: Option<MemberWatches>,
}

/// The last status this task wrote, and the resourceVersion it was written over: until the
/// store moves past that version it is stale, and the written status is the better base.
struct Written {
    over_version: Option<String>,
    status: ClusterStatus,
}

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
    /// The last discovery: group/versions and whether every document was read.
    enablements: Option<(Vec<ApiEnablement>, bool)>,
    written: Option<Written>,
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
            written: None,
        }
    }

    fn opts(&self) -> &ControllerManagerOptions {
        &self.shared.opts
    }

    async fn run(mut self) {
        // interval() rejects a zero period.
        let period = self.opts().status_period.max(Duration::from_millis(1));
        // The first sync at once (a new cluster gets its status quickly), the following ones
        // at a phase fixed per cluster name: tasks all started together by the first list
        // would otherwise probe and write in one burst every period.
        self.sync_and_report().await;
        tokio::time::sleep(phase(&self.name, period)).await;
        let mut ticker = tokio::time::interval(period);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            self.sync_and_report().await;
        }
    }

    async fn sync_and_report(&mut self) {
        let result = self.sync().await;
        self.shared.metrics.reconciled(CONTROLLER, result.is_ok());
        if let Err(e) = result {
            self.shared.metrics.error(CONTROLLER, e.kind());
            warn!(error = %error_chain(&e), "cluster status sync failed");
        }
    }

    /// Makes sure there is a client built from the current credentials. The Secret is read
    /// again every `api_enablements_period`, and at every probe while the member fails (a
    /// rotated token is the likely cause of an outage we can fix ourselves).
    async fn ensure_connection(&mut self, cluster: &Cluster) -> Result<(), Error> {
        let target = Target::of(cluster);
        let due = self.connection.as_ref().is_none_or(|c| c.target != target)
            || self.failing_since.is_some()
            || self
                .credentials_read
                .is_none_or(|t| t.elapsed() >= self.opts().api_enablements_period);
        if !due {
            return Ok(());
        }
        let timeout = self.opts().probe_timeout;
        let credentials = member::read_credentials(&self.shared.host, cluster, timeout).await?;
        self.credentials_read = Some(Instant::now());
        if let Some(c) = &self.connection {
            if c.target == target && c.credentials == credentials {
                return Ok(());
            }
            info!("member credentials changed; reconnecting");
        }
        let client = member::connect(&self.name, &target, &credentials, timeout).await?;
        self.connection = Some(Connection {
            target,
            credentials,
            client,
            watches: None,
        });
        self.discovered = None;
        Ok(())
    }

    async fn observe(&mut self, cluster: &Cluster) -> Observed {
        if let Err(e) = self.ensure_connection(cluster).await {
            if self.failing_since.is_none() {
                warn!(error = %error_chain(&e), "cannot connect to the member");
            } else {
                debug!(error = %error_chain(&e), "still cannot connect to the member");
            }
            return Observed::Unreachable;
        }
        let Some(connection) = &self.connection else {
            return Observed::Unreachable;
        };
        let timeout = self.opts().probe_timeout;
        let started = Instant::now();
        let (observed, detail) =
            match tokio::time::timeout(timeout, probe::health(&connection.client)).await {
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
        observed
    }

    /// Node/pod watches and discovery for a healthy member; `reconnected` restarts the
    /// watches (they may be deep in their backoff) and refreshes discovery.
    async fn refresh_member(&mut self, reconnected: bool) {
        let period = self.opts().api_enablements_period;
        let timeout = self.opts().probe_timeout;
        let name = self.name.clone();
        let metrics = self.shared.metrics.clone();
        let Some(connection) = &mut self.connection else {
            return;
        };
        if reconnected {
            connection.watches = None;
            self.discovered = None;
        }
        if connection.watches.is_none() {
            connection.watches = Some(MemberWatches::start(
                connection.client.clone(),
                &name,
                metrics.clone(),
            ));
        }
        if self.discovered.is_some_and(|t| t.elapsed() < period) {
            return;
        }
        let client = connection.client.clone();
        match tokio::time::timeout(timeout, probe::version(&client)).await {
            Ok(Ok(v)) => self.version = Some(v),
            Ok(Err(e)) => warn!(error = %error_chain(&e), "reading the member version failed"),
            Err(_) => warn!("reading the member version timed out"),
        }
        // Discovery reads a few dozen documents; give it more than one probe's time.
        match tokio::time::timeout(timeout * 3, probe::api_enablements(&client)).await {
            Ok(Ok((enablements, complete))) => {
                if !complete {
                    warn!("some discovery documents of the member could not be read");
                }
                self.enablements = Some((enablements, complete));
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
        if self.enablements.is_none() {
            self.enablements = Some((Vec::new(), false));
        }
    }

    async fn sync(&mut self) -> Result<(), Error> {
        let Some(cluster) = self.shared.clusters.get(&ObjectRef::new(&self.name)) else {
            // Deleted: the supervisor is about to stop this task.
            return Ok(());
        };
        let observed = self.observe(&cluster).await;
        let now = Instant::now();
        if observed == Observed::Healthy {
            if self.failing_since.take().is_some() {
                info!("member healthy again");
            }
            self.healthy_since.get_or_insert(now);
        } else {
            self.failing_since.get_or_insert(now);
            self.healthy_since = None;
        }
        let reconnected = observed != Observed::Unreachable && !self.reachable;
        self.reachable = observed != Observed::Unreachable;
        if observed == Observed::Healthy {
            self.refresh_member(reconnected).await;
        }

        let stored = cluster.status.clone().unwrap_or_default();
        let base = match &self.written {
            Some(w) if w.over_version == cluster.metadata.resource_version => w.status.clone(),
            _ => stored,
        };
        let desired = self.desired_status(&base, &observed, &cluster.spec.resource_models, now);
        if desired == base {
            return Ok(());
        }
        self.write(&cluster, &base, desired).await
    }

    fn desired_status(
        &self,
        base: &ClusterStatus,
        observed: &Observed,
        models: &[ResourceModel],
        now: Instant,
    ) -> ClusterStatus {
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
        let mut desired = base.clone();
        desired.conditions = with_condition(&base.conditions, ready);
        if *observed != Observed::Healthy {
            // Keep the last known picture of the member; only the condition says it is stale.
            return desired;
        }
        if let Some(v) = &self.version {
            desired.kubernetes_version = Some(v.clone());
        }
        if let Some((enablements, complete)) = &self.enablements {
            desired.api_enablements = enablements.clone();
            let current = conditions::find(&base.conditions, CONDITION_COMPLETE_API_ENABLEMENTS);
            let condition =
                api_enablements_condition(current, enablements.len(), *complete, Timestamp::now());
            desired.conditions = with_condition(&desired.conditions, condition);
        }
        let summary = self
            .connection
            .as_ref()
            .and_then(|c| c.watches.as_ref())
            .and_then(|w| w.summary(&opts.capacity_rounding));
        if let Some(summary) = summary {
            desired.node_summary = Some(summary.node_summary);
            desired.resource_summary = Some(ResourceSummary {
                allocatable: summary.allocatable.to_list(),
                allocating: summary.allocating.to_list(),
                allocated: summary.allocated.to_list(),
                allocatable_modelings: self.modelings(models, &summary.free, base),
            });
            desired.node_capacities = summary.node_capacities;
        }
        desired
    }

    /// `allocatableModelings` from the nodes' free capacity; unusable models keep the last
    /// published value.
    fn modelings(
        &self,
        models: &[ResourceModel],
        free: &[Resources],
        base: &ClusterStatus,
    ) -> Vec<AllocatableModeling> {
        match modeling::allocatable_modelings(models, free) {
            Ok(m) => m,
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
        cluster: &Cluster,
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
            over_version: cluster.metadata.resource_version.clone(),
            status: written.status.unwrap_or(desired),
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_are_stable_spread_and_within_the_period() {
        let period = Duration::from_secs(10);
        assert_eq!(phase("member1", period), phase("member1", period));
        let phases: std::collections::BTreeSet<Duration> = (0..200)
            .map(|i| phase(&format!("member{i}"), period))
            .collect();
        assert!(phases.iter().all(|p| *p < period));
        assert!(phases.len() > 150, "{} distinct phases", phases.len());
        assert_eq!(phase("x", Duration::ZERO), Duration::ZERO);
    }
}
