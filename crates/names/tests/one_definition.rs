//! Keeps Karmada's facts defined once: every label, annotation, finalizer and taint key under
//! `*.karmada.io/`, the execution-namespace prefix and Karmada's well-known namespaces are
//! spelled only in `crates/names/src/karmada.rs`; everything else names the constant. A second
//! spelling would drift from the first unnoticed (the member-sim and a controller once
//! disagreed on a finalizer that way), so this test reads every `.rs` file under the
//! workspace's `crates/*/src` and `cmd/*/src` and fails on a string literal that spells one.
//!
//! API group/version strings (`cluster.karmada.io/v1alpha1`) are not facts of this kind: they
//! belong to each type's definition and are not checked here.

use std::path::{Path, PathBuf};

/// The one file allowed to spell the facts.
const DEFINING_FILE: &str = "crates/names/src/karmada.rs";

/// Literals that must not appear anywhere else (compared whole).
const EXACT: &[&str] = &[
    "karmada-system",
    "karmada-cluster",
    "karmada-aggregated-apiserver",
];

/// Literal prefixes that must not start a literal anywhere else.
const PREFIXES: &[&str] = &["karmada-es-"];

fn workspace_root() -> PathBuf {
    // crates/names -> the workspace.
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The string literals of one line of Rust (`"..."`, escapes honoured; raw strings and literals
/// spanning lines are rare in this code base and read as ordinary text).
fn literals(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\'' && i + 2 < bytes.len() && bytes[i + 2] == b'\'' {
            // A char literal such as '"'.
            i += 3;
            continue;
        }
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        let mut j = start;
        while j < bytes.len() && bytes[j] != b'"' {
            j += if bytes[j] == b'\\' { 2 } else { 1 };
        }
        out.push(&line[start..j.min(bytes.len())]);
        i = j + 1;
    }
    out
}

/// Whether `literal` spells a Karmada fact: a `<group>.karmada.io/<key>` or `karmada.io/<key>`
/// key (not an API version), or one of [`EXACT`] / [`PREFIXES`].
fn spells_a_fact(literal: &str) -> bool {
    if EXACT.contains(&literal) || PREFIXES.iter().any(|p| literal.starts_with(p)) {
        return true;
    }
    let Some((group, key)) = literal.split_once('/') else {
        return false;
    };
    let karmada_group = group == "karmada.io" || group.ends_with(".karmada.io");
    let group_chars = group
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'-');
    let version = key.starts_with('v') && key[1..].starts_with(|c: char| c.is_ascii_digit());
    karmada_group && group_chars && !key.is_empty() && !version && !key.contains('/')
}

#[test]
fn karmada_facts_are_spelled_once() {
    let root = workspace_root();
    let mut files = Vec::new();
    for top in ["crates", "cmd"] {
        let Ok(entries) = std::fs::read_dir(root.join(top)) else {
            panic!("no {top}/ under {}", root.display());
        };
        for entry in entries.flatten() {
            rust_files(&entry.path().join("src"), &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let defining = root.join(DEFINING_FILE);
    assert!(
        files.contains(&defining),
        "{} not scanned",
        defining.display()
    );

    let mut found = Vec::new();
    for file in &files {
        if *file == defining {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(file) else {
            panic!("reading {}", file.display());
        };
        for (n, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for literal in literals(line) {
                if spells_a_fact(literal) {
                    let rel = file.strip_prefix(&root).unwrap_or(file);
                    found.push(format!("{}:{}: \"{literal}\"", rel.display(), n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "Karmada facts spelled outside {DEFINING_FILE} (use flotilla_names::karmada):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_checker_knows_a_fact_when_it_sees_one() {
    for fact in [
        "karmada.io/cluster-controller",
        "cluster.karmada.io/not-ready",
        "work.karmada.io/name",
        "propagationpolicy.karmada.io/permanent-id",
        "karmada-es-member1",
        "karmada-system",
    ] {
        assert!(spells_a_fact(fact), "{fact}");
    }
    for other in [
        "cluster.karmada.io/v1alpha1",
        "/apis/cluster.karmada.io/v1alpha1/clusters",
        "karmada-systems",
        "example.com/name",
        "namespace is not karmada-es-x",
    ] {
        assert!(!spells_a_fact(other), "{other}");
    }
    assert_eq!(
        literals(r#"let a = "x\"y"; let q = '"'; f("karmada-system")"#),
        [r#"x\"y"#, "karmada-system"]
    );
}
