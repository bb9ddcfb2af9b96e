//! What a member's nodes and pods add up to: the compact per-node and per-pod summaries the
//! member watches keep (instead of whole objects), and the pure functions turning them into
//! `nodeSummary`, `resourceSummary` and the grouped `nodeCapacities` of Cluster status.
//!
//! ```text
//!  Node ──NodeInfo::from_node──▶ {ready, unschedulable, allocatable}  ┐
//!  Pod  ──PodInfo::from_pod───▶ {node, terminal, requests}            ├─ summarize() ─▶ Summary
//!                                                                      ┘
//! ```
//!
//! A pod's request is `flotilla_pod_resources::pod_spec_requests` (the scheduler's rule,
//! shared with the member simulator and the interpreter), in its [`ResourceName`]s and
//! [`Resources`].

use std::collections::{BTreeMap, HashMap};

use flotilla_karmada_api::NodeCapacityGroup;
use flotilla_karmada_api::cluster::NodeSummary;
use k8s_openapi::api::core::v1::{Node, Pod};

use flotilla_apimachinery::quantity::Round;

use flotilla_pod_resources::{ResourceName, Resources};

// === impl PodInfo ===

/// What the status controller keeps of one pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodInfo {
    /// `spec.nodeName`, when bound.
    pub node: Option<Box<str>>,
    /// Succeeded or Failed: holds no resources any more.
    pub terminal: bool,
    /// The pod's effective request (without the `pods` count).
    pub requests: Resources,
}

impl PodInfo {
    pub fn from_pod(pod: &Pod) -> Self {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        let terminal = matches!(phase, Some("Succeeded" | "Failed"));
        let Some(spec) = &pod.spec else {
            return Self {
                node: None,
                terminal,
                requests: Resources::default(),
            };
        };
        Self {
            node: spec
                .node_name
                .as_deref()
                .filter(|n| !n.is_empty())
                .map(Box::from),
            terminal,
            requests: flotilla_pod_resources::pod_spec_requests(spec),
        }
    }
}

// === impl NodeInfo ===

/// What the status controller keeps of one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeInfo {
    pub ready: bool,
    pub unschedulable: bool,
    pub allocatable: Resources,
}

impl NodeInfo {
    pub fn from_node(node: &Node) -> Self {
        let status = node.status.as_ref();
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let allocatable = status
            .and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()))
            .map(|l| Resources::from_list(l, Round::Down))
            .unwrap_or_default();
        Self {
            ready,
            unschedulable: node
                .spec
                .as_ref()
                .and_then(|s| s.unschedulable)
                .unwrap_or(false),
            allocatable: allocatable.compact(),
        }
    }

    fn schedulable(&self) -> bool {
        self.ready && !self.unschedulable
    }
}

// === summaries ===

/// How free node capacity is rounded down before grouping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityRounding {
    /// First granularity of CPU (millicores).
    pub cpu_millis: i64,
    /// First granularity of memory (bytes).
    pub memory_bytes: i64,
    /// First granularity of ephemeral storage and hugepages (bytes).
    pub storage_bytes: i64,
    /// Granularities double until at most this many groups remain.
    pub max_groups: usize,
}

impl Default for CapacityRounding {
    fn default() -> Self {
        Self {
            cpu_millis: 100,
            memory_bytes: 1 << 20,
            storage_bytes: 1 << 30,
            max_groups: 64,
        }
    }
}

impl CapacityRounding {
    fn granularity(&self, name: &ResourceName, doublings: u32) -> i64 {
        let base = match name {
            ResourceName::Cpu => self.cpu_millis,
            ResourceName::Memory => self.memory_bytes,
            n if n.is_bytes() => self.storage_bytes,
            _ => 1,
        }
        .max(1);
        base.checked_shl(doublings)
            .filter(|g| *g > 0 && g.leading_zeros() > 1)
            .unwrap_or(i64::MAX / 2)
    }
}

/// Everything the member's nodes and pods say about its size.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub node_summary: NodeSummary,
    pub allocatable: Resources,
    pub allocated: Resources,
    pub allocating: Resources,
    pub node_capacities: Vec<NodeCapacityGroup>,
    /// Free capacity of each schedulable node (allocatable minus its pods' requests, `pods`
    /// included), in no particular order: what resource modeling grades.
    pub free: Vec<Resources>,
}

/// Sums nodes and pods (see the module docs for the rules).
pub fn summarize<'a>(
    nodes: &HashMap<String, NodeInfo>,
    pods: impl IntoIterator<Item = &'a PodInfo>,
    rounding: &CapacityRounding,
) -> Summary {
    let mut allocatable = Resources::default();
    let mut ready = 0i32;
    for node in nodes.values() {
        allocatable.add_all(&node.allocatable);
        ready += i32::from(node.ready);
    }
    // Karmada always reports these, zero or not.
    let mut allocated = Resources::default();
    let mut allocating = Resources::default();
    for name in [ResourceName::Cpu, ResourceName::Memory, ResourceName::Pods] {
        allocated.add(&name, 0);
        allocating.add(&name, 0);
    }
    let mut used: HashMap<&str, Resources> = HashMap::new();
    for pod in pods {
        if pod.terminal {
            continue;
        }
        let target = match &pod.node {
            Some(node) => {
                if nodes.get(&**node).is_some_and(NodeInfo::schedulable) {
                    let u = used.entry(node).or_default();
                    u.add_all(&pod.requests);
                    u.add(&ResourceName::Pods, 1);
                }
                &mut allocated
            }
            None => &mut allocating,
        };
        target.add_all(&pod.requests);
        target.add(&ResourceName::Pods, 1);
    }
    let free: Vec<Resources> = nodes
        .iter()
        .filter(|(_, n)| n.schedulable())
        .map(|(name, n)| {
            let taken = used.get(name.as_str());
            let mut free = Resources::default();
            for (res, total) in n.allocatable.iter() {
                let left = total.saturating_sub(taken.map_or(0, |t| t.get(res)));
                free.add(res, left.max(0));
            }
            free
        })
        .collect();
    Summary {
        node_summary: NodeSummary {
            total_num: Some(i32::try_from(nodes.len()).unwrap_or(i32::MAX)),
            ready_num: Some(ready),
        },
        allocatable,
        allocated,
        allocating,
        node_capacities: group_capacities(&free, rounding),
        free,
    }
}

/// Groups nodes of equal free capacity, rounding down (coarser and coarser) until at most
/// `rounding.max_groups` groups remain. Zero amounts are left out ("none free").
pub fn group_capacities(free: &[Resources], rounding: &CapacityRounding) -> Vec<NodeCapacityGroup> {
    let round = |r: &Resources, doublings: u32| {
        let mut out = Resources::default();
        for (name, v) in r.iter() {
            let g = rounding.granularity(name, doublings);
            let v = v.max(0) / g * g;
            if v > 0 {
                out.add(name, v);
            }
        }
        out
    };
    let mut groups: BTreeMap<Resources, i32> = BTreeMap::new();
    for doublings in 0..64 {
        groups.clear();
        for r in free {
            *groups.entry(round(r, doublings)).or_default() += 1;
        }
        if groups.len() <= rounding.max_groups.max(1) {
            break;
        }
    }
    let mut out: Vec<NodeCapacityGroup> = groups
        .into_iter()
        .map(|(available, count)| NodeCapacityGroup {
            count,
            available: available.to_list(),
        })
        .collect();
    // Largest groups first; the sort is stable, so equal counts keep the map's fixed order.
    out.sort_by_key(|g| std::cmp::Reverse(g.count));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_karmada_api::ResourceList;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use serde_json::json;

    fn node(cpu: &str, memory: &str, pods: &str, ready: bool, unschedulable: bool) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "spec": {"unschedulable": unschedulable},
            "status": {
                "allocatable": {"cpu": cpu, "memory": memory, "pods": pods},
                "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}],
            },
        }))
        .unwrap()
    }

    fn pod(node: Option<&str>, phase: &str, spec: serde_json::Value) -> Pod {
        let mut spec = spec;
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": spec,
            "status": {"phase": phase},
        }))
        .unwrap()
    }

    fn simple_pod(node: Option<&str>, phase: &str, cpu: &str, memory: &str) -> PodInfo {
        PodInfo::from_pod(&pod(
            node,
            phase,
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}),
        ))
    }

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    #[test]
    fn pod_request_is_max_of_containers_and_init_plus_overhead() {
        let p = pod(
            Some("n1"),
            "Running",
            json!({
                "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "200m"}, "limits": {"memory": "128Mi"}}},
                ],
                "initContainers": [
                    {"name": "i1", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}},
                ],
                "overhead": {"cpu": "10m"},
            }),
        );
        let info = PodInfo::from_pod(&p);
        assert_eq!(info.node.as_deref(), Some("n1"));
        assert!(!info.terminal);
        // cpu: max(300m, 1000m) + 10m; memory: max(64Mi + 128Mi (limit as request), 32Mi).
        assert_eq!(info.requests.get(&ResourceName::Cpu), 1010);
        assert_eq!(info.requests.get(&ResourceName::Memory), 192 << 20);
        assert_eq!(info.requests.get(&ResourceName::Pods), 0);
    }

    #[test]
    fn sidecars_add_to_the_app_and_to_later_init_containers() {
        let p = pod(
            None,
            "Pending",
            json!({
                "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                "initContainers": [
                    {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                    {"name": "init", "resources": {"requests": {"cpu": "500m"}}},
                ],
            }),
        );
        let info = PodInfo::from_pod(&p);
        assert_eq!(info.node, None);
        assert_eq!(info.requests.get(&ResourceName::Cpu), 550);
    }

    #[test]
    fn node_info_reads_readiness_and_allocatable_rounding_down() {
        let n = NodeInfo::from_node(&node("3500m", "1.5", "110", true, false));
        assert!(n.ready && !n.unschedulable);
        assert_eq!(n.allocatable.get(&ResourceName::Cpu), 3500);
        assert_eq!(n.allocatable.get(&ResourceName::Memory), 1);
        assert_eq!(n.allocatable.get(&ResourceName::Pods), 110);
        let cordoned = NodeInfo::from_node(&node("1", "1Gi", "10", true, true));
        assert!(cordoned.unschedulable);
        let missing: Node = serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap();
        let missing = NodeInfo::from_node(&missing);
        assert!(!missing.ready && missing.allocatable.is_empty());
    }

    #[test]
    fn summary_counts_allocated_allocating_and_skips_finished_pods() {
        let mut nodes = HashMap::new();
        nodes.insert(
            "n1".to_string(),
            NodeInfo::from_node(&node("4", "8Gi", "110", true, false)),
        );
        nodes.insert(
            "n2".to_string(),
            NodeInfo::from_node(&node("4", "8Gi", "110", false, false)),
        );
        let pods = [
            simple_pod(Some("n1"), "Running", "500m", "1Gi"),
            simple_pod(Some("n1"), "Pending", "250m", "512Mi"),
            simple_pod(Some("n2"), "Running", "1", "1Gi"),
            simple_pod(Some("n1"), "Succeeded", "3", "1Gi"),
            simple_pod(Some("n1"), "Failed", "3", "1Gi"),
            simple_pod(None, "Pending", "2", "2Gi"),
        ];
        let s = summarize(&nodes, &pods, &CapacityRounding::default());
        assert_eq!(s.node_summary.total_num, Some(2));
        assert_eq!(s.node_summary.ready_num, Some(1));
        assert_eq!(
            s.allocatable.to_list(),
            list(&[("cpu", "8"), ("memory", "16Gi"), ("pods", "220")])
        );
        assert_eq!(
            s.allocated.to_list(),
            list(&[("cpu", "1750m"), ("memory", "2560Mi"), ("pods", "3")])
        );
        assert_eq!(
            s.allocating.to_list(),
            list(&[("cpu", "2"), ("memory", "2Gi"), ("pods", "1")])
        );
        // Only n1 (ready) counts: 4 - 0.75 CPU (3250m, rounded down to 3200m), 8Gi - 1.5Gi,
        // 110 - 2 pods.
        assert_eq!(
            s.node_capacities,
            vec![NodeCapacityGroup {
                count: 1,
                available: list(&[("cpu", "3200m"), ("memory", "6656Mi"), ("pods", "108")]),
            }]
        );
    }

    #[test]
    fn empty_cluster_reports_zeros() {
        let s = summarize(&HashMap::new(), [], &CapacityRounding::default());
        assert_eq!(s.node_summary.total_num, Some(0));
        assert!(s.allocatable.is_empty());
        assert_eq!(
            s.allocated.to_list(),
            list(&[("cpu", "0"), ("memory", "0"), ("pods", "0")])
        );
        assert!(s.node_capacities.is_empty());
    }

    #[test]
    fn capacities_round_down_and_merge() {
        let free = |cpu: i64, mem: i64| {
            let mut r = Resources::default();
            r.add(&ResourceName::Cpu, cpu);
            r.add(&ResourceName::Memory, mem);
            r
        };
        let groups = group_capacities(
            &[
                free(1950, (3 << 30) + 12345),
                free(1901, 3 << 30),
                free(50, 1 << 20),
            ],
            &CapacityRounding::default(),
        );
        assert_eq!(
            groups,
            vec![
                NodeCapacityGroup {
                    count: 2,
                    available: list(&[("cpu", "1900m"), ("memory", "3Gi")]),
                },
                NodeCapacityGroup {
                    count: 1,
                    available: list(&[("memory", "1Mi")]),
                },
            ]
        );
    }

    #[test]
    fn capacities_stay_bounded_and_never_round_up() {
        let free: Vec<Resources> = (0..1000)
            .map(|i| {
                let mut r = Resources::default();
                r.add(&ResourceName::Cpu, 100 * i + 37);
                r.add(&ResourceName::Memory, (i << 24) + 999);
                r.add(&ResourceName::Pods, i % 111);
                r
            })
            .collect();
        let rounding = CapacityRounding::default();
        let groups = group_capacities(&free, &rounding);
        assert!(groups.len() <= rounding.max_groups, "{}", groups.len());
        assert_eq!(groups.iter().map(|g| g.count).sum::<i32>(), 1000);
        // Safe: each group's capacity is at most what its least-free member has, so the
        // largest group value never exceeds the largest real one.
        let max_cpu = groups
            .iter()
            .filter_map(|g| g.available.get("cpu"))
            .filter_map(|q| ResourceName::Cpu.parse_quantity(&q.0, Round::Up))
            .max()
            .unwrap();
        assert!(max_cpu <= 100 * 999 + 37);
        let total_cpu_in_groups: i64 = groups
            .iter()
            .map(|g| {
                i64::from(g.count)
                    * g.available
                        .get("cpu")
                        .and_then(|q| ResourceName::Cpu.parse_quantity(&q.0, Round::Up))
                        .unwrap_or(0)
            })
            .sum();
        let total_cpu: i64 = free.iter().map(|r| r.get(&ResourceName::Cpu)).sum();
        assert!(total_cpu_in_groups <= total_cpu);
    }
}
