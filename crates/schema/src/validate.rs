//! Validating a value against a parsed schema, producing field errors in kube-apiserver's
//! wording (`spec.replicas in body must be of type integer: "string"`, `Required value`, ...).

use std::cmp::Ordering;

use flotilla_apimachinery::Cause;
use serde_json::{Map, Value};

use crate::format;
use crate::schema::{Additional, Checks, ListType, META_KEYS, Nested, Node};
use crate::value::{
    duplicate, field, go_float, in_body, index, invalid, is_integer, json_eq, kind_name,
    not_supported, num_cmp, quote, render, render_quoted, required, too_long, too_many,
};

fn type_error(path: &str, v: &Value, expected: &str, out: &mut Vec<Cause>) {
    let actual = kind_name(v);
    out.push(invalid(
        path,
        &quote(actual),
        &format!(
            "{} must be of type {expected}: {}",
            in_body(path),
            quote(actual)
        ),
    ));
}

/// Validates `v` at `path` against a structural node. `root` marks the object root, where
/// `apiVersion`, `kind` and `metadata` are the server's business unless declared.
pub(crate) fn validate_node(node: &Node, v: &Value, path: &str, root: bool, out: &mut Vec<Cause>) {
    if v.is_null() {
        if node.nullable {
            return;
        }
        if node.int_or_string {
            type_error(path, v, "integer,string", out);
        } else if let Some(t) = node.ty {
            type_error(path, v, t.name(), out);
        }
        // No type at all (preserve-unknown-fields): anything goes, null included.
        return;
    }
    if node.int_or_string {
        if !(is_integer(v) || v.is_string()) {
            type_error(path, v, "integer,string", out);
            return;
        }
    } else if let Some(t) = node.ty
        && !t.matches(v)
    {
        type_error(path, v, t.name(), out);
        return;
    }
    validate_checks(&node.checks, v, path, out);
    match v {
        Value::Object(map) => {
            if node.embedded {
                for key in ["apiVersion", "kind"] {
                    let present = map
                        .get(key)
                        .and_then(Value::as_str)
                        .is_some_and(|s| !s.is_empty());
                    if !present {
                        out.push(required(&field(path, key), "must not be empty"));
                    }
                }
            }
            for (k, child) in map {
                let child_path = field(path, k);
                if let Some(p) = node.properties.get(k) {
                    validate_node(p, child, &child_path, false, out);
                } else if (root || node.embedded) && META_KEYS.contains(&k.as_str()) {
                    continue;
                } else if let Additional::Schema(a) = &node.additional {
                    validate_node(a, child, &child_path, false, out);
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = &node.items {
                for (i, item) in list.iter().enumerate() {
                    validate_node(items, item, &index(path, i), false, out);
                }
            }
            list_semantics(node, list, path, out);
        }
        _ => {}
    }
}

/// `x-kubernetes-list-type: set` items and `map` keys must be unique.
fn list_semantics(node: &Node, list: &[Value], path: &str, out: &mut Vec<Cause>) {
    match node.list_type {
        Some(ListType::Set) => {
            for (i, item) in list.iter().enumerate() {
                if list[..i].iter().any(|prev| json_eq(prev, item)) {
                    out.push(duplicate(&index(path, i), &render(item)));
                }
            }
        }
        Some(ListType::Map) => {
            let keys: Vec<Value> = list
                .iter()
                .map(|item| {
                    let mut key = Map::new();
                    for k in &node.list_map_keys {
                        key.insert(k.clone(), item.get(k).cloned().unwrap_or(Value::Null));
                    }
                    Value::Object(key)
                })
                .collect();
            for (i, key) in keys.iter().enumerate() {
                if keys[..i].iter().any(|prev| json_eq(prev, key)) {
                    out.push(duplicate(&index(path, i), &key.to_string()));
                }
            }
        }
        _ => {}
    }
}

fn validate_nested(n: &Nested, v: &Value, path: &str, out: &mut Vec<Cause>) {
    if let Some(t) = n.ty
        && !t.matches(v)
    {
        type_error(path, v, t.name(), out);
        return;
    }
    validate_checks(&n.checks, v, path, out);
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                if let Some(p) = n.properties.get(k) {
                    validate_nested(p, child, &field(path, k), out);
                } else if let Some(a) = &n.additional {
                    validate_nested(a, child, &field(path, k), out);
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = &n.items {
                for (i, item) in list.iter().enumerate() {
                    validate_nested(items, item, &index(path, i), out);
                }
            }
        }
        _ => {}
    }
}

fn nested_ok(n: &Nested, v: &Value, path: &str) -> (bool, Vec<Cause>) {
    let mut errs = Vec::new();
    validate_nested(n, v, path, &mut errs);
    (errs.is_empty(), errs)
}

fn validate_checks(c: &Checks, v: &Value, path: &str, out: &mut Vec<Cause>) {
    let body = in_body(path);
    if let Some(values) = &c.enum_values
        && !values.iter().any(|e| json_eq(e, v))
    {
        let supported: Vec<String> = values.iter().map(render).collect();
        out.push(not_supported(path, &render(v), &supported));
    }
    if let Some(fmt) = &c.format
        && format::check(fmt, v) == Some(false)
    {
        out.push(invalid(
            path,
            &render(v),
            &format!("{body} must be of type {fmt}: {}", render_quoted(v)),
        ));
    }
    match v {
        Value::Number(n) => {
            if let Some(max) = &c.maximum {
                let ord = num_cmp(n, &max.limit);
                let (bad, rel) = if max.exclusive {
                    (ord != Some(Ordering::Less), "less than")
                } else {
                    (ord == Some(Ordering::Greater), "less than or equal to")
                };
                if bad {
                    out.push(invalid(
                        path,
                        &render(v),
                        &format!("{body} should be {rel} {}", limit(&max.limit)),
                    ));
                }
            }
            if let Some(min) = &c.minimum {
                let ord = num_cmp(n, &min.limit);
                let (bad, rel) = if min.exclusive {
                    (ord != Some(Ordering::Greater), "greater than")
                } else {
                    (ord == Some(Ordering::Less), "greater than or equal to")
                };
                if bad {
                    out.push(invalid(
                        path,
                        &render(v),
                        &format!("{body} should be {rel} {}", limit(&min.limit)),
                    ));
                }
            }
            if let Some(m) = &c.multiple_of
                && !is_multiple(n, m)
            {
                out.push(invalid(
                    path,
                    &render(v),
                    &format!("{body} should be a multiple of {}", limit(m)),
                ));
            }
        }
        Value::String(s) => {
            let chars = s.chars().count() as u64;
            if let Some(max) = c.max_length
                && chars > max
            {
                out.push(too_long(path, max));
            }
            if let Some(min) = c.min_length
                && chars < min
            {
                out.push(invalid(
                    path,
                    &render(v),
                    &format!("{body} should be at least {min} chars long"),
                ));
            }
            if let Some((pattern, re)) = &c.pattern
                && !re.is_match(s)
            {
                out.push(invalid(
                    path,
                    &render(v),
                    &format!("{body} should match '{pattern}'"),
                ));
            }
        }
        Value::Array(list) => {
            if let Some(max) = c.max_items
                && list.len() as u64 > max
            {
                out.push(too_many(path, list.len(), max));
            }
            if let Some(min) = c.min_items
                && (list.len() as u64) < min
            {
                out.push(invalid(
                    path,
                    &list.len().to_string(),
                    &format!("{body} should have at least {min} items"),
                ));
            }
        }
        Value::Object(map) => {
            if let Some(max) = c.max_properties
                && map.len() as u64 > max
            {
                out.push(too_many(path, map.len(), max));
            }
            if let Some(min) = c.min_properties
                && (map.len() as u64) < min
            {
                out.push(invalid(
                    path,
                    &map.len().to_string(),
                    &format!("{body} should have at least {min} properties"),
                ));
            }
            for r in &c.required {
                if !map.contains_key(r) {
                    out.push(required(&field(path, r), ""));
                }
            }
        }
        _ => {}
    }

    if !c.all_of.is_empty() {
        let mut failed = Vec::new();
        for n in &c.all_of {
            let (_, errs) = nested_ok(n, v, path);
            failed.extend(errs);
        }
        if !failed.is_empty() {
            out.extend(failed);
            out.push(invalid(
                path,
                &render(v),
                &format!("{body} must validate all the schemas (allOf)"),
            ));
        }
    }
    if !c.any_of.is_empty() && !c.any_of.iter().any(|n| nested_ok(n, v, path).0) {
        out.push(invalid(
            path,
            &render(v),
            &format!("{body} must validate at least one schema (anyOf)"),
        ));
    }
    if !c.one_of.is_empty() {
        let valid = c.one_of.iter().filter(|n| nested_ok(n, v, path).0).count();
        if valid != 1 {
            let extra = if valid > 1 {
                format!(". Found {valid} valid alternatives")
            } else {
                String::new()
            };
            out.push(invalid(
                path,
                &render(v),
                &format!("{body} must validate one and only one schema (oneOf){extra}"),
            ));
        }
    }
    if let Some(n) = &c.not
        && nested_ok(n, v, path).0
    {
        out.push(invalid(
            path,
            &render(v),
            &format!("{body} must not validate the schema (not)"),
        ));
    }
}

/// Limits are float64 in kube's schema type, so they print like Go floats.
fn limit(n: &serde_json::Number) -> String {
    n.as_f64().map_or_else(|| n.to_string(), go_float)
}

fn is_multiple(n: &serde_json::Number, m: &serde_json::Number) -> bool {
    if let (Some(a), Some(b)) = (n.as_i64(), m.as_i64())
        && b != 0
    {
        return a % b == 0;
    }
    match (n.as_f64(), m.as_f64()) {
        (Some(a), Some(b)) if b != 0.0 => {
            let q = a / b;
            // Tolerate binary rounding (0.3 / 0.1) rather than reject decimal multiples.
            (q - q.round()).abs() <= 1e-9 * q.abs().max(1.0)
        }
        _ => true,
    }
}
