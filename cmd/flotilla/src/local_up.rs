//! `flotilla local-up`: the whole control plane in one process for development and the e2e
//! tests. The host API server, behind it through an APIService over loopback TLS (as in a
//! split deployment) the aggregated API server, the controller-manager's controllers, the
//! scheduler, and N simulated member clusters joined to it; stopped in reverse order.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use flotilla_host::HostOptions;

#[derive(Args, Debug)]
pub struct LocalUpArgs {
    /// Simulated member clusters to start (member1..memberN).
    #[arg(long, default_value_t = 3)]
    members: u32,
    /// Data directory.
    #[arg(long, default_value = ".flotilla")]
    data_dir: PathBuf,
    /// Port of the host API server (0 picks a free one).
    #[arg(long, default_value_t = 6443)]
    port: u16,
    /// Static bearer tokens for the host, one `token,user,uid,"group1,group2"` line each.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    #[command(flatten)]
    clusters: crate::components::ClusterControllerFlags,
    #[command(flatten)]
    propagation: crate::components::PropagationFlags,
    #[command(flatten)]
    scheduler: crate::components::SchedulerFlags,
    #[command(flatten)]
    merged: crate::components::MergedReadFlags,
    #[command(flatten)]
    merged_server: crate::components::MergedReadServerFlags,
    #[command(flatten)]
    inflight: crate::components::InFlightFlags,
    #[command(flatten)]
    storage: crate::components::StorageFlags,
}

/// `flotilla local-up`.
pub async fn run(args: LocalUpArgs) -> anyhow::Result<()> {
    let mut opts = HostOptions::new(&args.data_dir);
    opts.secure_port = args.port;
    opts.token_auth_file = args.token_auth_file;
    args.inflight.apply(&mut opts.server);
    opts.storage = args.storage.choice("host")?;
    let components = LocalComponents {
        aggregated_storage: args.storage.choice("aggregated")?,
        controllers: args.clusters.options(),
        propagation: args.propagation.options(),
        scheduler: args.scheduler.options(),
        merged_host: args.merged.host_config()?,
        merged_aggregated: args.merged.aggregated_options(&args.merged_server)?,
    };
    serve_local_up(opts, args.members, components).await
}

/// The in-process components of local-up besides the servers.
struct LocalComponents {
    controllers: flotilla_controllers::ControllerManagerOptions,
    propagation: flotilla_propagation::PropagationOptions,
    scheduler: flotilla_scheduler_runtime::SchedulerOptions,
    merged_host: flotilla_host::merged_reads::MergedReadsConfig,
    merged_aggregated: Option<flotilla_aggregated::search::MergedReadOptions>,
    aggregated_storage: flotilla_etcd::StorageChoice,
}

/// local-up: the host, behind it through an APIService over loopback TLS (as in a split
/// deployment) the aggregated API server, the controller-manager's controllers, the
/// scheduler, and N simulated member clusters joined to it.
async fn serve_local_up(
    opts: HostOptions,
    member_count: u32,
    components: LocalComponents,
) -> anyhow::Result<()> {
    let data_dir = opts.data_dir.clone();
    eprintln!("starting the host API server in {}", data_dir.display());
    let host = flotilla_host::start(opts)
        .await
        .with_context(|| format!("starting the API server in {}", data_dir.display()))?;
    eprintln!("starting the aggregated API server (cluster.karmada.io, search.karmada.io)");
    // The components read the template store (their group bypasses merged reads), each as
    // its own user with only its own ClusterRole; joining the members is an operator's act.
    let client = crate::process::host_client(&host.components_kubeconfig).await?;
    let component_client = |identity: flotilla_pki::ComponentIdentity| {
        crate::process::host_client_owned(flotilla_host::component_kubeconfig(&data_dir, &identity))
    };
    let aggregated_client = component_client(flotilla_pki::AGGREGATED_APISERVER).await?;
    let controller_config = crate::process::host_config(&flotilla_host::component_kubeconfig(
        &data_dir,
        &flotilla_pki::CONTROLLER_MANAGER,
    ))
    .await?;
    let scheduler_client = component_client(flotilla_pki::SCHEDULER).await?;
    let aggregated = flotilla_aggregated::start_registered(
        &aggregated_client,
        &data_dir.join("pki"),
        data_dir.join("aggregated"),
        components.merged_aggregated.clone(),
        components.aggregated_storage.clone(),
    )
    .await
    .context("starting the aggregated API server behind v1alpha1.cluster.karmada.io")?;
    if aggregated.merged_reads {
        // In one process the host calls the aggregated server's router in memory.
        flotilla_host::merged_reads::install(
            &host.server,
            flotilla_host::merged_reads::ReadTransport::InProcess(aggregated.server.router()),
            &components.merged_host,
        );
    }
    eprintln!("starting the controller-manager and the scheduler");
    let controllers = crate::components::ControllerSet::spawn(
        controller_config,
        components.controllers,
        components.propagation,
    )?;
    let scheduler = flotilla_scheduler_runtime::spawn(scheduler_client, components.scheduler);
    let mut members = Vec::new();
    for i in 1..=member_count {
        let name = format!("member{i}");
        // Different capacities, so capacity-aware scheduling has something to weigh.
        let (nodes, cpu, memory) = match i {
            1 => (4, "8", "32Gi"),
            2 => (3, "4", "16Gi"),
            3 => (2, "2", "8Gi"),
            _ => (2, "4", "8Gi"),
        };
        eprintln!(
            "starting simulated member cluster {name} ({nodes} nodes of {cpu} CPU and {memory})"
        );
        let mut member_opts =
            flotilla_membersim::MemberOptions::new(&name, data_dir.join("members").join(&name));
        member_opts.nodes = nodes;
        member_opts.node_cpu = cpu.into();
        member_opts.node_memory = memory.into();
        let member = flotilla_membersim::start(member_opts)
            .await
            .with_context(|| format!("starting member cluster {name}"))?;
        let member_kubeconfig = data_dir.join("members").join(format!("{name}.kubeconfig"));
        std::fs::copy(&member.kubeconfig, &member_kubeconfig)
            .with_context(|| format!("writing {}", member_kubeconfig.display()))?;
        let mut join = flotilla_membership::Member::new(
            &name,
            member.url(),
            flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem),
        );
        join.provider = Some("flotilla-member-sim".into());
        flotilla_membership::join(&client, &join)
            .await
            .with_context(|| format!("joining member cluster {name}"))?;
        members.push(member);
    }
    if !members.is_empty() {
        eprintln!("waiting for the member clusters to report Ready");
        wait_members_ready(&client, members.len(), std::time::Duration::from_secs(60)).await;
    }
    let kubeconfig = std::fs::canonicalize(&host.kubeconfig).unwrap_or(host.kubeconfig.clone());
    println!(
        "Flotilla is ready at {} (aggregated API server at {}, {} member clusters)",
        host.url(),
        aggregated.url(),
        members.len()
    );
    println!("export KUBECONFIG={}", kubeconfig.display());
    crate::process::shutdown_signal().await;
    eprintln!("shutting down");
    scheduler.stop().await;
    controllers.stop().await;
    for m in members {
        m.stop().await;
    }
    aggregated.stop().await;
    host.stop().await;
    Ok(())
}

/// Waits (bounded) until `count` Clusters report Ready=True, so that "ready" means usable;
/// a member that stays unready is reported and does not block the start.
async fn wait_members_ready(client: &kube::Client, count: usize, timeout: std::time::Duration) {
    let clusters: kube::Api<flotilla_api::Cluster> = kube::Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let ready = match clusters.list(&Default::default()).await {
            Ok(list) => list.items.iter().filter(|c| c.is_ready()).count(),
            Err(_) => 0,
        };
        if ready >= count {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            eprintln!("warning: only {ready} of {count} member clusters are Ready so far");
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}
