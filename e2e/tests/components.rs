//! The split deployment: `flotilla apiserver`, `flotilla aggregated-apiserver`, two
//! `flotilla controller-manager` replicas and a `flotilla scheduler`, each its own process as
//! on a real host cluster. Only the Lease holder acts; when it is killed the standby takes
//! over; members joined with flotillactl get their status; bindings get scheduled; each
//! component serves /metrics. The controller-manager and the scheduler connect with their
//! own kubeconfigs (`<data-dir>/<component>.kubeconfig`): their own users, only their own
//! ClusterRoles, no `system:masters`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{
    Kubectl, Streaming, eventually, flotilla_bin, flotillactl_bin, free_port, kubectl_binary,
    run_bounded, start_aggregated_apiserver, start_apiserver, start_member_sim,
};

const WAIT: Duration = Duration::from_secs(60);

/// Starts `flotilla <args> --kubeconfig K`; its stdout lines arrive on the returned stream.
fn component(kubeconfig: &Path, args: &[&str]) -> Streaming {
    let mut cmd = Command::new(flotilla_bin());
    cmd.args(args)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .stdin(Stdio::null());
    Streaming::spawn(cmd)
}

fn metrics(port: u16) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", &format!("http://127.0.0.1:{port}/metrics")]);
    let out = run_bounded(&mut cmd, WAIT, "curl /metrics");
    assert!(out.status.success(), "{}", out.stderr);
    out.stdout
}

#[test]
fn components_as_separate_processes_with_leader_election() {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let host = start_apiserver(&host_dir);
    let _aggregated = start_aggregated_apiserver(&host_dir, &dir.path().join("aggregated"));
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );

    let member = start_member_sim("edge", &dir.path().join("edge"), 2);
    let mut join = Command::new(flotillactl_bin());
    join.arg("--kubeconfig")
        .arg(&host.kubeconfig)
        .args(["join", "edge", "--cluster-kubeconfig"])
        .arg(&member.kubeconfig)
        .args(["--cluster-context", "edge-flotilla"]);
    let out = run_bounded(&mut join, WAIT, "flotillactl join");
    assert!(out.status.success(), "{}{}", out.stdout, out.stderr);

    let (port_a, port_b, port_s) = (free_port(), free_port(), free_port());
    let cm_args = |port: u16| {
        vec![
            "controller-manager".to_string(),
            "--cluster-status-update-frequency".into(),
            "1s".into(),
            "--metrics-bind-address".into(),
            format!("127.0.0.1:{port}"),
        ]
    };
    let args_a = cm_args(port_a);
    let args_a: Vec<&str> = args_a.iter().map(String::as_str).collect();
    // Each component as its own user with only its own ClusterRole, as deployed.
    let cm_kubeconfig = host_dir.join("controller-manager.kubeconfig");
    let scheduler_kubeconfig = host_dir.join("scheduler.kubeconfig");
    let mut a = component(&cm_kubeconfig, &args_a);
    a.wait_for_line(WAIT, "controller-manager A leads", |l| {
        l.contains("controller-manager running (leader)")
    });
    let args_b = cm_args(port_b);
    let args_b: Vec<&str> = args_b.iter().map(String::as_str).collect();
    let mut b = component(&cm_kubeconfig, &args_b);
    let scheduler_args = [
        "scheduler",
        "--metrics-bind-address",
        &format!("127.0.0.1:{port_s}"),
    ];
    let mut scheduler = component(&scheduler_kubeconfig, &scheduler_args);
    scheduler.wait_for_line(WAIT, "the scheduler runs", |l| {
        l.contains("scheduler running")
    });

    // A leads: the member gets its status, the execution namespace exists.
    eventually(WAIT, "edge Ready", || {
        let c = k.get_json(&["cluster", "edge"]);
        let ready = c["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
        if ready {
            Ok(())
        } else {
            Err(c["status"].to_string())
        }
    });
    // The cluster controller creates it, independently of the status controller's Ready.
    eventually(WAIT, "edge's execution namespace", || {
        match k.try_get(&["namespace", "karmada-es-edge"]) {
            Ok(Some(_)) => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    // The controllers run on a runtime of their own: its worker threads (half the cores, at
    // least one) and any blocking thread it started carry its name, at niceness 5 (the
    // default --controller-nice); the process's other threads keep 0.
    let threads: Vec<(String, i64)> = std::fs::read_dir(format!("/proc/{}/task", a.child.id()))
        .unwrap()
        .filter_map(|t| {
            let dir = t.ok()?.path();
            let name = std::fs::read_to_string(dir.join("comm")).ok()?;
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            // Fields after the parenthesised name start at the third; niceness is the 19th.
            let nice = stat
                .rsplit(')')
                .next()?
                .split_whitespace()
                .nth(16)?
                .parse()
                .ok()?;
            Some((name.trim().to_string(), nice))
        })
        .collect();
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let controllers: Vec<i64> = threads
        .iter()
        .filter(|(name, _)| name == "controllers")
        .map(|(_, nice)| *nice)
        .collect();
    assert!(controllers.len() >= (cores / 2).clamp(1, 4), "{threads:?}");
    assert!(controllers.iter().all(|nice| *nice == 5), "{threads:?}");
    assert!(
        threads
            .iter()
            .filter(|(name, _)| name != "controllers")
            .all(|(_, nice)| *nice == 0),
        "{threads:?}"
    );
    let text = metrics(port_a);
    assert!(text.contains("flotilla_"), "{text}");
    // The allocator's gauges come with every component's metrics, before the one `# EOF`.
    let resident = text
        .lines()
        .find_map(|l| l.strip_prefix("flotilla_heap_resident_bytes "))
        .and_then(|v| v.parse::<u64>().ok());
    assert!(resident.is_some_and(|r| r > 0), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1, "{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
    let lease = k.get_json(&["lease", "-n", "kube-system", "flotilla-controller-manager"]);
    let holder_a = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();

    // The scheduler process places a binding on the member.
    k.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=2",
    ]);
    let rb = dir.path().join("rb.json");
    std::fs::write(
        &rb,
        r#"{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding",
"metadata":{"name":"web-deployment","namespace":"default"},
"spec":{"resource":{"apiVersion":"apps/v1","kind":"Deployment","namespace":"default","name":"web"},
"replicas":2,"placement":{"clusterAffinity":{"clusterNames":["edge"]}}}}"#,
    )
    .unwrap();
    k.ok(&["apply", "-f", rb.to_str().unwrap()]);
    eventually(WAIT, "the binding placed on edge", || {
        let rb = k.get_json(&["resourcebinding", "web-deployment"]);
        let clusters = &rb["spec"]["clusters"];
        if clusters == &serde_json::json!([{"name": "edge", "replicas": 2}]) {
            Ok(())
        } else {
            Err(rb.to_string())
        }
    });
    assert!(metrics(port_s).contains("flotilla_scheduler"));

    // Kill the leader: B takes over once the Lease expires, and keeps the status fresh.
    drop(a);
    b.wait_for_line(Duration::from_secs(45), "controller-manager B leads", |l| {
        l.contains("controller-manager running (leader)")
    });
    let lease = k.get_json(&["lease", "-n", "kube-system", "flotilla-controller-manager"]);
    let holder_b = lease["spec"]["holderIdentity"].as_str().unwrap();
    assert_ne!(holder_b, holder_a);
    assert!(metrics(port_b).contains("flotilla_"));
    let mk = Kubectl::new(
        kubectl_binary("kubectl"),
        &member.kubeconfig,
        &dir.path().join("cache-member"),
    );
    mk.ok(&[
        "create",
        "deployment",
        "probe",
        "--image=nginx",
        "--replicas=3",
    ]);
    // The member runs the 3 probe pods and the 2 of `web`, which the binding controller
    // propagated to it.
    eventually(WAIT, "B reports the member's new pods", || {
        let c = k.get_json(&["cluster", "edge"]);
        let pods = &c["status"]["resourceSummary"]["allocated"]["pods"];
        if pods.as_str() == Some("5") {
            Ok(())
        } else {
            Err(c["status"]["resourceSummary"].to_string())
        }
    });
    drop(b);
    drop(scheduler);
}

/// `aggregated-apiserver --tls-cert-file` with a certificate whose file does not end with the
/// CA that signed it cannot register its APIServices (no caBundle to give): a clear error and
/// a non-zero exit, nothing registered. With `--no-register` the same files are served.
#[test]
fn a_serving_certificate_without_its_ca_is_refused_unless_not_registering() {
    let dir = tempfile::tempdir().unwrap();
    let host = start_apiserver(&dir.path().join("host"));
    let ca = flotilla_pki::CertificateAuthority::generate("serving-ca").unwrap();
    let leaf = ca
        .issue_server("aggregated", &[], &["127.0.0.1".parse().unwrap()])
        .unwrap();
    let (cert, key) = (dir.path().join("leaf.crt"), dir.path().join("leaf.key"));
    std::fs::write(&cert, &leaf.cert_pem).unwrap();
    std::fs::write(&key, &leaf.key_pem).unwrap();
    let pki = dir.path().join("host/pki");
    let run = |extra: &[&str]| {
        let mut cmd = Command::new(flotilla_bin());
        cmd.arg("aggregated-apiserver")
            .arg("--kubeconfig")
            .arg(&host.kubeconfig)
            .arg("--data-dir")
            .arg(dir.path().join("aggregated"))
            .args(["--secure-port", "0"])
            .arg("--client-ca-file")
            .arg(pki.join("ca.crt"))
            .arg("--requestheader-client-ca-file")
            .arg(pki.join("front-proxy-ca.crt"))
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-private-key-file")
            .arg(&key)
            .args(extra);
        cmd
    };
    let out = run_bounded(&mut run(&[]), WAIT, "aggregated-apiserver");
    assert!(!out.status.success(), "{}{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("must end with the CA that signed it"),
        "{}",
        out.stderr
    );
    let kubectl = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    let apiservices = kubectl.ok(&["get", "apiservices", "-o", "name"]);
    assert!(
        !apiservices.contains("karmada.io"),
        "nothing registered: {apiservices}"
    );
    // --no-register: served with the given certificate (the caller registers the APIService).
    let mut served = Streaming::spawn({
        let mut cmd = run(&["--no-register"]);
        cmd.stdin(Stdio::null());
        cmd
    });
    served.wait_for_line(WAIT, "the aggregated API server ready", |l| {
        l.contains("Flotilla aggregated API server ready at")
    });
}
