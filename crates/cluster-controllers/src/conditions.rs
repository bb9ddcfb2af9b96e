//! Cluster conditions other than Ready: `CompleteAPIEnablements`, which says whether
//! `status.apiEnablements` came from a complete discovery of the member, and the generic rule
//! every condition follows (lastTransitionTime moves only when the status does).
//!
//! Type, reasons and messages are Karmada's, since tools and users match on them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

pub const CONDITION_COMPLETE_API_ENABLEMENTS: &str = "CompleteAPIEnablements";
/// Every discovery document was read.
pub const REASON_COMPLETE: &str = "Complete";
/// Some group/version documents could not be read: the list may miss APIs.
pub const REASON_PARTIAL: &str = "Partial";
/// Discovery produced nothing at all.
pub const REASON_EMPTY: &str = "Empty";

/// A condition of `type_` with the given status, reason and message, keeping the
/// lastTransitionTime of `current` when the status is unchanged.
pub fn condition(
    current: Option<&Condition>,
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: Timestamp,
) -> Condition {
    let last_transition_time = match current {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time,
        observed_generation: None,
    }
}

/// The `CompleteAPIEnablements` condition after a discovery that found `count`
/// group/versions, `complete` when no document failed.
pub fn api_enablements_condition(
    current: Option<&Condition>,
    count: usize,
    complete: bool,
    now: Timestamp,
) -> Condition {
    let (status, reason, message) = if count == 0 {
        (
            "False",
            REASON_EMPTY,
            "collected empty APIEnablements from the cluster".to_string(),
        )
    } else if !complete {
        (
            "False",
            REASON_PARTIAL,
            format!("might collect partial APIEnablements({count}) from the cluster"),
        )
    } else {
        (
            "True",
            REASON_COMPLETE,
            "collected complete APIEnablements from the cluster".to_string(),
        )
    };
    condition(
        current,
        CONDITION_COMPLETE_API_ENABLEMENTS,
        status,
        reason,
        message,
        now,
    )
}

/// The condition of `type_` in `conditions`.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    #[test]
    fn complete_partial_and_empty() {
        let c = api_enablements_condition(None, 12, true, at(0));
        assert_eq!(c.type_, "CompleteAPIEnablements");
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("True", "Complete"));
        assert_eq!(c.last_transition_time, Time(at(0)));
        let p = api_enablements_condition(Some(&c), 11, false, at(5));
        assert_eq!((p.status.as_str(), p.reason.as_str()), ("False", "Partial"));
        assert_eq!(
            p.message,
            "might collect partial APIEnablements(11) from the cluster"
        );
        assert_eq!(p.last_transition_time, Time(at(5)));
        // Still False, now empty: the reason changes, the transition time does not.
        let e = api_enablements_condition(Some(&p), 0, false, at(9));
        assert_eq!((e.status.as_str(), e.reason.as_str()), ("False", "Empty"));
        assert_eq!(e.last_transition_time, Time(at(5)));
        // Empty wins over complete: nothing was discovered.
        let e = api_enablements_condition(None, 0, true, at(9));
        assert_eq!(e.reason, "Empty");
        // Complete again, later: unchanged status keeps the time.
        let again = api_enablements_condition(Some(&c), 13, true, at(20));
        assert_eq!(again, c);
    }

    #[test]
    fn find_by_type() {
        let c = api_enablements_condition(None, 1, true, at(0));
        let list = vec![c.clone()];
        assert_eq!(find(&list, CONDITION_COMPLETE_API_ENABLEMENTS), Some(&c));
        assert_eq!(find(&list, "Ready"), None);
    }
}
