//! The Event table (`LAST SEEN TYPE REASON OBJECT MESSAGE`), shared by core/v1 Events and
//! events.k8s.io/v1 Events: both field spellings are read (`involvedObject`/`regarding`,
//! `message`/`note`, `lastTimestamp`/`deprecatedLastTimestamp`, ...).

use flotilla_apimachinery::TablePrinter;
use serde_json::Value;

use crate::cells::*;

/// The first of several pointers that holds a non-null value.
fn first<'a>(obj: &'a Value, pointers: &[&str]) -> Option<&'a Value> {
    pointers
        .iter()
        .find_map(|p| obj.pointer(p).filter(|v| !v.is_null()))
}

fn first_str<'a>(obj: &'a Value, pointers: &[&str]) -> Option<&'a str> {
    pointers
        .iter()
        .find_map(|p| str_at(obj, p).filter(|s| !s.is_empty()))
}

pub(crate) fn events() -> TablePrinter {
    let columns = vec![
        col(
            "Last Seen",
            "string",
            0,
            "Time since the event was last observed.",
        ),
        col("Type", "string", 0, "Type of the event (Normal, Warning)."),
        col(
            "Reason",
            "string",
            0,
            "Why the event happened, in CamelCase.",
        ),
        col("Object", "string", 0, "The object the event is about."),
        col(
            "Subobject",
            "string",
            1,
            "The part of the object the event is about.",
        ),
        col(
            "Source",
            "string",
            1,
            "The component that reported the event.",
        ),
        col("Message", "string", 0, "A human-readable description."),
        col(
            "First Seen",
            "string",
            1,
            "Time since the event was first observed.",
        ),
        col(
            "Count",
            "string",
            1,
            "How many times the event was observed.",
        ),
        col("Name", "string", 1, "Name of the event object."),
    ];
    printer(columns, |obj, now| {
        let first_seen = match first_str(obj, &["/firstTimestamp", "/deprecatedFirstTimestamp"]) {
            Some(t) => since(Some(t), now),
            None => since(first_str(obj, &["/eventTime"]), now),
        };
        let mut last_seen = match first_str(obj, &["/lastTimestamp", "/deprecatedLastTimestamp"]) {
            Some(t) => since(Some(t), now),
            None => first_seen.clone(),
        };
        let mut count = first(obj, &["/count", "/deprecatedCount"])
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Some(series) = obj.get("series").filter(|s| s.is_object()) {
            last_seen = since(str_at(series, "/lastObservedTime"), now);
            count = int_at(series, "/count");
        } else if count == 0 {
            // Singleton events of the newer API carry no count.
            count = 1;
        }
        let regarding = first(obj, &["/involvedObject", "/regarding"])
            .cloned()
            .unwrap_or(Value::Null);
        let kind = string_at(&regarding, "/kind").to_lowercase();
        let target = match str_at(&regarding, "/name").filter(|n| !n.is_empty()) {
            Some(name) => format!("{kind}/{name}"),
            None => kind,
        };
        let component = first_str(
            obj,
            &[
                "/source/component",
                "/deprecatedSource/component",
                "/reportingComponent",
                "/reportingController",
            ],
        );
        let host = first_str(
            obj,
            &[
                "/source/host",
                "/deprecatedSource/host",
                "/reportingInstance",
            ],
        );
        let source = match (component.unwrap_or_default(), host) {
            (c, Some(h)) => format!("{c}, {h}"),
            (c, None) => c.to_string(),
        };
        let message = first_str(obj, &["/message", "/note"])
            .unwrap_or_default()
            .trim()
            .to_string();
        vec![
            last_seen.into(),
            string_at(obj, "/type").into(),
            string_at(obj, "/reason").into(),
            target.into(),
            string_at(&regarding, "/fieldPath").into(),
            source.into(),
            message.into(),
            first_seen.into(),
            count.into(),
            name_cell(obj),
        ]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests_support::{column_names, row};
    use serde_json::json;

    #[test]
    fn core_event() {
        let p = events();
        assert_eq!(
            column_names(&p),
            "Last Seen Type Reason Object Message | Subobject Source First Seen Count Name"
        );
        let ev = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "web.17c", "namespace": "default"},
            "involvedObject": {"kind": "Deployment", "name": "web", "fieldPath": "spec.containers{nginx}"},
            "reason": "ScalingReplicaSet", "type": "Normal",
            "message": "Scaled up replica set web-5d9c to 3 \n",
            "source": {"component": "deployment-controller"},
            "firstTimestamp": "2024-05-01T11:00:00Z", "lastTimestamp": "2024-05-01T11:59:15Z", "count": 4
        });
        assert_eq!(
            row(&p, &ev),
            json!([
                "45s",
                "Normal",
                "ScalingReplicaSet",
                "deployment/web",
                "spec.containers{nginx}",
                "deployment-controller",
                "Scaled up replica set web-5d9c to 3",
                "60m",
                4,
                "web.17c"
            ])
        );
    }

    #[test]
    fn new_api_event() {
        let ev = json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "n.1"},
            "regarding": {"kind": "Node", "name": "node-1"},
            "reason": "NodeReady", "type": "Normal", "note": "Node node-1 is ready",
            "eventTime": "2024-05-01T11:58:00.000000Z",
            "reportingController": "kubelet", "reportingInstance": "node-1"
        });
        assert_eq!(
            row(&events(), &ev),
            json!([
                "2m",
                "Normal",
                "NodeReady",
                "node/node-1",
                "",
                "kubelet, node-1",
                "Node node-1 is ready",
                "2m",
                1,
                "n.1"
            ])
        );
        let series = json!({
            "metadata": {"name": "s"}, "regarding": {"kind": "Pod"}, "type": "Warning", "reason": "BackOff",
            "eventTime": "2024-05-01T10:00:00.000000Z",
            "series": {"count": 12, "lastObservedTime": "2024-05-01T11:59:50.000000Z"}
        });
        assert_eq!(
            row(&events(), &series),
            json!([
                "10s", "Warning", "BackOff", "pod", "", "", "", "120m", 12, "s"
            ])
        );
        let bare = json!({"metadata": {"name": "b"}});
        assert_eq!(
            row(&events(), &bare),
            json!(["<unknown>", "", "", "", "", "", "", "<unknown>", 1, "b"])
        );
    }
}
