//! Dynamic admission as kube-apiserver does it, without IO: the API server hands in the
//! `MutatingWebhookConfiguration` / `ValidatingWebhookConfiguration` objects it stores and
//! the attributes of a write, and this crate says which webhooks to call, builds the
//! `admission.k8s.io/v1` AdmissionReview each one is sent, and reads the answer (allowed,
//! the denial as kube-apiserver words it, a JSONPatch, warnings).
//!
//! - [`webhook`]: a configuration's webhooks with kube's defaults filled in, in call order;
//! - [`matching`]: the request [`Attributes`] and whether a webhook's rules, `matchPolicy`,
//!   `namespaceSelector` and `objectSelector` select them;
//! - [`review`]: the AdmissionReview request and the [`Verdict`] read from the response.
//!
//! The HTTP calls, the cache of configurations and the order of mutating before validating
//! live in the generic store (`flotilla_generic_store::admission`).

pub mod matching;
pub mod review;
pub mod webhook;

pub use matching::{Attributes, Operation, RuleMatch, UserInfo};
pub use review::{Verdict, denial, review_request};
pub use webhook::{ClientConfig, FailurePolicy, SideEffects, Webhook, WebhookKind, webhooks_of};

/// Errors reading configurations and answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmissionError {
    /// A stored configuration that does not decode (it passed validation when written, so
    /// this means an older server wrote it).
    #[error("webhook configuration {name}: {message}")]
    Configuration { name: String, message: String },
    /// A selector of a webhook that does not parse.
    #[error("webhook {webhook}: invalid {field}: {message}")]
    Selector {
        webhook: String,
        field: &'static str,
        message: String,
    },
    /// The webhook's answer is not a usable AdmissionReview.
    #[error("{0}")]
    Response(String),
}
