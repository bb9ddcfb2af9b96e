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

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_apiserver::proxy::{forward, impersonation_headers};
use flotilla_apiserver::response::error_response;
use flotilla_apiserver::subresource::SubresourceHandler;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::StoreContext;
use flotilla_generic_store::request::ResourcePath;
use http::{HeaderName, HeaderValue};

use crate::members::MemberConnections;

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

/// The proxy handler: forwards through the member's shared connection.
pub struct ClusterProxy {
    members: Arc<MemberConnections>,
}

impl ClusterProxy {
    pub fn new(members: Arc<MemberConnections>) -> Self {
        Self { members }
    }
}

#[async_trait::async_trait]
impl SubresourceHandler for ClusterProxy {
    async fn handle(
        &self,
        store: &Arc<StoreContext>,
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
        let obj = match flotilla_generic_store::objects::Objects::new(def, &store.storage)
            .get(None, &name)
            .await
        {
            Ok(o) => o,
            Err(e) => return error_response(&e),
        };
        let (upstream, token) = match self.members.upstream(&name, &obj.value()).await {
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
