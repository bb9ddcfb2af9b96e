//! Status in both directions: what of a member object's status is recorded in its Work
//! ([`reflect_status`], Karmada's `reflectstatus.go`) and how the binding's per-cluster items
//! become the template's `.status` ([`aggregate_status`], Karmada's `aggregatestatus.go`).
//! The per-kind rules are tabled in the crate docs.

use std::collections::BTreeMap;

use flotilla_karmada_api::binding::AggregatedStatusItem;
use flotilla_names::karmada::RESOURCE_TEMPLATE_GENERATION_ANNOTATION;
use serde_json::{Map, Value, json};

use crate::Kind;
use crate::fields::{condition_true, conditions, generation, int_at, put_int, status, str_at};

/// A counter of a workload status and whether Kubernetes marks it `omitempty`.
type Counter = (&'static str, bool);

const DEPLOYMENT: &[Counter] = &[
    ("replicas", true),
    ("updatedReplicas", true),
    ("readyReplicas", true),
    ("availableReplicas", true),
    ("unavailableReplicas", true),
];
const STATEFULSET: &[Counter] = &[
    ("replicas", false),
    ("readyReplicas", true),
    ("currentReplicas", true),
    ("updatedReplicas", true),
    ("availableReplicas", false),
];
const REPLICASET: &[Counter] = &[
    ("replicas", false),
    ("readyReplicas", true),
    ("availableReplicas", true),
];
const DAEMONSET: &[Counter] = &[
    ("currentNumberScheduled", false),
    ("numberMisscheduled", false),
    ("desiredNumberScheduled", false),
    ("numberReady", false),
    ("updatedNumberScheduled", true),
    ("numberAvailable", true),
    ("numberUnavailable", true),
];

fn counters(kind: Kind) -> Option<&'static [Counter]> {
    match kind {
        Kind::Deployment => Some(DEPLOYMENT),
        Kind::StatefulSet => Some(STATEFULSET),
        Kind::ReplicaSet => Some(REPLICASET),
        Kind::DaemonSet => Some(DAEMONSET),
        _ => None,
    }
}

// === reflect ===

/// The status to record for a member object in `Work.status.manifestStatuses`; None when the
/// object has no status (or, for a Service, is not a LoadBalancer).
pub fn reflect_status(obj: &Value) -> Option<Value> {
    let st = status(obj)?;
    let st_value = obj.get("status")?;
    let kind = Kind::of(obj);
    if let Some(fields) = counters(kind) {
        let mut out = Map::new();
        // Which spec the member runs (its generation) and which template that spec came from
        // (the annotation the binding controller stamps): the aggregation needs both.
        put_int(&mut out, "generation", generation(obj), true);
        let template_generation = str_at(
            obj,
            &format!(
                "/metadata/annotations/{}",
                RESOURCE_TEMPLATE_GENERATION_ANNOTATION.replace('/', "~1")
            ),
        )
        .parse::<i64>()
        .unwrap_or(0);
        put_int(
            &mut out,
            "resourceTemplateGeneration",
            template_generation,
            true,
        );
        for (name, omit) in fields {
            put_int(&mut out, name, int_at(st_value, &format!("/{name}")), *omit);
        }
        put_int(
            &mut out,
            "observedGeneration",
            int_at(st_value, "/observedGeneration"),
            true,
        );
        return Some(Value::Object(out));
    }
    match kind {
        Kind::Job => {
            let mut out = Map::new();
            for name in ["active", "succeeded", "failed"] {
                put_int(&mut out, name, int_at(st_value, &format!("/{name}")), true);
            }
            for name in ["conditions", "startTime", "completionTime"] {
                if let Some(v) = st.get(name).filter(|v| !v.is_null()) {
                    out.insert(name.to_string(), v.clone());
                }
            }
            Some(Value::Object(out))
        }
        Kind::Service => {
            if str_at(obj, "/spec/type") != "LoadBalancer" {
                return None;
            }
            let lb = st.get("loadBalancer").cloned().unwrap_or_else(|| json!({}));
            Some(json!({ "loadBalancer": lb }))
        }
        _ => Some(st_value.clone()),
    }
}

// === aggregate ===

/// The `aggregatedStatus` item of a member object that is applied and read back directly
/// (merged reads on the host): the same reflected status and health the work status
/// controller records in the Work, so that aggregating these items gives the status
/// propagation writes to the template.
pub fn applied_item(cluster: &str, member: &Value) -> AggregatedStatusItem {
    AggregatedStatusItem {
        cluster_name: cluster.to_string(),
        status: reflect_status(member),
        applied: Some(true),
        applied_message: None,
        health: Some(crate::health(member)),
    }
}

/// The template's new `.status` from the binding's aggregatedStatus items; None: leave the
/// template's status alone (nothing changed, or nothing to aggregate).
///
/// Items may be owned or borrowed (merged reads keep each member object's item and aggregate
/// without copying them).
pub fn aggregate_status<I: std::borrow::Borrow<AggregatedStatusItem>>(
    template: &Value,
    items: &[I],
) -> Option<Value> {
    let items: Vec<&AggregatedStatusItem> = items.iter().map(|i| i.borrow()).collect();
    let items = items.as_slice();
    let old = status(template).cloned().unwrap_or_default();
    let kind = Kind::of(template);
    let new = if let Some(fields) = counters(kind) {
        aggregate_counters(template, &old, items, fields)
    } else {
        match kind {
            Kind::Job => aggregate_job(&old, items)?,
            Kind::CronJob => aggregate_cronjob(&old, items),
            Kind::Pod => aggregate_pod(items)?,
            Kind::Service => aggregate_service(template, items)?,
            Kind::Ingress => aggregate_ingress(items),
            Kind::PersistentVolumeClaim => aggregate_pvc(items),
            _ => reported(items).next()?.1.as_object()?.clone(),
        }
    };
    (new != old).then_some(Value::Object(new))
}

/// Items that carry a status object, with their cluster.
fn reported<'a>(
    items: &'a [&'a AggregatedStatusItem],
) -> impl Iterator<Item = (&'a str, &'a Value)> {
    items.iter().filter_map(|i| {
        i.status
            .as_ref()
            .filter(|s| s.is_object())
            .map(|s| (i.cluster_name.as_str(), s))
    })
}

fn aggregate_counters(
    template: &Value,
    old: &Map<String, Value>,
    items: &[&AggregatedStatusItem],
    fields: &[Counter],
) -> Map<String, Value> {
    let template_generation = generation(template);
    let mut sums = vec![0i64; fields.len()];
    let mut observed = 0usize;
    for (_, st) in reported(items) {
        // The member's controller has seen the spec it was given, and that spec was made
        // from the template's latest generation.
        if int_at(st, "/observedGeneration") >= int_at(st, "/generation")
            && int_at(st, "/resourceTemplateGeneration") >= template_generation
        {
            observed += 1;
        }
        for (sum, (name, _)) in sums.iter_mut().zip(fields) {
            *sum = sum.saturating_add(int_at(st, &format!("/{name}")));
        }
    }
    let mut new = old.clone();
    for (sum, (name, omit)) in sums.into_iter().zip(fields) {
        put_int(&mut new, name, sum, *omit);
    }
    // An item without a status counts as not observed: the template is observed only when
    // every cluster says so.
    if observed == items.len() {
        put_int(&mut new, "observedGeneration", template_generation, true);
    }
    new
}

/// The later of two RFC 3339 times. Kubernetes writes them in UTC with second precision
/// (`2024-05-01T10:00:00Z`), where text order is time order.
fn later<'a>(a: Option<&'a str>, b: Option<&'a str>) -> Option<&'a str> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y > x { y } else { x }),
        (x, y) => x.or(y),
    }
}

fn earlier<'a>(a: Option<&'a str>, b: Option<&'a str>) -> Option<&'a str> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y < x { y } else { x }),
        (x, y) => x.or(y),
    }
}

fn time_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    Some(str_at(v, pointer)).filter(|s| !s.is_empty())
}

fn job_condition(type_: &str, time: Option<&str>, reason: &str, message: &str) -> Value {
    let mut c = json!({"type": type_, "status": "True", "reason": reason, "message": message});
    if let Some(t) = time {
        c["lastProbeTime"] = json!(t);
        c["lastTransitionTime"] = json!(t);
    }
    c
}

fn aggregate_job(
    old: &Map<String, Value>,
    items: &[&AggregatedStatusItem],
) -> Option<Map<String, Value>> {
    let old_value = Value::Object(old.clone());
    // A finished Job's status is final.
    if condition_true(&old_value, "Complete") || condition_true(&old_value, "Failed") {
        return None;
    }
    let n = items.len();
    let (mut active, mut succeeded, mut failed) = (0i64, 0i64, 0i64);
    let mut failed_clusters = Vec::new();
    let (mut completed_jobs, mut criteria_met) = (0usize, 0usize);
    let (mut started, mut start) = (0usize, None);
    let (mut with_completion, mut completion) = (0usize, None);
    let mut failure_time = None;
    for (cluster, st) in reported(items) {
        active = active.saturating_add(int_at(st, "/active"));
        succeeded = succeeded.saturating_add(int_at(st, "/succeeded"));
        failed = failed.saturating_add(int_at(st, "/failed"));
        let finished = conditions(st).find(|c| {
            matches!(str_at(c, "/type"), "Complete" | "Failed") && str_at(c, "/status") == "True"
        });
        if let Some(c) = finished {
            if str_at(c, "/type") == "Complete" {
                completed_jobs += 1;
            } else {
                failed_clusters.push(cluster);
                failure_time = later(failure_time, time_at(c, "/lastTransitionTime"));
            }
        }
        if condition_true(st, "SuccessCriteriaMet") {
            criteria_met += 1;
        }
        if let Some(t) = time_at(st, "/startTime") {
            started += 1;
            start = earlier(start, Some(t));
        }
        if let Some(t) = time_at(st, "/completionTime") {
            with_completion += 1;
            completion = later(completion, Some(t));
        }
    }
    let mut new = Map::new();
    put_int(&mut new, "active", active, true);
    put_int(&mut new, "succeeded", succeeded, true);
    put_int(&mut new, "failed", failed, true);
    let mut conds = Vec::new();
    if !failed_clusters.is_empty() {
        let message = format!(
            "Job failed in member clusters {}",
            failed_clusters.join(",")
        );
        conds.push(job_condition("Failed", failure_time, "JobFailed", &message));
    }
    // No items yet (a fresh binding) is not "all completed".
    if n > 0 && completed_jobs == n {
        conds.push(job_condition(
            "Complete",
            completion,
            "Completed",
            "Job completed",
        ));
        if criteria_met == n {
            conds.push(job_condition(
                "SuccessCriteriaMet",
                completion,
                "CompletionsReached",
                "All member clusters have met success criteria",
            ));
        }
    }
    if !conds.is_empty() {
        new.insert("conditions".into(), Value::Array(conds));
    }
    // The start is set once, when every member has started.
    if let Some(t) = old.get("startTime").filter(|t| !t.is_null()) {
        new.insert("startTime".into(), t.clone());
    } else if let Some(t) = start.filter(|_| n > 0 && started == n) {
        new.insert("startTime".into(), json!(t));
    }
    if let Some(t) = completion.filter(|_| with_completion == n) {
        new.insert("completionTime".into(), json!(t));
    }
    Some(new)
}

fn aggregate_cronjob(
    old: &Map<String, Value>,
    items: &[&AggregatedStatusItem],
) -> Map<String, Value> {
    let mut active = Vec::new();
    let (mut scheduled, mut successful) = (None, None);
    for (_, st) in reported(items) {
        if let Some(a) = st.get("active").and_then(Value::as_array) {
            active.extend(a.iter().cloned());
        }
        scheduled = later(scheduled, time_at(st, "/lastScheduleTime"));
        successful = later(successful, time_at(st, "/lastSuccessfulTime"));
    }
    let mut new = old.clone();
    for (name, value) in [
        ("active", (!active.is_empty()).then(|| Value::Array(active))),
        ("lastScheduleTime", scheduled.map(Value::from)),
        ("lastSuccessfulTime", successful.map(Value::from)),
    ] {
        match value {
            Some(v) => new.insert(name.to_string(), v),
            None => new.remove(name),
        };
    }
    new
}

fn aggregate_pod(items: &[&AggregatedStatusItem]) -> Option<Map<String, Value>> {
    if items.is_empty() {
        return None;
    }
    let mut phases = Vec::new();
    let mut containers = Vec::new();
    let mut init_containers = Vec::new();
    for item in items {
        let Some(st) = item.status.as_ref().filter(|s| s.is_object()) else {
            // Not reported yet: as good as Pending, so the pod does not look done early.
            phases.push("Pending");
            continue;
        };
        phases.push(str_at(st, "/phase"));
        for (key, out) in [
            ("containerStatuses", &mut containers),
            ("initContainerStatuses", &mut init_containers),
        ] {
            for c in st.get(key).and_then(Value::as_array).into_iter().flatten() {
                let mut entry =
                    json!({"ready": c.get("ready").and_then(Value::as_bool).unwrap_or(false)});
                if let Some(state) = c.get("state") {
                    entry["state"] = state.clone();
                }
                out.push(entry);
            }
        }
    }
    let mut new = Map::new();
    // The worst phase wins (Unknown is deprecated and ignored, as in Karmada).
    if let Some(phase) = ["Failed", "Pending", "Running", "Succeeded"]
        .into_iter()
        .find(|p| phases.contains(p))
    {
        new.insert("phase".into(), json!(phase));
    }
    if !containers.is_empty() {
        new.insert("containerStatuses".into(), Value::Array(containers));
    }
    if !init_containers.is_empty() {
        new.insert(
            "initContainerStatuses".into(),
            Value::Array(init_containers),
        );
    }
    Some(new)
}

fn aggregate_service(
    template: &Value,
    items: &[&AggregatedStatusItem],
) -> Option<Map<String, Value>> {
    if str_at(template, "/spec/type") != "LoadBalancer" {
        return None;
    }
    let mut new = Map::new();
    new.insert("loadBalancer".into(), load_balancer(items, true));
    Some(new)
}

/// An Ingress's load balancer: every member's addresses, as for a Service.
fn aggregate_ingress(items: &[&AggregatedStatusItem]) -> Map<String, Value> {
    let mut new = Map::new();
    new.insert("loadBalancer".into(), load_balancer(items, false));
    new
}

/// The members' `loadBalancer.ingress` entries as one, as Karmada aggregates them: entries
/// with the same hostname and IP (and, for a Service, ipMode) are one, with the union of
/// their ports (sorted by port, protocol, then error, none first); entries sorted by
/// hostname (none last), then IP (then ipMode, none last).
fn load_balancer(items: &[&AggregatedStatusItem], with_ip_mode: bool) -> Value {
    type Key = (String, String, Option<String>);
    let mut merged: BTreeMap<Key, (Value, Vec<Value>)> = BTreeMap::new();
    for (_, st) in reported(items) {
        for entry in st
            .pointer("/loadBalancer/ingress")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let ip_mode = entry
                .get("ipMode")
                .and_then(Value::as_str)
                .filter(|_| with_ip_mode)
                .map(str::to_string);
            let key = (
                str_at(entry, "/hostname").to_string(),
                str_at(entry, "/ip").to_string(),
                ip_mode,
            );
            let (_, ports) = merged
                .entry(key)
                .or_insert_with(|| (entry.clone(), Vec::new()));
            for port in entry
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if !ports.contains(port) {
                    ports.push(port.clone());
                }
            }
        }
    }
    let mut entries: Vec<(Key, Value)> = merged
        .into_iter()
        .map(|(key, (mut entry, mut ports))| {
            ports.sort_by(|a, b| {
                let order = |p: &Value| {
                    (
                        p.get("port").and_then(Value::as_i64).unwrap_or(0),
                        str_at(p, "/protocol").to_string(),
                        p.get("error").and_then(Value::as_str).map(str::to_string),
                    )
                };
                order(a).cmp(&order(b))
            });
            if let Value::Object(e) = &mut entry {
                if ports.is_empty() {
                    e.remove("ports");
                } else {
                    e.insert("ports".into(), Value::Array(ports));
                }
            }
            (key, entry)
        })
        .collect();
    // Empty hostnames (and absent ipModes) last.
    entries.sort_by(|(a, _), (b, _)| {
        (a.0.is_empty(), &a.0, &a.1, a.2.is_none(), &a.2).cmp(&(
            b.0.is_empty(),
            &b.0,
            &b.1,
            b.2.is_none(),
            &b.2,
        ))
    });
    if entries.is_empty() {
        json!({})
    } else {
        json!({ "ingress": entries.into_iter().map(|(_, e)| e).collect::<Vec<_>>() })
    }
}

fn aggregate_pvc(items: &[&AggregatedStatusItem]) -> Map<String, Value> {
    let mut phase = "Bound";
    for (_, st) in reported(items) {
        match str_at(st, "/phase") {
            // A lost claim anywhere is the headline.
            "Lost" => {
                phase = "Lost";
                break;
            }
            "Bound" => {}
            other => phase = other,
        }
    }
    let mut new = Map::new();
    new.insert("phase".into(), json!(phase));
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(cluster: &str, status: Option<Value>) -> AggregatedStatusItem {
        AggregatedStatusItem {
            cluster_name: cluster.to_string(),
            status,
            applied: Some(true),
            applied_message: None,
            health: None,
        }
    }

    #[test]
    fn applied_item_reflects_and_judges_health() {
        let obj = member_deploy(2, Some(3), json!({"replicas": 2, "observedGeneration": 2}));
        let got = applied_item("m1", &obj);
        assert_eq!(got.cluster_name, "m1");
        assert_eq!(got.status, reflect_status(&obj));
        assert_eq!(got.health, Some(crate::health(&obj)));
        assert_eq!((got.applied, got.applied_message), (Some(true), None));
    }

    fn member_deploy(generation: i64, template_generation: Option<i64>, status: Value) -> Value {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "generation": generation},
            "status": status});
        if let Some(t) = template_generation {
            d["metadata"]["annotations"] =
                json!({RESOURCE_TEMPLATE_GENERATION_ANNOTATION: t.to_string()});
        }
        d
    }

    #[test]
    fn reflect_table() {
        let table: Vec<(&str, Value, Option<Value>)> = vec![
            (
                "deployment selected fields and generations",
                member_deploy(
                    3,
                    Some(5),
                    json!({"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2,
                        "availableReplicas": 2, "observedGeneration": 3,
                        "conditions": [{"type": "Available", "status": "True"}]}),
                ),
                Some(
                    json!({"generation": 3, "resourceTemplateGeneration": 5, "replicas": 2,
                    "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2,
                    "observedGeneration": 3}),
                ),
            ),
            (
                "deployment without the annotation",
                member_deploy(1, None, json!({"replicas": 1, "unavailableReplicas": 1})),
                Some(json!({"generation": 1, "replicas": 1, "unavailableReplicas": 1})),
            ),
            (
                "deployment without status",
                member_deploy(1, Some(1), Value::Null),
                None,
            ),
            (
                "statefulset keeps observedGeneration",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 2},
                    "status": {"replicas": 0, "observedGeneration": 2, "currentRevision": "x"}}),
                Some(
                    json!({"generation": 2, "replicas": 0, "availableReplicas": 0,
                    "observedGeneration": 2}),
                ),
            ),
            (
                "daemonset",
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
                    "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2,
                        "numberReady": 1, "numberAvailable": 1, "numberUnavailable": 1,
                        "updatedNumberScheduled": 2, "observedGeneration": 1}}),
                Some(
                    json!({"generation": 1, "currentNumberScheduled": 2, "numberMisscheduled": 0,
                    "desiredNumberScheduled": 2, "numberReady": 1, "updatedNumberScheduled": 2,
                    "numberAvailable": 1, "numberUnavailable": 1, "observedGeneration": 1}),
                ),
            ),
            (
                "job",
                json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"active": 1,
                    "startTime": "2024-01-01T00:00:00Z", "ready": 1, "terminating": 0}}),
                Some(json!({"active": 1, "startTime": "2024-01-01T00:00:00Z"})),
            ),
            (
                "loadbalancer service",
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
                    "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}, "conditions": []}}),
                Some(json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})),
            ),
            (
                "clusterip service",
                json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"},
                    "status": {"loadBalancer": {}}}),
                None,
            ),
            (
                "pod: whole status",
                json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": "Running", "podIP": "10.0.0.1"}}),
                Some(json!({"phase": "Running", "podIP": "10.0.0.1"})),
            ),
            (
                "crd: whole status",
                json!({"apiVersion": "example.io/v1", "kind": "Widget", "status": {"ready": true}}),
                Some(json!({"ready": true})),
            ),
            (
                "configmap: none",
                json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}),
                None,
            ),
        ];
        for (name, obj, want) in table {
            assert_eq!(reflect_status(&obj), want, "{name}");
        }
    }

    fn template_deploy(generation: i64, status: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "n", "generation": generation},
            "spec": {"replicas": 4}, "status": status})
    }

    /// A reflected member Deployment status.
    fn reflected(generation: i64, observed: i64, template_generation: i64, n: i64) -> Value {
        reflect_status(&member_deploy(
            generation,
            Some(template_generation),
            json!({"replicas": n, "readyReplicas": n, "updatedReplicas": n,
                "availableReplicas": n, "observedGeneration": observed}),
        ))
        .unwrap()
    }

    #[test]
    fn deployment_aggregation_table() {
        let table: Vec<(&str, Value, Vec<AggregatedStatusItem>, Option<Value>)> = vec![
            (
                "all observed: sums and the template generation",
                template_deploy(2, json!({})),
                vec![
                    item("a", Some(reflected(5, 5, 2, 3))),
                    item("b", Some(reflected(1, 1, 2, 1))),
                ],
                Some(
                    json!({"replicas": 4, "updatedReplicas": 4, "readyReplicas": 4,
                    "availableReplicas": 4, "observedGeneration": 2}),
                ),
            ),
            (
                "a member has not observed its generation: previous observedGeneration kept",
                template_deploy(2, json!({"observedGeneration": 1, "replicas": 4})),
                vec![
                    item("a", Some(reflected(6, 5, 2, 3))),
                    item("b", Some(reflected(1, 1, 2, 1))),
                ],
                Some(
                    json!({"observedGeneration": 1, "replicas": 4, "updatedReplicas": 4,
                    "readyReplicas": 4, "availableReplicas": 4}),
                ),
            ),
            (
                "a member runs an older template: omitted when there was none",
                template_deploy(3, json!({})),
                vec![
                    item("a", Some(reflected(5, 5, 2, 3))),
                    item("b", Some(reflected(1, 1, 3, 1))),
                ],
                Some(
                    json!({"replicas": 4, "updatedReplicas": 4, "readyReplicas": 4,
                    "availableReplicas": 4}),
                ),
            ),
            (
                "a member without status yet",
                template_deploy(2, json!({})),
                vec![item("a", Some(reflected(1, 1, 2, 2))), item("b", None)],
                Some(
                    json!({"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
                    "availableReplicas": 2}),
                ),
            ),
            (
                "unchanged: nothing to write",
                template_deploy(
                    2,
                    json!({"replicas": 1, "updatedReplicas": 1,
                    "readyReplicas": 1, "availableReplicas": 1, "observedGeneration": 2,
                    "conditions": [{"type": "Available", "status": "True"}]}),
                ),
                vec![item("a", Some(reflected(1, 1, 2, 1)))],
                None,
            ),
            (
                "scaled to zero drops the counters, keeps conditions",
                template_deploy(
                    3,
                    json!({"replicas": 1, "readyReplicas": 1, "observedGeneration": 2,
                    "conditions": [{"type": "Available", "status": "True"}]}),
                ),
                vec![item("a", Some(reflected(2, 2, 3, 0)))],
                Some(json!({"observedGeneration": 3,
                    "conditions": [{"type": "Available", "status": "True"}]})),
            ),
        ];
        for (name, template, items, want) in table {
            let got = aggregate_status(&template, &items);
            assert_eq!(
                got.as_ref().map(|v| sorted(v.clone())),
                want.map(sorted),
                "{name}"
            );
        }
    }

    /// Key order does not matter for the comparisons here.
    fn sorted(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut pairs: Vec<(String, Value)> = m.into_iter().collect();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
            other => other,
        }
    }

    #[test]
    fn other_workload_aggregations() {
        let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 1}, "status": {}});
        let member = |n: i64| {
            json!({"generation": 1, "resourceTemplateGeneration": 1, "observedGeneration": 1,
                "replicas": n, "readyReplicas": n, "currentReplicas": n, "updatedReplicas": n,
                "availableReplicas": n})
        };
        let got = aggregate_status(
            &sts,
            &[item("a", Some(member(2))), item("b", Some(member(1)))],
        );
        assert_eq!(
            got.map(sorted),
            Some(sorted(
                json!({"replicas": 3, "readyReplicas": 3, "currentReplicas": 3,
                "updatedReplicas": 3, "availableReplicas": 3, "observedGeneration": 1})
            ))
        );

        let rs =
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generation": 1}});
        let got = aggregate_status(
            &rs,
            &[item(
                "a",
                Some(json!({"replicas": 2, "readyReplicas": 1, "availableReplicas": 1})),
            )],
        );
        // generation 0 < template generation 1: not observed.
        assert_eq!(
            got.map(sorted),
            Some(sorted(
                json!({"replicas": 2, "readyReplicas": 1, "availableReplicas": 1})
            ))
        );

        let ds =
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 2}});
        let m = json!({"generation": 1, "resourceTemplateGeneration": 2, "observedGeneration": 1,
            "currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberReady": 2,
            "numberAvailable": 2, "updatedNumberScheduled": 2, "numberMisscheduled": 0});
        let got = aggregate_status(&ds, &[item("a", Some(m.clone())), item("b", Some(m))]);
        assert_eq!(
            got.map(sorted),
            Some(sorted(
                json!({"currentNumberScheduled": 4, "numberMisscheduled": 0,
                "desiredNumberScheduled": 4, "numberReady": 4, "updatedNumberScheduled": 4,
                "numberAvailable": 4, "observedGeneration": 2})
            ))
        );
    }

    fn job_template(status: Value) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generation": 1}, "status": status})
    }

    #[test]
    fn job_aggregation_table() {
        let complete = |start: &str, end: &str, succeeded: i64| {
            json!({"succeeded": succeeded, "startTime": start, "completionTime": end,
                "conditions": [{"type": "Complete", "status": "True", "lastTransitionTime": end}]})
        };
        let running = |start: &str, active: i64| json!({"active": active, "startTime": start});
        let failed = json!({"failed": 2, "startTime": "2024-01-01T00:00:03Z",
            "conditions": [{"type": "Failed", "status": "True", "lastTransitionTime": "2024-01-01T00:09:00Z"}]});
        let table: Vec<(&str, Value, Vec<AggregatedStatusItem>, Option<Value>)> = vec![
            (
                "all complete",
                job_template(json!({})),
                vec![
                    item(
                        "a",
                        Some(complete("2024-01-01T00:00:05Z", "2024-01-01T00:10:00Z", 7)),
                    ),
                    item(
                        "b",
                        Some(complete("2024-01-01T00:00:02Z", "2024-01-01T00:12:00Z", 3)),
                    ),
                ],
                Some(json!({"succeeded": 10,
                    "conditions": [{"type": "Complete", "status": "True", "reason": "Completed",
                        "message": "Job completed", "lastProbeTime": "2024-01-01T00:12:00Z",
                        "lastTransitionTime": "2024-01-01T00:12:00Z"}],
                    "startTime": "2024-01-01T00:00:02Z",
                    "completionTime": "2024-01-01T00:12:00Z"})),
            ),
            (
                "one still running: no completion yet",
                job_template(json!({})),
                vec![
                    item(
                        "a",
                        Some(complete("2024-01-01T00:00:05Z", "2024-01-01T00:10:00Z", 7)),
                    ),
                    item("b", Some(running("2024-01-01T00:00:02Z", 1))),
                ],
                Some(json!({"active": 1, "succeeded": 7, "startTime": "2024-01-01T00:00:02Z"})),
            ),
            (
                "one failed",
                job_template(json!({})),
                vec![
                    item("a", Some(running("2024-01-01T00:00:05Z", 2))),
                    item("b", Some(failed.clone())),
                ],
                Some(json!({"active": 2, "failed": 2,
                    "conditions": [{"type": "Failed", "status": "True", "reason": "JobFailed",
                        "message": "Job failed in member clusters b",
                        "lastProbeTime": "2024-01-01T00:09:00Z",
                        "lastTransitionTime": "2024-01-01T00:09:00Z"}],
                    "startTime": "2024-01-01T00:00:03Z"})),
            ),
            (
                "not all started: no startTime; template's kept when set",
                job_template(json!({"startTime": "2023-12-31T00:00:00Z"})),
                vec![
                    item("a", Some(running("2024-01-01T00:00:05Z", 1))),
                    item("b", None),
                ],
                Some(json!({"active": 1, "startTime": "2023-12-31T00:00:00Z"})),
            ),
            (
                "finished template is frozen",
                job_template(json!({"conditions": [{"type": "Complete", "status": "True"}]})),
                vec![item("a", Some(running("2024-01-01T00:00:05Z", 1)))],
                None,
            ),
            (
                "no items, nothing reported",
                job_template(json!({})),
                vec![],
                None,
            ),
        ];
        for (name, template, items, want) in table {
            assert_eq!(
                aggregate_status(&template, &items).map(sorted),
                want.map(sorted),
                "{name}"
            );
        }
    }

    #[test]
    fn load_balancers_of_every_member_deduplicated_and_sorted_as_karmada() {
        let ingress =
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "status": {}});
        let items = vec![
            item(
                "a",
                Some(json!({"loadBalancer": {"ingress": [
                    {"ip": "10.0.0.2", "ports": [{"port": 443, "protocol": "TCP"}]},
                    {"hostname": "b.example.com"},
                ]}})),
            ),
            item(
                "b",
                Some(json!({"loadBalancer": {"ingress": [
                    {"ip": "10.0.0.2", "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]},
                    {"hostname": "a.example.com", "ip": "10.0.0.9"},
                ]}})),
            ),
            item("c", None),
        ];
        let got = aggregate_status(&ingress, &items).unwrap();
        assert_eq!(
            got["loadBalancer"]["ingress"],
            json!([
                {"hostname": "a.example.com", "ip": "10.0.0.9"},
                {"hostname": "b.example.com"},
                {"ip": "10.0.0.2", "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]},
            ])
        );
        // Nothing reported: an empty load balancer; the same again: no change.
        let none = aggregate_status(&ingress, &[item("a", Some(json!({})))]).unwrap();
        assert_eq!(none["loadBalancer"], json!({}));
        let settled =
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "status": got});
        assert_eq!(aggregate_status(&settled, &items), None);
    }

    #[test]
    fn pod_service_pvc_cronjob_and_default() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "status": {}});
        let table: Vec<(Vec<AggregatedStatusItem>, Option<&str>)> = vec![
            (
                vec![
                    item("a", Some(json!({"phase": "Running"}))),
                    item("b", Some(json!({"phase": "Succeeded"}))),
                ],
                Some("Running"),
            ),
            (
                vec![
                    item("a", Some(json!({"phase": "Running"}))),
                    item("b", None),
                ],
                Some("Pending"),
            ),
            (
                vec![
                    item("a", Some(json!({"phase": "Pending"}))),
                    item("b", Some(json!({"phase": "Failed"}))),
                ],
                Some("Failed"),
            ),
            (
                vec![item("a", Some(json!({"phase": "Succeeded"})))],
                Some("Succeeded"),
            ),
        ];
        for (items, want) in table {
            let got = aggregate_status(&pod, &items).unwrap();
            assert_eq!(got.get("phase").and_then(Value::as_str), want, "{items:?}");
        }
        assert_eq!(aggregate_status::<AggregatedStatusItem>(&pod, &[]), None);
        let got = aggregate_status(
            &pod,
            &[item(
                "a",
                Some(json!({"phase": "Running", "containerStatuses": [
                {"name": "c", "ready": true, "state": {"running": {}}, "restartCount": 0}]})),
            )],
        )
        .unwrap();
        assert_eq!(
            got["containerStatuses"],
            json!([{"ready": true, "state": {"running": {}}}])
        );

        let svc = json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
            "status": {"loadBalancer": {}}});
        let lb = |ips: &[&str]| json!({"loadBalancer": {"ingress": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>()}});
        let got = aggregate_status(
            &svc,
            &[
                item("b", Some(lb(&["10.0.0.2", "10.0.0.1"]))),
                item("a", Some(lb(&["10.0.0.1"]))),
            ],
        );
        assert_eq!(got, Some(lb(&["10.0.0.1", "10.0.0.2"])));
        assert_eq!(
            aggregate_status(&svc, &[item("a", Some(json!({"loadBalancer": {}})))]),
            None
        );
        let cluster_ip =
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"}});
        assert_eq!(
            aggregate_status(&cluster_ip, &[item("a", Some(lb(&["1.1.1.1"])))]),
            None
        );

        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Pending"}});
        let phase = |items: &[AggregatedStatusItem]| {
            aggregate_status(&pvc, items).map(|s| s["phase"].as_str().unwrap_or("").to_string())
        };
        let p = |s: &str| Some(json!({"phase": s}));
        assert_eq!(
            phase(&[item("a", p("Bound")), item("b", p("Bound"))]).as_deref(),
            Some("Bound")
        );
        assert_eq!(
            phase(&[
                item("a", p("Bound")),
                item("b", p("Lost")),
                item("c", p("Pending"))
            ])
            .as_deref(),
            Some("Lost")
        );
        assert_eq!(
            phase(&[item("a", p("Pending")), item("b", p("Bound"))]),
            None,
            "unchanged"
        );

        let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "status": {}});
        let got = aggregate_status(
            &cron,
            &[
                item(
                    "a",
                    Some(
                        json!({"active": [{"name": "j1"}], "lastScheduleTime": "2024-01-01T01:00:00Z"}),
                    ),
                ),
                item(
                    "b",
                    Some(
                        json!({"active": [{"name": "j2"}], "lastScheduleTime": "2024-01-01T02:00:00Z",
                    "lastSuccessfulTime": "2024-01-01T00:30:00Z"}),
                    ),
                ),
            ],
        );
        assert_eq!(
            got.map(sorted),
            Some(sorted(json!({"active": [{"name": "j1"}, {"name": "j2"}],
                "lastScheduleTime": "2024-01-01T02:00:00Z", "lastSuccessfulTime": "2024-01-01T00:30:00Z"})))
        );

        let crd =
            json!({"apiVersion": "example.io/v1", "kind": "Widget", "status": {"ready": false}});
        assert_eq!(
            aggregate_status(
                &crd,
                &[
                    item("a", None),
                    item("b", Some(json!({"ready": true}))),
                    item("c", Some(json!({"ready": false})))
                ]
            ),
            Some(json!({"ready": true}))
        );
        assert_eq!(
            aggregate_status(&crd, &[item("a", Some(json!({"ready": false})))]),
            None
        );
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
        assert_eq!(aggregate_status(&cm, &[item("a", None)]), None);
    }
}
