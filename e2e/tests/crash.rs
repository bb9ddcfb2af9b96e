//! Crash safety of the real `flotilla apiserver` process.
//!
//! Concurrent kube-rs writers create, replace and delete ConfigMaps as fast as they can while
//! the server process is killed with SIGKILL. After a restart on the same data directory:
//! - every acknowledged write (2xx received) is there with the same resourceVersion, uid and
//!   content (an acknowledged delete stays deleted);
//! - nothing is half-written: every object carries a checksum of its own content, and an
//!   object that is not an acknowledged write can only be the one in-flight write of a writer,
//!   whole;
//! - a watch from a resourceVersion handed out before the crash delivers exactly the committed
//!   changes after it, in order, without `410 Gone`.
//!
//! This is done twice in a row (kill, restart, write more, kill, restart) so recovery of an
//! already recovered database is covered too, and the last watch spans both crashes.
//!
//! Needs the binary: `cargo build --bin flotilla` (or point `FLOTILLA_BIN` at one); the
//! server's log is `<data dir>/apiserver.log`, quoted in failure messages.

// A test crate: failing loudly on a broken invariant is the point (clippy's test exemption
// does not reach helper functions).
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{
    Api, DeleteParams, ListParams, PostParams, Preconditions, WatchEvent, WatchParams,
};

const NAMESPACE: &str = "default";
const WRITERS: usize = 8;
/// How long the writers run before the kill.
const WRITE_TIME: Duration = Duration::from_millis(1500);
const ROUNDS: usize = 2;

// === The flotilla process ===

mod support;

use support::{ApiserverProcess, start_apiserver};

/// SIGKILL (what `Child::kill` sends on Unix), then reap.
fn sigkill(server: &mut ApiserverProcess) {
    server.child.kill().expect("SIGKILL the server");
    let _ = server.child.wait();
}

/// A kube-rs client for the kubeconfig the server wrote. Retries are off so that every
/// acknowledgement corresponds to exactly one request.
async fn client_for(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let mut config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kubeconfig to config");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

// === Content with a checksum ===

type Data = BTreeMap<String, String>;

fn fnv1a(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain([0u8]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

fn checksum_of(writer: &str, round: &str, seq: &str, payload: &str) -> String {
    format!("{:016x}", fnv1a(&[writer, round, seq, payload]))
}

fn make_data(writer: usize, round: usize, seq: u64, payload_len: usize) -> Data {
    let (writer, round, seq) = (writer.to_string(), round.to_string(), seq.to_string());
    let unit = format!("{writer}.{round}.{seq}|");
    let payload: String = unit.chars().cycle().take(payload_len).collect();
    let checksum = checksum_of(&writer, &round, &seq, &payload);
    [
        ("writer", writer),
        ("round", round),
        ("seq", seq),
        ("payload", payload),
        ("checksum", checksum),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Whether `data` is whole: all fields present and the checksum matches the rest.
fn check_whole(name: &str, data: &Data) -> Result<(), String> {
    let field = |k: &str| {
        data.get(k)
            .ok_or_else(|| format!("{name}: field {k:?} missing (keys {:?})", data.keys()))
    };
    let (writer, round, seq, payload, checksum) = (
        field("writer")?,
        field("round")?,
        field("seq")?,
        field("payload")?,
        field("checksum")?,
    );
    if data.len() != 5 {
        return Err(format!("{name}: unexpected keys {:?}", data.keys()));
    }
    let expected = checksum_of(writer, round, seq, payload);
    if *checksum != expected {
        return Err(format!(
            "{name}: checksum {checksum} but content hashes to {expected} (payload {} bytes)",
            payload.len()
        ));
    }
    if !name.starts_with(&format!("w{writer}-")) {
        return Err(format!("{name}: written by writer {writer}?"));
    }
    Ok(())
}

/// `data` without the bulky payload, for messages.
fn brief(data: &Data) -> String {
    let get = |k: &str| data.get(k).map_or("?", String::as_str);
    format!(
        "w{}/r{}/s{} ({} bytes)",
        get("writer"),
        get("round"),
        get("seq"),
        get("payload").len()
    )
}

// === The model of what was written ===

/// One version of an object as the server reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Version {
    rv: u64,
    uid: String,
    data: Data,
}

impl Version {
    fn brief(&self) -> String {
        format!("rv {} uid {} {}", self.rv, self.uid, brief(&self.data))
    }
}

fn version_of(cm: ConfigMap) -> Result<Version, String> {
    let rv = cm
        .metadata
        .resource_version
        .as_deref()
        .ok_or("no resourceVersion")?;
    Ok(Version {
        rv: rv
            .parse()
            .map_err(|_| format!("resourceVersion {rv:?} is not a number"))?,
        uid: cm.metadata.uid.ok_or("no uid")?,
        data: cm.data.unwrap_or_default(),
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Create,
    Update,
    Delete,
}

/// A change known to be committed, at revision `version.rv`. For a delete, `version` is the
/// deleted content stamped with the deletion's revision (what a `DELETED` watch event carries).
#[derive(Clone, Debug)]
struct Change {
    kind: Kind,
    name: String,
    version: Version,
}

/// The request a writer had in flight when the server died: committed or not, unknown.
#[derive(Clone, Debug)]
struct Pending {
    kind: Kind,
    name: String,
    /// The new content (create, update) or the content being deleted (delete).
    data: Data,
    /// The acknowledged version it replaces (update, delete).
    prev: Option<Version>,
}

/// One writer's view: the objects it owns as of its last acknowledged write.
struct Writer {
    id: usize,
    next_name: u64,
    seq: u64,
    rng: u64,
    objects: BTreeMap<String, Version>,
}

impl Writer {
    fn new(id: usize) -> Self {
        Self {
            id,
            next_name: 0,
            seq: 0,
            rng: 0x9e37_79b9_7f4a_7c15 ^ (id as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
            objects: BTreeMap::new(),
        }
    }

    fn random(&mut self) -> u64 {
        // xorshift64: deterministic per writer, no dependency needed.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
}

struct RoundOutcome {
    writer: Writer,
    acked: Vec<Change>,
    pending: Option<Pending>,
    /// An error before the kill, or a nonsensical answer: a bug either way.
    unexpected: Option<String>,
}

fn config_map(name: &str, data: Data, rv: Option<u64>) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.metadata.resource_version = rv.map(|rv| rv.to_string());
    cm.data = Some(data);
    cm
}

/// Writes until a request fails; fails only because the server was killed, or it is a bug.
async fn run_writer(
    mut w: Writer,
    api: Api<ConfigMap>,
    round: usize,
    killed: Arc<AtomicBool>,
) -> RoundOutcome {
    let mut acked = Vec::new();
    let deadline = Instant::now() + WRITE_TIME + Duration::from_secs(60);
    let unexpected = |w, acked, msg: String| RoundOutcome {
        writer: w,
        acked,
        pending: None,
        unexpected: Some(msg),
    };
    loop {
        if Instant::now() > deadline {
            return unexpected(w, acked, "still writing a minute after the kill".into());
        }
        w.seq += 1;
        let roll = w.random() % 100;
        let kind = if w.objects.len() < 4 || roll < 30 {
            Kind::Create
        } else if roll < 40 {
            Kind::Delete
        } else {
            Kind::Update
        };
        // Mostly small objects, some large enough to span several database pages.
        let payload_len = if w.random().is_multiple_of(20) {
            48 * 1024 + (w.random() % 16384) as usize
        } else {
            16 + (w.random() % 4096) as usize
        };
        let (name, prev) = if kind == Kind::Create {
            w.next_name += 1;
            (format!("w{}-{}", w.id, w.next_name), None)
        } else {
            let index = (w.random() % w.objects.len() as u64) as usize;
            let (name, version) = w.objects.iter().nth(index).expect("index in range");
            (name.clone(), Some(version.clone()))
        };
        let data = match (&prev, kind) {
            (Some(prev), Kind::Delete) => prev.data.clone(),
            _ => make_data(w.id, round, w.seq, payload_len),
        };
        let answer = match kind {
            Kind::Create => api
                .create(
                    &PostParams::default(),
                    &config_map(&name, data.clone(), None),
                )
                .await
                .map(version_of),
            Kind::Update => {
                let rv = prev.as_ref().map(|p| p.rv);
                api.replace(
                    &name,
                    &PostParams::default(),
                    &config_map(&name, data.clone(), rv),
                )
                .await
                .map(version_of)
            }
            Kind::Delete => {
                let prev = prev.as_ref().expect("delete has a previous version");
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: Some(prev.rv.to_string()),
                        uid: Some(prev.uid.clone()),
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &dp).await.map(|answer| {
                    answer
                        .left()
                        .ok_or_else(|| "delete answered with a Status, not the object".to_owned())
                        .and_then(version_of)
                })
            }
        };
        let version = match answer {
            Ok(Ok(version)) => version,
            Ok(Err(msg)) => {
                return unexpected(w, acked, format!("{kind:?} {name} acknowledged but {msg}"));
            }
            Err(e) => {
                if !killed.load(Ordering::SeqCst) {
                    return unexpected(w, acked, format!("{kind:?} {name} failed: {e}"));
                }
                let pending = Pending {
                    kind,
                    name,
                    data,
                    prev,
                };
                return RoundOutcome {
                    writer: w,
                    acked,
                    pending: Some(pending),
                    unexpected: None,
                };
            }
        };
        // The answer must describe this very write.
        let wrong = if version.data != data {
            Some(format!("content {}", brief(&version.data)))
        } else if let Some(prev) = &prev
            && (version.uid != prev.uid || version.rv <= prev.rv)
        {
            Some(format!("{} after {}", version.brief(), prev.brief()))
        } else {
            None
        };
        if let Some(wrong) = wrong {
            return unexpected(w, acked, format!("{kind:?} {name} answered {wrong}"));
        }
        if kind == Kind::Delete {
            w.objects.remove(&name);
        } else {
            w.objects.insert(name.clone(), version.clone());
        }
        acked.push(Change {
            kind,
            name,
            version,
        });
    }
}

/// Everything known to be committed, across rounds.
struct Model {
    writers: Vec<Writer>,
    /// Committed changes by revision.
    log: BTreeMap<u64, Change>,
    /// Where watches are resumed from after each restart: (description, revision).
    watch_points: Vec<(String, u64)>,
    failures: Vec<String>,
}

impl Model {
    fn record(&mut self, change: Change) {
        let rv = change.version.rv;
        if let Some(old) = self.log.get(&rv) {
            self.failures.push(format!(
                "revision {rv} handed out twice: {:?} {} and {:?} {}",
                old.kind, old.name, change.kind, change.name
            ));
        }
        self.log.insert(rv, change);
    }

    fn max_rv(&self) -> u64 {
        self.log.keys().next_back().copied().unwrap_or(0)
    }
}

/// Runs the writers against the server for [`WRITE_TIME`], then SIGKILLs it and waits for
/// every writer to notice.
async fn write_and_kill(
    server: &mut ApiserverProcess,
    model: &mut Model,
    round: usize,
) -> Vec<Option<Pending>> {
    let client = client_for(&server.kubeconfig).await;
    let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
    let baseline = api
        .list(&ListParams::default())
        .await
        .expect("list before writing")
        .metadata
        .resource_version
        .and_then(|rv| rv.parse::<u64>().ok())
        .expect("list resourceVersion");
    if round == 0 {
        model
            .watch_points
            .push((format!("round {round} baseline (list)"), baseline));
    }
    let killed = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = std::mem::take(&mut model.writers)
        .into_iter()
        .map(|w| tokio::spawn(run_writer(w, api.clone(), round, Arc::clone(&killed))))
        .collect();
    tokio::time::sleep(WRITE_TIME).await;
    killed.store(true, Ordering::SeqCst);
    sigkill(server);
    println!("round {round}: killed the server at {}", server.url);

    let mut pendings = Vec::new();
    let mut acked_rvs = Vec::new();
    for task in tasks {
        let outcome = tokio::time::timeout(Duration::from_secs(90), task)
            .await
            .expect("writers stop once the server is gone")
            .expect("writer task");
        if let Some(msg) = outcome.unexpected {
            model
                .failures
                .push(format!("round {round} writer {}: {msg}", outcome.writer.id));
        }
        for change in outcome.acked {
            if change.version.rv <= baseline {
                model.failures.push(format!(
                    "round {round}: {:?} {} got revision {} not after {baseline}",
                    change.kind, change.name, change.version.rv
                ));
            }
            acked_rvs.push(change.version.rv);
            model.record(change);
        }
        pendings.push(outcome.pending);
        model.writers.push(outcome.writer);
    }
    acked_rvs.sort_unstable();
    println!(
        "round {round}: {} acknowledged writes, {} writes in flight at the kill",
        acked_rvs.len(),
        pendings.iter().flatten().count()
    );
    assert!(
        acked_rvs.len() >= WRITERS,
        "round {round}: only {} writes acknowledged in {WRITE_TIME:?}; failures: {:#?}",
        acked_rvs.len(),
        model.failures
    );
    let middle = acked_rvs[acked_rvs.len() / 2];
    model
        .watch_points
        .push((format!("round {round} median acknowledged"), middle));
    pendings
}

/// Lists after a restart and compares with the model; resolves each in-flight write to
/// committed or not. Returns the committed ones (a delete's revision is still unknown: 0).
async fn check_state(
    api: &Api<ConfigMap>,
    model: &mut Model,
    round: usize,
    pendings: Vec<Option<Pending>>,
) -> Vec<Change> {
    let list = api
        .list(&ListParams::default())
        .await
        .expect("list after restart");
    let list_rv: u64 = list
        .metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("list resourceVersion");
    if list_rv < model.max_rv() {
        model.failures.push(format!(
            "after restart {round}: list at revision {list_rv}, before the last acknowledged {}",
            model.max_rv()
        ));
    }
    let mut listed = BTreeMap::new();
    for cm in list.items {
        let name = cm.metadata.name.clone().unwrap_or_default();
        match version_of(cm) {
            Ok(version) => {
                if let Err(msg) = check_whole(&name, &version.data) {
                    model
                        .failures
                        .push(format!("after restart {round}: torn object {msg}"));
                }
                listed.insert(name, version);
            }
            Err(msg) => model
                .failures
                .push(format!("after restart {round}: {name}: {msg}")),
        }
    }

    let mut expected = BTreeMap::new();
    for w in &model.writers {
        expected.extend(w.objects.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    let mut in_flight: BTreeMap<String, (usize, Pending)> = BTreeMap::new();
    for (writer, pending) in pendings.into_iter().enumerate() {
        if let Some(p) = pending {
            in_flight.insert(p.name.clone(), (writer, p));
        }
    }
    let names: BTreeSet<&String> = expected
        .keys()
        .chain(listed.keys())
        .chain(in_flight.keys())
        .collect();

    let mut landed = Vec::new();
    let show = |v: Option<&Version>| v.map_or_else(|| "absent".to_owned(), Version::brief);
    for name in names {
        let (want, got) = (expected.get(name), listed.get(name));
        let Some((writer, p)) = in_flight.get(name) else {
            if want != got {
                model.failures.push(format!(
                    "after restart {round}: {name}: acknowledged {}, found {}",
                    show(want),
                    show(got)
                ));
            }
            continue;
        };
        if want == got {
            continue; // The in-flight write never committed.
        }
        let committed = match (p.kind, want, got) {
            (Kind::Create, None, Some(v)) => v.data == p.data,
            (Kind::Update, Some(old), Some(v)) => {
                v.data == p.data && v.uid == old.uid && v.rv > old.rv
            }
            (Kind::Delete, Some(_), None) => true,
            _ => false,
        };
        if !committed {
            model.failures.push(format!(
                "after restart {round}: {name}: in-flight {:?} of {} half-applied: \
                 acknowledged {}, found {}",
                p.kind,
                brief(&p.data),
                show(want),
                show(got)
            ));
            continue;
        }
        let w = &mut model.writers[*writer];
        let version = match got {
            Some(v) => {
                w.objects.insert(name.clone(), v.clone());
                v.clone()
            }
            None => {
                w.objects.remove(name);
                let prev = p.prev.clone().expect("a delete has a previous version");
                Version { rv: 0, ..prev }
            }
        };
        landed.push(Change {
            kind: p.kind,
            name: name.clone(),
            version,
        });
    }
    println!(
        "after restart {round}: {} objects listed, {} in-flight writes turned out committed",
        listed.len(),
        landed.len()
    );
    landed
}

/// Watches from `from` and checks the events are exactly the committed changes after it, in
/// revision order. `landed` are committed in-flight writes whose delete revisions are learnt
/// here (and then recorded in the log).
async fn check_watch(
    api: &Api<ConfigMap>,
    model: &mut Model,
    what: &str,
    from: u64,
    mut landed: Vec<Change>,
) {
    let expected: Vec<&Change> = model.log.range(from + 1..).map(|(_, c)| c).collect();
    let landed_count = landed
        .iter()
        .filter(|c| c.version.rv == 0 || c.version.rv > from)
        .count();
    let total = expected.len() + landed_count;
    let stream = match api
        .watch(&WatchParams::default().timeout(120), &from.to_string())
        .await
    {
        Ok(stream) => stream,
        Err(e) => {
            model
                .failures
                .push(format!("watch from {what} ({from}) refused: {e}"));
            return;
        }
    };
    let mut stream = stream.boxed();
    let mut events = Vec::new();
    let mut failed = false;
    while events.len() < total {
        let next = tokio::time::timeout(Duration::from_secs(20), stream.try_next()).await;
        match next {
            Ok(Ok(Some(WatchEvent::Bookmark(_)))) => {}
            Ok(Ok(Some(WatchEvent::Error(status)))) => {
                model.failures.push(format!(
                    "watch from {what} ({from}) failed with {} {}: {}",
                    status.code, status.reason, status.message
                ));
                failed = true;
                break;
            }
            Ok(Ok(Some(event))) => events.push(event),
            Ok(Ok(None)) | Err(_) => {
                model.failures.push(format!(
                    "watch from {what} ({from}) delivered {} of {total} events, then {}",
                    events.len(),
                    if next.is_err() {
                        "nothing for 20 s"
                    } else {
                        "ended"
                    }
                ));
                failed = true;
                break;
            }
            Ok(Err(e)) => {
                model
                    .failures
                    .push(format!("watch from {what} ({from}) broke: {e}"));
                failed = true;
                break;
            }
        }
    }
    if !failed {
        // Nothing more may follow: no writes happen now.
        let extra = tokio::time::timeout(Duration::from_millis(500), async {
            loop {
                match stream.try_next().await {
                    Ok(Some(WatchEvent::Bookmark(_))) => continue,
                    other => return other,
                }
            }
        })
        .await;
        if let Ok(Ok(Some(event))) = extra {
            model.failures.push(format!(
                "watch from {what} ({from}): extra event after the {total} expected: {event:?}"
            ));
        }
    }

    let mut mismatches = Vec::new();
    let mut seen = BTreeSet::new();
    let mut last = from;
    for event in events {
        let (kind, cm) = match event {
            WatchEvent::Added(cm) => (Kind::Create, cm),
            WatchEvent::Modified(cm) => (Kind::Update, cm),
            WatchEvent::Deleted(cm) => (Kind::Delete, cm),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => continue,
        };
        let name = cm.metadata.name.clone().unwrap_or_default();
        let version = match version_of(cm) {
            Ok(v) => v,
            Err(msg) => {
                mismatches.push(format!("{kind:?} {name}: {msg}"));
                continue;
            }
        };
        let rv = version.rv;
        if rv <= last {
            mismatches.push(format!(
                "{kind:?} {name} at {rv} after {last}: out of order"
            ));
        }
        last = last.max(rv);
        let same = |c: &Change| c.kind == kind && c.name == name && c.version == version;
        if let Some(change) = model.log.get(&rv) {
            seen.insert(rv);
            if !same(change) {
                mismatches.push(format!(
                    "at {rv}: expected {:?} {} {}, got {kind:?} {name} {}",
                    change.kind,
                    change.name,
                    change.version.brief(),
                    version.brief()
                ));
            }
            continue;
        }
        // Not an acknowledged write: only a committed in-flight one may appear.
        let found = landed.iter_mut().find(|c| {
            c.kind == kind
                && c.name == name
                && c.version.data == version.data
                && c.version.uid == version.uid
                && (c.version.rv == rv || (c.version.rv == 0 && kind == Kind::Delete))
        });
        match found {
            Some(change) => change.version.rv = rv,
            None => mismatches.push(format!(
                "at {rv}: unexpected {kind:?} {name} {} (not an acknowledged or committed write)",
                version.brief()
            )),
        }
    }
    for change in &expected {
        if !failed && !seen.contains(&change.version.rv) {
            mismatches.push(format!(
                "acknowledged {:?} {} at {} missing from the watch",
                change.kind, change.name, change.version.rv
            ));
        }
    }
    println!(
        "watch from {what} ({from}): checked {total} events ({} acknowledged, {landed_count} \
         committed in flight), {} mismatches",
        expected.len(),
        mismatches.len()
    );
    model.failures.extend(
        mismatches
            .into_iter()
            .map(|m| format!("watch from {what} ({from}): {m}")),
    );
    for change in landed {
        if change.version.rv != 0 {
            model.record(change);
        } else if !failed {
            model.failures.push(format!(
                "committed in-flight delete of {} never appeared in the watch",
                change.name
            ));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill_and_watches_resume() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("data");
    let mut server = start_apiserver(&data_dir);
    let mut model = Model {
        writers: (0..WRITERS).map(Writer::new).collect(),
        log: BTreeMap::new(),
        watch_points: Vec::new(),
        failures: Vec::new(),
    };

    for round in 0..ROUNDS {
        let pendings = write_and_kill(&mut server, &mut model, round).await;
        // Same data directory; the port may change, so the kubeconfig is read again.
        server = start_apiserver(&data_dir);
        let client = client_for(&server.kubeconfig).await;
        let api: Api<ConfigMap> = Api::namespaced(client, NAMESPACE);
        let landed = check_state(&api, &mut model, round, pendings).await;
        // The first watch point precedes every write, so it also learns the revisions of
        // committed in-flight deletes; the later ones then check against the full log.
        let points = model.watch_points.clone();
        let mut landed = Some(landed);
        for (what, from) in points {
            let landed = landed.take().unwrap_or_default();
            check_watch(&api, &mut model, &what, from, landed).await;
        }
        let log = server.log_text();
        let log_tail: Vec<&str> = log.lines().rev().take(20).collect();
        assert!(
            model.failures.is_empty(),
            "after restart {round}, {} problems:\n{}\nserver log (last lines, newest first):\n{}",
            model.failures.len(),
            model
                .failures
                .iter()
                .take(30)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n"),
            log_tail.join("\n")
        );
        println!(
            "after restart {round}: all {} committed writes verified",
            model.log.len()
        );
    }
}
