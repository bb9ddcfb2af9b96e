//! `flotilla local-up --members 3` as a user runs it: the member clusters are joined with
//! different capacities, regions and zones and reachable through the cluster proxy, a
//! restart on the same data directory (after SIGTERM) brings the same clusters back without
//! duplicates, `--member` describes members instead, and bad input (a directory that is not
//! Flotilla's, a port in use, a bad `--member`, a data directory in use) is refused with a
//! message and a non-zero exit before anything is written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::{
    COMMAND_TIMEOUT, Kubectl, Proc, eventually, flotilla_bin, kubectl_binary, run_bounded,
    start_local_up,
};

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
    let topology = cluster_topology(&k);
    assert_eq!(
        topology,
        [
            "member1 eu-west-1 eu-west-1a",
            "member2 eu-west-1 eu-west-1b",
            "member3 us-east-1 us-east-1a"
        ],
        "the default members' regions and zones"
    );
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
    assert_eq!(cluster_topology(&k), topology, "the same regions and zones");
    wait_all_ready(&k);
}

/// `NAME REGION ZONE` of each Cluster, sorted by name.
fn cluster_topology(k: &Kubectl) -> Vec<String> {
    let out = k.ok(&[
        "get",
        "clusters",
        "--no-headers",
        "-o",
        "custom-columns=NAME:.metadata.name,REGION:.spec.region,ZONE:.spec.zone",
    ]);
    let mut rows: Vec<String> = out
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    rows.sort();
    rows
}

/// Runs `flotilla local-up ARGS` to completion (it must fail: bad input) and returns its
/// exit status and stderr.
fn local_up_fails(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut cmd = Command::new(flotilla_bin());
    cmd.arg("local-up").args(args).stdin(Stdio::null());
    let out = run_bounded(
        &mut cmd,
        COMMAND_TIMEOUT,
        &format!("flotilla local-up {args:?}"),
    );
    assert!(
        !out.status.success(),
        "local-up {args:?} succeeded on bad input\n{}",
        out.stderr
    );
    (out.status, out.stderr)
}

/// The names in `dir`, sorted (what a refused start must not have changed).
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn local_up_refuses_bad_input_with_a_message_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();

    // A directory that is not Flotilla's (someone's files, none of Flotilla's).
    let foreign = dir.path().join("home");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), "mine").unwrap();
    let (_, err) = local_up_fails(&["--data-dir", foreign.to_str().unwrap(), "--port", "0"]);
    assert!(
        err.contains("is not a Flotilla data directory") && err.contains("notes.txt"),
        "{err}"
    );
    assert_eq!(listing(&foreign), ["notes.txt"], "nothing written into it");
    assert_eq!(
        std::fs::read_to_string(foreign.join("notes.txt")).unwrap(),
        "mine"
    );

    // A file given as the data directory.
    let (_, err) = local_up_fails(&[
        "--data-dir",
        foreign.join("notes.txt").to_str().unwrap(),
        "--port",
        "0",
    ]);
    assert!(err.contains("is a file, not a directory"), "{err}");

    // A port another process listens on.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let fresh = dir.path().join("fresh");
    let (_, err) = local_up_fails(&["--data-dir", fresh.to_str().unwrap(), "--port", &port]);
    assert!(
        err.contains(&format!("port {port} on 127.0.0.1 is in use")) && err.contains("--port 0"),
        "{err}"
    );
    assert!(
        !fresh.exists(),
        "a refused start created its data directory"
    );

    // Bad member specs: clap names the flag and the reason; nothing is created.
    for (spec, reason) in [
        ("Edge", "'E' is not allowed"),
        (
            "edge:cpu=lots",
            "cpu=\"lots\" is not a positive CPU quantity",
        ),
        ("edge:nodes=0", "nodes=\"0\" is not a positive number"),
        ("edge:colour=red", "unknown key \"colour\""),
        ("edge:region", "\"region\" is not KEY=VALUE"),
    ] {
        let (status, err) = local_up_fails(&[
            "--data-dir",
            fresh.to_str().unwrap(),
            "--port",
            "0",
            "--member",
            spec,
        ]);
        assert_eq!(status.code(), Some(2), "a usage error: {err}");
        assert!(
            err.contains("invalid value") && err.contains("--member") && err.contains(reason),
            "--member {spec}: {err}"
        );
    }
    let (_, err) = local_up_fails(&[
        "--data-dir",
        fresh.to_str().unwrap(),
        "--port",
        "0",
        "--member",
        "edge",
        "--member",
        "edge:nodes=1",
    ]);
    assert!(err.contains("--member edge is given twice"), "{err}");
    assert!(
        !fresh.exists(),
        "a refused start created its data directory"
    );
    drop(taken);
}

/// `--member` instead of the defaults, the summary on stdout (host URL, each member with its
/// capacity and kubeconfig), one ready line followed by the `export KUBECONFIG=` to run, a
/// progress line per step on stderr; and a second local-up on the same data directory while
/// the first runs is refused without disturbing it.
#[test]
fn member_specs_shape_the_members_and_the_summary_says_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("flotilla");
    let log = dir.path().join("local-up.log");
    let mut child = Command::new(flotilla_bin())
        .arg("local-up")
        .arg("--data-dir")
        .arg(&data)
        .args(["--port", "0"])
        .args([
            "--member",
            "edge:nodes=1,cpu=2,memory=4Gi,region=ap-south-1,zone=ap-south-1a",
            "--member",
            "core",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let _up = Proc(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    while !lines
        .last()
        .is_some_and(|l: &String| l.starts_with("export KUBECONFIG="))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => lines.push(line),
            Err(e) => panic!(
                "no export line ({e:?}); stdout so far:\n{}\nlog:\n{}",
                lines.join("\n"),
                std::fs::read_to_string(&log).unwrap_or_default()
            ),
        }
    }
    let text = lines.join("\n");
    let ready: Vec<&String> = lines.iter().filter(|l| l.contains(" ready at ")).collect();
    assert_eq!(ready.len(), 1, "one ready line:\n{text}");
    assert!(
        ready[0].starts_with("Flotilla is ready at https://127.0.0.1:")
            && ready[0].contains("2 member clusters"),
        "{text}"
    );
    // Before the export, where the web UI is: the host's URL and /ui/.
    let host_url = ready[0]
        .split(" ready at ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap();
    assert!(
        lines[lines.len() - 2].starts_with(&format!("Web UI at {host_url}/ui/ ")),
        "{text}"
    );
    let kubeconfig = std::fs::canonicalize(data.join("kubeconfig")).unwrap();
    assert_eq!(
        lines.last().unwrap(),
        &format!("export KUBECONFIG={}", kubeconfig.display())
    );
    let edge = lines
        .iter()
        .find(|l| l.contains("member cluster edge"))
        .unwrap_or_else(|| panic!("no summary line for edge:\n{text}"));
    assert!(
        edge.contains("1 nodes of 2 CPU, 4Gi memory")
            && edge.contains("region ap-south-1")
            && edge.contains("members/edge.kubeconfig"),
        "{edge}"
    );
    assert!(text.contains("member cluster core"), "{text}");
    let progress = std::fs::read_to_string(&log).unwrap();
    for step in [
        "[1/6] starting the host API server",
        "[6/6] waiting for the member clusters",
    ] {
        assert!(
            progress.contains(step),
            "no progress line {step:?}:\n{progress}"
        );
    }

    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &kubeconfig,
        &dir.path().join("cache"),
    );
    assert_eq!(cluster_names(&k), ["core", "edge"]);
    assert_eq!(
        cluster_topology(&k),
        ["core <none> <none>", "edge ap-south-1 ap-south-1a"]
    );
    assert_eq!(node_names(&k, "edge").len(), 1);
    assert_eq!(
        node_names(&k, "core").len(),
        3,
        "member-sim's default node count"
    );

    // The same data directory while it is in use: refused, and the first keeps serving.
    let before = listing(&data);
    let (_, err) = local_up_fails(&["--data-dir", data.to_str().unwrap(), "--port", "0"]);
    assert!(err.contains(&data.display().to_string()), "{err}");
    assert_eq!(listing(&data), before);
    assert_eq!(cluster_names(&k), ["core", "edge"]);
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
