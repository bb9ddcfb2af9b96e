//! [`EmbeddedStorage`]: the default storage, the cache layer over [`RedbBackend`], one redb
//! file (`flotilla.redb`) in a data directory.
//!
//! ```text
//!  create/update/delete ──► request queue ──► writer thread (owns the redb Database)
//!   (async, await reply)                        1. take every queued request (≤ max_batch)
//!                                               2. validate + stamp against the cache + batch
//!                                               3. ONE write transaction, fsync commit
//!                                               4. feed the cache, which wakes watchers
//!   get/list/watch ◄── cache (memory) ◄──────── 5. answer each request
//! ```
//!
//! Tables: `objects` (key → revision, JSON), `events` (revision → encoded event, the retained
//! history) and `meta` (`revision`, `compacted`). On open, everything is loaded into the cache.
//! A write is answered only after its transaction is durable, and memory changes only after
//! that, so an acknowledged write survives `kill -9` and an unacknowledged one is never seen.
//! Revisions are consecutive here (one per write); the cache above does not rely on it.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};
use tokio::sync::oneshot;

use crate::backend::{self, Backend, Snapshot, WriteOp};
use crate::batch::prepare_batch;
use crate::cache::Feed;
use crate::cache::{Cached, HistoryLimits};
use crate::{EventType, Revision, StorageError, StoredObject, WatchEvent};

/// The database file inside the data directory.
const FILE_NAME: &str = "flotilla.redb";

/// key → (revision of the last write, JSON).
const OBJECTS: TableDefinition<&str, (u64, &[u8])> = TableDefinition::new("objects");
/// revision → event encoded by [`encode_event`].
const EVENTS: TableDefinition<u64, &[u8]> = TableDefinition::new("events");
/// `revision`: the last committed revision; `compacted`: events up to it are gone.
const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const META_REVISION: &str = "revision";
const META_COMPACTED: &str = "compacted";

/// Tuning of [`EmbeddedStorage`].
#[derive(Debug, Clone)]
pub struct EmbeddedOptions {
    /// How many events to retain for watch resumption (trimmed once 10% over).
    pub history: usize,
    /// The most bytes of object JSON the retained history may hold.
    pub history_bytes: usize,
    /// The most write requests grouped into one durable commit.
    pub max_batch: usize,
    /// How long the writer may wait for more requests before a commit, when the previous
    /// commit was shared by several writers (capped at half the previous commit's duration;
    /// zero disables lingering).
    pub max_linger: Duration,
    /// redb's page cache. Every read is served from the cache layer, so redb only needs the
    /// pages its write transactions touch; its default (1 GiB) would grow to hold the whole
    /// file beside the cache's copy of every object.
    pub page_cache: usize,
}

impl Default for EmbeddedOptions {
    fn default() -> Self {
        let limits = HistoryLimits::default();
        Self {
            history: limits.events,
            history_bytes: limits.bytes,
            max_batch: 1024,
            max_linger: Duration::from_millis(1),
            page_cache: 4 << 20,
        }
    }
}

/// Counters of the writer, to see how well writes are grouped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriterStats {
    /// Durable transactions committed.
    pub commits: u64,
    /// Writes acknowledged as committed (each consumed one revision).
    pub writes: u64,
    /// Time spent inside redb commits (writing pages and fsync).
    pub commit_time: Duration,
}

#[derive(Default)]
struct Counters {
    commits: AtomicU64,
    writes: AtomicU64,
    commit_nanos: AtomicU64,
}

/// The redb backend: one writer thread owning the database, grouping queued writes into
/// durable commits and feeding each committed batch to the cache before answering.
pub struct RedbBackend {
    /// `None` once shut down.
    requests: RwLock<Option<mpsc::Sender<Request>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    counters: Arc<Counters>,
}

/// The default storage: the cache over one redb file in a data directory. Dropping it
/// finishes the queued writes, closes the file and ends its watch streams.
pub type EmbeddedStorage = Cached<RedbBackend>;

enum Request {
    Write {
        op: WriteOp,
        reply: oneshot::Sender<Result<Arc<StoredObject>, StorageError>>,
    },
    /// Memory was compacted: delete the dropped events on disk too.
    Compact,
}

impl Cached<RedbBackend> {
    /// Opens (or creates) `dir/flotilla.redb` and loads it into memory.
    pub fn open(dir: &Path, opts: EmbeddedOptions) -> Result<Self, StorageError> {
        let path = dir.join(FILE_NAME);
        let open_error = |source: Box<dyn std::error::Error + Send + Sync>| StorageError::Open {
            path: path.display().to_string(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(|e| open_error(Box::new(e)))?;
        let mut builder = redb::Builder::new();
        builder.set_cache_size(opts.page_cache);
        let db = builder.create(&path).map_err(|e| open_error(Box::new(e)))?;
        create_tables(&db).map_err(backend_error)?;
        let snapshot = load(&db)?;
        let disk_compacted = snapshot.compacted;
        let limits = HistoryLimits {
            events: opts.history,
            bytes: opts.history_bytes,
        };
        Cached::start(snapshot, limits, |feed| {
            let (requests, queue) = mpsc::channel();
            let counters = Arc::new(Counters::default());
            let writer = Writer {
                counters: Arc::clone(&counters),
                db: Some(db),
                path,
                page_cache: opts.page_cache,
                feed,
                disk_compacted,
                max_batch: opts.max_batch.max(1),
                max_linger: opts.max_linger,
                recent_batches: VecDeque::with_capacity(RECENT_BATCHES),
                last_commit: Duration::ZERO,
            };
            let writer = std::thread::Builder::new()
                .name("flotilla-storage-writer".to_owned())
                .spawn(move || writer.run(queue))
                .map_err(|e| StorageError::Backend(format!("starting the writer thread: {e}")))?;
            Ok(RedbBackend {
                requests: RwLock::new(Some(requests)),
                writer: Mutex::new(Some(writer)),
                counters,
            })
        })
    }

    /// How many commits and writes the writer has done since opening.
    pub fn stats(&self) -> WriterStats {
        let counters = &self.backend().counters;
        WriterStats {
            commits: counters.commits.load(Ordering::Relaxed),
            writes: counters.writes.load(Ordering::Relaxed),
            commit_time: Duration::from_nanos(counters.commit_nanos.load(Ordering::Relaxed)),
        }
    }
}

impl RedbBackend {
    fn send(&self, request: Request) -> Result<(), StorageError> {
        self.requests
            .read()
            .as_ref()
            .ok_or(StorageError::Closed)?
            .send(request)
            .map_err(|_| StorageError::Closed)
    }
}

#[async_trait::async_trait]
impl Backend for RedbBackend {
    async fn write(&self, op: WriteOp) -> Result<Arc<StoredObject>, StorageError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Write { op, reply })?;
        answer.await.map_err(|_| StorageError::Closed)?
    }

    fn compact(&self, _revision: Revision) {
        // The writer deletes what the cache dropped in its next transaction. Losing that
        // deletion in a crash only leaves a longer history.
        let _ = self.send(Request::Compact);
    }

    fn shutdown(&self) {
        // Closing the queue lets the writer drain it and exit; joining releases the file lock
        // so the directory can be reopened right away.
        self.requests.write().take();
        if let Some(writer) = self.writer.lock().take()
            && writer.join().is_err()
        {
            tracing::error!("the storage writer thread panicked");
        }
    }
}

// === Writer ===

/// The single owner of the database: groups queued writes into durable commits.
struct Writer {
    /// `None` after a failed commit whose recovery failed; retried on the next batch.
    db: Option<Database>,
    path: PathBuf,
    page_cache: usize,
    feed: Feed,
    /// Events up to this revision are deleted on disk.
    disk_compacted: Revision,
    max_batch: usize,
    max_linger: Duration,
    /// Sizes (write requests) of the recent batches, newest last, and how long the previous
    /// commit took.
    recent_batches: VecDeque<usize>,
    last_commit: Duration,
    counters: Arc<Counters>,
}

/// A writer that lingers stops waiting once no request has arrived for this long.
const QUIET_GAP: Duration = Duration::from_micros(250);
/// How many recent batch sizes the linger target is taken from.
const RECENT_BATCHES: usize = 8;

type Reply = oneshot::Sender<Result<Arc<StoredObject>, StorageError>>;

impl Writer {
    fn run(mut self, queue: mpsc::Receiver<Request>) {
        let mut requests = Vec::new();
        while let Ok(first) = queue.recv() {
            requests.push(first);
            self.collect(&queue, &mut requests);
            self.process(std::mem::take(&mut requests));
        }
    }

    /// Adds what else is queued to `requests`: everything that arrived during the previous
    /// commit. When recent commits were shared by several writers, it also lingers briefly:
    /// the writers just answered are typically about to send their next request, and leaving
    /// them for the following commit splits a steady set of clients into two alternating
    /// half-size batches, halving throughput. It stops waiting once the batch is as large as
    /// the largest recent one (the steady set is back), when requests stop coming for
    /// [`QUIET_GAP`], or after `max_linger` (at most half the last commit's duration).
    fn collect(&self, queue: &mpsc::Receiver<Request>, requests: &mut Vec<Request>) {
        while requests.len() < self.max_batch {
            match queue.try_recv() {
                Ok(request) => requests.push(request),
                Err(_) => break,
            }
        }
        let enough = self
            .recent_batches
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            .min(self.max_batch);
        if enough < 2 {
            return;
        }
        let deadline = Instant::now() + self.max_linger.min(self.last_commit / 2);
        while requests.len() < enough {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match queue.recv_timeout((deadline - now).min(QUIET_GAP)) {
                Ok(request) => requests.push(request),
                // Quiet for a while, or the deadline passed, or shutting down.
                Err(_) => break,
            }
        }
    }

    fn process(&mut self, requests: Vec<Request>) {
        let mut ops = Vec::with_capacity(requests.len());
        let mut replies: Vec<Reply> = Vec::with_capacity(requests.len());
        for request in requests {
            if let Request::Write { op, reply } = request {
                ops.push(op);
                replies.push(reply);
            }
        }
        let results = prepare_batch(&self.feed, ops);
        let events: Vec<WatchEvent> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().cloned())
            .collect();
        let new_revision = events
            .last()
            .map_or_else(|| self.feed.revision(), |e| e.object.revision);
        // The history the cache dropped (by compaction or its own trimming) goes on disk too.
        let target = self.feed.compacted();
        let compact = (target > self.disk_compacted).then_some(target);

        if events.is_empty() && compact.is_none() {
            answer(replies, results, None);
            return;
        }
        if self.recent_batches.len() == RECENT_BATCHES {
            self.recent_batches.pop_front();
        }
        self.recent_batches.push_back(replies.len());
        let started = Instant::now();
        let committed = self
            .database()
            .map(|db| commit(db, &events, new_revision, compact));
        self.last_commit = started.elapsed();
        let outcome = match committed {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => {
                tracing::error!(error = %e, "storage commit failed");
                self.recover(&events, new_revision, compact, e)
            }
            Err(e) => Err(e),
        };
        match outcome {
            Ok(()) => {
                if let Some(upto) = compact {
                    self.disk_compacted = upto;
                }
                self.counters.commits.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .writes
                    .fetch_add(events.len() as u64, Ordering::Relaxed);
                let nanos = u64::try_from(self.last_commit.as_nanos()).unwrap_or(u64::MAX);
                self.counters
                    .commit_nanos
                    .fetch_add(nanos, Ordering::Relaxed);
                self.feed.apply(events);
                answer(replies, results, None);
            }
            Err(e) => answer(replies, results, Some(e)),
        }
    }

    /// The open database, reopening it after an earlier failure if the file still matches
    /// memory.
    fn database(&mut self) -> Result<&Database, StorageError> {
        if self.db.is_none() {
            let db = self.reopen()?;
            let (revision, compacted) = read_meta(&db)?;
            if revision != self.feed.revision() {
                return Err(StorageError::Backend(format!(
                    "the database is at revision {revision} but memory at {}; restart needed",
                    self.feed.revision()
                )));
            }
            self.disk_compacted = compacted;
            self.db = Some(db);
        }
        self.db.as_ref().ok_or(StorageError::Closed)
    }

    fn reopen(&self) -> Result<Database, StorageError> {
        let mut builder = redb::Builder::new();
        builder.set_cache_size(self.page_cache);
        builder.create(&self.path).map_err(backend_error)
    }

    /// After a failed commit redb refuses further writes until reopened, and the failed
    /// transaction may or may not have become durable. Reopen and look: if the batch is on
    /// disk it counts as committed (memory must follow the disk), otherwise it failed.
    fn recover(
        &mut self,
        events: &[WatchEvent],
        new_revision: Revision,
        compact: Option<Revision>,
        error: redb::Error,
    ) -> Result<(), StorageError> {
        let failed = StorageError::Backend(format!("commit failed: {error}"));
        self.db = None;
        let db = self.reopen()?;
        let (revision, compacted) = read_meta(&db)?;
        self.db = Some(db);
        if !events.is_empty() && revision == new_revision {
            tracing::warn!(revision, "the failed commit turned out durable; keeping it");
            return Ok(());
        }
        if revision != self.feed.revision() {
            self.db = None;
            return Err(failed);
        }
        self.disk_compacted = compacted;
        if events.is_empty() && compact.is_some_and(|upto| compacted >= upto) {
            // A compaction-only transaction: nothing to answer, and it did land.
            return Ok(());
        }
        Err(failed)
    }
}

/// Sends each request its result, or `failure` to every request when the commit failed.
fn answer(
    replies: Vec<Reply>,
    results: Vec<Result<WatchEvent, StorageError>>,
    failure: Option<StorageError>,
) {
    for (reply, result) in replies.into_iter().zip(results) {
        let result = match (&failure, result) {
            (_, Err(e)) => Err(e),
            (Some(e), Ok(_)) => Err(StorageError::Backend(e.to_string())),
            (None, Ok(event)) => Ok(event.object),
        };
        // The caller may have gone away; the write stands either way.
        let _ = reply.send(result);
    }
}

fn backend_error(e: impl std::fmt::Display) -> StorageError {
    StorageError::Backend(e.to_string())
}

fn create_tables(db: &Database) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    txn.open_table(OBJECTS)?;
    txn.open_table(EVENTS)?;
    txn.open_table(META)?;
    txn.commit()?;
    Ok(())
}

/// Writes a batch (and a history trim) in one durable transaction.
fn commit(
    db: &Database,
    events: &[WatchEvent],
    new_revision: Revision,
    compact: Option<Revision>,
) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    {
        let mut objects = txn.open_table(OBJECTS)?;
        let mut history = txn.open_table(EVENTS)?;
        let mut encoded = Vec::new();
        for event in events {
            let object = &event.object;
            match event.event_type {
                EventType::Deleted => {
                    objects.remove(object.key.as_str())?;
                }
                EventType::Added | EventType::Modified => {
                    objects.insert(
                        object.key.as_str(),
                        (object.revision, object.bytes.as_ref()),
                    )?;
                }
            }
            encode_event(event, &mut encoded);
            history.insert(object.revision, encoded.as_slice())?;
        }
        let mut meta = txn.open_table(META)?;
        meta.insert(META_REVISION, new_revision)?;
        if let Some(upto) = compact {
            history.retain_in(..=upto, |_, _| false)?;
            meta.insert(META_COMPACTED, upto)?;
        }
    }
    // The default durability is `Immediate`: commit returns after fsync.
    txn.commit()?;
    Ok(())
}

// === Event encoding ===
//
// [format 1][type][key len u32][key][object len u32][object JSON]
//   then for Modified/Deleted: [prev revision u64][prev JSON (rest)]
// All integers little-endian. The previous version is stored in full because the event that
// wrote it may already be trimmed when this one is loaded.

const FORMAT: u8 = 1;

fn encode_event(event: &WatchEvent, out: &mut Vec<u8>) {
    out.clear();
    out.push(FORMAT);
    out.push(match event.event_type {
        EventType::Added => 0,
        EventType::Modified => 1,
        EventType::Deleted => 2,
    });
    put_slice(out, event.object.key.as_bytes());
    put_slice(out, &event.object.bytes);
    if let Some(prev) = &event.prev {
        out.extend_from_slice(&prev.revision.to_le_bytes());
        out.extend_from_slice(&prev.bytes);
    }
}

fn put_slice(out: &mut Vec<u8>, bytes: &[u8]) {
    // Keys and objects are far below 4 GiB (redb caps values at 3 GiB).
    let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads the fields of an encoded event.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<usize> {
        let bytes: [u8; 4] = self.take(4)?.try_into().ok()?;
        usize::try_from(u32::from_le_bytes(bytes)).ok()
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn slice(&mut self) -> Option<&'a [u8]> {
        let len = self.u32()?;
        self.take(len)
    }
}

struct DecodedEvent<'a> {
    event_type: EventType,
    key: &'a str,
    object: &'a [u8],
    prev: Option<(Revision, &'a [u8])>,
}

fn decode_event(bytes: &[u8]) -> Option<DecodedEvent<'_>> {
    let mut r = Reader(bytes);
    if r.take(1)? != [FORMAT] {
        return None;
    }
    let event_type = match r.take(1)?.first()? {
        0 => EventType::Added,
        1 => EventType::Modified,
        2 => EventType::Deleted,
        _ => return None,
    };
    let key = std::str::from_utf8(r.slice()?).ok()?;
    let object = r.slice()?;
    let prev = match event_type {
        EventType::Added => None,
        EventType::Modified | EventType::Deleted => Some((r.u64()?, r.0)),
    };
    Some(DecodedEvent {
        event_type,
        key,
        object,
        prev,
    })
}

// === Loading ===

fn read_meta(db: &Database) -> Result<(Revision, Revision), StorageError> {
    let txn = db.begin_read().map_err(backend_error)?;
    let meta = txn.open_table(META).map_err(backend_error)?;
    let read = |name: &str| -> Result<u64, StorageError> {
        Ok(meta
            .get(name)
            .map_err(backend_error)?
            .map_or(0, |v| v.value()))
    };
    Ok((read(META_REVISION)?, read(META_COMPACTED)?))
}

/// Reads the whole database into a memory snapshot.
fn load(db: &Database) -> Result<Snapshot, StorageError> {
    let (revision, mut compacted) = read_meta(db)?;
    compacted = compacted.min(revision);
    let txn = db.begin_read().map_err(backend_error)?;

    // The retained history; `latest` tracks each key's newest version in it so the objects
    // and `prev` links share one allocation instead of being parsed twice.
    let events = txn.open_table(EVENTS).map_err(backend_error)?;
    let mut history: Vec<WatchEvent> = Vec::new();
    let mut latest: HashMap<String, Arc<StoredObject>> = HashMap::new();
    for entry in events
        .range(compacted + 1..=revision)
        .map_err(backend_error)?
    {
        let (k, v) = entry.map_err(backend_error)?;
        let rev = k.value();
        if rev != compacted + history.len() as Revision + 1 {
            // A hole (never written by this code): keep only the contiguous tail.
            tracing::warn!(revision = rev, "gap in the stored event history");
            history.clear();
            compacted = rev - 1;
        }
        let bytes = v.value();
        let decoded = decode_event(bytes).ok_or_else(|| {
            StorageError::Backend(format!("corrupt event record at revision {rev}"))
        })?;
        let object = backend::from_bytes(decoded.key, rev, decoded.object)?;
        let prev = match decoded.prev {
            None => None,
            Some((prev_rev, prev_bytes)) => Some(match latest.get(decoded.key) {
                Some(known) if known.revision == prev_rev => Arc::clone(known),
                _ => backend::from_bytes(decoded.key, prev_rev, prev_bytes)?,
            }),
        };
        match decoded.event_type {
            EventType::Deleted => latest.remove(decoded.key),
            EventType::Added | EventType::Modified => {
                latest.insert(decoded.key.to_owned(), Arc::clone(&object))
            }
        };
        history.push(WatchEvent {
            event_type: decoded.event_type,
            object,
            prev,
        });
    }
    if compacted + (history.len() as Revision) != revision {
        // The tail is missing (never written by this code): no history can be trusted.
        tracing::warn!(
            revision,
            "the stored event history does not reach the current revision"
        );
        history.clear();
        compacted = revision;
    }

    let table = txn.open_table(OBJECTS).map_err(backend_error)?;
    let mut objects = Vec::new();
    for entry in table.iter().map_err(backend_error)? {
        let (k, v) = entry.map_err(backend_error)?;
        let key = k.value();
        let (rev, bytes) = v.value();
        let object = match latest.get(key) {
            Some(known) if known.revision == rev => Arc::clone(known),
            _ => backend::from_bytes(key, rev, bytes)?,
        };
        objects.push(object);
    }
    Ok(Snapshot {
        objects,
        revision,
        compacted,
        history,
    })
}
