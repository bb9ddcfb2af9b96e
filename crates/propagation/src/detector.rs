//! The detector: every propagatable kind of the host is watched (the kinds come from
//! [`crate::registry`], so CRD kinds added later are picked up without a restart), each
//! template is matched against the policies ([`crate::policy`]), claimed with Karmada's labels
//! and annotations, and given its ResourceBinding (`<name>-<kind>`, ClusterResourceBinding for
//! cluster-scoped templates) owned by the template.
//!
//! Not propagated: Flotilla's and Karmada's own API groups (a user's `foo.karmada.io` CRD
//! is), bookkeeping kinds (Leases, Events, reviews), Namespaces (the namespace sync gives
//! every member every namespace), and anything in a skipped namespace ([`crate::skipped`]:
//! Karmada's reserved ones and `--skipped-propagating-namespaces`, default `kube-.*`).
//!
//! Policy changes: a new or edited policy re-evaluates the templates of the kinds it selects
//! and those it holds; a policy that is deleted (or no longer matches) releases its templates:
//! the claim labels are removed, and the binding and the member objects stay (Karmada's
//! behaviour since v1.7, so deleting a policy never deletes workloads). Another policy that
//! matches claims the template at once.
//!
//! The binding's `spec.resource.resourceVersion` moves only when the template changed outside
//! its status (a hash of the rest is kept in an annotation), so the template status the
//! binding controller writes does not bounce back as binding updates.
//!
//! A policy that claims a template while setting fields Flotilla does not implement yet
//! ([`crate::unimplemented`]) gets a `FeatureNotImplemented` Warning Event naming them, once
//! per policy generation; the policy works as if those fields were absent.

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use dashmap::DashMap;
use flotilla_controller_runtime::{EventRequest, WorkQueue};
use flotilla_karmada_api::binding::{ClusterResourceBinding, ResourceBinding};
use flotilla_karmada_api::policy::{ClusterPropagationPolicy, PropagationPolicy, PropagationSpec};
use flotilla_names::karmada;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value, json};
use tracing::{Instrument, debug, info_span};

use crate::policy::{PolicyId, PolicyScope, PolicyView, TemplateView};
use crate::registry::dynamic_api;
use crate::registry::{ResourceInfo, api_version_of};
use crate::templates::{TemplateWatch, Templates, cached, cached_template, involved};
use crate::unimplemented::{self, unimplemented_fields};
use crate::{Context, DETECTOR_MANAGER, Error, Shared, host_err, is_not_found};
use flotilla_controller_runtime::reflector::wait_ready;
use flotilla_controller_runtime::{Action, Reflector, ReflectorSpec};
use flotilla_tasks::AbortOnDrop;

pub(crate) const CONTROLLER: &str = "detector";
/// Annotation on a binding: hash of its template outside status, at the last binding write.
pub const TEMPLATE_HASH_ANNOTATION: &str = "flotilla.io/template-hash";

/// Groups never propagated: Karmada's own API groups and the bookkeeping groups Karmada
/// skips (its `NewSkippedResourceConfig`: events and Leases), those whose resources cannot
/// be listed, watched and deleted (reviews, metrics), and Flotilla's own. Any other group
/// propagates, `foo.karmada.io` of a user's CRD among them.
const SKIPPED_GROUPS: [&str; 14] = [
    "cluster.karmada.io",
    "policy.karmada.io",
    "work.karmada.io",
    "config.karmada.io",
    "networking.karmada.io",
    "autoscaling.karmada.io",
    "remedy.karmada.io",
    "apps.karmada.io",
    "search.karmada.io",
    "events.k8s.io",
    "coordination.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "metrics.k8s.io",
];
/// Core kinds never propagated: Events (as Karmada), Namespaces (the namespace sync gives
/// every member every namespace), and the kinds that cannot be listed and deleted.
const SKIPPED_CORE_KINDS: [&str; 4] = ["Event", "Namespace", "ComponentStatus", "Binding"];

/// Whether templates of this kind are propagated.
pub fn propagatable(gvk: &GroupVersionKind) -> bool {
    if SKIPPED_GROUPS.contains(&gvk.group.as_str()) || gvk.group == FLOTILLA_GROUP {
        return false;
    }
    !(gvk.group.is_empty() && SKIPPED_CORE_KINDS.contains(&gvk.kind.as_str()))
}

/// Flotilla's own API group.
const FLOTILLA_GROUP: &str = "flotilla.io";

/// A template: its kind and where it is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TemplateKey {
    pub gvk: GroupVersionKind,
    pub namespace: Option<String>,
    pub name: String,
}

/// The (uid, generation) of each policy last warned about unimplemented fields.
type Warned = Arc<DashMap<PolicyId, (String, i64)>>;

struct Detector {
    ctx: Arc<Context>,
    warned: Warned,
    queue: Arc<WorkQueue<TemplateKey>>,
    templates: Templates,
    policies: Store<PropagationPolicy>,
    cluster_policies: Store<ClusterPropagationPolicy>,
    bindings: Store<ResourceBinding>,
    cluster_bindings: Store<ClusterResourceBinding>,
    /// Objects that may be a workload's dependency, for the dependencies distributor.
    dependency_signals: Arc<WorkQueue<crate::dependencies::Signal>>,
}

/// Enqueues the templates a policy may select or holds.
fn enqueue_for_policy(
    templates: &DashMap<GroupVersionKind, TemplateWatch>,
    queue: &WorkQueue<TemplateKey>,
    id: &PolicyId,
    spec: &PropagationSpec,
) {
    for entry in templates.iter() {
        let gvk = entry.key();
        let api_version = api_version_of(gvk);
        let selected = spec
            .resource_selectors
            .iter()
            .any(|s| s.api_version == api_version && s.kind == gvk.kind);
        for obj in entry.value().store.state() {
            let held = match id.scope {
                PolicyScope::Namespaced => {
                    let a = obj.annotations();
                    a.get(karmada::PROPAGATION_POLICY_NAME_ANNOTATION) == Some(&id.name)
                        && a.get(karmada::PROPAGATION_POLICY_NAMESPACE_ANNOTATION)
                            == Some(&id.namespace)
                }
                PolicyScope::Cluster => {
                    obj.annotations()
                        .get(karmada::CLUSTER_PROPAGATION_POLICY_ANNOTATION)
                        == Some(&id.name)
                }
            };
            if selected || held {
                queue.add(TemplateKey {
                    gvk: gvk.clone(),
                    namespace: obj.metadata.namespace.clone(),
                    name: obj.name_any(),
                });
            }
        }
    }
}

/// The longest pause between two attempts to set a policy's permanent id.
const PERMANENT_ID_RETRY_MAX: Duration = Duration::from_secs(5);

/// Puts a permanent id on a policy that has none (Karmada's mutating webhook does this on
/// creation; here whatever runs first after creation does). A failed write (the host down
/// or overloaded) is tried again with backoff until the policy has an id or is gone: the
/// reflector calls back only when the policy changes, and templates wait for the id.
fn ensure_permanent_id<K>(api: Api<K>, policy: &K, label: &'static str)
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    if policy.labels().contains_key(label) || policy.meta().deletion_timestamp.is_some() {
        return;
    }
    let name = policy.name_any();
    let id = uuid::Uuid::new_v4().to_string();
    tokio::spawn(async move {
        let patch = json!({"metadata": {"labels": {label: id}}});
        let mut pause = Duration::from_millis(200);
        loop {
            let e = match api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await
            {
                Ok(_) => return,
                Err(e) => e,
            };
            tracing::warn!(policy = %name, error = %e, "setting the policy's permanent id failed; retrying");
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(PERMANENT_ID_RETRY_MAX);
            // Another writer may have set one meanwhile (or the policy went): keep that.
            match api.get_opt(&name).await {
                Ok(None) => return,
                Ok(Some(p)) if p.labels().contains_key(label) => return,
                Ok(Some(p)) if p.meta().deletion_timestamp.is_some() => return,
                Ok(Some(_)) | Err(_) => {}
            }
        }
    });
}

pub(crate) async fn run(ctx: Arc<Context>, shared: Shared) {
    let controller = ctx.manager.controller::<TemplateKey>(
        CONTROLLER,
        &ctx.controller_options(ctx.opts.detector_workers),
    );
    let queue = controller.queue().clone();
    let templates = shared.templates.clone();
    let warned: Warned = Arc::default();

    let policies = ctx.manager.reflector::<PropagationPolicy>();
    {
        let (templates, queue, host) = (templates.clone(), queue.clone(), ctx.host.clone());
        let warned = warned.clone();
        policies.subscribe(move |p: &PropagationPolicy, deleted| {
            ensure_permanent_id(
                Api::<PropagationPolicy>::namespaced(
                    host.clone(),
                    &p.namespace().unwrap_or_default(),
                ),
                p,
                karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL,
            );
            let id = PolicyId {
                scope: PolicyScope::Namespaced,
                namespace: p.namespace().unwrap_or_default(),
                name: p.name_any(),
            };
            if deleted {
                warned.remove(&id);
            }
            enqueue_for_policy(&templates, &queue, &id, &p.spec);
        });
    }
    let cluster_policies = ctx.manager.reflector::<ClusterPropagationPolicy>();
    {
        let (templates, queue, host) = (templates.clone(), queue.clone(), ctx.host.clone());
        let warned = warned.clone();
        cluster_policies.subscribe(move |p: &ClusterPropagationPolicy, deleted| {
            ensure_permanent_id(
                Api::<ClusterPropagationPolicy>::all(host.clone()),
                p,
                karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
            );
            let id = PolicyId {
                scope: PolicyScope::Cluster,
                namespace: String::new(),
                name: p.name_any(),
            };
            if deleted {
                warned.remove(&id);
            }
            enqueue_for_policy(&templates, &queue, &id, &p.spec);
        });
    }
    // A CRD added or removed changes what the host serves: look again now, and once more
    // shortly after, when a new CRD is being established.
    {
        let registry = ctx.registry.clone();
        ctx.manager
            .reflector::<CustomResourceDefinition>()
            .subscribe(move |_: &CustomResourceDefinition, _| {
                registry.request_refresh();
                let registry = registry.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    registry.request_refresh();
                });
            });
    }
    let (bindings, cluster_bindings) = (shared.bindings, shared.cluster_bindings);
    let dependency_signals = shared.dependency_signals;
    for ready in [
        policies.ready().await,
        cluster_policies.ready().await,
        wait_ready(&bindings).await,
        wait_ready(&cluster_bindings).await,
    ] {
        if !ready {
            return;
        }
    }
    let detector = Arc::new(Detector {
        ctx: ctx.clone(),
        warned,
        queue: queue.clone(),
        templates,
        policies: policies.store().clone(),
        cluster_policies: cluster_policies.store().clone(),
        bindings,
        cluster_bindings,
        dependency_signals,
    });
    let workers = {
        let detector = detector.clone();
        AbortOnDrop(tokio::spawn(controller.run(move |key: TemplateKey| {
            let detector = detector.clone();
            async move {
                let span = info_span!("detect", kind = %key.gvk.kind, namespace = ?key.namespace, name = %key.name);
                detector.reconcile(&key).instrument(span).await
            }
        })))
    };
    let mut revisions = ctx.registry.subscribe();
    loop {
        detector.sync_watches();
        if revisions.changed().await.is_err() {
            break;
        }
    }
    queue.shut_down();
    drop(workers);
}

impl Detector {
    /// Starts a template watch for every propagatable kind discovery shows, and ends those of
    /// kinds that are gone.
    fn sync_watches(&self) {
        let wanted: HashMap<GroupVersionKind, ResourceInfo> = self
            .ctx
            .registry
            .all()
            .into_iter()
            .filter(|(gvk, info)| info.preferred && info.watchable && propagatable(gvk))
            .collect();
        self.templates.retain(|gvk, w| {
            wanted
                .get(gvk)
                .is_some_and(|i| i.resource.plural == w.info.resource.plural)
        });
        for (gvk, info) in wanted {
            if self.templates.contains_key(&gvk) {
                continue;
            }
            debug!(kind = %gvk.kind, group = %gvk.group, "watching templates");
            let queue = self.queue.clone();
            let key_gvk = gvk.clone();
            let api_version = api_version_of(&gvk);
            let dependencies = crate::dependencies::is_dependency_kind(&api_version, &gvk.kind)
                .then(|| self.dependency_signals.clone());
            let (reflector, task) = Reflector::start_owned(
                Api::<DynamicObject>::all_with(self.ctx.host.clone(), &info.resource),
                info.resource.clone(),
                ReflectorSpec::default().keep({
                    let skipped = self.templates.skipped.clone();
                    move |obj: &DynamicObject| cached(&skipped, obj)
                }),
                format!("template-cache {}", gvk.kind),
            );
            reflector.subscribe(move |obj: &DynamicObject, _deleted| {
                let namespace = obj.metadata.namespace.clone();
                if let (Some(signals), Some(ns)) = (&dependencies, &namespace) {
                    signals.add(crate::dependencies::Signal::Object(
                        flotilla_interpreter::Dependency {
                            api_version: api_version.clone(),
                            kind: key_gvk.kind.clone(),
                            namespace: ns.clone(),
                            name: obj.name_any(),
                        },
                    ));
                }
                queue.add(TemplateKey {
                    gvk: key_gvk.clone(),
                    namespace,
                    name: obj.name_any(),
                });
            });
            self.templates.insert(
                gvk,
                TemplateWatch {
                    info,
                    store: reflector.store().clone(),
                    _task: task,
                },
            );
        }
    }

    fn policy_views(&self) -> (Vec<PolicyView>, Vec<PolicyView>, HashMap<PolicyId, String>) {
        let mut ids = HashMap::new();
        let namespaced = self
            .policies
            .state()
            .iter()
            .filter_map(|p| {
                let id = PolicyId {
                    scope: PolicyScope::Namespaced,
                    namespace: p.namespace().unwrap_or_default(),
                    name: p.name_any(),
                };
                if let Some(pid) = p
                    .labels()
                    .get(karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL)
                {
                    ids.insert(id.clone(), pid.clone());
                }
                PolicyView::new(id, &p.spec, p.metadata.deletion_timestamp.is_some())
            })
            .collect();
        let cluster = self
            .cluster_policies
            .state()
            .iter()
            .filter_map(|p| {
                let id = PolicyId {
                    scope: PolicyScope::Cluster,
                    namespace: String::new(),
                    name: p.name_any(),
                };
                if let Some(pid) = p
                    .labels()
                    .get(karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL)
                {
                    ids.insert(id.clone(), pid.clone());
                }
                PolicyView::new(id, &p.spec, p.metadata.deletion_timestamp.is_some())
            })
            .collect();
        (namespaced, cluster, ids)
    }

    fn policy_spec(&self, id: &PolicyId) -> Option<PropagationSpec> {
        match id.scope {
            PolicyScope::Namespaced => self
                .policies
                .get(&ObjectRef::new(&id.name).within(&id.namespace))
                .map(|p| p.spec.clone()),
            PolicyScope::Cluster => self
                .cluster_policies
                .get(&ObjectRef::new(&id.name))
                .map(|p| p.spec.0.clone()),
        }
    }

    /// Records the `FeatureNotImplemented` warning on the policy when it sets fields Flotilla
    /// does not implement, once per (uid, generation) of the policy.
    fn warn_unimplemented(&self, id: &PolicyId) {
        let (kind, meta, fields) = match id.scope {
            PolicyScope::Namespaced => {
                let Some(p) = self
                    .policies
                    .get(&ObjectRef::new(&id.name).within(&id.namespace))
                else {
                    return;
                };
                let fields = unimplemented_fields(&p.spec);
                ("PropagationPolicy", p.metadata.clone(), fields)
            }
            PolicyScope::Cluster => {
                let Some(p) = self.cluster_policies.get(&ObjectRef::new(&id.name)) else {
                    return;
                };
                let fields = unimplemented_fields(&p.spec);
                ("ClusterPropagationPolicy", p.metadata.clone(), fields)
            }
        };
        if fields.is_empty() {
            return;
        }
        let seen = (
            meta.uid.clone().unwrap_or_default(),
            meta.generation.unwrap_or(0),
        );
        match self.warned.entry(id.clone()) {
            dashmap::Entry::Occupied(e) if *e.get() == seen => return,
            dashmap::Entry::Occupied(mut e) => {
                e.insert(seen);
            }
            dashmap::Entry::Vacant(e) => {
                e.insert(seen);
            }
        }
        self.ctx.events.record(EventRequest {
            involved: ObjectReference {
                api_version: Some("policy.karmada.io/v1alpha1".into()),
                kind: Some(kind.into()),
                namespace: meta.namespace,
                name: meta.name,
                uid: meta.uid,
                ..Default::default()
            },
            type_: "Warning",
            reason: unimplemented::REASON,
            message: unimplemented::message(&fields),
        });
    }

    async fn reconcile(&self, key: &TemplateKey) -> Result<Action, Error> {
        let Some(info) = self.templates.get(&key.gvk).map(|w| w.info.clone()) else {
            return Ok(Action::Done);
        };
        let template = match cached_template(
            &self.templates,
            &key.gvk,
            key.namespace.as_deref(),
            &key.name,
        ) {
            Some(Some(t)) => t,
            Some(None) => return self.delete_binding(key).await.map(|()| Action::Done),
            // Not listed yet: its end reports every template again.
            None => return Ok(Action::Done),
        };
        if template.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let value = serde_json::to_value(template.as_ref()).map_err(|source| Error::Encode {
            what: "a template",
            source,
        })?;
        let claimed = claim_of(&template);
        let (namespaced, cluster, ids) = self.policy_views();
        let api_version = api_version_of(&key.gvk);
        let labels = value.pointer("/metadata/labels").and_then(Value::as_object);
        let view = TemplateView {
            api_version: &api_version,
            kind: &key.gvk.kind,
            namespace: key.namespace.as_deref(),
            name: &key.name,
            labels,
        };
        let winner = crate::policy::decide(&view, claimed.as_ref(), &namespaced, &cluster)
            .map(|p| p.id.clone());
        let preempted = crate::policy::holder(&view, claimed.as_ref(), &namespaced, &cluster)
            .map(|h| h.id.clone())
            .filter(|h| Some(h) != winner.as_ref());
        let Some(winner) = winner else {
            if claimed.is_some() {
                self.write_claim(&info, key, None, None).await?;
            }
            self.release_binding(key).await?;
            return Ok(Action::Done);
        };
        let Some(permanent_id) = ids.get(&winner).cloned() else {
            // The policy gets its id in a moment; its update re-queues this template.
            return Ok(Action::RequeueAfter(Duration::from_secs(2)));
        };
        let Some(spec) = self.policy_spec(&winner) else {
            return Ok(Action::Done);
        };
        self.warn_unimplemented(&winner);
        if let Some(holder) = &preempted {
            self.event(
                &value,
                "Normal",
                "PreemptPolicySucceed",
                format!(
                    "{} preempted {} successfully",
                    policy_text(&winner, true),
                    policy_text(holder, false)
                ),
            );
        }
        let value = if claimed.as_ref() != Some(&winner)
            || claim_id(&template, winner.scope) != Some(permanent_id.as_str())
        {
            // Go on with the claimed template at once rather than wait for its watch event.
            let claimed = self
                .write_claim(&info, key, Some(&winner), Some(&permanent_id))
                .await?;
            serde_json::to_value(&claimed).map_err(|source| Error::Encode {
                what: "a template",
                source,
            })?
        } else {
            value
        };
        self.write_binding(key, &value, &winner, &permanent_id, &spec)
            .await?;
        Ok(Action::Done)
    }

    /// Sets (or with `None`, removes) the claim labels and annotations on the template.
    async fn write_claim(
        &self,
        info: &ResourceInfo,
        key: &TemplateKey,
        policy: Option<&PolicyId>,
        permanent_id: Option<&str>,
    ) -> Result<DynamicObject, Error> {
        let (mut labels, mut annotations) = unclaimed();
        if let (Some(p), Some(id)) = (policy, permanent_id) {
            match p.scope {
                PolicyScope::Namespaced => {
                    labels.insert(
                        karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL.into(),
                        json!(id),
                    );
                    annotations.insert(
                        karmada::PROPAGATION_POLICY_NAME_ANNOTATION.into(),
                        json!(p.name),
                    );
                    annotations.insert(
                        karmada::PROPAGATION_POLICY_NAMESPACE_ANNOTATION.into(),
                        json!(p.namespace),
                    );
                }
                PolicyScope::Cluster => {
                    labels.insert(
                        karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL.into(),
                        json!(id),
                    );
                    annotations.insert(
                        karmada::CLUSTER_PROPAGATION_POLICY_ANNOTATION.into(),
                        json!(p.name),
                    );
                }
            }
        }
        let api = dynamic_api(&self.ctx.host, &info.resource, key.namespace.as_deref());
        let patch = json!({"metadata": {"labels": labels, "annotations": annotations}});
        let claimed = api
            .patch(
                &key.name,
                &PatchParams {
                    field_manager: Some(DETECTOR_MANAGER.into()),
                    ..Default::default()
                },
                &Patch::Merge(patch),
            )
            .await
            .map_err(host_err("claiming template", key.name.clone()))?;
        self.ctx.metrics.wrote("template_claim");
        Ok(claimed)
    }

    /// Takes a released template's claim (the policy's permanent-id label and name
    /// annotations) off its binding, as Karmada does when the policy goes or stops matching;
    /// the binding, its Works and the member objects stay.
    async fn release_binding(&self, key: &TemplateKey) -> Result<(), Error> {
        let name = karmada::binding_name(&key.gvk.kind, &key.name);
        let meta = match &key.namespace {
            Some(ns) => self
                .bindings
                .get(&ObjectRef::new(&name).within(ns))
                .filter(|b| b.spec.resource.kind == key.gvk.kind)
                .map(|b| b.metadata.clone()),
            None => self
                .cluster_bindings
                .get(&ObjectRef::new(&name))
                .filter(|b| b.spec.resource.kind == key.gvk.kind)
                .map(|b| b.metadata.clone()),
        };
        let Some(meta) = meta else {
            return Ok(());
        };
        let has = |map: &Option<BTreeMap<String, String>>, keys: &[&str]| {
            map.as_ref()
                .is_some_and(|m| keys.iter().any(|k| m.contains_key(*k)))
        };
        if !has(&meta.labels, &CLAIM_LABELS) && !has(&meta.annotations, &CLAIM_ANNOTATIONS) {
            return Ok(());
        }
        let (labels, annotations) = unclaimed();
        let patch = json!({"metadata": {"labels": labels, "annotations": annotations}});
        let params = PatchParams {
            field_manager: Some(DETECTOR_MANAGER.into()),
            ..Default::default()
        };
        let api = dynamic_api(
            &self.ctx.host,
            &binding_resource_of(key),
            key.namespace.as_deref(),
        );
        match api.patch(&name, &params, &Patch::Merge(patch)).await {
            Ok(_) => {
                self.ctx.metrics.wrote("binding");
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(host_err("releasing binding", name)(e)),
        }
    }

    async fn delete_binding(&self, key: &TemplateKey) -> Result<(), Error> {
        let name = karmada::binding_name(&key.gvk.kind, &key.name);
        let result = match &key.namespace {
            Some(ns) => {
                let Some(existing) = self.bindings.get(&ObjectRef::new(&name).within(ns)) else {
                    return Ok(());
                };
                if existing.spec.resource.kind != key.gvk.kind {
                    return Ok(());
                }
                Api::<ResourceBinding>::namespaced(self.ctx.host.clone(), ns)
                    .delete(&name, &DeleteParams::background())
                    .await
                    .map(|_| ())
            }
            None => {
                let Some(existing) = self.cluster_bindings.get(&ObjectRef::new(&name)) else {
                    return Ok(());
                };
                if existing.spec.resource.kind != key.gvk.kind {
                    return Ok(());
                }
                Api::<ClusterResourceBinding>::all(self.ctx.host.clone())
                    .delete(&name, &DeleteParams::background())
                    .await
                    .map(|_| ())
            }
        };
        match result {
            Ok(()) => {
                self.ctx.metrics.wrote("binding_delete");
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(host_err("deleting binding", name)(e)),
        }
    }

    async fn write_binding(
        &self,
        key: &TemplateKey,
        template: &Value,
        policy: &PolicyId,
        permanent_id: &str,
        spec: &PropagationSpec,
    ) -> Result<(), Error> {
        let name = karmada::binding_name(&key.gvk.kind, &key.name);
        let hash = template_hash(template);
        let (existing_meta, existing_spec) = match &key.namespace {
            Some(ns) => self
                .bindings
                .get(&ObjectRef::new(&name).within(ns))
                .map(|b| (b.metadata.clone(), serde_json::to_value(&b.spec).ok()))
                .unzip(),
            None => self
                .cluster_bindings
                .get(&ObjectRef::new(&name))
                .map(|b| (b.metadata.clone(), serde_json::to_value(&b.spec).ok()))
                .unzip(),
        };
        let existing_spec = existing_spec.flatten();
        let previous_hash = existing_meta
            .as_ref()
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(TEMPLATE_HASH_ANNOTATION))
            .cloned();
        // The resourceVersion moves only with a real template change.
        let resource_version = match (&previous_hash, &existing_spec) {
            (Some(h), Some(s)) if *h == hash => s
                .pointer("/resource/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
            _ => template
                .pointer("/metadata/resourceVersion")
                .cloned()
                .unwrap_or(Value::Null),
        };
        let desired = match desired_binding_spec(template, spec, resource_version) {
            Ok(d) => d,
            Err(e) => {
                if matches!(e, Error::Interpret { .. }) {
                    self.event(template, "Warning", "GetReplicasFailed", e.to_string());
                }
                self.event(
                    template,
                    "Warning",
                    "ApplyPolicyFailed",
                    format!("{} failed: {e}", apply_policy_text(policy)),
                );
                return Err(e);
            }
        };
        let (labels, annotations) = binding_claim(policy, permanent_id, &hash);
        let owner = owner_reference(template);
        let up_to_date = existing_spec.as_ref().is_some_and(|s| {
            desired
                .iter()
                .all(|(k, v)| s.get(k).unwrap_or(&Value::Null) == v)
        }) && existing_meta.as_ref().is_some_and(|m| {
            let l = m.labels.clone().unwrap_or_default();
            let a = m.annotations.clone().unwrap_or_default();
            labels.iter().all(|(k, v)| l.get(k) == Some(v))
                && annotations.iter().all(|(k, v)| a.get(k) == Some(v))
                && m.owner_references.as_ref().is_some_and(|o| {
                    o.iter().any(|r| {
                        Some(&r.uid)
                            == owner
                                .get("uid")
                                .and_then(Value::as_str)
                                .map(str::to_string)
                                .as_ref()
                    })
                })
        });
        if up_to_date {
            return Ok(());
        }
        let (api_version, kind) = (
            "work.karmada.io/v1alpha2",
            match key.namespace {
                Some(_) => "ResourceBinding",
                None => "ClusterResourceBinding",
            },
        );
        let mut metadata = json!({
            "name": name,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner],
        });
        if let Some(ns) = &key.namespace {
            metadata["namespace"] = json!(ns);
        }
        let api = dynamic_api(
            &self.ctx.host,
            &binding_resource_of(key),
            key.namespace.as_deref(),
        );
        let params = PatchParams {
            field_manager: Some(DETECTOR_MANAGER.into()),
            ..Default::default()
        };
        if existing_meta.is_none() {
            // Karmada's binding permanent id, set once at creation; Works carry it.
            let id_label = crate::render::binding_id_label(key.namespace.as_deref().unwrap_or(""));
            metadata["labels"][id_label] = json!(uuid::Uuid::new_v4().to_string());
            // The binding controller's finalizer from the start saves it a write.
            metadata["finalizers"] = json!([if key.namespace.is_some() {
                karmada::BINDING_CONTROLLER_FINALIZER
            } else {
                karmada::CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER
            }]);
            let body = json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "spec": desired});
            let obj: DynamicObject =
                serde_json::from_value(body).map_err(|source| Error::Encode {
                    what: "a binding",
                    source,
                })?;
            match api
                .create(
                    &PostParams {
                        field_manager: Some(DETECTOR_MANAGER.into()),
                        ..Default::default()
                    },
                    &obj,
                )
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    // Made meanwhile (or not yet in our cache): patch it on the next round.
                    return Err(Error::Host {
                        action: "creating binding",
                        object: name,
                        source: kube::Error::Api(s),
                    });
                }
                Err(e) => return Err(host_err("creating binding", name)(e)),
            }
            self.ctx.metrics.wrote("binding");
            self.applied_policy(template, policy);
            return Ok(());
        }
        // A merge patch merges objects: fields the policy no longer sets (a suspension that
        // changed form, a placement part removed) must be nulled to go.
        let spec_patch: Map<String, Value> = desired
            .iter()
            .map(|(k, v)| {
                let old = existing_spec
                    .as_ref()
                    .and_then(|s| s.get(k))
                    .unwrap_or(&Value::Null);
                (k.clone(), replacing(old, v))
            })
            .collect();
        let patch = json!({"metadata": metadata, "spec": spec_patch});
        api.patch(&name, &params, &Patch::Merge(patch))
            .await
            .map_err(host_err("updating binding", name))?;
        self.ctx.metrics.wrote("binding");
        self.applied_policy(template, policy);
        Ok(())
    }

    /// Karmada's events on a template whose binding was just written: the replicas read
    /// (for kinds with replicas) and the policy applied.
    fn applied_policy(&self, template: &Value, policy: &PolicyId) {
        let api_version = template
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let kind = template.get("kind").and_then(Value::as_str).unwrap_or("");
        if flotilla_interpreter::has_replicas(api_version, kind) {
            self.event(
                template,
                "Normal",
                "GetReplicasSucceed",
                "Get replicas of resource template successfully.".into(),
            );
        }
        self.event(
            template,
            "Normal",
            "ApplyPolicySucceed",
            format!("{} succeed", apply_policy_text(policy)),
        );
    }

    fn event(&self, template: &Value, type_: &'static str, reason: &'static str, message: String) {
        self.ctx.events.record(EventRequest {
            involved: involved(template),
            type_,
            reason,
            message,
        });
    }
}

/// `Propagation policy(ns/name)` / `cluster propagation policy(name)`, as Karmada's
/// preemption events name policies (`first`: capitalised).
fn policy_text(policy: &PolicyId, first: bool) -> String {
    let text = match policy.scope {
        PolicyScope::Namespaced => {
            format!("propagation policy({}/{})", policy.namespace, policy.name)
        }
        PolicyScope::Cluster => format!("cluster propagation policy({})", policy.name),
    };
    match (first, text.split_at(1)) {
        (true, (head, tail)) => format!("{}{tail}", head.to_uppercase()),
        (false, _) => text,
    }
}

/// `Apply policy(ns/name)` or `Apply cluster policy(name)`, as Karmada's events say.
fn apply_policy_text(policy: &PolicyId) -> String {
    match policy.scope {
        PolicyScope::Namespaced => format!("Apply policy({}/{})", policy.namespace, policy.name),
        PolicyScope::Cluster => format!("Apply cluster policy({})", policy.name),
    }
}

/// The JSON merge patch that turns `old` into `new`: `new`, with `null` for each object field
/// of `old` that `new` does not have (at every depth; lists are replaced whole anyway).
fn replacing(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out: Map<String, Value> = n
                .iter()
                .map(|(k, v)| (k.clone(), replacing(o.get(k).unwrap_or(&Value::Null), v)))
                .collect();
            for k in o.keys() {
                if !n.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        _ => new.clone(),
    }
}

/// The policy holding the template, from its claim annotations.
fn claim_of(template: &DynamicObject) -> Option<PolicyId> {
    let a = template.annotations();
    if let Some(name) = a.get(karmada::PROPAGATION_POLICY_NAME_ANNOTATION) {
        return Some(PolicyId {
            scope: PolicyScope::Namespaced,
            namespace: a
                .get(karmada::PROPAGATION_POLICY_NAMESPACE_ANNOTATION)
                .cloned()
                .unwrap_or_default(),
            name: name.clone(),
        });
    }
    a.get(karmada::CLUSTER_PROPAGATION_POLICY_ANNOTATION)
        .map(|name| PolicyId {
            scope: PolicyScope::Cluster,
            namespace: String::new(),
            name: name.clone(),
        })
}

/// The labels a policy's claim puts on templates and bindings.
const CLAIM_LABELS: [&str; 2] = [
    karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
];
/// The annotations a policy's claim puts on templates and bindings.
const CLAIM_ANNOTATIONS: [&str; 3] = [
    karmada::PROPAGATION_POLICY_NAME_ANNOTATION,
    karmada::PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
    karmada::CLUSTER_PROPAGATION_POLICY_ANNOTATION,
];

/// Merge-patch maps that remove every claim label and annotation.
fn unclaimed() -> (Map<String, Value>, Map<String, Value>) {
    (
        crate::removing(&CLAIM_LABELS),
        crate::removing(&CLAIM_ANNOTATIONS),
    )
}

/// The binding resource of a template's key: ResourceBinding for a namespaced template,
/// ClusterResourceBinding otherwise.
fn binding_resource_of(key: &TemplateKey) -> ApiResource {
    let (kind, plural) = match key.namespace {
        Some(_) => ("ResourceBinding", "resourcebindings"),
        None => ("ClusterResourceBinding", "clusterresourcebindings"),
    };
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", kind),
        plural,
    )
}

fn claim_id(template: &DynamicObject, scope: PolicyScope) -> Option<&str> {
    let label = match scope {
        PolicyScope::Namespaced => karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL,
        PolicyScope::Cluster => karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
    };
    template.labels().get(label).map(String::as_str)
}

fn binding_claim(
    policy: &PolicyId,
    permanent_id: &str,
    hash: &str,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut labels = BTreeMap::new();
    let mut annotations = BTreeMap::new();
    match policy.scope {
        PolicyScope::Namespaced => {
            labels.insert(
                karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL.to_string(),
                permanent_id.to_string(),
            );
            annotations.insert(
                karmada::PROPAGATION_POLICY_NAME_ANNOTATION.to_string(),
                policy.name.clone(),
            );
            annotations.insert(
                karmada::PROPAGATION_POLICY_NAMESPACE_ANNOTATION.to_string(),
                policy.namespace.clone(),
            );
        }
        PolicyScope::Cluster => {
            labels.insert(
                karmada::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL.to_string(),
                permanent_id.to_string(),
            );
            annotations.insert(
                karmada::CLUSTER_PROPAGATION_POLICY_ANNOTATION.to_string(),
                policy.name.clone(),
            );
        }
    }
    annotations.insert(TEMPLATE_HASH_ANNOTATION.to_string(), hash.to_string());
    (labels, annotations)
}

/// The binding spec fields the detector owns, each present (null when unset) so that a
/// merge patch clears what the policy no longer says.
pub fn desired_binding_spec(
    template: &Value,
    policy: &PropagationSpec,
    resource_version: Value,
) -> Result<Map<String, Value>, Error> {
    let kind = template
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let replicas =
        flotilla_interpreter::get_replicas(template).map_err(|source| Error::Interpret {
            kind: kind.clone(),
            source,
        })?;
    let mut resource = json!({
        "apiVersion": template.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": kind,
        "name": template.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "uid": template.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
        "resourceVersion": resource_version,
    });
    if let Some(ns) = template.pointer("/metadata/namespace") {
        resource["namespace"] = ns.clone();
    }
    let mut spec = Map::new();
    spec.insert("resource".into(), resource);
    let (count, requirements) = match replicas {
        Some(r) => (
            if r.replicas == 0 {
                Value::Null
            } else {
                json!(r.replicas)
            },
            r.requirements.map(|q| to_json(&q)).unwrap_or(Value::Null),
        ),
        None => (Value::Null, Value::Null),
    };
    spec.insert("replicas".into(), count);
    spec.insert("replicaRequirements".into(), requirements);
    spec.insert(
        "placement".into(),
        policy
            .placement
            .as_ref()
            .map(to_json)
            .unwrap_or(Value::Null),
    );
    spec.insert(
        "propagateDeps".into(),
        policy
            .propagate_deps
            .map(Value::Bool)
            .unwrap_or(Value::Null),
    );
    spec.insert(
        "conflictResolution".into(),
        policy
            .conflict_resolution
            .map(|c| to_json(&c))
            .unwrap_or(Value::Null),
    );
    spec.insert(
        "failover".into(),
        policy.failover.as_ref().map(to_json).unwrap_or(Value::Null),
    );
    spec.insert(
        "schedulerName".into(),
        json!(
            policy
                .scheduler_name
                .clone()
                .unwrap_or_else(|| flotilla_karmada_api::policy::DEFAULT_SCHEDULER_NAME.to_string())
        ),
    );
    spec.insert(
        "suspension".into(),
        policy
            .suspension
            .as_ref()
            .map(to_json)
            .unwrap_or(Value::Null),
    );
    spec.insert(
        "preserveResourcesOnDeletion".into(),
        policy
            .preserve_resources_on_deletion
            .map(Value::Bool)
            .unwrap_or(Value::Null),
    );
    Ok(spec)
}

/// Serialising the API types cannot fail (no maps with non-string keys); a failure would
/// show as `null` in the patch and as a validation error from the host.
fn to_json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Hash of the template outside status and bookkeeping metadata.
pub fn template_hash(template: &Value) -> String {
    let mut t = template.clone();
    if let Value::Object(m) = &mut t {
        m.remove("status");
        if let Some(Value::Object(meta)) = m.get_mut("metadata") {
            meta.remove("resourceVersion");
            meta.remove("managedFields");
        }
    }
    let mut h = DefaultHasher::new();
    t.to_string().hash(&mut h);
    format!("{:016x}", h.finish())
}

/// The owner reference of a binding to its template.
fn owner_reference(template: &Value) -> Value {
    json!({
        "apiVersion": template.get("apiVersion").cloned().unwrap_or(Value::Null),
        "kind": template.get("kind").cloned().unwrap_or(Value::Null),
        "name": template.pointer("/metadata/name").cloned().unwrap_or(Value::Null),
        "uid": template.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skipped::SkippedNamespaces;

    #[test]
    fn objects_in_skipped_namespaces_are_not_cached() {
        let secret = |namespace: Option<&str>| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "m1", "namespace": namespace},
                "data": {"token": "dG9r"},
            }))
            .unwrap()
        };
        let skipped = SkippedNamespaces::default();
        let cached = |ns| cached(&skipped, &secret(ns));
        assert!(cached(Some("default")));
        assert!(cached(Some("web")));
        assert!(cached(Some("karmada-demo")), "a user's namespace");
        assert!(cached(None));
        assert!(!cached(Some(karmada::NAMESPACE_KARMADA_CLUSTER)));
        assert!(!cached(Some("kube-system")));
        assert!(!cached(Some(&karmada::execution_namespace("m1"))));
    }

    #[test]
    fn karmadas_and_bookkeeping_kinds_are_not_propagated() {
        for (g, k) in [
            ("apps", "Deployment"),
            ("", "ConfigMap"),
            ("", "Endpoints"),
            ("example.com", "Widget"),
            ("foo.karmada.io", "Widget"),
            ("apiregistration.k8s.io", "APIService"),
        ] {
            assert!(propagatable(&GroupVersionKind::gvk(g, "v1", k)), "{g}/{k}");
        }
        for (g, k) in [
            ("work.karmada.io", "Work"),
            ("policy.karmada.io", "PropagationPolicy"),
            ("cluster.karmada.io", "Cluster"),
            ("search.karmada.io", "ResourceRegistry"),
            ("coordination.k8s.io", "Lease"),
            ("events.k8s.io", "Event"),
            ("", "Event"),
            ("", "Namespace"),
            ("flotilla.io", "Anything"),
        ] {
            assert!(!propagatable(&GroupVersionKind::gvk(g, "v1", k)), "{g}/{k}");
        }
    }

    #[test]
    fn the_binding_spec_follows_template_and_policy() {
        let template = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo", "uid": "u1", "resourceVersion": "7"},
            "spec": {"replicas": 6, "template": {"spec": {"containers": [
                {"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}}
        });
        let policy: PropagationSpec = serde_json::from_value(json!({
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"clusterAffinity": {"clusterNames": ["m1"]}},
            "conflictResolution": "Overwrite"
        }))
        .unwrap();
        let spec = desired_binding_spec(&template, &policy, json!("7")).unwrap();
        assert_eq!(
            spec["resource"],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u1",
                   "resourceVersion": "7", "namespace": "demo"})
        );
        assert_eq!(spec["replicas"], 6);
        assert_eq!(
            spec["replicaRequirements"]["resourceRequest"]["cpu"],
            "500m"
        );
        assert_eq!(
            spec["placement"]["clusterAffinity"]["clusterNames"],
            json!(["m1"])
        );
        assert_eq!(spec["conflictResolution"], "Overwrite");
        assert_eq!(spec["schedulerName"], "default-scheduler");
        assert_eq!(spec["propagateDeps"], Value::Null);
        // The result parses as a binding spec.
        let parsed: flotilla_karmada_api::ResourceBindingSpec = serde_json::from_value(
            Value::Object(spec.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        )
        .unwrap();
        assert_eq!(parsed.replicas, 6);
    }

    #[test]
    fn a_merge_patch_that_replaces_drops_fields_no_longer_set() {
        let old = json!({"dispatching": true, "keep": {"a": 1, "b": 2}, "list": [1, 2]});
        let new = json!({"dispatchingOnClusters": {"clusterNames": ["m2"]}, "keep": {"a": 1}, "list": [3]});
        let patch = replacing(&old, &new);
        assert_eq!(
            patch,
            json!({"dispatchingOnClusters": {"clusterNames": ["m2"]}, "keep": {"a": 1, "b": null},
                   "list": [3], "dispatching": null})
        );
        let mut merged = old.clone();
        json_patch::merge(&mut merged, &patch);
        assert_eq!(merged, new);
        assert_eq!(replacing(&Value::Null, &new), new);
    }

    #[test]
    fn the_hash_ignores_status_and_revision() {
        let a = json!({"kind": "ConfigMap", "metadata": {"name": "c", "resourceVersion": "1"}, "data": {"k": "v"}});
        let mut b = a.clone();
        b["metadata"]["resourceVersion"] = json!("2");
        b["status"] = json!({"x": 1});
        assert_eq!(template_hash(&a), template_hash(&b));
        b["data"]["k"] = json!("w");
        assert_ne!(template_hash(&a), template_hash(&b));
    }
}
