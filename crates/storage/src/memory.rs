//! [`MemoryStorage`]: the whole store in memory, nothing on disk. For unit tests of the layers
//! above and as the reference behaviour the embedded backend must match.

use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use crate::state::{DEFAULT_HISTORY, State, WriteOp};
use crate::{ListResult, Revision, Storage, StorageError, StoredObject, WatchStream};

/// An in-memory [`Storage`]; dropping it ends its watch streams.
pub struct MemoryStorage {
    state: Arc<State>,
    /// Serialises writes: validation and application must not interleave between writers.
    writer: Mutex<()>,
}

impl MemoryStorage {
    /// An empty store keeping the default history (100,000 events).
    pub fn new() -> Self {
        Self::with_history(DEFAULT_HISTORY)
    }

    /// An empty store keeping about `history` events for watch resumption (at least 1).
    pub fn with_history(history: usize) -> Self {
        Self {
            state: Arc::new(State::new(history)),
            writer: Mutex::new(()),
        }
    }

    #[cfg(test)]
    pub(crate) fn state_for_tests(&self) -> Arc<State> {
        Arc::clone(&self.state)
    }

    fn write(&self, op: WriteOp) -> Result<Arc<StoredObject>, StorageError> {
        let _writer = self.writer.lock();
        let mut results = self.state.prepare_batch(vec![op]);
        let event = results.pop().ok_or(StorageError::Closed)??;
        let object = Arc::clone(&event.object);
        let trim = self.state.trim_target(object.revision);
        self.state.apply(vec![event], trim);
        Ok(object)
    }
}

impl Default for MemoryStorage {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for MemoryStorage {
    fn drop(&mut self) {
        self.state.close();
    }
}

#[async_trait::async_trait]
impl Storage for MemoryStorage {
    async fn get(&self, key: &str) -> Result<Option<Arc<StoredObject>>, StorageError> {
        Ok(self.state.get(key))
    }

    async fn list(&self, prefix: &str) -> Result<ListResult, StorageError> {
        Ok(self.state.list(prefix))
    }

    async fn create(&self, key: &str, value: Value) -> Result<Arc<StoredObject>, StorageError> {
        self.write(WriteOp::Create {
            key: key.to_owned(),
            value,
        })
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
    }

    fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.state.watch(prefix, after)
    }

    fn current_revision(&self) -> Revision {
        self.state.revision()
    }

    fn compact(&self, revision: Revision) {
        self.state.compact(revision);
    }
}
