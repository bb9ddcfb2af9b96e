//! Measures (ignored by default; run with `--ignored --nocapture`) what keeping members
//! costs: N small simulated members joined, the controllers spawned, and the process RSS
//! compared before and after every member's status carries its pods. The members run in
//! the same process, so the figure also holds their side of the connections: an upper bound.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use flotilla_cluster_controllers::ControllerManagerOptions;
use flotilla_karmada_api::Cluster;
use flotilla_membersim::{MemberOptions, MemberPki};
use flotilla_testwait::eventually;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const MEMBERS: usize = 30;
const REPLICAS: i64 = 20;
/// How long the measurement waits for what it expects.
const WAIT: Duration = Duration::from_secs(120);

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Probes of members made so far, whatever their outcome.
fn probes(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with("flotilla_cluster_controllers_probe_duration_seconds_count"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

async fn client_for(kubeconfig: &Path) -> kube::Client {
    flotilla_testenv::client_for(kubeconfig, None)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement; run explicitly"]
async fn rss_per_kept_member() {
    let flotilla_testenv::ControlPlane {
        dir,
        host,
        aggregated,
        client,
    } = flotilla_testenv::ControlPlane::start().await.unwrap();
    let clusters: Api<Cluster> = Api::all(client.clone());
    let shared = MemberPki::ensure(&dir.path().join("member-pki"), &[]).unwrap();
    let mut members = Vec::new();
    for i in 0..MEMBERS {
        let name = format!("m{i}");
        let mut opts = MemberOptions::new(&name, dir.path().join(&name));
        opts.in_memory = true;
        opts.nodes = 2;
        opts.ready_delay = Duration::from_millis(50);
        opts.shared_pki = Some(shared.clone());
        let member = flotilla_membersim::start(opts).await.unwrap();
        let credentials =
            flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem);
        flotilla_membership::join(
            &client,
            &flotilla_membership::Member::new(&name, member.url(), credentials),
        )
        .await
        .unwrap();
        let mc = client_for(&member.kubeconfig).await;
        let d: Deployment = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
            "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"a": "w"}},
                     "template": {"metadata": {"labels": {"a": "w"}}, "spec": {"containers": [
                         {"name": "c", "image": "x", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}
        }))
        .unwrap();
        Api::<Deployment>::namespaced(mc, "default")
            .create(&PostParams::default(), &d)
            .await
            .unwrap();
        members.push(member);
    }
    // Measured from a settled start: every member runs its pods.
    for member in &members {
        let api = Api::<Deployment>::namespaced(client_for(&member.kubeconfig).await, "default");
        eventually("the member's pods running", WAIT, || async {
            let d = api.get("w").await.ok()?;
            let ready = d.status?.ready_replicas?;
            (i64::from(ready) == REPLICAS).then_some(())
        })
        .await;
    }
    let before = rss_kib();
    let started = Instant::now();
    let manager = flotilla_cluster_controllers::spawn(
        client.clone(),
        ControllerManagerOptions {
            status_period: Duration::from_secs(1),
            ..Default::default()
        },
    );
    eventually("every member summarized", WAIT, || async {
        let list = clusters.list(&ListParams::default()).await.unwrap();
        let done = list
            .items
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .and_then(|s| s.resource_summary.as_ref())
                    .and_then(|r| r.allocated.get("pods"))
                    .is_some_and(|q| q.0 == REPLICAS.to_string())
            })
            .count();
        if done == MEMBERS {
            Ok(())
        } else {
            Err(format!("only {done} members summarized"))
        }
    })
    .await;
    let converged = started.elapsed();
    // Measured in the steady state: two more status passes over every member have run.
    let probed = probes(&manager.metrics_text());
    eventually("two more status passes", WAIT, || async {
        probes(&manager.metrics_text()) >= probed + 2 * MEMBERS as u64
    })
    .await;
    let after = rss_kib();
    println!(
        "{MEMBERS} members x ({REPLICAS} pods, 2 nodes): all summarized in {converged:?}; \
         RSS {before} KiB -> {after} KiB: {} KiB per kept member (upper bound: includes \
         the in-process members' side)",
        after.saturating_sub(before) / MEMBERS as u64
    );
    println!("{}", manager.metrics_text());
    manager.stop().await;
    for m in members {
        m.stop().await;
    }
    aggregated.stop().await;
    host.stop().await;
}
