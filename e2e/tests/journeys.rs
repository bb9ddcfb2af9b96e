//! The three journeys Flotilla is judged by, each as a newcomer runs it with the real kubectl
//! only (no flotillactl, no client library) against `flotilla local-up`, and each with one
//! member stopped in the middle:
//!
//! 1. `kubectl apply` a Deployment and a PropagationPolicy to the host and watch
//!    (`kubectl get deploy -w`) it spread across the members by capacity; member3 fails, a
//!    scale-up goes to the members still Ready, and when member3 is back the watch shows every
//!    replica ready.
//! 2. `kubectl get deploy` / `get pods -A` merged across the members; with member2 stopped
//!    the reads still answer, without member2's share and with a Warning naming it, and
//!    member2's pods return with it.
//! 3. An operator's Cluster objects: join a new cluster (a `flotilla member-sim` process) by
//!    its Secret and Cluster, label it, taint it (no new workload goes there), reach it
//!    through the proxy, stop it (Ready=False, the proxy says it cannot reach it) and unjoin
//!    it while it is down (its Cluster and execution namespace go).
//!
//! Needs the binary: `cargo build --bin flotilla` (or `FLOTILLA_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/members.rs"]
mod members;
mod support;

use std::collections::BTreeMap;
use std::path::Path;

use members::{Clusters, WAIT, total, up_and_ready};
use support::{
    Streaming, create_member_secret, deployment_yaml, dynamic_policy_yaml, eventually,
    push_cluster_yaml, start_member_sim_with,
};

/// The CLUSTERS cell of `kubectl get deploy NAME` rows, by name (merged reads' column).
fn clusters_cell(c: &Clusters, args: &[&str], name: &str) -> Result<String, String> {
    let out = c.host.run(args);
    if !out.status.success() {
        return Err(out.stderr);
    }
    let (_, rows) = support::table(&out.stdout);
    rows.iter()
        .find(|r| r.get("NAME").map(String::as_str) == Some(name))
        .and_then(|r| r.get("CLUSTERS").cloned())
        .ok_or_else(|| out.stdout.clone())
}

/// A PropagationPolicy `ns/name` for Deployment `name` with `placement` (flow-style YAML).
fn policy_yaml(ns: &str, name: &str, placement: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: {ns}}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: {name}}}]
  placement: {placement}
"
    )
}

/// `kubectl apply -f` of a Deployment and its policy in one file.
fn apply_workload(c: &Clusters, dir: &Path, deployment: String, policy: String) {
    let out = c
        .host
        .apply_file(dir, "workload", &format!("{deployment}---\n{policy}"));
    assert!(out.status.success(), "{}", out.stderr);
}

#[test]
fn journey_1_apply_and_watch_it_spread_by_capacity_while_a_member_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (_up, c) = up_and_ready(dir.path());
    c.host.ok(&["create", "namespace", "shop"]);
    let mut watch = Streaming::spawn(c.host.command(&["get", "deploy", "-n", "shop", "-w"]));
    apply_workload(
        &c,
        dir.path(),
        deployment_yaml("shop", "web", 12, "500m", "nginx:1.25"),
        dynamic_policy_yaml("shop", "web"),
    );
    watch.wait_for_line(WAIT, "web READY 12/12", |l| {
        l.split_whitespace().take(2).eq(["web", "12/12"])
    });
    let before = c.wait_replicas("shop", "web", "12 divided over 3 members", |r| {
        total(r) == 12 && r.len() == 3
    });
    assert!(
        before["member1"] > before["member2"] && before["member2"] > before["member3"],
        "divided by capacity (member1 biggest, member3 smallest): {before:?}"
    );

    // member3 fails mid-journey; a scale-up is placed all the same, the new replicas on
    // the members that are Ready (a not-Ready member carries a NoSchedule taint).
    c.set_unreachable(&["member3"]);
    c.wait_ready(&["member3"], "False");
    c.host
        .ok(&["scale", "-n", "shop", "deploy/web", "--replicas=20"]);
    let after = eventually(WAIT, "the scale-up placed", || {
        let b = c.binding_clusters("shop", "web-deployment");
        if total(&b) == 20 {
            Ok(b)
        } else {
            Err(format!("{b:?}"))
        }
    });
    assert!(
        after["member1"] > before["member1"] && after["member2"] > before["member2"],
        "the Ready members take the new replicas: {before:?} -> {after:?}"
    );
    assert!(
        after.get("member3").copied().unwrap_or(0) <= before["member3"],
        "no new replica on the failed member3: {after:?}"
    );
    c.wait_replicas_skipping(
        "shop",
        "web",
        &["member3"],
        "member1 and member2 grown",
        |r| r.get("member1") == after.get("member1") && r.get("member2") == after.get("member2"),
    );

    // member3 comes back: the watch sees every replica ready.
    c.set_unreachable(&[]);
    c.wait_all_ready();
    watch.wait_for_line(WAIT, "web READY 20/20", |l| {
        l.split_whitespace().take(2).eq(["web", "20/20"])
    });
    watch.stop();
}

#[test]
fn journey_2_get_deploy_and_pods_merged_across_members_while_one_is_down() {
    let dir = tempfile::tempdir().unwrap();
    let (_up, c) = up_and_ready(dir.path());
    c.host.ok(&["create", "namespace", "shop"]);
    apply_workload(
        &c,
        dir.path(),
        deployment_yaml("shop", "web", 6, "100m", "nginx:1.25"),
        policy_yaml(
            "shop",
            "web",
            "{replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted, \
             weightPreference: {staticWeightList: [{targetCluster: {clusterNames: [member1, member2, member3]}, weight: 1}]}}}",
        ),
    );

    // One row for the Deployment across the three members, READY summed.
    let cell = eventually(WAIT, "web 6/6 in 3 members", || {
        let row = c.host.ok(&["get", "deploy", "-A", "--no-headers"]);
        if row.contains("6/6") {
            clusters_cell(&c, &["get", "deploy", "-n", "shop"], "web")
        } else {
            Err(row)
        }
    });
    assert_eq!(cell, "member1(2),member2(2),member3(2)");
    let pods_by_cluster = |expect: usize| {
        eventually(WAIT, &format!("{expect} pods merged"), || {
            let out = c.host.run(&["get", "pods", "-A"]);
            let (_, rows) = support::table(&out.stdout);
            let mut by = BTreeMap::new();
            for r in rows
                .iter()
                .filter(|r| r["NAMESPACE"] == "shop" && r["STATUS"] == "Running")
            {
                *by.entry(r["CLUSTERS"].clone()).or_insert(0) += 1;
            }
            if by.values().sum::<usize>() == expect {
                Ok((by, out.stderr))
            } else {
                Err(format!("{by:?}"))
            }
        })
    };
    let (by, warnings) = pods_by_cluster(6);
    assert_eq!(by.len(), 3, "pods from every member: {by:?}");
    assert!(!warnings.contains("Warning"), "{warnings}");

    // member2 stops: the merged reads answer without it and say so.
    c.set_unreachable(&["member2"]);
    let out = eventually(WAIT, "a merged answer without member2", || {
        let out = c.host.run(&["get", "deploy", "-n", "shop"]);
        if out.status.success() && out.stderr.contains("\"member2\"") {
            Ok(out)
        } else {
            Err(out.stderr)
        }
    });
    assert!(
        out.stderr
            .contains("Warning: cluster \"member2\" is missing"),
        "{}",
        out.stderr
    );
    let (_, rows) = support::table(&out.stdout);
    assert_eq!(
        rows[0]["CLUSTERS"], "member1(2),member3(2)",
        "{}",
        out.stdout
    );
    let (by, warnings) = pods_by_cluster(4);
    assert!(!by.contains_key("member2"), "{by:?}");
    assert!(warnings.contains("member2"), "{warnings}");

    // member2 is back, and so are its pods.
    c.set_unreachable(&[]);
    c.wait_all_ready();
    let (by, _) = pods_by_cluster(6);
    assert_eq!(by.get("member2"), Some(&2), "{by:?}");
}

#[test]
fn journey_3_operators_join_label_taint_proxy_and_unjoin_a_cluster_that_failed() {
    let dir = tempfile::tempdir().unwrap();
    let (_up, c) = up_and_ready(dir.path());

    // Join: a cluster of its own (another process), registered as Karmada's docs do it by
    // hand, a Secret with its token and CA, and a Push Cluster.
    let edge_data = dir.path().join("edge");
    let edge = start_member_sim_with(
        "edge",
        &edge_data,
        &["--nodes", "2", "--node-cpu", "4", "--node-memory", "8Gi"],
    );
    let token = std::fs::read_to_string(edge_data.join("flotilla-token")).unwrap();
    create_member_secret(
        &c.host,
        "edge",
        token.trim(),
        &edge_data.join("pki").join("ca.crt"),
    );
    let out = c.host.apply_file(
        dir.path(),
        "edge",
        &push_cluster_yaml("edge", &edge.url, "edge"),
    );
    assert!(out.status.success(), "{}", out.stderr);
    c.wait_ready(&["edge"], "True");
    assert!(
        c.host
            .ok(&["get", "ns", "karmada-es-edge"])
            .contains("Active")
    );

    // Label, and choose clusters by it.
    c.host.ok(&["label", "cluster", "edge", "tier=edge"]);
    assert_eq!(
        c.host
            .ok(&["get", "clusters", "-l", "tier=edge", "-o", "name"])
            .trim(),
        "cluster.cluster.karmada.io/edge"
    );

    // Taint: a Duplicated workload for every cluster skips the tainted one.
    c.host.ok(&[
        "patch",
        "cluster",
        "edge",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"taints":[{"key":"maintenance","value":"planned","effect":"NoSchedule"}]}}"#,
    ]);
    c.host.ok(&["create", "namespace", "ops"]);
    apply_workload(
        &c,
        dir.path(),
        deployment_yaml("ops", "agent", 1, "100m", "busybox:1.36"),
        policy_yaml(
            "ops",
            "agent",
            "{replicaScheduling: {replicaSchedulingType: Duplicated}}",
        ),
    );
    let placed = eventually(WAIT, "agent scheduled", || {
        let b = c.binding_clusters("ops", "agent-deployment");
        if b.len() == 3 {
            Ok(b)
        } else {
            Err(format!("{b:?}"))
        }
    });
    assert!(
        !placed.contains_key("edge"),
        "the taint keeps edge out: {placed:?}"
    );

    // The proxy reaches the member's own API.
    let nodes = c.host.ok(&[
        "get",
        "--raw",
        "/apis/cluster.karmada.io/v1alpha1/clusters/edge/proxy/api/v1/nodes",
    ]);
    assert!(
        nodes.contains("edge-node-0") && nodes.contains("edge-node-1"),
        "{nodes}"
    );

    // edge stops mid-journey: not Ready, and the proxy says it cannot reach it.
    drop(edge);
    c.wait_ready(&["edge"], "False");
    let out = c.host.fails(&[
        "get",
        "--raw",
        "/apis/cluster.karmada.io/v1alpha1/clusters/edge/proxy/api/v1/nodes",
    ]);
    assert!(
        out.stderr.contains("ServiceUnavailable") || out.stderr.contains("503"),
        "{}",
        out.stderr
    );

    // Unjoin while it is down: the Cluster and its execution namespace go; the others keep
    // their workload.
    c.host.ok(&["delete", "cluster", "edge", "--timeout=80s"]);
    eventually(WAIT, "edge's execution namespace gone", || {
        match c.host.try_get(&["ns", "karmada-es-edge"])? {
            None => Ok(()),
            Some(ns) => Err(ns["status"].to_string()),
        }
    });
    assert!(c.host.try_get(&["cluster", "edge"]).unwrap().is_none());
    c.wait_replicas("ops", "agent", "agent still in the three members", |r| {
        r.len() == 3
    });
}
