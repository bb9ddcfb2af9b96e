//! Karmada-compatible API types for Flotilla, with their schemas; no IO.
//!
//! Field names and JSON shapes follow Karmada's, so a Karmada user's YAML parses:
//!
//! - [`cluster`]: `cluster.karmada.io/v1alpha1` Cluster (served by the aggregated server), with
//!   the Flotilla status extension `nodeCapacities`;
//! - [`policy`]: `policy.karmada.io/v1alpha1` PropagationPolicy, ClusterPropagationPolicy and
//!   the placement types;
//! - [`overrides`]: `policy.karmada.io/v1alpha1` OverridePolicy, ClusterOverridePolicy;
//! - [`taints`]: `policy.karmada.io/v1alpha1` ClusterTaintPolicy;
//! - [`quota`]: `policy.karmada.io/v1alpha1` FederatedResourceQuota;
//! - [`binding`]: `work.karmada.io/v1alpha2` ResourceBinding, ClusterResourceBinding;
//! - [`work`]: `work.karmada.io/v1alpha1` Work;
//! - [`autoscaling`]: `autoscaling.karmada.io/v1alpha1` FederatedHPA, CronFederatedHPA;
//! - [`config`]: `config.karmada.io/v1alpha1` ResourceInterpreterCustomization,
//!   ResourceInterpreterWebhookConfiguration;
//! - [`networking`]: `networking.karmada.io/v1alpha1` MultiClusterService,
//!   MultiClusterIngress;
//! - [`apps`]: `apps.karmada.io/v1alpha1` WorkloadRebalancer;
//! - [`remedy`]: `remedy.karmada.io/v1alpha1` Remedy;
//! - [`mcs`]: `multicluster.x-k8s.io/v1alpha1` ServiceExport, ServiceImport (the
//!   Multi-Cluster Services API, whose CRDs Karmada ships);
//! - [`crd`]: the CustomResourceDefinitions of all these kinds but Cluster, and their YAML.
//!
//! Every CRD Karmada ships is here (`tests/karmada-crds.txt` lists them and
//! `tests/karmada-fields.txt` every field of their schemas; `tests/karmada.rs` checks the
//! generated CRDs against both). Flotilla's controllers act on the policies, bindings and
//! Works; the other kinds are stored and served so that Karmada users' manifests and
//! Karmada's own components work, with no Flotilla controller behind them yet.
//!
//! Conventions: optional scalars are `Option` (absent stays absent on re-serialisation),
//! optional lists and maps are empty when absent and omitted when empty, enums serialise to
//! Karmada's exact strings. Where Karmada's schema leaves a value open (a string with
//! documented values but no enum), the field is a `String` and the known values are
//! constants, so that the schema accepts what Karmada's accepts.

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

pub mod apps;
pub mod autoscaling;
pub mod binding;
pub mod cluster;
pub mod config;
pub mod crd;
pub mod mcs;
pub mod networking;
pub mod overrides;
pub mod policy;
pub mod quota;
pub mod remedy;
mod schemas;
pub mod taints;
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

pub use apps::WorkloadRebalancer;
pub use autoscaling::{CronFederatedHPA, FederatedHPA};
pub use config::{ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration};
pub use mcs::{ServiceExport, ServiceImport};
pub use networking::{MultiClusterIngress, MultiClusterService};
pub use quota::FederatedResourceQuota;
pub use remedy::Remedy;
pub use taints::ClusterTaintPolicy;

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
