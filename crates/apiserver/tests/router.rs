//! Router-level behaviour of the generic server, driven with `oneshot` over an in-memory
//! storage: authentication, discovery content types, panic recovery, body limits.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::body::Body;
use flotilla_apimachinery::{ResourceDef, Validation};
use flotilla_apiserver::auth::PeerIdentity;
use flotilla_apiserver::{ApiServer, Registry, ServerConfig};
use flotilla_generic_store::UserInfo;
use flotilla_storage::{MemoryStorage, Storage};
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

fn server(config: ServerConfig) -> Arc<ApiServer> {
    let registry = Registry::new();
    registry.register(ResourceDef::new("", "v1", "Namespace", "namespaces", false));
    let mut widget = ResourceDef::new("example.com", "v1", "Widget", "widgets", false);
    // A validation hook that panics on demand stands in for any bug in a handler.
    widget.validate = Some(Arc::new(|obj: &Value, _old: Option<&Value>| {
        if obj.pointer("/spec/panic") == Some(&json!(true)) {
            panic!("validation hook exploded");
        }
        Validation::default()
    }));
    registry.register(widget);
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    ApiServer::new(Arc::new(registry), storage, config)
}

fn admin() -> PeerIdentity {
    PeerIdentity::user(UserInfo::new("admin", &["system:masters"]))
}

async fn call(server: &Arc<ApiServer>, req: Request<Body>) -> (StatusCode, http::HeaderMap, Value) {
    let resp = server.router().oneshot(req).await.unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, headers, body)
}

fn post_widget(body: Value) -> Request<Body> {
    let mut req = Request::post("/apis/example.com/v1/widgets")
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_string()))
        .unwrap();
    req.extensions_mut().insert(admin());
    req
}

#[tokio::test]
async fn requests_without_credentials_get_401_but_version_is_public() {
    let s = server(ServerConfig::default());
    let (status, _, body) = call(&s, Request::get("/api").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Unauthorized");
    let (status, _, body) = call(&s, Request::get("/version").body(Body::empty()).unwrap()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["minor"], "32");
}

#[tokio::test]
async fn aggregated_discovery_has_the_exact_content_type() {
    let s = server(ServerConfig::default());
    let mut req = Request::get("/apis")
        .header(
            header::ACCEPT,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
        )
        .body(Body::empty())
        .unwrap();
    req.extensions_mut().insert(admin());
    let (status, headers, body) = call(&s, req).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        headers[header::CONTENT_TYPE],
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(body["items"][0]["metadata"]["name"], "example.com");
    assert_eq!(
        body["items"][0]["versions"][0]["resources"][0]["resource"],
        "widgets"
    );
    assert_eq!(
        body["items"][0]["versions"][0]["resources"][0]["scope"],
        "Cluster"
    );

    let mut legacy = Request::get("/apis").body(Body::empty()).unwrap();
    legacy.extensions_mut().insert(admin());
    let (_, headers, body) = call(&s, legacy).await;
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    assert_eq!(body["kind"], "APIGroupList");
}

#[tokio::test]
async fn a_panicking_handler_answers_500_and_the_server_keeps_serving() {
    let s = server(ServerConfig::default());
    let (status, _, body) = call(
        &s,
        post_widget(json!({"metadata": {"name": "boom"}, "spec": {"panic": true}})),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "InternalError");
    let (status, _, body) = call(
        &s,
        post_widget(json!({"metadata": {"name": "fine"}, "spec": {}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["metadata"]["name"], "fine");
    assert_eq!(
        s.storage
            .list("/example.com/widgets/", &Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn oversized_bodies_get_413_and_store_nothing() {
    let s = server(ServerConfig {
        max_body_bytes: 1024,
        ..ServerConfig::default()
    });
    let big = "x".repeat(4096);
    let (status, _, body) = call(
        &s,
        post_widget(json!({"metadata": {"name": "big"}, "spec": {"blob": big}})),
    )
    .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(body["reason"], "RequestEntityTooLarge");
    assert_eq!(s.storage.current_revision().await, 0);
}

#[tokio::test]
async fn strategic_merge_on_a_kind_without_merge_metadata_is_415() {
    let s = server(ServerConfig::default());
    let (status, _, _) = call(
        &s,
        post_widget(json!({"metadata": {"name": "w"}, "spec": {"a": 1}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let mut req = Request::patch("/apis/example.com/v1/widgets/w")
        .header(
            header::CONTENT_TYPE,
            "application/strategic-merge-patch+json",
        )
        .body(Body::from(r#"{"spec":{"a":2}}"#))
        .unwrap();
    req.extensions_mut().insert(admin());
    let (status, _, body) = call(&s, req).await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    assert_eq!(body["reason"], "UnsupportedMediaType");
    let mut req = Request::patch("/apis/example.com/v1/widgets/w")
        .header(header::CONTENT_TYPE, "application/merge-patch+json")
        .body(Body::from(r#"{"spec":{"a":2}}"#))
        .unwrap();
    req.extensions_mut().insert(admin());
    let (status, _, body) = call(&s, req).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["spec"]["a"], 2);
}

#[tokio::test]
async fn past_the_in_flight_limit_requests_get_429_but_health_and_masters_are_answered() {
    let s = server(ServerConfig {
        max_requests_inflight: 1,
        max_mutating_requests_inflight: 1,
        ..ServerConfig::default()
    });
    let user = || PeerIdentity::user(UserInfo::new("alice", &["system:authenticated"]));
    let list = || {
        let mut req = Request::get("/apis/example.com/v1/widgets")
            .body(Body::empty())
            .unwrap();
        req.extensions_mut().insert(user());
        req
    };
    let (status, _, _) = call(&s, list()).await;
    assert_eq!(status, StatusCode::OK, "under the limit");

    // The one read-only place is taken (a slow request would hold it the same way).
    let held = s
        .inflight
        .admit(flotilla_apiserver::inflight::Class::ReadOnly)
        .unwrap();
    let (status, headers, body) = call(&s, list()).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(body["reason"], "TooManyRequests");
    assert_eq!(body["details"]["retryAfterSeconds"], 1);
    assert_eq!(headers[header::RETRY_AFTER], "1");
    // Health answers; a write has its own limit; system:masters is not limited.
    let mut health = Request::get("/healthz").body(Body::empty()).unwrap();
    health.extensions_mut().insert(user());
    assert_eq!(call(&s, health).await.0, StatusCode::OK);
    let mut create = post_widget(json!({"metadata": {"name": "w"}}));
    create.extensions_mut().insert(user());
    assert_eq!(call(&s, create).await.0, StatusCode::CREATED);
    let mut as_admin = list();
    as_admin.extensions_mut().insert(admin());
    assert_eq!(call(&s, as_admin).await.0, StatusCode::OK);
    // The place freed, reads are served again.
    drop(held);
    assert_eq!(call(&s, list()).await.0, StatusCode::OK);
    // The refusal is counted like any answer.
    let metrics = s.metrics.render();
    let text = String::from_utf8(
        metrics
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(text.contains("code=\"429\""), "{text}");
    assert!(
        text.contains("apiserver_current_inflight_requests"),
        "{text}"
    );
}
