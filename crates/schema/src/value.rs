//! JSON value helpers shared by the checks: kind names, number comparison, field paths and the
//! way kube-apiserver renders values and field errors in `Cause` messages.

use std::cmp::Ordering;

use flotilla_apimachinery::Cause;
use serde_json::{Number, Value};

/// The OpenAPI name of a value's kind, as kube reports it in type errors.
pub(crate) fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) if is_integer(v) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether a JSON number is an integer. `3.0` counts: kube accepts floats that are whole numbers
/// for `type: integer`.
pub(crate) fn is_integer(v: &Value) -> bool {
    match v {
        Value::Number(n) => {
            n.is_i64()
                || n.is_u64()
                || n.as_f64()
                    .is_some_and(|f| f.is_finite() && f.fract() == 0.0 && f.abs() < 9.007e15)
        }
        _ => false,
    }
}

fn as_i128(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Compares two numbers exactly when both are integers, else as floats.
pub(crate) fn num_cmp(a: &Number, b: &Number) -> Option<Ordering> {
    match (as_i128(a), as_i128(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num_cmp(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_eq(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Formats a float like Go's `%v` (shortest representation, exponent form from 1e+06 or below
/// 1e-04): limits such as `maximum` are float64 in kube and printed that way.
pub(crate) fn go_float(f: f64) -> String {
    if !f.is_finite() {
        return f.to_string();
    }
    if f == 0.0 {
        return "0".to_string();
    }
    // Rust's `{:e}` is the shortest round-tripping form: "1.5e6", "-2e-7".
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return f.to_string();
    };
    let Ok(exp) = exp.parse::<i32>() else {
        return f.to_string();
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        // Plain notation; Rust's Display never uses exponents and is shortest too.
        f.to_string()
    }
}

/// Renders a number as kube prints it: integers plainly, floats like Go's `%v`.
pub(crate) fn render_number(n: &Number) -> String {
    if n.is_i64() || n.is_u64() {
        n.to_string()
    } else {
        n.as_f64().map_or_else(|| n.to_string(), go_float)
    }
}

/// Renders a value the way field errors print it: strings quoted, numbers and booleans bare,
/// null as `"null"`, composites as JSON.
pub(crate) fn render(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => render_number(n),
        Value::String(s) => quote(s),
        Value::Array(_) | Value::Object(_) => v.to_string(),
    }
}

/// A value rendered inside quotes whatever its kind (Go's `%q` on the data in format errors).
pub(crate) fn render_quoted(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        other => quote(&render(other)),
    }
}

pub(crate) fn quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// `path.name`, or `name` at the root.
pub(crate) fn field(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// `path[i]`.
pub(crate) fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// `path.properties[name]`: how kube names a property inside a schema.
pub(crate) fn prop_path(path: &str, name: &str) -> String {
    field(path, &format!("properties[{name}]"))
}

/// `spec.replicas in body`: the subject of kube's OpenAPI validation messages.
pub(crate) fn in_body(path: &str) -> String {
    if path.is_empty() {
        "in body".to_string()
    } else {
        format!("{path} in body")
    }
}

pub(crate) fn invalid(field: &str, value: &str, detail: &str) -> Cause {
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {value}: {detail}"),
        field,
    )
}

pub(crate) fn required(field: &str, detail: &str) -> Cause {
    let message = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    Cause::new("FieldValueRequired", message, field)
}

pub(crate) fn forbidden(field: &str, detail: &str) -> Cause {
    Cause::new("FieldValueForbidden", format!("Forbidden: {detail}"), field)
}

pub(crate) fn not_supported(field: &str, value: &str, supported: &[String]) -> Cause {
    let message = if supported.is_empty() {
        format!("Unsupported value: {value}")
    } else {
        format!(
            "Unsupported value: {value}: supported values: {}",
            supported.join(", ")
        )
    };
    Cause::new("FieldValueNotSupported", message, field)
}

pub(crate) fn too_long(field: &str, max: u64) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    Cause::new(
        "FieldValueTooLong",
        format!("Too long: may not be more than {max} {unit}"),
        field,
    )
}

pub(crate) fn too_many(field: &str, actual: usize, max: u64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    Cause::new(
        "FieldValueTooMany",
        format!("Too many: {actual}: must have at most {max} {unit}"),
        field,
    )
}

pub(crate) fn duplicate(field: &str, value: &str) -> Cause {
    Cause::new(
        "FieldValueDuplicate",
        format!("Duplicate value: {value}"),
        field,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_float_matches_go_percent_v() {
        let cases = [
            (10.0, "10"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5, "-2.5"),
            (0.0, "0"),
        ];
        for (f, want) in cases {
            assert_eq!(go_float(f), want, "{f}");
        }
    }

    #[test]
    fn integers_and_kinds() {
        assert!(is_integer(&json!(3)));
        assert!(is_integer(&json!(3.0)));
        assert!(!is_integer(&json!(3.5)));
        assert!(!is_integer(&json!("3")));
        assert_eq!(kind_name(&json!(3.0)), "integer");
        assert_eq!(kind_name(&json!(3.5)), "number");
        assert_eq!(kind_name(&json!(null)), "null");
        assert_eq!(kind_name(&json!({})), "object");
    }

    #[test]
    fn equality_and_rendering() {
        assert!(json_eq(&json!([1, {"a": 2.0}]), &json!([1.0, {"a": 2}])));
        assert!(!json_eq(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
        assert_eq!(render(&json!("x")), "\"x\"");
        assert_eq!(render(&json!(20)), "20");
        assert_eq!(render(&json!(null)), "\"null\"");
        assert_eq!(render(&json!({"a": 1})), "{\"a\":1}");
        assert_eq!(render_quoted(&json!(7)), "\"7\"");
        assert_eq!(
            num_cmp(&Number::from(u64::MAX), &Number::from(1)),
            Some(Ordering::Greater)
        );
    }
}
