//! The scheduling loop of Flotilla (`flotilla scheduler`): the IO around the pure core in
//! `flotilla-scheduler`.
//!
//! ```text
//!  watch ResourceBindings ─┐                        ┌─> schedule() under the reservations lock
//!  watch ClusterRBs ───────┼─> binding cache ─> controller queue (runtime) ─> N reconciles
//!  watch Clusters ─> snapshot index (Arc<ClusterSnapshot>) ─┘                        │
//!                                 spec.clusters + gracefulEvictionTasks (merge patch)┤
//!                                 status: Scheduled, observedGeneration (merge patch)┤
//!                                 core/v1 Events on binding and template (deduped) ──┘
//! ```
//!
//! - [`decide`]: pure decisions: does a binding need scheduling, which clusters must it leave
//!   (NoExecute and application failover, replicas a reschedule moved), which eviction tasks
//!   are finished, what status to write;
//! - [`clusters`]: the cluster snapshot index and the reservation bookkeeping;
//! - [`engine`]: the controller on the runtime's shared watches, and the writes;
//! - [`metrics`]: Prometheus counters and the latency histogram.
//!
//! Policies are not watched here: a binding carries its placement (the detector copies it from
//! the matching PropagationPolicy), so a policy change reaches the scheduler as a binding spec
//! change (a new generation).
//!
//! With [`SchedulerOptions::leader`] set, the loop runs only while this process holds the
//! Lease; on loss it stops (watchers and workers) and competes again.

pub mod clusters;
pub mod decide;
pub mod engine;
pub mod metrics;

use std::sync::Arc;
use std::time::Duration;

use flotilla_controller_runtime::Manager;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Field manager of every write of the scheduler.
pub const FIELD_MANAGER: &str = "flotilla-scheduler";
/// `producer` of the graceful eviction tasks the scheduler adds.
pub const EVICTION_PRODUCER: &str = "flotilla-scheduler";
/// `reason` of graceful eviction tasks added for an untolerated NoExecute taint.
pub const EVICTION_REASON_TAINT: &str = "TaintUntolerated";
/// `reason` of graceful eviction tasks added when a reschedule (`rescheduleTriggeredAt`)
/// moves every replica off a cluster.
pub const EVICTION_REASON_RESCHEDULED: &str = "Rescheduled";
/// `reason` of graceful eviction tasks added by application failover (Karmada's).
pub const EVICTION_REASON_APPLICATION_FAILURE: &str = "ApplicationFailure";
/// `producer` of application failover's tasks on ResourceBindings (Karmada's controller name).
pub const PRODUCER_RB_APPLICATION_FAILOVER: &str =
    "resource-binding-application-failover-controller";
/// `producer` of application failover's tasks on ClusterResourceBindings.
pub const PRODUCER_CRB_APPLICATION_FAILOVER: &str =
    "cluster-resource-binding-application-failover-controller";
/// Event reason: scheduled.
pub const EVENT_SCHEDULE_SUCCEED: &str = "ScheduleBindingSucceed";
/// Event reason: scheduling failed.
pub const EVENT_SCHEDULE_FAILED: &str = "ScheduleBindingFailed";
/// Event reason: replicas moved away from a cluster (failover, or a reschedule).
pub const EVENT_EVICT: &str = "EvictWorkloadFromCluster";
/// Event reason (Karmada's): a cluster's eviction finished (its graceful eviction task went,
/// or it was left at once).
pub const EVENT_EVICT_SUCCEED: &str = "EvictWorkloadFromClusterSucceed";

/// Errors of the scheduling loop (each is logged and retried by the loop itself; they are
/// public so callers of the building blocks can match on them).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing a binding's spec (clusters, eviction tasks).
    #[error("writing the schedule result of {binding}")]
    WriteSpec {
        binding: String,
        source: kube::Error,
    },
    /// Writing a binding's status.
    #[error("writing the status of {binding}")]
    WriteStatus {
        binding: String,
        source: kube::Error,
    },
}

/// How the scheduler runs.
#[derive(Debug, Clone)]
pub struct SchedulerOptions {
    /// Only bindings whose `spec.schedulerName` is empty or this are scheduled.
    pub scheduler_name: String,
    /// Toleration seconds of the default `not-ready` / `unreachable` NoExecute tolerations
    /// added to placements that have none for those keys (Karmada's 300).
    pub default_toleration_seconds: u64,
    /// How long an old placement is kept at most while the new one comes up.
    pub eviction_grace_period: Duration,
    /// Leader election; `None` schedules unconditionally.
    pub leader: Option<flotilla_leader::LeaderOptions>,
    /// Concurrent workers (each handles one binding at a time).
    pub workers: usize,
    /// First retry delay after a failure; doubles per consecutive failure.
    pub backoff_base: Duration,
    /// Largest retry delay.
    pub backoff_max: Duration,
    /// Reservations of a cluster are dropped after this long without a new reservation
    /// (by then the member's reported usage includes them).
    pub reservation_ttl: Duration,
    /// Identical events within this window bump `count` instead of adding an event.
    pub event_dedupe_window: Duration,
    /// Write core/v1 Events (on by default; off only to measure their cost).
    pub events: bool,
}

impl Default for SchedulerOptions {
    fn default() -> Self {
        Self {
            scheduler_name: "default-scheduler".into(),
            default_toleration_seconds: 300,
            eviction_grace_period: Duration::from_secs(600),
            leader: None,
            workers: 32,
            backoff_base: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
            reservation_ttl: Duration::from_secs(30),
            event_dedupe_window: Duration::from_secs(600),
            events: true,
        }
    }
}

/// A running scheduler; [`stop`](RunningScheduler::stop) ends it.
pub struct RunningScheduler {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    manager: Arc<Manager>,
    metrics: Arc<metrics::Metrics>,
}

/// Starts the scheduler on a tokio runtime, with a controller manager of its own (the
/// scheduler is a process of its own): it runs until [`RunningScheduler::stop`].
pub fn spawn(host: kube::Client, opts: SchedulerOptions) -> RunningScheduler {
    let (stop, stop_rx) = watch::channel(false);
    let metrics = Arc::new(metrics::Metrics::new());
    let manager = Manager::new(host);
    let task = tokio::spawn(engine::run(manager.clone(), opts, metrics.clone(), stop_rx));
    RunningScheduler {
        stop,
        task,
        manager,
        metrics,
    }
}

impl RunningScheduler {
    /// Stops scheduling, waits for in-flight writes, releases the Lease, then stops the
    /// watches.
    pub async fn stop(self) {
        self.stop.send_replace(true);
        let _ = self.task.await;
        self.manager.stop().await;
    }

    /// Prometheus text exposition: schedule attempts by result, scheduling latency,
    /// leadership, and the controller's reconciles and queue depth
    /// (`flotilla_controller_*{controller="scheduler"}`).
    pub fn metrics_text(&self) -> String {
        flotilla_controller_runtime::join_expositions([
            self.metrics.render(),
            self.manager.metrics_text(),
        ])
    }

    /// Whether this instance is currently scheduling (always true without leader election
    /// once started).
    pub fn is_active(&self) -> bool {
        self.metrics.is_active()
    }
}
