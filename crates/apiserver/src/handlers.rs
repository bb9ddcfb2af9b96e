//! The HTTP side of the REST verbs, for every storage: bodies read and decoded (JSON, YAML,
//! protobuf; patches by their content type; DeleteOptions), the storage's verb called, and
//! its answer encoded in the representation the client negotiated (objects as stored bytes,
//! lists concatenated from them, Tables from the printers, watch events one JSON line each).
//! The encoders are public for handlers that answer outside the resource routes (the search
//! proxy).

use std::sync::Arc;

use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use flotilla_apimachinery::decode;
use flotilla_apimachinery::nesting::{self, MAX_NESTING_DEPTH};
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_storage::StoredObject;
use futures::StreamExt;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::response::{
    Format, add_warnings, error_response, json_bytes, json_list, json_value, negotiate,
};
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::{RequestContext, StoreContext};
use flotilla_generic_store::objects::{self, DeleteOptions, Patch};
use flotilla_generic_store::request::{FieldValidation, RequestInfo, ResourcePath, Verb};
use flotilla_generic_store::rest::{
    ListAnswer, NewObject, Object, ObjectAnswer, PatchBody, RestStorage, WatchAnswer, WatchEvent,
};
use flotilla_generic_store::strict::Duplicates;
use flotilla_generic_store::table::{self, IncludeObject};

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
    match content_type(&ctx.headers).as_str() {
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

/// Decodes a PATCH body by its content type.
pub fn decode_patch(ctx: &RequestContext, body: &Bytes) -> Result<PatchBody, ApiError> {
    let content_type = content_type(&ctx.headers);
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
    Ok(PatchBody { patch, duplicates })
}

pub fn parse_delete_options(ctx: &RequestContext, body: &Bytes) -> Result<DeleteOptions, ApiError> {
    let body_value = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else if content_type(&ctx.headers) == flotilla_protobuf::CONTENT_TYPE {
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

/// Decodes a create or update body.
pub fn decode_new_object(ctx: &RequestContext, body: &Bytes) -> Result<NewObject, ApiError> {
    let (value, duplicates) = decode_body(ctx, body)?;
    Ok(NewObject { value, duplicates })
}

/// Serves `verb` of `storage` for `ctx`: the body decoded, the verb called, its answer encoded.
pub async fn serve(
    storage: &dyn RestStorage,
    ctx: &RequestContext,
    verb: Verb,
    body: &Bytes,
) -> Result<Response, ApiError> {
    // Only a Table asks the storage for its printer (a GET of JSON is the hot path).
    let table_resource = |format: Format| match format {
        Format::Table => storage.table_resource(ctx),
        Format::Json => ctx.def.clone(),
    };
    match verb {
        Verb::Get => {
            let format = negotiate(&ctx.headers)?;
            let answer = storage.get(ctx).await?;
            Ok(object_response(
                ctx,
                &table_resource(format),
                format,
                answer,
            ))
        }
        Verb::List => {
            let format = negotiate(&ctx.headers)?;
            let answer = storage.list(ctx).await?;
            Ok(list_response(
                &ctx.def,
                &table_resource(format),
                format,
                ctx.include_object(),
                answer,
            )
            .await)
        }
        Verb::Watch => {
            let format = negotiate(&ctx.headers)?;
            let answer = storage.watch(ctx).await?;
            Ok(watch_response(
                &ctx.def,
                table_resource(format),
                format,
                ctx.include_object(),
                answer,
            ))
        }
        Verb::Create => {
            let body = decode_new_object(ctx, body)?;
            let answer = storage.create(ctx, body).await?;
            Ok(object_response(ctx, &ctx.def, Format::Json, answer))
        }
        Verb::Update => {
            let body = decode_new_object(ctx, body)?;
            let answer = storage.update(ctx, body).await?;
            Ok(object_response(ctx, &ctx.def, Format::Json, answer))
        }
        Verb::Patch => {
            let body = decode_patch(ctx, body)?;
            let answer = storage.patch(ctx, body).await?;
            Ok(object_response(ctx, &ctx.def, Format::Json, answer))
        }
        Verb::Delete => {
            let options = parse_delete_options(ctx, body)?;
            let answer = storage.delete(ctx, options).await?;
            Ok(object_response(ctx, &ctx.def, Format::Json, answer))
        }
        Verb::DeleteCollection => {
            let options = parse_delete_options(ctx, body)?;
            let answer = storage.delete_collection(ctx, options).await?;
            Ok(list_response(
                &ctx.def,
                &ctx.def,
                Format::Json,
                IncludeObject::Metadata,
                answer,
            )
            .await)
        }
        Verb::Post | Verb::Put | Verb::Unknown => Err(ApiError::method_not_allowed(
            "the server does not allow this method on the requested resource",
        )),
    }
}

/// An object's bytes at `def`'s version.
pub fn object_bytes(def: &ResourceDef, object: &Object) -> Bytes {
    match object {
        Object::Stored(o) => objects::served_bytes(def, o),
        Object::Built(v) => Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
    }
}

/// Encodes one object: as itself, or as a one-row Table of `table_resource`'s printer.
pub fn object_response(
    ctx: &RequestContext,
    table_resource: &ResourceDef,
    format: Format,
    answer: ObjectAnswer,
) -> Response {
    encode_object(
        &ctx.def,
        table_resource,
        format,
        ctx.include_object(),
        answer,
    )
}

/// [`object_response`] without a request context.
pub fn encode_object(
    def: &ResourceDef,
    table_resource: &ResourceDef,
    format: Format,
    include: IncludeObject,
    answer: ObjectAnswer,
) -> Response {
    let mut resp = match format {
        Format::Table if answer.printable => {
            let fields = answer.object.fields();
            let t = table::table(
                table_resource,
                std::iter::once(&*fields),
                answer.object.resource_version(),
                None,
                include,
            );
            json_value(answer.status, &t)
        }
        _ => json_bytes(answer.status, object_bytes(def, &answer.object)),
    };
    add_warnings(&mut resp, &answer.warnings);
    resp
}

/// Lists with at least this many rows have their Table built off the async runtime.
const TABLE_ROWS_OFF_RUNTIME: usize = 500;

/// Encodes a list page as the kind's List (stored objects' bytes concatenated, converted when
/// the served version differs) or as a Table of `table_resource`'s printer.
pub async fn list_response(
    def: &ResourceDef,
    table_resource: &Arc<ResourceDef>,
    format: Format,
    include: IncludeObject,
    answer: ListAnswer,
) -> Response {
    let ListAnswer {
        items,
        resource_version,
        continue_token,
        remaining,
        warnings,
    } = answer;
    let mut resp = match format {
        Format::Table => {
            let table_resource = Arc::clone(table_resource);
            let build = move |items: &[Object]| -> Bytes {
                let stored: Option<Vec<&Arc<StoredObject>>> = items
                    .iter()
                    .map(|o| match o {
                        Object::Stored(s) => Some(s),
                        Object::Built(_) => None,
                    })
                    .collect();
                match stored {
                    Some(stored) => table::table_bytes(
                        &table_resource,
                        &stored,
                        Some(resource_version),
                        continue_token,
                        include,
                    ),
                    None => {
                        let fields: Vec<_> = items.iter().map(Object::fields).collect();
                        let t = table::table(
                            &table_resource,
                            fields.iter().map(|f| &**f),
                            Some(resource_version),
                            continue_token,
                            include,
                        );
                        Bytes::from(serde_json::to_vec(&t).unwrap_or_default())
                    }
                }
            };
            if items.len() < TABLE_ROWS_OFF_RUNTIME {
                json_bytes(StatusCode::OK, build(&items))
            } else {
                // Thousands of rows are tens to hundreds of milliseconds of CPU: built on a
                // blocking thread, so this runtime's other requests (health checks among them)
                // go on.
                match tokio::task::spawn_blocking(move || build(&items)).await {
                    Ok(t) => json_bytes(StatusCode::OK, t),
                    Err(e) => {
                        error_response(&ApiError::internal(format!("building the Table: {e}")))
                    }
                }
            }
        }
        Format::Json => {
            let mut metadata = json!({"resourceVersion": resource_version});
            if let Some(c) = continue_token {
                metadata["continue"] = json!(c);
                metadata["remainingItemCount"] = json!(remaining);
            }
            let head = format!(
                "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{},\"items\":[",
                Value::String(def.list_kind.clone()),
                Value::String(def.api_version()),
                metadata
            );
            let items: Vec<Bytes> = items.iter().map(|o| object_bytes(def, o)).collect();
            json_list(Bytes::from(head), items)
        }
    };
    add_warnings(&mut resp, &warnings);
    resp
}

/// One watch event as its JSON line.
fn event_line(
    def: &ResourceDef,
    table_resource: &ResourceDef,
    format: Format,
    include: IncludeObject,
    event: &WatchEvent,
) -> Bytes {
    let object = match event {
        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => o,
        WatchEvent::Bookmark {
            resource_version,
            initial_events_end,
        } => {
            let mut metadata = json!({"resourceVersion": resource_version});
            if *initial_events_end {
                metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            let obj =
                json!({"kind": def.kind, "apiVersion": def.api_version(), "metadata": metadata});
            return line(&json!({"type": "BOOKMARK", "object": obj}));
        }
        WatchEvent::Error(e) => return line(&json!({"type": "ERROR", "object": e.to_status()})),
    };
    let bytes = match format {
        Format::Json => object_bytes(def, object),
        Format::Table => {
            let fields = object.fields();
            let t = table::table(
                table_resource,
                std::iter::once(&*fields),
                object.resource_version(),
                None,
                include,
            );
            Bytes::from(serde_json::to_vec(&t).unwrap_or_default())
        }
    };
    let kind = event.type_name();
    let mut buf = BytesMut::with_capacity(bytes.len() + 32);
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(kind.as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(&bytes);
    buf.put_slice(b"}\n");
    buf.freeze()
}

fn line(v: &Value) -> Bytes {
    let mut s = v.to_string();
    s.push('\n');
    Bytes::from(s)
}

/// Encodes a watch: a chunked stream of one JSON event per line, for as long as the
/// storage's events last or the client stays.
pub fn watch_response(
    def: &Arc<ResourceDef>,
    table_resource: Arc<ResourceDef>,
    format: Format,
    include: IncludeObject,
    answer: WatchAnswer,
) -> Response {
    let def = Arc::clone(def);
    let lines = answer.events.map(move |event| {
        Ok::<_, std::convert::Infallible>(event_line(
            &def,
            &table_resource,
            format,
            include,
            &event,
        ))
    });
    let mut resp = Response::new(axum::body::Body::from_stream(lines));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    add_warnings(&mut resp, &answer.warnings);
    resp
}

/// The media type of a request's body (its `Content-Type` without parameters, lowercased).
fn content_type(headers: &http::HeaderMap) -> String {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|s| {
            s.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default()
}
