//! A batch of writes checked against the cache before a backend makes it durable: for the
//! backends that number their writes themselves (redb, memory), whose cache holds the exact
//! committed state because they feed it before acknowledging.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::backend::{WriteOp, check_object, stamp};
use crate::cache::Feed;
use crate::{EventType, Revision, StorageError, StoredObject, WatchEvent};

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
    use crate::backend::Snapshot;
    use crate::cache::Cache;

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
}
