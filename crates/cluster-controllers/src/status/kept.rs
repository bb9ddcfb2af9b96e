//! What the status controller keeps of each Push cluster between syncs: the Cluster it
//! probes (name, version, spec) and the status it writes over, without the member's
//! discovery. `status.apiEnablements` is most of what a status holds (a few KB per member),
//! and this controller only ever compares a new discovery with the published one: a
//! fingerprint stands for it. A write then leaves the published discovery alone unless a new
//! one differs, and carries it whole when it does.
//!
//! The rest of the status is kept as compact JSON: a sync compares its desired status with
//! it as JSON and parses it only to build on. Typed, its quantity maps and lists cost about
//! four times as much, in every member, all the time.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use flotilla_karmada_api::cluster::ApiEnablement;
use flotilla_karmada_api::{Cluster, ClusterStatus};
use flotilla_membership::MemberTarget;
use parking_lot::Mutex;

use crate::modeling::{self, Grades, ModelError};

/// A fingerprint of a member's discovery. Equal discoveries give equal fingerprints within
/// this process (the hasher's keys are fixed); a collision would only delay publishing a
/// changed discovery to the next change.
pub(crate) fn fingerprint(enablements: &[ApiEnablement]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    enablements.hash(&mut hasher);
    hasher.finish()
}

/// A status without its discovery, as JSON, and the fingerprint of the discovery it had.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct KeptStatus {
    /// The status without `apiEnablements`, serialized; empty if it could not be.
    json: Box<str>,
    /// [`fingerprint`] of the discovery the status had.
    pub enablements: u64,
}

impl KeptStatus {
    pub fn new(mut status: ClusterStatus) -> Self {
        let enablements = fingerprint(&status.api_enablements);
        status.api_enablements = Vec::new();
        Self {
            json: serde_json::to_string(&status).unwrap_or_default().into(),
            enablements,
        }
    }

    /// The status without its discovery (`api_enablements` empty).
    pub fn status(&self) -> Result<ClusterStatus, serde_json::Error> {
        serde_json::from_str(&self.json)
    }

    /// Whether `status` (its discovery left out) is the kept one.
    pub fn is(&self, status: &ClusterStatus) -> bool {
        serde_json::to_string(status).is_ok_and(|json| *json == *self.json)
    }
}

/// A Cluster as kept: what a sync reads of it, typed only where it is small.
#[derive(Debug)]
pub(crate) struct KeptCluster {
    /// How the member is reached (endpoint, credentials Secret, proxy, TLS verification).
    pub target: MemberTarget,
    /// The resourceVersion the rest was read at.
    pub resource_version: Option<String>,
    /// `spec.resourceModels`, parsed: Karmada's default models are eighteen quantities as
    /// strings, a few KB per member.
    pub grades: Result<Option<Grades>, ModelError>,
    pub status: KeptStatus,
}

impl KeptCluster {
    pub fn new(cluster: Cluster) -> Self {
        Self {
            target: MemberTarget::of(&cluster),
            grades: modeling::parse(&cluster.spec.resource_models),
            resource_version: cluster.metadata.resource_version,
            status: KeptStatus::new(cluster.status.unwrap_or_default()),
        }
    }
}

/// The kept Push clusters by name, filled from the controller's watch.
#[derive(Default)]
pub(crate) struct KeptClusters {
    clusters: Mutex<HashMap<String, Arc<KeptCluster>>>,
}

impl KeptClusters {
    pub fn get(&self, name: &str) -> Option<Arc<KeptCluster>> {
        self.clusters.lock().get(name).cloned()
    }

    /// Keeps `cluster`; the one it replaces.
    pub fn insert(&self, name: String, cluster: Arc<KeptCluster>) -> Option<Arc<KeptCluster>> {
        self.clusters.lock().insert(name, cluster)
    }

    pub fn remove(&self, name: &str) {
        self.clusters.lock().remove(name);
    }

    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.clusters.lock().retain(|name, _| keep(name));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(group_versions: &[&str]) -> Cluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "m1", "resourceVersion": "7", "uid": "u1",
                "labels": {"a": "b"}, "annotations": {"c": "d"},
                "managedFields": [{"manager": "flotilla", "operation": "Update"}]},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1",
                "secretRef": {"namespace": "creds", "name": "m1"},
                "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]}]},
            "status": {"kubernetesVersion": "v1.33.0",
                "apiEnablements": group_versions.iter()
                    .map(|gv| json!({"groupVersion": gv, "resources": [{"name": "things", "kind": "Thing"}]}))
                    .collect::<Vec<_>>(),
                "nodeSummary": {"totalNum": 3, "readyNum": 3},
                "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady",
                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        }))
        .unwrap()
    }

    #[test]
    fn a_kept_cluster_has_its_target_models_and_status_but_only_a_fingerprint_of_its_discovery() {
        let full = cluster(&["v1", "apps/v1"]);
        let kept = KeptCluster::new(full.clone());
        assert_eq!(kept.target, MemberTarget::of(&full));
        assert_eq!(kept.grades, modeling::parse(&full.spec.resource_models));
        assert!(matches!(kept.grades, Ok(Some(_))));
        assert_eq!(kept.resource_version.as_deref(), Some("7"));

        let mut status = full.status.clone().unwrap();
        assert_eq!(
            kept.status.enablements,
            fingerprint(&status.api_enablements)
        );
        assert!(!kept.status.is(&status), "the discovery is not kept");
        status.api_enablements.clear();
        assert_eq!(kept.status.status().unwrap(), status);
        assert!(kept.status.is(&status));
        let mut other = status.clone();
        other.node_summary = None;
        assert!(!kept.status.is(&other));
    }

    #[test]
    fn the_fingerprint_follows_the_discovery() {
        let of = |gvs: &[&str]| KeptCluster::new(cluster(gvs)).status.enablements;
        assert_eq!(of(&["v1", "apps/v1"]), of(&["v1", "apps/v1"]));
        assert_ne!(of(&["v1", "apps/v1"]), of(&["v1"]));
        assert_ne!(of(&["v1", "apps/v1"]), of(&["apps/v1", "v1"]));
        assert_ne!(of(&["v1"]), of(&[]));
        let mut renamed = cluster(&["v1"]);
        renamed.status.as_mut().unwrap().api_enablements[0].resources[0].kind = "Other".into();
        assert_ne!(KeptCluster::new(renamed).status.enablements, of(&["v1"]));
        // A Cluster without a status is kept as one with an empty discovery.
        let mut bare = cluster(&[]);
        bare.status = None;
        assert_eq!(
            KeptCluster::new(bare).status,
            KeptStatus::new(ClusterStatus::default())
        );
    }
}
