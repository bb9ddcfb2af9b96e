//! One merged object: the host's template (when there is one) with the status of its copies
//! in the member clusters, the clusters that hold it, and a composite resourceVersion; and
//! reading the clusters back for Table columns.
//!
//! Status aggregation is the interpreter's, over the items propagation would build from the
//! same member objects, so the merged status is what propagation writes to the template.

use std::sync::Arc;

use flotilla_apimachinery::{ResourceDef, TableColumn, TablePrinter};
use flotilla_interpreter::{aggregate_status, applied_item, get_replicas, revise_replicas};
use flotilla_karmada_api::binding::AggregatedStatusItem;
use flotilla_names::karmada::CLUSTER_NAME_LABEL;
use serde_json::{Map, Value};

use crate::CLUSTERS_ANNOTATION;
use crate::version::CompositeVersion;

/// A member cluster's copy of an object.
#[derive(Clone, Copy, Debug)]
pub struct MemberObject<'a> {
    pub cluster: &'a str,
    pub object: &'a Value,
    /// The interpreter's reading of `object` (its reflected status and health), when the
    /// caller kept it (a cache computes it once per object version); else it is computed.
    pub applied: Option<&'a AggregatedStatusItem>,
}

impl<'a> MemberObject<'a> {
    pub fn new(cluster: &'a str, object: &'a Value) -> Self {
        Self {
            cluster,
            object,
            applied: None,
        }
    }
}

/// One merged item for (namespace, name): the template when present, else the object of the
/// first member cluster (by name).
///
/// - template and members: the template with `.status` aggregated over the members (kept as
///   it is when the aggregation has nothing to say);
/// - no template, one member: that member's object, labelled with [`CLUSTER_NAME_LABEL`];
/// - no template, several members: the first one's object with the status aggregated over all
///   of them (the first standing in for the template);
/// - template, no member: the template.
///
/// Every item with members gets [`CLUSTERS_ANNOTATION`]; `metadata.resourceVersion` becomes a
/// [`CompositeVersion`] of the template's and the members' object revisions. Members may come
/// in any order (a cluster given twice counts once, the first copy). Neither template nor
/// member: `Value::Null`.
pub fn merge_item(template: Option<&Value>, members: &[MemberObject<'_>]) -> Value {
    let mut members: Vec<MemberObject<'_>> = members.to_vec();
    members.sort_by(|a, b| a.cluster.cmp(b.cluster));
    members.dedup_by(|a, b| a.cluster == b.cluster);

    let mut merged = match (template, members.first()) {
        (Some(t), _) => t.clone(),
        (None, Some(first)) => first.object.clone(),
        (None, None) => return Value::Null,
    };
    if template.is_none() && members.len() > 1 {
        sum_replicas(&mut merged, &members);
    }
    if template.is_some() || members.len() > 1 {
        if !members.is_empty() {
            // Kept readings are borrowed; the others are made here.
            let made: Vec<AggregatedStatusItem> = members
                .iter()
                .filter(|m| m.applied.is_none())
                .map(|m| applied_item(m.cluster, m.object))
                .collect();
            let mut made = made.iter();
            let items: Vec<&AggregatedStatusItem> = members
                .iter()
                .filter_map(|m| m.applied.or_else(|| made.next()))
                .collect();
            if let Some(status) = aggregate_status(&merged, &items) {
                if let Value::Object(obj) = &mut merged {
                    obj.insert("status".into(), status);
                }
            }
        }
    }

    let version = CompositeVersion {
        template: None,
        object: template.and_then(resource_version).map(str::to_string),
        members: members
            .iter()
            .filter_map(|m| {
                Some((
                    m.cluster.to_string(),
                    resource_version(m.object)?.to_string(),
                ))
            })
            .collect(),
    };
    let Some(meta) = metadata_mut(&mut merged) else {
        // Not an object: nothing to annotate; the caller gets it as it came.
        return merged;
    };
    if template.is_none() && members.len() == 1 {
        if let Some(only) = members.first() {
            insert_into(meta, "labels", CLUSTER_NAME_LABEL, only.cluster.to_string());
        }
    }
    set_clusters_annotation(meta, &members);
    meta.insert("resourceVersion".into(), Value::String(version.encode()));
    merged
}

/// Without a template, an object several members hold asks for what they ask together: its
/// replicas (the interpreter's rule per kind) are the members' sum, so its desired count
/// matches its summed status (a ReplicaSet in three members reads DESIRED 6, CURRENT 6).
fn sum_replicas(merged: &mut Value, members: &[MemberObject<'_>]) {
    let total: i64 = members
        .iter()
        .filter_map(|m| get_replicas(m.object).ok().flatten())
        .map(|r| i64::from(r.replicas))
        .sum();
    let Ok(total) = i32::try_from(total) else {
        return;
    };
    if get_replicas(merged).ok().flatten().is_some() {
        // A kind without a replica rule is left as the first member's copy.
        let _ = revise_replicas(merged, total, total);
    }
}

/// `(ready, replicas)` of a member object whose status has `replicas`.
fn replicas_of(object: &Value) -> Option<(i64, i64)> {
    let status = object.get("status")?;
    let replicas = status.get("replicas")?.as_i64()?;
    let ready = status
        .get("readyReplicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    Some((ready, replicas))
}

/// Sets (or, without members, removes) the clusters annotation: a stored object could carry a
/// stale copy, which must not pass for this read's answer.
fn set_clusters_annotation(meta: &mut Map<String, Value>, members: &[MemberObject<'_>]) {
    if members.is_empty() {
        if let Some(Value::Object(annotations)) = meta.get_mut("annotations") {
            annotations.remove(CLUSTERS_ANNOTATION);
        }
        return;
    }
    let value = members
        .iter()
        .map(|m| match replicas_of(m.object) {
            Some((ready, replicas)) => format!("{}({ready}/{replicas})", m.cluster),
            None => m.cluster.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    insert_into(meta, "annotations", CLUSTERS_ANNOTATION, value);
}

fn resource_version(object: &Value) -> Option<&str> {
    object
        .get("metadata")
        .and_then(|m| m.get("resourceVersion"))?
        .as_str()
}

/// The object's metadata map, created when absent; None when the value is not an object (or
/// its metadata is not one).
fn metadata_mut(object: &mut Value) -> Option<&mut Map<String, Value>> {
    let obj = object.as_object_mut()?;
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    meta.as_object_mut()
}

/// Inserts `name: value` into the map `meta[key]`, replacing a null or malformed value.
fn insert_into(meta: &mut Map<String, Value>, key: &str, name: &str, value: String) {
    let slot = meta.entry(key).or_insert_with(|| Value::Object(Map::new()));
    if !slot.is_object() {
        *slot = Value::Object(Map::new());
    }
    if let Value::Object(map) = slot {
        map.insert(name.to_string(), Value::String(value));
    }
}

/// The clusters of a merged item with `(ready, replicas)` where the annotation has them, in
/// the annotation's order; empty without the annotation.
pub fn cluster_replicas(item: &Value) -> Vec<(String, Option<(i64, i64)>)> {
    let Some(text) = item
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(CLUSTERS_ANNOTATION))
        .and_then(Value::as_str)
    else {
        return Vec::new();
    };
    text.split(',')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let parsed = part
                .strip_suffix(')')
                .and_then(|p| p.split_once('('))
                .and_then(|(name, counts)| {
                    let (ready, replicas) = counts.split_once('/')?;
                    Some((name, (ready.parse().ok()?, replicas.parse().ok()?)))
                });
            match parsed {
                Some((name, counts)) => (name.to_string(), Some(counts)),
                // A name without counts (or counts that do not parse): the whole part.
                None => (part.to_string(), None),
            }
        })
        .collect()
}

/// `member1(3),member2(2)`: each cluster with its replicas, just the name for kinds without
/// replicas.
pub fn clusters_cell(item: &Value) -> String {
    cell(item, |(_, replicas)| replicas.to_string())
}

/// `member1(3/3),member2(2/2)`: each cluster with ready/replicas.
pub fn clusters_wide_cell(item: &Value) -> String {
    cell(item, |(ready, replicas)| format!("{ready}/{replicas}"))
}

fn cell(item: &Value, counts: impl Fn((i64, i64)) -> String) -> String {
    cluster_replicas(item)
        .into_iter()
        .map(|(name, c)| match c {
            Some(c) => format!("{name}({})", counts(c)),
            None => name,
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// `def` as merged reads serve it: its printer with two more columns: CLUSTERS (`member1(3),member2(2)`) and, in
/// `-o wide`, CLUSTER-READY (`member1(3/3),member2(2/2)`).
pub fn merged_resource(def: &ResourceDef) -> ResourceDef {
    let mut merged = def.clone();
    let base = def
        .printer
        .clone()
        .unwrap_or_else(flotilla_printers::default_printer);
    let mut columns = base.columns.clone();
    columns.push(TableColumn {
        name: "Clusters".into(),
        column_type: "string".into(),
        format: String::new(),
        description: "The member clusters holding the object, with their replicas".into(),
        priority: 0,
    });
    columns.push(TableColumn {
        name: "Cluster-Ready".into(),
        column_type: "string".into(),
        format: String::new(),
        description: "Ready and desired replicas per member cluster".into(),
        priority: 1,
    });
    let cells = base.cells.clone();
    merged.printer = Some(TablePrinter {
        reads: None,
        columns,
        cells: Arc::new(move |obj, now| {
            let mut row = cells(obj, now);
            row.push(Value::String(clusters_cell(obj)));
            row.push(Value::String(clusters_wide_cell(obj)));
            row
        }),
    });
    merged
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy(rv: &str, generation: i64, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "d", "resourceVersion": rv,
                         "generation": generation, "labels": {"app": "web"}},
            "spec": {"replicas": 3},
            "status": status})
    }

    fn member_status(replicas: i64, ready: Option<i64>) -> Value {
        let mut s = json!({"replicas": replicas, "updatedReplicas": replicas,
                           "availableReplicas": replicas, "observedGeneration": 1});
        if let Some(r) = ready {
            s["readyReplicas"] = json!(r);
        }
        s
    }

    fn annotation(v: &Value) -> Option<&str> {
        v.get("metadata")
            .and_then(|m| m.get("annotations"))?
            .get(CLUSTERS_ANNOTATION)?
            .as_str()
    }

    fn version(v: &Value) -> CompositeVersion {
        CompositeVersion::parse(v["metadata"]["resourceVersion"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn merge_rules_table() {
        let template = deploy("10", 1, json!({}));
        let m1 = deploy("100", 1, member_status(2, Some(2)));
        let m2 = deploy("200", 1, member_status(1, None));
        let cm = |rv: &str, data: &str| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "c", "namespace": "d", "resourceVersion": rv},
                   "data": {"k": data}})
        };
        let (c1, c2) = (cm("5", "one"), cm("6", "two"));
        let mo = |cluster, object| MemberObject::new(cluster, object);
        struct Case<'a> {
            name: &'a str,
            template: Option<&'a Value>,
            members: Vec<MemberObject<'a>>,
            // Expected: status, annotation, cluster label, composite version.
            status: Option<Value>,
            annotation: Option<&'a str>,
            label: Option<&'a str>,
            object: Option<&'a str>,
            member_rvs: Vec<(&'a str, &'a str)>,
        }
        let aggregated = aggregate_status(
            &template,
            &[applied_item("member1", &m1), applied_item("member2", &m2)],
        );
        assert!(aggregated.is_some());
        let table = vec![
            Case {
                name: "template and members, unsorted input",
                template: Some(&template),
                members: vec![mo("member2", &m2), mo("member1", &m1)],
                status: aggregated.clone(),
                annotation: Some("member1(2/2),member2(0/1)"),
                label: None,
                object: Some("10"),
                member_rvs: vec![("member1", "100"), ("member2", "200")],
            },
            Case {
                name: "template alone",
                template: Some(&template),
                members: vec![],
                status: Some(json!({})),
                annotation: None,
                label: None,
                object: Some("10"),
                member_rvs: vec![],
            },
            Case {
                name: "one member, no template",
                template: None,
                members: vec![mo("member2", &m2)],
                status: Some(member_status(1, None)),
                annotation: Some("member2(0/1)"),
                label: Some("member2"),
                object: None,
                member_rvs: vec![("member2", "200")],
            },
            Case {
                name: "several members, no template: the first aggregates all",
                template: None,
                members: vec![mo("member2", &m2), mo("member1", &m1)],
                status: aggregate_status(
                    &m1,
                    &[applied_item("member1", &m1), applied_item("member2", &m2)],
                )
                .or(Some(member_status(2, Some(2)))),
                annotation: Some("member1(2/2),member2(0/1)"),
                label: None,
                object: None,
                member_rvs: vec![("member1", "100"), ("member2", "200")],
            },
            Case {
                name: "kind without replicas or status",
                template: None,
                members: vec![mo("b", &c2), mo("a", &c1)],
                status: None,
                annotation: Some("a,b"),
                label: None,
                object: None,
                member_rvs: vec![("a", "5"), ("b", "6")],
            },
            Case {
                name: "a cluster given twice counts once",
                template: None,
                members: vec![mo("a", &c1), mo("a", &c2)],
                status: None,
                annotation: Some("a"),
                label: Some("a"),
                object: None,
                member_rvs: vec![("a", "5")],
            },
        ];
        for case in table {
            let before: Vec<Value> = case.members.iter().map(|m| m.object.clone()).collect();
            let got = merge_item(case.template, &case.members);
            let after: Vec<Value> = case.members.iter().map(|m| m.object.clone()).collect();
            assert_eq!(before, after, "{}: inputs untouched", case.name);
            assert_eq!(got.get("status").cloned(), case.status, "{}", case.name);
            assert_eq!(annotation(&got), case.annotation, "{}", case.name);
            assert_eq!(
                got.get("metadata")
                    .and_then(|m| m.get("labels"))
                    .and_then(|l| l.get(CLUSTER_NAME_LABEL))
                    .and_then(Value::as_str),
                case.label,
                "{}",
                case.name
            );
            let v = version(&got);
            assert_eq!(v.template, None, "{}", case.name);
            assert_eq!(v.object.as_deref(), case.object, "{}", case.name);
            let rvs: Vec<(&str, &str)> = v
                .members
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(rvs, case.member_rvs, "{}", case.name);
        }
        assert_eq!(
            template["metadata"]["resourceVersion"], "10",
            "template untouched"
        );
        assert_eq!(merge_item(None, &[]), Value::Null);
    }

    #[test]
    fn the_template_keeps_its_spec_and_labels() {
        let mut template = deploy("10", 1, json!({"replicas": 9}));
        template["spec"]["replicas"] = json!(5);
        let member = deploy("7", 1, member_status(5, Some(5)));
        let got = merge_item(Some(&template), &[MemberObject::new("m", &member)]);
        assert_eq!(got["spec"], template["spec"]);
        assert_eq!(got["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(got["status"]["replicas"], 5);
    }

    #[test]
    fn without_a_template_the_members_desired_replicas_add_up() {
        let mut a = deploy("1", 1, member_status(4, Some(4)));
        a["spec"]["replicas"] = json!(4);
        let mut b = deploy("2", 1, member_status(2, Some(2)));
        b["spec"]["replicas"] = json!(2);
        let mo = |cluster, object| MemberObject::new(cluster, object);
        let got = merge_item(None, &[mo("m2", &b), mo("m1", &a)]);
        assert_eq!(got["spec"]["replicas"], 6, "desired: 4 + 2");
        assert_eq!(got["status"]["replicas"], 6, "status summed too");
        // One member: its own copy, unchanged.
        let got = merge_item(None, &[mo("m1", &a)]);
        assert_eq!(got["spec"]["replicas"], 4);
        // With a template, the template's spec stands.
        let template = deploy("9", 1, json!({}));
        let got = merge_item(Some(&template), &[mo("m1", &a), mo("m2", &b)]);
        assert_eq!(got["spec"]["replicas"], 3);
    }

    #[test]
    fn a_stale_clusters_annotation_is_not_passed_on() {
        let mut template = deploy("10", 1, json!({}));
        template["metadata"]["annotations"] = json!({CLUSTERS_ANNOTATION: "ghost(1/1)", "x": "y"});
        let got = merge_item(Some(&template), &[]);
        assert_eq!(got["metadata"]["annotations"], json!({"x": "y"}));
    }

    #[test]
    fn odd_inputs_do_not_panic() {
        let odd = [
            json!("text"),
            json!({"metadata": 3}),
            json!({}),
            json!({"status": {"replicas": "x"}}),
        ];
        for o in &odd {
            let got = merge_item(None, &[MemberObject::new("m", o)]);
            assert!(got == *o || got.is_object(), "{o}");
            let _ = merge_item(Some(o), &[MemberObject::new("m", o)]);
        }
    }

    #[test]
    fn cells_read_the_annotation_back() {
        let with = |a: &str| json!({"metadata": {"annotations": {CLUSTERS_ANNOTATION: a}}});
        // (annotation, parsed, cell, wide cell)
        type Case<'a> = (Value, Vec<(&'a str, Option<(i64, i64)>)>, &'a str, &'a str);
        let table: Vec<Case<'_>> = vec![
            (json!({}), vec![], "", ""),
            (
                with("member1(3/3),member2(1/2)"),
                vec![("member1", Some((3, 3))), ("member2", Some((1, 2)))],
                "member1(3),member2(2)",
                "member1(3/3),member2(1/2)",
            ),
            (with("a,b"), vec![("a", None), ("b", None)], "a,b", "a,b"),
            (
                with("a(x/1),b(2/2)"),
                vec![("a(x/1)", None), ("b", Some((2, 2)))],
                "a(x/1),b(2)",
                "a(x/1),b(2/2)",
            ),
        ];
        for (item, parsed, cell, wide) in table {
            let got = cluster_replicas(&item);
            let got: Vec<(&str, Option<(i64, i64)>)> =
                got.iter().map(|(n, c)| (n.as_str(), *c)).collect();
            assert_eq!(got, parsed, "{item}");
            assert_eq!(clusters_cell(&item), cell, "{item}");
            assert_eq!(clusters_wide_cell(&item), wide, "{item}");
        }
        // Round trip through merge_item.
        let m = deploy("1", 1, member_status(4, Some(3)));
        let merged = merge_item(None, &[MemberObject::new("east", &m)]);
        assert_eq!(clusters_wide_cell(&merged), "east(3/4)");
    }
}
