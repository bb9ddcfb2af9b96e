//! A simulated member cluster in the spirit of kwok: Flotilla's own API server library serving
//! the built-in kinds plus Pods and Nodes over TLS, with simulated nodes of a given capacity
//! and an in-process control loop ([`sim`]) standing in for the scheduler, kubelet and
//! workload controllers. Pods that do not fit stay Pending, so placement decisions made by
//! Flotilla show up as they would on a real cluster. [`start`] runs one in-process;
//! [`start_many`] runs many sharing one CA and serving certificate (scale tests
//! with hundreds of members in one process); `flotilla member-sim` runs either alone.
//!
//! For failover tests a member can lose its network without losing its state
//! ([`RunningMember::set_reachable`]), keep answering while its health checks fail
//! ([`RunningMember::set_healthy`]), have single nodes turn NotReady
//! ([`RunningMember::set_node_ready`]), or be stopped and started again on the same data
//! directory and port with the same credentials.

mod disruption;
mod failures;
mod health;
mod latency;
mod many;
pub mod quantity;
mod sim;

pub use failures::{
    CRASH_LOOP_ANNOTATION, DEFAULT_UNPULLABLE_IMAGES, IMAGE_PULL_FAILURE_ANNOTATION,
    PENDING_ANNOTATION,
};
pub use many::{
    FailureFiles, ManyOptions, RunningMembers, follow_failure_files, follow_unreachable_file,
    start_many,
};
pub use sim::SimProgress;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::auth::StaticTokens;
use flotilla_apiserver::serve::{PeerTrust, ServerHandle, https_url};
use flotilla_apiserver::subresource::SubresourceHandler;
use flotilla_apiserver::{ApiServer, BootError, Registry, ServerConfig, ServerOptions};
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::request::ResourcePath;
use flotilla_pki::{ChainVerifier, Kubeconfig};
use flotilla_storage::{EmbeddedOptions, EmbeddedStorage, MemoryStorage, Storage};
use tokio::net::TcpListener;
use tokio::sync::Notify;

use flotilla_apiserver::tasks::SHUTDOWN_GRACE;

/// The user the Flotilla bearer token authenticates as (in `system:masters`, so Flotilla
/// can impersonate the users it acts for).
pub const FLOTILLA_USER: &str = "flotilla";

/// Where a member keeps its generated Flotilla token, so a restart keeps its credentials.
pub const TOKEN_FILE: &str = "flotilla-token";

/// Watch events a member keeps for clients resuming watches (older ones relist). Every
/// retained event keeps an object version alive (a Node with its managed fields is tens of
/// KiB in memory), so the storage default of 100,000 would let each of hundreds of members
/// grow to gigabytes under churn.
pub const DEFAULT_WATCH_HISTORY: usize = 1_000;

/// How long re-binding the port of a member that turns reachable again keeps trying while
/// the port is briefly taken (e.g. by an outgoing connection's ephemeral port).
const REBIND_PATIENCE: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error(transparent)]
    Boot(#[from] flotilla_apiserver::BootError),
    #[error("the Flotilla token is invalid")]
    Token(#[from] flotilla_apiserver::auth::TokenFileError),
    #[error("reading or writing the token file {path}")]
    TokenFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("bootstrapping the cluster")]
    Bootstrap(#[from] flotilla_host::HostError),
    #[error("the registry lacks a resource the simulation needs")]
    MissingResource,
    #[error("the simulation did not create the member's nodes within {0:?}")]
    NoFirstPass(Duration),
    #[error("--unpullable-images: {0}")]
    UnpullablePattern(#[from] regex::Error),
    #[error("the service-account signing key is unusable")]
    ServiceAccountKey(#[from] flotilla_apiserver::serviceaccount::TokenKeyError),
}

flotilla_apiserver::boot_error_conversions!(MemberError);

/// The certificates a member serves with and trusts: its CA, serving certificate and admin
/// client certificate, with the TLS configuration built from them. Generating keys is the
/// slowest part of starting a member, so [`start_many`] makes one set for all of them
/// ([`MemberOptions::shared_pki`]).
pub struct MemberPki {
    /// The CA certificate (PEM) clients verify the member with.
    pub ca_pem: String,
    admin_cert_pem: String,
    admin_key_pem: String,
    /// The key service-account tokens are signed with (TokenRequests and the token
    /// controller's Secrets).
    service_account: flotilla_pki::ServiceAccountKey,
    tls: Arc<rustls::ServerConfig>,
    trust: Arc<PeerTrust>,
}

impl std::fmt::Debug for MemberPki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberPki").finish_non_exhaustive()
    }
}

impl MemberPki {
    /// Loads the certificates under `<dir>/pki/`, creating what is missing. The serving
    /// certificate covers the loopback names plus `hosts`.
    pub fn ensure(dir: &Path, hosts: &[String]) -> Result<Arc<Self>, MemberError> {
        let pki = flotilla_pki::ensure_server_pki(dir, hosts)?;
        let tls = flotilla_pki::server_config(
            &pki.apiserver.cert_pem,
            &pki.apiserver.key_pem,
            std::slice::from_ref(&pki.ca.cert_pem),
        )?;
        let trust = Arc::new(PeerTrust {
            client_ca: Some(ChainVerifier::new(std::slice::from_ref(&pki.ca.cert_pem))?),
            request_header_ca: None,
            front_proxy_names: Vec::new(),
        });
        Ok(Arc::new(Self {
            ca_pem: pki.ca.cert_pem,
            admin_cert_pem: pki.admin.cert_pem,
            admin_key_pem: pki.admin.key_pem,
            service_account: pki.service_account.key,
            tls,
            trust,
        }))
    }
}

/// The extra serving-certificate name a bind address needs (none for loopback/any).
fn serving_hosts(bind_address: IpAddr) -> Vec<String> {
    if bind_address.is_unspecified() || bind_address.is_loopback() {
        Vec::new()
    } else {
        vec![bind_address.to_string()]
    }
}

/// How to run a simulated member cluster.
#[derive(Debug, Clone)]
pub struct MemberOptions {
    /// The cluster's name: node names, kubeconfig cluster/context names.
    pub name: String,
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// 0 picks a free port.
    pub secure_port: u16,
    /// Keep everything in memory instead of `<data_dir>` storage (certificates, the token
    /// and the kubeconfigs are still written there).
    pub in_memory: bool,
    pub nodes: u32,
    /// Per-node capacity (= allocatable), as quantities.
    pub node_cpu: String,
    pub node_memory: String,
    pub node_pods: u32,
    /// How long a bound Pod stays Pending before it runs (and a Job's Pod runs before it
    /// succeeds).
    pub ready_delay: Duration,
    /// The bearer token Flotilla uses (user `flotilla`, group `system:masters`). `None`:
    /// the one in `<data_dir>/flotilla-token`, generated and written there on first start.
    pub token: Option<String>,
    /// Certificates shared with other members; `None` keeps them under `<data_dir>/pki/`.
    pub shared_pki: Option<Arc<MemberPki>>,
    /// Watch events kept for resuming watches.
    pub watch_history: usize,
    /// Added to every request before it is served: a slow member (zero: none).
    pub latency: Duration,
    /// Largest object stored, as encoded (larger writes get 413).
    pub max_object_bytes: usize,
    /// Run the ServiceAccount token controller (kube-controller-manager's legacy tokens
    /// controller): `kubernetes.io/service-account-token` Secrets are filled, and their
    /// tokens accepted. `karmadactl join` waits on it.
    pub token_controller: bool,
    /// Images whose pull fails here (regular expressions; see [`DEFAULT_UNPULLABLE_IMAGES`]).
    pub unpullable_images: Vec<String>,
    /// Keep PodDisruptionBudgets' status (kube-controller-manager's disruption controller).
    pub disruption_controller: bool,
}

impl MemberOptions {
    pub fn new(name: impl Into<String>, data_dir: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            data_dir: data_dir.into(),
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            secure_port: 0,
            in_memory: false,
            nodes: 3,
            node_cpu: "4".into(),
            node_memory: "8Gi".into(),
            node_pods: 110,
            ready_delay: Duration::from_millis(500),
            token: None,
            shared_pki: None,
            watch_history: DEFAULT_WATCH_HISTORY,
            latency: Duration::ZERO,
            max_object_bytes: flotilla_generic_store::objects::DEFAULT_MAX_OBJECT_BYTES,
            token_controller: true,
            unpullable_images: vec![DEFAULT_UNPULLABLE_IMAGES.to_string()],
            disruption_controller: true,
        }
    }
}

fn random_token() -> String {
    use rand::Rng;
    let mut rng = rand::rng();
    (0..32)
        .map(|_| char::from(b"abcdefghijklmnopqrstuvwxyz0123456789"[rng.random_range(0..36)]))
        .collect()
}

/// The token in `<dir>/flotilla-token`, or a new one written there (readable by the owner
/// only: it is a `system:masters` credential).
fn persistent_token(dir: &Path) -> Result<String, MemberError> {
    let path = dir.join(TOKEN_FILE);
    let io_err = |source| MemberError::TokenFile {
        path: path.clone(),
        source,
    };
    match std::fs::read_to_string(&path) {
        Ok(s) if !s.trim().is_empty() => return Ok(s.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(e)),
    }
    let token = random_token();
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&path).map_err(io_err)?;
    std::io::Write::write_all(&mut file, format!("{token}\n").as_bytes()).map_err(io_err)?;
    Ok(token)
}

/// A running simulated member cluster.
pub struct RunningMember {
    pub name: String,
    /// Where it listens; kept across [`RunningMember::set_reachable`] toggles.
    pub addr: SocketAddr,
    /// `<data_dir>/kubeconfig`: context `<name>` (admin, client certificate, the current one)
    /// and context `<name>-flotilla` (the bearer token).
    pub kubeconfig: PathBuf,
    /// `<data_dir>/kubeconfig-flotilla`: only the token user, as a member's join would use.
    pub token_kubeconfig: PathBuf,
    /// The effective Flotilla token (given, or the persisted one).
    pub token: String,
    pub ca_pem: String,
    pub server: Arc<ApiServer>,
    pki: Arc<MemberPki>,
    readiness: sim::NodeReadiness,
    poke: Arc<Notify>,
    progress: tokio::sync::watch::Receiver<SimProgress>,
    /// `None` while unreachable.
    serving: tokio::sync::Mutex<Option<ServerHandle>>,
    reachable: AtomicBool,
    /// Read by the health layer of every router this member serves with.
    healthy: Arc<AtomicBool>,
    /// Added to every request (see [`MemberOptions::latency`]).
    latency: Duration,
}

impl RunningMember {
    /// `https://127.0.0.1:<port>` (or the bind address when it is not unspecified).
    pub fn url(&self) -> String {
        https_url(self.addr)
    }

    /// The name of node `i` (`<name>-node-<i>`).
    pub fn node_name(&self, i: u32) -> String {
        format!("{}-node-{i}", self.name)
    }

    /// Marks a simulated node Ready or NotReady; Pods on a NotReady node turn unready and
    /// no new Pod is scheduled there. Takes effect asynchronously.
    pub fn set_node_ready(&self, name: &str, ready: bool) {
        self.readiness.set(name, ready);
        self.poke.notify_one();
    }

    /// Runs a simulation pass soon even though nothing changed (with
    /// [`RunningMember::simulation_progress`], a barrier for tests).
    pub fn nudge(&self) {
        self.poke.notify_one();
    }

    /// Follows the simulation's passes.
    pub fn simulation_progress(&self) -> tokio::sync::watch::Receiver<SimProgress> {
        self.progress.clone()
    }

    /// Cuts the cluster off the network (`false`) or connects it again (`true`), keeping
    /// its state and its simulation running, as a network partition would. Unreachable:
    /// the port is closed, so new connections are refused, and every open connection
    /// (watches included) is dropped at once. Reachable again: serves on the same address
    /// (same URL, certificates and token). Setting the current state again does nothing.
    pub async fn set_reachable(&self, reachable: bool) -> Result<(), MemberError> {
        let mut serving = self.serving.lock().await;
        if reachable && serving.is_none() {
            let listener = rebind(self.addr).await?;
            *serving = Some(self.serve(listener)?);
            tracing::info!(name = %self.name, addr = %self.addr, "member-sim reachable again");
        } else if !reachable {
            if let Some(handle) = serving.take() {
                handle.abort().await;
                tracing::info!(name = %self.name, addr = %self.addr, "member-sim unreachable");
            }
        }
        self.reachable.store(reachable, Ordering::Relaxed);
        Ok(())
    }

    /// Whether it currently accepts connections (see [`RunningMember::set_reachable`]).
    pub fn is_reachable(&self) -> bool {
        self.reachable.load(Ordering::Relaxed)
    }

    /// Makes the cluster's health checks fail (`false`: `/readyz`, `/healthz` and `/livez`
    /// answer 500 with a report naming a failed `etcd` check) or pass again (`true`), while
    /// the rest of its API keeps being served, as a control plane with a failing storage
    /// backend would. Independent of [`RunningMember::set_reachable`]; takes effect for the
    /// next request.
    pub fn set_healthy(&self, healthy: bool) {
        if self.healthy.swap(healthy, Ordering::Relaxed) != healthy {
            tracing::info!(name = %self.name, healthy, "member-sim health changed");
        }
    }

    /// Whether its health checks pass (see [`RunningMember::set_healthy`]).
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    fn serve(&self, listener: TcpListener) -> Result<ServerHandle, MemberError> {
        Ok(flotilla_apiserver::boot::serve(
            listener,
            self.addr,
            self.pki.tls.clone(),
            member_router(&self.server, self.healthy.clone(), self.latency),
            self.pki.trust.clone(),
        )?)
    }

    /// Stops serving (letting requests in flight finish for a grace period) and stops the
    /// simulation, then closes its storage, so the member can be started again on the same
    /// data directory (and port) in this process.
    pub async fn stop(self) {
        if let Some(handle) = self.serving.into_inner() {
            handle.stop().await;
        }
        // The simulation and the API server's loops are the last holders of the storage;
        // once they are joined and `self` is gone, its files are released.
        self.server.tasks.shutdown(SHUTDOWN_GRACE).await;
    }

    /// Waits until the server ends (at once when the member is unreachable), then stops the
    /// simulation and the other background tasks.
    pub async fn wait(self) {
        if let Some(handle) = self.serving.into_inner() {
            handle.wait().await;
        }
        self.server.tasks.shutdown(SHUTDOWN_GRACE).await;
    }
}

/// Binds `addr` again, retrying for a while when the port is in use.
async fn rebind(addr: SocketAddr) -> Result<TcpListener, MemberError> {
    let deadline = tokio::time::Instant::now() + REBIND_PATIENCE;
    loop {
        match TcpListener::bind(addr).await {
            Ok(listener) => return Ok(listener),
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && tokio::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(source) => return Err(BootError::Listen { addr, source }.into()),
        }
    }
}

/// What a member cluster serves: the built-in kinds (Pods and Nodes among them), access reviews and
/// CustomResourceDefinitions (so propagated CRDs are served in the member, and their custom
/// resources can follow).
pub fn member_registry() -> Arc<Registry> {
    let registry = Registry::new();
    for def in base_resources() {
        registry.register(def.clone());
    }
    Arc::new(registry)
}

/// The resource definitions every member starts from, built once per process: each member
/// registers its own copies (cheap: the hooks and schemas are shared) into its own registry,
/// which grows with the CRDs created in that member.
fn base_resources() -> &'static [flotilla_apimachinery::resource::ResourceDef] {
    static BASE: OnceLock<Vec<flotilla_apimachinery::resource::ResourceDef>> = OnceLock::new();
    BASE.get_or_init(|| {
        flotilla_kinds::builtin_resources()
            .into_iter()
            .chain(
                flotilla_kinds::extension_resources()
                    .into_iter()
                    .filter(|d| d.plural == "customresourcedefinitions"),
            )
            .chain(flotilla_apiserver::reviews::review_resources())
            .collect()
    })
}

/// `pods/log`: simulated containers write nothing, but the pod must exist.
struct PodLogs;

#[async_trait::async_trait]
impl SubresourceHandler for PodLogs {
    async fn handle(
        &self,
        store: &Arc<flotilla_generic_store::context::StoreContext>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        _req: axum::extract::Request,
        _user: &UserInfo,
    ) -> axum::response::Response {
        use axum::response::IntoResponse;
        let name = path.name.as_deref().unwrap_or_default();
        let objects = flotilla_generic_store::objects::Objects::new(def, &store.storage);
        match objects.get(path.namespace.as_deref(), name).await {
            Ok(_) => (
                http::StatusCode::OK,
                [(http::header::CONTENT_TYPE, "text/plain")],
                "simulated pod: no logs\n",
            )
                .into_response(),
            Err(e) => flotilla_apiserver::response::error_response(&e),
        }
    }
}

/// Prepares certificates, the token and storage, bootstraps namespaces and RBAC policy,
/// starts the simulation, binds, writes the kubeconfigs and serves.
pub async fn start(opts: MemberOptions) -> Result<RunningMember, MemberError> {
    flotilla_apiserver::boot::create_data_dir(&opts.data_dir)?;
    let pki = match &opts.shared_pki {
        Some(pki) => pki.clone(),
        None => MemberPki::ensure(&opts.data_dir, &serving_hosts(opts.bind_address))?,
    };
    let token = match &opts.token {
        Some(token) => token.clone(),
        None => persistent_token(&opts.data_dir)?,
    };
    let backend: Arc<dyn Storage> = if opts.in_memory {
        Arc::new(MemoryStorage::with_history(opts.watch_history))
    } else {
        Arc::new(EmbeddedStorage::open(
            &opts.data_dir,
            EmbeddedOptions {
                history: opts.watch_history,
                ..EmbeddedOptions::default()
            },
        )?)
    };
    let tokens = StaticTokens::parse(
        &format!("{token},{FLOTILLA_USER},{FLOTILLA_USER},\"system:masters\""),
        "member-sim token",
    )?;
    // Service-account tokens as a cluster issues them (TokenRequests, and the token
    // controller's Secrets), checked by the member's authenticator.
    let issuer = Arc::new(flotilla_apiserver::serviceaccount::TokenIssuer::new(
        &pki.service_account,
        flotilla_apiserver::serviceaccount::IssuerOptions::default(),
    )?);
    let options = ServerOptions {
        tokens: Some(Arc::new(tokens)),
        rbac: Some(Arc::new(flotilla_rbac::RbacAuthorizer::new())),
        service_account_issuer: Some(issuer.clone()),
        ..ServerOptions::default()
    };
    let config = ServerConfig {
        max_object_bytes: opts.max_object_bytes,
        ..ServerConfig::default()
    };
    let server = ApiServer::with_options(member_registry(), backend, config, options);
    let started = start_with(opts, pki, token, server.clone(), issuer).await;
    if started.is_err() {
        // Background tasks already started hold the storage; stop them so it (and its
        // files) go.
        server.tasks.shutdown(SHUTDOWN_GRACE).await;
    }
    started
}

/// How long [`start`] waits for the simulation's first pass (which creates the nodes).
const FIRST_PASS_TIMEOUT: Duration = Duration::from_secs(30);

async fn start_with(
    opts: MemberOptions,
    pki: Arc<MemberPki>,
    token: String,
    server: Arc<ApiServer>,
    issuer: Arc<flotilla_apiserver::serviceaccount::TokenIssuer>,
) -> Result<RunningMember, MemberError> {
    server.add_subresource_handler("", "pods", "log", Arc::new(PodLogs));
    flotilla_host::ensure_system_namespaces(&server).await?;
    flotilla_host::ensure_bootstrap_policy(&server).await?;
    server.start_background().await?;
    if opts.token_controller {
        flotilla_host::token_controller::start(server.clone(), issuer, pki.ca_pem.clone());
    }

    let addr = SocketAddr::new(opts.bind_address, opts.secure_port);
    let (listener, addr) = flotilla_apiserver::boot::listen(addr).await?;
    let url = https_url(addr);

    let kubeconfig = opts.data_dir.join("kubeconfig");
    let mut kc = Kubeconfig::new_client_cert(
        &url,
        &opts.name,
        "admin",
        &pki.ca_pem,
        &pki.admin_cert_pem,
        &pki.admin_key_pem,
    );
    let token_kc = Kubeconfig::new_token(&url, &opts.name, FLOTILLA_USER, &pki.ca_pem, &token);
    kc.users.extend(token_kc.users.iter().cloned());
    let mut ctx = token_kc.contexts.clone();
    for c in &mut ctx {
        c.name = format!("{}-flotilla", opts.name);
    }
    kc.contexts.extend(ctx);
    kc.write(&kubeconfig)?;
    let token_kubeconfig = opts.data_dir.join("kubeconfig-flotilla");
    token_kc.write(&token_kubeconfig)?;

    let unpullable_images = opts
        .unpullable_images
        .iter()
        .map(|p| regex::Regex::new(p))
        .collect::<Result<Vec<_>, _>>()?;
    let readiness = sim::NodeReadiness::default();
    let poke = Arc::new(Notify::new());
    let (progress, progress_rx) = tokio::sync::watch::channel(SimProgress::default());
    let simulation = sim::Sim::new(
        server.clone(),
        sim::SimConfig {
            name: opts.name.clone(),
            nodes: opts.nodes,
            node_cpu: opts.node_cpu.clone(),
            node_memory: opts.node_memory.clone(),
            node_pods: opts.node_pods,
            ready_delay: opts.ready_delay,
            unpullable_images,
            disruption_controller: opts.disruption_controller,
        },
        readiness.clone(),
        poke.clone(),
        progress,
    )
    .ok_or(MemberError::MissingResource)?;
    server.tasks.spawn("member-sim", simulation.run());
    // A member counts as started once its nodes exist, as a real cluster has its nodes before
    // it is joined: a status read in between would publish part of its capacity, and the
    // scheduler would divide replicas by it for good.
    let mut first_pass = progress_rx.clone();
    let passed = tokio::time::timeout(FIRST_PASS_TIMEOUT, async {
        first_pass.wait_for(|p| p.passes >= 1).await.is_ok()
    })
    .await;
    if passed != Ok(true) {
        return Err(MemberError::NoFirstPass(FIRST_PASS_TIMEOUT));
    }

    let healthy = Arc::new(AtomicBool::new(true));
    let handle = flotilla_apiserver::boot::serve(
        listener,
        addr,
        pki.tls.clone(),
        member_router(&server, healthy.clone(), opts.latency),
        pki.trust.clone(),
    );
    // On an error the caller stops the simulation with the server's other tasks.
    let handle = handle?;
    tracing::info!(name = %opts.name, %addr, "member-sim serving");
    Ok(RunningMember {
        name: opts.name,
        addr,
        kubeconfig,
        token_kubeconfig,
        token,
        ca_pem: pki.ca_pem.clone(),
        server,
        pki,
        readiness,
        poke,
        progress: progress_rx,
        serving: tokio::sync::Mutex::new(Some(handle)),
        reachable: AtomicBool::new(true),
        healthy,
        latency: opts.latency,
    })
}

/// The router a member serves: the API server's, behind the health switch and the added
/// latency.
fn member_router(
    server: &Arc<ApiServer>,
    healthy: Arc<AtomicBool>,
    latency: Duration,
) -> axum::Router {
    latency::with_latency(
        health::with_health_switch(server.router(), healthy),
        latency,
    )
}
