//! The fault and load suite: each fault strikes while a steady stream of writes runs (kube-rs
//! server-side applies and scales, kubectl applies and scales: Deployments, each with its
//! PropagationPolicy dividing it over three members) and the whole propagation pipeline
//! runs as separate processes, as on a real host: `flotilla apiserver`, `aggregated-apiserver`,
//! `scheduler`, `controller-manager`, and three `member-sim`s joined with `flotillactl join`.
//!
//! After each fault, [`load::check_converged`] must hold: every acknowledged write present on
//! the host, every template's binding scheduled and FullyApplied with one Work per target,
//! every target member running its share (ready), no member object that is not a template's
//! and none outside the placement, and the templates' status summed from the members. Each
//! test prints one row of the fault table (fault | load | writes acknowledged | writes found
//! after | time to converge), appended to `$FAULTS_TABLE` when set (`e2e/faults.sh`).
//!
//! The faults, each a test (short in CI with `cargo test`; the `#[ignore]`d `long_*` versions,
//! with more clients, rounds or time, run with `bash e2e/faults.sh --long`):
//! - kill -9 of the host API server, restarted on its data directory and port;
//! - kill -9 of a member's process until the host marks it NotReady, then a restart;
//! - a member flapping (unreachable until NotReady, reachable until Ready, again and again)
//!   with a 30 s toleration: Deployments placed on it before keep their placement in every
//!   version of their bindings (watched), with no eviction task;
//! - a member turning slow (every request +1 s): propagation to each member and merged reads
//!   timed before and after; the fast members' copies arrive before the slow one's, and merged
//!   reads leave no member out;
//! - 200 concurrent clients (a non-admin user, so the in-flight limits apply) past limits of
//!   20 read-only and 10 mutating requests: only 2xx and 429 with Retry-After, no 5xx, no
//!   timeouts, health checks answered 200 throughout; request and health latencies printed.
//!
//! Needs the binaries: `cargo build --bin flotilla --bin flotillactl` (or `FLOTILLA_BIN`,
//! `FLOTILLACTL_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "support/load.rs"]
mod load;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use load::{Load, LoadLog, LoadOptions, MEMBERS, NAMESPACE, ObjectLog};
use serde_json::Value;
use support::{
    ApiserverProcess, Kubectl, Proc, eventually, flotilla_bin, flotillactl_bin, kubectl_binary,
    percentile, run_bounded, start_aggregated_apiserver, start_apiserver_on_port,
    start_member_sim_with,
};

const WAIT: Duration = Duration::from_secs(90);
/// How long convergence after a fault may take before the test fails.
const CONVERGE: Duration = Duration::from_secs(180);

// === The environment ===

struct Member {
    name: String,
    dir: PathBuf,
    port: u16,
    args: Vec<String>,
    /// While this file exists the member is unreachable (member-sim's `--unreachable-file`).
    unreachable_file: PathBuf,
    process: Option<ApiserverProcess>,
}

impl Member {
    fn start(&mut self) {
        let mut args: Vec<String> = self.args.clone();
        args.extend(["--secure-port".to_string(), self.port.to_string()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let p = start_member_sim_with(&self.name, &self.dir, &args);
        self.port = port_of(&p.url);
        self.process = Some(p);
    }

    fn kill9(&mut self) {
        let mut p = self.process.take().expect("member running");
        p.child.kill().unwrap();
        let _ = p.child.wait();
    }

    fn kubeconfig(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }
}

#[derive(Clone)]
struct EnvOptions {
    /// Extra `flotilla apiserver` flags.
    host_args: Vec<String>,
    /// `--latency-ms` of each member.
    member_latency_ms: [u64; 3],
    /// Host API server replicas (sharing one storage, e.g. etcd, through `host_args`); with
    /// more than one, every client reaches them through a [`TcpFailover`].
    host_replicas: usize,
}

impl Default for EnvOptions {
    fn default() -> Self {
        Self {
            host_args: Vec::new(),
            member_latency_ms: [0; 3],
            host_replicas: 1,
        }
    }
}

/// One host API server replica.
struct Host {
    dir: PathBuf,
    port: u16,
    process: Option<ApiserverProcess>,
}

/// A TCP front for several host API server replicas, as a load balancer would be: each
/// connection goes to the next replica that accepts it (round robin), so clients with one
/// URL fail over when a replica dies. TLS passes through untouched (the replicas share their
/// certificates).
struct TcpFailover {
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl TcpFailover {
    /// Must run inside a tokio runtime.
    fn start(backends: Vec<u16>) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                let _ = inbound.set_nodelay(true);
                let first = next.fetch_add(1, Ordering::Relaxed);
                let backends = backends.clone();
                tokio::spawn(async move {
                    for k in 0..backends.len() {
                        let port = backends[(first + k) % backends.len()];
                        let connect = tokio::net::TcpStream::connect(("127.0.0.1", port));
                        if let Ok(Ok(mut out)) =
                            tokio::time::timeout(Duration::from_secs(1), connect).await
                        {
                            let _ = out.set_nodelay(true);
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut out).await;
                            return;
                        }
                    }
                });
            }
        });
        TcpFailover { port, task }
    }
}

impl Drop for TcpFailover {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The kubeconfigs a host writes: the admin's, the components' (reads past merged reads) and
/// each component's own (least privilege).
const KUBECONFIGS: [&str; 5] = [
    "kubeconfig",
    "components.kubeconfig",
    "scheduler.kubeconfig",
    "controller-manager.kubeconfig",
    "aggregated-apiserver.kubeconfig",
];

/// Copies a host's certificates and kubeconfigs (not its storage) from `from` to `to`.
fn copy_host_identity(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.join("pki")).unwrap();
    for entry in std::fs::read_dir(from.join("pki")).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), to.join("pki").join(entry.file_name())).unwrap();
        }
    }
    for name in KUBECONFIGS {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
}

/// `kubeconfig` with its server URL replaced by `url`, written to `to`.
fn rewrite_server(kubeconfig: &Path, url: &str, to: &Path) {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let text: String = text
        .lines()
        .map(|l| match l.split_once("server: ") {
            Some((indent, _)) => format!("{indent}server: {url}\n"),
            None => format!("{l}\n"),
        })
        .collect();
    std::fs::write(to, text).unwrap();
}

struct Env {
    dir: WorkDir,
    hosts: Vec<Host>,
    host_args: Vec<String>,
    /// Where the kubeconfigs every client uses live (the only host's data directory, or the
    /// front's with its URL).
    client_dir: PathBuf,
    front: Option<TcpFailover>,
    _aggregated: ApiserverProcess,
    scheduler: Supervised,
    controller_manager: Supervised,
    members: Vec<Member>,
    kubectl: Kubectl,
    /// Held until every process above is gone (fields drop in order): one fault at a time.
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

/// Fault tests take turns even when the test harness runs two at once (CI runs every test
/// binary with two threads): each starts a whole control plane and a load, so two at once
/// on two cores confound each other's figures, and under that double load the 200-client
/// test twice left a binding unscheduled for 180 s (see issue 14's note).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn port_of(url: &str) -> u16 {
    url.rsplit(':')
        .next()
        .and_then(|p| p.trim_end_matches('/').parse().ok())
        .unwrap_or_else(|| panic!("no port in {url}"))
}

/// A component run as the kubelet runs a container with `restartPolicy: Always`: restarted
/// (its log appended) whenever it exits. Kube's components exit when they lose their Lease
/// and cannot stop in time, which an overloaded host can cause (the 200-client test made the
/// scheduler's renewals miss their deadline on a debug build with other builds running); on
/// a real host the kubelet restarts them, and the suite judges the control plane as it would
/// run there. Restarts are printed and counted.
struct Supervised {
    stop: Arc<AtomicBool>,
    restarts: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Supervised {
    fn restarts(&self) -> u64 {
        self.restarts.load(Ordering::Relaxed)
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `flotilla <args> --kubeconfig K`, its stderr appended to `log`.
fn spawn_component(
    kubeconfig: &Path,
    args: &[String],
    log: &Path,
    stdout: Stdio,
) -> std::process::Child {
    let log_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    Command::new(flotilla_bin())
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(log_file))
        .spawn()
        .unwrap()
}

/// Starts `flotilla <args> --kubeconfig K` with its log in `log`, waits for a stdout line
/// containing `ready`, and keeps it running (see [`Supervised`]).
fn component(kubeconfig: &Path, args: &[&str], log: &Path, ready: &str) -> Supervised {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    let mut child = spawn_component(kubeconfig, &args, log, Stdio::piped());
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let ready = ready.to_string();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains(&ready) {
                let _ = tx.send(());
            }
        }
    });
    let mut proc = Proc(child);
    if rx.recv_timeout(WAIT).is_err() {
        panic!(
            "{args:?} not ready; log:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let restarts = Arc::new(AtomicU64::new(0));
    let thread = {
        let (stop, restarts) = (stop.clone(), restarts.clone());
        let (kubeconfig, log) = (kubeconfig.to_path_buf(), log.to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let Ok(Some(status)) = proc.0.try_wait() else {
                    continue;
                };
                restarts.fetch_add(1, Ordering::Relaxed);
                eprintln!("{args:?} exited ({status}); restarting it, as the kubelet would");
                // The kubelet's first restart back-off.
                std::thread::sleep(Duration::from_secs(1));
                proc = Proc(spawn_component(&kubeconfig, &args, &log, Stdio::null()));
            }
            drop(proc);
        })
    };
    Supervised {
        stop,
        restarts,
        thread: Some(thread),
    }
}

/// The suite's working directory: under `$FAULTS_DIR` when set (kept afterwards, for
/// reading the logs), else a temporary one.
fn work_dir() -> WorkDir {
    match std::env::var_os("FAULTS_DIR") {
        Some(base) => {
            std::fs::create_dir_all(&base).unwrap();
            let d = tempfile::Builder::new()
                .prefix("faults-")
                .tempdir_in(base)
                .unwrap()
                .keep();
            eprintln!("fault suite directory: {}", d.display());
            WorkDir {
                path: d,
                _tmp: None,
            }
        }
        None => {
            let t = tempfile::tempdir().unwrap();
            WorkDir {
                path: t.path().to_path_buf(),
                _tmp: Some(t),
            }
        }
    }
}

/// A directory removed afterwards unless it was asked to be kept.
struct WorkDir {
    path: PathBuf,
    _tmp: Option<tempfile::TempDir>,
}

impl WorkDir {
    fn path(&self) -> &Path {
        &self.path
    }
}

impl Env {
    fn start(opts: EnvOptions) -> Env {
        // A test that failed while holding it poisoned it; the next may still run.
        let one_at_a_time = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = work_dir();
        let host_args = opts.host_args.clone();
        let args: Vec<&str> = host_args.iter().map(String::as_str).collect();
        let mut hosts: Vec<Host> = Vec::new();
        for i in 0..opts.host_replicas {
            let host_dir = dir.path().join(format!("host{i}"));
            if i > 0 {
                copy_host_identity(&hosts[0].dir, &host_dir);
            }
            let p = start_apiserver_on_port(&host_dir, 0, &args);
            hosts.push(Host {
                dir: host_dir,
                port: port_of(&p.url),
                process: Some(p),
            });
        }
        let (client_dir, front) = if opts.host_replicas > 1 {
            let front = TcpFailover::start(hosts.iter().map(|h| h.port).collect());
            let url = format!("https://127.0.0.1:{}", front.port);
            let client_dir = dir.path().join("front");
            copy_host_identity(&hosts[0].dir, &client_dir);
            for name in KUBECONFIGS {
                rewrite_server(&hosts[0].dir.join(name), &url, &client_dir.join(name));
            }
            (client_dir, Some(front))
        } else {
            (hosts[0].dir.clone(), None)
        };
        let admin_kubeconfig = client_dir.join("kubeconfig");
        let aggregated = start_aggregated_apiserver(&client_dir, &dir.path().join("aggregated"));
        let kubectl = Kubectl::new(
            kubectl_binary("kubectl"),
            &admin_kubeconfig,
            &dir.path().join("cache-host"),
        );
        let mut members = Vec::new();
        for (i, name) in MEMBERS.iter().enumerate() {
            let unreachable_file = dir.path().join(format!("{name}.unreachable"));
            let mut m = Member {
                name: name.to_string(),
                dir: dir.path().join(name),
                port: 0,
                args: [
                    "--nodes",
                    "2",
                    "--node-cpu",
                    "16",
                    "--node-memory",
                    "32Gi",
                    "--unreachable-file",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain([
                    unreachable_file.display().to_string(),
                    "--latency-ms".to_string(),
                    opts.member_latency_ms[i].to_string(),
                ])
                .collect(),
                unreachable_file,
                process: None,
            };
            m.start();
            let mut join = Command::new(flotillactl_bin());
            join.arg("--kubeconfig")
                .arg(&admin_kubeconfig)
                .args(["join", name, "--cluster-kubeconfig"])
                .arg(m.kubeconfig())
                .args(["--cluster-context", &format!("{name}-flotilla")]);
            let out = run_bounded(&mut join, WAIT, "flotillactl join");
            assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
            members.push(m);
        }
        let controller_manager = component(
            &client_dir.join("controller-manager.kubeconfig"),
            &[
                "controller-manager",
                "--cluster-status-update-frequency",
                "500ms",
                "--cluster-failure-threshold",
                "1s",
                "--cluster-success-threshold",
                "1s",
                "--cluster-probe-timeout",
                "5s",
            ],
            &dir.path().join("controller-manager.log"),
            "controller-manager running",
        );
        let scheduler = component(
            &client_dir.join("scheduler.kubeconfig"),
            &["scheduler"],
            &dir.path().join("scheduler.log"),
            "scheduler running",
        );
        let env = Env {
            dir,
            hosts,
            host_args,
            client_dir,
            front,
            _aggregated: aggregated,
            scheduler,
            controller_manager,
            members,
            kubectl,
            _one_at_a_time: one_at_a_time,
        };
        for m in MEMBERS {
            env.wait_cluster_ready(m, true);
        }
        env.kubectl.ok(&["create", "namespace", NAMESPACE]);
        env
    }

    fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn admin_kubeconfig(&self) -> PathBuf {
        self.client_dir.join("kubeconfig")
    }

    fn components_kubeconfig(&self) -> PathBuf {
        self.client_dir.join("components.kubeconfig")
    }

    /// The URL clients use: the front's, or the only replica's.
    fn url(&self) -> String {
        let port = self.front.as_ref().map_or(self.hosts[0].port, |f| f.port);
        format!("https://127.0.0.1:{port}")
    }

    /// SIGKILL of host replica `i`.
    fn kill9_host(&mut self, i: usize) {
        let mut p = self.hosts[i].process.take().expect("host running");
        p.child.kill().unwrap();
        let _ = p.child.wait();
    }

    /// Starts host replica `i` again on its data directory and port.
    fn restart_host(&mut self, i: usize) {
        let args: Vec<&str> = self.host_args.iter().map(String::as_str).collect();
        let h = &mut self.hosts[i];
        h.process = Some(start_apiserver_on_port(&h.dir, h.port, &args));
    }

    /// The Cluster's Ready condition status ("True", "False", "Unknown", "" when none).
    fn cluster_ready(&self, name: &str) -> String {
        let out = self.kubectl.run(&[
            "get",
            "cluster",
            name,
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
        ]);
        out.stdout.trim().to_string()
    }

    fn wait_cluster_ready(&self, name: &str, ready: bool) {
        let want = if ready { "True" } else { "False" };
        eventually(WAIT, &format!("cluster {name} Ready={want}"), || {
            let got = self.cluster_ready(name);
            if got == want { Ok(()) } else { Err(got) }
        });
    }

    async fn host_client(&self) -> kube::Client {
        support::kube_client(&self.components_kubeconfig(), None).await
    }

    async fn member_clients(&self) -> Vec<(String, kube::Client)> {
        let mut out = Vec::new();
        for m in &self.members {
            out.push((
                m.name.clone(),
                support::kube_client(&m.kubeconfig(), None).await,
            ));
        }
        out
    }

    /// Waits until everything `log` wrote has converged, timed from `since`.
    async fn converge(&self, log: &LoadLog, since: Instant) -> (Duration, load::Converged) {
        let host = self.host_client().await;
        let members = self.member_clients().await;
        let converged = load::wait_converged(&host, &members, log, since, CONVERGE).await;
        eprintln!(
            "component restarts during the test: scheduler {}, controller-manager {}",
            self.scheduler.restarts(),
            self.controller_manager.restarts()
        );
        converged
    }
}

/// How long the long (on-demand) versions run their faults: `$FAULTS_LONG_ROUNDS`, else 5.
fn long_rounds() -> usize {
    std::env::var("FAULTS_LONG_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5)
}

/// The load of the long crash faults: more clients and Deployments than the CI versions.
fn long_load() -> LoadOptions {
    LoadOptions {
        kube_clients: 6,
        kubectl_clients: 2,
        deployments_per_client: 8,
        ..LoadOptions::default()
    }
}

// === kill -9 of the host API server ===

async fn host_apiserver_killed(rounds: usize, load_opts: LoadOptions) {
    let mut env = Env::start(EnvOptions::default());
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(20, WAIT, "writes before the fault")
        .await;
    let mut fault_end = Instant::now();
    for round in 0..rounds {
        env.kill9_host(0);
        env.restart_host(0);
        fault_end = Instant::now();
        // The clients are writing again (and one round of load runs before the next kill).
        load.wait_acked_more(10, WAIT, &format!("writes after restart {round}"))
            .await;
    }
    let log = load.stop().await;
    assert!(
        log.failed > 0,
        "no write failed: the kill did not happen under load"
    );
    let (took, found) = env.converge(&log, fault_end).await;
    load::print_row(
        &format!("kill -9 of the host API server, restarted on its data dir (x{rounds})"),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_apiserver_kill9_under_load_loses_no_acknowledged_write() {
    host_apiserver_killed(1, LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_host_apiserver_kill9_repeatedly_under_load() {
    host_apiserver_killed(long_rounds(), long_load()).await;
}

// === kill -9 of a member cluster ===

async fn member_killed(rounds: usize, load_opts: LoadOptions) {
    let mut env = Env::start(EnvOptions::default());
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(20, WAIT, "writes before the fault")
        .await;
    let mut fault_end = Instant::now();
    for round in 0..rounds {
        env.members[2].kill9();
        // The host notices; writes go on meanwhile.
        env.wait_cluster_ready("member3", false);
        load.wait_acked_more(10, WAIT, &format!("writes while member3 is down ({round})"))
            .await;
        env.members[2].start();
        fault_end = Instant::now();
        env.wait_cluster_ready("member3", true);
    }
    let log = load.stop().await;
    let (took, found) = env.converge(&log, fault_end).await;
    load::print_row(
        &format!("kill -9 of member cluster member3 until NotReady, restarted (x{rounds})"),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn member_kill9_under_load_converges_after_restart() {
    member_killed(1, LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_member_kill9_repeatedly_under_load() {
    member_killed(long_rounds(), long_load()).await;
}

// === etcd: kill -9 of a host API server replica, and of an etcd member ===

fn etcd_args(etcd: &flotilla_etcd::testing::EtcdCluster) -> Vec<String> {
    vec![
        "--storage".into(),
        "etcd".into(),
        "--etcd-servers".into(),
        etcd.servers_flag(),
    ]
}

async fn host_replica_killed(rounds: usize, load_opts: LoadOptions) {
    let etcd = flotilla_etcd::testing::EtcdCluster::start(1).await;
    let mut env = Env::start(EnvOptions {
        host_args: etcd_args(&etcd),
        host_replicas: 2,
        ..EnvOptions::default()
    });
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(20, WAIT, "writes before the fault")
        .await;
    let mut fault_end = Instant::now();
    for round in 0..rounds {
        let victim = round % 2;
        env.kill9_host(victim);
        // Clients, components and members go on through the other replica.
        load.wait_acked_more(
            10,
            WAIT,
            &format!("writes through the surviving replica ({round})"),
        )
        .await;
        env.restart_host(victim);
        fault_end = Instant::now();
        load.wait_acked_more(5, WAIT, &format!("writes after restart {round}"))
            .await;
    }
    let log = load.stop().await;
    let (took, found) = env.converge(&log, fault_end).await;
    load::print_row(
        &format!(
            "kill -9 of one of two host API server replicas on one etcd (clients through a TCP failover front), restarted (x{rounds})"
        ),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn host_replica_kill9_on_etcd_under_load_loses_nothing() {
    host_replica_killed(1, LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_host_replica_kill9_on_etcd_repeatedly() {
    host_replica_killed(long_rounds(), long_load()).await;
}

async fn etcd_member_killed(rounds: usize, load_opts: LoadOptions) {
    let mut etcd = flotilla_etcd::testing::EtcdCluster::start(3).await;
    let env = Env::start(EnvOptions {
        host_args: etcd_args(&etcd),
        ..EnvOptions::default()
    });
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(20, WAIT, "writes before the fault")
        .await;
    let mut fault_end = Instant::now();
    for round in 0..rounds {
        let victim = round % 3;
        etcd.kill(victim);
        // Two of three members keep a quorum: writes go on.
        load.wait_acked_more(
            10,
            WAIT,
            &format!("writes with etcd member {victim} down ({round})"),
        )
        .await;
        etcd.restart(victim).await;
        fault_end = Instant::now();
        load.wait_acked_more(5, WAIT, &format!("writes after restart {round}"))
            .await;
    }
    let log = load.stop().await;
    let (took, found) = env.converge(&log, fault_end).await;
    load::print_row(
        &format!("kill -9 of one etcd member of three, restarted (x{rounds})"),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_member_kill9_under_load_loses_nothing() {
    etcd_member_killed(1, LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_etcd_member_kill9_repeatedly() {
    etcd_member_killed(long_rounds(), long_load()).await;
}

// === A member flapping ===

/// Deployments written before the flapping and never changed during it: their placement
/// must stay put.
const STEADY: usize = 3;

async fn apply_steady(env: &Env, log: &mut LoadLog, toleration: u32) {
    let client = load::no_retry_client(&env.admin_kubeconfig()).await;
    let pp: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &load::policy_resource());
    let deploys: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, NAMESPACE);
    let params = PatchParams::apply("steady").force();
    for i in 0..STEADY {
        let name = format!("steady-{i}");
        pp.patch(
            &name,
            &params,
            &Patch::Apply(load::policy(&name, Some(toleration))),
        )
        .await
        .unwrap();
        deploys
            .patch(&name, &params, &Patch::Apply(load::deployment(&name, 6)))
            .await
            .unwrap();
        log.policies.insert(name.clone());
        log.deployments.insert(
            name,
            ObjectLog {
                acked: Some(6),
                acked_writes: 1,
                unknown: Vec::new(),
            },
        );
        log.acked += 2;
    }
}

/// Every version of every binding in the namespace, as a watch delivers them.
struct BindingWatch {
    seen: Arc<Mutex<Vec<(Instant, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl BindingWatch {
    fn start(client: kube::Client) -> Self {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let api: Api<DynamicObject> =
            Api::namespaced_with(client, NAMESPACE, &load::binding_resource());
        let sink = seen.clone();
        let task = tokio::spawn(async move {
            let mut stream =
                kube::runtime::watcher(api, kube::runtime::watcher::Config::default()).boxed();
            while let Some(ev) = stream.next().await {
                use kube::runtime::watcher::Event;
                if let Ok(Event::Apply(o) | Event::InitApply(o)) = ev {
                    sink.lock()
                        .unwrap()
                        .push((Instant::now(), serde_json::to_value(o).unwrap()));
                }
            }
        });
        BindingWatch { seen, task }
    }

    fn stop(self) -> Vec<(Instant, Value)> {
        self.task.abort();
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

async fn member_flapping(cycles: usize, load_opts: LoadOptions) {
    // The taints of one down period last far less than this; the placement must not move.
    const TOLERATION: u32 = 30;
    let env = Env::start(EnvOptions::default());
    let mut steady_log = LoadLog::default();
    apply_steady(&env, &mut steady_log, TOLERATION).await;
    // The steady Deployments are placed on all three members, 2/2/2, before the flapping.
    let host = env.host_client().await;
    let bindings: Api<DynamicObject> =
        Api::namespaced_with(host.clone(), NAMESPACE, &load::binding_resource());
    for i in 0..STEADY {
        let name = format!("steady-{i}-deployment");
        let deadline = Instant::now() + WAIT;
        loop {
            if let Ok(rb) = bindings.get(&name).await {
                let rb = serde_json::to_value(rb).unwrap();
                if load::targets(&rb).contains_key("member2") {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "{name} never placed on member2");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let watch = BindingWatch::start(host.clone());
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(10, WAIT, "writes before the fault")
        .await;
    let flap = &env.members[1].unreachable_file;
    let mut longest_down = Duration::ZERO;
    let started = Instant::now();
    for _ in 0..cycles {
        std::fs::write(flap, "").unwrap();
        let down = Instant::now();
        env.wait_cluster_ready("member2", false);
        std::fs::remove_file(flap).unwrap();
        env.wait_cluster_ready("member2", true);
        longest_down = longest_down.max(down.elapsed());
    }
    let fault_end = Instant::now();
    let flapping = started.elapsed();
    load.wait_acked_more(5, WAIT, "writes after the flapping")
        .await;
    let mut log = load.stop().await;
    let versions = watch.stop();
    assert!(
        longest_down < Duration::from_secs(u64::from(TOLERATION)),
        "a down period lasted {longest_down:?}, longer than the toleration: the test proves nothing"
    );
    // The steady bindings kept member2 with its 2 replicas in every version seen.
    let mut seen_steady = 0;
    for (_, rb) in &versions {
        let name = rb["metadata"]["name"].as_str().unwrap_or_default();
        if !name.starts_with("steady-") {
            continue;
        }
        seen_steady += 1;
        let t = load::targets(rb);
        assert_eq!(
            t.get("member2"),
            Some(&2),
            "{name} moved off member2 while it flapped (toleration {TOLERATION}s): {t:?}"
        );
        let evicting = rb["spec"]["gracefulEvictionTasks"]
            .as_array()
            .is_some_and(|ts| !ts.is_empty());
        assert!(!evicting, "{name} got an eviction task: {}", rb["spec"]);
    }
    assert!(seen_steady >= STEADY, "the watch saw the steady bindings");
    log.merge(steady_log);
    let (took, found) = env.converge(&log, fault_end).await;
    eprintln!(
        "flapping: {cycles} down/up cycles in {:.1} s, longest down {:.1} s; {} binding versions seen",
        flapping.as_secs_f64(),
        longest_down.as_secs_f64(),
        versions.len()
    );
    load::print_row(
        &format!(
            "member2 flapping down/up ({cycles} cycles in {:.0} s, toleration {TOLERATION} s): placement kept",
            flapping.as_secs_f64()
        ),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn member_flapping_under_load_keeps_the_placement() {
    member_flapping(2, LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_member_flapping_under_load() {
    member_flapping(4 * long_rounds(), LoadOptions::default()).await;
}

// === A slow member ===

/// Times from writing `name` to its copy showing up in each member, by member.
async fn propagation_times(
    env: &Env,
    name: &str,
    log: &mut LoadLog,
    times: &mut BTreeMap<String, Vec<f64>>,
) {
    let client = load::no_retry_client(&env.admin_kubeconfig()).await;
    let pp: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), NAMESPACE, &load::policy_resource());
    let deploys: Api<k8s_openapi::api::apps::v1::Deployment> = Api::namespaced(client, NAMESPACE);
    let params = PatchParams::apply("probe").force();
    pp.patch(name, &params, &Patch::Apply(load::policy(name, None)))
        .await
        .unwrap();
    let start = Instant::now();
    deploys
        .patch(name, &params, &Patch::Apply(load::deployment(name, 3)))
        .await
        .unwrap();
    log.policies.insert(name.to_string());
    log.deployments.insert(
        name.to_string(),
        ObjectLog {
            acked: Some(3),
            acked_writes: 1,
            unknown: Vec::new(),
        },
    );
    log.acked += 2;
    let members = env.member_clients().await;
    let mut pending: Vec<(String, kube::Client)> = members;
    let deadline = Instant::now() + WAIT;
    while !pending.is_empty() {
        let mut left = Vec::new();
        for (m, c) in pending {
            let api: Api<k8s_openapi::api::apps::v1::Deployment> =
                Api::namespaced(c.clone(), NAMESPACE);
            if api.get_opt(name).await.ok().flatten().is_some() {
                times
                    .entry(m)
                    .or_default()
                    .push(start.elapsed().as_secs_f64());
            } else {
                left.push((m, c));
            }
        }
        pending = left;
        assert!(
            Instant::now() < deadline,
            "{name} never reached every member"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(f64::total_cmp);
    v
}

/// Probes propagation (`probes` new Deployments, timed to each member) and merged reads
/// (`kubectl get deploy` through the host: every member answers, none is left out), under the
/// running load. Returns the times by member and the merged reads' times.
async fn probe_round(
    env: &Env,
    prefix: &str,
    probes: usize,
    log: &mut LoadLog,
) -> (BTreeMap<String, Vec<f64>>, Vec<f64>) {
    let mut times = BTreeMap::new();
    let mut reads = Vec::new();
    for i in 0..probes {
        let name = format!("{prefix}-{i}");
        propagation_times(env, &name, log, &mut times).await;
        let t = Instant::now();
        let out = env.kubectl.run(&["get", "deploy", "-n", NAMESPACE]);
        reads.push(t.elapsed().as_secs_f64());
        assert!(out.status.success(), "{}", out.stderr);
        assert!(
            !out.stderr.contains("missing from this answer"),
            "a member was left out of the merged read: {}",
            out.stderr
        );
        assert!(out.stdout.contains(&name), "{}", out.stdout);
    }
    let times = times.into_iter().map(|(m, v)| (m, sorted(v))).collect();
    (times, sorted(reads))
}

async fn slow_member(probes: usize, latency_ms: u64, load_opts: LoadOptions) {
    let mut env = Env::start(EnvOptions::default());
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(10, WAIT, "writes before the probes")
        .await;
    let mut probe_log = LoadLog::default();
    // Baseline: every member fast.
    let (base, base_reads) = probe_round(&env, "base", probes, &mut probe_log).await;
    // member3 turns slow: every request it serves waits `latency_ms`.
    let m3 = &mut env.members[2];
    m3.kill9();
    let at = m3
        .args
        .iter()
        .position(|a| a == "--latency-ms")
        .expect("--latency-ms");
    m3.args[at + 1] = latency_ms.to_string();
    m3.start();
    env.wait_cluster_ready("member3", true);
    let (slow, slow_reads) = probe_round(&env, "slow", probes, &mut probe_log).await;
    let fault_end = Instant::now();
    let mut log = load.stop().await;
    log.merge(probe_log);
    let (took, found) = env.converge(&log, fault_end).await;
    let median = |t: &BTreeMap<String, Vec<f64>>, m: &str| percentile(&t[m], 0.5);
    for m in MEMBERS {
        println!(
            "slow member: propagation to {m}: p50 {:.2} s (max {:.2} s) with all fast; p50 {:.2} s (max {:.2} s) with member3 slow",
            median(&base, m),
            base[m].last().unwrap(),
            median(&slow, m),
            slow[m].last().unwrap()
        );
    }
    println!(
        "slow member: merged `kubectl get deploy`: p50 {:.2} s (max {:.2} s) with all fast; p50 {:.2} s (max {:.2} s) with member3 slow",
        percentile(&base_reads, 0.5),
        base_reads.last().unwrap(),
        percentile(&slow_reads, 0.5),
        slow_reads.last().unwrap()
    );
    // The fast members do not wait for the slow one: their copies arrive before member3's.
    for fast in ["member1", "member2"] {
        assert!(
            median(&slow, fast) < median(&slow, "member3"),
            "{fast} propagation ({:.2} s) is held up like the slow member3 ({:.2} s)",
            median(&slow, fast),
            median(&slow, "member3")
        );
    }
    load::print_row(
        &format!(
            "slow member3 (+{latency_ms} ms per request): propagation p50 member1 {:.2} s (fast: {:.2} s), member3 {:.2} s (fast: {:.2} s); merged reads p50 {:.2} s (fast: {:.2} s)",
            median(&slow, "member1"),
            median(&base, "member1"),
            median(&slow, "member3"),
            median(&base, "member3"),
            percentile(&slow_reads, 0.5),
            percentile(&base_reads, 0.5),
        ),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_member_under_load_does_not_hold_up_the_others() {
    slow_member(2, 1000, LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_slow_member_under_load() {
    slow_member(4 * long_rounds(), 2000, LoadOptions::default()).await;
}

// === 200 concurrent clients ===

/// What the overload clients saw.
#[derive(Default)]
struct OverloadCounts {
    ok: AtomicU64,
    too_many: AtomicU64,
    too_many_without_retry_after: AtomicU64,
    other_4xx: AtomicU64,
    server_errors: AtomicU64,
    transport_errors: AtomicU64,
    timeouts: AtomicU64,
}

/// One request through `client`: (status, has Retry-After), or the error.
async fn send(client: &kube::Client, req: http::Request<Vec<u8>>) -> Result<(u16, bool), String> {
    match tokio::time::timeout(Duration::from_secs(15), client.send(req.map(Into::into))).await {
        Err(_) => Err("timeout".into()),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(resp)) => {
            let code = resp.status().as_u16();
            let retry_after = resp.headers().contains_key("retry-after");
            // Read the body to the end so the connection is reused.
            let _ = http_body_util_collect(resp).await;
            Ok((code, retry_after))
        }
    }
}

async fn http_body_util_collect(resp: http::Response<kube::client::Body>) -> usize {
    use http_body_util::BodyExt;
    resp.into_body()
        .collect()
        .await
        .map(|b| b.to_bytes().len())
        .unwrap_or(0)
}

/// `/readyz` and `/livez` every 50 ms until stopped: (path, status, seconds).
struct HealthProbes {
    thread: std::thread::JoinHandle<Vec<(String, u16, f64)>>,
}

impl HealthProbes {
    fn start(kubeconfig: &Path, stop: Arc<AtomicBool>) -> Self {
        let kubeconfig = kubeconfig.to_path_buf();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let client = load::no_retry_client(&kubeconfig).await;
                let mut samples = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    for path in ["/readyz", "/livez"] {
                        let req = http::Request::get(path).body(Vec::new()).unwrap();
                        let t = Instant::now();
                        let code = send(&client, req).await.map_or(0, |(code, _)| code);
                        samples.push((path.to_string(), code, t.elapsed().as_secs_f64()));
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                samples
            })
        });
        HealthProbes { thread }
    }

    fn stop(self) -> Vec<(String, u16, f64)> {
        self.thread.join().unwrap()
    }
}

fn by_path(samples: &[(String, u16, f64)]) -> BTreeMap<String, Vec<f64>> {
    let mut out: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (path, _, s) in samples {
        out.entry(path.clone()).or_default().push(*s);
    }
    for v in out.values_mut() {
        v.sort_by(f64::total_cmp);
    }
    out
}

async fn many_clients(clients: usize, duration: Duration, load_opts: LoadOptions) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "overload-token,overload,overload-uid,\"crowd\"\n").unwrap();
    let env = Env::start(EnvOptions {
        host_args: vec![
            "--token-auth-file".into(),
            tokens.display().to_string(),
            "--max-requests-inflight".into(),
            "20".into(),
            "--max-mutating-requests-inflight".into(),
            "10".into(),
        ],
        ..EnvOptions::default()
    });
    env.kubectl.ok(&[
        "create",
        "clusterrolebinding",
        "crowd-admin",
        "--clusterrole=cluster-admin",
        "--group=crowd",
    ]);
    env.kubectl.ok(&["create", "namespace", "crowd"]);
    let host_url = env.url();
    let token_kubeconfig = env.dir().join("crowd.kubeconfig");
    support::write_token_kubeconfig(
        &token_kubeconfig,
        &host_url,
        &env.client_dir.join("pki/ca.crt"),
        "overload-token",
    );
    let load = Load::start(&env.admin_kubeconfig(), env.dir(), load_opts.clone()).await;
    load.wait_acked_more(10, WAIT, "writes before the crowd")
        .await;

    // Health latency before the crowd, for comparison.
    let quiet = {
        let stop = Arc::new(AtomicBool::new(false));
        let probes = HealthProbes::start(&env.admin_kubeconfig(), stop.clone());
        tokio::time::sleep(Duration::from_secs(2)).await;
        stop.store(true, Ordering::Relaxed);
        probes.stop()
    };
    let counts = Arc::new(OverloadCounts::default());
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for i in 0..clients {
        // Each its own client: its own connections, as 200 separate programs would have.
        let client = load::no_retry_client(&token_kubeconfig).await;
        let (counts, latencies, stop) = (counts.clone(), latencies.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) {
                seq += 1;
                // Two reads for each write.
                let req = if seq.is_multiple_of(3) {
                    let body = serde_json::json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": format!("c{i}-{seq}")},
                        "data": {"k": "v"}
                    });
                    http::Request::post("/api/v1/namespaces/crowd/configmaps")
                        .header("content-type", "application/json")
                        .body(body.to_string().into_bytes())
                        .unwrap()
                } else {
                    http::Request::get("/api/v1/namespaces/crowd/configmaps?limit=20")
                        .body(Vec::new())
                        .unwrap()
                };
                let t = Instant::now();
                let r = send(&client, req).await;
                latencies.lock().unwrap().push(t.elapsed().as_secs_f64());
                let c = &counts;
                match r {
                    Ok((429, retry_after)) => {
                        c.too_many.fetch_add(1, Ordering::Relaxed);
                        if !retry_after {
                            c.too_many_without_retry_after
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        // A polite client backs off a little, as client-go does.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Ok((code, _)) if code < 300 => {
                        c.ok.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((code, _)) if code >= 500 => {
                        c.server_errors.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(_) => {
                        c.other_4xx.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) if e == "timeout" => {
                        c.timeouts.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        c.transport_errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    // Health probes throughout, as a kubelet's or load balancer's would be: on a thread and
    // runtime of their own, so the crowd's tasks in this process do not delay the readings.
    let health = HealthProbes::start(&env.admin_kubeconfig(), stop.clone());
    let started = Instant::now();
    // The crowd runs for `duration`, or until the limit has visibly answered 429 for at least
    // that long, whichever is later.
    tokio::time::sleep(duration).await;
    let deadline = Instant::now() + WAIT;
    while counts.too_many.load(Ordering::Relaxed) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed().as_secs_f64();
    let samples = health.stop();
    let fault_end = Instant::now();
    let log = load.stop().await;

    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    let c = &*counts;
    let total = get(&c.ok)
        + get(&c.too_many)
        + get(&c.other_4xx)
        + get(&c.server_errors)
        + get(&c.transport_errors)
        + get(&c.timeouts);
    let mut lat = std::mem::take(&mut *latencies.lock().unwrap());
    lat.sort_by(f64::total_cmp);
    let health_lat = by_path(&samples);
    let quiet_lat = by_path(&quiet);
    let figures = format!(
        "{clients} clients for {elapsed:.1} s: {total} requests ({:.0}/s), {} ok, {} 429 ({} without Retry-After), {} other 4xx, {} 5xx, {} transport errors, {} timeouts; request latency p50 {:.1} ms p99 {:.1} ms; /readyz p50 {:.1} ms p99 {:.1} ms, /livez p50 {:.1} ms p99 {:.1} ms ({} probes; before the crowd: /readyz p50 {:.1} ms p99 {:.1} ms)",
        total as f64 / elapsed,
        get(&c.ok),
        get(&c.too_many),
        get(&c.too_many_without_retry_after),
        get(&c.other_4xx),
        get(&c.server_errors),
        get(&c.transport_errors),
        get(&c.timeouts),
        percentile(&lat, 0.5) * 1e3,
        percentile(&lat, 0.99) * 1e3,
        percentile(&health_lat["/readyz"], 0.5) * 1e3,
        percentile(&health_lat["/readyz"], 0.99) * 1e3,
        percentile(&health_lat["/livez"], 0.5) * 1e3,
        percentile(&health_lat["/livez"], 0.99) * 1e3,
        samples.len(),
        percentile(&quiet_lat["/readyz"], 0.5) * 1e3,
        percentile(&quiet_lat["/readyz"], 0.99) * 1e3,
    );
    println!("OVERLOAD {figures}");
    if let Some(path) = std::env::var_os("FAULTS_TABLE") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "Overload: {figures}");
        }
    }
    // 429s instead of collapse: the limits answered, nothing else failed.
    assert!(get(&c.too_many) > 0, "the limits never answered 429");
    assert_eq!(
        get(&c.too_many_without_retry_after),
        0,
        "429 without Retry-After"
    );
    assert_eq!(get(&c.server_errors), 0, "5xx under overload");
    assert_eq!(get(&c.timeouts), 0, "requests timed out under overload");
    assert_eq!(
        get(&c.transport_errors),
        0,
        "transport errors under overload"
    );
    assert_eq!(get(&c.other_4xx), 0, "unexpected 4xx under overload");
    assert!(get(&c.ok) > 0, "nothing got through");
    let bad_health: Vec<_> = samples.iter().filter(|(_, code, _)| *code != 200).collect();
    assert!(
        bad_health.is_empty(),
        "health checks not answered 200 under overload: {bad_health:?}"
    );
    let (took, found) = env.converge(&log, fault_end).await;
    load::print_row(
        &format!(
            "{clients} concurrent clients (reads and creates) past the in-flight limits (20 read-only, 10 mutating)"
        ),
        &load_opts.describe(),
        &log,
        &found,
        took,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_clients_get_429s_not_a_collapse() {
    many_clients(200, Duration::from_secs(5), LoadOptions::default()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_two_hundred_clients_for_a_minute() {
    many_clients(200, Duration::from_secs(60), LoadOptions::default()).await;
}
