//! Certificate authorities and the certificates they issue: a self-signed ECDSA P-256 CA that
//! can be generated, saved and loaded as PEM files, and issues serving certificates (serverAuth,
//! SANs) and Kubernetes client certificates (clientAuth, CN = user, one O per group).

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Datelike, Duration, Utc};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, PKCS_ECDSA_P256_SHA256, SanType, SigningKey,
};

use crate::der;
use crate::error::{PkiError, Result};
use crate::fsutil;
use crate::pem::pem_encode;

/// Validity of a newly generated CA.
const CA_VALIDITY_DAYS: i64 = 3650;
/// Validity of issued (leaf) certificates.
pub(crate) const LEAF_VALIDITY_DAYS: i64 = 365;

/// A certificate with its private key, both PEM encoded (the key as PKCS#8).
#[derive(Clone, PartialEq, Eq)]
pub struct IssuedCert {
    pub cert_pem: String,
    pub key_pem: String,
}

impl fmt::Debug for IssuedCert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedCert")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"[elided]")
            .finish()
    }
}

/// Where a certificate and its key were written, with their contents.
#[derive(Clone, PartialEq, Eq)]
pub struct CertFiles {
    pub cert_path: PathBuf,
    pub key_path: PathBuf,
    pub cert_pem: String,
    pub key_pem: String,
}

impl fmt::Debug for CertFiles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertFiles")
            .field("cert_path", &self.cert_path)
            .field("key_path", &self.key_path)
            .field("key_pem", &"[elided]")
            .finish_non_exhaustive()
    }
}

/// `dir/<basename>.crt` and `dir/<basename>.key`.
pub fn cert_paths(dir: &Path, basename: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{basename}.crt")),
        dir.join(format!("{basename}.key")),
    )
}

impl IssuedCert {
    /// Writes `dir/<basename>.crt` (mode 0644) and `dir/<basename>.key` (mode 0600), creating
    /// `dir` if needed.
    pub fn save(&self, dir: &Path, basename: &str) -> Result<CertFiles> {
        let (cert_path, key_path) = cert_paths(dir, basename);
        // Key first: a certificate on disk without its key is the worse half-state.
        fsutil::write_file(&key_path, self.key_pem.as_bytes(), true)?;
        fsutil::write_file(&cert_path, self.cert_pem.as_bytes(), false)?;
        Ok(CertFiles {
            cert_path,
            key_path,
            cert_pem: self.cert_pem.clone(),
            key_pem: self.key_pem.clone(),
        })
    }

    /// Reads `dir/<basename>.crt` and `dir/<basename>.key` (no validation beyond reading).
    pub fn load(dir: &Path, basename: &str) -> Result<Self> {
        let (cert_path, key_path) = cert_paths(dir, basename);
        Ok(Self {
            cert_pem: fsutil::read_to_string(&cert_path)?,
            key_pem: fsutil::read_to_string(&key_path)?,
        })
    }

    /// The DER encoding of the (first) certificate.
    pub fn cert_der(&self) -> Result<Vec<u8>> {
        first_cert_der(&self.cert_pem, "the issued certificate")
    }
}

/// A CA able to issue certificates. Holds its private key; `Debug` does not print it.
pub struct CertificateAuthority {
    cert_pem: String,
    key_pem: String,
    cert_der: Vec<u8>,
    not_after: DateTime<Utc>,
    issuer: Issuer<'static, KeyPair>,
}

impl fmt::Debug for CertificateAuthority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CertificateAuthority")
            .field("cert_pem", &self.cert_pem)
            .field("key_pem", &"[elided]")
            .finish_non_exhaustive()
    }
}

impl CertificateAuthority {
    /// Generates a new self-signed CA with subject `CN=<common_name>`, valid for ten years,
    /// with key usages keyCertSign, cRLSign and digitalSignature.
    pub fn generate(common_name: &str) -> Result<Self> {
        let ca_err = |source| PkiError::GenerateCa {
            common_name: common_name.to_string(),
            source,
        };
        let key = new_key()?;
        let mut params = CertificateParams::default();
        params.distinguished_name = subject(common_name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        set_validity(&mut params, CA_VALIDITY_DAYS);
        let cert = params.self_signed(&key).map_err(ca_err)?;
        let key_pem = key.serialize_pem();
        let cert_der = cert.der().to_vec();
        let not_after = not_after_of(&cert_der, "the generated CA")?;
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem,
            cert_der,
            not_after,
            issuer: Issuer::new(params, key),
        })
    }

    /// Loads a CA from PEM text. Checks that the certificate is a CA and that the key is its key.
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Self> {
        Self::from_pem_named(cert_pem, key_pem, "the CA PEM")
    }

    fn from_pem_named(cert_pem: &str, key_pem: &str, what: &str) -> Result<Self> {
        let cert_der = first_cert_der(cert_pem, what)?;
        let parse_err = |reason: String| PkiError::ParseCertificate {
            what: what.to_string(),
            reason,
        };
        let (_, cert) =
            x509_parser::parse_x509_certificate(&cert_der).map_err(|e| parse_err(e.to_string()))?;
        let is_ca = cert
            .basic_constraints()
            .map_err(|e| parse_err(e.to_string()))?
            .is_some_and(|bc| bc.value.ca);
        if !is_ca {
            return Err(PkiError::NotACa {
                what: what.to_string(),
            });
        }
        let key = KeyPair::from_pem(key_pem).map_err(|e| PkiError::ParsePrivateKey {
            what: what.to_string(),
            reason: e.to_string(),
        })?;
        if key.public_key_raw() != cert.public_key().subject_public_key.data.as_ref() {
            return Err(PkiError::KeyMismatch {
                what: what.to_string(),
            });
        }
        let not_after = DateTime::from_timestamp(cert.validity().not_after.timestamp(), 0)
            .ok_or_else(|| parse_err("the expiry is out of range".into()))?;
        let issuer = Issuer::from_ca_cert_der(&cert_der.clone().into(), key)
            .map_err(|e| parse_err(e.to_string()))?;
        Ok(Self {
            cert_pem: cert_pem.to_string(),
            key_pem: key_pem.to_string(),
            cert_der,
            not_after,
            issuer,
        })
    }

    /// Loads `dir/ca.crt` and `dir/ca.key`.
    pub fn load(dir: &Path) -> Result<Self> {
        Self::load_as(dir, "ca")
    }

    /// Loads `dir/<basename>.crt` and `dir/<basename>.key`.
    pub fn load_as(dir: &Path, basename: &str) -> Result<Self> {
        let (cert_path, key_path) = cert_paths(dir, basename);
        let cert_pem = fsutil::read_to_string(&cert_path)?;
        let key_pem = fsutil::read_to_string(&key_path)?;
        Self::from_pem_named(&cert_pem, &key_pem, &cert_path.display().to_string())
    }

    /// Writes `dir/ca.crt` (0644) and `dir/ca.key` (0600).
    pub fn save(&self, dir: &Path) -> Result<CertFiles> {
        self.save_as(dir, "ca")
    }

    /// Writes `dir/<basename>.crt` (0644) and `dir/<basename>.key` (0600).
    pub fn save_as(&self, dir: &Path, basename: &str) -> Result<CertFiles> {
        IssuedCert {
            cert_pem: self.cert_pem.clone(),
            key_pem: self.key_pem.clone(),
        }
        .save(dir, basename)
    }

    /// The CA certificate, PEM encoded.
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key, PEM encoded.
    pub fn key_pem(&self) -> &str {
        &self.key_pem
    }

    /// The CA certificate, DER encoded.
    pub fn cert_der(&self) -> &[u8] {
        &self.cert_der
    }

    /// When the CA certificate expires; nothing it issues outlives it.
    pub fn not_after(&self) -> DateTime<Utc> {
        self.not_after
    }

    pub(crate) fn issuer(&self) -> &Issuer<'static, KeyPair> {
        &self.issuer
    }

    /// Issues a serving certificate (serverAuth) for `dns_names` and `ips`, valid for a year.
    pub fn issue_server(
        &self,
        common_name: &str,
        dns_names: &[String],
        ips: &[IpAddr],
    ) -> Result<IssuedCert> {
        let mut params = leaf_params(common_name, ExtendedKeyUsagePurpose::ServerAuth);
        for name in dns_names {
            let ia5 =
                name.as_str()
                    .try_into()
                    .map_err(|e: rcgen::Error| PkiError::InvalidSubject {
                        common_name: common_name.to_string(),
                        reason: format!("DNS name {name:?}: {e}"),
                    })?;
            params.subject_alt_names.push(SanType::DnsName(ia5));
        }
        params
            .subject_alt_names
            .extend(ips.iter().copied().map(SanType::IpAddress));
        let key = new_key()?;
        let cert =
            params
                .signed_by(&key, &self.issuer)
                .map_err(|source| PkiError::IssueCertificate {
                    common_name: common_name.to_string(),
                    source,
                })?;
        Ok(IssuedCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Issues a client certificate (clientAuth) the way Kubernetes x509 authentication reads
    /// it: subject CN = `user`, one O attribute per entry of `groups`. Valid for a year.
    pub fn issue_client(&self, user: &str, groups: &[String]) -> Result<IssuedCert> {
        if user.is_empty() {
            return Err(PkiError::InvalidSubject {
                common_name: user.to_string(),
                reason: "the user name (subject CN) must not be empty".into(),
            });
        }
        let params = leaf_params(user, ExtendedKeyUsagePurpose::ClientAuth);
        let key = new_key()?;
        let cert =
            params
                .signed_by(&key, &self.issuer)
                .map_err(|source| PkiError::IssueCertificate {
                    common_name: user.to_string(),
                    source,
                })?;
        // rcgen cannot repeat O (see the der module); write the subject ourselves.
        let subject = der::encode_name(user, groups);
        let signer = self.issuer.key();
        let der = der::replace_subject(cert.der(), &subject, |tbs| {
            signer.sign(tbs).map_err(|e| e.to_string())
        })
        .map_err(|reason| PkiError::EncodeCertificate {
            common_name: user.to_string(),
            reason,
        })?;
        Ok(IssuedCert {
            cert_pem: pem_encode("CERTIFICATE", &der),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The `notAfter` of a DER certificate.
fn not_after_of(cert_der: &[u8], what: &str) -> Result<DateTime<Utc>> {
    let parse_err = |reason: String| PkiError::ParseCertificate {
        what: what.to_string(),
        reason,
    };
    let (_, cert) =
        x509_parser::parse_x509_certificate(cert_der).map_err(|e| parse_err(e.to_string()))?;
    DateTime::from_timestamp(cert.validity().not_after.timestamp(), 0)
        .ok_or_else(|| parse_err("the expiry is out of range".into()))
}

fn new_key() -> Result<KeyPair> {
    KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(PkiError::GenerateKey)
}

fn subject(common_name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    dn
}

fn leaf_params(common_name: &str, usage: ExtendedKeyUsagePurpose) -> CertificateParams {
    let mut params = CertificateParams::default();
    params.distinguished_name = subject(common_name);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![usage];
    // Lets verifiers (Go's in particular) pick the right CA when several share a name.
    params.use_authority_key_identifier_extension = true;
    set_validity(&mut params, LEAF_VALIDITY_DAYS);
    params
}

/// Valid from the start of yesterday (UTC, tolerating clock skew between machines) for
/// `days` days from today. rcgen takes `time` dates; day precision is plenty here.
fn set_validity(params: &mut CertificateParams, days: i64) {
    let now = Utc::now();
    let start = now - Duration::days(1);
    let end = now + Duration::days(days);
    let ymd = |d: chrono::DateTime<Utc>| {
        // Month and day always fit in u8.
        rcgen::date_time_ymd(d.year(), d.month() as u8, d.day() as u8)
    };
    params.not_before = ymd(start);
    params.not_after = ymd(end);
}

/// The DER of the first certificate in `pem`.
pub(crate) fn first_cert_der(pem: &str, what: &str) -> Result<Vec<u8>> {
    crate::pem::parse_certificates_named(pem, what)?
        .into_iter()
        .next()
        .map(|c| c.to_vec())
        .ok_or_else(|| PkiError::ParseCertificate {
            what: what.to_string(),
            reason: "no CERTIFICATE block found".into(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::identity_from_cert;
    use x509_parser::extensions::GeneralName;

    fn parse(der: &[u8]) -> x509_parser::certificate::X509Certificate<'_> {
        x509_parser::parse_x509_certificate(der).unwrap().1
    }

    #[test]
    fn generated_ca_is_a_ca_with_the_given_name() {
        let ca = CertificateAuthority::generate("flotilla-ca").unwrap();
        let cert = parse(ca.cert_der());
        assert!(cert.basic_constraints().unwrap().unwrap().value.ca);
        let ku = cert.key_usage().unwrap().unwrap().value;
        assert!(ku.key_cert_sign());
        let cn: Vec<_> = cert
            .subject()
            .iter_common_name()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(cn, ["flotilla-ca"]);
        assert_eq!(cert.subject().as_raw(), cert.issuer().as_raw());
        // Ten years of 365 days, truncated to the day.
        let days = (cert.validity().not_after.timestamp() - Utc::now().timestamp()) / 86400;
        assert!((3649..=3650).contains(&days), "{days}");
        let started = Utc::now().timestamp() - cert.validity().not_before.timestamp();
        assert!((86_400..=2 * 86_400).contains(&started), "{started}");
        assert!(!format!("{ca:?}").contains("PRIVATE KEY"));
    }

    #[test]
    fn server_cert_has_sans_and_server_auth() {
        let ca = CertificateAuthority::generate("test-ca").unwrap();
        let issued = ca
            .issue_server(
                "apiserver",
                &["localhost".into(), "api.example".into()],
                &["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()],
            )
            .unwrap();
        let der = issued.cert_der().unwrap();
        let cert = parse(&der);
        let san = cert.subject_alternative_name().unwrap().unwrap().value;
        let names: Vec<String> = san
            .general_names
            .iter()
            .map(|n| match n {
                GeneralName::DNSName(d) => d.to_string(),
                GeneralName::IPAddress(ip) => format!("ip:{ip:?}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "localhost".to_string(),
                "api.example".into(),
                "ip:[127, 0, 0, 1]".into(),
                format!(
                    "ip:{:?}",
                    [0u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
                ),
            ]
        );
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.server_auth && !eku.client_auth);
        assert!(!cert.basic_constraints().unwrap().unwrap().value.ca);
        assert_eq!(
            cert.issuer().as_raw(),
            parse(ca.cert_der()).subject().as_raw()
        );
    }

    #[test]
    fn client_cert_carries_user_and_every_group() {
        let ca = CertificateAuthority::generate("test-ca").unwrap();
        let issued = ca
            .issue_client(
                "jane",
                &["system:masters".into(), "dev".into(), "ops".into()],
            )
            .unwrap();
        let der = issued.cert_der().unwrap();
        let id = identity_from_cert(&der).unwrap();
        assert_eq!(id.user, "jane");
        assert_eq!(id.groups, ["system:masters", "dev", "ops"]);
        let cert = parse(&der);
        let eku = cert.extended_key_usage().unwrap().unwrap().value;
        assert!(eku.client_auth && !eku.server_auth);
        // The re-signed certificate still verifies against the CA key.
        let ca_cert = parse(ca.cert_der());
        assert!(cert.verify_signature(Some(ca_cert.public_key())).is_ok());
    }

    #[test]
    fn empty_user_is_rejected() {
        let ca = CertificateAuthority::generate("test-ca").unwrap();
        assert!(matches!(
            ca.issue_client("", &[]),
            Err(PkiError::InvalidSubject { .. })
        ));
    }

    #[test]
    fn save_and_load_round_trip_and_mismatched_key_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let ca = CertificateAuthority::generate("flotilla-ca").unwrap();
        let files = ca.save(dir.path()).unwrap();
        assert_eq!(files.cert_path, dir.path().join("ca.crt"));
        assert_eq!(files.key_path, dir.path().join("ca.key"));
        let loaded = CertificateAuthority::load(dir.path()).unwrap();
        assert_eq!(loaded.cert_pem(), ca.cert_pem());
        assert_eq!(loaded.cert_der(), ca.cert_der());
        // A certificate issued by the loaded CA chains to the original certificate.
        let issued = loaded.issue_client("bob", &["g".into()]).unwrap();
        let der = issued.cert_der().unwrap();
        let cert = parse(&der);
        let ca_cert = parse(ca.cert_der());
        assert_eq!(cert.issuer().as_raw(), ca_cert.subject().as_raw());
        assert!(cert.verify_signature(Some(ca_cert.public_key())).is_ok());

        let other = CertificateAuthority::generate("flotilla-ca").unwrap();
        assert!(matches!(
            CertificateAuthority::from_pem(ca.cert_pem(), other.key_pem()),
            Err(PkiError::KeyMismatch { .. })
        ));
        let leaf = ca.issue_server("x", &["x".into()], &[]).unwrap();
        assert!(matches!(
            CertificateAuthority::from_pem(&leaf.cert_pem, &leaf.key_pem),
            Err(PkiError::NotACa { .. })
        ));
        assert!(matches!(
            CertificateAuthority::load(&dir.path().join("missing")),
            Err(PkiError::ReadFile { .. })
        ));
    }
}
