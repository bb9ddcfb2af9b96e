//! In-process control planes for integration tests and benchmarks of the crates above the
//! servers (controllers, scheduler): the host API server and the aggregated Cluster server
//! registered behind its APIService, wired over loopback TLS exactly as `local-up` does,
//! plus an admin kube-rs client. Dev-only: nothing in a binary depends on it.

use std::path::Path;

use flotilla_aggregated::RunningAggregated;
use flotilla_host::RunningHost;

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
}

/// A kube-rs client for `context` (default: the current one) of the kubeconfig at `path`.
pub async fn client_for(path: &Path, context: Option<&str>) -> Result<kube::Client, TestEnvError> {
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
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|source| TestEnvError::Kubeconfig {
            path: shown.clone(),
            source,
        })?;
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
