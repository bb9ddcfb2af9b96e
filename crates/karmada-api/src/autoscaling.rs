//! `autoscaling.karmada.io/v1alpha1` FederatedHPA and CronFederatedHPA: autoscaling of a
//! propagated workload across clusters, by metrics (the shape of an `autoscaling/v2`
//! HorizontalPodAutoscaler) or by a cron schedule.
//!
//! Flotilla stores and serves these kinds (so Karmada users' manifests and Karmada's own
//! controllers work against the host), but runs no controller for them yet.

use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscalerBehavior, HorizontalPodAutoscalerStatus,
    MetricSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

/// Desired behaviour of a FederatedHPA: the workload it scales, the replica bounds and the
/// metrics it scales on, as an `autoscaling/v2` HorizontalPodAutoscaler spells them.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "autoscaling.karmada.io",
    version = "v1alpha1",
    kind = "FederatedHPA",
    plural = "federatedhpas",
    singular = "federatedhpa",
    shortname = "fhpa",
    category = "karmada-io",
    namespaced,
    status = "FederatedHPAStatus",
    derive = "PartialEq",
    doc = "FederatedHPA scales a workload propagated to several clusters on the metrics of all of them.",
    printcolumn(
        name = "REFERENCE-KIND",
        type_ = "string",
        json_path = ".spec.scaleTargetRef.kind"
    ),
    printcolumn(
        name = "REFERENCE-NAME",
        type_ = "string",
        json_path = ".spec.scaleTargetRef.name"
    ),
    printcolumn(name = "MINPODS", type_ = "integer", json_path = ".spec.minReplicas"),
    printcolumn(name = "MAXPODS", type_ = "integer", json_path = ".spec.maxReplicas"),
    printcolumn(
        name = "REPLICAS",
        type_ = "integer",
        json_path = ".status.currentReplicas"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FederatedHPASpec {
    /// The workload to scale (a resource template of the host).
    pub scale_target_ref: CrossVersionObjectReference,
    /// Fewest replicas (Karmada's default: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<i32>,
    /// Most replicas.
    pub max_replicas: i32,
    /// The metrics the desired replica count is computed from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricSpec>,
    /// How fast to scale up and down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<HorizontalPodAutoscalerBehavior>,
}

/// Observed state of a FederatedHPA: an `autoscaling/v2` HorizontalPodAutoscaler status.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(transparent)]
#[schemars(transform = conditions_by_type)]
pub struct FederatedHPAStatus(pub HorizontalPodAutoscalerStatus);

impl std::ops::Deref for FederatedHPAStatus {
    type Target = HorizontalPodAutoscalerStatus;
    fn deref(&self) -> &HorizontalPodAutoscalerStatus {
        &self.0
    }
}

impl std::ops::DerefMut for FederatedHPAStatus {
    fn deref_mut(&mut self) -> &mut HorizontalPodAutoscalerStatus {
        &mut self.0
    }
}

/// The HorizontalPodAutoscaler API declares its conditions a list map keyed by `type`
/// (server-side apply merges them by type); k8s-openapi's schema leaves that out.
fn conditions_by_type(schema: &mut Schema) {
    if let Some(conditions) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("conditions"))
        .and_then(serde_json::Value::as_object_mut)
    {
        conditions.insert("x-kubernetes-list-type".into(), "map".into());
        conditions.insert(
            "x-kubernetes-list-map-keys".into(),
            serde_json::json!(["type"]),
        );
    }
}

/// Desired behaviour of a CronFederatedHPA: the workload (or FederatedHPA) it scales and the
/// cron rules saying when and to what.
// Each printcolumn(...) repeats the same keys, which clippy takes for duplicate attributes.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "autoscaling.karmada.io",
    version = "v1alpha1",
    kind = "CronFederatedHPA",
    plural = "cronfederatedhpas",
    singular = "cronfederatedhpa",
    shortname = "cronfhpa",
    category = "karmada-io",
    namespaced,
    status = "CronFederatedHPAStatus",
    derive = "PartialEq",
    doc = "CronFederatedHPA scales a workload or a FederatedHPA on a cron schedule.",
    printcolumn(
        name = "REFERENCE-KIND",
        type_ = "string",
        json_path = ".spec.scaleTargetRef.kind"
    ),
    printcolumn(
        name = "REFERENCE-NAME",
        type_ = "string",
        json_path = ".spec.scaleTargetRef.name"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPASpec {
    /// The workload or FederatedHPA to scale. For a workload the rules set its replicas; for
    /// a FederatedHPA they set its bounds.
    pub scale_target_ref: CrossVersionObjectReference,
    /// When and how to scale.
    pub rules: Vec<CronFederatedHPARule>,
}

/// One cron rule of a CronFederatedHPA.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPARule {
    /// Name of the rule, unique in the object.
    #[schemars(length(min = 1, max = 32))]
    pub name: String,
    /// Standard cron expression (`0 8 * * 1-5`).
    pub schedule: String,
    /// Replicas to set on a workload target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_replicas: Option<i32>,
    /// `minReplicas` to set on a FederatedHPA target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_min_replicas: Option<i32>,
    /// `maxReplicas` to set on a FederatedHPA target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_max_replicas: Option<i32>,
    /// Skip future runs of this rule (past runs are unaffected).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = false))]
    pub suspend: Option<bool>,
    /// IANA time zone the schedule is read in; absent: the controller's local time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Successful runs kept in the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 32), extend("default" = 3))]
    pub successful_history_limit: Option<i32>,
    /// Failed runs kept in the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 32), extend("default" = 3))]
    pub failed_history_limit: Option<i32>,
}

/// Observed state of a CronFederatedHPA.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronFederatedHPAStatus {
    /// Recent runs, per rule.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub execution_histories: Vec<ExecutionHistory>,
}

/// The recent runs of one rule.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionHistory {
    /// The rule.
    pub rule_name: String,
    /// When it runs next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_execution_time: Option<Time>,
    /// Runs that succeeded, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub successful_executions: Vec<SuccessfulExecution>,
    /// Runs that failed, newest last.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_executions: Vec<FailedExecution>,
}

/// A run that succeeded and what it set.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SuccessfulExecution {
    /// When the run was due.
    pub schedule_time: Time,
    /// When it ran.
    pub execution_time: Time,
    /// Replicas set on a workload target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_replicas: Option<i32>,
    /// `maxReplicas` set on a FederatedHPA target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_max_replicas: Option<i32>,
    /// `minReplicas` set on a FederatedHPA target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied_min_replicas: Option<i32>,
}

/// A run that failed, and why.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedExecution {
    /// When the run was due.
    pub schedule_time: Time,
    /// When it ran.
    pub execution_time: Time,
    /// What went wrong.
    pub message: String,
}
