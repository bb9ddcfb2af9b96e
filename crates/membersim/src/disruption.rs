//! PodDisruptionBudget status, as kube-controller-manager's disruption controller computes
//! it: which Pods a budget covers, how many must stay healthy, how many are, and so how many
//! may be disrupted now (`disruptionsAllowed`, the `DisruptionAllowed` condition).
//!
//! - `minAvailable` as a number: that many must be healthy, of the Pods the selector matches;
//! - `minAvailable` as a percentage, or `maxUnavailable`: of the Pods the budget's
//!   controllers want (each distinct controller's `spec.replicas`; a Pod of a ReplicaSet of a
//!   Deployment counts the Deployment), percentages rounded up; Pods without a controller
//!   count for nothing;
//! - healthy: Running, Ready, not being deleted;
//! - `disruptionsAllowed` = healthy - desired (never below 0; 0 while nothing is expected).

use flotilla_apimachinery::selector::LabelSelector;
use serde_json::{Value, json};

/// The desired replicas of the controller of a Pod, identified by the controller's uid.
pub(crate) struct Scale {
    pub uid: String,
    pub replicas: i64,
}

/// `value` of an int-or-string (`3` or `"30%"`) against `total`, rounded up for percentages.
fn scaled(value: &Value, total: i64) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => {
            let percent: i64 = s.strip_suffix('%')?.parse().ok()?;
            Some((percent * total + 99) / 100)
        }
        _ => None,
    }
}

fn healthy(pod: &Value) -> bool {
    pod.pointer("/status/phase").and_then(Value::as_str) == Some("Running")
        && pod.pointer("/metadata/deletionTimestamp").is_none()
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

/// The status of `pdb` over the Pods of its namespace (`pods`), `scale_of` giving a Pod's
/// controller and its desired replicas.
pub(crate) fn status(
    pdb: &Value,
    pods: &[std::sync::Arc<Value>],
    scale_of: impl Fn(&Value) -> Option<Scale>,
    old: Option<&Value>,
    now: &str,
) -> Value {
    // A budget without a selector covers no Pods (policy/v1); `{}` covers them all.
    let selector = pdb
        .pointer("/spec/selector")
        .filter(|s| !s.is_null())
        .and_then(|s| LabelSelector::from_object(s).ok());
    let covered: Vec<&Value> = match &selector {
        Some(sel) => pods
            .iter()
            .map(|p| p.as_ref())
            .filter(|p| sel.matches(p.pointer("/metadata/labels").and_then(Value::as_object)))
            .collect(),
        None => Vec::new(),
    };
    let controllers_want = || -> i64 {
        let mut seen = std::collections::BTreeMap::new();
        for p in &covered {
            if let Some(s) = scale_of(p) {
                seen.insert(s.uid, s.replicas);
            }
        }
        seen.values().sum()
    };
    let spec = pdb.get("spec").cloned().unwrap_or_default();
    let (expected, desired) = match (spec.get("minAvailable"), spec.get("maxUnavailable")) {
        (_, Some(max)) if !max.is_null() => {
            let expected = controllers_want();
            let unavailable = scaled(max, expected).unwrap_or(0);
            (expected, (expected - unavailable).max(0))
        }
        (Some(Value::Number(n)), _) => (covered.len() as i64, n.as_i64().unwrap_or(0)),
        (Some(min @ Value::String(_)), _) => {
            let expected = controllers_want();
            (expected, scaled(min, expected).unwrap_or(0))
        }
        _ => (covered.len() as i64, 0),
    };
    let current = covered.iter().filter(|p| healthy(p)).count() as i64;
    let allowed = if expected <= 0 {
        0
    } else {
        (current - desired).max(0)
    };
    let generation = pdb
        .pointer("/metadata/generation")
        .cloned()
        .unwrap_or(json!(0));
    let (condition_status, reason) = if allowed > 0 {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    let since = old
        .and_then(|o| o.get("conditions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "DisruptionAllowed" && c["status"] == condition_status)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    json!({
        "observedGeneration": generation,
        "disruptionsAllowed": allowed,
        "currentHealthy": current,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [{
            "type": "DisruptionAllowed",
            "status": condition_status,
            "reason": reason,
            "message": "",
            "observedGeneration": generation,
            "lastTransitionTime": since,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn pod(name: &str, ready: bool) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name, "labels": {"app": "web"}},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}}))
    }

    fn pdb(spec: Value) -> Value {
        json!({"metadata": {"name": "b", "generation": 2},
               "spec": {"selector": {"matchLabels": {"app": "web"}}}})
        .as_object()
        .map(|o| {
            let mut o = o.clone();
            if let (Some(Value::Object(s)), Some(extra)) = (o.get_mut("spec"), spec.as_object()) {
                s.extend(extra.clone());
            }
            Value::Object(o)
        })
        .unwrap()
    }

    fn of_deployment(_: &Value) -> Option<Scale> {
        Some(Scale {
            uid: "d1".into(),
            replicas: 4,
        })
    }

    #[test]
    fn budgets_as_the_disruption_controller_computes_them() {
        let pods = [
            pod("a", true),
            pod("b", true),
            pod("c", true),
            pod("d", false),
        ];
        let s = status(
            &pdb(json!({"minAvailable": 2})),
            &pods,
            of_deployment,
            None,
            "t",
        );
        assert_eq!(
            (
                s["expectedPods"].clone(),
                s["desiredHealthy"].clone(),
                s["currentHealthy"].clone(),
                s["disruptionsAllowed"].clone()
            ),
            (json!(4), json!(2), json!(3), json!(1))
        );
        assert_eq!(s["conditions"][0]["reason"], "SufficientPods");
        assert_eq!(s["observedGeneration"], 2);
        // 60% of the 4 the Deployment wants, rounded up: 3 must be healthy.
        let s = status(
            &pdb(json!({"minAvailable": "60%"})),
            &pods,
            of_deployment,
            None,
            "t",
        );
        assert_eq!(
            (s["desiredHealthy"].clone(), s["disruptionsAllowed"].clone()),
            (json!(3), json!(0))
        );
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(s["conditions"][0]["reason"], "InsufficientPods");
        // maxUnavailable 25% of 4: 1 may be down, so 3 must be up.
        let s = status(
            &pdb(json!({"maxUnavailable": "25%"})),
            &pods,
            of_deployment,
            None,
            "t",
        );
        assert_eq!(s["desiredHealthy"], 3);
        // Pods without a controller count for nothing under a percentage.
        let s = status(
            &pdb(json!({"maxUnavailable": 1})),
            &pods,
            |_| None,
            None,
            "t",
        );
        assert_eq!(
            (s["expectedPods"].clone(), s["disruptionsAllowed"].clone()),
            (json!(0), json!(0))
        );
        // No selector: no Pods.
        let mut bare = pdb(json!({"minAvailable": 1}));
        bare["spec"]["selector"] = Value::Null;
        assert_eq!(
            status(&bare, &pods, of_deployment, None, "t")["expectedPods"],
            0
        );
    }
}
