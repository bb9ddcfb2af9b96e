// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used)]

use super::*;
use flotilla_karmada_api::binding::{AggregatedStatusItem, ObjectReference, ReplicaRequirements};
use flotilla_karmada_api::policy::{
    ApplicationFailoverBehavior, ClusterFailoverBehavior, DynamicWeightFactor, FailoverBehavior,
    Placement, ReplicaDivisionPreference, ReplicaSchedulingStrategy, ReplicaSchedulingType,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn snap(name: &str, cpu_milli: i64, taints: Vec<Taint>) -> Arc<ClusterSnapshot> {
    Arc::new(ClusterSnapshot {
        name: name.into(),
        taints,
        ready: true,
        has_resource_summary: true,
        free: ResourceVector::new()
            .with("cpu", cpu_milli)
            .with("pods", 100),
        api_enablements: flotilla_scheduler::ApiSet::new([("apps/v1", "Deployment")]),
        ..ClusterSnapshot::default()
    })
}

fn no_execute(key: &str, added: i64) -> Taint {
    Taint {
        key: key.into(),
        effect: "NoExecute".into(),
        time_added: Some(Time(ts(added))),
        value: None,
    }
}

fn dynamic() -> Placement {
    Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(ReplicaDivisionPreference::Weighted),
            weight_preference: Some(flotilla_karmada_api::policy::ClusterPreferences {
                static_weight_list: vec![],
                dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
            }),
        }),
        ..Placement::default()
    }
}

fn binding(replicas: i32, placement: Placement) -> Binding {
    Binding {
        key: BindingKey::Namespaced {
            namespace: "default".into(),
            name: "x-deployment".into(),
        },
        metadata: ObjectMeta {
            name: Some("x-deployment".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            generation: Some(1),
            resource_version: Some("10".into()),
            ..ObjectMeta::default()
        },
        spec: ResourceBindingSpec {
            resource: ObjectReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: Some("default".into()),
                name: "x".into(),
                ..ObjectReference::default()
            },
            propagate_deps: None,
            replica_requirements: Some(ReplicaRequirements {
                resource_request: [("cpu".to_string(), Quantity("1".into()))].into(),
                ..ReplicaRequirements::default()
            }),
            replicas,
            components: vec![],
            clusters: vec![],
            placement: Some(placement),
            graceful_eviction_tasks: vec![],
            required_by: vec![],
            scheduler_name: None,
            failover: None,
            conflict_resolution: None,
            reschedule_triggered_at: None,
            suspension: None,
            preserve_resources_on_deletion: None,
            schedule_priority: None,
            workload_affinity_groups: None,
        },
        status: ResourceBindingStatus::default(),
    }
}

/// Marks `b` as scheduled at generation 1 onto `clusters` at time `at`.
fn scheduled(mut b: Binding, clusters: &[(&str, i32)], at: i64) -> Binding {
    b.spec.clusters = clusters
        .iter()
        .map(|(n, r)| TargetCluster {
            name: (*n).into(),
            replicas: *r,
            components: Vec::new(),
        })
        .collect();
    b.status.scheduler_observed_generation = b.metadata.generation;
    b.status.last_scheduled_time = Some(Time(ts(at)));
    b.status.conditions = vec![Condition {
        type_: BINDING_SCHEDULED.into(),
        status: "True".into(),
        reason: REASON_SUCCESS.into(),
        message: SCHEDULED_MESSAGE.into(),
        last_transition_time: Time(ts(at)),
        observed_generation: b.metadata.generation,
    }];
    b
}

fn opts() -> PlanOptions {
    PlanOptions {
        scheduler_name: "default-scheduler".into(),
        default_toleration_seconds: 300,
        eviction_grace_period: Duration::from_secs(600),
    }
}

fn targets(plan: &Plan) -> Vec<(String, i32)> {
    plan.clusters
        .iter()
        .map(|t| (t.name.clone(), t.replicas))
        .collect()
}

#[test]
fn responsibility_follows_scheduler_name_placement_and_suspension() {
    let mut b = binding(3, dynamic());
    assert!(is_responsible(&b, "default-scheduler"));
    b.spec.scheduler_name = Some("other".into());
    assert!(!is_responsible(&b, "default-scheduler"));
    b.spec.scheduler_name = Some(String::new());
    assert!(is_responsible(&b, "default-scheduler"));
    b.spec.suspension = Some(flotilla_karmada_api::binding::BindingSuspension {
        scheduling: Some(true),
        ..Default::default()
    });
    assert!(!is_responsible(&b, "default-scheduler"));
    let mut b = binding(3, dynamic());
    b.spec.placement = None;
    assert!(!is_responsible(&b, "default-scheduler"));
}

#[test]
fn triggers() {
    let b = binding(3, dynamic());
    assert_eq!(schedule_trigger(&b), Some(Trigger::First));
    let mut b = scheduled(b, &[("a", 3)], 100);
    assert_eq!(schedule_trigger(&b), None);
    b.metadata.generation = Some(2);
    assert_eq!(schedule_trigger(&b), Some(Trigger::SpecChanged));
    b.status.scheduler_observed_generation = Some(2);
    b.spec.reschedule_triggered_at = Some(Time(ts(100)));
    assert_eq!(
        schedule_trigger(&b),
        None,
        "not newer than the last schedule"
    );
    b.spec.reschedule_triggered_at = Some(Time(ts(101)));
    assert_eq!(schedule_trigger(&b), Some(Trigger::Fresh));
    b.spec.reschedule_triggered_at = None;
    b.status.conditions[0].status = "False".into();
    assert_eq!(schedule_trigger(&b), Some(Trigger::Retry));
    assert!(is_waiting(&b));
}

#[test]
fn default_tolerations_are_added_only_for_uncovered_keys() {
    let t = effective_tolerations(&[], 300);
    assert_eq!(t.len(), 2);
    assert!(t.iter().all(|t| t.toleration_seconds == Some(300)));
    let own = Toleration {
        key: Some(TAINT_CLUSTER_UNREACHABLE.into()),
        operator: Some("Exists".into()),
        effect: Some("NoExecute".into()),
        toleration_seconds: Some(10),
        value: None,
    };
    let t = effective_tolerations(std::slice::from_ref(&own), 300);
    assert_eq!(t.len(), 2);
    assert!(t.contains(&own));
    assert!(
        t.iter()
            .any(|t| t.key.as_deref() == Some(TAINT_CLUSTER_NOT_READY))
    );
}

#[test]
fn eviction_deadlines() {
    let tol = effective_tolerations(&[], 300);
    let now = ts(1_000);
    // Tolerated for 300 s from timeAdded.
    assert_eq!(
        eviction_due(&tol, &[no_execute(TAINT_CLUSTER_NOT_READY, 900)], now),
        Some(Duration::from_secs(200))
    );
    assert_eq!(
        eviction_due(&tol, &[no_execute(TAINT_CLUSTER_NOT_READY, 600)], now),
        Some(Duration::ZERO)
    );
    // An untolerated NoExecute taint: at once.
    assert_eq!(
        eviction_due(&tol, &[no_execute("custom", 1_000)], now),
        Some(Duration::ZERO)
    );
    // NoSchedule never evicts; a toleration without seconds tolerates forever.
    let mut ns = no_execute("custom", 0);
    ns.effect = "NoSchedule".into();
    assert_eq!(eviction_due(&tol, &[ns], now), None);
    let forever = vec![Toleration {
        key: Some("custom".into()),
        operator: Some("Exists".into()),
        ..Toleration::default()
    }];
    assert_eq!(
        eviction_due(&forever, &[no_execute("custom", 0)], now),
        None
    );
}

#[test]
fn first_schedule_divides_by_free_capacity_and_reports_success() {
    let b = binding(5, dynamic());
    let clusters = vec![snap("a", 6_000, vec![]), snap("b", 4_000, vec![])];
    let plan = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    assert_eq!(plan.trigger, Some(Trigger::First));
    assert_eq!(targets(&plan), [("a".into(), 3), ("b".into(), 2)]);
    assert!(plan.spec_changed(&b));
    assert_eq!(plan.scheduled_time, Some(ts(1_000)));
    let patch = status_patch(
        &b.status,
        Some(2),
        plan.result.as_ref().unwrap(),
        plan.scheduled_time,
        ts(1_000),
    )
    .unwrap();
    assert_eq!(patch["status"]["schedulerObservedGeneration"], 2);
    assert_eq!(patch["status"]["conditions"][0]["reason"], "Success");
    assert_eq!(patch["status"]["lastScheduledTime"], "1970-01-01T00:16:40Z");
    assert_eq!(
        result_text(&plan.clusters),
        "{a:3, b:2}",
        "the event's result text"
    );
}

#[test]
fn reservations_are_respected() {
    let b = binding(5, dynamic());
    let clusters = vec![snap("a", 6_000, vec![]), snap("b", 4_000, vec![])];
    let mut res = Reservations::default();
    res.reserve("a", &ResourceVector::new().with("cpu", 1000), 6);
    let plan = plan(&b, &clusters, &res, &opts(), ts(1_000));
    assert!(matches!(
        plan.result,
        Some(Err(ScheduleError::Unschedulable { .. }))
    ));
    // 5 of the 6 cores of a stay reserved: 1 replica fits there.
    res.release("a", &ResourceVector::new().with("cpu", 1000), 1);
    let plan = plan_ok(&b, &clusters, &res);
    assert_eq!(targets(&plan), [("a".into(), 1), ("b".into(), 4)]);
}

fn plan_ok(b: &Binding, clusters: &[Arc<ClusterSnapshot>], res: &Reservations) -> Plan {
    let p = plan(b, clusters, res, &opts(), ts(1_000));
    assert!(matches!(p.result, Some(Ok(_))), "{:?}", p.result);
    p
}

#[test]
fn nothing_to_do_for_a_scheduled_binding() {
    let b = scheduled(binding(5, dynamic()), &[("a", 3), ("b", 2)], 900);
    let clusters = vec![snap("a", 6_000, vec![]), snap("b", 4_000, vec![])];
    let plan = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    assert!(plan.result.is_none());
    assert!(!plan.spec_changed(&b));
    assert_eq!(plan.recheck, None);
}

#[test]
fn unschedulable_status_keeps_the_old_time_and_is_not_rewritten() {
    let b = binding(50, dynamic());
    let clusters = vec![snap("a", 6_000, vec![])];
    let plan = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    let result = plan.result.unwrap();
    assert!(result.is_err());
    assert!(plan.scheduled_time.is_none());
    let patch = status_patch(&b.status, Some(1), &result, None, ts(1_000)).unwrap();
    let cond = &patch["status"]["conditions"][0];
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "Unschedulable");
    assert!(patch["status"].get("lastScheduledTime").is_none());
    // Applying the patch and trying again: nothing to write.
    let status: ResourceBindingStatus = serde_json::from_value(patch["status"].clone()).unwrap();
    assert_eq!(
        status_patch(&status, Some(1), &result, None, ts(1_005)),
        None
    );
}

#[test]
fn expired_no_execute_taint_moves_replicas_with_an_eviction_task() {
    let b = scheduled(binding(5, dynamic()), &[("a", 3), ("b", 2)], 900);
    let clusters = vec![
        snap("a", 6_000, vec![no_execute(TAINT_CLUSTER_NOT_READY, 600)]),
        snap("b", 10_000, vec![]),
        snap("c", 10_000, vec![]),
    ];
    let plan = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(plan.evicted_now, ["a"]);
    assert_eq!(plan.tasks.len(), 1);
    let task = &plan.tasks[0];
    assert_eq!(task.from_cluster, "a");
    assert_eq!(task.reason, "TaintUntolerated");
    assert_eq!(task.producer, "flotilla-scheduler");
    assert_eq!(task.replicas, Some(3));
    assert_eq!(task.clusters_before_failover, ["a", "b"]);
    // b keeps its 2; the 3 from a are divided over b and c; a is not a target any more.
    let t = targets(&plan);
    assert!(t.iter().all(|(n, _)| n != "a"), "{t:?}");
    assert_eq!(t.iter().map(|(_, r)| r).sum::<i32>(), 5);
    assert!(t.iter().any(|(n, r)| n == "b" && *r >= 2));
    // The task lasts until the grace period (nothing healthy reported yet).
    assert_eq!(plan.recheck, Some(Duration::from_secs(600)));
}

#[test]
fn taint_within_toleration_only_schedules_a_recheck() {
    let b = scheduled(binding(5, dynamic()), &[("a", 3), ("b", 2)], 900);
    let clusters = vec![
        snap("a", 6_000, vec![no_execute(TAINT_CLUSTER_UNREACHABLE, 950)]),
        snap("b", 10_000, vec![]),
    ];
    let plan = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    assert!(plan.result.is_none());
    assert!(!plan.spec_changed(&b));
    assert_eq!(plan.recheck, Some(Duration::from_secs(250)));
}

fn with_cluster_purge(mut b: Binding, mode: PurgeMode) -> Binding {
    b.spec.failover = Some(FailoverBehavior {
        application: None,
        cluster: Some(ClusterFailoverBehavior {
            purge_mode: Some(mode),
            state_preservation: None,
        }),
    });
    b
}

#[test]
fn purge_directly_leaves_with_a_task_whose_work_goes_at_once() {
    for mode in [PurgeMode::Directly, PurgeMode::Immediately] {
        let b = with_cluster_purge(scheduled(binding(2, dynamic()), &[("a", 2)], 900), mode);
        let clusters = vec![
            snap("a", 6_000, vec![no_execute("custom", 0)]),
            snap("b", 10_000, vec![]),
        ];
        let plan = plan_ok(&b, &clusters, &Reservations::default());
        assert_eq!(targets(&plan), [("b".into(), 2)]);
        assert_eq!(plan.tasks.len(), 1, "{mode:?}");
        let task = &plan.tasks[0];
        // Written by its current name; the binding controller drops the Work at once.
        assert_eq!(task.purge_mode, Some(PurgeMode::Directly));
        assert!(!task.keeps_work());
        assert_eq!(task.suppress_deletion, None);
        assert_eq!(task.reason, "TaintUntolerated");
    }
}

#[test]
fn purge_gracefully_is_the_default_and_keeps_the_work() {
    for b in [
        scheduled(binding(2, dynamic()), &[("a", 2)], 900),
        with_cluster_purge(
            scheduled(binding(2, dynamic()), &[("a", 2)], 900),
            PurgeMode::Graciously,
        ),
    ] {
        let clusters = vec![
            snap("a", 6_000, vec![no_execute("custom", 0)]),
            snap("b", 10_000, vec![]),
        ];
        let plan = plan_ok(&b, &clusters, &Reservations::default());
        assert_eq!(plan.tasks.len(), 1);
        assert_eq!(plan.tasks[0].purge_mode, Some(PurgeMode::Gracefully));
        assert!(plan.tasks[0].keeps_work());
        assert_eq!(plan.recheck, Some(Duration::from_secs(600)));
    }
}

#[test]
fn purge_never_keeps_the_task_until_a_user_lets_it_go() {
    let b = with_cluster_purge(
        scheduled(binding(2, dynamic()), &[("a", 2)], 900),
        PurgeMode::Never,
    );
    let clusters = vec![
        snap("a", 6_000, vec![no_execute("custom", 0)]),
        snap("b", 10_000, vec![]),
    ];
    let plan = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(plan.tasks.len(), 1);
    let task = plan.tasks[0].clone();
    assert_eq!(task.purge_mode, Some(PurgeMode::Never));
    assert_eq!(task.suppress_deletion, Some(true));
    assert!(task.keeps_work());
    // No deadline to wait for.
    assert_eq!(plan.recheck, None);
    // Neither healthy replacements nor any amount of time end it...
    let targets_now = plan.clusters.clone();
    let status = ResourceBindingStatus {
        aggregated_status: vec![healthy_item("b", None)],
        ..ResourceBindingStatus::default()
    };
    let c = check_evictions(
        std::slice::from_ref(&task),
        &targets_now,
        &status,
        Duration::from_secs(600),
        ts(1_000_000),
    );
    assert_eq!(c.keep, std::slice::from_ref(&task));
    assert_eq!(c.recheck, None);
    // ...a user setting suppressDeletion to false does.
    let released = GracefulEvictionTask {
        suppress_deletion: Some(false),
        ..task
    };
    let c = check_evictions(
        &[released],
        &targets_now,
        &ResourceBindingStatus::default(),
        Duration::from_secs(600),
        ts(1_000),
    );
    assert_eq!(c.finished, ["a"]);
    assert!(c.keep.is_empty());
}

#[test]
fn a_task_without_a_creation_time_gets_one() {
    let task = GracefulEvictionTask {
        from_cluster: "a".into(),
        reason: "Manual".into(),
        producer: "someone".into(),
        ..GracefulEvictionTask::default()
    };
    let c = check_evictions(
        std::slice::from_ref(&task),
        &[],
        &ResourceBindingStatus::default(),
        Duration::from_secs(600),
        ts(1_000),
    );
    assert_eq!(c.keep.len(), 1);
    assert_eq!(c.keep[0].creation_timestamp, Some(Time(ts(1_000))));
}

fn healthy_item(cluster: &str, available: Option<i64>) -> AggregatedStatusItem {
    AggregatedStatusItem {
        cluster_name: cluster.into(),
        status: available.map(|n| {
            json!({"generation": 2, "observedGeneration": 2, "replicas": n,
                   "readyReplicas": n, "availableReplicas": n})
        }),
        applied: Some(true),
        applied_message: None,
        health: Some(ResourceHealth::Healthy),
    }
}

#[test]
fn a_replacement_counts_only_with_its_share_available() {
    let task = GracefulEvictionTask {
        from_cluster: "a".into(),
        reason: EVICTION_REASON_TAINT.into(),
        producer: EVICTION_PRODUCER.into(),
        creation_timestamp: Some(Time(ts(900))),
        ..GracefulEvictionTask::default()
    };
    let targets = [TargetCluster {
        name: "b".into(),
        replicas: 3,
        components: vec![],
    }];
    let check = |available: i64| {
        let status = ResourceBindingStatus {
            aggregated_status: vec![healthy_item("b", Some(available))],
            ..ResourceBindingStatus::default()
        };
        check_evictions(
            std::slice::from_ref(&task),
            &targets,
            &status,
            Duration::from_secs(600),
            ts(1_000),
        )
    };
    // Healthy, but still the copy from before the move (2 of the 3 now assigned).
    assert_eq!(check(2).keep.len(), 1);
    assert_eq!(check(3).finished, ["a"]);
}

fn with_app_failover(mut b: Binding, toleration: i32, mode: Option<PurgeMode>) -> Binding {
    b.spec.failover = Some(FailoverBehavior {
        application: Some(ApplicationFailoverBehavior {
            decision_conditions: flotilla_karmada_api::policy::DecisionConditions {
                toleration_seconds: Some(toleration),
            },
            purge_mode: mode,
            grace_period_seconds: (mode.map(PurgeMode::canonical) == Some(PurgeMode::Gracefully))
                .then_some(120),
            state_preservation: None,
        }),
        cluster: None,
    });
    b
}

fn health_of(b: &mut Binding, cluster: &str, health: ResourceHealth) {
    b.status
        .aggregated_status
        .retain(|s| s.cluster_name != cluster);
    b.status.aggregated_status.push(AggregatedStatusItem {
        cluster_name: cluster.into(),
        status: None,
        applied: Some(true),
        applied_message: None,
        health: Some(health),
    });
}

#[test]
fn unhealthy_copies_are_remembered_from_their_first_sighting() {
    let mut b = with_app_failover(
        scheduled(binding(4, dynamic()), &[("a", 2), ("b", 2)], 900),
        10,
        None,
    );
    health_of(&mut b, "a", ResourceHealth::Unhealthy);
    health_of(&mut b, "b", ResourceHealth::Healthy);
    let since = track_unhealthy(&b, &UnhealthySince::new(), ts(1_000));
    assert_eq!(since, [("a".to_string(), ts(1_000))].into());
    // Still unhealthy later: the first sighting stays.
    let again = track_unhealthy(&b, &since, ts(1_005));
    assert_eq!(again, since);
    // Health not reported (e.g. the Work is being rewritten): kept as it was.
    b.status.aggregated_status.retain(|s| s.cluster_name != "a");
    assert_eq!(track_unhealthy(&b, &since, ts(1_006)), since);
    // Healthy (or Unknown) again: forgotten, so a later failure counts afresh.
    health_of(&mut b, "a", ResourceHealth::Unknown);
    assert!(track_unhealthy(&b, &since, ts(1_007)).is_empty());
    // Not a target any more: forgotten.
    health_of(&mut b, "a", ResourceHealth::Unhealthy);
    b.spec.clusters.retain(|t| t.name != "a");
    assert!(track_unhealthy(&b, &since, ts(1_008)).is_empty());
    // Without application failover nothing is tracked.
    let mut plain = scheduled(binding(4, dynamic()), &[("a", 4)], 900);
    health_of(&mut plain, "a", ResourceHealth::Unhealthy);
    assert!(track_unhealthy(&plain, &UnhealthySince::new(), ts(1_000)).is_empty());
}

#[test]
fn application_failover_waits_for_the_toleration() {
    let mut b = with_app_failover(
        scheduled(binding(4, dynamic()), &[("a", 2), ("b", 2)], 900),
        10,
        None,
    );
    health_of(&mut b, "a", ResourceHealth::Unhealthy);
    let since: UnhealthySince = [("a".to_string(), ts(1_000))].into();
    let clusters = vec![
        snap("a", 10_000, vec![]),
        snap("b", 10_000, vec![]),
        snap("c", 10_000, vec![]),
    ];
    // Within the toleration: nothing moves, a look at its end is scheduled.
    let p = plan_with(
        &b,
        &clusters,
        &Reservations::default(),
        &opts(),
        &since,
        ts(1_004),
    );
    assert!(!p.spec_changed(&b) && p.result.is_none());
    assert_eq!(p.recheck, Some(Duration::from_secs(6)));
    let c = check_application_failover(&b, &since, ts(1_004));
    assert!(c.evict.is_empty());
    // Healthy again before the end: nothing to remember, nothing happens at the end.
    health_of(&mut b, "a", ResourceHealth::Healthy);
    let forgotten = track_unhealthy(&b, &since, ts(1_005));
    let p = plan_with(
        &b,
        &clusters,
        &Reservations::default(),
        &opts(),
        &forgotten,
        ts(1_010),
    );
    assert!(!p.spec_changed(&b) && p.result.is_none() && p.recheck.is_none());
    // Unhealthy for the whole toleration: the replicas move, with Karmada's task.
    health_of(&mut b, "a", ResourceHealth::Unhealthy);
    let p = plan_with(
        &b,
        &clusters,
        &Reservations::default(),
        &opts(),
        &since,
        ts(1_010),
    );
    assert_eq!(p.evicted_now, ["a"]);
    assert_eq!(p.app_failed_now, ["a"]);
    let t = targets(&p);
    assert!(t.iter().all(|(n, _)| n != "a"), "{t:?}");
    assert_eq!(t.iter().map(|(_, r)| r).sum::<i32>(), 4);
    assert!(matches!(p.result, Some(Ok(_))));
    let task = &p.tasks[0];
    assert_eq!(task.from_cluster, "a");
    assert_eq!(task.reason, "ApplicationFailure");
    assert_eq!(
        task.producer,
        "resource-binding-application-failover-controller"
    );
    assert_eq!(task.replicas, Some(2));
    assert_eq!(task.creation_timestamp, Some(Time(ts(1_010))));
    // Default purge mode: Gracefully, with the policy's grace period (none set here).
    assert_eq!(task.purge_mode, Some(PurgeMode::Gracefully));
    assert_eq!(task.grace_period_seconds, None);
    assert_eq!(p.recheck, Some(Duration::from_secs(600)));
    // Once the task exists the cluster is not failed over again.
    let mut moved = b.clone();
    moved.spec.graceful_eviction_tasks = p.tasks.clone();
    assert!(
        check_application_failover(&moved, &since, ts(1_020))
            .evict
            .is_empty()
    );
    assert!(
        track_unhealthy(&moved, &UnhealthySince::new(), ts(1_020)).is_empty(),
        "a copy being evicted is not counted"
    );
}

#[test]
fn application_failover_purge_modes() {
    let clusters = vec![snap("a", 10_000, vec![]), snap("b", 10_000, vec![])];
    let since: UnhealthySince = [("a".to_string(), ts(1_000))].into();
    let cases = [
        (
            Some(PurgeMode::Gracefully),
            PurgeMode::Gracefully,
            Some(120),
            None,
        ),
        (
            Some(PurgeMode::Graciously),
            PurgeMode::Gracefully,
            Some(120),
            None,
        ),
        (Some(PurgeMode::Directly), PurgeMode::Directly, None, None),
        (
            Some(PurgeMode::Immediately),
            PurgeMode::Directly,
            None,
            None,
        ),
        (Some(PurgeMode::Never), PurgeMode::Never, None, Some(true)),
    ];
    for (mode, written, grace, suppress) in cases {
        let mut b = with_app_failover(scheduled(binding(2, dynamic()), &[("a", 2)], 900), 0, mode);
        health_of(&mut b, "a", ResourceHealth::Unhealthy);
        let p = plan_with(
            &b,
            &clusters,
            &Reservations::default(),
            &opts(),
            &since,
            ts(1_000),
        );
        assert_eq!(targets(&p), [("b".into(), 2)], "{mode:?}");
        let task = &p.tasks[0];
        assert_eq!(task.purge_mode, Some(written), "{mode:?}");
        assert_eq!(task.grace_period_seconds, grace, "{mode:?}");
        assert_eq!(task.suppress_deletion, suppress, "{mode:?}");
        assert_eq!(task.keeps_work(), written != PurgeMode::Directly);
        let recheck = match (written, grace) {
            (PurgeMode::Never, _) => None,
            (_, Some(s)) => Some(Duration::from_secs(u64::try_from(s).unwrap())),
            _ => Some(Duration::from_secs(600)),
        };
        assert_eq!(p.recheck, recheck, "{mode:?}");
    }
}

#[test]
fn application_failover_on_a_cluster_binding_names_its_controller() {
    let mut b = with_app_failover(scheduled(binding(2, dynamic()), &[("a", 2)], 900), 0, None);
    b.key = BindingKey::Cluster { name: "x".into() };
    health_of(&mut b, "a", ResourceHealth::Unhealthy);
    let since: UnhealthySince = [("a".to_string(), ts(1_000))].into();
    let clusters = vec![snap("a", 10_000, vec![]), snap("b", 10_000, vec![])];
    let p = plan_with(
        &b,
        &clusters,
        &Reservations::default(),
        &opts(),
        &since,
        ts(1_000),
    );
    assert_eq!(
        p.tasks[0].producer,
        "cluster-resource-binding-application-failover-controller"
    );
}

#[test]
fn gone_clusters_are_dropped_and_rescheduled() {
    let b = scheduled(binding(4, dynamic()), &[("a", 2), ("gone", 2)], 900);
    let clusters = vec![snap("a", 10_000, vec![]), snap("b", 10_000, vec![])];
    let plan = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(plan.gone, ["gone"]);
    let t = targets(&plan);
    assert_eq!(t.iter().map(|(_, r)| r).sum::<i32>(), 4);
    assert!(t.iter().all(|(n, _)| n != "gone"));
}

#[test]
fn eviction_tasks_end_when_targets_are_healthy_or_grace_passes() {
    let mut b = scheduled(binding(2, dynamic()), &[("b", 2)], 900);
    b.spec.graceful_eviction_tasks = vec![GracefulEvictionTask {
        from_cluster: "a".into(),
        reason: EVICTION_REASON_TAINT.into(),
        producer: EVICTION_PRODUCER.into(),
        creation_timestamp: Some(Time(ts(900))),
        ..GracefulEvictionTask::default()
    }];
    let grace = Duration::from_secs(600);
    let c = check_evictions(
        &b.spec.graceful_eviction_tasks,
        &b.spec.clusters,
        &b.status,
        grace,
        ts(1_000),
    );
    assert_eq!(c.keep.len(), 1);
    assert_eq!(c.recheck, Some(Duration::from_secs(500)));
    let c = check_evictions(
        &b.spec.graceful_eviction_tasks,
        &b.spec.clusters,
        &b.status,
        grace,
        ts(1_500),
    );
    assert_eq!(c.finished, ["a"]);
    b.status.aggregated_status = vec![AggregatedStatusItem {
        cluster_name: "b".into(),
        status: None,
        applied: Some(true),
        applied_message: None,
        health: Some(ResourceHealth::Unhealthy),
    }];
    let c = check_evictions(
        &b.spec.graceful_eviction_tasks,
        &b.spec.clusters,
        &b.status,
        grace,
        ts(1_000),
    );
    assert!(
        c.finished.is_empty(),
        "unhealthy replacement keeps the old copy"
    );
    b.status.aggregated_status[0].health = Some(ResourceHealth::Healthy);
    let clusters = vec![snap("a", 10_000, vec![]), snap("b", 10_000, vec![])];
    let plan = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    assert!(plan.tasks.is_empty());
    assert!(plan.spec_changed(&b));
    assert!(plan.result.is_none(), "ending a task is not a reschedule");
    // While the task exists, its cluster is not a target even when it has room.
    b.spec.graceful_eviction_tasks[0].from_cluster = "a".into();
    b.status.aggregated_status.clear();
    b.metadata.generation = Some(2);
    b.spec.replicas = 6;
    let plan = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(targets(&plan), [("b".into(), 6)]);
}

#[test]
fn recovery_keeps_placement_and_fresh_reschedule_redivides() {
    // After failover everything sits on b; a has recovered (no taint) and has room.
    let mut b = scheduled(binding(4, dynamic()), &[("b", 4)], 900);
    let clusters = vec![snap("a", 10_000, vec![]), snap("b", 10_000, vec![])];
    let p = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    assert!(p.result.is_none(), "recovery alone moves nothing");
    b.spec.reschedule_triggered_at = Some(Time(ts(1_001)));
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(p.trigger, Some(Trigger::Fresh));
    assert_eq!(targets(&p), [("a".into(), 2), ("b".into(), 2)]);
    // The trigger is in the future of `now`: lastScheduledTime is raised to consume it.
    assert_eq!(p.scheduled_time, Some(ts(1_001)));
}

#[test]
fn scale_up_keeps_existing_replicas() {
    let mut b = scheduled(binding(4, dynamic()), &[("a", 1), ("b", 3)], 900);
    b.spec.replicas = 8;
    b.metadata.generation = Some(2);
    let clusters = vec![snap("a", 4_000, vec![]), snap("b", 4_000, vec![])];
    let p = plan_ok(&b, &clusters, &Reservations::default());
    let t = targets(&p);
    assert_eq!(t, [("a".into(), 3), ("b".into(), 5)]);
    assert_eq!(
        added_replicas(&b.spec.clusters, &p.clusters),
        [("a".to_string(), 2), ("b".to_string(), 2)]
    );
}

#[test]
fn bad_request_is_an_invalid_placement() {
    let mut b = binding(2, dynamic());
    b.spec.replica_requirements = Some(ReplicaRequirements {
        resource_request: [("cpu".to_string(), Quantity("lots".into()))].into(),
        ..ReplicaRequirements::default()
    });
    let p = plan(
        &b,
        &[snap("a", 1000, vec![])],
        &Reservations::default(),
        &opts(),
        ts(1),
    );
    let err = p.result.unwrap().unwrap_err();
    assert_eq!(err.reason(), "SchedulerError");
    assert!(err.message().contains("lots"), "{err}");
}

#[test]
fn condition_transition_time_is_kept_when_status_does_not_change() {
    let b = scheduled(binding(2, dynamic()), &[("a", 2)], 900);
    let ok: Result<ScheduleResult, ScheduleError> = Ok(ScheduleResult::default());
    // Generation moved on: rewrite, but the True->True transition keeps its time.
    let p = status_patch(&b.status, Some(2), &ok, Some(ts(1_000)), ts(1_000)).unwrap();
    assert_eq!(
        p["status"]["conditions"][0]["lastTransitionTime"],
        "1970-01-01T00:15:00Z"
    );
    let err: Result<ScheduleResult, ScheduleError> = Err(ScheduleError::NoClusterFit {
        message: "0/1 clusters are available".into(),
    });
    let p = status_patch(&b.status, Some(2), &err, None, ts(1_000)).unwrap();
    assert_eq!(
        p["status"]["conditions"][0]["lastTransitionTime"],
        "1970-01-01T00:16:40Z"
    );
    assert_eq!(p["status"]["conditions"][0]["reason"], "NoClusterFit");
}

fn duplicated() -> Placement {
    Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
            ..ReplicaSchedulingStrategy::default()
        }),
        ..Placement::default()
    }
}

#[test]
fn a_duplicated_binding_follows_the_clusters_that_fit() {
    assert!(is_duplicated(&binding(2, duplicated())));
    assert!(
        is_duplicated(&binding(0, dynamic())),
        "kinds without replicas are duplicated"
    );
    assert!(!is_duplicated(&binding(5, dynamic())));
    let b = scheduled(binding(2, duplicated()), &[("a", 2)], 900);
    // Cluster b serves no Deployments yet: nothing changes and nothing is written.
    let mut no_api = (*snap("b", 4_000, vec![])).clone();
    no_api.api_enablements = flotilla_scheduler::ApiSet::new([("v1", "ConfigMap")]);
    let clusters = vec![snap("a", 6_000, vec![]), Arc::new(no_api)];
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert!(!p.spec_changed(&b));
    assert_eq!(p.scheduled_time, None);
    assert_eq!(
        status_patch(
            &b.status,
            b.metadata.generation,
            p.result.as_ref().unwrap(),
            p.scheduled_time,
            ts(1_000)
        ),
        None
    );
    // Now it does: the binding gets a copy there too.
    let clusters = vec![snap("a", 6_000, vec![]), snap("b", 4_000, vec![])];
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert!(p.spec_changed(&b));
    assert_eq!(targets(&p), [("a".to_string(), 2), ("b".to_string(), 2)]);
    assert!(p.scheduled_time.is_some());
}

fn aggregated() -> Placement {
    Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(ReplicaDivisionPreference::Aggregated),
            weight_preference: None,
        }),
        ..Placement::default()
    }
}

fn affinity(names: &[&str]) -> flotilla_karmada_api::policy::ClusterAffinity {
    flotilla_karmada_api::policy::ClusterAffinity {
        cluster_names: names.iter().map(|n| (*n).to_string()).collect(),
        ..flotilla_karmada_api::policy::ClusterAffinity::default()
    }
}

/// `b` with a reschedule requested at `at`.
fn rescheduled(mut b: Binding, at: i64) -> Binding {
    b.spec.reschedule_triggered_at = Some(Time(ts(at)));
    b
}

/// `b` after `p` was written: its clusters and tasks, and the status of a success at `at`.
fn applied(b: &Binding, p: &Plan, at: i64) -> Binding {
    let mut out = b.clone();
    out.spec.clusters = p.clusters.clone();
    out.spec.graceful_eviction_tasks = p.tasks.clone();
    out.status.last_scheduled_time = Some(Time(ts(at)));
    out
}

fn task_clusters(p: &Plan) -> Vec<&str> {
    p.tasks.iter().map(|t| t.from_cluster.as_str()).collect()
}

/// Four replicas on a and b (2 each), and c, a larger cluster, joined since.
fn consolidation() -> (Binding, Vec<Arc<ClusterSnapshot>>) {
    let b = scheduled(binding(4, aggregated()), &[("a", 2), ("b", 2)], 900);
    let clusters = vec![
        snap("a", 2_000, vec![]),
        snap("b", 2_000, vec![]),
        snap("c", 10_000, vec![]),
    ];
    (b, clusters)
}

#[test]
fn a_reschedule_that_moves_a_cluster_s_replicas_away_leaves_it_gracefully() {
    let (b, clusters) = consolidation();
    // Without a reschedule nothing moves.
    let p = plan(&b, &clusters, &Reservations::default(), &opts(), ts(1_000));
    assert!(p.result.is_none());
    // A fresh Aggregated division puts all four on c, the cluster with the most room.
    let b = rescheduled(b, 1_000);
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(p.trigger, Some(Trigger::Fresh));
    assert_eq!(targets(&p), [("c".into(), 4)]);
    assert_eq!(p.moved_off, ["a", "b"]);
    assert!(p.evicted_now.is_empty());
    assert_eq!(task_clusters(&p), ["a", "b"]);
    for task in &p.tasks {
        assert_eq!(task.reason, "Rescheduled");
        assert_eq!(task.producer, "flotilla-scheduler");
        assert_eq!(task.purge_mode, Some(PurgeMode::Gracefully));
        assert!(task.keeps_work());
        assert_eq!(task.replicas, Some(2));
        assert_eq!(task.suppress_deletion, None);
        assert_eq!(task.grace_period_seconds, None);
        assert_eq!(task.creation_timestamp, Some(Time(ts(1_000))));
        assert_eq!(task.clusters_before_failover, ["a", "b"]);
        assert!(task.message.as_deref().unwrap().contains("reschedule"));
    }
    // The reason passes the CRD's pattern and length.
    let reason = &p.tasks[0].reason;
    assert!(reason.len() <= 32);
    assert!(reason.chars().next().unwrap().is_ascii_alphabetic());
    assert!(
        reason
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_,:".contains(c))
    );
    // The old copies stay until c's is up, at most the grace period.
    assert_eq!(p.recheck, Some(Duration::from_secs(600)));
    assert!(p.spec_changed(&b));
}

#[test]
fn a_reschedule_leaves_in_the_cluster_failover_purge_mode() {
    let (b, clusters) = consolidation();
    let b = with_cluster_purge(rescheduled(b, 1_000), PurgeMode::Immediately);
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(task_clusters(&p), ["a", "b"]);
    for task in &p.tasks {
        assert_eq!(task.purge_mode, Some(PurgeMode::Directly));
        assert!(!task.keeps_work());
        assert_eq!(task.reason, "Rescheduled");
    }
}

#[test]
fn a_reschedule_that_keeps_every_cluster_adds_no_task() {
    // Same split again.
    let b = rescheduled(
        scheduled(binding(4, dynamic()), &[("a", 2), ("b", 2)], 900),
        1_000,
    );
    let clusters = vec![snap("a", 2_000, vec![]), snap("b", 2_000, vec![])];
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(targets(&p), [("a".into(), 2), ("b".into(), 2)]);
    assert!(p.tasks.is_empty());
    assert!(p.moved_off.is_empty());
    assert_eq!(p.recheck, None);
    // A different split that keeps both clusters (a keeps 1 of its 3): no task either,
    // a's copy keeps running, scaled down.
    let b = rescheduled(
        scheduled(binding(4, dynamic()), &[("a", 3), ("b", 1)], 900),
        1_000,
    );
    let clusters = vec![snap("a", 0, vec![]), snap("b", 6_000, vec![])];
    let p = plan_ok(&b, &clusters, &Reservations::default());
    let t = targets(&p);
    assert_eq!(t.len(), 2, "{t:?}");
    assert!(t.iter().any(|(n, r)| n == "a" && *r < 3), "{t:?}");
    assert!(p.tasks.is_empty());
}

#[test]
fn clusters_the_placement_no_longer_admits_go_at_once() {
    let (mut b, mut clusters) = consolidation();
    // The placement now allows only b and c; a reschedule consolidates on c.
    b.spec.placement.as_mut().unwrap().cluster_affinity = Some(affinity(&["b", "c"]));
    let b = rescheduled(b, 1_000);
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(targets(&p), [("c".into(), 4)]);
    // a is dropped at once (no task), b, still allowed, gracefully.
    assert_eq!(task_clusters(&p), ["b"]);
    assert_eq!(p.moved_off, ["b"]);
    // A Cluster being deleted is no home to keep a copy in either.
    let mut deleting = (*clusters[1]).clone();
    deleting.deleting = true;
    clusters[1] = Arc::new(deleting);
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(targets(&p), [("c".into(), 4)]);
    assert!(p.tasks.is_empty(), "{:?}", p.tasks);
}

#[test]
fn a_reschedule_back_from_a_backup_term_leaves_the_backup_gracefully() {
    let mut placement = aggregated();
    placement.cluster_affinities = vec![
        flotilla_karmada_api::policy::ClusterAffinityTerm {
            affinity_name: "primary".into(),
            affinity: affinity(&["a"]),
            overflow_affinities: vec![],
        },
        flotilla_karmada_api::policy::ClusterAffinityTerm {
            affinity_name: "backup".into(),
            affinity: affinity(&["b"]),
            overflow_affinities: vec![],
        },
    ];
    let mut b = scheduled(binding(2, placement), &[("b", 2)], 900);
    b.status.scheduler_observed_affinity_name = Some("backup".into());
    let clusters = vec![snap("a", 4_000, vec![]), snap("b", 4_000, vec![])];
    let p = plan_ok(&rescheduled(b, 1_000), &clusters, &Reservations::default());
    assert_eq!(targets(&p), [("a".into(), 2)]);
    assert_eq!(
        p.result
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap()
            .affinity_name
            .as_deref(),
        Some("primary")
    );
    // b is still allowed (by the backup term): the move is graceful.
    assert_eq!(task_clusters(&p), ["b"]);
}

#[test]
fn a_tainted_cluster_in_a_reschedule_gets_one_task_for_its_taint() {
    let (b, mut clusters) = consolidation();
    clusters[0] = snap("a", 2_000, vec![no_execute("custom", 0)]);
    let p = plan_ok(&rescheduled(b, 1_000), &clusters, &Reservations::default());
    assert_eq!(targets(&p), [("c".into(), 4)]);
    assert_eq!(p.evicted_now, ["a"]);
    assert_eq!(p.moved_off, ["b"]);
    let reasons: Vec<(&str, &str)> = p
        .tasks
        .iter()
        .map(|t| (t.from_cluster.as_str(), t.reason.as_str()))
        .collect();
    assert_eq!(reasons, [("a", "TaintUntolerated"), ("b", "Rescheduled")]);
}

#[test]
fn a_rescheduled_move_does_not_oscillate_and_ends_once_the_replacement_is_available() {
    let (b, clusters) = consolidation();
    let b = rescheduled(b, 1_000);
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(task_clusters(&p), ["a", "b"]);

    // The spec was written but the status was not (a failed write, or the same second):
    // the trigger is seen again. a and b are being evicted, so they are no candidates, and
    // nothing is added twice.
    let mut spec_only = applied(&b, &p, 900);
    let again = plan(
        &spec_only,
        &clusters,
        &Reservations::default(),
        &opts(),
        ts(1_001),
    );
    assert_eq!(targets(&again), [("c".into(), 4)]);
    assert_eq!(again.tasks, p.tasks);
    assert!(again.moved_off.is_empty());
    assert!(!again.spec_changed(&spec_only));

    // A second reschedule while the tasks last, with c short of room: still nothing on a or
    // b (the fresh weights count what c holds).
    spec_only.spec.reschedule_triggered_at = Some(Time(ts(1_010)));
    let tight = vec![
        snap("a", 2_000, vec![]),
        snap("b", 2_000, vec![]),
        snap("c", 0, vec![]),
    ];
    let second = plan(
        &spec_only,
        &tight,
        &Reservations::default(),
        &opts(),
        ts(1_010),
    );
    assert!(matches!(second.result, Some(Ok(_))), "{:?}", second.result);
    assert_eq!(targets(&second), [("c".into(), 4)]);
    assert_eq!(second.tasks, p.tasks);

    // Written in full; c reports only its old, smaller copy: the tasks stay.
    let mut done = applied(&b, &p, 1_000);
    done.status.aggregated_status = vec![healthy_item("c", Some(2))];
    let p2 = plan(
        &done,
        &clusters,
        &Reservations::default(),
        &opts(),
        ts(1_005),
    );
    assert!(p2.result.is_none(), "nothing to schedule");
    assert_eq!(task_clusters(&p2), ["a", "b"]);
    // c has its four available: both tasks end, and the replicas stay on c.
    done.status.aggregated_status = vec![healthy_item("c", Some(4))];
    let p3 = plan(
        &done,
        &clusters,
        &Reservations::default(),
        &opts(),
        ts(1_006),
    );
    assert!(p3.result.is_none(), "ending the tasks is not a reschedule");
    assert!(p3.tasks.is_empty());
    assert_eq!(targets(&p3), [("c".into(), 4)]);
    // And then nothing more happens.
    let ended = applied(&done, &p3, 1_000);
    let p4 = plan(
        &ended,
        &clusters,
        &Reservations::default(),
        &opts(),
        ts(1_100),
    );
    assert!(p4.result.is_none());
    assert!(!p4.spec_changed(&ended));
}

#[test]
fn a_reschedule_of_a_kind_without_replicas_adds_no_task() {
    // Nothing was running there: no copy to keep.
    let mut placement = duplicated();
    placement.cluster_affinity = Some(affinity(&["a", "b"]));
    let b = rescheduled(scheduled(binding(0, placement), &[("a", 0)], 900), 1_000);
    let mut no_api = (*snap("a", 4_000, vec![])).clone();
    no_api.api_enablements = flotilla_scheduler::ApiSet::new([("v1", "ConfigMap")]);
    let clusters = vec![Arc::new(no_api), snap("b", 4_000, vec![])];
    let p = plan_ok(&b, &clusters, &Reservations::default());
    assert_eq!(targets(&p), [("b".into(), 0)]);
    assert!(p.tasks.is_empty());
}

#[test]
fn a_copy_only_applied_is_not_a_replacement_until_its_replicas_are_available() {
    let task = GracefulEvictionTask {
        from_cluster: "a".into(),
        reason: EVICTION_REASON_RESCHEDULED.into(),
        producer: EVICTION_PRODUCER.into(),
        creation_timestamp: Some(Time(ts(900))),
        ..GracefulEvictionTask::default()
    };
    let target = |replicas| TargetCluster {
        name: "c".into(),
        replicas,
        components: vec![],
    };
    let check = |replicas: i32, item: AggregatedStatusItem| {
        let status = ResourceBindingStatus {
            aggregated_status: vec![item],
            ..ResourceBindingStatus::default()
        };
        check_evictions(
            std::slice::from_ref(&task),
            &[target(replicas)],
            &status,
            Duration::from_secs(600),
            ts(1_000),
        )
    };
    // The Work on c was just applied; the member has reported nothing about the copy yet.
    let applied = AggregatedStatusItem {
        cluster_name: "c".into(),
        status: None,
        applied: Some(true),
        applied_message: None,
        health: None,
    };
    assert_eq!(check(4, applied.clone()).keep.len(), 1);
    // Health unknown, but the reflected status shows the four available.
    let mut counted = healthy_item("c", Some(4));
    counted.health = Some(ResourceHealth::Unknown);
    assert_eq!(check(4, counted).finished, ["a"]);
    // A copy without replicas counts once applied.
    assert_eq!(check(0, applied).finished, ["a"]);
}
