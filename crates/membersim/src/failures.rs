//! Pods that misbehave on purpose, so failover, the descheduler and status aggregation can
//! be exercised against member-sims as against real clusters:
//!
//! - a Pod annotated `sim.flotilla.io/pending: "true"` is never scheduled (Unschedulable);
//! - a container whose image cannot be pulled (its image matches one of the member's
//!   unpullable patterns, by default images of the reserved `.invalid`, `.example` and `.test`
//!   registries, or the Pod is annotated `sim.flotilla.io/image-pull-failure: "true"`) waits
//!   in `ErrImagePull` / `ImagePullBackOff`, the Pod Pending;
//! - a Pod annotated `sim.flotilla.io/crash-loop: "true"` runs but its containers crash and
//!   restart with kubelet's back-off (10 s doubling to 5 min): `CrashLoopBackOff`, never
//!   Ready, `restartCount` growing.

use std::time::Duration;

use regex::Regex;
use serde_json::{Value, json};

/// Held Pending by the scheduler.
pub const PENDING_ANNOTATION: &str = "sim.flotilla.io/pending";
/// Every container's image pull fails.
pub const IMAGE_PULL_FAILURE_ANNOTATION: &str = "sim.flotilla.io/image-pull-failure";
/// Every container crashes and restarts.
pub const CRASH_LOOP_ANNOTATION: &str = "sim.flotilla.io/crash-loop";
/// Images of registries under the reserved top-level domains (RFC 2606) cannot be pulled.
pub const DEFAULT_UNPULLABLE_IMAGES: &str = r"^[^/]+\.(invalid|example|test)(:[0-9]+)?/";

/// kubelet's crash back-off: 10 s, doubling, at most 5 min.
const BACKOFF_BASE: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// How a Pod misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    ImagePull,
    CrashLoop,
}

fn annotated(pod: &Value, annotation: &str) -> bool {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(annotation))
        .and_then(Value::as_str)
        == Some("true")
}

/// Whether the scheduler leaves `pod` Pending.
pub(crate) fn held_pending(pod: &Value) -> bool {
    annotated(pod, PENDING_ANNOTATION)
}

/// The failure `pod` has on this member, if any.
pub(crate) fn failure_of(pod: &Value, unpullable: &[Regex]) -> Option<Failure> {
    let pull_fails = annotated(pod, IMAGE_PULL_FAILURE_ANNOTATION)
        || ["containers", "initContainers"].iter().any(|list| {
            pod.pointer(&format!("/spec/{list}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("image").and_then(Value::as_str))
                .any(|image| unpullable.iter().any(|p| p.is_match(image)))
        });
    if pull_fails {
        Some(Failure::ImagePull)
    } else if annotated(pod, CRASH_LOOP_ANNOTATION) {
        Some(Failure::CrashLoop)
    } else {
        None
    }
}

/// Restarts after `running` of crash-looping, and when the next one comes.
pub(crate) fn restarts(running: Duration) -> (u32, Duration) {
    let mut at = Duration::ZERO;
    let mut backoff = BACKOFF_BASE;
    let mut count = 0u32;
    loop {
        // A crash right after each start, then the back-off before the next start.
        if at > running {
            return (count, at - running);
        }
        count = count.saturating_add(1);
        at += backoff;
        backoff = (backoff * 2).min(BACKOFF_MAX);
    }
}

/// Rewrites a Running status (as the kubelet simulation builds it) to show `failure`:
/// containers waiting with kubelet's reasons, the Pod not Ready (and Pending when no image
/// could be pulled). `restart_count` is the crash loop's; `old` is the status the Pod has (a
/// failed pull is `ErrImagePull` once, then `ImagePullBackOff`).
pub(crate) fn apply(
    status: &mut Value,
    failure: Failure,
    restart_count: u32,
    now: &str,
    old: Option<&Value>,
) {
    let names: Vec<String> = status["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    let not_ready = format!("containers with unready status: [{}]", names.join(" "));
    if let Some(conditions) = status["conditions"].as_array_mut() {
        for c in conditions.iter_mut() {
            let t = c.get("type").and_then(Value::as_str).unwrap_or_default();
            if t == "Ready" || t == "ContainersReady" {
                c["status"] = json!("False");
                c["reason"] = json!("ContainersNotReady");
                c["message"] = json!(not_ready);
            }
        }
    }
    if failure == Failure::ImagePull {
        status["phase"] = json!("Pending");
    }
    if let Some(containers) = status["containerStatuses"].as_array_mut() {
        for c in containers.iter_mut() {
            let image = c
                .get("image")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            c["ready"] = json!(false);
            c["started"] = json!(false);
            match failure {
                Failure::ImagePull => {
                    // The first attempt's error, then the back-off after it.
                    let pulled_before = old
                        .and_then(|o| o.get("containerStatuses"))
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|o| o.get("name").and_then(Value::as_str) == Some(name.as_str()))
                        .any(|o| o.pointer("/state/waiting/reason").is_some());
                    let reason = if pulled_before {
                        "ImagePullBackOff"
                    } else {
                        "ErrImagePull"
                    };
                    c["state"] = json!({"waiting": {"reason": reason,
                        "message": format!("Back-off pulling image \"{image}\": simulated pull failure")}});
                    c["imageID"] = json!("");
                    if let Some(obj) = c.as_object_mut() {
                        obj.remove("containerID");
                    }
                }
                Failure::CrashLoop => {
                    c["restartCount"] = json!(restart_count);
                    c["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                        "message": format!("back-off restarting failed container={name}")}});
                    c["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error",
                        "startedAt": now, "finishedAt": now}});
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(annotations: Value, image: &str) -> Value {
        json!({"metadata": {"annotations": annotations},
               "spec": {"containers": [{"name": "c", "image": image}]}})
    }

    #[test]
    fn failures_by_annotation_and_image() {
        let defaults = [Regex::new(DEFAULT_UNPULLABLE_IMAGES).unwrap()];
        assert_eq!(failure_of(&pod(json!({}), "nginx:1"), &defaults), None);
        assert_eq!(
            failure_of(&pod(json!({}), "registry.invalid/app:1"), &defaults),
            Some(Failure::ImagePull)
        );
        assert_eq!(
            failure_of(&pod(json!({}), "ghcr.example:5000/app"), &defaults),
            Some(Failure::ImagePull)
        );
        assert_eq!(
            failure_of(&pod(json!({}), "docker.io/library/nginx"), &defaults),
            None
        );
        assert_eq!(
            failure_of(
                &pod(json!({IMAGE_PULL_FAILURE_ANNOTATION: "true"}), "nginx"),
                &defaults
            ),
            Some(Failure::ImagePull)
        );
        assert_eq!(
            failure_of(
                &pod(json!({CRASH_LOOP_ANNOTATION: "true"}), "nginx"),
                &defaults
            ),
            Some(Failure::CrashLoop)
        );
        assert!(held_pending(&pod(
            json!({PENDING_ANNOTATION: "true"}),
            "nginx"
        )));
        assert!(!held_pending(&pod(
            json!({PENDING_ANNOTATION: "no"}),
            "nginx"
        )));
    }

    #[test]
    fn crash_loops_back_off_as_kubelet() {
        let s = Duration::from_secs;
        assert_eq!(restarts(s(0)), (1, s(10)));
        assert_eq!(restarts(s(9)), (1, s(1)));
        assert_eq!(restarts(s(10)), (2, s(20)));
        assert_eq!(restarts(s(35)), (3, s(35)));
        // Past 5 min the back-off stays at 5 min.
        let (n, next) = restarts(s(3600));
        assert!(n > 10 && next <= BACKOFF_MAX, "{n} {next:?}");
    }

    #[test]
    fn statuses_say_why() {
        let mut status = json!({"phase": "Running",
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [{"name": "c", "image": "registry.invalid/app", "ready": true,
                                   "state": {"running": {"startedAt": "t"}}, "containerID": "x"}]});
        let running = status.clone();
        let mut pulling = status.clone();
        apply(&mut pulling, Failure::ImagePull, 0, "now", Some(&running));
        assert_eq!(pulling["phase"], "Pending");
        assert_eq!(pulling["conditions"][0]["status"], "False");
        assert_eq!(pulling["conditions"][1]["status"], "True");
        assert_eq!(
            pulling["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ErrImagePull"
        );
        let mut again = running.clone();
        apply(&mut again, Failure::ImagePull, 0, "now", Some(&pulling));
        assert_eq!(
            again["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ImagePullBackOff"
        );
        apply(&mut status, Failure::CrashLoop, 3, "now", Some(&running));
        assert_eq!(status["phase"], "Running");
        assert_eq!(status["containerStatuses"][0]["restartCount"], 3);
        assert_eq!(
            status["containerStatuses"][0]["state"]["waiting"]["reason"],
            "CrashLoopBackOff"
        );
        assert_eq!(status["containerStatuses"][0]["ready"], false);
    }
}
