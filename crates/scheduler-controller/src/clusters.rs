//! The cluster side of the loop: [`ClusterIndex`] keeps one `Arc<ClusterSnapshot>` per Cluster
//! (re-parsed only when that Cluster changes) and a name-sorted list handed to every decision
//! without copying; [`ReservationBook`] keeps capacity promised to bindings until members
//! report it as used (or a TTL passes).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use flotilla_karmada_api::Cluster;
use flotilla_scheduler::{ClusterSnapshot, Reservations, ResourceVector};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use parking_lot::RwLock;
use tokio::time::Instant;

/// What a Cluster update changed, as far as scheduling cares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClusterChange {
    /// Anything the scheduler reads changed (capacity, taints, labels, readiness, APIs...).
    pub matters: bool,
    /// The taints changed (bindings placed there may have to leave).
    pub taints: bool,
    /// The reported free capacity shrank: the member now counts what was reserved there.
    pub usage_grew: bool,
    /// What the filters read changed (new cluster, labels, location, taints, readiness, API
    /// enablements): a Duplicated binding may now fit here, or no longer.
    pub fit: bool,
}

#[derive(Default)]
struct Inner {
    by_name: BTreeMap<String, Arc<ClusterSnapshot>>,
    sorted: Arc<Vec<Arc<ClusterSnapshot>>>,
    /// First sighting of taints without `timeAdded`: (cluster, key, effect) -> time.
    first_seen: HashMap<(String, String, String), Timestamp>,
}

/// Snapshots of every Cluster, by name.
#[derive(Default)]
pub struct ClusterIndex {
    inner: RwLock<Inner>,
}

impl ClusterIndex {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// All snapshots, sorted by name (cheap: an `Arc` clone).
    pub fn snapshot(&self) -> Arc<Vec<Arc<ClusterSnapshot>>> {
        self.inner.read().sorted.clone()
    }

    /// One snapshot.
    pub fn get(&self, name: &str) -> Option<Arc<ClusterSnapshot>> {
        self.inner.read().by_name.get(name).cloned()
    }

    /// Adds or updates a Cluster; taints without `timeAdded` get their first sighting.
    pub fn apply(&self, cluster: &Cluster, now: Timestamp) -> ClusterChange {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        let mut inner = self.inner.write();
        let mut snap = ClusterSnapshot::from_cluster(cluster);
        inner.first_seen.retain(|(c, key, effect), _| {
            c != &name
                || snap
                    .taints
                    .iter()
                    .any(|t| &t.key == key && &t.effect == effect)
        });
        for taint in &mut snap.taints {
            if taint.time_added.is_none() {
                let seen = *inner
                    .first_seen
                    .entry((name.clone(), taint.key.clone(), taint.effect.clone()))
                    .or_insert(now);
                taint.time_added = Some(Time(seen));
            }
        }
        let change = match inner.by_name.get(&name) {
            None => ClusterChange {
                matters: true,
                taints: !snap.taints.is_empty(),
                usage_grew: false,
                fit: true,
            },
            Some(old) if **old == snap => return ClusterChange::default(),
            Some(old) => ClusterChange {
                matters: true,
                taints: old.taints != snap.taints,
                usage_grew: shrank(&old.free, &snap.free, cluster),
                fit: old.labels != snap.labels
                    || old.provider != snap.provider
                    || old.region != snap.region
                    || old.zones != snap.zones
                    || old.taints != snap.taints
                    || old.api_enablements != snap.api_enablements
                    || old.deleting != snap.deleting
                    || old.ready != snap.ready,
            },
        };
        inner.by_name.insert(name, Arc::new(snap));
        inner.sorted = Arc::new(inner.by_name.values().cloned().collect());
        change
    }

    /// Forgets a Cluster; whether it was known.
    pub fn remove(&self, name: &str) -> bool {
        let mut inner = self.inner.write();
        inner.first_seen.retain(|(c, _, _), _| c != name);
        if inner.by_name.remove(name).is_none() {
            return false;
        }
        inner.sorted = Arc::new(inner.by_name.values().cloned().collect());
        true
    }

    /// Names of the known clusters.
    pub fn names(&self) -> Vec<String> {
        self.inner.read().by_name.keys().cloned().collect()
    }
}

/// Whether some resource's free amount went down.
fn shrank(old: &ResourceVector, new: &ResourceVector, cluster: &Cluster) -> bool {
    let fixed = ["cpu", "memory", "pods", "ephemeral-storage"];
    let extended = cluster
        .status
        .as_ref()
        .and_then(|s| s.resource_summary.as_ref())
        .map(|s| s.allocatable.keys().map(String::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    fixed
        .iter()
        .copied()
        .chain(extended)
        .any(|r| new.get(r) < old.get(r))
}

/// Reservations with the time of each cluster's latest reservation.
pub struct ReservationBook {
    reservations: Reservations,
    last: HashMap<String, Instant>,
    ttl: Duration,
}

impl ReservationBook {
    /// An empty book whose entries expire `ttl` after a cluster's latest reservation.
    pub fn new(ttl: Duration) -> Self {
        Self {
            reservations: Reservations::default(),
            last: HashMap::new(),
            ttl,
        }
    }

    /// Current reservations, after dropping the expired ones.
    pub fn current(&mut self, now: Instant) -> &Reservations {
        if !self.last.is_empty() {
            let ttl = self.ttl;
            let expired: Vec<String> = self
                .last
                .iter()
                .filter(|(_, at)| now.duration_since(**at) >= ttl)
                .map(|(c, _)| c.clone())
                .collect();
            for cluster in expired {
                self.clear(&cluster);
            }
        }
        &self.reservations
    }

    /// Reserves `replicas` of `per_replica` on `cluster`.
    pub fn reserve(
        &mut self,
        cluster: &str,
        per_replica: &ResourceVector,
        replicas: i64,
        now: Instant,
    ) {
        if replicas <= 0 {
            return;
        }
        self.reservations.reserve(cluster, per_replica, replicas);
        self.last.insert(cluster.to_owned(), now);
    }

    /// Gives a reservation back (the write carrying it failed).
    pub fn release(&mut self, cluster: &str, per_replica: &ResourceVector, replicas: i64) {
        self.reservations.release(cluster, per_replica, replicas);
        if self.reservations.get(cluster).is_none() {
            self.last.remove(cluster);
        }
    }

    /// Drops everything reserved on `cluster`.
    pub fn clear(&mut self, cluster: &str) {
        self.reservations.clear_cluster(cluster);
        self.last.remove(cluster);
    }
}

#[cfg(test)]
mod tests {
    // Test code: a panic is how a step reports failure.
    #![allow(clippy::unwrap_used)]

    use super::*;
    use flotilla_karmada_api::cluster::{
        ClusterSpec, ClusterStatus, ClusterSyncMode, ResourceSummary,
    };
    use k8s_openapi::api::core::v1::Taint;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn cluster(name: &str, cpu_used: &str, taints: Vec<Taint>) -> Cluster {
        let mut c = Cluster::new(
            name,
            ClusterSpec {
                id: None,
                sync_mode: ClusterSyncMode::Push,
                api_endpoint: None,
                secret_ref: None,
                impersonator_secret_ref: None,
                insecure_skip_tls_verification: None,
                proxy_url: None,
                proxy_header: BTreeMap::new(),
                provider: None,
                region: None,
                zone: None,
                zones: vec![],
                taints,
                resource_models: vec![],
            },
        );
        c.status = Some(ClusterStatus {
            resource_summary: Some(ResourceSummary {
                allocatable: [("cpu".to_string(), Quantity("8".into()))].into(),
                allocated: [("cpu".to_string(), Quantity(cpu_used.into()))].into(),
                ..ResourceSummary::default()
            }),
            ..ClusterStatus::default()
        });
        c
    }

    fn taint(key: &str) -> Taint {
        Taint {
            key: key.into(),
            effect: "NoExecute".into(),
            ..Taint::default()
        }
    }

    #[test]
    fn reports_what_changed_and_keeps_the_list_sorted() {
        let idx = ClusterIndex::new();
        let t0 = Timestamp::from_second(1_000).unwrap();
        assert!(idx.apply(&cluster("b", "1", vec![]), t0).matters);
        assert!(idx.apply(&cluster("a", "1", vec![]), t0).matters);
        let names: Vec<_> = idx.snapshot().iter().map(|c| c.name.clone()).collect();
        assert_eq!(names, ["a", "b"]);
        // Same content: nothing to do.
        assert_eq!(
            idx.apply(&cluster("a", "1", vec![]), t0),
            ClusterChange::default()
        );
        // More used: usage grew.
        let ch = idx.apply(&cluster("a", "2", vec![]), t0);
        assert!(ch.matters && ch.usage_grew && !ch.taints);
        // Less used: matters, usage did not grow.
        let ch = idx.apply(&cluster("a", "1", vec![]), t0);
        assert!(ch.matters && !ch.usage_grew);
        let ch = idx.apply(&cluster("a", "1", vec![taint("x")]), t0);
        assert!(ch.taints);
        assert!(idx.remove("a"));
        assert!(!idx.remove("a"));
        assert_eq!(idx.names(), ["b"]);
    }

    #[test]
    fn taints_without_time_keep_their_first_sighting() {
        let idx = ClusterIndex::new();
        let t0 = Timestamp::from_second(1_000).unwrap();
        let t1 = Timestamp::from_second(2_000).unwrap();
        idx.apply(&cluster("a", "1", vec![taint("x")]), t0);
        // A later status update (same taint, still no time) keeps t0.
        idx.apply(&cluster("a", "2", vec![taint("x")]), t1);
        let snap = idx.get("a").unwrap();
        assert_eq!(snap.taints[0].time_added.as_ref().unwrap().0, t0);
        // Gone and back: a new sighting.
        idx.apply(&cluster("a", "2", vec![]), t1);
        idx.apply(&cluster("a", "2", vec![taint("x")]), t1);
        assert_eq!(
            idx.get("a").unwrap().taints[0]
                .time_added
                .as_ref()
                .unwrap()
                .0,
            t1
        );
    }

    #[test]
    fn reservations_expire_after_the_ttl() {
        let mut book = ReservationBook::new(Duration::from_secs(30));
        let now = Instant::now();
        let req = ResourceVector::new().with("cpu", 1000);
        book.reserve("a", &req, 2, now);
        book.reserve("b", &req, 2, now + Duration::from_secs(20));
        assert!(
            book.current(now + Duration::from_secs(10))
                .get("a")
                .is_some()
        );
        let r = book.current(now + Duration::from_secs(31));
        assert!(r.get("a").is_none());
        assert!(r.get("b").is_some());
        book.release("b", &req, 2);
        assert!(book.current(now).is_empty());
        book.reserve("c", &req, 1, now);
        book.clear("c");
        assert!(book.current(now).is_empty());
    }
}
