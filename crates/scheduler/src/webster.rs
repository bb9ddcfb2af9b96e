//! Webster / Sainte-Laguë division: seats go one at a time to the entry with the highest
//! `weight / (2 * seats + 1)`; ties go to the entry with fewer seats, then to the lower tie
//! rank (the per-binding name order).
//!
//! Why exact and fast at once: each entry's priorities strictly decrease with its seats, so
//! the one-at-a-time result is the `total` largest priorities overall. Every priority above
//! the threshold `W / (2 * total - n)` is certainly among them and there are at most `total`
//! of those, so they are handed out in one pass ("quota first"); at most `n` seats remain for
//! the heap. Work is O(n log n) however large `total` is.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One entry in the heap: its priority is `weight / (2 * seats + 1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    weight: i64,
    seats: i64,
    rank: u32,
    index: usize,
}

impl Ord for Slot {
    fn cmp(&self, other: &Self) -> Ordering {
        // Compare weight_a / (2 s_a + 1) with weight_b / (2 s_b + 1) by cross-multiplying.
        let a = i128::from(self.weight) * i128::from(2 * other.seats + 1);
        let b = i128::from(other.weight) * i128::from(2 * self.seats + 1);
        a.cmp(&b)
            .then_with(|| other.seats.cmp(&self.seats))
            .then_with(|| other.rank.cmp(&self.rank))
    }
}

impl PartialOrd for Slot {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Divides `total` seats by `weights` (non-negative). `ranks[i]` breaks remaining ties (lower
/// first). Entries of weight 0 get nothing unless every weight is 0, in which case nothing is
/// handed out at all (the caller decides what an all-zero division means).
pub fn divide(total: i64, weights: &[i64], ranks: &[u32]) -> Vec<i64> {
    let n = weights.len();
    let mut seats = vec![0i64; n];
    let sum: i128 = weights.iter().map(|w| i128::from((*w).max(0))).sum();
    if total <= 0 || n == 0 || sum == 0 {
        return seats;
    }
    let mut remaining = total;
    let n_i = i64::try_from(n).unwrap_or(i64::MAX);
    if total > n_i {
        // Quota first: count, per entry, its priorities strictly above t = sum / (2 total - n):
        // w / (2k + 1) > t  <=>  (2k + 1) * sum < w * (2 total - n); the count of odd numbers
        // o >= 1 with o * sum < A is (q + 1) / 2 where q = (A - 1) / sum.
        let scale = 2 * i128::from(total) - i128::from(n_i);
        for (i, w) in weights.iter().enumerate() {
            let a = i128::from((*w).max(0)) * scale;
            if a > 0 {
                let q = (a - 1) / sum;
                let count = i64::try_from((q + 1) / 2).unwrap_or(i64::MAX);
                seats[i] = count;
                remaining -= count;
            }
        }
    }
    if remaining <= 0 {
        return seats;
    }
    let mut heap: BinaryHeap<Slot> = weights
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0)
        .map(|(index, w)| Slot {
            weight: *w,
            seats: seats[index],
            rank: ranks.get(index).copied().unwrap_or(u32::MAX),
            index,
        })
        .collect();
    while remaining > 0 {
        let Some(mut top) = heap.pop() else {
            break;
        };
        top.seats += 1;
        seats[top.index] = top.seats;
        remaining -= 1;
        heap.push(top);
    }
    seats
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The textbook one-seat-at-a-time loop, for comparison.
    fn naive(total: i64, weights: &[i64], ranks: &[u32]) -> Vec<i64> {
        let mut seats = vec![0i64; weights.len()];
        if weights.iter().all(|w| *w <= 0) {
            return seats;
        }
        for _ in 0..total {
            let mut best: Option<usize> = None;
            for i in 0..weights.len() {
                if weights[i] <= 0 {
                    continue;
                }
                let better = match best {
                    None => true,
                    Some(b) => {
                        let lhs = i128::from(weights[i]) * i128::from(2 * seats[b] + 1);
                        let rhs = i128::from(weights[b]) * i128::from(2 * seats[i] + 1);
                        lhs > rhs
                            || lhs == rhs
                                && (seats[i] < seats[b]
                                    || seats[i] == seats[b] && ranks[i] < ranks[b])
                    }
                };
                if better {
                    best = Some(i);
                }
            }
            if let Some(b) = best {
                seats[b] += 1;
            }
        }
        seats
    }

    #[test]
    fn table() {
        type Case<'a> = (i64, &'a [i64], &'a [u32], &'a [i64]);
        let cases: &[Case<'_>] = &[
            (7, &[1, 2, 4], &[0, 1, 2], &[1, 2, 4]),
            (3, &[1, 1, 1], &[0, 1, 2], &[1, 1, 1]),
            (2, &[1, 1, 1], &[0, 1, 2], &[1, 1, 0]),
            (2, &[1, 1, 1], &[2, 1, 0], &[0, 1, 1]),
            (10, &[10, 5, 0], &[0, 1, 2], &[7, 3, 0]),
            (4, &[3, 1], &[0, 1], &[3, 1]),
            (0, &[3, 1], &[0, 1], &[0, 0]),
            (5, &[0, 0], &[0, 1], &[0, 0]),
            (
                1_000_000_000,
                &[1, 2, 4],
                &[0, 1, 2],
                &[142_857_143, 285_714_286, 571_428_571],
            ),
        ];
        for (total, w, r, want) in cases {
            assert_eq!(divide(*total, w, r), *want, "{total} over {w:?}");
        }
    }

    proptest! {
        #[test]
        fn matches_the_naive_loop(
            weights in proptest::collection::vec(0i64..50, 1..8),
            total in 0i64..200,
            flip in any::<bool>(),
        ) {
            let n = weights.len();
            let ranks: Vec<u32> = (0..n as u32).map(|i| if flip { n as u32 - i } else { i }).collect();
            prop_assert_eq!(divide(total, &weights, &ranks), naive(total, &weights, &ranks));
        }

        #[test]
        fn sums_and_respects_weights(
            weights in proptest::collection::vec(1i64..1000, 1..20),
            frac in 0.0f64..=1.0,
        ) {
            let sum: i64 = weights.iter().sum();
            let total = (sum as f64 * frac) as i64;
            let ranks: Vec<u32> = (0..weights.len() as u32).collect();
            let seats = divide(total, &weights, &ranks);
            prop_assert_eq!(seats.iter().sum::<i64>(), total);
            for (s, w) in seats.iter().zip(&weights) {
                prop_assert!(s <= w);
            }
        }
    }
}
