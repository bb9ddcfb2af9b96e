//! Tables of custom resources: a CRD version's `additionalPrinterColumns`, each a JSONPath
//! into the object with a type that decides how the cell is rendered.

use std::sync::Arc;

use flotilla_apimachinery::duration::{age, parse_timestamp};
use flotilla_apimachinery::{TableColumn, TablePrinter};
use serde_json::Value;

use crate::PrinterError;
use crate::cells::{name_cell, name_col};
use crate::jsonpath::JsonPath;

const COLUMN_TYPES: [&str; 5] = ["integer", "number", "string", "boolean", "date"];

struct Column {
    path: JsonPath,
    column_type: String,
}

/// `NAME AGE`, the table of a custom resource whose CRD declares no printer columns (the Age
/// column is a `date` computed from `.metadata.creationTimestamp`).
pub fn default_printer() -> TablePrinter {
    let age_column = serde_json::json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"});
    match custom_printer(&[age_column]) {
        Ok(p) => p,
        // The column above is valid; keep a plain NAME table rather than panic if that changes.
        Err(_) => TablePrinter {
            columns: vec![name_col()],
            cells: Arc::new(|obj: &Value, _| vec![name_cell(obj)]),
            reads: Some(Arc::new(Vec::new())),
        },
    }
}

/// The table of a CRD version from its `additionalPrinterColumns`
/// (`[{name, type, format, description, priority, jsonPath}]`): `Name` first, then the
/// columns as given; with no columns, `NAME AGE` ([`default_printer`]).
pub fn custom_printer(columns: &[Value]) -> Result<TablePrinter, PrinterError> {
    if columns.is_empty() {
        return Ok(default_printer());
    }
    let mut definitions = vec![name_col()];
    let mut compiled = Vec::with_capacity(columns.len());
    // The fields the columns read; one column whose path does not start with field names
    // (`..x`, `[*]`) may read anything.
    let mut reads = Some(Vec::new());
    for (index, c) in columns.iter().enumerate() {
        let invalid = |reason: String| PrinterError::InvalidColumn { index, reason };
        let text = |key: &str| {
            c.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let name = text("name");
        if name.is_empty() {
            return Err(invalid("name is required".to_string()));
        }
        let column_type = text("type");
        if !COLUMN_TYPES.contains(&column_type.as_str()) {
            return Err(invalid(format!(
                "unsupported type {column_type:?} of column {name:?} (expected one of {})",
                COLUMN_TYPES.join(", ")
            )));
        }
        let json_path = text("jsonPath");
        if json_path.is_empty() {
            return Err(invalid(format!("jsonPath of column {name:?} is required")));
        }
        let priority = match c.get("priority") {
            None | Some(Value::Null) => 0,
            Some(p) => p
                .as_u64()
                .and_then(|p| u32::try_from(p).ok())
                .ok_or_else(|| {
                    invalid(format!(
                        "priority of column {name:?} must be a non-negative integer"
                    ))
                })?,
        };
        let path = JsonPath::parse(&json_path)?;
        let fields = path.leading_fields();
        match &mut reads {
            Some(r) if !fields.is_empty() => r.push(fields),
            _ => reads = None,
        }
        definitions.push(TableColumn {
            name,
            column_type: column_type.clone(),
            format: text("format"),
            description: text("description"),
            priority,
        });
        compiled.push(Column { path, column_type });
    }
    let cells = move |obj: &Value, now| {
        let mut row = Vec::with_capacity(compiled.len() + 1);
        row.push(name_cell(obj));
        for column in &compiled {
            // Printer columns show one value: the first the path selects.
            let value = column.path.eval(obj).into_iter().next();
            row.push(value.map_or(Value::Null, |v| cell(&column.column_type, v, now)));
        }
        row
    };
    Ok(TablePrinter {
        columns: definitions,
        cells: Arc::new(cells),
        reads: reads.map(Arc::new),
    })
}

/// Renders a selected value for a column type; a value of the wrong JSON type is an empty
/// cell (`null`, which kubectl prints as `<none>`).
fn cell(column_type: &str, value: &Value, now: chrono::DateTime<chrono::Utc>) -> Value {
    match (column_type, value) {
        (_, Value::Null) => Value::Null,
        ("string", Value::String(_)) => value.clone(),
        // Non-strings in a string column print as their JSON text (`3`, `true`, `["a","b"]`).
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f.trunc() as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(_)) => value.clone(),
        ("date", Value::String(s)) => match parse_timestamp(s) {
            Some(_) => Value::String(age(Some(s), now)),
            None => Value::String("<invalid>".to_string()),
        },
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{column_names, row};
    use serde_json::json;

    fn cluster() -> Value {
        json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "member1", "creationTimestamp": "2024-04-28T08:00:00Z"},
            "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1", "zones": ["z1", "z2"], "replicas": 2.7},
            "status": {"kubernetesVersion": "v1.32.1", "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T11:00:00Z"}
            ]}
        })
    }

    #[test]
    fn karmada_cluster_columns() {
        let columns = vec![
            json!({"name": "VERSION", "type": "string", "jsonPath": ".status.kubernetesVersion"}),
            json!({"name": "MODE", "type": "string", "jsonPath": ".spec.syncMode"}),
            json!({"name": "READY", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"}),
            json!({"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}),
            json!({"name": "APIENDPOINT", "type": "string", "priority": 1, "jsonPath": ".spec.apiEndpoint"}),
        ];
        let p = custom_printer(&columns).unwrap();
        assert_eq!(
            column_names(&p),
            "Name VERSION MODE READY AGE | APIENDPOINT"
        );
        assert_eq!(p.columns[0].format, "name");
        assert_eq!(p.columns[4].column_type, "date");
        assert_eq!(
            row(&p, &cluster()),
            json!([
                "member1",
                "v1.32.1",
                "Push",
                "True",
                "3d4h",
                "https://127.0.0.1:1"
            ])
        );
    }

    #[test]
    fn typed_cells() {
        let columns = vec![
            json!({"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"}),
            json!({"name": "Ratio", "type": "number", "jsonPath": ".spec.replicas"}),
            json!({"name": "Zones", "type": "string", "jsonPath": ".spec.zones"}),
            json!({"name": "FirstZone", "type": "string", "jsonPath": ".spec.zones[*]"}),
            json!({"name": "Missing", "type": "string", "jsonPath": ".spec.nothing"}),
            json!({"name": "Bool", "type": "boolean", "jsonPath": ".spec.syncMode"}),
            json!({"name": "Since", "type": "date", "jsonPath": ".status.conditions[0].lastTransitionTime"}),
            json!({"name": "BadDate", "type": "date", "jsonPath": ".spec.syncMode", "format": "x", "description": "d"}),
        ];
        let p = custom_printer(&columns).unwrap();
        assert_eq!(p.columns[8].format, "x");
        assert_eq!(p.columns[8].description, "d");
        assert_eq!(
            row(&p, &cluster()),
            json!([
                "member1",
                2,
                2.7,
                "[\"z1\",\"z2\"]",
                "z1",
                null,
                null,
                "60m",
                "<invalid>"
            ])
        );
    }

    #[test]
    fn no_columns_is_name_age() {
        let p = custom_printer(&[]).unwrap();
        assert_eq!(column_names(&p), "Name Age");
        assert_eq!(row(&p, &cluster()), json!(["member1", "3d4h"]));
        assert_eq!(
            row(&default_printer(), &json!({"metadata": {"name": "x"}})),
            json!(["x", null])
        );
    }

    #[test]
    fn invalid_columns() {
        let err = |c: Value| custom_printer(&[c]).unwrap_err().to_string();
        assert_eq!(
            err(json!({"type": "string", "jsonPath": ".a"})),
            "invalid printer column 0: name is required"
        );
        assert!(
            err(json!({"name": "A", "type": "text", "jsonPath": ".a"}))
                .contains("unsupported type \"text\"")
        );
        assert!(
            err(json!({"name": "A", "type": "string"}))
                .contains("jsonPath of column \"A\" is required")
        );
        assert!(
            err(json!({"name": "A", "type": "string", "jsonPath": ".a", "priority": -1}))
                .contains("priority")
        );
        assert!(
            err(json!({"name": "A", "type": "string", "jsonPath": ".a[?("}))
                .starts_with("invalid JSONPath")
        );
    }
}
