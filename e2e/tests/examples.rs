//! Every manifest in `examples/` applied with the real kubectl against `flotilla local-up`
//! (its three default members: member1 4 nodes of 8 CPU and member2 3 nodes of 4 CPU in
//! eu-west-1, member3 2 nodes of 2 CPU in us-east-1) and its outcome checked in the members
//! themselves: the replica split per member, the images per region, the CRD and its custom
//! resource, the dependency that followed its workload, and a failover off a failed member.
//! A new example without a check here fails the test.
//!
//! Needs the binary: `cargo build --bin flotilla` (or `FLOTILLA_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "support/members.rs"]
mod members;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use members::{Clusters, MEMBERS, WAIT, start_default_local_up, total};
use support::eventually;

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples")
}

fn example(name: &str) -> String {
    examples_dir().join(name).to_str().unwrap().to_string()
}

fn apply(c: &Clusters, name: &str) {
    c.host.ok(&["apply", "-f", &example(name)]);
}

fn delete(c: &Clusters, name: &str) {
    c.host.ok(&["delete", "-f", &example(name), "--wait=true"]);
}

/// Waits until no member has Deployment `name` any more (deleting an example frees its
/// capacity for the next one).
fn wait_gone(c: &Clusters, name: &str) {
    c.wait_replicas(
        "default",
        name,
        &format!("{name} gone from every member"),
        |r| r.is_empty(),
    );
}

/// The image of Deployment `default/name` in `member`.
fn image_in(c: &Clusters, member: &str, name: &str) -> Result<String, String> {
    let d = c
        .member(member)
        .try_get(&["deploy", "-n", "default", name])?
        .ok_or_else(|| format!("no {name} in {member} yet"))?;
    Ok(d["spec"]["template"]["spec"]["containers"][0]["image"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

fn check_divided_dynamic_weight(c: &Clusters) {
    apply(c, "divided-dynamic-weight.yaml");
    // Free capacity for 500m pods: member1 64, member2 24, member3 8.
    let r = c.wait_replicas("default", "web-dynamic", "12 replicas by capacity", |r| {
        total(r) == 12 && r.len() == 3
    });
    assert!(
        r["member1"] > r["member2"] && r["member2"] > r["member3"] && r["member3"] >= 1,
        "the biggest member gets the most: {r:?}"
    );
    // Journey 1's end: the host's Deployment is READY 12/12, summed from the members.
    eventually(WAIT, "web-dynamic READY 12/12 on the host", || {
        let row = c.host.ok(&["get", "deploy", "web-dynamic", "--no-headers"]);
        if row.split_whitespace().nth(1) == Some("12/12") {
            Ok(())
        } else {
            Err(row)
        }
    });
    delete(c, "divided-dynamic-weight.yaml");
    wait_gone(c, "web-dynamic");
}

/// Applies `file`, waits until Deployment `name` has exactly `want` replicas per member,
/// deletes it and waits until it is gone from every member.
fn check_exact_split(c: &Clusters, file: &str, name: &str, want: &[(&str, i64)]) {
    apply(c, file);
    let want: BTreeMap<String, i64> = want.iter().map(|(m, n)| (m.to_string(), *n)).collect();
    c.wait_replicas("default", name, &format!("{name} split {want:?}"), |r| {
        *r == want
    });
    delete(c, file);
    wait_gone(c, name);
}

fn check_divided_aggregated(c: &Clusters) {
    check_exact_split(
        c,
        "divided-aggregated.yaml",
        "web-aggregated",
        &[("member1", 6)],
    );
}

fn check_duplicated(c: &Clusters) {
    let each = [("member1", 2), ("member2", 2), ("member3", 2)];
    check_exact_split(c, "duplicated.yaml", "web-duplicated", &each);
}

fn check_static_weights(c: &Clusters) {
    let split = [("member1", 2), ("member2", 4)];
    check_exact_split(c, "static-weights.yaml", "web-static", &split);
}

fn check_spread_by_region(c: &Clusters) {
    apply(c, "spread-by-region.yaml");
    let r = c.wait_replicas(
        "default",
        "web-spread",
        "8 replicas over two regions",
        |r| total(r) == 8 && r.len() == 2,
    );
    assert!(
        r.contains_key("member3") && r.values().all(|n| *n >= 1),
        "one member in each region (member3 is us-east-1's only one): {r:?}"
    );
    delete(c, "spread-by-region.yaml");
    wait_gone(c, "web-spread");
}

fn check_override_by_region(c: &Clusters) {
    apply(c, "override-by-region.yaml");
    for (member, registry) in [
        ("member1", "registry.eu-west-1.example.com"),
        ("member2", "registry.eu-west-1.example.com"),
        ("member3", "registry.us-east-1.example.com"),
    ] {
        let want = format!("{registry}/nginx:1.25");
        eventually(WAIT, &format!("{member} pulls from {registry}"), || {
            let image = image_in(c, member, "web-override")?;
            if image == want { Ok(()) } else { Err(image) }
        });
    }
    // The template keeps its own image: overrides shape only the members' copies (the
    // components' kubeconfig reads the template store, not the merged view).
    let templates = support::Kubectl::new(
        c.host.bin.clone(),
        &c.data.join("components.kubeconfig"),
        &c.data.join("cache-templates"),
    );
    let image = templates.ok(&[
        "get",
        "deploy",
        "web-override",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(image, "nginx:1.25");
    delete(c, "override-by-region.yaml");
    wait_gone(c, "web-override");
}

fn check_crd_and_cr(c: &Clusters) {
    apply(c, "crd-widget.yaml");
    for (m, k) in &c.members {
        eventually(WAIT, &format!("the Widget CRD in {m}"), || {
            k.try_get(&["crd", "widgets.example.io"])?
                .map(|_| ())
                .ok_or_else(|| "not yet".to_string())
        });
    }
    // The host serves the new kind at once; apply the custom resource once discovery has it.
    eventually(WAIT, "the Widget applied on the host", || {
        let out = c
            .host
            .run(&["apply", "-f", &example("crd-widget-instance.yaml")]);
        if out.status.success() {
            Ok(())
        } else {
            Err(out.stderr)
        }
    });
    for (m, k) in &c.members {
        eventually(WAIT, &format!("Widget blue in {m}"), || {
            let w = k
                .try_get(&["widgets.example.io", "-n", "default", "blue"])?
                .ok_or_else(|| "not yet".to_string())?;
            if w["spec"]["size"] == 3 {
                Ok(())
            } else {
                Err(w.to_string())
            }
        });
    }
    c.host
        .ok(&["delete", "-f", &example("crd-widget-instance.yaml")]);
    for (m, k) in &c.members {
        eventually(WAIT, &format!("Widget blue gone from {m}"), || {
            match k.try_get(&["widgets.example.io", "-n", "default", "blue"])? {
                None => Ok(()),
                Some(_) => Err("still there".into()),
            }
        });
    }
    delete(c, "crd-widget.yaml");
}

fn check_propagate_deps(c: &Clusters) {
    apply(c, "propagate-deps.yaml");
    c.wait_replicas("default", "web-deps", "web-deps in member2 only", |r| {
        *r == BTreeMap::from([("member2".to_string(), 2)])
    });
    eventually(WAIT, "the ConfigMap followed web-deps to member2", || {
        let cm = c
            .member("member2")
            .try_get(&["cm", "-n", "default", "web-deps-conf"])?
            .ok_or_else(|| "not yet".to_string())?;
        if cm["data"]["mode"] == "fast" {
            Ok(())
        } else {
            Err(cm.to_string())
        }
    });
    for m in ["member1", "member3"] {
        assert!(
            c.member(m)
                .try_get(&["cm", "-n", "default", "web-deps-conf"])
                .unwrap()
                .is_none(),
            "web-deps-conf must stay out of {m}, where web-deps does not run"
        );
    }
    delete(c, "propagate-deps.yaml");
    wait_gone(c, "web-deps");
    eventually(
        WAIT,
        "the ConfigMap left member2 with its workload",
        || match c
            .member("member2")
            .try_get(&["cm", "-n", "default", "web-deps-conf"])?
        {
            None => Ok(()),
            Some(_) => Err("still there".into()),
        },
    );
}

fn check_failover(c: &Clusters) {
    apply(c, "failover.yaml");
    c.wait_replicas("default", "web-failover", "2 in each member", |r| {
        r.len() == 3 && r.values().all(|n| *n == 2)
    });
    c.set_unreachable(&["member3"]);
    c.wait_ready(&["member3"], "False");
    // After the 10 s toleration the binding leaves member3; its replicas go to the others.
    eventually(WAIT, "the binding moved off member3", || {
        let b = c.binding_clusters("default", "web-failover-deployment");
        if !b.contains_key("member3") && total(&b) == 6 {
            Ok(b)
        } else {
            Err(format!("{b:?}"))
        }
    });
    c.wait_replicas_skipping(
        "default",
        "web-failover",
        &["member3"],
        "3 each in member1 and member2",
        |r| *r == BTreeMap::from([("member1".to_string(), 3), ("member2".to_string(), 3)]),
    );
    c.set_unreachable(&[]);
    c.wait_all_ready();
    delete(c, "failover.yaml");
    wait_gone(c, "web-failover");
}

/// What an example's check does against the running control plane.
type Check = fn(&Clusters);

#[test]
fn every_example_applies_and_does_what_its_comment_says() {
    let checks: &[(&str, Check)] = &[
        ("divided-dynamic-weight.yaml", check_divided_dynamic_weight),
        ("divided-aggregated.yaml", check_divided_aggregated),
        ("duplicated.yaml", check_duplicated),
        ("static-weights.yaml", check_static_weights),
        ("spread-by-region.yaml", check_spread_by_region),
        ("override-by-region.yaml", check_override_by_region),
        ("crd-widget.yaml", check_crd_and_cr),
        ("propagate-deps.yaml", check_propagate_deps),
        ("failover.yaml", check_failover),
    ];
    // Every example has a check (crd-widget-instance.yaml is part of crd-widget.yaml's), and
    // every example says what it shows on its first line.
    let mut files: Vec<String> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    files.sort();
    for f in &files {
        let text = std::fs::read_to_string(examples_dir().join(f)).unwrap();
        assert!(
            text.starts_with("# "),
            "{f} does not start with a comment saying what it shows"
        );
        assert!(
            f == "crd-widget-instance.yaml" || checks.iter().any(|(n, _)| n == f),
            "examples/{f} has no check in e2e/tests/examples.rs"
        );
    }

    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("flotilla");
    let up = start_default_local_up(&data);
    let c = Clusters::new(&data, &up.kubeconfig, &dir.path().join("cache"));
    c.wait_all_ready();
    assert_eq!(c.members.len(), MEMBERS.len());
    for (name, check) in checks {
        eprintln!("example {name}");
        check(&c);
    }
    drop(up);
}
