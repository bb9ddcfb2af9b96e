//! Tests of the whole engine: each overrider through [`apply_overrides`], the order of
//! policies and overriders, cluster filtering, all-or-nothing, and the annotations.

use super::*;
use OverriderOperator::{Add, Remove, Replace};
use flotilla_karmada_api::overrides::{
    CommandArgsOverrider, FieldOverrider, FieldPatchOperation, ImageComponent, ImageOverrider,
    ImagePredicate, LabelAnnotationOverrider, OverriderOperator, PlaintextOverrider,
    RuleWithCluster,
};
use serde_json::json;

fn spec(overriders: Overriders) -> OverrideSpec {
    OverrideSpec {
        override_rules: vec![RuleWithCluster {
            target_cluster: None,
            overriders,
        }],
        ..Default::default()
    }
}

fn plaintext(path: &str, operator: OverriderOperator, value: Option<Value>) -> Overriders {
    Overriders {
        plaintext: vec![PlaintextOverrider {
            path: path.into(),
            operator,
            value,
        }],
        ..Default::default()
    }
}

fn image(
    predicate: Option<&str>,
    component: ImageComponent,
    operator: OverriderOperator,
    value: Option<&str>,
) -> Overriders {
    Overriders {
        image_overrider: vec![ImageOverrider {
            predicate: predicate.map(|p| ImagePredicate { path: p.into() }),
            component,
            operator,
            value: value.map(str::to_string),
        }],
        ..Default::default()
    }
}

fn matched<'a>(
    scope: OverrideScope,
    name: &'a str,
    priority: u8,
    spec: &'a OverrideSpec,
) -> MatchedPolicy<'a> {
    MatchedPolicy {
        scope,
        name,
        implicit_priority: priority,
        spec,
    }
}

/// Applies one namespaced policy `demo/p` to every cluster.
fn apply_one(doc: &mut Value, overriders: Overriders) -> Result<AppliedOverrides, OverrideError> {
    let spec = spec(overriders);
    apply_overrides(
        doc,
        &[matched(OverrideScope::Namespaced, "p", 1, &spec)],
        |_| true,
    )
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "demo", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "template": {"spec": {
                "initContainers": [{"name": "init", "image": "busybox:1.36"}],
                "containers": [
                    {"name": "app", "image": "registry.example.com:5000/team/app:v1",
                     "command": ["/app"], "args": ["--port=80", "--v=1"]},
                    {"name": "sidecar", "image": "envoy"}
                ]
            }}
        }
    })
}

#[test]
fn plaintext_operations() {
    // (overriders, pointer to read afterwards, its value or the error)
    let cases: Vec<(Overriders, &str, Result<Value, &str>)> = vec![
        (
            plaintext("/spec/replicas", Replace, Some(json!(5))),
            "/spec/replicas",
            Ok(json!(5)),
        ),
        (
            plaintext("/spec/paused", Add, Some(json!(true))),
            "/spec/paused",
            Ok(json!(true)),
        ),
        (
            plaintext(
                "/spec/template/spec/containers/-",
                Add,
                Some(json!({"name": "new"})),
            ),
            "/spec/template/spec/containers/2/name",
            Ok(json!("new")),
        ),
        (
            plaintext("/metadata/labels/app", Remove, None),
            "/metadata/labels",
            Ok(json!({})),
        ),
        (
            plaintext("/spec/foo/bar", Add, Some(json!(1))),
            "",
            Err(r#"OverridePolicy demo/p: plaintext path "/spec/foo/bar": parent does not exist"#),
        ),
        (
            plaintext("/spec/missing", Replace, Some(json!(1))),
            "",
            Err(r#"OverridePolicy demo/p: plaintext path "/spec/missing": path does not exist"#),
        ),
        (
            plaintext("/spec/missing", Remove, None),
            "",
            Err(r#"OverridePolicy demo/p: plaintext path "/spec/missing": path does not exist"#),
        ),
        (
            plaintext("/spec/template/spec/containers/7", Remove, None),
            "",
            Err(
                r#"OverridePolicy demo/p: plaintext path "/spec/template/spec/containers/7": "7" is not a valid index into an array of length 2"#,
            ),
        ),
        (
            plaintext("spec", Remove, None),
            "",
            Err(
                r#"OverridePolicy demo/p: plaintext path "spec": not a valid JSON pointer: must start with "/""#,
            ),
        ),
    ];
    for (overriders, read, want) in cases {
        let path = overriders.plaintext[0].path.clone();
        let mut doc = deployment();
        let result = apply_one(&mut doc, overriders);
        match want {
            Ok(value) => {
                assert!(result.is_ok(), "{path}: {result:?}");
                assert_eq!(doc.pointer(read), Some(&value), "{path}");
            }
            Err(message) => {
                assert_eq!(result.unwrap_err().to_string(), message);
                assert_eq!(doc, deployment(), "{path}");
            }
        }
    }
}

#[test]
fn image_without_predicate_changes_every_container_of_known_workloads() {
    let mut doc = deployment();
    apply_one(
        &mut doc,
        image(None, ImageComponent::Registry, Replace, Some("mirror.eu")),
    )
    .unwrap();
    assert_eq!(
        doc.pointer("/spec/template/spec/containers/0/image"),
        Some(&json!("mirror.eu/team/app:v1"))
    );
    assert_eq!(
        doc.pointer("/spec/template/spec/containers/1/image"),
        Some(&json!("mirror.eu/envoy"))
    );
    // Init containers too (Karmada reaches them only with `predicate`).
    assert_eq!(
        doc.pointer("/spec/template/spec/initContainers/0/image"),
        Some(&json!("mirror.eu/busybox:1.36"))
    );

    let pod_spec = json!({"containers": [{"name": "c", "image": "nginx:1.25"}]});
    let template = json!({"template": {"spec": pod_spec}});
    let kinds = [
        ("v1", "Pod", json!(pod_spec), "/spec/containers/0/image"),
        (
            "apps/v1",
            "Deployment",
            template.clone(),
            "/spec/template/spec/containers/0/image",
        ),
        (
            "apps/v1",
            "ReplicaSet",
            template.clone(),
            "/spec/template/spec/containers/0/image",
        ),
        (
            "apps/v1",
            "StatefulSet",
            template.clone(),
            "/spec/template/spec/containers/0/image",
        ),
        (
            "apps/v1",
            "DaemonSet",
            template.clone(),
            "/spec/template/spec/containers/0/image",
        ),
        (
            "batch/v1",
            "Job",
            template.clone(),
            "/spec/template/spec/containers/0/image",
        ),
        (
            "batch/v1",
            "CronJob",
            json!({"jobTemplate": {"spec": template}}),
            "/spec/jobTemplate/spec/template/spec/containers/0/image",
        ),
        (
            "example.io/v1",
            "MyWorkload",
            template.clone(),
            "/spec/template/spec/containers/0/image",
        ),
    ];
    for (api_version, kind, spec, at) in kinds {
        let mut doc = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"}, "spec": spec});
        apply_one(
            &mut doc,
            image(None, ImageComponent::Tag, Replace, Some("1.27")),
        )
        .unwrap();
        let want = if kind == "MyWorkload" {
            "nginx:1.25"
        } else {
            "nginx:1.27"
        };
        assert_eq!(doc.pointer(at), Some(&json!(want)), "{kind}");
    }
}

#[test]
fn image_with_predicate_changes_only_that_image() {
    let mut doc = deployment();
    apply_one(
        &mut doc,
        image(
            Some("/spec/template/spec/initContainers/0/image"),
            ImageComponent::Registry,
            Add,
            Some("mirror.eu"),
        ),
    )
    .unwrap();
    let mut want = deployment();
    want["spec"]["template"]["spec"]["initContainers"][0]["image"] =
        json!("mirror.eu/busybox:1.36");
    assert_eq!(doc, want);

    // Any kind: the predicate names the field.
    let mut cronjob = json!({"kind": "CronJob", "metadata": {"name": "c"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "docker.io/library/nginx:1"}]}}}}}});
    apply_one(
        &mut cronjob,
        image(
            Some("/spec/jobTemplate/spec/template/spec/containers/0/image"),
            ImageComponent::Repository,
            Replace,
            Some("library/httpd"),
        ),
    )
    .unwrap();
    assert_eq!(
        cronjob.pointer("/spec/jobTemplate/spec/template/spec/containers/0/image"),
        Some(&json!("docker.io/library/httpd:1"))
    );

    for (path, message) in [
        (
            "/spec/template/spec/containers/9/image",
            r#"OverridePolicy demo/p: imageOverrider Tag replace, image at "/spec/template/spec/containers/9/image": path does not exist"#,
        ),
        (
            "/spec/replicas",
            r#"OverridePolicy demo/p: imageOverrider Tag replace, image at "/spec/replicas": the image is not a string"#,
        ),
    ] {
        let mut doc = deployment();
        let err = apply_one(
            &mut doc,
            image(Some(path), ImageComponent::Tag, Replace, Some("2")),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), message);
        assert_eq!(doc, deployment());
    }
}

#[test]
fn an_unparsable_container_image_fails_the_policy() {
    let mut doc = deployment();
    doc["spec"]["template"]["spec"]["containers"][1]["image"] = json!("Envoy");
    let before = doc.clone();
    let err = apply_one(
        &mut doc,
        image(None, ImageComponent::Tag, Replace, Some("2")),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"OverridePolicy demo/p: imageOverrider Tag replace, image at "/spec/template/spec/containers/1/image": invalid image reference "Envoy": repository name must be lowercase"#
    );
    // The first container's image was changed on the copy only.
    assert_eq!(doc, before);
}

fn command_args(
    command: bool,
    container: &str,
    operator: OverriderOperator,
    value: &[&str],
) -> Overriders {
    let o = vec![CommandArgsOverrider {
        container_name: container.into(),
        operator,
        value: value.iter().map(|v| v.to_string()).collect(),
    }];
    if command {
        Overriders {
            command_overrider: o,
            ..Default::default()
        }
    } else {
        Overriders {
            args_overrider: o,
            ..Default::default()
        }
    }
}

#[test]
fn command_and_args_operators() {
    let app = "/spec/template/spec/containers/0";
    let sidecar = "/spec/template/spec/containers/1";
    let cases: Vec<(Overriders, &str, Value)> = vec![
        (
            command_args(true, "app", Add, &["--x"]),
            "/app/command",
            json!(["/app", "--x"]),
        ),
        (
            command_args(true, "app", Remove, &["/app"]),
            "/app/command",
            json!([]),
        ),
        (
            command_args(false, "app", Add, &["--a", "--b"]),
            "/app/args",
            json!(["--port=80", "--v=1", "--a", "--b"]),
        ),
        (
            command_args(false, "app", Remove, &["--v=1", "--absent"]),
            "/app/args",
            json!(["--port=80"]),
        ),
        (
            command_args(true, "sidecar", Add, &["envoy", "-c"]),
            "/sidecar/command",
            json!(["envoy", "-c"]),
        ),
        (
            command_args(false, "sidecar", Remove, &["x"]),
            "/sidecar/args",
            Value::Null,
        ),
        (
            command_args(true, "app", Replace, &["x"]),
            "/app/command",
            json!(["/app"]),
        ),
    ];
    for (overriders, at, want) in cases {
        let mut doc = deployment();
        apply_one(&mut doc, overriders).unwrap();
        let at = at
            .replace("/app/", &format!("{app}/"))
            .replace("/sidecar/", &format!("{sidecar}/"));
        assert_eq!(
            doc.pointer(&at).cloned().unwrap_or(Value::Null),
            want,
            "{at}"
        );
    }

    // An unknown container changes nothing; an init container is found by its name.
    let mut doc = deployment();
    apply_one(&mut doc, command_args(true, "nope", Add, &["x"])).unwrap();
    assert_eq!(doc, deployment());
    apply_one(&mut doc, command_args(true, "init", Add, &["x"])).unwrap();
    let mut want = deployment();
    want["spec"]["template"]["spec"]["initContainers"][0]["command"] = json!(["x"]);
    assert_eq!(doc, want);

    // A Pod's containers are at /spec/containers.
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "x", "args": ["a"]}]}});
    apply_one(&mut pod, command_args(false, "c", Add, &["b"])).unwrap();
    assert_eq!(
        pod.pointer("/spec/containers/0/args"),
        Some(&json!(["a", "b"]))
    );

    let mut bad = deployment();
    bad["spec"]["template"]["spec"]["containers"][0]["command"] = json!("/app");
    let err = apply_one(&mut bad, command_args(true, "app", Add, &["x"])).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"OverridePolicy demo/p: commandOverrider container "app": command is not a list of strings"#
    );
}

#[test]
fn labels_annotations_and_fields_through_the_engine() {
    let mut doc = json!({"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "demo"},
        "data": {"config.yaml": "a: 1\n"}});
    apply_one(
        &mut doc,
        Overriders {
            labels_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: [("region".to_string(), "eu".to_string())].into(),
            }],
            annotations_overrider: vec![LabelAnnotationOverrider {
                operator: Add,
                value: [("example.com/note".to_string(), "x".to_string())].into(),
            }],
            field_overrider: vec![FieldOverrider {
                field_path: "/data/config.yaml".into(),
                json: vec![],
                yaml: vec![FieldPatchOperation {
                    sub_path: "/b".into(),
                    operator: Add,
                    value: Some(json!("two")),
                }],
            }],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(
        doc,
        json!({"kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "demo", "labels": {"region": "eu"},
                "annotations": {"example.com/note": "x"}},
            "data": {"config.yaml": "a: 1\nb: two\n"}})
    );

    let mut doc = json!({"kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"n": 1}});
    let err = apply_one(
        &mut doc,
        Overriders {
            field_overrider: vec![FieldOverrider {
                field_path: "/data/n".into(),
                json: vec![FieldPatchOperation {
                    sub_path: "/a".into(),
                    operator: Remove,
                    value: None,
                }],
                yaml: vec![],
            }],
            ..Default::default()
        },
    )
    .unwrap_err();
    // A cluster-scoped template has no namespace to qualify the policy with.
    assert_eq!(
        err.to_string(),
        r#"OverridePolicy p: fieldOverrider fieldPath "/data/n": the field is not a string"#
    );
}

#[test]
fn within_a_rule_image_comes_before_plaintext_and_labels_before_plaintext() {
    let mut overriders = image(None, ImageComponent::Tag, Replace, Some("from-image"));
    overriders.plaintext = vec![
        PlaintextOverrider {
            path: "/spec/template/spec/containers/1/image".into(),
            operator: Replace,
            value: Some(json!("envoy:from-plaintext")),
        },
        PlaintextOverrider {
            path: "/metadata/labels/app".into(),
            operator: Replace,
            value: Some(json!("from-plaintext")),
        },
    ];
    overriders.labels_overrider = vec![LabelAnnotationOverrider {
        operator: Replace,
        value: [("app".to_string(), "from-labels".to_string())].into(),
    }];
    // Plaintext's own list is applied in order too: the second sees the first's result.
    overriders.plaintext.push(PlaintextOverrider {
        path: "/metadata/labels/copy".into(),
        operator: Add,
        value: Some(json!("c")),
    });
    let mut doc = deployment();
    apply_one(&mut doc, overriders).unwrap();
    assert_eq!(
        doc.pointer("/spec/template/spec/containers/0/image"),
        Some(&json!("registry.example.com:5000/team/app:from-image"))
    );
    assert_eq!(
        doc.pointer("/spec/template/spec/containers/1/image"),
        Some(&json!("envoy:from-plaintext"))
    );
    assert_eq!(
        doc.pointer("/metadata/labels"),
        Some(&json!({"app": "from-plaintext", "copy": "c"}))
    );
}

fn set_replicas(n: i64) -> OverrideSpec {
    spec(plaintext("/spec/replicas", Replace, Some(json!(n))))
}

#[test]
fn policies_are_sorted_so_the_most_specific_is_applied_last() {
    let (a, b, c, d, e) = (
        set_replicas(1),
        set_replicas(2),
        set_replicas(3),
        set_replicas(4),
        set_replicas(5),
    );
    let mut policies = vec![
        matched(OverrideScope::Namespaced, "b-name", 3, &e),
        matched(OverrideScope::Namespaced, "z-all", 1, &d),
        matched(OverrideScope::Cluster, "cluster-name", 3, &c),
        matched(OverrideScope::Namespaced, "a-name", 3, &b),
        matched(OverrideScope::Cluster, "cluster-all", 1, &a),
    ];
    sort_for_application(&mut policies);
    let order: Vec<(OverrideScope, &str)> = policies.iter().map(|p| (p.scope, p.name)).collect();
    assert_eq!(
        order,
        [
            (OverrideScope::Cluster, "cluster-all"),
            (OverrideScope::Cluster, "cluster-name"),
            (OverrideScope::Namespaced, "z-all"),
            (OverrideScope::Namespaced, "a-name"),
            (OverrideScope::Namespaced, "b-name"),
        ]
    );
    let mut doc = deployment();
    let applied = apply_overrides(&mut doc, &policies, |_| true).unwrap();
    // b-name: highest priority, and after a-name by name.
    assert_eq!(doc.pointer("/spec/replicas"), Some(&json!(5)));
    let names = |items: &[AppliedPolicy]| {
        items
            .iter()
            .map(|p| p.policy_name.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(names(&applied.cluster), ["cluster-all", "cluster-name"]);
    assert_eq!(names(&applied.namespaced), ["z-all", "a-name", "b-name"]);
}

#[test]
fn an_override_policy_wins_over_a_cluster_override_policy_on_the_same_field() {
    let (namespaced, cluster) = (set_replicas(7), set_replicas(9));
    // Even with a lower implicit priority than the cluster-wide one.
    let mut policies = vec![
        matched(OverrideScope::Namespaced, "a", 1, &namespaced),
        matched(OverrideScope::Cluster, "z", 3, &cluster),
    ];
    sort_for_application(&mut policies);
    let mut doc = deployment();
    apply_overrides(&mut doc, &policies, |_| true).unwrap();
    assert_eq!(doc.pointer("/spec/replicas"), Some(&json!(7)));
}

#[test]
fn sorting_is_stable_for_equal_keys() {
    let (x, y) = (set_replicas(1), set_replicas(2));
    let mut policies = vec![
        matched(OverrideScope::Namespaced, "same", 2, &y),
        matched(OverrideScope::Namespaced, "same", 2, &x),
    ];
    sort_for_application(&mut policies);
    assert!(std::ptr::eq(policies[0].spec, &y));
}

#[test]
fn rules_are_filtered_by_target_cluster() {
    let eu = ClusterAffinity {
        cluster_names: vec!["eu-1".into()],
        ..Default::default()
    };
    let us = ClusterAffinity {
        cluster_names: vec!["us-1".into()],
        ..Default::default()
    };
    let spec = OverrideSpec {
        override_rules: vec![
            RuleWithCluster {
                target_cluster: Some(eu),
                overriders: plaintext("/spec/replicas", Replace, Some(json!(10))),
            },
            RuleWithCluster {
                target_cluster: None,
                overriders: plaintext("/metadata/labels/all", Add, Some(json!("yes"))),
            },
            RuleWithCluster {
                target_cluster: Some(us),
                overriders: plaintext("/spec/replicas", Replace, Some(json!(20))),
            },
        ],
        ..Default::default()
    };
    let policies = [matched(OverrideScope::Cluster, "regional", 1, &spec)];
    for (cluster, replicas, rules) in [("eu-1", 10, 2), ("us-1", 20, 2), ("ap-1", 2, 1)] {
        let mut doc = deployment();
        let applied = apply_overrides(&mut doc, &policies, |a| {
            a.cluster_names.iter().any(|c| c == cluster)
        })
        .unwrap();
        assert_eq!(
            doc.pointer("/spec/replicas"),
            Some(&json!(replicas)),
            "{cluster}"
        );
        assert_eq!(
            doc.pointer("/metadata/labels/all"),
            Some(&json!("yes")),
            "{cluster}"
        );
        assert_eq!(applied.cluster.len(), rules, "{cluster}");
        assert!(applied.namespaced.is_empty());
    }

    // The deprecated pair is one rule for its targetCluster.
    let deprecated = OverrideSpec {
        target_cluster: Some(ClusterAffinity {
            cluster_names: vec!["eu-1".into()],
            ..Default::default()
        }),
        overriders: Some(plaintext("/spec/replicas", Replace, Some(json!(3)))),
        ..Default::default()
    };
    let policies = [matched(OverrideScope::Namespaced, "old", 1, &deprecated)];
    let mut doc = deployment();
    let applied = apply_overrides(&mut doc, &policies, |_| false).unwrap();
    assert!(applied.is_empty());
    assert_eq!(doc, deployment());
    apply_overrides(&mut doc, &policies, |_| true).unwrap();
    assert_eq!(doc.pointer("/spec/replicas"), Some(&json!(3)));
}

#[test]
fn a_failing_policy_leaves_the_manifest_untouched() {
    let good = set_replicas(8);
    let labels = spec(Overriders {
        labels_overrider: vec![LabelAnnotationOverrider {
            operator: Add,
            value: [("x".to_string(), "y".to_string())].into(),
        }],
        ..Default::default()
    });
    let bad = spec(plaintext("/spec/nothing/here", Add, Some(json!(1))));
    let policies = [
        matched(OverrideScope::Cluster, "good", 1, &good),
        matched(OverrideScope::Namespaced, "labels", 1, &labels),
        matched(OverrideScope::Namespaced, "bad", 3, &bad),
    ];
    let mut doc = deployment();
    let err = apply_overrides(&mut doc, &policies, |_| true).unwrap_err();
    assert_eq!(doc, deployment());
    assert_eq!(
        err,
        OverrideError {
            scope: OverrideScope::Namespaced,
            policy: "demo/bad".into(),
            overrider: r#"plaintext path "/spec/nothing/here""#.into(),
            failure: OverrideFailure::ParentMissing,
        }
    );
    let cluster_err = apply_overrides(
        &mut doc,
        &[matched(OverrideScope::Cluster, "cbad", 1, &bad)],
        |_| true,
    )
    .unwrap_err();
    assert_eq!(
        cluster_err.to_string(),
        r#"ClusterOverridePolicy cbad: plaintext path "/spec/nothing/here": parent does not exist"#
    );
}

#[test]
fn nothing_applied_means_no_annotations() {
    let applied = AppliedOverrides::default();
    assert!(applied.is_empty());
    assert!(applied.annotations().is_empty());
    let mut doc = deployment();
    let applied = apply_overrides(&mut doc, &[], |_| true).unwrap();
    assert!(applied.is_empty());
    assert_eq!(doc, deployment());
}

#[test]
fn annotations_are_karmadas_json_arrays_sorted_by_policy_name() {
    let two_rules = OverrideSpec {
        override_rules: vec![
            RuleWithCluster {
                target_cluster: None,
                overriders: plaintext("/spec/replicas", Replace, Some(json!(3))),
            },
            RuleWithCluster {
                target_cluster: None,
                overriders: image(None, ImageComponent::Registry, Remove, None),
            },
        ],
        ..Default::default()
    };
    let labels = spec(Overriders {
        labels_overrider: vec![LabelAnnotationOverrider {
            operator: Add,
            value: [("a".to_string(), "b".to_string())].into(),
        }],
        ..Default::default()
    });
    let cluster_only = set_replicas(1);
    let policies = [
        matched(OverrideScope::Cluster, "global", 1, &cluster_only),
        matched(OverrideScope::Namespaced, "zz", 1, &two_rules),
        matched(OverrideScope::Namespaced, "aa", 2, &labels),
    ];
    let mut doc = deployment();
    let applied = apply_overrides(&mut doc, &policies, |_| true).unwrap();
    let annotations = applied.annotations();
    let keys: Vec<&str> = annotations.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
            APPLIED_OVERRIDES_ANNOTATION
        ]
    );
    let parsed = |i: usize| serde_json::from_str::<Value>(&annotations[i].1).unwrap();
    assert_eq!(
        parsed(0),
        json!([{"policyName": "global", "overriders": {"plaintext": [
            {"path": "/spec/replicas", "operator": "replace", "value": 1}]}}])
    );
    assert_eq!(
        parsed(1),
        json!([
            {"policyName": "aa", "overriders": {"labelsOverrider": [{"operator": "add", "value": {"a": "b"}}]}},
            {"policyName": "zz", "overriders": {"plaintext": [
                {"path": "/spec/replicas", "operator": "replace", "value": 3}]}},
            {"policyName": "zz", "overriders": {"imageOverrider": [
                {"component": "Registry", "operator": "remove"}]}}
        ])
    );
    // Compact JSON, keys in Karmada's field order.
    assert!(
        annotations[1]
            .1
            .starts_with(r#"[{"policyName":"aa","overriders":{"labelsOverrider":"#)
    );

    let only_namespaced = AppliedOverrides {
        cluster: vec![],
        namespaced: applied.namespaced.clone(),
    };
    let keys: Vec<&str> = only_namespaced
        .annotations()
        .iter()
        .map(|(k, _)| *k)
        .collect();
    assert_eq!(keys, [APPLIED_OVERRIDES_ANNOTATION]);
}

#[test]
fn an_annotation_in_karmadas_shape_reads_back() {
    let text = r#"[{"policyName":"eu","overriders":{"imageOverrider":[{"predicate":{"path":"/spec/template/spec/containers/0/image"},"component":"Registry","operator":"replace","value":"mirror.eu"}],"commandOverrider":[{"containerName":"app","operator":"add","value":["--eu"]}]}}]"#;
    let items: Vec<AppliedPolicy> = serde_json::from_str(text).unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].policy_name, "eu");
    assert_eq!(items[0].overriders.command_overrider[0].value, ["--eu"]);
    let applied = AppliedOverrides {
        cluster: vec![],
        namespaced: items,
    };
    assert_eq!(
        applied.annotations(),
        [(APPLIED_OVERRIDES_ANNOTATION, text.to_string())]
    );
}
