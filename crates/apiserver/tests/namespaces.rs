//! Namespace deletion as kube's namespace controller does it, driven with kube-rs over TLS:
//! the DELETE answers at once with the namespace Terminating; its contents go in the
//! background; the namespace's conditions say what holds it (an object's finalizer); once
//! nothing is left it goes; nothing new can be created in it meanwhile (403
//! NamespaceTerminating).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use flotilla_testwait::eventually;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(20);

fn config_map(name: &str, finalizers: &[&str]) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "finalizers": finalizers}})).unwrap()
}

#[tokio::test]
async fn deleting_a_namespace_is_asynchronous_and_says_what_holds_it() {
    let t = common::start().await;
    let namespaces: Api<Namespace> = Api::all(t.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "shop"}})).unwrap(),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "shop");
    cms.create(&PostParams::default(), &config_map("plain", &[]))
        .await
        .unwrap();
    cms.create(
        &PostParams::default(),
        &config_map("held", &["example.com/hold"]),
    )
    .await
    .unwrap();

    let answer = namespaces
        .delete("shop", &DeleteParams::default())
        .await
        .unwrap();
    let terminating = answer.left().expect("the namespace, not a Status");
    assert_eq!(
        terminating.status.and_then(|s| s.phase).as_deref(),
        Some("Terminating")
    );
    assert!(terminating.metadata.deletion_timestamp.is_some());

    // The plain object goes; the held one stays, and the conditions say why.
    let conditions = eventually(
        "the namespace's conditions name the finalizer",
        WAIT,
        || async {
            let ns = namespaces.get("shop").await.map_err(|e| e.to_string())?;
            let conditions = ns.status.and_then(|s| s.conditions).unwrap_or_default();
            let held = conditions
                .iter()
                .find(|c| c.type_ == "NamespaceFinalizersRemaining")
                .ok_or("no conditions yet")?;
            if held.status == "True" {
                Ok(conditions)
            } else {
                Err(format!("{conditions:?}"))
            }
        },
    )
    .await;
    let by_type = |t: &str| conditions.iter().find(|c| c.type_ == t).unwrap().clone();
    let held = by_type("NamespaceFinalizersRemaining");
    assert_eq!(held.reason.as_deref(), Some("SomeFinalizersRemain"));
    assert_eq!(
        held.message.as_deref(),
        Some(
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        )
    );
    let remaining = by_type("NamespaceContentRemaining");
    assert_eq!(remaining.status, "True");
    assert_eq!(
        remaining.message.as_deref(),
        Some("Some resources are remaining: configmaps. has 1 resource instances")
    );
    assert_eq!(
        by_type("NamespaceDeletionContentFailure").reason.as_deref(),
        Some("ContentDeleted")
    );
    assert_eq!(cms.get_opt("plain").await.unwrap(), None);

    // Nothing new in a Terminating namespace.
    let refused = cms
        .create(&PostParams::default(), &config_map("late", &[]))
        .await
        .unwrap_err();
    match refused {
        kube::Error::Api(s) => {
            assert_eq!(s.code, 403, "{s:?}");
            assert!(
                s.message.contains("because it is being terminated"),
                "{}",
                s.message
            );
        }
        other => panic!("{other:?}"),
    }

    // The finalizer goes: so does the object, then the namespace.
    cms.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    eventually("the namespace gone", WAIT, || async {
        match namespaces
            .get_opt("shop")
            .await
            .map_err(|e| e.to_string())?
        {
            None => Ok(()),
            Some(ns) => Err(format!("{:?}", ns.status)),
        }
    })
    .await;
    t.stop().await;
}
