//! Process plumbing shared by the subcommands: logging, the shutdown signal (and the wait for it
//! while member-sims follow their failure files), the host client and reading files named on
//! the command line. It imports nothing from the other modules.

use anyhow::Context;

/// Logs to stderr through `tracing`, filtered by `filter` (EnvFilter syntax).
pub(crate) fn init_logging(filter: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal());
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// The host configuration as Flotilla's components use it: every read asks for the template
/// store (`X-Flotilla-Read-From: templates`), so the controllers, the scheduler and the
/// aggregated server never see merged reads, whatever identity their kubeconfig carries.
pub(crate) async fn host_config(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Config> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("reading the kubeconfig {}", kubeconfig.display()))?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .with_context(|| format!("using the kubeconfig {}", kubeconfig.display()))?;
    Ok(component_config(config))
}

/// A client for the host from [`host_config`].
pub(crate) async fn host_client(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    client_of(host_config(kubeconfig).await?)
}

/// [`host_client`] for a path the future owns.
pub(crate) async fn host_client_owned(
    kubeconfig: std::path::PathBuf,
) -> anyhow::Result<kube::Client> {
    host_client(&kubeconfig).await
}

fn component_config(mut config: kube::Config) -> kube::Config {
    config.headers.push((
        http::HeaderName::from_static(flotilla_names::TEMPLATE_READ_HEADER),
        http::HeaderValue::from_static(flotilla_names::TEMPLATE_READ_VALUE),
    ));
    config
}

/// A client whose idle connections close (kube-rs's own keeps them for good).
fn client_of(config: kube::Config) -> anyhow::Result<kube::Client> {
    flotilla_controller_runtime::client::kube_client(config)
        .context("building a client for the host")
}

/// The host configuration from `kubeconfig`, else the in-cluster service account.
pub(crate) async fn connect_host_config(
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<kube::Config> {
    match kubeconfig {
        Some(path) => host_config(path).await,
        None => {
            let config = kube::Config::incluster()
                .context("no --kubeconfig and not running in a cluster")?;
            Ok(component_config(config))
        }
    }
}

/// A client for the host from `kubeconfig`, else the in-cluster service account.
pub(crate) async fn connect_host(
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<kube::Client> {
    client_of(connect_host_config(kubeconfig).await?)
}

/// The text of `path`, or an error naming it.
pub(crate) fn read_file(path: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

/// Resolves on SIGINT or SIGTERM.
pub(crate) async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Waits for SIGINT/SIGTERM, meanwhile following the failure files given (if any).
pub(crate) async fn until_shutdown(
    files: flotilla_membersim::FailureFiles,
    members: &[&flotilla_membersim::RunningMember],
) {
    tokio::select! {
        _ = shutdown_signal() => {}
        _ = flotilla_membersim::follow_failure_files(&files, members) => {}
    }
}
