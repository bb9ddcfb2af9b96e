//! The `Ready` condition of a Cluster from what the last probe observed: pure, so the
//! transition rules (failure threshold, stable lastTransitionTime) are unit tested.
//!
//! A failing probe only flips a Ready cluster once probes have failed for the whole failure
//! threshold, so one lost probe (a restarting member API server, a slow network) does not
//! taint the cluster and trigger failover. Symmetrically, a cluster that is not Ready turns
//! Ready only once probes have succeeded for the whole success threshold, so a flapping
//! member does not have its taints removed and re-added (Karmada's
//! `--cluster-success-threshold`). The first observation of a cluster is taken as is.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

pub const CONDITION_READY: &str = flotilla_karmada_api::cluster::CONDITION_READY;
pub const REASON_READY: &str = "ClusterReady";
pub const REASON_NOT_READY: &str = "ClusterNotReady";
pub const REASON_NOT_REACHABLE: &str = "ClusterNotReachable";
pub const MESSAGE_READY: &str = "cluster is healthy and ready to accept workloads";
pub const MESSAGE_NOT_READY: &str =
    "cluster is reachable but its health endpoint does not report ok";
pub const MESSAGE_NOT_REACHABLE: &str = "cluster is not reachable";
/// The member is not contacted as configured: its credentials would travel in clear.
pub const REASON_INSECURE_ENDPOINT: &str = "InsecureEndpoint";

/// What one health probe of a member saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// `/readyz` (or `/healthz`) answered 200.
    Healthy,
    /// The member answered, but not 200.
    Unhealthy,
    /// The member could not be reached (or had no usable credentials).
    Unreachable,
    /// The member was not contacted (as configured, it must not be: credentials over plain
    /// HTTP), or it refused the credentials (401/403). The condition says why, in `reason`
    /// and `message`.
    Refused {
        reason: &'static str,
        message: String,
    },
}

impl Observed {
    /// Whether the member answered the probe at all.
    pub fn reached(&self) -> bool {
        matches!(self, Observed::Healthy | Observed::Unhealthy)
    }
}

/// How long an observation must persist before it changes the Ready condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Thresholds {
    /// Failing probes turn a Ready cluster not Ready after this long.
    pub failure: Duration,
    /// Succeeding probes turn a not Ready (False or Unknown) cluster Ready after this long.
    pub success: Duration,
}

/// How long the probes have been in their current state, without interruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Streak {
    pub failing_for: Duration,
    pub succeeding_for: Duration,
}

/// The Ready condition to publish, given the current one (if any), the observation and how
/// long probes have been failing or succeeding without interruption.
pub fn ready_condition(
    current: Option<&Condition>,
    observed: &Observed,
    streak: Streak,
    thresholds: Thresholds,
    now: Timestamp,
) -> Condition {
    let (status, reason, message) = match observed {
        Observed::Healthy => ("True", REASON_READY, MESSAGE_READY),
        Observed::Unhealthy => ("False", REASON_NOT_READY, MESSAGE_NOT_READY),
        Observed::Unreachable => ("False", REASON_NOT_REACHABLE, MESSAGE_NOT_REACHABLE),
        Observed::Refused { reason, message } => ("False", *reason, message.as_str()),
    };
    if let Some(current) = current {
        if current.status == "True" && status != "True" && streak.failing_for < thresholds.failure {
            return current.clone();
        }
        if current.status != "True"
            && status == "True"
            && streak.succeeding_for < thresholds.success
        {
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
    const S: Duration = Duration::from_secs(10);
    const TH: Thresholds = Thresholds {
        failure: T,
        success: S,
    };

    fn failing(d: Duration) -> Streak {
        Streak {
            failing_for: d,
            succeeding_for: Duration::ZERO,
        }
    }

    fn succeeding(d: Duration) -> Streak {
        Streak {
            failing_for: Duration::ZERO,
            succeeding_for: d,
        }
    }

    #[test]
    fn first_observation_is_taken_as_is() {
        let c = ready_condition(
            None,
            &Observed::Healthy,
            succeeding(Duration::ZERO),
            TH,
            at(0),
        );
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("True", REASON_READY, MESSAGE_READY)
        );
        assert_eq!(c.last_transition_time, Time(at(0)));
        let c = ready_condition(
            None,
            &Observed::Unreachable,
            failing(Duration::ZERO),
            TH,
            at(0),
        );
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("False", REASON_NOT_REACHABLE)
        );
    }

    #[test]
    fn a_refused_member_says_why_and_counts_as_failing() {
        let refused = Observed::Refused {
            reason: REASON_INSECURE_ENDPOINT,
            message: "plain HTTP".into(),
        };
        assert!(!refused.reached());
        let c = ready_condition(None, &refused, failing(Duration::ZERO), TH, at(0));
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("False", REASON_INSECURE_ENDPOINT, "plain HTTP")
        );
        // Like any failure, it flips a Ready cluster only after the threshold.
        let ready = ready_condition(None, &Observed::Healthy, succeeding(S), TH, at(0));
        let kept = ready_condition(Some(&ready), &refused, failing(T / 2), TH, at(1));
        assert_eq!(kept.status, "True");
        let flipped = ready_condition(Some(&ready), &refused, failing(T), TH, at(2));
        assert_eq!(flipped.reason, REASON_INSECURE_ENDPOINT);
    }

    #[test]
    fn ready_survives_failures_shorter_than_the_threshold() {
        let ready = ready_condition(None, &Observed::Healthy, succeeding(S), TH, at(0));
        let held = ready_condition(
            Some(&ready),
            &Observed::Unreachable,
            failing(Duration::from_secs(29)),
            TH,
            at(40),
        );
        assert_eq!(held, ready);
        let flipped = ready_condition(Some(&ready), &Observed::Unreachable, failing(T), TH, at(45));
        assert_eq!(flipped.status, "False");
        assert_eq!(flipped.reason, REASON_NOT_REACHABLE);
        assert_eq!(flipped.last_transition_time, Time(at(45)));
    }

    #[test]
    fn not_ready_survives_successes_shorter_than_the_success_threshold() {
        let down = ready_condition(None, &Observed::Unreachable, failing(T), TH, at(0));
        let held = ready_condition(
            Some(&down),
            &Observed::Healthy,
            succeeding(Duration::from_secs(9)),
            TH,
            at(20),
        );
        assert_eq!(held, down);
        let up = ready_condition(Some(&down), &Observed::Healthy, succeeding(S), TH, at(21));
        assert_eq!(
            (up.status.as_str(), up.reason.as_str()),
            ("True", REASON_READY)
        );
        assert_eq!(up.last_transition_time, Time(at(21)));
        // Unknown (set by the health monitor) waits the same way.
        let unknown = Condition {
            status: "Unknown".into(),
            reason: "ClusterStatusUnknown".into(),
            ..down.clone()
        };
        let held = ready_condition(
            Some(&unknown),
            &Observed::Healthy,
            succeeding(Duration::ZERO),
            TH,
            at(30),
        );
        assert_eq!(held, unknown);
    }

    #[test]
    fn transition_time_moves_only_when_the_status_does() {
        let down = ready_condition(None, &Observed::Unreachable, failing(T), TH, at(0));
        // Reachable again but unhealthy: still False, reason changes, time stays.
        let unhealthy = ready_condition(Some(&down), &Observed::Unhealthy, failing(T), TH, at(10));
        assert_eq!(unhealthy.reason, REASON_NOT_READY);
        assert_eq!(unhealthy.last_transition_time, Time(at(0)));
        let up = ready_condition(
            Some(&unhealthy),
            &Observed::Healthy,
            succeeding(S),
            TH,
            at(20),
        );
        assert_eq!(up.status, "True");
        assert_eq!(up.last_transition_time, Time(at(20)));
        let still = ready_condition(Some(&up), &Observed::Healthy, succeeding(T), TH, at(30));
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
        let ready = ready_condition(None, &Observed::Healthy, succeeding(S), TH, at(1));
        let out = with_condition(std::slice::from_ref(&other), ready.clone());
        assert_eq!(out, vec![other.clone(), ready.clone()]);
        let down = ready_condition(Some(&ready), &Observed::Unhealthy, failing(T), TH, at(2));
        let out = with_condition(&out, down.clone());
        assert_eq!(out, vec![other, down]);
    }
}
