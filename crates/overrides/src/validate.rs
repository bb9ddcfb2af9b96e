//! What admission can tell about a policy's overriders without a template.
//!
//! Karmada's webhook checks fewer things (it does not look at plaintext or imageOverrider
//! values and lets the empty pointer through); the checks here are those that would fail, or
//! do nothing useful, for every template. Messages follow the Kubernetes field error forms
//! (`Invalid value: ...`, `Required value: ...`) so a 422 can carry them as causes.

use flotilla_apimachinery::names::{label_value_errors, qualified_name_errors};
use flotilla_karmada_api::overrides::{
    FieldPatchOperation, LabelAnnotationOverrider, OverrideSpec, OverriderOperator, Overriders,
};

use crate::patch::{operator_name, pointer_problem};

/// Largest total size of annotation keys and values (Kubernetes' limit).
const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;

const VALUE_REQUIRED: &str = "Required value: value is required for add or replace operation";

/// Problems of `spec`: `(field path, message)`, the field path like
/// `spec.overrideRules[0].overriders.plaintext[1].path`. Empty when the spec is valid.
pub fn validate(spec: &OverrideSpec) -> Vec<(String, String)> {
    let mut problems = Problems::default();
    if !spec.override_rules.is_empty() {
        if spec.target_cluster.is_some() {
            problems.push(
                "spec.targetCluster".into(),
                "Forbidden: overrideRules and targetCluster can't co-exist".into(),
            );
        }
        if spec.overriders.as_ref().is_some_and(|o| !o.is_empty()) {
            problems.push(
                "spec.overriders".into(),
                "Forbidden: overrideRules and overriders can't co-exist".into(),
            );
        }
        for (i, rule) in spec.override_rules.iter().enumerate() {
            overriders(
                &format!("spec.overrideRules[{i}].overriders"),
                &rule.overriders,
                &mut problems,
            );
        }
    } else if let Some(o) = &spec.overriders {
        overriders("spec.overriders", o, &mut problems);
    }
    problems.0
}

#[derive(Default)]
struct Problems(Vec<(String, String)>);

impl Problems {
    fn push(&mut self, field: String, message: String) {
        self.0.push((field, message));
    }

    fn pointer(&mut self, field: String, path: &str) {
        if let Some(problem) = pointer_problem(path) {
            self.push(field, format!("Invalid value: {path:?}: {problem}"));
        }
    }
}

fn overriders(at: &str, o: &Overriders, problems: &mut Problems) {
    for (i, p) in o.plaintext.iter().enumerate() {
        let at = format!("{at}.plaintext[{i}]");
        problems.pointer(format!("{at}.path"), &p.path);
        if p.operator != OverriderOperator::Remove && p.value.is_none() {
            problems.push(format!("{at}.value"), VALUE_REQUIRED.into());
        }
    }
    for (i, image) in o.image_overrider.iter().enumerate() {
        let at = format!("{at}.imageOverrider[{i}]");
        if let Some(predicate) = &image.predicate {
            problems.pointer(format!("{at}.predicate.path"), &predicate.path);
        }
        if image.operator != OverriderOperator::Remove && image.value.is_none() {
            problems.push(format!("{at}.value"), VALUE_REQUIRED.into());
        }
    }
    for (name, list) in [
        ("commandOverrider", &o.command_overrider),
        ("argsOverrider", &o.args_overrider),
    ] {
        for (i, c) in list.iter().enumerate() {
            if c.operator == OverriderOperator::Replace {
                problems.push(
                    format!("{at}.{name}[{i}].operator"),
                    format!(
                        r#"Unsupported value: "{}": supported values: "add", "remove""#,
                        operator_name(c.operator)
                    ),
                );
            }
        }
    }
    for (i, l) in o.labels_overrider.iter().enumerate() {
        labels(&format!("{at}.labelsOverrider[{i}].value"), l, problems);
    }
    for (i, a) in o.annotations_overrider.iter().enumerate() {
        annotations(
            &format!("{at}.annotationsOverrider[{i}].value"),
            a,
            problems,
        );
    }
    for (i, f) in o.field_overrider.iter().enumerate() {
        let at = format!("{at}.fieldOverrider[{i}]");
        match (f.json.is_empty(), f.yaml.is_empty()) {
            (false, false) => problems.push(
                at.clone(),
                "Forbidden: only one of json and yaml may be set".into(),
            ),
            (true, true) => problems.push(
                at.clone(),
                "Required value: one of json and yaml must be set".into(),
            ),
            _ => {}
        }
        problems.pointer(format!("{at}.fieldPath"), &f.field_path);
        field_operations(&format!("{at}.json"), &f.json, problems);
        field_operations(&format!("{at}.yaml"), &f.yaml, problems);
    }
}

fn field_operations(at: &str, operations: &[FieldPatchOperation], problems: &mut Problems) {
    for (i, op) in operations.iter().enumerate() {
        let at = format!("{at}[{i}]");
        problems.pointer(format!("{at}.subPath"), &op.sub_path);
        match (op.operator, &op.value) {
            (OverriderOperator::Remove, Some(_)) => problems.push(
                format!("{at}.value"),
                "Forbidden: value is not allowed for remove operation".into(),
            ),
            (OverriderOperator::Add | OverriderOperator::Replace, None) => {
                problems.push(format!("{at}.value"), VALUE_REQUIRED.into())
            }
            _ => {}
        }
    }
}

/// Label keys are qualified names and values label values (values only matter for
/// add/replace, but Karmada checks them always).
fn labels(at: &str, o: &LabelAnnotationOverrider, problems: &mut Problems) {
    for (key, value) in &o.value {
        for e in qualified_name_errors(key) {
            problems.push(at.to_string(), format!("Invalid value: {key:?}: {e}"));
        }
        for e in label_value_errors(value) {
            problems.push(at.to_string(), format!("Invalid value: {value:?}: {e}"));
        }
    }
}

/// Annotation keys are qualified names (checked lowercased, as Kubernetes does), and the
/// annotations together at most 256 KiB.
fn annotations(at: &str, o: &LabelAnnotationOverrider, problems: &mut Problems) {
    let mut total = 0;
    for (key, value) in &o.value {
        for e in qualified_name_errors(&key.to_lowercase()) {
            problems.push(at.to_string(), format!("Invalid value: {key:?}: {e}"));
        }
        total += key.len() + value.len();
    }
    if total > ANNOTATIONS_MAX_BYTES {
        problems.push(
            at.to_string(),
            format!("Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use OverriderOperator::{Add, Remove, Replace};
    use flotilla_karmada_api::overrides::{
        CommandArgsOverrider, FieldOverrider, ImageComponent, ImageOverrider, ImagePredicate,
        PlaintextOverrider, RuleWithCluster,
    };
    use flotilla_karmada_api::policy::ClusterAffinity;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn rules(o: Overriders) -> OverrideSpec {
        OverrideSpec {
            override_rules: vec![RuleWithCluster {
                target_cluster: None,
                overriders: o,
            }],
            ..Default::default()
        }
    }

    fn fields(spec: &OverrideSpec) -> Vec<(String, String)> {
        validate(spec)
    }

    fn kv(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_valid_spec_has_no_problems() {
        let spec = rules(Overriders {
            plaintext: vec![
                PlaintextOverrider {
                    path: "/spec/replicas".into(),
                    operator: Replace,
                    value: Some(json!(2)),
                },
                PlaintextOverrider {
                    path: "/metadata/annotations/a~1b".into(),
                    operator: Remove,
                    value: None,
                },
            ],
            image_overrider: vec![ImageOverrider {
                predicate: Some(ImagePredicate {
                    path: "/spec/template/spec/initContainers/0/image".into(),
                }),
                component: ImageComponent::Registry,
                operator: Remove,
                value: None,
            }],
            command_overrider: vec![CommandArgsOverrider {
                container_name: "app".into(),
                operator: Add,
                value: vec!["--v=2".into()],
            }],
            labels_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: kv(&[("example.com/region", "eu-1")]),
            }],
            annotations_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: kv(&[("example.com/Note", "any text: at all")]),
            }],
            field_overrider: vec![FieldOverrider {
                field_path: "/data/config.yaml".into(),
                json: vec![],
                yaml: vec![FieldPatchOperation {
                    sub_path: "/a".into(),
                    operator: Remove,
                    value: None,
                }],
            }],
            ..Default::default()
        });
        assert_eq!(fields(&spec), Vec::<(String, String)>::new());
    }

    #[test]
    fn reports_each_problem_at_its_field() {
        let spec = rules(Overriders {
            plaintext: vec![
                PlaintextOverrider {
                    path: "/ok".into(),
                    operator: Add,
                    value: Some(json!(1)),
                },
                PlaintextOverrider {
                    path: "spec/replicas".into(),
                    operator: Add,
                    value: None,
                },
            ],
            image_overrider: vec![ImageOverrider {
                predicate: Some(ImagePredicate {
                    path: "/spec/a~2".into(),
                }),
                component: ImageComponent::Tag,
                operator: Replace,
                value: None,
            }],
            command_overrider: vec![CommandArgsOverrider {
                container_name: "app".into(),
                operator: Replace,
                value: vec![],
            }],
            args_overrider: vec![CommandArgsOverrider {
                container_name: "app".into(),
                operator: Replace,
                value: vec![],
            }],
            labels_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: kv(&[("bad key", "ok"), ("good", "bad value!")]),
            }],
            annotations_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: kv(&[("-bad", "x")]),
            }],
            field_overrider: vec![
                FieldOverrider {
                    field_path: "".into(),
                    json: vec![FieldPatchOperation {
                        sub_path: "a".into(),
                        operator: Remove,
                        value: Some(json!(1)),
                    }],
                    yaml: vec![FieldPatchOperation {
                        sub_path: "/a".into(),
                        operator: Add,
                        value: None,
                    }],
                },
                FieldOverrider {
                    field_path: "/data/x".into(),
                    json: vec![],
                    yaml: vec![],
                },
            ],
        });
        let got = fields(&spec);
        let at: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        let o = "spec.overrideRules[0].overriders";
        let want: Vec<String> = [
            "plaintext[1].path",
            "plaintext[1].value",
            "imageOverrider[0].predicate.path",
            "imageOverrider[0].value",
            "commandOverrider[0].operator",
            "argsOverrider[0].operator",
            "labelsOverrider[0].value",
            "labelsOverrider[0].value",
            "annotationsOverrider[0].value",
            "fieldOverrider[0]",
            "fieldOverrider[0].fieldPath",
            "fieldOverrider[0].json[0].subPath",
            "fieldOverrider[0].json[0].value",
            "fieldOverrider[0].yaml[0].value",
            "fieldOverrider[1]",
        ]
        .iter()
        .map(|f| format!("{o}.{f}"))
        .collect();
        assert_eq!(at, want, "{got:#?}");
        let message = |i: usize| got[i].1.as_str();
        assert_eq!(
            message(0),
            r#"Invalid value: "spec/replicas": must start with "/""#
        );
        assert_eq!(message(1), VALUE_REQUIRED);
        assert!(message(2).starts_with(r#"Invalid value: "/spec/a~2": "~" must be followed"#));
        assert_eq!(
            message(4),
            r#"Unsupported value: "replace": supported values: "add", "remove""#
        );
        assert!(
            message(6).starts_with(r#"Invalid value: "bad key": "#),
            "{}",
            message(6)
        );
        assert!(
            message(7).starts_with(r#"Invalid value: "bad value!": "#),
            "{}",
            message(7)
        );
        assert!(
            message(8).starts_with(r#"Invalid value: "-bad": "#),
            "{}",
            message(8)
        );
        assert_eq!(
            message(9),
            "Forbidden: only one of json and yaml may be set"
        );
        assert_eq!(message(10), r#"Invalid value: "": must start with "/""#);
        assert_eq!(
            message(12),
            "Forbidden: value is not allowed for remove operation"
        );
        assert_eq!(
            message(14),
            "Required value: one of json and yaml must be set"
        );
    }

    #[test]
    fn deprecated_fields_are_checked_and_cannot_mix_with_rules() {
        let bad = Overriders {
            plaintext: vec![PlaintextOverrider {
                path: "x".into(),
                operator: Remove,
                value: None,
            }],
            ..Default::default()
        };
        let deprecated = OverrideSpec {
            target_cluster: Some(ClusterAffinity::default()),
            overriders: Some(bad.clone()),
            ..Default::default()
        };
        let got = fields(&deprecated);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "spec.overriders.plaintext[0].path");

        let mixed = OverrideSpec {
            target_cluster: Some(ClusterAffinity::default()),
            overriders: Some(bad),
            ..rules(Overriders::default())
        };
        let at: Vec<String> = fields(&mixed).into_iter().map(|(f, _)| f).collect();
        assert_eq!(at, ["spec.targetCluster", "spec.overriders"]);
    }

    #[test]
    fn annotations_are_limited_in_total_size() {
        let big = "x".repeat(ANNOTATIONS_MAX_BYTES);
        let spec = rules(Overriders {
            annotations_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: kv(&[("a", &big)]),
            }],
            ..Default::default()
        });
        let got = fields(&spec);
        assert_eq!(got.len(), 1);
        assert!(got[0].1.starts_with("Too long"));
    }
}
