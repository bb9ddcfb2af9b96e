//! The state behind a merged watch: every source's objects (the template store and each
//! member cluster), each source's position, and the merged items last emitted, so that a
//! change of one source becomes the merged event a client of the host sees.
//!
//! The view answers exactly what [`merge_list`](crate::list::merge_list) answers for the same
//! sources; events carry the stream position after the change, so a client resuming from an
//! event's object resumes from there, and a write with it is checked against the template's
//! own revision.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::clusters::ClusterFilter;
use crate::list::{Key, key_of, visible};
use crate::merge::{MemberObject, merge_item};
use crate::version::CompositeVersion;

/// Where objects come from.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// The host's template store.
    Template,
    /// A member cluster, by name.
    Member(String),
}

/// One change of a source.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceEvent {
    /// Added or modified.
    Upsert(Value),
    /// Deleted (the last state of the object; only its key is used).
    Deleted(Value),
}

/// The type of a merged watch event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Added,
    Modified,
    Deleted,
}

impl EventKind {
    /// The watch event `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Added => "ADDED",
            Self::Modified => "MODIFIED",
            Self::Deleted => "DELETED",
        }
    }
}

/// A change of the merged view.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedEvent {
    pub kind: EventKind,
    pub object: Value,
}

/// A merged item as last emitted.
#[derive(Debug, Clone)]
struct Shown {
    /// As [`merge_item`] returned it (its resourceVersion names the object revisions, so a
    /// change of any contributing object shows as a difference).
    merged: Value,
    /// The template object's own resourceVersion, for the events' composite version.
    template_rv: Option<String>,
}

/// The merged view of the sources of one watch.
#[derive(Debug, Clone)]
pub struct MergedView {
    filter: ClusterFilter,
    objects: BTreeMap<Source, BTreeMap<Key, Value>>,
    positions: BTreeMap<Source, String>,
    shown: BTreeMap<Key, Shown>,
}

impl MergedView {
    pub fn new(filter: ClusterFilter) -> Self {
        Self {
            filter,
            objects: BTreeMap::new(),
            positions: BTreeMap::new(),
            shown: BTreeMap::new(),
        }
    }

    /// Replaces a source's whole state (initial list, relist after a reconnect, a member
    /// joining) at position `rv`, returning the merged changes this causes in key order (none
    /// when `emit` is false, for the very first load).
    pub fn replace(
        &mut self,
        source: Source,
        objects: Vec<Value>,
        rv: String,
        emit: bool,
    ) -> Vec<MergedEvent> {
        let mut touched: BTreeSet<Key> = self
            .objects
            .get(&source)
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        let mut state = BTreeMap::new();
        if self.counts(&source) {
            for object in objects {
                if let Some(key) = key_of(&object) {
                    touched.insert(key.clone());
                    state.entry(key).or_insert(object);
                }
            }
        }
        self.objects.insert(source.clone(), state);
        // The batch's events carry the position before it, but the last carries the one
        // after: a client resuming from inside the batch goes back to before it (and gets it
        // again, or a 410) instead of skipping its rest.
        let mut events = self.refresh(touched);
        self.positions.insert(source, rv);
        self.restamp_last(&mut events);
        if emit { events } else { Vec::new() }
    }

    /// Applies one event of a source at position `rv`; returns the merged change, if the
    /// merged view changed: ADDED when the key becomes visible, DELETED when it stops being
    /// visible (carrying the last merged object), MODIFIED otherwise.
    pub fn apply(
        &mut self,
        source: &Source,
        event: SourceEvent,
        rv: String,
    ) -> Option<MergedEvent> {
        self.positions.insert(source.clone(), rv);
        if !self.counts(source) {
            return None;
        }
        let state = self.objects.entry(source.clone()).or_default();
        let key = match event {
            SourceEvent::Upsert(object) => {
                let key = key_of(&object)?;
                state.insert(key.clone(), object);
                key
            }
            SourceEvent::Deleted(object) => {
                let key = key_of(&object)?;
                state.remove(&key)?;
                key
            }
        };
        self.refresh(BTreeSet::from([key])).pop()
    }

    /// A source leaving (a member cluster removed): its contributions go; returns the merged
    /// changes in key order.
    pub fn remove_source(&mut self, source: &Source) -> Vec<MergedEvent> {
        let Some(state) = self.objects.remove(source) else {
            self.positions.remove(source);
            return Vec::new();
        };
        // As in `replace`: only the batch's last event carries the position after it.
        let mut events = self.refresh(state.into_keys().collect());
        self.positions.remove(source);
        self.restamp_last(&mut events);
        events
    }

    /// Gives the last event of a batch the current position (keeping its template revision).
    fn restamp_last(&self, events: &mut [MergedEvent]) {
        let Some(last) = events.last_mut() else {
            return;
        };
        let own = last
            .object
            .get("metadata")
            .and_then(|m| m.get("resourceVersion"))
            .and_then(Value::as_str)
            .and_then(|rv| CompositeVersion::parse(rv).ok())
            .and_then(|v| v.object);
        let mut version = self.position();
        version.object = own;
        if let Some(meta) = last
            .object
            .get_mut("metadata")
            .and_then(Value::as_object_mut)
        {
            meta.insert("resourceVersion".into(), Value::String(version.encode()));
        }
    }

    /// Records a source's position without a change (bookmarks).
    pub fn advance(&mut self, source: &Source, rv: String) {
        self.positions.insert(source.clone(), rv);
    }

    /// The stream's position: the template source's and every member source's, `object` None.
    pub fn position(&self) -> CompositeVersion {
        let mut version = CompositeVersion::default();
        for (source, rv) in &self.positions {
            match source {
                Source::Template => version.template = Some(rv.clone()),
                Source::Member(cluster) => {
                    version.members.insert(cluster.clone(), rv.clone());
                }
            }
        }
        version
    }

    /// All visible merged items sorted by key, each with the stream position as its
    /// resourceVersion (for the initial ADDED events of a watch without a resourceVersion).
    pub fn items(&self) -> Vec<Value> {
        self.shown.values().map(|s| self.stamped(s)).collect()
    }

    /// The sources the view has a position for.
    pub fn sources(&self) -> Vec<Source> {
        self.positions.keys().cloned().collect()
    }

    /// Whether a source's objects take part: members the filter does not allow are ignored,
    /// though their positions are kept.
    fn counts(&self, source: &Source) -> bool {
        match source {
            Source::Template => true,
            Source::Member(cluster) => self.filter.allows(cluster),
        }
    }

    /// Re-merges `keys` and returns the changes against what was shown, updating it.
    fn refresh(&mut self, keys: BTreeSet<Key>) -> Vec<MergedEvent> {
        let mut events = Vec::new();
        for key in keys {
            let now = self.merge_key(&key);
            let event = match (self.shown.remove(&key), now) {
                (None, None) => continue,
                (Some(before), None) => MergedEvent {
                    kind: EventKind::Deleted,
                    object: self.stamped(&before),
                },
                (before, Some(now)) => {
                    let kind = match &before {
                        None => EventKind::Added,
                        Some(b) if b.merged == now.merged => {
                            self.shown.insert(key, now);
                            continue;
                        }
                        Some(_) => EventKind::Modified,
                    };
                    let object = self.stamped(&now);
                    self.shown.insert(key, now);
                    MergedEvent { kind, object }
                }
            };
            events.push(event);
        }
        events
    }

    /// The merged item of `key` from the current state, when visible.
    fn merge_key(&self, key: &Key) -> Option<Shown> {
        let template = self.objects.get(&Source::Template).and_then(|o| o.get(key));
        let members: Vec<MemberObject<'_>> = self
            .objects
            .iter()
            .filter_map(|(source, objects)| match source {
                Source::Member(cluster) => Some(MemberObject::new(cluster, objects.get(key)?)),
                Source::Template => None,
            })
            .collect();
        if template.is_none() && members.is_empty() {
            return None;
        }
        if !visible(&self.filter, !members.is_empty()) {
            return None;
        }
        Some(Shown {
            merged: merge_item(template, &members),
            template_rv: template
                .and_then(|t| t.get("metadata").and_then(|m| m.get("resourceVersion")))
                .and_then(Value::as_str)
                .map(str::to_string),
        })
    }

    /// The merged item with the stream position (and the template's own revision) as its
    /// resourceVersion.
    fn stamped(&self, shown: &Shown) -> Value {
        let mut version = self.position();
        version.object = shown.template_rv.clone();
        let mut object = shown.merged.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(version.encode()));
        }
        object
    }
}

#[cfg(test)]
mod tests;
