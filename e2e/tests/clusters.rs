//! Karmada `Cluster` objects and the cluster proxy, driven by the real kubectl against real
//! `flotilla` processes:
//!
//! - the host (`flotilla apiserver`) with the aggregated API server as a separate process
//!   (`flotilla aggregated-apiserver`, registered through its APIService): apply of a
//!   Karmada-format manifest, the `NAME VERSION MODE READY AGE` table and its wide columns, the
//!   status subresource feeding VERSION/READY, label, watch, strategic merge patch, delete;
//! - `flotilla local-up` with a member cluster (another `flotilla apiserver`) and its
//!   credentials Secret: `get --raw` and a `-w` watch through
//!   `clusters/member1/proxy`, the host's RBAC on `clusters/proxy` (403 from the host), the
//!   member's RBAC on the impersonated caller (403 from the member, naming that user), and a
//!   stopped member (503 naming the cluster while the host keeps working);
//! - bad input: invalid Cluster specs (422), missing Secret and unusable caBundle (503), and
//!   proxy paths that try to leave the member's API (400, nothing reaches the member, as its
//!   audit log shows).

// The steps are test code: a panic is how they report a failed step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use support::{
    ApiserverProcess, Kubectl, Streaming, curl, eventually, kubectl_binary, push_cluster_yaml,
    start_aggregated_apiserver, start_apiserver, start_apiserver_with_args, start_local_up, table,
    write_token_kubeconfig,
};

const CLUSTERS: &str = "/apis/cluster.karmada.io/v1alpha1/clusters";
/// The aggregator checks APIService availability periodically; allow a few rounds.
const SERVED_WAIT: Duration = Duration::from_secs(45);
const WATCH_WAIT: Duration = Duration::from_secs(30);
const MEMBER_TOKEN: &str = "membertoken";

fn row<'a>(rows: &'a [HashMap<String, String>], name: &str) -> &'a HashMap<String, String> {
    rows.iter()
        .find(|r| r["NAME"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {rows:?}"))
}

/// Waits until the host serves `cluster.karmada.io` through the APIService.
fn wait_served(k: &Kubectl) {
    eventually(
        SERVED_WAIT,
        "clusters served through the APIService",
        || {
            let out = k.run(&["get", "clusters"]);
            if out.status.success() {
                Ok(())
            } else {
                Err(out.stderr)
            }
        },
    );
}

/// The member's credentials: `karmada-cluster/<name>` with `token` and `caBundle`.
fn create_member_secret(k: &Kubectl, name: &str, member_data: &Path) {
    support::create_member_secret(
        k,
        name,
        MEMBER_TOKEN,
        &member_data.join("pki").join("ca.crt"),
    );
}

fn apply(k: &Kubectl, dir: &Path, file: &str, yaml: &str) -> String {
    let path = dir.join(file);
    std::fs::write(&path, yaml).unwrap();
    k.ok(&["apply", "-f", path.to_str().unwrap()])
}

/// Starts a member cluster: `flotilla apiserver` with a token for the proxy (a
/// `system:masters` user, so it may impersonate) and an audit log.
fn start_member(dir: &Path) -> (ApiserverProcess, PathBuf) {
    let data = dir.join("member1");
    std::fs::create_dir_all(&data).unwrap();
    let tokens = data.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("{MEMBER_TOKEN},flotilla-member,u1,\"system:masters\"\n"),
    )
    .unwrap();
    let audit = dir.join("member1-audit.log");
    let member = start_apiserver_with_args(
        &data,
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--audit-log-path",
            audit.to_str().unwrap(),
        ],
    );
    (member, audit)
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad audit line ({e}): {l}")))
        .collect()
}

/// The member's audit lines of requests that came through the cluster proxy (which always
/// impersonates its caller), leaving out the cluster status controller's own probes and
/// watches.
fn proxied_lines(path: &Path) -> Vec<Value> {
    audit_lines(path)
        .into_iter()
        .filter(|l| !l["impersonatedBy"].is_null())
        .collect()
}

const MEMBERS_MANIFEST: &str = r#"apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member1
spec:
  syncMode: Push
  apiEndpoint: https://172.18.0.3:6443
  secretRef:
    namespace: karmada-cluster
    name: member1
  impersonatorSecretRef:
    namespace: karmada-cluster
    name: member1-impersonator
  region: eu-west
  zone: eu-west-1a
  provider: aws
  taints:
  - key: workload
    value: gpu
    effect: NoSchedule
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata:
  name: member2
spec:
  syncMode: Pull
  apiEndpoint: https://172.18.0.4:6443
  proxyURL: http://proxy.example.com:3128
  region: us-east
  zones: ["us-east-1a", "us-east-1b"]
  provider: gcp
"#;

#[test]
fn clusters_through_a_separate_aggregated_apiserver() {
    let dir = tempfile::tempdir().unwrap();
    let host_data = dir.path().join("host");
    let host = start_apiserver(&host_data);
    let aggregated = start_aggregated_apiserver(&host_data, &dir.path().join("aggregated"));
    assert!(
        aggregated.url.starts_with("https://127.0.0.1:"),
        "{}",
        aggregated.url
    );
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    wait_served(&k);

    // The registration is visible and available on the host.
    let apiservice = k.get_json(&["apiservice", "v1alpha1.cluster.karmada.io"]);
    let available = apiservice["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Available"))
        .cloned()
        .unwrap_or(Value::Null);
    assert_eq!(available["status"], "True", "{apiservice:#}");

    let applied = apply(&k, dir.path(), "clusters.yaml", MEMBERS_MANIFEST);
    assert!(
        applied.contains("cluster.cluster.karmada.io/member1 created")
            && applied.contains("cluster.cluster.karmada.io/member2 created"),
        "{applied}"
    );
    // Stored as given, plus the default resource models.
    let m1 = k.get_json(&["cluster", "member1"]);
    assert_eq!(m1["spec"]["taints"][0]["key"], "workload", "{m1:#}");
    assert_eq!(m1["spec"]["taints"][0]["effect"], "NoSchedule");
    assert_eq!(m1["spec"]["zone"], "eu-west-1a");
    assert_eq!(m1["spec"]["secretRef"]["name"], "member1");
    assert_eq!(
        m1["spec"]["resourceModels"].as_array().map(Vec::len),
        Some(9),
        "{m1:#}"
    );

    // Status through the status subresource feeds VERSION and READY.
    k.ok(&[
        "patch",
        "cluster",
        "member1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"kubernetesVersion":"v1.33.2","conditions":[{"type":"Ready","status":"True","reason":"ClusterReady","message":"cluster is healthy and ready to accept workloads","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
    ]);

    let (header, rows) = table(&k.ok(&["get", "clusters"]));
    assert_eq!(header, ["NAME", "VERSION", "MODE", "READY", "AGE"]);
    assert_eq!(rows.len(), 2, "{rows:?}");
    let r1 = row(&rows, "member1");
    assert_eq!(
        (
            r1["VERSION"].as_str(),
            r1["MODE"].as_str(),
            r1["READY"].as_str()
        ),
        ("v1.33.2", "Push", "True")
    );
    assert!(r1["AGE"].ends_with('s'), "{r1:?}");
    let r2 = row(&rows, "member2");
    assert_eq!(r2["MODE"], "Pull");
    assert_eq!(r2["READY"], "", "{r2:?}");

    let (header, rows) = table(&k.ok(&["get", "clusters", "-o", "wide"]));
    assert_eq!(
        header,
        [
            "NAME",
            "VERSION",
            "MODE",
            "READY",
            "AGE",
            "ZONES",
            "REGION",
            "PROVIDER",
            "API-ENDPOINT",
            "PROXY-URL"
        ]
    );
    let r1 = row(&rows, "member1");
    assert_eq!(r1["REGION"], "eu-west");
    assert_eq!(r1["PROVIDER"], "aws");
    assert_eq!(r1["API-ENDPOINT"], "https://172.18.0.3:6443");
    assert_eq!(r1["PROXY-URL"], "");
    let r2 = row(&rows, "member2");
    assert!(
        r2["ZONES"].contains("us-east-1a") && r2["ZONES"].contains("us-east-1b"),
        "{r2:?}"
    );
    assert_eq!(r2["REGION"], "us-east");
    assert_eq!(r2["PROVIDER"], "gcp");
    assert_eq!(r2["API-ENDPOINT"], "https://172.18.0.4:6443");
    assert_eq!(r2["PROXY-URL"], "http://proxy.example.com:3128");

    // A watch sees what other commands change.
    let mut watch =
        Streaming::spawn(k.command(&["get", "clusters", "-w", "-o", "wide", "--show-labels"]));
    watch.wait_for_line(WATCH_WAIT, "listing member1", |l| l.starts_with("member1 "));

    let labeled = k.ok(&["label", "cluster", "member1", "env=prod"]);
    assert!(
        labeled.contains("cluster.cluster.karmada.io/member1 labeled"),
        "{labeled}"
    );
    watch.wait_for_line(WATCH_WAIT, "with member1's new label", |l| {
        l.starts_with("member1 ") && l.contains("env=prod")
    });
    let (_, rows) = table(&k.ok(&["get", "clusters", "-l", "env=prod"]));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["NAME"], "member1");

    // Strategic merge patch of a typed resource: region changes, the rest of spec stays.
    let patched = k.ok(&[
        "patch",
        "cluster",
        "member1",
        "--type",
        "strategic",
        "-p",
        r#"{"spec":{"region":"us-central"}}"#,
    ]);
    assert!(
        patched.contains("cluster.cluster.karmada.io/member1 patched"),
        "{patched}"
    );
    watch.wait_for_line(WATCH_WAIT, "with member1's new region", |l| {
        l.starts_with("member1 ") && l.contains("us-central")
    });
    let m1 = k.get_json(&["cluster", "member1"]);
    assert_eq!(m1["spec"]["region"], "us-central");
    assert_eq!(m1["spec"]["provider"], "aws", "{m1:#}");
    assert_eq!(m1["spec"]["zone"], "eu-west-1a");
    assert_eq!(m1["spec"]["taints"][0]["value"], "gpu");
    assert_eq!(m1["metadata"]["labels"]["env"], "prod");
    // Spec writes leave status alone.
    assert_eq!(m1["status"]["kubernetesVersion"], "v1.33.2", "{m1:#}");

    let deleted = k.ok(&["delete", "cluster", "member1"]);
    assert!(
        deleted.contains("cluster.cluster.karmada.io \"member1\" deleted"),
        "{deleted}"
    );
    let missing = k.fails(&["get", "cluster", "member1"]);
    assert!(
        missing.stderr.contains("NotFound") && missing.stderr.contains("member1"),
        "{}",
        missing.stderr
    );
    let (_, rows) = table(&k.ok(&["get", "clusters"]));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["NAME"], "member2");
    drop(watch);
    drop(aggregated);
}

#[test]
fn cluster_proxy_with_local_up_and_a_member() {
    let dir = tempfile::tempdir().unwrap();
    let host_data = dir.path().join("host");
    let tokens = dir.path().join("host-tokens.csv");
    std::fs::write(
        &tokens,
        "viewertoken,viewer,u-viewer,\"devs\"\nproxiertoken,proxier,u-proxier,\"devs\"\n",
    )
    .unwrap();
    let host = start_local_up(&host_data, &["--token-auth-file", tokens.to_str().unwrap()]);
    let (mut member, member_audit) = start_member(dir.path());
    let member_data = dir.path().join("member1");
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache-host"),
    );
    let km = Kubectl::new(
        kubectl_binary("kubectl"),
        &member.kubeconfig,
        &dir.path().join("cache-member"),
    );
    wait_served(&k);
    create_member_secret(&k, "member1", &member_data);
    apply(
        &k,
        dir.path(),
        "member1.yaml",
        &push_cluster_yaml("member1", &member.url, "member1"),
    );

    // The member's namespaces, through the host.
    km.ok(&["create", "namespace", "flotilla-e2e-only-in-member1"]);
    let proxied_ns = format!("{CLUSTERS}/member1/proxy/api/v1/namespaces");
    let list: Value = serde_json::from_str(&k.ok(&["get", "--raw", &proxied_ns])).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert!(names.contains(&"flotilla-e2e-only-in-member1"), "{names:?}");
    assert!(names.contains(&"kube-system"), "{names:?}");
    // ...and not the host's.
    let host_ns = k.ok(&["get", "namespaces", "-o", "name"]);
    assert!(
        !host_ns.contains("flotilla-e2e-only-in-member1"),
        "{host_ns}"
    );
    assert!(host_ns.contains("karmada-cluster"), "{host_ns}");
    assert!(!names.contains(&"karmada-cluster"), "{names:?}");

    // kubectl pointed at the proxy URL as its server watches the member.
    let pki = host_data.join("pki");
    let empty_kubeconfig = dir.path().join("empty-kubeconfig");
    std::fs::write(&empty_kubeconfig, "apiVersion: v1\nkind: Config\n").unwrap();
    let via_proxy = Kubectl::new(
        kubectl_binary("kubectl"),
        &empty_kubeconfig,
        &dir.path().join("cache-proxy"),
    );
    let server = format!("{}{CLUSTERS}/member1/proxy", host.url);
    km.ok(&["create", "configmap", "before-watch", "--from-literal=a=1"]);
    let mut watch = Streaming::spawn(via_proxy.command(&[
        "--server",
        &server,
        "--certificate-authority",
        pki.join("ca.crt").to_str().unwrap(),
        "--client-certificate",
        pki.join("admin.crt").to_str().unwrap(),
        "--client-key",
        pki.join("admin.key").to_str().unwrap(),
        "get",
        "configmaps",
        "-A",
        "-w",
    ]));
    watch.wait_for_line(WATCH_WAIT, "listing before-watch", |l| {
        l.starts_with("default ") && l.contains("before-watch")
    });
    km.ok(&[
        "create",
        "configmap",
        "during-watch",
        "--from-literal=a=1",
        "--from-literal=b=2",
    ]);
    let line = watch.wait_for_line(WATCH_WAIT, "streaming during-watch", |l| {
        l.contains("during-watch")
    });
    assert!(line.starts_with("default "), "{line}");
    let seen = watch.stop();
    assert!(!seen.iter().any(|l| l.contains("kube-root-ca")), "{seen:?}");

    // Host RBAC: viewer may read clusters but not use their proxy; proxier may use the proxy.
    let rbac = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cluster-reader
rules:
- apiGroups: ["cluster.karmada.io"]
  resources: ["clusters"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: viewer-reads-clusters
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-reader
subjects:
- kind: User
  apiGroup: rbac.authorization.k8s.io
  name: viewer
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: cluster-proxier
rules:
- apiGroups: ["cluster.karmada.io"]
  resources: ["clusters/proxy"]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: proxier-proxies
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: cluster-proxier
subjects:
- kind: User
  apiGroup: rbac.authorization.k8s.io
  name: proxier
"#;
    apply(&k, dir.path(), "rbac.yaml", rbac);
    let token_user = |name: &str, token: &str| {
        let kc = dir.path().join(format!("{name}.kubeconfig"));
        write_token_kubeconfig(&kc, &host.url, &pki.join("ca.crt"), token);
        Kubectl::new(
            kubectl_binary("kubectl"),
            &kc,
            &dir.path().join(format!("cache-{name}")),
        )
    };
    let viewer = token_user("viewer", "viewertoken");
    let proxier = token_user("proxier", "proxiertoken");

    let listed = eventually(Duration::from_secs(20), "viewer lists clusters", || {
        let out = viewer.run(&["get", "clusters"]);
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(out.stderr)
        }
    });
    assert!(listed.contains("member1"), "{listed}");
    let denied = viewer.fails(&["get", "--raw", &proxied_ns]);
    assert!(
        denied.stderr.contains("Forbidden")
            && denied.stderr.contains("User \"viewer\"")
            && denied.stderr.contains("clusters/proxy"),
        "{}",
        denied.stderr
    );

    // proxier passes the host's check; the member decides as proxier, who has no rights there.
    let audit_before = audit_lines(&member_audit).len();
    let denied = proxier.fails(&["get", "--raw", &proxied_ns]);
    assert!(
        denied.stderr.contains("Forbidden")
            && denied
                .stderr
                .contains("User \"proxier\" cannot list resource \"namespaces\""),
        "{}",
        denied.stderr
    );
    assert!(
        !denied.stderr.contains("clusters/proxy"),
        "{}",
        denied.stderr
    );
    let denied_on_member: Vec<Value> = audit_lines(&member_audit)
        .into_iter()
        .skip(audit_before)
        .filter(|l| l["user"] == "proxier")
        .collect();
    assert!(
        denied_on_member
            .iter()
            .any(|l| l["code"] == 403 && l["impersonatedBy"] == "flotilla-member"),
        "{denied_on_member:?}"
    );
    // proxier was given the proxy only, not the Cluster objects.
    let out = proxier.fails(&["get", "clusters"]);
    assert!(out.stderr.contains("Forbidden"), "{}", out.stderr);

    // The member goes away: the proxy answers 503 naming the cluster; the host carries on.
    let _ = member.child.kill();
    let _ = member.child.wait();
    let down = curl(
        "GET",
        &format!("{}{proxied_ns}", host.url),
        &pki.join("ca.crt"),
        &pki.join("admin.crt"),
        &pki.join("admin.key"),
        None,
    );
    assert_eq!(down.code, 503, "{}", down.body);
    let status: Value = serde_json::from_str(&down.body).unwrap();
    assert_eq!(status["reason"], "ServiceUnavailable", "{status}");
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("cluster \"member1\""),
        "{status}"
    );
    let out = k.fails(&["get", "--raw", &proxied_ns]);
    assert!(
        out.stderr.contains("ServiceUnavailable") && out.stderr.contains("member1"),
        "{}",
        out.stderr
    );
    let (_, rows) = table(&k.ok(&["get", "clusters"]));
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["NAME"], "member1");
    k.ok(&[
        "create",
        "configmap",
        "host-still-writable",
        "--from-literal=a=1",
    ]);
    let ns = k.ok(&["get", "namespaces", "-o", "name"]);
    assert!(ns.contains("namespace/default"), "{ns}");
    let listed = viewer.ok(&["get", "clusters", "member1"]);
    assert!(listed.contains("member1"), "{listed}");
}

#[test]
fn bad_cluster_specs_credentials_and_proxy_paths() {
    let dir = tempfile::tempdir().unwrap();
    let host_data = dir.path().join("host");
    let host = start_local_up(&host_data, &[]);
    let (member, member_audit) = start_member(dir.path());
    let member_data = dir.path().join("member1");
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    wait_served(&k);
    let pki = host_data.join("pki");
    let admin_curl = |method: &str, path: &str, body: Option<&str>| {
        curl(
            method,
            &format!("{}{path}", host.url),
            &pki.join("ca.crt"),
            &pki.join("admin.crt"),
            &pki.join("admin.key"),
            body,
        )
    };

    // Invalid specs: 422 with the offending field, both from kubectl and on the wire.
    let bad_endpoint = dir.path().join("bad-endpoint.yaml");
    std::fs::write(
        &bad_endpoint,
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: bad-endpoint\nspec:\n  syncMode: Push\n  apiEndpoint: not a url\n",
    )
    .unwrap();
    let out = k.fails(&["apply", "-f", bad_endpoint.to_str().unwrap()]);
    assert!(
        out.stderr
            .contains("The Cluster \"bad-endpoint\" is invalid")
            && out
                .stderr
                .contains("spec.apiEndpoint: Invalid value: \"not a url\""),
        "{}",
        out.stderr
    );
    let answer = admin_curl(
        "POST",
        CLUSTERS,
        Some(
            r#"{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"bad-endpoint"},"spec":{"syncMode":"Push","apiEndpoint":"not a url"}}"#,
        ),
    );
    assert_eq!(answer.code, 422, "{}", answer.body);
    let status: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["details"]["causes"][0]["field"], "spec.apiEndpoint",
        "{status}"
    );

    let both_zones = dir.path().join("both-zones.yaml");
    std::fs::write(
        &both_zones,
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata:\n  name: both-zones\nspec:\n  syncMode: Push\n  apiEndpoint: https://127.0.0.9:1\n  zone: z1\n  zones: [z1, z2]\n",
    )
    .unwrap();
    let out = k.fails(&["apply", "-f", both_zones.to_str().unwrap()]);
    assert!(
        out.stderr.contains("The Cluster \"both-zones\" is invalid")
            && out.stderr.contains("spec.zone"),
        "{}",
        out.stderr
    );
    let answer = admin_curl(
        "POST",
        CLUSTERS,
        Some(
            r#"{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster","metadata":{"name":"both-zones"},"spec":{"syncMode":"Push","zone":"z1","zones":["z1","z2"]}}"#,
        ),
    );
    assert_eq!(answer.code, 422, "{}", answer.body);
    let out = k.run(&["get", "clusters"]);
    assert!(
        !out.stdout.contains("bad-endpoint") && !out.stdout.contains("both-zones"),
        "{}",
        out.stdout
    );

    // Credentials that cannot be used: 503 saying why.
    create_member_secret(&k, "member1", &member_data);
    k.ok(&[
        "-n",
        "karmada-cluster",
        "create",
        "secret",
        "generic",
        "bad-ca",
        &format!("--from-literal=token={MEMBER_TOKEN}"),
        "--from-literal=caBundle=this is not a certificate",
    ]);
    let manifests = [
        push_cluster_yaml("member1", &member.url, "member1"),
        push_cluster_yaml("no-secret", &member.url, "does-not-exist"),
        push_cluster_yaml("bad-ca", &member.url, "bad-ca"),
    ]
    .join("---\n");
    apply(&k, dir.path(), "clusters.yaml", &manifests);

    let answer = admin_curl(
        "GET",
        &format!("{CLUSTERS}/no-secret/proxy/api/v1/namespaces"),
        None,
    );
    assert_eq!(answer.code, 503, "{}", answer.body);
    assert!(
        answer.body.contains("karmada-cluster/does-not-exist") && answer.body.contains("no-secret"),
        "{}",
        answer.body
    );
    let out = k.fails(&[
        "get",
        "--raw",
        &format!("{CLUSTERS}/no-secret/proxy/api/v1/namespaces"),
    ]);
    assert!(
        out.stderr.contains("ServiceUnavailable")
            && out.stderr.contains("karmada-cluster/does-not-exist"),
        "{}",
        out.stderr
    );
    let answer = admin_curl(
        "GET",
        &format!("{CLUSTERS}/bad-ca/proxy/api/v1/namespaces"),
        None,
    );
    assert_eq!(answer.code, 503, "{}", answer.body);
    assert!(
        answer.body.contains("caBundle") && answer.body.contains("bad-ca"),
        "{}",
        answer.body
    );

    // Fixing the Secret fixes the proxy (credentials are re-read within seconds).
    let good_ca = std::fs::read_to_string(member_data.join("pki").join("ca.crt")).unwrap();
    let patch = serde_json::json!({"stringData": {"caBundle": good_ca}}).to_string();
    k.ok(&[
        "-n",
        "karmada-cluster",
        "patch",
        "secret",
        "bad-ca",
        "--type=merge",
        "-p",
        &patch,
    ]);
    let fixed = eventually(
        Duration::from_secs(20),
        "the proxy uses the fixed caBundle",
        || {
            let answer = admin_curl(
                "GET",
                &format!("{CLUSTERS}/bad-ca/proxy/api/v1/namespaces/kube-system"),
                None,
            );
            if answer.code == 200 {
                Ok(answer.body)
            } else {
                Err(format!("{}: {}", answer.code, answer.body))
            }
        },
    );
    assert!(fixed.contains("\"name\":\"kube-system\""), "{fixed}");

    // A good request reaches the member and is in its audit log...
    // (Sends a GET of `path` through the proxy; the member's proxied audit lines once it has
    // logged that request after the first `after` lines.)
    let audited_get = |path: &str, after: usize| {
        let answer = admin_curl("GET", &format!("{CLUSTERS}/member1/proxy{path}"), None);
        assert_eq!(answer.code, 200, "{path}: {}", answer.body);
        eventually(
            Duration::from_secs(5),
            &format!("the member audits GET {path}"),
            || {
                let lines = proxied_lines(&member_audit);
                if lines.iter().skip(after).any(|l| l["requestURI"] == path) {
                    Ok(lines)
                } else {
                    Err(format!("{} lines", lines.len()))
                }
            },
        )
    };
    let before = proxied_lines(&member_audit).len();
    let after_good = audited_get("/api/v1/namespaces/default", before).len();

    // ...paths leaving the member's API are refused before anything is sent.
    for path in [
        "/api/../../../../api/v1/namespaces",
        "/api/v1/namespaces/default/..",
        "/api/%2e%2e/%2e%2e/api/v1/secrets",
        "/api/v1/namespaces/%2E%2E",
        "/api%2Fv1/namespaces",
        "/api/v1/namespaces/%2F..%2F",
        "/api/v1/./namespaces",
    ] {
        let answer = admin_curl("GET", &format!("{CLUSTERS}/member1/proxy{path}"), None);
        assert_eq!(answer.code, 400, "{path}: {}", answer.body);
        let status: Value = serde_json::from_str(&answer.body)
            .unwrap_or_else(|e| panic!("{path}: not a Status ({e}): {}", answer.body));
        assert_eq!(status["reason"], "BadRequest", "{path}: {status}");
    }
    // Barrier: one more good request after them; once the member has audited it, anything
    // the refused requests had sent would be in the log before it.
    let lines = audited_get("/api/v1/namespaces/kube-public", after_good);
    let received: Vec<&Value> = lines[after_good..].iter().collect();
    assert!(
        received.len() == 1 && received[0]["requestURI"] == "/api/v1/namespaces/kube-public",
        "the member received requests: {received:?}"
    );
    drop(member);
}
