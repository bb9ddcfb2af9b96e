//! List-then-watch over storage, the one loop every in-process controller follows a
//! collection with: list a key prefix and hand the whole collection to a [`Handler`], watch
//! from the list's revision and hand over each change, and list again when the watch expires
//! (its revision was compacted away), fails or ends. It stops when its cancellation token
//! fires or the storage shuts down.
//!
//! ```text
//!  list(prefix) ──> Handler::listed(items) ──> watch(prefix, rev) ──> Handler::changed(ev) ...
//!        ^                                          │ Expired / error / end / relist_after
//!        └──────────────────────────────────────────┘
//! ```
//!
//! The storage is only called from here (`list` and `watch`), so a change of the storage
//! contract touches this module alone.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use flotilla_storage::{Revision, Storage, StorageError, StoredObject, WatchEvent};
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long to wait before listing again after a failure (not after `Expired`, which
/// re-lists at once, as kube's reflectors do).
const DEFAULT_BACKOFF: Duration = Duration::from_millis(100);

/// What a controller does with a followed collection.
pub trait Handler: Send {
    /// The whole collection, at start and after every re-list; an object handed over earlier
    /// and absent now was deleted meanwhile.
    fn listed(&mut self, items: Vec<Arc<StoredObject>>) -> impl Future<Output = ()> + Send;

    /// One change, in revision order.
    fn changed(&mut self, event: WatchEvent) -> impl Future<Output = ()> + Send;

    /// Asked after every call: `Some(d)` lists again `d` from now (unless a re-list is
    /// already due), for handlers with failed work to retry; `None` cancels that.
    fn relist_after(&self) -> Option<Duration> {
        None
    }
}

/// Follows one key prefix of a storage.
pub struct Informer {
    storage: Arc<dyn Storage>,
    prefix: String,
    backoff: Duration,
    /// The revision of a list already handed over (by [`Informer::list`]) and not followed yet.
    listed: Option<Revision>,
}

/// Why a watch stopped.
enum Ended {
    /// Cancelled, or the storage shut down.
    Stop,
    /// List again now.
    Relist,
    /// List again after the backoff.
    Retry,
}

// === impl Informer ===

impl Informer {
    pub fn new(storage: Arc<dyn Storage>, prefix: impl Into<String>) -> Self {
        Self {
            storage,
            prefix: prefix.into(),
            backoff: DEFAULT_BACKOFF,
            listed: None,
        }
    }

    /// The wait before listing again after a failed list or watch.
    pub fn with_backoff(mut self, backoff: Duration) -> Self {
        self.backoff = backoff;
        self
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Lists now and hands the collection to `handler`; [`Informer::run`] then watches from
    /// this list instead of listing again. For controllers whose first pass must be done
    /// before the server serves.
    pub async fn list<H: Handler>(&mut self, handler: &mut H) -> Result<(), StorageError> {
        let listed = self.storage.list(&self.prefix, &Default::default()).await?;
        handler.listed(listed.items).await;
        self.listed = Some(listed.revision);
        Ok(())
    }

    /// Lists (unless [`Informer::list`] just did) and follows until `cancel` fires or the
    /// storage shuts down; returns the handler.
    pub async fn run<H: Handler>(mut self, mut handler: H, cancel: CancellationToken) -> H {
        loop {
            if cancel.is_cancelled() {
                return handler;
            }
            let from = match self.listed.take() {
                Some(revision) => revision,
                None => match cancel.run_until_cancelled(self.list(&mut handler)).await {
                    None | Some(Err(StorageError::Closed)) => return handler,
                    Some(Ok(())) => match self.listed.take() {
                        Some(revision) => revision,
                        None => continue,
                    },
                    Some(Err(e)) => {
                        tracing::warn!(prefix = %self.prefix, error = %e, "listing failed; retrying");
                        if !self.pause(&cancel).await {
                            return handler;
                        }
                        continue;
                    }
                },
            };
            match self.follow(&mut handler, from, &cancel).await {
                Ended::Stop => return handler,
                Ended::Relist => {}
                Ended::Retry => {
                    if !self.pause(&cancel).await {
                        return handler;
                    }
                }
            }
        }
    }

    /// Watches from `from` and hands each change over until the watch stops.
    async fn follow<H: Handler>(
        &self,
        handler: &mut H,
        from: Revision,
        cancel: &CancellationToken,
    ) -> Ended {
        let mut events = match self.storage.watch(&self.prefix, from).await {
            Ok(events) => events,
            Err(e) => return self.watch_error(e),
        };
        let mut relist_at = handler.relist_after().map(|d| Instant::now() + d);
        loop {
            let event = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Ended::Stop,
                _ = sleep_until(relist_at) => return Ended::Relist,
                event = events.next() => event,
            };
            match event {
                Some(Ok(event)) => handler.changed(event).await,
                Some(Err(e)) => return self.watch_error(e),
                None => {
                    tracing::debug!(prefix = %self.prefix, "watch ended; re-listing");
                    return Ended::Retry;
                }
            }
            // An armed re-list keeps its time; a handler that no longer asks disarms it.
            relist_at = handler
                .relist_after()
                .map(|d| relist_at.unwrap_or_else(|| Instant::now() + d));
        }
    }

    fn watch_error(&self, error: StorageError) -> Ended {
        match error {
            StorageError::Closed => Ended::Stop,
            StorageError::Expired { .. } => {
                tracing::debug!(prefix = %self.prefix, error = %error, "watch expired; re-listing");
                Ended::Relist
            }
            e => {
                tracing::warn!(prefix = %self.prefix, error = %e, "watch failed; re-listing");
                Ended::Retry
            }
        }
    }

    /// Waits out the backoff; false when cancelled meanwhile.
    async fn pause(&self, cancel: &CancellationToken) -> bool {
        cancel
            .run_until_cancelled(tokio::time::sleep(self.backoff))
            .await
            .is_some()
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_storage::{EventType, MemoryStorage};
    use serde_json::json;
    use tokio::sync::mpsc;

    /// What a handler saw, sent out so the test can wait for it.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Listed(Vec<String>),
        Changed(EventType, String),
    }

    struct Recorder {
        tx: mpsc::UnboundedSender<Seen>,
        relist_after: Option<Duration>,
    }

    impl Handler for Recorder {
        async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
            let keys = items.iter().map(|o| o.key.clone()).collect();
            let _ = self.tx.send(Seen::Listed(keys));
        }
        async fn changed(&mut self, event: WatchEvent) {
            let _ = self
                .tx
                .send(Seen::Changed(event.event_type, event.object.key.clone()));
        }
        fn relist_after(&self) -> Option<Duration> {
            self.relist_after
        }
    }

    fn recorder() -> (Recorder, mpsc::UnboundedReceiver<Seen>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Recorder {
                tx,
                relist_after: None,
            },
            rx,
        )
    }

    async fn next(rx: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(seen)) => seen,
            other => panic!("nothing seen: {other:?}"),
        }
    }

    fn obj(name: &str) -> serde_json::Value {
        json!({"metadata": {"name": name}})
    }

    #[tokio::test]
    async fn lists_then_follows_adds_updates_and_deletes() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        storage.create("/x/a", obj("a")).await.unwrap();
        storage.create("/y/other", obj("other")).await.unwrap();
        let (handler, mut rx) = recorder();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(Informer::new(storage.clone(), "/x/").run(handler, cancel.clone()));
        assert_eq!(next(&mut rx).await, Seen::Listed(vec!["/x/a".into()]));
        storage.create("/x/b", obj("b")).await.unwrap();
        storage.update("/x/a", obj("a"), None).await.unwrap();
        storage.create("/y/ignored", obj("ignored")).await.unwrap();
        storage.delete("/x/b", None).await.unwrap();
        assert_eq!(
            next(&mut rx).await,
            Seen::Changed(EventType::Added, "/x/b".into())
        );
        assert_eq!(
            next(&mut rx).await,
            Seen::Changed(EventType::Modified, "/x/a".into())
        );
        assert_eq!(
            next(&mut rx).await,
            Seen::Changed(EventType::Deleted, "/x/b".into())
        );
        cancel.cancel();
        task.await.unwrap();
        assert!(rx.try_recv().is_err(), "nothing after the last change");
    }

    /// A store holding `/x/a` and an informer that has listed it (not yet following).
    async fn listed_up_front() -> (
        Arc<dyn Storage>,
        Informer,
        Recorder,
        mpsc::UnboundedReceiver<Seen>,
    ) {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        storage.create("/x/a", obj("a")).await.unwrap();
        let (mut handler, mut rx) = recorder();
        let mut informer = Informer::new(storage.clone(), "/x/");
        informer.list(&mut handler).await.unwrap();
        assert_eq!(next(&mut rx).await, Seen::Listed(vec!["/x/a".into()]));
        (storage, informer, handler, rx)
    }

    #[tokio::test]
    async fn a_list_done_up_front_is_followed_without_listing_again() {
        let (storage, informer, handler, mut rx) = listed_up_front().await;
        // Written between the list and the watch: the watch from the list's revision has it.
        storage.create("/x/b", obj("b")).await.unwrap();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(informer.run(handler, cancel.clone()));
        assert_eq!(
            next(&mut rx).await,
            Seen::Changed(EventType::Added, "/x/b".into())
        );
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn an_expired_watch_lists_again() {
        let (storage, informer, handler, mut rx) = listed_up_front().await;
        // The history after the list is compacted away before the watch starts.
        storage.delete("/x/a", None).await.unwrap();
        storage.create("/x/c", obj("c")).await.unwrap();
        storage.compact(storage.current_revision().await).await;
        let cancel = CancellationToken::new();
        let task = tokio::spawn(informer.run(handler, cancel.clone()));
        assert_eq!(next(&mut rx).await, Seen::Listed(vec!["/x/c".into()]));
        // And it follows from the new list.
        storage.create("/x/d", obj("d")).await.unwrap();
        assert_eq!(
            next(&mut rx).await,
            Seen::Changed(EventType::Added, "/x/d".into())
        );
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn a_handler_asking_for_it_is_listed_again() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        storage.create("/x/a", obj("a")).await.unwrap();
        let (mut handler, mut rx) = recorder();
        handler.relist_after = Some(Duration::from_millis(10));
        let cancel = CancellationToken::new();
        let task = tokio::spawn(Informer::new(storage, "/x/").run(handler, cancel.clone()));
        assert_eq!(next(&mut rx).await, Seen::Listed(vec!["/x/a".into()]));
        assert_eq!(next(&mut rx).await, Seen::Listed(vec!["/x/a".into()]));
        cancel.cancel();
        task.await.unwrap();
    }

    #[tokio::test]
    async fn cancellation_ends_it_while_waiting_and_before_starting() {
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let (handler, mut rx) = recorder();
        let cancel = CancellationToken::new();
        let task = tokio::spawn(Informer::new(storage.clone(), "/x/").run(handler, cancel.clone()));
        assert_eq!(next(&mut rx).await, Seen::Listed(vec![]));
        cancel.cancel();
        let handler = tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the informer ends on cancellation")
            .unwrap();
        // Already cancelled: it returns without listing.
        let ended = Informer::new(storage, "/x/").run(handler, cancel).await;
        drop(ended);
        assert!(rx.recv().await.is_none());
    }
}
