//! The binding controller: for each scheduled ResourceBinding or ClusterResourceBinding, one
//! Work per target cluster ([`crate::render`]), Works of clusters no longer targeted removed
//! (those the scheduler is still gracefully evicting are kept until their task ends), and on
//! the way back the binding's `aggregatedStatus` and `FullyApplied` from its Works
//! ([`crate::aggregate`]) and the template's `.status` from those (`flotilla_interpreter`).
//!
//! A finalizer keeps a deleted binding until its Works are gone (their own finalizer holds
//! them until the member objects are deleted), so a deleted template leaves nothing behind.
//! Works are written only when what they should hold differs from what they hold, statuses
//! only when they change.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use flotilla_controller_runtime::EventRequest;
use flotilla_karmada_api::binding::{
    AggregatedStatusItem, BINDING_FULLY_APPLIED, ClusterResourceBinding, ResourceBinding,
    ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};
use flotilla_karmada_api::work::Work;
use flotilla_names::karmada;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::ResourceExt;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tracing::{Instrument, debug, info_span};

use crate::aggregate::{self, ClusterWork};
use crate::binding_key::BindingKey;
use crate::overrides::{ChangeTracker, OverrideChange, OverridePolicies};
use crate::registry::dynamic_api;
use crate::render::{Rendering, binding_id_label};
use crate::templates::{Templates, cached_template, involved};
use crate::{BINDING_MANAGER, Context, Error, Shared, host_err, is_conflict, is_not_found};
use flotilla_controller_runtime::reflector::wait_ready;
use flotilla_controller_runtime::{Action, Controller};
use flotilla_scheduler::ClusterSnapshot;
use flotilla_tasks::AbortOnDrop;

pub(crate) const CONTROLLER: &str = "binding";
/// The Work annotations saying which override policies shaped its manifest.
const APPLIED_OVERRIDE_ANNOTATIONS: [&str; 2] = [
    flotilla_overrides::APPLIED_OVERRIDES_ANNOTATION,
    flotilla_overrides::APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
];
/// Work writes of one binding in flight at once.
const WORK_WRITES_IN_FLIGHT: usize = 16;

/// One binding of either kind, as the controller reads it.
struct Binding {
    meta: ObjectMeta,
    spec: ResourceBindingSpec,
    status: ResourceBindingStatus,
}

struct BindingController {
    ctx: Arc<Context>,
    /// The applied state last reported in an Event per (binding, cluster): the binding in the
    /// cache may not show our own status write yet, and must not make us report it twice.
    reported: dashmap::DashMap<(BindingKey, String), (Option<bool>, Option<String>)>,
    bindings: Store<ResourceBinding>,
    cluster_bindings: Store<ClusterResourceBinding>,
    works: Store<Work>,
    templates: Templates,
    overrides: OverridePolicies,
    clusters: Store<flotilla_karmada_api::Cluster>,
}

fn binding_resource(namespaced: bool) -> ApiResource {
    if namespaced {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
            "resourcebindings",
        )
    } else {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ClusterResourceBinding"),
            "clusterresourcebindings",
        )
    }
}

fn work_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work"),
        "works",
    )
}

/// Runs the binding controller: `controller` is queued with each binding that changed or
/// whose Works did; `override_changes` names the override policies and Clusters that changed.
pub(crate) async fn run(
    ctx: Arc<Context>,
    shared: Shared,
    controller: Controller<BindingKey>,
    mut override_changes: mpsc::UnboundedReceiver<OverrideChange>,
) {
    let queue = controller.queue().clone();
    for store_ready in [
        wait_ready(&shared.works).await,
        wait_ready(&shared.bindings).await,
        wait_ready(&shared.cluster_bindings).await,
        wait_ready(&shared.overrides.namespaced).await,
        wait_ready(&shared.overrides.cluster).await,
        wait_ready(&shared.clusters).await,
    ] {
        if !store_ready {
            return;
        }
    }
    let track = {
        let queue = queue.clone();
        let mut tracker = ChangeTracker::new(
            shared.overrides.clone(),
            shared.bindings.clone(),
            shared.cluster_bindings.clone(),
            shared.clusters.clone(),
            shared.templates.clone(),
        );
        tokio::spawn(async move {
            while let Some(change) = override_changes.recv().await {
                for key in tracker.affected(&change) {
                    queue.add(key);
                }
            }
        })
    };
    let _track = AbortOnDrop(track);
    let binding = Arc::new(BindingController {
        ctx,
        reported: dashmap::DashMap::new(),
        bindings: shared.bindings,
        cluster_bindings: shared.cluster_bindings,
        works: shared.works,
        templates: shared.templates,
        overrides: shared.overrides,
        clusters: shared.clusters,
    });
    controller
        .run(move |key: BindingKey| {
            let c = binding.clone();
            async move {
                let span = info_span!("bind", namespace = ?key.namespace, name = %key.name);
                c.reconcile(&key).instrument(span).await
            }
        })
        .await;
}

impl BindingController {
    fn binding(&self, key: &BindingKey) -> Option<Binding> {
        match &key.namespace {
            Some(ns) => self
                .bindings
                .get(&ObjectRef::new(&key.name).within(ns))
                .map(|b| Binding {
                    meta: b.metadata.clone(),
                    spec: b.spec.clone(),
                    status: b.status.clone().unwrap_or_default(),
                }),
            None => self
                .cluster_bindings
                .get(&ObjectRef::new(&key.name))
                .map(|b| Binding {
                    meta: b.metadata.clone(),
                    spec: b.spec.0.clone(),
                    status: b.status.clone().unwrap_or_default(),
                }),
        }
    }

    /// The Works labelled with the binding's id, by cluster: the one named `expected` in each
    /// cluster, and apart the others (named by an older release's rule, or by hand), which
    /// go.
    fn works_of(
        &self,
        namespace: Option<&str>,
        uid: &str,
        expected: &str,
    ) -> (BTreeMap<String, Arc<Work>>, Vec<Arc<Work>>) {
        let label = binding_id_label(namespace.unwrap_or(""));
        let mut by_cluster = BTreeMap::new();
        let mut others = Vec::new();
        for w in self.works.state() {
            if w.labels().get(label).map(String::as_str) != Some(uid) {
                continue;
            }
            let Some(cluster) = w.namespace().and_then(|ns| {
                Some(
                    karmada::cluster_of_execution_namespace(&ns)
                        .ok()?
                        .to_string(),
                )
            }) else {
                continue;
            };
            if w.name_any() == expected {
                by_cluster.insert(cluster, w);
            } else {
                others.push(w);
            }
        }
        (by_cluster, others)
    }

    async fn reconcile(&self, key: &BindingKey) -> Result<Action, Error> {
        self.ctx.registry.loaded().await;
        let Some(binding) = self.binding(key) else {
            self.reported.retain(|(k, _), _| k != key);
            return Ok(Action::Done);
        };
        // The permanent id the detector gave the binding; its uid for bindings made by hand.
        let uid = binding
            .meta
            .labels
            .as_ref()
            .and_then(|l| l.get(binding_id_label(key.namespace.as_deref().unwrap_or(""))))
            .cloned()
            .or_else(|| binding.meta.uid.clone())
            .unwrap_or_default();
        let finalizer = if key.namespace.is_some() {
            karmada::BINDING_CONTROLLER_FINALIZER
        } else {
            karmada::CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER
        };
        let api = dynamic_api(
            &self.ctx.host,
            &binding_resource(key.namespace.is_some()),
            key.namespace.as_deref(),
        );
        let finalizers = binding.meta.finalizers.clone().unwrap_or_default();
        let resource = &binding.spec.resource;
        let expected = karmada::work_name(
            resource.namespace.as_deref().unwrap_or(""),
            &resource.name,
            &resource.kind,
        );
        let (works, misnamed) = self.works_of(key.namespace.as_deref(), &uid, &expected);
        if binding.meta.deletion_timestamp.is_some() {
            if !finalizers.iter().any(|f| f == finalizer) {
                return Ok(Action::Done);
            }
            if !works.is_empty() || !misnamed.is_empty() {
                for work in works.values().chain(&misnamed) {
                    self.delete_work(work).await?;
                }
                // Their deletion events bring the binding back here.
                return Ok(Action::RequeueAfter(Duration::from_secs(5)));
            }
            let kept: Vec<&String> = finalizers.iter().filter(|f| *f != finalizer).collect();
            let patch = json!({"metadata": {"finalizers": kept, "resourceVersion": binding.meta.resource_version}});
            match api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(patch))
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => {
                    return Err(host_err(
                        "removing the finalizer of binding",
                        key.name.clone(),
                    )(e));
                }
            }
            return Ok(Action::Done);
        }
        let mut binding = binding;
        for work in &misnamed {
            if work.metadata.deletion_timestamp.is_none() {
                self.delete_work(work).await?;
            }
        }
        if !finalizers.iter().any(|f| f == finalizer) {
            let mut all = finalizers.clone();
            all.push(finalizer.to_string());
            let patch = json!({"metadata": {"finalizers": all, "resourceVersion": binding.meta.resource_version}});
            let updated = api
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(patch))
                .await
                .map_err(host_err(
                    "adding the finalizer of binding",
                    key.name.clone(),
                ))?;
            // Go on with the updated binding rather than wait for its watch event.
            binding.meta.resource_version = updated.metadata.resource_version;
        }
        let resource = &binding.spec.resource;
        debug!(clusters = ?binding.spec.clusters, required_by = binding.spec.required_by.len(), works = works.len(), "reconciling binding");
        let Some(info) = self
            .ctx
            .registry
            .lookup(&resource.api_version, &resource.kind)
        else {
            return Ok(Action::RequeueAfter(Duration::from_secs(2)));
        };
        let template_api = dynamic_api(
            &self.ctx.host,
            &info.resource,
            resource.namespace.as_deref(),
        );
        // The detector's cache has the template at least as new as this binding once it has
        // listed; kinds it does not watch (a binding made by hand), and templates its cache
        // does not hold (not listed yet in a new term, or deleted), are read from the host:
        // a binding dropped here would keep a stale status until something else changed it.
        let gvk = crate::registry::gvk_of(&resource.api_version, &resource.kind);
        let cached = cached_template(
            &self.templates,
            &gvk,
            resource.namespace.as_deref(),
            &resource.name,
        );
        let template = match cached {
            Some(Some(t)) => (*t).clone(),
            Some(None) | None => match template_api.get(&resource.name).await {
                Ok(t) => t,
                Err(e) if is_not_found(&e) => return Ok(Action::Done),
                Err(e) => return Err(host_err("reading template", resource.name.clone())(e)),
            },
        };
        let template = serde_json::to_value(&template).map_err(|source| Error::Encode {
            what: "a template",
            source,
        })?;
        let matched = self.overrides.matching(&template);
        let policies = matched.policies();
        let rendering = Rendering {
            binding_namespace: key.namespace.as_deref().unwrap_or(""),
            binding_name: &key.name,
            binding_id: &uid,
            spec: &binding.spec,
            overrides: &policies,
        };
        // Rules limited to some clusters need to know the clusters.
        let with_targets = matched.has_targets();
        // The scheduler's clusters and those the bindings needing this object are in.
        let targets = binding.spec.all_target_clusters();
        let mut keep: BTreeSet<&str> = targets.iter().map(|c| c.name.as_str()).collect();
        keep.extend(
            binding
                .spec
                .graceful_eviction_tasks
                .iter()
                .filter(|t| t.keeps_work())
                .map(|t| t.from_cluster.as_str()),
        );
        let mut wrote = false;
        let mut writes = Vec::new();
        let mut recreate_later = false;
        // Clusters whose overrides failed: their Work stays as it was, the binding says why.
        let mut override_failures: BTreeMap<String, String> = BTreeMap::new();
        for target in &targets {
            let snapshot = with_targets
                .then(|| self.clusters.get(&ObjectRef::new(&target.name)))
                .flatten()
                .map(|c| ClusterSnapshot::from_cluster(&c));
            let rendered = match rendering.work(&template, &target.name, snapshot.as_ref()) {
                Ok(r) => r,
                Err(Error::Override { cluster, source }) => {
                    self.ctx.events.record(EventRequest {
                        involved: involved(&template),
                        type_: "Warning",
                        reason: "ApplyOverridePolicyFailed",
                        message: format!(
                            "Apply override policies for cluster({cluster}) failed: {source}"
                        ),
                    });
                    override_failures.insert(cluster, format!("overriding the manifest: {source}"));
                    continue;
                }
                Err(e) => return Err(e),
            };
            let current = works.get(&target.name);
            // Drawn once, when the Work is first written (Karmada's Work webhook).
            let permanent_id = current
                .and_then(|w| w.labels().get(karmada::WORK_PERMANENT_ID_LABEL).cloned())
                .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
            let rendered = rendered.with_permanent_id(&permanent_id);
            if current.is_some_and(|w| w.metadata.deletion_timestamp.is_some()) {
                // Written again once it is gone (its deletion event brings us back).
                recreate_later = true;
                continue;
            }
            let same = current.is_some_and(|w| {
                w.spec == rendered.spec
                    && w.metadata.deletion_timestamp.is_none()
                    && rendered
                        .labels
                        .iter()
                        .all(|(k, v)| w.labels().get(k) == Some(v))
                    && rendered
                        .annotations
                        .iter()
                        .all(|(k, v)| w.annotations().get(k) == Some(v))
                    && APPLIED_OVERRIDE_ANNOTATIONS.iter().all(|k| {
                        w.annotations().contains_key(*k) == rendered.annotations.contains_key(*k)
                    })
            });
            if !same {
                self.record_overrides(&template, &target.name, &rendered.overrides);
                writes.push(rendered);
            }
        }
        // A binding can have a Work in each of hundreds of clusters: write them concurrently.
        let results: Vec<Result<(), Error>> = futures::stream::iter(writes)
            .map(|rendered| self.write_work(rendered))
            .buffer_unordered(WORK_WRITES_IN_FLIGHT)
            .collect()
            .await;
        for r in results {
            r?;
            wrote = true;
        }
        for (cluster, work) in &works {
            if !keep.contains(cluster.as_str()) && work.metadata.deletion_timestamp.is_none() {
                self.delete_work(work).await?;
                wrote = true;
            }
        }
        let template_ref = format!(
            "{}{}",
            resource
                .namespace
                .as_deref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default(),
            resource.name
        );
        if wrote {
            // Karmada's words, on the binding and its template.
            let message = match &key.namespace {
                Some(_) => format!(
                    "Sync work of ResourceBinding({}) successful.",
                    key_text(key)
                ),
                None => format!(
                    "Sync work of clusterResourceBinding({}) successful.",
                    key.name
                ),
            };
            for involved in [binding_ref(key, &binding.meta), involved(&template)] {
                self.ctx.events.record(EventRequest {
                    involved,
                    type_: "Normal",
                    reason: "SyncWorkSucceed",
                    message: message.clone(),
                });
            }
        }
        let cluster_works: Vec<ClusterWork<'_>> = works
            .iter()
            .map(|(c, w)| ClusterWork {
                cluster: c,
                status: w.status.as_ref(),
            })
            .collect();
        let mut items = aggregate::aggregated_items(&targets, &cluster_works);
        for item in &mut items {
            if let Some(message) = override_failures.get(&item.cluster_name) {
                item.applied = Some(false);
                item.applied_message = Some(message.clone());
            }
        }
        self.record_transitions(
            key,
            &template,
            &template_ref,
            &binding.status.aggregated_status,
            &items,
        );
        self.write_binding_status(key, &api, &binding, &targets, &items)
            .await?;
        if info.has_status {
            self.write_template_status(&template_api, &template, &items)
                .await?;
        }
        if recreate_later {
            return Ok(Action::RequeueAfter(Duration::from_secs(1)));
        }
        Ok(Action::Done)
    }

    async fn write_work(&self, rendered: crate::render::RenderedWork) -> Result<(), Error> {
        let api: Api<DynamicObject> =
            Api::namespaced_with(self.ctx.host.clone(), &rendered.namespace, &work_resource());
        let body: DynamicObject =
            serde_json::from_value(rendered.to_apply_body()).map_err(|source| Error::Encode {
                what: "a Work",
                source,
            })?;
        api.patch(
            &rendered.name,
            &PatchParams::apply(BINDING_MANAGER).force(),
            &Patch::Apply(&body),
        )
        .await
        .map_err(host_err(
            "writing Work",
            format!("{}/{}", rendered.namespace, rendered.name),
        ))?;
        self.ctx.metrics.wrote("work");
        debug!(work = %rendered.name, namespace = %rendered.namespace, "Work written");
        Ok(())
    }

    async fn delete_work(&self, work: &Work) -> Result<(), Error> {
        let ns = work.namespace().unwrap_or_default();
        let api: Api<Work> = Api::namespaced(self.ctx.host.clone(), &ns);
        match api
            .delete(&work.name_any(), &DeleteParams::background())
            .await
        {
            Ok(_) => {
                self.ctx.metrics.wrote("work_delete");
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(host_err(
                "deleting Work",
                format!("{ns}/{}", work.name_any()),
            )(e)),
        }
    }

    /// Karmada's event per override policy applied to a cluster's copy (once per policy,
    /// whatever number of its rules applied), on the template.
    fn record_overrides(
        &self,
        template: &Value,
        cluster: &str,
        applied: &flotilla_overrides::AppliedOverrides,
    ) {
        let namespace = template
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut seen = BTreeSet::new();
        let cluster_wide = applied.cluster.iter().map(|p| (true, &p.policy_name));
        let namespaced = applied.namespaced.iter().map(|p| (false, &p.policy_name));
        for (cluster_scoped, name) in cluster_wide.chain(namespaced) {
            if !seen.insert((cluster_scoped, name)) {
                continue;
            }
            let policy = if cluster_scoped {
                format!("cluster override policy({name})")
            } else {
                format!("override policy({namespace}/{name})")
            };
            self.ctx.events.record(EventRequest {
                involved: involved(template),
                type_: "Normal",
                reason: "ApplyOverridePolicySucceed",
                message: format!("Apply {policy} for cluster({cluster}) succeed."),
            });
        }
    }

    /// Events on the template when a cluster's copy turns applied or fails to apply, one per
    /// cluster with Karmada's reasons and messages (the event recorder aggregates and
    /// rate-limits them as client-go's does, so hundreds of clusters do not flood).
    fn record_transitions(
        &self,
        key: &BindingKey,
        template: &Value,
        template_ref: &str,
        old: &[AggregatedStatusItem],
        new: &[AggregatedStatusItem],
    ) {
        for item in new {
            let now = (item.applied, item.applied_message.clone());
            let entry = (key.clone(), item.cluster_name.clone());
            let before = match self.reported.get(&entry) {
                Some(r) => Some(r.clone()),
                None => old
                    .iter()
                    .find(|o| o.cluster_name == item.cluster_name)
                    .map(|b| (b.applied, b.applied_message.clone())),
            };
            self.reported.insert(entry, now.clone());
            if before == Some(now) {
                continue;
            }
            let (type_, reason, message) = if item.applied == Some(true) {
                (
                    "Normal",
                    "SyncSucceed",
                    format!(
                        "Successfully applied resource({template_ref}) to cluster {}",
                        item.cluster_name
                    ),
                )
            } else {
                (
                    "Warning",
                    "SyncFailed",
                    format!(
                        "Failed to create or update resource({template_ref}) in member cluster({}): {}",
                        item.cluster_name,
                        item.applied_message.as_deref().unwrap_or("unknown error")
                    ),
                )
            };
            self.ctx.events.record(EventRequest {
                involved: involved(template),
                type_,
                reason,
                message,
            });
        }
    }

    async fn write_binding_status(
        &self,
        key: &BindingKey,
        api: &Api<DynamicObject>,
        binding: &Binding,
        targets: &[TargetCluster],
        items: &[AggregatedStatusItem],
    ) -> Result<(), Error> {
        let conditions = &binding.status.conditions;
        let fully = aggregate::fully_applied_condition(conditions, targets, items);
        let current = conditions.iter().find(|c| c.type_ == BINDING_FULLY_APPLIED);
        let condition_same = current.is_some_and(|c| {
            c.status == fully.status && c.reason == fully.reason && c.message == fully.message
        });
        if condition_same && binding.status.aggregated_status == items {
            return Ok(());
        }
        let merged = aggregate::with_condition(conditions, fully);
        let patch = json!({
            "metadata": {"resourceVersion": binding.meta.resource_version},
            "status": {"aggregatedStatus": items, "conditions": merged},
        });
        let written = api
            .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(patch))
            .await;
        let involved = binding_ref(key, &binding.meta);
        match written {
            Ok(_) => {
                self.ctx.metrics.wrote("binding_status");
                if binding.status.aggregated_status != items {
                    let message = match &key.namespace {
                        Some(_) => format!(
                            "Update ResourceBinding({}) with AggregatedStatus successfully.",
                            key_text(key)
                        ),
                        None => format!(
                            "Update ClusterResourceBinding({}) with AggregatedStatus successfully.",
                            key.name
                        ),
                    };
                    self.ctx.events.record(EventRequest {
                        involved,
                        type_: "Normal",
                        reason: "AggregateStatusSucceed",
                        message,
                    });
                }
                Ok(())
            }
            Err(e) => {
                // A conflict is looked at again at once (Karmada retries it in place too).
                if !is_conflict(&e) {
                    self.ctx.events.record(EventRequest {
                        involved,
                        type_: "Warning",
                        reason: "AggregateStatusFailed",
                        message: e.to_string(),
                    });
                }
                Err(host_err("writing the status of binding", key.name.clone())(
                    e,
                ))
            }
        }
    }

    async fn write_template_status(
        &self,
        api: &Api<DynamicObject>,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<(), Error> {
        let Some(new) = flotilla_interpreter::aggregate_status(template, items) else {
            return Ok(());
        };
        let old = template.get("status").cloned().unwrap_or(Value::Null);
        if old == new {
            return Ok(());
        }
        // A merge patch keeps keys it does not mention: clear those the new status drops.
        let mut status = match &new {
            Value::Object(m) => m.clone(),
            _ => Map::new(),
        };
        if let Value::Object(o) = &old {
            for k in o.keys() {
                status.entry(k.clone()).or_insert(Value::Null);
            }
        }
        let name = template
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let patch = json!({
            "metadata": {"resourceVersion": template.pointer("/metadata/resourceVersion")},
            "status": status,
        });
        let written = api
            .patch_status(
                &name,
                &PatchParams {
                    field_manager: Some(BINDING_MANAGER.into()),
                    ..Default::default()
                },
                &Patch::Merge(patch),
            )
            .await;
        let event = match &written {
            Ok(_) => Some((
                "Normal",
                "AggregateStatusSucceed",
                "Update Resource with AggregatedStatus successfully.".to_string(),
            )),
            // A conflict is looked at again at once (Karmada retries it in place too).
            Err(e) if is_conflict(e) => None,
            Err(e) => Some(("Warning", "AggregateStatusFailed", e.to_string())),
        };
        if let Some((type_, reason, message)) = event {
            self.ctx.events.record(EventRequest {
                involved: involved(template),
                type_,
                reason,
                message,
            });
        }
        written.map_err(host_err("writing the status of template", name))?;
        self.ctx.metrics.wrote("template_status");
        Ok(())
    }
}

/// The binding as the subject of an Event.
fn binding_ref(key: &BindingKey, meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        api_version: Some("work.karmada.io/v1alpha2".into()),
        kind: Some(
            if key.namespace.is_some() {
                "ResourceBinding"
            } else {
                "ClusterResourceBinding"
            }
            .into(),
        ),
        namespace: key.namespace.clone(),
        name: Some(key.name.clone()),
        uid: meta.uid.clone(),
        ..Default::default()
    }
}

fn key_text(key: &BindingKey) -> String {
    match &key.namespace {
        Some(ns) => format!("{ns}/{}", key.name),
        None => key.name.clone(),
    }
}
