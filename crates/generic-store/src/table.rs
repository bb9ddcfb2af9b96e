//! `meta.k8s.io/v1 Table` rendering: the columns come from the kind's printer (or NAME AGE),
//! rows carry a `PartialObjectMetadata` (or the full object with `includeObject=Object`).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use chrono::Utc;
use flotilla_apimachinery::{ResourceDef, TablePrinter};
use flotilla_storage::StoredObject;
use serde::Serialize;
use serde_json::value::RawValue;
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

/// The same Table as [`table`] for stored objects, serialised straight to JSON bytes. Each
/// object is parsed without its `metadata.managedFields` (no column reads them, and they are
/// most of the nodes of many objects), which a row's metadata then carries as the raw JSON
/// of the stored object; `includeObject=Object` rows are the stored bytes themselves. For
/// large lists (`kubectl get` of thousands of objects) building and freeing full trees cost
/// several times the rest.
pub fn table_bytes(
    def: &ResourceDef,
    objects: &[&Arc<StoredObject>],
    resource_version: Option<String>,
    continue_token: Option<String>,
    include: IncludeObject,
) -> Bytes {
    let printer = printer_for(def);
    let keep = printer.reads.as_deref().map(|paths| Keep::of(paths));
    let keep = keep.as_ref();
    let now = Utc::now();
    let mut metadata = Map::new();
    if let Some(rv) = resource_version {
        metadata.insert("resourceVersion".into(), Value::String(rv));
    }
    if let Some(c) = continue_token {
        metadata.insert("continue".into(), Value::String(c));
    }
    let mut out = Vec::with_capacity(1024 + objects.len() * 512);
    out.extend_from_slice(br#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":"#);
    write_json(&mut out, &metadata);
    out.extend_from_slice(br#","columnDefinitions":"#);
    write_json(&mut out, &column_definitions(&printer));
    out.extend_from_slice(br#","rows":["#);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads > 1 && objects.len() >= PARALLEL_ROWS {
        // Rows are independent: each core writes a run of them, joined in order.
        let chunk = objects.len().div_ceil(threads);
        let parts: Vec<Vec<u8>> = std::thread::scope(|scope| {
            let handles: Vec<_> = objects
                .chunks(chunk)
                .map(|run| {
                    let printer = &printer;
                    scope.spawn(move || {
                        let mut part = Vec::with_capacity(run.len() * 512);
                        write_rows(&mut part, printer, keep, run, include, now);
                        part
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        for (i, part) in parts.iter().filter(|p| !p.is_empty()).enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(part);
        }
    } else {
        write_rows(&mut out, &printer, keep, objects, include, now);
    }
    out.extend_from_slice(b"]}");
    Bytes::from(out)
}

/// Tables with at least this many rows are built on every core.
const PARALLEL_ROWS: usize = 1_000;

/// The rows of `objects`, comma-separated.
fn write_rows(
    out: &mut Vec<u8>,
    printer: &TablePrinter,
    keep: Option<&Keep>,
    objects: &[&Arc<StoredObject>],
    include: IncludeObject,
    now: chrono::DateTime<Utc>,
) {
    for (i, obj) in objects.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let row = RowSource::parse(&obj.bytes, keep);
        out.extend_from_slice(br#"{"cells":"#);
        write_json(out, &(printer.cells)(&row.value, now));
        out.extend_from_slice(br#","object":"#);
        match include {
            IncludeObject::None => out.extend_from_slice(b"null"),
            IncludeObject::Object => out.extend_from_slice(&obj.bytes),
            IncludeObject::Metadata => {
                out.extend_from_slice(
                    br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#,
                );
                row.write_metadata(out);
                out.push(b'}');
            }
        }
        out.push(b'}');
    }
}

/// A stored object parsed for a Table row: the object without `metadata.managedFields`, and
/// those as the raw JSON they are stored as.
struct RowSource<'a> {
    value: Value,
    managed_fields: Option<&'a RawValue>,
}

impl<'a> RowSource<'a> {
    /// Parses `metadata` and, of the rest, what `keep` names (everything without it).
    fn parse(bytes: &'a [u8], keep: Option<&Keep>) -> Self {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let fields = match keep {
            Some(Keep::Fields(fields)) => Some(fields),
            Some(Keep::All) | None => None,
        };
        // Stored bytes were serialised from a JSON object; anything else renders as an
        // empty row rather than failing the whole list.
        serde::de::DeserializeSeed::deserialize(ObjectSeed(fields), &mut de).unwrap_or(RowSource {
            value: Value::Object(Map::new()),
            managed_fields: None,
        })
    }

    /// The row's metadata: the parsed fields and the raw managedFields.
    fn write_metadata(&self, out: &mut Vec<u8>) {
        let Some(meta) = self.value.get("metadata").and_then(Value::as_object) else {
            out.extend_from_slice(b"{}");
            return;
        };
        out.push(b'{');
        let mut first = true;
        for (k, v) in meta {
            if !first {
                out.push(b',');
            }
            first = false;
            write_json(out, k);
            out.push(b':');
            write_json(out, v);
        }
        if let Some(raw) = self.managed_fields {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(br#""managedFields":"#);
            out.extend_from_slice(raw.get().as_bytes());
        }
        out.push(b'}');
    }
}

/// The fields of an object a row parses: a tree of field names built from
/// [`TablePrinter::reads`].
#[derive(Debug, PartialEq)]
enum Keep {
    /// The field and everything under it.
    All,
    /// Only these fields of it (an object; a value of another type is kept whole).
    Fields(HashMap<String, Keep>),
}

impl Keep {
    fn of(paths: &[Vec<String>]) -> Self {
        let mut root = Keep::Fields(HashMap::new());
        for path in paths {
            root.add(path);
        }
        root
    }

    fn add(&mut self, path: &[String]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Keep::All;
            return;
        };
        if let Keep::Fields(fields) = self {
            fields
                .entry(first.clone())
                .or_insert_with(|| Keep::Fields(HashMap::new()))
                .add(rest);
        }
    }
}

/// Deserialises a top-level object, handing `metadata` to [`MetadataSeed`] and, when it
/// names the fields to keep, skipping the others unparsed.
struct ObjectSeed<'k>(Option<&'k HashMap<String, Keep>>);

impl<'de> serde::de::DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = RowSource<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ObjectSeed<'_> {
    type Value = RowSource<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = Map::new();
        let mut managed_fields = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "metadata" {
                let (metadata, managed) = map.next_value_seed(MetadataSeed)?;
                managed_fields = managed;
                object.insert(key, metadata);
                continue;
            }
            let value = match self.0.map(|fields| fields.get(&key)) {
                None | Some(Some(Keep::All)) => map.next_value::<Value>()?,
                Some(Some(Keep::Fields(fields))) => map.next_value_seed(Pruned(fields))?,
                Some(None) => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            object.insert(key, value);
        }
        Ok(RowSource {
            value: Value::Object(object),
            managed_fields,
        })
    }
}

/// A value below the root with only the fields its [`Keep`] names, when it is an object.
struct Pruned<'k>(&'k HashMap<String, Keep>);

impl<'de> serde::de::DeserializeSeed<'de> for Pruned<'_> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Pruned<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = match self.0.get(&key) {
                Some(Keep::All) => map.next_value::<Value>()?,
                Some(Keep::Fields(fields)) => map.next_value_seed(Pruned(fields))?,
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    continue;
                }
            };
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }

    // Not an object: kept whole, as the full parse would have it.
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// Deserialises `metadata`, keeping `managedFields` raw.
struct MetadataSeed;

impl<'de> serde::de::DeserializeSeed<'de> for MetadataSeed {
    type Value = (Value, Option<&'de RawValue>);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for MetadataSeed {
    type Value = (Value, Option<&'de RawValue>);

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("object metadata")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut metadata = Map::new();
        let mut managed_fields = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == "managedFields" {
                managed_fields = Some(map.next_value::<&'de RawValue>()?);
            } else {
                metadata.insert(key, map.next_value::<Value>()?);
            }
        }
        Ok((Value::Object(metadata), managed_fields))
    }
}

fn write_json(out: &mut Vec<u8>, value: &impl Serialize) {
    // Writing JSON values (string keys only) into memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    const EVERY_INCLUDE: [IncludeObject; 3] = [
        IncludeObject::None,
        IncludeObject::Metadata,
        IncludeObject::Object,
    ];

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
        let stored = stored_objects(&objects);
        let stored: Vec<&Arc<StoredObject>> = stored.iter().collect();
        for include in EVERY_INCLUDE {
            for (rv, cont) in [
                (None, None),
                (Some("9".to_string()), Some("next".to_string())),
            ] {
                assert_tables_agree(&def, &objects, &stored, rv, cont, include);
            }
        }
        let empty = table_bytes(&def, &[], None, None, IncludeObject::Metadata);
        assert_eq!(
            serde_json::from_slice::<Value>(&empty).unwrap()["rows"],
            json!([])
        );
    }

    #[test]
    fn rows_parse_only_what_the_columns_read_and_print_the_same() {
        let mut def =
            flotilla_apimachinery::ResourceDef::new("x.io", "v1", "Widget", "widgets", false);
        let columns = json!([
            {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
            {"name": "CPU", "type": "string", "jsonPath": ".status.summary.cpu"},
            {"name": "Zones", "type": "string", "jsonPath": ".spec.zones"},
            {"name": "Odd", "type": "string", "jsonPath": ".spec.region.name"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]);
        def.printer = flotilla_printers::custom_printer(columns.as_array().unwrap()).ok();
        assert!(def.printer.as_ref().unwrap().reads.is_some());
        let big: Vec<Value> = (0..50)
            .map(|i| json!({"groupVersion": format!("g{i}/v1"), "resources": [{"name": "r", "kind": "R"}]}))
            .collect();
        let objects = [
            json!({"apiVersion": "x.io/v1", "kind": "Widget",
                "metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:00Z",
                    "managedFields": [{"manager": "m"}]},
                "spec": {"zones": ["z1", "z2"], "region": "eu", "other": {"deep": [1, 2]}},
                "status": {"apiEnablements": big, "summary": {"cpu": "4", "memory": "8Gi"},
                    "conditions": [{"type": "Ready", "status": "True"}]}}),
            // Values of other types where the columns expect objects.
            json!({"apiVersion": "x.io/v1", "kind": "Widget", "metadata": {"name": "b"},
                "spec": ["not", "an", "object"], "status": {"summary": 3, "conditions": "x"}}),
        ];
        let stored = stored_objects(&objects);
        let stored: Vec<&Arc<StoredObject>> = stored.iter().collect();
        for include in EVERY_INCLUDE {
            assert_tables_agree(&def, &objects, &stored, None, None, include);
        }
        let t = table(&def, objects.iter(), None, None, IncludeObject::None);
        let cells = t["rows"][0]["cells"].as_array().unwrap();
        assert_eq!(
            cells[..5],
            [
                json!("a"),
                json!("True"),
                json!("4"),
                json!("[\"z1\",\"z2\"]"),
                Value::Null
            ]
        );
    }

    #[test]
    fn a_shorter_path_keeps_the_whole_field() {
        let paths = vec![
            vec!["status".to_string(), "conditions".to_string()],
            vec!["status".to_string()],
            vec!["spec".to_string(), "a".to_string()],
        ];
        let Keep::Fields(root) = Keep::of(&paths) else {
            panic!("the root names fields")
        };
        assert_eq!(root.get("status"), Some(&Keep::All));
        assert!(
            matches!(root.get("spec"), Some(Keep::Fields(f)) if f.get("a") == Some(&Keep::All))
        );
        assert_eq!(root.get("data"), None);
    }

    /// The Table from stored bytes is the same document as the one built from values (a
    /// row's managedFields may come last in its metadata).
    fn assert_tables_agree(
        def: &ResourceDef,
        objects: &[Value],
        stored: &[&Arc<StoredObject>],
        rv: Option<String>,
        cont: Option<String>,
        include: IncludeObject,
    ) {
        let value = table(def, objects.iter(), rv.clone(), cont.clone(), include);
        let bytes = table_bytes(def, stored, rv, cont, include);
        assert_eq!(
            serde_json::from_slice::<Value>(&bytes).unwrap(),
            value,
            "{include:?}"
        );
    }

    /// `objects` as stored, at keys `/k/0`, `/k/1`, ...
    fn stored_objects(objects: &[Value]) -> Vec<Arc<StoredObject>> {
        objects
            .iter()
            .enumerate()
            .map(|(i, o)| Arc::new(StoredObject::new(format!("/k/{i}"), 1, o.clone())))
            .collect()
    }

    /// Large Tables are built on several threads: the rows still come out whole and in order.
    #[test]
    fn a_large_table_built_in_parallel_is_the_same_table() {
        let def =
            flotilla_apimachinery::ResourceDef::new("", "v1", "ConfigMap", "configmaps", true);
        let objects: Vec<Value> = (0..PARALLEL_ROWS * 2 + 7)
            .map(|i| {
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": format!("cm-{i:05}"), "namespace": "ns",
                        "creationTimestamp": "2024-01-01T00:00:00Z"},
                    "data": {"k": i.to_string()}})
            })
            .collect();
        let stored = stored_objects(&objects);
        let stored: Vec<&Arc<StoredObject>> = stored.iter().collect();
        let value = table(&def, objects.iter(), None, None, IncludeObject::Metadata);
        let bytes = table_bytes(&def, &stored, None, None, IncludeObject::Metadata);
        assert_eq!(serde_json::from_slice::<Value>(&bytes).unwrap(), value);
    }
}
