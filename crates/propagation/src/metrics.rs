//! Prometheus metrics of the propagation controllers: reconciles and their latency per
//! controller, queue depths, member applies by outcome and apply errors per cluster (the one
//! per-cluster series: an operator needs to see which member refuses what).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// Counters, gauges and histograms shared by every propagation controller.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    reconcile_seconds: Family<Labels, Histogram>,
    queue_depth: Family<Labels, Gauge>,
    applies: Family<Labels, Counter>,
    apply_errors: Family<Labels, Counter>,
    writes: Family<Labels, Counter>,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("flotilla_propagation");
        let reconciles = Family::<Labels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles by controller and result",
            reconciles.clone(),
        );
        let reconcile_seconds = Family::<Labels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        registry.register(
            "reconcile_duration_seconds",
            "Latency of one reconcile, by controller",
            reconcile_seconds.clone(),
        );
        let queue_depth = Family::<Labels, Gauge>::default();
        registry.register(
            "queue_depth",
            "Keys waiting in each controller's work queue",
            queue_depth.clone(),
        );
        let applies = Family::<Labels, Counter>::default();
        registry.register(
            "member_applies",
            "Manifests applied to member clusters, by outcome",
            applies.clone(),
        );
        let apply_errors = Family::<Labels, Counter>::default();
        registry.register(
            "member_apply_errors",
            "Manifests a member cluster refused or could not be reached for, by cluster",
            apply_errors.clone(),
        );
        let writes = Family::<Labels, Counter>::default();
        registry.register(
            "host_writes",
            "Writes to the host (bindings, Works, statuses, claims), by object",
            writes.clone(),
        );
        Self {
            registry,
            reconciles,
            reconcile_seconds,
            queue_depth,
            applies,
            apply_errors,
            writes,
        }
    }

    pub fn reconciled(&self, controller: &'static str, ok: bool, took: Duration) {
        let result = if ok { "success" } else { "error" };
        self.reconciles
            .get_or_create(&vec![
                ("controller", controller.to_string()),
                ("result", result.to_string()),
            ])
            .inc();
        self.reconcile_seconds
            .get_or_create(&vec![("controller", controller.to_string())])
            .observe(took.as_secs_f64());
    }

    pub fn queue_depth(&self, controller: &'static str, depth: usize) {
        self.queue_depth
            .get_or_create(&vec![("controller", controller.to_string())])
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    pub fn applied(&self, cluster: &str, ok: bool) {
        let outcome = if ok { "applied" } else { "failed" };
        self.applies
            .get_or_create(&vec![("outcome", outcome.to_string())])
            .inc();
        if !ok {
            self.apply_errors
                .get_or_create(&vec![("cluster", cluster.to_string())])
                .inc();
        }
    }

    pub fn wrote(&self, object: &'static str) {
        self.writes
            .get_or_create(&vec![("object", object.to_string())])
            .inc();
    }

    pub fn render(&self) -> String {
        flotilla_runtime::encode_metrics(&self.registry)
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

/// Times one reconcile and records it when dropped.
pub(crate) struct Timer {
    metrics: Arc<Metrics>,
    controller: &'static str,
    start: std::time::Instant,
    pub ok: bool,
}

impl Timer {
    pub(crate) fn start(metrics: &Arc<Metrics>, controller: &'static str) -> Self {
        Self {
            metrics: metrics.clone(),
            controller,
            start: std::time::Instant::now(),
            ok: false,
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.metrics
            .reconciled(self.controller, self.ok, self.start.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_what_was_counted() {
        let m = Arc::new(Metrics::new());
        {
            let mut t = Timer::start(&m, "binding");
            t.ok = true;
        }
        m.queue_depth("execution", 3);
        m.applied("member1", true);
        m.applied("member2", false);
        m.wrote("work");
        let text = m.render();
        for expected in [
            "flotilla_propagation_reconciles_total{controller=\"binding\",result=\"success\"} 1",
            "flotilla_propagation_reconcile_duration_seconds_count{controller=\"binding\"} 1",
            "flotilla_propagation_queue_depth{controller=\"execution\"} 3",
            "flotilla_propagation_member_applies_total{outcome=\"failed\"} 1",
            "flotilla_propagation_member_apply_errors_total{cluster=\"member2\"} 1",
            "flotilla_propagation_host_writes_total{object=\"work\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} missing in {text}");
        }
        assert!(!text.contains("cluster=\"member1\""), "{text}");
    }
}
