//! Authentication and the review APIs, driven in-process with kube-rs over real TLS where
//! kubectl cannot reach:
//!
//! - front-proxy request headers count only on a connection authenticated by the
//!   front-proxy-client certificate (and not by the admin certificate, another certificate of
//!   the request-header CA, or no certificate), and a front proxy must name the user;
//! - client certificates of an unknown CA, expired or not yet valid give no access, while the
//!   same identity issued properly does;
//! - SubjectAccessReview (as an extension server posts it), LocalSubjectAccessReview and
//!   SelfSubjectAccessReview agree with each other and with the answers kube-apiserver gives
//!   for a user bound to `view` in one namespace; TokenReview checks static tokens.

// Helpers outside #[test] functions unwrap too: a failed call is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{RoleBinding, RoleRef, Subject};
use kube::Client;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const SELF_REVIEW: &str = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
const TOKEN_REVIEW: &str = "/apis/authentication.k8s.io/v1/tokenreviews";
const SAR: &str = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
const SSAR: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

/// How a call ended: a 2xx body, an API error status, or no HTTP answer at all (TLS
/// handshake refused, connection reset).
#[derive(Debug)]
enum Outcome {
    Ok(Value),
    Status(u16, String),
    Transport(String),
}

impl Outcome {
    fn ok(self, what: &str) -> Value {
        match self {
            Outcome::Ok(v) => v,
            other => panic!("{what}: expected success, got {other:?}"),
        }
    }

    fn status(&self) -> Option<u16> {
        match self {
            Outcome::Ok(_) => Some(200),
            Outcome::Status(code, _) => Some(*code),
            Outcome::Transport(_) => None,
        }
    }
}

/// Who a client presents itself as.
enum Identity<'a> {
    /// The kubeconfig's own (the admin client certificate).
    Kubeconfig,
    /// A client certificate and key in PEM files.
    Cert(&'a Path, &'a Path),
    /// A bearer token and no certificate.
    Token(&'a str),
    /// Nothing at all.
    Anonymous,
}

/// A kube-rs client for the host's kubeconfig (server URL, CA) with its identity replaced.
async fn client_as(kubeconfig: &Path, identity: Identity<'_>) -> Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    // The kube-rs client retries and waits; a refused handshake should fail fast instead.
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(10));
    let auth = &mut config.auth_info;
    match identity {
        Identity::Kubeconfig => {}
        Identity::Cert(cert, key) => {
            auth.client_certificate_data = None;
            auth.client_key_data = None;
            auth.client_certificate = Some(cert.to_string_lossy().into_owned());
            auth.client_key = Some(key.to_string_lossy().into_owned());
        }
        Identity::Token(token) => {
            auth.client_certificate_data = None;
            auth.client_key_data = None;
            auth.client_certificate = None;
            auth.client_key = None;
            auth.token = Some(token.to_string().into());
        }
        Identity::Anonymous => {
            auth.client_certificate_data = None;
            auth.client_key_data = None;
            auth.client_certificate = None;
            auth.client_key = None;
        }
    }
    Client::try_from(config).unwrap()
}

/// POSTs `body` to `path` with extra request headers (repeatable names are appended).
async fn post(client: &Client, path: &str, body: &Value, headers: &[(&str, &str)]) -> Outcome {
    let mut req = http::Request::post(path).header("content-type", "application/json");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(serde_json::to_vec(body).unwrap()).unwrap();
    match client.request_text(req).await {
        Ok(text) => Outcome::Ok(serde_json::from_str(&text).unwrap()),
        Err(kube::Error::Api(status)) => Outcome::Status(status.code, status.message),
        Err(e) => Outcome::Transport(format!("{e:?}")),
    }
}

/// GETs `path` with extra request headers.
async fn get(client: &Client, path: &str, headers: &[(&str, &str)]) -> Outcome {
    let mut req = http::Request::get(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    match client.request_text(req.body(Vec::new()).unwrap()).await {
        Ok(text) => Outcome::Ok(serde_json::from_str(&text).unwrap()),
        Err(kube::Error::Api(status)) => Outcome::Status(status.code, status.message),
        Err(e) => Outcome::Transport(format!("{e:?}")),
    }
}

fn self_review_body() -> Value {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
}

/// `status.userInfo` of a SelfSubjectReview posted by `client` with `headers`.
async fn whoami(client: &Client, headers: &[(&str, &str)]) -> Outcome {
    match post(client, SELF_REVIEW, &self_review_body(), headers).await {
        Outcome::Ok(v) => Outcome::Ok(v["status"]["userInfo"].clone()),
        other => other,
    }
}

fn pki_dir(t: &common::TestHost) -> PathBuf {
    t.dir.path().join("pki")
}

fn write_pem_pair(dir: &Path, name: &str, cert_pem: &str, key_pem: &str) -> (PathBuf, PathBuf) {
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    std::fs::write(&cert, cert_pem).unwrap();
    std::fs::write(&key, key_pem).unwrap();
    (cert, key)
}

/// Asserts a call gave no access: the handshake was refused (no HTTP answer) or 401.
fn assert_no_access(outcome: &Outcome, what: &str) {
    match outcome {
        // rustls reports the server's refusal as a TLS alert (bad certificate, expired...).
        Outcome::Transport(e) if e.contains("AlertReceived") => {}
        Outcome::Status(401, _) => {}
        other => panic!("{what}: expected a refused handshake or 401, got {other:?}"),
    }
}

#[tokio::test]
async fn front_proxy_headers_are_believed_only_from_the_front_proxy() {
    let t = common::start().await;
    let pki = pki_dir(&t);
    let proxy_cert = pki.join("front-proxy-client.crt");
    let proxy_key = pki.join("front-proxy-client.key");
    let proxy = client_as(&t.host.kubeconfig, Identity::Cert(&proxy_cert, &proxy_key)).await;
    let carol = [
        ("X-Remote-User", "carol"),
        ("X-Remote-Group", "g1"),
        ("X-Remote-Group", "g2"),
        ("X-Remote-Extra-Scopes", "read"),
    ];

    let info = whoami(&proxy, &carol).await.ok("front proxy naming carol");
    assert_eq!(info["username"], "carol", "{info}");
    let groups: Vec<&str> = info["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(groups.contains(&"g1") && groups.contains(&"g2"), "{info}");
    assert!(groups.contains(&"system:authenticated"), "{info}");
    assert_eq!(info["extra"]["scopes"], json!(["read"]), "{info}");
    // The front proxy's own name never leaks into the identity.
    assert!(!info.to_string().contains("front-proxy-client"), "{info}");

    // carol is authorized as carol: nothing grants her secrets; the admin can be named
    // through the proxy and then is authorized as the admin group says.
    let denied = get(&proxy, "/api/v1/namespaces/default/secrets", &carol).await;
    match &denied {
        Outcome::Status(403, msg) => assert!(
            msg.contains(r#"User "carol" cannot list resource "secrets""#),
            "{msg}"
        ),
        other => panic!("carol listing secrets: expected 403, got {other:?}"),
    }
    let as_admin = [
        ("X-Remote-User", "admin"),
        ("X-Remote-Group", "system:masters"),
    ];
    assert!(matches!(
        get(&proxy, "/api/v1/namespaces/default/secrets", &as_admin).await,
        Outcome::Ok(_)
    ));

    // The same headers from an ordinary client certificate are a forgery: 401, not admin.
    let admin = client_as(&t.host.kubeconfig, Identity::Kubeconfig).await;
    let who = whoami(&admin, &[]).await.ok("admin without headers");
    assert_eq!(who["username"], "admin", "{who}");
    let forged = whoami(&admin, &carol).await;
    assert_eq!(
        forged.status(),
        Some(401),
        "admin cert + X-Remote-User: {forged:?}"
    );
    // Without a certificate at all: 401.
    let anonymous = client_as(&t.host.kubeconfig, Identity::Anonymous).await;
    let out = whoami(&anonymous, &carol).await;
    assert_eq!(out.status(), Some(401), "no cert + X-Remote-User: {out:?}");
    let out = whoami(&anonymous, &[]).await;
    assert_eq!(out.status(), Some(401), "no cert, no headers: {out:?}");
    // The front proxy naming nobody is nobody: 401.
    let out = whoami(&proxy, &[]).await;
    assert_eq!(
        out.status(),
        Some(401),
        "front proxy without X-Remote-User: {out:?}"
    );
    let out = whoami(&proxy, &[("X-Remote-Group", "system:masters")]).await;
    assert_eq!(
        out.status(),
        Some(401),
        "front proxy with only a group: {out:?}"
    );
    // Another certificate of the request-header CA whose CN is not an allowed proxy name
    // may not assert users either (nor is it a user: the client CA did not issue it).
    let fp_ca = flotilla_pki::CertificateAuthority::load_as(&pki, "front-proxy-ca").unwrap();
    let rogue = fp_ca.issue_client("rogue-proxy", &[]).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let (rc, rk) = write_pem_pair(scratch.path(), "rogue", &rogue.cert_pem, &rogue.key_pem);
    let rogue = client_as(&t.host.kubeconfig, Identity::Cert(&rc, &rk)).await;
    assert_no_access(&whoami(&rogue, &carol).await, "rogue proxy + X-Remote-User");
    assert_no_access(&whoami(&rogue, &[]).await, "rogue proxy cert alone");
    t.host.stop().await;
}

/// Issues a client certificate for `user`/`groups` signed by `ca` with the given validity.
fn issue_with_validity(
    ca: &flotilla_pki::CertificateAuthority,
    user: &str,
    groups: &[&str],
    not_before: (i32, u8, u8),
    not_after: (i32, u8, u8),
) -> (String, String) {
    let ca_key = rcgen::KeyPair::from_pem(ca.key_pem()).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(ca.cert_pem(), ca_key).unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    let mut dn = rcgen::DistinguishedName::new();
    dn.push(rcgen::DnType::CommonName, user);
    for g in groups {
        dn.push(rcgen::DnType::OrganizationName, *g);
    }
    params.distinguished_name = dn;
    params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
    params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    (cert.pem(), key.serialize_pem())
}

#[tokio::test]
async fn certificates_of_unknown_cas_or_outside_their_validity_give_no_access() {
    let t = common::start().await;
    let pki = pki_dir(&t);
    let scratch = tempfile::tempdir().unwrap();
    let masters = vec!["system:masters".to_string()];

    // Control: an admin certificate properly issued by the cluster CA works.
    let ca = flotilla_pki::CertificateAuthority::load(&pki).unwrap();
    let good = ca.issue_client("second-admin", &masters).unwrap();
    let (gc, gk) = write_pem_pair(scratch.path(), "good", &good.cert_pem, &good.key_pem);
    let client = client_as(&t.host.kubeconfig, Identity::Cert(&gc, &gk)).await;
    let info = whoami(&client, &[]).await.ok("cluster-CA certificate");
    assert_eq!(info["username"], "second-admin", "{info}");
    assert!(matches!(
        get(&client, "/api/v1/namespaces/default/secrets", &[]).await,
        Outcome::Ok(_)
    ));

    // The same identity from a CA the server never heard of.
    let stranger_ca = flotilla_pki::CertificateAuthority::generate("flotilla-ca").unwrap();
    let forged = stranger_ca.issue_client("admin", &masters).unwrap();
    let (fc, fk) = write_pem_pair(scratch.path(), "forged", &forged.cert_pem, &forged.key_pem);
    let client = client_as(&t.host.kubeconfig, Identity::Cert(&fc, &fk)).await;
    assert_no_access(&whoami(&client, &[]).await, "unknown-CA certificate");
    assert_no_access(
        &get(&client, "/api/v1/namespaces/default/secrets", &[]).await,
        "unknown-CA certificate listing secrets",
    );

    // Control for the hand-built certificates: currently valid ones are accepted...
    let (vc, vk) = issue_with_validity(
        &ca,
        "timely",
        &["system:masters"],
        (2020, 1, 1),
        (2090, 1, 1),
    );
    let (vc, vk) = write_pem_pair(scratch.path(), "valid", &vc, &vk);
    let client = client_as(&t.host.kubeconfig, Identity::Cert(&vc, &vk)).await;
    let info = whoami(&client, &[])
        .await
        .ok("hand-built valid certificate");
    assert_eq!(info["username"], "timely", "{info}");
    // ...expired ones are not...
    let (ec, ek) = issue_with_validity(
        &ca,
        "admin",
        &["system:masters"],
        (2020, 1, 1),
        (2021, 1, 1),
    );
    let (ec, ek) = write_pem_pair(scratch.path(), "expired", &ec, &ek);
    let client = client_as(&t.host.kubeconfig, Identity::Cert(&ec, &ek)).await;
    assert_no_access(&whoami(&client, &[]).await, "expired certificate");
    // ...nor ones not valid yet.
    let (nc, nk) = issue_with_validity(
        &ca,
        "admin",
        &["system:masters"],
        (2080, 1, 1),
        (2090, 1, 1),
    );
    let (nc, nk) = write_pem_pair(scratch.path(), "future", &nc, &nk);
    let client = client_as(&t.host.kubeconfig, Identity::Cert(&nc, &nk)).await;
    assert_no_access(&whoami(&client, &[]).await, "not-yet-valid certificate");
    t.host.stop().await;
}

/// One access question about alice (bound to `view` in `dev`) and kube-apiserver's answer;
/// the same cases as `kubectl auth can-i` in e2e/tests/crds_rbac.rs.
struct Case {
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    subresource: &'static str,
    namespace: &'static str,
    name: &'static str,
    allowed: bool,
}

const fn case(
    verb: &'static str,
    group: &'static str,
    resource: &'static str,
    namespace: &'static str,
    allowed: bool,
) -> Case {
    Case {
        verb,
        group,
        resource,
        subresource: "",
        namespace,
        name: "",
        allowed,
    }
}

const ALICE_CASES: &[Case] = &[
    case("get", "", "configmaps", "dev", true),
    case("list", "", "configmaps", "dev", true),
    case("watch", "", "configmaps", "dev", true),
    case("create", "", "configmaps", "dev", false),
    case("delete", "", "configmaps", "dev", false),
    case("list", "", "configmaps", "prod", false),
    case("get", "", "secrets", "dev", false),
    case("list", "", "secrets", "dev", false),
    case("list", "apps", "deployments", "dev", true),
    case("list", "apps", "deployments", "prod", false),
    case("patch", "apps", "deployments", "dev", false),
    Case {
        subresource: "scale",
        ..case("get", "apps", "deployments", "dev", true)
    },
    Case {
        subresource: "scale",
        ..case("update", "apps", "deployments", "dev", false)
    },
    case(
        "list",
        "rbac.authorization.k8s.io",
        "rolebindings",
        "dev",
        false,
    ),
    case("list", "", "namespaces", "", false),
    Case {
        name: "dev",
        ..case("get", "", "namespaces", "dev", true)
    },
    case(
        "list",
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "",
        false,
    ),
    case(
        "create",
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "",
        true,
    ),
];

fn resource_attributes(c: &Case) -> Value {
    json!({
        "verb": c.verb,
        "group": c.group,
        "resource": c.resource,
        "subresource": c.subresource,
        "namespace": c.namespace,
        "name": c.name,
    })
}

fn sar(user: Option<&str>, groups: &[&str], attributes: Value) -> Value {
    let mut spec = json!({"groups": groups});
    if let Some(u) = user {
        spec["user"] = json!(u);
    }
    for (k, v) in attributes.as_object().unwrap() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
}

fn allowed(review: &Value) -> bool {
    review["status"]["allowed"]
        .as_bool()
        .unwrap_or_else(|| panic!("no status.allowed in {review}"))
}

const ALICE_GROUPS: &[&str] = &["devs", "system:authenticated"];

#[tokio::test]
async fn access_and_token_reviews() {
    let tokens_dir = tempfile::tempdir().unwrap();
    let tokens = tokens_dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alicetoken,alice,u-alice,\"devs\"\n").unwrap();
    let t = common::start_with(|o| o.token_auth_file = Some(tokens.clone())).await;
    let admin = t.client.clone();
    for ns in ["dev", "prod"] {
        let mut n = Namespace::default();
        n.metadata.name = Some(ns.into());
        Api::<Namespace>::all(admin.clone())
            .create(&PostParams::default(), &n)
            .await
            .unwrap();
    }
    let mut rb = RoleBinding {
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".into(),
            kind: "ClusterRole".into(),
            name: "view".into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "User".into(),
            name: "alice".into(),
            namespace: None,
        }]),
        ..RoleBinding::default()
    };
    rb.metadata.name = Some("alice-view".into());
    Api::<RoleBinding>::namespaced(admin.clone(), "dev")
        .create(&PostParams::default(), &rb)
        .await
        .unwrap();

    // The authorizer indexes bindings from a watch; wait for this one.
    let first = &ALICE_CASES[1];
    eventually(
        "alice's binding in effect",
        Duration::from_secs(15),
        || async {
            let review = post(
                &admin,
                SAR,
                &sar(
                    Some("alice"),
                    ALICE_GROUPS,
                    json!({"resourceAttributes": resource_attributes(first)}),
                ),
                &[],
            )
            .await
            .ok("SAR");
            if allowed(&review) {
                Ok(())
            } else {
                Err(format!("last review {review}"))
            }
        },
    )
    .await;

    let alice = client_as(&t.host.kubeconfig, Identity::Token("alicetoken")).await;
    for c in ALICE_CASES {
        let what = format!(
            "{} {}/{} {} ns={:?} name={:?}",
            c.verb, c.group, c.resource, c.subresource, c.namespace, c.name
        );
        let attrs = json!({"resourceAttributes": resource_attributes(c)});
        // As an extension server asks: SubjectAccessReview by the admin.
        let review = post(
            &admin,
            SAR,
            &sar(Some("alice"), ALICE_GROUPS, attrs.clone()),
            &[],
        )
        .await
        .ok(&what);
        assert_eq!(allowed(&review), c.allowed, "SAR {what}: {review}");
        assert_eq!(review["kind"], "SubjectAccessReview", "{review}");
        // As kubectl auth can-i asks: alice's own SelfSubjectAccessReview.
        let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attrs});
        let review = post(&alice, SSAR, &body, &[]).await.ok(&what);
        assert_eq!(allowed(&review), c.allowed, "SSAR {what}: {review}");
        // Namespaced questions also as a LocalSubjectAccessReview in that namespace.
        if !c.namespace.is_empty() {
            let path = format!(
                "/apis/authorization.k8s.io/v1/namespaces/{}/localsubjectaccessreviews",
                c.namespace
            );
            let mut body = sar(Some("alice"), ALICE_GROUPS, attrs.clone());
            body["kind"] = json!("LocalSubjectAccessReview");
            body["metadata"] = json!({"namespace": c.namespace});
            let review = post(&admin, &path, &body, &[]).await.ok(&what);
            assert_eq!(allowed(&review), c.allowed, "LSAR {what}: {review}");
        }
    }
    // A LocalSubjectAccessReview may not ask about another namespace than its own.
    let mut body = sar(
        Some("alice"),
        ALICE_GROUPS,
        json!({"resourceAttributes": resource_attributes(&ALICE_CASES[0])}),
    );
    body["kind"] = json!("LocalSubjectAccessReview");
    let out = post(
        &admin,
        "/apis/authorization.k8s.io/v1/namespaces/prod/localsubjectaccessreviews",
        &body,
        &[],
    )
    .await;
    assert_eq!(out.status(), Some(400), "{out:?}");

    // Non-resource paths.
    for (path, expected) in [("/healthz", true), ("/api", true), ("/metrics", false)] {
        let attrs = json!({"nonResourceAttributes": {"verb": "get", "path": path}});
        let review = post(&admin, SAR, &sar(Some("alice"), ALICE_GROUPS, attrs), &[])
            .await
            .ok(path);
        assert_eq!(allowed(&review), expected, "SAR get {path}: {review}");
    }
    // The binding names the user, not her group: the group alone gets nothing.
    let attrs = json!({"resourceAttributes": resource_attributes(&ALICE_CASES[0])});
    let review = post(&admin, SAR, &sar(None, &["devs"], attrs.clone()), &[])
        .await
        .ok("group-only SAR");
    assert!(!allowed(&review), "{review}");
    // Another user gets nothing from alice's binding.
    let review = post(
        &admin,
        SAR,
        &sar(Some("mallory"), ALICE_GROUPS, attrs.clone()),
        &[],
    )
    .await
    .ok("mallory SAR");
    assert!(!allowed(&review), "{review}");
    // A review naming nobody is invalid.
    let out = post(&admin, SAR, &sar(None, &[], attrs.clone()), &[]).await;
    assert_eq!(out.status(), Some(422), "{out:?}");
    // alice herself may not ask about others.
    let out = post(&alice, SAR, &sar(Some("alice"), ALICE_GROUPS, attrs), &[]).await;
    match &out {
        Outcome::Status(403, msg) => assert!(
            msg.contains(r#"User "alice" cannot create resource "subjectaccessreviews""#),
            "{msg}"
        ),
        other => panic!("alice posting a SAR: expected 403, got {other:?}"),
    }

    // TokenReview.
    let review = |token: &str| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}});
    let out = post(&admin, TOKEN_REVIEW, &review("alicetoken"), &[])
        .await
        .ok("TokenReview alicetoken");
    let status = &out["status"];
    assert_eq!(status["authenticated"], true, "{out}");
    assert_eq!(status["user"]["username"], "alice", "{out}");
    assert_eq!(status["user"]["uid"], "u-alice", "{out}");
    assert!(
        status["user"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("devs")),
        "{out}"
    );
    for bad in ["not-a-token", "alicetoken2", ""] {
        let out = post(&admin, TOKEN_REVIEW, &review(bad), &[])
            .await
            .ok("TokenReview bad token");
        assert_eq!(
            out["status"]["authenticated"], false,
            "token {bad:?}: {out}"
        );
        assert!(
            out["status"]
                .get("user")
                .is_none_or(|u| u.get("username").is_none()),
            "{out}"
        );
    }
    // Reviews are not stored: there is nothing to list.
    let out = get(&admin, TOKEN_REVIEW, &[]).await;
    assert_eq!(out.status(), Some(405), "{out:?}");
    // And the token works as a credential in its own right.
    let info = whoami(&alice, &[]).await.ok("alice whoami");
    assert_eq!(info["username"], "alice", "{info}");
    assert_eq!(info["uid"], "u-alice", "{info}");
    let stranger = client_as(&t.host.kubeconfig, Identity::Token("not-a-token")).await;
    assert_eq!(whoami(&stranger, &[]).await.status(), Some(401));
    t.host.stop().await;
}
