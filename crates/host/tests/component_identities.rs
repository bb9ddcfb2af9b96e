//! Each of Flotilla's components talks to the host as its own user, from
//! `<data-dir>/<component>.kubeconfig` (a client certificate: CN its user, O
//! `system:flotilla:components`, no `system:masters`), with only its own ClusterRole. Member
//! credentials (the Secrets `Cluster.spec.secretRef` names) are readable by the
//! controller-manager and the aggregated API server, not by the scheduler; each can do its own
//! work and no more. Over TLS with kube-rs, as the components connect.

// Test helpers may panic: a failed request is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::client_for;
use flotilla_pki::{AGGREGATED_APISERVER, CONTROLLER_MANAGER, ComponentIdentity, SCHEDULER};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

const CREDENTIALS_NS: &str = "karmada-cluster";

async fn component(dir: &Path, identity: ComponentIdentity) -> kube::Client {
    client_for(&flotilla_host::component_kubeconfig(dir, &identity)).await
}

/// The user and groups the host sees for `client` (SelfSubjectReview).
async fn whoami(client: &kube::Client) -> (String, Vec<String>) {
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(
            serde_json::to_vec(&json!({
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "SelfSubjectReview",
            }))
            .unwrap(),
        )
        .unwrap();
    let review: Value = client.request(req).await.unwrap();
    let info = &review["status"]["userInfo"];
    let groups = info["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap().to_string())
        .collect();
    (info["username"].as_str().unwrap().to_string(), groups)
}

#[track_caller]
fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>, what: &str) {
    match r {
        Err(kube::Error::Api(s)) if s.code == 403 && s.reason == "Forbidden" => {}
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

fn bindings(client: &kube::Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding");
    Api::namespaced_with(client.clone(), "default", &ApiResource::from_gvk(&gvk))
}

fn works(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work");
    Api::namespaced_with(client.clone(), ns, &ApiResource::from_gvk(&gvk))
}

fn secret(name: &str) -> Secret {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": CREDENTIALS_NS},
        "stringData": {"token": "member-token"},
    }))
    .unwrap()
}

#[tokio::test]
async fn each_component_has_its_own_identity_and_only_the_scheduler_cannot_read_credentials() {
    let t = common::start().await;
    let dir = t.dir.path();
    let admin = &t.client;
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": CREDENTIALS_NS}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    Api::<Secret>::namespaced(admin.clone(), CREDENTIALS_NS)
        .create(&PostParams::default(), &secret("member1"))
        .await
        .unwrap();

    let scheduler = component(dir, SCHEDULER).await;
    let controller_manager = component(dir, CONTROLLER_MANAGER).await;
    let aggregated = component(dir, AGGREGATED_APISERVER).await;

    // Who the host sees: the component's own user, the components group, never masters.
    for (client, identity, rbac_user) in [
        (&scheduler, SCHEDULER, flotilla_rbac::SCHEDULER_USER),
        (
            &controller_manager,
            CONTROLLER_MANAGER,
            flotilla_rbac::CONTROLLER_MANAGER_USER,
        ),
        (
            &aggregated,
            AGGREGATED_APISERVER,
            flotilla_rbac::AGGREGATED_APISERVER_USER,
        ),
    ] {
        assert_eq!(
            identity.user, rbac_user,
            "the certificate and the role disagree"
        );
        let (user, groups) = whoami(client).await;
        assert_eq!(user, identity.user);
        assert!(
            groups.iter().any(|g| g == flotilla_pki::COMPONENTS_GROUP),
            "{groups:?}"
        );
        assert!(!groups.iter().any(|g| g == "system:masters"), "{groups:?}");
    }

    // The scheduler: no Secrets in any form, nor Works; its own objects are fine.
    let secrets = Api::<Secret>::namespaced(scheduler.clone(), CREDENTIALS_NS);
    forbidden(secrets.get("member1").await, "scheduler get secret");
    forbidden(
        secrets.list(&ListParams::default()).await,
        "scheduler list secrets",
    );
    forbidden(
        Api::<Secret>::all(scheduler.clone())
            .list(&ListParams::default())
            .await,
        "scheduler list secrets in all namespaces",
    );
    forbidden(
        secrets
            .create(&PostParams::default(), &secret("mine"))
            .await,
        "scheduler create secret",
    );
    forbidden(
        works(&scheduler, CREDENTIALS_NS)
            .list(&ListParams::default())
            .await,
        "scheduler list works",
    );
    bindings(&scheduler)
        .list(&ListParams::default())
        .await
        .unwrap();
    let leases = Api::<Lease>::namespaced(scheduler.clone(), "default");
    let lease: Lease =
        serde_json::from_value(json!({"metadata": {"name": "flotilla-scheduler"}})).unwrap();
    leases.create(&PostParams::default(), &lease).await.unwrap();

    // The controller-manager reads member credentials and writes Works.
    let cm_secrets = Api::<Secret>::namespaced(controller_manager.clone(), CREDENTIALS_NS);
    let got = cm_secrets.get("member1").await.unwrap();
    assert!(got.data.unwrap().contains_key("token"));
    cm_secrets.list(&ListParams::default()).await.unwrap();
    let work: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "w", "namespace": CREDENTIALS_NS},
        "spec": {"workload": {"manifests": []}},
    }))
    .unwrap();
    works(&controller_manager, CREDENTIALS_NS)
        .create(&PostParams::default(), &work)
        .await
        .unwrap();

    // The aggregated API server reads them (the cluster proxy needs them) but writes none.
    let agg_secrets = Api::<Secret>::namespaced(aggregated.clone(), CREDENTIALS_NS);
    agg_secrets.get("member1").await.unwrap();
    forbidden(
        agg_secrets
            .create(&PostParams::default(), &secret("other"))
            .await,
        "aggregated create secret",
    );
    forbidden(
        agg_secrets.delete("member1", &Default::default()).await,
        "aggregated delete secret",
    );
    t.host.stop().await;
}
