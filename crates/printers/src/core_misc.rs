//! Table printers of the remaining core/v1 kinds: PodTemplates (`NAME CONTAINERS IMAGES POD
//! LABELS`), Endpoints (`NAME ENDPOINTS AGE`, at most three addresses then `+ N more...`) and
//! ResourceQuotas (`NAME AGE REQUEST LIMIT`, `used/hard` per resource from the status).
//! LimitRanges use the generic `NAME CREATED AT` table.

use flotilla_apimachinery::TablePrinter;
use serde_json::Value;

use crate::cells::*;

pub(crate) fn podtemplates() -> TablePrinter {
    let columns = vec![
        name_col(),
        col(
            "Containers",
            "string",
            0,
            "Names of the template's containers.",
        ),
        col(
            "Images",
            "string",
            0,
            "Images of the template's containers.",
        ),
        col(
            "Pod Labels",
            "string",
            0,
            "Labels of the pods made from the template.",
        ),
    ];
    printer(columns, |obj, _now| {
        let (containers, images) = containers_cells(obj, "/template/spec");
        vec![
            name_cell(obj),
            containers,
            images,
            format_labels(obj.pointer("/template/metadata/labels")).into(),
        ]
    })
}

/// How many addresses the `Endpoints` column lists before summarising the rest.
const MAX_ENDPOINTS: usize = 3;

/// `ip:port` for every (ready address, port) pair, or the bare IPs of subsets without ports;
/// `<none>` without subsets.
fn format_endpoints(obj: &Value) -> String {
    let subsets = list_at(obj, "/subsets");
    if subsets.is_empty() {
        return NONE.to_string();
    }
    let mut shown = Vec::new();
    let mut total = 0usize;
    for ss in subsets {
        let addresses = list_at(ss, "/addresses");
        let ports = list_at(ss, "/ports");
        let ip = |a: &Value| string_at(a, "/ip");
        if ports.is_empty() {
            total += addresses.len();
            for a in addresses {
                if shown.len() < MAX_ENDPOINTS {
                    shown.push(ip(a));
                }
            }
        } else {
            for p in ports {
                total += addresses.len();
                let port = int_at(p, "/port");
                for a in addresses {
                    if shown.len() < MAX_ENDPOINTS {
                        let ip = ip(a);
                        shown.push(if ip.contains(':') {
                            format!("[{ip}]:{port}")
                        } else {
                            format!("{ip}:{port}")
                        });
                    }
                }
            }
        }
    }
    let listed = shown.join(",");
    if total > shown.len() {
        format!("{listed} + {} more...", total - shown.len())
    } else {
        listed
    }
}

pub(crate) fn endpoints() -> TablePrinter {
    let columns = vec![
        name_col(),
        col("Endpoints", "string", 0, "Endpoints of the service."),
        age_col(),
    ];
    printer(columns, |obj, now| {
        vec![
            name_cell(obj),
            format_endpoints(obj).into(),
            age_cell(obj, now),
        ]
    })
}

pub(crate) fn resourcequotas() -> TablePrinter {
    let columns = vec![
        name_col(),
        age_col(),
        col(
            "Request",
            "string",
            0,
            "Usage of requests against their hard limits.",
        ),
        col(
            "Limit",
            "string",
            0,
            "Usage of limits against their hard limits.",
        ),
    ];
    printer(columns, |obj, now| {
        let mut names: Vec<&String> = obj
            .pointer("/status/hard")
            .and_then(Value::as_object)
            .map(|m| m.keys().collect())
            .unwrap_or_default();
        names.sort();
        let quantity = |pointer: &str, name: &str| {
            obj.pointer(pointer).and_then(|m| m.get(name)).map_or_else(
                || "0".to_string(),
                |v| v.as_str().map_or_else(|| v.to_string(), str::to_string),
            )
        };
        let (mut requests, mut limits) = (Vec::new(), Vec::new());
        for name in names {
            let cell = format!(
                "{name}: {}/{}",
                quantity("/status/used", name),
                quantity("/status/hard", name)
            );
            if name.starts_with("limits.") {
                limits.push(cell);
            } else {
                requests.push(cell);
            }
        }
        vec![
            name_cell(obj),
            age_cell(obj, now),
            requests.join(", ").into(),
            limits.join(", ").into(),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{column_names, row};
    use serde_json::json;

    #[test]
    fn podtemplate_columns() {
        let p = podtemplates();
        assert_eq!(column_names(&p), "Name Containers Images Pod Labels");
        let obj = json!({"metadata": {"name": "t"}, "template": {"metadata": {"labels": {"b": "2", "a": "1"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "log", "image": "busybox:1"}]}}});
        assert_eq!(
            row(&p, &obj),
            json!(["t", "web,log", "nginx,busybox:1", "a=1,b=2"])
        );
        assert_eq!(
            row(&p, &json!({"metadata": {"name": "e"}})),
            json!(["e", "", "", "<none>"])
        );
    }

    #[test]
    fn endpoints_list_three_then_summarise() {
        let p = endpoints();
        assert_eq!(column_names(&p), "Name Endpoints Age");
        let ep = json!({"metadata": {"name": "web", "creationTimestamp": "2024-05-01T11:00:00Z"},
            "subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]},
                        {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 8080}]}]});
        assert_eq!(
            row(&p, &ep),
            json!([
                "web",
                "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more...",
                "60m"
            ])
        );
        let small = json!({"metadata": {"name": "db"}, "subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 5432}]},
            {"addresses": [{"ip": "10.1.1.1"}]}]});
        assert_eq!(row(&p, &small)[1], json!("[fd00::1]:5432,10.1.1.1"));
        assert_eq!(
            row(&p, &json!({"metadata": {"name": "x"}}))[1],
            json!("<none>")
        );
        assert_eq!(
            row(
                &p,
                &json!({"subsets": [{"notReadyAddresses": [{"ip": "10.0.0.9"}]}]})
            )[1],
            json!("")
        );
    }

    #[test]
    fn resourcequota_splits_requests_and_limits() {
        let p = resourcequotas();
        assert_eq!(column_names(&p), "Name Age Request Limit");
        let q = json!({"metadata": {"name": "q", "creationTimestamp": "2024-05-01T11:59:00Z"},
            "spec": {"hard": {"pods": "10"}},
            "status": {"hard": {"pods": "10", "requests.cpu": "1", "limits.memory": "1Gi", "limits.cpu": "2"},
                       "used": {"pods": "3", "limits.cpu": "500m"}}});
        assert_eq!(
            row(&p, &q),
            json!([
                "q",
                "60s",
                "pods: 3/10, requests.cpu: 0/1",
                "limits.cpu: 500m/2, limits.memory: 0/1Gi"
            ])
        );
        // Without a quota controller (the host) the status is empty: so are the columns.
        assert_eq!(
            row(
                &p,
                &json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}}})
            ),
            json!(["q", "<unknown>", "", ""])
        );
    }
}
