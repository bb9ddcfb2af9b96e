//! The remaining small kinds: coordination.k8s.io/v1 Lease (its only rules are on durations).

use k8s_openapi::api::coordination::v1::Lease;
use serde_json::Value;

use crate::field::Errs;
use crate::kind::Ctx;

pub(crate) fn validate_lease(ctx: &Ctx<'_, Lease>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else { return };
    if let Some(d) = spec.lease_duration_seconds.filter(|d| *d <= 0) {
        errs.invalid(
            "spec.leaseDurationSeconds",
            &Value::from(d),
            "must be greater than 0",
        );
    }
    errs.non_negative(
        "spec.leaseTransitions",
        spec.lease_transitions.map(i64::from),
    );
}
