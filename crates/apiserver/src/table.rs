//! `meta.k8s.io/v1 Table` rendering: the columns come from the kind's printer (or NAME AGE),
//! rows carry a `PartialObjectMetadata` (or the full object with `includeObject=Object`).

use bytes::Bytes;
use chrono::Utc;
use flotilla_apimachinery::{ResourceDef, TablePrinter};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// What each row's `object` holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    None,
    Metadata,
    Object,
}

impl IncludeObject {
    pub fn from_query(v: Option<&str>) -> Self {
        match v {
            Some("None") => Self::None,
            Some("Object") => Self::Object,
            _ => Self::Metadata,
        }
    }
}

pub fn printer_for(def: &ResourceDef) -> TablePrinter {
    def.printer
        .clone()
        .unwrap_or_else(flotilla_printers::default_printer)
}

pub fn column_definitions(printer: &TablePrinter) -> Value {
    Value::Array(
        printer
            .columns
            .iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.column_type,
                    "format": c.format,
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

pub fn row(
    printer: &TablePrinter,
    obj: &Value,
    include: IncludeObject,
    now: chrono::DateTime<Utc>,
) -> Value {
    // Built with maps rather than `json!`: `json!` converts every interpolated value with
    // `to_value`, a second deep copy (re-hashing every key) of the metadata and cells, which
    // made a 10,000-row Table cost seconds.
    let cells = Value::Array((printer.cells)(obj, now));
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => {
            let metadata = obj
                .get("metadata")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            let mut partial = Map::with_capacity(3);
            partial.insert("kind".into(), Value::from("PartialObjectMetadata"));
            partial.insert("apiVersion".into(), Value::from("meta.k8s.io/v1"));
            partial.insert("metadata".into(), metadata);
            Value::Object(partial)
        }
    };
    let mut row = Map::with_capacity(2);
    row.insert("cells".into(), cells);
    row.insert("object".into(), object);
    Value::Object(row)
}

/// A Table of `objects` with list metadata.
pub fn table<'a>(
    def: &ResourceDef,
    objects: impl Iterator<Item = &'a Value>,
    resource_version: Option<String>,
    continue_token: Option<String>,
    include: IncludeObject,
) -> Value {
    let printer = printer_for(def);
    let now = Utc::now();
    let rows: Vec<Value> = objects.map(|o| row(&printer, o, include, now)).collect();
    let mut metadata = Map::new();
    if let Some(rv) = resource_version {
        metadata.insert("resourceVersion".into(), Value::String(rv));
    }
    if let Some(c) = continue_token {
        metadata.insert("continue".into(), Value::String(c));
    }
    // Moved into place, not through `json!` (which would deep-copy every row once more).
    let mut table = Map::with_capacity(5);
    table.insert("kind".into(), Value::from("Table"));
    table.insert("apiVersion".into(), Value::from("meta.k8s.io/v1"));
    table.insert("metadata".into(), Value::Object(metadata));
    table.insert("columnDefinitions".into(), column_definitions(&printer));
    table.insert("rows".into(), Value::Array(rows));
    Value::Object(table)
}

/// The same Table as [`table`], serialised straight to JSON bytes: each row's metadata (or
/// object) is written from the stored value it borrows instead of being deep-copied into a
/// `Value` tree first. For large lists (`kubectl get` of thousands of objects) the copies,
/// and freeing them, cost several times the serialisation itself.
pub fn table_bytes<'a>(
    def: &ResourceDef,
    objects: impl Iterator<Item = &'a Value>,
    resource_version: Option<String>,
    continue_token: Option<String>,
    include: IncludeObject,
) -> Bytes {
    let printer = printer_for(def);
    let now = Utc::now();
    let mut metadata = Map::new();
    if let Some(rv) = resource_version {
        metadata.insert("resourceVersion".into(), Value::String(rv));
    }
    if let Some(c) = continue_token {
        metadata.insert("continue".into(), Value::String(c));
    }
    let mut out = Vec::with_capacity(1024 + objects.size_hint().0 * 512);
    out.extend_from_slice(br#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":"#);
    write_json(&mut out, &metadata);
    out.extend_from_slice(br#","columnDefinitions":"#);
    write_json(&mut out, &column_definitions(&printer));
    out.extend_from_slice(br#","rows":["#);
    for (i, obj) in objects.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"cells":"#);
        write_json(&mut out, &(printer.cells)(obj, now));
        out.extend_from_slice(br#","object":"#);
        match include {
            IncludeObject::None => out.extend_from_slice(b"null"),
            IncludeObject::Object => write_json(&mut out, obj),
            IncludeObject::Metadata => {
                out.extend_from_slice(
                    br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#,
                );
                match obj.get("metadata") {
                    Some(m) => write_json(&mut out, m),
                    None => out.extend_from_slice(b"{}"),
                }
                out.push(b'}');
            }
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

fn write_json(out: &mut Vec<u8>, value: &impl Serialize) {
    // Writing JSON values (string keys only) into memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_carry_cells_and_partial_metadata_in_kubectl_order() {
        let def =
            flotilla_apimachinery::ResourceDef::new("", "v1", "ConfigMap", "configmaps", true);
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "ns", "creationTimestamp": "2024-01-01T00:00:00Z"},
            "data": {"k": "v"}});
        let t = table(
            &def,
            std::iter::once(&obj),
            Some("7".into()),
            Some("tok".into()),
            IncludeObject::Metadata,
        );
        let keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "kind",
                "apiVersion",
                "metadata",
                "columnDefinitions",
                "rows"
            ]
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(
            t["metadata"],
            json!({"resourceVersion": "7", "continue": "tok"})
        );
        let row = &t["rows"][0];
        assert_eq!(row["cells"][0], "a");
        assert_eq!(
            row["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"]})
        );
        let none = table(&def, std::iter::once(&obj), None, None, IncludeObject::None);
        assert_eq!(none["rows"][0]["object"], Value::Null);
        assert!(none["metadata"].as_object().unwrap().is_empty());
        let full = table(
            &def,
            std::iter::once(&obj),
            None,
            None,
            IncludeObject::Object,
        );
        assert_eq!(full["rows"][0]["object"], obj);
    }

    #[test]
    fn table_bytes_are_the_serialised_table() {
        let def =
            flotilla_apimachinery::ResourceDef::new("", "v1", "ConfigMap", "configmaps", true);
        let objects = [
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a\"q", "namespace": "ns", "creationTimestamp": "2024-01-01T00:00:00Z",
                    "labels": {"x": "1"}, "managedFields": [{"manager": "m", "fieldsV1": {"f:data": {}}}]},
                "data": {"k": "v"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}),
        ];
        for include in [
            IncludeObject::None,
            IncludeObject::Metadata,
            IncludeObject::Object,
        ] {
            for (rv, cont) in [
                (None, None),
                (Some("9".to_string()), Some("next".to_string())),
            ] {
                let value = table(&def, objects.iter(), rv.clone(), cont.clone(), include);
                let bytes = table_bytes(&def, objects.iter(), rv, cont, include);
                assert_eq!(
                    std::str::from_utf8(&bytes).unwrap(),
                    serde_json::to_string(&value).unwrap(),
                    "{include:?}"
                );
            }
        }
        let empty = table_bytes(
            &def,
            std::iter::empty(),
            None,
            None,
            IncludeObject::Metadata,
        );
        assert_eq!(
            serde_json::from_slice::<Value>(&empty).unwrap()["rows"],
            json!([])
        );
    }
}
