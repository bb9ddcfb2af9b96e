//! PEM text and the DER it carries: certificate blocks read (naming what was read, for the
//! error) and DER blocks written, for the CA, the CSR signer and the TLS configurations.

use rustls::pki_types::CertificateDer;

use crate::error::{PkiError, Result};

/// Parses every CERTIFICATE block in `pem` (other blocks are skipped).
pub fn parse_certificates(pem: &str) -> Result<Vec<CertificateDer<'static>>> {
    parse_certificates_named(pem, "the PEM text")
}

pub(crate) fn parse_certificates_named(
    pem: &str,
    what: &str,
) -> Result<Vec<CertificateDer<'static>>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| PkiError::ParseCertificate {
            what: what.to_string(),
            reason: e.to_string(),
        })
}

/// PEM-encodes DER bytes with 64-character lines.
pub(crate) fn pem_encode(label: &str, der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        // base64 output is ASCII, so every chunk is valid UTF-8.
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}
