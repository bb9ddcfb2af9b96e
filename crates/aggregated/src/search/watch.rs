//! A merged WATCH: one watch on the template store and one per member cluster, multiplexed
//! into one `flotilla_fanout::MergedView`; each source event recomputes its merged item and
//! the change of the merged view is sent as ADDED/MODIFIED/DELETED.
//!
//! - Start: without a resourceVersion (or `0`) every source is listed now and the merged
//!   items are sent as ADDED first; with a composite version every source is listed exactly
//!   at its position and watched from there, so nothing between is lost. A source that no
//!   longer has that position ends the stream with one ERROR event (410 Expired), which
//!   clients answer by listing again.
//! - A source whose watch breaks (member restart, a timeout, 410) is listed again and its
//!   difference sent as merged changes, then watched from the new list; members that become
//!   Ready (or allowed) join the same way and members that leave take their objects with them.
//! - Every event's object carries the stream's position as its resourceVersion, so a client
//!   resuming from the last event it saw continues where it left off. BOOKMARKs carry it too.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use flotilla_apimachinery::ApiError;
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::tasks::AbortOnDrop;
use flotilla_fanout::{CompositeVersion, EventKind, MergedEvent, MergedView, Source, SourceEvent};
use flotilla_generic_store::rest::{Object, WatchAnswer, WatchEvent};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::sources::{Endpoint, SourceError, WatchLine};
use super::{Read, Shared, cluster_of, list_items, list_version, member_endpoints, missing};

/// How often membership (members becoming Ready or leaving) and failed sources are checked.
const MEMBERSHIP_PERIOD: Duration = Duration::from_secs(1);
/// How often a watch with bookmarks enabled gets one.
const BOOKMARK_PERIOD: Duration = Duration::from_secs(10);
/// A watch's length when the client sets no timeoutSeconds.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// What a source's task reports: a watch's lines and its end, or a (re)list's answer.
enum Report {
    Line(WatchLine),
    Ended(SourceError),
    Listed { objects: Vec<Value>, rv: String },
    ListFailed(SourceError),
}

/// A source being watched: its endpoint and the task reading its watch. Reports carry the
/// generation they were started in, so a replaced watcher's late reports are ignored.
struct Active {
    endpoint: Endpoint,
    generation: u64,
    _task: AbortOnDrop,
}

struct Stream {
    shared: Arc<Shared>,
    server: Arc<ApiServer>,
    read: Read,
    view: MergedView,
    active: BTreeMap<Source, Active>,
    /// Sources to list and watch again at the next membership check.
    failed: BTreeMap<Source, Endpoint>,
    generation: u64,
    reports: mpsc::Sender<(Source, u64, Report)>,
    /// The members a membership check found; one check at a time.
    members: mpsc::Sender<Vec<Endpoint>>,
    checking: bool,
    out: mpsc::Sender<WatchEvent>,
}

pub(super) async fn serve(
    shared: Arc<Shared>,
    server: Arc<ApiServer>,
    read: Read,
) -> Result<WatchAnswer, ApiError> {
    let start = match read.options.resource_version.as_ref().map(|v| v.as_str()) {
        None | Some("") | Some("0") => None,
        Some(rv) => {
            Some(CompositeVersion::parse(rv).map_err(|e| ApiError::bad_request(e.to_string()))?)
        }
    };
    let (members, warnings) = member_endpoints(&shared, &server, &read).await;
    if let Some(start) = &start {
        // Resuming needs every member the client's state came from: one that is no longer
        // served (left, not Ready) cannot replay its deletions, so the client lists again.
        let served: std::collections::BTreeSet<String> = members.iter().map(cluster_of).collect();
        if let Some(gone) = start
            .members
            .keys()
            .find(|c| read.filter.allows(c) && !served.contains(*c))
        {
            let events = futures::stream::iter([cannot_resume(format!(
                "cluster {gone:?} is no longer part of the merged view"
            ))]);
            return Ok(WatchAnswer::new(events.boxed()));
        }
    }
    let (reports_tx, mut reports_rx) = mpsc::channel(1024);
    let (members_tx, mut members_rx) = mpsc::channel(1);
    let (out_tx, out_rx) = mpsc::channel::<WatchEvent>(256);
    let mut stream = Stream {
        view: MergedView::new(read.filter.clone()),
        shared,
        server,
        read,
        active: BTreeMap::new(),
        failed: BTreeMap::new(),
        generation: 0,
        reports: reports_tx,
        members: members_tx,
        checking: false,
        out: out_tx,
    };
    let host = Endpoint::Host(stream.shared.templates.clone(), stream.read.user.clone());
    let mut initial = Vec::new();
    let mut expired = None;
    let mut loaded = Vec::new();
    match stream
        .load(
            Source::Template,
            &host,
            start.as_ref().and_then(|s| s.template.clone()),
            false,
        )
        .await
    {
        Ok(_) => loaded.push((Source::Template, host.clone())),
        Err(SourceError::Expired(m)) => expired = Some(m),
        Err(e) => return Err(super::template_error(e)),
    }
    let mut late = Vec::new();
    for endpoint in members {
        let cluster = cluster_of(&endpoint);
        let at = start
            .as_ref()
            .and_then(|s| s.members.get(&cluster).cloned());
        if start.is_some() && at.is_none() {
            // Joined after the client's version: its objects arrive as changes.
            late.push(endpoint);
            continue;
        }
        match stream
            .load(Source::Member(cluster.clone()), &endpoint, at, false)
            .await
        {
            Ok(_) => loaded.push((Source::Member(cluster), endpoint)),
            Err(SourceError::Expired(m)) => expired = Some(m),
            // Resuming without one of the client's members would lose its changes.
            Err(e) if start.is_some() => expired = Some(missing(&endpoint, &e)),
            Err(e) => {
                tracing::debug!(error = %e, "a member is left out of a merged watch for now");
                stream.failed.insert(Source::Member(cluster), endpoint);
            }
        }
    }
    if start.is_none() {
        // Only the last initial event carries the stream's position; the others carry none,
        // so a client resuming from inside the initial state gets all of it again.
        let position = stream.view.position();
        let items = stream.view.items();
        let count = items.len();
        initial = items
            .into_iter()
            .enumerate()
            .map(|(i, mut object)| {
                if i + 1 == count {
                    set_version(&mut object, &position);
                } else {
                    set_version(&mut object, &CompositeVersion::default());
                }
                MergedEvent {
                    kind: EventKind::Added,
                    object,
                }
            })
            .collect();
    }
    let timeout = stream.read.options.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let bookmarks = stream.read.options.allow_bookmarks;
    let mut answer = WatchAnswer::new(ReceiverStream::new(out_rx).boxed());
    answer.warnings = warnings;
    if let Some(message) = expired {
        let _ = stream.out.try_send(cannot_resume(message));
        return Ok(answer);
    }
    tokio::spawn(async move {
        for event in initial {
            if !stream.send(&event).await {
                return;
            }
        }
        for endpoint in late {
            let source = Source::Member(cluster_of(&endpoint));
            stream.rejoin(source, endpoint);
        }
        for (source, endpoint) in loaded {
            stream.watch(source, endpoint);
        }
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let mut membership = tokio::time::interval(MEMBERSHIP_PERIOD);
        let mut bookmark = tokio::time::interval(BOOKMARK_PERIOD);
        loop {
            tokio::select! {
                report = reports_rx.recv() => {
                    let Some((source, generation, report)) = report else { return };
                    if stream.on_report(source, generation, report).await.is_err() {
                        return;
                    }
                }
                found = members_rx.recv() => {
                    let Some(found) = found else { return };
                    if stream.on_members(found).await.is_err() {
                        return;
                    }
                }
                _ = membership.tick() => stream.check_membership(),
                _ = bookmark.tick(), if bookmarks => {
                    if !stream.bookmark().await {
                        return;
                    }
                }
                _ = &mut deadline => return,
                _ = stream.out.closed() => return,
            }
        }
    });
    Ok(answer)
}

/// The client went away.
struct Gone;

impl Stream {
    /// Lists `source` (exactly at `at` when given) into the view; with `emit`, sends the
    /// merged changes. Returns the list's version.
    async fn load(
        &mut self,
        source: Source,
        endpoint: &Endpoint,
        at: Option<String>,
        emit: bool,
    ) -> Result<Vec<MergedEvent>, SourceError> {
        let query = match &at {
            Some(rv) => self
                .read
                .source_query(&[("resourceVersion", rv), ("resourceVersionMatch", "Exact")]),
            None => self.read.source_query(&[]),
        };
        let list = endpoint
            .get_json(&self.read.path(false), &query, self.shared.member_timeout)
            .await?;
        let rv = at.or_else(|| list_version(&list)).unwrap_or_default();
        Ok(self.view.replace(source, list_items(list), rv, emit))
    }

    /// Makes `task` (started in `generation`) `source`'s current task: earlier tasks of the
    /// source stop, and their late reports are ignored.
    fn track(
        &mut self,
        source: Source,
        endpoint: Endpoint,
        generation: u64,
        task: tokio::task::JoinHandle<()>,
    ) {
        self.active.insert(
            source,
            Active {
                endpoint,
                generation,
                _task: AbortOnDrop(task),
            },
        );
    }

    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// Starts the watcher task of `source` from the view's position for it.
    fn watch(&mut self, source: Source, endpoint: Endpoint) {
        let generation = self.next_generation();
        let position = self.view.position();
        let rv = match &source {
            Source::Template => position.template.clone(),
            Source::Member(c) => position.members.get(c).cloned(),
        }
        .unwrap_or_default();
        let query = self.read.source_query(&[
            ("watch", "1"),
            ("allowWatchBookmarks", "true"),
            ("resourceVersion", &rv),
        ]);
        let path = self.read.path(false);
        let reports = self.reports.clone();
        let timeout = self.shared.member_timeout;
        let tagged = source.clone();
        let task_endpoint = endpoint.clone();
        let task = tokio::spawn(async move {
            let ended = match task_endpoint.watch(&path, &query, timeout).await {
                Ok(mut lines) => loop {
                    match lines.next().await {
                        Some(Ok(l)) => {
                            if reports
                                .send((tagged.clone(), generation, Report::Line(l)))
                                .await
                                .is_err()
                            {
                                return;
                            }
                        }
                        Some(Err(e)) => break e,
                        None => break SourceError::Failed("the watch ended".into()),
                    }
                },
                Err(e) => e,
            };
            let _ = reports
                .send((tagged, generation, Report::Ended(ended)))
                .await;
        });
        self.track(source, endpoint, generation, task);
    }

    async fn on_report(
        &mut self,
        source: Source,
        generation: u64,
        report: Report,
    ) -> Result<(), Gone> {
        if self.active.get(&source).map(|a| a.generation) != Some(generation) {
            return Ok(());
        }
        match report {
            Report::Line(WatchLine { event_type, object }) => {
                let rv = object
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                let event = match event_type.as_str() {
                    "ADDED" | "MODIFIED" => SourceEvent::Upsert(object),
                    "DELETED" => SourceEvent::Deleted(object),
                    "BOOKMARK" => {
                        self.view.advance(&source, rv);
                        return Ok(());
                    }
                    _ => return Ok(()),
                };
                if let Some(change) = self.view.apply(&source, event, rv) {
                    if !self.send(&change).await {
                        return Err(Gone);
                    }
                }
            }
            Report::Ended(e) => {
                tracing::debug!(?source, error = %e, "a merged watch's source ended; listing it again");
                if let Some(active) = self.active.remove(&source) {
                    self.rejoin(source, active.endpoint);
                }
            }
            Report::Listed { objects, rv } => {
                for change in self.view.replace(source.clone(), objects, rv, true) {
                    if !self.send(&change).await {
                        return Err(Gone);
                    }
                }
                self.failed.remove(&source);
                if let Some(active) = self.active.remove(&source) {
                    self.watch(source, active.endpoint);
                }
            }
            Report::ListFailed(e) => {
                if let Some(active) = self.active.remove(&source) {
                    tracing::debug!(error = %missing(&active.endpoint, &e), "merged watch source not available");
                    self.failed.insert(source, active.endpoint);
                }
            }
        }
        Ok(())
    }

    /// Lists `source` now in a task of its own (events of the other sources keep flowing);
    /// its answer's difference is sent and it is watched from there, or, when it fails, it
    /// is left for the next membership check.
    fn rejoin(&mut self, source: Source, endpoint: Endpoint) {
        let generation = self.next_generation();
        let path = self.read.path(false);
        let query = self.read.source_query(&[]);
        let timeout = self.shared.member_timeout;
        let reports = self.reports.clone();
        let tagged = source.clone();
        let task_endpoint = endpoint.clone();
        let task = tokio::spawn(async move {
            let report = match task_endpoint.get_json(&path, &query, timeout).await {
                Ok(list) => Report::Listed {
                    rv: list_version(&list).unwrap_or_default(),
                    objects: list_items(list),
                },
                Err(e) => Report::ListFailed(e),
            };
            let _ = reports.send((tagged, generation, report)).await;
        });
        self.failed.remove(&source);
        self.track(source, endpoint, generation, task);
    }

    /// Finds the members to follow now, in a task of its own (resolving connections may ask
    /// the host for credentials); the answer arrives as [`Stream::on_members`].
    fn check_membership(&mut self) {
        if self.checking {
            return;
        }
        self.checking = true;
        let (shared, server, read, found) = (
            self.shared.clone(),
            self.server.clone(),
            self.read.clone(),
            self.members.clone(),
        );
        tokio::spawn(async move {
            let (endpoints, _) = member_endpoints(&shared, &server, &read).await;
            let _ = found.send(endpoints).await;
        });
    }

    /// Members that became Ready or allowed join; members that left are removed; failed
    /// sources are tried again.
    async fn on_members(&mut self, endpoints: Vec<Endpoint>) -> Result<(), Gone> {
        self.checking = false;
        let current: BTreeMap<Source, Endpoint> = endpoints
            .into_iter()
            .map(|e| (Source::Member(cluster_of(&e)), e))
            .collect();
        let known: Vec<Source> = self
            .active
            .keys()
            .chain(self.failed.keys())
            .filter(|s| matches!(s, Source::Member(_)))
            .cloned()
            .collect();
        for source in known {
            if !current.contains_key(&source) {
                self.active.remove(&source);
                self.failed.remove(&source);
                for change in self.view.remove_source(&source) {
                    if !self.send(&change).await {
                        return Err(Gone);
                    }
                }
            }
        }
        for (source, endpoint) in current {
            if !self.active.contains_key(&source) {
                self.rejoin(source, endpoint);
            }
        }
        if let Some(endpoint) = self.failed.remove(&Source::Template) {
            self.rejoin(Source::Template, endpoint);
        }
        Ok(())
    }

    async fn bookmark(&self) -> bool {
        let event = WatchEvent::Bookmark {
            resource_version: self.view.position().encode(),
            initial_events_end: false,
        };
        self.out.send(event).await.is_ok()
    }

    /// Sends one merged change; false when the client is gone.
    async fn send(&self, change: &MergedEvent) -> bool {
        let object = Object::Built(change.object.clone());
        let event = match change.kind {
            EventKind::Added => WatchEvent::Added(object),
            EventKind::Modified => WatchEvent::Modified(object),
            EventKind::Deleted => WatchEvent::Deleted(object),
        };
        self.out.send(event).await.is_ok()
    }
}

/// The end of a watch that cannot resume: 410 Expired, which clients answer by listing again.
fn cannot_resume(message: String) -> WatchEvent {
    WatchEvent::Error(ApiError::expired(format!(
        "the merged watch cannot resume from that resourceVersion: {message}"
    )))
}

fn set_version(object: &mut Value, position: &CompositeVersion) {
    let own = object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|rv| CompositeVersion::parse(rv).ok())
        .and_then(|v| v.object);
    let version = CompositeVersion {
        object: own,
        ..position.clone()
    };
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(version.encode()));
    }
}
