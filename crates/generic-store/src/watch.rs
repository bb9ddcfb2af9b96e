//! The generic store's WATCH: starts with synthetic ADDED events for the current state when
//! asked (no resourceVersion, `0`, or `sendInitialEvents=true`, the last ending with a
//! BOOKMARK annotated `k8s.io/initial-events-end`), then follows storage from the revision.
//! Label/field selectors turn objects leaving the selection into DELETED and entering it into
//! ADDED. A revision older than the history gives one ERROR event (410 Expired), which
//! kube-rs answers by re-listing. The handlers encode the events.

use std::time::Duration;

use flotilla_apimachinery::ApiError;
use flotilla_storage::{EventType, StorageError, StoredObject, WatchEvent as StorageEvent};
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::context::RequestContext;
use crate::filter::Selection;
use crate::objects;
use crate::rest::{Object, WatchAnswer, WatchEvent};

/// How often an idle watch with bookmarks enabled gets a BOOKMARK.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(30);
/// Default watch duration when the client sets no timeoutSeconds (kube: 30-60 min).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

fn bookmark(revision: u64, initial_events_end: bool) -> WatchEvent {
    WatchEvent::Bookmark {
        resource_version: revision.to_string(),
        initial_events_end,
    }
}

fn expired(requested: u64, oldest: u64) -> WatchEvent {
    WatchEvent::Error(ApiError::expired(format!(
        "too old resource version: {requested} ({oldest})"
    )))
}

pub async fn watch(ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
    let options = ctx.list_options()?;
    let selection = Selection::from_options(&ctx.def, options)?;
    let name_filter = ctx.path.name.clone();
    let timeout = options.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let bookmarks = options.allow_bookmarks;
    let send_initial = options.send_initial_events;
    let rv = match &options.resource_version {
        Some(rv) => Some(objects::revision_of(rv)?),
        None => None,
    };
    if send_initial == Some(true)
        && options.resource_version_match.as_deref() != Some("NotOlderThan")
    {
        return Err(ApiError::invalid(
            &ctx.def.group,
            "ListOptions",
            "",
            vec![flotilla_apimachinery::Cause::new(
                "FieldValueNotSupported",
                "Unsupported value: sendInitialEvents requires resourceVersionMatch=NotOlderThan",
                "resourceVersionMatch",
            )],
        ));
    }
    let matches = move |obj: &StoredObject| -> bool {
        if let Some(n) = &name_filter {
            // The key ends with the name: no parse per event.
            if obj.key.rsplit('/').next() != Some(n.as_str()) {
                return false;
            }
        }
        selection.matches_object(obj)
    };
    let prefix = objects::collection_prefix(&ctx.def, ctx.path.namespace.as_deref());
    let storage = ctx.store.storage.clone();
    let with_initial = send_initial.unwrap_or(matches!(rv, None | Some(0)));
    let (initial, from) = if with_initial {
        let listed = storage
            .list(&prefix, &Default::default())
            .await
            .map_err(crate::objects::storage_failure)?;
        let items: Vec<_> = listed.items.into_iter().filter(|o| matches(o)).collect();
        (items, listed.revision)
    } else {
        (Vec::new(), rv.unwrap_or(0))
    };
    let (tx, rx) = mpsc::channel::<WatchEvent>(256);
    match storage.watch(&prefix, from).await {
        Err(StorageError::Expired { requested, oldest }) => {
            let _ = tx.try_send(expired(requested, oldest));
        }
        Err(e) => return Err(crate::objects::storage_failure(e)),
        Ok(mut events) => {
            let initial_end = send_initial == Some(true);
            tokio::spawn(async move {
                for obj in initial {
                    if tx
                        .send(WatchEvent::Added(Object::Stored(obj)))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                let mut last_rev = from;
                if initial_end && tx.send(bookmark(last_rev, true)).await.is_err() {
                    return;
                }
                let deadline = tokio::time::sleep(timeout);
                tokio::pin!(deadline);
                let mut tick = tokio::time::interval_at(
                    tokio::time::Instant::now() + BOOKMARK_INTERVAL,
                    BOOKMARK_INTERVAL,
                );
                loop {
                    tokio::select! {
                        _ = &mut deadline => return,
                        _ = tx.closed() => return,
                        _ = tick.tick(), if bookmarks => {
                            if tx.send(bookmark(last_rev, false)).await.is_err() { return; }
                        }
                        next = events.next() => {
                            match next {
                                None => return,
                                Some(Err(StorageError::Expired { requested, oldest })) => {
                                    let _ = tx.send(expired(requested, oldest)).await;
                                    return;
                                }
                                Some(Err(e)) => {
                                    let _ = tx.send(WatchEvent::Error(ApiError::internal(e.to_string()))).await;
                                    return;
                                }
                                Some(Ok(ev)) => {
                                    last_rev = ev.object.revision;
                                    if let Some(event) = classify(ev, &matches) {
                                        if tx.send(event).await.is_err() { return; }
                                    }
                                }
                            }
                        }
                    }
                }
            });
        }
    }
    Ok(WatchAnswer::new(ReceiverStream::new(rx).boxed()))
}

/// The event a filtered watcher sees, if any.
fn classify(ev: StorageEvent, matches: &impl Fn(&StoredObject) -> bool) -> Option<WatchEvent> {
    let now = matches(&ev.object);
    let before = ev.prev.as_ref().map(|p| matches(p));
    let object = Object::Stored(ev.object);
    match ev.event_type {
        EventType::Added => now.then_some(WatchEvent::Added(object)),
        EventType::Deleted => (now || before == Some(true)).then_some(WatchEvent::Deleted(object)),
        EventType::Modified => match (before.unwrap_or(false), now) {
            (true, true) => Some(WatchEvent::Modified(object)),
            (false, true) => Some(WatchEvent::Added(object)),
            (true, false) => Some(WatchEvent::Deleted(object)),
            (false, false) => None,
        },
    }
}
