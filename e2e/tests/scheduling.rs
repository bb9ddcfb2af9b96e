//! The scheduler as a kubectl user sees it, against `flotilla local-up --members 3` (members of
//! different capacity): a ResourceBinding dividing replicas by free capacity gets placed within
//! each member's capacity, `kubectl describe` shows why on the Deployment and the binding, an
//! impossible binding says how much is missing, and `flotillactl reschedule` schedules afresh.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{Kubectl, eventually, flotillactl_bin, kubectl_binary, run_bounded, start_local_up};

const WAIT: Duration = Duration::from_secs(60);

/// A ResourceBinding as the detector writes it for Deployment `name` (whose uid it records, so
/// Events on the template find it).
fn binding(k: &Kubectl, name: &str, replicas: u32, cpu: &str) -> String {
    let uid = k.get_json(&["deployment", name])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    format!(
        r#"{{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding",
"metadata":{{"name":"{name}-deployment","namespace":"default"}},
"spec":{{"resource":{{"apiVersion":"apps/v1","kind":"Deployment","namespace":"default","name":"{name}","uid":"{uid}"}},
"replicas":{replicas},
"replicaRequirements":{{"resourceRequest":{{"cpu":"{cpu}","memory":"1Gi"}}}},
"placement":{{"replicaScheduling":{{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted",
"weightPreference":{{"dynamicWeight":"AvailableReplicas"}}}}}}}}}}"#
    )
}

fn apply(k: &Kubectl, dir: &Path, name: &str, body: &str) {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, body).unwrap();
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
}

fn scheduled(k: &Kubectl, binding: &str) -> Result<Value, String> {
    let rb = k.get_json(&["resourcebinding", binding]);
    let cond = rb["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Scheduled").cloned());
    match cond {
        Some(c) if c["status"] == "True" => Ok(rb),
        other => Err(format!("Scheduled condition {other:?}")),
    }
}

/// How many replicas of (cpu, 1Gi) fit in a cluster by its published summary.
fn free_replicas(cluster: &Value, cpu_milli: i64) -> i64 {
    let s = &cluster["status"]["resourceSummary"];
    let q = |list: &str, key: &str| -> i64 {
        let text = s[list][key].as_str().unwrap_or("0");
        if let Some(m) = text.strip_suffix('m') {
            m.parse().unwrap()
        } else if let Some(g) = text.strip_suffix("Gi") {
            g.parse::<i64>().unwrap() << 30
        } else {
            let n: i64 = text.parse().unwrap();
            if key == "cpu" { n * 1000 } else { n }
        }
    };
    let free = |key: &str| q("allocatable", key) - q("allocated", key) - q("allocating", key);
    (free("cpu") / cpu_milli)
        .min(free("memory") / (1 << 30))
        .min(free("pods"))
}

#[test]
fn bindings_are_divided_by_free_capacity_and_explained() {
    let dir = tempfile::tempdir().unwrap();
    let up = start_local_up(&dir.path().join("flotilla"), &["--members", "3"]);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache"),
    );
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=10",
    ]);
    apply(&k, dir.path(), "web", &binding(&k, "web", 10, "1"));

    let rb = eventually(WAIT, "web-deployment scheduled", || {
        scheduled(&k, "web-deployment")
    });
    let targets = rb["spec"]["clusters"].as_array().unwrap().clone();
    let total: i64 = targets
        .iter()
        .map(|t| t["replicas"].as_i64().unwrap())
        .sum();
    assert_eq!(total, 10, "{targets:?}");
    let mut by_cluster = std::collections::BTreeMap::new();
    for t in &targets {
        let name = t["name"].as_str().unwrap();
        let cluster = k.get_json(&["cluster", name]);
        let replicas = t["replicas"].as_i64().unwrap();
        assert!(
            replicas <= free_replicas(&cluster, 1000),
            "{name} got {replicas}, more than it has room for: {}",
            cluster["status"]["resourceSummary"]
        );
        by_cluster.insert(name.to_string(), replicas);
    }
    // member1 (4 x 8 CPU) has by far the most room: it gets the largest share.
    let most = by_cluster.iter().max_by_key(|(_, r)| **r).unwrap();
    assert_eq!(most.0, "member1", "{by_cluster:?}");
    assert_eq!(
        rb["status"]["schedulerObservedGeneration"], rb["metadata"]["generation"],
        "{}",
        rb["status"]
    );

    // kubectl describe shows why, on the template and on the binding.
    eventually(WAIT, "the Deployment's events", || {
        let text = k.ok(&["describe", "deployment", "web"]);
        if text.contains("ScheduleBindingSucceed") && text.contains("member1:") {
            Ok(())
        } else {
            Err(text)
        }
    });
    let text = k.ok(&["describe", "resourcebinding", "web-deployment"]);
    assert!(text.contains("ScheduleBindingSucceed"), "{text}");

    // More than all members hold: Unschedulable, saying how much is missing.
    k.ok(&["create", "deployment", "huge", "--image=nginx"]);
    apply(&k, dir.path(), "huge", &binding(&k, "huge", 500, "1"));
    let message = eventually(WAIT, "huge-deployment unschedulable", || {
        let rb = k.get_json(&["resourcebinding", "huge-deployment"]);
        let cond = rb["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Scheduled").cloned())
            .unwrap_or_default();
        if cond["status"] == "False" && cond["reason"] == "Unschedulable" {
            Ok(cond["message"].as_str().unwrap_or_default().to_string())
        } else {
            Err(format!("{cond}"))
        }
    });
    assert!(
        message.contains("insufficient capacity") && message.contains("of 500 replicas"),
        "{message}"
    );
    eventually(WAIT, "the failure on the Deployment's events", || {
        let text = k.ok(&["describe", "deployment", "huge"]);
        if text.contains("ScheduleBindingFailed") && text.contains("insufficient capacity") {
            Ok(())
        } else {
            Err(text)
        }
    });

    // flotillactl reschedule: a fresh schedule, seen as a newer lastScheduledTime.
    let before = k.get_json(&["resourcebinding", "web-deployment"])["status"]["lastScheduledTime"]
        .as_str()
        .unwrap()
        .to_string();
    std::thread::sleep(Duration::from_millis(1100));
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig").arg(&up.kubeconfig).args([
        "reschedule",
        "deployment/web",
        "-n",
        "default",
    ]);
    let out = run_bounded(&mut cmd, WAIT, "flotillactl reschedule");
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("ResourceBinding default/web-deployment"),
        "{}",
        out.stdout
    );
    eventually(WAIT, "a fresh schedule after reschedule", || {
        let rb = scheduled(&k, "web-deployment")?;
        let after = rb["status"]["lastScheduledTime"]
            .as_str()
            .unwrap_or_default();
        if after > before.as_str() {
            Ok(())
        } else {
            Err(format!("lastScheduledTime still {after}"))
        }
    });
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig")
        .arg(&up.kubeconfig)
        .args(["reschedule", "deployment/missing"]);
    let out = run_bounded(&mut cmd, WAIT, "flotillactl reschedule missing");
    assert!(!out.status.success());
    assert!(out.stderr.contains("not found"), "{}", out.stderr);
}
