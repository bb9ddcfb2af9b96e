//! CustomResourceDefinitions: a controller that follows the CRD objects in storage and serves
//! each one's resources without a restart. For every served version it registers a
//! [`ResourceDef`] whose hooks come from the version's structural schema (pruning, defaults,
//! validation), its printer columns and subresources; it keeps the CRD's `status` (conditions
//! `NamesAccepted`/`Established`, `acceptedNames`, `storedVersions`) current; and when a CRD
//! is deleted it stops serving it, deletes every object of it, then lets the CRD go (finalizer
//! `customresourcecleanup.apiextensions.k8s.io`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use flotilla_apimachinery::resource::{OpenApiSchemas, ScaleDef, Validation};
use flotilla_apimachinery::{Cause, ResourceDef};
use flotilla_schema::StructuralSchema;
use flotilla_storage::{EventType, StoredObject, WatchEvent};
use serde_json::{Value, json};

use crate::informer::{Handler, Informer};
use crate::state::ApiServer;
use flotilla_generic_store::objects::{self, meta_str, now_rfc3339};

pub const CRD_PREFIX: &str = "/apiextensions.k8s.io/customresourcedefinitions/";
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// What a CRD currently registers: (group, plural).
type Served = BTreeMap<String, (String, String)>;

/// Builds the resource definitions a CRD serves, one per served version.
pub fn defs_for_crd(crd: &Value) -> Result<Vec<ResourceDef>, Vec<Cause>> {
    let spec = crd.get("spec").cloned().unwrap_or(Value::Null);
    let group = spec
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let names = spec.get("names").cloned().unwrap_or(Value::Null);
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let plural = names
        .get("plural")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let namespaced = spec.get("scope").and_then(Value::as_str) != Some("Cluster");
    let versions = spec
        .get("versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        .and_then(|v| v.get("name").and_then(Value::as_str))
        .map(str::to_string);
    let mut defs = Vec::new();
    let mut errors = Vec::new();
    for (i, version) in versions.iter().enumerate() {
        if version.get("served").and_then(Value::as_bool) == Some(false) {
            continue;
        }
        let vname = version
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut def = ResourceDef::new(&group, &vname, &kind, &plural, namespaced);
        if let Some(list_kind) = names.get("listKind").and_then(Value::as_str) {
            def.list_kind = list_kind.to_string();
        }
        def.singular = names
            .get("singular")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase());
        def.short_names = string_list(names.get("shortNames"));
        def.categories = string_list(names.get("categories"));
        def.storage_version = storage_version.clone();
        let subresources = version
            .get("subresources")
            .or_else(|| spec.get("subresources"));
        def.has_status = subresources.and_then(|s| s.get("status")).is_some();
        if let Some(scale) = subresources.and_then(|s| s.get("scale")) {
            def.scale = Some(ScaleDef {
                spec_replicas_path: scale
                    .get("specReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".spec.replicas")
                    .into(),
                status_replicas_path: scale
                    .get("statusReplicasPath")
                    .and_then(Value::as_str)
                    .unwrap_or(".status.replicas")
                    .into(),
                label_selector_path: Some(
                    scale
                        .get("labelSelectorPath")
                        .and_then(Value::as_str)
                        .unwrap_or(".status.selector")
                        .into(),
                ),
            });
        }
        let columns = version
            .get("additionalPrinterColumns")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        def.printer = match flotilla_printers::custom_printer(&columns) {
            Ok(p) => Some(p),
            Err(e) => {
                errors.push(Cause::new(
                    "FieldValueInvalid",
                    e.to_string(),
                    format!("spec.versions[{i}].additionalPrinterColumns"),
                ));
                None
            }
        };
        let raw_schema = version.pointer("/schema/openAPIV3Schema").cloned();
        if let Some(raw) = raw_schema {
            let prefix = format!("spec.versions[{i}].schema.openAPIV3Schema");
            match StructuralSchema::new(&raw, &prefix) {
                Ok(schema) => attach_schema(&mut def, Arc::new(schema), &raw),
                Err(causes) => errors.extend(causes),
            }
        } else {
            attach_name_validation(&mut def);
        }
        defs.push(def);
    }
    if errors.is_empty() {
        Ok(defs)
    } else {
        Err(errors)
    }
}

fn string_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Metadata checks every custom resource gets: a DNS-1123 subdomain name and valid labels.
fn metadata_causes(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(name) = meta_str(obj, "name") {
        if let Err(msg) = flotilla_apimachinery::names::is_dns1123_subdomain(name) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: {msg}"),
                "metadata.name",
            ));
        }
    }
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (value, msg) in flotilla_apimachinery::names::validate_labels(labels) {
            causes.push(Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: {value:?}: {msg}"),
                "metadata.labels",
            ));
        }
    }
    causes
}

fn attach_name_validation(def: &mut ResourceDef) {
    def.validate = Some(Arc::new(|obj: &Value, _old: Option<&Value>| Validation {
        causes: metadata_causes(obj),
        ..Validation::default()
    }));
}

fn attach_schema(def: &mut ResourceDef, schema: Arc<StructuralSchema>, raw: &Value) {
    let s = schema.clone();
    def.prune = Some(Arc::new(move |obj: &mut Value| s.prune(obj)));
    let s = schema.clone();
    def.default = Some(Arc::new(move |obj: &mut Value| s.apply_defaults(obj)));
    let s = schema;
    def.validate = Some(Arc::new(move |obj: &Value, _old: Option<&Value>| {
        let mut causes = metadata_causes(obj);
        causes.extend(s.validate(obj));
        Validation {
            causes,
            ..Validation::default()
        }
    }));
    let reversed: Vec<&str> = def.group.split('.').rev().collect();
    let root = format!("{}.{}.{}", reversed.join("."), def.version, def.kind);
    let mut published = raw.clone();
    if let Some(props) = published
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        props.entry("apiVersion").or_insert_with(|| {
            json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."})
        });
        props.entry("kind").or_insert_with(|| {
            json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."})
        });
        props.insert(
            "metadata".into(),
            json!({"type": "object", "description": "Standard object's metadata."}),
        );
    }
    let mut components = BTreeMap::new();
    components.insert(root.clone(), published);
    def.openapi = Some(Arc::new(OpenApiSchemas { root, components }));
}

/// Serves every stored CRD before it returns (so a server is quiet once started), then
/// follows CRD changes in the server's background tasks.
pub async fn start(server: Arc<ApiServer>) {
    let mut controller = CrdController {
        server: server.clone(),
        served: BTreeMap::new(),
    };
    let mut informer = Informer::new(server.storage.clone(), CRD_PREFIX);
    if let Err(e) = informer.list(&mut controller).await {
        // The background loop lists again.
        tracing::warn!(error = %e, "listing CRDs at start");
    }
    let token = server.tasks.token();
    server.tasks.spawn("crd-controller", async move {
        informer.run(controller, token).await;
    });
}

/// What the CRD controller keeps between events: which CRD serves which (group, plural).
struct CrdController {
    server: Arc<ApiServer>,
    served: Served,
}

impl Handler for CrdController {
    /// Brings what is served in line with the stored CRDs.
    async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
        let present: BTreeSet<String> = items
            .iter()
            .filter_map(|o| meta_str(&o.value(), "name").map(str::to_string))
            .collect();
        for gone in self
            .served
            .keys()
            .filter(|n| !present.contains(*n))
            .cloned()
            .collect::<Vec<_>>()
        {
            cleanup(&self.server, &mut self.served, &gone).await;
        }
        for obj in &items {
            sync(&self.server, &mut self.served, &obj.value()).await;
        }
    }

    async fn changed(&mut self, event: WatchEvent) {
        let name = meta_str(&event.object.value(), "name")
            .unwrap_or_default()
            .to_string();
        match event.event_type {
            EventType::Deleted => cleanup(&self.server, &mut self.served, &name).await,
            _ => sync(&self.server, &mut self.served, &event.object.value()).await,
        }
    }
}

/// Registers (or re-registers) what `crd` serves and brings its status up to date.
async fn sync(server: &Arc<ApiServer>, served: &mut Served, crd: &Value) {
    let name = meta_str(crd, "name").unwrap_or_default().to_string();
    if crd.pointer("/metadata/deletionTimestamp").is_some() {
        cleanup(server, served, &name).await;
        return;
    }
    let defs = match defs_for_crd(crd) {
        Ok(d) => d,
        Err(causes) => {
            tracing::warn!(crd = %name, ?causes, "stored CRD does not build; not serving it");
            return;
        }
    };
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let plural = crd
        .pointer("/spec/names/plural")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if let Some((g, p)) = served.get(&name) {
        if g != &group || p != &plural {
            server.registry.unregister(g, p);
        }
    }
    // Versions no longer served go away; the rest are replaced.
    let keep: BTreeSet<String> = defs.iter().map(|d| d.version.clone()).collect();
    for existing in server.registry.all() {
        if existing.group == group && existing.plural == plural && !keep.contains(&existing.version)
        {
            server
                .registry
                .unregister_version(&group, &existing.version, &plural);
        }
    }
    if let Some(schema) = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.pointer("/schema/openAPIV3Schema"))
    {
        server.store.merge_schemas.insert(
            (group.clone(), plural.clone()),
            Arc::new(flotilla_patch::Schema::from_openapi(schema)),
        );
    }
    for def in defs {
        server.registry.register(def);
    }
    served.insert(name.clone(), (group, plural));
    update_status(server, crd).await;
}

async fn update_status(server: &Arc<ApiServer>, crd: &Value) {
    let Some(def) = server
        .registry
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    let name = meta_str(crd, "name").unwrap_or_default().to_string();
    let mut new = crd.clone();
    let mut changed = false;
    let finalizers = new
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        let mut f = finalizers;
        f.push(json!(CLEANUP_FINALIZER));
        new["metadata"]["finalizers"] = Value::Array(f);
        changed = true;
    }
    let mut accepted = crd
        .pointer("/spec/names")
        .cloned()
        .unwrap_or_else(|| json!({}));
    if let Some(kind) = accepted
        .get("kind")
        .and_then(Value::as_str)
        .map(str::to_string)
    {
        if accepted.get("singular").is_none() {
            accepted["singular"] = json!(kind.to_lowercase());
        }
        if accepted.get("listKind").is_none() {
            accepted["listKind"] = json!(format!("{kind}List"));
        }
    }
    let mut stored: Vec<Value> = crd
        .pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(sv) = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
        })
        .and_then(|v| v.get("name"))
    {
        if !stored.contains(sv) {
            stored.push(sv.clone());
        }
    }
    let old_conditions = crd
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let condition = |type_: &str, reason: &str, message: &str| -> Value {
        let previous = old_conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
        match previous {
            Some(p) if p.get("status").and_then(Value::as_str) == Some("True") => p.clone(),
            _ => {
                json!({"type": type_, "status": "True", "lastTransitionTime": now_rfc3339(), "reason": reason, "message": message})
            }
        }
    };
    let status = json!({
        "conditions": [
            condition("NamesAccepted", "NoConflicts", "no conflicts found"),
            condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
        ],
        "acceptedNames": accepted,
        "storedVersions": stored,
    });
    if crd.get("status") != Some(&status) {
        new["status"] = status;
        changed = true;
    }
    if !changed {
        return;
    }
    let key = format!("{CRD_PREFIX}{name}");
    let Ok(Some(current)) = server.storage.get(&key).await else {
        return;
    };
    if current.value().as_ref() != crd {
        // A newer version exists; its own event will bring us back here.
        return;
    }
    let _ = def;
    if let Err(e) = server
        .storage
        .update(&key, new, Some(current.revision))
        .await
    {
        tracing::debug!(crd = %name, error = %e, "CRD status update raced; retrying on the next event");
    }
}

/// Stops serving a CRD being deleted, deletes its objects, then releases the CRD.
async fn cleanup(server: &Arc<ApiServer>, served: &mut Served, name: &str) {
    let Some((group, plural)) = served.remove(name) else {
        release(server, name).await;
        return;
    };
    let def = server.registry.any_version(&group, &plural);
    server.registry.unregister(&group, &plural);
    server
        .store
        .merge_schemas
        .remove(&(group.clone(), plural.clone()));
    if let Some(def) = def {
        let prefix = objects::collection_prefix(&def, None);
        for _ in 0..50 {
            let Ok(listed) = server.storage.list(&prefix, &Default::default()).await else {
                break;
            };
            if listed.items.is_empty() {
                break;
            }
            for obj in listed.items {
                // Custom resources go with their definition, finalizers or not.
                let _ = server.storage.delete(&obj.key, None).await;
            }
        }
    }
    release(server, name).await;
}

/// Removes the cleanup finalizer so a CRD marked for deletion can go.
async fn release(server: &Arc<ApiServer>, name: &str) {
    let key = format!("{CRD_PREFIX}{name}");
    let Ok(Some(current)) = server.storage.get(&key).await else {
        return;
    };
    if current
        .value()
        .pointer("/metadata/deletionTimestamp")
        .is_none()
    {
        return;
    }
    let mut v = (*current.value()).clone();
    let remaining: Vec<Value> = v
        .pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|f| *f != CLEANUP_FINALIZER)
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let result = if remaining.is_empty() {
        server
            .storage
            .delete(&key, Some(current.revision))
            .await
            .map(|_| ())
    } else {
        v["metadata"]["finalizers"] = Value::Array(remaining);
        server
            .storage
            .update(&key, v, Some(current.revision))
            .await
            .map(|_| ())
    };
    if let Err(e) = result {
        tracing::debug!(crd = %name, error = %e, "releasing the CRD raced; retrying on the next event");
    }
}
