//! Where and how the host reaches a joined member: the connection fields of a Cluster
//! ([`MemberTarget`]) and the kube-rs client built from them and the credentials Secret. The
//! status controller and the execution controller both connect through here, so a member is
//! reached the same way (endpoint, CA, token or client certificate, proxy URL, insecure flag)
//! whichever controller talks to it.

use std::time::Duration;

use flotilla_api::Cluster;
use flotilla_api::cluster::LocalSecretReference;

use crate::{MemberCredentials, MembershipError};

/// What a member connection is built from; a change means reconnecting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberTarget {
    /// `spec.apiEndpoint`, when set and not empty.
    pub endpoint: Option<String>,
    /// `spec.secretRef`.
    pub secret_ref: Option<LocalSecretReference>,
    /// `spec.insecureSkipTLSVerification`.
    pub insecure: bool,
    /// `spec.proxyURL`, when set and not empty.
    pub proxy_url: Option<String>,
}

impl MemberTarget {
    /// The connection fields of `cluster`.
    pub fn of(cluster: &Cluster) -> Self {
        Self {
            endpoint: cluster.spec.api_endpoint.clone().filter(|e| !e.is_empty()),
            secret_ref: cluster.spec.secret_ref.clone(),
            insecure: cluster.spec.insecure_skip_tls_verification == Some(true),
            proxy_url: cluster.spec.proxy_url.clone().filter(|p| !p.is_empty()),
        }
    }

    /// A client for member `name` with `credentials`; connecting is bounded by
    /// `connect_timeout` so that a dead member fails fast.
    pub async fn client(
        &self,
        name: &str,
        credentials: &MemberCredentials,
        connect_timeout: Duration,
    ) -> Result<kube::Client, MembershipError> {
        let endpoint = self
            .endpoint
            .as_deref()
            .ok_or_else(|| MembershipError::NoEndpoint {
                cluster: name.to_string(),
            })?;
        let mut config = credentials
            .kube_config(name, endpoint, self.insecure)
            .await?;
        config.connect_timeout = Some(connect_timeout);
        if let Some(proxy) = &self.proxy_url {
            let uri = proxy
                .parse::<http::Uri>()
                .map_err(|_| MembershipError::ProxyUrl {
                    cluster: name.to_string(),
                    url: proxy.clone(),
                })?;
            config.proxy_url = Some(uri);
        }
        kube::Client::try_from(config).map_err(|source| MembershipError::Client {
            cluster: name.to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(spec: serde_json::Value) -> Cluster {
        serde_json::from_value(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1",
            "kind": "Cluster",
            "metadata": {"name": "m1"},
            "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn target_reads_the_connection_fields() {
        let t = MemberTarget::of(&cluster(json!({"syncMode": "Push",
            "apiEndpoint": "https://m1:6443",
            "secretRef": {"namespace": flotilla_core::karmada::NAMESPACE_KARMADA_CLUSTER, "name": "m1"},
            "proxyURL": ""})));
        assert_eq!(t.endpoint.as_deref(), Some("https://m1:6443"));
        assert_eq!(t.proxy_url, None);
        assert!(!t.insecure);
        assert_eq!(t.secret_ref.unwrap().name, "m1");
    }

    #[tokio::test]
    async fn missing_endpoint_and_bad_proxy_are_errors() {
        let creds = MemberCredentials::token("t", "");
        let none = MemberTarget::of(&cluster(json!({"syncMode": "Push"})));
        let err = none
            .client("m1", &creds, Duration::from_secs(1))
            .await
            .err();
        assert!(
            matches!(err, Some(MembershipError::NoEndpoint { .. })),
            "{err:?}"
        );
        let bad = MemberTarget::of(&cluster(json!({"syncMode": "Push",
            "apiEndpoint": "https://127.0.0.1:1", "insecureSkipTLSVerification": true,
            "proxyURL": "not a url"})));
        let err = bad.client("m1", &creds, Duration::from_secs(1)).await.err();
        assert!(
            matches!(err, Some(MembershipError::ProxyUrl { .. })),
            "{err:?}"
        );
    }
}
