//! What client-go-style controllers rely on from the host, driven with kube-rs over TLS:
//! a finalizer-holding controller that reacts only to `metadata.generation` changes finishes
//! deletions (the deletion mark bumps the generation) of built-in and custom resources, and
//! objects of compiled-in kinds with a status subresource always carry `status` (on create,
//! GET, LIST and watch events), while custom resources keep kube-apiserver's "no status until
//! one is written".

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, predicates, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const FINALIZER: &str = "example.com/cleanup";

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "finalizers": [FINALIZER]},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

fn propagation_policy_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    )
}

fn propagation_policy(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "finalizers": [FINALIZER]},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": {},
        },
    }))
    .unwrap()
}

/// The controller under test: it sees an object only when its generation changes (as
/// Karmada's controllers filter with `GenerationChangedPredicate`) and removes its finalizer
/// from objects being deleted. Each finalizer it removes is reported on `done`.
async fn generation_only_finalizer_controller<K>(
    api: Api<K>,
    done: tokio::sync::mpsc::UnboundedSender<String>,
) where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let stream = watcher(api.clone(), watcher::Config::default())
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        let Ok(obj) = item else { continue };
        if obj.meta().deletion_timestamp.is_none() {
            continue;
        }
        let remaining: Vec<String> = obj
            .finalizers()
            .iter()
            .filter(|f| *f != FINALIZER)
            .cloned()
            .collect();
        let patch = json!({"metadata": {
            "finalizers": remaining,
            "resourceVersion": obj.resource_version(),
        }});
        if api
            .patch(
                &obj.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .is_ok()
        {
            let _ = done.send(obj.name_any());
        }
    }
}

/// Deletes `name` and waits until the controller has released it and it is gone.
async fn delete_through_controller<K>(
    api: &Api<K>,
    name: &str,
    done: &mut tokio::sync::mpsc::UnboundedReceiver<String>,
) where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let before = api.get(name).await.unwrap();
    let generation = before.meta().generation.expect("generation is set");
    // The answer to the DELETE is the marked object (the controller may release it at once).
    let marked = api
        .delete(name, &DeleteParams::default())
        .await
        .unwrap()
        .left()
        .expect("a finalizer holds the object, so DELETE answers with it");
    assert!(marked.meta().deletion_timestamp.is_some());
    assert_eq!(
        marked.meta().generation,
        Some(generation + 1),
        "marking {name} for deletion bumps its generation"
    );
    let released = tokio::time::timeout(Duration::from_secs(30), done.recv())
        .await
        .expect("the generation-only controller never saw the deletion")
        .expect("controller stopped");
    assert_eq!(released, name);
    eventually(
        &format!("{name} gone after its finalizer went"),
        Duration::from_secs(30),
        || async { api.get_opt(name).await.unwrap().is_none() },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generation_only_controllers_finish_deletions_of_builtin_and_custom_resources() {
    let h = common::start().await;

    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), "default");
    let (tx, mut done) = tokio::sync::mpsc::unbounded_channel();
    let controller = tokio::spawn(generation_only_finalizer_controller(
        deployments.clone(),
        tx,
    ));
    deployments
        .create(&PostParams::default(), &deployment("web"))
        .await
        .unwrap();
    delete_through_controller(&deployments, "web", &mut done).await;
    controller.abort();

    let policies: Api<DynamicObject> =
        Api::namespaced_with(h.client.clone(), "default", &propagation_policy_resource());
    let (tx, mut done) = tokio::sync::mpsc::unbounded_channel();
    let controller = tokio::spawn(generation_only_finalizer_controller(policies.clone(), tx));
    policies
        .create(&PostParams::default(), &propagation_policy("web"))
        .await
        .unwrap();
    delete_through_controller(&policies, "web", &mut done).await;
    controller.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn builtin_kinds_with_a_status_subresource_always_carry_status() {
    let h = common::start().await;
    let deployments: Api<Deployment> = Api::namespaced(h.client.clone(), "default");
    let raw: Api<DynamicObject> = Api::namespaced_with(
        h.client.clone(),
        "default",
        &ApiResource::erase::<Deployment>(&()),
    );
    let mut events = raw
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();

    let mut created = deployment("plain");
    created.metadata.finalizers = None;
    deployments
        .create(&PostParams::default(), &created)
        .await
        .unwrap();
    let got = raw.get("plain").await.unwrap();
    assert_eq!(got.data.get("status"), Some(&json!({})), "GET: {got:?}");
    let listed = raw.list(&Default::default()).await.unwrap();
    assert_eq!(listed.items[0].data.get("status"), Some(&json!({})));
    let added = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match added {
        WatchEvent::Added(obj) => assert_eq!(obj.data.get("status"), Some(&json!({}))),
        other => panic!("expected ADDED, got {other:?}"),
    }

    // A status write that clears the status leaves `{}`, not nothing.
    raw.replace_status(
        "plain",
        &PostParams::default(),
        &serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "plain"},
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let got = raw.get("plain").await.unwrap();
    assert_eq!(got.data.get("status"), Some(&json!({})));

    // Custom resources keep kube-apiserver's behaviour: no status until one is written.
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        h.client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
            "resourcebindings",
        ),
    );
    let binding: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ResourceBinding",
        "metadata": {"name": "plain-deployment"},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "plain"}},
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    let got: Value = serde_json::to_value(bindings.get("plain-deployment").await.unwrap()).unwrap();
    assert!(got.get("status").is_none(), "{got}");
}
