//! Patch and apply algorithms of a Kubernetes-style API server, as pure functions over
//! `serde_json::Value` (no IO): strategic merge patch, server-side apply with conflict
//! detection, JSON Patch with kube-apiserver's semantics, and `metadata.managedFields` tracking for ordinary writes. The list merge
//! semantics come from a [`Schema`]: built-in kinds, a CRD's OpenAPI v3 schema, or generic.

mod builtin;
mod fieldpath;
pub mod json_patch;
mod managed;
mod schema;
mod strategic;

pub use managed::{
    ApplyError, ApplyOptions, Conflict, UpdateOptions, apply, conflicts_message, track_update,
};
pub use schema::Schema;
pub use strategic::strategic_merge;

/// Why a strategic merge patch could not be applied (a bad request).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// The patch document is not a JSON object.
    #[error("strategic merge patch must be a JSON object")]
    PatchNotObject,
    /// A directive with an unknown or malformed value (`$patch: foo`, `$retainKeys: 1`, ...).
    #[error("invalid patch directive at {path:?}: {message}")]
    InvalidDirective { path: String, message: String },
    /// An item of a list merged by key lacks the merge key.
    #[error("map: {path} does not contain declared merge key: {key}")]
    MissingMergeKey { path: String, key: String },
    /// An item of a list merged by key is not an object.
    #[error("list item {path} must be an object with merge key {key}")]
    InvalidListItem { path: String, key: String },
}
