//! Flotilla's host API server: the generic [`flotilla_apiserver`] wired with the built-in
//! kinds, the embedded storage in a data directory, and certificates generated on first
//! start. [`start`] runs it in-process (tests, local-up); `flotilla apiserver` runs it alone.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flotilla_apiserver::{ApiServer, Registry, ServerConfig};
use flotilla_storage::{EmbeddedOptions, EmbeddedStorage, Storage};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Namespaces every cluster has.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

#[derive(Debug, thiserror::Error)]
pub enum HostError {
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
    #[error("creating the system namespace {name}: {message}")]
    SystemNamespace { name: String, message: String },
}

/// How to run the host API server.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// 0 picks a free port.
    pub secure_port: u16,
    /// Extra names/IPs for the serving certificate.
    pub hosts: Vec<String>,
    /// Events kept for watch resumption.
    pub watch_history: usize,
    pub server: ServerConfig,
}

impl HostOptions {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            secure_port: 6443,
            hosts: Vec::new(),
            watch_history: 100_000,
            server: ServerConfig::default(),
        }
    }
}

/// A running host API server.
pub struct RunningHost {
    pub addr: SocketAddr,
    pub kubeconfig: PathBuf,
    pub server: Arc<ApiServer>,
    shutdown: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl RunningHost {
    /// `https://127.0.0.1:<port>` (or the bind address when it is not unspecified).
    pub fn url(&self) -> String {
        url_for(self.addr)
    }

    /// Stops accepting, finishes requests in flight, and waits for the server to end.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Waits until the server ends (it ends after `stop` or when its task fails).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

fn url_for(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    match ip {
        IpAddr::V6(v6) => format!("https://[{v6}]:{}", addr.port()),
        IpAddr::V4(v4) => format!("https://{v4}:{}", addr.port()),
    }
}

/// The registry of every resource the host serves.
pub fn host_registry() -> Arc<Registry> {
    let registry = Registry::new();
    for def in flotilla_kinds::builtin_resources()
        .into_iter()
        .chain(flotilla_kinds::extension_resources())
    {
        registry.register(def);
    }
    Arc::new(registry)
}

/// Opens storage, prepares certificates, binds, writes `<data-dir>/kubeconfig`, and serves.
pub async fn start(opts: HostOptions) -> Result<RunningHost, HostError> {
    std::fs::create_dir_all(&opts.data_dir).map_err(|source| HostError::CreateDataDir {
        path: opts.data_dir.clone(),
        source,
    })?;
    let pki = flotilla_pki::ensure_server_pki(&opts.data_dir, &opts.hosts)?;
    let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(
        &opts.data_dir,
        EmbeddedOptions {
            history: opts.watch_history,
            ..EmbeddedOptions::default()
        },
    )?);
    let registry = host_registry();
    let server = ApiServer::new(registry, storage, opts.server.clone());
    ensure_system_namespaces(&server).await?;
    server.start_background();

    let tls = flotilla_pki::server_config(
        &pki.apiserver.cert_pem,
        &pki.apiserver.key_pem,
        &[pki.ca.cert_pem.clone()],
    )?;
    let addr = SocketAddr::new(opts.bind_address, opts.secure_port);
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| HostError::Listen { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| HostError::Listen { addr, source })?;
    let kubeconfig = opts.data_dir.join("kubeconfig");
    write_admin_kubeconfig(&kubeconfig, &url_for(addr), &pki)?;

    let (tx, rx) = oneshot::channel::<()>();
    let router = server.router();
    let task = tokio::spawn(flotilla_apiserver::serve::serve_tls(
        listener,
        tls,
        router,
        async {
            let _ = rx.await;
        },
    ));
    tracing::info!(%addr, kubeconfig = %kubeconfig.display(), "host API server serving");
    Ok(RunningHost {
        addr,
        kubeconfig,
        server,
        shutdown: Some(tx),
        task,
    })
}

fn write_admin_kubeconfig(
    path: &Path,
    url: &str,
    pki: &flotilla_pki::ServerPki,
) -> Result<(), HostError> {
    let kc = flotilla_pki::Kubeconfig::new_client_cert(
        url,
        "flotilla",
        "admin",
        &pki.ca.cert_pem,
        &pki.admin.cert_pem,
        &pki.admin.key_pem,
    );
    kc.write(path)?;
    Ok(())
}

/// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` when missing.
async fn ensure_system_namespaces(server: &Arc<ApiServer>) -> Result<(), HostError> {
    let Some(def) = server.registry.get("", "v1", "namespaces") else {
        return Ok(());
    };
    let objects = flotilla_apiserver::objects::Objects::new(&def, &server.storage);
    let opts = flotilla_apiserver::objects::WriteOptions {
        field_manager: "flotilla-apiserver".into(),
        field_validation: flotilla_apiserver::request::FieldValidation::Strict,
        dry_run: false,
    };
    for name in SYSTEM_NAMESPACES {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        match objects.create(None, obj, &opts).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(HostError::SystemNamespace {
                    name: name.to_string(),
                    message: e.message,
                });
            }
        }
    }
    Ok(())
}
