//! Shared harness for the host's integration tests: starts the host API server in-process on
//! a free loopback port with a fresh data directory and builds a kube-rs client from the
//! kubeconfig it writes (TLS, client certificate), exactly as a user would.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use flotilla_host::{HostOptions, RunningHost};

pub struct TestHost {
    pub host: RunningHost,
    pub client: kube::Client,
    pub dir: tempfile::TempDir,
}

/// A kube-rs client for a kubeconfig file.
pub async fn client_for(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("read kubeconfig");
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kubeconfig to config");
    kube::Client::try_from(config).expect("client")
}

/// Starts a host with `opts` adjusted by `tweak` (port 0, temp data dir).
pub async fn start_with(tweak: impl FnOnce(&mut HostOptions)) -> TestHost {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = HostOptions::new(dir.path());
    opts.secure_port = 0;
    tweak(&mut opts);
    let host = flotilla_host::start(opts).await.expect("start host");
    let client = client_for(&host.kubeconfig).await;
    TestHost { host, client, dir }
}

pub async fn start() -> TestHost {
    start_with(|_| {}).await
}

/// The real kubectl against a kubeconfig, with its own discovery cache. `$KUBECTL` names
/// another binary (e.g. `kubectl.1.27`) to run the same tests with another kubectl version.
pub struct Kubectl {
    pub kubeconfig: PathBuf,
    cache: tempfile::TempDir,
    /// The kubectl binary: `kubectl` (the version dispatcher on PATH) unless chosen.
    program: PathBuf,
}

pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kubectl {
    pub fn new(kubeconfig: &Path) -> Self {
        Self {
            kubeconfig: kubeconfig.to_path_buf(),
            cache: tempfile::tempdir().unwrap(),
            program: PathBuf::from(std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into())),
        }
    }

    /// A kubectl of one version (`1.27`): `kubectl.1.27`, installed next to the file the
    /// `kubectl` on PATH links to.
    pub fn versioned(kubeconfig: &Path, version: &str) -> Self {
        let mut k = Self::new(kubeconfig);
        k.program = kubectl_binary(&format!("kubectl.{version}"));
        k
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(&self.program);
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.cache.path())
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Ran {
        let out = tokio::time::timeout(Duration::from_secs(60), self.command(args).output())
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish within 60 s"))
            .unwrap();
        Ran {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and requires success.
    pub async fn ok(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(
            r.ok,
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            r.stdout, r.stderr
        );
        r.stdout
    }

    /// Runs and requires failure; returns stderr.
    pub async fn fails(&self, args: &[&str]) -> String {
        let r = self.run(args).await;
        assert!(
            !r.ok,
            "kubectl {args:?} succeeded but should have failed:\nstdout: {}",
            r.stdout
        );
        r.stderr
    }
}

/// Writes `obj` as a manifest file; returns its path.
pub fn write_manifest(dir: &Path, name: &str, obj: &Value) -> String {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(obj).unwrap()).unwrap();
    path.to_string_lossy().into_owned()
}

/// The path of a kubectl binary installed next to the file the `kubectl` on PATH links to.
pub fn kubectl_binary(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join("kubectl");
        if let Ok(real) = std::fs::canonicalize(&candidate) {
            if let Some(parent) = real.parent() {
                let versioned = parent.join(name);
                if versioned.exists() {
                    return versioned;
                }
            }
        }
    }
    panic!("{name} not found next to the kubectl on PATH")
}
