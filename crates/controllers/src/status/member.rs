//! A member cluster as the status controller reaches it: a client built from the Cluster's
//! endpoint and credentials Secret, and the node/pod summaries read by listing both kinds at
//! each sync of a healthy member.
//!
//! Lists instead of watches: a watch holds a connection (and its TLS buffers) per kind per
//! member for as long as the member is joined, which at thousands of members means tens of
//! thousands of sockets and hundreds of MiB on both sides. A list at each sync costs one
//! request per kind, runs inside the status controller's bounded pool, and leaves only the
//! summary behind; status stays as fresh as the sync period.

use std::collections::HashMap;
use std::time::Duration;

use flotilla_api::Cluster;
use flotilla_membership::{MemberCredentials, MemberTarget};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::ResourceExt;
use kube::api::{Api, ListParams};

use crate::Error;
use crate::resources::{CapacityRounding, NodeInfo, PodInfo, Summary, summarize};

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

/// Lists the member's nodes and pods (one after the other, over one connection) and sums
/// them. Only the summary is kept: nothing per node or pod outlives the call.
pub(crate) async fn summarize_member(
    client: &kube::Client,
    rounding: &CapacityRounding,
) -> Result<Summary, kube::Error> {
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let nodes: HashMap<String, NodeInfo> = nodes
        .items
        .iter()
        .map(|n| (n.name_any(), NodeInfo::from_node(n)))
        .collect();
    let pods = Api::<Pod>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    let pods: Vec<PodInfo> = pods.items.iter().map(PodInfo::from_pod).collect();
    Ok(summarize(&nodes, &pods, rounding))
}
