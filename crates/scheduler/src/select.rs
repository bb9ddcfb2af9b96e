//! Scoring and selection: orders the feasible clusters (clusters the binding already uses
//! first, then by available replicas, then by the per-binding name order) and applies the
//! spread constraints (`cluster`, `region`, `zone`, `provider`, or a label) with their
//! minGroups/maxGroups.

use std::cmp::Ordering;
use std::collections::HashMap;

use flotilla_api::policy::{SpreadConstraint, SpreadFieldValue};

use crate::ScheduleError;
use crate::snapshot::ClusterSnapshot;

/// A cluster that passed the filters, with what scoring and assignment need.
#[derive(Clone, Copy, Debug)]
pub struct Candidate<'a> {
    /// The cluster.
    pub snap: &'a ClusterSnapshot,
    /// Replicas the binding has there now (`previous`), 0 if none.
    pub prev: i64,
    /// The cluster is in `previous` (even with 0 replicas).
    pub in_prev: bool,
    /// Replicas that still fit (after reservations); 0 when capacity does not matter.
    pub capacity: i64,
    /// Position in the per-binding name order (ties go to the lower rank).
    pub rank: u32,
}

impl Candidate<'_> {
    /// Replicas this cluster can hold for the binding: what it has plus what still fits.
    pub fn available(&self) -> i64 {
        self.capacity.saturating_add(self.prev)
    }
}

/// Score order: already used first, then more available replicas, then rank.
pub fn by_score(a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
    b.in_prev
        .cmp(&a.in_prev)
        .then_with(|| b.available().cmp(&a.available()))
        .then_with(|| a.rank.cmp(&b.rank))
}

/// What a spread constraint groups by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpreadKey<'p> {
    /// Each cluster is its own group.
    Cluster,
    /// A cluster field.
    Field(SpreadFieldValue),
    /// A cluster label.
    Label(&'p str),
}

impl<'p> SpreadKey<'p> {
    /// The key of a constraint (neither field nor label: `cluster`).
    pub fn of(c: &'p SpreadConstraint) -> SpreadKey<'p> {
        match (&c.spread_by_label, c.spread_by_field) {
            (Some(label), _) if !label.is_empty() => SpreadKey::Label(label),
            (_, Some(SpreadFieldValue::Cluster)) | (_, None) => SpreadKey::Cluster,
            (_, Some(field)) => SpreadKey::Field(field),
        }
    }

    /// The property's name, for messages.
    pub fn describe(&self) -> String {
        match self {
            SpreadKey::Cluster => "cluster".into(),
            SpreadKey::Field(SpreadFieldValue::Region) => "region".into(),
            SpreadKey::Field(SpreadFieldValue::Zone) => "zone".into(),
            SpreadKey::Field(SpreadFieldValue::Provider) => "provider".into(),
            SpreadKey::Field(SpreadFieldValue::Cluster) => "cluster".into(),
            SpreadKey::Label(l) => format!("label {l}"),
        }
    }

    /// The group a cluster belongs to; `None`: the cluster lacks the property (filtered).
    /// A cluster spanning several zones forms its own zone group.
    pub fn group_of<'c>(&self, cluster: &'c ClusterSnapshot) -> Option<GroupName<'c>> {
        match self {
            SpreadKey::Cluster | SpreadKey::Field(SpreadFieldValue::Cluster) => {
                Some(GroupName::One(&cluster.name))
            }
            SpreadKey::Field(SpreadFieldValue::Region) => {
                cluster.region.as_deref().map(GroupName::One)
            }
            SpreadKey::Field(SpreadFieldValue::Provider) => {
                cluster.provider.as_deref().map(GroupName::One)
            }
            SpreadKey::Field(SpreadFieldValue::Zone) => match cluster.zones.as_slice() {
                [] => None,
                [one] => Some(GroupName::One(one)),
                many => Some(GroupName::Many(many)),
            },
            SpreadKey::Label(l) => cluster.labels.get(*l).map(|v| GroupName::One(v)),
        }
    }
}

/// A group's identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupName<'c> {
    /// One value.
    One(&'c str),
    /// A multi-zone cluster's zone list.
    Many(&'c [String]),
}

fn min_max(c: &SpreadConstraint) -> (usize, usize) {
    let min = usize::try_from(c.min_groups.unwrap_or(1)).unwrap_or(0);
    let max = match c.max_groups {
        Some(m) if m > 0 => usize::try_from(m).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    (min, max)
}

fn total_available(cands: &[Candidate<'_>]) -> i64 {
    cands
        .iter()
        .fold(0i64, |acc, c| acc.saturating_add(c.available()))
}

/// Applies the spread constraints to the feasible clusters. `need`: replicas the selection
/// must be able to hold (Divided by capacity), or `None` when capacity does not matter.
pub fn select<'a>(
    mut cands: Vec<Candidate<'a>>,
    constraints: &[SpreadConstraint],
    need: Option<i64>,
) -> Result<Vec<Candidate<'a>>, ScheduleError> {
    if constraints.is_empty() {
        return Ok(cands);
    }
    cands.sort_by(by_score);
    let cluster_c = constraints
        .iter()
        .find(|c| SpreadKey::of(c) == SpreadKey::Cluster);
    let group_c = constraints
        .iter()
        .find(|c| SpreadKey::of(c) != SpreadKey::Cluster);
    let cluster_max = cluster_c.map_or(usize::MAX, |c| min_max(c).1);

    let mut chosen = match group_c {
        Some(g) => select_groups(&cands, g, cluster_c.is_some(), cluster_max, need)?,
        None => {
            if cands.len() > cluster_max {
                let mut top: Vec<Candidate<'a>> = cands[..cluster_max].to_vec();
                if need.is_some_and(|n| total_available(&top) < n) {
                    // The best-scored clusters cannot hold the replicas: take the largest.
                    let mut by_cap = cands.clone();
                    by_cap.sort_by(|a, b| {
                        b.available()
                            .cmp(&a.available())
                            .then_with(|| a.rank.cmp(&b.rank))
                    });
                    by_cap.truncate(cluster_max);
                    top = by_cap;
                }
                top
            } else {
                cands
            }
        }
    };
    if let Some(c) = cluster_c {
        let (min, max) = min_max(c);
        if chosen.len() < min {
            return Err(ScheduleError::SpreadConstraint {
                message: format!(
                    "the number of feasible clusters ({}) is less than spreadConstraint.minGroups ({min})",
                    chosen.len()
                ),
            });
        }
        chosen.truncate(max);
    }
    Ok(chosen)
}

/// Selection by a non-cluster property: the best groups (groups the binding uses first, then
/// by available replicas), and in them either all clusters or, with a cluster constraint,
/// the best cluster of each group first and then the best of the rest up to `cluster_max`.
fn select_groups<'a>(
    cands: &[Candidate<'a>],
    constraint: &SpreadConstraint,
    has_cluster_constraint: bool,
    cluster_max: usize,
    need: Option<i64>,
) -> Result<Vec<Candidate<'a>>, ScheduleError> {
    let key = SpreadKey::of(constraint);
    let (min, max) = min_max(constraint);
    // Groups in order of first appearance in score order; members stay in score order.
    let mut index: HashMap<GroupName<'a>, usize> = HashMap::new();
    let mut groups: Vec<Vec<Candidate<'a>>> = Vec::new();
    for c in cands {
        let Some(name) = key.group_of(c.snap) else {
            continue;
        };
        let i = *index.entry(name).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[i].push(*c);
    }
    if groups.len() < min {
        return Err(ScheduleError::SpreadConstraint {
            message: format!(
                "the number of feasible {} groups ({}) is less than spreadConstraint.minGroups ({min})",
                key.describe(),
                groups.len()
            ),
        });
    }
    let mut order: Vec<(bool, i64, usize)> = groups
        .iter()
        .enumerate()
        .map(|(i, g)| (g.iter().any(|c| c.in_prev), total_available(g), i))
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)));
    let take = max.min(groups.len());
    let covered = |o: &[(bool, i64, usize)]| {
        o.iter()
            .take(take)
            .fold(0i64, |acc, g| acc.saturating_add(g.1))
    };
    if need.is_some_and(|n| covered(&order) < n) {
        // Keeping the used groups first leaves too little room: go by capacity alone.
        order.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
    }
    let picked: Vec<usize> = order.iter().take(take).map(|g| g.2).collect();
    if !has_cluster_constraint {
        let mut out: Vec<Candidate<'a>> = picked.iter().flat_map(|g| groups[*g].clone()).collect();
        out.sort_by(by_score);
        return Ok(out);
    }
    let mut out: Vec<Candidate<'a>> = picked.iter().map(|g| groups[*g][0]).collect();
    let mut rest: Vec<Candidate<'a>> = picked
        .iter()
        .flat_map(|g| groups[*g][1..].iter().copied())
        .collect();
    rest.sort_by(by_score);
    let room = cluster_max.saturating_sub(out.len());
    out.extend(rest.into_iter().take(room));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(name: &str, region: &str) -> ClusterSnapshot {
        ClusterSnapshot {
            name: name.into(),
            region: Some(region.into()),
            ..ClusterSnapshot::default()
        }
    }

    fn spread(field: SpreadFieldValue, min: i32, max: i32) -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: Some(field),
            spread_by_label: None,
            min_groups: Some(min),
            max_groups: Some(max),
        }
    }

    fn names(c: &[Candidate<'_>]) -> Vec<String> {
        let mut v: Vec<String> = c.iter().map(|c| c.snap.name.clone()).collect();
        v.sort();
        v
    }

    #[test]
    fn region_spread_table() {
        let snaps = [
            snap("a1", "eu"),
            snap("a2", "eu"),
            snap("b1", "us"),
            snap("c1", "ap"),
        ];
        let caps = [10, 9, 5, 1];
        let cands: Vec<Candidate<'_>> = snaps
            .iter()
            .zip(caps)
            .enumerate()
            .map(|(i, (s, cap))| Candidate {
                snap: s,
                prev: 0,
                in_prev: false,
                capacity: cap,
                rank: i as u32,
            })
            .collect();
        let region = |min, max| spread(SpreadFieldValue::Region, min, max);
        let cluster = |min, max| spread(SpreadFieldValue::Cluster, min, max);
        type Case = (
            Vec<SpreadConstraint>,
            Option<i64>,
            Result<Vec<&'static str>, ()>,
        );
        let cases: Vec<Case> = vec![
            (vec![region(1, 1)], None, Ok(vec!["a1", "a2"])),
            (vec![region(2, 2)], None, Ok(vec!["a1", "a2", "b1"])),
            (
                vec![region(2, 2), cluster(2, 2)],
                None,
                Ok(vec!["a1", "b1"]),
            ),
            (
                vec![region(2, 2), cluster(1, 3)],
                None,
                Ok(vec!["a1", "a2", "b1"]),
            ),
            (vec![region(4, 4)], None, Err(())),
            (vec![cluster(1, 2)], None, Ok(vec!["a1", "a2"])),
            (vec![cluster(5, 6)], None, Err(())),
            (vec![cluster(1, 1)], Some(10), Ok(vec!["a1"])),
        ];
        for (i, (cons, need, want)) in cases.into_iter().enumerate() {
            let got = select(cands.clone(), &cons, need);
            match want {
                Ok(w) => assert_eq!(names(&got.unwrap()), w, "case {i}"),
                Err(()) => assert!(
                    matches!(got, Err(ScheduleError::SpreadConstraint { .. })),
                    "case {i}: {got:?}"
                ),
            }
        }
    }

    #[test]
    fn previous_clusters_are_preferred_unless_capacity_forbids() {
        let snaps = [snap("a", "eu"), snap("b", "us")];
        let mk = |i: usize, cap: i64, prev: bool| Candidate {
            snap: &snaps[i],
            prev: 0,
            in_prev: prev,
            capacity: cap,
            rank: i as u32,
        };
        let cons = [spread(SpreadFieldValue::Cluster, 1, 1)];
        let got = select(vec![mk(0, 10, false), mk(1, 5, true)], &cons, None).unwrap();
        assert_eq!(names(&got), ["b"]);
        let got = select(vec![mk(0, 10, false), mk(1, 5, true)], &cons, Some(8)).unwrap();
        assert_eq!(names(&got), ["a"]);
    }
}
