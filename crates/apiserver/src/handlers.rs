//! The generic store's verbs at the HTTP layer ([`GenericStore`]'s
//! [`RestStorage`] implementation): they decode bodies, call [`Objects`] with the
//! request's parsed options and encode the answer (objects as stored bytes, lists
//! concatenated from them, Tables). The list encoder is public for other storages.

use std::sync::Arc;

use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use flotilla_apimachinery::decode;
use flotilla_apimachinery::nesting::{self, MAX_NESTING_DEPTH};
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_storage::StoredObject;
use http::{HeaderMap, StatusCode, header};
use serde_json::{Value, json};

use crate::auth::UserInfo;
use crate::context::{RequestContext, StoreContext};
use crate::filter::Selection;
use crate::objects::{self, DeleteOptions, Patch, Written};
use crate::request::{FieldValidation, RequestInfo, ResourcePath, ResourceVersion};
use crate::response::{
    Format, add_warnings, error_response, json_bytes, json_list, json_value, negotiate,
};
use crate::rest::{GenericStore, RestStorage};
use crate::strict::Duplicates;
use crate::table::{self};

/// The most operations one JSON patch may hold (kube-apiserver's limit; more get 413).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Reads a request body up to the server's limit (kube-apiserver: 3 MiB). A body over it is
/// answered 413 as kube-apiserver words it, without being read when its declared length is
/// already too long; the connection reads the rest before the answer goes out and then
/// closes (see [`crate::serve`]), so a client still writing its body gets the answer.
pub async fn read_body(
    limit: usize,
    headers: &HeaderMap,
    body: axum::body::Body,
) -> Result<Bytes, ApiError> {
    use http_body_util::BodyExt;
    let too_large = || ApiError::too_large(format!("Request entity too large: limit is {limit}"));
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(ApiError::bad_request(format!(
            "reading the request body: {e}"
        ))),
    }
}

/// A POST to a create-only subresource served by a custom handler (`pods/binding`,
/// `serviceaccounts/token`): other methods and deeper paths refused as the generic verbs
/// refuse them, the body read, and the request's context.
pub async fn post_to_subresource(
    store: &Arc<StoreContext>,
    def: &Arc<ResourceDef>,
    path: &ResourcePath,
    req: axum::extract::Request,
    user: &UserInfo,
) -> Result<(RequestContext, Bytes), ApiError> {
    if req.method() != http::Method::POST {
        return Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        ));
    }
    if path.sub_path.is_some() {
        return Err(ApiError::path_not_found());
    }
    let (parts, body) = req.into_parts();
    let info = match parts.extensions.get::<Arc<RequestInfo>>() {
        Some(info) => info.clone(),
        None => Arc::new(RequestInfo::parse(
            &parts.method,
            &parts.uri,
            &parts.headers,
        )),
    };
    let body = read_body(store.max_body_bytes, &parts.headers, body).await?;
    let ctx = RequestContext {
        store: store.clone(),
        def: def.clone(),
        path: path.clone(),
        info,
        headers: parts.headers,
        user: user.clone(),
    };
    Ok((ctx, body))
}

/// Decodes a create/update body (JSON, YAML or protobuf), refusing one nested deeper than
/// [`MAX_NESTING_DEPTH`] before anything else looks at it; also returns the keys it repeats.
pub(crate) fn decode_body(
    ctx: &RequestContext,
    body: &Bytes,
) -> Result<(Value, Duplicates), ApiError> {
    match ctx.content_type().as_str() {
        "application/json" | "" => decode_json(body),
        "application/yaml" => decode_yaml(body),
        // kubectl 1.32+ sends typed objects (create namespace, create deployment, ...) as protobuf.
        flotilla_protobuf::CONTENT_TYPE => {
            let v = flotilla_protobuf::decode_object(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the body of the request could not be decoded as protobuf: {e}"
                ))
            })?;
            // Embedded JSON (RawExtension, FieldsV1) can nest below the message's own fields.
            check_value_depth(&v, "protobuf")?;
            Ok((v, Duplicates::None))
        }
        other => Err(ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {other})"
        ))),
    }
}

fn too_deep(format: &str) -> ApiError {
    ApiError::bad_request(format!(
        "the body of the request could not be decoded as {format}: it nests arrays and objects deeper than the limit of {MAX_NESTING_DEPTH} levels"
    ))
}

/// Refuses JSON text nested past the limit, from its bytes, before it is parsed.
fn check_json_depth(body: &[u8]) -> Result<(), ApiError> {
    if nesting::json_exceeds(body, MAX_NESTING_DEPTH) {
        return Err(too_deep("JSON"));
    }
    Ok(())
}

fn check_value_depth(v: &Value, format: &str) -> Result<(), ApiError> {
    if nesting::value_depth(v) > MAX_NESTING_DEPTH {
        return Err(too_deep(format));
    }
    Ok(())
}

/// Parses a JSON body of any shape, depth checked first, noting the keys it repeats.
fn parse_json(body: &[u8]) -> Result<decode::Decoded, ApiError> {
    check_json_depth(body)?;
    decode::json_from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the body of the request could not be decoded as JSON: {e}"
        ))
    })
}

fn decode_json(body: &Bytes) -> Result<(Value, Duplicates), ApiError> {
    let decoded = parse_json(body)?;
    if !decoded.value.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    Ok((decoded.value, Duplicates::json(decoded.duplicates)))
}

fn decode_yaml(body: &Bytes) -> Result<(Value, Duplicates), ApiError> {
    // The YAML parser stops at 128 levels itself; the limit is checked on what it built,
    // before anything walks it. (YAML text is not byte-scanned: brackets in plain scalars
    // would count.)
    let decoded = decode::decode(serde_norway::Deserializer::from_slice(body))
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    check_value_depth(&decoded.value, "YAML")?;
    if !decoded.value.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a YAML or JSON object",
        ));
    }
    let duplicates = Duplicates::yaml(body, decoded.duplicates);
    Ok((decoded.value, duplicates))
}

fn object_response(def: &ResourceDef, status: StatusCode, obj: &StoredObject) -> Response {
    json_bytes(status, objects::served_bytes(def, obj))
}

fn written_response(
    ctx: &RequestContext,
    w: &Written,
    status: StatusCode,
) -> Result<Response, ApiError> {
    let mut resp = if ctx.subresource() == Some("scale") {
        json_value(status, &ctx.objects().scale_of(&w.object)?)
    } else {
        object_response(&ctx.def, status, &w.object)
    };
    add_warnings(&mut resp, &w.warnings);
    Ok(resp)
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

pub async fn get(ctx: &RequestContext) -> Result<Response, ApiError> {
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
        return Ok(json_value(StatusCode::OK, &ctx.objects().scale_of(&obj)?));
    }
    match negotiate(&ctx.headers)? {
        Format::Json => Ok(object_response(&ctx.def, StatusCode::OK, &obj)),
        Format::Table => {
            let t = table::table(
                &ctx.def,
                std::iter::once(obj.value().as_ref()),
                Some(obj.revision.to_string()),
                None,
                ctx.include_object(),
            );
            Ok(json_value(StatusCode::OK, &t))
        }
    }
}

/// A read at a revision the storage no longer has (410) or has not reached (504), in
/// kube-apiserver's words; any other storage failure as every read answers it.
fn revision_failure(e: flotilla_storage::StorageError) -> ApiError {
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

pub async fn list(ctx: &RequestContext) -> Result<Response, ApiError> {
    let format = negotiate(&ctx.headers)?;
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
    let mut items: Vec<&Arc<StoredObject>> = Vec::new();
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
        items.push(obj);
    }
    let continue_token = match items.last() {
        Some(last) if remaining > 0 => Some(encode_continue(listed.revision, &last.key)),
        _ => None,
    };
    let page = ListPage {
        resource_version: ResourceVersion::from(listed.revision),
        continue_token,
        remaining,
    };
    Ok(list_response(ctx, format, &items, page).await)
}

/// Lists with at least this many rows have their Table built off the async runtime.
const TABLE_ROWS_OFF_RUNTIME: usize = 500;

/// Where a list page stands: its version and, when more follow, how to get them.
#[derive(Debug, Clone)]
pub struct ListPage {
    pub resource_version: ResourceVersion,
    pub continue_token: Option<String>,
    pub remaining: usize,
}

/// Encodes a list of stored objects as the kind's List (their stored bytes concatenated,
/// converted when the served version differs) or as a Table.
pub async fn list_response(
    ctx: &RequestContext,
    format: Format,
    items: &[&Arc<StoredObject>],
    page: ListPage,
) -> Response {
    let rv = page.resource_version.to_string();
    match format {
        Format::Table => {
            let (def, include) = (Arc::clone(&ctx.def), ctx.include_object());
            let build = move |items: &[&Arc<StoredObject>]| {
                table::table_bytes(&def, items, Some(rv), page.continue_token, include)
            };
            if items.len() < TABLE_ROWS_OFF_RUNTIME {
                return json_bytes(StatusCode::OK, build(items));
            }
            // Thousands of rows are tens to hundreds of milliseconds of CPU: built on a
            // blocking thread, so this runtime's other requests (health checks among them)
            // go on.
            let owned: Vec<Arc<StoredObject>> = items.iter().map(|o| Arc::clone(o)).collect();
            match tokio::task::spawn_blocking(move || {
                let refs: Vec<&Arc<StoredObject>> = owned.iter().collect();
                build(&refs)
            })
            .await
            {
                Ok(t) => json_bytes(StatusCode::OK, t),
                Err(e) => error_response(&ApiError::internal(format!("building the Table: {e}"))),
            }
        }
        Format::Json => {
            let mut metadata = json!({"resourceVersion": rv});
            if let Some(c) = page.continue_token {
                metadata["continue"] = json!(c);
                metadata["remainingItemCount"] = json!(page.remaining);
            }
            let head = format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
                Value::String(ctx.def.list_kind.clone()),
                Value::String(ctx.def.api_version()),
                metadata
            );
            let items: Vec<Bytes> = items
                .iter()
                .map(|o| objects::served_bytes(&ctx.def, o))
                .collect();
            json_list(Bytes::from(head), items)
        }
    }
}

pub async fn create(ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
    if ctx.path.name.is_some() || ctx.subresource().is_some() {
        return Err(ApiError::method_not_allowed(
            "POST is only allowed on collections",
        ));
    }
    let (obj, duplicates) = decode_body(ctx, body)?;
    let opts = ctx.write_options(false)?;
    check_namespace(ctx).await?;
    let w = ctx
        .objects()
        .with_duplicates(duplicates)
        .create(ctx.namespace(), obj, &opts)
        .await?;
    written_response(ctx, &w, StatusCode::CREATED)
}

pub async fn update(ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
    let (obj, duplicates) = decode_body(ctx, body)?;
    let opts = ctx.write_options(false)?;
    let objects = ctx.objects().with_duplicates(duplicates);
    if ctx.subresource() == Some("scale") {
        let old = objects.get(ctx.namespace(), ctx.name()).await?;
        let w = objects.write_scale(&old, &obj, &opts).await?;
        return written_response(ctx, &w, StatusCode::OK);
    }
    let w = objects
        .update(ctx.namespace(), ctx.name(), obj, ctx.subresource(), &opts)
        .await?;
    written_response(ctx, &w, StatusCode::OK)
}

pub async fn patch(ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
    let content_type = ctx.content_type();
    let (patch, duplicates) = match content_type.as_str() {
        "application/json-patch+json" => {
            let decoded = parse_json(body)?;
            let v = decoded.value;
            let Some(ops) = v.as_array() else {
                return Err(ApiError::bad_request(
                    "a JSON patch must be an array of operations",
                ));
            };
            // kube-apiserver's bound on the work one JSON patch can ask for.
            if ops.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::too_large(format!(
                    "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.len()
                )));
            }
            (Patch::Json(v), Duplicates::json_patch(decoded.duplicates))
        }
        "application/merge-patch+json" => {
            let (v, duplicates) = decode_json(body)?;
            (Patch::Merge(v), duplicates)
        }
        "application/strategic-merge-patch+json" => {
            if !ctx.def.strategic_merge {
                return Err(ApiError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (strategic merge patch is not supported for {})",
                    flotilla_apimachinery::status::qualified_resource(
                        &ctx.def.group,
                        &ctx.def.plural
                    )
                )));
            }
            let (v, duplicates) = decode_json(body)?;
            (Patch::Strategic(v), duplicates)
        }
        "application/apply-patch+yaml" => {
            let (v, duplicates) = decode_yaml(body)?;
            let query = ctx.write_query()?;
            // kube-apiserver checks an apply patch on its own, in the YAML decoder's words.
            if query.field_validation == FieldValidation::Strict {
                if let Some(e) = duplicates.yaml_decoder_error() {
                    return Err(ApiError::bad_request(format!(
                        "error strict decoding YAML: error converting YAML to JSON: {e}"
                    )));
                }
            }
            (
                Patch::Apply {
                    body: v,
                    force: query.force,
                },
                duplicates,
            )
        }
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json (got {other:?})"
            )));
        }
    };
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
            let scale = objects.scale_of(&old)?;
            let patched = match &patch {
                Patch::Json(ops) => {
                    let ops: json_patch::Patch = serde_json::from_value(ops.clone())
                        .map_err(|e| ApiError::bad_request(e.to_string()))?;
                    let mut s = scale.clone();
                    json_patch::patch(&mut s, &ops)
                        .map_err(|e| ApiError::new(422, "Invalid", e.to_string()))?;
                    s
                }
                Patch::Merge(p) | Patch::Strategic(p) => {
                    let mut s = scale.clone();
                    json_patch::merge(&mut s, p);
                    s
                }
                Patch::Apply { body, .. } => {
                    let mut s = scale.clone();
                    json_patch::merge(&mut s, body);
                    s
                }
            };
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
                Ok(w) => return written_response(ctx, &w, StatusCode::OK),
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
    written_response(
        ctx,
        &w,
        if w.created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        },
    )
}

pub(crate) fn parse_delete_options(
    ctx: &RequestContext,
    body: &Bytes,
) -> Result<DeleteOptions, ApiError> {
    let body_value = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else if ctx.content_type() == flotilla_protobuf::CONTENT_TYPE {
        Some(
            flotilla_protobuf::decode_object(body)
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?,
        )
    } else {
        check_json_depth(body)?;
        Some(
            serde_json::from_slice::<Value>(body)
                .map_err(|e| ApiError::bad_request(format!("invalid DeleteOptions: {e}")))?,
        )
    };
    let query = &ctx.info.options()?.delete;
    DeleteOptions::parse(body_value.as_ref(), query.propagation_policy.as_deref())
}

pub async fn delete(ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
    if ctx.subresource().is_some() {
        return Err(ApiError::method_not_allowed(
            "DELETE is not allowed on a subresource",
        ));
    }
    let options = parse_delete_options(ctx, body)?;
    let dry_run = ctx.info.options()?.delete.dry_run;
    let w = ctx
        .objects()
        .delete(ctx.namespace(), ctx.name(), &options, dry_run)
        .await?;
    Ok(object_response(
        &ctx.def,
        if w.deleted {
            StatusCode::OK
        } else {
            StatusCode::ACCEPTED
        },
        &w.object,
    ))
}

pub async fn delete_collection(ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
    let options = parse_delete_options(ctx, body)?;
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
            Ok(w) => deleted.push(objects::to_served(&ctx.def, &w.object.value())),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(json_value(
        StatusCode::OK,
        &json!({
            "kind": ctx.def.list_kind,
            "apiVersion": ctx.def.api_version(),
            "metadata": {"resourceVersion": ctx.store.storage.current_revision().await.to_string()},
            "items": deleted,
        }),
    ))
}

#[async_trait::async_trait]
impl RestStorage for GenericStore {
    async fn get(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        get(ctx).await
    }
    async fn list(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        list(ctx).await
    }
    async fn watch(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        crate::watch::watch(ctx).await
    }
    async fn create(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        create(ctx, body).await
    }
    async fn update(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        update(ctx, body).await
    }
    async fn patch(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        patch(ctx, body).await
    }
    async fn delete(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        delete(ctx, body).await
    }
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        body: &Bytes,
    ) -> Result<Response, ApiError> {
        delete_collection(ctx, body).await
    }
}
