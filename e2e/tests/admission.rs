//! The host's admission checks as a kubectl user meets them, against `flotilla local-up`:
//!
//! - deletion protection: a Deployment template labelled
//!   `resourcetemplate.karmada.io/deletion-protected=Always` and propagated to a member is not
//!   deleted by `kubectl delete` (non-zero exit, Karmada's message naming the label, the
//!   template and the member's copy still there); `kubectl delete --all` deletes the
//!   unprotected objects next to a protected one and refuses that one; after
//!   `kubectl label ... deletion-protected-` the delete works and the member's copy goes too;
//! - OverridePolicy and ClusterOverridePolicy validation: each policy that cannot apply (an
//!   unknown operator, `replace` on command or args, a path, predicate path, fieldPath or
//!   subPath that is not a JSON pointer, a missing value for add/replace) is refused by
//!   `kubectl apply` with "is invalid" and the field named, and nothing is stored; a good
//!   policy is accepted.
//!
//! Needs the binary: `cargo build --bin flotilla` (or `FLOTILLA_BIN`); local-up's log is quoted
//! in failure messages.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::time::Duration;

use support::{ApiserverProcess, Kubectl, deployment_yaml, eventually, kubectl_binary};

const WAIT: Duration = Duration::from_secs(60);
const LABEL: &str = "resourcetemplate.karmada.io/deletion-protected";
const REFUSAL: &str = "This resource is protected, please make sure to remove the label: \
                       resourcetemplate.karmada.io/deletion-protected";

/// [`eventually`] with the standard deadline, printing the tail of local-up's log on failure.
fn wait<T>(up: &ApiserverProcess, what: &str, check: impl FnMut() -> Result<T, String>) -> T {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        eventually(WAIT, what, check)
    }));
    match result {
        Ok(v) => v,
        Err(e) => {
            let log = up.log_text();
            let lines: Vec<&str> = log.lines().collect();
            let tail = lines[lines.len().saturating_sub(60)..].join("\n");
            eprintln!("--- last lines of local-up's log:\n{tail}");
            std::panic::resume_unwind(e)
        }
    }
}

const POLICY: &str = r#"apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: web}
  placement:
    clusterAffinity: {clusterNames: [member1]}
"#;

#[test]
fn deletion_protected_templates_stay_until_the_label_goes() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let data = dir.join("flotilla");
    let up = support::start_local_up(&data, &["--members", "1"]);
    let host = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.join("cache"),
    );
    let member = Kubectl::new(
        kubectl_binary("kubectl"),
        &data.join("members").join("member1.kubeconfig"),
        &dir.join("cache-member1"),
    );
    wait(&up, "member1 Ready", || {
        let table = host.ok(&["get", "clusters", "--no-headers"]);
        let ready = table.lines().any(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            c.len() == 5 && c[0] == "member1" && c[3] == "True"
        });
        if ready { Ok(()) } else { Err(table) }
    });

    // A template propagated to member1, then protected.
    let out = host.apply_file(
        dir,
        "web",
        &deployment_yaml("default", "web", 1, "100m", "nginx:1"),
    );
    assert!(out.status.success(), "{}", out.stderr);
    let out = host.apply_file(dir, "policy", POLICY);
    assert!(out.status.success(), "{}", out.stderr);
    wait(&up, "web in member1", || {
        match member.try_get(&["deploy", "web"])? {
            Some(_) => Ok(()),
            None => Err("not yet".into()),
        }
    });
    host.ok(&["label", "deploy", "web", &format!("{LABEL}=Always")]);

    let out = host.fails(&["delete", "deploy", "web"]);
    assert!(
        out.stderr.contains("Error from server (Forbidden)") && out.stderr.contains(REFUSAL),
        "{}",
        out.stderr
    );
    // Refused under a server-side dry run as well.
    let out = host.fails(&["delete", "deploy", "web", "--dry-run=server"]);
    assert!(out.stderr.contains(REFUSAL), "{}", out.stderr);
    let kept = host.try_get(&["deploy", "web"]).unwrap();
    assert!(
        kept.as_ref()
            .is_some_and(|d| d["metadata"]["deletionTimestamp"].is_null()),
        "the protected template changed: {kept:?}"
    );
    assert!(member.try_get(&["deploy", "web"]).unwrap().is_some());

    // Any other value protects nothing; `delete --all` takes the others and refuses the one.
    for (name, value) in [
        ("open", None),
        ("never", Some("Never")),
        ("kept", Some("Always")),
    ] {
        host.ok(&["create", "configmap", name, "--from-literal=k=v"]);
        if let Some(value) = value {
            host.ok(&["label", "configmap", name, &format!("{LABEL}={value}")]);
        }
    }
    let out = host.fails(&["delete", "configmap", "open", "never", "kept"]);
    assert!(out.stderr.contains(REFUSAL), "{}", out.stderr);
    assert!(
        out.stdout.contains("\"open\" deleted") && out.stdout.contains("\"never\" deleted"),
        "{}",
        out.stdout
    );
    assert!(host.try_get(&["configmap", "kept"]).unwrap().is_some());

    // Without the label, deleting works, and the member's copy goes too.
    host.ok(&["label", "deploy", "web", &format!("{LABEL}-")]);
    host.ok(&["delete", "deploy", "web"]);
    wait(&up, "web gone from the host", || {
        match host.try_get(&["deploy", "web"])? {
            None => Ok(()),
            Some(d) => Err(d["metadata"].to_string()),
        }
    });
    wait(&up, "web gone from member1", || {
        match member.try_get(&["deploy", "web"])? {
            None => Ok(()),
            Some(_) => Err("still there".into()),
        }
    });
}

/// A policy of `kind` named `name` with one rule holding `overriders` (YAML flow text).
fn override_policy(kind: &str, name: &str, overriders: &str) -> String {
    let namespace = if kind == "OverridePolicy" {
        "\n  namespace: default"
    } else {
        ""
    };
    format!(
        "apiVersion: policy.karmada.io/v1alpha1\nkind: {kind}\nmetadata:\n  name: {name}{namespace}\n\
         spec:\n  resourceSelectors:\n  - {{apiVersion: apps/v1, kind: Deployment}}\n  \
         overrideRules:\n  - targetCluster: {{clusterNames: [member1]}}\n    overriders: {overriders}\n"
    )
}

#[test]
fn override_policies_that_cannot_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let up = support::start_local_up(&dir.join("flotilla"), &[]);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.join("cache"),
    );
    let rule = "spec.overrideRules[0].overriders";
    let cases = [
        (
            "unknown-operator",
            r#"{plaintext: [{path: /spec/replicas, operator: merge, value: 2}]}"#,
            format!("{rule}.plaintext[0].operator"),
        ),
        (
            "command-replace",
            r#"{commandOverrider: [{containerName: web, operator: replace, value: [run]}]}"#,
            format!("{rule}.commandOverrider[0].operator"),
        ),
        (
            "args-replace",
            r#"{argsOverrider: [{containerName: web, operator: replace, value: [-v]}]}"#,
            format!("{rule}.argsOverrider[0].operator"),
        ),
        (
            "relative-path",
            r#"{plaintext: [{path: spec/replicas, operator: replace, value: 2}]}"#,
            format!("{rule}.plaintext[0].path"),
        ),
        (
            "bad-escape",
            r#"{plaintext: [{path: "/metadata/labels/a~2b", operator: remove}]}"#,
            format!("{rule}.plaintext[0].path"),
        ),
        (
            "predicate-path",
            r#"{imageOverrider: [{predicate: {path: image}, component: Tag, operator: replace, value: "2"}]}"#,
            format!("{rule}.imageOverrider[0].predicate.path"),
        ),
        (
            "field-path",
            r#"{fieldOverrider: [{fieldPath: data/config, yaml: [{subPath: /a, operator: remove}]}]}"#,
            format!("{rule}.fieldOverrider[0].fieldPath"),
        ),
        (
            "sub-path",
            r#"{fieldOverrider: [{fieldPath: /data/config, json: [{subPath: a, operator: remove}]}]}"#,
            format!("{rule}.fieldOverrider[0].json[0].subPath"),
        ),
        (
            "add-without-value",
            r#"{plaintext: [{path: /metadata/labels/zone, operator: add}]}"#,
            format!("{rule}.plaintext[0].value"),
        ),
        (
            "replace-without-value",
            r#"{fieldOverrider: [{fieldPath: /data/config, yaml: [{subPath: /port, operator: replace}]}]}"#,
            format!("{rule}.fieldOverrider[0].yaml[0].value"),
        ),
    ];
    for kind in ["OverridePolicy", "ClusterOverridePolicy"] {
        let resource = if kind == "OverridePolicy" {
            "overridepolicy"
        } else {
            "clusteroverridepolicy"
        };
        for (name, overriders, field) in &cases {
            let out = k.apply_file(dir, name, &override_policy(kind, name, overriders));
            assert!(
                !out.status.success(),
                "{kind} {name} was accepted: {}",
                out.stdout
            );
            assert!(
                out.stderr.contains("is invalid") && out.stderr.contains(field.as_str()),
                "{kind} {name}: wanted \"is invalid\" naming {field}:\n{}",
                out.stderr
            );
            let stored = k.try_get(&[resource, name]).unwrap();
            assert!(stored.is_none(), "{kind} {name} was stored: {stored:?}");
        }
        let good = override_policy(
            kind,
            "good",
            r#"{plaintext: [{path: /spec/replicas, operator: replace, value: 2}],
                imageOverrider: [{predicate: {path: /spec/template/spec/containers/0/image},
                                  component: Registry, operator: replace, value: registry.example}],
                commandOverrider: [{containerName: web, operator: add, value: [--verbose]}],
                fieldOverrider: [{fieldPath: /data/config, yaml: [{subPath: /server/port, operator: replace, value: 8081}]}]}"#,
        );
        let out = k.apply_file(dir, "good", &good);
        assert!(out.status.success(), "{kind} good: {}", out.stderr);
        let stored = k.try_get(&[resource, "good"]).unwrap().unwrap();
        assert_eq!(
            stored["spec"]["overrideRules"][0]["overriders"]["plaintext"][0]["value"],
            2
        );
    }
}
