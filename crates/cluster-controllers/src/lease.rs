//! The per-cluster heartbeat Lease (`coordination.k8s.io/v1`, namespace `karmada-cluster`,
//! name and holderIdentity = the cluster's name, owner = the Cluster), as Karmada keeps it.
//!
//! A Pull-mode cluster's agent renews it; the health monitor ([`crate::monitor`]) reads a
//! stale Lease as "nobody is posting this cluster's status". Push clusters have none (as in
//! Karmada): a Lease per Push cluster renewed every 10 s was the controllers' main write load
//! with thousands of clusters, and told nothing the status controller in the same process
//! cannot tell the monitor directly.
//!
//! The cluster controller deletes the Lease when it finalizes the Cluster (there is no
//! garbage collector acting on the owner reference on every host). [`renewed`] is how an
//! agent (or a test standing in for one) renews it.

use flotilla_karmada_api::Cluster;
use flotilla_names::karmada;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams};

use crate::Error;

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// The owner reference pointing at `cluster`, when it has a uid.
fn owner_of(cluster: &Cluster) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: "cluster.karmada.io/v1alpha1".into(),
        kind: "Cluster".into(),
        name: cluster.metadata.name.clone()?,
        uid: cluster.metadata.uid.clone()?,
        ..Default::default()
    })
}

/// `lease` renewed at `now` by `holder`: holder, duration and renewTime set, and the owner
/// reference added when missing and known.
pub fn renewed(
    mut lease: Lease,
    holder: &str,
    duration_seconds: i32,
    now: Timestamp,
    owner: Option<&Cluster>,
) -> Lease {
    let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
    spec.holder_identity = Some(holder.to_string());
    spec.lease_duration_seconds = Some(duration_seconds);
    spec.renew_time = Some(MicroTime(now));
    let refs = lease.metadata.owner_references.get_or_insert_with(Vec::new);
    if refs.is_empty() {
        if let Some(owner) = owner.and_then(owner_of) {
            refs.push(owner);
        }
    }
    if refs.is_empty() {
        lease.metadata.owner_references = None;
    }
    lease
}

/// Deletes the Lease of cluster `name`; whether there was one.
pub(crate) async fn delete(host: &kube::Client, name: &str) -> Result<bool, Error> {
    let api: Api<Lease> = Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_CLUSTER);
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => Ok(true),
        Err(e) if not_found(&e) => Ok(false),
        Err(source) => Err(Error::DeleteLease {
            cluster: name.to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(uid: Option<&str>) -> Cluster {
        let mut c: Cluster = serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "m1"},
            "spec": {"syncMode": "Push"},
        }))
        .unwrap();
        c.metadata.uid = uid.map(str::to_string);
        c
    }

    #[test]
    fn renewal_sets_holder_duration_time_and_owner_once() {
        let t0 = Timestamp::from_second(1_700_000_000).unwrap();
        let lease = renewed(Lease::default(), "m1", 40, t0, Some(&cluster(Some("u1"))));
        let spec = lease.spec.as_ref().unwrap();
        assert_eq!(spec.holder_identity.as_deref(), Some("m1"));
        assert_eq!(spec.lease_duration_seconds, Some(40));
        assert_eq!(spec.renew_time, Some(MicroTime(t0)));
        let owners = lease.metadata.owner_references.clone().unwrap();
        assert_eq!(owners.len(), 1);
        assert_eq!(
            (
                owners[0].kind.as_str(),
                owners[0].name.as_str(),
                owners[0].uid.as_str()
            ),
            ("Cluster", "m1", "u1")
        );
        assert_eq!(owners[0].api_version, "cluster.karmada.io/v1alpha1");
        // A later renewal moves the time only; the owner is not replaced or duplicated.
        let t1 = Timestamp::from_second(1_700_000_010).unwrap();
        let again = renewed(lease, "m1", 40, t1, Some(&cluster(Some("u2"))));
        assert_eq!(again.spec.as_ref().unwrap().renew_time, Some(MicroTime(t1)));
        assert_eq!(again.metadata.owner_references.unwrap()[0].uid, "u1");
    }

    #[test]
    fn no_owner_without_a_known_cluster() {
        let t0 = Timestamp::from_second(1_700_000_000).unwrap();
        let lease = renewed(Lease::default(), "m1", 40, t0, None);
        assert_eq!(lease.metadata.owner_references, None);
        let lease = renewed(Lease::default(), "m1", 40, t0, Some(&cluster(None)));
        assert_eq!(lease.metadata.owner_references, None);
    }
}
