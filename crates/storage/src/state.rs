//! The in-memory machinery both backends share: the current objects, the global revision, the
//! bounded event history, write validation/stamping and the watch streams.
//!
//! ```text
//!   writer (one at a time)                      readers / watchers
//!   ──────────────────────                      ──────────────────
//!   prepare_batch(ops) ─ validate + stamp        get / list ── read lock on Inner
//!        │                                       watch ─┐
//!   [embedded: durable commit]                          │ cursor = last revision seen
//!        │                                              ▼
//!   apply(events) ── write lock: objects,       scan history (compacted, revision]
//!                    history, revision          under the read lock, then sleep on
//!                    └──► wake (watch channel) ─► the watch channel when caught up
//! ```
//!
//! Every write consumes exactly one revision and produces exactly one event, so the history
//! holds the events of the contiguous revisions `compacted + 1 ..= revision` and a watcher's
//! position is a plain index computation, never a search. A watcher never depends on a
//! per-event channel: it reads the shared history through its own cursor, so it cannot lag
//! silently; if the history is trimmed past its cursor it gets `Expired` and its stream ends.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use parking_lot::RwLock;
use serde_json::{Map, Value};
use tokio::sync::watch;

use crate::{EventType, ListResult, Revision, StorageError, StoredObject, WatchEvent, WatchStream};

/// Default number of events kept for watch resumption.
pub(crate) const DEFAULT_HISTORY: usize = 100_000;

/// How many history entries a watcher scans per lock acquisition, so a watcher catching up on
/// a long history does not hold the read lock (and delay the writer) for long.
const SCAN_CHUNK: usize = 1024;

/// One requested change, before validation.
#[derive(Debug)]
pub(crate) enum WriteOp {
    Create {
        key: String,
        value: Value,
    },
    Update {
        key: String,
        value: Value,
        expected: Option<Revision>,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
}

impl WriteOp {
    fn key(&self) -> &str {
        match self {
            WriteOp::Create { key, .. }
            | WriteOp::Update { key, .. }
            | WriteOp::Delete { key, .. } => key,
        }
    }
}

/// The mutable part of the state, behind one lock.
struct Inner {
    objects: BTreeMap<String, Arc<StoredObject>>,
    /// Revision of the last applied write.
    revision: Revision,
    /// Every event with a revision `<= compacted` has been dropped from `history`.
    compacted: Revision,
    /// The events of revisions `compacted + 1 ..= revision`, in order.
    history: VecDeque<WatchEvent>,
}

impl Inner {
    /// Drops the events up to and including `upto` (capped at the current revision).
    fn compact_to(&mut self, upto: Revision) {
        let upto = upto.min(self.revision);
        if upto <= self.compacted {
            return;
        }
        let drop = usize::try_from(upto - self.compacted).unwrap_or(usize::MAX);
        let drop = drop.min(self.history.len());
        self.history.drain(..drop);
        self.compacted = upto;
    }
}

/// The state of one storage instance, shared by the backend and its watch streams.
pub(crate) struct State {
    inner: RwLock<Inner>,
    /// How many events the history should keep (trimmed with 10% slack, see
    /// [`State::trim_target`]).
    history_limit: usize,
    /// Carries the current revision; watchers sleep on it when caught up.
    wake: watch::Sender<Revision>,
    /// Set when the owning backend is dropped: watch streams end once they have drained.
    closed: AtomicBool,
}

/// What a state is loaded from (the embedded backend builds it from disk).
pub(crate) struct Snapshot {
    pub objects: BTreeMap<String, Arc<StoredObject>>,
    pub revision: Revision,
    pub compacted: Revision,
    /// The events of revisions `compacted + 1 ..= revision`, in order.
    pub history: VecDeque<WatchEvent>,
}

impl State {
    pub(crate) fn new(history_limit: usize) -> Self {
        Self::from_snapshot(
            Snapshot {
                objects: BTreeMap::new(),
                revision: 0,
                compacted: 0,
                history: VecDeque::new(),
            },
            history_limit,
        )
    }

    pub(crate) fn from_snapshot(snapshot: Snapshot, history_limit: usize) -> Self {
        let (wake, _) = watch::channel(snapshot.revision);
        let mut inner = Inner {
            objects: snapshot.objects,
            revision: snapshot.revision,
            compacted: snapshot.compacted,
            history: snapshot.history,
        };
        // The limit may have been lowered since the snapshot was written.
        let limit = history_limit.max(1);
        if inner.history.len() > limit {
            let upto = inner.revision - limit as Revision;
            inner.compact_to(upto);
        }
        Self {
            inner: RwLock::new(inner),
            history_limit: limit,
            wake,
            closed: AtomicBool::new(false),
        }
    }

    pub(crate) fn get(&self, key: &str) -> Option<Arc<StoredObject>> {
        self.inner.read().objects.get(key).cloned()
    }

    pub(crate) fn list(&self, prefix: &str) -> ListResult {
        let inner = self.inner.read();
        let items = inner
            .objects
            .range::<str, _>((
                std::ops::Bound::Included(prefix),
                std::ops::Bound::Unbounded,
            ))
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| Arc::clone(v))
            .collect();
        ListResult {
            items,
            revision: inner.revision,
        }
    }

    pub(crate) fn revision(&self) -> Revision {
        self.inner.read().revision
    }

    pub(crate) fn compacted(&self) -> Revision {
        self.inner.read().compacted
    }

    /// Drops the in-memory history up to and including `revision`.
    pub(crate) fn compact(&self, revision: Revision) {
        self.inner.write().compact_to(revision);
        // Watchers whose cursor was overtaken must notice and report `Expired`.
        self.wake.send_modify(|_| {});
    }

    /// The compaction point the history should move to once the state reaches `new_revision`,
    /// if trimming is due. Trimming happens only when the history exceeds its bound by 10%,
    /// so it is amortised over many writes (the embedded backend deletes the same range on
    /// disk in the write transaction).
    pub(crate) fn trim_target(&self, new_revision: Revision) -> Option<Revision> {
        let compacted = self.compacted();
        let limit = self.history_limit as Revision;
        let slack = (limit / 10).max(1);
        (new_revision.saturating_sub(compacted) > limit + slack).then(|| new_revision - limit)
    }

    /// Validates `ops` against the current state plus the earlier ops of the same batch, and
    /// stamps the successful ones with consecutive revisions after the current one.
    ///
    /// The state is not changed; the caller must serialise batches (one writer at a time) and
    /// hand the successful events to [`State::apply`] in order.
    pub(crate) fn prepare_batch(&self, ops: Vec<WriteOp>) -> Vec<Result<WatchEvent, StorageError>> {
        let mut next = self.revision() + 1;
        // Keys touched earlier in this batch and what they will hold after it.
        let mut overlay: HashMap<String, Option<Arc<StoredObject>>> = HashMap::new();
        let mut results = Vec::with_capacity(ops.len());
        for op in ops {
            let current = match overlay.get(op.key()) {
                Some(entry) => entry.clone(),
                None => self.get(op.key()),
            };
            let result = prepare_one(op, current, next);
            if let Ok(event) = &result {
                next += 1;
                let after = match event.event_type {
                    EventType::Deleted => None,
                    EventType::Added | EventType::Modified => Some(Arc::clone(&event.object)),
                };
                overlay.insert(event.object.key.clone(), after);
            }
            results.push(result);
        }
        results
    }

    /// Applies events prepared by [`State::prepare_batch`] (revisions consecutive after the
    /// current one), trims the history up to `compact_to` if given, and wakes the watchers.
    pub(crate) fn apply(&self, events: Vec<WatchEvent>, compact_to: Option<Revision>) {
        let revision = {
            let mut inner = self.inner.write();
            for event in events {
                debug_assert_eq!(event.object.revision, inner.revision + 1);
                inner.revision = event.object.revision;
                match event.event_type {
                    EventType::Deleted => {
                        inner.objects.remove(&event.object.key);
                    }
                    EventType::Added | EventType::Modified => {
                        inner
                            .objects
                            .insert(event.object.key.clone(), Arc::clone(&event.object));
                    }
                }
                inner.history.push_back(event);
            }
            if let Some(upto) = compact_to {
                inner.compact_to(upto);
            }
            inner.revision
        };
        self.wake.send_replace(revision);
    }

    /// Marks the state closed: watch streams end once they have delivered what is retained.
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
            state: Arc::clone(self),
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
        let start = usize::try_from(*after - inner.compacted).unwrap_or(usize::MAX);
        for event in inner.history.range(start..).take(SCAN_CHUNK) {
            *after = event.object.revision;
            if event.object.key.starts_with(prefix) {
                out.push_back(event.clone());
            }
        }
        Ok(Scan::Scanned)
    }
}

enum Scan {
    Scanned,
    CaughtUp,
}

/// One watcher's position in the shared history.
struct Cursor {
    state: Arc<State>,
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
            let state = Arc::clone(&self.state);
            match state.scan(&self.prefix, &mut self.after, &mut self.buffer) {
                Err(expired) => {
                    self.done = true;
                    return Some((Err(expired), self));
                }
                Ok(Scan::Scanned) => {}
                Ok(Scan::CaughtUp) => {
                    if self.state.closed.load(Ordering::Acquire)
                        || self.wake.changed().await.is_err()
                    {
                        return None;
                    }
                }
            }
        }
    }
}

/// Checks that `value` can be stamped: a JSON object whose `metadata`, if present, is an
/// object.
pub(crate) fn check_object(value: &Value) -> Result<(), StorageError> {
    let obj = value.as_object().ok_or(StorageError::InvalidObject)?;
    match obj.get("metadata") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(StorageError::InvalidObject),
    }
}

/// Sets `metadata.resourceVersion` to `revision` and serialises the result once.
pub(crate) fn stamp(
    key: &str,
    mut value: Value,
    revision: Revision,
) -> Result<Arc<StoredObject>, StorageError> {
    let obj = value.as_object_mut().ok_or(StorageError::InvalidObject)?;
    let metadata = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(StorageError::InvalidObject)?;
    metadata.insert(
        "resourceVersion".to_owned(),
        Value::String(revision.to_string()),
    );
    let bytes = serde_json::to_vec(&value).map_err(|_| StorageError::InvalidObject)?;
    Ok(Arc::new(StoredObject {
        key: key.to_owned(),
        revision,
        value: Arc::new(value),
        bytes: Bytes::from(bytes),
    }))
}

/// Builds a stored object from serialised JSON read back from disk.
pub(crate) fn from_bytes(
    key: &str,
    revision: Revision,
    bytes: &[u8],
) -> Result<Arc<StoredObject>, StorageError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| StorageError::Database(format!("corrupt object at {key}: {e}")))?;
    Ok(Arc::new(StoredObject {
        key: key.to_owned(),
        revision,
        value: Arc::new(value),
        bytes: Bytes::copy_from_slice(bytes),
    }))
}

fn check_expected(
    key: &str,
    current: &StoredObject,
    expected: Option<Revision>,
) -> Result<(), StorageError> {
    match expected {
        Some(expected) if expected != current.revision => Err(StorageError::Conflict {
            key: key.to_owned(),
            expected,
            actual: current.revision,
        }),
        _ => Ok(()),
    }
}

fn prepare_one(
    op: WriteOp,
    current: Option<Arc<StoredObject>>,
    revision: Revision,
) -> Result<WatchEvent, StorageError> {
    match op {
        WriteOp::Create { key, value } => {
            check_object(&value)?;
            if current.is_some() {
                return Err(StorageError::AlreadyExists(key));
            }
            Ok(WatchEvent {
                event_type: EventType::Added,
                object: stamp(&key, value, revision)?,
                prev: None,
            })
        }
        WriteOp::Update {
            key,
            value,
            expected,
        } => {
            check_object(&value)?;
            let current = current.ok_or_else(|| StorageError::NotFound(key.clone()))?;
            check_expected(&key, &current, expected)?;
            Ok(WatchEvent {
                event_type: EventType::Modified,
                object: stamp(&key, value, revision)?,
                prev: Some(current),
            })
        }
        WriteOp::Delete { key, expected } => {
            let current = current.ok_or_else(|| StorageError::NotFound(key.clone()))?;
            check_expected(&key, &current, expected)?;
            let last = Value::clone(&current.value);
            Ok(WatchEvent {
                event_type: EventType::Deleted,
                object: stamp(&key, last, revision)?,
                prev: Some(current),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn create(key: &str) -> WriteOp {
        WriteOp::Create {
            key: key.to_owned(),
            value: json!({"metadata": {"name": key}}),
        }
    }

    #[test]
    fn a_batch_is_validated_against_its_own_earlier_writes() {
        let state = State::new(100);
        let results = state.prepare_batch(vec![
            create("/a"),
            create("/a"),
            WriteOp::Update {
                key: "/a".into(),
                value: json!({"v": 1}),
                expected: Some(1),
            },
            WriteOp::Update {
                key: "/b".into(),
                value: json!({}),
                expected: None,
            },
            WriteOp::Delete {
                key: "/a".into(),
                expected: Some(2),
            },
            create("/a"),
        ]);
        let summary: Vec<Result<(EventType, Revision), String>> = results
            .iter()
            .map(|r| match r {
                Ok(e) => Ok((e.event_type, e.object.revision)),
                Err(e) => Err(e.to_string()),
            })
            .collect();
        assert_eq!(
            summary,
            [
                Ok((EventType::Added, 1)),
                Err("key /a already exists".to_owned()),
                Ok((EventType::Modified, 2)),
                Err("key /b not found".to_owned()),
                Ok((EventType::Deleted, 3)),
                Ok((EventType::Added, 4)),
            ]
        );
        // The update's `prev` is the create from the same batch.
        let update = results[2].as_ref().unwrap();
        assert_eq!(update.prev.as_ref().unwrap().revision, 1);
        // Preparing changed nothing; applying does.
        assert_eq!(state.revision(), 0);
        state.apply(results.into_iter().filter_map(Result::ok).collect(), None);
        assert_eq!(state.revision(), 4);
        assert_eq!(state.get("/a").unwrap().revision, 4);
        assert_eq!(state.inner.read().history.len(), 4);
    }

    #[test]
    fn stamping_sets_the_resource_version_in_value_and_bytes() {
        let stored = stamp(
            "/k",
            json!({"metadata": {"name": "k", "resourceVersion": "9"}, "a": 1}),
            12,
        )
        .unwrap();
        assert_eq!(stored.value["metadata"]["resourceVersion"], "12");
        assert_eq!(
            std::str::from_utf8(&stored.bytes).unwrap(),
            r#"{"metadata":{"name":"k","resourceVersion":"12"},"a":1}"#
        );
    }

    #[test]
    fn trimming_is_amortised() {
        let state = State::new(100);
        assert_eq!(state.trim_target(110), None);
        assert_eq!(state.trim_target(111), Some(11));
    }
}
