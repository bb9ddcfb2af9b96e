//! The plumbing every controller here repeats: a reflector (a watch feeding an in-memory
//! store, with kube-runtime's backoff while the API is away) that calls back on each change,
//! and a pool of workers draining a [`WorkQueue`] with retries on failure.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use flotilla_runtime::WorkQueue;
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tracing::warn;

use crate::Error;

/// Aborts the task when dropped, so watches end with their owner.
pub(crate) use flotilla_tasks::AbortOnDrop;

/// Watches `api` into a store; `on_change(object, deleted)` runs for every object seen
/// (on relists too), always once the store shows what it reports. The store is ready once
/// the first list is complete.
///
/// kube-runtime's store takes a (re)list's objects in one swap at its end, so a listed
/// object is reported only then: reported earlier, a worker could look it up before the
/// store holds it and take it for deleted (a new term of the controllers once deleted a
/// live template's binding that way, and left another binding's status stale). Objects a
/// relist no longer finds are reported deleted, since no watch event said so.
pub(crate) fn reflect<K, F>(
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    on_change: F,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    F: Fn(&K, bool) + Send + 'static,
{
    reflect_trimmed(api, config, dyntype, |_| {}, on_change)
}

/// [`reflect`], with `trim` applied to every object before it is stored (and seen by
/// `on_change`); managedFields are always dropped, as no controller here reads them and
/// they are often the larger half of an object.
pub(crate) fn reflect_trimmed<K, T, F>(
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    trim: T,
    on_change: F,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    T: FnMut(&mut K) + Send + 'static,
    F: Fn(&K, bool) + Send + 'static,
{
    reflect_kept(api, config, dyntype, |_| true, trim, on_change)
}

/// [`reflect_trimmed`] of only the objects `keep` accepts: the others are neither stored nor
/// reported. `keep` must judge by what never changes in an object (its namespace and name):
/// an object it accepted once and refuses later would stay in the store as it was.
pub(crate) fn reflect_kept<K, P, T, F>(
    api: Api<K>,
    config: watcher::Config,
    dyntype: K::DynamicType,
    keep: P,
    mut trim: T,
    on_change: F,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
    P: Fn(&K) -> bool + Send + 'static,
    T: FnMut(&mut K) + Send + 'static,
    F: Fn(&K, bool) + Send + 'static,
{
    let writer = reflector::store::Writer::new(dyntype);
    let store = writer.as_reader();
    let store_for_relist = store.clone();
    let trimmed = watcher::watcher(api, config)
        .filter(move |event| {
            let kept = match event {
                Ok(Event::Apply(obj) | Event::InitApply(obj) | Event::Delete(obj)) => keep(obj),
                Ok(Event::Init | Event::InitDone) | Err(_) => true,
            };
            std::future::ready(kept)
        })
        .modify(move |obj: &mut K| {
            obj.meta_mut().managed_fields = None;
            trim(obj);
        });
    let stream = reflector::reflector(writer, trimmed).default_backoff();
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        let mut relist = Relist::default();
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Apply(obj)) => on_change(&obj, false),
                Ok(Event::Delete(obj)) => on_change(&obj, true),
                Ok(Event::Init) => relist.start(store_for_relist.state()),
                Ok(Event::InitApply(obj)) => relist.listed.push(obj),
                Ok(Event::InitDone) => relist.finish(&on_change),
                Err(e) => warn!(error = %e, "watch failed; retrying"),
            }
        }
    });
    (store, task)
}

/// Strips `meta` to what names the object, its version and labels and whether it is being
/// deleted: for cached objects that no controller here reads beyond that (the credentials
/// Secrets and execution namespaces of thousands of members, say).
pub(crate) fn identity_only(meta: &mut ObjectMeta) {
    *meta = ObjectMeta {
        name: meta.name.take(),
        namespace: meta.namespace.take(),
        uid: meta.uid.take(),
        resource_version: meta.resource_version.take(),
        labels: meta.labels.take(),
        deletion_timestamp: meta.deletion_timestamp.take(),
        ..ObjectMeta::default()
    };
}

/// One (re)list in progress: what the store held before it, and what it has listed so far.
struct Relist<K> {
    before: Vec<Arc<K>>,
    listed: Vec<K>,
}

impl<K> Default for Relist<K> {
    fn default() -> Self {
        Self {
            before: Vec::new(),
            listed: Vec::new(),
        }
    }
}

impl<K: Resource> Relist<K> {
    fn start(&mut self, before: Vec<Arc<K>>) {
        self.before = before;
        self.listed.clear();
    }

    /// Reports the listed objects, then those the store held that the list no longer has.
    fn finish(&mut self, on_change: &impl Fn(&K, bool)) {
        let listed: std::collections::HashSet<(Option<&str>, Option<&str>)> = self
            .listed
            .iter()
            .map(|o| (o.meta().namespace.as_deref(), o.meta().name.as_deref()))
            .collect();
        let gone: Vec<Arc<K>> = self
            .before
            .iter()
            .filter(|o| {
                !listed.contains(&(o.meta().namespace.as_deref(), o.meta().name.as_deref()))
            })
            .cloned()
            .collect();
        // Taken, not drained: the buffers of a whole list would stay allocated until the
        // next relist otherwise.
        for obj in std::mem::take(&mut self.listed) {
            on_change(&obj, false);
        }
        for obj in gone {
            on_change(&obj, true);
        }
        self.before = Vec::new();
    }
}

/// Waits until the store's first list is complete; false when its watch ended for good.
///
/// Polls in rounds: kube-runtime 5's `Store::wait_until_ready` wakes only one of several
/// tasks waiting on clones of one store, and the Work cache is shared.
pub(crate) async fn wait_ready<K>(store: &Store<K>) -> bool
where
    K: kube::runtime::reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    loop {
        match tokio::time::timeout(Duration::from_millis(100), store.wait_until_ready()).await {
            Ok(result) => return result.is_ok(),
            Err(_) => continue,
        }
    }
}

/// What a reconcile asks for next.
pub(crate) enum Next {
    /// Nothing until something changes.
    Done,
    /// Look again after this long.
    After(Duration),
}

/// Runs `workers` tasks taking keys from `queue` into `reconcile`; failures are retried with
/// the queue's backoff (conflicts at once).
pub(crate) fn spawn_workers<K, F, Fut>(
    queue: Arc<WorkQueue<K>>,
    workers: usize,
    reconcile: F,
) -> Vec<JoinHandle<()>>
where
    K: Clone + Eq + Hash + Send + Sync + Debug + 'static,
    F: Fn(K) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Result<Next, Error>> + Send + 'static,
{
    (0..workers.max(1))
        .map(|_| {
            let queue = queue.clone();
            let reconcile = reconcile.clone();
            tokio::spawn(async move {
                while let Some(key) = queue.pop().await {
                    match reconcile(key.clone()).await {
                        Ok(Next::Done) => queue.forget(&key),
                        Ok(Next::After(delay)) => {
                            queue.forget(&key);
                            queue.add_after(key.clone(), delay);
                        }
                        Err(e) if e.is_conflict() => {
                            tracing::debug!(?key, "write conflict; retrying");
                            queue.add(key.clone());
                        }
                        Err(e) => {
                            let delay = queue.retry(key.clone());
                            warn!(?key, error = %crate::error_chain(&e), ?delay, "reconcile failed; retrying");
                        }
                    }
                    queue.done(&key);
                }
            })
        })
        .collect()
}

/// A dynamic API for one resource, namespaced or not.
pub(crate) fn dynamic_api(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

#[cfg(test)]
mod relist_tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::{Arc, Mutex};

    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::Relist;

    fn cm(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn a_relist_reports_what_it_listed_then_what_it_no_longer_has() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = |o: &ConfigMap, deleted: bool| {
            seen.lock()
                .unwrap()
                .push((o.metadata.name.clone().unwrap(), deleted));
        };
        let mut relist = Relist::default();
        relist.start(vec![Arc::new(cm("a")), Arc::new(cm("b"))]);
        relist.listed.push(cm("b"));
        relist.listed.push(cm("c"));
        assert!(seen.lock().unwrap().is_empty(), "nothing before the end");
        relist.finish(&record);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![
                ("b".to_string(), false),
                ("c".to_string(), false),
                ("a".to_string(), true)
            ]
        );
        // The first list of a store: nothing held before, nothing reported deleted.
        seen.lock().unwrap().clear();
        relist.start(Vec::new());
        relist.listed.push(cm("d"));
        relist.finish(&record);
        assert_eq!(*seen.lock().unwrap(), vec![("d".to_string(), false)]);
    }
}
