//! JSON merge patches (RFC 7386) computed from the last known and the desired document, so
//! status writes send only what changed and remove fields (map keys such as a resource that
//! left `allocatable`) with explicit nulls.

use serde_json::{Map, Value};

/// The merge patch turning `old` into `new`, or `None` when they are equal. Arrays are
/// replaced whole, as merge patch requires.
pub fn merge_patch(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    let (Value::Object(old), Value::Object(new)) = (old, new) else {
        return Some(new.clone());
    };
    let mut patch = Map::new();
    for key in old.keys() {
        if !new.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    for (key, value) in new {
        match old.get(key) {
            Some(prev) => {
                if let Some(p) = merge_patch(prev, value) {
                    patch.insert(key.clone(), p);
                }
            }
            None => {
                patch.insert(key.clone(), value.clone());
            }
        }
    }
    Some(Value::Object(patch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn equal_documents_need_no_patch() {
        let v = json!({"a": {"b": [1, 2]}});
        assert_eq!(merge_patch(&v, &v.clone()), None);
    }

    #[test]
    fn changes_additions_and_removals() {
        let old = json!({"keep": 1, "gone": 2, "nested": {"x": "1", "y": "2"}, "list": [1, 2]});
        let new = json!({"keep": 1, "nested": {"x": "1", "z": "3"}, "list": [1], "added": true});
        let patch = merge_patch(&old, &new).unwrap();
        assert_eq!(
            patch,
            json!({"gone": null, "nested": {"y": null, "z": "3"}, "list": [1], "added": true})
        );
    }

    #[test]
    fn scalar_to_object_replaces() {
        assert_eq!(
            merge_patch(&json!(null), &json!({"a": 1})),
            Some(json!({"a": 1}))
        );
    }
}
