//! OpenAPI v3: the index at `/openapi/v3` listing every served group/version with a content
//! hash, and one document per group/version with its paths (a PATCH operation carrying the
//! GVK and a `fieldValidation` parameter, which is what lets kubectl leave validation to the
//! server) and real component schemas (what `kubectl explain` reads).
//!
//! `application/strategic-merge-patch+json` is deliberately not listed on PATCH: kubectl
//! would then compute patches from these schemas instead of its compiled-in types.

use std::collections::{BTreeMap, hash_map::DefaultHasher};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use axum::response::Response;
use flotilla_apimachinery::{ApiError, ResourceDef};
use http::StatusCode;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::aggregator::Aggregator;
use crate::registry::Registry;
use crate::response::{error_response, json_bytes, json_value};

/// Documents built for one registry generation.
#[derive(Default)]
pub struct OpenApiCache {
    inner: Mutex<Option<(u64, Arc<Built>)>>,
    /// The single OpenAPI v2 document (crate::openapi_v2).
    pub(crate) v2: crate::openapi_v2::OpenApiV2Cache,
}

struct Built {
    /// "apis/apps/v1" -> (hash, document bytes)
    docs: BTreeMap<String, (String, bytes::Bytes)>,
}

/// Serves `GET /openapi/v3[/...]` for `registry`'s resources (documents kept in `cache`
/// until the registry changes) and the aggregated group/versions of `aggregator`.
pub fn serve(
    cache: &OpenApiCache,
    registry: &Registry,
    aggregator: Option<&Aggregator>,
    git_version: &str,
    path: &str,
) -> Response {
    let built = {
        let generation = registry.generation();
        let mut cache = cache.inner.lock();
        match &*cache {
            Some((g, b)) if *g == generation => b.clone(),
            _ => {
                let b = Arc::new(build(registry, git_version));
                *cache = Some((generation, b.clone()));
                b
            }
        }
    };
    if path == "/openapi/v3" || path == "/openapi/v3/" {
        let mut paths: Map<String, Value> = built
            .docs
            .iter()
            .map(|(gv, (hash, _))| {
                (
                    gv.clone(),
                    json!({"serverRelativeURL": format!("/openapi/v3/{gv}?hash={hash}")}),
                )
            })
            .collect();
        // Aggregated group/versions: their documents are proxied to the extension server.
        if let Some(agg) = aggregator {
            for group in agg.external_groups() {
                for (version, _) in &group.versions {
                    let gv = format!("apis/{}/{version}", group.name);
                    let url = format!("/openapi/v3/{gv}");
                    paths
                        .entry(gv)
                        .or_insert_with(|| json!({"serverRelativeURL": url}));
                }
            }
        }
        return json_value(StatusCode::OK, &json!({"paths": paths}));
    }
    let gv = path
        .trim_start_matches("/openapi/v3/")
        .trim_end_matches('/');
    match built.docs.get(gv) {
        Some((_, bytes)) => json_bytes(StatusCode::OK, bytes.clone()),
        None => error_response(&ApiError::path_not_found()),
    }
}

fn build(registry: &Registry, git_version: &str) -> Built {
    let mut by_gv: BTreeMap<String, Vec<Arc<ResourceDef>>> = BTreeMap::new();
    for def in registry.all() {
        let gv = if def.group.is_empty() {
            format!("api/{}", def.version)
        } else {
            format!("apis/{}/{}", def.group, def.version)
        };
        by_gv.entry(gv).or_default().push(def);
    }
    let docs = by_gv
        .into_iter()
        .map(|(gv, defs)| {
            let doc = document(&gv, &defs, git_version);
            let bytes = bytes::Bytes::from(doc.to_string());
            let mut h = DefaultHasher::new();
            bytes.hash(&mut h);
            (gv, (format!("{:016X}", h.finish()), bytes))
        })
        .collect();
    Built { docs }
}

fn query_param(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn document(gv: &str, defs: &[Arc<ResourceDef>], version: &str) -> Value {
    let mut schemas: Map<String, Value> = Map::new();
    schemas.insert(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Patch".into(),
        json!({"type": "object", "description": "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."}),
    );
    let mut paths: Map<String, Value> = Map::new();
    for def in defs {
        let root = def.openapi_root_schema();
        match &def.openapi {
            Some(s) => {
                for (name, schema) in &s.components {
                    schemas
                        .entry(name.clone())
                        .or_insert_with(|| schema.clone());
                }
                if let Some(Value::Object(m)) = schemas.get_mut(&root) {
                    m.insert(
                        "x-kubernetes-group-version-kind".into(),
                        json!([def.openapi_gvk()]),
                    );
                }
            }
            None => {
                schemas.insert(
                    root.clone(),
                    json!({
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "x-kubernetes-group-version-kind": [def.openapi_gvk()],
                    }),
                );
            }
        }
        let gvk = def.openapi_gvk();
        let base = if def.namespaced {
            format!("/{gv}/namespaces/{{namespace}}/{}", def.plural)
        } else {
            format!("/{gv}/{}", def.plural)
        };
        let body = json!({"content": {"application/json": {"schema": schema_ref(&root)}}});
        let ok = json!({"200": {"description": "OK", "content": {"application/json": {"schema": schema_ref(&root)}}}});
        let write_params = json!([
            query_param(
                "dryRun",
                "When present, indicates that modifications should not be persisted."
            ),
            query_param(
                "fieldManager",
                "fieldManager is a name associated with the actor or entity that is making these changes."
            ),
            query_param(
                "fieldValidation",
                "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields: Ignore, Warn or Strict."
            ),
        ]);
        let mut patch_params = write_params.clone();
        if let Some(a) = patch_params.as_array_mut() {
            a.push(query_param(
                "force",
                "Force is going to \"force\" Apply requests.",
            ));
        }
        let patch_body = json!({"content": {
            "application/json-patch+json": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
            "application/merge-patch+json": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
            "application/apply-patch+yaml": {"schema": schema_ref("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")},
        }});
        let op = |action: &str| -> Map<String, Value> {
            let mut m = Map::new();
            m.insert(
                "operationId".into(),
                json!(format!("{action}{}{}", def.kind, def.version)),
            );
            m.insert("x-kubernetes-action".into(), json!(action));
            m.insert("x-kubernetes-group-version-kind".into(), gvk.clone());
            m.insert("responses".into(), ok.clone());
            m
        };
        let mut collection = Map::new();
        collection.insert("get".into(), Value::Object(op("list")));
        let mut post = op("post");
        post.insert("parameters".into(), write_params.clone());
        post.insert("requestBody".into(), body.clone());
        collection.insert("post".into(), Value::Object(post));
        paths.insert(base.clone(), Value::Object(collection));

        let mut item = Map::new();
        item.insert("get".into(), Value::Object(op("get")));
        let mut put = op("put");
        put.insert("parameters".into(), write_params.clone());
        put.insert("requestBody".into(), body.clone());
        item.insert("put".into(), Value::Object(put));
        let mut patch = op("patch");
        patch.insert("parameters".into(), patch_params.clone());
        patch.insert("requestBody".into(), patch_body.clone());
        item.insert("patch".into(), Value::Object(patch));
        item.insert("delete".into(), Value::Object(op("delete")));
        let item_path = format!("{base}/{{name}}");
        paths.insert(item_path.clone(), Value::Object(item.clone()));
        if def.has_status {
            paths.insert(format!("{item_path}/status"), Value::Object(item.clone()));
        }
        for sub in &def.partial_subresources {
            paths.insert(
                format!("{item_path}/{}", sub.name),
                Value::Object(item.clone()),
            );
        }
    }
    json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths,
        "components": {"schemas": schemas},
    })
}
