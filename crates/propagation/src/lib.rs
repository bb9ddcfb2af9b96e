//! The propagation controllers of `flotilla controller-manager`: from a template on the host
//! to running objects in the member clusters, and their status back.
//!
//! ```text
//!  template (any kind) ──detector──▶ ResourceBinding ──scheduler──▶ spec.clusters
//!     ▲  claim labels      │ policy match, replicas,                   │
//!     │                    │ requirements, placement                   ▼
//!     │ .status      binding controller ──▶ Work per cluster (karmada-es-<cluster>)
//!     └──────────────  aggregatedStatus ◀──┐        │
//!                      FullyApplied        │        ▼ execution controller (per-cluster queues)
//!                                          │   server-side apply to the member ──▶ member
//!                                          └── Work status ◀── one watch per (member, kind)
//!  Namespace (host) ──namespace sync──▶ Namespace Work per cluster
//! ```
//!
//! - [`policy`] (pure): which PropagationPolicy or ClusterPropagationPolicy claims a template;
//! - [`unimplemented`] (pure): the policy fields Flotilla accepts but does not act on yet;
//! - [`detector`]: watches every propagatable kind (found by [`registry`] at run time) and the
//!   policies, claims templates and writes their bindings, and warns on the policies about
//!   fields it does not implement;
//! - [`render`] (pure): a binding's Work for one cluster, with the override policies that
//!   match the template applied (`flotilla_overrides`; which policies match and which
//!   bindings a policy or Cluster change concerns: `overrides`);
//! - [`binding`]: Works from bindings, the bindings' status from the Works, the templates'
//!   status from the bindings ([`aggregate`], pure, and `flotilla_interpreter`);
//! - [`dependencies`]: with `propagateDeps`, the ConfigMaps, Secrets, ServiceAccounts and
//!   PVCs a workload needs follow it (attached bindings, `requiredBy`, a dependency graph);
//! - [`execution`]: applies Works to members through [`members`]' clients and reports what
//!   the members have;
//! - [`namespaces`]: every host namespace in every member;
//! - [`metrics`]: what `/metrics` shows of all of them.

pub mod aggregate;
pub mod binding;
pub mod binding_key;
pub mod dependencies;
pub mod detector;
pub mod execution;
pub mod members;
pub mod metrics;
pub mod namespaces;
pub(crate) mod overrides;
pub mod policy;
pub mod registry;
pub mod render;
mod runner;
pub mod templates;
pub mod unimplemented;

pub use flotilla_runtime::error_chain;
use std::sync::Arc;
use std::time::Duration;

use flotilla_api::overrides::{ClusterOverridePolicy, OverridePolicy};
use flotilla_api::{Cluster, ClusterResourceBinding, ResourceBinding, Work};
use flotilla_runtime::EventRecorder;
use flotilla_tasks::Tasks;
use kube::api::Api;
use kube::runtime::reflector::Store;
use kube::runtime::watcher;
use tokio::sync::{Notify, mpsc};

pub use metrics::Metrics;

/// Field manager of the detector's writes (claims and bindings).
pub const DETECTOR_MANAGER: &str = "flotilla-detector";
/// Field manager of the binding controller's writes (Works, binding and template status).
pub const BINDING_MANAGER: &str = "flotilla-binding-controller";
/// Field manager of the execution controller's applies to members and Work status writes.
pub const EXECUTION_MANAGER: &str = "flotilla-execution-controller";
/// Field manager of the namespace sync's Works.
pub const NAMESPACE_MANAGER: &str = "flotilla-namespace-sync";

/// Errors of the propagation controllers, named for the action that failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the template is not a JSON object")]
    TemplateNotObject,
    #[error("interpreting a {kind}")]
    Interpret {
        kind: String,
        source: flotilla_interpreter::InterpretError,
    },
    #[error("applying the override policies for cluster {cluster}")]
    Override {
        cluster: String,
        source: flotilla_overrides::OverrideError,
    },
    #[error("the host does not serve {api_version} {kind}")]
    UnknownKind { api_version: String, kind: String },
    #[error("{action} {object}")]
    Host {
        action: &'static str,
        object: String,
        source: kube::Error,
    },
    #[error("encoding {what}")]
    Encode {
        what: &'static str,
        source: serde_json::Error,
    },
    #[error("cluster {cluster} does not exist")]
    NoCluster { cluster: String },
    #[error("connecting to cluster {cluster}")]
    Connect {
        cluster: String,
        source: flotilla_membership::MembershipError,
    },
    #[error("applying Work {work} to cluster {cluster}: {message}")]
    ApplyFailed {
        cluster: String,
        work: String,
        message: String,
    },
    #[error("cluster {cluster} did not answer in time")]
    MemberTimeout { cluster: String },
    #[error("{action} {object} in cluster {cluster}")]
    Member {
        action: &'static str,
        object: String,
        cluster: String,
        source: kube::Error,
    },
}

impl Error {
    /// A write that lost an optimistic-concurrency race (HTTP 409): retried on fresh data.
    pub fn is_conflict(&self) -> bool {
        matches!(self, Error::Host { source: kube::Error::Api(s), .. } if s.code == 409)
    }
}

/// A host call's error with what was being done.
pub(crate) fn host_err(
    action: &'static str,
    object: impl Into<String>,
) -> impl FnOnce(kube::Error) -> Error {
    let object = object.into();
    move |source| Error::Host {
        action,
        object,
        source,
    }
}

/// Whether a kube error is the API's 404.
pub(crate) fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// How the propagation controllers run. Every field has a default.
#[derive(Debug, Clone)]
pub struct PropagationOptions {
    /// Workers of the detector's queue.
    pub detector_workers: usize,
    /// Workers of the binding controller's queue.
    pub binding_workers: usize,
    /// Workers of each member cluster's execution queue.
    pub execution_workers_per_cluster: usize,
    /// Host discovery is refreshed this often (and whenever a CRD changes).
    pub discovery_period: Duration,
    /// First retry delay of a failed reconcile; doubles per failure.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_max: Duration,
    /// Deadline of one member request (apply, get, delete).
    pub member_timeout: Duration,
    /// Namespaces matching none of these are propagated to every member (besides the fixed
    /// exclusions `default`, `karmada-*` and `kube-*`... see [`namespaces`]).
    pub skipped_namespace_prefixes: Vec<String>,
    /// Write core/v1 Events on templates.
    pub events: bool,
}

impl Default for PropagationOptions {
    fn default() -> Self {
        Self {
            detector_workers: 4,
            binding_workers: 8,
            execution_workers_per_cluster: 4,
            discovery_period: Duration::from_secs(30),
            retry_base: Duration::from_millis(200),
            retry_max: Duration::from_secs(30),
            member_timeout: Duration::from_secs(10),
            skipped_namespace_prefixes: Vec::new(),
            events: true,
        }
    }
}

/// What every controller shares.
pub(crate) struct Context {
    pub host: kube::Client,
    pub opts: PropagationOptions,
    pub registry: Arc<registry::Registry>,
    pub metrics: Arc<Metrics>,
    pub events: EventRecorder,
}

/// The caches the controllers share (see [`spawn`]); cloning shares them.
#[derive(Clone)]
pub(crate) struct Shared {
    pub works: Store<Work>,
    pub bindings: Store<ResourceBinding>,
    pub cluster_bindings: Store<ClusterResourceBinding>,
    pub clusters: Store<Cluster>,
    /// The detector's template watches, read by the binding controller too.
    pub templates: templates::Templates,
    /// OverridePolicies and ClusterOverridePolicies.
    pub overrides: overrides::OverridePolicies,
    /// To the dependencies distributor: bindings and dependency objects that changed.
    pub dependency_signals: mpsc::UnboundedSender<dependencies::Signal>,
}

/// The running propagation controllers.
pub struct Propagation {
    tasks: Tasks,
    metrics: Arc<Metrics>,
}

/// Starts the detector, the binding, execution and namespace controllers against `host`.
pub fn spawn(host: kube::Client, opts: PropagationOptions) -> Propagation {
    let metrics = Arc::new(Metrics::new());
    let registry = registry::Registry::new();
    let tasks = Tasks::new();
    let events = if opts.events {
        let (recorder, task) = EventRecorder::start(
            host.clone(),
            "flotilla-controller-manager".into(),
            Duration::from_secs(600),
        );
        tasks.adopt("event-recorder", task);
        recorder
    } else {
        EventRecorder::disabled()
    };
    let ctx = Arc::new(Context {
        host: host.clone(),
        opts: opts.clone(),
        registry: registry.clone(),
        metrics: metrics.clone(),
        events,
    });
    tasks.spawn(
        "resource-discovery",
        registry.clone().run(host.clone(), opts.discovery_period),
    );
    // The caches the controllers share, each watched once: Works (the largest objects
    // Flotilla keeps, a copy of every manifest per cluster), bindings, Clusters and the
    // detector's templates. Each change goes to the controllers it concerns.
    let (binding_tx, binding_rx) = mpsc::unbounded_channel();
    let (exec_tx, exec_rx) = mpsc::unbounded_channel();
    let namespaces_dirty = Arc::new(Notify::new());
    let (works, task) = {
        let (binding_tx, exec_tx, dirty) = (
            binding_tx.clone(),
            exec_tx.clone(),
            namespaces_dirty.clone(),
        );
        runner::reflect(
            Api::<Work>::all(host.clone()),
            watcher::Config::default(),
            (),
            move |w: &Work, _| {
                if let Some(key) = binding_key::binding_of_work(w) {
                    let _ = binding_tx.send(key);
                }
                if let Some(signal) = execution::signal_of(w) {
                    let _ = exec_tx.send(signal);
                }
                if namespaces::is_namespace_work(w) {
                    dirty.notify_one();
                }
            },
        )
    };
    tasks.adopt("work-cache", task);
    let (dependency_tx, dependency_rx) = mpsc::unbounded_channel();
    let (bindings, task) = {
        let (tx, dependency_tx) = (binding_tx.clone(), dependency_tx.clone());
        runner::reflect(
            Api::<ResourceBinding>::all(host.clone()),
            watcher::Config::default(),
            (),
            move |b: &ResourceBinding, _| {
                let key = binding_key::BindingKey {
                    namespace: b.metadata.namespace.clone(),
                    name: b.metadata.name.clone().unwrap_or_default(),
                };
                let _ = dependency_tx.send(dependencies::Signal::Binding(key.clone()));
                let _ = tx.send(key);
            },
        )
    };
    tasks.adopt("binding-cache", task);
    let (cluster_bindings, task) = runner::reflect(
        Api::<ClusterResourceBinding>::all(host.clone()),
        watcher::Config::default(),
        (),
        move |b: &ClusterResourceBinding, _| {
            let _ = binding_tx.send(binding_key::BindingKey {
                namespace: None,
                name: b.metadata.name.clone().unwrap_or_default(),
            });
        },
    );
    tasks.adopt("cluster-binding-cache", task);
    // Override policies and Clusters changing re-render the Works they concern (see
    // [`overrides::ChangeTracker`]).
    let (override_tx, override_rx) = mpsc::unbounded_channel();
    let (override_policies, task) = {
        let tx = override_tx.clone();
        runner::reflect(
            Api::<OverridePolicy>::all(host.clone()),
            watcher::Config::default(),
            (),
            move |p: &OverridePolicy, _| {
                let _ = tx.send(overrides::OverrideChange::Policy {
                    namespace: p.metadata.namespace.clone(),
                    name: p.metadata.name.clone().unwrap_or_default(),
                });
            },
        )
    };
    tasks.adopt("override-policy-cache", task);
    let (cluster_override_policies, task) = {
        let tx = override_tx.clone();
        runner::reflect(
            Api::<ClusterOverridePolicy>::all(host.clone()),
            watcher::Config::default(),
            (),
            move |p: &ClusterOverridePolicy, _| {
                let _ = tx.send(overrides::OverrideChange::Policy {
                    namespace: None,
                    name: p.metadata.name.clone().unwrap_or_default(),
                });
            },
        )
    };
    tasks.adopt("cluster-override-policy-cache", task);
    let (clusters, task) = {
        let (exec_tx, dirty) = (exec_tx.clone(), namespaces_dirty.clone());
        let members = namespaces::Members::default();
        // Nothing here reads a member's discovery or capacity: not keeping them halves what a
        // Cluster costs.
        runner::reflect_trimmed(
            Api::<Cluster>::all(host),
            watcher::Config::default(),
            (),
            Cluster::trim_for_cache,
            move |c: &Cluster, deleted| {
                let name = c.metadata.name.clone().unwrap_or_default();
                let _ = override_tx.send(overrides::OverrideChange::Cluster(name.clone()));
                let _ = exec_tx.send(execution::Signal::Cluster(name));
                if members.changed(c, deleted) {
                    dirty.notify_one();
                }
            },
        )
    };
    tasks.adopt("cluster-cache", task);
    let shared = Shared {
        works,
        bindings,
        cluster_bindings,
        clusters,
        templates: Arc::new(dashmap::DashMap::new()),
        dependency_signals: dependency_tx,
        overrides: overrides::OverridePolicies {
            namespaced: override_policies,
            cluster: cluster_override_policies,
        },
    };
    tasks.spawn("detector", detector::run(ctx.clone(), shared.clone()));
    tasks.spawn(
        "binding-controller",
        binding::run(ctx.clone(), shared.clone(), binding_rx, override_rx),
    );
    tasks.spawn(
        "dependencies-distributor",
        dependencies::run(ctx.clone(), shared.clone(), dependency_rx),
    );
    tasks.spawn(
        "execution-controller",
        execution::run(ctx.clone(), shared.clone(), exec_tx, exec_rx),
    );
    tasks.spawn(
        "namespace-sync",
        namespaces::run(ctx, shared, namespaces_dirty),
    );
    Propagation { tasks, metrics }
}

impl Propagation {
    /// Stops every controller and the member watches they own.
    pub async fn stop(self) {
        self.tasks.shutdown(flotilla_tasks::SHUTDOWN_GRACE).await;
    }

    /// The controllers' metrics in the Prometheus text format.
    pub fn metrics_text(&self) -> String {
        self.metrics.render()
    }
}
