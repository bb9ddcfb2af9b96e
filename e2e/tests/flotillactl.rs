//! `flotillactl join` / `unjoin` driven as real processes against `flotilla local-up --members
//! 0` with simulated members (`flotilla member-sim`) in their own processes:
//!
//! - join with a bearer-token context and with a client-certificate context, the Secret keys
//!   and Cluster spec each produces, `kubectl get clusters`, and `clusters/NAME/proxy` working
//!   with both credential kinds; unjoin removes Cluster and Secret; re-join works;
//! - bad input (missing, unparsable or context-less kubeconfig, no credentials, unreachable
//!   endpoint, untrusted or broken CA, rejected token, invalid name, name in use, unreachable
//!   host) fails with a clear message and creates nothing; an unjoin held by a finalizer times
//!   out naming it and keeps the Secret;
//! - unjoin waits for the cluster controller to delete the cluster's Works and execution
//!   namespace (needs the cluster controller running in local-up);
//! - promote adopts a Deployment created directly in a member (with a new policy, and with a
//!   given policy whose conflictResolution is Abort): binding and Work Applied, the member's
//!   Deployment and pods keep their uids, the host shows it; a ClusterRole gets a
//!   ClusterPropagationPolicy; bad input changes nothing;
//! - top clusters prints each member's figures as its Cluster status has them.

// The steps are test code: a panic is how they report a failed step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use support::{
    ApiserverProcess, COMMAND_TIMEOUT, Kubectl, Output, deployment_yaml, eventually,
    flotillactl_bin, kubectl_binary, run_bounded, start_local_up, start_member_sim, table,
};

const CLUSTERS: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";

/// Runs `flotillactl ARGS` against the host kubeconfig (by flag, with KUBECONFIG unset).
fn ctl(host_kubeconfig: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig")
        .arg(host_kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(std::process::Stdio::null());
    run_bounded(
        &mut cmd,
        COMMAND_TIMEOUT,
        &format!("flotillactl {}", args.join(" ")),
    )
}

fn ctl_ok(host_kubeconfig: &Path, args: &[&str]) -> String {
    let out = ctl(host_kubeconfig, args);
    assert!(
        out.status.success(),
        "flotillactl {} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        out.status,
        out.stdout,
        out.stderr
    );
    out.stdout
}

/// Runs a join/unjoin that must fail: non-zero exit, `expected` (every part) on stderr,
/// nothing claiming success on stdout.
fn ctl_fails(host_kubeconfig: &Path, args: &[&str], expected: &[&str]) -> String {
    let out = ctl(host_kubeconfig, args);
    assert!(
        !out.status.success(),
        "flotillactl {} succeeded but should have failed\n--- stdout\n{}\n--- stderr\n{}",
        args.join(" "),
        out.stdout,
        out.stderr
    );
    for part in expected {
        assert!(
            out.stderr.contains(part),
            "flotillactl {}: stderr lacks {part:?}\n--- stderr\n{}",
            args.join(" "),
            out.stderr
        );
    }
    assert!(!out.stdout.contains("successfully"), "{}", out.stdout);
    out.stderr
}

fn kubectl(host: &ApiserverProcess, dir: &Path) -> Kubectl {
    Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.join("cache"),
    )
}

/// `kind/name` lines of `kubectl get ARGS -o name`, sorted.
fn names(k: &Kubectl, args: &[&str]) -> Vec<String> {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "name"]);
    let mut v: Vec<String> = k.ok(&full).lines().map(str::to_string).collect();
    v.sort();
    v
}

fn cluster_names(k: &Kubectl) -> Vec<String> {
    names(k, &["clusters"])
}

fn secret_names(k: &Kubectl) -> Vec<String> {
    let out = k.run(&["get", "secrets", "-n", "karmada-cluster", "-o", "name"]);
    if !out.status.success() {
        // No namespace yet: no Secrets.
        assert!(out.stderr.contains("NotFound"), "{}", out.stderr);
        return Vec::new();
    }
    let mut v: Vec<String> = out.stdout.lines().map(str::to_string).collect();
    v.sort();
    v
}

/// Waits until the aggregated API serves clusters (its APIService is checked periodically).
fn wait_clusters_served(k: &Kubectl) {
    eventually(Duration::from_secs(45), "clusters are served", || {
        let out = k.run(&["get", "clusters"]);
        if out.status.success() {
            Ok(())
        } else {
            Err(out.stderr)
        }
    });
}

/// The nodes of a member as seen through `clusters/NAME/proxy`.
fn proxied_node_names(k: &Kubectl, cluster: &str) -> Vec<String> {
    let text = k.ok(&[
        "get",
        "--raw",
        &format!("{CLUSTERS}/{cluster}/proxy/api/v1/nodes"),
    ]);
    let list: Value = serde_json::from_str(&text).unwrap();
    let mut names: Vec<String> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {text}"))
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    names
}

/// Keys of the data of Secret `karmada-cluster/NAME`.
fn secret_keys(k: &Kubectl, name: &str) -> Vec<String> {
    let secret = k.get_json(&["secret", "-n", "karmada-cluster", name]);
    let mut keys: Vec<String> = secret["data"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    keys.sort();
    keys
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn join_with_token_and_client_certificate_proxy_unjoin_and_rejoin() {
    let dir = tempfile::tempdir().unwrap();
    let host = start_local_up(&dir.path().join("host"), &[]);
    let alpha = start_member_sim("alpha", &dir.path().join("alpha"), 2);
    let beta = start_member_sim("beta", &dir.path().join("beta"), 2);
    let k = kubectl(&host, dir.path());
    wait_clusters_served(&k);

    // A dry run checks everything against the host and the member and stores nothing.
    let out = ctl_ok(
        &host.kubeconfig,
        &[
            "join",
            "alpha",
            "--dry-run",
            "--cluster-kubeconfig",
            path_str(&alpha.kubeconfig),
            "--cluster-context",
            "alpha-flotilla",
            "--cluster-region",
            "eu-west",
        ],
    );
    assert_eq!(
        out.trim(),
        "cluster(alpha) can be joined (dry run: nothing was written)"
    );
    let list = k.get_json(&["clusters"]);
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "{list}");
    let secret = k.run(&["get", "secret", "alpha", "-n", "karmada-cluster"]);
    assert!(!secret.status.success(), "a dry run stored the Secret");

    // A bearer-token context, with labels, region, zone and provider.
    let out = ctl_ok(
        &host.kubeconfig,
        &[
            "join",
            "alpha",
            "--cluster-kubeconfig",
            path_str(&alpha.kubeconfig),
            "--cluster-context",
            "alpha-flotilla",
            "--cluster-label",
            "env=test",
            "--cluster-label",
            "example.com/team=blue",
            "--cluster-region",
            "eu-west",
            "--cluster-zone",
            "eu-west-1a",
            "--cluster-provider",
            "sim",
        ],
    );
    assert_eq!(out.trim(), "cluster(alpha) is joined successfully");

    // The client-certificate context (beta's current one), the host found through KUBECONFIG.
    let mut cmd = Command::new(flotillactl_bin());
    cmd.args(["join", "beta", "--cluster-kubeconfig"])
        .arg(&beta.kubeconfig)
        .env("KUBECONFIG", &host.kubeconfig)
        .stdin(std::process::Stdio::null());
    let out = run_bounded(&mut cmd, COMMAND_TIMEOUT, "flotillactl join beta");
    assert!(out.status.success(), "join beta: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "cluster(beta) is joined successfully");

    let table = k.ok(&["get", "clusters"]);
    let first: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(first, ["alpha", "beta"], "{table}");
    assert!(table.lines().next().unwrap().starts_with("NAME"), "{table}");

    let cluster = k.get_json(&["cluster", "alpha"]);
    let spec = &cluster["spec"];
    assert_eq!(spec["syncMode"], "Push", "{cluster}");
    assert_eq!(spec["apiEndpoint"], alpha.url.as_str(), "{cluster}");
    assert_eq!(spec["secretRef"]["namespace"], "karmada-cluster");
    assert_eq!(spec["secretRef"]["name"], "alpha");
    assert_eq!(spec["region"], "eu-west");
    assert_eq!(spec["zone"], "eu-west-1a");
    assert_eq!(spec["provider"], "sim");
    assert_eq!(cluster["metadata"]["labels"]["env"], "test", "{cluster}");
    assert_eq!(cluster["metadata"]["labels"]["example.com/team"], "blue");
    let cluster = k.get_json(&["cluster", "beta"]);
    assert_eq!(cluster["spec"]["apiEndpoint"], beta.url.as_str());
    assert_eq!(cluster["spec"]["syncMode"], "Push");

    // A dry run of a name in use fails like the real join.
    let mut cmd = Command::new(flotillactl_bin());
    cmd.args(["join", "alpha", "--dry-run", "--cluster-kubeconfig"])
        .arg(&alpha.kubeconfig)
        .args(["--cluster-context", "alpha-flotilla"])
        .env("KUBECONFIG", &host.kubeconfig)
        .stdin(std::process::Stdio::null());
    let out = run_bounded(
        &mut cmd,
        COMMAND_TIMEOUT,
        "flotillactl join --dry-run alpha",
    );
    assert!(!out.status.success(), "{}", out.stdout);
    assert!(out.stderr.contains("already joined"), "{}", out.stderr);

    // Karmada's keys for the token; Flotilla's TLS keys for the client certificate.
    assert_eq!(secret_keys(&k, "alpha"), ["caBundle", "token"]);
    assert_eq!(secret_keys(&k, "beta"), ["caBundle", "tls.crt", "tls.key"]);

    // The proxy reaches each member with its kind of credentials.
    assert_eq!(
        proxied_node_names(&k, "alpha"),
        ["alpha-node-0", "alpha-node-1"]
    );
    assert_eq!(
        proxied_node_names(&k, "beta"),
        ["beta-node-0", "beta-node-1"]
    );

    // Unjoin removes the Cluster and its Secret, and nothing of the other member.
    let out = ctl_ok(
        &host.kubeconfig,
        &["unjoin", "alpha", "--wait-timeout", "30s"],
    );
    assert!(
        out.contains("cluster(alpha) is unjoined successfully"),
        "{out}"
    );
    assert_eq!(cluster_names(&k), ["cluster.cluster.karmada.io/beta"]);
    assert_eq!(secret_names(&k), ["secret/beta"]);
    let gone = k.fails(&["get", "cluster", "alpha"]);
    assert!(gone.stderr.contains("NotFound"), "{}", gone.stderr);
    assert_eq!(
        proxied_node_names(&k, "beta"),
        ["beta-node-0", "beta-node-1"]
    );

    // Joining again under the same name works, this time with the client certificate.
    let out = ctl_ok(
        &host.kubeconfig,
        &[
            "join",
            "alpha",
            "--cluster-kubeconfig",
            path_str(&alpha.kubeconfig),
            "--cluster-context",
            "alpha",
        ],
    );
    assert_eq!(out.trim(), "cluster(alpha) is joined successfully");
    assert_eq!(secret_keys(&k, "alpha"), ["caBundle", "tls.crt", "tls.key"]);
    let cluster = k.get_json(&["cluster", "alpha"]);
    assert!(
        cluster["metadata"]["labels"].get("env").is_none(),
        "{cluster}"
    );
    // The proxy re-reads the credentials within its cache time.
    eventually(
        Duration::from_secs(20),
        "the proxy uses the re-joined credentials",
        || {
            let out = k.run(&[
                "get",
                "--raw",
                &format!("{CLUSTERS}/alpha/proxy/api/v1/nodes"),
            ]);
            if out.status.success() && out.stdout.contains("alpha-node-1") {
                Ok(())
            } else {
                Err(out.stderr)
            }
        },
    );
}

/// A copy of the member kubeconfig at `src` with `edit` applied to its YAML, written to
/// `dest`.
fn edited_kubeconfig(src: &Path, dest: &Path, edit: impl FnOnce(&mut serde_norway::Value)) {
    let text = std::fs::read_to_string(src).unwrap();
    let mut doc: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    edit(&mut doc);
    std::fs::write(dest, serde_norway::to_string(&doc).unwrap()).unwrap();
}

/// The named entry of a kubeconfig list (`clusters`, `users`, `contexts`): its inner map.
fn entry<'a>(
    doc: &'a mut serde_norway::Value,
    list: &str,
    name: &str,
) -> &'a mut serde_norway::Value {
    let inner = list.trim_end_matches('s');
    doc[list]
        .as_sequence_mut()
        .unwrap()
        .iter_mut()
        .find(|e| e["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no {list} entry {name}"))
        .get_mut(inner)
        .unwrap()
}

/// The cluster and user names context `ctx` refers to.
fn context_refs(doc: &mut serde_norway::Value, ctx: &str) -> (String, String) {
    let c = entry(doc, "contexts", ctx);
    (
        c["cluster"].as_str().unwrap().to_string(),
        c["user"].as_str().unwrap().to_string(),
    )
}

fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn b64(text: &str) -> String {
    // Enough base64 for a test: standard alphabet with padding.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, b)| acc | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn bad_join_input_fails_clearly_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let host = start_local_up(&host_dir, &[]);
    let gamma = start_member_sim("gamma", &dir.path().join("gamma"), 2);
    let k = kubectl(&host, dir.path());
    wait_clusters_served(&k);
    let hk = host.kubeconfig.clone();
    let gk = path_str(&gamma.kubeconfig).to_string();

    // Help for every command, on stdout with exit 0.
    for args in [
        vec!["--help"],
        vec!["join", "--help"],
        vec!["unjoin", "--help"],
    ] {
        let out = ctl_ok(&hk, &args);
        assert!(out.contains("Usage"), "{out}");
    }
    assert!(ctl_ok(&hk, &["join", "--help"]).contains("--cluster-kubeconfig"));
    assert!(ctl_ok(&hk, &["unjoin", "--help"]).contains("--wait-timeout"));

    ctl_ok(
        &hk,
        &[
            "join",
            "gamma",
            "--cluster-kubeconfig",
            &gk,
            "--cluster-context",
            "gamma-flotilla",
        ],
    );
    let clusters_before = cluster_names(&k);
    let secrets_before = secret_names(&k);
    assert_eq!(clusters_before, ["cluster.cluster.karmada.io/gamma"]);
    assert_eq!(secrets_before, ["secret/gamma"]);
    let nothing_created = |case: &str| {
        assert_eq!(
            cluster_names(&k),
            clusters_before,
            "{case} created a Cluster"
        );
        assert_eq!(secret_names(&k), secrets_before, "{case} created a Secret");
    };

    // The member's kubeconfig, broken in one way each.
    let variant = |file: &str, edit: &dyn Fn(&mut serde_norway::Value)| -> PathBuf {
        let dest = dir.path().join(file);
        edited_kubeconfig(&gamma.kubeconfig, &dest, |doc| edit(doc));
        dest
    };
    let host_ca = std::fs::read_to_string(host_dir.join("pki").join("ca.crt")).unwrap();
    let unreachable_port = closed_port();
    let no_creds = variant("no-creds", &|doc| {
        let (_, user) = context_refs(doc, "gamma-flotilla");
        *entry(doc, "users", &user) = serde_norway::from_str("{}").unwrap();
    });
    let unreachable = variant("unreachable", &|doc| {
        let (cluster, _) = context_refs(doc, "gamma-flotilla");
        entry(doc, "clusters", &cluster)["server"] =
            format!("https://127.0.0.1:{unreachable_port}").into();
    });
    let wrong_ca = variant("wrong-ca", &|doc| {
        let (cluster, _) = context_refs(doc, "gamma-flotilla");
        entry(doc, "clusters", &cluster)["certificate-authority-data"] = b64(&host_ca).into();
    });
    let broken_ca = variant("broken-ca", &|doc| {
        let (cluster, _) = context_refs(doc, "gamma-flotilla");
        entry(doc, "clusters", &cluster)["certificate-authority-data"] =
            b64("this is not a certificate").into();
    });
    let wrong_token = variant("wrong-token", &|doc| {
        let (_, user) = context_refs(doc, "gamma-flotilla");
        entry(doc, "users", &user)["token"] = "not-the-token".into();
    });
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, "clusters: [this is: not: a kubeconfig\n").unwrap();
    let missing = dir.path().join("does-not-exist");

    let p = |path: &PathBuf| path_str(path).to_string();
    let join = |name: &str, file: &str, ctx: &str| -> Vec<String> {
        [
            "join",
            name,
            "--cluster-kubeconfig",
            file,
            "--cluster-context",
            ctx,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let cases: Vec<(&str, Vec<String>, Vec<String>)> = vec![
        (
            "a missing kubeconfig",
            join("bad", &p(&missing), "gamma-flotilla"),
            vec![format!("{} does not exist", missing.display())],
        ),
        (
            "an unparsable kubeconfig",
            join("bad", &p(&garbage), "x"),
            vec![format!("parsing the kubeconfig {}", garbage.display())],
        ),
        (
            "a context that is not there",
            join("bad", &gk, "nope"),
            vec![format!(
                "context nope not found in {gk}; available: gamma, gamma-flotilla"
            )],
        ),
        (
            "a context without credentials",
            join("bad", &p(&no_creds), "gamma-flotilla"),
            vec!["context gamma-flotilla".into(), "has no credentials".into()],
        ),
        (
            "an unreachable endpoint",
            join("bad", &p(&unreachable), "gamma-flotilla"),
            vec![format!(
                "cannot reach cluster bad at https://127.0.0.1:{unreachable_port}: "
            )],
        ),
        (
            "a CA that did not sign the member's certificate",
            join("bad", &p(&wrong_ca), "gamma-flotilla"),
            vec![
                format!("cannot reach cluster bad at {}", gamma.url),
                "certificate".into(),
            ],
        ),
        (
            "a CA that is not a certificate",
            join("bad", &p(&broken_ca), "gamma-flotilla"),
            vec!["the credentials for cluster bad are unusable".into()],
        ),
        (
            "a token the member rejects",
            join("bad", &p(&wrong_token), "gamma-flotilla"),
            vec![format!(
                "cluster bad at {} rejected the credentials",
                gamma.url
            )],
        ),
        (
            "an invalid name",
            join("Bad_Name", &gk, "gamma-flotilla"),
            vec!["invalid cluster name \"Bad_Name\"".into()],
        ),
        (
            "a name that is too long",
            join(&"x".repeat(49), &gk, "gamma-flotilla"),
            vec!["invalid cluster name".into(), "at most 48".into()],
        ),
        (
            "a name in use",
            join("gamma", &gk, "gamma"),
            vec![format!(
                "cluster gamma is already joined (apiEndpoint {}); unjoin it first",
                gamma.url
            )],
        ),
        (
            "a malformed label",
            [
                join("bad", &gk, "gamma-flotilla"),
                vec!["--cluster-label".into(), "noequals".into()],
            ]
            .concat(),
            vec!["is not KEY=VALUE".into()],
        ),
    ];
    for (case, args, expected) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let expected: Vec<&str> = expected.iter().map(String::as_str).collect();
        let stderr = ctl_fails(&hk, &args, &expected);
        assert!(stderr.starts_with("error"), "{case}: {stderr}");
        nothing_created(case);
    }

    // An unreachable host: the member is fine, the host kubeconfig points nowhere.
    let dead_host = dir.path().join("dead-host");
    let host_port = closed_port();
    let text = std::fs::read_to_string(&hk).unwrap();
    let mut doc: serde_norway::Value = serde_norway::from_str(&text).unwrap();
    for c in doc["clusters"].as_sequence_mut().unwrap() {
        c["cluster"]["server"] = format!("https://127.0.0.1:{host_port}").into();
    }
    std::fs::write(&dead_host, serde_norway::to_string(&doc).unwrap()).unwrap();
    ctl_fails(
        &dead_host,
        &[
            "join",
            "bad",
            "--cluster-kubeconfig",
            &gk,
            "--cluster-context",
            "gamma-flotilla",
        ],
        &[&format!(
            "cannot reach the host API server at https://127.0.0.1:{host_port}"
        )],
    );
    nothing_created("an unreachable host");

    // Unjoining what is not joined.
    ctl_fails(&hk, &["unjoin", "nope"], &["cluster nope is not joined"]);

    // An unjoin held by a finalizer nobody removes times out naming it, keeping the Secret.
    k.ok(&[
        "patch",
        "cluster",
        "gamma",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ]);
    ctl_fails(
        &hk,
        &["unjoin", "gamma", "--wait-timeout", "2s"],
        &[
            "cluster gamma is still there after 2s",
            "example.com/hold",
            "karmada-cluster/gamma is kept",
        ],
    );
    assert_eq!(secret_names(&k), ["secret/gamma"]);
    let cluster = k.get_json(&["cluster", "gamma"]);
    assert!(
        cluster["metadata"]["deletionTimestamp"].is_string(),
        "{cluster}"
    );
    // Releasing it lets a second unjoin finish.
    let finalizers: Vec<Value> = cluster["metadata"]["finalizers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| *f != "example.com/hold")
        .cloned()
        .collect();
    k.ok(&[
        "patch",
        "cluster",
        "gamma",
        "--type=merge",
        "-p",
        &serde_json::json!({"metadata": {"finalizers": finalizers}}).to_string(),
    ]);
    ctl_ok(&hk, &["unjoin", "gamma", "--wait-timeout", "60s"]);
    assert!(cluster_names(&k).is_empty());
    assert!(secret_names(&k).is_empty());
}

/// Needs the cluster controller (its `karmada.io/cluster-controller` finalizer deletes the
/// cluster's Works and `karmada-es-<name>` before the Cluster goes) running in local-up.
#[test]
fn unjoin_waits_for_the_clusters_works_to_be_removed() {
    let dir = tempfile::tempdir().unwrap();
    let host = start_local_up(&dir.path().join("host"), &[]);
    let delta = start_member_sim("delta", &dir.path().join("delta"), 2);
    let k = kubectl(&host, dir.path());
    wait_clusters_served(&k);
    let hk = host.kubeconfig.clone();
    let dk = path_str(&delta.kubeconfig).to_string();
    ctl_ok(&hk, &["join", "delta", "--cluster-kubeconfig", &dk]);

    // The execution namespace (the controller may already have made it) and a Work in it.
    let work = r#"apiVersion: v1
kind: Namespace
metadata:
  name: karmada-es-delta
---
apiVersion: work.karmada.io/v1alpha1
kind: Work
metadata:
  name: leftover
  namespace: karmada-es-delta
spec:
  workload:
    manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata:
        name: from-flotilla
        namespace: default
      data:
        a: b
"#;
    let file = dir.path().join("work.yaml");
    std::fs::write(&file, work).unwrap();
    k.ok(&["apply", "-f", path_str(&file)]);
    assert_eq!(
        names(&k, &["works", "-n", "karmada-es-delta"]),
        ["work.work.karmada.io/leftover"]
    );

    let out = ctl(&hk, &["unjoin", "delta", "--wait-timeout", "60s"]);
    assert!(out.status.success(), "unjoin: {}", out.stderr);
    assert!(
        !out.stderr.contains("warning"),
        "the Works were not cleaned up: {}",
        out.stderr
    );
    let gone = k.fails(&["get", "cluster", "delta"]);
    assert!(gone.stderr.contains("NotFound"), "{}", gone.stderr);
    assert!(secret_names(&k).is_empty());
    // unjoin returned only after the Works were gone.
    let works = k.run(&["get", "works", "-n", "karmada-es-delta", "-o", "name"]);
    assert!(
        works.stdout.trim().is_empty(),
        "Works left: {}",
        works.stdout
    );
    eventually(
        Duration::from_secs(30),
        "the execution namespace is removed",
        || {
            let out = k.run(&["get", "namespace", "karmada-es-delta"]);
            if out.stderr.contains("NotFound") {
                Ok(())
            } else {
                Err(format!("{}{}", out.stdout, out.stderr))
            }
        },
    );

    // And the cluster joins again.
    let out = ctl_ok(&hk, &["join", "delta", "--cluster-kubeconfig", &dk]);
    assert_eq!(out.trim(), "cluster(delta) is joined successfully");
    assert_eq!(
        proxied_node_names(&k, "delta"),
        ["delta-node-0", "delta-node-1"]
    );
}

/// kubectl on member `name` of a local-up in `data`, with its own discovery cache.
fn member_kubectl(data: &Path, name: &str, dir: &Path) -> Kubectl {
    Kubectl::new(
        kubectl_binary("kubectl"),
        &data.join("members").join(format!("{name}.kubeconfig")),
        &dir.join(format!("cache-{name}")),
    )
}

/// Condition `type_` of `obj`'s status (null when absent).
fn condition(obj: &Value, type_: &str) -> Value {
    obj["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == type_)
        .cloned()
        .unwrap_or(Value::Null)
}

/// `flotilla local-up` with member1 and member2 in `dir`, once both are Ready: the process,
/// kubectl on the host, and the data directory (where the members' kubeconfigs are).
fn local_up_with_two_members(dir: &Path) -> (ApiserverProcess, Kubectl, PathBuf) {
    let data = dir.join("host");
    let host = start_local_up(&data, &["--members", "2"]);
    let k = kubectl(&host, dir);
    wait_clusters_served(&k);
    wait_members_ready(&k, &["member1", "member2"]);
    (host, k, data)
}

/// Waits until every local-up member reports Ready.
fn wait_members_ready(k: &Kubectl, members: &[&str]) {
    for m in members {
        eventually(Duration::from_secs(60), &format!("{m} Ready"), || {
            let c = k.try_get(&["cluster", m])?.ok_or("no Cluster")?;
            if condition(&c, "Ready")["status"] == "True" {
                Ok(())
            } else {
                Err(c["status"].to_string())
            }
        });
    }
}

/// Creates Deployment `name` directly in a member and waits for its `replicas` pods to run;
/// returns the Deployment's uid and its pods' (name, uid), sorted.
fn member_deployment(
    m: &Kubectl,
    dir: &Path,
    name: &str,
    replicas: i64,
) -> (String, Vec<(String, String)>) {
    let out = m.apply_file(
        dir,
        name,
        &deployment_yaml("default", name, replicas, "250m", "nginx:1"),
    );
    assert!(out.status.success(), "{}", out.stderr);
    let pods = eventually(
        Duration::from_secs(60),
        &format!("{name}'s pods run"),
        || {
            let pods = member_pods(m, name);
            if pods.len() == replicas as usize {
                Ok(pods)
            } else {
                Err(format!("{pods:?}"))
            }
        },
    );
    let uid = m.get_json(&["deployment", name])["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_string();
    (uid, pods)
}

/// The running pods of Deployment `app` in a member: (name, uid), sorted.
fn member_pods(m: &Kubectl, app: &str) -> Vec<(String, String)> {
    let list = m.get_json(&["pods", "-l", &format!("app={app}")]);
    let mut pods: Vec<(String, String)> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["metadata"]["uid"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    pods.sort();
    pods
}

/// Waits until the binding of Deployment `name` has an Applied Work in `cluster`'s execution
/// namespace, and returns that Work.
fn wait_applied(k: &Kubectl, name: &str, cluster: &str) -> Value {
    eventually(
        Duration::from_secs(60),
        &format!("{name}'s Work in {cluster} is Applied"),
        || {
            let rb = k
                .try_get(&["resourcebinding", &format!("{name}-deployment")])?
                .ok_or("no ResourceBinding")?;
            let works = k.get_json(&["works", "-n", &format!("karmada-es-{cluster}")]);
            let work = works["items"]
                .as_array()
                .unwrap()
                .iter()
                .find(|w| w["spec"]["workload"]["manifests"][0]["metadata"]["name"] == name)
                .cloned()
                .ok_or_else(|| format!("no Work for {name}; binding {}", rb["status"]))?;
            let applied = condition(&work, "Applied");
            if applied["status"] == "True" {
                Ok(work)
            } else {
                Err(format!("Applied: {applied}"))
            }
        },
    )
}

#[test]
fn promote_adopts_a_member_deployment_without_recreating_it() {
    let dir = tempfile::tempdir().unwrap();
    let (host, k, data) = local_up_with_two_members(dir.path());
    let hk = host.kubeconfig.clone();
    let m1 = member_kubectl(&data, "member1", dir.path());
    let m2 = member_kubectl(&data, "member2", dir.path());
    let (web_uid, web_pods) = member_deployment(&m1, dir.path(), "web", 3);

    // Bad input: a clear message, a non-zero exit, nothing written on the host.
    let policies = |k: &Kubectl| names(k, &["propagationpolicies", "-A"]);
    let bindings = |k: &Kubectl| names(k, &["resourcebindings", "-A"]);
    let cases: Vec<(&[&str], String)> = vec![
        (
            &["promote", "deployment", "web", "-C", "nope"],
            "cluster nope is not joined".into(),
        ),
        (
            &["promote", "deployment", "missing", "-C", "member1"],
            "deployment.apps/missing not found in namespace default of cluster member1".into(),
        ),
        (
            &["promote", "deployment", "web", "-C", "member2"],
            "deployment.apps/web not found in namespace default of cluster member2".into(),
        ),
        (
            &["promote", "nosuchtype", "web", "-C", "member1"],
            "the server doesn't have a resource type \"nosuchtype\"".into(),
        ),
        (
            &["promote", "deployment", "-C", "member1"],
            "name the object: TYPE NAME or TYPE/NAME".into(),
        ),
        (
            &["promote", "deployment", "Web_1", "-C", "member1"],
            "invalid name \"Web_1\"".into(),
        ),
        (
            &["promote", "deploy/web", "-C", "member1", "--policy", "nope"],
            "propagationpolicy.policy.karmada.io/nope not found".into(),
        ),
    ];
    for (args, expected) in &cases {
        ctl_fails(&hk, args, &[expected.as_str()]);
    }
    let usage = ctl(&hk, &["promote", "deployment", "web"]);
    assert_eq!(usage.status.code(), Some(2), "{}", usage.stderr);
    assert!(usage.stderr.contains("--cluster"), "{}", usage.stderr);
    // A dry run validates the writes and stores nothing either.
    let out = ctl_ok(
        &hk,
        &["promote", "deployment", "web", "-C", "member1", "--dry-run"],
    );
    assert_eq!(
        out,
        "propagationpolicy.policy.karmada.io/web-deployment created (server dry run)\n\
         deployment.apps/web promoted from cluster member1 (server dry run)\n"
    );
    assert!(policies(&k).is_empty(), "{:?}", policies(&k));
    assert!(bindings(&k).is_empty(), "{:?}", bindings(&k));

    // Promote: a policy placing it on member1, the template, then Flotilla's Work takes the
    // member's Deployment over in place.
    let out = ctl_ok(&hk, &["promote", "deployment", "web", "-C", "member1"]);
    assert_eq!(
        out,
        "propagationpolicy.policy.karmada.io/web-deployment created\n\
         deployment.apps/web promoted from cluster member1\n"
    );
    let pp = k.get_json(&["propagationpolicy", "web-deployment"]);
    assert_eq!(
        pp["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        serde_json::json!(["member1"])
    );
    assert_eq!(pp["spec"]["conflictResolution"], "Overwrite");
    let work = wait_applied(&k, "web", "member1");
    let rb = k.get_json(&["resourcebinding", "web-deployment"]);
    assert_eq!(
        rb["spec"]["clusters"][0]["name"], "member1",
        "{}",
        rb["spec"]
    );
    assert_eq!(rb["spec"]["clusters"][0]["replicas"], 3, "{}", rb["spec"]);
    let adopted = m1.get_json(&["deployment", "web"]);
    assert_eq!(
        adopted["metadata"]["uid"],
        web_uid.as_str(),
        "the Deployment was recreated"
    );
    assert_eq!(
        adopted["metadata"]["annotations"]["work.karmada.io/name"],
        work["metadata"]["name"]
    );
    assert_eq!(adopted["metadata"]["labels"]["karmada.io/managed"], "true");
    assert_eq!(member_pods(&m1, "web"), web_pods, "the pods were replaced");
    // The host shows it (merged read: the template's row with the member's figures).
    let (_, rows) = table(&k.ok(&["get", "deploy", "web"]));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["READY"], "3/3", "{rows:?}");
    assert_eq!(rows[0]["CLUSTERS"], "member1(3)", "{rows:?}");
    // Nothing else went to member2.
    assert!(m2.try_get(&["deployment", "web"]).unwrap().is_none());

    // Promoting it again: it is Flotilla's now.
    ctl_fails(
        &hk,
        &["promote", "deploy/web", "-C", "member1"],
        &[
            "deployment.apps/web in cluster member1 is already managed by Flotilla (Work karmada-es-member1/",
        ],
    );

    // With a given policy whose conflictResolution is the default Abort: the template's own
    // annotation still lets the Work take the member's object over.
    let (api_uid, api_pods) = member_deployment(&m2, dir.path(), "api", 2);
    let policy = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: api-policy
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: api
  placement:
    clusterAffinity:
      clusterNames: [member2]
"#;
    let out = k.apply_file(dir.path(), "api-policy", policy);
    assert!(out.status.success(), "{}", out.stderr);
    let out = ctl_ok(
        &hk,
        &[
            "promote",
            "deploy/api",
            "-C",
            "member2",
            "--policy",
            "api-policy",
        ],
    );
    assert_eq!(out, "deployment.apps/api promoted from cluster member2\n");
    wait_applied(&k, "api", "member2");
    assert_eq!(
        m2.get_json(&["deployment", "api"])["metadata"]["uid"],
        api_uid.as_str()
    );
    assert_eq!(member_pods(&m2, "api"), api_pods);
    // A policy that does not select the object is refused.
    let other = [
        "promote",
        "deploy/other",
        "-C",
        "member2",
        "--policy",
        "api-policy",
    ];
    ctl_fails(
        &hk,
        &other,
        &["deployment.apps/other not found in namespace default of cluster member2"],
    );
    member_deployment(&m2, dir.path(), "other", 1);
    ctl_fails(
        &hk,
        &other,
        &["propagationpolicy.policy.karmada.io/api-policy does not select deployment.apps/other"],
    );

    // A cluster-scoped object gets a ClusterPropagationPolicy.
    m1.ok(&[
        "create",
        "clusterrole",
        "reader",
        "--verb=get",
        "--resource=pods",
    ]);
    let reader_uid = m1.get_json(&["clusterrole", "reader"])["metadata"]["uid"].clone();
    let out = ctl_ok(&hk, &["promote", "clusterrole", "reader", "-C", "member1"]);
    assert_eq!(
        out,
        "clusterpropagationpolicy.policy.karmada.io/reader-clusterrole created\n\
         clusterrole.rbac.authorization.k8s.io/reader promoted from cluster member1\n"
    );
    eventually(Duration::from_secs(60), "reader's Work is Applied", || {
        let works = k.get_json(&["works", "-n", "karmada-es-member1"]);
        let applied = works["items"].as_array().unwrap().iter().any(|w| {
            w["spec"]["workload"]["manifests"][0]["kind"] == "ClusterRole"
                && condition(w, "Applied")["status"] == "True"
        });
        if applied {
            Ok(())
        } else {
            Err(works.to_string())
        }
    });
    assert_eq!(
        m1.get_json(&["clusterrole", "reader"])["metadata"]["uid"],
        reader_uid
    );

    // A namespace the host does not have: named, nothing written.
    m1.ok(&["create", "namespace", "team"]);
    m1.ok(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "team",
        "--from-literal=a=b",
    ]);
    ctl_fails(
        &hk,
        &["promote", "cm/settings", "-n", "team", "-C", "member1"],
        &["namespace team does not exist on the host: create it there first"],
    );

    // A template of that name on the host already: promote is for member-only objects.
    // (`create`: apply would read the merged view, which has the member's copy.)
    let tpl = dir.path().join("tpl.yaml");
    std::fs::write(
        &tpl,
        deployment_yaml("default", "other", 1, "100m", "nginx:1"),
    )
    .unwrap();
    k.ok(&["create", "-f", path_str(&tpl)]);
    ctl_fails(
        &hk,
        &["promote", "deploy/other", "-C", "member2"],
        &["deployment.apps/other already exists on the host"],
    );
    assert_eq!(
        policies(&k),
        [
            "propagationpolicy.policy.karmada.io/api-policy",
            "propagationpolicy.policy.karmada.io/web-deployment"
        ]
    );
    assert_eq!(
        names(&k, &["resourcebindings", "-A"]),
        [
            "resourcebinding.work.karmada.io/api-deployment",
            "resourcebinding.work.karmada.io/web-deployment"
        ]
    );
}

/// A quantity of a resourceSummary in the unit `top clusters` prints (millicores for cpu,
/// bytes for memory, a count for pods); the suffixes the cluster status controller writes.
fn quantity(text: &str, cpu: bool) -> i64 {
    let units = [
        ("Ki", 1i64 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
    ];
    for (suffix, unit) in units {
        if let Some(n) = text.strip_suffix(suffix) {
            return n.parse::<i64>().unwrap() * unit;
        }
    }
    if let Some(m) = text.strip_suffix('m') {
        assert!(cpu, "{text}");
        return m.parse().unwrap();
    }
    text.parse::<i64>().unwrap() * if cpu { 1000 } else { 1 }
}

/// The `top clusters` cells of a Cluster, computed from its status independently.
fn expected_top_row(cluster: &Value) -> Vec<String> {
    let s = &cluster["status"]["resourceSummary"];
    let get = |list: &str, r: &str| {
        s[list][r]
            .as_str()
            .map(|q| quantity(q, r == "cpu"))
            .unwrap_or(0)
    };
    let mut row = vec![cluster["metadata"]["name"].as_str().unwrap().to_string()];
    for (r, fmt) in [
        ("cpu", (|v: i64| format!("{v}m")) as fn(i64) -> String),
        ("memory", |v: i64| format!("{}Mi", v / (1 << 20))),
        ("pods", |v: i64| v.to_string()),
    ] {
        let total = get("allocatable", r);
        // Pods waiting for a node use nothing yet.
        let used = get("allocated", r);
        row.push(fmt(used));
        row.push(format!("{}%", used * 100 / total));
        row.push(fmt((total - used).max(0)));
    }
    row
}

#[test]
fn top_clusters_shows_each_members_capacity_from_cluster_status() {
    let dir = tempfile::tempdir().unwrap();
    let (host, k, data) = local_up_with_two_members(dir.path());
    let hk = host.kubeconfig.clone();
    // Requests on member1 only, so the two rows differ.
    let m1 = member_kubectl(&data, "member1", dir.path());
    member_deployment(&m1, dir.path(), "load", 4);

    let columns = [
        "NAME",
        "CPU(cores)",
        "CPU(%)",
        "CPU-FREE",
        "MEMORY(bytes)",
        "MEMORY(%)",
        "MEMORY-FREE",
        "PODS",
        "PODS(%)",
        "PODS-FREE",
    ];
    // The status controller refreshes each member's summary every few seconds; the table
    // agrees with the Clusters once member1's summary counts the 4 pods (1000m).
    eventually(
        Duration::from_secs(60),
        "top clusters matches Cluster status",
        || {
            let text = ctl_ok(&hk, &["top", "clusters"]);
            let (header, rows) = table(&text);
            assert_eq!(header, columns, "{text}");
            let clusters = k.get_json(&["clusters"]);
            let expected: Vec<Vec<String>> = clusters["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(expected_top_row)
                .collect();
            let got: Vec<Vec<String>> = rows
                .iter()
                .map(|r| columns.iter().map(|c| r[*c].clone()).collect())
                .collect();
            if got == expected && got[0][1] == "1000m" {
                Ok(())
            } else {
                Err(format!("top:\n{text}\nexpected from status: {expected:?}"))
            }
        },
    );
    // One cluster by name, without headers.
    let text = ctl_ok(&hk, &["top", "clusters", "member2", "--no-headers"]);
    assert_eq!(text.lines().count(), 1, "{text}");
    assert!(text.starts_with("member2 "), "{text}");
    let selected = ctl_ok(&hk, &["top", "cluster", "-l", "no-such-label=x"]);
    assert!(selected.is_empty(), "{selected}");
    // Bad input.
    ctl_fails(
        &hk,
        &["top", "clusters", "nope"],
        &["cluster nope not found"],
    );
    ctl_fails(
        &hk,
        &["top", "clusters", "-l", "a b c"],
        &["invalid selector"],
    );
    ctl_fails(&hk, &["top", "clusters", "Bad_Name"], &["Bad_Name"]);
    let usage = ctl(&hk, &["top"]);
    assert_eq!(usage.status.code(), Some(2), "{}", usage.stderr);
}
