//! Overload protection over TLS with kube-rs: past the host's in-flight limit a request is
//! refused with 429 and Retry-After, a watch is still served, and health checks answer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_apiserver::inflight::{Class, InFlight};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ListParams, WatchParams};

/// The host's `apiserver_request` count of 429 answers.
async fn refusals(server: &flotilla_apiserver::ApiServer) -> usize {
    use http_body_util::BodyExt;
    let body = server.metrics.render().into_body();
    let text = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total") && l.contains("code=\"429\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as usize
}

/// Grants `alice` cluster-admin.
async fn bind_alice(cp: &flotilla_testenv::ControlPlane) {
    let crbs: Api<ClusterRoleBinding> = Api::all(cp.client.clone());
    crbs.create(
        &Default::default(),
        &serde_json::from_value(serde_json::json!({
            "metadata": {"name": "alice-admin"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
        }))
        .unwrap(),
    )
    .await
    .unwrap();
}

/// The admin's kubeconfig impersonating `alice` (group `developers`); `retry`: kube-rs's
/// default retries of 429 and 503 (backing off up to 15 times).
async fn as_alice(cp: &flotilla_testenv::ControlPlane, retry: bool) -> kube::Client {
    flotilla_testenv::client_as(&cp.host.kubeconfig, "alice", &["developers"], retry)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_host_answers_429_but_serves_watches_and_health() {
    let cp = flotilla_testenv::ControlPlane::start().await.unwrap();
    let server = cp.host.server.clone();
    let cms: Api<ConfigMap> = Api::namespaced(cp.client.clone(), "default");
    cms.list(&ListParams::default()).await.unwrap();

    // Every read-only place taken, as by that many slow requests.
    let limit = server.config.max_requests_inflight;
    let held: Vec<InFlight> = (0..limit)
        .map(|_| server.inflight.admit(Class::ReadOnly).unwrap())
        .collect();
    // The admin client is system:masters (not limited, as in kube-apiserver): act as a user
    // who is not, with the rights to read.
    bind_alice(&cp).await;
    let user = as_alice(&cp, false).await;
    let as_user: Api<ConfigMap> = Api::namespaced(user.clone(), "default");
    match as_user.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 429, "{s:?}");
            assert_eq!(s.reason, "TooManyRequests");
        }
        other => panic!("expected 429, got {other:?}"),
    }
    // A watch is long-running: not limited.
    let mut events = as_user
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    cms.create(
        &Default::default(),
        &serde_json::from_value(serde_json::json!({"metadata": {"name": "seen"}})).unwrap(),
    )
    .await
    .unwrap();
    let first = events.next().await.unwrap().unwrap();
    assert!(
        matches!(first, kube::api::WatchEvent::Added(_)),
        "{first:?}"
    );
    // Health is answered.
    let health = user
        .request_text(http::Request::get("/readyz").body(Vec::new()).unwrap())
        .await
        .unwrap();
    assert_eq!(health.trim(), "ok");
    // A client that retries (kube-rs's default) backs off on 429 and gets its answer once a
    // place frees: the place is freed after the host has refused it at least once.
    let retrying: Api<ConfigMap> = Api::namespaced(as_alice(&cp, true).await, "default");
    let before = refusals(&server).await;
    let pending = tokio::spawn(async move { retrying.list(&ListParams::default()).await });
    flotilla_testwait::eventually(
        "the retrying client to be refused",
        std::time::Duration::from_secs(30),
        || async { refusals(&server).await != before },
    )
    .await;
    drop(held);
    let listed = pending.await.unwrap().unwrap();
    assert!(
        listed
            .items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("seen"))
    );
    as_user.list(&ListParams::default()).await.unwrap();
    drop(events);
    cp.stop().await;
}
