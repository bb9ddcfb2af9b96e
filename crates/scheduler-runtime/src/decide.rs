//! Pure decisions of the loop, one binding at a time: whether it needs scheduling, which of
//! its clusters it must leave because of NoExecute taints, which graceful eviction tasks are
//! finished, the resulting plan (via `flotilla_scheduler::schedule`), and the status to write.
//! No IO and no clock: `now` is an argument, so every rule is unit-tested here.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use flotilla_api::binding::{
    BINDING_SCHEDULED, ClusterResourceBinding, GracefulEvictionTask, REASON_SUCCESS,
    ResourceBinding, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};
use flotilla_api::policy::PurgeMode;
use flotilla_api::work::ResourceHealth;
use flotilla_scheduler::filter::toleration_matches;
use flotilla_scheduler::{
    ClusterSnapshot, Reservations, ResourceVector, ScheduleError, ScheduleRequest, ScheduleResult,
    SchedulerError,
};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::{EVICTION_PRODUCER, EVICTION_REASON_TAINT};
use flotilla_core::karmada::{TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE};

/// Which binding: a namespaced ResourceBinding or a ClusterResourceBinding.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BindingKey {
    /// `ResourceBinding` namespace/name.
    Namespaced { namespace: String, name: String },
    /// `ClusterResourceBinding` name.
    Cluster { name: String },
}

impl BindingKey {
    /// The binding's name.
    pub fn name(&self) -> &str {
        match self {
            BindingKey::Namespaced { name, .. } | BindingKey::Cluster { name } => name,
        }
    }

    /// The binding's namespace (None for ClusterResourceBindings).
    pub fn namespace(&self) -> Option<&str> {
        match self {
            BindingKey::Namespaced { namespace, .. } => Some(namespace),
            BindingKey::Cluster { .. } => None,
        }
    }

    /// The binding's kind.
    pub fn kind(&self) -> &'static str {
        match self {
            BindingKey::Namespaced { .. } => "ResourceBinding",
            BindingKey::Cluster { .. } => "ClusterResourceBinding",
        }
    }
}

impl fmt::Display for BindingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BindingKey::Namespaced { namespace, name } => write!(f, "{namespace}/{name}"),
            BindingKey::Cluster { name } => f.write_str(name),
        }
    }
}

/// Either kind of binding, with the spec they share.
#[derive(Clone, Debug, PartialEq)]
pub struct Binding {
    pub key: BindingKey,
    pub metadata: ObjectMeta,
    pub spec: ResourceBindingSpec,
    pub status: ResourceBindingStatus,
}

impl From<ResourceBinding> for Binding {
    fn from(rb: ResourceBinding) -> Self {
        Binding {
            key: BindingKey::Namespaced {
                namespace: rb.metadata.namespace.clone().unwrap_or_default(),
                name: rb.metadata.name.clone().unwrap_or_default(),
            },
            metadata: rb.metadata,
            spec: rb.spec,
            status: rb.status.unwrap_or_default(),
        }
    }
}

impl From<ClusterResourceBinding> for Binding {
    fn from(crb: ClusterResourceBinding) -> Self {
        Binding {
            key: BindingKey::Cluster {
                name: crb.metadata.name.clone().unwrap_or_default(),
            },
            metadata: crb.metadata,
            spec: crb.spec.0,
            status: crb.status.unwrap_or_default(),
        }
    }
}

impl Binding {
    /// The UID, or the key when there is none (ties are broken per this string).
    pub fn tie_key(&self) -> String {
        self.metadata
            .uid
            .clone()
            .unwrap_or_else(|| self.key.to_string())
    }

    /// The `Scheduled` condition.
    pub fn scheduled_condition(&self) -> Option<&Condition> {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == BINDING_SCHEDULED)
    }

    /// `resourceVersion` as a number, when it is one.
    pub fn revision(&self) -> Option<u64> {
        self.metadata
            .resource_version
            .as_deref()
            .and_then(|rv| rv.parse().ok())
    }
}

/// Why a binding is (re)scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// Never scheduled.
    First,
    /// The spec changed since the last scheduling (placement, replicas...).
    SpecChanged,
    /// `rescheduleTriggeredAt` is newer than `lastScheduledTime`: recompute from scratch.
    Fresh,
    /// The last attempt failed; try again (capacity may have appeared).
    Retry,
}

/// Whether this scheduler is responsible for the binding at all.
pub fn is_responsible(binding: &Binding, scheduler_name: &str) -> bool {
    if binding.metadata.deletion_timestamp.is_some() || binding.spec.placement.is_none() {
        // No placement yet: the detector has not filled the binding in.
        return false;
    }
    if binding
        .spec
        .suspension
        .as_ref()
        .and_then(|s| s.scheduling)
        .unwrap_or(false)
    {
        return false;
    }
    match binding.spec.scheduler_name.as_deref() {
        None | Some("") => true,
        Some(name) => name == scheduler_name,
    }
}

/// A reschedule was requested after the last scheduling.
pub fn is_fresh(binding: &Binding) -> bool {
    match (
        &binding.spec.reschedule_triggered_at,
        &binding.status.last_scheduled_time,
    ) {
        (Some(trigger), Some(last)) => trigger.0 > last.0,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Why the binding needs scheduling, if it does (failover is decided separately).
pub fn schedule_trigger(binding: &Binding) -> Option<Trigger> {
    let Some(cond) = binding.scheduled_condition() else {
        return Some(Trigger::First);
    };
    if binding.status.scheduler_observed_generation != binding.metadata.generation {
        return Some(Trigger::SpecChanged);
    }
    if is_fresh(binding) {
        return Some(Trigger::Fresh);
    }
    if cond.status != "True" {
        return Some(Trigger::Retry);
    }
    None
}

/// Whether the binding is placed whole on every fitting cluster: a Duplicated placement, or
/// a kind without replicas. Karmada schedules those again whenever it looks at them, so a
/// cluster that starts to fit (a label, an API, readiness) gets its copy.
pub fn is_duplicated(binding: &Binding) -> bool {
    use flotilla_api::policy::ReplicaSchedulingType;
    let Some(placement) = &binding.spec.placement else {
        return false;
    };
    binding.spec.replicas == 0
        || placement.replica_scheduling.as_ref().is_none_or(|r| {
            r.replica_scheduling_type.unwrap_or_default() == ReplicaSchedulingType::Duplicated
        })
}

/// Whether the binding waits for capacity or for a cluster to appear: those are the ones a
/// cluster change can unblock.
pub fn is_waiting(binding: &Binding) -> bool {
    binding
        .scheduled_condition()
        .is_some_and(|c| c.status != "True")
}

/// The placement's tolerations plus Karmada's defaults: `not-ready` and `unreachable`
/// NoExecute for `default_seconds`, each added only when no toleration covers that key.
pub fn effective_tolerations(placement: &[Toleration], default_seconds: u64) -> Vec<Toleration> {
    let mut out = placement.to_vec();
    for key in [TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE] {
        let probe = Taint {
            key: key.into(),
            effect: "NoExecute".into(),
            ..Taint::default()
        };
        if !placement.iter().any(|t| toleration_matches(t, &probe)) {
            out.push(Toleration {
                key: Some(key.into()),
                operator: Some("Exists".into()),
                effect: Some("NoExecute".into()),
                toleration_seconds: Some(i64::try_from(default_seconds).unwrap_or(i64::MAX)),
                value: None,
            });
        }
    }
    out
}

/// When the binding must leave a cluster with these taints: `None` never, `Some(ZERO)` now,
/// `Some(d)` in `d`. Each NoExecute taint counts from its `timeAdded` (the cluster index
/// fills it in with the first sighting when the taint has none): untolerated ones at once,
/// tolerated ones after the smallest matching `tolerationSeconds` (no seconds: never).
pub fn eviction_due(
    tolerations: &[Toleration],
    taints: &[Taint],
    now: Timestamp,
) -> Option<Duration> {
    let now_ms = now.as_millisecond();
    let mut due: Option<i64> = None;
    for taint in taints.iter().filter(|t| t.effect == "NoExecute") {
        let since = taint
            .time_added
            .as_ref()
            .map_or(now_ms, |t| t.0.as_millisecond());
        let mut tolerated_for: Option<i64> = None;
        let mut forever = false;
        let mut matched = false;
        for t in tolerations.iter().filter(|t| toleration_matches(t, taint)) {
            matched = true;
            match t.toleration_seconds {
                None => forever = true,
                Some(s) => {
                    let ms = s.max(0).saturating_mul(1000);
                    tolerated_for = Some(tolerated_for.map_or(ms, |m| m.min(ms)));
                }
            }
        }
        if matched && forever {
            continue;
        }
        let at = since.saturating_add(tolerated_for.unwrap_or(0));
        due = Some(due.map_or(at, |d| d.min(at)));
    }
    due.map(|at| Duration::from_millis(u64::try_from(at.saturating_sub(now_ms)).unwrap_or(0)))
}

/// Outcome of checking the graceful eviction tasks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EvictionCheck {
    /// Tasks to keep.
    pub keep: Vec<GracefulEvictionTask>,
    /// Clusters whose task ended.
    pub finished: Vec<String>,
    /// When to look again (the earliest grace deadline of a kept task).
    pub recheck: Option<Duration>,
}

/// A task ends once every target cluster reports its copy healthy (or applied when health
/// is not known), or once its grace period (the task's own, else `grace`) has passed.
pub fn check_evictions(
    tasks: &[GracefulEvictionTask],
    targets: &[TargetCluster],
    status: &ResourceBindingStatus,
    grace: Duration,
    now: Timestamp,
) -> EvictionCheck {
    let ready = !targets.is_empty()
        && targets.iter().all(|t| {
            status
                .aggregated_status
                .iter()
                .find(|s| s.cluster_name == t.name)
                .is_some_and(|s| match s.health {
                    Some(ResourceHealth::Healthy) => true,
                    Some(ResourceHealth::Unhealthy) => false,
                    Some(ResourceHealth::Unknown) | None => s.applied == Some(true),
                })
        });
    let now_ms = now.as_millisecond();
    let mut out = EvictionCheck::default();
    for task in tasks {
        let grace_ms = task
            .grace_period_seconds
            .map(|s| i64::from(s.max(0)).saturating_mul(1000))
            .unwrap_or_else(|| i64::try_from(grace.as_millis()).unwrap_or(i64::MAX));
        let deadline = task
            .creation_timestamp
            .as_ref()
            .map_or(now_ms, |t| t.0.as_millisecond())
            .saturating_add(grace_ms);
        if ready || deadline <= now_ms {
            out.finished.push(task.from_cluster.clone());
        } else {
            let left = Duration::from_millis(u64::try_from(deadline - now_ms).unwrap_or(0));
            out.recheck = Some(out.recheck.map_or(left, |r| r.min(left)));
            out.keep.push(task.clone());
        }
    }
    out
}

/// Knobs of [`plan`].
#[derive(Clone, Debug)]
pub struct PlanOptions {
    pub scheduler_name: String,
    pub default_toleration_seconds: u64,
    pub eviction_grace_period: Duration,
}

/// What to do with one binding.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Desired `spec.clusters`.
    pub clusters: Vec<TargetCluster>,
    /// Desired `spec.gracefulEvictionTasks`.
    pub tasks: Vec<GracefulEvictionTask>,
    /// The scheduling outcome, when the binding was scheduled.
    pub result: Option<Result<ScheduleResult, ScheduleError>>,
    /// Why it was scheduled.
    pub trigger: Option<Trigger>,
    /// Clusters left because of NoExecute taints in this plan.
    pub evicted_now: Vec<String>,
    /// Target clusters dropped because their Cluster no longer exists.
    pub gone: Vec<String>,
    /// Look at the binding again after this long (a toleration or grace period ends).
    pub recheck: Option<Duration>,
    /// What one replica requests (parsed from `replicaRequirements`), for reservations.
    pub per_replica: ResourceVector,
    /// `lastScheduledTime` to write on success (at least `rescheduleTriggeredAt`, so the
    /// trigger is consumed even when clocks disagree or within the same second).
    pub scheduled_time: Option<Timestamp>,
}

impl Plan {
    /// Whether the spec must be written.
    pub fn spec_changed(&self, binding: &Binding) -> bool {
        self.clusters != binding.spec.clusters || self.tasks != binding.spec.graceful_eviction_tasks
    }
}

fn by_name<'a>(clusters: &'a [Arc<ClusterSnapshot>], name: &str) -> Option<&'a ClusterSnapshot> {
    clusters
        .binary_search_by(|c| c.name.as_str().cmp(name))
        .ok()
        .map(|i| &*clusters[i])
}

/// Plans one binding against `clusters` (sorted by name) and `reserved` capacity: finished
/// eviction tasks go, clusters whose NoExecute taints are no longer tolerated are left
/// (with a graceful eviction task, unless the binding's cluster failover purges directly),
/// target clusters that no longer exist are dropped, and the binding is scheduled when a
/// trigger or an eviction asks for it. A request that does not parse is reported as an
/// invalid placement.
pub fn plan(
    binding: &Binding,
    clusters: &[Arc<ClusterSnapshot>],
    reserved: &Reservations,
    opts: &PlanOptions,
    now: Timestamp,
) -> Plan {
    let mut out = Plan {
        clusters: binding.spec.clusters.clone(),
        tasks: binding.spec.graceful_eviction_tasks.clone(),
        ..Plan::default()
    };
    if !is_responsible(binding, &opts.scheduler_name) {
        return out;
    }
    let Some(placement) = binding.spec.placement.as_ref() else {
        return out;
    };

    // Eviction tasks whose replacement is up (or whose grace ran out) end.
    let check = check_evictions(
        &out.tasks,
        &out.clusters,
        &binding.status,
        opts.eviction_grace_period,
        now,
    );
    out.tasks = check.keep;
    out.recheck = check.recheck;

    // Failover: clusters whose NoExecute taints are no longer tolerated.
    let tolerations = effective_tolerations(
        &placement.cluster_tolerations,
        opts.default_toleration_seconds,
    );
    let purge_directly = binding
        .spec
        .failover
        .as_ref()
        .and_then(|f| f.cluster.as_ref())
        .and_then(|c| c.purge_mode)
        == Some(PurgeMode::Directly);
    let before: Vec<String> = out.clusters.iter().map(|t| t.name.clone()).collect();
    let mut kept = Vec::with_capacity(out.clusters.len());
    for target in std::mem::take(&mut out.clusters) {
        let Some(snap) = by_name(clusters, &target.name) else {
            // The Cluster was deleted (unjoined): its replicas need a new home.
            out.gone.push(target.name);
            continue;
        };
        match eviction_due(&tolerations, &snap.taints, now) {
            Some(d) if d.is_zero() => {
                if !purge_directly && !out.tasks.iter().any(|t| t.from_cluster == target.name) {
                    out.tasks.push(GracefulEvictionTask {
                        from_cluster: target.name.clone(),
                        purge_mode: Some(PurgeMode::Gracefully),
                        replicas: Some(target.replicas),
                        reason: EVICTION_REASON_TAINT.into(),
                        message: Some(format!(
                            "cluster {} has a NoExecute taint the placement does not tolerate",
                            target.name
                        )),
                        producer: EVICTION_PRODUCER.into(),
                        creation_timestamp: Some(Time(now)),
                        clusters_before_failover: before.clone(),
                        ..GracefulEvictionTask::default()
                    });
                    let grace = opts.eviction_grace_period;
                    out.recheck = Some(out.recheck.map_or(grace, |r| r.min(grace)));
                }
                out.evicted_now.push(target.name);
            }
            Some(d) => {
                out.recheck = Some(out.recheck.map_or(d, |r| r.min(d)));
                kept.push(target);
            }
            None => kept.push(target),
        }
    }
    out.clusters = kept;

    let trigger = schedule_trigger(binding);
    // A Duplicated binding is placed again on every look (see `is_duplicated`); its status
    // moves only when the result does.
    let recheck = trigger.is_none() && is_duplicated(binding);
    if trigger.is_none() && !recheck && out.evicted_now.is_empty() && out.gone.is_empty() {
        return out;
    }
    out.trigger = trigger;
    let per_replica = match &binding.spec.replica_requirements {
        Some(r) => match ResourceVector::from_resource_list(&r.resource_request) {
            Ok(v) => v,
            Err(e) => {
                out.result = Some(Err(invalid_request(&e)));
                return out;
            }
        },
        None => ResourceVector::new(),
    };
    let fresh = trigger == Some(Trigger::Fresh) || is_fresh(binding);
    let evicted: Vec<String> = out
        .tasks
        .iter()
        .map(|t| t.from_cluster.clone())
        .chain(out.evicted_now.iter().cloned())
        .collect();
    let key = binding.tie_key();
    let req = ScheduleRequest {
        key: &key,
        api_version: &binding.spec.resource.api_version,
        kind: &binding.spec.resource.kind,
        replicas: binding.spec.replicas,
        per_replica: &per_replica,
        placement,
        previous: &out.clusters,
        fresh,
        evicted: &evicted,
        observed_affinity: binding.status.scheduler_observed_affinity_name.as_deref(),
    };
    let result = flotilla_scheduler::schedule(&req, clusters, reserved);
    if let Ok(r) = &result {
        let unchanged = r.clusters == out.clusters;
        out.clusters = r.clusters.clone();
        if recheck && unchanged && out.evicted_now.is_empty() && out.gone.is_empty() {
            out.result = Some(result);
            out.per_replica = per_replica;
            return out;
        }
        let trigger_time = binding.spec.reschedule_triggered_at.as_ref().map(|t| t.0);
        out.scheduled_time = Some(match trigger_time {
            Some(t) if fresh && t > now => t,
            _ => now,
        });
    }
    out.result = Some(result);
    out.per_replica = per_replica;
    out
}

fn invalid_request(e: &SchedulerError) -> ScheduleError {
    ScheduleError::InvalidPlacement {
        message: format!("replicaRequirements.resourceRequest: {e}"),
    }
}

/// Replicas added per cluster going from `before` to `after` (what to reserve).
pub fn added_replicas(before: &[TargetCluster], after: &[TargetCluster]) -> Vec<(String, i64)> {
    let old: BTreeMap<&str, i64> = before
        .iter()
        .map(|t| (t.name.as_str(), i64::from(t.replicas)))
        .collect();
    after
        .iter()
        .filter_map(|t| {
            let delta = i64::from(t.replicas) - old.get(t.name.as_str()).copied().unwrap_or(0);
            (delta > 0).then(|| (t.name.clone(), delta))
        })
        .collect()
}

/// `{member1:3, member2:2}`, as in the success event.
pub fn result_text(clusters: &[TargetCluster]) -> String {
    let parts: Vec<String> = clusters
        .iter()
        .map(|t| format!("{}:{}", t.name, t.replicas))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// The message of a successful `Scheduled` condition.
pub const SCHEDULED_MESSAGE: &str = "Binding has been scheduled successfully.";

/// The `Scheduled` condition to report: status, reason, message.
pub fn scheduled_condition(
    result: &Result<ScheduleResult, ScheduleError>,
) -> (&'static str, &'static str, String) {
    match result {
        Ok(_) => ("True", REASON_SUCCESS, SCHEDULED_MESSAGE.to_owned()),
        Err(e) => ("False", e.reason(), e.message().to_owned()),
    }
}

/// The status merge patch after a scheduling attempt, or `None` when the status already says
/// all of it. `generation` is the binding's generation after the spec write.
pub fn status_patch(
    old: &ResourceBindingStatus,
    generation: Option<i64>,
    result: &Result<ScheduleResult, ScheduleError>,
    scheduled_time: Option<Timestamp>,
    now: Timestamp,
) -> Option<Value> {
    let (status, reason, message) = scheduled_condition(result);
    let previous = old.conditions.iter().find(|c| c.type_ == BINDING_SCHEDULED);
    let same_condition =
        previous.is_some_and(|c| c.status == status && c.reason == reason && c.message == message);
    let affinity = match result {
        Ok(r) => r.affinity_name.clone(),
        Err(_) => old.scheduler_observed_affinity_name.clone(),
    };
    let time_changes = scheduled_time.is_some_and(|t| {
        old.last_scheduled_time
            .as_ref()
            .is_none_or(|old| old.0.as_second() != t.as_second())
    });
    if same_condition
        && old.scheduler_observed_generation == generation
        && old.scheduler_observed_affinity_name == affinity
        && !time_changes
    {
        return None;
    }
    let transition = match previous {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => Time(now),
    };
    let condition = Condition {
        type_: BINDING_SCHEDULED.into(),
        status: status.into(),
        reason: reason.into(),
        message,
        last_transition_time: transition,
        observed_generation: generation,
    };
    let mut conditions: Vec<Condition> = old
        .conditions
        .iter()
        .filter(|c| c.type_ != BINDING_SCHEDULED)
        .cloned()
        .collect();
    conditions.push(condition);
    let mut status = json!({
        "schedulerObservedGeneration": generation,
        "conditions": conditions,
        "schedulerObservingAffinityName": affinity,
    });
    if let (Some(t), Some(obj)) = (scheduled_time, status.as_object_mut()) {
        obj.insert("lastScheduledTime".into(), json!(Time(t)));
    }
    Some(json!({ "status": status }))
}

#[cfg(test)]
mod tests;
