//! Karmada's default resource interpretation as pure functions over whole objects
//! (`serde_json::Value`: apiVersion, kind, metadata, spec, status): what the detector, the
//! binding controller and the status controllers ask about a workload, answered the way
//! Karmada's `pkg/resourceinterpreter/default/native` answers it.
//!
//! ```text
//!  template ─get_replicas────────▶ binding.spec.replicas / replicaRequirements   (detector)
//!  template ─dependencies────────▶ ConfigMaps, Secrets, ... to propagate with it (detector)
//!  template ─revise_replicas─────▶ one cluster's copy                             (binding)
//!  member object ─reflect_status─▶ Work.status.manifestStatuses[].status          (work status)
//!  member object ─health─────────▶ Work.status.manifestStatuses[].health          (work status)
//!  binding.status.aggregatedStatus ─aggregate_status─▶ template .status           (binding status)
//!  desired + member object ─retain─▶ the object a takeover writes                 (execution)
//! ```
//!
//! Per kind (`apps/v1`: Deployment, StatefulSet, ReplicaSet, DaemonSet; `batch/v1`: Job,
//! CronJob; `v1`: Pod, Service, PersistentVolumeClaim; anything else, including CRD kinds and
//! other versions, follows the last row):
//!
//! | kind | replicas | revise | health | reflect | aggregate | dependencies |
//! |---|---|---|---|---|---|---|
//! | Deployment | `spec.replicas` (absent: 1) | `spec.replicas` | generation observed, updated ≥ spec.replicas, available ≥ updated | replicas, updated, ready, available, unavailable, observedGeneration + generation, resourceTemplateGeneration | sums; observedGeneration rule below | pod template |
//! | StatefulSet | `spec.replicas` (absent: 1) | `spec.replicas` | as Deployment | replicas, ready, current, updated, available, observedGeneration + generations | sums; observedGeneration rule | pod template minus PVCs of `volumeClaimTemplates` |
//! | ReplicaSet | `spec.replicas` (absent: 1) | `spec.replicas` | generation observed, available ≥ spec.replicas | replicas, ready, available, observedGeneration + generations | sums; observedGeneration rule | pod template |
//! | DaemonSet | none | no-op | generation observed, updatedNumberScheduled ≥ desired, numberAvailable ≥ updated | the seven counters, observedGeneration + generations | sums; observedGeneration rule | pod template |
//! | Job | min(parallelism, completions) (parallelism absent: 1) | `spec.parallelism` = share; `spec.completions` split (below) | Unhealthy iff a `Failed` condition is True | active, succeeded, failed, conditions, startTime, completionTime | sums; `Failed` if any member failed, `Complete` if all completed; startTime earliest (when all started), completionTime latest (when all completed); frozen once the template finished | pod template |
//! | CronJob | none | no-op | Healthy | whole status | active concatenated; lastScheduleTime, lastSuccessfulTime latest | `spec.jobTemplate.spec.template` |
//! | Pod | 1 | no-op | Succeeded, or Running with Ready True | whole status | phase: Failed > Pending (incl. not yet reported) > Running > Succeeded; container ready/state | its spec |
//! | Service | none | no-op | not LoadBalancer, or an ingress with ip/hostname | `loadBalancer` of LoadBalancer services, else none | LoadBalancer ingress merged, deduplicated, sorted | none |
//! | PersistentVolumeClaim | none | no-op | phase Bound | whole status | phase: Lost if any, else a non-Bound phase if any, else Bound | none |
//! | other | none | no-op | Healthy (Karmada treats kinds without a rule as healthy) | whole status | status of the first item that has one | none |
//!
//! Choices and deviations, each deliberate:
//! - observedGeneration rule (Karmada's): the template's `status.observedGeneration` becomes
//!   its `metadata.generation` only when every item has a status with
//!   `observedGeneration >= generation` (the member observed the spec it was given) and
//!   `resourceTemplateGeneration >= ` the template's generation (it was given the latest
//!   template); otherwise the previous value stays (omitted when there was none).
//! - StatefulSet: Karmada's reflection drops `observedGeneration` and so can never mark the
//!   template observed; Flotilla reflects it and applies the Deployment rule.
//! - Job health: Karmada has no rule (so: healthy); Flotilla reports a failed Job unhealthy.
//! - Job conditions carry the members' times (latest completion / failure) instead of "now",
//!   so aggregating the same items twice gives the same status and no needless write.
//! - Replicas absent from a Deployment/StatefulSet/ReplicaSet count as 1 (the API server's
//!   default, which Karmada sees on a defaulted object).
//! - Other kinds' aggregation: Karmada leaves a CRD template's status alone without a
//!   customisation; Flotilla copies the first reported member status (items come in cluster
//!   name order), so a custom resource propagated to one cluster shows that cluster's status.
//! - Job completions: Karmada divides `spec.completions` over the target clusters by the
//!   Webster method weighted by their replicas ([`revise_replicas_among`] does exactly that).
//!   [`revise_replicas`] sees one cluster only and gives it `ceil(completions * share / total)`,
//!   so that together the clusters never run fewer completions than asked.
//!
//! Aggregated and reflected statuses follow the Kubernetes JSON shapes: counters the
//! Kubernetes types mark `omitempty` are left out when zero.

mod dependencies;
mod fields;
mod health;
mod replicas;
mod retain;
mod status;

pub use dependencies::{Dependency, dependencies};

/// Where the pod spec of a workload's pods is (`/spec` for a Pod, `/spec/template/spec` for
/// the controllers of pods, `/spec/jobTemplate/spec/template/spec` for a CronJob), by
/// apiVersion and kind; `None` for kinds without pods.
pub fn pod_spec_pointer(obj: &serde_json::Value) -> Option<&'static str> {
    Kind::of(obj).pod_spec_path()
}
pub use health::health;
pub use replicas::{
    ReplicaInfo, divide_job_completions, get_replicas, has_replicas, revise_replicas,
    revise_replicas_among,
};
pub use retain::{RETAIN_REPLICAS_LABEL, retain};
pub use status::{aggregate_status, applied_item, reflect_status};

/// Why an object could not be interpreted.
#[derive(Debug, thiserror::Error)]
pub enum InterpretError {
    /// A field holds a value of the wrong type (e.g. `spec.replicas: "three"`).
    #[error("{kind}: field {path} is not {expected}")]
    FieldType {
        kind: String,
        path: &'static str,
        expected: &'static str,
    },
    /// The pod template does not decode as a core/v1 PodSpec.
    #[error("{kind}: decoding the pod template")]
    PodTemplate {
        kind: String,
        source: serde_json::Error,
    },
    /// A negative replica count was asked for.
    #[error("replicas must not be negative, got {replicas} of {total}")]
    NegativeReplicas { replicas: i32, total: i32 },
    /// `cluster` is not among the targets.
    #[error("cluster {cluster} is not among the binding's target clusters")]
    UnknownCluster { cluster: String },
}

/// The kinds with rules; everything else is [`Kind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Deployment,
    StatefulSet,
    ReplicaSet,
    DaemonSet,
    Job,
    CronJob,
    Pod,
    Service,
    PersistentVolumeClaim,
    Ingress,
    Other,
}

impl Kind {
    /// Rules are keyed by group, version and kind, as Karmada keys them: `apps/v1beta2`
    /// Deployments are "other".
    pub(crate) fn new(api_version: &str, kind: &str) -> Self {
        match (api_version, kind) {
            ("apps/v1", "Deployment") => Self::Deployment,
            ("apps/v1", "StatefulSet") => Self::StatefulSet,
            ("apps/v1", "ReplicaSet") => Self::ReplicaSet,
            ("apps/v1", "DaemonSet") => Self::DaemonSet,
            ("batch/v1", "Job") => Self::Job,
            ("batch/v1", "CronJob") => Self::CronJob,
            ("v1", "Pod") => Self::Pod,
            ("v1", "Service") => Self::Service,
            ("v1", "PersistentVolumeClaim") => Self::PersistentVolumeClaim,
            ("networking.k8s.io/v1", "Ingress") => Self::Ingress,
            _ => Self::Other,
        }
    }

    pub(crate) fn of(obj: &serde_json::Value) -> Self {
        Self::new(
            fields::str_at(obj, "/apiVersion"),
            fields::str_at(obj, "/kind"),
        )
    }

    /// Where the pod spec of the kind's pods is.
    pub(crate) fn pod_spec_path(self) -> Option<&'static str> {
        match self {
            Self::Deployment
            | Self::StatefulSet
            | Self::ReplicaSet
            | Self::DaemonSet
            | Self::Job => Some("/spec/template/spec"),
            Self::CronJob => Some("/spec/jobTemplate/spec/template/spec"),
            Self::Pod => Some("/spec"),
            Self::Service | Self::PersistentVolumeClaim | Self::Ingress | Self::Other => None,
        }
    }
}
