//! Karmada-compatible API types for Flotilla, with their schemas; no IO.
//!
//! Field names and JSON shapes follow Karmada's, so a Karmada user's YAML parses:
//!
//! - [`cluster`]: `cluster.karmada.io/v1alpha1` Cluster (served by the aggregated server), with
//!   the Flotilla status extension `nodeCapacities`;
//! - [`policy`]: `policy.karmada.io/v1alpha1` PropagationPolicy, ClusterPropagationPolicy and
//!   the placement types;
//! - [`overrides`]: `policy.karmada.io/v1alpha1` OverridePolicy, ClusterOverridePolicy;
//! - [`binding`]: `work.karmada.io/v1alpha2` ResourceBinding, ClusterResourceBinding;
//! - [`work`]: `work.karmada.io/v1alpha1` Work;
//! - [`crd`]: the CustomResourceDefinitions of the policy and work kinds, and their YAML.
//!
//! Conventions: optional scalars are `Option` (absent stays absent on re-serialisation),
//! optional lists and maps are empty when absent and omitted when empty, enums serialise to
//! Karmada's exact strings.

/// A cluster-scoped kind's spec is its namespaced counterpart's spec under another name
/// (kube's derive wants one spec type per kind); this makes the newtype read as the inner spec.
#[macro_export]
#[doc(hidden)]
macro_rules! spec_newtype {
    ($outer:ident, $inner:ty) => {
        impl std::ops::Deref for $outer {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.0
            }
        }

        impl std::ops::DerefMut for $outer {
            fn deref_mut(&mut self) -> &mut $inner {
                &mut self.0
            }
        }

        impl From<$inner> for $outer {
            fn from(spec: $inner) -> Self {
                Self(spec)
            }
        }
    };
}

pub mod binding;
pub mod cluster;
pub mod crd;
pub mod overrides;
pub mod policy;
mod schemas;
pub mod work;

pub use binding::{
    ClusterResourceBinding, ClusterResourceBindingSpec, ResourceBinding, ResourceBindingSpec,
    ResourceBindingStatus,
};
pub use cluster::{Cluster, ClusterSpec, ClusterStatus, NodeCapacityGroup, ResourceList};
pub use crd::{cluster_crd, crd_yaml_files, crds};
pub use overrides::{
    ClusterOverridePolicy, ClusterOverrideSpec, OverridePolicy, OverrideSpec, Overriders,
};
pub use policy::{
    ClusterAffinity, ClusterPropagationPolicy, ClusterPropagationSpec, Placement,
    PropagationPolicy, PropagationSpec,
};
pub use work::{Manifest, Work, WorkSpec, WorkStatus};

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A manifest must be a JSON object.
    #[error("a manifest must be a JSON object, not {0}")]
    NotAnObject(&'static str),
    /// A CRD could not be written as YAML.
    #[error("cannot write CRD {name} as YAML: {source}")]
    Yaml {
        /// The CRD's name.
        name: String,
        /// What went wrong.
        source: serde_norway::Error,
    },
}
