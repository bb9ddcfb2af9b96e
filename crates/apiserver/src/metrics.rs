//! Prometheus metrics on `/metrics`: request counts by verb, resource and code, request
//! latency by verb and resource, and admission webhook calls by webhook, type and outcome
//! with their latency.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use flotilla_generic_store::admission::WebhookMetrics;
use http::{HeaderValue, header};
use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    verb: String,
    resource: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LatencyLabels {
    verb: String,
    resource: String,
}

type LatencyFamily = Family<LatencyLabels, Histogram, fn() -> Histogram>;

pub struct Metrics {
    registry: Mutex<Registry>,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    webhooks: WebhookMetrics,
}

fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: LatencyFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "apiserver_request",
            "Requests by verb, resource and HTTP code",
            requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "Request latency by verb and resource",
            latency.clone(),
        );
        let webhooks = WebhookMetrics::register(&mut registry);
        Self {
            registry: Mutex::new(registry),
            requests,
            latency,
            webhooks,
        }
    }

    /// Adds another component's metric to this server's `/metrics`.
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        self.registry.lock().register(name, help, metric);
    }

    /// The admission webhook metrics (handles onto the same series).
    pub fn webhooks(&self) -> WebhookMetrics {
        self.webhooks.clone()
    }

    pub fn observe(&self, verb: &str, resource: &str, code: u16, elapsed: Duration) {
        self.requests
            .get_or_create(&RequestLabels {
                verb: verb.into(),
                resource: resource.into(),
                code: code.to_string(),
            })
            .inc();
        if verb != "watch" {
            self.latency
                .get_or_create(&LatencyLabels {
                    verb: verb.into(),
                    resource: resource.into(),
                })
                .observe(elapsed.as_secs_f64());
        }
    }

    pub fn render(&self) -> Response {
        let mut out = String::new();
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry.lock());
        let mut r = Response::new(Body::from(out));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        r
    }
}
