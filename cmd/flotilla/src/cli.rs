//! The command line: the subcommands and their flags, and the wiring of the servers
//! (`apiserver`, `aggregated-apiserver`, `member-sim`) onto the library crates. The
//! controller-manager and the scheduler are in [`crate::components`], local-up's
//! orchestration in [`crate::local_up`], process plumbing in [`crate::process`].

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
    LocalUp(crate::local_up::LocalUpArgs),
    /// Run the aggregated API server (cluster.karmada.io Clusters and their proxy) and
    /// register it with the host through an APIService.
    AggregatedApiserver(AggregatedArgs),
    /// Run a simulated member cluster (API server with simulated nodes and workloads).
    MemberSim(MemberSimArgs),
    /// Run the controllers (cluster execution namespaces, taints and status).
    ControllerManager(crate::components::ControllerManagerArgs),
    /// Run the scheduler (places ResourceBindings on member clusters).
    Scheduler(crate::components::SchedulerArgs),
}

#[derive(Args, Debug)]
struct MemberSimArgs {
    /// The cluster's name (nodes are <name>-node-<i>); with --clusters K > 1, the prefix of
    /// the names <name>1 .. <name>K.
    #[arg(long, default_value = "member")]
    name: String,
    /// Directory for storage, certificates and the kubeconfigs (with --clusters K > 1:
    /// shared certificates in <data-dir>/pki, each cluster's files in <data-dir>/<name>).
    #[arg(long)]
    data_dir: PathBuf,
    /// How many simulated clusters this process runs, each on its own port.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    clusters: u32,
    /// Keep objects in memory only (lost on exit).
    #[arg(long)]
    in_memory: bool,
    /// While this file exists the cluster is unreachable (connections refused, open ones
    /// dropped); when it lists names (one per line), only those clusters are. Checked every
    /// 500 ms.
    #[arg(long)]
    unreachable_file: Option<PathBuf>,
    /// While this file exists the cluster answers but is unhealthy (/readyz, /healthz and
    /// /livez answer 500; the rest of its API keeps working); when it lists names (one per
    /// line), only those clusters are. Checked every 500 ms.
    #[arg(long)]
    unhealthy_file: Option<PathBuf>,
    /// Port to serve HTTPS on (0 picks a free one; must be 0 with --clusters > 1).
    #[arg(long, default_value_t = 0)]
    secure_port: u16,
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    #[arg(long, default_value_t = 3)]
    nodes: u32,
    #[arg(long, default_value = "4")]
    node_cpu: String,
    #[arg(long, default_value = "8Gi")]
    node_memory: String,
    #[arg(long, default_value_t = 110)]
    node_pods: u32,
    /// Bearer token for Flotilla (user flotilla, group system:masters); random if unset.
    #[arg(long, env = "FLOTILLA_MEMBER_TOKEN")]
    token: Option<String>,
    /// Delay every request by this many milliseconds (health checks and API calls alike):
    /// a slow member, as over a slow link.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Run the ServiceAccount token controller (fills `kubernetes.io/service-account-token`
    /// Secrets, as kube-controller-manager does; `karmadactl join` waits on it).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    token_controller: bool,
    /// Images whose pull fails in the simulated clusters (comma-separated regular
    /// expressions; an empty value: none). Pods can also be made to fail by annotation:
    /// sim.flotilla.io/image-pull-failure, sim.flotilla.io/crash-loop, sim.flotilla.io/pending.
    #[arg(long, value_delimiter = ',', default_value = flotilla_membersim::DEFAULT_UNPULLABLE_IMAGES)]
    unpullable_images: Vec<String>,
    /// Keep PodDisruptionBudgets' status (the disruption controller).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    disruption_controller: bool,
    #[command(flatten)]
    object_size: crate::components::ObjectSizeFlags,
}

#[derive(Args, Debug)]
struct AggregatedArgs {
    /// Kubeconfig of the host API server (default: KUBECONFIG, else the in-cluster
    /// service account).
    #[arg(long, env = "KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// Directory for its storage and (when not given) its serving certificate.
    #[arg(long, default_value = ".flotilla/aggregated")]
    data_dir: PathBuf,
    /// Port to serve HTTPS on (0 picks a free one).
    #[arg(long, default_value_t = 7443)]
    secure_port: u16,
    #[arg(long, default_value = "127.0.0.1")]
    bind_address: IpAddr,
    /// CA whose client certificates authenticate directly (default: the host's published
    /// kube-system/extension-apiserver-authentication).
    #[arg(long)]
    client_ca_file: Option<PathBuf>,
    /// CA of the front proxy allowed to send X-Remote-* headers (default: as above).
    #[arg(long)]
    requestheader_client_ca_file: Option<PathBuf>,
    /// Allowed front-proxy certificate CNs (repeatable; default: as above).
    #[arg(long = "requestheader-allowed-names")]
    requestheader_allowed_names: Vec<String>,
    /// Serving certificate and key (PEM); generated under the data directory when absent.
    /// To register the APIServices the file ends with the CA that signed it (their caBundle).
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<PathBuf>,
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<PathBuf>,
    /// The URL the host reaches this server at (default: https://<bind-address>:<port>).
    #[arg(long)]
    advertise_url: Option<String>,
    /// Do not create the APIService on the host (e.g. when deploy/ manifests create it).
    #[arg(long)]
    no_register: bool,
    #[command(flatten)]
    merged: crate::components::MergedReadFlags,
    #[command(flatten)]
    merged_server: crate::components::MergedReadServerFlags,
    #[command(flatten)]
    inflight: crate::components::InFlightFlags,
    #[command(flatten)]
    storage: crate::components::StorageFlags,
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
    /// Issuer (`iss`) of service-account tokens.
    #[arg(long, default_value = "https://kubernetes.default.svc.cluster.local")]
    service_account_issuer: String,
    /// Audiences of this API server, comma-separated (default: the issuer).
    #[arg(long, value_delimiter = ',')]
    api_audiences: Vec<String>,
    /// Longest service-account token issued (e.g. `24h`); longer requests are shortened.
    #[arg(long, value_parser = crate::components::parse_duration)]
    service_account_max_token_expiration: Option<std::time::Duration>,
    /// Longest validity of the client certificates the CSR signer issues (a request's
    /// `spec.expirationSeconds` may ask for less), as kube's `--cluster-signing-duration`.
    #[arg(long, default_value = "8760h", value_parser = crate::components::parse_duration)]
    cluster_signing_duration: std::time::Duration,
    #[command(flatten)]
    merged: crate::components::MergedReadFlags,
    #[command(flatten)]
    inflight: crate::components::InFlightFlags,
    #[command(flatten)]
    storage: crate::components::StorageFlags,
    #[command(flatten)]
    object_size: crate::components::ObjectSizeFlags,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    crate::process::init_logging(&cli.log, cli.log_json);
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

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Apiserver(args) => {
            let mut opts = HostOptions::new(args.data_dir);
            opts.secure_port = args.secure_port;
            opts.bind_address = args.bind_address;
            opts.hosts = args.tls_san;
            opts.watch_history = args.watch_history;
            opts.server.max_body_bytes = args.max_request_bytes;
            args.inflight.apply(&mut opts.server);
            args.object_size.apply(&mut opts.server);
            opts.storage = args.storage.choice("host")?;
            opts.token_auth_file = args.token_auth_file;
            opts.audit_log = args.audit_log_path;
            opts.rbac = args.authorization_mode == "RBAC";
            opts.service_account_issuer = args.service_account_issuer;
            opts.api_audiences = args.api_audiences;
            opts.service_account_max_token_expiration = args.service_account_max_token_expiration;
            opts.signer.max_duration = args.cluster_signing_duration;
            serve_host(opts, args.merged.host_config()?).await
        }
        Command::AggregatedApiserver(args) => run_aggregated(args).await,
        Command::ControllerManager(args) => crate::components::run_controller_manager(args).await,
        Command::Scheduler(args) => crate::components::run_scheduler(args).await,
        Command::MemberSim(args) if args.clusters > 1 => run_member_sims(args).await,
        Command::MemberSim(args) => {
            let files = failure_files(&args);
            let mut opts = flotilla_membersim::MemberOptions::new(&args.name, &args.data_dir);
            opts.secure_port = args.secure_port;
            opts.bind_address = args.bind_address;
            opts.in_memory = args.in_memory;
            opts.nodes = args.nodes;
            opts.node_cpu = args.node_cpu;
            opts.node_memory = args.node_memory;
            opts.node_pods = args.node_pods;
            opts.token = args.token;
            opts.latency = std::time::Duration::from_millis(args.latency_ms);
            opts.max_object_bytes = args.object_size.max_object_bytes;
            opts.token_controller = args.token_controller;
            opts.unpullable_images = non_empty(args.unpullable_images);
            opts.disruption_controller = args.disruption_controller;
            let member = flotilla_membersim::start(opts)
                .await
                .with_context(|| format!("starting member-sim {}", args.name))?;
            let kubeconfig =
                std::fs::canonicalize(&member.kubeconfig).unwrap_or(member.kubeconfig.clone());
            println!(
                "Flotilla member-sim {} ready at {}",
                args.name,
                member.url()
            );
            println!("export KUBECONFIG={}", kubeconfig.display());
            crate::process::until_shutdown(files, &[&member]).await;
            eprintln!("shutting down");
            member.stop().await;
            Ok(())
        }
        Command::LocalUp(args) => crate::local_up::run(args).await,
    }
}

/// The patterns given, without empty ones (`--unpullable-images=` turns the default off).
fn non_empty(patterns: Vec<String>) -> Vec<String> {
    patterns.into_iter().filter(|p| !p.is_empty()).collect()
}

/// `flotilla member-sim --clusters K` with K > 1: K members sharing one process.
async fn run_member_sims(args: MemberSimArgs) -> anyhow::Result<()> {
    if args.secure_port != 0 {
        anyhow::bail!(
            "--secure-port must be 0 with --clusters > 1 (each cluster gets a free port)"
        );
    }
    if args.token.is_some() {
        anyhow::bail!("--token applies to one cluster; with --clusters > 1 each gets its own");
    }
    let files = failure_files(&args);
    let mut opts = flotilla_membersim::ManyOptions::new(&args.name, args.clusters, &args.data_dir);
    opts.bind_address = args.bind_address;
    opts.in_memory = args.in_memory;
    opts.nodes = args.nodes;
    opts.node_cpu = args.node_cpu;
    opts.node_memory = args.node_memory;
    opts.node_pods = args.node_pods;
    opts.latency = std::time::Duration::from_millis(args.latency_ms);
    opts.max_object_bytes = args.object_size.max_object_bytes;
    opts.token_controller = args.token_controller;
    opts.unpullable_images = non_empty(args.unpullable_images);
    opts.disruption_controller = args.disruption_controller;
    let members = flotilla_membersim::start_many(opts)
        .await
        .with_context(|| format!("starting {} member-sims", args.clusters))?;
    for member in &members {
        println!("member-sim {} ready at {}", member.name, member.url());
    }
    let all: Vec<_> = members.iter().collect();
    crate::process::until_shutdown(files, &all).await;
    eprintln!("shutting down");
    members.stop_all().await;
    Ok(())
}

/// The `--unreachable-file` and `--unhealthy-file` of `flotilla member-sim`.
fn failure_files(args: &MemberSimArgs) -> flotilla_membersim::FailureFiles {
    flotilla_membersim::FailureFiles {
        unreachable: args.unreachable_file.clone(),
        unhealthy: args.unhealthy_file.clone(),
    }
}

async fn run_aggregated(args: AggregatedArgs) -> anyhow::Result<()> {
    let host = crate::process::connect_host(args.kubeconfig.as_deref()).await?;
    let (client_ca, request_header_ca, mut names) =
        match (&args.client_ca_file, &args.requestheader_client_ca_file) {
            (Some(c), Some(r)) => (
                crate::process::read_file(c)?,
                crate::process::read_file(r)?,
                Vec::new(),
            ),
            _ => flotilla_aggregated::authentication_config(&host)
                .await
                .context("reading the host's trust for extension API servers")?,
        };
    if !args.requestheader_allowed_names.is_empty() {
        names = args.requestheader_allowed_names.clone();
    }
    let mut opts = flotilla_aggregated::AggregatedOptions::new(
        &args.data_dir,
        host.clone(),
        client_ca,
        request_header_ca,
    );
    opts.secure_port = args.secure_port;
    opts.bind_address = args.bind_address;
    opts.front_proxy_names = names;
    opts.merged_reads = args.merged.aggregated_options(&args.merged_server)?;
    args.inflight.apply(&mut opts.server);
    opts.storage = args.storage.choice("aggregated")?;
    if let (Some(c), Some(k)) = (&args.tls_cert_file, &args.tls_private_key_file) {
        let cert = crate::process::read_file(c)?;
        if !args.no_register {
            // Registering the APIServices needs the CA that signed the certificate.
            flotilla_pki::chain_root_pem(&cert).with_context(|| {
                format!(
                    "--tls-cert-file {}: to register the APIServices it must end with the CA that signed it (or pass --no-register and set their caBundle yourself)",
                    c.display()
                )
            })?;
        }
        opts.serving = Some((cert, crate::process::read_file(k)?));
    }
    let running = flotilla_aggregated::start(opts)
        .await
        .context("starting the aggregated API server")?;
    let url = args.advertise_url.clone().unwrap_or_else(|| running.url());
    if !args.no_register {
        // Several replicas: each is one endpoint of the APIServices' Service. Written first,
        // so the host resolves it when the APIService changes below. Without it one replica
        // still works (through the APIService's URL annotation), so a failure only warns.
        if let Err(e) = flotilla_aggregated::register_endpoint(&host, &url).await {
            tracing::warn!(error = %e, source = ?std::error::Error::source(&e), "registering this replica's EndpointSlice on the host; the host will reach only the replica named in the APIService");
        }
        flotilla_aggregated::register_apiservice(&host, &url, &running.ca_pem)
            .await
            .context("registering v1alpha1.cluster.karmada.io on the host")?;
        if running.merged_reads {
            flotilla_aggregated::register_search_apiservice(&host, &url, &running.ca_pem)
                .await
                .context("registering v1alpha1.search.karmada.io on the host")?;
        }
    }
    println!("Flotilla aggregated API server ready at {}", running.url());
    crate::process::shutdown_signal().await;
    if !args.no_register {
        if let Err(e) = flotilla_aggregated::deregister_endpoint(&host, &url).await {
            tracing::warn!(error = %e, "removing this replica's EndpointSlice");
        }
    }
    running.stop().await;
    Ok(())
}

async fn serve_host(
    opts: HostOptions,
    merged: flotilla_host::merged_reads::MergedReadsConfig,
) -> anyhow::Result<()> {
    let data_dir = opts.data_dir.clone();
    let host = flotilla_host::start(opts)
        .await
        .with_context(|| format!("starting the API server in {}", data_dir.display()))?;
    // Merged reads go through the v1alpha1.search.karmada.io APIService once an aggregated
    // server registers it; until then the template store answers.
    flotilla_host::merged_reads::install(
        &host.server,
        flotilla_host::merged_reads::ReadTransport::ApiService,
        &merged,
    );
    let kubeconfig = std::fs::canonicalize(&host.kubeconfig).unwrap_or(host.kubeconfig.clone());
    println!("Flotilla API server ready at {}", host.url());
    println!("export KUBECONFIG={}", kubeconfig.display());
    crate::process::shutdown_signal().await;
    eprintln!("shutting down");
    host.stop().await;
    Ok(())
}
