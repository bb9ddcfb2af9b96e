//! API discovery: the legacy documents (`APIVersions`, `APIGroupList`, `APIGroup`,
//! `APIResourceList`) and aggregated discovery v2 (`APIGroupDiscoveryList`), which kubectl
//! asks for first and only accepts with its exact content type.

use std::collections::HashMap;

use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::{ApiError, ResourceDef};
use http::{HeaderMap, StatusCode, header};
use parking_lot::Mutex;
use serde_json::{Value, json};

use crate::aggregator::ExternalGroup;
use crate::registry::Registry;
use crate::response::{JSON, bytes_with_type, json_value, json_with_type};

/// This server's own discovery documents, serialised, for the registry generation they were
/// built at. Every member's status sync reads `/api` and `/apis` (at thousands of members,
/// building them was most of a member-sim's CPU) and kubectl reads them at every cold start.
/// Documents that include extension API servers' groups are built each time: those change
/// with the APIServices' availability, which the generation does not follow.
#[derive(Default)]
pub struct DiscoveryCache {
    /// The generation, and the documents built at it.
    inner: Mutex<(u64, Documents)>,
}

/// Serialised documents with their content types, by request.
type Documents = HashMap<String, (Bytes, &'static str)>;

impl DiscoveryCache {
    fn get(&self, generation: u64, key: &str) -> Option<Response> {
        let inner = self.inner.lock();
        if inner.0 != generation {
            return None;
        }
        inner
            .1
            .get(key)
            .map(|(body, content_type)| bytes_with_type(StatusCode::OK, body.clone(), content_type))
    }

    fn put(&self, generation: u64, key: String, body: Bytes, content_type: &'static str) {
        let mut inner = self.inner.lock();
        if inner.0 < generation {
            *inner = (generation, HashMap::new());
        }
        if inner.0 == generation {
            inner.1.insert(key, (body, content_type));
        }
    }

    /// The document at `key` for `generation`, built by `build` (body and content type) when
    /// not cached.
    fn serve(
        &self,
        generation: u64,
        key: String,
        build: impl FnOnce() -> Result<(Value, &'static str), ApiError>,
    ) -> Result<Response, ApiError> {
        if let Some(hit) = self.get(generation, &key) {
            return Ok(hit);
        }
        let (body, content_type) = build()?;
        let body = Bytes::from(serde_json::to_vec(&body).unwrap_or_default());
        self.put(generation, key, body.clone(), content_type);
        Ok(bytes_with_type(StatusCode::OK, body, content_type))
    }
}

const V2: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const V2BETA1: &str = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated discovery version the client accepts, if any.
fn aggregated_version(headers: &HeaderMap) -> Option<&'static str> {
    let accept = headers.get(header::ACCEPT)?.to_str().ok()?;
    let mut best = None;
    for part in accept.split(',') {
        let p: String = part.chars().filter(|c| !c.is_whitespace()).collect();
        if p.contains("as=APIGroupDiscoveryList") && p.contains("g=apidiscovery.k8s.io") {
            if p.contains("v=v2beta1") {
                best = best.or(Some("v2beta1"));
            } else if p.contains("v=v2") {
                return Some("v2");
            }
        }
    }
    best
}

/// Aggregated discovery entries for an extension's `APIResourceList`.
fn external_resources(group: &str, version: &str, list: Option<&Value>) -> Vec<Value> {
    let Some(items) = list
        .and_then(|l| l.get("resources"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    let mut out: Vec<Value> = Vec::new();
    for r in items {
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.contains('/') {
            continue;
        }
        let mut v = json!({
            "resource": name,
            "responseKind": {
                "group": r.get("group").and_then(Value::as_str).unwrap_or(group),
                "version": r.get("version").and_then(Value::as_str).unwrap_or(version),
                "kind": r.get("kind").cloned().unwrap_or(Value::Null),
            },
            "scope": if r.get("namespaced").and_then(Value::as_bool) == Some(true) { "Namespaced" } else { "Cluster" },
            "singularResource": r.get("singularName").cloned().unwrap_or(json!("")),
            "verbs": r.get("verbs").cloned().unwrap_or(json!([])),
        });
        for key in ["shortNames", "categories"] {
            if let Some(x) = r.get(key) {
                v[key] = x.clone();
            }
        }
        let subs: Vec<Value> = items
            .iter()
            .filter_map(|s| {
                let n = s.get("name").and_then(Value::as_str)?;
                let (parent, sub) = n.split_once('/')?;
                (parent == name).then(|| {
                    json!({
                        "subresource": sub,
                        "responseKind": {
                            "group": s.get("group").and_then(Value::as_str).unwrap_or(group),
                            "version": s.get("version").and_then(Value::as_str).unwrap_or(version),
                            "kind": s.get("kind").cloned().unwrap_or(Value::Null),
                        },
                        "verbs": s.get("verbs").cloned().unwrap_or(json!([])),
                    })
                })
            })
            .collect();
        if !subs.is_empty() {
            v["subresources"] = Value::Array(subs);
        }
        out.push(v);
    }
    out
}

/// `GET /api` (legacy = true) or `GET /apis`; `external` are aggregated groups served by
/// extension API servers.
pub fn root(
    registry: &Registry,
    cache: &DiscoveryCache,
    legacy: bool,
    headers: &HeaderMap,
    external: &[ExternalGroup],
) -> Response {
    let version = aggregated_version(headers);
    let build = || Ok(root_document(registry, legacy, version, external));
    let response = if external.is_empty() {
        let key = format!("root legacy={legacy} aggregated={version:?}");
        cache.serve(registry.generation(), key, build)
    } else {
        build().map(|(body, content_type)| json_with_type(StatusCode::OK, &body, content_type))
    };
    response.unwrap_or_else(|e| crate::response::error_response(&e))
}

fn root_document(
    registry: &Registry,
    legacy: bool,
    aggregated: Option<&'static str>,
    external: &[ExternalGroup],
) -> (Value, &'static str) {
    if let Some(version) = aggregated {
        let items: Vec<Value> = registry
            .groups()
            .into_iter()
            .filter(|g| g.name.is_empty() == legacy)
            .map(|g| {
                let versions: Vec<Value> = g
                    .versions
                    .iter()
                    .map(|v| {
                        let resources: Vec<Value> =
                            registry.resources_in(&g.name, v).iter().map(|d| aggregated_resource(d)).collect();
                        json!({"version": v, "resources": resources, "freshness": "Current"})
                    })
                    .collect();
                json!({"metadata": {"name": g.name, "creationTimestamp": null}, "versions": versions})
            })
            .collect();
        let mut items = items;
        if !legacy {
            for g in external {
                let versions: Vec<Value> = g
                    .versions
                    .iter()
                    .map(|(v, list)| json!({"version": v, "resources": external_resources(&g.name, v, list.as_ref()), "freshness": "Current"}))
                    .collect();
                items.push(json!({"metadata": {"name": g.name, "creationTimestamp": null}, "versions": versions}));
            }
        }
        let body = json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": format!("apidiscovery.k8s.io/{version}"),
            "metadata": {},
            "items": items,
        });
        let ct = if version == "v2" { V2 } else { V2BETA1 };
        return (body, ct);
    }
    if legacy {
        return (
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}),
            JSON,
        );
    }
    let mut groups: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|g| !g.name.is_empty())
        .map(|g| group_json(&g.name, &g.versions))
        .collect();
    for g in external {
        let versions: Vec<String> = g.versions.iter().map(|(v, _)| v.clone()).collect();
        groups.push(group_json(&g.name, &versions));
    }
    (
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
        JSON,
    )
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

/// `GET /apis/{group}`.
pub fn group(
    registry: &Registry,
    name: &str,
    external: &[ExternalGroup],
) -> Result<Response, ApiError> {
    let g = registry
        .groups()
        .into_iter()
        .find(|g| g.name == name)
        .or_else(|| {
            external
                .iter()
                .find(|g| g.name == name)
                .map(|g| crate::registry::GroupInfo {
                    name: g.name.clone(),
                    versions: g.versions.iter().map(|(v, _)| v.clone()).collect(),
                })
        })
        .ok_or_else(ApiError::path_not_found)?;
    let mut body = group_json(&g.name, &g.versions);
    body["kind"] = json!("APIGroup");
    body["apiVersion"] = json!("v1");
    Ok(json_value(StatusCode::OK, &body))
}

/// `GET /api/v1` or `GET /apis/{group}/{version}`.
pub fn group_version(
    registry: &Registry,
    cache: &DiscoveryCache,
    group: &str,
    version: &str,
) -> Result<Response, ApiError> {
    cache.serve(
        registry.generation(),
        format!("group version {group}/{version}"),
        || group_version_document(registry, group, version).map(|body| (body, JSON)),
    )
}

fn group_version_document(
    registry: &Registry,
    group: &str,
    version: &str,
) -> Result<Value, ApiError> {
    let defs = registry.resources_in(group, version);
    if defs.is_empty() {
        return Err(ApiError::path_not_found());
    }
    let mut resources = Vec::new();
    for d in &defs {
        let mut r = json!({
            "name": d.plural,
            "singularName": d.singular,
            "namespaced": d.namespaced,
            "kind": d.kind,
            "verbs": d.verbs(),
        });
        if !d.short_names.is_empty() {
            r["shortNames"] = json!(d.short_names);
        }
        if !d.categories.is_empty() {
            r["categories"] = json!(d.categories);
        }
        resources.push(r);
        for sub in subresources(d) {
            let mut s = json!({"name": format!("{}/{}", d.plural, sub.name), "singularName": "", "namespaced": d.namespaced, "kind": sub.kind, "verbs": sub.verbs});
            if !sub.version.is_empty() && (sub.group != d.group || sub.version != d.version) {
                s["group"] = json!(sub.group);
                s["version"] = json!(sub.version);
            }
            resources.push(s);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// One subresource as discovery lists it.
struct Sub {
    name: String,
    kind: String,
    /// Empty: the parent resource's group and version.
    group: String,
    version: String,
    verbs: Vec<String>,
}

/// The subresources of a resource: status, partial ones (e.g. `approval`), connect
/// subresources, scale, then custom ones.
fn subresources(d: &ResourceDef) -> Vec<Sub> {
    let verbs = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut out = Vec::new();
    if d.has_status {
        out.push(Sub {
            name: "status".into(),
            kind: d.kind.clone(),
            group: String::new(),
            version: String::new(),
            verbs: verbs(&["get", "patch", "update"]),
        });
    }
    for sub in &d.partial_subresources {
        out.push(Sub {
            name: sub.name.clone(),
            kind: d.kind.clone(),
            group: String::new(),
            version: String::new(),
            verbs: verbs(&["get", "patch", "update"]),
        });
    }
    for name in &d.connect_subresources {
        if !matches!(
            name.as_str(),
            "proxy" | "exec" | "attach" | "portforward" | "log"
        ) {
            continue;
        }
        out.push(Sub {
            name: name.clone(),
            kind: d.kind.clone(),
            group: String::new(),
            version: String::new(),
            verbs: verbs(&["create", "delete", "get", "patch", "update"]),
        });
    }
    if d.scale.is_some() {
        out.push(Sub {
            name: "scale".into(),
            kind: "Scale".into(),
            group: "autoscaling".into(),
            version: "v1".into(),
            verbs: verbs(&["get", "patch", "update"]),
        });
    }
    for c in &d.custom_subresources {
        out.push(Sub {
            name: c.name.clone(),
            kind: c.kind.kind.clone(),
            group: c.kind.group.clone(),
            version: c.kind.version.clone(),
            verbs: c.verbs.clone(),
        });
    }
    out
}

fn aggregated_resource(d: &ResourceDef) -> Value {
    let mut r = json!({
        "resource": d.plural,
        "responseKind": {"group": d.group, "version": d.version, "kind": d.kind},
        "scope": if d.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": d.singular,
        "verbs": d.verbs(),
    });
    if !d.short_names.is_empty() {
        r["shortNames"] = json!(d.short_names);
    }
    if !d.categories.is_empty() {
        r["categories"] = json!(d.categories);
    }
    let subs: Vec<Value> = subresources(d)
        .into_iter()
        .map(|sub| {
            let (g, v) = if sub.version.is_empty() { (d.group.clone(), d.version.clone()) } else { (sub.group, sub.version) };
            json!({"subresource": sub.name, "responseKind": {"group": g, "version": v, "kind": sub.kind}, "verbs": sub.verbs})
        })
        .collect();
    if !subs.is_empty() {
        r["subresources"] = Value::Array(subs);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    async fn body_of(response: Response) -> (Value, String) {
        let content_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (serde_json::from_slice(&bytes).unwrap(), content_type)
    }

    #[tokio::test]
    async fn cached_documents_follow_the_registry() {
        let registry = Registry::new();
        registry.register(ResourceDef::new(
            "apps",
            "v1",
            "Deployment",
            "deployments",
            true,
        ));
        let cache = DiscoveryCache::default();
        let mut aggregated = HeaderMap::new();
        aggregated.insert(header::ACCEPT, HeaderValue::from_static(V2));
        let groups = |doc: &Value| -> Vec<String> {
            doc["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["metadata"]["name"].as_str().unwrap().to_string())
                .collect()
        };
        let (first, content_type) = body_of(root(&registry, &cache, false, &aggregated, &[])).await;
        assert_eq!(content_type, V2);
        assert_eq!(groups(&first), ["apps"]);
        // Served again from the cache: the same document and content type.
        assert_eq!(
            body_of(root(&registry, &cache, false, &aggregated, &[])).await,
            (first, V2.to_string())
        );
        // The legacy list is another document.
        let (legacy, content_type) =
            body_of(root(&registry, &cache, false, &HeaderMap::new(), &[])).await;
        assert_eq!(
            (legacy["kind"].as_str(), content_type.as_str()),
            (Some("APIGroupList"), JSON)
        );

        registry.register(ResourceDef::new("x.io", "v1", "Widget", "widgets", true));
        let (after, _) = body_of(root(&registry, &cache, false, &aggregated, &[])).await;
        assert_eq!(groups(&after), ["apps", "x.io"]);
        let (resources, _) = body_of(group_version(&registry, &cache, "x.io", "v1").unwrap()).await;
        assert_eq!(resources["resources"][0]["name"], "widgets");
        assert!(group_version(&registry, &cache, "y.io", "v1").is_err());
    }
}
