//! fieldOverrider: JSON-pointer changes inside a string field that holds a JSON or YAML
//! document (a ConfigMap entry, an annotation).
//!
//! The field at `fieldPath` must exist and be a string. With `yaml` operations the string is
//! read as YAML, changed, and written back as YAML; otherwise with `json` operations it is read
//! as JSON and written back as compact JSON (`yaml` wins when both are set, as in Karmada;
//! admission refuses both and neither). The operations are RFC 6902 `add`/`remove`/`replace`
//! at `subPath`, like plaintext. Differing from Karmada, which goes through Go maps, keys keep
//! their order in the YAML written back instead of being sorted; a YAML string of more than
//! one document is an error where Karmada keeps the first and drops the rest; an overrider
//! with neither list leaves the field alone where Karmada would empty it.

use flotilla_karmada_api::overrides::{FieldOverrider, FieldPatchOperation};
use serde_json::Value;

use crate::Failed;
use crate::error::OverrideFailure;
use crate::patch;

#[derive(Clone, Copy)]
enum Format {
    Json,
    Yaml,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Yaml => "YAML",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Yaml => "yaml",
        }
    }
}

/// Applies one fieldOverrider.
pub(crate) fn apply(doc: &mut Value, overrider: &FieldOverrider) -> Result<(), Failed> {
    let describe = || format!("fieldOverrider fieldPath {:?}", overrider.field_path);
    let (format, operations): (Format, &[FieldPatchOperation]) = if !overrider.yaml.is_empty() {
        (Format::Yaml, &overrider.yaml)
    } else if !overrider.json.is_empty() {
        (Format::Json, &overrider.json)
    } else {
        return Ok(());
    };
    let ptr = patch::parse(&overrider.field_path).map_err(|f| (describe(), f))?;
    let target = doc
        .pointer_mut(ptr.as_str())
        .ok_or_else(|| (describe(), OverrideFailure::PathMissing))?;
    let Value::String(text) = target else {
        return Err((
            describe(),
            OverrideFailure::UnexpectedType {
                what: "the field".to_string(),
                expected: "a string",
            },
        ));
    };
    let invalid = |reason: String| {
        (
            describe(),
            OverrideFailure::InvalidDocument {
                format: format.name(),
                reason,
            },
        )
    };
    let mut inner: Value = match format {
        Format::Json => serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?,
        Format::Yaml => serde_norway::from_str(text).map_err(|e| invalid(e.to_string()))?,
    };
    for op in operations {
        let describe_op = || format!("{} {} subPath {:?}", describe(), format.key(), op.sub_path);
        let sub = patch::parse(&op.sub_path).map_err(|f| (describe_op(), f))?;
        patch::apply(&mut inner, op.operator, sub, op.value.as_ref())
            .map_err(|f| (describe_op(), f))?;
    }
    let written = match format {
        Format::Json => serde_json::to_string(&inner).map_err(|e| e.to_string()),
        Format::Yaml => serde_norway::to_string(&inner).map_err(|e| e.to_string()),
    }
    .map_err(|reason| {
        (
            describe(),
            OverrideFailure::Serialize {
                format: format.name(),
                reason,
            },
        )
    })?;
    *text = written;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_karmada_api::overrides::OverriderOperator::{self, Add, Remove, Replace};
    use serde_json::json;

    fn op(
        operator: OverriderOperator,
        sub_path: &str,
        value: Option<Value>,
    ) -> FieldPatchOperation {
        FieldPatchOperation {
            sub_path: sub_path.into(),
            operator,
            value,
        }
    }

    fn configmap(key: &str, text: &str) -> Value {
        json!({"kind": "ConfigMap", "data": {key: text}})
    }

    #[test]
    fn json_documents_are_changed_and_written_back_compact() {
        let mut doc = configmap(
            "config.json",
            "{\n  \"db\": {\"host\": \"a\", \"port\": 5432},\n  \"debug\": true\n}",
        );
        let overrider = FieldOverrider {
            field_path: "/data/config.json".into(),
            json: vec![
                op(Replace, "/db/host", Some(json!("db.eu"))),
                op(Add, "/db/tls", Some(json!({"enabled": true}))),
                op(Remove, "/debug", None),
            ],
            yaml: vec![],
        };
        apply(&mut doc, &overrider).unwrap();
        assert_eq!(
            doc,
            configmap(
                "config.json",
                r#"{"db":{"host":"db.eu","port":5432,"tls":{"enabled":true}}}"#
            )
        );
    }

    #[test]
    fn yaml_documents_are_changed_and_written_back_as_yaml() {
        let mut doc = configmap(
            "config.yaml",
            "server:\n  port: 8080\n  hosts:\n  - a\n  - b\nlog: debug\n",
        );
        let overrider = FieldOverrider {
            field_path: "/data/config.yaml".into(),
            json: vec![],
            yaml: vec![
                op(Replace, "/server/port", Some(json!(9090))),
                op(Add, "/server/hosts/-", Some(json!("c"))),
                op(Remove, "/log", None),
            ],
        };
        apply(&mut doc, &overrider).unwrap();
        assert_eq!(
            doc,
            configmap(
                "config.yaml",
                "server:\n  port: 9090\n  hosts:\n  - a\n  - b\n  - c\n"
            )
        );
    }

    #[test]
    fn field_paths_are_pointers_with_escapes() {
        let mut doc = json!({"metadata": {"annotations": {"example.com/config": "{\"a\":1}"}}});
        let overrider = FieldOverrider {
            field_path: "/metadata/annotations/example.com~1config".into(),
            json: vec![op(Replace, "/a", Some(json!(2)))],
            yaml: vec![],
        };
        apply(&mut doc, &overrider).unwrap();
        assert_eq!(
            doc,
            json!({"metadata": {"annotations": {"example.com/config": "{\"a\":2}"}}})
        );
    }

    #[test]
    fn yaml_wins_when_both_are_set_and_neither_changes_nothing() {
        let mut doc = configmap("c", "a: 1\n");
        let both = FieldOverrider {
            field_path: "/data/c".into(),
            json: vec![op(Replace, "/a", Some(json!(3)))],
            yaml: vec![op(Replace, "/a", Some(json!(2)))],
        };
        apply(&mut doc, &both).unwrap();
        assert_eq!(doc, configmap("c", "a: 2\n"));
        let neither = FieldOverrider {
            field_path: "/data/c".into(),
            json: vec![],
            yaml: vec![],
        };
        apply(&mut doc, &neither).unwrap();
        assert_eq!(doc, configmap("c", "a: 2\n"));
    }

    #[test]
    fn failures_name_the_field_and_operation() {
        let replace_a = vec![op(Replace, "/a", Some(json!(1)))];
        let cases: Vec<(Value, &str, bool, &str)> = vec![
            (
                json!({"data": {"n": 5}}),
                "/data/n",
                true,
                r#"fieldOverrider fieldPath "/data/n": the field is not a string"#,
            ),
            (
                json!({"data": {}}),
                "/data/missing",
                true,
                r#"fieldOverrider fieldPath "/data/missing": path does not exist"#,
            ),
            (
                json!({"data": {"c": "{not json"}}),
                "/data/c",
                true,
                r#"fieldOverrider fieldPath "/data/c": field does not hold valid JSON: "#,
            ),
            (
                json!({"data": {"c": "a: [1"}}),
                "/data/c",
                false,
                r#"fieldOverrider fieldPath "/data/c": field does not hold valid YAML: "#,
            ),
            (
                json!({"data": {"c": "{\"b\":1}"}}),
                "/data/c",
                true,
                r#"fieldOverrider fieldPath "/data/c" json subPath "/a": path does not exist"#,
            ),
            (
                json!({"data": {"c": "b: 1\n"}}),
                "/data/c",
                false,
                r#"fieldOverrider fieldPath "/data/c" yaml subPath "/a": path does not exist"#,
            ),
            (
                json!({"data": {"c": "{}"}}),
                "data/c",
                true,
                r#"fieldOverrider fieldPath "data/c": not a valid JSON pointer: must start with "/""#,
            ),
        ];
        for (doc, field_path, json_ops, want) in cases {
            let overrider = FieldOverrider {
                field_path: field_path.into(),
                json: if json_ops { replace_a.clone() } else { vec![] },
                yaml: if json_ops { vec![] } else { replace_a.clone() },
            };
            let mut got = doc.clone();
            let (overrider_name, failure) = apply(&mut got, &overrider).unwrap_err();
            let message = format!("{overrider_name}: {failure}");
            assert!(message.starts_with(want), "{message}");
            assert_eq!(got, doc, "{field_path}: the template changed on failure");
        }
    }
}
