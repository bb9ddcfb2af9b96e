//! The README's walk-through, run as written: the commands are extracted from README.md, so
//! the two cannot drift. The quick start block (```` ```sh start ````) must be the two commands
//! a newcomer runs; the test runs the same `local-up` (the binary under test instead of
//! `cargo run`, on a free port) with its data directory `.flotilla` in a scratch working
//! directory that also holds a link to `examples/`. Then every line of every
//! ```` ```sh walkthrough ```` block runs there through `bash -c` with that KUBECONFIG, in
//! order:
//!
//! - a line ending in `  # expect: TEXT` is retried (every 500 ms, up to two minutes) until it
//!   exits 0 and its output (stdout and stderr) contains TEXT: most of the walk-through waits
//!   for something to converge;
//! - a line ending in `  # fails: TEXT` must exit non-zero with TEXT in its output;
//! - any other line must exit 0 the first time.
//!
//! It runs twice: on the default embedded storage, and unchanged on `--storage etcd`.
//!
//! Needs the binary: `cargo build --bin flotilla` (or `FLOTILLA_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{COMMAND_TIMEOUT, Output, run_bounded, start_local_up};

/// How long an `expect:` line may take to converge.
const CONVERGE: Duration = Duration::from_secs(120);

/// The quick start, exactly: the two commands a newcomer needs. The test runs the first (its
/// `local-up`, with the KUBECONFIG it prints); the second is what is running it.
const START: [&str; 2] = [
    "cargo run --release --bin flotilla -- local-up",
    "bash e2e/test-all.sh",
];

/// What a walk-through line asks of its command.
#[derive(Debug, PartialEq)]
enum Check {
    Succeeds,
    Expect(String),
    Fails(String),
}

/// One command of the walk-through, with its README line number for messages.
#[derive(Debug)]
struct Step {
    line: usize,
    command: String,
    check: Check,
}

/// The lines of the README's fenced blocks whose info string is `sh TAG`, with their line
/// numbers; `\` continuations joined.
fn block_lines(readme: &str, tag: &str) -> Vec<(usize, String)> {
    let fence = format!("```sh {tag}");
    let mut out = Vec::new();
    let mut inside = false;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in readme.lines().enumerate() {
        let n = i + 1;
        if !inside {
            inside = line.trim_end() == fence;
            continue;
        }
        if line.starts_with("```") {
            inside = false;
            assert!(
                pending.is_none(),
                "README.md:{n}: a block ends in a continuation"
            );
            continue;
        }
        let (start, mut text) = pending.take().unwrap_or((n, String::new()));
        if let Some(head) = line.strip_suffix('\\') {
            text.push_str(head);
            pending = Some((start, text));
            continue;
        }
        text.push_str(line.trim_start_matches(if text.is_empty() { "" } else { " " }));
        out.push((start, text));
    }
    assert!(!inside, "README.md: a ```sh {tag} block is not closed");
    out
}

/// The steps of the walk-through blocks: comment-only and blank lines dropped, a trailing
/// `  # ...` comment read for `expect:` / `fails:`.
fn steps(readme: &str) -> Vec<Step> {
    block_lines(readme, "walkthrough")
        .into_iter()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|(line, text)| {
            let (command, comment) = match text.rfind("  # ") {
                Some(at) => (text[..at].trim().to_string(), text[at + 4..].trim()),
                None => (text.trim().to_string(), ""),
            };
            let check = if let Some(t) = comment.strip_prefix("expect: ") {
                Check::Expect(t.trim().to_string())
            } else if let Some(t) = comment.strip_prefix("fails: ") {
                Check::Fails(t.trim().to_string())
            } else {
                Check::Succeeds
            };
            Step {
                line,
                command,
                check,
            }
        })
        .collect()
}

fn run_line(dir: &Path, kubeconfig: &Path, command: &str) -> Output {
    let mut cmd = Command::new("bash");
    cmd.args(["-o", "pipefail", "-c", command])
        .current_dir(dir)
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", dir.join(".kube-cache"))
        .stdin(std::process::Stdio::null());
    run_bounded(&mut cmd, COMMAND_TIMEOUT, command)
}

#[test]
fn the_parser_reads_checks_and_continuations() {
    let readme = "x\n```sh walkthrough\n# a comment\nkubectl get a  # expect: b\nkubectl \\\n    delete c  # fails: Forbidden\n\nkubectl get d  # just a note\n```\n```sh\nnot run\n```\n";
    let s = steps(readme);
    assert_eq!(s.len(), 3, "{s:?}");
    assert_eq!(s[0].command, "kubectl get a");
    assert_eq!(s[0].check, Check::Expect("b".into()));
    assert_eq!(s[1].command, "kubectl delete c");
    assert_eq!(s[1].line, 5);
    assert_eq!(s[1].check, Check::Fails("Forbidden".into()));
    assert_eq!(s[2].check, Check::Succeeds);
}

#[test]
fn the_readme_walk_through_runs_as_written() {
    walk_through(&[]);
}

/// The same walk-through, unchanged, on `local-up --storage etcd` (a real etcd on a loopback
/// port; the test command installs `etcd`).
#[test]
fn the_readme_walk_through_runs_unchanged_on_etcd() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let etcd = runtime.block_on(flotilla_etcd::testing::EtcdCluster::start(1));
    let servers = etcd.servers_flag();
    walk_through(&["--storage", "etcd", "--etcd-servers", &servers]);
    drop(etcd);
}

/// Runs every walk-through step against a `local-up` started with `extra` flags.
fn walk_through(extra: &[&str]) {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md"))
            .unwrap();
    let start: Vec<String> = block_lines(&readme, "start")
        .into_iter()
        .map(|(_, l)| l.split("  #").next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    assert_eq!(
        start, START,
        "the README's quick start changed: update this test"
    );
    let steps = steps(&readme);
    assert!(
        steps.len() > 20,
        "the walk-through has {} commands",
        steps.len()
    );

    let dir = tempfile::tempdir().unwrap();
    let work = dir.path();
    std::os::unix::fs::symlink(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples"),
        work.join("examples"),
    )
    .unwrap();
    let mut args = vec!["--members", "3"];
    args.extend_from_slice(extra);
    let up = start_local_up(&work.join(".flotilla"), &args);
    for step in &steps {
        let where_ = format!("README.md:{}: `{}`", step.line, step.command);
        eprintln!("{where_}");
        match &step.check {
            Check::Succeeds => {
                let out = run_line(work, &up.kubeconfig, &step.command);
                assert!(
                    out.status.success(),
                    "{where_} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
                    out.status,
                    out.stdout,
                    out.stderr
                );
            }
            Check::Fails(text) => {
                let out = run_line(work, &up.kubeconfig, &step.command);
                let all = format!("{}{}", out.stdout, out.stderr);
                assert!(
                    !out.status.success() && all.contains(text.as_str()),
                    "{where_} should fail with {text:?} ({})\n{all}",
                    out.status
                );
            }
            Check::Expect(text) => {
                let deadline = Instant::now() + CONVERGE;
                loop {
                    let out = run_line(work, &up.kubeconfig, &step.command);
                    let all = format!("{}{}", out.stdout, out.stderr);
                    if out.status.success() && all.contains(text.as_str()) {
                        break;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "{where_}: no {text:?} within {CONVERGE:?} ({})\n{all}\n--- local-up log\n{}",
                        out.status,
                        up.log_text()
                            .lines()
                            .rev()
                            .take(40)
                            .collect::<Vec<_>>()
                            .join("\n")
                    );
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
    }
}
