//! Whether a `LabelSelector` selects a label set, for the "selector must match the template's
//! labels" rule of the workload kinds.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether the selector has no requirements at all (which would select everything).
pub(crate) fn is_empty(selector: &LabelSelector) -> bool {
    selector.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && selector
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty())
}

/// Whether `selector` selects an object carrying `labels`. Unknown operators select nothing.
pub(crate) fn matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let exact = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions = selector.match_expressions.iter().flatten().all(|req| {
        let values = req.values.as_deref().unwrap_or_default();
        let current = labels.get(&req.key);
        match req.operator.as_str() {
            "In" => current.is_some_and(|v| values.contains(v)),
            "NotIn" => current.is_none_or(|v| !values.contains(v)),
            "Exists" => current.is_some(),
            "DoesNotExist" => current.is_none(),
            _ => false,
        }
    });
    exact && expressions
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sel(v: serde_json::Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn match_labels_and_expressions() {
        let s = sel(json!({"matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                 {"key": "canary", "operator": "DoesNotExist"}]}));
        assert!(matches(&s, &labels(&[("app", "web"), ("tier", "a")])));
        assert!(!matches(&s, &labels(&[("app", "web"), ("tier", "c")])));
        assert!(!matches(
            &s,
            &labels(&[("app", "web"), ("tier", "a"), ("canary", "1")])
        ));
        assert!(!matches(&s, &labels(&[("app", "db"), ("tier", "a")])));
        let n = sel(
            json!({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["1"]},
                                                 {"key": "y", "operator": "Exists"}]}),
        );
        assert!(matches(&n, &labels(&[("y", "")])));
        assert!(!matches(&n, &labels(&[("x", "1"), ("y", "")])));
        assert!(is_empty(&sel(json!({}))));
        assert!(!is_empty(&s));
    }
}
