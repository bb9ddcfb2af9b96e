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
