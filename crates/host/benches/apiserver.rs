//! Throughput and latency of the host API server, measured the way users reach it: the host
//! runs in-process on a free port with a fresh data directory (the real embedded, durable
//! storage) and is driven over TLS by kube-rs clients built from the kubeconfig it writes.
//!
//! Phases: durable creates, single-object GETs, LIST of 10,000 Deployments (JSON and Table),
//! and watch fan-out to 100 watchers with a zero-loss check. It prints figures and never
//! asserts on timing; it fails only when the server answers wrongly (an error, a lost or
//! reordered watch event, a short list).
//!
//! Run: `cargo bench -p flotilla-host --bench apiserver`.
//!
//! `FLOTILLA_BENCH_STORAGE=etcd` runs the host on a real single-member etcd (started on a
//! loopback port; `etcd` on PATH) instead of the embedded store, and
//! `FLOTILLA_BENCH_REPLICAS=N` runs N host replicas on it, the clients spread over them
//! (writes through one replica, watches on the first).

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use serde::Deserialize;
use serde_json::{Value, json};

/// Concurrent clients of the create and GET phases.
const CLIENTS: usize = 16;
/// How long the create and GET phases run.
const PHASE: Duration = Duration::from_secs(5);
/// Deployments in the LIST namespace.
const LIST_OBJECTS: usize = 10_000;
/// LISTs timed per representation.
const LISTS: usize = 20;
/// Watchers of the watch phase.
const WATCHERS: usize = 100;
/// Writes the watch phase makes (each watcher must see all of them, in order).
const WATCH_WRITES: usize = 5_000;
/// Concurrent writers of the watch phase.
const WATCH_WRITERS: usize = 16;
/// The longest a watcher waits for its events before the phase is declared lossy.
const WATCH_DEADLINE: Duration = Duration::from_secs(120);

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("flotilla host API server benchmark");
    println!(
        "machine: {cores} cores; the server, its storage writer and every client share this \
         one process and these cores (client CPU is included in every figure)"
    );
    let etcd_storage = std::env::var("FLOTILLA_BENCH_STORAGE").as_deref() == Ok("etcd");
    let replicas: usize = std::env::var("FLOTILLA_BENCH_REPLICAS")
        .ok()
        .map(|r| r.parse())
        .transpose()
        .context("FLOTILLA_BENCH_REPLICAS")?
        .unwrap_or(1);
    ensure!(
        replicas == 1 || etcd_storage,
        "several replicas need FLOTILLA_BENCH_STORAGE=etcd"
    );
    println!(
        "transport: TLS (rustls) + HTTP/1.1 (kube-rs negotiates no HTTP/2), one connection per \
         concurrent client; storage: {}; {replicas} host replica(s)",
        if etcd_storage {
            "etcd (one member, a separate process on this machine, default fsync)"
        } else {
            "embedded redb, fsync per commit (group commit)"
        }
    );
    rss("startup (before the host)")?;

    let dir = tempfile::tempdir().context("temp data dir")?;
    let mut opts = flotilla_host::HostOptions::new(dir.path().join("host"));
    opts.secure_port = 0;
    let etcd = if etcd_storage {
        let etcd = flotilla_etcd::testing::EtcdCluster::start(1).await;
        opts.storage = flotilla_etcd::StorageChoice::Etcd(flotilla_etcd::EtcdOptions::new(
            etcd.endpoints(),
            "/registry/flotilla/host",
        ));
        Some(etcd)
    } else {
        None
    };
    let hosts = flotilla_host::start_replicas(opts, replicas)
        .await
        .context("starting the host")?;
    for host in &hosts {
        println!(
            "host: {} data dir {}",
            host.url(),
            host.kubeconfig.display()
        );
    }
    rss("host started")?;

    let kubeconfigs: Vec<&Path> = hosts.iter().map(|h| h.kubeconfig.as_path()).collect();
    let clients = connect_clients(&kubeconfigs, CLIENTS).await?;
    let host = &hosts[0];
    for ns in ["bench-create", "bench-list", "bench-watch"] {
        create_namespace(&clients[0], ns).await?;
    }

    // `FLOTILLA_BENCH_PHASES=create,get,list,watch` (any subset) runs only those, e.g. to
    // profile one; GETs read what the create phase made, so `get` implies `create`.
    let phases = std::env::var("FLOTILLA_BENCH_PHASES").unwrap_or_default();
    let wanted = |p: &str| phases.is_empty() || phases.split(',').any(|x| x.trim() == p);
    if wanted("create") || wanted("get") {
        let names = phase_creates(&clients).await?;
        rss("after creates")?;
        if wanted("get") {
            phase_gets(&clients, &names).await?;
            rss("after GETs")?;
        }
    }
    if wanted("list") {
        phase_list(&clients).await?;
        rss("after LISTs")?;
    }
    if wanted("watch") {
        phase_watch(&host.kubeconfig, &clients).await?;
        rss("after watch")?;
    }

    for host in hosts {
        host.stop().await;
    }
    drop(etcd);
    Ok(())
}

// === Phase 1: durable creates ===

/// Creates ConfigMaps of about 1 KB from every client for [`PHASE`]; returns their names.
async fn phase_creates(clients: &[kube::Client]) -> Result<Vec<String>> {
    println!();
    println!(
        "== 1. durable creates: {} clients, ConfigMaps, {:?} ==",
        clients.len(),
        PHASE
    );
    let sample = config_map("size-probe", 0);
    let api: Api<ConfigMap> = Api::namespaced(clients[0].clone(), "bench-create");
    let stored = api.create(&PostParams::default(), &sample).await?;
    println!(
        "object size: request body {} B, stored object {} B (with server-set metadata and managedFields)",
        serde_json::to_vec(&sample)?.len(),
        serde_json::to_vec(&stored)?.len()
    );

    let cpu = CpuMark::now();
    let started = Instant::now();
    let deadline = started + PHASE;
    let tasks: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(worker, client)| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench-create");
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut names = Vec::new();
                let mut i = 0usize;
                while Instant::now() < deadline {
                    let name = format!("cm-{worker}-{i}");
                    let cm = config_map(&name, worker);
                    let t = Instant::now();
                    api.create(&PostParams::default(), &cm)
                        .await
                        .with_context(|| format!("creating {name}"))?;
                    latencies.push(t.elapsed());
                    names.push(name);
                    i += 1;
                }
                anyhow::Ok((latencies, names))
            })
        })
        .collect();
    let (latencies, names) = join_workers(tasks).await?;
    let elapsed = started.elapsed();
    let count = latencies.len();
    report_rate("creates", latencies, elapsed, 3_000.0);
    cpu.report(count);
    Ok(names)
}

// === Phase 2: GETs ===

/// GETs the objects of phase 1 from every client for [`PHASE`].
async fn phase_gets(clients: &[kube::Client], names: &[String]) -> Result<()> {
    println!();
    println!(
        "== 2. GETs of single objects: {} clients, {} ConfigMaps to pick from, {:?} ==",
        clients.len(),
        names.len(),
        PHASE
    );
    ensure!(!names.is_empty(), "phase 1 created nothing");
    let names: Arc<Vec<String>> = Arc::new(names.to_vec());
    let cpu = CpuMark::now();
    let started = Instant::now();
    let deadline = started + PHASE;
    let tasks: Vec<_> = clients
        .iter()
        .enumerate()
        .map(|(worker, client)| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), "bench-create");
            let names = Arc::clone(&names);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                // A cheap deterministic spread over the objects (no shared RNG).
                let mut x = (worker as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                while Instant::now() < deadline {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let name = &names[(x % names.len() as u64) as usize];
                    let t = Instant::now();
                    let cm = api
                        .get(name)
                        .await
                        .with_context(|| format!("getting {name}"))?;
                    latencies.push(t.elapsed());
                    ensure!(cm.metadata.name.as_deref() == Some(name.as_str()));
                }
                anyhow::Ok((latencies, Vec::<String>::new()))
            })
        })
        .collect();
    let (latencies, _) = join_workers(tasks).await?;
    let elapsed = started.elapsed();
    let count = latencies.len();
    report_rate("GETs", latencies, elapsed, 20_000.0);
    cpu.report(count);
    Ok(())
}

// === Phase 3: LIST ===

async fn phase_list(clients: &[kube::Client]) -> Result<()> {
    println!();
    println!("== 3. LIST of {LIST_OBJECTS} Deployments in one namespace ==");
    let next = Arc::new(AtomicUsize::new(0));
    let cpu = CpuMark::now();
    let started = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| {
            let api: Api<Deployment> = Api::namespaced(client.clone(), "bench-list");
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= LIST_OBJECTS {
                        break;
                    }
                    let d = deployment(i)?;
                    api.create(&PostParams::default(), &d)
                        .await
                        .with_context(|| format!("creating deployment {i}"))?;
                }
                anyhow::Ok((Vec::new(), Vec::new()))
            })
        })
        .collect();
    join_workers(tasks).await?;
    let fill = started.elapsed();
    println!(
        "filled: {LIST_OBJECTS} Deployments created by {} clients in {:.2} s ({:.0}/s)",
        clients.len(),
        fill.as_secs_f64(),
        LIST_OBJECTS as f64 / fill.as_secs_f64()
    );
    cpu.report(LIST_OBJECTS);
    rss("after filling the LIST namespace")?;

    let client = &clients[0];
    let path = "/apis/apps/v1/namespaces/bench-list/deployments";

    let cpu = CpuMark::now();
    // Plain JSON, timed until the whole body is in (no client-side decoding).
    let (json_times, json_bytes) = time_lists(client, path, None, |body| {
        let v: Value = serde_json::from_str(body)?;
        let n = v["items"].as_array().map_or(0, Vec::len);
        ensure!(n == LIST_OBJECTS, "the list has {n} items");
        Ok(())
    })
    .await?;
    report_latency(
        &format!(
            "LIST as JSON ({:.1} MB, body received, not decoded)",
            mb(json_bytes)
        ),
        json_times,
        150,
    );
    cpu.report(LISTS + 1);
    let cpu = CpuMark::now();

    // A Table, as `kubectl get` asks for it.
    let (table_times, table_bytes) = time_lists(client, path, Some(TABLE_ACCEPT), |body| {
        let v: Value = serde_json::from_str(body)?;
        ensure!(v["kind"] == "Table", "not a Table: {}", v["kind"]);
        let n = v["rows"].as_array().map_or(0, Vec::len);
        ensure!(n == LIST_OBJECTS, "the table has {n} rows");
        Ok(())
    })
    .await?;
    report_latency(
        &format!(
            "LIST as Table ({:.1} MB, body received, not decoded)",
            mb(table_bytes)
        ),
        table_times,
        150,
    );
    cpu.report(LISTS + 1);

    // For reference: kube-rs decoding the list into typed Deployments, as a controller would.
    let api: Api<Deployment> = Api::namespaced(client.clone(), "bench-list");
    let mut typed = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let list = api.list(&ListParams::default()).await?;
        typed.push(t.elapsed());
        ensure!(list.items.len() == LIST_OBJECTS);
    }
    report_latency(
        "LIST via kube-rs Api::list (includes client-side typed decoding; 5 runs)",
        typed,
        0,
    );
    Ok(())
}

/// Times [`LISTS`] GETs of `path` (after one checked, untimed warm-up); returns the latencies
/// and the body size.
async fn time_lists(
    client: &kube::Client,
    path: &str,
    accept: Option<&str>,
    check: impl Fn(&str) -> Result<()>,
) -> Result<(Vec<Duration>, usize)> {
    let request = || -> Result<http::Request<Vec<u8>>> {
        let mut req = kube::core::Request::new(path).list(&ListParams::default())?;
        if let Some(a) = accept {
            req.headers_mut()
                .insert(http::header::ACCEPT, http::HeaderValue::from_str(a)?);
        }
        Ok(req)
    };
    let body = client.request_text(request()?).await?;
    check(&body)?;
    let size = body.len();
    let mut times = Vec::with_capacity(LISTS);
    for _ in 0..LISTS {
        let req = request()?;
        let t = Instant::now();
        let body = client.request_text(req).await?;
        times.push(t.elapsed());
        ensure!(body.len() >= size / 2, "short list body: {} B", body.len());
    }
    Ok((times, size))
}

// === Phase 4: watch fan-out ===

/// What a watcher decodes of each event: enough to check order and completeness.
#[derive(Clone, Deserialize)]
struct Slim {
    metadata: SlimMeta,
}

#[derive(Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SlimMeta {
    name: String,
    resource_version: String,
}

async fn phase_watch(kubeconfig: &Path, writers: &[kube::Client]) -> Result<()> {
    println!();
    println!(
        "== 4. watch fan-out: {WATCHERS} watchers on ConfigMaps in one namespace, {WATCH_WRITES} creates by {WATCH_WRITERS} concurrent writers =="
    );
    let ns = "bench-watch";
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    // The revision the watches start from: the list's, so every write below comes after it.
    let api: Api<ConfigMap> = Api::namespaced(writers[0].clone(), ns);
    let start_rv = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("list without resourceVersion")?;

    // One pooled kube-rs client for the watchers: HTTP/1.1 gives each watch its own
    // connection (100 TLS connections).
    let watch_client = client_for(kubeconfig).await?;
    let mut streams = Vec::with_capacity(WATCHERS);
    let opened = Instant::now();
    for _ in 0..WATCHERS {
        let req = kube::core::Request::new(&path)
            .watch(&WatchParams::default().timeout(290), &start_rv)?;
        streams.push(watch_client.request_events::<Slim>(req));
    }
    let streams = futures::future::try_join_all(streams).await?;
    println!(
        "{WATCHERS} watch streams open at resourceVersion {start_rv} in {:.0} ms",
        opened.elapsed().as_secs_f64() * 1e3
    );

    let watchers: Vec<_> = streams
        .into_iter()
        .map(|stream| {
            tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                let mut revisions: Vec<u64> = Vec::with_capacity(WATCH_WRITES);
                let mut last = 0u64;
                let mut last_at = Instant::now();
                let collect = async {
                    while revisions.len() < WATCH_WRITES {
                        let Some(event) = stream.next().await else {
                            bail!("the watch ended after {} events", revisions.len());
                        };
                        match event? {
                            WatchEvent::Added(obj) => {
                                let rv: u64 = obj.metadata.resource_version.parse()?;
                                ensure!(
                                    rv > last,
                                    "out of order: {} at {rv} after {last}",
                                    obj.metadata.name
                                );
                                last = rv;
                                revisions.push(rv);
                                last_at = Instant::now();
                            }
                            WatchEvent::Bookmark(_) => {}
                            WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                                bail!("unexpected change to {}", o.metadata.name)
                            }
                            WatchEvent::Error(e) => bail!("watch error: {e:?}"),
                        }
                    }
                    Ok(())
                };
                match tokio::time::timeout(WATCH_DEADLINE, collect).await {
                    Ok(result) => result?,
                    Err(_) => bail!(
                        "only {} of {WATCH_WRITES} events within {WATCH_DEADLINE:?}",
                        revisions.len()
                    ),
                }
                anyhow::Ok((revisions, last_at))
            })
        })
        .collect();

    let next = Arc::new(AtomicUsize::new(0));
    let cpu = CpuMark::now();
    let first_write = Instant::now();
    let tasks: Vec<_> = writers
        .iter()
        .take(WATCH_WRITERS)
        .map(|client| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= WATCH_WRITES {
                        break;
                    }
                    let cm = config_map(&format!("w-{i}"), i % WATCH_WRITERS);
                    let created = api.create(&PostParams::default(), &cm).await?;
                    let rv = created
                        .metadata
                        .resource_version
                        .context("created without resourceVersion")?;
                    revisions.push(rv);
                }
                anyhow::Ok((Vec::new(), revisions))
            })
        })
        .collect();
    let (_, written) = join_workers(tasks).await?;
    let writes_done = first_write.elapsed();
    let mut written: Vec<u64> = written
        .iter()
        .map(|rv| rv.parse::<u64>())
        .collect::<Result<_, _>>()?;
    written.sort_unstable();

    let mut last_delivery = first_write;
    let mut failures = Vec::new();
    for (i, watcher) in watchers.into_iter().enumerate() {
        match watcher.await? {
            Ok((revisions, last_at)) => {
                // Exactly the writes, in commit order: nothing lost, duplicated or reordered.
                if revisions != written {
                    failures.push(format!(
                        "watcher {i}: {} events, not the {} writes in order",
                        revisions.len(),
                        written.len()
                    ));
                }
                last_delivery = last_delivery.max(last_at);
            }
            Err(e) => failures.push(format!("watcher {i}: {e:#}")),
        }
    }
    if !failures.is_empty() {
        for f in &failures {
            println!("LOSS: {f}");
        }
        bail!(
            "{} of {WATCHERS} watchers did not get every event",
            failures.len()
        );
    }
    let unique: HashSet<u64> = written.iter().copied().collect();
    ensure!(
        unique.len() == WATCH_WRITES,
        "duplicate revisions among the writes"
    );

    let delivered = (WATCH_WRITES * WATCHERS) as f64;
    let span = last_delivery.duration_since(first_write);
    println!(
        "writes: {WATCH_WRITES} creates in {:.2} s ({:.0}/s)",
        writes_done.as_secs_f64(),
        WATCH_WRITES as f64 / writes_done.as_secs_f64()
    );
    println!(
        "zero loss: every one of {WATCHERS} watchers received exactly {WATCH_WRITES} ADDED events, \
         in resourceVersion order, matching the {WATCH_WRITES} acknowledged writes"
    );
    println!(
        "delivered: {:.0} events in {:.2} s (first write -> last watcher got last event) = {:.0} events/s; \
         last delivery {:.0} ms after the last write was acknowledged",
        delivered,
        span.as_secs_f64(),
        delivered / span.as_secs_f64(),
        span.saturating_sub(writes_done).as_secs_f64() * 1e3
    );
    cpu.report(WATCH_WRITES * WATCHERS);
    Ok(())
}

// === Objects ===

/// A ConfigMap of about 1 KB: labels, an annotation and a few data entries, one of them a
/// small config file.
fn config_map(name: &str, worker: usize) -> ConfigMap {
    let file: String = (0..12)
        .map(|i| format!("setting_{i:02}: value-{i:04}-{}\n", "x".repeat(40)))
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "labels": {"app": "bench", "tier": "backend", "worker": worker.to_string()},
            "annotations": {"bench.flotilla.io/owner": "apiserver-benchmark"}
        },
        "data": {
            "config.yaml": file,
            "LOG_LEVEL": "info",
            "FEATURE_FLAGS": "alpha,beta,gamma",
            "ENDPOINT": "https://service.example.internal:8443/api"
        }
    }))
    .unwrap_or_default()
}

/// A typical web Deployment (probes, resources, env, ports).
fn deployment(i: usize) -> Result<Deployment> {
    let name = format!("web-{i:05}");
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "labels": {"app": name, "team": format!("team-{}", i % 20)}
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "team": format!("team-{}", i % 20)}},
                "spec": {
                    "containers": [{
                        "name": "web",
                        "image": "registry.example.com/web:1.25.3",
                        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                        "env": [
                            {"name": "MODE", "value": "production"},
                            {"name": "REPLICA_INDEX", "value": i.to_string()},
                            {"name": "UPSTREAM", "value": "http://backend.default.svc:9000"}
                        ],
                        "resources": {
                            "requests": {"cpu": "100m", "memory": "128Mi"},
                            "limits": {"cpu": "500m", "memory": "256Mi"}
                        },
                        "readinessProbe": {
                            "httpGet": {"path": "/healthz", "port": 8080},
                            "periodSeconds": 10
                        }
                    }]
                }
            }
        }
    }))?)
}

// === Helpers ===

async fn client_for(kubeconfig: &Path) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig)?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await?;
    Ok(kube::Client::try_from(config)?)
}

/// `n` independent clients, each with its TLS connection already established, spread over
/// the replicas' kubeconfigs in turn.
async fn connect_clients(kubeconfigs: &[&Path], n: usize) -> Result<Vec<kube::Client>> {
    let mut clients = Vec::with_capacity(n);
    for i in 0..n {
        let client = client_for(kubeconfigs[i % kubeconfigs.len()]).await?;
        client.apiserver_version().await?;
        clients.push(client);
    }
    Ok(clients)
}

async fn create_namespace(client: &kube::Client, name: &str) -> Result<()> {
    let api: Api<Namespace> = Api::all(client.clone());
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}}))?;
    api.create(&PostParams::default(), &ns).await?;
    Ok(())
}

type WorkerResult = Result<(Vec<Duration>, Vec<String>)>;

/// Waits for every worker; concatenates their latencies and names.
async fn join_workers(
    tasks: Vec<tokio::task::JoinHandle<WorkerResult>>,
) -> Result<(Vec<Duration>, Vec<String>)> {
    let mut latencies = Vec::new();
    let mut names = Vec::new();
    for task in tasks {
        let (l, n) = task.await??;
        latencies.extend(l);
        names.extend(n);
    }
    Ok((latencies, names))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn mb(bytes: usize) -> f64 {
    bytes as f64 / 1e6
}

fn verdict(ok: bool) -> &'static str {
    if ok { "meets target" } else { "BELOW TARGET" }
}

fn report_rate(what: &str, mut latencies: Vec<Duration>, elapsed: Duration, target: f64) {
    latencies.sort_unstable();
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    println!(
        "{what}: {} in {:.2} s = {rate:.0}/s (target >= {target:.0}/s: {}); latency p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        latencies.len(),
        elapsed.as_secs_f64(),
        verdict(rate >= target),
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default()),
    );
}

/// Prints median and p99; `target_ms` 0 means no target.
fn report_latency(what: &str, mut times: Vec<Duration>, target_ms: u64) {
    times.sort_unstable();
    let p50 = percentile(&times, 0.5);
    let target = if target_ms == 0 {
        String::new()
    } else {
        format!(
            " (target <= {target_ms} ms: {})",
            verdict(p50 <= Duration::from_millis(target_ms))
        )
    };
    println!(
        "{what}: {} runs, median {:.1} ms, p99 {:.1} ms, min {:.1} ms{target}",
        times.len(),
        ms(p50),
        ms(percentile(&times, 0.99)),
        ms(times.first().copied().unwrap_or_default()),
    );
}

/// CPU time used so far by this process and by the storage writer thread, read from
/// `/proc` (in clock ticks of 10 ms, the Linux `USER_HZ`), with the wall clock.
struct CpuMark {
    wall: Instant,
    process: Duration,
    writer: Duration,
}

impl CpuMark {
    fn now() -> Self {
        let process = std::fs::read_to_string("/proc/self/stat")
            .map(|s| stat_cpu(&s))
            .unwrap_or_default();
        Self {
            wall: Instant::now(),
            process,
            writer: writer_thread_cpu(),
        }
    }

    /// Prints the CPU used since `self`, per operation when `ops` is not zero.
    fn report(&self, ops: usize) {
        let end = Self::now();
        let wall = end.wall.duration_since(self.wall).as_secs_f64();
        let cpu = end.process.saturating_sub(self.process).as_secs_f64();
        let writer = end.writer.saturating_sub(self.writer).as_secs_f64();
        let per_op = if ops == 0 {
            String::new()
        } else {
            format!(", {:.0} us CPU per operation", cpu * 1e6 / ops as f64)
        };
        println!(
            "CPU: {cpu:.2} core-s in {wall:.2} s wall ({:.2} cores busy{per_op}); storage writer thread {writer:.2} core-s; load average {}",
            cpu / wall,
            load_average()
        );
    }
}

/// utime + stime of a `/proc/.../stat` line.
fn stat_cpu(stat: &str) -> Duration {
    // Fields after the command name (which may hold spaces) start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// CPU used by the storage writer thread (`flotilla-storage-writer`, 15 characters in /proc).
fn writer_thread_cpu() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    tasks
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim() == "flotilla-storag")
        })
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .map(|s| stat_cpu(&s))
        .sum()
}

/// The machine's 1-minute load average (other processes compete for the same cores).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

/// Prints this process's resident memory (server and clients together).
fn rss(when: &str) -> Result<()> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap_or("VmRSS: unknown");
    let value = line.trim_start_matches("VmRSS:").trim();
    println!("RSS {when}: {value} (one process: server + benchmark clients)");
    Ok(())
}
