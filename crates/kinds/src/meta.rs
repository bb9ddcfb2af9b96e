//! Checks on `metadata` that every kind shares: the name's shape (which rule depends on the
//! kind) and the labels. Name presence and `generateName` are the generic server's business.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::field::{Errs, join};
use crate::names;

/// Which rule a kind's object names follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameRule {
    /// RFC 1123 subdomain (most kinds).
    Subdomain,
    /// RFC 1123 label (namespaces).
    Label,
    /// RFC 1035 label (services).
    Dns1035,
    /// Any single URL path segment (RBAC kinds, whose names look like `system:controller:x`).
    PathSegment,
}

/// Validates `metadata.name` (when set) and `metadata.labels` of a raw object.
pub(crate) fn validate_metadata(object: &Value, rule: NameRule, errs: &mut Errs) {
    let metadata = object.get("metadata");
    if let Some(name) = metadata
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        let checked = match rule {
            NameRule::Subdomain => names::dns1123_subdomain(name),
            NameRule::Label => names::dns1123_label(name),
            NameRule::Dns1035 => names::dns1035_label(name),
            NameRule::PathSegment => names::path_segment(name),
        };
        if let Err(m) = checked {
            errs.invalid("metadata.name", &Value::from(name), &m);
        }
    }
    validate_labels(metadata, "metadata", errs);
}

/// Validates the `labels` of the metadata object `metadata` found at `path`.
pub(crate) fn validate_labels(metadata: Option<&Value>, path: &str, errs: &mut Errs) {
    if let Some(labels) = metadata
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
    {
        validate_label_map(labels, &join(path, "labels"), errs);
    }
}

/// Validates a label map (labels, `matchLabels`, a service selector) found at `path`.
pub(crate) fn validate_label_map(
    labels: &serde_json::Map<String, Value>,
    path: &str,
    errs: &mut Errs,
) {
    for (offender, message) in names::labels(labels) {
        errs.invalid(path, &Value::from(offender), &message);
    }
}

/// Same, for a typed label map.
pub(crate) fn validate_label_btree(
    labels: Option<&BTreeMap<String, String>>,
    path: &str,
    errs: &mut Errs,
) {
    if let Some(labels) = labels {
        let map = labels
            .iter()
            .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
            .collect();
        validate_label_map(&map, path, errs);
    }
}

/// Go's `%#v` of a `map[string]string`, which kube-apiserver prints for label maps:
/// `map[string]string{"app":"web"}`.
pub(crate) fn show_label_map(labels: Option<&BTreeMap<String, String>>) -> String {
    let entries = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| {
            format!(
                "{}:{}",
                crate::field::show(&Value::from(k.as_str())),
                crate::field::show(&Value::from(v.as_str()))
            )
        })
        .collect::<Vec<_>>();
    if entries.is_empty() && labels.is_none() {
        "map[string]string(nil)".to_string()
    } else {
        format!("map[string]string{{{}}}", entries.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(object: Value, rule: NameRule) -> Vec<String> {
        let mut e = Errs::default();
        validate_metadata(&object, rule, &mut e);
        e.into_causes()
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn names_follow_the_kind_rule() {
        assert!(
            run(
                json!({"metadata": {"name": "web.example"}}),
                NameRule::Subdomain
            )
            .is_empty()
        );
        assert_eq!(
            run(
                json!({"metadata": {"name": "web.example"}}),
                NameRule::Label
            )
            .len(),
            1
        );
        assert!(
            run(
                json!({"metadata": {"name": "system:admin"}}),
                NameRule::PathSegment
            )
            .is_empty()
        );
        let bad = run(
            json!({"metadata": {"name": "Bad_Name"}}),
            NameRule::Subdomain,
        );
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0].starts_with("metadata.name: Invalid value: \"Bad_Name\": "),
            "{bad:?}"
        );
        // A missing name is the generic server's to report.
        assert!(run(json!({"metadata": {}}), NameRule::Subdomain).is_empty());
    }

    #[test]
    fn labels_are_checked() {
        let bad = run(
            json!({"metadata": {"name": "a", "labels": {"app": "web", "bad key": "x"}}}),
            NameRule::Subdomain,
        );
        assert_eq!(bad.len(), 1);
        assert!(
            bad[0].starts_with("metadata.labels: Invalid value: \"bad key\": "),
            "{bad:?}"
        );
    }

    #[test]
    fn label_maps_print_like_go() {
        let m: BTreeMap<String, String> = [
            ("app".to_string(), "web".to_string()),
            ("b".into(), "c".into()),
        ]
        .into();
        assert_eq!(
            show_label_map(Some(&m)),
            "map[string]string{\"app\":\"web\", \"b\":\"c\"}"
        );
        assert_eq!(show_label_map(None), "map[string]string(nil)");
    }
}
