//! Merged reads at scale, with the per-cluster watch caches off and on: for each K in
//! `FLOTILLA_BENCH_MEMBERS` (default `10,100,500`) and each mode in `FLOTILLA_BENCH_CACHE`
//! (default `off,on`), a fresh `flotilla local-up --members 0 --member-cache=<mode>`
//! (host, aggregated API server and controllers in one process, so the host reaches the
//! aggregated server through the in-memory transport) and one `flotilla member-sim --clusters
//! K` process joined to it. Every member holds 100 Deployments `d-0` .. `d-99` (replicas 0,
//! created through the member's own API) and the host holds 100 templates with the same names,
//! so every merged item is a template merged with K member copies; member 1 also holds
//! `watch-probe` (no template). Prints:
//! - merged LIST of deployments on the host, JSON and as a Table: p50/p99/max over N
//!   sequential requests (targets at K=100: p99 <= 300 ms uncached, <= 50 ms cached; with
//!   the caches on, measured once they hold every member's objects, as `/metrics` says);
//! - a direct LIST of the same resource on one member (100 items) and the ratio;
//! - watch delivery: a watch on the host's merged deployments from a LIST's resourceVersion,
//!   then `watch-probe` patched in member 1 (an annotation), waiting for each event: p50/p99
//!   from the patch request to the event (target p99 <= 100 ms);
//! - the override's cost on a GET of one Deployment: (a) on the host (merged, in-process
//!   transport), (b) the same merged GET sent straight to the aggregated server's
//!   `search.karmada.io` path, (c) a template GET on the host (`X-Flotilla-Read-From:
//!   templates`); the percentage (a) adds over (b) (target <= 25%) and over (c);
//! - local-up's CPU over the measurements and its RSS.
//!
//! Run: `cargo build --release --bin flotilla && cargo bench -p flotilla-e2e --bench
//! merged_reads` (FLOTILLA_BIN overrides the binary, else the release build under
//! `$CARGO_TARGET_DIR` or `target/`; FLOTILLA_BENCH_REQUESTS the N of each sample, default 50;
//! FLOTILLA_BENCH_PATCHES the watch samples, default 100).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};
use support::{
    Proc, join_member_sims, kube_client, kube_config, percentile, ready_name_url, release_bin,
    spawn_ready_lines,
};

const PER_MEMBER: usize = 100;
const JSON: &str = "application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const SEARCH: &str = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy";
const SEQ_ANNOTATION: &str = "bench.flotilla.io/seq";

fn env_u32(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn members_list() -> Vec<u32> {
    std::env::var("FLOTILLA_BENCH_MEMBERS")
        .unwrap_or_else(|_| "10,100,500".into())
        .split(',')
        .filter_map(|v| v.trim().parse().ok())
        .filter(|k| *k >= 2)
        .collect()
}

/// Latencies in milliseconds, sorted.
struct Sample(Vec<f64>);

impl Sample {
    fn new(mut ms: Vec<f64>) -> Self {
        ms.sort_by(|a, b| a.total_cmp(b));
        Self(ms)
    }
    fn p50(&self) -> f64 {
        percentile(&self.0, 0.5)
    }
    fn p99(&self) -> f64 {
        percentile(&self.0, 0.99)
    }
    fn max(&self) -> f64 {
        self.0.last().copied().unwrap_or(f64::NAN)
    }
    fn show(&self) -> String {
        format!(
            "p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (n={})",
            self.p50(),
            self.p99(),
            self.max(),
            self.0.len()
        )
    }
}

/// One GET of `path` with `accept` (and an optional extra header): its time and body.
async fn get(
    client: &kube::Client,
    path: &str,
    accept: &str,
    header: Option<(&str, &str)>,
) -> Result<(f64, String), kube::Error> {
    let mut req = http::Request::get(path).header(http::header::ACCEPT, accept);
    if let Some((k, v)) = header {
        req = req.header(k, v);
    }
    let req = req.body(Vec::new()).unwrap();
    let t = Instant::now();
    let body = client.request_text(req).await?;
    Ok((t.elapsed().as_secs_f64() * 1000.0, body))
}

/// `n` sequential GETs; the sample, the first body and how many failed (with the first error).
async fn sample(
    client: &kube::Client,
    path: &str,
    accept: &str,
    header: Option<(&str, &str)>,
    n: u32,
) -> (Sample, String, u32, Option<String>) {
    let mut ms = Vec::new();
    let mut first = String::new();
    let mut failed = 0;
    let mut first_err = None;
    for _ in 0..n {
        match get(client, path, accept, header).await {
            Ok((t, body)) => {
                if first.is_empty() {
                    first = body;
                }
                ms.push(t);
            }
            Err(e) => {
                failed += 1;
                first_err.get_or_insert_with(|| e.to_string());
            }
        }
    }
    (Sample::new(ms), first, failed, first_err)
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "bench"}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "bench"}},
            "template": {
                "metadata": {"labels": {"app": "bench"}},
                "spec": {"containers": [{"name": "c", "image": "bench"}]}
            }
        }
    }))
    .unwrap()
}

fn failures(failed: u32, err: &Option<String>) -> String {
    match err {
        Some(e) if failed > 0 => format!("; {failed} FAILED (first: {e})"),
        _ => String::new(),
    }
}

fn cache_modes() -> Vec<bool> {
    std::env::var("FLOTILLA_BENCH_CACHE")
        .unwrap_or_else(|_| "off,on".into())
        .split(',')
        .filter_map(|m| match m.trim() {
            "on" => Some(true),
            "off" => Some(false),
            _ => None,
        })
        .collect()
}

/// One gauge of the aggregated server's `/metrics`.
async fn gauge(agg: &kube::Client, name: &str) -> Option<i64> {
    let text = get(agg, "/metrics", "text/plain", None).await.ok()?.1;
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

async fn run(k: u32, cache: bool, requests: u32, patches: u32) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let bin = release_bin();
    let mode = if cache { "on" } else { "off" };
    println!(
        "\n== K = {k} member-sims, {PER_MEMBER} Deployments each, {PER_MEMBER} templates on the host, caches {mode} =="
    );

    let host_dir = d.join("host");
    let (local_up, lines) = spawn_ready_lines(
        &bin,
        &[
            "local-up",
            "--data-dir",
            host_dir.to_str().unwrap(),
            "--port",
            "0",
            "--members",
            "0",
            &format!("--member-cache={cache}"),
        ],
        &d.join("local-up.log"),
        1,
        Duration::from_secs(300),
    );
    // "Flotilla is ready at URL (aggregated API server at URL2, 0 member clusters)"
    let (_, host_url) = ready_name_url(&lines[0]);
    let agg_url = lines[0]
        .split_once("aggregated API server at ")
        .and_then(|(_, rest)| rest.split([',', ')', ' ']).next())
        .unwrap()
        .to_string();
    let kubeconfig = host_dir.join("kubeconfig");
    let host = kube_client(&kubeconfig, None).await;

    let members_dir = d.join("members");
    let started = Instant::now();
    let (members, ready) = spawn_ready_lines(
        &bin,
        &[
            "member-sim",
            "--clusters",
            &k.to_string(),
            "--name",
            "m",
            "--nodes",
            "1",
            "--in-memory",
            "--data-dir",
            members_dir.to_str().unwrap(),
        ],
        &d.join("members.log"),
        k as usize,
        Duration::from_secs(600),
    );
    let urls: Vec<(String, String)> = ready.iter().map(|l| ready_name_url(l)).collect();
    println!(
        "setup: host {host_url}, aggregated {agg_url}; {k} member-sims started in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let t = Instant::now();
    join_member_sims(&host, &members_dir, &urls, 16).await;
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(host.clone());
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let list = clusters.list(&Default::default()).await.unwrap();
        let ready = list.items.iter().filter(|c| c.is_ready()).count();
        if ready == k as usize {
            break;
        }
        if Instant::now() > deadline {
            println!("WARNING: only {ready}/{k} clusters Ready after 600 s; measuring anyway");
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "setup: joined and Ready in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // Deployments in every member (through each member's API), templates on the host.
    let t = Instant::now();
    let mut member_clients = Vec::new();
    for (name, _) in &urls {
        let kc = members_dir.join(name).join("kubeconfig");
        member_clients.push(kube_client(&kc, None).await);
    }
    // Name-major order, so the concurrent creates go to different members: member-major
    // order opens up to 64 pooled connections per member (20k fds at K=500).
    let members_n = member_clients.len();
    let jobs: Vec<(usize, usize)> = (0..PER_MEMBER)
        .flat_map(|i| (0..members_n).map(move |m| (m, i)))
        .collect();
    let create_failed: usize = futures::stream::iter(jobs)
        .map(|(m, i)| {
            let api: Api<Deployment> = Api::namespaced(member_clients[m].clone(), "default");
            async move {
                api.create(&PostParams::default(), &deployment(&format!("d-{i}")))
                    .await
                    .is_err() as usize
            }
        })
        .buffer_unordered(64)
        .collect::<Vec<_>>()
        .await
        .iter()
        .sum();
    let probe_api: Api<Deployment> = Api::namespaced(member_clients[0].clone(), "default");
    probe_api
        .create(&PostParams::default(), &deployment("watch-probe"))
        .await
        .unwrap();
    let host_deploys: Api<Deployment> = Api::namespaced(host.clone(), "default");
    let template_failed: usize = futures::stream::iter(0..PER_MEMBER)
        .map(|i| {
            let api = host_deploys.clone();
            async move {
                api.create(&PostParams::default(), &deployment(&format!("d-{i}")))
                    .await
                    .is_err() as usize
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .iter()
        .sum();
    println!(
        "setup: {} member Deployments + {PER_MEMBER} host templates created in {:.1} s ({create_failed} member / {template_failed} template creates failed)",
        k as usize * PER_MEMBER,
        t.elapsed().as_secs_f64()
    );

    let mut agg_config = kube_config(&kubeconfig, None).await;
    agg_config.cluster_url = agg_url.parse().unwrap();
    agg_config.accept_invalid_certs = true;
    let agg = kube::Client::try_from(agg_config).unwrap();
    if cache {
        // The first read makes one cache per member; measure once they hold everything.
        let t = Instant::now();
        let want = i64::from(k) * PER_MEMBER as i64 + 1;
        let deadline = Instant::now() + Duration::from_secs(300);
        let _ = get(&host, "/apis/apps/v1/deployments", JSON, None).await;
        loop {
            let held = gauge(&agg, "flotilla_merged_read_cache_objects").await;
            if held >= Some(want) {
                break;
            }
            if Instant::now() > deadline {
                println!("WARNING: the caches hold {held:?} of {want} objects after 300 s");
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        println!(
            "setup: caches filled in {:.1} s ({} objects, {} KiB, {} caches)",
            t.elapsed().as_secs_f64(),
            gauge(&agg, "flotilla_merged_read_cache_objects")
                .await
                .unwrap_or(0),
            gauge(&agg, "flotilla_merged_read_cache_bytes")
                .await
                .unwrap_or(0)
                / 1024,
            gauge(&agg, "flotilla_merged_read_caches")
                .await
                .unwrap_or(0),
        );
    }

    let pid = local_up.0.id();
    let (cpu0, _, _) = flotilla_testenv::proc_usage(pid);
    let w0 = Instant::now();

    // 1. Merged LIST on the host, JSON and Table.
    let list_path = "/apis/apps/v1/deployments";
    let (json_s, body, failed, err) = sample(&host, list_path, JSON, None, requests).await;
    let list: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let items = list["items"].as_array().map(Vec::len).unwrap_or(0);
    let answered = list["items"]
        .as_array()
        .and_then(|items| {
            items
                .iter()
                .find(|i| i["metadata"]["name"] == "d-0")
                .and_then(|i| i["metadata"]["annotations"]["search.flotilla.io/clusters"].as_str())
        })
        .map(|c| c.split(',').filter(|s| !s.is_empty()).count())
        .unwrap_or(0);
    println!(
        "merged LIST JSON  (host {list_path}, {items} items, d-0 merged from {answered}/{k} members): {}{} [target at K=100: p99 <= {} ms]",
        json_s.show(),
        failures(failed, &err),
        if cache { 50 } else { 300 }
    );
    let (table_s, body, failed, err) = sample(&host, list_path, TABLE, None, requests).await;
    let rows = serde_json::from_str::<Value>(&body).unwrap_or(Value::Null)["rows"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    println!(
        "merged LIST Table (host, {rows} rows): {}{}",
        table_s.show(),
        failures(failed, &err)
    );

    // 2. Direct LIST on one member (the second: exactly 100 items).
    let direct_client = &member_clients[1];
    let (direct_s, body, failed, err) =
        sample(direct_client, list_path, JSON, None, requests).await;
    let direct_items = serde_json::from_str::<Value>(&body).unwrap_or(Value::Null)["items"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    println!(
        "direct LIST JSON  (member {}, {direct_items} items): {}{}",
        urls[1].0,
        direct_s.show(),
        failures(failed, &err)
    );
    println!(
        "ratio merged/direct: p50 {:.1}x, p99 {:.1}x (Table: p50 {:.1}x)",
        json_s.p50() / direct_s.p50(),
        json_s.p99() / direct_s.p99(),
        table_s.p50() / direct_s.p50()
    );

    // 3. Watch delivery: watch the merged list from its resourceVersion, patch in a member.
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let all: Api<Deployment> = Api::all(host.clone());
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, String)>();
    let watcher = tokio::spawn(async move {
        let mut rv = rv;
        loop {
            let stream = match all.watch(&WatchParams::default().timeout(290), &rv).await {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("watch failed: {e}");
                    return;
                }
            };
            let mut stream = stream.boxed();
            loop {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Added(d) | WatchEvent::Modified(d))) => {
                        let now = Instant::now();
                        if let Some(v) = d.metadata.resource_version.clone() {
                            rv = v;
                        }
                        if d.metadata.name.as_deref() == Some("watch-probe") {
                            let seq = d
                                .metadata
                                .annotations
                                .as_ref()
                                .and_then(|a| a.get(SEQ_ANNOTATION).cloned())
                                .unwrap_or_default();
                            if tx.send((now, seq)).is_err() {
                                return;
                            }
                        }
                    }
                    Ok(Some(WatchEvent::Bookmark(b))) => rv = b.metadata.resource_version,
                    Ok(Some(WatchEvent::Error(e))) => {
                        eprintln!("watch error event: {e:?}");
                        return;
                    }
                    Ok(Some(WatchEvent::Deleted(_))) => {}
                    Ok(None) => break,
                    Err(e) => {
                        eprintln!("watch stream failed: {e}");
                        return;
                    }
                }
            }
        }
    });
    // Let the watch establish before the first patch.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut watch_ms = Vec::new();
    let mut patch_ms = Vec::new();
    let mut missed = 0;
    let mut slowest = (0, 0.0);
    for i in 0..patches {
        let seq = format!("{i}-{}", w0.elapsed().as_nanos());
        let patch = json!({"metadata": {"annotations": {SEQ_ANNOTATION: seq}}});
        let t = Instant::now();
        probe_api
            .patch(
                "watch-probe",
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .unwrap();
        patch_ms.push(t.elapsed().as_secs_f64() * 1000.0);
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        let mut got = false;
        while let Ok(Some((at, s))) = tokio::time::timeout_at(deadline, rx.recv()).await {
            if s == seq {
                let ms = at.duration_since(t).as_secs_f64() * 1000.0;
                if ms > slowest.1 {
                    slowest = (i, ms);
                }
                watch_ms.push(ms);
                got = true;
                break;
            }
        }
        if !got {
            missed += 1;
        }
    }
    watcher.abort();
    let watch_s = Sample::new(watch_ms);
    let patch_s = Sample::new(patch_ms);
    println!(
        "watch delivery (member patch -> host merged watch event): {}; slowest: patch #{}; {missed}/{patches} not seen within 10 s [target: p99 <= 100 ms] (the member PATCH alone: p50 {:.1} ms, p99 {:.1} ms)",
        watch_s.show(),
        slowest.0,
        patch_s.p50(),
        patch_s.p99()
    );

    // 4. GET of one Deployment: merged on the host vs straight to the aggregated server vs
    // the template.
    let gets = requests * 4;
    let item = "/apis/apps/v1/namespaces/default/deployments/d-0";
    let (host_get, _, f1, e1) = sample(&host, item, JSON, None, gets).await;
    let (agg_get, _, f2, e2) = sample(&agg, &format!("{SEARCH}{item}"), JSON, None, gets).await;
    let (tmpl_get, _, f3, e3) = sample(
        &host,
        item,
        JSON,
        Some(("X-Flotilla-Read-From", "templates")),
        gets,
    )
    .await;
    println!(
        "GET (a) host, merged, in-process transport:  {}{}",
        host_get.show(),
        failures(f1, &e1)
    );
    println!(
        "GET (b) aggregated server search path:       {}{}",
        agg_get.show(),
        failures(f2, &e2)
    );
    println!(
        "GET (c) host template (X-Flotilla-Read-From): {}{}",
        tmpl_get.show(),
        failures(f3, &e3)
    );
    println!(
        "in-process override adds over (b): p50 {:+.0}%, p99 {:+.0}% [target <= 25%]; merged (a) over template (c): p50 {:+.0}%",
        (host_get.p50() / agg_get.p50() - 1.0) * 100.0,
        (host_get.p99() / agg_get.p99() - 1.0) * 100.0,
        (host_get.p50() / tmpl_get.p50() - 1.0) * 100.0
    );

    let (cpu1, rss, hwm) = flotilla_testenv::proc_usage(pid);
    let wall = w0.elapsed().as_secs_f64();
    let (_, sims_rss, _) = flotilla_testenv::proc_usage(members.0.id());
    println!(
        "local-up during the measurements ({wall:.0} s): CPU {:.0}% of one core, RSS {} MiB (peak {} MiB); member-sim process RSS {} MiB",
        (cpu1 - cpu0) / wall * 100.0,
        rss / 1024,
        hwm / 1024,
        sims_rss / 1024
    );
    drop(members);
    drop::<Proc>(local_up);
}

#[tokio::main]
async fn main() {
    let requests = env_u32("FLOTILLA_BENCH_REQUESTS", 50);
    let patches = env_u32("FLOTILLA_BENCH_PATCHES", 100);
    println!("merged reads, binary {}", release_bin().display());
    for k in members_list() {
        for cache in cache_modes() {
            run(k, cache, requests, patches).await;
        }
    }
}
