//! OpenAPI v3 schemas of the built-in kinds, generated from k8s-openapi's `JsonSchema`
//! implementations. k8s-openapi already names its schemas as Kubernetes does
//! (`io.k8s.api.apps.v1.Deployment`), so the component names are those; references come out
//! as `#/components/schemas/<name>`, and a `$ref` carrying a description is wrapped in `allOf`
//! (as kube-apiserver publishes it, since OpenAPI 3.0 ignores siblings of `$ref`).

use std::collections::BTreeMap;

use flotilla_apimachinery::resource::OpenApiSchemas;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Value, json};

use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    APIResourceList, DeleteOptions, Patch, Status, WatchEvent,
};

/// The extension kubectl uses to find a kind's schema (`kubectl explain`).
pub const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";

fn generator() -> SchemaGenerator {
    SchemaSettings::openapi3().into_generator()
}

fn gvk_entry(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// Marks `schema` as the schema of the given kinds.
fn tag(schema: &mut Value, gvks: Vec<Value>) {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert(GVK_EXTENSION.to_string(), Value::Array(gvks));
    }
}

fn into_map(defs: serde_json::Map<String, Value>) -> BTreeMap<String, Value> {
    defs.into_iter().collect()
}

/// The schema of kind `T` and everything it refers to, `T`'s own schema tagged with its
/// group/version/kind.
pub(crate) fn schemas_for<T: JsonSchema + k8s_openapi::Resource>() -> OpenApiSchemas {
    let mut generator = generator();
    // Asking for a subschema (not a root schema) puts `T` itself into the definitions.
    let _ = generator.subschema_for::<T>();
    let mut components = into_map(generator.take_definitions(true));
    let root = T::schema_name().into_owned();
    if let Some(schema) = components.get_mut(&root) {
        tag(schema, vec![gvk_entry(T::GROUP, T::VERSION, T::KIND)]);
    }
    OpenApiSchemas { root, components }
}

/// The group/versions whose `DeleteOptions` kube-apiserver documents as the same schema.
const DELETE_OPTIONS_GROUPS: &[(&str, &str)] = &[
    ("", "v1"),
    ("apps", "v1"),
    ("autoscaling", "v1"),
    ("batch", "v1"),
    ("coordination.k8s.io", "v1"),
    ("events.k8s.io", "v1"),
    ("rbac.authorization.k8s.io", "v1"),
    // Issue 18's groups.
    ("autoscaling", "v2"),
    ("discovery.k8s.io", "v1"),
    ("networking.k8s.io", "v1"),
    ("node.k8s.io", "v1"),
    ("policy", "v1"),
    ("scheduling.k8s.io", "v1"),
    ("storage.k8s.io", "v1"),
];

/// Schemas that operations reference whatever kinds a document covers: `autoscaling/v1 Scale`
/// (the scale subresource), `meta/v1` `Status`, `DeleteOptions`, `Patch`, `WatchEvent`,
/// `APIResourceList`, and what those refer to.
pub fn common_schemas() -> BTreeMap<String, Value> {
    let mut generator = generator();
    let _ = generator.subschema_for::<Scale>();
    let _ = generator.subschema_for::<Status>();
    let _ = generator.subschema_for::<DeleteOptions>();
    let _ = generator.subschema_for::<Patch>();
    let _ = generator.subschema_for::<WatchEvent<()>>();
    let _ = generator.subschema_for::<APIResourceList>();
    let mut all = into_map(generator.take_definitions(true));
    let tags: [(String, Vec<Value>); 3] = [
        (
            Scale::schema_name().into_owned(),
            vec![gvk_entry("autoscaling", "v1", "Scale")],
        ),
        (
            Status::schema_name().into_owned(),
            vec![gvk_entry("", "v1", "Status")],
        ),
        (
            DeleteOptions::schema_name().into_owned(),
            DELETE_OPTIONS_GROUPS
                .iter()
                .map(|(g, v)| gvk_entry(g, v, "DeleteOptions"))
                .collect(),
        ),
    ];
    for (name, gvks) in tags {
        if let Some(schema) = all.get_mut(&name) {
            tag(schema, gvks);
        }
    }
    all
}

#[cfg(test)]
/// Every `$ref` target in `value` (for checking that a components map is closed).
pub(crate) fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;

    const PREFIX: &str = "#/components/schemas/";

    fn assert_closed(components: &BTreeMap<String, Value>) {
        let mut all = Vec::new();
        components.values().for_each(|v| refs(v, &mut all));
        assert!(!all.is_empty());
        for r in all {
            let name = r
                .strip_prefix(PREFIX)
                .unwrap_or_else(|| panic!("foreign ref {r}"));
            assert!(components.contains_key(name), "dangling ref {r}");
        }
    }

    #[test]
    fn deployment_schema_is_complete_and_described() {
        let s = schemas_for::<Deployment>();
        assert_eq!(s.root, "io.k8s.api.apps.v1.Deployment");
        let root = &s.components[&s.root];
        assert_eq!(
            root[GVK_EXTENSION],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        let spec = &s.components["io.k8s.api.apps.v1.DeploymentSpec"];
        let replicas = &spec["properties"]["replicas"];
        assert_eq!(replicas["type"], "integer");
        assert!(
            replicas["description"]
                .as_str()
                .is_some_and(|d| d.contains("desired pods"))
        );
        // Descriptions next to references survive, wrapped in allOf.
        let metadata = &root["properties"]["metadata"];
        assert!(metadata["description"].is_string());
        assert_eq!(
            metadata["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(s.components.contains_key("io.k8s.api.core.v1.Container"));
        assert_closed(&s.components);
    }

    #[test]
    fn common_schemas_are_tagged_and_closed() {
        let c = common_schemas();
        assert_eq!(
            c["io.k8s.api.autoscaling.v1.Scale"][GVK_EXTENSION],
            json!([{"group": "autoscaling", "kind": "Scale", "version": "v1"}])
        );
        assert_eq!(
            c["io.k8s.apimachinery.pkg.apis.meta.v1.Status"][GVK_EXTENSION][0]["kind"],
            "Status"
        );
        assert!(c.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"));
        assert!(c.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.Patch"));
        assert_closed(&c);
    }
}
