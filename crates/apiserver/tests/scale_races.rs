//! A PATCH of the scale subresource racing other writers of the same object (a controller
//! writing its status, as propagation does for every template) is re-applied to the newer
//! object, as kube-apiserver's update loop does, instead of failing with 409 Conflict; one
//! with a resourceVersion precondition still conflicts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_patches_survive_concurrent_status_writes() {
    let t = common::start().await;
    let api: Api<Deployment> = Api::namespaced(t.client.clone(), "default");
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}
    }))
    .unwrap();
    api.create(&PostParams::default(), &deployment)
        .await
        .unwrap();

    // A status writer as fast as it can go.
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (api, stop) = (api.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0i64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                api.patch_status(
                    "web",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"status": {"observedGeneration": n, "replicas": n % 7}})),
                )
                .await
                .unwrap();
            }
            n
        })
    };
    for replicas in 2..42 {
        api.patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": replicas}})),
        )
        .await
        .unwrap_or_else(|e| panic!("scale to {replicas}: {e}"));
    }
    stop.store(true, Ordering::Relaxed);
    let status_writes = writer.await.unwrap();
    assert!(status_writes > 1, "the status writer ran");
    let d = api.get("web").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(41));

    // A stale resourceVersion is still refused.
    let err = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 3}})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(e) => assert_eq!(e.code, 409, "{e:?}"),
        other => panic!("{other}"),
    }
}
