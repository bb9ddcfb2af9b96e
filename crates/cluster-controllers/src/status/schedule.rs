//! When the status controller syncs each cluster next: the period with jitter, and for a
//! cluster already reported not Ready whose probes keep failing, an exponential back-off
//! (capped) — a dead member costs a probe (and a credentials read on the host) every few
//! minutes instead of every period. Pure functions, so the growth is unit tested; the pool
//! that runs the syncs is in the parent module.
//!
//! Also what the health monitor ([`crate::monitor`]) needs to know of this controller:
//! [`Liveness`], which Push clusters it is keeping and when it last finished a sync.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Syncs are brought forward by up to this fraction of their delay, so that clusters listed
/// together (the first list, a relist) drift apart instead of probing in one burst forever.
pub(crate) const JITTER: f64 = 0.1;

/// The delay before the next sync of a cluster after `failures` consecutive failing probes
/// made while it was already reported not Ready: `period` for none, then doubling, capped at
/// `max` (and never below `period`).
pub fn next_delay(period: Duration, max: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return period;
    }
    let factor = 2u32.saturating_pow(failures.min(20));
    period.saturating_mul(factor).min(max.max(period))
}

/// `delay`, cut short so that the sync after it comes just after a streak of probes that
/// has lasted `streak` reaches `threshold` (the failure or success threshold): a member going
/// down is then reported within the threshold plus one period, not up to two periods after.
pub fn toward_threshold(delay: Duration, streak: Duration, threshold: Duration) -> Duration {
    delay.min(threshold.saturating_sub(streak) + THRESHOLD_SLACK)
}

/// When the next sync is due: after `delay` less jitter; or, while a streak of probes that
/// disagrees with the reported condition (`streak`: how long it has lasted, and its
/// threshold) would reach its threshold sooner, exactly then. That sync is not jittered:
/// early, it would find the streak short and take another sync to report.
pub fn next_sync(delay: Duration, streak: Option<(Duration, Duration)>) -> Duration {
    match streak {
        Some((lasted, threshold)) => {
            let until = toward_threshold(delay, lasted, threshold);
            if until < delay {
                until
            } else {
                jittered(delay)
            }
        }
        None => jittered(delay),
    }
}

/// How long after a threshold is reached the sync that reports it is scheduled (timers fire
/// at their deadline or just after; this is for clock granularity).
const THRESHOLD_SLACK: Duration = Duration::from_millis(10);

/// `delay` shortened by up to [`JITTER`], at least 1 ms. Never lengthened: the period bounds
/// how stale a status gets, and a member going down is reported within one period plus the
/// failure threshold (the grace period, by default) only if no sync comes later than due.
pub(crate) fn jittered(delay: Duration) -> Duration {
    let factor = rand::random_range((1.0 - JITTER)..=1.0);
    delay.mul_f64(factor).max(Duration::from_millis(1))
}

/// What the health monitor learns from the status controller in the same process: which
/// Push clusters it keeps, whether each is on schedule (its next sync due in the future, or
/// running — every call of a sync is bounded by the probe timeout), and when the controller
/// last finished any sync. The monitor takes [`Liveness::heartbeat`] as those clusters'
/// heartbeat: a cluster goes Unknown only when it is overdue and the whole controller has
/// stopped making progress for the grace period; its Ready condition itself comes from the
/// probes. (A queue merely longer than one period — thousands of clusters added at once —
/// is still progress.)
#[derive(Debug)]
pub struct Liveness {
    inner: Mutex<LivenessInner>,
}

#[derive(Debug)]
struct LivenessInner {
    /// Per kept cluster: when its next sync is due, or `None` while one runs.
    kept: HashMap<String, Option<Instant>>,
    progress: Instant,
}

impl Default for Liveness {
    fn default() -> Self {
        Self {
            inner: Mutex::new(LivenessInner {
                kept: HashMap::new(),
                progress: Instant::now(),
            }),
        }
    }
}

impl Liveness {
    /// `name` is queued, due at `at`.
    pub(crate) fn due(&self, name: &str, at: Instant) {
        let mut inner = self.inner.lock();
        match inner.kept.get_mut(name) {
            Some(slot) => *slot = Some(at),
            None => {
                inner.kept.insert(name.to_string(), Some(at));
            }
        }
    }

    /// A sync of `name` started.
    pub(crate) fn running(&self, name: &str) {
        if let Some(slot) = self.inner.lock().kept.get_mut(name) {
            *slot = None;
        }
    }

    pub(crate) fn forget(&self, name: &str) {
        self.inner.lock().kept.remove(name);
    }

    pub(crate) fn retain(&self, keep: impl Fn(&str) -> bool) {
        self.inner.lock().kept.retain(|n, _| keep(n));
    }

    /// A sync finished (whatever its outcome).
    pub(crate) fn progressed(&self) {
        self.inner.lock().progress = Instant::now();
    }

    /// The heartbeat of `name`, if the status controller keeps it: now while it is on
    /// schedule, else the later of when it fell due and the controller's last progress.
    pub fn heartbeat(&self, name: &str) -> Option<Instant> {
        let inner = self.inner.lock();
        let now = Instant::now();
        match inner.kept.get(name)? {
            Some(due) if *due <= now => Some((*due).max(inner.progress)),
            _ => Some(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streak_near_its_threshold_brings_the_next_sync_forward() {
        let s = Duration::from_secs;
        // 25 s of failures, threshold 30 s: the next sync 5 s (and the slack) later, not 10 s.
        assert_eq!(
            toward_threshold(s(10), s(25), s(30)),
            s(5) + THRESHOLD_SLACK
        );
        // Far from the threshold, or past it: the period (or less) as before.
        assert_eq!(toward_threshold(s(10), s(2), s(30)), s(10));
        assert_eq!(toward_threshold(s(10), s(45), s(30)), THRESHOLD_SLACK);
    }

    #[test]
    fn back_off_doubles_from_the_period_and_is_capped() {
        let p = Duration::from_secs(10);
        let max = Duration::from_secs(120);
        let delays: Vec<u64> = (0..8).map(|f| next_delay(p, max, f).as_secs()).collect();
        assert_eq!(delays, [10, 20, 40, 80, 120, 120, 120, 120]);
        // Huge counts neither overflow nor exceed the cap.
        assert_eq!(next_delay(p, max, u32::MAX), max);
        // A cap below the period is the period.
        assert_eq!(next_delay(p, Duration::from_secs(1), 3), p);
    }

    #[test]
    fn a_sync_due_at_a_threshold_is_exact_and_others_never_late() {
        let s = Duration::from_secs;
        let period = s(10);
        for _ in 0..200 {
            for streak in [None, Some((s(5), s(30))), Some((s(20), s(30)))] {
                let next = next_sync(period, streak);
                assert!(
                    next <= period && next >= period.mul_f64(1.0 - JITTER),
                    "{next:?}"
                );
            }
            assert_eq!(
                next_sync(period, Some((s(25), s(30)))),
                s(5) + THRESHOLD_SLACK
            );
            assert_eq!(next_sync(period, Some((s(31), s(30)))), THRESHOLD_SLACK);
        }
    }

    #[test]
    fn jitter_stays_within_its_fraction() {
        let d = Duration::from_secs(10);
        for _ in 0..1000 {
            let j = jittered(d);
            assert!(j >= d.mul_f64(1.0 - JITTER) && j <= d, "{j:?}");
        }
        assert_eq!(jittered(Duration::ZERO), Duration::from_millis(1));
    }

    #[test]
    fn liveness_follows_the_schedule_then_the_progress() {
        let l = Liveness::default();
        assert_eq!(l.heartbeat("a"), None);
        let start = Instant::now();
        // Due later: on schedule, the heartbeat is now.
        l.due("a", start + Duration::from_secs(60));
        assert!(l.heartbeat("a").unwrap() >= start);
        // Running: on schedule too.
        l.running("a");
        assert!(l.heartbeat("a").unwrap() >= start);
        // Overdue: when it fell due, or the last progress if later.
        let long_ago = start.checked_sub(Duration::from_secs(100)).unwrap();
        l.due("a", long_ago);
        let progress = l.heartbeat("a").unwrap();
        assert!(progress < start, "the controller's start, before this step");
        l.progressed();
        assert!(l.heartbeat("a").unwrap() > progress);
        l.due("b", long_ago);
        l.forget("a");
        assert_eq!(l.heartbeat("a"), None);
        l.retain(|n| n != "b");
        assert_eq!(l.heartbeat("b"), None);
    }
}
