//! Table printers of the workload kinds: Deployments, ReplicaSets, StatefulSets, DaemonSets,
//! ReplicationControllers (apps, core) and Jobs, CronJobs (batch).

use chrono::{DateTime, Utc};
use flotilla_apimachinery::TablePrinter;
use flotilla_apimachinery::duration::parse_timestamp;
use flotilla_apimachinery::selector::LabelSelector;
use serde_json::Value;

use crate::cells::*;

const CONTAINERS: &str = "Names of each container in the template.";
const IMAGES: &str = "Images referenced by each container in the template.";
const SELECTOR: &str = "Label selector of the pods this object manages.";

fn wide_template_columns(with_selector: bool) -> Vec<flotilla_apimachinery::TableColumn> {
    let mut cols = vec![
        col("Containers", "string", 1, CONTAINERS),
        col("Images", "string", 1, IMAGES),
    ];
    if with_selector {
        cols.push(col("Selector", "string", 1, SELECTOR));
    }
    cols
}

pub(crate) fn deployments() -> TablePrinter {
    let mut columns = vec![
        name_col(),
        col(
            "Ready",
            "string",
            0,
            "Number of ready pods out of the desired replicas.",
        ),
        col(
            "Up-to-date",
            "string",
            0,
            "Number of pods running the latest template.",
        ),
        col(
            "Available",
            "string",
            0,
            "Number of pods available to serve.",
        ),
        age_col(),
    ];
    columns.extend(wide_template_columns(true));
    printer(columns, |obj, now| {
        let (containers, images) = containers_cells(obj, "/spec/template/spec");
        // A Deployment's selector prints bare: empty when absent, `<invalid>` when malformed.
        let selector = match obj.pointer("/spec/selector").filter(|s| !s.is_null()) {
            None => String::new(),
            Some(s) => LabelSelector::from_object(s)
                .map_or_else(|_| "<invalid>".to_string(), |s| s.to_string()),
        };
        vec![
            name_cell(obj),
            Value::String(format!(
                "{}/{}",
                int_at(obj, "/status/readyReplicas"),
                int_at(obj, "/spec/replicas")
            )),
            int_at(obj, "/status/updatedReplicas").into(),
            int_at(obj, "/status/availableReplicas").into(),
            age_cell(obj, now),
            containers,
            images,
            selector.into(),
        ]
    })
}

/// ReplicaSets and ReplicationControllers share their columns.
fn replica_counts(rc: bool) -> TablePrinter {
    let mut columns = vec![
        name_col(),
        col("Desired", "integer", 0, "Number of desired pods."),
        col("Current", "integer", 0, "Number of pods created."),
        col("Ready", "integer", 0, "Number of ready pods."),
        age_col(),
    ];
    columns.extend(wide_template_columns(true));
    let cells = if rc { rc_cells } else { rs_cells };
    printer(columns, cells)
}

fn replica_count_cells(obj: &Value, now: DateTime<Utc>, selector: String) -> Vec<Value> {
    let (containers, images) = containers_cells(obj, "/spec/template/spec");
    vec![
        name_cell(obj),
        int_at(obj, "/spec/replicas").into(),
        int_at(obj, "/status/replicas").into(),
        int_at(obj, "/status/readyReplicas").into(),
        age_cell(obj, now),
        containers,
        images,
        selector.into(),
    ]
}

fn rs_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    replica_count_cells(
        obj,
        now,
        format_label_selector(obj.pointer("/spec/selector")),
    )
}

fn rc_cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    // A ReplicationController's selector is a plain map.
    replica_count_cells(obj, now, format_labels(obj.pointer("/spec/selector")))
}

pub(crate) fn replicasets() -> TablePrinter {
    replica_counts(false)
}

pub(crate) fn replicationcontrollers() -> TablePrinter {
    replica_counts(true)
}

pub(crate) fn statefulsets() -> TablePrinter {
    let mut columns = vec![
        name_col(),
        col(
            "Ready",
            "string",
            0,
            "Number of ready pods out of the desired replicas.",
        ),
        age_col(),
    ];
    columns.extend(wide_template_columns(false));
    printer(columns, |obj, now| {
        let (containers, images) = containers_cells(obj, "/spec/template/spec");
        vec![
            name_cell(obj),
            Value::String(format!(
                "{}/{}",
                int_at(obj, "/status/readyReplicas"),
                int_at(obj, "/spec/replicas")
            )),
            age_cell(obj, now),
            containers,
            images,
        ]
    })
}

pub(crate) fn daemonsets() -> TablePrinter {
    let mut columns = vec![
        name_col(),
        col(
            "Desired",
            "integer",
            0,
            "Number of nodes that should run the daemon pod.",
        ),
        col(
            "Current",
            "integer",
            0,
            "Number of nodes running at least one daemon pod.",
        ),
        col(
            "Ready",
            "integer",
            0,
            "Number of nodes whose daemon pod is ready.",
        ),
        col(
            "Up-to-date",
            "integer",
            0,
            "Number of nodes running the latest template.",
        ),
        col(
            "Available",
            "integer",
            0,
            "Number of nodes whose daemon pod is available.",
        ),
        col(
            "Node Selector",
            "string",
            0,
            "Node labels the daemon pods require.",
        ),
        age_col(),
    ];
    columns.extend(wide_template_columns(true));
    printer(columns, |obj, now| {
        let (containers, images) = containers_cells(obj, "/spec/template/spec");
        vec![
            name_cell(obj),
            int_at(obj, "/status/desiredNumberScheduled").into(),
            int_at(obj, "/status/currentNumberScheduled").into(),
            int_at(obj, "/status/numberReady").into(),
            int_at(obj, "/status/updatedNumberScheduled").into(),
            int_at(obj, "/status/numberAvailable").into(),
            format_labels(obj.pointer("/spec/template/spec/nodeSelector")).into(),
            age_cell(obj, now),
            containers,
            images,
            format_label_selector(obj.pointer("/spec/selector")).into(),
        ]
    })
}

pub(crate) fn jobs() -> TablePrinter {
    let mut columns = vec![
        name_col(),
        col("Status", "string", 0, "Status of the job."),
        col(
            "Completions",
            "string",
            0,
            "Succeeded pods out of the required completions.",
        ),
        col("Duration", "string", 0, "Time the job ran (so far)."),
        age_col(),
    ];
    columns.extend(wide_template_columns(true));
    printer(columns, |obj, now| {
        let succeeded = int_at(obj, "/status/succeeded");
        let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
            Some(c) => format!("{succeeded}/{c}"),
            None => {
                // Without completions, one success finishes the job; show the parallelism.
                let parallelism = int_at(obj, "/spec/parallelism");
                if parallelism > 1 {
                    format!("{succeeded}/1 of {parallelism}")
                } else {
                    format!("{succeeded}/1")
                }
            }
        };
        let start = str_at(obj, "/status/startTime").and_then(parse_timestamp);
        let end = str_at(obj, "/status/completionTime").and_then(parse_timestamp);
        let duration = match (start, end) {
            (None, _) => String::new(),
            (Some(s), None) => between(s, now),
            (Some(s), Some(e)) => between(s, e),
        };
        let conds = "/status/conditions";
        let status = if condition_true(obj, conds, "Complete") {
            "Complete"
        } else if condition_true(obj, conds, "Failed") {
            "Failed"
        } else if obj
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|v| !v.is_null())
        {
            "Terminating"
        } else if condition_true(obj, conds, "Suspended") {
            "Suspended"
        } else if condition_true(obj, conds, "FailureTarget") {
            "FailureTarget"
        } else {
            "Running"
        };
        let (containers, images) = containers_cells(obj, "/spec/template/spec");
        vec![
            name_cell(obj),
            status.into(),
            completions.into(),
            duration.into(),
            age_cell(obj, now),
            containers,
            images,
            format_label_selector(obj.pointer("/spec/selector")).into(),
        ]
    })
}

pub(crate) fn cronjobs() -> TablePrinter {
    let mut columns = vec![
        name_col(),
        col("Schedule", "string", 0, "The cron schedule."),
        col("Timezone", "string", 0, "Time zone of the schedule."),
        col("Suspend", "boolean", 0, "Whether new runs are suspended."),
        col("Active", "integer", 0, "Number of running jobs."),
        col(
            "Last Schedule",
            "string",
            0,
            "Time since a job was last scheduled.",
        ),
        age_col(),
    ];
    columns.extend(wide_template_columns(true));
    printer(columns, |obj, now| {
        let last_schedule = match str_at(obj, "/status/lastScheduleTime") {
            Some(t) => since(Some(t), now),
            None => NONE.to_string(),
        };
        let (containers, images) = containers_cells(obj, "/spec/jobTemplate/spec/template/spec");
        vec![
            name_cell(obj),
            string_at(obj, "/spec/schedule").into(),
            str_at(obj, "/spec/timeZone").unwrap_or(NONE).into(),
            bool_cell(obj.pointer("/spec/suspend")).into(),
            count(list_at(obj, "/status/active").len()),
            last_schedule.into(),
            age_cell(obj, now),
            containers,
            images,
            format_label_selector(obj.pointer("/spec/jobTemplate/spec/selector")).into(),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{cells, column_names, row};
    use serde_json::json;

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2024-05-01T11:56:40Z"},
            "spec": {
                "replicas": 3,
                "selector": {"matchLabels": {"app": "web", "tier": "front"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [
                    {"name": "nginx", "image": "nginx:1.27"},
                    {"name": "log", "image": "busybox"}
                ]}}
            },
            "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2}
        })
    }

    #[test]
    fn deployment_columns_and_cells() {
        let p = deployments();
        assert_eq!(
            column_names(&p),
            "Name Ready Up-to-date Available Age | Containers Images Selector"
        );
        assert_eq!(
            row(&p, &deployment()),
            json!([
                "web",
                "2/3",
                3,
                2,
                "3m20s",
                "nginx,log",
                "nginx:1.27,busybox",
                "app=web,tier=front"
            ])
        );
    }

    #[test]
    fn deployment_without_status() {
        let obj = json!({"metadata": {"name": "new"}, "spec": {"template": {"spec": {"containers": []}}}});
        assert_eq!(
            row(&deployments(), &obj),
            json!(["new", "0/0", 0, 0, "<unknown>", "", "", ""])
        );
    }

    #[test]
    fn replicaset_and_rc() {
        let rs = json!({
            "metadata": {"name": "web-5d9c", "creationTimestamp": "2024-04-28T08:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d9c"}},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
            "status": {"replicas": 3, "readyReplicas": 1}
        });
        let p = replicasets();
        assert_eq!(
            column_names(&p),
            "Name Desired Current Ready Age | Containers Images Selector"
        );
        assert_eq!(
            row(&p, &rs),
            json!([
                "web-5d9c",
                3,
                3,
                1,
                "3d4h",
                "nginx",
                "nginx",
                "app=web,pod-template-hash=5d9c"
            ])
        );
        let rc = json!({"metadata": {"name": "old"}, "spec": {"replicas": 1, "selector": {"app": "old"}}});
        assert_eq!(
            row(&replicationcontrollers(), &rc),
            json!(["old", 1, 0, 0, "<unknown>", "", "", "app=old"])
        );
    }

    #[test]
    fn statefulset() {
        let obj = json!({
            "metadata": {"name": "db", "creationTimestamp": "2024-05-01T06:48:00Z"},
            "spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "pg", "image": "postgres:16"}]}}},
            "status": {"readyReplicas": 3}
        });
        let p = statefulsets();
        assert_eq!(column_names(&p), "Name Ready Age | Containers Images");
        assert_eq!(
            row(&p, &obj),
            json!(["db", "3/3", "5h12m", "pg", "postgres:16"])
        );
    }

    #[test]
    fn daemonset() {
        let obj = json!({
            "metadata": {"name": "agent", "creationTimestamp": "2024-03-17T12:00:00Z"},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                     "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                           "containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {"desiredNumberScheduled": 4, "currentNumberScheduled": 4, "numberReady": 3,
                       "updatedNumberScheduled": 4, "numberAvailable": 3}
        });
        let p = daemonsets();
        assert_eq!(
            column_names(&p),
            "Name Desired Current Ready Up-to-date Available Node Selector Age | Containers Images Selector"
        );
        assert_eq!(
            row(&p, &obj),
            json!([
                "agent",
                4,
                4,
                3,
                4,
                3,
                "kubernetes.io/os=linux",
                "45d",
                "a",
                "agent:1",
                "app=agent"
            ])
        );
    }

    fn job(status: Value) -> Value {
        json!({
            "metadata": {"name": "pi", "creationTimestamp": "2024-05-01T11:00:00Z"},
            "spec": {"completions": 3, "parallelism": 1,
                     "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}},
                     "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
            "status": status
        })
    }

    #[test]
    fn job_statuses() {
        let p = jobs();
        assert_eq!(
            column_names(&p),
            "Name Status Completions Duration Age | Containers Images Selector"
        );
        let done = job(json!({
            "startTime": "2024-05-01T11:00:05Z", "completionTime": "2024-05-01T11:01:50Z", "succeeded": 3,
            "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]
        }));
        assert_eq!(
            row(&p, &done),
            json!([
                "pi",
                "Complete",
                "3/3",
                "105s",
                "60m",
                "pi",
                "perl",
                "batch.kubernetes.io/controller-uid=abc"
            ])
        );
        let running =
            job(json!({"startTime": "2024-05-01T11:55:00Z", "succeeded": 1, "active": 1}));
        assert_eq!(
            cells(&p, &running)[1..4],
            [json!("Running"), json!("1/3"), json!("5m")]
        );
        let failed = job(json!({"startTime": "2024-05-01T11:55:00Z",
                                "conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded"}]}));
        assert_eq!(row(&p, &failed)[1], json!("Failed"));
        let suspended = job(json!({"conditions": [{"type": "Suspended", "status": "True"}]}));
        assert_eq!(
            cells(&p, &suspended)[1..4],
            [json!("Suspended"), json!("0/3"), json!("")]
        );
        let mut deleting = job(json!({"conditions": [{"type": "Complete", "status": "False"}]}));
        deleting["metadata"]["deletionTimestamp"] = json!("2024-05-01T11:59:00Z");
        assert_eq!(row(&p, &deleting)[1], json!("Terminating"));
        let mut parallel = job(json!({"succeeded": 0}));
        parallel["spec"] = json!({"parallelism": 4});
        assert_eq!(row(&p, &parallel)[2], json!("0/1 of 4"));
        parallel["spec"] = json!({});
        assert_eq!(row(&p, &parallel)[2], json!("0/1"));
    }

    #[test]
    fn cronjob() {
        let obj = json!({
            "metadata": {"name": "backup", "creationTimestamp": "2024-04-01T12:00:00Z"},
            "spec": {"schedule": "*/5 * * * *", "suspend": false, "jobTemplate": {"spec": {"template": {"spec": {
                "containers": [{"name": "b", "image": "backup:2"}]}}}}},
            "status": {"active": [{"name": "backup-1"}], "lastScheduleTime": "2024-05-01T11:58:00Z"}
        });
        let p = cronjobs();
        assert_eq!(
            column_names(&p),
            "Name Schedule Timezone Suspend Active Last Schedule Age | Containers Images Selector"
        );
        assert_eq!(
            row(&p, &obj),
            json!([
                "backup",
                "*/5 * * * *",
                "<none>",
                "False",
                1,
                "2m",
                "30d",
                "b",
                "backup:2",
                "<none>"
            ])
        );
        let bare = json!({"metadata": {"name": "x"}, "spec": {"schedule": "@daily", "timeZone": "Europe/Paris"}});
        assert_eq!(
            cells(&p, &bare)[1..6],
            [
                json!("@daily"),
                json!("Europe/Paris"),
                json!("<unset>"),
                json!(0),
                json!("<none>")
            ]
        );
    }
}
