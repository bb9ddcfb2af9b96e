//! [`EtcdBackend`]: writes as etcd transactions, the cache fed by one etcd watch, consistent
//! reads by etcd's current revision, and periodic compaction.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use flotilla_storage::{
    Backend, Cached, EventType, Feed, HistoryLimits, Revision, Snapshot, StorageError,
    StoredObject, WatchEvent, WriteOp, check_object, stamp,
};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::task::JoinHandle;

use crate::EtcdError;
use crate::rpc::{
    Client, Compare, ConnectOptions, DeleteRangeRequest, KeyValue, PutRequest, RangeRequest,
    RequestOp, TxnRequest, TxnResponse, WatchCreateRequest, prefix_end, request_op, response_op,
};

/// A [`flotilla_storage::Storage`] on etcd.
pub type EtcdStorage = Cached<EtcdBackend>;

/// Where and how the objects are kept in etcd.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    pub connect: ConnectOptions,
    /// Prepended to every storage key (`/registry/flotilla/host` + `/apps/deployments/...`),
    /// so several servers can share one etcd.
    pub prefix: String,
    /// The watch history the cache keeps.
    pub history: HistoryLimits,
    /// How often etcd's history is compacted, to the revision seen one interval earlier
    /// (kube-apiserver's default is 5 minutes). Zero: never.
    pub compaction_interval: Duration,
}

impl EtcdOptions {
    pub fn new(endpoints: Vec<String>, prefix: impl Into<String>) -> Self {
        Self {
            connect: ConnectOptions {
                endpoints,
                ..ConnectOptions::default()
            },
            prefix: prefix.into(),
            history: HistoryLimits::default(),
            compaction_interval: Duration::from_secs(300),
        }
    }
}

/// Objects per page when loading the cache.
const PAGE: i64 = 1000;
/// Pauses between attempts to reopen a broken watch that keep failing (the first goes to
/// the next member at once).
const REWATCH_BACKOFF: Duration = Duration::from_millis(50);
const MAX_REWATCH_BACKOFF: Duration = Duration::from_millis(250);

/// The durable store under an [`EtcdStorage`]'s cache.
pub struct EtcdBackend {
    client: Client,
    prefix: Arc<str>,
    revisions: RevisionFetcher,
    /// Objects this server wrote, by revision, until the watch delivers them: the cache takes
    /// them instead of parsing the JSON etcd sends back.
    written: Arc<Mutex<BTreeMap<Revision, Arc<StoredObject>>>>,
    tasks: Vec<JoinHandle<()>>,
}

/// Connects to etcd, loads every object under `opts.prefix` into a new cache, and starts
/// following etcd from there.
pub async fn open(opts: EtcdOptions) -> Result<EtcdStorage, StorageError> {
    let client = Client::new(&opts.connect)?;
    let prefix: Arc<str> = Arc::from(opts.prefix.trim_end_matches('/'));
    let snapshot = load(&client, &prefix).await?;
    tracing::info!(
        endpoint = client.current_endpoint(),
        prefix = %prefix,
        objects = snapshot.objects.len(),
        revision = snapshot.revision,
        "loaded the etcd store"
    );
    Cached::start(snapshot, opts.history, |feed| {
        let written = Arc::new(Mutex::new(BTreeMap::new()));
        let mut tasks = vec![tokio::spawn(follow(
            client.clone(),
            Arc::clone(&prefix),
            feed.clone(),
            Arc::clone(&written),
        ))];
        if !opts.compaction_interval.is_zero() {
            tasks.push(tokio::spawn(compact_periodically(
                client.clone(),
                feed,
                opts.compaction_interval,
            )));
        }
        Ok(EtcdBackend {
            revisions: RevisionFetcher::new(client.clone(), Arc::clone(&prefix)),
            client,
            prefix,
            written,
            tasks,
        })
    })
}

/// Every object under `prefix` at one revision, paging through etcd.
async fn load(client: &Client, prefix: &str) -> Result<Snapshot, StorageError> {
    let end = prefix_end(prefix.as_bytes());
    let mut key = prefix.as_bytes().to_vec();
    let mut revision = 0;
    let mut objects = Vec::new();
    loop {
        let page = client
            .range(RangeRequest {
                key: key.clone(),
                range_end: end.clone(),
                limit: PAGE,
                revision,
                ..RangeRequest::default()
            })
            .await?;
        if revision == 0 {
            revision = header_revision(page.header.as_ref())?;
        }
        for kv in &page.kvs {
            objects.push(object_of(prefix, kv, kv.mod_revision)?);
        }
        match page.kvs.last() {
            Some(last) if page.more => {
                key = last.key.clone();
                key.push(0);
            }
            _ => break,
        }
    }
    let revision = to_revision(revision)?;
    Ok(Snapshot {
        objects,
        revision,
        compacted: revision,
        history: Vec::new(),
    })
}

fn header_revision(header: Option<&crate::rpc::ResponseHeader>) -> Result<i64, EtcdError> {
    header
        .map(|h| h.revision)
        .ok_or_else(|| EtcdError::Protocol("a response without a header".to_owned()))
}

fn to_revision(revision: i64) -> Result<Revision, EtcdError> {
    Revision::try_from(revision)
        .map_err(|_| EtcdError::Protocol(format!("a negative revision {revision}")))
}

/// The storage key of an etcd key under `prefix`, if it is one.
fn storage_key<'a>(prefix: &str, key: &'a [u8]) -> Option<&'a str> {
    let rest = key.strip_prefix(prefix.as_bytes())?;
    if !rest.starts_with(b"/") {
        return None;
    }
    std::str::from_utf8(rest).ok()
}

/// The stored object of `kv` (stamped with `revision`: its own mod revision, or a delete's).
fn object_of(prefix: &str, kv: &KeyValue, revision: i64) -> Result<Arc<StoredObject>, EtcdError> {
    let key = storage_key(prefix, &kv.key).ok_or_else(|| {
        EtcdError::Protocol(format!(
            "a key outside the prefix: {}",
            String::from_utf8_lossy(&kv.key)
        ))
    })?;
    let value: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| EtcdError::Protocol(format!("an object at {key} that is not JSON: {e}")))?;
    stamp(key, value, to_revision(revision)?).map_err(|e| EtcdError::Protocol(e.to_string()))
}

/// Follows etcd from the cache's revision for as long as the storage lives: applies the
/// events under the prefix, moves the revision for the others, reconnects (to the next
/// member) when the stream breaks, and starts over from a fresh load when the events it
/// needs were compacted.
async fn follow(
    client: Client,
    prefix: Arc<str>,
    feed: Feed,
    written: Arc<Mutex<BTreeMap<Revision, Arc<StoredObject>>>>,
) {
    // Writes are acknowledged once this watch delivers them: after a member is lost it
    // reopens at once on the next member, then every `pause` (growing while nothing works).
    let mut pause = Duration::ZERO;
    let mut failing = false;
    loop {
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
        pause = (pause * 2).clamp(REWATCH_BACKOFF, MAX_REWATCH_BACKOFF);
        let from = feed.revision() + 1;
        let create = WatchCreateRequest {
            // The whole keyspace: see the crate docs.
            key: vec![0],
            range_end: vec![0],
            start_revision: i64::try_from(from).unwrap_or(i64::MAX),
            prev_kv: false,
        };
        let mut stream = match client.watch(create).await {
            Ok(stream) => stream,
            Err(e) => {
                if !failing {
                    tracing::warn!(error = %e, endpoint = client.current_endpoint(), "opening the etcd watch");
                } else {
                    tracing::debug!(error = %e, endpoint = client.current_endpoint(), "opening the etcd watch");
                }
                failing = true;
                continue;
            }
        };
        tracing::debug!(from, endpoint = client.current_endpoint(), "following etcd");
        loop {
            match stream.message().await {
                Ok(Some(response)) => {
                    if failing {
                        tracing::info!(
                            endpoint = client.current_endpoint(),
                            "following etcd again"
                        );
                        failing = false;
                    }
                    pause = Duration::ZERO;
                    if response.compact_revision != 0 {
                        tracing::warn!(
                            needed = from,
                            compacted = response.compact_revision,
                            "etcd compacted events the cache had not seen; reloading"
                        );
                        match load(&client, &prefix).await {
                            Ok(snapshot) => feed.reset(snapshot),
                            Err(e) => {
                                tracing::warn!(error = %e, "reloading from etcd");
                                pause = REWATCH_BACKOFF;
                            }
                        }
                        break;
                    }
                    if response.canceled {
                        tracing::warn!(reason = %response.cancel_reason, "etcd cancelled the watch");
                        pause = REWATCH_BACKOFF;
                        break;
                    }
                    if !response.events.is_empty() {
                        apply(&prefix, &feed, &written, response.events);
                    }
                }
                Ok(None) => {
                    tracing::warn!(endpoint = client.current_endpoint(), "the etcd watch ended");
                    client.skip_current();
                    break;
                }
                Err(status) => {
                    tracing::warn!(error = %status, endpoint = client.current_endpoint(), "the etcd watch failed");
                    client.skip_current();
                    break;
                }
            }
        }
    }
}

/// Turns one batch of etcd events into cache events and applies them.
fn apply(
    prefix: &str,
    feed: &Feed,
    written: &Mutex<BTreeMap<Revision, Arc<StoredObject>>>,
    events: Vec<crate::rpc::Event>,
) {
    let mut last = feed.revision();
    // Keys changed earlier in this batch, and their state after it.
    let mut batch: HashMap<String, Option<Arc<StoredObject>>> = HashMap::new();
    let mut out = Vec::with_capacity(events.len());
    for event in events {
        let Some(kv) = event.kv else { continue };
        let Ok(revision) = to_revision(kv.mod_revision) else {
            continue;
        };
        last = last.max(revision);
        let Some(key) = storage_key(prefix, &kv.key) else {
            continue;
        };
        let prev = match batch.get(key) {
            Some(state) => state.clone(),
            None => feed.current(key),
        };
        let delete = event.r#type == crate::rpc::EventType::Delete as i32;
        let object = if delete {
            let Some(prev) = &prev else {
                // Deleting what the cache never held: nothing to tell anyone.
                continue;
            };
            match stamp(key, Value::clone(&prev.value()), revision) {
                Ok(object) => object,
                Err(e) => {
                    tracing::error!(key, error = %e, "stamping a deleted object");
                    continue;
                }
            }
        } else {
            let mine = written.lock().remove(&revision);
            match mine.filter(|o| o.key == key) {
                Some(object) => object,
                None => match object_of(prefix, &kv, kv.mod_revision) {
                    Ok(object) => object,
                    Err(e) => {
                        tracing::error!(key, error = %e, "skipping an object etcd holds");
                        continue;
                    }
                },
            }
        };
        let event_type = match (delete, &prev) {
            (true, _) => EventType::Deleted,
            (false, Some(_)) => EventType::Modified,
            (false, None) => EventType::Added,
        };
        batch.insert(key.to_owned(), (!delete).then(|| Arc::clone(&object)));
        out.push(WatchEvent {
            event_type,
            object,
            prev,
        });
    }
    if !out.is_empty() {
        feed.apply(out);
    }
    feed.advance(last);
    // What the watch has passed will never be looked up.
    let mut written = written.lock();
    let later = written.split_off(&(last + 1));
    *written = later;
}

/// Compacts etcd every `interval` to the revision the cache had reached one interval
/// earlier, so a replica whose watch broke can resume within that window. Several
/// replicas doing this is harmless: compacting an already compacted revision fails and is
/// ignored.
async fn compact_periodically(client: Client, feed: Feed, interval: Duration) {
    let mut previous: Option<Revision> = None;
    let mut ticks = tokio::time::interval(interval);
    ticks.tick().await;
    loop {
        ticks.tick().await;
        if let Some(revision) = previous.and_then(|r| i64::try_from(r).ok()) {
            match client.compact(revision).await {
                Ok(_) => tracing::info!(revision, "compacted etcd"),
                Err(e) => tracing::debug!(revision, error = %e, "compacting etcd"),
            }
        }
        previous = Some(feed.revision());
    }
}

/// Answers "what is etcd's revision now" for consistent reads, with one linearizable call
/// shared by every read that arrived before the call started (reads arriving during a call
/// wait for the next one, which then serves them all).
struct RevisionFetcher {
    client: Client,
    /// A key no object has (the prefix itself): reading it is the cheapest linearizable read.
    probe: Vec<u8>,
    /// The last ticket handed out.
    requested: Arc<std::sync::atomic::AtomicU64>,
    /// The tickets up to which the last published answer holds, and the answer.
    published: tokio::sync::watch::Sender<(u64, Result<Revision, Arc<EtcdError>>)>,
    fetching: Arc<tokio::sync::Mutex<()>>,
}

impl RevisionFetcher {
    fn new(client: Client, prefix: Arc<str>) -> Self {
        Self {
            client,
            probe: prefix.as_bytes().to_vec(),
            requested: Arc::new(std::sync::atomic::AtomicU64::new(0)),
            published: tokio::sync::watch::Sender::new((0, Ok(0))),
            fetching: Arc::new(tokio::sync::Mutex::new(())),
        }
    }

    async fn current(&self) -> Result<Revision, StorageError> {
        use std::sync::atomic::Ordering;
        let ticket = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let mut answers = self.published.subscribe();
        loop {
            {
                let (covered, answer) = &*answers.borrow_and_update();
                if *covered >= ticket {
                    return answer.clone().map_err(|e| StorageError::from(&*e));
                }
            }
            if let Ok(guard) = Arc::clone(&self.fetching).try_lock_owned() {
                // Every ticket handed out so far was taken before this call starts.
                let upto = self.requested.load(Ordering::SeqCst);
                let client = self.client.clone();
                let probe = self.probe.clone();
                let published = self.published.clone();
                let requested = Arc::clone(&self.requested);
                // In a task of its own: a read that gives up must not strand the others.
                tokio::spawn(async move {
                    let answer = client
                        .range(RangeRequest {
                            key: probe,
                            limit: 1,
                            keys_only: true,
                            ..RangeRequest::default()
                        })
                        .await
                        .and_then(|r| header_revision(r.header.as_ref()).and_then(to_revision))
                        .map_err(Arc::new);
                    // A failure also answers the reads that came during the call: an answer
                    // must be newer than its read, a failure need not be (the next call would
                    // most likely fail too, after its own timeout).
                    let upto = if answer.is_err() {
                        requested.load(Ordering::SeqCst)
                    } else {
                        upto
                    };
                    // Unlocked before publishing: a reader that missed this answer must
                    // find the lock free (or taken by a newer call that will publish).
                    drop(guard);
                    drop(published.send_replace((upto, answer)));
                });
            }
            if answers.changed().await.is_err() {
                return Err(StorageError::Closed);
            }
        }
    }
}

impl EtcdBackend {
    fn etcd_key(&self, key: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.prefix.len() + key.len());
        out.extend_from_slice(self.prefix.as_bytes());
        out.extend_from_slice(key.as_bytes());
        out
    }

    /// Runs `op` on `etcd_key` if `expected` holds of it: the answer, whether an earlier
    /// attempt of it may have been applied, and on failure the key's current state (read by
    /// the transaction's failure branch).
    async fn run(
        &self,
        etcd_key: &[u8],
        expected: Expected,
        op: request_op::Request,
    ) -> Result<Ran, EtcdError> {
        let reply = self
            .client
            .txn(TxnRequest {
                compare: vec![expected.compare(etcd_key)],
                success: vec![RequestOp { request: Some(op) }],
                failure: vec![RequestOp {
                    request: Some(request_op::Request::Range(RangeRequest {
                        key: etcd_key.to_vec(),
                        ..RangeRequest::default()
                    })),
                }],
            })
            .await?;
        let current = if reply.response.succeeded {
            None
        } else {
            reply
                .response
                .responses
                .first()
                .and_then(|r| match &r.response {
                    Some(response_op::Response::Range(range)) => range.kvs.first().cloned(),
                    _ => None,
                })
        };
        Ok(Ran {
            response: reply.response,
            uncertain: reply.uncertain,
            current,
        })
    }

    /// Writes `value` at `key` when `compare` holds; `expected` is what `compare` checks
    /// (`Created`: that the key is absent).
    async fn put(
        &self,
        key: String,
        mut value: Value,
        expected: Expected,
    ) -> Result<Result<Arc<StoredObject>, Option<KeyValue>>, StorageError> {
        check_object(&value)?;
        // Stored without its resourceVersion: etcd's mod revision is that.
        if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("resourceVersion");
        }
        let bytes = Bytes::from(
            serde_json::to_vec(&value)
                .map_err(|e| StorageError::Backend(format!("serialising {key}: {e}")))?,
        );
        let etcd_key = self.etcd_key(&key);
        let put = request_op::Request::Put(PutRequest {
            key: etcd_key.clone(),
            value: bytes.clone(),
        });
        let ran = self
            .run(&etcd_key, expected, put)
            .await
            .map_err(|e| match e {
                EtcdError::TooLarge(reason) => StorageError::TooLarge(format!(
                    "the object is {} bytes encoded, over etcd's request limit \
                     (--max-request-bytes): {reason}",
                    bytes.len()
                )),
                other => other.into(),
            })?;
        let revision = if ran.response.succeeded {
            to_revision(header_revision(ran.response.header.as_ref())?)?
        } else if !ran.uncertain {
            return Ok(Err(ran.current));
        } else {
            // An earlier attempt was lost in flight: the refusal may be its own effect.
            match self
                .applied_put(&key, &etcd_key, &bytes, expected, ran.current)
                .await?
            {
                Applied::Yes(revision) => to_revision(revision)?,
                Applied::No(current) => return Ok(Err(current)),
            }
        };
        let object = stamp(&key, value, revision)?;
        self.written.lock().insert(revision, Arc::clone(&object));
        Ok(Ok(object))
    }

    /// Whether an earlier, lost attempt of a put of `bytes` was applied, given the state
    /// `current` that refused the last attempt. Both attempts carried the same compare, so at
    /// most one of them was applied: a create's object is ours when it was created with our
    /// bytes (they hold the uid this request generated); an update's when the first change
    /// after the revision it expected wrote our bytes.
    async fn applied_put(
        &self,
        key: &str,
        etcd_key: &[u8],
        bytes: &Bytes,
        expected: Expected,
        current: Option<KeyValue>,
    ) -> Result<Applied, StorageError> {
        match expected {
            Expected::Created => {
                let Some(kv) = current else {
                    return Ok(Applied::No(None));
                };
                let created = if kv.create_revision == kv.mod_revision {
                    Some(kv.value.clone())
                } else {
                    let then = self
                        .client
                        .range(RangeRequest {
                            key: etcd_key.to_vec(),
                            revision: kv.create_revision,
                            ..RangeRequest::default()
                        })
                        .await
                        .map_err(|e| {
                            outcome_unknown(key, format!("reading its first version failed ({e})"))
                        })?;
                    then.kvs.into_iter().next().map(|first| first.value)
                };
                Ok(if created.as_ref() == Some(bytes) {
                    Applied::Yes(kv.create_revision)
                } else {
                    Applied::No(Some(kv))
                })
            }
            Expected::At(revision) => {
                let change = self.first_change(key, etcd_key, revision).await?;
                match change.kv {
                    Some(kv)
                        if change.r#type == crate::rpc::EventType::Put as i32
                            && kv.value == *bytes =>
                    {
                        Ok(Applied::Yes(kv.mod_revision))
                    }
                    _ => Ok(Applied::No(current)),
                }
            }
            // An unconditional update retried may have been applied twice, with the same
            // bytes; a refusal means the object is gone either way.
            Expected::Exists => Ok(Applied::No(current)),
        }
    }

    /// Deletes `key` when `expected` holds: the deleted object, stamped with the revision of
    /// its deletion.
    async fn remove(
        &self,
        key: String,
        expected: Option<Revision>,
    ) -> Result<Arc<StoredObject>, StorageError> {
        let expected = Expected::of(expected);
        let etcd_key = self.etcd_key(&key);
        let delete = request_op::Request::DeleteRange(DeleteRangeRequest {
            key: etcd_key.clone(),
            range_end: Vec::new(),
            prev_kv: true,
        });
        let ran = self.run(&etcd_key, expected, delete).await?;
        if ran.response.succeeded {
            let revision = header_revision(ran.response.header.as_ref())?;
            let deleted = ran
                .response
                .responses
                .first()
                .and_then(|r| match &r.response {
                    Some(response_op::Response::DeleteRange(d)) => d.prev_kvs.first(),
                    _ => None,
                });
            return match deleted {
                Some(kv) => Ok(object_of(&self.prefix, kv, revision)?),
                None => Err(StorageError::NotFound(key)),
            };
        }
        if let (true, Expected::At(revision)) = (ran.uncertain, expected) {
            // An earlier attempt was lost in flight: it deleted the object if the first change
            // after the revision it expected is a deletion (whoever's it was, the version this
            // call meant to delete is gone, as if it had been this call's).
            let change = self.first_change(&key, &etcd_key, revision).await?;
            if change.r#type == crate::rpc::EventType::Delete as i32 {
                let (Some(deleted), Some(prev)) = (change.kv, change.prev_kv) else {
                    let why = "etcd did not return the deleted value".to_owned();
                    return Err(outcome_unknown(&key, why));
                };
                return Ok(object_of(&self.prefix, &prev, deleted.mod_revision)?);
            }
        }
        Err(refused(key, expected.revision(), ran.current))
    }

    /// The first change of `key` after `revision`, to tell whether a lost write made it.
    async fn first_change(
        &self,
        key: &str,
        etcd_key: &[u8],
        revision: i64,
    ) -> Result<crate::rpc::Event, StorageError> {
        self.client
            .first_change(etcd_key, revision)
            .await
            .map_err(|e| outcome_unknown(key, format!("reading its history failed ({e})")))?
            .ok_or_else(|| outcome_unknown(key, "its history is compacted".to_owned()))
    }
}

/// A lost write to `key` whose outcome cannot be told (`why`): kube-apiserver's 504.
fn outcome_unknown(key: &str, why: String) -> StorageError {
    StorageError::Timeout(format!(
        "etcd lost the write to {key} in flight and {why}: it may or may not have been applied"
    ))
}

/// A transaction's outcome (see [`EtcdBackend::run`]).
struct Ran {
    response: TxnResponse,
    uncertain: bool,
    current: Option<KeyValue>,
}

/// Whether a lost attempt was applied: at which revision, or the state that refused.
enum Applied {
    Yes(i64),
    No(Option<KeyValue>),
}

/// What a write expects of the key's current state.
#[derive(Clone, Copy)]
enum Expected {
    /// Absent (a create).
    Created,
    /// Last written at this revision.
    At(i64),
    /// Present, whatever its revision.
    Exists,
}

impl Expected {
    fn of(revision: Option<Revision>) -> Self {
        match revision.and_then(|e| i64::try_from(e).ok()) {
            Some(revision) => Expected::At(revision),
            None => Expected::Exists,
        }
    }

    fn compare(self, key: &[u8]) -> Compare {
        match self {
            Expected::Created => Compare::absent(key),
            Expected::At(revision) => Compare::modified_at(key, revision),
            Expected::Exists => Compare::exists(key),
        }
    }

    fn revision(self) -> Option<Revision> {
        match self {
            Expected::At(revision) => Revision::try_from(revision).ok(),
            _ => None,
        }
    }
}

fn refused(key: String, expected: Option<Revision>, current: Option<KeyValue>) -> StorageError {
    match (current, expected) {
        (None, _) => StorageError::NotFound(key),
        (Some(kv), Some(expected)) => StorageError::Conflict {
            key,
            expected,
            actual: Revision::try_from(kv.mod_revision).unwrap_or_default(),
        },
        // Exists now but the compare said it did not: it was created in between.
        (Some(_), None) => StorageError::NotFound(key),
    }
}

#[async_trait::async_trait]
impl Backend for EtcdBackend {
    async fn write(&self, op: WriteOp) -> Result<Arc<StoredObject>, StorageError> {
        match op {
            WriteOp::Create { key, value } => {
                match self.put(key.clone(), value, Expected::Created).await? {
                    Ok(object) => Ok(object),
                    Err(_) => Err(StorageError::AlreadyExists(key)),
                }
            }
            WriteOp::Update {
                key,
                value,
                expected,
            } => match self.put(key.clone(), value, Expected::of(expected)).await? {
                Ok(object) => Ok(object),
                Err(current) => Err(refused(key, expected, current)),
            },
            WriteOp::Delete { key, expected } => self.remove(key, expected).await,
        }
    }

    fn compact(&self, revision: Revision) {
        let Ok(revision) = i64::try_from(revision) else {
            return;
        };
        let client = self.client.clone();
        tokio::spawn(async move {
            if let Err(e) = client.compact(revision).await {
                tracing::debug!(revision, error = %e, "compacting etcd");
            }
        });
    }

    fn shutdown(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }

    fn shared(&self) -> bool {
        true
    }

    async fn consistent_revision(&self) -> Result<Revision, StorageError> {
        self.revisions.current().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_keys_are_the_keys_under_the_prefix() {
        assert_eq!(
            storage_key("/registry/host", b"/registry/host/apps/deployments/a/b"),
            Some("/apps/deployments/a/b")
        );
        // A sibling prefix that merely starts with the same bytes is not ours.
        assert_eq!(storage_key("/registry/host", b"/registry/hostile/x"), None);
        assert_eq!(storage_key("/registry/host", b"/other"), None);
    }

    #[test]
    fn refusals_say_why() {
        let kv = KeyValue {
            mod_revision: 9,
            ..KeyValue::default()
        };
        assert!(matches!(
            refused("/k".into(), Some(3), Some(kv)),
            StorageError::Conflict {
                expected: 3,
                actual: 9,
                ..
            }
        ));
        assert!(matches!(
            refused("/k".into(), Some(3), None),
            StorageError::NotFound(_)
        ));
    }
}
