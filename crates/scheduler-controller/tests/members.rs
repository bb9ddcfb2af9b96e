//! End to end with real member-sims: the cluster controllers report capacity and taint a
//! member that goes away; the test itself plays the (not yet written) execution controller
//! by applying a Deployment with the assigned replicas to each member.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use flotilla_karmada_api::Cluster;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

fn has_capacity(c: &Cluster) -> bool {
    c.status.as_ref().is_some_and(|s| {
        s.resource_summary.is_some() && s.is_ready() && !s.api_enablements.is_empty()
    })
}

fn deployment(name: &str, replicas: i32) -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "main", "image": "nginx",
                    "resources": {"requests": {"cpu": "1"}},
                }]},
            },
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lands_by_free_capacity_runs_and_fails_over_when_a_member_stops() {
    let env = Env::start().await;
    let mut members = BTreeMap::new();
    // member1: 2 nodes of 4 CPU; member2: 1 node of 2 CPU.
    for (name, nodes, cpu) in [("member1", 2, "4"), ("member2", 1, "2")] {
        let mut opts =
            flotilla_membersim::MemberOptions::new(name, env.dir.path().join("members").join(name));
        opts.nodes = nodes;
        opts.node_cpu = cpu.into();
        opts.ready_delay = Duration::from_millis(100);
        let member = flotilla_membersim::start(opts).await.unwrap();
        let credentials =
            flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem);
        let join = flotilla_membership::Member::new(name, member.url(), credentials);
        flotilla_membership::join(&env.client, &join).await.unwrap();
        members.insert(name, member);
    }
    let controllers = flotilla_cluster_controllers::spawn(
        env.client.clone(),
        flotilla_cluster_controllers::ControllerManagerOptions {
            status_period: Duration::from_millis(300),
            failure_threshold: Duration::from_secs(1),
            success_threshold: Duration::from_secs(1),
            probe_timeout: Duration::from_millis(500),
            api_enablements_period: Duration::from_secs(5),
            ..Default::default()
        },
    );
    eventually("both clusters' status", WAIT, || async {
        let list = env.clusters().list(&Default::default()).await.unwrap();
        if list.items.len() == 2 && list.items.iter().all(has_capacity) {
            Ok(())
        } else {
            Err(format!("{list:?}"))
        }
    })
    .await;
    let sched = flotilla_scheduler_controller::spawn(
        env.client.clone(),
        flotilla_scheduler_controller::SchedulerOptions {
            // Fail over 2 s after the member is tainted (Karmada's default is 300 s).
            default_toleration_seconds: 2,
            ..test_options()
        },
    );

    // Free CPU 8 : 2 -> 5 replicas : 1.
    env.create_binding("web", "web", 6, Some("1"), dynamic_placement())
        .await;
    let rb = env.wait_binding("web", "scheduled", is_scheduled).await;
    assert_eq!(targets(&rb), pairs(&[("member1", 5), ("member2", 1)]));

    // Play the execution controller: each member gets its share; every replica runs.
    for (cluster, replicas) in targets(&rb) {
        let member = &members[cluster.as_str()];
        let client = client_for(&member.kubeconfig).await;
        let api: Api<Deployment> = Api::namespaced(client, "default");
        api.patch(
            "web",
            &PatchParams::apply("test-execution").force(),
            &Patch::Apply(deployment("web", replicas)),
        )
        .await
        .unwrap();
        eventually(
            &format!("{replicas} replicas running in {cluster}"),
            WAIT,
            || async {
                let d = api.get("web").await.unwrap();
                let ready = d
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0);
                if ready == replicas {
                    Ok(())
                } else {
                    Err(format!("only {ready}/{replicas}"))
                }
            },
        )
        .await;
    }

    // member2 stops: tainted unreachable, and 2 s later its replica moves to member1.
    let member2 = members.remove("member2").unwrap();
    member2.stop().await;
    let rb = env
        .wait_binding("web", "replicas left member2", |rb| {
            is_scheduled(rb) && rb.spec.clusters.iter().all(|t| t.name != "member2")
        })
        .await;
    assert_eq!(targets(&rb), pairs(&[("member1", 6)]));
    assert_eq!(rb.spec.graceful_eviction_tasks.len(), 1);
    assert_eq!(rb.spec.graceful_eviction_tasks[0].from_cluster, "member2");

    sched.stop().await;
    controllers.stop().await;
    for (_, m) in members {
        m.stop().await;
    }
    env.stop().await;
}
