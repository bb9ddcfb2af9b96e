//! The non-core built-in kinds of issue 18 on the host, driven with the real kubectl 1.27 and
//! 1.33 (one host each), table-driven over the kinds: create (with kubectl's generator where
//! it has one, otherwise `apply`), `get` with kube-apiserver's column headers, `get -o wide`,
//! `describe`, `explain`, a strategic merge `patch`, server-side apply, `delete`; bad input of
//! each kind answered 422 with kube's field path and nothing stored. And the two versions of
//! HorizontalPodAutoscaler: created as autoscaling/v1 it reads back as v2 with the CPU metric,
//! and created as v2 it reads back as v1 with the CPU target.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use serde_json::{Value, json};

use common::{Kubectl, write_manifest};

/// One kind's scenario.
struct Case {
    /// What kubectl is told (`hpa`, `csidrivers`).
    resource: &'static str,
    name: &'static str,
    namespaced: bool,
    /// The object for `apply` (and for server-side apply, with a label added).
    manifest: Value,
    /// kubectl's generator command, used instead of `apply` to create.
    generator: Option<Vec<&'static str>>,
    /// `kubectl get` column headers.
    headers: &'static str,
    /// A `kubectl explain` path.
    explain: &'static str,
    /// A strategic merge patch and the JSONPath / value it leads to.
    patch: Value,
    check: (&'static str, &'static str),
    /// A bad object, and the field path of the 422 it gets.
    bad: Value,
    bad_field: &'static str,
    /// The oldest kubectl whose `describe` reads the kind at a served version: kubectl 1.27
    /// describes IPAddresses through networking.k8s.io/v1alpha1 (1.31 and 1.32 through
    /// v1beta1), which kube-apiserver 1.33 does not serve by default either.
    describe_since: &'static str,
}

fn meta(name: &str, namespaced: bool) -> Value {
    if namespaced {
        json!({"name": name, "namespace": "default"})
    } else {
        json!({"name": name})
    }
}

fn obj(api_version: &str, kind: &str, name: &str, namespaced: bool, body: Value) -> Value {
    let mut o =
        json!({"apiVersion": api_version, "kind": kind, "metadata": meta(name, namespaced)});
    if let (Some(o), Some(b)) = (o.as_object_mut(), body.as_object()) {
        for (k, v) in b {
            o.insert(k.clone(), v.clone());
        }
    }
    o
}

fn label_patch() -> Value {
    json!({"metadata": {"labels": {"patched": "yes"}}})
}

const LABEL_CHECK: (&str, &str) = ("{.metadata.labels.patched}", "yes");

fn cases() -> Vec<Case> {
    let hpa_spec = |min: i64| {
        json!({"spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": min, "maxReplicas": 3,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                "target": {"type": "Utilization", "averageUtilization": 50}}}]
        }})
    };
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    vec![
        Case {
            resource: "hpa",
            name: "web",
            namespaced: true,
            manifest: obj(
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                "web",
                true,
                hpa_spec(1),
            ),
            generator: Some(vec![
                "autoscale",
                "deployment",
                "web",
                "--min=1",
                "--max=3",
                "--cpu-percent=50",
            ]),
            headers: "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE",
            explain: "hpa.spec.scaleTargetRef",
            patch: json!({"spec": {"maxReplicas": 7}}),
            check: ("{.spec.maxReplicas}", "7"),
            bad: obj(
                "autoscaling/v2",
                "HorizontalPodAutoscaler",
                "bad-hpa",
                true,
                hpa_spec(0),
            ),
            bad_field: "spec.minReplicas",
            describe_since: "1.27",
        },
        Case {
            resource: "pdb",
            name: "web-pdb",
            namespaced: true,
            manifest: obj(
                "policy/v1",
                "PodDisruptionBudget",
                "web-pdb",
                true,
                json!({"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
            ),
            generator: Some(vec![
                "create",
                "pdb",
                "web-pdb",
                "--selector=app=web",
                "--min-available=1",
            ]),
            headers: "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
            explain: "pdb.spec.minAvailable",
            patch: json!({"spec": {"minAvailable": 2}}),
            check: ("{.spec.minAvailable}", "2"),
            bad: obj(
                "policy/v1",
                "PodDisruptionBudget",
                "bad-pdb",
                true,
                json!({"spec": {"minAvailable": 1, "maxUnavailable": 1}}),
            ),
            bad_field: "spec: Invalid value",
            describe_since: "1.27",
        },
        Case {
            resource: "ingress",
            name: "web-ing",
            namespaced: true,
            manifest: obj(
                "networking.k8s.io/v1",
                "Ingress",
                "web-ing",
                true,
                json!({"spec": {"rules": [
                {"host": "foo.example.com", "http": {"paths": [
                    {"path": "/", "pathType": "Prefix", "backend": backend.clone()}]}}]}}),
            ),
            generator: Some(vec![
                "create",
                "ingress",
                "web-ing",
                "--rule=foo.example.com/*=web:80",
            ]),
            headers: "NAME CLASS HOSTS ADDRESS PORTS AGE",
            explain: "ingress.spec.rules",
            patch: json!({"spec": {"ingressClassName": "nginx"}}),
            check: ("{.spec.ingressClassName}", "nginx"),
            bad: obj(
                "networking.k8s.io/v1",
                "Ingress",
                "bad-ing",
                true,
                json!({"spec": {"rules": [
                {"http": {"paths": [{"path": "/", "backend": backend.clone()}]}}]}}),
            ),
            bad_field: "spec.rules[0].http.paths[0].pathType",
            describe_since: "1.27",
        },
        Case {
            resource: "ingressclass",
            name: "nginx",
            namespaced: false,
            manifest: obj(
                "networking.k8s.io/v1",
                "IngressClass",
                "nginx",
                false,
                json!({"spec": {"controller": "example.com/ingress"}}),
            ),
            generator: None,
            headers: "NAME CONTROLLER PARAMETERS AGE",
            explain: "ingressclass.spec.controller",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "networking.k8s.io/v1",
                "IngressClass",
                "bad-ic",
                false,
                json!({"spec": {}}),
            ),
            bad_field: "spec.controller",
            describe_since: "1.27",
        },
        Case {
            resource: "netpol",
            name: "web-np",
            namespaced: true,
            manifest: obj(
                "networking.k8s.io/v1",
                "NetworkPolicy",
                "web-np",
                true,
                json!({"spec": {
                "podSelector": {"matchLabels": {"app": "web"}},
                "ingress": [{"ports": [{"port": 80}]}]}}),
            ),
            generator: None,
            headers: "NAME POD-SELECTOR AGE",
            explain: "netpol.spec.policyTypes",
            patch: json!({"spec": {"podSelector": {"matchLabels": {"app": "api"}}}}),
            check: ("{.spec.podSelector.matchLabels.app}", "api"),
            bad: obj(
                "networking.k8s.io/v1",
                "NetworkPolicy",
                "bad-np",
                true,
                json!({"spec": {
                "podSelector": {}, "ingress": [{"ports": [{"port": 70000}]}]}}),
            ),
            bad_field: "spec.ingress[0].ports[0].port",
            describe_since: "1.27",
        },
        Case {
            resource: "ipaddresses",
            name: "10.96.0.10",
            namespaced: false,
            manifest: obj(
                "networking.k8s.io/v1",
                "IPAddress",
                "10.96.0.10",
                false,
                json!({"spec": {
                "parentRef": {"group": "", "resource": "services", "namespace": "default", "name": "web"}}}),
            ),
            generator: None,
            headers: "NAME PARENTREF",
            explain: "ipaddresses.spec.parentRef",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "networking.k8s.io/v1",
                "IPAddress",
                "10.96.000.11",
                false,
                json!({"spec": {
                "parentRef": {"resource": "services", "name": "web"}}}),
            ),
            bad_field: "metadata.name",
            describe_since: "1.33",
        },
        Case {
            resource: "servicecidrs",
            name: "extra",
            namespaced: false,
            manifest: obj(
                "networking.k8s.io/v1",
                "ServiceCIDR",
                "extra",
                false,
                json!({"spec": {"cidrs": ["10.100.0.0/16"]}}),
            ),
            generator: None,
            headers: "NAME CIDRS AGE",
            explain: "servicecidrs.spec.cidrs",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "networking.k8s.io/v1",
                "ServiceCIDR",
                "bad-cidr",
                false,
                json!({"spec": {"cidrs": ["10.0.0.0/16", "10.1.0.0/16"]}}),
            ),
            bad_field: "spec.cidrs",
            describe_since: "1.27",
        },
        Case {
            resource: "csistoragecapacities",
            name: "cap-1",
            namespaced: true,
            manifest: obj(
                "storage.k8s.io/v1",
                "CSIStorageCapacity",
                "cap-1",
                true,
                json!({"storageClassName": "fast", "capacity": "10Gi"}),
            ),
            generator: None,
            headers: "NAME STORAGECLASSNAME CAPACITY",
            explain: "csistoragecapacities.storageClassName",
            patch: json!({"capacity": "20Gi"}),
            check: ("{.capacity}", "20Gi"),
            bad: obj(
                "storage.k8s.io/v1",
                "CSIStorageCapacity",
                "bad-cap",
                true,
                json!({"capacity": "1Gi"}),
            ),
            bad_field: "storageClassName",
            describe_since: "1.27",
        },
        Case {
            resource: "sc",
            name: "fast",
            namespaced: false,
            manifest: obj(
                "storage.k8s.io/v1",
                "StorageClass",
                "fast",
                false,
                json!({"provisioner": "csi.example.com"}),
            ),
            generator: None,
            headers: "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
            explain: "sc.provisioner",
            patch: json!({"allowVolumeExpansion": true}),
            check: ("{.allowVolumeExpansion}", "true"),
            bad: obj(
                "storage.k8s.io/v1",
                "StorageClass",
                "bad-sc",
                false,
                json!({"provisioner": "csi.example.com", "reclaimPolicy": "Recycle"}),
            ),
            bad_field: "reclaimPolicy",
            describe_since: "1.27",
        },
        Case {
            resource: "csidrivers",
            name: "csi.example.com",
            namespaced: false,
            manifest: obj(
                "storage.k8s.io/v1",
                "CSIDriver",
                "csi.example.com",
                false,
                json!({"spec": {"attachRequired": false}}),
            ),
            generator: None,
            headers: "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE",
            explain: "csidrivers.spec.attachRequired",
            patch: json!({"spec": {"podInfoOnMount": true}}),
            check: ("{.spec.podInfoOnMount}", "true"),
            bad: obj(
                "storage.k8s.io/v1",
                "CSIDriver",
                "bad.example.com",
                false,
                json!({"spec": {"fsGroupPolicy": "Bogus"}}),
            ),
            bad_field: "spec.fsGroupPolicy",
            describe_since: "1.27",
        },
        Case {
            resource: "csinodes",
            name: "node-1",
            namespaced: false,
            manifest: obj(
                "storage.k8s.io/v1",
                "CSINode",
                "node-1",
                false,
                json!({"spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]}}),
            ),
            generator: None,
            headers: "NAME DRIVERS AGE",
            explain: "csinodes.spec.drivers",
            patch: json!({"spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n2"}]}}),
            check: ("{.spec.drivers[0].nodeID}", "n2"),
            bad: obj(
                "storage.k8s.io/v1",
                "CSINode",
                "bad-node",
                false,
                json!({"spec": {"drivers": [{"name": "csi.example.com"}]}}),
            ),
            bad_field: "spec.drivers[0].nodeID",
            describe_since: "1.27",
        },
        Case {
            resource: "volumeattachments",
            name: "va-1",
            namespaced: false,
            manifest: obj(
                "storage.k8s.io/v1",
                "VolumeAttachment",
                "va-1",
                false,
                json!({"spec": {
                "attacher": "csi.example.com", "nodeName": "node-1",
                "source": {"persistentVolumeName": "pv-1"}}}),
            ),
            generator: None,
            headers: "NAME ATTACHER PV NODE ATTACHED AGE",
            explain: "volumeattachments.spec.source",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "storage.k8s.io/v1",
                "VolumeAttachment",
                "bad-va",
                false,
                json!({"spec": {
                "attacher": "csi.example.com", "nodeName": "node-1", "source": {}}}),
            ),
            bad_field: "spec.source",
            describe_since: "1.27",
        },
        Case {
            resource: "pc",
            name: "high",
            namespaced: false,
            manifest: obj(
                "scheduling.k8s.io/v1",
                "PriorityClass",
                "high",
                false,
                json!({"value": 1000, "description": "first"}),
            ),
            generator: Some(vec![
                "create",
                "priorityclass",
                "high",
                "--value=1000",
                "--description=first",
            ]),
            headers: "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY",
            explain: "pc.preemptionPolicy",
            patch: json!({"description": "changed"}),
            check: ("{.description}", "changed"),
            bad: obj(
                "scheduling.k8s.io/v1",
                "PriorityClass",
                "bad-pc",
                false,
                json!({"value": 2_000_000_000}),
            ),
            bad_field: "value",
            describe_since: "1.27",
        },
        Case {
            resource: "endpointslices",
            name: "web-abc",
            namespaced: true,
            manifest: obj(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                "web-abc",
                true,
                json!({
                "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}],
                "ports": [{"port": 80}]}),
            ),
            generator: None,
            headers: "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
            explain: "endpointslices.addressType",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "discovery.k8s.io/v1",
                "EndpointSlice",
                "bad-eps",
                true,
                json!({
                "addressType": "IPv4", "endpoints": [{"addresses": ["not-an-ip"]}]}),
            ),
            bad_field: "endpoints[0].addresses[0]",
            describe_since: "1.27",
        },
        Case {
            resource: "runtimeclasses",
            name: "gvisor",
            namespaced: false,
            manifest: obj(
                "node.k8s.io/v1",
                "RuntimeClass",
                "gvisor",
                false,
                json!({"handler": "runsc"}),
            ),
            generator: None,
            headers: "NAME HANDLER AGE",
            explain: "runtimeclasses.handler",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "node.k8s.io/v1",
                "RuntimeClass",
                "bad-rc",
                false,
                json!({"handler": "Bad_Handler"}),
            ),
            bad_field: "handler",
            describe_since: "1.27",
        },
        Case {
            resource: "controllerrevisions",
            name: "web-1",
            namespaced: true,
            manifest: obj(
                "apps/v1",
                "ControllerRevision",
                "web-1",
                true,
                json!({"revision": 1, "data": {"spec": {"template": {}}}}),
            ),
            generator: None,
            headers: "NAME CONTROLLER REVISION AGE",
            explain: "controllerrevisions.revision",
            patch: label_patch(),
            check: LABEL_CHECK,
            bad: obj(
                "apps/v1",
                "ControllerRevision",
                "bad-cr",
                true,
                json!({"revision": -1}),
            ),
            bad_field: "revision",
            describe_since: "1.27",
        },
    ]
}

/// The minor version of `1.27`.
fn minor(version: &str) -> u32 {
    version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// The first line of kubectl's table output, whitespace normalised.
fn header(out: &str) -> String {
    out.lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

async fn run_case(k: &Kubectl, version: &str, dir: &std::path::Path, c: &Case) -> Vec<String> {
    let mut failures = Vec::new();
    let ns: Vec<&str> = if c.namespaced {
        vec!["-n", "default"]
    } else {
        vec![]
    };
    let with_ns = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(ns.iter())
            .map(|s| s.to_string())
            .collect()
    };
    let run = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        k.run(&refs).await
    };
    let mut check = |ok: bool, what: String| {
        if !ok {
            failures.push(format!("{}: {what}", c.resource));
        }
    };

    // Create.
    let file = write_manifest(dir, &format!("{}.json", c.resource), &c.manifest);
    let created = match &c.generator {
        Some(g) => run(with_ns(g)).await,
        None => run(vec!["apply".into(), "-f".into(), file.clone()]).await,
    };
    check(created.ok, format!("create failed: {}", created.stderr));

    // get, get -o wide.
    let got = run(with_ns(&["get", c.resource, c.name])).await;
    check(
        got.ok && header(&got.stdout) == c.headers,
        format!(
            "get headers {:?} != {:?} ({})",
            header(&got.stdout),
            c.headers,
            got.stderr
        ),
    );
    check(
        got.stdout.contains(c.name),
        format!("get shows no {}: {}", c.name, got.stdout),
    );
    let wide = run(with_ns(&["get", c.resource, c.name, "-o", "wide"])).await;
    check(
        wide.ok && header(&wide.stdout).starts_with(c.headers),
        format!("get -o wide: {} {}", wide.stdout, wide.stderr),
    );

    // describe, explain.
    if minor(version) >= minor(c.describe_since) {
        let described = run(with_ns(&["describe", c.resource, c.name])).await;
        check(
            described.ok && described.stdout.contains(c.name),
            format!("describe: {} {}", described.stdout, described.stderr),
        );
    }
    let explained = run(vec!["explain".into(), c.explain.into()]).await;
    check(
        explained.ok && explained.stdout.contains("KIND:") && explained.stdout.contains("FIELD"),
        format!(
            "explain {}: {} {}",
            c.explain, explained.stdout, explained.stderr
        ),
    );

    // Strategic merge patch.
    let patched = run(with_ns(&[
        "patch",
        c.resource,
        c.name,
        "--type",
        "strategic",
        "-p",
        &c.patch.to_string(),
    ]))
    .await;
    check(patched.ok, format!("patch: {}", patched.stderr));
    let value = run(with_ns(&[
        "get",
        c.resource,
        c.name,
        "-o",
        &format!("jsonpath={}", c.check.0),
    ]))
    .await;
    check(
        value.stdout.trim() == c.check.1,
        format!(
            "after patch {} = {:?}, want {:?}",
            c.check.0, value.stdout, c.check.1
        ),
    );

    // Server-side apply: the manifest plus a label.
    let mut applied = c.manifest.clone();
    applied["metadata"]["labels"] = json!({"applied": "server-side"});
    let file = write_manifest(dir, &format!("{}-ssa.json", c.resource), &applied);
    let ssa = run(vec![
        "apply".into(),
        "--server-side".into(),
        "--force-conflicts".into(),
        "-f".into(),
        file,
    ])
    .await;
    check(ssa.ok, format!("server-side apply: {}", ssa.stderr));
    let label = run(with_ns(&[
        "get",
        c.resource,
        c.name,
        "-o",
        "jsonpath={.metadata.labels.applied}",
    ]))
    .await;
    check(
        label.stdout.trim() == "server-side",
        format!("after SSA label = {:?}", label.stdout),
    );

    // Delete.
    let deleted = run(with_ns(&["delete", c.resource, c.name])).await;
    check(deleted.ok, format!("delete: {}", deleted.stderr));
    let gone = run(with_ns(&["get", c.resource, c.name])).await;
    check(
        !gone.ok && gone.stderr.contains("NotFound"),
        format!("still there after delete: {}", gone.stdout),
    );

    // Bad input: 422 with kube's field path, nothing stored.
    let file = write_manifest(dir, &format!("{}-bad.json", c.resource), &c.bad);
    let bad = run(vec!["apply".into(), "-f".into(), file]).await;
    check(
        !bad.ok && bad.stderr.contains("is invalid") && bad.stderr.contains(c.bad_field),
        format!(
            "bad input not rejected with {}: {}",
            c.bad_field, bad.stderr
        ),
    );
    let bad_name = c.bad["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let stored = run(with_ns(&["get", c.resource, &bad_name])).await;
    check(
        !stored.ok && stored.stderr.contains("NotFound"),
        format!("bad object stored: {}", stored.stdout),
    );
    failures
}

async fn all_kinds_with(version: &str) {
    let h = common::start().await;
    let k = Kubectl::versioned(&h.host.kubeconfig, version);
    // The Deployment `kubectl autoscale` scales.
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}}});
    let file = write_manifest(h.dir.path(), "deploy.json", &deploy);
    k.ok(&["apply", "-f", &file]).await;
    let mut failures = Vec::new();
    for c in cases() {
        failures.extend(run_case(&k, version, h.dir.path(), &c).await);
    }
    assert!(
        failures.is_empty(),
        "kubectl {version}:\n{}",
        failures.join("\n")
    );
    h.host.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn group_kinds_with_kubectl_1_27() {
    all_kinds_with("1.27").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn group_kinds_with_kubectl_1_33() {
    all_kinds_with("1.33").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hpa_versions_convert_both_ways() {
    let h = common::start().await;
    let k = Kubectl::new(&h.host.kubeconfig);
    let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "from-v1", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 2, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}});
    let file = write_manifest(h.dir.path(), "v1.json", &v1);
    k.ok(&["apply", "-f", &file]).await;
    let as_v2: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "horizontalpodautoscalers.v2.autoscaling",
            "from-v1",
            "-n",
            "default",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    assert_eq!(as_v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        as_v2["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 60}}}])
    );
    assert_eq!(as_v2["spec"]["minReplicas"], 2);
    let as_v1: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "from-v1",
            "-n",
            "default",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 60);
    assert!(as_v1["spec"].get("metrics").is_none());
    // The Table of either version is printed from the stored v2 object.
    for resource in [
        "horizontalpodautoscalers.v1.autoscaling",
        "horizontalpodautoscalers.v2.autoscaling",
    ] {
        let table = k.ok(&["get", resource, "from-v1", "-n", "default"]).await;
        let row: Vec<&str> = table
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(
            row[..6],
            [
                "from-v1",
                "Deployment/web",
                "cpu:",
                "<unknown>/60%",
                "2",
                "5"
            ],
            "{resource}: {table}"
        );
    }

    // Created as v2 with a metric v1 cannot express: v1 shows the CPU target and keeps the
    // rest in an annotation; a v1 update keeps the other metric.
    let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "from-v2", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 4, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}},
            {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]}});
    let file = write_manifest(h.dir.path(), "v2.json", &v2);
    k.ok(&["apply", "-f", &file]).await;
    let as_v1: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "horizontalpodautoscalers.v1.autoscaling",
            "from-v2",
            "-n",
            "default",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    assert_eq!(as_v1["apiVersion"], "autoscaling/v1");
    assert_eq!(as_v1["spec"]["targetCPUUtilizationPercentage"], 70);
    assert_eq!(as_v1["spec"]["minReplicas"], 1, "defaulted");
    assert!(
        as_v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
            .as_str()
            .is_some_and(|m| m.contains("qps"))
    );
    k.ok(&[
        "patch",
        "horizontalpodautoscalers.v1.autoscaling",
        "from-v2",
        "-n",
        "default",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"targetCPUUtilizationPercentage":65}}"#,
    ])
    .await;
    let as_v2: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "horizontalpodautoscalers.v2.autoscaling",
            "from-v2",
            "-n",
            "default",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    let metrics = as_v2["spec"]["metrics"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(metrics.len(), 2, "{metrics:?}");
    assert!(
        metrics
            .iter()
            .any(|m| m["resource"]["target"]["averageUtilization"] == 65)
    );
    assert!(metrics.iter().any(|m| m["pods"]["metric"]["name"] == "qps"));
    assert!(
        as_v2["metadata"]
            .get("annotations")
            .is_none_or(|a| a.get("autoscaling.alpha.kubernetes.io/metrics").is_none())
    );
    // Server-side apply through v1, then through v2 by another manager: both land.
    let ssa_v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "ssa", "namespace": "default"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "maxReplicas": 3, "targetCPUUtilizationPercentage": 55}});
    let file = write_manifest(h.dir.path(), "ssa-v1.json", &ssa_v1);
    k.ok(&["apply", "--server-side", "--field-manager=one", "-f", &file])
        .await;
    let mut ssa_v2 = v2.clone();
    ssa_v2["metadata"]["name"] = json!("ssa");
    ssa_v2["spec"]["maxReplicas"] = json!(6);
    let file = write_manifest(h.dir.path(), "ssa-v2.json", &ssa_v2);
    k.ok(&[
        "apply",
        "--server-side",
        "--field-manager=two",
        "--force-conflicts",
        "-f",
        &file,
    ])
    .await;
    let got: Value = serde_json::from_str(
        &k.ok(&[
            "get",
            "horizontalpodautoscalers.v2.autoscaling",
            "ssa",
            "-n",
            "default",
            "-o",
            "json",
        ])
        .await,
    )
    .unwrap();
    assert_eq!(got["spec"]["maxReplicas"], 6);
    assert_eq!(
        got["spec"]["metrics"].as_array().map(Vec::len),
        Some(2),
        "{got}"
    );

    // A v1 object with a bad value gets v2's field path checks too.
    let bad = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "bad-v1", "namespace": "default"},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 3, "maxReplicas": 2}});
    let file = write_manifest(h.dir.path(), "bad-v1.json", &bad);
    let r = k.run(&["apply", "-f", &file]).await;
    assert!(
        !r.ok && r.stderr.contains("spec.maxReplicas"),
        "{}",
        r.stderr
    );
    h.host.stop().await;
}
