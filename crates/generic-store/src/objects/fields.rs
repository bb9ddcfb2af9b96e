//! Field paths in objects (`spec.replicas` style) and label/field selector formatting.

use super::*;

/// Reads a dot path like `.spec.replicas`.
pub fn get_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(v, |cur, seg| cur.get(seg))
}

pub(super) fn set_path(v: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let mut cur = v;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i == segs.len() - 1 {
            map.insert(seg.to_string(), value);
            return;
        }
        cur = map.entry(seg.to_string()).or_insert_with(|| json!({}));
    }
}

/// Makes `path` (a dot path) of `to` what it is in `from`: copied when present there, removed
/// when absent.
pub(super) fn copy_path(from: &Value, to: &mut Value, path: &str) {
    match get_path(from, path) {
        Some(v) => set_path(to, path, v.clone()),
        None => remove_path(to, path),
    }
}

pub(super) fn remove_path(v: &mut Value, path: &str) {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in parents {
        match cur.get_mut(*seg) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(map) = cur.as_object_mut() {
        map.remove(*last);
    }
}

/// A `spec.selector` as a string: a `LabelSelector` object, or the plain label map of a
/// ReplicationController (`{"app": "web"}` gives `app=web`).
pub(super) fn format_selector_field(sel: &Value) -> String {
    let plain_map = sel.as_object().is_some_and(|m| {
        !m.contains_key("matchLabels")
            && !m.contains_key("matchExpressions")
            && m.values().all(Value::is_string)
    });
    if !plain_map {
        return format_label_selector(sel);
    }
    let mut pairs: Vec<String> = sel
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.FormatLabelSelector`: `app=web,tier in (a,b)`.
pub fn format_label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        let mut keys: Vec<&String> = ml.keys().collect();
        keys.sort();
        for k in keys {
            parts.push(format!("{k}={}", ml[k].as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}
