//! Prometheus metrics of the cluster controllers, rendered in the text exposition format by
//! `ControllerManager::metrics_text`. Labels never carry a cluster name: with hundreds of
//! members, per-cluster series would dwarf everything else the process exports.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, &'static str)>;

/// Counters and histograms shared by every controller task.
pub struct Metrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    probe_seconds: Family<Labels, Histogram>,
    status_writes: Counter,
    syncs_in_flight: Gauge,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("flotilla_cluster_controllers");
        let reconciles = Family::<Labels, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles (cluster controller) and status syncs (status controller), by result",
            reconciles.clone(),
        );
        let errors = Family::<Labels, Counter>::default();
        registry.register(
            "errors",
            "Errors by controller and kind of failure",
            errors.clone(),
        );
        let probe_seconds = Family::<Labels, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.001, 2.0, 14))
        });
        registry.register(
            "probe_duration_seconds",
            "Latency of member health probes, by outcome",
            probe_seconds.clone(),
        );
        let status_writes = Counter::default();
        registry.register(
            "status_writes",
            "Cluster status patches written (only changes are written)",
            status_writes.clone(),
        );
        let syncs_in_flight = Gauge::default();
        registry.register(
            "status_syncs_in_flight",
            "Cluster status syncs running now (at most the probe concurrency)",
            syncs_in_flight.clone(),
        );
        Self {
            registry,
            reconciles,
            errors,
            probe_seconds,
            status_writes,
            syncs_in_flight,
        }
    }

    pub fn reconciled(&self, controller: &'static str, ok: bool) {
        let result = if ok { "success" } else { "error" };
        self.reconciles
            .get_or_create(&vec![("controller", controller), ("result", result)])
            .inc();
    }

    pub fn error(&self, controller: &'static str, kind: &'static str) {
        self.errors
            .get_or_create(&vec![("controller", controller), ("kind", kind)])
            .inc();
    }

    pub fn probed(&self, outcome: &'static str, seconds: f64) {
        self.probe_seconds
            .get_or_create(&vec![("outcome", outcome)])
            .observe(seconds);
    }

    pub fn status_written(&self) {
        self.status_writes.inc();
    }

    pub fn sync_started(&self) {
        self.syncs_in_flight.inc();
    }

    pub fn sync_finished(&self) {
        self.syncs_in_flight.dec();
    }

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
    fn renders_what_was_counted() {
        let m = Metrics::new();
        m.reconciled("cluster", true);
        m.reconciled("cluster", true);
        m.error("cluster-status", "write");
        m.probed("healthy", 0.003);
        m.status_written();
        m.sync_started();
        m.sync_started();
        m.sync_finished();
        let text = m.render();
        assert!(
            text.contains(
                "flotilla_cluster_controllers_reconciles_total{controller=\"cluster\",result=\"success\"} 2"
            ),
            "{text}"
        );
        assert!(text.contains("kind=\"write\"} 1"), "{text}");
        assert!(
            text.contains(
                "flotilla_cluster_controllers_probe_duration_seconds_count{outcome=\"healthy\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains("flotilla_cluster_controllers_status_writes_total 1"),
            "{text}"
        );
        assert!(
            text.contains("flotilla_cluster_controllers_status_syncs_in_flight 1"),
            "{text}"
        );
    }
}
