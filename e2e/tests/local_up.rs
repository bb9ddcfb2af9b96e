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
