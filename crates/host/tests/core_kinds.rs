//! The core/v1 kinds the host serves as templates (pods, podtemplates, replicationcontrollers,
//! endpoints, limitranges, resourcequotas, persistentvolumes, nodes), driven by the real
//! kubectl as a user would: one table of cases, each run through `create`, `get` (checking the
//! column headers kube-apiserver's Tables give, also by short name), `get -o wide`,
//! `describe`, `explain`, a strategic merge `patch`, server-side `apply` and `delete`, and a
//! bad manifest refused with 422 naming kube's field path and leaving nothing stored; with the
//! version-dispatching `kubectl` and with `kubectl.1.27` and `kubectl.1.33` called directly.
//! Then `kubectl run` makes a Pod that `kubectl get pods` shows Pending (nothing runs pods on
//! the host), and the status, scale and `pods/binding` subresources answer as kube's do.

// Helpers outside #[test] functions unwrap too: a failed call is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};

/// One kind's journey.
struct Case {
    /// Resource as typed on the command line (plural).
    plural: &'static str,
    /// A short name `kubectl get` must resolve.
    short: Option<&'static str>,
    namespaced: bool,
    /// A valid object (its `metadata.name` gets a per-run suffix).
    manifest: Value,
    /// Column headers of `kubectl get` and the ones `-o wide` adds.
    columns: &'static [&'static str],
    wide: &'static [&'static str],
    /// A field path for `kubectl explain`, below the resource.
    explain: &'static str,
    /// A strategic merge patch, then a JSONPath and the value it must print afterwards.
    patch: Value,
    patched: (&'static str, &'static str),
    /// A second JSONPath the patch must have left alone (strategic merge keeps list items).
    kept: (&'static str, &'static str),
    /// An object breaking a semantic rule, and the field path kube names for it.
    bad: Value,
    bad_field: &'static str,
}

fn cases() -> Vec<Case> {
    let container = json!({"name": "web", "image": "nginx", "ports": [{"containerPort": 80}]});
    vec![
        Case {
            plural: "pods",
            short: Some("po"),
            namespaced: true,
            manifest: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
                "spec": {"containers": [container]}}),
            columns: &["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            wide: &["IP", "NODE", "NOMINATED NODE", "READINESS GATES"],
            explain: "spec.restartPolicy",
            patch: json!({"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}),
            patched: ("{.spec.containers[0].image}", "nginx:1.27"),
            kept: ("{.spec.containers[0].ports[0].containerPort}", "80"),
            bad: json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
                "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 70000}]}]}}),
            bad_field: "spec.containers[0].ports[0].containerPort",
        },
        Case {
            plural: "podtemplates",
            short: None,
            namespaced: true,
            manifest: json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "web"},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}),
            columns: &["NAME", "CONTAINERS", "IMAGES", "POD LABELS"],
            wide: &[],
            explain: "template.spec",
            patch: json!({"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}),
            patched: ("{.template.spec.containers[0].image}", "nginx:1.27"),
            kept: (
                "{.template.spec.containers[0].ports[0].containerPort}",
                "80",
            ),
            bad: json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "bad"},
                "template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]}}}),
            bad_field: "template.spec.containers[1].name",
        },
        Case {
            plural: "replicationcontrollers",
            short: Some("rc"),
            namespaced: true,
            manifest: json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}}),
            columns: &["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
            wide: &["CONTAINERS", "IMAGES", "SELECTOR"],
            explain: "spec.selector",
            patch: json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}}),
            patched: (
                "{.spec.replicas}/{.spec.template.spec.containers[0].image}",
                "3/nginx:1.27",
            ),
            kept: ("{.spec.selector.app}", "web"),
            bad: json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "bad"},
                "spec": {"selector": {"app": "db"}, "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}}),
            bad_field: "spec.template.metadata.labels",
        },
        Case {
            plural: "endpoints",
            short: Some("ep"),
            namespaced: true,
            manifest: json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
                "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"name": "http", "port": 80}]}]}),
            columns: &["NAME", "ENDPOINTS", "AGE"],
            wide: &[],
            explain: "subsets.addresses",
            patch: json!({"metadata": {"labels": {"tier": "front"}},
                "subsets": [{"addresses": [{"ip": "10.0.0.2"}], "ports": [{"name": "http", "port": 8080}]}]}),
            patched: (
                "{.subsets[0].addresses[0].ip}:{.subsets[0].ports[0].port}",
                "10.0.0.2:8080",
            ),
            kept: ("{.subsets[0].ports[0].protocol}", "TCP"),
            bad: json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "bad"},
                "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}]}]}),
            bad_field: "subsets[0].addresses[0].ip",
        },
        Case {
            plural: "limitranges",
            short: Some("limits"),
            namespaced: true,
            manifest: json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "web"},
                "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}}]}}),
            columns: &["NAME", "CREATED AT"],
            wide: &[],
            explain: "spec.limits",
            patch: json!({"metadata": {"labels": {"tier": "front"}},
                "spec": {"limits": [{"type": "Container", "max": {"cpu": "4"}}]}}),
            patched: ("{.spec.limits[0].max.cpu}", "4"),
            kept: ("{.metadata.labels.tier}", "front"),
            bad: json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "bad"},
                "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}]}}),
            bad_field: "spec.limits[0].min[cpu]",
        },
        Case {
            plural: "resourcequotas",
            short: Some("quota"),
            namespaced: true,
            manifest: json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "web"},
                "spec": {"hard": {"pods": "10", "requests.cpu": "4"}}}),
            columns: &["NAME", "AGE", "REQUEST", "LIMIT"],
            wide: &[],
            explain: "spec.hard",
            patch: json!({"spec": {"hard": {"pods": "20"}}}),
            patched: ("{.spec.hard.pods}", "20"),
            kept: ("{.spec.hard.requests\\.cpu}", "4"),
            bad: json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"},
                "spec": {"hard": {"widgets": "1"}}}),
            bad_field: "spec.hard[widgets]",
        },
        Case {
            plural: "persistentvolumes",
            short: Some("pv"),
            namespaced: false,
            manifest: json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "web"},
                "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}}),
            columns: &[
                "NAME",
                "CAPACITY",
                "ACCESS MODES",
                "RECLAIM POLICY",
                "STATUS",
                "CLAIM",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "REASON",
                "AGE",
            ],
            wide: &["VOLUMEMODE"],
            explain: "spec.persistentVolumeReclaimPolicy",
            patch: json!({"spec": {"persistentVolumeReclaimPolicy": "Delete"}}),
            patched: ("{.spec.persistentVolumeReclaimPolicy}", "Delete"),
            kept: ("{.spec.hostPath.path}/{.status.phase}", "/data/Pending"),
            bad: json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "bad"},
                "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"]}}),
            bad_field: "spec: Required value: must specify a volume type",
        },
        Case {
            plural: "nodes",
            short: Some("no"),
            namespaced: false,
            manifest: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "web"},
                "spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}}),
            columns: &["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            wide: &[
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME",
            ],
            explain: "spec.taints",
            patch: json!({"metadata": {"labels": {"node-role.kubernetes.io/worker": ""}}, "spec": {"unschedulable": true}}),
            patched: ("{.spec.unschedulable}", "true"),
            kept: ("{.spec.taints[0].key}", "dedicated"),
            bad: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "bad"},
                "spec": {"taints": [{"key": "dedicated", "effect": "Sometimes"}]}}),
            bad_field: "spec.taints[0].effect",
        },
    ]
}

/// A kubectl binary against the test host, with its own discovery cache.
struct Cli {
    program: PathBuf,
    kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    label: String,
}

struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Cli {
    fn new(program: PathBuf, kubeconfig: &Path, label: &str) -> Self {
        Self {
            program,
            kubeconfig: kubeconfig.to_path_buf(),
            cache: tempfile::tempdir().unwrap(),
            label: label.to_string(),
        }
    }

    async fn run(&self, args: &[&str]) -> Out {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("{}: kubectl {args:?} took over 60 s", self.label))
            .unwrap();
        Out {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    async fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(
            r.ok,
            "{}: kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            self.label, r.stdout, r.stderr
        );
        r.stdout
    }
}

/// The column headers of a `kubectl get` table (separated by at least two spaces).
fn headers(table: &str) -> Vec<String> {
    let first = table.lines().next().unwrap_or_default();
    first
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The directory of the versioned kubectl binaries (next to what `kubectl` on PATH links to).
fn kubectl_dir() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    let found = std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .expect("kubectl on PATH");
    std::fs::canonicalize(found)
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

fn named(mut obj: Value, name: &str) -> Value {
    obj["metadata"]["name"] = json!(name);
    obj
}

async fn journey(cli: &Cli, case: &Case, dir: &Path, suffix: &str) {
    let what = format!("{} {}", cli.label, case.plural);
    let name = format!(
        "{}-{suffix}",
        case.manifest["metadata"]["name"].as_str().unwrap()
    );
    let ns: &[&str] = if case.namespaced {
        &["-n", "default"]
    } else {
        &[]
    };
    let with_ns = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(ns.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run_ok = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        cli.ok(&refs).await
    };

    // create
    let manifest = named(case.manifest.clone(), &name);
    let file = common::write_manifest(dir, &format!("{suffix}-{}.json", case.plural), &manifest);
    run_ok(with_ns(&["create", "-f", &file])).await;

    // get: columns by plural and short name; -o wide adds the wide ones.
    let table = run_ok(with_ns(&["get", case.plural, &name])).await;
    assert_eq!(headers(&table), case.columns, "{what}: get\n{table}");
    assert!(table.contains(&name), "{what}: get\n{table}");
    if let Some(short) = case.short {
        let table = run_ok(with_ns(&["get", short, &name])).await;
        assert_eq!(
            headers(&table),
            case.columns,
            "{what}: get {short}\n{table}"
        );
    }
    let wide = run_ok(with_ns(&["get", case.plural, &name, "-o", "wide"])).await;
    let mut expected: Vec<&str> = case.columns.to_vec();
    expected.extend(case.wide);
    assert_eq!(headers(&wide), expected, "{what}: get -o wide\n{wide}");

    // describe and explain
    let described = run_ok(with_ns(&["describe", case.plural, &name])).await;
    assert!(
        described
            .lines()
            .any(|l| l.starts_with("Name:") && l.ends_with(&name)),
        "{what}: describe\n{described}"
    );
    let target = format!("{}.{}", case.plural, case.explain);
    let explained = cli.ok(&["explain", &target]).await;
    let leaf = case.explain.rsplit('.').next().unwrap();
    assert!(
        explained.contains("DESCRIPTION") && explained.contains(leaf),
        "{what}: explain {target}\n{explained}"
    );

    // strategic merge patch
    let patch = case.patch.to_string();
    run_ok(with_ns(&[
        "patch",
        case.plural,
        &name,
        "--type",
        "strategic",
        "-p",
        &patch,
    ]))
    .await;
    let jsonpath = |path: &str| format!("jsonpath={path}");
    let got = run_ok(with_ns(&[
        "get",
        case.plural,
        &name,
        "-o",
        &jsonpath(case.patched.0),
    ]))
    .await;
    assert_eq!(got, case.patched.1, "{what}: after strategic patch");
    let got = run_ok(with_ns(&[
        "get",
        case.plural,
        &name,
        "-o",
        &jsonpath(case.kept.0),
    ]))
    .await;
    assert_eq!(got, case.kept.1, "{what}: strategic patch kept");

    // server-side apply (the manifest again, with a label; forced over the patch's fields)
    let mut applied = manifest.clone();
    applied["metadata"]["labels"]["applied"] = json!("ssa");
    let file = common::write_manifest(dir, &format!("{suffix}-{}-ssa.json", case.plural), &applied);
    run_ok(with_ns(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        &file,
    ]))
    .await;
    let got = run_ok(with_ns(&[
        "get",
        case.plural,
        &name,
        "-o",
        "jsonpath={.metadata.labels.applied}",
    ]))
    .await;
    assert_eq!(got, "ssa", "{what}: server-side apply");
    let managers = run_ok(with_ns(&[
        "get",
        case.plural,
        &name,
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]))
    .await;
    assert!(
        managers.split(' ').any(|m| m == "kubectl"),
        "{what}: managers {managers}"
    );

    // delete
    run_ok(with_ns(&["delete", case.plural, &name])).await;
    let gone = cli
        .run(
            &with_ns(&["get", case.plural, &name])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .await;
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{what}: after delete: {}",
        gone.stderr
    );

    // bad input: 422 with kube's field path, nothing stored
    let bad_name = format!("bad-{suffix}");
    let bad = named(case.bad.clone(), &bad_name);
    let file = common::write_manifest(dir, &format!("{suffix}-{}-bad.json", case.plural), &bad);
    let refused = cli
        .run(
            &with_ns(&["create", "-f", &file])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .await;
    assert!(!refused.ok, "{what}: bad input accepted");
    assert!(
        refused.stderr.contains("is invalid") && refused.stderr.contains(case.bad_field),
        "{what}: bad input: {}",
        refused.stderr
    );
    let stored = cli
        .run(
            &with_ns(&["get", case.plural, &bad_name])
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .await;
    assert!(
        !stored.ok && stored.stderr.contains("NotFound"),
        "{what}: bad object stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn core_kinds_through_kubectl() {
    let t = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let bin = kubectl_dir();
    let clis = [
        Cli::new(PathBuf::from("kubectl"), &t.host.kubeconfig, "kubectl"),
        Cli::new(bin.join("kubectl.1.27"), &t.host.kubeconfig, "kubectl.1.27"),
        Cli::new(bin.join("kubectl.1.33"), &t.host.kubeconfig, "kubectl.1.33"),
    ];
    for (i, cli) in clis.iter().enumerate() {
        for case in cases() {
            journey(cli, &case, dir.path(), &format!("v{i}")).await;
        }
    }
    t.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_run_makes_a_pending_pod() {
    let t = common::start().await;
    let kubectl = common::Kubectl::new(&t.host.kubeconfig);
    kubectl.ok(&["run", "web", "--image=nginx"]).await;
    let table = kubectl.ok(&["get", "pods"]).await;
    let row = table
        .lines()
        .find(|l| l.starts_with("web "))
        .unwrap_or_else(|| panic!("no web pod:\n{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cells[..4], ["web", "0/1", "Pending", "0"], "{table}");
    let pod = kubectl.ok(&["get", "pod", "web", "-o", "json"]).await;
    let pod: Value = serde_json::from_str(&pod).unwrap();
    assert_eq!(pod["metadata"]["labels"]["run"], "web");
    assert_eq!(pod["spec"]["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(pod["spec"]["restartPolicy"], "Always");
    assert_eq!(pod["status"]["phase"], "Pending");
    // `get all` lists pods (category `all`).
    let all = kubectl.ok(&["get", "all"]).await;
    assert!(all.contains("pod/web"), "{all}");

    // `kubectl create quota` (a protobuf body from kubectl 1.32 on), good and bad.
    kubectl
        .ok(&["create", "quota", "q", "--hard=pods=5,requests.cpu=1"])
        .await;
    let hard = kubectl
        .ok(&[
            "get",
            "quota",
            "q",
            "-o",
            "jsonpath={.spec.hard.pods} {.spec.hard.requests\\.cpu}",
        ])
        .await;
    assert_eq!(hard, "5 1");
    let refused = kubectl
        .run(&["create", "quota", "bad", "--hard=widgets=1"])
        .await;
    assert!(
        !refused.ok && refused.stderr.contains("spec.hard[widgets]"),
        "{}",
        refused.stderr
    );
    t.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_scale_subresources() {
    let t = common::start().await;
    let kubectl = common::Kubectl::new(&t.host.kubeconfig);
    let dir = tempfile::tempdir().unwrap();
    let rc = json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let quota = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "10", "limits.cpu": "2"}}});
    for (name, obj) in [("rc.json", rc), ("quota.json", quota)] {
        let file = common::write_manifest(dir.path(), name, &obj);
        kubectl.ok(&["create", "-f", &file]).await;
    }

    // scale: kubectl's Scale round trip, and the selector the Scale reports.
    kubectl.ok(&["scale", "rc", "web", "--replicas=4"]).await;
    let replicas = kubectl
        .ok(&["get", "rc", "web", "-o", "jsonpath={.spec.replicas}"])
        .await;
    assert_eq!(replicas, "4");
    let scale = kubectl
        .ok(&[
            "get",
            "--raw",
            "/api/v1/namespaces/default/replicationcontrollers/web/scale",
        ])
        .await;
    let scale: Value = serde_json::from_str(&scale).unwrap();
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["spec"]["replicas"], 4);
    assert_eq!(scale["status"]["selector"], "app=web");

    // status: what a quota controller would write shows in the Table.
    let status = json!({"status": {"hard": {"pods": "10", "limits.cpu": "2"}, "used": {"pods": "3", "limits.cpu": "500m"}}});
    kubectl
        .ok(&[
            "patch",
            "quota",
            "q",
            "--subresource=status",
            "--type=merge",
            "-p",
            &status.to_string(),
        ])
        .await;
    let table = kubectl.ok(&["get", "quota", "q"]).await;
    let row = table.lines().nth(1).unwrap_or_default();
    assert!(
        row.contains("pods: 3/10") && row.contains("limits.cpu: 500m/2"),
        "{table}"
    );
    // A write of the main resource keeps the status.
    kubectl
        .ok(&[
            "patch",
            "quota",
            "q",
            "--type=merge",
            "-p",
            r#"{"spec":{"hard":{"pods":"20"}},"status":{"used":{"pods":"9"}}}"#,
        ])
        .await;
    let used = kubectl
        .ok(&[
            "get",
            "quota",
            "q",
            "-o",
            "jsonpath={.spec.hard.pods} {.status.used.pods}",
        ])
        .await;
    assert_eq!(used, "20 3");

    // pods/binding: a scheduler's assignment, once.
    let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "db"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "node-1"}});
    kubectl.ok(&["run", "db", "--image=postgres:16"]).await;
    let file = common::write_manifest(dir.path(), "binding.json", &binding);
    let path = "/api/v1/namespaces/default/pods/db/binding";
    kubectl.ok(&["create", "--raw", path, "-f", &file]).await;
    let bound = kubectl
        .ok(&[
            "get",
            "pod",
            "db",
            "-o",
            "jsonpath={.spec.nodeName} {.status.conditions[?(@.type==\"PodScheduled\")].status}",
        ])
        .await;
    assert_eq!(bound, "node-1 True");
    let again = kubectl.run(&["create", "--raw", path, "-f", &file]).await;
    assert!(
        !again.ok && again.stderr.contains("already assigned to node"),
        "{}",
        again.stderr
    );
    let resources = kubectl.ok(&["get", "--raw", "/api/v1"]).await;
    assert!(resources.contains("\"pods/binding\""), "{resources}");

    // `get all` shows the pods' and replication controllers' category.
    let all = kubectl.ok(&["get", "all"]).await;
    assert!(
        all.contains("pod/db") && all.contains("replicationcontroller/web"),
        "{all}"
    );
    t.host.stop().await;
}
