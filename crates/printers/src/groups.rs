//! Table printers of the non-core groups: HorizontalPodAutoscalers (from the stored v2 shape,
//! for both served versions), PodDisruptionBudgets, Ingresses, IngressClasses,
//! NetworkPolicies, IPAddresses, ServiceCIDRs, StorageClasses, CSIDrivers, CSINodes,
//! VolumeAttachments, CSIStorageCapacities, PriorityClasses, EndpointSlices, RuntimeClasses and
//! ControllerRevisions.

use flotilla_apimachinery::TablePrinter;
use serde_json::Value;

use crate::cells::*;

/// An `IntOrString` cell: the number or string as given, `N/A` when unset.
fn int_or_string(obj: &Value, pointer: &str) -> Value {
    match obj.pointer(pointer) {
        Some(Value::Number(n)) => Value::String(n.to_string()),
        Some(Value::String(s)) => Value::String(s.clone()),
        _ => Value::String("N/A".into()),
    }
}

/// Joins up to three items, then `+ N more...`, as kubectl's list cells do.
fn first_three(items: &[String]) -> String {
    if items.len() <= 3 {
        return items.join(",");
    }
    format!("{} + {} more...", items[..3].join(","), items.len() - 3)
}

pub(crate) fn horizontal_pod_autoscalers() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Reference",
            "string",
            0,
            "The kind and name of the scaled object.",
        ),
        col(
            "Targets",
            "string",
            0,
            "The current and target value of each metric.",
        ),
        col("MinPods", "string", 0, "Lower limit of the replicas."),
        col("MaxPods", "integer", 0, "Upper limit of the replicas."),
        col("Replicas", "integer", 0, "Current number of replicas."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let reference = format!(
            "{}/{}",
            string_at(obj, "/spec/scaleTargetRef/kind"),
            string_at(obj, "/spec/scaleTargetRef/name")
        );
        let min = match obj.pointer("/spec/minReplicas").and_then(Value::as_i64) {
            Some(m) => m.to_string(),
            None => UNSET.to_string(),
        };
        vec![
            name_cell(obj),
            reference.into(),
            hpa_targets(obj).into(),
            min.into(),
            int_at(obj, "/spec/maxReplicas").into(),
            int_at(obj, "/status/currentReplicas").into(),
            age_cell(obj, now),
        ]
    })
}

/// `current/target` per metric, as kubectl users know it: resource metrics named
/// (`cpu: 40%/80%`, `memory: <unknown>/1Gi`), pods/object/external metrics bare (`5/10`,
/// `(avg)` for average-value targets), `<unknown>` before a measurement; at most two shown,
/// then `+ N more...`; `<none>` without metrics.
fn hpa_targets(obj: &Value) -> String {
    let metrics = list_at(obj, "/spec/metrics");
    if metrics.is_empty() {
        return NONE.to_string();
    }
    let current = list_at(obj, "/status/currentMetrics");
    let quantity = |v: Option<&Value>, key: &str| -> Option<String> {
        match v?.get(key)? {
            Value::Number(n) => Some(n.to_string()),
            Value::String(s) => Some(s.clone()),
            _ => None,
        }
    };
    let unknown = || UNKNOWN.to_string();
    let mut out = Vec::new();
    for (i, m) in metrics.iter().enumerate() {
        let ty = str_at(m, "/type").unwrap_or_default();
        let source = match ty {
            "Resource" => "resource",
            "ContainerResource" => "containerResource",
            "Pods" => "pods",
            "Object" => "object",
            "External" => "external",
            _ => {
                out.push("<unknown type>".to_string());
                continue;
            }
        };
        let target = m.pointer(&format!("/{source}/target"));
        let cur = current
            .get(i)
            .and_then(|c| c.pointer(&format!("/{source}/current")));
        let average = quantity(target, "averageValue");
        let cell = match source {
            "resource" | "containerResource" => {
                let name = string_at(m, &format!("/{source}/name"));
                match average {
                    Some(t) => format!(
                        "{name}: {}/{t}",
                        quantity(cur, "averageValue").unwrap_or_else(unknown)
                    ),
                    None => format!(
                        "{name}: {}/{}",
                        quantity(cur, "averageUtilization")
                            .map_or_else(unknown, |v| format!("{v}%")),
                        quantity(target, "averageUtilization")
                            .map_or_else(|| "<auto>".to_string(), |v| format!("{v}%"))
                    ),
                }
            }
            "pods" => format!(
                "{}/{}",
                quantity(cur, "averageValue").unwrap_or_else(unknown),
                average.unwrap_or_default()
            ),
            _ => match average {
                Some(t) => format!(
                    "{}/{t} (avg)",
                    quantity(cur, "averageValue").unwrap_or_else(unknown)
                ),
                None => format!(
                    "{}/{}",
                    quantity(cur, "value").unwrap_or_else(unknown),
                    quantity(target, "value").unwrap_or_default()
                ),
            },
        };
        out.push(cell);
    }
    if out.len() > 2 {
        let more = out.len() - 2;
        out.truncate(2);
        return format!("{} + {more} more...", out.join(", "));
    }
    out.join(", ")
}

pub(crate) fn pod_disruption_budgets() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Min Available",
            "string",
            0,
            "The minimum number of pods that must be available.",
        ),
        col(
            "Max Unavailable",
            "string",
            0,
            "The maximum number of pods that may be unavailable.",
        ),
        col(
            "Allowed Disruptions",
            "integer",
            0,
            "Calculated number of pods that may be disrupted at this time.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            int_or_string(obj, "/spec/minAvailable"),
            int_or_string(obj, "/spec/maxUnavailable"),
            int_at(obj, "/status/disruptionsAllowed").into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn ingresses() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Class",
            "string",
            0,
            "The name of the IngressClass resource.",
        ),
        col(
            "Hosts",
            "string",
            0,
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        col(
            "Address",
            "string",
            0,
            "Address is a list containing ingress points for the load-balancer",
        ),
        col(
            "Ports",
            "string",
            0,
            "Ports of TLS configurations that open",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let class = string_or(obj, "/spec/ingressClassName", NONE);
        // Named hosts, up to three; `*` when no rule names one.
        let rules = list_at(obj, "/spec/rules");
        let hosts: Vec<String> = rules
            .iter()
            .take(3)
            .filter_map(|r| str_at(r, "/host").filter(|h| !h.is_empty()))
            .map(str::to_string)
            .collect();
        let hosts = if hosts.is_empty() {
            "*".to_string()
        } else if rules.len() > 3 {
            format!("{} + {} more...", hosts.join(","), rules.len() - 3)
        } else {
            hosts.join(",")
        };
        let addresses: Vec<String> = list_at(obj, "/status/loadBalancer/ingress")
            .iter()
            .filter_map(|i| {
                str_at(i, "/ip")
                    .filter(|s| !s.is_empty())
                    .or_else(|| str_at(i, "/hostname"))
                    .map(str::to_string)
            })
            .collect();
        let ports = if list_at(obj, "/spec/tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        vec![
            name_cell(obj),
            class.into(),
            hosts.into(),
            addresses.join(",").into(),
            ports.into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn ingress_classes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Controller",
            "string",
            0,
            "Controller that implements the ingress class.",
        ),
        col(
            "Parameters",
            "string",
            0,
            "A reference to a resource with additional parameters.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let params = match obj.pointer("/spec/parameters").filter(|p| p.is_object()) {
            None => NONE.to_string(),
            Some(p) => {
                // `Kind.apiGroup/name`, as kubectl prints a group-qualified reference.
                let kind = match str_at(p, "/apiGroup") {
                    Some(g) => format!("{}.{g}", string_at(p, "/kind")),
                    None => string_at(p, "/kind"),
                };
                format!("{kind}/{}", string_at(p, "/name"))
            }
        };
        vec![
            name_cell(obj),
            string_at(obj, "/spec/controller").into(),
            params.into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn network_policies() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Pod-Selector",
            "string",
            0,
            "The pods the policy applies to.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            format_label_selector(obj.pointer("/spec/podSelector")).into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn ip_addresses() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "ParentRef",
            "string",
            0,
            "The object the address is allocated to.",
        ),
    ];
    printer(columns, |obj, _| {
        // `resource.group/namespace/name`, the group and namespace only when set.
        let r = obj.pointer("/spec/parentRef").unwrap_or(&Value::Null);
        let mut parent = string_at(r, "/resource").to_lowercase();
        if let Some(g) = str_at(r, "/group").filter(|g| !g.is_empty()) {
            parent = format!("{parent}.{g}");
        }
        if let Some(ns) = str_at(r, "/namespace").filter(|n| !n.is_empty()) {
            parent = format!("{parent}/{ns}");
        }
        parent = format!("{parent}/{}", string_at(r, "/name"));
        vec![name_cell(obj), parent.into()]
    })
}

pub(crate) fn service_cidrs() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "CIDRs",
            "string",
            0,
            "The IP ranges Service addresses are allocated from.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let cidrs: Vec<String> = list_at(obj, "/spec/cidrs")
            .iter()
            .filter_map(|c| c.as_str().map(str::to_string))
            .collect();
        let cidrs = if cidrs.is_empty() {
            NONE.to_string()
        } else {
            cidrs.join(",")
        };
        vec![name_cell(obj), cidrs.into(), age_cell(obj, now)]
    })
}

pub(crate) fn csi_storage_capacities() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "StorageClassName",
            "string",
            0,
            "The storage class the capacity is for.",
        ),
        col(
            "Capacity",
            "string",
            0,
            "The capacity available for new volumes.",
        ),
    ];
    printer(columns, |obj, _| {
        let capacity = match obj.get("capacity") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => UNSET.to_string(),
        };
        vec![
            name_cell(obj),
            string_at(obj, "/storageClassName").into(),
            capacity.into(),
        ]
    })
}

pub(crate) fn storage_classes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Provisioner",
            "string",
            0,
            "The volume plugin that provisions volumes of this class.",
        ),
        col(
            "ReclaimPolicy",
            "string",
            0,
            "What happens to a dynamically provisioned volume when its claim is released.",
        ),
        col(
            "VolumeBindingMode",
            "string",
            0,
            "When volumes are bound and provisioned.",
        ),
        col(
            "AllowVolumeExpansion",
            "string",
            0,
            "Whether volumes of this class may be expanded.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let mut name = string_at(obj, "/metadata/name");
        let default = [
            "storageclass.kubernetes.io/is-default-class",
            "storageclass.beta.kubernetes.io/is-default-class",
        ]
        .iter()
        .any(|a| {
            obj.pointer("/metadata/annotations")
                .and_then(|m| m.get(*a))
                .and_then(Value::as_str)
                == Some("true")
        });
        if default {
            name.push_str(" (default)");
        }
        let expansion = obj
            .pointer("/allowVolumeExpansion")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        vec![
            name.into(),
            string_at(obj, "/provisioner").into(),
            string_or(obj, "/reclaimPolicy", "Delete").into(),
            string_or(obj, "/volumeBindingMode", "Immediate").into(),
            expansion.to_string().into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn csi_drivers() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "AttachRequired",
            "boolean",
            0,
            "Whether the driver needs an attach operation.",
        ),
        col(
            "PodInfoOnMount",
            "boolean",
            0,
            "Whether pod information is passed on mount.",
        ),
        col(
            "StorageCapacity",
            "boolean",
            0,
            "Whether storage capacity is tracked.",
        ),
        col(
            "TokenRequests",
            "string",
            0,
            "Audiences of the service account tokens passed on mount.",
        ),
        col(
            "RequiresRepublish",
            "boolean",
            0,
            "Whether NodePublishVolume is called periodically.",
        ),
        col(
            "Modes",
            "string",
            0,
            "Volume lifecycle modes supported by the driver.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let flag_or = |p: &str, default: bool| {
            Value::Bool(obj.pointer(p).and_then(Value::as_bool).unwrap_or(default))
        };
        let flag = |p: &str| flag_or(p, false);
        let tokens = obj
            .pointer("/spec/tokenRequests")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .map(|t| string_at(t, "/audience"))
                    .collect::<Vec<_>>()
                    .join(",")
            });
        let modes: Vec<String> = list_at(obj, "/spec/volumeLifecycleModes")
            .iter()
            .filter_map(|m| m.as_str().map(str::to_string))
            .collect();
        vec![
            name_cell(obj),
            flag_or("/spec/attachRequired", true),
            flag("/spec/podInfoOnMount"),
            flag("/spec/storageCapacity"),
            tokens.unwrap_or_else(|| UNSET.to_string()).into(),
            flag("/spec/requiresRepublish"),
            if modes.is_empty() {
                NONE.to_string()
            } else {
                modes.join(",")
            }
            .into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn csi_nodes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Drivers",
            "integer",
            0,
            "Number of CSI drivers on the node.",
        ),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            count(list_at(obj, "/spec/drivers").len()),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn volume_attachments() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Attacher",
            "string",
            0,
            "The volume driver that attaches the volume.",
        ),
        col("PV", "string", 0, "The persistent volume attached."),
        col("Node", "string", 0, "The node the volume is attached to."),
        col("Attached", "boolean", 0, "Whether the volume is attached."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            string_at(obj, "/spec/attacher").into(),
            string_at(obj, "/spec/source/persistentVolumeName").into(),
            string_at(obj, "/spec/nodeName").into(),
            Value::Bool(
                obj.pointer("/status/attached")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            ),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn priority_classes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Value", "integer", 0, "The priority of pods of this class."),
        col(
            "Global-Default",
            "boolean",
            0,
            "Whether pods without a class get this one.",
        ),
        age_col(),
        col(
            "PreemptionPolicy",
            "string",
            0,
            "Whether pods of this class preempt lower priority pods.",
        ),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            int_at(obj, "/value").into(),
            Value::Bool(
                obj.pointer("/globalDefault")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            ),
            age_cell(obj, now),
            string_at(obj, "/preemptionPolicy").into(),
        ]
    })
}

pub(crate) fn endpoint_slices() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "AddressType",
            "string",
            0,
            "The type of addresses in the slice.",
        ),
        col("Ports", "string", 0, "The ports of the endpoints."),
        col("Endpoints", "string", 0, "The addresses of the endpoints."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let ports = list_at(obj, "/ports");
        let ports = if ports.is_empty() {
            UNSET.to_string()
        } else {
            let shown: Vec<String> = ports
                .iter()
                .map(|p| match p.get("port").and_then(Value::as_i64) {
                    Some(n) => n.to_string(),
                    None => str_at(p, "/name").unwrap_or("*").to_string(),
                })
                .collect();
            first_three(&shown)
        };
        let addresses: Vec<String> = list_at(obj, "/endpoints")
            .iter()
            .flat_map(|e| list_at(e, "/addresses"))
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        let endpoints = if addresses.is_empty() {
            UNSET.to_string()
        } else {
            first_three(&addresses)
        };
        vec![
            name_cell(obj),
            string_at(obj, "/addressType").into(),
            ports.into(),
            endpoints.into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn runtime_classes() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Handler", "string", 0, "The container runtime handler."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            string_at(obj, "/handler").into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn controller_revisions() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Controller",
            "string",
            0,
            "The controller that owns the revision.",
        ),
        col("Revision", "integer", 0, "The revision number."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let controller = list_at(obj, "/metadata/ownerReferences")
            .iter()
            .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
            .map_or_else(
                || NONE.to_string(),
                |r| {
                    let kind = string_at(r, "/kind").to_lowercase();
                    let group = string_at(r, "/apiVersion")
                        .rsplit_once('/')
                        .map(|(g, _)| g.to_string())
                        .unwrap_or_default();
                    let name = string_at(r, "/name");
                    if group.is_empty() {
                        format!("{kind}/{name}")
                    } else {
                        format!("{kind}.{group}/{name}")
                    }
                },
            );
        vec![
            name_cell(obj),
            controller.into(),
            int_at(obj, "/revision").into(),
            age_cell(obj, now),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{column_names, row};
    use serde_json::json;

    #[test]
    fn column_names_match_kubectl() {
        let cases = [
            (
                horizontal_pod_autoscalers(),
                "Name Reference Targets MinPods MaxPods Replicas Age",
            ),
            (
                pod_disruption_budgets(),
                "Name Min Available Max Unavailable Allowed Disruptions Age",
            ),
            (ingresses(), "Name Class Hosts Address Ports Age"),
            (ingress_classes(), "Name Controller Parameters Age"),
            (network_policies(), "Name Pod-Selector Age"),
            (
                storage_classes(),
                "Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age",
            ),
            (
                priority_classes(),
                "Name Value Global-Default Age PreemptionPolicy",
            ),
            (endpoint_slices(), "Name AddressType Ports Endpoints Age"),
            (runtime_classes(), "Name Handler Age"),
            (controller_revisions(), "Name Controller Revision Age"),
            (csi_nodes(), "Name Drivers Age"),
            (ip_addresses(), "Name ParentRef"),
            (service_cidrs(), "Name CIDRs Age"),
            (csi_storage_capacities(), "Name StorageClassName Capacity"),
            (volume_attachments(), "Name Attacher PV Node Attached Age"),
        ];
        for (p, names) in cases {
            assert_eq!(column_names(&p), names);
        }
    }

    #[test]
    fn hpa_targets_show_current_and_target() {
        let hpa = json!({
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1,
                     "maxReplicas": 5, "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}
            ]},
            "status": {"currentReplicas": 2, "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}
            ]}
        });
        let r = row(&horizontal_pod_autoscalers(), &hpa);
        assert_eq!(r[1], "Deployment/web");
        assert_eq!(r[2], "cpu: 40%/80%, <unknown>/10");
        assert_eq!(r[3], "1");
        // At most two metrics, then a count; no metrics prints <none>, no minimum <unset>.
        let mut many = hpa.clone();
        many["spec"]["metrics"] = json!([
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}},
            {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}}},
            {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "AverageValue", "averageValue": "3"}}}
        ]);
        let r = row(&horizontal_pod_autoscalers(), &many);
        assert_eq!(r[2], "cpu: 40%/80%, memory: <unknown>/1Gi + 1 more...");
        let mut bare = hpa.clone();
        bare["spec"] =
            json!({"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 2});
        let r = row(&horizontal_pod_autoscalers(), &bare);
        assert_eq!(
            (r[2].clone(), r[3].clone()),
            (json!("<none>"), json!("<unset>"))
        );
        assert_eq!(r[5], 2);
    }

    #[test]
    fn pdb_ingress_and_storage_class_cells() {
        let pdb = json!({"spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}});
        let r = row(&pod_disruption_budgets(), &pdb);
        assert_eq!(
            (r[1].clone(), r[2].clone(), r[3].clone()),
            (json!("50%"), json!("N/A"), json!(1))
        );
        let ing = json!({"spec": {"rules": [{"host": "a.example.com"}, {}], "tls": [{}]},
                         "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}]}}});
        let r = row(&ingresses(), &ing);
        assert_eq!(r[1], "<none>");
        assert_eq!(r[2], "a.example.com");
        assert_eq!(r[3], "10.0.0.1");
        assert_eq!(r[4], "80, 443");
        let sc = json!({"metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
                        "provisioner": "csi.example.com"});
        let r = row(&storage_classes(), &sc);
        assert_eq!(r[0], "fast (default)");
        assert_eq!(r[4], "false");
        let cr = json!({"metadata": {"name": "web-1", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web", "controller": true}]}, "revision": 3});
        let ic = json!({"spec": {"controller": "example.com/c",
            "parameters": {"apiGroup": "k8s.example.com", "kind": "Params", "name": "p"}}});
        assert_eq!(row(&ingress_classes(), &ic)[2], "Params.k8s.example.com/p");
        let eps = json!({"addressType": "IPv4", "ports": [{"port": 80}, {"name": "dns"}, {}],
            "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3", "10.0.0.4"]}]});
        let r = row(&endpoint_slices(), &eps);
        assert_eq!(r[2], "80,dns,*");
        assert_eq!(r[3], "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...");
        let ip = json!({"metadata": {"name": "10.0.0.1"},
            "spec": {"parentRef": {"resource": "services", "namespace": "default", "name": "web"}}});
        assert_eq!(row(&ip_addresses(), &ip)[1], "services/default/web");
        let r = row(&controller_revisions(), &cr);
        assert_eq!(r[1], "daemonset.apps/web");
        assert_eq!(r[2], 3);
    }
}
