//! The scheduling pipeline for one binding: filter -> score -> select -> assign, once per
//! `clusterAffinities` term until one succeeds.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_karmada_api::binding::TargetCluster;
use flotilla_karmada_api::policy::{ClusterAffinity, SpreadConstraint};

use crate::assign::{Strategy, assign};
use crate::filter::{
    AffinityMatcher, Rejection, matches_affinity, no_fit_message, taint_text, untolerated_taint,
};
use crate::select::{Candidate, SpreadKey, select};
use crate::snapshot::api_hash;
use crate::snapshot::{ClusterSnapshot, Reservations};
use crate::{ScheduleError, ScheduleRequest, ScheduleResult};

/// FNV-1a (64-bit) of the binding key: a stable hash (unlike std's, which is seeded) that
/// fixes the tie order per binding.
pub fn fnv1a(key: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in key.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Whether ties between equally good clusters go to the later name (odd hash) rather than
/// the earlier one (even hash).
pub fn ties_descending(key: &str) -> bool {
    fnv1a(key) & 1 == 1
}

/// `previous` as a sorted name -> replicas map (small; binary search beats hashing).
struct Previous<'a>(Vec<(&'a str, i64)>);

impl<'a> Previous<'a> {
    fn new(previous: &'a [TargetCluster]) -> Self {
        let mut v: Vec<(&str, i64)> = previous
            .iter()
            .map(|t| (t.name.as_str(), i64::from(t.replicas.max(0))))
            .collect();
        v.sort_unstable();
        v.dedup_by(|b, a| {
            if a.0 == b.0 {
                a.1 += b.1;
                true
            } else {
                false
            }
        });
        Previous(v)
    }

    fn get(&self, name: &str) -> Option<i64> {
        if self.0.is_empty() {
            return None;
        }
        self.0
            .binary_search_by(|(n, _)| (*n).cmp(name))
            .ok()
            .map(|i| self.0[i].1)
    }
}

/// Schedules one binding over `clusters` (any order), with `reserved` capacity held back.
///
/// With `clusterAffinities`, the terms are tried in order and the first that schedules wins
/// (its name is returned); when all fail, the first term's error is returned. Outside fresh
/// mode, trying starts at the first term that admits every current target cluster, so a
/// binding that fell through to a later term stays there (Karmada starts from the term it
/// observed last).
pub fn schedule(
    req: &ScheduleRequest<'_>,
    clusters: &[Arc<ClusterSnapshot>],
    reserved: &Reservations,
) -> Result<ScheduleResult, ScheduleError> {
    if req.replicas < 0 {
        return Err(ScheduleError::InvalidPlacement {
            message: format!("replicas must not be negative, got {}", req.replicas),
        });
    }
    let previous = Previous::new(req.previous);
    let descending = ties_descending(req.key);
    let terms = &req.placement.cluster_affinities;
    if terms.is_empty() {
        let clusters = schedule_term(
            req,
            req.placement.cluster_affinity.as_ref(),
            clusters,
            reserved,
            &previous,
            descending,
        )?;
        return Ok(ScheduleResult {
            clusters,
            affinity_name: None,
        });
    }
    let observed = req
        .observed_affinity
        .and_then(|name| terms.iter().position(|t| t.affinity_name == name));
    let start = if req.fresh || req.previous.is_empty() {
        0
    } else if let Some(index) = observed {
        index
    } else {
        // No (known) observed term, e.g. a binding written by another tool: the first term
        // that accepts every current target.
        terms
            .iter()
            .position(|t| {
                req.previous.iter().all(|p| {
                    clusters
                        .iter()
                        .find(|c| c.name == p.name)
                        .is_some_and(|c| matches_affinity(c, &t.affinity))
                })
            })
            .unwrap_or(0)
    };
    let mut first_err = None;
    for term in &terms[start..] {
        match schedule_term(
            req,
            Some(&term.affinity),
            clusters,
            reserved,
            &previous,
            descending,
        ) {
            Ok(clusters) => {
                return Ok(ScheduleResult {
                    clusters,
                    affinity_name: Some(term.affinity_name.clone()),
                });
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    Err(first_err.unwrap_or_else(|| ScheduleError::NoClusterFit {
        message: "no clusterAffinities term to try".into(),
    }))
}

fn schedule_term(
    req: &ScheduleRequest<'_>,
    affinity: Option<&ClusterAffinity>,
    clusters: &[Arc<ClusterSnapshot>],
    reserved: &Reservations,
    previous: &Previous<'_>,
    descending: bool,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let placement = req.placement;
    let strategy = Strategy::of(placement);
    let spread: &[SpreadConstraint] = if strategy.ignores_spread(placement) {
        &[]
    } else {
        &placement.spread_constraints
    };
    let group_keys: Vec<SpreadKey<'_>> = spread
        .iter()
        .map(SpreadKey::of)
        .filter(|k| *k != SpreadKey::Cluster)
        .collect();

    // Filter. The fast path only decides; reasons are worked out when nothing passes.
    let matcher = affinity.map(AffinityMatcher::new);
    let api = api_hash(req.api_version, req.kind);
    let check = |snap: &ClusterSnapshot, prev: Option<i64>, explain: bool| -> Option<Rejection> {
        if snap.deleting {
            Some(Rejection::Deleting)
        } else if matcher.as_ref().is_some_and(|m| !m.matches(snap)) {
            Some(Rejection::Affinity)
        } else if !snap
            .api_enablements
            .contains_hashed(api, req.api_version, req.kind)
        {
            Some(Rejection::ApiMissing)
        } else if let Some(t) =
            untolerated_taint(&placement.cluster_tolerations, &snap.taints, prev.is_some())
        {
            Some(Rejection::Taint(if explain {
                taint_text(t)
            } else {
                String::new()
            }))
        } else if let Some(k) = group_keys.iter().find(|k| k.group_of(snap).is_none()) {
            Some(Rejection::MissingProperty(k.describe()))
        } else if req.evicted.contains(&snap.name) {
            Some(Rejection::Evicting)
        } else {
            None
        }
    };
    let mut passed: Vec<(&ClusterSnapshot, Option<i64>)> = Vec::with_capacity(clusters.len());
    for cluster in clusters {
        let snap: &ClusterSnapshot = cluster;
        let prev = previous.get(&snap.name);
        if check(snap, prev, false).is_none() {
            passed.push((snap, prev));
        }
    }
    if passed.is_empty() {
        let mut rejections: BTreeMap<Rejection, usize> = BTreeMap::new();
        for cluster in clusters {
            if let Some(r) = check(cluster, previous.get(&cluster.name), true) {
                *rejections.entry(r).or_default() += 1;
            }
        }
        return Err(ScheduleError::NoClusterFit {
            message: no_fit_message(clusters.len(), &rejections),
        });
    }

    // Score inputs: tie rank, capacity.
    // Duplicated without spread constraints never breaks ties.
    let ranks = if strategy == Strategy::Duplicated && spread.is_empty() {
        vec![0; passed.len()]
    } else {
        name_ranks(&passed, descending)
    };
    let replicas = i64::from(req.replicas);
    let needs_capacity = replicas > 0 && (strategy.uses_capacity() || !spread.is_empty());
    let request = req.per_replica.effective_request();
    let accepted_now = |snap: &ClusterSnapshot, placed: bool| {
        !placed || untolerated_taint(&placement.cluster_tolerations, &snap.taints, false).is_none()
    };
    let cands: Vec<Candidate<'_>> = passed
        .iter()
        .zip(ranks)
        .map(|((snap, prev), rank)| Candidate {
            snap,
            prev: prev.unwrap_or(0),
            in_prev: prev.is_some(),
            // A cluster kept for a binding that would not accept its taints now (a member
            // gone NotReady) keeps what it has but is given nothing more.
            capacity: if needs_capacity && accepted_now(snap, prev.is_some()) {
                snap.max_replicas_effective(&request, reserved.get(&snap.name))
            } else {
                0
            },
            rank,
        })
        .collect();

    // Select.
    let need = (replicas > 0 && strategy.uses_capacity()).then_some(replicas);
    let chosen = select(cands, spread, need)?;

    // Assign.
    let mut out: Vec<TargetCluster> = if replicas == 0 {
        chosen
            .iter()
            .map(|c| TargetCluster {
                name: c.snap.name.clone(),
                replicas: 0,
                components: Vec::new(),
            })
            .collect()
    } else {
        let split = assign(strategy, &chosen, replicas, req.fresh)?;
        let keep_zero = strategy == Strategy::Duplicated;
        chosen
            .iter()
            .zip(split)
            .filter(|(_, n)| keep_zero || *n > 0)
            .map(|(c, n)| TargetCluster {
                name: c.snap.name.clone(),
                replicas: i32::try_from(n).unwrap_or(i32::MAX),
                components: Vec::new(),
            })
            .collect()
    };
    out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Rank of each passed cluster in the per-binding name order.
fn name_ranks(passed: &[(&ClusterSnapshot, Option<i64>)], descending: bool) -> Vec<u32> {
    let n = passed.len();
    let sorted = passed.windows(2).all(|w| w[0].0.name <= w[1].0.name);
    let mut ranks = vec![0u32; n];
    if sorted {
        for (i, r) in ranks.iter_mut().enumerate() {
            *r = u32::try_from(i).unwrap_or(u32::MAX);
        }
    } else {
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by(|a, b| passed[*a].0.name.cmp(&passed[*b].0.name));
        for (pos, i) in order.into_iter().enumerate() {
            ranks[i] = u32::try_from(pos).unwrap_or(u32::MAX);
        }
    }
    if descending {
        let last = u32::try_from(n.saturating_sub(1)).unwrap_or(u32::MAX);
        for r in &mut ranks {
            *r = last - *r;
        }
    }
    ranks
}

#[cfg(test)]
mod tests;
