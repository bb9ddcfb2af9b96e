//! `propagateDeps: true`: the ConfigMaps, Secrets, ServiceAccounts and PVCs a workload's pods
//! name follow the workload to its clusters (Karmada's dependencies distributor).
//!
//! A [`DependencyGraph`] (pure, petgraph) holds which binding needs which object. For each
//! object some binding needs, an *attached* ResourceBinding (the object's own binding name,
//! `<name>-<kind>`, owned by the object) lists those bindings and their clusters in
//! `spec.requiredBy`; the binding controller sends the object to the union of its own
//! `spec.clusters` and those clusters ([`ResourceBindingSpec::all_target_clusters`]). So a
//! ConfigMap shared by two Deployments stays in a cluster while either needs it there, and an
//! attached binding that nothing requires any more is deleted (unless a policy claims the
//! object too: then only its `requiredBy` is cleared).
//!
//! Unlike Karmada, the clusters a workload is still being gracefully evicted from count as
//! its clusters: its old replicas run there until the eviction ends and still need the
//! objects.
//!
//! One worker: the graph and the attached bindings it writes change in one order, so a
//! `requiredBy` written is never older than the graph it came from.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use flotilla_interpreter::Dependency;
use flotilla_karmada_api::binding::{
    BindingSnapshot, ResourceBinding, ResourceBindingSpec, TargetCluster,
};
use flotilla_karmada_api::policy::ConflictResolution;
use flotilla_names::karmada;
use kube::ResourceExt;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use petgraph::Direction;
use petgraph::stable_graph::{NodeIndex, StableDiGraph};
use serde_json::{Value, json};
use tracing::{Instrument, debug, info_span};

use crate::binding_key::BindingKey;
use crate::templates::{Templates, cached_template};
use crate::{Context, DETECTOR_MANAGER, Error, Shared, host_err, is_not_found};
use flotilla_controller_runtime::reflector::wait_ready;
use flotilla_controller_runtime::{Action, Controller};

pub(crate) const CONTROLLER: &str = "dependencies";

/// Label on the attached bindings this controller creates (and may delete).
pub const ATTACHED_BINDING_LABEL: &str = "flotilla.io/attached-binding";

/// The kinds a workload's dependencies may have, as `flotilla_interpreter` names them.
const DEPENDENCY_KINDS: [(&str, &str); 4] = [
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "ServiceAccount"),
    ("v1", "PersistentVolumeClaim"),
];

/// Whether objects of this kind can be a workload's dependency.
pub fn is_dependency_kind(api_version: &str, kind: &str) -> bool {
    DEPENDENCY_KINDS.contains(&(api_version, kind))
}

/// What changed, for the controller's queue.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Signal {
    /// A ResourceBinding changed or went.
    Binding(BindingKey),
    /// An object of a dependency kind changed or went on the host.
    Object(Dependency),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Binding(BindingKey),
    Object(Dependency),
}

/// Which bindings need which objects (pure).
#[derive(Default)]
pub struct DependencyGraph {
    graph: StableDiGraph<Node, ()>,
    index: HashMap<Node, NodeIndex>,
}

impl DependencyGraph {
    fn node(&mut self, node: Node) -> NodeIndex {
        if let Some(i) = self.index.get(&node) {
            return *i;
        }
        let i = self.graph.add_node(node.clone());
        self.index.insert(node, i);
        i
    }

    fn drop_if_isolated(&mut self, i: NodeIndex) {
        if self.graph.neighbors_undirected(i).next().is_none() {
            if let Some(node) = self.graph.remove_node(i) {
                self.index.remove(&node);
            }
        }
    }

    /// Sets what `binding` needs; returns every object it needed before or needs now (whose
    /// `requiredBy` may change, if only by the binding's clusters).
    pub fn set(&mut self, binding: &BindingKey, needs: &BTreeSet<Dependency>) -> Vec<Dependency> {
        // Most bindings do not propagate dependencies: nothing to record or undo.
        if needs.is_empty() && !self.index.contains_key(&Node::Binding(binding.clone())) {
            return Vec::new();
        }
        let before = self.needs(binding);
        let b = self.node(Node::Binding(binding.clone()));
        let old_edges: Vec<_> = self
            .graph
            .edges_directed(b, Direction::Outgoing)
            .map(|e| petgraph::visit::EdgeRef::id(&e))
            .collect();
        let old_targets: Vec<NodeIndex> = self
            .graph
            .neighbors_directed(b, Direction::Outgoing)
            .collect();
        for e in old_edges {
            self.graph.remove_edge(e);
        }
        for dep in needs {
            let d = self.node(Node::Object(dep.clone()));
            self.graph.add_edge(b, d, ());
        }
        for t in old_targets {
            self.drop_if_isolated(t);
        }
        self.drop_if_isolated(b);
        let mut touched: BTreeSet<Dependency> = before.into_iter().collect();
        touched.extend(needs.iter().cloned());
        touched.into_iter().collect()
    }

    /// The objects `binding` needs, sorted.
    pub fn needs(&self, binding: &BindingKey) -> Vec<Dependency> {
        let Some(b) = self.index.get(&Node::Binding(binding.clone())) else {
            return Vec::new();
        };
        let mut out: Vec<Dependency> = self
            .graph
            .neighbors_directed(*b, Direction::Outgoing)
            .filter_map(|i| match &self.graph[i] {
                Node::Object(d) => Some(d.clone()),
                Node::Binding(_) => None,
            })
            .collect();
        out.sort();
        out
    }

    /// The bindings that need `object`, sorted.
    pub fn needed_by(&self, object: &Dependency) -> Vec<BindingKey> {
        let Some(d) = self.index.get(&Node::Object(object.clone())) else {
            return Vec::new();
        };
        let mut out: Vec<BindingKey> = self
            .graph
            .neighbors_directed(*d, Direction::Incoming)
            .filter_map(|i| match &self.graph[i] {
                Node::Binding(b) => Some(b.clone()),
                Node::Object(_) => None,
            })
            .collect();
        out.sort();
        out
    }

    /// Nodes held (for tests and metrics).
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// True when nothing is held.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }
}

/// The clusters a binding's dependencies must be in: its targets and the clusters whose Work
/// it keeps while it is being evicted from them.
pub fn clusters_needing(binding: &ResourceBinding) -> Vec<TargetCluster> {
    let mut out: BTreeMap<&str, TargetCluster> = BTreeMap::new();
    for t in &binding.spec.clusters {
        out.insert(&t.name, t.clone());
    }
    for task in binding
        .spec
        .graceful_eviction_tasks
        .iter()
        .filter(|t| t.keeps_work())
    {
        out.entry(&task.from_cluster)
            .or_insert_with(|| TargetCluster {
                name: task.from_cluster.clone(),
                ..TargetCluster::default()
            });
    }
    out.into_values().collect()
}

/// The objects a template needs when its binding propagates dependencies.
fn needs_of(template: &Value) -> BTreeSet<Dependency> {
    flotilla_interpreter::dependencies(template)
        .into_iter()
        .filter(|d| is_dependency_kind(&d.api_version, &d.kind))
        .collect()
}

struct Distributor {
    ctx: Arc<Context>,
    graph: parking_lot::Mutex<DependencyGraph>,
    /// The dependencies last reported per template (`kind/namespace/name`), so the event
    /// says when they change, not at every look.
    reported: parking_lot::Mutex<HashMap<String, BTreeSet<Dependency>>>,
    bindings: Store<ResourceBinding>,
    templates: Templates,
}

/// Runs the dependencies distributor: `controller` is queued with the bindings and
/// dependency objects that changed.
pub(crate) async fn run(ctx: Arc<Context>, shared: Shared, controller: Controller<Signal>) {
    if !wait_ready(&shared.bindings).await {
        return;
    }
    let distributor = Arc::new(Distributor {
        ctx,
        graph: parking_lot::Mutex::new(DependencyGraph::default()),
        reported: parking_lot::Mutex::new(HashMap::new()),
        bindings: shared.bindings.clone(),
        templates: shared.templates,
    });
    // Attached bindings whose workloads went while nobody watched: looked at once every
    // workload in the cache has been (the queue runs in order of arrival).
    for b in shared.bindings.state() {
        if !b.spec.required_by.is_empty() {
            if let Some(d) = attached_object(&b) {
                controller.queue().add(Signal::Object(d));
            }
        }
    }
    controller
        .run(move |signal: Signal| {
            let d = distributor.clone();
            async move {
                let span = info_span!("dependencies", ?signal);
                d.reconcile(&signal).instrument(span).await
            }
        })
        .await;
}

/// The object an attached binding is for.
fn attached_object(b: &ResourceBinding) -> Option<Dependency> {
    let r = &b.spec.resource;
    is_dependency_kind(&r.api_version, &r.kind).then(|| Dependency {
        api_version: r.api_version.clone(),
        kind: r.kind.clone(),
        namespace: b.namespace().unwrap_or_default(),
        name: r.name.clone(),
    })
}

impl Distributor {
    fn binding(&self, key: &BindingKey) -> Option<Arc<ResourceBinding>> {
        let ns = key.namespace.as_deref()?;
        self.bindings.get(&ObjectRef::new(&key.name).within(ns))
    }

    fn cached(
        &self,
        api_version: &str,
        kind: &str,
        ns: &str,
        name: &str,
    ) -> Option<Option<Arc<DynamicObject>>> {
        let gvk = crate::registry::gvk_of(api_version, kind);
        cached_template(&self.templates, &gvk, Some(ns), name)
    }

    async fn reconcile(&self, signal: &Signal) -> Result<Action, Error> {
        match signal {
            Signal::Binding(key) => self.binding_changed(key).await,
            Signal::Object(object) => {
                self.sync(object).await?;
                Ok(Action::Done)
            }
        }
    }

    async fn binding_changed(&self, key: &BindingKey) -> Result<Action, Error> {
        let binding = self
            .binding(key)
            .filter(|b| b.metadata.deletion_timestamp.is_none());
        let propagates = binding
            .as_ref()
            .is_some_and(|b| b.spec.propagate_deps == Some(true));
        let needs = match (&binding, propagates) {
            (Some(b), true) => {
                let r = &b.spec.resource;
                let ns = r.namespace.as_deref().unwrap_or_default();
                match self.cached(&r.api_version, &r.kind, ns, &r.name) {
                    Some(Some(t)) => {
                        let value =
                            serde_json::to_value(t.as_ref()).map_err(|source| Error::Encode {
                                what: "a template",
                                source,
                            })?;
                        let needs = needs_of(&value);
                        self.got_dependencies(&value, &needs);
                        needs
                    }
                    // Gone: it needs nothing (and its last report goes with it).
                    Some(None) => {
                        self.reported
                            .lock()
                            .remove(&report_key(&r.kind, ns, &r.name));
                        BTreeSet::new()
                    }
                    // The detector does not watch the kind yet, or has not listed it: its
                    // dependencies stay as they are until it has.
                    None => return Ok(Action::RequeueAfter(std::time::Duration::from_secs(2))),
                }
            }
            _ => BTreeSet::new(),
        };
        let touched = self.graph.lock().set(key, &needs);
        for object in touched {
            self.sync(&object).await?;
        }
        Ok(Action::Done)
    }

    /// Karmada's event on a template whose dependencies were read, when they changed.
    fn got_dependencies(&self, template: &Value, needs: &BTreeSet<Dependency>) {
        let key = crate::templates::involved(template);
        let id = report_key(
            key.kind.as_deref().unwrap_or_default(),
            key.namespace.as_deref().unwrap_or_default(),
            key.name.as_deref().unwrap_or_default(),
        );
        if self.reported.lock().insert(id, needs.clone()).as_ref() == Some(needs) {
            return;
        }
        let listed: Vec<String> = needs
            .iter()
            .map(|d| {
                format!(
                    "{{APIVersion:{} Kind:{} Namespace:{} Name:{} LabelSelector:nil}}",
                    d.api_version, d.kind, d.namespace, d.name
                )
            })
            .collect();
        self.ctx
            .events
            .record(flotilla_controller_runtime::EventRequest {
                involved: key,
                type_: "Normal",
                reason: "GetDependenciesSucceed",
                message: format!("Get dependencies([{}]) succeed.", listed.join(" ")),
            });
    }

    /// Writes the attached binding of `object` from the graph.
    async fn sync(&self, object: &Dependency) -> Result<(), Error> {
        let needed_by = self.graph.lock().needed_by(object);
        let parents: Vec<_> = needed_by
            .iter()
            .filter_map(|k| self.binding(k))
            .filter(|b| b.metadata.deletion_timestamp.is_none())
            .collect();
        let required: Vec<BindingSnapshot> = parents
            .iter()
            .map(|b| BindingSnapshot {
                namespace: b.namespace(),
                name: b.name_any(),
                clusters: clusters_needing(b),
            })
            .collect();
        let inherited = Inherited::of(parents.iter().map(|b| &b.spec));
        let name = karmada::binding_name(&object.kind, &object.name);
        let api: Api<ResourceBinding> = Api::namespaced(self.ctx.host.clone(), &object.namespace);
        let existing = self
            .bindings
            .get(&ObjectRef::new(&name).within(&object.namespace))
            .filter(|b| b.spec.resource.kind == object.kind);
        match existing {
            Some(b) if b.spec.required_by == required && inherited.held_by(&b) => Ok(()),
            Some(b) if required.is_empty() && is_ours_alone(&b) => {
                match api.delete(&name, &DeleteParams::background()).await {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(host_err("deleting attached binding", name)(e)),
                }
                self.ctx.metrics.wrote("binding_delete");
                debug!(binding = %name, "attached binding no longer required");
                Ok(())
            }
            Some(b) => {
                let mut spec = json!({"requiredBy": if required.is_empty() { Value::Null } else { json!(required) }});
                // Only a binding of its own (not one a policy also claims, whose policy says
                // these) takes them from its parents.
                if !required.is_empty() && b.spec.placement.is_none() {
                    spec["preserveResourcesOnDeletion"] = json!(inherited.preserve);
                    spec["conflictResolution"] = json!(inherited.conflict_resolution);
                }
                let patch = json!({ "spec": spec });
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
                    .await
                {
                    Ok(_) => {}
                    Err(e) if is_not_found(&e) => {}
                    Err(e) => return Err(host_err("updating attached binding", name)(e)),
                }
                self.ctx.metrics.wrote("binding");
                Ok(())
            }
            None if required.is_empty() => Ok(()),
            None => {
                let cached = self.cached(
                    &object.api_version,
                    &object.kind,
                    &object.namespace,
                    &object.name,
                );
                let template = match cached {
                    Some(Some(t)) => t,
                    // Not on the host (yet): its creation brings it back here.
                    _ => return Ok(()),
                };
                if template.metadata.deletion_timestamp.is_some() {
                    return Ok(());
                }
                self.create(object, &name, &template, &required, &inherited)
                    .await
            }
        }
    }

    async fn create(
        &self,
        object: &Dependency,
        name: &str,
        template: &DynamicObject,
        required: &[BindingSnapshot],
        inherited: &Inherited,
    ) -> Result<(), Error> {
        let body = json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {
                "name": name,
                "namespace": object.namespace,
                "labels": {
                    karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL: uuid::Uuid::new_v4().to_string(),
                    ATTACHED_BINDING_LABEL: "true",
                },
                "ownerReferences": [{
                    "apiVersion": object.api_version,
                    "kind": object.kind,
                    "name": object.name,
                    "uid": template.uid(),
                    "controller": true,
                    "blockOwnerDeletion": true,
                }],
                "finalizers": [karmada::BINDING_CONTROLLER_FINALIZER],
            },
            "spec": {
                "resource": {
                    "apiVersion": object.api_version,
                    "kind": object.kind,
                    "namespace": object.namespace,
                    "name": object.name,
                    "uid": template.uid(),
                    "resourceVersion": template.resource_version(),
                },
                "requiredBy": required,
                "conflictResolution": inherited.conflict_resolution,
                "preserveResourcesOnDeletion": inherited.preserve,
            },
        });
        let rb: ResourceBinding = serde_json::from_value(body).map_err(|source| Error::Encode {
            what: "an attached binding",
            source,
        })?;
        let api: Api<ResourceBinding> = Api::namespaced(self.ctx.host.clone(), &object.namespace);
        let params = PostParams {
            field_manager: Some(DETECTOR_MANAGER.into()),
            ..Default::default()
        };
        match api.create(&params, &rb).await {
            Ok(_) => {
                self.ctx.metrics.wrote("binding");
                debug!(binding = %name, "attached binding created");
                Ok(())
            }
            // Made meanwhile (by the detector for a claimed object, or not in our cache yet):
            // patched on the retry.
            Err(e) => Err(host_err("creating attached binding", name.to_string())(e)),
        }
    }
}

/// An attached binding this controller made, for an object no policy claims.
/// What an attached binding takes from the bindings that need it (Karmada's
/// `buildAttachedBinding`, with its rule for several parents): Overwrite when any parent
/// overwrites, and the objects preserved on deletion when any parent preserves its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Inherited {
    conflict_resolution: ConflictResolution,
    preserve: bool,
}

impl Inherited {
    fn of<'a>(parents: impl Iterator<Item = &'a ResourceBindingSpec>) -> Self {
        let mut out = Inherited {
            conflict_resolution: ConflictResolution::Abort,
            preserve: false,
        };
        for spec in parents {
            if spec.conflict_resolution == Some(ConflictResolution::Overwrite) {
                out.conflict_resolution = ConflictResolution::Overwrite;
            }
            if spec.preserve_resources_on_deletion == Some(true) {
                out.preserve = true;
            }
        }
        out
    }

    /// Whether `b` already says what its parents give it.
    fn held_by(&self, b: &ResourceBinding) -> bool {
        b.spec.placement.is_some()
            || (b.spec.preserve_resources_on_deletion.unwrap_or(false) == self.preserve
                && b.spec.conflict_resolution.unwrap_or_default() == self.conflict_resolution)
    }
}

/// The key of a template's last dependencies report: `kind/namespace/name`.
fn report_key(kind: &str, namespace: &str, name: &str) -> String {
    format!("{kind}/{namespace}/{name}")
}

fn is_ours_alone(b: &ResourceBinding) -> bool {
    b.labels().get(ATTACHED_BINDING_LABEL).map(String::as_str) == Some("true")
        && b.spec.placement.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attached_bindings_inherit_what_their_parents_say() {
        let spec = |v: serde_json::Value| -> ResourceBindingSpec {
            serde_json::from_value(
                json!({"resource": {"apiVersion": "v1", "kind": "X", "name": "x"}}),
            )
            .map(|mut s: ResourceBindingSpec| {
                if let Some(c) = v.get("conflictResolution") {
                    s.conflict_resolution = serde_json::from_value(c.clone()).unwrap();
                }
                s.preserve_resources_on_deletion = v.get("preserve").and_then(|p| p.as_bool());
                s
            })
            .unwrap()
        };
        let abort = spec(json!({}));
        let overwrite = spec(json!({"conflictResolution": "Overwrite"}));
        let preserve = spec(json!({"preserve": true}));
        assert_eq!(
            Inherited::of([&abort].into_iter()),
            Inherited {
                conflict_resolution: ConflictResolution::Abort,
                preserve: false
            }
        );
        assert_eq!(
            Inherited::of([&abort, &overwrite, &preserve].into_iter()),
            Inherited {
                conflict_resolution: ConflictResolution::Overwrite,
                preserve: true
            }
        );
    }

    fn key(name: &str) -> BindingKey {
        BindingKey {
            namespace: Some("demo".into()),
            name: name.into(),
        }
    }

    fn cm(name: &str) -> Dependency {
        Dependency {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "demo".into(),
            name: name.into(),
        }
    }

    fn set(items: &[Dependency]) -> BTreeSet<Dependency> {
        items.iter().cloned().collect()
    }

    #[test]
    fn a_shared_object_is_needed_while_either_binding_needs_it() {
        let mut g = DependencyGraph::default();
        assert_eq!(
            g.set(&key("a"), &set(&[cm("shared"), cm("only-a")])),
            vec![cm("only-a"), cm("shared")]
        );
        assert_eq!(g.set(&key("b"), &set(&[cm("shared")])), vec![cm("shared")]);
        assert_eq!(g.needed_by(&cm("shared")), vec![key("a"), key("b")]);
        assert_eq!(g.needed_by(&cm("only-a")), vec![key("a")]);

        // a stops needing both: the shared one keeps b, only-a is needed by nobody.
        let touched = g.set(&key("a"), &BTreeSet::new());
        assert_eq!(touched, vec![cm("only-a"), cm("shared")]);
        assert_eq!(g.needed_by(&cm("shared")), vec![key("b")]);
        assert!(g.needed_by(&cm("only-a")).is_empty());
        assert!(g.needs(&key("a")).is_empty());

        g.set(&key("b"), &BTreeSet::new());
        assert!(g.needed_by(&cm("shared")).is_empty());
        assert!(g.is_empty(), "nodes left behind: {}", g.len());
    }

    #[test]
    fn changing_references_moves_the_edges() {
        let mut g = DependencyGraph::default();
        g.set(&key("a"), &set(&[cm("x")]));
        let touched = g.set(&key("a"), &set(&[cm("y")]));
        assert_eq!(touched, vec![cm("x"), cm("y")]);
        assert!(g.needed_by(&cm("x")).is_empty());
        assert_eq!(g.needed_by(&cm("y")), vec![key("a")]);
        assert_eq!(g.needs(&key("a")), vec![cm("y")]);
        // Setting the same again touches the object (its clusters may have changed).
        assert_eq!(g.set(&key("a"), &set(&[cm("y")])), vec![cm("y")]);
        assert_eq!(g.len(), 2);
    }

    #[test]
    fn only_dependency_kinds_count_and_volumes_env_and_pull_secrets_are_found() {
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "w", "namespace": "demo"},
            "spec": {"template": {"spec": {
                "serviceAccountName": "runner",
                "imagePullSecrets": [{"name": "pull"}],
                "volumes": [{"name": "v", "configMap": {"name": "conf"}},
                            {"name": "p", "persistentVolumeClaim": {"claimName": "data"}}],
                "containers": [{"name": "c", "image": "i", "envFrom": [{"secretRef": {"name": "env"}}]}]}}}});
        let needs: Vec<(String, String)> =
            needs_of(&d).into_iter().map(|d| (d.kind, d.name)).collect();
        for want in [
            ("ConfigMap", "conf"),
            ("Secret", "env"),
            ("Secret", "pull"),
            ("ServiceAccount", "runner"),
            ("PersistentVolumeClaim", "data"),
        ] {
            assert!(
                needs.contains(&(want.0.to_string(), want.1.to_string())),
                "{want:?} missing from {needs:?}"
            );
        }
    }

    #[test]
    fn eviction_clusters_count_as_needing_clusters() {
        let rb: ResourceBinding = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "w-deployment", "namespace": "demo"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "w"},
                     "clusters": [{"name": "m2", "replicas": 3}],
                     "gracefulEvictionTasks": [{"fromCluster": "m1", "reason": "TaintUntolerated", "producer": "x"}]}
        }))
        .unwrap();
        let names: Vec<String> = clusters_needing(&rb).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["m1", "m2"]);
    }
}
