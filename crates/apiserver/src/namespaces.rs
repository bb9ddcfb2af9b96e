//! Namespace lifecycle: deleting a namespace marks it Terminating, deletes everything in it
//! (every namespaced resource), then removes the namespace. Work interrupted by a restart
//! resumes at start-up.
//!
//! The namespace's own DELETE is admitted like any other (compiled-in checks, webhooks). The
//! cleanup runs the compiled-in checks on every delete, as kube's namespace controller deletes
//! through the API: an object they refuse (e.g. a deletion-protected one on the host) stays,
//! and so the namespace stays Terminating until it can go.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};
use std::time::Duration;

use flotilla_apimachinery::ApiError;
use serde_json::json;

use crate::state::ApiServer;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::objects::{self, DeleteOptions, Objects, meta_str, now_rfc3339};
use flotilla_generic_store::rest::{
    GenericStore, ListAnswer, NewObject, Object, ObjectAnswer, PatchBody, RestStorage, WatchAnswer,
};

/// The REST storage of namespaces: the generic store's, but a DELETE marks the namespace
/// Terminating and starts its cleanup in the server's background tasks.
pub struct NamespaceStorage {
    /// The server whose namespaces these are (weak: the server holds this storage).
    server: Weak<ApiServer>,
}

impl NamespaceStorage {
    /// Serves namespaces of `server`, when it serves them.
    pub(crate) fn install(server: &Arc<ApiServer>) {
        if server.registry.get("", "v1", "namespaces").is_some() {
            server.registry.set_storage(
                "",
                "namespaces",
                Arc::new(Self {
                    server: Arc::downgrade(server),
                }),
            );
        }
    }
}

#[async_trait::async_trait]
impl RestStorage for NamespaceStorage {
    async fn get(&self, ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
        GenericStore.get(ctx).await
    }
    async fn list(&self, ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
        GenericStore.list(ctx).await
    }
    async fn watch(&self, ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
        GenericStore.watch(ctx).await
    }
    async fn create(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        GenericStore.create(ctx, body).await
    }
    async fn update(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        GenericStore.update(ctx, body).await
    }
    async fn patch(&self, ctx: &RequestContext, body: PatchBody) -> Result<ObjectAnswer, ApiError> {
        GenericStore.patch(ctx, body).await
    }
    async fn delete(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ObjectAnswer, ApiError> {
        if ctx.path.subresource.is_some() {
            return GenericStore.delete(ctx, options).await;
        }
        let Some(server) = self.server.upgrade() else {
            return Err(ApiError::service_unavailable("the server is shutting down"));
        };
        let dry_run = ctx.info.options()?.delete.dry_run;
        delete_namespace(&server, ctx, &options, dry_run).await
    }
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ListAnswer, ApiError> {
        GenericStore.delete_collection(ctx, options).await
    }
}

fn namespace_key(name: &str) -> String {
    format!("/core/namespaces/{name}")
}

async fn delete_namespace(
    server: &Arc<ApiServer>,
    ctx: &RequestContext,
    options: &DeleteOptions,
    dry_run: bool,
) -> Result<ObjectAnswer, ApiError> {
    let name = ctx.path.name.clone().unwrap_or_default();
    let old = ctx.objects().get(None, &name).await?;
    if let Some(uid) = &options.uid {
        if meta_str(&old.value(), "uid") != Some(uid.as_str()) {
            return Err(ApiError::conflict_message(format!(
                "Precondition failed: UID in precondition: {uid}"
            )));
        }
    }
    ctx.objects()
        .admit_delete(&old.value(), options, dry_run)
        .await?;
    if old.value().pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(ObjectAnswer::ok(Object::Stored(old)));
    }
    let mut new = (*old.value()).clone();
    new["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
    new["status"] = json!({"phase": "Terminating"});
    if dry_run {
        return Ok(ObjectAnswer::ok(Object::Built(new)));
    }
    let stored = ctx
        .store
        .storage
        .update(&old.key, new, Some(old.revision))
        .await
        .map_err(|e| objects::storage_error(&ctx.def, &name, e))?;
    spawn_finalizer(server.clone(), name);
    Ok(ObjectAnswer::ok(Object::Stored(stored)))
}

/// Cleans the namespace up in the server's background tasks, retrying until it is gone (or
/// the server stops; a restart resumes it).
fn spawn_finalizer(server: Arc<ApiServer>, name: String) {
    let task = format!("namespace-finalizer {name}");
    let s = server.clone();
    server.tasks.spawn(task, async move {
        let server = s;
        loop {
            match finalize_once(&server, &name).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => tracing::warn!(namespace = %name, error = %e, "namespace cleanup"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
}

/// One pass: deletes what is left and says so in the namespace's conditions (kube's
/// namespace controller's five); once nothing is left, takes the `kubernetes` finalizer off
/// `spec.finalizers` and removes the namespace when its own `metadata.finalizers` are gone
/// too. True when done.
async fn finalize_once(server: &Arc<ApiServer>, name: &str) -> Result<bool, ApiError> {
    let Some(ns) = server
        .storage
        .get(&namespace_key(name))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
    else {
        return Ok(true);
    };
    let mut seen = BTreeSet::new();
    // By `<plural>.<group>`: objects left, and of those, the finalizers holding them.
    let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
    let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
    let mut refused = BTreeSet::new();
    for def in server.registry.all() {
        if !def.namespaced || !seen.insert((def.group.clone(), def.plural.clone())) {
            continue;
        }
        let resource = format!("{}.{}", def.plural, def.group);
        let prefix = objects::collection_prefix(&def, Some(name));
        let listed = server
            .storage
            .list(&prefix, &Default::default())
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        for obj in listed.items {
            let obj_name = meta_str(&obj.value(), "name")
                .unwrap_or_default()
                .to_string();
            let held = match Objects::new(&def, &server.storage)
                .with_plugins(&server.store.admission_plugins)
                .delete(Some(name), &obj_name, &DeleteOptions::default(), false)
                .await
            {
                Ok(w) if w.deleted => continue,
                Err(e) if e.code == 404 => continue,
                Ok(w) => w.object.value()["metadata"]["finalizers"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
                // Refused by admission: it stays, the rest of the namespace still goes.
                Err(e) if e.code == 403 => {
                    refused.insert(resource.clone());
                    Vec::new()
                }
                Err(e) => return Err(e),
            };
            *remaining.entry(resource.clone()).or_default() += 1;
            for f in held.iter().filter_map(|f| f.as_str()) {
                *finalizers.entry(f.to_string()).or_default() += 1;
            }
        }
    }
    let ns_value = ns.value();
    let conditions = deletion_conditions(
        ns_value["status"]["conditions"].as_array(),
        &remaining,
        &finalizers,
        &refused,
    );
    let mut new = (*ns_value).clone();
    new["status"]["conditions"] = json!(conditions);
    if remaining.is_empty() {
        // Finalized: kube's controller removes its `kubernetes` finalizer now.
        if let Some(spec) = new.get_mut("spec").and_then(|s| s.as_object_mut()) {
            if let Some(list) = spec.get_mut("finalizers").and_then(|f| f.as_array_mut()) {
                list.retain(|f| f.as_str() != Some("kubernetes"));
            }
        }
    }
    let finalized = new["spec"]["finalizers"]
        .as_array()
        .is_none_or(|f| f.is_empty());
    let held = new["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| !f.is_empty());
    if remaining.is_empty() && finalized && !held {
        return match server.storage.delete(&ns.key, Some(ns.revision)).await {
            Ok(_) | Err(flotilla_storage::StorageError::NotFound(_)) => Ok(true),
            Err(flotilla_storage::StorageError::Conflict { .. }) => Ok(false),
            Err(e) => Err(ApiError::internal(e.to_string())),
        };
    }
    if new != *ns_value {
        match server.storage.update(&ns.key, new, Some(ns.revision)).await {
            Ok(_) | Err(flotilla_storage::StorageError::Conflict { .. }) => {}
            Err(flotilla_storage::StorageError::NotFound(_)) => return Ok(true),
            Err(e) => return Err(ApiError::internal(e.to_string())),
        }
    }
    Ok(false)
}

/// The five conditions kube's namespace controller keeps on a Terminating namespace, from
/// what the last pass left; a condition keeps its `lastTransitionTime` while its status
/// holds.
fn deletion_conditions(
    old: Option<&Vec<serde_json::Value>>,
    remaining: &BTreeMap<String, usize>,
    finalizers: &BTreeMap<String, usize>,
    refused: &BTreeSet<String>,
) -> Vec<serde_json::Value> {
    let listed = |m: &BTreeMap<String, usize>, sep: &str| -> String {
        m.iter()
            .map(|(k, n)| format!("{k} {sep} {n} resource instances"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let content = if refused.is_empty() {
        (
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".to_string(),
        )
    } else {
        (
            "True",
            "ContentDeletionFailed",
            format!(
                "Failed to delete all resource types, {} remaining: {}",
                refused.len(),
                refused.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    };
    let left = if remaining.is_empty() {
        (
            "False",
            "ContentRemoved",
            "All content successfully removed".to_string(),
        )
    } else {
        (
            "True",
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", listed(remaining, "has")),
        )
    };
    let held = if finalizers.is_empty() {
        (
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished".to_string(),
        )
    } else {
        (
            "True",
            "SomeFinalizersRemain",
            format!(
                "Some content in the namespace has finalizers remaining: {}",
                listed(finalizers, "in")
            ),
        )
    };
    let wanted = [
        (
            "NamespaceDeletionDiscoveryFailure",
            (
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered".to_string(),
            ),
        ),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            (
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed".to_string(),
            ),
        ),
        ("NamespaceDeletionContentFailure", content),
        ("NamespaceContentRemaining", left),
        ("NamespaceFinalizersRemaining", held),
    ];
    let now = now_rfc3339();
    wanted
        .into_iter()
        .map(|(type_, (status, reason, message))| {
            let before = old.into_iter().flatten().find(|c| c["type"] == type_);
            let since = before
                .filter(|c| c["status"] == status)
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now));
            json!({"type": type_, "status": status, "lastTransitionTime": since,
                   "reason": reason, "message": message})
        })
        .collect()
}

/// Restarts cleanup of namespaces left Terminating by a previous run.
pub fn resume_terminating(server: Arc<ApiServer>) {
    let s = server.clone();
    server.tasks.spawn("namespace-resume", async move {
        let server = s;
        let Ok(listed) = server
            .storage
            .list("/core/namespaces/", &Default::default())
            .await
        else {
            return;
        };
        for ns in listed.items {
            if ns.value().pointer("/metadata/deletionTimestamp").is_some() {
                if let Some(name) = meta_str(&ns.value(), "name") {
                    spawn_finalizer(server.clone(), name.to_string());
                }
            }
        }
    });
}
