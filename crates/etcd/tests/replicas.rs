//! What etcd adds over the embedded store: several servers on one etcd see each other's
//! writes (consistent reads, watches), servers on other prefixes do not disturb them, and
//! the loss of one etcd member of three loses no acknowledged write.

// Test code: a failed expectation is a panic with the value in the message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use flotilla_etcd::testing::{EtcdCluster, Relay, RelayState};
use flotilla_etcd::{EtcdOptions, EtcdStorage};
use flotilla_storage::{EventType, ListOptions, Storage};
use futures::StreamExt;
use serde_json::json;

async fn open(etcd: &EtcdCluster, prefix: &str) -> EtcdStorage {
    flotilla_etcd::open(EtcdOptions::new(etcd.endpoints(), prefix))
        .await
        .expect("open the etcd storage")
}

fn object(name: &str, n: u64) -> serde_json::Value {
    json!({"kind": "ConfigMap", "metadata": {"name": name}, "data": {"n": n.to_string()}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_through_one_replica_is_read_and_watched_through_another() {
    let etcd = EtcdCluster::start(1).await;
    let a = open(&etcd, "/registry/host").await;
    let b = open(&etcd, "/registry/host").await;
    let mut watch = b
        .watch("/configmaps/", b.current_revision().await)
        .await
        .unwrap();

    for n in 0..20 {
        let written = a
            .create(&format!("/configmaps/ns/c{n}"), object("c", n))
            .await
            .unwrap();
        // No waiting: a read of the current state on B reflects every write acknowledged
        // anywhere before it started.
        let read = b.get(&format!("/configmaps/ns/c{n}")).await.unwrap();
        assert_eq!(
            read.map(|o| o.revision),
            Some(written.revision),
            "write {n}"
        );
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("B's watch delivers A's write")
            .expect("the watch goes on")
            .unwrap();
        assert_eq!(event.event_type, EventType::Added);
        assert_eq!(event.object.revision, written.revision);
        assert_eq!(
            event.object.value()["metadata"]["resourceVersion"],
            written.revision.to_string()
        );
    }
    // Updates and deletes through B, preconditions checked against A's writes.
    let current = b.get("/configmaps/ns/c3").await.unwrap().unwrap();
    let updated = b
        .update("/configmaps/ns/c3", object("c", 33), Some(current.revision))
        .await
        .unwrap();
    let stale = a
        .update("/configmaps/ns/c3", object("c", 34), Some(current.revision))
        .await;
    assert!(
        matches!(stale, Err(flotilla_storage::StorageError::Conflict { actual, .. }) if actual == updated.revision),
        "{stale:?}"
    );
    let deleted = a
        .delete("/configmaps/ns/c3", Some(updated.revision))
        .await
        .unwrap();
    assert_eq!(
        deleted.value()["data"]["n"],
        "33",
        "a delete returns the last state"
    );
    assert!(b.get("/configmaps/ns/c3").await.unwrap().is_none());
    let listed = b
        .list("/configmaps/", &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 19);
    assert_eq!(
        listed.items.iter().map(|o| o.revision).max(),
        a.list("/configmaps/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .iter()
            .map(|o| o.revision)
            .max()
    );
    // The watch on B saw the update (with its previous state) and the delete, in order.
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let event = tokio::time::timeout(Duration::from_secs(10), watch.next())
            .await
            .expect("more events")
            .expect("the watch goes on")
            .unwrap();
        seen.push((
            event.event_type,
            event.object.revision,
            event.prev.map(|p| p.revision),
        ));
    }
    assert_eq!(
        seen,
        [
            (
                EventType::Modified,
                updated.revision,
                Some(current.revision)
            ),
            (EventType::Deleted, deleted.revision, Some(updated.revision)),
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_other_prefixes_share_the_etcd_without_seeing_each_other() {
    let etcd = EtcdCluster::start(1).await;
    let host = open(&etcd, "/registry/host").await;
    let aggregated = open(&etcd, "/registry/aggregated").await;
    // A prefix that merely starts like the host's is another server's.
    let lookalike = open(&etcd, "/registry/hostile").await;
    for n in 0..10 {
        aggregated
            .create(&format!("/clusters/m{n}"), object("m", n))
            .await
            .unwrap();
        lookalike
            .create(&format!("/clusters/m{n}"), object("m", n))
            .await
            .unwrap();
        // The host's consistent read must not wait for a revision only other prefixes made.
        assert!(
            host.get(&format!("/clusters/m{n}"))
                .await
                .unwrap()
                .is_none()
        );
    }
    let listed = host.list("/", &ListOptions::default()).await.unwrap();
    assert!(listed.items.is_empty());
    // The host's revision follows etcd's, so its own next write is newer than all of them.
    let own = host
        .create("/configmaps/ns/x", object("x", 1))
        .await
        .unwrap();
    let theirs = aggregated.get("/clusters/m9").await.unwrap().unwrap();
    assert!(own.revision > theirs.revision);
    assert_eq!(
        aggregated
            .list("/clusters/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        10
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_survive_reopening_and_keep_their_revisions() {
    let etcd = EtcdCluster::start(1).await;
    let first = open(&etcd, "/registry/host").await;
    let mut written = Vec::new();
    for n in 0..30 {
        written.push(
            first
                .create(&format!("/configmaps/ns/c{n:02}"), object("c", n))
                .await
                .unwrap(),
        );
    }
    drop(first);
    let again = open(&etcd, "/registry/host").await;
    let listed = again
        .list("/configmaps/", &ListOptions::default())
        .await
        .unwrap();
    let revisions: Vec<u64> = listed.items.iter().map(|o| o.revision).collect();
    assert_eq!(
        revisions,
        written.iter().map(|o| o.revision).collect::<Vec<_>>()
    );
    assert_eq!(
        listed.items[7].value()["metadata"]["resourceVersion"],
        written[7].revision.to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_one_member_of_three_loses_no_acknowledged_write() {
    let mut etcd = EtcdCluster::start(3).await;
    let storage = std::sync::Arc::new(open(&etcd, "/registry/host").await);
    let writer = {
        let storage = std::sync::Arc::clone(&storage);
        tokio::spawn(async move {
            let mut acknowledged = Vec::new();
            let mut failed = 0;
            for n in 0..300u64 {
                match storage
                    .create(&format!("/configmaps/ns/c{n:03}"), object("c", n))
                    .await
                {
                    Ok(o) => acknowledged.push((o.key.clone(), o.revision)),
                    Err(_) => failed += 1,
                }
            }
            (acknowledged, failed)
        })
    };
    // Kill the member the client talks to first, once writes are flowing.
    while storage
        .list("/configmaps/", &ListOptions::default())
        .await
        .map(|l| l.items.len())
        .unwrap_or(0)
        < 50
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    etcd.kill(0);
    let (acknowledged, failed) = writer.await.unwrap();
    println!(
        "acknowledged {} writes, {failed} failed while member 0 was killed",
        acknowledged.len()
    );
    assert!(
        acknowledged.len() >= 250,
        "the client moved to the other members: {}",
        acknowledged.len()
    );
    // A fresh server (a restarted replica) reads every acknowledged write from etcd.
    let fresh = open(&etcd, "/registry/host").await;
    for (key, revision) in &acknowledged {
        let found = fresh.get(key).await.unwrap();
        assert_eq!(found.map(|o| o.revision), Some(*revision), "{key}");
    }
    // And the running one's cache, fed by a watch that moved members, holds them too.
    for (key, revision) in &acknowledged {
        assert_eq!(
            storage.get(key).await.unwrap().map(|o| o.revision),
            Some(*revision),
            "{key}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates() {
    let etcd = EtcdCluster::start_tls(1).await;
    assert!(etcd.endpoints()[0].starts_with("https://"));
    let mut opts = EtcdOptions::new(etcd.endpoints(), "/registry/host");
    opts.connect = etcd.connect_options(etcd.endpoints());
    let storage = flotilla_etcd::open(opts.clone())
        .await
        .expect("open over TLS");
    let written = storage
        .create("/configmaps/ns/a", object("a", 1))
        .await
        .unwrap();
    assert_eq!(
        storage
            .get("/configmaps/ns/a")
            .await
            .unwrap()
            .map(|o| o.revision),
        Some(written.revision)
    );
    // Without the client certificate etcd refuses the connection: opening fails, clearly.
    let mut anonymous = opts.clone();
    anonymous.connect.client_identity = None;
    let refused = flotilla_etcd::open(anonymous).await;
    assert!(refused.is_err(), "etcd requires a client certificate");
    // Without the CA the member's certificate is not trusted.
    let mut untrusting = opts;
    untrusting.connect.ca_pem = None;
    assert!(flotilla_etcd::open(untrusting).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_cut_off_past_a_compaction_reloads_and_expires_its_watches() {
    let etcd = EtcdCluster::start(1).await;
    let relay = Relay::start(&etcd.endpoints()[0]).await;
    let cut_off = flotilla_etcd::open(EtcdOptions::new(
        vec![relay.url().to_owned()],
        "/registry/host",
    ))
    .await
    .unwrap();
    let other = open(&etcd, "/registry/host").await;
    let kept = other
        .create("/configmaps/ns/kept", object("kept", 0))
        .await
        .unwrap();
    let gone = other
        .create("/configmaps/ns/gone", object("gone", 0))
        .await
        .unwrap();
    assert_eq!(
        cut_off
            .get("/configmaps/ns/gone")
            .await
            .unwrap()
            .map(|o| o.revision),
        Some(gone.revision)
    );
    let mut watch = cut_off
        .watch("/configmaps/", cut_off.current_revision().await)
        .await
        .unwrap();

    // While it is cut off: changes, then a compaction of etcd past all of them.
    relay.set(RelayState::Cut);
    other.delete("/configmaps/ns/gone", None).await.unwrap();
    let mut last = None;
    for n in 0..5 {
        last = Some(
            other
                .create(&format!("/configmaps/ns/new{n}"), object("new", n))
                .await
                .unwrap(),
        );
    }
    let last = last.unwrap();
    other.compact(last.revision).await;
    // The compaction reaches etcd (Storage::compact hands it to the backend asynchronously).
    let client = flotilla_etcd::rpc::Client::new(&etcd.connect_options(etcd.endpoints())).unwrap();
    loop {
        let old = client
            .range(flotilla_etcd::rpc::RangeRequest {
                key: b"/registry/host/configmaps/ns/kept".to_vec(),
                revision: i64::try_from(kept.revision).unwrap(),
                ..Default::default()
            })
            .await;
        if old.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    relay.set(RelayState::Open);

    // Its cache starts over from etcd's state: the watch that needed the lost events ends
    // with Expired, and reads see everything.
    let ended = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match watch.next().await {
                Some(Err(flotilla_storage::StorageError::Expired { .. })) | None => return,
                Some(_) => {}
            }
        }
    })
    .await;
    assert!(ended.is_ok(), "the watch from before the gap ends");
    assert!(cut_off.get("/configmaps/ns/gone").await.unwrap().is_none());
    assert_eq!(
        cut_off.get(&last.key).await.unwrap().map(|o| o.revision),
        Some(last.revision)
    );
    let listed = cut_off
        .list("/configmaps/", &ListOptions::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 6);
}
