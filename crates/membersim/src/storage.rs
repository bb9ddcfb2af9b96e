//! A storage handle whose backend a member can let go of when it stops. The API server's
//! background tasks (the RBAC index, namespace finalizers) hold the server's storage for as
//! long as they run and they only end once it is closed; without this, a stopped member's
//! embedded database would stay open (and locked) for the life of the process, and
//! restarting the member on the same data directory in the same process would fail.

use std::sync::{Arc, RwLock};

use flotilla_storage::{
    ListOptions, ListResult, Revision, Storage, StorageError, StoredObject, WatchStream,
};
use serde_json::Value;

pub(crate) struct Releasable {
    backend: RwLock<Option<Arc<dyn Storage>>>,
}

impl Releasable {
    pub(crate) fn new(backend: Arc<dyn Storage>) -> Self {
        Self {
            backend: RwLock::new(Some(backend)),
        }
    }

    /// Drops this handle's reference to the backend: from now on every call fails with
    /// `Closed`, and once calls in flight finish the backend is dropped (ending its watches
    /// and releasing its files).
    pub(crate) fn release(&self) {
        let backend = match self.backend.write() {
            Ok(mut guard) => guard.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        drop(backend);
    }

    fn backend(&self) -> Result<Arc<dyn Storage>, StorageError> {
        let guard = match self.backend.read() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        guard.clone().ok_or(StorageError::Closed)
    }
}

#[async_trait::async_trait]
impl Storage for Releasable {
    async fn get(&self, key: &str) -> Result<Option<Arc<StoredObject>>, StorageError> {
        self.backend()?.get(key).await
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        self.backend()?.list(prefix, opts).await
    }

    async fn create(&self, key: &str, value: Value) -> Result<Arc<StoredObject>, StorageError> {
        self.backend()?.create(key, value).await
    }

    async fn update(
        &self,
        key: &str,
        value: Value,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError> {
        self.backend()?.update(key, value, expected).await
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError> {
        self.backend()?.delete(key, expected).await
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        self.backend()?.watch(prefix, after).await
    }

    async fn current_revision(&self) -> Revision {
        match self.backend() {
            Ok(b) => b.current_revision().await,
            Err(_) => 0,
        }
    }

    async fn compact(&self, revision: Revision) {
        if let Ok(b) = self.backend() {
            b.compact(revision).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[tokio::test]
    async fn release_fails_calls_and_ends_watches() {
        let storage = Releasable::new(Arc::new(flotilla_storage::MemoryStorage::new()));
        storage
            .create("/core/configmaps/default/a", serde_json::json!({"a": 1}))
            .await
            .unwrap();
        let mut watch = storage
            .watch("/", storage.current_revision().await)
            .await
            .unwrap();
        storage.release();
        assert!(matches!(
            storage.get("/core/configmaps/default/a").await,
            Err(StorageError::Closed)
        ));
        assert!(matches!(
            storage.list("/", &ListOptions::default()).await,
            Err(StorageError::Closed)
        ));
        let ended = tokio::time::timeout(std::time::Duration::from_secs(5), watch.next())
            .await
            .expect("the watch did not end");
        assert!(ended.is_none_or(|e| e.is_err()));
    }
}
