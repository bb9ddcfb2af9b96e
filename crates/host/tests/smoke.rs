//! The host answers kube-rs over TLS with the generated admin credentials.

mod common;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};

#[tokio::test]
async fn kube_rs_creates_and_lists_over_tls() {
    let t = common::start().await;
    let namespaces: Api<Namespace> = Api::all(t.client.clone());
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()), "{names:?}");
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    cm.data = Some([("a".to_string(), "1".to_string())].into());
    let created = cms.create(&PostParams::default(), &cm).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert_eq!(cms.get("settings").await.unwrap().data, cm.data);
    t.host.stop().await;
}

/// `stop` ends every background task the host started (the API server's loops, the CSR
/// signer, the token controller, a namespace being cleaned up): none is left running once it
/// returns, and the database they held is free, so the host starts again on the same data
/// directory in this process.
#[tokio::test]
async fn stop_joins_every_background_task() {
    let dir = tempfile::tempdir().unwrap();
    let start = || async {
        let mut opts = flotilla_host::HostOptions::new(dir.path());
        opts.secure_port = 0;
        flotilla_host::start(opts).await.unwrap()
    };
    let host = start().await;
    let client = common::client_for(&host.kubeconfig).await;
    let namespaces: Api<Namespace> = Api::all(client);
    let mut ns = Namespace::default();
    ns.metadata.name = Some("going".into());
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    namespaces
        .delete("going", &Default::default())
        .await
        .unwrap();
    let tasks = host.server.tasks.clone();
    let names = tasks.live_names();
    for expected in [
        "rbac-sync ClusterRole",
        "crd-controller",
        "apiservice-controller",
        "apiservice-availability",
        "csr-signer",
        "token-controller secrets",
        "token-controller serviceaccounts",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected}: {names:?}");
    }
    host.stop().await;
    assert_eq!(tasks.live(), 0, "still running: {:?}", tasks.live_names());
    assert!(tasks.is_cancelled());
    let again = start().await;
    again.stop().await;
}
