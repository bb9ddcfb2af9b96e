//! Kubernetes API machinery that every Flotilla server and kind definition shares, with no IO:
//!
//! - [`status`]: API errors and their wire form, the `meta.k8s.io/v1 Status` object;
//! - [`resource`]: what a served resource is ([`ResourceDef`]): names, scope, subresources
//!   and the per-kind hooks (validation, printing, merge schema, OpenAPI schema);
//! - [`selector`]: label and field selectors (equality- and set-based);
//! - [`names`]: DNS-1123 name rules;
//! - [`nesting`]: how deeply a request body may nest, measured before the expensive work;
//! - [`decode`]: request bodies decoded in one pass that notes repeated keys;
//! - [`duration`]: the `AGE` column's human durations.

pub mod decode;
pub mod duration;
pub mod names;
pub mod nesting;
pub mod quantity;
pub mod resource;
pub mod selector;
pub mod status;

pub use resource::{
    GroupVersionKind, PartialSubresource, Permission, Requester, ResourceDef, ScaleDef,
    SubresourceDef, TableColumn, TablePrinter, Validation,
};
pub use status::{ApiError, Cause, error_chain};

/// The finalizer that makes the garbage collector orphan an object's dependents before the
/// object goes (`propagationPolicy: Orphan`).
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";

/// The finalizer that makes the garbage collector delete an object's dependents before the
/// object goes (`propagationPolicy: Foreground`).
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";
