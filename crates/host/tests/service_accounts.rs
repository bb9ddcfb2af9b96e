//! ServiceAccount tokens end to end, with the real kubectl against an in-process host over
//! TLS: `kubectl create serviceaccount` / `kubectl create token`, then the token used as a
//! kubectl credential (a kubeconfig holding only the token): RBAC allows what a RoleBinding to
//! the service account grants and denies the rest naming `system:serviceaccount:<ns>:<name>`;
//! the token stops working when the service account is deleted and recreated, or when the
//! Secret it is bound to is deleted; TokenReview answers for it; and a token outlives a restart
//! of the host on the same data directory.

// Helpers outside #[test] functions unwrap too: a failed call is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

struct Kubectl {
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
}

struct Ran {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Kubectl {
    fn new(kubeconfig: &Path) -> Self {
        Self {
            kubeconfig: kubeconfig.to_path_buf(),
            cache: tempfile::tempdir().unwrap(),
        }
    }

    async fn run(&self, args: &[&str]) -> Ran {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish within 60 s"))
            .unwrap();
        Ran {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(
            r.ok,
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// Runs and requires failure; returns stderr.
    async fn fails(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(
            !r.ok,
            "kubectl {args:?} unexpectedly succeeded:\nstdout: {}",
            r.stdout
        );
        r.stderr
    }

    /// `status.userInfo` of a SelfSubjectReview sent with this kubectl's credentials
    /// (`kubectl create --raw`, which every kubectl from 1.27 has; `auth whoami` in 1.27 only
    /// speaks the beta API).
    async fn whoami(&self) -> Result<Value, String> {
        let body = self.cache.path().join("ssr.json");
        std::fs::write(
            &body,
            r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
        )
        .unwrap();
        let r = self
            .run(&[
                "create",
                "--raw",
                "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                "-f",
                body.to_str().unwrap(),
            ])
            .await;
        if !r.ok {
            return Err(r.stderr);
        }
        let review: Value = serde_json::from_str(&r.stdout).unwrap();
        Ok(review["status"]["userInfo"].clone())
    }

    /// Retries until the command succeeds (RBAC changes reach the authorizer through a
    /// watch), failing after 20 s with the last error.
    async fn eventually_ok(&self, args: &[&str]) -> String {
        eventually(
            &format!("kubectl {args:?} to succeed"),
            Duration::from_secs(20),
            || async {
                let r = self.run(args).await;
                if r.ok { Ok(r.stdout) } else { Err(r.stderr) }
            },
        )
        .await
    }
}

/// A kubeconfig for the host's URL and CA whose only credential is `token`.
fn token_kubeconfig(t: &common::TestHost, name: &str, token: &str) -> PathBuf {
    let ca = std::fs::read_to_string(t.dir.path().join("pki/ca.crt")).unwrap();
    let path = t.dir.path().join(format!("{name}.kubeconfig"));
    flotilla_pki::Kubeconfig::new_token(&t.host.url(), "flotilla", name, &ca, token)
        .write(&path)
        .unwrap();
    path
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT");
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap()
}

/// `status` of a TokenReview of `token` (for `audiences`) posted by the admin.
async fn token_review(client: &kube::Client, token: &str, audiences: &[&str]) -> Value {
    let body = json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "TokenReview",
        "spec": {"token": token, "audiences": audiences},
    });
    let req = http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let answer: Value = serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap();
    answer["status"].clone()
}

async fn uid_of(admin: &Kubectl, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["-o", "jsonpath={.metadata.uid}"]);
    admin.ok(&all).await
}

const UNAUTHORIZED: &str = "You must be logged in to the server";

#[tokio::test]
async fn kubectl_create_token_authenticates_and_rbac_applies() {
    let t = common::start().await;
    let admin = Kubectl::new(&t.host.kubeconfig);
    admin.ok(&["create", "namespace", "team-a"]).await;
    admin
        .ok(&["-n", "team-a", "create", "serviceaccount", "robot"])
        .await;
    let sa_uid = uid_of(&admin, &["-n", "team-a", "get", "sa", "robot"]).await;

    // Below kube's ten-minute minimum: refused with kube's message.
    let err = admin
        .fails(&["-n", "team-a", "create", "token", "robot", "--duration=5m"])
        .await;
    assert!(
        err.contains("may not specify a duration less than 10 minutes"),
        "{err}"
    );
    // A token for a service account that does not exist: 404.
    let err = admin
        .fails(&["-n", "team-a", "create", "token", "ghost"])
        .await;
    assert!(
        err.contains(r#"serviceaccounts "ghost" not found"#),
        "{err}"
    );

    let token = admin
        .ok(&["-n", "team-a", "create", "token", "robot", "--duration=20m"])
        .await
        .trim()
        .to_string();
    let c = claims(&token);
    assert_eq!(c["sub"], "system:serviceaccount:team-a:robot");
    assert_eq!(c["iss"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(
        c["aud"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        1200
    );
    assert_eq!(
        c["kubernetes.io"],
        json!({"namespace": "team-a", "serviceaccount": {"name": "robot", "uid": sa_uid}})
    );

    let robot = Kubectl::new(&token_kubeconfig(&t, "robot", &token));
    // Who the token is, as kubectl shows it.
    let info = &robot.whoami().await.unwrap();
    assert_eq!(info["username"], "system:serviceaccount:team-a:robot");
    assert_eq!(info["uid"], sa_uid.as_str());
    assert_eq!(
        info["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team-a",
            "system:authenticated"
        ])
    );
    assert_eq!(
        info["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={}", c["jti"].as_str().unwrap())])
    );

    // Nothing grants it configmaps yet.
    let denied = robot.fails(&["-n", "team-a", "get", "configmaps"]).await;
    assert!(
        denied.contains(
            r#"User "system:serviceaccount:team-a:robot" cannot list resource "configmaps""#
        ),
        "{denied}"
    );
    admin
        .ok(&[
            "-n",
            "team-a",
            "create",
            "rolebinding",
            "robot-view",
            "--clusterrole=view",
            "--serviceaccount=team-a:robot",
        ])
        .await;
    admin
        .ok(&[
            "-n",
            "team-a",
            "create",
            "configmap",
            "settings",
            "--from-literal=a=b",
        ])
        .await;
    let listed = robot
        .eventually_ok(&["-n", "team-a", "get", "configmaps", "-o", "name"])
        .await;
    assert!(listed.contains("configmap/settings"), "{listed}");
    // view grants neither secrets nor other namespaces.
    let denied = robot.fails(&["-n", "team-a", "get", "secrets"]).await;
    assert!(
        denied.contains("Forbidden")
            && denied.contains(
                r#"User "system:serviceaccount:team-a:robot" cannot list resource "secrets""#
            ),
        "{denied}"
    );
    // Issuing tokens is `create` on serviceaccounts/token, which view does not grant.
    let denied = robot
        .fails(&["-n", "team-a", "create", "token", "robot"])
        .await;
    assert!(
        denied.contains(r#"cannot create resource "serviceaccounts/token" in API group "" in the namespace "team-a""#),
        "{denied}"
    );
    let denied = robot.fails(&["-n", "default", "get", "configmaps"]).await;
    assert!(
        denied.contains("system:serviceaccount:team-a:robot"),
        "{denied}"
    );

    // TokenReview: authenticated as the service account, for the API audiences.
    let review = token_review(&t.client, &token, &[]).await;
    assert_eq!(review["authenticated"], true, "{review}");
    assert_eq!(
        review["user"]["username"],
        "system:serviceaccount:team-a:robot"
    );
    assert_eq!(review["user"]["uid"], sa_uid.as_str());
    assert_eq!(
        review["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );

    // A token for another audience is no credential for this server, but a TokenReview
    // for that audience (what a service like vault asks) accepts it.
    let vault_token = admin
        .ok(&[
            "-n",
            "team-a",
            "create",
            "token",
            "robot",
            "--audience=vault",
        ])
        .await
        .trim()
        .to_string();
    let vault = Kubectl::new(&token_kubeconfig(&t, "vault", &vault_token));
    let err = vault.fails(&["-n", "team-a", "get", "configmaps"]).await;
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let review = token_review(&t.client, &vault_token, &["vault"]).await;
    assert_eq!(review["authenticated"], true, "{review}");
    assert_eq!(review["audiences"], json!(["vault"]));

    // Deleting and recreating the service account (new uid) invalidates the old token.
    admin
        .ok(&["-n", "team-a", "delete", "serviceaccount", "robot"])
        .await;
    admin
        .ok(&["-n", "team-a", "create", "serviceaccount", "robot"])
        .await;
    let err = robot.fails(&["-n", "team-a", "get", "configmaps"]).await;
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let review = token_review(&t.client, &token, &[]).await;
    assert_eq!(review["authenticated"], false, "{review}");
    assert!(
        review["error"]
            .as_str()
            .unwrap()
            .contains("does not match claim"),
        "{review}"
    );
    // A new token for the new service account works (the RoleBinding names it by name).
    let fresh = admin
        .ok(&["-n", "team-a", "create", "token", "robot"])
        .await
        .trim()
        .to_string();
    let robot2 = Kubectl::new(&token_kubeconfig(&t, "robot2", &fresh));
    robot2
        .ok(&["-n", "team-a", "get", "configmaps", "-o", "name"])
        .await;
}

#[tokio::test]
async fn secret_bound_token_stops_when_the_secret_is_deleted() {
    let t = common::start().await;
    let admin = Kubectl::new(&t.host.kubeconfig);
    admin.ok(&["create", "serviceaccount", "builder"]).await;
    admin
        .ok(&[
            "create",
            "secret",
            "generic",
            "build-key",
            "--from-literal=k=v",
        ])
        .await;
    let secret_uid = uid_of(&admin, &["get", "secret", "build-key"]).await;

    let err = admin
        .fails(&[
            "create",
            "token",
            "builder",
            "--bound-object-kind=Secret",
            "--bound-object-name=missing",
        ])
        .await;
    assert!(err.contains(r#"secrets "missing" not found"#), "{err}");
    let err = admin
        .fails(&[
            "create",
            "token",
            "builder",
            "--bound-object-kind=Secret",
            "--bound-object-name=build-key",
            "--bound-object-uid=not-the-uid",
        ])
        .await;
    assert!(err.contains("does not match the UID in record"), "{err}");

    let token = admin
        .ok(&[
            "create",
            "token",
            "builder",
            "--bound-object-kind=Secret",
            "--bound-object-name=build-key",
        ])
        .await
        .trim()
        .to_string();
    assert_eq!(
        claims(&token)["kubernetes.io"]["secret"],
        json!({"name": "build-key", "uid": secret_uid})
    );
    let builder = Kubectl::new(&token_kubeconfig(&t, "builder", &token));
    let me = builder.whoami().await.unwrap();
    assert_eq!(me["username"], "system:serviceaccount:default:builder");

    admin.ok(&["delete", "secret", "build-key"]).await;
    let err = builder.whoami().await.unwrap_err();
    assert!(err.contains(UNAUTHORIZED), "{err}");
    let review = token_review(&t.client, &token, &[]).await;
    assert_eq!(review["authenticated"], false, "{review}");
    assert_eq!(
        review["error"],
        "service account token has been invalidated"
    );
}

/// Legacy tokens (issue 18): a `kubernetes.io/service-account-token` Secret made before its
/// ServiceAccount is filled once the account exists, and its token authenticates as that
/// account until the Secret is deleted.
#[tokio::test]
async fn legacy_token_secrets_are_filled_and_authenticate_while_they_hold_the_token() {
    let t = common::start().await;
    let admin = Kubectl::new(&t.host.kubeconfig);
    let files = tempfile::tempdir().unwrap();
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "legacy-token", "namespace": "default",
                     "annotations": {"kubernetes.io/service-account.name": "legacy"}},
        "type": "kubernetes.io/service-account-token",
    });
    admin
        .ok(&[
            "apply",
            "-f",
            &common::write_manifest(files.path(), "secret.json", &secret),
        ])
        .await;
    admin.ok(&["create", "serviceaccount", "legacy"]).await;
    let sa_uid = uid_of(&admin, &["get", "serviceaccount", "legacy"]).await;
    let filled: Value = eventually(
        "the legacy token Secret filled",
        Duration::from_secs(20),
        || async {
            let out = admin
                .ok(&["get", "secret", "legacy-token", "-o", "json"])
                .await;
            let v: Value = serde_json::from_str(&out).unwrap();
            if v["data"]["token"].is_string() {
                Ok(v)
            } else {
                Err(format!("last {v}"))
            }
        },
    )
    .await;
    let decode = |field: &str| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(filled["data"][field].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(
        filled["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        json!(sa_uid)
    );
    assert_eq!(decode("namespace"), "default");
    assert!(decode("ca.crt").starts_with("-----BEGIN CERTIFICATE-----"));
    let token = decode("token");
    let c = claims(&token);
    assert_eq!(c["iss"], "kubernetes/serviceaccount");
    assert_eq!(
        c["kubernetes.io/serviceaccount/secret.name"],
        "legacy-token"
    );
    assert!(c.get("exp").is_none(), "legacy tokens do not expire: {c}");

    let legacy = Kubectl::new(&token_kubeconfig(&t, "legacy", &token));
    let me = legacy.whoami().await.unwrap();
    assert_eq!(me["username"], "system:serviceaccount:default:legacy");
    assert_eq!(me["uid"], json!(sa_uid));
    let review = token_review(&t.client, &token, &[]).await;
    assert_eq!(review["authenticated"], true, "{review}");

    admin.ok(&["delete", "secret", "legacy-token"]).await;
    let err = legacy.whoami().await.unwrap_err();
    assert!(err.contains(UNAUTHORIZED), "{err}");
}

#[tokio::test]
async fn discovery_lists_the_token_subresource() {
    let t = common::start().await;
    let req = http::Request::get("/api")
        .header(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .body(Vec::new())
        .unwrap();
    let doc: Value = serde_json::from_str(&t.client.request_text(req).await.unwrap()).unwrap();
    let sa = doc["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "serviceaccounts")
        .cloned()
        .unwrap();
    assert_eq!(
        sa["subresources"],
        json!([{
            "subresource": "token",
            "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
            "verbs": ["create"],
        }])
    );
}

#[tokio::test]
async fn tokens_outlive_a_restart_and_serve_the_issuer_documents() {
    let dir = tempfile::tempdir().unwrap();
    let start = |dir: PathBuf| async move {
        let mut opts = flotilla_host::HostOptions::new(dir);
        opts.secure_port = 0;
        flotilla_host::start(opts).await.unwrap()
    };
    let host = start(dir.path().to_path_buf()).await;
    let admin = Kubectl::new(&host.kubeconfig);
    admin.ok(&["create", "serviceaccount", "keeper"]).await;
    let token = admin
        .ok(&["create", "token", "keeper"])
        .await
        .trim()
        .to_string();
    // Stopping joins every background task, so nothing holds the database any more and the
    // second start opens the same data directory in this process.
    host.stop().await;
    let host = start(dir.path().to_path_buf()).await;
    let ca = std::fs::read_to_string(dir.path().join("pki/ca.crt")).unwrap();
    let path = dir.path().join("keeper.kubeconfig");
    flotilla_pki::Kubeconfig::new_token(&host.url(), "flotilla", "keeper", &ca, &token)
        .write(&path)
        .unwrap();
    let keeper = Kubectl::new(&path);
    let me = keeper.whoami().await.unwrap();
    assert_eq!(me["username"], "system:serviceaccount:default:keeper");
    // Service accounts may read the issuer's OIDC documents; the key set has the token's kid.
    let config: Value = serde_json::from_str(
        &keeper
            .ok(&["get", "--raw", "/.well-known/openid-configuration"])
            .await,
    )
    .unwrap();
    assert_eq!(
        config["issuer"],
        "https://kubernetes.default.svc.cluster.local"
    );
    let jwks: Value =
        serde_json::from_str(&keeper.ok(&["get", "--raw", "/openid/v1/jwks"]).await).unwrap();
    let header: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').next().unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(jwks["keys"][0]["kid"], header["kid"]);
    host.stop().await;
}
