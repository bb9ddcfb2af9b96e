//! Cluster failover with graceful eviction, as a kubectl user sees it, against
//! `flotilla local-up --members 0` with three member-sims run as their own processes and
//! joined with `flotillactl join` (so one can be stopped): a Deployment of 6 replicas divided
//! 2/2/2, whose policy tolerates not-ready/unreachable members for 2 s.
//!
//! - member3's process is killed: it turns not Ready and NoExecute-tainted, its replicas are
//!   recreated in member1 and member2 (3/3) while the binding shows a graceful eviction task
//!   for member3, and member3's Work is deleted only after the task ended, which it does only
//!   once the new replicas are available in the members;
//! - member2 is tainted NoExecute by hand (`kubectl patch cluster`): its replicas move to
//!   member1 the same way;
//! - throughout, the host's `kubectl get deploy` READY count (sampled every 200 ms) never
//!   reaches 0.
//!
//! A planned move goes the same way: web, divided `Aggregated` over two small members
//! (3/3), is consolidated by `flotillactl reschedule` onto a larger member3 that joined
//! since; member1 and member2 get graceful eviction tasks (reason `Rescheduled`) and keep
//! their Works until member3 runs all six, and the host's READY count never reaches 0.
//!
//! Needs the binaries: `cargo build --bin flotilla --bin flotillactl` (or `FLOTILLA_BIN`,
//! `FLOTILLACTL_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{
    ApiserverProcess, Kubectl, Proc, eventually, flotillactl_bin, kubectl_binary, run_bounded,
    start_local_up, start_member_sim_with,
};

const WAIT: Duration = Duration::from_secs(60);
const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

fn join(host_kubeconfig: &Path, name: &str, member: &ApiserverProcess) {
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig")
        .arg(host_kubeconfig)
        .args(["join", name, "--cluster-kubeconfig"])
        .arg(&member.kubeconfig)
        .args(["--cluster-context", &format!("{name}-flotilla")]);
    let out = run_bounded(&mut cmd, WAIT, "flotillactl join");
    assert!(
        out.status.success(),
        "flotillactl join {name}: {}{}",
        out.stdout,
        out.stderr
    );
}

fn apply(k: &Kubectl, dir: &Path, name: &str, body: &str) {
    let out = k.apply_file(dir, name, body);
    assert!(out.status.success(), "kubectl apply {name}: {}", out.stderr);
}

const DEPLOYMENT: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 6
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        resources:
          requests: {cpu: 500m, memory: 256Mi}
"#;

/// Divided by free capacity over the three members (equal, so 2/2/2); a member that is
/// not ready or unreachable is tolerated for 2 s, then its replicas move (cluster failover,
/// Gracefully: the old copy stays until the new one is up).
const POLICY: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: default
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [member1, member2, member3]
    clusterTolerations:
    - key: cluster.karmada.io/not-ready
      operator: Exists
      effect: NoExecute
      tolerationSeconds: 2
    - key: cluster.karmada.io/unreachable
      operator: Exists
      effect: NoExecute
      tolerationSeconds: 2
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        dynamicWeight: AvailableReplicas
  failover:
    cluster:
      purgeMode: Gracefully
"#;

fn task_clusters(rb: &Value) -> Vec<String> {
    rb["spec"]["gracefulEvictionTasks"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| t["fromCluster"].as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// One version of the binding as the watch delivered it (`started` = `ended` = when).
struct BindingSample {
    started: Instant,
    ended: Instant,
    rb: Value,
}

/// One reading of the Works in `karmada-es-<cluster>`: whether web's Work there is still
/// live (exists without a deletionTimestamp), and when the query ended.
struct WorkSample {
    ended: Instant,
    live: bool,
}

/// Samples in background threads until stopped: the host's READY count of web and whether
/// web's Work in each member's execution namespace is live (every ~200 ms), and every
/// version of the binding (a watch).
struct Samplers {
    stop: Arc<AtomicBool>,
    watch: Proc,
    threads: Vec<thread::JoinHandle<()>>,
    ready: Arc<Mutex<Vec<(Instant, i64, String)>>>,
    bindings: Arc<Mutex<Vec<BindingSample>>>,
    works: Arc<Mutex<Vec<(String, WorkSample)>>>,
}

fn host_kubectl(kubeconfig: &Path, cache: &Path) -> Kubectl {
    Kubectl::new(kubectl_binary("kubectl"), kubeconfig, cache)
}

impl Samplers {
    /// Waits until each sampler has a first reading.
    fn wait_first_samples(&self) {
        eventually(WAIT, "first samples", || {
            let (r, b, w) = (
                self.ready.lock().unwrap().len(),
                self.bindings.lock().unwrap().len(),
                self.works.lock().unwrap().len(),
            );
            if r > 0 && b > 0 && w > 0 {
                Ok(())
            } else {
                Err(format!("{r} {b} {w}"))
            }
        });
    }

    fn start(kubeconfig: &Path, dir: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ready = Arc::new(Mutex::new(Vec::new()));
        let bindings = Arc::new(Mutex::new(Vec::new()));
        let works = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        {
            let (stop, ready) = (stop.clone(), ready.clone());
            let k = host_kubectl(kubeconfig, &dir.join("cache-ready"));
            threads.push(thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let out = k.run(&["get", "deploy", "web", "--no-headers"]);
                    let line = out.stdout.trim().to_string();
                    // NAME READY UP-TO-DATE AVAILABLE AGE; READY is "n/6".
                    let n = line
                        .split_whitespace()
                        .nth(1)
                        .and_then(|r| r.split('/').next())
                        .and_then(|n| n.parse::<i64>().ok())
                        .unwrap_or(-1);
                    ready.lock().unwrap().push((
                        Instant::now(),
                        n,
                        format!("{line}{}", out.stderr),
                    ));
                    thread::sleep(Duration::from_millis(200));
                }
            }));
        }
        // The binding is watched, not polled: every version is seen, however briefly the
        // eviction task lasts.
        let watch = {
            let k = host_kubectl(kubeconfig, &dir.join("cache-binding"));
            let mut cmd = k.command(&[
                "get",
                "resourcebinding",
                "web-deployment",
                "-o",
                "json",
                "--watch",
            ]);
            cmd.stdout(Stdio::piped()).stderr(Stdio::null());
            cmd.spawn().unwrap()
        };
        let mut watch = Proc(watch);
        {
            let bindings = bindings.clone();
            let stdout = watch.0.stdout.take().unwrap();
            threads.push(thread::spawn(move || {
                let stream = serde_json::Deserializer::from_reader(std::io::BufReader::new(stdout))
                    .into_iter::<Value>();
                for rb in stream {
                    let Ok(rb) = rb else { break };
                    let at = Instant::now();
                    bindings.lock().unwrap().push(BindingSample {
                        started: at,
                        ended: at,
                        rb,
                    });
                }
            }));
        }
        {
            let (stop, works) = (stop.clone(), works.clone());
            let k = host_kubectl(kubeconfig, &dir.join("cache-works"));
            threads.push(thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let out = k.run(&["get", "works", "-A", "-o", "json"]);
                    let ended = Instant::now();
                    if let Ok(list) = serde_json::from_str::<Value>(&out.stdout) {
                        let mut got = works.lock().unwrap();
                        for m in MEMBERS {
                            let live = web_work_live(&list, m);
                            got.push((m.to_string(), WorkSample { ended, live }));
                        }
                    }
                    thread::sleep(Duration::from_millis(200));
                }
            }));
        }
        Samplers {
            stop,
            watch,
            threads,
            ready,
            bindings,
            works,
        }
    }

    fn stop(self) -> Samples {
        self.stop.store(true, Ordering::Relaxed);
        // Ends the watch, so its reader thread ends too.
        drop(self.watch);
        for t in self.threads {
            t.join().unwrap();
        }
        Samples {
            ready: take(&self.ready),
            bindings: take(&self.bindings),
            works: take(&self.works),
        }
    }
}

/// Everything the samplers saw.
struct Samples {
    /// When, the READY count (-1: no answer), and the line.
    ready: Vec<(Instant, i64, String)>,
    bindings: Vec<BindingSample>,
    /// Per member.
    works: Vec<(String, WorkSample)>,
}

fn take<T>(m: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(&mut *m.lock().unwrap())
}

/// Whether the Works list holds web's Work in `karmada-es-<cluster>` without a
/// deletionTimestamp.
fn web_work_live(list: &Value, cluster: &str) -> bool {
    let es = format!("karmada-es-{cluster}");
    list["items"].as_array().is_some_and(|items| {
        items.iter().any(|w| {
            w["metadata"]["namespace"] == es.as_str()
                && w["metadata"]["deletionTimestamp"].is_null()
                && w["spec"]["workload"]["manifests"]
                    .as_array()
                    .is_some_and(|ms| {
                        ms.iter()
                            .any(|m| m["kind"] == "Deployment" && m["metadata"]["name"] == "web")
                    })
        })
    })
}

/// web's readyReplicas in a member, read from the member itself.
fn member_ready(k: &Kubectl) -> i64 {
    let out = k.run(&["get", "deploy", "web", "-o", "json"]);
    serde_json::from_str::<Value>(&out.stdout)
        .ok()
        .and_then(|d| d["status"]["readyReplicas"].as_i64())
        .unwrap_or(0)
}

/// Checks one move off `from`: the binding showed a task for it; the task ended only on a
/// status where every new target's copy was Healthy with its replicas available; `from`'s
/// Work stayed live while the task was seen (never deleted before a reading that still
/// showed the task).
fn check_move(from: &str, bindings: &[BindingSample], works: &[(String, WorkSample)]) {
    let with_task: Vec<&BindingSample> = bindings
        .iter()
        .filter(|s| task_clusters(&s.rb).iter().any(|c| c == from))
        .collect();
    assert!(
        !with_task.is_empty(),
        "no reading of the binding showed a graceful eviction task for {from}"
    );
    eprintln!(
        "{} of {} readings of the binding showed the eviction task for {from}",
        with_task.len(),
        bindings.len()
    );
    let last_with_task = with_task.last().unwrap();
    let ended = bindings
        .iter()
        .find(|s| s.started > last_with_task.ended)
        .unwrap_or_else(|| panic!("the task for {from} was never seen ending"));
    let rb = &ended.rb;
    for (cluster, replicas) in support::binding_targets(rb) {
        let item = rb["status"]["aggregatedStatus"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["clusterName"] == cluster.as_str()))
            .unwrap_or_else(|| panic!("no aggregatedStatus for {cluster}: {}", rb["status"]));
        assert_eq!(
            item["health"], "Healthy",
            "{cluster} when the task ended: {item}"
        );
        let available = item["status"]["availableReplicas"].as_i64().unwrap_or(0);
        assert!(
            available >= replicas,
            "{cluster} had {available} of {replicas} replicas available when the task for {from} ended: {item}"
        );
    }
    // No reading saw the Work deleted before a later reading still saw the task.
    for (cluster, w) in works {
        if cluster == from && !w.live {
            assert!(
                !with_task.iter().any(|b| b.started > w.ended),
                "{from}'s Work was deleted while the binding still had its eviction task"
            );
        }
    }
}

#[test]
fn replicas_move_off_a_stopped_or_tainted_member_before_the_old_copy_goes() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["--members", "0", "--eviction-grace-period", "90s"];
    args.extend_from_slice(support::FAST_FAILURE);
    let up = start_local_up(&dir.path().join("flotilla"), &args);
    let host = host_kubectl(&up.kubeconfig, &dir.path().join("cache-host"));
    let mut sims = Vec::new();
    let mut member_k = Vec::new();
    for name in MEMBERS {
        let m = start_member_sim_with(
            name,
            &dir.path().join(name),
            &["--nodes", "2", "--node-cpu", "4", "--node-memory", "8Gi"],
        );
        join(&up.kubeconfig, name, &m);
        member_k.push(Kubectl::new(
            kubectl_binary("kubectl"),
            &m.kubeconfig,
            &dir.path().join(format!("cache-{name}")),
        ));
        sims.push(Some(m));
    }
    eventually(WAIT, "three Ready members", || {
        let table = host.ok(&["get", "clusters", "--no-headers"]);
        let ready = table.lines().filter(|l| l.contains(" True ")).count();
        if ready == 3 { Ok(()) } else { Err(table) }
    });

    apply(&host, dir.path(), "web", DEPLOYMENT);
    apply(&host, dir.path(), "policy", POLICY);
    eventually(WAIT, "web 2/2/2 and 6/6 READY on the host", || {
        let rb = host
            .try_get(&["resourcebinding", "web-deployment"])?
            .ok_or("no binding yet")?;
        let t = support::binding_targets(&rb);
        let table = host.ok(&["get", "deploy", "web", "--no-headers"]);
        let even = t.len() == 3 && t.iter().all(|(_, r)| *r == 2);
        if even && table.split_whitespace().nth(1) == Some("6/6") {
            Ok(())
        } else {
            Err(format!("{t:?}; {table}"))
        }
    });

    let samplers = Samplers::start(&up.kubeconfig, dir.path());
    // Wait until each sampler has a reading from before the failure.
    samplers.wait_first_samples();

    // 1. member3's process dies.
    let started = Instant::now();
    drop(sims[2].take());
    eventually(WAIT, "member3 not Ready and tainted NoExecute", || {
        let c = host.get_json(&["cluster", "member3"]);
        let no_execute = c["spec"]["taints"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["effect"] == "NoExecute"));
        if no_execute {
            Ok(())
        } else {
            Err(format!("{}", c["spec"]))
        }
    });
    eventually(
        WAIT,
        "member3's replicas running in member1 and member2",
        || {
            let rb = host
                .try_get(&["resourcebinding", "web-deployment"])?
                .ok_or("no binding yet")?;
            let t = support::binding_targets(&rb);
            let ready: Vec<i64> = member_k[..2].iter().map(member_ready).collect();
            let moved = t == [("member1".to_string(), 3), ("member2".to_string(), 3)];
            if moved && ready == [3, 3] && task_clusters(&rb).is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "targets {t:?}, ready {ready:?}, tasks {:?}",
                    task_clusters(&rb)
                ))
            }
        },
    );
    eventually(WAIT, "member3's Work deleted", || {
        let list = host.get_json(&["works", "-A"]);
        if web_work_live(&list, "member3") {
            Err("still live".into())
        } else {
            Ok(())
        }
    });
    eprintln!("member3 failed over in {:?}", started.elapsed());

    // 2. member2 is tainted NoExecute by hand: its replicas move to member1.
    host.ok(&[
        "patch",
        "cluster",
        "member2",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"taints":[{"key":"maintenance","value":"e2e","effect":"NoExecute"}]}}"#,
    ]);
    eventually(WAIT, "member2's replicas running in member1", || {
        let rb = host
            .try_get(&["resourcebinding", "web-deployment"])?
            .ok_or("no binding yet")?;
        let t = support::binding_targets(&rb);
        let ready = member_ready(&member_k[0]);
        if t == [("member1".to_string(), 6)] && ready == 6 && task_clusters(&rb).is_empty() {
            Ok(())
        } else {
            Err(format!(
                "targets {t:?}, member1 ready {ready}, tasks {:?}",
                task_clusters(&rb)
            ))
        }
    });
    eventually(WAIT, "member2's Work deleted and its copy gone", || {
        let list = host.get_json(&["works", "-A"]);
        let left = member_ready(&member_k[1]);
        if !web_work_live(&list, "member2") && left == 0 {
            Ok(())
        } else {
            Err(format!("member2 still runs {left}"))
        }
    });
    eventually(WAIT, "6/6 READY on the host", || {
        let table = host.ok(&["get", "deploy", "web", "--no-headers"]);
        if table.split_whitespace().nth(1) == Some("6/6") {
            Ok(())
        } else {
            Err(table)
        }
    });

    let Samples {
        ready,
        bindings,
        works,
    } = samplers.stop();
    check_move("member3", &bindings, &works);
    check_move("member2", &bindings, &works);
    let zero: Vec<&(Instant, i64, String)> = ready.iter().filter(|(_, n, _)| *n == 0).collect();
    assert!(
        zero.is_empty(),
        "the host's READY count reached 0 ({} of {} readings), e.g. {:?}",
        zero.len(),
        ready.len(),
        zero.first().map(|(_, _, line)| line)
    );
    let min = ready.iter().map(|(_, n, _)| *n).filter(|n| *n >= 0).min();
    eprintln!(
        "{} READY readings, lowest {min:?}; {} binding readings",
        ready.len(),
        bindings.len()
    );
}

/// Divided `Aggregated`: as few members as hold the replicas, the roomiest first. No
/// `failover` block: the move off a member is graceful by default.
const AGGREGATED_POLICY: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: web
  namespace: default
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Aggregated
"#;

/// `flotillactl reschedule deployment/web`.
fn reschedule_web(host_kubeconfig: &Path) {
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig").arg(host_kubeconfig).args([
        "reschedule",
        "deployment/web",
        "-n",
        "default",
    ]);
    let out = run_bounded(&mut cmd, WAIT, "flotillactl reschedule");
    assert!(
        out.status.success(),
        "flotillactl reschedule: {}{}",
        out.stdout,
        out.stderr
    );
}

/// Reasons of the binding's eviction tasks, per cluster.
fn task_reasons(rb: &Value) -> Vec<(String, String)> {
    rb["spec"]["gracefulEvictionTasks"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    (
                        t["fromCluster"].as_str().unwrap_or_default().to_string(),
                        t["reason"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_reschedule_onto_a_new_larger_member_keeps_ready_replicas_throughout() {
    let dir = tempfile::tempdir().unwrap();
    let up = start_local_up(
        &dir.path().join("flotilla"),
        &[
            "--members",
            "0",
            "--cluster-status-update-frequency",
            "500ms",
            "--eviction-grace-period",
            "90s",
        ],
    );
    let host = host_kubectl(&up.kubeconfig, &dir.path().join("cache-host"));
    // Two small members: room for 4 of web's 500m replicas each, so 6 need both.
    let mut sims = Vec::new();
    let mut member_k = Vec::new();
    let mut start = |name: &str, args: &[&str]| {
        let m = start_member_sim_with(name, &dir.path().join(name), args);
        join(&up.kubeconfig, name, &m);
        member_k.push(Kubectl::new(
            kubectl_binary("kubectl"),
            &m.kubeconfig,
            &dir.path().join(format!("cache-{name}")),
        ));
        sims.push(m);
    };
    let small = ["--nodes", "1", "--node-cpu", "2", "--node-memory", "8Gi"];
    start("member1", &small);
    start("member2", &small);
    eventually(WAIT, "two Ready members", || {
        let table = host.ok(&["get", "clusters", "--no-headers"]);
        let ready = table.lines().filter(|l| l.contains(" True ")).count();
        if ready == 2 { Ok(()) } else { Err(table) }
    });
    apply(&host, dir.path(), "web", DEPLOYMENT);
    apply(&host, dir.path(), "policy", AGGREGATED_POLICY);
    eventually(
        WAIT,
        "web on member1 and member2, 6/6 READY on the host",
        || {
            let rb = host
                .try_get(&["resourcebinding", "web-deployment"])?
                .ok_or("no binding yet")?;
            let t = support::binding_targets(&rb);
            let table = host.ok(&["get", "deploy", "web", "--no-headers"]);
            let both = t.len() == 2 && t.iter().all(|(_, r)| *r > 0);
            if both && table.split_whitespace().nth(1) == Some("6/6") {
                Ok(())
            } else {
                Err(format!("{t:?}; {table}"))
            }
        },
    );

    // member3, with room for 16, joins. Nothing moves on its own.
    start(
        "member3",
        &["--nodes", "2", "--node-cpu", "4", "--node-memory", "16Gi"],
    );
    eventually(WAIT, "member3 Ready", || {
        let table = host.ok(&["get", "clusters", "--no-headers"]);
        let ready = table.lines().filter(|l| l.contains(" True ")).count();
        if ready == 3 { Ok(()) } else { Err(table) }
    });

    let samplers = Samplers::start(&up.kubeconfig, dir.path());
    samplers.wait_first_samples();

    // flotillactl reschedule: a fresh Aggregated division puts all six on member3. The
    // scheduler learns member3's capacity from its watch, which may trail what the host
    // shows; until it has, a reschedule keeps the old split, so reschedule again (each
    // trigger a few seconds after the last schedule: times are kept to the second).
    let started = Instant::now();
    let mut last_trigger: Option<Instant> = None;
    eventually(WAIT, "web consolidated on member3", || {
        let rb = host
            .try_get(&["resourcebinding", "web-deployment"])?
            .ok_or("no binding yet")?;
        let t = support::binding_targets(&rb);
        if t == [("member3".to_string(), 6)] {
            return Ok(rb);
        }
        if last_trigger.is_none_or(|at| at.elapsed() > Duration::from_secs(3)) {
            reschedule_web(&up.kubeconfig);
            last_trigger = Some(Instant::now());
        }
        Err(format!("targets {t:?}"))
    });
    eventually(WAIT, "web running on member3 only", || {
        let rb = host
            .try_get(&["resourcebinding", "web-deployment"])?
            .ok_or("no binding yet")?;
        let ready: Vec<i64> = member_k.iter().map(member_ready).collect();
        let list = host.get_json(&["works", "-A"]);
        let old_works = ["member1", "member2"].map(|m| web_work_live(&list, m));
        if ready == [0, 0, 6] && task_clusters(&rb).is_empty() && old_works == [false, false] {
            Ok(())
        } else {
            Err(format!(
                "ready {ready:?}, tasks {:?}, old Works live {old_works:?}",
                task_clusters(&rb)
            ))
        }
    });
    eprintln!("web moved to member3 in {:?}", started.elapsed());
    eventually(WAIT, "6/6 READY on the host", || {
        let table = host.ok(&["get", "deploy", "web", "--no-headers"]);
        if table.split_whitespace().nth(1) == Some("6/6") {
            Ok(())
        } else {
            Err(table)
        }
    });

    let Samples {
        ready,
        bindings,
        works,
    } = samplers.stop();
    let min = ready.iter().map(|(_, n, _)| *n).filter(|n| *n >= 0).min();
    eprintln!(
        "{} READY readings, lowest {min:?}; {} binding readings",
        ready.len(),
        bindings.len()
    );
    let zero: Vec<&(Instant, i64, String)> = ready.iter().filter(|(_, n, _)| *n == 0).collect();
    assert!(
        zero.is_empty(),
        "the host's READY count reached 0 ({} of {} readings), e.g. {:?}",
        zero.len(),
        ready.len(),
        zero.first().map(|(_, _, line)| line)
    );
    // Both old members were left by the reschedule, gracefully.
    for from in ["member1", "member2"] {
        assert!(
            bindings.iter().any(|s| task_reasons(&s.rb)
                .iter()
                .any(|(c, r)| c == from && r == "Rescheduled")),
            "no reading of the binding showed a Rescheduled task for {from}"
        );
        check_move(from, &bindings, &works);
    }
}
