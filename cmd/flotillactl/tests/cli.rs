//! The `flotillactl` binary's command line: its subcommands and the errors for bad input that
//! need no host. Having an integration test here also makes `cargo test` build the binary for
//! the e2e tests that run it.

use std::process::{Command, Output};

fn flotillactl(args: &[&str]) -> Output {
    match Command::new(env!("CARGO_BIN_EXE_flotillactl"))
        .args(args)
        .output()
    {
        Ok(out) => out,
        Err(e) => panic!("running flotillactl {args:?}: {e}"),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_lists_every_command() {
    let out = flotillactl(&["--help"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let help = text(&out.stdout);
    for command in ["join", "unjoin", "reschedule", "promote", "top"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(command)),
            "{command} missing from --help:\n{help}"
        );
    }
}

#[test]
fn join_without_a_member_kubeconfig_is_a_usage_error() {
    let out = flotillactl(&["join", "member1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--cluster-kubeconfig"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn join_rejects_a_name_that_is_not_a_dns_label() {
    let out = flotillactl(&[
        "join",
        "Member_1",
        "--cluster-kubeconfig",
        "/nonexistent/member.kubeconfig",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("Member_1"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn reschedule_rejects_a_target_without_a_kind() {
    let out = flotillactl(&[
        "--kubeconfig",
        "/nonexistent/host.kubeconfig",
        "reschedule",
        "nginx",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("KIND/NAME"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn promote_and_top_clusters_show_examples() {
    for args in [&["promote", "--help"][..], &["top", "clusters", "--help"]] {
        let out = flotillactl(args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let help = text(&out.stdout);
        let examples = help
            .split_once("Examples:")
            .unwrap_or_else(|| panic!("{args:?}: no examples\n{help}"))
            .1;
        assert!(
            examples
                .lines()
                .any(|l| l.trim_start().starts_with("flotillactl ")),
            "{args:?}: {help}"
        );
    }
}

#[test]
fn promote_without_a_cluster_is_a_usage_error() {
    let out = flotillactl(&["promote", "deployment", "nginx"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--cluster"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn promote_rejects_a_bad_object_before_reaching_the_host() {
    let out = flotillactl(&[
        "--kubeconfig",
        "/nonexistent/host.kubeconfig",
        "promote",
        "deploy/a/b",
        "-C",
        "member1",
    ]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("is not TYPE/NAME"), "{stderr}");
    assert!(!stderr.contains("kubeconfig"), "{stderr}");
}
