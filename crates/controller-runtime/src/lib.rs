//! The controller runtime Flotilla's controllers run on, with no decisions of its own:
//!
//! ```text
//!  Manager ── one Tasks tree, one client ── Reflector per kind (shared) ──subscribe──┐
//!     └── Controller: triggers ──▶ WorkQueue (dedup, backoff) ──▶ workers ──▶ reconcile
//!                                      ▲                                     │ Action
//!                                      └──────── requeue / retry ◀───────────┘
//! ```
//!
//! - [`manager`]: a process's controllers: their tasks, their shared reflectors, their metrics;
//! - [`reflector`]: one watch of a kind into a store, its changes to every subscriber;
//! - [`controller`]: the skeleton every controller shares (queue, workers, retries, metrics);
//! - [`queue`]: the coalescing work queue keyed by object, with per-key exponential backoff;
//! - [`events`]: the core/v1 Event recorder, writing in the background, correlating events
//!   as client-go does (deduplication, aggregation of similar ones, a per-object rate limit);
//! - [`client`]: kube-rs clients whose idle connections close;
//! - [`error_chain`]: an error and its causes on one line, for logs and conditions;
//! - [`encode_metrics`] and [`stop_tasks`]: what every controller's `/metrics` and `stop` do.

pub mod client;
pub mod controller;
pub mod events;
pub mod manager;
pub mod metrics;
pub mod queue;
pub mod reflector;

pub use controller::{Action, Controller, ControllerOptions, ReconcileError};
pub use events::{EventRecorder, EventRequest};
pub use manager::Manager;
pub use queue::WorkQueue;
pub use reflector::{Reflector, ReflectorSpec, Subscription};

/// A Prometheus registry in the text exposition format.
pub fn encode_metrics(registry: &prometheus_client::registry::Registry) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail; an error would only mean a malformed metric name.
    if prometheus_client::encoding::text::encode(&mut out, registry).is_err() {
        tracing::warn!("encoding metrics failed");
    }
    out
}

/// Several expositions as one: OpenMetrics allows one `# EOF`, at the very end.
pub fn join_expositions(parts: impl IntoIterator<Item = String>) -> String {
    let mut text = String::new();
    for part in parts {
        text.push_str(part.strip_suffix("# EOF\n").unwrap_or(&part));
    }
    text.push_str("# EOF\n");
    text
}

/// The causes of `error`, outermost first, joined with ": ". A level whose text its parent
/// already shows is left out (many wrappers print their cause inline); an API error prints
/// as the Status message the server sent.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = match e.downcast_ref::<kube::Error>() {
            Some(kube::Error::Api(status)) => {
                format!("{} ({}, {})", status.message, status.code, status.reason)
            }
            _ => e.to_string(),
        };
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        if matches!(e.downcast_ref::<kube::Error>(), Some(kube::Error::Api(_))) {
            break;
        }
        current = e.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reading the Secret of member1")]
    struct Outer {
        source: kube::Error,
    }

    #[test]
    fn an_api_error_prints_as_the_servers_status() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!(
            {"code": 403, "message": "secrets is forbidden", "reason": "Forbidden"}))
        .unwrap();
        let e = Outer {
            source: kube::Error::Api(Box::new(status)),
        };
        assert_eq!(
            error_chain(&e),
            "reading the Secret of member1: secrets is forbidden (403, Forbidden)"
        );
    }
}
