//! An operator written the kube-rs way against Cluster objects served through the host: a
//! `kube::runtime::watcher` over `cluster.karmada.io/v1alpha1` clusters (host → APIService →
//! this aggregated server) feeds a status controller that server-side applies
//! `clusters/status` with its own field manager. Checked: every cluster gets the status, the
//! controller owns exactly the status fields in managedFields, an identical re-apply changes
//! nothing, another manager's spec changes leave status (and the controller's ownership)
//! alone, and an unforced apply of a status field by someone else conflicts.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_testwait::eventually;
use std::path::Path;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const CONTROLLER: &str = "cluster-status-controller";
const K8S_VERSION: &str = "v1.33.2";
const NAMES: [&str; 3] = ["member1", "member2", "member3"];

async fn client_for(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn cluster_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    )
}

/// The status the controller wants every cluster to have.
fn desired_status(name: &str) -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "status": {
            "kubernetesVersion": K8S_VERSION,
            "conditions": [{
                "type": "Ready",
                "status": "True",
                "reason": "ClusterReady",
                "message": "cluster is healthy and ready to accept workloads",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }],
        },
    })
}

fn has_desired_status(obj: &DynamicObject) -> bool {
    let status = obj.data.get("status").cloned().unwrap_or(Value::Null);
    status["kubernetesVersion"] == K8S_VERSION
        && status["conditions"].as_array().is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// The controller: for each applied object from the watcher, server-side apply the status
/// (skipped when it is already there, as a level-triggered controller would).
async fn run_controller(
    api: Api<DynamicObject>,
    applies: tokio::sync::mpsc::UnboundedSender<String>,
) {
    let mut stream = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(obj) = stream.try_next().await.unwrap_or(None) {
        let name = obj.metadata.name.clone().unwrap_or_default();
        if has_desired_status(&obj) {
            continue;
        }
        api.patch_status(
            &name,
            &PatchParams::apply(CONTROLLER).force(),
            &Patch::Apply(desired_status(&name)),
        )
        .await
        .unwrap_or_else(|e| panic!("status apply for {name}: {e}"));
        let _ = applies.send(name);
    }
}

/// The managedFields entry of `manager`, if any.
fn entry<'a>(obj: &'a Value, manager: &str) -> Option<&'a Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|m| m.iter().find(|e| e["manager"] == manager))
}

/// The host and this aggregated server behind its APIService, with the clusters served.
struct Setup {
    _dir: tempfile::TempDir,
    host: flotilla_host::RunningHost,
    aggregated: flotilla_aggregated::RunningAggregated,
    api: Api<DynamicObject>,
}

async fn setup() -> Setup {
    setup_serving(None).await
}

/// [`setup`] with the aggregated server's serving certificate given (`--tls-cert-file`).
async fn setup_serving(serving: Option<(String, String)>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let mut opts = flotilla_host::HostOptions::new(&host_dir);
    opts.secure_port = 0;
    let host = flotilla_host::start(opts).await.unwrap();
    let client = client_for(&host.kubeconfig).await;
    let pki = host_dir.join("pki");
    let mut opts = flotilla_aggregated::AggregatedOptions::new(
        dir.path().join("aggregated"),
        client.clone(),
        std::fs::read_to_string(pki.join("ca.crt")).unwrap(),
        std::fs::read_to_string(pki.join("front-proxy-ca.crt")).unwrap(),
    );
    opts.serving = serving;
    let aggregated = flotilla_aggregated::start(opts).await.unwrap();
    flotilla_aggregated::register_apiservice(&client, &aggregated.url(), &aggregated.ca_pem)
        .await
        .unwrap();

    let ar = cluster_resource();
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    // The host proxies the group once the APIService is available.
    let list = eventually("clusters served", Duration::from_secs(30), || async {
        api.list(&Default::default())
            .await
            .map_err(|e| e.to_string())
    })
    .await;
    assert!(list.items.is_empty());
    Setup {
        _dir: dir,
        host,
        aggregated,
        api,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_deletion_bumps_generation_and_status_is_always_present() {
    let s = setup().await;
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "held", "finalizers": ["example.com/cleanup"]},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"},
    }))
    .unwrap();
    s.api.create(&PostParams::default(), &obj).await.unwrap();
    let got = s.api.get("held").await.unwrap();
    assert!(
        got.data.get("status").is_some_and(Value::is_object),
        "a Cluster carries status from creation on: {got:?}"
    );
    let generation = got.metadata.generation.unwrap();
    s.api.delete("held", &Default::default()).await.unwrap();
    let marked = s.api.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.metadata.generation, Some(generation + 1));
    s.api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(s.api.get_opt("held").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_controller_with_server_side_apply_through_the_host() {
    let setup = setup().await;
    let api = setup.api.clone();
    let (tx, mut applied) = tokio::sync::mpsc::unbounded_channel();
    let controller = tokio::spawn(run_controller(api.clone(), tx));

    for (i, name) in NAMES.iter().enumerate() {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": name, "labels": {"tier": "test"}},
            "spec": {"syncMode": "Push", "apiEndpoint": format!("https://127.0.0.{}:1", i + 1)},
        }))
        .unwrap();
        let created = api
            .create(
                &PostParams {
                    field_manager: Some("cluster-creator".into()),
                    ..Default::default()
                },
                &obj,
            )
            .await
            .unwrap();
        assert!(
            created
                .data
                .get("status")
                .is_none_or(|s| s.get("kubernetesVersion").is_none())
        );
    }

    // Every cluster reaches the controller's status.
    eventually(
        "every cluster's status",
        Duration::from_secs(30),
        || async {
            let list = api.list(&Default::default()).await.unwrap();
            let done = list.items.iter().filter(|c| has_desired_status(c)).count();
            if done == NAMES.len() && list.items.len() == NAMES.len() {
                Ok(())
            } else {
                Err(format!("only {done} got theirs: {:?}", list.items))
            }
        },
    )
    .await;
    let mut seen = Vec::new();
    while let Ok(name) = applied.try_recv() {
        seen.push(name);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(
        seen, NAMES,
        "the controller applied status for each cluster"
    );

    for name in NAMES {
        let obj = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
        assert_eq!(
            obj["status"]["conditions"][0]["reason"], "ClusterReady",
            "{obj:#}"
        );
        let mine =
            entry(&obj, CONTROLLER).unwrap_or_else(|| panic!("no {CONTROLLER} entry: {obj:#}"));
        assert_eq!(mine["operation"], "Apply", "{mine}");
        assert_eq!(mine["subresource"], "status", "{mine}");
        let owned = &mine["fieldsV1"]["f:status"];
        assert!(owned.get("f:kubernetesVersion").is_some(), "{mine}");
        // Karmada declares no list type for conditions, so the list is owned as a whole.
        assert_eq!(owned.get("f:conditions"), Some(&json!({})), "{mine}");
        assert!(mine["fieldsV1"].get("f:spec").is_none(), "{mine}");
        let creator = entry(&obj, "cluster-creator").unwrap_or_else(|| panic!("{obj:#}"));
        assert!(creator["fieldsV1"].get("f:status").is_none(), "{creator}");
        assert!(
            creator["fieldsV1"]["f:spec"].get("f:apiEndpoint").is_some(),
            "{creator}"
        );
    }

    // Applying the same status again is a no-op: same resourceVersion.
    let before = api.get("member1").await.unwrap();
    let again = api
        .patch_status(
            "member1",
            &PatchParams::apply(CONTROLLER).force(),
            &Patch::Apply(desired_status("member1")),
        )
        .await
        .unwrap();
    assert_eq!(
        again.metadata.resource_version,
        before.metadata.resource_version
    );

    // Another manager changes spec (and tries status through the main resource): status stays.
    let status_before = serde_json::to_value(&before).unwrap()["status"].clone();
    let controller_entry = entry(&serde_json::to_value(&before).unwrap(), CONTROLLER).cloned();
    let edited = api
        .patch(
            "member1",
            &PatchParams::apply("region-editor"),
            &Patch::Apply(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": "member1"},
                "spec": {"syncMode": "Push", "region": "eu-west"},
                "status": {"kubernetesVersion": "v0.0.0-from-spec-writer"},
            })),
        )
        .await
        .unwrap();
    let edited = serde_json::to_value(&edited).unwrap();
    assert_eq!(edited["spec"]["region"], "eu-west");
    assert_eq!(edited["spec"]["apiEndpoint"], "https://127.0.0.1:1");
    assert_eq!(
        edited["status"], status_before,
        "spec writes must not touch status"
    );
    let editor = entry(&edited, "region-editor").unwrap_or_else(|| panic!("{edited:#}"));
    assert!(
        editor["fieldsV1"]["f:spec"].get("f:region").is_some(),
        "{editor}"
    );
    assert!(editor["fieldsV1"].get("f:status").is_none(), "{editor}");
    assert_eq!(entry(&edited, CONTROLLER), controller_entry.as_ref());

    let merged = api
        .patch(
            "member2",
            &PatchParams {
                field_manager: Some("provider-editor".into()),
                ..Default::default()
            },
            &Patch::Merge(
                json!({"spec": {"provider": "aws"}, "status": {"kubernetesVersion": "v0"}}),
            ),
        )
        .await
        .unwrap();
    let merged = serde_json::to_value(&merged).unwrap();
    assert_eq!(merged["spec"]["provider"], "aws");
    assert_eq!(
        merged["status"]["kubernetesVersion"], K8S_VERSION,
        "{merged:#}"
    );

    // The controller saw those spec changes and had nothing to do (status already right). The
    // barrier: a cluster created after them needs status; the controller handles its watch
    // events in order, so the first apply it reports from here on must be that one.
    let sentinel: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "sentinel"},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.9:1"},
    }))
    .unwrap();
    api.create(&PostParams::default(), &sentinel).await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(20), applied.recv())
        .await
        .expect("the controller applies the sentinel's status");
    assert_eq!(
        next.as_deref(),
        Some("sentinel"),
        "the controller re-applied after a spec change"
    );
    api.delete("sentinel", &Default::default()).await.unwrap();

    // Nobody else may take the controller's status fields without forcing.
    let conflict = api
        .patch_status(
            "member3",
            &PatchParams::apply("intruder"),
            &Patch::Apply(json!({
                "apiVersion": "cluster.karmada.io/v1alpha1",
                "kind": "Cluster",
                "metadata": {"name": "member3"},
                "status": {"kubernetesVersion": "v1.0.0"},
            })),
        )
        .await
        .unwrap_err();
    match conflict {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409, "{status:?}");
            assert!(status.message.contains(CONTROLLER), "{}", status.message);
            assert!(
                status.message.contains("kubernetesVersion"),
                "{}",
                status.message
            );
        }
        other => panic!("expected a conflict, got {other}"),
    }
    assert_eq!(
        api.get("member3").await.unwrap().data["status"]["kubernetesVersion"],
        K8S_VERSION
    );

    // Deleting a cluster ends its story for the watcher too; the rest keep their status.
    api.delete("member3", &Default::default()).await.unwrap();
    let left = api.list(&Default::default()).await.unwrap();
    assert_eq!(left.items.len(), 2);
    assert!(left.items.iter().all(has_desired_status));

    controller.abort();
    let _ = controller.await;
    setup.aggregated.stop().await;
    setup.host.stop().await;
}

/// `aggregated-apiserver --tls-cert-file/--tls-private-key-file`: the given certificate is the
/// one served, and the CA its chain ends in is the APIService's caBundle, so the host (which
/// verifies the server against that bundle) reaches the Clusters through it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_given_serving_certificate_is_served_and_its_ca_is_the_bundle() {
    let ca = flotilla_pki::CertificateAuthority::generate("operator-serving-ca").unwrap();
    let leaf = ca
        .issue_server("aggregated", &[], &["127.0.0.1".parse().unwrap()])
        .unwrap();
    let chain = format!("{}{}", leaf.cert_pem, ca.cert_pem());
    let s = setup_serving(Some((chain, leaf.key_pem.clone()))).await;
    assert_eq!(s.aggregated.ca_pem.trim(), ca.cert_pem().trim());
    // setup() waited for the host to list Clusters through the APIService, so the host
    // verified the served certificate against that bundle; and it is the given one.
    let served = served_leaf(s.aggregated.addr).await;
    let given = flotilla_pki::parse_certificates(&leaf.cert_pem).unwrap();
    assert_eq!(served, given[0].as_ref());
    assert!(
        !s._dir.path().join("aggregated/pki/ca.crt").exists(),
        "no certificate is generated when one is given"
    );
}

/// The leaf certificate the server at `addr` presents (verification skipped: only read).
async fn served_leaf(addr: std::net::SocketAddr) -> Vec<u8> {
    let config = flotilla_pki::client_config(&[], None, true).unwrap();
    let connector = tokio_rustls::TlsConnector::from(config);
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0]
        .as_ref()
        .to_vec()
}
