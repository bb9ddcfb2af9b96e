//! A reschedule (`spec.rescheduleTriggeredAt`, as `flotillactl reschedule` sets it) through
//! the scheduler loop against an in-process host: an Aggregated binding spread over two small
//! clusters is consolidated onto a larger one that joined later; the clusters it leaves get
//! graceful eviction tasks (reason `Rescheduled`) that end only once the new copy reports
//! all its replicas available. The test writes Cluster status and the binding's
//! `aggregatedStatus` itself, as the cluster and binding controllers would.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use flotilla_karmada_api::ResourceBinding;
use flotilla_karmada_api::policy::PurgeMode;
use flotilla_scheduler_controller::spawn;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

/// Sets `default/<name>`'s aggregatedStatus: each listed cluster's copy Healthy with this
/// many replicas available (a Deployment's reflected status).
async fn report_available(env: &Env, name: &str, available: &[(&str, i64)]) {
    let items: Vec<Value> = available
        .iter()
        .map(|(c, n)| {
            json!({"clusterName": c, "applied": true, "health": "Healthy",
                   "status": {"generation": 1, "observedGeneration": 1, "replicas": n,
                              "readyReplicas": n, "availableReplicas": n}})
        })
        .collect();
    env.set_aggregated_status(name, items).await;
}

fn tasks(rb: &ResourceBinding) -> Vec<(String, String, Option<i32>)> {
    rb.spec
        .graceful_eviction_tasks
        .iter()
        .map(|t| (t.from_cluster.clone(), t.reason.clone(), t.replicas))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reschedule_consolidates_gracefully_onto_a_new_larger_cluster() {
    let env = Env::start().await;
    env.add_cluster("member1", 2).await;
    env.add_cluster("member2", 2).await;
    let sched = spawn(env.client.clone(), test_options());
    let aggregated = json!({"replicaScheduling": {"replicaSchedulingType": "Divided",
                                                  "replicaDivisionPreference": "Aggregated"}});
    env.create_binding("web", "web", 4, Some("1"), aggregated.clone())
        .await;
    let rb = env.wait_binding("web", "scheduled", is_scheduled).await;
    // Neither member holds four: both are used.
    assert_eq!(targets(&rb), pairs(&[("member1", 2), ("member2", 2)]));
    report_available(&env, "web", &[("member1", 2), ("member2", 2)]).await;

    // member3, with room for everything, joins. The scheduler places a binding only member3
    // admits once it knows the cluster: from then on a reschedule sees it too.
    env.add_cluster("member3", 10).await;
    let mut probe = aggregated.clone();
    probe["clusterAffinity"] = json!({"clusterNames": ["member3"]});
    env.create_binding("probe", "probe", 1, None, probe).await;
    env.wait_binding("probe", "placed on member3", |rb| {
        is_scheduled(rb) && targets(rb) == pairs(&[("member3", 1)])
    })
    .await;

    // flotillactl reschedule: a fresh division puts all four on member3; member1 and
    // member2 are left with tasks, and so keep their Works for now.
    // (A second ahead: times are kept to the second, and the first schedule may have been
    // within this one; a trigger must be later than the last schedule.)
    let trigger = Timestamp::now() + SignedDuration::from_secs(1);
    env.bindings()
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"rescheduleTriggeredAt": Time(trigger)}})),
        )
        .await
        .unwrap();
    let rb = env
        .wait_binding("web", "consolidated on member3", |rb| {
            is_scheduled(rb) && targets(rb) == pairs(&[("member3", 4)])
        })
        .await;
    assert_eq!(
        tasks(&rb),
        [
            ("member1".to_string(), "Rescheduled".to_string(), Some(2)),
            ("member2".to_string(), "Rescheduled".to_string(), Some(2)),
        ]
    );
    for task in &rb.spec.graceful_eviction_tasks {
        assert_eq!(task.producer, "flotilla-scheduler");
        assert_eq!(task.purge_mode, Some(PurgeMode::Gracefully));
        assert!(task.keeps_work());
        assert_eq!(task.clusters_before_failover, ["member1", "member2"]);
    }
    let last = rb.status.as_ref().unwrap().last_scheduled_time.clone();
    assert!(last.unwrap().0.as_second() >= trigger.as_second());
    let event = env
        .wait_event("ResourceBinding", "web", "EvictWorkloadFromCluster")
        .await;
    assert!(
        event
            .message
            .as_deref()
            .unwrap_or("")
            .contains("reschedule"),
        "{event:?}"
    );

    // member3 reports its copy healthy with all four available (the old copies still run):
    // the tasks end, and the replicas stay on member3.
    report_available(
        &env,
        "web",
        &[("member1", 2), ("member2", 2), ("member3", 4)],
    )
    .await;
    // The scheduler ends the tasks with a spec write and records the generation it saw in a
    // status write after it: wait for both.
    let rb = env
        .wait_binding("web", "the eviction tasks ended, observed", |rb| {
            rb.spec.graceful_eviction_tasks.is_empty() && is_scheduled(rb)
        })
        .await;
    assert_eq!(targets(&rb), pairs(&[("member3", 4)]));

    sched.stop().await;
    env.stop().await;
}
