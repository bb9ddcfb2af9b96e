//! `meta.k8s.io/v1 Table` rendering: the columns come from the kind's printer (or NAME AGE),
//! rows carry a `PartialObjectMetadata` (or the full object with `includeObject=Object`).

use chrono::Utc;
use flotilla_apimachinery::{ResourceDef, TablePrinter};
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
}
