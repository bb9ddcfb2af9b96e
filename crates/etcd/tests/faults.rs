//! The etcd storage under etcd's own faults, on real etcd processes: the leader killed (no
//! write fails, none is lost), quorum lost (every call fails within its timeout with
//! `Unavailable` or `Timeout`, the cache still answers, writes work again when quorum
//! returns), an object over etcd's `--max-request-bytes` (`TooLarge`), and writes whose
//! answer is lost after etcd applied them (acknowledged once, applied once).

// Test code: a failed expectation is a panic with the value in the message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_etcd::rpc::{Client, KeyValue, RangeRequest};
use flotilla_etcd::testing::{Acked, EtcdCluster, Relay, RelayState, SteadyWriter};
use flotilla_etcd::{EtcdOptions, EtcdStorage};
use flotilla_storage::{ListOptions, Storage, StorageError, StoredObject};
use serde_json::json;

const PREFIX: &str = "/registry/host";

fn object(name: &str, n: u64) -> serde_json::Value {
    json!({"kind": "ConfigMap", "metadata": {"name": name, "uid": format!("uid-{name}-{n}")}, "data": {"n": n.to_string()}})
}

async fn open_on(endpoints: Vec<String>, request_timeout: Option<Duration>) -> EtcdStorage {
    let mut opts = EtcdOptions::new(endpoints, PREFIX);
    if let Some(timeout) = request_timeout {
        opts.connect.request_timeout = timeout;
    }
    flotilla_etcd::open(opts)
        .await
        .expect("open the etcd storage")
}

/// What etcd itself holds at `key` now (through a client of every member).
async fn in_etcd(etcd: &EtcdCluster, key: &str) -> Option<KeyValue> {
    let client = Client::new(&etcd.connect_options(etcd.endpoints())).unwrap();
    let read = client
        .range(RangeRequest {
            key: format!("{PREFIX}{key}").into_bytes(),
            ..RangeRequest::default()
        })
        .await
        .unwrap();
    read.kvs.into_iter().next()
}

/// Waits (polling etcd every 10 ms, up to 30 s) until `done` holds of `key`'s state in etcd.
async fn until_in_etcd(etcd: &EtcdCluster, key: &str, done: impl Fn(Option<&KeyValue>) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done(in_etcd(etcd, key).await.as_ref()) {
        assert!(Instant::now() < deadline, "{key} never reached the state");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The leader is killed while a steady writer writes through a follower: no write fails
/// (its client rides out the election within the call's timeout) and every acknowledged one
/// is in etcd. The call's timeout is 6 s, below etcd's own 7 s deadline for a proposal its
/// leader took with it: a call that waited for etcd to answer it would fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_ride_out_the_loss_of_the_etcd_leader() {
    let mut etcd = EtcdCluster::start(3).await;
    let leader = etcd.leader().await;
    // The followers first: writes go through a follower, which forwards them to the leader.
    let mut endpoints = etcd.endpoints();
    let leader_url = endpoints.remove(leader);
    endpoints.push(leader_url);
    let storage = Arc::new(open_on(endpoints, Some(Duration::from_secs(6))).await);
    let mut writer = SteadyWriter::start(move |n| {
        let storage = Arc::clone(&storage);
        async move {
            let key = format!("/configmaps/ns/w{n:05}");
            let written = storage.create(&key, object("w", n)).await;
            let version = written.map(|o| o.revision.to_string());
            (key, version.map_err(|e| e.to_string()))
        }
    });
    writer.wait_acked(20, "before the kill").await;

    let before = writer.acked();
    let killed = Instant::now();
    etcd.kill(leader);
    etcd.wait_for_new_leader(leader).await;
    let elected = Instant::now();
    writer.wait_acked(before + 20, "after the kill").await;
    let (acked, failed) = writer.stop().await;

    assert!(
        failed.is_empty(),
        "writes failed during the election: {failed:?}"
    );
    // The stall: the longest gap from the last write acknowledged before the kill.
    let (stall, resumed) = SteadyWriter::longest_gap(&acked[before - 1..before + 20]).unwrap();
    println!(
        "etcd leader killed: elected after {:?}; writes stalled {stall:?}, resumed {:?} after \
         the kill ({:?} after the election)",
        elected - killed,
        resumed.saturating_duration_since(killed),
        resumed.saturating_duration_since(elected),
    );
    for Acked { name, version, .. } in &acked {
        let kv = in_etcd(&etcd, name)
            .await
            .unwrap_or_else(|| panic!("{name} lost"));
        assert_eq!(kv.mod_revision.to_string(), *version, "{name}");
        assert_eq!(kv.version, 1, "{name} written once");
    }
}

/// Two members of three killed: every call answers within its timeout, writes and
/// consistent reads with `Unavailable` or `Timeout` naming etcd, reads of the cache with
/// the cache; when a member returns, writes and reads work again on the same storage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_quorum_calls_fail_within_their_timeout_and_work_again_after() {
    const TIMEOUT: Duration = Duration::from_secs(3);
    let mut etcd = EtcdCluster::start(3).await;
    let storage = Arc::new(open_on(etcd.endpoints(), Some(TIMEOUT)).await);
    let a = storage
        .create("/configmaps/ns/a", object("a", 0))
        .await
        .unwrap();
    let b = storage
        .create("/configmaps/ns/b", object("b", 0))
        .await
        .unwrap();

    let leader = etcd.leader().await;
    let follower = (leader + 1) % 3;
    etcd.kill(leader);
    etcd.kill(follower);

    // All at once, each bounded only to catch a hang (its timeout plus a generous margin).
    let bound = TIMEOUT + Duration::from_secs(5);
    let s = &storage;
    let everything = ListOptions::default();
    let calls = async {
        tokio::join!(
            tokio::time::timeout(bound, s.create("/configmaps/ns/c", object("c", 0))),
            tokio::time::timeout(bound, s.update(&a.key, object("a", 1), Some(a.revision))),
            tokio::time::timeout(bound, s.delete(&b.key, Some(b.revision))),
            tokio::time::timeout(bound, s.get(&a.key)),
            tokio::time::timeout(bound, s.list("/configmaps/", &everything)),
        )
    };
    let (create, update, delete, get, list) = calls.await;
    let outcomes = [
        ("create", create.map(|r| r.map(|_| ()))),
        ("update", update.map(|r| r.map(|_| ()))),
        ("delete", delete.map(|r| r.map(|_| ()))),
        ("get", get.map(|r| r.map(|_| ()))),
        ("list", list.map(|r| r.map(|_| ()))),
    ];
    for (call, outcome) in outcomes {
        let outcome = outcome.unwrap_or_else(|_| panic!("{call} hung past {bound:?}"));
        match outcome {
            Err(StorageError::Unavailable(m) | StorageError::Timeout(m)) => {
                assert!(m.contains("etcd"), "{call}: {m}");
                println!("{call} without quorum: {m}");
            }
            other => panic!("{call} without quorum: {other:?}"),
        }
    }
    // The cache still answers what does not need etcd's current revision.
    let cached = storage.get_cached(&a.key).await.unwrap().unwrap();
    assert_eq!(cached.revision, a.revision);

    etcd.restart(follower).await;
    let d = storage
        .create("/configmaps/ns/d", object("d", 0))
        .await
        .unwrap();
    assert_eq!(
        storage.get(&d.key).await.unwrap().map(|o| o.revision),
        Some(d.revision)
    );
    let a2 = storage.get(&a.key).await.unwrap().unwrap();
    storage
        .update(&a.key, object("a", 2), Some(a2.revision))
        .await
        .unwrap();
}

/// An object over etcd's `--max-request-bytes` is refused as `TooLarge`, naming its size and
/// etcd's limit, both under the member's gRPC receive limit (etcd answers "request is too
/// large") and over it (gRPC refuses the message); the store is unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_over_etcds_request_limit_is_refused_as_too_large() {
    let etcd = EtcdCluster::start_with_args(1, &["--max-request-bytes=65536"]).await;
    let storage = open_on(etcd.endpoints(), None).await;
    for size in [100 << 10, 1 << 20] {
        let mut big = object("big", 0);
        big["data"]["blob"] = json!("x".repeat(size));
        let encoded = serde_json::to_vec(&big).unwrap().len();
        match storage.create("/configmaps/ns/big", big).await {
            Err(StorageError::TooLarge(m)) => {
                assert!(
                    m.contains("etcd") && m.contains("--max-request-bytes"),
                    "{m}"
                );
                assert!(m.contains(&format!("{encoded} bytes")), "{m}");
                println!("a {encoded}-byte object: {m}");
            }
            other => panic!("a {size}-byte object: {other:?}"),
        }
    }
    assert!(storage.get("/configmaps/ns/big").await.unwrap().is_none());
    storage
        .create("/configmaps/ns/small", object("small", 0))
        .await
        .unwrap();
}

/// Runs `write` on a fresh storage whose first endpoint is `relay` (so the write goes
/// through it), with the relay dropping answers; once etcd shows the write `applied`, cuts
/// the relay, so the call fails after it was sent and is sent again to the member directly.
async fn lost_in_flight<F, Fut>(
    etcd: &EtcdCluster,
    relay: &Relay,
    key: &str,
    applied: impl Fn(Option<&KeyValue>) -> bool,
    write: F,
) -> Result<Arc<StoredObject>, StorageError>
where
    F: FnOnce(Arc<EtcdStorage>) -> Fut,
    Fut: Future<Output = Result<Arc<StoredObject>, StorageError>> + Send + 'static,
{
    relay.set(RelayState::Open);
    let endpoints = vec![relay.url().to_owned(), etcd.endpoints()[0].clone()];
    let storage = Arc::new(open_on(endpoints, None).await);
    relay.set(RelayState::Muted);
    let written = tokio::spawn(write(storage));
    until_in_etcd(etcd, key, applied).await;
    relay.set(RelayState::Cut);
    written.await.unwrap()
}

/// A write whose answer is lost after etcd applied it is refused by its own effect when it
/// is sent again, and acknowledged as applied: a create, an update and a delete, each
/// applied exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_lost_in_flight_after_etcd_applied_it_is_acknowledged_once() {
    let etcd = EtcdCluster::start(1).await;
    let relay = Relay::start(&etcd.endpoints()[0]).await;
    let key = "/configmaps/ns/lost";

    let created = lost_in_flight(
        &etcd,
        &relay,
        key,
        |kv| kv.is_some(),
        |s| async move { s.create(key, object("lost", 1)).await },
    )
    .await
    .expect("the create is acknowledged");
    let kv = in_etcd(&etcd, key).await.unwrap();
    assert_eq!(
        (kv.version, u64::try_from(kv.mod_revision).unwrap()),
        (1, created.revision)
    );

    let expected = created.revision;
    let updated = lost_in_flight(
        &etcd,
        &relay,
        key,
        |kv| kv.is_some_and(|kv| kv.version == 2),
        |s| async move { s.update(key, object("lost", 2), Some(expected)).await },
    )
    .await
    .expect("the update is acknowledged");
    let kv = in_etcd(&etcd, key).await.unwrap();
    assert_eq!(
        (kv.version, u64::try_from(kv.mod_revision).unwrap()),
        (2, updated.revision)
    );

    let expected = updated.revision;
    let deleted = lost_in_flight(
        &etcd,
        &relay,
        key,
        |kv| kv.is_none(),
        |s| async move { s.delete(key, Some(expected)).await },
    )
    .await
    .expect("the delete is acknowledged");
    assert_eq!(
        deleted.value()["data"]["n"],
        "2",
        "the deleted object is returned"
    );
    assert!(deleted.revision > updated.revision);
}
