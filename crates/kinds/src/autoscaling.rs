//! autoscaling HorizontalPodAutoscaler, served as `v2` (the storage version) and `v1`:
//! the checks and defaults of v2 objects, and the one place where the two versions are
//! mapped onto each other ([`convert_hpa`]).
//!
//! v1 knows a single CPU target (`spec.targetCPUUtilizationPercentage`) where v2 has a list of
//! `metrics`; what v1 cannot express travels in annotations, as kube-apiserver does, so a
//! round trip through v1 loses nothing:
//!
//! ```text
//! v2 spec.metrics[Resource cpu Utilization N] <-> v1 spec.targetCPUUtilizationPercentage N
//! v2 spec.metrics[every other metric]          <-> annotation autoscaling.alpha.kubernetes.io/metrics
//! v2 spec.behavior                             <-> annotation autoscaling.alpha.kubernetes.io/behavior
//! v2 status.currentMetrics[Resource cpu]       <-> v1 status.currentCPUUtilizationPercentage
//! v2 status.currentMetrics[other]              <-> annotation autoscaling.alpha.kubernetes.io/current-metrics
//! v2 status.conditions                         <-> annotation autoscaling.alpha.kubernetes.io/conditions
//! ```

use k8s_openapi::api::autoscaling::v2::{
    HPAScalingRules, HorizontalPodAutoscaler, MetricSpec, MetricTarget,
};
use serde_json::{Map, Value, json};

use crate::defaults;
use crate::field::{Errs, index, join};
use crate::names;

/// The annotations that carry what v1 cannot express.
pub(crate) const METRICS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/metrics";
pub(crate) const BEHAVIOR_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/behavior";
pub(crate) const CURRENT_METRICS_ANNOTATION: &str =
    "autoscaling.alpha.kubernetes.io/current-metrics";
pub(crate) const CONDITIONS_ANNOTATION: &str = "autoscaling.alpha.kubernetes.io/conditions";

const METRIC_TYPES: [&str; 5] = [
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];

pub(crate) fn validate_hpa(ctx: &crate::kind::Ctx<'_, HorizontalPodAutoscaler>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec", "");
        return;
    };
    let r = &spec.scale_target_ref;
    if r.kind.is_empty() {
        errs.required("spec.scaleTargetRef.kind", "");
    } else if let Err(m) = names::path_segment(&r.kind) {
        errs.invalid(
            "spec.scaleTargetRef.kind",
            &Value::from(r.kind.as_str()),
            &m,
        );
    }
    if r.name.is_empty() {
        errs.required("spec.scaleTargetRef.name", "");
    } else if let Err(m) = names::path_segment(&r.name) {
        errs.invalid(
            "spec.scaleTargetRef.name",
            &Value::from(r.name.as_str()),
            &m,
        );
    }
    if let Some(min) = spec.min_replicas.filter(|m| *m < 1) {
        errs.invalid(
            "spec.minReplicas",
            &Value::from(min),
            "must be greater than or equal to 1",
        );
    }
    if spec.max_replicas < 1 {
        errs.invalid(
            "spec.maxReplicas",
            &Value::from(spec.max_replicas),
            "must be greater than 0",
        );
    }
    if let Some(min) = spec.min_replicas
        && spec.max_replicas < min
    {
        errs.invalid(
            "spec.maxReplicas",
            &Value::from(spec.max_replicas),
            "must be greater than or equal to `minReplicas`",
        );
    }
    for (i, m) in spec.metrics.iter().flatten().enumerate() {
        validate_metric(m, &index("spec.metrics", i), errs);
    }
    if let Some(b) = &spec.behavior {
        if let Some(up) = &b.scale_up {
            validate_rules(up, "spec.behavior.scaleUp", errs);
        }
        if let Some(down) = &b.scale_down {
            validate_rules(down, "spec.behavior.scaleDown", errs);
        }
    }
}

fn validate_metric(m: &MetricSpec, path: &str, errs: &mut Errs) {
    let type_path = join(path, "type");
    if m.type_.is_empty() {
        errs.required(&type_path, "must specify a metric source type");
        return;
    }
    if !METRIC_TYPES.contains(&m.type_.as_str()) {
        errs.not_supported(&type_path, &m.type_, &METRIC_TYPES);
        return;
    }
    // Exactly the source named by `type` is set.
    let sources = [
        (
            "ContainerResource",
            "containerResource",
            m.container_resource.is_some(),
        ),
        ("External", "external", m.external.is_some()),
        ("Object", "object", m.object.is_some()),
        ("Pods", "pods", m.pods.is_some()),
        ("Resource", "resource", m.resource.is_some()),
    ];
    for (ty, field, set) in sources {
        if ty == m.type_ && !set {
            errs.required(
                &join(path, field),
                "must populate information for the given metric source",
            );
        }
        if ty != m.type_ && set {
            errs.forbidden(
                &join(path, field),
                "must populate the given metric source only",
            );
        }
    }
    if let Some(r) = &m.resource {
        let p = join(path, "resource");
        if r.name.is_empty() {
            errs.required(&join(&p, "name"), "");
        }
        validate_target(&r.target, &join(&p, "target"), errs);
    }
    if let Some(r) = &m.container_resource {
        let p = join(path, "containerResource");
        if r.name.is_empty() {
            errs.required(&join(&p, "name"), "");
        }
        if r.container.is_empty() {
            errs.required(&join(&p, "container"), "");
        }
        validate_target(&r.target, &join(&p, "target"), errs);
    }
    if let Some(p_) = &m.pods {
        let p = join(path, "pods");
        if p_.metric.name.is_empty() {
            errs.required(&join(&p, "metric.name"), "");
        }
        validate_target(&p_.target, &join(&p, "target"), errs);
    }
    if let Some(o) = &m.object {
        let p = join(path, "object");
        if o.metric.name.is_empty() {
            errs.required(&join(&p, "metric.name"), "");
        }
        if o.described_object.kind.is_empty() {
            errs.required(&join(&p, "describedObject.kind"), "");
        }
        if o.described_object.name.is_empty() {
            errs.required(&join(&p, "describedObject.name"), "");
        }
        validate_target(&o.target, &join(&p, "target"), errs);
    }
    if let Some(e) = &m.external {
        let p = join(path, "external");
        if e.metric.name.is_empty() {
            errs.required(&join(&p, "metric.name"), "");
        }
        validate_target(&e.target, &join(&p, "target"), errs);
    }
}

fn validate_target(t: &MetricTarget, path: &str, errs: &mut Errs) {
    let type_path = join(path, "type");
    let supported = ["AverageValue", "Utilization", "Value"];
    if t.type_.is_empty() {
        errs.required(&type_path, "must specify a metric target type");
    } else if !supported.contains(&t.type_.as_str()) {
        errs.not_supported(&type_path, &t.type_, &supported);
    }
    if let Some(u) = t.average_utilization.filter(|u| *u <= 0) {
        errs.invalid(
            &join(path, "averageUtilization"),
            &Value::from(u),
            "must be greater than 0",
        );
    }
    let missing = match t.type_.as_str() {
        "Utilization" if t.average_utilization.is_none() => Some("averageUtilization"),
        "AverageValue" if t.average_value.is_none() => Some("averageValue"),
        "Value" if t.value.is_none() => Some("value"),
        _ => None,
    };
    if let Some(field) = missing {
        errs.required(
            &join(path, field),
            &format!("must set {field} when type is {}", t.type_),
        );
    }
}

fn validate_rules(r: &HPAScalingRules, path: &str, errs: &mut Errs) {
    if let Some(w) = r.stabilization_window_seconds
        && !(0..=3600).contains(&w)
    {
        errs.invalid(
            &join(path, "stabilizationWindowSeconds"),
            &Value::from(w),
            "must be less than or equal to 3600 and greater than or equal to 0",
        );
    }
    errs.one_of(
        &join(path, "selectPolicy"),
        r.select_policy.as_deref(),
        &["Disabled", "Max", "Min"],
    );
    for (i, p) in r.policies.iter().flatten().enumerate() {
        let pp = index(&join(path, "policies"), i);
        if !["Percent", "Pods"].contains(&p.type_.as_str()) {
            errs.not_supported(&join(&pp, "type"), &p.type_, &["Percent", "Pods"]);
        }
        if p.value <= 0 {
            errs.invalid(
                &join(&pp, "value"),
                &Value::from(p.value),
                "must be greater than zero",
            );
        }
        if !(1..=1800).contains(&p.period_seconds) {
            errs.invalid(
                &join(&pp, "periodSeconds"),
                &Value::from(p.period_seconds),
                "must be greater than zero and less than or equal to 1800",
            );
        }
    }
}

/// v2 defaults: `minReplicas` 1, a CPU utilization target of 80% when no metric is given, and
/// the scaling rules of a `behavior` that is set.
pub(crate) fn default_hpa(obj: &mut Value) {
    let Some(spec) = defaults::existing(obj, "spec") else {
        return;
    };
    defaults::set(spec, "minReplicas", json!(1));
    let no_metrics = spec
        .get("metrics")
        .is_none_or(|m| m.is_null() || m.as_array().is_some_and(Vec::is_empty));
    if no_metrics {
        spec["metrics"] = json!([cpu_metric(80)]);
    }
    if let Some(behavior) = defaults::existing(spec, "behavior") {
        if let Some(up) = defaults::object(behavior, "scaleUp") {
            defaults::set(up, "stabilizationWindowSeconds", json!(0));
            defaults::set(up, "selectPolicy", json!("Max"));
            defaults::set(
                up,
                "policies",
                json!([
                    {"type": "Pods", "value": 4, "periodSeconds": 15},
                    {"type": "Percent", "value": 100, "periodSeconds": 15}
                ]),
            );
        }
        if let Some(down) = defaults::object(behavior, "scaleDown") {
            defaults::set(down, "stabilizationWindowSeconds", json!(300));
            defaults::set(down, "selectPolicy", json!("Max"));
            defaults::set(
                down,
                "policies",
                json!([{"type": "Percent", "value": 100, "periodSeconds": 15}]),
            );
        }
    }
}

/// A v2 Resource metric targeting `percent` average CPU utilization.
fn cpu_metric(percent: i64) -> Value {
    json!({
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": percent}}
    })
}

/// The utilization of a v2 CPU Resource metric spec, if `m` is one.
fn cpu_target(m: &Value) -> Option<i64> {
    if m.get("type")?.as_str()? != "Resource" {
        return None;
    }
    let r = m.get("resource")?;
    if r.get("name")?.as_str()? != "cpu" {
        return None;
    }
    let t = r.get("target")?;
    if t.get("type")?.as_str()? != "Utilization" {
        return None;
    }
    t.get("averageUtilization")?.as_i64()
}

/// The utilization of a v2 CPU Resource metric status, if `m` is one.
fn cpu_current(m: &Value) -> Option<i64> {
    if m.get("type")?.as_str()? != "Resource" {
        return None;
    }
    let r = m.get("resource")?;
    if r.get("name")?.as_str()? != "cpu" {
        return None;
    }
    r.get("current")?.get("averageUtilization")?.as_i64()
}

/// Converts a HorizontalPodAutoscaler (v1 or v2 JSON) to `version` (`v1` or `v2`); any other
/// target version, or an object of an unknown version, is returned relabelled only.
pub(crate) fn convert_hpa(obj: &Value, version: &str) -> Value {
    let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let mut out = match (from, version) {
        ("autoscaling/v2", "v1") => v2_to_v1(obj),
        ("autoscaling/v1", "v2") => v1_to_v2(obj),
        _ => obj.clone(),
    };
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), json!(format!("autoscaling/{version}")));
    }
    out
}

/// Sets (or removes, for `None`) an annotation.
fn set_annotation(obj: &mut Map<String, Value>, key: &str, value: Option<String>) {
    let metadata = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(metadata) = metadata.as_object_mut() else {
        return;
    };
    match value {
        Some(v) => {
            let ann = metadata
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(ann) = ann.as_object_mut() {
                ann.insert(key.to_string(), Value::String(v));
            }
        }
        None => {
            if let Some(ann) = metadata
                .get_mut("annotations")
                .and_then(Value::as_object_mut)
            {
                ann.remove(key);
                if ann.is_empty() {
                    metadata.remove("annotations");
                }
            }
        }
    }
}

/// Takes an annotation holding JSON out of the object.
fn take_annotation(obj: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let raw = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
        .map(str::to_string)?;
    set_annotation(obj, key, None);
    serde_json::from_str(&raw).ok()
}

fn v2_to_v1(obj: &Value) -> Value {
    let mut out = obj.clone();
    let Some(root) = out.as_object_mut() else {
        return out;
    };
    if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = match spec.remove("metrics") {
            Some(Value::Array(m)) => m,
            _ => Vec::new(),
        };
        let behavior = spec.remove("behavior").filter(|b| !b.is_null());
        let cpu = metrics.iter().position(|m| cpu_target(m).is_some());
        if let Some(i) = cpu {
            spec.insert(
                "targetCPUUtilizationPercentage".into(),
                json!(cpu_target(&metrics[i])),
            );
        }
        let others: Vec<Value> = metrics
            .into_iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != cpu)
            .map(|(_, m)| m)
            .collect();
        let others = (!others.is_empty()).then(|| Value::Array(others).to_string());
        let behavior = behavior.map(|b| b.to_string());
        set_annotation(root, METRICS_ANNOTATION, others);
        set_annotation(root, BEHAVIOR_ANNOTATION, behavior);
    }
    if let Some(status) = root.get_mut("status").and_then(Value::as_object_mut) {
        let current = match status.remove("currentMetrics") {
            Some(Value::Array(m)) => m,
            _ => Vec::new(),
        };
        let conditions = status
            .remove("conditions")
            .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()));
        let cpu = current.iter().position(|m| cpu_current(m).is_some());
        if let Some(i) = cpu {
            status.insert(
                "currentCPUUtilizationPercentage".into(),
                json!(cpu_current(&current[i])),
            );
        }
        // Required in v1 (optional in v2).
        status.entry("currentReplicas").or_insert_with(|| json!(0));
        let others: Vec<Value> = current
            .into_iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != cpu)
            .map(|(_, m)| m)
            .collect();
        let others = (!others.is_empty()).then(|| Value::Array(others).to_string());
        let conditions = conditions.map(|c| c.to_string());
        set_annotation(root, CURRENT_METRICS_ANNOTATION, others);
        set_annotation(root, CONDITIONS_ANNOTATION, conditions);
    }
    out
}

fn v1_to_v2(obj: &Value) -> Value {
    let mut out = obj.clone();
    let Some(root) = out.as_object_mut() else {
        return out;
    };
    let others = take_annotation(root, METRICS_ANNOTATION);
    let behavior = take_annotation(root, BEHAVIOR_ANNOTATION);
    let current_others = take_annotation(root, CURRENT_METRICS_ANNOTATION);
    let conditions = take_annotation(root, CONDITIONS_ANNOTATION);
    if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
        let mut metrics = Vec::new();
        match spec.remove("targetCPUUtilizationPercentage") {
            Some(Value::Number(n)) => match n.as_i64() {
                Some(p) => metrics.push(cpu_metric(p)),
                // Not an integer: keep it where validation of v2 reports it as unknown.
                None => {
                    spec.insert("targetCPUUtilizationPercentage".into(), Value::Number(n));
                }
            },
            Some(Value::Null) | None => {}
            Some(other) => {
                spec.insert("targetCPUUtilizationPercentage".into(), other);
            }
        }
        if let Some(Value::Array(o)) = others {
            metrics.extend(o);
        }
        if !metrics.is_empty() {
            spec.insert("metrics".into(), Value::Array(metrics));
        }
        if let Some(b) = behavior.filter(Value::is_object) {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = root.get_mut("status").and_then(Value::as_object_mut) {
        let mut current = Vec::new();
        if let Some(p) = status
            .remove("currentCPUUtilizationPercentage")
            .and_then(|v| v.as_i64())
        {
            current.push(json!({
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": p}}
            }));
        }
        if let Some(Value::Array(o)) = current_others {
            current.extend(o);
        }
        if !current.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(current));
        }
        if let Some(c) = conditions.filter(Value::is_array) {
            status.insert("conditions".into(), c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(spec: Value) -> Value {
        json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
               "metadata": {"name": "web", "namespace": "default"}, "spec": spec})
    }

    #[test]
    fn v1_cpu_target_becomes_a_v2_metric_and_back() {
        let v1_obj = v1(json!({
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60
        }));
        let v2 = convert_hpa(&v1_obj, "v2");
        assert_eq!(v2["apiVersion"], "autoscaling/v2");
        assert_eq!(v2["spec"]["metrics"], json!([cpu_metric(60)]));
        assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert_eq!(v2["spec"]["minReplicas"], 2);
        assert_eq!(convert_hpa(&v2, "v1"), v1_obj);
    }

    #[test]
    fn v2_metrics_v1_cannot_express_travel_in_annotations() {
        let pods = json!({"type": "Pods", "pods": {"metric": {"name": "qps"},
                          "target": {"type": "AverageValue", "averageValue": "10"}}});
        let v2 = json!({
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                "metrics": [pods.clone(), cpu_metric(70)],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}
            },
            "status": {
                "desiredReplicas": 2, "currentReplicas": 2,
                "currentMetrics": [{"type": "Resource",
                    "resource": {"name": "cpu", "current": {"averageUtilization": 40}}}],
                "conditions": [{"type": "AbleToScale", "status": "True"}]
            }
        });
        let v1 = convert_hpa(&v2, "v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        assert!(v1["spec"].get("metrics").is_none());
        let ann = &v1["metadata"]["annotations"];
        let others: Value =
            serde_json::from_str(ann[METRICS_ANNOTATION].as_str().unwrap()).unwrap();
        assert_eq!(others, json!([pods]));
        assert!(ann[BEHAVIOR_ANNOTATION].is_string());
        assert!(ann[CONDITIONS_ANNOTATION].is_string());
        assert_eq!(v1["status"]["currentCPUUtilizationPercentage"], 40);
        // Back to v2: nothing lost (the CPU metric comes first now).
        let back = convert_hpa(&v1, "v2");
        assert_eq!(back["spec"]["metrics"], json!([cpu_metric(70), pods]));
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"], v2["status"]);
        assert!(back["metadata"].get("annotations").is_none());
    }

    #[test]
    fn v2_defaults_fill_min_replicas_and_the_cpu_metric() {
        let mut obj = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"},
                             "maxReplicas": 3, "behavior": {"scaleDown": {}}}});
        default_hpa(&mut obj);
        assert_eq!(obj["spec"]["minReplicas"], 1);
        assert_eq!(obj["spec"]["metrics"], json!([cpu_metric(80)]));
        assert_eq!(
            obj["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"],
            300
        );
        assert_eq!(obj["spec"]["behavior"]["scaleUp"]["selectPolicy"], "Max");
        // A given metric is kept.
        let mut obj = json!({"spec": {"metrics": [cpu_metric(50)], "maxReplicas": 3}});
        default_hpa(&mut obj);
        assert_eq!(obj["spec"]["metrics"], json!([cpu_metric(50)]));
    }
}
