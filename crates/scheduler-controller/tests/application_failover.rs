//! Application failover through the whole stack in-process: a host with the aggregated
//! Cluster server, three member-sims joined, the cluster controllers, the scheduler and the
//! propagation controllers. A Deployment divided 2/2/2 whose policy fails over after 2 s of
//! unhealthiness; member3's nodes turn NotReady (its Pods go unready, so its Deployment is
//! Unhealthy there while the cluster itself stays Ready): its replicas move to member1 and
//! member2, the old copy is kept until the new replicas are available, then removed.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_testwait::eventually;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use flotilla_karmada_api::ResourceBinding;
use flotilla_membersim::{MemberOptions, RunningMember};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;

const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];
const NODES: u32 = 2;
const WAIT: Duration = Duration::from_secs(60);

async fn member_ready(member: &RunningMember) -> Option<i32> {
    let client = flotilla_testenv::client_for(&member.kubeconfig, None)
        .await
        .ok()?;
    let api: Api<Deployment> = Api::namespaced(client, "default");
    let d = api.get_opt("web").await.ok()??;
    Some(d.status.and_then(|s| s.ready_replicas).unwrap_or(0))
}

fn targets(rb: &ResourceBinding) -> Vec<(String, i32)> {
    rb.spec
        .clusters
        .iter()
        .map(|t| (t.name.clone(), t.replicas))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unhealthy_copy_moves_after_the_toleration_and_goes_once_replaced() {
    let flotilla_testenv::ControlPlane {
        dir,
        host,
        aggregated,
        client,
    } = flotilla_testenv::ControlPlane::start().await.unwrap();
    let mut members = BTreeMap::new();
    for name in MEMBERS {
        let mut opts = MemberOptions::new(name, dir.path().join("members").join(name));
        opts.nodes = NODES;
        opts.node_cpu = "2".into();
        opts.node_memory = "16Gi".into();
        opts.ready_delay = Duration::from_millis(200);
        let member = flotilla_membersim::start(opts).await.unwrap();
        let credentials =
            flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem);
        let join = flotilla_membership::Member::new(name, member.url(), credentials);
        flotilla_membership::join(&client, &join).await.unwrap();
        members.insert(name, member);
    }
    let clusters = flotilla_cluster_controllers::spawn(
        client.clone(),
        flotilla_cluster_controllers::ControllerManagerOptions {
            status_period: Duration::from_millis(300),
            probe_timeout: Duration::from_secs(1),
            ..Default::default()
        },
    );
    let scheduler = flotilla_scheduler_controller::spawn(
        client.clone(),
        flotilla_scheduler_controller::SchedulerOptions {
            eviction_grace_period: Duration::from_secs(120),
            ..Default::default()
        },
    );
    let propagation = flotilla_propagation::spawn(
        client.clone(),
        flotilla_propagation::PropagationOptions {
            retry_max: Duration::from_secs(2),
            ..Default::default()
        },
    );
    let cluster_api: Api<flotilla_karmada_api::Cluster> = Api::all(client.clone());
    eventually("three Ready clusters with capacity", WAIT, || async {
        let list = cluster_api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let ready = list
            .items
            .iter()
            .filter(|c| {
                c.status
                    .as_ref()
                    .is_some_and(|s| s.is_ready() && s.resource_summary.is_some())
            })
            .count();
        if ready == 3 {
            Ok(())
        } else {
            Err(format!("{ready} ready"))
        }
    })
    .await;

    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let web: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx",
                    "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}}]},
            },
        },
    }))
    .unwrap();
    deployments
        .create(&PostParams::default(), &web)
        .await
        .unwrap();
    let policy: flotilla_karmada_api::PropagationPolicy = serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
            "placement": {"replicaScheduling": {
                "replicaSchedulingType": "Divided",
                "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"},
            }},
            "failover": {"application": {
                "decisionConditions": {"tolerationSeconds": 2},
                "purgeMode": "Gracefully",
                "gracePeriodSeconds": 120,
            }},
        },
    }))
    .unwrap();
    let policies: Api<flotilla_karmada_api::PropagationPolicy> =
        Api::namespaced(client.clone(), "default");
    policies
        .create(&PostParams::default(), &policy)
        .await
        .unwrap();

    let bindings: Api<ResourceBinding> = Api::namespaced(client.clone(), "default");
    eventually("web 2/2/2, all healthy", WAIT, || async {
        let rb = bindings
            .get("web-deployment")
            .await
            .map_err(|e| e.to_string())?;
        let healthy = rb.status.as_ref().is_some_and(|s| {
            s.aggregated_status.len() == 3
                && s.aggregated_status
                    .iter()
                    .all(|i| i.health == Some(flotilla_karmada_api::work::ResourceHealth::Healthy))
        });
        let t = targets(&rb);
        if healthy && t.len() == 3 && t.iter().all(|(_, r)| *r == 2) {
            Ok(())
        } else {
            Err(format!("{t:?} {:?}", rb.status))
        }
    })
    .await;

    // member3's nodes turn NotReady: its Pods go unready, its copy Unhealthy.
    let member3 = &members["member3"];
    for i in 0..NODES {
        member3.set_node_ready(&format!("member3-node-{i}"), false);
    }
    let unhealthy_at = Instant::now();
    // The move: member3 leaves with an ApplicationFailure task, its replicas go to the others.
    let rb = eventually("member3 evicted", WAIT, || async {
        let rb = bindings
            .get("web-deployment")
            .await
            .map_err(|e| e.to_string())?;
        if rb
            .spec
            .graceful_eviction_tasks
            .iter()
            .any(|t| t.from_cluster == "member3")
        {
            Ok(rb)
        } else {
            Err(format!("{:?}", targets(&rb)))
        }
    })
    .await;
    assert!(
        unhealthy_at.elapsed() >= Duration::from_secs(2),
        "failed over after {:?}",
        unhealthy_at.elapsed()
    );
    let task = rb
        .spec
        .graceful_eviction_tasks
        .iter()
        .find(|t| t.from_cluster == "member3")
        .unwrap();
    assert_eq!(task.reason, "ApplicationFailure");
    assert_eq!(
        task.producer,
        "resource-binding-application-failover-controller"
    );
    assert_eq!(task.grace_period_seconds, Some(120));
    assert!(rb.spec.clusters.iter().all(|t| t.name != "member3"));
    assert_eq!(rb.spec.clusters.iter().map(|t| t.replicas).sum::<i32>(), 6);

    // The task ends, and member3's copy goes, only once member1 and member2 run all 6:
    // until then member3 keeps its Deployment.
    let rb = eventually("the task ended", WAIT, || async {
        // Read member3 before the binding: a task still seen afterwards was there when
        // member3's copy was read.
        let m3 = member_ready(member3).await;
        let rb = bindings
            .get("web-deployment")
            .await
            .map_err(|e| e.to_string())?;
        if rb.spec.graceful_eviction_tasks.is_empty() {
            Ok(rb)
        } else {
            assert!(
                m3.is_some(),
                "member3's Deployment went while its task lasted"
            );
            Err(format!("tasks {:?}", rb.spec.graceful_eviction_tasks))
        }
    })
    .await;
    // The status the task ended on: every new target Healthy with its share available.
    let status = rb.status.unwrap_or_default();
    for t in &rb.spec.clusters {
        let item = status
            .aggregated_status
            .iter()
            .find(|i| i.cluster_name == t.name)
            .unwrap();
        assert_eq!(
            item.health,
            Some(flotilla_karmada_api::work::ResourceHealth::Healthy),
            "{item:?}"
        );
        let available = item
            .status
            .as_ref()
            .and_then(|s| s["availableReplicas"].as_i64())
            .unwrap_or(0);
        assert!(available >= i64::from(t.replicas), "{item:?}");
    }
    let ready: Vec<Option<i32>> =
        futures::future::join_all(["member1", "member2"].map(|m| member_ready(&members[m]))).await;
    assert_eq!(
        ready.iter().map(|r| r.unwrap_or(0)).sum::<i32>(),
        6,
        "{ready:?}"
    );
    eventually("member3's copy removed", WAIT, || async {
        match member_ready(member3).await {
            None => Ok(()),
            Some(n) => Err(format!("{n} ready")),
        }
    })
    .await;

    propagation.stop().await;
    scheduler.stop().await;
    clusters.stop().await;
    for (_, m) in members {
        m.stop().await;
    }
    aggregated.stop().await;
    host.stop().await;
}
