//! Karmada's kinds through the real host, over TLS with the admin client certificate: every
//! sample manifest of `crates/karmada-api/tests/samples` whose kind is one of the installed CRDs
//! (all of Karmada's, with the fields Karmada added lately) is applied with server-side
//! apply and `fieldValidation=Strict`, its status written through the status subresource
//! where it has one, and read back with every field intact; the same files go through
//! `kubectl apply` (client-side, strict by default), as a Karmada user would send them.

// Helpers outside #[test] functions unwrap too: a failed call is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::GroupVersionKind;
use serde_json::{Value, json};

const MANAGER: &str = "karmada-samples";

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../karmada-api/tests/samples")
}

/// The samples whose kind is an installed CRD: (file name, object).
fn crd_samples() -> Vec<(String, Value)> {
    let kinds: Vec<String> = flotilla_karmada_api::crds()
        .into_iter()
        .map(|c| c.spec.names.kind)
        .collect();
    let mut files: Vec<PathBuf> = std::fs::read_dir(samples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .filter_map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let object: Value = serde_norway::from_str(&text).unwrap();
            let kind = object["kind"].as_str().unwrap().to_owned();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            kinds.contains(&kind).then_some((name, object))
        })
        .collect()
}

/// The API resource of an installed CRD kind, and whether it is namespaced.
fn resource_of(kind: &str) -> (ApiResource, bool) {
    let crd = flotilla_karmada_api::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap();
    let version = crd.spec.versions.iter().find(|v| v.storage).unwrap();
    let gvk = GroupVersionKind::gvk(&crd.spec.group, &version.name, kind);
    (
        ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural),
        crd.spec.scope == "Namespaced",
    )
}

fn api_for(client: &kube::Client, object: &Value) -> Api<DynamicObject> {
    let (resource, namespaced) = resource_of(object["kind"].as_str().unwrap());
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) if namespaced => Api::namespaced_with(client.clone(), ns, &resource),
        _ => Api::all_with(client.clone(), &resource),
    }
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().unwrap()
}

/// Where `want` is not contained in `got` (objects: every key of `want`; arrays: same length,
/// element by element; scalars: equal). Extra keys in `got` (server defaults) are fine.
fn missing(want: &Value, got: &Value, path: &str, out: &mut Vec<String>) {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, v) in w {
                let sub = format!("{path}.{k}");
                match g.get(k) {
                    Some(gv) => missing(v, gv, &sub, out),
                    None => out.push(format!("{sub}: absent")),
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                missing(wv, gv, &format!("{path}[{i}]"), out);
            }
        }
        _ if want == got => {}
        _ => out.push(format!("{path}: sent {want}, stored {got}")),
    }
}

/// Waits until every installed CRD kind can be listed.
async fn wait_served(client: &kube::Client) {
    for crd in flotilla_karmada_api::crds() {
        let (resource, _) = resource_of(&crd.spec.names.kind);
        let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
        eventually(
            &format!("{} served", crd.spec.names.plural),
            Duration::from_secs(60),
            || async {
                api.list(&Default::default())
                    .await
                    .map(drop)
                    .map_err(|e| e.to_string())
            },
        )
        .await;
    }
}

async fn create_namespaces(client: &kube::Client, samples: &[(String, Value)]) {
    let api: Api<Namespace> = Api::all(client.clone());
    let mut names: Vec<&str> = samples
        .iter()
        .filter_map(|(_, o)| o.pointer("/metadata/namespace").and_then(Value::as_str))
        .filter(|ns| *ns != "default")
        .collect();
    names.sort_unstable();
    names.dedup();
    for name in names {
        let mut ns = Namespace::default();
        ns.metadata.name = Some(name.into());
        match api.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("creating namespace {name}: {e}"),
        }
    }
}

fn strict_apply() -> PatchParams {
    PatchParams::apply(MANAGER).validation_strict()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn karmada_samples_are_applied_strictly_and_stored_with_every_field() {
    let t = common::start().await;
    let client = t.client.clone();
    wait_served(&client).await;
    let samples = crd_samples();
    // Every Karmada CRD kind has a sample.
    let mut kinds: Vec<&str> = samples
        .iter()
        .map(|(_, o)| o["kind"].as_str().unwrap())
        .collect();
    kinds.sort_unstable();
    kinds.dedup();
    assert_eq!(
        kinds.len(),
        flotilla_karmada_api::crds().len(),
        "kinds: {kinds:?}"
    );
    create_namespaces(&client, &samples).await;

    for (file, object) in &samples {
        let api = api_for(&client, object);
        let name = name_of(object);
        let mut body = object.clone();
        let status = body.as_object_mut().unwrap().remove("status");
        body["metadata"]
            .as_object_mut()
            .unwrap()
            .retain(|k, _| k == "name" || k == "namespace");
        api.patch(name, &strict_apply(), &Patch::Apply(&body))
            .await
            .unwrap_or_else(|e| panic!("{file}: server-side apply refused: {e}"));
        let stored = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
        let mut problems = Vec::new();
        missing(&body, &stored, "", &mut problems);
        assert!(
            problems.is_empty(),
            "{file}: stored differently: {problems:#?}"
        );

        if let Some(status) = status {
            let patch = json!({
                "apiVersion": object["apiVersion"], "kind": object["kind"],
                "metadata": body["metadata"], "status": status,
            });
            api.patch_status(name, &strict_apply(), &Patch::Apply(&patch))
                .await
                .unwrap_or_else(|e| panic!("{file}: status apply refused: {e}"));
            let stored = serde_json::to_value(api.get(name).await.unwrap()).unwrap();
            let mut problems = Vec::new();
            missing(&status, &stored["status"], ".status", &mut problems);
            assert!(
                problems.is_empty(),
                "{file}: status stored differently: {problems:#?}"
            );
            // The spec is untouched by the status write.
            missing(&body["spec"], &stored["spec"], ".spec", &mut problems);
            assert!(problems.is_empty(), "{file}: spec changed: {problems:#?}");
        }
    }

    // The fields issue 11 names, read back typed.
    let pp: Api<flotilla_karmada_api::PropagationPolicy> = Api::namespaced(client.clone(), "ml");
    let pp = pp.get("training-jobs").await.unwrap();
    assert_eq!(pp.spec.association, Some(true));
    assert_eq!(
        pp.spec.schedule_priority.unwrap().priority_class_name,
        "training-high"
    );
    let placement = pp.spec.placement.unwrap();
    assert_eq!(placement.cluster_affinities[0].overflow_affinities.len(), 2);
    assert!(placement.workload_affinity.unwrap().anti_affinity.is_some());
    // Server defaults still apply around them.
    assert_eq!(pp.spec.priority, Some(0));
    let rb: Api<flotilla_karmada_api::ResourceBinding> =
        Api::namespaced(client.clone(), "streaming");
    let rb = rb.get("word-count-flinkdeployment").await.unwrap();
    assert_eq!(rb.spec.components.len(), 2);
    assert_eq!(rb.spec.clusters[0].components.len(), 2);
    assert_eq!(rb.spec.schedule_priority.unwrap().priority, Some(1000));
    assert!(rb.spec.workload_affinity_groups.is_some());
    let hpa: Api<flotilla_karmada_api::FederatedHPA> = Api::namespaced(client.clone(), "default");
    let hpa = hpa.get("nginx").await.unwrap();
    assert_eq!(hpa.status.unwrap().desired_replicas, 4);

    // Strict validation is on: a field Karmada does not have is refused, and nothing stored.
    let mut bogus = samples
        .iter()
        .find(|(f, _)| f == "propagationpolicy-newer-fields.yaml")
        .unwrap()
        .1
        .clone();
    bogus["metadata"] = json!({"name": "bogus", "namespace": "ml"});
    bogus["spec"]["placement"]["workloadAffinity"]["preferredAffinity"] = json!({});
    let api = api_for(&client, &bogus);
    match api
        .patch("bogus", &strict_apply(), &Patch::Apply(&bogus))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert!(s.code == 400 || s.code == 422, "{s:?}");
            assert!(s.message.contains("preferredAffinity"), "{}", s.message);
        }
        other => panic!("an unknown field was accepted under strict validation: {other:?}"),
    }
    assert!(api.get_opt("bogus").await.unwrap().is_none());
}

// === kubectl ===

async fn kubectl(kubeconfig: &Path, cache: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = tokio::process::Command::new("kubectl");
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish within 120 s"))
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_accepts_karmada_manifests_with_the_newer_fields() {
    let t = common::start().await;
    wait_served(&t.client).await;
    let samples = crd_samples();
    create_namespaces(&t.client, &samples).await;
    let cache = tempfile::tempdir().unwrap();
    let kubeconfig = t.host.kubeconfig.clone();
    let mut args = vec!["apply".to_owned()];
    for (file, _) in &samples {
        args.push("-f".into());
        args.push(samples_dir().join(file).to_string_lossy().into_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (ok, stdout, stderr) = kubectl(&kubeconfig, cache.path(), &args).await;
    assert!(
        ok,
        "kubectl apply failed:\nstdout: {stdout}\nstderr: {stderr}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.ends_with(" created")).count(),
        samples.len(),
        "{stdout}"
    );
    assert!(!stderr.contains("unknown field"), "{stderr}");

    let (ok, stdout, stderr) = kubectl(
        &kubeconfig,
        cache.path(),
        &["get", "pp", "training-jobs", "-n", "ml", "-o", "json"],
    )
    .await;
    assert!(ok, "{stderr}");
    let pp: Value = serde_json::from_str(&stdout).unwrap();
    let placement = &pp["spec"]["placement"];
    assert_eq!(
        placement["workloadAffinity"]["affinity"]["groupByLabelKey"],
        "training.example.com/group"
    );
    assert_eq!(
        placement["clusterAffinities"][0]["overflowAffinities"][1]["exclude"],
        json!(["member4"])
    );
    assert_eq!(
        pp["spec"]["schedulePriority"]["priorityClassSource"],
        "KubePriorityClass"
    );
    assert_eq!(pp["spec"]["association"], true);

    // Short names and the printer columns of the new kinds work as with Karmada.
    let (ok, stdout, stderr) =
        kubectl(&kubeconfig, cache.path(), &["get", "fhpa", "-n", "default"]).await;
    assert!(ok, "{stderr}");
    let header: Vec<&str> = stdout.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "REFERENCE-KIND",
            "REFERENCE-NAME",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    assert!(
        stdout.contains("nginx") && stdout.contains("Deployment"),
        "{stdout}"
    );
    let (ok, stdout, stderr) = kubectl(&kubeconfig, cache.path(), &["get", "ric"]).await;
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("declarative-configuration-workload")
            && stdout.contains("workload.example.io/v1alpha1"),
        "{stdout}"
    );

    // An unknown field is refused, as Karmada's API server refuses it.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.json");
    let bad = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "bad", "namespace": "ml"},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}],
                 "placement": {"clusterAffinities": [{"affinityName": "a",
                     "overflowAffinities": [{"affinityName": "b", "weight": 3}]}]}}
    });
    std::fs::write(&file, serde_json::to_vec(&bad).unwrap()).unwrap();
    let (ok, _, stderr) = kubectl(
        &kubeconfig,
        cache.path(),
        &["apply", "-f", &file.to_string_lossy()],
    )
    .await;
    assert!(!ok, "an unknown field was accepted");
    assert!(
        stderr.contains("unknown field") && stderr.contains("weight"),
        "{stderr}"
    );
}
