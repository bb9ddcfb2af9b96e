//! [`ClusterSnapshot`]: a member cluster as the scheduler needs it, parsed once per cluster
//! change; [`Reservations`]: capacity promised to bindings but not yet reported by members;
//! and the free-capacity estimate combining both.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use flotilla_karmada_api::Cluster;
use k8s_openapi::api::core::v1::Taint;

use crate::resources::{ResourceVector, Round};

/// `count` schedulable nodes that each have `available` free (parsed `NodeCapacityGroup`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeGroup {
    /// Number of nodes.
    pub count: i64,
    /// Free capacity of each node.
    pub available: ResourceVector,
}

/// One member cluster as the scheduler sees it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterSnapshot {
    /// Cluster name.
    pub name: String,
    /// Cluster labels.
    pub labels: BTreeMap<String, String>,
    /// `spec.provider`.
    pub provider: Option<String>,
    /// `spec.region`.
    pub region: Option<String>,
    /// `spec.zones`, or `[spec.zone]` when only the deprecated field is set.
    pub zones: Vec<String>,
    /// `spec.taints`.
    pub taints: Vec<Taint>,
    /// Served APIs (empty: nothing reported, nothing schedulable); see
    /// [`ClusterSnapshot::set_api_enablements`].
    pub api_enablements: ApiSet,
    /// The cluster has a deletionTimestamp.
    pub deleting: bool,
    /// The `Ready` condition is `True` (informational; NotReady clusters are kept out through
    /// taints, as in Karmada).
    pub ready: bool,
    /// `status.resourceSummary` was reported (without it the capacity is 0).
    pub has_resource_summary: bool,
    /// Cluster-level free capacity: allocatable - allocated - allocating.
    pub free: ResourceVector,
    /// Node-level free capacity (`status.nodeCapacities`); empty: not reported.
    pub node_groups: Vec<NodeGroup>,
}

impl ClusterSnapshot {
    /// Parses a Cluster. Unparsable quantities count as no capacity (never as more).
    pub fn from_cluster(cluster: &Cluster) -> ClusterSnapshot {
        let spec = &cluster.spec;
        let zones = if !spec.zones.is_empty() {
            spec.zones.clone()
        } else {
            spec.zone.iter().cloned().collect()
        };
        let mut snap = ClusterSnapshot {
            name: cluster.metadata.name.clone().unwrap_or_default(),
            labels: cluster.metadata.labels.clone().unwrap_or_default(),
            provider: spec.provider.clone(),
            region: spec.region.clone(),
            zones,
            taints: spec.taints.clone(),
            deleting: cluster.metadata.deletion_timestamp.is_some(),
            ..ClusterSnapshot::default()
        };
        let Some(status) = &cluster.status else {
            return snap;
        };
        snap.api_enablements = ApiSet::new(status.api_enablements.iter().flat_map(|e| {
            e.resources
                .iter()
                .map(|r| (e.group_version.as_str(), r.kind.as_str()))
        }));
        snap.ready = status.is_ready();
        if let Some(summary) = &status.resource_summary {
            snap.has_resource_summary = true;
            let mut free = ResourceVector::from_capacity_list(&summary.allocatable, Round::Down);
            // Used amounts round up so the difference stays a safe under-estimate.
            free.add_scaled(
                &ResourceVector::from_capacity_list(&summary.allocated, Round::Up),
                -1,
            );
            free.add_scaled(
                &ResourceVector::from_capacity_list(&summary.allocating, Round::Up),
                -1,
            );
            snap.free = free;
        }
        snap.node_groups = status
            .node_capacities
            .iter()
            .filter(|g| g.count > 0)
            .map(|g| NodeGroup {
                count: i64::from(g.count),
                available: ResourceVector::from_capacity_list(&g.available, Round::Down),
            })
            .collect();
        snap
    }

    /// Whether the cluster serves `kind` in `api_version`.
    pub fn serves(&self, api_version: &str, kind: &str) -> bool {
        self.api_enablements.contains(api_version, kind)
    }

    /// How many more replicas of `per_replica` fit here, after `reserved`.
    ///
    /// Cluster level: min over requested resources (pods always, one per replica) of
    /// floor(free / request); 0 without a resource summary. Node level, when reported: sum
    /// over node groups of count * (replicas fitting on one node). The smaller wins. Reserved
    /// resources are subtracted per resource at cluster level; at node level (where it is not
    /// known which nodes they land on) as the replicas-worth of the scarcest one.
    pub fn max_replicas(&self, per_replica: &ResourceVector, reserved: &Reservations) -> i64 {
        self.max_replicas_effective(&per_replica.effective_request(), reserved.get(&self.name))
    }

    /// [`max_replicas`](Self::max_replicas) with an already effective request.
    pub(crate) fn max_replicas_effective(
        &self,
        request: &ResourceVector,
        reserved: Option<&ResourceVector>,
    ) -> i64 {
        if !self.has_resource_summary {
            return 0;
        }
        let cluster_level = self.free.fits(reserved, request);
        if self.node_groups.is_empty() || cluster_level == 0 {
            return cluster_level;
        }
        let mut node_level = 0i64;
        for group in &self.node_groups {
            node_level = node_level.saturating_add(
                group
                    .count
                    .saturating_mul(group.available.fits(None, request)),
            );
        }
        if let Some(reserved) = reserved {
            node_level = node_level
                .saturating_sub(ResourceVector::replicas_worth(reserved, request))
                .max(0);
        }
        cluster_level.min(node_level)
    }
}

/// A set of (groupVersion, kind), looked up by a precomputed hash so that the per-cluster
/// check in the filter is a binary search over a compact integer array (few cache lines even
/// for hundreds of APIs) plus one string comparison on a hit.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiSet {
    /// Hashes, sorted.
    hashes: Vec<u64>,
    /// (groupVersion, kind) of each hash, same order.
    names: Vec<(String, String)>,
}

impl ApiSet {
    /// Builds the set from (groupVersion, kind) pairs.
    pub fn new<'s>(pairs: impl IntoIterator<Item = (&'s str, &'s str)>) -> ApiSet {
        let mut entries: Vec<(u64, String, String)> = pairs
            .into_iter()
            .map(|(gv, kind)| (api_hash(gv, kind), gv.to_owned(), kind.to_owned()))
            .collect();
        entries.sort_unstable();
        entries.dedup();
        let (hashes, names) = entries.into_iter().map(|(h, g, k)| (h, (g, k))).unzip();
        ApiSet { hashes, names }
    }

    /// Adds one (groupVersion, kind).
    pub fn insert(&mut self, group_version: &str, kind: &str) {
        if self.contains(group_version, kind) {
            return;
        }
        let h = api_hash(group_version, kind);
        let i = self.hashes.partition_point(|x| *x < h);
        self.hashes.insert(i, h);
        self.names
            .insert(i, (group_version.to_owned(), kind.to_owned()));
    }

    /// Whether (groupVersion, kind) is in the set.
    pub fn contains(&self, group_version: &str, kind: &str) -> bool {
        self.contains_hashed(api_hash(group_version, kind), group_version, kind)
    }

    /// [`contains`](Self::contains) with the hash from [`api_hash`].
    pub fn contains_hashed(&self, hash: u64, group_version: &str, kind: &str) -> bool {
        let start = self.hashes.partition_point(|x| *x < hash);
        self.hashes[start..]
            .iter()
            .zip(&self.names[start..])
            .take_while(|(h, _)| **h == hash)
            .any(|(_, (g, k))| k == kind && g == group_version)
    }

    /// Whether nothing is served (or reported).
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.hashes.clear();
        self.names.clear();
    }
}

/// The lookup hash of an ApiSet entry (FNV-1a over groupVersion, a separator and kind).
pub fn api_hash(group_version: &str, kind: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in group_version
        .bytes()
        .chain(std::iter::once(0))
        .chain(kind.bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Capacity the scheduler assigned that members have not reported as used yet: cluster name
/// -> reserved resources. Keeps two bindings scheduled in the same second from taking the
/// same free capacity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reservations {
    // Looked up once per cluster per decision: a cheap non-seeded hash is enough (the keys
    // are cluster names the control plane admitted, not attacker-chosen at volume).
    by_cluster: HashMap<String, ResourceVector, BuildHasherDefault<Fnv>>,
}

/// FNV-1a as a `Hasher`.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl Reservations {
    /// Reserves `replicas` replicas of `per_replica` (plus one pod each) on `cluster`.
    pub fn reserve(&mut self, cluster: &str, per_replica: &ResourceVector, replicas: i64) {
        if replicas <= 0 {
            return;
        }
        let entry = self.by_cluster.entry(cluster.to_owned()).or_default();
        entry.add_scaled(&per_replica.effective_request(), replicas);
    }

    /// Gives back what [`reserve`](Self::reserve) took (never below zero).
    pub fn release(&mut self, cluster: &str, per_replica: &ResourceVector, replicas: i64) {
        if replicas <= 0 {
            return;
        }
        let Some(entry) = self.by_cluster.get_mut(cluster) else {
            return;
        };
        entry.add_scaled(&per_replica.effective_request(), -replicas);
        for v in &mut entry.fixed {
            *v = (*v).max(0);
        }
        entry.extended.retain(|(_, v)| *v > 0);
        if entry.is_empty() {
            self.by_cluster.remove(cluster);
        }
    }

    /// Forgets a cluster's reservations (its member reported a new status that counts them).
    pub fn clear_cluster(&mut self, cluster: &str) {
        self.by_cluster.remove(cluster);
    }

    /// What is reserved on `cluster`.
    pub fn get(&self, cluster: &str) -> Option<&ResourceVector> {
        if self.by_cluster.is_empty() {
            return None;
        }
        self.by_cluster.get(cluster)
    }

    /// Whether nothing is reserved anywhere.
    pub fn is_empty(&self) -> bool {
        self.by_cluster.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_karmada_api::cluster::{
        ApiEnablement, ApiResource, ClusterSpec, ClusterStatus, ClusterSyncMode, NodeCapacityGroup,
        ResourceSummary,
    };
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn list(pairs: &[(&str, &str)]) -> flotilla_karmada_api::ResourceList {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    fn cluster(summary: Option<ResourceSummary>, nodes: Vec<NodeCapacityGroup>) -> Cluster {
        let mut c = Cluster::new(
            "m1",
            ClusterSpec {
                id: None,
                sync_mode: ClusterSyncMode::Push,
                api_endpoint: None,
                secret_ref: None,
                impersonator_secret_ref: None,
                insecure_skip_tls_verification: None,
                proxy_url: None,
                proxy_header: BTreeMap::new(),
                provider: Some("aws".into()),
                region: Some("eu".into()),
                zone: Some("eu-1".into()),
                zones: vec![],
                taints: vec![],
                resource_models: vec![],
            },
        );
        c.status = Some(ClusterStatus {
            api_enablements: vec![ApiEnablement {
                group_version: "apps/v1".into(),
                resources: vec![ApiResource {
                    name: "deployments".into(),
                    kind: "Deployment".into(),
                }],
            }],
            resource_summary: summary,
            node_capacities: nodes,
            ..ClusterStatus::default()
        });
        c
    }

    fn summary() -> ResourceSummary {
        ResourceSummary {
            allocatable: list(&[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]),
            allocated: list(&[("cpu", "2"), ("memory", "4Gi"), ("pods", "10")]),
            allocating: list(&[("cpu", "500m")]),
            allocatable_modelings: vec![],
        }
    }

    #[test]
    fn parses_cluster() {
        let snap = ClusterSnapshot::from_cluster(&cluster(Some(summary()), vec![]));
        assert_eq!(snap.name, "m1");
        assert_eq!(snap.zones, ["eu-1"]);
        assert!(snap.serves("apps/v1", "Deployment"));
        assert!(!snap.serves("apps/v1", "StatefulSet"));
        assert!(!snap.serves("v1", "Deployment"));
        assert_eq!(snap.free.get("cpu"), 5500);
        assert_eq!(snap.free.get("memory"), 12 << 30);
        assert_eq!(snap.free.get("pods"), 100);
    }

    #[test]
    fn cluster_level_capacity() {
        let snap = ClusterSnapshot::from_cluster(&cluster(Some(summary()), vec![]));
        let none = Reservations::default();
        let req = ResourceVector::new()
            .with("cpu", 1000)
            .with("memory", 1 << 30);
        assert_eq!(snap.max_replicas(&req, &none), 5); // cpu: 5.5 cores free
        assert_eq!(snap.max_replicas(&ResourceVector::new(), &none), 100); // pods only
        let no_summary = ClusterSnapshot::from_cluster(&cluster(None, vec![]));
        assert_eq!(no_summary.max_replicas(&ResourceVector::new(), &none), 0);
    }

    #[test]
    fn node_level_fit_counts_fragmentation() {
        // 5.5 cores free in total, but spread over nodes with 1.5 cores each: a 2-core
        // replica fits cluster-wide twice, on no single node.
        let nodes = vec![NodeCapacityGroup {
            count: 3,
            available: list(&[("cpu", "1500m"), ("memory", "4Gi"), ("pods", "30")]),
        }];
        let snap = ClusterSnapshot::from_cluster(&cluster(Some(summary()), nodes));
        let none = Reservations::default();
        let big = ResourceVector::new().with("cpu", 2000);
        assert_eq!(snap.free.fits(None, &big.effective_request()), 2);
        assert_eq!(snap.max_replicas(&big, &none), 0);
        let small = ResourceVector::new().with("cpu", 500);
        // Nodes: 3 * 3 = 9; cluster level: 11; the smaller wins.
        assert_eq!(snap.max_replicas(&small, &none), 9);
    }

    #[test]
    fn reservations_reduce_capacity_and_release_restores_it() {
        let snap = ClusterSnapshot::from_cluster(&cluster(Some(summary()), vec![]));
        let req = ResourceVector::new().with("cpu", 1000);
        let mut res = Reservations::default();
        res.reserve("m1", &req, 3);
        res.reserve("other", &req, 3);
        assert_eq!(snap.max_replicas(&req, &res), 2);
        res.release("m1", &req, 1);
        assert_eq!(snap.max_replicas(&req, &res), 3);
        res.release("m1", &req, 10);
        assert_eq!(snap.max_replicas(&req, &res), 5);
        assert!(res.get("m1").is_none());
        res.reserve("m1", &req, 5);
        assert_eq!(snap.max_replicas(&req, &res), 0);
        res.clear_cluster("m1");
        assert_eq!(snap.max_replicas(&req, &res), 5);
    }

    #[test]
    fn reservations_apply_at_node_level_too() {
        let nodes = vec![NodeCapacityGroup {
            count: 4,
            available: list(&[("cpu", "1"), ("pods", "30")]),
        }];
        let mut s = summary();
        s.allocatable.insert("cpu".into(), Quantity("100".into()));
        let snap = ClusterSnapshot::from_cluster(&cluster(Some(s), nodes));
        let req = ResourceVector::new().with("cpu", 1000);
        let mut res = Reservations::default();
        assert_eq!(snap.max_replicas(&req, &res), 4);
        res.reserve("m1", &req, 3);
        assert_eq!(snap.max_replicas(&req, &res), 1);
    }
}
