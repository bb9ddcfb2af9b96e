//! CustomResourceDefinitions, authentication, RBAC and the audit log, driven by the real
//! kubectl against the real `flotilla apiserver` binary:
//!
//! - a CRD with a structural schema (defaulting, bounds, required fields), printer columns and
//!   the status and scale subresources goes through apply, Establishment, Table output,
//!   schema rejection, server-side apply, scale and status patches, deletion (the resource type
//!   disappears from discovery) and re-creation (no old objects come back);
//! - a bearer-token user from `--token-auth-file` bound to `view` in one namespace: what it can
//!   and cannot do (403 messages word for word), a `kubectl auth can-i` table checked both as
//!   that user and by an admin impersonating it, 401 for an unknown token, impersonation
//!   denied to the user, `kubectl auth whoami`;
//! - a binding to a role that does not exist is stored but grants nothing until the role
//!   appears;
//! - the audit log records the user's denied requests with code 403.

// The steps are test code: a panic is how they report a failed step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Kubectl, Output, kubectl_binary, start_apiserver, start_apiserver_with_args};

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
    listKind: WidgetList
    plural: widgets
    singular: widget
    shortNames: ["wd"]
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Image
      type: string
      jsonPath: .spec.image
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: ["image"]
            properties:
              replicas:
                type: integer
                minimum: 0
                maximum: 10
                default: 1
              image:
                type: string
          status:
            type: object
            properties:
              replicas:
                type: integer
"#;

/// No `replicas`: the schema default (1) must fill it in.
const WIDGET_W1: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
  namespace: shop
spec:
  image: nginx:1.25
"#;

/// Breaks two rules at once: `replicas` above the maximum and `image` missing.
const WIDGET_BAD: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: bad
  namespace: shop
spec:
  replicas: 11
"#;

/// Applied server-side, then re-applied with `REPLICAS` changed.
const WIDGET_W2: &str = r#"apiVersion: example.com/v1
kind: Widget
metadata:
  name: w2
  namespace: shop
spec:
  image: busybox:1.36
  replicas: REPLICAS
"#;

const ESTABLISHED: &str = r#"jsonpath={.status.conditions[?(@.type=="Established")].status}"#;

/// Polls `check` every 200 ms until it returns `Some`, panicking with `what` and the last
/// observation after `timeout`.
fn wait_for<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        match check() {
            Ok(v) => return v,
            Err(last) if Instant::now() > deadline => {
                panic!("{what} did not happen within {timeout:?}; last seen:\n{last}")
            }
            Err(_) => std::thread::sleep(Duration::from_millis(200)),
        }
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn wait_established(k: &Kubectl) {
    wait_for(
        Duration::from_secs(30),
        "the CRD becoming Established",
        || {
            let out = k.run(&["get", "crd", "widgets.example.com", "-o", ESTABLISHED]);
            if out.status.success() && out.stdout.trim() == "True" {
                Ok(())
            } else {
                Err(format!("{}{}", out.stdout, out.stderr))
            }
        },
    );
}

/// The rows of a Table printout, each split on whitespace.
fn table(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

#[test]
fn crd_with_schema_printer_columns_and_subresources() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_apiserver(&dir.path().join("data"));
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &server.kubeconfig,
        &dir.path().join("cache"),
    );
    k.ok(&["create", "namespace", "shop"]);

    let crd = write(dir.path(), "crd.yaml", WIDGET_CRD);
    let crd = crd.to_str().unwrap();
    let out = k.ok(&["apply", "-f", crd]);
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    wait_established(&k);

    // Defaulting, then the printer columns in the Table kubectl prints.
    let w1 = write(dir.path(), "w1.yaml", WIDGET_W1);
    k.ok(&["apply", "-f", w1.to_str().unwrap()]);
    let w1_json = k.get_json(&["widget", "w1", "-n", "shop"]);
    assert_eq!(
        w1_json["spec"]["replicas"], 1,
        "default not applied: {w1_json}"
    );
    let rows = table(&k.ok(&["get", "widgets", "-n", "shop"]));
    assert_eq!(rows[0], ["NAME", "REPLICAS", "IMAGE", "AGE"], "{rows:?}");
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[1][..3], ["w1", "1", "nginx:1.25"], "{rows:?}");
    // The short name from the CRD works too.
    assert!(
        k.ok(&["get", "wd", "w1", "-n", "shop"])
            .contains("nginx:1.25")
    );

    // Schema violations are rejected with the field paths and the rule broken.
    let bad = write(dir.path(), "bad.yaml", WIDGET_BAD);
    let out = k.fails(&["apply", "-f", bad.to_str().unwrap()]);
    assert!(
        out.stderr.contains(r#"The Widget "bad" is invalid"#),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
        ),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("spec.image: Required value"),
        "{}",
        out.stderr
    );
    let out = k.fails(&["get", "widget", "bad", "-n", "shop"]);
    assert!(out.stderr.contains("NotFound"), "{}", out.stderr);
    // A wrong type is rejected too.
    let typed = write(
        dir.path(),
        "typed.yaml",
        &WIDGET_W2
            .replace("w2", "typed")
            .replace("REPLICAS", "three"),
    );
    let out = k.fails(&["apply", "-f", typed.to_str().unwrap()]);
    assert!(
        out.stderr.contains("spec.replicas") && out.stderr.contains("must be of type integer"),
        "{}",
        out.stderr
    );

    // Server-side apply creates, then a changed re-apply updates, owned by kubectl.
    let w2 = write(dir.path(), "w2.yaml", &WIDGET_W2.replace("REPLICAS", "3"));
    let out = k.ok(&["apply", "--server-side", "-f", w2.to_str().unwrap()]);
    assert!(
        out.contains("widget.example.com/w2 serverside-applied"),
        "{out}"
    );
    assert_eq!(
        k.get_json(&["widget", "w2", "-n", "shop"])["spec"]["replicas"],
        3
    );
    let w2 = write(dir.path(), "w2.yaml", &WIDGET_W2.replace("REPLICAS", "5"));
    k.ok(&["apply", "--server-side", "-f", w2.to_str().unwrap()]);
    let w2_json = k.get_json(&["widget", "w2", "-n", "shop", "--show-managed-fields"]);
    assert_eq!(w2_json["spec"]["replicas"], 5, "{w2_json}");
    let managers = w2_json["metadata"]["managedFields"].as_array().unwrap();
    assert!(
        managers
            .iter()
            .any(|m| m["manager"] == "kubectl" && m["operation"] == "Apply"),
        "{managers:?}"
    );
    // A schema violation through server-side apply is rejected as well.
    let w2_bad = write(
        dir.path(),
        "w2bad.yaml",
        &WIDGET_W2.replace("REPLICAS", "42"),
    );
    let out = k.fails(&["apply", "--server-side", "-f", w2_bad.to_str().unwrap()]);
    assert!(
        out.stderr.contains("less than or equal to 10"),
        "{}",
        out.stderr
    );

    // The scale subresource moves spec.replicas; the status subresource writes status only,
    // and the main resource ignores status.
    let out = k.ok(&["scale", "widget", "w2", "-n", "shop", "--replicas", "7"]);
    assert!(out.contains("widget.example.com/w2 scaled"), "{out}");
    let rows = table(&k.ok(&["get", "widgets", "-n", "shop"]));
    let w2_row = rows.iter().find(|r| r[0] == "w2").unwrap();
    assert_eq!(w2_row[1..3], ["7", "busybox:1.36"], "{rows:?}");
    k.ok(&[
        "patch",
        "widget",
        "w2",
        "-n",
        "shop",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2}}"#,
    ]);
    k.ok(&[
        "patch",
        "widget",
        "w2",
        "-n",
        "shop",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":9}}"#,
    ]);
    let w2_json = k.get_json(&["widget", "w2", "-n", "shop"]);
    assert_eq!(w2_json["status"]["replicas"], 2, "{w2_json}");
    assert_eq!(w2_json["spec"]["replicas"], 7, "{w2_json}");

    // Deleting the CRD removes the resource type from discovery.
    let out = k.ok(&["delete", "crd", "widgets.example.com"]);
    assert!(out.contains("deleted"), "{out}");
    let mut attempt = 0;
    wait_for(
        Duration::from_secs(30),
        "widgets disappearing from discovery",
        || {
            attempt += 1;
            let fresh = Kubectl::new(
                kubectl_binary("kubectl"),
                &server.kubeconfig,
                &dir.path().join(format!("cache-after-delete-{attempt}")),
            );
            let out = fresh.run(&["get", "widgets", "-n", "shop"]);
            if !out.status.success()
                && out
                    .stderr
                    .contains(r#"the server doesn't have a resource type "widgets""#)
            {
                Ok(())
            } else {
                Err(format!("{}\n{}", out.stdout, out.stderr))
            }
        },
    );

    // Re-created, the CRD starts empty: the old widgets were deleted with it.
    k.ok(&["apply", "-f", crd]);
    wait_established(&k);
    let fresh = Kubectl::new(
        kubectl_binary("kubectl"),
        &server.kubeconfig,
        &dir.path().join("cache-recreated"),
    );
    let out = fresh.ok(&["get", "widgets", "-A"]);
    assert!(out.trim().is_empty(), "old widgets came back: {out}");
    let list = fresh.get_json(&["widgets", "-A"]);
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "{list}");
    let out = fresh.fails(&["get", "widget", "w1", "-n", "shop"]);
    assert!(
        out.stderr.contains(r#"widgets.example.com "w1" not found"#),
        "{}",
        out.stderr
    );
}

/// kubectl authenticating with command-line flags (server, CA, bearer token) and an empty
/// kubeconfig, the way a user handed only a token would call it.
struct TokenKubectl {
    k: Kubectl,
    flags: Vec<String>,
}

impl TokenKubectl {
    fn new(dir: &Path, name: &str, url: &str, ca: &Path, token: &str) -> Self {
        let kubeconfig = write(dir, &format!("{name}.kubeconfig"), "");
        Self {
            k: Kubectl::new(
                kubectl_binary("kubectl"),
                &kubeconfig,
                &dir.join(format!("cache-{name}")),
            ),
            flags: vec![
                "--server".into(),
                url.into(),
                "--certificate-authority".into(),
                ca.to_str().unwrap().into(),
                "--token".into(),
                token.into(),
            ],
        }
    }

    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        self.flags
            .iter()
            .map(String::as_str)
            .chain(args.iter().copied())
            .collect()
    }

    fn run(&self, args: &[&str]) -> Output {
        self.k.run(&self.args(args))
    }

    fn ok(&self, args: &[&str]) -> String {
        self.k.ok(&self.args(args))
    }

    fn fails(&self, args: &[&str]) -> Output {
        self.k.fails(&self.args(args))
    }
}

/// What `kubectl auth can-i` answered: `yes` exits 0, `no` (maybe with a reason) exits 1.
fn can_i(out: &Output, what: &str) -> bool {
    let first = out.stdout.split_whitespace().next().unwrap_or_default();
    match (first, out.status.code()) {
        ("yes", Some(0)) => true,
        ("no", Some(1)) => false,
        _ => panic!(
            "`auth can-i {what}` gave no clear answer ({})\n--- stdout\n{}\n--- stderr\n{}",
            out.status, out.stdout, out.stderr
        ),
    }
}

/// `kubectl auth can-i` cases for alice, who is bound to `view` in `dev` only, with the
/// answer kube-apiserver gives. The bootstrap policy adds what every authenticated user
/// may do (self reviews, public health and discovery paths).
const ALICE_CAN_I: &[(&str, bool)] = &[
    ("get configmaps -n dev", true),
    ("list configmaps -n dev", true),
    ("watch configmaps -n dev", true),
    ("create configmaps -n dev", false),
    ("delete configmaps -n dev", false),
    ("list configmaps -n prod", false),
    ("get secrets -n dev", false),
    ("list secrets -n dev", false),
    ("list deployments.apps -n dev", true),
    ("list deployments.apps -n prod", false),
    ("patch deployments.apps -n dev", false),
    ("get deployments.apps --subresource=scale -n dev", true),
    ("update deployments.apps --subresource=scale -n dev", false),
    ("list rolebindings.rbac.authorization.k8s.io -n dev", false),
    ("list namespaces", false),
    ("get namespaces/dev -n dev", true),
    ("list customresourcedefinitions.apiextensions.k8s.io", false),
    ("create selfsubjectaccessreviews.authorization.k8s.io", true),
    ("get /healthz", true),
    ("get /metrics", false),
];

#[test]
fn rbac_token_user_impersonation_and_audit() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = write(
        dir.path(),
        "tokens.csv",
        "alicetoken,alice,u-alice,\"devs\"\nbobtoken,bob,u-bob\n",
    );
    let audit = dir.path().join("audit").join("audit.log");
    let data = dir.path().join("data");
    let server = start_apiserver_with_args(
        &data,
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--audit-log-path",
            audit.to_str().unwrap(),
            "--authorization-mode",
            "RBAC",
        ],
    );
    let ca = data.join("pki").join("ca.crt");
    let admin = Kubectl::new(
        kubectl_binary("kubectl"),
        &server.kubeconfig,
        &dir.path().join("cache-admin"),
    );
    let alice = TokenKubectl::new(dir.path(), "alice", &server.url, &ca, "alicetoken");

    for ns in ["dev", "prod"] {
        admin.ok(&["create", "namespace", ns]);
        admin.ok(&[
            "create",
            "configmap",
            &format!("settings-{ns}"),
            "-n",
            ns,
            "--from-literal=a=b",
        ]);
    }
    let out = admin.ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "-n",
        "dev",
        "--clusterrole=view",
        "--user=alice",
    ]);
    assert!(
        out.contains("rolebinding.rbac.authorization.k8s.io/alice-view created"),
        "{out}"
    );
    // The authorizer follows bindings through a watch: wait for it to see this one.
    wait_for(
        Duration::from_secs(15),
        "alice's binding taking effect",
        || {
            let out = alice.run(&["auth", "can-i", "list", "configmaps", "-n", "dev"]);
            if out.stdout.trim() == "yes" {
                Ok(())
            } else {
                Err(format!("{}{}", out.stdout, out.stderr))
            }
        },
    );

    // What view in dev allows and denies, with kube-apiserver's 403 messages.
    let out = alice.ok(&["get", "configmaps", "-n", "dev"]);
    assert!(out.contains("settings-dev"), "{out}");
    let out = alice.fails(&["get", "configmaps", "-n", "prod"]);
    assert!(
        out.stderr.contains(
            r#"Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "prod""#
        ),
        "{}",
        out.stderr
    );
    let out = alice.fails(&[
        "create",
        "configmap",
        "mine",
        "-n",
        "dev",
        "--from-literal=x=y",
    ]);
    assert!(
        out.stderr.contains(
            r#"configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" in the namespace "dev""#
        ),
        "{}",
        out.stderr
    );
    admin.fails(&["get", "configmap", "mine", "-n", "dev"]);
    let out = alice.fails(&["get", "secrets", "-n", "dev"]);
    assert!(
        out.stderr.contains(
            r#"secrets is forbidden: User "alice" cannot list resource "secrets" in API group "" in the namespace "dev""#
        ),
        "{}",
        out.stderr
    );
    let out = alice.run(&["get", "deployments", "-n", "dev"]);
    assert!(out.status.success(), "{}", out.stderr);
    assert!(
        out.stderr.contains("No resources found in dev namespace"),
        "{}",
        out.stderr
    );
    let out = alice.ok(&["get", "namespace", "dev", "-o", "name"]);
    assert_eq!(out.trim(), "namespace/dev");
    let out = alice.fails(&["get", "namespaces"]);
    assert!(
        out.stderr.contains(
            r#"namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope"#
        ),
        "{}",
        out.stderr
    );

    // The can-i table, asked by alice herself and by the admin impersonating her.
    for (case, expected) in ALICE_CAN_I {
        let mut args = vec!["auth", "can-i"];
        args.extend(case.split_whitespace());
        let as_alice = can_i(&alice.run(&args), case);
        assert_eq!(as_alice, *expected, "alice: auth can-i {case}");
        let mut impersonated = vec!["--as", "alice", "--as-group", "devs"];
        impersonated.extend(&args);
        let via_admin = can_i(&admin.run(&impersonated), case);
        assert_eq!(via_admin, *expected, "admin --as alice: auth can-i {case}");
    }
    // The admin itself may do all of it.
    assert!(can_i(
        &admin.run(&["auth", "can-i", "list", "secrets", "-n", "prod"]),
        "list secrets -n prod (admin)"
    ));

    // Impersonating alice gets alice's answers on real requests too.
    let out = admin.ok(&["--as", "alice", "get", "configmaps", "-n", "dev"]);
    assert!(out.contains("settings-dev"), "{out}");
    let out = admin.run(&["--as", "alice", "get", "configmaps", "-n", "prod"]);
    assert!(
        !out.status.success()
            && out.stderr.contains(
                r#"configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "prod""#
            ),
        "{}",
        out.stderr
    );

    // alice may not impersonate anyone.
    let out = alice.fails(&["--as", "admin", "get", "configmaps", "-n", "dev"]);
    assert!(
        out.stderr.contains(
            r#"users "admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        ),
        "{}",
        out.stderr
    );
    let out = alice.fails(&[
        "--as",
        "alice",
        "--as-group",
        "system:masters",
        "get",
        "secrets",
        "-n",
        "prod",
    ]);
    assert!(out.stderr.contains("cannot impersonate"), "{}", out.stderr);

    // Who alice is, per the server.
    let out = alice.ok(&["auth", "whoami"]);
    let rows = table(&out);
    assert_eq!(rows[0], ["ATTRIBUTE", "VALUE"], "{out}");
    assert!(
        rows.contains(&vec!["Username".into(), "alice".into()]),
        "{out}"
    );
    assert!(
        rows.contains(&vec!["UID".into(), "u-alice".into()]),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("Groups") && l.contains("[devs system:authenticated]")),
        "{out}"
    );
    let review: Value = serde_json::from_str(&alice.ok(&["auth", "whoami", "-o", "json"])).unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview", "{review}");
    let info = &review["status"]["userInfo"];
    assert_eq!(info["username"], "alice", "{review}");
    assert_eq!(info["uid"], "u-alice", "{review}");
    assert_eq!(
        info["groups"],
        serde_json::json!(["devs", "system:authenticated"]),
        "{review}"
    );

    // An unknown token is not a user: 401.
    let stranger = TokenKubectl::new(dir.path(), "stranger", &server.url, &ca, "no-such-token");
    let out = stranger.fails(&["auth", "whoami"]);
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        out.stderr
    );
    let out = stranger.fails(&["get", "--raw", "/api/v1/namespaces/dev/configmaps"]);
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server (Unauthorized)"),
        "{}",
        out.stderr
    );
    // `get` fails in discovery first; client-go words that 401 differently (as it does
    // against kube-apiserver): "(the server has asked for the client to provide credentials)".
    let out = stranger.fails(&["get", "configmaps", "-n", "dev"]);
    assert!(
        out.stderr
            .contains("error: You must be logged in to the server ("),
        "{}",
        out.stderr
    );

    // A binding to a role that does not exist is stored but grants nothing...
    let bob = TokenKubectl::new(dir.path(), "bob", &server.url, &ca, "bobtoken");
    let out = admin.ok(&[
        "create",
        "rolebinding",
        "ghost",
        "-n",
        "dev",
        "--role=ghost-role",
        "--user=bob",
    ]);
    assert!(
        out.contains("rolebinding.rbac.authorization.k8s.io/ghost created"),
        "{out}"
    );
    let out = admin.ok(&[
        "create",
        "clusterrolebinding",
        "ghost",
        "--clusterrole=no-such-clusterrole",
        "--user=bob",
    ]);
    assert!(
        out.contains("clusterrolebinding.rbac.authorization.k8s.io/ghost created"),
        "{out}"
    );
    let binding = admin.get_json(&["rolebinding", "ghost", "-n", "dev"]);
    assert_eq!(binding["roleRef"]["kind"], "Role", "{binding}");
    assert_eq!(binding["roleRef"]["name"], "ghost-role", "{binding}");
    // Barrier instead of a pause: a RoleBinding and a ClusterRoleBinding created after the
    // ghost ones grant a bystander `view`; the authorizer follows each kind's changes in
    // order, so once both grants work, both ghost bindings have been indexed.
    admin.ok(&[
        "create",
        "rolebinding",
        "sentinel",
        "-n",
        "dev",
        "--clusterrole=view",
        "--user=sentinel-rb",
    ]);
    admin.ok(&[
        "create",
        "clusterrolebinding",
        "sentinel",
        "--clusterrole=view",
        "--user=sentinel-crb",
    ]);
    wait_for(
        Duration::from_secs(15),
        "the sentinel bindings taking effect",
        || {
            let rb = admin.run(&[
                "--as",
                "sentinel-rb",
                "auth",
                "can-i",
                "list",
                "configmaps",
                "-n",
                "dev",
            ]);
            let crb = admin.run(&[
                "--as",
                "sentinel-crb",
                "auth",
                "can-i",
                "list",
                "configmaps",
                "-n",
                "kube-public",
            ]);
            if can_i(&rb, "sentinel-rb") && can_i(&crb, "sentinel-crb") {
                Ok(())
            } else {
                Err(format!(
                    "rolebinding: {}; clusterrolebinding: {}",
                    rb.stdout, crb.stdout
                ))
            }
        },
    );
    for case in [
        "list secrets -n dev",
        "get configmaps -n dev",
        "list namespaces",
        "get widgets.example.com -n dev",
    ] {
        let mut args = vec!["auth", "can-i"];
        args.extend(case.split_whitespace());
        assert!(!can_i(&bob.run(&args), case), "bob: auth can-i {case}");
        let mut impersonated = vec!["--as", "bob"];
        impersonated.extend(&args);
        assert!(!can_i(&admin.run(&impersonated), case), "--as bob: {case}");
    }
    let out = bob.fails(&["get", "secrets", "-n", "dev"]);
    assert!(
        out.stderr
            .contains(r#"User "bob" cannot list resource "secrets""#),
        "{}",
        out.stderr
    );
    // ...until the role appears, and then only what the role says, only where it is bound.
    admin.ok(&[
        "create",
        "role",
        "ghost-role",
        "-n",
        "dev",
        "--verb=list",
        "--resource=secrets",
    ]);
    wait_for(Duration::from_secs(15), "bob's role taking effect", || {
        let out = bob.run(&["auth", "can-i", "list", "secrets", "-n", "dev"]);
        if out.stdout.trim() == "yes" {
            Ok(())
        } else {
            Err(format!("{}{}", out.stdout, out.stderr))
        }
    });
    assert!(!can_i(
        &bob.run(&["auth", "can-i", "list", "secrets", "-n", "prod"]),
        "bob: list secrets -n prod"
    ));
    assert!(!can_i(
        &bob.run(&["auth", "can-i", "get", "secrets", "-n", "dev"]),
        "bob: get secrets -n dev"
    ));
    bob.ok(&["get", "secrets", "-n", "dev"]);

    // The audit log names alice's denied requests with their code.
    let text = std::fs::read_to_string(&audit).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad audit line ({e}): {l}")))
        .collect();
    let denied = |user: &str, method: &str, uri_part: &str| {
        entries.iter().any(|e| {
            e["user"] == user
                && e["code"] == 403
                && e["method"] == method
                && e["requestURI"]
                    .as_str()
                    .is_some_and(|u| u.contains(uri_part))
        })
    };
    assert!(
        denied("alice", "GET", "/api/v1/namespaces/prod/configmaps"),
        "no 403 entry for alice listing configmaps in prod:\n{text}"
    );
    assert!(
        denied("alice", "POST", "/api/v1/namespaces/dev/configmaps"),
        "no 403 entry for alice creating a configmap in dev:\n{text}"
    );
    assert!(
        denied("alice", "GET", "/api/v1/namespaces/dev/secrets"),
        "no 403 entry for alice listing secrets in dev:\n{text}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["user"] == "alice" && e["impersonatedBy"] == "admin" && e["code"] == 403),
        "no 403 entry for the admin acting as alice:\n{text}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["user"] == "alice" && e["code"] == 200),
        "alice's allowed requests are missing:\n{text}"
    );
    assert!(
        entries
            .iter()
            .any(|e| e["user"].is_null() && e["code"] == 401),
        "the unknown token's 401 is missing:\n{text}"
    );
    drop(server);
}
