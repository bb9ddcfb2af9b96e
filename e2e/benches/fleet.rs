//! Fleet-scale benchmark of the cluster controllers (issue 15): thousands of Push Clusters
//! on one host, `flotilla controller-manager` as its own process so its CPU and memory can
//! be read from /proc. Scenarios (`FLOTILLA_BENCH_FLEET`, comma-separated, default
//! `1000,5000,unreachable:5000`):
//! - `K`: K member-sims in one `flotilla member-sim --clusters K` process on loopback,
//!   `FLOTILLA_BENCH_NODES` nodes each (default 3), joined with their tokens;
//! - `unreachable:K`: K Clusters whose endpoints are unused loopback ports
//!   (`https://127.0.x.y:1`, connection refused), each with a token and a CA bundle as a
//!   join stores them.
//!
//! For each it prints: the time until every Cluster has its status (Ready=True, or for the
//! unreachable ones Ready=False) after the controller-manager starts, and until every
//! Cluster's execution namespace exists (the cluster controller's first round); then over a
//! steady window
//! (`FLOTILLA_BENCH_STEADY_SECS`, default 60) the controller-manager's CPU, its RSS and the
//! writes per second the host receives (its `apiserver_request_total` counters; only the
//! controller-manager writes then); for member-sims, the time until one member made
//! unreachable is reported Ready=False (failure threshold 30 s, monitor grace 40 s); and
//! the host's GET / create (ConfigMaps) and LIST (all Clusters) latencies, p50 and p99,
//! with the controller-manager running and paused, in alternating rounds of the same run.
//! It also prints the controller-manager's heap as its allocator counts it (`/metrics`).
//!
//! Targets (issue 15, at 5,000 Clusters): RSS <= 1 GiB, idle CPU <= 25 % of one core, GET and
//! create p99 <= 2x without controllers, LIST of the Clusters <= 100 ms.
//!
//! `FLOTILLA_BENCH_CM_ARGS` adds flags to the controller-manager (e.g.
//! `--keep-member-connections=false`). `FLOTILLA_BENCH_CM_WRAPPER` runs the
//! controller-manager under a profiler (a command line
//! put before it, e.g. `heaptrack -o /tmp/cm`).
//!
//! Run: `cargo build --release --bin flotilla && FLOTILLA_BIN=$CARGO_TARGET_DIR/release/flotilla
//! cargo bench -p flotilla-e2e --bench fleet` (FLOTILLA_BIN is what every process runs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use flotilla_karmada_api::Cluster;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ListParams, PostParams};
use support::{
    Proc, join_member_sims, kube_client, member_sims_args, percentile, ready_name_url, release_bin,
    spawn_ready_lines, start_aggregated_apiserver, start_apiserver,
};

/// One scenario: how many Clusters, and whether member-sims back them.
#[derive(Debug, Clone, Copy)]
struct Scenario {
    clusters: u32,
    reachable: bool,
}

fn scenarios() -> Vec<Scenario> {
    let spec = std::env::var("FLOTILLA_BENCH_FLEET")
        .unwrap_or_else(|_| "1000,5000,unreachable:5000".into());
    spec.split(',')
        .filter_map(|s| {
            let s = s.trim();
            let (reachable, n) = match s.strip_prefix("unreachable:") {
                Some(n) => (false, n),
                None => (true, s),
            };
            Some(Scenario {
                clusters: n.parse().ok()?,
                reachable,
            })
        })
        .collect()
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The Ready condition's status, if any.
fn ready_of(c: &Cluster) -> Option<String> {
    c.status.as_ref().and_then(|s| {
        s.conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.status.clone())
    })
}

/// p50 and p99 in milliseconds of `samples` (seconds).
fn p50_p99(mut samples: Vec<f64>) -> (f64, f64) {
    samples.sort_by(|a, b| a.total_cmp(b));
    (
        percentile(&samples, 0.5) * 1000.0,
        percentile(&samples, 0.99) * 1000.0,
    )
}

/// Latencies of kubectl-style requests against the host, one at a time.
struct Latencies {
    get: (f64, f64),
    create: (f64, f64),
    list: (f64, f64),
    table: (f64, f64),
}

/// Request latencies of one condition, pooled over its rounds.
#[derive(Default)]
struct Samples {
    get: Vec<f64>,
    create: Vec<f64>,
    list: Vec<f64>,
    table: Vec<f64>,
}

impl Samples {
    fn latencies(self) -> Latencies {
        Latencies {
            get: p50_p99(self.get),
            create: p50_p99(self.create),
            list: p50_p99(self.list),
            table: p50_p99(self.table),
        }
    }
}

/// Rounds of measurement, alternating between the controllers running and paused.
const ROUNDS: usize = 5;

/// One round of requests into `into`: GETs, creates (named `{base}-{n}` from `created` on),
/// LISTs as JSON and as a Table.
async fn measure_round(host: &kube::Client, base: &str, created: &mut usize, into: &mut Samples) {
    let cms: Api<ConfigMap> = Api::namespaced(host.clone(), "default");
    let cm = |name: String| -> ConfigMap {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name}, "data": {"k": "v"}
        }))
        .unwrap()
    };
    let _ = cms
        .create(&PostParams::default(), &cm(base.to_string()))
        .await;
    for _ in 0..400 {
        let t = Instant::now();
        cms.get(base).await.unwrap();
        into.get.push(t.elapsed().as_secs_f64());
    }
    for _ in 0..200 {
        let t = Instant::now();
        cms.create(&PostParams::default(), &cm(format!("{base}-{created}")))
            .await
            .unwrap();
        *created += 1;
        into.create.push(t.elapsed().as_secs_f64());
    }
    // LISTs of every Cluster as the host answers them, body read but not decoded: as JSON and
    // as the Table `kubectl get clusters` asks for.
    for _ in 0..3 {
        into.list.push(timed_list(host, "application/json").await);
        into.table.push(timed_list(host, TABLE_ACCEPT).await);
    }
}

/// Host latencies with the controller-manager (`pid`) running and with it paused (SIGSTOP),
/// in alternating rounds pooled per condition: 2,000 GETs, 1,000 creates and 15 LISTs of
/// each kind each. Alternating, both conditions see the same drift of a shared machine (the
/// host's own work, the page cache, other processes); one measurement after the other, the
/// ratio of sub-millisecond p99s moved by 2x from run to run. After each pause the
/// controllers first catch up on the syncs that fell due, unmeasured.
async fn compare(host: &kube::Client, pid: u32) -> (Latencies, Latencies) {
    let signal = |sig: &str| {
        let status = Command::new("kill")
            .args([sig, &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {sig} {pid}");
    };
    let (mut with, mut without) = (Samples::default(), Samples::default());
    let mut created = 0;
    for _ in 0..ROUNDS {
        measure_round(host, "bench-with", &mut created, &mut with).await;
        signal("-STOP");
        // Requests the controllers had in flight finish.
        tokio::time::sleep(Duration::from_secs(1)).await;
        measure_round(host, "bench-without", &mut created, &mut without).await;
        signal("-CONT");
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    (with.latencies(), without.latencies())
}

/// What kubectl sends for `kubectl get`.
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

/// Seconds to GET `/apis/cluster.karmada.io/v1alpha1/clusters` as `accept` and read the body.
async fn timed_list(host: &kube::Client, accept: &str) -> f64 {
    use http_body_util::BodyExt;
    let request = http::Request::get("/apis/cluster.karmada.io/v1alpha1/clusters")
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())
        .unwrap();
    let t = Instant::now();
    let response = host.send(request).await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert!(!body.is_empty());
    t.elapsed().as_secs_f64()
}

/// Mutating requests the host has answered so far (its request counters).
async fn host_writes(host: &kube::Client) -> f64 {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = host.request_text(request).await.unwrap_or_default();
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            ["create", "update", "patch", "delete"]
                .iter()
                .any(|v| l.contains(&format!("verb=\"{v}\"")))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Joins `count` Clusters whose endpoints are unused loopback ports, with a CA bundle as
/// every join stores one (`ca_pem`: any CA will do, nothing ever answers).
async fn join_unreachable(host: &kube::Client, count: u32, ca_pem: &str) {
    futures::stream::iter(0..count)
        .map(|i| async move {
            // 127.0.0.2 .. : any 127/8 address is loopback; nothing listens on port 1.
            let (a, b) = (i / 250, i % 250 + 2);
            let member = flotilla_membership::Member::new(
                format!("u{i}"),
                format!("https://127.0.{a}.{b}:1"),
                flotilla_membership::MemberCredentials::token("unused", ca_pem),
            );
            flotilla_membership::join(host, &member).await.unwrap();
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
}

/// The controller-manager's allocated, active and resident heap bytes, from its `/metrics`
/// (none under `--features system-allocator`).
fn heap_gauges(port: u16) -> Option<(u64, u64, u64)> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .ok()?;
    let mut text = String::new();
    conn.read_to_string(&mut text).ok()?;
    let gauge = |name: &str| {
        let prefix = format!("flotilla_heap_{name}_bytes ");
        text.lines()
            .find_map(|l| l.strip_prefix(prefix.as_str()))
            .and_then(|v| v.trim().parse().ok())
    };
    Some((gauge("allocated")?, gauge("active")?, gauge("resident")?))
}

async fn run(s: Scenario, nodes: u32, steady: Duration) {
    let count = s.clusters as usize;
    let kind = if s.reachable {
        format!("member-sims ({nodes} nodes each)")
    } else {
        "unreachable loopback endpoints".to_string()
    };
    println!("\n== {count} Push Clusters backed by {kind}");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let host_dir = d.join("host");
    let host_proc = start_apiserver(&host_dir);
    let _agg = start_aggregated_apiserver(&host_dir, &d.join("aggregated"));
    let host = kube_client(&host_proc.kubeconfig, None).await;
    let clusters: Api<Cluster> = Api::all(host.clone());

    let unreachable_file = d.join("unreachable");
    let members_dir = d.join("members");
    let started = Instant::now();
    let mut sims: Option<Proc> = None;
    if s.reachable {
        let mut args = member_sims_args(s.clusters, nodes, &members_dir);
        args.push("--unreachable-file".into());
        args.push(unreachable_file.display().to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (proc, ready) = spawn_ready_lines(
            &release_bin(),
            &args,
            &d.join("members.log"),
            count,
            Duration::from_secs(900),
        );
        let urls: Vec<(String, String)> = ready.iter().map(|l| ready_name_url(l)).collect();
        let (_, rss, _) = flotilla_testenv::proc_usage(proc.0.id());
        println!(
            "member-sims: {count} started in {:.1} s, process RSS {} MiB",
            started.elapsed().as_secs_f64(),
            rss / 1024
        );
        let joined = Instant::now();
        join_member_sims(&host, &members_dir, &urls, 32).await;
        println!(
            "joined {count} clusters in {:.1} s",
            joined.elapsed().as_secs_f64()
        );
        sims = Some(proc);
    } else {
        let joined = Instant::now();
        let ca = std::fs::read_to_string(host_dir.join("pki").join("ca.crt")).unwrap();
        join_unreachable(&host, s.clusters, &ca).await;
        println!(
            "joined {count} clusters in {:.1} s",
            joined.elapsed().as_secs_f64()
        );
    }

    // `FLOTILLA_BENCH_CM_ARGS="--keep-member-connections=false"`: flags added to the
    // controller-manager's command line.
    let cm_args = std::env::var("FLOTILLA_BENCH_CM_ARGS").unwrap_or_default();
    if !cm_args.is_empty() {
        println!("controller-manager flags added: {cm_args}");
    }
    let cm_metrics = support::free_port();
    let cm_log = d.join("controller-manager.log");
    let cm_started = Instant::now();
    // `FLOTILLA_BENCH_CM_WRAPPER="heaptrack -o /tmp/cm"` (or `perf record ...`) runs the
    // controller-manager under a profiler; its CPU and RSS figures are then the wrapper's.
    let wrapper = std::env::var("FLOTILLA_BENCH_CM_WRAPPER").unwrap_or_default();
    let mut wrapper = wrapper.split_whitespace();
    let mut command = match wrapper.next() {
        Some(program) => {
            let mut c = Command::new(program);
            c.args(wrapper).arg(release_bin());
            c
        }
        None => Command::new(release_bin()),
    };
    let cm = Proc(
        command
            .args([
                "controller-manager",
                "--kubeconfig",
                host_dir
                    .join("controller-manager.kubeconfig")
                    .to_str()
                    .unwrap(),
                "--leader-elect=false",
                "--metrics-bind-address",
                &format!("127.0.0.1:{cm_metrics}"),
            ])
            .args(cm_args.split_whitespace())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(std::fs::File::create(&cm_log).unwrap()))
            .spawn()
            .unwrap(),
    );
    let pid = cm.0.id();
    let deadline = Instant::now() + Duration::from_secs(900);
    let want = if s.reachable { "True" } else { "False" };
    let mut peak_rss_during_start = 0;
    loop {
        let list = clusters.list(&ListParams::default()).await.unwrap();
        let done = list
            .items
            .iter()
            .filter(|c| ready_of(c).as_deref() == Some(want))
            .count();
        let (_, rss, _) = flotilla_testenv::proc_usage(pid);
        peak_rss_during_start = peak_rss_during_start.max(rss);
        if done == count {
            println!(
                "all {count} Ready={want} {:.1} s after the controller-manager started",
                cm_started.elapsed().as_secs_f64()
            );
            break;
        }
        if Instant::now() > deadline {
            println!(
                "NOT all done: {done}/{count} Ready={want} after {:.0} s (log: {})",
                cm_started.elapsed().as_secs_f64(),
                cm_log.display()
            );
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // The cluster controller's first round (finalizer and taints, then the execution
    // namespace, the last step) shares the write limit with the status writes and may finish
    // after them: the steady window starts once every namespace exists.
    let namespaces: Api<Namespace> = Api::all(host.clone());
    loop {
        let made = namespaces
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .filter(|n| {
                n.metadata.name.as_deref().is_some_and(|n| {
                    n.starts_with(flotilla_names::karmada::EXECUTION_NAMESPACE_PREFIX)
                })
            })
            .count();
        if made >= count {
            println!(
                "all {count} execution namespaces {:.1} s after the controller-manager started",
                cm_started.elapsed().as_secs_f64()
            );
            break;
        }
        if Instant::now() > deadline {
            println!("NOT all done: {made}/{count} execution namespaces");
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }

    // Steady state: let the first round of back-offs and syncs settle, then a window.
    tokio::time::sleep(Duration::from_secs(15)).await;
    let (cpu0, _, _) = flotilla_testenv::proc_usage(pid);
    let sims_pid = sims.as_ref().map(|p| p.0.id());
    let sims_cpu0 = sims_pid.map(|p| flotilla_testenv::proc_usage(p).0);
    let writes0 = host_writes(&host).await;
    let w0 = Instant::now();
    tokio::time::sleep(steady).await;
    let (cpu1, rss, hwm) = flotilla_testenv::proc_usage(pid);
    let sims_cpu1 = sims_pid.map(|p| flotilla_testenv::proc_usage(p).0);
    let writes1 = host_writes(&host).await;
    let wall = w0.elapsed().as_secs_f64();
    println!(
        "controller-manager steady over {wall:.0} s: CPU {:.1}% of one core (target <= 25%), \
         RSS {} MiB (peak {} MiB; target <= 1024), host writes {:.1}/s",
        (cpu1 - cpu0) / wall * 100.0,
        rss / 1024,
        hwm.max(peak_rss_during_start) / 1024,
        (writes1 - writes0) / wall
    );
    if let Some(heap) = heap_gauges(cm_metrics) {
        println!(
            "controller-manager heap: allocated {} MiB, active {} MiB, resident {} MiB \
             (allocated per Cluster {:.1} KB)",
            heap.0 >> 20,
            heap.1 >> 20,
            heap.2 >> 20,
            heap.0 as f64 / 1000.0 / count as f64
        );
    }
    // What the memory target excludes ("plus what its status holds"), as JSON.
    let list = clusters.list(&ListParams::default()).await.unwrap();
    let status_bytes: usize = list
        .items
        .iter()
        .map(|c| serde_json::to_vec(&c.status).map_or(0, |b| b.len()))
        .sum();
    println!(
        "controller-manager RSS per Cluster {:.1} KB; a Cluster's status is {:.1} KB as JSON \
         (mean)",
        rss as f64 * 1024.0 / 1000.0 / count as f64,
        status_bytes as f64 / 1000.0 / count as f64
    );
    if let (Some(a), Some(b)) = (sims_cpu0, sims_cpu1) {
        // The members' side of the syncs: on a real fleet, other machines' CPU.
        println!(
            "member-sims process over the same window: CPU {:.1}% of one core",
            (b - a) / wall * 100.0
        );
    }

    if s.reachable {
        std::fs::write(&unreachable_file, "m1\n").unwrap();
        let down = Instant::now();
        let deadline = down + Duration::from_secs(180);
        loop {
            let c = clusters.get("m1").await.unwrap();
            if ready_of(&c).as_deref() == Some("False") {
                println!(
                    "member m1 made unreachable: Ready=False after {:.1} s (failure threshold \
                     30 s, monitor grace 40 s)",
                    down.elapsed().as_secs_f64()
                );
                break;
            }
            if Instant::now() > deadline {
                println!("member m1 made unreachable: still Ready after 180 s");
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    let (with, without) = compare(&host, pid).await;
    drop(cm);
    let row = |name: &str, w: (f64, f64), wo: (f64, f64)| {
        println!(
            "host {name:<6} p50/p99 ms: with controllers {:>7.2} / {:>7.2}, paused {:>7.2} / \
             {:>7.2} (p99 ratio {:.2})",
            w.0,
            w.1,
            wo.0,
            wo.1,
            w.1 / wo.1
        );
    };
    row("GET", with.get, without.get);
    row("create", with.create, without.create);
    row("LIST", with.list, without.list);
    row("Table", with.table, without.table);
    drop(sims);
    drop(dir);
}

#[tokio::main]
async fn main() {
    let nodes = u32::try_from(env_u64("FLOTILLA_BENCH_NODES", 3)).unwrap();
    let steady = Duration::from_secs(env_u64("FLOTILLA_BENCH_STEADY_SECS", 60));
    println!(
        "cluster controllers at fleet scale; binary {}",
        release_bin().display()
    );
    for s in scenarios() {
        run(s, nodes, steady).await;
    }
}
