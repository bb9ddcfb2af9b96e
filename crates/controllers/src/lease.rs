//! The per-cluster heartbeat Lease (`coordination.k8s.io/v1`, namespace `karmada-cluster`,
//! name and holderIdentity = the cluster's name, owner = the Cluster), as Karmada keeps it.
//!
//! The status controller renews it for each Push-mode cluster while that cluster's task
//! runs (a Pull-mode cluster's agent renews its own); the health monitor ([`crate::monitor`])
//! reads a stale Lease as "nobody is posting this cluster's status". The Lease says that
//! the status controller is alive, not that the member is healthy: a dead member keeps a
//! fresh Lease and is reported Ready=False by the status controller itself.
//!
//! The cluster controller deletes the Lease when it finalizes the Cluster (there is no
//! garbage collector acting on the owner reference on every host), and the renewer never
//! creates one for a Cluster that is being deleted, so it cannot come back afterwards.

use std::sync::Arc;
use std::time::Duration;

use flotilla_api::Cluster;
use flotilla_core::karmada;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, OwnerReference};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, ObjectMeta, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use tracing::{debug, info, warn};

use crate::{ControllerManagerOptions, Error, Metrics, STATUS_FIELD_MANAGER, error_chain};

use crate::status::CONTROLLER;

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn conflict(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 409)
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(STATUS_FIELD_MANAGER.into()),
        ..Default::default()
    }
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

/// Keeps one cluster's Lease renewed.
struct Renewer {
    api: Api<Lease>,
    host: kube::Client,
    name: String,
    clusters: Store<Cluster>,
    duration_seconds: i32,
    /// The Lease as last written: the steady state is one update per renewal.
    last: Option<Lease>,
}

impl Renewer {
    fn cluster(&self) -> Option<Arc<Cluster>> {
        self.clusters.get(&ObjectRef::new(&self.name))
    }

    fn renewed(&self, lease: Lease) -> Lease {
        let cluster = self.cluster();
        renewed(
            lease,
            &self.name,
            self.duration_seconds,
            Timestamp::now(),
            cluster.as_deref(),
        )
    }

    fn error(&self, source: kube::Error) -> Error {
        Error::RenewLease {
            cluster: self.name.clone(),
            source,
        }
    }

    async fn renew(&mut self) -> Result<(), Error> {
        if let Some(lease) = self.last.take() {
            let lease = self.renewed(lease);
            match self.api.replace(&self.name, &post_params(), &lease).await {
                Ok(written) => {
                    self.last = Some(written);
                    return Ok(());
                }
                // Someone else wrote or deleted it: start again from what is there.
                Err(e) if conflict(&e) || not_found(&e) => {}
                Err(e) => return Err(self.error(e)),
            }
        }
        let existing = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|e| self.error(e))?;
        if let Some(lease) = existing {
            let lease = self.renewed(lease);
            let written = self
                .api
                .replace(&self.name, &post_params(), &lease)
                .await
                .map_err(|e| self.error(e))?;
            self.last = Some(written);
            return Ok(());
        }
        // Never (re)create the Lease of a Cluster being deleted: the cluster controller
        // deletes it as the last step of finalization.
        let cluster = self.cluster();
        if cluster
            .as_ref()
            .is_none_or(|c| c.metadata.deletion_timestamp.is_some())
        {
            return Ok(());
        }
        let lease = self.renewed(Lease {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(karmada::NAMESPACE_KARMADA_CLUSTER.into()),
                ..Default::default()
            },
            spec: None,
        });
        let created = match self.api.create(&post_params(), &lease).await {
            Err(e) if not_found(&e) => {
                // The namespace is missing (clusters registered by hand, or it was removed).
                ensure_namespace(&self.host)
                    .await
                    .map_err(|e| self.error(e))?;
                self.api.create(&post_params(), &lease).await
            }
            other => other,
        };
        match created {
            Ok(written) => {
                info!(
                    namespace = karmada::NAMESPACE_KARMADA_CLUSTER,
                    "created the cluster's heartbeat Lease"
                );
                self.last = Some(written);
                Ok(())
            }
            // Created meanwhile (another replica finishing its term): updated next time.
            Err(e) if conflict(&e) => Ok(()),
            Err(e) => Err(self.error(e)),
        }
    }
}

async fn ensure_namespace(host: &kube::Client) -> Result<(), kube::Error> {
    let api: Api<Namespace> = Api::all(host.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(karmada::NAMESPACE_KARMADA_CLUSTER.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match api.create(&post_params(), &ns).await {
        Ok(_) => Ok(()),
        Err(e) if conflict(&e) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Renews the Lease of cluster `name` every `opts.lease_renew_interval()` until the task is
/// aborted; a failed renewal is retried sooner (after `retry_delay`, at most the interval).
pub(crate) async fn run(
    host: kube::Client,
    name: String,
    clusters: Store<Cluster>,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
) {
    let interval = opts.lease_renew_interval();
    let duration_seconds = i32::try_from(opts.lease_duration.as_secs())
        .unwrap_or(i32::MAX)
        .max(1);
    let mut renewer = Renewer {
        api: Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_CLUSTER),
        host,
        name,
        clusters,
        duration_seconds,
        last: None,
    };
    let retry = opts
        .retry_delay
        .min(interval)
        .max(Duration::from_millis(10));
    let mut failing = false;
    loop {
        // A renewal slower than the interval is as good as a failed one.
        let result = match tokio::time::timeout(interval, renewer.renew()).await {
            Ok(result) => result,
            Err(_) => Err(Error::Timeout {
                action: "renewing the heartbeat Lease",
                cluster: renewer.name.clone(),
                timeout: interval,
            }),
        };
        let wait = match result {
            Ok(()) => {
                if failing {
                    info!("heartbeat Lease renewed again");
                }
                failing = false;
                interval
            }
            Err(e) => {
                metrics.error(CONTROLLER, e.kind());
                if failing {
                    debug!(error = %error_chain(&e), "heartbeat Lease still not renewed");
                } else {
                    warn!(error = %error_chain(&e), "renewing the heartbeat Lease failed");
                }
                failing = true;
                renewer.last = None;
                retry
            }
        };
        tokio::time::sleep(wait).await;
    }
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
