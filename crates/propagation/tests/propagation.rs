//! The first user journey in-process, over loopback TLS with kube-rs: a host with the
//! aggregated Cluster server, three simulated members joined, the cluster controllers, the
//! scheduler and the propagation controllers. A Deployment and a PropagationPolicy on the
//! host become Deployments in the members, divided by free capacity, with status back.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_testwait::eventually;
use std::collections::BTreeMap;
use std::time::Duration;

use flotilla_karmada_api::{ResourceBinding, Work};
use flotilla_membersim::{MemberOptions, RunningMember};
use flotilla_names::karmada;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Event, Namespace};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Members: name, nodes, CPU per node. With 1-CPU replicas the free capacity is 6:4:2.
const MEMBERS: [(&str, u32, &str); 3] = [
    ("member1", 3, "2"),
    ("member2", 2, "2"),
    ("member3", 1, "2"),
];
const WAIT: Duration = Duration::from_secs(60);

struct Env {
    _dir: tempfile::TempDir,
    host: flotilla_host::RunningHost,
    aggregated: flotilla_aggregated::RunningAggregated,
    client: kube::Client,
    members: BTreeMap<String, RunningMember>,
    clusters: Option<flotilla_cluster_controllers::ControllerManager>,
    scheduler: Option<flotilla_scheduler_controller::RunningScheduler>,
    propagation: Option<flotilla_propagation::Propagation>,
}

impl Env {
    async fn start() -> Env {
        let flotilla_testenv::ControlPlane {
            dir,
            host,
            aggregated,
            client,
        } = flotilla_testenv::ControlPlane::start().await.unwrap();
        let mut members = BTreeMap::new();
        for (name, nodes, cpu) in MEMBERS {
            let mut opts = MemberOptions::new(name, dir.path().join("members").join(name));
            opts.nodes = nodes;
            opts.node_cpu = cpu.into();
            opts.node_memory = "16Gi".into();
            opts.ready_delay = Duration::from_millis(50);
            let member = flotilla_membersim::start(opts).await.unwrap();
            let credentials =
                flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem);
            let join = flotilla_membership::Member::new(name, member.url(), credentials);
            flotilla_membership::join(&client, &join).await.unwrap();
            members.insert(name.to_string(), member);
        }
        let clusters = flotilla_cluster_controllers::spawn(
            client.clone(),
            flotilla_cluster_controllers::ControllerManagerOptions {
                status_period: Duration::from_millis(300),
                probe_timeout: Duration::from_secs(1),
                ..Default::default()
            },
        );
        let scheduler = flotilla_scheduler_controller::spawn(client.clone(), Default::default());
        let propagation = flotilla_propagation::spawn(
            client.clone(),
            flotilla_propagation::PropagationOptions {
                retry_max: Duration::from_secs(2),
                ..Default::default()
            },
        );
        let env = Env {
            _dir: dir,
            host,
            aggregated,
            client,
            members,
            clusters: Some(clusters),
            scheduler: Some(scheduler),
            propagation: Some(propagation),
        };
        env.wait_clusters_ready().await;
        env
    }

    async fn stop(mut self) {
        if let Some(p) = self.propagation.take() {
            p.stop().await;
        }
        if let Some(s) = self.scheduler.take() {
            s.stop().await;
        }
        if let Some(c) = self.clusters.take() {
            c.stop().await;
        }
        for (_, m) in std::mem::take(&mut self.members) {
            m.stop().await;
        }
        self.aggregated.stop().await;
        self.host.stop().await;
    }

    async fn wait_clusters_ready(&self) {
        let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(self.client.clone());
        eventually("three Ready clusters with capacity", WAIT, || async {
            let list = clusters
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
    }

    async fn member(&self, name: &str) -> kube::Client {
        flotilla_testenv::client_for(&self.members[name].kubeconfig, None)
            .await
            .unwrap()
    }

    async fn create_namespace(&self, name: &str) {
        let api: Api<Namespace> = Api::all(self.client.clone());
        api.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap(),
        )
        .await
        .unwrap();
    }

    async fn apply(&self, ns: &str, obj: Value) {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        let (api_version, kind) = (
            obj["apiVersion"].as_str().unwrap().to_string(),
            obj["kind"].as_str().unwrap().to_string(),
        );
        let gvk = match api_version.split_once('/') {
            Some((g, v)) => kube::api::GroupVersionKind::gvk(g, v, &kind),
            None => kube::api::GroupVersionKind::gvk("", &api_version, &kind),
        };
        let (ar, _) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .unwrap();
        let api: Api<kube::api::DynamicObject> = if ns.is_empty() {
            Api::all_with(self.client.clone(), &ar)
        } else {
            Api::namespaced_with(self.client.clone(), ns, &ar)
        };
        api.patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&obj),
        )
        .await
        .unwrap();
    }

    /// The `FeatureNotImplemented` warnings about a policy (events of cluster-scoped objects
    /// are in `default`).
    async fn not_implemented_warnings(&self, ns: &str, kind: &str, name: &str) -> Vec<Event> {
        let events: Api<Event> = Api::namespaced(self.client.clone(), ns);
        events
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| {
                e.reason.as_deref() == Some("FeatureNotImplemented")
                    && e.involved_object.kind.as_deref() == Some(kind)
                    && e.involved_object.name.as_deref() == Some(name)
            })
            .collect()
    }

    /// Replicas of Deployment `ns/name` in each member (0 when absent).
    async fn member_replicas(&self, ns: &str, name: &str) -> BTreeMap<String, i32> {
        let mut out = BTreeMap::new();
        for m in self.members.keys() {
            let api: Api<Deployment> = Api::namespaced(self.member(m).await, ns);
            let r = api
                .get_opt(name)
                .await
                .unwrap()
                .and_then(|d| d.spec.and_then(|s| s.replicas))
                .unwrap_or(0);
            out.insert(m.clone(), r);
        }
        out
    }
}

fn deployment(name: &str, replicas: i32, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": image,
                                       "resources": {"requests": {"cpu": "1", "memory": "128Mi"}}}]}}}
    })
}

fn policy(name: &str, kind: &str, api_version: &str, extra: Value) -> Value {
    let mut p = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": name},
        "spec": {"resourceSelectors": [{"apiVersion": api_version, "kind": kind}],
                 "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided",
                     "replicaDivisionPreference": "Weighted",
                     "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}}
    });
    if let (Some(spec), Some(e)) = (p["spec"].as_object_mut(), extra.as_object()) {
        spec.extend(e.clone());
    }
    p
}

fn split(pairs: &[(&str, i32)]) -> BTreeMap<String, i32> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_is_divided_by_free_capacity_and_its_status_comes_back() {
    let env = Env::start().await;
    env.create_namespace("demo").await;
    env.apply("demo", policy("web", "Deployment", "apps/v1", json!({})))
        .await;
    env.apply("demo", deployment("web", 6, "nginx:1.25")).await;
    eventually("the members run 3/2/1", WAIT, || async {
        let r = env.member_replicas("demo", "web").await;
        if r == split(&[("member1", 3), ("member2", 2), ("member3", 1)]) {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    })
    .await;
    let host: Api<Deployment> = Api::namespaced(env.client.clone(), "demo");
    eventually("the template reports 6 ready replicas", WAIT, || async {
        let d = host.get("web").await.map_err(|e| e.to_string())?;
        let s = d.status.clone().unwrap_or_default();
        if s.ready_replicas == Some(6) && s.available_replicas == Some(6) && s.replicas == Some(6) {
            Ok(())
        } else {
            Err(format!("{s:?}"))
        }
    })
    .await;
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "demo");
    let rb = rbs.get("web-deployment").await.unwrap();
    let conditions = &rb.status.as_ref().unwrap().conditions;
    for t in ["Scheduled", "FullyApplied"] {
        assert!(
            conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True"),
            "{t}: {conditions:?}"
        );
    }
    assert_eq!(rb.status.as_ref().unwrap().aggregated_status.len(), 3);
    // The template is claimed, the binding owned by it.
    let d = host.get("web").await.unwrap();
    let labels = d.metadata.labels.clone().unwrap();
    assert!(
        labels.contains_key(karmada::PROPAGATION_POLICY_PERMANENT_ID_LABEL),
        "{labels:?}"
    );
    assert_eq!(
        rb.metadata.owner_references.as_ref().unwrap()[0].uid,
        d.metadata.uid.clone().unwrap()
    );
    // Karmada's events, on the objects Karmada records them on: one SyncSucceed per
    // cluster, each once that cluster's copy is applied.
    let per_cluster: Vec<String> = ["member1", "member2", "member3"]
        .iter()
        .map(|c| format!("Successfully applied resource(demo/web) to cluster {c}"))
        .collect();
    events_on(
        &env,
        "demo",
        "Deployment",
        "web",
        &[
            "ApplyPolicySucceed",
            "GetReplicasSucceed",
            "SyncWorkSucceed",
            "SyncSucceed",
            "AggregateStatusSucceed",
        ],
        &per_cluster,
    )
    .await;
    let on_binding = events_on(
        &env,
        "demo",
        "ResourceBinding",
        "web-deployment",
        &["SyncWorkSucceed", "AggregateStatusSucceed"],
        &[],
    )
    .await;
    assert!(on_binding.iter().any(|(r, m)| r == "SyncWorkSucceed"
        && m == "Sync work of ResourceBinding(demo/web-deployment) successful."));
    let work = karmada::work_name("demo", "web", "Deployment");
    let on_work = events_on(
        &env,
        "karmada-es-member1",
        "Work",
        &work,
        &[
            "SyncSucceed",
            "ReflectStatusSucceed",
            "InterpretHealthSucceed",
        ],
        &[],
    )
    .await;
    assert!(
        on_work.iter().any(|(r, m)| r == "SyncSucceed"
            && *m
                == format!("Sync work(karmada-es-member1/{work}) to cluster(member1) successful.")),
        "{on_work:?}"
    );

    // Scale up: existing replicas stay where they are, the increment follows free capacity.
    env.apply("demo", deployment("web", 12, "nginx:1.25")).await;
    eventually("the members run 6/4/2", WAIT, || async {
        let r = env.member_replicas("demo", "web").await;
        if r == split(&[("member1", 6), ("member2", 4), ("member3", 2)]) {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    })
    .await;
    // A new image rolls out everywhere.
    env.apply("demo", deployment("web", 12, "nginx:1.26")).await;
    for m in ["member1", "member2", "member3"] {
        let api: Api<Deployment> = Api::namespaced(env.member(m).await, "demo");
        eventually("the new image in the member", WAIT, || async {
            let d = api.get("web").await.map_err(|e| e.to_string())?;
            let image = d.spec.unwrap().template.spec.unwrap().containers[0]
                .image
                .clone();
            if image.as_deref() == Some("nginx:1.26") {
                Ok(())
            } else {
                Err(format!("{image:?}"))
            }
        })
        .await;
    }
    // Deleting the template removes the binding, the Works and the member objects.
    host.delete("web", &DeleteParams::background())
        .await
        .unwrap();
    eventually("the Deployment gone from every member", WAIT, || async {
        let r = env.member_replicas("demo", "web").await;
        let mut exists = Vec::new();
        for m in env.members.keys() {
            let api: Api<Deployment> = Api::namespaced(env.member(m).await, "demo");
            if api
                .get_opt("web")
                .await
                .map_err(|e| e.to_string())?
                .is_some()
            {
                exists.push(m.clone());
            }
        }
        if exists.is_empty() {
            Ok(())
        } else {
            Err(format!("{exists:?} {r:?}"))
        }
    })
    .await;
    eventually("binding and Works gone", WAIT, || async {
        let b = rbs
            .get_opt("web-deployment")
            .await
            .map_err(|e| e.to_string())?;
        let works: Api<Work> = Api::all(env.client.clone());
        let left = works
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter(|w| {
                w.metadata.annotations.as_ref().is_some_and(|a| {
                    a.get(karmada::RESOURCE_BINDING_NAME_ANNOTATION)
                        .map(String::as_str)
                        == Some("web-deployment")
                })
            })
            .count();
        if b.is_none() && left == 0 {
            Ok(())
        } else {
            Err(format!(
                "binding {:?}, {left} works",
                b.map(|b| b.metadata.name)
            ))
        }
    })
    .await;
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn namespaces_configmaps_and_conflicts() {
    let env = Env::start().await;
    env.create_namespace("team-x").await;
    for m in ["member1", "member2", "member3"] {
        let api: Api<Namespace> = Api::all(env.member(m).await);
        eventually("team-x in the member", WAIT, || async {
            api.get_opt("team-x")
                .await
                .map_err(|e| e.to_string())?
                .map(|_| ())
                .ok_or_else(|| "absent".to_string())
        })
        .await;
    }
    // A ConfigMap that member2 already has, not made by Flotilla: Abort leaves it alone.
    let m2: Api<ConfigMap> = Api::namespaced(env.member("member2").await, "team-x");
    m2.create(
        &PostParams::default(),
        &serde_json::from_value(json!({
            "metadata": {"name": "settings", "labels": {"team": "member2"}},
            "data": {"owner": "member", "extra": "member-only"},
        }))
        .unwrap(),
    )
    .await
    .unwrap();
    let mut p = policy("cfg", "ConfigMap", "v1", json!({}));
    p["spec"]["placement"] = json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
    env.apply("team-x", p.clone()).await;
    env.apply(
        "team-x",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"owner": "host"}}),
    )
    .await;
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "team-x");
    let failed = eventually(
        "member2 refused under Abort, the others applied",
        WAIT,
        || async {
            let rb = rbs
                .get("settings-configmap")
                .await
                .map_err(|e| e.to_string())?;
            let items = rb.status.map(|s| s.aggregated_status).unwrap_or_default();
            let by: BTreeMap<_, _> = items
                .iter()
                .map(|i| (i.cluster_name.clone(), i.clone()))
                .collect();
            match (by.get("member1"), by.get("member2"), by.get("member3")) {
                (Some(a), Some(b), Some(c))
                    if a.applied == Some(true)
                        && c.applied == Some(true)
                        && b.applied == Some(false) =>
                {
                    Ok(b.applied_message.clone().unwrap_or_default())
                }
                _ => Err(format!("{items:?}")),
            }
        },
    )
    .await;
    assert!(failed.contains("not managed by Flotilla"), "{failed}");
    assert_eq!(
        m2.get("settings").await.unwrap().data.unwrap()["owner"],
        "member"
    );
    // Overwrite takes it over: the member's copy becomes the template's (its own data key
    // goes, as with Karmada's replacing write); a label only the member had stays.
    p["spec"]["conflictResolution"] = json!("Overwrite");
    env.apply("team-x", p).await;
    let taken = eventually("member2 overwritten", WAIT, || async {
        let cm = m2.get("settings").await.map_err(|e| e.to_string())?;
        let owner = cm.data.clone().unwrap_or_default().get("owner").cloned();
        if owner.as_deref() == Some("host") {
            Ok(cm)
        } else {
            Err(format!("{owner:?}"))
        }
    })
    .await;
    assert_eq!(
        taken.data.unwrap(),
        BTreeMap::from([("owner".to_string(), "host".to_string())])
    );
    let labels = taken.metadata.labels.unwrap();
    assert_eq!(labels["team"], "member2");
    assert_eq!(labels[karmada::MANAGED_BY_KARMADA_LABEL], "true");
    // Deleting the namespace on the host removes it from the members.
    let nss: Api<Namespace> = Api::all(env.client.clone());
    nss.delete("team-x", &DeleteParams::default())
        .await
        .unwrap();
    for m in ["member1", "member3"] {
        let api: Api<Namespace> = Api::all(env.member(m).await);
        eventually("team-x gone from the member", WAIT, || async {
            match api.get_opt("team-x").await.map_err(|e| e.to_string())? {
                None => Ok(()),
                Some(ns) if ns.metadata.deletion_timestamp.is_some() => Ok(()),
                Some(_) => Err("still there".into()),
            }
        })
        .await;
    }
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_templates_and_late_policies() {
    let env = Env::start().await;
    // A ClusterRole through a ClusterPropagationPolicy and a ClusterResourceBinding.
    env.apply(
        "",
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "viewer"},
               "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    )
    .await;
    env.apply(
        "",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
               "metadata": {"name": "roles"},
               "spec": {"resourceSelectors": [{"apiVersion": "rbac.authorization.k8s.io/v1",
                                               "kind": "ClusterRole", "name": "viewer"}],
                        // Accepted, stored, warned about, and without effect.
                        "schedulePriority": {"priorityClassSource": "KubePriorityClass",
                                             "priorityClassName": "high"},
                        "placement": {"clusterAffinity": {"clusterNames": ["member1", "member3"]},
                                      "workloadAffinity": {"antiAffinity": {"groupByLabelKey": "team"}}}}}),
    )
    .await;
    for (m, expected) in [("member1", true), ("member3", true)] {
        let api: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(env.member(m).await);
        eventually("the ClusterRole in the member", WAIT, || async {
            let found = api
                .get_opt("viewer")
                .await
                .map_err(|e| e.to_string())?
                .is_some();
            if found == expected {
                Ok(())
            } else {
                Err(format!("{m}: {found}"))
            }
        })
        .await;
    }
    let crbs: Api<flotilla_karmada_api::ClusterResourceBinding> = Api::all(env.client.clone());
    let crb = crbs.get("viewer-clusterrole").await.unwrap();
    let clusters: Vec<String> = crb.spec.clusters.iter().map(|c| c.name.clone()).collect();
    assert_eq!(clusters, ["member1", "member3"]);
    let m2: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(env.member("member2").await);
    assert!(
        m2.get_opt("viewer").await.unwrap().is_none(),
        "member2 is not selected"
    );
    // The fields Flotilla does not implement are named in a Warning on the policy.
    let warning = eventually(
        "a FeatureNotImplemented warning on the policy",
        WAIT,
        || async {
            let found = env
                .not_implemented_warnings("default", "ClusterPropagationPolicy", "roles")
                .await;
            found.into_iter().next().ok_or_else(|| "none".to_string())
        },
    )
    .await;
    assert_eq!(warning.type_.as_deref(), Some("Warning"));
    let message = warning.message.unwrap_or_default();
    assert!(
        message.contains("spec.schedulePriority")
            && message.contains("spec.placement.workloadAffinity"),
        "{message}"
    );

    // A template first, its policy later: the new policy claims it.
    env.create_namespace("late").await;
    env.apply(
        "late",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "late");
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "late");
    assert!(
        rbs.get_opt("cfg-configmap").await.unwrap().is_none(),
        "no policy, no binding"
    );
    let mut p = policy("late-cfg", "ConfigMap", "v1", json!({"association": true}));
    p["spec"]["placement"] = json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
    env.apply("late", p.clone()).await;
    let member2: Api<ConfigMap> = Api::namespaced(env.member("member2").await, "late");
    eventually("the ConfigMap in member2", WAIT, || async {
        member2
            .get_opt("cfg")
            .await
            .map_err(|e| e.to_string())?
            .map(|_| ())
            .ok_or_else(|| "absent".to_string())
    })
    .await;
    let claimed = cms.get("cfg").await.unwrap();
    assert_eq!(
        claimed.metadata.annotations.unwrap()[karmada::PROPAGATION_POLICY_NAME_ANNOTATION],
        "late-cfg"
    );
    // An update of the template reaches the members.
    env.apply(
        "late",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "2"}}),
    )
    .await;
    eventually("the new data in member2", WAIT, || async {
        let cm = member2.get("cfg").await.map_err(|e| e.to_string())?;
        let a = cm.data.unwrap_or_default().get("a").cloned();
        if a.as_deref() == Some("2") {
            Ok(())
        } else {
            Err(format!("{a:?}"))
        }
    })
    .await;
    // One warning for the policy's generation, however many times its templates are seen.
    let warnings = eventually("a warning on the namespaced policy", WAIT, || async {
        let found = env
            .not_implemented_warnings("late", "PropagationPolicy", "late-cfg")
            .await;
        if found.is_empty() {
            Err("none".to_string())
        } else {
            Ok(found)
        }
    })
    .await;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0].count.unwrap_or(1), 1, "{warnings:?}");
    assert!(
        warnings[0]
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("spec.association"),
        "{warnings:?}"
    );
    // A new generation that uses another unimplemented field is warned about again.
    p["spec"]["dependentOverrides"] = json!(["late-override"]);
    env.apply("late", p).await;
    eventually("a warning for the new generation", WAIT, || async {
        let found = env
            .not_implemented_warnings("late", "PropagationPolicy", "late-cfg")
            .await;
        let messages: Vec<String> = found.into_iter().filter_map(|e| e.message).collect();
        if messages
            .iter()
            .any(|m| m.contains("spec.association, spec.dependentOverrides"))
        {
            Ok(())
        } else {
            Err(format!("{messages:?}"))
        }
    })
    .await;
    // Deleting the policy releases the template; the copies stay (Karmada's behaviour).
    let pps: Api<flotilla_karmada_api::PropagationPolicy> =
        Api::namespaced(env.client.clone(), "late");
    pps.delete("late-cfg", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the template released", WAIT, || async {
        let cm = cms.get("cfg").await.map_err(|e| e.to_string())?;
        let a = cm.metadata.annotations.unwrap_or_default();
        if a.contains_key(karmada::PROPAGATION_POLICY_NAME_ANNOTATION) {
            Err(format!("{a:?}"))
        } else {
            Ok(())
        }
    })
    .await;
    assert!(
        member2.get_opt("cfg").await.unwrap().is_some(),
        "member copies stay"
    );
    env.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_member_does_not_delay_the_others() {
    let env = Env::start().await;
    env.create_namespace("spread").await;
    let members_ns: Vec<Api<Namespace>> = {
        let mut v = Vec::new();
        for m in ["member1", "member2", "member3"] {
            v.push(Api::all(env.member(m).await));
        }
        v
    };
    for api in &members_ns {
        eventually("spread in the member", WAIT, || async {
            api.get_opt("spread")
                .await
                .map_err(|e| e.to_string())?
                .map(|_| ())
                .ok_or_else(|| "absent".to_string())
        })
        .await;
    }
    // member3 stops answering (connections refused) while its Cluster is still Ready.
    env.members["member3"].set_reachable(false).await.unwrap();
    let mut p = policy("all", "ConfigMap", "v1", json!({}));
    p["spec"]["placement"] = json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
    env.apply("spread", p).await;
    for i in 0..5 {
        env.apply(
            "spread",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}, "data": {"i": i.to_string()}}),
        )
        .await;
    }
    let works: Api<Work> = Api::all(env.client.clone());
    let applied = eventually(
        "every ConfigMap applied in member1 and member2",
        WAIT,
        || async {
            let list = works
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?;
            let applied: Vec<String> =
                list.items
                    .iter()
                    .filter(|w| {
                        w.status.as_ref().is_some_and(|s| {
                            s.conditions
                                .iter()
                                .any(|c| c.type_ == "Applied" && c.status == "True")
                        }) && w.metadata.annotations.as_ref().is_some_and(|a| {
                            a.contains_key(karmada::RESOURCE_BINDING_NAME_ANNOTATION)
                        })
                    })
                    .map(|w| w.metadata.namespace.clone().unwrap_or_default())
                    .collect();
            let per = |ns: &str| applied.iter().filter(|n| *n == ns).count();
            if per(&karmada::execution_namespace("member1")) == 5
                && per(&karmada::execution_namespace("member2")) == 5
            {
                Ok(per(&karmada::execution_namespace("member3")))
            } else {
                Err(format!("{applied:?}"))
            }
        },
    )
    .await;
    assert_eq!(
        applied, 0,
        "member3 is unreachable: nothing can be applied there"
    );
    // Once member3 answers again, its Works are applied too.
    env.members["member3"].set_reachable(true).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.member("member3").await, "spread");
    eventually(
        "the ConfigMaps in member3 after it came back",
        WAIT,
        || async {
            let n = cms
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .filter(|c| {
                    c.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with('c'))
                })
                .count();
            if n == 5 { Ok(()) } else { Err(format!("{n}")) }
        },
    )
    .await;
    env.stop().await;
}

/// The kinds issue 18 added to the host reach the members like any template: an Ingress, an
/// HorizontalPodAutoscaler (applied as autoscaling/v1, stored and propagated as v2) and a
/// PodDisruptionBudget, selected by one Duplicated policy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ingress_hpa_and_pdb_propagate() {
    let env = Env::start().await;
    env.create_namespace("edge").await;
    env.apply(
        "edge",
        json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "edge"},
            "spec": {
                "resourceSelectors": [
                    {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"},
                    {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"},
                    {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget"},
                ],
                "placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
            },
        }),
    )
    .await;
    env.apply(
        "edge",
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web"},
            "spec": {"rules": [{"host": "web.example.com", "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": "web", "port": {"number": 80}}},
            }]}}]},
        }),
    )
    .await;
    env.apply(
        "edge",
        json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 2, "maxReplicas": 6, "targetCPUUtilizationPercentage": 70},
        }),
    )
    .await;
    env.apply(
        "edge",
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "web"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
        }),
    )
    .await;
    for m in ["member1", "member2", "member3"] {
        let client = env.member(m).await;
        for (gvk, plural, check) in [
            (
                kube::api::GroupVersionKind::gvk("networking.k8s.io", "v1", "Ingress"),
                "ingresses",
                "/spec/rules/0/host",
            ),
            (
                kube::api::GroupVersionKind::gvk("autoscaling", "v2", "HorizontalPodAutoscaler"),
                "horizontalpodautoscalers",
                "/spec/metrics/0/resource/target/averageUtilization",
            ),
            (
                kube::api::GroupVersionKind::gvk("policy", "v1", "PodDisruptionBudget"),
                "poddisruptionbudgets",
                "/spec/minAvailable",
            ),
        ] {
            let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, plural);
            let api: Api<kube::api::DynamicObject> =
                Api::namespaced_with(client.clone(), "edge", &ar);
            let value = eventually(&format!("{plural} in {m}"), WAIT, || async {
                let obj = api
                    .get_opt("web")
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| "absent".to_string())?;
                serde_json::to_value(&obj)
                    .map_err(|e| e.to_string())?
                    .pointer(check)
                    .cloned()
                    .ok_or_else(|| format!("{check} missing"))
            })
            .await;
            match plural {
                "ingresses" => assert_eq!(value, json!("web.example.com")),
                "horizontalpodautoscalers" => assert_eq!(value, json!(70)),
                _ => assert_eq!(value, json!(1)),
            }
        }
    }
    env.stop().await;
}

/// Whether `ns/name` of kind `K` is in each member (the members without it are absent).
async fn members_with<K>(env: &Env, ns: &str, name: &str) -> Vec<String>
where
    K: kube::Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
{
    let mut out = Vec::new();
    for m in env.members.keys() {
        let api: Api<K> = Api::namespaced(env.member(m).await, ns);
        if api
            .get_opt(name)
            .await
            .unwrap()
            .is_some_and(|o| o.meta().deletion_timestamp.is_none())
        {
            out.push(m.clone());
        }
    }
    out
}

fn pinned_policy(name: &str, deployment: &str, clusters: &[&str]) -> Value {
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": name},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment}],
                 "propagateDeps": true,
                 "placement": {"clusterAffinity": {"clusterNames": clusters},
                               "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependencies_follow_their_workloads_and_shared_ones_stay_while_needed() {
    let env = Env::start().await;
    env.create_namespace("deps").await;
    env.apply(
        "deps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"k": "v"}}),
    )
    .await;
    env.apply(
        "deps",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "env"}, "stringData": {"password": "p"}}),
    )
    .await;
    let mut a = deployment("a", 1, "nginx");
    a["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "conf", "configMap": {"name": "shared"}}]);
    a["spec"]["template"]["spec"]["containers"][0]["envFrom"] =
        json!([{"secretRef": {"name": "env"}}]);
    let mut b = deployment("b", 1, "nginx");
    b["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "conf", "configMap": {"name": "shared"}}]);
    env.apply("deps", pinned_policy("pa", "a", &["member1"]))
        .await;
    env.apply("deps", pinned_policy("pb", "b", &["member3"]))
        .await;
    env.apply("deps", a).await;
    env.apply("deps", b.clone()).await;

    let expect = |cm: &'static [&'static str], secret: &'static [&'static str]| {
        let env = &env;
        async move {
            eventually("dependencies where their workloads are", WAIT, || async {
                let c = members_with::<ConfigMap>(env, "deps", "shared").await;
                let s =
                    members_with::<k8s_openapi::api::core::v1::Secret>(env, "deps", "env").await;
                if c == cm && s == secret {
                    Ok(())
                } else {
                    Err(format!("configmap in {c:?}, secret in {s:?}"))
                }
            })
            .await
        }
    };
    expect(&["member1", "member3"], &["member1"]).await;
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "deps");
    let attached = rbs.get("shared-configmap").await.unwrap();
    let by: Vec<&str> = attached
        .spec
        .required_by
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(by, ["a-deployment", "b-deployment"]);
    assert!(attached.spec.placement.is_none());

    // a moves to member2: its Secret and the ConfigMap follow; member3 keeps the ConfigMap
    // for b.
    env.apply("deps", pinned_policy("pa", "a", &["member2"]))
        .await;
    expect(&["member2", "member3"], &["member2"]).await;

    // b stops referring to the ConfigMap: it leaves member3.
    b["spec"]["template"]["spec"]["volumes"] = json!([]);
    env.apply("deps", b).await;
    expect(&["member2"], &["member2"]).await;

    // a is deleted: nothing needs them, and their attached bindings go.
    let deployments: Api<Deployment> = Api::namespaced(env.client.clone(), "deps");
    deployments
        .delete("a", &DeleteParams::default())
        .await
        .unwrap();
    expect(&[], &[]).await;
    eventually("attached bindings deleted", WAIT, || async {
        let names: Vec<String> = rbs
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter_map(|b| b.metadata.name)
            .filter(|n| n.starts_with("shared-") || n.starts_with("env-"))
            .collect();
        if names.is_empty() {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    })
    .await;
    // The host objects stay.
    let cms: Api<ConfigMap> = Api::namespaced(env.client.clone(), "deps");
    assert!(cms.get_opt("shared").await.unwrap().is_some());
    env.stop().await;
}

/// The Deployment `ns/name` in each member, as JSON (absent members left out).
async fn member_deployments(env: &Env, ns: &str, name: &str) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for m in env.members.keys() {
        let api: Api<Deployment> = Api::namespaced(env.member(m).await, ns);
        if let Some(d) = api.get_opt(name).await.unwrap() {
            out.insert(m.clone(), serde_json::to_value(d).unwrap());
        }
    }
    out
}

fn image_and_replicas(d: &Value) -> (String, i64, String) {
    (
        d["spec"]["template"]["spec"]["containers"][0]["image"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        d["spec"]["replicas"].as_i64().unwrap_or(-1),
        d["metadata"]["annotations"]["owner"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn override_policies_shape_each_members_copy() {
    let env = Env::start().await;
    env.create_namespace("ov").await;
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(env.client.clone());
    clusters
        .patch(
            "member1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"region": "eu"}}})),
        )
        .await
        .unwrap();
    let mut p = policy("web", "Deployment", "apps/v1", json!({}));
    p["spec"]["placement"] = json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
    env.apply("ov", p).await;
    let mut web = deployment("web", 2, "nginx:1.25");
    web["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({});
    env.apply("ov", web).await;
    let selector = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]);
    env.apply(
        "",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
               "metadata": {"name": "owner-cluster"},
               "spec": {"resourceSelectors": selector,
                        "overrideRules": [{"overriders": {"annotationsOverrider": [
                            {"operator": "add", "value": {"owner": "cluster-wide"}}]}}]}}),
    )
    .await;
    env.apply(
        "ov",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
               "metadata": {"name": "owner-ns"},
               "spec": {"resourceSelectors": selector,
                        "overrideRules": [{"overriders": {"annotationsOverrider": [
                            {"operator": "add", "value": {"owner": "namespace"}}]}}]}}),
    )
    .await;
    env.apply(
        "ov",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
               "metadata": {"name": "eu-registry"},
               "spec": {"resourceSelectors": selector,
                        "overrideRules": [{"targetCluster": {"labelSelector": {"matchLabels": {"region": "eu"}}},
                                           "overriders": {"imageOverrider": [
                                               {"component": "Registry", "operator": "replace", "value": "mirror.eu"}]}}]}}),
    )
    .await;
    env.apply(
        "ov",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
               "metadata": {"name": "small-member2"},
               "spec": {"resourceSelectors": selector,
                        "overrideRules": [{"targetCluster": {"clusterNames": ["member2"]},
                                           "overriders": {"plaintext": [
                                               {"path": "/spec/replicas", "operator": "replace", "value": 1}]}}]}}),
    )
    .await;
    let wait_for = |want: BTreeMap<&'static str, (&'static str, i64, &'static str)>| {
        let env = &env;
        async move {
            eventually("each member's copy as the overrides say", WAIT, || async {
                let got: BTreeMap<String, (String, i64, String)> =
                    member_deployments(env, "ov", "web")
                        .await
                        .iter()
                        .map(|(m, d)| (m.clone(), image_and_replicas(d)))
                        .collect();
                let want: BTreeMap<String, (String, i64, String)> = want
                    .iter()
                    .map(|(m, (i, r, o))| (m.to_string(), (i.to_string(), *r, o.to_string())))
                    .collect();
                if got == want {
                    Ok(())
                } else {
                    Err(format!("{got:?}"))
                }
            })
            .await
        }
    };
    // The OverridePolicy wins over the ClusterOverridePolicy on the same annotation.
    wait_for(BTreeMap::from([
        ("member1", ("mirror.eu/nginx:1.25", 2, "namespace")),
        ("member2", ("nginx:1.25", 1, "namespace")),
        ("member3", ("nginx:1.25", 2, "namespace")),
    ]))
    .await;
    let works: Api<Work> =
        Api::namespaced(env.client.clone(), &karmada::execution_namespace("member1"));
    let work = works
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|w| {
            w.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("web-"))
        })
        .unwrap();
    let applied = &work.metadata.annotations.clone().unwrap_or_default();
    let ns_applied: Value =
        serde_json::from_str(&applied[flotilla_overrides::APPLIED_OVERRIDES_ANNOTATION]).unwrap();
    let names: Vec<&str> = ns_applied
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["policyName"].as_str())
        .collect();
    assert_eq!(names, ["eu-registry", "owner-ns"]);
    assert!(applied.contains_key(flotilla_overrides::APPLIED_CLUSTER_OVERRIDES_ANNOTATION));

    // A Cluster labelled into the region gets the region's registry.
    clusters
        .patch(
            "member3",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"region": "eu"}}})),
        )
        .await
        .unwrap();
    wait_for(BTreeMap::from([
        ("member1", ("mirror.eu/nginx:1.25", 2, "namespace")),
        ("member2", ("nginx:1.25", 1, "namespace")),
        ("member3", ("mirror.eu/nginx:1.25", 2, "namespace")),
    ]))
    .await;

    // An override that cannot apply in member2: member2's copy stays as it was and the binding
    // says why; the other members are unaffected.
    env.apply(
        "ov",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
               "metadata": {"name": "broken"},
               "spec": {"resourceSelectors": selector,
                        "overrideRules": [{"targetCluster": {"clusterNames": ["member2"]},
                                           "overriders": {"plaintext": [
                                               {"path": "/spec/nothere/x", "operator": "replace", "value": 1}]}}]}}),
    )
    .await;
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "ov");
    let message = eventually(
        "member2's override failure on the binding",
        WAIT,
        || async {
            let rb = rbs.get("web-deployment").await.map_err(|e| e.to_string())?;
            let items = rb.status.map(|s| s.aggregated_status).unwrap_or_default();
            items
                .iter()
                .find(|i| i.cluster_name == "member2" && i.applied == Some(false))
                .and_then(|i| i.applied_message.clone())
                .ok_or_else(|| format!("{items:?}"))
        },
    )
    .await;
    assert!(
        message.contains("OverridePolicy ov/broken") && message.contains("/spec/nothere/x"),
        "{message}"
    );
    // Deleting the bad one and the registry override: the plain template (with the others).
    let ops: Api<flotilla_karmada_api::overrides::OverridePolicy> =
        Api::namespaced(env.client.clone(), "ov");
    for name in ["broken", "eu-registry"] {
        ops.delete(name, &DeleteParams::default()).await.unwrap();
    }
    wait_for(BTreeMap::from([
        ("member1", ("nginx:1.25", 2, "namespace")),
        ("member2", ("nginx:1.25", 1, "namespace")),
        ("member3", ("nginx:1.25", 2, "namespace")),
    ]))
    .await;
    let rb = rbs.get("web-deployment").await.unwrap();
    assert!(
        rb.status
            .unwrap()
            .aggregated_status
            .iter()
            .all(|i| i.applied == Some(true)),
        "a member still failing after the bad policy went"
    );
    // The OverridePolicy on the annotation goes: the ClusterOverridePolicy's value shows.
    ops.delete("owner-ns", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(BTreeMap::from([
        ("member1", ("nginx:1.25", 2, "cluster-wide")),
        ("member2", ("nginx:1.25", 1, "cluster-wide")),
        ("member3", ("nginx:1.25", 2, "cluster-wide")),
    ]))
    .await;
    let work = works
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|w| {
            w.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("web-"))
        })
        .unwrap();
    assert!(
        !work
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(flotilla_overrides::APPLIED_OVERRIDES_ANNOTATION),
        "the Work still lists OverridePolicies"
    );
    env.stop().await;
}

/// The `Dispatching` condition status of the Work of Deployment `name` in `cluster`.
async fn dispatching(env: &Env, cluster: &str, name: &str) -> Option<String> {
    let works: Api<Work> =
        Api::namespaced(env.client.clone(), &karmada::execution_namespace(cluster));
    works
        .list(&ListParams::default())
        .await
        .ok()?
        .items
        .into_iter()
        .find(|w| {
            w.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with(&format!("{name}-")))
        })?
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == flotilla_karmada_api::work::WORK_DISPATCHING)
        .map(|c| c.status)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn suspended_dispatching_holds_works_back_until_resumed() {
    let env = Env::start().await;
    env.create_namespace("sus").await;
    let mut p = policy("web", "Deployment", "apps/v1", json!({}));
    p["spec"]["placement"] = json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
    p["spec"]["suspension"] = json!({"dispatching": true});
    env.apply("sus", p.clone()).await;
    let mut web = deployment("web", 2, "nginx");
    web["spec"]["template"]["spec"]["containers"][0]["resources"] = json!({});
    env.apply("sus", web.clone()).await;
    // Every Work says it is held back (the barrier), and no member has the Deployment.
    for m in ["member1", "member2", "member3"] {
        eventually("the Work held back", WAIT, || async {
            match dispatching(&env, m, "web").await.as_deref() {
                Some("False") => Ok(()),
                other => Err(format!("{other:?}")),
            }
        })
        .await;
    }
    assert_eq!(
        member_deployments(&env, "sus", "web").await.len(),
        0,
        "a suspended Work reached a member"
    );

    // Resumed for all but member2.
    p["spec"]["suspension"] = json!({"dispatchingOnClusters": {"clusterNames": ["member2"]}});
    env.apply("sus", p.clone()).await;
    eventually(
        "member1 and member3 have it, member2 held back",
        WAIT,
        || async {
            let got: Vec<String> = member_deployments(&env, "sus", "web")
                .await
                .into_keys()
                .collect();
            let held = dispatching(&env, "member2", "web").await;
            let resumed = dispatching(&env, "member1", "web").await;
            if got == ["member1", "member3"]
                && held.as_deref() == Some("False")
                && resumed.as_deref() == Some("True")
            {
                Ok(())
            } else {
                Err(format!("in {got:?}, member2 {held:?}, member1 {resumed:?}"))
            }
        },
    )
    .await;

    // Resumed everywhere.
    p["spec"]["suspension"] = json!(null);
    env.apply("sus", p).await;
    eventually("every member has it", WAIT, || async {
        let got: Vec<String> = member_deployments(&env, "sus", "web")
            .await
            .into_keys()
            .collect();
        if got.len() == 3 {
            Ok(())
        } else {
            Err(format!("{got:?}"))
        }
    })
    .await;
    env.stop().await;
}

/// A new term of the controllers (a restart, or leadership won back) starts its caches from
/// nothing: bindings reconciled before the template cache has listed must not be dropped as
/// if their template were gone. Seen in the 200-client fault test: the controller-manager
/// lost its Lease just after a binding's status was written, and in its next term the binding
/// kept `FullyApplied=False` with no `aggregatedStatus` for good although every Work was
/// applied. Here every binding's status is set back to that state while the controllers are
/// stopped; the next term must put it right.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_term_repairs_binding_statuses_left_behind() {
    const COUNT: usize = 12;
    let mut env = Env::start().await;
    env.create_namespace("terms").await;
    let mut everywhere = policy("everywhere", "Deployment", "apps/v1", json!({}));
    everywhere["spec"]["placement"] =
        json!({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}});
    env.apply("terms", everywhere).await;
    for i in 0..COUNT {
        let mut d = deployment(&format!("app{i}"), 1, "nginx:1.25");
        d["spec"]["template"]["spec"]["containers"][0]
            .as_object_mut()
            .unwrap()
            .remove("resources");
        env.apply("terms", d).await;
    }
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "terms");
    let fully_applied = || async {
        let list = rbs
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let done = list
            .items
            .iter()
            .filter(|rb| {
                rb.status.as_ref().is_some_and(|s| {
                    s.aggregated_status.len() == 3
                        && s.conditions
                            .iter()
                            .any(|c| c.type_ == "FullyApplied" && c.status == "True")
                })
            })
            .count();
        if done == COUNT {
            Ok(())
        } else {
            Err(format!("{done} of {COUNT} bindings FullyApplied"))
        }
    };
    eventually("every binding FullyApplied", WAIT, fully_applied).await;

    env.propagation.take().unwrap().stop().await;
    for i in 0..COUNT {
        // The scheduler's condition stays as it was; only the binding controller's part is
        // taken back.
        let rb = rbs.get(&format!("app{i}-deployment")).await.unwrap();
        let mut conditions: Vec<Value> = rb
            .status
            .unwrap()
            .conditions
            .iter()
            .filter(|c| c.type_ != "FullyApplied")
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        conditions.push(json!({
            "type": "FullyApplied", "status": "False", "reason": "FullyAppliedFailed",
            "message": "Failed to apply all works, see status.aggregatedStatus for details",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }));
        let stale = json!({"status": {"aggregatedStatus": [], "conditions": conditions}});
        rbs.patch_status(
            &format!("app{i}-deployment"),
            &PatchParams::default(),
            &Patch::Merge(&stale),
        )
        .await
        .unwrap();
    }
    env.propagation = Some(flotilla_propagation::spawn(
        env.client.clone(),
        flotilla_propagation::PropagationOptions {
            retry_max: Duration::from_secs(2),
            ..Default::default()
        },
    ));
    eventually("every binding FullyApplied again", WAIT, fully_applied).await;
    env.stop().await;
}

/// A member's ConfigMap `ns/name`, once it exists.
async fn member_config_map(env: &Env, member: &str, ns: &str, name: &str) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(env.member(member).await, ns);
    eventually(&format!("{ns}/{name} in {member}"), WAIT, || async {
        api.get_opt(name)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| "absent".to_string())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmadas_names_and_labels_and_what_a_preserved_object_keeps() {
    let env = Env::start().await;
    // A user's namespace may be called karmada-*: it propagates like any other.
    env.create_namespace("karmada-demo").await;
    let mut p = policy(
        "keep",
        "ConfigMap",
        "v1",
        json!({"preserveResourcesOnDeletion": true}),
    );
    p["spec"]["placement"] = json!({"clusterAffinity": {"clusterNames": ["member1"]}});
    env.apply("karmada-demo", p).await;
    env.apply(
        "karmada-demo",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
               "data": {"k": "v"}}),
    )
    .await;
    let member = member_config_map(&env, "member1", "karmada-demo", "cfg").await;

    // The binding's permanent id labels the Work and the member object; the Work has an id
    // of its own, on the member object too; names are Karmada's.
    let rbs: Api<ResourceBinding> = Api::namespaced(env.client.clone(), "karmada-demo");
    let rb = rbs.get("cfg-configmap").await.unwrap();
    let rb_id =
        rb.metadata.labels.as_ref().unwrap()[karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL].clone();
    // FNV-32a of "karmada-demo-cfg-configmap", safe-encoded, as Karmada names the Work.
    let works: Api<Work> = Api::namespaced(env.client.clone(), "karmada-es-member1");
    let work_name = karmada::work_name("karmada-demo", "cfg", "ConfigMap");
    let work = works.get(&work_name).await.unwrap();
    let work_labels = work.metadata.labels.clone().unwrap();
    assert_eq!(
        work_labels[karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL],
        rb_id
    );
    let work_id = work_labels[karmada::WORK_PERMANENT_ID_LABEL].clone();
    assert!(uuid_like(&work_id), "{work_id}");
    let labels = member.metadata.labels.clone().unwrap();
    assert_eq!(labels[karmada::RESOURCE_BINDING_PERMANENT_ID_LABEL], rb_id);
    assert_eq!(labels[karmada::WORK_PERMANENT_ID_LABEL], work_id);
    assert_eq!(labels[karmada::MANAGED_BY_KARMADA_LABEL], "true");
    let annotations = member.metadata.annotations.clone().unwrap();
    assert_eq!(
        annotations[karmada::RESOURCE_BINDING_NAME_ANNOTATION],
        "cfg-configmap"
    );
    assert_eq!(
        annotations[karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION],
        "karmada-demo"
    );
    // A ConfigMap has no generation, on the host as in the members.
    let template = Api::<ConfigMap>::namespaced(env.client.clone(), "karmada-demo")
        .get("cfg")
        .await
        .unwrap();
    assert_eq!(template.metadata.generation, None);
    assert_eq!(member.metadata.generation, None);

    // The policy goes: the binding loses its claim and stays, with its Work.
    let policies: Api<kube::api::DynamicObject> = Api::namespaced_with(
        env.client.clone(),
        "karmada-demo",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
            "propagationpolicies",
        ),
    );
    policies
        .delete("keep", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the binding released", WAIT, || async {
        let rb = rbs.get("cfg-configmap").await.map_err(|e| e.to_string())?;
        let labels = rb.metadata.labels.unwrap_or_default();
        let annotations = rb.metadata.annotations.unwrap_or_default();
        let left: Vec<&String> = labels
            .keys()
            .chain(annotations.keys())
            .filter(|k| k.starts_with("propagationpolicy.karmada.io/"))
            .collect();
        if left.is_empty() {
            Ok(())
        } else {
            Err(format!("{left:?}"))
        }
    })
    .await;
    assert!(works.get_opt(&work_name).await.unwrap().is_some());

    // The template goes: with preserveResourcesOnDeletion the member keeps the object,
    // released from Karmada's management.
    Api::<ConfigMap>::namespaced(env.client.clone(), "karmada-demo")
        .delete("cfg", &DeleteParams::default())
        .await
        .unwrap();
    let m1: Api<ConfigMap> = Api::namespaced(env.member("member1").await, "karmada-demo");
    let released = eventually("the member object released", WAIT, || async {
        let cm = m1
            .get_opt("cfg")
            .await
            .map_err(|e| e.to_string())?
            .ok_or("deleted")?;
        let managed = cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(karmada::MANAGED_BY_KARMADA_LABEL));
        if managed {
            Err("still managed".to_string())
        } else {
            Ok(cm)
        }
    })
    .await;
    let labels = released.metadata.labels.unwrap_or_default();
    let annotations = released.metadata.annotations.unwrap_or_default();
    for key in labels.keys().chain(annotations.keys()) {
        // Karmada leaves the conflict-resolution annotation (not one it lists as managed).
        if key == karmada::CONFLICT_RESOLUTION_ANNOTATION {
            continue;
        }
        assert!(
            !key.starts_with("work.karmada.io/")
                && !key.starts_with("resourcetemplate.karmada.io/")
                && !key.starts_with("resourcebinding.karmada.io/"),
            "{key} left on a released object"
        );
    }
    assert_eq!(released.data.unwrap()["k"], "v");
    env.stop().await;
}

fn uuid_like(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_hexdigit())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_object_edited_by_hand_is_applied_again() {
    let env = Env::start().await;
    env.create_namespace("drift").await;
    let mut p = policy("pin", "Deployment", "apps/v1", json!({}));
    p["spec"]["placement"] = json!({"clusterAffinity": {"clusterNames": ["member1"]}});
    env.apply("drift", p).await;
    env.apply("drift", deployment("web", 2, "nginx:1")).await;
    let m1: Api<Deployment> = Api::namespaced(env.member("member1").await, "drift");
    let replicas = |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas);
    eventually("web in member1 with 2 replicas", WAIT, || async {
        let d = m1
            .get_opt("web")
            .await
            .map_err(|e| e.to_string())?
            .ok_or("absent")?;
        (replicas(&d) == Some(2))
            .then_some(())
            .ok_or(format!("{:?}", replicas(&d)))
    })
    .await;
    // Someone scales it by hand in the member (kubectl's field manager): it comes back.
    let edited = m1
        .patch(
            "web",
            &PatchParams {
                field_manager: Some("kubectl-edit".into()),
                ..Default::default()
            },
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(replicas(&edited), Some(7));
    eventually("the Work's replicas applied again", WAIT, || async {
        let d = m1.get("web").await.map_err(|e| e.to_string())?;
        (replicas(&d) == Some(2))
            .then_some(())
            .ok_or(format!("{:?}", replicas(&d)))
    })
    .await;
    env.stop().await;
}

/// The (reason, message) of the Events about `kind` `name` in `ns`, once every `wanted`
/// reason and every `messages` entry are among them.
async fn events_on(
    env: &Env,
    ns: &str,
    kind: &str,
    name: &str,
    wanted: &[&str],
    messages: &[String],
) -> Vec<(String, String)> {
    let events: Api<Event> = Api::namespaced(env.client.clone(), ns);
    eventually(&format!("{wanted:?} on {kind} {name}"), WAIT, || async {
        let list = events
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let seen: Vec<(String, String)> = list
            .items
            .iter()
            .filter(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.involved_object.kind.as_deref() == Some(kind)
            })
            .map(|e| {
                (
                    e.reason.clone().unwrap_or_default(),
                    e.message.clone().unwrap_or_default(),
                )
            })
            .collect();
        if wanted.iter().all(|r| seen.iter().any(|(x, _)| x == r))
            && messages.iter().all(|m| seen.iter().any(|(_, x)| x == m))
        {
            Ok(seen)
        } else {
            Err(format!("{seen:?}"))
        }
    })
    .await
}
