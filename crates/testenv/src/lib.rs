//! In-process control planes for integration tests and benchmarks of the crates above the
//! servers (controllers, scheduler): the host API server and the aggregated Cluster server
//! registered behind its APIService, wired over loopback TLS exactly as `local-up` does,
//! plus an admin kube-rs client and clients acting as other users. Stand-ins for what
//! members are reached at: any router served over TLS ([`serve_tls`]: members are reached
//! only over TLS) and a listener that records what it is sent ([`Trap`]). Dev-only: nothing in
//! a binary depends on it.

use std::path::Path;
use std::sync::Arc;

use flotilla_aggregated::RunningAggregated;
use flotilla_apiserver::serve::{PeerTrust, ServerHandle};
use flotilla_host::RunningHost;
use parking_lot::Mutex;
use tokio::io::AsyncReadExt;

#[derive(Debug, thiserror::Error)]
pub enum TestEnvError {
    #[error("creating the temporary directory")]
    TempDir(#[source] std::io::Error),
    #[error("reading kubeconfig {path}")]
    Kubeconfig {
        path: String,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("building a client from kubeconfig {path}")]
    Client {
        path: String,
        #[source]
        source: kube::Error,
    },
    #[error("starting the host API server")]
    Host(#[source] flotilla_host::HostError),
    #[error("starting the aggregated API server")]
    Aggregated(#[source] flotilla_aggregated::AggregatedError),
    #[error("making certificates for a test server")]
    Pki(#[from] flotilla_pki::PkiError),
    #[error("listening on loopback")]
    Listen(#[source] std::io::Error),
}

/// A kube-rs client for `context` (default: the current one) of the kubeconfig at `path`.
pub async fn client_for(path: &Path, context: Option<&str>) -> Result<kube::Client, TestEnvError> {
    client_with(path, context, |_| {}).await
}

/// A kube-rs client of the kubeconfig at `path` (an admin's) impersonating `user` in
/// `groups`, with kube-rs's retries of 429 and 503 when `retry`: how the tests act as a
/// user the in-flight limits apply to, which the admin (`system:masters`) is not.
pub async fn client_as(
    path: &Path,
    user: &str,
    groups: &[&str],
    retry: bool,
) -> Result<kube::Client, TestEnvError> {
    client_with(path, None, |config| {
        config.auth_info.impersonate = Some(user.to_string());
        config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
        config.default_retry = retry;
    })
    .await
}

/// A client of `context` of the kubeconfig at `path`, its configuration changed by `tweak`
/// (impersonation, no retries, ...).
pub async fn client_with(
    path: &Path,
    context: Option<&str>,
    tweak: impl FnOnce(&mut kube::Config),
) -> Result<kube::Client, TestEnvError> {
    let shown = path.display().to_string();
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|source| TestEnvError::Kubeconfig {
            path: shown.clone(),
            source,
        })?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|source| TestEnvError::Kubeconfig {
            path: shown.clone(),
            source,
        })?;
    tweak(&mut config);
    kube::Client::try_from(config).map_err(|source| TestEnvError::Client {
        path: shown,
        source,
    })
}

/// Logs to the test's captured output when `RUST_LOG` is set (once per process).
pub fn init_test_logging() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// An axum router served over TLS on a loopback port, with a certificate from a CA of its
/// own: a stand-in for a member's API server.
pub struct TlsServer {
    /// `https://127.0.0.1:PORT`
    pub url: String,
    /// The CA that verifies its certificate (a member Secret's `caBundle`).
    pub ca_pem: String,
    handle: ServerHandle,
}

impl TlsServer {
    pub async fn stop(self) {
        self.handle.stop().await;
    }
}

/// Serves `router` over TLS on a free loopback port.
pub async fn serve_tls(router: axum::Router) -> Result<TlsServer, TestEnvError> {
    let ca = flotilla_pki::CertificateAuthority::generate("test-member-ca")?;
    let loopback = std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    let serving = ca.issue_server("test-member", &[], &[loopback])?;
    let tls = flotilla_pki::server_config(&serving.cert_pem, &serving.key_pem, &[])?;
    let listener = tokio::net::TcpListener::bind((loopback, 0))
        .await
        .map_err(TestEnvError::Listen)?;
    let handle = ServerHandle::spawn(listener, tls, router, Arc::new(PeerTrust::default()))
        .map_err(TestEnvError::Listen)?;
    Ok(TlsServer {
        url: format!("https://{}", handle.addr),
        ca_pem: ca.cert_pem().to_string(),
        handle,
    })
}

/// A loopback listener that answers nothing and keeps every byte it is sent, connection by
/// connection: what a test points a Cluster at to see whether anything (a token above all)
/// would ever reach an endpoint it must not.
pub struct Trap {
    pub port: u16,
    received: Arc<Mutex<Vec<Vec<u8>>>>,
}

/// The most a [`Trap`] keeps of one connection.
const TRAP_KEEPS: usize = 64 * 1024;

impl Trap {
    pub async fn start() -> Result<Trap, TestEnvError> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(TestEnvError::Listen)?;
        let port = listener.local_addr().map_err(TestEnvError::Listen)?.port();
        let received: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
        let kept = received.clone();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let slot = {
                    let mut kept = kept.lock();
                    kept.push(Vec::new());
                    kept.len() - 1
                };
                let kept = kept.clone();
                tokio::spawn(async move {
                    let mut piece = [0u8; 4096];
                    while let Ok(n) = socket.read(&mut piece).await {
                        if n == 0 {
                            break;
                        }
                        let mut kept = kept.lock();
                        if let Some(bytes) = kept.get_mut(slot) {
                            if bytes.len() < TRAP_KEEPS {
                                bytes.extend_from_slice(&piece[..n]);
                            }
                        }
                    }
                });
            }
        });
        Ok(Trap { port, received })
    }

    /// How many connections it accepted.
    pub fn connections(&self) -> usize {
        self.received.lock().len()
    }

    /// Panics unless nothing ever connected.
    pub fn assert_untouched(&self) {
        assert_eq!(
            self.connections(),
            0,
            "the trap was contacted: {}",
            self.received()
        );
    }

    /// Everything it was sent, as text (lossy).
    pub fn received(&self) -> String {
        self.received
            .lock()
            .iter()
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A loopback port nothing listens on (bound and released): an unreachable member.
pub fn unused_port() -> Result<u16, TestEnvError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(TestEnvError::Listen)
}

/// A host and a registered aggregated server in a temporary directory (removed on drop).
pub struct ControlPlane {
    pub dir: tempfile::TempDir,
    pub host: RunningHost,
    pub aggregated: RunningAggregated,
    /// The host's admin client.
    pub client: kube::Client,
}

impl ControlPlane {
    /// Starts both servers on free ports; returns once the host serves Clusters.
    pub async fn start() -> Result<ControlPlane, TestEnvError> {
        init_test_logging();
        let dir = tempfile::tempdir().map_err(TestEnvError::TempDir)?;
        let host_dir = dir.path().join("host");
        let mut opts = flotilla_host::HostOptions::new(&host_dir);
        opts.secure_port = 0;
        let host = flotilla_host::start(opts)
            .await
            .map_err(TestEnvError::Host)?;
        let client = client_for(&host.kubeconfig, None).await?;
        let aggregated = flotilla_aggregated::start_registered(
            &client,
            &host_dir.join("pki"),
            dir.path().join("aggregated"),
            None,
            None,
            flotilla_etcd::StorageChoice::Embedded,
        )
        .await
        .map_err(TestEnvError::Aggregated)?;
        Ok(ControlPlane {
            dir,
            host,
            aggregated,
            client,
        })
    }

    /// Stops the aggregated server, then the host.
    pub async fn stop(self) {
        self.aggregated.stop().await;
        self.host.stop().await;
    }
}

/// (user+system CPU seconds, RSS KiB, peak RSS KiB) of a process: a pid, or `"self"`. What
/// the benchmarks print for the processes they measure; zeros when /proc cannot be read.
pub fn proc_usage(pid: impl std::fmt::Display) -> (f64, u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    // utime and stime are fields 14 and 15 (1-based); after the ')' split, indices 11 and 12.
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|t| t.parse::<f64>().ok()).sum())
        .unwrap_or(0.0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (ticks / 100.0, kib("VmRSS:"), kib("VmHWM:"))
}
