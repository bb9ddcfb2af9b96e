//! One connection per member cluster, shared by everything in the aggregated API server that
//! talks to members (the `clusters/{name}/proxy` subresource and merged reads): the member's
//! endpoint from `spec.apiEndpoint`, credentials from the Secret in
//! `spec.impersonatorSecretRef` (else `spec.secretRef`) read from the host as
//! `flotilla_membership::MemberCredentials`, and a pooled HTTP/2 [`Upstream`] kept for as
//! long as the spec and the Secret stay the same.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_apimachinery::ApiError;
use flotilla_apiserver::proxy::Upstream;
use flotilla_membership::MemberCredentials;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use parking_lot::Mutex;
use serde_json::Value;

/// An upstream with the fingerprint (spec + Secret version) it was built from and its token.
type CachedUpstream = (String, Arc<Upstream>, Option<String>);

/// How long a credentials Secret read from the host is reused. Reading it on every proxied
/// request would add a round trip to the host (with its authorization) to each one; a rotated
/// or fixed Secret takes effect within this time, as with an informer's cache.
const SECRET_TTL: Duration = Duration::from_secs(5);

/// The members' connections, keyed by cluster name.
pub struct MemberConnections {
    host: kube::Client,
    upstreams: Mutex<HashMap<String, CachedUpstream>>,
    /// Secrets by (namespace, name), with when they were read; absent Secrets are not kept.
    secrets: Mutex<HashMap<(String, String), (Instant, Secret)>>,
}

impl MemberConnections {
    pub fn new(host: kube::Client) -> Self {
        Self {
            host,
            upstreams: Mutex::new(HashMap::new()),
            secrets: Mutex::new(HashMap::new()),
        }
    }

    /// The Secret `ns/name` from the host, at most [`SECRET_TTL`] old.
    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Secret>, kube::Error> {
        let key = (ns.to_string(), name.to_string());
        if let Some((at, secret)) = self.secrets.lock().get(&key) {
            if at.elapsed() < SECRET_TTL {
                return Ok(Some(secret.clone()));
            }
        }
        let secrets: Api<Secret> = Api::namespaced(self.host.clone(), ns);
        let found = secrets.get_opt(name).await?;
        let mut cache = self.secrets.lock();
        match &found {
            Some(secret) => {
                cache.insert(key, (Instant::now(), secret.clone()));
            }
            None => {
                cache.remove(&key);
            }
        }
        Ok(found)
    }

    async fn credentials(
        &self,
        cluster: &str,
        spec: &Value,
    ) -> Result<(MemberCredentials, String), ApiError> {
        let reference = spec
            .get("impersonatorSecretRef")
            .filter(|r| !r.is_null())
            .or_else(|| spec.get("secretRef").filter(|r| !r.is_null()));
        let Some(r) = reference else {
            return Ok((MemberCredentials::default(), String::new()));
        };
        let ns = r
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = r.get("name").and_then(Value::as_str).unwrap_or_default();
        let secret = self.secret(ns, name).await.map_err(|e| {
            ApiError::service_unavailable(format!(
                "reading the credentials of cluster {cluster:?} ({ns}/{name}): {e}"
            ))
        })?;
        let Some(secret) = secret else {
            return Err(ApiError::service_unavailable(format!(
                "the credentials Secret {ns}/{name} of cluster {cluster:?} does not exist"
            )));
        };
        let version = secret.metadata.resource_version.clone().unwrap_or_default();
        Ok((MemberCredentials::from_secret(&secret), version))
    }

    /// The connection to `cluster` (its stored object `obj`) and the bearer token to send.
    pub async fn upstream(
        &self,
        cluster: &str,
        obj: &Value,
    ) -> Result<(Arc<Upstream>, Option<String>), ApiError> {
        let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
        let endpoint = spec
            .get("apiEndpoint")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                ApiError::service_unavailable(format!(
                    "cluster {cluster:?} has no spec.apiEndpoint to proxy to"
                ))
            })?;
        let base = crate::cluster::check_endpoint(endpoint).map_err(|e| {
            ApiError::service_unavailable(format!(
                "cluster {cluster:?} has an invalid apiEndpoint: {e}"
            ))
        })?;
        if flotilla_membership::is_plain_http(endpoint) {
            // Validation refuses such a Cluster naming credentials; one stored before that
            // check existed is not reached either (the proxy and merged reads speak TLS only).
            return Err(ApiError::service_unavailable(format!(
                "cluster {cluster:?} has a plain HTTP apiEndpoint ({endpoint}); members are \
                 reached only over TLS, where their credentials cannot be read in transit"
            )));
        }
        let (creds, secret_version) = self.credentials(cluster, &spec).await?;
        let fingerprint = format!(
            "{}|{secret_version}",
            serde_json::to_string(&spec).unwrap_or_default()
        );
        if let Some((fp, up, token)) = self.upstreams.lock().get(cluster) {
            if *fp == fingerprint {
                return Ok((up.clone(), token.clone()));
            }
        }
        let insecure = spec
            .get("insecureSkipTLSVerification")
            .and_then(Value::as_bool)
            == Some(true);
        if creds.ca_pem.is_none() && !insecure && base.scheme_str() == Some("https") {
            return Err(ApiError::service_unavailable(format!(
                "cluster {cluster:?} has no caBundle in its Secret and insecureSkipTLSVerification is not set"
            )));
        }
        let tls = creds.tls_config(insecure).map_err(|e| {
            let cause = flotilla_membership::error_chain(&e);
            let what = if creds.client_cert.is_some() {
                "caBundle or client certificate (tls.crt, tls.key)"
            } else {
                "caBundle"
            };
            ApiError::service_unavailable(format!(
                "the {what} of cluster {cluster:?} is unusable: {cause}"
            ))
        })?;
        let upstream = Arc::new(Upstream::new(base, &tls));
        self.upstreams.lock().insert(
            cluster.to_string(),
            (fingerprint, upstream.clone(), creds.token.clone()),
        );
        Ok((upstream, creds.token))
    }
}
