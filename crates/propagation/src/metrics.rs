//! Prometheus metrics of the propagation controllers beyond what the controller runtime
//! counts for each of them (reconciles, their latency, queue depths: `flotilla_controller_*`):
//! member applies by outcome, drift re-applies, apply errors per cluster (the one per-cluster series: an
//! operator needs to see which member refuses what) and writes to the host.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// Counters, gauges and histograms shared by every propagation controller.
pub struct Metrics {
    registry: Registry,
    applies: Family<Labels, Counter>,
    apply_errors: Family<Labels, Counter>,
    drift: Counter,
    writes: Family<Labels, Counter>,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("flotilla_propagation");
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
        let drift = Counter::default();
        registry.register(
            "member_drift",
            "Member objects found changed by someone else and applied again",
            drift.clone(),
        );
        let writes = Family::<Labels, Counter>::default();
        registry.register(
            "host_writes",
            "Writes to the host (bindings, Works, statuses, claims), by object",
            writes.clone(),
        );
        Self {
            registry,
            applies,
            apply_errors,
            drift,
            writes,
        }
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

    /// A member object changed by someone else, about to be applied again.
    pub fn drift(&self) {
        self.drift.inc();
    }

    pub fn wrote(&self, object: &'static str) {
        self.writes
            .get_or_create(&vec![("object", object.to_string())])
            .inc();
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
        m.applied("member1", true);
        m.applied("member2", false);
        m.wrote("work");
        let text = m.render();
        for expected in [
            "flotilla_propagation_member_applies_total{outcome=\"failed\"} 1",
            "flotilla_propagation_member_apply_errors_total{cluster=\"member2\"} 1",
            "flotilla_propagation_host_writes_total{object=\"work\"} 1",
        ] {
            assert!(text.contains(expected), "{expected} missing in {text}");
        }
        assert!(!text.contains("cluster=\"member1\""), "{text}");
    }
}
