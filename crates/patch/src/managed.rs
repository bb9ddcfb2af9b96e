//! Server-side apply and field ownership: reading and writing `metadata.managedFields`,
//! [`apply`] (merge an applied configuration, detect conflicts, prune fields a manager stopped
//! applying) and [`track_update`] (record the fields a create/update/patch changed).

use serde_json::{Map, Value};

use crate::Schema;
use crate::fieldpath::{
    FieldSet, Path, PathElement, Walker, child_node, item_key, path_string, remove_at, value_at,
};
use crate::schema::{ListType, Node};

/// Options of one server-side apply.
#[derive(Debug, Clone, Copy)]
pub struct ApplyOptions<'a> {
    /// The field manager (`?fieldManager=`).
    pub manager: &'a str,
    /// The apiVersion the configuration was applied with, e.g. `apps/v1`.
    pub api_version: &'a str,
    /// Take conflicting fields from their other managers instead of failing.
    pub force: bool,
    /// The current time, RFC 3339.
    pub now: &'a str,
    /// `Some("status")` when applying to the status subresource.
    pub subresource: Option<&'a str>,
}

/// Options of one non-apply write (create, update, patch).
#[derive(Debug, Clone, Copy)]
pub struct UpdateOptions<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    /// The current time, RFC 3339.
    pub now: &'a str,
    pub subresource: Option<&'a str>,
}

/// A field the applied configuration sets to a value another manager owns differently.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's name.
    pub manager: String,
    /// Its operation: `Apply` or `Update`.
    pub operation: String,
    /// The apiVersion its entry records.
    pub api_version: String,
    /// The field, e.g. `.spec.replicas` or `.spec.template.spec.containers[name="nginx"].image`.
    pub field: String,
}

impl Conflict {
    /// How kube-apiserver names the other manager: `"kubectl-client-side-apply" using apps/v1`
    /// for an update manager, `"kubectl"` for an apply manager.
    pub fn manager_description(&self) -> String {
        if self.operation == "Update" {
            format!("{:?} using {}", self.manager, self.api_version)
        } else {
            format!("{:?}", self.manager)
        }
    }
}

/// Why an apply was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change; retry with `force` to take them.
    #[error("{}", conflicts_message(.0))]
    Conflicts(Vec<Conflict>),
    /// The applied configuration is malformed (a bad request).
    #[error("{0}")]
    Invalid(String),
}

/// The kube-apiserver message for an apply conflict error, e.g.
/// `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`.
pub fn conflicts_message(conflicts: &[Conflict]) -> String {
    let n = conflicts.len();
    let head = format!(
        "Apply failed with {n} conflict{}: ",
        if n == 1 { "" } else { "s" }
    );
    if let [c] = conflicts {
        return format!(
            "{head}conflict with {}: {}",
            c.manager_description(),
            c.field
        );
    }
    let mut by_manager: std::collections::BTreeMap<String, Vec<&str>> = Default::default();
    for c in conflicts {
        by_manager
            .entry(c.manager_description())
            .or_default()
            .push(&c.field);
    }
    let lines: Vec<String> = by_manager
        .into_iter()
        .map(|(m, fields)| {
            let mut s = format!("conflicts with {m}:");
            for f in fields {
                s.push_str("\n- ");
                s.push_str(f);
            }
            s
        })
        .collect();
    format!("{head}{}", lines.join("\n"))
}

// ---- managedFields entries ----------------------------------------------------------------------

const APPLY: &str = "Apply";
const UPDATE: &str = "Update";
/// The manager that owns what an object held before its first apply, as kube-apiserver does.
const BEFORE_FIRST_APPLY: &str = "before-first-apply";

#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: Option<String>,
    set: FieldSet,
}

impl Entry {
    fn is(
        &self,
        manager: &str,
        operation: &str,
        api_version: &str,
        subresource: Option<&str>,
    ) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
            // An apply manager is one entry whatever apiVersion it last used.
            && (operation == APPLY || self.api_version == api_version)
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.set.to_json());
        if let Some(s) = &self.subresource {
            m.insert("subresource".into(), Value::String(s.clone()));
        }
        Value::Object(m)
    }
}

fn str_field(m: &Map<String, Value>, k: &str) -> Option<String> {
    m.get(k).and_then(Value::as_str).map(str::to_string)
}

/// Reads `managedFields`; entries that are not FieldsV1 objects are dropped (kube-apiserver
/// resets unreadable managed fields rather than failing the write).
fn parse_entries(list: Option<&Value>) -> Vec<Entry> {
    let Some(Value::Array(items)) = list else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(|item| {
            let m = item.as_object()?;
            if m.get("fieldsType")
                .and_then(Value::as_str)
                .is_some_and(|t| t != "FieldsV1")
            {
                return None;
            }
            Some(Entry {
                manager: str_field(m, "manager").unwrap_or_default(),
                operation: str_field(m, "operation").unwrap_or_else(|| UPDATE.to_string()),
                api_version: str_field(m, "apiVersion").unwrap_or_default(),
                time: str_field(m, "time"),
                subresource: str_field(m, "subresource").filter(|s| !s.is_empty()),
                set: m
                    .get("fieldsV1")
                    .map(FieldSet::from_json)
                    .unwrap_or_default(),
            })
        })
        .collect()
}

fn managed_fields_of(obj: &Value) -> Option<&Value> {
    obj.get("metadata")?
        .get("managedFields")
        .filter(|v| !v.is_null())
}

/// Writes the entries (empty ones dropped, in kube-apiserver's order: operation, time, manager,
/// apiVersion, subresource) into `obj.metadata.managedFields`, keeping the key's position.
fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    entries.retain(|e| !e.set.is_empty());
    entries.sort_by(|a, b| {
        (
            &a.operation,
            &a.time,
            &a.manager,
            &a.api_version,
            &a.subresource,
        )
            .cmp(&(
                &b.operation,
                &b.time,
                &b.manager,
                &b.api_version,
                &b.subresource,
            ))
    });
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    if !matches!(root.get("metadata"), Some(Value::Object(_))) {
        if entries.is_empty() {
            return;
        }
        root.insert("metadata".into(), Value::Object(Map::new()));
    }
    if let Some(Value::Object(meta)) = root.get_mut("metadata") {
        if entries.is_empty() {
            meta.shift_remove("managedFields");
        } else {
            meta.insert(
                "managedFields".into(),
                Value::Array(entries.iter().map(Entry::to_json).collect()),
            );
        }
    }
}

// ---- scope --------------------------------------------------------------------------------------

/// Metadata fields no manager owns and apply never changes.
const UNTRACKED_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "managedFields",
    "selfLink",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The main resource: everything but `status`.
    Main,
    /// The status subresource: only `status`.
    Status,
}

impl Scope {
    fn of(subresource: Option<&str>) -> Scope {
        if subresource == Some("status") {
            Scope::Status
        } else {
            Scope::Main
        }
    }

    fn tracks(self, top_level_key: &str) -> bool {
        match self {
            Scope::Main => !matches!(top_level_key, "apiVersion" | "kind" | "status"),
            Scope::Status => top_level_key == "status",
        }
    }
}

/// The part of `obj` whose fields are tracked in `scope`, nulls dropped.
fn tracked_view(obj: &Value, scope: Scope) -> Value {
    let mut out = Map::new();
    if let Some(m) = obj.as_object() {
        for (k, v) in m {
            if !scope.tracks(k) || v.is_null() {
                continue;
            }
            if k == "metadata" {
                if let Value::Object(meta) = v {
                    let kept: Map<String, Value> = meta
                        .iter()
                        .filter(|(mk, mv)| {
                            !UNTRACKED_METADATA.contains(&mk.as_str()) && !mv.is_null()
                        })
                        .map(|(mk, mv)| (mk.clone(), mv.clone()))
                        .collect();
                    out.insert(k.clone(), Value::Object(kept));
                }
                continue;
            }
            out.insert(k.clone(), v.clone());
        }
    }
    out.into()
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(l) => Value::Array(l.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

// ---- apply --------------------------------------------------------------------------------------

/// Server-side apply of `applied` onto `live` (`None` on create). Returns the new object with
/// `metadata.managedFields` updated, or the conflicts when `!opts.force`.
///
/// Maps merge recursively, associative lists merge item by item, sets merge as unions, atomic
/// lists and maps and scalars are replaced. A leaf the configuration sets to a value that
/// differs from live and that another manager owns is a conflict; `force` takes it from that
/// manager. Fields this manager applied before, does not apply now and nobody else owns are
/// removed. `apiVersion`, `kind`, the untracked metadata (name, namespace, uid, ...) are kept
/// from live (copied from `applied` on create); `null`s in `applied` are ignored.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    opts: &ApplyOptions<'_>,
    schema: &Schema,
) -> Result<Value, ApplyError> {
    let root = &schema.root;
    if !applied.is_object() {
        return Err(ApplyError::Invalid(
            "the applied configuration must be a JSON object".into(),
        ));
    }
    if managed_fields_of(applied).is_some_and(|m| m.as_array().is_none_or(|a| !a.is_empty())) {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let scope = Scope::of(opts.subresource);
    let applied_view = strip_nulls(&tracked_view(applied, scope));
    let mut walker = Walker::new(true, false);
    walker
        .walk(None, &applied_view, root, &mut Vec::new())
        .map_err(ApplyError::Invalid)?;
    let Walker {
        set: applied_set,
        leaves: applied_leaves,
        ..
    } = walker;

    let empty = Value::Object(Map::new());
    let live_obj = live.filter(|l| l.is_object()).unwrap_or(&empty);
    let mut entries = parse_entries(managed_fields_of(live_obj));
    if live.is_some() && entries.is_empty() {
        // An object nobody has claimed yet: its current content belongs to a placeholder
        // manager, so the first apply cannot silently overwrite it.
        let mut w = Walker::new(false, false);
        // Lenient walkers never fail.
        let _ = w.walk(None, &tracked_view(live_obj, scope), root, &mut Vec::new());
        entries.push(Entry {
            manager: BEFORE_FIRST_APPLY.into(),
            operation: UPDATE.into(),
            api_version: opts.api_version.into(),
            time: Some(opts.now.into()),
            subresource: opts.subresource.map(str::to_string),
            set: w.set,
        });
    }
    let me = |e: &Entry| e.is(opts.manager, APPLY, opts.api_version, opts.subresource);

    // Conflicts: leaves whose value changes and that another manager owns.
    let mut conflicts: Vec<(usize, Path)> = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        if e.manager == opts.manager {
            continue;
        }
        for leaf in &applied_leaves {
            if e.set.contains(leaf)
                && value_at(live_obj, leaf, root) != value_at(&applied_view, leaf, root)
            {
                conflicts.push((i, leaf.clone()));
            }
        }
    }
    if !conflicts.is_empty() {
        if !opts.force {
            return Err(ApplyError::Conflicts(
                conflicts
                    .into_iter()
                    .map(|(i, path)| Conflict {
                        manager: entries[i].manager.clone(),
                        operation: entries[i].operation.clone(),
                        api_version: entries[i].api_version.clone(),
                        field: path_string(&path),
                    })
                    .collect(),
            ));
        }
        for (i, path) in &conflicts {
            entries[*i].set.remove(path);
        }
    }

    let mut result = merge_top(live, applied, scope, root);

    // Prune what this manager stopped applying, unless someone else still owns it.
    let previous = entries
        .iter()
        .find(|e| me(e))
        .map(|e| e.set.clone())
        .unwrap_or_default();
    let mut others = FieldSet::default();
    for e in entries.iter().filter(|e| !me(e)) {
        others.union_with(&e.set);
    }
    for path in previous.difference(&applied_set).members() {
        let still_owned = others.contains(&path)
            || others.has_descendant(&path)
            || applied_set.has_descendant(&path);
        if still_owned || is_key_field(&path, root) {
            continue;
        }
        remove_at(&mut result, &path, root);
    }

    match entries.iter_mut().find(|e| me(e)) {
        Some(e) => {
            e.set = applied_set;
            e.api_version = opts.api_version.into();
            e.time = Some(opts.now.into());
        }
        None => entries.push(Entry {
            manager: opts.manager.into(),
            operation: APPLY.into(),
            api_version: opts.api_version.into(),
            time: Some(opts.now.into()),
            subresource: opts.subresource.map(str::to_string),
            set: applied_set,
        }),
    }
    for e in &mut entries {
        e.set.retain_existing(&result, root);
    }
    write_entries(&mut result, entries);
    Ok(result)
}

/// Whether `path` is a key field of an associative list item. Such a field goes only with its
/// item (removing it alone would change the item's identity).
fn is_key_field(path: &[PathElement], root: &Node) -> bool {
    let Some((PathElement::Field(field), item_path)) = path.split_last() else {
        return false;
    };
    let Some((PathElement::Key(_), list_path)) = item_path.split_last() else {
        return false;
    };
    let mut node = root;
    for pe in list_path {
        node = child_node(node, pe);
    }
    matches!(node.list_type(), ListType::Map { keys, .. } if keys.contains(field))
}

/// Merges the applied configuration into the live object, top level by scope: `apiVersion`,
/// `kind` and untracked metadata come from live (from `applied` on create); in the status
/// scope only `status` is merged.
fn merge_top(live: Option<&Value>, applied: &Value, scope: Scope, root: &Node) -> Value {
    let creating = live.is_none();
    let mut out = live.and_then(Value::as_object).cloned().unwrap_or_default();
    let Some(applied) = applied.as_object() else {
        return Value::Object(out);
    };
    for (k, av) in applied {
        if av.is_null() {
            continue;
        }
        match k.as_str() {
            "apiVersion" | "kind" if creating => {
                out.insert(k.clone(), av.clone());
            }
            "apiVersion" | "kind" => {}
            "metadata" if scope == Scope::Main => {
                let Value::Object(am) = av else { continue };
                let meta_node = root.field("metadata");
                let mut meta = match out.get_mut("metadata") {
                    Some(Value::Object(m)) => std::mem::take(m),
                    _ => Map::new(),
                };
                for (mk, mv) in am {
                    if mv.is_null() || mk == "managedFields" {
                        continue;
                    }
                    if UNTRACKED_METADATA.contains(&mk.as_str()) {
                        if creating {
                            meta.insert(mk.clone(), mv.clone());
                        }
                        continue;
                    }
                    let merged = match meta.get(mk) {
                        Some(lv) => merge_value(lv, mv, meta_node.field(mk)),
                        None => strip_nulls(mv),
                    };
                    meta.insert(mk.clone(), merged);
                }
                out.insert("metadata".into(), Value::Object(meta));
            }
            "status" => {
                let merged = match out.get(k) {
                    Some(lv) => merge_value(lv, av, root.field(k)),
                    None => strip_nulls(av),
                };
                out.insert(k.clone(), merged);
            }
            _ if scope == Scope::Main => {
                let merged = match out.get(k) {
                    Some(lv) => merge_value(lv, av, root.field(k)),
                    None => strip_nulls(av),
                };
                out.insert(k.clone(), merged);
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// The apply merge of one value: live's key order is kept and new keys/items are appended.
fn merge_value(live: &Value, applied: &Value, node: &Node) -> Value {
    match (live, applied) {
        (Value::Object(lm), Value::Object(am)) if !node.map_atomic() => {
            let mut out = lm.clone();
            for (k, av) in am {
                if av.is_null() {
                    continue;
                }
                let merged = match out.get(k) {
                    Some(lv) => merge_value(lv, av, node.field(k)),
                    None => strip_nulls(av),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
        (Value::Array(ll), Value::Array(al)) => match node.list_type() {
            ListType::Atomic => strip_nulls(applied),
            ListType::Set => {
                let items: Vec<&Value> = al.iter().filter(|i| !i.is_null()).collect();
                merge_items(ll, &items, |v| v.clone(), |_, a| a.clone())
            }
            ListType::Map { keys, defaults } => {
                let ident = |v: &Value| {
                    item_key(v, keys, defaults)
                        .map(Value::String)
                        .unwrap_or(Value::Null)
                };
                let items: Vec<&Value> = al.iter().collect();
                merge_items(ll, &items, ident, |l, a| match l {
                    Some(l) => merge_value(l, a, node.item()),
                    None => strip_nulls(a),
                })
            }
        },
        _ => strip_nulls(applied),
    }
}

/// Merges the items of an associative list or set. Items are identified by `ident` (`null`:
/// no identity, never shared). The result walks both lists together: applied items come in the
/// applied order (merged with their live counterpart by `merge`), and an item only live has
/// stays where it was relative to its neighbours, ahead of the applied items that followed it.
fn merge_items(
    live: &[Value],
    applied: &[&Value],
    ident: impl Fn(&Value) -> Value,
    merge: impl Fn(Option<&Value>, &Value) -> Value,
) -> Value {
    let live_ids: Vec<Value> = live.iter().map(&ident).collect();
    let applied_ids: Vec<Value> = applied.iter().map(|a| ident(a)).collect();
    let shared = |id: &Value| !id.is_null() && applied_ids.contains(id);
    let mut out = Vec::with_capacity(live.len() + applied.len());
    let mut emitted: Vec<&Value> = Vec::new();
    let mut li = 0;
    for (a, id) in applied.iter().zip(&applied_ids) {
        if !id.is_null() && emitted.contains(&id) {
            continue;
        }
        let pos = if id.is_null() {
            None
        } else {
            live_ids.iter().position(|l| l == id)
        };
        match pos {
            Some(p) => {
                // Live-only items before this one keep their place.
                while li < p {
                    if !shared(&live_ids[li]) {
                        out.push(live[li].clone());
                    }
                    li += 1;
                }
                out.push(merge(Some(&live[p]), a));
                li = li.max(p + 1);
            }
            None => {
                while li < live.len() && !shared(&live_ids[li]) {
                    out.push(live[li].clone());
                    li += 1;
                }
                out.push(merge(None, a));
            }
        }
        emitted.push(id);
    }
    for (l, id) in live.iter().zip(&live_ids).skip(li) {
        if !shared(id) {
            out.push(l.clone());
        }
    }
    Value::Array(out)
}

// ---- update tracking ----------------------------------------------------------------------------

/// Records field ownership for a non-apply write (create, update, patch) from `old`
/// (`None` on create) to `new`, into `new.metadata.managedFields`.
///
/// Fields `new` sets or changes relative to `old` become owned by `opts.manager`'s `Update`
/// entry (for its apiVersion and subresource) and leave other managers' sets; fields no longer
/// in the object leave every set; empty entries are dropped. The starting point is the
/// `managedFields` `new` carries if the client sent them (an explicit `[]` clears them), else
/// those of `old`.
pub fn track_update(
    old: Option<&Value>,
    new: &mut Value,
    opts: &UpdateOptions<'_>,
    schema: &Schema,
) {
    let root = &schema.root;
    let mut entries = match managed_fields_of(new) {
        Some(given) => parse_entries(Some(given)),
        None => old
            .map(|o| parse_entries(managed_fields_of(o)))
            .unwrap_or_default(),
    };
    let scope = Scope::of(opts.subresource);
    let new_view = tracked_view(new, scope);
    let old_view = old.map(|o| tracked_view(o, scope));
    let mut walker = Walker::new(false, true);
    // Lenient walkers never fail.
    let _ = walker.walk(old_view.as_ref(), &new_view, root, &mut Vec::new());
    let changed = walker.set;

    if !changed.is_empty() {
        let mine = |e: &Entry| e.is(opts.manager, UPDATE, opts.api_version, opts.subresource);
        for e in entries.iter_mut().filter(|e| !mine(e)) {
            e.set = e.set.difference(&changed);
        }
        match entries.iter_mut().find(|e| mine(e)) {
            Some(e) => {
                e.set.union_with(&changed);
                e.time = Some(opts.now.into());
            }
            None => entries.push(Entry {
                manager: opts.manager.into(),
                operation: UPDATE.into(),
                api_version: opts.api_version.into(),
                time: Some(opts.now.into()),
                subresource: opts.subresource.map(str::to_string),
                set: changed,
            }),
        }
    }
    for e in &mut entries {
        e.set.retain_existing(new, root);
    }
    write_entries(new, entries);
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    const T0: &str = "2025-01-01T00:00:00Z";
    const T1: &str = "2025-01-01T00:01:00Z";
    const T2: &str = "2025-01-01T00:02:00Z";

    fn deploy_schema() -> &'static Schema {
        Schema::builtin("apps", "Deployment").unwrap()
    }

    fn opts<'a>(manager: &'a str, now: &'a str, force: bool) -> ApplyOptions<'a> {
        ApplyOptions {
            manager,
            api_version: "apps/v1",
            force,
            now,
            subresource: None,
        }
    }

    fn uopts<'a>(manager: &'a str, now: &'a str) -> UpdateOptions<'a> {
        UpdateOptions {
            manager,
            api_version: "apps/v1",
            now,
            subresource: None,
        }
    }

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]}
                }
            }
        })
    }

    fn entries_of(obj: &Value) -> Vec<Value> {
        obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn entry<'v>(obj: &'v Value, manager: &str) -> Option<&'v Value> {
        obj["metadata"]["managedFields"]
            .as_array()?
            .iter()
            .find(|e| e["manager"] == manager)
    }

    fn owns(obj: &Value, manager: &str, path: &[&str]) -> bool {
        let Some(e) = entry(obj, manager) else {
            return false;
        };
        let mut v = &e["fieldsV1"];
        for p in path {
            match v.get(*p) {
                Some(c) => v = c,
                None => return false,
            }
        }
        true
    }

    fn created_by_client_side_apply(obj: Value) -> Value {
        let mut obj = obj;
        track_update(
            None,
            &mut obj,
            &uopts("kubectl-client-side-apply", T0),
            deploy_schema(),
        );
        obj
    }

    #[test]
    fn apply_create_records_fields_v1() {
        let obj = apply(
            None,
            &deployment(1, "nginx:1.25"),
            &opts("kubectl", T0, false),
            deploy_schema(),
        )
        .unwrap();
        assert_eq!(obj["metadata"]["name"], "web");
        assert_eq!(obj["apiVersion"], "apps/v1");
        assert_eq!(
            entries_of(&obj),
            vec![json!({
                "manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T0,
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {
                        "f:replicas": {},
                        "f:selector": {},
                        "f:template": {
                            "f:metadata": {"f:labels": {"f:app": {}}},
                            "f:spec": {"f:containers": {"k:{\"name\":\"nginx\"}": {
                                ".": {}, "f:image": {}, "f:name": {},
                                "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}
                            }}}
                        }
                    }
                }
            })]
        );
        // Key order of the object: the applied order, managedFields appended to metadata.
        let meta_keys: Vec<&String> = obj["metadata"].as_object().unwrap().keys().collect();
        assert_eq!(meta_keys, ["name", "namespace", "labels", "managedFields"]);
    }

    #[test]
    fn conflict_with_client_side_apply_then_force() {
        let live = created_by_client_side_apply(deployment(1, "nginx:1.25"));
        assert!(owns(
            &live,
            "kubectl-client-side-apply",
            &["f:spec", "f:replicas"]
        ));

        let err = apply(
            Some(&live),
            &deployment(3, "nginx:1.25"),
            &opts("kubectl", T1, false),
            deploy_schema(),
        )
        .unwrap_err();
        let ApplyError::Conflicts(conflicts) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(
            conflicts,
            &vec![Conflict {
                manager: "kubectl-client-side-apply".into(),
                operation: "Update".into(),
                api_version: "apps/v1".into(),
                field: ".spec.replicas".into(),
            }]
        );
        assert_eq!(
            conflicts_message(conflicts),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
        );
        assert_eq!(err.to_string(), conflicts_message(conflicts));

        let obj = apply(
            Some(&live),
            &deployment(3, "nginx:1.25"),
            &opts("kubectl", T1, true),
            deploy_schema(),
        )
        .unwrap();
        assert_eq!(obj["spec"]["replicas"], 3);
        assert!(owns(&obj, "kubectl", &["f:spec", "f:replicas"]));
        assert!(!owns(
            &obj,
            "kubectl-client-side-apply",
            &["f:spec", "f:replicas"]
        ));
        // Fields with equal values are shared, not taken.
        assert!(owns(
            &obj,
            "kubectl",
            &["f:spec", "f:template", "f:spec", "f:containers"]
        ));
        assert!(owns(
            &obj,
            "kubectl-client-side-apply",
            &["f:spec", "f:template", "f:spec", "f:containers"]
        ));
        // Apply entries sort before update entries.
        let ops: Vec<&Value> = obj["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["operation"])
            .collect();
        assert_eq!(ops, [&json!("Apply"), &json!("Update")]);
    }

    #[test]
    fn conflict_on_list_item_field_and_multi_message() {
        let live = created_by_client_side_apply(deployment(1, "nginx:1.25"));
        let err = apply(
            Some(&live),
            &deployment(2, "nginx:1.26"),
            &opts("kubectl", T1, false),
            deploy_schema(),
        )
        .unwrap_err();
        let ApplyError::Conflicts(conflicts) = err else {
            panic!()
        };
        let fields: Vec<&str> = conflicts.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                ".spec.replicas",
                ".spec.template.spec.containers[name=\"nginx\"].image"
            ]
        );
        assert_eq!(
            conflicts_message(&conflicts),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n\
             - .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
        );
    }

    #[test]
    fn conflict_with_another_apply_manager() {
        let live = apply(
            None,
            &deployment(1, "x"),
            &opts("a", T0, false),
            deploy_schema(),
        )
        .unwrap();
        let err = apply(
            Some(&live),
            &json!({"spec": {"replicas": 5}}),
            &opts("b", T1, false),
            deploy_schema(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"a\": .spec.replicas"
        );
        // Same value: no conflict, shared ownership.
        let obj = apply(
            Some(&live),
            &json!({"spec": {"replicas": 1}}),
            &opts("b", T1, false),
            deploy_schema(),
        )
        .unwrap();
        assert!(
            owns(&obj, "a", &["f:spec", "f:replicas"])
                && owns(&obj, "b", &["f:spec", "f:replicas"])
        );
    }

    #[test]
    fn fields_no_longer_applied_are_removed_unless_owned_elsewhere() {
        let schema = Schema::builtin("", "ConfigMap").unwrap();
        let cm = |labels: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": labels}});
        let o = |m| ApplyOptions {
            manager: m,
            api_version: "v1",
            force: false,
            now: T0,
            subresource: None,
        };

        let live = apply(None, &cm(json!({"a": "1", "b": "2"})), &o("m1"), schema).unwrap();
        let obj = apply(Some(&live), &cm(json!({"a": "1"})), &o("m1"), schema).unwrap();
        assert_eq!(obj["metadata"]["labels"], json!({"a": "1"}));
        assert!(!owns(&obj, "m1", &["f:metadata", "f:labels", "f:b"]));

        // Another manager owning b keeps it.
        let shared = apply(Some(&live), &cm(json!({"b": "2"})), &o("m2"), schema).unwrap();
        let obj = apply(Some(&shared), &cm(json!({"a": "1"})), &o("m1"), schema).unwrap();
        assert_eq!(obj["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert!(owns(&obj, "m2", &["f:metadata", "f:labels", "f:b"]));
        assert!(!owns(&obj, "m1", &["f:metadata", "f:labels", "f:b"]));
    }

    #[test]
    fn list_items_no_longer_applied_are_removed() {
        let two = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}}});
        let one = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}});
        let live = apply(None, &two, &opts("m", T0, false), deploy_schema()).unwrap();
        let obj = apply(Some(&live), &one, &opts("m", T1, false), deploy_schema()).unwrap();
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "x"}])
        );

        // If another manager changed a field of b, b stays (with its key) but loses m's fields.
        let mut edited = live.clone();
        edited["spec"]["template"]["spec"]["containers"][1]["image"] = json!("z");
        edited["spec"]["template"]["spec"]["containers"][1]["args"] = json!(["run"]);
        track_update(
            Some(&live),
            &mut edited,
            &uopts("editor", T1),
            deploy_schema(),
        );
        let obj = apply(Some(&edited), &one, &opts("m", T2, false), deploy_schema()).unwrap();
        assert_eq!(
            obj["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "x"}, {"name": "b", "image": "z", "args": ["run"]}])
        );
    }

    #[test]
    fn kubectl_last_applied_second_apply_merges() {
        let config = {
            let mut d = deployment(2, "nginx:1.25");
            d["metadata"]["annotations"] =
                json!({"kubectl.kubernetes.io/last-applied-configuration": "{}"});
            d
        };
        let live = created_by_client_side_apply(config);
        // kubectl --server-side on an object with the annotation: the full apply, then the
        // annotation-only apply by kubectl-last-applied.
        let first = apply(
            Some(&live),
            &deployment(2, "nginx:1.25"),
            &opts("kubectl", T1, false),
            deploy_schema(),
        )
        .unwrap();
        // kubectl sends the annotation's current value (read back from the first apply).
        let current =
            first["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .clone();
        let last_applied = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": current}}
        });
        let obj = apply(
            Some(&first),
            &last_applied,
            &opts("kubectl-last-applied", T2, false),
            deploy_schema(),
        )
        .unwrap();
        assert_eq!(obj["spec"], first["spec"]);
        assert_eq!(obj["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(
            obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
            "{}"
        );
        assert!(owns(
            &obj,
            "kubectl-last-applied",
            &[
                "f:metadata",
                "f:annotations",
                "f:kubectl.kubernetes.io/last-applied-configuration"
            ]
        ));
        assert!(owns(&obj, "kubectl", &["f:spec", "f:replicas"]));
        // A different value is a conflict with client-side apply, which still owns it.
        let mut other = last_applied.clone();
        other["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
            json!("{\"x\":1}");
        let err = apply(
            Some(&first),
            &other,
            &opts("kubectl-last-applied", T2, false),
            deploy_schema(),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("kubectl-client-side-apply"),
            "{err}"
        );
        // And kubectl's next apply of the same config changes nothing of the spec.
        let again = apply(
            Some(&obj),
            &deployment(2, "nginx:1.25"),
            &opts("kubectl", T2, false),
            deploy_schema(),
        )
        .unwrap();
        assert_eq!(again["spec"], obj["spec"]);
        assert_eq!(
            again["metadata"]["annotations"],
            obj["metadata"]["annotations"]
        );
    }

    #[test]
    fn applied_order_wins_and_live_only_items_keep_their_place() {
        let schema = Schema::builtin("", "Pod").unwrap();
        let o = |m| ApplyOptions {
            manager: m,
            api_version: "v1",
            force: false,
            now: T0,
            subresource: None,
        };
        let pod = |names: &[&str]| {
            let cs: Vec<Value> = names
                .iter()
                .map(|n| json!({"name": n, "image": "i"}))
                .collect();
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": cs}})
        };
        let live = apply(None, &pod(&["a", "b"]), &o("m"), schema).unwrap();
        let injected = apply(
            Some(&live),
            &json!({"spec": {"containers": [{"name": "sidecar", "image": "s"}]}}),
            &o("injector"),
            schema,
        )
        .unwrap();
        let names = |v: &Value| -> Vec<String> {
            v["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(names(&injected), ["a", "b", "sidecar"]);
        let reordered = apply(Some(&injected), &pod(&["b", "a"]), &o("m"), schema).unwrap();
        assert_eq!(names(&reordered), ["b", "a", "sidecar"]);
        let grown = apply(Some(&reordered), &pod(&["b", "a", "c"]), &o("m"), schema).unwrap();
        assert_eq!(names(&grown), ["b", "a", "sidecar", "c"]);
    }

    #[test]
    fn empty_maps_are_owned_but_never_conflict() {
        let schema = Schema::builtin("", "Pod").unwrap();
        let o = |m| ApplyOptions {
            manager: m,
            api_version: "v1",
            force: false,
            now: T0,
            subresource: None,
        };
        let live = apply(None, &json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": "1"}}}]}}), &o("x"), schema).unwrap();
        let obj = apply(
            Some(&live),
            &json!({"spec": {"containers": [{"name": "a", "resources": {}}]}}),
            &o("y"),
            schema,
        )
        .unwrap();
        assert_eq!(
            obj["spec"]["containers"][0]["resources"],
            json!({"limits": {"cpu": "1"}})
        );
        assert!(owns(
            &obj,
            "y",
            &[
                "f:spec",
                "f:containers",
                "k:{\"name\":\"a\"}",
                "f:resources"
            ]
        ));
    }

    #[test]
    fn merge_semantics_per_list_type() {
        let schema = Schema::builtin("", "Pod").unwrap();
        let o = |m| ApplyOptions {
            manager: m,
            api_version: "v1",
            force: false,
            now: T0,
            subresource: None,
        };
        let live = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["x"]},
        "spec": {"nodeSelector": {"a": "1", "b": "2"}, "containers": [
            {"name": "c", "image": "i", "args": ["1", "2"], "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}
        ]}});
        let mut live_tracked = live.clone();
        track_update(
            None,
            &mut live_tracked,
            &UpdateOptions {
                manager: "creator",
                api_version: "v1",
                now: T0,
                subresource: None,
            },
            schema,
        );
        let applied = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "finalizers": ["y"]},
        "spec": {"nodeSelector": {"c": "3"}, "containers": [
            {"name": "c", "args": ["3"], "ports": [{"containerPort": 80, "hostPort": 8080}]},
            {"name": "d", "image": "j"}
        ]}});
        let obj = apply(
            Some(&live_tracked),
            &applied,
            &ApplyOptions {
                force: true,
                ..o("m")
            },
            schema,
        )
        .unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["x", "y"]));
        assert_eq!(
            obj["spec"]["nodeSelector"],
            json!({"c": "3"}),
            "atomic map replaced"
        );
        assert_eq!(
            obj["spec"]["containers"],
            json!([
                {"name": "c", "image": "i", "args": ["3"], "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http", "hostPort": 8080}]},
                {"name": "d", "image": "j"}
            ]),
            "map lists merge per key (protocol defaults to TCP in keys), atomic lists replaced"
        );
        let fields = &entry(&obj, "m").unwrap()["fieldsV1"];
        assert_eq!(
            fields["f:metadata"],
            json!({"f:finalizers": {"v:\"y\"": {}}})
        );
        assert_eq!(fields["f:spec"]["f:nodeSelector"], json!({}));
        assert_eq!(
            fields["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:ports"],
            json!({"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:hostPort": {}}})
        );
        // The forced fields left the creator's set; the rest is shared or still the creator's.
        assert!(!owns(&obj, "creator", &["f:spec", "f:nodeSelector"]));
        assert!(!owns(
            &obj,
            "creator",
            &["f:spec", "f:containers", "k:{\"name\":\"c\"}", "f:args"]
        ));
        assert!(owns(
            &obj,
            "creator",
            &["f:spec", "f:containers", "k:{\"name\":\"c\"}", "f:image"]
        ));
    }

    #[test]
    fn untracked_fields_and_status_scope() {
        let schema = deploy_schema();
        let mut applied = deployment(1, "x");
        applied["metadata"]["uid"] = json!("u-1");
        applied["status"] = json!({"replicas": 7});
        let obj = apply(None, &applied, &opts("m", T0, false), schema).unwrap();
        let fields = &entry(&obj, "m").unwrap()["fieldsV1"];
        assert!(fields["f:metadata"].get("f:name").is_none());
        assert!(fields["f:metadata"].get("f:uid").is_none());
        assert!(fields.get("f:status").is_none());
        assert!(fields.get("f:apiVersion").is_none());

        // Untracked metadata stays as stored on update.
        let mut renamed = deployment(1, "x");
        renamed["metadata"]["name"] = json!("other");
        renamed["metadata"]["resourceVersion"] = json!("999");
        let updated = apply(Some(&obj), &renamed, &opts("m", T1, false), schema).unwrap();
        assert_eq!(updated["metadata"]["name"], "web");
        assert!(updated["metadata"].get("resourceVersion").is_none());

        // The status subresource tracks status only, in an entry of its own.
        let status_applied = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "status": {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}});
        let with_status = apply(
            Some(&updated),
            &status_applied,
            &ApplyOptions {
                subresource: Some("status"),
                ..opts("ctrl", T1, false)
            },
            schema,
        )
        .unwrap();
        assert_eq!(with_status["status"]["conditions"][0]["type"], "Available");
        let e = entry(&with_status, "ctrl").unwrap();
        assert_eq!(e["subresource"], "status");
        assert_eq!(
            e["fieldsV1"],
            json!({"f:status": {"f:conditions": {"k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}, "f:replicas": {}}})
        );
        assert!(entry(&with_status, "m").is_some_and(|e| e.get("subresource").is_none()));
    }

    #[test]
    fn invalid_configurations() {
        let schema = Schema::builtin("", "Pod").unwrap();
        let o = opts("m", T0, false);
        let cases = [
            json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
            json!({"spec": {"containers": [{"image": "no-name"}]}}),
            json!({"metadata": {"managedFields": [{"manager": "x"}]}}),
            json!("not an object"),
        ];
        for applied in cases {
            let r = apply(None, &applied, &o, schema);
            assert!(matches!(r, Err(ApplyError::Invalid(_))), "{applied}: {r:?}");
        }
        // An explicit empty managedFields is fine.
        assert!(
            apply(
                None,
                &json!({"metadata": {"name": "p", "managedFields": []}}),
                &o,
                schema
            )
            .is_ok()
        );
    }

    #[test]
    fn first_apply_on_unmanaged_object_conflicts_with_before_first_apply() {
        let live = deployment(1, "x");
        let err = apply(
            Some(&live),
            &json!({"spec": {"replicas": 2}}),
            &opts("m", T1, false),
            deploy_schema(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
        );
        let ok = apply(
            Some(&live),
            &json!({"spec": {"replicas": 1}}),
            &opts("m", T1, false),
            deploy_schema(),
        )
        .unwrap();
        assert!(owns(&ok, "before-first-apply", &["f:spec", "f:template"]));
    }

    #[test]
    fn track_update_create_and_change() {
        let schema = deploy_schema();
        let mut obj = deployment(1, "x");
        obj["spec"]["strategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}});
        obj["metadata"]["uid"] = json!("u");
        track_update(None, &mut obj, &uopts("creator", T0), schema);
        let e = entry(&obj, "creator").unwrap();
        assert_eq!(e["operation"], "Update");
        assert_eq!(e["time"], T0);
        let f = &e["fieldsV1"];
        assert_eq!(f["f:metadata"], json!({"f:labels": {".": {}, "f:app": {}}}));
        assert_eq!(
            f["f:spec"]["f:strategy"],
            json!({".": {}, "f:rollingUpdate": {".": {}, "f:maxSurge": {}}, "f:type": {}})
        );
        assert_eq!(f["f:spec"]["f:selector"], json!({}));

        // Another manager changes replicas and removes the strategy.
        let mut next = obj.clone();
        next["spec"]["replicas"] = json!(5);
        next["spec"]
            .as_object_mut()
            .unwrap()
            .shift_remove("strategy");
        next["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields");
        track_update(Some(&obj), &mut next, &uopts("scaler", T1), schema);
        assert!(owns(&next, "scaler", &["f:spec", "f:replicas"]));
        assert!(!owns(&next, "creator", &["f:spec", "f:replicas"]));
        assert!(!owns(&next, "creator", &["f:spec", "f:strategy"]));
        assert!(owns(&next, "creator", &["f:spec", "f:template"]));
        assert_eq!(
            entry(&next, "scaler").unwrap()["fieldsV1"],
            json!({"f:spec": {"f:replicas": {}}})
        );

        // A write that changes nothing leaves managedFields alone (no entry, no new time).
        let mut same = next.clone();
        track_update(Some(&next), &mut same, &uopts("noop", T2), schema);
        assert_eq!(entries_of(&same), entries_of(&next));

        // A manager whose fields are all taken disappears.
        let mut all = next.clone();
        all["spec"]["replicas"] = json!(6);
        all["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields");
        track_update(Some(&next), &mut all, &uopts("other", T2), schema);
        assert!(entry(&all, "scaler").is_none());
    }

    #[test]
    fn track_update_explicit_managed_fields() {
        let schema = deploy_schema();
        let mut old = deployment(1, "x");
        track_update(None, &mut old, &uopts("creator", T0), schema);

        let mut cleared = old.clone();
        cleared["metadata"]["managedFields"] = json!([]);
        track_update(Some(&old), &mut cleared, &uopts("editor", T1), schema);
        assert!(cleared["metadata"].get("managedFields").is_none());

        let mut given = old.clone();
        given["metadata"]["managedFields"] = json!([{"manager": "someone", "operation": "Update", "apiVersion": "apps/v1",
            "time": T0, "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}, "f:gone": {}}}}]);
        given["spec"]["replicas"] = json!(4);
        track_update(Some(&old), &mut given, &uopts("editor", T1), schema);
        let managers: Vec<&Value> = given["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| &e["manager"])
            .collect();
        assert_eq!(
            managers,
            [&json!("editor")],
            "someone's only existing field was taken, `gone` does not exist"
        );
    }

    #[test]
    fn track_update_status_subresource() {
        let schema = deploy_schema();
        let mut old = deployment(1, "x");
        track_update(None, &mut old, &uopts("creator", T0), schema);
        let mut new = old.clone();
        new["status"] = json!({"readyReplicas": 1});
        new["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields");
        track_update(
            Some(&old),
            &mut new,
            &UpdateOptions {
                subresource: Some("status"),
                ..uopts("ctrl", T1)
            },
            schema,
        );
        let e = entry(&new, "ctrl").unwrap();
        assert_eq!(e["subresource"], "status");
        assert_eq!(e["fieldsV1"], json!({"f:status": {"f:readyReplicas": {}}}));
        // Main-resource writes ignore status.
        let mut main = new.clone();
        main["status"]["readyReplicas"] = json!(2);
        main["metadata"]
            .as_object_mut()
            .unwrap()
            .shift_remove("managedFields");
        track_update(Some(&new), &mut main, &uopts("x", T2), schema);
        assert!(entry(&main, "x").is_none());
    }

    #[test]
    fn crd_schema_from_openapi() {
        let schema = Schema::from_openapi(&json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {
                    "clusters": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "properties": {"name": {"type": "string"}, "weight": {"type": "integer"}}}},
                    "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                    "plain": {"type": "array", "items": {"type": "string"}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "additionalProperties": {"type": "string"}}
                }}
            }
        }));
        let o = |m| ApplyOptions {
            manager: m,
            api_version: "x.io/v1",
            force: false,
            now: T0,
            subresource: None,
        };
        let base = json!({"apiVersion": "x.io/v1", "kind": "P", "metadata": {"name": "p", "finalizers": ["f1"]},
            "spec": {"clusters": [{"name": "a", "weight": 1}], "tags": ["t1"], "plain": ["p1"], "selector": {"a": "1"}}});
        let live = apply(None, &base, &o("a"), &schema).unwrap();
        let second = json!({"apiVersion": "x.io/v1", "kind": "P", "metadata": {"name": "p", "finalizers": ["f2"]},
            "spec": {"clusters": [{"name": "b", "weight": 2}], "tags": ["t2"]}});
        let obj = apply(Some(&live), &second, &o("b"), &schema).unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["f1", "f2"]));
        assert_eq!(
            obj["spec"]["clusters"],
            json!([{"name": "a", "weight": 1}, {"name": "b", "weight": 2}])
        );
        assert_eq!(obj["spec"]["tags"], json!(["t1", "t2"]));
        let f = &entry(&live, "a").unwrap()["fieldsV1"]["f:spec"];
        assert_eq!(f["f:plain"], json!({}));
        assert_eq!(f["f:selector"], json!({}));
        // Atomic list: another manager replacing it conflicts with its owner.
        let third = json!({"spec": {"plain": ["p2"]}});
        assert!(matches!(
            apply(Some(&obj), &third, &o("c"), &schema),
            Err(ApplyError::Conflicts(_))
        ));
        // Strategic merge follows the list types when no patch strategy is given.
        let merged = crate::strategic_merge(
            &base,
            &json!({"spec": {"clusters": [{"name": "a", "weight": 5}], "plain": ["p9"]}}),
            &schema,
        )
        .unwrap();
        assert_eq!(
            merged["spec"]["clusters"],
            json!([{"name": "a", "weight": 5}])
        );
        assert_eq!(merged["spec"]["plain"], json!(["p9"]));
    }

    mod props {
        use proptest::prelude::*;
        use serde_json::{Value, json};

        use super::{T0, T1, deploy_schema, opts};
        use crate::apply;

        fn config() -> impl Strategy<Value = Value> {
            (
                prop::collection::btree_map("[a-c]", "[x-z]", 0..3),
                prop::option::of(0i64..4),
                prop::collection::btree_map("[a-d]", ("[x-z]{1,2}", prop::collection::btree_set(0i64..3, 0..3)), 0..3),
                prop::collection::btree_set("[p-r]", 0..3),
            )
                .prop_map(|(labels, replicas, containers, finalizers)| {
                    let containers: Vec<Value> = containers
                        .into_iter()
                        .map(|(name, (image, ports))| {
                            let ports: Vec<Value> = ports.into_iter().map(|p| json!({"containerPort": 80 + p})).collect();
                            json!({"name": name, "image": image, "ports": ports})
                        })
                        .collect();
                    let mut spec = json!({"template": {"spec": {"containers": containers}}});
                    if let Some(r) = replicas {
                        spec["replicas"] = json!(r);
                    }
                    json!({"apiVersion": "apps/v1", "kind": "Deployment",
                        "metadata": {"name": "web", "labels": labels, "finalizers": finalizers}, "spec": spec})
                })
        }

        proptest! {
            #[test]
            fn applying_twice_is_idempotent(first in config(), second in config()) {
                let live = apply(None, &first, &opts("m", T0, false), deploy_schema()).unwrap();
                let once = apply(Some(&live), &second, &opts("m", T1, false), deploy_schema()).unwrap();
                let twice = apply(Some(&once), &second, &opts("m", T1, false), deploy_schema()).unwrap();
                prop_assert_eq!(&once, &twice);
                // And the same config applied on create and as an update of itself agree.
                let created = apply(None, &second, &opts("m", T1, false), deploy_schema()).unwrap();
                let reapplied = apply(Some(&created), &second, &opts("m", T1, false), deploy_schema()).unwrap();
                prop_assert_eq!(created, reapplied);
            }

            #[test]
            fn sole_applier_gets_exactly_its_config(first in config(), second in config()) {
                // A single manager ends up with exactly what it applied last (set fields
                // apart: finalizers removed by it are pruned too).
                let live = apply(None, &first, &opts("m", T0, false), deploy_schema()).unwrap();
                let mut got = apply(Some(&live), &second, &opts("m", T1, false), deploy_schema()).unwrap();
                let mut want = apply(None, &second, &opts("m", T1, false), deploy_schema()).unwrap();
                for v in [&mut got, &mut want] {
                    v["metadata"].as_object_mut().unwrap().shift_remove("managedFields");
                }
                prop_assert_eq!(normalise(&got), normalise(&want));
            }
        }

        /// Empty maps and lists left behind by pruning are equivalent to absent ones.
        fn normalise(v: &Value) -> Value {
            match v {
                Value::Object(m) => Value::Object(
                    m.iter()
                        .map(|(k, v)| (k.clone(), normalise(v)))
                        .filter(|(_, v)| {
                            !matches!(v, Value::Object(o) if o.is_empty())
                                && !matches!(v, Value::Array(a) if a.is_empty())
                        })
                        .collect(),
                ),
                Value::Array(l) => Value::Array(l.iter().map(normalise).collect()),
                other => other.clone(),
            }
        }
    }
}
