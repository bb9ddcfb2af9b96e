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
/// Pause before reopening a broken watch when the previous attempt failed at once.
const REWATCH_BACKOFF: Duration = Duration::from_millis(250);

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
    loop {
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
                tracing::warn!(error = %e, endpoint = client.current_endpoint(), "opening the etcd watch");
                tokio::time::sleep(REWATCH_BACKOFF).await;
                continue;
            }
        };
        tracing::debug!(from, endpoint = client.current_endpoint(), "following etcd");
        loop {
            match stream.message().await {
                Ok(Some(response)) => {
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
                                tokio::time::sleep(REWATCH_BACKOFF).await;
                            }
                        }
                        break;
                    }
                    if response.canceled {
                        tracing::warn!(reason = %response.cancel_reason, "etcd cancelled the watch");
                        tokio::time::sleep(REWATCH_BACKOFF).await;
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
                    tokio::time::sleep(REWATCH_BACKOFF).await;
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
    requested: std::sync::atomic::AtomicU64,
    /// The tickets up to which the last published answer holds, and the answer.
    published: tokio::sync::watch::Sender<(u64, Result<Revision, String>)>,
    fetching: Arc<tokio::sync::Mutex<()>>,
}

impl RevisionFetcher {
    fn new(client: Client, prefix: Arc<str>) -> Self {
        Self {
            client,
            probe: prefix.as_bytes().to_vec(),
            requested: std::sync::atomic::AtomicU64::new(0),
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
                    return answer.clone().map_err(StorageError::Unavailable);
                }
            }
            if let Ok(guard) = Arc::clone(&self.fetching).try_lock_owned() {
                // Every ticket handed out so far was taken before this call starts.
                let upto = self.requested.load(Ordering::SeqCst);
                let client = self.client.clone();
                let probe = self.probe.clone();
                let published = self.published.clone();
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
                        .map_err(|e| e.to_string())
                        .and_then(|r| {
                            header_revision(r.header.as_ref())
                                .and_then(to_revision)
                                .map_err(|e| e.to_string())
                        });
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

    /// Runs `txn`; on failure returns the key's current state, read by the failure branch.
    async fn run(&self, txn: TxnRequest) -> Result<(TxnResponse, Option<KeyValue>), StorageError> {
        let response = self.client.txn(txn).await?;
        let current = if response.succeeded {
            None
        } else {
            response.responses.first().and_then(|r| match &r.response {
                Some(response_op::Response::Range(range)) => range.kvs.first().cloned(),
                _ => None,
            })
        };
        Ok((response, current))
    }

    /// Writes `value` at `key` when `compare` holds.
    async fn put(
        &self,
        key: String,
        mut value: Value,
        compare: Compare,
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
        let (response, current) = self
            .run(TxnRequest {
                compare: vec![compare],
                success: vec![RequestOp {
                    request: Some(request_op::Request::Put(PutRequest {
                        key: etcd_key.clone(),
                        value: bytes.clone(),
                    })),
                }],
                failure: vec![range_of(etcd_key)],
            })
            .await?;
        let revision = if response.succeeded {
            to_revision(header_revision(response.header.as_ref())?)?
        } else {
            match current {
                // A retried call whose first attempt had written (the client retries calls
                // that failed in flight): the store holds exactly this write.
                Some(kv) if kv.value == bytes => to_revision(kv.mod_revision)?,
                other => return Ok(Err(other)),
            }
        };
        let object = stamp(&key, value, revision)?;
        self.written.lock().insert(revision, Arc::clone(&object));
        Ok(Ok(object))
    }
}

fn range_of(key: Vec<u8>) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::Range(RangeRequest {
            key,
            ..RangeRequest::default()
        })),
    }
}

fn precondition(key: &[u8], expected: Option<Revision>) -> Compare {
    match expected.and_then(|e| i64::try_from(e).ok()) {
        Some(revision) => Compare::modified_at(key, revision),
        None => Compare::exists(key),
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
                let compare = Compare::absent(&self.etcd_key(&key));
                match self.put(key.clone(), value, compare).await? {
                    Ok(object) => Ok(object),
                    Err(_) => Err(StorageError::AlreadyExists(key)),
                }
            }
            WriteOp::Update {
                key,
                value,
                expected,
            } => {
                let compare = precondition(&self.etcd_key(&key), expected);
                match self.put(key.clone(), value, compare).await? {
                    Ok(object) => Ok(object),
                    Err(current) => Err(refused(key, expected, current)),
                }
            }
            WriteOp::Delete { key, expected } => {
                let etcd_key = self.etcd_key(&key);
                let (response, current) = self
                    .run(TxnRequest {
                        compare: vec![precondition(&etcd_key, expected)],
                        success: vec![RequestOp {
                            request: Some(request_op::Request::DeleteRange(DeleteRangeRequest {
                                key: etcd_key.clone(),
                                range_end: Vec::new(),
                                prev_kv: true,
                            })),
                        }],
                        failure: vec![range_of(etcd_key)],
                    })
                    .await?;
                if !response.succeeded {
                    return Err(refused(key, expected, current));
                }
                let revision = header_revision(response.header.as_ref())?;
                let deleted = response.responses.first().and_then(|r| match &r.response {
                    Some(response_op::Response::DeleteRange(d)) => d.prev_kvs.first(),
                    _ => None,
                });
                match deleted {
                    Some(kv) => Ok(object_of(&self.prefix, kv, revision)?),
                    None => Err(StorageError::NotFound(key)),
                }
            }
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
