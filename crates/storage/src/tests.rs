//! Tests of the two backends that number writes consecutively (memory and embedded): the
//! behaviour of the [`Storage`] contract with exact revisions and a count-bounded history,
//! the public conformance suite run against both, and the embedded backend's persistence.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::{
    EmbeddedOptions, EmbeddedStorage, EventType, ListOptions, MemoryStorage, Revision, Storage,
    StorageError, WatchEvent, WatchStream,
};

mod memory_conformance {
    crate::conformance_tests!(|| (crate::MemoryStorage::new(), ()));
}

mod embedded_conformance {
    crate::conformance_tests!(|| {
        let dir = tempfile::tempdir().unwrap();
        let storage =
            crate::EmbeddedStorage::open(dir.path(), crate::EmbeddedOptions::default()).unwrap();
        (storage, dir)
    });
}

/// Runs each `async fn name(storage, history)` test against a fresh store of each backend
/// keeping `history` events.
macro_rules! for_both_backends {
    ($($name:ident: $history:expr),* $(,)?) => {
        mod memory_backend {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::MemoryStorage::with_history($history)).await;
                }
            )*
        }
        mod embedded_backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let opts = crate::EmbeddedOptions { history: $history, ..Default::default() };
                    super::$name(crate::EmbeddedStorage::open(dir.path(), opts).unwrap()).await;
                }
            )*
        }
    };
}

for_both_backends! {
    crud_and_preconditions: 1000,
    invalid_objects_are_refused: 1000,
    list_by_prefix_in_key_order: 1000,
    watch_replays_then_follows_live: 1000,
    watch_filters_by_prefix: 1000,
    compaction_expires_old_watches: 1000,
    lagging_watcher_gets_expired_then_ends: 1000,
    history_is_bounded: 10,
    many_watchers_receive_every_event_in_order: 1000,
    concurrent_writers_get_consecutive_revisions: 1000,
    racing_creates_of_one_key: 1000,
    dropping_the_storage_ends_watches: 1000,
}

fn pod(name: &str, extra: Value) -> Value {
    json!({ "kind": "Pod", "metadata": { "name": name }, "spec": extra })
}

fn rv(value: &Value) -> &str {
    value["metadata"]["resourceVersion"].as_str().unwrap()
}

async fn next(stream: &mut WatchStream) -> Result<WatchEvent, StorageError> {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("watch event timed out")
        .expect("watch stream ended")
}

/// Asserts nothing arrives on `stream` for a short while.
async fn assert_quiet(stream: &mut WatchStream) {
    let got = tokio::time::timeout(Duration::from_millis(100), stream.next()).await;
    assert!(got.is_err(), "unexpected watch item: {got:?}");
}

async fn crud_and_preconditions(s: impl Storage) {
    assert_eq!(s.current_revision().await, 0);
    let a = s
        .create("/pods/ns/a", pod("a", json!({"x": 1})))
        .await
        .unwrap();
    assert_eq!(a.revision, 1);
    assert_eq!(a.key, "/pods/ns/a");
    assert_eq!(rv(&a.value()), "1");
    let reparsed: Value = serde_json::from_slice(&a.bytes).unwrap();
    assert_eq!(reparsed, *a.value());

    let dup = s.create("/pods/ns/a", pod("a", json!({}))).await;
    assert!(matches!(dup, Err(StorageError::AlreadyExists(k)) if k == "/pods/ns/a"));
    // A failed write consumes no revision.
    assert_eq!(s.current_revision().await, 1);

    let got = s.get("/pods/ns/a").await.unwrap().unwrap();
    assert_eq!(got.revision, 1);
    assert!(s.get("/pods/ns/b").await.unwrap().is_none());

    let stale = s
        .update("/pods/ns/a", pod("a", json!({"x": 2})), Some(7))
        .await;
    assert!(matches!(
        stale,
        Err(StorageError::Conflict {
            expected: 7,
            actual: 1,
            ..
        })
    ));
    let a2 = s
        .update("/pods/ns/a", pod("a", json!({"x": 2})), Some(1))
        .await
        .unwrap();
    assert_eq!((a2.revision, rv(&a2.value())), (2, "2"));
    let a3 = s
        .update("/pods/ns/a", pod("a", json!({"x": 3})), None)
        .await
        .unwrap();
    assert_eq!(a3.revision, 3);
    assert_eq!(
        s.get("/pods/ns/a").await.unwrap().unwrap().value()["spec"]["x"],
        3
    );

    let missing = s.update("/pods/ns/b", pod("b", json!({})), None).await;
    assert!(matches!(missing, Err(StorageError::NotFound(k)) if k == "/pods/ns/b"));
    let missing = s.update("/pods/ns/b", pod("b", json!({})), Some(3)).await;
    assert!(
        matches!(missing, Err(StorageError::NotFound(_))),
        "NotFound takes precedence"
    );

    let stale = s.delete("/pods/ns/a", Some(2)).await;
    assert!(matches!(
        stale,
        Err(StorageError::Conflict {
            expected: 2,
            actual: 3,
            ..
        })
    ));
    let deleted = s.delete("/pods/ns/a", Some(3)).await.unwrap();
    assert_eq!(deleted.revision, 4);
    assert_eq!(rv(&deleted.value()), "4");
    assert_eq!(
        deleted.value()["spec"]["x"],
        3,
        "the last state is returned"
    );
    assert!(s.get("/pods/ns/a").await.unwrap().is_none());
    assert!(matches!(
        s.delete("/pods/ns/a", None).await,
        Err(StorageError::NotFound(_))
    ));
    assert_eq!(s.current_revision().await, 4);

    // The key can be created again after deletion.
    let again = s.create("/pods/ns/a", pod("a", json!({}))).await.unwrap();
    assert_eq!(again.revision, 5);
}

async fn invalid_objects_are_refused(s: impl Storage) {
    for bad in [
        json!([1, 2]),
        json!("text"),
        json!(null),
        json!({"metadata": 5}),
    ] {
        assert!(matches!(
            s.create("/k", bad.clone()).await,
            Err(StorageError::InvalidObject)
        ));
    }
    s.create("/k", json!({"metadata": {"name": "k"}}))
        .await
        .unwrap();
    assert!(matches!(
        s.update("/k", json!([]), None).await,
        Err(StorageError::InvalidObject)
    ));
    assert_eq!(s.current_revision().await, 1);
    // An object without metadata gets one holding the resourceVersion.
    let bare = s.create("/bare", json!({"kind": "X"})).await.unwrap();
    assert_eq!(rv(&bare.value()), "2");
}

async fn list_by_prefix_in_key_order(s: impl Storage) {
    for key in ["/b/ns/2", "/a/ns/1", "/b/ns/1", "/b/other/1", "/bb/ns/1"] {
        s.create(key, json!({"metadata": {}})).await.unwrap();
    }
    let all = s.list("/b/", &ListOptions::default()).await.unwrap();
    let keys: Vec<&str> = all.items.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["/b/ns/1", "/b/ns/2", "/b/other/1"]);
    assert_eq!(all.revision, 5);
    assert_eq!(
        s.list("/b/ns/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );
    assert_eq!(
        s.list("", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        5
    );
    assert!(
        s.list("/c/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

async fn watch_replays_then_follows_live(s: impl Storage) {
    s.create("/p/a", pod("a", json!({"v": 1}))).await.unwrap();
    s.update("/p/a", pod("a", json!({"v": 2})), None)
        .await
        .unwrap();
    s.delete("/p/a", None).await.unwrap();

    let mut from_start = s.watch("/p/", 0).await.unwrap();
    let added = next(&mut from_start).await.unwrap();
    assert_eq!(
        (added.event_type, added.object.revision),
        (EventType::Added, 1)
    );
    assert!(added.prev.is_none());
    let modified = next(&mut from_start).await.unwrap();
    assert_eq!(
        (modified.event_type, modified.object.revision),
        (EventType::Modified, 2)
    );
    assert_eq!(modified.prev.as_ref().unwrap().value()["spec"]["v"], 1);
    let deleted = next(&mut from_start).await.unwrap();
    assert_eq!(
        (deleted.event_type, deleted.object.revision),
        (EventType::Deleted, 3)
    );
    assert_eq!(rv(&deleted.object.value()), "3");
    assert_eq!(deleted.object.value()["spec"]["v"], 2);
    assert_eq!(deleted.prev.as_ref().unwrap().revision, 2);
    assert_quiet(&mut from_start).await;

    // From the middle of the history: only later events.
    let mut from_two = s.watch("/p/", 2).await.unwrap();
    assert_eq!(next(&mut from_two).await.unwrap().object.revision, 3);

    // From the current revision: only live events.
    let mut live = s.watch("/p/", s.current_revision().await).await.unwrap();
    assert_quiet(&mut live).await;
    s.create("/p/b", pod("b", json!({}))).await.unwrap();
    for stream in [&mut from_start, &mut from_two, &mut live] {
        let e = next(stream).await.unwrap();
        assert_eq!(
            (e.event_type, e.object.key.as_str(), e.object.revision),
            (EventType::Added, "/p/b", 4)
        );
    }

    // A revision in the future waits for it.
    let mut future = s.watch("/p/", 5).await.unwrap();
    s.create("/p/c", pod("c", json!({}))).await.unwrap();
    s.create("/p/d", pod("d", json!({}))).await.unwrap();
    assert_eq!(next(&mut future).await.unwrap().object.revision, 6);
}

async fn watch_filters_by_prefix(s: impl Storage) {
    let mut pods = s.watch("/pods/", 0).await.unwrap();
    let mut ns1 = s.watch("/pods/ns1/", 0).await.unwrap();
    s.create("/pods/ns1/a", pod("a", json!({}))).await.unwrap();
    s.create("/deployments/ns1/a", pod("a", json!({})))
        .await
        .unwrap();
    s.create("/pods/ns2/a", pod("a", json!({}))).await.unwrap();
    s.create("/pods/ns1/b", pod("b", json!({}))).await.unwrap();

    let mut got = Vec::new();
    for _ in 0..3 {
        got.push(next(&mut pods).await.unwrap().object.key.clone());
    }
    assert_eq!(got, ["/pods/ns1/a", "/pods/ns2/a", "/pods/ns1/b"]);
    assert_quiet(&mut pods).await;
    assert_eq!(next(&mut ns1).await.unwrap().object.revision, 1);
    assert_eq!(next(&mut ns1).await.unwrap().object.revision, 4);
    assert_quiet(&mut ns1).await;
}

async fn compaction_expires_old_watches(s: impl Storage) {
    for i in 0..5 {
        s.create(&format!("/k/{i}"), json!({})).await.unwrap();
    }
    s.compact(3).await;
    assert!(matches!(
        s.watch("/", 2).await,
        Err(StorageError::Expired {
            requested: 2,
            oldest: 3
        })
    ));
    let mut w = s.watch("/", 3).await.unwrap();
    assert_eq!(next(&mut w).await.unwrap().object.revision, 4);
    assert_eq!(next(&mut w).await.unwrap().object.revision, 5);
    // Compacting past the current revision stops at it; a watch from there still works.
    s.compact(100).await;
    assert!(matches!(
        s.watch("/", 4).await,
        Err(StorageError::Expired { oldest: 5, .. })
    ));
    let mut live = s.watch("/", 5).await.unwrap();
    s.create("/k/new", json!({})).await.unwrap();
    assert_eq!(next(&mut live).await.unwrap().object.revision, 6);
    // Objects are unaffected by compaction.
    assert_eq!(
        s.list("/k/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        6
    );
}

async fn lagging_watcher_gets_expired_then_ends(s: impl Storage) {
    let mut slow = s.watch("/", 0).await.unwrap();
    s.create("/k/0", json!({})).await.unwrap();
    s.create("/k/1", json!({})).await.unwrap();
    assert_eq!(next(&mut slow).await.unwrap().object.revision, 1);
    assert_eq!(next(&mut slow).await.unwrap().object.revision, 2);
    // Falls behind: events 3..=10 are written and 3..=8 dropped before it reads them.
    for i in 2..10 {
        s.create(&format!("/k/{i}"), json!({})).await.unwrap();
    }
    s.compact(8).await;
    let err = next(&mut slow).await.unwrap_err();
    assert!(
        matches!(
            err,
            StorageError::Expired {
                requested: 2,
                oldest: 8
            }
        ),
        "{err:?}"
    );
    let end = tokio::time::timeout(Duration::from_secs(5), slow.next())
        .await
        .unwrap();
    assert!(end.is_none(), "the stream ends after Expired");
}

/// Run with a history of 10 events.
async fn history_is_bounded(s: impl Storage) {
    for i in 0..100 {
        s.create(&format!("/k/{i}"), json!({})).await.unwrap();
    }
    // The history keeps at least 10 and at most 10 + 10% events.
    assert!(s.watch("/", 90).await.is_ok());
    assert!(matches!(
        s.watch("/", 85).await,
        Err(StorageError::Expired { .. })
    ));
    let mut w = s.watch("/", 90).await.unwrap();
    for rev in 91..=100 {
        assert_eq!(next(&mut w).await.unwrap().object.revision, rev);
    }
    assert_eq!(
        s.list("/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        100
    );
}

async fn many_watchers_receive_every_event_in_order(s: impl Storage) {
    let s = Arc::new(s);
    const WATCHERS: usize = 100;
    const WRITES: u64 = 300;
    let mut handles = Vec::new();
    for _ in 0..WATCHERS {
        let mut stream = s.watch("/", 0).await.unwrap();
        handles.push(tokio::spawn(async move {
            let mut revisions = Vec::with_capacity(WRITES as usize);
            while revisions.len() < WRITES as usize {
                revisions.push(next(&mut stream).await.unwrap().object.revision);
            }
            revisions
        }));
    }
    // Four writers, so the embedded backend groups writes into shared commits.
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                for i in 0..WRITES / 4 {
                    s.create(&format!("/k/{w}/{i}"), json!({})).await.unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    let expected: Vec<Revision> = (1..=WRITES).collect();
    for h in handles {
        assert_eq!(h.await.unwrap(), expected);
    }
}

async fn concurrent_writers_get_consecutive_revisions(s: impl Storage) {
    let s = Arc::new(s);
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                for i in 0..25 {
                    revisions.push(
                        s.create(&format!("/k/{t}/{i}"), json!({}))
                            .await
                            .unwrap()
                            .revision,
                    );
                }
                revisions
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        let revisions = t.await.unwrap();
        assert!(
            revisions.windows(2).all(|w| w[0] < w[1]),
            "a client's writes are ordered"
        );
        all.extend(revisions);
    }
    all.sort_unstable();
    assert_eq!(all, (1..=400).collect::<Vec<Revision>>());
    assert_eq!(s.current_revision().await, 400);
    assert_eq!(
        s.list("/k/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        400
    );
}

async fn racing_creates_of_one_key(s: impl Storage) {
    let s = Arc::new(s);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = Arc::clone(&s);
            tokio::spawn(async move { s.create("/race", json!({"spec": i})).await })
        })
        .collect();
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(o) => {
                ok += 1;
                assert_eq!(o.revision, 1);
            }
            Err(StorageError::AlreadyExists(_)) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(ok, 1);
    assert_eq!(s.current_revision().await, 1);
}

async fn dropping_the_storage_ends_watches(s: impl Storage) {
    s.create("/a", json!({})).await.unwrap();
    let mut w = s.watch("/", 0).await.unwrap();
    drop(s);
    assert_eq!(
        next(&mut w).await.unwrap().object.revision,
        1,
        "retained events still drain"
    );
    let end = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap();
    assert!(end.is_none());
}

#[tokio::test]
async fn dropped_watch_releases_the_state() {
    let s = MemoryStorage::new();
    let w = s.watch("/", 0).await.unwrap();
    let before = Arc::strong_count(&s.cache_for_tests());
    drop(w);
    assert_eq!(Arc::strong_count(&s.cache_for_tests()), before - 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_reopen_keeps_objects_revision_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let opts = EmbeddedOptions::default();
    {
        let s = EmbeddedStorage::open(dir.path(), opts.clone()).unwrap();
        s.create("/p/a", pod("a", json!({"v": 1}))).await.unwrap();
        s.create("/p/b", pod("b", json!({"v": 1}))).await.unwrap();
        s.update("/p/a", pod("a", json!({"v": 2})), Some(1))
            .await
            .unwrap();
        s.delete("/p/b", None).await.unwrap();
        s.create("/q/c", pod("c", json!({}))).await.unwrap();
    }
    let s = EmbeddedStorage::open(dir.path(), opts.clone()).unwrap();
    assert_eq!(s.current_revision().await, 5);
    let a = s.get("/p/a").await.unwrap().unwrap();
    assert_eq!((a.revision, rv(&a.value())), (3, "3"));
    assert_eq!(a.value()["spec"]["v"], 2);
    assert!(s.get("/p/b").await.unwrap().is_none());
    assert_eq!(
        s.list("/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        2
    );

    // The history survives, `prev` included; a watch from before the reopen resumes.
    let mut w = s.watch("/p/", 1).await.unwrap();
    let e = next(&mut w).await.unwrap();
    assert_eq!(
        (e.event_type, e.object.key.as_str(), e.object.revision),
        (EventType::Added, "/p/b", 2)
    );
    let e = next(&mut w).await.unwrap();
    assert_eq!((e.event_type, e.object.revision), (EventType::Modified, 3));
    assert_eq!(e.prev.as_ref().unwrap().value()["spec"]["v"], 1);
    let e = next(&mut w).await.unwrap();
    assert_eq!(
        (e.event_type, e.object.revision, rv(&e.object.value())),
        (EventType::Deleted, 4, "4")
    );
    assert_eq!(e.prev.as_ref().unwrap().revision, 2);
    assert_quiet(&mut w).await;

    // Writing continues from the stored revision and wakes the resumed watch.
    let next_write = s.create("/p/d", pod("d", json!({}))).await.unwrap();
    assert_eq!(next_write.revision, 6);
    assert_eq!(next(&mut w).await.unwrap().object.revision, 6);
    // The resourceVersion inside stored bytes matches too.
    let bytes: Value =
        serde_json::from_slice(&s.get("/p/a").await.unwrap().unwrap().bytes).unwrap();
    assert_eq!(rv(&bytes), "3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_compaction_and_trimming_persist() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = EmbeddedStorage::open(dir.path(), EmbeddedOptions::default()).unwrap();
        for i in 0..10 {
            s.create(&format!("/k/{i}"), json!({})).await.unwrap();
        }
        s.compact(6).await;
    }
    {
        let s = EmbeddedStorage::open(dir.path(), EmbeddedOptions::default()).unwrap();
        assert!(matches!(
            s.watch("/", 5).await,
            Err(StorageError::Expired { oldest: 6, .. })
        ));
        let mut w = s.watch("/", 6).await.unwrap();
        assert_eq!(next(&mut w).await.unwrap().object.revision, 7);
    }
    // Reopening with a smaller history trims at once, and writes trim the file.
    let small = EmbeddedOptions {
        history: 3,
        ..Default::default()
    };
    {
        let s = EmbeddedStorage::open(dir.path(), small.clone()).unwrap();
        assert!(matches!(
            s.watch("/", 6).await,
            Err(StorageError::Expired { oldest: 7, .. })
        ));
        for i in 10..30 {
            s.create(&format!("/k/{i}"), json!({})).await.unwrap();
        }
    }
    let s = EmbeddedStorage::open(dir.path(), small).unwrap();
    assert_eq!(s.current_revision().await, 30);
    assert!(s.watch("/", 27).await.is_ok());
    assert!(matches!(
        s.watch("/", 25).await,
        Err(StorageError::Expired { .. })
    ));
    assert_eq!(
        s.list("/k/", &ListOptions::default())
            .await
            .unwrap()
            .items
            .len(),
        30
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_concurrent_writes_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Arc::new(EmbeddedStorage::open(dir.path(), EmbeddedOptions::default()).unwrap());
        let tasks: Vec<_> = (0..16)
            .map(|t| {
                let s = Arc::clone(&s);
                tokio::spawn(async move {
                    for i in 0..20 {
                        let key = format!("/k/{t}/{i}");
                        let o = s.create(&key, json!({"spec": {"t": t}})).await.unwrap();
                        s.update(&key, json!({"spec": {"t": t, "i": i}}), Some(o.revision))
                            .await
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(s.current_revision().await, 640);
        let stats = s.stats();
        assert_eq!(stats.writes, 640);
        assert!((1..=640).contains(&stats.commits), "{stats:?}");
    }
    let s = EmbeddedStorage::open(dir.path(), EmbeddedOptions::default()).unwrap();
    assert_eq!(s.current_revision().await, 640);
    let items = s.list("/k/", &ListOptions::default()).await.unwrap().items;
    assert_eq!(items.len(), 320);
    for o in &items {
        assert!(
            o.value()["spec"]["i"].is_number(),
            "{} lost its update",
            o.key
        );
    }
    let mut w = s.watch("/", 0).await.unwrap();
    for rev in 1..=640 {
        assert_eq!(next(&mut w).await.unwrap().object.revision, rev);
    }
}

#[test]
fn open_fails_on_a_file_that_is_not_a_database() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("flotilla.redb"),
        b"definitely not redb, but long enough to look",
    )
    .unwrap();
    assert!(matches!(
        EmbeddedStorage::open(dir.path(), EmbeddedOptions::default()),
        Err(StorageError::Open { .. })
    ));
}

#[test]
fn stored_objects_keep_labels_packed_and_parse_on_demand() {
    let o = crate::StoredObject::new(
        "/k",
        3,
        json!({"metadata": {"name": "k", "labels": {"app": "web", "n": 5, "": "empty-key", "tier": ""}}}),
    );
    let labels: Vec<(&str, &str)> = o.labels().iter().collect();
    assert_eq!(
        labels,
        [("app", "web"), ("", "empty-key"), ("tier", "")],
        "non-string values count as absent"
    );
    assert_eq!(o.labels().get("tier"), Some(""));
    assert_eq!(o.labels().get("n"), None);
    assert!(
        crate::StoredObject::new("/u", 1, json!({}))
            .labels()
            .is_empty()
    );

    let first = o.value();
    assert_eq!(first["metadata"]["labels"]["n"], 5);
    assert!(
        Arc::ptr_eq(&first, &o.value()),
        "a parse still held is shared"
    );
    drop(first);
    assert_eq!(
        *o.value(),
        serde_json::from_slice::<Value>(&o.bytes).unwrap()
    );
    assert_eq!(
        o.bytes.len(),
        serde_json::to_vec(&*o.value()).unwrap().len()
    );

    assert!(matches!(
        crate::StoredObject::from_bytes("/bad", 1, bytes::Bytes::from_static(b"[1]")),
        Err(StorageError::Backend(_))
    ));
}
