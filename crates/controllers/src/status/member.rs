//! A member cluster as the status controller reaches it: a client built from the Cluster's
//! endpoint and credentials Secret, and one watch per kind (nodes, pods) feeding a compact
//! cache — per node its readiness and allocatable, per pod its node, whether it finished and
//! its effective request — instead of whole objects, so hundreds of watched members stay
//! cheap. The watches back off (kube-runtime's default: 0.8 s doubling to 30 s) while the
//! member is unreachable, and the status controller restarts them once it answers again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use flotilla_api::Cluster;
use flotilla_membership::{MemberCredentials, MemberTarget};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use kube::{Resource, ResourceExt};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tracing::{Instrument, debug, info_span, warn};

use crate::resources::{CapacityRounding, NodeInfo, PodInfo, Summary, summarize};
use crate::{AbortOnDrop, Error, Metrics, error_chain};

use super::CONTROLLER;

/// Reads the credentials Secret of `cluster` from the host.
pub(crate) async fn read_credentials(
    host: &kube::Client,
    cluster: &Cluster,
    timeout: Duration,
) -> Result<MemberCredentials, Error> {
    let name = cluster.name_any();
    match tokio::time::timeout(timeout, flotilla_membership::credentials_of(host, cluster)).await {
        Ok(result) => result.map_err(|source| Error::Credentials {
            cluster: name,
            source,
        }),
        Err(_) => Err(Error::Timeout {
            action: "reading the credentials",
            cluster: name,
            timeout,
        }),
    }
}

/// A client for the member; connecting is bounded by `connect_timeout` so a dead member
/// fails fast.
pub(crate) async fn connect(
    name: &str,
    target: &MemberTarget,
    credentials: &MemberCredentials,
    connect_timeout: Duration,
) -> Result<kube::Client, Error> {
    target
        .client(name, credentials, connect_timeout)
        .await
        .map_err(|source| Error::Connect {
            cluster: name.to_string(),
            source,
        })
}

// === impl Table ===

/// The compact cache of one kind, maintained from watcher events: a relist builds a fresh
/// map beside the current one and swaps it in when complete, so readers never see a
/// half-listed member.
#[derive(Debug)]
pub(crate) struct Table<V> {
    items: HashMap<String, V>,
    relisting: Option<HashMap<String, V>>,
    synced: bool,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Self {
            items: HashMap::new(),
            relisting: None,
            synced: false,
        }
    }
}

fn key_of<K: Resource>(obj: &K) -> String {
    match obj.meta().namespace.as_deref() {
        Some(ns) => format!("{ns}/{}", obj.meta().name.as_deref().unwrap_or_default()),
        None => obj.meta().name.clone().unwrap_or_default(),
    }
}

impl<V> Table<V> {
    pub(crate) fn on_event<K: Resource>(&mut self, event: Event<K>, summarize: fn(&K) -> V) {
        match event {
            Event::Init => self.relisting = Some(HashMap::new()),
            Event::InitApply(obj) => {
                let slot = self.relisting.get_or_insert_with(HashMap::new);
                slot.insert(key_of(&obj), summarize(&obj));
            }
            Event::InitDone => {
                if let Some(mut fresh) = self.relisting.take() {
                    fresh.shrink_to_fit();
                    self.items = fresh;
                }
                self.synced = true;
            }
            Event::Apply(obj) => {
                self.items.insert(key_of(&obj), summarize(&obj));
            }
            Event::Delete(obj) => {
                self.items.remove(&key_of(&obj));
            }
        }
    }

    pub(crate) fn synced(&self) -> bool {
        self.synced
    }

    pub(crate) fn items(&self) -> &HashMap<String, V> {
        &self.items
    }
}

/// Nodes and pods of one member.
#[derive(Debug, Default)]
pub(crate) struct MemberCache {
    pub nodes: Table<NodeInfo>,
    pub pods: Table<PodInfo>,
}

impl MemberCache {
    /// The summaries, once both kinds have been listed.
    pub(crate) fn summary(&self, rounding: &CapacityRounding) -> Option<Summary> {
        if !(self.nodes.synced() && self.pods.synced()) {
            return None;
        }
        Some(summarize(
            self.nodes.items(),
            self.pods.items().values(),
            rounding,
        ))
    }
}

// === impl MemberWatches ===

/// The running node and pod watches of one member; dropping it stops them.
pub(crate) struct MemberWatches {
    cache: Arc<Mutex<MemberCache>>,
    metrics: Arc<Metrics>,
    _tasks: [AbortOnDrop; 2],
}

impl MemberWatches {
    pub(crate) fn start(client: kube::Client, cluster: &str, metrics: Arc<Metrics>) -> Self {
        let cache = Arc::new(Mutex::new(MemberCache::default()));
        let nodes = tokio::spawn(
            watch(
                Api::<Node>::all(client.clone()),
                cache.clone(),
                |c| &mut c.nodes,
                NodeInfo::from_node,
                metrics.clone(),
            )
            .instrument(info_span!("member_watch", cluster, kind = "nodes")),
        );
        let pods = tokio::spawn(
            watch(
                Api::<Pod>::all(client),
                cache.clone(),
                |c| &mut c.pods,
                PodInfo::from_pod,
                metrics.clone(),
            )
            .instrument(info_span!("member_watch", cluster, kind = "pods")),
        );
        metrics.watching(1);
        Self {
            cache,
            metrics,
            _tasks: [AbortOnDrop(nodes), AbortOnDrop(pods)],
        }
    }

    pub(crate) fn summary(&self, rounding: &CapacityRounding) -> Option<Summary> {
        self.cache.lock().summary(rounding)
    }
}

impl Drop for MemberWatches {
    fn drop(&mut self) {
        self.metrics.watching(-1);
    }
}

async fn watch<K, V>(
    api: Api<K>,
    cache: Arc<Mutex<MemberCache>>,
    table: fn(&mut MemberCache) -> &mut Table<V>,
    summarize: fn(&K) -> V,
    metrics: Arc<Metrics>,
) where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    K::DynamicType: Default,
{
    let mut events = watch_stream(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut failing = false;
    while let Some(item) = events.next().await {
        match item {
            Ok(event) => {
                failing = false;
                table(&mut cache.lock()).on_event(event, summarize);
            }
            Err(e) => {
                metrics.error(CONTROLLER, "watch");
                // Once per outage: a dead member would otherwise log every backoff step.
                if failing {
                    debug!(error = %error_chain(&e), "member watch still failing");
                } else {
                    warn!(error = %error_chain(&e), "member watch failed; backing off");
                }
                failing = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(name: &str, node: &str, cpu: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"},
        }))
        .unwrap()
    }

    #[test]
    fn table_follows_events_and_swaps_relists_atomically() {
        let mut t: Table<PodInfo> = Table::default();
        assert!(!t.synced());
        t.on_event(Event::Init, PodInfo::from_pod);
        t.on_event(Event::InitApply(pod("a", "n1", "1")), PodInfo::from_pod);
        assert!(t.items().is_empty(), "not visible before InitDone");
        t.on_event(Event::InitDone, PodInfo::from_pod);
        assert!(t.synced());
        assert_eq!(t.items().len(), 1);
        assert!(t.items().contains_key("ns/a"));
        t.on_event(Event::Apply(pod("b", "n1", "2")), PodInfo::from_pod);
        t.on_event(Event::Delete(pod("a", "n1", "1")), PodInfo::from_pod);
        assert_eq!(t.items().keys().collect::<Vec<_>>(), ["ns/b"]);
        // A relist keeps serving the old content until complete, then replaces it.
        t.on_event(Event::Init, PodInfo::from_pod);
        t.on_event(Event::InitApply(pod("c", "n2", "1")), PodInfo::from_pod);
        assert_eq!(t.items().keys().collect::<Vec<_>>(), ["ns/b"]);
        t.on_event(Event::InitDone, PodInfo::from_pod);
        assert_eq!(t.items().keys().collect::<Vec<_>>(), ["ns/c"]);
    }

    #[test]
    fn no_summary_until_both_kinds_are_listed() {
        let mut cache = MemberCache::default();
        let rounding = CapacityRounding::default();
        cache
            .nodes
            .on_event(Event::<Node>::InitDone, NodeInfo::from_node);
        assert!(cache.summary(&rounding).is_none());
        cache
            .pods
            .on_event(Event::<Pod>::InitDone, PodInfo::from_pod);
        let s = cache.summary(&rounding).unwrap();
        assert_eq!(s.node_summary.total_num, Some(0));
    }
}
