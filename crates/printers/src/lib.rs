//! Server-side Table printing: the columns `kubectl get` shows, computed by the server as
//! kube-apiserver does (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`).
//!
//! - [`builtin_printer`]: the columns of the built-in kinds (Deployments, Pods, Services,
//!   Nodes, Events, RBAC, CertificateSigningRequests, ...), with cells formatted the way
//!   kubectl users know them;
//! - [`custom_printer`]: a CRD's `additionalPrinterColumns`, evaluated with [`eval_json_path`];
//! - [`default_printer`]: `NAME AGE` for kinds without columns of their own.
//!
//! A printer always yields every column, `-o wide` ones (priority 1) included: kubectl hides
//! them itself unless asked.

// Tests unwrap freely: a panic is a failed test.
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod cells;
mod certificates;
mod cluster;
mod core_misc;
mod corev1;
mod custom;
mod events;
mod groups;
mod jsonpath;
mod workloads;

use flotilla_apimachinery::TablePrinter;
use serde_json::Value;

pub use custom::{custom_printer, default_printer};
pub use jsonpath::JsonPath;

/// Why a printer could not be built or a path not evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrinterError {
    #[error("invalid JSONPath {path:?}: {reason}")]
    InvalidJsonPath { path: String, reason: String },
    /// A CRD printer column (by index in `additionalPrinterColumns`) that cannot be used.
    #[error("invalid printer column {index}: {reason}")]
    InvalidColumn { index: usize, reason: String },
}

/// The Table printer of a built-in resource, by API group (`""` for core) and plural name;
/// `None` for resources without dedicated columns.
pub fn builtin_printer(group: &str, plural: &str) -> Option<TablePrinter> {
    let printer = match (group, plural) {
        ("", "pods") => corev1::pods(),
        ("", "services") => corev1::services(),
        ("", "namespaces") => corev1::namespaces(),
        ("", "configmaps") => corev1::configmaps(),
        ("", "secrets") => corev1::secrets(),
        ("", "serviceaccounts") => corev1::serviceaccounts(),
        ("", "persistentvolumeclaims") => corev1::persistentvolumeclaims(),
        ("", "persistentvolumes") => corev1::persistentvolumes(),
        ("", "nodes") => corev1::nodes(),
        ("", "replicationcontrollers") => workloads::replicationcontrollers(),
        ("", "podtemplates") => core_misc::podtemplates(),
        ("", "endpoints") => core_misc::endpoints(),
        ("", "resourcequotas") => core_misc::resourcequotas(),
        ("", "limitranges") => cluster::created_at(),
        ("", "events") | ("events.k8s.io", "events") => events::events(),
        ("apps", "deployments") => workloads::deployments(),
        ("apps", "replicasets") => workloads::replicasets(),
        ("apps", "statefulsets") => workloads::statefulsets(),
        ("apps", "daemonsets") => workloads::daemonsets(),
        ("batch", "jobs") => workloads::jobs(),
        ("batch", "cronjobs") => workloads::cronjobs(),
        ("coordination.k8s.io", "leases") => cluster::leases(),
        ("rbac.authorization.k8s.io", "roles" | "clusterroles") => cluster::created_at(),
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => {
            cluster::role_bindings()
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => cluster::created_at(),
        ("apiregistration.k8s.io", "apiservices") => cluster::api_services(),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => cluster::webhook_configurations(),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            certificates::certificate_signing_requests()
        }
        // The non-core groups (issue 18).
        ("autoscaling", "horizontalpodautoscalers") => groups::horizontal_pod_autoscalers(),
        ("policy", "poddisruptionbudgets") => groups::pod_disruption_budgets(),
        ("networking.k8s.io", "ingresses") => groups::ingresses(),
        ("networking.k8s.io", "ingressclasses") => groups::ingress_classes(),
        ("networking.k8s.io", "networkpolicies") => groups::network_policies(),
        ("networking.k8s.io", "ipaddresses") => groups::ip_addresses(),
        ("networking.k8s.io", "servicecidrs") => groups::service_cidrs(),
        ("storage.k8s.io", "csistoragecapacities") => groups::csi_storage_capacities(),
        ("storage.k8s.io", "storageclasses") => groups::storage_classes(),
        ("storage.k8s.io", "csidrivers") => groups::csi_drivers(),
        ("storage.k8s.io", "csinodes") => groups::csi_nodes(),
        ("storage.k8s.io", "volumeattachments") => groups::volume_attachments(),
        ("scheduling.k8s.io", "priorityclasses") => groups::priority_classes(),
        ("discovery.k8s.io", "endpointslices") => groups::endpoint_slices(),
        ("node.k8s.io", "runtimeclasses") => groups::runtime_classes(),
        ("apps", "controllerrevisions") => groups::controller_revisions(),
        _ => return None,
    };
    Some(printer)
}

/// Evaluates a JSONPath such as `.spec.replicas`, `.metadata.labels.app`, `.spec.zones[*]` or
/// `.status.conditions[?(@.type=="Ready")].status` (the dialect of CRD printer columns).
/// Missing fields select nothing; only syntax errors fail.
pub fn eval_json_path(obj: &Value, path: &str) -> Result<Vec<Value>, PrinterError> {
    Ok(JsonPath::parse(path)?
        .eval(obj)
        .into_iter()
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests_support {
    use chrono::{DateTime, Utc};
    use flotilla_apimachinery::TablePrinter;
    use flotilla_apimachinery::duration::parse_timestamp;
    use serde_json::Value;

    /// The fixed "now" of every printer test.
    pub(crate) fn now() -> DateTime<Utc> {
        parse_timestamp("2024-05-01T12:00:00Z").unwrap()
    }

    /// One row's cells as a JSON array, checked to have one cell per column.
    pub(crate) fn row(p: &TablePrinter, obj: &Value) -> Value {
        let cells = (p.cells)(obj, now());
        assert_eq!(cells.len(), p.columns.len(), "one cell per column");
        Value::Array(cells)
    }

    /// One row's cells, for slicing.
    pub(crate) fn cells(p: &TablePrinter, obj: &Value) -> Vec<Value> {
        (p.cells)(obj, now())
    }

    /// Column names as kubectl shows them: normal ones, then `|`, then `-o wide` ones.
    pub(crate) fn column_names(p: &TablePrinter) -> String {
        let pick = |wide: bool| {
            p.columns
                .iter()
                .filter(|c| (c.priority > 0) == wide)
                .map(|c| c.name.as_str())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let wide = pick(true);
        if wide.is_empty() {
            pick(false)
        } else {
            format!("{} | {wide}", pick(false))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn registry_covers_the_served_groups() {
        let expected = [
            ("", "pods", "Name"),
            ("", "services", "Name"),
            ("", "namespaces", "Name"),
            ("", "configmaps", "Name"),
            ("", "secrets", "Name"),
            ("", "serviceaccounts", "Name"),
            ("", "persistentvolumeclaims", "Name"),
            ("", "nodes", "Name"),
            ("", "persistentvolumes", "Name"),
            ("", "replicationcontrollers", "Name"),
            ("", "podtemplates", "Name"),
            ("", "endpoints", "Name"),
            ("", "limitranges", "Name"),
            ("", "resourcequotas", "Name"),
            ("", "events", "Last Seen"),
            ("events.k8s.io", "events", "Last Seen"),
            ("apps", "deployments", "Name"),
            ("apps", "replicasets", "Name"),
            ("apps", "statefulsets", "Name"),
            ("apps", "daemonsets", "Name"),
            ("batch", "jobs", "Name"),
            ("batch", "cronjobs", "Name"),
            ("coordination.k8s.io", "leases", "Name"),
            ("rbac.authorization.k8s.io", "roles", "Name"),
            ("rbac.authorization.k8s.io", "clusterroles", "Name"),
            ("rbac.authorization.k8s.io", "rolebindings", "Name"),
            ("rbac.authorization.k8s.io", "clusterrolebindings", "Name"),
            ("apiextensions.k8s.io", "customresourcedefinitions", "Name"),
            ("apiregistration.k8s.io", "apiservices", "Name"),
            (
                "admissionregistration.k8s.io",
                "mutatingwebhookconfigurations",
                "Name",
            ),
            (
                "admissionregistration.k8s.io",
                "validatingwebhookconfigurations",
                "Name",
            ),
            ("certificates.k8s.io", "certificatesigningrequests", "Name"),
        ];
        for (group, plural, first) in expected {
            let p = builtin_printer(group, plural).unwrap_or_else(|| panic!("{group}/{plural}"));
            assert_eq!(p.columns[0].name, first, "{group}/{plural}");
            let name_cols: Vec<_> = p.columns.iter().filter(|c| c.format == "name").collect();
            assert_eq!(
                name_cols.len(),
                1,
                "{group}/{plural} has exactly one name column"
            );
            // Every printer survives an empty object with one cell per column.
            assert_eq!(
                (p.cells)(&json!({}), tests_support::now()).len(),
                p.columns.len(),
                "{group}/{plural}"
            );
        }
        assert!(builtin_printer("apps", "pods").is_none());
        assert!(builtin_printer("policy.karmada.io", "propagationpolicies").is_none());
    }

    #[test]
    fn eval_json_path_clones_results() {
        let obj = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            eval_json_path(&obj, r#".status.conditions[?(@.type=="Ready")].status"#),
            Ok(vec![json!("True")])
        );
        assert_eq!(eval_json_path(&obj, ".spec.replicas"), Ok(vec![]));
        assert!(matches!(
            eval_json_path(&obj, ".a[").unwrap_err(),
            PrinterError::InvalidJsonPath { .. }
        ));
    }
}
