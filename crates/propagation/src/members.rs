//! One reused kube-rs client per member cluster, built from the Cluster's connection fields
//! and its credentials Secret through `flotilla_membership` (the same code the status
//! controller and the cluster proxy use), rebuilt when either changes. Each rebuild bumps the
//! member's epoch so that watches opened with an older client are restarted.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_karmada_api::Cluster;
use flotilla_membership::{MemberCredentials, MemberTarget};
use kube::runtime::reflector::{ObjectRef, Store};
use parking_lot::Mutex;

use crate::Error;

/// How long credentials read from the Secret are trusted before being read again.
const CREDENTIALS_TTL: Duration = Duration::from_secs(60);
/// Deadline for connecting to a member.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

struct Entry {
    target: MemberTarget,
    credentials: MemberCredentials,
    client: kube::Client,
    epoch: u64,
    read_at: Instant,
}

/// A connected member: its client and the epoch it was built in.
#[derive(Clone)]
pub struct MemberClient {
    pub client: kube::Client,
    pub epoch: u64,
}

/// The member clients, keyed by cluster name.
pub struct MemberClients {
    host: kube::Client,
    clusters: Store<Cluster>,
    entries: Mutex<HashMap<String, Entry>>,
    next_epoch: Mutex<u64>,
}

impl MemberClients {
    pub fn new(host: kube::Client, clusters: Store<Cluster>) -> Arc<Self> {
        Arc::new(Self {
            host,
            clusters,
            entries: Mutex::new(HashMap::new()),
            next_epoch: Mutex::new(1),
        })
    }

    /// The Cluster object, when it exists.
    pub fn cluster(&self, name: &str) -> Option<Arc<Cluster>> {
        self.clusters.get(&ObjectRef::new(name))
    }

    /// Whether the cluster exists and its Ready condition is True.
    pub fn ready(&self, name: &str) -> bool {
        self.cluster(name).is_some_and(|c| c.is_ready())
    }

    /// Names of every Cluster not being deleted.
    pub fn cluster_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .clusters
            .state()
            .iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        names.sort();
        names
    }

    /// Forgets the client of `name` (its credentials are read again next time).
    pub fn invalidate(&self, name: &str) {
        self.entries.lock().remove(name);
    }

    /// The client of member `name`, built or reused.
    pub async fn get(&self, name: &str) -> Result<MemberClient, Error> {
        let cluster = self.cluster(name).ok_or_else(|| Error::NoCluster {
            cluster: name.to_string(),
        })?;
        let target = MemberTarget::of(&cluster);
        {
            let entries = self.entries.lock();
            if let Some(e) = entries.get(name) {
                if e.target == target && e.read_at.elapsed() < CREDENTIALS_TTL {
                    return Ok(MemberClient {
                        client: e.client.clone(),
                        epoch: e.epoch,
                    });
                }
            }
        }
        let credentials = target
            .credentials(&self.host, name)
            .await
            .map_err(|source| Error::Connect {
                cluster: name.to_string(),
                source,
            })?;
        {
            let mut entries = self.entries.lock();
            if let Some(e) = entries.get_mut(name) {
                if e.target == target && e.credentials == credentials {
                    e.read_at = Instant::now();
                    return Ok(MemberClient {
                        client: e.client.clone(),
                        epoch: e.epoch,
                    });
                }
            }
        }
        let client = target
            .client(name, &credentials, CONNECT_TIMEOUT)
            .await
            .map_err(|source| Error::Connect {
                cluster: name.to_string(),
                source,
            })?;
        let epoch = {
            let mut next = self.next_epoch.lock();
            *next += 1;
            *next
        };
        self.entries.lock().insert(
            name.to_string(),
            Entry {
                target,
                credentials,
                client: client.clone(),
                epoch,
                read_at: Instant::now(),
            },
        );
        Ok(MemberClient { client, epoch })
    }
}
