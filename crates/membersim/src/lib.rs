//! A simulated member cluster in the spirit of kwok: Flotilla's own API server library serving
//! the built-in kinds plus Pods and Nodes over TLS, with simulated nodes of a given capacity
//! and an in-process control loop ([`sim`]) standing in for the scheduler, kubelet and
//! workload controllers. Pods that do not fit stay Pending, so placement decisions made by
//! Flotilla show up as they would on a real cluster. [`start`] runs one in-process (tests,
//! scale tests run many); `flotilla member-sim` runs one alone.

pub mod quantity;
mod sim;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::auth::StaticTokens;
use flotilla_apiserver::request::ResourcePath;
use flotilla_apiserver::serve::{PeerTrust, ServerHandle, https_url};
use flotilla_apiserver::server::SubresourceHandler;
use flotilla_apiserver::{ApiServer, Registry, ServerConfig, ServerOptions, UserInfo};
use flotilla_pki::{ChainVerifier, Kubeconfig};
use flotilla_storage::{EmbeddedOptions, EmbeddedStorage, MemoryStorage, Storage};
use tokio::net::TcpListener;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The user the Flotilla bearer token authenticates as (in `system:masters`, so Flotilla
/// can impersonate the users it acts for).
pub const FLOTILLA_USER: &str = "flotilla";

#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    #[error("creating the data directory {path}")]
    CreateDataDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("preparing certificates")]
    Pki(#[from] flotilla_pki::PkiError),
    #[error("opening storage")]
    Storage(#[from] flotilla_storage::StorageError),
    #[error("listening on {addr}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("the Flotilla token is invalid")]
    Token(#[from] flotilla_apiserver::auth::TokenFileError),
    #[error("bootstrapping the cluster")]
    Bootstrap(#[from] flotilla_host::HostError),
    #[error("the registry lacks a resource the simulation needs")]
    MissingResource,
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
    /// Keep everything in memory instead of `<data_dir>` storage (certificates and the
    /// kubeconfig are still written there).
    pub in_memory: bool,
    pub nodes: u32,
    /// Per-node capacity (= allocatable), as quantities.
    pub node_cpu: String,
    pub node_memory: String,
    pub node_pods: u32,
    /// How long a bound Pod stays Pending before it runs (and a Job's Pod runs before it
    /// succeeds).
    pub ready_delay: Duration,
    /// The bearer token Flotilla uses (user `flotilla`, group `system:masters`).
    pub token: String,
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
            token: random_token(),
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

/// A running simulated member cluster.
pub struct RunningMember {
    pub name: String,
    pub addr: SocketAddr,
    /// `<data_dir>/kubeconfig`: context `<name>` (admin, client certificate, the current one)
    /// and context `<name>-flotilla` (the bearer token).
    pub kubeconfig: PathBuf,
    /// `<data_dir>/kubeconfig-flotilla`: only the token user, as a member's join would use.
    pub token_kubeconfig: PathBuf,
    pub token: String,
    pub ca_pem: String,
    pub server: Arc<ApiServer>,
    readiness: sim::NodeReadiness,
    poke: Arc<Notify>,
    handle: ServerHandle,
    sim_task: JoinHandle<()>,
}

impl RunningMember {
    /// `https://127.0.0.1:<port>` (or the bind address when it is not unspecified).
    pub fn url(&self) -> String {
        self.handle.url()
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

    /// Makes the whole cluster unreachable: stops serving and stops the simulation.
    pub async fn stop(self) {
        self.sim_task.abort();
        self.handle.stop().await;
        let _ = self.sim_task.await;
    }

    /// Waits until the server ends.
    pub async fn wait(self) {
        self.handle.wait().await;
    }
}

/// What a member cluster serves: the built-in kinds, Pods and Nodes, and access reviews.
pub fn member_registry() -> Arc<Registry> {
    let registry = Registry::new();
    for def in flotilla_kinds::builtin_resources()
        .into_iter()
        .chain(flotilla_kinds::cluster_resources())
        .chain(flotilla_apiserver::reviews::review_resources())
    {
        registry.register(def);
    }
    Arc::new(registry)
}

/// `pods/log`: simulated containers write nothing, but the pod must exist.
struct PodLogs;

#[async_trait::async_trait]
impl SubresourceHandler for PodLogs {
    async fn handle(
        &self,
        server: &Arc<ApiServer>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        _req: axum::extract::Request,
        _user: &UserInfo,
    ) -> axum::response::Response {
        use axum::response::IntoResponse;
        let name = path.name.as_deref().unwrap_or_default();
        let objects = flotilla_apiserver::objects::Objects::new(def, &server.storage);
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

/// Prepares certificates and storage, bootstraps namespaces and RBAC policy, starts the
/// simulation, binds, writes the kubeconfigs and serves.
pub async fn start(opts: MemberOptions) -> Result<RunningMember, MemberError> {
    std::fs::create_dir_all(&opts.data_dir).map_err(|source| MemberError::CreateDataDir {
        path: opts.data_dir.clone(),
        source,
    })?;
    let pki = flotilla_pki::ensure_server_pki(&opts.data_dir, &[])?;
    let storage: Arc<dyn Storage> = if opts.in_memory {
        Arc::new(MemoryStorage::new())
    } else {
        Arc::new(EmbeddedStorage::open(
            &opts.data_dir,
            EmbeddedOptions::default(),
        )?)
    };
    let tokens = StaticTokens::parse(
        &format!(
            "{},{FLOTILLA_USER},{FLOTILLA_USER},\"system:masters\"",
            opts.token
        ),
        "member-sim token",
    )?;
    let options = ServerOptions {
        tokens: Some(Arc::new(tokens)),
        rbac: Some(Arc::new(flotilla_rbac::RbacAuthorizer::new())),
        ..ServerOptions::default()
    };
    let server =
        ApiServer::with_options(member_registry(), storage, ServerConfig::default(), options);
    server.add_subresource_handler("", "pods", "log", Arc::new(PodLogs));
    flotilla_host::ensure_system_namespaces(&server).await?;
    flotilla_host::ensure_bootstrap_policy(&server).await?;
    server.start_background().await?;

    let readiness = sim::NodeReadiness::default();
    let poke = Arc::new(Notify::new());
    let simulation = sim::Sim::new(
        server.clone(),
        sim::SimConfig {
            name: opts.name.clone(),
            nodes: opts.nodes,
            node_cpu: opts.node_cpu.clone(),
            node_memory: opts.node_memory.clone(),
            node_pods: opts.node_pods,
            ready_delay: opts.ready_delay,
        },
        readiness.clone(),
        poke.clone(),
    )
    .ok_or(MemberError::MissingResource)?;
    let sim_task = tokio::spawn(simulation.run());

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
    let addr = SocketAddr::new(opts.bind_address, opts.secure_port);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| MemberError::Listen { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| MemberError::Listen { addr, source })?;
    let url = https_url(addr);

    let kubeconfig = opts.data_dir.join("kubeconfig");
    let mut kc = Kubeconfig::new_client_cert(
        &url,
        &opts.name,
        "admin",
        &pki.ca.cert_pem,
        &pki.admin.cert_pem,
        &pki.admin.key_pem,
    );
    let token_kc = Kubeconfig::new_token(
        &url,
        &opts.name,
        FLOTILLA_USER,
        &pki.ca.cert_pem,
        &opts.token,
    );
    kc.users.extend(token_kc.users.iter().cloned());
    let mut ctx = token_kc.contexts.clone();
    for c in &mut ctx {
        c.name = format!("{}-flotilla", opts.name);
    }
    kc.contexts.extend(ctx);
    kc.write(&kubeconfig)?;
    let token_kubeconfig = opts.data_dir.join("kubeconfig-flotilla");
    token_kc.write(&token_kubeconfig)?;

    let handle = ServerHandle::spawn(listener, tls, server.router(), trust)
        .map_err(|source| MemberError::Listen { addr, source })?;
    tracing::info!(name = %opts.name, %addr, "member-sim serving");
    Ok(RunningMember {
        name: opts.name,
        addr,
        kubeconfig,
        token_kubeconfig,
        token: opts.token,
        ca_pem: pki.ca.cert_pem.clone(),
        server,
        readiness,
        poke,
        handle,
        sim_task,
    })
}
