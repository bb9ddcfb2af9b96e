//! End-to-end behaviour of a simulated member cluster through kube-rs over TLS: nodes,
//! scheduling against capacity, Deployment/ReplicaSet/Pod lifecycle, garbage collection,
//! the token user, node readiness, logs, StatefulSets, DaemonSets and Jobs.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use flotilla_testwait::eventually;
use std::path::Path;
use std::time::Duration;

use flotilla_membersim::{MemberOptions, RunningMember};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};

/// How long a test waits for what it expects.
const WAIT: Duration = Duration::from_secs(10);

async fn client_for(kubeconfig: &Path, context: Option<&str>) -> kube::Client {
    flotilla_testenv::client_for(kubeconfig, context)
        .await
        .unwrap()
}

struct Member {
    member: RunningMember,
    client: kube::Client,
    _dir: tempfile::TempDir,
}

async fn start(nodes: u32, cpu: &str) -> Member {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = MemberOptions::new("sim", dir.path());
    opts.nodes = nodes;
    opts.node_cpu = cpu.into();
    opts.node_memory = "8Gi".into();
    opts.node_pods = 110;
    opts.ready_delay = Duration::from_millis(50);
    opts.in_memory = true;
    let member = flotilla_membersim::start(opts).await.unwrap();
    let client = client_for(&member.kubeconfig, None).await;
    Member {
        member,
        client,
        _dir: dir,
    }
}

fn deployment(name: &str, replicas: i32, cpu: &str) -> Deployment {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{
                    "name": "main",
                    "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}},
                }]},
            },
        },
    }))
    .unwrap()
}

fn phase(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn unschedulable(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find_map(|c| {
            (c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable"))
            .then(|| c.message.clone().unwrap_or_default())
        })
}

/// (running-and-ready, pending-unschedulable, total) Pods labelled app=`app`.
async fn pod_counts(pods: &Api<Pod>, app: &str) -> (usize, usize, usize) {
    let list = pods
        .list(&ListParams::default().labels(&format!("app={app}")))
        .await
        .unwrap();
    let running = list
        .items
        .iter()
        .filter(|p| {
            phase(p) == "Running"
                && p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some()
                && p.status
                    .as_ref()
                    .and_then(|s| s.container_statuses.as_ref())
                    .is_some_and(|cs| cs.iter().all(|c| c.ready))
        })
        .count();
    let pending = list
        .items
        .iter()
        .filter(|p| unschedulable(p).is_some())
        .count();
    (running, pending, list.items.len())
}

#[tokio::test]
async fn a_started_member_has_all_its_nodes() {
    // No waiting: a status controller reading the member right after the start must see its
    // whole capacity, or the scheduler divides replicas by part of it.
    let m = start(5, "4").await;
    let nodes = m
        .member
        .server
        .storage
        .list("/core/nodes/", &Default::default())
        .await
        .unwrap();
    assert_eq!(nodes.items.len(), 5);
    m.member.stop().await;
}

#[tokio::test]
async fn nodes_are_ready_with_capacity() {
    let m = start(3, "4").await;
    let nodes: Api<Node> = Api::all(m.client.clone());
    let list = eventually("3 ready nodes", WAIT, || {
        let nodes = nodes.clone();
        async move {
            let l = nodes.list(&ListParams::default()).await.ok()?;
            let ready = l
                .items
                .iter()
                .filter(|n| {
                    n.status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|cs| {
                            cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")
                        })
                })
                .count();
            (ready == 3).then_some(l)
        }
    })
    .await;
    let mut names: Vec<_> = list
        .items
        .iter()
        .map(|n| n.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["sim-node-0", "sim-node-1", "sim-node-2"]);
    let status = list.items[0].status.clone().unwrap();
    let alloc = status.allocatable.unwrap();
    assert_eq!(alloc["cpu"].0, "4");
    assert_eq!(alloc["memory"].0, "8Gi");
    assert_eq!(alloc["pods"].0, "110");
    assert_eq!(status.node_info.unwrap().kubelet_version, "v1.32.0");

    // NotReady, then Ready again.
    m.member.set_node_ready("sim-node-1", false);
    eventually("node-1 NotReady", WAIT, || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("sim-node-1").await.ok()?;
            n.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "False")
                .then_some(())
        }
    })
    .await;
    m.member.set_node_ready("sim-node-1", true);
    eventually("node-1 Ready", WAIT, || {
        let nodes = nodes.clone();
        async move {
            let n = nodes.get("sim-node-1").await.ok()?;
            n.status?
                .conditions?
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
                .then_some(())
        }
    })
    .await;
    m.member.stop().await;
}

#[tokio::test]
async fn deployment_scheduling_follows_capacity() {
    let m = start(3, "2").await;
    let deploys: Api<Deployment> = Api::namespaced(m.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(m.client.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(m.client.clone(), "default");
    deploys
        .create(&PostParams::default(), &deployment("web", 8, "1"))
        .await
        .unwrap();

    eventually("6 running, 2 unschedulable", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "web").await == (6, 2, 8)).then_some(()) }
    })
    .await;
    let list = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap();
    let msg = list.items.iter().find_map(unschedulable).unwrap();
    assert_eq!(msg, "0/3 nodes are available: 3 Insufficient cpu.");
    // Two per node.
    for i in 0..3 {
        let on = list
            .items
            .iter()
            .filter(|p| {
                p.spec.as_ref().unwrap().node_name.as_deref() == Some(&format!("sim-node-{i}"))
            })
            .count();
        assert_eq!(on, 2, "pods on sim-node-{i}");
    }
    // Names and owners.
    let rs_list = rss.list(&ListParams::default()).await.unwrap();
    assert_eq!(rs_list.items.len(), 1);
    let rs_name = rs_list.items[0].metadata.name.clone().unwrap();
    let hash = rs_list.items[0].metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(rs_name, format!("web-{hash}"));
    for p in &list.items {
        let name = p.metadata.name.as_deref().unwrap();
        assert!(
            name.starts_with(&format!("{rs_name}-")) && name.len() == rs_name.len() + 6,
            "{name}"
        );
        let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.controller),
            ("ReplicaSet", rs_name.as_str(), Some(true))
        );
    }

    eventually("deployment status 8/6/2", WAIT, || {
        let deploys = deploys.clone();
        async move {
            let s = deploys.get("web").await.ok()?.status?;
            (s.replicas == Some(8)
                && s.ready_replicas == Some(6)
                && s.available_replicas == Some(6)
                && s.unavailable_replicas == Some(2)
                && s.updated_replicas == Some(8)
                && s.observed_generation == Some(1))
            .then_some(())
        }
    })
    .await;
    eventually("replicaset status", WAIT, || {
        let rss = rss.clone();
        let rs_name = rs_name.clone();
        async move {
            let s = rss.get(&rs_name).await.ok()?.status?;
            (s.replicas == 8 && s.ready_replicas == Some(6) && s.fully_labeled_replicas == Some(8))
                .then_some(())
        }
    })
    .await;

    // Scale down: the Pending ones go first.
    deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 4}})),
        )
        .await
        .unwrap();
    eventually("4 running, none pending", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "web").await == (4, 0, 4)).then_some(()) }
    })
    .await;
    // Scale up: freed capacity is used again.
    deploys
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"replicas": 6}})),
        )
        .await
        .unwrap();
    eventually("6 running", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "web").await == (6, 0, 6)).then_some(()) }
    })
    .await;
    eventually("deployment Available", WAIT, || {
        let deploys = deploys.clone();
        async move {
            let s = deploys.get("web").await.ok()?.status?;
            let available = s
                .conditions?
                .iter()
                .any(|c| c.type_ == "Available" && c.status == "True");
            (available
                && s.ready_replicas == Some(6)
                && s.unavailable_replicas.is_none()
                && s.observed_generation == Some(3))
            .then_some(())
        }
    })
    .await;

    // Deleting a pod: it is replaced.
    let victim = pods
        .list(&ListParams::default().labels("app=web"))
        .await
        .unwrap()
        .items[0]
        .metadata
        .name
        .clone()
        .unwrap();
    pods.delete(&victim, &DeleteParams::default())
        .await
        .unwrap();
    eventually("pod replaced", WAIT, || {
        let pods = pods.clone();
        let victim = victim.clone();
        async move {
            let l = pods
                .list(&ListParams::default().labels("app=web"))
                .await
                .ok()?;
            (l.items.len() == 6
                && l.items
                    .iter()
                    .all(|p| p.metadata.name.as_deref() != Some(&victim)))
            .then_some(())
        }
    })
    .await;

    // Deleting the Deployment removes its ReplicaSet and Pods.
    deploys
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("rs and pods gone", WAIT, || {
        let pods = pods.clone();
        let rss = rss.clone();
        async move {
            let p = pods.list(&ListParams::default()).await.ok()?.items.len();
            let r = rss.list(&ListParams::default()).await.ok()?.items.len();
            (p == 0 && r == 0).then_some(())
        }
    })
    .await;
    m.member.stop().await;
}

#[tokio::test]
async fn template_change_rolls_to_a_new_replicaset() {
    let m = start(2, "4").await;
    let deploys: Api<Deployment> = Api::namespaced(m.client.clone(), "default");
    let rss: Api<ReplicaSet> = Api::namespaced(m.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(m.client.clone(), "default");
    deploys
        .create(&PostParams::default(), &deployment("app", 3, "100m"))
        .await
        .unwrap();
    eventually("3 running", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "app").await == (3, 0, 3)).then_some(()) }
    })
    .await;
    deploys
        .patch("app", &PatchParams::default(), &Patch::Merge(serde_json::json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.28"}]}}}})))
        .await
        .unwrap();
    eventually("new rs with 3 ready, old at 0", WAIT, || {
        let rss = rss.clone();
        let pods = pods.clone();
        async move {
            let l = rss.list(&ListParams::default()).await.ok()?;
            if l.items.len() != 2 {
                return None;
            }
            let replicas: Vec<i32> = l
                .items
                .iter()
                .map(|r| r.spec.as_ref().unwrap().replicas.unwrap())
                .collect();
            let mut sorted = replicas.clone();
            sorted.sort();
            let p = pods.list(&ListParams::default()).await.ok()?;
            let all_new = p.items.iter().all(|p| {
                p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:1.28")
            });
            (sorted == [0, 3]
                && p.items.len() == 3
                && all_new
                && pod_counts(&pods, "app").await.0 == 3)
                .then_some(())
        }
    })
    .await;
    m.member.stop().await;
}

#[tokio::test]
async fn token_user_is_flotilla_and_rbac_applies_to_impersonated_users() {
    let m = start(1, "4").await;
    let ctx = format!("{}-flotilla", m.member.name);
    let flotilla = client_for(&m.member.kubeconfig, Some(&ctx)).await;
    let nodes: Api<Node> = Api::all(flotilla.clone());
    nodes.list(&ListParams::default()).await.unwrap();
    let token_only = client_for(&m.member.token_kubeconfig, None).await;
    Api::<Pod>::namespaced(token_only, "default")
        .list(&ListParams::default())
        .await
        .unwrap();

    // Impersonating an ordinary user: member-side RBAC says no.
    let kc = kube::config::Kubeconfig::read_from(&m.member.kubeconfig).unwrap();
    let options = kube::config::KubeConfigOptions {
        context: Some(ctx),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kc, &options)
        .await
        .unwrap();
    config.auth_info.impersonate = Some("alice".into());
    let alice = kube::Client::try_from(config).unwrap();
    let err = Api::<Pod>::namespaced(alice, "default")
        .list(&ListParams::default())
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(s) => assert_eq!(s.code, 403, "{s:?}"),
        other => panic!("expected 403, got {other:?}"),
    }
    m.member.stop().await;
}

#[tokio::test]
async fn pod_logs_answer_plain_text() {
    let m = start(1, "4").await;
    let pods: Api<Pod> = Api::namespaced(m.client.clone(), "default");
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "solo", "labels": {"app": "solo"}},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    eventually("solo running", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "solo").await == (1, 0, 1)).then_some(()) }
    })
    .await;
    let logs = pods.logs("solo", &Default::default()).await.unwrap();
    assert_eq!(logs, "simulated pod: no logs\n");
    assert!(pods.logs("missing", &Default::default()).await.is_err());

    // A NotReady node makes its Pods unready.
    m.member.set_node_ready("sim-node-0", false);
    eventually("solo unready", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "solo").await == (0, 0, 1)).then_some(()) }
    })
    .await;
    m.member.stop().await;
}

#[tokio::test]
async fn statefulset_daemonset_and_job() {
    let m = start(3, "4").await;
    let ss: Api<StatefulSet> = Api::namespaced(m.client.clone(), "default");
    let ds: Api<DaemonSet> = Api::namespaced(m.client.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(m.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(m.client.clone(), "default");
    let template = |app: &str, restart: &str| {
        serde_json::json!({
            "metadata": {"labels": {"app": app}},
            "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]},
        })
    };
    ss.create(&PostParams::default(), &serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db"},
        "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}}, "template": template("db", "Always")},
    })).unwrap()).await.unwrap();
    ds.create(&PostParams::default(), &serde_json::from_value(serde_json::json!({
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template("agent", "Always")},
    })).unwrap()).await.unwrap();
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(serde_json::json!({
            "metadata": {"name": "batch"},
            "spec": {"completions": 2, "parallelism": 2, "template": template("batch", "Never")},
        }))
        .unwrap(),
    )
    .await
    .unwrap();

    eventually("statefulset ready", WAIT, || {
        let ss = ss.clone();
        let pods = pods.clone();
        async move {
            let s = ss.get("db").await.ok()?.status?;
            let l = pods
                .list(&ListParams::default().labels("app=db"))
                .await
                .ok()?;
            let mut names: Vec<_> = l
                .items
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            names.sort();
            (s.ready_replicas == Some(3) && names == ["db-0", "db-1", "db-2"]).then_some(())
        }
    })
    .await;
    eventually("daemonset on every node", WAIT, || {
        let ds = ds.clone();
        let pods = pods.clone();
        async move {
            let s = ds.get("agent").await.ok()?.status?;
            let l = pods
                .list(&ListParams::default().labels("app=agent"))
                .await
                .ok()?;
            let mut nodes: Vec<_> = l
                .items
                .iter()
                .filter_map(|p| p.spec.as_ref()?.node_name.clone())
                .collect();
            nodes.sort();
            (s.number_ready == 3
                && s.desired_number_scheduled == 3
                && nodes == ["sim-node-0", "sim-node-1", "sim-node-2"])
            .then_some(())
        }
    })
    .await;
    eventually("job complete", WAIT, || {
        let jobs = jobs.clone();
        async move {
            let s = jobs.get("batch").await.ok()?.status?;
            let complete = s
                .conditions
                .as_ref()?
                .iter()
                .any(|c| c.type_ == "Complete" && c.status == "True");
            (complete && s.succeeded == Some(2) && s.completion_time.is_some()).then_some(())
        }
    })
    .await;
    let l = pods
        .list(&ListParams::default().labels("app=batch"))
        .await
        .unwrap();
    assert_eq!(l.items.len(), 2);
    assert!(l.items.iter().all(|p| phase(p) == "Succeeded"));

    // Scale the StatefulSet down: highest ordinals go.
    ss.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    eventually("db-0 only", WAIT, || {
        let pods = pods.clone();
        async move {
            let l = pods
                .list(&ListParams::default().labels("app=db"))
                .await
                .ok()?;
            let names: Vec<_> = l
                .items
                .iter()
                .map(|p| p.metadata.name.clone().unwrap())
                .collect();
            (names == ["db-0"]).then_some(())
        }
    })
    .await;
    m.member.stop().await;
}

#[tokio::test]
async fn stop_makes_the_cluster_unreachable() {
    let m = start(1, "1").await;
    let nodes: Api<Node> = Api::all(m.client.clone());
    nodes.list(&ListParams::default()).await.unwrap();
    let url = m.member.url();
    m.member.stop().await;
    let fresh = client_for(&m._dir.path().join("kubeconfig"), None).await;
    assert!(
        Api::<Node>::all(fresh)
            .list(&ListParams::default())
            .await
            .is_err(),
        "{url} still answers"
    );
}

#[tokio::test]
async fn a_settled_cluster_stops_writing() {
    let m = start(2, "2").await;
    let deploys: Api<Deployment> = Api::namespaced(m.client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(m.client.clone(), "default");
    // 5 replicas of 1 cpu on 2x2 cpu: one stays Pending, which must not churn either.
    deploys
        .create(&PostParams::default(), &deployment("idle", 5, "1"))
        .await
        .unwrap();
    eventually("4 running, 1 pending", WAIT, || {
        let pods = pods.clone();
        async move { (pod_counts(&pods, "idle").await == (4, 1, 5)).then_some(()) }
    })
    .await;
    // Barrier instead of sleeps: nudged, the simulation finishes a pass that writes nothing
    // and arms no timer (it is idle until something changes) ...
    let mut progress = m.member.simulation_progress();
    let passes = progress.borrow().passes;
    m.member.nudge();
    tokio::time::timeout(
        Duration::from_secs(20),
        progress.wait_for(|p| p.passes > passes && p.idle),
    )
    .await
    .expect("the simulation settles")
    .unwrap();
    // ... and nudged again, a whole further pass writes nothing either.
    let before = m.member.server.storage.current_revision().await;
    let passes = progress.borrow().passes;
    m.member.nudge();
    let after = *tokio::time::timeout(
        Duration::from_secs(20),
        progress.wait_for(|p| p.passes > passes),
    )
    .await
    .expect("the simulation runs the nudged pass")
    .unwrap();
    assert!(after.idle, "{after:?}");
    assert_eq!(
        m.member.server.storage.current_revision().await,
        before,
        "the simulation keeps writing"
    );
    m.member.stop().await;
}

/// A Pod of `name` from a plain manifest with `annotations` and `image`.
fn pod(name: &str, image: &str, annotations: serde_json::Value) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": "main", "image": image}]},
    }))
    .unwrap()
}

fn waiting_reason(p: &Pod) -> Option<String> {
    p.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()?
        .waiting
        .as_ref()?
        .reason
        .clone()
}

#[tokio::test]
async fn pods_fail_as_real_ones_do_when_asked_to() {
    let m = start(1, "4").await;
    let pods: Api<Pod> = Api::namespaced(m.client.clone(), "default");
    let pp = PostParams::default();
    pods.create(
        &pp,
        &pod(
            "fake-registry",
            "registry.invalid/app:1",
            serde_json::json!({}),
        ),
    )
    .await
    .unwrap();
    pods.create(
        &pp,
        &pod(
            "pull-fails",
            "nginx:1.27",
            serde_json::json!({flotilla_membersim::IMAGE_PULL_FAILURE_ANNOTATION: "true"}),
        ),
    )
    .await
    .unwrap();
    pods.create(
        &pp,
        &pod(
            "crashes",
            "nginx:1.27",
            serde_json::json!({flotilla_membersim::CRASH_LOOP_ANNOTATION: "true"}),
        ),
    )
    .await
    .unwrap();
    pods.create(
        &pp,
        &pod(
            "held",
            "nginx:1.27",
            serde_json::json!({flotilla_membersim::PENDING_ANNOTATION: "true"}),
        ),
    )
    .await
    .unwrap();
    pods.create(&pp, &pod("fine", "nginx:1.27", serde_json::json!({})))
        .await
        .unwrap();

    for name in ["fake-registry", "pull-fails"] {
        eventually(&format!("{name} in ImagePullBackOff"), WAIT, || async {
            let p = pods.get(name).await.map_err(|e| e.to_string())?;
            match (phase(&p), waiting_reason(&p).as_deref()) {
                ("Pending", Some("ImagePullBackOff"))
                    if p.spec.as_ref().unwrap().node_name.is_some() =>
                {
                    Ok(())
                }
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    eventually("crashes in CrashLoopBackOff, never ready", WAIT, || async {
        let p = pods.get("crashes").await.map_err(|e| e.to_string())?;
        let cs = p
            .status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default();
        match (phase(&p), waiting_reason(&p).as_deref(), cs.first()) {
            ("Running", Some("CrashLoopBackOff"), Some(c)) if !c.ready && c.restart_count >= 1 => {
                Ok(())
            }
            other => Err(format!("{other:?}")),
        }
    })
    .await;
    eventually("fine runs", WAIT, || async {
        let p = pods.get("fine").await.map_err(|e| e.to_string())?;
        (phase(&p) == "Running")
            .then_some(())
            .ok_or(phase(&p).to_string())
    })
    .await;
    // The held one was looked at (it is marked Unschedulable) and stays unbound.
    let held = pods.get("held").await.unwrap();
    let why = unschedulable(&held).expect("marked Unschedulable");
    assert!(
        why.contains(flotilla_membersim::PENDING_ANNOTATION),
        "{why}"
    );
    assert!(held.spec.unwrap().node_name.is_none());
    m.member.stop().await;
}

#[tokio::test]
async fn disruption_budgets_get_their_status() {
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    let m = start(2, "4").await;
    let deployments: Api<Deployment> = Api::namespaced(m.client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 3, "100m"))
        .await
        .unwrap();
    let budgets: Api<PodDisruptionBudget> = Api::namespaced(m.client.clone(), "default");
    for (name, spec) in [
        ("min-two", serde_json::json!({"minAvailable": 2})),
        ("max-half", serde_json::json!({"maxUnavailable": "50%"})),
    ] {
        let mut spec = spec;
        spec["selector"] = serde_json::json!({"matchLabels": {"app": "web"}});
        budgets
            .create(
                &PostParams::default(),
                &serde_json::from_value(
                    serde_json::json!({"metadata": {"name": name}, "spec": spec}),
                )
                .unwrap(),
            )
            .await
            .unwrap();
    }
    // (expected, desired, current, allowed) once the three Pods are healthy.
    for (name, want) in [("min-two", (3, 2, 3, 1)), ("max-half", (3, 1, 3, 2))] {
        eventually(&format!("{name}'s status"), WAIT, || async {
            let b = budgets.get(name).await.map_err(|e| e.to_string())?;
            let s = b.status.ok_or("no status")?;
            let got = (
                s.expected_pods,
                s.desired_healthy,
                s.current_healthy,
                s.disruptions_allowed,
            );
            let allowed = s.conditions.unwrap_or_default().iter().any(|c| {
                c.type_ == "DisruptionAllowed" && c.status == "True" && c.reason == "SufficientPods"
            });
            if got == want && allowed {
                Ok(())
            } else {
                Err(format!("{got:?} allowed={allowed}"))
            }
        })
        .await;
    }
    m.member.stop().await;
}
