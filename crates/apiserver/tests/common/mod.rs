//! A generic API server for integration tests, as a client reaches it: every built-in kind of
//! kube-apiserver over an in-memory storage, served over TLS on a loopback port, and a
//! kube-rs client authenticated by a `system:masters` client certificate. No authorizer, no
//! Flotilla kinds, no controllers: what the library does on its own.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flotilla_apiserver::serve::{PeerTrust, ServerHandle};
use flotilla_apiserver::{ApiServer, Registry, ServerConfig};
use flotilla_storage::{MemoryStorage, Storage};

pub struct TestServer {
    pub server: Arc<ApiServer>,
    pub client: kube::Client,
    pub addr: SocketAddr,
    /// A kubeconfig of the `system:masters` client.
    pub kubeconfig: PathBuf,
    handle: ServerHandle,
    _dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn stop(self) {
        self.handle.stop().await;
        self.server
            .tasks
            .shutdown(flotilla_apiserver::tasks::SHUTDOWN_GRACE)
            .await;
    }
}

/// The built-in kinds' registry.
pub fn builtin_registry() -> Registry {
    let registry = Registry::new();
    for def in flotilla_kinds::builtin_resources() {
        registry.register(def);
    }
    registry
}

/// A server of the built-in kinds over memory.
pub async fn start() -> TestServer {
    start_with(builtin_registry(), Arc::new(MemoryStorage::new())).await
}

/// A server of the built-in kinds over memory that keeps `events` watch events (older
/// resourceVersions answer 410 Gone).
pub async fn start_with_history(events: usize) -> TestServer {
    start_with(
        builtin_registry(),
        Arc::new(MemoryStorage::with_history(events)),
    )
    .await
}

/// A server of `registry` over `storage`.
pub async fn start_with(registry: Registry, storage: Arc<dyn Storage>) -> TestServer {
    let dir = tempfile::tempdir().unwrap();
    let pki = flotilla_pki::ensure_server_pki(dir.path(), &[]).unwrap();
    let server = ApiServer::new(Arc::new(registry), storage, ServerConfig::default());
    server.start_background().await.unwrap();
    let tls = flotilla_pki::server_config(
        &pki.apiserver.cert_pem,
        &pki.apiserver.key_pem,
        std::slice::from_ref(&pki.ca.cert_pem),
    )
    .unwrap();
    let trust = Arc::new(PeerTrust {
        client_ca: Some(
            flotilla_pki::ChainVerifier::new(std::slice::from_ref(&pki.ca.cert_pem)).unwrap(),
        ),
        request_header_ca: None,
        front_proxy_names: Vec::new(),
    });
    let (listener, addr) = flotilla_apiserver::boot::listen("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let handle =
        flotilla_apiserver::boot::serve(listener, addr, tls, server.router(), trust).unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    flotilla_pki::Kubeconfig::new_client_cert(
        &format!("https://{addr}"),
        "test",
        "admin",
        &pki.ca.cert_pem,
        &pki.admin.cert_pem,
        &pki.admin.key_pem,
    )
    .write(&kubeconfig)
    .unwrap();
    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    // The namespace clients write to by default (kube-apiserver creates it at start).
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(client.clone());
    let default: k8s_openapi::api::core::v1::Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "default"}})).unwrap();
    namespaces
        .create(&kube::api::PostParams::default(), &default)
        .await
        .unwrap();
    TestServer {
        server,
        client,
        addr,
        kubeconfig,
        handle,
        _dir: dir,
    }
}

/// Runs the real kubectl (`$KUBECTL`, else the version dispatcher on PATH) against
/// `kubeconfig` with a discovery cache of its own; its stdout, or a panic with its stderr.
pub async fn kubectl_ok(kubeconfig: &Path, args: &[&str]) -> String {
    let program = std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into());
    let cache = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(program)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache.path())
        .args(args)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
