//! Merged reads as a kubectl user sees them, against `flotilla local-up --members 3`: reads of
//! workloads on the host are answered from the template store and every Ready member at once.
//!
//! - a 6-replica Deployment divided over member1..3: `kubectl get deploy` shows one row READY
//!   6/6 whose CLUSTERS cell matches what each member holds; `get pods -A` lists exactly the
//!   members' pods, each with its cluster; `-l cluster.karmada.io/name=member2` keeps member2's
//!   share; a Deployment made directly in member3 shows up with its cluster; `-o yaml` carries a
//!   composite `f1.` resourceVersion; `get deploy -w` shows a scale-up as it happens;
//! - writes after a merged read (`kubectl scale`, `apply` of a changed manifest, `edit`,
//!   `replace -f` of the merged JSON) change only the template's spec, as Flotilla's components
//!   (`components.kubeconfig`) read it: no clusters annotation, status not written;
//! - the search path `/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy` answers the same
//!   list; a token user without RBAC gets 403 on both paths;
//! - bad input: malformed resourceVersion / continue → 400, a selector naming an unknown
//!   cluster → no resources, exit 0;
//! - a member that stops answering while still Ready (a `flotilla member-sim` joined with
//!   kubectl, then killed): lists keep the others' items with a `Warning:` naming it;
//! - kubectl with the search prefix as its `--server`;
//! - the host and the aggregated server as separate processes (`flotilla apiserver` +
//!   `flotilla aggregated-apiserver`): the host's reads go over the authenticated aggregation
//!   path to the `v1alpha1.search.karmada.io` APIService, with the caller's identity.
//!
//! Needs the binary: `cargo build --bin flotilla` (or `FLOTILLA_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use support::{
    ApiserverProcess, Kubectl, Streaming, eventually, kubectl_binary, start_aggregated_apiserver,
    start_apiserver, start_local_up, start_member_sim_with, table, write_script,
    write_token_kubeconfig,
};

const WAIT: Duration = Duration::from_secs(60);
const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];
const SEARCH: &str = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy";
const CLUSTER_LABEL: &str = "cluster.karmada.io/name";
const CLUSTERS_ANNOTATION: &str = "search.flotilla.io/clusters";

fn kubectl(kubeconfig: &Path, cache: &Path) -> Kubectl {
    Kubectl::new(kubectl_binary("kubectl"), kubeconfig, cache)
}

fn write_apply(k: &Kubectl, dir: &Path, file: &str, yaml: &str) -> String {
    let path = dir.join(file);
    std::fs::write(&path, yaml).unwrap();
    k.ok(&["apply", "-f", path.to_str().unwrap()])
}

/// A Deployment in `default` whose pods request 100m CPU.
fn deployment_yaml(name: &str, replicas: i64, image: &str) -> String {
    support::deployment_yaml("default", name, replicas, "100m", image)
}

/// `member1(3),member2(2)` → {member1: 3, member2: 2}; a part without counts maps to -1.
fn parse_clusters_cell(cell: &str) -> BTreeMap<String, i64> {
    cell.split(',')
        .filter(|p| !p.is_empty() && *p != "<none>")
        .map(
            |p| match p.strip_suffix(')').and_then(|p| p.split_once('(')) {
                Some((name, n)) => (name.to_string(), n.parse().unwrap_or(-1)),
                None => (p.to_string(), -1),
            },
        )
        .collect()
}

/// The row of `rows` whose `key` column is `value`.
fn find_row<'a>(
    rows: &'a [HashMap<String, String>],
    key: &str,
    value: &str,
) -> Option<&'a HashMap<String, String>> {
    rows.iter()
        .find(|r| r.get(key).map(String::as_str) == Some(value))
}

/// `spec.replicas` of default/NAME in each member holding it (ready == replicas required).
fn member_shares(
    members: &BTreeMap<&str, Kubectl>,
    name: &str,
) -> Result<BTreeMap<String, i64>, String> {
    let mut shares = BTreeMap::new();
    for (m, k) in members {
        let out = k.run(&["get", "deploy", name, "-o", "json"]);
        if !out.status.success() {
            if out.stderr.contains("NotFound") {
                continue;
            }
            return Err(format!("{m}: {}", out.stderr));
        }
        let d: Value = serde_json::from_str(&out.stdout).unwrap();
        let replicas = d["spec"]["replicas"].as_i64().unwrap_or(1);
        let ready = d["status"]["readyReplicas"].as_i64().unwrap_or(0);
        if ready != replicas {
            return Err(format!("{m}: ready {ready}/{replicas}"));
        }
        shares.insert(m.to_string(), replicas);
    }
    Ok(shares)
}

/// The set of (namespace, name) of every pod `k` lists with `get pods -A`.
fn pod_names(k: &Kubectl) -> BTreeSet<(String, String)> {
    let pods = k.get_json(&["pods", "-A"]);
    pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["metadata"]["namespace"].as_str().unwrap().to_string(),
                p["metadata"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The items of a list as sorted (name, resourceVersion) pairs.
fn names_and_versions(list: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap().to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

/// Asserts the template (as Flotilla's components read it) is a plain template: numeric
/// resourceVersion, no clusters annotation, no cluster label.
fn assert_plain_template(t: &Value) {
    let rv = t["metadata"]["resourceVersion"].as_str().unwrap();
    assert!(
        rv.chars().all(|c| c.is_ascii_digit()),
        "the components' read has a non-numeric resourceVersion {rv}: {t}"
    );
    assert!(
        t["metadata"]["annotations"][CLUSTERS_ANNOTATION].is_null(),
        "the template got the merged read's annotation: {}",
        t["metadata"]
    );
    assert!(
        t["metadata"]["labels"][CLUSTER_LABEL].is_null(),
        "the template got a cluster label: {}",
        t["metadata"]
    );
}

#[test]
fn merged_reads_with_kubectl() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = dir.join("flotilla");
    let tokens = dir.join("tokens.csv");
    std::fs::write(&tokens, "nobodytoken,nobody,u-nobody,\"devs\"\n").unwrap();
    let up: ApiserverProcess = start_local_up(
        &data,
        &[
            "--members",
            "3",
            "--token-auth-file",
            tokens.to_str().unwrap(),
        ],
    );
    let host = kubectl(&up.kubeconfig, &dir.join("cache-host"));
    let components = kubectl(&data.join("components.kubeconfig"), &dir.join("cache-comp"));
    let members: BTreeMap<&str, Kubectl> = MEMBERS
        .iter()
        .map(|m| {
            (
                *m,
                kubectl(
                    &data.join("members").join(format!("{m}.kubeconfig")),
                    &dir.join(format!("cache-{m}")),
                ),
            )
        })
        .collect();
    eventually(WAIT, "three Ready clusters", || {
        let (_, rows) = table(&host.ok(&["get", "clusters"]));
        let ready = rows
            .iter()
            .filter(|r| MEMBERS.contains(&r["NAME"].as_str()) && r["READY"] == "True")
            .count();
        if ready == 3 {
            Ok(())
        } else {
            Err(format!("{rows:?}"))
        }
    });

    // 1. A 6-replica Deployment divided over the three members.
    write_apply(
        &host,
        dir,
        "web-pp.yaml",
        &support::dynamic_policy_yaml("default", "web"),
    );
    write_apply(
        &host,
        dir,
        "web.yaml",
        &deployment_yaml("web", 6, "nginx:1"),
    );
    let shares = eventually(WAIT, "web 6/6 in the members", || {
        let shares = member_shares(&members, "web")?;
        if shares.values().sum::<i64>() == 6 && shares.len() == 3 {
            Ok(shares)
        } else {
            Err(format!("{shares:?}"))
        }
    });
    let web_row = eventually(WAIT, "one web row READY 6/6 with its clusters", || {
        let text = host.ok(&["get", "deploy"]);
        let (names, rows) = table(&text);
        if !names.contains(&"CLUSTERS".to_string()) {
            return Err(format!("no CLUSTERS column:\n{text}"));
        }
        let webs: Vec<_> = rows.iter().filter(|r| r["NAME"] == "web").collect();
        if webs.len() != 1 {
            return Err(format!("{} web rows:\n{text}", webs.len()));
        }
        let r = webs[0].clone();
        if r["READY"] != "6/6" || parse_clusters_cell(&r["CLUSTERS"]) != shares {
            return Err(format!("want 6/6 and {shares:?}:\n{text}"));
        }
        Ok(r)
    });
    assert_eq!(
        parse_clusters_cell(&web_row["CLUSTERS"])
            .values()
            .sum::<i64>(),
        6
    );

    // -o wide: CLUSTER-READY with ready/desired per member.
    let (_, wide) = table(&host.ok(&["get", "deploy", "web", "-o", "wide"]));
    let want_wide: Vec<String> = shares
        .iter()
        .map(|(m, n)| format!("{m}({n}/{n})"))
        .collect();
    assert_eq!(wide[0]["CLUSTER-READY"], want_wide.join(","), "{wide:?}");

    // Pods: exactly the members' pods, each with its own cluster.
    let mut want_pods = BTreeMap::new();
    for (m, k) in &members {
        for p in pod_names(k) {
            want_pods.insert(p, m.to_string());
        }
    }
    assert_eq!(
        want_pods
            .keys()
            .filter(|(_, n)| n.starts_with("web-"))
            .count(),
        6,
        "{want_pods:?}"
    );
    let text = host.ok(&["get", "pods", "-A"]);
    let (_, rows) = table(&text);
    let got_pods: BTreeMap<(String, String), String> = rows
        .iter()
        .map(|r| {
            (
                (r["NAMESPACE"].clone(), r["NAME"].clone()),
                r["CLUSTERS"].clone(),
            )
        })
        .collect();
    assert_eq!(got_pods.len(), rows.len(), "duplicate pod rows:\n{text}");
    assert_eq!(got_pods, want_pods, "host `get pods -A`:\n{text}");
    let pods = host.get_json(&["pods", "-A"]);
    for p in pods["items"].as_array().unwrap() {
        let name = p["metadata"]["name"].as_str().unwrap();
        let ns = p["metadata"]["namespace"].as_str().unwrap().to_string();
        let label = p["metadata"]["labels"][CLUSTER_LABEL].as_str();
        assert_eq!(
            label,
            Some(want_pods[&(ns, name.to_string())].as_str()),
            "pod {name}: {}",
            p["metadata"]
        );
    }

    // The cluster label selector keeps member2's share.
    let (_, rows) = table(&host.ok(&["get", "deploy", "-l", "cluster.karmada.io/name=member2"]));
    assert_eq!(rows.len(), 1, "{rows:?}");
    let n2 = shares["member2"];
    assert_eq!(rows[0]["NAME"], "web");
    // READY's ready count is member2's; its desired count is the template's spec.replicas
    // (the merged object keeps the template's spec), so it is not pinned here.
    assert!(rows[0]["READY"].starts_with(&format!("{n2}/")), "{rows:?}");
    assert_eq!(rows[0]["CLUSTERS"], format!("member2({n2})"), "{rows:?}");
    let text = host.ok(&["get", "pods", "-A", "-l", "cluster.karmada.io/name=member2"]);
    let (_, rows) = table(&text);
    let want2: BTreeSet<String> = want_pods
        .iter()
        .filter(|(_, c)| *c == "member2")
        .map(|((_, n), _)| n.clone())
        .collect();
    let got2: BTreeSet<String> = rows.iter().map(|r| r["NAME"].clone()).collect();
    assert_eq!(got2, want2, "{text}");
    assert!(rows.iter().all(|r| r["CLUSTERS"] == "member2"), "{text}");

    // A Deployment made directly in member3 shows on the host with its cluster.
    write_apply(
        &members["member3"],
        dir,
        "local3.yaml",
        &deployment_yaml("local3", 1, "nginx:1"),
    );
    eventually(WAIT, "local3 on the host from member3", || {
        let text = host.ok(&["get", "deploy"]);
        let (_, rows) = table(&text);
        match find_row(&rows, "NAME", "local3") {
            Some(r) if r["CLUSTERS"] == "member3(1)" && r["READY"] == "1/1" => Ok(()),
            _ => Err(text),
        }
    });
    let local3 = host.get_json(&["deploy", "local3"]);
    assert_eq!(
        local3["metadata"]["labels"][CLUSTER_LABEL], "member3",
        "{}",
        local3["metadata"]
    );
    // The host has no template of it.
    let out = components.run(&["get", "deploy", "local3"]);
    assert!(
        !out.status.success() && out.stderr.contains("NotFound"),
        "components see a template of local3: {}{}",
        out.stdout,
        out.stderr
    );

    // -o yaml: the composite resourceVersion and the clusters annotation.
    let yaml = host.ok(&["get", "deploy", "web", "-o", "yaml"]);
    let web: Value = serde_norway::from_str(&yaml).unwrap();
    let rv = web["metadata"]["resourceVersion"].as_str().unwrap();
    assert!(rv.starts_with("f1."), "resourceVersion {rv}:\n{yaml}");
    let ann = web["metadata"]["annotations"][CLUSTERS_ANNOTATION]
        .as_str()
        .unwrap_or_else(|| panic!("no {CLUSTERS_ANNOTATION}:\n{yaml}"));
    assert_eq!(ann, want_wide.join(","), "{yaml}");
    assert_plain_template(&components.get_json(&["deploy", "web"]));

    // 2. `get deploy -w` shows a scale-up as it happens.
    let mut watch = Streaming::spawn(host.command(&["get", "deploy", "web", "-w"]));
    watch.wait_for_line(WAIT, "web 6/6 at the start of the watch", |l| {
        l.starts_with("web ") && l.contains("6/6")
    });
    host.ok(&["scale", "deploy", "web", "--replicas", "9"]);
    let line = watch.wait_for_line(WAIT, "web 9/9 after the scale-up", |l| {
        l.starts_with("web ") && l.contains("9/9")
    });
    let cell = line.split_whitespace().last().unwrap();
    assert_eq!(
        parse_clusters_cell(cell).values().sum::<i64>(),
        9,
        "watch line {line}"
    );
    watch.stop();

    // 4. Writes after a merged read change only the template: `kubectl scale` (step 2);
    let t = components.get_json(&["deploy", "web"]);
    assert_eq!(t["spec"]["replicas"], 9, "{t}");
    assert_plain_template(&t);
    // `kubectl apply` of a changed manifest (its GET is a merged read).
    write_apply(
        &host,
        dir,
        "web.yaml",
        &deployment_yaml("web", 9, "nginx:2"),
    );
    let t = components.get_json(&["deploy", "web"]);
    assert_eq!(
        t["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:2",
        "{t}"
    );
    assert_plain_template(&t);
    eventually(WAIT, "nginx:2 in every member", || {
        for (m, k) in &members {
            let d = k.get_json(&["deploy", "web"]);
            if d["spec"]["template"]["spec"]["containers"][0]["image"] != "nginx:2" {
                return Err(format!("{m}: {}", d["spec"]));
            }
        }
        Ok(())
    });
    // `kubectl edit`: the editor changes spec.replicas and tries to write a status.
    let editor = dir.join("editor.sh");
    write_script(
        &editor,
        "#!/bin/sh\nset -e\nf=\"$1\"\njq '.spec.replicas = 7 | .status.replicas = 999 | .status.readyReplicas = 999' \"$f\" > \"$f.new\"\nmv \"$f.new\" \"$f\"\n",
    );
    host.ok_with(
        &["edit", "deploy", "web", "-o", "json"],
        &[
            ("EDITOR", editor.to_str().unwrap()),
            ("KUBE_EDITOR", editor.to_str().unwrap()),
        ],
    );
    let t = components.get_json(&["deploy", "web"]);
    assert_eq!(t["spec"]["replicas"], 7, "{t}");
    assert_ne!(t["status"]["replicas"], 999, "edit wrote the status: {t}");
    assert_ne!(
        t["status"]["readyReplicas"], 999,
        "edit wrote the status: {t}"
    );
    assert_plain_template(&t);
    eventually(WAIT, "web 7/7 on the host", || {
        let text = host.ok(&["get", "deploy", "web"]);
        let (_, rows) = table(&text);
        let r = &rows[0];
        if r["READY"] == "7/7" && parse_clusters_cell(&r["CLUSTERS"]).values().sum::<i64>() == 7 {
            Ok(())
        } else {
            Err(text)
        }
    });

    // `kubectl replace -f` of a merged read's JSON (composite resourceVersion, clusters
    // annotation, aggregated status): the template takes the spec change only. The
    // template's status may be written between the read and the replace (a Conflict, as on
    // any cluster): read again and retry, as a user would.
    let file = dir.join("web-merged.json");
    eventually(WAIT, "kubectl replace of the merged read", || {
        let mut merged = host.get_json(&["deploy", "web"]);
        assert!(
            merged["metadata"]["resourceVersion"]
                .as_str()
                .unwrap()
                .starts_with("f1.")
        );
        merged["spec"]["minReadySeconds"] = serde_json::json!(1);
        merged["status"]["readyReplicas"] = serde_json::json!(999);
        std::fs::write(&file, merged.to_string()).unwrap();
        let out = host.run(&["replace", "-f", file.to_str().unwrap()]);
        let stderr = out.stderr;
        if out.status.success() {
            Ok(())
        } else {
            assert!(stderr.contains("(Conflict)"), "replace failed: {stderr}");
            Err(stderr)
        }
    });
    let t = components.get_json(&["deploy", "web"]);
    assert_eq!(t["spec"]["minReadySeconds"], 1, "{t}");
    assert_ne!(
        t["status"]["readyReplicas"], 999,
        "replace wrote the status: {t}"
    );
    assert_plain_template(&t);

    // 5. The search path answers the same merged list.
    let host_list: Value =
        serde_json::from_str(&host.ok(&["get", "--raw", "/apis/apps/v1/deployments"])).unwrap();
    let search_list: Value = serde_json::from_str(&host.ok(&[
        "get",
        "--raw",
        &format!("{SEARCH}/apis/apps/v1/deployments"),
    ]))
    .unwrap();
    let host_items = names_and_versions(&host_list);
    let search_items = names_and_versions(&search_list);
    assert_eq!(
        host_items.iter().map(|(n, _)| n).collect::<Vec<_>>(),
        search_items.iter().map(|(n, _)| n).collect::<Vec<_>>()
    );
    assert!(
        host_items
            .iter()
            .chain(&search_items)
            .all(|(_, rv)| rv.starts_with("f1.")),
        "host {host_items:?}\nsearch {search_items:?}"
    );
    assert!(
        search_items.iter().any(|(n, _)| n == "web")
            && search_items.iter().any(|(n, _)| n == "local3"),
        "{search_items:?}"
    );
    // A user without RBAC: 403 on both paths.
    let nobody_kc = dir.join("nobody.kubeconfig");
    write_token_kubeconfig(
        &nobody_kc,
        &up.url,
        &data.join("pki").join("ca.crt"),
        "nobodytoken",
    );
    let nobody = kubectl(&nobody_kc, &dir.join("cache-nobody"));
    for args in [
        vec!["get", "deploy"],
        vec![
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/default/deployments",
        ],
        vec![
            "get",
            "--raw",
            &format!("{SEARCH}/apis/apps/v1/namespaces/default/deployments"),
        ],
    ] {
        let out = nobody.fails(&args);
        assert!(
            out.stderr.contains("Forbidden") || out.stderr.contains("forbidden"),
            "{}: {}",
            nobody.describe(&args),
            out.stderr
        );
    }
    let search_deploys = format!("{SEARCH}/apis/apps/v1/deployments");
    // 6. Bad input.
    for path in [
        "/apis/apps/v1/deployments?resourceVersion=garbage".to_string(),
        format!("{search_deploys}?resourceVersion=garbage"),
        "/apis/apps/v1/deployments?limit=1&continue=garbage".to_string(),
    ] {
        let out = host.fails(&["get", "--raw", &path]);
        let param = if path.contains("continue") {
            "continue"
        } else {
            "resourceVersion"
        };
        assert!(
            out.stderr.contains("BadRequest") || out.stderr.contains("400"),
            "{path}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(param), "{path}: {}", out.stderr);
    }
    for sel in [
        "cluster.karmada.io/name in (nope)",
        "cluster.karmada.io/name=nope",
    ] {
        let out = host.run(&["get", "deploy", "-l", sel]);
        assert!(out.status.success(), "-l {sel}: {}", out.stderr);
        assert!(out.stdout.trim().is_empty(), "-l {sel}: {}", out.stdout);
        assert!(
            out.stderr.contains("No resources found"),
            "-l {sel}: {}",
            out.stderr
        );
    }
}

/// A `flotilla member-sim` joined to the host with kubectl: its credentials Secret and a
/// Push-mode Cluster.
fn join_with_kubectl(
    host: &Kubectl,
    dir: &Path,
    name: &str,
    sim: &ApiserverProcess,
    sim_data: &Path,
) {
    let token = std::fs::read_to_string(sim_data.join("flotilla-token")).unwrap();
    support::create_member_secret(
        host,
        name,
        token.trim(),
        &sim_data.join("pki").join("ca.crt"),
    );
    write_apply(
        host,
        dir,
        &format!("{name}-cluster.yaml"),
        &support::push_cluster_yaml(name, &sim.url, name),
    );
}

/// Waits until `kubectl get deploy` on the host shows each (name, CLUSTERS cell).
fn wait_for_clusters(host: &Kubectl, what: &str, want: &[(&str, &str)]) {
    eventually(WAIT, what, || {
        let text = host.ok(&["get", "deploy"]);
        let (_, rows) = table(&text);
        let all = want.iter().all(|(name, clusters)| {
            find_row(&rows, "NAME", name).is_some_and(|r| r["CLUSTERS"] == *clusters)
        });
        if all { Ok(()) } else { Err(text) }
    });
}

fn cluster_ready(host: &Kubectl, name: &str) -> String {
    let c = host.get_json(&["cluster", name]);
    c["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["status"].as_str())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_stopped_member_is_named_in_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = dir.join("flotilla");
    // A long failure threshold: the stopped member stays Ready while it fails to answer.
    let up = start_local_up(
        &data,
        &["--members", "1", "--cluster-failure-threshold", "10m"],
    );
    let host = kubectl(&up.kubeconfig, &dir.join("cache-host"));
    let member1 = kubectl(
        &data.join("members").join("member1.kubeconfig"),
        &dir.join("cache-member1"),
    );
    let edge_data = dir.join("edge");
    let edge = start_member_sim_with("edge", &edge_data, &["--nodes", "1"]);
    let edge_k = kubectl(&edge.kubeconfig, &dir.join("cache-edge"));
    join_with_kubectl(&host, dir, "edge", &edge, &edge_data);
    eventually(WAIT, "member1 and edge Ready", || {
        let r = (
            cluster_ready(&host, "member1"),
            cluster_ready(&host, "edge"),
        );
        if r.0 == "True" && r.1 == "True" {
            Ok(())
        } else {
            Err(format!("{r:?}"))
        }
    });

    write_apply(
        &member1,
        dir,
        "in1.yaml",
        &deployment_yaml("in-member1", 1, "nginx:1"),
    );
    write_apply(
        &edge_k,
        dir,
        "inedge.yaml",
        &deployment_yaml("in-edge", 1, "nginx:1"),
    );
    wait_for_clusters(
        &host,
        "both Deployments on the host",
        &[("in-member1", "member1(1)"), ("in-edge", "edge(1)")],
    );

    drop(edge);
    for args in [vec!["get", "deploy"], vec!["get", "pods", "-A"]] {
        let out = host.run(&args);
        assert!(
            out.status.success(),
            "{} with edge stopped: {}{}",
            host.describe(&args),
            out.stdout,
            out.stderr
        );
        assert!(
            out.stderr.contains("Warning:") && out.stderr.contains("\"edge\""),
            "{}: no warning naming edge:\n--- stdout\n{}\n--- stderr\n{}",
            host.describe(&args),
            out.stdout,
            out.stderr
        );
        let (_, rows) = table(&out.stdout);
        assert!(!rows.is_empty(), "{}", out.stdout);
        assert!(
            rows.iter()
                .all(|r| r["CLUSTERS"] == "member1" || r["CLUSTERS"] == "member1(1)"),
            "{}",
            out.stdout
        );
        if args[1] == "deploy" {
            assert!(
                find_row(&rows, "NAME", "in-member1").is_some(),
                "{}",
                out.stdout
            );
        }
    }
    // The warning came while edge was still Ready: its failure, not its condition.
    assert_eq!(cluster_ready(&host, "edge"), "True");
}

/// kubectl pointed at the search prefix as its server (`--server <host>/apis/search.../proxy`):
/// its discovery under the prefix comes from the host, its reads are merged.
#[test]
fn kubectl_with_the_search_prefix_as_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = dir.join("flotilla");
    let up = start_local_up(&data, &["--members", "1"]);
    let host = kubectl(&up.kubeconfig, &dir.join("cache-host"));
    let member1 = kubectl(
        &data.join("members").join("member1.kubeconfig"),
        &dir.join("cache-member1"),
    );
    eventually(WAIT, "member1 Ready", || {
        let r = cluster_ready(&host, "member1");
        if r == "True" { Ok(()) } else { Err(r) }
    });
    write_apply(
        &member1,
        dir,
        "in1.yaml",
        &deployment_yaml("in-member1", 1, "nginx:1"),
    );
    write_apply(
        &host,
        dir,
        "tpl.yaml",
        &deployment_yaml("template-only", 1, "nginx:1"),
    );
    let server = format!("{}{SEARCH}", up.url);
    let (_, host_rows) = table(&host.ok(&["get", "deploy"]));
    let want: BTreeSet<String> = host_rows.iter().map(|r| r["NAME"].clone()).collect();
    assert!(
        want.contains("in-member1") && want.contains("template-only"),
        "{want:?}"
    );
    let out = host.run(&["--server", &server, "get", "deploy"]);
    assert!(
        out.status.success(),
        "kubectl --server <host>{SEARCH} get deploy failed (discovery under the search prefix):\n{}{}",
        out.stdout,
        out.stderr
    );
    let (_, rows) = table(&out.stdout);
    let got: BTreeSet<String> = rows.iter().map(|r| r["NAME"].clone()).collect();
    assert_eq!(got, want, "{}", out.stdout);
    let row = find_row(&rows, "NAME", "in-member1").unwrap();
    assert_eq!(row["CLUSTERS"], "member1(1)", "{}", out.stdout);
}

/// The host and the aggregated server as two processes: merged reads take the aggregation
/// path (the host's aggregator, front-proxy certificate, `X-Remote-*`), and the member is asked
/// as the caller.
#[test]
fn merged_reads_over_the_apiservice_between_processes() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let host_data = dir.join("host");
    let host_proc = start_apiserver(&host_data);
    let host = kubectl(&host_proc.kubeconfig, &dir.join("cache-host"));
    // Before an aggregated server registers the merged view, the template store answers.
    write_apply(
        &host,
        dir,
        "tpl.yaml",
        &deployment_yaml("web", 2, "nginx:1"),
    );
    let before = host.get_json(&["deploy", "web"]);
    assert!(
        before["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| rv.parse::<u64>().is_ok()),
        "{before}"
    );
    let _aggregated = start_aggregated_apiserver(&host_data, &dir.join("aggregated"));
    let edge_data = dir.join("edge");
    let edge = start_member_sim_with("edge", &edge_data, &["--nodes", "1"]);
    let edge_k = kubectl(&edge.kubeconfig, &dir.join("cache-edge"));
    join_with_kubectl(&host, dir, "edge", &edge, &edge_data);
    // No controller-manager runs here: mark the Cluster Ready by hand.
    eventually(WAIT, "the Cluster served", || {
        let out = host.run(&[
            "patch",
            "cluster",
            "edge",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"ClusterReady","message":"marked by the test","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
        ]);
        if out.status.success() {
            Ok(())
        } else {
            Err(out.stderr)
        }
    });
    write_apply(
        &edge_k,
        dir,
        "web-edge.yaml",
        &deployment_yaml("web", 2, "nginx:1"),
    );
    write_apply(
        &edge_k,
        dir,
        "only.yaml",
        &deployment_yaml("only-edge", 1, "nginx:1"),
    );
    wait_for_clusters(
        &host,
        "the merged view over the APIService",
        &[("web", "edge(2)"), ("only-edge", "edge(1)")],
    );
    let merged = host.get_json(&["deploy", "web"]);
    assert!(
        merged["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| rv.starts_with("f1.")),
        "{merged}"
    );
    // A write after the merged read reaches the template.
    host.ok(&["scale", "deploy", "web", "--replicas=3"]);
    let raw = host.ok(&[
        "get",
        "--raw",
        "/apis/apps/v1/namespaces/default/deployments/web",
    ]);
    let obj: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(obj["spec"]["replicas"], 3, "{raw}");
    drop(edge);
}

/// `--merged-resources` chooses what is merged: with only pods, `get deploy` reads the
/// template store (no CLUSTERS column) while `get pods` is merged; a name that is no built-in
/// resource stops local-up before it starts anything, with a message naming it.
#[test]
fn merged_resources_are_configurable_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let bad = std::process::Command::new(support::flotilla_bin())
        .args(["local-up", "--port", "0", "--members", "0", "--data-dir"])
        .arg(dir.join("bad"))
        .args(["--merged-resources", "deployments.apps,widgets.example.com"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success(), "{stderr}");
    assert!(
        stderr.contains("widgets.example.com") && stderr.contains("--merged-resources"),
        "{stderr}"
    );
    assert!(
        !dir.join("bad").join("kubeconfig").exists(),
        "nothing was started"
    );

    let data = dir.join("flotilla");
    let up = start_local_up(&data, &["--members", "1", "--merged-resources", "pods"]);
    let host = kubectl(&up.kubeconfig, &dir.join("cache-host"));
    let member1 = kubectl(
        &data.join("members").join("member1.kubeconfig"),
        &dir.join("cache-member1"),
    );
    write_apply(
        &member1,
        dir,
        "in1.yaml",
        &deployment_yaml("in-member1", 1, "nginx:1"),
    );
    eventually(WAIT, "member1's pod merged on the host", || {
        let text = host.ok(&["get", "pods", "-A"]);
        let (header, rows) = table(&text);
        if header.iter().any(|h| h == "CLUSTERS") && rows.iter().any(|r| r["CLUSTERS"] == "member1")
        {
            Ok(())
        } else {
            Err(text)
        }
    });
    let text = host.ok(&["get", "deploy", "-A"]);
    assert!(
        !text.contains("CLUSTERS"),
        "deployments are not merged:\n{text}"
    );
    assert!(!text.contains("in-member1"), "{text}");
}
