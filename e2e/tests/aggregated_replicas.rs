//! The aggregated API server as two replicas behind its APIService: each `flotilla
//! aggregated-apiserver` process writes its own EndpointSlice of the Service, the host's
//! aggregator spreads requests over both, and after one is killed with SIGKILL every
//! `kubectl get clusters` through the host still answers, served by the other.
//!
//! Each replica has its own embedded storage here, which makes the replica that served a
//! read visible: a Cluster created directly in replica B is listed through the host only
//! when B answered.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use support::{
    ApiserverProcess, Kubectl, eventually, kubectl_binary, start_aggregated_apiserver,
    start_apiserver,
};

const WAIT: Duration = Duration::from_secs(60);

/// A kubeconfig for the aggregated replica at `url`, as the host's admin (the replicas trust
/// the host's client CA) and trusting the replica's serving CA in `replica_dir`.
fn replica_kubeconfig(path: &Path, url: &str, host_dir: &Path, replica_dir: &Path) {
    let pki = host_dir.join("pki");
    std::fs::write(
        path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: replica
  cluster:
    server: {url}
    certificate-authority: {}
users:
- name: admin
  user:
    client-certificate: {}
    client-key: {}
contexts:
- name: replica
  context: {{cluster: replica, user: admin}}
current-context: replica
",
            replica_dir.join("pki/ca.crt").display(),
            pki.join("admin.crt").display(),
            pki.join("admin.key").display(),
        ),
    )
    .unwrap();
}

fn cluster_names(k: &Kubectl) -> Result<Vec<String>, String> {
    let out = k.run(&["get", "clusters", "-o", "name"]);
    if !out.status.success() {
        return Err(out.stderr);
    }
    Ok(out
        .stdout
        .lines()
        .map(|l| {
            l.trim_start_matches("cluster.cluster.karmada.io/")
                .to_string()
        })
        .collect())
}

const MARKER: &str = "only-in-b";

#[test]
fn a_killed_aggregated_replica_is_not_noticed_by_clients() {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let host = start_apiserver(&host_dir);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    let (a_dir, b_dir) = (dir.path().join("agg-a"), dir.path().join("agg-b"));
    let mut a: ApiserverProcess = start_aggregated_apiserver(&host_dir, &a_dir);
    // Replicas share their serving certificate (one caBundle on the APIService).
    std::fs::create_dir_all(b_dir.join("pki")).unwrap();
    for entry in std::fs::read_dir(a_dir.join("pki")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), b_dir.join("pki").join(entry.file_name())).unwrap();
    }
    let b = start_aggregated_apiserver(&host_dir, &b_dir);

    let slices = k.get_json(&["endpointslices", "-n", "karmada-system"]);
    let addresses: Vec<String> = slices["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ports"][0]["port"].to_string())
        .collect();
    assert_eq!(
        addresses.len(),
        2,
        "one EndpointSlice per replica: {slices}"
    );

    // A Cluster only B stores (its own storage), created on B directly.
    let b_kubeconfig = dir.path().join("b.kubeconfig");
    replica_kubeconfig(&b_kubeconfig, &b.url, &host_dir, &b_dir);
    let kb = Kubectl::new(
        kubectl_binary("kubectl"),
        &b_kubeconfig,
        &dir.path().join("cache-b"),
    );
    let marker = dir.path().join("marker.json");
    std::fs::write(
        &marker,
        format!(
            r#"{{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster",
"metadata":{{"name":"{MARKER}"}},"spec":{{"syncMode":"Push","apiEndpoint":"https://127.0.0.1:1"}}}}"#
        ),
    )
    .unwrap();
    kb.ok(&["create", "-f", marker.to_str().unwrap()]);

    // Through the host, reads reach both replicas: some lists have the marker (B), some
    // not (A).
    let mut seen = (false, false);
    eventually(WAIT, "lists served by both replicas", || {
        let names = cluster_names(&k)?;
        if names.iter().any(|n| n == MARKER) {
            seen.1 = true;
        } else {
            seen.0 = true;
        }
        if seen.0 && seen.1 {
            Ok(())
        } else {
            Err(format!("served by A: {}, by B: {}", seen.0, seen.1))
        }
    });

    // A dies without a word: every read through the host still answers at once, from B.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    for i in 0..10 {
        let names = cluster_names(&k).unwrap_or_else(|e| panic!("read {i} after the kill: {e}"));
        assert_eq!(names, [MARKER], "read {i} after the kill");
    }
    let discovery = k.ok(&["api-resources", "--api-group", "cluster.karmada.io"]);
    assert!(discovery.contains("clusters"), "{discovery}");
    // Writes go to B too.
    let second = marker
        .to_str()
        .unwrap()
        .replace("marker.json", "second.json");
    std::fs::write(
        &second,
        std::fs::read_to_string(&marker)
            .unwrap()
            .replace(MARKER, "created-after-the-kill"),
    )
    .unwrap();
    k.ok(&["create", "-f", &second]);
    let names = cluster_names(&kb).unwrap();
    assert_eq!(names, ["created-after-the-kill", MARKER]);
    drop(b);
    drop(host);
}
