//! OpenAPI v3 component schemas -> Swagger 2.0 definitions.
//!
//! What changes, and why:
//! - `#/components/schemas/X` references become `#/definitions/X`.
//! - `allOf: [{$ref}]` (how OpenAPI 3.0 documents a referenced field with its own
//!   description) becomes a plain `$ref` with the siblings kept, as Swagger 2.0 publishes it;
//!   a `type` or `properties` next to a reference is dropped, since kubectl's parser rejects
//!   a reference that also declares them.
//! - `type` lists lose `null` (`nullable` goes too); one type left stays, several are dropped:
//!   kubectl's parser accepts a single type only.
//! - An array without an item schema gets an unconstrained one (the parser needs one).
//! - Boolean schemas (`true`) become `{}`.
//! - Keywords Swagger 2.0 lacks (`anyOf`, `oneOf`, `not`, `nullable`, `writeOnly`,
//!   `deprecated`, ...) are dropped; `x-` extensions, `default`, `example` and `enum` values
//!   are copied untouched.

use serde_json::{Map, Value};

const V3_PREFIX: &str = "#/components/schemas/";
const V2_PREFIX: &str = "#/definitions/";

/// Schema keywords Swagger 2.0 knows (besides `x-` extensions), in no particular order.
const SWAGGER_KEYWORDS: &[&str] = &[
    "$ref",
    "format",
    "title",
    "description",
    "default",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxProperties",
    "minProperties",
    "required",
    "enum",
    "additionalProperties",
    "type",
    "items",
    "allOf",
    "properties",
    "discriminator",
    "readOnly",
    "externalDocs",
    "example",
];

/// Converts OpenAPI v3 component schemas (with `#/components/schemas/X` refs, `allOf: [{$ref}]`
/// wrappers that carry descriptions) into Swagger 2.0 `definitions` (`#/definitions/X` refs).
pub fn definitions_from_v3(components: &Map<String, Value>) -> Map<String, Value> {
    components
        .iter()
        .map(|(name, schema)| (name.clone(), schema_from_v3(schema)))
        .collect()
}

/// Converts one OpenAPI v3 schema into its Swagger 2.0 form (see the module docs).
pub fn schema_from_v3(schema: &Value) -> Value {
    let Value::Object(source) = schema else {
        // Boolean schemas (and anything malformed) accept everything.
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    for (key, value) in source {
        if key.starts_with("x-") {
            out.insert(key.clone(), value.clone());
            continue;
        }
        match key.as_str() {
            "$ref" => {
                out.insert(key.clone(), rewrite_ref(value));
            }
            "allOf" => match single_ref(value) {
                Some(reference) => {
                    out.insert("$ref".into(), rewrite_ref(reference));
                }
                None => {
                    if let Value::Array(parts) = value {
                        out.insert(
                            key.clone(),
                            Value::Array(parts.iter().map(schema_from_v3).collect()),
                        );
                    }
                }
            },
            "type" => {
                if let Some(t) = single_type(value) {
                    out.insert(key.clone(), Value::String(t));
                }
            }
            "items" => {
                let items = match value {
                    Value::Array(parts) => Value::Array(parts.iter().map(schema_from_v3).collect()),
                    other => schema_from_v3(other),
                };
                out.insert(key.clone(), items);
            }
            "additionalProperties" => {
                let converted = match value {
                    Value::Bool(b) => Value::Bool(*b),
                    other => schema_from_v3(other),
                };
                out.insert(key.clone(), converted);
            }
            "properties" => {
                if let Value::Object(props) = value {
                    out.insert(
                        key.clone(),
                        Value::Object(
                            props
                                .iter()
                                .map(|(k, v)| (k.clone(), schema_from_v3(v)))
                                .collect(),
                        ),
                    );
                }
            }
            // OpenAPI 3 makes this an object; Swagger 2.0 has only the property name.
            "discriminator" => {
                let name = match value {
                    Value::Object(d) => d.get("propertyName").cloned(),
                    Value::String(_) => Some(value.clone()),
                    _ => None,
                };
                if let Some(name) = name {
                    out.insert(key.clone(), name);
                }
            }
            k if SWAGGER_KEYWORDS.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    if out.contains_key("$ref") {
        for k in ["type", "properties", "items", "additionalProperties"] {
            out.remove(k);
        }
    } else if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items")
    {
        out.insert("items".into(), Value::Object(Map::new()));
    }
    Value::Object(out)
}

fn rewrite_ref(value: &Value) -> Value {
    match value.as_str().and_then(|r| r.strip_prefix(V3_PREFIX)) {
        Some(name) => Value::String(format!("{V2_PREFIX}{name}")),
        None => value.clone(),
    }
}

/// The reference of `allOf: [{"$ref": ...}]` (the only member being a bare reference).
fn single_ref(all_of: &Value) -> Option<&Value> {
    match all_of.as_array()?.as_slice() {
        [Value::Object(only)] if only.len() == 1 => only.get("$ref"),
        _ => None,
    }
}

/// The one non-null type, if there is exactly one.
fn single_type(value: &Value) -> Option<String> {
    let types: Vec<&str> = match value {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let non_null: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    match non_null.as_slice() {
        [one] => Some((*one).to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(v: Value) -> Value {
        schema_from_v3(&v)
    }

    #[test]
    fn described_reference_wrapper_becomes_plain_reference() {
        let out = convert(json!({
            "description": "Standard object's metadata.",
            "allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}],
            "default": {}
        }));
        assert_eq!(
            out,
            json!({
                "description": "Standard object's metadata.",
                "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                "default": {}
            })
        );
    }

    #[test]
    fn nested_references_are_rewritten_and_foreign_ones_kept() {
        let out = convert(json!({
            "type": "object",
            "properties": {
                "containers": {"type": "array", "items": {"$ref": "#/components/schemas/C"}},
                "labels": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/L"}},
                "other": {"$ref": "http://example.com/s.json"}
            }
        }));
        assert_eq!(
            out["properties"]["containers"]["items"]["$ref"],
            "#/definitions/C"
        );
        assert_eq!(
            out["properties"]["labels"]["additionalProperties"]["$ref"],
            "#/definitions/L"
        );
        assert_eq!(
            out["properties"]["other"]["$ref"],
            "http://example.com/s.json"
        );
    }

    #[test]
    fn reference_siblings_that_break_kubectl_are_dropped() {
        let out = convert(json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "$ref": "#/components/schemas/X",
            "description": "d",
            "x-kubernetes-patch-strategy": "retainKeys"
        }));
        assert_eq!(
            out,
            json!({"$ref": "#/definitions/X", "description": "d", "x-kubernetes-patch-strategy": "retainKeys"})
        );
    }

    #[test]
    fn nullable_types_collapse_and_ambiguous_ones_go() {
        assert_eq!(
            convert(json!({"type": ["string", "null"], "nullable": true})),
            json!({"type": "string"})
        );
        assert_eq!(convert(json!({"type": "null"})), json!({}));
        assert_eq!(convert(json!({"type": ["string", "integer"]})), json!({}));
    }

    #[test]
    fn v3_only_keywords_are_dropped_and_values_copied_verbatim() {
        let out = convert(json!({
            "x-kubernetes-int-or-string": true,
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "oneOf": [{"required": ["a"]}],
            "not": {"type": "string"},
            "writeOnly": true,
            "deprecated": true,
            "enum": [{"$ref": "#/components/schemas/NotAReference"}],
            "default": {"allOf": 1},
            "discriminator": {"propertyName": "kind"}
        }));
        assert_eq!(
            out,
            json!({
                "x-kubernetes-int-or-string": true,
                "enum": [{"$ref": "#/components/schemas/NotAReference"}],
                "default": {"allOf": 1},
                "discriminator": "kind"
            })
        );
    }

    #[test]
    fn arrays_always_have_an_item_schema_and_boolean_schemas_are_empty() {
        assert_eq!(
            convert(json!({"type": "array"})),
            json!({"type": "array", "items": {}})
        );
        assert_eq!(
            convert(json!({"type": "array", "items": true})),
            json!({"type": "array", "items": {}})
        );
        assert_eq!(
            convert(
                json!({"type": "object", "properties": {"raw": true}, "additionalProperties": false})
            ),
            json!({"type": "object", "properties": {"raw": {}}, "additionalProperties": false})
        );
    }

    #[test]
    fn multi_member_all_of_is_kept_and_converted() {
        let out = convert(json!({"allOf": [
            {"$ref": "#/components/schemas/A"},
            {"type": ["integer", "null"]}
        ]}));
        assert_eq!(
            out,
            json!({"allOf": [{"$ref": "#/definitions/A"}, {"type": "integer"}]})
        );
    }

    #[test]
    fn definitions_keep_names_and_order() {
        let components = json!({
            "b.B": {"type": "object", "properties": {"a": {"allOf": [{"$ref": "#/components/schemas/a.A"}], "description": "to A"}}},
            "a.A": {"type": "string"}
        });
        let Value::Object(components) = components else {
            unreachable!()
        };
        let defs = definitions_from_v3(&components);
        assert_eq!(defs.keys().collect::<Vec<_>>(), ["b.B", "a.A"]);
        assert_eq!(
            defs["b.B"]["properties"]["a"],
            json!({"$ref": "#/definitions/a.A", "description": "to A"})
        );
    }
}
