//! Memory held by the embedded storage per stored object: loads 20,000 Clusters and 100,000
//! ConfigMaps (each kind in a fresh child process, so one cannot reuse the other's freed
//! memory) and prints the growth of the process's resident set per object beside the
//! object's JSON size, after the creates and again after one status update of each object
//! (which puts superseded versions into the watch history, as a live API server sees).
//!
//! `cargo run --release -p flotilla-storage --example memory_bench`

use std::sync::Arc;

use flotilla_storage::{EmbeddedOptions, EmbeddedStorage, Storage};
use serde_json::{Value, json};

const CLIENTS: usize = 16;

/// A Karmada Cluster as a member reports it: spec, conditions, API enablements and a
/// resource summary (about 1.5 KB of JSON).
fn cluster(i: usize, generation: usize) -> Value {
    let groups = [
        (
            "apps/v1",
            &["deployments", "statefulsets", "daemonsets", "replicasets"][..],
        ),
        (
            "v1",
            &["pods", "services", "configmaps", "secrets", "namespaces"][..],
        ),
        ("batch/v1", &["jobs", "cronjobs"][..]),
        (
            "networking.k8s.io/v1",
            &["ingresses", "networkpolicies"][..],
        ),
        ("autoscaling/v2", &["horizontalpodautoscalers"][..]),
    ];
    let enablements: Vec<Value> = groups
        .iter()
        .map(|(gv, resources)| {
            json!({
                "groupVersion": gv,
                "resources": resources.iter().map(|r| json!({"name": r, "kind": r})).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {
            "name": format!("member-{i:05}"),
            "uid": format!("2f1e6c1a-2b5e-4d0a-9f0e-{i:012}"),
            "creationTimestamp": "2025-03-01T10:00:00Z",
            "labels": {"env": "prod", "region": format!("region-{}", i % 7)},
        },
        "spec": {
            "id": format!("5f1b1b7e-{i:08}"),
            "syncMode": "Push",
            // An unused loopback port: the bench stores Clusters, nothing probes them.
            "apiEndpoint": format!("https://127.0.0.{}:1", 2 + i % 200),
            "secretRef": {"namespace": "karmada-cluster", "name": format!("member-{i:05}")},
            "provider": "acme-cloud",
            "region": format!("region-{}", i % 7),
            "zones": ["zone-a", "zone-b"],
        },
        "status": {
            "kubernetesVersion": "v1.31.2",
            "apiEnablements": enablements,
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "reason": "ClusterReady",
                "message": "cluster is healthy and ready to accept workloads",
                "lastTransitionTime": format!("2025-03-01T10:{:02}:00Z", generation % 60),
            }],
            "nodeSummary": {"totalNum": 3, "readyNum": 3},
            "resourceSummary": {
                "allocatable": {"cpu": "12", "memory": "48Gi", "pods": "330"},
                "allocated": {"cpu": format!("{}m", 2250 + generation), "memory": "3Gi", "pods": "17"},
                "allocating": {"cpu": "500m"},
            },
        },
    })
}

/// A small ConfigMap (about 400 bytes of JSON).
fn config_map(i: usize, generation: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": format!("settings-{i:06}"),
            "namespace": format!("team-{}", i % 50),
            "uid": format!("7c9e6679-7425-40de-944b-{i:012}"),
            "creationTimestamp": "2025-03-01T10:00:00Z",
            "labels": {"app": "web", "tier": "frontend"},
        },
        "data": {
            "LOG_LEVEL": "info",
            "FEATURE_FLAGS": "search,recommendations,checkout-v2",
            "ENDPOINT": format!("https://api.internal.example/v1/tenants/{i}"),
            "generation": generation.to_string(),
        },
    })
}

fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

type Make = fn(usize, usize) -> Value;

async fn measure(
    name: &str,
    count: usize,
    prefix: &str,
    make: Make,
) -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let storage = Arc::new(EmbeddedStorage::open(
        dir.path(),
        EmbeddedOptions::default(),
    )?);
    let json_bytes: usize = (0..count)
        .map(|i| {
            serde_json::to_vec(&make(i, 0))
                .map(|v| v.len())
                .unwrap_or(0)
        })
        .sum();
    let before = rss();
    for generation in 0..2 {
        let tasks: Vec<_> = (0..CLIENTS)
            .map(|c| {
                let storage = Arc::clone(&storage);
                let prefix = prefix.to_owned();
                tokio::spawn(async move {
                    for i in (c..count).step_by(CLIENTS) {
                        let key = format!("{prefix}{i:06}");
                        let value = make(i, generation);
                        if generation == 0 {
                            storage.create(&key, value).await?;
                        } else {
                            storage.update(&key, value, None).await?;
                        }
                    }
                    Ok::<_, flotilla_storage::StorageError>(())
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        let grown = rss().saturating_sub(before);
        println!(
            "{name}: {count} objects, {} JSON bytes/object; after {}: RSS +{:.1} MB = {} bytes/object = {:.1}x JSON",
            json_bytes / count,
            if generation == 0 {
                "creates"
            } else {
                "one update each"
            },
            grown as f64 / 1e6,
            grown / count,
            grown as f64 / json_bytes as f64,
        );
    }
    drop(storage);
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1).as_deref() {
        Some("clusters") => {
            measure("Clusters", 20_000, "/cluster.karmada.io/clusters/", cluster).await
        }
        Some("configmaps") => measure("ConfigMaps", 100_000, "/core/configmaps/", config_map).await,
        _ => {
            let me = std::env::current_exe()?;
            for kind in ["clusters", "configmaps"] {
                let status = std::process::Command::new(&me).arg(kind).status()?;
                if !status.success() {
                    return Err(format!("{kind}: {status}").into());
                }
            }
            Ok(())
        }
    }
}
