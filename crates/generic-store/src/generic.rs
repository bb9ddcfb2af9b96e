//! The generic store's verbs ([`GenericStore`]'s [`RestStorage`] implementation): each calls
//! [`Objects`] with the request's parsed options and answers with the stored objects, which
//! the handlers serve from their bytes. Watches are in [`crate::watch`].

use std::sync::Arc;

use base64::Engine;
use flotilla_apimachinery::ApiError;
use flotilla_storage::StoredObject;
use http::StatusCode;
use serde_json::{Value, json};

use crate::context::RequestContext;
use crate::filter::Selection;
use crate::objects::{self, DeleteOptions, Patch, Written};
use crate::request::ResourceVersion;
use crate::rest::{
    GenericStore, ListAnswer, NewObject, Object, ObjectAnswer, PatchBody, RestStorage, WatchAnswer,
};

/// A written object's answer: the object, or its Scale when the scale subresource was written.
fn written(ctx: &RequestContext, w: Written, status: StatusCode) -> Result<ObjectAnswer, ApiError> {
    let mut answer = if ctx.subresource() == Some("scale") {
        scale_answer(ctx, &w.object, status)?
    } else {
        ObjectAnswer::new(Object::Stored(w.object), status)
    };
    answer.warnings = w.warnings;
    Ok(answer)
}

fn scale_answer(
    ctx: &RequestContext,
    obj: &StoredObject,
    status: StatusCode,
) -> Result<ObjectAnswer, ApiError> {
    let mut answer = ObjectAnswer::new(Object::Built(ctx.objects().scale_of(obj)?), status);
    answer.printable = false;
    Ok(answer)
}

/// Checks the target namespace exists and is not terminating (for creates).
async fn check_namespace(ctx: &RequestContext) -> Result<(), ApiError> {
    let Some(ns) = ctx.namespace() else {
        return Ok(());
    };
    if !ctx.def.namespaced {
        return Ok(());
    }
    let key = format!("/core/namespaces/{ns}");
    // The cache first (a namespace rarely changes); a namespace it does not hold yet may have
    // just been created through another replica, so that is asked consistently.
    let found = match ctx.store.storage.get_cached(&key).await {
        Ok(None) => ctx.store.storage.get(&key).await,
        other => other,
    };
    match found {
        Ok(Some(obj)) => {
            if obj.value().pointer("/metadata/deletionTimestamp").is_some() {
                return Err(ApiError::forbidden(format!(
                    "{} \"{}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
                    flotilla_apimachinery::status::qualified_resource(
                        &ctx.def.group,
                        &ctx.def.plural
                    ),
                    ctx.name()
                )));
            }
            Ok(())
        }
        Ok(None) => Err(ApiError::not_found("", "namespaces", ns)),
        Err(e) => Err(ApiError::internal(e.to_string())),
    }
}

async fn get(ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
    // `resourceVersion=0` is kube's "any version": the cache answers. Otherwise the read is
    // consistent, so any version up to the current one is satisfied; one this storage could
    // not have issued is refused, and one it has not reached yet is waited for and then
    // refused (504), as LIST refuses them.
    let requested = match &ctx.info.options()?.get.resource_version {
        Some(rv) => Some(objects::revision_of(rv)?),
        None => None,
    };
    let any_version = requested == Some(0);
    if let Some(requested) = requested.filter(|&r| r > 0) {
        ctx.store
            .storage
            .wait_for_revision(requested)
            .await
            .map_err(revision_failure)?;
    }
    let obj = ctx
        .objects()
        .read(ctx.namespace(), ctx.name(), any_version)
        .await?;
    if ctx.subresource() == Some("scale") {
        return scale_answer(ctx, &obj, StatusCode::OK);
    }
    Ok(ObjectAnswer::ok(Object::Stored(obj)))
}

/// A read at a revision the storage no longer has (410) or has not reached (504), in
/// kube-apiserver's words; any other storage failure as every read answers it.
pub(crate) fn revision_failure(e: flotilla_storage::StorageError) -> ApiError {
    match e {
        flotilla_storage::StorageError::Expired { requested, oldest } => {
            ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        flotilla_storage::StorageError::FutureRevision { requested, current } => ApiError::timeout(
            format!("Too large resource version: {requested}, current: {current}"),
        ),
        e => objects::storage_failure(e),
    }
}

/// A continue token: the revision of the list's first page and the last key served.
fn encode_continue(revision: u64, last_key: &str) -> String {
    let raw = json!({"rv": revision, "start": last_key}).to_string();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode_continue(token: &str) -> Result<(u64, String), ApiError> {
    let bad =
        || ApiError::bad_request("continue key is not valid: it was not issued by this server");
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let revision = v.get("rv").and_then(Value::as_u64).ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((revision, start.to_string()))
}

/// kube-apiserver's answer to a continue token older than the retained history.
fn continue_expired() -> ApiError {
    ApiError::expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
    )
}

async fn list(ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
    let options = ctx.list_options()?;
    let selection = Selection::from_options(&ctx.def, options)?;
    let requested = match &options.resource_version {
        Some(rv) => Some(objects::revision_of(rv)?),
        None => None,
    };
    // Every page of a paginated list reads the snapshot of its first page; an exact
    // resourceVersion reads that snapshot too. Otherwise the current state (which is not
    // older than any version a client saw).
    let (snapshot, start_after) = match &options.continue_token {
        Some(c) => {
            let (revision, start) = decode_continue(c)?;
            (Some(revision), Some(start))
        }
        None if options.resource_version_match.as_deref() == Some("Exact") => {
            (requested.filter(|r| *r > 0), None)
        }
        None => (None, None),
    };
    // Without a selector the storage pages itself; with one, every later item is filtered
    // here to count what remains.
    let storage_limit = match options.limit {
        Some(l) if selection.is_everything() => Some(usize::try_from(l).unwrap_or(usize::MAX)),
        _ => None,
    };
    let prefix = objects::collection_prefix(&ctx.def, ctx.namespace());
    let storage_options = flotilla_storage::ListOptions {
        revision: snapshot,
        start_after,
        limit: storage_limit,
    };
    // `resourceVersion=0` (not Exact) is kube's "any version": the cache answers as it is,
    // without asking a shared store for its latest revision first.
    let any_version = requested == Some(0)
        && options.continue_token.is_none()
        && options.resource_version_match.as_deref() != Some("Exact");
    let listed = if any_version {
        ctx.store
            .storage
            .list_cached(&prefix, &storage_options)
            .await
    } else {
        ctx.store.storage.list(&prefix, &storage_options).await
    };
    let listed = listed.map_err(|e| match e {
        flotilla_storage::StorageError::Expired { .. } if options.continue_token.is_some() => {
            continue_expired()
        }
        e => revision_failure(e),
    })?;
    let mut items: Vec<Object> = Vec::new();
    let mut last_key = None;
    let mut remaining = listed.remaining;
    for obj in listed.items.iter() {
        if !selection.matches_object(obj) {
            continue;
        }
        if let Some(l) = options.limit {
            if items.len() as u64 >= l {
                remaining += 1;
                continue;
            }
        }
        last_key = Some(&obj.key);
        items.push(Object::Stored(Arc::clone(obj)));
    }
    let continue_token = match last_key {
        Some(last) if remaining > 0 => Some(encode_continue(listed.revision, last)),
        _ => None,
    };
    Ok(ListAnswer {
        items,
        resource_version: ResourceVersion::from(listed.revision).to_string(),
        continue_token,
        remaining,
        warnings: Vec::new(),
    })
}

async fn create(ctx: &RequestContext, body: NewObject) -> Result<ObjectAnswer, ApiError> {
    if ctx.path.name.is_some() || ctx.subresource().is_some() {
        return Err(ApiError::method_not_allowed(
            "POST is only allowed on collections",
        ));
    }
    let opts = ctx.write_options(false)?;
    check_namespace(ctx).await?;
    let w = ctx
        .objects()
        .with_duplicates(body.duplicates)
        .create(ctx.namespace(), body.value, &opts)
        .await?;
    written(ctx, w, StatusCode::CREATED)
}

async fn update(ctx: &RequestContext, body: NewObject) -> Result<ObjectAnswer, ApiError> {
    let opts = ctx.write_options(false)?;
    let objects = ctx.objects().with_duplicates(body.duplicates);
    if ctx.subresource() == Some("scale") {
        let old = objects.get(ctx.namespace(), ctx.name()).await?;
        let w = objects.write_scale(&old, &body.value, &opts).await?;
        return written(ctx, w, StatusCode::OK);
    }
    let w = objects
        .update(
            ctx.namespace(),
            ctx.name(),
            body.value,
            ctx.subresource(),
            &opts,
        )
        .await?;
    written(ctx, w, StatusCode::OK)
}

/// A patch of the Scale (a document of its own, not stored): applied to the Scale the object
/// has now, and written back as the object's replicas.
fn patched_scale(ctx: &RequestContext, patch: &Patch, scale: &Value) -> Result<Value, ApiError> {
    match patch {
        Patch::Json(ops) => flotilla_patch::json_patch::apply(scale, ops)
            .map_err(|e| objects::json_patch_refused(e, &ctx.def, ctx.name())),
        Patch::Merge(p) | Patch::Strategic(p) | Patch::Apply { body: p, .. } => {
            let mut s = scale.clone();
            json_patch::merge(&mut s, p);
            Ok(s)
        }
    }
}

async fn patch(ctx: &RequestContext, body: PatchBody) -> Result<ObjectAnswer, ApiError> {
    let PatchBody { patch, duplicates } = body;
    let is_apply = matches!(patch, Patch::Apply { .. });
    let opts = ctx.write_options(is_apply)?;
    let objects = ctx.objects().with_duplicates(duplicates);
    if ctx.subresource() == Some("scale") {
        // Re-applied to the newer object when another writer (a status update, say) won the
        // race, unless the patch carries a resourceVersion: as for the object itself.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let old = objects.get(ctx.namespace(), ctx.name()).await?;
            let patched = patched_scale(ctx, &patch, &objects.scale_of(&old)?)?;
            match objects.write_scale(&old, &patched, &opts).await {
                Err(e)
                    if e.code == 409
                        && e.reason == "Conflict"
                        && attempts < objects::PATCH_ATTEMPTS
                        && !patch.has_precondition() =>
                {
                    continue;
                }
                Err(e) => return Err(e),
                Ok(w) => return written(ctx, w, StatusCode::OK),
            }
        }
    }
    if is_apply {
        let key = objects::object_key(&ctx.def, ctx.namespace(), ctx.name());
        if matches!(ctx.store.storage.get(&key).await, Ok(None)) {
            check_namespace(ctx).await?;
        }
    }
    let w = objects
        .patch(
            ctx.namespace(),
            ctx.name(),
            &patch,
            ctx.subresource(),
            &opts,
        )
        .await?;
    let status = if w.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    written(ctx, w, status)
}

async fn delete(ctx: &RequestContext, options: DeleteOptions) -> Result<ObjectAnswer, ApiError> {
    if ctx.subresource().is_some() {
        return Err(ApiError::method_not_allowed(
            "DELETE is not allowed on a subresource",
        ));
    }
    let dry_run = ctx.info.options()?.delete.dry_run;
    let w = ctx
        .objects()
        .delete(ctx.namespace(), ctx.name(), &options, dry_run)
        .await?;
    let status = if w.deleted {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok(ObjectAnswer::new(Object::Stored(w.object), status))
}

async fn delete_collection(
    ctx: &RequestContext,
    options: DeleteOptions,
) -> Result<ListAnswer, ApiError> {
    let dry_run = ctx.info.options()?.delete.dry_run;
    let selection = Selection::from_options(&ctx.def, ctx.list_options()?)?;
    let prefix = objects::collection_prefix(&ctx.def, ctx.namespace());
    let listed = ctx
        .store
        .storage
        .list(&prefix, &Default::default())
        .await
        .map_err(objects::storage_failure)?;
    let mut deleted = Vec::new();
    for obj in listed.items.iter().filter(|o| selection.matches_object(o)) {
        let value = obj.value();
        let ns = objects::meta_str(&value, "namespace");
        let name = objects::meta_str(&value, "name").unwrap_or_default();
        match ctx.objects().delete(ns, name, &options, dry_run).await {
            Ok(w) => deleted.push(Object::Stored(w.object)),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ListAnswer {
        items: deleted,
        resource_version: ctx.store.storage.current_revision().await.to_string(),
        ..ListAnswer::default()
    })
}

#[async_trait::async_trait]
impl RestStorage for GenericStore {
    async fn get(&self, ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
        get(ctx).await
    }
    async fn list(&self, ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
        list(ctx).await
    }
    async fn watch(&self, ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
        crate::watch::watch(ctx).await
    }
    async fn create(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        create(ctx, body).await
    }
    async fn update(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        update(ctx, body).await
    }
    async fn patch(&self, ctx: &RequestContext, body: PatchBody) -> Result<ObjectAnswer, ApiError> {
        patch(ctx, body).await
    }
    async fn delete(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ObjectAnswer, ApiError> {
        delete(ctx, options).await
    }
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        options: DeleteOptions,
    ) -> Result<ListAnswer, ApiError> {
        delete_collection(ctx, options).await
    }
}
