//! Behaviour tests over a realistic CRD schema (`Widget`) and tables of invalid schemas.

use serde_json::{Value, json};

use super::*;

const PREFIX: &str = "spec.versions[0].schema.openAPIV3Schema";

fn widget_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["image"],
                "properties": {
                    "replicas": {"type": "integer", "minimum": 0, "maximum": 10, "default": 1},
                    "image": {"type": "string", "minLength": 1},
                    "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 8}},
                    "ports": {
                        "type": "array",
                        "maxItems": 3,
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {
                                "name": {"type": "string"},
                                "port": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 65535},
                                "protocol": {"type": "string", "default": "TCP"}
                            }
                        }
                    },
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "targetPort": {
                        "x-kubernetes-int-or-string": true,
                        "anyOf": [{"type": "integer"}, {"type": "string"}]
                    },
                    "note": {"type": "string", "nullable": true},
                    "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1000000},
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "id": {"type": "string", "format": "uuid"},
                    "since": {"type": "string", "format": "date-time"},
                    "enabled": {"type": "boolean"},
                    "weight": {"type": "integer", "format": "int32"},
                    "strategy": {
                        "type": "object",
                        "default": {},
                        "properties": {
                            "kind": {"type": "string", "default": "Rolling"},
                            "maxSurge": {"type": "integer", "default": 25}
                        }
                    },
                    "selector": {
                        "type": "object",
                        "minProperties": 1,
                        "maxProperties": 2,
                        "additionalProperties": {"type": "string"}
                    },
                    "source": {
                        "type": "object",
                        "properties": {
                            "git": {"type": "string"},
                            "image": {"type": "string"}
                        },
                        "oneOf": [{"required": ["git"]}, {"required": ["image"]}]
                    },
                    "config": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"level": {"type": "integer"}}
                    },
                    "template": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
                }
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

fn widget() -> StructuralSchema {
    StructuralSchema::new(&widget_schema(), PREFIX).unwrap()
}

fn valid_object() -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w1", "namespace": "default", "labels": {"app": "w"}},
        "spec": {
            "replicas": 3,
            "image": "nginx",
            "mode": "b",
            "labels": {"tier": "web"},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "https", "port": 443, "protocol": "TCP"}],
            "tags": ["x", "y"],
            "targetPort": "http",
            "note": null,
            "ratio": 0.5,
            "name": "abc",
            "id": "123e4567-e89b-12d3-a456-426614174000",
            "since": "2024-05-01T10:00:00Z",
            "enabled": true,
            "strategy": {"kind": "Recreate", "maxSurge": 1},
            "selector": {"app": "w"},
            "source": {"git": "https://example.com/r.git"},
            "config": {"level": 2, "anything": {"goes": [1, 2]}},
            "template": {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}}
        },
        "status": {"whatever": {"nested": true}}
    })
}

fn set(obj: &mut Value, pointer: &str, v: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = obj.pointer_mut(parent).unwrap();
    match target {
        Value::Object(m) => {
            m.insert(key.to_string(), v);
        }
        Value::Array(a) => {
            let i = key.parse::<usize>().unwrap();
            if i == a.len() {
                a.push(v);
            } else {
                a[i] = v;
            }
        }
        _ => panic!("not a container at {parent}"),
    }
}

fn remove(obj: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    obj.pointer_mut(parent)
        .unwrap()
        .as_object_mut()
        .unwrap()
        .remove(key);
}

#[test]
fn valid_object_passes() {
    let s = widget();
    let mut obj = valid_object();
    assert!(s.prune(&mut obj).is_empty());
    let before = obj.clone();
    s.apply_defaults(&mut obj);
    assert_eq!(obj, before, "nothing to default in a complete object");
    assert_eq!(s.validate(&obj), vec![]);
}

#[test]
fn invalid_values_give_kube_causes() {
    let s = widget();
    // (pointer, value, field, reason, exact message or "" to skip the message check)
    let cases: Vec<(&str, Value, &str, &str, &str)> = vec![
        (
            "/spec/replicas",
            json!("string"),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
        ),
        (
            "/spec/replicas",
            json!(20),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: 20: spec.replicas in body should be less than or equal to 10",
        ),
        (
            "/spec/replicas",
            json!(-1),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: -1: spec.replicas in body should be greater than or equal to 0",
        ),
        (
            "/spec/replicas",
            json!(1.5),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
        ),
        (
            "/spec/replicas",
            json!(null),
            "spec.replicas",
            "FieldValueInvalid",
            "Invalid value: \"null\": spec.replicas in body must be of type integer: \"null\"",
        ),
        (
            "/spec/mode",
            json!("x"),
            "spec.mode",
            "FieldValueNotSupported",
            "Unsupported value: \"x\": supported values: \"a\", \"b\"",
        ),
        (
            "/spec/image",
            json!(""),
            "spec.image",
            "FieldValueInvalid",
            "Invalid value: \"\": spec.image in body should be at least 1 chars long",
        ),
        (
            "/spec/labels/tier",
            json!(5),
            "spec.labels.tier",
            "FieldValueInvalid",
            "Invalid value: \"integer\": spec.labels.tier in body must be of type string: \"integer\"",
        ),
        (
            "/spec/labels/tier",
            json!("much-too-long"),
            "spec.labels.tier",
            "FieldValueTooLong",
            "Too long: may not be more than 8 bytes",
        ),
        (
            "/spec/ports/1/name",
            json!("http"),
            "spec.ports[1]",
            "FieldValueDuplicate",
            "Duplicate value: {\"name\":\"http\"}",
        ),
        (
            "/spec/ports/0/port",
            json!(70000),
            "spec.ports[0].port",
            "FieldValueInvalid",
            "Invalid value: 70000: spec.ports[0].port in body should be less than or equal to 65535",
        ),
        (
            "/spec/weight",
            json!(3000000000_u64),
            "spec.weight",
            "FieldValueInvalid",
            "Invalid value: 3000000000: spec.weight in body must be of type int32: \"3000000000\"",
        ),
        (
            "/spec/ports/2",
            json!({"port": 1}),
            "spec.ports[2].name",
            "FieldValueRequired",
            "Required value",
        ),
        (
            "/spec/tags/1",
            json!("x"),
            "spec.tags[1]",
            "FieldValueDuplicate",
            "Duplicate value: \"x\"",
        ),
        (
            "/spec/targetPort",
            json!(true),
            "spec.targetPort",
            "FieldValueInvalid",
            "Invalid value: \"boolean\": spec.targetPort in body must be of type integer,string: \"boolean\"",
        ),
        (
            "/spec/targetPort",
            json!(null),
            "spec.targetPort",
            "FieldValueInvalid",
            "",
        ),
        (
            "/spec/note",
            json!(7),
            "spec.note",
            "FieldValueInvalid",
            "Invalid value: \"integer\": spec.note in body must be of type string: \"integer\"",
        ),
        (
            "/spec/ratio",
            json!(0),
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 0: spec.ratio in body should be greater than 0",
        ),
        (
            "/spec/ratio",
            json!(2000000.5),
            "spec.ratio",
            "FieldValueInvalid",
            "Invalid value: 2.0000005e+06: spec.ratio in body should be less than or equal to 1e+06",
        ),
        (
            "/spec/name",
            json!("ABC"),
            "spec.name",
            "FieldValueInvalid",
            "Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'",
        ),
        (
            "/spec/id",
            json!("nope"),
            "spec.id",
            "FieldValueInvalid",
            "Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\"",
        ),
        (
            "/spec/since",
            json!("yesterday"),
            "spec.since",
            "FieldValueInvalid",
            "Invalid value: \"yesterday\": spec.since in body must be of type date-time: \"yesterday\"",
        ),
        (
            "/spec/enabled",
            json!("true"),
            "spec.enabled",
            "FieldValueInvalid",
            "Invalid value: \"string\": spec.enabled in body must be of type boolean: \"string\"",
        ),
        (
            "/spec/selector",
            json!({}),
            "spec.selector",
            "FieldValueInvalid",
            "Invalid value: 0: spec.selector in body should have at least 1 properties",
        ),
        (
            "/spec/selector",
            json!({"a": "1", "b": "2", "c": "3"}),
            "spec.selector",
            "FieldValueTooMany",
            "Too many: 3: must have at most 2 items",
        ),
        (
            "/spec/source",
            json!({}),
            "spec.source",
            "FieldValueInvalid",
            "Invalid value: {}: spec.source in body must validate one and only one schema (oneOf)",
        ),
        (
            "/spec/source",
            json!({"git": "g", "image": "i"}),
            "spec.source",
            "FieldValueInvalid",
            "Invalid value: {\"git\":\"g\",\"image\":\"i\"}: spec.source in body must validate one and only one schema (oneOf). Found 2 valid alternatives",
        ),
        (
            "/spec/config/level",
            json!("high"),
            "spec.config.level",
            "FieldValueInvalid",
            "",
        ),
        (
            "/spec/template",
            json!({"kind": "Pod"}),
            "spec.template.apiVersion",
            "FieldValueRequired",
            "Required value: must not be empty",
        ),
        (
            "/spec",
            json!("flat"),
            "spec",
            "FieldValueInvalid",
            "Invalid value: \"string\": spec in body must be of type object: \"string\"",
        ),
    ];
    for (pointer, value, field, reason, message) in cases {
        let mut obj = valid_object();
        set(&mut obj, pointer, value.clone());
        let causes = s.validate(&obj);
        assert_eq!(causes.len(), 1, "{pointer}={value}: {causes:?}");
        let c = &causes[0];
        assert_eq!(
            (c.field.as_str(), c.reason.as_str()),
            (field, reason),
            "{pointer}={value}: {c:?}"
        );
        if !message.is_empty() {
            assert_eq!(c.message, message, "{pointer}={value}");
        }
    }
}

#[test]
fn too_many_items_and_missing_required() {
    let s = widget();
    let mut obj = valid_object();
    set(
        &mut obj,
        "/spec/ports",
        json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]),
    );
    remove(&mut obj, "/spec/image");
    let causes = s.validate(&obj);
    assert_eq!(
        causes,
        vec![
            Cause::new("FieldValueRequired", "Required value", "spec.image"),
            Cause::new(
                "FieldValueTooMany",
                "Too many: 4: must have at most 3 items",
                "spec.ports"
            ),
        ]
    );
}

#[test]
fn nullable_and_int_or_string_accept_their_values() {
    let s = widget();
    for (pointer, value) in [
        ("/spec/note", json!(null)),
        ("/spec/note", json!("text")),
        ("/spec/targetPort", json!(8080)),
        ("/spec/targetPort", json!("http")),
        ("/spec/replicas", json!(4.0)),
        ("/spec/ratio", json!(1000000)),
        ("/spec/config/free", json!(null)),
        ("/spec/weight", json!(-2147483648_i64)),
    ] {
        let mut obj = valid_object();
        set(&mut obj, pointer, value.clone());
        assert_eq!(s.validate(&obj), vec![], "{pointer}={value}");
    }
}

#[test]
fn root_metadata_and_type_meta_are_not_the_schemas_business() {
    let s = widget();
    let mut obj = valid_object();
    set(&mut obj, "/metadata/annotations", json!({"a": "b"}));
    set(&mut obj, "/metadata/finalizers", json!(["x"]));
    let before = obj.clone();
    assert!(s.prune(&mut obj).is_empty());
    s.apply_defaults(&mut obj);
    assert_eq!(obj, before);
    assert_eq!(s.validate(&obj), vec![]);

    // Without any declaration at all, they still survive pruning.
    let bare = StructuralSchema::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object"}}}),
        "",
    )
    .unwrap();
    let mut obj = json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"x": 1}, "extra": 1});
    assert_eq!(bare.prune(&mut obj), vec!["spec.x", "extra"]);
    assert_eq!(
        obj,
        json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n"}, "spec": {}})
    );
}

#[test]
fn declared_metadata_name_is_validated() {
    let s = StructuralSchema::new(
        &json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 5}
        }}}}),
        "",
    )
    .unwrap();
    let obj = json!({"metadata": {"name": "toolongname", "uid": "u"}});
    assert_eq!(
        s.validate(&obj),
        vec![Cause::new(
            "FieldValueTooLong",
            "Too long: may not be more than 5 bytes",
            "metadata.name"
        )]
    );
}

#[test]
fn pruning_removes_unknowns_but_keeps_preserved_subtrees() {
    let s = widget();
    let mut obj = valid_object();
    set(&mut obj, "/spec/bogus", json!({"deep": 1}));
    set(&mut obj, "/spec/ports/0/extra", json!("x"));
    set(&mut obj, "/spec/strategy/unknown", json!(true));
    set(&mut obj, "/status/free", json!({"form": [1]}));
    set(&mut obj, "/spec/config/free", json!("kept"));
    set(&mut obj, "/spec/template/metadata", json!({"name": "p"}));
    set(&mut obj, "/top", json!(1));
    let removed = s.prune(&mut obj);
    assert_eq!(
        removed,
        vec![
            "spec.ports[0].extra",
            "spec.strategy.unknown",
            "spec.bogus",
            "top"
        ]
    );
    assert!(obj.pointer("/spec/bogus").is_none());
    assert!(obj.pointer("/spec/ports/0/extra").is_none());
    assert!(obj.pointer("/spec/strategy/unknown").is_none());
    assert!(obj.pointer("/top").is_none());
    assert_eq!(obj.pointer("/status/free"), Some(&json!({"form": [1]})));
    assert_eq!(obj.pointer("/spec/config/free"), Some(&json!("kept")));
    assert_eq!(
        obj.pointer("/spec/template/metadata/name"),
        Some(&json!("p"))
    );
    assert_eq!(obj.pointer("/metadata/namespace"), Some(&json!("default")));
    // Pruning keeps the order of the remaining keys.
    let keys: Vec<&String> = obj["spec"].as_object().unwrap().keys().take(3).collect();
    assert_eq!(keys, ["replicas", "image", "mode"]);
}

#[test]
fn pruning_follows_additional_properties_schemas() {
    let s = StructuralSchema::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "byName": {"type": "object", "additionalProperties": {
                "type": "object", "properties": {"x": {"type": "integer"}}
            }},
            "anything": {"type": "object", "additionalProperties": true}
        }}}}),
        "",
    )
    .unwrap();
    let mut obj = json!({"spec": {
        "byName": {"a": {"x": 1, "y": 2}},
        "anything": {"k": {"free": true}}
    }});
    assert_eq!(s.prune(&mut obj), vec!["spec.byName.a.y"]);
    assert_eq!(obj["spec"]["anything"], json!({"k": {"free": true}}));
}

#[test]
fn defaults_fill_nested_absent_fields_and_array_items() {
    let s = widget();
    let mut obj = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {
            "image": "nginx",
            "ports": [{"name": "http", "port": 80}, {"name": "dns", "protocol": "UDP"}],
            "replicas": null
        }
    });
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"]["replicas"],
        json!(1),
        "null in a non-nullable field is defaulted"
    );
    assert_eq!(obj["spec"]["mode"], json!("a"));
    assert_eq!(
        obj["spec"]["strategy"],
        json!({"kind": "Rolling", "maxSurge": 25}),
        "defaults inside a defaulted object apply"
    );
    assert_eq!(obj["spec"]["ports"][0]["protocol"], json!("TCP"));
    assert_eq!(obj["spec"]["ports"][1]["protocol"], json!("UDP"));
    assert!(
        obj["spec"].get("note").is_none(),
        "no default, nothing added"
    );
    assert_eq!(obj["metadata"], json!({"name": "w"}));
    assert_eq!(s.validate(&obj), vec![]);

    // A partially given object gets only its missing fields.
    let mut obj = json!({"spec": {"image": "i", "strategy": {"kind": "Recreate"}}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"]["strategy"],
        json!({"kind": "Recreate", "maxSurge": 25})
    );
}

#[test]
fn defaulting_handles_nulls() {
    let s = StructuralSchema::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string"},
            "b": {"type": "string", "nullable": true, "default": "d"},
            "list": {"type": "array", "items": {"type": "string", "default": "item"}}
        }}}}),
        "",
    )
    .unwrap();
    let mut obj = json!({"spec": {"a": null, "b": null, "list": ["x", null]}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"b": null, "list": ["x", "item"]}}),
        "non-nullable null without default is dropped; nullable null is kept"
    );
}

#[test]
fn any_all_not_and_nested_validations() {
    let s = StructuralSchema::new(
        &json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
                "size": {"type": "integer", "not": {"enum": [13]}},
                "unit": {"type": "string", "anyOf": [{"pattern": "^k"}, {"pattern": "^m"}]},
                "both": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
                "items": {"type": "array", "items": {"type": "integer"},
                          "anyOf": [{"items": {"minimum": 0}}]},
                "port": {"x-kubernetes-int-or-string": true,
                          "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"not": {"enum": [""]}}]}
            }}}}),
        PREFIX,
    )
    .unwrap();
    let ok = json!({"spec": {"size": 12, "unit": "km", "both": "ab", "items": [1], "port": 80}});
    assert_eq!(s.validate(&ok), vec![]);

    let check = |spec: Value, field: &str, suffix: &str| {
        let causes = s.validate(&json!({ "spec": spec }));
        assert!(
            causes
                .iter()
                .any(|c| c.field == field && c.message.ends_with(suffix)),
            "{field} {suffix}: {causes:?}"
        );
    };
    check(
        json!({"size": 13}),
        "spec.size",
        "must not validate the schema (not)",
    );
    check(
        json!({"unit": "g"}),
        "spec.unit",
        "must validate at least one schema (anyOf)",
    );
    check(
        json!({"both": "abcd"}),
        "spec.both",
        "must validate all the schemas (allOf)",
    );
    check(
        json!({"both": "abcd"}),
        "spec.both",
        "Too long: may not be more than 3 bytes",
    );
    check(
        json!({"items": [1, -1]}),
        "spec.items",
        "must validate at least one schema (anyOf)",
    );
    check(
        json!({"port": ""}),
        "spec.port",
        "must validate all the schemas (allOf)",
    );
    check(
        json!({"port": 1.5}),
        "spec.port",
        "must be of type integer,string: \"number\"",
    );
}

#[test]
fn schema_at_and_raw() {
    let s = widget();
    assert_eq!(
        s.schema_at(".spec.replicas").and_then(|v| v.get("type")),
        Some(&json!("integer"))
    );
    assert_eq!(
        s.schema_at("spec.labels.anykey")
            .and_then(|v| v.get("maxLength")),
        Some(&json!(8))
    );
    assert!(s.schema_at(".spec.nope").is_none());
    assert_eq!(s.schema_at(""), Some(&widget_schema()));
    assert_eq!(s.raw(), &widget_schema());
}

/// Each invalid schema, with the (field, reason) causes it must produce and a message fragment.
#[test]
fn invalid_schemas_are_rejected_with_paths() {
    let p = PREFIX;
    let spec = |props: Value| json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}});
    let cases: Vec<(Value, String, &str, &str)> = vec![
        (
            json!({"type": "object", "properties": {"spec": {"properties": {}}}}),
            format!("{p}.properties[spec].type"),
            "FieldValueRequired",
            "Required value: must not be empty for specified object fields",
        ),
        (
            spec(json!({"list": {"type": "array", "items": {"properties": {}}}})),
            format!("{p}.properties[spec].properties[list].items.type"),
            "FieldValueRequired",
            "must not be empty for specified array items",
        ),
        (
            json!({"properties": {}}),
            format!("{p}.type"),
            "FieldValueRequired",
            "must not be empty at the root",
        ),
        (
            json!({"type": "string"}),
            format!("{p}.type"),
            "FieldValueInvalid",
            "must be object at the root",
        ),
        (
            spec(json!({"x": {"type": "strin"}})),
            format!("{p}.properties[spec].properties[x].type"),
            "FieldValueNotSupported",
            "Unsupported value: \"strin\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
        ),
        (
            spec(json!({"x": {"$ref": "#/definitions/x"}})),
            format!("{p}.properties[spec].properties[x].$ref"),
            "FieldValueForbidden",
            "Forbidden: $ref is not supported",
        ),
        (
            spec(json!({"x": {"type": "string", "pattern": "([a-z"}})),
            format!("{p}.properties[spec].properties[x].pattern"),
            "FieldValueInvalid",
            "Invalid value: \"([a-z\": must be a valid regular expression, but isn't",
        ),
        (
            spec(json!({"x": {"type": "integer", "maximum": 5, "default": 7}})),
            format!("{p}.properties[spec].properties[x].default"),
            "FieldValueInvalid",
            "Invalid value: 7: spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].default in body should be less than or equal to 5",
        ),
        (
            spec(json!({"x": {"type": "integer", "default": "one"}})),
            format!("{p}.properties[spec].properties[x].default"),
            "FieldValueInvalid",
            "must be of type integer: \"string\"",
        ),
        (
            spec(
                json!({"x": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": 1}}}),
            ),
            format!("{p}.properties[spec].properties[x].default"),
            "FieldValueInvalid",
            "must not have unknown fields",
        ),
        (
            spec(
                json!({"x": {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}, "default": {}}}),
            ),
            format!("{p}.properties[spec].properties[x].default.a"),
            "FieldValueRequired",
            "Required value",
        ),
        (
            spec(
                json!({"x": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}),
            ),
            format!("{p}.properties[spec].properties[x].additionalProperties"),
            "FieldValueForbidden",
            "additionalProperties and properties are mutual exclusive",
        ),
        (
            spec(json!({"x": {"type": "array"}})),
            format!("{p}.properties[spec].properties[x].items"),
            "FieldValueRequired",
            "must be specified",
        ),
        (
            spec(json!({"x": {"type": "array", "items": [{"type": "string"}]}})),
            format!("{p}.properties[spec].properties[x].items"),
            "FieldValueForbidden",
            "items must be a schema object and not an array",
        ),
        (
            spec(json!({"x": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}})),
            format!("{p}.properties[spec].properties[x].uniqueItems"),
            "FieldValueForbidden",
            "uniqueItems cannot be set to true",
        ),
        (
            spec(json!({"x": {"type": "string", "x-kubernetes-int-or-string": true}})),
            format!("{p}.properties[spec].properties[x].type"),
            "FieldValueInvalid",
            "must be empty if x-kubernetes-int-or-string is true",
        ),
        (
            spec(json!({"x": {"type": "object", "x-kubernetes-preserve-unknown-fields": false}})),
            format!("{p}.properties[spec].properties[x].x-kubernetes-preserve-unknown-fields"),
            "FieldValueInvalid",
            "Invalid value: false: must be true or undefined",
        ),
        (
            spec(json!({"x": {"type": "string", "anyOf": [{"type": "string"}]}})),
            format!("{p}.properties[spec].properties[x].anyOf[0].type"),
            "FieldValueForbidden",
            "must be empty to be structural",
        ),
        (
            spec(
                json!({"x": {"type": "object", "anyOf": [{"properties": {"y": {"minLength": 1}}}]}}),
            ),
            format!("{p}.properties[spec].properties[x].properties[y]"),
            "FieldValueRequired",
            "because it is defined in spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[x].anyOf[0].properties[y]",
        ),
        (
            spec(json!({"x": {"type": "string", "x-kubernetes-list-type": "set"}})),
            format!("{p}.properties[spec].properties[x].x-kubernetes-list-type"),
            "FieldValueInvalid",
            "must only be used on type=array",
        ),
        (
            spec(
                json!({"x": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}),
            ),
            format!("{p}.properties[spec].properties[x].x-kubernetes-list-map-keys"),
            "FieldValueRequired",
            "must not be empty if x-kubernetes-list-type is map",
        ),
        (
            spec(
                json!({"x": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}),
            ),
            format!("{p}.properties[spec].properties[x].items.properties[k]"),
            "FieldValueRequired",
            "must have a default or be a required property",
        ),
        (
            spec(
                json!({"x": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}}),
            ),
            format!("{p}.properties[spec].properties[x].x-kubernetes-list-type"),
            "FieldValueNotSupported",
            "Unsupported value: \"bag\"",
        ),
        (
            spec(
                json!({"x": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}}}),
            ),
            format!("{p}.properties[spec].properties[x].items.x-kubernetes-map-type"),
            "FieldValueInvalid",
            "must be atomic as item of a list with x-kubernetes-list-type=set",
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
            format!("{p}.properties[metadata]"),
            "FieldValueForbidden",
            "must not specify anything other than name and generateName",
        ),
        (
            json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "integer"}}}}}),
            format!("{p}.properties[metadata].properties[name].type"),
            "FieldValueInvalid",
            "must be string",
        ),
        (
            json!({"type": "object", "properties": {"kind": {"type": "integer"}}}),
            format!("{p}.properties[kind].type"),
            "FieldValueInvalid",
            "must be string",
        ),
        (
            spec(json!({"x": {"type": "object", "patternProperties": {}}})),
            format!("{p}.properties[spec].properties[x].patternProperties"),
            "FieldValueForbidden",
            "patternProperties is not supported",
        ),
        (
            spec(json!({"x": {"type": "string", "maxLength": -1}})),
            format!("{p}.properties[spec].properties[x].maxLength"),
            "FieldValueInvalid",
            "must be a non-negative integer",
        ),
    ];
    for (schema, field, reason, fragment) in cases {
        let err = StructuralSchema::new(&schema, p).unwrap_err();
        assert!(
            err.iter()
                .any(|c| c.field == field && c.reason == reason && c.message.contains(fragment)),
            "want {field} {reason} {fragment:?}, got {err:?}"
        );
    }
}

#[test]
fn type_exemptions_and_valid_extensions_are_accepted() {
    let schemas = [
        json!({"x-kubernetes-preserve-unknown-fields": true}),
        json!({"type": "object", "properties": {"spec": {"x-kubernetes-preserve-unknown-fields": true}}}),
        json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}}),
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
            "name": {"type": "string", "pattern": "^w-"}, "generateName": {"type": "string"}}}}}),
        json!({"type": "object", "properties": {"m": {"type": "object", "x-kubernetes-map-type": "atomic",
            "additionalProperties": {"type": "string"}}}}),
        json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": false}}}),
        json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["k"], "items": {"type": "object",
            "properties": {"k": {"type": "string", "default": "d"}}}}}}),
    ];
    for s in schemas {
        assert!(StructuralSchema::new(&s, "").is_ok(), "{s}");
    }
}

#[test]
fn errors_without_prefix_and_through_schema_error() {
    let err = StructuralSchema::parse(&json!({"type": "object", "properties": {"a": {}}}), "")
        .unwrap_err();
    assert_eq!(
        err.causes(),
        [Cause::new(
            "FieldValueRequired",
            "Required value: must not be empty for specified object fields",
            "properties[a].type"
        )]
    );
    assert!(err.to_string().contains("properties[a].type"));
}

#[test]
fn schema_is_clone_send_sync() {
    fn assert_traits<T: Clone + Send + Sync>() {}
    assert_traits::<StructuralSchema>();
}
