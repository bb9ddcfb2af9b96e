//! Replica assignment over the selected clusters: Duplicated, Divided by static weights,
//! Divided by dynamic weight (`AvailableReplicas`) and Divided Aggregated, with Karmada's
//! fresh / steady (scale-up, scale-down, unchanged) modes.

use flotilla_karmada_api::policy::{
    Placement, ReplicaDivisionPreference, ReplicaSchedulingType, StaticClusterWeight,
};

use crate::ScheduleError;
use crate::filter::AffinityMatcher;
use crate::select::Candidate;
use crate::webster::divide;

/// How a placement assigns replicas.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Strategy<'p> {
    /// Every selected cluster gets all replicas (also when `replicaScheduling` is absent).
    Duplicated,
    /// Divided by static weights (empty list: equal weights).
    StaticWeights(&'p [StaticClusterWeight]),
    /// Divided by each cluster's available replicas.
    DynamicWeights,
    /// Divided over as few clusters as capacity allows.
    Aggregated,
}

impl<'p> Strategy<'p> {
    /// The strategy of a placement.
    pub fn of(placement: &'p Placement) -> Strategy<'p> {
        let Some(rs) = &placement.replica_scheduling else {
            return Strategy::Duplicated;
        };
        if rs.replica_scheduling_type.unwrap_or_default() == ReplicaSchedulingType::Duplicated {
            return Strategy::Duplicated;
        }
        if rs.replica_division_preference == Some(ReplicaDivisionPreference::Aggregated) {
            return Strategy::Aggregated;
        }
        match &rs.weight_preference {
            Some(w) if w.dynamic_weight.is_some() => Strategy::DynamicWeights,
            Some(w) => Strategy::StaticWeights(&w.static_weight_list),
            None => Strategy::StaticWeights(&[]),
        }
    }

    /// Whether free capacity decides the division.
    pub fn uses_capacity(&self) -> bool {
        matches!(self, Strategy::DynamicWeights | Strategy::Aggregated)
    }

    /// Whether Karmada ignores spread constraints for this strategy (static weights).
    pub fn ignores_spread(&self, placement: &Placement) -> bool {
        matches!(self, Strategy::StaticWeights(list) if !list.is_empty())
            && placement
                .replica_scheduling
                .as_ref()
                .is_some_and(|rs| rs.replica_division_preference.is_some())
    }
}

/// The static weight of each candidate: the largest weight among matching entries (0 when
/// none matches); no list, or nothing matching at all: weight 1 each.
pub fn static_weights(list: &[StaticClusterWeight], cands: &[Candidate<'_>]) -> Vec<i64> {
    let mut weights = vec![0i64; cands.len()];
    // Entries that only list names (the usual form) are looked up by name; the others are
    // matched against every candidate.
    let mut by_name: Option<Vec<usize>> = None;
    for entry in list {
        let weight = entry.weight.max(0);
        let matcher = AffinityMatcher::new(&entry.target_cluster);
        if let Some(names) = matcher.names_only() {
            let index = by_name.get_or_insert_with(|| {
                let mut order: Vec<usize> = (0..cands.len()).collect();
                if !cands.windows(2).all(|w| w[0].snap.name <= w[1].snap.name) {
                    order.sort_unstable_by(|a, b| cands[*a].snap.name.cmp(&cands[*b].snap.name));
                }
                order
            });
            for name in names {
                let start = index.partition_point(|i| cands[*i].snap.name.as_str() < *name);
                for i in index[start..]
                    .iter()
                    .take_while(|i| cands[**i].snap.name == *name)
                {
                    weights[*i] = weights[*i].max(weight);
                }
            }
        } else {
            for (c, w) in cands.iter().zip(weights.iter_mut()) {
                if matcher.matches(c.snap) {
                    *w = (*w).max(weight);
                }
            }
        }
    }
    if weights.iter().all(|w| *w == 0) {
        weights.iter_mut().for_each(|w| *w = 1);
    }
    weights
}

fn ranks(cands: &[Candidate<'_>]) -> Vec<u32> {
    cands.iter().map(|c| c.rank).collect()
}

fn insufficient(target: i64, free: i64) -> ScheduleError {
    ScheduleError::Unschedulable {
        message: format!(
            "insufficient capacity: {} of {target} replicas cannot be placed (free capacity {free})",
            target - free
        ),
    }
}

/// Replicas per candidate (same order as `cands`). `replicas` is the desired total (> 0).
pub fn assign(
    strategy: Strategy<'_>,
    cands: &[Candidate<'_>],
    replicas: i64,
    fresh: bool,
) -> Result<Vec<i64>, ScheduleError> {
    match strategy {
        Strategy::Duplicated => Ok(vec![replicas; cands.len()]),
        Strategy::StaticWeights(list) => Ok(divide(
            replicas,
            &static_weights(list, cands),
            &ranks(cands),
        )),
        Strategy::DynamicWeights => by_capacity(cands, replicas, fresh, false),
        Strategy::Aggregated => by_capacity(cands, replicas, fresh, true),
    }
}

/// Dynamic weights and Aggregated.
///
/// - fresh: weights = free + current; the whole total is divided again;
/// - steady, scale-up (or first schedule): only the increment is divided, by free capacity,
///   and added to the current assignment (existing replicas never move);
/// - steady, scale-down: the new total is divided with the current split as weights;
/// - steady, unchanged: the current assignment stays.
///
/// Aggregated divides over the shortest prefix (clusters holding replicas first, then by
/// weight) whose weights cover what is divided.
fn by_capacity(
    cands: &[Candidate<'_>],
    replicas: i64,
    fresh: bool,
    aggregated: bool,
) -> Result<Vec<i64>, ScheduleError> {
    let current: Vec<i64> = cands.iter().map(|c| c.prev.max(0)).collect();
    let assigned: i64 = current.iter().sum();
    let ranks = ranks(cands);
    if !fresh && assigned > 0 {
        if assigned == replicas {
            return Ok(current);
        }
        if assigned > replicas {
            return Ok(divide(replicas, &current, &ranks));
        }
    }
    let (target, base, weights): (i64, Vec<i64>, Vec<i64>) = if fresh {
        let w = cands.iter().map(|c| c.available().max(0)).collect();
        (replicas, vec![0; cands.len()], w)
    } else {
        let w = cands.iter().map(|c| c.capacity.max(0)).collect();
        (replicas - assigned, current, w)
    };
    let free = weights.iter().fold(0i64, |a, w| a.saturating_add(*w));
    if free < target {
        return Err(insufficient(target, free));
    }
    let split = if aggregated {
        aggregate(target, &weights, &base, &ranks)
    } else {
        divide(target, &weights, &ranks)
    };
    Ok(base.iter().zip(split).map(|(b, s)| b + s).collect())
}

/// Webster split of `target` over the shortest prefix of (holders of replicas first, then
/// larger weight, then rank) whose weights cover `target`. Weights must cover `target`.
fn aggregate(target: i64, weights: &[i64], holding: &[i64], ranks: &[u32]) -> Vec<i64> {
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|a, b| {
        (holding[*b] > 0)
            .cmp(&(holding[*a] > 0))
            .then(weights[*b].cmp(&weights[*a]))
            .then(ranks[*a].cmp(&ranks[*b]))
    });
    let mut covered = 0i64;
    let mut len = 0;
    for i in &order {
        if covered >= target {
            break;
        }
        covered = covered.saturating_add(weights[*i]);
        len += 1;
    }
    let prefix = &order[..len];
    let w: Vec<i64> = prefix.iter().map(|i| weights[*i]).collect();
    let r: Vec<u32> = prefix.iter().map(|i| ranks[*i]).collect();
    let mut out = vec![0i64; weights.len()];
    for (i, s) in prefix.iter().zip(divide(target, &w, &r)) {
        out[*i] = s;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::ClusterSnapshot;

    fn snaps(n: usize) -> Vec<ClusterSnapshot> {
        (0..n)
            .map(|i| ClusterSnapshot {
                name: format!("m{}", i + 1),
                ..ClusterSnapshot::default()
            })
            .collect()
    }

    /// Candidates from (capacity, previous replicas; -1 = not in previous).
    fn cands<'a>(s: &'a [ClusterSnapshot], spec: &[(i64, i64)]) -> Vec<Candidate<'a>> {
        spec.iter()
            .enumerate()
            .map(|(i, (cap, prev))| Candidate {
                snap: &s[i],
                prev: (*prev).max(0),
                in_prev: *prev >= 0,
                capacity: *cap,
                rank: i as u32,
            })
            .collect()
    }

    #[test]
    fn dynamic_table() {
        let s = snaps(3);
        type Case = (
            &'static str,
            [(i64, i64); 3],
            i64,
            bool,
            Result<[i64; 3], i64>,
        );
        let cases: &[Case] = &[
            (
                "first schedule 10/5/0",
                [(10, -1), (5, -1), (0, -1)],
                9,
                false,
                Ok([6, 3, 0]),
            ),
            (
                "first schedule exact",
                [(10, -1), (5, -1), (0, -1)],
                15,
                false,
                Ok([10, 5, 0]),
            ),
            (
                "too little",
                [(10, -1), (5, -1), (0, -1)],
                18,
                false,
                Err(3),
            ),
            // Scale 6 -> 9: the existing 4/2 stay, the 3 new go by free capacity 4/4/4.
            (
                "scale up",
                [(4, 4), (4, 2), (4, -1)],
                9,
                false,
                Ok([5, 3, 1]),
            ),
            // Scale 9 -> 4: proportional to the current 6/3 split.
            (
                "scale down",
                [(0, 6), (0, 3), (10, -1)],
                4,
                false,
                Ok([3, 1, 0]),
            ),
            (
                "unchanged",
                [(0, 6), (0, 3), (10, -1)],
                9,
                false,
                Ok([6, 3, 0]),
            ),
            // Fresh: weights = free + current = 6/6/12 for all 12 replicas.
            ("fresh", [(2, 4), (4, 2), (12, -1)], 12, true, Ok([3, 3, 6])),
            (
                "scale up short",
                [(1, 4), (0, 2), (0, -1)],
                10,
                false,
                Err(3),
            ),
        ];
        for (name, spec, replicas, fresh, want) in cases {
            let c = cands(&s, spec);
            let got = assign(Strategy::DynamicWeights, &c, *replicas, *fresh);
            match want {
                Ok(w) => assert_eq!(got.unwrap(), w, "{name}"),
                Err(missing) => {
                    let e = got.unwrap_err();
                    assert_eq!(e.reason(), "Unschedulable", "{name}");
                    assert!(
                        e.message().contains(&format!("{missing} of ")),
                        "{name}: {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn aggregated_table() {
        let s = snaps(3);
        type Case = (&'static str, [(i64, i64); 3], i64, bool, [i64; 3]);
        let cases: &[Case] = &[
            (
                "one cluster is enough",
                [(3, -1), (10, -1), (6, -1)],
                8,
                false,
                [0, 8, 0],
            ),
            (
                "two largest",
                [(3, -1), (10, -1), (6, -1)],
                12,
                false,
                [0, 7, 5],
            ),
            (
                "holder first",
                [(3, 1), (10, -1), (6, -1)],
                3,
                false,
                [3, 0, 0],
            ),
            (
                "holder then largest",
                [(3, 1), (10, -1), (6, -1)],
                9,
                false,
                [3, 6, 0],
            ),
            ("scale down", [(0, 4), (0, 4), (6, -1)], 2, false, [1, 1, 0]),
        ];
        for (name, spec, replicas, fresh, want) in cases {
            let c = cands(&s, spec);
            assert_eq!(
                assign(Strategy::Aggregated, &c, *replicas, *fresh).unwrap(),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn static_weights_table() {
        use flotilla_karmada_api::policy::ClusterAffinity;
        let s = snaps(3);
        let c = cands(&s, &[(0, -1), (0, -1), (0, -1)]);
        let w = |names: &[&str], weight: i64| StaticClusterWeight {
            target_cluster: ClusterAffinity {
                cluster_names: names.iter().map(|n| (*n).to_owned()).collect(),
                ..ClusterAffinity::default()
            },
            weight,
        };
        let cases: Vec<(Vec<StaticClusterWeight>, i64, [i64; 3])> = vec![
            (
                vec![w(&["m1"], 1), w(&["m2"], 2), w(&["m3"], 4)],
                7,
                [1, 2, 4],
            ),
            (
                vec![w(&["m1"], 1), w(&["m2"], 2), w(&["m3"], 4)],
                14,
                [2, 4, 8],
            ),
            // m3 matches no entry: it gets nothing.
            (vec![w(&["m1"], 1), w(&["m2"], 1)], 4, [2, 2, 0]),
            // Largest matching weight wins.
            (vec![w(&["m1", "m2"], 1), w(&["m2"], 3)], 4, [1, 3, 0]),
            // No list: equal weights; the tie goes by rank.
            (vec![], 4, [2, 1, 1]),
            // Nothing matches: equal weights (Karmada's zero-sum rule).
            (vec![w(&["other"], 5)], 3, [1, 1, 1]),
        ];
        for (list, replicas, want) in cases {
            assert_eq!(
                assign(Strategy::StaticWeights(&list), &c, replicas, false).unwrap(),
                want,
                "{list:?}"
            );
        }
        // Capacity is not considered.
        assert_eq!(
            assign(Strategy::Duplicated, &c, 5, false).unwrap(),
            [5, 5, 5]
        );
    }
}
