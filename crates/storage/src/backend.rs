//! The seam below the cache: what a durable store (redb, later etcd) provides to
//! [`Cached`](crate::Cached), and the write validation and stamping shared by the backends
//! that number their writes themselves.
//!
//! A backend performs writes durably and reports every committed change to the cache through
//! its [`Feed`], in revision order. Revisions must increase but may have gaps (etcd's mod
//! revisions do). A write is acknowledged to the caller only once the cache has applied it
//! (the cache waits for that), so a client reads its own writes.
//!
//! Backends that validate against the cache's current objects (redb, memory: the cache holds
//! the exact committed state because they feed it before acknowledging) use
//! [`prepare_batch`]; a backend with its own transactions (etcd) validates there instead.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::cache::Cache;
use crate::{EventType, Revision, StorageError, StoredObject, WatchEvent};

/// A durable store under the cache.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Performs `op` durably and returns the object as written (for a delete: the last state
    /// stamped with the deletion's revision). The change must reach the [`Feed`] in revision
    /// order, before or after this returns.
    async fn write(&self, op: WriteOp) -> Result<Arc<StoredObject>, StorageError>;

    /// Drops the durable history up to and including `revision` (the cache has already
    /// dropped it in memory). Best effort: losing it only leaves a longer history.
    fn compact(&self, revision: Revision);

    /// Finishes queued writes and releases files and connections; called once, when the
    /// storage is dropped, before its watches are ended.
    fn shutdown(&self) {}

    /// Whether other servers write the same store (API server replicas on one etcd), so the
    /// cache can be behind it. `false` (the default): every write goes through this cache
    /// and is applied before it is acknowledged, so the cache is always current.
    fn shared(&self) -> bool {
        false
    }

    /// For a shared store: the store's current revision, which a read of the current state
    /// must reflect (the cache waits until it has applied it). Not called when
    /// [`Backend::shared`] is `false`.
    async fn consistent_revision(&self) -> Result<Revision, StorageError> {
        Err(StorageError::Backend(
            "consistent_revision on a backend that is not shared".to_owned(),
        ))
    }
}

/// One requested change, before validation.
#[derive(Debug)]
pub enum WriteOp {
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
    pub fn key(&self) -> &str {
        match self {
            WriteOp::Create { key, .. }
            | WriteOp::Update { key, .. }
            | WriteOp::Delete { key, .. } => key,
        }
    }
}

/// What a cache starts from: a backend's state when it is opened.
#[derive(Debug, Default)]
pub struct Snapshot {
    /// The current objects, in any order.
    pub objects: Vec<Arc<StoredObject>>,
    /// The revision of the last committed write.
    pub revision: Revision,
    /// Events up to this revision are gone.
    pub compacted: Revision,
    /// The retained events after `compacted`, in revision order; their `prev` and `object`
    /// should share the allocations of `objects` where they are the same version.
    pub history: Vec<WatchEvent>,
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

/// Validates `ops` against the cache's objects plus the earlier ops of the same batch, and
/// stamps the successful ones with consecutive revisions after the cache's current one.
///
/// Nothing is changed; the caller must serialise batches (one writer at a time), make the
/// successful events durable and then hand them to [`Feed::apply`] in order.
pub fn prepare_batch(feed: &Feed, ops: Vec<WriteOp>) -> Vec<Result<WatchEvent, StorageError>> {
    let mut next = feed.revision() + 1;
    // Keys touched earlier in this batch and what they will hold after it.
    let mut overlay: HashMap<String, Option<Arc<StoredObject>>> = HashMap::new();
    let mut results = Vec::with_capacity(ops.len());
    for op in ops {
        let current = match overlay.get(op.key()) {
            Some(entry) => entry.clone(),
            None => feed.current(op.key()),
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

/// Checks that `value` can be stamped: a JSON object whose `metadata`, if present, is an
/// object.
pub fn check_object(value: &Value) -> Result<(), StorageError> {
    let obj = value.as_object().ok_or(StorageError::InvalidObject)?;
    match obj.get("metadata") {
        None | Some(Value::Object(_)) => Ok(()),
        Some(_) => Err(StorageError::InvalidObject),
    }
}

/// Sets `metadata.resourceVersion` to `revision` and serialises the result once.
pub fn stamp(
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
    Ok(Arc::new(StoredObject::new(key, revision, value)))
}

/// Builds a stored object from serialised JSON read back from a backend.
pub(crate) fn from_bytes(
    key: &str,
    revision: Revision,
    bytes: &[u8],
) -> Result<Arc<StoredObject>, StorageError> {
    Ok(Arc::new(StoredObject::from_bytes(
        key,
        revision,
        Bytes::copy_from_slice(bytes),
    )?))
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
            let last = Value::clone(&current.value());
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
    use crate::HistoryLimits;

    fn create(key: &str) -> WriteOp {
        WriteOp::Create {
            key: key.to_owned(),
            value: json!({"metadata": {"name": key}}),
        }
    }

    #[test]
    fn a_batch_is_validated_against_its_own_earlier_writes() {
        let cache = Arc::new(Cache::new(Snapshot::default(), HistoryLimits::default()));
        let feed = Feed(Arc::clone(&cache));
        let results = prepare_batch(
            &feed,
            vec![
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
            ],
        );
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
        assert_eq!(feed.revision(), 0);
        feed.apply(results.into_iter().filter_map(Result::ok).collect());
        assert_eq!(feed.revision(), 4);
        assert_eq!(feed.current("/a").unwrap().revision, 4);
        assert_eq!(cache.history_len(), 4);
    }

    #[test]
    fn stamping_sets_the_resource_version_in_value_and_bytes() {
        let stored = stamp(
            "/k",
            json!({"metadata": {"name": "k", "resourceVersion": "9"}, "a": 1}),
            12,
        )
        .unwrap();
        assert_eq!(stored.value()["metadata"]["resourceVersion"], "12");
        assert_eq!(
            std::str::from_utf8(&stored.bytes).unwrap(),
            r#"{"metadata":{"name":"k","resourceVersion":"12"},"a":1}"#
        );
    }
}
