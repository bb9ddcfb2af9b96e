//! `flotilla local-up --storage etcd`: the first journey with kubectl on a real etcd (a
//! Deployment and its PropagationPolicy spread over three members, merged `kubectl get
//! deploy`), then kill -9 of the whole control plane and a restart on the same etcd and data
//! directory: every object is still there with its resourceVersion and uid, the templates
//! converge again (a scale after the restart reaches the members), and nothing is duplicated.
//!
//! Needs `etcd` on PATH (the test command installs it) and the binary (`FLOTILLA_BIN`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use flotilla_etcd::testing::EtcdCluster;

mod support;

use support::{
    ApiserverProcess, Kubectl, deployment_yaml, dynamic_policy_yaml, eventually, kubectl_binary,
    start_local_up,
};

const WAIT: Duration = Duration::from_secs(90);
const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

fn local_up(data: &Path, etcd: &EtcdCluster) -> ApiserverProcess {
    let servers = etcd.servers_flag();
    start_local_up(
        data,
        &[
            "--members",
            "3",
            "--storage",
            "etcd",
            "--etcd-servers",
            &servers,
        ],
    )
}

/// Waits until the merged Deployment reports `replicas` ready and returns its JSON.
fn wait_ready(host: &Kubectl, ns: &str, name: &str, replicas: i64) -> serde_json::Value {
    eventually(WAIT, &format!("{name} {replicas}/{replicas} ready"), || {
        let deploy = host
            .try_get(&["deploy", name, "-n", ns])?
            .ok_or("no Deployment yet")?;
        let ready = deploy["status"]["readyReplicas"].as_i64().unwrap_or(0);
        if ready == replicas {
            Ok(deploy)
        } else {
            Err(format!("readyReplicas {ready}: {}", deploy["status"]))
        }
    })
}

/// The per-member replica counts of the Works of `name`'s binding, and checks there is one
/// binding and at most one Work per member.
fn placement(host: &Kubectl, ns: &str, name: &str) -> Vec<(String, i64)> {
    let bindings = host.get_json(&["resourcebindings", "-n", ns]);
    let ours: Vec<_> = bindings["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["spec"]["resource"]["name"] == name)
        .collect();
    assert_eq!(ours.len(), 1, "exactly one binding for {name}: {bindings}");
    let mut placed = Vec::new();
    for member in MEMBERS {
        let works = host.get_json(&["works", "-n", &format!("karmada-es-{member}")]);
        let mine: Vec<_> = works["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|w| {
                w["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(name))
            })
            .collect();
        assert!(mine.len() <= 1, "a duplicated Work in {member}: {works}");
        if let Some(work) = mine.first() {
            let replicas = work["spec"]["workload"]["manifests"][0]["spec"]["replicas"]
                .as_i64()
                .unwrap_or(0);
            placed.push((member.to_owned(), replicas));
        }
    }
    placed
}

#[test]
fn local_up_on_etcd_survives_kill_9_and_converges_without_duplicates() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let etcd = runtime.block_on(EtcdCluster::start(1));
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("flotilla");
    let mut up = local_up(&data, &etcd);
    let host = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache"),
    );

    eventually(WAIT, "three Ready clusters", || {
        let table = host.ok(&["get", "clusters", "--no-headers"]);
        let ready = table
            .lines()
            .filter(|l| l.split_whitespace().nth(3) == Some("True"))
            .count();
        if ready == 3 { Ok(()) } else { Err(table) }
    });
    host.ok(&["create", "namespace", "shop"]);
    host.apply_file(
        dir.path(),
        "web.yaml",
        &deployment_yaml("shop", "web", 6, "100m", "nginx:1.27"),
    );
    host.apply_file(
        dir.path(),
        "policy.yaml",
        &dynamic_policy_yaml("shop", "web"),
    );
    host.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "shop",
        "--from-literal=mode=blue",
    ]);
    wait_ready(&host, "shop", "web", 6);
    let table = host.ok(&["get", "deploy", "web", "-n", "shop"]);
    assert!(table.contains("6/6"), "merged kubectl get deploy: {table}");
    let before = host.get_json(&["configmap", "settings", "-n", "shop"]);
    let placed = placement(&host, "shop", "web");
    assert_eq!(placed.iter().map(|(_, r)| r).sum::<i64>(), 6, "{placed:?}");

    // kill -9 of the whole control plane (the host, aggregated server, controllers,
    // scheduler and members), then a restart on the same etcd and data directory.
    up.child.kill().unwrap();
    let _ = up.child.wait();
    let mut up = local_up(&data, &etcd);
    let host = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache2"),
    );

    let after = host.get_json(&["configmap", "settings", "-n", "shop"]);
    assert_eq!(
        after["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );
    assert_eq!(after["metadata"]["uid"], before["metadata"]["uid"]);
    wait_ready(&host, "shop", "web", 6);
    host.ok(&["scale", "deploy", "web", "-n", "shop", "--replicas=9"]);
    wait_ready(&host, "shop", "web", 9);
    let placed = eventually(WAIT, "the Works carry 9 replicas", || {
        let placed = placement(&host, "shop", "web");
        let total: i64 = placed.iter().map(|(_, r)| r).sum();
        if total == 9 {
            Ok(placed)
        } else {
            Err(format!("{placed:?}"))
        }
    });
    assert!(placed.len() >= 2, "spread over members: {placed:?}");
    // The members hold one Deployment each, not one per run.
    for (member, _) in &placed {
        let kc = data.join("members").join(format!("{member}.kubeconfig"));
        let k = Kubectl::new(
            kubectl_binary("kubectl"),
            &kc,
            &dir.path().join(format!("cache-{member}")),
        );
        let names = k.ok(&["get", "deploy", "-n", "shop", "-o", "name"]);
        assert_eq!(
            names.lines().collect::<Vec<_>>(),
            ["deployment.apps/web"],
            "{member}"
        );
    }
    up.child.kill().unwrap();
    let _ = up.child.wait();
}
