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
    let cells = (printer.cells)(obj, now);
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
        }),
    };
    json!({"cells": cells, "object": object})
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
        metadata.insert("resourceVersion".into(), json!(rv));
    }
    if let Some(c) = continue_token {
        metadata.insert("continue".into(), json!(c));
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": column_definitions(&printer),
        "rows": rows,
    })
}
