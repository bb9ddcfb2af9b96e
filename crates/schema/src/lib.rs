//! CustomResourceDefinition `openAPIV3Schema` handling, without IO, following kube-apiserver's
//! apiextensions behaviour:
//!
//! - [`StructuralSchema::new`] parses a CRD version's schema and rejects what a CRD may not say
//!   (non-structural nodes, unsupported keywords, bad patterns, invalid defaults, metadata
//!   restrictions beyond `name`/`generateName`), naming each problem by its path in the CRD;
//! - [`StructuralSchema::prune`] drops undeclared fields (reporting them for
//!   `fieldValidation=Strict/Warn`);
//! - [`StructuralSchema::apply_defaults`] fills `default`s;
//! - [`StructuralSchema::validate`] checks a custom resource, with kube's error wording.
//!
//! The request path is: prune, then default, then validate.

mod defaults;
mod format;
mod mutate;
mod schema;
mod validate;
mod value;

use std::sync::Arc;

use flotilla_apimachinery::Cause;
use serde_json::Value;

use crate::schema::{Level, Node, Parser};

/// Errors of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not acceptable for a CRD; each cause names the offending field.
    #[error("invalid schema: {}", summary(.0))]
    Invalid(Vec<Cause>),
}

impl SchemaError {
    /// The field-level causes, for a `422 Invalid` answer.
    pub fn causes(&self) -> &[Cause] {
        match self {
            SchemaError::Invalid(causes) => causes,
        }
    }
}

fn summary(causes: &[Cause]) -> String {
    causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect::<Vec<_>>()
        .join("; ")
}

/// A checked structural schema. Cheap to clone (shared).
#[derive(Clone, Debug)]
pub struct StructuralSchema {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    root: Node,
    raw: Value,
}

impl StructuralSchema {
    /// Parses and checks a CRD version's `openAPIV3Schema`. Error fields are prefixed with
    /// `path_prefix` (e.g. `spec.versions[0].schema.openAPIV3Schema`).
    pub fn new(schema: &Value, path_prefix: &str) -> Result<Self, Vec<Cause>> {
        Self::parse(schema, path_prefix).map_err(|SchemaError::Invalid(causes)| causes)
    }

    /// [`StructuralSchema::new`] with the crate's error type.
    pub fn parse(schema: &Value, path_prefix: &str) -> Result<Self, SchemaError> {
        let mut parser = Parser::default();
        let root = parser.node(schema, path_prefix, Level::Root);
        // Defaults are only meaningful against a sound schema; like kube, check them after.
        if parser.errors.is_empty() {
            parser.check_defaults(&root, path_prefix, Level::Root);
        }
        if parser.errors.is_empty() {
            Ok(Self {
                inner: Arc::new(Inner {
                    root,
                    raw: schema.clone(),
                }),
            })
        } else {
            Err(SchemaError::Invalid(parser.errors))
        }
    }

    /// Fills `default`s where a field is absent (or null and not nullable), recursively and
    /// inside array items and map values. Nulls in non-nullable fields without a default are
    /// removed. Call after [`StructuralSchema::prune`]. Root `metadata` is not touched.
    pub fn apply_defaults(&self, obj: &mut Value) {
        mutate::default_node(&self.inner.root, obj, true);
    }

    /// Removes fields the schema does not declare, except under
    /// `x-kubernetes-preserve-unknown-fields` and `additionalProperties: true`, and except
    /// `apiVersion`/`kind`/`metadata` at the root (and in embedded resources). Returns the
    /// removed paths (`spec.bogus`, `spec.items[0].x`) in document order.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut removed = Vec::new();
        mutate::prune_node(&self.inner.root, obj, "", true, &mut removed);
        removed
    }

    /// Validates a (pruned, defaulted) custom resource; empty when valid.
    pub fn validate(&self, obj: &Value) -> Vec<Cause> {
        let mut out = Vec::new();
        validate::validate_node(&self.inner.root, obj, "", true, &mut out);
        out
    }

    /// The raw schema of a field given as a dot path (`.spec.replicas` or `spec.replicas`;
    /// empty for the root), following `properties` and then `additionalProperties`.
    pub fn schema_at(&self, dot_path: &str) -> Option<&Value> {
        let path = dot_path.strip_prefix('.').unwrap_or(dot_path);
        let mut cur = &self.inner.raw;
        if path.is_empty() {
            return Some(cur);
        }
        for seg in path.split('.') {
            cur = match cur.get("properties").and_then(|p| p.get(seg)) {
                Some(next) => next,
                None => cur.get("additionalProperties").filter(|a| a.is_object())?,
            };
        }
        Some(cur)
    }

    /// The schema as given (for OpenAPI publishing).
    pub fn raw(&self) -> &Value {
        &self.inner.raw
    }
}

#[cfg(test)]
mod tests;
