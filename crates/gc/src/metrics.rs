//! Prometheus metrics of the garbage collector, rendered in the text exposition format by
//! `GarbageCollector::metrics_text`. Labels carry policies and error kinds, never object
//! names (unbounded).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, &'static str)>;

/// The collector's counters and gauges.
pub struct Metrics {
    registry: Registry,
    objects: Gauge,
    resources: Gauge,
    processed: Counter,
    deletions: Family<Labels, Counter>,
    orphanings: Counter,
    references_removed: Counter,
    finalizers_removed: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("flotilla_gc");
        let objects = Gauge::default();
        registry.register(
            "objects_tracked",
            "Objects in the owner graph (seen through the watches)",
            objects.clone(),
        );
        let resources = Gauge::default();
        registry.register(
            "resources_watched",
            "Resources (kinds) watched",
            resources.clone(),
        );
        let processed = Counter::default();
        registry.register("items_processed", "Work items processed", processed.clone());
        let deletions = Family::<Labels, Counter>::default();
        registry.register(
            "deletions",
            "Dependents deleted, by propagation policy",
            deletions.clone(),
        );
        let orphanings = Counter::default();
        registry.register(
            "orphanings",
            "Dependents whose reference to an owner deleted with Orphan was removed",
            orphanings.clone(),
        );
        let references_removed = Counter::default();
        registry.register(
            "dangling_references_removed",
            "Dependents whose references to absent owners were removed (other owners remain)",
            references_removed.clone(),
        );
        let finalizers_removed = Family::<Labels, Counter>::default();
        registry.register(
            "finalizers_removed",
            "orphan and foregroundDeletion finalizers removed, by finalizer",
            finalizers_removed.clone(),
        );
        let errors = Family::<Labels, Counter>::default();
        registry.register("errors", "Errors by kind of failure", errors.clone());
        Self {
            registry,
            objects,
            resources,
            processed,
            deletions,
            orphanings,
            references_removed,
            finalizers_removed,
            errors,
        }
    }

    pub fn set_objects(&self, n: usize) {
        self.objects.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn set_resources(&self, n: usize) {
        self.resources.set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    pub fn processed(&self) {
        self.processed.inc();
    }

    pub fn deleted(&self, policy: &'static str) {
        self.deletions
            .get_or_create(&vec![("policy", policy)])
            .inc();
    }

    pub fn orphaned(&self) {
        self.orphanings.inc();
    }

    pub fn references_removed(&self) {
        self.references_removed.inc();
    }

    pub fn finalizer_removed(&self, finalizer: &'static str) {
        self.finalizers_removed
            .get_or_create(&vec![("finalizer", finalizer)])
            .inc();
    }

    pub fn error(&self, kind: &'static str) {
        self.errors.get_or_create(&vec![("kind", kind)]).inc();
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
        m.set_objects(7);
        m.set_resources(3);
        m.processed();
        m.deleted("background");
        m.deleted("background");
        m.orphaned();
        m.references_removed();
        m.finalizer_removed("orphan");
        m.error("delete");
        let text = m.render();
        for line in [
            "flotilla_gc_objects_tracked 7",
            "flotilla_gc_resources_watched 3",
            "flotilla_gc_items_processed_total 1",
            "flotilla_gc_deletions_total{policy=\"background\"} 2",
            "flotilla_gc_orphanings_total 1",
            "flotilla_gc_dangling_references_removed_total 1",
            "flotilla_gc_finalizers_removed_total{finalizer=\"orphan\"} 1",
            "flotilla_gc_errors_total{kind=\"delete\"} 1",
        ] {
            assert!(text.contains(line), "{line} missing in\n{text}");
        }
    }
}
