//! Merge schemas: the tree of type nodes that tells the merge algorithms how each list merges
//! (strategic merge strategy and server-side-apply list type), which maps are atomic and which
//! maps honour `$retainKeys`. Built from the built-in catalogue (`builtin.rs`, which adds [`Schema::builtin`]), from a CRD's
//! OpenAPI v3 schema, or fully generic.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

/// How a strategic merge patch treats a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatchStrategy {
    /// The patch's list replaces the original list whole.
    Replace,
    /// Merge without a key: a set of scalars (union, order kept).
    MergeValues,
    /// Merge item by item, items matched on this field.
    MergeKey(String),
}

/// How server-side apply treats a list (`x-kubernetes-list-type`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ListType {
    /// Owned and replaced whole.
    Atomic,
    /// A set of scalars, owned per value.
    Set,
    /// An associative list: items identified by these key fields. `defaults` supplies a key
    /// field's value when an item omits it (e.g. `protocol: TCP` for ports), so an item written
    /// with and without the defaulted field is the same item.
    Map {
        keys: Vec<String>,
        defaults: Vec<(String, Value)>,
    },
}

#[derive(Debug)]
pub(crate) struct MapNode {
    pub(crate) fields: HashMap<String, Node>,
    /// The node of keys not listed in `fields` (additionalProperties, or unknown fields).
    pub(crate) values: Node,
    /// `x-kubernetes-map-type: atomic` / `+structType=atomic`: owned and replaced whole by apply.
    pub(crate) atomic: bool,
    /// The strategic merge `retainKeys` strategy: a `$retainKeys` directive is honoured here.
    pub(crate) retain_keys: bool,
}

#[derive(Debug)]
pub(crate) struct ListNode {
    pub(crate) strategy: PatchStrategy,
    pub(crate) list_type: ListType,
    pub(crate) item: Node,
}

/// One type node. Subtrees are reference counted so shared types (PodSpec, ObjectMeta) are
/// built once and reused by every kind that embeds them.
#[derive(Debug, Clone)]
pub(crate) enum Node {
    /// Nothing known: objects merge key by key (children unknown too), lists are atomic.
    Any,
    Map(Arc<MapNode>),
    List(Arc<ListNode>),
}

static ANY: Node = Node::Any;

impl Node {
    /// The node of an object field (unknown fields are `Any`).
    pub(crate) fn field(&self, name: &str) -> &Node {
        match self {
            Node::Map(m) => m.fields.get(name).unwrap_or(&m.values),
            _ => &ANY,
        }
    }

    /// The node of a list's items.
    pub(crate) fn item(&self) -> &Node {
        match self {
            Node::List(l) => &l.item,
            _ => &ANY,
        }
    }

    pub(crate) fn strategy(&self) -> &PatchStrategy {
        static REPLACE: PatchStrategy = PatchStrategy::Replace;
        match self {
            Node::List(l) => &l.strategy,
            _ => &REPLACE,
        }
    }

    pub(crate) fn list_type(&self) -> &ListType {
        static ATOMIC: ListType = ListType::Atomic;
        match self {
            Node::List(l) => &l.list_type,
            _ => &ATOMIC,
        }
    }

    pub(crate) fn map_atomic(&self) -> bool {
        matches!(self, Node::Map(m) if m.atomic)
    }

    /// Whether `$retainKeys` is honoured on this map. Unknown maps honour it too, so a
    /// generic schema behaves like kube-apiserver's directive handling.
    pub(crate) fn retain_keys(&self) -> bool {
        match self {
            Node::Map(m) => m.retain_keys,
            _ => true,
        }
    }
}

/// A merge schema: which list fields merge by key, as sets or atomically, which maps are atomic
/// and which honour `$retainKeys`. An owned tree; cheap to share behind `&'static` or `Arc`.
#[derive(Debug, Clone)]
pub struct Schema {
    pub(crate) root: Node,
}

static GENERIC: Schema = Schema { root: Node::Any };

impl Schema {
    /// Fully generic: maps merge recursively, every list atomic (replaced whole).
    pub fn generic() -> &'static Schema {
        &GENERIC
    }

    /// A schema from an OpenAPI v3 schema (a CRD version's `openAPIV3Schema`; an object that
    /// wraps it under `openAPIV3Schema` is accepted too). Honours `x-kubernetes-list-type`
    /// (`atomic`|`set`|`map`), `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`,
    /// `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`; unmarked lists are
    /// atomic. Root `metadata` (and that of `x-kubernetes-embedded-resource` objects) is
    /// ObjectMeta whatever the schema says. Without a patch strategy, strategic merge follows
    /// the list type: `map` merges on its first key, `set` as scalars, others replace.
    pub fn from_openapi(schema: &Value) -> Schema {
        let schema = schema.get("openAPIV3Schema").unwrap_or(schema);
        let root = with_object_meta(openapi_node(schema, 0));
        Schema { root }
    }
}

/// Deeper schemas are cut off (treated as `Any`) rather than risking the stack.
const MAX_OPENAPI_DEPTH: usize = 64;

fn openapi_node(s: &Value, depth: usize) -> Node {
    if depth > MAX_OPENAPI_DEPTH || !s.is_object() {
        return Node::Any;
    }
    let ty = s.get("type").and_then(Value::as_str);
    let patch_strategy: Vec<&str> = s
        .get("x-kubernetes-patch-strategy")
        .and_then(Value::as_str)
        .map(|p| p.split(',').map(str::trim).collect())
        .unwrap_or_default();
    let retain_keys = patch_strategy.contains(&"retainKeys");

    if ty == Some("array") || (ty.is_none() && s.get("items").is_some()) {
        let items = s.get("items").unwrap_or(&Value::Null);
        let mut item = openapi_node(items, depth + 1);
        if retain_keys {
            item = set_retain_keys(item);
        }
        let list_type = match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
            Some("set") => ListType::Set,
            Some("map") => {
                let keys: Vec<String> = s
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|ks| {
                        ks.iter()
                            .filter_map(|k| k.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                let defaults = keys
                    .iter()
                    .filter_map(|k| {
                        let d = items.get("properties")?.get(k)?.get("default")?;
                        Some((k.clone(), d.clone()))
                    })
                    .collect();
                if keys.is_empty() {
                    ListType::Atomic
                } else {
                    ListType::Map { keys, defaults }
                }
            }
            _ => ListType::Atomic,
        };
        let merge_key = s
            .get("x-kubernetes-patch-merge-key")
            .and_then(Value::as_str);
        let strategy = if patch_strategy.contains(&"merge") {
            match merge_key {
                Some(k) => PatchStrategy::MergeKey(k.to_string()),
                None => PatchStrategy::MergeValues,
            }
        } else if patch_strategy.is_empty() {
            match &list_type {
                ListType::Map { keys, .. } => PatchStrategy::MergeKey(keys[0].clone()),
                ListType::Set => PatchStrategy::MergeValues,
                ListType::Atomic => PatchStrategy::Replace,
            }
        } else {
            PatchStrategy::Replace
        };
        return Node::List(Arc::new(ListNode {
            strategy,
            list_type,
            item,
        }));
    }

    let props = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties");
    if ty == Some("object") || props.is_some() || additional.is_some() {
        let mut fields: HashMap<String, Node> = props
            .map(|p| {
                p.iter()
                    .map(|(k, v)| (k.clone(), openapi_node(v, depth + 1)))
                    .collect()
            })
            .unwrap_or_default();
        let values = match additional {
            Some(a) if a.is_object() => openapi_node(a, depth + 1),
            _ => Node::Any,
        };
        if s.get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool)
            == Some(true)
        {
            fields.insert("metadata".to_string(), object_meta());
        }
        let atomic = s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        return Node::Map(Arc::new(MapNode {
            fields,
            values,
            atomic,
            retain_keys,
        }));
    }
    Node::Any
}

fn set_retain_keys(node: Node) -> Node {
    match node {
        Node::Map(m) => Node::Map(Arc::new(MapNode {
            fields: m.fields.clone(),
            values: m.values.clone(),
            atomic: m.atomic,
            retain_keys: true,
        })),
        Node::Any => retain([]),
        other => other,
    }
}

/// Makes sure the root object's `metadata` is ObjectMeta.
fn with_object_meta(root: Node) -> Node {
    let (mut fields, values, atomic, retain_keys) = match root {
        Node::Map(m) => (m.fields.clone(), m.values.clone(), m.atomic, m.retain_keys),
        _ => (HashMap::new(), Node::Any, false, false),
    };
    fields.insert("metadata".to_string(), object_meta());
    Node::Map(Arc::new(MapNode {
        fields,
        values,
        atomic,
        retain_keys,
    }))
}

// ---- builders used by the built-in catalogue -------------------------------------------------

/// A granular object with the given special fields (others are `Any`).
pub(crate) fn obj<'a>(fields: impl IntoIterator<Item = (&'a str, Node)>) -> Node {
    Node::Map(Arc::new(MapNode {
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        values: Node::Any,
        atomic: false,
        retain_keys: false,
    }))
}

/// An object (struct or string map) owned and replaced whole by apply.
pub(crate) fn atomic() -> Node {
    Node::Map(Arc::new(MapNode {
        fields: HashMap::new(),
        values: Node::Any,
        atomic: true,
        retain_keys: false,
    }))
}

/// `obj` with the `retainKeys` strategy.
pub(crate) fn retain<'a>(fields: impl IntoIterator<Item = (&'a str, Node)>) -> Node {
    Node::Map(Arc::new(MapNode {
        fields: fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        values: Node::Any,
        atomic: false,
        retain_keys: true,
    }))
}

pub(crate) fn list(strategy: PatchStrategy, list_type: ListType, item: Node) -> Node {
    Node::List(Arc::new(ListNode {
        strategy,
        list_type,
        item,
    }))
}

/// The common case: strategic merge on `key`, apply map list keyed by `key` alone.
pub(crate) fn keyed(key: &str, item: Node) -> Node {
    list(
        PatchStrategy::MergeKey(key.to_string()),
        map_keys(&[key], &[]),
        item,
    )
}

pub(crate) fn merge_key(key: &str) -> PatchStrategy {
    PatchStrategy::MergeKey(key.to_string())
}

pub(crate) fn map_keys(keys: &[&str], defaults: &[(&str, &str)]) -> ListType {
    ListType::Map {
        keys: keys.iter().map(|k| k.to_string()).collect(),
        defaults: defaults
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    }
}

/// A list of scalars merged as a set by both strategic merge and apply (finalizers).
pub(crate) fn scalar_set() -> Node {
    list(PatchStrategy::MergeValues, ListType::Set, Node::Any)
}

/// ObjectMeta: ownerReferences keyed by uid, finalizers a set, managedFields atomic.
pub(crate) fn object_meta() -> Node {
    obj([
        ("ownerReferences", keyed("uid", atomic())),
        ("finalizers", scalar_set()),
        (
            "managedFields",
            list(PatchStrategy::Replace, ListType::Atomic, Node::Any),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at<'s>(schema: &'s Schema, path: &[&str]) -> &'s Node {
        let mut n = &schema.root;
        for p in path {
            n = if *p == "[]" { n.item() } else { n.field(p) };
        }
        n
    }

    #[test]
    fn builtin_catalogue_covers_the_served_kinds() {
        let required = [
            ("", "Pod"),
            ("", "PodTemplate"),
            ("", "Namespace"),
            ("", "ConfigMap"),
            ("", "Secret"),
            ("", "Service"),
            ("", "ServiceAccount"),
            ("", "PersistentVolumeClaim"),
            ("", "Event"),
            ("", "Node"),
            ("", "Endpoints"),
            ("apps", "Deployment"),
            ("apps", "StatefulSet"),
            ("apps", "DaemonSet"),
            ("apps", "ReplicaSet"),
            ("batch", "Job"),
            ("batch", "CronJob"),
            ("coordination.k8s.io", "Lease"),
            ("rbac.authorization.k8s.io", "Role"),
            ("rbac.authorization.k8s.io", "ClusterRole"),
            ("rbac.authorization.k8s.io", "RoleBinding"),
            ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
            ),
            (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
            ),
            // Issue 18's groups.
            ("autoscaling", "HorizontalPodAutoscaler"),
            ("policy", "PodDisruptionBudget"),
            ("networking.k8s.io", "Ingress"),
            ("networking.k8s.io", "IngressClass"),
            ("networking.k8s.io", "NetworkPolicy"),
            ("storage.k8s.io", "StorageClass"),
            ("storage.k8s.io", "CSIDriver"),
            ("storage.k8s.io", "CSINode"),
            ("storage.k8s.io", "VolumeAttachment"),
            ("scheduling.k8s.io", "PriorityClass"),
            ("discovery.k8s.io", "EndpointSlice"),
            ("node.k8s.io", "RuntimeClass"),
            ("apps", "ControllerRevision"),
        ];
        for (g, k) in required {
            let s = Schema::builtin(g, k).unwrap_or_else(|| panic!("{g}/{k} missing"));
            // ObjectMeta everywhere.
            assert_eq!(
                *at(s, &["metadata", "finalizers"]).list_type(),
                ListType::Set,
                "{g}/{k}"
            );
            assert_eq!(
                *at(s, &["metadata", "ownerReferences"]).strategy(),
                PatchStrategy::MergeKey("uid".into()),
                "{g}/{k}"
            );
            assert!(Schema::builtin_kinds().contains(&(g, k)));
        }
        // List semantics of issue 18's kinds (MERGE-KEYS.md facts).
        let hpa = Schema::builtin("autoscaling", "HorizontalPodAutoscaler").unwrap();
        assert_eq!(
            *at(hpa, &["status", "conditions"]).strategy(),
            PatchStrategy::MergeKey("type".into())
        );
        let csinode = Schema::builtin("storage.k8s.io", "CSINode").unwrap();
        assert_eq!(
            *at(csinode, &["spec", "drivers"]).strategy(),
            PatchStrategy::MergeKey("name".into())
        );
        let csidriver = Schema::builtin("storage.k8s.io", "CSIDriver").unwrap();
        assert_eq!(
            *at(csidriver, &["spec", "volumeLifecycleModes"]).list_type(),
            ListType::Set
        );
        assert!(Schema::builtin("core", "Pod").is_some());
        assert!(Schema::builtin("apps", "Pod").is_none());
        assert!(Schema::builtin("cluster.karmada.io", "Cluster").is_none());
    }

    #[test]
    fn pod_templates_nest() {
        let containers = |s: &Schema, path: &[&str]| at(s, path).strategy().clone();
        let by_name = PatchStrategy::MergeKey("name".into());
        let cronjob = Schema::builtin("batch", "CronJob").unwrap();
        assert_eq!(
            containers(
                cronjob,
                &[
                    "spec",
                    "jobTemplate",
                    "spec",
                    "template",
                    "spec",
                    "containers"
                ]
            ),
            by_name
        );
        assert_eq!(
            *at(
                cronjob,
                &[
                    "spec",
                    "jobTemplate",
                    "spec",
                    "template",
                    "metadata",
                    "finalizers"
                ]
            )
            .list_type(),
            ListType::Set
        );
        let sts = Schema::builtin("apps", "StatefulSet").unwrap();
        assert_eq!(
            *at(sts, &["spec", "volumeClaimTemplates"]).list_type(),
            ListType::Atomic
        );
        assert_eq!(
            *at(
                sts,
                &[
                    "spec",
                    "volumeClaimTemplates",
                    "[]",
                    "metadata",
                    "finalizers"
                ]
            )
            .list_type(),
            ListType::Set
        );
        let deploy = Schema::builtin("apps", "Deployment").unwrap();
        assert!(at(deploy, &["spec", "strategy"]).retain_keys());
        assert!(at(deploy, &["spec", "selector"]).map_atomic());
        assert!(at(deploy, &["spec", "template", "spec", "volumes", "[]"]).retain_keys());
        assert!(!at(deploy, &["spec", "template", "spec"]).retain_keys());
        let ports = at(
            deploy,
            &["spec", "template", "spec", "containers", "[]", "ports"],
        );
        assert_eq!(
            *ports.strategy(),
            PatchStrategy::MergeKey("containerPort".into())
        );
        assert!(
            matches!(ports.list_type(), ListType::Map { keys, .. } if keys == &["containerPort", "protocol"])
        );
        // Unlisted lists are atomic / replaced.
        let args = at(
            deploy,
            &["spec", "template", "spec", "containers", "[]", "args"],
        );
        assert_eq!(*args.strategy(), PatchStrategy::Replace);
        assert_eq!(*args.list_type(), ListType::Atomic);
        let job = Schema::builtin("batch", "Job").unwrap();
        let conditions = at(job, &["status", "conditions"]);
        assert_eq!(
            *conditions.strategy(),
            PatchStrategy::MergeKey("type".into())
        );
        assert_eq!(*conditions.list_type(), ListType::Atomic);
    }

    #[test]
    fn from_openapi_honours_extensions() {
        let s = Schema::from_openapi(&json!({"openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "a": {"type": "array", "items": {"type": "object"},
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"]},
                    "b": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "c": {"type": "array", "items": {"type": "string"}},
                    "d": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}, "proto": {"type": "string", "default": "TCP"}}},
                        "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "k",
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k", "proto"]},
                    "e": {"type": "object", "x-kubernetes-map-type": "atomic"},
                    "f": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"}},
                    "g": {"type": "object", "x-kubernetes-embedded-resource": true},
                    "h": {"type": "array", "items": {"type": "string"}, "x-kubernetes-patch-strategy": "merge"}
                }}
            }
        }}));
        let a = at(&s, &["spec", "a"]);
        assert!(matches!(a.list_type(), ListType::Map { keys, .. } if keys == &["name", "port"]));
        assert_eq!(*a.strategy(), PatchStrategy::MergeKey("name".into()));
        assert_eq!(*at(&s, &["spec", "b"]).list_type(), ListType::Set);
        assert_eq!(
            *at(&s, &["spec", "b"]).strategy(),
            PatchStrategy::MergeValues
        );
        assert_eq!(*at(&s, &["spec", "c"]).list_type(), ListType::Atomic);
        assert_eq!(*at(&s, &["spec", "c"]).strategy(), PatchStrategy::Replace);
        let d = at(&s, &["spec", "d"]);
        assert_eq!(*d.strategy(), PatchStrategy::MergeKey("k".into()));
        assert!(
            matches!(d.list_type(), ListType::Map { defaults, .. } if defaults == &[("proto".to_string(), json!("TCP"))])
        );
        assert!(at(&s, &["spec", "d", "[]"]).retain_keys());
        assert!(at(&s, &["spec", "e"]).map_atomic());
        assert_eq!(*at(&s, &["spec", "f", "anykey"]).list_type(), ListType::Set);
        assert_eq!(
            *at(&s, &["spec", "g", "metadata", "finalizers"]).list_type(),
            ListType::Set
        );
        assert_eq!(
            *at(&s, &["metadata", "finalizers"]).list_type(),
            ListType::Set
        );
        assert_eq!(
            *at(&s, &["spec", "h"]).strategy(),
            PatchStrategy::MergeValues
        );
        assert_eq!(*at(&s, &["spec", "h"]).list_type(), ListType::Atomic);
    }

    #[test]
    fn generic_schema() {
        let g = Schema::generic();
        assert_eq!(
            *at(g, &["metadata", "finalizers"]).list_type(),
            ListType::Atomic
        );
        assert_eq!(*at(g, &["spec", "x"]).strategy(), PatchStrategy::Replace);
        assert!(!at(g, &["spec"]).map_atomic());
        // A non-object schema still yields a usable schema.
        let s = Schema::from_openapi(&json!("nonsense"));
        assert_eq!(
            *at(&s, &["metadata", "finalizers"]).list_type(),
            ListType::Set
        );
    }
}
