//! The seam below the cache: what a durable store (redb, later etcd) provides to
//! [`Cached`](crate::Cached), and the write validation and stamping shared by the backends
//! that number their writes themselves.
//!
//! A backend performs writes durably and reports every committed change to the cache through
//! its [`Feed`](crate::Feed), in revision order. Revisions must increase but may have gaps (etcd's mod
//! revisions do). A write is acknowledged to the caller only once the cache has applied it
//! (the cache waits for that), so a client reads its own writes.
//!
//! Backends that validate against the cache's current objects (redb, memory: the cache holds
//! the exact committed state because they feed it before acknowledging) use
//! [`prepare_batch`](crate::prepare_batch); a backend with its own transactions (etcd) validates there instead.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::{Revision, StorageError, StoredObject, WatchEvent};

/// A durable store under the cache.
#[async_trait::async_trait]
pub trait Backend: Send + Sync + 'static {
    /// Performs `op` durably and returns the object as written (for a delete: the last state
    /// stamped with the deletion's revision). The change must reach the [`Feed`](crate::Feed) in revision
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

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
