//! The host's compiled-in admission through a real client: deletion protection for built-in
//! kinds, custom resources, namespaces, collection deletes and dry runs; and OverridePolicy
//! validation (422 with the field named, nothing stored) on create and update.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::time::Duration;

use flotilla_karmada_api::OverridePolicy;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const LABEL: &str = "resourcetemplate.karmada.io/deletion-protected";
const REFUSAL: &str = "This resource is protected, please make sure to remove the label: \
                       resourcetemplate.karmada.io/deletion-protected";

fn config_map(name: &str, protection: Option<&str>) -> ConfigMap {
    let mut labels = serde_json::Map::new();
    if let Some(value) = protection {
        labels.insert(LABEL.into(), json!(value));
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels},
        "data": {"k": "v"},
    }))
    .unwrap()
}

/// The status of a refused request; panics when it was not refused.
fn refused<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> (u16, String, String) {
    match result {
        Err(kube::Error::Api(s)) => (s.code, s.reason.clone(), s.message.clone()),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

async fn names(api: &Api<ConfigMap>) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    names.sort();
    names
}

async fn unprotect(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {LABEL: null}}})),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn protected_objects_are_not_deleted_until_the_label_goes() {
    let t = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    let pp = PostParams::default();
    for (name, protection) in [
        ("a-open", None),
        ("b-kept", Some("Always")),
        ("c-never", Some("Never")),
        ("d-after", None),
    ] {
        cms.create(&pp, &config_map(name, protection))
            .await
            .unwrap();
    }

    // One object: 403 in Karmada's words, also under dry run, and it stays.
    let (code, reason, message) = refused(cms.delete("b-kept", &DeleteParams::default()).await);
    assert_eq!((code, reason.as_str()), (403, "Forbidden"));
    assert!(message.contains(REFUSAL), "{message}");
    assert!(
        message.starts_with(
            "admission webhook \"resourcedeletionprotection.karmada.io\" denied the request"
        ),
        "{message}"
    );
    let dry = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    assert_eq!(refused(cms.delete("b-kept", &dry).await).0, 403);
    // Any other value of the label protects nothing.
    cms.delete("c-never", &DeleteParams::default())
        .await
        .unwrap();

    // A collection delete goes item by item in name order and stops at the refused one:
    // what came before is gone, it and what comes after stay.
    let (code, _, message) = refused(
        cms.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert!(message.contains(REFUSAL), "{message}");
    assert_eq!(names(&cms).await, ["b-kept", "d-after"]);

    // Without the label it goes like any other.
    unprotect(&cms, "b-kept").await;
    cms.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    assert!(names(&cms).await.is_empty());

    // Custom resources too (a Karmada policy).
    let ops: Api<OverridePolicy> = Api::namespaced(t.client.clone(), "default");
    let op: OverridePolicy = serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": "op", "labels": {LABEL: "Always"}},
        "spec": {},
    }))
    .unwrap();
    ops.create(&pp, &op).await.unwrap();
    assert_eq!(
        refused(ops.delete("op", &DeleteParams::default()).await).0,
        403
    );
    ops.patch(
        "op",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {LABEL: "Never"}}})),
    )
    .await
    .unwrap();
    ops.delete("op", &DeleteParams::default()).await.unwrap();
    t.host.stop().await;
}

#[tokio::test]
async fn namespaces_are_protected_and_wait_for_protected_contents() {
    let t = common::start().await;
    let namespaces: Api<Namespace> = Api::all(t.client.clone());
    let pp = PostParams::default();
    for (name, protection) in [("guarded", Some("Always")), ("holder", None)] {
        let labels = match protection {
            Some(value) => json!({LABEL: value}),
            None => json!({}),
        };
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels},
        }))
        .unwrap();
        namespaces.create(&pp, &ns).await.unwrap();
    }
    let (code, _, message) = refused(namespaces.delete("guarded", &DeleteParams::default()).await);
    assert_eq!(code, 403);
    assert!(message.contains(REFUSAL), "{message}");
    let guarded = namespaces.get("guarded").await.unwrap();
    assert!(guarded.metadata.deletion_timestamp.is_none());

    // An unprotected namespace holding a protected object: Terminating until the label goes.
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "holder");
    cms.create(&pp, &config_map("kept", Some("Always")))
        .await
        .unwrap();
    cms.create(&pp, &config_map("free", None)).await.unwrap();
    namespaces
        .delete("holder", &DeleteParams::default())
        .await
        .unwrap();
    // The cleanup takes the free object and leaves the protected one.
    eventually(
        "the unprotected ConfigMap is cleaned up",
        Duration::from_secs(20),
        || async { names(&cms).await == ["kept"] },
    )
    .await;
    let holder = namespaces.get("holder").await.unwrap();
    assert!(holder.metadata.deletion_timestamp.is_some());
    unprotect(&cms, "kept").await;
    eventually("the namespace is gone", Duration::from_secs(20), || async {
        namespaces.get_opt("holder").await.unwrap().is_none()
    })
    .await;
    t.host.stop().await;
}

fn override_policy(name: &str, overriders: Value) -> OverridePolicy {
    serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": name},
        "spec": {"overrideRules": [{"overriders": overriders}]},
    }))
    .unwrap()
}

#[tokio::test]
async fn override_policies_that_cannot_apply_are_invalid() {
    let t = common::start().await;
    let ops: Api<OverridePolicy> = Api::namespaced(t.client.clone(), "default");
    let pp = PostParams::default();
    let rule = "spec.overrideRules[0].overriders";
    for (overriders, field) in [
        (
            json!({"plaintext": [{"path": "/spec/replicas", "operator": "replace"}]}),
            format!("{rule}.plaintext[0].value"),
        ),
        (
            json!({"plaintext": [{"path": "spec/replicas", "operator": "remove"}]}),
            format!("{rule}.plaintext[0].path"),
        ),
        (
            json!({"imageOverrider": [{"predicate": {"path": "image"}, "component": "Tag",
                                       "operator": "replace", "value": "1"}]}),
            format!("{rule}.imageOverrider[0].predicate.path"),
        ),
        (
            json!({"fieldOverrider": [{"fieldPath": "/data/c",
                                       "json": [{"subPath": "/a~2", "operator": "remove"}]}]}),
            format!("{rule}.fieldOverrider[0].json[0].subPath"),
        ),
        (
            json!({"fieldOverrider": [{"fieldPath": "/data/c",
                                       "yaml": [{"subPath": "/a", "operator": "add"}]}]}),
            format!("{rule}.fieldOverrider[0].yaml[0].value"),
        ),
    ] {
        let (code, reason, message) =
            refused(ops.create(&pp, &override_policy("bad", overriders)).await);
        assert_eq!((code, reason.as_str()), (422, "Invalid"), "{message}");
        assert!(
            message.contains("OverridePolicy.policy.karmada.io \"bad\" is invalid")
                && message.contains(&field),
            "{field}: {message}"
        );
        assert!(ops.get_opt("bad").await.unwrap().is_none());
    }

    // A good one is stored; an update that breaks it is refused and leaves it as it was.
    let good =
        json!({"plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 2}]});
    ops.create(&pp, &override_policy("good", good))
        .await
        .unwrap();
    let (code, _, message) = refused(
        ops.patch(
            "good",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"overrideRules": [{"overriders": {"plaintext": [
                {"path": "/spec/replicas", "operator": "add"}]}}]}}),
            ),
        )
        .await,
    );
    assert_eq!(code, 422, "{message}");
    assert!(
        message.contains(&format!("{rule}.plaintext[0].value")),
        "{message}"
    );
    let stored = ops.get("good").await.unwrap();
    assert_eq!(
        stored.spec.override_rules[0].overriders.plaintext[0].value,
        Some(json!(2))
    );
    t.host.stop().await;
}
