//! kube-rs against an in-process generic API server: a reflector that converges after concurrent churn
//! and forced watch expiry (410 and re-list), server-side apply conflicts and `force`,
//! paginated lists, raw watches, streaming lists, the status and scale subresources, and
//! deletion held by finalizers.

// Helpers outside #[test] functions unwrap too: a failed call is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// helpers

async fn create_namespace(client: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(name.into());
    api.create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
}

fn config_map(name: &str, data: &[(&str, &str)], labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    if !labels.is_empty() {
        cm.metadata.labels = Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

/// The HTTP status of a failed kube-rs call (panics with context on success or other errors).
fn api_status<T: std::fmt::Debug>(
    result: Result<T, kube::Error>,
    what: &str,
) -> Box<kube::core::Status> {
    match result {
        Err(kube::Error::Api(status)) => status,
        Err(other) => panic!("{what}: expected an API error status, got {other:?}"),
        Ok(v) => panic!("{what}: expected an API error, got success {v:?}"),
    }
}

/// What a ConfigMap looks like for the convergence comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CmState {
    resource_version: String,
    data: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
}

type Snapshot = BTreeMap<String, CmState>;

fn cm_state(cm: &ConfigMap) -> CmState {
    CmState {
        resource_version: cm.resource_version().unwrap_or_default(),
        data: cm.data.clone().unwrap_or_default(),
        labels: cm.metadata.labels.clone().unwrap_or_default(),
    }
}

fn snapshot<'a>(items: impl IntoIterator<Item = &'a ConfigMap>) -> Snapshot {
    items
        .into_iter()
        .map(|cm| (cm.name_any(), cm_state(cm)))
        .collect()
}

/// A readable difference between two snapshots (empty when equal).
fn diff(left_name: &str, left: &Snapshot, right_name: &str, right: &Snapshot) -> String {
    let mut out = String::new();
    for (name, l) in left {
        match right.get(name) {
            None => out.push_str(&format!("  {name}: only in {left_name} ({l:?})\n")),
            Some(r) if r != l => out.push_str(&format!(
                "  {name}: {left_name}={l:?}\n  {}  {right_name}={r:?}\n",
                " ".repeat(name.len())
            )),
            Some(_) => {}
        }
    }
    for (name, r) in right {
        if !left.contains_key(name) {
            out.push_str(&format!("  {name}: only in {right_name} ({r:?})\n"));
        }
    }
    out
}

/// The next item of a stream, failing the test after `secs` seconds.
async fn next_within<S: Stream + Unpin>(stream: &mut S, secs: u64, what: &str) -> S::Item {
    match tokio::time::timeout(Duration::from_secs(secs), stream.next()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("{what}: stream ended"),
        Err(_) => panic!("{what}: nothing within {secs}s"),
    }
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}
            }
        }
    }))
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// 1. reflector consistency under churn and compaction

/// What the reflector's consumer saw.
#[derive(Default)]
struct WatcherCounters {
    inits: AtomicUsize,
    init_dones: AtomicUsize,
    expired: AtomicUsize,
    applies: AtomicUsize,
    deletes: AtomicUsize,
    other_errors: std::sync::Mutex<Vec<String>>,
}

impl WatcherCounters {
    fn summary(&self) -> String {
        let others = self.other_errors.lock().unwrap().clone();
        format!(
            "inits={} initDones={} expired(410)={} applies={} deletes={} otherErrors={} {:?}",
            self.inits.load(Ordering::SeqCst),
            self.init_dones.load(Ordering::SeqCst),
            self.expired.load(Ordering::SeqCst),
            self.applies.load(Ordering::SeqCst),
            self.deletes.load(Ordering::SeqCst),
            others.len(),
            others.iter().take(5).collect::<Vec<_>>()
        )
    }
}

/// Runs a reflector over `api` in the background and counts what its watcher reports.
fn spawn_reflector(
    api: Api<ConfigMap>,
    config: watcher::Config,
) -> (
    Store<ConfigMap>,
    Arc<WatcherCounters>,
    tokio::task::JoinHandle<()>,
) {
    let (reader, writer) = reflector::store::<ConfigMap>();
    let counters = Arc::new(WatcherCounters::default());
    let c = counters.clone();
    // No backoff: against a local server an immediate retry is what we want, and a growing
    // backoff after many 410s could push convergence past the test's deadline.
    let stream = reflector::reflector(writer, watcher::watcher(api, config));
    let handle = tokio::spawn(async move {
        let mut stream = pin!(stream);
        while let Some(item) = stream.next().await {
            match item {
                Ok(watcher::Event::Init) => {
                    c.inits.fetch_add(1, Ordering::SeqCst);
                }
                Ok(watcher::Event::InitDone) => {
                    c.init_dones.fetch_add(1, Ordering::SeqCst);
                }
                Ok(watcher::Event::InitApply(_)) => {}
                Ok(watcher::Event::Apply(_)) => {
                    c.applies.fetch_add(1, Ordering::SeqCst);
                }
                Ok(watcher::Event::Delete(_)) => {
                    c.deletes.fetch_add(1, Ordering::SeqCst);
                }
                Err(watcher::Error::WatchError(status)) if status.code == 410 => {
                    c.expired.fetch_add(1, Ordering::SeqCst);
                }
                Err(e) => c.other_errors.lock().unwrap().push(e.to_string()),
            }
        }
    });
    (reader, counters, handle)
}

/// One of the churn tasks: `ops` successful changes on ConfigMaps only this task touches
/// (so every change succeeds), mixing create, JSON merge patch of data, PUT, strategic merge
/// patch of labels, and delete. Returns the objects it left behind, as the server answered.
async fn churn(api: Api<ConfigMap>, task: usize, ops: usize) -> BTreeMap<String, ConfigMap> {
    let mut rng = StdRng::seed_from_u64(0x5eed_0000 + task as u64);
    let names: Vec<String> = (0..6).map(|k| format!("cm-{task:02}-{k}")).collect();
    let mut live: BTreeMap<String, ConfigMap> = BTreeMap::new();
    for op in 0..ops {
        let name = names[rng.random_range(0..names.len())].clone();
        let ctx = format!("task {task} op {op} on {name}");
        let value = format!("{task}-{op}");
        let Some(current) = live.get(&name).cloned() else {
            let color = ["red", "green", "blue"][rng.random_range(0..3)];
            let task_label = task.to_string();
            let cm = config_map(
                &name,
                &[("v", value.as_str())],
                &[("task", task_label.as_str()), ("color", color)],
            );
            let created = api
                .create(&PostParams::default(), &cm)
                .await
                .unwrap_or_else(|e| panic!("{ctx}: create: {e}"));
            live.insert(name, created);
            continue;
        };
        match rng.random_range(0..4) {
            0 => {
                let extra = if rng.random_bool(0.5) {
                    json!(value)
                } else {
                    Value::Null
                };
                let patch = json!({"data": {"v": value, "extra": extra}});
                let patched = api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: merge patch data: {e}"));
                live.insert(name, patched);
            }
            1 => {
                // PUT with the resourceVersion we last saw: nobody else writes this object.
                let mut next = current.clone();
                next.data = Some(
                    [
                        ("v".to_string(), value.clone()),
                        ("replaced".to_string(), "true".to_string()),
                    ]
                    .into(),
                );
                let replaced = api
                    .replace(&name, &PostParams::default(), &next)
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: replace: {e}"));
                live.insert(name, replaced);
            }
            2 => {
                let color = if rng.random_bool(0.25) {
                    Value::Null
                } else {
                    json!(["red", "green", "blue", "black"][rng.random_range(0..4)])
                };
                let patch =
                    json!({"metadata": {"labels": {"color": color, "step": op.to_string()}}});
                let patched = api
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: label patch: {e}"));
                live.insert(name, patched);
            }
            _ => {
                api.delete(&name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("{ctx}: delete: {e}"));
                live.remove(&name);
            }
        }
    }
    live
}

/// 16 tasks make 1,000 changes while a compactor keeps dropping the (already tiny) watch
/// history, and then a forced expiry: the watched namespace goes quiet, other writes move
/// the revision on, the history is compacted, and the watcher's next watch (its server-side
/// timeout is 2 s) resumes from a revision the server no longer has. The watcher must see
/// 410 and re-list, and its store must end up exactly equal to the server's state.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reflector_converges_after_churn_and_watch_expiry() {
    const TASKS: usize = 16;
    const TOTAL: usize = 1000;
    let t = common::start_with_history(20).await;
    create_namespace(&t.client, "churn").await;
    create_namespace(&t.client, "noise").await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "churn");

    let (reader, counters, reflector_task) =
        spawn_reflector(api.clone(), watcher::Config::default().timeout(2));
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .expect("reflector ready within 10s")
        .expect("reflector writer alive");

    let storage = t.server.storage.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let compactor = {
        let storage = storage.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut rounds = 0usize;
            while !stop.load(Ordering::SeqCst) {
                storage.compact(storage.current_revision().await).await;
                rounds += 1;
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            rounds
        })
    };

    let start_rev = storage.current_revision().await;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let ops = TOTAL / TASKS + usize::from(task < TOTAL % TASKS);
            tokio::spawn(churn(api.clone(), task, ops))
        })
        .collect();
    let mut expected: BTreeMap<String, ConfigMap> = BTreeMap::new();
    for (i, task) in tasks.into_iter().enumerate() {
        let live = task
            .await
            .unwrap_or_else(|e| panic!("churn task {i} failed: {e}"));
        expected.extend(live);
    }
    stop.store(true, Ordering::SeqCst);
    let compactions = compactor.await.unwrap();
    let churn_revisions = storage.current_revision().await - start_rev;
    assert_eq!(
        churn_revisions, TOTAL as u64,
        "every churn change is one revision"
    );
    eprintln!(
        "after churn: {compactions} compactions, watcher: {}",
        counters.summary()
    );
    let expected = snapshot(expected.values());
    wait_converged(&api, &reader, &expected, &counters, "after the churn").await;
    assert!(
        counters.expired.load(Ordering::SeqCst) >= 1 && counters.inits.load(Ordering::SeqCst) >= 2,
        "compaction during the churn never made the watcher re-list: {}",
        counters.summary()
    );

    // Forced expiry: the store is in sync and the watched namespace is quiet, so the watcher's
    // resume point is the last churn event. Move the revision on elsewhere and drop the
    // history: the watcher's next watch (within its 2 s timeout) must get 410 and re-list.
    let expired_before = counters.expired.load(Ordering::SeqCst);
    let relists_before = counters.init_dones.load(Ordering::SeqCst);
    let noise: Api<ConfigMap> = Api::namespaced(t.client.clone(), "noise");
    noise
        .create(
            &PostParams::default(),
            &config_map("noise", &[("n", "0")], &[]),
        )
        .await
        .unwrap();
    for i in 1..=30 {
        let patch = json!({"data": {"n": i.to_string()}});
        noise
            .patch("noise", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    storage.compact(storage.current_revision().await).await;
    eventually(
        "a 410 and a re-list after a forced compaction",
        Duration::from_secs(15),
        || async {
            let expired = counters.expired.load(Ordering::SeqCst) != expired_before;
            let relisted = counters.init_dones.load(Ordering::SeqCst) != relists_before;
            if expired && relisted {
                Ok(())
            } else {
                Err(format!("watcher {}", counters.summary()))
            }
        },
    )
    .await;
    wait_converged(
        &api,
        &reader,
        &expected,
        &counters,
        "after the forced re-list",
    )
    .await;
    eprintln!("converged: watcher {}", counters.summary());
    reflector_task.abort();
    t.stop().await;
}

/// Waits up to 30 s until the server's list equals `expected` and the reflector store equals
/// the server's list (names, resourceVersions, data and labels), with no re-list in progress.
async fn wait_converged(
    api: &Api<ConfigMap>,
    reader: &Store<ConfigMap>,
    expected: &Snapshot,
    counters: &WatcherCounters,
    when: &str,
) {
    eventually(
        &format!("{when}: the reflector converged"),
        Duration::from_secs(30),
        || async {
            let listed = api.list(&ListParams::default()).await.unwrap();
            let server = snapshot(listed.items.iter());
            let state = reader.state();
            let store = snapshot(state.iter().map(|a| a.as_ref()));
            let settled =
                counters.inits.load(Ordering::SeqCst) == counters.init_dones.load(Ordering::SeqCst);
            if &server == expected && store == server && settled {
                return Ok(());
            }
            Err(format!(
                "{} objects on the server, {} in the store\nserver vs churn model:\n{}store vs \
                 server:\n{}watcher: {}",
                server.len(),
                store.len(),
                diff("server", &server, "model", expected),
                diff("store", &store, "server", &server),
                counters.summary()
            ))
        },
    )
    .await;
}

/// A watch from a resourceVersion older than the retained history gets one ERROR event with
/// 410 Expired, both when the history limit dropped it and after an explicit compaction; a
/// watch from inside the history replays exactly the events after it.
#[tokio::test]
async fn watch_from_compacted_revision_is_expired() {
    let t = common::start_with_history(50).await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    let created = api
        .create(
            &PostParams::default(),
            &config_map("counter", &[("n", "0")], &[]),
        )
        .await
        .unwrap();
    let old_rv = created.resource_version().unwrap();
    let mut rvs = Vec::new();
    for i in 1..=60 {
        let patch = json!({"data": {"n": i.to_string()}});
        let obj = api
            .patch("counter", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
        rvs.push(obj.resource_version().unwrap());
    }

    // 60 changes with a history of 50: the creation's revision is gone.
    let mut stream = api
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match next_within(&mut stream, 10, "watch from the creation rv").await {
        Ok(WatchEvent::Error(status)) => {
            assert_eq!(status.code, 410, "{status:?}");
            assert_eq!(status.reason, "Expired", "{status:?}");
        }
        other => panic!("watch from {old_rv} after 60 changes: expected 410, got {other:?}"),
    }
    drop(stream);

    // From the 50th change: the last 10 changes, in order, then nothing more.
    let recent_rv = rvs[49].clone();
    let mut stream = api
        .watch(&WatchParams::default(), &recent_rv)
        .await
        .unwrap()
        .boxed();
    for (i, want_rv) in rvs[50..].iter().enumerate() {
        match next_within(&mut stream, 10, "replay from a recent rv").await {
            Ok(WatchEvent::Modified(cm)) => {
                assert_eq!(cm.resource_version().as_ref(), Some(want_rv));
                assert_eq!(
                    cm.data.unwrap().get("n").map(String::as_str),
                    Some((51 + i).to_string().as_str())
                );
            }
            other => panic!("replay event {i}: expected Modified, got {other:?}"),
        }
    }
    drop(stream);

    // After compacting to the current revision the same rv is too old.
    let storage = t.server.storage.clone();
    storage.compact(storage.current_revision().await).await;
    let mut stream = api
        .watch(&WatchParams::default(), &recent_rv)
        .await
        .unwrap()
        .boxed();
    match next_within(&mut stream, 10, "watch from a compacted rv").await {
        Ok(WatchEvent::Error(status)) => assert_eq!(status.code, 410, "{status:?}"),
        other => panic!("watch from {recent_rv} after compaction: expected 410, got {other:?}"),
    }
    // The newest revision itself is still watchable.
    let latest = rvs.last().unwrap().clone();
    let mut stream = api
        .watch(&WatchParams::default(), &latest)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "counter",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"n": "after"}})),
    )
    .await
    .unwrap();
    match next_within(&mut stream, 10, "watch from the latest rv").await {
        Ok(WatchEvent::Modified(cm)) => {
            assert_eq!(cm.data.unwrap().get("n").map(String::as_str), Some("after"))
        }
        other => panic!("watch from the latest rv: expected Modified, got {other:?}"),
    }
    t.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 2. server-side apply conflicts and force

/// The `fieldsV1` of `manager`'s Apply entry.
fn applied_fields(d: &Deployment, manager: &str) -> Option<Value> {
    d.metadata
        .managed_fields
        .as_ref()?
        .iter()
        .find(|e| e.manager.as_deref() == Some(manager) && e.operation.as_deref() == Some("Apply"))
        .and_then(|e| e.fields_v1.as_ref())
        .map(|f| f.0.clone())
}

/// Many appliers creating the same objects at once (every joining member applies the
/// credentials namespace): each apply succeeds, the losers of the create race applying onto
/// the winner's object, and every manager ends up owning its fields.
#[tokio::test]
async fn concurrent_applies_creating_one_object_all_succeed() {
    let t = common::start().await;
    for round in 0..5 {
        let name = format!("race-{round}");
        let applies = (0..16).map(|i| {
            let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
            let name = name.clone();
            async move {
                let body = json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name},
                    "data": {format!("k{i}"): "v"},
                });
                api.patch(
                    &name,
                    &PatchParams::apply(&format!("m{i}")),
                    &Patch::Apply(body),
                )
                .await
            }
        });
        for result in futures::future::join_all(applies).await {
            result.unwrap();
        }
        let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let cm = api.get(&name).await.unwrap();
        assert_eq!(
            cm.data.unwrap_or_default().len(),
            16,
            "every applier's key is kept"
        );
    }
}

#[tokio::test]
async fn server_side_apply_conflict_and_force() {
    let t = common::start().await;
    let api: Api<Deployment> = Api::namespaced(t.client.clone(), "default");
    let a = api
        .patch(
            "web",
            &PatchParams::apply("manager-a"),
            &Patch::Apply(deployment("web", 2)),
        )
        .await
        .unwrap();
    assert_eq!(a.spec.as_ref().unwrap().replicas, Some(2));
    let a_fields = applied_fields(&a, "manager-a")
        .unwrap_or_else(|| panic!("no Apply entry for manager-a: {:?}", a.metadata));
    assert!(
        a_fields.pointer("/f:spec/f:replicas").is_some(),
        "manager-a owns spec.replicas: {a_fields}"
    );

    let b_config = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 5}
    });
    let status = api_status(
        api.patch(
            "web",
            &PatchParams::apply("manager-b"),
            &Patch::Apply(&b_config),
        )
        .await,
        "conflicting apply by manager-b without force",
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert_eq!(status.reason, "Conflict", "{status:?}");
    assert!(
        status.message.contains("manager-a") && status.message.contains(".spec.replicas"),
        "the conflict names the owner and the field: {}",
        status.message
    );
    let unchanged = api.get("web").await.unwrap();
    assert_eq!(unchanged.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(unchanged.resource_version(), a.resource_version());

    let b = api
        .patch(
            "web",
            &PatchParams::apply("manager-b").force(),
            &Patch::Apply(&b_config),
        )
        .await
        .unwrap();
    assert_eq!(b.spec.as_ref().unwrap().replicas, Some(5));
    let b_fields = applied_fields(&b, "manager-b")
        .unwrap_or_else(|| panic!("no Apply entry for manager-b: {:?}", b.metadata));
    assert!(
        b_fields.pointer("/f:spec/f:replicas").is_some(),
        "manager-b owns spec.replicas: {b_fields}"
    );
    let a_fields = applied_fields(&b, "manager-a").expect("manager-a still owns the rest");
    assert!(
        a_fields.pointer("/f:spec/f:replicas").is_none(),
        "manager-a lost spec.replicas: {a_fields}"
    );
    assert!(
        a_fields.pointer("/f:spec/f:template").is_some(),
        "manager-a keeps the template: {a_fields}"
    );

    // Now it is manager-a that conflicts on replicas; dropping the field from its
    // configuration succeeds and leaves manager-b's value.
    let status = api_status(
        api.patch(
            "web",
            &PatchParams::apply("manager-a"),
            &Patch::Apply(deployment("web", 2)),
        )
        .await,
        "manager-a re-applying replicas owned by manager-b",
    );
    assert_eq!(status.code, 409, "{status:?}");
    assert!(status.message.contains("manager-b"), "{}", status.message);
    let mut without_replicas = serde_json::to_value(deployment("web", 2)).unwrap();
    without_replicas["spec"]
        .as_object_mut()
        .unwrap()
        .remove("replicas");
    let a2 = api
        .patch(
            "web",
            &PatchParams::apply("manager-a"),
            &Patch::Apply(&without_replicas),
        )
        .await
        .unwrap();
    assert_eq!(a2.spec.as_ref().unwrap().replicas, Some(5));
    t.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 3. paginated lists

/// Follows `continue` from `params`; returns the page sizes, the names in order, and each
/// page's remainingItemCount.
async fn paginate(
    api: &Api<ConfigMap>,
    params: ListParams,
) -> (Vec<usize>, Vec<String>, Vec<Option<i64>>) {
    let mut sizes = Vec::new();
    let mut names = Vec::new();
    let mut remaining = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = params.clone();
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.unwrap();
        assert!(
            page.metadata.resource_version.is_some(),
            "page without resourceVersion"
        );
        sizes.push(page.items.len());
        names.extend(page.items.iter().map(ResourceExt::name_any));
        remaining.push(page.metadata.remaining_item_count);
        token = page.metadata.continue_.filter(|c| !c.is_empty());
        if token.is_none() {
            break;
        }
        assert!(sizes.len() < 20, "pagination does not end: {sizes:?}");
    }
    (sizes, names, remaining)
}

#[tokio::test]
async fn paginated_list_with_limit_and_continue() {
    let t = common::start().await;
    create_namespace(&t.client, "pages").await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "pages");
    for i in 0..25 {
        let parity = if i % 2 == 1 { "odd" } else { "even" };
        api.create(
            &PostParams::default(),
            &config_map(
                &format!("cm-{i:02}"),
                &[("i", &i.to_string())],
                &[("parity", parity)],
            ),
        )
        .await
        .unwrap();
    }
    // Something outside the namespace must not leak in.
    let other: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    other
        .create(
            &PostParams::default(),
            &config_map("cm-99", &[], &[("parity", "odd")]),
        )
        .await
        .unwrap();

    let (sizes, names, remaining) = paginate(&api, ListParams::default().limit(10)).await;
    assert_eq!(sizes, vec![10, 10, 5], "page sizes");
    assert_eq!(
        remaining,
        vec![Some(15), Some(5), None],
        "remainingItemCount per page"
    );
    let all: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
    assert_eq!(names, all, "every name exactly once, in order");

    // Unpaginated and over-sized limits give everything in one page without `continue`.
    let whole = api.list(&ListParams::default().limit(100)).await.unwrap();
    assert_eq!(whole.items.len(), 25);
    assert!(whole.metadata.continue_.is_none_or(|c| c.is_empty()));

    let (sizes, names, remaining) =
        paginate(&api, ListParams::default().labels("parity=odd").limit(5)).await;
    let odd: Vec<String> = (0..25)
        .filter(|i| i % 2 == 1)
        .map(|i| format!("cm-{i:02}"))
        .collect();
    assert_eq!(names, odd, "label-selected pages hold the odd ones once");
    assert_eq!(sizes, vec![5, 5, 2], "label-selected page sizes");
    // Kubernetes may leave remainingItemCount out with a selector; if given it must be right.
    for (page, (rem, want)) in remaining.iter().zip([7, 2]).enumerate() {
        if let Some(rem) = rem {
            assert_eq!(*rem, want, "remainingItemCount of selected page {page}");
        }
    }
    assert_eq!(remaining[2], None);

    // A continue token that is not one of ours is a 400, not a silent full list.
    let status = api_status(
        api.list(&ListParams::default().limit(5).continue_token("garbage"))
            .await,
        "list with a bogus continue token",
    );
    assert_eq!(status.code, 400, "{status:?}");
    t.stop().await;
}

// ---------------------------------------------------------------------------------------------
// 4. watch, streaming lists, status, scale, finalizers

#[tokio::test]
async fn watch_from_recent_resource_version_sees_changes_in_order() {
    let t = common::start().await;
    create_namespace(&t.client, "watched").await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "watched");
    let other: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    api.create(
        &PostParams::default(),
        &config_map("before", &[("x", "1")], &[]),
    )
    .await
    .unwrap();
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();

    let created = api
        .create(
            &PostParams::default(),
            &config_map("w", &[("step", "1")], &[]),
        )
        .await
        .unwrap();
    other
        .create(&PostParams::default(), &config_map("w", &[], &[]))
        .await
        .unwrap();
    let modified = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"step": "2"}})),
        )
        .await
        .unwrap();
    api.delete("w", &DeleteParams::default()).await.unwrap();

    match next_within(&mut stream, 10, "first event").await {
        Ok(WatchEvent::Added(cm)) => {
            assert_eq!(cm.name_any(), "w");
            assert_eq!(cm.resource_version(), created.resource_version());
        }
        other => panic!("expected Added, got {other:?}"),
    }
    match next_within(&mut stream, 10, "second event").await {
        Ok(WatchEvent::Modified(cm)) => {
            assert_eq!(cm.resource_version(), modified.resource_version());
            assert_eq!(cm.data.unwrap().get("step").map(String::as_str), Some("2"));
        }
        other => panic!("expected Modified, got {other:?}"),
    }
    match next_within(&mut stream, 10, "third event").await {
        Ok(WatchEvent::Deleted(cm)) => {
            assert_eq!(cm.name_any(), "w");
            assert_eq!(cm.namespace().as_deref(), Some("watched"));
            let del_rv: u64 = cm.resource_version().unwrap().parse().unwrap();
            let mod_rv: u64 = modified.resource_version().unwrap().parse().unwrap();
            assert!(
                del_rv > mod_rv,
                "the deletion has a newer rv ({del_rv} <= {mod_rv})"
            );
        }
        other => panic!("expected Deleted, got {other:?}"),
    }
    // Nothing else (the other namespace's object and the earlier one are not in it).
    match tokio::time::timeout(Duration::from_millis(500), stream.next()).await {
        Err(_) => {}
        Ok(item) => panic!("unexpected extra watch item: {item:?}"),
    }
    t.stop().await;
}

#[tokio::test]
async fn streaming_list_watcher_initialises_a_reflector() {
    let t = common::start().await;
    create_namespace(&t.client, "stream").await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "stream");
    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("s-{i}"), &[("i", &i.to_string())], &[]),
        )
        .await
        .unwrap();
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let events = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = events.clone();
    let stream = reflector::reflector(
        writer,
        watcher::watcher(api.clone(), watcher::Config::default().streaming_lists()),
    );
    let task = tokio::spawn(async move {
        let mut stream = pin!(stream);
        while let Some(item) = stream.next().await {
            let line = match item {
                Ok(watcher::Event::Init) => "Init".to_string(),
                Ok(watcher::Event::InitApply(o)) => format!("InitApply({})", o.name_any()),
                Ok(watcher::Event::InitDone) => "InitDone".to_string(),
                Ok(watcher::Event::Apply(o)) => format!("Apply({})", o.name_any()),
                Ok(watcher::Event::Delete(o)) => format!("Delete({})", o.name_any()),
                Err(e) => format!("Err({e})"),
            };
            log.lock().unwrap().push(line);
        }
    });
    tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
        .await
        .unwrap_or_else(|_| {
            panic!(
                "streaming list never completed: {:?}",
                events.lock().unwrap()
            )
        })
        .unwrap();
    let mut names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
    names.sort();
    assert_eq!(names, vec!["s-0", "s-1", "s-2", "s-3", "s-4"]);
    {
        let seen = events.lock().unwrap().clone();
        assert_eq!(seen.first().map(String::as_str), Some("Init"), "{seen:?}");
        assert_eq!(
            seen.get(6).map(String::as_str),
            Some("InitDone"),
            "{seen:?}"
        );
        let mut applied: Vec<&str> = seen[1..6].iter().map(String::as_str).collect();
        applied.sort();
        assert_eq!(
            applied,
            vec![
                "InitApply(s-0)",
                "InitApply(s-1)",
                "InitApply(s-2)",
                "InitApply(s-3)",
                "InitApply(s-4)"
            ],
            "{seen:?}"
        );
    }

    // It keeps watching after the initial events.
    api.create(&PostParams::default(), &config_map("s-5", &[], &[]))
        .await
        .unwrap();
    api.delete("s-0", &DeleteParams::default()).await.unwrap();
    eventually(
        "the store to hold s-1..s-5 after the initial list",
        Duration::from_secs(10),
        || async {
            let mut names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
            names.sort();
            if names == ["s-1", "s-2", "s-3", "s-4", "s-5"] {
                Ok(())
            } else {
                Err(format!(
                    "store {names:?}; events {:?}",
                    events.lock().unwrap()
                ))
            }
        },
    )
    .await;
    let seen = events.lock().unwrap().clone();
    assert_eq!(
        seen[7..].to_vec(),
        vec!["Apply(s-5)".to_string(), "Delete(s-0)".to_string()],
        "{seen:?}"
    );
    task.abort();
    t.stop().await;
}

fn generation(d: &Deployment) -> i64 {
    d.metadata.generation.expect("generation")
}

#[tokio::test]
async fn status_subresource_changes_only_status_and_keeps_generation() {
    let t = common::start().await;
    let api: Api<Deployment> = Api::namespaced(t.client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .unwrap();
    assert_eq!(generation(&created), 1);
    // As from kube-apiserver: an empty status, present from creation on.
    assert_eq!(
        created.status,
        Some(Default::default()),
        "{:?}",
        created.status
    );

    // A status patch that also tries to change spec and labels changes only status.
    let patch = json!({
        "metadata": {"labels": {"sneaky": "yes"}},
        "spec": {"replicas": 9},
        "status": {"replicas": 2, "readyReplicas": 1, "observedGeneration": 1}
    });
    let patched = api
        .patch_status("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    let status = patched.status.clone().expect("status set");
    assert_eq!(status.replicas, Some(2));
    assert_eq!(status.ready_replicas, Some(1));
    assert_eq!(status.observed_generation, Some(1));
    assert_eq!(
        patched.spec.as_ref().unwrap().replicas,
        Some(2),
        "spec kept"
    );
    assert!(
        patched.labels().get("sneaky").is_none(),
        "labels kept: {:?}",
        patched.labels()
    );
    assert_eq!(generation(&patched), 1, "status writes keep the generation");
    assert_ne!(patched.resource_version(), created.resource_version());

    let got = api.get_status("web").await.unwrap();
    assert_eq!(got.status, patched.status);
    assert_eq!(got.resource_version(), patched.resource_version());

    // A main-resource patch changing spec bumps the generation and cannot touch status.
    let patch = json!({"spec": {"replicas": 4}, "status": {"replicas": 99}});
    let spec_changed = api
        .patch("web", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .unwrap();
    assert_eq!(spec_changed.spec.as_ref().unwrap().replicas, Some(4));
    assert_eq!(generation(&spec_changed), 2, "spec change bumps generation");
    assert_eq!(
        spec_changed.status.as_ref().and_then(|s| s.replicas),
        Some(2),
        "status kept on a main-resource write"
    );

    // Metadata-only changes do not bump it either.
    let labelled = api
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"tier": "front"}}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&labelled), 2, "label change keeps generation");

    // A PUT of status with a stale resourceVersion conflicts.
    let mut stale = patched.clone();
    stale.status.as_mut().unwrap().replicas = Some(3);
    let status = api_status(
        api.replace_status("web", &PostParams::default(), &stale)
            .await,
        "replace_status with a stale resourceVersion",
    );
    assert_eq!(status.code, 409, "{status:?}");
    t.stop().await;
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas() {
    let t = common::start().await;
    let api: Api<Deployment> = Api::namespaced(t.client.clone(), "default");
    api.create(&PostParams::default(), &deployment("web", 3))
        .await
        .unwrap();
    let scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.metadata.name.as_deref(), Some("web"));
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(3));
    assert_eq!(
        scale.status.as_ref().and_then(|s| s.selector.as_deref()),
        Some("app=web")
    );

    let scaled = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(scaled.spec.as_ref().and_then(|s| s.replicas), Some(7));
    let d = api.get("web").await.unwrap();
    assert_eq!(d.spec.as_ref().unwrap().replicas, Some(7));
    assert_eq!(generation(&d), 2, "scaling changes spec, so generation");
    assert_eq!(api.get_scale("web").await.unwrap().spec, scaled.spec);

    let status = api_status(
        api.patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": -1}})),
        )
        .await,
        "negative scale",
    );
    assert_eq!(status.code, 422, "{status:?}");
    assert_eq!(
        api.get("web").await.unwrap().spec.unwrap().replicas,
        Some(7)
    );
    t.stop().await;
}

#[tokio::test]
async fn finalizer_holds_deletion_until_removed() {
    let t = common::start().await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    let mut cm = config_map("held", &[("k", "v")], &[]);
    cm.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();

    let deleted = api.delete("held", &DeleteParams::default()).await.unwrap();
    let marked = deleted
        .left()
        .expect("a delete held by a finalizer returns the object, not a Status");
    assert!(
        marked.metadata.deletion_timestamp.is_some(),
        "{:?}",
        marked.metadata
    );
    let still = api.get("held").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some());
    assert_eq!(
        still.finalizers(),
        &["example.com/hold".to_string()],
        "finalizers kept"
    );

    // While terminating, no new finalizer may be added; other changes still work.
    let result = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}}),
            ),
        )
        .await;
    let status = api_status(result, "adding a finalizer while terminating");
    assert!(
        status.code == 403 || status.code == 422,
        "expected a refusal, got {status:?}"
    );
    let touched = api
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "w"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        touched.data.unwrap().get("k").map(String::as_str),
        Some("w")
    );
    // A second delete leaves it as it is.
    let again = api.delete("held", &DeleteParams::default()).await.unwrap();
    assert!(
        again
            .left()
            .is_some_and(|o| o.metadata.deletion_timestamp.is_some())
    );

    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    match api.get("held").await {
        Err(kube::Error::Api(s)) if s.code == 404 => {}
        other => panic!("expected 404 after removing the last finalizer, got {other:?}"),
    }
    match next_within(&mut stream, 10, "watch after finalizer removal").await {
        Ok(WatchEvent::Deleted(cm)) => assert_eq!(cm.name_any(), "held"),
        other => panic!("expected Deleted, got {other:?}"),
    }
    t.stop().await;
}

/// Every page of a paginated list shows the collection as it was at the first page: objects
/// created, changed or deleted after it do not show (kube's consistent continue). A continue
/// token older than the retained history gets 410 Expired; a malformed one 400.
#[tokio::test]
async fn paginated_lists_read_the_first_pages_snapshot() {
    let t = common::start_with_history(50).await;
    create_namespace(&t.client, "pages").await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "pages");
    for i in 0..9 {
        api.create(
            &PostParams::default(),
            &config_map(&format!("cm-{i}"), &[("v", "1")], &[]),
        )
        .await
        .unwrap();
    }
    let first = api.list(&ListParams::default().limit(4)).await.unwrap();
    let names = |l: &kube::core::ObjectList<ConfigMap>| -> Vec<String> {
        l.items.iter().map(|c| c.name_any()).collect()
    };
    assert_eq!(names(&first), ["cm-0", "cm-1", "cm-2", "cm-3"]);
    assert_eq!(first.metadata.remaining_item_count, Some(5));
    let token = first.metadata.continue_.clone().expect("continue token");

    // Changes after the first page, in the range the later pages cover.
    api.create(
        &PostParams::default(),
        &config_map("cm-4a", &[("v", "1")], &[]),
    )
    .await
    .unwrap();
    api.delete("cm-5", &DeleteParams::default()).await.unwrap();
    api.patch(
        "cm-6",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"v": "2"}})),
    )
    .await
    .unwrap();

    let second = api
        .list(&ListParams::default().limit(4).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["cm-4", "cm-5", "cm-6", "cm-7"]);
    assert_eq!(
        second.items[2].data.as_ref().unwrap()["v"],
        "1",
        "cm-6 as it was at the first page"
    );
    assert_eq!(
        second.metadata.resource_version, first.metadata.resource_version,
        "every page is the first page's snapshot"
    );
    let third = api
        .list(
            &ListParams::default()
                .limit(4)
                .continue_token(second.metadata.continue_.as_deref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(names(&third), ["cm-8"]);
    assert_eq!(third.metadata.continue_, None);

    // A fresh list sees the changes.
    let now = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        names(&now),
        [
            "cm-0", "cm-1", "cm-2", "cm-3", "cm-4", "cm-4a", "cm-6", "cm-7", "cm-8"
        ]
    );

    // Once the history no longer reaches the first page, its token is 410 Expired.
    let current = t.server.storage.current_revision().await;
    t.server.storage.compact(current).await;
    match api
        .list(&ListParams::default().limit(4).continue_token(&token))
        .await
    {
        Err(kube::Error::Api(e)) => {
            assert_eq!(
                (e.code, e.reason.as_str()),
                (410, "Expired"),
                "{}",
                e.message
            );
            assert!(e.message.contains("continue"), "{}", e.message);
        }
        other => panic!("expected 410 Expired, got {other:?}"),
    }
    match api
        .list(&ListParams::default().limit(4).continue_token("not-a-token"))
        .await
    {
        Err(kube::Error::Api(e)) => assert_eq!(e.code, 400, "{}", e.message),
        other => panic!("expected 400, got {other:?}"),
    }
    t.stop().await;
}
