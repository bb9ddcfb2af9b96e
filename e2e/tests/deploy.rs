//! `deploy/` (the manifests that run Flotilla's components on an existing Kubernetes host)
//! validated against Flotilla's own host, the only API server here:
//!
//! - `kubectl kustomize deploy/` renders, and `kubectl apply --dry-run=server` accepts every
//!   rendered object (the namespaces are created first: a server dry run of a namespace does
//!   not make it exist for the objects in it, on Kubernetes as here);
//! - the references between the objects hold: ServiceAccounts named by bindings and pods,
//!   ClusterRoles named by bindings, the Service named by the APIServices (port, selector,
//!   target port), the claim and the Secret the aggregated server mounts, namespaces;
//! - each component's ClusterRole grants what its identity gets in local-up
//!   (`flotilla_rbac::component_roles`) and no more, each ServiceAccount has one binding;
//! - the APIServices match the ones `flotilla aggregated-apiserver` registers itself;
//! - every container's arguments parse as `flotilla` flags, and the controllers elect leaders;
//! - `crds/kustomization.yaml` lists every CRD in `crds/`;
//! - the serving-certificate step of `deploy/README.md` runs as written (openssl, then kubectl
//!   with a server dry run): the certificate chains to its CA and names the Service, the Secret
//!   and the APIService patches are accepted.

// The steps are test code: a panic is how they report a failed step.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;
use support::{
    COMMAND_TIMEOUT, Kubectl, flotilla_bin, kubectl_binary, run_bounded, start_local_up,
    write_script,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The rendered objects of `kubectl kustomize deploy/`, in order.
fn render(k: &Kubectl) -> (String, Vec<Value>) {
    let dir = repo().join("deploy");
    let text = k.ok(&["kustomize", dir.to_str().unwrap()]);
    let objects = serde_norway::Deserializer::from_str(&text)
        .map(|doc| {
            let v: Value = serde::Deserialize::deserialize(doc).unwrap();
            v
        })
        .filter(|v| !v.is_null())
        .collect();
    (text, objects)
}

/// A local-up host under `dir` and kubectl pointed at it (keep the host alive while used).
fn host_with_kubectl(dir: &Path) -> (support::ApiserverProcess, Kubectl) {
    let host = start_local_up(&dir.join("host"), &[]);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.join("cache"),
    );
    (host, k)
}

fn name(o: &Value) -> &str {
    o["metadata"]["name"].as_str().unwrap()
}

fn namespace(o: &Value) -> Option<&str> {
    o["metadata"]["namespace"].as_str()
}

fn of_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn find<'a>(objects: &'a [Value], kind: &str, ns: Option<&str>, n: &str) -> Option<&'a Value> {
    objects
        .iter()
        .find(|o| o["kind"] == kind && namespace(o) == ns && name(o) == n)
}

fn rules(role: &Value) -> Vec<flotilla_rbac::PolicyRule> {
    role["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| flotilla_rbac::PolicyRule::from_json(r).unwrap())
        .collect()
}

#[test]
fn deploy_renders_dry_runs_and_holds_together() {
    let tmp = tempfile::tempdir().unwrap();
    let (_host, k) = host_with_kubectl(tmp.path());
    let (text, objects) = render(&k);
    let kinds: BTreeSet<&str> = objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "CustomResourceDefinition",
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Deployment",
        "Service",
        "APIService",
        "PersistentVolumeClaim",
    ] {
        assert!(kinds.contains(kind), "deploy/ renders no {kind}: {kinds:?}");
    }

    // crds/kustomization.yaml lists every CRD file, and each renders.
    let mut crd_files: Vec<String> = std::fs::read_dir(repo().join("crds"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|f| f.ends_with(".yaml") && f != "kustomization.yaml")
        .collect();
    crd_files.sort();
    let crds = of_kind(&objects, "CustomResourceDefinition");
    assert_eq!(crds.len(), crd_files.len(), "{crd_files:?}");
    for file in &crd_files {
        let crd_name = file
            .split_once('_')
            .map(|(g, p)| format!("{}.{g}", p.trim_end_matches(".yaml")));
        let crd_name = crd_name.unwrap();
        assert!(
            crds.iter().any(|c| name(c) == crd_name),
            "crds/{file} ({crd_name}) is not rendered"
        );
    }

    // Every object is accepted by a server-side dry run. Namespaces first, for real.
    let namespaces: BTreeSet<&str> = of_kind(&objects, "Namespace")
        .into_iter()
        .map(name)
        .collect();
    for ns in &namespaces {
        k.ok(&["create", "namespace", ns]);
    }
    let rendered = tmp.path().join("rendered.yaml");
    std::fs::write(&rendered, &text).unwrap();
    let out = k.ok(&[
        "apply",
        "--dry-run=server",
        "-f",
        rendered.to_str().unwrap(),
    ]);
    let accepted: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with("(server dry run)"))
        .collect();
    assert_eq!(
        accepted.len(),
        objects.len(),
        "not every object accepted:\n{out}"
    );
    for o in &objects {
        let kind = o["kind"].as_str().unwrap().to_lowercase();
        assert!(
            accepted
                .iter()
                .any(|l| l.starts_with(&kind) && l.contains(&format!("/{} ", name(o)))),
            "{kind}/{} not accepted:\n{out}",
            name(o)
        );
    }
    // Dry run means nothing was made: the components' objects do not exist.
    assert!(
        k.try_get(&["deployment", "-n", "karmada-system", "flotilla-scheduler"])
            .unwrap()
            .is_none()
    );

    // Namespaced objects live in a rendered namespace or one every cluster has.
    for o in &objects {
        if let Some(ns) = namespace(o) {
            assert!(
                namespaces.contains(ns) || ns == "kube-system",
                "{}/{} in unknown namespace {ns}",
                o["kind"],
                name(o)
            );
        }
    }

    // Bindings name rendered roles and ServiceAccounts.
    let mut bound: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for b in of_kind(&objects, "ClusterRoleBinding")
        .into_iter()
        .chain(of_kind(&objects, "RoleBinding"))
    {
        let role_kind = b["roleRef"]["kind"].as_str().unwrap();
        let role = b["roleRef"]["name"].as_str().unwrap();
        let role_ns = if role_kind == "Role" {
            namespace(b)
        } else {
            None
        };
        assert!(
            find(&objects, role_kind, role_ns, role).is_some(),
            "binding {} names {role_kind} {role}, which deploy/ does not create",
            name(b)
        );
        for s in b["subjects"].as_array().unwrap() {
            assert_eq!(s["kind"], "ServiceAccount", "binding {}", name(b));
            let (sns, sname) = (
                s["namespace"].as_str().unwrap(),
                s["name"].as_str().unwrap(),
            );
            assert!(
                find(&objects, "ServiceAccount", Some(sns), sname).is_some(),
                "binding {} names ServiceAccount {sns}/{sname}, which deploy/ does not create",
                name(b)
            );
            bound
                .entry((sns.to_string(), sname.to_string()))
                .or_default()
                .push(role.to_string());
        }
    }

    // Each component's ServiceAccount is bound to its own ClusterRole only, whose rules are
    // its local-up identity's (the aggregated server's minus registering APIServices and
    // endpoints, which deploy/ does with --no-register).
    let deployments = of_kind(&objects, "Deployment");
    let mut seen_roles = BTreeSet::new();
    for d in &deployments {
        let pod = &d["spec"]["template"]["spec"];
        let sa = pod["serviceAccountName"].as_str().unwrap();
        let ns = namespace(d).unwrap();
        assert!(
            find(&objects, "ServiceAccount", Some(ns), sa).is_some(),
            "Deployment {} runs as {ns}/{sa}, which deploy/ does not create",
            name(d)
        );
        let roles = bound
            .get(&(ns.to_string(), sa.to_string()))
            .cloned()
            .unwrap_or_default();
        assert_eq!(roles.len(), 1, "{ns}/{sa} has bindings {roles:?}");
        let role = find(&objects, "ClusterRole", None, &roles[0]).unwrap();
        let user = format!("system:{}", roles[0]);
        let (_, expected) = flotilla_rbac::component_roles()
            .into_iter()
            .find(|(u, _)| *u == user)
            .unwrap_or_else(|| panic!("ClusterRole {} is no component's ({user})", roles[0]));
        let granted = rules(role);
        let extra = flotilla_rbac::uncovered(&expected, &granted);
        assert!(
            extra.is_empty(),
            "{} grants more than {user} in local-up: {extra:?}",
            roles[0]
        );
        let missing = flotilla_rbac::uncovered(&granted, &expected);
        if user == flotilla_rbac::AGGREGATED_APISERVER_USER {
            let args = pod["containers"][0]["args"].as_array().unwrap();
            assert!(args.iter().any(|a| a == "--no-register"), "{args:?}");
            for m in &missing {
                let what = (
                    m.api_groups[0].as_str(),
                    m.resources[0].as_str(),
                    m.verbs[0].as_str(),
                );
                assert!(
                    matches!(
                        what,
                        ("apiregistration.k8s.io", "apiservices", _)
                            | ("discovery.k8s.io", "endpointslices", _)
                            | ("", "namespaces", "create")
                    ),
                    "{} lacks {m:?}, which {user} has in local-up",
                    roles[0]
                );
            }
        } else {
            assert!(
                missing.is_empty(),
                "{} lacks {missing:?}, which {user} has in local-up",
                roles[0]
            );
        }
        seen_roles.insert(user);
    }
    let all: BTreeSet<String> = flotilla_rbac::component_roles()
        .into_iter()
        .map(|(u, _)| u.to_string())
        .collect();
    assert_eq!(seen_roles, all, "a component has no Deployment");

    // The scheduler is kept from Secrets (member credentials), as in local-up.
    let scheduler = find(&objects, "ClusterRole", None, "flotilla-scheduler").unwrap();
    let secrets = flotilla_rbac::PolicyRule::resource(&["get"], &[""], &["secrets"]);
    assert!(!flotilla_rbac::uncovered(&rules(scheduler), &[secrets]).is_empty());

    // Pods: images, arguments that parse as flotilla flags, volumes that resolve.
    let readme = std::fs::read_to_string(repo().join("deploy/README.md")).unwrap();
    for d in &deployments {
        let ns = namespace(d).unwrap();
        let spec = &d["spec"];
        let pod = &spec["template"]["spec"];
        let labels = &spec["template"]["metadata"]["labels"];
        for (key, value) in spec["selector"]["matchLabels"].as_object().unwrap() {
            assert_eq!(
                &labels[key],
                value,
                "Deployment {} selects its own pods",
                name(d)
            );
        }
        for c in pod["containers"].as_array().unwrap() {
            assert!(
                c["image"].as_str().unwrap().starts_with("flotilla:"),
                "{}: {}",
                name(d),
                c["image"]
            );
            let args: Vec<&str> = c["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            // `--help` after the flags: clap rejects an unknown flag before printing help.
            let mut cmd = Command::new(flotilla_bin());
            cmd.args(&args).arg("--help").stdin(Stdio::null());
            let out = run_bounded(
                &mut cmd,
                COMMAND_TIMEOUT,
                &format!("flotilla {}", args.join(" ")),
            );
            assert!(
                out.status.success(),
                "Deployment {}: `flotilla {}` does not parse:\n{}",
                name(d),
                args.join(" "),
                out.stderr
            );
            if args[0] == "controller-manager" || args[0] == "scheduler" {
                assert!(args.contains(&"--leader-elect=true"), "{args:?}");
                assert!(spec["replicas"].as_i64().unwrap() >= 2, "{}", name(d));
                assert!(
                    !args.iter().any(|a| a.starts_with("--kubeconfig")),
                    "in-cluster configuration: {args:?}"
                );
            }
        }
        for v in pod["volumes"].as_array().into_iter().flatten() {
            if let Some(claim) = v["persistentVolumeClaim"]["claimName"].as_str() {
                assert!(
                    find(&objects, "PersistentVolumeClaim", Some(ns), claim).is_some(),
                    "{claim}"
                );
            }
            if let Some(secret) = v["secret"]["secretName"].as_str() {
                // The serving certificate is the operator's: deploy/README.md says how to make it.
                let step = format!("-n {ns} create secret tls {secret} ");
                assert!(
                    find(&objects, "Secret", Some(ns), secret).is_some() || readme.contains(&step),
                    "Secret {ns}/{secret} is neither rendered nor made by a step of deploy/README.md"
                );
            }
        }
    }

    // The APIServices reach the aggregated server's Service, and match what the server
    // registers by itself in local-up.
    let apiservices = of_kind(&objects, "APIService");
    assert_eq!(apiservices.len(), 2);
    for a in apiservices {
        let svc = &a["spec"]["service"];
        let (sns, sname) = (
            svc["namespace"].as_str().unwrap(),
            svc["name"].as_str().unwrap(),
        );
        let service = find(&objects, "Service", Some(sns), sname)
            .unwrap_or_else(|| panic!("APIService {} names Service {sns}/{sname}", name(a)));
        let port = service["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["port"] == svc["port"])
            .unwrap_or_else(|| panic!("Service {sname} has no port {}", svc["port"]));
        let selector = service["spec"]["selector"].as_object().unwrap();
        let backend = deployments
            .iter()
            .find(|d| {
                let labels = &d["spec"]["template"]["metadata"]["labels"];
                namespace(d) == Some(sns) && selector.iter().all(|(k, v)| &labels[k] == v)
            })
            .unwrap_or_else(|| panic!("Service {sname} selects no Deployment"));
        let container_ports = backend["spec"]["template"]["spec"]["containers"][0]["ports"]
            .as_array()
            .unwrap();
        assert!(
            container_ports.iter().any(
                |p| p["name"] == port["targetPort"] || p["containerPort"] == port["targetPort"]
            ),
            "Service {sname} targets {} which {} does not expose",
            port["targetPort"],
            name(backend)
        );
        let registered = k.get_json(&["apiservice", name(a)]);
        for field in [
            "group",
            "version",
            "groupPriorityMinimum",
            "versionPriority",
            "service",
        ] {
            assert_eq!(
                a["spec"][field],
                registered["spec"][field],
                "APIService {} spec.{field} differs from local-up's",
                name(a)
            );
        }
    }
}

/// The shell block of step `step` ("3. ...") of deploy/README.md's numbered steps.
fn readme_step_block(readme: &str, step: &str) -> String {
    let start = readme
        .find(&format!("\n{step}. "))
        .unwrap_or_else(|| panic!("deploy/README.md has no step {step}"));
    let rest = &readme[start..];
    let open = rest.find("```sh\n").expect("a ```sh block") + "```sh\n".len();
    let close = rest[open..].find("```").expect("the block's end");
    rest[open..open + close]
        .lines()
        .map(|l| l.strip_prefix("   ").unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readmes_serving_certificate_step_works_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let (host, k) = host_with_kubectl(tmp.path());
    k.ok(&["create", "namespace", "karmada-system"]);
    // `kubectl` in the step is this host's, every write a server dry run.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    write_script(
        &bin.join("kubectl"),
        &format!(
            "#!/bin/sh\nexec {} --kubeconfig {} --cache-dir {} \"$@\" --dry-run=server\n",
            k.bin.display(),
            host.kubeconfig.display(),
            k.cache_dir.display()
        ),
    );
    let readme = std::fs::read_to_string(repo().join("deploy/README.md")).unwrap();
    let block = readme_step_block(&readme, "3");
    let work = tmp.path().join("step3");
    std::fs::create_dir_all(&work).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let mut cmd = Command::new("bash");
    cmd.args(["-euo", "pipefail", "-c", &block])
        .current_dir(&work)
        .env("PATH", path)
        .stdin(Stdio::null());
    let out = run_bounded(&mut cmd, COMMAND_TIMEOUT, "deploy/README.md step 3");
    assert!(
        out.status.success(),
        "step 3 failed:\n{block}\n--- stdout\n{}\n--- stderr\n{}",
        out.stdout,
        out.stderr
    );
    for line in [
        "secret/flotilla-aggregated-serving created (server dry run)",
        // kubectl patch does not mark its dry runs; the caBundle check below does.
        "apiservice.apiregistration.k8s.io/v1alpha1.cluster.karmada.io patched",
        "apiservice.apiregistration.k8s.io/v1alpha1.search.karmada.io patched",
    ] {
        assert!(out.stdout.contains(line), "no {line:?} in:\n{}", out.stdout);
    }
    // The certificate is one the host's aggregator would accept for the Service.
    let openssl = |args: &[&str]| {
        let mut cmd = Command::new("openssl");
        cmd.args(args).current_dir(&work).stdin(Stdio::null());
        let out = run_bounded(&mut cmd, COMMAND_TIMEOUT, "openssl");
        assert!(out.status.success(), "openssl {args:?}: {}", out.stderr);
        out.stdout
    };
    assert!(openssl(&["verify", "-CAfile", "ca.crt", "serving.crt"]).contains("serving.crt: OK"));
    let sans = openssl(&[
        "x509",
        "-in",
        "serving.crt",
        "-noout",
        "-ext",
        "subjectAltName",
    ]);
    assert!(
        sans.contains("DNS:karmada-aggregated-apiserver.karmada-system.svc"),
        "{sans}"
    );
    // Dry runs only: nothing was stored, the host's own registration is untouched.
    assert!(
        k.try_get(&[
            "secret",
            "-n",
            "karmada-system",
            "flotilla-aggregated-serving"
        ])
        .unwrap()
        .is_none()
    );
    let ca = std::fs::read_to_string(work.join("ca.crt")).unwrap();
    let registered = k.get_json(&["apiservice", "v1alpha1.cluster.karmada.io"]);
    let bundle = registered["spec"]["caBundle"].as_str().unwrap();
    assert!(!bundle.is_empty());
    assert_ne!(
        bundle,
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &ca)
    );
}
