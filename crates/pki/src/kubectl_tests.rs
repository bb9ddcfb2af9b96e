//! The real kubectl against our artifacts: it must accept the kubeconfigs we write, and talk to
//! a TLS server built from [`server_config`] with certificates from [`CertificateAuthority`]
//! (Go's TLS stack is stricter about certificates than rustls in places).
//!
//! kubectl is expected on PATH; when it is missing these tests say so and return early.

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::{CertificateAuthority, Kubeconfig, peer_identity, server_config};

async fn kubectl(kubeconfig: &Path, home: &Path, args: &[&str]) -> Option<(bool, String, String)> {
    let output = tokio::process::Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        // Keep kubectl's cache out of the real home directory.
        .env("HOME", home)
        .env_remove("KUBECONFIG")
        .output()
        .await;
    match output {
        Ok(out) => Some((
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("kubectl not found on PATH; skipping");
            None
        }
        Err(e) => panic!("running kubectl: {e}"),
    }
}

#[tokio::test]
async fn kubectl_accepts_both_kinds_of_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let ca = CertificateAuthority::generate("flotilla-ca").unwrap();
    let admin = ca
        .issue_client("admin", &["system:masters".into()])
        .unwrap();
    let cert_path = dir.path().join("admin.kubeconfig");
    Kubeconfig::new_client_cert(
        "https://127.0.0.1:7443",
        "flotilla",
        "admin",
        ca.cert_pem(),
        &admin.cert_pem,
        &admin.key_pem,
    )
    .write(&cert_path)
    .unwrap();
    let token_path = dir.path().join("members/member1.kubeconfig");
    Kubeconfig::new_token(
        "https://member1.example:6443",
        "member1",
        "member1-admin",
        ca.cert_pem(),
        "tok123",
    )
    .write(&token_path)
    .unwrap();

    let Some((ok, out, err)) = kubectl(&cert_path, dir.path(), &["config", "view", "--raw"]).await
    else {
        return;
    };
    assert!(ok, "{err}");
    assert!(out.contains("server: https://127.0.0.1:7443"), "{out}");
    assert!(out.contains("current-context: flotilla"), "{out}");
    let (ok, out, err) = kubectl(
        &cert_path,
        dir.path(),
        &[
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.users[0].user.client-key-data}",
        ],
    )
    .await
    .unwrap();
    assert!(ok, "{err}");
    use base64::Engine;
    let key = base64::engine::general_purpose::STANDARD
        .decode(out.trim())
        .unwrap();
    assert_eq!(String::from_utf8(key).unwrap(), admin.key_pem);

    let (ok, out, err) = kubectl(&token_path, dir.path(), &["config", "view", "--raw"])
        .await
        .unwrap();
    assert!(ok, "{err}");
    assert!(
        out.contains("server: https://member1.example:6443"),
        "{out}"
    );
    assert!(out.contains("token: tok123"), "{out}");
    let (ok, out, err) = kubectl(&token_path, dir.path(), &["config", "current-context"])
        .await
        .unwrap();
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "member1");
}

/// A one-request-per-connection HTTP/1.1 server that answers every request with the client
/// identity it saw on the TLS connection and the Authorization header it received.
async fn start_echo_server(config: Arc<rustls::ServerConfig>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let acceptor = TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let identity = peer_identity(tls.get_ref().1);
                let mut request = Vec::new();
                let mut buf = [0u8; 4096];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let request = String::from_utf8_lossy(&request);
                let auth = request
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("authorization")
                            .then(|| value.trim().to_string())
                    })
                    .unwrap_or_default();
                let (user, groups) = identity
                    .map(|id| (id.user, id.groups.join(",")))
                    .unwrap_or_default();
                let body = format!(
                    "{{\"user\":\"{user}\",\"groups\":\"{groups}\",\"authorization\":\"{auth}\"}}"
                );
                let response = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(response.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_talks_to_a_server_with_our_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let pki = crate::ensure_server_pki(dir.path(), &[]).unwrap();
    let config = server_config(
        &pki.apiserver.cert_pem,
        &pki.apiserver.key_pem,
        std::slice::from_ref(&pki.ca.cert_pem),
    )
    .unwrap();
    // The echo server speaks HTTP/1.1 only, so do not let kubectl negotiate h2.
    let mut config = (*config).clone();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let port = start_echo_server(Arc::new(config)).await;

    // Client certificate, inline data.
    let admin_path = dir.path().join("kubeconfig");
    Kubeconfig::new_client_cert(
        &format!("https://127.0.0.1:{port}"),
        "flotilla",
        "admin",
        &pki.ca.cert_pem,
        &pki.admin.cert_pem,
        &pki.admin.key_pem,
    )
    .write(&admin_path)
    .unwrap();
    let args = ["get", "--raw", "/version", "--request-timeout=20s"];
    let Some((ok, out, err)) = kubectl(&admin_path, dir.path(), &args).await else {
        return;
    };
    assert!(ok, "{err}");
    assert!(
        out.contains(r#""user":"admin","groups":"system:masters""#),
        "{out}"
    );

    // Bearer token and a server addressed as localhost (DNS SAN).
    let token_path = dir.path().join("token.kubeconfig");
    Kubeconfig::new_token(
        &format!("https://localhost:{port}"),
        "flotilla",
        "bob",
        &pki.ca.cert_pem,
        "tok-xyz",
    )
    .write(&token_path)
    .unwrap();
    let (ok, out, err) = kubectl(&token_path, dir.path(), &args).await.unwrap();
    assert!(ok, "{err}");
    assert!(
        out.contains(r#""user":"","groups":"","authorization":"Bearer tok-xyz""#),
        "{out}"
    );

    // File references relative to the kubeconfig resolve the same way for kubectl and for us.
    let files_path = dir.path().join("files.kubeconfig");
    let yaml = format!(
        "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://127.0.0.1:{port}
    certificate-authority: pki/ca.crt
users:
- name: u
  user:
    client-certificate: pki/admin.crt
    client-key: pki/admin.key
contexts:
- name: ctx
  context: {{cluster: c, user: u}}
current-context: ctx
"
    );
    std::fs::write(&files_path, yaml).unwrap();
    let resolved = Kubeconfig::load(&files_path)
        .unwrap()
        .context(None)
        .unwrap();
    assert_eq!(
        resolved.client_cert_pem.as_deref(),
        Some(pki.admin.cert_pem.as_str())
    );
    let (ok, out, err) = kubectl(&files_path, dir.path(), &args).await.unwrap();
    assert!(ok, "{err}");
    assert!(out.contains(r#""user":"admin""#), "{out}");

    // A CA kubectl does not know: the TLS handshake fails on kubectl's side.
    let other = CertificateAuthority::generate("flotilla-ca").unwrap();
    let wrong_ca_path = dir.path().join("wrong-ca.kubeconfig");
    Kubeconfig::new_token(
        &format!("https://127.0.0.1:{port}"),
        "flotilla",
        "bob",
        other.cert_pem(),
        "t",
    )
    .write(&wrong_ca_path)
    .unwrap();
    let (ok, _, err) = kubectl(&wrong_ca_path, dir.path(), &args).await.unwrap();
    assert!(!ok);
    assert!(err.contains("certificate"), "{err}");
}
