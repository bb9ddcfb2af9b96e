//! Scoring and selection: orders the feasible clusters (clusters the binding already uses
//! first, then by available replicas, then by the per-binding name order) and applies the
//! spread constraints (`cluster`, `region`, `zone`, `provider`, or a label) with their
//! minGroups/maxGroups, choosing groups the way Karmada's spread-constraint selection does
//! (fewest groups that fit, best-ranked first) but capacity-aware; see [`select`].
//! The bounded combination search lives in the `search` submodule.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use flotilla_karmada_api::policy::{SpreadConstraint, SpreadFieldValue};

use crate::ScheduleError;
use crate::snapshot::ClusterSnapshot;

mod search;

use search::{Item, Outcome, Targets};

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

impl SpreadKey<'_> {
    /// Which non-cluster constraint drives group selection when several are given: the
    /// coarsest, provider > region > zone > label (lower is coarser).
    fn precedence(&self) -> u8 {
        match self {
            SpreadKey::Field(SpreadFieldValue::Provider) => 0,
            SpreadKey::Field(SpreadFieldValue::Region) => 1,
            SpreadKey::Field(SpreadFieldValue::Zone) => 2,
            SpreadKey::Label(_) => 3,
            SpreadKey::Cluster | SpreadKey::Field(SpreadFieldValue::Cluster) => 4,
        }
    }
}

/// The order used inside selection: score, then cluster name (ranks are distinct for real
/// bindings; the name keeps equal ranks deterministic whatever the input order).
fn score_order(a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
    by_score(a, b).then_with(|| a.snap.name.cmp(&b.snap.name))
}

/// More available replicas first, then score order.
fn room_order(a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
    b.available()
        .cmp(&a.available())
        .then_with(|| score_order(a, b))
}

fn min_max(c: &SpreadConstraint) -> (usize, usize) {
    let min = usize::try_from(c.min_groups.unwrap_or(1)).unwrap_or(0);
    let max = match c.max_groups {
        Some(m) if m > 0 => usize::try_from(m).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    (min, max)
}

fn room(cands: &[Candidate<'_>]) -> i128 {
    cands.iter().map(|c| i128::from(c.available())).sum()
}

fn spread_error(message: String) -> ScheduleError {
    ScheduleError::SpreadConstraint { message }
}

/// `lo..=hi` for messages.
fn span(lo: usize, hi: usize) -> String {
    if lo == hi {
        hi.to_string()
    } else {
        format!("{lo} to {hi}")
    }
}

/// The cluster constraint's bounds (0..=unbounded without one).
#[derive(Clone, Copy, Debug)]
struct ClusterBounds {
    min: usize,
    max: usize,
}

/// Applies the spread constraints to the feasible clusters. `need`: replicas the selection
/// must be able to hold (Divided by capacity), or `None` when capacity does not matter.
///
/// - `cluster` alone: the best-scored `maxGroups` clusters; when they cannot hold `need`, the
///   first set of `maxGroups` clusters in score order (lexicographically) that can.
/// - Otherwise one non-cluster constraint selects groups: the coarsest, provider > region >
///   zone > label (Karmada only supports region). Groups are ranked like clusters: used by
///   the binding first, then by available replicas, then by their best cluster's score
///   position. The chosen set is the smallest number of groups within
///   `minGroups..=maxGroups` (and at most the cluster `maxGroups`, since every chosen group
///   contributes a cluster, unless `minGroups` itself is more: then one cluster per group,
///   as Karmada) that holds `need` and has at least the cluster `minGroups`
///   clusters; among sets of that size, the first in rank order. The search is bounded
///   (a visit budget caps it).
/// - The other non-cluster constraints are checked on the result: too few groups is an
///   error; too many are trimmed to their `maxGroups` (keeping the best-ranked groups) when
///   the trimmed selection still meets the other bounds and `need`, and kept otherwise.
/// - With a `cluster` constraint the clusters of the chosen groups are capped at its
///   `maxGroups`: one cluster per chosen group (and per group of the other constraints) first,
///   then the best-scored of the rest; by available replicas instead when that cannot hold
///   `need`.
///
/// When even every feasible cluster together cannot hold `need`, selection does not fail:
/// it keeps the groups with the most room and leaves the shortfall to the assignment
/// (reported as Unschedulable, as without spread constraints).
pub fn select<'a>(
    mut cands: Vec<Candidate<'a>>,
    constraints: &[SpreadConstraint],
    need: Option<i64>,
) -> Result<Vec<Candidate<'a>>, ScheduleError> {
    if constraints.is_empty() {
        return Ok(cands);
    }
    cands.sort_by(score_order);
    let bounds = match constraints
        .iter()
        .find(|c| SpreadKey::of(c) == SpreadKey::Cluster)
    {
        Some(c) => {
            let (min, max) = min_max(c);
            if min > max {
                return Err(spread_error(format!(
                    "cluster spreadConstraint.minGroups ({min}) exceeds its maxGroups ({max})"
                )));
            }
            ClusterBounds { min, max }
        }
        None => ClusterBounds {
            min: 0,
            max: usize::MAX,
        },
    };
    let mut keyed: Vec<(SpreadKey<'_>, &SpreadConstraint)> = constraints
        .iter()
        .map(|c| (SpreadKey::of(c), c))
        .filter(|(k, _)| *k != SpreadKey::Cluster)
        .collect();
    keyed.sort_by_key(|(k, _)| k.precedence());
    let need = need.map(i128::from).filter(|n| *n > 0);
    let reachable = need.is_none_or(|n| room(&cands) >= n);
    let chosen = match keyed.split_first() {
        None => select_clusters(cands, bounds, need, reachable)?,
        Some((primary, others)) => {
            select_groups(&cands, *primary, others, bounds, need, reachable)?
        }
    };
    if chosen.len() < bounds.min {
        return Err(spread_error(format!(
            "the number of feasible clusters ({}) is less than spreadConstraint.minGroups ({})",
            chosen.len(),
            bounds.min
        )));
    }
    Ok(chosen)
}

/// Only a `cluster` constraint: `maxGroups` clusters (all when there are fewer).
fn select_clusters<'a>(
    cands: Vec<Candidate<'a>>,
    b: ClusterBounds,
    need: Option<i128>,
    reachable: bool,
) -> Result<Vec<Candidate<'a>>, ScheduleError> {
    if cands.len() <= b.max {
        return Ok(cands);
    }
    let k = b.max;
    let Some(target) = need.filter(|_| reachable) else {
        let mut top = cands;
        if need.is_some() {
            // Hopeless anyway: the most room, for the assignment to report the shortfall.
            top.sort_by(room_order);
            top.truncate(k);
            top.sort_by(score_order);
        } else {
            top.truncate(k);
        }
        return Ok(top);
    };
    // Clusters as one-cluster groups: the capacity-only search never backtracks.
    let items: Vec<Item> = cands
        .iter()
        .map(|c| Item {
            cap: i128::from(c.available()),
            count: 1,
        })
        .collect();
    let t = Targets {
        lo: k,
        hi: k,
        cap: target,
        count: 0,
    };
    match search::search(&items, &t, &mut |_| true) {
        Outcome::Found(set) => Ok(set.iter().map(|i| cands[*i]).collect()),
        Outcome::Exhausted | Outcome::GaveUp => {
            let (caps, _) = search::sorted_prefixes(&items);
            let best = caps[k];
            Err(spread_error(format!(
                "no {k} clusters (cluster spreadConstraint.maxGroups) can hold {target} replicas: \
                 the {k} with the most room hold {best}, {} short",
                target - best
            )))
        }
    }
}

/// A group of clusters sharing a property value.
#[derive(Clone, Debug)]
struct Group<'a> {
    name: GroupName<'a>,
    /// In score order.
    members: Vec<Candidate<'a>>,
    in_prev: bool,
    room: i128,
}

/// The groups of `cands` (in score order) by `key`, best first: used by the binding, then
/// more room, then the position of their best cluster. Clusters lacking the property are
/// left out.
fn group_by<'a>(cands: &[Candidate<'a>], key: SpreadKey<'_>) -> Vec<Group<'a>> {
    let mut index: HashMap<GroupName<'a>, usize> = HashMap::new();
    let mut groups: Vec<Group<'a>> = Vec::new();
    for c in cands {
        let Some(name) = key.group_of(c.snap) else {
            continue;
        };
        let i = *index.entry(name).or_insert_with(|| {
            groups.push(Group {
                name,
                members: Vec::new(),
                in_prev: false,
                room: 0,
            });
            groups.len() - 1
        });
        let g = &mut groups[i];
        g.members.push(*c);
        g.in_prev |= c.in_prev;
        g.room += i128::from(c.available());
    }
    // Stable: equal groups keep the order of their best cluster.
    groups.sort_by(|a, b| b.in_prev.cmp(&a.in_prev).then(b.room.cmp(&a.room)));
    groups
}

/// Distinct groups of `key` among `cands`.
fn count_groups(cands: &[Candidate<'_>], key: SpreadKey<'_>) -> usize {
    cands
        .iter()
        .filter_map(|c| key.group_of(c.snap))
        .collect::<HashSet<_>>()
        .len()
}

/// At most `max` clusters of `pool`: in `order`, first one cluster of each group of each key
/// in `keys` (so every group stays represented while room lasts), then the rest.
fn pick<'a>(
    pool: &[Candidate<'a>],
    keys: &[SpreadKey<'_>],
    max: usize,
    order: fn(&Candidate<'_>, &Candidate<'_>) -> Ordering,
) -> Vec<Candidate<'a>> {
    let mut sorted = pool.to_vec();
    sorted.sort_by(order);
    if sorted.len() <= max {
        return sorted;
    }
    let mut taken = vec![false; sorted.len()];
    let mut out: Vec<Candidate<'a>> = Vec::with_capacity(max);
    for key in keys {
        let mut seen: HashSet<GroupName<'_>> =
            out.iter().filter_map(|c| key.group_of(c.snap)).collect();
        for (i, c) in sorted.iter().enumerate() {
            if out.len() >= max {
                break;
            }
            if !taken[i] && key.group_of(c.snap).is_some_and(|g| seen.insert(g)) {
                taken[i] = true;
                out.push(*c);
            }
        }
    }
    for (i, c) in sorted.iter().enumerate() {
        if out.len() >= max {
            break;
        }
        if !taken[i] {
            out.push(*c);
        }
    }
    out
}

/// The most replicas `pool` can hold within `max` clusters keeping one per `key` group.
fn capped_room(pool: &[Candidate<'_>], key: SpreadKey<'_>, max: usize) -> i128 {
    if pool.len() <= max {
        room(pool)
    } else {
        // One per group by room, then the largest others: optimal for a single key.
        room(&pick(pool, &[key], max, room_order))
    }
}

/// Selection by the non-cluster constraint `primary`, checked against `others`.
fn select_groups<'a>(
    cands: &[Candidate<'a>],
    primary: (SpreadKey<'_>, &SpreadConstraint),
    others: &[(SpreadKey<'_>, &SpreadConstraint)],
    b: ClusterBounds,
    need: Option<i128>,
    reachable: bool,
) -> Result<Vec<Candidate<'a>>, ScheduleError> {
    let (key, constraint) = primary;
    let (min, max) = min_max(constraint);
    let what = key.describe();
    let groups = group_by(cands, key);
    let n = groups.len();
    if n < min {
        return Err(spread_error(format!(
            "the number of feasible {what} groups ({n}) is less than spreadConstraint.minGroups ({min})"
        )));
    }
    let lo = min.max(1);
    // Every chosen group gives a cluster: when this constraint's minGroups asks for more
    // groups than the cluster maxGroups allows clusters, Karmada still takes one cluster per
    // group (its cluster bound only caps what is added after them).
    let b = ClusterBounds {
        min: b.min,
        max: b.max.max(lo),
    };
    let hi = max.min(n).min(b.max);
    if lo > hi {
        return Err(spread_error(format!(
            "{what} spreadConstraint.minGroups ({min}) exceeds its maxGroups ({max})"
        )));
    }
    let items: Vec<Item> = groups
        .iter()
        .map(|g| Item {
            cap: g.room,
            count: g.members.len(),
        })
        .collect();
    let pool_of = |set: &[usize]| -> Vec<Candidate<'a>> {
        let mut pool: Vec<Candidate<'a>> = set
            .iter()
            .flat_map(|i| groups[*i].members.iter().copied())
            .collect();
        pool.sort_by(score_order);
        pool
    };
    let target = need.filter(|_| reachable);
    let set = match target {
        None if need.is_some() => {
            // Hopeless anyway: the `hi` groups with the most room (for the assignment to
            // report the shortfall), unless they lack the clusters the cluster bound asks for.
            let mut top: Vec<usize> = (0..n).collect();
            top.sort_by(|x, y| items[*y].cap.cmp(&items[*x].cap).then(x.cmp(y)));
            top.truncate(hi);
            top.sort_unstable();
            if top.iter().map(|i| items[*i].count).sum::<usize>() >= b.min {
                top
            } else {
                find_set(&items, lo, hi, 0, b, &what, &mut |_| true)?
            }
        }
        _ => {
            let cap = target.unwrap_or(0);
            let room_ok = |p: &[Candidate<'_>]| cap == 0 || capped_room(p, key, b.max) >= cap;
            // The other constraints' minGroups steer the search too; when no set meets them,
            // the best set without them is taken and the check below names the shortfall.
            let spans_others = |p: &[Candidate<'_>]| {
                others
                    .iter()
                    .all(|(k, c)| count_groups(p, *k) >= min_max(c).0)
            };
            let mut strict = |set: &[usize]| {
                let p = pool_of(set);
                room_ok(&p) && spans_others(&p)
            };
            let mut loose = |set: &[usize]| room_ok(&pool_of(set));
            match find_set(&items, lo, hi, cap, b, &what, &mut strict) {
                Ok(set) => set,
                Err(_) if !others.is_empty() => {
                    find_set(&items, lo, hi, cap, b, &what, &mut loose)?
                }
                Err(e) => return Err(e),
            }
        }
    };
    let mut pool = pool_of(&set);
    let cap = target.unwrap_or(0);
    // A trimmed pool must keep `lo` primary groups, the cluster minGroups and the room.
    let fits = |p: &[Candidate<'_>]| {
        count_groups(p, key) >= lo
            && p.len() >= b.min
            && (cap == 0 || capped_room(p, key, b.max) >= cap)
    };
    for (skey, sc) in others {
        let (smin, smax) = min_max(sc);
        pool.retain(|c| skey.group_of(c.snap).is_some());
        let sgroups = group_by(&pool, *skey);
        if sgroups.len() < smin {
            return Err(secondary_short(&what, *skey, sgroups.len(), smin));
        }
        if sgroups.len() <= smax {
            continue;
        }
        let by_rank: Vec<usize> = (0..sgroups.len()).collect();
        let mut by_room = by_rank.clone();
        by_room.sort_by(|x, y| sgroups[*y].room.cmp(&sgroups[*x].room).then(x.cmp(y)));
        for order in [by_rank, by_room] {
            let keep: HashSet<GroupName<'_>> =
                order.iter().take(smax).map(|i| sgroups[*i].name).collect();
            let trimmed: Vec<Candidate<'a>> = pool
                .iter()
                .filter(|c| skey.group_of(c.snap).is_some_and(|g| keep.contains(&g)))
                .copied()
                .collect();
            if fits(&trimmed) {
                pool = trimmed;
                break;
            }
        }
    }
    let keys: Vec<SpreadKey<'_>> = std::iter::once(key)
        .chain(others.iter().map(|(k, _)| *k))
        .collect();
    let mut out = pick(&pool, &keys, b.max, score_order);
    if cap > 0 && room(&out) < cap {
        let fallbacks = [
            pick(&pool, &keys, b.max, room_order),
            pick(&pool, &[key], b.max, room_order),
        ];
        if let Some(f) = fallbacks.into_iter().find(|f| room(f) >= cap) {
            out = f;
        }
    }
    out.sort_by(score_order);
    for (skey, sc) in others {
        let (smin, _) = min_max(sc);
        let got = count_groups(&out, *skey);
        if got < smin {
            return Err(secondary_short(&what, *skey, got, smin));
        }
    }
    Ok(out)
}

fn secondary_short(primary: &str, key: SpreadKey<'_>, got: usize, min: usize) -> ScheduleError {
    spread_error(format!(
        "the clusters selected by {primary} span {got} {} groups, fewer than its \
         spreadConstraint.minGroups ({min})",
        key.describe()
    ))
}

/// Runs the group search and turns a failure into a message naming the shortfall.
fn find_set(
    items: &[Item],
    lo: usize,
    hi: usize,
    cap: i128,
    b: ClusterBounds,
    what: &str,
    accept: &mut dyn FnMut(&[usize]) -> bool,
) -> Result<Vec<usize>, ScheduleError> {
    let t = Targets {
        lo,
        hi,
        cap,
        count: b.min,
    };
    let range = span(lo, hi);
    match search::search(items, &t, accept) {
        Outcome::Found(set) => Ok(set),
        Outcome::Exhausted => {
            let (caps, counts) = search::sorted_prefixes(items);
            let message = if caps[hi] < cap {
                format!(
                    "no {range} {what} groups can hold {cap} replicas: the {hi} with the most \
                     room hold {}, {} short",
                    caps[hi],
                    cap - caps[hi]
                )
            } else if counts[hi] < b.min as i128 {
                format!(
                    "no {range} {what} groups have the {} clusters of the cluster \
                     spreadConstraint.minGroups: the {hi} largest have {}",
                    b.min, counts[hi]
                )
            } else {
                format!(
                    "no {range} {what} groups can hold {cap} replicas in at most {} clusters \
                     (cluster spreadConstraint.maxGroups)",
                    b.max
                )
            };
            Err(spread_error(message))
        }
        Outcome::GaveUp => {
            // Last resort: the `hi` groups with the most room.
            let mut top: Vec<usize> = (0..items.len()).collect();
            top.sort_by(|x, y| items[*y].cap.cmp(&items[*x].cap).then(x.cmp(y)));
            top.truncate(hi);
            top.sort_unstable();
            let room: i128 = top.iter().map(|i| items[*i].cap).sum();
            let count: usize = top.iter().map(|i| items[*i].count).sum();
            if room >= cap && count >= b.min && accept(&top) {
                return Ok(top);
            }
            Err(spread_error(format!(
                "no {range} {what} groups holding {cap} replicas with at least {} clusters found \
             within {} combinations",
                b.min,
                search::VISIT_BUDGET
            )))
        }
    }
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

    /// (name, properties, capacity, in previous). Properties: `r=REGION z=ZONE p=PROVIDER
    /// l=KEY:VALUE`, space-separated.
    type Row = (String, &'static str, i64, bool);

    fn row(name: &str, props: &'static str, cap: i64, prev: bool) -> Row {
        (name.to_string(), props, cap, prev)
    }

    fn fleet(rows: &[Row]) -> Vec<ClusterSnapshot> {
        rows.iter()
            .map(|(name, props, _, _)| {
                let mut s = ClusterSnapshot {
                    name: name.clone(),
                    ..ClusterSnapshot::default()
                };
                for p in props.split_whitespace() {
                    let (k, v) = p.split_once('=').unwrap();
                    match k {
                        "r" => s.region = Some(v.into()),
                        "z" => s.zones.push(v.into()),
                        "p" => s.provider = Some(v.into()),
                        "l" => {
                            let (lk, lv) = v.split_once(':').unwrap();
                            s.labels.insert(lk.into(), lv.into());
                        }
                        _ => panic!("bad property {p}"),
                    }
                }
                s
            })
            .collect()
    }

    /// Runs `select` on `rows` (ranks follow the name order); names in output order, or the
    /// error message.
    fn run(
        rows: &[Row],
        cons: &[SpreadConstraint],
        need: Option<i64>,
    ) -> Result<Vec<String>, String> {
        let snaps = fleet(rows);
        let mut by_name: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        by_name.sort_unstable();
        let cands: Vec<Candidate<'_>> = snaps
            .iter()
            .zip(rows)
            .map(|(s, (name, _, cap, prev))| Candidate {
                snap: s,
                prev: 0,
                in_prev: *prev,
                capacity: *cap,
                rank: by_name.iter().position(|n| n == name).unwrap() as u32,
            })
            .collect();
        match select(cands, cons, need) {
            Ok(c) => Ok(c.iter().map(|c| c.snap.name.clone()).collect()),
            Err(ScheduleError::SpreadConstraint { message }) => Err(message),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }

    fn sorted(r: Result<Vec<String>, String>) -> Result<Vec<String>, String> {
        r.map(|mut v| {
            v.sort();
            v
        })
    }

    fn label(key: &str, min: i32, max: i32) -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: None,
            spread_by_label: Some(key.into()),
            min_groups: Some(min),
            max_groups: Some(max),
        }
    }

    type Expect = Result<&'static [&'static str], &'static str>;

    fn check(rows: &[Row], cases: Vec<(Vec<SpreadConstraint>, Option<i64>, Expect)>) {
        for (i, (cons, need, want)) in cases.into_iter().enumerate() {
            let got = sorted(run(rows, &cons, need));
            let want = want
                .map(|w| w.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .map_err(str::to_string);
            assert_eq!(got, want, "case {i}: {cons:?} need {need:?}");
        }
    }

    const R: SpreadFieldValue = SpreadFieldValue::Region;
    const Z: SpreadFieldValue = SpreadFieldValue::Zone;
    const P: SpreadFieldValue = SpreadFieldValue::Provider;
    const C: SpreadFieldValue = SpreadFieldValue::Cluster;

    #[test]
    fn group_combinations_beyond_the_greedy_pick() {
        // The binding uses eu and us (small); ap and sa have the room.
        let rows = [
            row("e1", "r=eu", 3, true),
            row("u1", "r=us", 2, true),
            row("a1", "r=ap", 9, false),
            row("s1", "r=sa", 8, false),
        ];
        check(
            &rows,
            vec![
                // The used regions hold it: kept.
                (vec![spread(R, 2, 2)], Some(5), Ok(&["e1", "u1"])),
                // eu+us cannot hold 12; eu+ap can (keeps a used region; was ap+sa).
                (vec![spread(R, 2, 2)], Some(12), Ok(&["a1", "e1"])),
                (vec![spread(R, 2, 2)], Some(17), Ok(&["a1", "s1"])),
                (
                    vec![spread(R, 2, 2)],
                    Some(18),
                    Err(
                        "no 2 region groups can hold 18 replicas: the 2 with the most room \
                         hold 17, 1 short",
                    ),
                ),
                // All clusters together cannot hold it: the most room, the assignment reports.
                (vec![spread(R, 2, 2)], Some(23), Ok(&["a1", "s1"])),
                // Between minGroups and maxGroups: as few groups as fit.
                (vec![spread(R, 2, 3)], None, Ok(&["e1", "u1"])),
                (vec![spread(R, 2, 3)], Some(12), Ok(&["a1", "e1"])),
                (vec![spread(R, 2, 3)], Some(19), Ok(&["a1", "e1", "s1"])),
                (vec![spread(R, 1, 3)], Some(9), Ok(&["a1"])),
                (
                    vec![spread(R, 2, 3)],
                    Some(22),
                    Err(
                        "no 2 to 3 region groups can hold 22 replicas: the 3 with the most \
                         room hold 20, 2 short",
                    ),
                ),
                // Cluster constraint alone: the first maxGroups clusters in score order that fit.
                (vec![spread(C, 1, 2)], Some(12), Ok(&["a1", "e1"])),
                (
                    vec![spread(C, 1, 1)],
                    Some(10),
                    Err(
                        "no 1 clusters (cluster spreadConstraint.maxGroups) can hold 10 \
                         replicas: the 1 with the most room hold 9, 1 short",
                    ),
                ),
            ],
        );
    }

    #[test]
    fn region_and_cluster_constraints() {
        let rows = [
            row("a1", "r=eu", 1, false),
            row("a2", "r=eu", 1, false),
            row("a3", "r=eu", 1, false),
            row("b1", "r=us", 10, false),
            row("c1", "r=ap", 9, false),
        ];
        let two = |c: SpreadConstraint| vec![spread(R, 2, 2), c];
        check(
            &rows,
            vec![
                // us+ap have the room but only 2 clusters: eu comes in, and gives 2 clusters.
                (two(spread(C, 3, 3)), None, Ok(&["a1", "a2", "b1"])),
                (two(spread(C, 3, 5)), None, Ok(&["a1", "a2", "a3", "b1"])),
                // One region is allowed and eu alone has the 3 clusters.
                (
                    vec![spread(R, 1, 2), spread(C, 3, 3)],
                    None,
                    Ok(&["a1", "a2", "a3"]),
                ),
                (
                    two(spread(C, 5, 5)),
                    None,
                    Err("no 2 region groups have the 5 clusters of the cluster \
                         spreadConstraint.minGroups: the 2 largest have 4"),
                ),
                // One cluster per region, the one with the most room.
                (two(spread(C, 2, 2)), Some(19), Ok(&["b1", "c1"])),
                (
                    two(spread(C, 3, 3)),
                    Some(13),
                    Err(
                        "no 2 region groups can hold 13 replicas in at most 3 clusters \
                         (cluster spreadConstraint.maxGroups)",
                    ),
                ),
                (two(spread(C, 3, 3)), Some(12), Ok(&["a1", "a2", "b1"])),
                // Three regions asked for, two clusters allowed: one cluster per region
                // anyway, as Karmada picks them.
                (
                    vec![spread(R, 3, 3), spread(C, 2, 2)],
                    None,
                    Ok(&["a1", "b1", "c1"]),
                ),
            ],
        );
    }

    #[test]
    fn several_non_cluster_constraints() {
        let rows = [
            row("a1", "r=eu z=z1 p=aws l=tier:gold", 10, false),
            row("a2", "r=eu z=z2 p=aws l=tier:gold", 9, false),
            row("b1", "r=us z=z3 p=aws l=tier:gold", 30, false),
            row("b2", "r=us z=z3 p=gcp l=tier:silver", 5, false),
        ];
        check(
            &rows,
            vec![
                // Region drives; us (more room) spans one zone only, so eu.
                (
                    vec![spread(R, 1, 1), spread(Z, 2, 2)],
                    None,
                    Ok(&["a1", "a2"]),
                ),
                // Listing order does not matter: region is coarser than zone.
                (
                    vec![spread(Z, 2, 2), spread(R, 1, 1)],
                    None,
                    Ok(&["a1", "a2"]),
                ),
                // Provider drives over zone (zone first would give a1, b1).
                (
                    vec![spread(Z, 2, 3), spread(P, 1, 1)],
                    None,
                    Ok(&["a1", "a2", "b1"]),
                ),
                // aws spans 3 zones: trimmed to the 2 with the most room.
                (
                    vec![spread(Z, 2, 2), spread(P, 1, 1)],
                    None,
                    Ok(&["a1", "b1"]),
                ),
                (
                    vec![spread(Z, 2, 2), spread(P, 1, 1)],
                    Some(40),
                    Ok(&["a1", "b1"]),
                ),
                // Trimming would leave too little room: aws stays whole.
                (
                    vec![spread(Z, 2, 2), spread(P, 1, 1)],
                    Some(45),
                    Ok(&["a1", "a2", "b1"]),
                ),
                (
                    vec![spread(R, 1, 1), spread(Z, 3, 3)],
                    None,
                    Err(
                        "the clusters selected by region span 1 zone groups, fewer than its \
                         spreadConstraint.minGroups (3)",
                    ),
                ),
                // Region over a label (tier first would give a1, a2, b1), then trimmed to
                // one tier.
                (
                    vec![label("tier", 1, 1), spread(R, 1, 2)],
                    None,
                    Ok(&["b1"]),
                ),
            ],
        );
        // Trimming to the other constraint's maxGroups, when it still fits.
        let rows = [
            row("a1", "r=eu z=z1", 10, false),
            row("a2", "r=eu z=z2", 9, false),
            row("a3", "r=eu z=z1", 2, false),
        ];
        let cons = vec![spread(R, 1, 1), spread(Z, 1, 1)];
        check(
            &rows,
            vec![
                (cons.clone(), None, Ok(&["a1", "a3"])),
                (cons.clone(), Some(12), Ok(&["a1", "a3"])),
                // z1 alone cannot hold 15: kept untrimmed.
                (cons, Some(15), Ok(&["a1", "a2", "a3"])),
                // The cluster cap keeps one cluster per zone first.
                (
                    vec![spread(R, 1, 1), spread(Z, 2, 2), spread(C, 2, 2)],
                    None,
                    Ok(&["a1", "a2"]),
                ),
            ],
        );
    }

    #[test]
    fn a_thousand_label_groups() {
        // Groups c0000..c0499 are used (1 replica each), c0500..c0998 have 1, c0999 has 100.
        let rows: Vec<Row> = (0..1000)
            .map(|i| {
                let cap = if i == 999 { 100 } else { 1 };
                (format!("c{i:04}"), "", cap, i < 500)
            })
            .collect();
        let snaps = fleet(&rows);
        let snaps: Vec<ClusterSnapshot> = snaps
            .into_iter()
            .map(|mut s| {
                let v = s.name.clone();
                s.labels.insert("team".into(), v);
                s
            })
            .collect();
        let cands: Vec<Candidate<'_>> = snaps
            .iter()
            .zip(&rows)
            .enumerate()
            .map(|(i, (s, r))| Candidate {
                snap: s,
                prev: 0,
                in_prev: r.3,
                capacity: r.2,
                rank: i as u32,
            })
            .collect();
        let go =
            |cons: &[SpreadConstraint], need| select(cands.clone(), cons, need).map(|c| names(&c));
        assert_eq!(
            go(&[label("team", 2, 3)], Some(101)).unwrap(),
            ["c0000", "c0999"]
        );
        assert_eq!(
            go(&[label("team", 2, 3)], Some(102)).unwrap(),
            ["c0000", "c0001", "c0999"]
        );
        assert_eq!(
            go(&[label("team", 2, 3)], Some(103)).unwrap_err().message(),
            "no 2 to 3 label team groups can hold 103 replicas: the 3 with the most room \
             hold 102, 1 short"
        );
        // 600 clusters: the 500 used groups, then c0999, then by rank.
        let got = go(&[label("team", 1, 1000), spread(C, 600, 600)], None).unwrap();
        assert_eq!(got.len(), 600);
        assert!(got.contains(&"c0999".to_string()) && got.contains(&"c0598".to_string()));
        assert!(!got.contains(&"c0599".to_string()));
        // Everything, when it takes everything.
        assert_eq!(
            go(&[label("team", 1, 1000)], Some(1099)).unwrap().len(),
            1000
        );
    }

    #[test]
    fn deterministic_under_input_permutation() {
        let rows = [
            row("a1", "r=eu z=z1 p=aws", 4, true),
            row("a2", "r=eu z=z2 p=aws", 4, false),
            row("b1", "r=us z=z3 p=aws", 4, false),
            row("b2", "r=us z=z4 p=gcp", 4, true),
            row("c1", "r=ap z=z5 p=gcp", 4, false),
            row("c2", "r=ap z=z5 p=gcp", 7, false),
            row("d1", "r=sa z=z6 p=az", 1, false),
        ];
        let constraint_sets = [
            vec![spread(R, 2, 3)],
            vec![spread(R, 1, 2), spread(C, 2, 3)],
            vec![spread(Z, 2, 4), spread(P, 1, 2)],
            vec![spread(C, 2, 3)],
        ];
        for cons in &constraint_sets {
            for need in [None, Some(5), Some(9), Some(13), Some(20)] {
                let base = run(&rows, cons, need);
                for perm in 1..7 {
                    let mut shuffled = rows.to_vec();
                    shuffled.rotate_left(perm);
                    if perm % 2 == 0 {
                        shuffled.reverse();
                    }
                    assert_eq!(run(&shuffled, cons, need), base, "{cons:?} {need:?} {perm}");
                }
            }
        }
    }
}
