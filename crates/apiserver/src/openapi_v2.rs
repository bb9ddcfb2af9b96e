//! OpenAPI v2 (Swagger 2.0) at `/openapi/v2` (and the pre-1.10 `/swagger-2.0.0.pb-v1`): one
//! document for every served resource, which kubectl up to 1.27 downloads as protobuf before
//! `apply`, `create -f`, `edit` and `explain`.
//!
//! The document holds every kind's schemas as `definitions` (converted from the same OpenAPI v3
//! component schemas `/openapi/v3` serves), each kind's root tagged with
//! `x-kubernetes-group-version-kind`, and paths whose PATCH operations carry the GVK and a
//! `fieldValidation` parameter (so kubectl leaves validation to the server, as with v3).
//!
//! Unlike v3 clients, kubectl 1.27 computes `apply`'s strategic merge patch from these
//! definitions whenever it finds the kind in them, so the list fields of the built-in types
//! carry their `x-kubernetes-patch-strategy`/`x-kubernetes-patch-merge-key` (the facts of
//! shared/MERGE-KEYS.md); without them every list would be patched as "replace", which the
//! server's keyed merge would not honour (a removed container would stay).
//!
//! Served as JSON, or as gnostic's `openapi.v2.Document` protobuf when asked for. Both are
//! built once per registry generation.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::{ApiError, ResourceDef};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::registry::Registry;
use crate::response::error_response;

/// What kube-apiserver answers protobuf requests with (for both spellings kubectl may ask for:
/// the `@` one is not a valid media type to Go's parser, so it never comes back).
pub const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The spelling kubectl asks for.
const PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const JSON: &str = "application/json";
/// The path servers before Kubernetes 1.10 used; always protobuf.
pub const LEGACY_PATH: &str = "/swagger-2.0.0.pb-v1";

const PATCH_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";

/// The document built for one registry generation.
#[derive(Default)]
pub struct OpenApiV2Cache {
    inner: Mutex<Option<(u64, Arc<Built>)>>,
}

struct Built {
    json: Bytes,
    /// An encoding failure is kept and reported (500) rather than retried per request: the
    /// same registry generation would fail the same way.
    protobuf: Result<Bytes, String>,
    etag: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Repr {
    Json,
    Protobuf,
}

/// Serves `GET /openapi/v2` or [`LEGACY_PATH`].
pub fn serve(
    cache: &OpenApiV2Cache,
    registry: &Registry,
    git_version: &str,
    path: &str,
    headers: &HeaderMap,
) -> Response {
    let repr = if path == LEGACY_PATH {
        Repr::Protobuf
    } else {
        match negotiate(headers) {
            Some(r) => r,
            None => {
                return error_response(&ApiError::not_acceptable(format!(
                    "only the following media types are accepted: {JSON}, {PROTOBUF}"
                )));
            }
        }
    };
    let built = cached(cache, registry, git_version);
    let (body, content_type) = match repr {
        Repr::Json => (built.json.clone(), JSON),
        Repr::Protobuf => match &built.protobuf {
            Ok(b) => (b.clone(), PROTOBUF),
            Err(e) => {
                return error_response(&ApiError::internal(format!(
                    "cannot encode the OpenAPI v2 document: {e}"
                )));
            }
        },
    };
    let etag = format!("\"{}\"", built.etag);
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut resp = if not_modified {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        Response::new(Body::from(body))
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    resp
}

fn cached(cache: &OpenApiV2Cache, registry: &Registry, git_version: &str) -> Arc<Built> {
    let generation = registry.generation();
    if let Some((g, b)) = &*cache.inner.lock()
        && *g == generation
    {
        return b.clone();
    }
    // Built outside the lock: a few hundred milliseconds for all built-in kinds, and a
    // concurrent request merely builds the same thing.
    let built = Arc::new(build(&registry.all(), git_version));
    *cache.inner.lock() = Some((generation, built.clone()));
    built
}

fn build(defs: &[Arc<ResourceDef>], version: &str) -> Built {
    let doc = document(defs, version);
    let json = Bytes::from(doc.to_string());
    let protobuf = flotilla_openapiv2::encode_document(&doc)
        .map(Bytes::from)
        .map_err(|e| e.to_string());
    let mut h = DefaultHasher::new();
    json.hash(&mut h);
    Built {
        json,
        protobuf,
        etag: format!("{:016X}", h.finish()),
    }
}

/// Picks the representation from `Accept` (highest `q` first; `*/*` means JSON). `None` when
/// nothing acceptable is offered.
fn negotiate(headers: &HeaderMap) -> Option<Repr> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Some(Repr::Json);
    };
    let mut clauses: Vec<(f32, String)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';').map(str::trim);
            let media = parts.next()?.to_ascii_lowercase();
            let q = parts
                .filter_map(|p| p.strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            (!media.is_empty() && q > 0.0).then_some((q, media))
        })
        .collect();
    if clauses.is_empty() {
        return Some(Repr::Json);
    }
    // Stable: equal weights keep the client's order.
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0));
    clauses.iter().find_map(|(_, media)| match media.as_str() {
        JSON | "application/*" | "*/*" => Some(Repr::Json),
        PROTOBUF | PROTOBUF_DEPRECATED => Some(Repr::Protobuf),
        _ => None,
    })
}

/// The Swagger 2.0 document (JSON) for these resources.
pub fn document(defs: &[Arc<ResourceDef>], version: &str) -> Value {
    let mut definitions = Map::new();
    definitions.insert(
        PATCH_SCHEMA.into(),
        json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}),
    );
    let mut paths = Map::new();
    for def in defs {
        let root = def.openapi_root_schema();
        match &def.openapi {
            Some(s) => {
                for (name, schema) in &s.components {
                    if !definitions.contains_key(name) {
                        definitions
                            .insert(name.clone(), flotilla_openapiv2::schema_from_v3(schema));
                    }
                }
            }
            None => {
                definitions.entry(root.clone()).or_insert_with(
                    || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
            }
        }
        tag_kind(&mut definitions, &root, def);
        resource_paths(&mut paths, def, &root);
    }
    add_patch_strategies(&mut definitions);
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "definitions": definitions,
    })
}

/// Adds this resource's GVK to its root definition's `x-kubernetes-group-version-kind` list
/// (what `kubectl explain` and `apply` look kinds up by).
fn tag_kind(definitions: &mut Map<String, Value>, root: &str, def: &ResourceDef) {
    let Some(Value::Object(schema)) = definitions.get_mut(root) else {
        return;
    };
    let gvk = def.openapi_gvk();
    let list = schema
        .entry("x-kubernetes-group-version-kind")
        .or_insert_with(|| json!([]));
    if !list.is_array() {
        *list = json!([]);
    }
    if let Some(items) = list.as_array_mut()
        && !items.contains(&gvk)
    {
        items.push(gvk);
    }
}

fn query_param(name: &str, kind: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "type": kind, "uniqueItems": true, "description": description})
}

fn path_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "path", "required": true, "type": "string", "uniqueItems": true, "description": description})
}

fn body_param(schema: &str) -> Value {
    json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": format!("#/definitions/{schema}")}})
}

fn write_params() -> Vec<Value> {
    vec![
        query_param(
            "dryRun",
            "string",
            "When present, indicates that modifications should not be persisted.",
        ),
        query_param(
            "fieldManager",
            "string",
            "fieldManager is a name associated with the actor or entity that is making these changes.",
        ),
        query_param(
            "fieldValidation",
            "string",
            "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn or Strict.",
        ),
    ]
}

/// `apps` -> `AppsV1`, `rbac.authorization.k8s.io` -> `RbacAuthorizationV1`, core -> `CoreV1`.
fn group_version_name(def: &ResourceDef) -> String {
    let group = if def.group.is_empty() {
        "core"
    } else {
        def.group.trim_end_matches(".k8s.io")
    };
    let mut out: String = group.split(['.', '-']).map(capitalize).collect();
    out.push_str(&capitalize(&def.version));
    out
}

fn capitalize(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn resource_paths(paths: &mut Map<String, Value>, def: &ResourceDef, root: &str) {
    let prefix = if def.group.is_empty() {
        format!("/api/{}", def.version)
    } else {
        format!("/apis/{}/{}", def.group, def.version)
    };
    let (base, scope_params, namespaced) = if def.namespaced {
        (
            format!("{prefix}/namespaces/{{namespace}}/{}", def.plural),
            vec![path_param(
                "namespace",
                "object name and auth scope, such as for teams and projects",
            )],
            "Namespaced",
        )
    } else {
        (format!("{prefix}/{}", def.plural), Vec::new(), "")
    };
    let gvk = def.openapi_gvk();
    let gv_name = group_version_name(def);
    let ok = |code: &str| {
        json!({code: {"description": "OK", "schema": {"$ref": format!("#/definitions/{root}")}},
               "401": {"description": "Unauthorized"}})
    };
    let op = |verb: &str, action: &str, suffix: &str, responses: Value| -> Map<String, Value> {
        let mut m = Map::new();
        m.insert(
            "operationId".into(),
            json!(format!("{verb}{gv_name}{namespaced}{}{suffix}", def.kind)),
        );
        m.insert("consumes".into(), json!(["*/*"]));
        m.insert("produces".into(), json!([JSON, "application/yaml"]));
        m.insert("schemes".into(), json!(["https"]));
        m.insert("responses".into(), responses);
        m.insert("x-kubernetes-action".into(), json!(action));
        m.insert("x-kubernetes-group-version-kind".into(), gvk.clone());
        m
    };
    let with_params = |mut m: Map<String, Value>, params: Vec<Value>| {
        m.insert("parameters".into(), Value::Array(params));
        Value::Object(m)
    };
    let mut patch_params = vec![body_param(PATCH_SCHEMA)];
    patch_params.extend(write_params());
    patch_params.push(query_param(
        "force",
        "boolean",
        "Force is going to \"force\" Apply requests.",
    ));
    let patch = |suffix: &str| {
        let mut m = op("patch", "patch", suffix, ok("200"));
        m.insert(
            "consumes".into(),
            json!([
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml"
            ]),
        );
        with_params(m, patch_params.clone())
    };
    let mut write = vec![body_param(root)];
    write.extend(write_params());

    let mut collection = Map::new();
    collection.insert("parameters".into(), Value::Array(scope_params.clone()));
    if !def.create_only {
        let list_params = vec![
            query_param(
                "labelSelector",
                "string",
                "A selector to restrict the list of returned objects by their labels.",
            ),
            query_param(
                "fieldSelector",
                "string",
                "A selector to restrict the list of returned objects by their fields.",
            ),
            query_param(
                "limit",
                "integer",
                "The maximum number of responses to return for a list call.",
            ),
            query_param(
                "continue",
                "string",
                "The continue option should be set when retrieving more results from the server.",
            ),
            query_param(
                "resourceVersion",
                "string",
                "Sets a constraint on what resource versions a request may be served from.",
            ),
            query_param(
                "watch",
                "boolean",
                "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications.",
            ),
        ];
        collection.insert(
            "get".into(),
            with_params(op("list", "list", "", ok("200")), list_params),
        );
    }
    collection.insert(
        "post".into(),
        with_params(op("create", "post", "", ok("201")), write.clone()),
    );
    paths.insert(base.clone(), Value::Object(collection));
    if def.create_only {
        return;
    }

    let mut item_params = vec![path_param("name", &format!("name of the {}", def.kind))];
    item_params.extend(scope_params);
    let item = |suffix: &str| {
        let mut m = Map::new();
        m.insert("parameters".into(), Value::Array(item_params.clone()));
        m.insert(
            "get".into(),
            Value::Object(op("read", "get", suffix, ok("200"))),
        );
        m.insert(
            "put".into(),
            with_params(op("replace", "put", suffix, ok("200")), write.clone()),
        );
        m.insert("patch".into(), patch(suffix));
        m
    };
    let mut main = item("");
    main.insert(
        "delete".into(),
        with_params(
            op("delete", "delete", "", ok("200")),
            vec![
                query_param("dryRun", "string", "When present, indicates that modifications should not be persisted."),
                query_param("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted."),
                query_param("propagationPolicy", "string", "Whether and how garbage collection will be performed: Orphan, Background or Foreground."),
            ],
        ),
    );
    let item_path = format!("{base}/{{name}}");
    paths.insert(item_path.clone(), Value::Object(main));
    if def.has_status {
        paths.insert(format!("{item_path}/status"), Value::Object(item("Status")));
    }
    for sub in &def.partial_subresources {
        let mut suffix = sub.name.clone();
        if let Some(first) = suffix.get_mut(0..1) {
            first.make_ascii_uppercase();
        }
        paths.insert(
            format!("{item_path}/{}", sub.name),
            Value::Object(item(&suffix)),
        );
    }
}

/// Strategic merge facts of the built-in types' list (and retainKeys) fields:
/// (definition, field, patch strategy, merge key).
const PATCH_STRATEGIES: &[(&str, &str, &str, &str)] = &[
    (
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.core.v1.Container",
        "ports",
        "merge",
        "containerPort",
    ),
    ("io.k8s.api.core.v1.Container", "env", "merge", "name"),
    (
        "io.k8s.api.core.v1.Container",
        "volumeMounts",
        "merge",
        "mountPath",
    ),
    (
        "io.k8s.api.core.v1.Container",
        "volumeDevices",
        "merge",
        "devicePath",
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "ports",
        "merge",
        "containerPort",
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "env",
        "merge",
        "name",
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "volumeMounts",
        "merge",
        "mountPath",
    ),
    (
        "io.k8s.api.core.v1.EphemeralContainer",
        "volumeDevices",
        "merge",
        "devicePath",
    ),
    (
        "io.k8s.api.core.v1.ContainerStatus",
        "volumeMounts",
        "merge",
        "mountPath",
    ),
    (
        "io.k8s.api.core.v1.ContainerStatus",
        "allocatedResourcesStatus",
        "merge",
        "name",
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "volumes",
        "merge,retainKeys",
        "name",
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "initContainers",
        "merge",
        "name",
    ),
    ("io.k8s.api.core.v1.PodSpec", "containers", "merge", "name"),
    (
        "io.k8s.api.core.v1.PodSpec",
        "ephemeralContainers",
        "merge",
        "name",
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "imagePullSecrets",
        "merge",
        "name",
    ),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", "merge", "ip"),
    (
        "io.k8s.api.core.v1.PodSpec",
        "topologySpreadConstraints",
        "merge",
        "topologyKey",
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "schedulingGates",
        "merge",
        "name",
    ),
    (
        "io.k8s.api.core.v1.PodSpec",
        "resourceClaims",
        "merge,retainKeys",
        "name",
    ),
    (
        "io.k8s.api.core.v1.PodStatus",
        "conditions",
        "merge",
        "type",
    ),
    ("io.k8s.api.core.v1.PodStatus", "hostIPs", "merge", "ip"),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", "merge", "ip"),
    (
        "io.k8s.api.core.v1.PodStatus",
        "resourceClaimStatuses",
        "merge,retainKeys",
        "name",
    ),
    (
        "io.k8s.api.core.v1.ReplicationControllerStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.core.v1.ServiceStatus",
        "conditions",
        "merge",
        "type",
    ),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", "merge", "port"),
    (
        "io.k8s.api.core.v1.ServiceAccount",
        "secrets",
        "merge",
        "name",
    ),
    ("io.k8s.api.core.v1.NodeSpec", "podCIDRs", "merge", ""),
    (
        "io.k8s.api.core.v1.NodeStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.core.v1.NodeStatus",
        "addresses",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.core.v1.NamespaceStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.core.v1.ComponentStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.apps.v1.StatefulSetStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        "strategy",
        "retainKeys",
        "",
    ),
    (
        "io.k8s.api.apps.v1.DeploymentStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.apps.v1.DaemonSetStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.apps.v1.ReplicaSetStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.api.batch.v1.JobStatus",
        "conditions",
        "merge",
        "type",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "ownerReferences",
        "merge",
        "uid",
    ),
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "finalizers",
        "merge",
        "",
    ),
];

/// Marks the built-in list fields in `definitions` with their patch strategy and merge key
/// (fields whose schema already says so are left alone).
fn add_patch_strategies(definitions: &mut Map<String, Value>) {
    for (definition, field, strategy, key) in PATCH_STRATEGIES {
        let Some(Value::Object(schema)) = definitions
            .get_mut(*definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(*field))
        else {
            continue;
        };
        schema
            .entry("x-kubernetes-patch-strategy")
            .or_insert_with(|| json!(strategy));
        if !key.is_empty() {
            schema
                .entry("x-kubernetes-patch-merge-key")
                .or_insert_with(|| json!(key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_apimachinery::resource::OpenApiSchemas;
    use flotilla_openapiv2::proto;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn negotiates_protobuf_json_and_refusal() {
        assert_eq!(negotiate(&HeaderMap::new()), Some(Repr::Json));
        assert_eq!(
            negotiate(&accept(PROTOBUF_DEPRECATED)),
            Some(Repr::Protobuf)
        );
        assert_eq!(negotiate(&accept(PROTOBUF)), Some(Repr::Protobuf));
        assert_eq!(negotiate(&accept("application/json")), Some(Repr::Json));
        assert_eq!(negotiate(&accept("*/*")), Some(Repr::Json));
        assert_eq!(
            negotiate(&accept(&format!("application/json;q=0.5, {PROTOBUF}"))),
            Some(Repr::Protobuf)
        );
        assert_eq!(
            negotiate(&accept(&format!("{PROTOBUF};q=0, application/json"))),
            Some(Repr::Json)
        );
        assert_eq!(
            negotiate(&accept("application/vnd.kubernetes.protobuf")),
            None
        );
    }

    fn custom_kind() -> Arc<ResourceDef> {
        let mut def = ResourceDef::new("example.com", "v1", "Widget", "widgets", true);
        def.has_status = true;
        let mut components = std::collections::BTreeMap::new();
        components.insert(
            "com.example.v1.Widget".to_string(),
            json!({"type": "object", "properties": {
                "spec": {"description": "The spec.", "allOf": [{"$ref": "#/components/schemas/com.example.v1.WidgetSpec"}]}
            }}),
        );
        components.insert(
            "com.example.v1.WidgetSpec".to_string(),
            json!({"type": "object", "properties": {"size": {"type": ["integer", "null"], "description": "How big."}}}),
        );
        def.openapi = Some(Arc::new(OpenApiSchemas {
            root: "com.example.v1.Widget".into(),
            components,
        }));
        Arc::new(def)
    }

    #[test]
    fn document_converts_schemas_and_tags_kinds() {
        let schemaless = Arc::new(ResourceDef::new("", "v1", "Thing", "things", false));
        let doc = document(&[custom_kind(), schemaless], "v1.33.0");
        let defs = &doc["definitions"];
        assert_eq!(
            defs["com.example.v1.Widget"]["properties"]["spec"],
            json!({"description": "The spec.", "$ref": "#/definitions/com.example.v1.WidgetSpec"})
        );
        assert_eq!(
            defs["com.example.v1.WidgetSpec"]["properties"]["size"]["type"],
            "integer"
        );
        assert_eq!(
            defs["com.example.v1.Widget"]["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
        );
        assert_eq!(
            defs[".v1.Thing"]["x-kubernetes-group-version-kind"],
            json!([{"group": "", "version": "v1", "kind": "Thing"}])
        );
        assert!(defs[PATCH_SCHEMA].is_object());

        let paths = doc["paths"].as_object().unwrap();
        let item = &paths["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"];
        let patch = &item["patch"];
        assert_eq!(patch["operationId"], "patchExampleComV1NamespacedWidget");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "example.com", "version": "v1", "kind": "Widget"})
        );
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["body", "dryRun", "fieldManager", "fieldValidation", "force"]
        );
        assert!(!patch["consumes"].to_string().contains("strategic"));
        assert_eq!(item["parameters"][1]["name"], "namespace");
        assert!(
            paths.contains_key("/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status")
        );
        assert_eq!(
            paths["/apis/example.com/v1/namespaces/{namespace}/widgets"]["post"]["parameters"][0]["schema"]
                ["$ref"],
            "#/definitions/com.example.v1.Widget"
        );
        assert!(paths.contains_key("/api/v1/things/{name}"));
        assert!(!paths.contains_key("/api/v1/things/{name}/status"));
    }

    #[test]
    fn create_only_resources_have_only_post() {
        let mut def = ResourceDef::new(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        );
        def.create_only = true;
        let doc = document(&[Arc::new(def)], "v");
        let paths = doc["paths"].as_object().unwrap();
        assert_eq!(paths.len(), 1);
        let collection = &paths["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"];
        assert!(collection["post"].is_object());
        assert!(collection.get("get").is_none());
        assert_eq!(
            collection["post"]["operationId"],
            "createAuthorizationV1SelfSubjectAccessReview"
        );
    }

    /// kubectl's Swagger 2.0 model parser (kube-openapi `proto`) refuses a whole document if
    /// any definition breaks one of these rules; this walks them over a schema.
    fn kubectl_parses(schema: &Value, defs: &Map<String, Value>, path: &str) -> Result<(), String> {
        let err = |m: &str| Err(format!("{path}: {m}"));
        if let Some(r) = schema.get("$ref") {
            let Some(name) = r.as_str().and_then(|r| r.strip_prefix("#/definitions/")) else {
                return err("reference outside #/definitions");
            };
            if !defs.contains_key(name) {
                return err("dangling reference");
            }
            if schema.get("type").is_some()
                || schema
                    .get("properties")
                    .is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty()))
            {
                return err("reference with a type or properties");
            }
            return Ok(());
        }
        let ty = match schema.get("type") {
            None => None,
            Some(Value::String(t)) => Some(t.as_str()),
            Some(_) => return err("type is not one string"),
        };
        let properties = schema.get("properties");
        match ty {
            None | Some("object") if properties.is_some() => {
                for (k, v) in properties.and_then(Value::as_object).ok_or("properties")? {
                    kubectl_parses(v, defs, &format!("{path}.{k}"))?;
                }
            }
            Some("object") => {
                if let Some(ap @ Value::Object(_)) = schema.get("additionalProperties") {
                    kubectl_parses(ap, defs, &format!("{path}[*]"))?;
                }
            }
            None => {}
            Some("array") => match schema.get("items") {
                Some(items @ Value::Object(_)) => {
                    kubectl_parses(items, defs, &format!("{path}[]"))?
                }
                _ => return err("array without exactly one item schema"),
            },
            Some("string" | "number" | "integer" | "boolean") => {}
            Some(other) => return err(&format!("unknown primitive type {other}")),
        }
        Ok(())
    }

    fn builtin_document() -> Value {
        let defs: Vec<Arc<ResourceDef>> = flotilla_kinds::builtin_resources()
            .into_iter()
            .chain(flotilla_kinds::extension_resources())
            .map(Arc::new)
            .collect();
        document(&defs, "v1.33.0")
    }

    #[test]
    fn builtin_kinds_parse_the_way_kubectl_parses() {
        let doc = builtin_document();
        let defs = doc["definitions"].as_object().unwrap();
        assert!(defs.len() > 100, "{}", defs.len());
        for (name, schema) in defs {
            kubectl_parses(schema, defs, name).unwrap();
        }
        let replicas = &defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["replicas"];
        assert!(
            replicas["description"]
                .as_str()
                .unwrap()
                .starts_with("Number of desired pods")
        );
        let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(
            defs["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]["x-kubernetes-patch-strategy"],
            "retainKeys"
        );
        assert_eq!(
            defs["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"]["finalizers"]["x-kubernetes-patch-strategy"],
            "merge"
        );
        // Where a fact's type is served, its field exists (so a renamed field cannot go
        // unnoticed), and all facts but ComponentStatus's apply (it is not served).
        let present = |d: &str| defs.contains_key(d);
        let missing: Vec<String> = PATCH_STRATEGIES
            .iter()
            .filter(|(d, f, _, _)| present(d) && defs[*d]["properties"].get(*f).is_none())
            .map(|(d, f, _, _)| format!("{d}.{f}"))
            .collect();
        assert!(
            PATCH_STRATEGIES.iter().filter(|(d, ..)| present(d)).count()
                >= PATCH_STRATEGIES.len() - 1
        );
        assert_eq!(missing, Vec::<String>::new());
    }

    /// Mirrors kubectl's check that the server validates fields: the first PATCH operation
    /// tagged with the GVK must list a `fieldValidation` query parameter.
    #[test]
    fn protobuf_form_answers_kubectls_questions() {
        let built = build(
            &flotilla_kinds::builtin_resources()
                .into_iter()
                .map(Arc::new)
                .collect::<Vec<_>>(),
            "v1.33.0",
        );
        let doc = flotilla_openapiv2::decode_document(&built.protobuf.unwrap()).unwrap();
        let deployment_gvk = |exts: &[proto::NamedAny]| {
            exts.iter().any(|e| {
                e.name == "x-kubernetes-group-version-kind"
                    && e.value.as_ref().is_some_and(|v| {
                        serde_norway::from_str::<Value>(&v.yaml).ok()
                            == Some(json!({"group": "apps", "version": "v1", "kind": "Deployment"}))
                    })
            })
        };
        let patch = doc
            .paths
            .as_ref()
            .unwrap()
            .path
            .iter()
            .filter_map(|p| p.value.as_ref()?.patch.as_ref())
            .find(|op| deployment_gvk(&op.vendor_extension))
            .expect("a PATCH operation for apps/v1 Deployment");
        let query_names: Vec<&str> = patch
            .parameters
            .iter()
            .filter_map(|p| match p.oneof.as_ref()? {
                proto::parameters_item::Oneof::Parameter(p) => match p.oneof.as_ref()? {
                    proto::parameter::Oneof::NonBodyParameter(n) => match n.oneof.as_ref()? {
                        proto::non_body_parameter::Oneof::QueryParameterSubSchema(q) => {
                            Some(q.name.as_str())
                        }
                        _ => None,
                    },
                    _ => None,
                },
                _ => None,
            })
            .collect();
        assert!(query_names.contains(&"fieldValidation"), "{query_names:?}");

        let defs = &doc.definitions.as_ref().unwrap().additional_properties;
        let deployment = defs
            .iter()
            .find(|d| d.name == "io.k8s.api.apps.v1.Deployment")
            .and_then(|d| d.value.as_ref())
            .unwrap();
        let gvk = deployment
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .unwrap();
        assert_eq!(
            serde_norway::from_str::<Value>(&gvk.value.as_ref().unwrap().yaml).unwrap(),
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
    }
}
