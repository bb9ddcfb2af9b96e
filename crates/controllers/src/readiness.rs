//! The `Ready` condition of a Cluster from what the last probe observed: pure, so the
//! transition rules (failure threshold, stable lastTransitionTime) are unit tested.
//!
//! A healthy probe makes the cluster Ready at once. A failing one only flips a Ready cluster
//! once probes have failed for the whole failure threshold, so one lost probe (a restarting
//! member API server, a slow network) does not taint the cluster and trigger failover.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

pub const CONDITION_READY: &str = "Ready";
pub const REASON_READY: &str = "ClusterReady";
pub const REASON_NOT_READY: &str = "ClusterNotReady";
pub const REASON_NOT_REACHABLE: &str = "ClusterNotReachable";
pub const MESSAGE_READY: &str = "cluster is healthy and ready to accept workloads";
pub const MESSAGE_NOT_READY: &str =
    "cluster is reachable but its health endpoint does not report ok";
pub const MESSAGE_NOT_REACHABLE: &str = "cluster is not reachable";

/// What one health probe of a member saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// `/readyz` (or `/healthz`) answered 200.
    Healthy,
    /// The member answered, but not 200.
    Unhealthy,
    /// The member could not be reached (or had no usable credentials).
    Unreachable,
}

/// The Ready condition to publish, given the current one (if any), the observation and how
/// long probes have been failing without interruption.
pub fn ready_condition(
    current: Option<&Condition>,
    observed: &Observed,
    failing_for: Duration,
    threshold: Duration,
    now: Timestamp,
) -> Condition {
    let (status, reason, message) = match observed {
        Observed::Healthy => ("True", REASON_READY, MESSAGE_READY),
        Observed::Unhealthy => ("False", REASON_NOT_READY, MESSAGE_NOT_READY),
        Observed::Unreachable => ("False", REASON_NOT_REACHABLE, MESSAGE_NOT_REACHABLE),
    };
    if let Some(current) = current {
        if current.status == "True" && status != "True" && failing_for < threshold {
            return current.clone();
        }
    }
    let last_transition_time = match current {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    Condition {
        type_: CONDITION_READY.into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time,
        observed_generation: None,
    }
}

/// `conditions` with the Ready condition replaced (or appended); others stay as they are.
pub fn with_condition(conditions: &[Condition], ready: Condition) -> Vec<Condition> {
    let mut out: Vec<Condition> = conditions.to_vec();
    match out.iter_mut().find(|c| c.type_ == ready.type_) {
        Some(slot) => *slot = ready,
        None => out.push(ready),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    const T: Duration = Duration::from_secs(30);

    #[test]
    fn first_observation_is_taken_as_is() {
        let c = ready_condition(None, &Observed::Healthy, Duration::ZERO, T, at(0));
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("True", REASON_READY, MESSAGE_READY)
        );
        assert_eq!(c.last_transition_time, Time(at(0)));
        let c = ready_condition(None, &Observed::Unreachable, Duration::ZERO, T, at(0));
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", REASON_NOT_REACHABLE)
        );
    }

    #[test]
    fn ready_survives_failures_shorter_than_the_threshold() {
        let ready = ready_condition(None, &Observed::Healthy, Duration::ZERO, T, at(0));
        let held = ready_condition(
            Some(&ready),
            &Observed::Unreachable,
            Duration::from_secs(29),
            T,
            at(40),
        );
        assert_eq!(held, ready);
        let flipped = ready_condition(Some(&ready), &Observed::Unreachable, T, T, at(45));
        assert_eq!(flipped.status, "False");
        assert_eq!(flipped.reason, REASON_NOT_REACHABLE);
        assert_eq!(flipped.last_transition_time, Time(at(45)));
    }

    #[test]
    fn transition_time_moves_only_when_the_status_does() {
        let down = ready_condition(None, &Observed::Unreachable, T, T, at(0));
        // Reachable again but unhealthy: still False, reason changes, time stays.
        let unhealthy = ready_condition(Some(&down), &Observed::Unhealthy, T, T, at(10));
        assert_eq!(unhealthy.reason, REASON_NOT_READY);
        assert_eq!(unhealthy.last_transition_time, Time(at(0)));
        let up = ready_condition(
            Some(&unhealthy),
            &Observed::Healthy,
            Duration::ZERO,
            T,
            at(20),
        );
        assert_eq!(up.status, "True");
        assert_eq!(up.last_transition_time, Time(at(20)));
        let still = ready_condition(Some(&up), &Observed::Healthy, Duration::ZERO, T, at(30));
        assert_eq!(still, up);
    }

    #[test]
    fn other_conditions_are_kept() {
        let other = Condition {
            type_: "CompleteAPIEnablements".into(),
            status: "True".into(),
            reason: "Complete".into(),
            message: String::new(),
            last_transition_time: Time(at(0)),
            observed_generation: None,
        };
        let ready = ready_condition(None, &Observed::Healthy, Duration::ZERO, T, at(1));
        let out = with_condition(std::slice::from_ref(&other), ready.clone());
        assert_eq!(out, vec![other.clone(), ready.clone()]);
        let down = ready_condition(Some(&ready), &Observed::Unhealthy, T, T, at(2));
        let out = with_condition(&out, down.clone());
        assert_eq!(out, vec![other, down]);
    }
}
