//! JSON Patch (`application/json-patch+json`) as kube-apiserver applies it. kube applies
//! RFC 6902 through the Go library evanphx/json-patch at its v4 semantics, which clients
//! rely on where they differ from the RFC:
//!
//! - `replace` of a member an object lacks adds it (only a missing array item is an error);
//! - `copy` from a member an object lacks copies `null`; `test` of a missing member passes
//!   when the expected value is `null` or absent;
//! - an operation without `value` uses `null`;
//! - array indices may be negative, counted from the end (`-1` is the last item; for `add`,
//!   from the end of the array one longer, so `-1` appends);
//! - a path is split at every `/` and its first segment ignored (so `a/b` is `/b`);
//! - values compare as written in `test` (`1` is not `1.0`);
//! - what `copy` operations add is bounded in all ([`MAX_COPY_BYTES`], kube's
//!   `JSONPatchMaxCopyBytes`).
//!
//! The messages are the library's. kube-apiserver answers a patch that does not apply with a
//! bare 422; Flotilla adds the library's message, which says which operation failed.

use serde_json::Value;

/// kube-apiserver's bound on the operations of one JSON patch (more is 413).
pub const MAX_OPERATIONS: usize = 10_000;

/// How much all `copy` operations of one patch may add (kube-apiserver: 3 MiB).
pub const MAX_COPY_BYTES: usize = 3 * 1024 * 1024;

/// Why a JSON patch was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPatchError {
    /// The body is not a list of operations (kube answers 400).
    #[error("{0}")]
    Decode(String),
    /// More than [`MAX_OPERATIONS`] operations (kube answers 413).
    #[error("The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {0}")]
    TooManyOperations(usize),
    /// An operation does not apply to the document (kube answers 422 with this as the cause).
    #[error("{0}")]
    DoesNotApply(String),
}

/// The library's sentinel errors, which end its messages.
const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";
const TEST_FAILED: &str = "test failed";

/// Checks that `patch` is a list of operations (objects) of at most [`MAX_OPERATIONS`].
pub fn decode(patch: &Value) -> Result<&[Value], JsonPatchError> {
    let ops = match patch {
        Value::Array(ops) => ops,
        other => {
            return Err(JsonPatchError::Decode(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_type(other)
            )));
        }
    };
    if let Some(bad) = ops.iter().find(|op| !op.is_object()) {
        return Err(JsonPatchError::Decode(format!(
            "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
            go_type(bad)
        )));
    }
    if ops.len() > MAX_OPERATIONS {
        return Err(JsonPatchError::TooManyOperations(ops.len()));
    }
    Ok(ops)
}

/// Applies `patch` (a JSON array of operations) to `doc`, all or nothing.
pub fn apply(doc: &Value, patch: &Value) -> Result<Value, JsonPatchError> {
    let ops = decode(patch)?;
    let mut out = doc.clone();
    let mut copied = 0;
    for op in ops {
        apply_one(&mut out, op, &mut copied).map_err(JsonPatchError::DoesNotApply)?;
    }
    Ok(out)
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn string_field(op: &Value, field: &str) -> Option<String> {
    op.get(field).and_then(Value::as_str).map(str::to_owned)
}

fn apply_one(doc: &mut Value, op: &Value, copied: &mut usize) -> Result<(), String> {
    let kind = string_field(op, "op").unwrap_or_else(|| "unknown".into());
    let value = op.get("value").cloned().unwrap_or(Value::Null);
    let path = || {
        string_field(op, "path").ok_or_else(|| format!("operation missing path field: {MISSING}"))
    };
    let from = || {
        string_field(op, "from").ok_or_else(|| format!("operation, missing from field: {MISSING}"))
    };
    match kind.as_str() {
        "add" => {
            let path = path().map_err(|e| format!("add operation failed to decode path: {e}"))?;
            let (con, key) = find(doc, &path).ok_or_else(|| {
                format!("add operation does not apply: doc is missing path: \"{path}\": {MISSING}")
            })?;
            add(con, &key, value).map_err(|e| format!("error in add for path: '{path}': {e}"))
        }
        "remove" => {
            let path =
                path().map_err(|e| format!("remove operation failed to decode path: {e}"))?;
            let (con, key) = find(doc, &path).ok_or_else(|| {
                format!(
                    "remove operation does not apply: doc is missing path: \"{path}\": {MISSING}"
                )
            })?;
            remove(con, &key)
                .map(drop)
                .map_err(|e| format!("error in remove for path: '{path}': {e}"))
        }
        "replace" => {
            let path =
                path().map_err(|e| format!("replace operation failed to decode path: {e}"))?;
            if path.is_empty() {
                return match value {
                    v @ (Value::Object(_) | Value::Array(_)) => {
                        *doc = v;
                        Ok(())
                    }
                    _ => Err("replace operation value must be object or array".into()),
                };
            }
            let (con, key) = find(doc, &path).ok_or_else(|| {
                format!("replace operation does not apply: doc is missing path: {path}: {MISSING}")
            })?;
            if get(con, &key).is_err() {
                return Err(format!(
                    "replace operation does not apply: doc is missing key: {path}: {MISSING}"
                ));
            }
            set(con, &key, value).map_err(|e| format!("error in replace for path: '{path}': {e}"))
        }
        "move" => {
            let from = from().map_err(|e| format!("move operation failed to decode from: {e}"))?;
            let (con, key) = find(doc, &from).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing from path: {from}: {MISSING}"
                )
            })?;
            get(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let moved =
                remove(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
            let path = path().map_err(|e| format!("move operation failed to decode path: {e}"))?;
            let (con, key) = find(doc, &path).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing destination path: {path}: {MISSING}"
                )
            })?;
            add(con, &key, moved).map_err(|e| format!("error in move for path: '{key}': {e}"))
        }
        "copy" => {
            let from = from().map_err(|e| format!("copy operation failed to decode from: {e}"))?;
            let (con, key) = find(doc, &from).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing from path: {from}: {MISSING}"
                )
            })?;
            let value = get(con, &key)
                .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
                .cloned()
                .unwrap_or(Value::Null);
            let path = path().map_err(|e| format!("copy operation failed to decode path: {e}"))?;
            let (con, key) = find(doc, &path).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing destination path: {path}: {MISSING}"
                )
            })?;
            let size = serde_json::to_vec(&value).map_or(0, |b| b.len());
            *copied += size;
            if *copied > MAX_COPY_BYTES {
                return Err(format!(
                    "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_COPY_BYTES}"
                ));
            }
            add(con, &key, value).map_err(|e| format!("error in copy for path: '{path}': {e}"))
        }
        "test" => {
            let path = path().map_err(|e| format!("test operation failed to decode path: {e}"))?;
            let expected = op.get("value").filter(|v| !v.is_null());
            let failed = || format!("testing value {path} failed: {TEST_FAILED}");
            if path.is_empty() {
                return match expected {
                    Some(v) if *doc == *v => Ok(()),
                    _ => Err(failed()),
                };
            }
            let (con, key) = find(doc, &path).ok_or_else(|| {
                format!("test operation does not apply: is missing path: {path}: {MISSING}")
            })?;
            let actual = get(con, &key)
                .map_err(|e| format!("error in test for path: '{path}': {e}"))?
                .filter(|v| !v.is_null());
            match (actual, expected) {
                (None, None) => Ok(()),
                (Some(a), Some(e)) if a == e => Ok(()),
                _ => Err(failed()),
            }
        }
        other => Err(format!("Unexpected kind: {other}")),
    }
}

/// `~1` is `/` and `~0` is `~` in a path segment.
fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// The container that holds the path's last segment, and that segment (unescaped): `None`
/// when a segment before it leads nowhere (a missing member or item, or a scalar).
fn find<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    if segments.len() < 2 {
        return None;
    }
    let (last, between) = segments[1..].split_last()?;
    let mut current = doc;
    for segment in between {
        let key = unescape(segment);
        current = match current {
            Value::Object(map) => map.get_mut(&key)?,
            Value::Array(items) => {
                let index = array_index(&key, items.len()).ok()?;
                items.get_mut(index)?
            }
            _ => return None,
        };
        if !matches!(current, Value::Object(_) | Value::Array(_)) {
            return None;
        }
    }
    Some((current, unescape(last)))
}

/// Go's `strconv.Atoi`: an optional sign, then ASCII digits.
fn atoi(key: &str) -> Result<i64, String> {
    let digits = key.strip_prefix(['+', '-']).unwrap_or(key);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("strconv.Atoi: parsing \"{key}\": invalid syntax"));
    }
    key.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing \"{key}\": value out of range"))
}

fn invalid_index(index: i64) -> String {
    format!("Unable to access invalid index: {index}: {INVALID_INDEX}")
}

/// An existing item's index in an array of `len` items (negative counts from the end).
fn array_index(key: &str, len: usize) -> Result<usize, String> {
    let index = atoi(key)?;
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let resolved = if index < 0 { index + len } else { index };
    if resolved < 0 || resolved >= len {
        return Err(invalid_index(index));
    }
    usize::try_from(resolved).map_err(|_| invalid_index(index))
}

/// The value at `key` in `con`: `Ok(None)` for a member an object lacks (not an error, as in
/// the library), an error for a missing array item.
fn get<'a>(con: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match con {
        Value::Object(map) => Ok(map.get(key)),
        Value::Array(items) => Ok(Some(&items[array_index(key, items.len())?])),
        _ => Err(MISSING.into()),
    }
}

fn set(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
            Ok(())
        }
        Value::Array(items) => {
            let index = array_index(key, items.len())?;
            items[index] = value;
            Ok(())
        }
        _ => Err(MISSING.into()),
    }
}

fn add(con: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let index = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            // Indices count in the array one item longer.
            let len = i64::try_from(items.len()).unwrap_or(i64::MAX) + 1;
            let resolved = if index < 0 { index + len } else { index };
            if index >= len || resolved < 0 {
                return Err(invalid_index(index));
            }
            let at = usize::try_from(resolved).map_err(|_| invalid_index(index))?;
            items.insert(at, value);
            Ok(())
        }
        _ => Err(MISSING.into()),
    }
}

fn remove(con: &mut Value, key: &str) -> Result<Value, String> {
    match con {
        Value::Object(map) => map
            .remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(items) => {
            let index = array_index(key, items.len())?;
            Ok(items.remove(index))
        }
        _ => Err(MISSING.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(doc: Value, ops: Value) -> Result<Value, JsonPatchError> {
        apply(&doc, &ops)
    }

    fn refused(doc: Value, ops: Value) -> String {
        match patched(doc, ops) {
            Err(JsonPatchError::DoesNotApply(m)) => m,
            other => panic!("expected DoesNotApply, got {other:?}"),
        }
    }

    #[test]
    fn replace_of_a_missing_member_adds_it() {
        let out = patched(
            json!({"metadata": {"name": "a"}}),
            json!([{"op": "replace", "path": "/metadata/labels", "value": {"x": "1"}}]),
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}})
        );
    }

    #[test]
    fn replace_under_a_missing_parent_or_past_an_array_is_refused() {
        let m = refused(
            json!({"spec": {}}),
            json!([{"op": "replace", "path": "/spec/template/x", "value": 1}]),
        );
        assert_eq!(
            m,
            "replace operation does not apply: doc is missing path: /spec/template/x: missing value"
        );
        let m = refused(
            json!({"a": [1]}),
            json!([{"op": "replace", "path": "/a/3", "value": 1}]),
        );
        assert_eq!(
            m,
            "replace operation does not apply: doc is missing key: /a/3: missing value"
        );
    }

    #[test]
    fn remove_of_a_missing_member_is_refused_in_the_librarys_words() {
        let m = refused(json!({"a": {}}), json!([{"op": "remove", "path": "/a/b"}]));
        assert_eq!(
            m,
            "error in remove for path: '/a/b': Unable to remove nonexistent key: b: missing value"
        );
    }

    #[test]
    fn negative_indices_count_from_the_end() {
        let doc = json!({"a": [1, 2, 3]});
        assert_eq!(
            patched(doc.clone(), json!([{"op": "remove", "path": "/a/-1"}])).unwrap(),
            json!({"a": [1, 2]})
        );
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "add", "path": "/a/-1", "value": 9}])
            )
            .unwrap(),
            json!({"a": [1, 2, 3, 9]})
        );
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "add", "path": "/a/-", "value": 9}])
            )
            .unwrap(),
            json!({"a": [1, 2, 3, 9]})
        );
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "replace", "path": "/a/-3", "value": 0}])
            )
            .unwrap(),
            json!({"a": [0, 2, 3]})
        );
        let m = refused(doc, json!([{"op": "add", "path": "/a/5", "value": 9}]));
        assert_eq!(
            m,
            "error in add for path: '/a/5': Unable to access invalid index: 5: invalid index referenced"
        );
    }

    #[test]
    fn add_needs_the_parent_and_does_not_create_it() {
        let m = refused(
            json!({}),
            json!([{"op": "add", "path": "/a/b", "value": 1}]),
        );
        assert_eq!(
            m,
            "add operation does not apply: doc is missing path: \"/a/b\": missing value"
        );
    }

    #[test]
    fn copy_and_move_and_test() {
        let doc = json!({"a": {"b": 1}, "l": [1]});
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "copy", "from": "/a/b", "path": "/c"}, {"op": "move", "from": "/a", "path": "/d"}])
            )
            .unwrap(),
            json!({"c": 1, "d": {"b": 1}, "l": [1]})
        );
        // A missing member copies as null; a move from it is refused.
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "copy", "from": "/zz", "path": "/c"}])
            )
            .unwrap()["c"],
            Value::Null
        );
        assert!(
            refused(
                doc.clone(),
                json!([{"op": "move", "from": "/zz", "path": "/c"}])
            )
            .contains("Unable to remove nonexistent key: zz")
        );
        // test: values as written; a missing member equals null.
        assert!(
            patched(
                doc.clone(),
                json!([{"op": "test", "path": "/a/b", "value": 1}])
            )
            .is_ok()
        );
        assert!(
            patched(
                doc.clone(),
                json!([{"op": "test", "path": "/a/b", "value": 1.0}])
            )
            .is_err()
        );
        assert!(
            patched(
                doc.clone(),
                json!([{"op": "test", "path": "/zz", "value": null}])
            )
            .is_ok()
        );
        assert_eq!(
            refused(
                doc.clone(),
                json!([{"op": "test", "path": "/a/b", "value": 2}])
            ),
            "testing value /a/b failed: test failed"
        );
        assert_eq!(
            refused(doc, json!([{"op": "frob", "path": "/a"}])),
            "Unexpected kind: frob"
        );
    }

    #[test]
    fn all_or_nothing_and_escapes() {
        let doc = json!({"a/b": 1, "m~n": 2});
        assert_eq!(
            patched(
                doc.clone(),
                json!([{"op": "replace", "path": "/a~1b", "value": 3}, {"op": "remove", "path": "/m~0n"}])
            )
            .unwrap(),
            json!({"a/b": 3})
        );
        // The second operation fails: the document is as it was (the caller keeps its own).
        assert!(patched(
            doc,
            json!([{"op": "replace", "path": "/a~1b", "value": 3}, {"op": "remove", "path": "/nope"}])
        )
        .is_err());
    }

    #[test]
    fn bodies_that_are_not_operation_lists_and_too_many_operations() {
        assert!(matches!(
            patched(json!({}), json!({"op": "add"})),
            Err(JsonPatchError::Decode(m)) if m.contains("cannot unmarshal object")
        ));
        let ops: Vec<Value> = (0..=MAX_OPERATIONS)
            .map(|_| json!({"op": "test", "path": "/a", "value": null}))
            .collect();
        assert_eq!(
            patched(json!({}), Value::Array(ops)),
            Err(JsonPatchError::TooManyOperations(MAX_OPERATIONS + 1))
        );
    }
}
