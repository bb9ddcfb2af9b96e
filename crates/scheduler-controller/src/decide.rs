//! Pure decisions of the loop, one binding at a time: whether it needs scheduling, which of
//! its clusters it must leave because of NoExecute taints (cluster failover) or because its
//! copy there has been unhealthy for too long (application failover), which clusters a
//! reschedule moved off (and leaves gracefully), which graceful eviction tasks are finished,
//! the resulting plan (via `flotilla_scheduler::schedule`), and the status to write. No IO
//! and no clock: `now` is an argument, and the one piece of state application failover needs
//! (since when each copy is unhealthy, kept by the engine in memory as Karmada's controller
//! keeps it) is an argument too, so every rule is unit-tested here.
//!
//! Purge modes (what happens to the copy on the cluster being left; see
//! [`PurgeMode::canonical`] for the deprecated names): every eviction leaves a
//! `GracefulEvictionTask`, which keeps the cluster out of the schedule while it lasts.
//! - `Directly`: the binding controller removes that cluster's Work at once (it keeps Works
//!   only for the other tasks); the task ends like a graceful one.
//! - `Gracefully`: the Work stays until every target cluster reports a healthy copy with its
//!   replicas available, or the grace period (the task's `gracePeriodSeconds`, else
//!   `--eviction-grace-period`) passes.
//! - `Never` (application failover only): the task carries `suppressDeletion: true` and stays,
//!   with the old Work, until a user sets it to `false` (the task then ends) or removes it.
//!
//! Reschedules (`rescheduleTriggeredAt`, as `flotillactl reschedule` sets it) divide the
//! replicas afresh. A target that held replicas and has none in the fresh result is left as
//! in cluster failover: a task with reason `Rescheduled`, in `failover.cluster.purgeMode`
//! (Gracefully by default), with the replicas it held, so its Work stays until the replicas
//! that replace it are available or the grace period passes, and the ready total does not
//! drop to zero during a planned move. Decisions, and why:
//! - Only clusters the placement still admits get a task. A cluster dropped because the
//!   placement no longer allows it (no `clusterAffinity` / `clusterAffinities` term matches),
//!   or because its Cluster is gone or being deleted, goes at once, as in Karmada: the user
//!   ruled it out (a cluster being retired, data that must leave a region), and keeping a
//!   copy there would run against the placement. A placement change without a reschedule
//!   (steady scheduling) likewise drops clusters at once.
//! - A cluster kept with fewer replicas gets no task: its copy keeps running, scaled down,
//!   so the total never reaches zero through it.
//! - While the task lasts the cluster is no candidate (as for every task), so a second
//!   reschedule, or a retry of the first, cannot put replicas back there; and a task ending
//!   schedules nothing, so the replicas stay where the reschedule put them: no oscillation.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use flotilla_karmada_api::binding::{
    BINDING_SCHEDULED, ClusterResourceBinding, GracefulEvictionTask, REASON_SUCCESS,
    ResourceBinding, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};
use flotilla_karmada_api::policy::{ApplicationFailoverBehavior, Placement, PurgeMode};
use flotilla_karmada_api::work::ResourceHealth;
use flotilla_scheduler::filter::{matches_affinity, toleration_matches};
use flotilla_scheduler::{
    ClusterSnapshot, Reservations, ResourceVector, ScheduleError, ScheduleRequest, ScheduleResult,
    SchedulerError,
};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use crate::{
    EVICTION_PRODUCER, EVICTION_REASON_APPLICATION_FAILURE, EVICTION_REASON_RESCHEDULED,
    EVICTION_REASON_TAINT, PRODUCER_CRB_APPLICATION_FAILOVER, PRODUCER_RB_APPLICATION_FAILOVER,
};
use flotilla_names::karmada::{TAINT_CLUSTER_NOT_READY, TAINT_CLUSTER_UNREACHABLE};

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
    use flotilla_karmada_api::policy::ReplicaSchedulingType;
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

/// Since when the binding's copy on each cluster has been seen Unhealthy (application
/// failover's memory; the engine keeps one per binding).
pub type UnhealthySince = BTreeMap<String, Timestamp>;

/// `decisionConditions.tolerationSeconds` when absent (Karmada's CRD default).
pub const DEFAULT_APPLICATION_TOLERATION_SECONDS: i32 = 300;

/// The binding's application failover behaviour, when it has one.
pub fn application_failover(binding: &Binding) -> Option<&ApplicationFailoverBehavior> {
    binding
        .spec
        .failover
        .as_ref()
        .and_then(|f| f.application.as_ref())
}

fn in_tasks(binding: &Binding, cluster: &str) -> bool {
    binding
        .spec
        .graceful_eviction_tasks
        .iter()
        .any(|t| t.from_cluster == cluster)
}

/// The new "unhealthy since" record of a binding from its previous one and its status:
/// a target cluster whose copy reports `Unhealthy` (and is not being evicted) keeps its
/// first sighting, or starts at `now`; a copy reported Healthy or Unknown, or a cluster that
/// is no longer a target, is forgotten; a copy with no health reported keeps what it had.
/// Empty for bindings without application failover.
pub fn track_unhealthy(
    binding: &Binding,
    previous: &UnhealthySince,
    now: Timestamp,
) -> UnhealthySince {
    let mut out = UnhealthySince::new();
    if application_failover(binding).is_none() {
        return out;
    }
    for target in &binding.spec.clusters {
        let item = binding
            .status
            .aggregated_status
            .iter()
            .find(|s| s.cluster_name == target.name);
        let health = item.and_then(|s| s.health);
        let since = match health {
            Some(ResourceHealth::Unhealthy) if !in_tasks(binding, &target.name) => {
                Some(previous.get(&target.name).copied().unwrap_or(now))
            }
            Some(ResourceHealth::Unhealthy) | None => previous.get(&target.name).copied(),
            Some(ResourceHealth::Healthy) | Some(ResourceHealth::Unknown) => None,
        };
        if let Some(t) = since {
            out.insert(target.name.clone(), t);
        }
    }
    out
}

/// What application failover decides for one binding.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplicationFailover {
    /// Target clusters whose copy has been unhealthy for the whole toleration: to leave.
    pub evict: Vec<String>,
    /// When the next toleration ends.
    pub recheck: Option<Duration>,
}

/// Which target clusters the binding leaves because its copy there has been Unhealthy
/// continuously for `decisionConditions.tolerationSeconds` (per `since`, from
/// [`track_unhealthy`]); 0 seconds: at the first sighting.
pub fn check_application_failover(
    binding: &Binding,
    since: &UnhealthySince,
    now: Timestamp,
) -> ApplicationFailover {
    let mut out = ApplicationFailover::default();
    let Some(app) = application_failover(binding) else {
        return out;
    };
    let tolerate_ms = i64::from(
        app.decision_conditions
            .toleration_seconds
            .unwrap_or(DEFAULT_APPLICATION_TOLERATION_SECONDS)
            .max(0),
    ) * 1000;
    let now_ms = now.as_millisecond();
    for target in &binding.spec.clusters {
        let Some(first) = since.get(&target.name) else {
            continue;
        };
        if in_tasks(binding, &target.name) {
            continue;
        }
        let deadline = first.as_millisecond().saturating_add(tolerate_ms);
        if deadline <= now_ms {
            out.evict.push(target.name.clone());
        } else {
            let left = Duration::from_millis(u64::try_from(deadline - now_ms).unwrap_or(0));
            out.recheck = Some(out.recheck.map_or(left, |r| r.min(left)));
        }
    }
    out
}

/// Why and how a cluster is left.
struct Cause {
    mode: PurgeMode,
    reason: &'static str,
    producer: &'static str,
    message: String,
    grace_period_seconds: Option<i32>,
}

/// The task of an eviction in `mode`: `Never` suppresses deletion until a user says
/// otherwise; the others end by health or grace. The mode is written by its current name.
fn eviction_task(
    target: &TargetCluster,
    cause: Cause,
    before: &[String],
    now: Timestamp,
) -> GracefulEvictionTask {
    let mode = cause.mode.canonical();
    GracefulEvictionTask {
        from_cluster: target.name.clone(),
        purge_mode: Some(mode),
        replicas: (target.replicas > 0).then_some(target.replicas),
        reason: cause.reason.into(),
        message: Some(cause.message),
        producer: cause.producer.into(),
        grace_period_seconds: if mode == PurgeMode::Gracefully {
            cause.grace_period_seconds
        } else {
            None
        },
        suppress_deletion: (mode == PurgeMode::Never).then_some(true),
        creation_timestamp: Some(Time(now)),
        clusters_before_failover: before.to_vec(),
        ..GracefulEvictionTask::default()
    }
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

/// Whether a target cluster's copy counts as up for ending eviction tasks: reported Healthy
/// (or applied when health is not known), and, for a workload whose reflected status counts
/// replicas, with at least the replicas assigned to that cluster available. The count closes
/// the window in which the status still describes the copy from before the move (healthy
/// with fewer replicas) while the member has not yet seen its new share. A copy with
/// replicas whose health is not known counts only once its status shows them available:
/// a copy just created on a cluster new to the binding is applied well before any status
/// is reflected, and "applied" says nothing about its replicas running.
fn copy_is_up(target: &TargetCluster, status: &ResourceBindingStatus) -> bool {
    let Some(item) = status
        .aggregated_status
        .iter()
        .find(|s| s.cluster_name == target.name)
    else {
        return false;
    };
    let healthy = match item.health {
        Some(ResourceHealth::Healthy) => true,
        Some(ResourceHealth::Unhealthy) => false,
        Some(ResourceHealth::Unknown) | None => item.applied == Some(true),
    };
    if !healthy {
        return false;
    }
    let counts_replicas = item
        .status
        .as_ref()
        .and_then(|s| s.get("generation"))
        .is_some();
    if target.replicas > 0 && counts_replicas {
        let available = item
            .status
            .as_ref()
            .and_then(|s| s.get("availableReplicas"))
            .and_then(Value::as_i64)
            .unwrap_or(0);
        return available >= i64::from(target.replicas);
    }
    target.replicas == 0 || item.health == Some(ResourceHealth::Healthy)
}

/// A task ends once every target cluster reports its copy up (see `copy_is_up`), or once its
/// grace period (the task's own, else `grace`) has passed. A task with `suppressDeletion:
/// true` (purge mode Never) stays until a user sets it to `false`, and then ends at once. A
/// task without a creation time gets `now` (and is kept).
pub fn check_evictions(
    tasks: &[GracefulEvictionTask],
    targets: &[TargetCluster],
    status: &ResourceBindingStatus,
    grace: Duration,
    now: Timestamp,
) -> EvictionCheck {
    let ready = !targets.is_empty() && targets.iter().all(|t| copy_is_up(t, status));
    let now_ms = now.as_millisecond();
    let mut out = EvictionCheck::default();
    for task in tasks {
        match task.suppress_deletion {
            Some(true) => {
                out.keep.push(task.clone());
                continue;
            }
            Some(false) => {
                out.finished.push(task.from_cluster.clone());
                continue;
            }
            None => {}
        }
        if task.creation_timestamp.is_none() {
            out.keep.push(GracefulEvictionTask {
                creation_timestamp: Some(Time(now)),
                ..task.clone()
            });
            continue;
        }
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
    /// Clusters left in this plan (NoExecute taints or application failure).
    pub evicted_now: Vec<String>,
    /// Those of `evicted_now` left because the application failed there.
    pub app_failed_now: Vec<String>,
    /// Target clusters dropped because their Cluster no longer exists.
    pub gone: Vec<String>,
    /// Clusters a fresh reschedule moved every replica off (each with an eviction task).
    pub moved_off: Vec<String>,
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

/// [`plan_with`] for a binding without application failover state.
pub fn plan(
    binding: &Binding,
    clusters: &[Arc<ClusterSnapshot>],
    reserved: &Reservations,
    opts: &PlanOptions,
    now: Timestamp,
) -> Plan {
    plan_with(
        binding,
        clusters,
        reserved,
        opts,
        &UnhealthySince::new(),
        now,
    )
}

/// Plans one binding against `clusters` (sorted by name) and `reserved` capacity: finished
/// eviction tasks go, clusters whose NoExecute taints are no longer tolerated are left
/// (cluster failover, in `failover.cluster.purgeMode`, Gracefully by default), clusters
/// where the copy has been unhealthy past `failover.application`'s toleration (per
/// `unhealthy`) are left (application failover, in its purge mode), each with a graceful
/// eviction task; target clusters that no longer exist are dropped, and the binding is
/// scheduled when a trigger or an eviction asks for it. A fresh reschedule that moves every
/// replica off a cluster the placement still admits leaves it with a task too (see the
/// module doc). A request that does not parse is
/// reported as an invalid placement.
pub fn plan_with(
    binding: &Binding,
    clusters: &[Arc<ClusterSnapshot>],
    reserved: &Reservations,
    opts: &PlanOptions,
    unhealthy: &UnhealthySince,
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
    // Without `failover.cluster`, Karmada's taint manager purges per its flag, Gracefully
    // by default.
    let cluster_mode = binding
        .spec
        .failover
        .as_ref()
        .and_then(|f| f.cluster.as_ref())
        .and_then(|c| c.purge_mode)
        .unwrap_or_default();
    let app = application_failover(binding);
    let app_failed = match app {
        Some(_) => check_application_failover(binding, unhealthy, now),
        None => ApplicationFailover::default(),
    };
    if let Some(d) = app_failed.recheck {
        out.recheck = Some(out.recheck.map_or(d, |r| r.min(d)));
    }
    let before: Vec<String> = out.clusters.iter().map(|t| t.name.clone()).collect();
    let mut kept = Vec::with_capacity(out.clusters.len());
    for target in std::mem::take(&mut out.clusters) {
        let Some(snap) = by_name(clusters, &target.name) else {
            // The Cluster was deleted (unjoined): its replicas need a new home.
            out.gone.push(target.name);
            continue;
        };
        let has_task = out.tasks.iter().any(|t| t.from_cluster == target.name);
        let task = match eviction_due(&tolerations, &snap.taints, now) {
            Some(d) if d.is_zero() => Some(eviction_task(
                &target,
                Cause {
                    mode: cluster_mode,
                    reason: EVICTION_REASON_TAINT,
                    producer: EVICTION_PRODUCER,
                    message: format!(
                        "cluster {} has a NoExecute taint the placement does not tolerate",
                        target.name
                    ),
                    grace_period_seconds: None,
                },
                &before,
                now,
            )),
            due => {
                if let Some(d) = due {
                    out.recheck = Some(out.recheck.map_or(d, |r| r.min(d)));
                }
                match app {
                    Some(app) if app_failed.evict.contains(&target.name) => {
                        out.app_failed_now.push(target.name.clone());
                        Some(eviction_task(
                            &target,
                            Cause {
                                mode: app.purge_mode.unwrap_or_default(),
                                reason: EVICTION_REASON_APPLICATION_FAILURE,
                                producer: application_producer(&binding.key),
                                message: format!(
                                    "the application on cluster {} has been unhealthy for {} s",
                                    target.name,
                                    app.decision_conditions
                                        .toleration_seconds
                                        .unwrap_or(DEFAULT_APPLICATION_TOLERATION_SECONDS)
                                ),
                                grace_period_seconds: app.grace_period_seconds,
                            },
                            &before,
                            now,
                        ))
                    }
                    _ => None,
                }
            }
        };
        match task {
            Some(task) => {
                if !has_task {
                    add_task(&mut out, task, opts.eviction_grace_period);
                }
                out.evicted_now.push(target.name);
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
    if let Err(ScheduleError::NoClusterFit { .. }) = &result {
        // No cluster fits any more: Karmada's scheduler writes the empty result, and the
        // binding's Works go (other failures keep the clusters it has).
        out.clusters.clear();
    }
    if let Ok(r) = &result {
        if fresh {
            for target in moved_off(&out.clusters, r, placement, clusters) {
                let task = eviction_task(
                    &target,
                    Cause {
                        mode: cluster_mode,
                        reason: EVICTION_REASON_RESCHEDULED,
                        producer: EVICTION_PRODUCER,
                        message: format!(
                            "a reschedule moved the {} replicas on cluster {} to other clusters",
                            target.replicas, target.name
                        ),
                        grace_period_seconds: None,
                    },
                    &before,
                    now,
                );
                add_task(&mut out, task, opts.eviction_grace_period);
                out.moved_off.push(target.name);
            }
        }
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

/// Adds a new eviction task to the plan, with a recheck when its grace period ends (a task
/// whose deletion is suppressed waits for a user, not for a deadline).
fn add_task(out: &mut Plan, task: GracefulEvictionTask, default_grace: Duration) {
    if task.suppress_deletion != Some(true) {
        let grace = task
            .grace_period_seconds
            .map(|s| Duration::from_secs(u64::try_from(s.max(0)).unwrap_or(0)))
            .unwrap_or(default_grace);
        out.recheck = Some(out.recheck.map_or(grace, |r| r.min(grace)));
    }
    out.tasks.push(task);
}

/// Whether the placement still admits `cluster`: it matches `clusterAffinity`, or one of the
/// `clusterAffinities` terms or their overflow groups (any of them, not only the term the
/// result used: a reschedule back from a backup term to the first one is a move the
/// scheduler chose, not a cluster the placement ruled out).
fn placement_admits(placement: &Placement, cluster: &ClusterSnapshot) -> bool {
    if placement.cluster_affinities.is_empty() {
        placement
            .cluster_affinity
            .as_ref()
            .is_none_or(|a| matches_affinity(cluster, a))
    } else {
        placement.cluster_affinities.iter().any(|t| {
            matches_affinity(cluster, &t.affinity)
                || t.overflow_affinities
                    .iter()
                    .any(|o| matches_affinity(cluster, &o.affinity))
        })
    }
}

/// The targets (before a fresh reschedule) that held replicas, that `result` no longer
/// uses, and that the scheduler left by choice: the Cluster still exists, is not being
/// deleted, and the placement still admits it ([`placement_admits`]). Those are the moves a
/// reschedule makes, and they leave gracefully; a cluster the placement no longer allows
/// is dropped at once, as Karmada does.
fn moved_off(
    previous: &[TargetCluster],
    result: &ScheduleResult,
    placement: &Placement,
    clusters: &[Arc<ClusterSnapshot>],
) -> Vec<TargetCluster> {
    previous
        .iter()
        .filter(|t| t.replicas > 0)
        .filter(|t| !result.clusters.iter().any(|r| r.name == t.name))
        .filter(|t| {
            by_name(clusters, &t.name)
                .is_some_and(|c| !c.deleting && placement_admits(placement, c))
        })
        .cloned()
        .collect()
}

/// The producer of application failover's tasks: the name of Karmada's controller for the
/// binding's kind.
pub fn application_producer(key: &BindingKey) -> &'static str {
    match key {
        BindingKey::Namespaced { .. } => PRODUCER_RB_APPLICATION_FAILOVER,
        BindingKey::Cluster { .. } => PRODUCER_CRB_APPLICATION_FAILOVER,
    }
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
