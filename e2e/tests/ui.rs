//! The web UI (`/ui/`) in a real headless Chromium (Debian's, through chromedriver) against
//! `flotilla local-up`: the Fleet page's cards and capacity bars against the Clusters'
//! status, an example Deployment's per-cluster bars appearing without a reload, a stopped
//! member's card turning NotReady live, a workload's per-cluster Works, the scheduling
//! events; and, as a user whose RBAC covers one namespace, only that namespace's workloads,
//! with clear pages for a forbidden read, an unknown route and a missing or refused
//! credential. Screenshots go to `$CARGO_TARGET_DIR/ui-screenshots/<test>/`.

#[path = "support/browser.rs"]
mod browser;
#[path = "support/members.rs"]
mod members;
mod support;

use std::path::Path;

use browser::Browser;
use members::{MEMBERS, up_and_ready};
use serde_json::{Value, json};
use support::{Kubectl, kubectl_binary, start_local_up};

/// WebDriver's Tab and Enter keys.
const TAB: &str = "\u{E004}";
const ENTER: &str = "\u{E007}";

/// A marker set on `window` after a page load: still there later means no reload happened.
const MARK: &str = "window.__flotillaNoReload = 'kept'; return true";
const MARKED: &str = "return window.__flotillaNoReload === 'kept'";

/// Types `ns` into a page's namespace filter (`input`) and applies it.
fn filter_namespace(b: &Browser, input: &str, ns: &str) {
    b.type_into(input, ns);
    b.click(".filters button[type='submit']");
}

/// `kubectl apply` of `yaml` (written to `dir/<name>.yaml`), which must succeed.
fn apply(k: &Kubectl, dir: &Path, name: &str, yaml: &str) {
    let out = k.apply_file(dir, name, yaml);
    assert!(out.status.success(), "apply {name}: {}", out.stderr);
}

/// The `(used, total)` the Fleet card of `cluster` shows for `resource`.
const METER: &str = "const m = document.querySelector(`li.card[data-cluster=\"${arguments[0]}\"] [data-resource=\"${arguments[1]}\"]`);
    return m ? [Number(m.dataset.used), Number(m.dataset.total)] : null";

fn quantity(q: &Value) -> f64 {
    let s = q
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| q.to_string());
    let (num, mult) = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("m", 1e-3),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
    ]
    .iter()
    .find_map(|(suffix, mult)| s.strip_suffix(suffix).map(|n| (n.to_string(), *mult)))
    .unwrap_or((s.clone(), 1.0));
    num.parse::<f64>()
        .unwrap_or_else(|_| panic!("quantity {s}"))
        * mult
}

#[test]
fn fleet_and_workloads_update_live_in_the_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (up, c) = up_and_ready(dir.path());
    let token =
        browser::service_account_token(&c.host, "default", "ui-admin", "cluster-admin", false);
    let b = Browser::start("fleet_and_workloads");
    b.sign_in(&up.url, &token, "system:serviceaccount:default:ui-admin");

    // Fleet: three Ready cards whose bars are the Clusters' allocated of allocatable.
    b.wait_for(
        "three Ready cards",
        "return document.querySelectorAll('li.card[data-state=\"Ready\"]').length === 3",
        json!([]),
    );
    // The bars are live: compare with a fresh read until they agree (a member's own pods
    // may move `allocated` between two reads).
    support::eventually(
        members::WAIT,
        "bars = the Clusters' allocated of allocatable",
        || {
            let clusters = c.host.get_json(&["clusters"]);
            let items = clusters["items"].as_array().unwrap();
            assert_eq!(items.len(), 3);
            for cluster in items {
                let name = cluster["metadata"]["name"].as_str().unwrap();
                assert!(MEMBERS.contains(&name), "{name}");
                let summary = &cluster["status"]["resourceSummary"];
                for resource in ["cpu", "memory", "pods"] {
                    let total = quantity(&summary["allocatable"][resource]);
                    let used = quantity(&summary["allocated"][resource]);
                    assert!(total > 0.0, "{name} {resource} allocatable {summary}");
                    let shown = b.js(METER, json!([name, resource]));
                    let (shown_used, shown_total) =
                        (shown[0].as_f64().unwrap(), shown[1].as_f64().unwrap());
                    if (shown_total - total).abs() > 1e-6 || (shown_used - used).abs() > 1e-6 {
                        return Err(format!(
                            "{name} {resource}: shows {shown}, status {used} of {total}"
                        ));
                    }
                }
            }
            Ok(())
        },
    );
    let fleet_text = b
        .js("return document.body.innerText", json!([]))
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        fleet_text.contains("3 clusters: 3 Ready, 0 NotReady, 0 Unknown"),
        "{fleet_text}"
    );
    b.screenshot("fleet");

    // Workloads: the example's per-cluster bars appear without a reload once it is applied.
    b.click("nav a[href='/ui/workloads']");
    b.wait_text("0 of 0 workloads shown");
    b.js(MARK, json!([]));
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/divided-dynamic-weight.yaml");
    c.host.ok(&["apply", "-f", example.to_str().unwrap()]);
    let rb_name = "web-dynamic-deployment";
    let expected = c.binding_clusters("default", rb_name);
    let bars = b.wait_for(
        "the example's per-cluster bars with every replica ready",
        "const row = document.querySelector('li.wl[data-workload=\"default/web-dynamic-deployment\"]');
         if (!row) return null;
         const segs = [...row.querySelectorAll('.seg')].map((s) => [s.dataset.cluster, Number(s.dataset.desired), Number(s.dataset.ready)]);
         const total = segs.reduce((n, s) => n + s[1], 0);
         return total === 12 && segs.every((s) => s[2] === s[1]) ? segs : null",
        json!([]),
    );
    let shown: std::collections::BTreeMap<String, i64> = bars
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s[0].as_str().unwrap().to_string(), s[1].as_i64().unwrap()))
        .collect();
    // The scheduler may have re-divided since `expected` was read: compare with the binding now.
    let now = c.binding_clusters("default", rb_name);
    assert!(
        shown == now || shown == expected,
        "bars {shown:?}, binding {now:?}"
    );
    assert!(shown.len() >= 2, "divided over several clusters: {shown:?}");
    assert_eq!(b.js(MARKED, json!([])), json!(true), "the page reloaded");
    b.wait_for(
        "Scheduled and FullyApplied True",
        "const row = document.querySelector('li.wl[data-workload=\"default/web-dynamic-deployment\"]');
         return row && [...row.querySelectorAll('[data-condition]')].every((c) => c.dataset.status === 'True')",
        json!([]),
    );
    b.screenshot("workloads");
    // The filters: a healthy workload leaves the "not healthy" view, and a cluster it runs in
    // keeps it.
    b.click("#f-unhealthy");
    b.wait_text("0 of 1 workloads shown; 0 not healthy");
    b.click("#f-unhealthy");
    b.wait_text("1 of 1 workloads shown");
    let first = shown.keys().next().unwrap().clone();
    b.js(
        "const s = document.getElementById('f-cluster'); s.value = arguments[0]; s.dispatchEvent(new Event('change'));",
        json!([first]),
    );
    b.wait_text("1 of 1 workloads shown");
    assert_eq!(b.js(MARKED, json!([])), json!(true), "the page reloaded");

    // Detail, by keyboard: Tab from the filters' Apply button reaches the list, then the
    // workload's link; Enter opens its page. One Work per cluster, Applied, with its manifest
    // diffed against the template.
    b.js(
        "document.querySelector('.filters button').focus()",
        json!([]),
    );
    let focus = "const a = document.activeElement; return a.getAttribute('href') || a.className";
    for expected in ["vlist", "/ui/workloads/default/web-dynamic-deployment"] {
        b.press(TAB);
        assert_eq!(b.js(focus, json!([])), json!(expected), "Tab order");
    }
    b.press(ENTER);
    let applied = b.wait_for(
        "each cluster's Work Applied",
        "const s = [...document.querySelectorAll('section.cluster-work')];
         return s.length && s.every((x) => x.querySelector('[data-applied=\"True\"]')) ? s.map((x) => x.dataset.cluster) : null",
        json!([]),
    );
    let mut applied: Vec<String> = applied
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    applied.sort();
    assert_eq!(applied, shown.keys().cloned().collect::<Vec<_>>());
    // Each cluster's manifest differs from the template in its share of the replicas.
    for (cluster, replicas) in &shown {
        let diff = b.js(
            "return document.querySelector(`section.cluster-work[data-cluster=\"${arguments[0]}\"] .diff`).innerText",
            json!([cluster]),
        );
        let diff = diff.as_str().unwrap();
        assert!(
            diff.contains("-   replicas: 12")
                && diff.contains(&format!("+   replicas: {replicas}")),
            "{cluster}'s diff shows its {replicas} replicas against the template's 12:\n{diff}"
        );
    }
    b.wait_text("ScheduleBindingSucceed");
    b.screenshot("workload-detail");

    // A cluster-scoped template (the CRD example, to every member) is listed too, with its page,
    // which follows the binding: opened at once, it shows each Work Applied when it is.
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/crd-widget.yaml");
    c.host.ok(&["apply", "-f", crd.to_str().unwrap()]);
    b.click("nav a[href='/ui/workloads']");
    let crb = b.wait_for(
        "the CRD's cluster-scoped workload",
        "const r = [...document.querySelectorAll('li.wl')].find((x) => x.innerText.includes('CustomResourceDefinition/widgets.example.io'));
         return r && r.dataset.workload",
        json!([]),
    );
    b.click(&format!(
        "li.wl[data-workload='{}'] a",
        crb.as_str().unwrap()
    ));
    b.wait_for(
        "each member's Work for the CRD Applied",
        "const s = [...document.querySelectorAll('section.cluster-work')];
         return s.length === 3 && s.every((x) => x.querySelector('[data-applied=\"True\"]'))",
        json!([]),
    );
    b.wait_text("(cluster-scoped)");
    assert_eq!(b.js(MARKED, json!([])), json!(true), "the page reloaded");
    b.screenshot("cluster-workload");

    // Scheduling: the decision is listed.
    b.click("nav a[href='/ui/scheduling']");
    b.wait_for(
        "a ScheduleBindingSucceed event",
        "return !!document.querySelector('tr[data-reason=\"ScheduleBindingSucceed\"]')",
        json!([]),
    );
    b.screenshot("scheduling");

    // Fleet again; stopping a member turns its card NotReady live.
    b.click("nav a[href='/ui/']");
    b.wait_for(
        "three Ready cards again",
        "return document.querySelectorAll('li.card[data-state=\"Ready\"]').length === 3",
        json!([]),
    );
    c.set_unreachable(&["member3"]);
    b.wait_for(
        "member3 NotReady",
        "const c = document.querySelector('li.card[data-cluster=\"member3\"]'); return c && c.dataset.state !== 'Ready' && c.dataset.state",
        json!([]),
    );
    assert_eq!(b.js(MARKED, json!([])), json!(true), "the page reloaded");
    let others = b.js(
        "return ['member1', 'member2'].map((n) => document.querySelector(`li.card[data-cluster=\"${n}\"]`).dataset.state)",
        json!([]),
    );
    assert_eq!(others, json!(["Ready", "Ready"]));
    b.screenshot("fleet-member3-down");
    // The state filter keeps only the failed member's card.
    b.js(
        "const s = document.getElementById('f-state'); s.value = 'NotReady'; s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    let visible = b.js(
        "return [...document.querySelectorAll('li.card')].filter((c) => !c.hidden).map((c) => c.dataset.cluster)",
        json!([]),
    );
    assert_eq!(visible, json!(["member3"]));
    b.js(
        "const s = document.getElementById('f-state'); s.value = ''; s.dispatchEvent(new Event('change'));",
        json!([]),
    );
    c.set_unreachable(&[]);
    b.wait_for(
        "member3 Ready again",
        "const c = document.querySelector('li.card[data-cluster=\"member3\"]'); return c && c.dataset.state === 'Ready'",
        json!([]),
    );
}

#[test]
fn a_namespace_user_sees_its_namespace_and_bad_credentials_get_a_clear_page() {
    let dir = tempfile::tempdir().unwrap();
    let up = start_local_up(&dir.path().join("flotilla"), &[]);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache"),
    );
    for ns in ["team-a", "team-b"] {
        k.ok(&["create", "namespace", ns]);
        apply(
            &k,
            dir.path(),
            ns,
            &support::deployment_yaml(ns, &format!("{ns}-web"), 2, "100m", "nginx"),
        );
        apply(
            &k,
            dir.path(),
            &format!("{ns}-pp"),
            &support::dynamic_policy_yaml(ns, &format!("{ns}-web")),
        );
    }
    for ns in ["team-a", "team-b"] {
        support::eventually(members::WAIT, &format!("binding in {ns}"), || {
            k.try_get(&["rb", "-n", ns, &format!("{ns}-web-deployment")])?
                .ok_or_else(|| "no binding yet".to_string())
        });
    }
    // The viewer may read bindings and events in team-a, nothing else.
    apply(
        &k,
        dir.path(),
        "reader",
        "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: workload-reader
rules:
- apiGroups: [work.karmada.io]
  resources: [resourcebindings]
  verbs: [get, list, watch]
- apiGroups: ['']
  resources: [events]
  verbs: [get, list, watch]
",
    );
    let token = browser::service_account_token(&k, "team-a", "viewer", "workload-reader", true);

    let b = Browser::start("namespace_user");
    // No credential: a page that says so, not a blank one.
    b.goto(&format!("{}/ui/workloads", up.url));
    b.wait_text("You are not signed in (401 Unauthorized)");
    b.screenshot("missing-credential");
    // A refused token.
    b.type_into("#token", "not-a-valid-token");
    b.click("#sign-in");
    b.wait_text("That token was refused (401 Unauthorized)");
    b.screenshot("invalid-token");
    // Unknown route.
    b.goto(&format!("{}/ui/no/such/page", up.url));
    b.wait_text("Page not found");
    b.wait_text("There is no page at /ui/no/such/page");
    b.screenshot("not-found");

    b.sign_in(&up.url, &token, "system:serviceaccount:team-a:viewer");
    // All namespaces: forbidden, said plainly.
    b.goto(&format!("{}/ui/workloads", up.url));
    b.wait_text("Forbidden: you may not read workloads in all namespaces (403)");
    b.screenshot("forbidden-all-namespaces");
    // Its namespace, typed into the filter: team-a's workload only.
    filter_namespace(&b, "#f-ns", "team-a");
    let rows = b.wait_for(
        "team-a's workloads",
        "const r = [...document.querySelectorAll('li.wl')].map((x) => x.dataset.workload); return r.length ? r : null",
        json!([]),
    );
    assert_eq!(rows, json!(["team-a/team-a-web-deployment"]));
    b.screenshot("namespace-workloads");
    // With no member cluster it cannot be scheduled: not healthy, and the Scheduling page
    // (team-a's events) says why.
    assert_eq!(
        b.js(
            "return document.querySelector('li.wl').classList.contains('bad')",
            json!([])
        ),
        json!(true)
    );
    b.click("nav a[href='/ui/scheduling']");
    b.wait_text("Forbidden: you may not read events in all namespaces (403)");
    filter_namespace(&b, "#s-ns", "team-a");
    let failed = b.wait_for(
        "a ScheduleBindingFailed event in team-a",
        "const r = document.querySelector('tr[data-reason=\"ScheduleBindingFailed\"]'); return r && r.innerText",
        json!([]),
    );
    assert!(failed.as_str().unwrap().contains("team-a-web"), "{failed}");
    b.screenshot("namespace-scheduling");
    // Another namespace is forbidden.
    b.goto(&format!("{}/ui/workloads?namespace=team-b", up.url));
    b.wait_text("Forbidden: you may not read workloads in namespace team-b (403)");
    assert_eq!(
        b.js(
            "return document.querySelectorAll('li.wl').length",
            json!([])
        ),
        json!(0)
    );
    // The fleet is not the viewer's to read: a clear message.
    b.click("nav a[href='/ui/']");
    b.wait_text("Forbidden: you may not read the member clusters (403)");

    // The service account goes away: its token is refused, and the page says so.
    k.ok(&["delete", "serviceaccount", "viewer", "-n", "team-a"]);
    b.goto(&format!("{}/ui/workloads?namespace=team-a", up.url));
    b.wait_text("Your credential was refused (401 Unauthorized)");
    b.screenshot("refused-credential");
}
