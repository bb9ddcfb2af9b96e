//! Reaching a member before it is joined: `GET /version` with the credentials the host will
//! store, bounded in time, so that an unreachable endpoint, an untrusted serving certificate or
//! rejected credentials are reported before anything is written on the host.

use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::api::ListParams;

use crate::{MemberCredentials, MembershipError};
use flotilla_controller_runtime::error_chain;

/// How long [`probe_member`] waits for the member to answer (connecting included).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Adds what to check to a failed TLS verification, whose own words do not say it.
fn with_hint(reason: String) -> String {
    if reason.contains("invalid peer certificate") {
        format!(
            "{reason} (the kubeconfig's certificate-authority did not sign the member's serving \
             certificate, or the certificate does not name this address)"
        )
    } else {
        reason
    }
}

/// Asks the member at `endpoint` for its version and then for one namespace with
/// `credentials`, each bounded by [`PROBE_TIMEOUT`]. Returns its `gitVersion` (empty when
/// `/version` answers 403). Credentials the member rejects (401, or treated as anonymous) are
/// [`MembershipError::Rejected`]; a 403 for an authenticated user is accepted, since what
/// the host may do on the member is the member's RBAC's business.
pub async fn probe_member(
    name: &str,
    credentials: &MemberCredentials,
    endpoint: &str,
    insecure_skip_tls_verify: bool,
) -> Result<String, MembershipError> {
    probe_member_within(
        name,
        credentials,
        endpoint,
        insecure_skip_tls_verify,
        PROBE_TIMEOUT,
    )
    .await
}

/// [`probe_member`] with its own time limit.
pub async fn probe_member_within(
    name: &str,
    credentials: &MemberCredentials,
    endpoint: &str,
    insecure_skip_tls_verify: bool,
    timeout: Duration,
) -> Result<String, MembershipError> {
    let unusable = |reason: String| MembershipError::BadCredentials {
        cluster: name.to_string(),
        reason,
    };
    if !credentials.authenticates() {
        return Err(MembershipError::NoCredentials {
            cluster: name.to_string(),
        });
    }
    // Parsing the CA and client certificate here names the broken piece, where a failed
    // handshake later would only say that it failed.
    credentials
        .tls_config(insecure_skip_tls_verify)
        .map_err(|e| match &e {
            MembershipError::Credentials { source } => unusable(error_chain(source)),
            other => unusable(error_chain(other)),
        })?;
    let mut config = credentials
        .kube_config(name, endpoint, insecure_skip_tls_verify)
        .await
        .map_err(|e| unusable(error_chain(&e)))?;
    config.connect_timeout = Some(timeout);
    config.read_timeout = Some(timeout);
    config.write_timeout = Some(timeout);
    let client = kube::Client::try_from(config).map_err(|e| unusable(error_chain(&e)))?;
    let unreachable = |reason: String| MembershipError::Unreachable {
        cluster: name.to_string(),
        endpoint: endpoint.to_string(),
        reason,
    };
    let rejected = |reason: String| MembershipError::Rejected {
        cluster: name.to_string(),
        endpoint: endpoint.to_string(),
        reason,
    };
    let version = match tokio::time::timeout(timeout, client.apiserver_version()).await {
        Err(_) => return Err(unreachable(format!("no answer within {timeout:?}"))),
        Ok(Ok(info)) => info.git_version,
        Ok(Err(kube::Error::Api(status))) if status.code == 401 => {
            return Err(rejected(status.message.clone()));
        }
        Ok(Err(kube::Error::Api(status))) if status.code == 403 => String::new(),
        Ok(Err(e)) => return Err(unreachable(with_hint(error_chain(&e)))),
    };
    // `/version` is public on many servers, so it proves nothing about the credentials; a
    // namespace list does: 401 for credentials the member does not know, 403 naming the
    // anonymous user where it ignored them. Any other 403 means authenticated.
    let namespaces: kube::Api<Namespace> = kube::Api::all(client);
    let one = ListParams::default().limit(1);
    let list = namespaces.list_metadata(&one);
    match tokio::time::timeout(timeout, list).await {
        Err(_) => Err(unreachable(format!("no answer within {timeout:?}"))),
        Ok(Ok(_)) => Ok(version),
        Ok(Err(kube::Error::Api(status))) if status.code == 401 => {
            Err(rejected(status.message.clone()))
        }
        Ok(Err(kube::Error::Api(status)))
            if status.code == 403 && status.message.contains("system:anonymous") =>
        {
            Err(rejected(format!(
                "they authenticate as the anonymous user: {}",
                status.message
            )))
        }
        Ok(Err(kube::Error::Api(status))) if status.code == 403 => Ok(version),
        Ok(Err(e)) => Err(unreachable(error_chain(&e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn test_ca() -> String {
        flotilla_pki::CertificateAuthority::generate("probe-test-ca")
            .unwrap()
            .cert_pem()
            .to_string()
    }

    #[tokio::test]
    async fn a_refused_connection_is_unreachable() {
        // Bind and drop a listener: the port is then (almost certainly) closed.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let endpoint = format!("https://127.0.0.1:{port}");
        let creds = MemberCredentials::token("tok", test_ca());
        let err = probe_member("m1", &creds, &endpoint, false)
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, MembershipError::Unreachable { .. }), "{text}");
        assert!(
            text.starts_with(&format!("cannot reach cluster m1 at {endpoint}: ")),
            "{text}"
        );
        assert!(text.to_lowercase().contains("refused"), "{text}");
    }

    #[tokio::test]
    async fn a_silent_endpoint_times_out() {
        // Accepts connections but never answers the TLS handshake.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("https://{}", listener.local_addr().unwrap());
        let hold = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                held.push(s);
            }
        });
        let creds = MemberCredentials::token("tok", test_ca());
        let started = std::time::Instant::now();
        let err = probe_member_within("m1", &creds, &endpoint, false, Duration::from_millis(300))
            .await
            .unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(matches!(err, MembershipError::Unreachable { .. }), "{err}");
        hold.abort();
    }

    #[tokio::test]
    async fn broken_credentials_are_named_before_connecting() {
        let creds = MemberCredentials::token("tok", "this is not a certificate");
        let err = probe_member("m1", &creds, "https://127.0.0.1:1", false)
            .await
            .unwrap_err();
        assert!(
            matches!(err, MembershipError::BadCredentials { .. }),
            "{err}"
        );
        assert!(err.to_string().contains("cluster m1"), "{err}");
        let err = probe_member(
            "m1",
            &MemberCredentials::default(),
            "https://127.0.0.1:1",
            true,
        )
        .await
        .unwrap_err();
        assert!(matches!(err, MembershipError::NoCredentials { .. }));
    }

    #[test]
    fn chains_skip_repeated_text() {
        #[derive(Debug)]
        struct Outer(std::io::Error);
        impl std::fmt::Display for Outer {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "connecting: {}", self.0)
            }
        }
        impl std::error::Error for Outer {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let e = Outer(std::io::Error::other("refused"));
        assert_eq!(error_chain(&e), "connecting: refused");
    }
}
