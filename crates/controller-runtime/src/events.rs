//! core/v1 Events about Flotilla's objects (bindings, templates, Works), written by one
//! background task so that controllers never wait for them. `kubectl describe` lists core/v1 Events by
//! `involvedObject` field selectors, so these (not events.k8s.io) are the ones users see.
//!
//! Every recorded event passes a [`Correlator`] before anything is written, so that a retry
//! loop, or one success event per member cluster across a hundred clusters, does not flood the
//! API server. The correlator is pure and synchronous (time is passed in); the writer task only
//! applies its [`Decision`]s. Three steps run in this order, each seeing the previous one's output:
//!
//! 1. **Aggregation.** Events are grouped by source component, involved object (kind, namespace,
//!    name, uid, apiVersion), type and reason. A group remembers its distinct messages; its record
//!    starts afresh once more than [`AGGREGATE_INTERVAL`] (600 s) passed since its last event.
//!    From the [`AGGREGATE_AFTER`]th (10th) distinct message on, every event of the group is
//!    replaced by an aggregate event whose message is [`AGGREGATE_PREFIX`] followed by the new
//!    message, and which is deduplicated under the group, not the message, so further similar
//!    events bump that one Event.
//! 2. **Deduplication.** An event with the same key as a live Event (group and message, or the
//!    group alone for an aggregate) bumps `count` and `lastTimestamp` of that Event (a merge
//!    PATCH, which also carries the latest message) instead of adding one; if the PATCH answers
//!    404 the Event is created anew (POST) under the same name with the running count. The
//!    `window` given to [`EventRecorder::start`] is how long an Event stays live for this:
//!    an identical event more than `window` after the Event was created starts a new Event.
//! 3. **Spam filter.** A token bucket per involved object and reason holds [`SPAM_BURST`]
//!    (25) tokens and gains one every
//!    [`SPAM_REFILL`] (300 s). Every write, a new Event or a count bump, takes a token; without
//!    one the event is dropped (logged at debug level). A dropped bump still counts, so the next
//!    written bump carries the true count; a dropped new Event leaves no trace.
//!
//! client-go keys its buckets by source component and object; in Karmada every controller
//! records under a component of its own, so one controller's events (status aggregation at
//! every status change, say) never starve another's (a cluster's copy applied). One Flotilla
//! recorder serves several controllers, and each reason belongs to one of them: keying the
//! buckets by reason keeps them apart as Karmada's components do. One correlator serves one
//! recorder, whose source component is fixed, so the component is implied in every key
//! rather than stored. Each of the three caches is bounded to about
//! [`CACHE_LIMIT`] entries; when full, the least recently used quarter is pruned.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

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

impl Error {
    /// Whether the API server answered 404 (the Event to bump is gone).
    fn is_not_found(&self) -> bool {
        match self {
            Error::WriteEvent {
                source: kube::Error::Api(status),
                ..
            } => status.is_not_found(),
            Error::WriteEvent { .. } => false,
        }
    }
}

/// Events waiting to be written; beyond this, new ones are dropped (and logged).
const BACKLOG: usize = 4096;
/// Entries kept in each correlator cache before the least recently used are pruned.
pub const CACHE_LIMIT: usize = 4096;
/// Distinct messages of one group (within [`AGGREGATE_INTERVAL`]) from which its events are
/// aggregated.
pub const AGGREGATE_AFTER: usize = 10;
/// A group's record of distinct messages starts afresh after this long without an event.
pub const AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// The message prefix of aggregate events.
pub const AGGREGATE_PREFIX: &str = "(combined from similar events): ";
/// Tokens of a full spam-filter bucket (one per write).
pub const SPAM_BURST: u32 = 25;
/// The spam filter gains one token per object this often.
pub const SPAM_REFILL: Duration = Duration::from_secs(300);

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
    /// is written. `window` is how long a written Event can be bumped by identical events
    /// (see the module documentation).
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

/// The involved object, as the spam filter keys it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ObjectKey {
    kind: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    api_version: Option<String>,
}

impl ObjectKey {
    fn of(r: &ObjectReference) -> Self {
        Self {
            kind: r.kind.clone(),
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
            api_version: r.api_version.clone(),
        }
    }
}

/// A spam-filter bucket's key: the object, and the reason standing for the controller that
/// records it (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct SpamKey {
    object: ObjectKey,
    reason: &'static str,
}

/// Similar events: the aggregation key.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct GroupKey {
    object: ObjectKey,
    type_: &'static str,
    reason: &'static str,
}

/// The deduplication key: a group and a message, or the group alone for its aggregate event.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EventKey {
    group: GroupKey,
    message: Option<String>,
}

/// A group's distinct messages since its record started.
struct Similar {
    messages: HashSet<String>,
    last: Instant,
}

/// A written (or about to be written) Event that identical events bump.
struct Series {
    namespace: String,
    name: String,
    count: i32,
    created: Instant,
}

/// A spam-filter token bucket.
struct Bucket {
    tokens: u32,
    /// When the tokens were last topped up (whole refill periods only).
    refilled: Instant,
}

impl Bucket {
    /// Takes a token if there is one, after adding those earned since the last top-up.
    fn take(&mut self, now: Instant) -> bool {
        let periods =
            now.saturating_duration_since(self.refilled).as_secs() / SPAM_REFILL.as_secs();
        if periods > 0 {
            let periods = u32::try_from(periods).unwrap_or(u32::MAX);
            self.tokens = self.tokens.saturating_add(periods).min(SPAM_BURST);
            self.refilled = if self.tokens == SPAM_BURST {
                now
            } else {
                self.refilled + SPAM_REFILL * periods
            };
        }
        if self.tokens == 0 {
            return false;
        }
        if self.tokens == SPAM_BURST {
            // A full bucket earns nothing; refilling counts from the first token taken.
            self.refilled = now;
        }
        self.tokens -= 1;
        true
    }
}

/// A map bounded to about `limit` entries, pruning the least recently used quarter when full.
struct Lru<K, V> {
    entries: HashMap<K, (V, Instant)>,
    limit: usize,
}

impl<K: Eq + Hash, V> Lru<K, V> {
    fn new(limit: usize) -> Self {
        Self {
            entries: HashMap::new(),
            limit: limit.max(1),
        }
    }

    /// The entry of `key`, marked used at `now`.
    fn get_mut(&mut self, key: &K, now: Instant) -> Option<&mut V> {
        let (value, used) = self.entries.get_mut(key)?;
        *used = now;
        Some(value)
    }

    /// Sets (or replaces) the entry of `key`, pruning old entries first when a new key would
    /// overflow.
    fn insert(&mut self, key: K, value: V, now: Instant) -> &mut V {
        if self.entries.len() >= self.limit && !self.entries.contains_key(&key) {
            self.prune();
        }
        match self.entries.entry(key) {
            Entry::Occupied(slot) => {
                let slot = slot.into_mut();
                *slot = (value, now);
                &mut slot.0
            }
            Entry::Vacant(slot) => &mut slot.insert((value, now)).0,
        }
    }

    /// Removes (at least) the least recently used quarter of the entries.
    fn prune(&mut self) {
        let mut used: Vec<Instant> = self.entries.values().map(|(_, used)| *used).collect();
        let nth = (used.len() / 4).max(1) - 1;
        let (_, cutoff, _) = used.select_nth_unstable(nth);
        let cutoff = *cutoff;
        self.entries.retain(|_, (_, used)| *used > cutoff);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// What to write for one event.
#[derive(Clone, Debug, PartialEq)]
pub struct EventWrite {
    /// Namespace of the Event (the object's, or `default` for cluster-scoped objects).
    pub namespace: String,
    /// Name of the Event.
    pub name: String,
    /// The object the event is about.
    pub involved: ObjectReference,
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// Machine-readable reason.
    pub reason: &'static str,
    /// The message (with [`AGGREGATE_PREFIX`] for aggregate events).
    pub message: String,
    /// How often the event happened while this Event was live.
    pub count: i32,
}

/// What the writer does with one event.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// POST a new Event.
    Create(EventWrite),
    /// PATCH `count`, `lastTimestamp` and `message` of an existing Event; POST it if it is gone.
    Bump(EventWrite),
    /// Drop the event (the spam filter had no token for its object).
    Drop,
}

/// Aggregation, deduplication and spam filtering of one recorder's events (see the module
/// documentation); pure and synchronous, with the time passed in.
pub struct Correlator {
    window: Duration,
    groups: Lru<GroupKey, Similar>,
    series: Lru<EventKey, Series>,
    buckets: Lru<SpamKey, Bucket>,
}

impl Correlator {
    /// A correlator whose Events can be bumped for `window` after their creation.
    pub fn new(window: Duration) -> Self {
        Self::with_limit(window, CACHE_LIMIT)
    }

    fn with_limit(window: Duration, limit: usize) -> Self {
        Self {
            window,
            groups: Lru::new(limit),
            series: Lru::new(limit),
            buckets: Lru::new(limit),
        }
    }

    /// Decides what to write for `event`, happening at `now`.
    pub fn correlate(&mut self, event: &EventRequest, now: Instant) -> Decision {
        let object = ObjectKey::of(&event.involved);
        let group = GroupKey {
            object: object.clone(),
            type_: event.type_,
            reason: event.reason,
        };

        // 1. Aggregation.
        let (key, message) = if self.aggregates(&group, &event.message, now) {
            let key = EventKey {
                group,
                message: None,
            };
            (key, format!("{AGGREGATE_PREFIX}{}", event.message))
        } else {
            let key = EventKey {
                group,
                message: Some(event.message.clone()),
            };
            (key, event.message.clone())
        };

        // 3. The spam filter gates the correlated write below; its token is taken before the
        //    dedupe lookup so that a dropped bump can still count in its series.
        let spam = SpamKey {
            object,
            reason: event.reason,
        };
        let allowed = match self.buckets.get_mut(&spam, now) {
            Some(bucket) => bucket.take(now),
            None => {
                let bucket = Bucket {
                    tokens: SPAM_BURST,
                    refilled: now,
                };
                self.buckets.insert(spam, bucket, now).take(now)
            }
        };

        // 2. Deduplication (then the filter's verdict).
        let window = self.window;
        if let Some(series) = self
            .series
            .get_mut(&key, now)
            .filter(|s| now.saturating_duration_since(s.created) < window)
        {
            series.count = series.count.saturating_add(1);
            if !allowed {
                return Decision::Drop;
            }
            return Decision::Bump(EventWrite {
                namespace: series.namespace.clone(),
                name: series.name.clone(),
                involved: event.involved.clone(),
                type_: event.type_,
                reason: event.reason,
                message,
                count: series.count,
            });
        }
        if !allowed {
            return Decision::Drop;
        }
        let write = EventWrite {
            namespace: event_namespace(&event.involved),
            name: event_name(&event.involved),
            involved: event.involved.clone(),
            type_: event.type_,
            reason: event.reason,
            message,
            count: 1,
        };
        let series = Series {
            namespace: write.namespace.clone(),
            name: write.name.clone(),
            count: 1,
            created: now,
        };
        self.series.insert(key, series, now);
        Decision::Create(write)
    }

    /// Records `message` in its group and tells whether the event is to be aggregated.
    fn aggregates(&mut self, group: &GroupKey, message: &str, now: Instant) -> bool {
        let similar = match self.groups.get_mut(group, now) {
            Some(similar) if now.saturating_duration_since(similar.last) <= AGGREGATE_INTERVAL => {
                similar
            }
            _ => {
                let fresh = Similar {
                    messages: HashSet::new(),
                    last: now,
                };
                self.groups.insert(group.clone(), fresh, now)
            }
        };
        similar.last = now;
        // Only the first few distinct messages matter; from then on the group aggregates.
        if similar.messages.len() < AGGREGATE_AFTER && !similar.messages.contains(message) {
            similar.messages.insert(message.to_owned());
        }
        similar.messages.len() >= AGGREGATE_AFTER
    }
}

/// Cluster-scoped objects' events live in `default`, as kubectl looks for them there.
fn event_namespace(involved: &ObjectReference) -> String {
    involved
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into())
}

/// A fresh Event name: the object's name and a random suffix.
fn event_name(involved: &ObjectReference) -> String {
    let object_name = involved.name.as_deref().unwrap_or_default();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{object_name}.{}", &suffix[..16])
}

async fn write_events(
    client: kube::Client,
    component: String,
    window: Duration,
    mut rx: mpsc::Receiver<EventRequest>,
) {
    let mut correlator = Correlator::new(window);
    while let Some(req) = rx.recv().await {
        match correlator.correlate(&req, Instant::now()) {
            Decision::Create(write) => {
                if let Err(e) = create(&client, &component, &write).await {
                    tracing::warn!(error = %e, "writing an event failed");
                }
            }
            Decision::Bump(write) => match bump(&client, &write).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {
                    tracing::debug!(event = %write.name, "the event to bump is gone; creating it anew");
                    if let Err(e) = create(&client, &component, &write).await {
                        tracing::warn!(error = %e, "writing an event failed");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "bumping an event failed"),
            },
            Decision::Drop => tracing::debug!(
                object = req.involved.name.as_deref().unwrap_or_default(),
                kind = req.involved.kind.as_deref().unwrap_or_default(),
                reason = req.reason,
                "too many events about the object; event dropped"
            ),
        }
    }
}

async fn bump(client: &kube::Client, write: &EventWrite) -> Result<(), Error> {
    let api: Api<Event> = Api::namespaced(client.clone(), &write.namespace);
    let patch = json!({
        "count": write.count,
        "lastTimestamp": Time(Timestamp::now()),
        "message": write.message,
    });
    api.patch(
        &write.name,
        &PatchParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        },
        &Patch::Merge(patch),
    )
    .await
    .map_err(|source| Error::WriteEvent {
        object: write.name.clone(),
        source,
    })?;
    Ok(())
}

async fn create(client: &kube::Client, component: &str, write: &EventWrite) -> Result<(), Error> {
    let now = Time(Timestamp::now());
    let event = Event {
        metadata: ObjectMeta {
            name: Some(write.name.clone()),
            namespace: Some(write.namespace.clone()),
            ..ObjectMeta::default()
        },
        involved_object: write.involved.clone(),
        type_: Some(write.type_.into()),
        reason: Some(write.reason.into()),
        message: Some(write.message.clone()),
        count: Some(write.count),
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
    let api: Api<Event> = Api::namespaced(client.clone(), &write.namespace);
    api.create(
        &PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        },
        &event,
    )
    .await
    .map_err(|source| Error::WriteEvent {
        object: write.involved.name.clone().unwrap_or_default(),
        source,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn object(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: Some("work.karmada.io/v1alpha2".into()),
            kind: Some("ResourceBinding".into()),
            namespace: Some("apps".into()),
            name: Some(name.into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectReference::default()
        }
    }

    fn event(name: &str, reason: &'static str, message: &str) -> EventRequest {
        EventRequest {
            involved: object(name),
            type_: "Normal",
            reason,
            message: message.into(),
        }
    }

    fn created(decision: Decision) -> EventWrite {
        match decision {
            Decision::Create(write) => write,
            other => panic!("expected a new Event, got {other:?}"),
        }
    }

    fn bumped(decision: Decision) -> EventWrite {
        match decision {
            Decision::Bump(write) => write,
            other => panic!("expected a bump, got {other:?}"),
        }
    }

    #[test]
    fn identical_events_bump_one_event() {
        let t0 = Instant::now();
        let mut c = Correlator::new(HOUR);
        let first = created(c.correlate(&event("a", "Synced", "ok"), t0));
        assert_eq!(first.count, 1);
        assert_eq!(first.namespace, "apps");
        assert!(first.name.starts_with("a."));
        for (i, count) in (2..=4).enumerate() {
            let t = t0 + Duration::from_secs(i as u64 + 1);
            let again = bumped(c.correlate(&event("a", "Synced", "ok"), t));
            assert_eq!(again.name, first.name);
            assert_eq!(again.count, count);
            assert_eq!(again.message, "ok");
        }
        // Another message, reason or object is another Event.
        let other = created(c.correlate(&event("a", "Synced", "other"), t0));
        assert_ne!(other.name, first.name);
        created(c.correlate(&event("a", "Failed", "ok"), t0));
        created(c.correlate(&event("b", "Synced", "ok"), t0));
    }

    #[test]
    fn window_bounds_how_long_an_event_is_bumped() {
        let t0 = Instant::now();
        let mut c = Correlator::new(Duration::from_secs(60));
        let first = created(c.correlate(&event("a", "Synced", "ok"), t0));
        let t = t0 + Duration::from_secs(59);
        assert_eq!(bumped(c.correlate(&event("a", "Synced", "ok"), t)).count, 2);
        let t = t0 + Duration::from_secs(60);
        let fresh = created(c.correlate(&event("a", "Synced", "ok"), t));
        assert_ne!(fresh.name, first.name);
        assert_eq!(fresh.count, 1);
    }

    #[test]
    fn ten_distinct_messages_become_an_aggregate_that_further_events_bump() {
        let t0 = Instant::now();
        let mut c = Correlator::new(HOUR);
        for i in 0..9 {
            let msg = format!("propagated to member{i}");
            let write = created(c.correlate(&event("a", "Propagated", &msg), t0));
            assert_eq!(write.message, msg);
        }
        let aggregate =
            created(c.correlate(&event("a", "Propagated", "propagated to member9"), t0));
        assert_eq!(
            aggregate.message,
            "(combined from similar events): propagated to member9"
        );
        assert_eq!(aggregate.count, 1);
        let next = bumped(c.correlate(&event("a", "Propagated", "propagated to member10"), t0));
        assert_eq!(next.name, aggregate.name);
        assert_eq!(next.count, 2);
        assert_eq!(
            next.message,
            "(combined from similar events): propagated to member10"
        );
        // A message seen before the aggregation also goes to the aggregate now.
        let repeat = bumped(c.correlate(&event("a", "Propagated", "propagated to member0"), t0));
        assert_eq!(repeat.name, aggregate.name);
        assert_eq!(repeat.count, 3);
        // Other groups are not aggregated.
        let other = created(c.correlate(&event("a", "Failed", "propagated to member0"), t0));
        assert_eq!(other.message, "propagated to member0");
        let other = created(c.correlate(&event("b", "Propagated", "propagated to member11"), t0));
        assert_eq!(other.message, "propagated to member11");
    }

    #[test]
    fn aggregation_resets_after_600s_without_an_event() {
        let t0 = Instant::now();
        let mut c = Correlator::new(HOUR);
        for i in 0..10 {
            c.correlate(&event("a", "Propagated", &format!("m{i}")), t0);
        }
        // Exactly 600 s later the group's record still holds, and the event refreshes it.
        let t1 = t0 + AGGREGATE_INTERVAL;
        let write = bumped(c.correlate(&event("a", "Propagated", "m10"), t1));
        assert!(write.message.starts_with(AGGREGATE_PREFIX));
        let write_name = write.name;
        // More than 600 s after the group's last event, it starts afresh.
        let t2 = t1 + AGGREGATE_INTERVAL + Duration::from_secs(1);
        let write = created(c.correlate(&event("a", "Propagated", "m11"), t2));
        assert_eq!(write.message, "m11");
        for i in 12..20 {
            let msg = format!("m{i}");
            assert_eq!(
                created(c.correlate(&event("a", "Propagated", &msg), t2)).message,
                msg
            );
        }
        // The tenth distinct message since the reset aggregates again, into the group's
        // aggregate Event while that is within the dedupe window.
        let again = bumped(c.correlate(&event("a", "Propagated", "m20"), t2));
        assert_eq!(again.message, "(combined from similar events): m20");
        assert_eq!(again.name, write_name);
        assert_eq!(again.count, 3);
    }

    #[test]
    fn spam_filter_drops_the_26th_event_about_one_object() {
        let t0 = Instant::now();
        let mut c = Correlator::new(HOUR);
        for i in 0..25u64 {
            let t = t0 + Duration::from_millis(i);
            let decision = c.correlate(&event("a", "Synced", "ok"), t);
            assert_ne!(decision, Decision::Drop, "event {i}");
        }
        let t = t0 + Duration::from_millis(25);
        assert_eq!(c.correlate(&event("a", "Synced", "ok"), t), Decision::Drop);
        // The bucket is per object and reason: another controller's reason about it passes, ...
        created(c.correlate(&event("a", "Failed", "boom"), t));
        // ... while another object's events pass.
        created(c.correlate(&event("b", "Synced", "ok"), t));
        for _ in 0..24 {
            bumped(c.correlate(&event("b", "Synced", "ok"), t));
        }
        assert_eq!(c.correlate(&event("b", "Synced", "ok"), t), Decision::Drop);
    }

    #[test]
    fn spam_filter_tokens_refill_every_300s() {
        let t0 = Instant::now();
        let mut c = Correlator::new(HOUR);
        for _ in 0..25 {
            assert_ne!(c.correlate(&event("a", "Synced", "ok"), t0), Decision::Drop);
        }
        assert_eq!(c.correlate(&event("a", "Synced", "ok"), t0), Decision::Drop);
        let t = t0 + SPAM_REFILL - Duration::from_secs(1);
        assert_eq!(c.correlate(&event("a", "Synced", "ok"), t), Decision::Drop);
        // One token after 300 s; the bump carries the dropped events' count too.
        let t = t0 + SPAM_REFILL;
        assert_eq!(
            bumped(c.correlate(&event("a", "Synced", "ok"), t)).count,
            28
        );
        assert_eq!(c.correlate(&event("a", "Synced", "ok"), t), Decision::Drop);
        // A dropped new event leaves no trace: once allowed, it is created.
        assert_eq!(
            c.correlate(&event("a", "Synced", "other"), t),
            Decision::Drop
        );
        let t = t0 + SPAM_REFILL * 2;
        assert_eq!(
            created(c.correlate(&event("a", "Synced", "other"), t)).count,
            1
        );
        // A long quiet spell fills the bucket, but never beyond the burst.
        let t = t0 + SPAM_REFILL * 100;
        for i in 0..25 {
            let decision = c.correlate(&event("a", "Synced", &format!("{i}")), t);
            assert_ne!(decision, Decision::Drop, "event {i}");
        }
        assert_eq!(c.correlate(&event("a", "Synced", "x"), t), Decision::Drop);
    }

    #[test]
    fn cluster_scoped_objects_events_live_in_default() {
        let mut c = Correlator::new(HOUR);
        let mut req = event("cluster-a", "Ready", "ready");
        req.involved.namespace = None;
        assert_eq!(
            created(c.correlate(&req, Instant::now())).namespace,
            "default"
        );
    }

    #[test]
    fn caches_stay_bounded() {
        let t0 = Instant::now();
        let mut c = Correlator::with_limit(HOUR, 8);
        for i in 0..100u64 {
            let t = t0 + Duration::from_millis(i);
            created(c.correlate(&event(&format!("o{i}"), "Synced", "ok"), t));
        }
        assert!(c.groups.len() <= 8);
        assert!(c.series.len() <= 8);
        assert!(c.buckets.len() <= 8);
        // The most recent entries survive.
        let t = t0 + Duration::from_millis(100);
        assert_eq!(
            bumped(c.correlate(&event("o99", "Synced", "ok"), t)).count,
            2
        );
    }

    #[test]
    fn lru_prunes_the_least_recently_used() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut lru = Lru::new(4);
        for (i, key) in ["a", "b", "c", "d"].into_iter().enumerate() {
            lru.insert(key, i, at(i as u64));
        }
        assert!(lru.get_mut(&"a", at(10)).is_some());
        lru.insert("e", 4, at(11));
        assert_eq!(lru.len(), 4);
        assert!(lru.get_mut(&"b", at(12)).is_none());
        for key in ["a", "c", "d", "e"] {
            assert!(lru.get_mut(&key, at(12)).is_some(), "{key}");
        }
    }
}
