//! End-to-end tests: real Kubernetes objects built with k8s-pb and encoded with prost, wrapped
//! in the `k8s\0` envelope, decoded, compared with the expected JSON and then parsed into the
//! matching k8s-openapi type, whose re-serialization must equal our JSON (so a misspelt or
//! misplaced field would show up as a difference, not be silently ignored).

use std::collections::BTreeMap;

use k8s_openapi::api as oa;
use k8s_pb::api::apps::v1 as apps;
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::certificates::v1 as certificates;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::networking::v1 as networking;
use k8s_pb::api::policy::v1 as policy;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::api::scheduling::v1 as scheduling;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{ProtobufError, decode_object, supported_kinds};

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

fn q(v: &str) -> Quantity {
    Quantity { string: s(v) }
}

fn smap(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn qmap(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), q(v))).collect()
}

/// IntOrString the way Go writes it: all three fields always present.
fn int(i: i32) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(0),
        int_val: Some(i),
        str_val: s(""),
    })
}

fn string_(v: &str) -> Option<IntOrString> {
    Some(IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(v),
    })
}

fn time(seconds: i64) -> Option<meta::Time> {
    Some(meta::Time {
        seconds: Some(seconds),
        nanos: Some(0),
    })
}

/// 2024-01-02T03:04:05Z
const T0: i64 = 1_704_164_645;

fn object_meta(name: &str) -> Option<meta::ObjectMeta> {
    Some(meta::ObjectMeta {
        name: s(name),
        ..Default::default()
    })
}

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: s(api_version),
            kind: s(kind),
        }),
        raw: Some(raw),
        // Go writes both strings even when empty.
        content_encoding: s(""),
        content_type: s(""),
    };
    let mut body = b"k8s\0".to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

fn decode<M: Message + k8s_pb::Resource>(obj: &M) -> Value {
    decode_object(&envelope(M::API_VERSION, M::KIND, obj.encode_to_vec())).unwrap()
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), strip_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_nulls).collect()),
        other => other.clone(),
    }
}

/// The JSON must parse as the k8s-openapi type and serialize back to itself (nulls aside:
/// k8s-openapi drops `creationTimestamp: null`).
fn check_openapi<K: DeserializeOwned + Serialize>(json: &Value) {
    check_openapi_as::<K>(json, json);
}

/// Like [`check_openapi`], for when k8s-openapi adds members on the way back out.
fn check_openapi_as<K: DeserializeOwned + Serialize>(json: &Value, reserialized: &Value) {
    let typed: K = serde_json::from_value(json.clone()).unwrap();
    assert_eq!(
        serde_json::to_value(&typed).unwrap(),
        strip_nulls(reserialized)
    );
}

fn container(name: &str, image: &str) -> core::Container {
    core::Container {
        name: s(name),
        image: s(image),
        ..Default::default()
    }
}

#[test]
fn deployment_with_full_pod_template() {
    let labels = smap(&[("app", "web")]);
    let web = core::Container {
        name: s("web"),
        image: s("nginx:1.27"),
        command: strings(&["nginx"]),
        args: strings(&["-g", "daemon off;"]),
        working_dir: s("/srv"),
        ports: vec![
            core::ContainerPort {
                name: s("http"),
                container_port: Some(80),
                protocol: s("TCP"),
                ..Default::default()
            },
            core::ContainerPort {
                container_port: Some(443),
                host_port: Some(8443),
                host_ip: s("0.0.0.0"),
                ..Default::default()
            },
        ],
        env: vec![
            core::EnvVar {
                name: s("MODE"),
                value: s("prod"),
                ..Default::default()
            },
            core::EnvVar {
                name: s("CFG"),
                value_from: Some(core::EnvVarSource {
                    config_map_key_ref: Some(core::ConfigMapKeySelector {
                        local_object_reference: Some(core::LocalObjectReference { name: s("cfg") }),
                        key: s("mode"),
                        optional: Some(true),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            core::EnvVar {
                name: s("PASSWORD"),
                value_from: Some(core::EnvVarSource {
                    secret_key_ref: Some(core::SecretKeySelector {
                        local_object_reference: Some(core::LocalObjectReference {
                            name: s("creds"),
                        }),
                        key: s("password"),
                        optional: None,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            core::EnvVar {
                name: s("POD_IP"),
                value_from: Some(core::EnvVarSource {
                    field_ref: Some(core::ObjectFieldSelector {
                        api_version: s("v1"),
                        field_path: s("status.podIP"),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
            core::EnvVar {
                name: s("MEM"),
                value_from: Some(core::EnvVarSource {
                    resource_field_ref: Some(core::ResourceFieldSelector {
                        container_name: s("web"),
                        resource: s("limits.memory"),
                        divisor: Some(q("1Mi")),
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            },
        ],
        env_from: vec![core::EnvFromSource {
            prefix: s("APP_"),
            config_map_ref: Some(core::ConfigMapEnvSource {
                local_object_reference: Some(core::LocalObjectReference { name: s("cfg") }),
                optional: None,
            }),
            secret_ref: None,
        }],
        resources: Some(core::ResourceRequirements {
            limits: qmap(&[("cpu", "500m"), ("memory", "128Mi")]),
            requests: qmap(&[("cpu", "250m")]),
            claims: vec![core::ResourceClaim {
                name: s("gpu"),
                request: None,
            }],
        }),
        volume_mounts: vec![
            core::VolumeMount {
                name: s("cache"),
                mount_path: s("/cache"),
                ..Default::default()
            },
            core::VolumeMount {
                name: s("cfg"),
                mount_path: s("/etc/cfg"),
                read_only: Some(true),
                sub_path: s("app"),
                ..Default::default()
            },
        ],
        liveness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                http_get: Some(core::HttpGetAction {
                    path: s("/healthz"),
                    port: string_("http"),
                    scheme: s("HTTP"),
                    http_headers: vec![core::HttpHeader {
                        name: s("X-Probe"),
                        value: s("1"),
                    }],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            initial_delay_seconds: Some(5),
            period_seconds: Some(10),
            ..Default::default()
        }),
        readiness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                tcp_socket: Some(core::TcpSocketAction {
                    port: int(80),
                    host: None,
                }),
                ..Default::default()
            }),
            failure_threshold: Some(3),
            ..Default::default()
        }),
        startup_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                grpc: Some(core::GrpcAction {
                    port: Some(9000),
                    service: s("health"),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        lifecycle: Some(core::Lifecycle {
            pre_stop: Some(core::LifecycleHandler {
                exec: Some(core::ExecAction {
                    command: strings(&["sh", "-c", "sleep 5"]),
                }),
                ..Default::default()
            }),
            post_start: Some(core::LifecycleHandler {
                sleep: Some(core::SleepAction { seconds: Some(2) }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        termination_message_path: s("/dev/termination-log"),
        termination_message_policy: s("File"),
        image_pull_policy: s("IfNotPresent"),
        security_context: Some(core::SecurityContext {
            capabilities: Some(core::Capabilities {
                add: strings(&["NET_BIND_SERVICE"]),
                drop: strings(&["ALL"]),
            }),
            privileged: Some(false),
            run_as_user: Some(1000),
            run_as_non_root: Some(true),
            read_only_root_filesystem: Some(true),
            allow_privilege_escalation: Some(false),
            ..Default::default()
        }),
        stdin: Some(true),
        stdin_once: Some(true),
        tty: Some(true),
        ..Default::default()
    };
    let sidecar = core::Container {
        ports: vec![core::ContainerPort {
            container_port: Some(9090),
            ..Default::default()
        }],
        ..container("metrics", "prom/statsd-exporter")
    };
    let deployment = apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: s("web"),
            namespace: s("prod"),
            labels: labels.clone(),
            annotations: smap(&[("team", "edge"), ("kubernetes.io/change-cause", "init")]),
            creation_timestamp: time(T0),
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(3),
            selector: Some(meta::LabelSelector {
                match_labels: labels.clone(),
                match_expressions: vec![meta::LabelSelectorRequirement {
                    key: s("tier"),
                    operator: s("In"),
                    values: strings(&["front", "edge"]),
                }],
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: labels.clone(),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    volumes: vec![
                        core::Volume {
                            name: s("cache"),
                            volume_source: Some(core::VolumeSource {
                                empty_dir: Some(core::EmptyDirVolumeSource {
                                    medium: s("Memory"),
                                    size_limit: Some(q("64Mi")),
                                }),
                                ..Default::default()
                            }),
                        },
                        core::Volume {
                            name: s("cfg"),
                            volume_source: Some(core::VolumeSource {
                                config_map: Some(core::ConfigMapVolumeSource {
                                    local_object_reference: Some(core::LocalObjectReference {
                                        name: s("cfg"),
                                    }),
                                    items: vec![core::KeyToPath {
                                        key: s("app.conf"),
                                        path: s("app/app.conf"),
                                        mode: Some(0o644),
                                    }],
                                    default_mode: Some(0o420),
                                    optional: None,
                                }),
                                ..Default::default()
                            }),
                        },
                        core::Volume {
                            name: s("tls"),
                            volume_source: Some(core::VolumeSource {
                                secret: Some(core::SecretVolumeSource {
                                    secret_name: s("tls"),
                                    ..Default::default()
                                }),
                                ..Default::default()
                            }),
                        },
                        core::Volume {
                            name: s("logs"),
                            volume_source: Some(core::VolumeSource {
                                host_path: Some(core::HostPathVolumeSource {
                                    path: s("/var/log"),
                                    r#type: s("Directory"),
                                }),
                                ..Default::default()
                            }),
                        },
                        core::Volume {
                            name: s("data"),
                            volume_source: Some(core::VolumeSource {
                                persistent_volume_claim: Some(
                                    core::PersistentVolumeClaimVolumeSource {
                                        claim_name: s("data"),
                                        read_only: Some(false),
                                    },
                                ),
                                ..Default::default()
                            }),
                        },
                    ],
                    init_containers: vec![core::Container {
                        command: strings(&["sh", "-c", "true"]),
                        ..container("init", "busybox")
                    }],
                    containers: vec![web, sidecar],
                    restart_policy: s("Always"),
                    termination_grace_period_seconds: Some(30),
                    dns_policy: s("ClusterFirst"),
                    node_selector: smap(&[("kubernetes.io/os", "linux")]),
                    service_account_name: s("web"),
                    service_account: s("web"),
                    security_context: Some(core::PodSecurityContext {
                        run_as_user: Some(1000),
                        fs_group: Some(2000),
                        supplemental_groups: vec![3000, 4000],
                        ..Default::default()
                    }),
                    image_pull_secrets: vec![core::LocalObjectReference { name: s("regcred") }],
                    hostname: s("web"),
                    subdomain: s("svc"),
                    affinity: Some(core::Affinity {
                        node_affinity: Some(core::NodeAffinity {
                            required_during_scheduling_ignored_during_execution: Some(
                                core::NodeSelector {
                                    node_selector_terms: vec![core::NodeSelectorTerm {
                                        match_expressions: vec![core::NodeSelectorRequirement {
                                            key: s("zone"),
                                            operator: s("In"),
                                            values: strings(&["a"]),
                                        }],
                                        match_fields: vec![],
                                    }],
                                },
                            ),
                            preferred_during_scheduling_ignored_during_execution: vec![],
                        }),
                        ..Default::default()
                    }),
                    scheduler_name: s("default-scheduler"),
                    tolerations: vec![core::Toleration {
                        key: s("dedicated"),
                        operator: s("Equal"),
                        value: s("web"),
                        effect: s("NoExecute"),
                        toleration_seconds: Some(60),
                    }],
                    priority_class_name: s("high"),
                    priority: Some(1000),
                    enable_service_links: Some(false),
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(apps::RollingUpdateDeployment {
                    max_unavailable: int(1),
                    max_surge: string_("25%"),
                }),
            }),
            min_ready_seconds: Some(5),
            revision_history_limit: Some(10),
            progress_deadline_seconds: Some(600),
            ..Default::default()
        }),
        status: Some(apps::DeploymentStatus::default()),
    };
    let got = decode(&deployment);
    let expected = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "prod",
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "web"},
            "annotations": {"kubernetes.io/change-cause": "init", "team": "edge"}
        },
        "spec": {
            "replicas": 3,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front", "edge"]}]
            },
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "volumes": [
                        {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
                        {"name": "cfg", "configMap": {
                            "name": "cfg",
                            "items": [{"key": "app.conf", "path": "app/app.conf", "mode": 420}],
                            "defaultMode": 272
                        }},
                        {"name": "tls", "secret": {"secretName": "tls"}},
                        {"name": "logs", "hostPath": {"path": "/var/log", "type": "Directory"}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
                    ],
                    "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
                    "containers": [
                        {
                            "name": "web",
                            "image": "nginx:1.27",
                            "command": ["nginx"],
                            "args": ["-g", "daemon off;"],
                            "workingDir": "/srv",
                            "ports": [
                                {"name": "http", "containerPort": 80, "protocol": "TCP"},
                                {"hostPort": 8443, "containerPort": 443, "hostIP": "0.0.0.0"}
                            ],
                            "envFrom": [{"prefix": "APP_", "configMapRef": {"name": "cfg"}}],
                            "env": [
                                {"name": "MODE", "value": "prod"},
                                {"name": "CFG", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode", "optional": true}}},
                                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                                {"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
                                {"name": "MEM", "valueFrom": {"resourceFieldRef": {
                                    "containerName": "web", "resource": "limits.memory", "divisor": "1Mi"
                                }}}
                            ],
                            "resources": {
                                "limits": {"cpu": "500m", "memory": "128Mi"},
                                "requests": {"cpu": "250m"},
                                "claims": [{"name": "gpu"}]
                            },
                            "volumeMounts": [
                                {"name": "cache", "mountPath": "/cache"},
                                {"name": "cfg", "readOnly": true, "mountPath": "/etc/cfg", "subPath": "app"}
                            ],
                            "livenessProbe": {
                                "httpGet": {
                                    "path": "/healthz",
                                    "port": "http",
                                    "scheme": "HTTP",
                                    "httpHeaders": [{"name": "X-Probe", "value": "1"}]
                                },
                                "initialDelaySeconds": 5,
                                "periodSeconds": 10
                            },
                            "readinessProbe": {"tcpSocket": {"port": 80}, "failureThreshold": 3},
                            "startupProbe": {"grpc": {"port": 9000, "service": "health"}},
                            "lifecycle": {
                                "postStart": {"sleep": {"seconds": 2}},
                                "preStop": {"exec": {"command": ["sh", "-c", "sleep 5"]}}
                            },
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "IfNotPresent",
                            "securityContext": {
                                "capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]},
                                "privileged": false,
                                "runAsUser": 1000,
                                "runAsNonRoot": true,
                                "readOnlyRootFilesystem": true,
                                "allowPrivilegeEscalation": false
                            },
                            "stdin": true,
                            "stdinOnce": true,
                            "tty": true
                        },
                        {"name": "metrics", "image": "prom/statsd-exporter", "ports": [{"containerPort": 9090}]}
                    ],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "nodeSelector": {"kubernetes.io/os": "linux"},
                    "serviceAccountName": "web",
                    "serviceAccount": "web",
                    "securityContext": {"runAsUser": 1000, "supplementalGroups": [3000, 4000], "fsGroup": 2000},
                    "imagePullSecrets": [{"name": "regcred"}],
                    "hostname": "web",
                    "subdomain": "svc",
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
                    }}},
                    "schedulerName": "default-scheduler",
                    "tolerations": [{
                        "key": "dedicated", "operator": "Equal", "value": "web", "effect": "NoExecute", "tolerationSeconds": 60
                    }],
                    "priorityClassName": "high",
                    "priority": 1000,
                    "enableServiceLinks": false
                }
            },
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": "25%"}},
            "minReadySeconds": 5,
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {}
    });
    assert_eq!(got, expected);
    check_openapi::<oa::apps::v1::Deployment>(&got);
}

/// Go writes every non-pointer field, zero or not. Zero `omitempty` scalars must vanish, zero
/// pointers (`replicas: 0`, `privileged: false`) must stay, zero time is null, and a field
/// without `omitempty` (container `name`) stays even when empty.
#[test]
fn go_style_zero_values() {
    let deployment = apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: s("zero"),
            generate_name: s(""),
            namespace: s(""),
            self_link: s(""),
            uid: s(""),
            resource_version: s(""),
            generation: Some(0),
            creation_timestamp: Some(meta::Time::default()),
            deletion_timestamp: Some(meta::Time {
                seconds: Some(-62_135_596_800),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector::default()),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    name: s(""),
                    creation_timestamp: Some(meta::Time::default()),
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: s(""),
                        image: s(""),
                        working_dir: s(""),
                        resources: Some(core::ResourceRequirements::default()),
                        security_context: Some(core::SecurityContext {
                            privileged: Some(false),
                            ..Default::default()
                        }),
                        stdin: Some(false),
                        ..Default::default()
                    }],
                    host_network: Some(false),
                    restart_policy: s(""),
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::DeploymentStrategy::default()),
            min_ready_seconds: Some(0),
            paused: Some(false),
            progress_deadline_seconds: Some(0),
            ..Default::default()
        }),
        status: Some(apps::DeploymentStatus {
            replicas: Some(0),
            observed_generation: Some(0),
            ..Default::default()
        }),
    };
    let got = decode(&deployment);
    assert_eq!(
        got,
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "zero", "creationTimestamp": null, "deletionTimestamp": null},
            "spec": {
                "replicas": 0,
                "selector": {},
                "template": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"containers": [{"name": "", "resources": {}, "securityContext": {"privileged": false}}]}
                },
                "strategy": {},
                "progressDeadlineSeconds": 0
            },
            "status": {}
        })
    );
}

#[test]
fn service_types_and_int_or_string_target_ports() {
    let service = core::Service {
        metadata: Some(meta::ObjectMeta {
            name: s("web"),
            labels: smap(&[("app", "web")]),
            ..Default::default()
        }),
        spec: Some(core::ServiceSpec {
            ports: vec![
                core::ServicePort {
                    name: s("80-8080"),
                    protocol: s("TCP"),
                    port: Some(80),
                    target_port: int(8080),
                    node_port: Some(30080),
                    ..Default::default()
                },
                core::ServicePort {
                    name: s("https"),
                    protocol: s("TCP"),
                    app_protocol: s("https"),
                    port: Some(443),
                    target_port: string_("https"),
                    ..Default::default()
                },
            ],
            selector: smap(&[("app", "web")]),
            cluster_ip: s("10.0.0.10"),
            cluster_ips: strings(&["10.0.0.10", "fd00::10"]),
            r#type: s("LoadBalancer"),
            external_ips: strings(&["192.0.2.1"]),
            session_affinity: s("None"),
            load_balancer_source_ranges: strings(&["10.0.0.0/8"]),
            external_traffic_policy: s("Local"),
            health_check_node_port: Some(32000),
            ip_families: strings(&["IPv4", "IPv6"]),
            ip_family_policy: s("PreferDualStack"),
            allocate_load_balancer_node_ports: Some(false),
            internal_traffic_policy: s("Cluster"),
            ..Default::default()
        }),
        status: Some(core::ServiceStatus::default()),
    };
    let got = decode(&service);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "ports": [
                    {"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080, "nodePort": 30080},
                    {"name": "https", "protocol": "TCP", "appProtocol": "https", "port": 443, "targetPort": "https"}
                ],
                "selector": {"app": "web"},
                "clusterIP": "10.0.0.10",
                "clusterIPs": ["10.0.0.10", "fd00::10"],
                "type": "LoadBalancer",
                "externalIPs": ["192.0.2.1"],
                "sessionAffinity": "None",
                "loadBalancerSourceRanges": ["10.0.0.0/8"],
                "externalTrafficPolicy": "Local",
                "healthCheckNodePort": 32000,
                "ipFamilies": ["IPv4", "IPv6"],
                "ipFamilyPolicy": "PreferDualStack",
                "allocateLoadBalancerNodePorts": false,
                "internalTrafficPolicy": "Cluster"
            },
            "status": {}
        })
    );
    check_openapi::<oa::core::v1::Service>(&got);

    let external = core::Service {
        metadata: object_meta("ext"),
        spec: Some(core::ServiceSpec {
            r#type: s("ExternalName"),
            external_name: s("example.com"),
            ..Default::default()
        }),
        status: None,
    };
    let got = decode(&external);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "ext"},
               "spec": {"type": "ExternalName", "externalName": "example.com"}})
    );
    check_openapi::<oa::core::v1::Service>(&got);
}

#[test]
fn secret_bytes_are_base64() {
    let secret = core::Secret {
        metadata: Some(meta::ObjectMeta {
            name: s("creds"),
            namespace: s("default"),
            ..Default::default()
        }),
        immutable: Some(false),
        data: [
            ("password".to_owned(), b"s3cr\xff\x00t".to_vec()),
            ("empty".to_owned(), Vec::new()),
        ]
        .into(),
        string_data: smap(&[("user", "admin")]),
        r#type: s("Opaque"),
    };
    let got = decode(&secret);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default"},
            "immutable": false,
            "data": {"empty": "", "password": "czNjcv8AdA=="},
            "stringData": {"user": "admin"},
            "type": "Opaque"
        })
    );
    check_openapi::<oa::core::v1::Secret>(&got);

    let tls = core::Secret {
        metadata: object_meta("tls"),
        data: [
            ("tls.crt".to_owned(), b"CERT".to_vec()),
            ("tls.key".to_owned(), b"KEY".to_vec()),
        ]
        .into(),
        r#type: s("kubernetes.io/tls"),
        ..Default::default()
    };
    let got = decode(&tls);
    assert_eq!(
        got["data"],
        json!({"tls.crt": "Q0VSVA==", "tls.key": "S0VZ"})
    );
    assert_eq!(got["type"], "kubernetes.io/tls");
    check_openapi::<oa::core::v1::Secret>(&got);
}

#[test]
fn configmap_namespace_and_serviceaccount() {
    let cm = core::ConfigMap {
        metadata: object_meta("cfg"),
        immutable: Some(true),
        data: smap(&[("a", "1"), ("b", "")]),
        binary_data: [("blob".to_owned(), vec![0u8, 1, 2])].into(),
    };
    let got = decode(&cm);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "immutable": true,
               "data": {"a": "1", "b": ""}, "binaryData": {"blob": "AAEC"}})
    );
    check_openapi::<oa::core::v1::ConfigMap>(&got);

    let ns = core::Namespace {
        metadata: object_meta("team-a"),
        spec: Some(core::NamespaceSpec {
            finalizers: strings(&["kubernetes"]),
        }),
        status: Some(core::NamespaceStatus::default()),
    };
    let got = decode(&ns);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"},
               "spec": {"finalizers": ["kubernetes"]}, "status": {}})
    );
    check_openapi::<oa::core::v1::Namespace>(&got);

    let sa = core::ServiceAccount {
        metadata: object_meta("builder"),
        secrets: vec![core::ObjectReference {
            kind: s("Secret"),
            name: s("builder-token"),
            ..Default::default()
        }],
        image_pull_secrets: vec![core::LocalObjectReference { name: s("regcred") }],
        automount_service_account_token: Some(false),
    };
    let got = decode(&sa);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "builder"},
               "secrets": [{"kind": "Secret", "name": "builder-token"}],
               "imagePullSecrets": [{"name": "regcred"}],
               "automountServiceAccountToken": false})
    );
    check_openapi::<oa::core::v1::ServiceAccount>(&got);
}

#[test]
fn resource_quota_quantities() {
    let quota = core::ResourceQuota {
        metadata: object_meta("compute"),
        spec: Some(core::ResourceQuotaSpec {
            hard: qmap(&[
                ("cpu", "4"),
                ("memory", "8Gi"),
                ("pods", "10"),
                ("requests.nvidia.com/gpu", "1"),
            ]),
            scopes: strings(&["NotTerminating"]),
            scope_selector: Some(core::ScopeSelector {
                match_expressions: vec![core::ScopedResourceSelectorRequirement {
                    scope_name: s("PriorityClass"),
                    operator: s("In"),
                    values: strings(&["high"]),
                }],
            }),
        }),
        status: Some(core::ResourceQuotaStatus {
            hard: qmap(&[("cpu", "4")]),
            used: qmap(&[("cpu", "1500m")]),
        }),
    };
    let got = decode(&quota);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "compute"},
            "spec": {
                "hard": {"cpu": "4", "memory": "8Gi", "pods": "10", "requests.nvidia.com/gpu": "1"},
                "scopes": ["NotTerminating"],
                "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}
            },
            "status": {"hard": {"cpu": "4"}, "used": {"cpu": "1500m"}}
        })
    );
    check_openapi::<oa::core::v1::ResourceQuota>(&got);
}

#[test]
fn rbac_objects() {
    let rule = rbac::PolicyRule {
        verbs: strings(&["get", "list"]),
        api_groups: strings(&["", "apps"]),
        resources: strings(&["pods", "deployments"]),
        resource_names: strings(&["web"]),
        non_resource_ur_ls: vec![],
    };
    let role = rbac::Role {
        metadata: object_meta("reader"),
        rules: vec![rule.clone()],
    };
    let got = decode(&role);
    assert_eq!(
        got,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
               "rules": [{"verbs": ["get", "list"], "apiGroups": ["", "apps"], "resources": ["pods", "deployments"],
                          "resourceNames": ["web"]}]})
    );
    check_openapi::<oa::rbac::v1::Role>(&got);

    let cluster_role = rbac::ClusterRole {
        metadata: object_meta("metrics"),
        rules: vec![rbac::PolicyRule {
            verbs: strings(&["get"]),
            non_resource_ur_ls: strings(&["/metrics", "/healthz"]),
            ..Default::default()
        }],
        aggregation_rule: Some(rbac::AggregationRule {
            cluster_role_selectors: vec![meta::LabelSelector {
                match_labels: smap(&[("rbac.example.com/aggregate", "true")]),
                ..Default::default()
            }],
        }),
    };
    let got = decode(&cluster_role);
    assert_eq!(
        got,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "metrics"},
               "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/healthz"]}],
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]}})
    );
    check_openapi::<oa::rbac::v1::ClusterRole>(&got);

    let subjects = vec![
        rbac::Subject {
            kind: s("User"),
            api_group: s("rbac.authorization.k8s.io"),
            name: s("alice"),
            namespace: None,
        },
        rbac::Subject {
            kind: s("ServiceAccount"),
            api_group: s(""),
            name: s("builder"),
            namespace: s("ci"),
        },
    ];
    let binding = rbac::RoleBinding {
        metadata: object_meta("read"),
        subjects: subjects.clone(),
        role_ref: Some(rbac::RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("Role"),
            name: s("reader"),
        }),
    };
    let expected_subjects = json!([
        {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"}
    ]);
    let got = decode(&binding);
    assert_eq!(
        got,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "read"},
               "subjects": expected_subjects,
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"}})
    );
    check_openapi::<oa::rbac::v1::RoleBinding>(&got);

    let cluster_binding = rbac::ClusterRoleBinding {
        metadata: object_meta("read-all"),
        subjects,
        role_ref: Some(rbac::RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("ClusterRole"),
            name: s("view"),
        }),
    };
    let got = decode(&cluster_binding);
    assert_eq!(got["kind"], "ClusterRoleBinding");
    assert_eq!(got["subjects"], expected_subjects);
    assert_eq!(
        got["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"})
    );
    check_openapi::<oa::rbac::v1::ClusterRoleBinding>(&got);
}

fn job_template() -> core::PodTemplateSpec {
    core::PodTemplateSpec {
        metadata: Some(meta::ObjectMeta {
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        }),
        spec: Some(core::PodSpec {
            containers: vec![core::Container {
                command: strings(&["date"]),
                resources: Some(core::ResourceRequirements::default()),
                ..container("pi", "perl")
            }],
            restart_policy: s("OnFailure"),
            ..Default::default()
        }),
    }
}

fn job_template_json() -> Value {
    json!({
        "metadata": {"creationTimestamp": null},
        "spec": {"containers": [{"name": "pi", "image": "perl", "command": ["date"], "resources": {}}],
                 "restartPolicy": "OnFailure"}
    })
}

#[test]
fn job_and_cronjob() {
    let job = batch::Job {
        metadata: object_meta("pi"),
        spec: Some(batch::JobSpec {
            parallelism: Some(2),
            completions: Some(4),
            active_deadline_seconds: Some(600),
            backoff_limit: Some(0),
            template: Some(job_template()),
            ttl_seconds_after_finished: Some(100),
            completion_mode: s("NonIndexed"),
            suspend: Some(false),
            ..Default::default()
        }),
        status: Some(batch::JobStatus {
            start_time: time(T0),
            active: Some(1),
            ..Default::default()
        }),
    };
    let got = decode(&job);
    assert_eq!(
        got,
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "pi"},
            "spec": {
                "parallelism": 2,
                "completions": 4,
                "activeDeadlineSeconds": 600,
                "backoffLimit": 0,
                "template": job_template_json(),
                "ttlSecondsAfterFinished": 100,
                "completionMode": "NonIndexed",
                "suspend": false
            },
            "status": {"startTime": "2024-01-02T03:04:05Z", "active": 1}
        })
    );
    check_openapi::<oa::batch::v1::Job>(&got);

    let cron = batch::CronJob {
        metadata: object_meta("nightly"),
        spec: Some(batch::CronJobSpec {
            schedule: s("0 3 * * *"),
            time_zone: s("Etc/UTC"),
            starting_deadline_seconds: Some(30),
            concurrency_policy: s("Forbid"),
            suspend: Some(true),
            job_template: Some(batch::JobTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    name: s("nightly"),
                    ..Default::default()
                }),
                spec: Some(batch::JobSpec {
                    template: Some(job_template()),
                    ..Default::default()
                }),
            }),
            successful_jobs_history_limit: Some(3),
            failed_jobs_history_limit: Some(1),
        }),
        status: Some(batch::CronJobStatus {
            active: vec![core::ObjectReference {
                kind: s("Job"),
                name: s("nightly-1"),
                ..Default::default()
            }],
            last_schedule_time: time(T0),
            last_successful_time: None,
        }),
    };
    let got = decode(&cron);
    assert_eq!(
        got,
        json!({
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": {"name": "nightly"},
            "spec": {
                "schedule": "0 3 * * *",
                "timeZone": "Etc/UTC",
                "startingDeadlineSeconds": 30,
                "concurrencyPolicy": "Forbid",
                "suspend": true,
                "jobTemplate": {"metadata": {"name": "nightly"}, "spec": {"template": job_template_json()}},
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 1
            },
            "status": {"active": [{"kind": "Job", "name": "nightly-1"}], "lastScheduleTime": "2024-01-02T03:04:05Z"}
        })
    );
    check_openapi::<oa::batch::v1::CronJob>(&got);
}

#[test]
fn pdb_priorityclass_and_ingress() {
    let pdb = policy::PodDisruptionBudget {
        metadata: object_meta("web"),
        spec: Some(policy::PodDisruptionBudgetSpec {
            min_available: string_("50%"),
            selector: Some(meta::LabelSelector {
                match_labels: smap(&[("app", "web")]),
                ..Default::default()
            }),
            max_unavailable: None,
            unhealthy_pod_eviction_policy: s("AlwaysAllow"),
        }),
        status: Some(policy::PodDisruptionBudgetStatus {
            disrupted_pods: [(
                "web-0".to_owned(),
                meta::Time {
                    seconds: Some(T0),
                    nanos: Some(0),
                },
            )]
            .into(),
            ..Default::default()
        }),
    };
    let got = decode(&pdb);
    assert_eq!(
        got,
        json!({
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"},
            "status": {"disruptedPods": {"web-0": "2024-01-02T03:04:05Z"}}
        })
    );
    // k8s-openapi requires the status counters that Go would always write; add them to compare.
    let mut with_counters = got.clone();
    for key in [
        "currentHealthy",
        "desiredHealthy",
        "disruptionsAllowed",
        "expectedPods",
    ] {
        with_counters["status"][key] = json!(0);
    }
    check_openapi::<oa::policy::v1::PodDisruptionBudget>(&with_counters);

    let pdb_int = policy::PodDisruptionBudget {
        metadata: object_meta("db"),
        spec: Some(policy::PodDisruptionBudgetSpec {
            max_unavailable: int(1),
            ..Default::default()
        }),
        status: None,
    };
    assert_eq!(decode(&pdb_int)["spec"], json!({"maxUnavailable": 1}));

    let pc = scheduling::PriorityClass {
        metadata: object_meta("high"),
        value: Some(1_000_000),
        global_default: Some(false),
        description: s("important"),
        preemption_policy: s("Never"),
    };
    let got = decode(&pc);
    assert_eq!(
        got,
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
               "value": 1_000_000, "description": "important", "preemptionPolicy": "Never"})
    );
    check_openapi::<oa::scheduling::v1::PriorityClass>(&got);

    let backend =
        |name: &str, port: Option<networking::ServiceBackendPort>| networking::IngressBackend {
            service: Some(networking::IngressServiceBackend {
                name: s(name),
                port,
            }),
            resource: None,
        };
    let ingress = networking::Ingress {
        metadata: Some(meta::ObjectMeta {
            name: s("web"),
            annotations: smap(&[("nginx.ingress.kubernetes.io/rewrite-target", "/")]),
            ..Default::default()
        }),
        spec: Some(networking::IngressSpec {
            ingress_class_name: s("nginx"),
            default_backend: Some(backend(
                "default",
                Some(networking::ServiceBackendPort {
                    name: s("http"),
                    number: None,
                }),
            )),
            tls: vec![networking::IngressTls {
                hosts: strings(&["foo.com"]),
                secret_name: s("foo-tls"),
            }],
            rules: vec![networking::IngressRule {
                host: s("foo.com"),
                ingress_rule_value: Some(networking::IngressRuleValue {
                    http: Some(networking::HttpIngressRuleValue {
                        paths: vec![networking::HttpIngressPath {
                            path: s("/api"),
                            path_type: s("Prefix"),
                            backend: Some(backend(
                                "api",
                                Some(networking::ServiceBackendPort {
                                    name: None,
                                    number: Some(8080),
                                }),
                            )),
                        }],
                    }),
                }),
            }],
        }),
        status: Some(networking::IngressStatus::default()),
    };
    let got = decode(&ingress);
    assert_eq!(
        got,
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": {"name": "web", "annotations": {"nginx.ingress.kubernetes.io/rewrite-target": "/"}},
            "spec": {
                "ingressClassName": "nginx",
                "defaultBackend": {"service": {"name": "default", "port": {"name": "http"}}},
                "tls": [{"hosts": ["foo.com"], "secretName": "foo-tls"}],
                "rules": [{"host": "foo.com", "http": {"paths": [
                    {"path": "/api", "pathType": "Prefix", "backend": {"service": {"name": "api", "port": {"number": 8080}}}}
                ]}}]
            },
            "status": {}
        })
    );
    check_openapi::<oa::networking::v1::Ingress>(&got);
}

#[test]
fn delete_options_and_scale() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("1234"),
            resource_version: None,
        }),
        propagation_policy: s("Foreground"),
        dry_run: strings(&["All"]),
        ..Default::default()
    };
    let expected = |api_version: &str| {
        json!({"apiVersion": api_version, "kind": "DeleteOptions", "gracePeriodSeconds": 0,
               "preconditions": {"uid": "1234"}, "propagationPolicy": "Foreground", "dryRun": ["All"]})
    };
    for api_version in ["meta.k8s.io/v1", "v1", "apps/v1"] {
        let got = decode_object(&envelope(
            api_version,
            "DeleteOptions",
            opts.encode_to_vec(),
        ))
        .unwrap();
        assert_eq!(got, expected(api_version));
    }
    let got = decode_object(&envelope("v1", "DeleteOptions", opts.encode_to_vec())).unwrap();
    check_openapi::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>(&got);

    let scale = k8s_pb::api::autoscaling::v1::Scale {
        metadata: Some(meta::ObjectMeta {
            name: s("web"),
            namespace: s("prod"),
            resource_version: s("42"),
            ..Default::default()
        }),
        spec: Some(k8s_pb::api::autoscaling::v1::ScaleSpec { replicas: Some(0) }),
        status: Some(k8s_pb::api::autoscaling::v1::ScaleStatus {
            replicas: Some(3),
            selector: s("app=web"),
        }),
    };
    let got = decode_object(&envelope("autoscaling/v1", "Scale", scale.encode_to_vec())).unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
               "metadata": {"name": "web", "namespace": "prod", "resourceVersion": "42"},
               // ScaleSpec.replicas is a non-pointer `omitempty` int32: Go's JSON drops a zero.
               "spec": {}, "status": {"replicas": 3, "selector": "app=web"}})
    );
    check_openapi::<oa::autoscaling::v1::Scale>(&got);
}

#[test]
fn packed_and_unpacked_repeated_scalars() {
    // PodSecurityContext.supplementalGroups (tag 4, int64): prost writes it unpacked; a
    // packed writer would emit one length-delimited run. Both must decode the same.
    let unpacked = core::PodSecurityContext {
        supplemental_groups: vec![1, 300, -1],
        ..Default::default()
    }
    .encode_to_vec();
    let mut run = Vec::new();
    for v in [1i64, 300, -1] {
        prost::encoding::encode_varint(v as u64, &mut run);
    }
    let mut packed = vec![(4 << 3) | 2];
    prost::encoding::encode_varint(run.len() as u64, &mut packed);
    packed.extend(run);
    for buf in [unpacked, packed] {
        let got = crate::decode::decode_message(
            &crate::generated_table::CORE_V1_POD_SECURITY_CONTEXT,
            &buf,
            0,
        )
        .unwrap();
        assert_eq!(
            Value::Object(got),
            json!({"supplementalGroups": [1, 300, -1]})
        );
    }
}

#[test]
fn repeated_message_field_occurrences_merge() {
    // Protobuf merges a non-repeated message field that appears twice.
    let first = core::ConfigMap {
        metadata: object_meta("cfg"),
        ..Default::default()
    }
    .encode_to_vec();
    let second = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            labels: smap(&[("a", "b")]),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    let got = decode_object(&envelope("v1", "ConfigMap", [first, second].concat())).unwrap();
    assert_eq!(
        got["metadata"],
        json!({"name": "cfg", "labels": {"a": "b"}})
    );
}

#[test]
fn time_edge_cases() {
    let at = |t: meta::Time| {
        let cm = core::ConfigMap {
            metadata: Some(meta::ObjectMeta {
                creation_timestamp: Some(t),
                ..Default::default()
            }),
            ..Default::default()
        };
        decode_object(&envelope("v1", "ConfigMap", cm.encode_to_vec()))
            .map(|v| v["metadata"]["creationTimestamp"].clone())
    };
    assert_eq!(
        at(meta::Time {
            seconds: Some(0),
            nanos: Some(0)
        })
        .unwrap(),
        json!("1970-01-01T00:00:00Z")
    );
    // Go's Time drops nanos on both the wire and in JSON.
    assert_eq!(
        at(meta::Time {
            seconds: Some(T0),
            nanos: Some(999)
        })
        .unwrap(),
        json!("2024-01-02T03:04:05Z")
    );
    assert_eq!(
        at(meta::Time {
            seconds: Some(-62_135_596_800),
            nanos: None
        })
        .unwrap(),
        Value::Null
    );
    assert!(matches!(
        at(meta::Time {
            seconds: Some(i64::MAX),
            nanos: None
        }),
        Err(ProtobufError::InvalidValue { .. })
    ));
}

#[test]
fn every_supported_kind_decodes_an_empty_object() {
    let kinds = supported_kinds();
    assert!(kinds.contains(&("apps/v1", "Deployment")));
    assert!(kinds.contains(&("meta.k8s.io/v1", "DeleteOptions")));
    for (api_version, kind) in kinds {
        let got = decode_object(&envelope(api_version, kind, Vec::new())).unwrap();
        assert_eq!(got, json!({"apiVersion": api_version, "kind": kind}));
    }
}

fn with_extra_field(raw: Vec<u8>, tag: u32) -> Vec<u8> {
    let mut out = raw;
    prost::encoding::encode_key(tag, prost::encoding::WireType::Varint, &mut out);
    prost::encoding::encode_varint(1, &mut out);
    out
}

#[test]
fn unknown_tags_are_errors_naming_message_and_tag() {
    // Top level.
    let raw = with_extra_field(
        core::Namespace {
            metadata: object_meta("x"),
            ..Default::default()
        }
        .encode_to_vec(),
        9,
    );
    match decode_object(&envelope("v1", "Namespace", raw)) {
        Err(ProtobufError::UnknownField {
            message,
            tag: 9,
            wire_type: 0,
        }) => {
            assert_eq!(message, "k8s.io.api.core.v1.Namespace");
        }
        other => panic!("unexpected {other:?}"),
    }
    // Deep inside a container.
    let bad_container = with_extra_field(container("c", "img").encode_to_vec(), 99);
    let mut spec = Vec::new();
    prost::encoding::bytes::encode(2, &bad_container, &mut spec); // PodSpec.containers
    let mut pod_raw = Vec::new();
    prost::encoding::bytes::encode(2, &spec, &mut pod_raw); // Pod.spec
    let err = decode_object(&envelope("v1", "Pod", pod_raw)).unwrap_err();
    assert!(
        matches!(&err, ProtobufError::UnknownField { message, tag: 99, .. } if message == "k8s.io.api.core.v1.Container")
    );
    assert!(err.to_string().contains("tag 99"), "{err}");
    assert!(
        err.to_string().contains("k8s.io.api.core.v1.Container"),
        "{err}"
    );
    // Inside a special type.
    let mut quantity = q("1").encode_to_vec();
    quantity = with_extra_field(quantity, 2);
    let mut entry = Vec::new();
    prost::encoding::string::encode(1, &"cpu".to_owned(), &mut entry);
    prost::encoding::bytes::encode(2, &quantity, &mut entry);
    let mut rq_spec = Vec::new();
    prost::encoding::bytes::encode(1, &entry, &mut rq_spec); // ResourceQuotaSpec.hard
    let mut rq = Vec::new();
    prost::encoding::bytes::encode(2, &rq_spec, &mut rq);
    let err = decode_object(&envelope("v1", "ResourceQuota", rq)).unwrap_err();
    assert!(
        matches!(&err, ProtobufError::UnknownField { message, tag: 2, .. }
        if message == "k8s.io.apimachinery.pkg.api.resource.Quantity"),
        "{err:?}"
    );
    // In the envelope itself.
    let mut body = envelope("v1", "Namespace", Vec::new());
    body = with_extra_field(body, 7);
    assert!(matches!(
        decode_object(&body),
        Err(ProtobufError::UnknownField { tag: 7, .. })
    ));
}

#[test]
fn malformed_bodies_are_errors() {
    let ns = core::Namespace {
        metadata: object_meta("truncated"),
        ..Default::default()
    }
    .encode_to_vec();
    let raw_len = ns.len();
    let body = envelope("v1", "Namespace", ns);
    // Envelope field boundaries: after typeMeta, after raw, after contentEncoding (the last
    // two fields are empty strings, two bytes each). Cutting there leaves valid protobuf;
    // cutting anywhere else must be reported as malformed.
    let after_raw = body.len() - 4;
    let boundaries = [after_raw - raw_len - 2, after_raw, after_raw + 2];
    for cut in 5..body.len() {
        let result = decode_object(&body[..cut]);
        if boundaries.contains(&cut) {
            assert!(result.is_ok(), "cut {cut}: {result:?}");
        } else {
            assert!(
                matches!(result, Err(ProtobufError::Malformed { .. })),
                "cut {cut}: {result:?}"
            );
        }
    }
    // A well-formed envelope around a truncated object.
    let mut raw = core::Namespace {
        metadata: object_meta("x"),
        ..Default::default()
    }
    .encode_to_vec();
    raw.pop();
    let err = decode_object(&envelope("v1", "Namespace", raw)).unwrap_err();
    assert!(
        matches!(&err, ProtobufError::Malformed { message, .. } if message == "k8s.io.api.core.v1.Namespace"),
        "{err:?}"
    );

    assert!(matches!(
        decode_object(b""),
        Err(ProtobufError::MissingMagic)
    ));
    assert!(matches!(
        decode_object(b"{\"kind\":\"Namespace\"}"),
        Err(ProtobufError::MissingMagic)
    ));
    assert!(matches!(
        decode_object(&body[4..]),
        Err(ProtobufError::MissingMagic)
    ));
    assert!(matches!(
        decode_object(b"k8s\0"),
        Err(ProtobufError::MissingKind)
    ));

    // Wrong wire type for a known field: ObjectMeta.name (tag 1) as a varint.
    let mut meta_raw = Vec::new();
    prost::encoding::int32::encode(1, &5, &mut meta_raw);
    let mut ns_raw = Vec::new();
    prost::encoding::bytes::encode(1, &meta_raw, &mut ns_raw);
    assert!(matches!(
        decode_object(&envelope("v1", "Namespace", ns_raw)),
        Err(ProtobufError::WireType {
            tag: 1,
            expected: 2,
            found: 0,
            ..
        })
    ));

    // Invalid UTF-8 in a string.
    let mut meta_raw = Vec::new();
    prost::encoding::bytes::encode(1, &vec![0xff, 0xfe], &mut meta_raw);
    let mut ns_raw = Vec::new();
    prost::encoding::bytes::encode(1, &meta_raw, &mut ns_raw);
    assert!(matches!(
        decode_object(&envelope("v1", "Namespace", ns_raw)),
        Err(ProtobufError::InvalidValue { .. })
    ));
}

#[test]
fn envelope_checks() {
    assert!(matches!(
        decode_object(&envelope("apps/v1", "Frobnicator", Vec::new())),
        Err(ProtobufError::UnknownKind { api_version, kind }) if api_version == "apps/v1" && kind == "Frobnicator"
    ));
    // Known kind under the wrong group.
    assert!(matches!(
        decode_object(&envelope("v1", "Deployment", Vec::new())),
        Err(ProtobufError::UnknownKind { .. })
    ));

    let unknown = |encoding: &str, content_type: &str| {
        let u = Unknown {
            type_meta: Some(TypeMeta {
                api_version: s("v1"),
                kind: s("Namespace"),
            }),
            raw: Some(Vec::new()),
            content_encoding: s(encoding),
            content_type: s(content_type),
        };
        [b"k8s\0".to_vec(), u.encode_to_vec()].concat()
    };
    assert!(
        matches!(decode_object(&unknown("gzip", "")), Err(ProtobufError::UnsupportedEncoding(e)) if e == "gzip")
    );
    assert!(matches!(
        decode_object(&unknown("", "application/json")),
        Err(ProtobufError::UnsupportedContentType(_))
    ));
    assert!(decode_object(&unknown("", crate::CONTENT_TYPE)).is_ok());
}

#[test]
fn pod_and_apps_workloads() {
    let pod = core::Pod {
        metadata: object_meta("p"),
        spec: Some(core::PodSpec {
            containers: vec![container("c", "img")],
            host_network: Some(true),
            host_pid: Some(true),
            host_ipc: Some(true),
            node_name: s("node-1"),
            active_deadline_seconds: Some(10),
            ..Default::default()
        }),
        status: Some(core::PodStatus {
            phase: s("Pending"),
            host_ip: s("10.0.0.1"),
            pod_ip: s("10.1.0.1"),
            ..Default::default()
        }),
    };
    let got = decode(&pod);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "c", "image": "img"}], "activeDeadlineSeconds": 10, "nodeName": "node-1",
                        "hostNetwork": true, "hostPID": true, "hostIPC": true},
               "status": {"phase": "Pending", "hostIP": "10.0.0.1", "podIP": "10.1.0.1"}})
    );
    check_openapi::<oa::core::v1::Pod>(&got);

    let sts = apps::StatefulSet {
        metadata: object_meta("db"),
        spec: Some(apps::StatefulSetSpec {
            service_name: s("db"),
            selector: Some(meta::LabelSelector {
                match_labels: smap(&[("app", "db")]),
                ..Default::default()
            }),
            template: Some(job_template()),
            volume_claim_templates: vec![core::PersistentVolumeClaim {
                metadata: object_meta("data"),
                spec: Some(core::PersistentVolumeClaimSpec {
                    access_modes: strings(&["ReadWriteOnce"]),
                    resources: Some(core::VolumeResourceRequirements {
                        requests: qmap(&[("storage", "1Gi")]),
                        ..Default::default()
                    }),
                    storage_class_name: s(""),
                    ..Default::default()
                }),
                status: None,
            }],
            ..Default::default()
        }),
        status: None,
    };
    let got = decode(&sts);
    assert_eq!(
        got["spec"]["volumeClaimTemplates"],
        json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": ""}}])
    );
    // k8s-openapi always writes apiVersion/kind on embedded PersistentVolumeClaims.
    let mut reserialized = got.clone();
    reserialized["spec"]["volumeClaimTemplates"][0]["apiVersion"] = json!("v1");
    reserialized["spec"]["volumeClaimTemplates"][0]["kind"] = json!("PersistentVolumeClaim");
    check_openapi_as::<oa::apps::v1::StatefulSet>(&got, &reserialized);
}

#[test]
fn token_request_and_self_subject_review() {
    use k8s_pb::api::authentication::v1 as authn;
    let request = authn::TokenRequest {
        metadata: object_meta("builder"),
        spec: Some(authn::TokenRequestSpec {
            audiences: strings(&["https://kubernetes.default.svc"]),
            expiration_seconds: Some(3600),
            bound_object_ref: Some(authn::BoundObjectReference {
                kind: s("Pod"),
                api_version: s("v1"),
                name: s("p"),
                u_id: s("abc"),
            }),
        }),
        status: Some(authn::TokenRequestStatus {
            token: s(""),
            expiration_timestamp: Some(meta::Time::default()),
        }),
    };
    let got = decode_object(&envelope(
        "authentication.k8s.io/v1",
        "TokenRequest",
        request.encode_to_vec(),
    ))
    .unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {"name": "builder"},
               "spec": {"audiences": ["https://kubernetes.default.svc"], "expirationSeconds": 3600,
                        "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p", "uid": "abc"}},
               // token has no omitempty in Go, so an empty one stays.
               "status": {"token": "", "expirationTimestamp": null}})
    );

    let review = authn::SelfSubjectReview {
        metadata: Some(meta::ObjectMeta {
            creation_timestamp: Some(meta::Time::default()),
            ..Default::default()
        }),
        status: Some(authn::SelfSubjectReviewStatus {
            user_info: Some(authn::UserInfo {
                username: s("alice"),
                uid: s(""),
                groups: strings(&["dev", "system:authenticated"]),
                extra: [(
                    "scopes".to_owned(),
                    authn::ExtraValue {
                        items: strings(&["a", "b"]),
                    },
                )]
                .into(),
            }),
        }),
    };
    let got = decode_object(&envelope(
        "authentication.k8s.io/v1",
        "SelfSubjectReview",
        review.encode_to_vec(),
    ))
    .unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {"creationTimestamp": null},
               "status": {"userInfo": {"username": "alice", "groups": ["dev", "system:authenticated"],
                                       "extra": {"scopes": ["a", "b"]}}}})
    );
    check_openapi::<oa::authentication::v1::SelfSubjectReview>(&got);
}

/// A CertificateSigningRequest as `kubectl certificate approve` PUTs it to `/approval`: an
/// Approved condition appended, the request bytes base64 in JSON, an empty certificate left out.
#[test]
fn certificate_signing_request_as_kubectl_approves_it() {
    let csr = certificates::CertificateSigningRequest {
        metadata: object_meta("agent-7"),
        spec: Some(certificates::CertificateSigningRequestSpec {
            request: Some(b"-----BEGIN CERTIFICATE REQUEST-----\n".to_vec()),
            signer_name: s("kubernetes.io/kube-apiserver-client"),
            expiration_seconds: Some(86400),
            usages: strings(&["client auth"]),
            username: s("admin"),
            uid: s(""),
            groups: strings(&["system:masters", "system:authenticated"]),
            extra: [(
                "scopes".to_owned(),
                certificates::ExtraValue {
                    items: strings(&["a"]),
                },
            )]
            .into(),
        }),
        status: Some(certificates::CertificateSigningRequestStatus {
            conditions: vec![certificates::CertificateSigningRequestCondition {
                r#type: s("Approved"),
                status: s("True"),
                reason: s("KubectlApprove"),
                message: s("This CSR was approved by kubectl certificate approve."),
                last_update_time: Some(meta::Time {
                    seconds: Some(1_700_000_000),
                    nanos: Some(0),
                }),
                last_transition_time: Some(meta::Time::default()),
            }],
            certificate: Some(Vec::new()),
        }),
    };
    let got = decode_object(&envelope(
        "certificates.k8s.io/v1",
        "CertificateSigningRequest",
        csr.encode_to_vec(),
    ))
    .unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
               "metadata": {"name": "agent-7"},
               "spec": {"request": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K",
                        "signerName": "kubernetes.io/kube-apiserver-client", "expirationSeconds": 86400,
                        "usages": ["client auth"], "username": "admin",
                        "groups": ["system:masters", "system:authenticated"], "extra": {"scopes": ["a"]}},
               "status": {"conditions": [{"type": "Approved", "status": "True", "reason": "KubectlApprove",
                                          "message": "This CSR was approved by kubectl certificate approve.",
                                          "lastUpdateTime": "2023-11-14T22:13:20Z", "lastTransitionTime": null}]}})
    );
    check_openapi::<oa::certificates::v1::CertificateSigningRequest>(&got);
}

/// Structural sanity of the whole table: within each message the field numbers are unique,
/// and the JSON members of the flattened object (inline structs included) are unique.
#[test]
fn table_has_unique_tags_and_json_names() {
    use crate::descriptor::{FieldType, MessageDesc};
    use std::collections::HashSet;

    fn flat_names(desc: &'static MessageDesc, out: &mut Vec<&'static str>) {
        for f in desc.fields {
            match &f.ty {
                FieldType::Inline(inner) => flat_names(inner, out),
                _ => out.push(f.json),
            }
        }
    }
    fn walk(desc: &'static MessageDesc, seen: &mut HashSet<&'static str>) {
        if !seen.insert(desc.name) {
            return;
        }
        let tags: HashSet<u32> = desc.fields.iter().map(|f| f.tag).collect();
        assert_eq!(
            tags.len(),
            desc.fields.len(),
            "duplicate tag in {}",
            desc.name
        );
        let mut names = Vec::new();
        flat_names(desc, &mut names);
        let unique: HashSet<_> = names.iter().collect();
        assert_eq!(
            unique.len(),
            names.len(),
            "duplicate JSON name in {}",
            desc.name
        );
        assert!(
            names.iter().all(|n| !n.is_empty()),
            "empty JSON name in {}",
            desc.name
        );
        for f in desc.fields {
            match &f.ty {
                FieldType::Message(m) | FieldType::Inline(m) => walk(m, seen),
                FieldType::Map(FieldType::Message(m))
                | FieldType::SchemaOrArray(m)
                | FieldType::SchemaOrBool(m)
                | FieldType::SchemaOrStringArray(m)
                | FieldType::Map(
                    FieldType::SchemaOrArray(m)
                    | FieldType::SchemaOrBool(m)
                    | FieldType::SchemaOrStringArray(m),
                ) => walk(m, seen),
                _ => {}
            }
        }
    }
    let mut seen = HashSet::new();
    for (_, _, desc) in crate::generated_table::ROOTS {
        walk(desc, &mut seen);
    }
    assert!(seen.len() > 200, "{}", seen.len());
}

#[test]
fn core_templates_volumes_endpoints_and_nodes() {
    let rc = core::ReplicationController {
        metadata: object_meta("web"),
        spec: Some(core::ReplicationControllerSpec {
            replicas: Some(2),
            selector: smap(&[("app", "web")]),
            template: Some(job_template()),
            ..Default::default()
        }),
        status: None,
    };
    let got = decode(&rc);
    assert_eq!(got["spec"]["replicas"], json!(2));
    assert_eq!(got["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(got["spec"]["template"], job_template_json());
    check_openapi::<oa::core::v1::ReplicationController>(&got);

    let template = core::PodTemplate {
        metadata: object_meta("t"),
        template: Some(job_template()),
    };
    let got = decode(&template);
    assert_eq!(got["template"], job_template_json());
    check_openapi::<oa::core::v1::PodTemplate>(&got);

    let endpoints = core::Endpoints {
        metadata: object_meta("web"),
        subsets: vec![core::EndpointSubset {
            addresses: vec![core::EndpointAddress {
                ip: s("10.0.0.1"),
                node_name: s("node-1"),
                ..Default::default()
            }],
            ports: vec![core::EndpointPort {
                name: s("http"),
                port: Some(80),
                protocol: s("TCP"),
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let got = decode(&endpoints);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
               "subsets": [{"addresses": [{"ip": "10.0.0.1", "nodeName": "node-1"}],
                            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}]})
    );
    check_openapi::<oa::core::v1::Endpoints>(&got);

    let limits = core::LimitRange {
        metadata: object_meta("limits"),
        spec: Some(core::LimitRangeSpec {
            limits: vec![core::LimitRangeItem {
                r#type: s("Container"),
                max: qmap(&[("cpu", "2")]),
                default_request: qmap(&[("memory", "64Mi")]),
                ..Default::default()
            }],
        }),
    };
    let got = decode(&limits);
    assert_eq!(
        got["spec"],
        json!({"limits": [{"type": "Container", "max": {"cpu": "2"}, "defaultRequest": {"memory": "64Mi"}}]})
    );
    check_openapi::<oa::core::v1::LimitRange>(&got);

    let pv = core::PersistentVolume {
        metadata: object_meta("pv1"),
        spec: Some(core::PersistentVolumeSpec {
            capacity: qmap(&[("storage", "5Gi")]),
            persistent_volume_source: Some(core::PersistentVolumeSource {
                nfs: Some(core::NfsVolumeSource {
                    server: s("nfs.example.com"),
                    path: s("/exports"),
                    read_only: Some(true),
                }),
                ..Default::default()
            }),
            access_modes: strings(&["ReadWriteMany"]),
            persistent_volume_reclaim_policy: s("Retain"),
            ..Default::default()
        }),
        status: Some(core::PersistentVolumeStatus {
            phase: s("Available"),
            ..Default::default()
        }),
    };
    let got = decode(&pv);
    assert_eq!(
        got["spec"],
        json!({"capacity": {"storage": "5Gi"}, "nfs": {"server": "nfs.example.com", "path": "/exports", "readOnly": true},
               "accessModes": ["ReadWriteMany"], "persistentVolumeReclaimPolicy": "Retain"})
    );
    check_openapi::<oa::core::v1::PersistentVolume>(&got);

    let node = core::Node {
        metadata: object_meta("node-1"),
        spec: Some(core::NodeSpec {
            pod_cid_rs: strings(&["10.244.0.0/24"]),
            taints: vec![core::Taint {
                key: s("dedicated"),
                value: s("gpu"),
                effect: s("NoSchedule"),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: Some(core::NodeStatus {
            capacity: qmap(&[("cpu", "4"), ("pods", "110")]),
            ..Default::default()
        }),
    };
    let got = decode(&node);
    assert_eq!(got["spec"]["podCIDRs"], json!(["10.244.0.0/24"]));
    assert_eq!(
        got["spec"]["taints"],
        json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    );
    assert_eq!(
        got["status"]["capacity"],
        json!({"cpu": "4", "pods": "110"})
    );
    check_openapi::<oa::core::v1::Node>(&got);
}

#[test]
fn hpa_v1_v2_and_controller_revision() {
    use k8s_pb::api::autoscaling::{v1 as asv1, v2 as asv2};
    let v1 = asv1::HorizontalPodAutoscaler {
        metadata: object_meta("web"),
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
    };
    let got = decode(&v1);
    assert_eq!(
        got,
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"},
                     "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}})
    );
    check_openapi::<oa::autoscaling::v1::HorizontalPodAutoscaler>(&got);

    let v2 = asv2::HorizontalPodAutoscaler {
        metadata: object_meta("web"),
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
    };
    let got = decode(&v2);
    assert_eq!(
        got["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
    check_openapi::<oa::autoscaling::v2::HorizontalPodAutoscaler>(&got);

    // ControllerRevision data is a RawExtension holding JSON: it decodes to the object.
    let cr = apps::ControllerRevision {
        metadata: object_meta("web-1"),
        data: Some(k8s_pb::apimachinery::pkg::runtime::RawExtension {
            raw: Some(br#"{"spec":{"template":{}}}"#.to_vec()),
        }),
        revision: Some(3),
    };
    let got = decode(&cr);
    assert_eq!(
        got,
        json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": "web-1"},
               "data": {"spec": {"template": {}}}, "revision": 3})
    );
    check_openapi::<oa::apps::v1::ControllerRevision>(&got);
}

mod served;

#[test]
fn micro_time_keeps_microseconds() {
    use k8s_pb::api::coordination::v1 as coordination;
    let renew = |t: Option<meta::MicroTime>| {
        let lease = coordination::Lease {
            metadata: object_meta("l"),
            spec: Some(coordination::LeaseSpec {
                renew_time: t,
                ..Default::default()
            }),
        };
        decode_object(&envelope(
            "coordination.k8s.io/v1",
            "Lease",
            lease.encode_to_vec(),
        ))
        .map(|v| v["spec"]["renewTime"].clone())
    };
    let at = |seconds: i64, nanos: i32| {
        renew(Some(meta::MicroTime {
            seconds: Some(seconds),
            nanos: Some(nanos),
        }))
    };
    // Go's RFC3339Micro truncates, it does not round.
    assert_eq!(
        at(T0, 999_999_999).unwrap(),
        json!("2024-01-02T03:04:05.999999Z")
    );
    assert_eq!(at(T0, 0).unwrap(), json!("2024-01-02T03:04:05.000000Z"));
    // time.Unix normalizes nanos outside [0, 1e9) into the seconds.
    assert_eq!(at(T0, -1).unwrap(), json!("2024-01-02T03:04:04.999999Z"));
    assert_eq!(
        at(T0, 1_500_000_000).unwrap(),
        json!("2024-01-02T03:04:06.500000Z")
    );
    // Go's zero time, written or as an empty message, is null; a zero-seconds time with
    // nanos is not Go's zero time.
    assert_eq!(at(-62_135_596_800, 0).unwrap(), Value::Null);
    assert_eq!(
        renew(Some(meta::MicroTime::default())).unwrap(),
        Value::Null
    );
    assert_eq!(
        at(-62_135_596_800, 1_000).unwrap(),
        json!("0001-01-01T00:00:00.000001Z")
    );
    assert!(matches!(
        at(i64::MAX, 999_999_999),
        Err(ProtobufError::InvalidValue { .. })
    ));
    // events.k8s.io Event.eventTime is a non-pointer MicroTime: Go writes its zero value.
    let event = k8s_pb::api::events::v1::Event {
        metadata: object_meta("e"),
        event_time: Some(meta::MicroTime::default()),
        ..Default::default()
    };
    let got = decode_object(&envelope(
        "events.k8s.io/v1",
        "Event",
        event.encode_to_vec(),
    ))
    .unwrap();
    assert_eq!(
        got,
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
               "eventTime": null})
    );
}

/// A CRD whose only version has `schema` as its openAPIV3Schema.
fn crd_with_schema(
    schema: k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::JsonSchemaProps,
) -> Vec<u8> {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    let crd = apiext::CustomResourceDefinition {
        metadata: object_meta("widgets.example.com"),
        spec: Some(apiext::CustomResourceDefinitionSpec {
            versions: vec![apiext::CustomResourceDefinitionVersion {
                name: s("v1"),
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        crd.encode_to_vec(),
    )
}

fn decoded_schema(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_object(body).map(|v| v["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone())
}

#[test]
fn json_schema_unions_doubles_and_raw_json() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    let schema = apiext::JsonSchemaProps {
        // Go writes integral float64 values without a fraction.
        minimum: Some(1.0),
        maximum: Some(-2.5),
        multiple_of: Some(1e300),
        // allows without a schema is a plain boolean...
        additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
            allows: Some(true),
            schema: None,
        })),
        // ...and an empty message is `false` (Go's zero value).
        additional_items: Some(Box::new(apiext::JsonSchemaPropsOrBool::default())),
        // The list wins over the single schema; an empty one is null.
        items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
            schema: Some(Box::new(apiext::JsonSchemaProps {
                r#type: s("string"),
                ..Default::default()
            })),
            j_son_schemas: vec![apiext::JsonSchemaProps::default()],
        })),
        not: Some(Box::new(apiext::JsonSchemaProps {
            items: Some(Box::new(apiext::JsonSchemaPropsOrArray::default())),
            ..Default::default()
        })),
        dependencies: [
            (
                "empty".to_owned(),
                apiext::JsonSchemaPropsOrStringArray::default(),
            ),
            (
                "both".to_owned(),
                apiext::JsonSchemaPropsOrStringArray {
                    schema: Some(apiext::JsonSchemaProps::default()),
                    property: strings(&["x"]),
                },
            ),
        ]
        .into(),
        r#enum: vec![
            apiext::Json {
                raw: Some(br#"{"a": [1, null]}"#.to_vec()),
            },
            apiext::Json { raw: None },
            // Go's MarshalJSON writes null for empty raw bytes too.
            apiext::Json {
                raw: Some(Vec::new()),
            },
        ],
        example: Some(apiext::Json {
            raw: Some(b"\"x\"".to_vec()),
        }),
        ..Default::default()
    };
    let got = decoded_schema(&crd_with_schema(schema)).unwrap();
    assert_eq!(
        got,
        json!({"minimum": 1, "maximum": -2.5, "multipleOf": 1e300,
               "additionalProperties": true, "additionalItems": false,
               "items": [{}], "not": {"items": null},
               "dependencies": {"both": ["x"], "empty": null},
               "enum": [{"a": [1, null]}, null, null], "example": "x"})
    );
    assert_eq!(got["minimum"].to_string(), "1");

    // NaN and the infinities have no JSON form (Go's encoder refuses them too).
    for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let schema = apiext::JsonSchemaProps {
            maximum: Some(bad),
            ..Default::default()
        };
        assert!(
            matches!(decoded_schema(&crd_with_schema(schema)),
                Err(ProtobufError::InvalidValue { message, field, .. })
                if message.ends_with("apiextensions.v1.JSONSchemaProps") && field == "maximum"),
            "{bad}"
        );
    }
    // Raw JSON that is not JSON is refused, naming the JSON type.
    let schema = apiext::JsonSchemaProps {
        default: Some(apiext::Json {
            raw: Some(b"{nope".to_vec()),
        }),
        ..Default::default()
    };
    assert!(matches!(decoded_schema(&crd_with_schema(schema)),
        Err(ProtobufError::InvalidValue { message, .. }) if message.ends_with("apiextensions.v1.JSON")));
    // An unknown tag inside a union names the union.
    let mut union = apiext::JsonSchemaPropsOrBool {
        allows: Some(true),
        schema: None,
    }
    .encode_to_vec();
    union = with_extra_field(union, 3);
    let mut props = Vec::new();
    prost::encoding::bytes::encode(30, &union, &mut props); // additionalProperties
    let mut validation = Vec::new();
    prost::encoding::bytes::encode(1, &props, &mut validation); // openAPIV3Schema
    let mut version = Vec::new();
    prost::encoding::bytes::encode(4, &validation, &mut version); // schema
    let mut spec = Vec::new();
    prost::encoding::bytes::encode(7, &version, &mut spec); // versions
    let mut crd = Vec::new();
    prost::encoding::bytes::encode(2, &spec, &mut crd); // spec
    let err = decode_object(&envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        crd,
    ))
    .unwrap_err();
    assert!(
        matches!(&err, ProtobufError::UnknownField { message, tag: 3, .. }
            if message.ends_with("apiextensions.v1.JSONSchemaPropsOrBool")),
        "{err:?}"
    );
}

#[test]
fn packed_repeated_doubles() {
    use crate::descriptor::{FieldDesc, FieldType, MessageDesc};
    static DOUBLES: MessageDesc = MessageDesc {
        name: "test.Doubles",
        fields: &[FieldDesc::new(1, "values", FieldType::Double).repeated()],
    };
    let mut packed = Vec::new();
    for v in [1.5f64, 2.0, -0.25] {
        packed.extend(v.to_le_bytes());
    }
    let mut buf = Vec::new();
    prost::encoding::bytes::encode(1, &packed, &mut buf);
    // One more, unpacked.
    prost::encoding::double::encode(1, &4.0, &mut buf);
    let got = crate::decode::decode_message(&DOUBLES, &buf, 0).unwrap();
    assert_eq!(Value::Object(got), json!({"values": [1.5, 2, -0.25, 4]}));
    // A run that is not a whole number of doubles is malformed.
    let mut buf = Vec::new();
    prost::encoding::bytes::encode(1, &packed[..12].to_vec(), &mut buf);
    assert!(matches!(
        crate::decode::decode_message(&DOUBLES, &buf, 0),
        Err(ProtobufError::Malformed { .. })
    ));
}

/// JSONSchemaProps is recursive: a schema as deep as the JSON API accepts decodes, a deeper
/// one is refused rather than exhausting the stack.
#[test]
fn deep_crd_schemas_decode_up_to_the_nesting_limit() {
    use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    fn nested(levels: usize) -> apiext::JsonSchemaProps {
        let mut schema = apiext::JsonSchemaProps {
            r#type: s("string"),
            ..Default::default()
        };
        for _ in 0..levels {
            schema = apiext::JsonSchemaProps {
                r#type: s("object"),
                properties: [("a".to_owned(), schema)].into(),
                ..Default::default()
            };
        }
        schema
    }
    // 45 levels: 96 levels of JSON nesting in the whole CRD, within the API server's 100.
    let got = decoded_schema(&crd_with_schema(nested(45))).unwrap();
    let mut inner = &got;
    for _ in 0..45 {
        inner = &inner["properties"]["a"];
    }
    assert_eq!(inner, &json!({"type": "string"}));
    assert!(matches!(
        decoded_schema(&crd_with_schema(nested(60))),
        Err(ProtobufError::TooDeep(100))
    ));
}
