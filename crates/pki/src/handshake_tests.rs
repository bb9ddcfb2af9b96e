//! Real TLS handshakes over loopback between [`server_config`] and [`client_config`]: ALPN,
//! optional client certificates, identity extraction and rejection of foreign certificates.

use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::{TlsAcceptor, TlsConnector};

use crate::{
    CertificateAuthority, ClientIdentity, IssuedCert, client_config, peer_identity, server_config,
};

/// What the server saw of one connection.
#[derive(Debug)]
struct ServerSide {
    identity: Option<ClientIdentity>,
    alpn: Option<Vec<u8>>,
    version: Option<rustls::ProtocolVersion>,
}

/// Runs one connection; returns the server's view (or its handshake error) and whether the
/// client completed the handshake and read the server's greeting.
async fn connect(
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
    server_name: &str,
) -> (Result<ServerSide, String>, Result<Vec<u8>, String>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server_task = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut tls = TlsAcceptor::from(server)
            .accept(tcp)
            .await
            .map_err(|e| e.to_string())?;
        let conn = tls.get_ref().1;
        let side = ServerSide {
            identity: peer_identity(conn),
            alpn: conn.alpn_protocol().map(<[u8]>::to_vec),
            version: conn.protocol_version(),
        };
        tls.write_all(b"hello").await.map_err(|e| e.to_string())?;
        tls.shutdown().await.map_err(|e| e.to_string())?;
        Ok(side)
    });
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from(server_name.to_string()).unwrap();
    let client_result = async {
        let mut tls = TlsConnector::from(client)
            .connect(name, tcp)
            .await
            .map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        // With TLS 1.3 a rejected client certificate only surfaces here, as an alert.
        tls.read_to_end(&mut buf).await.map_err(|e| e.to_string())?;
        Ok(buf)
    }
    .await;
    let server_result = server_task.await.unwrap();
    (server_result, client_result)
}

struct Setup {
    ca: CertificateAuthority,
    server: Arc<rustls::ServerConfig>,
    admin: IssuedCert,
}

fn setup() -> Setup {
    let ca = CertificateAuthority::generate("flotilla-ca").unwrap();
    let serving = ca
        .issue_server(
            "apiserver",
            &["localhost".into()],
            &["127.0.0.1".parse().unwrap()],
        )
        .unwrap();
    let server = server_config(
        &serving.cert_pem,
        &serving.key_pem,
        &[ca.cert_pem().to_string()],
    )
    .unwrap();
    let admin = ca
        .issue_client("admin", &["system:masters".into(), "devs".into()])
        .unwrap();
    Setup { ca, server, admin }
}

#[tokio::test]
async fn client_certificate_identity_reaches_the_server() {
    let s = setup();
    let client = client_config(
        &[s.ca.cert_pem().to_string()],
        Some((&s.admin.cert_pem, &s.admin.key_pem)),
        false,
    )
    .unwrap();
    let (server, client) = connect(s.server, client, "localhost").await;
    let server = server.unwrap();
    assert_eq!(client.unwrap(), b"hello");
    assert_eq!(
        server.identity,
        Some(ClientIdentity {
            user: "admin".into(),
            groups: vec!["system:masters".into(), "devs".into()],
        })
    );
    assert_eq!(server.alpn.as_deref(), Some(&b"h2"[..]));
    assert_eq!(server.version, Some(rustls::ProtocolVersion::TLSv1_3));
}

#[tokio::test]
async fn no_client_certificate_is_allowed_without_identity() {
    let s = setup();
    let client = client_config(&[s.ca.cert_pem().to_string()], None, false).unwrap();
    // Also checks the IP SAN: the client addresses the server as 127.0.0.1.
    let (server, client) = connect(s.server, client, "127.0.0.1").await;
    assert_eq!(client.unwrap(), b"hello");
    assert_eq!(server.unwrap().identity, None);
}

#[tokio::test]
async fn client_certificate_from_another_ca_is_rejected() {
    let s = setup();
    let other = CertificateAuthority::generate("flotilla-ca").unwrap();
    let intruder = other
        .issue_client("admin", &["system:masters".into()])
        .unwrap();
    let client = client_config(
        &[s.ca.cert_pem().to_string()],
        Some((&intruder.cert_pem, &intruder.key_pem)),
        false,
    )
    .unwrap();
    let (server, client) = connect(s.server, client, "localhost").await;
    let err = server.unwrap_err();
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    assert!(client.is_err());
}

#[tokio::test]
async fn server_from_unknown_ca_is_rejected_unless_verification_is_skipped() {
    let s = setup();
    let other = CertificateAuthority::generate("other-ca").unwrap();
    let strict = client_config(&[other.cert_pem().to_string()], None, false).unwrap();
    let (_, client) = connect(s.server.clone(), strict, "localhost").await;
    let err = client.unwrap_err();
    assert!(err.contains("UnknownIssuer"), "{err}");

    // Wrong name, right CA: also rejected.
    let wrong_name = client_config(&[s.ca.cert_pem().to_string()], None, false).unwrap();
    let (_, client) = connect(s.server.clone(), wrong_name, "not-in-the-cert").await;
    assert!(client.is_err());

    let insecure = client_config(&[], None, true).unwrap();
    let (server, client) = connect(s.server, insecure, "not-in-the-cert").await;
    assert_eq!(client.unwrap(), b"hello");
    assert!(server.is_ok());
}

#[tokio::test]
async fn tls12_and_http1_only_clients_are_served() {
    let s = setup();
    let roots = {
        let mut r = rustls::RootCertStore::empty();
        for c in crate::parse_certificates(s.ca.cert_pem()).unwrap() {
            r.add(c).unwrap();
        }
        r
    };
    let certs = crate::parse_certificates(&s.admin.cert_pem).unwrap();
    let key = crate::parse_private_key(&s.admin.key_pem).unwrap();
    let mut client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS12])
    .unwrap()
    .with_root_certificates(roots)
    .with_client_auth_cert(certs, key)
    .unwrap();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    let (server, client) = connect(s.server, Arc::new(client), "localhost").await;
    assert_eq!(client.unwrap(), b"hello");
    let server = server.unwrap();
    assert_eq!(server.version, Some(rustls::ProtocolVersion::TLSv1_2));
    assert_eq!(server.alpn.as_deref(), Some(&b"http/1.1"[..]));
    assert_eq!(server.identity.unwrap().user, "admin");
}

#[test]
fn config_builders_reject_bad_input() {
    let s = setup();
    assert!(matches!(
        client_config(&[], None, false),
        Err(crate::PkiError::NoTrustAnchors)
    ));
    assert!(matches!(
        client_config(&["not pem".into()], None, false),
        Err(crate::PkiError::ParseCertificate { .. })
    ));
    assert!(matches!(
        server_config(s.ca.cert_pem(), "no key here", &[]),
        Err(crate::PkiError::ParsePrivateKey { .. })
    ));
    // Certificate and key that do not belong together.
    let err = server_config(&s.admin.cert_pem, s.ca.key_pem(), &[]).unwrap_err();
    assert!(matches!(err, crate::PkiError::BuildTlsConfig(_)), "{err}");
}
