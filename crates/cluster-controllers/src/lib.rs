//! The cluster controllers of `flotilla controller-manager`.
//!
//! ```text
//!                host API (Cluster via the aggregated server, Namespaces, Works)
//!        watch Clusters │                              ▲ finalizer, namespace,
//!          ┌────────────┴───────────┐                  │ taints, status
//!          ▼                        ▼                  │
//!  cluster controller       status controller ─────────┘
//!  (kube-runtime            queue of Push Clusters ─▶ member: /readyz, /version, discovery,
//!   Controller)             bounded pool of syncs      lists of nodes and pods (summaries)
//! ```
//!
//! - [`cluster`]: per Cluster the finalizer `karmada.io/cluster-controller`, the execution
//!   namespace `karmada-es-<cluster>`, cleanup on deletion, and the not-ready / unreachable
//!   taints that follow the Ready condition.
//! - [`status`]: a queue of Push Clusters synced every period (jittered, backed off while a
//!   member stays down) by a bounded pool: health, version, API enablements ([`conditions`]:
//!   CompleteAPIEnablements) and the node/pod summaries ([`resources`], [`modeling`] for
//!   allocatableModelings).
//! - [`monitor`]: in the cluster controller, Ready=Unknown for clusters whose heartbeat is
//!   older than the grace period: the Lease an agent renews ([`lease`]) for Pull clusters,
//!   the status controller's progress for Push clusters.
//!
//! [`spawn`] starts both as tokio tasks; [`ControllerManager::stop`] ends them.

pub mod cluster;
pub mod conditions;
pub mod diff;
pub mod lease;
pub mod metrics;
pub mod modeling;
pub mod monitor;
pub mod readiness;
pub mod resources;
pub mod status;
pub mod taints;
pub mod throttle;

pub(crate) use flotilla_controller_runtime::error_chain;
use std::sync::Arc;

use flotilla_tasks::Tasks;
use std::time::Duration;

pub use metrics::Metrics;
pub use resources::CapacityRounding;

/// Field manager of the status controller's writes.
pub const STATUS_FIELD_MANAGER: &str = "flotilla-cluster-status";

/// Field manager of the cluster controller's writes.
pub const CLUSTER_FIELD_MANAGER: &str = "flotilla-cluster-controller";

/// Errors of the cluster controllers, named for the action that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the Cluster object has no name")]
    NoName,
    #[error("adding the finalizer to cluster {cluster}")]
    AddFinalizer {
        cluster: String,
        source: kube::Error,
    },
    #[error("removing the finalizer of cluster {cluster}")]
    RemoveFinalizer {
        cluster: String,
        source: kube::Error,
    },
    #[error("creating the execution namespace {namespace}")]
    CreateNamespace {
        namespace: String,
        source: kube::Error,
    },
    #[error("the execution namespace {namespace} is still being deleted")]
    NamespaceTerminating { namespace: String },
    #[error("reading the execution namespace {namespace}")]
    ReadNamespace {
        namespace: String,
        source: kube::Error,
    },
    #[error("deleting the execution namespace {namespace}")]
    DeleteNamespace {
        namespace: String,
        source: kube::Error,
    },
    #[error("listing the Works in {namespace}")]
    ListWorks {
        namespace: String,
        source: kube::Error,
    },
    #[error("deleting Work {namespace}/{name}")]
    DeleteWork {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("updating the taints of cluster {cluster}")]
    UpdateTaints {
        cluster: String,
        source: kube::Error,
    },
    #[error("writing the status of cluster {cluster}")]
    WriteStatus {
        cluster: String,
        source: kube::Error,
    },
    #[error("encoding the status of cluster {cluster}")]
    EncodeStatus {
        cluster: String,
        source: serde_json::Error,
    },
    #[error("reading the credentials of cluster {cluster}")]
    Credentials {
        cluster: String,
        source: flotilla_membership::MembershipError,
    },
    #[error("connecting to cluster {cluster}")]
    Connect {
        cluster: String,
        source: flotilla_membership::MembershipError,
    },
    #[error("renewing the heartbeat Lease of cluster {cluster}")]
    RenewLease {
        cluster: String,
        source: kube::Error,
    },
    #[error("deleting the heartbeat Lease of cluster {cluster}")]
    DeleteLease {
        cluster: String,
        source: kube::Error,
    },
    #[error("{action} of cluster {cluster} timed out after {timeout:?}")]
    Timeout {
        action: &'static str,
        cluster: String,
        timeout: Duration,
    },
}

impl Error {
    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::NoName => "invalid",
            Error::AddFinalizer { .. } | Error::RemoveFinalizer { .. } => "finalizer",
            Error::CreateNamespace { .. }
            | Error::NamespaceTerminating { .. }
            | Error::ReadNamespace { .. }
            | Error::DeleteNamespace { .. } => "namespace",
            Error::ListWorks { .. } | Error::DeleteWork { .. } => "works",
            Error::UpdateTaints { .. } => "taints",
            Error::WriteStatus { .. } | Error::EncodeStatus { .. } => "status_write",
            Error::Credentials { .. } | Error::Connect { .. } => "member_client",
            Error::RenewLease { .. } | Error::DeleteLease { .. } => "lease",
            Error::Timeout { .. } => "timeout",
        }
    }
}

impl Error {
    /// A write lost an optimistic-concurrency race (HTTP 409): retried at once on fresh data,
    /// not worth a warning.
    pub fn is_conflict(&self) -> bool {
        let source = match self {
            Error::AddFinalizer { source, .. }
            | Error::RemoveFinalizer { source, .. }
            | Error::UpdateTaints { source, .. }
            | Error::WriteStatus { source, .. } => source,
            _ => return false,
        };
        matches!(source, kube::Error::Api(s) if s.code == 409)
    }
}

/// How the controllers run. Every field has a default (Karmada's where it has one).
#[derive(Debug, Clone)]
pub struct ControllerManagerOptions {
    /// How often each cluster's status is refreshed.
    pub status_period: Duration,
    /// Client-side limit of the controller-manager's writes to the host, in requests per
    /// second (Karmada: `--kube-api-qps`); 0 for none. Applied by whoever builds the host
    /// client ([`throttle::WriteThrottleLayer`]), shared by every controller using it.
    pub host_qps: f64,
    /// Writes the host client may send at once above `host_qps` (Karmada:
    /// `--kube-api-burst`).
    pub host_burst: u32,
    /// How many clusters the status controller syncs at once.
    pub probe_concurrency: usize,
    /// How many clusters the cluster controller reconciles at once (Karmada:
    /// `--concurrent-cluster-syncs`). Unbounded, a controller-manager starting with 5,000
    /// Clusters sent 5,000 namespace reads at once, and its HTTP/1.1 client to the host
    /// opened a connection for each and kept them all idle for good (4,600 connections,
    /// about 450 MB in `local-up`, which holds both ends).
    pub cluster_syncs: u16,
    /// Whether the status controller keeps each member's connection open between syncs.
    /// Kept, a sync costs no handshake; not kept, each sync opens a connection (resuming the
    /// last TLS session) and closes it, and a member costs about 5 KB less in this process
    /// (the fleet bench at 5,000 members: 117 instead of 140 MiB, and 24 instead of 12 % of
    /// a core).
    pub keep_member_connections: bool,
    /// A cluster reported not Ready whose probes keep failing is synced after a delay that
    /// doubles from `status_period` up to this.
    pub unreachable_backoff_max: Duration,
    /// How long probes must fail before a Ready cluster turns Ready=False.
    pub failure_threshold: Duration,
    /// How long probes must succeed before a cluster that is not Ready turns Ready again
    /// (Karmada: `--cluster-success-threshold`, 30 s).
    pub success_threshold: Duration,
    /// Deadline of each probe (health, version, credential read, connection).
    pub probe_timeout: Duration,
    /// apiEnablements (and kubernetesVersion) are refreshed this often, and whenever a member
    /// becomes reachable again (Karmada: at every status sync, 10 s).
    pub api_enablements_period: Duration,
    /// Also add NoExecute taints (failover) to clusters that are not ready.
    pub no_execute_taints: bool,
    /// How often a cluster being deleted is checked for its Works and namespace to be gone.
    pub deletion_poll: Duration,
    /// How often the cluster controller re-checks every cluster (namespace still there...).
    pub resync_period: Duration,
    /// Delay before retrying a failed reconcile.
    pub retry_delay: Duration,
    /// Rounding of free node capacity before grouping (`status.nodeCapacities`).
    pub capacity_rounding: CapacityRounding,
    /// `leaseDurationSeconds` of a cluster heartbeat Lease (Karmada:
    /// `--cluster-lease-duration`, 40 s). Only Pull-mode agents keep such Leases; the
    /// controllers here keep none and accept the flag for compatibility.
    pub lease_duration: Duration,
    /// An agent renews its Lease every `lease_duration × lease_renew_fraction` (Karmada:
    /// `--cluster-lease-renew-interval-fraction`, 0.25).
    pub lease_renew_fraction: f64,
    /// How often the health monitor checks every cluster's heartbeat (Karmada:
    /// `--cluster-monitor-period`, 5 s).
    pub monitor_period: Duration,
    /// A cluster whose heartbeat (Lease renewal, Ready change, or for a Push cluster the
    /// status controller's progress) is older than this turns
    /// Ready=Unknown (Karmada: `--cluster-monitor-grace-period`, 40 s).
    pub monitor_grace_period: Duration,
    /// The grace given instead to a cluster that never had a Ready condition, and to every
    /// cluster on the monitor's first sight of it (Karmada: `--cluster-startup-grace-period`,
    /// 60 s).
    pub startup_grace_period: Duration,
}

impl ControllerManagerOptions {
    /// How often the heartbeat Lease is renewed: `lease_duration × lease_renew_fraction`,
    /// the fraction clamped to (0, 1] and the result to at least 10 ms.
    pub fn lease_renew_interval(&self) -> Duration {
        let fraction = if self.lease_renew_fraction.is_finite() && self.lease_renew_fraction > 0.0 {
            self.lease_renew_fraction.min(1.0)
        } else {
            1.0
        };
        self.lease_duration
            .mul_f64(fraction)
            .max(Duration::from_millis(10))
    }
}

impl Default for ControllerManagerOptions {
    fn default() -> Self {
        Self {
            status_period: Duration::from_secs(10),
            host_qps: 200.0,
            host_burst: 400,
            probe_concurrency: 32,
            cluster_syncs: 5,
            keep_member_connections: true,
            unreachable_backoff_max: Duration::from_secs(60),
            failure_threshold: Duration::from_secs(30),
            success_threshold: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(5),
            api_enablements_period: Duration::from_secs(10),
            no_execute_taints: true,
            deletion_poll: Duration::from_secs(1),
            resync_period: Duration::from_secs(300),
            retry_delay: Duration::from_secs(2),
            capacity_rounding: CapacityRounding::default(),
            lease_duration: Duration::from_secs(40),
            lease_renew_fraction: 0.25,
            monitor_period: Duration::from_secs(5),
            monitor_grace_period: Duration::from_secs(40),
            startup_grace_period: Duration::from_secs(60),
        }
    }
}

pub(crate) use flotilla_tasks::AbortOnDrop;

/// The running controllers.
pub struct ControllerManager {
    tasks: Tasks,
    metrics: Arc<Metrics>,
    /// The controller runtime's manager when these controllers have one of their own.
    own_manager: Option<Arc<flotilla_controller_runtime::Manager>>,
}

/// Starts the cluster controller and the cluster status controller against `host`, with a
/// controller manager of their own.
pub fn spawn(host: kube::Client, opts: ControllerManagerOptions) -> ControllerManager {
    let manager = flotilla_controller_runtime::Manager::new(host);
    let mut running = spawn_on(&manager, opts);
    running.own_manager = Some(manager);
    running
}

/// Starts the cluster controllers among `manager`'s tasks, on its shared watches.
pub fn spawn_on(
    manager: &Arc<flotilla_controller_runtime::Manager>,
    opts: ControllerManagerOptions,
) -> ControllerManager {
    let tasks = manager.component_tasks();
    let metrics = Arc::new(Metrics::new());
    let opts = Arc::new(opts);
    let liveness = Arc::new(status::schedule::Liveness::default());
    tasks.spawn(
        "cluster-controller",
        cluster::run(
            manager.clone(),
            opts.clone(),
            metrics.clone(),
            liveness.clone(),
        ),
    );
    tasks.spawn(
        "cluster-status-controller",
        status::run(manager.client().clone(), opts, metrics.clone(), liveness),
    );
    ControllerManager {
        tasks,
        metrics,
        own_manager: None,
    }
}

/// A failed reconcile is retried by the runtime after the options' `retry_delay`; conflicts
/// are answered by the reconcile itself (`cluster.rs`).
impl flotilla_controller_runtime::ReconcileError for Error {}

impl ControllerManager {
    /// Stops every controller (and the syncs in flight they own), then the watches when the
    /// manager is their own.
    pub async fn stop(self) {
        self.tasks.shutdown(flotilla_tasks::SHUTDOWN_GRACE).await;
        if let Some(manager) = self.own_manager {
            manager.stop().await;
        }
    }

    /// The controllers' metrics in the Prometheus text format: their own, and with a
    /// manager of their own the runtime's (`flotilla_controller_*`; a shared manager's
    /// owner exposes those once for all its controllers).
    pub fn metrics_text(&self) -> String {
        match &self.own_manager {
            Some(manager) => flotilla_controller_runtime::join_expositions([
                self.metrics.render(),
                manager.metrics_text(),
            ]),
            None => self.metrics.render(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let d = ControllerManagerOptions::default();
        assert_eq!(d.status_period, Duration::from_secs(10));
        assert_eq!(d.failure_threshold, Duration::from_secs(30));
        assert_eq!(d.success_threshold, Duration::from_secs(30));
        assert!(d.no_execute_taints);
        assert_eq!(d.lease_duration, Duration::from_secs(40));
        assert_eq!(d.lease_renew_interval(), Duration::from_secs(10));
        assert_eq!(d.monitor_period, Duration::from_secs(5));
        assert_eq!(d.monitor_grace_period, Duration::from_secs(40));
        assert_eq!(d.startup_grace_period, Duration::from_secs(60));
    }

    #[test]
    fn renew_interval_clamps_odd_fractions() {
        let mut o = ControllerManagerOptions {
            lease_duration: Duration::from_secs(8),
            lease_renew_fraction: 0.5,
            ..Default::default()
        };
        assert_eq!(o.lease_renew_interval(), Duration::from_secs(4));
        o.lease_renew_fraction = 0.0;
        assert_eq!(o.lease_renew_interval(), Duration::from_secs(8));
        o.lease_renew_fraction = f64::NAN;
        assert_eq!(o.lease_renew_interval(), Duration::from_secs(8));
        o.lease_renew_fraction = 3.0;
        assert_eq!(o.lease_renew_interval(), Duration::from_secs(8));
        o.lease_duration = Duration::ZERO;
        assert_eq!(o.lease_renew_interval(), Duration::from_millis(10));
    }

    fn api_error(code: u16) -> kube::Error {
        let status: kube::core::Status = serde_json::from_value(
            serde_json::json!({"code": code, "message": "m", "reason": "r"}),
        )
        .unwrap();
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn conflicts_are_told_apart() {
        let conflict = Error::UpdateTaints {
            cluster: "m1".into(),
            source: api_error(409),
        };
        assert!(conflict.is_conflict());
        assert_eq!(conflict.kind(), "taints");
        let other = Error::UpdateTaints {
            cluster: "m1".into(),
            source: api_error(500),
        };
        assert!(!other.is_conflict());
        assert!(!Error::NoName.is_conflict());
        let chained = error_chain(&other);
        assert!(
            chained.starts_with("updating the taints of cluster m1: "),
            "{chained}"
        );
    }
}
