//! The simulated control plane of a member cluster: nodes, a scheduler that binds Pods only
//! where their requests fit, a kubelet that starts (and, for Jobs, completes) bound Pods, the
//! Deployment/ReplicaSet/StatefulSet/DaemonSet/Job controllers and a small ownerReference
//! garbage collector.
//!
//! It keeps a cache fed by one storage watch (after a list) and runs a level-triggered pass
//! over the cache whenever something changed. After a pass that wrote, the next pass waits
//! until the watch has delivered the pass's own writes, so it never acts on a cache that
//! lacks them (which would, e.g., create a ReplicaSet's Pods twice).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::ApiServer;
use flotilla_generic_store::objects::{DeleteOptions, Objects, WriteOptions, now_rfc3339};
use flotilla_generic_store::request::FieldValidation;
use flotilla_pod_resources::ResourceName;
use flotilla_storage::{EventType, StoredObject};
use futures::StreamExt;
use rand::Rng;
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

use crate::quantity;

/// Node readiness overrides set by `RunningMember::set_node_ready` (absent = Ready).
#[derive(Clone, Default)]
pub(crate) struct NodeReadiness(Arc<std::sync::Mutex<HashMap<String, bool>>>);

impl NodeReadiness {
    pub(crate) fn set(&self, name: &str, ready: bool) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(name.to_string(), ready);
        }
    }

    fn get(&self, name: &str) -> bool {
        self.0
            .lock()
            .ok()
            .and_then(|m| m.get(name).copied())
            .unwrap_or(true)
    }
}

const FIELD_MANAGER: &str = "flotilla-membersim";
const KEY_PREFIXES: &[&str] = &[
    "/core/pods/",
    "/core/nodes/",
    "/apps/deployments/",
    "/apps/replicasets/",
    "/apps/statefulsets/",
    "/apps/daemonsets/",
    "/batch/jobs/",
    "/policy/poddisruptionbudgets/",
];

/// What the simulation needs to know about the cluster it simulates.
#[derive(Debug, Clone)]
pub(crate) struct SimConfig {
    pub name: String,
    pub nodes: u32,
    pub node_cpu: String,
    pub node_memory: String,
    pub node_pods: u32,
    pub ready_delay: Duration,
    /// Images that cannot be pulled here ([`crate::failures`]).
    pub unpullable_images: Vec<regex::Regex>,
    /// Keep PodDisruptionBudgets' status ([`crate::disruption`]).
    pub disruption_controller: bool,
}

struct Defs {
    pods: Arc<ResourceDef>,
    nodes: Arc<ResourceDef>,
    deployments: Arc<ResourceDef>,
    replicasets: Arc<ResourceDef>,
    statefulsets: Arc<ResourceDef>,
    daemonsets: Arc<ResourceDef>,
    jobs: Arc<ResourceDef>,
    budgets: Option<Arc<ResourceDef>>,
}

pub(crate) struct Sim {
    server: Arc<ApiServer>,
    cfg: SimConfig,
    defs: Defs,
    cache: BTreeMap<String, Arc<StoredObject>>,
    /// The parsed form of each cached object, held so that `StoredObject::value` (which keeps
    /// only a weak reference) parses each version once rather than on every pass: re-parsing
    /// every object of the member on each pass was most of a busy member-sim's CPU.
    parsed: HashMap<String, Arc<Value>>,
    /// Keys of the cached objects by their controller's uid, so that finding an owner's
    /// objects costs its own children, not a scan of the namespace (a scan per owner made
    /// every pass quadratic in the objects of a namespace).
    children: HashMap<String, BTreeSet<String>>,
    /// The controller uid of each cached object that has one.
    controller_of: HashMap<String, String>,
    /// When a Pod was first seen bound (by uid): it runs `ready_delay` later.
    bound_at: HashMap<String, Instant>,
    /// When a Job's Pod was first seen running: it succeeds `ready_delay` later.
    running_at: HashMap<String, Instant>,
    readiness: NodeReadiness,
    poke: Arc<Notify>,
    wrote: bool,
    failed: bool,
    deadline: Option<Instant>,
    /// Reported after every pass, for tests that wait for the simulation to be idle.
    progress: tokio::sync::watch::Sender<SimProgress>,
}

/// How far the simulation got: what tests use as a barrier instead of sleeping.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SimProgress {
    /// Passes over the member's state finished so far.
    pub passes: u64,
    /// The last pass wrote nothing, failed nothing and armed no timer: until something
    /// changes (a write, a node's readiness), the simulation does nothing.
    pub idle: bool,
}

fn meta<'a>(v: &'a Value, field: &str) -> Option<&'a str> {
    v.get("metadata")?.get(field)?.as_str()
}

fn ns_of(v: &Value) -> &str {
    meta(v, "namespace").unwrap_or_default()
}

fn name_of(v: &Value) -> &str {
    meta(v, "name").unwrap_or_default()
}

fn uid_of(v: &Value) -> &str {
    meta(v, "uid").unwrap_or_default()
}

fn terminating(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some()
}

fn controller_uid(v: &Value) -> Option<&str> {
    v.pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?
        .get("uid")?
        .as_str()
}

fn phase(v: &Value) -> &str {
    v.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("Pending")
}

fn pod_terminal(v: &Value) -> bool {
    matches!(phase(v), "Succeeded" | "Failed")
}

fn node_name(v: &Value) -> Option<&str> {
    v.pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

fn condition_true(v: &Value, ty: &str) -> bool {
    v.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

fn pod_ready(v: &Value) -> bool {
    phase(v) == "Running" && !terminating(v) && condition_true(v, "Ready")
}

fn i64_at(v: &Value, ptr: &str) -> Option<i64> {
    v.pointer(ptr).and_then(Value::as_i64)
}

fn generation(v: &Value) -> i64 {
    i64_at(v, "/metadata/generation").unwrap_or(1)
}

/// Stable FNV-1a, so a template hashes the same across restarts and builds.
fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn template_hash(template: &Value) -> String {
    let mut h = fnv(&template.to_string());
    let mut out = String::new();
    for _ in 0..10 {
        out.push(SAFE[(h % SAFE.len() as u64) as usize] as char);
        h /= SAFE.len() as u64;
    }
    out
}

fn random_suffix() -> String {
    let mut rng = rand::rng();
    (0..5)
        .map(|_| SAFE[rng.random_range(0..SAFE.len())] as char)
        .collect()
}

/// The CPU (millicores) and memory (bytes) a Pod requests: its effective request by the
/// scheduler's rule (`flotilla_pod_resources::pod_spec_value_requests`: containers, sidecar and init
/// containers, overhead, limits standing in for missing requests), the same numbers the
/// cluster status controller reports for it.
pub(crate) fn pod_requests(pod: &Value) -> (i64, i64) {
    let requests = pod
        .get("spec")
        .map(flotilla_pod_resources::pod_spec_value_requests)
        .unwrap_or_default();
    (
        requests.get(&ResourceName::Cpu),
        requests.get(&ResourceName::Memory),
    )
}

/// Conditions with times kept from `old` when nothing about a condition changed, so a pass
/// that finds nothing new writes nothing.
fn conditions(old: Option<&Value>, new: &[(&str, bool, &str, &str)], with_update: bool) -> Value {
    let now = now_rfc3339();
    let old: Vec<Value> = old
        .and_then(|s| s.get("conditions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for (ty, status, reason, message) in new {
        let status = if *status { "True" } else { "False" };
        let prev = old
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(ty));
        let same =
            |c: &Value, f: &str, v: &str| c.get(f).and_then(Value::as_str).unwrap_or("") == v;
        if let Some(p) = prev {
            if same(p, "status", status) && same(p, "reason", reason) && same(p, "message", message)
            {
                out.push(p.clone());
                continue;
            }
        }
        let transition = match prev {
            Some(p) if same(p, "status", status) => p
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or_else(|| json!(now)),
            _ => json!(now),
        };
        let mut c = Map::new();
        c.insert("type".into(), json!(ty));
        c.insert("status".into(), json!(status));
        if with_update {
            c.insert("lastUpdateTime".into(), json!(now));
        }
        c.insert("lastTransitionTime".into(), transition);
        if !reason.is_empty() {
            c.insert("reason".into(), json!(reason));
        }
        if !message.is_empty() {
            c.insert("message".into(), json!(message));
        }
        out.push(Value::Object(c));
    }
    Value::Array(out)
}

/// A Pod's status as the scheduler leaves one it cannot place: Pending, `PodScheduled`
/// False with reason Unschedulable and `message`.
fn unschedulable_status(pod: &Value, message: &str) -> Value {
    let mut status = pod
        .get("status")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    status["phase"] = json!("Pending");
    status["conditions"] = conditions(
        pod.get("status"),
        &[("PodScheduled", false, "Unschedulable", message)],
        false,
    );
    status
}

impl Sim {
    pub(crate) fn new(
        server: Arc<ApiServer>,
        cfg: SimConfig,
        readiness: NodeReadiness,
        poke: Arc<Notify>,
        progress: tokio::sync::watch::Sender<SimProgress>,
    ) -> Option<Self> {
        let r = &server.registry;
        let defs = Defs {
            pods: r.get("", "v1", "pods")?,
            nodes: r.get("", "v1", "nodes")?,
            deployments: r.get("apps", "v1", "deployments")?,
            replicasets: r.get("apps", "v1", "replicasets")?,
            statefulsets: r.get("apps", "v1", "statefulsets")?,
            daemonsets: r.get("apps", "v1", "daemonsets")?,
            jobs: r.get("batch", "v1", "jobs")?,
            budgets: r.get("policy", "v1", "poddisruptionbudgets"),
        };
        Some(Self {
            server,
            cfg,
            defs,
            cache: BTreeMap::new(),
            parsed: HashMap::new(),
            children: HashMap::new(),
            controller_of: HashMap::new(),
            bound_at: HashMap::new(),
            running_at: HashMap::new(),
            readiness,
            poke,
            wrote: false,
            failed: false,
            deadline: None,
            progress,
        })
    }

    /// Runs until its task is cancelled (with the member's other background tasks); a broken
    /// watch is re-established from a fresh list.
    pub(crate) async fn run(mut self) {
        loop {
            if let Err(e) = self.run_watch().await {
                tracing::warn!(error = %e, "member simulation watch ended; relisting");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    async fn run_watch(&mut self) -> Result<(), flotilla_storage::StorageError> {
        let storage = self.server.storage.clone();
        let list = storage.list("/", &Default::default()).await?;
        self.cache.clear();
        self.parsed.clear();
        self.children.clear();
        self.controller_of.clear();
        for o in list.items {
            if KEY_PREFIXES.iter().any(|p| o.key.starts_with(p)) {
                self.index(&o);
                self.parsed.insert(o.key.clone(), o.value());
                self.cache.insert(o.key.clone(), o);
            }
        }
        let mut seen = list.revision;
        let mut watch = storage.watch("/", list.revision).await?;
        loop {
            self.wrote = false;
            self.failed = false;
            self.deadline = None;
            self.pass().await;
            let target = if self.wrote {
                storage.current_revision().await
            } else {
                seen
            };
            if self.failed {
                let retry = Instant::now() + Duration::from_millis(100);
                self.deadline = Some(self.deadline.map_or(retry, |d| d.min(retry)));
            }
            let idle = !self.wrote && !self.failed && self.deadline.is_none();
            self.progress.send_modify(|p| {
                p.passes += 1;
                p.idle = idle;
            });
            let mut dirty = false;
            // Never wait for our own writes forever (a write outside the watch would stall).
            let catch_up_limit = Instant::now() + Duration::from_secs(2);
            loop {
                let caught_up = seen >= target;
                if caught_up && dirty {
                    // Let a burst of events land before the next pass.
                    while let Some(Some(ev)) = futures::FutureExt::now_or_never(watch.next()) {
                        let ev = ev?;
                        seen = seen.max(ev.object.revision);
                        self.apply(ev);
                    }
                    break;
                }
                let wake = match (caught_up, self.deadline) {
                    (true, Some(d)) => Some(d),
                    (true, None) => None,
                    (false, _) => Some(catch_up_limit),
                };
                let sleep = async {
                    match wake {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    ev = watch.next() => {
                        let Some(ev) = ev else { return Ok(()) };
                        let ev = ev?;
                        seen = seen.max(ev.object.revision);
                        if KEY_PREFIXES.iter().any(|p| ev.object.key.starts_with(p)) {
                            dirty = true;
                        }
                        self.apply(ev);
                    }
                    _ = self.poke.notified() => { dirty = true; }
                    _ = sleep => {
                        if caught_up { break; }
                        seen = target;
                    }
                }
            }
        }
    }

    fn apply(&mut self, ev: flotilla_storage::WatchEvent) {
        let key = &ev.object.key;
        if !KEY_PREFIXES.iter().any(|p| key.starts_with(p)) {
            return;
        }
        match ev.event_type {
            EventType::Deleted => {
                let key = key.clone();
                self.unindex(&key);
                self.parsed.remove(&key);
                self.cache.remove(&key);
            }
            EventType::Added | EventType::Modified => {
                let key = key.clone();
                self.unindex(&key);
                self.index(&ev.object);
                self.parsed.insert(key.clone(), ev.object.value());
                self.cache.insert(key, ev.object);
            }
        }
    }

    fn index(&mut self, o: &StoredObject) {
        if let Some(uid) = controller_uid(&o.value()) {
            self.children
                .entry(uid.to_string())
                .or_default()
                .insert(o.key.clone());
            self.controller_of.insert(o.key.clone(), uid.to_string());
        }
    }

    fn unindex(&mut self, key: &str) {
        if let Some(uid) = self.controller_of.remove(key) {
            if let Some(set) = self.children.get_mut(&uid) {
                set.remove(key);
                if set.is_empty() {
                    self.children.remove(&uid);
                }
            }
        }
    }

    fn objects_under(&self, prefix: &str) -> Vec<Arc<Value>> {
        self.cache
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, o)| o.value().clone())
            .collect()
    }

    fn write_opts() -> WriteOptions {
        WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            field_validation: FieldValidation::Ignore,
            dry_run: false,
        }
    }

    fn note<T>(&mut self, what: &str, r: Result<T, flotilla_apimachinery::status::ApiError>) {
        self.wrote = true;
        if let Err(e) = r {
            if e.code != 404 {
                self.failed = true;
            }
            tracing::debug!(what, code = e.code, message = %e.message, "member simulation write failed");
        }
    }

    async fn create(&mut self, def: &Arc<ResourceDef>, ns: Option<&str>, obj: Value) {
        let r = Objects::new(def, &self.server.storage)
            .create(ns, obj, &Self::write_opts())
            .await;
        self.note("create", r);
    }

    async fn update(&mut self, def: &Arc<ResourceDef>, obj: Value, sub: Option<&str>) {
        let ns = meta(&obj, "namespace").map(str::to_string);
        let name = name_of(&obj).to_string();
        let r = Objects::new(def, &self.server.storage)
            .update(ns.as_deref(), &name, obj, sub, &Self::write_opts())
            .await;
        self.note("update", r);
    }

    /// Writes `status` through the status subresource when it differs from the stored one.
    async fn set_status(&mut self, def: &Arc<ResourceDef>, obj: &Value, status: Value) {
        if obj.get("status") == Some(&status) {
            return;
        }
        let mut new = obj.clone();
        new["status"] = status;
        self.update(def, new, Some("status")).await;
    }

    async fn delete(&mut self, def: &Arc<ResourceDef>, obj: &Value) {
        let ns = meta(obj, "namespace").map(str::to_string);
        let opts = DeleteOptions {
            uid: Some(uid_of(obj).to_string()),
            ..DeleteOptions::default()
        };
        let r = Objects::new(def, &self.server.storage)
            .delete(ns.as_deref(), name_of(obj), &opts, false)
            .await;
        self.note("delete", r);
    }

    fn wake_at(&mut self, at: Instant) {
        self.deadline = Some(self.deadline.map_or(at, |d| d.min(at)));
    }

    async fn pass(&mut self) {
        self.nodes().await;
        self.garbage_collect().await;
        self.deployments().await;
        self.replicasets().await;
        self.statefulsets().await;
        self.daemonsets().await;
        self.jobs().await;
        self.schedule().await;
        self.kubelet().await;
        if self.cfg.disruption_controller {
            self.disruption_budgets().await;
        }
    }

    // ---- disruption budgets ----

    /// Every PodDisruptionBudget's status from the Pods it covers (after the kubelet, so a
    /// pass sees the Pods' readiness it just wrote on the next pass at the latest).
    async fn disruption_budgets(&mut self) {
        let Some(def) = self.defs.budgets.clone() else {
            return;
        };
        let now = now_rfc3339();
        for pdb in self.objects_under("/policy/poddisruptionbudgets/") {
            if terminating(&pdb) {
                continue;
            }
            let ns = ns_of(&pdb).to_string();
            let pods = self.objects_under(&format!("/core/pods/{ns}/"));
            let scales = |pod: &Value| self.scale_of(&ns, pod);
            let status = crate::disruption::status(&pdb, &pods, scales, pdb.get("status"), &now);
            self.set_status(&def, &pdb, status).await;
        }
    }

    /// The controller of `pod` whose desired replicas a budget counts (a ReplicaSet's
    /// Deployment, else the ReplicaSet; a StatefulSet), with its uid.
    fn scale_of(&self, ns: &str, pod: &Value) -> Option<crate::disruption::Scale> {
        let owner = pod
            .pointer("/metadata/ownerReferences")?
            .as_array()?
            .iter()
            .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))?;
        let kind = owner.get("kind")?.as_str()?;
        let name = owner.get("name")?.as_str()?;
        let prefix = match kind {
            "ReplicaSet" => "/apps/replicasets",
            "StatefulSet" => "/apps/statefulsets",
            "ReplicationController" => "/core/replicationcontrollers",
            _ => return None,
        };
        let controller = self.object(&format!("{prefix}/{ns}/{name}"))?;
        if kind == "ReplicaSet" {
            let deployment = controller
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|o| o.get("kind").and_then(Value::as_str) == Some("Deployment"))
                .and_then(|o| o.get("name").and_then(Value::as_str))
                .and_then(|d| self.object(&format!("/apps/deployments/{ns}/{d}")));
            if let Some(d) = deployment {
                return Some(crate::disruption::Scale {
                    uid: uid_of(&d).to_string(),
                    replicas: d
                        .pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(1),
                });
            }
        }
        Some(crate::disruption::Scale {
            uid: uid_of(&controller).to_string(),
            replicas: controller
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1),
        })
    }

    fn object(&self, key: &str) -> Option<Arc<Value>> {
        self.cache.get(key).map(|o| o.value().clone())
    }

    // ---- nodes ----

    fn node_name_for(&self, i: u32) -> String {
        format!("{}-node-{i}", self.cfg.name)
    }

    async fn nodes(&mut self) {
        let defs_nodes = self.defs.nodes.clone();
        for i in 0..self.cfg.nodes {
            let name = self.node_name_for(i);
            let key = format!("/core/nodes/{name}");
            let ready = self.readiness.get(&name);
            let existing = self.cache.get(&key).map(|o| o.value().clone());
            match existing {
                None => {
                    let obj = json!({
                        "apiVersion": "v1",
                        "kind": "Node",
                        "metadata": {
                            "name": name,
                            "labels": {
                                "kubernetes.io/hostname": name,
                                "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "amd64",
                                "type": "flotilla-simulated",
                            },
                        },
                        "spec": {"podCIDR": format!("10.244.{i}.0/24")},
                        "status": self.node_status(None, i, &name, ready),
                    });
                    self.create(&defs_nodes, None, obj).await;
                }
                Some(obj) => {
                    let status = self.node_status(obj.get("status"), i, &name, ready);
                    self.set_status(&defs_nodes, &obj, status).await;
                }
            }
        }
        // Nodes beyond the configured count (a restart with fewer nodes) go away.
        let prefix = format!("{}-node-", self.cfg.name);
        for node in self.objects_under("/core/nodes/") {
            let name = name_of(&node);
            if let Some(idx) = name
                .strip_prefix(&prefix)
                .and_then(|s| s.parse::<u32>().ok())
            {
                if idx >= self.cfg.nodes {
                    self.delete(&defs_nodes, &node).await;
                }
            }
        }
    }

    fn node_status(&self, old: Option<&Value>, i: u32, name: &str, ready: bool) -> Value {
        let resources = json!({
            "cpu": self.cfg.node_cpu,
            "memory": self.cfg.node_memory,
            "pods": self.cfg.node_pods.to_string(),
            "ephemeral-storage": "100Gi",
        });
        let (reason, message) = if ready {
            ("KubeletReady", "kubelet is posting ready status")
        } else {
            ("NodeStatusUnknown", "Kubelet stopped posting node status.")
        };
        let mut conds = conditions(
            old,
            &[
                (
                    "MemoryPressure",
                    false,
                    "KubeletHasSufficientMemory",
                    "kubelet has sufficient memory available",
                ),
                (
                    "DiskPressure",
                    false,
                    "KubeletHasNoDiskPressure",
                    "kubelet has no disk pressure",
                ),
                (
                    "PIDPressure",
                    false,
                    "KubeletHasSufficientPID",
                    "kubelet has sufficient PID available",
                ),
                ("Ready", ready, reason, message),
            ],
            false,
        );
        if let Some(cs) = conds.as_array_mut() {
            for c in cs {
                if c.get("lastHeartbeatTime").is_none() {
                    let t = c.get("lastTransitionTime").cloned().unwrap_or(Value::Null);
                    c["lastHeartbeatTime"] = t;
                }
            }
        }
        json!({
            "capacity": resources,
            "allocatable": resources,
            "conditions": conds,
            "addresses": [
                {"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250 + 2)},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": format!("{:032x}", fnv(name)),
                "systemUUID": format!("{:032x}", fnv(name).rotate_left(7)),
                "bootID": format!("{:032x}", fnv(name).rotate_left(13)),
                "kernelVersion": "6.1.0-flotilla",
                "osImage": "Flotilla simulated node",
                "containerRuntimeVersion": "containerd://1.7.0-simulated",
                "kubeletVersion": "v1.32.0",
                "kubeProxyVersion": "v1.32.0",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        })
    }

    fn node_is_ready(node: &Value) -> bool {
        condition_true(node, "Ready") && node.pointer("/spec/unschedulable") != Some(&json!(true))
    }

    // ---- garbage collection ----

    async fn garbage_collect(&mut self) {
        let owners: HashMap<(String, String), ()> = [
            "/apps/deployments/",
            "/apps/replicasets/",
            "/apps/statefulsets/",
            "/apps/daemonsets/",
            "/batch/jobs/",
        ]
        .iter()
        .flat_map(|p| self.objects_under(p))
        .map(|o| {
            (
                uid_of(&o).to_string(),
                o.get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .map(|k| (k, ()))
        .collect();
        let managed = [
            "Deployment",
            "ReplicaSet",
            "StatefulSet",
            "DaemonSet",
            "Job",
        ];
        for (prefix, def) in [
            ("/apps/replicasets/", self.defs.replicasets.clone()),
            ("/core/pods/", self.defs.pods.clone()),
        ] {
            for obj in self.objects_under(prefix) {
                let Some(refs) = obj
                    .pointer("/metadata/ownerReferences")
                    .and_then(Value::as_array)
                else {
                    continue;
                };
                let ours: Vec<&Value> = refs
                    .iter()
                    .filter(|r| {
                        r.get("kind")
                            .and_then(Value::as_str)
                            .is_some_and(|k| managed.contains(&k))
                    })
                    .collect();
                // Only objects every one of whose owners is a kind simulated here and gone.
                if ours.is_empty() || ours.len() != refs.len() {
                    continue;
                }
                let alive = ours.iter().any(|r| {
                    let uid = r.get("uid").and_then(Value::as_str).unwrap_or_default();
                    let kind = r.get("kind").and_then(Value::as_str).unwrap_or_default();
                    owners.contains_key(&(uid.to_string(), kind.to_string()))
                });
                if !alive {
                    self.delete(&def, &obj).await;
                }
            }
        }
    }

    // ---- workload controllers ----

    fn owned_by(&self, prefix: &str, owner: &Value) -> Vec<Arc<Value>> {
        let uid = uid_of(owner);
        let ns_prefix = format!("{prefix}{}/", ns_of(owner));
        let Some(keys) = self.children.get(uid) else {
            return Vec::new();
        };
        keys.iter()
            .filter(|k| k.starts_with(&ns_prefix))
            .filter_map(|k| self.cache.get(k))
            .map(|o| o.value().clone())
            .collect()
    }

    fn owner_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
        json!([{
            "apiVersion": api_version,
            "kind": kind,
            "name": name_of(owner),
            "uid": uid_of(owner),
            "controller": true,
            "blockOwnerDeletion": true,
        }])
    }

    /// A Pod from a template, owned by `owner`.
    fn pod_from_template(
        template: &Value,
        name: &str,
        ns: &str,
        owner_refs: Value,
        extra_labels: &[(&str, &str)],
        node: Option<&str>,
    ) -> Value {
        let mut labels = template
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in extra_labels {
            labels.insert((*k).into(), json!(v));
        }
        let mut metadata = json!({
            "name": name,
            "namespace": ns,
            "labels": labels,
            "ownerReferences": owner_refs,
        });
        if let Some(a) = template.pointer("/metadata/annotations") {
            metadata["annotations"] = a.clone();
        }
        let mut spec = template.get("spec").cloned().unwrap_or_else(|| json!({}));
        if let Some(n) = node {
            spec["nodeName"] = json!(n);
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
    }

    async fn deployments(&mut self) {
        let rs_def = self.defs.replicasets.clone();
        let d_def = self.defs.deployments.clone();
        for d in self.objects_under("/apps/deployments/") {
            if terminating(&d) {
                continue;
            }
            let ns = ns_of(&d).to_string();
            let replicas = i64_at(&d, "/spec/replicas").unwrap_or(1);
            let template = d
                .pointer("/spec/template")
                .cloned()
                .unwrap_or_else(|| json!({}));
            let hash = template_hash(&template);
            let owned = self.owned_by("/apps/replicasets/", &d);
            let current = owned
                .iter()
                .find(|rs| {
                    rs.pointer("/metadata/labels/pod-template-hash")
                        .and_then(Value::as_str)
                        == Some(hash.as_str())
                })
                .cloned();
            match &current {
                None => {
                    let mut t = template.clone();
                    t["metadata"]["labels"]["pod-template-hash"] = json!(hash);
                    let mut selector = d
                        .pointer("/spec/selector")
                        .cloned()
                        .unwrap_or_else(|| json!({}));
                    selector["matchLabels"]["pod-template-hash"] = json!(hash);
                    let mut labels = template
                        .pointer("/metadata/labels")
                        .cloned()
                        .unwrap_or_else(|| json!({}));
                    labels["pod-template-hash"] = json!(hash);
                    let rs = json!({
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "metadata": {
                            "name": format!("{}-{hash}", name_of(&d)),
                            "namespace": ns,
                            "labels": labels,
                            "ownerReferences": Self::owner_ref(&d, "apps/v1", "Deployment"),
                        },
                        "spec": {"replicas": replicas, "selector": selector, "template": t},
                    });
                    self.create(&rs_def, Some(&ns), rs).await;
                }
                Some(rs) => {
                    if i64_at(rs, "/spec/replicas") != Some(replicas) {
                        let mut new = (**rs).clone();
                        new["spec"]["replicas"] = json!(replicas);
                        self.update(&rs_def, new, None).await;
                    }
                }
            }
            // Old ReplicaSets: Recreate drops them at once; RollingUpdate keeps as many old
            // Pods as the new ReplicaSet still lacks available ones.
            let recreate =
                d.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("Recreate");
            let new_available = current
                .as_ref()
                .map(|rs| {
                    self.owned_by("/core/pods/", rs)
                        .iter()
                        .filter(|p| pod_ready(p))
                        .count() as i64
                })
                .unwrap_or(0);
            let mut allowance = if recreate {
                0
            } else {
                (replicas - new_available).max(0)
            };
            let mut old: Vec<Arc<Value>> = owned
                .iter()
                .filter(|rs| current.as_ref().is_none_or(|c| uid_of(c) != uid_of(rs)))
                .cloned()
                .collect();
            old.sort_by(|a, b| meta(b, "creationTimestamp").cmp(&meta(a, "creationTimestamp")));
            for rs in &old {
                let want = i64_at(rs, "/spec/replicas").unwrap_or(0).min(allowance);
                allowance -= want;
                if i64_at(rs, "/spec/replicas") != Some(want) {
                    let mut new = (**rs).clone();
                    new["spec"]["replicas"] = json!(want);
                    self.update(&rs_def, new, None).await;
                }
            }
            // Status from the Pods themselves, so it does not lag a ReplicaSet status write.
            let mut total = 0i64;
            let mut ready = 0i64;
            let mut updated = 0i64;
            for rs in &owned {
                let pods: Vec<_> = self
                    .owned_by("/core/pods/", rs)
                    .into_iter()
                    .filter(|p| !terminating(p) && !pod_terminal(p))
                    .collect();
                total += pods.len() as i64;
                ready += pods.iter().filter(|p| pod_ready(p)).count() as i64;
                if current.as_ref().is_some_and(|c| uid_of(c) == uid_of(rs)) {
                    updated += pods.len() as i64;
                }
            }
            let unavailable = (replicas - ready).max(0);
            let max_unavailable = match d.pointer("/spec/strategy/rollingUpdate/maxUnavailable") {
                Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
                Some(Value::String(s)) if s.ends_with('%') => {
                    s.trim_end_matches('%').parse::<i64>().unwrap_or(25) * replicas / 100
                }
                _ if recreate => 0,
                _ => replicas * 25 / 100,
            };
            let available = ready >= replicas - max_unavailable;
            let complete = updated == replicas && ready == replicas && total == replicas;
            let rs_name = current
                .as_ref()
                .map(|c| name_of(c).to_string())
                .unwrap_or_default();
            let progressing_msg = if complete {
                format!("ReplicaSet \"{rs_name}\" has successfully progressed.")
            } else {
                format!("ReplicaSet \"{rs_name}\" is progressing.")
            };
            let old_status = d.get("status");
            let mut status = json!({
                "observedGeneration": generation(&d),
                "replicas": total,
                "updatedReplicas": updated,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "conditions": conditions(old_status, &[
                    ("Available", available,
                        if available { "MinimumReplicasAvailable" } else { "MinimumReplicasUnavailable" },
                        if available { "Deployment has minimum availability." } else { "Deployment does not have minimum availability." }),
                    ("Progressing", true,
                        if complete { "NewReplicaSetAvailable" } else if current.is_some() { "ReplicaSetUpdated" } else { "NewReplicaSetCreated" },
                        &progressing_msg),
                ], true),
            });
            if unavailable > 0 {
                status["unavailableReplicas"] = json!(unavailable);
            }
            if let Some(st) = status.as_object_mut() {
                // The API omits zero counts; do the same so a re-read compares equal.
                st.retain(|k, v| k == "observedGeneration" || k == "conditions" || v != &json!(0));
            }
            self.set_status(&d_def, &d, status).await;
        }
    }

    /// Orders Pods to remove first: unscheduled, then not ready, then newest.
    fn removal_order(pods: &mut [Arc<Value>]) {
        pods.sort_by(|a, b| {
            let key = |p: &Value| (node_name(p).is_some(), pod_ready(p));
            key(a).cmp(&key(b)).then_with(|| {
                meta(b, "creationTimestamp")
                    .cmp(&meta(a, "creationTimestamp"))
                    .then_with(|| name_of(b).cmp(name_of(a)))
            })
        });
    }

    async fn replicasets(&mut self) {
        let pod_def = self.defs.pods.clone();
        let rs_def = self.defs.replicasets.clone();
        for rs in self.objects_under("/apps/replicasets/") {
            if terminating(&rs) {
                continue;
            }
            let ns = ns_of(&rs).to_string();
            let replicas = i64_at(&rs, "/spec/replicas").unwrap_or(1);
            let mut pods: Vec<_> = self
                .owned_by("/core/pods/", &rs)
                .into_iter()
                .filter(|p| !terminating(p) && !pod_terminal(p))
                .collect();
            let active = pods.len() as i64;
            if active < replicas {
                let template = rs
                    .pointer("/spec/template")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                for _ in active..replicas {
                    let name = format!("{}-{}", name_of(&rs), random_suffix());
                    let pod = Self::pod_from_template(
                        &template,
                        &name,
                        &ns,
                        Self::owner_ref(&rs, "apps/v1", "ReplicaSet"),
                        &[],
                        None,
                    );
                    self.create(&pod_def, Some(&ns), pod).await;
                }
            } else if active > replicas {
                Self::removal_order(&mut pods);
                for p in pods.iter().take((active - replicas) as usize) {
                    self.delete(&pod_def, p).await;
                }
                pods.drain(..(active - replicas) as usize);
            }
            let ready = pods.iter().filter(|p| pod_ready(p)).count() as i64;
            let mut status = json!({
                "replicas": pods.len(),
                "fullyLabeledReplicas": pods.len(),
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": generation(&rs),
            });
            if let Some(st) = status.as_object_mut() {
                st.retain(|k, v| k == "replicas" || k == "observedGeneration" || v != &json!(0));
            }
            self.set_status(&rs_def, &rs, status).await;
        }
    }

    async fn statefulsets(&mut self) {
        let pod_def = self.defs.pods.clone();
        let ss_def = self.defs.statefulsets.clone();
        for ss in self.objects_under("/apps/statefulsets/") {
            if terminating(&ss) {
                continue;
            }
            let ns = ns_of(&ss).to_string();
            let name = name_of(&ss).to_string();
            let replicas = i64_at(&ss, "/spec/replicas").unwrap_or(1);
            let parallel = ss
                .pointer("/spec/podManagementPolicy")
                .and_then(Value::as_str)
                == Some("Parallel");
            let pods: Vec<_> = self
                .owned_by("/core/pods/", &ss)
                .into_iter()
                .filter(|p| !terminating(p))
                .collect();
            let by_ordinal: HashMap<i64, Arc<Value>> = pods
                .iter()
                .filter_map(|p| {
                    let ord = name_of(p)
                        .strip_prefix(&format!("{name}-"))?
                        .parse::<i64>()
                        .ok()?;
                    Some((ord, p.clone()))
                })
                .collect();
            let template = ss
                .pointer("/spec/template")
                .cloned()
                .unwrap_or_else(|| json!({}));
            for ord in 0..replicas {
                if by_ordinal.contains_key(&ord) {
                    if !parallel && !by_ordinal.get(&ord).is_some_and(|p| pod_ready(p)) {
                        break;
                    }
                    continue;
                }
                let pod_name = format!("{name}-{ord}");
                let ord_s = ord.to_string();
                let mut pod = Self::pod_from_template(
                    &template,
                    &pod_name,
                    &ns,
                    Self::owner_ref(&ss, "apps/v1", "StatefulSet"),
                    &[
                        ("statefulset.kubernetes.io/pod-name", &pod_name),
                        ("apps.kubernetes.io/pod-index", &ord_s),
                    ],
                    None,
                );
                pod["spec"]["hostname"] = json!(pod_name);
                self.create(&pod_def, Some(&ns), pod).await;
                if !parallel {
                    break;
                }
            }
            // Scale down from the highest ordinal.
            let mut extra: Vec<_> = by_ordinal.iter().filter(|(o, _)| **o >= replicas).collect();
            extra.sort_by(|a, b| b.0.cmp(a.0));
            for (_, p) in extra
                .into_iter()
                .take(if parallel { usize::MAX } else { 1 })
            {
                self.delete(&pod_def, p).await;
            }
            let live: Vec<_> = by_ordinal
                .iter()
                .filter(|(o, _)| **o < replicas)
                .map(|(_, p)| p)
                .collect();
            let ready = live.iter().filter(|p| pod_ready(p)).count() as i64;
            let mut status = json!({
                "observedGeneration": generation(&ss),
                "replicas": live.len(),
                "readyReplicas": ready,
                "currentReplicas": live.len(),
                "updatedReplicas": live.len(),
                "availableReplicas": ready,
            });
            if let Some(st) = status.as_object_mut() {
                st.retain(|k, v| {
                    k == "replicas"
                        || k == "observedGeneration"
                        || k == "availableReplicas"
                        || v != &json!(0)
                });
            }
            self.set_status(&ss_def, &ss, status).await;
        }
    }

    async fn daemonsets(&mut self) {
        let pod_def = self.defs.pods.clone();
        let ds_def = self.defs.daemonsets.clone();
        let nodes: Vec<String> = self
            .objects_under("/core/nodes/")
            .iter()
            .filter(|n| !terminating(n))
            .map(|n| name_of(n).to_string())
            .collect();
        for ds in self.objects_under("/apps/daemonsets/") {
            if terminating(&ds) {
                continue;
            }
            let ns = ns_of(&ds).to_string();
            let pods: Vec<_> = self
                .owned_by("/core/pods/", &ds)
                .into_iter()
                .filter(|p| !terminating(p))
                .collect();
            let template = ds
                .pointer("/spec/template")
                .cloned()
                .unwrap_or_else(|| json!({}));
            for node in &nodes {
                if pods.iter().any(|p| node_name(p) == Some(node.as_str())) {
                    continue;
                }
                let pod = Self::pod_from_template(
                    &template,
                    &format!("{}-{}", name_of(&ds), random_suffix()),
                    &ns,
                    Self::owner_ref(&ds, "apps/v1", "DaemonSet"),
                    &[],
                    Some(node),
                );
                self.create(&pod_def, Some(&ns), pod).await;
            }
            let mut scheduled = 0i64;
            let mut ready = 0i64;
            for p in &pods {
                match node_name(p) {
                    Some(n) if nodes.iter().any(|x| x == n) => {
                        scheduled += 1;
                        if pod_ready(p) {
                            ready += 1;
                        }
                    }
                    _ => self.delete(&pod_def, p).await,
                }
            }
            let desired = nodes.len() as i64;
            let mut status = json!({
                "currentNumberScheduled": scheduled,
                "desiredNumberScheduled": desired,
                "numberMisscheduled": 0,
                "numberReady": ready,
                "numberAvailable": ready,
                "updatedNumberScheduled": scheduled,
                "observedGeneration": generation(&ds),
            });
            if desired - ready > 0 {
                status["numberUnavailable"] = json!(desired - ready);
            }
            if let Some(st) = status.as_object_mut() {
                st.retain(|k, v| {
                    matches!(
                        k.as_str(),
                        "currentNumberScheduled"
                            | "desiredNumberScheduled"
                            | "numberMisscheduled"
                            | "numberReady"
                            | "observedGeneration"
                    ) || v != &json!(0)
                });
            }
            self.set_status(&ds_def, &ds, status).await;
        }
    }

    async fn jobs(&mut self) {
        let pod_def = self.defs.pods.clone();
        let job_def = self.defs.jobs.clone();
        for job in self.objects_under("/batch/jobs/") {
            if terminating(&job) {
                continue;
            }
            let ns = ns_of(&job).to_string();
            let completions = i64_at(&job, "/spec/completions").unwrap_or(1);
            let parallelism = i64_at(&job, "/spec/parallelism").unwrap_or(1);
            let pods: Vec<_> = self
                .owned_by("/core/pods/", &job)
                .into_iter()
                .filter(|p| !terminating(p))
                .collect();
            let succeeded = pods.iter().filter(|p| phase(p) == "Succeeded").count() as i64;
            let failed = pods.iter().filter(|p| phase(p) == "Failed").count() as i64;
            let active = pods.iter().filter(|p| !pod_terminal(p)).count() as i64;
            let ready = pods.iter().filter(|p| pod_ready(p)).count() as i64;
            let done = succeeded >= completions;
            let suspended = job.pointer("/spec/suspend") == Some(&json!(true));
            if !done && !suspended {
                let want = parallelism.min(completions - succeeded) - active;
                let template = job
                    .pointer("/spec/template")
                    .cloned()
                    .unwrap_or_else(|| json!({}));
                let job_name = name_of(&job).to_string();
                let uid = uid_of(&job).to_string();
                for _ in 0..want.max(0) {
                    let pod = Self::pod_from_template(
                        &template,
                        &format!("{job_name}-{}", random_suffix()),
                        &ns,
                        Self::owner_ref(&job, "batch/v1", "Job"),
                        &[
                            ("batch.kubernetes.io/job-name", &job_name),
                            ("job-name", &job_name),
                            ("batch.kubernetes.io/controller-uid", &uid),
                            ("controller-uid", &uid),
                        ],
                        None,
                    );
                    self.create(&pod_def, Some(&ns), pod).await;
                }
            }
            let old = job.get("status");
            let mut status = old.cloned().unwrap_or_else(|| json!({}));
            if !status.is_object() {
                status = json!({});
            }
            if status.get("startTime").is_none() && !suspended {
                status["startTime"] = json!(now_rfc3339());
            }
            status["active"] = json!(if done { 0 } else { active });
            status["succeeded"] = json!(succeeded);
            status["failed"] = json!(failed);
            status["ready"] = json!(ready);
            status["terminating"] = json!(0);
            if done {
                if status.get("completionTime").is_none() {
                    status["completionTime"] = json!(now_rfc3339());
                }
                status["conditions"] = conditions(
                    old,
                    &[
                        (
                            "SuccessCriteriaMet",
                            true,
                            "CompletionsReached",
                            "Reached expected number of succeeded pods",
                        ),
                        (
                            "Complete",
                            true,
                            "CompletionsReached",
                            "Reached expected number of succeeded pods",
                        ),
                    ],
                    false,
                );
            }
            if let Some(st) = status.as_object_mut() {
                st.retain(|k, v| matches!(k.as_str(), "ready" | "terminating") || v != &json!(0));
            }
            self.set_status(&job_def, &job, status).await;
        }
    }

    // ---- scheduler ----

    async fn schedule(&mut self) {
        let pod_def = self.defs.pods.clone();
        struct Free {
            name: String,
            labels: Map<String, Value>,
            ready: bool,
            cpu: i64,
            mem: i64,
            pods: i64,
        }
        let mut nodes: Vec<Free> = self
            .objects_under("/core/nodes/")
            .iter()
            .filter(|n| !terminating(n))
            .map(|n| {
                let alloc = |k: &str| {
                    n.pointer(&format!("/status/allocatable/{k}"))
                        .and_then(Value::as_str)
                        .unwrap_or("0")
                        .to_string()
                };
                Free {
                    name: name_of(n).to_string(),
                    labels: n
                        .pointer("/metadata/labels")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default(),
                    ready: Self::node_is_ready(n),
                    cpu: quantity::cpu_millis(&alloc("cpu")).unwrap_or(0),
                    mem: quantity::units(&alloc("memory")).unwrap_or(0),
                    pods: quantity::units(&alloc("pods")).unwrap_or(0),
                }
            })
            .collect();
        let all_pods = self.objects_under("/core/pods/");
        for p in &all_pods {
            if pod_terminal(p) {
                continue;
            }
            if let Some(n) = node_name(p) {
                if let Some(free) = nodes.iter_mut().find(|f| f.name == n) {
                    let (c, m) = pod_requests(p);
                    free.cpu -= c;
                    free.mem -= m;
                    free.pods -= 1;
                }
            }
        }
        let mut pending: Vec<_> = all_pods
            .iter()
            .filter(|p| node_name(p).is_none() && !terminating(p) && !pod_terminal(p))
            .cloned()
            .collect();
        pending.sort_by(|a, b| {
            meta(a, "creationTimestamp")
                .cmp(&meta(b, "creationTimestamp"))
                .then_with(|| name_of(a).cmp(name_of(b)))
        });
        for pod in pending {
            if crate::failures::held_pending(&pod) {
                let message = format!(
                    "0/{} nodes are available: held Pending by annotation {}.",
                    nodes.len(),
                    crate::failures::PENDING_ANNOTATION
                );
                self.set_status(&pod_def, &pod, unschedulable_status(&pod, &message))
                    .await;
                continue;
            }
            let (cpu, mem) = pod_requests(&pod);
            let selector = pod
                .pointer("/spec/nodeSelector")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut reasons: BTreeMap<&str, usize> = BTreeMap::new();
            let mut best: Option<usize> = None;
            for (i, n) in nodes.iter().enumerate() {
                let mut fits = true;
                if !n.ready {
                    *reasons
                        .entry("node(s) had untolerated taint {node.kubernetes.io/not-ready: }")
                        .or_default() += 1;
                    continue;
                }
                if selector.iter().any(|(k, v)| n.labels.get(k) != Some(v)) {
                    *reasons
                        .entry("node(s) didn't match Pod's node affinity/selector")
                        .or_default() += 1;
                    continue;
                }
                if n.pods < 1 {
                    *reasons.entry("Too many pods").or_default() += 1;
                    fits = false;
                }
                if n.cpu < cpu {
                    *reasons.entry("Insufficient cpu").or_default() += 1;
                    fits = false;
                }
                if n.mem < mem {
                    *reasons.entry("Insufficient memory").or_default() += 1;
                    fits = false;
                }
                // Spread: prefer the node with the most CPU left, then the fewest Pods.
                if fits && best.is_none_or(|b| (nodes[b].cpu, nodes[b].pods) < (n.cpu, n.pods)) {
                    best = Some(i);
                }
            }
            match best {
                Some(i) => {
                    nodes[i].cpu -= cpu;
                    nodes[i].mem -= mem;
                    nodes[i].pods -= 1;
                    let mut bound = (*pod).clone();
                    bound["spec"]["nodeName"] = json!(nodes[i].name);
                    self.update(&pod_def, bound, None).await;
                }
                None => {
                    let detail: Vec<String> =
                        reasons.iter().map(|(r, n)| format!("{n} {r}")).collect();
                    let message = if detail.is_empty() {
                        format!("0/{} nodes are available.", nodes.len())
                    } else {
                        format!(
                            "0/{} nodes are available: {}.",
                            nodes.len(),
                            detail.join(", ")
                        )
                    };
                    self.set_status(&pod_def, &pod, unschedulable_status(&pod, &message))
                        .await;
                }
            }
        }
    }

    // ---- kubelet ----

    async fn kubelet(&mut self) {
        let pod_def = self.defs.pods.clone();
        let now = Instant::now();
        let delay = self.cfg.ready_delay;
        let node_ready: HashMap<String, (bool, String)> = self
            .objects_under("/core/nodes/")
            .iter()
            .map(|n| {
                let ip = n
                    .pointer("/status/addresses/0/address")
                    .and_then(Value::as_str)
                    .unwrap_or("10.0.0.1")
                    .to_string();
                (name_of(n).to_string(), (condition_true(n, "Ready"), ip))
            })
            .collect();
        let pods = self.objects_under("/core/pods/");
        let live: std::collections::HashSet<String> =
            pods.iter().map(|p| uid_of(p).to_string()).collect();
        self.bound_at.retain(|k, _| live.contains(k));
        self.running_at.retain(|k, _| live.contains(k));
        for pod in pods {
            let Some(node) = node_name(&pod) else {
                continue;
            };
            if terminating(&pod) || pod_terminal(&pod) {
                continue;
            }
            let Some((ready_node, host_ip)) = node_ready.get(node).cloned() else {
                continue;
            };
            let uid = uid_of(&pod).to_string();
            let is_job = pod
                .pointer("/metadata/ownerReferences/0/kind")
                .and_then(Value::as_str)
                == Some("Job");
            let running = phase(&pod) == "Running";
            let bound = *self.bound_at.entry(uid.clone()).or_insert(now);
            if !running && now < bound + delay {
                self.wake_at(bound + delay);
                // Show it scheduled meanwhile (as the scheduler's binding would).
                if !condition_true(&pod, "PodScheduled") {
                    let mut status = pod
                        .get("status")
                        .cloned()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    status["phase"] = json!("Pending");
                    status["conditions"] =
                        conditions(pod.get("status"), &[("PodScheduled", true, "", "")], false);
                    status["hostIP"] = json!(host_ip);
                    self.set_status(&pod_def, &pod, status).await;
                }
                continue;
            }
            if is_job && running {
                let started = *self.running_at.entry(uid.clone()).or_insert(now);
                if now >= started + delay {
                    let status = self.pod_status(&pod, "Succeeded", false, &host_ip);
                    self.set_status(&pod_def, &pod, status).await;
                    continue;
                }
                self.wake_at(started + delay);
            }
            let mut status = self.pod_status(&pod, "Running", ready_node, &host_ip);
            if let Some(failure) = crate::failures::failure_of(&pod, &self.cfg.unpullable_images) {
                let running = *self.running_at.entry(uid.clone()).or_insert(now);
                let (restarts, next) = crate::failures::restarts(now - running);
                if failure == crate::failures::Failure::CrashLoop {
                    self.wake_at(now + next);
                }
                crate::failures::apply(
                    &mut status,
                    failure,
                    restarts,
                    &now_rfc3339(),
                    pod.get("status"),
                );
            }
            self.set_status(&pod_def, &pod, status).await;
        }
    }

    fn pod_status(&self, pod: &Value, phase: &str, ready: bool, host_ip: &str) -> Value {
        let old = pod.get("status");
        let mut status = old
            .cloned()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let h = fnv(uid_of(pod));
        let pod_ip = format!("10.244.{}.{}", (h >> 8) % 250, h % 250 + 2);
        let now = now_rfc3339();
        let started = status
            .get("startTime")
            .cloned()
            .unwrap_or_else(|| json!(now));
        let succeeded = phase == "Succeeded";
        let (ready_reason, ready_msg) = if succeeded {
            ("PodCompleted", "")
        } else if ready {
            ("", "")
        } else {
            ("ContainersNotReady", "the node is not ready")
        };
        status["phase"] = json!(phase);
        status["conditions"] = conditions(
            old,
            &[
                ("PodReadyToStartContainers", !succeeded, "", ""),
                (
                    "Initialized",
                    true,
                    if succeeded { "PodCompleted" } else { "" },
                    "",
                ),
                ("Ready", ready, ready_reason, ready_msg),
                ("ContainersReady", ready, ready_reason, ready_msg),
                ("PodScheduled", true, "", ""),
            ],
            false,
        );
        status["hostIP"] = json!(host_ip);
        status["hostIPs"] = json!([{"ip": host_ip}]);
        status["podIP"] = json!(pod_ip);
        status["podIPs"] = json!([{"ip": pod_ip}]);
        status["startTime"] = started.clone();
        let containers = pod
            .pointer("/spec/containers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let old_cs = old
            .and_then(|s| s.get("containerStatuses"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let statuses: Vec<Value> = containers
            .iter()
            .map(|c| {
                let cname = c.get("name").and_then(Value::as_str).unwrap_or_default();
                let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
                let prev = old_cs.iter().find(|s| s.get("name").and_then(Value::as_str) == Some(cname));
                let since = prev
                    .and_then(|s| s.pointer("/state/running/startedAt"))
                    .cloned()
                    .unwrap_or_else(|| started.clone());
                let state = if succeeded {
                    let finished = prev
                        .and_then(|s| s.pointer("/state/terminated/finishedAt"))
                        .cloned()
                        .unwrap_or_else(|| json!(now));
                    json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": since, "finishedAt": finished}})
                } else {
                    json!({"running": {"startedAt": since}})
                };
                json!({
                    "name": cname,
                    "image": image,
                    "imageID": format!("simulated://{image}"),
                    "containerID": format!("containerd://{:016x}", fnv(&format!("{}/{cname}", uid_of(pod)))),
                    "ready": ready && !succeeded,
                    "started": !succeeded,
                    "restartCount": 0,
                    "state": state,
                })
            })
            .collect();
        status["containerStatuses"] = json!(statuses);
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_sum_containers_and_fall_back_to_limits() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "128Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "c"},
        ]}});
        assert_eq!(pod_requests(&pod), (1500, (128 << 20) + (1 << 30)));
    }

    #[test]
    fn requests_count_init_containers_and_overhead() {
        let pod = json!({"spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
            "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2", "memory": "1Mi"}}}],
            "overhead": {"cpu": "10m"},
        }});
        assert_eq!(pod_requests(&pod), (2010, 64 << 20));
        assert_eq!(pod_requests(&json!({})), (0, 0));
    }

    #[test]
    fn template_hash_is_stable_and_sensitive() {
        let a = json!({"spec": {"containers": [{"name": "x", "image": "nginx:1"}]}});
        let b = json!({"spec": {"containers": [{"name": "x", "image": "nginx:2"}]}});
        assert_eq!(template_hash(&a), template_hash(&a.clone()));
        assert_ne!(template_hash(&a), template_hash(&b));
        assert_eq!(template_hash(&a).len(), 10);
    }

    #[test]
    fn unchanged_conditions_keep_their_times() {
        let old = json!({"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2020-01-01T00:00:00Z"}]});
        let c = conditions(Some(&old), &[("Ready", true, "", "")], false);
        assert_eq!(c[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        let c = conditions(Some(&old), &[("Ready", false, "X", "")], false);
        assert_ne!(c[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
    }
}
