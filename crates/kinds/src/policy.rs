//! policy/v1 PodDisruptionBudget, scheduling.k8s.io/v1 PriorityClass, node.k8s.io/v1
//! RuntimeClass and apps/v1 ControllerRevision: their checks and defaults.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::node::v1::RuntimeClass;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::defaults;
use crate::field::Errs;
use crate::kind::Ctx;
use crate::names;

/// The largest value a user-defined PriorityClass may have (larger ones are reserved for
/// the `system-` classes).
const HIGHEST_USER_PRIORITY: i32 = 1_000_000_000;

/// A PDB bound: a non-negative integer or a percentage of at most 100%.
fn pdb_bound(v: &IntOrString, path: &str, errs: &mut Errs) {
    match v {
        IntOrString::Int(i) => errs.non_negative(path, Some(i64::from(*i))),
        IntOrString::String(s) => match s.strip_suffix('%').map(str::parse::<u32>) {
            Some(Ok(p)) if p <= 100 => {}
            Some(Ok(_)) => errs.invalid(path, &Value::from(s.as_str()), "must not be greater than 100%"),
            _ => errs.invalid(
                path,
                &Value::from(s.as_str()),
                "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%')",
            ),
        },
    }
}

pub(crate) fn validate_pdb(ctx: &Ctx<'_, PodDisruptionBudget>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else { return };
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        errs.invalid(
            "spec",
            &json!(spec),
            "minAvailable and maxUnavailable cannot be both set",
        );
    }
    if let Some(v) = &spec.min_available {
        pdb_bound(v, "spec.minAvailable", errs);
    }
    if let Some(v) = &spec.max_unavailable {
        pdb_bound(v, "spec.maxUnavailable", errs);
    }
    errs.one_of(
        "spec.unhealthyPodEvictionPolicy",
        spec.unhealthy_pod_eviction_policy.as_deref(),
        &["AlwaysAllow", "IfHealthyBudget"],
    );
}

pub(crate) fn validate_priority_class(ctx: &Ctx<'_, PriorityClass>, errs: &mut Errs) {
    let pc = ctx.new;
    let name = pc.metadata.name.as_deref().unwrap_or_default();
    if !name.starts_with("system-") && pc.value > HIGHEST_USER_PRIORITY {
        errs.forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        );
    }
    if name.starts_with("system-")
        && !["system-cluster-critical", "system-node-critical"].contains(&name)
    {
        errs.forbidden(
            "metadata.name",
            "priority class names with 'system-' prefix are reserved for system use only",
        );
    }
    errs.one_of(
        "preemptionPolicy",
        pc.preemption_policy.as_deref(),
        &["Never", "PreemptLowerPriority"],
    );
    if let Some((old, _)) = ctx.old {
        if pc.value != old.value {
            errs.forbidden("value", "may not be changed in an update.");
        }
        errs.immutable(
            "preemptionPolicy",
            &pc.preemption_policy,
            &old.preemption_policy,
        );
    }
}

/// `preemptionPolicy: PreemptLowerPriority`.
pub(crate) fn default_priority_class(obj: &mut Value) {
    defaults::set(obj, "preemptionPolicy", json!("PreemptLowerPriority"));
}

pub(crate) fn validate_runtime_class(ctx: &Ctx<'_, RuntimeClass>, errs: &mut Errs) {
    let rc = ctx.new;
    if rc.handler.is_empty() {
        errs.required("handler", "");
    } else if let Err(m) = names::dns1123_label(&rc.handler) {
        errs.invalid("handler", &Value::from(rc.handler.as_str()), &m);
    }
    if let Some((old, _)) = ctx.old {
        errs.immutable("handler", &rc.handler, &old.handler);
    }
}

pub(crate) fn validate_controller_revision(ctx: &Ctx<'_, ControllerRevision>, errs: &mut Errs) {
    let cr = ctx.new;
    errs.non_negative("revision", Some(cr.revision));
    if let Some((old, _)) = ctx.old {
        errs.immutable("data", &cr.data, &old.data);
    }
}
