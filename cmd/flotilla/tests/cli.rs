//! The `flotilla` binary's command line as a user meets it: the subcommands it offers and
//! the errors for bad flags. Having an integration test here also makes `cargo test` build
//! the binary itself, with the same features as the test build, so the e2e tests that run
//! it as a process need no separate `cargo build`.

use std::process::{Command, Output};

fn flotilla(args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args(args)
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("running flotilla {args:?}: {e}"),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_every_component() {
    let out = flotilla(&["--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for command in [
        "apiserver",
        "aggregated-apiserver",
        "member-sim",
        "local-up",
        "controller-manager",
        "scheduler",
    ] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from --help:\n{help}"
        );
    }
}

#[test]
fn unknown_flag_fails_with_its_name() {
    let out = flotilla(&["apiserver", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2), "clap's usage error exit code");
    assert!(
        text(&out.stderr).contains("--no-such-flag"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn bad_flag_value_is_rejected_before_anything_starts() {
    let out = flotilla(&["member-sim", "--name", "m", "--nodes", "lots"]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("--nodes") && stderr.contains("lots"),
        "{stderr}"
    );
}

#[test]
fn controller_manager_without_a_cluster_says_what_is_missing() {
    // No kubeconfig file and no in-cluster service account: a message, not a hang or panic.
    let out = Command::new(env!("CARGO_BIN_EXE_flotilla"))
        .args([
            "controller-manager",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ])
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => panic!("running flotilla: {e}"),
    };
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("/nonexistent/kubeconfig"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn every_server_command_takes_the_object_size_limit() {
    for command in ["apiserver", "local-up", "member-sim"] {
        let out = flotilla(&[command, "--help"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let help = text(&out.stdout);
        assert!(
            help.contains("--max-object-bytes") && help.contains("[default: 1572864]"),
            "{command} --help:\n{help}"
        );
        let out = flotilla(&[command, "--max-object-bytes", "big"]);
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert!(
            text(&out.stderr).contains("--max-object-bytes"),
            "{}",
            text(&out.stderr)
        );
    }
}
