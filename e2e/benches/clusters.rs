//! Scale benchmark for the cluster controllers: one `flotilla member-sim --clusters 200`
//! process (10 nodes each), all joined to a host (`flotilla apiserver` + `flotilla
//! aggregated-apiserver`), and `flotilla controller-manager` as its own process so its CPU and
//! memory can be read from /proc. Prints:
//! - how long until every Cluster is Ready;
//! - status freshness: a Pod is created in every member at once, and the time until each
//!   Cluster's resourceSummary counts it (p50, p99, max; target: all within 15 s);
//! - the controller-manager's CPU (over a steady minute) and RSS (target <= 300 MiB).
//!
//! Run: `cargo build --release --bin flotilla && cargo bench -p flotilla-e2e --bench clusters`
//! (FLOTILLA_BIN overrides the binary, else the release build under `$CARGO_TARGET_DIR` or
//! `target/`; FLOTILLA_BENCH_CLUSTERS / _NODES the sizes).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::PostParams;
use support::{
    Proc, join_member_sims, kube_client, member_sims_args, percentile, ready_name_url, release_bin,
    spawn_ready_lines,
};

fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `support::spawn_ready_lines` with the release binary, as `(name, url)` pairs.
fn spawn_ready(args: &[&str], log: &Path, lines: usize) -> (Proc, Vec<(String, String)>) {
    let (proc, ready) =
        spawn_ready_lines(&release_bin(), args, log, lines, Duration::from_secs(300));
    (proc, ready.iter().map(|l| ready_name_url(l)).collect())
}

fn ready_and_pods(c: &flotilla_karmada_api::Cluster) -> (bool, i64) {
    let Some(status) = &c.status else {
        return (false, 0);
    };
    let ready = status.is_ready();
    let pods = status
        .resource_summary
        .as_ref()
        .map(|s| {
            let n =
                |l: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
                    l.get("pods")
                        .and_then(|q| q.0.parse::<i64>().ok())
                        .unwrap_or(0)
                };
            n(&s.allocated) + n(&s.allocating)
        })
        .unwrap_or(0);
    (ready, pods)
}

#[tokio::main]
async fn main() {
    let count = env_or("FLOTILLA_BENCH_CLUSTERS", 200);
    let nodes = env_or("FLOTILLA_BENCH_NODES", 10);
    let period = "10s";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    println!(
        "cluster controllers at scale: {count} member-sims x {nodes} nodes, status period {period}"
    );

    let host_dir = d.join("host");
    let host_dir_s = host_dir.to_str().unwrap().to_string();
    let (_host, _) = spawn_ready(
        &["apiserver", "--data-dir", &host_dir_s, "--secure-port", "0"],
        &d.join("host.log"),
        1,
    );
    let kubeconfig = host_dir.join("kubeconfig");
    let kubeconfig_s = kubeconfig.to_str().unwrap().to_string();
    let agg_dir = d.join("agg");
    let pki = host_dir.join("pki");
    let (_agg, _) = spawn_ready(
        &[
            "aggregated-apiserver",
            "--kubeconfig",
            &kubeconfig_s,
            "--data-dir",
            agg_dir.to_str().unwrap(),
            "--secure-port",
            "0",
            "--client-ca-file",
            pki.join("ca.crt").to_str().unwrap(),
            "--requestheader-client-ca-file",
            pki.join("front-proxy-ca.crt").to_str().unwrap(),
        ],
        &d.join("agg.log"),
        1,
    );
    let members_dir = d.join("members");
    let started = Instant::now();
    let args = member_sims_args(count, nodes, &members_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (members, urls) = spawn_ready(&args, &d.join("members.log"), count as usize);
    let (_, sims_rss, _) = flotilla_testenv::proc_usage(members.0.id());
    println!(
        "member-sims: {count} started in {:.1} s, process RSS {} MiB",
        started.elapsed().as_secs_f64(),
        sims_rss / 1024
    );

    let host = kube_client(&kubeconfig, None).await;
    let joined = Instant::now();
    join_member_sims(&host, &members_dir, &urls, 16).await;
    println!(
        "joined {count} clusters in {:.1} s",
        joined.elapsed().as_secs_f64()
    );

    let cm_started = Instant::now();
    let cm_log = d.join("controller-manager.log");
    let cm = Command::new(release_bin())
        .args([
            "controller-manager",
            "--kubeconfig",
            &kubeconfig_s,
            "--leader-elect=false",
            "--cluster-status-update-frequency",
            period,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&cm_log).unwrap()))
        .spawn()
        .unwrap();
    let cm = Proc(cm);
    let pid = cm.0.id();
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(host.clone());
    let ready_deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list = clusters.list(&Default::default()).await.unwrap();
        let ready = list.items.iter().filter(|c| ready_and_pods(c).0).count();
        if ready == count as usize {
            break;
        }
        assert!(
            Instant::now() < ready_deadline,
            "only {ready}/{count} Ready after 300 s; log:\n{}",
            std::fs::read_to_string(&cm_log).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    println!(
        "all {count} clusters Ready {:.1} s after the controller-manager started",
        cm_started.elapsed().as_secs_f64()
    );

    // Freshness: one new Pod in every member at once; how long until each Cluster counts it.
    let before: BTreeMap<String, i64> = clusters
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| {
            (
                c.metadata.name.clone().unwrap_or_default(),
                ready_and_pods(c).1,
            )
        })
        .collect();
    let t0 = Instant::now();
    futures::stream::iter(urls.iter().cloned())
        .map(|(name, _)| {
            let kc = members_dir.join(&name).join("kubeconfig");
            async move {
                let member = kube_client(&kc, Some(&format!("{name}-flotilla"))).await;
                let pods: Api<Pod> = Api::namespaced(member, "default");
                let pod: Pod = serde_json::from_value(serde_json::json!({
                    "apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "freshness-probe"},
                    "spec": {"containers": [{"name": "c", "image": "x",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
                }))
                .unwrap();
                pods.create(&PostParams::default(), &pod).await.unwrap();
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    let created = t0.elapsed().as_secs_f64();
    let mut seen: BTreeMap<String, f64> = BTreeMap::new();
    let fresh_deadline = Instant::now() + Duration::from_secs(120);
    while seen.len() < count as usize && Instant::now() < fresh_deadline {
        for c in clusters.list(&Default::default()).await.unwrap().items {
            let name = c.metadata.name.clone().unwrap_or_default();
            if seen.contains_key(&name) {
                continue;
            }
            if ready_and_pods(&c).1 > before.get(&name).copied().unwrap_or(0) {
                seen.insert(name, t0.elapsed().as_secs_f64());
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut latencies: Vec<f64> = seen.values().copied().collect();
    latencies.sort_by(|a, b| a.total_cmp(b));
    println!(
        "status freshness after a change in every member (pods created in {created:.1} s): \
         {}/{count} updated; p50 {:.1} s, p99 {:.1} s, max {:.1} s (target: all within 15 s)",
        latencies.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().copied().unwrap_or(f64::NAN)
    );

    // Steady state: CPU over a minute, RSS.
    let (cpu0, _, _) = flotilla_testenv::proc_usage(pid);
    let w0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(60)).await;
    let (cpu1, rss, hwm) = flotilla_testenv::proc_usage(pid);
    let wall = w0.elapsed().as_secs_f64();
    println!(
        "controller-manager steady state over {wall:.0} s: CPU {:.1}% of one core, RSS {} MiB (peak {} MiB; target <= 300 MiB)",
        (cpu1 - cpu0) / wall * 100.0,
        rss / 1024,
        hwm / 1024
    );
    drop(cm);
    drop(members);
}
