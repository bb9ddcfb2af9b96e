//! Member clusters as operators see them: three member-sims of different capacity, run as
//! their own processes and joined with `flotillactl join`, reported by `kubectl get clusters`
//! with their versions and readiness; each Cluster's resourceSummary matches the member's
//! nodes and pods (computed here from the member itself); a Deployment applied directly to a
//! member with more replicas than fit leaves the rest Pending/Unschedulable until a scale-down
//! frees capacity; a stopped member turns Ready=False with the not-ready taint within the
//! configured threshold while the others keep updating, and recovers on restart; a member
//! named in member-sim's `--unhealthy-file` (still answering, its /readyz failing) turns
//! READY False while the others stay True, and True again once the file is gone.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{
    ApiserverProcess, Kubectl, eventually, flotillactl_bin, kubectl_binary, run_bounded,
    start_local_up, start_member_sim_with,
};

const WAIT: Duration = Duration::from_secs(60);

/// A quantity in milli-units (cpu) or units (memory, pods): enough for what member-sim uses.
fn quantity_milli(q: &str) -> i128 {
    let q = q.trim();
    let (num, mult): (&str, i128) = if let Some(n) = q.strip_suffix("Ki") {
        (n, 1024 * 1000)
    } else if let Some(n) = q.strip_suffix("Mi") {
        (n, 1024 * 1024 * 1000)
    } else if let Some(n) = q.strip_suffix("Gi") {
        (n, 1024 * 1024 * 1024 * 1000)
    } else if let Some(n) = q.strip_suffix('m') {
        (n, 1)
    } else if let Some(n) = q.strip_suffix('k') {
        (n, 1_000_000)
    } else if let Some(n) = q.strip_suffix('M') {
        (n, 1_000_000_000)
    } else if let Some(n) = q.strip_suffix('G') {
        (n, 1_000_000_000_000)
    } else {
        (q, 1000)
    };
    if let Some((whole, frac)) = num.split_once('.') {
        let scale = 10i128.pow(frac.len() as u32);
        let w: i128 = whole.parse().unwrap();
        let f: i128 = frac.parse().unwrap();
        (w * scale + f) * mult / scale
    } else {
        num.parse::<i128>()
            .unwrap_or_else(|_| panic!("quantity {q:?}"))
            * mult
    }
}

/// A ResourceList as resource -> milli-units, zero entries dropped (absent == 0).
fn list_milli(v: &Value) -> Vec<(String, i128)> {
    let mut out: Vec<(String, i128)> = v
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, q)| (k.clone(), quantity_milli(q.as_str().unwrap())))
                .filter(|(_, n)| *n != 0)
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn add(total: &mut Vec<(String, i128)>, key: &str, n: i128) {
    if n == 0 {
        return;
    }
    match total.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v += n,
        None => total.push((key.to_string(), n)),
    }
    total.sort();
}

/// (allocatable, allocated, allocating) computed from the member's own nodes and pods, the
/// way Karmada defines them: node allocatable summed; requests of pods with a node that have
/// not finished; requests of pods without a node; pods counted as the `pods` resource.
fn expected_summary(member: &Kubectl) -> [Vec<(String, i128)>; 3] {
    let nodes = member.get_json(&["nodes"]);
    let mut allocatable = Vec::new();
    for node in nodes["items"].as_array().unwrap() {
        for (k, q) in list_milli(&node["status"]["allocatable"]) {
            add(&mut allocatable, &k, q);
        }
    }
    let pods = member.get_json(&["pods", "-A"]);
    let (mut allocated, mut allocating) = (Vec::new(), Vec::new());
    for pod in pods["items"].as_array().unwrap() {
        let phase = pod["status"]["phase"].as_str().unwrap_or("Pending");
        if phase == "Succeeded" || phase == "Failed" {
            continue;
        }
        let target = if pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
        {
            &mut allocated
        } else {
            &mut allocating
        };
        add(target, "pods", 1000);
        for c in pod["spec"]["containers"].as_array().unwrap() {
            for (k, q) in list_milli(&c["resources"]["requests"]) {
                add(target, &k, q);
            }
        }
    }
    [allocatable, allocated, allocating]
}

fn cluster_summary(host: &Kubectl, name: &str) -> Result<[Vec<(String, i128)>; 3], String> {
    let c = host.get_json(&["cluster", name]);
    let s = &c["status"]["resourceSummary"];
    if s.is_null() {
        return Err(format!("{name} has no resourceSummary yet"));
    }
    Ok([
        list_milli(&s["allocatable"]),
        list_milli(&s["allocated"]),
        list_milli(&s["allocating"]),
    ])
}

fn ready_status(host: &Kubectl, name: &str) -> String {
    let c = host.get_json(&["cluster", name]);
    c["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .map(|c| c["status"].as_str().unwrap_or_default().to_string())
        .unwrap_or_default()
}

fn taint_keys(host: &Kubectl, name: &str) -> Vec<String> {
    let c = host.get_json(&["cluster", name]);
    let mut keys: Vec<String> = c["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    format!(
                        "{}:{}",
                        t["key"].as_str().unwrap_or_default(),
                        t["effect"].as_str().unwrap_or_default()
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    keys.sort();
    keys
}

fn join(host_kubeconfig: &Path, name: &str, member: &ApiserverProcess) {
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig")
        .arg(host_kubeconfig)
        .args(["join", name, "--cluster-kubeconfig"])
        .arg(&member.kubeconfig)
        .args(["--cluster-context", &format!("{name}-flotilla")]);
    let out = run_bounded(&mut cmd, Duration::from_secs(60), "flotillactl join");
    assert!(
        out.status.success(),
        "flotillactl join {name}: {}{}",
        out.stdout,
        out.stderr
    );
}

fn deployment(name: &str, replicas: u32, cpu: &str, memory: &str) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment","metadata":{{"name":"{name}","namespace":"default"}},
"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{{"app":"{name}"}}}},
"template":{{"metadata":{{"labels":{{"app":"{name}"}}}},"spec":{{"containers":[{{"name":"c","image":"nginx",
"resources":{{"requests":{{"cpu":"{cpu}","memory":"{memory}"}}}}}}]}}}}}}}}"#
    )
}

fn apply(k: &Kubectl, dir: &Path, body: &str) {
    let file = dir.join(format!("obj-{}.json", rand_suffix()));
    std::fs::write(&file, body).unwrap();
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn pod_phases(member: &Kubectl, app: &str) -> (usize, usize, usize) {
    let pods = member.get_json(&["pods", "-l", &format!("app={app}")]);
    let items = pods["items"].as_array().unwrap();
    let running = items
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .count();
    let unschedulable = items
        .iter()
        .filter(|p| {
            p["status"]["phase"] == "Pending"
                && p["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c["type"] == "PodScheduled"
                            && c["status"] == "False"
                            && c["reason"] == "Unschedulable"
                    })
                })
        })
        .count();
    (items.len(), running, unschedulable)
}

#[test]
fn joined_members_report_health_capacity_and_failures() {
    let dir = tempfile::tempdir().unwrap();
    let up = start_local_up(
        &dir.path().join("flotilla"),
        &[
            "--members",
            "0",
            "--cluster-status-update-frequency",
            "1s",
            "--cluster-failure-threshold",
            "3s",
            "--cluster-success-threshold",
            "2s",
        ],
    );
    let host = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache-host"),
    );
    // Different capacities: 3 x (4 CPU, 8Gi, 20 pods), 2 x (2, 4Gi), 1 x (8, 16Gi).
    let specs = [
        ("member1", "3", "4", "8Gi"),
        ("member2", "2", "2", "4Gi"),
        ("member3", "1", "8", "16Gi"),
    ];
    // Every member-sim follows the same file; it names the ones to make unhealthy.
    let unhealthy_file = dir.path().join("unhealthy");
    let unhealthy_arg = unhealthy_file.to_str().unwrap();
    let mut members = Vec::new();
    for (name, nodes, cpu, memory) in specs {
        let data = dir.path().join(name);
        let m = start_member_sim_with(
            name,
            &data,
            &[
                "--nodes",
                nodes,
                "--node-cpu",
                cpu,
                "--node-memory",
                memory,
                "--node-pods",
                "20",
                "--unhealthy-file",
                unhealthy_arg,
            ],
        );
        join(&up.kubeconfig, name, &m);
        let k = Kubectl::new(
            kubectl_binary("kubectl"),
            &m.kubeconfig,
            &dir.path().join(format!("cache-{name}")),
        );
        members.push((name, data, m, k));
    }

    // All Ready, with each member's own version.
    for (name, _, _, k) in &members {
        let version: Value = serde_json::from_str(&k.ok(&["version", "-o", "json"])).unwrap();
        let want = version["serverVersion"]["gitVersion"]
            .as_str()
            .unwrap()
            .to_string();
        eventually(WAIT, &format!("{name} Ready with its version"), || {
            let c = host.get_json(&["cluster", name]);
            let got = c["status"]["kubernetesVersion"]
                .as_str()
                .unwrap_or_default();
            if ready_status(&host, name) == "True" && got == want {
                Ok(())
            } else {
                Err(format!("status: {}", c["status"]))
            }
        });
    }
    let table = host.ok(&["get", "clusters"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "VERSION", "MODE", "READY", "AGE"],
        "{table}"
    );
    for (name, ..) in &members {
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{table}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert!(cols[1].starts_with('v'), "{row}");
        assert_eq!(&cols[2..4], ["Push", "True"], "{row}");
    }

    // member1: 3 nodes x 4 CPU hold 6 replicas of 1500m; 8 requested leave 2 Unschedulable.
    let (_, _, _, m1) = &members[0];
    apply(m1, dir.path(), &deployment("fill", 8, "1500m", "512Mi"));
    eventually(
        WAIT,
        "6 Running and 2 Unschedulable on member1",
        || match pod_phases(m1, "fill") {
            (8, 6, 2) => Ok(()),
            other => Err(format!("(total, running, unschedulable) = {other:?}")),
        },
    );
    eventually(WAIT, "the Deployment status says 6 of 8", || {
        let d = m1.get_json(&["deployment", "fill"]);
        let s = &d["status"];
        if s["replicas"] == 8 && s["readyReplicas"] == 6 && s["availableReplicas"] == 6 {
            Ok(())
        } else {
            Err(s.to_string())
        }
    });
    eventually(
        WAIT,
        "member1's resourceSummary matches its nodes and pods",
        || {
            let want = expected_summary(m1);
            let got = cluster_summary(&host, "member1")?;
            if got == want {
                Ok(())
            } else {
                Err(format!("want {want:?}\ngot  {got:?}"))
            }
        },
    );
    let [allocatable, allocated, allocating] = cluster_summary(&host, "member1").unwrap();
    assert!(
        allocatable.contains(&("cpu".into(), 12_000)),
        "{allocatable:?}"
    );
    assert!(allocated.contains(&("cpu".into(), 9_000)), "{allocated:?}");
    assert!(
        allocating.contains(&("cpu".into(), 3_000)),
        "{allocating:?}"
    );
    assert!(
        allocating.contains(&("pods".into(), 2_000)),
        "{allocating:?}"
    );
    let c = host.get_json(&["cluster", "member1"]);
    assert_eq!(c["status"]["nodeSummary"]["totalNum"], 3, "{}", c["status"]);
    assert_eq!(c["status"]["nodeSummary"]["readyNum"], 3, "{}", c["status"]);

    // Scaling down frees capacity: the Pending pods go, the rest stay Running.
    m1.ok(&["scale", "deployment", "fill", "--replicas", "5"]);
    eventually(WAIT, "5 Running, none Pending", || {
        match pod_phases(m1, "fill") {
            (5, 5, 0) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    eventually(WAIT, "member1's summary follows the scale-down", || {
        let want = expected_summary(m1);
        let got = cluster_summary(&host, "member1")?;
        if got == want && got[2].is_empty() {
            Ok(())
        } else {
            Err(format!("want {want:?}\ngot  {got:?}"))
        }
    });

    // Stop member3: Ready=False with the not-ready taint within the threshold, while
    // member2's status keeps following its changes.
    let (_, data3, m3, _) = members.pop().unwrap();
    let port3 = m3.url.rsplit(':').next().unwrap().to_string();
    drop(m3);
    let (_, _, _, m2) = &members[1];
    apply(m2, dir.path(), &deployment("other", 2, "500m", "256Mi"));
    eventually(
        Duration::from_secs(20),
        "member3 not Ready and tainted",
        || {
            let taints = taint_keys(&host, "member3");
            if ready_status(&host, "member3") == "False"
                && taints.contains(&"cluster.karmada.io/not-ready:NoSchedule".to_string())
            {
                Ok(())
            } else {
                Err(format!(
                    "ready={} taints={taints:?}",
                    ready_status(&host, "member3")
                ))
            }
        },
    );
    eventually(
        WAIT,
        "member2's status follows while member3 is down",
        || {
            let want = expected_summary(m2);
            let got = cluster_summary(&host, "member2")?;
            if got == want && got[1].iter().any(|(k, v)| k == "cpu" && *v == 1000) {
                Ok(())
            } else {
                Err(format!("want {want:?}\ngot  {got:?}"))
            }
        },
    );
    assert_eq!(ready_status(&host, "member2"), "True");
    assert!(taint_keys(&host, "member2").is_empty());

    // Restart member3 on the same data directory and port: Ready again, taints gone.
    let m3 = start_member_sim_with(
        "member3",
        &data3,
        &[
            "--nodes",
            "1",
            "--node-cpu",
            "8",
            "--node-memory",
            "16Gi",
            "--node-pods",
            "20",
            "--secure-port",
            &port3,
        ],
    );
    eventually(WAIT, "member3 Ready again without taints", || {
        let taints = taint_keys(&host, "member3");
        if ready_status(&host, "member3") == "True" && taints.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "ready={} taints={taints:?}",
                ready_status(&host, "member3")
            ))
        }
    });

    // member1 keeps answering but its health checks fail: READY False (ClusterNotReady,
    // not ClusterNotReachable) while member2, which reads the same file, stays True.
    std::fs::write(&unhealthy_file, "member1\n").unwrap();
    let ready_column = |name: &str| {
        let table = host.ok(&["get", "clusters"]);
        let row = table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}:\n{table}"))
            .to_string();
        row.split_whitespace()
            .nth(3)
            .unwrap_or_default()
            .to_string()
    };
    eventually(
        Duration::from_secs(20),
        "member1 READY False",
        || match ready_column("member1").as_str() {
            "False" => Ok(()),
            other => Err(format!("READY {other}")),
        },
    );
    let c = host.get_json(&["cluster", "member1"]);
    let ready = c["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(ready["reason"], "ClusterNotReady", "{ready}");
    assert_eq!(ready_column("member2"), "True");
    std::fs::remove_file(&unhealthy_file).unwrap();
    eventually(WAIT, "member1 READY True again", || {
        match ready_column("member1").as_str() {
            "True" => Ok(()),
            other => Err(format!("READY {other}")),
        }
    });
    drop(m3);
    drop(up);
}
