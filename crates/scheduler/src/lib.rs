//! The pure core of Flotilla's scheduler: given one binding's placement, its previous result
//! and a snapshot of the member clusters, decide which clusters get how many replicas.
//!
//! No IO, no clocks, no async: every function here is a pure function of its arguments, so
//! the scheduling loop (`flotilla-scheduler-controller`) owns watching, queueing and writing.
//!
//! Pipeline (Karmada's, see DESIGN §5): filter -> score -> select (spread constraints) ->
//! assign replicas.
//!
//! - [`snapshot`]: [`ClusterSnapshot`] (a Cluster pre-parsed into integer vectors once per
//!   cluster change), [`Reservations`] and the free-capacity estimate;
//! - [`resources`]: [`ResourceVector`] and Kubernetes quantity parsing;
//! - [`filter`]: cluster affinity, taints and tolerations, API enablement;
//! - [`select`]: scoring and spread constraints;
//! - [`assign`] and [`webster`]: replica division (Duplicated, static weights, dynamic
//!   weights, Aggregated);
//! - [`schedule`]: the pipeline, including `clusterAffinities` fall-through.

pub mod assign;
pub mod filter;
pub mod resources;
pub mod schedule;
pub mod select;
pub mod snapshot;
pub mod webster;

pub use filter::{AffinityMatcher, no_execute_eviction_after, tolerates};
use flotilla_karmada_api::binding::TargetCluster;
pub use k8s_openapi::api::core::v1::{Taint, Toleration};
pub use resources::ResourceVector;
pub use schedule::schedule;
pub use snapshot::{ApiSet, ClusterSnapshot, NodeGroup, Reservations, api_hash};

use flotilla_karmada_api::binding::{
    REASON_NO_CLUSTER_FIT, REASON_SCHEDULER_ERROR, REASON_UNSCHEDULABLE,
};

/// One scheduling decision's input, borrowed from the binding.
#[derive(Clone, Copy, Debug)]
pub struct ScheduleRequest<'a> {
    /// Binding UID (or `namespace/name` when there is no UID); fixes the name order used to
    /// break ties, deterministically per binding.
    pub key: &'a str,
    /// The template's apiVersion, for the API enablement filter.
    pub api_version: &'a str,
    /// The template's kind, for the API enablement filter.
    pub kind: &'a str,
    /// Desired replicas; 0 for objects without replicas (every selected cluster gets 0 and
    /// capacity is not considered).
    pub replicas: i32,
    /// What one replica requests (see [`ResourceVector::from_resource_list`]).
    pub per_replica: &'a ResourceVector,
    /// The binding's placement.
    pub placement: &'a flotilla_karmada_api::Placement,
    /// The current `spec.clusters`.
    pub previous: &'a [TargetCluster],
    /// A reschedule was triggered after the last schedule: recompute everything.
    pub fresh: bool,
    /// Clusters being evicted from (graceful eviction tasks): never chosen as targets.
    pub evicted: &'a [String],
    /// The `clusterAffinities` term the last schedule used (the binding's
    /// `status.schedulerObservedAffinityName`): a steady reschedule starts there, so a
    /// workload that fell through to a backup term stays on it.
    pub observed_affinity: Option<&'a str>,
}

/// A successful scheduling decision.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScheduleResult {
    /// Target clusters, sorted by name. With Divided strategies and replicas > 0, clusters
    /// that would get 0 replicas are left out (as Karmada does).
    pub clusters: Vec<TargetCluster>,
    /// The `clusterAffinities` term used, when the placement has `clusterAffinities`.
    pub affinity_name: Option<String>,
}

/// Why a binding could not be scheduled. The message is meant for the `Scheduled` condition.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The filters left no cluster; the message counts rejections per filter, like
    /// `0/3 clusters are available: 1 cluster(s) had untolerated taint {k: v}, ...`.
    #[error("{message}")]
    NoClusterFit {
        /// Human-readable explanation.
        message: String,
    },
    /// Not enough capacity for the replicas.
    #[error("{message}")]
    Unschedulable {
        /// Human-readable explanation, saying how many replicas are missing.
        message: String,
    },
    /// The spread constraints cannot be met by the feasible clusters.
    #[error("{message}")]
    SpreadConstraint {
        /// Human-readable explanation.
        message: String,
    },
    /// The placement itself is unusable (e.g. a negative replica count).
    #[error("invalid placement: {message}")]
    InvalidPlacement {
        /// Human-readable explanation.
        message: String,
    },
}

impl ScheduleError {
    /// The `Scheduled` condition reason for this error (Karmada's reasons).
    pub fn reason(&self) -> &'static str {
        match self {
            ScheduleError::NoClusterFit { .. } => REASON_NO_CLUSTER_FIT,
            ScheduleError::Unschedulable { .. } => REASON_UNSCHEDULABLE,
            // Karmada reports spread-selection failures as generic scheduler errors.
            ScheduleError::SpreadConstraint { .. } | ScheduleError::InvalidPlacement { .. } => {
                REASON_SCHEDULER_ERROR
            }
        }
    }

    /// The human-readable message (the condition's message).
    pub fn message(&self) -> &str {
        match self {
            ScheduleError::NoClusterFit { message }
            | ScheduleError::Unschedulable { message }
            | ScheduleError::SpreadConstraint { message }
            | ScheduleError::InvalidPlacement { message } => message,
        }
    }
}

/// Errors of this crate outside a scheduling decision (input parsing).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    /// A resource quantity is not a valid Kubernetes quantity.
    #[error("invalid quantity {value:?} for resource {resource}")]
    InvalidQuantity {
        /// Resource name.
        resource: String,
        /// The offending text.
        value: String,
    },
}
