//! Tests of the merged view: event rules, positions, equality with `merge_list`, and a
//! randomized run against a replayed event stream.

use std::collections::BTreeMap;

use flotilla_names::karmada::CLUSTER_NAME_LABEL;
use serde_json::{Value, json};

use super::*;
use crate::clusters::split_selector;
use crate::list::{Sources, merge_list};

fn member(name: &str) -> Source {
    Source::Member(name.to_string())
}

fn deploy(name: &str, rv: u64, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"namespace": "d", "name": name, "resourceVersion": rv.to_string(), "generation": 1},
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
                   "availableReplicas": replicas, "observedGeneration": 1}})
}

fn without_rv(mut v: Value) -> Value {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
    v
}

fn strip(items: Vec<Value>) -> Vec<Value> {
    items.into_iter().map(without_rv).collect()
}

fn version_of(v: &Value) -> CompositeVersion {
    CompositeVersion::parse(
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default(),
    )
    .unwrap_or_default()
}

fn kind(e: &Option<MergedEvent>) -> Option<&'static str> {
    e.as_ref().map(|e| e.kind.as_str())
}

#[test]
fn events_follow_visibility() {
    let k = CLUSTER_NAME_LABEL;
    let all = ClusterFilter::All;
    let (only_m1, _) = split_selector(Some(&format!("{k}=m1"))).unwrap();
    // (filter, steps: (source, upsert?, rv, expected event kind))
    type Step = (Source, bool, u64, Option<&'static str>);
    let table: Vec<(&ClusterFilter, Vec<Step>)> = vec![
        (
            &all,
            vec![
                (Source::Template, true, 1, Some("ADDED")),
                (member("m1"), true, 2, Some("MODIFIED")),
                (member("m2"), true, 3, Some("MODIFIED")),
                (Source::Template, false, 4, Some("MODIFIED")),
                (member("m1"), false, 5, Some("MODIFIED")),
                (member("m2"), false, 6, Some("DELETED")),
                // Deleting what is not there changes nothing.
                (member("m2"), false, 7, None),
            ],
        ),
        (
            &only_m1,
            vec![
                (Source::Template, true, 1, None),
                (member("m2"), true, 2, None),
                (member("m1"), true, 3, Some("ADDED")),
                (Source::Template, true, 4, Some("MODIFIED")),
                (member("m2"), false, 5, None),
                (member("m1"), false, 6, Some("DELETED")),
                (Source::Template, false, 7, None),
            ],
        ),
    ];
    for (filter, steps) in table {
        let mut view = MergedView::new(filter.clone());
        for (i, (source, upsert, rv, want)) in steps.into_iter().enumerate() {
            let object = deploy("web", rv, 2);
            let event = if upsert {
                SourceEvent::Upsert(object)
            } else {
                SourceEvent::Deleted(object)
            };
            let got = view.apply(&source, event, format!("p{rv}"));
            assert_eq!(kind(&got), want, "{filter:?} step {i}");
        }
    }
}

#[test]
fn unchanged_objects_emit_nothing() {
    let mut view = MergedView::new(ClusterFilter::All);
    let o = deploy("web", 1, 2);
    assert!(
        view.apply(&member("m1"), SourceEvent::Upsert(o.clone()), "1".into())
            .is_some()
    );
    assert!(
        view.apply(&member("m1"), SourceEvent::Upsert(o.clone()), "2".into())
            .is_none()
    );
    // A relist with the same objects emits nothing either.
    assert!(
        view.replace(member("m1"), vec![o], "3".into(), true)
            .is_empty()
    );
    assert_eq!(view.position().members["m1"], "3");
}

#[test]
fn events_carry_the_stream_position_and_the_template_revision() {
    let mut view = MergedView::new(ClusterFilter::All);
    view.replace(
        Source::Template,
        vec![deploy("web", 7, 3)],
        "100".into(),
        false,
    );
    view.replace(member("m1"), vec![], "50".into(), false);
    view.advance(&member("m2"), "60".into());
    let event = view
        .apply(
            &member("m1"),
            SourceEvent::Upsert(deploy("web", 51, 3)),
            "51".into(),
        )
        .unwrap();
    assert_eq!(event.kind, EventKind::Modified);
    let v = version_of(&event.object);
    assert_eq!(v.template.as_deref(), Some("100"));
    assert_eq!(v.template_object(), Some("7"));
    assert_eq!(
        v.members,
        BTreeMap::from([
            ("m1".to_string(), "51".to_string()),
            ("m2".to_string(), "60".to_string())
        ])
    );
    let mut position = v.clone();
    position.object = None;
    assert_eq!(view.position(), position);
    assert_eq!(
        view.sources(),
        vec![Source::Template, member("m1"), member("m2")]
    );

    // DELETED carries the last merged object, stamped with the position after the change.
    let gone = view
        .apply(
            &Source::Template,
            SourceEvent::Deleted(deploy("web", 7, 3)),
            "101".into(),
        )
        .unwrap();
    assert_eq!(gone.kind, EventKind::Modified);
    assert_eq!(gone.object["metadata"]["labels"][CLUSTER_NAME_LABEL], "m1");
    let gone = view
        .apply(
            &member("m1"),
            SourceEvent::Deleted(json!({"metadata": {"namespace": "d", "name": "web"}})),
            "52".into(),
        )
        .unwrap();
    assert_eq!(gone.kind, EventKind::Deleted);
    assert_eq!(gone.object["status"]["replicas"], 3);
    let v = version_of(&gone.object);
    assert_eq!(
        (v.template.as_deref(), v.object.as_deref()),
        (Some("101"), None)
    );
    assert_eq!(v.members["m1"], "52");

    // Items carry the stream position too.
    view.apply(
        &Source::Template,
        SourceEvent::Upsert(deploy("web", 9, 3)),
        "102".into(),
    );
    let items = view.items();
    assert_eq!(items.len(), 1);
    assert_eq!(version_of(&items[0]).template.as_deref(), Some("102"));
    assert_eq!(version_of(&items[0]).object.as_deref(), Some("9"));
}

#[test]
fn remove_source_takes_its_contributions() {
    let mut view = MergedView::new(ClusterFilter::All);
    view.replace(Source::Template, vec![deploy("a", 1, 1)], "1".into(), false);
    view.replace(
        member("m1"),
        vec![deploy("a", 2, 1), deploy("b", 3, 1)],
        "2".into(),
        false,
    );
    assert_eq!(view.items().len(), 2);
    let events = view.remove_source(&member("m1"));
    let kinds: Vec<(&str, &str)> = events
        .iter()
        .map(|e| {
            (
                e.kind.as_str(),
                e.object["metadata"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(kinds, vec![("MODIFIED", "a"), ("DELETED", "b")]);
    // Resuming from the first event of the batch must not skip the second: it still names
    // m1 at its old position; the last event carries the position without m1.
    let first = version_of(&events[0].object);
    assert_eq!(first.members.get("m1").map(String::as_str), Some("2"));
    let last = version_of(&events[1].object);
    assert!(!last.members.contains_key("m1"));
    assert_eq!(view.sources(), vec![Source::Template]);
    assert!(view.remove_source(&member("m1")).is_empty());
    // Joining again: a replace with emit.
    let events = view.replace(member("m1"), vec![deploy("b", 4, 1)], "3".into(), true);
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind, EventKind::Added);
}

#[test]
fn a_loaded_view_equals_merge_list() {
    let k = CLUSTER_NAME_LABEL;
    let sources = Sources {
        templates: vec![deploy("a", 1, 1), deploy("b", 2, 2), deploy("t", 3, 1)],
        members: BTreeMap::from([
            (
                "m1".to_string(),
                vec![deploy("a", 10, 1), deploy("c", 11, 1)],
            ),
            (
                "m2".to_string(),
                vec![deploy("a", 20, 2), deploy("b", 21, 2)],
            ),
            ("m3".to_string(), vec![deploy("d", 30, 4)]),
        ]),
    };
    for selector in [
        String::new(),
        format!("{k}=m1"),
        format!("{k} notin (m1)"),
        format!("!{k}"),
    ] {
        let (filter, _) = split_selector(Some(&selector)).unwrap();
        let mut view = MergedView::new(filter.clone());
        view.replace(
            Source::Template,
            sources.templates.clone(),
            "1".into(),
            false,
        );
        for (cluster, items) in &sources.members {
            view.replace(member(cluster), items.clone(), "1".into(), false);
        }
        assert_eq!(
            strip(view.items()),
            strip(merge_list(&sources, &filter)),
            "{selector}"
        );
    }
}

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

/// Applies a merged event to a client's map, checking it makes sense there.
fn replay(client: &mut BTreeMap<Key, Value>, event: MergedEvent, step: usize) {
    let key = key_of(&event.object).unwrap_or_default();
    let had = client.contains_key(&key);
    match event.kind {
        EventKind::Added => assert!(!had, "step {step}: ADDED {key:?} twice"),
        EventKind::Modified => assert!(had, "step {step}: MODIFIED unknown {key:?}"),
        EventKind::Deleted => assert!(had, "step {step}: DELETED unknown {key:?}"),
    }
    if event.kind == EventKind::Deleted {
        client.remove(&key);
    } else {
        client.insert(key, without_rv(event.object));
    }
}

#[test]
fn randomized_view_matches_merge_list_and_its_events() {
    let k = CLUSTER_NAME_LABEL;
    let names = ["a", "b", "c", "d", "e", "f"];
    let clusters = ["m1", "m2", "m3"];
    for (seed, selector) in [
        (1u64, String::new()),
        (7, format!("{k} in (m1,m3)")),
        (42, format!("{k}!=m2")),
    ] {
        let (filter, _) = split_selector(Some(&selector)).unwrap();
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut view = MergedView::new(filter.clone());
        // The truth: per source, key -> object.
        let mut truth: BTreeMap<Source, BTreeMap<String, Value>> = BTreeMap::new();
        let mut client: BTreeMap<Key, Value> = BTreeMap::new();
        let mut rv = 0u64;
        let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
        let mut largest = 0;
        for step in 0..400 {
            rv += 1;
            let source = match rng.below(4) {
                0 => Source::Template,
                i => member(clusters[i - 1]),
            };
            let name = names[rng.below(names.len())];
            let before = view.position();
            let events: Vec<MergedEvent> = match rng.below(20) {
                // Now and then a whole relist or a member leaving.
                0 => {
                    let mut objects = Vec::new();
                    for n in names {
                        if rng.below(2) == 0 {
                            objects.push(deploy(n, rv, i64::try_from(rng.below(4)).unwrap_or(0)));
                        }
                    }
                    let state = truth.entry(source.clone()).or_default();
                    state.clear();
                    for o in &objects {
                        state.insert(
                            o["metadata"]["name"].as_str().unwrap_or("").to_string(),
                            o.clone(),
                        );
                    }
                    view.replace(source.clone(), objects, rv.to_string(), true)
                }
                1 if source != Source::Template => {
                    truth.remove(&source);
                    view.remove_source(&source)
                }
                2 => {
                    view.advance(&source, rv.to_string());
                    vec![]
                }
                i if i < 12 => {
                    let object = deploy(name, rv, i64::try_from(rng.below(4)).unwrap_or(0));
                    truth
                        .entry(source.clone())
                        .or_default()
                        .insert(name.to_string(), object.clone());
                    view.apply(&source, SourceEvent::Upsert(object), rv.to_string())
                        .into_iter()
                        .collect()
                }
                _ => {
                    let last = truth.get_mut(&source).and_then(|s| s.remove(name));
                    let object = last.unwrap_or_else(|| deploy(name, rv, 0));
                    view.apply(&source, SourceEvent::Deleted(object), rv.to_string())
                        .into_iter()
                        .collect()
                }
            };
            let count = events.len();
            for (i, event) in events.into_iter().enumerate() {
                *seen.entry(event.kind.as_str()).or_insert(0usize) += 1;
                // Only a batch's last event carries the position after it; the others the
                // position before, so resuming from inside a batch never skips its rest.
                let position = if i + 1 == count {
                    view.position()
                } else {
                    before.clone()
                };
                let v = version_of(&event.object);
                assert_eq!(
                    (&v.template, &v.members),
                    (&position.template, &position.members),
                    "step {step}"
                );
                replay(&mut client, event, step);
            }
            let sources = Sources {
                templates: truth
                    .get(&Source::Template)
                    .map(|s| s.values().cloned().collect())
                    .unwrap_or_default(),
                members: truth
                    .iter()
                    .filter_map(|(s, objects)| match s {
                        Source::Member(c) => Some((c.clone(), objects.values().cloned().collect())),
                        Source::Template => None,
                    })
                    .collect(),
            };
            let want = strip(merge_list(&sources, &filter));
            assert_eq!(
                strip(view.items()),
                want,
                "{selector} step {step}: view vs merge_list"
            );
            let replayed: Vec<Value> = client.values().cloned().collect();
            assert_eq!(
                replayed, want,
                "{selector} step {step}: replayed events vs merge_list"
            );
            largest = largest.max(want.len());
        }
        // The run exercised every kind of event and more than a trivial view.
        for kind in ["ADDED", "MODIFIED", "DELETED"] {
            assert!(
                seen.get(kind).is_some_and(|n| *n > 10),
                "{selector}: {seen:?}"
            );
        }
        assert!(largest >= 4, "{selector}: at most {largest} items");
    }
}
