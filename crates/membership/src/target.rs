//! Where and how the host reaches a joined member: the connection fields of a Cluster
//! ([`MemberTarget`]) and the kube-rs client built from them and the credentials Secret. The
//! status controller and the execution controller both connect through here, so a member is
//! reached the same way (endpoint, CA, token or client certificate, proxy URL, insecure flag)
//! whichever controller talks to it.

use std::sync::Arc;
use std::time::Duration;

use flotilla_karmada_api::Cluster;
use flotilla_karmada_api::cluster::LocalSecretReference;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;

use crate::{MemberCredentials, MemberReader, MembershipError};

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

    /// Refuses an endpoint that credentials would reach in clear ([`crate::is_plain_http`]).
    pub fn check_transport(&self, name: &str) -> Result<(), MembershipError> {
        match &self.endpoint {
            Some(endpoint) if crate::is_plain_http(endpoint) => Err(MembershipError::PlainHttp {
                cluster: name.to_string(),
                endpoint: endpoint.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// The credentials of member `name`, read from the Secret `secret_ref` names. They are
    /// not even read for a plain HTTP endpoint: no caller could send them there.
    pub async fn credentials(
        &self,
        host: &kube::Client,
        name: &str,
    ) -> Result<MemberCredentials, MembershipError> {
        self.check_transport(name)?;
        let Some(reference) = &self.secret_ref else {
            return Err(MembershipError::NoSecretRef {
                cluster: name.to_string(),
            });
        };
        let secrets: Api<Secret> = Api::namespaced(host.clone(), &reference.namespace);
        let secret =
            secrets
                .get(&reference.name)
                .await
                .map_err(|source| MembershipError::ReadSecret {
                    cluster: name.to_string(),
                    namespace: reference.namespace.clone(),
                    name: reference.name.clone(),
                    source,
                })?;
        Ok(MemberCredentials::from_secret(&secret))
    }

    /// A client for member `name` with `credentials`; connecting is bounded by
    /// `connect_timeout` so that a dead member fails fast.
    pub async fn client(
        &self,
        name: &str,
        credentials: &MemberCredentials,
        connect_timeout: Duration,
    ) -> Result<kube::Client, MembershipError> {
        self.connector(name, credentials, connect_timeout)
            .await?
            .client(name)
    }

    /// What clients of member `name` are built from, for a caller that builds them again and
    /// again (and may keep nothing open in between).
    pub async fn connector(
        &self,
        name: &str,
        credentials: &MemberCredentials,
        connect_timeout: Duration,
    ) -> Result<MemberConnector, MembershipError> {
        let endpoint = self
            .endpoint
            .as_deref()
            .ok_or_else(|| MembershipError::NoEndpoint {
                cluster: name.to_string(),
            })?;
        self.check_transport(name)?;
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
        let tls = if config.proxy_url.is_some() || config.tls_server_name.is_some() {
            // Rare set-ups: kube-rs's own stack handles proxy tunnels and server names.
            None
        } else {
            use kube::client::ConfigExt;
            let mut tls =
                config
                    .rustls_client_config()
                    .map_err(|source| MembershipError::Client {
                        cluster: name.to_string(),
                        source,
                    })?;
            tls.resumption = rustls::client::Resumption::store(Arc::new(
                crate::sessions::LastSession::default(),
            ));
            // No ALPN here: hyper-rustls sets its own (and refuses a configuration that has
            // one), and a server offered none speaks HTTP/1.1, what [`MemberReader`] speaks.
            Some(Arc::new(tls))
        };
        Ok(MemberConnector {
            config,
            tls,
            token: credentials.token.clone(),
        })
    }

    /// A [`MemberReader`] of member `name` with `credentials`; connecting is bounded by
    /// `connect_timeout`. Nothing is connected until its first request.
    pub async fn reader(
        &self,
        name: &str,
        credentials: &MemberCredentials,
        connect_timeout: Duration,
    ) -> Result<MemberReader, MembershipError> {
        self.connector(name, credentials, connect_timeout)
            .await?
            .reader(name)
    }
}

/// How the host reaches one member, kept between connections: the kube-rs configuration
/// (endpoint, authentication) and the TLS configuration with its session store. Every client
/// built from it opens its own connection and closes it when dropped; clones of the TLS
/// configuration share the store, so a connection resumes the session of the one before it
/// (no certificate exchange or verification) instead of a full handshake.
///
/// Its [`MemberReader`]s are what the status controller keeps per member (an idle kube-rs
/// client with its connection costs about 70 KB: hyper's and kube-rs's tasks, channels and
/// buffers); kube-rs clients are for the controllers that write to members.
pub struct MemberConnector {
    config: kube::Config,
    /// `None` where kube-rs's own stack is used (a proxy URL or a TLS server name).
    tls: Option<Arc<rustls::ClientConfig>>,
    /// The bearer token, sent by [`MemberReader`] (kube-rs's clients take it from `config`).
    token: Option<String>,
}

impl MemberConnector {
    /// A new client of member `name`; nothing is connected until its first request.
    pub fn client(&self, name: &str) -> Result<kube::Client, MembershipError> {
        let built = match &self.tls {
            Some(tls) => flotilla_controller_runtime::client::kube_client_with(
                &self.config,
                (**tls).clone(),
                flotilla_controller_runtime::client::Pooling {
                    read_buffer: Some(MEMBER_READ_BUFFER),
                    ..Default::default()
                },
            ),
            None => kube::Client::try_from(self.config.clone()),
        };
        built.map_err(|source| MembershipError::Client {
            cluster: name.to_string(),
            source,
        })
    }

    /// A new [`MemberReader`] of member `name`; nothing is connected until its first request.
    /// Every reader of this connector resumes the TLS session of the last connection.
    pub fn reader(&self, name: &str) -> Result<MemberReader, MembershipError> {
        match &self.tls {
            Some(tls) => MemberReader::direct(
                name,
                &self.config.cluster_url,
                tls.clone(),
                self.token.as_deref(),
                self.config
                    .connect_timeout
                    .unwrap_or(DEFAULT_CONNECT_TIMEOUT),
            ),
            None => self.client(name).map(MemberReader::kube),
        }
    }
}

/// Connecting to a member without a connect timeout configured (callers set one).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The read buffer of a member connection. hyper's default grows with the largest response
/// read (a discovery document, a node list) and keeps that size for the connection's life,
/// in every kept connection (5,000 members: 57 MiB more). Response heads must fit (an API
/// server's are well under 1 KB); bodies are read through it in pieces.
const MEMBER_READ_BUFFER: usize = 8 * 1024;

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_names::karmada::NAMESPACE_KARMADA_CLUSTER as NS;
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
            "secretRef": {"namespace": flotilla_names::karmada::NAMESPACE_KARMADA_CLUSTER, "name": "m1"},
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

    #[tokio::test]
    async fn each_client_has_its_own_connection_and_resumes_the_last_session() {
        let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
        use crate::test_member::{Seen, member, next};
        let (endpoint, mut seen) = member(&ca).await;
        let target = MemberTarget::of(&cluster(
            json!({"syncMode": "Push", "apiEndpoint": endpoint}),
        ));
        let creds = MemberCredentials::token("t", ca.cert_pem());
        let connector = target
            .connector("m1", &creds, Duration::from_secs(5))
            .await
            .unwrap();
        let mut handshakes = Vec::new();
        for _ in 0..3 {
            let client = connector.client("m1").unwrap();
            let version = client.apiserver_version().await.unwrap();
            assert_eq!(version.git_version, "v1.33.0");
            // Two requests, one connection.
            client.apiserver_version().await.unwrap();
            let Seen::Connected(kind) = next(&mut seen).await else {
                panic!("no handshake seen");
            };
            handshakes.push(kind);
            for _ in 0..2 {
                assert!(matches!(next(&mut seen).await, Seen::Request(_)));
            }
            drop(client);
            // Dropping the client closes its connection: nothing is kept open in between.
            assert_eq!(next(&mut seen).await, Seen::Closed);
        }
        use rustls::HandshakeKind::{Full, Resumed};
        assert_eq!(handshakes, [Some(Full), Some(Resumed), Some(Resumed)]);
    }

    #[tokio::test]
    async fn credentials_are_never_read_for_a_plain_http_endpoint() {
        let target = MemberTarget::of(&cluster(json!({"syncMode": "Push",
            "apiEndpoint": "http://127.0.0.1:1",
            "secretRef": {"namespace": NS, "name": "m1"}})));
        // A host nothing listens on: reading the Secret would fail differently.
        let host =
            kube::Client::try_from(kube::Config::new("https://127.0.0.1:1".parse().unwrap()))
                .unwrap();
        let err = target.credentials(&host, "m1").await.unwrap_err();
        assert!(matches!(err, MembershipError::PlainHttp { .. }), "{err:?}");
        assert!(err.to_string().contains("only over TLS"), "{err}");
        // Nor is a token sent there by a client or reader built with one.
        let token = MemberCredentials::token("t", "");
        for err in [
            target
                .client("m1", &token, Duration::from_secs(1))
                .await
                .err(),
            target
                .reader("m1", &token, Duration::from_secs(1))
                .await
                .err(),
        ] {
            assert!(
                matches!(err, Some(MembershipError::PlainHttp { .. })),
                "{err:?}"
            );
        }
    }

    /// A member that redirects: neither a kube-rs client nor a reader follows it, so the
    /// token goes to the member's own endpoint only.
    #[tokio::test]
    async fn member_clients_never_follow_a_redirect() {
        use crate::test_member::{Seen, member, next};
        let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
        let (endpoint, mut seen) = member(&ca).await;
        let (elsewhere, mut elsewhere_seen) = member(&ca).await;
        let port = elsewhere.rsplit(':').next().unwrap().to_string();
        let path = format!("/redirect-to/{port}");
        let target = MemberTarget::of(&cluster(
            json!({"syncMode": "Push", "apiEndpoint": endpoint}),
        ));
        let creds = MemberCredentials::token("the-token", ca.cert_pem());

        let client = target
            .client("m1", &creds, Duration::from_secs(5))
            .await
            .unwrap();
        let request = http::Request::get(&path).body(Vec::new()).unwrap();
        // The redirect itself comes back (its empty body); the place it points to answers
        // anything but that.
        let answer = client.request_text(request).await;
        assert_eq!(answer.ok().as_deref(), Some(""));
        let reader = target
            .reader("m1", &creds, Duration::from_secs(5))
            .await
            .unwrap();
        let answer = reader.get(&path, "application/json").await;
        assert!(
            answer.as_ref().is_ok_and(|r| r.status.as_u16() == 302),
            "{answer:?}"
        );

        // Both requests reached the member with the token...
        let mut heads = Vec::new();
        while heads.len() < 2 {
            if let Seen::Request(head) = next(&mut seen).await {
                heads.push(head);
            }
        }
        for head in &heads {
            assert!(head.contains("authorization: bearer the-token"), "{head}");
        }
        // ...and both answers are in: a client that followed would have connected before
        // returning them.
        assert!(
            elsewhere_seen.try_recv().is_err(),
            "a redirect was followed"
        );
    }
}
