//! A member cluster as the status controller reaches it: a reader built from the Cluster's
//! endpoint and credentials Secret, and the node/pod summaries read by listing both kinds at
//! each sync of a healthy member.
//!
//! Lists instead of watches: a watch holds a connection (and its TLS buffers) per kind per
//! member for as long as the member is joined, which at thousands of members means tens of
//! thousands of sockets and hundreds of MiB on both sides. A list at each sync costs one
//! request per kind, runs inside the status controller's bounded pool, and leaves only the
//! summary behind; status stays as fresh as the sync period.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use flotilla_membership::{MemberCredentials, MemberReader, MemberTarget, MembershipError};
use k8s_openapi::api::core::v1::{
    Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;

use crate::Error;
use crate::resources::{CapacityRounding, NodeInfo, PodInfo, Summary, summarize};

/// Reads the credentials Secret of member `name` (the one `target` names) from the host.
pub(crate) async fn read_credentials(
    host: &kube::Client,
    name: &str,
    target: &MemberTarget,
    timeout: Duration,
) -> Result<MemberCredentials, Error> {
    match tokio::time::timeout(timeout, target.credentials(host, name)).await {
        Ok(result) => result.map_err(|source| Error::Credentials {
            cluster: name.to_string(),
            source,
        }),
        Err(_) => Err(Error::Timeout {
            action: "reading the credentials",
            cluster: name.to_string(),
            timeout,
        }),
    }
}

/// A reader of the member; connecting is bounded by `connect_timeout` so a dead member fails
/// fast.
pub(crate) async fn reader(
    name: &str,
    target: &MemberTarget,
    credentials: &MemberCredentials,
    connect_timeout: Duration,
) -> Result<MemberReader, Error> {
    target
        .reader(name, credentials, connect_timeout)
        .await
        .map_err(|source| Error::Connect {
            cluster: name.to_string(),
            source,
        })
}

/// Lists the member's nodes and pods (one after the other, over one connection) and sums
/// them. Only the summary is kept: nothing per node or pod outlives the call.
pub(crate) async fn summarize_member(
    member: &MemberReader,
    rounding: &CapacityRounding,
) -> Result<Summary, MembershipError> {
    let nodes: Items<NodeFields> = member.get_json("/api/v1/nodes", JSON).await?;
    let nodes: HashMap<String, NodeInfo> = nodes
        .items
        .into_iter()
        .map(|n| {
            let node = Node::from(n);
            (node.name_any(), NodeInfo::from_node(&node))
        })
        .collect();
    let pods: Items<PodFields> = member.get_json("/api/v1/pods", JSON).await?;
    let pods: Vec<PodInfo> = pods
        .items
        .into_iter()
        .map(|p| PodInfo::from_pod(&Pod::from(p)))
        .collect();
    Ok(summarize(&nodes, &pods, rounding))
}

/// What the lists are asked for as.
const JSON: &str = "application/json";

// The lists are decoded into only the fields the summaries read: at every sync of thousands
// of members, the rest (managedFields above all, parsed as untyped JSON trees, then images,
// container statuses, labels) was most of the controller-manager's CPU.

/// A list as the member answers it; only `items` is read.
#[derive(serde::Deserialize)]
struct Items<T> {
    #[serde(default = "Vec::new")]
    items: Vec<T>,
}

#[derive(serde::Deserialize, Default)]
struct NameOnly {
    name: Option<String>,
}

#[derive(serde::Deserialize)]
struct NodeFields {
    #[serde(default)]
    metadata: NameOnly,
    spec: Option<NodeSpecFields>,
    status: Option<NodeStatusFields>,
}

#[derive(serde::Deserialize)]
struct NodeSpecFields {
    unschedulable: Option<bool>,
}

#[derive(serde::Deserialize)]
struct NodeStatusFields {
    allocatable: Option<BTreeMap<String, Quantity>>,
    capacity: Option<BTreeMap<String, Quantity>>,
    conditions: Option<Vec<NodeConditionFields>>,
}

/// Of a node condition, what says whether the node is Ready (its message, reason and
/// timestamps are most of it).
#[derive(serde::Deserialize)]
struct NodeConditionFields {
    #[serde(rename = "type")]
    type_: String,
    status: String,
}

impl From<NodeFields> for Node {
    fn from(n: NodeFields) -> Self {
        Node {
            metadata: ObjectMeta {
                name: n.metadata.name,
                ..Default::default()
            },
            spec: n.spec.map(|s| NodeSpec {
                unschedulable: s.unschedulable,
                ..Default::default()
            }),
            status: n.status.map(|s| NodeStatus {
                allocatable: s.allocatable,
                capacity: s.capacity,
                conditions: s.conditions.map(|cs| {
                    cs.into_iter()
                        .map(|c| NodeCondition {
                            type_: c.type_,
                            status: c.status,
                            ..Default::default()
                        })
                        .collect()
                }),
                ..Default::default()
            }),
        }
    }
}

#[derive(serde::Deserialize)]
struct PodFields {
    spec: Option<PodSpec>,
    status: Option<PodStatusFields>,
}

#[derive(serde::Deserialize)]
struct PodStatusFields {
    phase: Option<String>,
}

impl From<PodFields> for Pod {
    fn from(p: PodFields) -> Self {
        Pod {
            spec: p.spec,
            status: p.status.map(|s| PodStatus {
                phase: s.phase,
                ..Default::default()
            }),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fields_read_give_what_the_whole_objects_give() {
        let node = json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "labels": {"a": "b"},
                "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {"f:conditions": {}}}}]},
            "spec": {"unschedulable": true, "podCIDR": "10.0.0.0/24"},
            "status": {
                "allocatable": {"cpu": "3500m", "memory": "7Gi", "pods": "110"},
                "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                    {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "message": "kubelet is posting ready status",
                     "lastHeartbeatTime": "2026-01-01T00:00:00Z"},
                ],
                "images": [{"names": ["nginx"], "sizeBytes": 1}],
            },
        });
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d", "managedFields": [{"manager": "m"}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx",
                "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]},
            "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": true,
                "restartCount": 0, "image": "nginx", "imageID": ""}]},
        });
        let full_node: Node = serde_json::from_value(node.clone()).unwrap();
        let read_node = Node::from(serde_json::from_value::<NodeFields>(node).unwrap());
        assert_eq!(read_node.name_any(), "n1");
        assert_eq!(
            NodeInfo::from_node(&read_node),
            NodeInfo::from_node(&full_node)
        );
        assert!(NodeInfo::from_node(&read_node).unschedulable);
        assert!(NodeInfo::from_node(&read_node).ready);

        let full_pod: Pod = serde_json::from_value(pod.clone()).unwrap();
        let read_pod = Pod::from(serde_json::from_value::<PodFields>(pod).unwrap());
        assert_eq!(PodInfo::from_pod(&read_pod), PodInfo::from_pod(&full_pod));
    }
}
