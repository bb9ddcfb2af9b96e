//! The kubectl end-to-end scenario: the real kubectl, over TLS with the kubeconfig the server
//! generated and a fresh discovery cache, drives the real `flotilla apiserver` binary through
//! discovery, namespaces, client-side and server-side apply (with a field-manager conflict),
//! Table output, watch, scale, the three patch types, edit, label, annotate, delete and
//! explain. The same scenario runs with the version dispatcher (`kubectl`, which picks 1.32
//! for this server), `kubectl.1.27` and `kubectl.1.33`, each against its own fresh server.

// The scenario's steps are test code: a panic is how they report a failed step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::{Kubectl, Streaming, kubectl_binary, start_apiserver, write_script};

const NS: &str = "demo";

/// The first applied Deployment: two containers, each with ports.
const DEPLOY_V1: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: demo
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
        image: nginx:1.25
        ports:
        - name: http
          containerPort: 80
        - name: https
          containerPort: 443
      - name: sidecar
        image: busybox:1.36
        command: ["sleep", "infinity"]
        ports:
        - name: metrics
          containerPort: 9090
"#;

#[test]
fn scenario_with_dispatcher_kubectl() {
    scenario("kubectl");
}

#[test]
fn scenario_with_kubectl_1_27() {
    scenario("kubectl.1.27");
}

#[test]
fn scenario_with_kubectl_1_33() {
    scenario("kubectl.1.33");
}

fn scenario(kubectl_name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let server = start_apiserver(&dir.path().join("data"));
    assert!(
        server.url.starts_with("https://"),
        "server is not serving TLS: {}",
        server.url
    );
    let kubeconfig_text = std::fs::read_to_string(&server.kubeconfig).unwrap();
    assert!(
        kubeconfig_text.contains(&format!("server: {}", server.url)),
        "generated kubeconfig does not point at {}:\n{kubeconfig_text}",
        server.url
    );
    let k = Kubectl::new(
        kubectl_binary(kubectl_name),
        &server.kubeconfig,
        &dir.path().join("cache"),
    );

    api_resources(&k);
    create_namespace(&k);
    client_side_apply(&k, dir.path());
    server_side_apply_conflict(&k, dir.path());
    get_yaml(&k);
    get_all_namespaces(&k);
    watch_sees_other_change(&k);
    scale(&k);
    patches(&k);
    edit(&k, dir.path());
    label_and_annotate(&k);
    delete(&k);
    explain(&k);
}

/// Splits a printed table into rows of whitespace-separated cells.
fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|r| !r.is_empty())
        .collect()
}

/// The Deployment `web`, parsed from `get -o json`.
fn deployment(k: &Kubectl) -> Value {
    k.get_json(&["deployment", "web", "-n", NS])
}

fn replicas(d: &Value) -> i64 {
    d["spec"]["replicas"]
        .as_i64()
        .unwrap_or_else(|| panic!("no spec.replicas in {d:#}"))
}

/// The pod template's container named `name`.
fn container<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no container {name} in {d:#}"))
}

fn container_names(d: &Value) -> Vec<String> {
    d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap_or_else(|| panic!("no containers in {d:#}"))
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn ports(c: &Value) -> Vec<(String, i64)> {
    c["ports"]
        .as_array()
        .unwrap_or_else(|| panic!("no ports in {c:#}"))
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["containerPort"].as_i64().unwrap_or_default(),
            )
        })
        .collect()
}

/// Asserts both containers are there with all their ports (what a naive merge would lose).
fn assert_containers_intact(d: &Value) {
    assert_eq!(container_names(d), ["app", "sidecar"], "{d:#}");
    assert_eq!(
        ports(container(d, "app")),
        [("http".to_string(), 80), ("https".to_string(), 443)],
        "{d:#}"
    );
    assert_eq!(
        ports(container(d, "sidecar")),
        [("metrics".to_string(), 9090)],
        "{d:#}"
    );
}

fn api_resources(k: &Kubectl) {
    let out = k.ok(&["api-resources"]);
    let table = rows(&out);
    assert_eq!(
        table.first().map(Vec::as_slice),
        Some(&["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"][..]),
        "api-resources header:\n{out}"
    );
    // Short names may be empty, so match the row from both ends.
    for (name, api_version, namespaced, kind) in [
        ("deployments", "apps/v1", "true", "Deployment"),
        ("namespaces", "v1", "false", "Namespace"),
        ("configmaps", "v1", "true", "ConfigMap"),
    ] {
        let found = table.iter().any(|r| {
            r.len() >= 4
                && r[0] == name
                && r[r.len() - 3] == api_version
                && r[r.len() - 2] == namespaced
                && r[r.len() - 1] == kind
        });
        assert!(
            found,
            "api-resources lacks {name} {api_version} {namespaced} {kind}:\n{out}"
        );
    }
}

fn create_namespace(k: &Kubectl) {
    let out = k.ok(&["create", "namespace", NS]);
    assert_eq!(out.trim(), "namespace/demo created");
    let ns = k.get_json(&["namespace", NS]);
    assert_eq!(ns["metadata"]["name"], NS, "{ns:#}");
    assert_eq!(ns["status"]["phase"], "Active", "{ns:#}");
}

fn client_side_apply(k: &Kubectl, tmp: &Path) {
    let v1 = tmp.join("deploy-v1.yaml");
    std::fs::write(&v1, DEPLOY_V1).unwrap();
    let out = k.ok(&["apply", "-f", v1.to_str().unwrap()]);
    assert_eq!(out.trim(), "deployment.apps/web created");
    let d = deployment(k);
    assert_eq!(replicas(&d), 2);
    assert_eq!(container(&d, "app")["image"], "nginx:1.25");
    assert_containers_intact(&d);
    assert!(
        d["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string(),
        "no last-applied annotation: {d:#}"
    );

    // Changing only the image makes kubectl send a strategic merge patch that names just the
    // changed container field; ports and the other container must survive it.
    let v2 = tmp.join("deploy-v2.yaml");
    std::fs::write(&v2, DEPLOY_V1.replace("nginx:1.25", "nginx:1.26")).unwrap();
    let out = k.ok(&["apply", "-f", v2.to_str().unwrap()]);
    assert_eq!(out.trim(), "deployment.apps/web configured");
    let d = deployment(k);
    assert_eq!(container(&d, "app")["image"], "nginx:1.26", "{d:#}");
    assert_eq!(container(&d, "sidecar")["image"], "busybox:1.36", "{d:#}");
    assert_eq!(
        container(&d, "sidecar")["command"],
        serde_json::json!(["sleep", "infinity"]),
        "{d:#}"
    );
    assert_containers_intact(&d);
    assert_eq!(replicas(&d), 2);

    // Re-applying the same file changes nothing.
    let out = k.ok(&["apply", "-f", v2.to_str().unwrap()]);
    assert_eq!(out.trim(), "deployment.apps/web unchanged");
}

fn server_side_apply_conflict(k: &Kubectl, tmp: &Path) {
    let v3 = tmp.join("deploy-v3.yaml");
    std::fs::write(
        &v3,
        DEPLOY_V1
            .replace("nginx:1.25", "nginx:1.26")
            .replace("replicas: 2", "replicas: 3"),
    )
    .unwrap();
    let file = v3.to_str().unwrap();

    // `.spec.replicas` belongs to the client-side apply manager: without force, a conflict.
    let out = k.fails(&["apply", "--server-side", "-f", file]);
    assert!(
        out.stderr.contains("conflict")
            && out.stderr.contains(".spec.replicas")
            && out.stderr.contains("kubectl-client-side-apply"),
        "server-side apply did not report the .spec.replicas conflict\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(
        replicas(&deployment(k)),
        2,
        "a refused apply changed the object"
    );

    let out = k.ok(&["apply", "--server-side", "--force-conflicts", "-f", file]);
    assert_eq!(out.trim(), "deployment.apps/web serverside-applied");
    let d = deployment(k);
    assert_eq!(replicas(&d), 3, "{d:#}");
    assert_containers_intact(&d);

    // The forced apply took `.spec.replicas` over: the managed fields say so.
    let d = k.get_json(&["deployment", "web", "-n", NS, "--show-managed-fields"]);
    let managers: Vec<&str> = d["metadata"]["managedFields"]
        .as_array()
        .unwrap_or_else(|| panic!("no managedFields: {d:#}"))
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl"), "managers {managers:?}");
    let ssa = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl" && m["operation"] == "Apply")
        .unwrap_or_else(|| panic!("no Apply entry for manager kubectl: {d:#}"));
    assert!(
        ssa["fieldsV1"]["f:spec"]["f:replicas"].is_object(),
        "manager kubectl does not own .spec.replicas: {ssa:#}"
    );
}

fn get_yaml(k: &Kubectl) {
    let text = k.ok(&["get", "deploy", "web", "-n", NS, "-o", "yaml"]);
    let d: Value = serde_norway::from_str(&text)
        .unwrap_or_else(|e| panic!("get -o yaml printed invalid YAML ({e}):\n{text}"));
    assert_eq!(d["apiVersion"], "apps/v1", "{text}");
    assert_eq!(d["kind"], "Deployment", "{text}");
    assert_eq!(d["metadata"]["name"], "web", "{text}");
    assert_eq!(d["metadata"]["namespace"], NS, "{text}");
    assert_eq!(d["metadata"]["labels"]["app"], "web", "{text}");
    for field in ["uid", "resourceVersion", "creationTimestamp"] {
        assert!(
            d["metadata"][field].as_str().is_some_and(|s| !s.is_empty()),
            "metadata.{field} missing:\n{text}"
        );
    }
    assert!(
        d["metadata"]["generation"].as_i64().is_some_and(|g| g >= 3),
        "generation should count the three spec changes:\n{text}"
    );
    assert_eq!(d["spec"]["replicas"], 3, "{text}");
    assert_eq!(d["spec"]["selector"]["matchLabels"]["app"], "web", "{text}");
    assert_eq!(container(&d, "app")["image"], "nginx:1.26", "{text}");
    assert_containers_intact(&d);
}

fn get_all_namespaces(k: &Kubectl) {
    let out = k.ok(&["get", "deploy", "-A"]);
    let table = rows(&out);
    assert_eq!(
        table.first().map(Vec::as_slice),
        Some(
            &[
                "NAMESPACE",
                "NAME",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "AGE"
            ][..]
        ),
        "get deploy -A header:\n{out}"
    );
    assert_eq!(table.len(), 2, "expected exactly one row:\n{out}");
    let row = &table[1];
    // No controller runs here, so nothing is ready or available.
    assert_eq!(row[..5], ["demo", "web", "0/3", "0", "0"], "{out}");
    assert!(is_age(row[5]), "AGE column {:?}:\n{out}", row[5]);
}

/// A Kubernetes-style short duration such as `7s` or `2m5s`.
fn is_age(s: &str) -> bool {
    !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_digit())
        && s.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, 's' | 'm' | 'h' | 'd' | 'y'))
}

fn watch_sees_other_change(k: &Kubectl) {
    let mut watch = Streaming::spawn(k.command(&["get", "deploy", "web", "-n", NS, "-w"]));
    // The first row comes from the list; the watch starts from that list's resourceVersion,
    // so a change made after it has been printed must arrive as an event.
    watch.wait_for_line(Duration::from_secs(60), "with the initial 0/3 row", |l| {
        l.split_whitespace().take(2).eq(["web", "0/3"])
    });
    let out = k.ok(&["scale", "deploy", "web", "-n", NS, "--replicas=4"]);
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    watch.wait_for_line(
        Duration::from_secs(30),
        "showing 0/4 after the scale",
        |l| l.split_whitespace().take(2).eq(["web", "0/4"]),
    );
    let lines = watch.stop();
    assert_eq!(
        rows(&lines[0]).first().map(Vec::as_slice),
        Some(&["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"][..]),
        "watch output:\n{}",
        lines.join("\n")
    );
}

fn scale(k: &Kubectl) {
    let out = k.ok(&["scale", "deploy/web", "-n", NS, "--replicas=5"]);
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    assert_eq!(replicas(&deployment(k)), 5);

    // A precondition on the current size that does not hold is refused.
    let out = k.fails(&[
        "scale",
        "deploy/web",
        "-n",
        NS,
        "--current-replicas=2",
        "--replicas=7",
    ]);
    assert!(
        out.stderr.contains("Expected replicas to be 2, was 5"),
        "--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(replicas(&deployment(k)), 5);
}

fn patches(k: &Kubectl) {
    // JSON patch: a passing test op, then a replace.
    let out = k.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        NS,
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":5},{"op":"replace","path":"/spec/replicas","value":6}]"#,
    ]);
    assert_eq!(out.trim(), "deployment.apps/web patched");
    let d = deployment(k);
    assert_eq!(replicas(&d), 6);
    assert_containers_intact(&d);

    // A failing test op changes nothing.
    let out = k.fails(&[
        "patch",
        "deploy",
        "web",
        "-n",
        NS,
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/replicas","value":1},{"op":"replace","path":"/spec/replicas","value":9}]"#,
    ]);
    assert!(
        out.stderr.contains("/spec/replicas"),
        "--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
    assert_eq!(replicas(&deployment(k)), 6);

    // Merge patch: sets one field and leaves the rest.
    let out = k.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        NS,
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"minReadySeconds":7}}"#,
    ]);
    assert_eq!(out.trim(), "deployment.apps/web patched");
    let d = deployment(k);
    assert_eq!(d["spec"]["minReadySeconds"], 7, "{d:#}");
    assert_eq!(replicas(&d), 6);
    assert_containers_intact(&d);

    // Strategic merge patch: the container list merges by name, so naming one container
    // changes it and keeps the other (a JSON merge patch would replace the whole list).
    let out = k.ok(&[
        "patch",
        "deploy",
        "web",
        "-n",
        NS,
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","image":"busybox:1.37","ports":[{"containerPort":9091,"name":"debug"}]}]}}}}"#,
    ]);
    assert_eq!(out.trim(), "deployment.apps/web patched");
    let d = deployment(k);
    assert_eq!(container_names(&d), ["app", "sidecar"], "{d:#}");
    assert_eq!(container(&d, "sidecar")["image"], "busybox:1.37", "{d:#}");
    assert_eq!(container(&d, "app")["image"], "nginx:1.26", "{d:#}");
    assert_eq!(
        ports(container(&d, "app")),
        [("http".to_string(), 80), ("https".to_string(), 443)],
        "{d:#}"
    );
    // Ports merge by containerPort: the new one joins the existing one.
    let mut sidecar_ports = ports(container(&d, "sidecar"));
    sidecar_ports.sort();
    assert_eq!(
        sidecar_ports,
        [("debug".to_string(), 9091), ("metrics".to_string(), 9090)],
        "{d:#}"
    );
}

fn edit(k: &Kubectl, tmp: &Path) {
    let script = tmp.join("editor.sh");
    write_script(
        &script,
        "#!/bin/sh\nset -e\nsed -i -e 's/image: nginx:1.26/image: nginx:1.27/' -e 's/minReadySeconds: 7/minReadySeconds: 9/' \"$1\"\n",
    );
    // Run through `sh` so a concurrently forked test process holding the script open for
    // writing cannot make the exec fail with ETXTBSY.
    let editor = format!("sh {}", script.display());
    let out = k.ok_with(
        &["edit", "deploy", "web", "-n", NS],
        &[("EDITOR", &editor), ("KUBE_EDITOR", &editor)],
    );
    assert_eq!(out.trim(), "deployment.apps/web edited");
    let d = deployment(k);
    assert_eq!(container(&d, "app")["image"], "nginx:1.27", "{d:#}");
    assert_eq!(d["spec"]["minReadySeconds"], 9, "{d:#}");
    assert_eq!(container(&d, "sidecar")["image"], "busybox:1.37", "{d:#}");
    assert_eq!(replicas(&d), 6);
}

fn label_and_annotate(k: &Kubectl) {
    let out = k.ok(&["label", "deploy", "web", "-n", NS, "tier=frontend"]);
    assert_eq!(out.trim(), "deployment.apps/web labeled");
    let out = k.ok(&["annotate", "deploy", "web", "-n", NS, "team=blue"]);
    assert_annotated(&out);
    let d = deployment(k);
    assert_eq!(d["metadata"]["labels"]["tier"], "frontend", "{d:#}");
    assert_eq!(d["metadata"]["labels"]["app"], "web", "{d:#}");
    assert_eq!(d["metadata"]["annotations"]["team"], "blue", "{d:#}");

    // The new label selects it.
    let out = k.ok(&[
        "get",
        "deploy",
        "-n",
        NS,
        "-l",
        "tier=frontend",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "deployment.apps/web");
    let out = k.ok(&[
        "get",
        "deploy",
        "-n",
        NS,
        "-l",
        "tier=backend",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "");

    // Removing them with the `key-` form.
    let out = k.ok(&["label", "deploy", "web", "-n", NS, "tier-"]);
    assert_eq!(out.trim(), "deployment.apps/web unlabeled");
    let out = k.ok(&["annotate", "deploy", "web", "-n", NS, "team-"]);
    assert_annotated(&out);
    let d = deployment(k);
    assert!(d["metadata"]["labels"].get("tier").is_none(), "{d:#}");
    assert!(d["metadata"]["annotations"].get("team").is_none(), "{d:#}");
}

/// kubectl 1.27 words its success message "annotate"; later versions say "annotated".
fn assert_annotated(out: &str) {
    assert!(
        matches!(
            out.trim(),
            "deployment.apps/web annotated" | "deployment.apps/web annotate"
        ),
        "annotate printed {out:?}"
    );
}

fn delete(k: &Kubectl) {
    let out = k.ok(&[
        "delete",
        "deploy",
        "web",
        "-n",
        NS,
        "--wait=true",
        "--timeout=60s",
    ]);
    assert_eq!(out.trim(), "deployment.apps \"web\" deleted");
    let out = k.fails(&["get", "deploy", "web", "-n", NS]);
    assert!(
        out.stderr
            .contains("Error from server (NotFound): deployments.apps \"web\" not found"),
        "--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
}

fn explain(k: &Kubectl) {
    let out = k.ok(&["explain", "deployment.spec.replicas"]);
    assert!(out.contains("Number of desired pods"), "{out}");
    assert!(out.contains("replicas"), "{out}");
    assert!(out.contains("Deployment"), "{out}");
}
