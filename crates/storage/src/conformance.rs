//! The behaviour every [`Storage`] backend must show, as async test functions any backend's
//! tests run (enable the `test-support` feature; see [`conformance_tests!`]).
//!
//! Only what the contract promises is asserted: revisions increase (gaps allowed, as with
//! etcd's mod revisions) and the history holds at least what was not compacted. Expectations
//! of one backend (consecutive revisions, a history bounded by event count) belong in that
//! backend's own tests.

// Test code: a failed expectation is a panic with the value in the message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::{EventType, ListOptions, Revision, Storage, StorageError, WatchEvent, WatchStream};

/// Expands to one `#[tokio::test]` per conformance test, each calling `$make()` for a fresh
/// store. `$make` returns `(storage, guard)`; the guard (a temporary directory, a server) is
/// kept until the test ends.
///
/// ```ignore
/// flotilla_storage::conformance_tests!(|| (MemoryStorage::new(), ()));
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            crud_and_preconditions,
            invalid_objects_are_refused,
            list_by_prefix_in_key_order,
            list_pages,
            list_at_an_older_revision,
            list_expired_and_future_revisions,
            waiting_for_a_revision,
            watch_replays_then_follows_live,
            watch_filters_by_prefix,
            watch_resumes_from_any_retained_revision,
            compaction_expires_old_watches,
            lagging_watcher_gets_expired_then_ends,
            many_concurrent_writers,
            racing_creates_of_one_key,
            dropping_the_storage_ends_watches,
        );
    };
    (@each $make:expr; $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                #[allow(clippy::redundant_closure_call)]
                // The guard lives until the end of the test.
                let (storage, _guard) = ($make)();
                $crate::conformance::$name(storage).await;
            }
        )*
    };
}

fn pod(name: &str, extra: Value) -> Value {
    json!({ "kind": "Pod", "metadata": { "name": name }, "spec": extra })
}

fn rv(value: &Value) -> &str {
    value["metadata"]["resourceVersion"].as_str().unwrap()
}

fn all() -> ListOptions {
    ListOptions::default()
}

fn keys(items: &[Arc<crate::StoredObject>]) -> Vec<&str> {
    items.iter().map(|o| o.key.as_str()).collect()
}

async fn next(stream: &mut WatchStream) -> Result<WatchEvent, StorageError> {
    tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("watch event timed out")
        .expect("watch stream ended")
}

/// Writes a marker under `prefix` and reads `stream` up to it, returning what came before:
/// shows that nothing else was delivered without waiting for a quiet period.
async fn drain_until_marker<S: Storage>(
    s: &S,
    stream: &mut WatchStream,
    prefix: &str,
) -> Vec<WatchEvent> {
    let marker_key = format!("{prefix}~marker{}", s.current_revision().await);
    let marker = s.create(&marker_key, json!({})).await.unwrap();
    let mut before = Vec::new();
    loop {
        let event = next(stream).await.unwrap();
        if event.object.revision == marker.revision {
            return before;
        }
        before.push(event);
    }
}

pub async fn crud_and_preconditions(s: impl Storage) {
    let start = s.current_revision().await;
    let a = s
        .create("/pods/ns/a", pod("a", json!({"x": 1})))
        .await
        .unwrap();
    assert!(a.revision > start);
    assert_eq!(a.key, "/pods/ns/a");
    assert_eq!(rv(&a.value()), a.revision.to_string());
    let reparsed: Value = serde_json::from_slice(&a.bytes).unwrap();
    assert_eq!(reparsed, *a.value());
    assert_eq!(s.current_revision().await, a.revision);

    let dup = s.create("/pods/ns/a", pod("a", json!({}))).await;
    assert!(matches!(dup, Err(StorageError::AlreadyExists(k)) if k == "/pods/ns/a"));
    assert_eq!(
        s.current_revision().await,
        a.revision,
        "a failed write is no write"
    );

    let got = s.get("/pods/ns/a").await.unwrap().unwrap();
    assert_eq!(got.revision, a.revision);
    assert!(s.get("/pods/ns/b").await.unwrap().is_none());

    let stale = s
        .update(
            "/pods/ns/a",
            pod("a", json!({"x": 2})),
            Some(a.revision + 1000),
        )
        .await;
    assert!(
        matches!(stale, Err(StorageError::Conflict { expected, actual, .. })
            if expected == a.revision + 1000 && actual == a.revision)
    );
    let a2 = s
        .update("/pods/ns/a", pod("a", json!({"x": 2})), Some(a.revision))
        .await
        .unwrap();
    assert!(a2.revision > a.revision);
    assert_eq!(rv(&a2.value()), a2.revision.to_string());
    let a3 = s
        .update("/pods/ns/a", pod("a", json!({"x": 3})), None)
        .await
        .unwrap();
    assert!(a3.revision > a2.revision);
    assert_eq!(
        s.get("/pods/ns/a").await.unwrap().unwrap().value()["spec"]["x"],
        3
    );

    let missing = s.update("/pods/ns/b", pod("b", json!({})), None).await;
    assert!(matches!(missing, Err(StorageError::NotFound(k)) if k == "/pods/ns/b"));
    let missing = s
        .update("/pods/ns/b", pod("b", json!({})), Some(a3.revision))
        .await;
    assert!(
        matches!(missing, Err(StorageError::NotFound(_))),
        "NotFound takes precedence"
    );

    let stale = s.delete("/pods/ns/a", Some(a2.revision)).await;
    assert!(matches!(stale, Err(StorageError::Conflict { actual, .. }) if actual == a3.revision));
    let deleted = s.delete("/pods/ns/a", Some(a3.revision)).await.unwrap();
    assert!(deleted.revision > a3.revision);
    assert_eq!(rv(&deleted.value()), deleted.revision.to_string());
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
    assert_eq!(s.current_revision().await, deleted.revision);

    let again = s.create("/pods/ns/a", pod("a", json!({}))).await.unwrap();
    assert!(again.revision > deleted.revision);
}

pub async fn invalid_objects_are_refused(s: impl Storage) {
    let start = s.current_revision().await;
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
    assert_eq!(s.current_revision().await, start);
    s.create("/k", json!({"metadata": {"name": "k"}}))
        .await
        .unwrap();
    assert!(matches!(
        s.update("/k", json!([]), None).await,
        Err(StorageError::InvalidObject)
    ));
    // An object without metadata gets one holding the resourceVersion.
    let bare = s.create("/bare", json!({"kind": "X"})).await.unwrap();
    assert_eq!(rv(&bare.value()), bare.revision.to_string());
}

pub async fn list_by_prefix_in_key_order(s: impl Storage) {
    for key in ["/b/ns/2", "/a/ns/1", "/b/ns/1", "/b/other/1", "/bb/ns/1"] {
        s.create(key, json!({"metadata": {}})).await.unwrap();
    }
    let listed = s.list("/b/", &all()).await.unwrap();
    assert_eq!(keys(&listed.items), ["/b/ns/1", "/b/ns/2", "/b/other/1"]);
    assert_eq!(listed.revision, s.current_revision().await);
    assert_eq!(listed.remaining, 0);
    assert_eq!(s.list("/b/ns/", &all()).await.unwrap().items.len(), 2);
    assert_eq!(s.list("", &all()).await.unwrap().items.len(), 5);
    assert!(s.list("/c/", &all()).await.unwrap().items.is_empty());
}

pub async fn list_pages(s: impl Storage) {
    for i in 0..7 {
        s.create(&format!("/p/{i}"), json!({})).await.unwrap();
    }
    s.create("/q/0", json!({})).await.unwrap();
    let page = |start_after: Option<&str>, limit| ListOptions {
        revision: None,
        start_after: start_after.map(str::to_owned),
        limit,
    };
    let first = s.list("/p/", &page(None, Some(3))).await.unwrap();
    assert_eq!(keys(&first.items), ["/p/0", "/p/1", "/p/2"]);
    assert_eq!(first.remaining, 4);
    let second = s.list("/p/", &page(Some("/p/2"), Some(3))).await.unwrap();
    assert_eq!(keys(&second.items), ["/p/3", "/p/4", "/p/5"]);
    assert_eq!(second.remaining, 1);
    let last = s.list("/p/", &page(Some("/p/5"), Some(3))).await.unwrap();
    assert_eq!(keys(&last.items), ["/p/6"]);
    assert_eq!(last.remaining, 0, "nothing of /q/ counts");
    // A start key that is not stored, and one before the prefix.
    let between = s.list("/p/", &page(Some("/p/2x"), None)).await.unwrap();
    assert_eq!(keys(&between.items), ["/p/3", "/p/4", "/p/5", "/p/6"]);
    let before = s.list("/p/", &page(Some("/a"), Some(1))).await.unwrap();
    assert_eq!((keys(&before.items), before.remaining), (vec!["/p/0"], 6));
    // Limit 0 means no limit.
    assert_eq!(
        s.list("/p/", &page(None, Some(0)))
            .await
            .unwrap()
            .items
            .len(),
        7
    );
}

pub async fn list_at_an_older_revision(s: impl Storage) {
    for name in ["a", "b", "c", "d"] {
        s.create(&format!("/p/{name}"), pod(name, json!({"v": 1})))
            .await
            .unwrap();
    }
    let first = s
        .list(
            "/p/",
            &ListOptions {
                limit: Some(2),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(keys(&first.items), ["/p/a", "/p/b"]);
    let snapshot = first.revision;

    // Changes after the first page: an update, a delete, a create (before and after the
    // page boundary), and writes elsewhere.
    s.update("/p/c", pod("c", json!({"v": 2})), None)
        .await
        .unwrap();
    s.delete("/p/d", None).await.unwrap();
    s.create("/p/bb", pod("bb", json!({}))).await.unwrap();
    s.create("/p/e", pod("e", json!({}))).await.unwrap();
    s.update("/p/a", pod("a", json!({"v": 3})), None)
        .await
        .unwrap();
    s.create("/q/x", json!({})).await.unwrap();

    let at = |start_after: Option<&str>| ListOptions {
        revision: Some(snapshot),
        start_after: start_after.map(str::to_owned),
        limit: Some(2),
    };
    let second = s.list("/p/", &at(Some("/p/b"))).await.unwrap();
    assert_eq!(second.revision, snapshot);
    assert_eq!(keys(&second.items), ["/p/c", "/p/d"]);
    assert_eq!(
        second.items[0].value()["spec"]["v"],
        1,
        "as of the snapshot"
    );
    assert!(second.items.iter().all(|o| o.revision <= snapshot));
    assert_eq!(second.remaining, 0);

    let whole = s
        .list(
            "/p/",
            &ListOptions {
                revision: Some(snapshot),
                ..ListOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(keys(&whole.items), ["/p/a", "/p/b", "/p/c", "/p/d"]);
    assert_eq!(whole.items[0].value()["spec"]["v"], 1);

    let now = s.list("/p/", &all()).await.unwrap();
    assert_eq!(keys(&now.items), ["/p/a", "/p/b", "/p/bb", "/p/c", "/p/e"]);
    assert_eq!(now.revision, s.current_revision().await);

    // Every revision in between lists what a client saw right after that write.
    let mut rev = snapshot;
    let mut watch = s.watch("/", snapshot).await.unwrap();
    let mut expected: std::collections::BTreeMap<String, Revision> = whole
        .items
        .iter()
        .map(|o| (o.key.clone(), o.revision))
        .collect();
    while rev < now.revision {
        let event = next(&mut watch).await.unwrap();
        rev = event.object.revision;
        if event.object.key.starts_with("/p/") {
            match event.event_type {
                EventType::Deleted => expected.remove(&event.object.key),
                _ => expected.insert(event.object.key.clone(), rev),
            };
        }
        let listed = s
            .list(
                "/p/",
                &ListOptions {
                    revision: Some(rev),
                    ..ListOptions::default()
                },
            )
            .await
            .unwrap();
        let got: std::collections::BTreeMap<String, Revision> = listed
            .items
            .iter()
            .map(|o| (o.key.clone(), o.revision))
            .collect();
        assert_eq!(got, expected, "at revision {rev}");
        if rev == now.revision {
            break;
        }
    }
}

pub async fn list_expired_and_future_revisions(s: impl Storage) {
    let a = s.create("/p/a", json!({})).await.unwrap();
    let b = s.create("/p/b", json!({})).await.unwrap();
    s.create("/p/c", json!({})).await.unwrap();
    s.compact(b.revision).await;
    let at = |revision| ListOptions {
        revision: Some(revision),
        ..ListOptions::default()
    };
    assert!(matches!(
        s.list("/p/", &at(a.revision)).await,
        Err(StorageError::Expired { requested, .. }) if requested == a.revision
    ));
    assert_eq!(
        keys(&s.list("/p/", &at(b.revision)).await.unwrap().items),
        ["/p/a", "/p/b"]
    );
    let current = s.current_revision().await;
    assert!(matches!(
        s.list("/p/", &at(current + 1)).await,
        Err(StorageError::FutureRevision { .. })
    ));
}

/// A revision reached answers at once; one a write is about to reach, once it lands; one no
/// write reaches, `FutureRevision` after the wait.
pub async fn waiting_for_a_revision(s: impl Storage) {
    let current = s.current_revision().await;
    s.wait_for_revision(current).await.unwrap();
    // The wait starts first (join polls in order), the write then lands.
    let (reached, written) = tokio::join!(
        s.wait_for_revision(current + 1),
        s.create("/p/a", pod("a", json!({})))
    );
    assert!(written.unwrap().revision > current);
    reached.unwrap();
    let now = s.current_revision().await;
    assert!(matches!(
        s.wait_for_revision(now + 1000).await,
        Err(StorageError::FutureRevision { requested, current }) if requested == now + 1000 && current == now
    ));
}

pub async fn watch_replays_then_follows_live(s: impl Storage) {
    let start = s.current_revision().await;
    let r1 = s.create("/p/a", pod("a", json!({"v": 1}))).await.unwrap();
    let r2 = s
        .update("/p/a", pod("a", json!({"v": 2})), None)
        .await
        .unwrap();
    let r3 = s.delete("/p/a", None).await.unwrap();

    let mut from_start = s.watch("/p/", start).await.unwrap();
    let added = next(&mut from_start).await.unwrap();
    assert_eq!(
        (added.event_type, added.object.revision),
        (EventType::Added, r1.revision)
    );
    assert!(added.prev.is_none());
    let modified = next(&mut from_start).await.unwrap();
    assert_eq!(
        (modified.event_type, modified.object.revision),
        (EventType::Modified, r2.revision)
    );
    assert_eq!(modified.prev.as_ref().unwrap().value()["spec"]["v"], 1);
    let deleted = next(&mut from_start).await.unwrap();
    assert_eq!(
        (deleted.event_type, deleted.object.revision),
        (EventType::Deleted, r3.revision)
    );
    assert_eq!(rv(&deleted.object.value()), r3.revision.to_string());
    assert_eq!(deleted.object.value()["spec"]["v"], 2);
    assert_eq!(deleted.prev.as_ref().unwrap().revision, r2.revision);

    // From the middle of the history: only later events.
    let mut from_two = s.watch("/p/", r2.revision).await.unwrap();
    assert_eq!(
        next(&mut from_two).await.unwrap().object.revision,
        r3.revision
    );

    // From the current revision: only live events.
    let mut live = s.watch("/p/", s.current_revision().await).await.unwrap();
    let b = s.create("/p/b", pod("b", json!({}))).await.unwrap();
    for stream in [&mut from_start, &mut from_two, &mut live] {
        let e = next(stream).await.unwrap();
        assert_eq!(
            (e.event_type, e.object.key.as_str(), e.object.revision),
            (EventType::Added, "/p/b", b.revision)
        );
    }

    // A revision in the future waits for it.
    let mut future = s.watch("/p/", b.revision + 1).await.unwrap();
    let c = s.create("/p/c", pod("c", json!({}))).await.unwrap();
    let d = s.create("/p/d", pod("d", json!({}))).await.unwrap();
    let first = next(&mut future).await.unwrap().object.revision;
    assert!(first > b.revision + 1 && (first == c.revision || first == d.revision));
}

pub async fn watch_filters_by_prefix(s: impl Storage) {
    let start = s.current_revision().await;
    let mut pods = s.watch("/pods/", start).await.unwrap();
    let mut ns1 = s.watch("/pods/ns1/", start).await.unwrap();
    let a = s.create("/pods/ns1/a", pod("a", json!({}))).await.unwrap();
    s.create("/deployments/ns1/a", pod("a", json!({})))
        .await
        .unwrap();
    s.create("/pods/ns2/a", pod("a", json!({}))).await.unwrap();
    let b = s.create("/pods/ns1/b", pod("b", json!({}))).await.unwrap();

    let got: Vec<String> = drain_until_marker(&s, &mut pods, "/pods/")
        .await
        .iter()
        .map(|e| e.object.key.clone())
        .collect();
    assert_eq!(got, ["/pods/ns1/a", "/pods/ns2/a", "/pods/ns1/b"]);
    let got: Vec<Revision> = drain_until_marker(&s, &mut ns1, "/pods/ns1/")
        .await
        .iter()
        .map(|e| e.object.revision)
        .collect();
    assert_eq!(got, [a.revision, b.revision]);
}

pub async fn watch_resumes_from_any_retained_revision(s: impl Storage) {
    let start = s.current_revision().await;
    let mut written = Vec::new();
    for i in 0..20 {
        let key = format!("/r/{}", i % 5);
        let o = match s.get(&key).await.unwrap() {
            None => s.create(&key, json!({"i": i})).await.unwrap(),
            Some(_) => s.update(&key, json!({"i": i}), None).await.unwrap(),
        };
        written.push(o.revision);
    }
    for (n, &resume) in std::iter::once(&start).chain(&written).enumerate() {
        let mut w = s.watch("/r/", resume).await.unwrap();
        let got: Vec<Revision> = drain_until_marker(&s, &mut w, "/r/")
            .await
            .iter()
            .map(|e| e.object.revision)
            .filter(|&r| r <= *written.last().unwrap())
            .collect();
        assert_eq!(got, written[n..], "resumed after {resume}");
    }
}

pub async fn compaction_expires_old_watches(s: impl Storage) {
    let mut revs = Vec::new();
    for i in 0..5 {
        revs.push(
            s.create(&format!("/k/{i}"), json!({}))
                .await
                .unwrap()
                .revision,
        );
    }
    s.compact(revs[2]).await;
    assert!(matches!(
        s.watch("/", revs[1]).await,
        Err(StorageError::Expired { requested, oldest }) if requested == revs[1] && oldest == revs[2]
    ));
    let mut w = s.watch("/", revs[2]).await.unwrap();
    assert_eq!(next(&mut w).await.unwrap().object.revision, revs[3]);
    assert_eq!(next(&mut w).await.unwrap().object.revision, revs[4]);
    // Compacting past the current revision stops at it; a watch from there still works.
    s.compact(revs[4] + 1000).await;
    assert!(matches!(
        s.watch("/", revs[3]).await,
        Err(StorageError::Expired { oldest, .. }) if oldest == revs[4]
    ));
    let mut live = s.watch("/", revs[4]).await.unwrap();
    let new = s.create("/k/new", json!({})).await.unwrap();
    assert_eq!(next(&mut live).await.unwrap().object.revision, new.revision);
    // Objects are unaffected by compaction.
    assert_eq!(s.list("/k/", &all()).await.unwrap().items.len(), 6);
}

pub async fn lagging_watcher_gets_expired_then_ends(s: impl Storage) {
    let start = s.current_revision().await;
    let mut slow = s.watch("/", start).await.unwrap();
    let r0 = s.create("/k/0", json!({})).await.unwrap().revision;
    let r1 = s.create("/k/1", json!({})).await.unwrap().revision;
    assert_eq!(next(&mut slow).await.unwrap().object.revision, r0);
    assert_eq!(next(&mut slow).await.unwrap().object.revision, r1);
    // Falls behind: more writes, and all but the last two dropped before it reads them.
    let mut revs = Vec::new();
    for i in 2..10 {
        revs.push(
            s.create(&format!("/k/{i}"), json!({}))
                .await
                .unwrap()
                .revision,
        );
    }
    let upto = revs[revs.len() - 3];
    s.compact(upto).await;
    let err = next(&mut slow).await.unwrap_err();
    assert!(
        matches!(err, StorageError::Expired { requested, oldest } if requested == r1 && oldest == upto),
        "{err:?}"
    );
    let end = tokio::time::timeout(Duration::from_secs(5), slow.next())
        .await
        .unwrap();
    assert!(end.is_none(), "the stream ends after Expired");
}

pub async fn many_concurrent_writers(s: impl Storage) {
    let s = Arc::new(s);
    const WATCHERS: usize = 20;
    const CLIENTS: usize = 8;
    const WRITES: usize = 40;
    let start = s.current_revision().await;
    let mut watchers = Vec::new();
    for _ in 0..WATCHERS {
        let mut stream = s.watch("/k/", start).await.unwrap();
        watchers.push(tokio::spawn(async move {
            let mut revisions = Vec::new();
            while revisions.len() < CLIENTS * WRITES {
                revisions.push(next(&mut stream).await.unwrap().object.revision);
            }
            revisions
        }));
    }
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                for i in 0..WRITES {
                    let o = s.create(&format!("/k/{c}/{i}"), json!({})).await.unwrap();
                    // The writer reads its own write at once.
                    assert_eq!(
                        s.get(&o.key).await.unwrap().map(|g| g.revision),
                        Some(o.revision)
                    );
                    revisions.push(o.revision);
                }
                revisions
            })
        })
        .collect();
    let mut all_revisions = Vec::new();
    for c in clients {
        let revisions = c.await.unwrap();
        assert!(
            revisions.windows(2).all(|w| w[0] < w[1]),
            "a client's writes are ordered"
        );
        all_revisions.extend(revisions);
    }
    all_revisions.sort_unstable();
    all_revisions.dedup();
    assert_eq!(
        all_revisions.len(),
        CLIENTS * WRITES,
        "revisions are distinct"
    );
    assert_eq!(s.current_revision().await, *all_revisions.last().unwrap());
    assert_eq!(
        s.list("/k/", &all()).await.unwrap().items.len(),
        CLIENTS * WRITES
    );
    for w in watchers {
        assert_eq!(w.await.unwrap(), all_revisions, "every event, in order");
    }
}

pub async fn racing_creates_of_one_key(s: impl Storage) {
    let s = Arc::new(s);
    let start = s.current_revision().await;
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let s = Arc::clone(&s);
            tokio::spawn(async move { s.create("/race", json!({"spec": i})).await })
        })
        .collect();
    let mut won = Vec::new();
    for t in tasks {
        match t.await.unwrap() {
            Ok(o) => won.push(o.revision),
            Err(StorageError::AlreadyExists(_)) => {}
            Err(e) => panic!("unexpected {e}"),
        }
    }
    assert_eq!(won.len(), 1);
    assert!(won[0] > start);
    assert_eq!(s.current_revision().await, won[0]);
}

pub async fn dropping_the_storage_ends_watches(s: impl Storage) {
    let start = s.current_revision().await;
    let a = s.create("/a", json!({})).await.unwrap();
    let mut w = s.watch("/", start).await.unwrap();
    drop(s);
    assert_eq!(
        next(&mut w).await.unwrap().object.revision,
        a.revision,
        "retained events still drain"
    );
    let end = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap();
    assert!(end.is_none());
}
