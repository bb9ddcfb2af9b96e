//! Authentication: who is calling. A verified client certificate (CN = user, O = groups) set
//! by the TLS accept loop, or a bearer token checked by a [`TokenAuthenticator`]. Requests
//! with neither get 401, except the public health and version endpoints.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_apimachinery::ApiError;
use http::HeaderMap;

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(name: &str, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
        }
    }
}

/// The identity from the connection's verified client certificate, if any; put into every
/// request's extensions by the accept loop.
#[derive(Debug, Clone, Default)]
pub struct PeerIdentity(pub Option<UserInfo>);

/// Checks bearer tokens.
pub trait TokenAuthenticator: Send + Sync {
    fn authenticate(&self, token: &str) -> Option<UserInfo>;
}

/// Paths anyone may read without credentials (kube-apiserver grants these to
/// `system:public-info-viewer`).
pub fn is_public_path(path: &str) -> bool {
    matches!(path, "/version" | "/healthz" | "/livez" | "/readyz")
        || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

/// Resolves the caller from the peer certificate or the Authorization header.
pub fn authenticate(
    peer: Option<&PeerIdentity>,
    headers: &HeaderMap,
    tokens: Option<&Arc<dyn TokenAuthenticator>>,
) -> Result<UserInfo, ApiError> {
    if let Some(auth) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        if let Some(token) = auth.strip_prefix("Bearer ").map(str::trim) {
            let user = tokens.and_then(|t| t.authenticate(token));
            return match user {
                Some(mut u) => {
                    add_authenticated(&mut u);
                    Ok(u)
                }
                None => Err(ApiError::unauthorized("Unauthorized")),
            };
        }
    }
    if let Some(PeerIdentity(Some(user))) = peer {
        let mut u = user.clone();
        add_authenticated(&mut u);
        return Ok(u);
    }
    Err(ApiError::unauthorized("Unauthorized"))
}

fn add_authenticated(u: &mut UserInfo) {
    if !u.groups.iter().any(|g| g == "system:authenticated") {
        u.groups.push("system:authenticated".into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct OneToken;
    impl TokenAuthenticator for OneToken {
        fn authenticate(&self, token: &str) -> Option<UserInfo> {
            (token == "good").then(|| UserInfo::new("alice", &["dev"]))
        }
    }

    #[test]
    fn certificate_token_and_anonymous() {
        let peer = PeerIdentity(Some(UserInfo::new("admin", &["system:masters"])));
        let u = authenticate(Some(&peer), &HeaderMap::new(), None).unwrap();
        assert_eq!(u.name, "admin");
        assert!(u.groups.contains(&"system:authenticated".to_string()));
        assert_eq!(
            authenticate(None, &HeaderMap::new(), None)
                .unwrap_err()
                .code,
            401
        );
        let tokens: Arc<dyn TokenAuthenticator> = Arc::new(OneToken);
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, "Bearer good".parse().unwrap());
        assert_eq!(authenticate(None, &h, Some(&tokens)).unwrap().name, "alice");
        h.insert(http::header::AUTHORIZATION, "Bearer bad".parse().unwrap());
        assert_eq!(
            authenticate(Some(&peer), &h, Some(&tokens))
                .unwrap_err()
                .code,
            401
        );
    }
}
