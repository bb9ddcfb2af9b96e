//! RFC 6902 `add`/`remove`/`replace` at a JSON pointer (through `json-patch`, as Karmada goes
//! through evanphx/json-patch), and the explanation of a failed operation in terms a policy
//! author can act on: `json-patch` only says "path is invalid".

use flotilla_karmada_api::overrides::OverriderOperator;
use json_patch::jsonptr::{ParseError, Pointer};
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::Value;

use crate::error::OverrideFailure;

/// Parses a pointer of a policy. The empty pointer (the whole document) parses, as in
/// Karmada; [`crate::validate()`] is stricter.
pub(crate) fn parse(path: &str) -> Result<&Pointer, OverrideFailure> {
    Pointer::parse(path).map_err(|e| OverrideFailure::InvalidPointer(pointer_message(&e)))
}

/// Why `path` is not a pointer a policy may use (which must name something below the root),
/// or `None`.
pub(crate) fn pointer_problem(path: &str) -> Option<String> {
    if path.is_empty() {
        return Some(r#"must start with "/""#.to_string());
    }
    Pointer::parse(path).err().map(|e| pointer_message(&e))
}

fn pointer_message(e: &ParseError) -> String {
    match e {
        ParseError::NoLeadingSlash => r#"must start with "/""#.to_string(),
        ParseError::InvalidEncoding { .. } => {
            r#""~" must be followed by "0" or "1" (escape "~" as "~0" and "/" as "~1")"#.to_string()
        }
    }
}

/// The lowercase operator name of the policy API.
pub(crate) fn operator_name(op: OverriderOperator) -> &'static str {
    match op {
        OverriderOperator::Add => "add",
        OverriderOperator::Remove => "remove",
        OverriderOperator::Replace => "replace",
    }
}

/// Applies one operation to `doc`; a missing `value` is JSON null, which is what Karmada's
/// patch carries for an absent value. On failure `doc` is unchanged.
pub(crate) fn apply(
    doc: &mut Value,
    op: OverriderOperator,
    ptr: &Pointer,
    value: Option<&Value>,
) -> Result<(), OverrideFailure> {
    let value = value.cloned().unwrap_or(Value::Null);
    let path = ptr.to_buf();
    let operation = match op {
        OverriderOperator::Add => PatchOperation::Add(AddOperation { path, value }),
        OverriderOperator::Remove => PatchOperation::Remove(RemoveOperation { path }),
        OverriderOperator::Replace => PatchOperation::Replace(ReplaceOperation { path, value }),
    };
    // `patch` undoes its operations on failure, so `doc` can be inspected for the reason.
    json_patch::patch(doc, std::slice::from_ref(&operation)).map_err(|e| explain(doc, op, ptr, &e))
}

/// Says why `op` at `ptr` failed on `doc`.
fn explain(
    doc: &Value,
    op: OverriderOperator,
    ptr: &Pointer,
    err: &json_patch::PatchError,
) -> OverrideFailure {
    let Some((parent, last)) = ptr.split_back() else {
        return match op {
            OverriderOperator::Remove => OverrideFailure::RemoveRoot,
            _ => OverrideFailure::Patch(err.to_string()),
        };
    };
    let Some(parent) = doc.pointer(parent.as_str()) else {
        return match op {
            OverriderOperator::Add => OverrideFailure::ParentMissing,
            _ => OverrideFailure::PathMissing,
        };
    };
    match parent {
        Value::Object(map) if !map.contains_key(last.decoded().as_ref()) => {
            OverrideFailure::PathMissing
        }
        Value::Object(_) => OverrideFailure::Patch(err.to_string()),
        Value::Array(items) => OverrideFailure::BadIndex {
            token: last.decoded().into_owned(),
            len: items.len(),
        },
        _ => OverrideFailure::ParentNotContainer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OverriderOperator::{Add, Remove, Replace};
    use serde_json::json;

    #[test]
    fn operations_follow_rfc6902_and_explain_failures() {
        let doc = json!({"spec": {"replicas": 1, "list": [1, 2], "name": "x"}});
        type Case = (
            OverriderOperator,
            &'static str,
            Option<Value>,
            Result<Value, OverrideFailure>,
        );
        let cases: Vec<Case> = vec![
            (
                Add,
                "/spec/paused",
                Some(json!(true)),
                Ok(json!({"spec": {"replicas": 1, "list": [1, 2], "name": "x", "paused": true}})),
            ),
            (
                Add,
                "/spec/replicas",
                Some(json!(3)),
                Ok(json!({"spec": {"replicas": 3, "list": [1, 2], "name": "x"}})),
            ),
            (
                Add,
                "/spec/list/-",
                Some(json!(3)),
                Ok(json!({"spec": {"replicas": 1, "list": [1, 2, 3], "name": "x"}})),
            ),
            (
                Add,
                "/spec/list/0",
                Some(json!(0)),
                Ok(json!({"spec": {"replicas": 1, "list": [0, 1, 2], "name": "x"}})),
            ),
            (
                Add,
                "/spec/foo/bar",
                Some(json!(1)),
                Err(OverrideFailure::ParentMissing),
            ),
            (
                Add,
                "/spec/name/bar",
                Some(json!(1)),
                Err(OverrideFailure::ParentNotContainer),
            ),
            (
                Add,
                "/spec/list/5",
                Some(json!(1)),
                Err(OverrideFailure::BadIndex {
                    token: "5".into(),
                    len: 2,
                }),
            ),
            (
                Add,
                "/spec/absent",
                None,
                Ok(json!({"spec": {"replicas": 1, "list": [1, 2], "name": "x", "absent": null}})),
            ),
            (
                Remove,
                "/spec/list/0",
                None,
                Ok(json!({"spec": {"replicas": 1, "list": [2], "name": "x"}})),
            ),
            (
                Remove,
                "/spec/nope",
                None,
                Err(OverrideFailure::PathMissing),
            ),
            (
                Remove,
                "/nope/deeper",
                None,
                Err(OverrideFailure::PathMissing),
            ),
            (Remove, "", None, Err(OverrideFailure::RemoveRoot)),
            (
                Remove,
                "/spec/list/2",
                None,
                Err(OverrideFailure::BadIndex {
                    token: "2".into(),
                    len: 2,
                }),
            ),
            (
                Replace,
                "/spec/name",
                Some(json!("y")),
                Ok(json!({"spec": {"replicas": 1, "list": [1, 2], "name": "y"}})),
            ),
            (
                Replace,
                "/spec/nope",
                Some(json!(1)),
                Err(OverrideFailure::PathMissing),
            ),
            (Replace, "", Some(json!({"a": 1})), Ok(json!({"a": 1}))),
        ];
        for (op, path, value, want) in cases {
            let mut got = doc.clone();
            let ptr = parse(path).unwrap();
            let result = apply(&mut got, op, ptr, value.as_ref());
            match want {
                Ok(want) => {
                    assert_eq!(result, Ok(()), "{op:?} {path}");
                    assert_eq!(got, want, "{op:?} {path}");
                }
                Err(want) => {
                    assert_eq!(result, Err(want), "{op:?} {path}");
                    assert_eq!(got, doc, "{op:?} {path} left the document changed");
                }
            }
        }
    }

    #[test]
    fn escaped_tokens_address_keys_with_slashes_and_tildes() {
        let mut doc = json!({"data": {"a/b": "1", "c~d": "2"}});
        apply(&mut doc, Remove, parse("/data/a~1b").unwrap(), None).unwrap();
        apply(
            &mut doc,
            Replace,
            parse("/data/c~0d").unwrap(),
            Some(&json!("3")),
        )
        .unwrap();
        assert_eq!(doc, json!({"data": {"c~d": "3"}}));
    }

    #[test]
    fn pointer_problems() {
        for (path, problem) in [
            ("/spec/replicas", None),
            ("/data/a~1b~0c", None),
            ("/", None),
            ("", Some(r#"must start with "/""#)),
            ("spec/replicas", Some(r#"must start with "/""#)),
            ("/a~2b", Some(r#""~" must be followed"#)),
            ("/a~", Some(r#""~" must be followed"#)),
        ] {
            let got = pointer_problem(path);
            match problem {
                None => assert_eq!(got, None, "{path}"),
                Some(p) => assert!(
                    got.as_deref().is_some_and(|g| g.starts_with(p)),
                    "{path}: {got:?}"
                ),
            }
        }
        assert!(parse("").is_ok());
        assert!(matches!(
            parse("spec"),
            Err(OverrideFailure::InvalidPointer(_))
        ));
    }
}
