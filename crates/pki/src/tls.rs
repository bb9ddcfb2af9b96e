//! rustls configurations for Flotilla's servers and for its clients of other servers, always
//! with the ring provider passed explicitly (never the process-wide default, which another
//! crate in the same binary may or may not have installed).

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};

use crate::error::{PkiError, Result};
use crate::pem::{parse_certificates_named, pem_encode};

/// ALPN protocols offered by servers and clients, most preferred first.
pub const ALPN_PROTOCOLS: [&[u8]; 2] = [b"h2", b"http/1.1"];

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

const PROTOCOL_VERSIONS: [&rustls::SupportedProtocolVersion; 2] =
    [&rustls::version::TLS13, &rustls::version::TLS12];

/// The self-signed CA certificate (PEM) a certificate file's chain ends in: clients of a
/// server given `chain_pem` (leaf first, its issuers after it) trust this one. An error when
/// the file holds no certificate or its last one is not self-signed (a leaf alone, or a chain
/// cut short), since no caBundle could then be derived from it.
pub fn chain_root_pem(chain_pem: &str) -> Result<String> {
    let what = "the serving certificate file";
    let certs = parse_certificates_named(chain_pem, what)?;
    let last = certs.last().ok_or_else(|| PkiError::ParseCertificate {
        what: what.to_string(),
        reason: "no CERTIFICATE block".to_string(),
    })?;
    let (_, parsed) = x509_parser::parse_x509_certificate(last.as_ref()).map_err(|e| {
        PkiError::ParseCertificate {
            what: what.to_string(),
            reason: e.to_string(),
        }
    })?;
    let self_signed = parsed.subject() == parsed.issuer() && parsed.verify_signature(None).is_ok();
    if !self_signed {
        return Err(PkiError::ParseCertificate {
            what: what.to_string(),
            reason: format!(
                "its last certificate ({}) is not a self-signed CA; end the file with the CA that signed it",
                parsed.subject()
            ),
        });
    }
    Ok(pem_encode("CERTIFICATE", last.as_ref()))
}

/// Parses the first private key (PKCS#8, PKCS#1 or SEC1) in `pem`.
pub fn parse_private_key(pem: &str) -> Result<PrivateKeyDer<'static>> {
    parse_private_key_named(pem, "the PEM text")
}

fn parse_private_key_named(pem: &str, what: &str) -> Result<PrivateKeyDer<'static>> {
    let err = |reason: String| PkiError::ParsePrivateKey {
        what: what.to_string(),
        reason,
    };
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(|e| err(e.to_string()))?
        .ok_or_else(|| err("no PRIVATE KEY block found".into()))
}

fn non_empty_certs(pem: &str, what: &str) -> Result<Vec<CertificateDer<'static>>> {
    let certs = parse_certificates_named(pem, what)?;
    if certs.is_empty() {
        return Err(PkiError::ParseCertificate {
            what: what.to_string(),
            reason: "no CERTIFICATE block found".into(),
        });
    }
    Ok(certs)
}

fn root_store(ca_pems: &[String]) -> Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for (index, pem) in ca_pems.iter().enumerate() {
        for cert in non_empty_certs(pem, &format!("CA bundle #{index}"))? {
            roots.add(cert).map_err(PkiError::AddTrustAnchor)?;
        }
    }
    Ok(roots)
}

/// A server configuration for an HTTPS API server.
///
/// `cert_pem` may hold a chain (leaf first). It offers ALPN `h2` and `http/1.1` and TLS 1.2 and
/// 1.3. With `client_ca_pems` non-empty it *requests* a client certificate and verifies any
/// presented one against those CAs, but lets clients without one through, so the HTTP layer
/// can authenticate them otherwise (bearer token) or answer 401 itself. With no client CAs it
/// does not ask for client certificates at all.
pub fn server_config(
    cert_pem: &str,
    key_pem: &str,
    client_ca_pems: &[String],
) -> Result<Arc<ServerConfig>> {
    let chain = non_empty_certs(cert_pem, "the serving certificate")?;
    let key = parse_private_key_named(key_pem, "the serving key")?;
    let provider = provider();
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&PROTOCOL_VERSIONS)
        .map_err(PkiError::BuildTlsConfig)?;
    let builder = if client_ca_pems.is_empty() {
        builder.with_no_client_auth()
    } else {
        let verifier = WebPkiClientVerifier::builder_with_provider(
            Arc::new(root_store(client_ca_pems)?),
            provider,
        )
        .allow_unauthenticated()
        .build()
        .map_err(PkiError::BuildClientVerifier)?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(PkiError::BuildTlsConfig)?;
    config.alpn_protocols = ALPN_PROTOCOLS.iter().map(|p| p.to_vec()).collect();
    // Stateless session tickets, as Go's TLS stack (so every Kubernetes API server) issues
    // them: a client reconnecting resumes its session, skipping the certificate exchange and
    // its signatures, however many clients there are. Stateful resumption is bounded by a
    // cache (256 sessions by default) that a fleet of clients sharing one configuration
    // outgrows, and then every handshake is a full one.
    config.ticketer = rustls::crypto::ring::Ticketer::new().map_err(PkiError::BuildTlsConfig)?;
    // One ticket per handshake, as Go sends: a client uses one per connection, and each
    // ticket kept costs it memory.
    config.send_tls13_tickets = 1;
    Ok(Arc::new(config))
}

/// A client configuration for calling another API server (a member cluster, an extension
/// apiserver).
///
/// The server certificate is verified against `ca_pems` unless `insecure_skip_verify` is set,
/// in which case any certificate is accepted (Kubernetes' `insecure-skip-tls-verify`; the
/// handshake signatures are still checked, only the identity of the server is not).
/// `client_cert` is `(cert_pem, key_pem)` to present. Offers ALPN `h2` and `http/1.1`.
pub fn client_config(
    ca_pems: &[String],
    client_cert: Option<(&str, &str)>,
    insecure_skip_verify: bool,
) -> Result<Arc<ClientConfig>> {
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&PROTOCOL_VERSIONS)
        .map_err(PkiError::BuildTlsConfig)?;
    let builder = if insecure_skip_verify {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert { provider }))
    } else {
        // No system trust store is bundled: a client of another cluster must be told its CA.
        if ca_pems.is_empty() {
            return Err(PkiError::NoTrustAnchors);
        }
        builder.with_root_certificates(root_store(ca_pems)?)
    };
    let mut config = match client_cert {
        Some((cert_pem, key_pem)) => {
            let chain = non_empty_certs(cert_pem, "the client certificate")?;
            let key = parse_private_key_named(key_pem, "the client key")?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(PkiError::BuildTlsConfig)?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = ALPN_PROTOCOLS.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// Accepts whatever certificate the server presents; used only when the user asked for it.
#[derive(Debug)]
struct AcceptAnyServerCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Checks whether a client's certificate chain was issued by particular CAs, independent of
/// the listener's own verifier (which may trust several CAs). API servers use it to accept
/// front-proxy request headers only from certificates of the request-header CA.
pub struct ChainVerifier {
    verifier: Arc<dyn rustls::server::danger::ClientCertVerifier>,
}

impl std::fmt::Debug for ChainVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChainVerifier").finish_non_exhaustive()
    }
}

impl ChainVerifier {
    pub fn new(ca_pems: &[String]) -> Result<Self> {
        let verifier =
            WebPkiClientVerifier::builder_with_provider(Arc::new(root_store(ca_pems)?), provider())
                .build()
                .map_err(PkiError::BuildClientVerifier)?;
        Ok(Self { verifier })
    }

    /// True when `chain` (leaf first, as the peer sent it) verifies against these CAs now.
    pub fn verifies(&self, chain: &[CertificateDer<'_>]) -> bool {
        let Some((leaf, intermediates)) = chain.split_first() else {
            return false;
        };
        self.verifier
            .verify_client_cert(leaf, intermediates, rustls::pki_types::UnixTime::now())
            .is_ok()
    }
}

#[cfg(test)]
mod chain_root_tests {
    #![allow(clippy::unwrap_used)]

    use super::chain_root_pem;
    use crate::CertificateAuthority;

    #[test]
    fn the_root_of_a_chain_is_its_last_self_signed_certificate() {
        let ca = CertificateAuthority::generate("serving-ca").unwrap();
        let leaf = ca
            .issue_server("aggregated", &[], &["127.0.0.1".parse().unwrap()])
            .unwrap();
        let chain = format!("{}{}", leaf.cert_pem, ca.cert_pem());
        assert_eq!(chain_root_pem(&chain).unwrap().trim(), ca.cert_pem().trim());
        // A self-signed CA alone is its own root.
        assert_eq!(
            chain_root_pem(ca.cert_pem()).unwrap().trim(),
            ca.cert_pem().trim()
        );
    }

    #[test]
    fn a_leaf_alone_or_no_certificate_is_refused() {
        let ca = CertificateAuthority::generate("serving-ca").unwrap();
        let leaf = ca.issue_server("aggregated", &[], &[]).unwrap();
        let err = chain_root_pem(&leaf.cert_pem).unwrap_err().to_string();
        assert!(err.contains("not a self-signed CA"), "{err}");
        let err = chain_root_pem("not a certificate").unwrap_err().to_string();
        assert!(err.contains("no CERTIFICATE block"), "{err}");
    }
}

#[cfg(test)]
mod resumption_tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use rustls::pki_types::ServerName;
    use rustls::{
        ClientConfig, ClientConnection, ConnectionCommon, HandshakeKind, ServerConfig,
        ServerConnection,
    };

    use super::{client_config, server_config};
    use crate::CertificateAuthority;

    /// Moves what `from` has to send into `to`; whether there was anything.
    fn pump<A, B>(from: &mut ConnectionCommon<A>, to: &mut ConnectionCommon<B>) -> bool {
        let mut moved = false;
        while from.wants_write() {
            let mut buf = Vec::new();
            from.write_tls(&mut buf).unwrap();
            to.read_tls(&mut buf.as_slice()).unwrap();
            to.process_new_packets().unwrap();
            moved = true;
        }
        moved
    }

    /// One handshake in memory; how it went, as the server saw it.
    fn handshake(client: &Arc<ClientConfig>, server: &Arc<ServerConfig>) -> HandshakeKind {
        let name = ServerName::try_from("127.0.0.1").unwrap();
        let mut c = ClientConnection::new(client.clone(), name).unwrap();
        let mut s = ServerConnection::new(server.clone()).unwrap();
        // Until neither side has anything to send (the tickets arrive after the handshake).
        while pump(&mut c, &mut s) | pump(&mut s, &mut c) {}
        assert!(!c.is_handshaking() && !s.is_handshaking());
        s.handshake_kind().unwrap()
    }

    #[test]
    fn every_client_of_a_fleet_resumes_its_session() {
        let ca = CertificateAuthority::generate("member-ca").unwrap();
        let serving = ca
            .issue_server("member", &[], &["127.0.0.1".parse().unwrap()])
            .unwrap();
        let server = server_config(&serving.cert_pem, &serving.key_pem, &[]).unwrap();
        // More clients than a server-side session cache holds (256 by default).
        let clients: Vec<Arc<ClientConfig>> = (0..300)
            .map(|_| client_config(&[ca.cert_pem().to_string()], None, false).unwrap())
            .collect();
        for client in &clients {
            assert_eq!(handshake(client, &server), HandshakeKind::Full);
        }
        for client in &clients {
            assert_eq!(handshake(client, &server), HandshakeKind::Resumed);
        }
    }
}
