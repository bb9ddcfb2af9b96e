//! The garbage collector of `flotilla controller-manager`: Kubernetes' ownerReference
//! semantics on the host, as kube-controller-manager's garbage collector provides them.
//!
//! ```text
//!  discovery (every 30 s and on CRD changes) ──▶ one metadata watch per resource that
//!                                                 supports list + watch + delete
//!                                                        │ events
//!                                                        ▼
//!                                 graph (uid → owners, dependents)  [`graph`, pure]
//!                                                        │ work: AttemptToDelete(uid) / Orphan(uid)
//!                                                        ▼
//!                         queue (dedup, retry with backoff) (flotilla_controller_runtime::WorkQueue) ──▶ workers
//!                              live GETs decide ([`decide`], pure) ──▶ DELETE / PATCH
//! ```
//!
//! - Background: a dependent whose owners are all gone (verified by live reads, uid and
//!   not only name) is deleted; one with a remaining owner only loses the dangling
//!   references.
//! - Foreground: an owner deleting with the `foregroundDeletion` finalizer gets its blocking
//!   dependents deleted (in the foreground when they own things themselves), and loses the
//!   finalizer once no dependent with `blockOwnerDeletion: true` is left.
//! - Orphan: an owner deleting with the `orphan` finalizer has its references removed from
//!   every dependent, then loses the finalizer.
//!
//! Writes are JSON merge patches carrying `metadata.resourceVersion` (a precondition), retried
//! on conflicts on fresh reads, so concurrent writers lose nothing.
//!
//! [`spawn`] starts it; [`GarbageCollector::stop`] ends it.

pub mod collector;
pub mod decide;
pub mod graph;
pub mod metrics;

pub(crate) use flotilla_controller_runtime::error_chain;
use std::sync::Arc;
use std::time::Duration;

pub use decide::{FINALIZER_FOREGROUND, FINALIZER_ORPHAN};
pub use metrics::Metrics;

/// Errors of the garbage collector, named for the action that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("discovering the host's resources")]
    Discover(#[source] kube::Error),
    #[error("reading {resource} {name}")]
    Get {
        resource: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("deleting {resource} {name}")]
    Delete {
        resource: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("patching the metadata of {resource} {name}")]
    Patch {
        resource: String,
        name: String,
        #[source]
        source: kube::Error,
    },
    #[error("{resource} {name} kept changing: gave up after {attempts} conflicting writes")]
    Conflicts {
        resource: String,
        name: String,
        attempts: u32,
    },
    #[error("the owner kind {kind} of {api_version} is not served (yet)")]
    UnknownOwnerKind { api_version: String, kind: String },
}

impl Error {
    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Discover(_) => "discovery",
            Error::Get { .. } => "get",
            Error::Delete { .. } => "delete",
            Error::Patch { .. } => "patch",
            Error::Conflicts { .. } => "conflicts",
            Error::UnknownOwnerKind { .. } => "unknown_owner_kind",
        }
    }
}

/// How the collector runs. Every field has a default.
#[derive(Debug, Clone)]
pub struct GcOptions {
    /// Workers processing items concurrently (kube-controller-manager: 20).
    pub workers: usize,
    /// How often the served resources are discovered again (besides on CRD changes).
    pub rediscovery_period: Duration,
    /// After this long, work starts even if some initial lists have not completed (a
    /// resource whose list keeps failing must not stop collection of all others).
    pub sync_timeout: Duration,
    /// First retry delay of a failed item; doubles per failure.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_max: Duration,
    /// Attempts of one metadata patch lost to concurrent writers before the item is retried
    /// later.
    pub conflict_attempts: u32,
    /// `(group, plural)` of resources never watched. Events: many, short-lived, and never
    /// owners (kube-controller-manager ignores them too).
    pub ignored_resources: Vec<(String, String)>,
}

impl Default for GcOptions {
    fn default() -> Self {
        Self {
            workers: 8,
            rediscovery_period: Duration::from_secs(30),
            sync_timeout: Duration::from_secs(60),
            retry_base: Duration::from_millis(50),
            retry_max: Duration::from_secs(60),
            conflict_attempts: 5,
            ignored_resources: vec![
                (String::new(), "events".into()),
                ("events.k8s.io".into(), "events".into()),
            ],
        }
    }
}

/// The running garbage collector.
pub struct GarbageCollector {
    shared: Arc<collector::Shared>,
    tasks: flotilla_tasks::Tasks,
    /// The manager, when the collector has it to itself ([`spawn`]).
    own_manager: Option<Arc<flotilla_controller_runtime::Manager>>,
}

/// Starts the garbage collector against `host`, on a manager of its own.
pub fn spawn(host: kube::Client, opts: GcOptions) -> GarbageCollector {
    let manager = flotilla_controller_runtime::Manager::new(host);
    let mut gc = spawn_on(&manager, opts);
    gc.own_manager = Some(manager);
    gc
}

/// Starts the garbage collector on `manager`.
pub fn spawn_on(
    manager: &Arc<flotilla_controller_runtime::Manager>,
    opts: GcOptions,
) -> GarbageCollector {
    let (shared, tasks) = collector::start(manager, opts);
    GarbageCollector {
        shared,
        tasks,
        own_manager: None,
    }
}

impl flotilla_controller_runtime::ReconcileError for Error {}

impl GarbageCollector {
    /// Stops discovery, the watches and the workers.
    pub async fn stop(self) {
        self.shared.queue.shut_down();
        self.tasks.shutdown(flotilla_tasks::SHUTDOWN_GRACE).await;
        if let Some(manager) = self.own_manager {
            manager.stop().await;
        }
    }

    /// The collector's metrics in the Prometheus text format (with the runtime's
    /// per-controller ones when the manager is its alone; otherwise its owner shows them).
    pub fn metrics_text(&self) -> String {
        let own = self.shared.metrics.render();
        match &self.own_manager {
            Some(manager) => {
                flotilla_controller_runtime::join_expositions([own, manager.metrics_text()])
            }
            None => own,
        }
    }

    /// Resolves once the first discovery's resources have all been listed (or the sync
    /// timeout passed): from then on the graph is complete enough to act on.
    pub async fn synced(&self) {
        self.shared.synced().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_error_labels() {
        let o = GcOptions::default();
        assert_eq!(o.rediscovery_period, Duration::from_secs(30));
        assert!(
            o.ignored_resources
                .contains(&(String::new(), "events".into()))
        );
        let e = Error::UnknownOwnerKind {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
        };
        assert_eq!(e.kind(), "unknown_owner_kind");
        assert_eq!(
            error_chain(&e),
            "the owner kind Widget of example.com/v1 is not served (yet)"
        );
    }
}
