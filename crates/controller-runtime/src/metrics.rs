//! What every controller built on the runtime reports: reconciles by result, their latency,
//! and the keys waiting in its queue, by controller name.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

/// The controllers' metrics (`flotilla_controller_*`).
pub struct ControllerMetrics {
    registry: Registry,
    reconciles: Family<Labels, Counter>,
    reconcile_seconds: Family<Labels, Histogram>,
    queue_depth: Family<Labels, Gauge>,
}

impl Default for ControllerMetrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("flotilla_controller");
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
        Self {
            registry,
            reconciles,
            reconcile_seconds,
            queue_depth,
        }
    }
}

impl ControllerMetrics {
    /// One reconcile of `controller` ended.
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

    /// `controller`'s queue holds `depth` keys.
    pub fn queue_depth(&self, controller: &'static str, depth: usize) {
        self.queue_depth
            .get_or_create(&vec![("controller", controller.to_string())])
            .set(i64::try_from(depth).unwrap_or(i64::MAX));
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        crate::encode_metrics(&self.registry)
    }
}
