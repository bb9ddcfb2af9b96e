//! Per-cluster watch caches of the merged resources: one list-then-watch per (member,
//! resource), as the member's own credentials, keeping every object of that resource in
//! memory, so a merged LIST or GET reads memory instead of asking every member again.
//!
//! - Same answers: a cache serves only while it is synced with its member's watch; while it
//!   lists again (after a broken watch) or when it cannot reach the member, reads go to the
//!   member directly, as without a cache (and a failing member becomes a warning, as there).
//!   Reads at an exact position (continued lists) always go to the member.
//! - The caller's rights in the member still decide: a cached answer is given only when the
//!   member says (SubjectAccessReview, cached briefly) that the caller may read it there;
//!   when the member cannot say, the read goes to the member as the caller.
//! - Bounded: caches are made on first use, dropped when their cluster stops being served,
//!   and not made past `max_objects` objects in all (those reads stay uncached). Objects,
//!   bytes and caches are reported on `/metrics`.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::tasks::AbortOnDrop;
use flotilla_fanout::SourceObject;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::filter::Selection;
use flotilla_karmada_api::binding::AggregatedStatusItem;
use futures::StreamExt;
use parking_lot::{Mutex, RwLock};
use prometheus_client::metrics::gauge::Gauge;
use serde_json::{Value, json};

use super::sources::{Endpoint, SourceError};
use crate::members::MemberConnections;

/// How long a member's answer about a caller's access is reused.
const ACCESS_TTL: Duration = Duration::from_secs(10);
/// The pause before a cache whose member failed lists again.
const RETRY: Duration = Duration::from_secs(1);

type Key = (String, String);
type EntryKey = (String, String, String);

/// One cached member object with the interpreter's reading of it (reflected status, health),
/// computed once per version: a merged list reads every member's copy of every item.
pub struct CachedObject {
    object: Value,
    applied: AggregatedStatusItem,
}

impl SourceObject for CachedObject {
    fn object(&self) -> &Value {
        &self.object
    }
    fn applied(&self) -> Option<&AggregatedStatusItem> {
        Some(&self.applied)
    }
}

/// One cache's contents.
#[derive(Default)]
struct State {
    /// Set when the cache is dropped: nothing more is counted.
    closed: bool,
    synced: bool,
    rv: String,
    objects: BTreeMap<Key, (Arc<CachedObject>, usize)>,
}

struct Entry {
    state: Arc<RwLock<State>>,
    total: Arc<AtomicI64>,
    counters: Counters,
    _task: AbortOnDrop,
}

/// What the caches count, on `/metrics`.
#[derive(Clone, Default)]
struct Counters {
    objects: Gauge,
    bytes: Gauge,
    caches: Gauge,
}

/// The caches of one aggregated server.
pub struct MemberCaches {
    entries: Mutex<HashMap<EntryKey, Entry>>,
    max_objects: i64,
    objects: Arc<AtomicI64>,
    counters: Counters,
    access: Mutex<HashMap<AccessKey, (Instant, Option<bool>)>>,
    timeout: Duration,
    members: Arc<MemberConnections>,
}

/// (cluster, (user, groups), "verb group/resource in namespace").
type AccessKey = (String, (String, Vec<String>), String);

impl MemberCaches {
    pub fn new(
        server: &ApiServer,
        members: Arc<MemberConnections>,
        max_objects: usize,
        timeout: Duration,
    ) -> Self {
        let counters = Counters::default();
        server.metrics.register(
            "flotilla_merged_read_cache_objects",
            "Objects held by the per-cluster caches of merged reads",
            counters.objects.clone(),
        );
        server.metrics.register(
            "flotilla_merged_read_cache_bytes",
            "Approximate JSON bytes held by the per-cluster caches of merged reads",
            counters.bytes.clone(),
        );
        server.metrics.register(
            "flotilla_merged_read_caches",
            "Per-cluster caches of merged reads (one per member and resource)",
            counters.caches.clone(),
        );
        Self {
            entries: Mutex::new(HashMap::new()),
            max_objects: i64::try_from(max_objects).unwrap_or(i64::MAX),
            objects: Arc::new(AtomicI64::new(0)),
            counters,
            access: Mutex::new(HashMap::new()),
            timeout,
            members,
        }
    }

    /// Drops the caches of clusters not in `served`.
    pub fn retain_clusters(&self, served: &[String]) {
        let mut entries = self.entries.lock();
        let before = entries.len();
        entries.retain(|(cluster, _, _), _| served.contains(cluster));
        if entries.len() != before {
            self.counters.caches.set(entries.len() as i64);
        }
    }

    /// The cache of `cluster`'s `def`, made (and started) on first use while under the
    /// object limit.
    fn state(
        &self,
        cluster: &str,
        def: &Arc<ResourceDef>,
        server: &Arc<ApiServer>,
    ) -> Option<Arc<RwLock<State>>> {
        let key = (cluster.to_string(), def.group.clone(), def.plural.clone());
        let mut entries = self.entries.lock();
        if let Some(e) = entries.get(&key) {
            return Some(e.state.clone());
        }
        if self.objects.load(Ordering::Relaxed) >= self.max_objects {
            return None;
        }
        let state = Arc::new(RwLock::new(State::default()));
        let task = tokio::spawn(follow(
            cluster.to_string(),
            def.clone(),
            Arc::downgrade(server),
            self.members.clone(),
            state.clone(),
            self.objects.clone(),
            self.counters.clone(),
            self.timeout,
        ));
        entries.insert(
            key,
            Entry {
                state: state.clone(),
                total: self.objects.clone(),
                counters: self.counters.clone(),
                _task: AbortOnDrop(task),
            },
        );
        self.counters.caches.set(entries.len() as i64);
        Some(state)
    }

    /// `member`'s cache of `def` when it can answer `user`'s `verb` now: synced, and the
    /// member allows the caller. `None` when it cannot say (not synced yet, over the limit,
    /// access unknown), `Some(Err)` when the member forbids the caller.
    async fn answering(
        &self,
        member: &Endpoint,
        def: &Arc<ResourceDef>,
        namespace: Option<&str>,
        user: &UserInfo,
        verb: &str,
        server: &Arc<ApiServer>,
    ) -> Option<Result<Arc<RwLock<State>>, SourceError>> {
        let Endpoint::Member { cluster, .. } = member else {
            return None;
        };
        let state = self.state(cluster, def, server)?;
        if !state.read().synced {
            return None;
        }
        if !self.allowed(member, user, verb, def, namespace).await? {
            return Some(Err(forbidden(cluster, verb, def)));
        }
        Some(Ok(state))
    }

    /// `member`'s objects of the read from memory, with the cache's version (see
    /// [`MemberCaches::answering`] for when it answers).
    pub async fn list(
        &self,
        member: &Endpoint,
        def: &Arc<ResourceDef>,
        namespace: Option<&str>,
        selection: &Selection,
        user: &UserInfo,
        server: &Arc<ApiServer>,
    ) -> Option<Result<(Vec<Arc<CachedObject>>, String), SourceError>> {
        let state = match self
            .answering(member, def, namespace, user, "list", server)
            .await?
        {
            Ok(state) => state,
            Err(e) => return Some(Err(e)),
        };
        let state = state.read();
        if !state.synced {
            return None;
        }
        let items = state
            .objects
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|n| n == ns))
            .filter(|(_, (obj, _))| selection.matches(&obj.object))
            .map(|(_, (obj, _))| Arc::clone(obj))
            .collect();
        Some(Ok((items, state.rv.clone())))
    }

    /// One object from memory: `Some(Ok(None))` when the synced cache does not hold it.
    pub async fn get(
        &self,
        member: &Endpoint,
        def: &Arc<ResourceDef>,
        namespace: Option<&str>,
        name: &str,
        user: &UserInfo,
        server: &Arc<ApiServer>,
    ) -> Option<Result<Option<Value>, SourceError>> {
        let state = match self
            .answering(member, def, namespace, user, "get", server)
            .await?
        {
            Ok(state) => state,
            Err(e) => return Some(Err(e)),
        };
        let state = state.read();
        if !state.synced {
            return None;
        }
        let key = (namespace.unwrap_or_default().to_string(), name.to_string());
        Some(Ok(state.objects.get(&key).map(|(o, _)| o.object.clone())))
    }

    /// Whether the member lets `user` `verb` the resource (its SubjectAccessReview, asked as
    /// the member's own credentials); `None` when it cannot say.
    async fn allowed(
        &self,
        member: &Endpoint,
        user: &UserInfo,
        verb: &str,
        def: &ResourceDef,
        namespace: Option<&str>,
    ) -> Option<bool> {
        let Endpoint::Member {
            cluster,
            upstream,
            token,
            ..
        } = member
        else {
            return None;
        };
        let scope = format!(
            "{verb} {}/{} in {}",
            def.group,
            def.plural,
            namespace.unwrap_or("")
        );
        let key = (
            cluster.clone(),
            (user.name.clone(), user.groups.clone()),
            scope,
        );
        if let Some((at, decision)) = self.access.lock().get(&key) {
            if at.elapsed() < ACCESS_TTL {
                return *decision;
            }
        }
        let review = json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {
                "user": user.name,
                "groups": user.groups,
                "uid": user.uid,
                "extra": user.extra,
                "resourceAttributes": {
                    "verb": verb,
                    "group": def.group,
                    "resource": def.plural,
                    "namespace": namespace.unwrap_or(""),
                },
            },
        });
        let own = Endpoint::Member {
            cluster: cluster.clone(),
            upstream: upstream.clone(),
            token: token.clone(),
            user: None,
        };
        let decision = own
            .post_json(
                "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                &review,
                self.timeout,
            )
            .await
            .ok()
            .and_then(|answer| answer.pointer("/status/allowed").and_then(Value::as_bool));
        let mut access = self.access.lock();
        if access.len() > 10_000 {
            access.retain(|_, (at, _)| at.elapsed() < ACCESS_TTL);
        }
        access.insert(key, (Instant::now(), decision));
        decision
    }
}

fn forbidden(cluster: &str, verb: &str, def: &ResourceDef) -> SourceError {
    SourceError::Failed(format!(
        "HTTP 403: the caller may not {verb} {} in cluster {cluster:?}",
        def.plural
    ))
}

fn key_of(obj: &Value) -> Option<Key> {
    let meta = obj.get("metadata")?;
    Some((
        meta.get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        meta.get("name")?.as_str()?.to_string(),
    ))
}

fn size_of(obj: &Value) -> usize {
    serde_json::to_vec(obj).map(|b| b.len()).unwrap_or(0)
}

/// Keeps one cache following its member: list, watch from the list, list again when the
/// watch breaks; unsynced while it is not following.
#[allow(clippy::too_many_arguments)]
async fn follow(
    cluster: String,
    def: Arc<ResourceDef>,
    server: Weak<ApiServer>,
    members: Arc<MemberConnections>,
    state: Arc<RwLock<State>>,
    total: Arc<AtomicI64>,
    counters: Counters,
    timeout: Duration,
) {
    let path = super::resource_path(&def, None, None);
    // Keeps the counters in step with what the state holds.
    let account = |state: &mut State, key: Key, new: Option<Value>| {
        if state.closed {
            return;
        }
        // managedFields are most of a member object and no merged read needs them.
        let new = new.map(|mut v| {
            if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("managedFields");
            }
            v
        });
        let (new_count, size) = match &new {
            Some(v) => (1, size_of(v)),
            None => (0, 0),
        };
        let old = match new {
            Some(v) => {
                let applied = flotilla_interpreter::applied_item(&cluster, &v);
                let cached = CachedObject { object: v, applied };
                state.objects.insert(key, (Arc::new(cached), size))
            }
            None => state.objects.remove(&key),
        };
        let (old_count, old_size) = old.map(|(_, s)| (1, s)).unwrap_or((0, 0));
        total.fetch_add(new_count - old_count, Ordering::Relaxed);
        counters.objects.inc_by(new_count - old_count);
        counters.bytes.inc_by(size as i64 - old_size as i64);
    };
    loop {
        let Some(endpoint) = endpoint_of(&cluster, &server, &members).await else {
            state.write().synced = false;
            tokio::time::sleep(RETRY).await;
            continue;
        };
        let list = match endpoint.get_json(&path, "", timeout).await {
            Ok(list) => list,
            Err(e) => {
                tracing::debug!(%cluster, resource = %def.plural, error = %e, "a merged-read cache cannot list its member");
                state.write().synced = false;
                tokio::time::sleep(RETRY).await;
                continue;
            }
        };
        let rv = super::list_version(&list).unwrap_or_default();
        {
            let mut s = state.write();
            let fresh: BTreeMap<Key, Value> = super::list_items(list)
                .into_iter()
                .filter_map(|o| key_of(&o).map(|k| (k, o)))
                .collect();
            let gone: Vec<Key> = s
                .objects
                .keys()
                .filter(|k| !fresh.contains_key(*k))
                .cloned()
                .collect();
            for key in gone {
                account(&mut s, key, None);
            }
            for (key, obj) in fresh {
                account(&mut s, key, Some(obj));
            }
            s.rv = rv.clone();
            s.synced = true;
        }
        let query = format!("watch=1&allowWatchBookmarks=true&resourceVersion={rv}");
        let mut lines = match endpoint.watch(&path, &query, timeout).await {
            Ok(lines) => lines,
            Err(_) => {
                state.write().synced = false;
                continue;
            }
        };
        while let Some(line) = lines.next().await {
            let Ok(line) = line else { break };
            let rv = line
                .object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let mut s = state.write();
            match line.event_type.as_str() {
                "ADDED" | "MODIFIED" => {
                    if let Some(key) = key_of(&line.object) {
                        account(&mut s, key, Some(line.object));
                    }
                }
                "DELETED" => {
                    if let Some(key) = key_of(&line.object) {
                        account(&mut s, key, None);
                    }
                }
                _ => {}
            }
            if !rv.is_empty() {
                s.rv = rv;
            }
        }
        // The watch broke: unsynced until listed again.
        state.write().synced = false;
    }
}

/// The member's connection as its own credentials, from the stored Cluster.
async fn endpoint_of(
    cluster: &str,
    server: &Weak<ApiServer>,
    members: &MemberConnections,
) -> Option<Endpoint> {
    let server = server.upgrade()?;
    let def = crate::cluster::cluster_resource();
    let key = flotilla_generic_store::objects::object_key(&def, None, cluster);
    let obj = server.storage.get(&key).await.ok()??.value();
    let (upstream, token) = members.upstream(cluster, &obj).await.ok()?;
    Some(Endpoint::Member {
        cluster: cluster.to_string(),
        upstream,
        token,
        user: None,
    })
}

impl Drop for Entry {
    fn drop(&mut self) {
        // A dropped cache's objects no longer count (its task is aborted with `_task`).
        let mut state = self.state.write();
        state.closed = true;
        let count = state.objects.len() as i64;
        let bytes: usize = state.objects.values().map(|(_, s)| *s).sum();
        self.total.fetch_sub(count, Ordering::Relaxed);
        self.counters.objects.dec_by(count);
        self.counters.bytes.dec_by(bytes as i64);
    }
}
