//! Workload kinds: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet, batch/v1 Job,
//! CronJob, and core/v1 ReplicationController and PodTemplate. Their checks (replica counts,
//! selector versus template labels, strategies, the pod template) and their defaults.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job, JobSpec};
use k8s_openapi::api::core::v1::{PodTemplate, PodTemplateSpec, ReplicationController};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, join};
use crate::kind::Ctx;
use crate::meta::{self, show_label_map};
use crate::podspec::{self, Restart};
use crate::selector;

fn i64_of(v: Option<i32>) -> Option<i64> {
    v.map(i64::from)
}

/// `spec.selector` present, non-empty, selecting the template's labels; then the template.
/// `kind` is the lowercase kind for the "empty selector" message.
fn selector_and_template(
    kind: &str,
    selector: &LabelSelector,
    raw: &Value,
    template: Option<&PodTemplateSpec>,
    restart: Restart,
    errs: &mut Errs,
) {
    let raw_spec = raw.get("spec");
    let raw_selector = raw_spec
        .and_then(|s| s.get("selector"))
        .filter(|s| !s.is_null());
    if raw_selector.is_none() {
        errs.required("spec.selector", "");
    } else if selector::is_empty(selector) {
        let shown = serde_json::to_value(selector).unwrap_or(Value::Null);
        errs.invalid(
            "spec.selector",
            &shown,
            &format!("empty selector is invalid for {kind}"),
        );
    } else {
        validate_selector(selector, "spec.selector", errs);
        let labels = template
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.labels.as_ref());
        if !selector::matches(selector, &labels.cloned().unwrap_or_default()) {
            errs.invalid_shown(
                "spec.template.metadata.labels",
                &show_label_map(labels),
                "`selector` does not match template `labels`",
            );
        }
    }
    match template {
        Some(t) => {
            let raw_template = raw_spec.and_then(|s| s.get("template"));
            podspec::validate_template(t, raw_template, "spec.template", restart, errs);
        }
        None => errs.required("spec.template", ""),
    }
}

/// The label rules of `matchLabels` and the operators of `matchExpressions`.
fn validate_selector(selector: &LabelSelector, path: &str, errs: &mut Errs) {
    meta::validate_label_btree(
        selector.match_labels.as_ref(),
        &join(path, "matchLabels"),
        errs,
    );
    for (i, req) in selector.match_expressions.iter().flatten().enumerate() {
        let at = crate::field::index(&join(path, "matchExpressions"), i);
        let values = req.values.as_deref().unwrap_or_default();
        match req.operator.as_str() {
            "In" | "NotIn" if values.is_empty() => errs.required(
                &join(&at, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            ),
            "Exists" | "DoesNotExist" if !values.is_empty() => errs.forbidden(
                &join(&at, "values"),
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
            ),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errs.not_supported(
                &join(&at, "operator"),
                other,
                &["In", "NotIn", "Exists", "DoesNotExist"],
            ),
        }
    }
}

fn selector_immutable(new: &LabelSelector, old: &LabelSelector, errs: &mut Errs) {
    errs.immutable("spec.selector", new, old);
}

/// A `maxSurge`/`maxUnavailable` value: a non-negative integer or a percentage. Returns
/// whether it is zero.
fn int_or_percent(value: Option<&IntOrString>, path: &str, errs: &mut Errs) -> bool {
    match value {
        None => false,
        Some(IntOrString::Int(i)) => {
            errs.non_negative(path, Some(i64::from(*i)));
            *i == 0
        }
        Some(IntOrString::String(s)) => match s.strip_suffix('%').map(str::parse::<u32>) {
            Some(Ok(p)) => {
                if p > 100 {
                    errs.invalid(
                        path,
                        &Value::from(s.as_str()),
                        "must not be greater than 100%",
                    );
                }
                p == 0
            }
            _ => {
                errs.invalid(
                    path,
                    &Value::from(s.as_str()),
                    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%')",
                );
                false
            }
        },
    }
}

pub(crate) fn validate_deployment(ctx: &Ctx<'_, Deployment>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.selector", "");
        errs.required("spec.template", "");
        return;
    };
    errs.non_negative("spec.replicas", i64_of(spec.replicas));
    errs.non_negative("spec.minReadySeconds", i64_of(spec.min_ready_seconds));
    errs.non_negative(
        "spec.revisionHistoryLimit",
        i64_of(spec.revision_history_limit),
    );
    errs.non_negative(
        "spec.progressDeadlineSeconds",
        i64_of(spec.progress_deadline_seconds),
    );
    if let Some(strategy) = &spec.strategy {
        let kind = strategy.type_.as_deref().unwrap_or("RollingUpdate");
        errs.one_of(
            "spec.strategy.type",
            Some(kind),
            &["Recreate", "RollingUpdate"],
        );
        if let Some(ru) = &strategy.rolling_update {
            if kind == "Recreate" {
                errs.forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                );
            }
            let surge_zero = int_or_percent(
                ru.max_surge.as_ref(),
                "spec.strategy.rollingUpdate.maxSurge",
                errs,
            );
            let path = "spec.strategy.rollingUpdate.maxUnavailable";
            let unavailable_zero = int_or_percent(ru.max_unavailable.as_ref(), path, errs);
            if surge_zero && unavailable_zero {
                errs.invalid(path, &Value::from(0), "may not be 0 when `maxSurge` is 0");
            }
        }
    }
    selector_and_template(
        "deployment",
        &spec.selector,
        ctx.raw,
        Some(&spec.template),
        Restart::AlwaysOnly,
        errs,
    );
    if let Some(old) = ctx.old.and_then(|(o, _)| o.spec.as_ref()) {
        selector_immutable(&spec.selector, &old.selector, errs);
    }
}

pub(crate) fn default_deployment(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "replicas", json!(1));
    defaults::set(spec, "revisionHistoryLimit", json!(10));
    defaults::set(spec, "progressDeadlineSeconds", json!(600));
    if let Some(strategy) = defaults::object(spec, "strategy") {
        defaults::set(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = defaults::object(strategy, "rollingUpdate")
        {
            defaults::set(ru, "maxUnavailable", json!("25%"));
            defaults::set(ru, "maxSurge", json!("25%"));
        }
    }
    if let Some(t) = defaults::object(spec, "template") {
        podspec::default_template(t, Restart::AlwaysOnly);
    }
}

pub(crate) fn validate_replicaset(ctx: &Ctx<'_, ReplicaSet>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.selector", "");
        return;
    };
    errs.non_negative("spec.replicas", i64_of(spec.replicas));
    errs.non_negative("spec.minReadySeconds", i64_of(spec.min_ready_seconds));
    selector_and_template(
        "replicaset",
        &spec.selector,
        ctx.raw,
        spec.template.as_ref(),
        Restart::AlwaysOnly,
        errs,
    );
    if let Some(old) = ctx.old.and_then(|(o, _)| o.spec.as_ref()) {
        selector_immutable(&spec.selector, &old.selector, errs);
    }
}

pub(crate) fn default_replicaset(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "replicas", json!(1));
    if let Some(t) = defaults::existing(spec, "template") {
        podspec::default_template(t, Restart::AlwaysOnly);
    }
}

/// The StatefulSet spec fields an update may change (the rest is fixed at creation).
const STS_MUTABLE: &[&str] = &[
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
    // Reported on its own as immutable.
    "selector",
];

pub(crate) fn validate_statefulset(ctx: &Ctx<'_, StatefulSet>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.selector", "");
        errs.required("spec.template", "");
        return;
    };
    errs.non_negative("spec.replicas", i64_of(spec.replicas));
    errs.non_negative("spec.minReadySeconds", i64_of(spec.min_ready_seconds));
    errs.non_negative(
        "spec.revisionHistoryLimit",
        i64_of(spec.revision_history_limit),
    );
    errs.one_of(
        "spec.podManagementPolicy",
        spec.pod_management_policy.as_deref(),
        &["OrderedReady", "Parallel"],
    );
    if let Some(us) = &spec.update_strategy {
        errs.one_of(
            "spec.updateStrategy.type",
            us.type_.as_deref(),
            &["RollingUpdate", "OnDelete"],
        );
        if let Some(p) = us.rolling_update.as_ref().and_then(|r| r.partition) {
            errs.non_negative(
                "spec.updateStrategy.rollingUpdate.partition",
                Some(i64::from(p)),
            );
        }
    }
    if let Some(name) = spec.service_name.as_deref().filter(|n| !n.is_empty())
        && let Err(m) = crate::names::dns1123_label(name)
    {
        errs.invalid("spec.serviceName", &Value::from(name), &m);
    }
    selector_and_template(
        "statefulset",
        &spec.selector,
        ctx.raw,
        Some(&spec.template),
        Restart::AlwaysOnly,
        errs,
    );
    if let Some((old, old_raw)) = ctx.old {
        if let Some(old_spec) = &old.spec {
            selector_immutable(&spec.selector, &old_spec.selector, errs);
        }
        if fixed_part(ctx.raw, default_statefulset) != fixed_part(old_raw, default_statefulset) {
            errs.forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
                 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            );
        }
    }
}

/// The defaulted spec of `raw` without the fields an update may change.
fn fixed_part(raw: &Value, default: fn(&mut Value)) -> Value {
    let mut copy = raw.clone();
    default(&mut copy);
    let mut spec = copy.get("spec").cloned().unwrap_or(Value::Null);
    if let Some(map) = spec.as_object_mut() {
        for k in STS_MUTABLE {
            map.remove(*k);
        }
    }
    spec
}

pub(crate) fn default_statefulset(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "replicas", json!(1));
    defaults::set(spec, "podManagementPolicy", json!("OrderedReady"));
    defaults::set(spec, "revisionHistoryLimit", json!(10));
    if let Some(us) = defaults::object(spec, "updateStrategy") {
        defaults::set(us, "type", json!("RollingUpdate"));
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = defaults::object(us, "rollingUpdate")
        {
            defaults::set(ru, "partition", json!(0));
        }
    }
    if let Some(p) = defaults::object(spec, "persistentVolumeClaimRetentionPolicy") {
        defaults::set(p, "whenDeleted", json!("Retain"));
        defaults::set(p, "whenScaled", json!("Retain"));
    }
    for claim in defaults::items(spec, "volumeClaimTemplates") {
        if let Some(s) = defaults::object(claim, "spec") {
            defaults::set(s, "volumeMode", json!("Filesystem"));
        }
    }
    if let Some(t) = defaults::object(spec, "template") {
        podspec::default_template(t, Restart::AlwaysOnly);
    }
}

pub(crate) fn validate_daemonset(ctx: &Ctx<'_, DaemonSet>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.selector", "");
        errs.required("spec.template", "");
        return;
    };
    errs.non_negative("spec.minReadySeconds", i64_of(spec.min_ready_seconds));
    errs.non_negative(
        "spec.revisionHistoryLimit",
        i64_of(spec.revision_history_limit),
    );
    if let Some(us) = &spec.update_strategy {
        errs.one_of(
            "spec.updateStrategy.type",
            us.type_.as_deref(),
            &["RollingUpdate", "OnDelete"],
        );
        if let Some(ru) = &us.rolling_update {
            let surge_zero = int_or_percent(
                ru.max_surge.as_ref(),
                "spec.updateStrategy.rollingUpdate.maxSurge",
                errs,
            );
            let path = "spec.updateStrategy.rollingUpdate.maxUnavailable";
            // An absent maxSurge defaults to 0.
            let surge_zero = surge_zero || ru.max_surge.is_none();
            if int_or_percent(ru.max_unavailable.as_ref(), path, errs) && surge_zero {
                errs.invalid(path, &Value::from(0), "may not be 0 when `maxSurge` is 0");
            }
        }
    }
    selector_and_template(
        "daemonset",
        &spec.selector,
        ctx.raw,
        Some(&spec.template),
        Restart::AlwaysOnly,
        errs,
    );
    if let Some(old) = ctx.old.and_then(|(o, _)| o.spec.as_ref()) {
        selector_immutable(&spec.selector, &old.selector, errs);
    }
}

pub(crate) fn default_daemonset(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "revisionHistoryLimit", json!(10));
    if let Some(us) = defaults::object(spec, "updateStrategy") {
        defaults::set(us, "type", json!("RollingUpdate"));
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = defaults::object(us, "rollingUpdate")
        {
            defaults::set(ru, "maxUnavailable", json!(1));
            defaults::set(ru, "maxSurge", json!(0));
        }
    }
    if let Some(t) = defaults::object(spec, "template") {
        podspec::default_template(t, Restart::AlwaysOnly);
    }
}

/// Checks of a job spec at `path` (`spec` for jobs, `spec.jobTemplate.spec` for cronjobs).
fn validate_job_spec(spec: &JobSpec, raw_spec: Option<&Value>, path: &str, errs: &mut Errs) {
    errs.non_negative(&join(path, "parallelism"), i64_of(spec.parallelism));
    errs.non_negative(&join(path, "completions"), i64_of(spec.completions));
    errs.non_negative(&join(path, "backoffLimit"), i64_of(spec.backoff_limit));
    errs.non_negative(
        &join(path, "ttlSecondsAfterFinished"),
        i64_of(spec.ttl_seconds_after_finished),
    );
    if let Some(s) = spec.active_deadline_seconds.filter(|s| *s <= 0) {
        errs.invalid(
            &join(path, "activeDeadlineSeconds"),
            &Value::from(s),
            "must be greater than 0",
        );
    }
    errs.one_of(
        &join(path, "completionMode"),
        spec.completion_mode.as_deref(),
        &["NonIndexed", "Indexed"],
    );
    if spec.manual_selector == Some(true) {
        match &spec.selector {
            None => errs.required(&join(path, "selector"), ""),
            Some(sel) => {
                let labels = spec
                    .template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.as_ref());
                if !selector::matches(sel, &labels.cloned().unwrap_or_default()) {
                    errs.invalid_shown(
                        &join(path, "template.metadata.labels"),
                        &show_label_map(labels),
                        "`selector` does not match template `labels`",
                    );
                }
            }
        }
    }
    let raw_template = raw_spec.and_then(|s| s.get("template"));
    podspec::validate_template(
        &spec.template,
        raw_template,
        &join(path, "template"),
        Restart::Job,
        errs,
    );
}

pub(crate) fn validate_job(ctx: &Ctx<'_, Job>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.template", "");
        return;
    };
    validate_job_spec(spec, ctx.raw.get("spec"), "spec", errs);
    if let Some((old, old_raw)) = ctx.old
        && let Some(old_spec) = &old.spec
    {
        errs.immutable("spec.selector", &spec.selector, &old_spec.selector);
        errs.immutable(
            "spec.completionMode",
            &spec.completion_mode,
            &old_spec.completion_mode,
        );
        // kube lets a suspended job's template change (to retarget it before it starts).
        if old_spec.suspend != Some(true) {
            let template = |raw: &Value| {
                let mut copy = raw.clone();
                default_job(&mut copy);
                copy.pointer("/spec/template")
                    .cloned()
                    .unwrap_or(Value::Null)
            };
            let new_t = template(ctx.raw);
            if new_t != template(old_raw) {
                errs.invalid_shown(
                    "spec.template",
                    &crate::field::show(&new_t),
                    "field is immutable",
                );
            }
        }
    }
}

pub(crate) fn default_job(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    // Both unset means one pod run once; an explicit completions keeps parallelism at 1.
    if !defaults::present(spec, "completions") && !defaults::present(spec, "parallelism") {
        defaults::set(spec, "completions", json!(1));
    }
    defaults::set(spec, "parallelism", json!(1));
    defaults::set(spec, "backoffLimit", json!(6));
    defaults::set(spec, "completionMode", json!("NonIndexed"));
    defaults::set(spec, "suspend", json!(false));
    if !defaults::present(spec, "podFailurePolicy") {
        defaults::set(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    }
    if let Some(t) = defaults::object(spec, "template") {
        podspec::default_template(t, Restart::Job);
    }
}

pub(crate) fn validate_cronjob(ctx: &Ctx<'_, CronJob>, errs: &mut Errs) {
    // The controller names jobs `<cronjob>-<11 digits>`, which must stay a valid name.
    if let Some(name) = ctx.new.metadata.name.as_deref().filter(|n| n.len() > 52) {
        errs.invalid(
            "metadata.name",
            &Value::from(name),
            "must be no more than 52 characters",
        );
    }
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.schedule", "");
        return;
    };
    let schedule = spec.schedule.trim();
    if schedule.is_empty() {
        errs.required("spec.schedule", "");
    } else if let Err(m) = check_schedule(schedule) {
        errs.invalid("spec.schedule", &Value::from(spec.schedule.as_str()), &m);
    }
    errs.one_of(
        "spec.concurrencyPolicy",
        spec.concurrency_policy.as_deref(),
        &["Allow", "Forbid", "Replace"],
    );
    errs.non_negative(
        "spec.startingDeadlineSeconds",
        spec.starting_deadline_seconds,
    );
    errs.non_negative(
        "spec.successfulJobsHistoryLimit",
        i64_of(spec.successful_jobs_history_limit),
    );
    errs.non_negative(
        "spec.failedJobsHistoryLimit",
        i64_of(spec.failed_jobs_history_limit),
    );
    let raw_job_spec = ctx.raw.pointer("/spec/jobTemplate/spec");
    match &spec.job_template.spec {
        Some(js) => validate_job_spec(js, raw_job_spec, "spec.jobTemplate.spec", errs),
        None => errs.required("spec.jobTemplate.spec.template", ""),
    }
}

/// A light check of a cron schedule: a `@` macro or five space-separated fields of the
/// characters cron expressions use.
fn check_schedule(schedule: &str) -> Result<(), String> {
    const MACROS: &[&str] = &[
        "@yearly",
        "@annually",
        "@monthly",
        "@weekly",
        "@daily",
        "@midnight",
        "@hourly",
    ];
    if schedule.starts_with('@') {
        if MACROS.contains(&schedule) || schedule.starts_with("@every ") {
            return Ok(());
        }
        return Err(format!("unrecognized descriptor: {schedule}"));
    }
    // A leading `TZ=`/`CRON_TZ=` is kube's business to reject; accept it here.
    let body = match schedule.split_once(' ') {
        Some((tz, rest)) if tz.starts_with("TZ=") || tz.starts_with("CRON_TZ=") => rest,
        _ => schedule,
    };
    let fields: Vec<&str> = body.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: {body}",
            fields.len()
        ));
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '*' | '/' | ',' | '-' | '?');
    match fields.iter().find(|f| !f.chars().all(allowed)) {
        Some(bad) => Err(format!("invalid schedule field: {bad}")),
        None => Ok(()),
    }
}

pub(crate) fn default_cronjob(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "concurrencyPolicy", json!("Allow"));
    defaults::set(spec, "suspend", json!(false));
    defaults::set(spec, "successfulJobsHistoryLimit", json!(3));
    defaults::set(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(t) = defaults::path(spec, &["jobTemplate", "spec", "template"]) {
        podspec::default_template(t, Restart::Job);
    }
}

pub(crate) fn validate_podtemplate(ctx: &Ctx<'_, PodTemplate>, errs: &mut Errs) {
    let raw = ctx.raw.get("template");
    match &ctx.new.template {
        Some(t) => podspec::validate_template(t, raw, "template", Restart::Pod, errs),
        None => errs.required("template.spec.containers", ""),
    }
}

pub(crate) fn default_podtemplate(obj: &mut Value) {
    if let Some(t) = defaults::existing(obj, "template") {
        podspec::default_template(t, Restart::Pod);
    }
}

/// A ReplicationController's selector is a plain label map: it must not be empty (defaulting
/// copies the template's labels into an absent one) and must select the template's labels.
pub(crate) fn validate_replicationcontroller(
    ctx: &Ctx<'_, ReplicationController>,
    errs: &mut Errs,
) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.template", "");
        return;
    };
    errs.non_negative("spec.replicas", i64_of(spec.replicas));
    errs.non_negative("spec.minReadySeconds", i64_of(spec.min_ready_seconds));
    let template_labels = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.as_ref());
    // Before defaulting an absent selector is the template's labels.
    let selector = spec
        .selector
        .as_ref()
        .filter(|s| !s.is_empty())
        .or(template_labels.filter(|l| !l.is_empty()));
    match selector {
        None => errs.required("spec.selector", ""),
        Some(sel) => {
            meta::validate_label_btree(Some(sel), "spec.selector", errs);
            let labels = template_labels.cloned().unwrap_or_default();
            if spec.template.is_some() && !sel.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                errs.invalid_shown(
                    "spec.template.metadata.labels",
                    &show_label_map(template_labels),
                    "`selector` does not match template `labels`",
                );
            }
        }
    }
    match &spec.template {
        None => errs.required("spec.template", ""),
        Some(t) => {
            let raw = ctx.raw.pointer("/spec/template");
            podspec::validate_template(t, raw, "spec.template", Restart::AlwaysOnly, errs);
            if t.spec
                .as_ref()
                .is_some_and(|s| s.active_deadline_seconds.is_some())
            {
                errs.forbidden(
                    "spec.template.spec.activeDeadlineSeconds",
                    "activeDeadlineSeconds in ReplicationController is not Supported",
                );
            }
        }
    }
}

/// Replicas 1; selector and (absent) object labels from the template's labels; the pod
/// template's own defaults.
pub(crate) fn default_replicationcontroller(obj: &mut Value) {
    let labels = obj
        .pointer("/spec/template/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
        .cloned();
    if let Some(labels) = labels {
        if let Some(spec) = defaults::existing(obj, "spec") {
            let empty = spec
                .get("selector")
                .and_then(Value::as_object)
                .is_some_and(serde_json::Map::is_empty);
            if empty {
                spec["selector"] = labels.clone();
            }
            defaults::set(spec, "selector", labels.clone());
        }
        if let Some(metadata) = defaults::object(obj, "metadata") {
            let empty = metadata
                .get("labels")
                .and_then(Value::as_object)
                .is_some_and(serde_json::Map::is_empty);
            if empty {
                metadata["labels"] = labels.clone();
            }
            defaults::set(metadata, "labels", labels);
        }
    }
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "replicas", json!(1));
    if let Some(t) = defaults::existing(spec, "template") {
        podspec::default_template(t, Restart::AlwaysOnly);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        assert!(check_schedule("*/5 * * * *").is_ok());
        assert!(check_schedule("0 3 * * MON-FRI").is_ok());
        assert!(check_schedule("@hourly").is_ok());
        assert!(check_schedule("* * *").is_err());
        assert!(check_schedule("@sometimes").is_err());
    }
}
