//! The taints the cluster controller keeps on a Cluster from its Ready condition, as Karmada
//! does: `cluster.karmada.io/not-ready` while Ready is False, `cluster.karmada.io/unreachable`
//! while it is Unknown, both NoSchedule and (for failover) NoExecute, none while Ready is True.
//! Pure: the controller writes what [`desired_taints`] returns. Taints with other keys, and
//! other effects, are never touched.

use flotilla_names::karmada::{TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE};
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

pub const NO_SCHEDULE: &str = "NoSchedule";
pub const NO_EXECUTE: &str = "NoExecute";

fn managed(t: &Taint) -> bool {
    (t.key == TAINT_CLUSTER_NOT_READY || t.key == TAINT_CLUSTER_UNREACHABLE)
        && (t.effect == NO_SCHEDULE || t.effect == NO_EXECUTE)
}

/// The new taint list, or `None` when `current` is already right. Without a Ready condition
/// (a cluster not probed yet) nothing changes.
pub fn desired_taints(
    current: &[Taint],
    ready: Option<&Condition>,
    no_execute: bool,
    now: Timestamp,
) -> Option<Vec<Taint>> {
    let ready = ready?;
    let key = match ready.status.as_str() {
        "True" => None,
        "False" => Some(TAINT_CLUSTER_NOT_READY),
        _ => Some(TAINT_CLUSTER_UNREACHABLE),
    };
    let mut wanted: Vec<&str> = Vec::new();
    if key.is_some() {
        wanted.push(NO_SCHEDULE);
        if no_execute {
            wanted.push(NO_EXECUTE);
        }
    }
    let is_wanted = |t: &Taint| Some(t.key.as_str()) == key && wanted.contains(&t.effect.as_str());
    let mut out: Vec<Taint> = current
        .iter()
        .filter(|t| !managed(t) || is_wanted(t))
        .cloned()
        .collect();
    if let Some(key) = key {
        for effect in wanted {
            if !out.iter().any(|t| t.key == key && t.effect == effect) {
                out.push(Taint {
                    key: key.into(),
                    effect: effect.into(),
                    value: None,
                    // As on nodes: only NoExecute taints carry the time (tolerationSeconds
                    // count from it).
                    time_added: (effect == NO_EXECUTE).then_some(Time(now)),
                });
            }
        }
    }
    (out != current).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(status: &str) -> Condition {
        Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: String::new(),
            message: String::new(),
            last_transition_time: Time(Timestamp::UNIX_EPOCH),
            observed_generation: None,
        }
    }

    fn taint(key: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            effect: effect.into(),
            value: None,
            time_added: None,
        }
    }

    fn keys(ts: &[Taint]) -> Vec<(String, String)> {
        ts.iter()
            .map(|t| (t.key.clone(), t.effect.clone()))
            .collect()
    }

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    #[test]
    fn not_ready_adds_both_effects_with_time_on_no_execute() {
        let user = taint("dedicated", NO_SCHEDULE);
        let out = desired_taints(
            std::slice::from_ref(&user),
            Some(&ready("False")),
            true,
            now(),
        )
        .unwrap();
        assert_eq!(
            keys(&out),
            [
                ("dedicated".into(), NO_SCHEDULE.into()),
                (TAINT_CLUSTER_NOT_READY.into(), NO_SCHEDULE.into()),
                (TAINT_CLUSTER_NOT_READY.into(), NO_EXECUTE.into()),
            ]
        );
        assert_eq!(out[1].time_added, None);
        assert_eq!(out[2].time_added, Some(Time(now())));
        // Applying again changes nothing.
        assert_eq!(
            desired_taints(&out, Some(&ready("False")), true, now()),
            None
        );
    }

    #[test]
    fn without_no_execute_only_no_schedule_and_stale_no_execute_goes() {
        let current = [taint(TAINT_CLUSTER_NOT_READY, NO_EXECUTE)];
        let out = desired_taints(&current, Some(&ready("False")), false, now()).unwrap();
        assert_eq!(
            keys(&out),
            [(TAINT_CLUSTER_NOT_READY.into(), NO_SCHEDULE.into())]
        );
    }

    #[test]
    fn unknown_swaps_not_ready_for_unreachable() {
        let current = [
            taint(TAINT_CLUSTER_NOT_READY, NO_SCHEDULE),
            taint(TAINT_CLUSTER_NOT_READY, NO_EXECUTE),
        ];
        let out = desired_taints(&current, Some(&ready("Unknown")), true, now()).unwrap();
        assert_eq!(
            keys(&out),
            [
                (TAINT_CLUSTER_UNREACHABLE.into(), NO_SCHEDULE.into()),
                (TAINT_CLUSTER_UNREACHABLE.into(), NO_EXECUTE.into()),
            ]
        );
    }

    #[test]
    fn ready_removes_only_the_controllers_taints() {
        let current = [
            taint(TAINT_CLUSTER_NOT_READY, NO_SCHEDULE),
            taint("dedicated", NO_EXECUTE),
            taint(TAINT_CLUSTER_UNREACHABLE, NO_EXECUTE),
            taint(TAINT_CLUSTER_NOT_READY, "PreferNoSchedule"),
        ];
        let out = desired_taints(&current, Some(&ready("True")), true, now()).unwrap();
        assert_eq!(
            keys(&out),
            [
                ("dedicated".into(), NO_EXECUTE.into()),
                (TAINT_CLUSTER_NOT_READY.into(), "PreferNoSchedule".into()),
            ]
        );
        assert_eq!(
            desired_taints(&out, Some(&ready("True")), true, now()),
            None
        );
    }

    #[test]
    fn no_condition_no_change() {
        let current = [taint(TAINT_CLUSTER_NOT_READY, NO_SCHEDULE)];
        assert_eq!(desired_taints(&current, None, true, now()), None);
    }
}
