//! The `flotillactl` commands: argument parsing, reaching the host from a kubeconfig, and
//! turning a member's kubeconfig into a join. Every check that can fail (name, kubeconfig,
//! context, credentials, host, name in use, member reachability) runs before the first write,
//! so a rejected join leaves nothing on the host.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use flotilla_membership::{Member, MemberCredentials};

/// How long reaching the host may take before a command gives up.
const HOST_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Parser, Debug)]
#[command(
    name = "flotillactl",
    version,
    about = "Operate a Flotilla control plane: join and unjoin member clusters, trigger rescheduling, promote member objects, show cluster capacity"
)]
struct Cli {
    /// Kubeconfig of the Flotilla host API server (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, global = true)]
    kubeconfig: Option<PathBuf>,
    /// Context of the host kubeconfig to use (default: its current context).
    #[arg(long, global = true)]
    context: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Register a member cluster: store its credentials in a Secret in `karmada-cluster` and
    /// create its Push-mode Cluster.
    Join(JoinArgs),
    /// Remove a member cluster: delete its Cluster, wait for its Works to be cleaned up, then
    /// delete its credentials Secret.
    Unjoin(UnjoinArgs),
    /// Schedule a workload afresh (sets its binding's spec.rescheduleTriggeredAt), e.g. to
    /// spread replicas back onto a recovered cluster; the scheduler otherwise never moves
    /// placed replicas. A cluster the new schedule leaves keeps its copy (a graceful eviction
    /// task) until the replicas that replace it are available.
    Reschedule(RescheduleArgs),
    /// Adopt an object that already runs in a member cluster into Flotilla's management
    /// (template on the host plus a policy placing it there), without recreating it.
    Promote(crate::promote::PromoteArgs),
    /// Show capacity in use and free.
    #[command(subcommand)]
    Top(crate::top::TopCommand),
}

#[derive(Args, Debug)]
struct RescheduleArgs {
    /// What to reschedule: KIND/NAME of the template (e.g. deployment/nginx), or
    /// rb/NAME (ResourceBinding) or crb/NAME (ClusterResourceBinding).
    target: String,
    /// Namespace of the template or ResourceBinding.
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
}

/// The binding a reschedule target names: (namespace or None for a ClusterResourceBinding,
/// binding name). A template's binding is `<name>-<kind lowercased>`, as the detector names it.
fn binding_for(target: &str, namespace: &str) -> anyhow::Result<(Option<String>, String)> {
    let (kind, name) = target
        .split_once('/')
        .filter(|(k, n)| !k.is_empty() && !n.is_empty() && !n.contains('/'))
        .ok_or_else(|| {
            anyhow::anyhow!("expected KIND/NAME (e.g. deployment/nginx, rb/NAME), got {target:?}")
        })?;
    let kind = kind.to_ascii_lowercase();
    let namespaced = |n: &str| Ok((Some(namespace.to_string()), n.to_string()));
    let cluster = |n: &str| Ok((None, n.to_string()));
    match kind.as_str() {
        "rb" | "resourcebinding" | "resourcebindings" => namespaced(name),
        "crb" | "clusterresourcebinding" | "clusterresourcebindings" => cluster(name),
        _ => {
            let (singular, cluster_scoped) = crate::kinds::alias(&kind);
            let binding = format!("{name}-{singular}");
            if cluster_scoped {
                cluster(&binding)
            } else {
                namespaced(&binding)
            }
        }
    }
}

async fn reschedule(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    args: RescheduleArgs,
) -> anyhow::Result<()> {
    use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
    use kube::core::GroupVersionKind;
    let (namespace, name) = binding_for(&args.target, &args.namespace)?;
    let host = host_client(kubeconfig, context).await?;
    let (kind, plural) = match namespace {
        Some(_) => ("ResourceBinding", "resourcebindings"),
        None => ("ClusterResourceBinding", "clusterresourcebindings"),
    };
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", kind),
        plural,
    );
    let api: Api<DynamicObject> = match &namespace {
        Some(ns) => Api::namespaced_with(host, ns, &resource),
        None => Api::all_with(host, &resource),
    };
    let now = k8s_openapi::jiff::Timestamp::now().to_string();
    let patch = serde_json::json!({"spec": {"rescheduleTriggeredAt": now}});
    let shown = match &namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map_err(|e| match e {
            kube::Error::Api(s) if s.code == 404 => {
                anyhow::anyhow!("{shown} not found (is the workload propagated by a policy?)")
            }
            other => anyhow::Error::new(other).context(format!("updating {shown}")),
        })?;
    println!("{shown} rescheduling triggered at {now}");
    Ok(())
}

#[derive(Args, Debug)]
struct JoinArgs {
    /// Name of the cluster (lowercase letters, digits and '-', at most 48 characters).
    name: String,
    /// Kubeconfig of the member cluster; its server becomes the Cluster's apiEndpoint.
    #[arg(long)]
    cluster_kubeconfig: PathBuf,
    /// Context of the member kubeconfig to use (default: its current context).
    #[arg(long)]
    cluster_context: Option<String>,
    /// The cluster's provider (spec.provider).
    #[arg(long)]
    cluster_provider: Option<String>,
    /// The cluster's region (spec.region).
    #[arg(long)]
    cluster_region: Option<String>,
    /// The cluster's zone (spec.zone).
    #[arg(long)]
    cluster_zone: Option<String>,
    /// A label for the Cluster, KEY=VALUE (repeatable).
    #[arg(long = "cluster-label", value_name = "KEY=VALUE", value_parser = parse_label)]
    cluster_labels: Vec<(String, String)>,
    /// Run every check (kubeconfig, host, name in use, member probe) and send the writes with
    /// dryRun=All, so the host validates them, but store nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Args, Debug)]
struct UnjoinArgs {
    /// Name of the cluster.
    name: String,
    /// How long to wait for the cluster's Works to be cleaned up and its Cluster to be gone
    /// (e.g. 60s, 2m, 500ms).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    wait_timeout: Duration,
}

fn parse_label(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not KEY=VALUE"))?;
    flotilla_membership::validate_label(key, value).map_err(|e| e.to_string())?;
    Ok((key.to_string(), value.to_string()))
}

/// `90`, `90s`, `2m`, `1h`, `500ms`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a duration (e.g. 60s, 2m, 500ms)");
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| bad())?;
    match unit {
        "" | "s" => Ok(Duration::from_secs(n)),
        "ms" => Ok(Duration::from_millis(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        _ => Err(bad()),
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", describe(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes on one line, without repeating a cause its parent already shows.
fn describe(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = flotilla_membership::error_chain(cause);
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Join(args) => join(cli.kubeconfig, cli.context, args).await,
        Command::Unjoin(args) => unjoin(cli.kubeconfig, cli.context, args).await,
        Command::Reschedule(args) => reschedule(cli.kubeconfig, cli.context, args).await,
        Command::Promote(args) => {
            crate::promote::promote(host_client(cli.kubeconfig, cli.context), args).await
        }
        Command::Top(command) => {
            crate::top::top(host_client(cli.kubeconfig, cli.context), command).await
        }
    }
}

/// The host kubeconfig files: `--kubeconfig`, else every path in `$KUBECONFIG`, else
/// `~/.kube/config`.
fn host_kubeconfig_paths(flag: Option<PathBuf>) -> anyhow::Result<Vec<PathBuf>> {
    if let Some(path) = flag {
        return Ok(vec![path]);
    }
    if let Some(env) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        let paths: Vec<PathBuf> = std::env::split_paths(&env)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        if !paths.is_empty() {
            return Ok(paths);
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match home.map(|h| h.join(".kube").join("config")) {
        Some(path) if path.is_file() => Ok(vec![path]),
        _ => bail!(
            "no kubeconfig for the host: give --kubeconfig, set KUBECONFIG, or create ~/.kube/config"
        ),
    }
}

/// A client for the host that has answered `/version`, so later errors are about the
/// request, not about reaching the host.
async fn host_client(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
) -> anyhow::Result<kube::Client> {
    let paths = host_kubeconfig_paths(kubeconfig)?;
    let shown = paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    let mut merged: Option<kube::config::Kubeconfig> = None;
    for path in &paths {
        let kc = kube::config::Kubeconfig::read_from(path)
            .with_context(|| format!("reading the host kubeconfig {}", path.display()))?;
        merged = Some(match merged {
            None => kc,
            Some(m) => m
                .merge(kc)
                .with_context(|| format!("merging the host kubeconfig {}", path.display()))?,
        });
    }
    let kc = merged.ok_or_else(|| anyhow!("no kubeconfig for the host"))?;
    let options = kube::config::KubeConfigOptions {
        context: context.clone(),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &options)
        .await
        .with_context(|| format!("using the host kubeconfig {shown}"))?;
    config.connect_timeout = Some(HOST_TIMEOUT);
    // flotillactl works on the control plane's own objects: reads of merged kinds answer from
    // the host's templates, not the members' merged view.
    config.headers.push((
        http::HeaderName::from_static(flotilla_names::TEMPLATE_READ_HEADER),
        http::HeaderValue::from_static(flotilla_names::TEMPLATE_READ_VALUE),
    ));
    let url = config.cluster_url.to_string();
    let client = kube::Client::try_from(config)
        .with_context(|| format!("building a client for the host at {url}"))?;
    match tokio::time::timeout(HOST_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(client),
        Ok(Err(e)) => Err(anyhow!(e).context(format!(
            "cannot reach the host API server at {url} (kubeconfig {shown})"
        ))),
        Err(_) => bail!(
            "cannot reach the host API server at {url} (kubeconfig {shown}): no answer within {HOST_TIMEOUT:?}"
        ),
    }
}

/// Reads the member's kubeconfig and context into an endpoint, credentials and whether TLS
/// verification is off.
fn member_from_kubeconfig(
    path: &Path,
    context: Option<&str>,
) -> anyhow::Result<(String, MemberCredentials, bool)> {
    if !path.is_file() {
        bail!(
            "the cluster kubeconfig {} does not exist or is not a file",
            path.display()
        );
    }
    let kc = flotilla_pki::Kubeconfig::load(path)
        .with_context(|| format!("the cluster kubeconfig {} is not usable", path.display()))?;
    let available = || {
        let names: Vec<&str> = kc.contexts.iter().map(|c| c.name.as_str()).collect();
        if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        }
    };
    let resolved = match context {
        Some(name) if !kc.contexts.iter().any(|c| c.name == name) => bail!(
            "context {name} not found in {}; available: {}",
            path.display(),
            available()
        ),
        None if kc.current_context.as_deref().is_none_or(|c| c.is_empty()) => {
            bail!(
                "{} has no current-context; choose one with --cluster-context (available: {})",
                path.display(),
                available()
            )
        }
        _ => kc.context(context).with_context(|| {
            format!(
                "reading context {} of {}",
                context
                    .or(kc.current_context.as_deref())
                    .unwrap_or_default(),
                path.display()
            )
        })?,
    };
    let credentials = MemberCredentials::from_context(&resolved);
    let ctx = &resolved.context_name;
    if !credentials.authenticates() {
        bail!(
            "context {ctx} in {} has no credentials the host can store: it needs a token or a \
             client certificate and key (user {:?})",
            path.display(),
            resolved.user_name
        );
    }
    let insecure = resolved.insecure_skip_tls_verify;
    if credentials.ca_pem.is_none() && !insecure && resolved.server.starts_with("https://") {
        bail!(
            "context {ctx} in {} gives no certificate-authority for cluster {:?}: the host needs \
             the member's CA to verify it (or insecure-skip-tls-verify: true)",
            path.display(),
            resolved.cluster_name
        );
    }
    let endpoint = resolved.server.trim_end_matches('/').to_string();
    Ok((endpoint, credentials, insecure))
}

async fn join(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    args: JoinArgs,
) -> anyhow::Result<()> {
    let name = args.name;
    flotilla_membership::validate_cluster_name(&name)?;
    let (endpoint, credentials, insecure) =
        member_from_kubeconfig(&args.cluster_kubeconfig, args.cluster_context.as_deref())?;
    flotilla_membership::validate_endpoint(&name, &endpoint)?;
    let host = host_client(kubeconfig, context).await?;
    flotilla_membership::ensure_not_joined(&host, &name).await?;
    flotilla_membership::probe_member(&name, &credentials, &endpoint, insecure).await?;
    let member = Member {
        name: name.clone(),
        api_endpoint: endpoint,
        credentials,
        labels: args.cluster_labels.into_iter().collect::<BTreeMap<_, _>>(),
        region: args.cluster_region,
        zone: args.cluster_zone,
        provider: args.cluster_provider,
    };
    let options = flotilla_membership::JoinOptions {
        insecure_skip_tls_verification: insecure,
        dry_run: args.dry_run,
    };
    flotilla_membership::join_new(&host, &member, &options).await?;
    if args.dry_run {
        println!("cluster({name}) can be joined (dry run: nothing was written)");
    } else {
        println!("cluster({name}) is joined successfully");
    }
    Ok(())
}

async fn unjoin(
    kubeconfig: Option<PathBuf>,
    context: Option<String>,
    args: UnjoinArgs,
) -> anyhow::Result<()> {
    let name = args.name;
    flotilla_membership::validate_cluster_name(&name)?;
    let host = host_client(kubeconfig, context).await?;
    let report = flotilla_membership::unjoin_and_wait(&host, &name, args.wait_timeout).await?;
    let namespace = flotilla_names::karmada::execution_namespace(&name);
    if !report.works_left.is_empty() {
        eprintln!(
            "warning: {} Works remain in {namespace} ({}); no cluster controller removed them",
            report.works_left.len(),
            report.works_left.join(", ")
        );
    } else if report.execution_namespace_left {
        eprintln!("warning: the execution namespace {namespace} still exists");
    }
    if !report.cluster_deleted {
        eprintln!("cluster {name} had no Cluster object; removed its leftover credentials Secret");
    }
    println!("cluster({name}) is unjoined successfully");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn reschedule_targets_name_the_binding() {
        let b = |t: &str| binding_for(t, "web").unwrap();
        assert_eq!(
            b("deployment/nginx"),
            (Some("web".into()), "nginx-deployment".into())
        );
        assert_eq!(
            b("deploy/nginx"),
            (Some("web".into()), "nginx-deployment".into())
        );
        assert_eq!(b("sts/db"), (Some("web".into()), "db-statefulset".into()));
        assert_eq!(
            b("rb/x-deployment"),
            (Some("web".into()), "x-deployment".into())
        );
        assert_eq!(b("crb/ns1-namespace"), (None, "ns1-namespace".into()));
        assert_eq!(b("namespace/ns1"), (None, "ns1-namespace".into()));
        assert_eq!(b("MyApp/a"), (Some("web".into()), "a-myapp".into()));
        for bad in ["nginx", "/x", "deploy/", "a/b/c"] {
            assert!(binding_for(bad, "web").is_err(), "{bad}");
        }
    }

    #[test]
    fn the_command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_and_labels_parse() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("5d").is_err());
        assert_eq!(
            parse_label("env=prod"),
            Ok(("env".to_string(), "prod".to_string()))
        );
        assert_eq!(parse_label("a=").map(|l| l.1), Ok(String::new()));
        assert!(parse_label("env").is_err());
        assert!(parse_label("bad key=x").is_err());
    }

    #[test]
    fn join_flags_parse() {
        let cli = Cli::try_parse_from([
            "flotillactl",
            "join",
            "m1",
            "--cluster-kubeconfig",
            "/k",
            "--cluster-label",
            "a=b",
            "--cluster-label",
            "c=d",
            "--cluster-region",
            "eu",
        ])
        .unwrap();
        let Command::Join(args) = cli.command else {
            panic!("not join")
        };
        assert_eq!(args.cluster_labels.len(), 2);
        assert_eq!(args.cluster_region.as_deref(), Some("eu"));
        assert!(Cli::try_parse_from(["flotillactl", "join", "m1"]).is_err());
    }

    #[test]
    fn a_missing_context_lists_the_available_ones() {
        let dir = std::env::temp_dir().join(format!("flotillactl-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("kc");
        let kc = flotilla_pki::Kubeconfig::new_token("https://127.0.0.1:1", "a", "u", "CA", "t");
        kc.write(&path).unwrap();
        let err = member_from_kubeconfig(&path, Some("nope"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!("context nope not found in {}; available: a", path.display())
        );
        let (endpoint, creds, insecure) = member_from_kubeconfig(&path, None).unwrap();
        assert_eq!(endpoint, "https://127.0.0.1:1");
        assert_eq!(creds.token.as_deref(), Some("t"));
        assert!(!insecure);
        let err = member_from_kubeconfig(&dir.join("missing"), None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not exist"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
