//! `flotilla local-up --members 3` as a user runs it: the member clusters are joined and
//! reachable through the cluster proxy, and a restart on the same data directory (after
//! SIGTERM) brings the same clusters back without duplicates.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use support::{Kubectl, eventually, kubectl_binary, start_local_up};

fn cluster_names(k: &Kubectl) -> Vec<String> {
    let list = k.get_json(&["clusters"]);
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

fn node_names(k: &Kubectl, cluster: &str) -> Vec<String> {
    let raw = k.ok(&[
        "get",
        "--raw",
        &format!("/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy/api/v1/nodes"),
    ]);
    let list: serde_json::Value = serde_json::from_str(&raw).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

/// Waits until `kubectl get clusters` shows three Ready Push clusters with versions.
fn wait_all_ready(k: &Kubectl) -> String {
    eventually(Duration::from_secs(60), "three Ready clusters", || {
        let table = k.ok(&["get", "clusters"]);
        let rows: Vec<Vec<&str>> = table
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect())
            .collect();
        let ready = rows
            .iter()
            .filter(|r| r.len() == 5 && r[1].starts_with('v') && r[2] == "Push" && r[3] == "True")
            .count();
        if ready == 3 { Ok(table) } else { Err(table) }
    })
}

#[test]
fn local_up_joins_members_and_keeps_them_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("flotilla");
    let mut up = start_local_up(&data, &["--members", "3"]);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache"),
    );

    assert_eq!(cluster_names(&k), vec!["member1", "member2", "member3"]);
    // The cluster status controller fills VERSION and READY for every member.
    let table = wait_all_ready(&k);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "VERSION", "MODE", "READY", "AGE"],
        "{table}"
    );
    let wide = k.ok(&["get", "clusters", "-o", "wide"]);
    assert!(
        wide.lines().next().unwrap().contains("API-ENDPOINT")
            && wide.contains("https://127.0.0.1:"),
        "{wide}"
    );
    assert_eq!(
        node_names(&k, "member2").len(),
        3,
        "member2 has 3 simulated nodes"
    );
    assert_eq!(
        node_names(&k, "member1").len(),
        4,
        "member1 has 4 simulated nodes"
    );
    for m in ["member1", "member2", "member3"] {
        assert!(
            data.join("members")
                .join(format!("{m}.kubeconfig"))
                .is_file(),
            "{m}.kubeconfig"
        );
    }

    // SIGTERM: a clean stop, then a second run on the same data directory.
    let pid = up.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while up.child.try_wait().unwrap().is_none() {
        assert!(
            Instant::now() < deadline,
            "local-up did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(up);
    let up = start_local_up(&data, &["--members", "3"]);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache2"),
    );
    assert_eq!(
        cluster_names(&k),
        vec!["member1", "member2", "member3"],
        "no duplicates after a restart"
    );
    assert_eq!(
        node_names(&k, "member3").len(),
        2,
        "member3 reachable again through its new endpoint"
    );
    wait_all_ready(&k);
}

/// The health monitor and the status extras, through kubectl: a Pull-mode Cluster that no
/// agent ever reports for turns Ready=Unknown and gets the `unreachable` taints, while the
/// Push member, which has no Lease, stays Ready; the member's status carries CompleteAPIEnablements and allocatableModelings.
#[test]
fn a_pull_cluster_without_an_agent_turns_unknown_while_push_members_stay_ready() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("flotilla");
    let up = start_local_up(
        &data,
        &[
            "--members",
            "1",
            "--cluster-monitor-period",
            "500ms",
            "--cluster-monitor-grace-period",
            "3s",
            "--cluster-startup-grace-period",
            "3s",
            "--cluster-lease-duration",
            "2s",
        ],
    );
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache"),
    );
    let manifest = dir.path().join("edge.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: edge1\nspec:\n  syncMode: Pull\n",
    )
    .unwrap();
    let created = Instant::now();
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);

    let row = |table: &str, name: &str| -> Vec<String> {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let table = eventually(Duration::from_secs(30), "edge1 Ready=Unknown", || {
        let table = k.ok(&["get", "clusters"]);
        // No VERSION for a cluster nobody reports for: the row is NAME MODE READY AGE.
        let edge = row(&table, "edge1");
        if edge.len() == 4 && edge[1] == "Pull" && edge[2] == "Unknown" {
            Ok(table)
        } else {
            Err(table)
        }
    });
    assert!(
        created.elapsed() >= Duration::from_secs(3),
        "marked Unknown before the startup grace: {table}"
    );
    let edge = k.get_json(&["cluster", "edge1"]);
    let ready = edge["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "Unknown", "{ready}");
    assert_eq!(ready["reason"], "ClusterStatusNeverUpdated", "{ready}");
    let taints = eventually(
        Duration::from_secs(15),
        "unreachable taints on edge1",
        || {
            let edge = k.get_json(&["cluster", "edge1"]);
            let taints: Vec<String> = edge["spec"]["taints"]
                .as_array()
                .map(|ts| {
                    ts.iter()
                        .map(|t| {
                            format!(
                                "{}:{}",
                                t["key"].as_str().unwrap(),
                                t["effect"].as_str().unwrap()
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if taints.contains(&"cluster.karmada.io/unreachable:NoSchedule".to_owned()) {
                Ok(taints)
            } else {
                Err(format!("{taints:?}"))
            }
        },
    );
    assert!(
        !taints
            .iter()
            .any(|t| t.starts_with("cluster.karmada.io/not-ready")),
        "{taints:?}"
    );

    // The Push member outlives the grace period without a Lease (only Pull agents keep
    // one; the monitor judges Push clusters by the status controller's progress): Ready at
    // every look for 4 s, past the 3 s grace period.
    let until = Instant::now() + Duration::from_secs(4);
    eventually(
        Duration::from_secs(30),
        "member1 Ready past the grace period",
        || {
            let table = k.ok(&["get", "clusters"]);
            assert_eq!(row(&table, "member1")[3], "True", "{table}");
            if Instant::now() >= until {
                Ok(())
            } else {
                Err(table)
            }
        },
    );
    let leases = k.ok(&["get", "leases", "-n", "karmada-cluster", "-o", "name"]);
    assert!(
        !leases.contains("member1"),
        "no Lease for a Push cluster: {leases}"
    );
    assert!(
        !leases.contains("edge1"),
        "no Lease for a cluster nobody reports for: {leases}"
    );

    let member = k.get_json(&["cluster", "member1"]);
    let complete = member["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "CompleteAPIEnablements")
        .cloned();
    assert_eq!(
        complete.as_ref().map(|c| c["status"].clone()),
        Some(serde_json::json!("True")),
        "{member}"
    );
    // Every Ready node is counted in exactly one grade.
    let nodes = member["status"]["nodeSummary"]["readyNum"]
        .as_i64()
        .unwrap();
    let modelings = member["status"]["resourceSummary"]["allocatableModelings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(!modelings.is_empty(), "{member}");
    let counted: i64 = modelings.iter().map(|m| m["count"].as_i64().unwrap()).sum();
    assert_eq!(counted, nodes, "{modelings:?}");

    // Deleting the Pull cluster goes through like any other.
    k.ok(&["delete", "cluster", "edge1", "--timeout=30s"]);
    assert_eq!(cluster_names(&k), vec!["member1"]);
}
