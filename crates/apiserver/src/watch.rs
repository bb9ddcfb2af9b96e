//! WATCH: a chunked stream of one JSON event per line. Starts with synthetic ADDED events for
//! the current state when asked (no resourceVersion, `0`, or `sendInitialEvents=true`, the
//! last ending with a BOOKMARK annotated `k8s.io/initial-events-end`), then follows storage
//! from the revision. Label/field selectors turn objects leaving the selection into DELETED and
//! entering it into ADDED. A revision older than the history gives one ERROR event (410
//! Expired), which kube-rs answers by re-listing.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_storage::{EventType, StorageError, StoredObject, WatchEvent};
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::context::RequestContext;
use crate::filter::Selection;
use crate::objects;
use crate::response::{Format, negotiate};
use crate::table::{self, IncludeObject};

/// How often an idle watch with bookmarks enabled gets a BOOKMARK.
const BOOKMARK_INTERVAL: Duration = Duration::from_secs(30);
/// Default watch duration when the client sets no timeoutSeconds (kube: 30-60 min).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Encoder {
    def: std::sync::Arc<ResourceDef>,
    format: Format,
    include: IncludeObject,
}

impl Encoder {
    fn event(&self, event_type: &str, obj: &StoredObject) -> Bytes {
        let mut buf = BytesMut::with_capacity(obj.bytes.len() + 32);
        buf.put_slice(b"{\"type\":\"");
        buf.put_slice(event_type.as_bytes());
        buf.put_slice(b"\",\"object\":");
        match self.format {
            Format::Json => buf.put_slice(&objects::served_bytes(&self.def, obj)),
            Format::Table => {
                let t = table::table(
                    &self.def,
                    std::iter::once(obj.value().as_ref()),
                    Some(obj.revision.to_string()),
                    None,
                    self.include,
                );
                buf.put_slice(t.to_string().as_bytes());
            }
        }
        buf.put_slice(b"}\n");
        buf.freeze()
    }

    fn bookmark(&self, revision: u64, initial_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": self.def.kind, "apiVersion": self.def.api_version(), "metadata": metadata});
        line(&json!({"type": "BOOKMARK", "object": obj}))
    }
}

fn line(v: &Value) -> Bytes {
    let mut s = v.to_string();
    s.push('\n');
    Bytes::from(s)
}

fn error_event(err: &ApiError) -> Bytes {
    line(&json!({"type": "ERROR", "object": err.to_status()}))
}

pub async fn watch(ctx: &RequestContext) -> Result<Response, ApiError> {
    let format = negotiate(&ctx.headers)?;
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
    let encoder = Encoder {
        def: ctx.def.clone(),
        format,
        include: ctx.include_object(),
    };
    let (tx, rx) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    match storage.watch(&prefix, from).await {
        Err(StorageError::Expired { requested, oldest }) => {
            let _ = tx.try_send(Ok(error_event(&ApiError::expired(format!(
                "too old resource version: {requested} ({oldest})"
            )))));
        }
        Err(e) => return Err(crate::objects::storage_failure(e)),
        Ok(mut events) => {
            let initial_end = send_initial == Some(true);
            tokio::spawn(async move {
                for obj in &initial {
                    if tx.send(Ok(encoder.event("ADDED", obj))).await.is_err() {
                        return;
                    }
                }
                let mut last_rev = from;
                if initial_end && tx.send(Ok(encoder.bookmark(last_rev, true))).await.is_err() {
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
                            if tx.send(Ok(encoder.bookmark(last_rev, false))).await.is_err() { return; }
                        }
                        next = events.next() => {
                            match next {
                                None => return,
                                Some(Err(StorageError::Expired { requested, oldest })) => {
                                    let _ = tx.send(Ok(error_event(&ApiError::expired(format!("too old resource version: {requested} ({oldest})"))))).await;
                                    return;
                                }
                                Some(Err(e)) => {
                                    let _ = tx.send(Ok(error_event(&ApiError::internal(e.to_string())))).await;
                                    return;
                                }
                                Some(Ok(ev)) => {
                                    last_rev = ev.object.revision;
                                    if let Some(kind) = classify(&ev, &matches) {
                                        if tx.send(Ok(encoder.event(kind, &ev.object))).await.is_err() { return; }
                                    }
                                }
                            }
                        }
                    }
                }
            });
        }
    }
    let mut resp = Response::new(Body::from_stream(ReceiverStream::new(rx)));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}

/// The event type a filtered watcher sees, if any.
fn classify(ev: &WatchEvent, matches: &impl Fn(&StoredObject) -> bool) -> Option<&'static str> {
    let now = matches(&ev.object);
    let before = ev.prev.as_ref().map(|p| matches(p));
    match ev.event_type {
        EventType::Added => now.then_some("ADDED"),
        EventType::Deleted => (now || before == Some(true)).then_some("DELETED"),
        EventType::Modified => match (before.unwrap_or(false), now) {
            (true, true) => Some("MODIFIED"),
            (false, true) => Some("ADDED"),
            (true, false) => Some("DELETED"),
            (false, false) => None,
        },
    }
}
