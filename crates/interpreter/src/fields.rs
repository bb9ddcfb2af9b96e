//! Lenient readers of JSON objects: member statuses come from other clusters and other
//! versions, so a missing or odd field reads as its zero value instead of failing the whole
//! interpretation (as Go's typed decoding of an absent field would).

use serde_json::{Map, Value};

/// The value at the JSON pointer `pointer`. `Value::pointer` unescapes every token with two
/// string replacements (allocating); the interpreter's pointers are literals without `~`, and
/// merged reads interpret every member object on every read, so those take a path without
/// allocation.
pub(crate) fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(v);
    }
    if pointer.contains('~') {
        return v.pointer(pointer);
    }
    let rest = pointer.strip_prefix('/')?;
    let mut cur = v;
    for token in rest.split('/') {
        cur = match cur {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// The string at `pointer`, `""` when absent or not a string.
pub(crate) fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    at(v, pointer).and_then(Value::as_str).unwrap_or("")
}

/// The integer at `pointer`, when present and an integer.
pub(crate) fn opt_int(v: &Value, pointer: &str) -> Option<i64> {
    at(v, pointer).and_then(Value::as_i64)
}

/// The integer at `pointer`, 0 when absent.
pub(crate) fn int_at(v: &Value, pointer: &str) -> i64 {
    opt_int(v, pointer).unwrap_or(0)
}

/// `metadata.generation`, 0 when absent.
pub(crate) fn generation(obj: &Value) -> i64 {
    int_at(obj, "/metadata/generation")
}

/// `status` when it is an object.
pub(crate) fn status(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("status").and_then(Value::as_object)
}

/// Whether a condition of `type_` has status "True".
pub(crate) fn condition_true(status: &Value, type_: &str) -> bool {
    conditions(status).any(|c| str_at(c, "/type") == type_ && str_at(c, "/status") == "True")
}

/// The conditions of a status.
pub(crate) fn conditions(status: &Value) -> impl Iterator<Item = &Value> {
    status
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Sets an integer field the Kubernetes way: `omitempty` fields are left out when zero.
pub(crate) fn put_int(out: &mut Map<String, Value>, name: &str, value: i64, omit_zero: bool) {
    if value == 0 && omit_zero {
        out.remove(name);
    } else {
        out.insert(name.to_string(), Value::from(value));
    }
}

#[cfg(test)]
mod pointer_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn at_reads_like_a_json_pointer() {
        let v = json!({"a": {"b/c": 1, "d~e": 2, "list": [{"x": 3}], "s": "t"}});
        for p in [
            "",
            "/a",
            "/a/list/0/x",
            "/a/list/1",
            "/a/b~1c",
            "/a/d~0e",
            "/a/s/x",
            "/zz",
            "a",
        ] {
            assert_eq!(at(&v, p), v.pointer(p), "{p}");
        }
    }
}
