//! Command-line parsing and the wiring of each subcommand onto the library crates.

use std::net::IpAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use flotilla_host::HostOptions;

#[derive(Parser, Debug)]
#[command(
    name = "flotilla",
    version,
    about = "Flotilla: a multi-cluster propagation control plane speaking the Karmada APIs"
)]
struct Cli {
    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `flotilla_apiserver=debug`.
    #[arg(long, global = true, env = "FLOTILLA_LOG", default_value = "info")]
    log: String,
    /// Log as JSON lines.
    #[arg(long, global = true)]
    log_json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run the host API server alone.
    Apiserver(ApiserverArgs),
    /// Run the all-in-one control plane locally.
    LocalUp(LocalUpArgs),
}

#[derive(Args, Debug)]
struct ApiserverArgs {
    /// Directory for storage, certificates and the admin kubeconfig.
    #[arg(long, default_value = ".flotilla")]
    data_dir: PathBuf,
    /// Port to serve HTTPS on (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    secure_port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// Extra DNS names or IPs for the serving certificate (repeatable).
    #[arg(long = "tls-san")]
    tls_san: Vec<String>,
    /// Watch events kept so clients can resume watches.
    #[arg(long, default_value_t = 100_000)]
    watch_history: usize,
    /// Largest accepted request body in bytes.
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    max_request_bytes: usize,
    /// Static bearer tokens, one `token,user,uid,"group1,group2"` line each.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Append a JSON line per request to this file.
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// `RBAC` (default) or `AlwaysAllow`.
    #[arg(long, default_value = "RBAC", value_parser = ["RBAC", "AlwaysAllow"])]
    authorization_mode: String,
}

#[derive(Args, Debug)]
struct LocalUpArgs {
    /// Simulated member clusters to start (member1..memberN).
    #[arg(long, default_value_t = 3)]
    members: u32,
    /// Data directory.
    #[arg(long, default_value = ".flotilla")]
    data_dir: PathBuf,
    /// Port of the host API server (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli.log, cli.log_json);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(filter: &str, json: bool) {
    let filter = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().init();
    } else {
        builder.init();
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Apiserver(args) => {
            let mut opts = HostOptions::new(args.data_dir);
            opts.secure_port = args.secure_port;
            opts.bind_address = args.bind_address;
            opts.hosts = args.tls_san;
            opts.watch_history = args.watch_history;
            opts.server.max_body_bytes = args.max_request_bytes;
            opts.token_auth_file = args.token_auth_file;
            opts.audit_log = args.audit_log_path;
            opts.rbac = args.authorization_mode == "RBAC";
            serve_host(opts).await
        }
        Command::LocalUp(args) => {
            let mut opts = HostOptions::new(&args.data_dir);
            opts.secure_port = args.port;
            if args.members > 0 {
                tracing::warn!(
                    members = args.members,
                    "simulated member clusters are not available in this version; starting the host API server only"
                );
            }
            serve_host(opts).await
        }
    }
}

async fn serve_host(opts: HostOptions) -> anyhow::Result<()> {
    let data_dir = opts.data_dir.clone();
    let host = flotilla_host::start(opts)
        .await
        .with_context(|| format!("starting the API server in {}", data_dir.display()))?;
    let kubeconfig = std::fs::canonicalize(&host.kubeconfig).unwrap_or(host.kubeconfig.clone());
    println!("Flotilla API server ready at {}", host.url());
    println!("export KUBECONFIG={}", kubeconfig.display());
    shutdown_signal().await;
    eprintln!("shutting down");
    host.stop().await;
    Ok(())
}

async fn shutdown_signal() {
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
