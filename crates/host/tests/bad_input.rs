//! Bad input to the host API server over TLS: each malformed, invalid, conflicting or
//! unauthenticated request gets the right HTTP code and a `Status` body (kind, apiVersion,
//! `Failure`, reason, code, message), and leaves storage exactly as it was: the server's
//! revision (a list's `metadata.resourceVersion`) and the stored object do not move.
//!
//! Requests go through kube-rs's raw `Client::send`, so the tests choose content types and
//! bodies byte for byte and see non-2xx bodies as sent.

// Test helpers (here and in `common`) may panic: a failed request is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::TestHost;
use futures::{AsyncBufReadExt, StreamExt};
use http::{HeaderMap, Method, Request, header};
use kube::client::Body;
use serde_json::{Value, json};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const WEB: &str = "/apis/apps/v1/namespaces/default/deployments/web";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// One HTTP answer.
struct Reply {
    code: u16,
    headers: HeaderMap,
    text: String,
    /// The body as JSON (`Null` when it is not JSON).
    body: Value,
}

async fn send(
    client: &kube::Client,
    method: Method,
    uri: &str,
    content_type: Option<&str>,
    body: impl Into<Vec<u8>>,
) -> Reply {
    let mut builder = Request::builder().method(method).uri(uri);
    if let Some(ct) = content_type {
        builder = builder.header(header::CONTENT_TYPE, ct);
    }
    let req = builder.body(Body::from(body.into())).unwrap();
    send_request(client, req).await
}

async fn send_request(client: &kube::Client, req: Request<Body>) -> Reply {
    let resp = client.send(req).await.unwrap();
    let code = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect_bytes().await.unwrap();
    Reply {
        code,
        headers,
        text: String::from_utf8_lossy(&bytes).into_owned(),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

async fn get(client: &kube::Client, uri: &str) -> Reply {
    send(client, Method::GET, uri, None, Vec::new()).await
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}
            }
        }
    })
}

/// Asserts `reply` is a failed `Status` with `code` and `reason`; returns its message.
#[track_caller]
fn failure(reply: &Reply, code: u16, reason: &str) -> String {
    assert_eq!(reply.code, code, "HTTP status; body: {}", reply.text);
    assert_eq!(
        reply
            .headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
        Some(JSON),
        "content type of {}",
        reply.text
    );
    let s = &reply.body;
    assert_eq!(s["kind"], "Status", "{}", reply.text);
    assert_eq!(s["apiVersion"], "v1", "{}", reply.text);
    assert_eq!(s["status"], "Failure", "{}", reply.text);
    assert_eq!(s["reason"], reason, "{}", reply.text);
    assert_eq!(s["code"], json!(code), "{}", reply.text);
    let message = s["message"].as_str().unwrap_or_default().to_string();
    assert!(!message.trim().is_empty(), "no message: {}", reply.text);
    message
}

/// The causes of a failed `Status` as `(reason, field, message)`.
fn causes(reply: &Reply) -> Vec<(String, String, String)> {
    reply.body["details"]["causes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    (s("reason"), s("field"), s("message"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What the server holds, to show a rejected request changed nothing.
#[derive(Debug, PartialEq)]
struct Snapshot {
    /// `metadata.resourceVersion` of a deployment list: the server's revision.
    list_revision: String,
    /// The storage's own revision.
    storage_revision: u64,
    /// `web` as the server returns it (byte for byte), or its 404.
    web: (u16, String),
}

async fn snapshot(t: &TestHost) -> Snapshot {
    let list = get(&t.client, DEPLOYMENTS).await;
    assert_eq!(list.code, 200, "{}", list.text);
    let list_revision = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!list_revision.is_empty());
    let web = get(&t.client, WEB).await;
    Snapshot {
        list_revision,
        storage_revision: t.host.server.storage.current_revision().await,
        web: (web.code, web.text),
    }
}

/// A host with the deployment `default/web` (1 replica).
async fn host_with_web() -> TestHost {
    with_web(common::start().await).await
}

async fn with_web(t: TestHost) -> TestHost {
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&deployment("web", 1)),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    t
}

async fn assert_absent(t: &TestHost, uri: &str) {
    let r = get(&t.client, uri).await;
    failure(&r, 404, "NotFound");
}

#[tokio::test]
async fn malformed_json_is_400_and_writes_nothing() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let broken = br#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "half""#;

    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        &broken[..],
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("JSON"), "{msg}");

    let r = send(&t.client, Method::PUT, WEB, Some(JSON), &broken[..]).await;
    failure(&r, 400, "BadRequest");

    let r = send(&t.client, Method::PATCH, WEB, Some(MERGE), &broken[..]).await;
    failure(&r, 400, "BadRequest");

    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), "[{\"op\":").await;
    failure(&r, 400, "BadRequest");

    // Well-formed JSON that is not an object is no object either.
    let r = send(&t.client, Method::POST, DEPLOYMENTS, Some(JSON), "[1, 2]").await;
    failure(&r, 400, "BadRequest");

    // A JSON patch must be a list of operations.
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), "{}").await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/half")).await;
    t.host.stop().await;
}

#[tokio::test]
async fn malformed_yaml_in_an_apply_patch_is_400() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let broken =
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  labels: [unclosed\n";

    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}?fieldManager=tester"),
        Some(APPLY),
        broken,
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("YAML"), "{msg}");

    // Applying to an object that does not exist yet must not create it either.
    let fresh = format!("{DEPLOYMENTS}/fresh");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{fresh}?fieldManager=tester"),
        Some(APPLY),
        broken.replace("name: web", "name: fresh"),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &fresh).await;
    t.host.stop().await;
}

#[tokio::test]
async fn kind_or_api_version_not_matching_the_url_is_400() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let mut wrong_kind = deployment("other", 1);
    wrong_kind["kind"] = json!("StatefulSet");
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&wrong_kind),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(
        msg.contains("StatefulSet") && msg.contains("Deployment"),
        "{msg}"
    );

    let mut wrong_version = deployment("other", 1);
    wrong_version["apiVersion"] = json!("apps/v1beta2");
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&wrong_version),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(
        msg.contains("apps/v1beta2") && msg.contains("apps/v1"),
        "{msg}"
    );

    // A ConfigMap body sent to the deployments collection (wrong group and kind).
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}});
    let r = send(&t.client, Method::POST, DEPLOYMENTS, Some(JSON), bytes(&cm)).await;
    failure(&r, 400, "BadRequest");

    // The same checks on update and on apply.
    let mut current = get(&t.client, WEB).await.body;
    current["kind"] = json!("ReplicaSet");
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&current)).await;
    failure(&r, 400, "BadRequest");

    let mut applied = deployment("web", 3);
    applied["kind"] = json!("DaemonSet");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}?fieldManager=tester"),
        Some(APPLY),
        bytes(&applied),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/other")).await;
    t.host.stop().await;
}

#[tokio::test]
async fn put_with_a_name_or_namespace_not_matching_the_url_is_400() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let mut renamed = get(&t.client, WEB).await.body;
    renamed["metadata"]["name"] = json!("other");
    renamed["spec"]["replicas"] = json!(5);
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&renamed)).await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("other") && msg.contains("web"), "{msg}");

    let mut moved = get(&t.client, WEB).await.body;
    moved["metadata"]["namespace"] = json!("kube-system");
    moved["spec"]["replicas"] = json!(5);
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&moved)).await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("namespace"), "{msg}");

    // A create whose body names another namespace than the URL.
    let mut elsewhere = deployment("other", 1);
    elsewhere["metadata"]["namespace"] = json!("kube-system");
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&elsewhere),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/other")).await;
    assert_absent(&t, "/apis/apps/v1/namespaces/kube-system/deployments/other").await;
    assert_absent(&t, "/apis/apps/v1/namespaces/kube-system/deployments/web").await;
    t.host.stop().await;
}

#[tokio::test]
async fn an_invalid_name_is_422_with_a_cause_on_metadata_name() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&deployment("Bad_Name", 1)),
    )
    .await;
    let msg = failure(&r, 422, "Invalid");
    assert!(msg.contains("\"Bad_Name\" is invalid"), "{msg}");
    assert!(msg.contains("metadata.name"), "{msg}");
    assert_eq!(r.body["details"]["name"], "Bad_Name", "{}", r.text);
    assert_eq!(r.body["details"]["group"], "apps", "{}", r.text);
    let causes = causes(&r);
    assert!(
        causes
            .iter()
            .any(|(reason, field, message)| reason == "FieldValueInvalid"
                && field == "metadata.name"
                && message.contains("Bad_Name")),
        "{causes:?}"
    );

    // Server-side apply to such a name is refused the same way.
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{DEPLOYMENTS}/Bad_Name?fieldManager=tester"),
        Some(APPLY),
        bytes(&deployment("Bad_Name", 1)),
    )
    .await;
    failure(&r, 422, "Invalid");
    assert!(causes_of_field(&r, "metadata.name"), "{}", r.text);

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/Bad_Name")).await;
    t.host.stop().await;
}

fn causes_of_field(r: &Reply, field: &str) -> bool {
    causes(r).iter().any(|(_, f, _)| f == field)
}

#[tokio::test]
async fn negative_replicas_are_422_on_create_patch_update_and_scale() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let check = |r: &Reply| {
        let msg = failure(r, 422, "Invalid");
        assert!(msg.contains("must be greater than or equal to 0"), "{msg}");
        let causes = causes(r);
        assert!(
            causes
                .iter()
                .any(|(reason, field, message)| reason == "FieldValueInvalid"
                    && field == "spec.replicas"
                    && message.contains("must be greater than or equal to 0")),
            "{causes:?}"
        );
    };

    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&deployment("negative", -1)),
    )
    .await;
    check(&r);
    assert!(r.body["message"].as_str().unwrap().contains("\"negative\""));

    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({"spec": {"replicas": -3}})),
    )
    .await;
    check(&r);

    let mut current = get(&t.client, WEB).await.body;
    current["spec"]["replicas"] = json!(-2);
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&current)).await;
    check(&r);

    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}/scale"),
        Some(MERGE),
        bytes(&json!({"spec": {"replicas": -4}})),
    )
    .await;
    check(&r);

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/negative")).await;
    assert_eq!(get(&t.client, WEB).await.body["spec"]["replicas"], 1);
    t.host.stop().await;
}

#[tokio::test]
async fn an_unknown_field_is_400_under_strict_and_a_warning_under_warn() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let mut bogus = deployment("extra", 1);
    bogus["spec"]["bogus"] = json!(true);
    let r = send(
        &t.client,
        Method::POST,
        &format!("{DEPLOYMENTS}?fieldValidation=Strict"),
        Some(JSON),
        bytes(&bogus),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert_eq!(msg, "strict decoding error: unknown field \"spec.bogus\"");

    // Strict on update and patch as well: the stored object stays as it was.
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}?fieldValidation=Strict"),
        Some(MERGE),
        bytes(&json!({"spec": {"bogus": 1, "replicas": 2}})),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert_eq!(msg, "strict decoding error: unknown field \"spec.bogus\"");

    let mut current = get(&t.client, WEB).await.body;
    current["spec"]["bogus"] = json!("x");
    current["spec"]["replicas"] = json!(2);
    let r = send(
        &t.client,
        Method::PUT,
        &format!("{WEB}?fieldValidation=Strict"),
        Some(JSON),
        bytes(&current),
    )
    .await;
    failure(&r, 400, "BadRequest");

    // An unknown fieldValidation value is itself a bad request.
    let r = send(
        &t.client,
        Method::POST,
        &format!("{DEPLOYMENTS}?fieldValidation=Loose"),
        Some(JSON),
        bytes(&deployment("extra", 1)),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/extra")).await;

    // Warn: created, with a Warning header naming the field, and the field is dropped.
    let r = send(
        &t.client,
        Method::POST,
        &format!("{DEPLOYMENTS}?fieldValidation=Warn"),
        Some(JSON),
        bytes(&bogus),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    let warnings: Vec<&str> = r
        .headers
        .get_all(header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("299 ") && w.contains(r#"unknown field \"spec.bogus\""#)),
        "{warnings:?}"
    );
    let stored = get(&t.client, &format!("{DEPLOYMENTS}/extra")).await;
    assert_eq!(stored.code, 200, "{}", stored.text);
    assert_eq!(stored.body["spec"].get("bogus"), None, "{}", stored.text);
    t.host.stop().await;
}

#[tokio::test]
async fn a_body_over_the_limit_is_413() {
    const LIMIT: usize = 64 * 1024;
    let t = with_web(common::start_with(|opts| opts.server.max_body_bytes = LIMIT).await).await;
    let before = snapshot(&t).await;

    let big = "x".repeat(LIMIT * 2);
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big"},
        "data": {"blob": big},
    });
    let r = send(&t.client, Method::POST, CONFIGMAPS, Some(JSON), bytes(&cm)).await;
    let msg = failure(&r, 413, "RequestEntityTooLarge");
    assert!(msg.contains(&LIMIT.to_string()), "{msg}");

    let mut current = get(&t.client, WEB).await.body;
    current["metadata"]["annotations"] = json!({"blob": big});
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&current)).await;
    failure(&r, 413, "RequestEntityTooLarge");

    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({"metadata": {"annotations": {"blob": big}}})),
    )
    .await;
    failure(&r, 413, "RequestEntityTooLarge");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/big")).await;

    // Just under the limit is accepted (the limit is on the body, not a fixed small size).
    let small = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "small"},
        "data": {"blob": "y".repeat(LIMIT - 1024)},
    });
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&small),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    t.host.stop().await;
}

#[tokio::test]
async fn an_unsupported_content_type_is_415() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let body = bytes(&deployment("typed", 1));

    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some("text/plain"),
        body.clone(),
    )
    .await;
    let msg = failure(&r, 415, "UnsupportedMediaType");
    assert!(msg.contains("text/plain"), "{msg}");
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some("application/x-www-form-urlencoded"),
        body.clone(),
    )
    .await;
    failure(&r, 415, "UnsupportedMediaType");

    let current = get(&t.client, WEB).await.body;
    let r = send(
        &t.client,
        Method::PUT,
        WEB,
        Some("text/plain"),
        bytes(&current),
    )
    .await;
    failure(&r, 415, "UnsupportedMediaType");

    // A PATCH in a media type that is no patch format (and one without any type at all).
    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some("application/foo-patch+json"),
        bytes(&json!({"spec": {"replicas": 4}})),
    )
    .await;
    let msg = failure(&r, 415, "UnsupportedMediaType");
    assert!(msg.contains("application/foo-patch+json"), "{msg}");

    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        None,
        bytes(&json!({"spec": {"replicas": 4}})),
    )
    .await;
    failure(&r, 415, "UnsupportedMediaType");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/typed")).await;
    t.host.stop().await;
}

#[tokio::test]
async fn an_invalid_label_selector_is_400_on_list_watch_and_deletecollection() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let r = get(
        &t.client,
        &format!("{DEPLOYMENTS}?labelSelector=a%20in%20("),
    )
    .await;
    failure(&r, 400, "BadRequest");

    let r = get(
        &t.client,
        &format!("{DEPLOYMENTS}?watch=true&labelSelector=a%20in%20("),
    )
    .await;
    failure(&r, 400, "BadRequest");

    // A broken selector must not be read as "everything" by a collection delete.
    let r = send(
        &t.client,
        Method::DELETE,
        &format!("{DEPLOYMENTS}?labelSelector=a%20in%20("),
        None,
        Vec::new(),
    )
    .await;
    failure(&r, 400, "BadRequest");

    let r = get(
        &t.client,
        &format!("{DEPLOYMENTS}?fieldSelector=spec.bogus%3Dx"),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    t.host.stop().await;
}

#[tokio::test]
async fn a_non_numeric_resource_version_is_400_on_list_and_watch() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let r = get(&t.client, &format!("{DEPLOYMENTS}?resourceVersion=abc")).await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("abc"), "{msg}");

    let r = get(
        &t.client,
        &format!("{DEPLOYMENTS}?watch=true&resourceVersion=abc"),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("abc"), "{msg}");

    let r = get(&t.client, &format!("{DEPLOYMENTS}?limit=many")).await;
    failure(&r, 400, "BadRequest");

    let r = get(
        &t.client,
        &format!("{DEPLOYMENTS}?watch=true&timeoutSeconds=soon"),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    t.host.stop().await;
}

#[tokio::test]
async fn a_write_with_a_stale_resource_version_is_409() {
    let t = host_with_web().await;
    let stale = get(&t.client, WEB).await.body;
    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({"spec": {"replicas": 2}})),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.text);
    assert_ne!(
        r.body["metadata"]["resourceVersion"],
        stale["metadata"]["resourceVersion"]
    );
    let before = snapshot(&t).await;

    let mut update = stale.clone();
    update["spec"]["replicas"] = json!(7);
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&update)).await;
    let msg = failure(&r, 409, "Conflict");
    assert!(msg.contains("the object has been modified"), "{msg}");
    assert!(msg.contains("deployments.apps \"web\""), "{msg}");
    assert_eq!(r.body["details"]["name"], "web", "{}", r.text);

    // A patch carrying the stale resourceVersion is a precondition too.
    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({
            "metadata": {"resourceVersion": stale["metadata"]["resourceVersion"]},
            "spec": {"replicas": 8}
        })),
    )
    .await;
    let msg = failure(&r, 409, "Conflict");
    assert!(msg.contains("the object has been modified"), "{msg}");

    assert_eq!(snapshot(&t).await, before);
    assert_eq!(get(&t.client, WEB).await.body["spec"]["replicas"], 2);
    t.host.stop().await;
}

#[tokio::test]
async fn patching_a_missing_object_is_404_and_creates_nothing() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let nope = format!("{DEPLOYMENTS}/nope");

    let r = send(
        &t.client,
        Method::PATCH,
        &nope,
        Some(MERGE),
        bytes(&json!({"spec": {"replicas": 2}})),
    )
    .await;
    let msg = failure(&r, 404, "NotFound");
    assert_eq!(msg, "deployments.apps \"nope\" not found");
    assert_eq!(
        r.body["details"],
        json!({"name": "nope", "group": "apps", "kind": "deployments"}),
        "{}",
        r.text
    );

    let r = send(
        &t.client,
        Method::PATCH,
        &nope,
        Some(JSON_PATCH),
        bytes(&json!([{"op": "replace", "path": "/spec/replicas", "value": 2}])),
    )
    .await;
    let msg = failure(&r, 404, "NotFound");
    assert_eq!(msg, "deployments.apps \"nope\" not found");

    let r = send(
        &t.client,
        Method::PUT,
        &nope,
        Some(JSON),
        bytes(&deployment("nope", 1)),
    )
    .await;
    failure(&r, 404, "NotFound");

    let r = send(&t.client, Method::DELETE, &nope, None, Vec::new()).await;
    let msg = failure(&r, 404, "NotFound");
    assert_eq!(msg, "deployments.apps \"nope\" not found");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &nope).await;
    t.host.stop().await;
}

#[tokio::test]
async fn creating_in_a_missing_namespace_is_404_naming_the_namespace() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let ghost = "/apis/apps/v1/namespaces/ghost/deployments";

    let r = send(
        &t.client,
        Method::POST,
        ghost,
        Some(JSON),
        bytes(&deployment("web", 1)),
    )
    .await;
    let msg = failure(&r, 404, "NotFound");
    assert_eq!(msg, "namespaces \"ghost\" not found");
    assert_eq!(r.body["details"]["name"], "ghost", "{}", r.text);
    assert_eq!(r.body["details"]["kind"], "namespaces", "{}", r.text);

    // Server-side apply would create the object: same answer.
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{ghost}/web?fieldManager=tester"),
        Some(APPLY),
        bytes(&deployment("web", 1)),
    )
    .await;
    let msg = failure(&r, 404, "NotFound");
    assert!(msg.contains("\"ghost\""), "{msg}");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{ghost}/web")).await;
    assert_absent(&t, "/api/v1/namespaces/ghost").await;
    t.host.stop().await;
}

#[tokio::test]
async fn requests_without_credentials_are_401() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    // Same server and CA, but no client certificate and no token.
    let kc = kube::config::Kubeconfig::read_from(&t.host.kubeconfig).unwrap();
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    config.auth_info = kube::config::AuthInfo::default();
    let anonymous = kube::Client::try_from(config).unwrap();

    let r = get(&anonymous, DEPLOYMENTS).await;
    failure(&r, 401, "Unauthorized");
    let r = get(&anonymous, WEB).await;
    failure(&r, 401, "Unauthorized");
    let r = get(&anonymous, "/apis").await;
    failure(&r, 401, "Unauthorized");
    let r = send(
        &anonymous,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&deployment("intruder", 1)),
    )
    .await;
    failure(&r, 401, "Unauthorized");
    let r = send(
        &anonymous,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({"spec": {"replicas": 9}})),
    )
    .await;
    failure(&r, 401, "Unauthorized");
    let r = send(&anonymous, Method::DELETE, WEB, None, Vec::new()).await;
    failure(&r, 401, "Unauthorized");

    // A bearer token the server does not know is refused as well.
    let r = send_with_token(&anonymous, DEPLOYMENTS, "not-a-token").await;
    failure(&r, 401, "Unauthorized");

    // Health and version stay public.
    let r = get(&anonymous, "/version").await;
    assert_eq!(r.code, 200, "{}", r.text);

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/intruder")).await;
    t.host.stop().await;
}

async fn send_with_token(client: &kube::Client, uri: &str, token: &str) -> Reply {
    let req = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    send_request(client, req).await
}

#[tokio::test]
async fn a_failing_json_patch_test_op_is_422() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let ops = json!([
        {"op": "test", "path": "/spec/replicas", "value": 5},
        {"op": "replace", "path": "/spec/replicas", "value": 6}
    ]);
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), bytes(&ops)).await;
    failure(&r, 422, "Invalid");

    // Removing a path that does not exist fails the same way.
    let ops = json!([
        {"op": "replace", "path": "/spec/replicas", "value": 6},
        {"op": "remove", "path": "/spec/nothing/here"}
    ]);
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), bytes(&ops)).await;
    failure(&r, 422, "Invalid");

    // An operation the RFC does not define decodes, and does not apply (as kube-apiserver's
    // JSON patch library answers it).
    let ops = json!([{"op": "frobnicate", "path": "/spec/replicas", "value": 6}]);
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), bytes(&ops)).await;
    failure(&r, 422, "Invalid");
    assert!(
        r.body["message"]
            .as_str()
            .is_some_and(|m| m.contains("Unexpected kind: frobnicate")),
        "{}",
        r.body
    );

    assert_eq!(snapshot(&t).await, before);
    assert_eq!(get(&t.client, WEB).await.body["spec"]["replicas"], 1);
    t.host.stop().await;
}

#[tokio::test]
async fn delete_with_a_stale_precondition_is_409() {
    let t = host_with_web().await;
    let stale_rv = get(&t.client, WEB).await.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.text);
    let before = snapshot(&t).await;

    let options = json!({
        "kind": "DeleteOptions",
        "apiVersion": "v1",
        "preconditions": {"resourceVersion": stale_rv}
    });
    let r = send(&t.client, Method::DELETE, WEB, Some(JSON), bytes(&options)).await;
    let msg = failure(&r, 409, "Conflict");
    assert!(msg.contains("Precondition failed"), "{msg}");
    assert!(msg.contains(&stale_rv), "{msg}");

    let options = json!({"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}});
    let r = send(&t.client, Method::DELETE, WEB, Some(JSON), bytes(&options)).await;
    let msg = failure(&r, 409, "Conflict");
    assert!(msg.contains("Precondition failed"), "{msg}");

    // A malformed DeleteOptions body is a bad request, not a delete.
    let r = send(&t.client, Method::DELETE, WEB, Some(JSON), "{not json").await;
    failure(&r, 400, "BadRequest");
    let r = send(
        &t.client,
        Method::DELETE,
        &format!("{WEB}?propagationPolicy=Sometimes"),
        None,
        Vec::new(),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_eq!(get(&t.client, WEB).await.code, 200);
    t.host.stop().await;
}

#[tokio::test]
async fn a_watch_from_a_compacted_revision_gets_an_expired_error_event() {
    let t = host_with_web().await;
    let first_rv: u64 = get(&t.client, WEB).await.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    for replicas in 2..5 {
        let r = send(
            &t.client,
            Method::PATCH,
            WEB,
            Some(MERGE),
            bytes(&json!({"spec": {"replicas": replicas}})),
        )
        .await;
        assert_eq!(r.code, 200, "{}", r.text);
    }
    let current = t.host.server.storage.current_revision().await;
    assert!(current > first_rv + 2);
    t.host.server.storage.compact(current - 1).await;
    let before = snapshot(&t).await;

    let req = Request::builder()
        .method(Method::GET)
        .uri(format!(
            "{DEPLOYMENTS}?watch=true&resourceVersion={first_rv}&timeoutSeconds=5"
        ))
        .body(Vec::new())
        .unwrap();
    // `request_stream` fails on a non-2xx answer: the watch itself must be a 200.
    let stream = t.client.request_stream(req).await.unwrap();
    let mut lines = Box::pin(stream).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next())
        .await
        .expect("an event before the timeout")
        .expect("a line")
        .unwrap();
    let event: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(event["type"], "ERROR", "{first}");
    let status = &event["object"];
    assert_eq!(status["kind"], "Status", "{first}");
    assert_eq!(status["apiVersion"], "v1", "{first}");
    assert_eq!(status["status"], "Failure", "{first}");
    assert_eq!(status["code"], 410, "{first}");
    assert_eq!(status["reason"], "Expired", "{first}");
    let msg = status["message"].as_str().unwrap_or_default();
    assert!(msg.contains("too old resource version"), "{first}");
    assert!(msg.contains(&first_rv.to_string()), "{first}");

    // The revision just after the compaction point still watches normally.
    let req = Request::builder()
        .method(Method::GET)
        .uri(format!(
            "{DEPLOYMENTS}?watch=true&resourceVersion={}&timeoutSeconds=5",
            current - 1
        ))
        .body(Vec::new())
        .unwrap();
    let stream = t.client.request_stream(req).await.unwrap();
    let mut lines = Box::pin(stream).lines();
    let first = tokio::time::timeout(Duration::from_secs(10), lines.next())
        .await
        .expect("an event before the timeout")
        .expect("a line")
        .unwrap();
    let event: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(event["type"], "MODIFIED", "{first}");
    assert_eq!(event["object"]["spec"]["replicas"], 4, "{first}");

    assert_eq!(snapshot(&t).await, before);
    t.host.stop().await;
}

#[tokio::test]
async fn malformed_write_options_are_400() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let create = bytes(&deployment("opts", 1));

    let r = send(
        &t.client,
        Method::POST,
        &format!("{DEPLOYMENTS}?dryRun=Maybe"),
        Some(JSON),
        create.clone(),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("Maybe"), "{msg}");

    let r = send(
        &t.client,
        Method::POST,
        &format!("{DEPLOYMENTS}?fieldManager={}", "m".repeat(129)),
        Some(JSON),
        create.clone(),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("fieldManager"), "{msg}");

    // Server-side apply needs a field manager, and `force` must be a boolean.
    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(APPLY),
        bytes(&deployment("web", 3)),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("fieldManager"), "{msg}");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}?fieldManager=tester&force=perhaps"),
        Some(APPLY),
        bytes(&deployment("web", 3)),
    )
    .await;
    failure(&r, 400, "BadRequest");

    // An apply body naming another object than the URL.
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}?fieldManager=tester"),
        Some(APPLY),
        bytes(&deployment("opts", 3)),
    )
    .await;
    failure(&r, 400, "BadRequest");

    // A precondition resourceVersion that is no number.
    let options = json!({"preconditions": {"resourceVersion": "abc"}});
    let r = send(&t.client, Method::DELETE, WEB, Some(JSON), bytes(&options)).await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/opts")).await;
    t.host.stop().await;
}

#[tokio::test]
async fn unknown_resources_and_verbs_get_a_status() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    let r = get(&t.client, "/apis/apps/v1/namespaces/default/widgets").await;
    failure(&r, 404, "NotFound");
    let r = get(&t.client, "/apis/nowhere.example.com/v1/things").await;
    failure(&r, 404, "NotFound");
    let r = send(
        &t.client,
        Method::POST,
        "/apis/apps/v1/namespaces/default/widgets",
        Some(JSON),
        bytes(&deployment("web2", 1)),
    )
    .await;
    failure(&r, 404, "NotFound");

    // POST names no object; PUT and PATCH need one.
    let r = send(
        &t.client,
        Method::POST,
        WEB,
        Some(JSON),
        bytes(&deployment("web", 1)),
    )
    .await;
    failure(&r, 405, "MethodNotAllowed");
    let r = send(
        &t.client,
        Method::PUT,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&deployment("web", 1)),
    )
    .await;
    failure(&r, 405, "MethodNotAllowed");

    // A subresource deployments do not have.
    let r = get(&t.client, &format!("{WEB}/logs")).await;
    failure(&r, 404, "NotFound");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{DEPLOYMENTS}/web2")).await;
    t.host.stop().await;
}

/// `levels` nested objects around `leaf`: `{"n":{"n":...leaf...}}`.
fn nested_objects(levels: usize, leaf: &str) -> String {
    format!("{}{leaf}{}", r#"{"n":"#.repeat(levels), "}".repeat(levels))
}

/// A ConfigMap-shaped create body whose `metadata.annotations` hold `depth` levels in all.
fn deep_configmap(name: &str, depth: usize) -> String {
    // The body's own object and `metadata` are two levels, `annotations` a third.
    format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","annotations":{}}}}}"#,
        nested_objects(depth - 2, r#""x""#)
    )
}

#[tokio::test]
async fn the_default_body_limit_is_kube_apiservers_3_mib() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let limit = 3 * 1024 * 1024;
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big"},
        "data": {"blob": "x".repeat(limit)},
    });
    let r = send(&t.client, Method::POST, CONFIGMAPS, Some(JSON), bytes(&cm)).await;
    let msg = failure(&r, 413, "RequestEntityTooLarge");
    assert!(msg.contains(&limit.to_string()), "{msg}");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{WEB}?fieldManager=test"),
        Some(APPLY),
        format!(
            "{{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{{\"name\":\"web\",\"annotations\":{{\"blob\":\"{}\"}}}}}}",
            "y".repeat(limit)
        ),
    )
    .await;
    failure(&r, 413, "RequestEntityTooLarge");
    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/big")).await;
    t.host.stop().await;
}

#[tokio::test]
async fn json_nested_past_the_limit_is_400_on_every_write_and_stores_nothing() {
    let limit = flotilla_apimachinery::nesting::MAX_NESTING_DEPTH;
    let t = host_with_web().await;
    let before = snapshot(&t).await;

    // Create: one level past the limit, and a body of nothing but brackets (which the JSON
    // parser alone would take apart recursively).
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        deep_configmap("deep", limit + 1),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(
        msg.contains(&format!("deeper than the limit of {limit}")),
        "{msg}"
    );
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        "[".repeat(1 << 20),
    )
    .await;
    failure(&r, 400, "BadRequest");

    // Update, merge and strategic merge patches, a JSON patch, and DeleteOptions.
    let mut current = get(&t.client, WEB).await.body;
    current["metadata"]["annotations"] = json!({"a": "b"});
    let deep_web = serde_json::to_string(&current).unwrap().replace(
        r#""a":"b""#,
        &format!(r#""a":{}"#, nested_objects(limit, "1")),
    );
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), deep_web).await;
    failure(&r, 400, "BadRequest");
    let deep_patch = format!(
        r#"{{"metadata":{{"labels":{}}}}}"#,
        nested_objects(limit, "1")
    );
    for ct in [MERGE, "application/strategic-merge-patch+json"] {
        let r = send(&t.client, Method::PATCH, WEB, Some(ct), deep_patch.clone()).await;
        failure(&r, 400, "BadRequest");
    }
    let deep_ops = format!(
        r#"[{{"op":"add","path":"/metadata/annotations","value":{}}}]"#,
        nested_objects(limit, "1")
    );
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), deep_ops).await;
    failure(&r, 400, "BadRequest");
    let r = send(
        &t.client,
        Method::DELETE,
        WEB,
        Some(JSON),
        format!(
            r#"{{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{}}}"#,
            nested_objects(limit, "1")
        ),
    )
    .await;
    failure(&r, 400, "BadRequest");

    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/deep")).await;

    // At the limit is accepted: the bound refuses only what is past it. A JSON patch whose
    // `test` value nests to exactly the limit (the array and the operation are two levels)
    // gets past decoding and fails only its test (422).
    let at_limit = format!(
        r#"[{{"op":"test","path":"/metadata/name","value":{}}}]"#,
        nested_objects(limit - 2, "1")
    );
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), at_limit).await;
    failure(&r, 422, "Invalid");
    assert_eq!(snapshot(&t).await, before);
    t.host.stop().await;
}

#[tokio::test]
async fn yaml_nested_past_the_limit_is_400_on_apply_and_stores_nothing() {
    let limit = flotilla_apimachinery::nesting::MAX_NESTING_DEPTH;
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    // Block style, indentation only: no brackets for a byte scan to count.
    let mut yaml =
        String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\n  annotations:\n");
    for level in 0..limit {
        yaml.push_str(&"  ".repeat(level + 2));
        yaml.push_str("n:\n");
    }
    yaml.push_str(&"  ".repeat(limit + 2));
    yaml.push_str("x: y\n");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{CONFIGMAPS}/deep?fieldManager=test"),
        Some(APPLY),
        yaml,
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("YAML") && msg.contains("deeper"), "{msg}");
    // Flow style too, and on a create with a YAML body.
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some("application/yaml"),
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: deep, annotations: {}}}\n",
            nested_objects(limit, "1")
        ),
    )
    .await;
    failure(&r, 400, "BadRequest");
    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/deep")).await;
    t.host.stop().await;
}

#[tokio::test]
async fn a_json_patch_of_more_than_10000_operations_is_413() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let op = json!({"op": "test", "path": "/metadata/name", "value": "web"});
    let ops = Value::Array(vec![op; 10_001]);
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), bytes(&ops)).await;
    let msg = failure(&r, 413, "RequestEntityTooLarge");
    assert!(msg.contains("10000"), "{msg}");
    assert_eq!(snapshot(&t).await, before);
    // 10,000 are accepted.
    let ops = Value::Array(vec![
        json!({"op": "test", "path": "/metadata/name", "value": "web"});
        10_000
    ]);
    let r = send(&t.client, Method::PATCH, WEB, Some(JSON_PATCH), bytes(&ops)).await;
    assert_eq!(r.code, 200, "{}", r.text);
    t.host.stop().await;
}

/// Protobuf wire encoding, enough for a hand-made body: a length-delimited field.
fn pb_bytes(tag: u32, payload: &[u8]) -> Vec<u8> {
    fn varint(mut n: u64, out: &mut Vec<u8>) {
        while n >= 0x80 {
            out.push((n as u8) | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
    }
    let mut out = Vec::new();
    varint(u64::from(tag << 3 | 2), &mut out);
    varint(payload.len() as u64, &mut out);
    out.extend_from_slice(payload);
    out
}

#[tokio::test]
async fn protobuf_with_embedded_json_nested_past_the_limit_is_400() {
    let limit = flotilla_apimachinery::nesting::MAX_NESTING_DEPTH;
    let t = common::start().await;
    let revisions = "/apis/apps/v1/namespaces/default/controllerrevisions";
    // A ControllerRevision whose `data` (a RawExtension: JSON inside the protobuf) nests past
    // the limit, though under the JSON parser's own.
    let body = |name: &str, depth: usize| {
        let object = [
            pb_bytes(1, &pb_bytes(1, name.as_bytes())),
            pb_bytes(2, &pb_bytes(1, nested_objects(depth, "1").as_bytes())),
            vec![3 << 3, 1],
        ]
        .concat();
        let type_meta = [pb_bytes(1, b"apps/v1"), pb_bytes(2, b"ControllerRevision")].concat();
        [
            b"k8s\0".to_vec(),
            pb_bytes(1, &type_meta),
            pb_bytes(2, &object),
        ]
        .concat()
    };
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
    let r = send(
        &t.client,
        Method::POST,
        revisions,
        Some(PROTOBUF),
        body("deep", limit + 10),
    )
    .await;
    let msg = failure(&r, 400, "BadRequest");
    assert!(msg.contains("protobuf") && msg.contains("deeper"), "{msg}");
    assert_absent(&t, &format!("{revisions}/deep")).await;
    // One level less than the limit in `data` (the object adds one) is stored.
    let r = send(
        &t.client,
        Method::POST,
        revisions,
        Some(PROTOBUF),
        body("fine", limit - 1),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    t.host.stop().await;
}

/// The `Warning` headers of a reply, as sent (`299 - "..."`).
fn warnings(reply: &Reply) -> Vec<String> {
    reply
        .headers
        .get_all(header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect()
}

/// `text` as a `Warning` header carries it.
fn warning_of(text: &str) -> String {
    format!("299 - \"{}\"", text.replace('"', "\\\""))
}

#[tokio::test]
async fn a_get_with_a_non_numeric_resource_version_is_400_in_kubes_words() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let kube_message = "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax";

    let r = get(&t.client, &format!("{WEB}?resourceVersion=abc")).await;
    assert_eq!(failure(&r, 400, "BadRequest"), kube_message);
    // The same answer as a LIST and a WATCH get, and on a subresource.
    let r = get(&t.client, &format!("{DEPLOYMENTS}?resourceVersion=abc")).await;
    assert_eq!(failure(&r, 400, "BadRequest"), kube_message);
    let r = get(&t.client, &format!("{WEB}/scale?resourceVersion=abc")).await;
    assert_eq!(failure(&r, 400, "BadRequest"), kube_message);
    let r = get(
        &t.client,
        &format!("{DEPLOYMENTS}?resourceVersion=99999999999999999999"),
    )
    .await;
    assert!(
        failure(&r, 400, "BadRequest").ends_with("value out of range"),
        "{}",
        r.text
    );

    // A version this storage issues is served.
    let rv = before.list_revision.clone();
    for version in ["0", rv.as_str()] {
        let r = get(&t.client, &format!("{WEB}?resourceVersion={version}")).await;
        assert_eq!(r.code, 200, "{version}: {}", r.text);
        assert_eq!(r.body["metadata"]["name"], "web");
    }
    assert_eq!(snapshot(&t).await, before);
    t.host.stop().await;
}

/// GET with a resourceVersion is kube's "not older than": one the store has not reached is
/// waited for (the write that reaches it lands meanwhile: 200), and past the wait it is 504
/// in kube's words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_at_a_resource_version_not_reached_waits_then_is_504() {
    let t = host_with_web().await;
    let current = t.host.server.storage.current_revision().await;

    // kube-rs retries a 504 on its own: this client shows the first answer.
    let kc = kube::config::Kubeconfig::read_from(&t.host.kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    let once = kube::Client::try_from(config).unwrap();
    let far = current + 1000;
    let r = get(&once, &format!("{WEB}?resourceVersion={far}")).await;
    assert_eq!(
        failure(&r, 504, "Timeout"),
        format!("Too large resource version: {far}, current: {current}")
    );
    let before = snapshot(&t).await;
    assert_eq!(
        before.storage_revision, current,
        "the refused GET changed nothing"
    );

    // Whichever reaches the server first, the GET is answered 200: sent first, it waits for
    // the write (the storage's own wait is tested in its conformance suite).
    let at_next = format!("{WEB}?resourceVersion={}", current + 1);
    let (read, written) = tokio::join!(get(&t.client, &at_next), async {
        send(
            &t.client,
            Method::POST,
            DEPLOYMENTS,
            Some(JSON),
            bytes(&deployment("other", 1)),
        )
        .await
    });
    assert_eq!(written.code, 201, "{}", written.text);
    assert_eq!(read.code, 200, "{}", read.text);
    assert_eq!(read.body["metadata"]["name"], "web");
    t.host.stop().await;
}

/// kube's messages for bad label selectors, with `unable to parse requirement` said once and
/// only where kube says it.
const BAD_SELECTORS: &[(&str, &str)] = &[
    (
        "a in (b",
        "unable to parse requirement: found '', expected: ',' or ')'",
    ),
    (
        "!",
        "unable to parse requirement: found '', expected: identifier",
    ),
    ("a=b=c", "found '=', expected: ',' or 'end of string'"),
];

#[tokio::test]
async fn label_selector_errors_are_kubes_messages() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    for (selector, message) in BAD_SELECTORS {
        let query: String = selector
            .bytes()
            .map(|b| {
                if b.is_ascii_alphanumeric() {
                    (b as char).to_string()
                } else {
                    format!("%{b:02X}")
                }
            })
            .collect();
        for uri in [
            format!("{DEPLOYMENTS}?labelSelector={query}"),
            format!("{DEPLOYMENTS}?watch=true&labelSelector={query}"),
        ] {
            let r = get(&t.client, &uri).await;
            assert_eq!(&failure(&r, 400, "BadRequest"), message, "{uri}");
        }
    }

    // As kubectl prints them.
    let kubectl = common::Kubectl::new(&t.host.kubeconfig);
    for (selector, message) in BAD_SELECTORS {
        let stderr = kubectl.fails(&["get", "deployments", "-l", selector]).await;
        // kubectl names what it looked for, then the server's message.
        assert_eq!(
            stderr.trim_end(),
            format!(
                "Error from server (BadRequest): Unable to find \"apps/v1, Resource=deployments\" that match label selector \"{selector}\", field selector \"\": {message}"
            ),
            "{selector}"
        );
    }
    assert_eq!(snapshot(&t).await, before);
    t.host.stop().await;
}

/// A host whose `generateName` suffixes are `script`'s, in turn (then its last one again),
/// and a count of the suffixes it made.
async fn host_with_suffixes(
    script: &'static [&'static str],
) -> (TestHost, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let calls = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let names = flotilla_generic_store::objects::NameGenerator::new(move || {
        let i = counted.fetch_add(1, Ordering::SeqCst);
        script[i.min(script.len() - 1)].to_string()
    });
    let t = common::start_with(|opts| opts.server.name_generator = names).await;
    (t, calls)
}

fn config_map(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

#[tokio::test]
async fn a_generated_name_that_is_taken_is_generated_again() {
    use std::sync::atomic::Ordering;
    let (t, calls) = host_with_suffixes(&["taken", "taken", "fresh"]).await;
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&config_map("web-taken", json!({"v": "first"}))),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    let before = calls.load(Ordering::SeqCst);

    let generated = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "web-"}, "data": {"v": "second"}});
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&generated),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    assert_eq!(r.body["metadata"]["name"], "web-fresh", "{}", r.text);
    assert_eq!(calls.load(Ordering::SeqCst) - before, 3);
    // The object that held the name is untouched.
    let taken = get(&t.client, &format!("{CONFIGMAPS}/web-taken")).await;
    assert_eq!(taken.body["data"]["v"], "first");
    t.host.stop().await;
}

#[tokio::test]
async fn every_generated_name_taken_is_409_after_eight_tries() {
    use std::sync::atomic::Ordering;
    let (t, calls) = host_with_suffixes(&["taken"]).await;
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&config_map("web-taken", json!({}))),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    let revision = t.host.server.storage.current_revision().await;
    let before = calls.load(Ordering::SeqCst);

    let generated =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "web-"}});
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&generated),
    )
    .await;
    assert_eq!(
        failure(&r, 409, "AlreadyExists"),
        "configmaps \"web-taken\" already exists, the server was not able to generate a unique name for the object"
    );
    assert_eq!(r.body["details"]["retryAfterSeconds"], 1, "{}", r.text);
    assert_eq!(r.body["details"]["name"], "web-taken", "{}", r.text);
    assert_eq!(
        r.headers
            .get(header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    assert_eq!(calls.load(Ordering::SeqCst) - before, 8);
    assert_eq!(t.host.server.storage.current_revision().await, revision);

    // A name the client chose is not retried: the plain AlreadyExists.
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&config_map("web-taken", json!({}))),
    )
    .await;
    assert_eq!(
        failure(&r, 409, "AlreadyExists"),
        "configmaps \"web-taken\" already exists"
    );
    assert_eq!(calls.load(Ordering::SeqCst) - before, 8);
    t.host.stop().await;
}

/// `count` bytes of data for a ConfigMap or Secret value.
fn blob(count: usize) -> String {
    "x".repeat(count)
}

const MIB: usize = 1024 * 1024;

#[tokio::test]
async fn config_maps_and_secrets_over_1_mib_of_data_are_422_on_every_write() {
    use base64::Engine;
    let t = host_with_web().await;
    let cm_message =
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes";
    let check = |r: &Reply, message: &str, field: &str| {
        assert_eq!(failure(r, 422, "Invalid"), message);
        assert_eq!(
            causes(r),
            [(
                "FieldValueTooLong".to_string(),
                field.to_string(),
                "Too long: may not be more than 1048576 bytes".to_string()
            )]
        );
    };
    // data and binaryData (counted decoded) together one byte over.
    let half = MIB / 2;
    let binary = base64::engine::general_purpose::STANDARD.encode(blob(half + 1));
    let mut big = config_map("big", json!({"text": blob(half)}));
    big["binaryData"] = json!({"bin": binary});
    let before = snapshot(&t).await;

    let r = send(&t.client, Method::POST, CONFIGMAPS, Some(JSON), bytes(&big)).await;
    check(&r, cm_message, "[]");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{CONFIGMAPS}/big?fieldManager=tester"),
        Some(APPLY),
        bytes(&big),
    )
    .await;
    check(&r, cm_message, "[]");
    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/big")).await;

    // Exactly 1 MiB is allowed; growing past it by update or patch is not.
    let fits = config_map("big", json!({"text": blob(MIB)}));
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&fits),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    let stored = get(&t.client, &format!("{CONFIGMAPS}/big")).await;
    let mut grown = stored.body.clone();
    grown["data"]["more"] = json!("y");
    let r = send(
        &t.client,
        Method::PUT,
        &format!("{CONFIGMAPS}/big"),
        Some(JSON),
        bytes(&grown),
    )
    .await;
    check(&r, cm_message, "[]");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{CONFIGMAPS}/big"),
        Some(MERGE),
        bytes(&json!({"data": {"more": "y"}})),
    )
    .await;
    check(&r, cm_message, "[]");
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{CONFIGMAPS}/big?fieldManager=tester"),
        Some(APPLY),
        bytes(&config_map("big", json!({"more": "y"}))),
    )
    .await;
    check(&r, cm_message, "[]");
    assert_eq!(
        get(&t.client, &format!("{CONFIGMAPS}/big")).await.text,
        stored.text
    );

    // A Secret counts its data as stored: stringData joins data.
    let secrets = "/api/v1/namespaces/default/secrets";
    let secret = json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "big"},
        "data": {"a": base64::engine::general_purpose::STANDARD.encode(blob(half))},
        "stringData": {"b": blob(half + 1)},
    });
    let r = send(&t.client, Method::POST, secrets, Some(JSON), bytes(&secret)).await;
    check(
        &r,
        "Secret \"big\" is invalid: data: Too long: may not be more than 1048576 bytes",
        "data",
    );
    assert_absent(&t, &format!("{secrets}/big")).await;
    t.host.stop().await;
}

/// A Deployment whose container carries `size` bytes of arguments.
fn big_deployment(name: &str, size: usize) -> Value {
    let mut d = deployment(name, 1);
    d["spec"]["template"]["spec"]["containers"][0]["args"] = json!([blob(size)]);
    d
}

/// Writes past the object limit get 413 naming the size and the limit, and store nothing.
async fn objects_over_the_limit_are_413(t: &TestHost, limit: usize) {
    let before = snapshot(t).await;
    let check = |r: &Reply| {
        let message = failure(r, 413, "RequestEntityTooLarge");
        assert!(
            message.starts_with("Request entity too large: deployments.apps \""),
            "{message}"
        );
        assert!(
            message.ends_with(&format!(
                "bytes when stored, over the limit of {limit} bytes"
            )),
            "{message}"
        );
        let size: usize = message
            .split(" is ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no size in {message}"));
        assert!(size > limit, "{message}");
    };
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&big_deployment("huge", limit + 1024)),
    )
    .await;
    check(&r);
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{DEPLOYMENTS}/huge?fieldManager=tester"),
        Some(APPLY),
        bytes(&big_deployment("huge", limit + 1024)),
    )
    .await;
    check(&r);
    let mut grown = get(&t.client, WEB).await.body;
    grown["spec"]["template"]["spec"]["containers"][0]["args"] = json!([blob(limit)]);
    let r = send(&t.client, Method::PUT, WEB, Some(JSON), bytes(&grown)).await;
    check(&r);
    let r = send(
        &t.client,
        Method::PATCH,
        WEB,
        Some(MERGE),
        bytes(&json!({"metadata": {"annotations": {"blob": blob(limit)}}})),
    )
    .await;
    check(&r);
    assert_eq!(snapshot(t).await, before);
    assert_absent(t, &format!("{DEPLOYMENTS}/huge")).await;

    // Below the limit is stored.
    let r = send(
        &t.client,
        Method::POST,
        DEPLOYMENTS,
        Some(JSON),
        bytes(&big_deployment("large", limit - 16 * 1024)),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
}

#[tokio::test]
async fn an_object_over_the_default_limit_is_413_on_the_embedded_store() {
    let t = host_with_web().await;
    objects_over_the_limit_are_413(&t, 3 * 512 * 1024).await;
    t.host.stop().await;
}

#[tokio::test]
async fn an_object_over_the_default_limit_is_413_on_etcd() {
    let etcd = flotilla_etcd::testing::EtcdCluster::start(1).await;
    let t = with_web(
        common::start_with(|opts| {
            opts.storage = flotilla_etcd::StorageChoice::Etcd(flotilla_etcd::EtcdOptions::new(
                etcd.endpoints(),
                "/registry/flotilla/host",
            ));
        })
        .await,
    )
    .await;
    objects_over_the_limit_are_413(&t, 3 * 512 * 1024).await;
    t.host.stop().await;
}

#[tokio::test]
async fn the_object_limit_is_the_servers_setting() {
    const LIMIT: usize = 64 * 1024;
    let t = with_web(common::start_with(|opts| opts.server.max_object_bytes = LIMIT).await).await;
    objects_over_the_limit_are_413(&t, LIMIT).await;
    t.host.stop().await;
}

#[tokio::test]
async fn repeated_keys_in_json_are_400_under_strict_and_warnings_under_warn() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let strict = format!("{CONFIGMAPS}?fieldValidation=Strict");
    let dup = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "data": {"a": "1", "a": "2"}}"#;

    let r = send(&t.client, Method::POST, &strict, Some(JSON), dup).await;
    assert_eq!(
        failure(&r, 400, "BadRequest"),
        r#"strict decoding error: duplicate field "data.a""#
    );
    // Listed with the unknown fields, in one error.
    let both = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup", "name": "dup"}, "bogus": true, "data": {"a": "1"}}"#;
    let r = send(&t.client, Method::POST, &strict, Some(JSON), both).await;
    assert_eq!(
        failure(&r, 400, "BadRequest"),
        r#"strict decoding error: duplicate field "metadata.name", unknown field "bogus""#
    );
    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/dup")).await;

    // Warn (the default): stored, the last value winning, and a warning naming the field.
    let r = send(&t.client, Method::POST, CONFIGMAPS, Some(JSON), dup).await;
    assert_eq!(r.code, 201, "{}", r.text);
    assert_eq!(r.body["data"]["a"], "2");
    assert_eq!(warnings(&r), [warning_of(r#"duplicate field "data.a""#)]);
    let dup_uri = format!("{CONFIGMAPS}/dup");
    let stored = get(&t.client, &dup_uri).await;

    // Every write of the object: update and each patch type.
    let strict_uri = format!("{dup_uri}?fieldValidation=Strict");
    // Without a resourceVersion, so each PUT below applies to whatever is stored.
    let mut unversioned = stored.body.clone();
    unversioned["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    let unversioned = serde_json::to_string(&unversioned).unwrap();
    let put = unversioned.replacen(r#""a":"2""#, r#""a":"3","a":"4""#, 1);
    assert_ne!(put, unversioned);
    let cases: &[(Method, &str, String, &str)] = &[
        (Method::PUT, JSON, put, r#"duplicate field "data.a""#),
        (
            Method::PATCH,
            MERGE,
            r#"{"data": {"b": "1", "b": "2"}}"#.into(),
            r#"duplicate field "data.b""#,
        ),
        (
            Method::PATCH,
            "application/strategic-merge-patch+json",
            r#"{"data": {"b": "1", "b": "2"}}"#.into(),
            r#"duplicate field "data.b""#,
        ),
        (
            Method::PATCH,
            JSON_PATCH,
            r#"[{"op": "add", "path": "/data/b", "op": "add", "value": "1"}]"#.into(),
            r#"json patch duplicate field "[0].op""#,
        ),
    ];
    for (method, content_type, body, problem) in cases {
        let r = send(
            &t.client,
            method.clone(),
            &strict_uri,
            Some(content_type),
            body.clone(),
        )
        .await;
        assert_eq!(
            failure(&r, 400, "BadRequest"),
            format!("strict decoding error: {problem}"),
            "{method} {content_type}"
        );
        assert_eq!(get(&t.client, &dup_uri).await.text, stored.text);
    }
    for (method, content_type, body, problem) in cases {
        let r = send(
            &t.client,
            method.clone(),
            &dup_uri,
            Some(content_type),
            body.clone(),
        )
        .await;
        assert_eq!(r.code, 200, "{method} {content_type}: {}", r.text);
        assert_eq!(
            warnings(&r),
            [warning_of(problem)],
            "{method} {content_type}"
        );
        // Ignore: written, nothing said.
        let r = send(
            &t.client,
            method.clone(),
            &format!("{dup_uri}?fieldValidation=Ignore"),
            Some(content_type),
            body.replace("\"4\"", "\"5\"").replace("\"2\"", "\"6\""),
        )
        .await;
        assert!(r.code == 200, "{method} {content_type}: {}", r.text);
        assert!(warnings(&r).is_empty(), "{:?}", warnings(&r));
    }
    t.host.stop().await;
}

#[tokio::test]
async fn repeated_keys_in_yaml_are_reported_with_their_lines() {
    let t = host_with_web().await;
    let before = snapshot(&t).await;
    let yaml =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup\ndata:\n  a: \"1\"\n  a: \"2\"\n";
    let line = r#"line 7: key "a" already set in map"#;

    let r = send(
        &t.client,
        Method::POST,
        &format!("{CONFIGMAPS}?fieldValidation=Strict"),
        Some("application/yaml"),
        yaml,
    )
    .await;
    assert_eq!(
        failure(&r, 400, "BadRequest"),
        format!("strict decoding error: yaml: unmarshal errors:\n  {line}")
    );
    // An apply patch (kubectl sends JSON, which is YAML) gets kube's apply wording.
    let apply = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup"}, "data": {"a": "1", "a": "2"}}"#;
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{CONFIGMAPS}/dup?fieldManager=tester&fieldValidation=Strict"),
        Some(APPLY),
        apply,
    )
    .await;
    assert_eq!(
        failure(&r, 400, "BadRequest"),
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 1: key \"a\" already set in map"
    );
    assert_eq!(snapshot(&t).await, before);
    assert_absent(&t, &format!("{CONFIGMAPS}/dup")).await;

    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some("application/yaml"),
        yaml,
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    assert_eq!(r.body["data"]["a"], "2");
    assert_eq!(warnings(&r), [warning_of(line)]);
    let r = send(
        &t.client,
        Method::PATCH,
        &format!("{CONFIGMAPS}/dup?fieldManager=tester"),
        Some(APPLY),
        apply,
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.text);
    assert_eq!(
        warnings(&r),
        [warning_of(r#"line 1: key "a" already set in map"#)]
    );
    t.host.stop().await;
}

/// A ConfigMap of `keys` one-byte values: its managedFields name every key, so they are
/// about as large as the data.
fn many_keys(name: &str, keys: usize) -> Value {
    let data: serde_json::Map<String, Value> = (0..keys)
        .map(|i| (format!("k{i:05}"), json!("x")))
        .collect();
    config_map(name, Value::Object(data))
}

#[tokio::test]
async fn managed_fields_are_dropped_when_only_they_break_the_object_limit() {
    const LIMIT: usize = 32 * 1024;
    let t = common::start_with(|opts| opts.server.max_object_bytes = LIMIT).await;
    // About 26 KB of data, and as much again of managedFields: stored without the latter.
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&many_keys("fits", 2000)),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    assert!(r.text.len() <= LIMIT, "{} bytes", r.text.len());
    let stored = get(&t.client, &format!("{CONFIGMAPS}/fits")).await;
    assert_eq!(stored.body["data"].as_object().unwrap().len(), 2000);
    assert_eq!(stored.body["metadata"].get("managedFields"), None);
    // A small object keeps them.
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&many_keys("small", 2)),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.text);
    assert!(r.body["metadata"]["managedFields"].is_array(), "{}", r.text);
    // Too large even without them: 413.
    let r = send(
        &t.client,
        Method::POST,
        CONFIGMAPS,
        Some(JSON),
        bytes(&many_keys("over", 3000)),
    )
    .await;
    failure(&r, 413, "RequestEntityTooLarge");
    assert_absent(&t, &format!("{CONFIGMAPS}/over")).await;
    t.host.stop().await;
}
