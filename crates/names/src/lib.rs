//! Names every Flotilla component must spell the same, in one place and without IO.
//!
//! ```text
//!   karmada       labels, annotations, finalizers and names (Works, bindings, execution
//!                 namespaces) exactly as Karmada spells them
//!   merged_reads  where merged reads are served and how a client of an out-of-process
//!                 deployment reads templates instead
//! ```
//!
//! A test fails on a second spelling of any of them elsewhere in the tree.

pub mod karmada;
pub mod merged_reads;

pub use merged_reads::{TEMPLATE_READ_HEADER, TEMPLATE_READ_VALUE};

/// Errors of reading a name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamesError {
    /// A namespace that does not start with `karmada-es-` was asked for its cluster.
    #[error("namespace {namespace:?} is not an execution namespace (karmada-es-<cluster>)")]
    NotExecutionNamespace { namespace: String },
}
