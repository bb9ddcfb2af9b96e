//! The REST storage seam: a resource's reads served by another implementation while its
//! writes stay on the store — the seam merged reads use. An in-process generic API server (the built-in kinds over memory) serves
//! `apps/v1 deployments` and core `v1 pods` with [`FleetReads`] (reads that mark every object
//! and answer with their own, non-numeric resourceVersions) and is driven by kube-rs over TLS:
//! GET, LIST and WATCH come from the override (marked, versioned `alt.N`, and an `alt.N`
//! version is accepted back to resume a watch); create, update, patch and delete reach the
//! store (unmarked answers, stored objects unmarked); discovery lists each resource once.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use flotilla_apimachinery::ApiError;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::objects::{self, DeleteOptions};
use flotilla_generic_store::rest::{
    GenericStore, ListAnswer, NewObject, Object, ObjectAnswer, PatchBody, RestStorage, WatchAnswer,
    WatchEvent as RestEvent,
};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use kube::api::WatchParams;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent};
use serde_json::{Value, json};

const MARK: &str = "test.flotilla.io/served-by";
const PREFIX: &str = "alt.";

/// Reads that come from somewhere else than the store: every object marked with [`MARK`] and
/// every version written `alt.<revision>`.
struct FleetReads;

fn mark(value: &Value, revision: u64) -> Value {
    let mut v = value.clone();
    v["metadata"]["annotations"][MARK] = json!("fleet-reads");
    v["metadata"]["resourceVersion"] = json!(format!("{PREFIX}{revision}"));
    v
}

/// This storage's own reading of a resourceVersion.
fn parse_version(rv: &str) -> Result<u64, ApiError> {
    rv.strip_prefix(PREFIX)
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| ApiError::bad_request(format!("not a fleet version: {rv:?}")))
}

#[async_trait::async_trait]
impl RestStorage for FleetReads {
    async fn get(&self, ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
        let name = ctx.path.name.as_deref().unwrap_or_default();
        let obj = ctx
            .objects()
            .get(ctx.path.namespace.as_deref(), name)
            .await?;
        Ok(ObjectAnswer::ok(Object::Built(mark(
            &obj.value(),
            obj.revision,
        ))))
    }

    async fn list(&self, ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
        let prefix = objects::collection_prefix(&ctx.def, ctx.path.namespace.as_deref());
        let listed = ctx
            .store
            .storage
            .list(&prefix, &Default::default())
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let items = listed
            .items
            .iter()
            .map(|o| Object::Built(mark(&o.value(), o.revision)))
            .collect();
        Ok(ListAnswer {
            items,
            resource_version: format!("{PREFIX}{}", listed.revision),
            ..ListAnswer::default()
        })
    }

    async fn watch(&self, ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
        let from = match &ctx.list_options()?.resource_version {
            Some(rv) => parse_version(rv.as_str())?,
            None => ctx.store.storage.current_revision().await,
        };
        let prefix = objects::collection_prefix(&ctx.def, ctx.path.namespace.as_deref());
        let events = ctx
            .store
            .storage
            .watch(&prefix, from)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let events = events.map(|ev| match ev {
            Err(e) => RestEvent::Error(ApiError::internal(e.to_string())),
            Ok(ev) => {
                let object = Object::Built(mark(&ev.object.value(), ev.object.revision));
                match ev.event_type {
                    flotilla_storage::EventType::Added => RestEvent::Added(object),
                    flotilla_storage::EventType::Modified => RestEvent::Modified(object),
                    flotilla_storage::EventType::Deleted => RestEvent::Deleted(object),
                }
            }
        });
        Ok(WatchAnswer::new(events.boxed()))
    }

    // Writes: the generic store's.
    async fn create(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        GenericStore.create(ctx, body).await
    }
    async fn update(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        GenericStore.update(ctx, body).await
    }
    async fn patch(&self, ctx: &RequestContext, body: PatchBody) -> Result<ObjectAnswer, ApiError> {
        GenericStore.patch(ctx, body).await
    }
    async fn delete(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ObjectAnswer, ApiError> {
        GenericStore.delete(ctx, options).await
    }
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ListAnswer, ApiError> {
        GenericStore.delete_collection(ctx, options).await
    }
}

fn annotation(meta: &kube::core::ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(MARK))
        .map(String::as_str)
}

async fn stored(host: &common::TestServer, key: &str) -> Option<Value> {
    host.server
        .storage
        .get(key)
        .await
        .unwrap()
        .map(|o| (*o.value()).clone())
}

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}
            }
        }
    }))
    .unwrap()
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap()
}

/// Reads through the override, writes to the store, for one resource.
async fn reads_overridden_writes_stored<K>(
    host: &common::TestServer,
    api: Api<K>,
    make: fn(&str) -> K,
    key_prefix: &str,
) where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + serde::Serialize
        + Send
        + Sync
        + 'static,
{
    // Writes answer from the store: unmarked, numeric versions.
    let created = api
        .create(&PostParams::default(), &make("one"))
        .await
        .unwrap();
    assert_eq!(annotation(created.meta()), None);
    let rv = created.meta().resource_version.clone().unwrap();
    assert!(rv.parse::<u64>().is_ok(), "store version: {rv}");
    let in_store = stored(host, &format!("{key_prefix}/one"))
        .await
        .expect("stored");
    assert!(
        in_store
            .pointer(&format!(
                "/metadata/annotations/{}",
                MARK.replace('/', "~1")
            ))
            .is_none()
    );

    // GET and LIST come from the override.
    let got = api.get("one").await.unwrap();
    assert_eq!(annotation(got.meta()), Some("fleet-reads"));
    assert!(
        got.meta()
            .resource_version
            .as_deref()
            .unwrap()
            .starts_with(PREFIX)
    );
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(annotation(list.items[0].meta()), Some("fleet-reads"));
    let list_rv = list.metadata.resource_version.clone().unwrap();
    assert!(list_rv.starts_with(PREFIX), "list version: {list_rv}");

    // WATCH resumes from the override's own version, passed back opaque.
    let mut events = api
        .watch(&WatchParams::default().timeout(30), &list_rv)
        .await
        .unwrap()
        .boxed();
    let patched = api
        .patch(
            "one",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"step": "patched"}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        annotation(patched.meta()),
        None,
        "patch answered by the store"
    );
    // An update carries a version the store issued (the override's are not the store's).
    let mut replaced = patched.clone();
    replaced
        .meta_mut()
        .labels
        .get_or_insert_with(Default::default)
        .insert("step".into(), "replaced".into());
    let replaced = api
        .replace("one", &PostParams::default(), &replaced)
        .await
        .unwrap();
    assert_eq!(
        annotation(replaced.meta()),
        None,
        "update answered by the store"
    );
    api.create(&PostParams::default(), &make("two"))
        .await
        .unwrap();
    api.delete("two", &DeleteParams::default()).await.unwrap();
    assert!(stored(host, &format!("{key_prefix}/two")).await.is_none());

    let mut seen = Vec::new();
    while seen.len() < 4 {
        let ev = tokio::time::timeout(Duration::from_secs(20), events.try_next())
            .await
            .expect("watch event in time")
            .unwrap()
            .expect("watch open");
        let (kind, obj) = match ev {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            other => panic!("unexpected event {other:?}"),
        };
        assert_eq!(
            annotation(obj.meta()),
            Some("fleet-reads"),
            "{kind} served by the override"
        );
        assert!(
            obj.meta()
                .resource_version
                .as_deref()
                .unwrap()
                .starts_with(PREFIX)
        );
        seen.push((kind, obj.meta().name.clone().unwrap()));
    }
    assert_eq!(
        seen,
        [
            ("MODIFIED", "one".to_string()),
            ("MODIFIED", "one".to_string()),
            ("ADDED", "two".to_string()),
            ("DELETED", "two".to_string()),
        ]
    );
    // A version this storage does not know is its own 400, not the store's parse.
    let bad = api.watch(&WatchParams::default(), "17").await;
    match bad {
        Err(kube::Error::Api(e)) => {
            assert_eq!(e.code, 400);
            assert!(e.message.contains("not a fleet version"), "{}", e.message);
        }
        Ok(stream) => {
            let first = stream.boxed().try_next().await;
            panic!("expected 400, got a stream ({first:?})");
        }
        Err(e) => panic!("expected 400, got {e}"),
    }
}

#[tokio::test]
async fn reads_served_by_another_storage_while_writes_reach_the_store() {
    let host = common::start().await;
    let registry = &host.server.registry;
    registry.set_storage("apps", "deployments", Arc::new(FleetReads));
    registry.set_storage("", "pods", Arc::new(FleetReads));

    let deployments: Api<Deployment> = Api::namespaced(host.client.clone(), "default");
    reads_overridden_writes_stored(&host, deployments, deployment, "/apps/deployments/default")
        .await;
    let pods: Api<Pod> = Api::namespaced(host.client.clone(), "default");
    reads_overridden_writes_stored(&host, pods, pod, "/core/pods/default").await;

    // Other resources keep the generic store.
    let configmaps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(host.client.clone(), "default");
    let listed = configmaps.list(&ListParams::default()).await.unwrap();
    let rv = listed.metadata.resource_version.unwrap();
    assert!(rv.parse::<u64>().is_ok(), "generic store version: {rv}");

    // Discovery lists each overridden resource once.
    for (path, name) in [("/apis/apps/v1", "deployments"), ("/api/v1", "pods")] {
        let req = http::Request::get(path).body(Vec::new()).unwrap();
        let doc: Value = host.client.request(req).await.unwrap();
        let count = doc["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["name"] == name)
            .count();
        assert_eq!(count, 1, "{name} in {path}");
    }
    let out = common::kubectl_ok(
        &host.kubeconfig,
        &["api-resources", "--no-headers", "-o", "name"],
    )
    .await;
    for name in ["deployments.apps", "pods"] {
        assert_eq!(
            out.lines().filter(|l| *l == name).count(),
            1,
            "{name} in kubectl api-resources"
        );
    }
    host.stop().await;
}
