//! Credentials never reach the logs. `flotilla local-up` (one member) and a separate
//! `flotilla member-sim` run with `--log debug`; a short journey goes through every path that
//! handles a credential: a Secret with a unique value created and propagated to the members
//! with a Deployment, a static bearer token and a ServiceAccount token (TokenRequest, and the
//! legacy token Secret the tokens controller fills) used against the host, `flotillactl join`
//! of a member by bearer token, the cluster proxy and merged reads (which use the members'
//! credentials), and `kubectl get clusters`. Then every log of the run (the processes' stderr,
//! flotillactl's output) is searched for: the Secret's value, plain and base64; every bearer
//! token; `PRIVATE KEY` and `BEGIN CERTIFICATE`; and pieces of every client certificate and key
//! the run issued (their base64, as in the PEM files and as in the kubeconfigs).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use support::{
    COMMAND_TIMEOUT, Kubectl, eventually, flotillactl_bin, kubectl_binary, run_bounded,
    start_local_up, start_member_sim_with, write_token_kubeconfig,
};

/// A value no one else would print: the test's own random bytes.
fn unique(prefix: &str) -> String {
    let mut bytes = [0u8; 12];
    getrandom(&mut bytes);
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{hex}")
}

/// Random bytes from the kernel, without another dependency.
fn getrandom(buf: &mut [u8]) {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .unwrap()
        .read_exact(buf)
        .unwrap();
}

/// The base64 body of every PEM block in `text`, one string per block (lines joined).
fn pem_bodies(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("-----BEGIN") {
            body = Some(String::new());
        } else if line.starts_with("-----END") {
            out.extend(body.take());
        } else if let Some(b) = body.as_mut() {
            b.push_str(line.trim());
        }
    }
    out
}

/// Pieces of a long base64 string to search for: 40 characters from every 64 (the width of a
/// PEM line), so a copy found with any line wrapping still contains some of them whole.
fn pieces(b64: &str) -> Vec<String> {
    let chars: Vec<char> = b64.chars().collect();
    chars
        .chunks(64)
        .filter(|c| c.len() >= 40)
        .map(|c| c[..40].iter().collect())
        .collect()
}

/// What must never be logged, as (description, text).
struct Needles(Vec<(String, String)>);

impl Needles {
    fn add(&mut self, what: impl Into<String>, text: impl Into<String>) {
        let text = text.into();
        assert!(text.len() >= 8, "too short to search for: {text:?}");
        self.0.push((what.into(), text));
    }

    /// Every certificate and key under `dir` (recursively), by pieces of its PEM body.
    fn add_pem_files(&mut self, dir: &Path) {
        for path in files_under(dir) {
            let name = path.display().to_string();
            if !(name.ends_with(".crt") || name.ends_with(".key") || name.ends_with(".pem")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            for body in pem_bodies(&text) {
                for piece in pieces(&body) {
                    self.add(format!("a piece of {name}"), piece);
                }
            }
        }
    }

    /// The credentials in every kubeconfig under `dir`: tokens, and pieces of the
    /// certificate and key data (base64 of the PEM) and of the PEM inside.
    fn add_kubeconfigs(&mut self, dir: &Path) {
        for path in files_under(dir) {
            let name = path.display().to_string();
            if !name.ends_with("kubeconfig") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let doc: serde_norway::Value = serde_norway::from_str(&text).unwrap();
            let Some(users) = doc["users"].as_sequence() else {
                continue;
            };
            for user in users {
                let user = &user["user"];
                if let Some(token) = user["token"].as_str() {
                    self.add(format!("the token of {name}"), token);
                }
                for key in ["client-certificate-data", "client-key-data"] {
                    if let Some(data) = user[key].as_str() {
                        for piece in pieces(data) {
                            self.add(format!("a piece of {key} in {name}"), piece);
                        }
                        let pem = String::from_utf8(STANDARD.decode(data).unwrap()).unwrap();
                        for body in pem_bodies(&pem) {
                            for piece in pieces(&body) {
                                self.add(format!("a piece of {key} (PEM) in {name}"), piece);
                            }
                        }
                    }
                }
            }
        }
    }
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn flotillactl(host_kubeconfig: &Path, args: &[&str]) -> String {
    let mut cmd = Command::new(flotillactl_bin());
    cmd.arg("--kubeconfig")
        .arg(host_kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .env("FLOTILLA_LOG", log_level())
        .stdin(std::process::Stdio::null());
    let out = run_bounded(&mut cmd, COMMAND_TIMEOUT, "flotillactl");
    assert!(
        out.status.success(),
        "flotillactl {args:?}: {}\n{}",
        out.stdout,
        out.stderr
    );
    format!("{}\n{}", out.stdout, out.stderr)
}

/// The log filter of the run: everything at debug (requests, watches, every controller's
/// work), or `$FLOTILLA_TEST_LOG` (e.g. `trace`) for a closer look.
fn log_level() -> String {
    std::env::var("FLOTILLA_TEST_LOG").unwrap_or_else(|_| "debug".to_string())
}

const JOURNEY: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: leak}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        env:
        - name: PASSWORD
          valueFrom: {secretKeyRef: {name: db, key: password}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: leak}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  - {apiVersion: v1, kind: Secret, name: db}
  placement:
    clusterAffinity: {clusterNames: [member1, edge]}
"#;

#[test]
fn no_credential_reaches_the_logs_of_a_debug_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let static_token = unique("static-token");
    let token_file = root.join("tokens.csv");
    std::fs::write(
        &token_file,
        format!("{static_token},robot,robot-uid,\"system:masters\"\n"),
    )
    .unwrap();
    let host_dir = root.join("host");
    let level = log_level();
    let host = start_local_up(
        &host_dir,
        &[
            "--members",
            "1",
            "--log",
            &level,
            "--token-auth-file",
            token_file.to_str().unwrap(),
        ],
    );
    let edge = start_member_sim_with(
        "edge",
        &root.join("edge"),
        &["--nodes", "2", "--log", &level],
    );
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &root.join("cache"),
    );
    let mut ctl_output = String::new();

    // A Secret with a value only this test knows, and a token for a ServiceAccount.
    let password = unique("pa55word");
    k.ok(&["create", "namespace", "leak"]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "db",
        "-n",
        "leak",
        &format!("--from-literal=password={password}"),
    ]);
    k.ok(&["create", "serviceaccount", "robot", "-n", "leak"]);
    let sa_token = k
        .ok(&["create", "token", "robot", "-n", "leak"])
        .trim()
        .to_string();
    // A legacy token Secret, which the tokens controller fills.
    let legacy = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"robot-token","namespace":"leak","annotations":{"kubernetes.io/service-account.name":"robot"}},"type":"kubernetes.io/service-account-token"}"#;
    std::fs::write(root.join("legacy.json"), legacy).unwrap();
    k.ok(&["apply", "-f", root.join("legacy.json").to_str().unwrap()]);
    let legacy_token = eventually(Duration::from_secs(30), "the legacy token", || {
        let s = k.get_json(&["secret", "robot-token", "-n", "leak"]);
        s["data"]["token"]
            .as_str()
            .map(|t| String::from_utf8(STANDARD.decode(t).unwrap()).unwrap())
            .ok_or_else(|| s.to_string())
    });

    // Each token authenticates on its own (the ServiceAccount is then refused by RBAC: 403,
    // not 401).
    let ca = host_dir.join("pki/ca.crt");
    let as_token = |name: &str, token: &str| {
        let kubeconfig = root.join(format!("{name}.token-kubeconfig"));
        write_token_kubeconfig(&kubeconfig, &host.url, &ca, token);
        Kubectl::new(
            kubectl_binary("kubectl"),
            &kubeconfig,
            &root.join(format!("cache-{name}")),
        )
    };
    for (name, token) in [("sa", &sa_token), ("legacy", &legacy_token)] {
        let out = as_token(name, token).run(&["get", "pods", "-n", "leak"]);
        assert!(
            out.stderr.contains("system:serviceaccount:leak:robot")
                && out.stderr.contains("forbidden"),
            "{name}: {}",
            out.stderr
        );
    }
    as_token("static", &static_token).ok(&["get", "namespaces"]);

    // Join a second member by bearer token, then propagate the Deployment and the Secret.
    ctl_output += &flotillactl(
        &host.kubeconfig,
        &[
            "join",
            "edge",
            "--cluster-kubeconfig",
            edge.kubeconfig.to_str().unwrap(),
            "--cluster-context",
            "edge-flotilla",
        ],
    );
    let out = k.apply_file(root, "journey", JOURNEY);
    assert!(out.status.success(), "{}", out.stderr);
    for (cluster, member_kubeconfig) in [
        ("member1", host_dir.join("members/member1.kubeconfig")),
        ("edge", edge.kubeconfig.clone()),
    ] {
        let member = Kubectl::new(
            kubectl_binary("kubectl"),
            &member_kubeconfig,
            &root.join(format!("cache-{cluster}")),
        );
        eventually(Duration::from_secs(60), "the Secret in the member", || {
            let s = member.try_get(&["secret", "db", "-n", "leak"])?;
            let got = s
                .as_ref()
                .and_then(|s| s["data"]["password"].as_str())
                .map(|p| STANDARD.decode(p).unwrap());
            (got.as_deref() == Some(password.as_bytes()))
                .then_some(())
                .ok_or_else(|| format!("{s:?}"))
        });
        eventually(
            Duration::from_secs(60),
            "the Deployment in the member",
            || {
                member
                    .try_get(&["deployment", "web", "-n", "leak"])?
                    .map(|_| ())
                    .ok_or_else(|| "not yet".to_string())
            },
        );
    }
    // Reads through the members' credentials: the cluster proxy and merged reads.
    k.ok(&["get", "clusters"]);
    k.ok(&[
        "get",
        "--raw",
        "/apis/cluster.karmada.io/v1alpha1/clusters/edge/proxy/api/v1/namespaces/leak/secrets/db",
    ]);
    k.ok(&["get", "deploy", "-n", "leak"]);
    k.ok(&["get", "secret", "db", "-n", "leak", "-o", "yaml"]);

    // What must not appear.
    let mut needles = Needles(Vec::new());
    needles.add("the Secret's value", password.clone());
    needles.add("the Secret's value in base64", STANDARD.encode(&password));
    needles.add("the static bearer token", static_token.clone());
    needles.add("the ServiceAccount token", sa_token.clone());
    needles.add("the legacy ServiceAccount token", legacy_token.clone());
    needles.add("a PEM private key", "PRIVATE KEY");
    needles.add("a PEM certificate", "BEGIN CERTIFICATE");
    needles.add_pem_files(&host_dir.join("pki"));
    needles.add_pem_files(&root.join("edge"));
    needles.add_kubeconfigs(&host_dir);
    needles.add_kubeconfigs(&root.join("edge"));
    // The member credentials the join stored on the host.
    for name in ["edge", "member1"] {
        let s = k.get_json(&["secret", name, "-n", "karmada-cluster"]);
        if let Some(token) = s["data"]["token"].as_str() {
            let token = String::from_utf8(STANDARD.decode(token).unwrap()).unwrap();
            needles.add(format!("the member token of {name}"), token);
        }
    }
    assert!(needles.0.len() > 50, "too few needles: {}", needles.0.len());

    // Stop the processes so their logs are complete, then search every log.
    drop(edge);
    drop(host);
    let mut logs: Vec<(String, String)> = files_under(root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            )
        })
        .collect();
    logs.push(("flotillactl's output".into(), ctl_output));
    let total: usize = logs.iter().map(|(_, t)| t.len()).sum();
    // The run really logged at debug level: requests, watches, the controllers' work.
    assert!(
        logs.len() >= 2 && total > 100_000,
        "{} logs, {total} bytes",
        logs.len()
    );
    assert!(
        logs.iter().any(|(_, t)| t.contains(" DEBUG ")),
        "no debug lines in the logs"
    );
    eprintln!(
        "searched {} logs ({total} bytes) for {} needles",
        logs.len(),
        needles.0.len()
    );
    for (log, text) in &logs {
        eprintln!(
            "  {log}: {} bytes, {} lines",
            text.len(),
            text.lines().count()
        );
    }
    let mut found = Vec::new();
    for (log, text) in &logs {
        for (what, needle) in &needles.0 {
            if let Some(at) = text.find(needle.as_str()) {
                let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
                let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
                let line: String = text[line_start..line_end].chars().take(400).collect();
                found.push(format!("{what} in {log}:\n  {line}"));
            }
        }
    }
    found.dedup();
    assert!(
        found.is_empty(),
        "credentials in the logs:\n{}",
        found.join("\n")
    );
}
