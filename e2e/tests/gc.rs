//! Garbage collection end to end: the real `flotilla apiserver` and `flotilla
//! controller-manager` binaries (the collector runs in the controller-manager), driven by the
//! real kubectl. Owners and dependents are ConfigMaps created with kubectl; the dependents'
//! ownerReferences carry the owner's uid read with `kubectl get -o jsonpath`.
//!
//! - `kubectl delete --cascade=background`: the dependent goes after the owner;
//! - `--cascade=foreground`: the owner stays (deletionTimestamp + `foregroundDeletion`)
//!   while a dependent with blockOwnerDeletion is held by a finalizer, and goes after it;
//! - `--cascade=orphan`: the dependent stays without the reference;
//! - the controller-manager's /metrics carries the collector's counters (one `# EOF`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{
    Kubectl, Streaming, eventually, flotilla_bin, free_port, kubectl_binary, run_bounded,
    start_apiserver,
};

const WAIT: Duration = Duration::from_secs(60);

/// Creates ConfigMap `name` and returns its uid.
fn create_owner(k: &Kubectl, name: &str) -> String {
    k.ok(&["create", "configmap", name]);
    let uid = k.ok(&["get", "configmap", name, "-o", "jsonpath={.metadata.uid}"]);
    assert!(!uid.trim().is_empty(), "no uid for {name}");
    uid.trim().to_string()
}

/// `kubectl apply -f` of a ConfigMap owned by `owner` (`uid`).
fn apply_dependent(
    k: &Kubectl,
    dir: &Path,
    name: &str,
    owner: &str,
    uid: &str,
    block: bool,
    finalizer: Option<&str>,
) {
    let finalizers = finalizer
        .map(|f| format!("  finalizers: [\"{f}\"]\n"))
        .unwrap_or_default();
    let yaml = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n{finalizers}  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: {uid}\n    blockOwnerDeletion: {block}\ndata:\n  k: v\n"
    );
    let file = dir.join(format!("{name}.yaml"));
    std::fs::write(&file, yaml).unwrap();
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
}

fn exists(k: &Kubectl, name: &str) -> bool {
    let out = k.run(&["get", "configmap", name, "-o", "name"]);
    if out.status.success() {
        return true;
    }
    assert!(
        out.stderr.contains("NotFound"),
        "kubectl get {name}: {}",
        out.stderr
    );
    false
}

fn wait_gone(k: &Kubectl, name: &str) {
    eventually(WAIT, &format!("{name} deleted"), || {
        if exists(k, name) {
            Err(format!("{name} still exists"))
        } else {
            Ok(())
        }
    });
}

fn metrics(port: u16) -> String {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", &format!("http://127.0.0.1:{port}/metrics")]);
    let out = run_bounded(&mut cmd, WAIT, "curl /metrics");
    assert!(out.status.success(), "{}", out.stderr);
    out.stdout
}

#[test]
fn kubectl_cascading_deletes_with_the_controller_manager_collecting() {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let host = start_apiserver(&host_dir);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    let port = free_port();
    let mut cmd = Command::new(flotilla_bin());
    cmd.args([
        "controller-manager",
        "--leader-elect=false",
        "--metrics-bind-address",
    ])
    .arg(format!("127.0.0.1:{port}"))
    .arg("--kubeconfig")
    .arg(&host.kubeconfig)
    .stdin(Stdio::null());
    let mut cm = Streaming::spawn(cmd);
    cm.wait_for_line(WAIT, "the controller-manager runs", |l| {
        l.contains("controller-manager running")
    });

    // Background (kubectl's default, spelled out).
    let uid = create_owner(&k, "owner-bg");
    apply_dependent(&k, dir.path(), "dep-bg", "owner-bg", &uid, false, None);
    k.ok(&["delete", "configmap", "owner-bg", "--cascade=background"]);
    wait_gone(&k, "dep-bg");

    // Foreground: the owner waits for the blocking dependent, held by its own finalizer.
    let uid = create_owner(&k, "owner-fg");
    apply_dependent(
        &k,
        dir.path(),
        "dep-fg",
        "owner-fg",
        &uid,
        true,
        Some("example.com/hold"),
    );
    k.ok(&[
        "delete",
        "configmap",
        "owner-fg",
        "--cascade=foreground",
        "--wait=false",
    ]);
    eventually(WAIT, "dep-fg deleted by the collector", || {
        let d = k.get_json(&["configmap", "dep-fg"]);
        if d["metadata"]["deletionTimestamp"].is_string() {
            Ok(())
        } else {
            Err(d["metadata"].to_string())
        }
    });
    let owner = k.get_json(&["configmap", "owner-fg"]);
    assert!(
        owner["metadata"]["deletionTimestamp"].is_string(),
        "{owner}"
    );
    let finalizers = owner["metadata"]["finalizers"].to_string();
    assert!(finalizers.contains("foregroundDeletion"), "{owner}");
    k.ok(&[
        "patch",
        "configmap",
        "dep-fg",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    wait_gone(&k, "dep-fg");
    wait_gone(&k, "owner-fg");

    // Orphan: kubectl waits for the owner to go, which needs the collector to let go first.
    let uid = create_owner(&k, "owner-or");
    apply_dependent(&k, dir.path(), "dep-or", "owner-or", &uid, true, None);
    k.ok(&["delete", "configmap", "owner-or", "--cascade=orphan"]);
    wait_gone(&k, "owner-or");
    let dep = k.get_json(&["configmap", "dep-or"]);
    assert!(dep["metadata"]["ownerReferences"].is_null(), "{dep}");
    assert!(dep["metadata"]["deletionTimestamp"].is_null(), "{dep}");

    let text = metrics(port);
    assert!(text.contains("flotilla_gc_deletions_total"), "{text}");
    assert!(text.contains("flotilla_gc_orphanings_total 1"), "{text}");
    assert_eq!(text.matches("# EOF").count(), 1, "{text}");
    assert!(text.trim_end().ends_with("# EOF"), "{text}");
    cm.stop();
}
