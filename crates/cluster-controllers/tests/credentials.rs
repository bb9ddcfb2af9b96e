//! Where a member's credentials may go, with the controllers running against real servers
//! (the host and the aggregated server in process, as `local-up` wires them):
//!
//! - a user allowed to write Clusters but not to read a Secret cannot make a Cluster name
//!   that Secret, neither by creating one nor by moving a joined Cluster's endpoint (403
//!   naming the Secret and the permission), while a Secret the user may read can be named;
//! - a Cluster naming credentials with a plain `http://` endpoint is refused (422), and one
//!   stored anyway (written past the API, as an older version could have) is never contacted:
//!   it turns Ready=False saying why;
//! - a member that answers with a redirect is not followed by the status controller, and the
//!   `proxy` subresource answers 502 instead of passing the redirect to the caller;
//! - a member that refuses the credentials (401) leaves its Cluster Ready=False with
//!   Karmada's reason, the message saying the credentials were refused;
//! - a member-sim joined the way `karmadactl join` joins a cluster (a ServiceAccount token
//!   Secret filled by the member's token controller) turns Ready.
//!
//! Each endpoint that must stay untouched is a [`Trap`], which records every connection.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use flotilla_cluster_controllers::{ControllerManager, ControllerManagerOptions};
use flotilla_karmada_api::Cluster;
use flotilla_membership::{Member, MemberCredentials};
use flotilla_testenv::{ControlPlane, TlsServer, Trap};
use flotilla_testwait::eventually;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(30);

/// The control plane, the controllers, and one joined member (`edge`) that is healthy.
struct Env {
    plane: ControlPlane,
    manager: ControllerManager,
    edge: TlsServer,
}

impl Env {
    async fn start() -> Env {
        let plane = ControlPlane::start().await.unwrap();
        let edge =
            flotilla_testenv::serve_tls(Router::new().route("/readyz", get(|| async { "ok" })))
                .await
                .unwrap();
        join(&plane.client, "edge", &edge).await;
        let options = ControllerManagerOptions {
            status_period: Duration::from_millis(200),
            failure_threshold: Duration::ZERO,
            success_threshold: Duration::ZERO,
            probe_timeout: Duration::from_secs(1),
            ..Default::default()
        };
        let manager = flotilla_cluster_controllers::spawn(plane.client.clone(), options);
        Env {
            plane,
            manager,
            edge,
        }
    }

    fn clusters(&self) -> Api<Cluster> {
        Api::all(self.plane.client.clone())
    }

    /// The Ready condition of `name` once it says `status` and `reason`; its message.
    async fn ready_is(&self, name: &str, status: &str, reason: &str) -> String {
        let clusters = self.clusters();
        eventually(
            &format!("{name} Ready={status} ({reason})"),
            WAIT,
            || async {
                let cluster = clusters.get(name).await.ok()?;
                let ready = cluster
                    .status?
                    .conditions
                    .into_iter()
                    .find(|c| c.type_ == "Ready")?;
                (ready.status == status && ready.reason == reason).then_some(ready.message)
            },
        )
        .await
    }

    async fn stop(self) {
        self.manager.stop().await;
        self.edge.stop().await;
        self.plane.stop().await;
    }
}

/// Joins `member` as `name` with a token, as an admin does.
async fn join(host: &kube::Client, name: &str, member: &TlsServer) {
    let credentials = MemberCredentials::token(format!("{name}-token"), &member.ca_pem);
    flotilla_membership::join(host, &Member::new(name, &member.url, credentials))
        .await
        .unwrap();
}

fn cluster(name: &str, spec: Value) -> Cluster {
    serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": spec,
    }))
    .unwrap()
}

fn api_error(result: Result<impl std::fmt::Debug, kube::Error>) -> kube::core::Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// `GET clusters/{cluster}/proxy{path}`, which must fail: its Status.
async fn proxy_get(client: &kube::Client, cluster: &str, path: &str) -> kube::core::Status {
    let uri = format!("/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy{path}");
    api_error(
        client
            .request_text(http::Request::get(uri).body(Vec::new()).unwrap())
            .await,
    )
}

async fn apply<K>(api: &Api<K>, obj: Value)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    api.patch(
        &name,
        &PatchParams::apply("test").force(),
        &Patch::Apply(obj),
    )
    .await
    .unwrap();
}

/// bob: may write Clusters, and read the one Secret `tenant/bob-creds`.
async fn grant_bob(admin: &kube::Client) {
    apply(
        &Api::<Namespace>::all(admin.clone()),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant"}}),
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "tenant");
    for name in ["bob-creds", "tenant-sa-token"] {
        apply(
            &secrets,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                "stringData": {"token": format!("{name}-value")}}),
        )
        .await;
    }
    apply(
        &Api::<ClusterRole>::all(admin.clone()),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "cluster-writer"},
            "rules": [{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"],
                "verbs": ["get", "list", "watch", "create", "update", "patch"]}]}),
    )
    .await;
    apply(
        &Api::<ClusterRoleBinding>::all(admin.clone()),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "bob-cluster-writer"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                "name": "cluster-writer"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                "name": "bob"}]}),
    )
    .await;
    apply(
        &Api::<Role>::namespaced(admin.clone(), "tenant"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "bob-creds-reader"},
            "rules": [{"apiGroups": [""], "resources": ["secrets"],
                "resourceNames": ["bob-creds"], "verbs": ["get"]}]}),
    )
    .await;
    apply(
        &Api::<RoleBinding>::namespaced(admin.clone(), "tenant"),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "bob-creds-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                "name": "bob-creds-reader"},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io",
                "name": "bob"}]}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_writer_cannot_send_a_secret_it_may_not_read() {
    let env = Env::start().await;
    env.ready_is("edge", "True", "ClusterReady").await;
    grant_bob(&env.plane.client).await;
    let trap = Trap::start().await.unwrap();
    let trapped = format!("https://127.0.0.1:{}", trap.port);
    let bob = flotilla_testenv::client_as(&env.plane.host.kubeconfig, "bob", &[], true)
        .await
        .unwrap();
    let bobs_clusters: Api<Cluster> = Api::all(bob.clone());

    // Creating a Cluster that names someone else's credentials: a member's in
    // karmada-cluster, a tenant's Secret, through either reference.
    for (field, namespace, name) in [
        ("secretRef", "karmada-cluster", "edge"),
        ("secretRef", "tenant", "tenant-sa-token"),
        ("impersonatorSecretRef", "karmada-cluster", "edge"),
    ] {
        let evil = cluster(
            "evil",
            json!({"syncMode": "Push", "apiEndpoint": trapped,
                "insecureSkipTLSVerification": true,
                field: {"namespace": namespace, "name": name}}),
        );
        let status = api_error(bobs_clusters.create(&PostParams::default(), &evil).await);
        assert_eq!((status.code, status.reason.as_str()), (403, "Forbidden"));
        for part in [
            format!("spec.{field} names the Secret \"{namespace}/{name}\""),
            "user \"bob\" may not get it".to_string(),
            format!("get secrets \"{name}\" in the namespace \"{namespace}\""),
        ] {
            assert!(
                status.message.contains(&part),
                "{part:?} in {}",
                status.message
            );
        }
    }
    assert!(env.clusters().get_opt("evil").await.unwrap().is_none());

    // Moving a joined Cluster, whose credentials bob may not read, somewhere else.
    for change in [
        json!({"spec": {"apiEndpoint": trapped}}),
        json!({"spec": {"insecureSkipTLSVerification": true}}),
        json!({"spec": {"proxyURL": format!("http://127.0.0.1:{}", trap.port)}}),
    ] {
        let status = api_error(
            bobs_clusters
                .patch("edge", &PatchParams::default(), &Patch::Merge(&change))
                .await,
        );
        assert_eq!(status.code, 403, "{change}: {}", status.message);
        assert!(
            status.message.contains("\"karmada-cluster/edge\""),
            "{}",
            status.message
        );
    }
    let edge = env.clusters().get("edge").await.unwrap();
    assert_eq!(
        edge.spec.api_endpoint.as_deref(),
        Some(env.edge.url.as_str())
    );
    assert_eq!(edge.spec.insecure_skip_tls_verification, None);
    // What does not move the credentials stays bob's to change.
    bobs_clusters
        .patch(
            "edge",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"owner": "bob"}}})),
        )
        .await
        .unwrap();

    // A Secret bob may read, he may name; the Cluster is then probed like any other. At an
    // unused loopback port it turns not reachable: the controllers have seen a Cluster
    // created after every refused one.
    let unused = flotilla_testenv::unused_port().unwrap();
    let own = cluster(
        "bobs",
        json!({"syncMode": "Push", "apiEndpoint": format!("https://127.0.0.1:{unused}"),
            "secretRef": {"namespace": "tenant", "name": "bob-creds"}}),
    );
    bobs_clusters
        .create(&PostParams::default(), &own)
        .await
        .unwrap();
    env.ready_is("bobs", "False", "ClusterNotReachable").await;

    // Credentials over plain HTTP are refused for everyone, admins included.
    let plain = cluster(
        "plain",
        json!({"syncMode": "Push", "apiEndpoint": format!("http://127.0.0.1:{}", trap.port),
            "secretRef": {"namespace": "karmada-cluster", "name": "edge"}}),
    );
    let status = api_error(env.clusters().create(&PostParams::default(), &plain).await);
    assert_eq!((status.code, status.reason.as_str()), (422, "Invalid"));
    let causes = status.details.map(|d| d.causes).unwrap_or_default();
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0].field, "spec.apiEndpoint");

    trap.assert_untouched();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_cluster_with_credentials_over_plain_http_is_never_contacted() {
    let env = Env::start().await;
    let trap = Trap::start().await.unwrap();
    // Stored past the API (validation refuses it now), as an older version could have.
    let def = flotilla_aggregated::cluster::cluster_resource();
    let key = flotilla_generic_store::objects::object_key(&def, None, "plain");
    env.plane
        .aggregated
        .server
        .storage
        .create(
            &key,
            json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                "metadata": {"name": "plain", "uid": "5b3f6c1e-0000-4000-8000-000000000001",
                    "creationTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"syncMode": "Push",
                    "apiEndpoint": format!("http://127.0.0.1:{}", trap.port),
                    "secretRef": {"namespace": "karmada-cluster", "name": "edge"}}}),
        )
        .await
        .unwrap();
    let message = env.ready_is("plain", "False", "InsecureEndpoint").await;
    assert!(
        message.contains("plain HTTP") && message.contains("only over TLS"),
        "{message}"
    );
    // The proxy refuses it too (asked once: kube-rs would retry a 503 for minutes).
    let once = flotilla_testenv::client_with(&env.plane.host.kubeconfig, None, |c| {
        c.default_retry = false
    })
    .await
    .unwrap();
    let status = proxy_get(&once, "plain", "/api").await;
    assert_eq!(status.code, 503, "{}", status.message);
    assert!(status.message.contains("plain HTTP"), "{}", status.message);
    trap.assert_untouched();
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_members_redirect_is_neither_followed_nor_passed_on() {
    let env = Env::start().await;
    let trap = Trap::start().await.unwrap();
    let elsewhere = format!("https://127.0.0.1:{}/stolen", trap.port);
    let redirector = flotilla_testenv::serve_tls(Router::new().fallback(move || {
        let elsewhere = elsewhere.clone();
        async move { (StatusCode::FOUND, [(header::LOCATION, elsewhere)]) }
    }))
    .await
    .unwrap();
    join(&env.plane.client, "redirector", &redirector).await;
    // The status controller's probe got the redirect as its answer: not healthy.
    env.ready_is("redirector", "False", "ClusterNotReady").await;
    // The proxy does not hand the redirect to the caller (kubectl would follow it).
    let status = proxy_get(&env.plane.client, "redirector", "/api/v1/namespaces").await;
    assert_eq!(status.code, 502, "{}", status.message);
    assert!(
        status.message.contains("attempted to redirect"),
        "{}",
        status.message
    );
    trap.assert_untouched();
    redirector.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_refuses_the_credentials_is_not_ready_saying_so() {
    let env = Env::start().await;
    let locked = flotilla_testenv::serve_tls(Router::new().route(
        "/readyz",
        get(|| async { (StatusCode::UNAUTHORIZED, "Unauthorized") }),
    ))
    .await
    .unwrap();
    join(&env.plane.client, "locked", &locked).await;
    let message = env.ready_is("locked", "False", "ClusterNotReachable").await;
    assert_eq!(
        message,
        "cluster is not reachable: the member refused the cluster's credentials (401 Unauthorized)"
    );
    // The healthy member beside it is unaffected.
    env.ready_is("edge", "True", "ClusterReady").await;
    locked.stop().await;
    env.stop().await;
}

/// `karmadactl join`'s steps against a member-sim: in the member, a ServiceAccount with a
/// cluster-admin binding and a `kubernetes.io/service-account-token` Secret, which the
/// member's token controller fills; on the host, the Cluster with the token from that Secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_joined_as_karmadactl_joins_it_is_ready_with_its_service_account_token() {
    use k8s_openapi::api::core::v1::ServiceAccount;
    let env = Env::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut opts = flotilla_membersim::MemberOptions::new("sim", dir.path().join("sim"));
    opts.in_memory = true;
    let member = flotilla_membersim::start(opts).await.unwrap();
    let admin = flotilla_testenv::client_for(&member.kubeconfig, None)
        .await
        .unwrap();
    let ns = "karmada-cluster";
    apply(
        &Api::<Namespace>::all(admin.clone()),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .await;
    apply(
        &Api::<ServiceAccount>::namespaced(admin.clone(), ns),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "karmada-sim"}}),
    )
    .await;
    apply(
        &Api::<ClusterRoleBinding>::all(admin.clone()),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "karmada-sim"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
               "subjects": [{"kind": "ServiceAccount", "name": "karmada-sim", "namespace": ns}]}),
    )
    .await;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), ns);
    apply(
        &secrets,
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
               "metadata": {"name": "karmada-sim",
                            "annotations": {"kubernetes.io/service-account.name": "karmada-sim"}}}),
    )
    .await;
    let (token, ca) = eventually("the token controller fills the Secret", WAIT, || async {
        let secret = secrets.get("karmada-sim").await.ok()?;
        let data = secret.data?;
        let token = String::from_utf8(data.get("token")?.0.clone()).ok()?;
        let ca = String::from_utf8(data.get("ca.crt")?.0.clone()).ok()?;
        (data.get("namespace")?.0 == ns.as_bytes()).then_some((token, ca))
    })
    .await;
    assert!(!token.is_empty());
    assert!(ca.contains("BEGIN CERTIFICATE"), "{ca}");

    let credentials = MemberCredentials::token(token, ca);
    flotilla_membership::join(
        &env.plane.client,
        &Member::new("sim", member.url(), credentials),
    )
    .await
    .unwrap();
    env.ready_is("sim", "True", "ClusterReady").await;
    member.stop().await;
    env.stop().await;
}
