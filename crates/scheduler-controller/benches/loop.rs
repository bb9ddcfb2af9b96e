//! Benchmark of the whole scheduling loop, in process: host + aggregated API server, 100
//! Clusters with status, then a stream of 1,000 ResourceBinding creations (Divided, dynamic
//! weights). Per binding: latency from the create request to the `spec.clusters` write seen
//! by a watch; printed as p50/p90/p99/max, with the throughput.
//!
//! `cargo bench -p flotilla-scheduler-controller --bench loop` (BINDINGS / CLUSTERS /
//! CONCURRENCY / RATE (creations per second) environment variables override the defaults;
//! NO_EVENTS=1 turns Event writing off to measure its cost).

// Benchmark code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_karmada_api::ResourceBinding;
use futures::{StreamExt, TryStreamExt};
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use serde_json::json;

// The allocator the `flotilla` binary uses, so the figures are the product's.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    // RUST_LOG=flotilla_scheduler_controller=warn shows retried write failures.
    if std::env::var("RUST_LOG").is_ok() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

async fn run() {
    let clusters = env_or("CLUSTERS", 100);
    let bindings = env_or("BINDINGS", 1000);
    let concurrency = env_or("CONCURRENCY", 4);
    // Creations per second; 0: as fast as the creators go.
    let rate = env_or("RATE", 0);
    let env = common::Env::start().await;
    let setup = Instant::now();
    futures::stream::iter(0..clusters)
        .map(|i| {
            let env = &env;
            async move { env.add_cluster(&format!("member{i:03}"), 200).await }
        })
        .buffer_unordered(8)
        .collect::<Vec<_>>()
        .await;
    println!(
        "setup: {clusters} clusters with status in {:.0} ms",
        ms(setup.elapsed())
    );

    let sched = flotilla_scheduler_controller::spawn(
        env.client.clone(),
        flotilla_scheduler_controller::SchedulerOptions {
            events: std::env::var("NO_EVENTS").is_err(),
            ..Default::default()
        },
    );

    // The observer: when each binding first appears in the watch, and when it first shows
    // spec.clusters.
    let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let added: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let api: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "default");
    let observer = {
        let seen = seen.clone();
        let added = added.clone();
        let api = api.clone();
        tokio::spawn(async move {
            let mut stream = watcher(api, watcher::Config::default())
                .default_backoff()
                .applied_objects()
                .boxed();
            while let Ok(Some(rb)) = stream.try_next().await {
                let now = Instant::now();
                let name = rb.metadata.name.clone().unwrap_or_default();
                added.lock().entry(name.clone()).or_insert(now);
                if !rb.spec.clusters.is_empty() {
                    seen.lock().entry(name).or_insert(now);
                }
            }
        })
    };
    // Let the scheduler and the observer finish their initial lists.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let created: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
    let start = Instant::now();
    futures::stream::iter(0..bindings)
        .map(|i| {
            let env = &env;
            let created = created.clone();
            async move {
                let name = format!("b{i:05}");
                if rate > 0 {
                    let at = start + Duration::from_secs_f64(i as f64 / rate as f64);
                    tokio::time::sleep_until(at.into()).await;
                }
                let t = Instant::now();
                env.create_binding(
                    &name,
                    &name,
                    3,
                    Some("100m"),
                    json!({"replicaScheduling": {
                        "replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"dynamicWeight": "AvailableReplicas"},
                    }}),
                )
                .await;
                created.lock().insert(name, t);
            }
        })
        .buffer_unordered(concurrency)
        .collect::<Vec<_>>()
        .await;
    let created_in = start.elapsed();
    let deadline = Instant::now() + Duration::from_secs(120);
    while seen.lock().len() < bindings && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let total = start.elapsed();
    let seen = seen.lock().clone();
    let created = created.lock().clone();
    let added = added.lock().clone();
    let mut lat: Vec<Duration> = created
        .iter()
        .filter_map(|(n, t)| seen.get(n).map(|s| s.saturating_duration_since(*t)))
        .collect();
    lat.sort();
    let mut watch_lat: Vec<Duration> = added
        .iter()
        .filter_map(|(n, t)| seen.get(n).map(|s| s.saturating_duration_since(*t)))
        .collect();
    watch_lat.sort();
    let last = seen.values().max().copied().unwrap_or(start);
    println!(
        "stream: {bindings} ResourceBinding creations ({concurrency} concurrent creators, rate {}) in {:.0} ms",
        if rate > 0 {
            format!("{rate}/s")
        } else {
            "unlimited".into()
        },
        ms(created_in)
    );
    println!(
        "scheduled (spec.clusters observed by a watch): {}/{} in {:.0} ms",
        lat.len(),
        bindings,
        ms(last.saturating_duration_since(start).min(total))
    );
    println!(
        "latency create -> spec.clusters: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&lat, 0.50)),
        ms(percentile(&lat, 0.90)),
        ms(percentile(&lat, 0.99)),
        ms(percentile(&lat, 1.0)),
    );
    println!(
        "latency ADDED seen by the watch -> spec.clusters seen by the watch: p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        ms(percentile(&watch_lat, 0.50)),
        ms(percentile(&watch_lat, 0.90)),
        ms(percentile(&watch_lat, 0.99)),
        ms(percentile(&watch_lat, 1.0)),
    );
    println!(
        "throughput: {:.0} bindings/s scheduled (first create to last observed)",
        lat.len() as f64
            / last
                .saturating_duration_since(start)
                .as_secs_f64()
                .max(1e-9)
    );
    let text = sched.metrics_text();
    for line in text.lines().filter(|l| {
        l.starts_with("flotilla_scheduler_schedule_attempts_total")
            || l.starts_with("flotilla_scheduler_algorithm_duration_seconds_sum")
            || l.starts_with("flotilla_scheduler_algorithm_duration_seconds_count")
            || l.starts_with("flotilla_scheduler_e2e_scheduling_duration_seconds_sum")
            || l.starts_with("flotilla_scheduler_e2e_scheduling_duration_seconds_count")
    }) {
        println!("  {line}");
    }
    // Context: the host's own write latency, sequential merge patches of one binding.
    let mut patch_lat = Vec::with_capacity(200);
    for i in 0..200 {
        let t = Instant::now();
        api.patch(
            "b00000",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"metadata": {"labels": {"bench": i.to_string()}}})),
        )
        .await
        .unwrap();
        patch_lat.push(t.elapsed());
    }
    patch_lat.sort();
    println!(
        "host baseline, one sequential merge patch: p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&patch_lat, 0.50)),
        ms(percentile(&patch_lat, 0.99)),
    );
    observer.abort();
    sched.stop().await;
    env.stop().await;
}
