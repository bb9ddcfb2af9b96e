//! Shared harness for the host's integration tests: starts the host API server in-process on
//! a free loopback port with a fresh data directory and builds a kube-rs client from the
//! kubeconfig it writes (TLS, client certificate), exactly as a user would.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;

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
