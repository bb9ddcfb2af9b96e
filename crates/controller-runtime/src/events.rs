//! core/v1 Events about Flotilla's objects (bindings, templates, Works), written by one
//! background task so that controllers never wait for them. `kubectl describe` lists core/v1 Events by
//! `involvedObject` field selectors, so these (not events.k8s.io) are the ones users see.
//! An identical event (same object, type, reason and message) within the dedupe window bumps
//! `count` and `lastTimestamp` of the existing Event instead of adding one, so a retry loop
//! does not flood.

use std::collections::HashMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// Field manager of event writes.
const FIELD_MANAGER: &str = "flotilla-events";

/// Errors writing events (logged by the writer task, never returned to recorders).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("writing an event about {object}")]
    WriteEvent {
        object: String,
        #[source]
        source: kube::Error,
    },
}

/// Events waiting to be written; beyond this, new ones are dropped (and logged).
const BACKLOG: usize = 4096;
/// Entries kept in the dedupe cache before old ones are pruned.
const CACHE_LIMIT: usize = 10_000;

/// One event to record.
#[derive(Clone, Debug)]
pub struct EventRequest {
    /// The object the event is about.
    pub involved: ObjectReference,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// Machine-readable reason.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
}

/// Sends events to the writer task.
#[derive(Clone)]
pub struct EventRecorder {
    tx: Option<mpsc::Sender<EventRequest>>,
}

impl EventRecorder {
    /// Starts the writer task; it ends once every recorder clone is dropped and the backlog
    /// is written.
    pub fn start(
        client: kube::Client,
        component: String,
        window: Duration,
    ) -> (Self, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel(BACKLOG);
        let task = tokio::spawn(write_events(client, component, window, rx));
        (Self { tx: Some(tx) }, task)
    }

    /// A recorder that drops every event.
    pub fn disabled() -> Self {
        Self { tx: None }
    }

    /// Queues an event (dropped with a log line when the backlog is full).
    pub fn record(&self, event: EventRequest) {
        let Some(tx) = &self.tx else {
            return;
        };
        if let Err(e) = tx.try_send(event) {
            tracing::warn!(error = %e, "event backlog full; event dropped");
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct DedupeKey {
    object: String,
    type_: &'static str,
    reason: &'static str,
    message: String,
}

struct Seen {
    namespace: String,
    name: String,
    count: i32,
    first: Instant,
}

fn object_id(r: &ObjectReference) -> String {
    r.uid.clone().unwrap_or_else(|| {
        format!(
            "{}/{}/{}/{}",
            r.api_version.as_deref().unwrap_or_default(),
            r.kind.as_deref().unwrap_or_default(),
            r.namespace.as_deref().unwrap_or_default(),
            r.name.as_deref().unwrap_or_default()
        )
    })
}

async fn write_events(
    client: kube::Client,
    component: String,
    window: Duration,
    mut rx: mpsc::Receiver<EventRequest>,
) {
    let mut seen: HashMap<DedupeKey, Seen> = HashMap::new();
    while let Some(req) = rx.recv().await {
        let key = DedupeKey {
            object: object_id(&req.involved),
            type_: req.type_,
            reason: req.reason,
            message: req.message.clone(),
        };
        if seen.len() > CACHE_LIMIT {
            seen.retain(|_, s| s.first.elapsed() < window);
        }
        if let Some(prev) = seen.get_mut(&key) {
            if prev.first.elapsed() < window {
                prev.count = prev.count.saturating_add(1);
                match bump(&client, prev).await {
                    Ok(()) => continue,
                    Err(e) => {
                        tracing::debug!(error = %e, "bumping an event failed; creating a new one")
                    }
                }
            }
        }
        match create(&client, &component, &req).await {
            Ok((namespace, name)) => {
                seen.insert(
                    key,
                    Seen {
                        namespace,
                        name,
                        count: 1,
                        first: Instant::now(),
                    },
                );
            }
            Err(e) => tracing::warn!(error = %e, "writing an event failed"),
        }
    }
}

async fn bump(client: &kube::Client, seen: &Seen) -> Result<(), Error> {
    let api: Api<Event> = Api::namespaced(client.clone(), &seen.namespace);
    let patch = json!({"count": seen.count, "lastTimestamp": Time(Timestamp::now())});
    api.patch(
        &seen.name,
        &PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        },
        &Patch::Merge(patch),
    )
    .await
    .map_err(|source| Error::WriteEvent {
        object: seen.name.clone(),
        source,
    })?;
    Ok(())
}

async fn create(
    client: &kube::Client,
    component: &str,
    req: &EventRequest,
) -> Result<(String, String), Error> {
    // Cluster-scoped objects' events live in `default`, as kubectl looks for them there.
    let namespace = req
        .involved
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    let object_name = req.involved.name.clone().unwrap_or_default();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let name = format!("{object_name}.{}", &suffix[..16]);
    let now = Time(Timestamp::now());
    let event = Event {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: req.involved.clone(),
        type_: Some(req.type_.into()),
        reason: Some(req.reason.into()),
        message: Some(req.message.clone()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        source: Some(EventSource {
            component: Some(component.into()),
            host: None,
        }),
        reporting_component: Some(component.into()),
        reporting_instance: Some(component.into()),
        ..Event::default()
    };
    let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
    api.create(
        &PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        },
        &event,
    )
    .await
    .map_err(|source| Error::WriteEvent {
        object: object_name,
        source,
    })?;
    Ok((namespace, name))
}
