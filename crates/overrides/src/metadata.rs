//! labelsOverrider and annotationsOverrider on `metadata.labels` / `metadata.annotations`.
//!
//! As in Karmada: `add` sets every key (creating `metadata` and the map when absent, and
//! overwriting keys that exist); `replace` sets only keys that exist; `remove` deletes the
//! keys that exist. Keys missing for `replace`/`remove` are skipped, not errors.

use flotilla_karmada_api::overrides::{LabelAnnotationOverrider, OverriderOperator};
use serde_json::{Map, Value};

use crate::Failed;
use crate::error::OverrideFailure;
use crate::patch::operator_name;

/// Which metadata map an overrider changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MetadataMap {
    Labels,
    Annotations,
}

impl MetadataMap {
    fn key(self) -> &'static str {
        match self {
            MetadataMap::Labels => "labels",
            MetadataMap::Annotations => "annotations",
        }
    }

    fn overrider(self) -> &'static str {
        match self {
            MetadataMap::Labels => "labelsOverrider",
            MetadataMap::Annotations => "annotationsOverrider",
        }
    }
}

/// Applies one labelsOverrider or annotationsOverrider.
pub(crate) fn apply(
    doc: &mut Value,
    which: MetadataMap,
    overrider: &LabelAnnotationOverrider,
) -> Result<(), Failed> {
    let fail = |what: &str, expected| {
        (
            format!(
                "{} {}",
                which.overrider(),
                operator_name(overrider.operator)
            ),
            OverrideFailure::UnexpectedType {
                what: what.to_string(),
                expected,
            },
        )
    };
    let create = overrider.operator == OverriderOperator::Add;
    let Value::Object(object) = doc else {
        return Err(fail("the template", "an object"));
    };
    let Some(metadata) =
        child_map(object, "metadata", create).map_err(|()| fail("metadata", "an object"))?
    else {
        return Ok(());
    };
    let what = format!("metadata.{}", which.key());
    let Some(map) =
        child_map(metadata, which.key(), create).map_err(|()| fail(&what, "an object"))?
    else {
        return Ok(());
    };
    for (key, value) in &overrider.value {
        match overrider.operator {
            OverriderOperator::Add => {
                map.insert(key.clone(), Value::String(value.clone()));
            }
            OverriderOperator::Replace => {
                if let Some(existing) = map.get_mut(key) {
                    *existing = Value::String(value.clone());
                }
            }
            OverriderOperator::Remove => {
                map.shift_remove(key);
            }
        }
    }
    Ok(())
}

/// The object under `key`: created when absent (or null) and `create`, `None` when absent
/// otherwise, `Err` when it is something else than an object.
fn child_map<'a>(
    parent: &'a mut Map<String, Value>,
    key: &str,
    create: bool,
) -> Result<Option<&'a mut Map<String, Value>>, ()> {
    let absent = matches!(parent.get(key), None | Some(Value::Null));
    if absent {
        if !create {
            return Ok(None);
        }
        parent.insert(key.to_string(), Value::Object(Map::new()));
    }
    match parent.get_mut(key) {
        Some(Value::Object(map)) => Ok(Some(map)),
        _ => Err(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MetadataMap::{Annotations, Labels};
    use OverriderOperator::{Add, Remove, Replace};
    use serde_json::json;
    use std::collections::BTreeMap;

    fn overrider(operator: OverriderOperator, pairs: &[(&str, &str)]) -> LabelAnnotationOverrider {
        LabelAnnotationOverrider {
            operator,
            value: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn add_replace_remove_on_labels_and_annotations() {
        let doc = json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}}});
        let cases = [
            (
                Labels,
                Add,
                vec![("region", "eu"), ("app", "web2")],
                json!({"metadata": {"name": "web", "labels": {"app": "web2", "tier": "front", "region": "eu"}}}),
            ),
            (
                Labels,
                Replace,
                vec![("tier", "back"), ("absent", "x")],
                json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "back"}}}),
            ),
            (
                Labels,
                Remove,
                vec![("tier", ""), ("absent", "")],
                json!({"metadata": {"name": "web", "labels": {"app": "web"}}}),
            ),
            (
                Annotations,
                Add,
                vec![("example.com/owner", "team-a")],
                json!({"metadata": {"name": "web", "labels": {"app": "web", "tier": "front"},
                    "annotations": {"example.com/owner": "team-a"}}}),
            ),
            (
                Annotations,
                Replace,
                vec![("example.com/owner", "b")],
                doc.clone(),
            ),
            (
                Annotations,
                Remove,
                vec![("example.com/owner", "")],
                doc.clone(),
            ),
        ];
        for (which, op, pairs, want) in cases {
            let mut got = doc.clone();
            apply(&mut got, which, &overrider(op, &pairs)).unwrap();
            assert_eq!(got, want, "{which:?} {op:?}");
        }
    }

    #[test]
    fn add_creates_metadata_and_null_maps() {
        let mut doc = json!({"kind": "ConfigMap"});
        apply(&mut doc, Labels, &overrider(Add, &[("a", "1")])).unwrap();
        assert_eq!(
            doc,
            json!({"kind": "ConfigMap", "metadata": {"labels": {"a": "1"}}})
        );
        let mut doc = json!({"metadata": {"annotations": null}});
        apply(&mut doc, Annotations, &overrider(Add, &[("a", "1")])).unwrap();
        assert_eq!(doc, json!({"metadata": {"annotations": {"a": "1"}}}));
        let mut doc = json!({"kind": "ConfigMap"});
        apply(&mut doc, Labels, &overrider(Remove, &[("a", "")])).unwrap();
        assert_eq!(doc, json!({"kind": "ConfigMap"}));
    }

    #[test]
    fn a_map_of_the_wrong_type_is_an_error() {
        let mut doc = json!({"metadata": {"labels": ["a"]}});
        let err = apply(&mut doc, Labels, &overrider(Add, &[("a", "1")])).unwrap_err();
        assert_eq!(err.0, "labelsOverrider add");
        assert_eq!(err.1.to_string(), "metadata.labels is not an object");
    }
}
