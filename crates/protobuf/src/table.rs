//! The descriptor table: one static per protobuf message reachable from the supported kinds.
//!
//! Written by `tools/gen_table.py` (rerun it, then rustfmt, rather than editing). Field numbers
//! and proto types are the Kubernetes 1.35 wire format (a superset of 1.32/1.33); JSON names,
//! inline embedding and the omit-zero flags follow the Go struct tags (`json:"...,omitempty"`
//! on non-pointer scalars); every JSON name was checked against k8s-openapi's serializers.

use crate::descriptor::{FieldDesc as F, FieldType as T, MessageDesc};

pub(crate) static APPS_V1_CONTROLLER_REVISION: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.ControllerRevision",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "data", T::RawExtension),
        F::new(3, "revision", T::Int64),
    ],
};

pub(crate) static APPS_V1_DAEMON_SET: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DaemonSet",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&APPS_V1_DAEMON_SET_SPEC)),
        F::new(3, "status", T::Message(&APPS_V1_DAEMON_SET_STATUS)),
    ],
};

pub(crate) static APPS_V1_DAEMON_SET_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DaemonSetCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastTransitionTime", T::Time),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(5, "message", T::String).omit_zero(),
    ],
};

pub(crate) static APPS_V1_DAEMON_SET_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DaemonSetSpec",
    fields: &[
        F::new(1, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(2, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
        F::new(
            3,
            "updateStrategy",
            T::Message(&APPS_V1_DAEMON_SET_UPDATE_STRATEGY),
        ),
        F::new(4, "minReadySeconds", T::Int32).omit_zero(),
        F::new(6, "revisionHistoryLimit", T::Int32),
    ],
};

pub(crate) static APPS_V1_DAEMON_SET_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DaemonSetStatus",
    fields: &[
        F::new(1, "currentNumberScheduled", T::Int32),
        F::new(2, "numberMisscheduled", T::Int32),
        F::new(3, "desiredNumberScheduled", T::Int32),
        F::new(4, "numberReady", T::Int32),
        F::new(5, "observedGeneration", T::Int64).omit_zero(),
        F::new(6, "updatedNumberScheduled", T::Int32).omit_zero(),
        F::new(7, "numberAvailable", T::Int32).omit_zero(),
        F::new(8, "numberUnavailable", T::Int32).omit_zero(),
        F::new(9, "collisionCount", T::Int32),
        F::new(10, "conditions", T::Message(&APPS_V1_DAEMON_SET_CONDITION)).repeated(),
    ],
};

pub(crate) static APPS_V1_DAEMON_SET_UPDATE_STRATEGY: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DaemonSetUpdateStrategy",
    fields: &[
        F::new(1, "type", T::String).omit_zero(),
        F::new(
            2,
            "rollingUpdate",
            T::Message(&APPS_V1_ROLLING_UPDATE_DAEMON_SET),
        ),
    ],
};

pub(crate) static APPS_V1_DEPLOYMENT: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.Deployment",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&APPS_V1_DEPLOYMENT_SPEC)),
        F::new(3, "status", T::Message(&APPS_V1_DEPLOYMENT_STATUS)),
    ],
};

pub(crate) static APPS_V1_DEPLOYMENT_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DeploymentCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(6, "lastUpdateTime", T::Time),
        F::new(7, "lastTransitionTime", T::Time),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(5, "message", T::String).omit_zero(),
    ],
};

pub(crate) static APPS_V1_DEPLOYMENT_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DeploymentSpec",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(2, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(3, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
        F::new(4, "strategy", T::Message(&APPS_V1_DEPLOYMENT_STRATEGY)),
        F::new(5, "minReadySeconds", T::Int32).omit_zero(),
        F::new(6, "revisionHistoryLimit", T::Int32),
        F::new(7, "paused", T::Bool).omit_zero(),
        F::new(9, "progressDeadlineSeconds", T::Int32),
    ],
};

pub(crate) static APPS_V1_DEPLOYMENT_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DeploymentStatus",
    fields: &[
        F::new(1, "observedGeneration", T::Int64).omit_zero(),
        F::new(2, "replicas", T::Int32).omit_zero(),
        F::new(3, "updatedReplicas", T::Int32).omit_zero(),
        F::new(7, "readyReplicas", T::Int32).omit_zero(),
        F::new(4, "availableReplicas", T::Int32).omit_zero(),
        F::new(5, "unavailableReplicas", T::Int32).omit_zero(),
        F::new(9, "terminatingReplicas", T::Int32),
        F::new(6, "conditions", T::Message(&APPS_V1_DEPLOYMENT_CONDITION)).repeated(),
        F::new(8, "collisionCount", T::Int32),
    ],
};

pub(crate) static APPS_V1_DEPLOYMENT_STRATEGY: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.DeploymentStrategy",
    fields: &[
        F::new(1, "type", T::String).omit_zero(),
        F::new(
            2,
            "rollingUpdate",
            T::Message(&APPS_V1_ROLLING_UPDATE_DEPLOYMENT),
        ),
    ],
};

pub(crate) static APPS_V1_REPLICA_SET: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.ReplicaSet",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&APPS_V1_REPLICA_SET_SPEC)),
        F::new(3, "status", T::Message(&APPS_V1_REPLICA_SET_STATUS)),
    ],
};

pub(crate) static APPS_V1_REPLICA_SET_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.ReplicaSetCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastTransitionTime", T::Time),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(5, "message", T::String).omit_zero(),
    ],
};

pub(crate) static APPS_V1_REPLICA_SET_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.ReplicaSetSpec",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(4, "minReadySeconds", T::Int32).omit_zero(),
        F::new(2, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(3, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(crate) static APPS_V1_REPLICA_SET_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.ReplicaSetStatus",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(2, "fullyLabeledReplicas", T::Int32).omit_zero(),
        F::new(4, "readyReplicas", T::Int32).omit_zero(),
        F::new(5, "availableReplicas", T::Int32).omit_zero(),
        F::new(7, "terminatingReplicas", T::Int32),
        F::new(3, "observedGeneration", T::Int64).omit_zero(),
        F::new(6, "conditions", T::Message(&APPS_V1_REPLICA_SET_CONDITION)).repeated(),
    ],
};

pub(crate) static APPS_V1_ROLLING_UPDATE_DAEMON_SET: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.RollingUpdateDaemonSet",
    fields: &[
        F::new(1, "maxUnavailable", T::IntOrString),
        F::new(2, "maxSurge", T::IntOrString),
    ],
};

pub(crate) static APPS_V1_ROLLING_UPDATE_DEPLOYMENT: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.RollingUpdateDeployment",
    fields: &[
        F::new(1, "maxUnavailable", T::IntOrString),
        F::new(2, "maxSurge", T::IntOrString),
    ],
};

pub(crate) static APPS_V1_ROLLING_UPDATE_STATEFUL_SET_STRATEGY: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.RollingUpdateStatefulSetStrategy",
    fields: &[
        F::new(1, "partition", T::Int32),
        F::new(2, "maxUnavailable", T::IntOrString),
    ],
};

pub(crate) static APPS_V1_STATEFUL_SET: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.StatefulSet",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&APPS_V1_STATEFUL_SET_SPEC)),
        F::new(3, "status", T::Message(&APPS_V1_STATEFUL_SET_STATUS)),
    ],
};

pub(crate) static APPS_V1_STATEFUL_SET_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.StatefulSetCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastTransitionTime", T::Time),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(5, "message", T::String).omit_zero(),
    ],
};

pub(crate) static APPS_V1_STATEFUL_SET_ORDINALS: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.StatefulSetOrdinals",
    fields: &[F::new(1, "start", T::Int32)],
};

pub(crate) static APPS_V1_STATEFUL_SET_PERSISTENT_VOLUME_CLAIM_RETENTION_POLICY: MessageDesc =
    MessageDesc {
        name: "k8s.io.api.apps.v1.StatefulSetPersistentVolumeClaimRetentionPolicy",
        fields: &[
            F::new(1, "whenDeleted", T::String).omit_zero(),
            F::new(2, "whenScaled", T::String).omit_zero(),
        ],
    };

pub(crate) static APPS_V1_STATEFUL_SET_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.StatefulSetSpec",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(2, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(3, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
        F::new(
            4,
            "volumeClaimTemplates",
            T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM),
        )
        .repeated(),
        F::new(5, "serviceName", T::String),
        F::new(6, "podManagementPolicy", T::String).omit_zero(),
        F::new(
            7,
            "updateStrategy",
            T::Message(&APPS_V1_STATEFUL_SET_UPDATE_STRATEGY),
        ),
        F::new(8, "revisionHistoryLimit", T::Int32),
        F::new(9, "minReadySeconds", T::Int32).omit_zero(),
        F::new(
            10,
            "persistentVolumeClaimRetentionPolicy",
            T::Message(&APPS_V1_STATEFUL_SET_PERSISTENT_VOLUME_CLAIM_RETENTION_POLICY),
        ),
        F::new(11, "ordinals", T::Message(&APPS_V1_STATEFUL_SET_ORDINALS)),
    ],
};

pub(crate) static APPS_V1_STATEFUL_SET_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.StatefulSetStatus",
    fields: &[
        F::new(1, "observedGeneration", T::Int64).omit_zero(),
        F::new(2, "replicas", T::Int32),
        F::new(3, "readyReplicas", T::Int32).omit_zero(),
        F::new(4, "currentReplicas", T::Int32).omit_zero(),
        F::new(5, "updatedReplicas", T::Int32).omit_zero(),
        F::new(6, "currentRevision", T::String).omit_zero(),
        F::new(7, "updateRevision", T::String).omit_zero(),
        F::new(9, "collisionCount", T::Int32),
        F::new(
            10,
            "conditions",
            T::Message(&APPS_V1_STATEFUL_SET_CONDITION),
        )
        .repeated(),
        F::new(11, "availableReplicas", T::Int32),
    ],
};

pub(crate) static APPS_V1_STATEFUL_SET_UPDATE_STRATEGY: MessageDesc = MessageDesc {
    name: "k8s.io.api.apps.v1.StatefulSetUpdateStrategy",
    fields: &[
        F::new(1, "type", T::String).omit_zero(),
        F::new(
            2,
            "rollingUpdate",
            T::Message(&APPS_V1_ROLLING_UPDATE_STATEFUL_SET_STRATEGY),
        ),
    ],
};

pub(crate) static AUTHENTICATION_V1_BOUND_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.BoundObjectReference",
    fields: &[
        F::new(1, "kind", T::String).omit_zero(),
        F::new(2, "apiVersion", T::String).omit_zero(),
        F::new(3, "name", T::String).omit_zero(),
        F::new(4, "uid", T::String).omit_zero(),
    ],
};

pub(crate) static AUTHENTICATION_V1_SELF_SUBJECT_REVIEW: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.SelfSubjectReview",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(
            2,
            "status",
            T::Message(&AUTHENTICATION_V1_SELF_SUBJECT_REVIEW_STATUS),
        ),
    ],
};

pub(crate) static AUTHENTICATION_V1_SELF_SUBJECT_REVIEW_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.SelfSubjectReviewStatus",
    fields: &[F::new(
        1,
        "userInfo",
        T::Message(&AUTHENTICATION_V1_USER_INFO),
    )],
};

pub(crate) static AUTHENTICATION_V1_TOKEN_REQUEST: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.TokenRequest",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&AUTHENTICATION_V1_TOKEN_REQUEST_SPEC)),
        F::new(
            3,
            "status",
            T::Message(&AUTHENTICATION_V1_TOKEN_REQUEST_STATUS),
        ),
    ],
};

pub(crate) static AUTHENTICATION_V1_TOKEN_REQUEST_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.TokenRequestSpec",
    fields: &[
        F::new(1, "audiences", T::String).repeated(),
        F::new(4, "expirationSeconds", T::Int64),
        F::new(
            3,
            "boundObjectRef",
            T::Message(&AUTHENTICATION_V1_BOUND_OBJECT_REFERENCE),
        ),
    ],
};

pub(crate) static AUTHENTICATION_V1_TOKEN_REQUEST_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.TokenRequestStatus",
    fields: &[
        F::new(1, "token", T::String),
        F::new(2, "expirationTimestamp", T::Time),
    ],
};

pub(crate) static AUTHENTICATION_V1_USER_INFO: MessageDesc = MessageDesc {
    name: "k8s.io.api.authentication.v1.UserInfo",
    fields: &[
        F::new(1, "username", T::String).omit_zero(),
        F::new(2, "uid", T::String).omit_zero(),
        F::new(3, "groups", T::String).repeated(),
        F::new(4, "extra", T::Map(&T::StringList)),
    ],
};

pub(crate) static AUTHORIZATION_V1_FIELD_SELECTOR_ATTRIBUTES: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.FieldSelectorAttributes",
    fields: &[
        F::new(1, "rawSelector", T::String).omit_zero(),
        F::new(
            2,
            "requirements",
            T::Message(&META_V1_FIELD_SELECTOR_REQUIREMENT),
        )
        .repeated(),
    ],
};

pub(crate) static AUTHORIZATION_V1_LABEL_SELECTOR_ATTRIBUTES: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.LabelSelectorAttributes",
    fields: &[
        F::new(1, "rawSelector", T::String).omit_zero(),
        F::new(
            2,
            "requirements",
            T::Message(&META_V1_LABEL_SELECTOR_REQUIREMENT),
        )
        .repeated(),
    ],
};

pub(crate) static AUTHORIZATION_V1_NON_RESOURCE_ATTRIBUTES: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.NonResourceAttributes",
    fields: &[
        F::new(1, "path", T::String).omit_zero(),
        F::new(2, "verb", T::String).omit_zero(),
    ],
};

pub(crate) static AUTHORIZATION_V1_NON_RESOURCE_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.NonResourceRule",
    fields: &[
        F::new(1, "verbs", T::String).repeated(),
        F::new(2, "nonResourceURLs", T::String).repeated(),
    ],
};

pub(crate) static AUTHORIZATION_V1_RESOURCE_ATTRIBUTES: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.ResourceAttributes",
    fields: &[
        F::new(1, "namespace", T::String).omit_zero(),
        F::new(2, "verb", T::String).omit_zero(),
        F::new(3, "group", T::String).omit_zero(),
        F::new(4, "version", T::String).omit_zero(),
        F::new(5, "resource", T::String).omit_zero(),
        F::new(6, "subresource", T::String).omit_zero(),
        F::new(7, "name", T::String).omit_zero(),
        F::new(
            8,
            "fieldSelector",
            T::Message(&AUTHORIZATION_V1_FIELD_SELECTOR_ATTRIBUTES),
        ),
        F::new(
            9,
            "labelSelector",
            T::Message(&AUTHORIZATION_V1_LABEL_SELECTOR_ATTRIBUTES),
        ),
    ],
};

pub(crate) static AUTHORIZATION_V1_RESOURCE_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.ResourceRule",
    fields: &[
        F::new(1, "verbs", T::String).repeated(),
        F::new(2, "apiGroups", T::String).repeated(),
        F::new(3, "resources", T::String).repeated(),
        F::new(4, "resourceNames", T::String).repeated(),
    ],
};

pub(crate) static AUTHORIZATION_V1_SELF_SUBJECT_ACCESS_REVIEW: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.SelfSubjectAccessReview",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(
            2,
            "spec",
            T::Message(&AUTHORIZATION_V1_SELF_SUBJECT_ACCESS_REVIEW_SPEC),
        ),
        F::new(
            3,
            "status",
            T::Message(&AUTHORIZATION_V1_SUBJECT_ACCESS_REVIEW_STATUS),
        ),
    ],
};

pub(crate) static AUTHORIZATION_V1_SELF_SUBJECT_ACCESS_REVIEW_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.SelfSubjectAccessReviewSpec",
    fields: &[
        F::new(
            1,
            "resourceAttributes",
            T::Message(&AUTHORIZATION_V1_RESOURCE_ATTRIBUTES),
        ),
        F::new(
            2,
            "nonResourceAttributes",
            T::Message(&AUTHORIZATION_V1_NON_RESOURCE_ATTRIBUTES),
        ),
    ],
};

pub(crate) static AUTHORIZATION_V1_SELF_SUBJECT_RULES_REVIEW: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.SelfSubjectRulesReview",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(
            2,
            "spec",
            T::Message(&AUTHORIZATION_V1_SELF_SUBJECT_RULES_REVIEW_SPEC),
        ),
        F::new(
            3,
            "status",
            T::Message(&AUTHORIZATION_V1_SUBJECT_RULES_REVIEW_STATUS),
        ),
    ],
};

pub(crate) static AUTHORIZATION_V1_SELF_SUBJECT_RULES_REVIEW_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.SelfSubjectRulesReviewSpec",
    fields: &[F::new(1, "namespace", T::String).omit_zero()],
};

pub(crate) static AUTHORIZATION_V1_SUBJECT_ACCESS_REVIEW_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.SubjectAccessReviewStatus",
    fields: &[
        F::new(1, "allowed", T::Bool),
        F::new(4, "denied", T::Bool).omit_zero(),
        F::new(2, "reason", T::String).omit_zero(),
        F::new(3, "evaluationError", T::String).omit_zero(),
    ],
};

pub(crate) static AUTHORIZATION_V1_SUBJECT_RULES_REVIEW_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.authorization.v1.SubjectRulesReviewStatus",
    fields: &[
        F::new(
            1,
            "resourceRules",
            T::Message(&AUTHORIZATION_V1_RESOURCE_RULE),
        )
        .repeated(),
        F::new(
            2,
            "nonResourceRules",
            T::Message(&AUTHORIZATION_V1_NON_RESOURCE_RULE),
        )
        .repeated(),
        F::new(3, "incomplete", T::Bool),
        F::new(4, "evaluationError", T::String).omit_zero(),
    ],
};

pub(crate) static AUTOSCALING_V1_CROSS_VERSION_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.CrossVersionObjectReference",
    fields: &[
        F::new(1, "kind", T::String),
        F::new(2, "name", T::String),
        F::new(3, "apiVersion", T::String).omit_zero(),
    ],
};

pub(crate) static AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.HorizontalPodAutoscaler",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(
            2,
            "spec",
            T::Message(&AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER_SPEC),
        ),
        F::new(
            3,
            "status",
            T::Message(&AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER_STATUS),
        ),
    ],
};

pub(crate) static AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec",
    fields: &[
        F::new(
            1,
            "scaleTargetRef",
            T::Message(&AUTOSCALING_V1_CROSS_VERSION_OBJECT_REFERENCE),
        ),
        F::new(2, "minReplicas", T::Int32),
        F::new(3, "maxReplicas", T::Int32),
        F::new(4, "targetCPUUtilizationPercentage", T::Int32),
    ],
};

pub(crate) static AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerStatus",
    fields: &[
        F::new(1, "observedGeneration", T::Int64),
        F::new(2, "lastScaleTime", T::Time),
        F::new(3, "currentReplicas", T::Int32),
        F::new(4, "desiredReplicas", T::Int32),
        F::new(5, "currentCPUUtilizationPercentage", T::Int32),
    ],
};

pub(crate) static AUTOSCALING_V1_SCALE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.Scale",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&AUTOSCALING_V1_SCALE_SPEC)),
        F::new(3, "status", T::Message(&AUTOSCALING_V1_SCALE_STATUS)),
    ],
};

pub(crate) static AUTOSCALING_V1_SCALE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.ScaleSpec",
    fields: &[F::new(1, "replicas", T::Int32).omit_zero()],
};

pub(crate) static AUTOSCALING_V1_SCALE_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v1.ScaleStatus",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(2, "selector", T::String).omit_zero(),
    ],
};

pub(crate) static AUTOSCALING_V2_CONTAINER_RESOURCE_METRIC_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ContainerResourceMetricSource",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "target", T::Message(&AUTOSCALING_V2_METRIC_TARGET)),
        F::new(3, "container", T::String),
    ],
};

pub(crate) static AUTOSCALING_V2_CONTAINER_RESOURCE_METRIC_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ContainerResourceMetricStatus",
    fields: &[
        F::new(1, "name", T::String),
        F::new(
            2,
            "current",
            T::Message(&AUTOSCALING_V2_METRIC_VALUE_STATUS),
        ),
        F::new(3, "container", T::String),
    ],
};

pub(crate) static AUTOSCALING_V2_CROSS_VERSION_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.CrossVersionObjectReference",
    fields: &[
        F::new(1, "kind", T::String),
        F::new(2, "name", T::String),
        F::new(3, "apiVersion", T::String).omit_zero(),
    ],
};

pub(crate) static AUTOSCALING_V2_EXTERNAL_METRIC_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ExternalMetricSource",
    fields: &[
        F::new(1, "metric", T::Message(&AUTOSCALING_V2_METRIC_IDENTIFIER)),
        F::new(2, "target", T::Message(&AUTOSCALING_V2_METRIC_TARGET)),
    ],
};

pub(crate) static AUTOSCALING_V2_EXTERNAL_METRIC_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ExternalMetricStatus",
    fields: &[
        F::new(1, "metric", T::Message(&AUTOSCALING_V2_METRIC_IDENTIFIER)),
        F::new(
            2,
            "current",
            T::Message(&AUTOSCALING_V2_METRIC_VALUE_STATUS),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HorizontalPodAutoscaler",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(
            2,
            "spec",
            T::Message(&AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_SPEC),
        ),
        F::new(
            3,
            "status",
            T::Message(&AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_STATUS),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_BEHAVIOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerBehavior",
    fields: &[
        F::new(1, "scaleUp", T::Message(&AUTOSCALING_V2_HPA_SCALING_RULES)),
        F::new(
            2,
            "scaleDown",
            T::Message(&AUTOSCALING_V2_HPA_SCALING_RULES),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastTransitionTime", T::Time),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(5, "message", T::String).omit_zero(),
    ],
};

pub(crate) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerSpec",
    fields: &[
        F::new(
            1,
            "scaleTargetRef",
            T::Message(&AUTOSCALING_V2_CROSS_VERSION_OBJECT_REFERENCE),
        ),
        F::new(2, "minReplicas", T::Int32),
        F::new(3, "maxReplicas", T::Int32),
        F::new(4, "metrics", T::Message(&AUTOSCALING_V2_METRIC_SPEC)).repeated(),
        F::new(
            5,
            "behavior",
            T::Message(&AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_BEHAVIOR),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerStatus",
    fields: &[
        F::new(1, "observedGeneration", T::Int64),
        F::new(2, "lastScaleTime", T::Time),
        F::new(3, "currentReplicas", T::Int32).omit_zero(),
        F::new(4, "desiredReplicas", T::Int32),
        F::new(
            5,
            "currentMetrics",
            T::Message(&AUTOSCALING_V2_METRIC_STATUS),
        )
        .repeated(),
        F::new(
            6,
            "conditions",
            T::Message(&AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER_CONDITION),
        )
        .repeated(),
    ],
};

pub(crate) static AUTOSCALING_V2_HPA_SCALING_POLICY: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HPAScalingPolicy",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "value", T::Int32),
        F::new(3, "periodSeconds", T::Int32),
    ],
};

pub(crate) static AUTOSCALING_V2_HPA_SCALING_RULES: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.HPAScalingRules",
    fields: &[
        F::new(3, "stabilizationWindowSeconds", T::Int32),
        F::new(1, "selectPolicy", T::String),
        F::new(
            2,
            "policies",
            T::Message(&AUTOSCALING_V2_HPA_SCALING_POLICY),
        )
        .repeated(),
        F::new(4, "tolerance", T::Quantity),
    ],
};

pub(crate) static AUTOSCALING_V2_METRIC_IDENTIFIER: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.MetricIdentifier",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
    ],
};

pub(crate) static AUTOSCALING_V2_METRIC_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.MetricSpec",
    fields: &[
        F::new(1, "type", T::String),
        F::new(
            2,
            "object",
            T::Message(&AUTOSCALING_V2_OBJECT_METRIC_SOURCE),
        ),
        F::new(3, "pods", T::Message(&AUTOSCALING_V2_PODS_METRIC_SOURCE)),
        F::new(
            4,
            "resource",
            T::Message(&AUTOSCALING_V2_RESOURCE_METRIC_SOURCE),
        ),
        F::new(
            7,
            "containerResource",
            T::Message(&AUTOSCALING_V2_CONTAINER_RESOURCE_METRIC_SOURCE),
        ),
        F::new(
            5,
            "external",
            T::Message(&AUTOSCALING_V2_EXTERNAL_METRIC_SOURCE),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_METRIC_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.MetricStatus",
    fields: &[
        F::new(1, "type", T::String),
        F::new(
            2,
            "object",
            T::Message(&AUTOSCALING_V2_OBJECT_METRIC_STATUS),
        ),
        F::new(3, "pods", T::Message(&AUTOSCALING_V2_PODS_METRIC_STATUS)),
        F::new(
            4,
            "resource",
            T::Message(&AUTOSCALING_V2_RESOURCE_METRIC_STATUS),
        ),
        F::new(
            7,
            "containerResource",
            T::Message(&AUTOSCALING_V2_CONTAINER_RESOURCE_METRIC_STATUS),
        ),
        F::new(
            5,
            "external",
            T::Message(&AUTOSCALING_V2_EXTERNAL_METRIC_STATUS),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_METRIC_TARGET: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.MetricTarget",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "value", T::Quantity),
        F::new(3, "averageValue", T::Quantity),
        F::new(4, "averageUtilization", T::Int32),
    ],
};

pub(crate) static AUTOSCALING_V2_METRIC_VALUE_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.MetricValueStatus",
    fields: &[
        F::new(1, "value", T::Quantity),
        F::new(2, "averageValue", T::Quantity),
        F::new(3, "averageUtilization", T::Int32),
    ],
};

pub(crate) static AUTOSCALING_V2_OBJECT_METRIC_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ObjectMetricSource",
    fields: &[
        F::new(
            1,
            "describedObject",
            T::Message(&AUTOSCALING_V2_CROSS_VERSION_OBJECT_REFERENCE),
        ),
        F::new(2, "target", T::Message(&AUTOSCALING_V2_METRIC_TARGET)),
        F::new(3, "metric", T::Message(&AUTOSCALING_V2_METRIC_IDENTIFIER)),
    ],
};

pub(crate) static AUTOSCALING_V2_OBJECT_METRIC_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ObjectMetricStatus",
    fields: &[
        F::new(1, "metric", T::Message(&AUTOSCALING_V2_METRIC_IDENTIFIER)),
        F::new(
            2,
            "current",
            T::Message(&AUTOSCALING_V2_METRIC_VALUE_STATUS),
        ),
        F::new(
            3,
            "describedObject",
            T::Message(&AUTOSCALING_V2_CROSS_VERSION_OBJECT_REFERENCE),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_PODS_METRIC_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.PodsMetricSource",
    fields: &[
        F::new(1, "metric", T::Message(&AUTOSCALING_V2_METRIC_IDENTIFIER)),
        F::new(2, "target", T::Message(&AUTOSCALING_V2_METRIC_TARGET)),
    ],
};

pub(crate) static AUTOSCALING_V2_PODS_METRIC_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.PodsMetricStatus",
    fields: &[
        F::new(1, "metric", T::Message(&AUTOSCALING_V2_METRIC_IDENTIFIER)),
        F::new(
            2,
            "current",
            T::Message(&AUTOSCALING_V2_METRIC_VALUE_STATUS),
        ),
    ],
};

pub(crate) static AUTOSCALING_V2_RESOURCE_METRIC_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ResourceMetricSource",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "target", T::Message(&AUTOSCALING_V2_METRIC_TARGET)),
    ],
};

pub(crate) static AUTOSCALING_V2_RESOURCE_METRIC_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.autoscaling.v2.ResourceMetricStatus",
    fields: &[
        F::new(1, "name", T::String),
        F::new(
            2,
            "current",
            T::Message(&AUTOSCALING_V2_METRIC_VALUE_STATUS),
        ),
    ],
};

pub(crate) static BATCH_V1_CRON_JOB: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.CronJob",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&BATCH_V1_CRON_JOB_SPEC)),
        F::new(3, "status", T::Message(&BATCH_V1_CRON_JOB_STATUS)),
    ],
};

pub(crate) static BATCH_V1_CRON_JOB_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.CronJobSpec",
    fields: &[
        F::new(1, "schedule", T::String),
        F::new(8, "timeZone", T::String),
        F::new(2, "startingDeadlineSeconds", T::Int64),
        F::new(3, "concurrencyPolicy", T::String).omit_zero(),
        F::new(4, "suspend", T::Bool),
        F::new(5, "jobTemplate", T::Message(&BATCH_V1_JOB_TEMPLATE_SPEC)),
        F::new(6, "successfulJobsHistoryLimit", T::Int32),
        F::new(7, "failedJobsHistoryLimit", T::Int32),
    ],
};

pub(crate) static BATCH_V1_CRON_JOB_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.CronJobStatus",
    fields: &[
        F::new(1, "active", T::Message(&CORE_V1_OBJECT_REFERENCE)).repeated(),
        F::new(4, "lastScheduleTime", T::Time),
        F::new(5, "lastSuccessfulTime", T::Time),
    ],
};

pub(crate) static BATCH_V1_JOB: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.Job",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&BATCH_V1_JOB_SPEC)),
        F::new(3, "status", T::Message(&BATCH_V1_JOB_STATUS)),
    ],
};

pub(crate) static BATCH_V1_JOB_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.JobCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastProbeTime", T::Time),
        F::new(4, "lastTransitionTime", T::Time),
        F::new(5, "reason", T::String).omit_zero(),
        F::new(6, "message", T::String).omit_zero(),
    ],
};

pub(crate) static BATCH_V1_JOB_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.JobSpec",
    fields: &[
        F::new(1, "parallelism", T::Int32),
        F::new(2, "completions", T::Int32),
        F::new(3, "activeDeadlineSeconds", T::Int64),
        F::new(
            11,
            "podFailurePolicy",
            T::Message(&BATCH_V1_POD_FAILURE_POLICY),
        ),
        F::new(16, "successPolicy", T::Message(&BATCH_V1_SUCCESS_POLICY)),
        F::new(7, "backoffLimit", T::Int32),
        F::new(12, "backoffLimitPerIndex", T::Int32),
        F::new(13, "maxFailedIndexes", T::Int32),
        F::new(4, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(5, "manualSelector", T::Bool),
        F::new(6, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
        F::new(8, "ttlSecondsAfterFinished", T::Int32),
        F::new(9, "completionMode", T::String),
        F::new(10, "suspend", T::Bool),
        F::new(14, "podReplacementPolicy", T::String),
        F::new(15, "managedBy", T::String),
    ],
};

pub(crate) static BATCH_V1_JOB_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.JobStatus",
    fields: &[
        F::new(1, "conditions", T::Message(&BATCH_V1_JOB_CONDITION)).repeated(),
        F::new(2, "startTime", T::Time),
        F::new(3, "completionTime", T::Time),
        F::new(4, "active", T::Int32).omit_zero(),
        F::new(5, "succeeded", T::Int32).omit_zero(),
        F::new(6, "failed", T::Int32).omit_zero(),
        F::new(11, "terminating", T::Int32),
        F::new(7, "completedIndexes", T::String).omit_zero(),
        F::new(10, "failedIndexes", T::String),
        F::new(
            8,
            "uncountedTerminatedPods",
            T::Message(&BATCH_V1_UNCOUNTED_TERMINATED_PODS),
        ),
        F::new(9, "ready", T::Int32),
    ],
};

pub(crate) static BATCH_V1_JOB_TEMPLATE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.JobTemplateSpec",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&BATCH_V1_JOB_SPEC)),
    ],
};

pub(crate) static BATCH_V1_POD_FAILURE_POLICY: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.PodFailurePolicy",
    fields: &[F::new(1, "rules", T::Message(&BATCH_V1_POD_FAILURE_POLICY_RULE)).repeated()],
};

pub(crate) static BATCH_V1_POD_FAILURE_POLICY_ON_EXIT_CODES_REQUIREMENT: MessageDesc =
    MessageDesc {
        name: "k8s.io.api.batch.v1.PodFailurePolicyOnExitCodesRequirement",
        fields: &[
            F::new(1, "containerName", T::String),
            F::new(2, "operator", T::String),
            F::new(3, "values", T::Int32).repeated(),
        ],
    };

pub(crate) static BATCH_V1_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERN: MessageDesc =
    MessageDesc {
        name: "k8s.io.api.batch.v1.PodFailurePolicyOnPodConditionsPattern",
        fields: &[F::new(1, "type", T::String), F::new(2, "status", T::String)],
    };

pub(crate) static BATCH_V1_POD_FAILURE_POLICY_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.PodFailurePolicyRule",
    fields: &[
        F::new(1, "action", T::String),
        F::new(
            2,
            "onExitCodes",
            T::Message(&BATCH_V1_POD_FAILURE_POLICY_ON_EXIT_CODES_REQUIREMENT),
        ),
        F::new(
            3,
            "onPodConditions",
            T::Message(&BATCH_V1_POD_FAILURE_POLICY_ON_POD_CONDITIONS_PATTERN),
        )
        .repeated(),
    ],
};

pub(crate) static BATCH_V1_SUCCESS_POLICY: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.SuccessPolicy",
    fields: &[F::new(1, "rules", T::Message(&BATCH_V1_SUCCESS_POLICY_RULE)).repeated()],
};

pub(crate) static BATCH_V1_SUCCESS_POLICY_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.SuccessPolicyRule",
    fields: &[
        F::new(1, "succeededIndexes", T::String),
        F::new(2, "succeededCount", T::Int32),
    ],
};

pub(crate) static BATCH_V1_UNCOUNTED_TERMINATED_PODS: MessageDesc = MessageDesc {
    name: "k8s.io.api.batch.v1.UncountedTerminatedPods",
    fields: &[
        F::new(1, "succeeded", T::String).repeated(),
        F::new(2, "failed", T::String).repeated(),
    ],
};

pub(crate) static CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST: MessageDesc = MessageDesc {
    name: "k8s.io.api.certificates.v1.CertificateSigningRequest",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(
            2,
            "spec",
            T::Message(&CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST_SPEC),
        ),
        F::new(
            3,
            "status",
            T::Message(&CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST_STATUS),
        ),
    ],
};

pub(crate) static CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST_CONDITION: MessageDesc =
    MessageDesc {
        name: "k8s.io.api.certificates.v1.CertificateSigningRequestCondition",
        fields: &[
            F::new(1, "type", T::String),
            F::new(6, "status", T::String),
            F::new(2, "reason", T::String).omit_zero(),
            F::new(3, "message", T::String).omit_zero(),
            F::new(4, "lastUpdateTime", T::Time),
            F::new(5, "lastTransitionTime", T::Time),
        ],
    };

pub(crate) static CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.certificates.v1.CertificateSigningRequestSpec",
    fields: &[
        F::new(1, "request", T::Bytes),
        F::new(7, "signerName", T::String),
        F::new(8, "expirationSeconds", T::Int32),
        F::new(5, "usages", T::String).repeated(),
        F::new(2, "username", T::String).omit_zero(),
        F::new(3, "uid", T::String).omit_zero(),
        F::new(4, "groups", T::String).repeated(),
        F::new(6, "extra", T::Map(&T::StringList)),
    ],
};

pub(crate) static CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.certificates.v1.CertificateSigningRequestStatus",
    fields: &[
        F::new(
            1,
            "conditions",
            T::Message(&CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST_CONDITION),
        )
        .repeated(),
        F::new(2, "certificate", T::Bytes).omit_zero(),
    ],
};

pub(crate) static CORE_V1_AFFINITY: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Affinity",
    fields: &[
        F::new(1, "nodeAffinity", T::Message(&CORE_V1_NODE_AFFINITY)),
        F::new(2, "podAffinity", T::Message(&CORE_V1_POD_AFFINITY)),
        F::new(3, "podAntiAffinity", T::Message(&CORE_V1_POD_ANTI_AFFINITY)),
    ],
};

pub(crate) static CORE_V1_APP_ARMOR_PROFILE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.AppArmorProfile",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "localhostProfile", T::String),
    ],
};

pub(crate) static CORE_V1_ATTACHED_VOLUME: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.AttachedVolume",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "devicePath", T::String),
    ],
};

pub(crate) static CORE_V1_AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.AWSElasticBlockStoreVolumeSource",
    fields: &[
        F::new(1, "volumeID", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "partition", T::Int32).omit_zero(),
        F::new(4, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_AZURE_DISK_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.AzureDiskVolumeSource",
    fields: &[
        F::new(1, "diskName", T::String),
        F::new(2, "diskURI", T::String),
        F::new(3, "cachingMode", T::String),
        F::new(4, "fsType", T::String),
        F::new(5, "readOnly", T::Bool),
        F::new(6, "kind", T::String),
    ],
};

pub(crate) static CORE_V1_AZURE_FILE_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.AzureFilePersistentVolumeSource",
    fields: &[
        F::new(1, "secretName", T::String),
        F::new(2, "shareName", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "secretNamespace", T::String),
    ],
};

pub(crate) static CORE_V1_AZURE_FILE_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.AzureFileVolumeSource",
    fields: &[
        F::new(1, "secretName", T::String),
        F::new(2, "shareName", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CSI_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.CSIPersistentVolumeSource",
    fields: &[
        F::new(1, "driver", T::String),
        F::new(2, "volumeHandle", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "fsType", T::String).omit_zero(),
        F::new(5, "volumeAttributes", T::Map(&T::String)),
        F::new(
            6,
            "controllerPublishSecretRef",
            T::Message(&CORE_V1_SECRET_REFERENCE),
        ),
        F::new(
            7,
            "nodeStageSecretRef",
            T::Message(&CORE_V1_SECRET_REFERENCE),
        ),
        F::new(
            8,
            "nodePublishSecretRef",
            T::Message(&CORE_V1_SECRET_REFERENCE),
        ),
        F::new(
            9,
            "controllerExpandSecretRef",
            T::Message(&CORE_V1_SECRET_REFERENCE),
        ),
        F::new(
            10,
            "nodeExpandSecretRef",
            T::Message(&CORE_V1_SECRET_REFERENCE),
        ),
    ],
};

pub(crate) static CORE_V1_CSI_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.CSIVolumeSource",
    fields: &[
        F::new(1, "driver", T::String),
        F::new(2, "readOnly", T::Bool),
        F::new(3, "fsType", T::String),
        F::new(4, "volumeAttributes", T::Map(&T::String)),
        F::new(
            5,
            "nodePublishSecretRef",
            T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE),
        ),
    ],
};

pub(crate) static CORE_V1_CAPABILITIES: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Capabilities",
    fields: &[
        F::new(1, "add", T::String).repeated(),
        F::new(2, "drop", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_CEPH_FS_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.CephFSPersistentVolumeSource",
    fields: &[
        F::new(1, "monitors", T::String).repeated(),
        F::new(2, "path", T::String).omit_zero(),
        F::new(3, "user", T::String).omit_zero(),
        F::new(4, "secretFile", T::String).omit_zero(),
        F::new(5, "secretRef", T::Message(&CORE_V1_SECRET_REFERENCE)),
        F::new(6, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CEPH_FS_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.CephFSVolumeSource",
    fields: &[
        F::new(1, "monitors", T::String).repeated(),
        F::new(2, "path", T::String).omit_zero(),
        F::new(3, "user", T::String).omit_zero(),
        F::new(4, "secretFile", T::String).omit_zero(),
        F::new(5, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(6, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CINDER_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.CinderPersistentVolumeSource",
    fields: &[
        F::new(1, "volumeID", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "secretRef", T::Message(&CORE_V1_SECRET_REFERENCE)),
    ],
};

pub(crate) static CORE_V1_CINDER_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.CinderVolumeSource",
    fields: &[
        F::new(1, "volumeID", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
    ],
};

pub(crate) static CORE_V1_CLIENT_IP_CONFIG: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ClientIPConfig",
    fields: &[F::new(1, "timeoutSeconds", T::Int32)],
};

pub(crate) static CORE_V1_CLUSTER_TRUST_BUNDLE_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ClusterTrustBundleProjection",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "signerName", T::String),
        F::new(3, "labelSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(5, "optional", T::Bool),
        F::new(4, "path", T::String),
    ],
};

pub(crate) static CORE_V1_CONFIG_MAP: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ConfigMap",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(4, "immutable", T::Bool),
        F::new(2, "data", T::Map(&T::String)),
        F::new(3, "binaryData", T::Map(&T::Bytes)),
    ],
};

pub(crate) static CORE_V1_CONFIG_MAP_ENV_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ConfigMapEnvSource",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_CONFIG_MAP_KEY_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ConfigMapKeySelector",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "key", T::String),
        F::new(3, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_CONFIG_MAP_NODE_CONFIG_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ConfigMapNodeConfigSource",
    fields: &[
        F::new(1, "namespace", T::String),
        F::new(2, "name", T::String),
        F::new(3, "uid", T::String).omit_zero(),
        F::new(4, "resourceVersion", T::String).omit_zero(),
        F::new(5, "kubeletConfigKey", T::String),
    ],
};

pub(crate) static CORE_V1_CONFIG_MAP_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ConfigMapProjection",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "items", T::Message(&CORE_V1_KEY_TO_PATH)).repeated(),
        F::new(4, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_CONFIG_MAP_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ConfigMapVolumeSource",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "items", T::Message(&CORE_V1_KEY_TO_PATH)).repeated(),
        F::new(3, "defaultMode", T::Int32),
        F::new(4, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_CONTAINER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Container",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "image", T::String).omit_zero(),
        F::new(3, "command", T::String).repeated(),
        F::new(4, "args", T::String).repeated(),
        F::new(5, "workingDir", T::String).omit_zero(),
        F::new(6, "ports", T::Message(&CORE_V1_CONTAINER_PORT)).repeated(),
        F::new(19, "envFrom", T::Message(&CORE_V1_ENV_FROM_SOURCE)).repeated(),
        F::new(7, "env", T::Message(&CORE_V1_ENV_VAR)).repeated(),
        F::new(8, "resources", T::Message(&CORE_V1_RESOURCE_REQUIREMENTS)),
        F::new(
            23,
            "resizePolicy",
            T::Message(&CORE_V1_CONTAINER_RESIZE_POLICY),
        )
        .repeated(),
        F::new(24, "restartPolicy", T::String),
        F::new(
            25,
            "restartPolicyRules",
            T::Message(&CORE_V1_CONTAINER_RESTART_RULE),
        )
        .repeated(),
        F::new(9, "volumeMounts", T::Message(&CORE_V1_VOLUME_MOUNT)).repeated(),
        F::new(21, "volumeDevices", T::Message(&CORE_V1_VOLUME_DEVICE)).repeated(),
        F::new(10, "livenessProbe", T::Message(&CORE_V1_PROBE)),
        F::new(11, "readinessProbe", T::Message(&CORE_V1_PROBE)),
        F::new(22, "startupProbe", T::Message(&CORE_V1_PROBE)),
        F::new(12, "lifecycle", T::Message(&CORE_V1_LIFECYCLE)),
        F::new(13, "terminationMessagePath", T::String).omit_zero(),
        F::new(20, "terminationMessagePolicy", T::String).omit_zero(),
        F::new(14, "imagePullPolicy", T::String).omit_zero(),
        F::new(15, "securityContext", T::Message(&CORE_V1_SECURITY_CONTEXT)),
        F::new(16, "stdin", T::Bool).omit_zero(),
        F::new(17, "stdinOnce", T::Bool).omit_zero(),
        F::new(18, "tty", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CONTAINER_EXTENDED_RESOURCE_REQUEST: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerExtendedResourceRequest",
    fields: &[
        F::new(1, "containerName", T::String),
        F::new(2, "resourceName", T::String),
        F::new(3, "requestName", T::String),
    ],
};

pub(crate) static CORE_V1_CONTAINER_IMAGE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerImage",
    fields: &[
        F::new(1, "names", T::String).repeated(),
        F::new(2, "sizeBytes", T::Int64).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CONTAINER_PORT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerPort",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "hostPort", T::Int32).omit_zero(),
        F::new(3, "containerPort", T::Int32),
        F::new(4, "protocol", T::String).omit_zero(),
        F::new(5, "hostIP", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CONTAINER_RESIZE_POLICY: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerResizePolicy",
    fields: &[
        F::new(1, "resourceName", T::String),
        F::new(2, "restartPolicy", T::String),
    ],
};

pub(crate) static CORE_V1_CONTAINER_RESTART_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerRestartRule",
    fields: &[
        F::new(1, "action", T::String).omit_zero(),
        F::new(
            2,
            "exitCodes",
            T::Message(&CORE_V1_CONTAINER_RESTART_RULE_ON_EXIT_CODES),
        ),
    ],
};

pub(crate) static CORE_V1_CONTAINER_RESTART_RULE_ON_EXIT_CODES: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerRestartRuleOnExitCodes",
    fields: &[
        F::new(1, "operator", T::String).omit_zero(),
        F::new(2, "values", T::Int32).repeated(),
    ],
};

pub(crate) static CORE_V1_CONTAINER_STATE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerState",
    fields: &[
        F::new(1, "waiting", T::Message(&CORE_V1_CONTAINER_STATE_WAITING)),
        F::new(2, "running", T::Message(&CORE_V1_CONTAINER_STATE_RUNNING)),
        F::new(
            3,
            "terminated",
            T::Message(&CORE_V1_CONTAINER_STATE_TERMINATED),
        ),
    ],
};

pub(crate) static CORE_V1_CONTAINER_STATE_RUNNING: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerStateRunning",
    fields: &[F::new(1, "startedAt", T::Time)],
};

pub(crate) static CORE_V1_CONTAINER_STATE_TERMINATED: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerStateTerminated",
    fields: &[
        F::new(1, "exitCode", T::Int32),
        F::new(2, "signal", T::Int32).omit_zero(),
        F::new(3, "reason", T::String).omit_zero(),
        F::new(4, "message", T::String).omit_zero(),
        F::new(5, "startedAt", T::Time),
        F::new(6, "finishedAt", T::Time),
        F::new(7, "containerID", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CONTAINER_STATE_WAITING: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerStateWaiting",
    fields: &[
        F::new(1, "reason", T::String).omit_zero(),
        F::new(2, "message", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_CONTAINER_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerStatus",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "state", T::Message(&CORE_V1_CONTAINER_STATE)),
        F::new(3, "lastState", T::Message(&CORE_V1_CONTAINER_STATE)),
        F::new(4, "ready", T::Bool),
        F::new(5, "restartCount", T::Int32),
        F::new(6, "image", T::String),
        F::new(7, "imageID", T::String),
        F::new(8, "containerID", T::String).omit_zero(),
        F::new(9, "started", T::Bool),
        F::new(10, "allocatedResources", T::Map(&T::Quantity)),
        F::new(11, "resources", T::Message(&CORE_V1_RESOURCE_REQUIREMENTS)),
        F::new(12, "volumeMounts", T::Message(&CORE_V1_VOLUME_MOUNT_STATUS)).repeated(),
        F::new(13, "user", T::Message(&CORE_V1_CONTAINER_USER)),
        F::new(
            14,
            "allocatedResourcesStatus",
            T::Message(&CORE_V1_RESOURCE_STATUS),
        )
        .repeated(),
        F::new(15, "stopSignal", T::String),
    ],
};

pub(crate) static CORE_V1_CONTAINER_USER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ContainerUser",
    fields: &[F::new(
        1,
        "linux",
        T::Message(&CORE_V1_LINUX_CONTAINER_USER),
    )],
};

pub(crate) static CORE_V1_DAEMON_ENDPOINT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.DaemonEndpoint",
    fields: &[F::new(1, "Port", T::Int32)],
};

pub(crate) static CORE_V1_DOWNWARD_API_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.DownwardAPIProjection",
    fields: &[F::new(1, "items", T::Message(&CORE_V1_DOWNWARD_API_VOLUME_FILE)).repeated()],
};

pub(crate) static CORE_V1_DOWNWARD_API_VOLUME_FILE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.DownwardAPIVolumeFile",
    fields: &[
        F::new(1, "path", T::String),
        F::new(2, "fieldRef", T::Message(&CORE_V1_OBJECT_FIELD_SELECTOR)),
        F::new(
            3,
            "resourceFieldRef",
            T::Message(&CORE_V1_RESOURCE_FIELD_SELECTOR),
        ),
        F::new(4, "mode", T::Int32),
    ],
};

pub(crate) static CORE_V1_DOWNWARD_API_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.DownwardAPIVolumeSource",
    fields: &[
        F::new(1, "items", T::Message(&CORE_V1_DOWNWARD_API_VOLUME_FILE)).repeated(),
        F::new(2, "defaultMode", T::Int32),
    ],
};

pub(crate) static CORE_V1_EMPTY_DIR_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EmptyDirVolumeSource",
    fields: &[
        F::new(1, "medium", T::String).omit_zero(),
        F::new(2, "sizeLimit", T::Quantity),
    ],
};

pub(crate) static CORE_V1_ENDPOINT_ADDRESS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EndpointAddress",
    fields: &[
        F::new(1, "ip", T::String),
        F::new(3, "hostname", T::String).omit_zero(),
        F::new(4, "nodeName", T::String),
        F::new(2, "targetRef", T::Message(&CORE_V1_OBJECT_REFERENCE)),
    ],
};

pub(crate) static CORE_V1_ENDPOINT_PORT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EndpointPort",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "port", T::Int32),
        F::new(3, "protocol", T::String).omit_zero(),
        F::new(4, "appProtocol", T::String),
    ],
};

pub(crate) static CORE_V1_ENDPOINT_SUBSET: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EndpointSubset",
    fields: &[
        F::new(1, "addresses", T::Message(&CORE_V1_ENDPOINT_ADDRESS)).repeated(),
        F::new(
            2,
            "notReadyAddresses",
            T::Message(&CORE_V1_ENDPOINT_ADDRESS),
        )
        .repeated(),
        F::new(3, "ports", T::Message(&CORE_V1_ENDPOINT_PORT)).repeated(),
    ],
};

pub(crate) static CORE_V1_ENDPOINTS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Endpoints",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "subsets", T::Message(&CORE_V1_ENDPOINT_SUBSET)).repeated(),
    ],
};

pub(crate) static CORE_V1_ENV_FROM_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EnvFromSource",
    fields: &[
        F::new(1, "prefix", T::String).omit_zero(),
        F::new(
            2,
            "configMapRef",
            T::Message(&CORE_V1_CONFIG_MAP_ENV_SOURCE),
        ),
        F::new(3, "secretRef", T::Message(&CORE_V1_SECRET_ENV_SOURCE)),
    ],
};

pub(crate) static CORE_V1_ENV_VAR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EnvVar",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "value", T::String).omit_zero(),
        F::new(3, "valueFrom", T::Message(&CORE_V1_ENV_VAR_SOURCE)),
    ],
};

pub(crate) static CORE_V1_ENV_VAR_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EnvVarSource",
    fields: &[
        F::new(1, "fieldRef", T::Message(&CORE_V1_OBJECT_FIELD_SELECTOR)),
        F::new(
            2,
            "resourceFieldRef",
            T::Message(&CORE_V1_RESOURCE_FIELD_SELECTOR),
        ),
        F::new(
            3,
            "configMapKeyRef",
            T::Message(&CORE_V1_CONFIG_MAP_KEY_SELECTOR),
        ),
        F::new(4, "secretKeyRef", T::Message(&CORE_V1_SECRET_KEY_SELECTOR)),
        F::new(5, "fileKeyRef", T::Message(&CORE_V1_FILE_KEY_SELECTOR)),
    ],
};

pub(crate) static CORE_V1_EPHEMERAL_CONTAINER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EphemeralContainer",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_EPHEMERAL_CONTAINER_COMMON)),
        F::new(2, "targetContainerName", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_EPHEMERAL_CONTAINER_COMMON: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EphemeralContainerCommon",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "image", T::String).omit_zero(),
        F::new(3, "command", T::String).repeated(),
        F::new(4, "args", T::String).repeated(),
        F::new(5, "workingDir", T::String).omit_zero(),
        F::new(6, "ports", T::Message(&CORE_V1_CONTAINER_PORT)).repeated(),
        F::new(19, "envFrom", T::Message(&CORE_V1_ENV_FROM_SOURCE)).repeated(),
        F::new(7, "env", T::Message(&CORE_V1_ENV_VAR)).repeated(),
        F::new(8, "resources", T::Message(&CORE_V1_RESOURCE_REQUIREMENTS)),
        F::new(
            23,
            "resizePolicy",
            T::Message(&CORE_V1_CONTAINER_RESIZE_POLICY),
        )
        .repeated(),
        F::new(24, "restartPolicy", T::String),
        F::new(
            25,
            "restartPolicyRules",
            T::Message(&CORE_V1_CONTAINER_RESTART_RULE),
        )
        .repeated(),
        F::new(9, "volumeMounts", T::Message(&CORE_V1_VOLUME_MOUNT)).repeated(),
        F::new(21, "volumeDevices", T::Message(&CORE_V1_VOLUME_DEVICE)).repeated(),
        F::new(10, "livenessProbe", T::Message(&CORE_V1_PROBE)),
        F::new(11, "readinessProbe", T::Message(&CORE_V1_PROBE)),
        F::new(22, "startupProbe", T::Message(&CORE_V1_PROBE)),
        F::new(12, "lifecycle", T::Message(&CORE_V1_LIFECYCLE)),
        F::new(13, "terminationMessagePath", T::String).omit_zero(),
        F::new(20, "terminationMessagePolicy", T::String).omit_zero(),
        F::new(14, "imagePullPolicy", T::String).omit_zero(),
        F::new(15, "securityContext", T::Message(&CORE_V1_SECURITY_CONTEXT)),
        F::new(16, "stdin", T::Bool).omit_zero(),
        F::new(17, "stdinOnce", T::Bool).omit_zero(),
        F::new(18, "tty", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_EPHEMERAL_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.EphemeralVolumeSource",
    fields: &[F::new(
        1,
        "volumeClaimTemplate",
        T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM_TEMPLATE),
    )],
};

pub(crate) static CORE_V1_EXEC_ACTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ExecAction",
    fields: &[F::new(1, "command", T::String).repeated()],
};

pub(crate) static CORE_V1_FC_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.FCVolumeSource",
    fields: &[
        F::new(1, "targetWWNs", T::String).repeated(),
        F::new(2, "lun", T::Int32),
        F::new(3, "fsType", T::String).omit_zero(),
        F::new(4, "readOnly", T::Bool).omit_zero(),
        F::new(5, "wwids", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_FILE_KEY_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.FileKeySelector",
    fields: &[
        F::new(1, "volumeName", T::String),
        F::new(2, "path", T::String),
        F::new(3, "key", T::String),
        F::new(4, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_FLEX_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.FlexPersistentVolumeSource",
    fields: &[
        F::new(1, "driver", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "secretRef", T::Message(&CORE_V1_SECRET_REFERENCE)),
        F::new(4, "readOnly", T::Bool).omit_zero(),
        F::new(5, "options", T::Map(&T::String)),
    ],
};

pub(crate) static CORE_V1_FLEX_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.FlexVolumeSource",
    fields: &[
        F::new(1, "driver", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(4, "readOnly", T::Bool).omit_zero(),
        F::new(5, "options", T::Map(&T::String)),
    ],
};

pub(crate) static CORE_V1_FLOCKER_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.FlockerVolumeSource",
    fields: &[
        F::new(1, "datasetName", T::String).omit_zero(),
        F::new(2, "datasetUUID", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_GCE_PERSISTENT_DISK_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.GCEPersistentDiskVolumeSource",
    fields: &[
        F::new(1, "pdName", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "partition", T::Int32).omit_zero(),
        F::new(4, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_GIT_REPO_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.GitRepoVolumeSource",
    fields: &[
        F::new(1, "repository", T::String),
        F::new(2, "revision", T::String).omit_zero(),
        F::new(3, "directory", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_GLUSTERFS_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.GlusterfsPersistentVolumeSource",
    fields: &[
        F::new(1, "endpoints", T::String),
        F::new(2, "path", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "endpointsNamespace", T::String),
    ],
};

pub(crate) static CORE_V1_GLUSTERFS_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.GlusterfsVolumeSource",
    fields: &[
        F::new(1, "endpoints", T::String),
        F::new(2, "path", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_GRPC_ACTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.GRPCAction",
    fields: &[F::new(1, "port", T::Int32), F::new(2, "service", T::String)],
};

pub(crate) static CORE_V1_HOST_ALIAS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.HostAlias",
    fields: &[
        F::new(1, "ip", T::String),
        F::new(2, "hostnames", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_HOST_IP: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.HostIP",
    fields: &[F::new(1, "ip", T::String)],
};

pub(crate) static CORE_V1_HOST_PATH_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.HostPathVolumeSource",
    fields: &[F::new(1, "path", T::String), F::new(2, "type", T::String)],
};

pub(crate) static CORE_V1_HTTP_GET_ACTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.HTTPGetAction",
    fields: &[
        F::new(1, "path", T::String).omit_zero(),
        F::new(2, "port", T::IntOrString),
        F::new(3, "host", T::String).omit_zero(),
        F::new(4, "scheme", T::String).omit_zero(),
        F::new(5, "httpHeaders", T::Message(&CORE_V1_HTTP_HEADER)).repeated(),
    ],
};

pub(crate) static CORE_V1_HTTP_HEADER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.HTTPHeader",
    fields: &[F::new(1, "name", T::String), F::new(2, "value", T::String)],
};

pub(crate) static CORE_V1_IMAGE_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ImageVolumeSource",
    fields: &[
        F::new(1, "reference", T::String).omit_zero(),
        F::new(2, "pullPolicy", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_ISCSI_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ISCSIPersistentVolumeSource",
    fields: &[
        F::new(1, "targetPortal", T::String),
        F::new(2, "iqn", T::String),
        F::new(3, "lun", T::Int32),
        F::new(4, "iscsiInterface", T::String).omit_zero(),
        F::new(5, "fsType", T::String).omit_zero(),
        F::new(6, "readOnly", T::Bool).omit_zero(),
        F::new(7, "portals", T::String).repeated(),
        F::new(8, "chapAuthDiscovery", T::Bool).omit_zero(),
        F::new(11, "chapAuthSession", T::Bool).omit_zero(),
        F::new(10, "secretRef", T::Message(&CORE_V1_SECRET_REFERENCE)),
        F::new(12, "initiatorName", T::String),
    ],
};

pub(crate) static CORE_V1_ISCSI_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ISCSIVolumeSource",
    fields: &[
        F::new(1, "targetPortal", T::String),
        F::new(2, "iqn", T::String),
        F::new(3, "lun", T::Int32),
        F::new(4, "iscsiInterface", T::String).omit_zero(),
        F::new(5, "fsType", T::String).omit_zero(),
        F::new(6, "readOnly", T::Bool).omit_zero(),
        F::new(7, "portals", T::String).repeated(),
        F::new(8, "chapAuthDiscovery", T::Bool).omit_zero(),
        F::new(11, "chapAuthSession", T::Bool).omit_zero(),
        F::new(10, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(12, "initiatorName", T::String),
    ],
};

pub(crate) static CORE_V1_KEY_TO_PATH: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.KeyToPath",
    fields: &[
        F::new(1, "key", T::String),
        F::new(2, "path", T::String),
        F::new(3, "mode", T::Int32),
    ],
};

pub(crate) static CORE_V1_LIFECYCLE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Lifecycle",
    fields: &[
        F::new(1, "postStart", T::Message(&CORE_V1_LIFECYCLE_HANDLER)),
        F::new(2, "preStop", T::Message(&CORE_V1_LIFECYCLE_HANDLER)),
        F::new(3, "stopSignal", T::String),
    ],
};

pub(crate) static CORE_V1_LIFECYCLE_HANDLER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LifecycleHandler",
    fields: &[
        F::new(1, "exec", T::Message(&CORE_V1_EXEC_ACTION)),
        F::new(2, "httpGet", T::Message(&CORE_V1_HTTP_GET_ACTION)),
        F::new(3, "tcpSocket", T::Message(&CORE_V1_TCP_SOCKET_ACTION)),
        F::new(4, "sleep", T::Message(&CORE_V1_SLEEP_ACTION)),
    ],
};

pub(crate) static CORE_V1_LIMIT_RANGE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LimitRange",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_LIMIT_RANGE_SPEC)),
    ],
};

pub(crate) static CORE_V1_LIMIT_RANGE_ITEM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LimitRangeItem",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "max", T::Map(&T::Quantity)),
        F::new(3, "min", T::Map(&T::Quantity)),
        F::new(4, "default", T::Map(&T::Quantity)),
        F::new(5, "defaultRequest", T::Map(&T::Quantity)),
        F::new(6, "maxLimitRequestRatio", T::Map(&T::Quantity)),
    ],
};

pub(crate) static CORE_V1_LIMIT_RANGE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LimitRangeSpec",
    fields: &[F::new(1, "limits", T::Message(&CORE_V1_LIMIT_RANGE_ITEM)).repeated()],
};

pub(crate) static CORE_V1_LINUX_CONTAINER_USER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LinuxContainerUser",
    fields: &[
        F::new(1, "uid", T::Int64),
        F::new(2, "gid", T::Int64),
        F::new(3, "supplementalGroups", T::Int64).repeated(),
    ],
};

pub(crate) static CORE_V1_LOAD_BALANCER_INGRESS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LoadBalancerIngress",
    fields: &[
        F::new(1, "ip", T::String).omit_zero(),
        F::new(2, "hostname", T::String).omit_zero(),
        F::new(3, "ipMode", T::String),
        F::new(4, "ports", T::Message(&CORE_V1_PORT_STATUS)).repeated(),
    ],
};

pub(crate) static CORE_V1_LOAD_BALANCER_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LoadBalancerStatus",
    fields: &[F::new(1, "ingress", T::Message(&CORE_V1_LOAD_BALANCER_INGRESS)).repeated()],
};

pub(crate) static CORE_V1_LOCAL_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LocalObjectReference",
    fields: &[F::new(1, "name", T::String).omit_zero()],
};

pub(crate) static CORE_V1_LOCAL_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.LocalVolumeSource",
    fields: &[F::new(1, "path", T::String), F::new(2, "fsType", T::String)],
};

pub(crate) static CORE_V1_MODIFY_VOLUME_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ModifyVolumeStatus",
    fields: &[
        F::new(1, "targetVolumeAttributesClassName", T::String).omit_zero(),
        F::new(2, "status", T::String),
    ],
};

pub(crate) static CORE_V1_NAMESPACE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Namespace",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_NAMESPACE_SPEC)),
        F::new(3, "status", T::Message(&CORE_V1_NAMESPACE_STATUS)),
    ],
};

pub(crate) static CORE_V1_NAMESPACE_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NamespaceCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(4, "lastTransitionTime", T::Time),
        F::new(5, "reason", T::String).omit_zero(),
        F::new(6, "message", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_NAMESPACE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NamespaceSpec",
    fields: &[F::new(1, "finalizers", T::String).repeated()],
};

pub(crate) static CORE_V1_NAMESPACE_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NamespaceStatus",
    fields: &[
        F::new(1, "phase", T::String).omit_zero(),
        F::new(2, "conditions", T::Message(&CORE_V1_NAMESPACE_CONDITION)).repeated(),
    ],
};

pub(crate) static CORE_V1_NFS_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NFSVolumeSource",
    fields: &[
        F::new(1, "server", T::String),
        F::new(2, "path", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_NODE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Node",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_NODE_SPEC)),
        F::new(3, "status", T::Message(&CORE_V1_NODE_STATUS)),
    ],
};

pub(crate) static CORE_V1_NODE_ADDRESS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeAddress",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "address", T::String),
    ],
};

pub(crate) static CORE_V1_NODE_AFFINITY: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeAffinity",
    fields: &[
        F::new(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            T::Message(&CORE_V1_NODE_SELECTOR),
        ),
        F::new(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            T::Message(&CORE_V1_PREFERRED_SCHEDULING_TERM),
        )
        .repeated(),
    ],
};

pub(crate) static CORE_V1_NODE_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastHeartbeatTime", T::Time),
        F::new(4, "lastTransitionTime", T::Time),
        F::new(5, "reason", T::String).omit_zero(),
        F::new(6, "message", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_NODE_CONFIG_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeConfigSource",
    fields: &[F::new(
        2,
        "configMap",
        T::Message(&CORE_V1_CONFIG_MAP_NODE_CONFIG_SOURCE),
    )],
};

pub(crate) static CORE_V1_NODE_CONFIG_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeConfigStatus",
    fields: &[
        F::new(1, "assigned", T::Message(&CORE_V1_NODE_CONFIG_SOURCE)),
        F::new(2, "active", T::Message(&CORE_V1_NODE_CONFIG_SOURCE)),
        F::new(3, "lastKnownGood", T::Message(&CORE_V1_NODE_CONFIG_SOURCE)),
        F::new(4, "error", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_NODE_DAEMON_ENDPOINTS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeDaemonEndpoints",
    fields: &[F::new(
        1,
        "kubeletEndpoint",
        T::Message(&CORE_V1_DAEMON_ENDPOINT),
    )],
};

pub(crate) static CORE_V1_NODE_FEATURES: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeFeatures",
    fields: &[F::new(1, "supplementalGroupsPolicy", T::Bool)],
};

pub(crate) static CORE_V1_NODE_RUNTIME_HANDLER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeRuntimeHandler",
    fields: &[
        F::new(1, "name", T::String),
        F::new(
            2,
            "features",
            T::Message(&CORE_V1_NODE_RUNTIME_HANDLER_FEATURES),
        ),
    ],
};

pub(crate) static CORE_V1_NODE_RUNTIME_HANDLER_FEATURES: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeRuntimeHandlerFeatures",
    fields: &[
        F::new(1, "recursiveReadOnlyMounts", T::Bool),
        F::new(2, "userNamespaces", T::Bool),
    ],
};

pub(crate) static CORE_V1_NODE_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeSelector",
    fields: &[F::new(
        1,
        "nodeSelectorTerms",
        T::Message(&CORE_V1_NODE_SELECTOR_TERM),
    )
    .repeated()],
};

pub(crate) static CORE_V1_NODE_SELECTOR_REQUIREMENT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeSelectorRequirement",
    fields: &[
        F::new(1, "key", T::String),
        F::new(2, "operator", T::String),
        F::new(3, "values", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_NODE_SELECTOR_TERM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeSelectorTerm",
    fields: &[
        F::new(
            1,
            "matchExpressions",
            T::Message(&CORE_V1_NODE_SELECTOR_REQUIREMENT),
        )
        .repeated(),
        F::new(
            2,
            "matchFields",
            T::Message(&CORE_V1_NODE_SELECTOR_REQUIREMENT),
        )
        .repeated(),
    ],
};

pub(crate) static CORE_V1_NODE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeSpec",
    fields: &[
        F::new(1, "podCIDR", T::String).omit_zero(),
        F::new(7, "podCIDRs", T::String).repeated(),
        F::new(3, "providerID", T::String).omit_zero(),
        F::new(4, "unschedulable", T::Bool).omit_zero(),
        F::new(5, "taints", T::Message(&CORE_V1_TAINT)).repeated(),
        F::new(6, "configSource", T::Message(&CORE_V1_NODE_CONFIG_SOURCE)),
        F::new(2, "externalID", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_NODE_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeStatus",
    fields: &[
        F::new(1, "capacity", T::Map(&T::Quantity)),
        F::new(2, "allocatable", T::Map(&T::Quantity)),
        F::new(3, "phase", T::String).omit_zero(),
        F::new(4, "conditions", T::Message(&CORE_V1_NODE_CONDITION)).repeated(),
        F::new(5, "addresses", T::Message(&CORE_V1_NODE_ADDRESS)).repeated(),
        F::new(
            6,
            "daemonEndpoints",
            T::Message(&CORE_V1_NODE_DAEMON_ENDPOINTS),
        ),
        F::new(7, "nodeInfo", T::Message(&CORE_V1_NODE_SYSTEM_INFO)),
        F::new(8, "images", T::Message(&CORE_V1_CONTAINER_IMAGE)).repeated(),
        F::new(9, "volumesInUse", T::String).repeated(),
        F::new(10, "volumesAttached", T::Message(&CORE_V1_ATTACHED_VOLUME)).repeated(),
        F::new(11, "config", T::Message(&CORE_V1_NODE_CONFIG_STATUS)),
        F::new(
            12,
            "runtimeHandlers",
            T::Message(&CORE_V1_NODE_RUNTIME_HANDLER),
        )
        .repeated(),
        F::new(13, "features", T::Message(&CORE_V1_NODE_FEATURES)),
        F::new(14, "declaredFeatures", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_NODE_SWAP_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeSwapStatus",
    fields: &[F::new(1, "capacity", T::Int64)],
};

pub(crate) static CORE_V1_NODE_SYSTEM_INFO: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.NodeSystemInfo",
    fields: &[
        F::new(1, "machineID", T::String),
        F::new(2, "systemUUID", T::String),
        F::new(3, "bootID", T::String),
        F::new(4, "kernelVersion", T::String),
        F::new(5, "osImage", T::String),
        F::new(6, "containerRuntimeVersion", T::String),
        F::new(7, "kubeletVersion", T::String),
        F::new(8, "kubeProxyVersion", T::String),
        F::new(9, "operatingSystem", T::String),
        F::new(10, "architecture", T::String),
        F::new(11, "swap", T::Message(&CORE_V1_NODE_SWAP_STATUS)),
    ],
};

pub(crate) static CORE_V1_OBJECT_FIELD_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ObjectFieldSelector",
    fields: &[
        F::new(1, "apiVersion", T::String).omit_zero(),
        F::new(2, "fieldPath", T::String),
    ],
};

pub(crate) static CORE_V1_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ObjectReference",
    fields: &[
        F::new(1, "kind", T::String).omit_zero(),
        F::new(2, "namespace", T::String).omit_zero(),
        F::new(3, "name", T::String).omit_zero(),
        F::new(4, "uid", T::String).omit_zero(),
        F::new(5, "apiVersion", T::String).omit_zero(),
        F::new(6, "resourceVersion", T::String).omit_zero(),
        F::new(7, "fieldPath", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolume",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_PERSISTENT_VOLUME_SPEC)),
        F::new(3, "status", T::Message(&CORE_V1_PERSISTENT_VOLUME_STATUS)),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_CLAIM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeClaim",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM_SPEC)),
        F::new(
            3,
            "status",
            T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM_STATUS),
        ),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_CLAIM_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeClaimCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastProbeTime", T::Time),
        F::new(4, "lastTransitionTime", T::Time),
        F::new(5, "reason", T::String).omit_zero(),
        F::new(6, "message", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_CLAIM_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeClaimSpec",
    fields: &[
        F::new(1, "accessModes", T::String).repeated(),
        F::new(4, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(
            2,
            "resources",
            T::Message(&CORE_V1_VOLUME_RESOURCE_REQUIREMENTS),
        ),
        F::new(3, "volumeName", T::String).omit_zero(),
        F::new(5, "storageClassName", T::String),
        F::new(6, "volumeMode", T::String),
        F::new(
            7,
            "dataSource",
            T::Message(&CORE_V1_TYPED_LOCAL_OBJECT_REFERENCE),
        ),
        F::new(
            8,
            "dataSourceRef",
            T::Message(&CORE_V1_TYPED_OBJECT_REFERENCE),
        ),
        F::new(9, "volumeAttributesClassName", T::String),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_CLAIM_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeClaimStatus",
    fields: &[
        F::new(1, "phase", T::String).omit_zero(),
        F::new(2, "accessModes", T::String).repeated(),
        F::new(3, "capacity", T::Map(&T::Quantity)),
        F::new(
            4,
            "conditions",
            T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM_CONDITION),
        )
        .repeated(),
        F::new(5, "allocatedResources", T::Map(&T::Quantity)),
        F::new(7, "allocatedResourceStatuses", T::Map(&T::String)),
        F::new(8, "currentVolumeAttributesClassName", T::String),
        F::new(
            9,
            "modifyVolumeStatus",
            T::Message(&CORE_V1_MODIFY_VOLUME_STATUS),
        ),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_CLAIM_TEMPLATE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeClaimTemplate",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM_SPEC)),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeClaimVolumeSource",
    fields: &[
        F::new(1, "claimName", T::String),
        F::new(2, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeSource",
    fields: &[
        F::new(
            1,
            "gcePersistentDisk",
            T::Message(&CORE_V1_GCE_PERSISTENT_DISK_VOLUME_SOURCE),
        ),
        F::new(
            2,
            "awsElasticBlockStore",
            T::Message(&CORE_V1_AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE),
        ),
        F::new(3, "hostPath", T::Message(&CORE_V1_HOST_PATH_VOLUME_SOURCE)),
        F::new(
            4,
            "glusterfs",
            T::Message(&CORE_V1_GLUSTERFS_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(5, "nfs", T::Message(&CORE_V1_NFS_VOLUME_SOURCE)),
        F::new(6, "rbd", T::Message(&CORE_V1_RBD_PERSISTENT_VOLUME_SOURCE)),
        F::new(
            7,
            "iscsi",
            T::Message(&CORE_V1_ISCSI_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(
            8,
            "cinder",
            T::Message(&CORE_V1_CINDER_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(
            9,
            "cephfs",
            T::Message(&CORE_V1_CEPH_FS_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(10, "fc", T::Message(&CORE_V1_FC_VOLUME_SOURCE)),
        F::new(11, "flocker", T::Message(&CORE_V1_FLOCKER_VOLUME_SOURCE)),
        F::new(
            12,
            "flexVolume",
            T::Message(&CORE_V1_FLEX_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(
            13,
            "azureFile",
            T::Message(&CORE_V1_AZURE_FILE_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(
            14,
            "vsphereVolume",
            T::Message(&CORE_V1_VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE),
        ),
        F::new(15, "quobyte", T::Message(&CORE_V1_QUOBYTE_VOLUME_SOURCE)),
        F::new(
            16,
            "azureDisk",
            T::Message(&CORE_V1_AZURE_DISK_VOLUME_SOURCE),
        ),
        F::new(
            17,
            "photonPersistentDisk",
            T::Message(&CORE_V1_PHOTON_PERSISTENT_DISK_VOLUME_SOURCE),
        ),
        F::new(
            18,
            "portworxVolume",
            T::Message(&CORE_V1_PORTWORX_VOLUME_SOURCE),
        ),
        F::new(
            19,
            "scaleIO",
            T::Message(&CORE_V1_SCALE_IO_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(20, "local", T::Message(&CORE_V1_LOCAL_VOLUME_SOURCE)),
        F::new(
            21,
            "storageos",
            T::Message(&CORE_V1_STORAGE_OS_PERSISTENT_VOLUME_SOURCE),
        ),
        F::new(22, "csi", T::Message(&CORE_V1_CSI_PERSISTENT_VOLUME_SOURCE)),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeSpec",
    fields: &[
        F::new(1, "capacity", T::Map(&T::Quantity)),
        F::new(2, "", T::Inline(&CORE_V1_PERSISTENT_VOLUME_SOURCE)),
        F::new(3, "accessModes", T::String).repeated(),
        F::new(4, "claimRef", T::Message(&CORE_V1_OBJECT_REFERENCE)),
        F::new(5, "persistentVolumeReclaimPolicy", T::String).omit_zero(),
        F::new(6, "storageClassName", T::String).omit_zero(),
        F::new(7, "mountOptions", T::String).repeated(),
        F::new(8, "volumeMode", T::String),
        F::new(9, "nodeAffinity", T::Message(&CORE_V1_VOLUME_NODE_AFFINITY)),
        F::new(10, "volumeAttributesClassName", T::String),
    ],
};

pub(crate) static CORE_V1_PERSISTENT_VOLUME_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PersistentVolumeStatus",
    fields: &[
        F::new(1, "phase", T::String).omit_zero(),
        F::new(2, "message", T::String).omit_zero(),
        F::new(3, "reason", T::String).omit_zero(),
        F::new(4, "lastPhaseTransitionTime", T::Time),
    ],
};

pub(crate) static CORE_V1_PHOTON_PERSISTENT_DISK_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PhotonPersistentDiskVolumeSource",
    fields: &[
        F::new(1, "pdID", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_POD: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Pod",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_POD_SPEC)),
        F::new(3, "status", T::Message(&CORE_V1_POD_STATUS)),
    ],
};

pub(crate) static CORE_V1_POD_AFFINITY: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodAffinity",
    fields: &[
        F::new(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            T::Message(&CORE_V1_POD_AFFINITY_TERM),
        )
        .repeated(),
        F::new(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            T::Message(&CORE_V1_WEIGHTED_POD_AFFINITY_TERM),
        )
        .repeated(),
    ],
};

pub(crate) static CORE_V1_POD_AFFINITY_TERM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodAffinityTerm",
    fields: &[
        F::new(1, "labelSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(2, "namespaces", T::String).repeated(),
        F::new(3, "topologyKey", T::String),
        F::new(4, "namespaceSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(5, "matchLabelKeys", T::String).repeated(),
        F::new(6, "mismatchLabelKeys", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_POD_ANTI_AFFINITY: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodAntiAffinity",
    fields: &[
        F::new(
            1,
            "requiredDuringSchedulingIgnoredDuringExecution",
            T::Message(&CORE_V1_POD_AFFINITY_TERM),
        )
        .repeated(),
        F::new(
            2,
            "preferredDuringSchedulingIgnoredDuringExecution",
            T::Message(&CORE_V1_WEIGHTED_POD_AFFINITY_TERM),
        )
        .repeated(),
    ],
};

pub(crate) static CORE_V1_POD_CERTIFICATE_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodCertificateProjection",
    fields: &[
        F::new(1, "signerName", T::String).omit_zero(),
        F::new(2, "keyType", T::String).omit_zero(),
        F::new(3, "maxExpirationSeconds", T::Int32),
        F::new(4, "credentialBundlePath", T::String).omit_zero(),
        F::new(5, "keyPath", T::String).omit_zero(),
        F::new(6, "certificateChainPath", T::String).omit_zero(),
        F::new(7, "userAnnotations", T::Map(&T::String)),
    ],
};

pub(crate) static CORE_V1_POD_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(7, "observedGeneration", T::Int64).omit_zero(),
        F::new(2, "status", T::String),
        F::new(3, "lastProbeTime", T::Time),
        F::new(4, "lastTransitionTime", T::Time),
        F::new(5, "reason", T::String).omit_zero(),
        F::new(6, "message", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_POD_DNS_CONFIG: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodDNSConfig",
    fields: &[
        F::new(1, "nameservers", T::String).repeated(),
        F::new(2, "searches", T::String).repeated(),
        F::new(3, "options", T::Message(&CORE_V1_POD_DNS_CONFIG_OPTION)).repeated(),
    ],
};

pub(crate) static CORE_V1_POD_DNS_CONFIG_OPTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodDNSConfigOption",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "value", T::String),
    ],
};

pub(crate) static CORE_V1_POD_EXTENDED_RESOURCE_CLAIM_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodExtendedResourceClaimStatus",
    fields: &[
        F::new(
            1,
            "requestMappings",
            T::Message(&CORE_V1_CONTAINER_EXTENDED_RESOURCE_REQUEST),
        )
        .repeated(),
        F::new(2, "resourceClaimName", T::String),
    ],
};

pub(crate) static CORE_V1_POD_IP: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodIP",
    fields: &[F::new(1, "ip", T::String)],
};

pub(crate) static CORE_V1_POD_OS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodOS",
    fields: &[F::new(1, "name", T::String)],
};

pub(crate) static CORE_V1_POD_READINESS_GATE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodReadinessGate",
    fields: &[F::new(1, "conditionType", T::String)],
};

pub(crate) static CORE_V1_POD_RESOURCE_CLAIM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodResourceClaim",
    fields: &[
        F::new(1, "name", T::String),
        F::new(3, "resourceClaimName", T::String),
        F::new(4, "resourceClaimTemplateName", T::String),
    ],
};

pub(crate) static CORE_V1_POD_RESOURCE_CLAIM_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodResourceClaimStatus",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "resourceClaimName", T::String),
    ],
};

pub(crate) static CORE_V1_POD_SCHEDULING_GATE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodSchedulingGate",
    fields: &[F::new(1, "name", T::String)],
};

pub(crate) static CORE_V1_POD_SECURITY_CONTEXT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodSecurityContext",
    fields: &[
        F::new(1, "seLinuxOptions", T::Message(&CORE_V1_SE_LINUX_OPTIONS)),
        F::new(
            8,
            "windowsOptions",
            T::Message(&CORE_V1_WINDOWS_SECURITY_CONTEXT_OPTIONS),
        ),
        F::new(2, "runAsUser", T::Int64),
        F::new(6, "runAsGroup", T::Int64),
        F::new(3, "runAsNonRoot", T::Bool),
        F::new(4, "supplementalGroups", T::Int64).repeated(),
        F::new(12, "supplementalGroupsPolicy", T::String),
        F::new(5, "fsGroup", T::Int64),
        F::new(7, "sysctls", T::Message(&CORE_V1_SYSCTL)).repeated(),
        F::new(9, "fsGroupChangePolicy", T::String),
        F::new(10, "seccompProfile", T::Message(&CORE_V1_SECCOMP_PROFILE)),
        F::new(
            11,
            "appArmorProfile",
            T::Message(&CORE_V1_APP_ARMOR_PROFILE),
        ),
        F::new(13, "seLinuxChangePolicy", T::String),
    ],
};

pub(crate) static CORE_V1_POD_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodSpec",
    fields: &[
        F::new(1, "volumes", T::Message(&CORE_V1_VOLUME)).repeated(),
        F::new(20, "initContainers", T::Message(&CORE_V1_CONTAINER)).repeated(),
        F::new(2, "containers", T::Message(&CORE_V1_CONTAINER)).repeated(),
        F::new(
            34,
            "ephemeralContainers",
            T::Message(&CORE_V1_EPHEMERAL_CONTAINER),
        )
        .repeated(),
        F::new(3, "restartPolicy", T::String).omit_zero(),
        F::new(4, "terminationGracePeriodSeconds", T::Int64),
        F::new(5, "activeDeadlineSeconds", T::Int64),
        F::new(6, "dnsPolicy", T::String).omit_zero(),
        F::new(7, "nodeSelector", T::Map(&T::String)),
        F::new(8, "serviceAccountName", T::String).omit_zero(),
        F::new(9, "serviceAccount", T::String).omit_zero(),
        F::new(21, "automountServiceAccountToken", T::Bool),
        F::new(10, "nodeName", T::String).omit_zero(),
        F::new(11, "hostNetwork", T::Bool).omit_zero(),
        F::new(12, "hostPID", T::Bool).omit_zero(),
        F::new(13, "hostIPC", T::Bool).omit_zero(),
        F::new(27, "shareProcessNamespace", T::Bool),
        F::new(
            14,
            "securityContext",
            T::Message(&CORE_V1_POD_SECURITY_CONTEXT),
        ),
        F::new(
            15,
            "imagePullSecrets",
            T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE),
        )
        .repeated(),
        F::new(16, "hostname", T::String).omit_zero(),
        F::new(17, "subdomain", T::String).omit_zero(),
        F::new(18, "affinity", T::Message(&CORE_V1_AFFINITY)),
        F::new(19, "schedulerName", T::String).omit_zero(),
        F::new(22, "tolerations", T::Message(&CORE_V1_TOLERATION)).repeated(),
        F::new(23, "hostAliases", T::Message(&CORE_V1_HOST_ALIAS)).repeated(),
        F::new(24, "priorityClassName", T::String).omit_zero(),
        F::new(25, "priority", T::Int32),
        F::new(26, "dnsConfig", T::Message(&CORE_V1_POD_DNS_CONFIG)),
        F::new(
            28,
            "readinessGates",
            T::Message(&CORE_V1_POD_READINESS_GATE),
        )
        .repeated(),
        F::new(29, "runtimeClassName", T::String),
        F::new(30, "enableServiceLinks", T::Bool),
        F::new(31, "preemptionPolicy", T::String),
        F::new(32, "overhead", T::Map(&T::Quantity)),
        F::new(
            33,
            "topologySpreadConstraints",
            T::Message(&CORE_V1_TOPOLOGY_SPREAD_CONSTRAINT),
        )
        .repeated(),
        F::new(35, "setHostnameAsFQDN", T::Bool),
        F::new(36, "os", T::Message(&CORE_V1_POD_OS)),
        F::new(37, "hostUsers", T::Bool),
        F::new(
            38,
            "schedulingGates",
            T::Message(&CORE_V1_POD_SCHEDULING_GATE),
        )
        .repeated(),
        F::new(
            39,
            "resourceClaims",
            T::Message(&CORE_V1_POD_RESOURCE_CLAIM),
        )
        .repeated(),
        F::new(40, "resources", T::Message(&CORE_V1_RESOURCE_REQUIREMENTS)),
        F::new(41, "hostnameOverride", T::String),
        F::new(42, "workloadRef", T::Message(&CORE_V1_WORKLOAD_REFERENCE)),
    ],
};

pub(crate) static CORE_V1_POD_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodStatus",
    fields: &[
        F::new(17, "observedGeneration", T::Int64).omit_zero(),
        F::new(1, "phase", T::String).omit_zero(),
        F::new(2, "conditions", T::Message(&CORE_V1_POD_CONDITION)).repeated(),
        F::new(3, "message", T::String).omit_zero(),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(11, "nominatedNodeName", T::String).omit_zero(),
        F::new(5, "hostIP", T::String).omit_zero(),
        F::new(16, "hostIPs", T::Message(&CORE_V1_HOST_IP)).repeated(),
        F::new(6, "podIP", T::String).omit_zero(),
        F::new(12, "podIPs", T::Message(&CORE_V1_POD_IP)).repeated(),
        F::new(7, "startTime", T::Time),
        F::new(
            10,
            "initContainerStatuses",
            T::Message(&CORE_V1_CONTAINER_STATUS),
        )
        .repeated(),
        F::new(
            8,
            "containerStatuses",
            T::Message(&CORE_V1_CONTAINER_STATUS),
        )
        .repeated(),
        F::new(9, "qosClass", T::String).omit_zero(),
        F::new(
            13,
            "ephemeralContainerStatuses",
            T::Message(&CORE_V1_CONTAINER_STATUS),
        )
        .repeated(),
        F::new(14, "resize", T::String).omit_zero(),
        F::new(
            15,
            "resourceClaimStatuses",
            T::Message(&CORE_V1_POD_RESOURCE_CLAIM_STATUS),
        )
        .repeated(),
        F::new(
            18,
            "extendedResourceClaimStatus",
            T::Message(&CORE_V1_POD_EXTENDED_RESOURCE_CLAIM_STATUS),
        ),
        F::new(19, "allocatedResources", T::Map(&T::Quantity)),
        F::new(20, "resources", T::Message(&CORE_V1_RESOURCE_REQUIREMENTS)),
    ],
};

pub(crate) static CORE_V1_POD_TEMPLATE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodTemplate",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(crate) static CORE_V1_POD_TEMPLATE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PodTemplateSpec",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_POD_SPEC)),
    ],
};

pub(crate) static CORE_V1_PORT_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PortStatus",
    fields: &[
        F::new(1, "port", T::Int32),
        F::new(2, "protocol", T::String),
        F::new(3, "error", T::String),
    ],
};

pub(crate) static CORE_V1_PORTWORX_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PortworxVolumeSource",
    fields: &[
        F::new(1, "volumeID", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_PREFERRED_SCHEDULING_TERM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.PreferredSchedulingTerm",
    fields: &[
        F::new(1, "weight", T::Int32),
        F::new(2, "preference", T::Message(&CORE_V1_NODE_SELECTOR_TERM)),
    ],
};

pub(crate) static CORE_V1_PROBE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Probe",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_PROBE_HANDLER)),
        F::new(2, "initialDelaySeconds", T::Int32).omit_zero(),
        F::new(3, "timeoutSeconds", T::Int32).omit_zero(),
        F::new(4, "periodSeconds", T::Int32).omit_zero(),
        F::new(5, "successThreshold", T::Int32).omit_zero(),
        F::new(6, "failureThreshold", T::Int32).omit_zero(),
        F::new(7, "terminationGracePeriodSeconds", T::Int64),
    ],
};

pub(crate) static CORE_V1_PROBE_HANDLER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ProbeHandler",
    fields: &[
        F::new(1, "exec", T::Message(&CORE_V1_EXEC_ACTION)),
        F::new(2, "httpGet", T::Message(&CORE_V1_HTTP_GET_ACTION)),
        F::new(3, "tcpSocket", T::Message(&CORE_V1_TCP_SOCKET_ACTION)),
        F::new(4, "grpc", T::Message(&CORE_V1_GRPC_ACTION)),
    ],
};

pub(crate) static CORE_V1_PROJECTED_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ProjectedVolumeSource",
    fields: &[
        F::new(1, "sources", T::Message(&CORE_V1_VOLUME_PROJECTION)).repeated(),
        F::new(2, "defaultMode", T::Int32),
    ],
};

pub(crate) static CORE_V1_QUOBYTE_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.QuobyteVolumeSource",
    fields: &[
        F::new(1, "registry", T::String),
        F::new(2, "volume", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "user", T::String).omit_zero(),
        F::new(5, "group", T::String).omit_zero(),
        F::new(6, "tenant", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_RBD_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.RBDPersistentVolumeSource",
    fields: &[
        F::new(1, "monitors", T::String).repeated(),
        F::new(2, "image", T::String),
        F::new(3, "fsType", T::String).omit_zero(),
        F::new(4, "pool", T::String).omit_zero(),
        F::new(5, "user", T::String).omit_zero(),
        F::new(6, "keyring", T::String).omit_zero(),
        F::new(7, "secretRef", T::Message(&CORE_V1_SECRET_REFERENCE)),
        F::new(8, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_RBD_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.RBDVolumeSource",
    fields: &[
        F::new(1, "monitors", T::String).repeated(),
        F::new(2, "image", T::String),
        F::new(3, "fsType", T::String).omit_zero(),
        F::new(4, "pool", T::String).omit_zero(),
        F::new(5, "user", T::String).omit_zero(),
        F::new(6, "keyring", T::String).omit_zero(),
        F::new(7, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(8, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_REPLICATION_CONTROLLER: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ReplicationController",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_REPLICATION_CONTROLLER_SPEC)),
        F::new(
            3,
            "status",
            T::Message(&CORE_V1_REPLICATION_CONTROLLER_STATUS),
        ),
    ],
};

pub(crate) static CORE_V1_REPLICATION_CONTROLLER_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ReplicationControllerCondition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "lastTransitionTime", T::Time),
        F::new(4, "reason", T::String).omit_zero(),
        F::new(5, "message", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_REPLICATION_CONTROLLER_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ReplicationControllerSpec",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(4, "minReadySeconds", T::Int32).omit_zero(),
        F::new(2, "selector", T::Map(&T::String)),
        F::new(3, "template", T::Message(&CORE_V1_POD_TEMPLATE_SPEC)),
    ],
};

pub(crate) static CORE_V1_REPLICATION_CONTROLLER_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ReplicationControllerStatus",
    fields: &[
        F::new(1, "replicas", T::Int32),
        F::new(2, "fullyLabeledReplicas", T::Int32).omit_zero(),
        F::new(4, "readyReplicas", T::Int32).omit_zero(),
        F::new(5, "availableReplicas", T::Int32).omit_zero(),
        F::new(3, "observedGeneration", T::Int64).omit_zero(),
        F::new(
            6,
            "conditions",
            T::Message(&CORE_V1_REPLICATION_CONTROLLER_CONDITION),
        )
        .repeated(),
    ],
};

pub(crate) static CORE_V1_RESOURCE_CLAIM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceClaim",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "request", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_RESOURCE_FIELD_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceFieldSelector",
    fields: &[
        F::new(1, "containerName", T::String).omit_zero(),
        F::new(2, "resource", T::String),
        F::new(3, "divisor", T::Quantity),
    ],
};

pub(crate) static CORE_V1_RESOURCE_HEALTH: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceHealth",
    fields: &[
        F::new(1, "resourceID", T::String),
        F::new(2, "health", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_RESOURCE_QUOTA: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceQuota",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_RESOURCE_QUOTA_SPEC)),
        F::new(3, "status", T::Message(&CORE_V1_RESOURCE_QUOTA_STATUS)),
    ],
};

pub(crate) static CORE_V1_RESOURCE_QUOTA_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceQuotaSpec",
    fields: &[
        F::new(1, "hard", T::Map(&T::Quantity)),
        F::new(2, "scopes", T::String).repeated(),
        F::new(3, "scopeSelector", T::Message(&CORE_V1_SCOPE_SELECTOR)),
    ],
};

pub(crate) static CORE_V1_RESOURCE_QUOTA_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceQuotaStatus",
    fields: &[
        F::new(1, "hard", T::Map(&T::Quantity)),
        F::new(2, "used", T::Map(&T::Quantity)),
    ],
};

pub(crate) static CORE_V1_RESOURCE_REQUIREMENTS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceRequirements",
    fields: &[
        F::new(1, "limits", T::Map(&T::Quantity)),
        F::new(2, "requests", T::Map(&T::Quantity)),
        F::new(3, "claims", T::Message(&CORE_V1_RESOURCE_CLAIM)).repeated(),
    ],
};

pub(crate) static CORE_V1_RESOURCE_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ResourceStatus",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "resources", T::Message(&CORE_V1_RESOURCE_HEALTH)).repeated(),
    ],
};

pub(crate) static CORE_V1_SCALE_IO_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ScaleIOPersistentVolumeSource",
    fields: &[
        F::new(1, "gateway", T::String),
        F::new(2, "system", T::String),
        F::new(3, "secretRef", T::Message(&CORE_V1_SECRET_REFERENCE)),
        F::new(4, "sslEnabled", T::Bool).omit_zero(),
        F::new(5, "protectionDomain", T::String).omit_zero(),
        F::new(6, "storagePool", T::String).omit_zero(),
        F::new(7, "storageMode", T::String).omit_zero(),
        F::new(8, "volumeName", T::String).omit_zero(),
        F::new(9, "fsType", T::String).omit_zero(),
        F::new(10, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_SCALE_IO_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ScaleIOVolumeSource",
    fields: &[
        F::new(1, "gateway", T::String),
        F::new(2, "system", T::String),
        F::new(3, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(4, "sslEnabled", T::Bool).omit_zero(),
        F::new(5, "protectionDomain", T::String).omit_zero(),
        F::new(6, "storagePool", T::String).omit_zero(),
        F::new(7, "storageMode", T::String).omit_zero(),
        F::new(8, "volumeName", T::String).omit_zero(),
        F::new(9, "fsType", T::String).omit_zero(),
        F::new(10, "readOnly", T::Bool).omit_zero(),
    ],
};

pub(crate) static CORE_V1_SCOPE_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ScopeSelector",
    fields: &[F::new(
        1,
        "matchExpressions",
        T::Message(&CORE_V1_SCOPED_RESOURCE_SELECTOR_REQUIREMENT),
    )
    .repeated()],
};

pub(crate) static CORE_V1_SCOPED_RESOURCE_SELECTOR_REQUIREMENT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ScopedResourceSelectorRequirement",
    fields: &[
        F::new(1, "scopeName", T::String),
        F::new(2, "operator", T::String),
        F::new(3, "values", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_SE_LINUX_OPTIONS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SELinuxOptions",
    fields: &[
        F::new(1, "user", T::String).omit_zero(),
        F::new(2, "role", T::String).omit_zero(),
        F::new(3, "type", T::String).omit_zero(),
        F::new(4, "level", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_SECCOMP_PROFILE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SeccompProfile",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "localhostProfile", T::String),
    ],
};

pub(crate) static CORE_V1_SECRET: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Secret",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(5, "immutable", T::Bool),
        F::new(2, "data", T::Map(&T::Bytes)),
        F::new(4, "stringData", T::Map(&T::String)),
        F::new(3, "type", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_SECRET_ENV_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SecretEnvSource",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_SECRET_KEY_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SecretKeySelector",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "key", T::String),
        F::new(3, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_SECRET_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SecretProjection",
    fields: &[
        F::new(1, "", T::Inline(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
        F::new(2, "items", T::Message(&CORE_V1_KEY_TO_PATH)).repeated(),
        F::new(4, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_SECRET_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SecretReference",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "namespace", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_SECRET_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SecretVolumeSource",
    fields: &[
        F::new(1, "secretName", T::String).omit_zero(),
        F::new(2, "items", T::Message(&CORE_V1_KEY_TO_PATH)).repeated(),
        F::new(3, "defaultMode", T::Int32),
        F::new(4, "optional", T::Bool),
    ],
};

pub(crate) static CORE_V1_SECURITY_CONTEXT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SecurityContext",
    fields: &[
        F::new(1, "capabilities", T::Message(&CORE_V1_CAPABILITIES)),
        F::new(2, "privileged", T::Bool),
        F::new(3, "seLinuxOptions", T::Message(&CORE_V1_SE_LINUX_OPTIONS)),
        F::new(
            10,
            "windowsOptions",
            T::Message(&CORE_V1_WINDOWS_SECURITY_CONTEXT_OPTIONS),
        ),
        F::new(4, "runAsUser", T::Int64),
        F::new(8, "runAsGroup", T::Int64),
        F::new(5, "runAsNonRoot", T::Bool),
        F::new(6, "readOnlyRootFilesystem", T::Bool),
        F::new(7, "allowPrivilegeEscalation", T::Bool),
        F::new(9, "procMount", T::String),
        F::new(11, "seccompProfile", T::Message(&CORE_V1_SECCOMP_PROFILE)),
        F::new(
            12,
            "appArmorProfile",
            T::Message(&CORE_V1_APP_ARMOR_PROFILE),
        ),
    ],
};

pub(crate) static CORE_V1_SERVICE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Service",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&CORE_V1_SERVICE_SPEC)),
        F::new(3, "status", T::Message(&CORE_V1_SERVICE_STATUS)),
    ],
};

pub(crate) static CORE_V1_SERVICE_ACCOUNT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ServiceAccount",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "secrets", T::Message(&CORE_V1_OBJECT_REFERENCE)).repeated(),
        F::new(
            3,
            "imagePullSecrets",
            T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE),
        )
        .repeated(),
        F::new(4, "automountServiceAccountToken", T::Bool),
    ],
};

pub(crate) static CORE_V1_SERVICE_ACCOUNT_TOKEN_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ServiceAccountTokenProjection",
    fields: &[
        F::new(1, "audience", T::String).omit_zero(),
        F::new(2, "expirationSeconds", T::Int64),
        F::new(3, "path", T::String),
    ],
};

pub(crate) static CORE_V1_SERVICE_PORT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ServicePort",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "protocol", T::String).omit_zero(),
        F::new(6, "appProtocol", T::String),
        F::new(3, "port", T::Int32),
        F::new(4, "targetPort", T::IntOrString),
        F::new(5, "nodePort", T::Int32).omit_zero(),
    ],
};

pub(crate) static CORE_V1_SERVICE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ServiceSpec",
    fields: &[
        F::new(1, "ports", T::Message(&CORE_V1_SERVICE_PORT)).repeated(),
        F::new(2, "selector", T::Map(&T::String)),
        F::new(3, "clusterIP", T::String).omit_zero(),
        F::new(18, "clusterIPs", T::String).repeated(),
        F::new(4, "type", T::String).omit_zero(),
        F::new(5, "externalIPs", T::String).repeated(),
        F::new(7, "sessionAffinity", T::String).omit_zero(),
        F::new(8, "loadBalancerIP", T::String).omit_zero(),
        F::new(9, "loadBalancerSourceRanges", T::String).repeated(),
        F::new(10, "externalName", T::String).omit_zero(),
        F::new(11, "externalTrafficPolicy", T::String).omit_zero(),
        F::new(12, "healthCheckNodePort", T::Int32).omit_zero(),
        F::new(13, "publishNotReadyAddresses", T::Bool).omit_zero(),
        F::new(
            14,
            "sessionAffinityConfig",
            T::Message(&CORE_V1_SESSION_AFFINITY_CONFIG),
        ),
        F::new(19, "ipFamilies", T::String).repeated(),
        F::new(17, "ipFamilyPolicy", T::String),
        F::new(20, "allocateLoadBalancerNodePorts", T::Bool),
        F::new(21, "loadBalancerClass", T::String),
        F::new(22, "internalTrafficPolicy", T::String),
        F::new(23, "trafficDistribution", T::String),
    ],
};

pub(crate) static CORE_V1_SERVICE_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.ServiceStatus",
    fields: &[
        F::new(1, "loadBalancer", T::Message(&CORE_V1_LOAD_BALANCER_STATUS)),
        F::new(2, "conditions", T::Message(&META_V1_CONDITION)).repeated(),
    ],
};

pub(crate) static CORE_V1_SESSION_AFFINITY_CONFIG: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SessionAffinityConfig",
    fields: &[F::new(1, "clientIP", T::Message(&CORE_V1_CLIENT_IP_CONFIG))],
};

pub(crate) static CORE_V1_SLEEP_ACTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.SleepAction",
    fields: &[F::new(1, "seconds", T::Int64)],
};

pub(crate) static CORE_V1_STORAGE_OS_PERSISTENT_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.StorageOSPersistentVolumeSource",
    fields: &[
        F::new(1, "volumeName", T::String).omit_zero(),
        F::new(2, "volumeNamespace", T::String).omit_zero(),
        F::new(3, "fsType", T::String).omit_zero(),
        F::new(4, "readOnly", T::Bool).omit_zero(),
        F::new(5, "secretRef", T::Message(&CORE_V1_OBJECT_REFERENCE)),
    ],
};

pub(crate) static CORE_V1_STORAGE_OS_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.StorageOSVolumeSource",
    fields: &[
        F::new(1, "volumeName", T::String).omit_zero(),
        F::new(2, "volumeNamespace", T::String).omit_zero(),
        F::new(3, "fsType", T::String).omit_zero(),
        F::new(4, "readOnly", T::Bool).omit_zero(),
        F::new(5, "secretRef", T::Message(&CORE_V1_LOCAL_OBJECT_REFERENCE)),
    ],
};

pub(crate) static CORE_V1_SYSCTL: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Sysctl",
    fields: &[F::new(1, "name", T::String), F::new(2, "value", T::String)],
};

pub(crate) static CORE_V1_TAINT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Taint",
    fields: &[
        F::new(1, "key", T::String),
        F::new(2, "value", T::String).omit_zero(),
        F::new(3, "effect", T::String),
        F::new(4, "timeAdded", T::Time),
    ],
};

pub(crate) static CORE_V1_TCP_SOCKET_ACTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.TCPSocketAction",
    fields: &[
        F::new(1, "port", T::IntOrString),
        F::new(2, "host", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_TOLERATION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Toleration",
    fields: &[
        F::new(1, "key", T::String).omit_zero(),
        F::new(2, "operator", T::String).omit_zero(),
        F::new(3, "value", T::String).omit_zero(),
        F::new(4, "effect", T::String).omit_zero(),
        F::new(5, "tolerationSeconds", T::Int64),
    ],
};

pub(crate) static CORE_V1_TOPOLOGY_SELECTOR_LABEL_REQUIREMENT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.TopologySelectorLabelRequirement",
    fields: &[
        F::new(1, "key", T::String),
        F::new(2, "values", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_TOPOLOGY_SELECTOR_TERM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.TopologySelectorTerm",
    fields: &[F::new(
        1,
        "matchLabelExpressions",
        T::Message(&CORE_V1_TOPOLOGY_SELECTOR_LABEL_REQUIREMENT),
    )
    .repeated()],
};

pub(crate) static CORE_V1_TOPOLOGY_SPREAD_CONSTRAINT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.TopologySpreadConstraint",
    fields: &[
        F::new(1, "maxSkew", T::Int32),
        F::new(2, "topologyKey", T::String),
        F::new(3, "whenUnsatisfiable", T::String),
        F::new(4, "labelSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(5, "minDomains", T::Int32),
        F::new(6, "nodeAffinityPolicy", T::String),
        F::new(7, "nodeTaintsPolicy", T::String),
        F::new(8, "matchLabelKeys", T::String).repeated(),
    ],
};

pub(crate) static CORE_V1_TYPED_LOCAL_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.TypedLocalObjectReference",
    fields: &[
        F::new(1, "apiGroup", T::String),
        F::new(2, "kind", T::String),
        F::new(3, "name", T::String),
    ],
};

pub(crate) static CORE_V1_TYPED_OBJECT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.TypedObjectReference",
    fields: &[
        F::new(1, "apiGroup", T::String),
        F::new(2, "kind", T::String),
        F::new(3, "name", T::String),
        F::new(4, "namespace", T::String),
    ],
};

pub(crate) static CORE_V1_VOLUME: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.Volume",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "", T::Inline(&CORE_V1_VOLUME_SOURCE)),
    ],
};

pub(crate) static CORE_V1_VOLUME_DEVICE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeDevice",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "devicePath", T::String),
    ],
};

pub(crate) static CORE_V1_VOLUME_MOUNT: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeMount",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "readOnly", T::Bool).omit_zero(),
        F::new(7, "recursiveReadOnly", T::String),
        F::new(3, "mountPath", T::String),
        F::new(4, "subPath", T::String).omit_zero(),
        F::new(5, "mountPropagation", T::String),
        F::new(6, "subPathExpr", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_VOLUME_MOUNT_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeMountStatus",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "mountPath", T::String),
        F::new(3, "readOnly", T::Bool).omit_zero(),
        F::new(4, "recursiveReadOnly", T::String),
    ],
};

pub(crate) static CORE_V1_VOLUME_NODE_AFFINITY: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeNodeAffinity",
    fields: &[F::new(1, "required", T::Message(&CORE_V1_NODE_SELECTOR))],
};

pub(crate) static CORE_V1_VOLUME_PROJECTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeProjection",
    fields: &[
        F::new(1, "secret", T::Message(&CORE_V1_SECRET_PROJECTION)),
        F::new(
            2,
            "downwardAPI",
            T::Message(&CORE_V1_DOWNWARD_API_PROJECTION),
        ),
        F::new(3, "configMap", T::Message(&CORE_V1_CONFIG_MAP_PROJECTION)),
        F::new(
            4,
            "serviceAccountToken",
            T::Message(&CORE_V1_SERVICE_ACCOUNT_TOKEN_PROJECTION),
        ),
        F::new(
            5,
            "clusterTrustBundle",
            T::Message(&CORE_V1_CLUSTER_TRUST_BUNDLE_PROJECTION),
        ),
        F::new(
            6,
            "podCertificate",
            T::Message(&CORE_V1_POD_CERTIFICATE_PROJECTION),
        ),
    ],
};

pub(crate) static CORE_V1_VOLUME_RESOURCE_REQUIREMENTS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeResourceRequirements",
    fields: &[
        F::new(1, "limits", T::Map(&T::Quantity)),
        F::new(2, "requests", T::Map(&T::Quantity)),
    ],
};

pub(crate) static CORE_V1_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VolumeSource",
    fields: &[
        F::new(1, "hostPath", T::Message(&CORE_V1_HOST_PATH_VOLUME_SOURCE)),
        F::new(2, "emptyDir", T::Message(&CORE_V1_EMPTY_DIR_VOLUME_SOURCE)),
        F::new(
            3,
            "gcePersistentDisk",
            T::Message(&CORE_V1_GCE_PERSISTENT_DISK_VOLUME_SOURCE),
        ),
        F::new(
            4,
            "awsElasticBlockStore",
            T::Message(&CORE_V1_AWS_ELASTIC_BLOCK_STORE_VOLUME_SOURCE),
        ),
        F::new(5, "gitRepo", T::Message(&CORE_V1_GIT_REPO_VOLUME_SOURCE)),
        F::new(6, "secret", T::Message(&CORE_V1_SECRET_VOLUME_SOURCE)),
        F::new(7, "nfs", T::Message(&CORE_V1_NFS_VOLUME_SOURCE)),
        F::new(8, "iscsi", T::Message(&CORE_V1_ISCSI_VOLUME_SOURCE)),
        F::new(9, "glusterfs", T::Message(&CORE_V1_GLUSTERFS_VOLUME_SOURCE)),
        F::new(
            10,
            "persistentVolumeClaim",
            T::Message(&CORE_V1_PERSISTENT_VOLUME_CLAIM_VOLUME_SOURCE),
        ),
        F::new(11, "rbd", T::Message(&CORE_V1_RBD_VOLUME_SOURCE)),
        F::new(12, "flexVolume", T::Message(&CORE_V1_FLEX_VOLUME_SOURCE)),
        F::new(13, "cinder", T::Message(&CORE_V1_CINDER_VOLUME_SOURCE)),
        F::new(14, "cephfs", T::Message(&CORE_V1_CEPH_FS_VOLUME_SOURCE)),
        F::new(15, "flocker", T::Message(&CORE_V1_FLOCKER_VOLUME_SOURCE)),
        F::new(
            16,
            "downwardAPI",
            T::Message(&CORE_V1_DOWNWARD_API_VOLUME_SOURCE),
        ),
        F::new(17, "fc", T::Message(&CORE_V1_FC_VOLUME_SOURCE)),
        F::new(
            18,
            "azureFile",
            T::Message(&CORE_V1_AZURE_FILE_VOLUME_SOURCE),
        ),
        F::new(
            19,
            "configMap",
            T::Message(&CORE_V1_CONFIG_MAP_VOLUME_SOURCE),
        ),
        F::new(
            20,
            "vsphereVolume",
            T::Message(&CORE_V1_VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE),
        ),
        F::new(21, "quobyte", T::Message(&CORE_V1_QUOBYTE_VOLUME_SOURCE)),
        F::new(
            22,
            "azureDisk",
            T::Message(&CORE_V1_AZURE_DISK_VOLUME_SOURCE),
        ),
        F::new(
            23,
            "photonPersistentDisk",
            T::Message(&CORE_V1_PHOTON_PERSISTENT_DISK_VOLUME_SOURCE),
        ),
        F::new(
            26,
            "projected",
            T::Message(&CORE_V1_PROJECTED_VOLUME_SOURCE),
        ),
        F::new(
            24,
            "portworxVolume",
            T::Message(&CORE_V1_PORTWORX_VOLUME_SOURCE),
        ),
        F::new(25, "scaleIO", T::Message(&CORE_V1_SCALE_IO_VOLUME_SOURCE)),
        F::new(
            27,
            "storageos",
            T::Message(&CORE_V1_STORAGE_OS_VOLUME_SOURCE),
        ),
        F::new(28, "csi", T::Message(&CORE_V1_CSI_VOLUME_SOURCE)),
        F::new(
            29,
            "ephemeral",
            T::Message(&CORE_V1_EPHEMERAL_VOLUME_SOURCE),
        ),
        F::new(30, "image", T::Message(&CORE_V1_IMAGE_VOLUME_SOURCE)),
    ],
};

pub(crate) static CORE_V1_VSPHERE_VIRTUAL_DISK_VOLUME_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.VsphereVirtualDiskVolumeSource",
    fields: &[
        F::new(1, "volumePath", T::String),
        F::new(2, "fsType", T::String).omit_zero(),
        F::new(3, "storagePolicyName", T::String).omit_zero(),
        F::new(4, "storagePolicyID", T::String).omit_zero(),
    ],
};

pub(crate) static CORE_V1_WEIGHTED_POD_AFFINITY_TERM: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.WeightedPodAffinityTerm",
    fields: &[
        F::new(1, "weight", T::Int32),
        F::new(2, "podAffinityTerm", T::Message(&CORE_V1_POD_AFFINITY_TERM)),
    ],
};

pub(crate) static CORE_V1_WINDOWS_SECURITY_CONTEXT_OPTIONS: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.WindowsSecurityContextOptions",
    fields: &[
        F::new(1, "gmsaCredentialSpecName", T::String),
        F::new(2, "gmsaCredentialSpec", T::String),
        F::new(3, "runAsUserName", T::String),
        F::new(4, "hostProcess", T::Bool),
    ],
};

pub(crate) static CORE_V1_WORKLOAD_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.core.v1.WorkloadReference",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "podGroup", T::String),
        F::new(3, "podGroupReplicaKey", T::String).omit_zero(),
    ],
};

pub(crate) static DISCOVERY_V1_ENDPOINT: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.Endpoint",
    fields: &[
        F::new(1, "addresses", T::String).repeated(),
        F::new(
            2,
            "conditions",
            T::Message(&DISCOVERY_V1_ENDPOINT_CONDITIONS),
        ),
        F::new(3, "hostname", T::String),
        F::new(4, "targetRef", T::Message(&CORE_V1_OBJECT_REFERENCE)),
        F::new(5, "deprecatedTopology", T::Map(&T::String)),
        F::new(6, "nodeName", T::String),
        F::new(7, "zone", T::String),
        F::new(8, "hints", T::Message(&DISCOVERY_V1_ENDPOINT_HINTS)),
    ],
};

pub(crate) static DISCOVERY_V1_ENDPOINT_CONDITIONS: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.EndpointConditions",
    fields: &[
        F::new(1, "ready", T::Bool),
        F::new(2, "serving", T::Bool),
        F::new(3, "terminating", T::Bool),
    ],
};

pub(crate) static DISCOVERY_V1_ENDPOINT_HINTS: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.EndpointHints",
    fields: &[
        F::new(1, "forZones", T::Message(&DISCOVERY_V1_FOR_ZONE)).repeated(),
        F::new(2, "forNodes", T::Message(&DISCOVERY_V1_FOR_NODE)).repeated(),
    ],
};

pub(crate) static DISCOVERY_V1_ENDPOINT_PORT: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.EndpointPort",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "protocol", T::String),
        F::new(3, "port", T::Int32),
        F::new(4, "appProtocol", T::String),
    ],
};

pub(crate) static DISCOVERY_V1_ENDPOINT_SLICE: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.EndpointSlice",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(4, "addressType", T::String),
        F::new(2, "endpoints", T::Message(&DISCOVERY_V1_ENDPOINT)).repeated(),
        F::new(3, "ports", T::Message(&DISCOVERY_V1_ENDPOINT_PORT)).repeated(),
    ],
};

pub(crate) static DISCOVERY_V1_FOR_NODE: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.ForNode",
    fields: &[F::new(1, "name", T::String)],
};

pub(crate) static DISCOVERY_V1_FOR_ZONE: MessageDesc = MessageDesc {
    name: "k8s.io.api.discovery.v1.ForZone",
    fields: &[F::new(1, "name", T::String)],
};

pub(crate) static META_V1_CONDITION: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.Condition",
    fields: &[
        F::new(1, "type", T::String),
        F::new(2, "status", T::String),
        F::new(3, "observedGeneration", T::Int64).omit_zero(),
        F::new(4, "lastTransitionTime", T::Time),
        F::new(5, "reason", T::String),
        F::new(6, "message", T::String),
    ],
};

pub(crate) static META_V1_DELETE_OPTIONS: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    fields: &[
        F::new(1, "gracePeriodSeconds", T::Int64),
        F::new(2, "preconditions", T::Message(&META_V1_PRECONDITIONS)),
        F::new(3, "orphanDependents", T::Bool),
        F::new(4, "propagationPolicy", T::String),
        F::new(5, "dryRun", T::String).repeated(),
        F::new(
            6,
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            T::Bool,
        ),
    ],
};

pub(crate) static META_V1_FIELD_SELECTOR_REQUIREMENT: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement",
    fields: &[
        F::new(1, "key", T::String),
        F::new(2, "operator", T::String),
        F::new(3, "values", T::String).repeated(),
    ],
};

pub(crate) static META_V1_LABEL_SELECTOR: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelector",
    fields: &[
        F::new(1, "matchLabels", T::Map(&T::String)),
        F::new(
            2,
            "matchExpressions",
            T::Message(&META_V1_LABEL_SELECTOR_REQUIREMENT),
        )
        .repeated(),
    ],
};

pub(crate) static META_V1_LABEL_SELECTOR_REQUIREMENT: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
    fields: &[
        F::new(1, "key", T::String),
        F::new(2, "operator", T::String),
        F::new(3, "values", T::String).repeated(),
    ],
};

pub(crate) static META_V1_MANAGED_FIELDS_ENTRY: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
    fields: &[
        F::new(1, "manager", T::String).omit_zero(),
        F::new(2, "operation", T::String).omit_zero(),
        F::new(3, "apiVersion", T::String).omit_zero(),
        F::new(4, "time", T::Time),
        F::new(6, "fieldsType", T::String).omit_zero(),
        F::new(7, "fieldsV1", T::FieldsV1),
        F::new(8, "subresource", T::String).omit_zero(),
    ],
};

pub(crate) static META_V1_OBJECT_META: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "generateName", T::String).omit_zero(),
        F::new(3, "namespace", T::String).omit_zero(),
        F::new(4, "selfLink", T::String).omit_zero(),
        F::new(5, "uid", T::String).omit_zero(),
        F::new(6, "resourceVersion", T::String).omit_zero(),
        F::new(7, "generation", T::Int64).omit_zero(),
        F::new(8, "creationTimestamp", T::Time),
        F::new(9, "deletionTimestamp", T::Time),
        F::new(10, "deletionGracePeriodSeconds", T::Int64),
        F::new(11, "labels", T::Map(&T::String)),
        F::new(12, "annotations", T::Map(&T::String)),
        F::new(13, "ownerReferences", T::Message(&META_V1_OWNER_REFERENCE)).repeated(),
        F::new(14, "finalizers", T::String).repeated(),
        F::new(
            17,
            "managedFields",
            T::Message(&META_V1_MANAGED_FIELDS_ENTRY),
        )
        .repeated(),
    ],
};

pub(crate) static META_V1_OWNER_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.OwnerReference",
    fields: &[
        F::new(5, "apiVersion", T::String),
        F::new(1, "kind", T::String),
        F::new(3, "name", T::String),
        F::new(4, "uid", T::String),
        F::new(6, "controller", T::Bool),
        F::new(7, "blockOwnerDeletion", T::Bool),
    ],
};

pub(crate) static META_V1_PRECONDITIONS: MessageDesc = MessageDesc {
    name: "k8s.io.apimachinery.pkg.apis.meta.v1.Preconditions",
    fields: &[
        F::new(1, "uid", T::String),
        F::new(2, "resourceVersion", T::String),
    ],
};

pub(crate) static NETWORKING_V1_HTTP_INGRESS_PATH: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.HTTPIngressPath",
    fields: &[
        F::new(1, "path", T::String).omit_zero(),
        F::new(3, "pathType", T::String),
        F::new(2, "backend", T::Message(&NETWORKING_V1_INGRESS_BACKEND)),
    ],
};

pub(crate) static NETWORKING_V1_HTTP_INGRESS_RULE_VALUE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.HTTPIngressRuleValue",
    fields: &[F::new(1, "paths", T::Message(&NETWORKING_V1_HTTP_INGRESS_PATH)).repeated()],
};

pub(crate) static NETWORKING_V1_IP_ADDRESS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IPAddress",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&NETWORKING_V1_IP_ADDRESS_SPEC)),
    ],
};

pub(crate) static NETWORKING_V1_IP_ADDRESS_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IPAddressSpec",
    fields: &[F::new(
        1,
        "parentRef",
        T::Message(&NETWORKING_V1_PARENT_REFERENCE),
    )],
};

pub(crate) static NETWORKING_V1_INGRESS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.Ingress",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&NETWORKING_V1_INGRESS_SPEC)),
        F::new(3, "status", T::Message(&NETWORKING_V1_INGRESS_STATUS)),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_BACKEND: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressBackend",
    fields: &[
        F::new(
            4,
            "service",
            T::Message(&NETWORKING_V1_INGRESS_SERVICE_BACKEND),
        ),
        F::new(
            3,
            "resource",
            T::Message(&CORE_V1_TYPED_LOCAL_OBJECT_REFERENCE),
        ),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_CLASS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressClass",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&NETWORKING_V1_INGRESS_CLASS_SPEC)),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_CLASS_PARAMETERS_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressClassParametersReference",
    fields: &[
        F::new(1, "apiGroup", T::String),
        F::new(2, "kind", T::String),
        F::new(3, "name", T::String),
        F::new(4, "scope", T::String),
        F::new(5, "namespace", T::String),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_CLASS_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressClassSpec",
    fields: &[
        F::new(1, "controller", T::String).omit_zero(),
        F::new(
            2,
            "parameters",
            T::Message(&NETWORKING_V1_INGRESS_CLASS_PARAMETERS_REFERENCE),
        ),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_LOAD_BALANCER_INGRESS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressLoadBalancerIngress",
    fields: &[
        F::new(1, "ip", T::String).omit_zero(),
        F::new(2, "hostname", T::String).omit_zero(),
        F::new(4, "ports", T::Message(&NETWORKING_V1_INGRESS_PORT_STATUS)).repeated(),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_LOAD_BALANCER_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressLoadBalancerStatus",
    fields: &[F::new(
        1,
        "ingress",
        T::Message(&NETWORKING_V1_INGRESS_LOAD_BALANCER_INGRESS),
    )
    .repeated()],
};

pub(crate) static NETWORKING_V1_INGRESS_PORT_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressPortStatus",
    fields: &[
        F::new(1, "port", T::Int32),
        F::new(2, "protocol", T::String),
        F::new(3, "error", T::String),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressRule",
    fields: &[
        F::new(1, "host", T::String).omit_zero(),
        F::new(2, "", T::Inline(&NETWORKING_V1_INGRESS_RULE_VALUE)),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_RULE_VALUE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressRuleValue",
    fields: &[F::new(
        1,
        "http",
        T::Message(&NETWORKING_V1_HTTP_INGRESS_RULE_VALUE),
    )],
};

pub(crate) static NETWORKING_V1_INGRESS_SERVICE_BACKEND: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressServiceBackend",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "port", T::Message(&NETWORKING_V1_SERVICE_BACKEND_PORT)),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressSpec",
    fields: &[
        F::new(4, "ingressClassName", T::String),
        F::new(
            1,
            "defaultBackend",
            T::Message(&NETWORKING_V1_INGRESS_BACKEND),
        ),
        F::new(2, "tls", T::Message(&NETWORKING_V1_INGRESS_TLS)).repeated(),
        F::new(3, "rules", T::Message(&NETWORKING_V1_INGRESS_RULE)).repeated(),
    ],
};

pub(crate) static NETWORKING_V1_INGRESS_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressStatus",
    fields: &[F::new(
        1,
        "loadBalancer",
        T::Message(&NETWORKING_V1_INGRESS_LOAD_BALANCER_STATUS),
    )],
};

pub(crate) static NETWORKING_V1_INGRESS_TLS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IngressTLS",
    fields: &[
        F::new(1, "hosts", T::String).repeated(),
        F::new(2, "secretName", T::String).omit_zero(),
    ],
};

pub(crate) static NETWORKING_V1_IP_BLOCK: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.IPBlock",
    fields: &[
        F::new(1, "cidr", T::String),
        F::new(2, "except", T::String).repeated(),
    ],
};

pub(crate) static NETWORKING_V1_NETWORK_POLICY: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.NetworkPolicy",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&NETWORKING_V1_NETWORK_POLICY_SPEC)),
    ],
};

pub(crate) static NETWORKING_V1_NETWORK_POLICY_EGRESS_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.NetworkPolicyEgressRule",
    fields: &[
        F::new(1, "ports", T::Message(&NETWORKING_V1_NETWORK_POLICY_PORT)).repeated(),
        F::new(2, "to", T::Message(&NETWORKING_V1_NETWORK_POLICY_PEER)).repeated(),
    ],
};

pub(crate) static NETWORKING_V1_NETWORK_POLICY_INGRESS_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.NetworkPolicyIngressRule",
    fields: &[
        F::new(1, "ports", T::Message(&NETWORKING_V1_NETWORK_POLICY_PORT)).repeated(),
        F::new(2, "from", T::Message(&NETWORKING_V1_NETWORK_POLICY_PEER)).repeated(),
    ],
};

pub(crate) static NETWORKING_V1_NETWORK_POLICY_PEER: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.NetworkPolicyPeer",
    fields: &[
        F::new(1, "podSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(2, "namespaceSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(3, "ipBlock", T::Message(&NETWORKING_V1_IP_BLOCK)),
    ],
};

pub(crate) static NETWORKING_V1_NETWORK_POLICY_PORT: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.NetworkPolicyPort",
    fields: &[
        F::new(1, "protocol", T::String),
        F::new(2, "port", T::IntOrString),
        F::new(3, "endPort", T::Int32),
    ],
};

pub(crate) static NETWORKING_V1_NETWORK_POLICY_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.NetworkPolicySpec",
    fields: &[
        F::new(1, "podSelector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(
            2,
            "ingress",
            T::Message(&NETWORKING_V1_NETWORK_POLICY_INGRESS_RULE),
        )
        .repeated(),
        F::new(
            3,
            "egress",
            T::Message(&NETWORKING_V1_NETWORK_POLICY_EGRESS_RULE),
        )
        .repeated(),
        F::new(4, "policyTypes", T::String).repeated(),
    ],
};

pub(crate) static NETWORKING_V1_PARENT_REFERENCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.ParentReference",
    fields: &[
        F::new(1, "group", T::String).omit_zero(),
        F::new(2, "resource", T::String).omit_zero(),
        F::new(3, "namespace", T::String).omit_zero(),
        F::new(4, "name", T::String).omit_zero(),
    ],
};

pub(crate) static NETWORKING_V1_SERVICE_BACKEND_PORT: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.ServiceBackendPort",
    fields: &[
        F::new(1, "name", T::String).omit_zero(),
        F::new(2, "number", T::Int32).omit_zero(),
    ],
};

pub(crate) static NETWORKING_V1_SERVICE_CIDR: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.ServiceCIDR",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&NETWORKING_V1_SERVICE_CIDR_SPEC)),
        F::new(3, "status", T::Message(&NETWORKING_V1_SERVICE_CIDR_STATUS)),
    ],
};

pub(crate) static NETWORKING_V1_SERVICE_CIDR_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.ServiceCIDRSpec",
    fields: &[F::new(1, "cidrs", T::String).repeated()],
};

pub(crate) static NETWORKING_V1_SERVICE_CIDR_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.networking.v1.ServiceCIDRStatus",
    fields: &[F::new(1, "conditions", T::Message(&META_V1_CONDITION)).repeated()],
};

pub(crate) static NODE_V1_OVERHEAD: MessageDesc = MessageDesc {
    name: "k8s.io.api.node.v1.Overhead",
    fields: &[F::new(1, "podFixed", T::Map(&T::Quantity))],
};

pub(crate) static NODE_V1_RUNTIME_CLASS: MessageDesc = MessageDesc {
    name: "k8s.io.api.node.v1.RuntimeClass",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "handler", T::String),
        F::new(3, "overhead", T::Message(&NODE_V1_OVERHEAD)),
        F::new(4, "scheduling", T::Message(&NODE_V1_SCHEDULING)),
    ],
};

pub(crate) static NODE_V1_SCHEDULING: MessageDesc = MessageDesc {
    name: "k8s.io.api.node.v1.Scheduling",
    fields: &[
        F::new(1, "nodeSelector", T::Map(&T::String)),
        F::new(2, "tolerations", T::Message(&CORE_V1_TOLERATION)).repeated(),
    ],
};

pub(crate) static POLICY_V1_EVICTION: MessageDesc = MessageDesc {
    name: "k8s.io.api.policy.v1.Eviction",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "deleteOptions", T::Message(&META_V1_DELETE_OPTIONS)),
    ],
};

pub(crate) static POLICY_V1_POD_DISRUPTION_BUDGET: MessageDesc = MessageDesc {
    name: "k8s.io.api.policy.v1.PodDisruptionBudget",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&POLICY_V1_POD_DISRUPTION_BUDGET_SPEC)),
        F::new(
            3,
            "status",
            T::Message(&POLICY_V1_POD_DISRUPTION_BUDGET_STATUS),
        ),
    ],
};

pub(crate) static POLICY_V1_POD_DISRUPTION_BUDGET_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.policy.v1.PodDisruptionBudgetSpec",
    fields: &[
        F::new(1, "minAvailable", T::IntOrString),
        F::new(2, "selector", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(3, "maxUnavailable", T::IntOrString),
        F::new(4, "unhealthyPodEvictionPolicy", T::String),
    ],
};

pub(crate) static POLICY_V1_POD_DISRUPTION_BUDGET_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.policy.v1.PodDisruptionBudgetStatus",
    fields: &[
        F::new(1, "observedGeneration", T::Int64).omit_zero(),
        F::new(2, "disruptedPods", T::Map(&T::Time)),
        F::new(3, "disruptionsAllowed", T::Int32),
        F::new(4, "currentHealthy", T::Int32),
        F::new(5, "desiredHealthy", T::Int32),
        F::new(6, "expectedPods", T::Int32),
        F::new(7, "conditions", T::Message(&META_V1_CONDITION)).repeated(),
    ],
};

pub(crate) static RBAC_V1_AGGREGATION_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.AggregationRule",
    fields: &[F::new(
        1,
        "clusterRoleSelectors",
        T::Message(&META_V1_LABEL_SELECTOR),
    )
    .repeated()],
};

pub(crate) static RBAC_V1_CLUSTER_ROLE: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.ClusterRole",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "rules", T::Message(&RBAC_V1_POLICY_RULE)).repeated(),
        F::new(3, "aggregationRule", T::Message(&RBAC_V1_AGGREGATION_RULE)),
    ],
};

pub(crate) static RBAC_V1_CLUSTER_ROLE_BINDING: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.ClusterRoleBinding",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "subjects", T::Message(&RBAC_V1_SUBJECT)).repeated(),
        F::new(3, "roleRef", T::Message(&RBAC_V1_ROLE_REF)),
    ],
};

pub(crate) static RBAC_V1_POLICY_RULE: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.PolicyRule",
    fields: &[
        F::new(1, "verbs", T::String).repeated(),
        F::new(2, "apiGroups", T::String).repeated(),
        F::new(3, "resources", T::String).repeated(),
        F::new(4, "resourceNames", T::String).repeated(),
        F::new(5, "nonResourceURLs", T::String).repeated(),
    ],
};

pub(crate) static RBAC_V1_ROLE: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.Role",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "rules", T::Message(&RBAC_V1_POLICY_RULE)).repeated(),
    ],
};

pub(crate) static RBAC_V1_ROLE_BINDING: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.RoleBinding",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "subjects", T::Message(&RBAC_V1_SUBJECT)).repeated(),
        F::new(3, "roleRef", T::Message(&RBAC_V1_ROLE_REF)),
    ],
};

pub(crate) static RBAC_V1_ROLE_REF: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.RoleRef",
    fields: &[
        F::new(1, "apiGroup", T::String),
        F::new(2, "kind", T::String),
        F::new(3, "name", T::String),
    ],
};

pub(crate) static RBAC_V1_SUBJECT: MessageDesc = MessageDesc {
    name: "k8s.io.api.rbac.v1.Subject",
    fields: &[
        F::new(1, "kind", T::String),
        F::new(2, "apiGroup", T::String).omit_zero(),
        F::new(3, "name", T::String),
        F::new(4, "namespace", T::String).omit_zero(),
    ],
};

pub(crate) static SCHEDULING_V1_PRIORITY_CLASS: MessageDesc = MessageDesc {
    name: "k8s.io.api.scheduling.v1.PriorityClass",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "value", T::Int32),
        F::new(3, "globalDefault", T::Bool).omit_zero(),
        F::new(4, "description", T::String).omit_zero(),
        F::new(5, "preemptionPolicy", T::String),
    ],
};

pub(crate) static STORAGE_V1_CSI_DRIVER: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.CSIDriver",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&STORAGE_V1_CSI_DRIVER_SPEC)),
    ],
};

pub(crate) static STORAGE_V1_CSI_DRIVER_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.CSIDriverSpec",
    fields: &[
        F::new(1, "attachRequired", T::Bool),
        F::new(2, "podInfoOnMount", T::Bool),
        F::new(3, "volumeLifecycleModes", T::String).repeated(),
        F::new(4, "storageCapacity", T::Bool),
        F::new(5, "fsGroupPolicy", T::String),
        F::new(6, "tokenRequests", T::Message(&STORAGE_V1_TOKEN_REQUEST)).repeated(),
        F::new(7, "requiresRepublish", T::Bool),
        F::new(8, "seLinuxMount", T::Bool),
        F::new(9, "nodeAllocatableUpdatePeriodSeconds", T::Int64),
        F::new(10, "serviceAccountTokenInSecrets", T::Bool),
    ],
};

pub(crate) static STORAGE_V1_CSI_NODE: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.CSINode",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&STORAGE_V1_CSI_NODE_SPEC)),
    ],
};

pub(crate) static STORAGE_V1_CSI_NODE_DRIVER: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.CSINodeDriver",
    fields: &[
        F::new(1, "name", T::String),
        F::new(2, "nodeID", T::String),
        F::new(3, "topologyKeys", T::String).repeated(),
        F::new(
            4,
            "allocatable",
            T::Message(&STORAGE_V1_VOLUME_NODE_RESOURCES),
        ),
    ],
};

pub(crate) static STORAGE_V1_CSI_NODE_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.CSINodeSpec",
    fields: &[F::new(1, "drivers", T::Message(&STORAGE_V1_CSI_NODE_DRIVER)).repeated()],
};

pub(crate) static STORAGE_V1_CSI_STORAGE_CAPACITY: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.CSIStorageCapacity",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "nodeTopology", T::Message(&META_V1_LABEL_SELECTOR)),
        F::new(3, "storageClassName", T::String),
        F::new(4, "capacity", T::Quantity),
        F::new(5, "maximumVolumeSize", T::Quantity),
    ],
};

pub(crate) static STORAGE_V1_STORAGE_CLASS: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.StorageClass",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "provisioner", T::String),
        F::new(3, "parameters", T::Map(&T::String)),
        F::new(4, "reclaimPolicy", T::String),
        F::new(5, "mountOptions", T::String).repeated(),
        F::new(6, "allowVolumeExpansion", T::Bool),
        F::new(7, "volumeBindingMode", T::String),
        F::new(
            8,
            "allowedTopologies",
            T::Message(&CORE_V1_TOPOLOGY_SELECTOR_TERM),
        )
        .repeated(),
    ],
};

pub(crate) static STORAGE_V1_TOKEN_REQUEST: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.TokenRequest",
    fields: &[
        F::new(1, "audience", T::String),
        F::new(2, "expirationSeconds", T::Int64),
    ],
};

pub(crate) static STORAGE_V1_VOLUME_ATTACHMENT: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.VolumeAttachment",
    fields: &[
        F::new(1, "metadata", T::Message(&META_V1_OBJECT_META)),
        F::new(2, "spec", T::Message(&STORAGE_V1_VOLUME_ATTACHMENT_SPEC)),
        F::new(
            3,
            "status",
            T::Message(&STORAGE_V1_VOLUME_ATTACHMENT_STATUS),
        ),
    ],
};

pub(crate) static STORAGE_V1_VOLUME_ATTACHMENT_SOURCE: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.VolumeAttachmentSource",
    fields: &[
        F::new(1, "persistentVolumeName", T::String),
        F::new(
            2,
            "inlineVolumeSpec",
            T::Message(&CORE_V1_PERSISTENT_VOLUME_SPEC),
        ),
    ],
};

pub(crate) static STORAGE_V1_VOLUME_ATTACHMENT_SPEC: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.VolumeAttachmentSpec",
    fields: &[
        F::new(1, "attacher", T::String),
        F::new(
            2,
            "source",
            T::Message(&STORAGE_V1_VOLUME_ATTACHMENT_SOURCE),
        ),
        F::new(3, "nodeName", T::String),
    ],
};

pub(crate) static STORAGE_V1_VOLUME_ATTACHMENT_STATUS: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.VolumeAttachmentStatus",
    fields: &[
        F::new(1, "attached", T::Bool),
        F::new(2, "attachmentMetadata", T::Map(&T::String)),
        F::new(3, "attachError", T::Message(&STORAGE_V1_VOLUME_ERROR)),
        F::new(4, "detachError", T::Message(&STORAGE_V1_VOLUME_ERROR)),
    ],
};

pub(crate) static STORAGE_V1_VOLUME_ERROR: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.VolumeError",
    fields: &[
        F::new(1, "time", T::Time),
        F::new(2, "message", T::String).omit_zero(),
        F::new(3, "errorCode", T::Int32),
    ],
};

pub(crate) static STORAGE_V1_VOLUME_NODE_RESOURCES: MessageDesc = MessageDesc {
    name: "k8s.io.api.storage.v1.VolumeNodeResources",
    fields: &[F::new(1, "count", T::Int32)],
};

/// The supported top-level kinds: (apiVersion, kind, message).
pub(crate) static ROOTS: &[(&str, &str, &MessageDesc)] = &[
    ("v1", "Namespace", &CORE_V1_NAMESPACE),
    ("v1", "ConfigMap", &CORE_V1_CONFIG_MAP),
    ("v1", "Secret", &CORE_V1_SECRET),
    ("v1", "Service", &CORE_V1_SERVICE),
    ("v1", "ServiceAccount", &CORE_V1_SERVICE_ACCOUNT),
    ("v1", "ResourceQuota", &CORE_V1_RESOURCE_QUOTA),
    ("v1", "Pod", &CORE_V1_POD),
    ("v1", "PodTemplate", &CORE_V1_POD_TEMPLATE),
    (
        "v1",
        "ReplicationController",
        &CORE_V1_REPLICATION_CONTROLLER,
    ),
    ("v1", "Endpoints", &CORE_V1_ENDPOINTS),
    ("v1", "LimitRange", &CORE_V1_LIMIT_RANGE),
    ("v1", "PersistentVolume", &CORE_V1_PERSISTENT_VOLUME),
    ("v1", "Node", &CORE_V1_NODE),
    ("apps/v1", "Deployment", &APPS_V1_DEPLOYMENT),
    ("apps/v1", "ReplicaSet", &APPS_V1_REPLICA_SET),
    ("apps/v1", "StatefulSet", &APPS_V1_STATEFUL_SET),
    ("apps/v1", "DaemonSet", &APPS_V1_DAEMON_SET),
    ("batch/v1", "Job", &BATCH_V1_JOB),
    ("batch/v1", "CronJob", &BATCH_V1_CRON_JOB),
    ("rbac.authorization.k8s.io/v1", "Role", &RBAC_V1_ROLE),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        &RBAC_V1_CLUSTER_ROLE,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        &RBAC_V1_ROLE_BINDING,
    ),
    (
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        &RBAC_V1_CLUSTER_ROLE_BINDING,
    ),
    (
        "policy/v1",
        "PodDisruptionBudget",
        &POLICY_V1_POD_DISRUPTION_BUDGET,
    ),
    ("policy/v1", "Eviction", &POLICY_V1_EVICTION),
    (
        "scheduling.k8s.io/v1",
        "PriorityClass",
        &SCHEDULING_V1_PRIORITY_CLASS,
    ),
    ("networking.k8s.io/v1", "Ingress", &NETWORKING_V1_INGRESS),
    (
        "autoscaling/v1",
        "HorizontalPodAutoscaler",
        &AUTOSCALING_V1_HORIZONTAL_POD_AUTOSCALER,
    ),
    (
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        &AUTOSCALING_V2_HORIZONTAL_POD_AUTOSCALER,
    ),
    (
        "networking.k8s.io/v1",
        "IngressClass",
        &NETWORKING_V1_INGRESS_CLASS,
    ),
    (
        "networking.k8s.io/v1",
        "NetworkPolicy",
        &NETWORKING_V1_NETWORK_POLICY,
    ),
    (
        "networking.k8s.io/v1",
        "IPAddress",
        &NETWORKING_V1_IP_ADDRESS,
    ),
    (
        "networking.k8s.io/v1",
        "ServiceCIDR",
        &NETWORKING_V1_SERVICE_CIDR,
    ),
    (
        "storage.k8s.io/v1",
        "CSIStorageCapacity",
        &STORAGE_V1_CSI_STORAGE_CAPACITY,
    ),
    (
        "storage.k8s.io/v1",
        "StorageClass",
        &STORAGE_V1_STORAGE_CLASS,
    ),
    ("storage.k8s.io/v1", "CSIDriver", &STORAGE_V1_CSI_DRIVER),
    ("storage.k8s.io/v1", "CSINode", &STORAGE_V1_CSI_NODE),
    (
        "storage.k8s.io/v1",
        "VolumeAttachment",
        &STORAGE_V1_VOLUME_ATTACHMENT,
    ),
    (
        "discovery.k8s.io/v1",
        "EndpointSlice",
        &DISCOVERY_V1_ENDPOINT_SLICE,
    ),
    ("node.k8s.io/v1", "RuntimeClass", &NODE_V1_RUNTIME_CLASS),
    (
        "apps/v1",
        "ControllerRevision",
        &APPS_V1_CONTROLLER_REVISION,
    ),
    ("autoscaling/v1", "Scale", &AUTOSCALING_V1_SCALE),
    ("meta.k8s.io/v1", "DeleteOptions", &META_V1_DELETE_OPTIONS),
    (
        "authentication.k8s.io/v1",
        "TokenRequest",
        &AUTHENTICATION_V1_TOKEN_REQUEST,
    ),
    (
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        &AUTHENTICATION_V1_SELF_SUBJECT_REVIEW,
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &AUTHORIZATION_V1_SELF_SUBJECT_ACCESS_REVIEW,
    ),
    (
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        &AUTHORIZATION_V1_SELF_SUBJECT_RULES_REVIEW,
    ),
    (
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        &CERTIFICATES_V1_CERTIFICATE_SIGNING_REQUEST,
    ),
];
