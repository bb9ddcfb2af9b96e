//! Prometheus metrics on `/metrics`: request counts by verb, resource and code, request
//! latency by verb and resource, and admission webhook calls by webhook, type and outcome
//! with their latency.

use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
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

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLabels {
    name: String,
    /// `admit` (mutating) or `validating`, as kube-apiserver labels them.
    r#type: String,
    operation: String,
    /// `allowed`, `rejected`, `error` or `ignored` (a failure under `failurePolicy: Ignore`).
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WebhookLatencyLabels {
    name: String,
    r#type: String,
}

type WebhookLatencyFamily = Family<WebhookLatencyLabels, Histogram, fn() -> Histogram>;

/// The admission webhook metrics, shared with the admission module.
#[derive(Clone)]
pub struct WebhookMetrics {
    calls: Family<WebhookLabels, Counter>,
    latency: WebhookLatencyFamily,
}

impl WebhookMetrics {
    /// Records one call of webhook `name`.
    pub fn observe(
        &self,
        name: &str,
        mutating: bool,
        operation: &str,
        outcome: &str,
        elapsed: Duration,
    ) {
        let kind = if mutating { "admit" } else { "validating" };
        self.calls
            .get_or_create(&WebhookLabels {
                name: name.into(),
                r#type: kind.into(),
                operation: operation.into(),
                outcome: outcome.into(),
            })
            .inc();
        self.latency
            .get_or_create(&WebhookLatencyLabels {
                name: name.into(),
                r#type: kind.into(),
            })
            .observe(elapsed.as_secs_f64());
    }
}

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
        let webhooks = WebhookMetrics {
            calls: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        };
        registry.register(
            "apiserver_admission_webhook_request",
            "Admission webhook calls by webhook, type, operation and outcome",
            webhooks.calls.clone(),
        );
        registry.register(
            "apiserver_admission_webhook_admission_duration_seconds",
            "Admission webhook call latency by webhook and type",
            webhooks.latency.clone(),
        );
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
