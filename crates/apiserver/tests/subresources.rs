//! Partial subresources and a kind's own create/update preparation, on a made-up kind served
//! over an in-memory storage with RBAC: a `Gadget` has `status` and an `approval`
//! subresource owning `.status.conditions` whose writers also need `approve` on the gadget's
//! `spec.owner` (as a CSR's approvers need `approve` on its signer).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::body::Body;
use flotilla_apimachinery::{Cause, PartialSubresource, Permission, Requester, ResourceDef};
use flotilla_apiserver::auth::PeerIdentity;
use flotilla_apiserver::{ApiServer, Registry, ServerConfig, ServerOptions};
use flotilla_generic_store::UserInfo;
use flotilla_rbac::RbacAuthorizer;
use flotilla_storage::{MemoryStorage, Storage};
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

const BASE: &str = "/apis/example.com/v1/gadgets";

fn gadget_def() -> ResourceDef {
    let mut def = ResourceDef::new("example.com", "v1", "Gadget", "gadgets", false)
        .with_status()
        .with_partial_subresource(PartialSubresource {
            name: "approval".into(),
            path: ".status.conditions".into(),
            permission: Some(Arc::new(|stored: &Value| {
                let owner = stored.pointer("/spec/owner")?.as_str()?.to_string();
                Some(Permission {
                    verb: "approve".into(),
                    group: "example.com".into(),
                    resource: "owners".into(),
                    names: vec![owner.clone(), "*".into()],
                    message: format!("user not permitted to approve gadgets of {owner:?}"),
                })
            })),
        });
    // Records the creator, as a CSR records its requester.
    def.prepare_create = Some(Arc::new(|obj: &mut Value, who: Option<&Requester<'_>>| {
        obj["spec"]["creator"] = json!(who.map(|w| w.name));
    }));
    // The spec is fixed after create; `status` may not touch the `Locked` condition.
    def.prepare_update = Some(Arc::new(
        |new: &mut Value, old: &Value, sub: Option<&str>| {
            new["spec"] = old["spec"].clone();
            let locked = |v: &Value| {
                v.pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|c| c["type"] == "Locked")
                    .count()
            };
            if sub == Some("status") && locked(new) != locked(old) {
                return vec![Cause::new(
                    "FieldValueForbidden",
                    "Forbidden: the Locked condition is set through approval",
                    "status.conditions",
                )];
            }
            Vec::new()
        },
    ));
    def
}

fn server() -> Arc<ApiServer> {
    let registry = Registry::new();
    registry.register(gadget_def());
    let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
    let rbac = Arc::new(RbacAuthorizer::new());
    let role = |name: &str, rules: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": name}, "rules": rules})
    };
    let bind = |name: &str, user: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": name},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}]})
    };
    for (kind, obj) in [
        (
            "ClusterRole",
            role(
                "admin",
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                       {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
            ),
        ),
        ("ClusterRoleBinding", bind("admin", "root")),
        // Both may write the approval subresource; only bob may approve for owner "acme".
        (
            "ClusterRole",
            role(
                "writer",
                json!([{"apiGroups": ["example.com"], "resources": ["gadgets", "gadgets/approval", "gadgets/status"], "verbs": ["get", "update", "patch"]}]),
            ),
        ),
        ("ClusterRoleBinding", bind("writer", "alice")),
        (
            "ClusterRoleBinding",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "writer-bob"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "writer"},
               "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"}]}),
        ),
        (
            "ClusterRole",
            role(
                "approver",
                json!([{"apiGroups": ["example.com"], "resources": ["owners"], "resourceNames": ["acme"], "verbs": ["approve"]}]),
            ),
        ),
        ("ClusterRoleBinding", bind("approver", "bob")),
    ] {
        rbac.upsert(kind, &obj).unwrap();
    }
    ApiServer::with_options(
        Arc::new(registry),
        storage,
        ServerConfig::default(),
        ServerOptions {
            rbac: Some(rbac),
            ..ServerOptions::default()
        },
    )
}

async fn call(
    server: &Arc<ApiServer>,
    user: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, content_type)
        .body(body.map_or_else(Body::empty, |b| Body::from(b.to_string())))
        .unwrap();
    req.extensions_mut()
        .insert(PeerIdentity::user(UserInfo::new(user, &[])));
    let resp = server.router().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn create(server: &Arc<ApiServer>, name: &str, owner: &str) -> Value {
    let (status, body) = call(
        server,
        "root",
        "POST",
        BASE,
        "application/json",
        Some(json!({"metadata": {"name": name},
                    "spec": {"owner": owner, "creator": "forged"},
                    "status": {"conditions": [{"type": "Locked"}]}})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body
}

#[tokio::test]
async fn create_records_the_creator_and_drops_status() {
    let s = server();
    let body = create(&s, "g1", "acme").await;
    assert_eq!(body["spec"]["creator"], "root", "{body}");
    assert!(body.get("status").is_none(), "{body}");
}

#[tokio::test]
async fn approval_writes_only_the_conditions() {
    let s = server();
    create(&s, "g1", "acme").await;
    // A PUT to approval that also tries to change the spec, the status and the labels.
    let put = json!({"metadata": {"name": "g1", "labels": {"x": "y"}},
                     "spec": {"owner": "other"},
                     "status": {"certificate": "forged", "conditions": [{"type": "Locked"}]}});
    let (status, body) = call(
        &s,
        "bob",
        "PUT",
        &format!("{BASE}/g1/approval"),
        "application/json",
        Some(put),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], json!({"conditions": [{"type": "Locked"}]}));
    assert_eq!(body["spec"]["owner"], "acme");
    assert!(body["metadata"].get("labels").is_none(), "{body}");

    // GET through the subresource answers the whole object.
    let (status, got) = call(&s, "bob", "GET", &format!("{BASE}/g1/approval"), "", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(got["spec"]["owner"], "acme");

    // A main write keeps what approval and status own; the kind keeps its spec.
    let (status, body) = call(
        &s,
        "root",
        "PATCH",
        &format!("{BASE}/g1"),
        "application/merge-patch+json",
        Some(json!({"metadata": {"labels": {"a": "b"}}, "spec": {"owner": "x"}, "status": null})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(body["spec"]["owner"], "acme");
    assert_eq!(body["status"]["conditions"], json!([{"type": "Locked"}]));

    // Status writes may change status (not the spec), and the kind's rule refuses them
    // touching the Locked condition.
    let (status, body) = call(
        &s,
        "root",
        "PATCH",
        &format!("{BASE}/g1/status"),
        "application/merge-patch+json",
        Some(json!({"spec": {"owner": "x"}, "status": {"certificate": "abc"}})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"]["certificate"], "abc");
    assert_eq!(body["spec"]["owner"], "acme");
    let (status, body) = call(
        &s,
        "root",
        "PATCH",
        &format!("{BASE}/g1/status"),
        "application/merge-patch+json",
        Some(json!({"status": {"conditions": []}})),
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["details"]["causes"][0]["field"], "status.conditions");
}

#[tokio::test]
async fn approval_needs_the_extra_permission() {
    let s = server();
    create(&s, "g1", "acme").await;
    create(&s, "g2", "initech").await;
    let patch = json!({"status": {"conditions": [{"type": "Locked"}]}});
    // alice may write gadgets/approval but not approve for acme: 403 naming the object.
    let (status, body) = call(
        &s,
        "alice",
        "PATCH",
        &format!("{BASE}/g1/approval"),
        "application/merge-patch+json",
        Some(patch.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        body["message"],
        "gadgets.example.com \"g1\" is forbidden: user not permitted to approve gadgets of \"acme\""
    );
    assert_eq!(body["details"]["name"], "g1");
    // Nothing changed.
    let (_, got) = call(&s, "root", "GET", &format!("{BASE}/g1"), "", None).await;
    assert!(got.get("status").is_none(), "{got}");
    // bob may approve for acme, not for initech.
    let (status, body) = call(
        &s,
        "bob",
        "PATCH",
        &format!("{BASE}/g1/approval"),
        "application/merge-patch+json",
        Some(patch.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, _) = call(
        &s,
        "bob",
        "PATCH",
        &format!("{BASE}/g2/approval"),
        "application/merge-patch+json",
        Some(patch.clone()),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // The wildcard name counts: root's `*` rules cover everything.
    let (status, _) = call(
        &s,
        "root",
        "PATCH",
        &format!("{BASE}/g2/approval"),
        "application/merge-patch+json",
        Some(patch),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // Unknown subresources are still 404.
    let (status, _) = call(&s, "root", "GET", &format!("{BASE}/g1/nothing"), "", None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn discovery_lists_the_partial_subresource() {
    let s = server();
    let (status, body) = call(&s, "root", "GET", "/apis/example.com/v1", "", None).await;
    assert_eq!(status, StatusCode::OK);
    let names: Vec<&str> = body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["gadgets", "gadgets/status", "gadgets/approval"]);
    let approval = &body["resources"][2];
    assert_eq!(approval["verbs"], json!(["get", "patch", "update"]));
    assert_eq!(approval["kind"], "Gadget");
}
