//! Merged reads in process, driven by kube-rs over TLS: a host with the aggregated server's
//! merged view installed in memory (as `local-up` wires it) and three simulated members
//! joined and marked Ready. Deployments are written straight into the members and as
//! templates on the host; the host's reads must show their merge:
//!
//! - a kube-rs reflector on the host's deployments stays equal to the truth computed from
//!   what was written (which names exist, which clusters hold each, whose copy is shown)
//!   through 500 random changes, with one member cut off and reconnected and another
//!   restarted midway;
//! - a watcher with the components' identity sees the templates only;
//! - a list paged with `limit` walks the whole merged set once, in order;
//! - per-cluster caches answer like the members, follow their changes, go with their
//!   cluster, and are counted on `/metrics`;
//! - a member that accepts connections and never answers is left out after the member
//!   timeout, named in a `Warning`;
//! - a merged read counts against the read limit of the server it entered (the host for its
//!   routes, the aggregated server for the search path), and past `max_inflight` fan-outs a
//!   merged read gets 429 by either way;
//! - in one process a merged read is one request: the aggregated server is not asked and the
//!   host does not read its own templates over HTTP;
//! - a template no member holds answers GET with its own numeric resourceVersion, and an
//!   update sent as client-go's typed clients send it (protobuf) after a merged GET, carrying
//!   the composite resourceVersion, is taken as its JSON twin is.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use flotilla_testwait::eventually;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use flotilla_aggregated::search::{HostTemplates, MergedReadOptions};
use flotilla_fanout::CLUSTERS_ANNOTATION;
use flotilla_host::merged_reads::{MergedReadsConfig, ReadTransport};
use flotilla_membersim::{MemberOptions, RunningMember};
use flotilla_testenv::client_for;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde_json::json;

const NAMES: usize = 12;
const GEN: &str = "test.flotilla.io/gen";

struct Fleet {
    dir: tempfile::TempDir,
    host: flotilla_host::RunningHost,
    aggregated: flotilla_aggregated::RunningAggregated,
    admin: kube::Client,
    components: kube::Client,
    members: Vec<(String, RunningMember, kube::Client)>,
}

impl Fleet {
    async fn start(count: usize) -> Fleet {
        Self::start_with(count, |_| {}).await
    }

    /// A fleet whose merged reads have the options `tweak` makes of the tests' defaults.
    async fn start_with(count: usize, tweak: impl FnOnce(&mut MergedReadOptions)) -> Fleet {
        let mut merged = MergedReadOptions {
            member_timeout: Duration::from_secs(2),
            ..MergedReadOptions::default()
        };
        tweak(&mut merged);
        flotilla_testenv::init_test_logging();
        let dir = tempfile::tempdir().unwrap();
        let mut opts = flotilla_host::HostOptions::new(dir.path().join("host"));
        opts.secure_port = 0;
        let host = flotilla_host::start(opts).await.unwrap();
        let admin = client_for(&host.kubeconfig, None).await.unwrap();
        let components = client_for(&host.components_kubeconfig, None).await.unwrap();
        let aggregated = flotilla_aggregated::start_registered(
            &components,
            &dir.path().join("host").join("pki"),
            dir.path().join("aggregated"),
            Some(merged),
            Some(Arc::new(HostTemplates::new(&host.server))),
            flotilla_etcd::StorageChoice::Embedded,
        )
        .await
        .unwrap();
        let store = aggregated.merged_store.clone().unwrap();
        let unknown = flotilla_host::merged_reads::install(
            &host.server,
            ReadTransport::InProcess(store),
            &MergedReadsConfig::default(),
        );
        assert!(unknown.is_empty(), "{unknown:?}");
        let mut members = Vec::new();
        for i in 1..=count {
            let name = format!("member{i}");
            let mut mo = MemberOptions::new(&name, dir.path().join(&name));
            mo.secure_port = 0;
            mo.nodes = 1;
            let member = flotilla_membersim::start(mo).await.unwrap();
            let join = flotilla_membership::Member::new(
                &name,
                member.url(),
                flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem),
            );
            flotilla_membership::join(&components, &join).await.unwrap();
            mark_ready(&components, &name).await;
            let client = client_for(&member.kubeconfig, None).await.unwrap();
            members.push((name, member, client));
        }
        Fleet {
            dir,
            host,
            aggregated,
            admin,
            components,
            members,
        }
    }

    async fn stop(self) {
        for (_, m, _) in self.members {
            m.stop().await;
        }
        self.aggregated.stop().await;
        self.host.stop().await;
    }
}

/// Marks a Cluster Ready (no cluster controller runs here).
async fn mark_ready(client: &kube::Client, name: &str) {
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(client.clone());
    let status = json!({"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "ClusterReady",
        "message": "marked by the test", "lastTransitionTime": "2026-01-01T00:00:00Z",
    }]}});
    clusters
        .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
        .await
        .unwrap();
}

fn deployment(name: &str, generation: u64) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "annotations": {GEN: generation.to_string()}},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

/// What was written: per name, the template's generation and each member's.
#[derive(Default, Debug)]
struct Truth {
    templates: BTreeMap<String, u64>,
    members: BTreeMap<String, BTreeMap<String, u64>>,
}

/// What a merged item must look like: the clusters holding it and the generation shown
/// (the template's, else the first cluster's copy).
type Expected = BTreeMap<String, (BTreeSet<String>, u64)>;

impl Truth {
    fn expected(&self) -> Expected {
        let mut names: BTreeSet<&String> = self.templates.keys().collect();
        for held in self.members.values() {
            names.extend(held.keys());
        }
        names
            .into_iter()
            .map(|name| {
                let holders: BTreeMap<&String, u64> = self
                    .members
                    .iter()
                    .filter_map(|(c, held)| held.get(name).map(|g| (c, *g)))
                    .collect();
                let shown = match self.templates.get(name) {
                    Some(g) => *g,
                    None => *holders.values().next().unwrap(),
                };
                (
                    name.clone(),
                    (holders.keys().map(|c| c.to_string()).collect(), shown),
                )
            })
            .collect()
    }
}

fn observed(items: &[std::sync::Arc<Deployment>]) -> Expected {
    items
        .iter()
        .map(|d| {
            let annotations = d.metadata.annotations.clone().unwrap_or_default();
            let clusters = annotations
                .get(CLUSTERS_ANNOTATION)
                .map(|v| {
                    v.split(',')
                        .map(|c| c.split('(').next().unwrap_or_default().to_string())
                        .collect()
                })
                .unwrap_or_default();
            let generation = annotations
                .get(GEN)
                .and_then(|g| g.parse().ok())
                .unwrap_or(u64::MAX);
            (d.metadata.name.clone().unwrap(), (clusters, generation))
        })
        .collect()
}

/// A small deterministic generator (no dependency needed for this).
struct Rng(u64);

impl Rng {
    fn next(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }
}

/// Creates Deployment `name` in member `index` and records it.
async fn create_in(fleet: &Fleet, truth: &mut Truth, index: usize, name: &str, generation: u64) {
    let (cluster, _, client) = &fleet.members[index];
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &deployment(name, generation))
        .await
        .unwrap();
    truth
        .members
        .get_mut(cluster)
        .unwrap()
        .insert(name.to_string(), generation);
}

/// Waits (bounded) until the reflector's store shows `want`.
async fn converge(store: &reflector::Store<Deployment>, want: &Expected, step: usize) {
    let what = format!("the merged view after step {step}");
    eventually(&what, Duration::from_secs(30), || async {
        let got = observed(&store.state());
        if &got == want {
            Ok(())
        } else {
            Err(format!("it differs:\n want {want:?}\n got  {got:?}"))
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reflector_on_merged_deployments_follows_500_random_changes_and_a_member_cut_off() {
    let mut fleet = Fleet::start(3).await;
    let host: Api<Deployment> = Api::namespaced(fleet.admin.clone(), "default");
    let (store, writer) = reflector::store();
    let stream = reflector(writer, watcher(host.clone(), watcher::Config::default()))
        .applied_objects()
        .for_each(|_| async {});
    let reflecting = tokio::spawn(stream);

    let mut truth = Truth::default();
    for (name, _, _) in &fleet.members {
        truth.members.insert(name.clone(), BTreeMap::new());
    }
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut generation = 0u64;
    for step in 1..=500 {
        generation += 1;
        let name = format!("d{}", rng.next(NAMES));
        let target = rng.next(fleet.members.len() + 1);
        let (api, held) = if target == fleet.members.len() {
            (host.clone(), &mut truth.templates)
        } else {
            let (cluster, _, client) = &fleet.members[target];
            (
                Api::<Deployment>::namespaced(client.clone(), "default"),
                truth.members.get_mut(cluster).unwrap(),
            )
        };
        let exists = held.contains_key(&name);
        if exists && rng.next(3) == 0 {
            api.delete(&name, &DeleteParams::default()).await.unwrap();
            held.remove(&name);
        } else {
            if exists {
                let patch = json!({"metadata": {"annotations": {GEN: generation.to_string()}}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .unwrap();
            } else {
                api.create(&PostParams::default(), &deployment(&name, generation))
                    .await
                    .unwrap();
            }
            held.insert(name, generation);
        }
        if step == 250 {
            // member2 drops off the network (every watch on it breaks): the merged watch goes
            // on with the others, keeps member2's objects (it is still Ready), and picks up
            // member2's changes once it is back, without the client relisting.
            converge(&store, &truth.expected(), step).await;
            let (_, member, _) = &fleet.members[1];
            member.set_reachable(false).await.unwrap();
            generation += 1;
            create_in(&fleet, &mut truth, 0, "away", generation).await;
            converge(&store, &truth.expected(), step).await;
            fleet.members[1].1.set_reachable(true).await.unwrap();
            generation += 1;
            create_in(&fleet, &mut truth, 1, "back", generation).await;
            converge(&store, &truth.expected(), step).await;
            // member3 restarts: stopped, then started again on its data directory and port;
            // its objects and versions survive, and its watches are opened again.
            let (name, member, _) = fleet.members.remove(2);
            let port = member.addr.port();
            member.stop().await;
            let mut mo = MemberOptions::new(&name, fleet.dir.path().join(&name));
            mo.secure_port = port;
            mo.nodes = 1;
            let member = flotilla_membersim::start(mo).await.unwrap();
            let client = client_for(&member.kubeconfig, None).await.unwrap();
            fleet.members.insert(2, (name, member, client));
            generation += 1;
            create_in(&fleet, &mut truth, 2, "restarted", generation).await;
            converge(&store, &truth.expected(), step).await;
        }
        if step % 50 == 0 {
            converge(&store, &truth.expected(), step).await;
        }
    }
    converge(&store, &truth.expected(), 500).await;
    reflecting.abort();
    fleet.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_read_templates_and_limit_pages_walk_the_merged_set() {
    let fleet = Fleet::start(2).await;
    let templates: Api<Deployment> = Api::namespaced(fleet.admin.clone(), "default");
    templates
        .create(&PostParams::default(), &deployment("shared", 1))
        .await
        .unwrap();
    for (i, (_, _, client)) in fleet.members.iter().enumerate() {
        let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
        api.create(&PostParams::default(), &deployment("shared", 2))
            .await
            .unwrap();
        for j in 0..3 {
            api.create(
                &PostParams::default(),
                &deployment(&format!("only-m{}-{j}", i + 1), 3),
            )
            .await
            .unwrap();
        }
    }
    // The merged set: shared + 3 member-only objects per member.
    let mut names = Vec::new();
    let mut params = ListParams::default().limit(2);
    loop {
        let page = templates.list(&params).await.unwrap();
        names.extend(page.items.iter().map(|d| d.metadata.name.clone().unwrap()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => break,
        }
    }
    let mut want = vec!["shared".to_string()];
    for m in 1..=2 {
        for j in 0..3 {
            want.push(format!("only-m{m}-{j}"));
        }
    }
    want.sort();
    assert_eq!(names, want, "pages of 2 walk the merged set once, in order");

    // The components' identity reads the template store: one object, a plain version.
    let as_component: Api<Deployment> = Api::namespaced(fleet.components.clone(), "default");
    let listed = as_component.list(&ListParams::default()).await.unwrap();
    let listed_names: Vec<_> = listed
        .items
        .iter()
        .map(|d| d.metadata.name.clone().unwrap())
        .collect();
    assert_eq!(listed_names, ["shared"]);
    let template = &listed.items[0];
    assert!(
        template
            .metadata
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key(CLUSTERS_ANNOTATION))
    );
    let rv = template.metadata.resource_version.clone().unwrap();
    assert!(rv.parse::<u64>().is_ok(), "a template's own version: {rv}");
    let mut events = as_component
        .watch(
            &kube::api::WatchParams::default(),
            &listed.metadata.resource_version.unwrap(),
        )
        .await
        .unwrap()
        .boxed();
    templates
        .patch(
            "shared",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"seen": "yes"}}})),
        )
        .await
        .unwrap();
    let event = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    match event {
        kube::api::WatchEvent::Modified(d) => {
            assert_eq!(d.metadata.name.as_deref(), Some("shared"));
            assert!(
                d.metadata
                    .annotations
                    .as_ref()
                    .is_none_or(|a| !a.contains_key(CLUSTERS_ANNOTATION)),
                "a component's watch carries templates, not merged objects"
            );
        }
        other => panic!("expected the template's change, got {other:?}"),
    }

    // A merged object read and written back reaches the template only.
    let merged = templates.get("shared").await.unwrap();
    assert!(
        merged
            .metadata
            .resource_version
            .as_deref()
            .is_some_and(|rv| rv.starts_with("f1."))
    );
    let mut edited = merged.clone();
    edited
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert("edited".into(), "yes".into());
    templates
        .replace("shared", &PostParams::default(), &edited)
        .await
        .unwrap();
    let stored = as_component.get("shared").await.unwrap();
    assert_eq!(
        stored
            .metadata
            .labels
            .unwrap()
            .get("edited")
            .map(String::as_str),
        Some("yes")
    );
    assert!(
        !stored
            .metadata
            .annotations
            .unwrap_or_default()
            .contains_key(CLUSTERS_ANNOTATION),
        "the merge's annotation never lands in the template"
    );

    // A delete whose precondition is a merged read's version is checked against the
    // template's own revision: a stale one conflicts, the current one deletes.
    let stale = merged.metadata.resource_version.clone().unwrap();
    let stale_delete = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: Some(stale),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    let refused = templates.delete("shared", &stale_delete).await.unwrap_err();
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 409),
        "{refused:?}"
    );
    let current = templates.get("shared").await.unwrap();
    let delete = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            resource_version: current.metadata.resource_version.clone(),
            uid: None,
        }),
        ..DeleteParams::default()
    };
    templates.delete("shared", &delete).await.unwrap();
    assert!(as_component.get_opt("shared").await.unwrap().is_none());
    fleet.stop().await;
}

/// The aggregated server's `/metrics` text.
async fn metrics(fleet: &Fleet) -> String {
    metrics_of(&fleet.aggregated.server).await
}

/// A server's `/metrics` text.
async fn metrics_of(server: &flotilla_apiserver::ApiServer) -> String {
    use http_body_util::BodyExt;
    let resp = server.metrics.render();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// The requests a server counted for `verb` of `resource`, every code.
fn requests(text: &str, verb: &str, resource: &str) -> u64 {
    let (verb, resource) = (
        format!("verb=\"{verb}\""),
        format!("resource=\"{resource}\""),
    );
    text.lines()
        .filter(|l| l.starts_with("apiserver_request_total{"))
        .filter(|l| l.contains(&verb) && l.contains(&resource))
        .filter_map(|l| l.split_whitespace().last()?.parse::<u64>().ok())
        .sum()
}

/// In one process a merged read is one request: the host's. The aggregated server serves no
/// search-proxy request for it and the host no second read of its templates; the answer is
/// still the merged one (the members' objects, the template's status, CLUSTERS in the Table).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merged_read_in_one_process_is_one_request() {
    let fleet = Fleet::start(2).await;
    let templates: Api<Deployment> = Api::namespaced(fleet.admin.clone(), "default");
    templates
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .unwrap();
    for (_, _, client) in &fleet.members {
        let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
        api.create(&PostParams::default(), &deployment("web", 2))
            .await
            .unwrap();
    }
    let host_before = metrics_of(&fleet.host.server).await;
    let aggregated_before = metrics(&fleet).await;

    let listed = templates.list(&ListParams::default()).await.unwrap();
    let got = templates.get("web").await.unwrap();
    let table = {
        let req = http::Request::get("/apis/apps/v1/namespaces/default/deployments")
            .header(
                "Accept",
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            )
            .body(Vec::new())
            .unwrap();
        let text = fleet.admin.request_text(req).await.unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()
    };

    let clusters = got
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CLUSTERS_ANNOTATION))
        .cloned()
        .unwrap_or_default();
    assert!(
        clusters.contains("member1") && clusters.contains("member2"),
        "the GET is the merged object: {clusters:?}"
    );
    assert!(
        flotilla_fanout::CompositeVersion::is_composite(
            listed
                .metadata
                .resource_version
                .as_deref()
                .unwrap_or_default()
        ),
        "the LIST is the merged list: {:?}",
        listed.metadata.resource_version
    );
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert!(columns.contains(&"Clusters"), "{columns:?}");

    let host_after = metrics_of(&fleet.host.server).await;
    let aggregated_after = metrics(&fleet).await;
    assert_eq!(
        requests(&host_after, "list", "deployments")
            - requests(&host_before, "list", "deployments"),
        2,
        "the host counted the two LISTs it was sent, and no template read of its own"
    );
    assert_eq!(
        requests(&host_after, "get", "deployments") - requests(&host_before, "get", "deployments"),
        1,
        "the host counted the GET it was sent, and no template read of its own"
    );
    for verb in ["get", "list"] {
        assert_eq!(
            requests(&aggregated_after, verb, "proxying/proxy"),
            requests(&aggregated_before, verb, "proxying/proxy"),
            "the aggregated server was not asked ({verb})"
        );
    }
    // The counter the last assertion reads does count the search path's requests.
    let (code, _) = merged_list(
        &fleet.admin,
        "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy/apis/apps/v1/deployments",
    )
    .await;
    assert_eq!(code, 200);
    let aggregated_searched = metrics(&fleet).await;
    assert_eq!(
        requests(&aggregated_searched, "get", "proxying/proxy")
            + requests(&aggregated_searched, "list", "proxying/proxy"),
        requests(&aggregated_after, "get", "proxying/proxy")
            + requests(&aggregated_after, "list", "proxying/proxy")
            + 1,
        "a request on the search path is counted: {aggregated_searched}"
    );
    fleet.stop().await;
}

fn gauge(text: &str, name: &str) -> Option<i64> {
    text.lines()
        .find(|l| l.starts_with(name) && l[name.len()..].starts_with(' '))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_lists_follow_the_members_and_are_reported_in_metrics() {
    let fleet = Fleet::start(2).await;
    let host: Api<Deployment> = Api::all(fleet.admin.clone());
    let mut want = BTreeMap::new();
    for (cluster, _, client) in &fleet.members {
        let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
        for j in 0..5 {
            let name = format!("{cluster}-{j}");
            api.create(&PostParams::default(), &deployment(&name, 1))
                .await
                .unwrap();
            want.insert(name, cluster.clone());
        }
    }
    let names = |list: &kube::core::ObjectList<Deployment>| -> BTreeMap<String, String> {
        list.items
            .iter()
            .map(|d| {
                let labels = d.metadata.labels.clone().unwrap_or_default();
                (
                    d.metadata.name.clone().unwrap(),
                    labels
                        .get(flotilla_names::karmada::CLUSTER_NAME_LABEL)
                        .cloned()
                        .unwrap_or_default(),
                )
            })
            .collect()
    };
    // The first read starts one cache per member; wait until both hold their objects.
    assert_eq!(
        names(&host.list(&ListParams::default()).await.unwrap()),
        want
    );
    let text = eventually("the caches to fill", Duration::from_secs(20), || async {
        let text = metrics(&fleet).await;
        if gauge(&text, "flotilla_merged_read_caches") == Some(2)
            && gauge(&text, "flotilla_merged_read_cache_objects") == Some(10)
        {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await;
    assert!(gauge(&text, "flotilla_merged_read_cache_bytes").unwrap_or(0) > 0);
    // Served from the caches now: the same answer, and changes in a member show up.
    assert_eq!(
        names(&host.list(&ListParams::default()).await.unwrap()),
        want
    );
    let (cluster, _, client) = &fleet.members[0];
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.delete(&format!("{cluster}-0"), &DeleteParams::default())
        .await
        .unwrap();
    api.create(&PostParams::default(), &deployment("late", 1))
        .await
        .unwrap();
    want.remove(&format!("{cluster}-0"));
    want.insert("late".into(), cluster.clone());
    eventually(
        "the cached list to show the member's changes",
        Duration::from_secs(20),
        || async {
            let got = names(&host.list(&ListParams::default()).await.unwrap());
            if got == want {
                Ok(())
            } else {
                Err(format!("{got:?}"))
            }
        },
    )
    .await;
    // A selector and a GET through the caches.
    let only = host
        .list(&ListParams::default().labels(&format!(
            "{}={cluster}",
            flotilla_names::karmada::CLUSTER_NAME_LABEL
        )))
        .await
        .unwrap();
    assert_eq!(only.items.len(), 5);
    let one: Api<Deployment> = Api::namespaced(fleet.admin.clone(), "default");
    assert!(one.get("late").await.is_ok());
    assert!(one.get(&format!("{cluster}-0")).await.is_err());
    // A cluster that is no longer Ready loses its cache.
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(fleet.components.clone());
    clusters
        .patch_status(
            cluster,
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{
                "type": "Ready", "status": "False", "reason": "ClusterNotReachable",
                "message": "marked by the test", "lastTransitionTime": "2026-01-01T00:00:00Z",
            }]}})),
        )
        .await
        .unwrap();
    let listed = host.list(&ListParams::default()).await.unwrap();
    assert!(names(&listed).values().all(|c| c != cluster));
    let text = metrics(&fleet).await;
    assert_eq!(
        gauge(&text, "flotilla_merged_read_caches"),
        Some(1),
        "{text}"
    );
    assert_eq!(
        gauge(&text, "flotilla_merged_read_cache_objects"),
        Some(5),
        "{text}"
    );
    fleet.stop().await;
}

/// Joins a Ready member `silent` that accepts connections and never says a word (not even
/// TLS); dropping the handle's task ends it.
async fn join_silent_member(fleet: &Fleet) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let (_, member, _) = &fleet.members[0];
    let join = flotilla_membership::Member::new(
        "silent",
        format!("https://{addr}"),
        flotilla_membership::MemberCredentials::token(&member.token, &member.ca_pem),
    );
    flotilla_membership::join(&fleet.components, &join)
        .await
        .unwrap();
    mark_ready(&fleet.components, "silent").await;
    silent
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_never_answers_is_left_out_within_the_timeout_with_a_warning() {
    let fleet = Fleet::start(1).await;
    let silent = join_silent_member(&fleet).await;
    let (_, _, client) = &fleet.members[0];
    let api: Api<Deployment> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &deployment("here", 1))
        .await
        .unwrap();

    let req = http::Request::get("/apis/apps/v1/deployments")
        .body(Vec::new())
        .unwrap();
    // Without the member timeout this would wait for the silent member forever.
    let resp = tokio::time::timeout(
        Duration::from_secs(60),
        fleet.admin.send(req.map(kube::client::Body::from)),
    )
    .await
    .expect("the list waited for a member that never answers")
    .unwrap();
    assert_eq!(resp.status(), 200);
    let warnings: Vec<String> = resp
        .headers()
        .get_all(http::header::WARNING)
        .iter()
        .map(|v| v.to_str().unwrap().to_string())
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("silent") && w.contains("missing from this answer")),
        "{warnings:?}"
    );
    use http_body_util::BodyExt;
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let list: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["here"], "the other member's items are there");
    silent.abort();
    fleet.stop().await;
}

/// A client of the host acting as `alice` (the admin impersonating her, with cluster-admin
/// rights), without kube-rs's retries of 429: the admin's own group is never limited.
async fn as_alice(fleet: &Fleet) -> kube::Client {
    let crb = json!({
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
    });
    Api::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>::all(fleet.admin.clone())
        .create(
            &PostParams::default(),
            &serde_json::from_value(crb).unwrap(),
        )
        .await
        .unwrap();
    flotilla_testenv::client_as(&fleet.host.kubeconfig, "alice", &["developers"], false)
        .await
        .unwrap()
}

/// A merged list of deployments through `path` as `client`: its status and Retry-After.
async fn merged_list(client: &kube::Client, path: &str) -> (u16, Option<String>) {
    let req = http::Request::get(path).body(Vec::new()).unwrap();
    let resp = tokio::time::timeout(
        Duration::from_secs(60),
        client.send(req.map(kube::client::Body::from)),
    )
    .await
    .expect("a merged list hung")
    .unwrap();
    let retry_after = resp
        .headers()
        .get(http::header::RETRY_AFTER)
        .map(|v| v.to_str().unwrap().to_string());
    (resp.status().as_u16(), retry_after)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_reads_count_against_the_read_limit_where_they_enter_and_past_the_fan_out_bound_get_429()
 {
    const FAN_OUTS: usize = 2;
    // Reads held by the silent member until this timeout: long enough for the test's steps.
    let fleet = Fleet::start_with(1, |o| {
        o.max_inflight = FAN_OUTS;
        o.member_timeout = Duration::from_secs(15);
    })
    .await;
    let alice = as_alice(&fleet).await;
    let routed = "/apis/apps/v1/namespaces/default/deployments";
    let search = format!(
        "{}{routed}",
        flotilla_names::merged_reads::SEARCH_PROXY_PREFIX
    );
    assert_eq!(merged_list(&alice, routed).await.0, 200);
    assert_eq!(merged_list(&alice, &search).await.0, 200);

    // Every read place of the aggregated server taken: the search path is refused there; a
    // read the host routes is counted where it entered, by the host, and is answered.
    let aggregated = fleet.aggregated.server.clone();
    let held: Vec<_> = (0..aggregated.config.max_requests_inflight)
        .map(|_| {
            aggregated
                .inflight
                .admit(flotilla_apiserver::inflight::Class::ReadOnly)
                .unwrap()
        })
        .collect();
    let (code, retry_after) = merged_list(&alice, &search).await;
    assert_eq!((code, retry_after.as_deref()), (429, Some("1")), "{search}");
    assert_eq!(merged_list(&alice, routed).await.0, 200, "{routed}");
    drop(held);
    // Every read place of the host taken: the read it routes is refused.
    let host = fleet.host.server.clone();
    let held: Vec<_> = (0..host.config.max_requests_inflight)
        .map(|_| {
            host.inflight
                .admit(flotilla_apiserver::inflight::Class::ReadOnly)
                .unwrap()
        })
        .collect();
    let (code, retry_after) = merged_list(&alice, routed).await;
    assert_eq!((code, retry_after.as_deref()), (429, Some("1")), "{routed}");
    drop(held);

    // FAN_OUTS reads wait for a member that never answers; the next one is refused at once.
    let silent = join_silent_member(&fleet).await;
    let slow: Vec<_> = (0..FAN_OUTS)
        .map(|_| {
            let alice = alice.clone();
            tokio::spawn(async move { merged_list(&alice, routed).await })
        })
        .collect();
    eventually(
        "the slow reads to start",
        Duration::from_secs(30),
        || async {
            gauge(&metrics(&fleet).await, "flotilla_merged_reads_inflight") == Some(FAN_OUTS as i64)
        },
    )
    .await;
    for path in [routed, search.as_str()] {
        let (code, retry_after) = merged_list(&alice, path).await;
        assert_eq!((code, retry_after.as_deref()), (429, Some("1")), "{path}");
    }
    // The silent member goes away: the slow ones are answered without it, and the places
    // are free again.
    silent.abort();
    for read in slow {
        assert_eq!(read.await.unwrap().0, 200);
    }
    assert_eq!(merged_list(&alice, routed).await.0, 200);
    fleet.stop().await;
}

/// A Deployment as client-go's typed clients send it: `k8s\0`, then a runtime.Unknown holding
/// the protobuf message.
fn protobuf_deployment(name: &str, resource_version: &str, label: &str) -> Vec<u8> {
    use k8s_pb::api::apps::v1 as apps;
    use k8s_pb::api::core::v1 as core;
    use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    use prost::Message;
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    let deployment = apps::Deployment {
        metadata: Some(meta::ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            resource_version: Some(resource_version.into()),
            labels: BTreeMap::from([("via".to_string(), label.to_string())]),
            ..Default::default()
        }),
        spec: Some(apps::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: labels.clone(),
                ..Default::default()
            }),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels,
                    ..Default::default()
                }),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: Some("c".into()),
                        image: Some("nginx".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some("apps/v1".into()),
            kind: Some("Deployment".into()),
        }),
        raw: Some(deployment.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [b"k8s\0".to_vec(), unknown.encode_to_vec()].concat()
}

#[tokio::test]
async fn protobuf_updates_after_a_merged_get_carry_the_composite_version() {
    let fleet = Fleet::start(1).await;
    let templates: Api<Deployment> = Api::namespaced(fleet.admin.clone(), "default");
    templates
        .create(&PostParams::default(), &deployment("pb", 1))
        .await
        .unwrap();
    // No member holds it: the template answers, with its own version.
    let alone = templates.get("pb").await.unwrap();
    let own = alone.metadata.resource_version.clone().unwrap();
    assert!(
        own.parse::<u64>().is_ok(),
        "a template's own version: {own}"
    );

    let (_, _, member) = &fleet.members[0];
    Api::<Deployment>::namespaced(member.clone(), "default")
        .create(&PostParams::default(), &deployment("pb", 2))
        .await
        .unwrap();
    let composite = eventually("the merged GET", Duration::from_secs(20), || async {
        let got = templates.get("pb").await.map_err(|e| e.to_string())?;
        let rv = got.metadata.resource_version.unwrap_or_default();
        if flotilla_fanout::CompositeVersion::is_composite(&rv) {
            Ok(rv)
        } else {
            Err(format!("resourceVersion {rv}"))
        }
    })
    .await;

    let put = |rv: &str, label: &str| {
        http::Request::put("/apis/apps/v1/namespaces/default/deployments/pb")
            .header("Content-Type", "application/vnd.kubernetes.protobuf")
            .header("Accept", "application/json")
            .body(protobuf_deployment("pb", rv, label))
            .unwrap()
    };
    let text = fleet
        .admin
        .request_text(put(&composite, "protobuf"))
        .await
        .expect("the protobuf update with the composite version is taken");
    let written: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(written["metadata"]["labels"]["via"], "protobuf");
    assert!(
        written["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| rv.parse::<u64>().is_ok()),
        "the write answers with the template's own version: {written}"
    );
    // The stored template took it; the member's copy is untouched by the write.
    let stored = Api::<Deployment>::namespaced(fleet.components.clone(), "default")
        .get("pb")
        .await
        .unwrap();
    assert_eq!(stored.metadata.labels.unwrap()["via"], "protobuf");
    // The same composite version again is stale now: a conflict, as for JSON.
    let stale = fleet
        .admin
        .request_text(put(&composite, "again"))
        .await
        .expect_err("a stale composite version conflicts");
    assert!(
        matches!(&stale, kube::Error::Api(s) if s.code == 409),
        "{stale:?}"
    );
    fleet.stop().await;
}
