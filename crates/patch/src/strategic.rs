//! Strategic merge patch (`application/strategic-merge-patch+json`): maps merge key by key,
//! `null` deletes, lists merge according to the schema (by merge key, as a set of scalars, or
//! replaced), and the directives `$patch`, `$retainKeys`, `$setElementOrder/<field>` and
//! `$deleteFromPrimitiveList/<field>` are interpreted and never appear in the result.

use serde_json::{Map, Value};

use crate::MergeError;
use crate::schema::{Node, PatchStrategy};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// Where in the patch we are, for error messages; built only when an error is reported.
#[derive(Clone, Copy)]
enum Loc<'a> {
    Root,
    Field(&'a Loc<'a>, &'a str),
    Item(&'a Loc<'a>, usize),
}

impl Loc<'_> {
    fn render(&self) -> String {
        match self {
            Loc::Root => String::new(),
            Loc::Field(parent, name) => format!("{}.{name}", parent.render()),
            Loc::Item(parent, i) => format!("{}[{i}]", parent.render()),
        }
    }
}

/// Applies a strategic merge patch to `original` under `schema`.
pub fn strategic_merge(
    original: &Value,
    patch: &Value,
    schema: &crate::Schema,
) -> Result<Value, MergeError> {
    let Some(patch) = patch.as_object() else {
        return Err(MergeError::PatchNotObject);
    };
    let original = original.as_object().cloned().unwrap_or_default();
    Ok(Value::Object(
        merge_map(original, patch, &schema.root, &Loc::Root)?.unwrap_or_default(),
    ))
}

fn directive<'p>(
    patch: &'p Map<String, Value>,
    loc: &Loc<'_>,
) -> Result<Option<&'p str>, MergeError> {
    match patch.get(PATCH) {
        None => Ok(None),
        Some(Value::String(s)) if matches!(s.as_str(), "replace" | "delete" | "merge") => {
            Ok(Some(s))
        }
        Some(other) => Err(MergeError::InvalidDirective {
            path: loc.render(),
            message: format!("unknown $patch value {other}"),
        }),
    }
}

fn string_list<'p>(v: &'p Value, name: &str, loc: &Loc<'_>) -> Result<&'p [Value], MergeError> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| MergeError::InvalidDirective {
            path: loc.render(),
            message: format!("{name} must be a list"),
        })
}

fn is_directive_key(k: &str) -> bool {
    k == PATCH
        || k == RETAIN_KEYS
        || k.starts_with(SET_ELEMENT_ORDER)
        || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// Merges `patch` into `original`. `None` means the map is deleted (`$patch: delete`).
fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    node: &Node,
    loc: &Loc<'_>,
) -> Result<Option<Map<String, Value>>, MergeError> {
    match directive(patch, loc)? {
        Some("delete") => return Ok(None),
        Some("replace") => original = Map::new(),
        _ => {}
    }

    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let keep = string_list(retain, RETAIN_KEYS, loc)?;
        if node.retain_keys() {
            original.retain(|k, _| keep.iter().any(|r| r.as_str() == Some(k.as_str())));
        }
    }

    for (k, v) in patch {
        if let Some(field) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            let remove = string_list(v, k, loc)?;
            if let Some(Value::Array(list)) = original.get_mut(field) {
                list.retain(|item| !remove.contains(item));
            }
        }
    }

    // `$setElementOrder` needs the original positions of the items it does not name.
    let mut original_orders: Vec<(&str, Option<&str>, Vec<Value>)> = Vec::new();
    for k in patch.keys() {
        if let Some(field) = k.strip_prefix(SET_ELEMENT_ORDER) {
            let key = match node.field(field).strategy() {
                PatchStrategy::MergeKey(key) => Some(key.as_str()),
                PatchStrategy::MergeValues => None,
                // Only merging lists have an order to restore; others are taken as sent.
                PatchStrategy::Replace => continue,
            };
            let idents = match original.get(field) {
                Some(Value::Array(list)) => list.iter().map(|i| identity(i, key)).collect(),
                _ => Vec::new(),
            };
            original_orders.push((field, key, idents));
        }
    }

    for (k, pv) in patch {
        if is_directive_key(k) {
            continue;
        }
        let child = node.field(k);
        let child_loc = Loc::Field(loc, k);
        match pv {
            Value::Null => {
                original.shift_remove(k);
            }
            Value::Object(pm) => {
                let base = match original.get_mut(k) {
                    Some(Value::Object(om)) => std::mem::take(om),
                    _ => Map::new(),
                };
                match merge_map(base, pm, child, &child_loc)? {
                    Some(m) => {
                        original.insert(k.clone(), Value::Object(m));
                    }
                    None => {
                        original.shift_remove(k);
                    }
                }
            }
            Value::Array(pl) => {
                let base = match original.get_mut(k) {
                    Some(Value::Array(ol)) => std::mem::take(ol),
                    _ => Vec::new(),
                };
                let merged = merge_list(base, pl, child, &child_loc)?;
                original.insert(k.clone(), Value::Array(merged));
            }
            scalar => {
                original.insert(k.clone(), scalar.clone());
            }
        }
    }

    for (field, key, idents) in original_orders {
        let order_key = format!("{SET_ELEMENT_ORDER}{field}");
        let order = match patch.get(&order_key) {
            Some(o) => string_list(o, &order_key, loc)?,
            None => continue,
        };
        if let Some(Value::Array(list)) = original.get_mut(field) {
            let merged = std::mem::take(list);
            *list = order_list(merged, order, key, &idents);
        }
    }
    Ok(Some(original))
}

/// A patch value placed where the original has nothing: directives and nulls are removed by
/// merging it into an empty value of its own shape.
fn fresh(pv: &Value, node: &Node, loc: &Loc<'_>) -> Result<Option<Value>, MergeError> {
    Ok(match pv {
        Value::Object(pm) => merge_map(Map::new(), pm, node, loc)?.map(Value::Object),
        Value::Array(pl) => Some(Value::Array(merge_list(Vec::new(), pl, node, loc)?)),
        other => Some(other.clone()),
    })
}

fn merge_list(
    original: Vec<Value>,
    patch: &[Value],
    node: &Node,
    loc: &Loc<'_>,
) -> Result<Vec<Value>, MergeError> {
    let item_node = node.item();
    // `{"$patch": "replace"}` as an item replaces the whole list with the other items.
    let mut replace = false;
    for (i, item) in patch.iter().enumerate() {
        if let Value::Object(m) = item
            && directive(m, &Loc::Item(loc, i))? == Some("replace")
            && m.len() == 1
        {
            replace = true;
        }
    }
    let strategy = node.strategy();
    if replace || *strategy == PatchStrategy::Replace {
        let mut out = Vec::with_capacity(patch.len());
        for (i, item) in patch.iter().enumerate() {
            if let Value::Object(m) = item
                && m.len() == 1
                && m.contains_key(PATCH)
            {
                continue;
            }
            if let Some(v) = fresh(item, item_node, &Loc::Item(loc, i))? {
                out.push(v);
            }
        }
        return Ok(out);
    }

    match strategy {
        PatchStrategy::MergeKey(key) => merge_keyed(original, patch, key, item_node, loc),
        _ => {
            let mut out = original;
            for (i, item) in patch.iter().enumerate() {
                if let Value::Object(m) = item
                    && m.contains_key(PATCH)
                {
                    // `$patch: merge` carries nothing; a delete needs a merge key.
                    continue;
                }
                if let Some(v) = fresh(item, item_node, &Loc::Item(loc, i))?
                    && !out.contains(&v)
                {
                    out.push(v);
                }
            }
            Ok(out)
        }
    }
}

fn merge_keyed(
    mut out: Vec<Value>,
    patch: &[Value],
    key: &str,
    item_node: &Node,
    loc: &Loc<'_>,
) -> Result<Vec<Value>, MergeError> {
    let key_of = |item: &Map<String, Value>, i: usize| -> Result<Value, MergeError> {
        match item.get(key) {
            Some(v) if !v.is_null() => Ok(v.clone()),
            _ => Err(MergeError::MissingMergeKey {
                path: Loc::Item(loc, i).render(),
                key: key.to_string(),
            }),
        }
    };
    let matches = |item: &Value, k: &Value| item.get(key) == Some(k);

    // Deletions first, so a patch may delete and re-add an item.
    for (i, item) in patch.iter().enumerate() {
        let item_loc = Loc::Item(loc, i);
        let Value::Object(m) = item else {
            return Err(MergeError::InvalidListItem {
                path: item_loc.render(),
                key: key.to_string(),
            });
        };
        if directive(m, &item_loc)? == Some("delete") {
            let k = key_of(m, i)?;
            out.retain(|o| !matches(o, &k));
        }
    }
    for (i, item) in patch.iter().enumerate() {
        let item_loc = Loc::Item(loc, i);
        let Value::Object(m) = item else { continue };
        if directive(m, &item_loc)? == Some("delete") {
            continue;
        }
        let k = key_of(m, i)?;
        match out.iter().position(|o| matches(o, &k)) {
            Some(pos) => {
                let base = match &mut out[pos] {
                    Value::Object(om) => std::mem::take(om),
                    _ => Map::new(),
                };
                match merge_map(base, m, item_node, &item_loc)? {
                    Some(merged) => out[pos] = Value::Object(merged),
                    None => {
                        out.remove(pos);
                    }
                }
            }
            None => {
                if let Some(m) = merge_map(Map::new(), m, item_node, &item_loc)? {
                    out.push(Value::Object(m));
                }
            }
        }
    }
    Ok(out)
}

fn identity(item: &Value, key: Option<&str>) -> Value {
    match key {
        Some(k) => item.get(k).cloned().unwrap_or(Value::Null),
        None => item.clone(),
    }
}

/// Orders a merged list after `$setElementOrder`; see [`interleave`].
fn order_list(
    merged: Vec<Value>,
    order: &[Value],
    key: Option<&str>,
    original: &[Value],
) -> Vec<Value> {
    let idents: Vec<Value> = merged.iter().map(|i| identity(i, key)).collect();
    let order: Vec<Value> = order.iter().map(|o| identity(o, key)).collect();
    interleave(merged, &idents, &order, original)
}

/// Orders a merged list (identities `idents`, one per item): the items `order` names come
/// first, in that order. Every other item (one only the original list has) keeps its place
/// relative to the original as far as the new order allows: scanning on from where the
/// previous one went, it goes before the first named item that came after it in the original
/// (named items new to the list never push it back). `original` holds the identities of the
/// original list's items.
fn interleave(
    merged: Vec<Value>,
    idents: &[Value],
    order: &[Value],
    original: &[Value],
) -> Vec<Value> {
    let original_pos = |i: usize| original.iter().position(|o| *o == idents[i]);

    let mut named = vec![false; merged.len()];
    let mut result: Vec<usize> = Vec::with_capacity(merged.len());
    for w in order.iter().filter(|w| !w.is_null()) {
        if let Some(i) = (0..merged.len()).find(|&i| !named[i] && idents[i] == *w) {
            named[i] = true;
            result.push(i);
        }
    }

    let mut cursor = 0;
    for r in (0..merged.len()).filter(|&i| !named[i]) {
        let Some(pr) = original_pos(r) else {
            // Neither named nor original: a patch item missing from the order list.
            result.push(r);
            continue;
        };
        while cursor < result.len() {
            let c = result[cursor];
            if named[c] && original_pos(c).is_some_and(|pc| pc > pr) {
                break;
            }
            cursor += 1;
        }
        result.insert(cursor, r);
        cursor += 1;
    }

    let mut slots: Vec<Option<Value>> = merged.into_iter().map(Some).collect();
    result.into_iter().filter_map(|i| slots[i].take()).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::{MergeError, Schema, strategic_merge};

    fn builtin(group: &str, kind: &str) -> &'static Schema {
        Schema::builtin(group, kind).unwrap()
    }

    fn assert_no_directives(v: &Value, case: &str) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    assert!(!k.starts_with('$'), "{case}: directive {k} left in output");
                    assert_no_directives(c, case);
                }
            }
            Value::Array(l) => l.iter().for_each(|c| assert_no_directives(c, case)),
            _ => {}
        }
    }

    fn deployment(containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}}
        })
    }

    /// (case, group, kind, original, patch, expected)
    fn cases() -> Vec<(
        &'static str,
        &'static str,
        &'static str,
        Value,
        Value,
        Value,
    )> {
        vec![
            (
                "null deletes a key, other keys merge",
                "",
                "ConfigMap",
                json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "1"}}),
                json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": {"y": "2"}}),
                json!({"metadata": {"name": "c", "labels": {"b": "2", "c": "3"}}, "data": {"x": "1", "y": "2"}}),
            ),
            (
                "kubectl re-apply: image change keeps ports and the other container",
                "apps",
                "Deployment",
                deployment(json!([
                    {"name": "a", "image": "nginx:1.25", "ports": [{"containerPort": 80}]},
                    {"name": "b", "image": "busybox"}
                ])),
                json!({"metadata": {"annotations": {"note": "x"}}, "spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"image": "nginx:1.26", "name": "a"}]}}}}),
                json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"note": "x"}},
                    "spec": {"replicas": 1, "template": {"spec": {"containers": [
                        {"name": "a", "image": "nginx:1.26", "ports": [{"containerPort": 80}]},
                        {"name": "b", "image": "busybox"}
                    ]}}}
                }),
            ),
            (
                "new container appended, $setElementOrder puts it first",
                "apps",
                "Deployment",
                deployment(json!([{"name": "a", "image": "x"}])),
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "side"}, {"name": "a"}],
                    "containers": [{"name": "side", "image": "s"}]}}}}),
                deployment(json!([{"name": "side", "image": "s"}, {"name": "a", "image": "x"}])),
            ),
            (
                "container deleted with $patch: delete",
                "apps",
                "Deployment",
                deployment(json!([{"name": "a", "image": "x"}, {"name": "b", "image": "y"}])),
                json!({"spec": {"template": {"spec": {
                    "$setElementOrder/containers": [{"name": "a"}],
                    "containers": [{"$patch": "delete", "name": "b"}]}}}}),
                deployment(json!([{"name": "a", "image": "x"}])),
            ),
            (
                "ports merge by containerPort, env by name (null removes a field of an item)",
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "a",
                    "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 8080}],
                    "env": [{"name": "B", "value": "2", "valueFrom": null}, {"name": "C", "value": "3"}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "ports": [{"containerPort": 80, "name": "web"}, {"containerPort": 443}, {"containerPort": 8080}],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}]}]}}),
            ),
            (
                "env item deleted, volumeMounts merge by mountPath",
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "a",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "volumeMounts": [{"mountPath": "/a", "name": "va"}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "env": [{"name": "A", "$patch": "delete"}],
                    "volumeMounts": [{"mountPath": "/a", "readOnly": true}, {"mountPath": "/b", "name": "vb"}]}]}}),
                json!({"spec": {"containers": [{"name": "a",
                    "env": [{"name": "B", "value": "2"}],
                    "volumeMounts": [{"mountPath": "/a", "name": "va", "readOnly": true}, {"mountPath": "/b", "name": "vb"}]}]}}),
            ),
            (
                "volumes merge by name; $retainKeys switches the volume source",
                "",
                "Pod",
                json!({"spec": {"volumes": [
                    {"name": "v1", "configMap": {"name": "cm"}},
                    {"name": "v2", "emptyDir": {}}
                ]}}),
                json!({"spec": {"volumes": [
                    {"name": "v1", "$retainKeys": ["name", "secret"], "secret": {"secretName": "s"}}
                ]}}),
                json!({"spec": {"volumes": [
                    {"name": "v1", "secret": {"secretName": "s"}},
                    {"name": "v2", "emptyDir": {}}
                ]}}),
            ),
            (
                "$retainKeys on DeploymentSpec.strategy drops rollingUpdate",
                "apps",
                "Deployment",
                json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
                json!({"spec": {"strategy": {"type": "Recreate"}}}),
            ),
            (
                "$retainKeys is ignored where the schema has no retainKeys strategy",
                "apps",
                "Deployment",
                json!({"spec": {"replicas": 2, "paused": false}}),
                json!({"spec": {"$retainKeys": ["replicas"], "replicas": 3}}),
                json!({"spec": {"replicas": 3, "paused": false}}),
            ),
            (
                "$patch: replace on a map",
                "apps",
                "Deployment",
                json!({"spec": {"template": {"metadata": {"labels": {"a": "1", "b": "2"}}}}}),
                json!({"spec": {"template": {"metadata": {"labels": {"$patch": "replace", "c": "3"}}}}}),
                json!({"spec": {"template": {"metadata": {"labels": {"c": "3"}}}}}),
            ),
            (
                "$patch: delete on a map",
                "apps",
                "Deployment",
                json!({"spec": {"replicas": 1, "strategy": {"type": "Recreate"}}}),
                json!({"spec": {"strategy": {"$patch": "delete"}}}),
                json!({"spec": {"replicas": 1}}),
            ),
            (
                "$patch: replace as a list item replaces the list",
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}),
                json!({"spec": {"containers": [{"$patch": "replace"}, {"name": "c", "image": "z"}]}}),
                json!({"spec": {"containers": [{"name": "c", "image": "z"}]}}),
            ),
            (
                "$patch: merge is accepted and dropped",
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "a", "image": "x", "args": ["1"]}]}}),
                json!({"spec": {"$patch": "merge", "containers": [{"name": "a", "$patch": "merge", "image": "y"}]}}),
                json!({"spec": {"containers": [{"name": "a", "image": "y", "args": ["1"]}]}}),
            ),
            (
                "finalizers merge as a set; $deleteFromPrimitiveList removes",
                "",
                "ConfigMap",
                json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b"], "finalizers": ["c", "d"]}}),
                json!({"metadata": {"finalizers": ["a", "c", "d"]}}),
            ),
            (
                "$setElementOrder on finalizers",
                "",
                "ConfigMap",
                json!({"metadata": {"finalizers": ["a", "b"]}}),
                json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
                json!({"metadata": {"finalizers": ["c", "b", "a"]}}),
            ),
            (
                "server-only item keeps its place between ordered items",
                "",
                "Pod",
                json!({"spec": {"containers": [{"name": "a"}, {"name": "injected"}, {"name": "b"}]}}),
                json!({"spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "b", "image": "y"}]}}),
                json!({"spec": {"containers": [{"name": "a"}, {"name": "injected"}, {"name": "b", "image": "y"}]}}),
            ),
            (
                "replace lists (args, tolerations) are replaced whole",
                "",
                "Pod",
                json!({"spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "a", "args": ["1", "2"]}]}}),
                json!({"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "a", "args": ["3"]}]}}),
                json!({"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "a", "args": ["3"]}]}}),
            ),
            (
                "CronJob pod template nests: containers merge by name",
                "batch",
                "CronJob",
                json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                    "containers": [{"name": "a", "image": "x", "command": ["run"]}]}}}}}}),
                json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
                    "containers": [{"name": "a", "image": "y"}]}}}}}}),
                json!({"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": {
                    "containers": [{"name": "a", "image": "y", "command": ["run"]}]}}}}}}),
            ),
            (
                "StatefulSet volumeClaimTemplates are replaced whole",
                "apps",
                "StatefulSet",
                json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "a"}}, {"metadata": {"name": "b"}}]}}),
                json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "c"}}]}}),
                json!({"spec": {"volumeClaimTemplates": [{"metadata": {"name": "c"}}]}}),
            ),
            (
                "ownerReferences merge by uid in template metadata",
                "apps",
                "Deployment",
                json!({"spec": {"template": {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}]}}}}),
                json!({"spec": {"template": {"metadata": {"ownerReferences": [{"uid": "2", "name": "b"}]}}}}),
                json!({"spec": {"template": {"metadata": {"ownerReferences": [{"uid": "1", "name": "a"}, {"uid": "2", "name": "b"}]}}}}),
            ),
            (
                "Service ports merge by port",
                "",
                "Service",
                json!({"spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}),
                json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}),
                json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"port": 443}]}}),
            ),
            (
                "ServiceAccount secrets merge by name, imagePullSecrets replace",
                "",
                "ServiceAccount",
                json!({"secrets": [{"name": "a"}], "imagePullSecrets": [{"name": "p"}]}),
                json!({"secrets": [{"name": "b"}], "imagePullSecrets": [{"name": "q"}]}),
                json!({"secrets": [{"name": "a"}, {"name": "b"}], "imagePullSecrets": [{"name": "q"}]}),
            ),
            (
                "Node podCIDRs merge as a set",
                "",
                "Node",
                json!({"spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "a"}]}}),
                json!({"spec": {"podCIDRs": ["10.0.1.0/24"], "taints": [{"key": "b"}]}}),
                json!({"spec": {"podCIDRs": ["10.0.0.0/24", "10.0.1.0/24"], "taints": [{"key": "b"}]}}),
            ),
            (
                "root $patch: replace",
                "",
                "ConfigMap",
                json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
                json!({"$patch": "replace", "metadata": {"name": "c"}, "data": {"b": "2"}}),
                json!({"metadata": {"name": "c"}, "data": {"b": "2"}}),
            ),
            (
                "a new nested map loses its nulls and directives",
                "apps",
                "Deployment",
                json!({"spec": {}}),
                json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}}),
                json!({"spec": {"strategy": {"type": "Recreate"}}}),
            ),
            (
                "type change: a scalar replaces a map and vice versa",
                "",
                "ConfigMap",
                json!({"data": {"a": {"x": 1}, "b": "s"}}),
                json!({"data": {"a": "flat", "b": {"y": 2}}}),
                json!({"data": {"a": "flat", "b": {"y": 2}}}),
            ),
        ]
    }

    #[test]
    fn strategic_merge_table() {
        for (case, group, kind, original, patch, expected) in cases() {
            let got = strategic_merge(&original, &patch, builtin(group, kind))
                .unwrap_or_else(|e| panic!("{case}: {e}"));
            assert_eq!(got, expected, "{case}");
            assert_no_directives(&got, case);
            // Key order: original keys keep their place, new ones come after.
            assert_eq!(
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(&expected).unwrap(),
                "{case}: key order"
            );
        }
    }

    #[test]
    fn generic_schema_replaces_lists() {
        let original = json!({"spec": {"items": [{"name": "a", "x": 1}], "m": {"a": 1}}});
        let patch = json!({"spec": {"items": [{"name": "a", "y": 2}], "m": {"b": 2}}});
        let got = strategic_merge(&original, &patch, Schema::generic()).unwrap();
        assert_eq!(
            got,
            json!({"spec": {"items": [{"name": "a", "y": 2}], "m": {"a": 1, "b": 2}}})
        );
    }

    #[test]
    fn errors() {
        let pod = builtin("", "Pod");
        let original = json!({"spec": {"containers": [{"name": "a"}]}});
        type Check = fn(&MergeError) -> bool;
        let cases: Vec<(Value, Check)> = vec![
            (json!({"spec": {"$patch": "explode"}}), |e| {
                matches!(e, MergeError::InvalidDirective { .. })
            }),
            (
                json!({"spec": {"containers": [{"image": "x"}]}}),
                |e| matches!(e, MergeError::MissingMergeKey { key, path } if key == "name" && path == ".spec.containers[0]"),
            ),
            (
                json!({"spec": {"containers": [{"$patch": "delete"}]}}),
                |e| matches!(e, MergeError::MissingMergeKey { .. }),
            ),
            (json!({"spec": {"containers": ["a"]}}), |e| {
                matches!(e, MergeError::InvalidListItem { .. })
            }),
            (
                json!({"spec": {"volumes": [{"name": "v", "$retainKeys": "name"}]}}),
                |e| matches!(e, MergeError::InvalidDirective { .. }),
            ),
            (
                json!({"spec": {"$setElementOrder/containers": {"name": "a"}}}),
                |e| matches!(e, MergeError::InvalidDirective { .. }),
            ),
            (json!(["not", "an", "object"]), |e| {
                matches!(e, MergeError::PatchNotObject)
            }),
        ];
        for (patch, check) in cases {
            let err = strategic_merge(&original, &patch, pod).expect_err(&patch.to_string());
            assert!(check(&err), "{patch}: unexpected {err:?}");
        }
    }

    #[test]
    fn root_delete_gives_empty_object() {
        let got = strategic_merge(
            &json!({"a": 1}),
            &json!({"$patch": "delete"}),
            Schema::generic(),
        )
        .unwrap();
        assert_eq!(got, json!({}));
    }

    /// RFC 7386 JSON merge patch, the reference for patches without lists or directives.
    fn json_merge(target: &Value, patch: &Value) -> Value {
        match patch {
            Value::Object(pm) => {
                let mut out = target.as_object().cloned().unwrap_or_default();
                for (k, v) in pm {
                    if v.is_null() {
                        out.shift_remove(k);
                    } else {
                        let merged = json_merge(out.get(k).unwrap_or(&Value::Null), v);
                        out.insert(k.clone(), merged);
                    }
                }
                Value::Object(out)
            }
            other => other.clone(),
        }
    }

    mod props {
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        use super::json_merge;
        use crate::{Schema, strategic_merge};

        fn scalar() -> impl Strategy<Value = Value> {
            prop_oneof![
                any::<bool>().prop_map(Value::Bool),
                any::<i32>().prop_map(Value::from),
                "[a-z]{0,4}".prop_map(Value::String),
            ]
        }

        /// Objects of scalars, scalar lists and nested objects, with `null`s when `nulls`.
        fn object(nulls: bool) -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                4 => scalar(),
                1 => prop::collection::vec(scalar(), 0..3).prop_map(Value::Array),
                1 => if nulls { Just(Value::Null).boxed() } else { scalar().boxed() },
            ];
            let tree = leaf.prop_recursive(3, 24, 4, |inner| {
                prop::collection::btree_map("[a-e]", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
            });
            prop::collection::btree_map("[a-e]", tree, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect()))
        }

        proptest! {
            #[test]
            fn empty_patch_is_identity(original in object(false)) {
                let schema = Schema::builtin("apps", "Deployment").unwrap();
                let got = strategic_merge(&original, &serde_json::json!({}), schema).unwrap();
                prop_assert_eq!(serde_json::to_string(&got).unwrap(), serde_json::to_string(&original).unwrap());
            }

            #[test]
            fn generic_matches_json_merge_patch(original in object(false), patch in object(true)) {
                let got = strategic_merge(&original, &patch, Schema::generic()).unwrap();
                prop_assert_eq!(got, json_merge(&original, &patch));
            }

            #[test]
            fn patch_is_idempotent(original in object(false), patch in object(true)) {
                let schema = Schema::generic();
                let once = strategic_merge(&original, &patch, schema).unwrap();
                let twice = strategic_merge(&once, &patch, schema).unwrap();
                prop_assert_eq!(once, twice);
            }
        }
    }
}
