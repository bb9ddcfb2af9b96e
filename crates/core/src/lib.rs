//! Facts every Flotilla component must agree on, in one place and without IO.
//!
//! ```text
//!   karmada   labels, annotations, finalizers and names (Works, bindings, execution
//!             namespaces) exactly as Karmada spells them
//!   merged_reads where merged reads are served and how a client reads templates instead
//!   resources ResourceName (with its quantities <-> integers in the resource's natural
//!             unit), Resources and a pod's effective request
//!             (pod_spec_requests / pod_spec_value_requests)
//! ```
//!
//! The cluster status controller, the member simulator, the detector (per-replica requests of
//! a template) and the scheduler all need "what does this pod ask for"; if each computed it
//! its own way, a member could be reported as having room for a pod its scheduler refuses.

pub mod karmada;
pub mod merged_reads;
pub mod resources;

pub use merged_reads::{TEMPLATE_READ_HEADER, TEMPLATE_READ_VALUE};
pub use resources::{ResourceName, Resources, pod_spec_requests, pod_spec_value_requests};

/// Errors of the shared facts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CoreError {
    /// A namespace that does not start with `karmada-es-` was asked for its cluster.
    #[error("namespace {namespace:?} is not an execution namespace (karmada-es-<cluster>)")]
    NotExecutionNamespace { namespace: String },
}
