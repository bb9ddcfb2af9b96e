//! The fault suite's load: a steady stream of writes from several clients, and the check that
//! everything they were told was written is there and propagated once the fault is over.
//!
//! Each client owns its own Deployments (`c<i>-d<j>` in [`NAMESPACE`]), each with its own
//! PropagationPolicy, and keeps writing until stopped: it creates Deployments up to its quota
//! (the policy first), then changes their replicas by re-applying them or through the scale
//! subresource. kube-rs clients apply server-side without retries (one acknowledgement = one
//! request); kubectl clients run `kubectl apply -f` and `kubectl scale`. Every write is
//! recorded: acknowledged (2xx, or kubectl exit 0) or not, with the replicas it set, so that
//! afterwards [`check_converged`] knows what each object may hold: the last acknowledged
//! value, or the value of a later write whose outcome is unknown (sent while the server died).
//!
//! Included by the tests that use it with `#[path = "support/load.rs"] mod load;`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
};
use serde_json::{Value, json};

use crate::support::Kubectl;

/// Where the load writes.
pub const NAMESPACE: &str = "load";

/// The member clusters every policy names.
pub const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

/// How the load runs.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// kube-rs clients (server-side apply and the scale subresource).
    pub kube_clients: usize,
    /// kubectl clients (`apply -f` and `scale`).
    pub kubectl_clients: usize,
    /// Deployments each client creates before it only changes them.
    pub deployments_per_client: usize,
    /// Pause between two writes of one client.
    pub pause: Duration,
    /// `tolerationSeconds` of the policies for the not-ready/unreachable NoExecute taints
    /// (`None`: the scheduler's default). NoSchedule taints are always tolerated, so a
    /// scale during a short outage keeps the placement.
    pub toleration_seconds: Option<u32>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            kube_clients: 3,
            kubectl_clients: 1,
            deployments_per_client: 4,
            pause: Duration::from_millis(150),
            toleration_seconds: None,
        }
    }
}

impl LoadOptions {
    /// "4 clients (3 kube-rs, 1 kubectl), 16 Deployments".
    pub fn describe(&self) -> String {
        format!(
            "{} clients ({} kube-rs, {} kubectl) on {} Deployments",
            self.kube_clients + self.kubectl_clients,
            self.kube_clients,
            self.kubectl_clients,
            (self.kube_clients + self.kubectl_clients) * self.deployments_per_client
        )
    }
}

/// What one object's writes left known.
#[derive(Clone, Debug, Default)]
pub struct ObjectLog {
    /// Replicas of the last acknowledged write.
    pub acked: Option<i64>,
    /// Acknowledged writes of this object.
    pub acked_writes: u64,
    /// Replicas of the writes sent after the last acknowledged one whose outcome is unknown.
    pub unknown: Vec<i64>,
}

/// Everything the clients did.
#[derive(Clone, Debug, Default)]
pub struct LoadLog {
    /// Deployments by name.
    pub deployments: BTreeMap<String, ObjectLog>,
    /// Policies acknowledged (a client writes a Deployment only after its policy was).
    pub policies: BTreeSet<String>,
    /// Acknowledged writes (Deployments and policies).
    pub acked: u64,
    /// Writes that failed or whose answer never came.
    pub failed: u64,
    /// Failures by a short reason.
    pub errors: BTreeMap<String, u64>,
}

impl LoadLog {
    pub fn merge(&mut self, other: LoadLog) {
        self.deployments.extend(other.deployments);
        self.policies.extend(other.policies);
        self.acked += other.acked;
        self.failed += other.failed;
        for (k, v) in other.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }

    fn failure(&mut self, reason: String) {
        self.failed += 1;
        let short: String = reason.chars().take(80).collect();
        *self.errors.entry(short).or_default() += 1;
    }
}

/// The running load; [`Load::stop`] ends it and returns what was done.
pub struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
    tasks: Vec<tokio::task::JoinHandle<LoadLog>>,
    pub options: LoadOptions,
}

impl Load {
    /// Starts the clients against the host whose admin kubeconfig is `kubeconfig`
    /// (`dir` holds kubectl's caches and manifests). The namespace must exist.
    pub async fn start(kubeconfig: &Path, dir: &Path, options: LoadOptions) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(0));
        let mut tasks = Vec::new();
        for i in 0..options.kube_clients + options.kubectl_clients {
            let writer = if i < options.kube_clients {
                Writer::Kube(no_retry_client(kubeconfig).await)
            } else {
                let cache = dir.join(format!("load-cache-{i}"));
                let manifests = dir.join(format!("load-manifests-{i}"));
                std::fs::create_dir_all(&manifests).unwrap();
                Writer::Kubectl(
                    Arc::new(Kubectl::new(
                        crate::support::kubectl_binary("kubectl"),
                        kubeconfig,
                        &cache,
                    )),
                    manifests,
                )
            };
            let client = Client {
                id: i,
                writer,
                options: options.clone(),
                stop: stop.clone(),
                acked: acked.clone(),
                rng: 0x9e37_79b9_7f4a_7c15 ^ (i as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
                log: LoadLog::default(),
                names: Vec::new(),
            };
            tasks.push(tokio::spawn(client.run()));
        }
        Load {
            stop,
            acked,
            tasks,
            options,
        }
    }

    /// Acknowledged writes so far.
    pub fn acked(&self) -> u64 {
        self.acked.load(Ordering::Relaxed)
    }

    /// Waits until `n` more writes than now have been acknowledged (the clients are writing
    /// again after a fault), panicking after `timeout`.
    pub async fn wait_acked_more(&self, n: u64, timeout: Duration, what: &str) {
        let target = self.acked() + n;
        let deadline = Instant::now() + timeout;
        while self.acked() < target {
            assert!(
                Instant::now() < deadline,
                "{what}: only {} of {target} writes acknowledged after {timeout:?}",
                self.acked()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn stop(self) -> LoadLog {
        self.stop.store(true, Ordering::Relaxed);
        let mut log = LoadLog::default();
        for t in self.tasks {
            log.merge(t.await.unwrap());
        }
        log
    }
}

/// A kube-rs client of `kubeconfig` that never retries, so an acknowledgement is one request,
/// and sends each request at once: its connections set `TCP_NODELAY` (kube's default stack
/// does not, and on loopback Nagle's algorithm against delayed ACKs adds up to 200 ms to a
/// request, which would swamp the server's own latency in the figures).
pub async fn no_retry_client(kubeconfig: &Path) -> kube::Client {
    use kube::client::ConfigExt;
    let config = crate::support::kube_config(kubeconfig, None).await;
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    let https = config.rustls_https_connector_with_connector(http).unwrap();
    let service = tower::ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer().unwrap())
        .map_err(tower::BoxError::from)
        .service(
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(https),
        );
    kube::Client::new(service, config.default_namespace)
}

/// How long one write may take before it counts as failed (its outcome unknown).
const WRITE_TIMEOUT: Duration = Duration::from_secs(20);

async fn bounded<F: std::future::Future<Output = Result<(), String>>>(f: F) -> Result<(), String> {
    match tokio::time::timeout(WRITE_TIMEOUT, f).await {
        Ok(r) => r,
        Err(_) => Err("timed out".into()),
    }
}

enum Writer {
    Kube(kube::Client),
    Kubectl(Arc<Kubectl>, PathBuf),
}

struct Client {
    id: usize,
    writer: Writer,
    options: LoadOptions,
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
    rng: u64,
    log: LoadLog,
    /// The Deployments this client has started writing.
    names: Vec<String>,
}

impl Client {
    fn random(&mut self, n: u64) -> u64 {
        // xorshift64*
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }

    async fn run(mut self) -> LoadLog {
        while !self.stop.load(Ordering::Relaxed) {
            let new = self.names.len() < self.options.deployments_per_client;
            let name = if new {
                format!("c{}-d{}", self.id, self.names.len())
            } else {
                let i = self.random(self.names.len() as u64) as usize;
                self.names[i].clone()
            };
            if new {
                self.names.push(name.clone());
            }
            let replicas = 1 + self.random(4) as i64;
            if !self.log.policies.contains(&name) {
                match bounded(self.apply_policy(&name)).await {
                    Ok(()) => {
                        self.log.policies.insert(name.clone());
                        self.log.acked += 1;
                        self.acked.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        self.log.failure(e);
                        tokio::time::sleep(self.options.pause).await;
                        continue;
                    }
                }
            }
            let known = self
                .log
                .deployments
                .get(&name)
                .is_some_and(|o| o.acked.is_some());
            let scale = known && self.random(2) == 0;
            let result = if scale {
                bounded(self.scale(&name, replicas)).await
            } else {
                bounded(self.apply_deployment(&name, replicas)).await
            };
            let entry = self.log.deployments.entry(name).or_default();
            match result {
                Ok(()) => {
                    entry.acked = Some(replicas);
                    entry.acked_writes += 1;
                    entry.unknown.clear();
                    self.log.acked += 1;
                    self.acked.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => {
                    entry.unknown.push(replicas);
                    self.log.failure(e);
                }
            }
            tokio::time::sleep(self.options.pause).await;
        }
        self.log
    }

    async fn apply_policy(&self, name: &str) -> Result<(), String> {
        let body = policy(name, self.options.toleration_seconds);
        match &self.writer {
            Writer::Kube(client) => {
                let api: Api<DynamicObject> =
                    Api::namespaced_with(client.clone(), NAMESPACE, &policy_resource());
                self.server_side_apply(&api, name, &body).await
            }
            Writer::Kubectl(k, dir) => kubectl_apply(k.clone(), dir, name, "pp", body).await,
        }
    }

    async fn apply_deployment(&self, name: &str, replicas: i64) -> Result<(), String> {
        let body = deployment(name, replicas);
        match &self.writer {
            Writer::Kube(client) => {
                let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
                self.server_side_apply(&api, name, &body).await
            }
            Writer::Kubectl(k, dir) => kubectl_apply(k.clone(), dir, name, "deploy", body).await,
        }
    }

    /// Server-side apply of `body` as this client's field manager, taking over conflicts.
    async fn server_side_apply<K>(
        &self,
        api: &Api<K>,
        name: &str,
        body: &Value,
    ) -> Result<(), String>
    where
        K: Clone + k8s_openapi::serde::de::DeserializeOwned + std::fmt::Debug,
    {
        api.patch(
            name,
            &PatchParams::apply(&format!("load-{}", self.id)).force(),
            &Patch::Apply(body),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
    }

    async fn scale(&self, name: &str, replicas: i64) -> Result<(), String> {
        match &self.writer {
            Writer::Kube(client) => {
                let api: Api<Deployment> = Api::namespaced(client.clone(), NAMESPACE);
                api.patch_scale(
                    name,
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": replicas}})),
                )
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
            }
            Writer::Kubectl(k, _) => {
                let k = k.clone();
                let args = vec![
                    "-n".to_string(),
                    NAMESPACE.to_string(),
                    "scale".to_string(),
                    format!("deployment/{name}"),
                    format!("--replicas={replicas}"),
                    "--request-timeout=20s".to_string(),
                ];
                kubectl(k, args).await
            }
        }
    }
}

async fn kubectl_apply(
    k: Arc<Kubectl>,
    dir: &Path,
    name: &str,
    what: &str,
    body: Value,
) -> Result<(), String> {
    let file = dir.join(format!("{name}-{what}.json"));
    std::fs::write(&file, body.to_string()).unwrap();
    let args = vec![
        "apply".to_string(),
        "-f".to_string(),
        file.display().to_string(),
        "--request-timeout=20s".to_string(),
    ];
    kubectl(k, args).await
}

async fn kubectl(k: Arc<Kubectl>, args: Vec<String>) -> Result<(), String> {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = k.run(&args);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("kubectl: {}", out.stderr.trim()))
        }
    })
    .await
    .unwrap()
}

/// The Deployment `name` with `replicas` small pods.
pub fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "app",
                    "image": "nginx:1.25",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}
                }]}
            }
        }
    })
}

/// The PropagationPolicy of Deployment `name`: divided over the three members by free
/// capacity.
pub fn policy(name: &str, toleration_seconds: Option<u32>) -> Value {
    let mut tolerations = Vec::new();
    for key in [
        "cluster.karmada.io/not-ready",
        "cluster.karmada.io/unreachable",
    ] {
        tolerations.push(json!({"key": key, "operator": "Exists", "effect": "NoSchedule"}));
        if let Some(s) = toleration_seconds {
            tolerations.push(json!({
                "key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": s
            }));
        }
    }
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": {
                "clusterAffinity": {"clusterNames": MEMBERS},
                "clusterTolerations": tolerations,
                "replicaScheduling": {
                    "replicaSchedulingType": "Divided",
                    "replicaDivisionPreference": "Weighted",
                    "weightPreference": {"dynamicWeight": "AvailableReplicas"}
                }
            }
        }
    })
}

pub fn policy_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
        "propagationpolicies",
    )
}

pub fn binding_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
        "resourcebindings",
    )
}

pub fn work_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work"),
        "works",
    )
}

/// What [`check_converged`] found when everything held.
#[derive(Clone, Debug, Default)]
pub struct Converged {
    /// Acknowledged writes whose result (or a later write's) is on the host.
    pub writes_found: u64,
    pub templates: usize,
    /// Member Deployments checked.
    pub member_objects: usize,
}

/// `spec.clusters` of a binding as name -> replicas (zero-replica entries dropped).
pub fn targets(rb: &Value) -> BTreeMap<String, i64> {
    rb["spec"]["clusters"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| {
                    let r = c["replicas"].as_i64().unwrap_or(0);
                    (r > 0).then(|| (c["name"].as_str().unwrap_or_default().to_string(), r))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn condition_true(obj: &Value, kind: &str) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == kind && c["status"] == "True")
    })
}

async fn list(
    client: &kube::Client,
    ar: &ApiResource,
    ns: Option<&str>,
) -> Result<Vec<Value>, String> {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, ar),
        None => Api::all_with(client.clone(), ar),
    };
    let list = api
        .list(&ListParams::default())
        .await
        .map_err(|e| format!("list {}: {e}", ar.plural))?;
    Ok(list
        .items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect())
}

fn deployments_resource() -> ApiResource {
    ApiResource::erase::<Deployment>(&())
}

/// Whether the writes in `log` are all on the host and fully propagated: `host` reads the
/// template store (the components' kubeconfig, past merged reads); `members` read each
/// member's own API. `Err` says the first thing that does not hold yet.
///
/// - every acknowledged write is there: each Deployment holds its last acknowledged
///   replicas, or those of a later write whose outcome is unknown; each acknowledged policy
///   exists; nothing else is in the namespace;
/// - each template's binding is scheduled for its current generation, its targets add up to
///   the replicas, and it is FullyApplied with every target applied;
/// - exactly one live Work per (template, target) and none for other clusters;
/// - each target member runs a Deployment with its share, all ready; the others none; no
///   member has a Deployment in the namespace that is not a template's;
/// - the template's status (summed from the members) says all replicas are ready.
pub async fn check_converged(
    host: &kube::Client,
    members: &[(String, kube::Client)],
    log: &LoadLog,
) -> Result<Converged, String> {
    let mut found = Converged::default();
    let templates: BTreeMap<String, Value> = list(host, &deployments_resource(), Some(NAMESPACE))
        .await?
        .into_iter()
        .map(|d| {
            (
                d["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                d,
            )
        })
        .collect();
    for (name, o) in &log.deployments {
        let Some(t) = templates.get(name) else {
            if o.acked.is_some() {
                return Err(format!(
                    "acknowledged Deployment {name} is missing on the host"
                ));
            }
            continue;
        };
        let replicas = t["spec"]["replicas"].as_i64().unwrap_or(-1);
        if o.acked != Some(replicas) && !o.unknown.contains(&replicas) {
            return Err(format!(
                "{name} has {replicas} replicas; last acknowledged {:?}, unknown since {:?}",
                o.acked, o.unknown
            ));
        }
        found.writes_found += o.acked_writes;
    }
    for name in templates.keys() {
        if !log.deployments.contains_key(name) {
            return Err(format!("Deployment {name} on the host was never written"));
        }
    }
    let policies: BTreeSet<String> = list(host, &policy_resource(), Some(NAMESPACE))
        .await?
        .iter()
        .map(|p| {
            p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    if let Some(missing) = log.policies.iter().find(|p| !policies.contains(*p)) {
        return Err(format!(
            "acknowledged PropagationPolicy {missing} is missing"
        ));
    }
    found.writes_found += log.policies.len() as u64;
    let bindings: BTreeMap<String, Value> = list(host, &binding_resource(), Some(NAMESPACE))
        .await?
        .into_iter()
        .map(|b| {
            (
                b["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                b,
            )
        })
        .collect();
    // (cluster, template) -> live Works.
    let mut works: BTreeMap<(String, String), usize> = BTreeMap::new();
    for w in list(host, &work_resource(), None).await? {
        let ns = w["metadata"]["namespace"].as_str().unwrap_or_default();
        let Some(cluster) = ns.strip_prefix("karmada-es-") else {
            continue;
        };
        for m in w["spec"]["workload"]["manifests"]
            .as_array()
            .into_iter()
            .flatten()
        {
            if m["kind"] == "Deployment" && m["metadata"]["namespace"] == NAMESPACE {
                if !w["metadata"]["deletionTimestamp"].is_null() {
                    return Err(format!(
                        "a Work for {} in {ns} is being deleted",
                        m["metadata"]["name"]
                    ));
                }
                let name = m["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                *works.entry((cluster.to_string(), name)).or_default() += 1;
            }
        }
    }
    let mut member_deploys: Vec<(String, BTreeMap<String, Value>)> = Vec::new();
    for (cluster, client) in members {
        let items = list(client, &deployments_resource(), Some(NAMESPACE))
            .await
            .map_err(|e| format!("{cluster}: {e}"))?;
        let by_name: BTreeMap<String, Value> = items
            .into_iter()
            .map(|d| {
                (
                    d["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    d,
                )
            })
            .collect();
        if let Some(extra) = by_name.keys().find(|n| !templates.contains_key(*n)) {
            return Err(format!(
                "{cluster} has Deployment {extra}, which is no template"
            ));
        }
        member_deploys.push((cluster.clone(), by_name));
    }
    for (name, t) in &templates {
        let replicas = t["spec"]["replicas"].as_i64().unwrap_or(-1);
        let generation = t["metadata"]["generation"].as_i64().unwrap_or(-1);
        let rb_name = format!("{name}-deployment");
        let rb = bindings
            .get(&rb_name)
            .ok_or_else(|| format!("no binding {rb_name}"))?;
        if rb["spec"]["replicas"].as_i64() != Some(replicas) {
            return Err(format!(
                "{rb_name} has spec.replicas {} for {replicas}",
                rb["spec"]["replicas"]
            ));
        }
        let rb_gen = rb["metadata"]["generation"].as_i64();
        if rb["status"]["schedulerObservedGeneration"].as_i64() != rb_gen {
            return Err(format!(
                "{rb_name} is not scheduled at generation {rb_gen:?} yet"
            ));
        }
        let tg = targets(rb);
        let sum: i64 = tg.values().sum();
        if sum != replicas {
            return Err(format!(
                "{rb_name} places {sum} of {replicas} replicas: {tg:?}"
            ));
        }
        if !condition_true(rb, "Scheduled") || !condition_true(rb, "FullyApplied") {
            return Err(format!(
                "{rb_name} is not Scheduled and FullyApplied: {}",
                rb["status"]["conditions"]
            ));
        }
        for (cluster, by_name) in &member_deploys {
            let n_works = works
                .get(&(cluster.clone(), name.clone()))
                .copied()
                .unwrap_or(0);
            match tg.get(cluster) {
                Some(&share) => {
                    if n_works != 1 {
                        return Err(format!("{n_works} Works of {name} for {cluster}"));
                    }
                    let applied = rb["status"]["aggregatedStatus"]
                        .as_array()
                        .is_some_and(|a| {
                            a.iter().any(|i| {
                                i["clusterName"] == cluster.as_str() && i["applied"] == true
                            })
                        });
                    if !applied {
                        return Err(format!(
                            "{rb_name}: not applied in {cluster}: {}",
                            rb["status"]["aggregatedStatus"]
                        ));
                    }
                    let d = by_name
                        .get(name)
                        .ok_or_else(|| format!("{name} is missing in {cluster}"))?;
                    let (r, ready) = (
                        d["spec"]["replicas"].as_i64().unwrap_or(-1),
                        d["status"]["readyReplicas"].as_i64().unwrap_or(0),
                    );
                    if r != share || ready != share {
                        return Err(format!(
                            "{name} in {cluster}: {ready}/{r} ready, its share is {share}"
                        ));
                    }
                    found.member_objects += 1;
                }
                None => {
                    if n_works != 0 {
                        return Err(format!(
                            "{n_works} Works of {name} for {cluster}, not a target"
                        ));
                    }
                    if by_name.contains_key(name) {
                        return Err(format!("{name} is in {cluster}, not a target ({tg:?})"));
                    }
                }
            }
        }
        let ready = t["status"]["readyReplicas"].as_i64().unwrap_or(0);
        let observed = t["status"]["observedGeneration"].as_i64();
        if ready != replicas || observed.is_some_and(|g| g != generation) {
            return Err(format!(
                "{name}'s status says {ready}/{replicas} ready (observedGeneration {observed:?}, generation {generation})"
            ));
        }
    }
    found.templates = templates.len();
    Ok(found)
}

/// Calls [`check_converged`] until it holds, returning how long that took from `since` and
/// what it found; panics with the last reason after `timeout`.
pub async fn wait_converged(
    host: &kube::Client,
    members: &[(String, kube::Client)],
    log: &LoadLog,
    since: Instant,
    timeout: Duration,
) -> (Duration, Converged) {
    let deadline = Instant::now() + timeout;
    loop {
        match check_converged(host, members, log).await {
            Ok(c) => return (since.elapsed(), c),
            Err(e) if Instant::now() > deadline => {
                panic!(
                    "not converged {timeout:?} after the fault: {e}\nload: acked {}, failed {}, errors {:?}",
                    log.acked, log.failed, log.errors
                )
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
        }
    }
}

/// One row of the fault table, printed (and appended to `$FAULTS_TABLE` when set, for
/// `e2e/faults.sh`).
pub fn print_row(fault: &str, load: &str, log: &LoadLog, found: &Converged, converge: Duration) {
    let row = format!(
        "| {fault} | {load} | {} | {} | {:.1} s |",
        log.acked,
        found.writes_found,
        converge.as_secs_f64()
    );
    crate::support::fault_row(&row);
    println!("  failed writes: {} {:?}", log.failed, log.errors);
}
