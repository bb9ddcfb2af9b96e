//! The garbage collector against a real host, in-process over loopback
//! (`flotilla_testenv::ControlPlane`): ConfigMaps owning ConfigMaps, and a custom resource
//! of a CRD created during the test.
//!
//! - background: dependents of a deleted owner go; one with a second, live owner stays and
//!   only loses the reference to the deleted one;
//! - foreground: the owner stays (deletionTimestamp + `foregroundDeletion`) while a
//!   dependent with blockOwnerDeletion exists, and goes after it; a non-blocking dependent
//!   does not hold it; cascades through a dependent that owns things itself;
//! - orphan: dependents stay, without the reference;
//! - uid: a reference naming an existing object with another uid is dangling;
//! - discovery: a custom resource of a CRD created after the collector started is collected.
//!
//! Every wait is a poll of the API for the expected state with a deadline.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_testwait::eventually;
use std::time::Duration;

use flotilla_gc::{GarbageCollector, GcOptions};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PostParams, PropagationPolicy,
};
use serde_json::json;

const NS: &str = "default";
const DEADLINE: Duration = Duration::from_secs(30);
const HOLD: &str = "example.com/hold";

struct Env {
    plane: flotilla_testenv::ControlPlane,
    gc: GarbageCollector,
}

impl Env {
    async fn start() -> Env {
        let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
        let gc = flotilla_gc::spawn(plane.client.clone(), GcOptions::default());
        tokio::time::timeout(DEADLINE, gc.synced())
            .await
            .expect("the collector lists everything in time");
        Env { plane, gc }
    }

    fn cms(&self) -> Api<ConfigMap> {
        Api::namespaced(self.plane.client.clone(), NS)
    }

    async fn stop(self) {
        self.gc.stop().await;
        self.plane.stop().await;
    }
}

fn owner_ref(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().unwrap(),
        uid: owner.metadata.uid.clone().unwrap(),
        block_owner_deletion: block.then_some(true),
        controller: None,
    }
}

async fn create_cm(
    api: &Api<ConfigMap>,
    name: &str,
    owners: Vec<OwnerReference>,
    finalizers: &[&str],
) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !owners.is_empty() {
        cm.metadata.owner_references = Some(owners);
    }
    if !finalizers.is_empty() {
        cm.metadata.finalizers = Some(finalizers.iter().map(|f| f.to_string()).collect());
    }
    api.create(&PostParams::default(), &cm).await.unwrap()
}

fn delete_with(policy: Option<PropagationPolicy>) -> DeleteParams {
    DeleteParams {
        propagation_policy: policy,
        ..DeleteParams::default()
    }
}

async fn gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(&format!("{name} to be deleted"), DEADLINE, || async {
        api.get_opt(name).await.unwrap().is_none().then_some(())
    })
    .await
}

async fn release(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
}

fn owner_uids(cm: &ConfigMap) -> Vec<String> {
    cm.metadata
        .owner_references
        .iter()
        .flatten()
        .map(|r| r.uid.clone())
        .collect()
}

#[tokio::test]
async fn background_deletion_collects_dependents_and_keeps_those_with_another_owner() {
    let env = Env::start().await;
    let api = env.cms();
    let owner = create_cm(&api, "owner", vec![], &[]).await;
    let other = create_cm(&api, "other", vec![], &[]).await;
    create_cm(&api, "dep1", vec![owner_ref(&owner, false)], &[]).await;
    create_cm(&api, "dep2", vec![owner_ref(&owner, true)], &[]).await;
    create_cm(
        &api,
        "shared",
        vec![owner_ref(&owner, false), owner_ref(&other, false)],
        &[],
    )
    .await;

    // No policy: Background, the default.
    api.delete("owner", &delete_with(None)).await.unwrap();
    gone(&api, "owner").await;
    gone(&api, "dep1").await;
    gone(&api, "dep2").await;
    let other_uid = other.metadata.uid.clone().unwrap();
    let shared = eventually(
        "the dangling reference of shared to be removed",
        DEADLINE,
        || async {
            let cm = api.get("shared").await.unwrap();
            (owner_uids(&cm) == vec![other_uid.clone()]).then_some(cm)
        },
    )
    .await;
    assert!(shared.metadata.deletion_timestamp.is_none());

    // The collector counts a write after the server answered it, so the counters may trail
    // what the test saw through the API by a moment: wait for them, then check them exactly.
    let text = eventually("the collector's counters to catch up", DEADLINE, || async {
        let text = env.gc.metrics_text();
        text.contains("flotilla_gc_dangling_references_removed_total 1")
            .then_some(text)
    })
    .await;
    assert!(
        text.contains("flotilla_gc_deletions_total{policy=\"background\"} 2"),
        "{text}"
    );
    assert!(
        text.contains("flotilla_gc_dangling_references_removed_total 1"),
        "{text}"
    );
    env.stop().await;
}

#[tokio::test]
async fn foreground_deletion_waits_for_blocking_dependents_only() {
    let env = Env::start().await;
    let api = env.cms();
    let owner = create_cm(&api, "owner", vec![], &[]).await;
    // Both dependents are held by a finalizer of their own once deleted, so the states in
    // between can be observed.
    create_cm(&api, "blocker", vec![owner_ref(&owner, true)], &[HOLD]).await;
    create_cm(&api, "free", vec![owner_ref(&owner, false)], &[HOLD]).await;

    let answer = api
        .delete("owner", &delete_with(Some(PropagationPolicy::Foreground)))
        .await
        .unwrap();
    assert!(answer.is_left(), "a foreground delete returns the object");

    // The collector deletes both dependents...
    for name in ["blocker", "free"] {
        eventually(
            &format!("{name} to be deleted by the collector"),
            DEADLINE,
            || async {
                let cm = api.get(name).await.unwrap();
                cm.metadata.deletion_timestamp.is_some().then_some(())
            },
        )
        .await;
    }
    // ...while the owner waits for the blocking one (which cannot go before we release it).
    let waiting = api.get("owner").await.unwrap();
    assert!(waiting.metadata.deletion_timestamp.is_some());
    assert!(
        waiting
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == flotilla_gc::FINALIZER_FOREGROUND),
        "{:?}",
        waiting.metadata
    );

    release(&api, "blocker").await;
    gone(&api, "blocker").await;
    // "free" still exists (held by its own finalizer) but does not block the owner.
    gone(&api, "owner").await;
    assert!(api.get_opt("free").await.unwrap().is_some());
    release(&api, "free").await;
    gone(&api, "free").await;
    env.stop().await;
}

#[tokio::test]
async fn foreground_deletion_cascades_through_dependents_that_own_things() {
    let env = Env::start().await;
    let api = env.cms();
    let top = create_cm(&api, "top", vec![], &[]).await;
    let mid = create_cm(&api, "mid", vec![owner_ref(&top, true)], &[]).await;
    create_cm(&api, "leaf", vec![owner_ref(&mid, true)], &[HOLD]).await;

    api.delete("top", &delete_with(Some(PropagationPolicy::Foreground)))
        .await
        .unwrap();
    // mid is deleted in the foreground in turn: it waits for leaf, and top waits for mid.
    let mid_now = eventually("mid to be deleted in the foreground", DEADLINE, || async {
        let cm = api.get("mid").await.unwrap();
        cm.metadata.deletion_timestamp.is_some().then_some(cm)
    })
    .await;
    assert!(
        mid_now
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == flotilla_gc::FINALIZER_FOREGROUND),
        "{:?}",
        mid_now.metadata
    );
    eventually("leaf to be deleted", DEADLINE, || async {
        let cm = api.get("leaf").await.unwrap();
        cm.metadata.deletion_timestamp.is_some().then_some(())
    })
    .await;
    assert!(api.get_opt("top").await.unwrap().is_some());

    release(&api, "leaf").await;
    gone(&api, "leaf").await;
    gone(&api, "mid").await;
    gone(&api, "top").await;
    env.stop().await;
}

#[tokio::test]
async fn orphan_deletion_leaves_dependents_without_the_reference() {
    let env = Env::start().await;
    let api = env.cms();
    let owner = create_cm(&api, "owner", vec![], &[]).await;
    let other = create_cm(&api, "other", vec![], &[]).await;
    create_cm(&api, "dep1", vec![owner_ref(&owner, true)], &[]).await;
    create_cm(
        &api,
        "dep2",
        vec![owner_ref(&owner, false), owner_ref(&other, false)],
        &[],
    )
    .await;

    api.delete("owner", &delete_with(Some(PropagationPolicy::Orphan)))
        .await
        .unwrap();
    // The orphan finalizer goes only after every dependent let go of the owner.
    gone(&api, "owner").await;
    let dep1 = api.get("dep1").await.unwrap();
    assert!(owner_uids(&dep1).is_empty(), "{:?}", dep1.metadata);
    assert!(dep1.metadata.deletion_timestamp.is_none());
    let dep2 = api.get("dep2").await.unwrap();
    assert_eq!(owner_uids(&dep2), vec![other.metadata.uid.clone().unwrap()]);
    assert!(
        env.gc
            .metrics_text()
            .contains("flotilla_gc_orphanings_total 2")
    );
    env.stop().await;
}

#[tokio::test]
async fn a_reference_with_the_wrong_uid_is_dangling() {
    let env = Env::start().await;
    let api = env.cms();
    let real = create_cm(&api, "real", vec![], &[]).await;
    let mut wrong = owner_ref(&real, false);
    wrong.uid = "00000000-0000-0000-0000-000000000001".into();
    create_cm(&api, "right-dep", vec![owner_ref(&real, false)], &[]).await;
    create_cm(&api, "wrong-dep", vec![wrong], &[]).await;

    gone(&api, "wrong-dep").await;
    // The collector looked at (and deleted) wrong-dep after both existed; right-dep's owner
    // is there with its uid.
    assert!(api.get_opt("right-dep").await.unwrap().is_some());
    assert!(api.get_opt("real").await.unwrap().is_some());
    env.stop().await;
}

#[tokio::test]
async fn custom_resources_of_a_crd_created_later_are_collected() {
    let env = Env::start().await;
    let client = env.plane.client.clone();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    let widgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &ar);
    eventually("widgets to be served", DEADLINE, || async {
        widgets.list(&Default::default()).await.ok().map(|_| ())
    })
    .await;

    let api = env.cms();
    let owner = create_cm(&api, "owner", vec![], &[]).await;
    let mut w = DynamicObject::new("w1", &ar).within(NS);
    w.metadata.owner_references = Some(vec![owner_ref(&owner, false)]);
    widgets.create(&PostParams::default(), &w).await.unwrap();
    // Only a watch of widgets, started by a discovery after the CRD appeared, can show the
    // collector w1 (seen before or after its owner went, it is collected either way).
    api.delete("owner", &delete_with(None)).await.unwrap();
    gone(&widgets, "w1").await;
    env.stop().await;
}
