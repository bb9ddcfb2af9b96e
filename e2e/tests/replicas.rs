//! Components as replicas: two `flotilla controller-manager` and two `flotilla scheduler`
//! processes against one host. While a stream of kubectl applies and scales runs, the leader
//! of each is killed with SIGKILL (it cannot release its Lease); the standby must hold the
//! Lease within 15 s of the kill, and afterwards every acknowledged write must be in every
//! member exactly once: each Deployment scheduled, its Works applied, replicas as last
//! written, no member object without a template and no Work twice.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;
use support::{
    Kubectl, eventually, flotilla_bin, flotillactl_bin, kubectl_binary, run_bounded,
    start_aggregated_apiserver, start_apiserver, start_member_sim,
};

const WAIT: Duration = Duration::from_secs(90);
/// The requirement: a killed leader is replaced within this.
const TAKEOVER: Duration = Duration::from_secs(15);
const NS: &str = "load";
const MEMBERS: [&str; 2] = ["edge1", "edge2"];

/// A component process, killed when dropped; its output goes to `<log>`.
struct Component {
    child: std::process::Child,
}

impl Drop for Component {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `flotilla <args> --kubeconfig K` with stdout and stderr in `log`.
fn component(kubeconfig: &Path, args: &[&str], log: &Path) -> Component {
    let out = std::fs::File::create(log).unwrap();
    let child = Command::new(flotilla_bin())
        .args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .unwrap();
    Component { child }
}

/// Waits until one of `procs` holds Lease `name`.
fn wait_for_holder(k: &Kubectl, name: &str, procs: &[Component]) {
    eventually(WAIT, &format!("one of the processes holds {name}"), || {
        let (h, _) = lease(k, name);
        if !h.is_empty() && procs.iter().any(|p| p.child.id() == pid_of(&h)) {
            Ok(())
        } else {
            Err(format!("holder {h:?}"))
        }
    });
}

/// The Lease `kube-system/<name>`'s holder (empty when none) and acquireTime.
fn lease(k: &Kubectl, name: &str) -> (String, Option<Timestamp>) {
    let Ok(Some(l)) = k.try_get(&["lease", "-n", "kube-system", name]) else {
        return (String::new(), None);
    };
    let holder = l["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let acquired = l["spec"]["acquireTime"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok());
    (holder, acquired)
}

/// The process id in a leader identity `<host>_<pid>_<random>`.
fn pid_of(identity: &str) -> u32 {
    let mut parts = identity.rsplit('_');
    parts.next();
    parts
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| {
            panic!("identity {identity:?} is not <host>_<pid>_<random>");
        })
}

fn deployment(name: &str, replicas: i64) -> String {
    format!(
        r#"{{"apiVersion":"apps/v1","kind":"Deployment",
"metadata":{{"name":"{name}","namespace":"{NS}","labels":{{"app":"{name}"}}}},
"spec":{{"replicas":{replicas},"selector":{{"matchLabels":{{"app":"{name}"}}}},
"template":{{"metadata":{{"labels":{{"app":"{name}"}}}},
"spec":{{"containers":[{{"name":"c","image":"nginx:1.25"}}]}}}}}}}}"#
    )
}

/// Applies `name` with `replicas` from a file under `dir`; true when kubectl acknowledged it.
fn apply(k: &Kubectl, dir: &Path, name: &str, replicas: i64) -> bool {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, deployment(name, replicas)).unwrap();
    k.run(&["apply", "-f", file.to_str().unwrap()])
        .status
        .success()
}

/// The writes kubectl acknowledged: Deployment name -> replicas last written.
type Acked = Arc<Mutex<BTreeMap<String, i64>>>;

/// A stream of applies and scales in namespace `load` until `stop`: each round creates a
/// Deployment and scales the one before it.
fn writer(
    k: Kubectl,
    dir: std::path::PathBuf,
    acked: Acked,
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut i = 0;
        while !stop.load(Ordering::SeqCst) && i < 200 {
            let name = format!("d{i:03}");
            if apply(&k, &dir, &name, 1) {
                acked.lock().unwrap().insert(name, 1);
            }
            if i > 0 {
                let prev = format!("d{:03}", i - 1);
                let replicas = 2 + (i % 2);
                let out = k.run(&[
                    "scale",
                    "-n",
                    NS,
                    &format!("deployment/{prev}"),
                    &format!("--replicas={replicas}"),
                ]);
                if out.status.success() {
                    acked.lock().unwrap().insert(prev, replicas);
                }
            }
            i += 1;
            // A steady stream, not a flood: the point is writes during the takeovers.
            std::thread::sleep(Duration::from_millis(500));
        }
    })
}

fn acked_count(acked: &Acked) -> usize {
    acked.lock().unwrap().len()
}

/// Waits until the writer has `n` more acknowledged Deployments than now.
fn wait_for_writes(acked: &Acked, n: usize) {
    let target = acked_count(acked) + n;
    eventually(WAIT, "the writer goes on", || {
        let have = acked_count(acked);
        if have >= target {
            Ok(())
        } else {
            Err(format!("{have} of {target}"))
        }
    });
}

/// Kills (SIGKILL) the process leading `lease_name` among `procs`, calls `after_kill`, then
/// waits for another holder. Returns (Lease acquired after the kill, new holder seen after
/// the kill, the killed process's index).
fn kill_leader(
    k: &Kubectl,
    lease_name: &str,
    procs: &mut [Component],
    after_kill: impl FnOnce(),
) -> (Duration, Duration, usize) {
    let (holder, _) = lease(k, lease_name);
    let pid = pid_of(&holder);
    let index = procs
        .iter()
        .position(|p| p.child.id() == pid)
        .unwrap_or_else(|| panic!("no process {pid} holds {lease_name} ({holder})"));
    let killed_at = Timestamp::now();
    let killed = Instant::now();
    procs[index].child.kill().unwrap();
    procs[index].child.wait().unwrap();
    after_kill();
    let (new_holder, acquired) = eventually(Duration::from_secs(60), "another holder", || {
        let (h, acquired) = lease(k, lease_name);
        if !h.is_empty() && h != holder {
            Ok((h, acquired))
        } else {
            Err(format!("holder {h:?}"))
        }
    });
    let seen = killed.elapsed();
    assert_ne!(pid_of(&new_holder), pid);
    let acquired = acquired.expect("a new holder writes acquireTime");
    let took = Duration::try_from(acquired.duration_since(killed_at)).unwrap_or_default();
    (took, seen, index)
}

/// Waits until Deployment `name` exists in every member; returns how long that took from
/// `since`.
fn wait_in_members(members: &[Kubectl], name: &str, since: Instant) -> Duration {
    for m in members {
        eventually(WAIT, &format!("{name} in a member"), || {
            match m.try_get(&["deployment", "-n", NS, name]) {
                Ok(Some(_)) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        });
    }
    since.elapsed()
}

fn items(v: &Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn condition_true(v: &Value, kind: &str) -> bool {
    v["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

#[test]
fn killed_leaders_are_replaced_within_15s_and_nothing_is_lost_or_doubled() {
    let mut dir = tempfile::Builder::new()
        .prefix("replicas-")
        .tempdir()
        .unwrap();
    // FLOTILLA_E2E_KEEP=1 keeps the logs (<dir>/*.log) for a look afterwards.
    if std::env::var_os("FLOTILLA_E2E_KEEP").is_some() {
        dir.disable_cleanup(true);
        println!("data and logs in {}", dir.path().display());
    }
    let host_dir = dir.path().join("host");
    let host = start_apiserver(&host_dir);
    let _aggregated = start_aggregated_apiserver(&host_dir, &dir.path().join("aggregated"));
    let kubectl = || {
        Kubectl::new(
            kubectl_binary("kubectl"),
            &host.kubeconfig,
            &dir.path().join("cache"),
        )
    };
    let k = kubectl();
    let mut sims = Vec::new();
    let mut members = Vec::new();
    for name in MEMBERS {
        let sim = start_member_sim(name, &dir.path().join(name), 2);
        let mut join = Command::new(flotillactl_bin());
        join.arg("--kubeconfig")
            .arg(&host.kubeconfig)
            .args(["join", name, "--cluster-kubeconfig"])
            .arg(&sim.kubeconfig)
            .args(["--cluster-context", &format!("{name}-flotilla")]);
        let out = run_bounded(&mut join, WAIT, "flotillactl join");
        assert!(out.status.success(), "{}{}", out.stdout, out.stderr);
        members.push(Kubectl::new(
            kubectl_binary("kubectl"),
            &sim.kubeconfig,
            &dir.path().join(format!("cache-{name}")),
        ));
        sims.push(sim);
    }

    let cm = [
        "controller-manager",
        "--cluster-status-update-frequency",
        "1s",
    ];
    let log = |name: &str| dir.path().join(format!("{name}.log"));
    // Each component as its own user with only its own ClusterRole, as deployed.
    let cm_kubeconfig = host_dir.join("controller-manager.kubeconfig");
    let scheduler_kubeconfig = host_dir.join("scheduler.kubeconfig");
    let mut cms = vec![
        component(&cm_kubeconfig, &cm, &log("cm-1")),
        component(&cm_kubeconfig, &cm, &log("cm-2")),
    ];
    let mut schedulers = vec![
        component(&scheduler_kubeconfig, &["scheduler"], &log("scheduler-1")),
        component(&scheduler_kubeconfig, &["scheduler"], &log("scheduler-2")),
    ];
    wait_for_holder(&k, "flotilla-controller-manager", &cms);
    wait_for_holder(&k, "flotilla-scheduler", &schedulers);
    eventually(WAIT, "members Ready", || {
        for name in MEMBERS {
            let c = k.get_json(&["cluster", name]);
            if !condition_true(&c, "Ready") {
                return Err(c["status"].to_string());
            }
        }
        Ok(())
    });

    k.ok(&["create", "namespace", NS]);
    let policy = dir.path().join("policy.json");
    std::fs::write(
        &policy,
        format!(
            r#"{{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy",
"metadata":{{"name":"all","namespace":"{NS}"}},
"spec":{{"resourceSelectors":[{{"apiVersion":"apps/v1","kind":"Deployment"}}],
"placement":{{"clusterAffinity":{{"clusterNames":["edge1","edge2"]}},
"replicaScheduling":{{"replicaSchedulingType":"Duplicated"}}}}}}}}"#
        ),
    )
    .unwrap();
    k.ok(&["apply", "-f", policy.to_str().unwrap()]);

    let writes = dir.path().join("writes");
    std::fs::create_dir_all(&writes).unwrap();
    let acked: Acked = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let writing = writer(kubectl(), writes.clone(), acked.clone(), stop.clone());
    wait_for_writes(&acked, 3);

    // The controller-manager's leader dies mid-stream.
    let killed_at = Instant::now();
    let (took, seen, killed) = kill_leader(&k, "flotilla-controller-manager", &mut cms, || {
        assert!(apply(&k, &writes, "after-cm-kill", 1));
    });
    cms.remove(killed);
    let resumed = wait_in_members(&members, "after-cm-kill", killed_at);
    let cm_row = (took, resumed);
    println!(
        "controller-manager takeover: new leader's acquireTime {:.1} s after kill -9 (seen {:.1} s after); a Deployment created just after the kill reached both members {:.1} s after it",
        took.as_secs_f64(),
        seen.as_secs_f64(),
        resumed.as_secs_f64(),
    );
    assert!(
        took <= TAKEOVER,
        "controller-manager takeover took {took:?}"
    );

    // Then the scheduler's.
    wait_for_writes(&acked, 3);
    let killed_at = Instant::now();
    let (took, seen, killed) = kill_leader(&k, "flotilla-scheduler", &mut schedulers, || {
        assert!(apply(&k, &writes, "after-scheduler-kill", 1));
    });
    schedulers.remove(killed);
    let resumed = wait_in_members(&members, "after-scheduler-kill", killed_at);
    let scheduler_row = (took, resumed);
    println!(
        "scheduler takeover: new leader's acquireTime {:.1} s after kill -9 (seen {:.1} s after); a Deployment created just after the kill reached both members {:.1} s after it",
        took.as_secs_f64(),
        seen.as_secs_f64(),
        resumed.as_secs_f64(),
    );
    assert!(took <= TAKEOVER, "scheduler takeover took {took:?}");

    // A leader that stops cleanly (SIGTERM) stops its controllers, then releases the Lease:
    // the standby takes over without waiting for it to expire.
    cms.push(component(&cm_kubeconfig, &cm, &log("cm-3")));
    eventually(WAIT, "the third controller-manager competes", || {
        let text = std::fs::read_to_string(log("cm-3")).unwrap_or_default();
        if text.contains("waiting for the leader's Lease") {
            Ok(())
        } else {
            Err(text)
        }
    });
    let (holder, _) = lease(&k, "flotilla-controller-manager");
    let index = cms
        .iter()
        .position(|p| p.child.id() == pid_of(&holder))
        .expect("the leader is one of ours");
    let stopping = Instant::now();
    let term = Command::new("kill")
        .args(["-TERM", &cms[index].child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let exit = cms[index].child.wait().unwrap();
    assert!(exit.success(), "a clean stop: {exit}");
    let (after, _) = lease(&k, "flotilla-controller-manager");
    assert_ne!(
        after, holder,
        "a leader that stops cleanly releases its Lease"
    );
    eventually(WAIT, "the standby leads", || {
        let (h, _) = lease(&k, "flotilla-controller-manager");
        if !h.is_empty() && h != holder {
            Ok(())
        } else {
            Err(format!("holder {h:?}"))
        }
    });
    println!(
        "controller-manager handover after SIGTERM: new holder {:.1} s after the signal",
        stopping.elapsed().as_secs_f64()
    );
    cms.remove(index);

    wait_for_writes(&acked, 3);
    stop.store(true, Ordering::SeqCst);
    writing.join().unwrap();

    // No acknowledged write lost on the host.
    let mut want: BTreeMap<String, i64> = acked.lock().unwrap().clone();
    want.insert("after-cm-kill".into(), 1);
    want.insert("after-scheduler-kill".into(), 1);
    let templates: BTreeMap<String, i64> = items(&k.get_json(&["deployment", "-n", NS]))
        .iter()
        .map(|d| (name_of(d), d["spec"]["replicas"].as_i64().unwrap_or(-1)))
        .collect();
    for (name, replicas) in &want {
        assert_eq!(templates.get(name), Some(replicas), "template {name}");
    }
    println!(
        "{} Deployments written ({} acknowledged writes checked)",
        templates.len(),
        want.len()
    );

    // Every template scheduled onto both members and its Works applied, once per member.
    eventually(WAIT, "every binding scheduled and fully applied", || {
        let bindings = items(&k.get_json(&["resourcebinding", "-n", NS]));
        if bindings.len() != templates.len() {
            let bound: Vec<String> = bindings.iter().map(name_of).collect();
            let unbound: Vec<&String> = templates
                .keys()
                .filter(|t| !bound.contains(&format!("{t}-deployment")))
                .collect();
            return Err(format!(
                "{} bindings for {} templates; without a binding: {unbound:?}",
                bindings.len(),
                templates.len()
            ));
        }
        for b in &bindings {
            let clusters: Vec<&str> = b["spec"]["clusters"]
                .as_array()
                .map(|cs| cs.iter().filter_map(|c| c["name"].as_str()).collect())
                .unwrap_or_default();
            if clusters.len() != 2
                || !condition_true(b, "Scheduled")
                || !condition_true(b, "FullyApplied")
            {
                return Err(format!(
                    "{} not scheduled/applied: {}",
                    name_of(b),
                    b["status"]
                ));
            }
        }
        Ok(())
    });
    for name in MEMBERS {
        let works = items(&k.get_json(&["work", "-n", &format!("karmada-es-{name}")]));
        let mut per_template: BTreeMap<String, usize> = BTreeMap::new();
        for w in &works {
            for m in w["spec"]["workload"]["manifests"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if m["kind"] == "Deployment" && m["metadata"]["namespace"] == NS {
                    *per_template.entry(name_of(m)).or_default() += 1;
                }
            }
            assert!(
                condition_true(w, "Applied"),
                "work {} not applied: {}",
                name_of(w),
                w["status"]
            );
        }
        for t in templates.keys() {
            assert_eq!(per_template.get(t), Some(&1), "Works for {t} in {name}");
        }
        assert_eq!(
            per_template.len(),
            templates.len(),
            "Works without a template in {name}"
        );
    }

    // Every member holds exactly the templates, with the replicas last written, and runs
    // that many pods (no object created twice).
    for (m, name) in members.iter().zip(MEMBERS) {
        eventually(WAIT, &format!("{name} converged"), || {
            let got: BTreeMap<String, i64> = items(&m.get_json(&["deployment", "-n", NS]))
                .iter()
                .map(|d| (name_of(d), d["spec"]["replicas"].as_i64().unwrap_or(-1)))
                .collect();
            if got != templates {
                return Err(format!("member has {got:?}, templates {templates:?}"));
            }
            let pods = items(&m.get_json(&["pod", "-n", NS])).len() as i64;
            let total: i64 = templates.values().sum();
            if pods != total {
                return Err(format!("{pods} pods for {total} replicas"));
            }
            Ok(())
        });
    }
    // Rows of the fault table (e2e/faults.sh): every acknowledged write was found above,
    // and everything converged.
    for (fault, (took, resumed)) in [
        (
            "kill -9 of the leader controller-manager (2 replicas)",
            cm_row,
        ),
        (
            "kill -9 of the leader scheduler (2 replicas)",
            scheduler_row,
        ),
    ] {
        support::fault_row(&format!(
            "| {fault} | kubectl applies and scales of Duplicated Deployments | {} | {} | {:.1} s (new leader after {:.1} s) |",
            want.len(),
            want.len(),
            resumed.as_secs_f64(),
            took.as_secs_f64()
        ));
    }
    drop(cms);
    drop(schedulers);
    drop(sims);
}
