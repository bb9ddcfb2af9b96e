//! The controller-manager and scheduler commands: each connects to the host with a
//! kubeconfig, optionally competes for a Lease, runs its component from the library crates,
//! and serves `/metrics`, `/healthz` and `/readyz` over plain HTTP on a local address.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use flotilla_leader::TermEnd;

/// Durations in flags: `10s`, `500ms`, `1m30s`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    humantime::parse_duration(text).map_err(|e| format!("invalid duration {text:?}: {e}"))
}

/// Flags of the cluster controllers (shared by `controller-manager` and `local-up`).
#[derive(Args, Debug, Clone)]
pub struct ClusterControllerFlags {
    /// How often each member cluster's status is refreshed.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub cluster_status_update_frequency: Duration,
    /// How many member clusters the status controller syncs at once.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent_cluster_status_syncs: u32,
    /// How many Clusters the cluster controller reconciles at once (execution namespace,
    /// finalizer, taints, deletion).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub concurrent_cluster_syncs: u16,
    /// Whether the status controller keeps each member's connection open between syncs;
    /// `false` opens one per sync (resuming the TLS session): less memory per member, more
    /// CPU.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub keep_member_connections: bool,
    /// A member reported not Ready whose probes keep failing is probed after a delay that
    /// doubles from the status period up to this.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub cluster_unreachable_backoff_max: Duration,
    /// How long probes of a member must fail before it is marked not Ready.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub cluster_failure_threshold: Duration,
    /// How long probes of a member must succeed before a not Ready cluster is Ready again.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub cluster_success_threshold: Duration,
    /// Deadline of one health probe of a member.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub cluster_probe_timeout: Duration,
    /// How often each member's API discovery (status.apiEnablements) is refreshed (Karmada
    /// refreshes it with every status sync, 10 s).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub cluster_api_enablements_period: Duration,
    /// Duration of a cluster heartbeat Lease (kept by Pull-mode agents; Push clusters have
    /// none). Accepted for compatibility with Karmada's flag.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub cluster_lease_duration: Duration,
    /// The heartbeat Lease is renewed every duration × this fraction.
    #[arg(long, default_value_t = 0.25)]
    pub cluster_lease_renew_interval_fraction: f64,
    /// How often cluster heartbeats are checked.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub cluster_monitor_period: Duration,
    /// How long a cluster may go without a heartbeat before Ready turns Unknown.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub cluster_monitor_grace_period: Duration,
    /// The grace for a cluster that never had a Ready condition, and for every cluster
    /// when the controller-manager starts (or becomes leader).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub cluster_startup_grace_period: Duration,
    /// Writes per second the controllers may send to the host (their client-side limit;
    /// reads and watches are not counted). 0 for no limit.
    #[arg(long, default_value_t = 200.0)]
    pub kube_api_qps: f64,
    /// Writes the controllers may send at once above --kube-api-qps.
    #[arg(long, default_value_t = 400)]
    pub kube_api_burst: u32,
    /// Threads of the controllers' own runtime (default: half the cores, 1 to 4).
    #[arg(long, default_value_t = default_controller_threads(),
          value_parser = clap::value_parser!(u16).range(1..))]
    pub controller_threads: u16,
    /// Niceness of the controllers' threads (0 to 19; 0 for the same priority as the rest):
    /// when the machine is busy, serving API requests comes first.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(i32).range(0..=19))]
    pub controller_nice: i32,
}

/// Half the cores, at least 1 and at most 4. The controllers' work is mostly waiting on
/// members and the host; with fewer threads than cores, request serving in the same process
/// (local-up) or on the same machine keeps cores to itself. One thread on two cores also
/// spends far less on waking idle threads: at 5,000 members it took the controller-manager
/// from 24-30% of a core to about 17% (with the other changes of that round).
fn default_controller_threads() -> u16 {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    u16::try_from((cores / 2).clamp(1, 4)).unwrap_or(1)
}

impl ClusterControllerFlags {
    pub fn options(&self) -> flotilla_cluster_controllers::ControllerManagerOptions {
        flotilla_cluster_controllers::ControllerManagerOptions {
            status_period: self.cluster_status_update_frequency,
            probe_concurrency: usize::try_from(self.concurrent_cluster_status_syncs)
                .unwrap_or(usize::MAX),
            cluster_syncs: self.concurrent_cluster_syncs,
            keep_member_connections: self.keep_member_connections,
            unreachable_backoff_max: self.cluster_unreachable_backoff_max,
            failure_threshold: self.cluster_failure_threshold,
            success_threshold: self.cluster_success_threshold,
            probe_timeout: self.cluster_probe_timeout,
            api_enablements_period: self.cluster_api_enablements_period,
            lease_duration: self.cluster_lease_duration,
            lease_renew_fraction: self.cluster_lease_renew_interval_fraction,
            monitor_period: self.cluster_monitor_period,
            monitor_grace_period: self.cluster_monitor_grace_period,
            startup_grace_period: self.cluster_startup_grace_period,
            host_qps: self.kube_api_qps,
            host_burst: self.kube_api_burst,
            ..Default::default()
        }
    }
}

/// Flags of the scheduler (shared by `scheduler` and `local-up`).
#[derive(Args, Debug, Clone)]
pub struct SchedulerFlags {
    /// Bindings with this spec.schedulerName (or none) are scheduled.
    #[arg(long, default_value = "default-scheduler")]
    pub scheduler_name: String,
    /// How long bindings tolerate a member's not-ready/unreachable NoExecute taint when their
    /// placement says nothing (Karmada's default is 300 s).
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    pub default_toleration_seconds: Duration,
    /// Longest time an evicted placement is kept while its replacement comes up.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    pub eviction_grace_period: Duration,
}

impl SchedulerFlags {
    pub fn options(&self) -> flotilla_scheduler_controller::SchedulerOptions {
        flotilla_scheduler_controller::SchedulerOptions {
            scheduler_name: self.scheduler_name.clone(),
            default_toleration_seconds: self.default_toleration_seconds.as_secs(),
            eviction_grace_period: self.eviction_grace_period,
            ..Default::default()
        }
    }
}

#[derive(Args, Debug)]
pub struct ComponentArgs {
    /// Kubeconfig of the host API server (default: KUBECONFIG, else the in-cluster service
    /// account).
    #[arg(long, env = "KUBECONFIG")]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Compete for a Lease in kube-system so that only one replica acts.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub leader_elect: bool,
    /// How long candidates wait after last seeing the leader renew before taking its Lease
    /// (a killed leader is replaced within this plus the retry period).
    #[arg(long, default_value = "8s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// A leader that cannot renew for this long stops acting (must be less than the lease
    /// duration; the difference is the time it has to stop writing).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often the leader renews and candidates retry.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// Plain-HTTP address for /metrics, /healthz and /readyz (empty disables it).
    #[arg(long)]
    pub metrics_bind_address: Option<SocketAddr>,
}

#[derive(Args, Debug)]
pub struct ControllerManagerArgs {
    #[command(flatten)]
    pub component: ComponentArgs,
    #[command(flatten)]
    pub clusters: ClusterControllerFlags,
    #[command(flatten)]
    pub propagation: PropagationFlags,
}

#[derive(Args, Debug)]
pub struct SchedulerArgs {
    #[command(flatten)]
    pub component: ComponentArgs,
    #[command(flatten)]
    pub scheduler: SchedulerFlags,
}

impl ComponentArgs {
    /// The Lease `kube-system/flotilla-<component>` with these flags' timings, or `None`
    /// without `--leader-elect`.
    fn leader(&self, component: &str) -> anyhow::Result<Option<flotilla_leader::LeaderOptions>> {
        if !self.leader_elect {
            return Ok(None);
        }
        let mut opts = flotilla_leader::LeaderOptions::for_component(component);
        opts.lease_duration = self.leader_elect_lease_duration;
        opts.renew_deadline = self.leader_elect_renew_deadline;
        opts.retry_period = self.leader_elect_retry_period;
        opts.on_step_down_overrun = Some(exit_after_overrun);
        opts.validate().context("--leader-elect-* flags")?;
        Ok(Some(opts))
    }
}

/// A component that lost its Lease and did not stop in time exits, so that nothing it still
/// has in flight can write beside the new leader (kube's components exit on a lost Lease).
fn exit_after_overrun() {
    eprintln!("lost the Lease and could not stop in time; exiting");
    std::process::exit(1);
}

type MetricsSource = Arc<dyn Fn() -> String + Send + Sync>;

/// Serves `/metrics` from `source` and the health endpoints until the task is aborted.
async fn serve_metrics(
    addr: SocketAddr,
    source: Arc<parking_lot::Mutex<Option<MetricsSource>>>,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("listening on {addr} for metrics"))?;
    let metrics = move || {
        let source = source.clone();
        async move {
            let text = source.lock().as_ref().map(|f| f()).unwrap_or_default();
            // OpenMetrics allows one `# EOF`, at the very end: the heap gauges go before it.
            let mut text = text.strip_suffix("# EOF\n").unwrap_or(&text).to_string();
            text.push_str(&crate::heap::metrics_text());
            text.push_str("# EOF\n");
            (
                [(
                    http::header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )],
                text,
            )
        }
    };
    let app = axum::Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }));
    eprintln!("serving /metrics on http://{addr}");
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "metrics server failed");
        }
    }))
}

/// Where an API server keeps its objects (`--storage`), as kube-apiserver's etcd flags.
#[derive(Args, Debug, Clone)]
pub struct StorageFlags {
    /// `embedded` (a redb file in the data directory; one server) or `etcd` (several
    /// replicas may share it).
    #[arg(long, default_value = "embedded", value_parser = ["embedded", "etcd"])]
    pub storage: String,
    /// etcd members, comma-separated (`http://127.0.0.1:2379,...`; `https://` with TLS).
    #[arg(long, value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// Root of Flotilla's keys in etcd: the host's objects go under `<prefix>/host`, the
    /// aggregated API server's under `<prefix>/aggregated`.
    #[arg(long, default_value = "/registry/flotilla")]
    pub etcd_prefix: String,
    /// CA bundle that signed the etcd members' serving certificates.
    #[arg(long)]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate for etcd (with --etcd-keyfile).
    #[arg(long, requires = "etcd_keyfile")]
    pub etcd_certfile: Option<PathBuf>,
    #[arg(long, requires = "etcd_certfile")]
    pub etcd_keyfile: Option<PathBuf>,
    /// How often etcd's history is compacted (0s: never).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub etcd_compaction_interval: Duration,
    /// How long one etcd call may take, retried over the members through an election,
    /// before its request fails with 503 or 504 (default 10s).
    #[arg(long, value_parser = parse_duration)]
    pub etcd_request_timeout: Option<Duration>,
}

impl StorageFlags {
    /// The store of the server whose keys live under `<etcd-prefix>/<component>`.
    pub fn choice(&self, component: &str) -> anyhow::Result<flotilla_etcd::StorageChoice> {
        match self.storage.as_str() {
            "etcd" => {
                if self.etcd_servers.is_empty() {
                    anyhow::bail!("--storage etcd needs --etcd-servers");
                }
                let read = |path: &PathBuf| {
                    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
                };
                let mut opts = flotilla_etcd::EtcdOptions::new(
                    self.etcd_servers.clone(),
                    format!("{}/{component}", self.etcd_prefix.trim_end_matches('/')),
                );
                opts.connect.ca_pem = self.etcd_cafile.as_ref().map(read).transpose()?;
                if let (Some(cert), Some(key)) = (&self.etcd_certfile, &self.etcd_keyfile) {
                    opts.connect.client_identity = Some((read(cert)?, read(key)?));
                }
                opts.compaction_interval = self.etcd_compaction_interval;
                if let Some(timeout) = self.etcd_request_timeout {
                    opts.connect.request_timeout = timeout;
                }
                Ok(flotilla_etcd::StorageChoice::Etcd(opts))
            }
            _ if !self.etcd_servers.is_empty() => {
                anyhow::bail!("--etcd-servers needs --storage etcd")
            }
            _ => Ok(flotilla_etcd::StorageChoice::Embedded),
        }
    }
}

/// Overload protection of an API server (kube-apiserver's flags and defaults): requests past
/// these are answered 429 with Retry-After; watches, proxies and health checks do not count.
#[derive(Args, Debug, Clone)]
pub struct InFlightFlags {
    /// Read-only requests served at once (0: no limit).
    #[arg(long, default_value_t = flotilla_apiserver::inflight::DEFAULT_MAX_REQUESTS_INFLIGHT)]
    pub max_requests_inflight: usize,
    /// Mutating requests served at once (0: no limit).
    #[arg(long, default_value_t = flotilla_apiserver::inflight::DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT)]
    pub max_mutating_requests_inflight: usize,
}

impl InFlightFlags {
    /// Sets the limits on a server's configuration.
    pub fn apply(&self, config: &mut flotilla_apiserver::ServerConfig) {
        config.max_requests_inflight = self.max_requests_inflight;
        config.max_mutating_requests_inflight = self.max_mutating_requests_inflight;
    }
}

/// The largest object an API server stores (`--max-object-bytes`): bigger writes are
/// answered 413 before they reach the storage, on either backend.
#[derive(Args, Debug, Clone)]
pub struct ObjectSizeFlags {
    /// Largest object stored, in bytes of its encoding (default 1.5 MiB, etcd's default
    /// request limit).
    #[arg(long, default_value_t = flotilla_generic_store::objects::DEFAULT_MAX_OBJECT_BYTES)]
    pub max_object_bytes: usize,
}

impl ObjectSizeFlags {
    /// Sets the limit on a server's configuration.
    pub fn apply(&self, config: &mut flotilla_apiserver::ServerConfig) {
        config.max_object_bytes = self.max_object_bytes;
    }
}

/// A `--skipped-propagating-namespaces` pattern, refused when it is no regular expression.
fn namespace_pattern(pattern: &str) -> Result<String, String> {
    flotilla_propagation::skipped::SkippedNamespaces::new(&[pattern])
        .map(|_| pattern.to_string())
        .map_err(|e| format!("not a regular expression: {e}"))
}

/// Flags of the propagation controllers (shared by `controller-manager` and `local-up`).
#[derive(Args, Debug, Clone)]
pub struct PropagationFlags {
    /// Namespaces whose objects are not propagated and which are not created in members:
    /// regular expressions matched against whole names, as Karmada's flag (`karmada-system`,
    /// `karmada-cluster` and `karmada-es-*` never are, nor `default` created).
    #[arg(long, value_delimiter = ',', default_value = flotilla_propagation::skipped::SkippedNamespaces::DEFAULT_PATTERN, value_parser = namespace_pattern)]
    pub skipped_propagating_namespaces: Vec<String>,
    /// Workers applying Works to each member cluster.
    #[arg(long, default_value_t = 4)]
    pub concurrent_work_syncs_per_cluster: usize,
    /// Workers turning bindings into Works.
    #[arg(long, default_value_t = 8)]
    pub concurrent_resource_binding_syncs: usize,
}

impl PropagationFlags {
    pub fn options(&self) -> flotilla_propagation::PropagationOptions {
        flotilla_propagation::PropagationOptions {
            // Each pattern was checked when the flag was parsed.
            skipped_namespaces: flotilla_propagation::skipped::SkippedNamespaces::new(
                &self.skipped_propagating_namespaces,
            )
            .unwrap_or_default(),
            execution_workers_per_cluster: self.concurrent_work_syncs_per_cluster.max(1),
            binding_workers: self.concurrent_resource_binding_syncs.max(1),
            ..Default::default()
        }
    }
}

/// The runtime the controllers run on, shut down without blocking when dropped (dropping a
/// runtime in async code would otherwise panic).
struct ControllerRuntime(Option<tokio::runtime::Runtime>);

impl ControllerRuntime {
    /// A runtime of `threads` workers: few, as the controllers' work is bounded (worker pools,
    /// rate-limited writes). Its threads run at niceness `nice`, so that on a busy machine
    /// (and in local-up's own process) the API server's threads are scheduled first: the
    /// controllers' work can wait milliseconds, a user's request should not.
    fn new(threads: u16, nice: i32) -> anyhow::Result<Self> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(usize::from(threads.max(1)))
            .on_thread_start(move || {
                // Linux: the calling thread only, not the whole process.
                if nice != 0
                    && let Err(e) = rustix::process::setpriority_process(None, nice)
                {
                    tracing::warn!(error = %e, nice, "could not lower the controllers' priority");
                }
            })
            .thread_name("controllers")
            .enable_all()
            .build()
            .context("starting the controllers' runtime")?;
        Ok(Self(Some(rt)))
    }
}

impl Drop for ControllerRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// Everything the controller-manager runs: the cluster controllers, the propagation
/// controllers and the garbage collector, on a runtime of their own with one host client
/// whose writes are rate-limited (`host_qps`, `host_burst`).
pub struct ControllerSet {
    clusters: flotilla_cluster_controllers::ControllerManager,
    propagation: flotilla_propagation::Propagation,
    gc: flotilla_gc::GarbageCollector,
    /// What they run on: one tree of tasks, the watches they share, their metrics.
    manager: Arc<flotilla_controller_runtime::Manager>,
    /// Last: dropped after the controllers' handles.
    runtime: ControllerRuntime,
}

impl ControllerSet {
    /// Starts the controllers with a client for the host built from `host` on their own
    /// runtime (the client's background tasks and connections live there too).
    pub fn spawn(
        host: kube::Config,
        clusters: flotilla_cluster_controllers::ControllerManagerOptions,
        propagation: flotilla_propagation::PropagationOptions,
        threads: u16,
        nice: i32,
    ) -> anyhow::Result<Self> {
        let runtime = ControllerRuntime::new(threads, nice)?;
        let handle = runtime
            .0
            .as_ref()
            .map(|rt| rt.handle().clone())
            .context("the controllers' runtime is gone")?;
        let _on_runtime = handle.enter();
        let throttle = flotilla_cluster_controllers::throttle::WriteThrottleLayer::new(
            clusters.host_qps,
            clusters.host_burst,
        );
        // Idle connections close (kube-rs's own client keeps them for good).
        let client = flotilla_controller_runtime::client::client_builder(host)
            .context("building a client for the host")?
            .with_layer(&throttle)
            .build();
        let manager = flotilla_controller_runtime::Manager::new(client);
        Ok(Self {
            clusters: flotilla_cluster_controllers::spawn_on(&manager, clusters),
            propagation: flotilla_propagation::spawn_on(&manager, propagation),
            gc: flotilla_gc::spawn_on(&manager, flotilla_gc::GcOptions::default()),
            manager,
            runtime,
        })
    }

    /// Every controller's metrics as one exposition.
    pub fn metrics_text(&self) -> String {
        flotilla_controller_runtime::join_expositions([
            self.clusters.metrics_text(),
            self.propagation.metrics_text(),
            self.gc.metrics_text(),
            self.manager.metrics_text(),
        ])
    }

    /// Stops propagation first (it stands on the others), then the rest, then the watches
    /// they shared, then their runtime.
    pub async fn stop(self) {
        self.propagation.stop().await;
        self.gc.stop().await;
        self.clusters.stop().await;
        self.manager.stop().await;
        drop(self.runtime);
    }
}

/// `flotilla controller-manager`.
pub async fn run_controller_manager(args: ControllerManagerArgs) -> anyhow::Result<()> {
    let config = crate::process::connect_host_config(args.component.kubeconfig.as_deref()).await?;
    let host = kube::Client::try_from(config.clone()).context("building a client for the host")?;
    let opts = args.clusters.options();
    let propagation = args.propagation.options();
    let (threads, nice) = (
        args.clusters.controller_threads,
        args.clusters.controller_nice,
    );
    run_component(
        host.clone(),
        &args.component,
        "controller-manager",
        move || {
            let set = match ControllerSet::spawn(
                config.clone(),
                opts.clone(),
                propagation.clone(),
                threads,
                nice,
            ) {
                Ok(set) => set,
                Err(e) => {
                    // Only starting threads can fail here: nothing to go on with.
                    eprintln!("error: {e:#}");
                    std::process::exit(1);
                }
            };
            let set = Arc::new(tokio::sync::Mutex::new(Some(set)));
            let metrics_set = set.clone();
            let metrics: MetricsSource = Arc::new(move || {
                metrics_set
                    .try_lock()
                    .ok()
                    .and_then(|g| g.as_ref().map(|c| c.metrics_text()))
                    .unwrap_or_default()
            });
            let stop = Box::pin(async move {
                if let Some(c) = set.lock().await.take() {
                    c.stop().await;
                }
            });
            (metrics, stop as StopFuture)
        },
    )
    .await
}

/// `flotilla scheduler`.
pub async fn run_scheduler(args: SchedulerArgs) -> anyhow::Result<()> {
    let host = crate::process::connect_host(args.component.kubeconfig.as_deref()).await?;
    let mut opts = args.scheduler.options();
    // The scheduler runs its engine per term itself (flotilla_leader::run_elected), so that
    // a standby still serves its metrics.
    opts.leader = args.component.leader("scheduler")?;
    let scheduler = Arc::new(flotilla_scheduler_controller::spawn(host, opts));
    let source: Arc<parking_lot::Mutex<Option<MetricsSource>>> = Arc::default();
    let for_metrics = scheduler.clone();
    *source.lock() = Some(Arc::new(move || for_metrics.metrics_text()));
    let server = match args.component.metrics_bind_address {
        Some(addr) => Some(serve_metrics(addr, source).await?),
        None => None,
    };
    println!("Flotilla scheduler running");
    crate::process::shutdown_signal().await;
    eprintln!("shutting down");
    if let Some(s) = server {
        s.abort();
    }
    match Arc::try_unwrap(scheduler) {
        Ok(s) => s.stop().await,
        Err(_) => tracing::warn!("scheduler still referenced at shutdown"),
    }
    Ok(())
}

type StopFuture = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// Runs a component while this process leads (or always, without leader election), until
/// SIGINT/SIGTERM. `start` starts it and returns its metrics source and a stop future. The
/// Lease is `kube-system/flotilla-<component>` (`LeaderOptions::for_component`).
async fn run_component(
    host: kube::Client,
    args: &ComponentArgs,
    component: &str,
    start: impl Fn() -> (MetricsSource, StopFuture),
) -> anyhow::Result<()> {
    let source: Arc<parking_lot::Mutex<Option<MetricsSource>>> = Arc::default();
    let server = match args.metrics_bind_address {
        Some(addr) => Some(serve_metrics(addr, source.clone()).await?),
        None => None,
    };
    let leader = args.leader(component)?;
    if let Some(l) = &leader {
        eprintln!("waiting to lead (Lease {}/{})", l.namespace, l.name);
    }
    flotilla_leader::run_elected(
        host,
        leader,
        crate::process::shutdown_signal(),
        |mut term| {
            let (metrics, stop) = start();
            *source.lock() = Some(metrics);
            if term.elected() {
                println!("Flotilla {component} running (leader)");
            } else {
                println!("Flotilla {component} running");
            }
            let source = source.clone();
            async move {
                match term.ended().await {
                    TermEnd::Lost => eprintln!("lost leadership; waiting to lead again"),
                    TermEnd::Shutdown => eprintln!("shutting down"),
                }
                stop.await;
                *source.lock() = None;
            }
        },
    )
    .await;
    if let Some(s) = server {
        s.abort();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_flag_syntax() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1m30s"), Ok(Duration::from_secs(90)));
        assert!(parse_duration("ten").is_err());
    }

    #[test]
    fn the_controllers_threads_run_at_their_niceness() {
        let runtime = ControllerRuntime::new(2, 7).unwrap();
        let rt = runtime.0.as_ref().unwrap();
        let main_thread = rustix::process::getpriority_process(None).unwrap();
        // Workers and blocking threads both.
        let (on_worker, on_blocking) = rt.block_on(async {
            let worker = tokio::spawn(async { rustix::process::getpriority_process(None) });
            let blocking =
                tokio::task::spawn_blocking(|| rustix::process::getpriority_process(None));
            (
                worker.await.unwrap().unwrap(),
                blocking.await.unwrap().unwrap(),
            )
        });
        assert_eq!((on_worker, on_blocking), (7, 7));
        // The rest of the process keeps its priority.
        assert_eq!(
            rustix::process::getpriority_process(None).unwrap(),
            main_thread
        );
        assert_ne!(main_thread, 7);
    }
}

/// Flags of merged reads (shared by `apiserver`, `aggregated-apiserver` and `local-up`).
#[derive(Args, Debug, Clone)]
pub struct MergedReadFlags {
    /// Resources whose reads on the host are merged across the member clusters, as
    /// `plural.group` (`pods` for the core group), comma-separated; `none` turns merged
    /// reads off.
    #[arg(long, value_delimiter = ',', default_values_t = flotilla_names::merged_reads::default_resources())]
    pub merged_resources: Vec<String>,
    /// Callers in these groups read the host's template store instead of merged reads
    /// (Flotilla's own components).
    #[arg(long, value_delimiter = ',', default_value = flotilla_pki::COMPONENTS_GROUP)]
    pub merged_reads_bypass_groups: Vec<String>,
}

/// The aggregated server's merged-read flags (`aggregated-apiserver`, `local-up`).
#[derive(Args, Debug, Clone)]
pub struct MergedReadServerFlags {
    /// How long one member cluster may take to answer a merged read before the answer goes
    /// on without it (with a warning naming it).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub member_timeout: Duration,
    /// Per-cluster watch caches of the merged resources (merged LIST and GET read memory).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub member_cache: bool,
    /// The per-cluster caches hold at most this many objects in all.
    #[arg(long, default_value_t = 1_000_000)]
    pub member_cache_max_objects: usize,
    /// Merged GETs and LISTs fanned out to the member clusters at once; past it they are
    /// answered 429 with Retry-After (0: no bound). Watches, `system:masters` and Flotilla's
    /// components are not counted, as with --max-requests-inflight. Default: 8 per CPU.
    #[arg(long, default_value_t = flotilla_aggregated::search::default_max_merged_reads_inflight())]
    pub max_merged_reads_inflight: usize,
}

impl MergedReadFlags {
    /// The merged resources; an error names any that is not a built-in resource.
    pub fn resources(&self) -> anyhow::Result<Vec<String>> {
        let resources: Vec<String> = self
            .merged_resources
            .iter()
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty() && r != "none")
            .collect();
        let unknown = flotilla_aggregated::search::SearchProxy::unknown_resources(&resources);
        if !unknown.is_empty() {
            anyhow::bail!(
                "--merged-resources: not a built-in resource: {} (write plural.group, e.g. deployments.apps, or pods)",
                unknown.join(", ")
            );
        }
        Ok(resources)
    }

    /// The host's side: which resources it routes, and who bypasses them.
    pub fn host_config(&self) -> anyhow::Result<flotilla_host::merged_reads::MergedReadsConfig> {
        Ok(flotilla_host::merged_reads::MergedReadsConfig {
            resources: self.resources()?,
            bypass_groups: self.merged_reads_bypass_groups.clone(),
        })
    }

    /// The aggregated server's side; `None` when merged reads are off.
    pub fn aggregated_options(
        &self,
        server: &MergedReadServerFlags,
    ) -> anyhow::Result<Option<flotilla_aggregated::search::MergedReadOptions>> {
        let resources = self.resources()?;
        Ok(
            (!resources.is_empty()).then_some(flotilla_aggregated::search::MergedReadOptions {
                resources,
                member_timeout: server.member_timeout,
                cache: server.member_cache,
                cache_max_objects: server.member_cache_max_objects,
                max_inflight: server.max_merged_reads_inflight,
            }),
        )
    }
}
