//! Prometheus metrics of the scheduling loop, rendered in the text exposition format by
//! `RunningScheduler::metrics_text`. No label carries a binding or cluster name.

use std::sync::atomic::{AtomicBool, Ordering};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, &'static str)>;

/// Outcome of one schedule attempt, the `result` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Placed.
    Scheduled,
    /// Could not be placed (no cluster fits, not enough capacity, spread constraints).
    Unschedulable,
    /// Writing the result failed.
    Error,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Scheduled => "scheduled",
            Outcome::Unschedulable => "unschedulable",
            Outcome::Error => "error",
        }
    }
}

/// Counters shared by every worker.
pub struct Metrics {
    registry: Registry,
    attempts: Family<Labels, Counter>,
    latency: Family<Labels, Histogram>,
    algorithm: Histogram,
    evictions: Counter,
    unhealthy_copies: Gauge,
    leader: Gauge,
    active: AtomicBool,
}

impl Metrics {
    /// Registers every metric under the `flotilla_scheduler` prefix.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("flotilla_scheduler");
        let attempts = Family::<Labels, Counter>::default();
        registry.register(
            "schedule_attempts",
            "Schedule attempts, by result",
            attempts.clone(),
        );
        let latency = Family::<Labels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        registry.register(
            "e2e_scheduling_duration_seconds",
            "From taking a binding off the queue to its result written, by result",
            latency.clone(),
        );
        let algorithm = Histogram::new(exponential_buckets(0.000_01, 2.0, 16));
        registry.register(
            "algorithm_duration_seconds",
            "Time spent in the scheduling algorithm for one binding",
            algorithm.clone(),
        );
        let evictions = Counter::default();
        registry.register(
            "evictions",
            "Graceful eviction tasks added (untolerated NoExecute taints, application failover)",
            evictions.clone(),
        );
        let unhealthy_copies = Gauge::default();
        registry.register(
            "application_unhealthy_copies",
            "Copies of bindings with application failover currently seen Unhealthy (counting toward a failover)",
            unhealthy_copies.clone(),
        );
        let leader = Gauge::default();
        registry.register(
            "leader",
            "1 while this instance schedules (holds the Lease, or runs without election)",
            leader.clone(),
        );
        Self {
            registry,
            attempts,
            latency,
            algorithm,
            evictions,
            unhealthy_copies,
            leader,
            active: AtomicBool::new(false),
        }
    }

    /// Counts one attempt and its end-to-end latency.
    pub fn attempt(&self, outcome: Outcome, seconds: f64) {
        let labels = vec![("result", outcome.label())];
        self.attempts.get_or_create(&labels).inc();
        self.latency.get_or_create(&labels).observe(seconds);
    }

    /// Records the time the pure algorithm took.
    pub fn algorithm(&self, seconds: f64) {
        self.algorithm.observe(seconds);
    }

    /// Counts an eviction task.
    pub fn evicted(&self) {
        self.evictions.inc();
    }

    /// Sets how many copies application failover is counting as Unhealthy.
    pub fn unhealthy_copies(&self, copies: usize) {
        self.unhealthy_copies
            .set(i64::try_from(copies).unwrap_or(i64::MAX));
    }

    /// Marks this instance as scheduling or not.
    pub fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::SeqCst);
        self.leader.set(i64::from(active));
    }

    /// Whether this instance schedules.
    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst)
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        flotilla_controller_runtime::encode_metrics(&self.registry)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_attempts_by_result_and_latency() {
        let m = Metrics::new();
        m.attempt(Outcome::Scheduled, 0.002);
        m.attempt(Outcome::Scheduled, 0.004);
        m.attempt(Outcome::Unschedulable, 0.001);
        m.set_active(true);
        let text = m.render();
        assert!(
            text.contains("flotilla_scheduler_schedule_attempts_total{result=\"scheduled\"} 2"),
            "{text}"
        );
        assert!(
            text.contains("flotilla_scheduler_schedule_attempts_total{result=\"unschedulable\"} 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "flotilla_scheduler_e2e_scheduling_duration_seconds_count{result=\"scheduled\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("flotilla_scheduler_leader 1"), "{text}");
        assert!(m.is_active());
    }
}
