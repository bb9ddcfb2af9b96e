//! The cache layer: the current objects, a bounded watch history and the watchers, over any
//! [`Backend`] whose revisions increase (gaps allowed). Every read, list and watch is served
//! from here; writes go to the backend, which feeds the committed events back.
//!
//! ```text
//!   write ──► Backend (durable) ──► Feed::apply ── write lock: objects, history, revision
//!     ▲                                  └──► wake (watch channel) ──┐
//!     └── acknowledged once the cache reached its revision          ▼
//!   get / list ── read lock               watch: cursor = last revision seen; scan the
//!   list at an older revision: current      history after it (binary search, not index
//!     objects with the events after it      arithmetic, so gaps are fine) under the read
//!     undone (each event's `prev`)          lock, then sleep on the watch channel
//! ```
//!
//! The history shares each version with the current objects (an event's `object` is the
//! same allocation as the object it wrote), so only superseded versions cost extra; it is
//! bounded by event count and by the bytes of the versions it holds. A watcher never depends
//! on a per-event channel: it reads the shared history through its own cursor, so it cannot
//! lag silently; if the history is trimmed past its cursor it gets `Expired` and its stream
//! ends.

use std::borrow::Borrow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::Value;
use tokio::sync::watch;

use crate::backend::{Backend, Snapshot, WriteOp};
use crate::{
    EventType, ListOptions, ListResult, Revision, Storage, StorageError, StoredObject, WatchEvent,
    WatchStream,
};

/// How many history entries a watcher scans per lock acquisition, so a watcher catching up on
/// a long history does not hold the read lock (and delay the writer) for long.
const SCAN_CHUNK: usize = 1024;

/// How much watch history the cache keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// The most events kept (trimmed once 10% over, so trimming is amortised).
    pub events: usize,
    /// The most bytes of JSON of superseded and deleted versions the history may keep alive
    /// (trimmed once over, to 90%), so a burst of updates cannot keep many old versions in
    /// memory; kube-apiserver's watch cache likewise keeps a short window.
    pub bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        Self {
            events: 100_000,
            bytes: 64 << 20,
        }
    }
}

/// A current object, ordered and looked up by its key (which it holds itself, so the map
/// keeps no second copy of every key).
#[derive(Clone)]
struct ByKey(Arc<StoredObject>);

impl Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        &self.0.key
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}

/// The mutable part of the cache, behind one lock.
struct Inner {
    objects: BTreeSet<ByKey>,
    /// Revision of the last applied event.
    revision: Revision,
    /// Every event with a revision `<= compacted` has been dropped from `history`.
    compacted: Revision,
    /// The retained events, in increasing revision order.
    history: VecDeque<WatchEvent>,
    /// Sum of [`event_bytes`] over `history`.
    history_bytes: usize,
}

/// What an event counts against [`HistoryLimits::bytes`]: the JSON of the versions only the
/// history keeps alive through it. A created or updated object is shared with the current
/// objects, so it costs nothing until it is superseded; the version it superseded (`prev`)
/// is held by this event alone, as is the re-stamped last state of a delete.
fn event_bytes(event: &WatchEvent) -> usize {
    let prev = event.prev.as_ref().map_or(0, |p| p.bytes.len());
    match event.event_type {
        EventType::Deleted => prev + event.object.bytes.len(),
        EventType::Added | EventType::Modified => prev,
    }
}

impl Inner {
    /// Drops the events up to and including `upto` (capped at the current revision).
    fn compact_to(&mut self, upto: Revision) {
        let upto = upto.min(self.revision);
        if upto <= self.compacted {
            return;
        }
        while let Some(first) = self.history.front() {
            if first.object.revision > upto {
                break;
            }
            self.history_bytes -= event_bytes(first);
            self.history.pop_front();
        }
        self.compacted = upto;
    }

    /// Drops the oldest events while over `limits`.
    fn trim(&mut self, limits: HistoryLimits) {
        let slack = (limits.events / 10).max(1);
        let mut upto = None;
        if self.history.len() > limits.events + slack {
            let drop = self.history.len() - limits.events;
            upto = Some(self.history[drop - 1].object.revision);
        }
        if self.history_bytes > limits.bytes {
            let target = limits.bytes / 10 * 9;
            let mut bytes = self.history_bytes;
            for event in &self.history {
                if bytes <= target {
                    break;
                }
                bytes -= event_bytes(event);
                upto = Some(upto.unwrap_or(0).max(event.object.revision));
            }
        }
        if let Some(upto) = upto {
            self.compact_to(upto);
        }
    }

    /// Index of the first retained event newer than `after`.
    fn position_after(&self, after: Revision) -> usize {
        self.history.partition_point(|e| e.object.revision <= after)
    }
}

/// The cache of one storage instance, shared by the backend's feed and the watch streams.
pub(crate) struct Cache {
    inner: RwLock<Inner>,
    limits: HistoryLimits,
    /// Carries the current revision; watchers and writers waiting for their write sleep on it.
    wake: watch::Sender<Revision>,
    /// Set when the storage is dropped: watch streams end once they have drained.
    closed: AtomicBool,
}

impl Cache {
    pub(crate) fn new(snapshot: Snapshot, limits: HistoryLimits) -> Self {
        let limits = HistoryLimits {
            events: limits.events.max(1),
            bytes: limits.bytes.max(1),
        };
        let (wake, _) = watch::channel(snapshot.revision);
        let history: VecDeque<WatchEvent> = snapshot.history.into();
        let history_bytes = history.iter().map(event_bytes).sum();
        let mut inner = Inner {
            objects: snapshot.objects.into_iter().map(ByKey).collect(),
            revision: snapshot.revision,
            compacted: snapshot.compacted.min(snapshot.revision),
            history,
            history_bytes,
        };
        // The limits may have been lowered since the snapshot was written: trim to them now.
        if inner.history.len() > limits.events {
            let drop = inner.history.len() - limits.events;
            let upto = inner.history[drop - 1].object.revision;
            inner.compact_to(upto);
        }
        inner.trim(limits);
        Self {
            inner: RwLock::new(inner),
            limits,
            wake,
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<StoredObject>> {
        self.inner.read().objects.get(key).map(|o| Arc::clone(&o.0))
    }

    pub(crate) fn revision(&self) -> Revision {
        self.inner.read().revision
    }

    pub(crate) fn compacted(&self) -> Revision {
        self.inner.read().compacted
    }

    #[cfg(test)]
    pub(crate) fn history_len(&self) -> usize {
        self.inner.read().history.len()
    }

    pub(crate) fn list(
        &self,
        prefix: &str,
        opts: &ListOptions,
    ) -> Result<ListResult, StorageError> {
        let inner = self.inner.read();
        let revision = opts.revision.unwrap_or(inner.revision);
        if revision > inner.revision {
            return Err(StorageError::FutureRevision {
                requested: revision,
                current: inner.revision,
            });
        }
        if revision < inner.compacted {
            return Err(StorageError::Expired {
                requested: revision,
                oldest: inner.compacted,
            });
        }
        let start = match opts.start_after.as_deref() {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let current = inner
            .objects
            .range::<str, _>((start, Bound::Unbounded))
            .take_while(|o| o.0.key.starts_with(prefix))
            .map(|o| (o.0.key.as_str(), Some(&o.0)));

        // The state at `revision` of every key written after it: the `prev` of the first
        // event after it (none for a create). Keys not in here are as they are now.
        let mut undone: BTreeMap<&str, Option<&Arc<StoredObject>>> = BTreeMap::new();
        if revision < inner.revision {
            for event in inner.history.range(inner.position_after(revision)..) {
                let key = event.object.key.as_str();
                let after_start = match start {
                    Bound::Excluded(s) => key > s,
                    _ => true,
                };
                if key.starts_with(prefix) && after_start {
                    undone.entry(key).or_insert(event.prev.as_ref());
                }
            }
        }

        let limit = opts.limit.filter(|&l| l > 0).unwrap_or(usize::MAX);
        let mut items = Vec::new();
        let mut remaining = 0;
        for (_, object) in merge(current, undone) {
            if let Some(object) = object {
                if items.len() < limit {
                    items.push(Arc::clone(object));
                } else {
                    remaining += 1;
                }
            }
        }
        Ok(ListResult {
            items,
            revision,
            remaining,
        })
    }

    /// Drops the history up to and including `revision`.
    pub(crate) fn compact(&self, revision: Revision) {
        self.inner.write().compact_to(revision);
        // Watchers whose cursor was overtaken must notice and report `Expired`.
        self.wake.send_modify(|_| {});
    }

    /// Applies committed events (increasing revisions, newer than the current one), trims the
    /// history to its limits and wakes the watchers.
    pub(crate) fn apply(&self, events: Vec<WatchEvent>) {
        let revision = {
            let mut inner = self.inner.write();
            for event in events {
                if event.object.revision <= inner.revision {
                    // A backend replaying what the cache already has; applying it again would
                    // break the history's order.
                    tracing::warn!(
                        revision = event.object.revision,
                        current = inner.revision,
                        "ignoring an event that is not newer than the cache"
                    );
                    continue;
                }
                inner.revision = event.object.revision;
                match event.event_type {
                    EventType::Deleted => {
                        inner.objects.remove(event.object.key.as_str());
                    }
                    EventType::Added | EventType::Modified => {
                        inner.objects.replace(ByKey(Arc::clone(&event.object)));
                    }
                }
                inner.history_bytes += event_bytes(&event);
                inner.history.push_back(event);
            }
            inner.trim(self.limits);
            inner.revision
        };
        self.wake.send_replace(revision);
    }

    /// Moves the revision forward without an event: the backend's store reached `revision`
    /// through writes outside this cache's keys (etcd's revision counts every key), and
    /// nothing under them changed in between.
    pub(crate) fn advance(&self, revision: Revision) {
        {
            let mut inner = self.inner.write();
            if revision <= inner.revision {
                return;
            }
            inner.revision = revision;
        }
        self.wake.send_replace(revision);
    }

    /// Starts over from `snapshot`: the backend lost the events between the cache's revision
    /// and the snapshot's (they were compacted away). The history is dropped, so every watcher
    /// gets `Expired` (and its client lists again), as after a compaction.
    pub(crate) fn reset(&self, snapshot: Snapshot) {
        let revision = {
            let mut inner = self.inner.write();
            inner.objects = snapshot.objects.into_iter().map(ByKey).collect();
            inner.revision = inner.revision.max(snapshot.revision);
            inner.history.clear();
            inner.history_bytes = 0;
            inner.compacted = inner.revision;
            inner.revision
        };
        self.wake.send_replace(revision);
    }

    /// Waits until the cache has applied `revision` (at once for backends that feed before
    /// acknowledging).
    pub(crate) async fn wait_for(&self, revision: Revision) -> Result<(), StorageError> {
        let mut wake = self.wake.subscribe();
        loop {
            if *wake.borrow_and_update() >= revision {
                return Ok(());
            }
            if self.closed.load(Ordering::Acquire) || wake.changed().await.is_err() {
                return Err(StorageError::Closed);
            }
        }
    }

    /// Marks the cache closed: watch streams end once they have delivered what is retained.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.send_modify(|_| {});
    }

    /// A stream of the events under `prefix` after revision `after`, then live ones.
    pub(crate) fn watch(
        self: &Arc<Self>,
        prefix: &str,
        after: Revision,
    ) -> Result<WatchStream, StorageError> {
        // Subscribe before checking, so no wake-up between the check and the first scan is lost.
        let wake = self.wake.subscribe();
        let compacted = self.compacted();
        if after < compacted {
            return Err(StorageError::Expired {
                requested: after,
                oldest: compacted,
            });
        }
        let cursor = Cursor {
            cache: Arc::clone(self),
            prefix: prefix.to_owned(),
            after,
            wake,
            buffer: VecDeque::new(),
            done: false,
        };
        Ok(Box::pin(futures::stream::unfold(cursor, Cursor::next)))
    }

    /// Copies the events under `prefix` after `*after` into `out`, scanning at most
    /// [`SCAN_CHUNK`] history entries and advancing `*after` past what it scanned.
    fn scan(
        &self,
        prefix: &str,
        after: &mut Revision,
        out: &mut VecDeque<WatchEvent>,
    ) -> Result<Scan, StorageError> {
        let inner = self.inner.read();
        if *after < inner.compacted {
            return Err(StorageError::Expired {
                requested: *after,
                oldest: inner.compacted,
            });
        }
        if *after >= inner.revision {
            return Ok(Scan::CaughtUp);
        }
        let start = inner.position_after(*after);
        let mut scanned = 0;
        for event in inner.history.range(start..).take(SCAN_CHUNK) {
            scanned += 1;
            *after = event.object.revision;
            if event.object.key.starts_with(prefix) {
                out.push_back(event.clone());
            }
        }
        if scanned == 0 {
            // Nothing retained between the cursor and the current revision.
            *after = inner.revision;
        }
        Ok(Scan::Scanned)
    }
}

/// Merges two key-ordered sequences; on equal keys the second one's entry wins.
fn merge<'a>(
    current: impl Iterator<Item = (&'a str, Option<&'a Arc<StoredObject>>)>,
    undone: BTreeMap<&'a str, Option<&'a Arc<StoredObject>>>,
) -> impl Iterator<Item = (&'a str, Option<&'a Arc<StoredObject>>)> {
    let mut current = current.peekable();
    let mut undone = undone.into_iter().peekable();
    std::iter::from_fn(move || match (current.peek(), undone.peek()) {
        (None, None) => None,
        (Some(_), None) => current.next(),
        (None, Some(_)) => undone.next(),
        (Some((a, _)), Some((b, _))) => {
            if a < b {
                current.next()
            } else if b < a {
                undone.next()
            } else {
                current.next();
                undone.next()
            }
        }
    })
}

enum Scan {
    Scanned,
    CaughtUp,
}

/// One watcher's position in the shared history.
struct Cursor {
    cache: Arc<Cache>,
    prefix: String,
    /// Revision of the last history entry scanned.
    after: Revision,
    wake: watch::Receiver<Revision>,
    /// Matching events copied out of the history and not yet yielded.
    buffer: VecDeque<WatchEvent>,
    done: bool,
}

impl Cursor {
    async fn next(mut self) -> Option<(Result<WatchEvent, StorageError>, Self)> {
        loop {
            if self.done {
                return None;
            }
            if let Some(event) = self.buffer.pop_front() {
                return Some((Ok(event), self));
            }
            // Mark the current value seen before scanning: a write applied after the scan
            // then makes `changed()` return at once.
            self.wake.borrow_and_update();
            let cache = Arc::clone(&self.cache);
            match cache.scan(&self.prefix, &mut self.after, &mut self.buffer) {
                Err(expired) => {
                    self.done = true;
                    return Some((Err(expired), self));
                }
                Ok(Scan::Scanned) => {}
                Ok(Scan::CaughtUp) => {
                    if self.cache.closed.load(Ordering::Acquire)
                        || self.wake.changed().await.is_err()
                    {
                        return None;
                    }
                }
            }
        }
    }
}

/// A [`Storage`] served from the cache over backend `B`. Dropping it shuts the backend down
/// (queued writes finish) and ends its watch streams.
pub struct Cached<B: Backend> {
    pub(crate) cache: Arc<Cache>,
    pub(crate) backend: B,
}

impl<B: Backend> Cached<B> {
    /// Builds the cache from `initial` (the backend's state when opened) and starts the
    /// backend with a feed into it.
    pub fn start(
        initial: Snapshot,
        limits: HistoryLimits,
        start: impl FnOnce(Feed) -> Result<B, StorageError>,
    ) -> Result<Self, StorageError> {
        let cache = Arc::new(Cache::new(initial, limits));
        let backend = start(Feed(Arc::clone(&cache)))?;
        Ok(Self { cache, backend })
    }

    /// The backend under the cache.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    #[cfg(test)]
    pub(crate) fn cache_for_tests(&self) -> Arc<Cache> {
        Arc::clone(&self.cache)
    }

    async fn write(&self, op: WriteOp) -> Result<Arc<StoredObject>, StorageError> {
        let written = self.backend.write(op).await?;
        // The write is durable; waiting lets the writer read it back. A shared store's cache
        // follows it through a watch that may be reconnecting: past the bound the write is
        // still acknowledged (its reads wait on their own, see `sync`).
        if tokio::time::timeout(ACK_WAIT, self.cache.wait_for(written.revision))
            .await
            .is_err()
        {
            tracing::warn!(
                revision = written.revision,
                cache = self.cache.revision(),
                "acknowledging a write the cache has not applied yet"
            );
        }
        Ok(written)
    }

    /// For a shared store: waits until the cache holds every write the store had committed
    /// when this was called (kube-apiserver's consistent reads from its watch cache).
    async fn sync(&self) -> Result<(), StorageError> {
        if !self.backend.shared() {
            return Ok(());
        }
        let revision = self.backend.consistent_revision().await?;
        self.catch_up(revision).await
    }

    /// Waits (boundedly) until the cache has applied `revision`.
    async fn catch_up(&self, revision: Revision) -> Result<(), StorageError> {
        if self.reached(revision).await? {
            return Ok(());
        }
        Err(StorageError::Unavailable(format!(
            "the watch cache did not reach revision {revision} in {CATCH_UP_WAIT:?} (at {})",
            self.cache.revision()
        )))
    }

    /// Whether the cache has applied `revision` within [`CATCH_UP_WAIT`].
    async fn reached(&self, revision: Revision) -> Result<bool, StorageError> {
        if self.cache.revision() >= revision {
            return Ok(true);
        }
        match tokio::time::timeout(CATCH_UP_WAIT, self.cache.wait_for(revision)).await {
            Ok(result) => result.map(|()| true),
            Err(_) => Ok(false),
        }
    }
}

/// How long a write waits for the cache to apply it before it is acknowledged anyway.
const ACK_WAIT: Duration = Duration::from_secs(10);
/// How long a read waits for a shared store's cache to catch up (kube-apiserver waits 3 s
/// for a resource version its watch cache has not reached).
const CATCH_UP_WAIT: Duration = Duration::from_secs(3);

impl<B: Backend> Drop for Cached<B> {
    fn drop(&mut self) {
        self.backend.shutdown();
        self.cache.close();
    }
}

#[async_trait::async_trait]
impl<B: Backend> Storage for Cached<B> {
    async fn get(&self, key: &str) -> Result<Option<Arc<StoredObject>>, StorageError> {
        self.sync().await?;
        Ok(self.cache.get(key))
    }

    async fn get_cached(&self, key: &str) -> Result<Option<Arc<StoredObject>>, StorageError> {
        Ok(self.cache.get(key))
    }

    async fn list_cached(
        &self,
        prefix: &str,
        opts: &ListOptions,
    ) -> Result<ListResult, StorageError> {
        self.cache.list(prefix, opts)
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        match opts.revision {
            None => self.sync().await?,
            // A revision another replica reported may not have reached this cache yet.
            Some(revision) if self.backend.shared() => {
                // Past the wait, the list below says FutureRevision.
                let _ = self.catch_up(revision).await;
            }
            Some(_) => {}
        }
        self.cache.list(prefix, opts)
    }

    async fn create(&self, key: &str, value: Value) -> Result<Arc<StoredObject>, StorageError> {
        self.write(WriteOp::Create {
            key: key.to_owned(),
            value,
        })
        .await
    }

    async fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError> {
        self.write(WriteOp::Update {
            key: key.to_owned(),
            value,
            expected,
        })
        .await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError> {
        self.write(WriteOp::Delete {
            key: key.to_owned(),
            expected,
        })
        .await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.cache.watch(prefix, after)
    }

    async fn current_revision(&self) -> Revision {
        self.cache.revision()
    }

    async fn wait_for_revision(&self, revision: Revision) -> Result<(), StorageError> {
        if self.reached(revision).await? {
            return Ok(());
        }
        Err(StorageError::FutureRevision {
            requested: revision,
            current: self.cache.revision(),
        })
    }

    async fn compact(&self, revision: Revision) {
        // Memory first (watchers see it at once), then the backend's durable history.
        self.cache.compact(revision);
        self.backend.compact(self.cache.compacted());
    }
}

/// A backend's handle on the cache above it: where committed changes go, and (for backends
/// that validate against it) the current objects.
#[derive(Clone)]
pub struct Feed(pub(crate) Arc<Cache>);

impl Feed {
    /// Applies committed events, in revision order (each newer than the cache's revision),
    /// and wakes the watchers.
    pub fn apply(&self, events: Vec<WatchEvent>) {
        self.0.apply(events);
    }

    /// The current object at `key` as the cache holds it.
    pub fn current(&self, key: &str) -> Option<Arc<StoredObject>> {
        self.0.get(key)
    }

    /// The revision of the last applied event.
    pub fn revision(&self) -> Revision {
        self.0.revision()
    }

    /// Moves the cache's revision to `revision` with no change to its objects: the store
    /// counted writes outside the cache's keys.
    pub fn advance(&self, revision: Revision) {
        self.0.advance(revision);
    }

    /// Replaces the cache's state with `snapshot` after the backend lost events (they were
    /// compacted before it could read them); every watch is ended with `Expired`.
    pub fn reset(&self, snapshot: Snapshot) {
        self.0.reset(snapshot);
    }

    /// The cache's compaction point (it trims its history by count and size on its own).
    pub fn compacted(&self) -> Revision {
        self.0.compacted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::stamp;

    fn event(
        event_type: EventType,
        key: &str,
        revision: Revision,
        prev: Option<&WatchEvent>,
    ) -> WatchEvent {
        WatchEvent {
            event_type,
            object: stamp(key, serde_json::json!({"v": revision}), revision).unwrap(),
            prev: prev.map(|p| Arc::clone(&p.object)),
        }
    }

    #[test]
    fn trimming_is_amortised_and_bounded_by_bytes() {
        let cache = Cache::new(
            Snapshot::default(),
            HistoryLimits {
                events: 100,
                bytes: usize::MAX,
            },
        );
        let events: Vec<_> = (1..=110)
            .map(|r| event(EventType::Added, &format!("/k/{r}"), r * 3, None))
            .collect();
        cache.apply(events);
        assert_eq!(cache.compacted(), 0, "within the 10% slack");
        cache.apply(vec![event(EventType::Added, "/k/x", 999, None)]);
        assert_eq!(cache.history_len(), 100);
        // Revisions have gaps: the compaction point is the last dropped event's revision.
        assert_eq!(cache.compacted(), 11 * 3);

        // Only superseded versions count against the byte bound.
        let created: Vec<_> = (1..=20)
            .map(|r| event(EventType::Added, &format!("/k/{r}"), r, None))
            .collect();
        let size = created[0].object.bytes.len();
        let small = Cache::new(
            Snapshot::default(),
            HistoryLimits {
                events: 1000,
                bytes: size * 10,
            },
        );
        small.apply(created.clone());
        assert_eq!(
            small.history_len(),
            20,
            "creates share the objects' versions"
        );
        let updates: Vec<_> = (1..=11)
            .map(|r| {
                let prev = &created[usize::try_from(r).unwrap() - 1];
                event(EventType::Modified, &format!("/k/{r}"), 100 + r, Some(prev))
            })
            .collect();
        small.apply(updates);
        assert!(small.history_len() <= 9, "{}", small.history_len());
        assert!(small.compacted() > 100, "{}", small.compacted());
        assert_eq!(
            small.get("/k/1").map(|o| o.revision),
            Some(101),
            "objects stay"
        );
    }
}
