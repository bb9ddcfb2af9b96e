//! Shared pieces of the built-in printers: column constructors, field access on JSON objects,
//! and the small formatters kubectl users recognise (`<none>`, `k=v,k2=v2`, container lists).

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use flotilla_apimachinery::duration::{age, human_duration, parse_timestamp};
use flotilla_apimachinery::selector::LabelSelector;
use flotilla_apimachinery::{TableColumn, TablePrinter};
use serde_json::{Map, Value};

pub(crate) const NONE: &str = "<none>";
pub(crate) const UNSET: &str = "<unset>";
pub(crate) const UNKNOWN: &str = "<unknown>";

/// A column; `Name` gets format `name` (see [`TableColumn::new`]).
pub(crate) fn col(name: &str, column_type: &str, priority: u32, description: &str) -> TableColumn {
    let mut c = TableColumn::new(name, column_type, priority);
    c.description = description.to_string();
    c
}

pub(crate) fn name_col() -> TableColumn {
    col(
        "Name",
        "string",
        0,
        "Name of the object, unique within its namespace.",
    )
}

pub(crate) fn age_col() -> TableColumn {
    col("Age", "string", 0, "Time since the object was created.")
}

pub(crate) fn printer(
    columns: Vec<TableColumn>,
    cells: fn(&Value, DateTime<Utc>) -> Vec<Value>,
) -> TablePrinter {
    TablePrinter {
        columns,
        cells: Arc::new(cells),
        reads: None,
    }
}

/// A string at a JSON pointer (`/spec/nodeName`); `None` when absent or not a string.
pub(crate) fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

/// A string at a JSON pointer, or `""`.
pub(crate) fn string_at(obj: &Value, pointer: &str) -> String {
    str_at(obj, pointer).unwrap_or_default().to_string()
}

/// A non-empty string at a JSON pointer, or `default`.
pub(crate) fn string_or(obj: &Value, pointer: &str, default: &str) -> String {
    match str_at(obj, pointer) {
        Some(s) if !s.is_empty() => s.to_string(),
        _ => default.to_string(),
    }
}

/// An integer at a JSON pointer; absent fields count as 0, as Go's zero values do.
pub(crate) fn int_at(obj: &Value, pointer: &str) -> i64 {
    obj.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// The elements of a list at a JSON pointer (empty when absent).
pub(crate) fn list_at<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The number of entries of a map at a JSON pointer.
pub(crate) fn map_len(obj: &Value, pointer: &str) -> usize {
    obj.pointer(pointer)
        .and_then(Value::as_object)
        .map_or(0, Map::len)
}

/// `usize` counts as integer cells.
pub(crate) fn count(n: usize) -> Value {
    Value::from(u64::try_from(n).unwrap_or(u64::MAX))
}

pub(crate) fn name_cell(obj: &Value) -> Value {
    Value::String(string_at(obj, "/metadata/name"))
}

pub(crate) fn age_cell(obj: &Value, now: DateTime<Utc>) -> Value {
    Value::String(age(str_at(obj, "/metadata/creationTimestamp"), now))
}

/// The age of an optional timestamp field, `<unknown>` when it is missing.
pub(crate) fn since(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    age(timestamp, now)
}

/// The `Created At` cell of the generic table: the creation time in RFC 3339, UTC.
pub(crate) fn created_at_cell(obj: &Value) -> Value {
    match str_at(obj, "/metadata/creationTimestamp").and_then(parse_timestamp) {
        Some(t) => Value::String(t.to_rfc3339_opts(SecondsFormat::Secs, true)),
        None => Value::String(UNKNOWN.to_string()),
    }
}

/// `human_duration(end - start)`, both RFC 3339.
pub(crate) fn between(start: DateTime<Utc>, end: DateTime<Utc>) -> String {
    human_duration(end.signed_duration_since(start))
}

/// Container names and images joined by commas (the `Containers` and `Images` columns).
pub(crate) fn containers_cells(obj: &Value, pod_spec_pointer: &str) -> (Value, Value) {
    let containers = list_at(obj, &format!("{pod_spec_pointer}/containers"));
    let names: Vec<&str> = containers
        .iter()
        .map(|c| str_at(c, "/name").unwrap_or_default())
        .collect();
    let images: Vec<&str> = containers
        .iter()
        .map(|c| str_at(c, "/image").unwrap_or_default())
        .collect();
    (
        Value::String(names.join(",")),
        Value::String(images.join(",")),
    )
}

/// A string map as `k=v` pairs sorted by key and joined by commas; `<none>` when empty.
pub(crate) fn format_labels(map: Option<&Value>) -> String {
    let Some(map) = map.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return NONE.to_string();
    };
    let mut pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                v.as_str().map_or_else(|| v.to_string(), str::to_string)
            )
        })
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// A `metav1.LabelSelector` in its string form, `<none>` when it selects everything or is
/// absent, `<error>` when it is malformed (the `Selector` column of most workloads).
pub(crate) fn format_label_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return NONE.to_string();
    };
    match LabelSelector::from_object(selector) {
        Ok(s) if s.is_empty() => NONE.to_string(),
        Ok(s) => s.to_string(),
        Err(_) => "<error>".to_string(),
    }
}

/// The condition of a type in a `conditions` list at a JSON pointer.
pub(crate) fn condition<'a>(
    obj: &'a Value,
    pointer: &str,
    condition_type: &str,
) -> Option<&'a Value> {
    list_at(obj, pointer)
        .iter()
        .find(|c| str_at(c, "/type") == Some(condition_type))
}

/// Whether the first condition of a type has status `True`.
pub(crate) fn condition_true(obj: &Value, pointer: &str, condition_type: &str) -> bool {
    condition(obj, pointer, condition_type).and_then(|c| str_at(c, "/status")) == Some("True")
}

/// `True`, `False`, or `<unset>` for an absent boolean.
pub(crate) fn bool_cell(v: Option<&Value>) -> String {
    match v.and_then(Value::as_bool) {
        Some(true) => "True".to_string(),
        Some(false) => "False".to_string(),
        None => UNSET.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_formatting() {
        assert_eq!(format_labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
        assert_eq!(format_labels(Some(&json!({}))), "<none>");
        assert_eq!(format_labels(None), "<none>");
        assert_eq!(
            format_label_selector(Some(&json!({"matchLabels": {"app": "web"}}))),
            "app=web"
        );
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(
            format_label_selector(Some(
                &json!({"matchExpressions": [{"key": "a", "operator": "Bad"}]})
            )),
            "<error>"
        );
    }

    #[test]
    fn created_at_is_rfc3339_utc() {
        let obj = json!({"metadata": {"creationTimestamp": "2024-03-01T10:00:00.123+02:00"}});
        assert_eq!(created_at_cell(&obj), json!("2024-03-01T08:00:00Z"));
        assert_eq!(created_at_cell(&json!({})), json!("<unknown>"));
    }
}
