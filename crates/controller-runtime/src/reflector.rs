//! Shared reflectors: one watch of a resource feeding an in-memory store, whose changes go to
//! every subscriber (each controller that watches that kind), as client-go's shared informers
//! do. A [`crate::Manager`] keeps one per kind for its process.
//!
//! kube-runtime's store takes a (re)list's objects in one swap at its end, so a listed object
//! is reported only then: reported earlier, a worker could look it up before the store holds
//! it and take it for deleted (a new term of the controllers once deleted a live template's
//! binding that way, and left another binding's status stale). Objects a relist no longer
//! finds are reported deleted, since no watch event said so.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use flotilla_tasks::{AbortOnDrop, Tasks};
use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher::{self, Event};
use parking_lot::RwLock;
use serde::de::DeserializeOwned;

/// A subscriber: called with each changed object and whether it was deleted, always once
/// the store shows what it reports.
pub type OnChange<K> = Arc<dyn Fn(&K, bool) + Send + Sync>;

/// The subscribers of one reflector, each with the id its [`Subscription`] removes it by.
type Subscribers<K> = Arc<RwLock<Vec<(u64, OnChange<K>)>>>;

type Keep<K> = Box<dyn Fn(&K) -> bool + Send>;
type Trim<K> = Box<dyn FnMut(&mut K) + Send>;

/// What a reflector watches and keeps. By default: every object, all of it but its
/// managedFields (no controller here reads them, and they are often the larger half of an
/// object).
pub struct ReflectorSpec<K> {
    config: watcher::Config,
    keep: Keep<K>,
    trim: Trim<K>,
}

impl<K> Default for ReflectorSpec<K> {
    fn default() -> Self {
        Self {
            config: watcher::Config::default(),
            keep: Box::new(|_| true),
            trim: Box::new(|_| {}),
        }
    }
}

impl<K> ReflectorSpec<K> {
    /// The watch's selectors and options.
    pub fn config(mut self, config: watcher::Config) -> Self {
        self.config = config;
        self
    }

    /// Only the objects `keep` accepts are stored and reported. `keep` must judge by what
    /// never changes in an object (its namespace and name): an object it accepted once and
    /// refuses later would stay in the store as it was.
    pub fn keep(mut self, keep: impl Fn(&K) -> bool + Send + 'static) -> Self {
        self.keep = Box::new(keep);
        self
    }

    /// `trim` is applied to every object before it is stored (and seen by subscribers).
    pub fn trim(mut self, trim: impl FnMut(&mut K) + Send + 'static) -> Self {
        self.trim = Box::new(trim);
        self
    }
}

/// One resource's store and the subscribers to its changes. Cloning shares them.
pub struct Reflector<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    store: Store<K>,
    subscribers: Subscribers<K>,
}

impl<K> Clone for Reflector<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    fn clone(&self) -> Self {
        Self {
            store: self.store.clone(),
            subscribers: self.subscribers.clone(),
        }
    }
}

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: Clone + Eq + Hash + Send + Sync,
{
    /// Starts watching `api` as `spec` says; the watch is a task of `tasks` named `name`, and
    /// ends with them.
    pub fn start(api: Api<K>, spec: ReflectorSpec<K>, tasks: &Tasks, name: String) -> Self
    where
        K::DynamicType: Default,
    {
        let (reflector, watch) = Self::new(api, K::DynamicType::default(), spec, name.clone());
        tasks.spawn(name, watch);
        reflector
    }

    /// A reflector of a kind known at run time (`dyntype`), whose watch ends when the
    /// returned guard is dropped (a kind the host stopped serving).
    pub fn start_owned(
        api: Api<K>,
        dyntype: K::DynamicType,
        spec: ReflectorSpec<K>,
        name: String,
    ) -> (Self, AbortOnDrop) {
        let (reflector, watch) = Self::new(api, dyntype, spec, name);
        (reflector, AbortOnDrop(tokio::spawn(watch)))
    }

    /// The reflector and the watch that fills it.
    fn new(
        api: Api<K>,
        dyntype: K::DynamicType,
        spec: ReflectorSpec<K>,
        name: String,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let ReflectorSpec {
            config,
            keep,
            mut trim,
        } = spec;
        let writer = reflector::store::Writer::new(dyntype);
        let store = writer.as_reader();
        let subscribers: Subscribers<K> = Arc::default();
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
        let stream = reflector::reflector(writer, trimmed).backoff(WatchBackoff::default());
        let (subs, held) = (subscribers.clone(), store.clone());
        let watch = async move {
            futures::pin_mut!(stream);
            let mut relist = Relist::default();
            let notify = |obj: &K, deleted: bool| {
                // Called outside the lock: a subscriber may take its time (or subscribe).
                let current: Vec<OnChange<K>> =
                    subs.read().iter().map(|(_, s)| s.clone()).collect();
                for on_change in current {
                    on_change(obj, deleted);
                }
            };
            while let Some(event) = stream.next().await {
                match event {
                    Ok(Event::Apply(obj)) => notify(&obj, false),
                    Ok(Event::Delete(obj)) => notify(&obj, true),
                    Ok(Event::Init) => relist.start(held.state()),
                    Ok(Event::InitApply(obj)) => relist.listed.push(obj),
                    Ok(Event::InitDone) => relist.finish(&notify),
                    Err(e) => {
                        tracing::warn!(reflector = %name, error = %e, "watch failed; retrying")
                    }
                }
            }
        };
        (Self { store, subscribers }, watch)
    }
}

impl<K> Reflector<K>
where
    K: Resource + Clone + 'static,
    K::DynamicType: Clone + Eq + Hash,
{
    /// The store.
    pub fn store(&self) -> &Store<K> {
        &self.store
    }

    /// Calls `on_change` for every later change, and now for every object the store holds
    /// (as a change), so a subscriber that comes late misses nothing. For the reflector's
    /// life: see [`Reflector::subscribe_scoped`] for one that ends.
    pub fn subscribe(&self, on_change: impl Fn(&K, bool) + Send + Sync + 'static) {
        self.add_subscriber(Arc::new(on_change));
    }

    /// As [`Reflector::subscribe`], until the returned [`Subscription`] is dropped (a
    /// controller that stops while the reflector goes on: a lost leadership term).
    pub fn subscribe_scoped(
        &self,
        on_change: impl Fn(&K, bool) + Send + Sync + 'static,
    ) -> Subscription
    where
        K: Send + Sync,
        K::DynamicType: Send + Sync,
    {
        let id = self.add_subscriber(Arc::new(on_change));
        let subscribers = Arc::downgrade(&self.subscribers);
        Subscription(Some(Box::new(move || {
            if let Some(subscribers) = subscribers.upgrade() {
                subscribers.write().retain(|(i, _)| *i != id);
            }
        })))
    }

    fn add_subscriber(&self, on_change: OnChange<K>) -> u64 {
        static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let held = {
            let mut subscribers = self.subscribers.write();
            subscribers.push((id, on_change.clone()));
            // Read under the lock: a change the reflector reports after this is reported to
            // this subscriber too, and one reported before is in this state.
            self.store.state()
        };
        for obj in held {
            on_change(&obj, false);
        }
        id
    }

    /// Waits until the store's first list is complete; false when its watch ended for good.
    pub async fn ready(&self) -> bool {
        wait_ready(&self.store).await
    }
}

/// A subscriber's place in a reflector: dropping it ends the subscription.
pub struct Subscription(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(end) = self.0.take() {
            end();
        }
    }
}

/// Waits until `store`'s first list is complete; false when its watch ended for good.
///
/// Polls in rounds: kube-runtime's `Store::wait_until_ready` wakes only one of several
/// tasks waiting on clones of one store, and shared stores have several.
pub async fn wait_ready<K>(store: &Store<K>) -> bool
where
    K: reflector::Lookup + Clone + 'static,
    K::DynamicType: Eq + Hash + Clone,
{
    loop {
        match tokio::time::timeout(Duration::from_millis(100), store.wait_until_ready()).await {
            Ok(result) => return result.is_ok(),
            Err(_) => continue,
        }
    }
}

/// Strips `meta` to what names the object, its version and labels and whether it is being
/// deleted: for cached objects that no controller reads beyond that (the credentials
/// Secrets and execution namespaces of thousands of members, say).
pub fn identity_only(meta: &mut ObjectMeta) {
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

/// Retry delays of a failed watch: 250 ms doubling to 5 s. kube-runtime's default grows to
/// 30 s, so a few failed attempts (the Cluster API briefly unavailable behind its APIService,
/// a host restarting) would leave a controller blind for half a minute after it recovers.
#[derive(Clone, Copy, Debug)]
struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const MIN: Duration = Duration::from_millis(250);
    const MAX: Duration = Duration::from_secs(5);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: Self::MIN }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        let delay = self.next;
        self.next = (self.next * 2).min(Self::MAX);
        Some(delay)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::MIN;
    }
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

#[cfg(test)]
mod tests {
    // Test code: a panic is how a step reports failure.
    #![allow(clippy::unwrap_used)]

    use std::sync::Mutex;

    use k8s_openapi::api::core::v1::ConfigMap;

    use super::*;

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
    fn a_scoped_subscription_ends_when_dropped_and_a_plain_one_stays() {
        let writer = reflector::store::Writer::<ConfigMap>::new(());
        let r = Reflector {
            store: writer.as_reader(),
            subscribers: Arc::default(),
        };
        r.subscribe(|_, _| {});
        let scoped = r.subscribe_scoped(|_, _| {});
        assert_eq!(r.subscribers.read().len(), 2);
        drop(scoped);
        assert_eq!(r.subscribers.read().len(), 1);
    }

    #[test]
    fn watch_retries_double_to_five_seconds_and_reset() {
        use kube::runtime::utils::Backoff;
        let mut b = WatchBackoff::default();
        let delays: Vec<u128> = b.by_ref().take(7).map(|d| d.as_millis()).collect();
        assert_eq!(delays, [250, 500, 1000, 2000, 4000, 5000, 5000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(250)));
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
