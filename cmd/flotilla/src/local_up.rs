//! `flotilla local-up`: the whole control plane in one process for development and the e2e
//! tests. The host API server, behind it through an APIService over loopback TLS (as in a
//! split deployment) the aggregated API server, the controller-manager's controllers, the
//! scheduler, and N simulated member clusters joined to it; stopped in reverse order.
//!
//! The members differ by default (capacity, region, zone) so that capacity division and
//! spread constraints have something to choose between; `--member` describes them instead.
//! Bad input (a directory that is not a Flotilla data directory, a port in use, a bad
//! `--member`) is refused before anything is written.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use flotilla_host::HostOptions;

#[derive(Args, Debug)]
pub struct LocalUpArgs {
    /// Simulated member clusters to start (member1..memberN, with different capacities,
    /// regions and zones); ignored when `--member` is given.
    #[arg(long, default_value_t = 3)]
    members: u32,
    /// One simulated member, instead of the defaults (repeatable):
    /// `NAME[:nodes=N,cpu=C,memory=M,pods=P,region=R,zone=Z]`,
    /// e.g. `edge:nodes=2,cpu=4,memory=8Gi,region=ap-south-1,zone=ap-south-1a`.
    #[arg(long = "member", value_name = "SPEC")]
    member: Vec<MemberSpec>,
    /// While this file exists, the members it names (one per line; every member when it is
    /// empty) refuse connections, as a failed cluster would: remove it to bring them back.
    /// Default: `<data-dir>/unreachable`.
    #[arg(long)]
    unreachable_file: Option<PathBuf>,
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
    #[command(flatten)]
    object_size: crate::components::ObjectSizeFlags,
}

/// `flotilla local-up`.
pub async fn run(args: LocalUpArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let members = if args.member.is_empty() {
        default_members(args.members)
    } else {
        args.member.clone()
    };
    check_unique_names(&members)?;
    check_data_dir(&args.data_dir)?;
    if args.port != 0 {
        check_port_free(args.port)?;
    }
    let mut opts = HostOptions::new(&args.data_dir);
    opts.secure_port = args.port;
    opts.token_auth_file = args.token_auth_file;
    args.inflight.apply(&mut opts.server);
    args.object_size.apply(&mut opts.server);
    opts.storage = args.storage.choice("host")?;
    let components = LocalComponents {
        aggregated_storage: args.storage.choice("aggregated")?,
        controllers: args.clusters.options(),
        controller_threads: args.clusters.controller_threads,
        controller_nice: args.clusters.controller_nice,
        propagation: args.propagation.options(),
        scheduler: args.scheduler.options(),
        merged_host: args.merged.host_config()?,
        merged_aggregated: args.merged.aggregated_options(&args.merged_server)?,
    };
    let failures = flotilla_membersim::FailureFiles {
        unreachable: Some(
            args.unreachable_file
                .clone()
                .unwrap_or_else(|| args.data_dir.join(UNREACHABLE_FILE)),
        ),
        unhealthy: None,
    };
    serve_local_up(opts, &members, components, failures, started).await
}

/// The in-process components of local-up besides the servers.
struct LocalComponents {
    controllers: flotilla_cluster_controllers::ControllerManagerOptions,
    controller_threads: u16,
    controller_nice: i32,
    propagation: flotilla_propagation::PropagationOptions,
    scheduler: flotilla_scheduler_controller::SchedulerOptions,
    merged_host: flotilla_host::merged_reads::MergedReadsConfig,
    merged_aggregated: Option<flotilla_aggregated::search::MergedReadOptions>,
    aggregated_storage: flotilla_etcd::StorageChoice,
}

/// local-up: the host, behind it through an APIService over loopback TLS (as in a split
/// deployment) the aggregated API server, the controller-manager's controllers, the
/// scheduler, and N simulated member clusters joined to it.
async fn serve_local_up(
    opts: HostOptions,
    specs: &[MemberSpec],
    components: LocalComponents,
    failures: flotilla_membersim::FailureFiles,
    started: Instant,
) -> anyhow::Result<()> {
    let data_dir = opts.data_dir.clone();
    // Members store what propagation sends them: the host's limit holds there too.
    let max_object_bytes = opts.server.max_object_bytes;
    let steps = 3 + specs.len() + usize::from(!specs.is_empty());
    let mut step = 0;
    let mut progress = |what: String| {
        step += 1;
        eprintln!("[{step}/{steps}] {what}");
    };
    progress(format!(
        "starting the host API server in {}",
        data_dir.display()
    ));
    let host = flotilla_host::start(opts)
        .await
        .with_context(|| format!("starting the API server in {}", data_dir.display()))?;
    progress("starting the aggregated API server (cluster.karmada.io, search.karmada.io)".into());
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
        // Merged reads read templates from the host's store directly.
        Some(std::sync::Arc::new(
            flotilla_aggregated::search::HostTemplates::new(&host.server),
        )),
        components.aggregated_storage.clone(),
    )
    .await
    .context("starting the aggregated API server behind v1alpha1.cluster.karmada.io")?;
    if let Some(store) = aggregated.merged_store.clone() {
        // In one process the host calls the aggregated server's merged store directly.
        flotilla_host::merged_reads::install(
            &host.server,
            flotilla_host::merged_reads::ReadTransport::InProcess(store),
            &components.merged_host,
        );
    }
    progress("starting the controller-manager and the scheduler".into());
    let controllers = crate::components::ControllerSet::spawn(
        controller_config,
        components.controllers,
        components.propagation,
        components.controller_threads,
        components.controller_nice,
    )?;
    let scheduler = flotilla_scheduler_controller::spawn(scheduler_client, components.scheduler);
    let mut members = Vec::new();
    for spec in specs {
        let name = &spec.name;
        progress(format!(
            "starting and joining member cluster {name} ({spec})"
        ));
        let mut member_opts =
            flotilla_membersim::MemberOptions::new(name, data_dir.join("members").join(name));
        member_opts.nodes = spec.nodes;
        member_opts.node_cpu = spec.cpu.clone();
        member_opts.node_memory = spec.memory.clone();
        member_opts.node_pods = spec.pods;
        member_opts.max_object_bytes = max_object_bytes;
        let member = flotilla_membersim::start(member_opts)
            .await
            .with_context(|| format!("starting member cluster {name}"))?;
        let member_kubeconfig = data_dir.join("members").join(format!("{name}.kubeconfig"));
        std::fs::copy(&member.kubeconfig, &member_kubeconfig)
            .with_context(|| format!("writing {}", member_kubeconfig.display()))?;
        let mut join = flotilla_membership::Member::new(
            name,
            member.url(),
            flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem),
        );
        join.provider = Some(MEMBER_PROVIDER.into());
        join.region = spec.region.clone();
        join.zone = spec.zone.clone();
        flotilla_membership::join(&client, &join)
            .await
            .with_context(|| format!("joining member cluster {name}"))?;
        members.push(member);
    }
    if !members.is_empty() {
        progress("waiting for the member clusters to report Ready".into());
        wait_members_ready(&client, members.len(), std::time::Duration::from_secs(60)).await;
    }
    let kubeconfig = std::fs::canonicalize(&host.kubeconfig).unwrap_or(host.kubeconfig.clone());
    // The summary, then the ready line (e2e/tests/support parses "ready at URL"), where the
    // web UI is, and the export to paste, last so that they are what a user sees.
    println!("Flotilla control plane in {}:", data_dir.display());
    println!("  host API server        {}", host.url());
    println!("  aggregated API server  {}", aggregated.url());
    for (spec, member) in specs.iter().zip(&members) {
        println!(
            "  member cluster {:<8} {}  {spec}  kubeconfig {}",
            spec.name,
            member.url(),
            data_dir
                .join("members")
                .join(format!("{}.kubeconfig", spec.name))
                .display()
        );
    }
    println!(
        "Flotilla is ready at {} (aggregated API server at {}, {} member clusters) after {:.1}s",
        host.url(),
        aggregated.url(),
        members.len(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "Web UI at {}{} (sign in with a bearer token, e.g. from `kubectl create token`; see the README's \"Web UI\")",
        host.url(),
        flotilla_ui::PREFIX
    );
    println!("export KUBECONFIG={}", kubeconfig.display());
    let member_refs: Vec<&flotilla_membersim::RunningMember> = members.iter().collect();
    crate::process::until_shutdown(failures, &member_refs).await;
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
    let clusters: kube::Api<flotilla_karmada_api::Cluster> = kube::Api::all(client.clone());
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

/// The default `--unreachable-file`, under the data directory.
const UNREACHABLE_FILE: &str = "unreachable";

/// The `provider` of the simulated members' Clusters.
const MEMBER_PROVIDER: &str = "flotilla-member-sim";

/// One simulated member: its name, capacity and topology (`--member`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberSpec {
    pub name: String,
    pub nodes: u32,
    /// Per-node CPU and memory, as quantities.
    pub cpu: String,
    pub memory: String,
    /// Pods per node.
    pub pods: u32,
    pub region: Option<String>,
    pub zone: Option<String>,
}

impl MemberSpec {
    fn new(name: impl Into<String>, nodes: u32, cpu: &str, memory: &str) -> Self {
        Self {
            name: name.into(),
            nodes,
            cpu: cpu.into(),
            memory: memory.into(),
            pods: 110,
            region: None,
            zone: None,
        }
    }

    fn in_zone(mut self, region: &str, zone: &str) -> Self {
        self.region = Some(region.into());
        self.zone = Some(zone.into());
        self
    }
}

impl std::fmt::Display for MemberSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} nodes of {} CPU, {} memory, {} pods",
            self.nodes, self.cpu, self.memory, self.pods
        )?;
        if let Some(region) = &self.region {
            write!(f, ", region {region}")?;
        }
        if let Some(zone) = &self.zone {
            write!(f, ", zone {zone}")?;
        }
        Ok(())
    }
}

impl FromStr for MemberSpec {
    /// What is wrong, as clap shows it after "invalid value for --member".
    type Err = String;

    /// `NAME[:nodes=N,cpu=C,memory=M,pods=P,region=R,zone=Z]`; unset keys take member-sim's
    /// defaults (3 nodes of 4 CPU, 8Gi memory, 110 pods; no region or zone).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, rest) = s.split_once(':').unwrap_or((s, ""));
        flotilla_membership::validate_cluster_name(name)
            .map_err(|e| flotilla_membership::error_chain(&e))?;
        let mut spec = MemberSpec::new(name, 3, "4", "8Gi");
        for pair in rest.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| format!("{pair:?} is not KEY=VALUE"))?;
            let bad = |key: &str, expected: &str| format!("{key}={value:?} is not {expected}");
            match key {
                "nodes" => {
                    spec.nodes = value
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad("nodes", "a positive number"))?
                }
                "pods" => {
                    spec.pods = value
                        .parse()
                        .ok()
                        .filter(|n| *n > 0)
                        .ok_or_else(|| bad("pods", "a positive number"))?
                }
                "cpu" => {
                    flotilla_membersim::quantity::cpu_millis(value)
                        .filter(|m| *m > 0)
                        .ok_or_else(|| bad("cpu", "a positive CPU quantity (4, 500m)"))?;
                    spec.cpu = value.into();
                }
                "memory" => {
                    flotilla_membersim::quantity::units(value)
                        .filter(|m| *m > 0)
                        .ok_or_else(|| bad("memory", "a positive memory quantity (16Gi)"))?;
                    spec.memory = value.into();
                }
                "region" | "zone" => {
                    flotilla_membership::validate_label(key, value)
                        .map_err(|_| bad(key, "a label value"))?;
                    if key == "region" {
                        spec.region = Some(value.into());
                    } else {
                        spec.zone = Some(value.into());
                    }
                }
                other => {
                    return Err(format!(
                        "unknown key {other:?} (known: nodes, cpu, memory, pods, region, zone)"
                    ));
                }
            }
        }
        Ok(spec)
    }
}

/// The default members: different capacities in two regions (member1 and member2 in two
/// zones of eu-west-1, member3 in us-east-1), so capacity division, zone and region spread
/// all have something to choose between; further members alternate between the regions.
pub fn default_members(count: u32) -> Vec<MemberSpec> {
    (1..=count)
        .map(|i| {
            let name = format!("member{i}");
            match i {
                1 => MemberSpec::new(name, 4, "8", "32Gi").in_zone("eu-west-1", "eu-west-1a"),
                2 => MemberSpec::new(name, 3, "4", "16Gi").in_zone("eu-west-1", "eu-west-1b"),
                3 => MemberSpec::new(name, 2, "2", "8Gi").in_zone("us-east-1", "us-east-1a"),
                _ if i % 2 == 0 => {
                    MemberSpec::new(name, 2, "4", "8Gi").in_zone("eu-west-1", "eu-west-1c")
                }
                _ => MemberSpec::new(name, 2, "4", "8Gi").in_zone("us-east-1", "us-east-1b"),
            }
        })
        .collect()
}

fn check_unique_names(members: &[MemberSpec]) -> anyhow::Result<()> {
    let mut seen = std::collections::BTreeSet::new();
    for m in members {
        if !seen.insert(m.name.as_str()) {
            anyhow::bail!("--member {} is given twice", m.name);
        }
    }
    Ok(())
}

/// What a Flotilla data directory holds (any one of them makes a directory ours).
const DATA_DIR_MARKERS: &[&str] = &["pki", "kubeconfig", "flotilla.redb", "members"];

/// Refuses a data directory that is not Flotilla's: a file, or a directory with other
/// things in it and none of Flotilla's, so that a mistyped `--data-dir` (a home directory,
/// a source tree) is never written into.
fn check_data_dir(dir: &Path) -> anyhow::Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotADirectory || dir.is_file() => {
            anyhow::bail!(
                "--data-dir {} is a file, not a directory: choose a new or empty directory",
                dir.display()
            )
        }
        Err(e) => {
            return Err(e).with_context(|| format!("reading the data directory {}", dir.display()));
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        names.push(entry.file_name().to_string_lossy().into_owned());
    }
    if names.is_empty() || names.iter().any(|n| DATA_DIR_MARKERS.contains(&n.as_str())) {
        return Ok(());
    }
    names.sort();
    names.truncate(5);
    anyhow::bail!(
        "--data-dir {} is not a Flotilla data directory (it holds {}, and none of {}): \
         choose a new or empty directory",
        dir.display(),
        names.join(", "),
        DATA_DIR_MARKERS.join(", ")
    )
}

/// Refuses a host port another process listens on, before anything is started or written.
fn check_port_free(port: u16) -> anyhow::Result<()> {
    match std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => anyhow::bail!(
            "port {port} on 127.0.0.1 is in use (another Flotilla?): stop it, or pass \
             --port 0 to pick a free port"
        ),
        Err(e) => Err(e).with_context(|| format!("checking that port {port} is free")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_specs_parse() {
        let spec: MemberSpec =
            "edge:nodes=2,cpu=500m,memory=4Gi,region=ap-south-1,zone=ap-south-1a"
                .parse()
                .unwrap();
        assert_eq!(spec.nodes, 2);
        assert_eq!(spec.cpu, "500m");
        assert_eq!(spec.region.as_deref(), Some("ap-south-1"));
        assert_eq!(spec.zone.as_deref(), Some("ap-south-1a"));
        let bare: MemberSpec = "m".parse().unwrap();
        assert_eq!(bare, MemberSpec::new("m", 3, "4", "8Gi"));
        for bad in [
            "Edge",
            "edge:nodes=0",
            "edge:cpu=lots",
            "edge:colour=red",
            "edge:nodes",
            "edge:region=not a label",
            "",
        ] {
            assert!(bad.parse::<MemberSpec>().is_err(), "{bad}");
        }
    }

    #[test]
    fn default_members_differ() {
        let members = default_members(3);
        assert_eq!(members.len(), 3);
        assert_ne!(members[0].cpu, members[2].cpu);
        assert_ne!(members[0].region, members[2].region);
        assert_eq!(members[0].region, members[1].region);
        assert_ne!(members[0].zone, members[1].zone);
    }

    #[test]
    fn foreign_data_dirs_are_refused() {
        let root = std::env::temp_dir().join(format!("flotilla-local-up-{}", std::process::id()));
        std::fs::create_dir_all(root.join("dir")).unwrap();
        let dir = root.join("dir");
        assert!(check_data_dir(&dir.as_path().join("new")).is_ok());
        assert!(check_data_dir(dir.as_path()).is_ok());
        std::fs::write(dir.as_path().join("notes.txt"), "mine").unwrap();
        let err = check_data_dir(dir.as_path()).unwrap_err().to_string();
        assert!(
            err.contains("not a Flotilla data directory") && err.contains("notes.txt"),
            "{err}"
        );
        std::fs::create_dir(dir.as_path().join("pki")).unwrap();
        assert!(check_data_dir(dir.as_path()).is_ok());
        assert!(check_data_dir(&dir.as_path().join("notes.txt")).is_err());
        std::fs::remove_dir_all(root).unwrap();
    }
}
