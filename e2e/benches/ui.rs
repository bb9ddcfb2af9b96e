//! The web UI at scale (issue 17): page load time and the browser's memory with many
//! Clusters and workloads. `flotilla local-up --members 0` (the host, aggregated API server,
//! controllers and scheduler), K member-sims in one `flotilla member-sim --clusters K`
//! process joined to it, N Deployments in namespace `bench` under one PropagationPolicy
//! (Divided, Aggregated: each lands on one cluster), then a headless Chromium (Debian's, via
//! chromedriver) signed in with a cluster-admin service-account token.
//!
//! For each page it prints the time from navigation start to the page showing everything
//! (every Fleet card; the Workloads count "N of N"; the Scheduling table), measured in the
//! page with `performance.now()`; the page's JS heap (`performance.memory`), its DOM node
//! count, and the whole browser's memory (the sum of PSS over chromedriver's descendant
//! processes, from /proc). On the Workloads page also: the time to scroll to the last row and
//! have it drawn (the list is virtualised), how long a write to a binding in view takes to be
//! drawn (API write, watch, draw), and one Deployment's scale end to end (through the detector
//! and the scheduler, whose queues still hold the new bindings' work).
//!
//! Sizes: `FLOTILLA_BENCH_UI=K:N` (default `500:5000`). Run:
//! `cargo build --release --bin flotilla && FLOTILLA_BIN=$CARGO_TARGET_DIR/release/flotilla
//! cargo bench -p flotilla-e2e --bench ui`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/browser.rs"]
mod browser;
#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use browser::Browser;
use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::json;
use support::{
    Kubectl, join_member_sims, kube_client, kubectl_binary, member_sims_args, ready_name_url,
    release_bin, spawn_ready_lines, start_local_up,
};

const NS: &str = "bench";

/// A script resolving (through the async callback) with `performance.now()` once `ready` (a
/// JS expression, inlined: the page's CSP forbids eval) is true, checked every frame.
fn when(ready: &str) -> String {
    format!(
        "const done = arguments[arguments.length - 1];
         const tick = () => {{ let ok = false; try {{ ok = ({ready}); }} catch (e) {{ ok = false; }}
           if (ok) done(performance.now()); else requestAnimationFrame(tick); }};
         tick();"
    )
}

/// Sum of PSS (KiB) over the descendants of `root`.
fn tree_pss_kib(root: u32) -> u64 {
    let mut parents = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok())
            .unwrap_or(0);
        parents.push((pid, ppid));
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree.iter()
        .skip(1)
        .map(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
                .unwrap_or_default()
                .lines()
                .find(|l| l.starts_with("Pss:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        })
        .sum()
}

/// Prints what the browser holds now.
fn memory(b: &Browser, page: &str) {
    let heap = b.js(
        "return performance.memory ? performance.memory.usedJSHeapSize : null",
        json!([]),
    );
    let nodes = b.js(
        "return document.getElementsByTagName('*').length",
        json!([]),
    );
    println!(
        "  {page}: JS heap {:.1} MiB, {} DOM elements, browser PSS {} MiB",
        heap.as_f64().unwrap_or(f64::NAN) / 1048576.0,
        nodes,
        tree_pss_kib(b.driver_pid()) / 1024
    );
}

/// Loads `url` and returns ms from navigation start until `ready` (a JS expression) holds.
fn load(b: &Browser, url: &str, ready: &str) -> f64 {
    b.goto(url);
    b.js_async(&when(ready), json!([])).as_f64().unwrap()
}

fn deployment(i: usize) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("web-{i:05}"), "namespace": NS, "labels": {"app": "web"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25",
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}},
    }))
    .unwrap()
}

#[tokio::main]
async fn main() {
    let spec = std::env::var("FLOTILLA_BENCH_UI").unwrap_or_else(|_| "500:5000".into());
    let (k, n) = spec
        .split_once(':')
        .and_then(|(k, n)| Some((k.parse::<u32>().ok()?, n.parse::<usize>().ok()?)))
        .expect("FLOTILLA_BENCH_UI is CLUSTERS:DEPLOYMENTS");
    println!("== web UI with {k} member-sims and {n} Deployments");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let started = Instant::now();
    let up = start_local_up(&d.join("flotilla"), &["--members", "0"]);
    let host = kube_client(&up.kubeconfig, None).await;
    let kubectl = Kubectl::new(kubectl_binary("kubectl"), &up.kubeconfig, &d.join("cache"));

    let members_dir = d.join("members");
    let args = member_sims_args(k, 1, &members_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_sims, ready) = spawn_ready_lines(
        &release_bin(),
        &args,
        &d.join("members.log"),
        k as usize,
        Duration::from_secs(900),
    );
    let urls: Vec<(String, String)> = ready.iter().map(|l| ready_name_url(l)).collect();
    join_member_sims(&host, &members_dir, &urls, 32).await;
    println!(
        "setup: {k} clusters joined after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    kubectl.ok(&["create", "namespace", NS]);
    let policy = d.join("policy.yaml");
    std::fs::write(
        &policy,
        format!(
            "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: web\n  namespace: {NS}\nspec:\n  resourceSelectors:\n  - apiVersion: apps/v1\n    kind: Deployment\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Aggregated\n"
        ),
    )
    .unwrap();
    kubectl.ok(&["apply", "-f", policy.to_str().unwrap()]);
    let deployments: Api<Deployment> = Api::namespaced(host.clone(), NS);
    let created = Instant::now();
    futures::stream::iter(0..n)
        .map(|i| {
            let api = deployments.clone();
            async move {
                api.create(&PostParams::default(), &deployment(i))
                    .await
                    .unwrap();
            }
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
    println!(
        "setup: {n} Deployments created in {:.1} s",
        created.elapsed().as_secs_f64()
    );
    support::eventually(Duration::from_secs(1800), "every binding", || {
        let out = kubectl.ok(&["get", "rb", "-n", NS, "-o", "name"]);
        let count = out.lines().count();
        if count >= n {
            Ok(())
        } else {
            Err(format!("{count} of {n}"))
        }
    });
    println!(
        "setup: {n} ResourceBindings after {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let token =
        browser::service_account_token(&kubectl, "default", "ui-bench", "cluster-admin", false);
    let b = Browser::start("bench");
    b.sign_in(&up.url, &token, "system:serviceaccount:default:ui-bench");
    memory(&b, "just after sign-in (the Fleet page loading)");

    let base = &up.url;
    let fleet = load(
        &b,
        &format!("{base}/ui/"),
        &format!("document.querySelectorAll('li.card').length === {k}"),
    );
    println!("Fleet: {k} cards drawn {fleet:.0} ms after navigation start");
    memory(&b, "Fleet");
    b.screenshot("fleet");

    let workloads = load(
        &b,
        &format!("{base}/ui/workloads"),
        &format!(
            "((document.querySelector('.counts') || {{}}).textContent || '').startsWith('{n} of {n} workloads shown')"
        ),
    );
    println!("Workloads: {n} rows listed {workloads:.0} ms after navigation start");
    memory(&b, "Workloads");
    b.screenshot("workloads");
    let scroll = b.js_async(
        &format!(
            "const done = arguments[arguments.length - 1]; const t0 = performance.now();
         const v = document.querySelector('.vlist'); v.scrollTop = v.scrollHeight;
         const tick = () => {{ const last = document.querySelector('li.wl[aria-posinset=\"{n}\"]');
           if (last) done(performance.now() - t0); else requestAnimationFrame(tick); }}; tick();"
        ),
        json!([]),
    );
    println!(
        "Workloads: scrolled to row {n} and drawn in {:.0} ms",
        scroll.as_f64().unwrap()
    );
    // A write to a binding in view reaches the page: label the last one and time until its
    // row is drawn at (or past) the written resourceVersion: the watch's delivery and the draw.
    let rb_api = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha2", "ResourceBinding"),
        "resourcebindings",
    );
    let bindings: Api<DynamicObject> = Api::namespaced_with(host.clone(), NS, &rb_api);
    let last_rb = format!("web-{:05}-deployment", n - 1);
    let mut samples = Vec::new();
    for i in 0..5 {
        let t0 = Instant::now();
        let patched = bindings
            .patch(
                &last_rb,
                &PatchParams::default(),
                &Patch::Merge(json!({"metadata": {"labels": {"bench-touch": i.to_string()}}})),
            )
            .await
            .unwrap();
        let rv = patched.metadata.resource_version.unwrap();
        b.js_async(
            &when(&format!(
                "(() => {{ const r = document.querySelector('li.wl[data-workload=\"{NS}/{last_rb}\"]');
                   return r && BigInt(r.dataset.rv) >= BigInt('{rv}'); }})()"
            )),
            json!([]),
        );
        samples.push(t0.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    println!(
        "Workloads: a write to a binding in view drawn after {:.0} ms median, {:.0} ms max (5 writes: API write, watch, draw)",
        samples[samples.len() / 2],
        samples[samples.len() - 1]
    );
    // A change on the host shows in the list: scale the last Deployment and time the bar.
    let last = format!("web-{:05}", n - 1);
    let t0 = Instant::now();
    kubectl.ok(&["scale", "deployment", "-n", NS, &last, "--replicas", "2"]);
    b.wait_for(
        "the scaled Deployment's bar",
        &format!("const r = document.querySelector('li.wl[data-workload=\"{NS}/{last}-deployment\"]');
          return r && [...r.querySelectorAll('.seg')].reduce((s, x) => s + Number(x.dataset.desired), 0) === 2"),
        json!([]),
    );
    println!(
        "Workloads: a scale to 2 replicas shown after {:.0} ms (kubectl, the detector and scheduler queues behind the {n} new bindings, watch, draw; polled every 200 ms)",
        t0.elapsed().as_secs_f64() * 1000.0
    );
    memory(&b, "Workloads after the update");

    let scheduling = load(
        &b,
        &format!("{base}/ui/scheduling"),
        "/\\d+ scheduling events/.test((document.querySelector('.counts') || {}).textContent || '')",
    );
    let events = b.js(
        "return document.querySelector('.counts').textContent",
        json!([]),
    );
    println!("Scheduling: {events} drawn {scheduling:.0} ms after navigation start");
    memory(&b, "Scheduling");
}
