//! The service-account token signing key: one ECDSA P-256 key pair an API server signs
//! ServiceAccount tokens (JWTs, ES256) with, kept as `sa.key` (PKCS#8) and `sa.pub` (the
//! public key, SPKI) beside the other certificates, as kubeadm keeps its `sa.key`/`sa.pub`.
//!
//! Like a CA, the private key is generated once and never replaced silently: every token handed
//! out would stop verifying. `sa.pub` is derived data and is rewritten when missing or stale.

use std::fmt;
use std::path::{Path, PathBuf};

use rcgen::{KeyPair, PKCS_ECDSA_P256_SHA256};

use crate::error::{PkiError, Result};
use crate::fsutil;

/// Basename of the key files (`sa.key`, `sa.pub`).
pub const SERVICE_ACCOUNT_KEY_BASENAME: &str = "sa";

/// An ECDSA P-256 signing key and its public forms.
#[derive(Clone)]
pub struct ServiceAccountKey {
    /// The private key, PKCS#8 PEM.
    pub private_key_pem: String,
    /// The private key, PKCS#8 DER.
    pub private_key_der: Vec<u8>,
    /// The public key, SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`).
    pub public_key_pem: String,
    /// The public key, SubjectPublicKeyInfo DER.
    pub public_key_der: Vec<u8>,
    /// The public key as an uncompressed curve point (`0x04 || X || Y`, 65 bytes).
    pub public_key_point: Vec<u8>,
}

impl fmt::Debug for ServiceAccountKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceAccountKey")
            .field("public_key_pem", &self.public_key_pem)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountKey {
    /// A new random key.
    pub fn generate() -> Result<Self> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256).map_err(PkiError::GenerateKey)?;
        Ok(Self::from_key_pair(&key))
    }

    /// Reads a PKCS#8 PEM private key; `what` names it in errors. Only ECDSA P-256 keys are
    /// accepted (tokens are signed with ES256).
    pub fn from_pem(pem: &str, what: &str) -> Result<Self> {
        let key = KeyPair::from_pem(pem).map_err(|e| PkiError::ParsePrivateKey {
            what: what.to_string(),
            reason: e.to_string(),
        })?;
        if !key.is_compatible(&PKCS_ECDSA_P256_SHA256) {
            return Err(PkiError::ParsePrivateKey {
                what: what.to_string(),
                reason: "not an ECDSA P-256 key (service-account tokens are signed with ES256)"
                    .into(),
            });
        }
        Ok(Self::from_key_pair(&key))
    }

    fn from_key_pair(key: &KeyPair) -> Self {
        use rcgen::PublicKeyData;
        Self {
            private_key_pem: key.serialize_pem(),
            private_key_der: key.serialize_der(),
            public_key_pem: key.public_key_pem(),
            public_key_der: key.subject_public_key_info(),
            public_key_point: key.public_key_raw().to_vec(),
        }
    }
}

/// The key and where it is kept.
#[derive(Debug, Clone)]
pub struct ServiceAccountKeyFiles {
    pub key_path: PathBuf,
    pub pub_path: PathBuf,
    pub key: ServiceAccountKey,
}

/// `dir/sa.key` and `dir/sa.pub`.
pub fn service_account_key_paths(dir: &Path) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{SERVICE_ACCOUNT_KEY_BASENAME}.key")),
        dir.join(format!("{SERVICE_ACCOUNT_KEY_BASENAME}.pub")),
    )
}

/// Loads `dir/sa.key` or, when neither it nor `sa.pub` exists, generates it; (re)writes
/// `sa.pub` from the key when it is missing or does not match. `written` gets `"sa"` when the
/// key was generated and `"sa.pub"` when only the public key was rewritten.
///
/// `sa.pub` without `sa.key` is an error: the key that signed the tokens in use is gone, and a
/// new one would silently invalidate all of them.
pub(crate) fn ensure_service_account_key(
    dir: &Path,
    written: &mut Vec<String>,
) -> Result<ServiceAccountKeyFiles> {
    let (key_path, pub_path) = service_account_key_paths(dir);
    let key = match (key_path.exists(), pub_path.exists()) {
        (true, _) => {
            let pem = fsutil::read_to_string(&key_path)?;
            ServiceAccountKey::from_pem(&pem, &key_path.display().to_string())?
        }
        (false, false) => {
            let key = ServiceAccountKey::generate()?;
            fsutil::write_file(&key_path, key.private_key_pem.as_bytes(), true)?;
            written.push(SERVICE_ACCOUNT_KEY_BASENAME.to_string());
            key
        }
        (false, true) => {
            return Err(PkiError::IncompletePair {
                present: pub_path,
                missing: key_path,
            });
        }
    };
    let current_pub = std::fs::read_to_string(&pub_path).unwrap_or_default();
    if current_pub != key.public_key_pem {
        fsutil::write_file(&pub_path, key.public_key_pem.as_bytes(), false)?;
        if !written.iter().any(|w| w == SERVICE_ACCOUNT_KEY_BASENAME) {
            written.push(format!("{SERVICE_ACCOUNT_KEY_BASENAME}.pub"));
        }
    }
    Ok(ServiceAccountKeyFiles {
        key_path,
        pub_path,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_once_then_loaded_and_pub_repaired() {
        let dir = tempfile::tempdir().unwrap();
        let mut written = Vec::new();
        let first = ensure_service_account_key(dir.path(), &mut written).unwrap();
        assert_eq!(written, ["sa"]);
        assert_eq!(first.key.public_key_point.len(), 65);
        assert_eq!(first.key.public_key_point[0], 4);

        let mut written = Vec::new();
        let second = ensure_service_account_key(dir.path(), &mut written).unwrap();
        assert!(written.is_empty());
        assert_eq!(second.key.private_key_der, first.key.private_key_der);

        // A damaged public key file is rewritten from the private key, which stays.
        std::fs::write(&first.pub_path, "garbage").unwrap();
        let mut written = Vec::new();
        let third = ensure_service_account_key(dir.path(), &mut written).unwrap();
        assert_eq!(written, ["sa.pub"]);
        assert_eq!(third.key.private_key_der, first.key.private_key_der);
        assert_eq!(
            std::fs::read_to_string(&first.pub_path).unwrap(),
            first.key.public_key_pem
        );
    }

    #[test]
    fn a_lost_private_key_is_an_error_not_a_new_key() {
        let dir = tempfile::tempdir().unwrap();
        let first = ensure_service_account_key(dir.path(), &mut Vec::new()).unwrap();
        std::fs::remove_file(&first.key_path).unwrap();
        let err = ensure_service_account_key(dir.path(), &mut Vec::new()).unwrap_err();
        assert!(matches!(err, PkiError::IncompletePair { .. }), "{err}");
    }

    #[test]
    fn only_p256_keys_are_accepted() {
        let ed = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let err = ServiceAccountKey::from_pem(&ed.serialize_pem(), "ed.key").unwrap_err();
        assert!(err.to_string().contains("P-256"), "{err}");
        let good = ServiceAccountKey::generate().unwrap();
        let again = ServiceAccountKey::from_pem(&good.private_key_pem, "sa.key").unwrap();
        assert_eq!(again.public_key_der, good.public_key_der);
        assert!(!format!("{good:?}").contains("PRIVATE"));
    }
}
