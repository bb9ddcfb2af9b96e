//! The bounded combination search behind group selection: among groups listed in preference
//! order, find the first set (fewest groups first, then lexicographically by preference) of
//! `lo..=hi` groups whose capacity and cluster count reach the targets and that a final check
//! accepts.
//!
//! The caller lists groups so that capacities form at most two non-increasing runs (groups the
//! binding uses, then the others, each by capacity). That makes the best completion of a
//! partial set computable exactly, so a search driven by capacity alone never backtracks:
//! it costs O(k * groups) at worst and O(k) when the best-ranked groups already fit. Backtracking
//! only comes from the cluster-count bound (loose) and from the final check, and a visit budget
//! caps it.

/// Upper bound on candidate visits over a whole search, so that pathological inputs (many
/// groups, a cluster-count target the bounds cannot prune) stay cheap.
pub(super) const VISIT_BUDGET: usize = 20_000;

/// How a search ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Indices of the chosen groups, ascending (= preference order).
    Found(Vec<usize>),
    /// Every admissible combination was examined: none fits.
    Exhausted,
    /// The visit budget ran out before a fitting combination was found.
    GaveUp,
}

/// One group as the search sees it.
#[derive(Clone, Copy, Debug)]
pub(super) struct Item {
    /// Replicas the group can hold.
    pub cap: i128,
    /// Clusters in the group.
    pub count: usize,
}

/// What a fitting combination must reach.
#[derive(Clone, Copy, Debug)]
pub(super) struct Targets {
    /// Fewest groups.
    pub lo: usize,
    /// Most groups.
    pub hi: usize,
    /// Total capacity to reach (0: none).
    pub cap: i128,
    /// Total cluster count to reach (0: none).
    pub count: usize,
}

/// Sums of the largest `m` values in `[a, n)` of a list made of two non-increasing runs,
/// `[0, split)` and `[split, n)`.
struct SuffixTop {
    caps: Vec<i128>,
    /// `pre[i]` = sum of `caps[..i]`.
    pre: Vec<i128>,
    split: usize,
    /// The list has more than two runs: only the global bound is valid.
    loose: bool,
    /// Largest `m` values overall, as prefix sums (the loose bound).
    global: Vec<i128>,
}

impl SuffixTop {
    fn new(caps: Vec<i128>) -> SuffixTop {
        let n = caps.len();
        let mut pre = Vec::with_capacity(n + 1);
        pre.push(0i128);
        for c in &caps {
            pre.push(pre[pre.len() - 1] + c);
        }
        let rises: Vec<usize> = (1..n).filter(|i| caps[*i] > caps[i - 1]).collect();
        let split = rises.first().copied().unwrap_or(n);
        let mut sorted = caps.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let global = prefix(&sorted);
        SuffixTop {
            caps,
            pre,
            split,
            loose: rises.len() > 1,
            global,
        }
    }

    fn range(&self, a: usize, b: usize) -> i128 {
        self.pre[b] - self.pre[a]
    }

    /// The largest possible sum of `m` values taken from `[a, n)`.
    fn top(&self, a: usize, m: usize) -> i128 {
        let n = self.caps.len();
        let m = m.min(n.saturating_sub(a));
        if m == 0 {
            return 0;
        }
        if self.loose {
            return self.global[m];
        }
        if a >= self.split {
            return self.range(a, a + m);
        }
        // Take t from the first run's tail [a, split) and m - t from the second run. The sum is
        // concave in t: find the first t where one more from the first run stops paying.
        let first = self.split - a;
        let second = n - self.split;
        let t_lo = m.saturating_sub(second);
        let t_hi = m.min(first);
        let mut lo = t_lo;
        let mut hi = t_hi;
        while lo < hi {
            let t = lo + (hi - lo) / 2;
            // Gain of taking the (t+1)-th of the first run instead of the (m-t)-th of the second.
            if self.caps[a + t] >= self.caps[self.split + m - t - 1] {
                lo = t + 1;
            } else {
                hi = t;
            }
        }
        self.range(a, a + lo) + self.range(self.split, self.split + m - lo)
    }
}

fn prefix(sorted_desc: &[i128]) -> Vec<i128> {
    let mut out = Vec::with_capacity(sorted_desc.len() + 1);
    out.push(0);
    for v in sorted_desc {
        out.push(out[out.len() - 1] + v);
    }
    out
}

/// Smallest `k` in `lo..=hi` for which the `k` largest capacities and the `k` largest counts
/// reach the targets (a necessary condition), if any.
pub(super) fn first_possible_size(items: &[Item], t: &Targets) -> Option<usize> {
    let (caps, counts) = sorted_prefixes(items);
    (t.lo..=t.hi.min(items.len())).find(|k| caps[*k] >= t.cap && counts[*k] >= t.count as i128)
}

/// Prefix sums of the capacities and of the counts, each sorted descending.
pub(super) fn sorted_prefixes(items: &[Item]) -> (Vec<i128>, Vec<i128>) {
    let mut caps: Vec<i128> = items.iter().map(|i| i.cap).collect();
    caps.sort_unstable_by(|a, b| b.cmp(a));
    let mut counts: Vec<i128> = items.iter().map(|i| i.count as i128).collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    (prefix(&caps), prefix(&counts))
}

/// Searches `items` (in preference order) for the first fitting combination: sizes from the
/// smallest possible upwards, and for one size the lexicographically smallest index set.
/// `accept` is the final check of a combination that reaches both targets.
pub(super) fn search(
    items: &[Item],
    t: &Targets,
    accept: &mut dyn FnMut(&[usize]) -> bool,
) -> Outcome {
    let n = items.len();
    let Some(start) = first_possible_size(items, t) else {
        return Outcome::Exhausted;
    };
    let bound = SuffixTop::new(items.iter().map(|i| i.cap).collect());
    let (_, count_top) = sorted_prefixes(items);
    let mut budget = VISIT_BUDGET;
    for k in start..=t.hi.min(n) {
        if k == 0 {
            continue;
        }
        let mut chosen: Vec<usize> = Vec::with_capacity(k);
        let (mut cap, mut count) = (0i128, 0i128);
        let mut next = 0usize;
        loop {
            if chosen.len() == k {
                if accept(&chosen) {
                    return Outcome::Found(chosen);
                }
            } else {
                let left = k - chosen.len();
                let mut pushed = false;
                while next + left <= n {
                    if budget == 0 {
                        return Outcome::GaveUp;
                    }
                    budget -= 1;
                    let i = next;
                    let cap_ok = cap + items[i].cap + bound.top(i + 1, left - 1) >= t.cap;
                    let count_ok =
                        count + items[i].count as i128 + count_top[left - 1] >= t.count as i128;
                    if cap_ok && count_ok {
                        chosen.push(i);
                        cap += items[i].cap;
                        count += items[i].count as i128;
                        next = i + 1;
                        pushed = true;
                        break;
                    }
                    if !cap_ok && !bound.loose && i >= bound.split {
                        // In the last run the best completion only shrinks from here on.
                        break;
                    }
                    next += 1;
                }
                if pushed {
                    continue;
                }
            }
            // Backtrack: drop the last choice and try the one after it.
            let Some(last) = chosen.pop() else {
                break;
            };
            cap -= items[last].cap;
            count -= items[last].count as i128;
            next = last + 1;
        }
    }
    Outcome::Exhausted
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(caps: &[i128]) -> Vec<Item> {
        caps.iter().map(|c| Item { cap: *c, count: 1 }).collect()
    }

    fn targets(lo: usize, hi: usize, cap: i128, count: usize) -> Targets {
        Targets { lo, hi, cap, count }
    }

    fn all(_: &[usize]) -> bool {
        true
    }

    #[test]
    fn suffix_top_matches_brute_force() {
        let caps = vec![9, 4, 4, 1, 12, 8, 8, 3, 0];
        let st = SuffixTop::new(caps.clone());
        assert!(!st.loose);
        for a in 0..=caps.len() {
            for m in 0..=caps.len() {
                let mut tail: Vec<i128> = caps[a.min(caps.len())..].to_vec();
                tail.sort_unstable_by(|x, y| y.cmp(x));
                let want: i128 = tail.iter().take(m).sum();
                assert_eq!(st.top(a, m), want, "a={a} m={m}");
            }
        }
        // Three runs: the loose bound is still an upper bound.
        let st = SuffixTop::new(vec![1, 5, 2, 7]);
        assert!(st.loose);
        assert_eq!(st.top(2, 1), 7);
    }

    #[test]
    fn search_table() {
        type Case = (&'static [i128], Targets, Outcome);
        let cases: Vec<Case> = vec![
            // The best-ranked group alone fits.
            (&[10, 5, 1], targets(1, 3, 8, 0), Outcome::Found(vec![0])),
            // Needs two; the first pair (by rank) that fits.
            (
                &[10, 5, 4],
                targets(1, 3, 14, 0),
                Outcome::Found(vec![0, 1]),
            ),
            (
                &[10, 3, 6],
                targets(1, 3, 16, 0),
                Outcome::Found(vec![0, 2]),
            ),
            (
                &[10, 5, 4],
                targets(1, 3, 19, 0),
                Outcome::Found(vec![0, 1, 2]),
            ),
            // Used groups (first run) cannot hold it: skip to the second run.
            (
                &[3, 2, 9, 8],
                targets(2, 2, 17, 0),
                Outcome::Found(vec![2, 3]),
            ),
            (&[3, 9, 8], targets(2, 2, 12, 0), Outcome::Found(vec![0, 1])),
            // Impossible within hi.
            (&[5, 5, 5], targets(1, 2, 11, 0), Outcome::Exhausted),
            // lo forces more groups than capacity needs.
            (&[10, 5, 1], targets(2, 3, 1, 0), Outcome::Found(vec![0, 1])),
        ];
        for (i, (caps, t, want)) in cases.into_iter().enumerate() {
            assert_eq!(search(&items(caps), &t, &mut all), want, "case {i}");
        }
    }

    #[test]
    fn counts_and_final_check_drive_backtracking() {
        let it = vec![
            Item { cap: 9, count: 1 },
            Item { cap: 8, count: 1 },
            Item { cap: 1, count: 3 },
        ];
        // Three clusters over two groups: the big-count group must be in.
        assert_eq!(
            search(&it, &targets(2, 2, 0, 3), &mut all),
            Outcome::Found(vec![0, 2])
        );
        // The final check rejects [0, 1]; the next fitting pair wins.
        let mut reject_first = |s: &[usize]| s != [0, 1];
        assert_eq!(
            search(&it, &targets(2, 2, 0, 0), &mut reject_first),
            Outcome::Found(vec![0, 2])
        );
        let mut none = |_: &[usize]| false;
        assert_eq!(
            search(&it, &targets(1, 3, 0, 0), &mut none),
            Outcome::Exhausted
        );
    }

    #[test]
    fn budget_bounds_hopeless_searches() {
        // Counts the pruning cannot see through, and a final check rejecting everything.
        let it: Vec<Item> = (0..1000)
            .map(|i| Item {
                cap: 1,
                count: i % 2,
            })
            .collect();
        let mut visits = 0usize;
        let mut none = |_: &[usize]| {
            visits += 1;
            false
        };
        assert_eq!(
            search(&it, &targets(3, 3, 0, 1), &mut none),
            Outcome::GaveUp
        );
        assert!(visits <= VISIT_BUDGET);
    }
}
