//! The host API server's side of garbage collection, without a collector running: what
//! DELETE's `propagationPolicy` does to an object's finalizers, deletionTimestamp and
//! generation (kube-apiserver's generic store semantics the collector relies on).

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, PropagationPolicy};
use serde_json::json;

fn policy(p: Option<PropagationPolicy>) -> DeleteParams {
    DeleteParams {
        propagation_policy: p,
        ..DeleteParams::default()
    }
}

async fn create(api: &Api<ConfigMap>, name: &str, finalizers: &[&str]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !finalizers.is_empty() {
        cm.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    }
    api.create(&PostParams::default(), &cm).await.unwrap()
}

/// The object a DELETE answered with (it must still exist).
async fn delete_held(api: &Api<ConfigMap>, name: &str, p: Option<PropagationPolicy>) -> ConfigMap {
    api.delete(name, &policy(p))
        .await
        .unwrap()
        .left()
        .expect("a delete held by finalizers answers with the object")
}

fn finalizers(cm: &ConfigMap) -> Vec<String> {
    cm.metadata.finalizers.clone().unwrap_or_default()
}

#[tokio::test]
async fn propagation_policies_set_and_switch_the_gc_finalizers() {
    let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(plane.client.clone(), "default");
    let created = create(&api, "cm", &[]).await;
    // A ConfigMap has no generation (kube-apiserver keeps none for the kind); marking it for
    // deletion adds none (kinds with one get it bumped: crates/host/tests/controllers.rs).
    assert_eq!(created.metadata.generation, None);

    // Dry run changes nothing.
    let dry = DeleteParams {
        dry_run: true,
        ..policy(Some(PropagationPolicy::Foreground))
    };
    api.delete("cm", &dry).await.unwrap();
    let unchanged = api.get("cm").await.unwrap();
    assert!(unchanged.metadata.deletion_timestamp.is_none());
    assert!(finalizers(&unchanged).is_empty());

    let fg = delete_held(&api, "cm", Some(PropagationPolicy::Foreground)).await;
    assert_eq!(finalizers(&fg), vec!["foregroundDeletion"]);
    let marked_at = fg
        .metadata
        .deletion_timestamp
        .clone()
        .expect("deletionTimestamp");
    assert_eq!(fg.metadata.generation, None);

    // A second delete switches the policy: the finalizer is replaced, nothing else moves.
    let orphan = delete_held(&api, "cm", Some(PropagationPolicy::Orphan)).await;
    assert_eq!(finalizers(&orphan), vec!["orphan"]);
    assert_eq!(orphan.metadata.deletion_timestamp, Some(marked_at));
    assert_eq!(orphan.metadata.generation, None);

    // Without a policy the object's own finalizers stand.
    let again = delete_held(&api, "cm", None).await;
    assert_eq!(finalizers(&again), vec!["orphan"]);
    assert_eq!(
        again.metadata.resource_version,
        orphan.metadata.resource_version
    );

    // Background drops the collector's finalizers: nothing holds the object any more.
    api.delete("cm", &policy(Some(PropagationPolicy::Background)))
        .await
        .unwrap();
    assert!(api.get_opt("cm").await.unwrap().is_none());

    plane.stop().await;
}

#[tokio::test]
async fn other_finalizers_keep_holding_the_object() {
    let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(plane.client.clone(), "default");
    create(&api, "held", &["example.com/hold"]).await;

    let orphan = delete_held(&api, "held", Some(PropagationPolicy::Orphan)).await;
    assert_eq!(finalizers(&orphan), vec!["example.com/hold", "orphan"]);
    let bg = delete_held(&api, "held", Some(PropagationPolicy::Background)).await;
    assert_eq!(finalizers(&bg), vec!["example.com/hold"]);
    assert!(bg.metadata.deletion_timestamp.is_some());

    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(api.get_opt("held").await.unwrap().is_none());

    // Background on an object without finalizers deletes at once (no finalizer added).
    create(&api, "plain", &[]).await;
    let r = api
        .delete("plain", &policy(Some(PropagationPolicy::Background)))
        .await
        .unwrap();
    if let Some(obj) = r.left() {
        assert!(finalizers(&obj).is_empty());
    }
    assert!(api.get_opt("plain").await.unwrap().is_none());
    plane.stop().await;
}

/// The collector's metadata edits rely on this: a merge patch carrying a stale
/// `metadata.resourceVersion` is refused, not applied over a newer write.
#[tokio::test]
async fn a_merge_patch_with_a_stale_resource_version_conflicts() {
    let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(plane.client.clone(), "default");
    let first = create(&api, "cm", &["a", "b"]).await;
    let stale = first.metadata.resource_version.clone().unwrap();
    api.patch(
        "cm",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    let err = api
        .patch(
            "cm",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": stale, "finalizers": ["a"]}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => assert_eq!(s.code, 409, "{s:?}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(finalizers(&api.get("cm").await.unwrap()), vec!["a", "b"]);
    plane.stop().await;
}
