//! The owner graph: every object the collector watches, keyed by uid, with the uids of its
//! owners and dependents. Pure (no IO): watch events go in, the work they make goes out.
//!
//! ```text
//!   owner uid ──dependents──▶ {dependent uids}          observed node: we saw the object
//!   dependent ──owners──────▶ [OwnerRef{uid, block}]    virtual node:  only referenced
//! ```
//!
//! A virtual node stands for an owner the watches have not shown (not yet listed, deleted
//! while the collector was down, a wrong uid, an unwatched kind); a dependent that points
//! to one is queued so a live read decides. A deleted object with dependents stays as a
//! virtual node until the last dependent lets go of it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use kube::discovery::ApiResource;

use crate::decide::{DependentView, FINALIZER_FOREGROUND, FINALIZER_ORPHAN};

/// One watched resource (at the version the collector watches it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub api: ApiResource,
    pub namespaced: bool,
}

impl Resource {
    /// `plural.group` (`configmaps` for the core group), for logs and errors.
    pub fn display(&self) -> String {
        if self.api.group.is_empty() {
            self.api.plural.clone()
        } else {
            format!("{}.{}", self.api.plural, self.api.group)
        }
    }
}

/// One owner reference, as far as the graph cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerRef {
    pub api_version: String,
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub block_owner_deletion: bool,
}

/// What the graph keeps of an observed object.
#[derive(Debug, Clone)]
pub struct ObjectInfo {
    pub resource: Arc<Resource>,
    pub namespace: Option<String>,
    pub name: String,
    pub uid: String,
    pub owners: Vec<OwnerRef>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    pub finalizers: Vec<String>,
}

impl ObjectInfo {
    /// Being deleted in the foreground: waits for its blocking dependents.
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.finalizers.iter().any(|f| f == FINALIZER_FOREGROUND)
    }

    /// Being deleted with its dependents orphaned.
    pub fn orphaning(&self) -> bool {
        self.deleting && self.finalizers.iter().any(|f| f == FINALIZER_ORPHAN)
    }

    /// `namespace/name` or `name`, for logs.
    pub fn key(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// A unit of work for the collector's workers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Work {
    /// Look at this object: collect it if its owners are gone, or (if it is deleting in the
    /// foreground) its blocking dependents.
    AttemptToDelete(String),
    /// Orphan this owner's dependents, then remove its `orphan` finalizer.
    Orphan(String),
}

#[derive(Debug, Default)]
struct Node {
    /// Boxed: the map's table holds a slot per node and grows by doubling, so at thousands of
    /// members (a Cluster, its Secret and its namespace each) inline objects left most of a
    /// large table empty but paid for.
    object: Option<Box<ObjectInfo>>,
    dependents: HashSet<String>,
}

/// The owner graph.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    observed: usize,
}

impl Graph {
    pub fn new() -> Self {
        Self::default()
    }

    /// Objects seen through the watches (virtual nodes not counted).
    pub fn observed(&self) -> usize {
        self.observed
    }

    /// The observed object with this uid.
    pub fn get(&self, uid: &str) -> Option<&ObjectInfo> {
        self.nodes.get(uid).and_then(|n| n.object.as_deref())
    }

    /// The observed dependents of `uid`.
    pub fn dependents(&self, uid: &str) -> Vec<&ObjectInfo> {
        self.nodes
            .get(uid)
            .map(|n| n.dependents.iter().filter_map(|d| self.get(d)).collect())
            .unwrap_or_default()
    }

    /// Whether anything (observed) names `uid` as owner.
    pub fn has_dependents(&self, uid: &str) -> bool {
        !self.dependents(uid).is_empty()
    }

    /// The dependents of `owner` as the foreground step sees them.
    pub fn dependent_views(&self, owner: &str) -> Vec<DependentView> {
        self.dependents(owner)
            .into_iter()
            .map(|d| DependentView {
                uid: d.uid.clone(),
                blocks: d
                    .owners
                    .iter()
                    .any(|o| o.uid == owner && o.block_owner_deletion),
                deleting_dependents: d.deleting_dependents(),
            })
            .collect()
    }

    /// The uids of the observed objects of `resource`.
    pub fn uids_of(&self, resource: &Resource) -> Vec<String> {
        self.nodes
            .iter()
            .filter_map(|(uid, n)| {
                n.object
                    .as_deref()
                    .filter(|o| *o.resource == *resource)
                    .map(|_| uid.clone())
            })
            .collect()
    }

    /// Whether `uid` may need the collector: it is deleting in the foreground, or one of its
    /// owners is not observed where the reference points (virtual, another namespace) or is
    /// itself deleting in the foreground. Everything else is left alone without a live read.
    pub fn needs_attention(&self, uid: &str) -> bool {
        let Some(item) = self.get(uid) else {
            return false;
        };
        if item.deleting_dependents() {
            return true;
        }
        if item.deleting {
            return false;
        }
        item.owners.iter().any(|o| match self.get(&o.uid) {
            None => true,
            Some(owner) => {
                owner.deleting_dependents()
                    || (owner.resource.namespaced && owner.namespace != item.namespace)
            }
        })
    }

    /// An object was added or changed: returns the work it makes.
    pub fn upsert(&mut self, info: ObjectInfo) -> Vec<Work> {
        let uid = info.uid.clone();
        let mut work = Vec::new();
        let old = self
            .nodes
            .get(&uid)
            .and_then(|n| n.object.as_deref().cloned());
        let old_owners: Vec<OwnerRef> = old.as_ref().map(|o| o.owners.clone()).unwrap_or_default();
        let owners_changed = old.is_none() || old_owners != info.owners;
        let old_uids: HashSet<&str> = old_owners.iter().map(|o| o.uid.as_str()).collect();
        let new_uids: HashSet<&str> = info.owners.iter().map(|o| o.uid.as_str()).collect();
        for removed in old_uids.difference(&new_uids) {
            self.unlink(removed, &uid);
        }
        for added in new_uids.difference(&old_uids) {
            self.nodes
                .entry((*added).to_string())
                .or_default()
                .dependents
                .insert(uid.clone());
        }
        if owners_changed {
            // An owner deleting in the foreground may have just lost a blocking dependent
            // (reference removed or no longer blocking).
            for o in &old_owners {
                if self
                    .get(&o.uid)
                    .is_some_and(ObjectInfo::deleting_dependents)
                {
                    work.push(Work::AttemptToDelete(o.uid.clone()));
                }
            }
        }
        let was_orphaning = old.as_ref().is_some_and(ObjectInfo::orphaning);
        let was_deleting_dependents = old.as_ref().is_some_and(ObjectInfo::deleting_dependents);
        let node = self.nodes.entry(uid.clone()).or_default();
        if node.object.is_none() {
            self.observed += 1;
        }
        let (orphaning, deleting_dependents) = (info.orphaning(), info.deleting_dependents());
        node.object = Some(Box::new(info));
        if orphaning && !was_orphaning {
            work.push(Work::Orphan(uid.clone()));
        }
        if deleting_dependents && !was_deleting_dependents {
            for d in &node.dependents {
                work.push(Work::AttemptToDelete(d.clone()));
            }
            work.push(Work::AttemptToDelete(uid.clone()));
        }
        if owners_changed && self.needs_attention(&uid) {
            work.push(Work::AttemptToDelete(uid));
        }
        dedup(work)
    }

    /// An object was deleted: returns the work it makes (its dependents are looked at, and
    /// owners waiting for it in the foreground).
    pub fn remove(&mut self, uid: &str) -> Vec<Work> {
        let mut work = Vec::new();
        let Some(node) = self.nodes.get_mut(uid) else {
            return work;
        };
        let Some(info) = node.object.take() else {
            return work;
        };
        self.observed = self.observed.saturating_sub(1);
        let dependents: Vec<String> = node.dependents.iter().cloned().collect();
        if dependents.is_empty() {
            self.nodes.remove(uid);
        }
        for d in dependents {
            work.push(Work::AttemptToDelete(d));
        }
        for o in &info.owners {
            self.unlink(&o.uid, uid);
            if self
                .get(&o.uid)
                .is_some_and(ObjectInfo::deleting_dependents)
            {
                work.push(Work::AttemptToDelete(o.uid.clone()));
            }
        }
        dedup(work)
    }

    /// Drops `dependent` from `owner`'s dependents (and a virtual owner left with none).
    fn unlink(&mut self, owner: &str, dependent: &str) {
        if let Some(n) = self.nodes.get_mut(owner) {
            n.dependents.remove(dependent);
            if n.object.is_none() && n.dependents.is_empty() {
                self.nodes.remove(owner);
            }
        }
    }
}

fn dedup(work: Vec<Work>) -> Vec<Work> {
    let mut seen = HashSet::new();
    work.into_iter()
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm() -> Arc<Resource> {
        Arc::new(Resource {
            api: ApiResource {
                group: String::new(),
                version: "v1".into(),
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                plural: "configmaps".into(),
            },
            namespaced: true,
        })
    }

    fn obj(uid: &str, owners: &[(&str, bool)]) -> ObjectInfo {
        ObjectInfo {
            resource: cm(),
            namespace: Some("default".into()),
            name: format!("n-{uid}"),
            uid: uid.into(),
            owners: owners
                .iter()
                .map(|(u, block)| OwnerRef {
                    api_version: "v1".into(),
                    kind: "ConfigMap".into(),
                    name: format!("n-{u}"),
                    uid: (*u).into(),
                    block_owner_deletion: *block,
                })
                .collect(),
            deleting: false,
            finalizers: vec![],
        }
    }

    fn deleting(mut o: ObjectInfo, finalizer: &str) -> ObjectInfo {
        o.deleting = true;
        o.finalizers = vec![finalizer.into()];
        o
    }

    fn atd(uid: &str) -> Work {
        Work::AttemptToDelete(uid.into())
    }

    #[test]
    fn a_dependent_of_an_unseen_owner_is_queued_and_quiet_once_the_owner_is_seen() {
        let mut g = Graph::new();
        assert_eq!(g.upsert(obj("d", &[("o", false)])), vec![atd("d")]);
        assert!(g.needs_attention("d"));
        assert_eq!(g.upsert(obj("o", &[])), vec![]);
        assert!(!g.needs_attention("d"));
        assert_eq!(g.observed(), 2);
        // A status-only update of the dependent makes no work.
        assert_eq!(g.upsert(obj("d", &[("o", false)])), vec![]);
    }

    #[test]
    fn deleting_an_owner_queues_its_dependents_and_keeps_a_virtual_node() {
        let mut g = Graph::new();
        g.upsert(obj("o", &[]));
        g.upsert(obj("d1", &[("o", false)]));
        g.upsert(obj("d2", &[("o", false), ("p", false)]));
        let mut work = g.remove("o");
        work.sort_by_key(|w| format!("{w:?}"));
        assert_eq!(work, vec![atd("d1"), atd("d2")]);
        assert!(g.needs_attention("d1"));
        assert_eq!(g.observed(), 2);
        // Once the dependents are gone the virtual owner goes too.
        g.remove("d1");
        g.remove("d2");
        assert!(g.nodes.is_empty(), "{:?}", g.nodes);
        assert_eq!(g.observed(), 0);
    }

    #[test]
    fn foreground_deletion_queues_the_owner_and_its_dependents() {
        let mut g = Graph::new();
        g.upsert(obj("o", &[]));
        g.upsert(obj("d", &[("o", true)]));
        let mut work = g.upsert(deleting(obj("o", &[]), FINALIZER_FOREGROUND));
        work.sort_by_key(|w| format!("{w:?}"));
        assert_eq!(work, vec![atd("d"), atd("o")]);
        assert!(g.needs_attention("d"));
        assert_eq!(
            g.dependent_views("o"),
            vec![DependentView {
                uid: "d".into(),
                blocks: true,
                deleting_dependents: false
            }]
        );
        // The blocking dependent going (or dropping its reference) wakes the owner.
        assert_eq!(g.remove("d"), vec![atd("o")]);
        assert!(g.dependent_views("o").is_empty());
    }

    #[test]
    fn dropping_a_reference_wakes_a_waiting_owner() {
        let mut g = Graph::new();
        g.upsert(deleting(obj("o", &[]), FINALIZER_FOREGROUND));
        g.upsert(obj("d", &[("o", true), ("p", false)]));
        g.upsert(obj("p", &[]));
        assert_eq!(g.upsert(obj("d", &[("p", false)])), vec![atd("o")]);
        assert!(g.dependents("o").is_empty());
    }

    #[test]
    fn orphan_finalizer_queues_orphaning_once() {
        let mut g = Graph::new();
        g.upsert(obj("o", &[]));
        let o = deleting(obj("o", &[]), FINALIZER_ORPHAN);
        assert_eq!(g.upsert(o.clone()), vec![Work::Orphan("o".into())]);
        assert_eq!(g.upsert(o), vec![]);
    }

    #[test]
    fn an_owner_in_another_namespace_does_not_count() {
        let mut g = Graph::new();
        let mut o = obj("o", &[]);
        o.namespace = Some("other".into());
        g.upsert(o);
        g.upsert(obj("d", &[("o", false)]));
        assert!(g.needs_attention("d"));
        assert_eq!(g.uids_of(&cm()).len(), 2);
    }
}
