//! A merged list: templates and every selected member's items joined by (namespace, name),
//! each key merged by [`merge_item`], in key order; and cutting it into pages.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_karmada_api::binding::AggregatedStatusItem;

use serde_json::Value;

use crate::clusters::ClusterFilter;
use crate::merge::{MemberObject, merge_item};

/// (namespace or "", name): the key items are joined and ordered by.
pub type Key = (String, String);

/// The key of an object, borrowed from it; None without a (non-empty, string) name.
fn key_ref(object: &Value) -> Option<(&str, &str)> {
    let meta = object.get("metadata")?;
    let name = meta.get("name")?.as_str().filter(|n| !n.is_empty())?;
    let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    Some((namespace, name))
}

/// The key of an object; None without a (non-empty, string) name.
pub fn key_of(object: &Value) -> Option<Key> {
    key_ref(object).map(|(namespace, name)| (namespace.to_string(), name.to_string()))
}

/// A member's object as a merged list reads it: owned, shared (`Arc`, from a cache, so a list
/// does not copy every member's objects), and possibly with the interpreter's reading of it
/// kept from when it was stored.
pub trait SourceObject {
    fn object(&self) -> &Value;
    /// The object's reflected status and health, when kept (see [`MemberObject::applied`]).
    fn applied(&self) -> Option<&AggregatedStatusItem> {
        None
    }
}

impl SourceObject for Value {
    fn object(&self) -> &Value {
        self
    }
}

impl<T: SourceObject + ?Sized> SourceObject for Arc<T> {
    fn object(&self) -> &Value {
        T::object(self)
    }
    fn applied(&self) -> Option<&AggregatedStatusItem> {
        T::applied(self)
    }
}

/// What a merged list is made of.
#[derive(Clone, Debug)]
pub struct Sources<T = Value> {
    /// From the template store (already filtered by selectors).
    pub templates: Vec<Value>,
    /// Cluster -> its items (already filtered).
    pub members: BTreeMap<String, Vec<T>>,
}

impl<T> Default for Sources<T> {
    fn default() -> Self {
        Self {
            templates: Vec::new(),
            members: BTreeMap::new(),
        }
    }
}

/// Merged items sorted by (namespace, name). With a restricted filter, an item appears only
/// when a selected member holds it (templates alone do not appear); members the filter does
/// not allow are ignored. Objects without a name are skipped; a key given twice by one source
/// counts once (the first).
pub fn merge_list<T: SourceObject>(sources: &Sources<T>, filter: &ClusterFilter) -> Vec<Value> {
    type Entry<'a> = (Option<&'a Value>, Vec<MemberObject<'a>>);
    // Keys borrowed from the objects: a list joins every member's copy of every item.
    let mut joined: BTreeMap<(&str, &str), Entry<'_>> = BTreeMap::new();
    for template in &sources.templates {
        if let Some(key) = key_ref(template) {
            let entry = joined.entry(key).or_default();
            entry.0.get_or_insert(template);
        }
    }
    for (cluster, items) in &sources.members {
        if !filter.allows(cluster) {
            continue;
        }
        for item in items {
            let object = item.object();
            if let Some(key) = key_ref(object) {
                joined.entry(key).or_default().1.push(MemberObject {
                    cluster,
                    object,
                    applied: item.applied(),
                });
            }
        }
    }
    joined
        .into_values()
        .filter(|(_, members)| visible(filter, !members.is_empty()))
        .map(|(template, members)| merge_item(template, &members))
        .collect()
}

/// Whether a key with (or without) a selected member holding it is part of the answer; a key
/// is only ever here because some source holds it.
pub(crate) fn visible(filter: &ClusterFilter, held_by_member: bool) -> bool {
    held_by_member || !filter.is_restricted()
}

/// One page of a merged list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Page {
    pub items: Vec<Value>,
    /// Key of the page's last item when more items remain (the continue token's key).
    pub last: Option<Key>,
    /// How many items remain after this page (`remainingItemCount`).
    pub remaining: usize,
}

/// One page: the items (sorted by key, as [`merge_list`] returns them) after `after`, at most
/// `limit` of them (`None` or 0: all).
pub fn page(items: Vec<Value>, limit: Option<usize>, after: Option<(&str, &str)>) -> Page {
    let mut rest: Vec<Value> = items
        .into_iter()
        .filter(|item| match (after, key_of(item)) {
            (None, _) => true,
            (Some((ns, name)), Some((ins, iname))) => (ins.as_str(), iname.as_str()) > (ns, name),
            (Some(_), None) => false,
        })
        .collect();
    let limit = limit.filter(|l| *l > 0).unwrap_or(rest.len());
    if rest.len() <= limit {
        return Page {
            items: rest,
            last: None,
            remaining: 0,
        };
    }
    let remaining = rest.split_off(limit);
    Page {
        last: rest.last().and_then(key_of),
        remaining: remaining.len(),
        items: rest,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clusters::split_selector;
    use crate::{CLUSTERS_ANNOTATION, merge::MemberObject};
    use flotilla_names::karmada::CLUSTER_NAME_LABEL;
    use serde_json::json;

    fn obj(ns: &str, name: &str, rv: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"namespace": ns, "name": name, "resourceVersion": rv}})
    }

    fn keys(items: &[Value]) -> Vec<String> {
        items
            .iter()
            .filter_map(key_of)
            .map(|(ns, n)| format!("{ns}/{n}"))
            .collect()
    }

    fn clusters(item: &Value) -> String {
        item.get("metadata")
            .and_then(|m| m.get("annotations"))
            .and_then(|a| a.get(CLUSTERS_ANNOTATION))
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_string()
    }

    fn sources() -> Sources {
        Sources {
            templates: vec![
                obj("b", "t-only", "1"),
                obj("a", "both", "2"),
                json!({"metadata": {}}),
            ],
            members: BTreeMap::from([
                (
                    "m2".to_string(),
                    vec![obj("a", "both", "20"), obj("", "cluster-wide", "21")],
                ),
                (
                    "m1".to_string(),
                    vec![
                        obj("a", "both", "10"),
                        obj("a", "m1-only", "11"),
                        obj("a", "", "12"),
                    ],
                ),
            ]),
        }
    }

    #[test]
    fn merge_list_table() {
        let k = CLUSTER_NAME_LABEL;
        // (selector, keys, clusters annotation per item)
        let table: Vec<(String, Vec<&str>, Vec<&str>)> = vec![
            (
                String::new(),
                vec!["/cluster-wide", "a/both", "a/m1-only", "b/t-only"],
                vec!["m2", "m1,m2", "m1", "-"],
            ),
            (
                format!("{k}=m1"),
                vec!["a/both", "a/m1-only"],
                vec!["m1", "m1"],
            ),
            (
                format!("{k}!=m1"),
                vec!["/cluster-wide", "a/both"],
                vec!["m2", "m2"],
            ),
            (format!("{k}=gone"), vec![], vec![]),
            (
                k.to_string(),
                vec!["/cluster-wide", "a/both", "a/m1-only"],
                vec!["m2", "m1,m2", "m1"],
            ),
        ];
        for (selector, want_keys, want_clusters) in table {
            let (filter, _) = split_selector(Some(&selector)).unwrap();
            let items = merge_list(&sources(), &filter);
            assert_eq!(keys(&items), want_keys, "{selector}");
            let got: Vec<String> = items.iter().map(clusters).collect();
            assert_eq!(got, want_clusters, "{selector}");
        }
    }

    #[test]
    fn merge_list_items_are_merge_item() {
        let s = sources();
        let items = merge_list(&s, &ClusterFilter::All);
        let both = merge_item(
            Some(&s.templates[1]),
            &[
                MemberObject::new("m1", &s.members["m1"][0]),
                MemberObject::new("m2", &s.members["m2"][0]),
            ],
        );
        assert_eq!(items[1], both);
        let single = &items[2];
        assert_eq!(single["metadata"]["labels"][CLUSTER_NAME_LABEL], "m1");
    }

    #[test]
    fn pages_table() {
        let items: Vec<Value> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| obj("ns", n, "1"))
            .collect();
        // (limit, after, page keys, last, remaining)
        type Case<'a> = (
            Option<usize>,
            Option<(&'a str, &'a str)>,
            Vec<&'a str>,
            Option<&'a str>,
            usize,
        );
        let table: Vec<Case<'_>> = vec![
            (None, None, vec!["a", "b", "c", "d", "e"], None, 0),
            (Some(0), None, vec!["a", "b", "c", "d", "e"], None, 0),
            (Some(2), None, vec!["a", "b"], Some("b"), 3),
            (Some(2), Some(("ns", "b")), vec!["c", "d"], Some("d"), 1),
            (Some(2), Some(("ns", "d")), vec!["e"], None, 0),
            (Some(5), None, vec!["a", "b", "c", "d", "e"], None, 0),
            (Some(4), None, vec!["a", "b", "c", "d"], Some("d"), 1),
            // A key that is not there (deleted since): resume after where it would be.
            (Some(2), Some(("ns", "bb")), vec!["c", "d"], Some("d"), 1),
            (None, Some(("ns", "e")), vec![], None, 0),
            (
                None,
                Some(("a", "zzz")),
                vec!["a", "b", "c", "d", "e"],
                None,
                0,
            ),
            (None, Some(("zz", "")), vec![], None, 0),
        ];
        for (limit, after, want, last, remaining) in table {
            let got = page(items.clone(), limit, after);
            let names: Vec<&str> = got
                .items
                .iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, want, "{limit:?} {after:?}");
            assert_eq!(
                got.last,
                last.map(|n| ("ns".to_string(), n.to_string())),
                "{limit:?} {after:?}"
            );
            assert_eq!(got.remaining, remaining, "{limit:?} {after:?}");
        }
    }

    #[test]
    fn keys_need_a_name() {
        let table = vec![
            (json!({"metadata": {"name": "x"}}), Some(("", "x"))),
            (
                json!({"metadata": {"name": "x", "namespace": "n"}}),
                Some(("n", "x")),
            ),
            (json!({"metadata": {"name": ""}}), None),
            (json!({"metadata": {"name": 3}}), None),
            (json!({}), None),
            (json!(null), None),
        ];
        for (object, want) in table {
            let want = want.map(|(a, b): (&str, &str)| (a.to_string(), b.to_string()));
            assert_eq!(key_of(&object), want, "{object}");
        }
    }
}
