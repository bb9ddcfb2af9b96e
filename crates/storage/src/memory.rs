//! [`MemoryStorage`]: the cache over [`MemoryBackend`], a backend that keeps nothing of its
//! own (nothing on disk). For unit tests of the layers above and as the reference behaviour
//! the durable backends must match.

use std::sync::Arc;

use parking_lot::Mutex;

use crate::backend::{Backend, Snapshot, WriteOp};
use crate::batch::prepare_batch;
use crate::cache::Feed;
use crate::cache::{Cache, Cached, HistoryLimits};
use crate::{Revision, StorageError, StoredObject};

/// A backend whose only state is the cache it feeds: writes are validated against it,
/// numbered consecutively and applied at once.
pub struct MemoryBackend {
    feed: Feed,
    /// Serialises writes: validation and application must not interleave between writers.
    writer: Mutex<()>,
}

/// An in-memory [`Storage`](crate::Storage); dropping it ends its watch streams.
pub type MemoryStorage = Cached<MemoryBackend>;

impl Cached<MemoryBackend> {
    /// An empty store keeping the default history (100,000 events).
    pub fn new() -> Self {
        Self::with_limits(HistoryLimits::default())
    }

    /// An empty store keeping about `history` events for watch resumption (at least 1).
    pub fn with_history(history: usize) -> Self {
        Self::with_limits(HistoryLimits {
            events: history,
            ..HistoryLimits::default()
        })
    }

    /// An empty store keeping history within `limits`.
    pub fn with_limits(limits: HistoryLimits) -> Self {
        let cache = Arc::new(Cache::new(Snapshot::default(), limits));
        Cached {
            backend: MemoryBackend {
                feed: Feed(Arc::clone(&cache)),
                writer: Mutex::new(()),
            },
            cache,
        }
    }
}

impl Default for Cached<MemoryBackend> {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait::async_trait]
impl Backend for MemoryBackend {
    async fn write(&self, op: WriteOp) -> Result<Arc<StoredObject>, StorageError> {
        let _writer = self.writer.lock();
        let mut results = prepare_batch(&self.feed, vec![op]);
        let event = results.pop().ok_or(StorageError::Closed)??;
        let object = Arc::clone(&event.object);
        self.feed.apply(vec![event]);
        Ok(object)
    }

    fn compact(&self, _revision: Revision) {
        // Nothing durable: the cache's history is the only one.
    }
}
