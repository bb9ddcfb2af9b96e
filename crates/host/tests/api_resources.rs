//! `kubectl api-resources` on the host against kube-apiserver 1.33's list for the built-in
//! groups, kept as data in `tests/data/kube-1.33-api-resources.txt`: the same names, short
//! names, preferred versions, scopes and kinds, except the entries that file marks as
//! deliberately not served (with the reason), which the host must not list.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::Kubectl;

/// One `kubectl api-resources` row.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    shortnames: String,
    namespaced: String,
    kind: String,
}

/// (name, apiVersion) -> row, and the reasons of the rows not served.
struct Expected {
    served: BTreeMap<(String, String), Row>,
    not_served: BTreeMap<(String, String), String>,
}

fn expected() -> Expected {
    let text = include_str!("data/kube-1.33-api-resources.txt");
    let mut served = BTreeMap::new();
    let mut not_served = BTreeMap::new();
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (cols, reason) = match line.split_once('|') {
            Some((c, r)) => (c, Some(r.trim().to_string())),
            None => (line, None),
        };
        let f: Vec<&str> = cols.split_whitespace().collect();
        assert_eq!(f.len(), 5, "malformed data line: {line}");
        let key = (f[0].to_string(), f[2].to_string());
        let row = Row {
            shortnames: if f[1] == "-" {
                String::new()
            } else {
                f[1].to_string()
            },
            namespaced: f[3].to_string(),
            kind: f[4].to_string(),
        };
        match reason {
            Some(r) => {
                assert!(!r.is_empty(), "a not-served entry needs a reason: {line}");
                not_served.insert(key, r);
            }
            None => {
                served.insert(key, row);
            }
        }
    }
    Expected { served, not_served }
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Parses `kubectl api-resources` by the header's column offsets (SHORTNAMES may be blank).
fn parse(out: &str) -> BTreeMap<(String, String), Row> {
    let mut lines = out.lines();
    let header = lines.next().expect("header");
    let starts: Vec<usize> = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
        .iter()
        .map(|h| {
            header
                .find(h)
                .unwrap_or_else(|| panic!("no {h} in {header}"))
        })
        .collect();
    let cell = |line: &str, i: usize| -> String {
        let start = starts[i].min(line.len());
        let end = starts
            .get(i + 1)
            .map_or(line.len(), |e| (*e).min(line.len()));
        line[start..end].trim().to_string()
    };
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            (
                (cell(l, 0), cell(l, 2)),
                Row {
                    shortnames: cell(l, 1),
                    namespaced: cell(l, 3),
                    kind: cell(l, 4),
                },
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn api_resources_match_kube_apiserver_1_33() {
    let h = common::start().await;
    let expected = expected();
    let groups: BTreeSet<String> = expected
        .served
        .keys()
        .chain(expected.not_served.keys())
        .map(|(_, av)| group_of(av).to_string())
        .collect();
    for version in ["1.27", "1.33"] {
        let k = Kubectl::versioned(&h.host.kubeconfig, version);
        let out = k.ok(&["api-resources"]).await;
        let host: BTreeMap<_, _> = parse(&out)
            .into_iter()
            .filter(|((_, av), _)| groups.contains(group_of(av)))
            .collect();
        let mut problems = Vec::new();
        for (key, want) in &expected.served {
            match host.get(key) {
                None => problems.push(format!("missing: {} {}", key.0, key.1)),
                Some(got) if got != want => {
                    problems.push(format!("differs: {} {}: {got:?} != {want:?}", key.0, key.1))
                }
                Some(_) => {}
            }
        }
        for (key, reason) in &expected.not_served {
            if host.contains_key(key) {
                problems.push(format!(
                    "served though listed as not served ({reason}): {} {}",
                    key.0, key.1
                ));
            }
        }
        for key in host.keys() {
            if !expected.served.contains_key(key) && !expected.not_served.contains_key(key) {
                problems.push(format!("not in kube-apiserver 1.33: {} {}", key.0, key.1));
            }
        }
        assert!(
            problems.is_empty(),
            "kubectl {version} api-resources differs from kube-apiserver 1.33:\n{}\n\nfull output:\n{out}",
            problems.join("\n")
        );
    }
    h.host.stop().await;
}
