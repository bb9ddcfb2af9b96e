//! Field paths and field sets: the FieldsV1 representation of `metadata.managedFields`
//! (`f:<name>`, `k:<key json>`, `v:<value json>`, `i:<index>`, `.` for membership), the
//! schema-aware navigation of objects along such paths, and the walkers that compute the field
//! set of an applied configuration or of a change between two objects.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::schema::{ListType, Node};

/// One step of a field path. The derived order (fields, then keys, values, indices; each by
/// its text) is the order FieldsV1 children are written in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PathElement {
    /// An object field.
    Field(String),
    /// An item of an associative list: the compact JSON object of its key fields, sorted.
    Key(String),
    /// An item of a set: its compact JSON value.
    Value(String),
    /// A list item by position (only read from stored entries; never produced here).
    Index(usize),
}

pub(crate) type Path = Vec<PathElement>;

impl PathElement {
    fn encode(&self) -> String {
        match self {
            PathElement::Field(n) => format!("f:{n}"),
            PathElement::Key(k) => format!("k:{k}"),
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    fn decode(s: &str) -> Option<PathElement> {
        let (prefix, rest) = s.split_at_checked(2)?;
        match prefix {
            "f:" => Some(PathElement::Field(rest.to_string())),
            "k:" => {
                // Re-encode so keys stored by another writer compare equal to ours.
                let parsed: Map<String, Value> = serde_json::from_str(rest).ok()?;
                Some(PathElement::Key(canonical_object(
                    parsed.iter().map(|(k, v)| (k.as_str(), v)),
                )))
            }
            "v:" => {
                let parsed: Value = serde_json::from_str(rest).ok()?;
                Some(PathElement::Value(compact(&parsed)))
            }
            "i:" => rest.parse().ok().map(PathElement::Index),
            _ => None,
        }
    }

    /// Appends the kube-apiserver style text of this step: `.name`, `[name="x"]`, `[=v]`, `[3]`.
    fn write_display(&self, out: &mut String) {
        match self {
            PathElement::Field(n) => {
                out.push('.');
                out.push_str(n);
            }
            PathElement::Key(k) => {
                out.push('[');
                match serde_json::from_str::<Map<String, Value>>(k) {
                    Ok(m) => {
                        let parts: Vec<String> = m
                            .iter()
                            .map(|(f, v)| format!("{f}={}", compact(v)))
                            .collect();
                        out.push_str(&parts.join(","));
                    }
                    Err(_) => out.push_str(k),
                }
                out.push(']');
            }
            PathElement::Value(v) => {
                out.push_str("[=");
                out.push_str(v);
                out.push(']');
            }
            PathElement::Index(i) => {
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
}

/// `.spec.template.spec.containers[name="nginx"].image`
pub(crate) fn path_string(path: &[PathElement]) -> String {
    let mut s = String::new();
    for pe in path {
        pe.write_display(&mut s);
    }
    s
}

pub(crate) fn compact(v: &Value) -> String {
    // Serialising a Value cannot fail (its map keys are strings).
    serde_json::to_string(v).unwrap_or_default()
}

/// A compact JSON object of the given fields in sorted key order.
fn canonical_object<'a>(fields: impl Iterator<Item = (&'a str, &'a Value)>) -> String {
    let sorted: BTreeMap<&str, &Value> = fields.collect();
    let mut out = String::from("{");
    for (i, (k, v)) in sorted.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&compact(&Value::String(k.to_string())));
        out.push(':');
        out.push_str(&compact(v));
    }
    out.push('}');
    out
}

/// The key of an associative list item, or the name of the first key field it lacks.
pub(crate) fn item_key(
    item: &Value,
    keys: &[String],
    defaults: &[(String, Value)],
) -> Result<String, String> {
    let Some(obj) = item.as_object() else {
        return Err(keys.first().cloned().unwrap_or_default());
    };
    let mut fields = Vec::with_capacity(keys.len());
    for k in keys {
        match obj.get(k).filter(|v| !v.is_null()) {
            Some(v) => fields.push((k.as_str(), v)),
            None => match defaults.iter().find(|(d, _)| d == k) {
                Some((_, dv)) => fields.push((k.as_str(), dv)),
                None => return Err(k.clone()),
            },
        }
    }
    Ok(canonical_object(fields.into_iter()))
}

/// A set of field paths, stored as a tree: `member` says the path ending here is in the set.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSet {
    member: bool,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    pub(crate) fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        let mut node = self;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.member = true;
    }

    fn node(&self, path: &[PathElement]) -> Option<&FieldSet> {
        let mut node = self;
        for pe in path {
            node = node.children.get(pe)?;
        }
        Some(node)
    }

    pub(crate) fn contains(&self, path: &[PathElement]) -> bool {
        self.node(path).is_some_and(|n| n.member)
    }

    /// Whether some path strictly below `path` is in the set.
    pub(crate) fn has_descendant(&self, path: &[PathElement]) -> bool {
        self.node(path)
            .is_some_and(|n| n.children.values().any(|c| !c.is_empty()))
    }

    /// Removes `path` itself from the set (not what lies below it).
    pub(crate) fn remove(&mut self, path: &[PathElement]) {
        fn go(node: &mut FieldSet, path: &[PathElement]) {
            match path.split_first() {
                None => node.member = false,
                Some((pe, rest)) => {
                    if let Some(child) = node.children.get_mut(pe) {
                        go(child, rest);
                        if child.is_empty() {
                            node.children.remove(pe);
                        }
                    }
                }
            }
        }
        go(self, path);
    }

    pub(crate) fn union_with(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (pe, c) in &other.children {
            self.children.entry(pe.clone()).or_default().union_with(c);
        }
    }

    /// Members of `self` that are not members of `other`.
    pub(crate) fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (pe, c) in &self.children {
            let d = match other.children.get(pe) {
                Some(oc) => c.difference(oc),
                None => c.clone(),
            };
            if !d.is_empty() {
                out.children.insert(pe.clone(), d);
            }
        }
        out
    }

    /// Every member path, parents before children, in FieldsV1 order.
    pub(crate) fn members(&self) -> Vec<Path> {
        fn go(node: &FieldSet, prefix: &mut Path, out: &mut Vec<Path>) {
            if node.member && !prefix.is_empty() {
                out.push(prefix.clone());
            }
            for (pe, c) in &node.children {
                prefix.push(pe.clone());
                go(c, prefix, out);
                prefix.pop();
            }
        }
        let mut out = Vec::new();
        go(self, &mut Vec::new(), &mut out);
        out
    }

    /// Drops every path that does not lead to a value present in `value`.
    pub(crate) fn retain_existing(&mut self, value: &Value, node: &Node) {
        self.children
            .retain(|pe, child| match child_value(value, pe, node) {
                Some(v) => {
                    child.retain_existing(v, child_node(node, pe));
                    !child.is_empty()
                }
                None => false,
            });
    }

    /// The FieldsV1 JSON tree.
    pub(crate) fn to_json(&self) -> Value {
        let mut m = Map::new();
        if self.member && !self.children.is_empty() {
            m.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (pe, c) in &self.children {
            if !c.is_empty() {
                m.insert(pe.encode(), c.to_json());
            }
        }
        Value::Object(m)
    }

    /// Parses a FieldsV1 JSON tree; unreadable path elements are skipped.
    pub(crate) fn from_json(v: &Value) -> FieldSet {
        fn go(v: &Value) -> FieldSet {
            let mut set = FieldSet::default();
            let Some(m) = v.as_object() else {
                set.member = true;
                return set;
            };
            if m.is_empty() {
                set.member = true;
            }
            for (k, c) in m {
                if k == "." {
                    set.member = true;
                } else if let Some(pe) = PathElement::decode(k) {
                    let child = go(c);
                    set.children.entry(pe).or_default().union_with(&child);
                }
            }
            set
        }
        let mut root = go(v);
        // The root is never a member itself: `{}` is the empty set.
        root.member = false;
        root
    }
}

// ---- navigation ---------------------------------------------------------------------------------

pub(crate) fn child_node<'n>(node: &'n Node, pe: &PathElement) -> &'n Node {
    match pe {
        PathElement::Field(n) => node.field(n),
        _ => node.item(),
    }
}

/// Whether list item `item` is the one `pe` names (under list schema `node`).
fn item_matches(item: &Value, pe: &PathElement, node: &Node) -> bool {
    match (pe, node.list_type()) {
        (PathElement::Key(k), ListType::Map { keys, defaults }) => {
            item_key(item, keys, defaults).is_ok_and(|ik| &ik == k)
        }
        (PathElement::Value(v), _) => &compact(item) == v,
        _ => false,
    }
}

fn item_position(list: &[Value], pe: &PathElement, node: &Node) -> Option<usize> {
    match pe {
        PathElement::Index(i) => (*i < list.len()).then_some(*i),
        PathElement::Field(_) => None,
        _ => list.iter().position(|item| item_matches(item, pe, node)),
    }
}

/// The value one step below `value` (`null` counts as absent).
pub(crate) fn child_value<'v>(
    value: &'v Value,
    pe: &PathElement,
    node: &Node,
) -> Option<&'v Value> {
    let v = match (value, pe) {
        (Value::Object(m), PathElement::Field(n)) => m.get(n),
        (Value::Array(l), pe) => item_position(l, pe, node).and_then(|i| l.get(i)),
        _ => None,
    }?;
    (!v.is_null()).then_some(v)
}

pub(crate) fn value_at<'v>(
    value: &'v Value,
    path: &[PathElement],
    node: &Node,
) -> Option<&'v Value> {
    let mut v = value;
    let mut n = node;
    for pe in path {
        v = child_value(v, pe, n)?;
        n = child_node(n, pe);
    }
    Some(v)
}

/// Removes the value at `path` (a field, or a whole list item). Returns whether it existed.
pub(crate) fn remove_at(value: &mut Value, path: &[PathElement], node: &Node) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut v = value;
    let mut n = node;
    for pe in parents {
        let next = match (v, pe) {
            (Value::Object(m), PathElement::Field(f)) => m.get_mut(f),
            (Value::Array(l), pe) => match item_position(l, pe, n) {
                Some(i) => l.get_mut(i),
                None => None,
            },
            _ => None,
        };
        match next {
            Some(next) => v = next,
            None => return false,
        }
        n = child_node(n, pe);
    }
    match (v, last) {
        (Value::Object(m), PathElement::Field(f)) => m.shift_remove(f).is_some(),
        (Value::Array(l), pe) => match item_position(l, pe, n) {
            Some(i) => {
                l.remove(i);
                true
            }
            None => false,
        },
        _ => false,
    }
}

// ---- field set computation ----------------------------------------------------------------------

/// Computes field sets over values.
///
/// With `old: None` it yields the field set of a configuration as server-side apply sees it:
/// scalars, atomic lists and atomic maps are leaves, list items are members themselves (`.`)
/// as well as their fields, granular maps are not members unless empty. Given `old`, it yields only what
/// changed: leaves whose value differs, list items and set values that are new, and (with
/// `mark_new_maps`) granular maps that did not exist before, as kube-apiserver records for
/// update operations.
pub(crate) struct Walker {
    /// Reject associative list items that lack a key or share one (apply); otherwise such a
    /// list is treated as atomic (update tracking must never fail).
    pub(crate) strict: bool,
    pub(crate) mark_new_maps: bool,
    pub(crate) set: FieldSet,
    /// The leaf paths (not list items, not maps) inserted, in insertion order.
    pub(crate) leaves: Vec<Path>,
}

impl Walker {
    pub(crate) fn new(strict: bool, mark_new_maps: bool) -> Walker {
        Walker {
            strict,
            mark_new_maps,
            set: FieldSet::default(),
            leaves: Vec::new(),
        }
    }

    fn leaf(&mut self, path: &Path) {
        self.set.insert(path);
        self.leaves.push(path.clone());
    }

    pub(crate) fn walk(
        &mut self,
        old: Option<&Value>,
        new: &Value,
        node: &Node,
        path: &mut Path,
    ) -> Result<(), String> {
        let old = old.filter(|o| !o.is_null());
        match new {
            Value::Null => Ok(()),
            Value::Object(nm) if !node.map_atomic() => {
                let om = old.and_then(Value::as_object);
                // Top-level maps (metadata, spec) always exist in a typed object, so kube never
                // records them as added; deeper maps that appear are the writer's.
                if om.is_none() && self.mark_new_maps && path.len() >= 2 {
                    self.set.insert(path);
                }
                // An applied empty map is owned as such (`f:resources: {}`), though it is no
                // leaf: merging it changes nothing, so it never conflicts.
                if old.is_none()
                    && !self.mark_new_maps
                    && !path.is_empty()
                    && nm.values().all(Value::is_null)
                {
                    self.set.insert(path);
                }
                for (k, v) in nm {
                    path.push(PathElement::Field(k.clone()));
                    let r = self.walk(om.and_then(|m| m.get(k)), v, node.field(k), path);
                    path.pop();
                    r?;
                }
                Ok(())
            }
            Value::Array(items) => match node.list_type() {
                ListType::Set => {
                    let old_items = old.and_then(Value::as_array);
                    for item in items.iter().filter(|i| !i.is_null()) {
                        if old_items.is_some_and(|o| o.contains(item)) {
                            continue;
                        }
                        path.push(PathElement::Value(compact(item)));
                        self.leaf(path);
                        path.pop();
                    }
                    Ok(())
                }
                ListType::Map { keys, defaults } => {
                    let mut item_keys = Vec::with_capacity(items.len());
                    for item in items {
                        match item_key(item, keys, defaults) {
                            Ok(k) => {
                                if self.strict && item_keys.contains(&k) {
                                    return Err(format!(
                                        "{}: duplicate entries for key {k}",
                                        path_string(path)
                                    ));
                                }
                                item_keys.push(k);
                            }
                            Err(missing) if self.strict => {
                                return Err(format!(
                                    "{}: associative list with keys has an element that omits key field {missing:?}",
                                    path_string(path)
                                ));
                            }
                            Err(_) => return self.atomic_leaf(old, new, path),
                        }
                    }
                    let old_items = old.and_then(Value::as_array);
                    for (item, key) in items.iter().zip(item_keys) {
                        let pe = PathElement::Key(key);
                        let old_item =
                            old_items.and_then(|o| o.iter().find(|i| item_matches(i, &pe, node)));
                        path.push(pe);
                        if old_item.is_none() {
                            self.set.insert(path);
                        }
                        let r = self.walk_item(old_item, item, node.item(), path);
                        path.pop();
                        r?;
                    }
                    Ok(())
                }
                ListType::Atomic => self.atomic_leaf(old, new, path),
            },
            _ => self.atomic_leaf(old, new, path),
        }
    }

    /// A list item: its fields are walked; an atomic item is a leaf at the item's own path.
    fn walk_item(
        &mut self,
        old: Option<&Value>,
        item: &Value,
        node: &Node,
        path: &mut Path,
    ) -> Result<(), String> {
        if item.is_object() && !node.map_atomic() {
            self.walk(old, item, node, path)
        } else {
            self.atomic_leaf(old, item, path)
        }
    }

    fn atomic_leaf(&mut self, old: Option<&Value>, new: &Value, path: &Path) -> Result<(), String> {
        if old != Some(new) && !path.is_empty() {
            self.leaf(path);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn fields_v1_round_trip_and_canonical_keys() {
        let stored = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:ports": {"k:{\"protocol\": \"TCP\", \"port\": 80}": {".": {}, "f:port": {}}},
                       "f:finalizers": {"v:\"a\"": {}}, "f:old": {"i:3": {}}, "bogus": {}}
        });
        let set = FieldSet::from_json(&stored);
        assert!(set.contains(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into())
        ]));
        let port = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("ports".into()),
            PathElement::Key("{\"port\":80,\"protocol\":\"TCP\"}".into()),
        ];
        assert!(set.contains(&port));
        assert!(set.has_descendant(&port));
        assert_eq!(path_string(&port), ".spec.ports[port=80,protocol=\"TCP\"]");
        assert_eq!(
            set.to_json(),
            json!({
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {"f:finalizers": {"v:\"a\"": {}}, "f:old": {"i:3": {}},
                           "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}}
            })
        );
        assert_eq!(
            path_string(&[
                PathElement::Field("m".into()),
                PathElement::Value("\"x\"".into()),
                PathElement::Index(2)
            ]),
            ".m[=\"x\"][2]"
        );
    }

    #[test]
    fn set_operations() {
        let p = |s: &[&str]| -> Path {
            s.iter()
                .map(|f| PathElement::Field(f.to_string()))
                .collect()
        };
        let mut a = FieldSet::default();
        a.insert(&p(&["a", "b"]));
        a.insert(&p(&["a", "c"]));
        let mut b = FieldSet::default();
        b.insert(&p(&["a", "c"]));
        let d = a.difference(&b);
        assert_eq!(d.members(), vec![p(&["a", "b"])]);
        a.remove(&p(&["a", "b"]));
        assert_eq!(a, b);
        a.remove(&p(&["a", "c"]));
        assert!(a.is_empty());
        assert_eq!(a.to_json(), json!({}));
    }

    #[test]
    fn navigation_and_removal() {
        let schema = crate::Schema::builtin("", "Pod").unwrap();
        let mut pod = json!({"spec": {"containers": [
            {"name": "a", "ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]},
            {"name": "b"}
        ]}, "metadata": {"finalizers": ["x", "y"]}});
        let port = vec![
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key("{\"name\":\"a\"}".into()),
            PathElement::Field("ports".into()),
            PathElement::Key("{\"containerPort\":80,\"protocol\":\"TCP\"}".into()),
        ];
        assert_eq!(
            value_at(&pod, &port, &schema.root),
            Some(&json!({"containerPort": 80}))
        );
        assert!(remove_at(&mut pod, &port, &schema.root));
        assert!(!remove_at(&mut pod, &port, &schema.root));
        let fin = vec![
            PathElement::Field("metadata".into()),
            PathElement::Field("finalizers".into()),
            PathElement::Value("\"x\"".into()),
        ];
        assert!(remove_at(&mut pod, &fin, &schema.root));
        assert_eq!(
            pod,
            json!({"spec": {"containers": [
                {"name": "a", "ports": [{"containerPort": 53, "protocol": "UDP"}]}, {"name": "b"}
            ]}, "metadata": {"finalizers": ["y"]}})
        );
    }
}
