//! PKCS#10 certificate signing requests, as the Kubernetes CSR API carries them: reading a
//! PEM `CERTIFICATE REQUEST` and checking its signature (what CSR validation needs), and
//! issuing a certificate for the requested public key from a [`CertificateAuthority`] (what a
//! CSR signer needs), with the key usages named in the Kubernetes vocabulary
//! (`client auth`, `digital signature`, ...).

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use rcgen::{
    CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyUsagePurpose, SanType, SerialNumber,
    SigningKey, SubjectPublicKeyInfo,
};
use x509_parser::certification_request::X509CertificationRequest;
use x509_parser::extensions::{GeneralName, ParsedExtension};
use x509_parser::prelude::FromDer;

use crate::ca::CertificateAuthority;
use crate::der;
use crate::pem::pem_encode;

/// Why a request could not be read or signed. The messages are what a `422` names after
/// `spec.request: Invalid value: ...:` and what a signer's `Failed` condition says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// No PEM block, or the first one is not a `CERTIFICATE REQUEST`.
    #[error("PEM block type must be CERTIFICATE REQUEST")]
    NotARequestPem,
    #[error("malformed certificate request: {0}")]
    Malformed(String),
    #[error("the certificate request signature does not verify: {0}")]
    BadSignature(String),
    #[error("unrecognized usage values: {0:?}")]
    UnknownUsages(Vec<String>),
    #[error("the subject of the request has no common name")]
    NoCommonName,
    #[error("unsupported public key in the request: {0}")]
    UnsupportedKey(String),
    #[error("the signer has expired: NotAfter={0}")]
    SignerExpired(DateTime<Utc>),
    #[error("signing the certificate: {0}")]
    Sign(String),
}

/// A parsed certificate signing request whose signature verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateRequest {
    /// The subject's first common name (Kubernetes: the user), if any.
    pub common_name: Option<String>,
    /// The subject's organizations in order (Kubernetes: the groups).
    pub organizations: Vec<String>,
    pub dns_names: Vec<String>,
    pub ip_addresses: Vec<IpAddr>,
    pub email_addresses: Vec<String>,
    pub uris: Vec<String>,
    /// The DER `SubjectPublicKeyInfo` of the requested key.
    public_key_der: Vec<u8>,
}

/// The first `CERTIFICATE REQUEST` PEM block of `pem`, parsed, with its signature checked.
/// Like Go's `pem.Decode`, only the first PEM block counts.
pub fn parse_certificate_request(pem: &[u8]) -> Result<CertificateRequest, RequestError> {
    let der = first_request_der(pem)?;
    let (rest, csr) = X509CertificationRequest::from_der(&der)
        .map_err(|e| RequestError::Malformed(e.to_string()))?;
    if !rest.is_empty() {
        return Err(RequestError::Malformed(
            "trailing data after the request".into(),
        ));
    }
    csr.verify_signature()
        .map_err(|e| RequestError::BadSignature(e.to_string()))?;
    let info = &csr.certification_request_info;
    let text = |a: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        a.as_str()
            .map(str::to_string)
            .map_err(|e| RequestError::Malformed(format!("subject attribute: {e}")))
    };
    let common_name = match info.subject.iter_common_name().next() {
        Some(cn) => Some(text(cn)?),
        None => None,
    };
    let organizations = info
        .subject
        .iter_organization()
        .map(text)
        .collect::<Result<Vec<_>, _>>()?;
    let mut request = CertificateRequest {
        common_name,
        organizations,
        dns_names: Vec::new(),
        ip_addresses: Vec::new(),
        email_addresses: Vec::new(),
        uris: Vec::new(),
        public_key_der: info.subject_pki.raw.to_vec(),
    };
    for ext in csr.requested_extensions().into_iter().flatten() {
        let ParsedExtension::SubjectAlternativeName(san) = ext else {
            continue;
        };
        for name in &san.general_names {
            match name {
                GeneralName::DNSName(d) => request.dns_names.push(d.to_string()),
                GeneralName::RFC822Name(e) => request.email_addresses.push(e.to_string()),
                GeneralName::URI(u) => request.uris.push(u.to_string()),
                GeneralName::IPAddress(bytes) => {
                    let ip = match bytes.len() {
                        4 => <[u8; 4]>::try_from(*bytes).ok().map(IpAddr::from),
                        16 => <[u8; 16]>::try_from(*bytes).ok().map(IpAddr::from),
                        _ => None,
                    };
                    match ip {
                        Some(ip) => request.ip_addresses.push(ip),
                        None => {
                            return Err(RequestError::Malformed(format!(
                                "IP address SAN of {} bytes",
                                bytes.len()
                            )));
                        }
                    }
                }
                // Go's x509 keeps only the four kinds above; so does the signer.
                _ => {}
            }
        }
    }
    Ok(request)
}

/// Why `pem` is not one or more PEM `CERTIFICATE` blocks each holding a certificate (what a
/// CSR's `status.certificate` must be); `None` when it is.
pub fn certificate_pem_problem(pem: &[u8]) -> Option<String> {
    let mut reader = pem;
    let mut blocks = 0;
    loop {
        match rustls_pemfile::read_one(&mut reader) {
            Ok(Some(rustls_pemfile::Item::X509Certificate(der))) => {
                if let Err(e) = x509_parser::parse_x509_certificate(&der) {
                    return Some(e.to_string());
                }
                blocks += 1;
            }
            Ok(Some(_)) => return Some("only CERTIFICATE PEM blocks are allowed".into()),
            Ok(None) => break,
            Err(e) => return Some(format!("malformed PEM: {e:?}")),
        }
    }
    (blocks == 0).then(|| "must contain at least one CERTIFICATE PEM block".into())
}

fn first_request_der(pem: &[u8]) -> Result<Vec<u8>, RequestError> {
    let mut reader = pem;
    match rustls_pemfile::read_one(&mut reader) {
        Ok(Some(rustls_pemfile::Item::Csr(der))) => Ok(der.to_vec()),
        _ => Err(RequestError::NotARequestPem),
    }
}

/// What a certificate issued for a request looks like beyond the request itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningProfile {
    /// Kubernetes key usage names (`client auth`, `digital signature`, `key encipherment`,
    /// ...), mapped to X.509 key usages and extended key usages.
    pub usages: Vec<String>,
    pub not_before: DateTime<Utc>,
    /// Cut to the CA's own expiry when later.
    pub not_after: DateTime<Utc>,
}

/// The X.509 key usage and extended key usages of Kubernetes usage names (kube's signer
/// table); unknown names are an error naming them.
pub fn key_usages(
    usages: &[String],
) -> Result<(Vec<KeyUsagePurpose>, Vec<ExtendedKeyUsagePurpose>), RequestError> {
    let mut ku: Vec<KeyUsagePurpose> = Vec::new();
    let mut eku: Vec<ExtendedKeyUsagePurpose> = Vec::new();
    let mut unknown = Vec::new();
    for usage in usages {
        let key_usage = match usage.as_str() {
            "signing" | "digital signature" => Some(KeyUsagePurpose::DigitalSignature),
            "content commitment" => Some(KeyUsagePurpose::ContentCommitment),
            "key encipherment" => Some(KeyUsagePurpose::KeyEncipherment),
            "key agreement" => Some(KeyUsagePurpose::KeyAgreement),
            "data encipherment" => Some(KeyUsagePurpose::DataEncipherment),
            "cert sign" => Some(KeyUsagePurpose::KeyCertSign),
            "crl sign" => Some(KeyUsagePurpose::CrlSign),
            "encipher only" => Some(KeyUsagePurpose::EncipherOnly),
            "decipher only" => Some(KeyUsagePurpose::DecipherOnly),
            _ => None,
        };
        if let Some(k) = key_usage {
            if !ku.contains(&k) {
                ku.push(k);
            }
            continue;
        }
        // OIDs of the usages rcgen has no name for (RFC 5280, Microsoft and Netscape SGC).
        let ext = match usage.as_str() {
            "any" => ExtendedKeyUsagePurpose::Any,
            "server auth" => ExtendedKeyUsagePurpose::ServerAuth,
            "client auth" => ExtendedKeyUsagePurpose::ClientAuth,
            "code signing" => ExtendedKeyUsagePurpose::CodeSigning,
            "email protection" | "s/mime" => ExtendedKeyUsagePurpose::EmailProtection,
            "ipsec end system" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 5]),
            "ipsec tunnel" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 6]),
            "ipsec user" => ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 5, 5, 7, 3, 7]),
            "timestamping" => ExtendedKeyUsagePurpose::TimeStamping,
            "ocsp signing" => ExtendedKeyUsagePurpose::OcspSigning,
            "microsoft sgc" => {
                ExtendedKeyUsagePurpose::Other(vec![1, 3, 6, 1, 4, 1, 311, 10, 3, 3])
            }
            "netscape sgc" => ExtendedKeyUsagePurpose::Other(vec![2, 16, 840, 1, 113730, 4, 1]),
            _ => {
                unknown.push(usage.clone());
                continue;
            }
        };
        if !eku.contains(&ext) {
            eku.push(ext);
        }
    }
    if !unknown.is_empty() {
        return Err(RequestError::UnknownUsages(unknown));
    }
    Ok((ku, eku))
}

impl CertificateAuthority {
    /// Issues a certificate for the public key of `request`, as kube's CSR signer does:
    /// subject CN and O from the request, its DNS/IP/email/URI SANs, the profile's usages and
    /// no other requested extension, not a CA, a random 128-bit serial, valid from the
    /// profile's `not_before` to its `not_after` cut to this CA's expiry. Returns PEM.
    pub fn sign_request(
        &self,
        request: &CertificateRequest,
        profile: &SigningProfile,
    ) -> Result<String, RequestError> {
        let common_name = request
            .common_name
            .as_deref()
            .filter(|cn| !cn.is_empty())
            .ok_or(RequestError::NoCommonName)?;
        let ca_not_after = self.not_after();
        if profile.not_before >= ca_not_after || Utc::now() >= ca_not_after {
            return Err(RequestError::SignerExpired(ca_not_after));
        }
        let (key_usages, extended_key_usages) = key_usages(&profile.usages)?;
        let public_key = SubjectPublicKeyInfo::from_der(&request.public_key_der)
            .map_err(|e| RequestError::UnsupportedKey(e.to_string()))?;
        let mut params = CertificateParams::default();
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = key_usages;
        params.extended_key_usages = extended_key_usages;
        params.use_authority_key_identifier_extension = true;
        params.serial_number = Some(random_serial());
        params.not_before = offset_time(profile.not_before)?;
        params.not_after = offset_time(profile.not_after.min(ca_not_after))?;
        for name in &request.dns_names {
            let ia5 = name
                .as_str()
                .try_into()
                .map_err(|e: rcgen::Error| RequestError::Malformed(format!("DNS SAN: {e}")))?;
            params.subject_alt_names.push(SanType::DnsName(ia5));
        }
        for email in &request.email_addresses {
            let ia5 = email
                .as_str()
                .try_into()
                .map_err(|e: rcgen::Error| RequestError::Malformed(format!("email SAN: {e}")))?;
            params.subject_alt_names.push(SanType::Rfc822Name(ia5));
        }
        for uri in &request.uris {
            let ia5 = uri
                .as_str()
                .try_into()
                .map_err(|e: rcgen::Error| RequestError::Malformed(format!("URI SAN: {e}")))?;
            params.subject_alt_names.push(SanType::URI(ia5));
        }
        params
            .subject_alt_names
            .extend(request.ip_addresses.iter().copied().map(SanType::IpAddress));
        let cert = params
            .signed_by(&public_key, self.issuer())
            .map_err(|e| RequestError::Sign(e.to_string()))?;
        // rcgen cannot repeat O (see the der module); write the subject ourselves.
        let subject = der::encode_name(common_name, &request.organizations);
        let signer = self.issuer().key();
        let der = der::replace_subject(cert.der(), &subject, |tbs| {
            signer.sign(tbs).map_err(|e| e.to_string())
        })
        .map_err(RequestError::Sign)?;
        Ok(pem_encode("CERTIFICATE", &der))
    }
}

fn random_serial() -> SerialNumber {
    let mut bytes: [u8; 16] = rand::random();
    // Positive and without a leading zero byte, so it encodes in exactly 16 bytes.
    bytes[0] = (bytes[0] & 0x7f) | 0x40;
    SerialNumber::from_slice(&bytes)
}

fn offset_time(t: DateTime<Utc>) -> Result<time::OffsetDateTime, RequestError> {
    time::OffsetDateTime::from_unix_timestamp(t.timestamp())
        .map_err(|e| RequestError::Sign(format!("time {t} out of range: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{DistinguishedName, DnType, KeyPair};
    use x509_parser::prelude::X509Certificate;

    /// A PEM CSR for `cn` and one organization (rcgen's names hold one O) with DNS SANs.
    fn csr_pem(cn: Option<&str>, org: Option<&str>, dns: &[&str]) -> (String, KeyPair) {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        if let Some(cn) = cn {
            dn.push(DnType::CommonName, cn);
        }
        if let Some(o) = org {
            dn.push(DnType::OrganizationName, o);
        }
        params.distinguished_name = dn;
        for d in dns {
            params
                .subject_alt_names
                .push(SanType::DnsName((*d).try_into().unwrap()));
        }
        let csr = params.serialize_request(&key).unwrap();
        (csr.pem().unwrap(), key)
    }

    fn parse_cert(pem: &str) -> Vec<u8> {
        crate::pem::parse_certificates(pem).unwrap()[0].to_vec()
    }

    #[test]
    fn parses_subject_and_sans_of_a_valid_request() {
        let (pem, _) = csr_pem(Some("jane"), Some("dev"), &["jane.example"]);
        let r = parse_certificate_request(pem.as_bytes()).unwrap();
        assert_eq!(r.common_name.as_deref(), Some("jane"));
        assert_eq!(r.organizations, ["dev"]);
        assert_eq!(r.dns_names, ["jane.example"]);
    }

    #[test]
    fn rejects_other_pem_blocks_garbage_and_bad_signatures() {
        assert_eq!(
            parse_certificate_request(b"hello"),
            Err(RequestError::NotARequestPem)
        );
        let ca = CertificateAuthority::generate("ca").unwrap();
        assert_eq!(
            parse_certificate_request(ca.cert_pem().as_bytes()),
            Err(RequestError::NotARequestPem)
        );
        let (pem, _) = csr_pem(Some("jane"), None, &[]);
        let mut der = first_request_der(pem.as_bytes()).unwrap();
        // Flip a bit in the signature (the last byte of the DER).
        let last = der.len() - 1;
        der[last] ^= 0x01;
        let tampered = pem_encode("CERTIFICATE REQUEST", &der);
        assert!(matches!(
            parse_certificate_request(tampered.as_bytes()),
            Err(RequestError::BadSignature(_))
        ));
        let truncated = pem_encode("CERTIFICATE REQUEST", &der[..der.len() / 2]);
        assert!(matches!(
            parse_certificate_request(truncated.as_bytes()),
            Err(RequestError::Malformed(_))
        ));
    }

    #[test]
    fn signs_a_client_certificate_for_the_requested_key() {
        let ca = CertificateAuthority::generate("flotilla-ca").unwrap();
        let (pem, key) = csr_pem(Some("agent-1"), Some("agents"), &[]);
        let request = parse_certificate_request(pem.as_bytes()).unwrap();
        let now = Utc::now();
        let profile = SigningProfile {
            usages: vec!["client auth".into(), "digital signature".into()],
            not_before: now - chrono::Duration::minutes(5),
            not_after: now + chrono::Duration::hours(2),
        };
        let issued = ca.sign_request(&request, &profile).unwrap();
        let der = parse_cert(&issued);
        let (_, cert): (_, X509Certificate<'_>) =
            x509_parser::parse_x509_certificate(&der).unwrap();
        let id = crate::identity_from_cert(&der).unwrap();
        assert_eq!(id.user, "agent-1");
        assert_eq!(id.groups, ["agents"]);
        assert_eq!(
            cert.public_key().subject_public_key.data.as_ref(),
            key.public_key_raw()
        );
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        assert!(cert.key_usage().unwrap().unwrap().value.digital_signature());
        assert!(!cert.basic_constraints().unwrap().unwrap().value.ca);
        let (_, ca_cert) = x509_parser::parse_x509_certificate(ca.cert_der()).unwrap();
        assert!(cert.verify_signature(Some(ca_cert.public_key())).is_ok());
        assert_eq!(
            cert.validity().not_before.timestamp(),
            profile.not_before.timestamp()
        );
        assert_eq!(
            cert.validity().not_after.timestamp(),
            profile.not_after.timestamp()
        );
        // Two certificates for the same key get different serials.
        let again = parse_cert(&ca.sign_request(&request, &profile).unwrap());
        let (_, again) = x509_parser::parse_x509_certificate(&again).unwrap();
        assert_ne!(again.raw_serial(), cert.raw_serial());
    }

    #[test]
    fn validity_is_cut_to_the_ca_and_requests_without_cn_are_refused() {
        let ca = CertificateAuthority::generate("ca").unwrap();
        let (pem, _) = csr_pem(Some("x"), None, &["x.example"]);
        let request = parse_certificate_request(pem.as_bytes()).unwrap();
        let now = Utc::now();
        let profile = SigningProfile {
            usages: vec!["client auth".into()],
            not_before: now,
            not_after: now + chrono::Duration::days(365 * 20),
        };
        let der = parse_cert(&ca.sign_request(&request, &profile).unwrap());
        let (_, cert) = x509_parser::parse_x509_certificate(&der).unwrap();
        assert_eq!(
            cert.validity().not_after.timestamp(),
            ca.not_after().timestamp()
        );
        let san = cert.subject_alternative_name().unwrap().unwrap().value;
        assert!(matches!(
            san.general_names.as_slice(),
            [GeneralName::DNSName("x.example")]
        ));

        let (pem, _) = csr_pem(None, Some("g"), &[]);
        let request = parse_certificate_request(pem.as_bytes()).unwrap();
        assert_eq!(
            ca.sign_request(&request, &profile),
            Err(RequestError::NoCommonName)
        );
    }

    #[test]
    fn certificate_pem_problems() {
        let ca = CertificateAuthority::generate("ca").unwrap();
        let two = format!("{}{}", ca.cert_pem(), ca.cert_pem());
        assert_eq!(certificate_pem_problem(two.as_bytes()), None);
        assert_eq!(
            certificate_pem_problem(b"junk").as_deref(),
            Some("must contain at least one CERTIFICATE PEM block")
        );
        let (csr, _) = csr_pem(Some("x"), None, &[]);
        assert_eq!(
            certificate_pem_problem(csr.as_bytes()).as_deref(),
            Some("only CERTIFICATE PEM blocks are allowed")
        );
        let bogus = pem_encode("CERTIFICATE", b"not DER");
        assert!(certificate_pem_problem(bogus.as_bytes()).is_some());
    }

    #[test]
    fn usages_map_to_x509_and_unknown_ones_are_named() {
        let (ku, eku) = key_usages(&[
            "digital signature".into(),
            "signing".into(),
            "key encipherment".into(),
            "client auth".into(),
            "server auth".into(),
        ])
        .unwrap();
        assert_eq!(
            ku,
            [
                KeyUsagePurpose::DigitalSignature,
                KeyUsagePurpose::KeyEncipherment
            ]
        );
        assert_eq!(
            eku,
            [
                ExtendedKeyUsagePurpose::ClientAuth,
                ExtendedKeyUsagePurpose::ServerAuth
            ]
        );
        assert_eq!(
            key_usages(&["client auth".into(), "fly".into()]),
            Err(RequestError::UnknownUsages(vec!["fly".into()]))
        );
    }
}
