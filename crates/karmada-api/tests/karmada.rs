//! Flotilla's generated CRDs against Karmada's: every CRD Karmada ships is generated
//! (tests/karmada-crds.txt: names, scope, version, subresources, printer columns), and every
//! field of every Karmada CRD schema is in ours with the attributes that decide what the API
//! server accepts (tests/karmada-fields.txt). When Karmada adds a field, adding its line makes
//! these tests fail until the Rust types have it.

// Test helpers may panic: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::PathBuf;

use flotilla_karmada_api::crds;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

fn data(file: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Non-empty lines that are not comments.
fn lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

fn set(list: &str) -> BTreeSet<String> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn strings(v: Option<&Vec<String>>) -> BTreeSet<String> {
    v.into_iter().flatten().cloned().collect()
}

// === the CRDs ===

#[test]
fn every_crd_karmada_ships_is_generated_with_its_names_and_columns() {
    let text = data("karmada-crds.txt");
    let generated = crds();
    let mut problems = Vec::new();
    let mut listed = BTreeSet::new();
    for line in lines(&text) {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("crd") => {
                let name = words.next().unwrap();
                listed.insert(name.to_owned());
                let Some(crd) = generated
                    .iter()
                    .find(|c| c.metadata.name.as_deref() == Some(name))
                else {
                    problems.push(format!("{name}: not generated"));
                    continue;
                };
                for attr in words {
                    let (key, want) = attr.split_once('=').unwrap();
                    if let Some(p) = crd_attribute(crd, key, want) {
                        problems.push(format!("{name}: {p}"));
                    }
                }
            }
            Some("column") => {} // checked below, per CRD
            other => panic!("karmada-crds.txt: bad line {other:?}: {line}"),
        }
    }
    for name in &listed {
        let want: Vec<(String, String, String, i32)> = lines(&text)
            .filter_map(|l| l.strip_prefix("column "))
            .filter_map(|l| l.strip_prefix(name.as_str()))
            .filter(|rest| rest.starts_with(' '))
            .map(|rest| {
                let w: Vec<&str> = rest.split_whitespace().collect();
                let priority = w.get(3).map_or(0, |p| p.parse().unwrap());
                (w[0].to_owned(), w[1].to_owned(), w[2].to_owned(), priority)
            })
            .collect();
        let Some(crd) = generated
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(name.as_str()))
        else {
            continue;
        };
        let got: Vec<(String, String, String, i32)> = crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| {
                (
                    c.name.clone(),
                    c.type_.clone(),
                    c.json_path.clone(),
                    c.priority.unwrap_or(0),
                )
            })
            .collect();
        if got != want {
            problems.push(format!("{name}: columns {got:?}, Karmada's {want:?}"));
        }
    }
    for crd in &generated {
        let name = crd.metadata.name.clone().unwrap_or_default();
        if !listed.contains(&name) {
            problems.push(format!("{name}: generated but not one of Karmada's CRDs"));
        }
    }
    assert!(
        problems.is_empty(),
        "generated CRDs differ from Karmada's:\n{}",
        problems.join("\n")
    );
}

/// `None` when the CRD has `key=want`, else what differs.
fn crd_attribute(crd: &CustomResourceDefinition, key: &str, want: &str) -> Option<String> {
    let names = &crd.spec.names;
    let version = crd.spec.versions.iter().find(|v| v.storage);
    let got = match key {
        "kind" => names.kind.clone(),
        "singular" => names.singular.clone().unwrap_or_default(),
        "scope" => crd.spec.scope.clone(),
        "version" => version.map(|v| v.name.clone()).unwrap_or_default(),
        "short" => join(strings(names.short_names.as_ref())),
        "categories" => join(strings(names.categories.as_ref())),
        "subresources" => {
            let sub = version.and_then(|v| v.subresources.as_ref());
            let mut found = BTreeSet::new();
            if sub.is_some_and(|s| s.status.is_some()) {
                found.insert("status".to_owned());
            }
            if sub.is_some_and(|s| s.scale.is_some()) {
                found.insert("scale".to_owned());
            }
            join(found)
        }
        other => panic!("karmada-crds.txt: unknown attribute {other}"),
    };
    let want = match key {
        "short" | "categories" | "subresources" => join(set(want)),
        _ => want.to_owned(),
    };
    (got != want).then(|| format!("{key} is {got:?}, Karmada's {want:?}"))
}

fn join(set: BTreeSet<String>) -> String {
    set.into_iter().collect::<Vec<_>>().join(",")
}

// === the fields ===

/// The storage version's schema of the CRD of `kind`, as JSON.
fn schema_of(generated: &[CustomResourceDefinition], kind: &str) -> Option<Value> {
    let crd = generated.iter().find(|c| c.spec.names.kind == kind)?;
    let version = crd.spec.versions.iter().find(|v| v.storage)?;
    let schema = version.schema.as_ref()?.open_api_v3_schema.as_ref()?;
    serde_json::to_value(schema).ok()
}

/// The schema node at `path` (`.`, `a.b`, `a[].b`, `m{}`), or the first segment not found.
fn node_at<'a>(root: &'a Value, path: &str) -> Result<&'a Value, String> {
    if path == "." {
        return Ok(root);
    }
    let mut node = root;
    let mut walked = String::new();
    for segment in path.split('.') {
        let name_end = segment.find(['[', '{']).unwrap_or(segment.len());
        let (name, mut suffixes) = segment.split_at(name_end);
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(name);
        node = node
            .get("properties")
            .and_then(|p| p.get(name))
            .ok_or_else(|| walked.clone())?;
        while !suffixes.is_empty() {
            let (key, rest) = if let Some(rest) = suffixes.strip_prefix("[]") {
                ("items", rest)
            } else if let Some(rest) = suffixes.strip_prefix("{}") {
                ("additionalProperties", rest)
            } else {
                panic!("karmada-fields.txt: bad path segment {segment}");
            };
            walked.push_str(&suffixes[..2]);
            node = node
                .get(key)
                .filter(|n| n.is_object())
                .ok_or_else(|| walked.clone())?;
            suffixes = rest;
        }
    }
    Ok(node)
}

fn string_set(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|e| match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// `None` when `node` has the attribute, else what differs.
fn field_attribute(node: &Value, attr: &str) -> Option<String> {
    let (key, want) = attr.split_once('=').unwrap_or((attr, ""));
    let flag = |name: &str| node.get(name) == Some(&Value::Bool(true));
    let ok = match key {
        "type" => node.get("type").and_then(Value::as_str) == Some(want),
        "enum" => string_set(node.get("enum")) == set(want),
        "required" => string_set(node.get("required")) == set(want),
        "list-map-keys" => string_set(node.get("x-kubernetes-list-map-keys")) == set(want),
        "list-type" => node.get("x-kubernetes-list-type").and_then(Value::as_str) == Some(want),
        "default" => {
            let want: Value = serde_json::from_str(want)
                .unwrap_or_else(|e| panic!("karmada-fields.txt: bad default {want}: {e}"));
            node.get("default") == Some(&want)
        }
        "int-or-string" => flag("x-kubernetes-int-or-string"),
        "preserve-unknown" => flag("x-kubernetes-preserve-unknown-fields"),
        "embedded-resource" => flag("x-kubernetes-embedded-resource"),
        "minItems" | "maxItems" | "minLength" | "maxLength" | "minimum" | "maximum" => {
            let want: f64 = want.parse().unwrap();
            node.get(key).and_then(Value::as_f64) == Some(want)
        }
        other => panic!("karmada-fields.txt: unknown attribute {other}"),
    };
    (!ok).then(|| {
        let got = match key {
            "list-map-keys" => node.get("x-kubernetes-list-map-keys"),
            "list-type" => node.get("x-kubernetes-list-type"),
            "int-or-string" => node.get("x-kubernetes-int-or-string"),
            "preserve-unknown" => node.get("x-kubernetes-preserve-unknown-fields"),
            "embedded-resource" => node.get("x-kubernetes-embedded-resource"),
            _ => node.get(key),
        };
        format!("{attr} wanted, found {}", got.unwrap_or(&Value::Null))
    })
}

/// Problems of the field list `text` against `generated`: one line per missing path or
/// differing attribute.
fn field_problems(text: &str, generated: &[CustomResourceDefinition]) -> Vec<String> {
    let mut problems = Vec::new();
    for line in lines(text) {
        // `~ ...`: a deliberate difference; the path must exist, attributes are not checked.
        let (deliberate, line) = match line.strip_prefix('~') {
            Some(rest) => (true, rest.trim_start()),
            None => (false, line),
        };
        let line = line.split(" #").next().unwrap_or(line);
        let mut words = line.split_whitespace();
        let (Some(kind), Some(path)) = (words.next(), words.next()) else {
            panic!("karmada-fields.txt: bad line {line}");
        };
        let Some(schema) = schema_of(generated, kind) else {
            problems.push(format!("{kind}: no CRD"));
            continue;
        };
        let node = match node_at(&schema, path) {
            Ok(node) => node,
            Err(walked) => {
                problems.push(format!("{kind} {path}: missing (no {walked})"));
                continue;
            }
        };
        if deliberate {
            continue;
        }
        for attr in words {
            if let Some(p) = field_attribute(node, attr) {
                problems.push(format!("{kind} {path}: {p}"));
            }
        }
    }
    problems
}

#[test]
fn every_karmada_field_is_in_the_generated_schemas() {
    let problems = field_problems(&data("karmada-fields.txt"), &crds());
    assert!(
        problems.is_empty(),
        "{} difference(s) from Karmada's CRD schemas:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_field_list_covers_every_kind_and_the_fields_issue_11_names() {
    let text = data("karmada-fields.txt");
    let kinds: BTreeSet<&str> = lines(&text)
        .map(|l| l.trim_start_matches('~').split_whitespace().next().unwrap())
        .collect();
    let generated: BTreeSet<String> = crds().into_iter().map(|c| c.spec.names.kind).collect();
    assert_eq!(
        kinds.iter().map(|k| k.to_string()).collect::<BTreeSet<_>>(),
        generated
    );
    let paths: BTreeSet<(&str, &str)> = lines(&text)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?, w.next()?))
        })
        .collect();
    for wanted in [
        ("PropagationPolicy", "spec.association"),
        ("PropagationPolicy", "spec.schedulePriority"),
        ("PropagationPolicy", "spec.placement.workloadAffinity"),
        (
            "PropagationPolicy",
            "spec.placement.clusterAffinities[].overflowAffinities",
        ),
        ("ResourceBinding", "spec.components"),
        ("ResourceBinding", "spec.clusters[].components"),
        ("ResourceBinding", "spec.schedulePriority"),
        ("ResourceBinding", "spec.workloadAffinityGroups"),
    ] {
        assert!(paths.contains(&wanted), "{wanted:?} not in the list");
    }
}

#[test]
fn the_field_check_reports_missing_paths_and_wrong_attributes() {
    let generated = crds();
    let text = "\
PropagationPolicy spec.placement.notAField type=object
PropagationPolicy spec.placement.clusterAffinities[].nope[].deeper
PropagationPolicy spec.conflictResolution type=string enum=Abort
PropagationPolicy spec.resourceSelectors minItems=2
ResourceBinding spec required=resource,replicas
PropagationPolicy spec.priority default=1
~ PropagationPolicy spec.priority default=1  # deliberate: not checked
~ PropagationPolicy spec.gone  # deliberate, but the path must exist
NoSuchKind spec
PropagationPolicy spec.priority type=integer default=0
";
    let problems = field_problems(text, &generated);
    assert_eq!(
        problems,
        [
            "PropagationPolicy spec.placement.notAField: missing (no spec.placement.notAField)",
            "PropagationPolicy spec.placement.clusterAffinities[].nope[].deeper: missing (no spec.placement.clusterAffinities[].nope)",
            "PropagationPolicy spec.conflictResolution: enum=Abort wanted, found [\"Overwrite\",\"Abort\"]",
            "PropagationPolicy spec.resourceSelectors: minItems=2 wanted, found 1",
            "ResourceBinding spec: required=resource,replicas wanted, found [\"resource\"]",
            "PropagationPolicy spec.priority: default=1 wanted, found 0",
            "PropagationPolicy spec.gone: missing (no spec.gone)",
            "NoSuchKind: no CRD",
        ]
    );
}
