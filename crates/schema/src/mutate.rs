//! The two mutations a custom resource goes through before validation: pruning fields the schema
//! does not declare, then filling `default`s where fields are absent (or null and not nullable).

use serde_json::Value;

use crate::schema::{Additional, META_KEYS, Node};
use crate::value::{field, index};

/// Removes undeclared fields below `node`, recording their paths (relative to `path`).
pub(crate) fn prune_node(
    node: &Node,
    v: &mut Value,
    path: &str,
    root: bool,
    out: &mut Vec<String>,
) {
    match v {
        Value::Object(map) => {
            let mut unknown = Vec::new();
            for (k, child) in map.iter_mut() {
                let child_path = field(path, k);
                let is_meta = META_KEYS.contains(&k.as_str());
                if root && is_meta {
                    // apiVersion/kind are type information and metadata is ObjectMeta: the
                    // server owns them whatever the CRD schema says.
                    continue;
                }
                if let Some(p) = node.properties.get(k) {
                    prune_node(p, child, &child_path, false, out);
                } else if node.embedded && is_meta {
                    continue;
                } else {
                    match &node.additional {
                        Additional::Schema(a) => prune_node(a, child, &child_path, false, out),
                        Additional::Any => {}
                        Additional::None => {
                            if !node.preserve_unknown {
                                unknown.push(k.clone());
                                out.push(child_path);
                            }
                        }
                    }
                }
            }
            if !unknown.is_empty() {
                map.retain(|k, _| !unknown.contains(k));
            }
        }
        Value::Array(list) => {
            if let Some(items) = &node.items {
                for (i, item) in list.iter_mut().enumerate() {
                    prune_node(items, item, &index(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

/// Applies defaults below `node`. A default is deep-copied into place and then defaulted itself,
/// so defaults nested inside a defaulted object apply too.
pub(crate) fn default_node(node: &Node, v: &mut Value, root: bool) {
    match v {
        Value::Object(map) => {
            let mut drop_nulls = Vec::new();
            for (k, p) in &node.properties {
                if root && k == "metadata" {
                    continue;
                }
                match map.get_mut(k) {
                    None => {
                        if let Some(d) = &p.default {
                            map.insert(k.clone(), d.clone());
                        }
                    }
                    Some(existing) if existing.is_null() && !p.nullable => match &p.default {
                        Some(d) => *existing = d.clone(),
                        // A null where null is not allowed and nothing replaces it means
                        // "unset": drop it rather than fail validation.
                        None => drop_nulls.push(k.clone()),
                    },
                    Some(_) => {}
                }
            }
            if !drop_nulls.is_empty() {
                map.retain(|k, _| !drop_nulls.contains(k));
            }
            for (k, child) in map.iter_mut() {
                if root && k == "metadata" {
                    continue;
                }
                if let Some(p) = node.properties.get(k) {
                    default_node(p, child, false);
                } else if let Additional::Schema(a) = &node.additional {
                    default_node(a, child, false);
                }
            }
        }
        Value::Array(list) => {
            if let Some(items) = &node.items {
                for item in list.iter_mut() {
                    if item.is_null()
                        && !items.nullable
                        && let Some(d) = &items.default
                    {
                        *item = d.clone();
                    }
                    default_node(items, item, false);
                }
            }
        }
        _ => {}
    }
}
