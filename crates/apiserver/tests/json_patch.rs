//! JSON Patch (`kubectl patch --type=json`) as kube-apiserver applies it, driven with the
//! real kubectl and kube-rs over TLS: `replace` of a missing member adds it, negative array
//! indices count from the end, and an operation that does not apply is 422 naming it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test]
async fn json_patches_apply_with_kube_apiservers_semantics() {
    let t = common::start().await;
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    cms.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "cfg"}, "data": {"a": "1"}})).unwrap(),
    )
    .await
    .unwrap();
    // kubectl's replace of a label the object does not have: added, as kube does.
    common::kubectl_ok(
        &t.kubeconfig,
        &[
            "patch",
            "configmap",
            "cfg",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/metadata/labels","value":{"team":"a"}},{"op":"replace","path":"/data/b","value":"2"}]"#,
        ],
    )
    .await;
    let cm = cms.get("cfg").await.unwrap();
    assert_eq!(cm.metadata.labels.unwrap()["team"], "a");
    assert_eq!(cm.data.unwrap()["b"], "2");

    // Negative indices count from the end.
    cms.patch(
        "cfg",
        &PatchParams::default(),
        &Patch::Json::<()>(
            serde_json::from_value(json!([
                {"op": "add", "path": "/metadata/finalizers", "value": ["x.io/one", "x.io/two"]},
                {"op": "remove", "path": "/metadata/finalizers/-1"}
            ]))
            .unwrap(),
        ),
    )
    .await
    .unwrap();
    let cm = cms.get("cfg").await.unwrap();
    assert_eq!(cm.metadata.finalizers.unwrap(), ["x.io/one"]);

    // An operation that does not apply: 422, naming it; nothing changes.
    let refused = cms
        .patch(
            "cfg",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/data/a", "value": "9"},
                    {"op": "remove", "path": "/data/missing"}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap_err();
    match refused {
        kube::Error::Api(s) => {
            assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{s:?}");
            assert!(
                s.message
                    .contains("Unable to remove nonexistent key: missing"),
                "{}",
                s.message
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(cms.get("cfg").await.unwrap().data.unwrap()["a"], "1");
    // Clean up the finalizer so the server can stop cleanly.
    cms.patch(
        "cfg",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    t.stop().await;
}
