//! Revisioned object storage for Flotilla's API servers.
//!
//! Objects are JSON documents stored under string keys
//! (`/{group}/{resource}/{namespace}/{name}`, or without the namespace segment for
//! cluster-scoped kinds). Every write gets a revision from a single global, increasing counter
//! (not necessarily contiguous: an etcd backend's mod revisions have gaps); the revision of an
//! object's last write is its `metadata.resourceVersion`, which the storage stamps into the
//! stored document itself so readers never have to.
//!
//! Layers (k8s.io/apiserver is the model):
//!
//! ```text
//!   Storage (the contract the API servers use)
//!      └─ Cached<B>     cache.rs: current objects + bounded watch history + watchers; serves
//!           │           every read, list (also as of an older revision) and watch
//!           └─ B: Backend   backend.rs: durable writes; feeds its events into the cache
//!                │          through its Feed (cache.rs); batch.rs checks a batch against it
//!                ├─ RedbBackend   (embedded.rs, [`EmbeddedStorage`] = Cached<RedbBackend>)
//!                ├─ MemoryBackend (memory.rs, [`MemoryStorage`] = Cached<MemoryBackend>)
//!                └─ EtcdBackend   (crate flotilla-etcd: etcd's KV API, the cache fed by one
//!                                  etcd watch; reads of the current state wait until the
//!                                  cache has reached etcd's revision)
//! ```
//!
//! Watches replay the event history after a revision and then follow live writes. A revision
//! older than the retained history yields [`StorageError::Expired`] (the API server turns it
//! into `410 Gone` / an `Expired` watch event).
//!
//! With the `test-support` feature, [`conformance`] holds the behaviour suite every backend
//! runs.

use std::pin::Pin;
use std::sync::{Arc, Weak};

use bytes::Bytes;
use futures::Stream;
use parking_lot::Mutex;
use serde_json::Value;

mod backend;
mod batch;
mod cache;
#[cfg(any(test, feature = "test-support"))]
pub mod conformance;
mod embedded;
mod memory;
#[cfg(test)]
mod tests;

pub use backend::{Backend, Snapshot, WriteOp, check_object, stamp};
pub use batch::prepare_batch;
pub use cache::{Cached, Feed, HistoryLimits};
pub use embedded::{EmbeddedOptions, EmbeddedStorage, RedbBackend, WriterStats};
pub use memory::{MemoryBackend, MemoryStorage};

/// The global, increasing write counter; `metadata.resourceVersion`.
pub type Revision = u64;

/// One stored object as last written.
///
/// The JSON bytes are the only copy of the content kept: a parsed tree of maps costs about
/// ten times the JSON, and the cache holds every object. [`StoredObject::value`] parses on
/// demand (callers holding the result at the same time share one parse); the labels are kept
/// parsed beside the bytes because selectors match them on every list and watch event.
#[derive(Debug)]
pub struct StoredObject {
    /// The storage key.
    pub key: String,
    /// Revision of the write that produced this version (equals `metadata.resourceVersion`).
    pub revision: Revision,
    /// The object as compact JSON, with `metadata.resourceVersion` set to `revision`; reads
    /// serve it without re-encoding.
    pub bytes: Bytes,
    /// `metadata.labels`, packed.
    labels: Labels,
    /// The last parse handed out, while someone still holds it.
    parsed: Mutex<Weak<Value>>,
}

impl StoredObject {
    /// An object holding `value` (serialised once here).
    pub fn new(key: impl Into<String>, revision: Revision, value: Value) -> Self {
        let mut bytes = serde_json::to_vec(&value).unwrap_or_default();
        // The serialiser grows its buffer by doubling; the cache keeps this for good.
        bytes.shrink_to_fit();
        let bytes = Bytes::from(bytes);
        Self {
            key: key.into(),
            revision,
            bytes,
            labels: Labels::of(&value),
            parsed: Mutex::new(Weak::new()),
        }
    }

    /// An object from JSON read back from a backend; fails when it is not a JSON object.
    pub fn from_bytes(
        key: impl Into<String>,
        revision: Revision,
        bytes: Bytes,
    ) -> Result<Self, StorageError> {
        let key = key.into();
        let value: Value = serde_json::from_slice(&bytes)
            .map_err(|e| StorageError::Backend(format!("corrupt object at {key}: {e}")))?;
        if !value.is_object() {
            return Err(StorageError::Backend(format!(
                "corrupt object at {key}: not a JSON object"
            )));
        }
        Ok(Self {
            key,
            revision,
            labels: Labels::of(&value),
            bytes,
            parsed: Mutex::new(Weak::new()),
        })
    }

    /// The object, parsed from [`StoredObject::bytes`] unless a caller still holds an earlier
    /// parse. Hold on to the result rather than calling this repeatedly.
    pub fn value(&self) -> Arc<Value> {
        let mut parsed = self.parsed.lock();
        if let Some(value) = parsed.upgrade() {
            return value;
        }
        let value = Arc::new(serde_json::from_slice(&self.bytes).unwrap_or_else(|e| {
            // The bytes were serialised from a value or checked when loaded.
            tracing::error!(key = %self.key, error = %e, "stored JSON does not parse");
            Value::Null
        }));
        *parsed = Arc::downgrade(&value);
        value
    }

    /// `metadata.labels`, for selectors (no parse).
    pub fn labels(&self) -> &Labels {
        &self.labels
    }
}

/// An object's labels with string values (others count as absent, as selectors treat them),
/// packed into one allocation: each key and value as a little-endian `u32` length and its
/// UTF-8 bytes. A map of strings would cost several allocations per label for every cached
/// object.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels(Box<[u8]>);

impl Labels {
    /// The labels of `value` (`metadata.labels`).
    pub fn of(value: &Value) -> Self {
        let Some(labels) = value.pointer("/metadata/labels").and_then(Value::as_object) else {
            return Self::default();
        };
        let mut packed = Vec::new();
        for (key, value) in labels {
            let Some(value) = value.as_str() else {
                continue;
            };
            let (Ok(key_len), Ok(value_len)) =
                (u32::try_from(key.len()), u32::try_from(value.len()))
            else {
                continue;
            };
            for (len, part) in [(key_len, key.as_str()), (value_len, value)] {
                packed.extend_from_slice(&len.to_le_bytes());
                packed.extend_from_slice(part.as_bytes());
            }
        }
        Self(packed.into_boxed_slice())
    }

    /// The value of label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The labels in the object's order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut rest: &[u8] = &self.0;
        let mut next = move || -> Option<&str> {
            let len: [u8; 4] = rest.get(..4)?.try_into().ok()?;
            let len = usize::try_from(u32::from_le_bytes(len)).ok()?;
            let part = rest.get(4..4 + len)?;
            rest = rest.get(4 + len..)?;
            std::str::from_utf8(part).ok()
        };
        std::iter::from_fn(move || Some((next()?, next()?)))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// What happened to a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as delivered to watchers.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub event_type: EventType,
    /// The object after the change. For `Deleted` it is the last state, re-stamped with the
    /// revision of the deletion (as kube-apiserver does).
    pub object: Arc<StoredObject>,
    /// The object before the change (`None` for `Added`), so a watcher filtering by labels can
    /// tell that an object left its selection.
    pub prev: Option<Arc<StoredObject>>,
}

/// A stream of changes in revision order.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchEvent, StorageError>> + Send>>;

/// What a list returns and from which state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// List the state as of this revision (a snapshot, for the later pages of a paginated
    /// list); `None` lists the current state. Older than the retained history:
    /// [`StorageError::Expired`]; newer than the current revision:
    /// [`StorageError::FutureRevision`].
    pub revision: Option<Revision>,
    /// Only keys strictly after this one (the last key of the previous page).
    pub start_after: Option<String>,
    /// At most this many items (`None` or `Some(0)`: all).
    pub limit: Option<usize>,
}

/// The result of a list: objects in key order and the revision the list is consistent with.
#[derive(Debug, Clone)]
pub struct ListResult {
    pub items: Vec<Arc<StoredObject>>,
    pub revision: Revision,
    /// How many matching items follow this page (0 when the list is complete), for
    /// `metadata.remainingItemCount` and the continue token.
    pub remaining: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("key {0} not found")]
    NotFound(String),
    #[error("key {0} already exists")]
    AlreadyExists(String),
    #[error("key {key}: expected revision {expected}, found {actual}")]
    Conflict {
        key: String,
        expected: Revision,
        actual: Revision,
    },
    #[error("revision {requested} is older than the oldest retained revision {oldest}")]
    Expired {
        requested: Revision,
        oldest: Revision,
    },
    #[error("revision {requested} is newer than the current revision {current}")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },
    #[error("the object is not a JSON object with metadata")]
    InvalidObject,
    #[error("opening the storage at {path}")]
    Open {
        path: String,
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A failure of the backend (disk, database, network), as text so the contract does not
    /// depend on any one backend's error types.
    #[error("storage backend: {0}")]
    Backend(String),
    #[error("the storage is shut down")]
    Closed,
    /// The store cannot answer now (unreachable, or its cache is catching up); retrying
    /// later may succeed.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The store did not complete the call in time, after sending it: a write may or may not
    /// have been applied (kube-apiserver's 504 Timeout).
    #[error("storage timeout: {0}")]
    Timeout(String),
    /// The store refused the object for its size (a backend's own limit, such as etcd's
    /// `--max-request-bytes`).
    #[error("object too large for the storage: {0}")]
    TooLarge(String),
}

/// The storage contract the API servers build on.
#[async_trait::async_trait]
pub trait Storage: Send + Sync + 'static {
    /// The object at `key`, if any, reflecting every write acknowledged before the call (on
    /// a shared store, possibly written by another server).
    async fn get(&self, key: &str) -> Result<Option<Arc<StoredObject>>, StorageError>;

    /// The object at `key` as this server's cache holds it now, without waiting for a shared
    /// store's latest writes: for checks where a briefly stale answer is harmless, as
    /// kube-apiserver's admission reads its informers (e.g. that a namespace exists).
    async fn get_cached(&self, key: &str) -> Result<Option<Arc<StoredObject>>, StorageError> {
        self.get(key).await
    }

    /// The objects whose key starts with `prefix`, in key order, selected by `opts`, and the
    /// revision the list is consistent with.
    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError>;

    /// [`Storage::list`] of the current state as this server's cache holds it, without
    /// waiting for a shared store's latest writes (see [`Storage::get_cached`]).
    async fn list_cached(
        &self,
        prefix: &str,
        opts: &ListOptions,
    ) -> Result<ListResult, StorageError> {
        self.list(prefix, opts).await
    }

    /// Creates `key`; fails with `AlreadyExists` when it exists. Returns the stored version.
    async fn create(&self, key: &str, value: Value) -> Result<Arc<StoredObject>, StorageError>;

    /// Replaces `key`; fails with `NotFound` when absent and with `Conflict` when `expected`
    /// is given and differs from the current revision of the key.
    async fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError>;

    /// Deletes `key` (same preconditions as `update`); returns the deleted object stamped with
    /// the deletion's revision.
    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError>;

    /// Changes to keys under `prefix` with revision greater than `after`, then live changes.
    /// `Expired` when `after` is older than the retained history.
    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError>;

    /// The revision of the last acknowledged write.
    async fn current_revision(&self) -> Revision;

    /// Waits until this store has reached `revision` (a write acknowledged by another
    /// replica of a shared store, or one about to land), for at most 3 s as kube-apiserver's
    /// watch cache waits: [`StorageError::FutureRevision`] when it has not by then.
    async fn wait_for_revision(&self, revision: Revision) -> Result<(), StorageError>;

    /// Drops retained history up to and including `revision` (watches and lists from there
    /// get `Expired`). Backends also compact on their own to keep the history bounded.
    async fn compact(&self, revision: Revision);
}
