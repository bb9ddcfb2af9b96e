//! The execution controller: each Work in `karmada-es-<cluster>` is applied to that member
//! with server-side apply under one field manager, through the member's reused client
//! ([`crate::members`]). Every member has its own queue and workers, so a dead or slow member
//! only delays its own Works.
//!
//! - Conflicts: a member object that exists and does not carry this Work's annotations is
//!   left alone under `conflictResolution: Abort` (the default; the Work's `Applied` condition
//!   says why) and taken over under `Overwrite`. A Namespace that already exists in a member
//!   is used as it is and never deleted by Flotilla.
//! - A missing namespace in the member is created before applying into it.
//! - Status: one watch per (member, kind) on the objects Flotilla applied (label
//!   `karmada.io/managed=true`) feeds `manifestStatuses` (reflected status and health,
//!   `flotilla_interpreter`); a member event re-queues the Work it belongs to, which writes
//!   its status when it changed. A Work whose generation was applied already is not applied
//!   again for a status event.
//! - Deletion: a finalizer on the Work deletes the member objects it applied (unless
//!   `preserveResourcesOnDeletion`) before the Work goes; a Cluster that no longer exists has
//!   nothing to clean.

use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use flotilla_controller_runtime::EventRequest;
use flotilla_controller_runtime::WorkQueue;
use flotilla_karmada_api::work::{
    ManifestStatus, ResourceHealth, ResourceIdentifier, WORK_APPLIED, WORK_DISPATCHING, Work,
    WorkStatus,
};
use flotilla_names::karmada;
use k8s_openapi::api::core::v1::{Namespace, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tracing::{Instrument, debug, info_span};

use crate::members::MemberClients;
use crate::registry::{ResourceInfo, gvk_of};
use crate::{Context, EXECUTION_MANAGER, Error, Shared, host_err, is_not_found};
use flotilla_controller_runtime::reflector::wait_ready;
use flotilla_controller_runtime::{Action, ControllerOptions, Reflector, ReflectorSpec};
use flotilla_tasks::AbortOnDrop;

pub(crate) const CONTROLLER: &str = "execution";
/// Applied condition reasons and message (Karmada's).
pub const REASON_APPLIED_SUCCESSFUL: &str = "AppliedSuccessful";
pub const REASON_APPLIED_FAILED: &str = "AppliedFailed";
pub const MESSAGE_APPLIED_SUCCESSFUL: &str = "Manifest has been successfully applied";
/// Dispatching condition reasons and messages (Karmada's).
pub const REASON_SUSPEND_DISPATCHING: &str = "SuspendDispatching";
pub const MESSAGE_SUSPEND_DISPATCHING: &str = "Work dispatching is in a suspended state.";
pub const REASON_DISPATCHING: &str = "Dispatching";
pub const MESSAGE_DISPATCHING: &str = "Work is being dispatched to member clusters.";

/// The signal of a changed Work in an execution namespace.
pub(crate) fn signal_of(w: &Work) -> Option<Signal> {
    let ns = w.namespace()?;
    let cluster = karmada::cluster_of_execution_namespace(&ns).ok()?;
    Some(Signal::Work {
        cluster: cluster.to_string(),
        name: w.name_any(),
    })
}

/// What re-queues Works: a Work changed, or a member's object or Cluster did.
pub(crate) enum Signal {
    Work { cluster: String, name: String },
    Cluster(String),
}

struct ClusterQueue {
    queue: Arc<WorkQueue<String>>,
    _workers: AbortOnDrop,
}

struct MemberWatch {
    epoch: u64,
    store: Store<DynamicObject>,
    _task: AbortOnDrop,
}

struct Execution {
    ctx: Arc<Context>,
    works: Store<Work>,
    members: Arc<MemberClients>,
    queues: DashMap<String, ClusterQueue>,
    watches: DashMap<(String, GroupVersionKind), MemberWatch>,
    /// Work generation last applied completely, per (cluster, Work name).
    applied: DashMap<(String, String), i64>,
    /// The version of each manifest's member object as Flotilla last left it (by ordinal),
    /// per (cluster, Work name): a member object at another version was changed by someone
    /// else, and is applied again (drift), as Karmada's work status controller does.
    recorded: DashMap<(String, String), Vec<Option<String>>>,
    signals: mpsc::UnboundedSender<Signal>,
}

/// One manifest's outcome in a member.
enum Outcome {
    /// Written; the member object's version as the write left it (see [`version_of`]).
    Applied(String),
    /// Applied before at this Work generation and still there: nothing sent.
    Unchanged,
    /// Present and left alone (a Namespace the member already had).
    Kept,
    Failed(String),
}

/// Runs the execution controller; `works` is the shared Work cache, `signals` carries the
/// Work changes (and is how member watches re-queue Works, through `tx`).
/// Runs the execution controller; `rx` carries Work and Cluster changes, and member
/// watches re-queue Works through `tx`.
pub(crate) async fn run(
    ctx: Arc<Context>,
    shared: Shared,
    tx: mpsc::UnboundedSender<Signal>,
    mut rx: mpsc::UnboundedReceiver<Signal>,
) {
    let (works, clusters) = (shared.works, shared.clusters);
    let members = MemberClients::new(ctx.host.clone(), clusters.clone());
    if !wait_ready(&clusters).await || !wait_ready(&works).await {
        return;
    }
    debug!("execution controller started");
    let exec = Arc::new(Execution {
        ctx,
        works,
        members,
        queues: DashMap::new(),
        watches: DashMap::new(),
        applied: DashMap::new(),
        recorded: DashMap::new(),
        signals: tx,
    });
    let _teardown = Teardown(exec.clone());
    while let Some(signal) = rx.recv().await {
        match signal {
            Signal::Work { cluster, name } => exec.enqueue(&cluster, name),
            Signal::Cluster(cluster) => {
                let ns = karmada::execution_namespace(&cluster);
                for w in exec.works.state() {
                    if w.namespace().as_deref() == Some(ns.as_str()) {
                        exec.enqueue(&cluster, w.name_any());
                    }
                }
            }
        }
    }
}

/// Ends the per-cluster workers and the member watches with the controller's task: they hold
/// the controller themselves, so dropping it would not.
struct Teardown(Arc<Execution>);

impl Drop for Teardown {
    fn drop(&mut self) {
        self.0.queues.clear();
        self.0.watches.clear();
    }
}

impl Execution {
    fn enqueue(self: &Arc<Self>, cluster: &str, work: String) {
        if let Some(q) = self.queues.get(cluster) {
            q.queue.add(work);
            return;
        }
        let entry = self.queues.entry(cluster.to_string()).or_insert_with(|| {
            // One controller per cluster (a slow member holds up only its own Works), all
            // named `execution` in metrics: the depth reported is their sum (below).
            let controller = self.ctx.manager.controller::<String>(
                CONTROLLER,
                &ControllerOptions {
                    report_queue_depth: false,
                    ..self
                        .ctx
                        .controller_options(self.ctx.opts.execution_workers_per_cluster)
                },
            );
            let queue = controller.queue().clone();
            let exec = self.clone();
            let name = cluster.to_string();
            let workers = controller.run(move |work: String| {
                let exec = exec.clone();
                let cluster = name.clone();
                async move {
                    let span = info_span!("execute", cluster = %cluster, work = %work);
                    exec.reconcile(&cluster, &work).instrument(span).await
                }
            });
            ClusterQueue {
                queue,
                _workers: AbortOnDrop(tokio::spawn(workers)),
            }
        });
        entry.queue.add(work);
        // The entry holds its shard's lock: release it before reading every queue.
        drop(entry);
        let depth: usize = self.queues.iter().map(|q| q.queue.len()).sum();
        self.ctx.manager.metrics().queue_depth(CONTROLLER, depth);
    }

    async fn reconcile(self: &Arc<Self>, cluster: &str, name: &str) -> Result<Action, Error> {
        self.ctx.registry.loaded().await;
        let ns = karmada::execution_namespace(cluster);
        debug!("reconciling Work");
        let Some(work) = self.works.get(&ObjectRef::new(name).within(&ns)) else {
            let key = (cluster.to_string(), name.to_string());
            self.applied.remove(&key);
            self.recorded.remove(&key);
            return Ok(Action::Done);
        };
        let api: Api<Work> = Api::namespaced(self.ctx.host.clone(), &ns);
        let finalizers = work.metadata.finalizers.clone().unwrap_or_default();
        let has_finalizer = finalizers
            .iter()
            .any(|f| f == karmada::EXECUTION_CONTROLLER_FINALIZER);
        if work.metadata.deletion_timestamp.is_some() {
            if !has_finalizer {
                return Ok(Action::Done);
            }
            let preserve = work.spec.preserve_resources_on_deletion == Some(true);
            let exists = self
                .members
                .cluster(cluster)
                .is_some_and(|c| c.metadata.deletion_timestamp.is_none());
            debug!(preserve, exists, "Work deleted");
            if exists {
                let outcome = if preserve {
                    LeftBehind::Released
                } else {
                    LeftBehind::Deleted
                };
                self.settle_member_objects(cluster, &work, outcome).await?;
            }
            let kept: Vec<&String> = finalizers
                .iter()
                .filter(|f| *f != karmada::EXECUTION_CONTROLLER_FINALIZER)
                .collect();
            let patch = json!({"metadata": {"finalizers": kept, "resourceVersion": work.metadata.resource_version}});
            match api
                .patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(host_err("removing the finalizer of Work", name)(e)),
            }
            let key = (cluster.to_string(), name.to_string());
            self.applied.remove(&key);
            self.recorded.remove(&key);
            return Ok(Action::Done);
        }
        if !has_finalizer {
            let mut all = finalizers.clone();
            all.push(karmada::EXECUTION_CONTROLLER_FINALIZER.to_string());
            let patch = json!({"metadata": {"finalizers": all, "resourceVersion": work.metadata.resource_version}});
            api.patch(name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(host_err("adding the finalizer of Work", name))?;
        }
        let suspended = work.spec.suspend_dispatching == Some(true);
        let dispatching = self.write_dispatching(&api, name, &work, suspended).await?;
        if suspended {
            return Ok(Action::Done);
        }
        if self.members.cluster(cluster).is_none() {
            return Ok(Action::Done);
        }
        if !self.members.ready(cluster) {
            // The status controller flips Ready back; the Cluster event re-queues the Works.
            return Ok(Action::RequeueAfter(Duration::from_secs(10)));
        }
        let member = match self.members.get(cluster).await {
            Ok(m) => m,
            Err(e) => {
                self.members.invalidate(cluster);
                return Err(e);
            }
        };
        let generation = work.metadata.generation.unwrap_or(0);
        debug!(generation, "applying Work");
        let key = (cluster.to_string(), name.to_string());
        let already = self.applied.get(&key).is_some_and(|g| *g == generation);
        let mut outcomes = Vec::new();
        let mut versions = Vec::new();
        let mut statuses = Vec::new();
        for (ordinal, manifest) in work.spec.workload.manifests.iter().enumerate() {
            let manifest = manifest.clone().into_value();
            let api_version = manifest
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("");
            let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or("");
            let Some(info) = self.ctx.registry.lookup(api_version, kind) else {
                outcomes.push(Outcome::Failed(format!(
                    "the host does not serve {api_version} {kind}"
                )));
                continue;
            };
            let gvk = gvk_of(api_version, kind);
            let store = self.watch(cluster, &gvk, &info, &member);
            let obj_name = manifest
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let obj_ns = manifest
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .filter(|_| info.namespaced);
            let mut r = ObjectRef::new_with(obj_name, info.resource.clone());
            if let Some(n) = obj_ns {
                r = r.within(n);
            }
            let seen = store.get(&r);
            let last = self
                .recorded
                .get(&key)
                .and_then(|v| v.get(ordinal).cloned().flatten());
            let drifted = match (&seen, &last) {
                (Some(obj), Some(last)) => version_of(obj) != *last,
                _ => false,
            };
            if already && drifted {
                debug!(
                    kind,
                    name = obj_name,
                    "member object changed by someone else: applying it again"
                );
                self.ctx.metrics.drift();
            }
            let outcome = if already && seen.is_some() && !drifted {
                Outcome::Unchanged
            } else {
                self.apply(
                    cluster,
                    &member.client,
                    &info,
                    obj_ns,
                    &manifest,
                    name,
                    seen.is_some(),
                )
                .await
            };
            versions.push(match &outcome {
                Outcome::Applied(v) => Some(v.clone()),
                Outcome::Unchanged => last,
                Outcome::Kept | Outcome::Failed(_) => None,
            });
            outcomes.push(outcome);
            if let Some(obj) = store.get(&r) {
                let value = serde_json::to_value(obj.as_ref()).unwrap_or(Value::Null);
                statuses.push(ManifestStatus {
                    identifier: ResourceIdentifier {
                        ordinal: i32::try_from(ordinal).unwrap_or(i32::MAX),
                        group: gvk.group.clone(),
                        version: gvk.version.clone(),
                        kind: kind.to_string(),
                        resource: info.resource.plural.clone(),
                        namespace: obj_ns.unwrap_or_default().to_string(),
                        name: obj_name.to_string(),
                    },
                    status: flotilla_interpreter::reflect_status(&value),
                    health: Some(flotilla_interpreter::health(&value)),
                });
            }
        }
        let failures: Vec<&str> = outcomes
            .iter()
            .filter_map(|o| match o {
                Outcome::Failed(m) => Some(m.as_str()),
                _ => None,
            })
            .collect();
        let ok = failures.is_empty();
        for o in &outcomes {
            if !matches!(o, Outcome::Kept) {
                self.ctx
                    .metrics
                    .applied(cluster, matches!(o, Outcome::Applied(_)));
            }
        }
        if ok {
            self.recorded.insert(key.clone(), versions);
            self.applied.insert(key, generation);
        } else {
            self.recorded.remove(&key);
            self.applied.remove(&key);
        }
        let message = if ok {
            MESSAGE_APPLIED_SUCCESSFUL.to_string()
        } else {
            failures.join("; ")
        };
        let reason = if ok {
            REASON_APPLIED_SUCCESSFUL
        } else {
            REASON_APPLIED_FAILED
        };
        let mut current = work.status.clone().unwrap_or_default();
        if let Some(conditions) = dispatching {
            // Written just now; the cache may not show it yet.
            current.conditions = conditions;
        }
        let applied = crate::aggregate::condition(
            &current.conditions,
            WORK_APPLIED,
            ok,
            reason,
            &message,
            work.metadata.generation,
        );
        let unchanged = current.manifest_statuses == statuses
            && current.conditions.iter().any(|c| {
                c.type_ == WORK_APPLIED
                    && c.status == applied.status
                    && c.reason == applied.reason
                    && c.message == applied.message
                    && c.observed_generation == applied.observed_generation
            });
        self.record_sync(&work, cluster, &outcomes, &failures);
        if current.manifest_statuses != statuses {
            self.record_reflections(&work, &current.manifest_statuses, &statuses);
        }
        if !unchanged {
            let status = WorkStatus {
                conditions: crate::aggregate::with_condition(&current.conditions, applied),
                manifest_statuses: statuses,
            };
            self.write_status(
                &api,
                name,
                json!({"status": status}),
                "writing the status of Work",
            )
            .await?;
        }
        if ok {
            Ok(Action::Done)
        } else {
            Err(Error::ApplyFailed {
                cluster: cluster.to_string(),
                work: name.to_string(),
                message,
            })
        }
    }

    /// An Event about a Work.
    fn work_event(&self, work: &Work, type_: &'static str, reason: &'static str, message: String) {
        self.ctx.events.record(EventRequest {
            involved: ObjectReference {
                api_version: Some("work.karmada.io/v1alpha1".into()),
                kind: Some("Work".into()),
                namespace: work.namespace(),
                name: Some(work.name_any()),
                uid: work.metadata.uid.clone(),
                ..Default::default()
            },
            type_,
            reason,
            message,
        });
    }

    /// Karmada's Work events of one sync that wrote something: `SyncSucceed` when every
    /// manifest is in place, `SyncFailed` saying why otherwise.
    fn record_sync(&self, work: &Work, cluster: &str, outcomes: &[Outcome], failures: &[&str]) {
        let wrote = outcomes.iter().any(|o| matches!(o, Outcome::Applied(_)));
        let key = format!(
            "{}/{}",
            work.namespace().unwrap_or_default(),
            work.name_any()
        );
        if !failures.is_empty() {
            self.work_event(
                work,
                "Warning",
                "SyncFailed",
                format!(
                    "Failed to sync work({key}) to cluster({cluster}), err: {}",
                    failures.join("; ")
                ),
            );
        } else if wrote {
            self.work_event(
                work,
                "Normal",
                "SyncSucceed",
                format!("Sync work({key}) to cluster({cluster}) successful."),
            );
        }
    }

    /// Karmada's events for each member object whose reflected status or health changed:
    /// `ReflectStatusSucceed` and `InterpretHealthSucceed`, on the Work.
    fn record_reflections(&self, work: &Work, before: &[ManifestStatus], after: &[ManifestStatus]) {
        for status in after {
            if before.contains(status) {
                continue;
            }
            let id = &status.identifier;
            let object = if id.namespace.is_empty() {
                format!("{}/{}", id.kind, id.name)
            } else {
                format!("{}/{}/{}", id.kind, id.namespace, id.name)
            };
            self.work_event(
                work,
                "Normal",
                "ReflectStatusSucceed",
                format!("Reflect status for object({object}) succeed."),
            );
            if let Some(health) = &status.health {
                let judged = match health {
                    ResourceHealth::Healthy => "healthy",
                    _ => "unhealthy",
                };
                self.work_event(
                    work,
                    "Normal",
                    "InterpretHealthSucceed",
                    format!("Interpret health of object({object}) as {judged}."),
                );
            }
        }
    }

    /// Sets the Work's `Dispatching` condition: False while dispatching is suspended, True
    /// again once it resumes. A Work never suspended gets none (one write fewer per Work).
    async fn write_dispatching(
        &self,
        api: &Api<Work>,
        name: &str,
        work: &Work,
        suspended: bool,
    ) -> Result<Option<Vec<Condition>>, Error> {
        let current = work
            .status
            .as_ref()
            .map(|s| s.conditions.as_slice())
            .unwrap_or_default();
        let existing = current.iter().find(|c| c.type_ == WORK_DISPATCHING);
        let want = if suspended { "False" } else { "True" };
        if existing.is_none_or(|c| c.status == want) && (existing.is_some() || !suspended) {
            return Ok(None);
        }
        let (reason, message) = if suspended {
            (REASON_SUSPEND_DISPATCHING, MESSAGE_SUSPEND_DISPATCHING)
        } else {
            (REASON_DISPATCHING, MESSAGE_DISPATCHING)
        };
        let condition = crate::aggregate::condition(
            current,
            WORK_DISPATCHING,
            !suspended,
            reason,
            message,
            work.metadata.generation,
        );
        let conditions = crate::aggregate::with_condition(current, condition);
        let patch = json!({"status": {"conditions": conditions}});
        self.write_status(
            api,
            name,
            patch,
            "writing the Dispatching condition of Work",
        )
        .await?;
        self.work_event(work, "Normal", "WorkDispatching", message.to_string());
        Ok(Some(conditions))
    }

    /// One merge patch of a Work's status, as the execution controller.
    async fn write_status(
        &self,
        api: &Api<Work>,
        name: &str,
        patch: Value,
        action: &'static str,
    ) -> Result<(), Error> {
        api.patch_status(
            name,
            &PatchParams {
                field_manager: Some(EXECUTION_MANAGER.into()),
                ..Default::default()
            },
            &Patch::Merge(patch),
        )
        .await
        .map_err(host_err(action, name))?;
        self.ctx.metrics.wrote("work_status");
        Ok(())
    }

    /// The store of the member watch of `gvk`, started (or restarted for a new client) here.
    fn watch(
        self: &Arc<Self>,
        cluster: &str,
        gvk: &GroupVersionKind,
        info: &ResourceInfo,
        member: &crate::members::MemberClient,
    ) -> Store<DynamicObject> {
        let key = (cluster.to_string(), gvk.clone());
        if let Some(w) = self.watches.get(&key) {
            if w.epoch == member.epoch {
                return w.store.clone();
            }
        }
        debug!(cluster, kind = %gvk.kind, "watching member objects");
        let tx = self.signals.clone();
        let expected_ns = karmada::execution_namespace(cluster);
        let cluster_name = cluster.to_string();
        let (reflector, task) = Reflector::start_owned(
            Api::<DynamicObject>::all_with(member.client.clone(), &info.resource),
            info.resource.clone(),
            ReflectorSpec::default()
                .config(watcher::Config::default().labels(&format!(
                    "{}={}",
                    karmada::MANAGED_BY_KARMADA_LABEL,
                    karmada::MANAGED_BY_KARMADA_LABEL_VALUE
                )))
                .trim(trim_member_object),
            format!("member-cache {cluster} {}", gvk.kind),
        );
        reflector.subscribe(move |obj: &DynamicObject, _| {
            let a = obj.annotations();
            if a.get(karmada::WORK_NAMESPACE_ANNOTATION) != Some(&expected_ns) {
                return;
            }
            if let Some(work) = a.get(karmada::WORK_NAME_ANNOTATION) {
                let _ = tx.send(Signal::Work {
                    cluster: cluster_name.clone(),
                    name: work.clone(),
                });
            }
        });
        let store = reflector.store().clone();
        self.watches.insert(
            key,
            MemberWatch {
                epoch: member.epoch,
                store: store.clone(),
                _task: task,
            },
        );
        store
    }

    /// Applies one manifest; `known` says the member watch has it (so it is ours).
    #[allow(clippy::too_many_arguments)]
    async fn apply(
        &self,
        cluster: &str,
        client: &kube::Client,
        info: &ResourceInfo,
        namespace: Option<&str>,
        manifest: &Value,
        work_name: &str,
        known: bool,
    ) -> Outcome {
        let timeout = self.ctx.opts.member_timeout;
        let api = crate::registry::dynamic_api(client, &info.resource, namespace);
        let name = manifest
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let kind = manifest.get("kind").and_then(Value::as_str).unwrap_or("");
        let what = match namespace {
            Some(ns) => format!("{kind} {ns}/{name}"),
            None => format!("{kind} {name}"),
        };
        if !known {
            match tokio::time::timeout(timeout, api.get_opt(&name)).await {
                Err(_) => {
                    return Outcome::Failed(format!("reading {what} timed out after {timeout:?}"));
                }
                Ok(Err(e)) => {
                    return Outcome::Failed(format!("reading {what}: {}", api_message(&e)));
                }
                Ok(Ok(Some(existing))) => {
                    let a = existing.annotations();
                    let ours = a.get(karmada::WORK_NAME_ANNOTATION).map(String::as_str)
                        == Some(work_name)
                        && a.get(karmada::WORK_NAMESPACE_ANNOTATION)
                            == Some(&karmada::execution_namespace(cluster));
                    let overwrite = manifest
                        .pointer(&format!(
                            "/metadata/annotations/{}",
                            karmada::CONFLICT_RESOLUTION_ANNOTATION.replace('/', "~1")
                        ))
                        .and_then(Value::as_str)
                        == Some(karmada::CONFLICT_RESOLUTION_OVERWRITE);
                    if !ours && kind == "Namespace" && info.resource.group.is_empty() {
                        return Outcome::Kept;
                    }
                    if !ours && !overwrite {
                        return Outcome::Failed(format!(
                            "{what} already exists in cluster {cluster} and is not managed by \
                             Flotilla; conflictResolution is Abort (set it to Overwrite in the \
                             policy to take the object over)"
                        ));
                    }
                    if !ours {
                        return self.take_over(&api, &what, manifest, &existing).await;
                    }
                }
                Ok(Ok(None)) => {}
            }
        }
        let params = PatchParams::apply(EXECUTION_MANAGER).force();
        for attempt in 0..2 {
            let result =
                tokio::time::timeout(timeout, api.patch(&name, &params, &Patch::Apply(manifest)))
                    .await;
            match result {
                Err(_) => {
                    return Outcome::Failed(format!("applying {what} timed out after {timeout:?}"));
                }
                Ok(Ok(obj)) => return Outcome::Applied(version_of(&obj)),
                Ok(Err(e)) => {
                    let missing_ns = namespace.filter(|ns| namespace_missing(&e, ns));
                    if let (Some(ns), 0) = (missing_ns, attempt) {
                        // Only while the host namespace is propagated here: a namespace being
                        // deleted on the host must not come back through its last objects.
                        if !self.namespace_propagated(cluster, ns) {
                            return Outcome::Failed(format!(
                                "namespace {ns} does not exist in cluster {cluster} (it is \
                                 created there while the host namespace exists)"
                            ));
                        }
                        if let Err(msg) = self.create_namespace(cluster, client, ns).await {
                            return Outcome::Failed(msg);
                        }
                        continue;
                    }
                    return Outcome::Failed(format!("applying {what}: {}", api_message(&e)));
                }
            }
        }
        Outcome::Failed(format!(
            "applying {what}: the namespace could not be created"
        ))
    }

    /// Takes a member's own object over (`conflictResolution: Overwrite`) as Karmada does: a
    /// full replacement by the rendered manifest, keeping only what retention keeps of the
    /// member's copy ([`flotilla_interpreter::retain`]); what else the member had goes.
    async fn take_over(
        &self,
        api: &Api<DynamicObject>,
        what: &str,
        manifest: &Value,
        existing: &DynamicObject,
    ) -> Outcome {
        let timeout = self.ctx.opts.member_timeout;
        let observed = match serde_json::to_value(existing) {
            Ok(v) => v,
            Err(e) => return Outcome::Failed(format!("reading {what}: {e}")),
        };
        let mut replacement = manifest.clone();
        flotilla_interpreter::retain(&mut replacement, &observed);
        let body: DynamicObject = match serde_json::from_value(replacement) {
            Ok(b) => b,
            Err(e) => return Outcome::Failed(format!("taking {what} over: {e}")),
        };
        let name = existing.name_any();
        let params = PostParams {
            field_manager: Some(EXECUTION_MANAGER.into()),
            ..Default::default()
        };
        match tokio::time::timeout(timeout, api.replace(&name, &params, &body)).await {
            Err(_) => Outcome::Failed(format!("taking {what} over timed out after {timeout:?}")),
            Ok(Ok(obj)) => Outcome::Applied(version_of(&obj)),
            Ok(Err(e)) => Outcome::Failed(format!("taking {what} over: {}", api_message(&e))),
        }
    }

    /// Whether the namespace sync has a live Work for `ns` in `cluster`.
    fn namespace_propagated(&self, cluster: &str, ns: &str) -> bool {
        let work = karmada::work_name("", ns, "Namespace");
        self.works
            .get(&ObjectRef::new(&work).within(&karmada::execution_namespace(cluster)))
            .is_some_and(|w| w.metadata.deletion_timestamp.is_none())
    }

    /// Creates namespace `ns` in the member as the namespace sync's Work would, so that Work
    /// takes it as its own (and deletes it with the host namespace).
    async fn create_namespace(
        &self,
        cluster: &str,
        client: &kube::Client,
        ns: &str,
    ) -> Result<(), String> {
        let api: Api<Namespace> = Api::all(client.clone());
        let manifest = crate::namespaces::namespace_manifest(
            &Namespace {
                metadata: kube::api::ObjectMeta {
                    name: Some(ns.to_string()),
                    ..Default::default()
                },
                ..Default::default()
            },
            cluster,
            &karmada::work_name("", ns, "Namespace"),
        );
        let body: Namespace = serde_json::from_value(manifest).map_err(|e| e.to_string())?;
        let result = tokio::time::timeout(
            self.ctx.opts.member_timeout,
            api.create(
                &PostParams {
                    field_manager: Some(EXECUTION_MANAGER.into()),
                    ..Default::default()
                },
                &body,
            ),
        )
        .await;
        match result {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code == 409 => Ok(()),
            Ok(Err(e)) => Err(format!("creating namespace {ns}: {}", api_message(&e))),
            Err(_) => Err(format!("creating namespace {ns} timed out")),
        }
    }

    /// The member objects of a deleted Work (those it still manages): deleted, or released
    /// (`preserveResourcesOnDeletion`: kept, without the metadata saying Karmada manages
    /// them, as Karmada's execution controller leaves them).
    async fn settle_member_objects(
        &self,
        cluster: &str,
        work: &Work,
        outcome: LeftBehind,
    ) -> Result<(), Error> {
        let member = self.members.get(cluster).await?;
        let timeout = self.ctx.opts.member_timeout;
        let work_name = work.name_any();
        let work_ns = karmada::execution_namespace(cluster);
        for manifest in &work.spec.workload.manifests {
            let (Some(api_version), Some(kind), Some(name)) =
                (manifest.api_version(), manifest.kind(), manifest.name())
            else {
                continue;
            };
            let Some(info) = self.ctx.registry.lookup(api_version, kind) else {
                continue;
            };
            let ns = manifest.namespace().filter(|_| info.namespaced);
            let api = crate::registry::dynamic_api(&member.client, &info.resource, ns);
            let member_err = |action: &'static str| {
                let object = format!("{kind} {name}");
                let cluster = cluster.to_string();
                move |source: kube::Error| Error::Member {
                    action,
                    object,
                    cluster,
                    source,
                }
            };
            let existing = tokio::time::timeout(timeout, api.get_opt(name))
                .await
                .map_err(|_| Error::MemberTimeout {
                    cluster: cluster.to_string(),
                })?
                .map_err(member_err("reading"))?;
            let Some(existing) = existing else { continue };
            let a = existing.annotations();
            if a.get(karmada::WORK_NAME_ANNOTATION) != Some(&work_name)
                || a.get(karmada::WORK_NAMESPACE_ANNOTATION) != Some(&work_ns)
            {
                continue;
            }
            let (action, result) = match outcome {
                LeftBehind::Deleted => {
                    debug!(kind, name, "deleting the member object of a deleted Work");
                    let deleted = tokio::time::timeout(
                        timeout,
                        api.delete(name, &DeleteParams::background()),
                    )
                    .await;
                    ("deleting", deleted.map(|r| r.map(drop)))
                }
                LeftBehind::Released => {
                    debug!(kind, name, "releasing the member object of a deleted Work");
                    let patch = release_patch(ns.is_some());
                    let released = tokio::time::timeout(
                        timeout,
                        api.patch(name, &PatchParams::default(), &Patch::Merge(patch)),
                    )
                    .await;
                    ("releasing", released.map(|r| r.map(drop)))
                }
            };
            match result {
                Err(_) => {
                    return Err(Error::MemberTimeout {
                        cluster: cluster.to_string(),
                    });
                }
                Ok(Ok(())) => {}
                Ok(Err(e)) if is_not_found(&e) => {}
                Ok(Err(e)) => return Err(member_err(action)(e)),
            }
        }
        Ok(())
    }
}

/// A member object's version as Karmada's object watcher records it: its generation when it
/// has one (spec changes; status writes do not count), else its resourceVersion (any
/// change).
fn version_of(obj: &DynamicObject) -> String {
    match obj.metadata.generation {
        Some(g) if g != 0 => format!("gen:{g}"),
        _ => format!(
            "rv:{}",
            obj.metadata.resource_version.as_deref().unwrap_or_default()
        ),
    }
}

/// What becomes of a deleted Work's objects in its member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LeftBehind {
    Deleted,
    Released,
}

/// The merge patch that releases a member object: Karmada's managed labels and annotations
/// (`karmada.io/managed`, the binding's and the Work's permanent ids, the
/// `resourcetemplate.karmada.io/*` and Work name annotations) and the policy's claim (a
/// PropagationPolicy's for a namespaced object, a ClusterPropagationPolicy's for a
/// cluster-scoped one), as Karmada's execution controller strips them.
fn release_patch(namespaced: bool) -> Value {
    let mut labels = vec![
        karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL,
        karmada::WORK_PERMANENT_ID_LABEL,
        karmada::MANAGED_BY_KARMADA_LABEL,
    ];
    let mut annotations = vec![
        karmada::MANAGED_ANNOTATIONS_ANNOTATION,
        karmada::MANAGED_LABELS_ANNOTATION,
        karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION,
        karmada::RESOURCE_BINDING_NAME_ANNOTATION,
        karmada::RESOURCE_TEMPLATE_UID_ANNOTATION,
        karmada::RESOURCE_TEMPLATE_GENERATION_ANNOTATION,
        karmada::WORK_NAME_ANNOTATION,
        karmada::WORK_NAMESPACE_ANNOTATION,
    ];
    if namespaced {
        labels.push(karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL);
        annotations.push(karmada::PROPAGATION_POLICY_NAME_ANNOTATION);
        annotations.push(karmada::PROPAGATION_POLICY_NAMESPACE_ANNOTATION);
    } else {
        labels.push(karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL);
        annotations.push(karmada::CLUSTER_PROPAGATION_POLICY_ANNOTATION);
    }
    json!({"metadata": {
        "labels": crate::removing(&labels),
        "annotations": crate::removing(&annotations),
    }})
}

/// What the member watches keep of an object: status, the spec's scalars (health reads
/// `spec.replicas` and the like) and the annotations naming its Work, not the pod template
/// (the bulk of a workload) nor kubectl's last-applied copy.
fn trim_member_object(obj: &mut DynamicObject) {
    if let Some(annotations) = obj.metadata.annotations.as_mut() {
        annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    if let Some(Value::Object(spec)) = obj.data.get_mut("spec") {
        spec.remove("template");
        spec.remove("jobTemplate");
        spec.remove("volumeClaimTemplates");
    }
}

/// Whether a member's error says the namespace `ns` does not exist.
fn namespace_missing(e: &kube::Error, ns: &str) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404
        && (s.details.as_ref().is_some_and(|d| d.kind == "namespaces" && d.name == ns)
            || s.message.contains(&format!("namespaces \"{ns}\" not found"))))
}

/// The member's own message for an API error, the error text otherwise.
fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(s) => s.message.clone(),
        other => crate::error_chain(other),
    }
}
