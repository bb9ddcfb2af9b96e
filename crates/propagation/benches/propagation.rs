//! End-to-end propagation benchmark: Deployments created on the host until (1) their
//! template status is READY (readyReplicas aggregated back from the members) and (2) every
//! Work of their binding has `Applied=True`.
//!
//! The host API server (with the aggregated Cluster server) and the simulated members run in
//! this process (members via `flotilla_membersim::start_many`, one shared PKI); the members
//! are joined and Ready before anything is measured. The controllers run the way production
//! runs them: `flotilla controller-manager --leader-elect=false` and `flotilla scheduler
//! --leader-elect=false` from the release binary, as their own processes, so their CPU and
//! peak RSS come from /proc.
//!
//! Scenarios (env `SCENARIO`, default `A,B`, run one after the other, each on a fresh setup):
//! - A: 1,000 Deployments x 10 members, 3 replicas of 100m CPU, one PropagationPolicy per
//!   namespace dividing them `Divided`/`Weighted` by `dynamicWeight: AvailableReplicas`;
//! - B: 100 Deployments x 100 members, 1 replica of 100m CPU, `Duplicated` (every member runs
//!   the Deployment: 10,000 Works). Dividing 1-3 replicas among 100 members would touch at
//!   most 3 members per Deployment, so Duplicated is what loads 100 members.
//!
//! Overrides (apply to every scenario run): `DEPLOYMENTS`, `MEMBERS`, `REPLICAS`, `PLACEMENT`
//! (`divided` | `duplicated`), `NAMESPACES`, `NODES`, `NODE_CPU`, `NODE_PODS` (per member),
//! `OVERRIDE_CHANGES` (after the run, a ClusterOverridePolicy over every Deployment is
//! written this many times, default 2, each timed until every Work carries it),
//! `READY_DELAY_MS` (member pods Pending -> Running, default 0 so the figures are the control
//! plane's), `CONCURRENCY` (parallel creates, default 8), `RATE` (creates per second, 0 =
//! as fast as the creators go), `TIMEOUT_S` (default 600), `FLOTILLA_BIN` (default
//! `target/release/flotilla`).
//!
//! Run: `cargo build --release --bin flotilla && cargo bench -p flotilla-propagation --bench
//! propagation`; quick: `SCENARIO=A DEPLOYMENTS=100 MEMBERS=5 cargo bench ...`.
//!
//! Timestamps come from watches on the host (Deployments, ResourceBindings, Works), first
//! seen; nothing is polled while measuring. Stages per Deployment: create -> binding seen ->
//! scheduled (spec.clusters set) -> all its Works seen -> all Applied -> template READY.

// Benchmark code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_karmada_api::{ResourceBinding, Work};
use flotilla_names::karmada;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::ApiResource;
use kube::runtime::watcher;
use parking_lot::Mutex;
use serde_json::{Value, json};

// The allocator the `flotilla` binary uses, for the servers and members in this process.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

const TARGET_P50_MS: f64 = 300.0;
const TARGET_P99_MS: f64 = 1000.0;
const TARGET_RSS_MIB: u64 = 300;

fn env_str(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn env_num<T: std::str::FromStr>(name: &str) -> Option<T> {
    env_str(name).and_then(|v| v.parse().ok())
}

#[derive(Clone, Debug)]
struct Scenario {
    name: String,
    deployments: usize,
    members: u32,
    replicas: i32,
    duplicated: bool,
    namespaces: usize,
    nodes: u32,
    node_cpu: String,
    node_pods: u32,
    ready_delay: Duration,
    concurrency: usize,
    rate: f64,
    timeout: Duration,
}

impl Scenario {
    fn preset(name: &str) -> Scenario {
        let mut s = match name {
            // 1,000 x 3 replicas Divided: ties between equal members go to the first or last
            // members by name, so a few members can get most of the 3,000 pods: room for
            // 1,000 pods of 100m per member.
            "A" => Scenario {
                name: "A".into(),
                deployments: 1000,
                members: 10,
                replicas: 3,
                duplicated: false,
                namespaces: 10,
                nodes: 4,
                node_cpu: "32".into(),
                node_pods: 250,
                ready_delay: Duration::ZERO,
                concurrency: 8,
                rate: 0.0,
                timeout: Duration::from_secs(600),
            },
            // 100 x 1 replica Duplicated over 100 members: 100 pods of 100m per member.
            "B" => Scenario {
                name: "B".into(),
                deployments: 100,
                members: 100,
                replicas: 1,
                duplicated: true,
                namespaces: 10,
                nodes: 2,
                node_cpu: "8".into(),
                node_pods: 110,
                ready_delay: Duration::ZERO,
                concurrency: 8,
                rate: 0.0,
                timeout: Duration::from_secs(600),
            },
            other => panic!("unknown scenario {other:?} (A or B)"),
        };
        if let Some(v) = env_num("DEPLOYMENTS") {
            s.deployments = v;
        }
        if let Some(v) = env_num("MEMBERS") {
            s.members = v;
        }
        if let Some(v) = env_num("REPLICAS") {
            s.replicas = v;
        }
        if let Some(v) = env_str("PLACEMENT") {
            s.duplicated = match v.to_ascii_lowercase().as_str() {
                "duplicated" => true,
                "divided" => false,
                other => panic!("PLACEMENT={other}: divided or duplicated"),
            };
        }
        if let Some(v) = env_num("NAMESPACES") {
            s.namespaces = v;
        }
        s.namespaces = s.namespaces.clamp(1, s.deployments.max(1));
        if let Some(v) = env_num("NODES") {
            s.nodes = v;
        }
        if let Some(v) = env_str("NODE_CPU") {
            s.node_cpu = v;
        }
        if let Some(v) = env_num("NODE_PODS") {
            s.node_pods = v;
        }
        if let Some(v) = env_num("READY_DELAY_MS") {
            s.ready_delay = Duration::from_millis(v);
        }
        if let Some(v) = env_num("CONCURRENCY") {
            s.concurrency = v;
        }
        if let Some(v) = env_num("RATE") {
            s.rate = v;
        }
        if let Some(v) = env_num("TIMEOUT_S") {
            s.timeout = Duration::from_secs(v);
        }
        s
    }

    /// readyReplicas the template shows when done: the members' counts are summed.
    fn expected_ready(&self) -> i64 {
        let r = i64::from(self.replicas);
        if self.duplicated {
            r * i64::from(self.members)
        } else {
            r
        }
    }

    fn placement(&self) -> Value {
        if self.duplicated {
            json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}})
        } else {
            json!({"replicaScheduling": {"replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"}}})
        }
    }
}

// === processes ===

fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("FLOTILLA_BIN") {
        return PathBuf::from(p);
    }
    let release = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/release/flotilla");
    assert!(
        release.is_file(),
        "build the release binary first: cargo build --release --bin flotilla ({})",
        release.display()
    );
    release
}

struct Proc {
    child: Child,
    log: PathBuf,
    metrics: std::net::SocketAddr,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_addr() -> std::net::SocketAddr {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

fn spawn_component(component: &str, kubeconfig: &Path, dir: &Path) -> Proc {
    let log = dir.join(format!("{component}.log"));
    let metrics = free_addr();
    let child = Command::new(binary())
        .args([
            component,
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--leader-elect=false",
            "--metrics-bind-address",
            &metrics.to_string(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    Proc {
        child,
        log,
        metrics,
    }
}

fn usage(p: &Proc) -> (f64, u64, u64) {
    flotilla_testenv::proc_usage(p.child.id())
}

/// `GET /metrics` over plain HTTP/1.0.
fn scrape(addr: std::net::SocketAddr) -> String {
    let Ok(mut s) = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = s.write_all(b"GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n");
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default()
}

/// The metric lines worth printing: no comments, no histogram buckets, no zero counters.
fn metric_lines(text: &str, prefix: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with(prefix) && !l.contains("_bucket{"))
        .filter(|l| !l.ends_with(" 0") && !l.ends_with(" 0.0"))
        .map(str::to_string)
        .collect()
}

/// Warnings and errors of a component's log: count and the first few.
fn log_problems(path: &Path) -> (usize, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let bad: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("panicked"))
        .collect();
    let mut shapes: Vec<(String, usize, String)> = Vec::new();
    for l in &bad {
        // One example per message shape: the words after the level without span fields,
        // key=value fields or digits.
        let after = l
            .split_once(" WARN ")
            .or_else(|| l.split_once(" ERROR "))
            .map_or(*l, |(_, m)| m);
        let after = after.rsplit_once("}: ").map_or(after, |(_, m)| m);
        let shape: String = after
            .split_whitespace()
            .filter(|w| !w.contains('='))
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .filter(|c| !c.is_ascii_digit())
            .take(100)
            .collect();
        if let Some(entry) = shapes.iter_mut().find(|(s, _, _)| *s == shape) {
            entry.1 += 1;
        } else if shapes.len() < 8 {
            shapes.push((shape, 1, l.chars().take(300).collect()));
        }
    }
    let first = shapes
        .into_iter()
        .map(|(_, n, example)| format!("{n} x like: {example}"))
        .collect();
    (bad.len(), first)
}

// === observations ===

type Key = (String, String);

#[derive(Default)]
struct Seen {
    ready: HashMap<Key, Instant>,
    /// Binding (namespace, name) -> first seen, first seen with spec.clusters, clusters.
    binding: HashMap<Key, Instant>,
    scheduled: HashMap<Key, Instant>,
    clusters: HashMap<Key, Vec<String>>,
    /// Binding -> cluster -> (Work first seen, Work first seen Applied=True).
    works: HashMap<Key, HashMap<String, (Instant, Option<Instant>)>>,
    /// Applied=False (or failed) observations, for the report.
    not_applied: usize,
    last_not_applied: Option<String>,
}

fn key_of(meta: &kube::api::ObjectMeta) -> Key {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

/// Runs a watcher, feeding every object to `on`; `synced` fires after the first list.
fn watch<K, F>(
    api: Api<K>,
    synced: tokio::sync::oneshot::Sender<()>,
    mut on: F,
) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: FnMut(K, Instant) + Send + 'static,
{
    tokio::spawn(async move {
        let mut synced = Some(synced);
        let mut stream = watcher(api, watcher::Config::default()).boxed();
        loop {
            match stream.try_next().await {
                Ok(Some(watcher::Event::Apply(o) | watcher::Event::InitApply(o))) => {
                    on(o, Instant::now())
                }
                Ok(Some(watcher::Event::InitDone)) => {
                    if let Some(s) = synced.take() {
                        let _ = s.send(());
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(e) => {
                    eprintln!("bench watch error (retrying): {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    })
}

fn start_watches(
    host: &kube::Client,
    expected_ready: i64,
    seen: &Arc<Mutex<Seen>>,
) -> (
    Vec<tokio::sync::oneshot::Receiver<()>>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    let mut synced = Vec::new();
    let mut tasks = Vec::new();
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        synced.push(rx);
        let seen = seen.clone();
        tasks.push(watch(
            Api::<Deployment>::all(host.clone()),
            tx,
            move |d, now| {
                let ready = d
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .map(i64::from)
                    .unwrap_or(0);
                if ready >= expected_ready {
                    seen.lock().ready.entry(key_of(&d.metadata)).or_insert(now);
                }
            },
        ));
    }
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        synced.push(rx);
        let seen = seen.clone();
        tasks.push(watch(
            Api::<ResourceBinding>::all(host.clone()),
            tx,
            move |rb, now| {
                let key = key_of(&rb.metadata);
                let mut s = seen.lock();
                s.binding.entry(key.clone()).or_insert(now);
                if !rb.spec.clusters.is_empty() {
                    s.scheduled.entry(key.clone()).or_insert(now);
                    s.clusters.insert(
                        key,
                        rb.spec.clusters.iter().map(|c| c.name.clone()).collect(),
                    );
                }
            },
        ));
    }
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        synced.push(rx);
        let seen = seen.clone();
        tasks.push(watch(Api::<Work>::all(host.clone()), tx, move |w, now| {
            let a = w.metadata.annotations.clone().unwrap_or_default();
            let (Some(ns), Some(name)) = (
                a.get(karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION),
                a.get(karmada::RESOURCE_BINDING_NAME_ANNOTATION),
            ) else {
                return;
            };
            let cluster = w
                .metadata
                .namespace
                .as_deref()
                .unwrap_or_default()
                .trim_start_matches("karmada-es-")
                .to_string();
            let applied = w.status.as_ref().and_then(|s| {
                s.conditions
                    .iter()
                    .find(|c| c.type_ == "Applied")
                    .map(|c| (c.status == "True", c.message.clone()))
            });
            let mut s = seen.lock();
            if let Some((false, message)) = &applied {
                s.not_applied += 1;
                s.last_not_applied = Some(format!("{ns}/{name} in {cluster}: {message}"));
            }
            let entry = s
                .works
                .entry((ns.clone(), name.clone()))
                .or_default()
                .entry(cluster)
                .or_insert((now, None));
            if matches!(applied, Some((true, _))) && entry.1.is_none() {
                entry.1 = Some(now);
            }
        }));
    }
    (synced, tasks)
}

/// One Deployment's milestones.
#[derive(Default, Clone, Copy)]
struct Row {
    created: Option<Instant>,
    binding: Option<Instant>,
    scheduled: Option<Instant>,
    works: Option<Instant>,
    applied: Option<Instant>,
    ready: Option<Instant>,
}

fn rows(seen: &Seen, created: &HashMap<Key, Instant>) -> Vec<Row> {
    created
        .iter()
        .map(|(key, &t)| {
            let bkey = (key.0.clone(), format!("{}-deployment", key.1));
            let mut row = Row {
                created: Some(t),
                binding: seen.binding.get(&bkey).copied(),
                scheduled: seen.scheduled.get(&bkey).copied(),
                ready: seen.ready.get(key).copied(),
                ..Default::default()
            };
            if let (Some(clusters), Some(works)) = (seen.clusters.get(&bkey), seen.works.get(&bkey))
            {
                let all: Option<Vec<(Instant, Option<Instant>)>> =
                    clusters.iter().map(|c| works.get(c).copied()).collect();
                if let Some(all) = all {
                    row.works = all.iter().map(|w| w.0).max();
                    let applied: Option<Vec<Instant>> = all.iter().map(|w| w.1).collect();
                    row.applied = applied.and_then(|a| a.into_iter().max());
                }
            }
            row
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Milliseconds from `a` to `b` (negative when b came first).
fn span(a: Option<Instant>, b: Option<Instant>) -> Option<f64> {
    let (a, b) = (a?, b?);
    Some(if b >= a {
        (b - a).as_secs_f64() * 1000.0
    } else {
        -((a - b).as_secs_f64() * 1000.0)
    })
}

fn stats_line(label: &str, values: impl Iterator<Item = Option<f64>>, total: usize, targets: bool) {
    let mut v: Vec<f64> = values.flatten().collect();
    v.sort_by(|a, b| a.total_cmp(b));
    let (p50, p99, max) = (
        percentile(&v, 0.5),
        percentile(&v, 0.99),
        v.last().copied().unwrap_or(f64::NAN),
    );
    let mark = |ok: bool| if ok { "ok" } else { "MISSED" };
    let target = if targets && !v.is_empty() {
        format!(
            "   [p50 {} / p99 {}: targets {TARGET_P50_MS:.0} / {TARGET_P99_MS:.0} ms]",
            mark(p50 <= TARGET_P50_MS),
            mark(p99 <= TARGET_P99_MS)
        )
    } else {
        String::new()
    };
    println!(
        "  {label:<34} n={:>5}/{total:<5} p50 {p50:>8.0} ms  p99 {p99:>8.0} ms  max {max:>8.0} ms{target}",
        v.len()
    );
}

// === setup ===

async fn wait_clusters_ready(host: &kube::Client, count: usize) {
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(host.clone());
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list = clusters.list(&ListParams::default()).await.unwrap();
        let ready = list
            .items
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .is_some_and(|s| s.is_ready() && s.resource_summary.is_some())
            })
            .count();
        if ready == count {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {ready}/{count} clusters Ready with a resource summary after 300 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the namespace sync's Works for `names` are Applied in `members` clusters.
async fn wait_namespaces_applied(host: &kube::Client, names: &[String], members: usize) {
    let works: Api<Work> = Api::all(host.clone());
    let want = names.len() * members;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list = works
            .list(&ListParams::default().labels("namespace.flotilla.io/sync=true"))
            .await
            .unwrap();
        let applied = list
            .items
            .iter()
            .filter(|w| {
                let ns_name = w
                    .spec
                    .workload
                    .manifests
                    .first()
                    .and_then(|m| m.0.get("metadata"))
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                names.iter().any(|n| n == ns_name)
                    && w.status.as_ref().is_some_and(|s| {
                        s.conditions
                            .iter()
                            .any(|c| c.type_ == "Applied" && c.status == "True")
                    })
            })
            .count();
        if applied >= want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "only {applied}/{want} namespace Works Applied after 300 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                                       "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}
    }))
    .unwrap()
}

// === one scenario ===

async fn run_scenario(sc: &Scenario) {
    println!();
    println!(
        "=== scenario {}: {} Deployments x {} member-sims ({} replica(s) of 100m CPU, {}, {} namespace(s) with one PropagationPolicy each) ===",
        sc.name,
        sc.deployments,
        sc.members,
        sc.replicas,
        if sc.duplicated {
            "Duplicated"
        } else {
            "Divided by dynamicWeight AvailableReplicas"
        },
        sc.namespaces
    );
    println!(
        "members: {} node(s) x {} CPU x {} pods each, pod ready delay {} ms; creates: {} parallel, {}",
        sc.nodes,
        sc.node_cpu,
        sc.node_pods,
        sc.ready_delay.as_millis(),
        sc.concurrency,
        if sc.rate > 0.0 {
            format!("{} per second", sc.rate)
        } else {
            "as fast as they go".into()
        }
    );
    let (bench_cpu_start, _, _) = flotilla_testenv::proc_usage("self");
    let setup = Instant::now();
    let cp = flotilla_testenv::ControlPlane::start().await.unwrap();
    let host = cp.client.clone();
    let dir = cp.dir.path().to_path_buf();

    let mut many = flotilla_membersim::ManyOptions::new("member", sc.members, dir.join("members"));
    many.nodes = sc.nodes;
    many.node_cpu = sc.node_cpu.clone();
    many.node_memory = "256Gi".into();
    many.node_pods = sc.node_pods;
    many.ready_delay = sc.ready_delay;
    let t = Instant::now();
    let members = flotilla_membersim::start_many(many).await.unwrap();
    println!(
        "setup: {} member-sims started in {:.1} s",
        members.len(),
        t.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    futures::stream::iter(members.iter())
        .map(|m| {
            let host = host.clone();
            async move {
                let credentials =
                    flotilla_membership::MemberCredentials::token(&m.token, &m.ca_pem);
                let join = flotilla_membership::Member::new(&m.name, m.url(), credentials);
                flotilla_membership::join(&host, &join).await.unwrap();
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    println!("setup: joined in {:.1} s", t.elapsed().as_secs_f64());

    let kubeconfig = cp.host.kubeconfig.clone();
    let cm = spawn_component("controller-manager", &kubeconfig, &dir);
    let sched = spawn_component("scheduler", &kubeconfig, &dir);
    let t = Instant::now();
    wait_clusters_ready(&host, sc.members as usize).await;
    println!(
        "setup: all {} clusters Ready {:.1} s after the controller-manager started",
        sc.members,
        t.elapsed().as_secs_f64()
    );

    // Namespaces (synced to every member before the clock starts) and their policies.
    let namespaces: Vec<String> = (0..sc.namespaces)
        .map(|i| format!("bench-{i:02}"))
        .collect();
    let ns_api: Api<Namespace> = Api::all(host.clone());
    let pp = ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    );
    for ns in &namespaces {
        ns_api
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
            )
            .await
            .unwrap();
        let api: Api<DynamicObject> = Api::namespaced_with(host.clone(), ns, &pp);
        let body = json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "deployments", "namespace": ns},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                     "placement": sc.placement()}
        });
        api.patch(
            "deployments",
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&body),
        )
        .await
        .unwrap();
    }
    let t = Instant::now();
    wait_namespaces_applied(&host, &namespaces, sc.members as usize).await;
    println!(
        "setup: {} namespace(s) in every member in {:.1} s; whole setup {:.1} s",
        namespaces.len(),
        t.elapsed().as_secs_f64(),
        setup.elapsed().as_secs_f64()
    );

    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (synced, watches) = start_watches(&host, sc.expected_ready(), &seen);
    for rx in synced {
        rx.await.unwrap();
    }
    // Let the controllers settle after the setup's writes.
    tokio::time::sleep(Duration::from_secs(2)).await;

    let (cm_cpu0, _, _) = usage(&cm);
    let (sched_cpu0, _, _) = usage(&sched);
    let (bench_cpu0, _, _) = flotilla_testenv::proc_usage("self");
    let created: Arc<Mutex<HashMap<Key, Instant>>> = Arc::default();
    let start = Instant::now();
    let creator = {
        let host = host.clone();
        let created = created.clone();
        let namespaces = namespaces.clone();
        let sc = sc.clone();
        tokio::spawn(async move {
            futures::stream::iter(0..sc.deployments)
                .map(|i| {
                    let host = host.clone();
                    let created = created.clone();
                    let ns = namespaces[i % namespaces.len()].clone();
                    async move {
                        if sc.rate > 0.0 {
                            let at = start + Duration::from_secs_f64(i as f64 / sc.rate);
                            tokio::time::sleep_until(at.into()).await;
                        }
                        let name = format!("web-{i:05}");
                        let api: Api<Deployment> = Api::namespaced(host, &ns);
                        let t = Instant::now();
                        api.create(&PostParams::default(), &deployment(&name, sc.replicas))
                            .await
                            .unwrap();
                        created.lock().insert((ns, name), t);
                    }
                })
                .buffer_unordered(sc.concurrency.max(1))
                .collect::<Vec<_>>()
                .await;
        })
    };

    // Wait for the watches to see everything (in-memory checks only).
    let deadline = start + sc.timeout;
    let mut next_progress = Instant::now() + Duration::from_secs(10);
    let mut creates_done = None;
    let mut timed_out = false;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if creates_done.is_none() && creator.is_finished() {
            creates_done = Some(start.elapsed());
        }
        let (done, line) = {
            let created = created.lock();
            let s = seen.lock();
            let r = rows(&s, &created);
            let count = |f: fn(&Row) -> bool| r.iter().filter(|x| f(x)).count();
            let line = format!(
                "created {} bindings {} scheduled {} works {} applied {} ready {}",
                created.len(),
                count(|x| x.binding.is_some()),
                count(|x| x.scheduled.is_some()),
                count(|x| x.works.is_some()),
                count(|x| x.applied.is_some()),
                count(|x| x.ready.is_some()),
            );
            let done = created.len() == sc.deployments
                && r.iter().all(|x| x.ready.is_some() && x.applied.is_some());
            (done, line)
        };
        if done {
            break;
        }
        if Instant::now() > deadline {
            timed_out = true;
            println!(
                "TIMED OUT after {:.0} s: {line}",
                start.elapsed().as_secs_f64()
            );
            break;
        }
        if Instant::now() > next_progress {
            let (cpu, rss, _) = usage(&cm);
            println!(
                "  ... {:>5.0} s: {line}; controller-manager CPU {:.1} s, RSS {} MiB",
                start.elapsed().as_secs_f64(),
                cpu - cm_cpu0,
                rss / 1024
            );
            next_progress += Duration::from_secs(10);
        }
    }
    let wall = start.elapsed();
    let (cm_cpu1, cm_rss, cm_hwm) = usage(&cm);
    let (sched_cpu1, sched_rss, sched_hwm) = usage(&sched);
    let (bench_cpu1, bench_rss, _) = flotilla_testenv::proc_usage("self");

    // Report.
    let created = created.lock().clone();
    let s = std::mem::take(&mut *seen.lock());
    let r = rows(&s, &created);
    let n = sc.deployments;
    println!(
        "results: {} Deployments created in {:.1} s; {} {:.1} s after the first create",
        created.len(),
        creates_done.unwrap_or(wall).as_secs_f64(),
        if timed_out {
            "TIMED OUT (figures below cover what finished)"
        } else {
            "everything READY and Applied"
        },
        wall.as_secs_f64()
    );
    println!("per Deployment, from its create request on the host:");
    stats_line(
        "(1) create -> template READY",
        r.iter().map(|x| span(x.created, x.ready)),
        n,
        true,
    );
    stats_line(
        "(2) create -> all Works Applied",
        r.iter().map(|x| span(x.created, x.applied)),
        n,
        true,
    );
    println!("by stage (where the time goes):");
    stats_line(
        "create -> binding created",
        r.iter().map(|x| span(x.created, x.binding)),
        n,
        false,
    );
    stats_line(
        "binding -> scheduled",
        r.iter().map(|x| span(x.binding, x.scheduled)),
        n,
        false,
    );
    stats_line(
        "scheduled -> all Works created",
        r.iter().map(|x| span(x.scheduled, x.works)),
        n,
        false,
    );
    stats_line(
        "Works created -> all Applied",
        r.iter().map(|x| span(x.works, x.applied)),
        n,
        false,
    );
    stats_line(
        "all Applied -> template READY",
        r.iter().map(|x| span(x.applied, x.ready)),
        n,
        false,
    );
    // Spread of the Works over the members.
    let mut per_cluster: HashMap<&str, usize> = HashMap::new();
    for clusters in s.clusters.values() {
        for c in clusters {
            *per_cluster.entry(c.as_str()).or_default() += 1;
        }
    }
    let mut counts: Vec<usize> = per_cluster.values().copied().collect();
    counts.sort_unstable();
    println!(
        "Works: {} in total over {} of {} members (per member min {} / median {} / max {}); Applied=False seen {} time(s){}",
        counts.iter().sum::<usize>(),
        per_cluster.len(),
        sc.members,
        counts.first().copied().unwrap_or(0),
        counts.get(counts.len() / 2).copied().unwrap_or(0),
        counts.last().copied().unwrap_or(0),
        s.not_applied,
        s.last_not_applied
            .as_ref()
            .map(|m| format!(" (last: {m})"))
            .unwrap_or_default()
    );
    drop(s);
    let secs = wall.as_secs_f64();
    println!(
        "controller-manager: CPU {:.1} s during the run ({:.0}% of one core over {secs:.1} s); RSS now {} MiB, peak {} MiB [target <= {TARGET_RSS_MIB} MiB: {}]",
        cm_cpu1 - cm_cpu0,
        (cm_cpu1 - cm_cpu0) / secs * 100.0,
        cm_rss / 1024,
        cm_hwm / 1024,
        if cm_hwm / 1024 <= TARGET_RSS_MIB {
            "ok"
        } else {
            "MISSED"
        }
    );
    println!(
        "scheduler: CPU {:.1} s during the run; RSS now {} MiB, peak {} MiB",
        sched_cpu1 - sched_cpu0,
        sched_rss / 1024,
        sched_hwm / 1024
    );
    println!(
        "bench process (host API server + aggregated server + {} member-sims + watches): CPU {:.1} s during the run ({:.1} s with setup), RSS {} MiB",
        sc.members,
        bench_cpu1 - bench_cpu0,
        bench_cpu1 - bench_cpu_start,
        bench_rss / 1024
    );
    println!(
        "  (2 cores: {:.0}% of the machine's CPU time during the run went to these three)",
        ((cm_cpu1 - cm_cpu0) + (sched_cpu1 - sched_cpu0) + (bench_cpu1 - bench_cpu0))
            / (2.0 * secs)
            * 100.0
    );
    let cm_metrics = scrape(cm.metrics);
    println!("controller-manager metrics (non-zero, no buckets):");
    for l in metric_lines(&cm_metrics, "flotilla_propagation_")
        .iter()
        .filter(|l| !l.contains("queue_depth"))
    {
        println!("  {l}");
    }
    let sched_metrics = scrape(sched.metrics);
    let sched_lines: Vec<String> = metric_lines(&sched_metrics, "flotilla_")
        .into_iter()
        .filter(|l| l.contains("_sum") || l.contains("_count") || l.contains("_total"))
        .take(20)
        .collect();
    if !sched_lines.is_empty() {
        println!("scheduler metrics (sums and counts):");
        for l in sched_lines {
            println!("  {l}");
        }
    }
    for p in [&cm, &sched] {
        let (count, first) = log_problems(&p.log);
        println!(
            "{}: {count} warning/error line(s)",
            p.log.file_name().unwrap().to_string_lossy()
        );
        for l in first {
            println!("    {l}");
        }
    }
    if let Some(keep) = env_str("KEEP_LOGS") {
        let to = PathBuf::from(keep).join(&sc.name);
        let _ = std::fs::create_dir_all(&to);
        for p in [&cm, &sched] {
            let _ = std::fs::copy(&p.log, to.join(p.log.file_name().unwrap()));
        }
        println!("logs copied to {}", to.display());
    }

    if !timed_out && env_num::<u32>("OVERRIDE_CHANGES").unwrap_or(2) > 0 {
        override_changes(&host, env_num("OVERRIDE_CHANGES").unwrap_or(2), &cm).await;
    }

    drop(cm);
    drop(sched);
    creator.abort();
    for w in watches {
        w.abort();
    }
    members.stop_all().await;
    cp.stop().await;
}

/// Re-rendering after an override policy change: a ClusterOverridePolicy selecting every
/// Deployment is created, then changed; each time, the time from the write until every Work
/// on the host carries the new value in its applied-overrides annotation (seen by a watch),
/// and the controller-manager's CPU for it.
async fn override_changes(host: &kube::Client, changes: u32, cm: &Proc) {
    let cop = ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "ClusterOverridePolicy"),
        "clusteroverridepolicies",
    );
    let api: Api<DynamicObject> = Api::all_with(host.clone(), &cop);
    let works: Api<Work> = Api::all(host.clone());
    let total = works
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|w| {
            !w.metadata
                .namespace
                .as_deref()
                .unwrap_or_default()
                .is_empty()
                && w.spec
                    .workload
                    .manifests
                    .iter()
                    .any(|m| m.clone().into_value()["kind"] == "Deployment")
        })
        .count();
    println!("override policy changes: {total} Deployment Works on the host");
    for round in 1..=changes {
        let marker = format!("round-{round}");
        let seen: Arc<Mutex<std::collections::HashSet<String>>> = Arc::default();
        let all_seen = Arc::new(tokio::sync::Notify::new());
        let (synced_tx, synced) = tokio::sync::oneshot::channel();
        let watch = {
            let (seen, all_seen, marker) = (seen.clone(), all_seen.clone(), marker.clone());
            watch(works.clone(), synced_tx, move |w: Work, _| {
                let carries = w
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| {
                        a.get(flotilla_names::karmada::APPLIED_CLUSTER_OVERRIDES_ANNOTATION)
                    })
                    .is_some_and(|v| v.contains(&marker));
                if carries {
                    let mut s = seen.lock();
                    s.insert(format!(
                        "{}/{}",
                        w.metadata.namespace.clone().unwrap_or_default(),
                        w.metadata.name.clone().unwrap_or_default()
                    ));
                    if s.len() >= total {
                        all_seen.notify_one();
                    }
                }
            })
        };
        synced.await.unwrap();
        let (cpu0, _, _) = usage(cm);
        let t = Instant::now();
        let body = json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
            "metadata": {"name": "bench-annotate"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
                     "overrideRules": [{"overriders": {"annotationsOverrider": [
                         {"operator": "add", "value": {"bench.flotilla.io/round": marker}}]}}]}
        });
        api.patch(
            "bench-annotate",
            &PatchParams::apply("bench").force(),
            &Patch::Apply(&body),
        )
        .await
        .unwrap();
        let done = tokio::time::timeout(Duration::from_secs(300), all_seen.notified())
            .await
            .is_ok();
        let elapsed = t.elapsed().as_secs_f64();
        let (cpu1, _, _) = usage(cm);
        watch.abort();
        // One lock: a second `lock()` in the same statement would wait on the first forever.
        let updated = seen.lock().len();
        println!(
            "  change {round} ({}): {} of {total} Works re-rendered {} {:.2} s after the policy write ({:.0} Works/s); controller-manager CPU {:.2} s",
            if round == 1 {
                "policy created"
            } else {
                "policy updated"
            },
            updated,
            if done { "in" } else { "TIMED OUT after" },
            elapsed,
            updated as f64 / elapsed,
            cpu1 - cpu0
        );
    }
}

fn main() {
    if std::env::var("RUST_LOG").is_ok() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    // The bench harness passes `--bench`; nothing to parse.
    let scenarios: Vec<Scenario> = env_str("SCENARIO")
        .unwrap_or_else(|| "A,B".into())
        .split(',')
        .map(|s| Scenario::preset(s.trim()))
        .collect();
    println!(
        "propagation benchmark, binary {} (targets: p50 <= {TARGET_P50_MS:.0} ms, p99 <= {TARGET_P99_MS:.0} ms, controller-manager RSS <= {TARGET_RSS_MIB} MiB)",
        binary().display()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for sc in &scenarios {
        rt.block_on(run_scenario(sc));
    }
}
