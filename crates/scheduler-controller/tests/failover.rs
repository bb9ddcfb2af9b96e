//! Failover through the scheduler loop against an in-process host: application failover
//! (a copy reported Unhealthy for `decisionConditions.tolerationSeconds` moves, one healthy
//! again in time does not) and the purge modes of the eviction tasks both failovers leave.
//! The test writes Cluster status and the bindings' `aggregatedStatus` itself, as the
//! cluster and binding controllers would.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use flotilla_karmada_api::ResourceBinding;
use flotilla_scheduler_controller::{RunningScheduler, spawn};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

/// Sets each listed cluster's reported health in `default/<name>`'s aggregatedStatus.
async fn report(env: &Env, name: &str, health: &[(&str, &str)]) {
    let items: Vec<Value> = health
        .iter()
        .map(|(c, h)| json!({"clusterName": c, "applied": true, "health": h}))
        .collect();
    env.set_aggregated_status(name, items).await;
}

/// The scheduler's gauge of copies application failover counts as Unhealthy.
fn unhealthy_copies(sched: &RunningScheduler) -> u64 {
    let text = sched.metrics_text();
    text.lines()
        .find_map(|l| l.strip_prefix("flotilla_scheduler_application_unhealthy_copies "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

async fn wait_unhealthy_copies(sched: &RunningScheduler, want: u64) {
    eventually(
        &format!("{want} unhealthy copies counted"),
        WAIT,
        || async {
            match unhealthy_copies(sched) {
                n if n == want => Ok(()),
                n => Err(format!("the scheduler counts {n}")),
            }
        },
    )
    .await;
}

fn names(rb: &ResourceBinding) -> Vec<String> {
    rb.spec.clusters.iter().map(|t| t.name.clone()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_failover_moves_a_copy_unhealthy_for_the_toleration_only() {
    let env = Env::start().await;
    for m in ["member1", "member2", "member3"] {
        env.add_cluster(m, 10).await;
    }
    let sched = spawn(env.client.clone(), test_options());
    let placement = dynamic_placement();
    env.create_binding_spec(
        "app",
        json!({
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": "app", "uid": "uid-app"},
            "replicas": 6,
            "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
            "placement": placement,
            "failover": {"application": {
                "decisionConditions": {"tolerationSeconds": 2},
                "purgeMode": "Graciously",
                "gracePeriodSeconds": 60,
            }},
        }),
    )
    .await;
    let rb = env.wait_binding("app", "scheduled", is_scheduled).await;
    assert_eq!(names(&rb), ["member1", "member2", "member3"]);
    report(
        &env,
        "app",
        &[
            ("member1", "Healthy"),
            ("member2", "Healthy"),
            ("member3", "Healthy"),
        ],
    )
    .await;

    // member1's copy turns Unhealthy (the scheduler starts counting), then Healthy again
    // well within the 2 s: it is forgotten.
    report(
        &env,
        "app",
        &[
            ("member1", "Unhealthy"),
            ("member2", "Healthy"),
            ("member3", "Healthy"),
        ],
    )
    .await;
    wait_unhealthy_copies(&sched, 1).await;
    report(
        &env,
        "app",
        &[
            ("member1", "Healthy"),
            ("member2", "Healthy"),
            ("member3", "Healthy"),
        ],
    )
    .await;
    wait_unhealthy_copies(&sched, 0).await;

    // member2's copy turns Unhealthy and stays so: after 2 s its replicas move.
    // (Only member2 reports: the remaining targets' copies are not reported up yet, so
    // the eviction task that follows stays until they are.)
    let unhealthy_at = Instant::now();
    report(&env, "app", &[("member2", "Unhealthy")]).await;
    let rb = env
        .wait_binding("app", "moved off member2", |rb| {
            is_scheduled(rb) && !names(rb).contains(&"member2".to_string())
        })
        .await;
    assert!(
        unhealthy_at.elapsed() >= Duration::from_secs(2),
        "failed over after {:?}, before the toleration",
        unhealthy_at.elapsed()
    );
    // The decision that moved member2 came after member1's toleration would have ended
    // too: member1 recovered in time, so it stays.
    assert_eq!(names(&rb), ["member1", "member3"].map(String::from));
    assert_eq!(targets(&rb).iter().map(|(_, r)| r).sum::<i32>(), 6);
    let tasks = &rb.spec.graceful_eviction_tasks;
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task.from_cluster, "member2");
    assert_eq!(task.reason, "ApplicationFailure");
    assert_eq!(
        task.producer,
        "resource-binding-application-failover-controller"
    );
    assert_eq!(
        task.purge_mode,
        Some(flotilla_karmada_api::policy::PurgeMode::Gracefully)
    );
    assert_eq!(task.grace_period_seconds, Some(60));
    assert_eq!(task.replicas, Some(2));
    env.wait_event("ResourceBinding", "app", "EvictWorkloadFromCluster")
        .await;
    wait_unhealthy_copies(&sched, 0).await;

    // The new targets report healthy copies: the task ends (Gracefully).
    report(
        &env,
        "app",
        &[("member1", "Healthy"), ("member3", "Healthy")],
    )
    .await;
    env.wait_binding("app", "the eviction task ended", |rb| {
        rb.spec.graceful_eviction_tasks.is_empty()
    })
    .await;

    sched.stop().await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn purge_modes_of_cluster_and_application_failover() {
    let env = Env::start().await;
    // Aggregated placement puts both replicas on the cluster with the most room, member1;
    // once it is left, member2 takes them.
    env.add_cluster("member1", 10).await;
    env.add_cluster("member2", 5).await;
    let sched = spawn(env.client.clone(), test_options());
    let spec = |name: &str, failover: Value| {
        json!({
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                         "name": name, "uid": format!("uid-{name}")},
            "replicas": 2,
            "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
            "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                "replicaDivisionPreference": "Aggregated"}},
            "failover": failover,
        })
    };
    // Cluster failover in each mode Karmada allows there (the default is Gracefully).
    env.create_binding_spec(
        "taint-directly",
        spec(
            "taint-directly",
            json!({"cluster": {"purgeMode": "Directly"}}),
        ),
    )
    .await;
    env.create_binding_spec(
        "taint-gracefully",
        spec("taint-gracefully", json!({"cluster": {}})),
    )
    .await;
    // Application failover, at once, in each mode (an old name included).
    let app = |mode: &str| {
        let mut a = json!({"decisionConditions": {"tolerationSeconds": 0}, "purgeMode": mode});
        if mode == "Gracefully" || mode == "Graciously" {
            a["gracePeriodSeconds"] = json!(30);
        }
        json!({"application": a})
    };
    for (name, mode) in [
        ("app-immediately", "Immediately"),
        ("app-never", "Never"),
        ("app-gracefully", "Gracefully"),
    ] {
        env.create_binding_spec(name, spec(name, app(mode))).await;
    }
    for name in [
        "taint-directly",
        "taint-gracefully",
        "app-immediately",
        "app-never",
        "app-gracefully",
    ] {
        let rb = env.wait_binding(name, "scheduled", is_scheduled).await;
        assert_eq!(targets(&rb), pairs(&[("member1", 2)]), "{name}");
    }

    // The application-failover bindings' copies on member1 report Unhealthy: with a
    // toleration of 0 they leave at the first sighting, each in its purge mode (by its
    // current name).
    for name in ["app-immediately", "app-never", "app-gracefully"] {
        report(&env, name, &[("member1", "Unhealthy")]).await;
    }
    for (name, mode, suppress, grace) in [
        ("app-immediately", "Directly", None, None),
        ("app-never", "Never", Some(true), None),
        ("app-gracefully", "Gracefully", None, Some(30)),
    ] {
        let rb = env
            .wait_binding(name, "moved off member1", |rb| {
                is_scheduled(rb) && names(rb) == ["member2"]
            })
            .await;
        let task = &rb.spec.graceful_eviction_tasks[0];
        assert_eq!(task.from_cluster, "member1");
        assert_eq!(task.reason, "ApplicationFailure");
        assert_eq!(
            serde_json::to_value(task.purge_mode).unwrap(),
            json!(mode),
            "{name}"
        );
        assert_eq!(task.suppress_deletion, suppress, "{name}");
        assert_eq!(task.grace_period_seconds, grace, "{name}");
        assert_eq!(task.keeps_work(), mode != "Directly", "{name}");
    }

    // member1 gets an untolerated NoExecute taint: the cluster-failover bindings leave.
    env.set_taints(
        "member1",
        json!([{"key": "maintenance", "effect": "NoExecute"}]),
    )
    .await;
    for (name, mode) in [
        ("taint-directly", "Directly"),
        ("taint-gracefully", "Gracefully"),
    ] {
        let rb = env
            .wait_binding(name, "moved off member1", |rb| {
                is_scheduled(rb) && names(rb) == ["member2"]
            })
            .await;
        let task = &rb.spec.graceful_eviction_tasks[0];
        assert_eq!(
            serde_json::to_value(task.purge_mode).unwrap(),
            json!(mode),
            "{name}"
        );
        assert_eq!(task.reason, "TaintUntolerated", "{name}");
        assert_eq!(task.keeps_work(), mode != "Directly", "{name}");
    }

    // Healthy replacements end every task but the suppressed one...
    // (app-never first: the scheduler's watch, and its queue, take them in this order.)
    for name in [
        "app-never",
        "taint-directly",
        "taint-gracefully",
        "app-immediately",
        "app-gracefully",
    ] {
        report(&env, name, &[("member2", "Healthy")]).await;
    }
    for name in [
        "taint-directly",
        "taint-gracefully",
        "app-immediately",
        "app-gracefully",
    ] {
        env.wait_binding(name, "the eviction task ended", |rb| {
            rb.spec.graceful_eviction_tasks.is_empty()
        })
        .await;
    }
    // ...which a user ends by setting suppressDeletion to false. It stayed although the
    // scheduler took app-never's healthy report before those that ended the other tasks.
    let rb = env.bindings().get("app-never").await.unwrap();
    assert_eq!(rb.spec.graceful_eviction_tasks.len(), 1);
    let mut tasks = serde_json::to_value(&rb.spec.graceful_eviction_tasks).unwrap();
    tasks[0]["suppressDeletion"] = json!(false);
    env.bindings()
        .patch(
            "app-never",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"gracefulEvictionTasks": tasks}})),
        )
        .await
        .unwrap();
    env.wait_binding("app-never", "the released task ended", |rb| {
        rb.spec.graceful_eviction_tasks.is_empty()
    })
    .await;

    sched.stop().await;
    env.stop().await;
}
