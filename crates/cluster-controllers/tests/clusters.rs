//! The cluster controllers against real servers, all in-process and wired as `local-up`
//! does: the host API server, the aggregated server registered with its APIService, three
//! simulated members of different sizes joined with `flotilla_membership::join`, and
//! `flotilla_cluster_controllers::spawn` with short periods.
//!
//! - status: Ready, version, API enablements, node summary, and resource summary numbers
//!   recomputed here from the member's own nodes and pods (bound, pending and unschedulable
//!   pods), node capacities consistent with them;
//! - lifecycle: execution namespace and finalizer (Pull-mode clusters too, though their
//!   status is left to their agent); deleting a Cluster removes its Works, then the
//!   namespace, then the Cluster (a Work held by a finalizer holds everything);
//! - failure: a stopped member turns Ready=False (ClusterNotReachable) after the failure
//!   threshold and is tainted, other members keep being refreshed meanwhile, and restarting
//!   it on the same port and data brings Ready=True back and removes the taints; a member
//!   that answers but fails its health checks turns Ready=False (ClusterNotReady) and is
//!   tainted the same way, and recovers when healthy again;
//! - heartbeat: Push clusters have no Lease and stay Ready through many grace periods; a
//!   Pull cluster without an agent, and one whose agent stops renewing its Lease, turn
//!   Ready=Unknown with the unreachable taints; deleting a cluster deletes its Lease;
//! - modeling: CompleteAPIEnablements and allocatableModelings of the default grades.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_testwait::{eventually, stays_for};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use flotilla_apimachinery::quantity::Round;
use flotilla_cluster_controllers::{ControllerManager, ControllerManagerOptions};
use flotilla_karmada_api::Cluster;
use flotilla_membersim::{MemberOptions, RunningMember};
use flotilla_names::karmada;
use flotilla_pod_resources::ResourceName;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams,
};
use serde_json::json;

/// How long a test waits for what it expects.
const WAIT: Duration = Duration::from_secs(30);

const THRESHOLD: Duration = Duration::from_secs(2);

async fn client_for(kubeconfig: &Path) -> kube::Client {
    flotilla_testenv::client_for(kubeconfig, None)
        .await
        .unwrap()
}

/// (name, nodes, cpu per node, memory per node)
const MEMBERS: [(&str, u32, &str, &str); 3] = [
    ("member1", 3, "4", "8Gi"),
    ("member2", 2, "2", "4Gi"),
    ("member3", 1, "8", "16Gi"),
];

struct Env {
    _dir: tempfile::TempDir,
    host: flotilla_host::RunningHost,
    aggregated: flotilla_aggregated::RunningAggregated,
    client: kube::Client,
    members: BTreeMap<String, (MemberOptions, Option<RunningMember>)>,
    manager: Option<ControllerManager>,
}

impl Env {
    async fn start() -> Env {
        Self::start_with(|_| {}).await
    }

    /// As [`Env::start`], with the controllers' options adjusted by `adjust`.
    async fn start_with(adjust: impl FnOnce(&mut ControllerManagerOptions)) -> Env {
        let flotilla_testenv::ControlPlane {
            dir,
            host,
            aggregated,
            client,
        } = flotilla_testenv::ControlPlane::start().await.unwrap();
        let clusters: Api<Cluster> = Api::all(client.clone());
        eventually("clusters served through the host", WAIT, || async {
            clusters.list(&ListParams::default()).await.is_ok()
        })
        .await;

        let mut members = BTreeMap::new();
        for (name, nodes, cpu, memory) in MEMBERS {
            let mut opts = MemberOptions::new(name, dir.path().join("members").join(name));
            opts.nodes = nodes;
            opts.node_cpu = cpu.into();
            opts.node_memory = memory.into();
            opts.ready_delay = Duration::from_millis(100);
            let member = flotilla_membersim::start(opts.clone()).await.unwrap();
            // Pin what a restart must reuse.
            opts.secure_port = member.addr.port();
            opts.token = Some(member.token.clone());
            let credentials =
                flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem);
            let mut join = flotilla_membership::Member::new(name, member.url(), credentials);
            join.provider = Some("flotilla-member-sim".into());
            flotilla_membership::join(&client, &join).await.unwrap();
            members.insert(name.to_string(), (opts, Some(member)));
        }
        let mut options = ControllerManagerOptions {
            status_period: Duration::from_millis(300),
            failure_threshold: THRESHOLD,
            success_threshold: THRESHOLD,
            probe_timeout: Duration::from_secs(1),
            api_enablements_period: Duration::from_secs(5),
            deletion_poll: Duration::from_millis(200),
            retry_delay: Duration::from_millis(300),
            ..Default::default()
        };
        adjust(&mut options);
        let manager = flotilla_cluster_controllers::spawn(client.clone(), options);
        Env {
            _dir: dir,
            host,
            aggregated,
            client,
            members,
            manager: Some(manager),
        }
    }

    fn clusters(&self) -> Api<Cluster> {
        Api::all(self.client.clone())
    }

    async fn member_client(&self, name: &str) -> kube::Client {
        let (_, member) = &self.members[name];
        client_for(&member.as_ref().unwrap().kubeconfig).await
    }

    async fn stop(mut self) {
        if let Some(m) = self.manager.take() {
            m.stop().await;
        }
        for (_, (_, member)) in std::mem::take(&mut self.members) {
            if let Some(m) = member {
                m.stop().await;
            }
        }
        self.aggregated.stop().await;
        self.host.stop().await;
    }
}

/// Whether `c`'s published discovery has `group_version`.
fn serves(c: &Cluster, group_version: &str) -> bool {
    c.status.as_ref().is_some_and(|s| {
        s.api_enablements
            .iter()
            .any(|e| e.group_version == group_version)
    })
}

fn ready_status(c: &Cluster) -> Option<(String, String)> {
    let cond = c
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")?;
    Some((cond.status.clone(), cond.reason.clone()))
}

/// Ready turned False only once the failure threshold had passed since `since`, and not
/// long after it.
fn assert_flipped_after_threshold(since: Instant) {
    let flipped = since.elapsed();
    assert!(
        flipped >= THRESHOLD,
        "flipped after {flipped:?}, before the threshold"
    );
    assert!(
        flipped < THRESHOLD + Duration::from_secs(10),
        "flipped after {flipped:?}"
    );
}

/// Whether `c` has left Ready=True; once it has, it must be False with `reason`.
fn left_ready(c: &Cluster, reason: &str) -> bool {
    match ready_status(c) {
        Some((s, _)) if s == "True" => false,
        other => {
            assert_eq!(other, Some(("False".into(), reason.into())));
            true
        }
    }
}

/// Waits for both not-ready taints (NoSchedule and NoExecute) on `name`.
async fn wait_not_ready_taints(clusters: &Api<Cluster>, name: &str) {
    eventually(&format!("{name} tainted not-ready"), WAIT, || async {
        let t = taints(&clusters.get(name).await.unwrap());
        t.contains(&(karmada::TAINT_CLUSTER_NOT_READY.into(), "NoSchedule".into()))
            && t.contains(&(karmada::TAINT_CLUSTER_NOT_READY.into(), "NoExecute".into()))
    })
    .await;
}

fn taints(c: &Cluster) -> Vec<(String, String)> {
    c.spec
        .taints
        .iter()
        .map(|t| (t.key.clone(), t.effect.clone()))
        .collect()
}

/// A resource list as numbers (CPU in millicores, the rest in units).
fn numbers(
    list: &BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> BTreeMap<String, i64> {
    list.iter()
        .map(|(k, v)| {
            let name = ResourceName::new(k);
            (k.clone(), name.parse_quantity(&v.0, Round::Up).unwrap())
        })
        .collect()
}

fn add(into: &mut BTreeMap<String, i64>, key: &str, value: i64) {
    *into.entry(key.to_string()).or_default() += value;
}

async fn deploy(client: &kube::Client, name: &str, replicas: i32, cpu: &str, memory: &str) {
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "app",
                    "image": "nginx",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }]},
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
}

/// What the status must say, computed here from the member's own objects.
struct Expected {
    allocatable: BTreeMap<String, i64>,
    allocated: BTreeMap<String, i64>,
    allocating: BTreeMap<String, i64>,
    nodes: i32,
    ready: i32,
}

async fn expected_from_member(member: &kube::Client) -> Expected {
    let nodes = Api::<Node>::all(member.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let pods = Api::<Pod>::all(member.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let mut allocatable = BTreeMap::new();
    let mut ready = 0;
    for n in &nodes {
        let status = n.status.as_ref().unwrap();
        for (k, v) in numbers(status.allocatable.as_ref().unwrap()) {
            add(&mut allocatable, &k, v);
        }
        let is_ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        ready += i32::from(is_ready);
    }
    let mut allocated = BTreeMap::new();
    let mut allocating = BTreeMap::new();
    for m in [&mut allocated, &mut allocating] {
        for k in ["cpu", "memory", "pods"] {
            m.insert(k.to_string(), 0);
        }
    }
    for p in &pods {
        let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            continue;
        }
        let spec = p.spec.as_ref().unwrap();
        let target = if spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
            &mut allocated
        } else {
            &mut allocating
        };
        // The pods here have plain containers with requests only.
        for c in &spec.containers {
            let requests = c.resources.as_ref().and_then(|r| r.requests.clone());
            for (k, v) in numbers(&requests.unwrap_or_default()) {
                add(target, &k, v);
            }
        }
        add(target, "pods", 1);
    }
    Expected {
        allocatable,
        allocated,
        allocating,
        nodes: i32::try_from(nodes.len()).unwrap(),
        ready,
    }
}

fn matches_expected(c: &Cluster, e: &Expected) -> bool {
    let Some(status) = &c.status else {
        return false;
    };
    let Some(rs) = &status.resource_summary else {
        return false;
    };
    let ns = status.node_summary.as_ref();
    numbers(&rs.allocatable) == e.allocatable
        && numbers(&rs.allocated) == e.allocated
        && numbers(&rs.allocating) == e.allocating
        && ns.and_then(|n| n.total_num) == Some(e.nodes)
        && ns.and_then(|n| n.ready_num) == Some(e.ready)
}

fn modelings(c: &Cluster) -> Vec<(u32, i64)> {
    c.status
        .as_ref()
        .and_then(|s| s.resource_summary.as_ref())
        .map(|rs| {
            rs.allocatable_modelings
                .iter()
                .map(|m| (m.grade, m.count))
                .collect()
        })
        .unwrap_or_default()
}

/// `allocatableModelings` computed from the member's nodes and pods: every Ready, uncordoned
/// node's free capacity (allocatable minus the requests of its unfinished pods) graded by
/// Karmada's rule — per resource the last grade whose min it reaches, the lowest of those.
async fn expected_modelings(
    member: &kube::Client,
    models: &[flotilla_karmada_api::cluster::ResourceModel],
) -> Vec<(u32, i64)> {
    let nodes = Api::<Node>::all(member.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let pods = Api::<Pod>::all(member.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    let mut counts: Vec<(u32, i64)> = models.iter().map(|m| (m.grade, 0)).collect();
    for n in &nodes {
        let status = n.status.as_ref().unwrap();
        let ready = status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let cordoned = n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true);
        if !ready || cordoned {
            continue;
        }
        let mut free = numbers(status.allocatable.as_ref().unwrap());
        for p in &pods {
            let spec = p.spec.as_ref().unwrap();
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref());
            if spec.node_name.as_deref() != n.metadata.name.as_deref()
                || matches!(phase, Some("Succeeded" | "Failed"))
            {
                continue;
            }
            for c in &spec.containers {
                let requests = c.resources.as_ref().and_then(|r| r.requests.clone());
                for (k, v) in numbers(&requests.unwrap_or_default()) {
                    add(&mut free, &k, -v);
                }
            }
            add(&mut free, "pods", -1);
        }
        if free.get("pods").is_some_and(|p| *p <= 0) {
            continue;
        }
        let grade = models[0]
            .ranges
            .iter()
            .map(|range| {
                let have = free.get(&range.name).copied().unwrap_or(0);
                models.iter().rposition(|m| {
                    let r = m.ranges.iter().find(|r| r.name == range.name).unwrap();
                    let name = ResourceName::new(&r.name);
                    name.parse_quantity(&r.min.0, Round::Up).unwrap() <= have
                })
            })
            .min()
            .flatten();
        if let Some(i) = grade {
            counts[i].1 += 1;
        }
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_reports_health_discovery_and_exact_resource_summaries() {
    let env = Env::start().await;
    let clusters = env.clusters();
    for (name, nodes, _, _) in MEMBERS {
        eventually(
            &format!("{name} ready with version and API enablements"),
            WAIT,
            || async {
                let Ok(c) = clusters.get(name).await else {
                    return false;
                };
                let Some(status) = &c.status else {
                    return false;
                };
                let deployments = status.api_enablements.iter().any(|e| {
                    e.group_version == "apps/v1"
                        && e.resources
                            .iter()
                            .any(|r| r.name == "deployments" && r.kind == "Deployment")
                });
                ready_status(&c) == Some(("True".into(), "ClusterReady".into()))
                    && status
                        .kubernetes_version
                        .as_deref()
                        .is_some_and(|v| v.starts_with('v'))
                    && deployments
                    && status.node_summary.as_ref().and_then(|n| n.total_num)
                        == Some(i32::try_from(nodes).unwrap())
            },
        )
        .await;
        let c = clusters.get(name).await.unwrap();
        let status = c.status.unwrap();
        let cond = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .unwrap();
        assert_eq!(
            cond.message,
            "cluster is healthy and ready to accept workloads"
        );
        // Subresources are not API enablements.
        assert!(
            status
                .api_enablements
                .iter()
                .flat_map(|e| &e.resources)
                .all(|r| !r.name.contains('/'))
        );
        // Published together with the enablements: a healthy member's discovery is complete.
        let complete = status
            .conditions
            .iter()
            .find(|c| c.type_ == "CompleteAPIEnablements")
            .expect("CompleteAPIEnablements condition");
        assert_eq!(
            (
                complete.status.as_str(),
                complete.reason.as_str(),
                complete.message.as_str()
            ),
            (
                "True",
                "Complete",
                "collected complete APIEnablements from the cluster"
            )
        );
    }

    // member1 (3 nodes of 4 CPU / 8Gi): 4 replicas fit, one request fits nowhere.
    let member = env.member_client("member1").await;
    deploy(&member, "web", 4, "1500m", "1Gi").await;
    deploy(&member, "huge", 1, "64", "1Gi").await;
    let pods: Api<Pod> = Api::namespaced(member.clone(), "default");
    eventually("member1 pods bound and pending", WAIT, || async {
        let pods = pods.list(&ListParams::default()).await.unwrap().items;
        let bound = pods
            .iter()
            .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some())
            .count();
        pods.len() == 5 && bound == 4
    })
    .await;
    let expected = expected_from_member(&member).await;
    assert_eq!(expected.allocatable["cpu"], 12_000);
    assert_eq!(expected.allocated["cpu"], 6_000);
    assert_eq!(expected.allocating["cpu"], 64_000);
    assert_eq!(expected.allocated["pods"], 4);
    assert_eq!(expected.allocating["pods"], 1);
    eventually(
        "member1 resource summary matching its nodes and pods",
        WAIT,
        || async { matches_expected(&clusters.get("member1").await.unwrap(), &expected) },
    )
    .await;

    // The summary changed with no new discovery: the published discovery stays whole.
    let c = clusters.get("member1").await.unwrap();
    assert!(serves(&c, "apps/v1"), "{:?}", c.status);
    let before = c.status.as_ref().unwrap().api_enablements.len();
    // A new API in the member is published with the next discovery (every 5 s here), and
    // nothing else of the discovery is lost.
    let crds: Api<CustomResourceDefinition> = Api::all(member.clone());
    let crd = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]},
    }))
    .unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    eventually("member1's discovery with example.com/v1", WAIT, || async {
        let c = clusters.get("member1").await.unwrap();
        serves(&c, "example.com/v1")
            && serves(&c, "apps/v1")
            && c.status.as_ref().unwrap().api_enablements.len() == before + 1
    })
    .await;

    // Node capacities: every ready node counted once, each group's free capacity within its
    // nodes' allocatable, and in total no more than the cluster has left.
    let c = clusters.get("member1").await.unwrap();
    let status = c.status.unwrap();
    let groups = &status.node_capacities;
    assert_eq!(groups.iter().map(|g| g.count).sum::<i32>(), 3, "{groups:?}");
    let mut free_total = BTreeMap::new();
    for g in groups {
        for (k, v) in numbers(&g.available) {
            assert!(v <= numbers(&status.resource_summary.as_ref().unwrap().allocatable)[&k] / 3);
            add(&mut free_total, &k, v * i64::from(g.count));
        }
    }
    for k in ["cpu", "memory", "pods"] {
        let left = expected.allocatable[k] - expected.allocated[k];
        assert!(
            free_total.get(k).copied().unwrap_or(0) <= left,
            "{k}: {groups:?}"
        );
    }
    // 1.5 CPU per replica on 4-CPU nodes: at most two per node, so 4 replicas leave 1 CPU
    // on two nodes and 2.5 or 4 on the third; whatever the placement, 6 CPU are free.
    assert_eq!(free_total["cpu"], 6_000, "{groups:?}");

    // The other members have no pods: nothing allocated, capacity is all free.
    let m3 = clusters.get("member3").await.unwrap();
    let m3 = m3.status.unwrap();
    let rs = m3.resource_summary.unwrap();
    assert_eq!(numbers(&rs.allocatable)["cpu"], 8_000);
    assert_eq!(numbers(&rs.allocated)["pods"], 0);
    assert_eq!(m3.node_capacities.len(), 1);
    assert_eq!(m3.node_capacities[0].count, 1);
    assert_eq!(m3.node_capacities[0].available["cpu"].0, "8");
    assert_eq!(m3.node_capacities[0].available["memory"].0, "16Gi");

    // Resource modeling with the default grades the aggregated server filled in: counts
    // recomputed here from each member's nodes and pods, and what they must come to.
    let wanted: [(&str, &[(u32, i64)]); 3] = [
        // 3 nodes with 1 to 4 CPU and 6 to 8 Gi free: cpu grade 1..3, memory grade 1.
        ("member1", &[(1, 3)]),
        // 2 nodes of 2 CPU / 4 Gi: cpu grade 2, memory grade 1.
        ("member2", &[(1, 2)]),
        // 1 node of 8 CPU / 16 Gi: cpu grade 4, memory grade 2.
        ("member3", &[(2, 1)]),
    ];
    for (name, nonzero) in wanted {
        let c = clusters.get(name).await.unwrap();
        assert_eq!(c.spec.resource_models.len(), 9, "{name}: default models");
        let member = env.member_client(name).await;
        let expected = expected_modelings(&member, &c.spec.resource_models).await;
        let mut hand: Vec<(u32, i64)> = (0..9).map(|g| (g, 0)).collect();
        for (g, n) in nonzero {
            hand[*g as usize].1 = *n;
        }
        assert_eq!(expected, hand, "{name}: the test's own computation");
        eventually(&format!("{name} allocatableModelings"), WAIT, || async {
            let c = clusters.get(name).await.unwrap();
            modelings(&c) == expected
        })
        .await;
    }

    let metrics = env.manager.as_ref().unwrap().metrics_text();
    assert!(
        metrics.contains("flotilla_cluster_controllers_reconciles_total"),
        "{metrics}"
    );
    assert!(
        metrics.contains(
            "flotilla_cluster_controllers_probe_duration_seconds_count{outcome=\"healthy\"}"
        ),
        "{metrics}"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_cluster_removes_works_then_namespace_then_cluster() {
    let env = Env::start().await;
    let clusters = env.clusters();
    let namespaces: Api<Namespace> = Api::all(env.client.clone());
    // A Pull-mode cluster gets its namespace and finalizer, but its status belongs to the
    // agent inside it: the status controller leaves it alone.
    let pull: Cluster = serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "agent1"},
        "spec": {"syncMode": "Pull"},
    }))
    .unwrap();
    clusters
        .create(&PostParams::default(), &pull)
        .await
        .unwrap();
    for name in MEMBERS.iter().map(|m| m.0).chain(["agent1"]) {
        eventually(
            &format!("{name} finalizer and execution namespace"),
            WAIT,
            || async {
                let c = clusters.get(name).await.unwrap();
                let finalized = c
                    .metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == karmada::CLUSTER_CONTROLLER_FINALIZER);
                finalized
                    && namespaces
                        .get_opt(&karmada::execution_namespace(name))
                        .await
                        .unwrap()
                        .is_some()
            },
        )
        .await;
    }

    for (name, ..) in MEMBERS {
        eventually(&format!("{name} ready"), WAIT, || async {
            ready_status(&clusters.get(name).await.unwrap()).is_some()
        })
        .await;
    }
    let agent = clusters.get("agent1").await.unwrap();
    assert!(
        agent
            .status
            .as_ref()
            .is_none_or(|s| s.conditions.is_empty()),
        "{:?}",
        agent.status
    );

    // A Work held by someone else's finalizer holds the namespace and the Cluster.
    let ns = karmada::execution_namespace("member2");
    let works_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work"),
        "works",
    );
    let works: Api<DynamicObject> = Api::namespaced_with(env.client.clone(), &ns, &works_resource);
    let work: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": "web-5d8f", "namespace": ns, "finalizers": ["test.flotilla.io/hold"]},
        "spec": {"workload": {"manifests": []}},
    }))
    .unwrap();
    works.create(&PostParams::default(), &work).await.unwrap();
    clusters
        .delete("member2", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Work marked for deletion", WAIT, || async {
        works
            .get("web-5d8f")
            .await
            .unwrap()
            .metadata
            .deletion_timestamp
            .is_some()
    })
    .await;
    // Each look of the controller at a cluster being deleted lists its Works (nothing else
    // here lists Works): two more looks, and the cluster is still held.
    let looked = work_lists(&env.client).await;
    eventually(
        "the controller looking at member2's Works again",
        WAIT,
        || async { work_lists(&env.client).await >= looked + 2 },
    )
    .await;
    let held = clusters.get("member2").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    assert!(
        held.metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == karmada::CLUSTER_CONTROLLER_FINALIZER)
    );
    let ns_obj = namespaces.get(&ns).await.unwrap();
    assert!(
        ns_obj.metadata.deletion_timestamp.is_none(),
        "the namespace waits for its Works"
    );

    // Release the Work: then the namespace goes, then the Cluster.
    works
        .patch(
            "web-5d8f",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    let order = std::sync::Mutex::new(Vec::new());
    eventually("member2 fully removed", WAIT, || async {
        let work_gone = works.get_opt("web-5d8f").await.unwrap().is_none();
        let ns_gone = namespaces.get_opt(&ns).await.unwrap().is_none();
        let cluster_gone = clusters.get_opt("member2").await.unwrap().is_none();
        order
            .lock()
            .unwrap()
            .push((work_gone, ns_gone, cluster_gone));
        cluster_gone
    })
    .await;
    for (work_gone, ns_gone, cluster_gone) in order.into_inner().unwrap() {
        assert!(!ns_gone || work_gone, "namespace removed before the Work");
        assert!(
            !cluster_gone || (ns_gone && work_gone),
            "cluster removed too early"
        );
    }
    // The others are untouched.
    for name in ["member1", "member3", "agent1"] {
        assert!(
            namespaces
                .get_opt(&karmada::execution_namespace(name))
                .await
                .unwrap()
                .is_some()
        );
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_member_is_tainted_then_recovers_while_others_keep_updating() {
    unreachable_then_recovers(true).await;
}

/// The same with a connection opened at each sync and closed after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_kept_connections_a_member_is_followed_through_an_outage() {
    unreachable_then_recovers(false).await;
}

async fn unreachable_then_recovers(keep_member_connections: bool) {
    let mut env = Env::start_with(|o| o.keep_member_connections = keep_member_connections).await;
    let clusters = env.clusters();
    for (name, ..) in MEMBERS {
        eventually(&format!("{name} ready"), WAIT, || async {
            let c = clusters.get(name).await.unwrap();
            ready_status(&c) == Some(("True".into(), "ClusterReady".into()))
                && c.status
                    .as_ref()
                    .is_some_and(|s| s.resource_summary.is_some())
        })
        .await;
    }
    let member2 = env.member_client("member2").await;

    let (opts, running) = env.members.get_mut("member1").unwrap();
    let opts = opts.clone();
    // stop() drains open connections (watches) before it returns; the member refuses new
    // ones from its start, so the threshold counts from here.
    let stopped = Instant::now();
    running.take().unwrap().stop().await;

    // Ready holds through the threshold, then flips with the not-ready taints.
    eventually("member1 not reachable", WAIT, || async {
        left_ready(
            &clusters.get("member1").await.unwrap(),
            "ClusterNotReachable",
        )
    })
    .await;
    assert_flipped_after_threshold(stopped);
    wait_not_ready_taints(&clusters, "member1").await;
    let c = clusters.get("member1").await.unwrap();
    let no_execute = c
        .spec
        .taints
        .iter()
        .find(|t| t.effect == "NoExecute")
        .unwrap();
    assert!(no_execute.time_added.is_some());

    // Meanwhile member2 is still followed.
    deploy(&member2, "api", 2, "300m", "128Mi").await;
    eventually(
        "member2 allocation followed while member1 is down",
        WAIT,
        || async {
            let c = clusters.get("member2").await.unwrap();
            c.status.and_then(|s| s.resource_summary).is_some_and(|rs| {
                let n = numbers(&rs.allocated);
                n.get("cpu") == Some(&600) && n.get("pods") == Some(&2)
            })
        },
    )
    .await;
    let m2 = clusters.get("member2").await.unwrap();
    assert_eq!(
        ready_status(&m2),
        Some(("True".into(), "ClusterReady".into()))
    );
    assert!(taints(&m2).is_empty());

    // Back on the same port with the same data and token: Ready again, taints gone.
    let member = flotilla_membersim::start(opts.clone()).await.unwrap();
    assert_eq!(member.addr.port(), opts.secure_port);
    env.members.get_mut("member1").unwrap().1 = Some(member);
    eventually("member1 ready again and untainted", WAIT, || async {
        let c = clusters.get("member1").await.unwrap();
        ready_status(&c) == Some(("True".into(), "ClusterReady".into())) && taints(&c).is_empty()
    })
    .await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_endpoint_is_followed_on_a_new_connection() {
    let env = Env::start().await;
    let clusters = env.clusters();
    let ready = || async {
        ready_status(&clusters.get("member3").await.unwrap())
            == Some(("True".into(), "ClusterReady".into()))
    };
    eventually("member3 ready", WAIT, ready).await;
    let endpoint = clusters
        .get("member3")
        .await
        .unwrap()
        .spec
        .api_endpoint
        .unwrap();
    // The connection kept to the member would still answer: only a new one, to the new
    // endpoint (a loopback port nothing listens on), finds it unreachable.
    let unused = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let set_endpoint = |url: String| {
        let clusters = clusters.clone();
        async move {
            clusters
                .patch(
                    "member3",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"apiEndpoint": url}})),
                )
                .await
                .unwrap();
        }
    };
    set_endpoint(format!("https://127.0.0.1:{unused}")).await;
    eventually("member3 unreachable at its new endpoint", WAIT, || async {
        left_ready(
            &clusters.get("member3").await.unwrap(),
            "ClusterNotReachable",
        )
    })
    .await;
    set_endpoint(endpoint).await;
    eventually("member3 ready at its endpoint again", WAIT, ready).await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unhealthy_member_is_not_ready_and_tainted_then_recovers() {
    let env = Env::start().await;
    let clusters = env.clusters();
    for (name, ..) in MEMBERS {
        eventually(&format!("{name} ready"), WAIT, || async {
            let c = clusters.get(name).await.unwrap();
            ready_status(&c) == Some(("True".into(), "ClusterReady".into()))
        })
        .await;
    }
    let member1 = env.members["member1"].1.as_ref().unwrap();

    // It still answers, so this is ClusterNotReady (not ClusterNotReachable), after the
    // threshold; the other members stay Ready throughout.
    let unhealthy = Instant::now();
    member1.set_healthy(false);
    eventually("member1 not ready", WAIT, || async {
        for other in ["member2", "member3"] {
            let c = clusters.get(other).await.unwrap();
            assert_eq!(
                ready_status(&c),
                Some(("True".into(), "ClusterReady".into())),
                "{other} while member1 is unhealthy"
            );
        }
        left_ready(&clusters.get("member1").await.unwrap(), "ClusterNotReady")
    })
    .await;
    assert_flipped_after_threshold(unhealthy);
    wait_not_ready_taints(&clusters, "member1").await;
    for other in ["member2", "member3"] {
        let c = clusters.get(other).await.unwrap();
        assert_eq!(
            ready_status(&c),
            Some(("True".into(), "ClusterReady".into()))
        );
        assert!(taints(&c).is_empty(), "{other} tainted");
    }

    member1.set_healthy(true);
    let healthy = Instant::now();
    eventually("member1 ready again and untainted", WAIT, || async {
        let c = clusters.get("member1").await.unwrap();
        ready_status(&c) == Some(("True".into(), "ClusterReady".into())) && taints(&c).is_empty()
    })
    .await;
    // Not before probes have succeeded for the whole success threshold.
    assert!(
        healthy.elapsed() >= THRESHOLD,
        "Ready again after {:?}, before the success threshold",
        healthy.elapsed()
    );
    env.stop().await;
}

const MONITOR_GRACE: Duration = Duration::from_millis(1500);
const STARTUP_GRACE: Duration = Duration::from_millis(2500);

fn leases(client: &kube::Client) -> Api<Lease> {
    Api::namespaced(client.clone(), karmada::NAMESPACE_KARMADA_CLUSTER)
}

fn renew_time(l: &Lease) -> k8s_openapi::jiff::Timestamp {
    l.spec.as_ref().unwrap().renew_time.as_ref().unwrap().0
}

fn pull_cluster(name: &str) -> Cluster {
    serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": name},
        "spec": {"syncMode": "Pull"},
    }))
    .unwrap()
}

fn unreachable_tainted(c: &Cluster) -> bool {
    let t = taints(c);
    t.contains(&(
        karmada::TAINT_CLUSTER_UNREACHABLE.into(),
        "NoSchedule".into(),
    )) && t.contains(&(
        karmada::TAINT_CLUSTER_UNREACHABLE.into(),
        "NoExecute".into(),
    ))
}

/// The Lease of `name` as a Pull-mode agent would write it: created, then renewed.
async fn agent_renew(client: &kube::Client, name: &str) {
    let api = leases(client);
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    );
    match api.get_opt(name).await.unwrap() {
        Some(mut l) => {
            l.spec.as_mut().unwrap().renew_time = Some(now);
            api.replace(name, &PostParams::default(), &l).await.unwrap();
        }
        None => {
            let l: Lease = serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": karmada::NAMESPACE_KARMADA_CLUSTER},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 2},
            }))
            .unwrap();
            let mut l = l;
            l.spec.as_mut().unwrap().renew_time = Some(now);
            api.create(&PostParams::default(), &l).await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_clusters_stay_ready_without_leases_and_silent_pull_clusters_go_unknown() {
    let env = Env::start_with(|o| {
        o.monitor_period = Duration::from_millis(200);
        o.monitor_grace_period = MONITOR_GRACE;
        o.startup_grace_period = STARTUP_GRACE;
    })
    .await;
    let clusters = env.clusters();
    let leases = leases(&env.client);

    // A Pull-mode cluster without an agent: Unknown once the startup grace has passed.
    let created = Instant::now();
    clusters
        .create(&PostParams::default(), &pull_cluster("agent1"))
        .await
        .unwrap();
    // A Pull-mode cluster whose (simulated) agent posts Ready=True and renews its Lease.
    clusters
        .create(&PostParams::default(), &pull_cluster("agent2"))
        .await
        .unwrap();
    clusters
        .patch_status(
            "agent2",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "Ready", "status": "True", "reason": "ClusterReady",
                "message": "posted by the test's agent",
                "lastTransitionTime": k8s_openapi::jiff::Timestamp::now().to_string(),
            }]}})),
        )
        .await
        .unwrap();
    agent_renew(&env.client, "agent2").await;
    let agent_client = env.client.clone();
    let agent = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(300)).await;
            agent_renew(&agent_client, "agent2").await;
        }
    });

    // Push clusters: Ready, and no Lease (as in Karmada, only Pull agents keep one).
    for (name, ..) in MEMBERS {
        eventually(&format!("{name} ready"), WAIT, || async {
            let c = clusters.get(name).await.unwrap();
            ready_status(&c) == Some(("True".into(), "ClusterReady".into()))
        })
        .await;
    }
    let l2 = leases.get("agent2").await.unwrap();
    assert_eq!(
        l2.spec.as_ref().unwrap().holder_identity.as_deref(),
        Some("agent2")
    );

    // Over several grace periods no live cluster (Push, judged by the status controller's
    // progress; or Pull with a renewing agent) ever leaves Ready=True.
    let first_renewal = renew_time(&l2);
    stays_for(
        "every live cluster Ready and untainted",
        MONITOR_GRACE * 3,
        || async {
            for name in MEMBERS.iter().map(|m| m.0).chain(["agent2"]) {
                let c = clusters.get(name).await.unwrap();
                if ready_status(&c).map(|r| r.0) != Some("True".into()) {
                    return Err(format!("{name} left Ready=True"));
                }
                if unreachable_tainted(&c) {
                    return Err(format!("{name} tainted"));
                }
            }
            Ok(())
        },
    )
    .await;
    let later = renew_time(&leases.get("agent2").await.unwrap());
    assert!(
        later > first_renewal,
        "renewTime {later} did not advance from {first_renewal}"
    );
    for (name, ..) in MEMBERS {
        assert!(
            leases.get_opt(name).await.unwrap().is_none(),
            "a Lease for Push cluster {name}"
        );
    }

    // agent1 has been silent since its creation.
    eventually("agent1 Unknown and unreachable-tainted", WAIT, || async {
        let c = clusters.get("agent1").await.unwrap();
        ready_status(&c) == Some(("Unknown".into(), "ClusterStatusNeverUpdated".into()))
            && unreachable_tainted(&c)
    })
    .await;
    assert!(
        created.elapsed() >= STARTUP_GRACE,
        "agent1 Unknown before the startup grace"
    );
    let c = clusters.get("agent1").await.unwrap();
    let cond = c
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        cond.message,
        "Cluster status controller never posted cluster status."
    );

    // agent2's agent stops: Unknown after the monitor grace, with the unreachable taints.
    agent.abort();
    let _ = agent.await;
    let silent = Instant::now();
    eventually("agent2 Unknown and unreachable-tainted", WAIT, || async {
        let c = clusters.get("agent2").await.unwrap();
        ready_status(&c) == Some(("Unknown".into(), "ClusterStatusUnknown".into()))
            && unreachable_tainted(&c)
    })
    .await;
    assert!(
        silent.elapsed() >= MONITOR_GRACE - Duration::from_millis(300),
        "agent2 Unknown {:?} after its last renewal",
        silent.elapsed()
    );
    let c = clusters.get("agent2").await.unwrap();
    let cond = c
        .status
        .unwrap()
        .conditions
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(
        cond.message,
        "Cluster status controller stopped posting cluster status."
    );
    // Push clusters are still fine.
    let m1 = clusters.get("member1").await.unwrap();
    assert_eq!(ready_status(&m1).map(|r| r.0), Some("True".into()));

    // Deleting a Pull cluster removes its agent's Lease with it.
    assert!(leases.get_opt("agent2").await.unwrap().is_some());
    clusters
        .delete("agent2", &DeleteParams::default())
        .await
        .unwrap();
    eventually("agent2 and its Lease gone", WAIT, || async {
        clusters.get_opt("agent2").await.unwrap().is_none()
            && leases.get_opt("agent2").await.unwrap().is_none()
    })
    .await;
    env.stop().await;
}

/// How many LISTs of Works the host has answered (its `/metrics`).
async fn work_lists(client: &kube::Client) -> u64 {
    let req = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(req).await.unwrap();
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains("verb=\"list\"")
                && l.contains("resource=\"works\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}
