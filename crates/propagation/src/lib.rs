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
pub mod skipped;
pub mod templates;
pub mod unimplemented;

use flotilla_controller_runtime::error_chain;
use std::sync::Arc;
use std::time::Duration;

use flotilla_controller_runtime::{
    ControllerOptions, EventRecorder, Manager, ReconcileError, ReflectorSpec, WorkQueue,
};
use flotilla_karmada_api::overrides::{ClusterOverridePolicy, OverridePolicy};
use flotilla_karmada_api::{Cluster, ClusterResourceBinding, ResourceBinding, Work};
use flotilla_tasks::Tasks;
use kube::runtime::reflector::Store;
use tokio::sync::mpsc;

use crate::binding_key::BindingKey;

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
    #[error("a pass of the namespace sync left work undone (see its warnings); trying again")]
    NamespaceSync,
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
        matches!(self, Error::Host { source, .. } if is_conflict(source))
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

/// Whether a kube error is the API's 409 (the object changed meanwhile).
pub(crate) fn is_conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

/// A merge-patch map that removes each of `keys` (labels or annotations).
pub(crate) fn removing(keys: &[&str]) -> serde_json::Map<String, serde_json::Value> {
    keys.iter()
        .map(|k| (k.to_string(), serde_json::Value::Null))
        .collect()
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
    /// Namespaces that hold no templates and are not created in members (Karmada's reserved
    /// ones and `--skipped-propagating-namespaces`; see [`skipped`]).
    pub skipped_namespaces: skipped::SkippedNamespaces,
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
            skipped_namespaces: skipped::SkippedNamespaces::default(),
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
    /// The manager the controllers run on (their shared reflectors, their metrics).
    pub manager: Arc<Manager>,
}

impl Context {
    /// How a controller with `workers` workers runs.
    pub(crate) fn controller_options(&self, workers: usize) -> ControllerOptions {
        ControllerOptions {
            workers,
            retry_base: self.opts.retry_base,
            retry_max: self.opts.retry_max,
            ..ControllerOptions::default()
        }
    }
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
    /// The dependencies distributor's queue: bindings and dependency objects that changed.
    pub dependency_signals: Arc<WorkQueue<dependencies::Signal>>,
}

impl ReconcileError for Error {
    fn is_conflict(&self) -> bool {
        Error::is_conflict(self)
    }
}

/// The running propagation controllers.
pub struct Propagation {
    tasks: Tasks,
    metrics: Arc<Metrics>,
    /// The manager, when these controllers have it to themselves ([`spawn`]).
    own_manager: Option<Arc<Manager>>,
}

/// Starts the detector, the binding, execution and namespace controllers against `host`, on
/// a manager of their own.
pub fn spawn(host: kube::Client, opts: PropagationOptions) -> Propagation {
    let manager = Manager::new(host);
    let mut propagation = spawn_on(&manager, opts);
    propagation.own_manager = Some(manager);
    propagation
}

/// Starts the propagation controllers on `manager`, sharing its reflectors with the other
/// controllers of the process.
pub fn spawn_on(manager: &Arc<Manager>, opts: PropagationOptions) -> Propagation {
    let host = manager.client().clone();
    let metrics = Arc::new(Metrics::new());
    let registry = registry::Registry::new();
    let tasks = manager.component_tasks();
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
        manager: manager.clone(),
    });
    tasks.spawn(
        "resource-discovery",
        registry.clone().run(host, opts.discovery_period),
    );
    // The caches the controllers share, each watched once in the process: Works (the
    // largest objects Flotilla keeps, a copy of every manifest per cluster), bindings,
    // override policies and Clusters. Each controller says which changes concern it.
    let works = manager.reflector::<Work>();
    let bindings = manager.reflector::<ResourceBinding>();
    let cluster_bindings = manager.reflector::<ClusterResourceBinding>();
    let override_policies = manager.reflector::<OverridePolicy>();
    let cluster_override_policies = manager.reflector::<ClusterOverridePolicy>();
    // Nothing here reads a member's discovery or capacity: not keeping them halves what a
    // Cluster costs.
    let clusters = manager.reflector_with::<Cluster>(Cluster::TRIMMED_CACHE, || {
        ReflectorSpec::default().trim(Cluster::trim_for_cache)
    });

    let binding = manager.controller::<BindingKey>(
        binding::CONTROLLER,
        &ctx.controller_options(opts.binding_workers),
    );
    binding.watches(&works, |w, _| binding_key::binding_of_work(w));
    binding.watches(&bindings, |b, _| Some(BindingKey::of(&b.metadata)));
    binding.watches(&cluster_bindings, |b, _| Some(BindingKey::of(&b.metadata)));
    let distributor = manager
        .controller::<dependencies::Signal>(dependencies::CONTROLLER, &ctx.controller_options(1));
    distributor.watches(&bindings, |b, _| {
        Some(dependencies::Signal::Binding(BindingKey::of(&b.metadata)))
    });
    let namespace_sync =
        manager.controller::<()>(namespaces::CONTROLLER, &ctx.controller_options(1));
    namespace_sync.watches(&works, |w, _| {
        namespaces::is_namespace_work(w).then_some(())
    });
    // ClusterOverridePolicies may select Namespaces.
    namespace_sync.watches(&cluster_override_policies, |_, _| Some(()));
    // Override policies and Clusters changing re-render the Works they concern (see
    // [`overrides::ChangeTracker`]); Clusters changing also concern the execution and
    // namespace controllers.
    let (override_tx, override_rx) = mpsc::unbounded_channel();
    {
        let tx = override_tx.clone();
        override_policies.subscribe(move |p: &OverridePolicy, _| {
            let _ = tx.send(overrides::OverrideChange::Policy {
                namespace: p.metadata.namespace.clone(),
                name: p.metadata.name.clone().unwrap_or_default(),
            });
        });
        let tx = override_tx.clone();
        cluster_override_policies.subscribe(move |p: &ClusterOverridePolicy, _| {
            let _ = tx.send(overrides::OverrideChange::Policy {
                namespace: None,
                name: p.metadata.name.clone().unwrap_or_default(),
            });
        });
    }
    let (exec_tx, exec_rx) = mpsc::unbounded_channel();
    {
        let tx = exec_tx.clone();
        works.subscribe(move |w: &Work, _| {
            if let Some(signal) = execution::signal_of(w) {
                let _ = tx.send(signal);
            }
        });
        let (exec_tx, namespaces_queue) = (exec_tx.clone(), namespace_sync.queue().clone());
        let members = namespaces::Members::default();
        clusters.subscribe(move |c: &Cluster, deleted| {
            let name = c.metadata.name.clone().unwrap_or_default();
            let _ = override_tx.send(overrides::OverrideChange::Cluster(name.clone()));
            let _ = exec_tx.send(execution::Signal::Cluster(name));
            if members.changed(c, deleted) {
                namespaces_queue.add(());
            }
        });
    }
    let shared = Shared {
        works: works.store().clone(),
        bindings: bindings.store().clone(),
        cluster_bindings: cluster_bindings.store().clone(),
        clusters: clusters.store().clone(),
        templates: Arc::new(templates::TemplateCache::new(
            ctx.opts.skipped_namespaces.clone(),
        )),
        dependency_signals: distributor.queue().clone(),
        overrides: overrides::OverridePolicies {
            namespaced: override_policies.store().clone(),
            cluster: cluster_override_policies.store().clone(),
        },
    };
    tasks.spawn("detector", detector::run(ctx.clone(), shared.clone()));
    tasks.spawn(
        "binding-controller",
        binding::run(ctx.clone(), shared.clone(), binding, override_rx),
    );
    tasks.spawn(
        "dependencies-distributor",
        dependencies::run(ctx.clone(), shared.clone(), distributor),
    );
    tasks.spawn(
        "execution-controller",
        execution::run(ctx.clone(), shared.clone(), exec_tx, exec_rx),
    );
    tasks.spawn(
        "namespace-sync",
        namespaces::run(ctx, shared, namespace_sync),
    );
    Propagation {
        tasks,
        metrics,
        own_manager: None,
    }
}

impl Propagation {
    /// Stops every controller and the member watches they own (and their manager's shared
    /// watches, when the manager is theirs alone).
    pub async fn stop(self) {
        self.tasks.shutdown(flotilla_tasks::SHUTDOWN_GRACE).await;
        if let Some(manager) = self.own_manager {
            manager.stop().await;
        }
    }

    /// The controllers' metrics in the Prometheus text format (with the runtime's
    /// per-controller ones when the manager is theirs alone; otherwise its owner shows them).
    pub fn metrics_text(&self) -> String {
        let own = self.metrics.render();
        match &self.own_manager {
            Some(manager) => {
                flotilla_controller_runtime::join_expositions([own, manager.metrics_text()])
            }
            None => own,
        }
    }
}
