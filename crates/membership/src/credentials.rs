//! How the control plane authenticates to a member: the credentials Secret's keys, reading
//! them back, and building clients (kube-rs or a bare rustls configuration) from them.
//!
//! Karmada's Secret has `token` and `caBundle`. A member joined from a kubeconfig that
//! authenticates with a client certificate has no token to store, so Flotilla keeps the
//! certificate and key under the TLS Secret keys `tls.crt` / `tls.key` beside `caBundle`;
//! every Flotilla consumer (cluster proxy, status controller) presents them.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_pki::{Kubeconfig, ResolvedContext};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;

use crate::MembershipError;

pub const KEY_TOKEN: &str = "token";
pub const KEY_CA_BUNDLE: &str = "caBundle";
pub const KEY_CLIENT_CERT: &str = "tls.crt";
pub const KEY_CLIENT_KEY: &str = "tls.key";

/// Credentials for one member cluster.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct MemberCredentials {
    /// PEM CA bundle verifying the member's serving certificate.
    pub ca_pem: Option<String>,
    pub token: Option<String>,
    /// `(certificate PEM, key PEM)` presented to the member.
    pub client_cert: Option<(String, String)>,
}

impl std::fmt::Debug for MemberCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberCredentials")
            .field("ca_pem", &self.ca_pem.is_some())
            .field("token", &self.token.as_ref().map(|_| "[elided]"))
            .field("client_cert", &self.client_cert.is_some())
            .finish()
    }
}

impl MemberCredentials {
    /// A bearer token and the CA that signed the member's serving certificate.
    pub fn token(token: impl Into<String>, ca_pem: impl Into<String>) -> Self {
        Self {
            ca_pem: Some(ca_pem.into()),
            token: Some(token.into()),
            client_cert: None,
        }
    }

    /// What a kubeconfig context authenticates with (a token wins over a certificate, as in
    /// kubectl).
    pub fn from_context(context: &ResolvedContext) -> Self {
        let client_cert = match (&context.client_cert_pem, &context.client_key_pem) {
            (Some(cert), Some(key)) if context.token.is_none() => Some((cert.clone(), key.clone())),
            _ => None,
        };
        Self {
            ca_pem: context.ca_pem.clone(),
            token: context.token.clone(),
            client_cert,
        }
    }

    /// Reads the keys of a credentials Secret; absent or non-UTF-8 keys are absent.
    pub fn from_secret(secret: &Secret) -> Self {
        let empty = BTreeMap::new();
        let data = secret.data.as_ref().unwrap_or(&empty);
        let text = |key: &str| {
            data.get(key)
                .and_then(|b| String::from_utf8(b.0.clone()).ok())
                .filter(|s| !s.trim().is_empty())
        };
        let client_cert = match (text(KEY_CLIENT_CERT), text(KEY_CLIENT_KEY)) {
            (Some(cert), Some(key)) => Some((cert, key)),
            _ => None,
        };
        Self {
            ca_pem: text(KEY_CA_BUNDLE),
            token: text(KEY_TOKEN).map(|t| t.trim().to_string()),
            client_cert,
        }
    }

    /// The Secret `data` holding these credentials.
    pub fn secret_data(&self) -> BTreeMap<String, ByteString> {
        let mut data = BTreeMap::new();
        let mut put = |key: &str, value: &str| {
            data.insert(key.to_string(), ByteString(value.as_bytes().to_vec()));
        };
        if let Some(ca) = &self.ca_pem {
            put(KEY_CA_BUNDLE, ca);
        }
        if let Some(token) = &self.token {
            put(KEY_TOKEN, token);
        }
        if let Some((cert, key)) = &self.client_cert {
            put(KEY_CLIENT_CERT, cert);
            put(KEY_CLIENT_KEY, key);
        }
        data
    }

    /// A digest that changes when any of the credentials does: what a holder of many
    /// members keeps to notice a rotation, instead of the keys and certificates themselves.
    pub fn fingerprint(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (&self.ca_pem, &self.token, &self.client_cert).hash(&mut hasher);
        hasher.finish()
    }

    /// Whether there is anything to authenticate with.
    pub fn authenticates(&self) -> bool {
        self.token.is_some() || self.client_cert.is_some()
    }

    /// A rustls client configuration for the member (client certificate included, token not:
    /// the caller sends it as a header).
    pub fn tls_config(
        &self,
        insecure_skip_verify: bool,
    ) -> Result<Arc<rustls::ClientConfig>, MembershipError> {
        let cas: Vec<String> = self.ca_pem.iter().cloned().collect();
        let cert = self
            .client_cert
            .as_ref()
            .map(|(c, k)| (c.as_str(), k.as_str()));
        flotilla_pki::client_config(&cas, cert, insecure_skip_verify)
            .map_err(|source| MembershipError::Credentials { source })
    }

    /// A kube-rs configuration reaching `endpoint` with these credentials.
    pub async fn kube_config(
        &self,
        name: &str,
        endpoint: &str,
        insecure_skip_verify: bool,
    ) -> Result<kube::Config, MembershipError> {
        let ca = self.ca_pem.clone().unwrap_or_default();
        let mut kc = match (&self.token, &self.client_cert) {
            (Some(token), _) => Kubeconfig::new_token(endpoint, name, "flotilla", &ca, token),
            (None, Some((cert, key))) => {
                Kubeconfig::new_client_cert(endpoint, name, "flotilla", &ca, cert, key)
            }
            (None, None) => {
                return Err(MembershipError::NoCredentials {
                    cluster: name.to_string(),
                });
            }
        };
        for cluster in &mut kc.clusters {
            if self.ca_pem.is_none() {
                cluster.cluster.certificate_authority_data = None;
            }
            if insecure_skip_verify {
                cluster.cluster.insecure_skip_tls_verify = true;
                cluster.cluster.certificate_authority_data = None;
            }
        }
        let yaml = kc
            .to_yaml()
            .map_err(|source| MembershipError::Credentials { source })?;
        let kube_kc = kube::config::Kubeconfig::from_yaml(&yaml).map_err(|source| {
            MembershipError::ClientConfig {
                cluster: name.to_string(),
                source,
            }
        })?;
        kube::Config::from_custom_kubeconfig(kube_kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|source| MembershipError::ClientConfig {
                cluster: name.to_string(),
                source,
            })
    }

    /// A kube-rs client for the member.
    pub async fn client(
        &self,
        name: &str,
        endpoint: &str,
        insecure_skip_verify: bool,
    ) -> Result<kube::Client, MembershipError> {
        let config = self
            .kube_config(name, endpoint, insecure_skip_verify)
            .await?;
        kube::Client::try_from(config).map_err(|source| MembershipError::Client {
            cluster: name.to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_round_trip_keeps_every_key() {
        let creds = MemberCredentials {
            ca_pem: Some("CA".into()),
            token: Some("tok".into()),
            client_cert: Some(("CERT".into(), "KEY".into())),
        };
        let secret = Secret {
            data: Some(creds.secret_data()),
            ..Default::default()
        };
        assert_eq!(MemberCredentials::from_secret(&secret), creds);
        let keys: Vec<_> = creds.secret_data().into_keys().collect();
        assert_eq!(keys, ["caBundle", "tls.crt", "tls.key", "token"]);
    }

    #[test]
    fn the_fingerprint_follows_every_credential() {
        let base = MemberCredentials {
            ca_pem: Some("CA".into()),
            token: Some("tok".into()),
            client_cert: Some(("CERT".into(), "KEY".into())),
        };
        assert_eq!(base.fingerprint(), base.clone().fingerprint());
        let mut changed = vec![base.clone(), base.clone(), base.clone(), base.clone()];
        changed[0].ca_pem = Some("CA2".into());
        changed[1].token = Some("tok2".into());
        changed[2].client_cert = Some(("CERT".into(), "KEY2".into()));
        changed[3].token = None;
        for other in changed {
            assert_ne!(base.fingerprint(), other.fingerprint(), "{other:?}");
        }
    }

    #[test]
    fn a_token_is_trimmed_and_half_a_certificate_is_none() {
        let mut data = BTreeMap::new();
        data.insert("token".to_string(), ByteString(b" abc\n".to_vec()));
        data.insert("tls.crt".to_string(), ByteString(b"CERT".to_vec()));
        let secret = Secret {
            data: Some(data),
            ..Default::default()
        };
        let creds = MemberCredentials::from_secret(&secret);
        assert_eq!(creds.token.as_deref(), Some("abc"));
        assert_eq!(creds.client_cert, None);
        assert_eq!(creds.ca_pem, None);
        assert!(creds.authenticates());
        assert!(!MemberCredentials::default().authenticates());
    }

    #[tokio::test]
    async fn no_credentials_is_an_error() {
        let err = MemberCredentials::default()
            .kube_config("m1", "https://127.0.0.1:1", false)
            .await
            .err();
        assert!(matches!(err, Some(MembershipError::NoCredentials { .. })));
    }
}
