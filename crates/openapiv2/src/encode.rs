//! JSON Swagger 2.0 -> [`proto`](crate::proto) messages -> protobuf bytes.
//!
//! Members that Swagger 2.0 defines are mapped to their fields, `x-` members of every object
//! that allows them become vendor extensions, and anything else is ignored (the JSON form of
//! the document still carries it; the protobuf form has no place for it). A member of the
//! wrong JSON type is an error naming its JSON pointer, never silently dropped.

use prost::Message;
use serde_json::{Map, Value};

use crate::OpenApiV2Error;
use crate::proto::{
    AdditionalPropertiesItem, Any, BodyParameter, Contact, Definitions, Document, ExternalDocs,
    Info, ItemsItem, JsonReference, License, NamedAny, NamedParameter, NamedPathItem,
    NamedResponse, NamedResponseValue, NamedSchema, NamedStringArray, NonBodyParameter, Operation,
    Parameter, ParameterDefinitions, ParametersItem, PathItem, PathParameterSubSchema, Paths,
    PrimitivesItems, Properties, QueryParameterSubSchema, Response, ResponseDefinitions,
    ResponseValue, Responses, Schema, SchemaItem, SecurityRequirement, StringArray, Tag, TypeItem,
    additional_properties_item, non_body_parameter, parameter, parameters_item, response_value,
    schema_item,
};

type Result<T> = std::result::Result<T, OpenApiV2Error>;

/// Schema nesting beyond this is refused. Real documents stay far below it: a CRD schema
/// parsed by serde_json nests at most 128 JSON levels, which is about 64 schema levels.
const MAX_DEPTH: usize = 100;

/// Encodes a Swagger 2.0 document given as JSON (definitions, paths with operations and
/// parameters, vendor extensions `x-kubernetes-*`) into the gnostic `openapi.v2.Document`
/// protobuf that kubectl parses.
pub fn encode_document(swagger: &Value) -> Result<Vec<u8>> {
    Ok(document_message(swagger)?.encode_to_vec())
}

/// Decodes the protobuf form (what kubectl does with the bytes; for tests and tools).
pub fn decode_document(bytes: &[u8]) -> Result<Document> {
    Document::decode(bytes).map_err(|e| OpenApiV2Error::Decode(e.to_string()))
}

/// The message [`encode_document`] encodes.
pub fn document_message(swagger: &Value) -> Result<Document> {
    let o = Obj::new(swagger, String::new())?;
    Ok(Document {
        swagger: o.str("swagger")?,
        info: o.child("info")?.map(|i| info(&i)).transpose()?,
        host: o.str("host")?,
        base_path: o.str("basePath")?,
        schemes: o.strings("schemes")?,
        consumes: o.strings("consumes")?,
        produces: o.strings("produces")?,
        paths: o.child("paths")?.map(|p| paths(&p)).transpose()?,
        definitions: o
            .child("definitions")?
            .map(|d| {
                Ok(Definitions {
                    additional_properties: named_schemas(&d, 0)?,
                })
            })
            .transpose()?,
        parameters: o
            .child("parameters")?
            .map(|p| {
                Ok(ParameterDefinitions {
                    additional_properties: p
                        .entries()
                        .map(|(name, v, path)| {
                            Ok(NamedParameter {
                                name: name.to_string(),
                                value: Some(parameter(&Obj::new(v, path)?)?),
                            })
                        })
                        .collect::<Result<_>>()?,
                })
            })
            .transpose()?,
        responses: o
            .child("responses")?
            .map(|r| {
                Ok(ResponseDefinitions {
                    additional_properties: r
                        .entries()
                        .map(|(name, v, path)| {
                            Ok(NamedResponse {
                                name: name.to_string(),
                                value: Some(response(&Obj::new(v, path)?)?),
                            })
                        })
                        .collect::<Result<_>>()?,
                })
            })
            .transpose()?,
        security: o.array("security", security_requirement)?,
        tags: o.array("tags", |v, path| {
            let t = Obj::new(v, path)?;
            Ok(Tag {
                name: t.str("name")?,
                description: t.str("description")?,
                external_docs: t
                    .child("externalDocs")?
                    .map(|e| external_docs(&e))
                    .transpose()?,
                vendor_extension: t.extensions()?,
            })
        })?,
        external_docs: o
            .child("externalDocs")?
            .map(|e| external_docs(&e))
            .transpose()?,
        vendor_extension: o.extensions()?,
    })
}

/// A JSON object being read, with its JSON pointer for error messages.
struct Obj<'a> {
    map: &'a Map<String, Value>,
    path: String,
}

/// Escapes a member name for a JSON pointer (RFC 6901).
fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn shape(path: String, expected: &'static str) -> OpenApiV2Error {
    OpenApiV2Error::Shape { path, expected }
}

impl<'a> Obj<'a> {
    fn new(value: &'a Value, path: String) -> Result<Self> {
        match value {
            Value::Object(map) => Ok(Obj { map, path }),
            _ => Err(shape(path, "an object")),
        }
    }

    fn at(&self, key: &str) -> String {
        format!("{}/{}", self.path, pointer_token(key))
    }

    /// Members that are not vendor extensions, with their pointers.
    fn entries(&self) -> impl Iterator<Item = (&'a str, &'a Value, String)> + '_ {
        self.map
            .iter()
            .filter(|(k, _)| !k.starts_with("x-"))
            .map(|(k, v)| (k.as_str(), v, self.at(k)))
    }

    fn child(&self, key: &str) -> Result<Option<Obj<'a>>> {
        self.map
            .get(key)
            .map(|v| Obj::new(v, self.at(key)))
            .transpose()
    }

    fn str(&self, key: &str) -> Result<String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(shape(self.at(key), "a string")),
        }
    }

    fn bool(&self, key: &str) -> Result<bool> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(shape(self.at(key), "a boolean")),
        }
    }

    fn f64(&self, key: &str) -> Result<f64> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(0.0),
            Some(Value::Number(n)) => n.as_f64().ok_or_else(|| shape(self.at(key), "a number")),
            Some(_) => Err(shape(self.at(key), "a number")),
        }
    }

    fn i64(&self, key: &str) -> Result<i64> {
        let err = || shape(self.at(key), "an integer");
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(0),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(i) => Ok(i),
                // `5.0` is an integer too; the range check keeps the cast exact.
                None => match n.as_f64() {
                    Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
                    _ => Err(err()),
                },
            },
            Some(_) => Err(err()),
        }
    }

    fn strings(&self, key: &str) -> Result<Vec<String>> {
        self.array(key, |v, path| match v {
            Value::String(s) => Ok(s.clone()),
            _ => Err(shape(path, "a string")),
        })
    }

    fn array<T>(&self, key: &str, f: impl Fn(&'a Value, String) -> Result<T>) -> Result<Vec<T>> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => {
                let base = self.at(key);
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| f(v, format!("{base}/{i}")))
                    .collect()
            }
            Some(_) => Err(shape(self.at(key), "an array")),
        }
    }

    fn any(&self, key: &str) -> Result<Option<Any>> {
        self.map.get(key).map(|v| any(v, self.at(key))).transpose()
    }

    fn anys(&self, key: &str) -> Result<Vec<Any>> {
        self.array(key, any)
    }

    /// The `x-` members, as YAML.
    fn extensions(&self) -> Result<Vec<NamedAny>> {
        self.map
            .iter()
            .filter(|(k, _)| k.starts_with("x-"))
            .map(|(k, v)| {
                Ok(NamedAny {
                    name: k.clone(),
                    value: Some(any(v, self.at(k))?),
                })
            })
            .collect()
    }
}

/// A free-form value as YAML text, which is what kubectl unmarshals extensions from.
///
/// Written in YAML's flow style with every string double-quoted (JSON escapes are YAML
/// escapes): kubectl reads with a YAML 1.1 parser, for which bare `yes`, `on` or `0x1F`
/// are not strings, and a block-style writer that quotes by YAML 1.2 rules leaves them bare.
fn any(value: &Value, path: String) -> Result<Any> {
    let mut yaml = String::new();
    flow_yaml(value, &mut yaml).map_err(|e| OpenApiV2Error::Yaml {
        path,
        message: e.to_string(),
    })?;
    Ok(Any { yaml })
}

fn flow_yaml(value: &Value, out: &mut String) -> serde_json::Result<()> {
    match value {
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow_yaml(item, out)?;
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&serde_json::to_string(k)?);
                out.push_str(": ");
                flow_yaml(v, out)?;
            }
            out.push('}');
        }
        scalar => out.push_str(&serde_json::to_string(scalar)?),
    }
    Ok(())
}

fn info(o: &Obj) -> Result<Info> {
    Ok(Info {
        title: o.str("title")?,
        version: o.str("version")?,
        description: o.str("description")?,
        terms_of_service: o.str("termsOfService")?,
        contact: o
            .child("contact")?
            .map(|c| {
                Ok(Contact {
                    name: c.str("name")?,
                    url: c.str("url")?,
                    email: c.str("email")?,
                    vendor_extension: c.extensions()?,
                })
            })
            .transpose()?,
        license: o
            .child("license")?
            .map(|l| {
                Ok(License {
                    name: l.str("name")?,
                    url: l.str("url")?,
                    vendor_extension: l.extensions()?,
                })
            })
            .transpose()?,
        vendor_extension: o.extensions()?,
    })
}

fn external_docs(o: &Obj) -> Result<ExternalDocs> {
    Ok(ExternalDocs {
        description: o.str("description")?,
        url: o.str("url")?,
        vendor_extension: o.extensions()?,
    })
}

fn security_requirement(v: &Value, path: String) -> Result<SecurityRequirement> {
    let o = Obj::new(v, path)?;
    Ok(SecurityRequirement {
        additional_properties: o
            .map
            .keys()
            .map(|name| {
                Ok(NamedStringArray {
                    name: name.clone(),
                    value: Some(StringArray {
                        value: o.strings(name)?,
                    }),
                })
            })
            .collect::<Result<_>>()?,
    })
}

fn paths(o: &Obj) -> Result<Paths> {
    Ok(Paths {
        vendor_extension: o.extensions()?,
        path: o
            .entries()
            .map(|(name, v, path)| {
                Ok(NamedPathItem {
                    name: name.to_string(),
                    value: Some(path_item(&Obj::new(v, path)?)?),
                })
            })
            .collect::<Result<_>>()?,
    })
}

fn path_item(o: &Obj) -> Result<PathItem> {
    let op = |key: &str| -> Result<Option<Operation>> {
        o.child(key)?.map(|x| operation(&x)).transpose()
    };
    Ok(PathItem {
        r#ref: o.str("$ref")?,
        get: op("get")?,
        put: op("put")?,
        post: op("post")?,
        delete: op("delete")?,
        options: op("options")?,
        head: op("head")?,
        patch: op("patch")?,
        parameters: o.array("parameters", parameters_item)?,
        vendor_extension: o.extensions()?,
    })
}

fn operation(o: &Obj) -> Result<Operation> {
    Ok(Operation {
        tags: o.strings("tags")?,
        summary: o.str("summary")?,
        description: o.str("description")?,
        external_docs: o
            .child("externalDocs")?
            .map(|e| external_docs(&e))
            .transpose()?,
        operation_id: o.str("operationId")?,
        produces: o.strings("produces")?,
        consumes: o.strings("consumes")?,
        parameters: o.array("parameters", parameters_item)?,
        responses: o.child("responses")?.map(|r| responses(&r)).transpose()?,
        schemes: o.strings("schemes")?,
        deprecated: o.bool("deprecated")?,
        security: o.array("security", security_requirement)?,
        vendor_extension: o.extensions()?,
    })
}

fn json_reference(o: &Obj) -> Result<JsonReference> {
    Ok(JsonReference {
        r#ref: o.str("$ref")?,
        description: o.str("description")?,
    })
}

fn parameters_item(v: &Value, path: String) -> Result<ParametersItem> {
    let o = Obj::new(v, path)?;
    let oneof = if o.map.contains_key("$ref") {
        parameters_item::Oneof::JsonReference(json_reference(&o)?)
    } else {
        parameters_item::Oneof::Parameter(Box::new(parameter(&o)?))
    };
    Ok(ParametersItem { oneof: Some(oneof) })
}

fn parameter(o: &Obj) -> Result<Parameter> {
    let location = o.str("in")?;
    let oneof = match location.as_str() {
        "body" => parameter::Oneof::BodyParameter(BodyParameter {
            description: o.str("description")?,
            name: o.str("name")?,
            r#in: location,
            required: o.bool("required")?,
            schema: o.child("schema")?.map(|s| schema(&s, 0)).transpose()?,
            vendor_extension: o.extensions()?,
        }),
        "query" | "formData" => {
            let sub = query_parameter(o, location.clone())?;
            parameter::Oneof::NonBodyParameter(NonBodyParameter {
                oneof: Some(if location == "query" {
                    non_body_parameter::Oneof::QueryParameterSubSchema(sub)
                } else {
                    non_body_parameter::Oneof::FormDataParameterSubSchema(sub)
                }),
            })
        }
        "path" | "header" => {
            let sub = path_parameter(o, location.clone())?;
            parameter::Oneof::NonBodyParameter(NonBodyParameter {
                oneof: Some(if location == "path" {
                    non_body_parameter::Oneof::PathParameterSubSchema(sub)
                } else {
                    non_body_parameter::Oneof::HeaderParameterSubSchema(sub)
                }),
            })
        }
        _ => {
            return Err(OpenApiV2Error::ParameterLocation {
                path: o.at("in"),
                location,
            });
        }
    };
    Ok(Parameter { oneof: Some(oneof) })
}

fn query_parameter(o: &Obj, location: String) -> Result<QueryParameterSubSchema> {
    Ok(QueryParameterSubSchema {
        required: o.bool("required")?,
        r#in: location,
        description: o.str("description")?,
        name: o.str("name")?,
        allow_empty_value: o.bool("allowEmptyValue")?,
        r#type: o.str("type")?,
        format: o.str("format")?,
        items: o
            .child("items")?
            .map(|i| primitives_items(&i, 0))
            .transpose()?,
        collection_format: o.str("collectionFormat")?,
        default: o.any("default")?,
        maximum: o.f64("maximum")?,
        exclusive_maximum: o.bool("exclusiveMaximum")?,
        minimum: o.f64("minimum")?,
        exclusive_minimum: o.bool("exclusiveMinimum")?,
        max_length: o.i64("maxLength")?,
        min_length: o.i64("minLength")?,
        pattern: o.str("pattern")?,
        max_items: o.i64("maxItems")?,
        min_items: o.i64("minItems")?,
        unique_items: o.bool("uniqueItems")?,
        r#enum: o.anys("enum")?,
        multiple_of: o.f64("multipleOf")?,
        vendor_extension: o.extensions()?,
    })
}

fn path_parameter(o: &Obj, location: String) -> Result<PathParameterSubSchema> {
    Ok(PathParameterSubSchema {
        required: o.bool("required")?,
        r#in: location,
        description: o.str("description")?,
        name: o.str("name")?,
        r#type: o.str("type")?,
        format: o.str("format")?,
        items: o
            .child("items")?
            .map(|i| primitives_items(&i, 0))
            .transpose()?,
        collection_format: o.str("collectionFormat")?,
        default: o.any("default")?,
        maximum: o.f64("maximum")?,
        exclusive_maximum: o.bool("exclusiveMaximum")?,
        minimum: o.f64("minimum")?,
        exclusive_minimum: o.bool("exclusiveMinimum")?,
        max_length: o.i64("maxLength")?,
        min_length: o.i64("minLength")?,
        pattern: o.str("pattern")?,
        max_items: o.i64("maxItems")?,
        min_items: o.i64("minItems")?,
        unique_items: o.bool("uniqueItems")?,
        r#enum: o.anys("enum")?,
        multiple_of: o.f64("multipleOf")?,
        vendor_extension: o.extensions()?,
    })
}

fn too_deep(path: String) -> OpenApiV2Error {
    OpenApiV2Error::TooDeep {
        path,
        limit: MAX_DEPTH,
    }
}

fn primitives_items(o: &Obj, depth: usize) -> Result<PrimitivesItems> {
    if depth > MAX_DEPTH {
        return Err(too_deep(o.path.clone()));
    }
    Ok(PrimitivesItems {
        r#type: o.str("type")?,
        format: o.str("format")?,
        items: o
            .child("items")?
            .map(|i| primitives_items(&i, depth + 1).map(Box::new))
            .transpose()?,
        collection_format: o.str("collectionFormat")?,
        default: o.any("default")?,
        maximum: o.f64("maximum")?,
        exclusive_maximum: o.bool("exclusiveMaximum")?,
        minimum: o.f64("minimum")?,
        exclusive_minimum: o.bool("exclusiveMinimum")?,
        max_length: o.i64("maxLength")?,
        min_length: o.i64("minLength")?,
        pattern: o.str("pattern")?,
        max_items: o.i64("maxItems")?,
        min_items: o.i64("minItems")?,
        unique_items: o.bool("uniqueItems")?,
        r#enum: o.anys("enum")?,
        multiple_of: o.f64("multipleOf")?,
        vendor_extension: o.extensions()?,
    })
}

fn responses(o: &Obj) -> Result<Responses> {
    Ok(Responses {
        response_code: o
            .entries()
            .map(|(code, v, path)| {
                let r = Obj::new(v, path)?;
                let oneof = if r.map.contains_key("$ref") {
                    response_value::Oneof::JsonReference(json_reference(&r)?)
                } else {
                    response_value::Oneof::Response(Box::new(response(&r)?))
                };
                Ok(NamedResponseValue {
                    name: code.to_string(),
                    value: Some(ResponseValue { oneof: Some(oneof) }),
                })
            })
            .collect::<Result<_>>()?,
        vendor_extension: o.extensions()?,
    })
}

fn response(o: &Obj) -> Result<Response> {
    Ok(Response {
        description: o.str("description")?,
        schema: o
            .child("schema")?
            .map(|s| {
                Ok(SchemaItem {
                    oneof: Some(schema_item::Oneof::Schema(Box::new(schema(&s, 0)?))),
                })
            })
            .transpose()?,
        vendor_extension: o.extensions()?,
    })
}

/// The members of an object whose values are all schemas (`definitions`, `properties`).
/// Vendor extensions do not belong there, so every member counts.
fn named_schemas(o: &Obj, depth: usize) -> Result<Vec<NamedSchema>> {
    o.map
        .iter()
        .map(|(name, v)| {
            Ok(NamedSchema {
                name: name.clone(),
                value: Some(schema(&Obj::new(v, o.at(name))?, depth + 1)?),
            })
        })
        .collect()
}

fn schema(o: &Obj, depth: usize) -> Result<Schema> {
    if depth > MAX_DEPTH {
        return Err(too_deep(o.path.clone()));
    }
    let sub = |v: &Value, path: String| schema(&Obj::new(v, path)?, depth + 1);
    let additional_properties = match o.map.get("additionalProperties") {
        None => None,
        Some(Value::Bool(b)) => Some(additional_properties_item::Oneof::Boolean(*b)),
        Some(v) => Some(additional_properties_item::Oneof::Schema(Box::new(sub(
            v,
            o.at("additionalProperties"),
        )?))),
    };
    let r#type = match o.map.get("type") {
        None => None,
        Some(Value::String(t)) => Some(TypeItem {
            value: vec![t.clone()],
        }),
        Some(Value::Array(_)) => Some(TypeItem {
            value: o.strings("type")?,
        }),
        Some(_) => return Err(shape(o.at("type"), "a string or an array of strings")),
    };
    let items = match o.map.get("items") {
        None => None,
        Some(Value::Array(_)) => Some(ItemsItem {
            schema: o.array("items", sub)?,
        }),
        Some(v) => Some(ItemsItem {
            schema: vec![sub(v, o.at("items"))?],
        }),
    };
    Ok(Schema {
        r#ref: o.str("$ref")?,
        format: o.str("format")?,
        title: o.str("title")?,
        description: o.str("description")?,
        default: o.any("default")?,
        multiple_of: o.f64("multipleOf")?,
        maximum: o.f64("maximum")?,
        exclusive_maximum: o.bool("exclusiveMaximum")?,
        minimum: o.f64("minimum")?,
        exclusive_minimum: o.bool("exclusiveMinimum")?,
        max_length: o.i64("maxLength")?,
        min_length: o.i64("minLength")?,
        pattern: o.str("pattern")?,
        max_items: o.i64("maxItems")?,
        min_items: o.i64("minItems")?,
        unique_items: o.bool("uniqueItems")?,
        max_properties: o.i64("maxProperties")?,
        min_properties: o.i64("minProperties")?,
        required: o.strings("required")?,
        r#enum: o.anys("enum")?,
        additional_properties: additional_properties
            .map(|a| AdditionalPropertiesItem { oneof: Some(a) }),
        r#type,
        items,
        all_of: o.array("allOf", sub)?,
        properties: o
            .child("properties")?
            .map(|p| {
                Ok(Properties {
                    additional_properties: named_schemas(&p, depth)?,
                })
            })
            .transpose()?,
        discriminator: o.str("discriminator")?,
        read_only: o.bool("readOnly")?,
        external_docs: o
            .child("externalDocs")?
            .map(|e| external_docs(&e))
            .transpose()?,
        example: o.any("example")?,
        vendor_extension: o.extensions()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": {
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
                    "parameters": [
                        {"name": "name", "in": "path", "required": true, "type": "string", "uniqueItems": true},
                        {"$ref": "#/parameters/namespace-vgWSWtn3"}
                    ],
                    "patch": {
                        "operationId": "patchAppsV1NamespacedDeployment",
                        "consumes": ["application/merge-patch+json"],
                        "parameters": [
                            {"name": "body", "in": "body", "required": true, "schema": {"$ref": "#/definitions/Patch"}},
                            {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true,
                             "description": "Strict or not"},
                            {"name": "X-Trace", "in": "header", "type": "string"},
                            {"name": "tags", "in": "formData", "type": "array", "items": {"type": "string"},
                             "enum": ["a", "b"], "default": "a", "maxItems": 3}
                        ],
                        "responses": {
                            "200": {"description": "OK", "schema": {"$ref": "#/definitions/Deployment"}},
                            "401": {"$ref": "#/responses/Unauthorized"}
                        },
                        "x-kubernetes-action": "patch",
                        "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"}
                    }
                },
                "x-paths-note": "kept"
            },
            "definitions": {
                "Deployment": {
                    "description": "Deployment enables declarative updates.",
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "metadata": {"$ref": "#/definitions/ObjectMeta", "description": "Standard metadata."},
                        "spec": {
                            "type": "object",
                            "properties": {
                                "replicas": {"type": "integer", "format": "int32", "minimum": 1.5, "maxLength": 7.0,
                                             "description": "Number of desired pods."},
                                "containers": {"type": "array", "items": {"type": "string"},
                                               "x-kubernetes-patch-merge-key": "name",
                                               "x-kubernetes-patch-strategy": "merge"},
                                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                                "open": {"type": "object", "additionalProperties": true},
                                "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                                "policy": {"type": "string", "enum": ["Always", "Never"], "default": "Always"},
                                "empty": {"type": "object", "properties": {}}
                            }
                        }
                    },
                    "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
                },
                "ObjectMeta": {"type": "object", "allOf": [{"type": "object"}], "readOnly": true},
                "Patch": {"type": ["object", "string"]}
            },
            "security": [{"BearerToken": []}],
            "x-top": {"n": 1}
        })
    }

    fn named<'a, T>(items: &'a [T], name: &str, key: impl Fn(&T) -> &str) -> &'a T {
        items
            .iter()
            .find(|i| key(i) == name)
            .unwrap_or_else(|| panic!("no {name}"))
    }

    fn yaml_value(a: &Any) -> Value {
        serde_norway::from_str(&a.yaml).unwrap()
    }

    fn decoded() -> Document {
        let bytes = encode_document(&sample()).unwrap();
        decode_document(&bytes).unwrap()
    }

    #[test]
    fn round_trips_document_header_and_extensions() {
        let doc = decoded();
        assert_eq!(doc, document_message(&sample()).unwrap());
        assert_eq!(doc.swagger, "2.0");
        let info = doc.info.as_ref().unwrap();
        assert_eq!(
            (info.title.as_str(), info.version.as_str()),
            ("Kubernetes", "v1.33.0")
        );
        assert_eq!(doc.vendor_extension.len(), 1);
        assert_eq!(doc.vendor_extension[0].name, "x-top");
        assert_eq!(
            yaml_value(doc.vendor_extension[0].value.as_ref().unwrap()),
            json!({"n": 1})
        );
        let req = &doc.security[0].additional_properties[0];
        assert_eq!(req.name, "BearerToken");
        assert!(req.value.as_ref().unwrap().value.is_empty());
    }

    #[test]
    fn round_trips_definitions() {
        let doc = decoded();
        let defs = &doc.definitions.as_ref().unwrap().additional_properties;
        assert_eq!(
            defs.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(),
            ["Deployment", "ObjectMeta", "Patch"]
        );
        let deploy = defs[0].value.as_ref().unwrap();
        assert_eq!(deploy.r#type.as_ref().unwrap().value, ["object"]);
        assert_eq!(deploy.required, ["spec"]);
        let gvk = named(
            &deploy.vendor_extension,
            "x-kubernetes-group-version-kind",
            |e| &e.name,
        );
        assert_eq!(
            yaml_value(gvk.value.as_ref().unwrap()),
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        let props = &deploy.properties.as_ref().unwrap().additional_properties;
        let metadata = named(props, "metadata", |p| &p.name)
            .value
            .as_ref()
            .unwrap();
        assert_eq!(metadata.r#ref, "#/definitions/ObjectMeta");
        assert_eq!(metadata.description, "Standard metadata.");
        assert!(metadata.r#type.is_none());

        let spec = named(props, "spec", |p| &p.name).value.as_ref().unwrap();
        let fields = &spec.properties.as_ref().unwrap().additional_properties;
        let field = |n: &str| named(fields, n, |p| &p.name).value.as_ref().unwrap();
        let replicas = field("replicas");
        assert_eq!(replicas.format, "int32");
        assert_eq!(replicas.minimum, 1.5);
        assert_eq!(replicas.max_length, 7);
        assert_eq!(replicas.description, "Number of desired pods.");
        let containers = field("containers");
        assert_eq!(containers.items.as_ref().unwrap().schema.len(), 1);
        assert_eq!(containers.vendor_extension.len(), 2);
        assert_eq!(
            yaml_value(containers.vendor_extension[0].value.as_ref().unwrap()),
            json!("name")
        );
        match field("labels")
            .additional_properties
            .as_ref()
            .unwrap()
            .oneof
            .as_ref()
        {
            Some(additional_properties_item::Oneof::Schema(s)) => {
                assert_eq!(s.r#type.as_ref().unwrap().value, ["string"]);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(
            field("open").additional_properties.as_ref().unwrap().oneof,
            Some(additional_properties_item::Oneof::Boolean(true))
        );
        assert_eq!(field("tuple").items.as_ref().unwrap().schema.len(), 2);
        let policy = field("policy");
        assert_eq!(
            policy.r#enum.iter().map(yaml_value).collect::<Vec<_>>(),
            [json!("Always"), json!("Never")]
        );
        assert_eq!(
            yaml_value(policy.default.as_ref().unwrap()),
            json!("Always")
        );
        // An empty `properties` is still present: kubectl tells "object with no fields"
        // (a kind) from "map" by it.
        assert!(field("empty").properties.is_some());

        let meta = defs[1].value.as_ref().unwrap();
        assert_eq!(meta.all_of.len(), 1);
        assert!(meta.read_only);
        assert_eq!(
            defs[2]
                .value
                .as_ref()
                .unwrap()
                .r#type
                .as_ref()
                .unwrap()
                .value,
            ["object", "string"]
        );
    }

    #[test]
    fn round_trips_paths_operations_and_parameters() {
        let doc = decoded();
        let paths = doc.paths.as_ref().unwrap();
        assert_eq!(paths.vendor_extension[0].name, "x-paths-note");
        assert_eq!(paths.path.len(), 1);
        let item = paths.path[0].value.as_ref().unwrap();
        assert_eq!(
            paths.path[0].name,
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        );
        let first = match item.parameters[0].oneof.as_ref() {
            Some(parameters_item::Oneof::Parameter(p)) => p.oneof.clone(),
            other => panic!("unexpected {other:?}"),
        };
        match first {
            Some(parameter::Oneof::NonBodyParameter(NonBodyParameter {
                oneof: Some(non_body_parameter::Oneof::PathParameterSubSchema(p)),
            })) => {
                assert_eq!(
                    (p.name.as_str(), p.r#in.as_str(), p.required),
                    ("name", "path", true)
                );
                assert!(p.unique_items);
            }
            other => panic!("unexpected {other:?}"),
        }
        match item.parameters[1].oneof.as_ref() {
            Some(parameters_item::Oneof::JsonReference(r)) => {
                assert_eq!(r.r#ref, "#/parameters/namespace-vgWSWtn3");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(item.get.is_none());
        let patch = item.patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchAppsV1NamespacedDeployment");
        assert_eq!(patch.consumes, ["application/merge-patch+json"]);
        let gvk = named(
            &patch.vendor_extension,
            "x-kubernetes-group-version-kind",
            |e| &e.name,
        );
        assert_eq!(
            yaml_value(gvk.value.as_ref().unwrap()),
            json!({"group": "apps", "kind": "Deployment", "version": "v1"})
        );
        let param = |i: usize| match patch.parameters[i].oneof.as_ref() {
            Some(parameters_item::Oneof::Parameter(p)) => p.oneof.clone().unwrap(),
            other => panic!("unexpected {other:?}"),
        };
        match param(0) {
            parameter::Oneof::BodyParameter(b) => {
                assert_eq!(
                    (b.name.as_str(), b.r#in.as_str(), b.required),
                    ("body", "body", true)
                );
                assert_eq!(b.schema.unwrap().r#ref, "#/definitions/Patch");
            }
            other => panic!("unexpected {other:?}"),
        }
        let non_body = |i: usize| match param(i) {
            parameter::Oneof::NonBodyParameter(n) => n.oneof.unwrap(),
            other => panic!("unexpected {other:?}"),
        };
        match non_body(1) {
            non_body_parameter::Oneof::QueryParameterSubSchema(q) => {
                assert_eq!(q.name, "fieldValidation");
                assert_eq!(q.description, "Strict or not");
                assert_eq!(q.r#type, "string");
            }
            other => panic!("unexpected {other:?}"),
        }
        match non_body(2) {
            non_body_parameter::Oneof::HeaderParameterSubSchema(h) => assert_eq!(h.name, "X-Trace"),
            other => panic!("unexpected {other:?}"),
        }
        match non_body(3) {
            non_body_parameter::Oneof::FormDataParameterSubSchema(f) => {
                assert_eq!(f.items.unwrap().r#type, "string");
                assert_eq!(f.max_items, 3);
                assert_eq!(yaml_value(f.default.as_ref().unwrap()), json!("a"));
                assert_eq!(f.r#enum.len(), 2);
            }
            other => panic!("unexpected {other:?}"),
        }
        let responses = &patch.responses.as_ref().unwrap().response_code;
        assert_eq!(responses[0].name, "200");
        match responses[0].value.as_ref().unwrap().oneof.as_ref() {
            Some(response_value::Oneof::Response(r)) => {
                assert_eq!(r.description, "OK");
                match r.schema.as_ref().unwrap().oneof.as_ref() {
                    Some(schema_item::Oneof::Schema(s)) => {
                        assert_eq!(s.r#ref, "#/definitions/Deployment")
                    }
                    None => panic!("no schema"),
                }
            }
            other => panic!("unexpected {other:?}"),
        }
        match responses[1].value.as_ref().unwrap().oneof.as_ref() {
            Some(response_value::Oneof::JsonReference(r)) => {
                assert_eq!(r.r#ref, "#/responses/Unauthorized")
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    /// The wire bytes, written out by hand from OpenAPIv2.proto's field numbers, so a wrong
    /// tag in our message definitions cannot hide behind a self-consistent round trip.
    #[test]
    fn wire_format_uses_the_gnostic_field_numbers() {
        let bytes = encode_document(&json!({
            "swagger": "2.0",
            "definitions": {"A": {"type": "string", "x-k": 1}}
        }))
        .unwrap();
        let type_item = [0x0a, 6, b's', b't', b'r', b'i', b'n', b'g'];
        // Schema.type = 22 (wire type 2): key 22 << 3 | 2 = 178 = varint b2 01.
        let mut schema = vec![0xb2, 0x01, type_item.len() as u8];
        schema.extend(type_item);
        // Schema.vendor_extension = 31: key 250 = varint fa 01; NamedAny{name=1, value=2};
        // Any.yaml = 2.
        let any = [0x12, 1, b'1'];
        let mut named_any = vec![0x0a, 3, b'x', b'-', b'k', 0x12, any.len() as u8];
        named_any.extend(any);
        schema.extend([0xfa, 0x01, named_any.len() as u8]);
        schema.extend(named_any);
        // NamedSchema{name=1, value=2}, Definitions{additional_properties=1}, Document.definitions=9.
        let mut named = vec![0x0a, 1, b'A', 0x12, schema.len() as u8];
        named.extend(schema);
        let mut definitions = vec![0x0a, named.len() as u8];
        definitions.extend(named);
        let mut expected = vec![0x0a, 3, b'2', b'.', b'0', 0x4a, definitions.len() as u8];
        expected.extend(definitions);
        assert_eq!(bytes, expected);
    }

    #[test]
    fn extension_yaml_keeps_strings_strings() {
        let words = json!([
            "yes",
            "no",
            "on",
            "off",
            "y",
            "true",
            "1",
            "0x1F",
            "1_000",
            "null",
            "~",
            "a: b",
            "- x",
            "",
            "tab\tquote\"back\\slash\u{1}",
            "ünï"
        ]);
        let gvk = json!([{"group": "", "kind": "Pod", "version": "v1"}]);
        let mixed =
            json!({"n": -1.5, "b": false, "z": null, "e": {}, "l": [], "big": 12345678901234_i64});
        let doc = document_message(&json!({"definitions": {"A": {
            "x-kubernetes-group-version-kind": gvk,
            "x-words": words,
            "x-mixed": mixed,
        }}}))
        .unwrap();
        let schema = doc.definitions.unwrap().additional_properties[0]
            .value
            .clone()
            .unwrap();
        let yaml = |i: usize| {
            schema.vendor_extension[i]
                .value
                .as_ref()
                .unwrap()
                .yaml
                .clone()
        };
        assert_eq!(
            yaml(0),
            r#"[{"group": "", "kind": "Pod", "version": "v1"}]"#
        );
        for (i, expected) in [gvk, words, mixed].into_iter().enumerate() {
            let back: Value = serde_norway::from_str(&yaml(i)).unwrap();
            assert_eq!(back, expected, "{}", yaml(i));
        }
        // Every string is quoted, so YAML 1.1 readers (kubectl's) cannot take one for a
        // boolean or a number.
        assert!(yaml(1).starts_with(r#"["yes", "no", "on", "off", "y", "true", "1", "0x1F""#));
    }

    #[test]
    fn wrong_types_are_reported_with_their_pointer() {
        let err =
            encode_document(&json!({"definitions": {"A": {"properties": {"b/c": {"type": 3}}}}}))
                .unwrap_err();
        assert_eq!(
            err,
            OpenApiV2Error::Shape {
                path: "/definitions/A/properties/b~1c/type".into(),
                expected: "a string or an array of strings"
            }
        );
        let err =
            encode_document(&json!({"paths": {"/x": {"get": {"parameters": [{"in": "cookie"}]}}}}))
                .unwrap_err();
        assert_eq!(
            err,
            OpenApiV2Error::ParameterLocation {
                path: "/paths/~1x/get/parameters/0/in".into(),
                location: "cookie".into()
            }
        );
        assert!(matches!(
            encode_document(&json!({"swagger": 2})),
            Err(OpenApiV2Error::Shape { .. })
        ));
        assert!(matches!(
            encode_document(&json!([])),
            Err(OpenApiV2Error::Shape { .. })
        ));
        assert!(matches!(
            encode_document(&json!({"definitions": {"A": {"maxLength": 1.5}}})),
            Err(OpenApiV2Error::Shape {
                expected: "an integer",
                ..
            })
        ));
    }

    #[test]
    fn garbage_does_not_decode() {
        assert!(matches!(
            decode_document(&[0x0a, 0x05, b'x']),
            Err(OpenApiV2Error::Decode(_))
        ));
    }

    #[test]
    fn absurd_nesting_is_refused() {
        let mut s = json!({"type": "string"});
        for _ in 0..(MAX_DEPTH + 5) {
            s = json!({"type": "array", "items": s});
        }
        assert!(matches!(
            encode_document(&json!({"definitions": {"A": s}})),
            Err(OpenApiV2Error::TooDeep { .. })
        ));
    }
}
