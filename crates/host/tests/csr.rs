//! certificates.k8s.io/v1 CertificateSigningRequests on the in-process host, driven with the
//! real kubectl (`$KUBECTL` picks another version) and kube-rs: a client key and CSR made with
//! rcgen, `kubectl get csr` showing
//! it Pending, `kubectl certificate approve` and `deny`, the host's signer issuing a
//! certificate from the cluster CA that then authenticates as the CSR's CN and O, a bad
//! request answered 422, usages the signer refuses turning into a Failed condition, and an
//! approver without `approve` on the signer answered 403 until granted it.

// Helpers outside #[test] functions unwrap too: a failed call is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::path::PathBuf;
use std::time::Duration;

use base64::Engine;
use common::{Kubectl, TestHost, write_manifest};
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

const SIGNER: &str = "kubernetes.io/kube-apiserver-client";
const WAIT: Duration = Duration::from_secs(30);

/// A new ECDSA key (PKCS#8 PEM) and a PEM CSR for `CN=<cn>, O=<org>`.
fn key_and_request(cn: &str, org: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut params = rcgen::CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    let csr = params.serialize_request(&key).unwrap();
    (key.serialize_pem(), csr.pem().unwrap())
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn csr_manifest(name: &str, request_pem: &str, usages: &[&str]) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": b64(request_pem.as_bytes()),
            "signerName": SIGNER,
            "expirationSeconds": 86400,
            "usages": usages,
            // Ignored: the server records who really asks.
            "username": "somebody-else",
        },
    })
}

async fn get_csr(t: &TestHost, name: &str) -> CertificateSigningRequest {
    Api::<CertificateSigningRequest>::all(t.client.clone())
        .get(name)
        .await
        .unwrap()
}

/// Waits for the signer to write a certificate for `name`; returns it as PEM.
async fn issued_certificate(t: &TestHost, name: &str) -> String {
    eventually(&format!("certificate of {name}"), WAIT, || async {
        let csr = get_csr(t, name).await;
        let cert = csr.status?.certificate?;
        Some(String::from_utf8(cert.0).unwrap())
    })
    .await
}

fn condition_types(csr: &CertificateSigningRequest) -> Vec<String> {
    csr.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .map(|c| c.type_.clone())
        .collect()
}

/// A kubeconfig for the host presenting `cert_pem`/`key_pem`.
fn kubeconfig_with(t: &TestHost, user: &str, cert_pem: &str, key_pem: &str) -> PathBuf {
    let ca = std::fs::read_to_string(t.dir.path().join("pki/ca.crt")).unwrap();
    let path = t.dir.path().join(format!("{user}.kubeconfig"));
    flotilla_pki::Kubeconfig::new_client_cert(
        &t.host.url(),
        "flotilla",
        user,
        &ca,
        cert_pem,
        key_pem,
    )
    .write(&path)
    .unwrap();
    path
}

/// The row of `name` in `kubectl get csr` output, split in columns.
fn row_of(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in:\n{table}"))
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn an_approved_request_gets_a_certificate_that_authenticates_as_its_subject() {
    let t = common::start().await;
    let kubectl = Kubectl::new(&t.host.kubeconfig);
    let (key_pem, request_pem) = key_and_request("agent-7", "agents");
    let (_, other_request) = key_and_request("agent-8", "agents");
    let f7 = write_manifest(
        t.dir.path(),
        "agent-7.json",
        &csr_manifest(
            "agent-7",
            &request_pem,
            &["client auth", "digital signature"],
        ),
    );
    let f8 = write_manifest(
        t.dir.path(),
        "agent-8.json",
        &csr_manifest("agent-8", &other_request, &["client auth"]),
    );
    let out = kubectl.ok(&["create", "-f", &f7]).await;
    assert!(
        out.contains("certificatesigningrequest.certificates.k8s.io/agent-7 created"),
        "{out}"
    );
    kubectl.ok(&["create", "-f", &f8]).await;

    // The requester is whoever created it (the admin certificate), not what was sent.
    let csr = get_csr(&t, "agent-7").await;
    assert_eq!(csr.spec.username.as_deref(), Some("admin"));
    let groups = csr.spec.groups.clone().unwrap_or_default();
    assert!(groups.contains(&"system:masters".to_string()), "{groups:?}");
    assert!(condition_types(&csr).is_empty());

    let table = kubectl.ok(&["get", "csr"]).await;
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    let row = row_of(&table, "agent-7");
    assert_eq!(row[2..], [SIGNER, "admin", "24h", "Pending"], "{table}");

    // Deny one, then approve the other: once the approved one is issued, the signer has seen
    // the denial too (it handles changes in order), so the denied one must still have none.
    let out = kubectl.ok(&["certificate", "deny", "agent-8"]).await;
    assert!(
        out.contains("certificatesigningrequest.certificates.k8s.io/agent-8 denied"),
        "{out}"
    );
    let out = kubectl.ok(&["certificate", "approve", "agent-7"]).await;
    assert!(
        out.contains("certificatesigningrequest.certificates.k8s.io/agent-7 approved"),
        "{out}"
    );
    let cert_pem = issued_certificate(&t, "agent-7").await;
    let denied = get_csr(&t, "agent-8").await;
    assert_eq!(condition_types(&denied), ["Denied"]);
    let denied_status = denied.status.clone().unwrap();
    assert!(denied_status.certificate.is_none(), "{denied_status:?}");
    let c = &denied_status.conditions.unwrap()[0];
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref()),
        ("True", Some("KubectlDeny"))
    );
    assert!(c.last_update_time.is_some());

    let approved = get_csr(&t, "agent-7").await;
    assert_eq!(condition_types(&approved), ["Approved"]);
    let table = kubectl.ok(&["get", "csr"]).await;
    assert_eq!(row_of(&table, "agent-7")[5], "Approved,Issued", "{table}");
    assert_eq!(row_of(&table, "agent-8")[5], "Denied", "{table}");
    // Approving again changes nothing.
    let out = kubectl.ok(&["certificate", "approve", "agent-7"]).await;
    assert!(out.contains("approved"), "{out}");
    assert_eq!(condition_types(&get_csr(&t, "agent-7").await), ["Approved"]);

    // The certificate is for our key and authenticates as CN agent-7, group agents: a
    // SelfSubjectReview (what `kubectl auth whoami` posts; kube-rs here, as kubectl before
    // 1.28 asks for its beta version) and a request RBAC refuses naming that user.
    let agent_config = kubeconfig_with(&t, "agent-7", &cert_pem, &key_pem);
    let agent = Kubectl::new(&agent_config);
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(
            serde_json::to_vec(
                &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
            )
            .unwrap(),
        )
        .unwrap();
    let whoami: Value = common::client_for(&agent_config)
        .await
        .request(req)
        .await
        .unwrap();
    let info = &whoami["status"]["userInfo"];
    assert_eq!(info["username"], "agent-7", "{whoami}");
    let groups: Vec<&str> = info["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(groups, ["agents", "system:authenticated"], "{whoami}");
    let denied = agent.fails(&["get", "secrets", "-n", "default"]).await;
    assert!(
        denied.contains(r#"User "agent-7" cannot list resource "secrets""#),
        "{denied}"
    );
}

#[tokio::test]
async fn bad_requests_are_invalid_and_unfit_usages_fail_at_the_signer() {
    let t = common::start().await;
    let kubectl = Kubectl::new(&t.host.kubeconfig);

    let mut bad = csr_manifest("bad", "not a request", &["client auth"]);
    bad["spec"]["expirationSeconds"] = json!(60);
    let f = write_manifest(t.dir.path(), "bad.json", &bad);
    let err = kubectl.fails(&["create", "-f", &f]).await;
    assert!(
        err.contains(r#"The CertificateSigningRequest "bad" is invalid"#),
        "{err}"
    );
    assert!(
        err.contains(r#"spec.request: Invalid value: "<request data>": PEM block type must be CERTIFICATE REQUEST"#),
        "{err}"
    );
    assert!(
        err.contains("spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)"),
        "{err}"
    );
    // The status code itself, through kube-rs.
    let api = Api::<CertificateSigningRequest>::all(t.client.clone());
    let typed: CertificateSigningRequest = serde_json::from_value(bad).unwrap();
    match api.create(&PostParams::default(), &typed).await {
        Err(kube::Error::Api(s)) => assert_eq!((s.code, s.reason.as_str()), (422, "Invalid")),
        other => panic!("expected 422, got {other:?}"),
    }
    let listed = kubectl.ok(&["get", "csr", "-o", "name"]).await;
    assert!(listed.trim().is_empty(), "{listed}");

    // Valid for the API, but this signer issues client certificates only: Failed.
    let (_, request) = key_and_request("web", "servers");
    let typed: CertificateSigningRequest = serde_json::from_value(csr_manifest(
        "serving",
        &request,
        &["server auth", "client auth"],
    ))
    .unwrap();
    api.create(&PostParams::default(), &typed).await.unwrap();
    kubectl.ok(&["certificate", "approve", "serving"]).await;
    let failed = eventually("the Failed condition", WAIT, || async {
        let csr = get_csr(&t, "serving").await;
        csr.status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Failed")
    })
    .await;
    assert_eq!(failed.reason.as_deref(), Some("SignerValidationFailure"));
    assert_eq!(
        failed.message.as_deref(),
        Some("invalid usage for client certificate: server auth")
    );
    let csr = get_csr(&t, "serving").await;
    assert!(csr.status.unwrap().certificate.is_none());
    let table = kubectl.ok(&["get", "csr", "serving"]).await;
    assert_eq!(row_of(&table, "serving")[5], "Approved,Failed", "{table}");

    // The spec cannot be changed after create (kube keeps it silently).
    kubectl
        .ok(&[
            "patch",
            "csr",
            "serving",
            "--type=merge",
            "-p",
            r#"{"spec":{"usages":["client auth"]}}"#,
        ])
        .await;
    let usages = get_csr(&t, "serving").await.spec.usages.unwrap();
    assert_eq!(usages, ["server auth", "client auth"]);
}

/// Whether the SelfSubjectAccessReview of `client` allows `attrs`.
async fn can(client: &kube::Client, attrs: Value) -> bool {
    let body = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                      "spec": {"resourceAttributes": attrs}});
    let req = http::Request::post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let review: Value = client.request(req).await.unwrap();
    review["status"]["allowed"] == true
}

#[tokio::test]
async fn approving_needs_approve_on_the_signer() {
    let t = common::start().await;
    let kubectl = Kubectl::new(&t.host.kubeconfig);
    let (_, request) = key_and_request("agent-10", "agents");
    let f = write_manifest(
        t.dir.path(),
        "agent-10.json",
        &csr_manifest("agent-10", &request, &["client auth"]),
    );
    kubectl.ok(&["create", "-f", &f]).await;

    // carol may read CSRs and write their approval subresource, not approve for the signer.
    let ca = flotilla_pki::CertificateAuthority::load(&t.dir.path().join("pki")).unwrap();
    let carol_cert = ca.issue_client("carol", &[]).unwrap();
    let carol_config = kubeconfig_with(&t, "carol", &carol_cert.cert_pem, &carol_cert.key_pem);
    let carol = Kubectl::new(&carol_config);
    let carol_client = common::client_for(&carol_config).await;
    let role: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "csr-approval-writer"},
        "rules": [
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"], "verbs": ["update"]},
        ],
    }))
    .unwrap();
    Api::<ClusterRole>::all(t.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let bind = |name: &str, role: &str| -> ClusterRoleBinding {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "carol"}],
        }))
        .unwrap()
    };
    let bindings = Api::<ClusterRoleBinding>::all(t.client.clone());
    bindings
        .create(
            &PostParams::default(),
            &bind("carol-writer", "csr-approval-writer"),
        )
        .await
        .unwrap();
    let write_approval = json!({"verb": "update", "group": "certificates.k8s.io",
                                "resource": "certificatesigningrequests", "subresource": "approval"});
    let approve_signer = json!({"verb": "approve", "group": "certificates.k8s.io",
                                "resource": "signers", "name": SIGNER});
    eventually("carol may write approvals", WAIT, || async {
        can(&carol_client, write_approval.clone())
            .await
            .then_some(())
    })
    .await;
    assert!(!can(&carol_client, approve_signer.clone()).await);

    let err = carol.fails(&["certificate", "approve", "agent-10"]).await;
    assert!(
        err.contains(r#"certificatesigningrequests.certificates.k8s.io "agent-10" is forbidden: user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client""#),
        "{err}"
    );
    assert!(condition_types(&get_csr(&t, "agent-10").await).is_empty());

    // Granted kube's approver role for this signer, she may.
    bindings
        .create(
            &PostParams::default(),
            &bind(
                "carol-approver",
                "system:certificates.k8s.io:kube-apiserver-client-approver",
            ),
        )
        .await
        .unwrap();
    eventually("carol may approve for the signer", WAIT, || async {
        can(&carol_client, approve_signer.clone())
            .await
            .then_some(())
    })
    .await;
    let out = carol.ok(&["certificate", "approve", "agent-10"]).await;
    assert!(out.contains("agent-10 approved"), "{out}");
    issued_certificate(&t, "agent-10").await;
}
