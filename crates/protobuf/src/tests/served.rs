//! Every kind the Flotilla servers serve decodes from protobuf: the list comes from
//! `flotilla_kinds` (plus the few kinds flotilla-apiserver adds, which cannot be read from here),
//! and each kind has a representative object here, built with k8s-pb, encoded with prost and
//! compared with the JSON k8s-openapi writes for the same object. A served kind without a
//! decoder, or without a sample here, fails the test.

use std::collections::BTreeSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as oa_apiext;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as oa_apireg;
use k8s_pb::api::admissionregistration::v1 as admission;
use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use k8s_pb::api::autoscaling::{v1 as asv1, v2 as asv2};
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::discovery::v1 as discovery;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::node::v1 as node;
use k8s_pb::api::storage::v1 as storage;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as apireg;

use super::*;

/// Kinds flotilla-apiserver serves on top of the `flotilla_kinds` registrations: `pods/binding`
/// (binding.rs), `serviceaccounts/token` (serviceaccount/mod.rs), the review resources
/// (`reviews::review_resources`) and the DeleteOptions body of every delete. flotilla-apiserver
/// depends on this crate, so it cannot be a dev-dependency here; keep this list in step.
const APISERVER_KINDS: &[(&str, &str)] = &[
    ("v1", "Binding"),
    ("authentication.k8s.io/v1", "TokenRequest"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
    ("authentication.k8s.io/v1", "TokenReview"),
    ("authentication.k8s.io/v1", "SelfSubjectReview"),
    ("meta.k8s.io/v1", "DeleteOptions"),
];

/// (apiVersion, kind) of every served kind: each registration of `flotilla_kinds`, the kinds of
/// their subresources (`scale` is autoscaling/v1 Scale), and [`APISERVER_KINDS`].
fn served_kinds() -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for def in flotilla_kinds::builtin_resources()
        .into_iter()
        .chain(flotilla_kinds::extension_resources())
        .chain(flotilla_kinds::certificate_resources())
    {
        let api_version = if def.group.is_empty() {
            def.version.clone()
        } else {
            format!("{}/{}", def.group, def.version)
        };
        out.insert((api_version, def.kind.clone()));
        if def.scale.is_some() {
            out.insert(("autoscaling/v1".to_owned(), "Scale".to_owned()));
        }
        for sub in &def.custom_subresources {
            out.insert((sub.kind.api_version(), sub.kind.kind.clone()));
        }
    }
    for (api_version, kind) in APISERVER_KINDS {
        out.insert(((*api_version).to_owned(), (*kind).to_owned()));
    }
    out
}

/// One served kind's sample: its protobuf body and the JSON k8s-openapi writes for it.
struct Sample {
    body: Vec<u8>,
    openapi: Value,
}

/// `pb` in the `k8s\0` envelope, and `json` (the same object, without apiVersion and kind)
/// parsed as the k8s-openapi type `O` and serialized again.
fn sample<P: Message, O: DeserializeOwned + Serialize>(
    api_version: &str,
    kind: &str,
    pb: P,
    json: Value,
) -> Sample {
    let mut json = json;
    if let Value::Object(map) = &mut json {
        map.insert("apiVersion".to_owned(), json!(api_version));
        map.insert("kind".to_owned(), json!(kind));
    }
    let typed: O = serde_json::from_value(json)
        .unwrap_or_else(|e| panic!("{api_version} {kind}: sample JSON does not parse: {e}"));
    Sample {
        body: envelope(api_version, kind, pb.encode_to_vec()),
        openapi: serde_json::to_value(&typed).unwrap(),
    }
}

/// k8s-openapi writes `apiVersion` and `kind` into each of a StatefulSet's
/// volumeClaimTemplates (its PersistentVolumeClaim type always does); Go's JSON has neither.
fn without_template_type_meta(mut sample: Sample) -> Sample {
    if let Some(Value::Array(templates)) = sample.openapi.pointer_mut("/spec/volumeClaimTemplates")
    {
        for template in templates.iter_mut().filter_map(Value::as_object_mut) {
            template.remove("apiVersion");
            template.remove("kind");
        }
    }
    sample
}

fn meta_ns(name: &str, namespace: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: s(name),
        namespace: s(namespace),
        labels: smap(&[("app", "web")]),
        ..Default::default()
    })
}

fn meta_ns_json(name: &str, namespace: &str) -> Value {
    json!({"name": name, "namespace": namespace, "labels": {"app": "web"}})
}

fn selector() -> Option<meta::LabelSelector> {
    Some(meta::LabelSelector {
        match_labels: smap(&[("app", "web")]),
        match_expressions: vec![meta::LabelSelectorRequirement {
            key: s("tier"),
            operator: s("In"),
            values: strings(&["front"]),
        }],
    })
}

fn selector_json() -> Value {
    json!({"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]})
}

fn pod_template() -> Option<core::PodTemplateSpec> {
    Some(core::PodTemplateSpec {
        metadata: Some(meta::ObjectMeta {
            labels: smap(&[("app", "web")]),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                ports: vec![core::ContainerPort {
                    container_port: Some(8080),
                    protocol: s("TCP"),
                    ..Default::default()
                }],
                ..container("web", "nginx:1.27")
            }],
            restart_policy: s("Always"),
            ..Default::default()
        }),
    })
}

fn pod_template_json() -> Value {
    json!({"metadata": {"labels": {"app": "web"}},
           "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                    "ports": [{"containerPort": 8080, "protocol": "TCP"}]}],
                    "restartPolicy": "Always"}})
}

fn object_ref(kind: &str, name: &str) -> Option<core::ObjectReference> {
    Some(core::ObjectReference {
        kind: s(kind),
        namespace: s("prod"),
        name: s(name),
        uid: s("0b5e8f4a"),
        api_version: s("v1"),
        ..Default::default()
    })
}

fn object_ref_json(kind: &str, name: &str) -> Value {
    json!({"kind": kind, "namespace": "prod", "name": name, "uid": "0b5e8f4a", "apiVersion": "v1"})
}

/// 2024-01-02T03:04:05.123456789Z: Go's MicroTime keeps the nanos on the wire and writes
/// microseconds in JSON.
fn micro_time() -> Option<meta::MicroTime> {
    Some(meta::MicroTime {
        seconds: Some(T0),
        nanos: Some(123_456_789),
    })
}

const MICRO_T0: &str = "2024-01-02T03:04:05.123456Z";

fn webhook_client_config() -> Option<admission::WebhookClientConfig> {
    Some(admission::WebhookClientConfig {
        url: None,
        service: Some(admission::ServiceReference {
            namespace: s("hooks"),
            name: s("policy"),
            path: s("/validate"),
            port: Some(443),
        }),
        ca_bundle: Some(b"CA".to_vec()),
    })
}

fn webhook_rules() -> Vec<admission::RuleWithOperations> {
    vec![admission::RuleWithOperations {
        operations: strings(&["CREATE", "UPDATE"]),
        rule: Some(admission::Rule {
            api_groups: strings(&["apps"]),
            api_versions: strings(&["v1"]),
            resources: strings(&["deployments"]),
            scope: s("Namespaced"),
        }),
    }]
}

/// The common part of a Mutating/ValidatingWebhook; the rule is inlined in JSON.
fn webhook_json() -> Value {
    json!({"name": "policy.example.com",
           "clientConfig": {"service": {"namespace": "hooks", "name": "policy", "path": "/validate", "port": 443},
                            "caBundle": "Q0E="},
           "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"],
                      "resources": ["deployments"], "scope": "Namespaced"}],
           "failurePolicy": "Fail", "matchPolicy": "Equivalent",
           "namespaceSelector": {"matchLabels": {"app": "web"},
                                 "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]},
           "sideEffects": "None", "timeoutSeconds": 5, "admissionReviewVersions": ["v1"],
           "matchConditions": [{"name": "not-kube-system",
                                "expression": "request.namespace != 'kube-system'"}]})
}

fn match_conditions() -> Vec<admission::MatchCondition> {
    vec![admission::MatchCondition {
        name: s("not-kube-system"),
        expression: s("request.namespace != 'kube-system'"),
    }]
}

fn schema(ty: &str) -> apiext::JsonSchemaProps {
    apiext::JsonSchemaProps {
        r#type: s(ty),
        ..Default::default()
    }
}

fn raw_json(v: &str) -> apiext::Json {
    apiext::Json {
        raw: Some(v.as_bytes().to_vec()),
    }
}

/// A structural schema that uses every JSON-schema union and raw-JSON field.
fn crd_schema() -> apiext::JsonSchemaProps {
    let replicas = apiext::JsonSchemaProps {
        minimum: Some(0.5),
        maximum: Some(99.5),
        default: Some(raw_json("3")),
        ..schema("number")
    };
    let mode = apiext::JsonSchemaProps {
        r#enum: vec![raw_json(r#""fast""#), raw_json(r#""safe""#)],
        pattern: s("^[a-z]+$"),
        ..schema("string")
    };
    let tags = apiext::JsonSchemaProps {
        items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
            schema: Some(Box::new(schema("string"))),
            j_son_schemas: Vec::new(),
        })),
        x_kubernetes_list_type: s("set"),
        max_items: Some(10),
        ..schema("array")
    };
    let tuple = apiext::JsonSchemaProps {
        items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
            schema: None,
            j_son_schemas: vec![schema("string"), schema("integer")],
        })),
        ..schema("array")
    };
    let labels = apiext::JsonSchemaProps {
        additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
            allows: Some(true),
            schema: Some(Box::new(schema("string"))),
        })),
        ..schema("object")
    };
    let closed = apiext::JsonSchemaProps {
        additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
            allows: Some(false),
            schema: None,
        })),
        dependencies: [
            (
                "a".to_owned(),
                apiext::JsonSchemaPropsOrStringArray {
                    schema: None,
                    property: strings(&["b"]),
                },
            ),
            (
                "c".to_owned(),
                apiext::JsonSchemaPropsOrStringArray {
                    schema: Some(schema("object")),
                    property: Vec::new(),
                },
            ),
        ]
        .into(),
        ..schema("object")
    };
    let spec = apiext::JsonSchemaProps {
        properties: [
            ("replicas".to_owned(), replicas),
            ("mode".to_owned(), mode),
            ("tags".to_owned(), tags),
            ("tuple".to_owned(), tuple),
            ("labels".to_owned(), labels),
            ("closed".to_owned(), closed),
            (
                "anything".to_owned(),
                apiext::JsonSchemaProps {
                    x_kubernetes_preserve_unknown_fields: Some(true),
                    x_kubernetes_int_or_string: Some(false),
                    ..Default::default()
                },
            ),
        ]
        .into(),
        required: strings(&["replicas"]),
        x_kubernetes_validations: vec![apiext::ValidationRule {
            rule: s("self.replicas >= 1.0"),
            message: s("at least one"),
            reason: s("FieldValueInvalid"),
            ..Default::default()
        }],
        ..schema("object")
    };
    apiext::JsonSchemaProps {
        description: s("A widget."),
        properties: [("spec".to_owned(), spec)].into(),
        ..schema("object")
    }
}

fn crd_schema_json() -> Value {
    json!({"description": "A widget.", "type": "object", "properties": {"spec": {
        "type": "object", "required": ["replicas"],
        "x-kubernetes-validations": [{"rule": "self.replicas >= 1.0", "message": "at least one",
                                      "reason": "FieldValueInvalid"}],
        "properties": {
            "replicas": {"type": "number", "minimum": 0.5, "maximum": 99.5, "default": 3},
            "mode": {"type": "string", "enum": ["fast", "safe"], "pattern": "^[a-z]+$"},
            "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set",
                     "maxItems": 10},
            "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": false,
                       "dependencies": {"a": ["b"], "c": {"type": "object"}}},
            // x-kubernetes-int-or-string is a non-pointer omitempty bool: false is left out.
            "anything": {"x-kubernetes-preserve-unknown-fields": true}}}}})
}

/// The sample of (api_version, kind), `None` for a kind without one.
fn served_sample(api_version: &str, kind: &str) -> Option<Sample> {
    use k8s_openapi::api::{
        admissionregistration::v1 as oa_admission, authentication::v1 as oa_authn,
        authorization::v1 as oa_authz, coordination::v1 as oa_coordination,
        discovery::v1 as oa_discovery, events::v1 as oa_events, node::v1 as oa_node,
        storage::v1 as oa_storage,
    };
    use k8s_openapi::apimachinery::pkg::apis::meta::v1 as oa_meta;
    let (av, k) = (api_version, kind);
    Some(match (api_version, kind) {
        // core/v1
        ("v1", "Namespace") => sample::<_, oa::core::v1::Namespace>(
            av,
            k,
            core::Namespace {
                metadata: Some(meta::ObjectMeta {
                    name: s("prod"),
                    labels: smap(&[("team", "web")]),
                    ..Default::default()
                }),
                spec: Some(core::NamespaceSpec {
                    finalizers: strings(&["kubernetes"]),
                }),
                status: Some(core::NamespaceStatus {
                    phase: s("Active"),
                    conditions: Vec::new(),
                }),
            },
            json!({"metadata": {"name": "prod", "labels": {"team": "web"}},
                   "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}),
        ),
        ("v1", "ConfigMap") => sample::<_, oa::core::v1::ConfigMap>(
            av,
            k,
            core::ConfigMap {
                metadata: meta_ns("settings", "prod"),
                immutable: Some(true),
                data: smap(&[("mode", "fast")]),
                binary_data: [("blob".to_owned(), vec![0u8, 1, 2])].into(),
            },
            json!({"metadata": meta_ns_json("settings", "prod"), "immutable": true,
                   "data": {"mode": "fast"}, "binaryData": {"blob": "AAEC"}}),
        ),
        ("v1", "Secret") => sample::<_, oa::core::v1::Secret>(
            av,
            k,
            core::Secret {
                metadata: meta_ns("creds", "prod"),
                immutable: None,
                data: [("password".to_owned(), b"hunter2".to_vec())].into(),
                string_data: smap(&[("user", "admin")]),
                r#type: s("Opaque"),
            },
            json!({"metadata": meta_ns_json("creds", "prod"), "data": {"password": "aHVudGVyMg=="},
                   "stringData": {"user": "admin"}, "type": "Opaque"}),
        ),
        ("v1", "Service") => sample::<_, oa::core::v1::Service>(
            av,
            k,
            core::Service {
                metadata: meta_ns("web", "prod"),
                spec: Some(core::ServiceSpec {
                    ports: vec![core::ServicePort {
                        name: s("http"),
                        protocol: s("TCP"),
                        port: Some(80),
                        target_port: int(8080),
                        ..Default::default()
                    }],
                    selector: smap(&[("app", "web")]),
                    cluster_ip: s("10.0.0.10"),
                    r#type: s("ClusterIP"),
                    ..Default::default()
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("web", "prod"),
                   "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080}],
                            "selector": {"app": "web"}, "clusterIP": "10.0.0.10", "type": "ClusterIP"}}),
        ),
        ("v1", "ServiceAccount") => sample::<_, oa::core::v1::ServiceAccount>(
            av,
            k,
            core::ServiceAccount {
                metadata: meta_ns("builder", "prod"),
                secrets: vec![core::ObjectReference {
                    name: s("builder-token"),
                    ..Default::default()
                }],
                image_pull_secrets: vec![core::LocalObjectReference {
                    name: s("registry"),
                }],
                automount_service_account_token: Some(false),
            },
            json!({"metadata": meta_ns_json("builder", "prod"), "secrets": [{"name": "builder-token"}],
                   "imagePullSecrets": [{"name": "registry"}], "automountServiceAccountToken": false}),
        ),
        ("v1", "PersistentVolumeClaim") => sample::<_, oa::core::v1::PersistentVolumeClaim>(
            av,
            k,
            core::PersistentVolumeClaim {
                metadata: meta_ns("data", "prod"),
                spec: Some(core::PersistentVolumeClaimSpec {
                    access_modes: strings(&["ReadWriteOnce"]),
                    selector: selector(),
                    resources: Some(core::VolumeResourceRequirements {
                        limits: qmap(&[("storage", "2Gi")]),
                        requests: qmap(&[("storage", "1Gi")]),
                    }),
                    volume_name: s("pv-1"),
                    storage_class_name: s("standard"),
                    volume_mode: s("Filesystem"),
                    ..Default::default()
                }),
                status: Some(core::PersistentVolumeClaimStatus {
                    phase: s("Bound"),
                    access_modes: strings(&["ReadWriteOnce"]),
                    capacity: qmap(&[("storage", "1Gi")]),
                    ..Default::default()
                }),
            },
            json!({"metadata": meta_ns_json("data", "prod"),
                   "spec": {"accessModes": ["ReadWriteOnce"], "selector": selector_json(),
                            "resources": {"limits": {"storage": "2Gi"}, "requests": {"storage": "1Gi"}},
                            "volumeName": "pv-1", "storageClassName": "standard", "volumeMode": "Filesystem"},
                   "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                              "capacity": {"storage": "1Gi"}}}),
        ),
        ("v1", "Event") => sample::<_, oa::core::v1::Event>(
            av,
            k,
            core::Event {
                metadata: meta_ns("web.17a", "prod"),
                involved_object: object_ref("Pod", "web-0"),
                reason: s("Started"),
                message: s("Started container web"),
                source: Some(core::EventSource {
                    component: s("kubelet"),
                    host: s("node-1"),
                }),
                first_timestamp: time(T0),
                last_timestamp: time(T0 + 60),
                count: Some(2),
                r#type: s("Normal"),
                event_time: micro_time(),
                series: Some(core::EventSeries {
                    count: Some(2),
                    last_observed_time: micro_time(),
                }),
                action: s("Start"),
                related: None,
                reporting_component: s("kubelet"),
                reporting_instance: s("node-1"),
            },
            json!({"metadata": meta_ns_json("web.17a", "prod"), "involvedObject": object_ref_json("Pod", "web-0"),
                   "reason": "Started", "message": "Started container web",
                   "source": {"component": "kubelet", "host": "node-1"},
                   "firstTimestamp": "2024-01-02T03:04:05Z", "lastTimestamp": "2024-01-02T03:05:05Z",
                   "count": 2, "type": "Normal", "eventTime": MICRO_T0,
                   "series": {"count": 2, "lastObservedTime": MICRO_T0}, "action": "Start",
                   "reportingComponent": "kubelet", "reportingInstance": "node-1"}),
        ),
        ("v1", "Pod") => sample::<_, oa::core::v1::Pod>(
            av,
            k,
            core::Pod {
                metadata: meta_ns("web-0", "prod"),
                spec: pod_template()
                    .and_then(|t| t.spec)
                    .map(|spec| core::PodSpec {
                        node_selector: smap(&[("disk", "ssd")]),
                        ..spec
                    }),
                status: Some(core::PodStatus {
                    phase: s("Pending"),
                    ..Default::default()
                }),
            },
            json!({"metadata": meta_ns_json("web-0", "prod"),
                   "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                            "ports": [{"containerPort": 8080, "protocol": "TCP"}]}],
                            "restartPolicy": "Always", "nodeSelector": {"disk": "ssd"}},
                   "status": {"phase": "Pending"}}),
        ),
        ("v1", "PodTemplate") => sample::<_, oa::core::v1::PodTemplate>(
            av,
            k,
            core::PodTemplate {
                metadata: meta_ns("web", "prod"),
                template: pod_template(),
            },
            json!({"metadata": meta_ns_json("web", "prod"), "template": pod_template_json()}),
        ),
        ("v1", "ReplicationController") => sample::<_, oa::core::v1::ReplicationController>(
            av,
            k,
            core::ReplicationController {
                metadata: meta_ns("web", "prod"),
                spec: Some(core::ReplicationControllerSpec {
                    replicas: Some(2),
                    min_ready_seconds: Some(5),
                    selector: smap(&[("app", "web")]),
                    template: pod_template(),
                }),
                status: Some(core::ReplicationControllerStatus {
                    replicas: Some(2),
                    ready_replicas: Some(1),
                    ..Default::default()
                }),
            },
            json!({"metadata": meta_ns_json("web", "prod"),
                   "spec": {"replicas": 2, "minReadySeconds": 5, "selector": {"app": "web"},
                            "template": pod_template_json()},
                   "status": {"replicas": 2, "readyReplicas": 1}}),
        ),
        ("v1", "Endpoints") => sample::<_, oa::core::v1::Endpoints>(
            av,
            k,
            core::Endpoints {
                metadata: meta_ns("web", "prod"),
                subsets: vec![core::EndpointSubset {
                    addresses: vec![core::EndpointAddress {
                        ip: s("10.1.0.5"),
                        node_name: s("node-1"),
                        target_ref: object_ref("Pod", "web-0"),
                        ..Default::default()
                    }],
                    not_ready_addresses: Vec::new(),
                    ports: vec![core::EndpointPort {
                        name: s("http"),
                        port: Some(8080),
                        protocol: s("TCP"),
                        app_protocol: None,
                    }],
                }],
            },
            json!({"metadata": meta_ns_json("web", "prod"),
                   "subsets": [{"addresses": [{"ip": "10.1.0.5", "nodeName": "node-1",
                                               "targetRef": object_ref_json("Pod", "web-0")}],
                                "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]}),
        ),
        ("v1", "LimitRange") => sample::<_, oa::core::v1::LimitRange>(
            av,
            k,
            core::LimitRange {
                metadata: meta_ns("limits", "prod"),
                spec: Some(core::LimitRangeSpec {
                    limits: vec![core::LimitRangeItem {
                        r#type: s("Container"),
                        max: qmap(&[("cpu", "2")]),
                        default: qmap(&[("cpu", "500m")]),
                        default_request: qmap(&[("memory", "128Mi")]),
                        ..Default::default()
                    }],
                }),
            },
            json!({"metadata": meta_ns_json("limits", "prod"),
                   "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"},
                                        "default": {"cpu": "500m"}, "defaultRequest": {"memory": "128Mi"}}]}}),
        ),
        ("v1", "ResourceQuota") => sample::<_, oa::core::v1::ResourceQuota>(
            av,
            k,
            core::ResourceQuota {
                metadata: meta_ns("quota", "prod"),
                spec: Some(core::ResourceQuotaSpec {
                    hard: qmap(&[("pods", "10"), ("requests.cpu", "4")]),
                    scopes: strings(&["NotTerminating"]),
                    scope_selector: None,
                }),
                status: Some(core::ResourceQuotaStatus {
                    hard: qmap(&[("pods", "10")]),
                    used: qmap(&[("pods", "3")]),
                }),
            },
            json!({"metadata": meta_ns_json("quota", "prod"),
                   "spec": {"hard": {"pods": "10", "requests.cpu": "4"}, "scopes": ["NotTerminating"]},
                   "status": {"hard": {"pods": "10"}, "used": {"pods": "3"}}}),
        ),
        ("v1", "PersistentVolume") => sample::<_, oa::core::v1::PersistentVolume>(
            av,
            k,
            core::PersistentVolume {
                metadata: object_meta("pv-1"),
                spec: Some(core::PersistentVolumeSpec {
                    capacity: qmap(&[("storage", "1Gi")]),
                    persistent_volume_source: Some(core::PersistentVolumeSource {
                        host_path: Some(core::HostPathVolumeSource {
                            path: s("/data"),
                            r#type: s("DirectoryOrCreate"),
                        }),
                        ..Default::default()
                    }),
                    access_modes: strings(&["ReadWriteOnce"]),
                    claim_ref: object_ref("PersistentVolumeClaim", "data"),
                    persistent_volume_reclaim_policy: s("Retain"),
                    storage_class_name: s("standard"),
                    ..Default::default()
                }),
                status: Some(core::PersistentVolumeStatus {
                    phase: s("Bound"),
                    ..Default::default()
                }),
            },
            json!({"metadata": {"name": "pv-1"},
                   "spec": {"capacity": {"storage": "1Gi"},
                            "hostPath": {"path": "/data", "type": "DirectoryOrCreate"},
                            "accessModes": ["ReadWriteOnce"],
                            "claimRef": object_ref_json("PersistentVolumeClaim", "data"),
                            "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "standard"},
                   "status": {"phase": "Bound"}}),
        ),
        ("v1", "Node") => sample::<_, oa::core::v1::Node>(
            av,
            k,
            core::Node {
                metadata: object_meta("node-1"),
                spec: Some(core::NodeSpec {
                    pod_cidr: s("10.1.0.0/24"),
                    pod_cid_rs: strings(&["10.1.0.0/24"]),
                    unschedulable: Some(true),
                    taints: vec![core::Taint {
                        key: s("dedicated"),
                        value: s("gpu"),
                        effect: s("NoSchedule"),
                        time_added: None,
                    }],
                    ..Default::default()
                }),
                status: Some(core::NodeStatus {
                    capacity: qmap(&[("cpu", "4"), ("pods", "110")]),
                    allocatable: qmap(&[("cpu", "3800m")]),
                    addresses: vec![core::NodeAddress {
                        r#type: s("InternalIP"),
                        address: s("192.168.0.10"),
                    }],
                    ..Default::default()
                }),
            },
            json!({"metadata": {"name": "node-1"},
                   "spec": {"podCIDR": "10.1.0.0/24", "podCIDRs": ["10.1.0.0/24"], "unschedulable": true,
                            "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]},
                   "status": {"capacity": {"cpu": "4", "pods": "110"}, "allocatable": {"cpu": "3800m"},
                              "addresses": [{"type": "InternalIP", "address": "192.168.0.10"}]}}),
        ),
        ("v1", "Binding") => sample::<_, oa::core::v1::Binding>(
            av,
            k,
            core::Binding {
                metadata: meta_ns("web-0", "prod"),
                target: Some(core::ObjectReference {
                    kind: s("Node"),
                    name: s("node-1"),
                    ..Default::default()
                }),
            },
            json!({"metadata": meta_ns_json("web-0", "prod"), "target": {"kind": "Node", "name": "node-1"}}),
        ),
        // apps/v1
        ("apps/v1", "Deployment") => sample::<_, oa::apps::v1::Deployment>(
            av,
            k,
            apps::Deployment {
                metadata: meta_ns("web", "prod"),
                spec: Some(apps::DeploymentSpec {
                    replicas: Some(3),
                    selector: selector(),
                    template: pod_template(),
                    strategy: Some(apps::DeploymentStrategy {
                        r#type: s("RollingUpdate"),
                        rolling_update: Some(apps::RollingUpdateDeployment {
                            max_unavailable: int(0),
                            max_surge: string_("25%"),
                        }),
                    }),
                    revision_history_limit: Some(5),
                    ..Default::default()
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("web", "prod"),
                   "spec": {"replicas": 3, "selector": selector_json(), "template": pod_template_json(),
                            "strategy": {"type": "RollingUpdate",
                                         "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
                            "revisionHistoryLimit": 5}}),
        ),
        ("apps/v1", "StatefulSet") => {
            without_template_type_meta(sample::<_, oa::apps::v1::StatefulSet>(
                av,
                k,
                apps::StatefulSet {
                    metadata: meta_ns("db", "prod"),
                    spec: Some(apps::StatefulSetSpec {
                        replicas: Some(3),
                        selector: selector(),
                        template: pod_template(),
                        volume_claim_templates: vec![core::PersistentVolumeClaim {
                            metadata: object_meta("data"),
                            spec: Some(core::PersistentVolumeClaimSpec {
                                access_modes: strings(&["ReadWriteOnce"]),
                                resources: Some(core::VolumeResourceRequirements {
                                    limits: Default::default(),
                                    requests: qmap(&[("storage", "1Gi")]),
                                }),
                                ..Default::default()
                            }),
                            status: None,
                        }],
                        service_name: s("db"),
                        pod_management_policy: s("Parallel"),
                        ..Default::default()
                    }),
                    status: None,
                },
                json!({"metadata": meta_ns_json("db", "prod"),
                   "spec": {"replicas": 3, "selector": selector_json(), "template": pod_template_json(),
                            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                "spec": {"accessModes": ["ReadWriteOnce"],
                                         "resources": {"requests": {"storage": "1Gi"}}}}],
                            "serviceName": "db", "podManagementPolicy": "Parallel"}}),
            ))
        }
        ("apps/v1", "DaemonSet") => sample::<_, oa::apps::v1::DaemonSet>(
            av,
            k,
            apps::DaemonSet {
                metadata: meta_ns("agent", "prod"),
                spec: Some(apps::DaemonSetSpec {
                    selector: selector(),
                    template: pod_template(),
                    update_strategy: Some(apps::DaemonSetUpdateStrategy {
                        r#type: s("RollingUpdate"),
                        rolling_update: Some(apps::RollingUpdateDaemonSet {
                            max_unavailable: int(1),
                            max_surge: int(0),
                        }),
                    }),
                    min_ready_seconds: Some(10),
                    revision_history_limit: None,
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("agent", "prod"),
                   "spec": {"selector": selector_json(), "template": pod_template_json(),
                            "updateStrategy": {"type": "RollingUpdate",
                                               "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                            "minReadySeconds": 10}}),
        ),
        ("apps/v1", "ReplicaSet") => sample::<_, oa::apps::v1::ReplicaSet>(
            av,
            k,
            apps::ReplicaSet {
                metadata: meta_ns("web-5d4f", "prod"),
                spec: Some(apps::ReplicaSetSpec {
                    replicas: Some(2),
                    min_ready_seconds: None,
                    selector: selector(),
                    template: pod_template(),
                }),
                status: Some(apps::ReplicaSetStatus {
                    replicas: Some(2),
                    ..Default::default()
                }),
            },
            json!({"metadata": meta_ns_json("web-5d4f", "prod"),
                   "spec": {"replicas": 2, "selector": selector_json(), "template": pod_template_json()},
                   "status": {"replicas": 2}}),
        ),
        ("apps/v1", "ControllerRevision") => sample::<_, oa::apps::v1::ControllerRevision>(
            av,
            k,
            apps::ControllerRevision {
                metadata: meta_ns("web-1", "prod"),
                data: Some(k8s_pb::apimachinery::pkg::runtime::RawExtension {
                    raw: Some(br#"{"spec":{"template":{"metadata":{}}}}"#.to_vec()),
                }),
                revision: Some(1),
            },
            json!({"metadata": meta_ns_json("web-1", "prod"),
                   "data": {"spec": {"template": {"metadata": {}}}}, "revision": 1}),
        ),
        // batch/v1
        ("batch/v1", "Job") => sample::<_, oa::batch::v1::Job>(
            av,
            k,
            batch::Job {
                metadata: meta_ns("migrate", "prod"),
                spec: Some(batch::JobSpec {
                    parallelism: Some(1),
                    completions: Some(1),
                    backoff_limit: Some(4),
                    template: pod_template().map(|t| core::PodTemplateSpec {
                        spec: t.spec.map(|spec| core::PodSpec {
                            restart_policy: s("Never"),
                            ..spec
                        }),
                        ..t
                    }),
                    ttl_seconds_after_finished: Some(100),
                    ..Default::default()
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("migrate", "prod"),
                   "spec": {"parallelism": 1, "completions": 1, "backoffLimit": 4,
                            "template": {"metadata": {"labels": {"app": "web"}},
                                         "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                             "ports": [{"containerPort": 8080, "protocol": "TCP"}]}],
                                                  "restartPolicy": "Never"}},
                            "ttlSecondsAfterFinished": 100}}),
        ),
        ("batch/v1", "CronJob") => sample::<_, oa::batch::v1::CronJob>(
            av,
            k,
            batch::CronJob {
                metadata: meta_ns("nightly", "prod"),
                spec: Some(batch::CronJobSpec {
                    schedule: s("0 3 * * *"),
                    time_zone: s("Etc/UTC"),
                    concurrency_policy: s("Forbid"),
                    suspend: Some(false),
                    job_template: Some(batch::JobTemplateSpec {
                        metadata: None,
                        spec: Some(batch::JobSpec {
                            backoff_limit: Some(2),
                            // Go always writes the non-pointer template, empty or not.
                            template: Some(core::PodTemplateSpec::default()),
                            ..Default::default()
                        }),
                    }),
                    successful_jobs_history_limit: Some(3),
                    ..Default::default()
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("nightly", "prod"),
                   "spec": {"schedule": "0 3 * * *", "timeZone": "Etc/UTC", "concurrencyPolicy": "Forbid",
                            "suspend": false, "jobTemplate": {"spec": {"backoffLimit": 2, "template": {}}},
                            "successfulJobsHistoryLimit": 3}}),
        ),
        // coordination.k8s.io/v1
        ("coordination.k8s.io/v1", "Lease") => sample::<_, oa_coordination::Lease>(
            av,
            k,
            coordination::Lease {
                metadata: meta_ns("controller", "kube-system"),
                spec: Some(coordination::LeaseSpec {
                    holder_identity: s("host-1_4f2a"),
                    lease_duration_seconds: Some(15),
                    acquire_time: micro_time(),
                    renew_time: Some(meta::MicroTime {
                        seconds: Some(T0 + 10),
                        nanos: Some(5_000),
                    }),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            },
            json!({"metadata": meta_ns_json("controller", "kube-system"),
                   "spec": {"holderIdentity": "host-1_4f2a", "leaseDurationSeconds": 15,
                            "acquireTime": MICRO_T0, "renewTime": "2024-01-02T03:04:15.000005Z",
                            "leaseTransitions": 0}}),
        ),
        // events.k8s.io/v1
        ("events.k8s.io/v1", "Event") => sample::<_, oa_events::Event>(
            av,
            k,
            events::Event {
                metadata: meta_ns("web.17b", "prod"),
                event_time: micro_time(),
                series: Some(events::EventSeries {
                    count: Some(3),
                    last_observed_time: micro_time(),
                }),
                reporting_controller: s("example.com/controller"),
                reporting_instance: s("controller-1"),
                action: s("Scale"),
                reason: s("ScaledUp"),
                regarding: object_ref("Deployment", "web"),
                related: None,
                note: s("scaled to 3"),
                r#type: s("Normal"),
                deprecated_count: Some(0),
                ..Default::default()
            },
            json!({"metadata": meta_ns_json("web.17b", "prod"), "eventTime": MICRO_T0,
                   "series": {"count": 3, "lastObservedTime": MICRO_T0},
                   "reportingController": "example.com/controller", "reportingInstance": "controller-1",
                   "action": "Scale", "reason": "ScaledUp", "regarding": object_ref_json("Deployment", "web"),
                   // deprecatedCount is a non-pointer omitempty int32: Go's JSON drops a zero.
                   "note": "scaled to 3", "type": "Normal"}),
        ),
        // rbac.authorization.k8s.io/v1
        ("rbac.authorization.k8s.io/v1", "Role") => sample::<_, oa::rbac::v1::Role>(
            av,
            k,
            rbac::Role {
                metadata: meta_ns("reader", "prod"),
                rules: vec![rbac::PolicyRule {
                    verbs: strings(&["get", "list"]),
                    api_groups: strings(&[""]),
                    resources: strings(&["pods"]),
                    resource_names: strings(&["web-0"]),
                    non_resource_ur_ls: Vec::new(),
                }],
            },
            json!({"metadata": meta_ns_json("reader", "prod"),
                   "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"],
                              "resourceNames": ["web-0"]}]}),
        ),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => sample::<_, oa::rbac::v1::ClusterRole>(
            av,
            k,
            rbac::ClusterRole {
                metadata: object_meta("metrics"),
                rules: vec![rbac::PolicyRule {
                    verbs: strings(&["get"]),
                    non_resource_ur_ls: strings(&["/metrics"]),
                    ..Default::default()
                }],
                aggregation_rule: Some(rbac::AggregationRule {
                    cluster_role_selectors: vec![meta::LabelSelector {
                        match_labels: smap(&[("aggregate", "true")]),
                        match_expressions: Vec::new(),
                    }],
                }),
            },
            json!({"metadata": {"name": "metrics"},
                   "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"aggregate": "true"}}]}}),
        ),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => sample::<_, oa::rbac::v1::RoleBinding>(
            av,
            k,
            rbac::RoleBinding {
                metadata: meta_ns("readers", "prod"),
                subjects: vec![rbac::Subject {
                    kind: s("ServiceAccount"),
                    api_group: s(""),
                    name: s("builder"),
                    namespace: s("prod"),
                }],
                role_ref: Some(rbac::RoleRef {
                    api_group: s("rbac.authorization.k8s.io"),
                    kind: s("Role"),
                    name: s("reader"),
                }),
            },
            // Subject.apiGroup is a non-pointer omitempty string: Go's JSON drops "".
            json!({"metadata": meta_ns_json("readers", "prod"),
                   "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "prod"}],
                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}}),
        ),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            sample::<_, oa::rbac::v1::ClusterRoleBinding>(
                av,
                k,
                rbac::ClusterRoleBinding {
                    metadata: object_meta("metrics"),
                    subjects: vec![rbac::Subject {
                        kind: s("Group"),
                        api_group: s("rbac.authorization.k8s.io"),
                        name: s("monitoring"),
                        namespace: None,
                    }],
                    role_ref: Some(rbac::RoleRef {
                        api_group: s("rbac.authorization.k8s.io"),
                        kind: s("ClusterRole"),
                        name: s("metrics"),
                    }),
                },
                json!({"metadata": {"name": "metrics"},
                       "subjects": [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
                                     "name": "monitoring"}],
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                   "name": "metrics"}}),
            )
        }
        // autoscaling
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            sample::<_, oa::autoscaling::v2::HorizontalPodAutoscaler>(
                av,
                k,
                asv2::HorizontalPodAutoscaler {
                    metadata: meta_ns("web", "prod"),
                    spec: Some(asv2::HorizontalPodAutoscalerSpec {
                        scale_target_ref: Some(asv2::CrossVersionObjectReference {
                            kind: s("Deployment"),
                            name: s("web"),
                            api_version: s("apps/v1"),
                        }),
                        min_replicas: Some(1),
                        max_replicas: Some(5),
                        metrics: vec![asv2::MetricSpec {
                            r#type: s("Resource"),
                            resource: Some(asv2::ResourceMetricSource {
                                name: s("cpu"),
                                target: Some(asv2::MetricTarget {
                                    r#type: s("Utilization"),
                                    average_utilization: Some(80),
                                    ..Default::default()
                                }),
                            }),
                            ..Default::default()
                        }],
                        behavior: None,
                    }),
                    status: None,
                },
                json!({"metadata": meta_ns_json("web", "prod"),
                       "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                                "minReplicas": 1, "maxReplicas": 5,
                                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                                    "target": {"type": "Utilization", "averageUtilization": 80}}}]}}),
            )
        }
        ("autoscaling/v1", "HorizontalPodAutoscaler") => {
            sample::<_, oa::autoscaling::v1::HorizontalPodAutoscaler>(
                av,
                k,
                asv1::HorizontalPodAutoscaler {
                    metadata: meta_ns("web", "prod"),
                    spec: Some(asv1::HorizontalPodAutoscalerSpec {
                        scale_target_ref: Some(asv1::CrossVersionObjectReference {
                            kind: s("Deployment"),
                            name: s("web"),
                            api_version: s("apps/v1"),
                        }),
                        min_replicas: Some(1),
                        max_replicas: Some(5),
                        target_cpu_utilization_percentage: Some(60),
                    }),
                    status: None,
                },
                json!({"metadata": meta_ns_json("web", "prod"),
                       "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                                "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}}),
            )
        }
        ("autoscaling/v1", "Scale") => sample::<_, oa::autoscaling::v1::Scale>(
            av,
            k,
            asv1::Scale {
                metadata: meta_ns("web", "prod"),
                spec: Some(asv1::ScaleSpec { replicas: Some(4) }),
                status: Some(asv1::ScaleStatus {
                    replicas: Some(3),
                    selector: s("app=web"),
                }),
            },
            json!({"metadata": meta_ns_json("web", "prod"), "spec": {"replicas": 4},
                   "status": {"replicas": 3, "selector": "app=web"}}),
        ),
        // policy/v1, scheduling.k8s.io/v1
        ("policy/v1", "PodDisruptionBudget") => sample::<_, oa::policy::v1::PodDisruptionBudget>(
            av,
            k,
            policy::PodDisruptionBudget {
                metadata: meta_ns("web", "prod"),
                spec: Some(policy::PodDisruptionBudgetSpec {
                    min_available: string_("50%"),
                    selector: selector(),
                    max_unavailable: None,
                    unhealthy_pod_eviction_policy: s("AlwaysAllow"),
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("web", "prod"),
                   "spec": {"minAvailable": "50%", "selector": selector_json(),
                            "unhealthyPodEvictionPolicy": "AlwaysAllow"}}),
        ),
        ("scheduling.k8s.io/v1", "PriorityClass") => {
            sample::<_, oa::scheduling::v1::PriorityClass>(
                av,
                k,
                scheduling::PriorityClass {
                    metadata: object_meta("high"),
                    value: Some(1000),
                    global_default: Some(false),
                    description: s("latency-critical"),
                    preemption_policy: s("Never"),
                },
                // globalDefault is a non-pointer omitempty bool: Go's JSON drops false.
                json!({"metadata": {"name": "high"}, "value": 1000, "description": "latency-critical",
                   "preemptionPolicy": "Never"}),
            )
        }
        // networking.k8s.io/v1
        ("networking.k8s.io/v1", "Ingress") => sample::<_, oa::networking::v1::Ingress>(
            av,
            k,
            networking::Ingress {
                metadata: meta_ns("web", "prod"),
                spec: Some(networking::IngressSpec {
                    ingress_class_name: s("nginx"),
                    rules: vec![networking::IngressRule {
                        host: s("web.example.com"),
                        ingress_rule_value: Some(networking::IngressRuleValue {
                            http: Some(networking::HttpIngressRuleValue {
                                paths: vec![networking::HttpIngressPath {
                                    path: s("/"),
                                    path_type: s("Prefix"),
                                    backend: Some(networking::IngressBackend {
                                        service: Some(networking::IngressServiceBackend {
                                            name: s("web"),
                                            port: Some(networking::ServiceBackendPort {
                                                name: None,
                                                number: Some(80),
                                            }),
                                        }),
                                        resource: None,
                                    }),
                                }],
                            }),
                        }),
                    }],
                    ..Default::default()
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("web", "prod"),
                   "spec": {"ingressClassName": "nginx",
                            "rules": [{"host": "web.example.com", "http": {"paths": [{"path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}}),
        ),
        ("networking.k8s.io/v1", "IngressClass") => sample::<_, oa::networking::v1::IngressClass>(
            av,
            k,
            networking::IngressClass {
                metadata: object_meta("nginx"),
                spec: Some(networking::IngressClassSpec {
                    controller: s("k8s.io/ingress-nginx"),
                    parameters: Some(networking::IngressClassParametersReference {
                        a_pi_group: s("k8s.example.com"),
                        kind: s("IngressParameters"),
                        name: s("external"),
                        scope: s("Namespace"),
                        namespace: s("ingress"),
                    }),
                }),
            },
            json!({"metadata": {"name": "nginx"},
                   "spec": {"controller": "k8s.io/ingress-nginx",
                            "parameters": {"apiGroup": "k8s.example.com", "kind": "IngressParameters",
                                           "name": "external", "scope": "Namespace", "namespace": "ingress"}}}),
        ),
        ("networking.k8s.io/v1", "IPAddress") => sample::<_, oa::networking::v1::IPAddress>(
            av,
            k,
            networking::IPAddress {
                metadata: object_meta("10.0.0.10"),
                spec: Some(networking::IPAddressSpec {
                    parent_ref: Some(networking::ParentReference {
                        group: s(""),
                        resource: s("services"),
                        namespace: s("prod"),
                        name: s("web"),
                    }),
                }),
            },
            // ParentReference.group is a non-pointer omitempty string: Go's JSON drops "".
            json!({"metadata": {"name": "10.0.0.10"},
                   "spec": {"parentRef": {"resource": "services", "namespace": "prod", "name": "web"}}}),
        ),
        ("networking.k8s.io/v1", "ServiceCIDR") => sample::<_, oa::networking::v1::ServiceCIDR>(
            av,
            k,
            networking::ServiceCIDR {
                metadata: object_meta("kubernetes"),
                spec: Some(networking::ServiceCIDRSpec {
                    cidrs: strings(&["10.0.0.0/16", "fd00::/108"]),
                }),
                status: None,
            },
            json!({"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["10.0.0.0/16", "fd00::/108"]}}),
        ),
        ("networking.k8s.io/v1", "NetworkPolicy") => {
            sample::<_, oa::networking::v1::NetworkPolicy>(
                av,
                k,
                networking::NetworkPolicy {
                    metadata: meta_ns("web", "prod"),
                    spec: Some(networking::NetworkPolicySpec {
                        pod_selector: selector(),
                        ingress: vec![networking::NetworkPolicyIngressRule {
                            ports: vec![networking::NetworkPolicyPort {
                                protocol: s("TCP"),
                                port: int(8080),
                                end_port: Some(8090),
                            }],
                            from: vec![networking::NetworkPolicyPeer {
                                namespace_selector: Some(meta::LabelSelector {
                                    match_labels: smap(&[("team", "web")]),
                                    match_expressions: Vec::new(),
                                }),
                                ..Default::default()
                            }],
                        }],
                        egress: Vec::new(),
                        policy_types: strings(&["Ingress"]),
                    }),
                },
                json!({"metadata": meta_ns_json("web", "prod"),
                   "spec": {"podSelector": selector_json(),
                            "ingress": [{"ports": [{"protocol": "TCP", "port": 8080, "endPort": 8090}],
                                         "from": [{"namespaceSelector": {"matchLabels": {"team": "web"}}}]}],
                            "policyTypes": ["Ingress"]}}),
            )
        }
        // storage.k8s.io/v1
        ("storage.k8s.io/v1", "StorageClass") => sample::<_, oa_storage::StorageClass>(
            av,
            k,
            storage::StorageClass {
                metadata: object_meta("standard"),
                provisioner: s("csi.example.com"),
                parameters: smap(&[("type", "ssd")]),
                reclaim_policy: s("Delete"),
                mount_options: strings(&["noatime"]),
                allow_volume_expansion: Some(true),
                volume_binding_mode: s("WaitForFirstConsumer"),
                allowed_topologies: vec![core::TopologySelectorTerm {
                    match_label_expressions: vec![core::TopologySelectorLabelRequirement {
                        key: s("topology.kubernetes.io/zone"),
                        values: strings(&["eu-1a"]),
                    }],
                }],
            },
            json!({"metadata": {"name": "standard"}, "provisioner": "csi.example.com",
                   "parameters": {"type": "ssd"}, "reclaimPolicy": "Delete", "mountOptions": ["noatime"],
                   "allowVolumeExpansion": true, "volumeBindingMode": "WaitForFirstConsumer",
                   "allowedTopologies": [{"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone",
                                                                     "values": ["eu-1a"]}]}]}),
        ),
        ("storage.k8s.io/v1", "CSIDriver") => sample::<_, oa_storage::CSIDriver>(
            av,
            k,
            storage::CSIDriver {
                metadata: object_meta("csi.example.com"),
                spec: Some(storage::CSIDriverSpec {
                    attach_required: Some(true),
                    pod_info_on_mount: Some(false),
                    volume_lifecycle_modes: strings(&["Persistent"]),
                    storage_capacity: Some(true),
                    fs_group_policy: s("File"),
                    token_requests: vec![storage::TokenRequest {
                        audience: s("vault"),
                        expiration_seconds: Some(600),
                    }],
                    requires_republish: Some(false),
                    ..Default::default()
                }),
            },
            json!({"metadata": {"name": "csi.example.com"},
                   "spec": {"attachRequired": true, "podInfoOnMount": false,
                            "volumeLifecycleModes": ["Persistent"], "storageCapacity": true,
                            "fsGroupPolicy": "File",
                            "tokenRequests": [{"audience": "vault", "expirationSeconds": 600}],
                            "requiresRepublish": false}}),
        ),
        ("storage.k8s.io/v1", "CSINode") => sample::<_, oa_storage::CSINode>(
            av,
            k,
            storage::CSINode {
                metadata: object_meta("node-1"),
                spec: Some(storage::CSINodeSpec {
                    drivers: vec![storage::CSINodeDriver {
                        name: s("csi.example.com"),
                        node_id: s("i-0abc"),
                        topology_keys: strings(&["topology.kubernetes.io/zone"]),
                        allocatable: Some(storage::VolumeNodeResources { count: Some(25) }),
                    }],
                }),
            },
            json!({"metadata": {"name": "node-1"},
                   "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "i-0abc",
                                         "topologyKeys": ["topology.kubernetes.io/zone"],
                                         "allocatable": {"count": 25}}]}}),
        ),
        ("storage.k8s.io/v1", "CSIStorageCapacity") => sample::<_, oa_storage::CSIStorageCapacity>(
            av,
            k,
            storage::CSIStorageCapacity {
                metadata: meta_ns("cap-1", "kube-system"),
                node_topology: selector(),
                storage_class_name: s("standard"),
                capacity: Some(q("100Gi")),
                maximum_volume_size: Some(q("10Gi")),
            },
            json!({"metadata": meta_ns_json("cap-1", "kube-system"), "nodeTopology": selector_json(),
                   "storageClassName": "standard", "capacity": "100Gi", "maximumVolumeSize": "10Gi"}),
        ),
        ("storage.k8s.io/v1", "VolumeAttachment") => sample::<_, oa_storage::VolumeAttachment>(
            av,
            k,
            storage::VolumeAttachment {
                metadata: object_meta("csi-0a1b"),
                spec: Some(storage::VolumeAttachmentSpec {
                    attacher: s("csi.example.com"),
                    source: Some(storage::VolumeAttachmentSource {
                        persistent_volume_name: s("pv-1"),
                        inline_volume_spec: None,
                    }),
                    node_name: s("node-1"),
                }),
                status: Some(storage::VolumeAttachmentStatus {
                    attached: Some(true),
                    attachment_metadata: smap(&[("devicePath", "/dev/xvdb")]),
                    attach_error: None,
                    detach_error: None,
                }),
            },
            json!({"metadata": {"name": "csi-0a1b"},
                   "spec": {"attacher": "csi.example.com", "source": {"persistentVolumeName": "pv-1"},
                            "nodeName": "node-1"},
                   "status": {"attached": true, "attachmentMetadata": {"devicePath": "/dev/xvdb"}}}),
        ),
        // discovery.k8s.io/v1, node.k8s.io/v1
        ("discovery.k8s.io/v1", "EndpointSlice") => sample::<_, oa_discovery::EndpointSlice>(
            av,
            k,
            discovery::EndpointSlice {
                metadata: meta_ns("web-abc12", "prod"),
                address_type: s("IPv4"),
                endpoints: vec![discovery::Endpoint {
                    addresses: strings(&["10.1.0.5"]),
                    conditions: Some(discovery::EndpointConditions {
                        ready: Some(true),
                        serving: Some(true),
                        terminating: Some(false),
                    }),
                    target_ref: object_ref("Pod", "web-0"),
                    node_name: s("node-1"),
                    zone: s("eu-1a"),
                    ..Default::default()
                }],
                ports: vec![discovery::EndpointPort {
                    name: s("http"),
                    protocol: s("TCP"),
                    port: Some(8080),
                    app_protocol: None,
                }],
            },
            json!({"metadata": meta_ns_json("web-abc12", "prod"), "addressType": "IPv4",
                   "endpoints": [{"addresses": ["10.1.0.5"],
                                  "conditions": {"ready": true, "serving": true, "terminating": false},
                                  "targetRef": object_ref_json("Pod", "web-0"), "nodeName": "node-1",
                                  "zone": "eu-1a"}],
                   "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]}),
        ),
        ("node.k8s.io/v1", "RuntimeClass") => sample::<_, oa_node::RuntimeClass>(
            av,
            k,
            node::RuntimeClass {
                metadata: object_meta("gvisor"),
                handler: s("runsc"),
                overhead: Some(node::Overhead {
                    pod_fixed: qmap(&[("memory", "64Mi")]),
                }),
                scheduling: Some(node::Scheduling {
                    node_selector: smap(&[("sandbox", "gvisor")]),
                    tolerations: vec![core::Toleration {
                        key: s("sandbox"),
                        operator: s("Exists"),
                        effect: s("NoSchedule"),
                        ..Default::default()
                    }],
                }),
            },
            json!({"metadata": {"name": "gvisor"}, "handler": "runsc",
                   "overhead": {"podFixed": {"memory": "64Mi"}},
                   "scheduling": {"nodeSelector": {"sandbox": "gvisor"},
                                  "tolerations": [{"key": "sandbox", "operator": "Exists",
                                                   "effect": "NoSchedule"}]}}),
        ),
        // apiextensions.k8s.io/v1
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            sample::<_, oa_apiext::CustomResourceDefinition>(
                av,
                k,
                apiext::CustomResourceDefinition {
                    metadata: object_meta("widgets.example.com"),
                    spec: Some(apiext::CustomResourceDefinitionSpec {
                        group: s("example.com"),
                        names: Some(apiext::CustomResourceDefinitionNames {
                            plural: s("widgets"),
                            singular: s("widget"),
                            short_names: strings(&["wd"]),
                            kind: s("Widget"),
                            list_kind: s("WidgetList"),
                            categories: strings(&["all"]),
                        }),
                        scope: s("Namespaced"),
                        versions: vec![apiext::CustomResourceDefinitionVersion {
                            name: s("v1"),
                            served: Some(true),
                            storage: Some(true),
                            deprecated: Some(false),
                            deprecation_warning: None,
                            schema: Some(apiext::CustomResourceValidation {
                                open_apiv3_schema: Some(crd_schema()),
                            }),
                            subresources: Some(apiext::CustomResourceSubresources {
                                status: Some(apiext::CustomResourceSubresourceStatus {}),
                                scale: Some(apiext::CustomResourceSubresourceScale {
                                    spec_replicas_path: s(".spec.replicas"),
                                    status_replicas_path: s(".status.replicas"),
                                    label_selector_path: s(".status.selector"),
                                }),
                            }),
                            additional_printer_columns: vec![
                                apiext::CustomResourceColumnDefinition {
                                    name: s("Replicas"),
                                    r#type: s("integer"),
                                    format: s(""),
                                    description: s(""),
                                    priority: Some(0),
                                    json_path: s(".spec.replicas"),
                                },
                            ],
                            selectable_fields: vec![apiext::SelectableField {
                                json_path: s(".spec.mode"),
                            }],
                        }],
                        conversion: Some(apiext::CustomResourceConversion {
                            strategy: s("None"),
                            webhook: None,
                        }),
                        preserve_unknown_fields: Some(false),
                    }),
                    status: None,
                },
                // deprecated, preserveUnknownFields, format, description and priority are
                // non-pointer omitempty fields Go writes on the wire but drops from JSON.
                json!({"metadata": {"name": "widgets.example.com"},
                       "spec": {"group": "example.com",
                                "names": {"plural": "widgets", "singular": "widget", "shortNames": ["wd"],
                                          "kind": "Widget", "listKind": "WidgetList", "categories": ["all"]},
                                "scope": "Namespaced",
                                "versions": [{"name": "v1", "served": true, "storage": true,
                                              "schema": {"openAPIV3Schema": crd_schema_json()},
                                              "subresources": {"status": {},
                                                  "scale": {"specReplicasPath": ".spec.replicas",
                                                            "statusReplicasPath": ".status.replicas",
                                                            "labelSelectorPath": ".status.selector"}},
                                              "additionalPrinterColumns": [{"name": "Replicas", "type": "integer",
                                                                            "jsonPath": ".spec.replicas"}],
                                              "selectableFields": [{"jsonPath": ".spec.mode"}]}],
                                "conversion": {"strategy": "None"}}}),
            )
        }
        // admissionregistration.k8s.io/v1
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            sample::<_, oa_admission::ValidatingWebhookConfiguration>(
                av,
                k,
                admission::ValidatingWebhookConfiguration {
                    metadata: object_meta("policy"),
                    webhooks: vec![admission::ValidatingWebhook {
                        name: s("policy.example.com"),
                        client_config: webhook_client_config(),
                        rules: webhook_rules(),
                        failure_policy: s("Fail"),
                        match_policy: s("Equivalent"),
                        namespace_selector: selector(),
                        object_selector: None,
                        side_effects: s("None"),
                        timeout_seconds: Some(5),
                        admission_review_versions: strings(&["v1"]),
                        match_conditions: match_conditions(),
                    }],
                },
                json!({"metadata": {"name": "policy"}, "webhooks": [webhook_json()]}),
            )
        }
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            let mut webhook = webhook_json();
            webhook["reinvocationPolicy"] = json!("IfNeeded");
            sample::<_, oa_admission::MutatingWebhookConfiguration>(
                av,
                k,
                admission::MutatingWebhookConfiguration {
                    metadata: object_meta("policy"),
                    webhooks: vec![admission::MutatingWebhook {
                        name: s("policy.example.com"),
                        client_config: webhook_client_config(),
                        rules: webhook_rules(),
                        failure_policy: s("Fail"),
                        match_policy: s("Equivalent"),
                        namespace_selector: selector(),
                        object_selector: None,
                        side_effects: s("None"),
                        timeout_seconds: Some(5),
                        admission_review_versions: strings(&["v1"]),
                        reinvocation_policy: s("IfNeeded"),
                        match_conditions: match_conditions(),
                    }],
                },
                json!({"metadata": {"name": "policy"}, "webhooks": [webhook]}),
            )
        }
        // apiregistration.k8s.io/v1
        ("apiregistration.k8s.io/v1", "APIService") => sample::<_, oa_apireg::APIService>(
            av,
            k,
            apireg::APIService {
                metadata: object_meta("v1beta1.metrics.k8s.io"),
                spec: Some(apireg::APIServiceSpec {
                    service: Some(apireg::ServiceReference {
                        namespace: s("kube-system"),
                        name: s("metrics-server"),
                        port: Some(443),
                    }),
                    group: s("metrics.k8s.io"),
                    version: s("v1beta1"),
                    insecure_skip_tls_verify: Some(false),
                    ca_bundle: Some(b"CA".to_vec()),
                    group_priority_minimum: Some(100),
                    version_priority: Some(0),
                }),
                status: Some(apireg::APIServiceStatus {
                    conditions: vec![apireg::APIServiceCondition {
                        r#type: s("Available"),
                        status: s("True"),
                        last_transition_time: time(T0),
                        reason: s("Passed"),
                        message: s("all checks passed"),
                    }],
                }),
            },
            // versionPriority has no omitempty: a zero stays.
            json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
                   "spec": {"service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
                            "group": "metrics.k8s.io", "version": "v1beta1", "caBundle": "Q0E=",
                            "groupPriorityMinimum": 100, "versionPriority": 0},
                   "status": {"conditions": [{"type": "Available", "status": "True",
                                              "lastTransitionTime": "2024-01-02T03:04:05Z",
                                              "reason": "Passed", "message": "all checks passed"}]}}),
        ),
        // certificates.k8s.io/v1
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => {
            sample::<_, oa::certificates::v1::CertificateSigningRequest>(
                av,
                k,
                certificates::CertificateSigningRequest {
                    metadata: object_meta("agent-7"),
                    spec: Some(certificates::CertificateSigningRequestSpec {
                        request: Some(b"CSR".to_vec()),
                        signer_name: s("kubernetes.io/kube-apiserver-client"),
                        expiration_seconds: Some(86400),
                        usages: strings(&["client auth"]),
                        ..Default::default()
                    }),
                    status: None,
                },
                json!({"metadata": {"name": "agent-7"},
                       "spec": {"request": "Q1NS", "signerName": "kubernetes.io/kube-apiserver-client",
                                "expirationSeconds": 86400, "usages": ["client auth"]}}),
            )
        }
        // authentication.k8s.io/v1
        ("authentication.k8s.io/v1", "TokenRequest") => sample::<_, oa_authn::TokenRequest>(
            av,
            k,
            authn::TokenRequest {
                metadata: meta_ns("builder", "prod"),
                spec: Some(authn::TokenRequestSpec {
                    audiences: strings(&["https://kubernetes.default.svc"]),
                    expiration_seconds: Some(3600),
                    bound_object_ref: Some(authn::BoundObjectReference {
                        kind: s("Pod"),
                        api_version: s("v1"),
                        name: s("web-0"),
                        u_id: s("abc"),
                    }),
                }),
                status: None,
            },
            json!({"metadata": meta_ns_json("builder", "prod"),
                   "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
                            "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "web-0",
                                               "uid": "abc"}}}),
        ),
        ("authentication.k8s.io/v1", "TokenReview") => sample::<_, oa_authn::TokenReview>(
            av,
            k,
            authn::TokenReview {
                metadata: object_meta(""),
                spec: Some(authn::TokenReviewSpec {
                    token: s("eyJhbGciOi"),
                    audiences: strings(&["vault"]),
                }),
                status: None,
            },
            // ObjectMeta.name is omitempty: Go's JSON drops "".
            json!({"metadata": {}, "spec": {"token": "eyJhbGciOi", "audiences": ["vault"]}}),
        ),
        ("authentication.k8s.io/v1", "SelfSubjectReview") => {
            sample::<_, oa_authn::SelfSubjectReview>(
                av,
                k,
                authn::SelfSubjectReview {
                    metadata: Some(meta::ObjectMeta {
                        creation_timestamp: Some(meta::Time::default()),
                        ..Default::default()
                    }),
                    status: None,
                },
                // An empty Time is Go's zero time: null, which k8s-openapi leaves out.
                json!({"metadata": {}}),
            )
        }
        // authorization.k8s.io/v1
        ("authorization.k8s.io/v1", "SubjectAccessReview") => {
            sample::<_, oa_authz::SubjectAccessReview>(
                av,
                k,
                authz::SubjectAccessReview {
                    metadata: Some(meta::ObjectMeta::default()),
                    spec: Some(authz::SubjectAccessReviewSpec {
                        resource_attributes: Some(authz::ResourceAttributes {
                            namespace: s("prod"),
                            verb: s("list"),
                            group: s("apps"),
                            version: s("v1"),
                            resource: s("deployments"),
                            label_selector: Some(authz::LabelSelectorAttributes {
                                raw_selector: s("app=web"),
                                requirements: Vec::new(),
                            }),
                            ..Default::default()
                        }),
                        non_resource_attributes: None,
                        user: s("alice"),
                        groups: strings(&["dev"]),
                        extra: [(
                            "scopes".to_owned(),
                            authz::ExtraValue {
                                items: strings(&["a"]),
                            },
                        )]
                        .into(),
                        uid: s("u-1"),
                    }),
                    status: None,
                },
                json!({"metadata": {},
                       "spec": {"resourceAttributes": {"namespace": "prod", "verb": "list", "group": "apps",
                                                       "version": "v1", "resource": "deployments",
                                                       "labelSelector": {"rawSelector": "app=web"}},
                                "user": "alice", "groups": ["dev"], "extra": {"scopes": ["a"]},
                                "uid": "u-1"}}),
            )
        }
        ("authorization.k8s.io/v1", "LocalSubjectAccessReview") => {
            sample::<_, oa_authz::LocalSubjectAccessReview>(
                av,
                k,
                authz::LocalSubjectAccessReview {
                    metadata: Some(meta::ObjectMeta {
                        namespace: s("prod"),
                        ..Default::default()
                    }),
                    spec: Some(authz::SubjectAccessReviewSpec {
                        resource_attributes: Some(authz::ResourceAttributes {
                            namespace: s("prod"),
                            verb: s("get"),
                            resource: s("pods"),
                            subresource: s("log"),
                            name: s("web-0"),
                            ..Default::default()
                        }),
                        user: s("bob"),
                        ..Default::default()
                    }),
                    status: None,
                },
                json!({"metadata": {"namespace": "prod"},
                       "spec": {"resourceAttributes": {"namespace": "prod", "verb": "get", "resource": "pods",
                                                       "subresource": "log", "name": "web-0"},
                                "user": "bob"}}),
            )
        }
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => {
            sample::<_, oa_authz::SelfSubjectAccessReview>(
                av,
                k,
                authz::SelfSubjectAccessReview {
                    metadata: Some(meta::ObjectMeta::default()),
                    spec: Some(authz::SelfSubjectAccessReviewSpec {
                        resource_attributes: None,
                        non_resource_attributes: Some(authz::NonResourceAttributes {
                            path: s("/metrics"),
                            verb: s("get"),
                        }),
                    }),
                    status: None,
                },
                json!({"metadata": {},
                       "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}}}),
            )
        }
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => {
            sample::<_, oa_authz::SelfSubjectRulesReview>(
                av,
                k,
                authz::SelfSubjectRulesReview {
                    metadata: Some(meta::ObjectMeta::default()),
                    spec: Some(authz::SelfSubjectRulesReviewSpec {
                        namespace: s("prod"),
                    }),
                    status: None,
                },
                json!({"metadata": {}, "spec": {"namespace": "prod"}}),
            )
        }
        // DeleteOptions, the body of a delete, labelled with meta.k8s.io/v1 (or the group of
        // the resource being deleted; see `delete_options_and_scale`).
        ("meta.k8s.io/v1", "DeleteOptions") => sample::<_, oa_meta::DeleteOptions>(
            av,
            k,
            meta::DeleteOptions {
                grace_period_seconds: Some(30),
                preconditions: Some(meta::Preconditions {
                    uid: s("0b5e8f4a"),
                    resource_version: s("42"),
                }),
                propagation_policy: s("Background"),
                dry_run: strings(&["All"]),
                ..Default::default()
            },
            json!({"gracePeriodSeconds": 30, "preconditions": {"uid": "0b5e8f4a", "resourceVersion": "42"},
                   "propagationPolicy": "Background", "dryRun": ["All"]}),
        ),
        _ => return None,
    })
}

/// Every served kind decodes its sample to exactly the JSON k8s-openapi writes for it.
#[test]
fn every_served_kind_decodes_like_k8s_openapi() {
    let served = served_kinds();
    // The list is the servers' own: it must hold the kinds this test was written for.
    for (api_version, kind) in [
        ("v1", "PersistentVolumeClaim"),
        ("apps/v1", "Deployment"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("certificates.k8s.io/v1", "CertificateSigningRequest"),
        ("autoscaling/v1", "Scale"),
    ] {
        assert!(
            served.contains(&(api_version.to_owned(), kind.to_owned())),
            "{api_version} {kind} is not served"
        );
    }
    let mut failures = Vec::new();
    for (api_version, kind) in &served {
        let Some(sample) = served_sample(api_version, kind) else {
            failures.push(format!("{api_version} {kind}: no sample in this test"));
            continue;
        };
        match decode_object(&sample.body) {
            Err(e) => failures.push(format!("{api_version} {kind}: {e}")),
            Ok(got) => {
                let got = strip_nulls(&got);
                if got != sample.openapi {
                    failures.push(format!(
                        "{api_version} {kind}: decoded\n  {got}\nk8s-openapi writes\n  {}",
                        sample.openapi
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} served kinds fail:\n{}",
        failures.len(),
        served.len(),
        failures.join("\n")
    );
}
