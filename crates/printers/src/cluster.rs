//! Table printers of the control-plane kinds: Leases, RBAC (Roles, ClusterRoles and their
//! bindings), CustomResourceDefinitions and APIServices, plus the generic `NAME CREATED AT`
//! table kube-apiserver serves for kinds without a dedicated printer.

use flotilla_apimachinery::TablePrinter;
use serde_json::Value;

use crate::cells::*;

pub(crate) fn leases() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Holder", "string", 0, "The current holder of the lease."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            string_at(obj, "/spec/holderIdentity").into(),
            age_cell(obj, now),
        ]
    })
}

/// `NAME WEBHOOKS AGE` (Mutating/ValidatingWebhookConfigurations).
pub(crate) fn webhook_configurations() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Webhooks", "integer", 0, "The number of webhooks."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let count = obj
            .get("webhooks")
            .and_then(serde_json::Value::as_array)
            .map_or(0, Vec::len);
        vec![name_cell(obj), serde_json::json!(count), age_cell(obj, now)]
    })
}

/// `NAME CREATED AT`, the creation time printed as an RFC 3339 timestamp (Roles, ClusterRoles,
/// CustomResourceDefinitions).
pub(crate) fn created_at() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Created At", "date", 0, "When the object was created."),
    ];
    printer(columns, |obj, _now| {
        vec![name_cell(obj), created_at_cell(obj)]
    })
}

pub(crate) fn role_bindings() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Role", "string", 0, "The role the binding grants."),
        age_col(),
        col("Users", "string", 1, "Users in the binding."),
        col("Groups", "string", 1, "Groups in the binding."),
        col(
            "ServiceAccounts",
            "string",
            1,
            "ServiceAccounts in the binding.",
        ),
    ];
    printer(columns, |obj, now| {
        let role = format!(
            "{}/{}",
            string_at(obj, "/roleRef/kind"),
            string_at(obj, "/roleRef/name")
        );
        let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
        for s in list_at(obj, "/subjects") {
            let name = string_at(s, "/name");
            match str_at(s, "/kind") {
                Some("User") => users.push(name),
                Some("Group") => groups.push(name),
                Some("ServiceAccount") => {
                    sas.push(format!("{}/{name}", string_at(s, "/namespace")))
                }
                _ => {}
            }
        }
        vec![
            name_cell(obj),
            role.into(),
            age_cell(obj, now),
            users.join(", ").into(),
            groups.join(", ").into(),
            sas.join(", ").into(),
        ]
    })
}

pub(crate) fn api_services() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Service",
            "string",
            0,
            "The service that serves this API, or Local.",
        ),
        col("Available", "string", 0, "Whether the API is available."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        let service = match obj.pointer("/spec/service").filter(|s| !s.is_null()) {
            Some(s) => format!("{}/{}", string_at(s, "/namespace"), string_at(s, "/name")),
            None => "Local".to_string(),
        };
        let available = match condition(obj, "/status/conditions", "Available") {
            None => "Unknown".to_string(),
            Some(c) => {
                let status = string_at(c, "/status");
                match str_at(c, "/reason").filter(|r| !r.is_empty()) {
                    Some(reason) if status != "True" => format!("{status} ({reason})"),
                    _ => status,
                }
            }
        };
        vec![
            name_cell(obj),
            Value::String(service),
            available.into(),
            age_cell(obj, now),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{cells, column_names, row};
    use serde_json::json;

    #[test]
    fn lease() {
        let obj = json!({"metadata": {"name": "kube-scheduler", "creationTimestamp": "2024-04-28T08:00:00Z"},
                         "spec": {"holderIdentity": "cp-1_7d3f", "leaseDurationSeconds": 15}});
        assert_eq!(column_names(&leases()), "Name Holder Age");
        assert_eq!(
            row(&leases(), &obj),
            json!(["kube-scheduler", "cp-1_7d3f", "3d4h"])
        );
        assert_eq!(
            row(&leases(), &json!({"metadata": {"name": "x"}})),
            json!(["x", "", "<unknown>"])
        );
    }

    #[test]
    fn roles_print_creation_time() {
        let p = created_at();
        assert_eq!(column_names(&p), "Name Created At");
        assert_eq!(p.columns[1].column_type, "date");
        let role = json!({"metadata": {"name": "admin", "creationTimestamp": "2024-01-15T09:30:00Z"}, "rules": []});
        assert_eq!(row(&p, &role), json!(["admin", "2024-01-15T09:30:00Z"]));
    }

    #[test]
    fn bindings() {
        let p = role_bindings();
        assert_eq!(
            column_names(&p),
            "Name Role Age | Users Groups ServiceAccounts"
        );
        let rb = json!({
            "metadata": {"name": "view-all", "creationTimestamp": "2024-05-01T11:59:15Z"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [
                {"kind": "User", "name": "alice"}, {"kind": "User", "name": "bob"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}
            ]
        });
        assert_eq!(
            row(&p, &rb),
            json!([
                "view-all",
                "ClusterRole/view",
                "45s",
                "alice, bob",
                "devs",
                "tools/ci"
            ])
        );
        let empty = json!({"metadata": {"name": "e"}, "roleRef": {"kind": "Role", "name": "r"}});
        assert_eq!(
            row(&p, &empty),
            json!(["e", "Role/r", "<unknown>", "", "", ""])
        );
    }

    #[test]
    fn apiservice() {
        let p = api_services();
        assert_eq!(column_names(&p), "Name Service Available Age");
        let local = json!({"metadata": {"name": "v1.apps", "creationTimestamp": "2024-04-28T08:00:00Z"},
                           "spec": {"group": "apps", "version": "v1"},
                           "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}});
        assert_eq!(row(&p, &local), json!(["v1.apps", "Local", "True", "3d4h"]));
        let remote = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"},
                            "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
                            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        assert_eq!(
            cells(&p, &remote)[1..3],
            [
                json!("kube-system/metrics-server"),
                json!("False (MissingEndpoints)")
            ]
        );
        let unknown = json!({"metadata": {"name": "x"}, "spec": {"service": null}});
        assert_eq!(
            cells(&p, &unknown)[1..3],
            [json!("Local"), json!("Unknown")]
        );
    }
}
