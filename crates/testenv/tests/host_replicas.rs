//! Several host API server replicas on one etcd, driven over TLS with kube-rs: a write
//! through one replica is seen by a consistent read and a watch on another, and a kube-rs
//! reflector whose replica is killed reconnects (through a failover address, as behind a
//! load balancer) to another and ends with exactly the store's state.

// Test code: a failed expectation is a panic with the value in the message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use flotilla_etcd::testing::EtcdCluster;
use flotilla_etcd::{EtcdOptions, StorageChoice};
use flotilla_host::{HostOptions, RunningHost};
use flotilla_testenv::client_for;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

async fn replicas(etcd: &EtcdCluster, dir: &std::path::Path, count: usize) -> Vec<RunningHost> {
    let mut opts = HostOptions::new(dir.join("host"));
    opts.secure_port = 0;
    opts.storage = StorageChoice::Etcd(EtcdOptions::new(
        etcd.endpoints(),
        "/registry/flotilla/host",
    ));
    flotilla_host::start_replicas(opts, count)
        .await
        .expect("start the replicas")
}

/// Two host replicas on a fresh etcd, and kube-rs ConfigMap clients of each in `default` (B's
/// from its own kubeconfig: its admin certificate was issued by the shared CA).
struct Two {
    hosts: Vec<RunningHost>,
    a: Api<ConfigMap>,
    b: Api<ConfigMap>,
    _dir: tempfile::TempDir,
    _etcd: EtcdCluster,
}

async fn two_replicas() -> Two {
    let etcd = EtcdCluster::start(1).await;
    let dir = tempfile::tempdir().unwrap();
    let hosts = replicas(&etcd, dir.path(), 2).await;
    let mut apis = Vec::new();
    for host in &hosts {
        let client = client_for(&host.kubeconfig, None).await.unwrap();
        apis.push(Api::namespaced(client, "default"));
    }
    let b = apis.pop().unwrap();
    let a = apis.pop().unwrap();
    Two {
        hosts,
        a,
        b,
        _dir: dir,
        _etcd: etcd,
    }
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"value": value},
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_one_replica_is_read_and_watched_through_another() {
    let Two {
        hosts,
        a,
        b,
        _dir,
        _etcd,
    } = two_replicas().await;
    let start = b
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = b
        .watch(&WatchParams::default(), &start)
        .await
        .unwrap()
        .boxed();

    for n in 0..10 {
        let name = format!("c{n}");
        let created = a
            .create(&PostParams::default(), &config_map(&name, "1"))
            .await
            .unwrap();
        // Read right after the write was acknowledged, on the other replica.
        let read = b.get(&name).await.unwrap();
        assert_eq!(
            read.metadata.resource_version,
            created.metadata.resource_version
        );
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("B's watch delivers A's write")
            .unwrap()
            .unwrap();
        match event {
            WatchEvent::Added(cm) => assert_eq!(
                cm.metadata.resource_version,
                created.metadata.resource_version
            ),
            other => panic!("expected ADDED, got {other:?}"),
        }
    }
    // Optimistic concurrency across replicas: B's update with A's stale version conflicts.
    let current = a.get("c0").await.unwrap();
    let mut changed = current.clone();
    changed.data = Some([("value".to_owned(), "2".to_owned())].into());
    b.replace("c0", &PostParams::default(), &changed)
        .await
        .unwrap();
    let stale = a.replace("c0", &PostParams::default(), &changed).await;
    assert!(
        matches!(stale, Err(kube::Error::Api(ref s)) if s.code == 409),
        "{stale:?}"
    );
    for host in hosts {
        host.stop().await;
    }
}

/// A TCP forwarder standing for a load balancer in front of the replicas: new connections go
/// to the current target; retargeting cuts the open ones, as a killed replica's sockets close.
struct Failover {
    addr: SocketAddr,
    target: watch::Sender<SocketAddr>,
}

impl Failover {
    async fn start(target: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (tx, rx) = watch::channel(target);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut cut = rx.clone();
                let to = *cut.borrow_and_update();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(to).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        Self { addr, target: tx }
    }

    fn retarget(&self, to: SocketAddr) {
        self.target.send_replace(to);
    }
}

fn state(
    objects: impl IntoIterator<Item = ConfigMap>,
) -> BTreeMap<String, (String, Option<String>)> {
    objects
        .into_iter()
        .map(|cm| {
            let value = cm.data.as_ref().and_then(|d| d.get("value").cloned());
            (
                cm.metadata.name.unwrap_or_default(),
                (cm.metadata.resource_version.unwrap_or_default(), value),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_keeps_exact_state_when_its_replica_is_killed() {
    let etcd = EtcdCluster::start(1).await;
    let dir = tempfile::tempdir().unwrap();
    let mut hosts = replicas(&etcd, dir.path(), 2).await;
    let failover = Failover::start(hosts[0].addr).await;

    // The reflector's client reaches the replicas through the failover address.
    let kubeconfig = kube::config::Kubeconfig::read_from(&hosts[0].kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.cluster_url = format!("https://{}", failover.addr).parse().unwrap();
    let reflected: Api<ConfigMap> =
        Api::namespaced(kube::Client::try_from(config).unwrap(), "default");
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(reflected, watcher::Config::default()).default_backoff(),
    );
    let follower = tokio::spawn(stream.for_each(|_| futures::future::ready(())));

    let b: Api<ConfigMap> = Api::namespaced(
        client_for(&hosts[1].kubeconfig, None).await.unwrap(),
        "default",
    );
    let a: Api<ConfigMap> = Api::namespaced(
        client_for(&hosts[0].kubeconfig, None).await.unwrap(),
        "default",
    );
    for n in 0..20 {
        a.create(
            &PostParams::default(),
            &config_map(&format!("c{n:02}"), "0"),
        )
        .await
        .unwrap();
    }
    reader.wait_until_ready().await.unwrap();

    // Kill A: it stops serving and its connections close; the address now leads to B.
    let killed = hosts.remove(0);
    killed.stop().await;
    failover.retarget(hosts[0].addr);

    // Changes while the reflector reconnects: creates, updates and deletes through B.
    for n in 20..40 {
        b.create(
            &PostParams::default(),
            &config_map(&format!("c{n:02}"), "0"),
        )
        .await
        .unwrap();
    }
    for n in (0..40).step_by(3) {
        let patch = serde_json::json!({"data": {"value": "patched"}});
        b.patch(
            &format!("c{n:02}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    }
    for n in (1..40).step_by(5) {
        b.delete(&format!("c{n:02}"), &DeleteParams::default())
            .await
            .unwrap();
    }

    let expected = state(b.list(&ListParams::default()).await.unwrap().items);
    assert_eq!(expected.len(), 32);
    // Barrier: the reflector's store reaches the store's state (a bounded wait).
    flotilla_testwait::eventually(
        "the reflector to converge",
        Duration::from_secs(60),
        || async {
            let seen = state(reader.state().iter().map(|cm| ConfigMap::clone(cm)));
            if seen == expected {
                return Ok(());
            }
            Err(format!(
                "{} objects, expected {}; differing: {:?}",
                seen.len(),
                expected.len(),
                expected
                    .iter()
                    .filter(|(k, v)| seen.get(*k) != Some(v))
                    .map(|(k, _)| k)
                    .collect::<Vec<_>>()
            ))
        },
    )
    .await;
    follower.abort();
    for host in hosts {
        host.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_wait_for_finalizers_across_replicas() {
    let Two {
        hosts,
        a,
        b,
        _dir,
        _etcd,
    } = two_replicas().await;
    let mut held = config_map("held", "1");
    held.metadata.finalizers = Some(vec!["example.com/hold".to_owned()]);
    let created = a.create(&PostParams::default(), &held).await.unwrap();
    let mut events = b
        .watch(
            &WatchParams::default(),
            created.metadata.resource_version.as_deref().unwrap(),
        )
        .await
        .unwrap()
        .boxed();

    // Deleting through B only marks it while the finalizer is there; A sees the mark.
    b.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = a.get("held").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    // Removing the finalizer through A completes the delete; B reads it gone at once.
    let patch = serde_json::json!({"metadata": {"finalizers": null}});
    a.patch("held", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert!(b.get_opt("held").await.unwrap().is_none());
    // B's watch: the mark (finalizer still there), then the delete.
    let mut seen = Vec::new();
    while seen.last().is_none_or(|(kind, _)| *kind != "DELETED") {
        let event = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .unwrap_or_else(|_| panic!("B's watch goes on after {seen:?}"))
            .unwrap()
            .unwrap();
        seen.push(match event {
            WatchEvent::Modified(cm) => ("MODIFIED", cm.metadata.deletion_timestamp.is_some()),
            WatchEvent::Deleted(cm) => ("DELETED", cm.metadata.deletion_timestamp.is_some()),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(seen.first(), Some(&("MODIFIED", true)), "{seen:?}");
    for host in hosts {
        host.stop().await;
    }
}
