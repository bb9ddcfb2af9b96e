//! `flotilla local-up` as a newcomer starts it: time to its ready line (fresh data directory,
//! then a second run on the same one), its RSS idle with the three default members, and its
//! RSS with 1,000 Deployments propagated (one PropagationPolicy dividing each 1-replica
//! Deployment by free capacity over three members big enough to run them all:
//! `--member mN:nodes=4,cpu=64,memory=256Gi,pods=500`), with the time until every binding is
//! FullyApplied.
//!
//! Run: `cargo build --release --bin flotilla && cargo bench -p flotilla-e2e --bench
//! local_up` (FLOTILLA_BIN overrides the binary, else the release build under
//! `$CARGO_TARGET_DIR` or `target/`; FLOTILLA_BENCH_DEPLOYMENTS the count, default 1000).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/mod.rs"]
mod support;

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use support::{Kubectl, Proc, kubectl_binary, release_bin, spawn_ready_lines};

/// `VmRSS` and `VmHWM` of `pid`, in MiB.
fn rss_mib(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
            / 1024.0
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Starts local-up in `data` with `args`; returns it and the seconds to its ready line.
fn start(data: &Path, args: &[&str]) -> (Proc, f64) {
    let mut all = vec![
        "local-up",
        "--port",
        "0",
        "--data-dir",
        data.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let began = Instant::now();
    let (proc, _) = spawn_ready_lines(
        &release_bin(),
        &all,
        &data.with_extension("log"),
        1,
        Duration::from_secs(120),
    );
    (proc, began.elapsed().as_secs_f64())
}

fn stop(proc: Proc) {
    let pid = proc.0.id().to_string();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    let mut proc = proc;
    let _ = proc.0.wait();
}

fn main() {
    let count: usize = std::env::var("FLOTILLA_BENCH_DEPLOYMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let dir = tempfile::tempdir().unwrap();

    // Startup and idle RSS with the default members.
    let data = dir.path().join("default");
    let (up, fresh) = start(&data, &[]);
    println!("local-up (3 default members), fresh data dir: ready after {fresh:.2} s");
    std::thread::sleep(Duration::from_secs(10));
    let (idle, _) = rss_mib(up.0.id());
    println!("local-up idle with 3 members: RSS {idle:.1} MiB");
    stop(up);
    let (up, again) = start(&data, &[]);
    println!("local-up, second run on the same data dir: ready after {again:.2} s");
    stop(up);

    // 1,000 Deployments propagated.
    let data = dir.path().join("load");
    let members: Vec<String> = (1..=3)
        .map(|i| format!("m{i}:nodes=4,cpu=64,memory=256Gi,pods=500"))
        .collect();
    let mut args = Vec::new();
    for m in &members {
        args.extend(["--member", m.as_str()]);
    }
    let (up, _) = start(&data, &args);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &data.join("kubeconfig"),
        &dir.path().join("cache"),
    );
    k.ok(&["create", "namespace", "load"]);
    let mut manifest = String::from(
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: all, namespace: load}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment}]
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
",
    );
    for i in 0..count {
        let _ = write!(
            manifest,
            "---\n{}",
            support::deployment_yaml("load", &format!("d-{i}"), 1, "10m", "nginx:1.25")
        );
    }
    let file = dir.path().join("load.yaml");
    std::fs::write(&file, manifest).unwrap();
    let began = Instant::now();
    k.ok(&["apply", "--server-side", "-f", file.to_str().unwrap()]);
    let applied = began.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = k.get_json(&["rb", "-n", "load"]);
        let done = list["items"]
            .as_array()
            .map(|items| {
                items
                    .iter()
                    .filter(|rb| {
                        rb["status"]["conditions"].as_array().is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c["type"] == "FullyApplied" && c["status"] == "True")
                        })
                    })
                    .count()
            })
            .unwrap_or(0);
        if done >= count {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "only {done} of {count} bindings FullyApplied"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
    let propagated = began.elapsed().as_secs_f64();
    println!(
        "{count} Deployments: apply {applied:.1} s, every binding FullyApplied after {propagated:.1} s"
    );
    std::thread::sleep(Duration::from_secs(10));
    let (rss, peak) = rss_mib(up.0.id());
    println!(
        "local-up with {count} Deployments propagated over 3 members: RSS {rss:.1} MiB (peak {peak:.1} MiB)"
    );
    stop(up);
}
