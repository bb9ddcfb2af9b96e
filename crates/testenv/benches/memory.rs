//! Memory the real API servers hold per stored object: an in-process host with the
//! aggregated Cluster server registered behind it (as `local-up` runs them), loaded over TLS
//! by kube-rs clients with 20,000 Clusters (created through the host's APIService proxy,
//! then given a status as the status controller writes it) and, in a second process so one
//! cannot reuse the other's freed memory, 100,000 ConfigMaps. Prints the growth of the
//! process's resident set per object beside the object's JSON size as served. It asserts
//! nothing about the figures; it fails only when the servers answer wrongly.
//!
//! `cargo bench -p flotilla-testenv --bench memory` (`MEMORY_OBJECTS=0.1` loads a tenth).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, ensure};
use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const CLIENTS: usize = 16;
const PHASE_ENV: &str = "FLOTILLA_MEMORY_PHASE";

/// The sample Cluster of the API crate's tests (spec and a member's status).
const CLUSTER_SAMPLE: &str = include_str!("../../karmada-api/tests/samples/cluster.yaml");

fn scale() -> f64 {
    std::env::var("MEMORY_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0)
}

fn main() -> Result<()> {
    match std::env::var(PHASE_ENV).ok().as_deref() {
        Some(phase) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(run_phase(phase)),
        None => {
            let exe = std::env::current_exe()?;
            for phase in ["clusters", "configmaps"] {
                let status = std::process::Command::new(&exe)
                    .env(PHASE_ENV, phase)
                    .status()
                    .with_context(|| format!("running the {phase} phase"))?;
                ensure!(status.success(), "the {phase} phase failed: {status}");
            }
            Ok(())
        }
    }
}

fn rss_bytes() -> u64 {
    flotilla_testenv::proc_usage("self").1 * 1024
}

async fn run_phase(phase: &str) -> Result<()> {
    let cp = flotilla_testenv::ControlPlane::start().await?;
    let (resource, count) = match phase {
        "clusters" => (
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
                "clusters",
            ),
            (20_000.0 * scale()) as usize,
        ),
        _ => (
            ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("", "v1", "ConfigMap"),
                "configmaps",
            ),
            (100_000.0 * scale()) as usize,
        ),
    };
    let api: Api<DynamicObject> = if phase == "clusters" {
        Api::all_with(cp.client.clone(), &resource)
    } else {
        Api::namespaced_with(cp.client.clone(), "default", &resource)
    };
    let sample: Value = serde_norway::from_str(CLUSTER_SAMPLE)?;
    // Warm up (connections, caches, allocator arenas) before the baseline.
    load(&api, phase, &sample, 0..200).await?;
    let before = rss_bytes();
    let start = Instant::now();
    load(&api, phase, &sample, 200..200 + count).await?;
    let elapsed = start.elapsed();
    let after = rss_bytes();
    let served = api.get(&name(phase, 200 + count / 2)).await?;
    let json = serde_json::to_vec(&served)?.len();
    let grown = after.saturating_sub(before) as f64 / count as f64;
    println!(
        "{count} {phase} loaded in {:.1} s ({:.0}/s): RSS {} -> {} MiB; {grown:.0} bytes of RSS per object for {json} bytes of JSON ({:.1}x)",
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64(),
        before / (1 << 20),
        after / (1 << 20),
        grown / json as f64,
    );
    cp.stop().await;
    Ok(())
}

fn name(phase: &str, i: usize) -> String {
    match phase {
        "clusters" => format!("member-{i:05}"),
        _ => format!("config-{i:06}"),
    }
}

/// Creates objects `range` with [`CLIENTS`] concurrent clients; Clusters then get a status.
async fn load(
    api: &Api<DynamicObject>,
    phase: &str,
    sample: &Value,
    range: std::ops::Range<usize>,
) -> Result<()> {
    let next = Arc::new(AtomicUsize::new(range.start));
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        let (api, next, sample, phase) =
            (api.clone(), next.clone(), sample.clone(), phase.to_string());
        let end = range.end;
        clients.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= end {
                    return Ok::<_, anyhow::Error>(());
                }
                let name = name(&phase, i);
                if phase == "clusters" {
                    let mut obj = sample.clone();
                    obj["metadata"] = json!({"name": name, "labels": {"env": "prod", "region": format!("region-{}", i % 7)}});
                    obj["spec"]["id"] = json!(format!("2f1e6c1a-2b5e-4d0a-9f0e-{i:012}"));
                    // An unused loopback port: nothing probes it here, and nothing could.
                    obj["spec"]["apiEndpoint"] = json!(format!("https://127.0.0.{}:1", 2 + i % 200));
                    obj["spec"]["secretRef"]["name"] = json!(name);
                    let status = obj
                        .as_object_mut()
                        .and_then(|o| o.remove("status"))
                        .unwrap_or_default();
                    let created = api
                        .create(&PostParams::default(), &serde_json::from_value(obj)?)
                        .await
                        .with_context(|| format!("creating {name}"))?;
                    let mut with_status = serde_json::to_value(&created)?;
                    with_status["status"] = status;
                    let with_status: DynamicObject = serde_json::from_value(with_status)?;
                    api.replace_status(&name, &PostParams::default(), &with_status)
                    .await
                    .with_context(|| format!("writing the status of {name}"))?;
                } else {
                    let mut data = serde_json::Map::new();
                    for k in 0..4 {
                        data.insert(
                            format!("key-{k}"),
                            json!(format!("value {k} of config map {i}, some settings text")),
                        );
                    }
                    let obj = json!({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "labels": {"app": format!("app-{}", i % 50)}},
                        "data": data,
                    });
                    api.create(&PostParams::default(), &serde_json::from_value(obj)?)
                        .await
                        .with_context(|| format!("creating {name}"))?;
                }
            }
        }));
    }
    for c in clients {
        c.await??;
    }
    Ok(())
}
