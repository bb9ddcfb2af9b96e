//! The scheduler loop against an in-process host (with the aggregated API server serving
//! Clusters): bindings are created directly and Cluster status is written by the test, so
//! capacities are exact.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::*;
use flotilla_scheduler_controller::{SchedulerOptions, spawn};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn divided_duplicated_static_weights_and_events() {
    let env = Env::start().await;
    env.add_cluster("member1", 6).await;
    env.add_cluster("member2", 3).await;
    env.add_cluster("member3", 1).await;
    let sched = spawn(env.client.clone(), test_options());

    // Dynamic weights with exactly as many replicas as there is room: the split is the
    // free capacity.
    env.create_binding("dyn", "dyn", 10, Some("1"), dynamic_placement())
        .await;
    let rb = env.wait_binding("dyn", "scheduled", is_scheduled).await;
    assert_eq!(
        targets(&rb),
        pairs(&[("member1", 6), ("member2", 3), ("member3", 1)])
    );
    let status = rb.status.clone().unwrap();
    assert!(status.last_scheduled_time.is_some());
    assert_eq!(scheduled(&rb).unwrap().1, "Success");

    // Events on the binding and on the template, as kubectl describe finds them.
    let msg = "Binding has been scheduled successfully. Result: {member1:6, member2:3, member3:1}";
    let ev = env
        .wait_event("ResourceBinding", "dyn", "ScheduleBindingSucceed")
        .await;
    assert_eq!(ev.message.as_deref(), Some(msg));
    assert_eq!(ev.type_.as_deref(), Some("Normal"));
    let ev = env
        .wait_event("Deployment", "dyn", "ScheduleBindingSucceed")
        .await;
    assert_eq!(ev.message.as_deref(), Some(msg));
    assert_eq!(ev.involved_object.uid.as_deref(), Some("uid-dyn"));

    // Duplicated: every cluster gets all replicas.
    env.create_binding(
        "dup",
        "dup",
        2,
        None,
        json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
    )
    .await;
    let rb = env.wait_binding("dup", "scheduled", is_scheduled).await;
    assert_eq!(
        targets(&rb),
        pairs(&[("member1", 2), ("member2", 2), ("member3", 2)])
    );

    // Static weights 2:1 (member3 unlisted, so left out).
    env.create_binding(
        "static",
        "static",
        6,
        None,
        json!({"replicaScheduling": {
            "replicaSchedulingType": "Divided",
            "replicaDivisionPreference": "Weighted",
            "weightPreference": {"staticWeightList": [
                {"targetCluster": {"clusterNames": ["member1"]}, "weight": 2},
                {"targetCluster": {"clusterNames": ["member2"]}, "weight": 1},
            ]},
        }}),
    )
    .await;
    let rb = env.wait_binding("static", "scheduled", is_scheduled).await;
    assert_eq!(targets(&rb), pairs(&[("member1", 4), ("member2", 2)]));

    // A binding for another scheduler is left alone.
    env.create_binding_spec(
        "other",
        json!({
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": "other"},
            "replicas": 1,
            "placement": dynamic_placement(),
            "schedulerName": "someone-else",
        }),
    )
    .await;
    // Barrier: the scheduler sees bindings in the order of its watch, so once a binding
    // created after "other" is scheduled, "other" has been looked at (and passed over).
    env.create_binding("after-other", "after-other", 1, None, dynamic_placement())
        .await;
    env.wait_binding("after-other", "scheduled", is_scheduled)
        .await;
    let rb = env.bindings().get("other").await.unwrap();
    assert!(rb.spec.clusters.is_empty() && scheduled(&rb).is_none());
    env.bindings()
        .delete("after-other", &Default::default())
        .await
        .unwrap();

    // A ClusterResourceBinding goes through the same loop.
    let crb: flotilla_karmada_api::ClusterResourceBinding = serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2",
        "kind": "ClusterResourceBinding",
        "metadata": {"name": "cluster-wide"},
        "spec": {
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "cluster-wide"},
            "replicas": 1,
            "placement": {
                "clusterAffinity": {"clusterNames": ["member2"]},
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
            },
        },
    }))
    .unwrap();
    let crbs: kube::Api<flotilla_karmada_api::ClusterResourceBinding> =
        kube::Api::all(env.client.clone());
    crbs.create(&Default::default(), &crb).await.unwrap();
    let crb = eventually("the ClusterResourceBinding scheduled", WAIT, || async {
        let crb = crbs.get("cluster-wide").await.unwrap();
        let done = crb.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Scheduled" && c.status == "True")
        });
        if done {
            Ok(crb)
        } else {
            Err(format!("{crb:?}"))
        }
    })
    .await;
    assert_eq!(crb.spec.clusters.len(), 1);
    assert_eq!(crb.spec.clusters[0].name, "member2");
    assert_eq!(crb.spec.clusters[0].replicas, 1);
    env.wait_event(
        "ClusterResourceBinding",
        "cluster-wide",
        "ScheduleBindingSucceed",
    )
    .await;

    let text = sched.metrics_text();
    assert!(
        text.contains("flotilla_scheduler_schedule_attempts_total{result=\"scheduled\"}"),
        "{text}"
    );
    assert!(text.contains("flotilla_scheduler_e2e_scheduling_duration_seconds_bucket"));
    sched.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unschedulable_until_capacity_grows_then_scale_up_keeps_existing() {
    let env = Env::start().await;
    env.add_cluster("member1", 2).await;
    let sched = spawn(env.client.clone(), test_options());

    env.create_binding("web", "web", 4, Some("1"), dynamic_placement())
        .await;
    let rb = env
        .wait_binding("web", "Unschedulable", |rb| {
            scheduled(rb).is_some_and(|(s, _, _)| s == "False")
        })
        .await;
    let (_, reason, message) = scheduled(&rb).unwrap();
    assert_eq!(reason, "Unschedulable");
    assert!(!message.is_empty());
    assert!(rb.spec.clusters.is_empty());
    let ev = env
        .wait_event("ResourceBinding", "web", "ScheduleBindingFailed")
        .await;
    assert_eq!(ev.type_.as_deref(), Some("Warning"));
    assert_eq!(ev.message.as_deref(), Some(message.as_str()));
    env.wait_event("Deployment", "web", "ScheduleBindingFailed")
        .await;
    // Retries do not rewrite the status or add events. Barrier: two more unschedulable
    // attempts (the retries) have finished.
    let attempts = unschedulable_attempts(&sched);
    eventually("two retries", WAIT, || async {
        unschedulable_attempts(&sched) >= attempts + 2
    })
    .await;
    let retried = env.bindings().get("web").await.unwrap();
    assert_eq!(
        retried.metadata.resource_version, rb.metadata.resource_version,
        "a retry rewrote the binding"
    );
    let failed: Vec<_> = env
        .events_for("default", "ResourceBinding", "web")
        .await
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some("ScheduleBindingFailed"))
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");

    // Room appears: the cluster change unblocks the binding.
    env.set_capacity("member1", 2).await; // unchanged: nothing happens
    env.add_cluster("member2", 2).await;
    let rb = env.wait_binding("web", "scheduled", is_scheduled).await;
    assert_eq!(targets(&rb), pairs(&[("member1", 2), ("member2", 2)]));

    // Scale up: the existing 2+2 stay, the 4 new ones go where there is room.
    env.set_capacity("member1", 6).await;
    env.set_capacity("member2", 2).await;
    env.bindings()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 8}})),
        )
        .await
        .unwrap();
    let rb = env.wait_binding("web", "rescheduled", is_scheduled).await;
    let t = targets(&rb);
    assert_eq!(t.iter().map(|(_, r)| r).sum::<i32>(), 8, "{t:?}");
    assert!(
        t.iter().all(|(_, r)| *r >= 2),
        "existing replicas kept: {t:?}"
    );
    // Free capacity 6:2 divides the 4 new replicas 3:1.
    assert_eq!(t, pairs(&[("member1", 5), ("member2", 3)]));
    sched.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservations_keep_concurrent_bindings_within_capacity() {
    let env = Env::start().await;
    env.add_cluster("member1", 5).await;
    env.add_cluster("member2", 5).await;
    // Reservations live for 30 s: the clusters never report the usage.
    let opts = SchedulerOptions {
        reservation_ttl: Duration::from_secs(30),
        ..test_options()
    };
    let sched = spawn(env.client.clone(), opts);
    // Created back to back: 4 + 4 fit in 10, the third 4 does not.
    for name in ["r1", "r2", "r3"] {
        env.create_binding(name, name, 4, Some("1"), dynamic_placement())
            .await;
    }
    let mut placed = Vec::new();
    let mut failed = 0;
    for name in ["r1", "r2", "r3"] {
        let rb = env
            .wait_binding(name, "decided", |rb| scheduled(rb).is_some())
            .await;
        if is_scheduled(&rb) {
            placed.push(targets(&rb));
        } else {
            failed += 1;
        }
    }
    assert_eq!(placed.len(), 2, "{placed:?}");
    assert_eq!(failed, 1);
    for cluster in ["member1", "member2"] {
        let used: i32 = placed
            .iter()
            .flatten()
            .filter(|(n, _)| n == cluster)
            .map(|(_, r)| r)
            .sum();
        assert!(used <= 5, "{cluster} got {used} replicas: {placed:?}");
    }
    sched.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failover_on_no_execute_taint_recovery_and_fresh_reschedule() {
    let env = Env::start().await;
    env.add_cluster("member1", 4).await;
    env.add_cluster("member2", 4).await;
    env.add_cluster("member3", 4).await;
    // One worker: the queue is handled in order, which the barriers below rely on.
    let sched = spawn(
        env.client.clone(),
        SchedulerOptions {
            workers: 1,
            ..test_options()
        },
    );
    env.create_binding("app", "app", 6, Some("1"), dynamic_placement())
        .await;
    let rb = env.wait_binding("app", "scheduled", is_scheduled).await;
    let before = targets(&rb);
    assert_eq!(before.iter().map(|(_, r)| r).sum::<i32>(), 6);
    assert_eq!(before.len(), 3, "{before:?}");

    // member1 has been not-ready for an hour: past the default 300 s toleration.
    env.set_taints(
        "member1",
        json!([{"key": flotilla_names::karmada::TAINT_CLUSTER_NOT_READY, "effect": "NoExecute",
                "timeAdded": "2020-01-01T00:00:00Z"}]),
    )
    .await;
    let rb = env
        .wait_binding("app", "moved off member1", |rb| {
            is_scheduled(rb) && rb.spec.clusters.iter().all(|t| t.name != "member1")
        })
        .await;
    let after = targets(&rb);
    assert_eq!(after.iter().map(|(_, r)| r).sum::<i32>(), 6, "{after:?}");
    let tasks = &rb.spec.graceful_eviction_tasks;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    assert_eq!(tasks[0].from_cluster, "member1");
    assert_eq!(tasks[0].reason, "TaintUntolerated");
    assert_eq!(tasks[0].producer, "flotilla-scheduler");
    assert_eq!(
        tasks[0].replicas,
        before.iter().find(|(n, _)| n == "member1").map(|(_, r)| *r)
    );
    // The replicas the others already had stay.
    for (name, r) in &before {
        if name != "member1" {
            let now = after.iter().find(|(n, _)| n == name).map_or(0, |(_, r)| *r);
            assert!(now >= *r, "{name}: {before:?} -> {after:?}");
        }
    }
    env.wait_event("ResourceBinding", "app", "EvictWorkloadFromCluster")
        .await;

    // The new targets report healthy copies: the eviction task ends.
    let healthy: Vec<_> = rb
        .spec
        .clusters
        .iter()
        .map(|t| json!({"clusterName": t.name, "applied": true, "health": "Healthy"}))
        .collect();
    env.bindings()
        .patch_status(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"aggregatedStatus": healthy}})),
        )
        .await
        .unwrap();
    let rb = env
        .wait_binding("app", "eviction task ended", |rb| {
            rb.spec.graceful_eviction_tasks.is_empty()
        })
        .await;
    assert_eq!(targets(&rb), after);

    // Recovery: nothing moves back on its own.
    env.set_taints("member1", json!(null)).await;
    // Barrier: a binding only member1 can take is scheduled, so the scheduler has seen the
    // recovery, and the bindings it requeued for it were queued before that one's success.
    let only_member1 = json!({
        "clusterAffinity": {"clusterNames": ["member1"]},
        "replicaScheduling": {"replicaSchedulingType": "Duplicated"},
    });
    env.create_binding(
        "sentinel-recovered",
        "sentinel-recovered",
        1,
        None,
        only_member1,
    )
    .await;
    env.wait_binding("sentinel-recovered", "scheduled to member1", is_scheduled)
        .await;
    let rb = env.bindings().get("app").await.unwrap();
    assert_eq!(targets(&rb), after, "recovery must not move replicas back");

    // A reschedule trigger newer than lastScheduledTime: a fresh split over all three.
    let trigger =
        k8s_openapi::jiff::Timestamp::now() + k8s_openapi::jiff::SignedDuration::from_secs(1);
    env.bindings()
        .patch(
            "app",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rescheduleTriggeredAt":
                k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(trigger)}})),
        )
        .await
        .unwrap();
    let rb = env
        .wait_binding("app", "fresh reschedule", |rb| {
            is_scheduled(rb) && rb.spec.clusters.iter().any(|t| t.name == "member1")
        })
        .await;
    let fresh = targets(&rb);
    assert_eq!(fresh.iter().map(|(_, r)| r).sum::<i32>(), 6, "{fresh:?}");
    // Fresh weights are free capacity plus what each cluster holds (4 : 4+3 : 4+3), so the
    // recovered member1 gets 1 of the 6 back.
    assert_eq!(fresh[0], ("member1".to_string(), 1), "{fresh:?}");
    let last = rb.status.unwrap().last_scheduled_time.unwrap();
    assert!(last.0.as_second() >= trigger.as_second());
    // And it stays put (the trigger was consumed). Barrier: a binding created after the
    // scheduler's write of app is scheduled, so app's own update was handled before it.
    env.create_binding(
        "sentinel-after",
        "sentinel-after",
        1,
        None,
        dynamic_placement(),
    )
    .await;
    env.wait_binding("sentinel-after", "scheduled", is_scheduled)
        .await;
    assert_eq!(targets(&env.bindings().get("app").await.unwrap()), fresh);
    sched.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_schedulers_with_leader_election() {
    let env = Env::start().await;
    env.add_cluster("member1", 10).await;
    let leader = |id: &str| {
        let mut l = flotilla_leader::LeaderOptions::new("default", "flotilla-scheduler", id);
        l.lease_duration = Duration::from_secs(3);
        l.renew_deadline = Duration::from_secs(2);
        l.retry_period = Duration::from_millis(200);
        SchedulerOptions {
            leader: Some(l),
            ..test_options()
        }
    };
    let a = spawn(env.client.clone(), leader("a"));
    let b = spawn(env.client.clone(), leader("b"));
    eventually("a leader", WAIT, || async {
        a.is_active() || b.is_active()
    })
    .await;
    // Barrier: the holder has renewed the Lease twice since, so the other (retrying every
    // 200 ms) has tried to take it meanwhile.
    let leases: Api<k8s_openapi::api::coordination::v1::Lease> =
        Api::namespaced(env.client.clone(), "default");
    let renewed = || async {
        leases
            .get("flotilla-scheduler")
            .await
            .ok()
            .and_then(|l| l.spec?.renew_time)
    };
    let mut seen = renewed().await;
    for _ in 0..2 {
        let before = seen.clone();
        seen = Some(
            eventually("the leader to renew its Lease", WAIT, || async {
                renewed().await.filter(|t| Some(t) != before.as_ref())
            })
            .await,
        );
    }
    assert!(a.is_active() != b.is_active(), "exactly one leads");
    let (active, standby) = if a.is_active() { (a, b) } else { (b, a) };

    env.create_binding("one", "one", 2, Some("1"), dynamic_placement())
        .await;
    env.wait_binding("one", "scheduled", is_scheduled).await;
    let scheduled_by = |s: &flotilla_scheduler_controller::RunningScheduler| {
        s.metrics_text().lines().any(|l| {
            l.starts_with("flotilla_scheduler_schedule_attempts_total{result=\"scheduled\"}")
        })
    };
    assert!(scheduled_by(&active));
    assert!(!scheduled_by(&standby), "{}", standby.metrics_text());

    // The leader stops (releasing the Lease): the standby takes over.
    active.stop().await;
    eventually("the standby to take over", WAIT, || async {
        standby.is_active()
    })
    .await;
    env.create_binding("two", "two", 2, Some("1"), dynamic_placement())
        .await;
    env.wait_binding("two", "scheduled", is_scheduled).await;
    assert!(scheduled_by(&standby));
    standby.stop().await;
    env.stop().await;
}

/// `flotilla_scheduler_schedule_attempts_total{result="unschedulable"}` of `sched`.
fn unschedulable_attempts(sched: &flotilla_scheduler_controller::RunningScheduler) -> u64 {
    sched
        .metrics_text()
        .lines()
        .find_map(|l| {
            l.strip_prefix("flotilla_scheduler_schedule_attempts_total{result=\"unschedulable\"} ")
        })
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}
