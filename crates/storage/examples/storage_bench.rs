//! Throughput of the embedded backend: durable creates from 16 concurrent clients, gets, a
//! list of 10,000 objects, and watch events delivered to 100 watchers.
//!
//! `cargo run --release -p flotilla-storage --example storage_bench`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use flotilla_storage::{EmbeddedOptions, EmbeddedStorage, ListOptions, Storage};
use futures::StreamExt;
use serde_json::{Value, json};

const CLIENTS: usize = 16;
const WATCHERS: usize = 100;
const LIST_SIZE: usize = 10_000;

/// A ~1 KB object.
fn object(name: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "labels": { "app": "bench", "tier": "storage", "team": "flotilla" },
            "annotations": { "note": "x".repeat(200) },
        },
        "data": { "payload": "y".repeat(600) },
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let storage = Arc::new(EmbeddedStorage::open(
        dir.path(),
        EmbeddedOptions::default(),
    )?);
    println!(
        "object size: {} bytes",
        serde_json::to_vec(&object("sample-object"))?.len()
    );

    // --- durable creates from 16 clients for ~3 s ---
    let stop = Instant::now() + Duration::from_secs(3);
    let started = Instant::now();
    let latencies = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let storage = Arc::clone(&storage);
            let latencies = Arc::clone(&latencies);
            tokio::spawn(async move {
                let mut mine = Vec::new();
                let mut i = 0;
                while Instant::now() < stop {
                    let name = format!("c{c}-{i}");
                    let t = Instant::now();
                    storage
                        .create(&format!("/bench/creates/{name}"), object(&name))
                        .await?;
                    mine.push(t.elapsed());
                    i += 1;
                }
                latencies.lock().extend(mine);
                Ok::<_, flotilla_storage::StorageError>(())
            })
        })
        .collect();
    for c in clients {
        c.await??;
    }
    let elapsed = started.elapsed();
    let mut lat = std::mem::take(&mut *latencies.lock());
    lat.sort_unstable();
    let stats = storage.stats();
    println!(
        "creates: {} in {:.2?} = {:.0}/s durable ({} commits, {:.1} writes/commit, {:.2?}/commit; latency p50 {:.2?} p99 {:.2?})",
        lat.len(),
        elapsed,
        lat.len() as f64 / elapsed.as_secs_f64(),
        stats.commits,
        stats.writes as f64 / stats.commits.max(1) as f64,
        stats.commit_time / u32::try_from(stats.commits.max(1))?,
        lat[lat.len() / 2],
        lat[lat.len() * 99 / 100],
    );

    // --- gets ---
    let keys: Vec<String> = storage
        .list("/bench/creates/", &ListOptions::default())
        .await?
        .items
        .iter()
        .map(|o| o.key.clone())
        .collect();
    let started = Instant::now();
    let mut gets = 0u64;
    while started.elapsed() < Duration::from_secs(1) {
        for key in keys.iter().take(1000) {
            if storage.get(key).await?.is_some() {
                gets += 1;
            }
        }
    }
    println!(
        "gets: {:.0}/s (one task)",
        gets as f64 / started.elapsed().as_secs_f64()
    );

    // --- list of 10,000 objects ---
    let fill: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let storage = Arc::clone(&storage);
            tokio::spawn(async move {
                for i in (c..LIST_SIZE).step_by(CLIENTS) {
                    let name = format!("l{i:05}");
                    storage
                        .create(&format!("/bench/list/{name}"), object(&name))
                        .await?;
                }
                Ok::<_, flotilla_storage::StorageError>(())
            })
        })
        .collect();
    for f in fill {
        f.await??;
    }
    let mut times = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        let listed = storage
            .list("/bench/list/", &ListOptions::default())
            .await?;
        times.push(t.elapsed());
        assert_eq!(listed.items.len(), LIST_SIZE);
    }
    times.sort_unstable();
    println!(
        "list of {LIST_SIZE}: median {:.2?}, min {:.2?}, max {:.2?}",
        times[25], times[0], times[49]
    );

    // --- live events to 100 watchers while 16 clients write ---
    const LIVE_EVENTS: u64 = 6_000;
    let delivered = Arc::new(AtomicU64::new(0));
    let from = storage.current_revision().await;
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        watchers.push({
            let mut stream = storage.watch("/bench/watch/", from).await?;
            let delivered = Arc::clone(&delivered);
            tokio::spawn(async move {
                let mut seen = 0;
                while seen < LIVE_EVENTS {
                    match stream.next().await {
                        Some(Ok(_)) => seen += 1,
                        other => return Err(format!("watch ended early: {other:?}")),
                    }
                }
                delivered.fetch_add(seen, Ordering::Relaxed);
                Ok(Instant::now())
            })
        });
    }
    let before = storage.stats();
    let started = Instant::now();
    let writers: Vec<_> = (0..CLIENTS as u64)
        .map(|c| {
            let storage = Arc::clone(&storage);
            tokio::spawn(async move {
                for i in (c..LIVE_EVENTS).step_by(CLIENTS) {
                    let name = format!("w{i}");
                    storage
                        .create(&format!("/bench/watch/{name}"), object(&name))
                        .await?;
                }
                Ok::<_, flotilla_storage::StorageError>(())
            })
        })
        .collect();
    for w in writers {
        w.await??;
    }
    let writes_done = started.elapsed();
    let after = storage.stats();
    let mut last = started;
    for w in watchers {
        last = last.max(w.await??);
    }
    let all_done = last - started;
    println!(
        "live watch: {LIVE_EVENTS} writes in {writes_done:.2?} ({:.0}/s, {:.1} writes/commit); {} events to {WATCHERS} watchers, all delivered {:.2?} after start = {:.0} events/s",
        LIVE_EVENTS as f64 / writes_done.as_secs_f64(),
        (after.writes - before.writes) as f64 / (after.commits - before.commits).max(1) as f64,
        delivered.load(Ordering::Relaxed),
        all_done,
        delivered.load(Ordering::Relaxed) as f64 / all_done.as_secs_f64(),
    );

    // --- replay of the retained history to 100 watchers (fan-out capacity alone) ---
    let replay_from = storage.current_revision().await - LIST_SIZE as u64;
    let started = Instant::now();
    let mut replays = Vec::new();
    for _ in 0..WATCHERS {
        replays.push({
            let mut stream = storage.watch("/bench/", replay_from).await?;
            tokio::spawn(async move {
                let mut seen = 0u64;
                while seen < LIST_SIZE as u64 {
                    match stream.next().await {
                        Some(Ok(_)) => seen += 1,
                        other => return Err(format!("watch ended early: {other:?}")),
                    }
                }
                Ok(seen)
            })
        });
    }
    let mut total = 0;
    for r in replays {
        total += r.await??;
    }
    let elapsed = started.elapsed();
    println!(
        "replay: {total} events to {WATCHERS} watchers in {elapsed:.2?} = {:.0} events/s",
        total as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}
