//! Field errors in kube-apiserver's wording: the `reason`/`message`/`field` triples a `422
//! Invalid` Status carries, and the small path helpers that spell field paths the way kubectl
//! users read them (`spec.template.spec.containers[0].image`, `data[key]`).

use flotilla_apimachinery::Cause;
use serde_json::Value;

/// The causes found while validating one object, in the order they were found.
#[derive(Debug, Default)]
pub(crate) struct Errs {
    causes: Vec<Cause>,
}

/// Formats a value the way field errors quote it: strings quoted, numbers bare, anything
/// else as compact JSON.
pub(crate) fn show(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

fn quote(s: &str) -> String {
    show(&Value::String(s.to_string()))
}

impl Errs {
    pub(crate) fn into_causes(self) -> Vec<Cause> {
        self.causes
    }

    /// Adds causes found elsewhere (e.g. by a CRD schema check).
    pub(crate) fn extend(&mut self, causes: Vec<Cause>) {
        self.causes.extend(causes);
    }

    /// `Invalid value: <value>: <detail>` (`FieldValueInvalid`).
    pub(crate) fn invalid(&mut self, field: &str, value: &Value, detail: &str) {
        self.causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {}: {detail}", show(value)),
            field,
        ));
    }

    /// `Required value` or `Required value: <detail>` (`FieldValueRequired`).
    pub(crate) fn required(&mut self, field: &str, detail: &str) {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        self.causes
            .push(Cause::new("FieldValueRequired", message, field));
    }

    /// `Unsupported value: "x": supported values: "a", "b"` (`FieldValueNotSupported`).
    pub(crate) fn not_supported(&mut self, field: &str, value: &str, supported: &[&str]) {
        let list = supported
            .iter()
            .map(|s| quote(s))
            .collect::<Vec<_>>()
            .join(", ");
        self.causes.push(Cause::new(
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {list}",
                quote(value)
            ),
            field,
        ));
    }

    /// `Unsupported value: <value>: supported values: ...` for a value that is not a string.
    pub(crate) fn not_supported_shown(&mut self, field: &str, value: &Value, supported: &[&str]) {
        let list = supported
            .iter()
            .map(|s| quote(s))
            .collect::<Vec<_>>()
            .join(", ");
        self.causes.push(Cause::new(
            "FieldValueNotSupported",
            format!(
                "Unsupported value: {}: supported values: {list}",
                show(value)
            ),
            field,
        ));
    }

    /// `Duplicate value: "x"` (`FieldValueDuplicate`).
    pub(crate) fn duplicate(&mut self, field: &str, value: &Value) {
        self.causes.push(Cause::new(
            "FieldValueDuplicate",
            format!("Duplicate value: {}", show(value)),
            field,
        ));
    }

    /// `Invalid value: <shown>: <detail>` with the value already formatted.
    pub(crate) fn invalid_shown(&mut self, field: &str, shown: &str, detail: &str) {
        self.causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {shown}: {detail}"),
            field,
        ));
    }

    /// `Not found: "x"` (`FieldValueNotFound`), for references to things that do not exist.
    pub(crate) fn not_found(&mut self, field: &str, value: &Value) {
        self.causes.push(Cause::new(
            "FieldValueNotFound",
            format!("Not found: {}", show(value)),
            field,
        ));
    }

    /// `Too long: may not be more than <max> bytes` (`FieldValueTooLong`).
    pub(crate) fn too_long(&mut self, field: &str, max: usize) {
        self.causes.push(Cause::new(
            "FieldValueTooLong",
            format!("Too long: may not be more than {max} bytes"),
            field,
        ));
    }

    /// `Forbidden: <detail>` (`FieldValueForbidden`).
    pub(crate) fn forbidden(&mut self, field: &str, detail: &str) {
        self.causes.push(Cause::new(
            "FieldValueForbidden",
            format!("Forbidden: {detail}"),
            field,
        ));
    }

    /// `field is immutable` on `field` when `new` differs from `old`.
    pub(crate) fn immutable<T: PartialEq + serde::Serialize>(
        &mut self,
        field: &str,
        new: &T,
        old: &T,
    ) {
        if new != old {
            let shown = serde_json::to_value(new).unwrap_or(Value::Null);
            self.invalid(field, &shown, "field is immutable");
        }
    }

    /// A value that must not be negative: `must be greater than or equal to 0`.
    pub(crate) fn non_negative(&mut self, field: &str, value: Option<i64>) {
        if let Some(v) = value.filter(|v| *v < 0) {
            self.invalid(field, &Value::from(v), "must be greater than or equal to 0");
        }
    }

    /// A port number: `must be between 1 and 65535, inclusive`.
    pub(crate) fn port(&mut self, field: &str, port: i32) {
        if !(1..=65535).contains(&port) {
            self.invalid(
                field,
                &Value::from(port),
                "must be between 1 and 65535, inclusive",
            );
        }
    }

    /// An optional value from a fixed set (absent or empty is fine).
    pub(crate) fn one_of(&mut self, field: &str, value: Option<&str>, supported: &[&str]) {
        if let Some(v) = value.filter(|v| !v.is_empty() && !supported.contains(v)) {
            self.not_supported(field, v, supported);
        }
    }
}

/// `base.child`, or `child` at the root.
pub(crate) fn join(base: &str, child: &str) -> String {
    if base.is_empty() {
        child.to_string()
    } else {
        format!("{base}.{child}")
    }
}

/// `base[i]`.
pub(crate) fn index(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

/// `base[key]` (map entries, as kube names them: `data[tls.crt]`).
pub(crate) fn key(base: &str, k: &str) -> String {
    format!("{base}[{k}]")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_use_kube_wording() {
        let mut e = Errs::default();
        e.non_negative("spec.replicas", Some(-1));
        e.non_negative("spec.replicas", Some(0));
        e.required("spec.selector", "");
        e.not_supported("spec.type", "Foo", &["ClusterIP", "NodePort"]);
        e.duplicate("x[1].name", &Value::from("web"));
        let c = e.into_causes();
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[0].message,
            "Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(c[0].reason, "FieldValueInvalid");
        assert_eq!(c[0].field, "spec.replicas");
        assert_eq!(c[1].message, "Required value");
        assert_eq!(
            c[2].message,
            "Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"NodePort\""
        );
        assert_eq!(c[3].message, "Duplicate value: \"web\"");
    }

    #[test]
    fn paths() {
        assert_eq!(join("", "spec"), "spec");
        assert_eq!(index(&join("spec", "containers"), 2), "spec.containers[2]");
        assert_eq!(key("data", "a b"), "data[a b]");
    }
}
