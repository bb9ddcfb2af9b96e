//! Who a client certificate says the caller is, read the way Kubernetes x509 authentication
//! reads it: the subject's common name is the user, each organization is a group.

use x509_parser::prelude::X509Certificate;

use crate::error::{PkiError, Result};

/// The user and groups a verified client certificate authenticates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientIdentity {
    pub user: String,
    pub groups: Vec<String>,
}

/// Reads the identity from a DER certificate: first subject CN -> user, every subject O ->
/// groups (in certificate order). Does not verify anything; only call it on a certificate
/// whose chain has been verified.
pub fn identity_from_cert(der: &[u8]) -> Result<ClientIdentity> {
    let parse_err = |reason: String| PkiError::ParseCertificate {
        what: "the client certificate".into(),
        reason,
    };
    let (_, cert): (_, X509Certificate<'_>) =
        x509_parser::parse_x509_certificate(der).map_err(|e| parse_err(e.to_string()))?;
    let subject = cert.subject();
    let user = match subject.iter_common_name().next() {
        Some(cn) => cn.as_str().map_err(|e| parse_err(e.to_string()))?,
        None => return Err(PkiError::MissingCommonName),
    };
    if user.is_empty() {
        return Err(PkiError::MissingCommonName);
    }
    let groups = subject
        .iter_organization()
        .map(|o| o.as_str().map(str::to_string))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| parse_err(e.to_string()))?;
    Ok(ClientIdentity {
        user: user.to_string(),
        groups,
    })
}

/// The identity of the client on a TLS connection, if it presented a certificate.
///
/// rustls only exposes peer certificates after its client verifier accepted the chain, so the
/// leaf here is trusted. `None` when the client sent no certificate (the configuration from
/// [`crate::server_config`] allows that) or the certificate has no usable CN.
pub fn peer_identity(conn: &rustls::ServerConnection) -> Option<ClientIdentity> {
    let leaf = conn.peer_certificates()?.first()?;
    identity_from_cert(leaf.as_ref()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_a_parse_error() {
        assert!(matches!(
            identity_from_cert(b"not a certificate"),
            Err(PkiError::ParseCertificate { .. })
        ));
    }

    #[test]
    fn certificate_without_groups_has_none() {
        let ca = crate::CertificateAuthority::generate("ca").unwrap();
        let cert = ca.issue_client("front-proxy-client", &[]).unwrap();
        let id = identity_from_cert(&cert.cert_der().unwrap()).unwrap();
        assert_eq!(id.user, "front-proxy-client");
        assert!(id.groups.is_empty());
    }
}
