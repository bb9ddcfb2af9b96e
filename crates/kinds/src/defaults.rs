//! Helpers for defaulting on the raw JSON object: defaults fill only fields that are absent
//! (or `null`), and never touch a value of the wrong JSON type (validation reports that).

use serde_json::{Map, Value};

/// Sets `obj[key] = value` when `obj` is an object and the key is absent or null.
pub(crate) fn set(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        let slot = map.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }
}

/// The object at `obj[key]`, created empty when absent or null. `None` when `obj` is not an
/// object or the existing value is not one.
pub(crate) fn object<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    set(obj, key, Value::Object(Map::new()));
    obj.get_mut(key).filter(|v| v.is_object())
}

/// The object at `obj[key]` only if it already exists.
pub(crate) fn existing<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    obj.get_mut(key).filter(|v| v.is_object())
}

/// The object reached by following `keys`, creating empty objects on the way.
pub(crate) fn path<'a>(obj: &'a mut Value, keys: &[&str]) -> Option<&'a mut Value> {
    let mut cur = obj;
    for k in keys {
        cur = object(cur, k)?;
    }
    Some(cur)
}

/// Every object element of the array at `obj[key]`.
pub(crate) fn items<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|v| v.is_object())
}

/// Whether `obj[key]` holds a non-null value.
pub(crate) fn present(obj: &Value, key: &str) -> bool {
    obj.get(key).is_some_and(|v| !v.is_null())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_fills_only_absent_fields() {
        let mut v = json!({"a": 1, "b": null, "c": "x"});
        set(&mut v, "a", json!(2));
        set(&mut v, "b", json!(3));
        set(&mut v, "d", json!(4));
        assert_eq!(v, json!({"a": 1, "b": 3, "c": "x", "d": 4}));
        assert!(object(&mut v, "c").is_none());
        assert!(path(&mut v, &["e", "f"]).is_some());
        assert_eq!(v["e"], json!({"f": {}}));
        let mut not_obj = json!([1]);
        set(&mut not_obj, "a", json!(1));
        assert_eq!(not_obj, json!([1]));
    }
}
