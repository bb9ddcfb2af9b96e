//! `clusters/{name}/proxy/{path}`: forwards a request to the member cluster's API server.
//!
//! The member's endpoint comes from `spec.apiEndpoint`; credentials from the Secret in
//! `spec.impersonatorSecretRef` (else `spec.secretRef`) on the host, read as
//! `flotilla_membership::MemberCredentials` (`token` sent as a bearer token, `caBundle`, and
//! a client certificate under `tls.crt`/`tls.key` presented in the handshake);
//! `spec.insecureSkipTLSVerification` skips verification. The caller is
//! impersonated (`Impersonate-User`/`-Group`/`-Extra-*`, without `system:authenticated`), so
//! the member's RBAC decides. Paths that try to leave the member's API (`..`, `.`, encoded
//! slashes or backslashes) are refused before anything is sent.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::response::Response;
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_apiserver::UserInfo;
use flotilla_apiserver::proxy::{Upstream, forward, impersonation_headers};
use flotilla_apiserver::request::ResourcePath;
use flotilla_apiserver::response::error_response;
use flotilla_apiserver::server::{ApiServer, SubresourceHandler};
use flotilla_membership::MemberCredentials;
use http::{HeaderName, HeaderValue};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use parking_lot::Mutex;
use serde_json::Value;

/// Checks a proxied path segment by segment after percent-decoding.
pub fn check_proxy_path(path: &str) -> Result<(), String> {
    for raw in path.split('/') {
        let decoded: String =
            form_urlencoded::parse(format!("s={}", raw.replace('+', "%2B")).as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
        if decoded == ".." || decoded == "." {
            return Err(format!("the proxy path may not contain {raw:?} segments"));
        }
        if decoded.contains('/') || decoded.contains('\\') || decoded.contains('\0') {
            return Err(format!(
                "the proxy path segment {raw:?} may not encode '/', '\\\\' or NUL"
            ));
        }
    }
    if path.contains("//") {
        return Err("the proxy path may not contain empty segments".into());
    }
    Ok(())
}

/// An upstream with the fingerprint (spec + Secret version) it was built from and its token.
type CachedUpstream = (String, Arc<Upstream>, Option<String>);

/// How long a credentials Secret read from the host is reused. Reading it on every proxied
/// request would add a round trip to the host (with its authorization) to each one; a rotated
/// or fixed Secret takes effect within this time, as with an informer's cache.
const SECRET_TTL: Duration = Duration::from_secs(5);

/// The proxy handler; keeps one upstream per cluster for as long as its spec and Secret stay
/// the same.
pub struct ClusterProxy {
    host: kube::Client,
    upstreams: Mutex<HashMap<String, CachedUpstream>>,
    /// Secrets by (namespace, name), with when they were read; absent Secrets are not kept.
    secrets: Mutex<HashMap<(String, String), (Instant, Secret)>>,
}

impl ClusterProxy {
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

    async fn upstream(
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

#[async_trait::async_trait]
impl SubresourceHandler for ClusterProxy {
    async fn handle(
        &self,
        server: &Arc<ApiServer>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Response {
        let name = path.name.clone().unwrap_or_default();
        let sub_path = path.sub_path.clone().unwrap_or_else(|| "/".to_string());
        if let Err(msg) = check_proxy_path(&sub_path) {
            return error_response(&ApiError::bad_request(msg));
        }
        let obj = match flotilla_apiserver::objects::Objects::new(def, &server.storage)
            .get(None, &name)
            .await
        {
            Ok(o) => o,
            Err(e) => return error_response(&e),
        };
        let (upstream, token) = match self.upstream(&name, &obj.value()).await {
            Ok(u) => u,
            Err(e) => return error_response(&e),
        };
        let mut headers = impersonation_headers(user);
        if let Some(t) = token {
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer {t}")) {
                headers.push((HeaderName::from_static("authorization"), v));
            }
        }
        let query = req.uri().query().map(str::to_string);
        match forward(&upstream, req, &sub_path, query.as_deref(), headers).await {
            Ok(resp) => resp,
            Err(message) => {
                let mut e = ApiError::service_unavailable(format!(
                    "cluster {name:?} is unreachable: {message}"
                ));
                e.retry_after_seconds = Some(1);
                error_response(&e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proxy_paths_cannot_escape_the_member_api() {
        assert!(check_proxy_path("/api/v1/namespaces").is_ok());
        assert!(check_proxy_path("/apis/apps/v1/deployments/").is_ok());
        for bad in [
            "/api/../../etc",
            "/api/%2e%2e/x",
            "/api/v1/%2F/x",
            "/a/./b",
            "/a/%5C..",
            "/a//b",
            "/x/%2E%2E",
        ] {
            assert!(check_proxy_path(bad).is_err(), "{bad} accepted");
        }
    }
}
