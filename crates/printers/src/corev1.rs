//! Table printers of core/v1 kinds: Pods (with kubectl's STATUS reasoning), Services, Nodes,
//! Namespaces, ConfigMaps, Secrets, ServiceAccounts, PersistentVolumeClaims, PersistentVolumes.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use flotilla_apimachinery::TablePrinter;
use flotilla_apimachinery::duration::parse_timestamp;
use serde_json::Value;

use crate::cells::*;

pub(crate) fn pods() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Ready",
            "string",
            0,
            "Ready containers out of all containers of the pod.",
        ),
        col(
            "Status",
            "string",
            0,
            "The aggregate status of the containers in this pod.",
        ),
        col(
            "Restarts",
            "string",
            0,
            "Container restarts, and how long ago the last one happened.",
        ),
        age_col(),
        col("IP", "string", 1, "The pod's IP address."),
        col("Node", "string", 1, "The node the pod is bound to."),
        col(
            "Nominated Node",
            "string",
            1,
            "The node the scheduler nominated for preemption.",
        ),
        col(
            "Readiness Gates",
            "string",
            1,
            "Readiness gates that are satisfied.",
        ),
    ];
    printer(columns, pod_cells)
}

fn is_set(v: Option<&Value>) -> bool {
    v.is_some_and(|v| !v.is_null())
}

/// Latest of two optional times.
fn later(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn last_termination(status: &Value) -> Option<DateTime<Utc>> {
    str_at(status, "/lastState/terminated/finishedAt").and_then(parse_timestamp)
}

/// `Signal:9` / `ExitCode:1` for a terminated state without a reason.
fn exit_description(terminated: &Value) -> String {
    let signal = int_at(terminated, "/signal");
    if signal != 0 {
        format!("Signal:{signal}")
    } else {
        format!("ExitCode:{}", int_at(terminated, "/exitCode"))
    }
}

/// READY, STATUS and RESTARTS as kubectl computes them: init containers first (`Init:1/2`,
/// `Init:CrashLoopBackOff`), then the regular containers' waiting/terminated reasons, with
/// sidecars (restartable init containers) counted as containers.
fn pod_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let init_specs = list_at(obj, "/spec/initContainers");
    let is_sidecar = |name: Option<&str>| {
        init_specs
            .iter()
            .any(|c| str_at(c, "/name") == name && str_at(c, "/restartPolicy") == Some("Always"))
    };
    let total = list_at(obj, "/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| str_at(c, "/restartPolicy") == Some("Always"))
            .count();
    let mut ready = 0usize;
    let phase = string_at(obj, "/status/phase");
    let mut reason = string_or(obj, "/status/reason", &phase);
    let conditions = list_at(obj, "/status/conditions");
    if conditions.iter().any(|c| {
        str_at(c, "/type") == Some("PodScheduled")
            && str_at(c, "/reason") == Some("SchedulingGated")
    }) {
        reason = "SchedulingGated".to_string();
    }

    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart = None;
    let mut last_sidecar_restart = None;
    let mut initializing = false;
    let init_statuses = list_at(obj, "/status/initContainerStatuses");
    for (i, c) in init_statuses.iter().enumerate() {
        restarts += int_at(c, "/restartCount");
        last_restart = later(last_restart, last_termination(c));
        let sidecar = is_sidecar(str_at(c, "/name"));
        if sidecar {
            sidecar_restarts += int_at(c, "/restartCount");
            last_sidecar_restart = later(last_sidecar_restart, last_termination(c));
        }
        let terminated = c.pointer("/state/terminated").filter(|t| !t.is_null());
        let waiting_reason = str_at(c, "/state/waiting/reason").unwrap_or_default();
        if terminated.is_some_and(|t| int_at(t, "/exitCode") == 0) {
            continue;
        }
        if sidecar && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match str_at(t, "/reason").filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None => format!("Init:{}", exit_description(t)),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    let initialized = conditions
        .iter()
        .any(|c| str_at(c, "/type") == Some("Initialized") && str_at(c, "/status") == Some("True"));
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        // Walk backwards so that the first container's reason wins, as kubectl does.
        for c in list_at(obj, "/status/containerStatuses").iter().rev() {
            restarts += int_at(c, "/restartCount");
            last_restart = later(last_restart, last_termination(c));
            let terminated = c.pointer("/state/terminated").filter(|t| !t.is_null());
            let waiting_reason = str_at(c, "/state/waiting/reason").unwrap_or_default();
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                reason = match str_at(t, "/reason").filter(|r| !r.is_empty()) {
                    Some(r) => r.to_string(),
                    None => exit_description(t),
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && is_set(c.pointer("/state/running"))
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = conditions.iter().any(|c| {
                str_at(c, "/type") == Some("Ready") && str_at(c, "/status") == Some("True")
            });
            reason = if pod_ready { "Running" } else { "NotReady" }.to_string();
        }
    }

    if is_set(obj.pointer("/metadata/deletionTimestamp")) {
        if str_at(obj, "/status/reason") == Some("NodeLost") {
            reason = "Unknown".to_string();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".to_string();
        }
    }

    let restarts_cell = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", between(t, now)),
        _ => restarts.to_string(),
    };

    let ip = list_at(obj, "/status/podIPs")
        .first()
        .and_then(|p| str_at(p, "/ip"))
        .or_else(|| str_at(obj, "/status/podIP"))
        .filter(|s| !s.is_empty())
        .unwrap_or(NONE);
    let gates = list_at(obj, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        NONE.to_string()
    } else {
        let satisfied = gates
            .iter()
            .filter(|g| {
                let gate = str_at(g, "/conditionType");
                conditions
                    .iter()
                    .find(|c| str_at(c, "/type") == gate)
                    .and_then(|c| str_at(c, "/status"))
                    == Some("True")
            })
            .count();
        format!("{satisfied}/{}", gates.len())
    };
    vec![
        name_cell(obj),
        format!("{ready}/{total}").into(),
        reason.into(),
        restarts_cell.into(),
        age_cell(obj, now),
        ip.into(),
        string_or(obj, "/spec/nodeName", NONE).into(),
        string_or(obj, "/status/nominatedNodeName", NONE).into(),
        readiness_gates.into(),
    ]
}

pub(crate) fn services() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Type", "string", 0, "How the service is exposed."),
        col(
            "Cluster-IP",
            "string",
            0,
            "The service's cluster IP address.",
        ),
        col(
            "External-IP",
            "string",
            0,
            "Addresses reaching the service from outside the cluster.",
        ),
        col("Port(s)", "string", 0, "Ports the service exposes."),
        age_col(),
        col(
            "Selector",
            "string",
            1,
            "Labels of the pods behind the service.",
        ),
    ];
    printer(columns, |obj, now| {
        let svc_type = string_or(obj, "/spec/type", "ClusterIP");
        let cluster_ip = list_at(obj, "/spec/clusterIPs")
            .first()
            .and_then(Value::as_str)
            .or_else(|| str_at(obj, "/spec/clusterIP"))
            .filter(|s| !s.is_empty())
            .unwrap_or(NONE);
        let ports: Vec<String> = list_at(obj, "/spec/ports")
            .iter()
            .map(|p| {
                let port = int_at(p, "/port");
                let protocol = string_or(p, "/protocol", "TCP");
                match int_at(p, "/nodePort") {
                    n if n > 0 => format!("{port}:{n}/{protocol}"),
                    _ => format!("{port}/{protocol}"),
                }
            })
            .collect();
        let ports = if ports.is_empty() {
            NONE.to_string()
        } else {
            ports.join(",")
        };
        vec![
            name_cell(obj),
            svc_type.clone().into(),
            cluster_ip.into(),
            external_ip(obj, &svc_type).into(),
            ports.into(),
            age_cell(obj, now),
            format_labels(obj.pointer("/spec/selector")).into(),
        ]
    })
}

fn external_ip(obj: &Value, svc_type: &str) -> String {
    let external_ips: Vec<&str> = list_at(obj, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match svc_type {
        "ClusterIP" | "NodePort" => {
            if external_ips.is_empty() {
                NONE.to_string()
            } else {
                external_ips.join(",")
            }
        }
        "LoadBalancer" => {
            let ingress: BTreeSet<&str> = list_at(obj, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    str_at(i, "/ip")
                        .filter(|s| !s.is_empty())
                        .or_else(|| str_at(i, "/hostname"))
                })
                .filter(|s| !s.is_empty())
                .collect();
            let mut all: Vec<&str> = ingress.into_iter().collect();
            all.extend(external_ips);
            if all.is_empty() {
                "<pending>".to_string()
            } else {
                all.join(",")
            }
        }
        "ExternalName" => string_at(obj, "/spec/externalName"),
        _ => UNKNOWN.to_string(),
    }
}

pub(crate) fn namespaces() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Status", "string", 0, "The status of the namespace."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        // The phase is set by the server; an object stored without it reads as its lifecycle.
        let status = match str_at(obj, "/status/phase").filter(|s| !s.is_empty()) {
            Some(p) => p.to_string(),
            None if is_set(obj.pointer("/metadata/deletionTimestamp")) => "Terminating".to_string(),
            None => "Active".to_string(),
        };
        vec![name_cell(obj), status.into(), age_cell(obj, now)]
    })
}

pub(crate) fn configmaps() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Data",
            "string",
            0,
            "Number of data and binaryData entries.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            count(map_len(obj, "/data") + map_len(obj, "/binaryData")),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn secrets() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Type", "string", 0, "The type of the secret."),
        col("Data", "string", 0, "Number of data entries."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        // `stringData` is write-only and merged into `data`; count its keys too in case the
        // object was stored as written.
        let mut keys: BTreeSet<&str> = BTreeSet::new();
        for pointer in ["/data", "/stringData"] {
            if let Some(m) = obj.pointer(pointer).and_then(Value::as_object) {
                keys.extend(m.keys().map(String::as_str));
            }
        }
        vec![
            name_cell(obj),
            string_or(obj, "/type", "Opaque").into(),
            count(keys.len()),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn serviceaccounts() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Secrets",
            "string",
            0,
            "Number of secrets the account references.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            count(list_at(obj, "/secrets").len()),
            age_cell(obj, now),
        ]
    })
}

/// Access modes as kubectl abbreviates them, in a fixed order, without duplicates.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

pub(crate) fn persistentvolumeclaims() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Status", "string", 0, "The phase of the claim."),
        col("Volume", "string", 0, "The volume bound to the claim."),
        col(
            "Capacity",
            "string",
            0,
            "Storage capacity of the bound volume.",
        ),
        col(
            "Access Modes",
            "string",
            0,
            "Access modes of the bound volume.",
        ),
        col("StorageClass", "string", 0, "StorageClass of the claim."),
        col(
            "VolumeAttributesClass",
            "string",
            0,
            "VolumeAttributesClass of the claim.",
        ),
        age_col(),
        col(
            "VolumeMode",
            "string",
            1,
            "Whether the volume is a filesystem or a block device.",
        ),
    ];
    printer(columns, |obj, now| {
        let phase = if is_set(obj.pointer("/metadata/deletionTimestamp")) {
            "Terminating".to_string()
        } else {
            string_at(obj, "/status/phase")
        };
        let volume = string_at(obj, "/spec/volumeName");
        // Capacity and modes are those of the bound volume: blank until bound.
        let (capacity, modes) = if volume.is_empty() {
            (String::new(), String::new())
        } else {
            (
                string_at(obj, "/status/capacity/storage"),
                access_modes(list_at(obj, "/status/accessModes")),
            )
        };
        let class = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
            .and_then(Value::as_str)
            .or_else(|| str_at(obj, "/spec/storageClassName"))
            .unwrap_or_default();
        vec![
            name_cell(obj),
            phase.into(),
            volume.into(),
            capacity.into(),
            modes.into(),
            class.into(),
            str_at(obj, "/spec/volumeAttributesClassName")
                .unwrap_or(UNSET)
                .into(),
            age_cell(obj, now),
            str_at(obj, "/spec/volumeMode").unwrap_or(UNSET).into(),
        ]
    })
}

pub(crate) fn persistentvolumes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Capacity", "string", 0, "Storage capacity of the volume."),
        col("Access Modes", "string", 0, "Access modes of the volume."),
        col(
            "Reclaim Policy",
            "string",
            0,
            "What happens to the volume when released.",
        ),
        col("Status", "string", 0, "The phase of the volume."),
        col("Claim", "string", 0, "The claim bound to the volume."),
        col("StorageClass", "string", 0, "StorageClass of the volume."),
        col(
            "VolumeAttributesClass",
            "string",
            0,
            "VolumeAttributesClass of the volume.",
        ),
        col("Reason", "string", 0, "Why the volume is in its phase."),
        age_col(),
        col(
            "VolumeMode",
            "string",
            1,
            "Whether the volume is a filesystem or a block device.",
        ),
    ];
    printer(columns, |obj, now| {
        let claim = match obj.pointer("/spec/claimRef").filter(|c| !c.is_null()) {
            Some(c) => format!("{}/{}", string_at(c, "/namespace"), string_at(c, "/name")),
            None => String::new(),
        };
        let phase = if is_set(obj.pointer("/metadata/deletionTimestamp")) {
            "Terminating".to_string()
        } else {
            string_at(obj, "/status/phase")
        };
        let class = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get("volume.beta.kubernetes.io/storage-class"))
            .and_then(Value::as_str)
            .or_else(|| str_at(obj, "/spec/storageClassName"))
            .unwrap_or_default();
        vec![
            name_cell(obj),
            string_at(obj, "/spec/capacity/storage").into(),
            access_modes(list_at(obj, "/spec/accessModes")).into(),
            string_at(obj, "/spec/persistentVolumeReclaimPolicy").into(),
            phase.into(),
            claim.into(),
            class.into(),
            str_at(obj, "/spec/volumeAttributesClassName")
                .unwrap_or(UNSET)
                .into(),
            string_at(obj, "/status/reason").into(),
            age_cell(obj, now),
            str_at(obj, "/spec/volumeMode").unwrap_or(UNSET).into(),
        ]
    })
}

pub(crate) fn nodes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Status", "string", 0, "The status of the node."),
        col("Roles", "string", 0, "The roles of the node."),
        age_col(),
        col("Version", "string", 0, "Kubelet version."),
        col("Internal-IP", "string", 1, "The node's internal address."),
        col("External-IP", "string", 1, "The node's external address."),
        col("OS-Image", "string", 1, "OS image reported by the node."),
        col(
            "Kernel-Version",
            "string",
            1,
            "Kernel version reported by the node.",
        ),
        col(
            "Container-Runtime",
            "string",
            1,
            "Container runtime reported by the node.",
        ),
    ];
    printer(columns, |obj, now| {
        let mut status: Vec<&str> = Vec::new();
        if let Some(c) = condition(obj, "/status/conditions", "Ready") {
            status.push(if str_at(c, "/status") == Some("True") {
                "Ready"
            } else {
                "NotReady"
            });
        } else {
            status.push("Unknown");
        }
        if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
            status.push("SchedulingDisabled");
        }
        let mut roles = BTreeSet::new();
        if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
            for (k, v) in labels {
                if let Some(role) = k
                    .strip_prefix("node-role.kubernetes.io/")
                    .filter(|r| !r.is_empty())
                {
                    roles.insert(role.to_string());
                } else if k == "kubernetes.io/role"
                    && let Some(v) = v.as_str().filter(|v| !v.is_empty())
                {
                    roles.insert(v.to_string());
                }
            }
        }
        let roles = if roles.is_empty() {
            NONE.to_string()
        } else {
            roles.into_iter().collect::<Vec<_>>().join(",")
        };
        let address = |kind: &str| {
            list_at(obj, "/status/addresses")
                .iter()
                .find(|a| str_at(a, "/type") == Some(kind))
                .and_then(|a| str_at(a, "/address"))
                .unwrap_or(NONE)
                .to_string()
        };
        vec![
            name_cell(obj),
            status.join(",").into(),
            roles.into(),
            age_cell(obj, now),
            string_at(obj, "/status/nodeInfo/kubeletVersion").into(),
            address("InternalIP").into(),
            address("ExternalIP").into(),
            string_or(obj, "/status/nodeInfo/osImage", UNKNOWN).into(),
            string_or(obj, "/status/nodeInfo/kernelVersion", UNKNOWN).into(),
            string_or(obj, "/status/nodeInfo/containerRuntimeVersion", UNKNOWN).into(),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{cells, column_names, row};
    use serde_json::json;

    fn pod(spec: Value, status: Value) -> Value {
        json!({
            "metadata": {"name": "web-1", "namespace": "default", "creationTimestamp": "2024-05-01T11:56:40Z"},
            "spec": spec,
            "status": status
        })
    }

    fn two_containers() -> Value {
        json!({"nodeName": "node-1", "containers": [{"name": "app", "image": "a"}, {"name": "log", "image": "b"}]})
    }

    #[test]
    fn running_pod() {
        let obj = pod(
            two_containers(),
            json!({
                "phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [
                    {"name": "app", "ready": true, "restartCount": 2, "state": {"running": {"startedAt": "2024-05-01T11:57:00Z"}},
                     "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2024-05-01T11:55:00Z"}}},
                    {"name": "log", "ready": true, "restartCount": 0, "state": {"running": {}}}
                ]
            }),
        );
        let p = pods();
        assert_eq!(
            column_names(&p),
            "Name Ready Status Restarts Age | IP Node Nominated Node Readiness Gates"
        );
        assert_eq!(
            row(&p, &obj),
            json!([
                "web-1",
                "2/2",
                "Running",
                "2 (5m ago)",
                "3m20s",
                "10.0.0.5",
                "node-1",
                "<none>",
                "<none>"
            ])
        );
    }

    #[test]
    fn pending_and_creating_pods() {
        let pending = pod(
            json!({"containers": [{"name": "app"}]}),
            json!({"phase": "Pending"}),
        );
        assert_eq!(
            row(&pods(), &pending),
            json!([
                "web-1", "0/1", "Pending", "0", "3m20s", "<none>", "<none>", "<none>", "<none>"
            ])
        );
        let creating = pod(
            json!({"nodeName": "n", "containers": [{"name": "app"}]}),
            json!({"phase": "Pending", "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
            ]}),
        );
        assert_eq!(
            cells(&pods(), &creating)[1..4],
            [json!("0/1"), json!("ContainerCreating"), json!("0")]
        );
        let gated = pod(
            json!({"containers": [{"name": "app"}]}),
            json!({"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
        );
        assert_eq!(row(&pods(), &gated)[2], json!("SchedulingGated"));
    }

    #[test]
    fn crashing_and_completed_pods() {
        let crash = pod(
            two_containers(),
            json!({"phase": "Running", "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 7, "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 1, "finishedAt": "2024-05-01T11:59:00Z"}}},
                {"name": "log", "ready": true, "restartCount": 1, "state": {"running": {}}}
            ]}),
        );
        assert_eq!(
            cells(&pods(), &crash)[1..4],
            [
                json!("1/2"),
                json!("CrashLoopBackOff"),
                json!("8 (60s ago)")
            ]
        );
        let done = pod(
            json!({"containers": [{"name": "app"}]}),
            json!({"phase": "Succeeded", "containerStatuses": [
                {"name": "app", "ready": false, "restartCount": 0, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
            ]}),
        );
        assert_eq!(
            cells(&pods(), &done)[1..4],
            [json!("0/1"), json!("Completed"), json!("0")]
        );
        let killed = pod(
            json!({"containers": [{"name": "app"}]}),
            json!({"phase": "Failed", "containerStatuses": [
                {"name": "app", "state": {"terminated": {"exitCode": 137, "signal": 9}}}
            ]}),
        );
        assert_eq!(row(&pods(), &killed)[2], json!("Signal:9"));
        let exit = pod(
            json!({"containers": [{"name": "app"}]}),
            json!({"phase": "Failed", "containerStatuses": [{"name": "app", "state": {"terminated": {"exitCode": 3}}}]}),
        );
        assert_eq!(row(&pods(), &exit)[2], json!("ExitCode:3"));
        // One container completed while the other still runs: Running/NotReady, not Completed.
        let partial = pod(
            two_containers(),
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}], "containerStatuses": [
                {"name": "app", "ready": false, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "log", "ready": true, "state": {"running": {}}}
            ]}),
        );
        assert_eq!(
            cells(&pods(), &partial)[1..3],
            [json!("1/2"), json!("NotReady")]
        );
    }

    #[test]
    fn init_containers_and_sidecars() {
        let spec = json!({"initContainers": [{"name": "migrate"}, {"name": "proxy", "restartPolicy": "Always"}, {"name": "warm"}],
                          "containers": [{"name": "app"}]});
        let waiting = pod(
            spec.clone(),
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "migrate", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "proxy", "started": true, "ready": true, "restartCount": 1, "state": {"running": {}}},
                {"name": "warm", "state": {"running": {}}}
            ], "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
        );
        // The sidecar counts as a container and is ready; `warm` is the third init step.
        assert_eq!(
            cells(&pods(), &waiting)[1..4],
            [json!("1/2"), json!("Init:2/3"), json!("1")]
        );
        let failing = pod(
            spec.clone(),
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "migrate", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
            ]}),
        );
        assert_eq!(
            cells(&pods(), &failing)[1..4],
            [json!("0/2"), json!("Init:CrashLoopBackOff"), json!("3")]
        );
        let errored = pod(
            spec,
            json!({"phase": "Pending", "initContainerStatuses": [
                {"name": "migrate", "state": {"terminated": {"exitCode": 2}}}
            ]}),
        );
        assert_eq!(row(&pods(), &errored)[2], json!("Init:ExitCode:2"));
    }

    #[test]
    fn terminating_pods_and_wide_cells() {
        let mut obj = pod(
            json!({"containers": [{"name": "app"}], "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "x/y"}]}),
            json!({"phase": "Running", "nominatedNodeName": "node-9", "podIPs": [{"ip": "10.1.1.1"}],
                   "conditions": [{"type": "example.com/lb", "status": "True"}, {"type": "x/y", "status": "False"}],
                   "containerStatuses": [{"name": "app", "ready": true, "state": {"running": {}}}]}),
        );
        obj["metadata"]["deletionTimestamp"] = json!("2024-05-01T11:59:00Z");
        assert_eq!(
            cells(&pods(), &obj)[1..],
            [
                json!("1/1"),
                json!("Terminating"),
                json!("0"),
                json!("3m20s"),
                json!("10.1.1.1"),
                json!("<none>"),
                json!("node-9"),
                json!("1/2")
            ]
        );
        obj["status"]["reason"] = json!("NodeLost");
        assert_eq!(row(&pods(), &obj)[2], json!("Unknown"));
        obj["status"]["reason"] = Value::Null;
        obj["status"]["phase"] = json!("Succeeded");
        obj["status"]["containerStatuses"] = json!([]);
        assert_eq!(row(&pods(), &obj)[2], json!("Succeeded"));
    }

    fn service(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "web", "creationTimestamp": "2024-05-01T11:59:15Z"}, "spec": spec, "status": status})
    }

    #[test]
    fn services_of_each_type() {
        let p = services();
        assert_eq!(
            column_names(&p),
            "Name Type Cluster-IP External-IP Port(s) Age | Selector"
        );
        let cip = service(
            json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                   "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}], "selector": {"app": "web"}}),
            json!({}),
        );
        assert_eq!(
            row(&p, &cip),
            json!([
                "web",
                "ClusterIP",
                "10.96.0.10",
                "<none>",
                "80/TCP,53/UDP",
                "45s",
                "app=web"
            ])
        );
        let np = service(
            json!({"type": "NodePort", "clusterIPs": ["10.96.1.1"], "externalIPs": ["1.2.3.4"],
                   "ports": [{"port": 443, "nodePort": 30443, "protocol": "TCP"}, {"port": 80, "nodePort": 30080}]}),
            json!({}),
        );
        assert_eq!(
            row(&p, &np),
            json!([
                "web",
                "NodePort",
                "10.96.1.1",
                "1.2.3.4",
                "443:30443/TCP,80:30080/TCP",
                "45s",
                "<none>"
            ])
        );
        let lb_pending = service(
            json!({"type": "LoadBalancer", "clusterIP": "10.96.2.2", "ports": [{"port": 80, "nodePort": 31000, "protocol": "TCP"}]}),
            json!({}),
        );
        assert_eq!(row(&p, &lb_pending)[3], json!("<pending>"));
        let lb = service(
            json!({"type": "LoadBalancer", "clusterIP": "10.96.2.2", "externalIPs": ["9.9.9.9"]}),
            json!({"loadBalancer": {"ingress": [{"ip": "5.6.7.8"}, {"hostname": "lb.example.com"}, {"ip": "1.1.1.1"}]}}),
        );
        assert_eq!(
            cells(&p, &lb)[3..5],
            [
                json!("1.1.1.1,5.6.7.8,lb.example.com,9.9.9.9"),
                json!("<none>")
            ]
        );
        let ext = service(
            json!({"type": "ExternalName", "externalName": "db.example.com"}),
            json!({}),
        );
        assert_eq!(
            cells(&p, &ext)[1..5],
            [
                json!("ExternalName"),
                json!("<none>"),
                json!("db.example.com"),
                json!("<none>")
            ]
        );
        let headless = service(
            json!({"clusterIP": "None", "ports": [{"port": 5432}]}),
            json!({}),
        );
        assert_eq!(
            cells(&p, &headless)[1..5],
            [
                json!("ClusterIP"),
                json!("None"),
                json!("<none>"),
                json!("5432/TCP")
            ]
        );
    }

    #[test]
    fn simple_kinds() {
        let ns = json!({"metadata": {"name": "prod", "creationTimestamp": "2024-04-28T08:00:00Z"}, "status": {"phase": "Active"}});
        assert_eq!(column_names(&namespaces()), "Name Status Age");
        assert_eq!(row(&namespaces(), &ns), json!(["prod", "Active", "3d4h"]));
        let ns_bare =
            json!({"metadata": {"name": "x", "deletionTimestamp": "2024-05-01T11:00:00Z"}});
        assert_eq!(row(&namespaces(), &ns_bare)[1], json!("Terminating"));

        let cm = json!({"metadata": {"name": "cfg", "creationTimestamp": "2024-05-01T11:59:15Z"},
                        "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(column_names(&configmaps()), "Name Data Age");
        assert_eq!(row(&configmaps(), &cm), json!(["cfg", 3, "45s"]));

        let secret = json!({"metadata": {"name": "tls", "creationTimestamp": "2024-05-01T11:59:15Z"},
                            "type": "kubernetes.io/tls", "data": {"tls.crt": "x", "tls.key": "y"}});
        assert_eq!(column_names(&secrets()), "Name Type Data Age");
        assert_eq!(
            row(&secrets(), &secret),
            json!(["tls", "kubernetes.io/tls", 2, "45s"])
        );
        let opaque = json!({"metadata": {"name": "s"}, "stringData": {"a": "1"}, "data": {"a": "MQ==", "b": "Mg=="}});
        assert_eq!(
            row(&secrets(), &opaque),
            json!(["s", "Opaque", 2, "<unknown>"])
        );

        let sa = json!({"metadata": {"name": "default", "creationTimestamp": "2024-05-01T11:59:15Z"}, "secrets": [{"name": "t"}]});
        assert_eq!(column_names(&serviceaccounts()), "Name Secrets Age");
        assert_eq!(row(&serviceaccounts(), &sa), json!(["default", 1, "45s"]));
        assert_eq!(
            row(&serviceaccounts(), &json!({"metadata": {"name": "x"}})),
            json!(["x", 0, "<unknown>"])
        );
    }

    #[test]
    fn persistent_volume_claims() {
        let p = persistentvolumeclaims();
        assert_eq!(
            column_names(&p),
            "Name Status Volume Capacity Access Modes StorageClass VolumeAttributesClass Age | VolumeMode"
        );
        let bound = json!({
            "metadata": {"name": "data", "creationTimestamp": "2024-05-01T11:59:15Z"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "volumeName": "pvc-123",
                     "volumeMode": "Filesystem", "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce", "ReadWriteOncePod"],
                       "capacity": {"storage": "2Gi"}}
        });
        assert_eq!(
            row(&p, &bound),
            json!([
                "data",
                "Bound",
                "pvc-123",
                "2Gi",
                "RWO,RWX,RWOP",
                "standard",
                "<unset>",
                "45s",
                "Filesystem"
            ])
        );
        let pending = json!({
            "metadata": {"name": "new", "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
            "spec": {"storageClassName": "standard", "volumeAttributesClassName": "gold"},
            "status": {"phase": "Pending"}
        });
        assert_eq!(
            row(&p, &pending),
            json!([
                "new",
                "Pending",
                "",
                "",
                "",
                "legacy",
                "gold",
                "<unknown>",
                "<unset>"
            ])
        );
    }

    #[test]
    fn persistent_volumes() {
        let pv = json!({
            "metadata": {"name": "pvc-123", "creationTimestamp": "2024-05-01T11:59:15Z"},
            "spec": {"capacity": {"storage": "2Gi"}, "accessModes": ["ReadOnlyMany"], "persistentVolumeReclaimPolicy": "Delete",
                     "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard"},
            "status": {"phase": "Bound"}
        });
        assert_eq!(
            row(&persistentvolumes(), &pv),
            json!([
                "pvc-123",
                "2Gi",
                "ROX",
                "Delete",
                "Bound",
                "default/data",
                "standard",
                "<unset>",
                "",
                "45s",
                "<unset>"
            ])
        );
    }

    #[test]
    fn node_rows() {
        let p = nodes();
        assert_eq!(
            column_names(&p),
            "Name Status Roles Age Version | Internal-IP External-IP OS-Image Kernel-Version Container-Runtime"
        );
        let node = json!({
            "metadata": {"name": "cp-1", "creationTimestamp": "2023-01-21T12:00:00Z",
                         "labels": {"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/etcd": "true",
                                    "kubernetes.io/role": "master", "node-role.kubernetes.io/": "x"}},
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "192.168.1.10"}, {"type": "Hostname", "address": "cp-1"}],
                "nodeInfo": {"kubeletVersion": "v1.32.1", "osImage": "Ubuntu 24.04 LTS", "kernelVersion": "6.8.0",
                             "containerRuntimeVersion": "containerd://1.7.24"}
            }
        });
        assert_eq!(
            row(&p, &node),
            json!([
                "cp-1",
                "Ready,SchedulingDisabled",
                "control-plane,etcd,master",
                "466d",
                "v1.32.1",
                "192.168.1.10",
                "<none>",
                "Ubuntu 24.04 LTS",
                "6.8.0",
                "containerd://1.7.24"
            ])
        );
        let worker = json!({"metadata": {"name": "w"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert_eq!(
            row(&p, &worker),
            json!([
                "w",
                "NotReady",
                "<none>",
                "<unknown>",
                "",
                "<none>",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>"
            ])
        );
        assert_eq!(
            row(&p, &json!({"metadata": {"name": "z"}}))[1],
            json!("Unknown")
        );
    }
}
