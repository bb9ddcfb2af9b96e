//! Authentication: who is calling, in kube-apiserver's order.
//!
//! 1. Front-proxy request headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`),
//!    believed only from a connection whose client certificate chains to the request-header
//!    CA and whose CN is allowed. Such headers on any other connection are a forgery: 401.
//! 2. A bearer token checked by a [`TokenAuthenticator`] (a static token file, service-account
//!    tokens, or several of them tried in turn by [`TokenAuthenticators`]).
//! 3. A client certificate verified against the client CA (CN = user, O = groups).
//!
//! Requests with none of these get 401, except the public health and version endpoints.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use flotilla_apimachinery::ApiError;
use flotilla_generic_store::UserInfo;
use http::HeaderMap;

/// What the TLS layer established about the peer of one connection.
#[derive(Debug, Clone, Default)]
pub struct PeerIdentity {
    /// The identity of a client certificate that verified against the client CA.
    pub user: Option<UserInfo>,
    /// The client certificate verified against the request-header CA with an allowed CN, so
    /// `X-Remote-*` headers on this connection are trusted.
    pub front_proxy: bool,
}

impl PeerIdentity {
    pub fn user(user: UserInfo) -> Self {
        Self {
            user: Some(user),
            front_proxy: false,
        }
    }
}

/// Who a bearer token names, and which of the asked-for audiences it is good for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUser {
    pub user: UserInfo,
    /// The audiences the token was accepted for (empty from audience-agnostic authenticators
    /// asked for none).
    pub audiences: Vec<String>,
}

/// A token an authenticator recognised as its kind but refused (bad signature, expired,
/// wrong audience, revoked). The text is what a TokenReview reports as `status.error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidToken(pub String);

/// Checks bearer tokens.
#[async_trait::async_trait]
pub trait TokenAuthenticator: Send + Sync {
    /// `Ok(None)`: not a token this authenticator knows (another may). `audiences`: what the
    /// token must be good for; empty means the server's own API audiences (a request to it).
    async fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, InvalidToken>;
}

/// Several token authenticators tried in order, as kube-apiserver's union authenticator: the
/// first that accepts wins; refusals count only when none accepts.
pub struct TokenAuthenticators {
    authenticators: Vec<Arc<dyn TokenAuthenticator>>,
}

impl TokenAuthenticators {
    pub fn new(authenticators: Vec<Arc<dyn TokenAuthenticator>>) -> Self {
        Self { authenticators }
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenAuthenticators {
    async fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, InvalidToken> {
        let mut refusals = Vec::new();
        for a in &self.authenticators {
            match a.authenticate(token, audiences).await {
                Ok(Some(user)) => return Ok(Some(user)),
                Ok(None) => {}
                Err(e) => refusals.push(e.0),
            }
        }
        match refusals.len() {
            0 => Ok(None),
            1 => Err(InvalidToken(refusals.remove(0))),
            _ => Err(InvalidToken(format!("[{}]", refusals.join(", ")))),
        }
    }
}

/// Paths anyone may read without credentials (kube-apiserver grants these to
/// `system:public-info-viewer`).
pub fn is_public_path(path: &str) -> bool {
    matches!(path, "/version" | "/healthz" | "/livez" | "/readyz")
        || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

const REMOTE_USER: &str = "x-remote-user";
const REMOTE_GROUP: &str = "x-remote-group";
const REMOTE_EXTRA: &str = "x-remote-extra-";

/// Resolves the caller from front-proxy headers, a bearer token or the peer certificate.
pub async fn authenticate(
    peer: Option<&PeerIdentity>,
    headers: &HeaderMap,
    tokens: Option<&Arc<dyn TokenAuthenticator>>,
) -> Result<UserInfo, ApiError> {
    let front_proxy = peer.is_some_and(|p| p.front_proxy);
    if front_proxy {
        let Some(name) = headers
            .get(REMOTE_USER)
            .and_then(|v| v.to_str().ok())
            .filter(|s| !s.is_empty())
        else {
            return Err(ApiError::unauthorized(
                "Unauthorized: front-proxy request without X-Remote-User",
            ));
        };
        let groups = headers
            .get_all(REMOTE_GROUP)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_string)
            .collect::<Vec<_>>();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in headers.iter() {
            if let Some(key) = k.as_str().strip_prefix(REMOTE_EXTRA) {
                let key: String = form_urlencoded::parse(format!("k={key}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned())
                    .unwrap_or_else(|| key.to_string());
                if let Ok(val) = v.to_str() {
                    extra
                        .entry(key.to_lowercase())
                        .or_default()
                        .push(val.to_string());
                }
            }
        }
        let mut user = UserInfo {
            name: name.to_string(),
            uid: String::new(),
            groups,
            extra,
        };
        add_authenticated(&mut user);
        return Ok(user);
    }
    if headers.contains_key(REMOTE_USER) {
        return Err(ApiError::unauthorized(
            "Unauthorized: X-Remote-User is only accepted from an authenticating front proxy",
        ));
    }
    if let Some(auth) = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        if let Some(token) = auth.strip_prefix("Bearer ").map(str::trim) {
            let verdict = match tokens {
                Some(t) => t.authenticate(token, &[]).await,
                None => Ok(None),
            };
            return match verdict {
                Ok(Some(TokenUser { mut user, .. })) => {
                    add_authenticated(&mut user);
                    Ok(user)
                }
                Ok(None) => Err(ApiError::unauthorized("Unauthorized")),
                Err(e) => {
                    tracing::debug!(error = %e, "bearer token refused");
                    Err(ApiError::unauthorized("Unauthorized"))
                }
            };
        }
    }
    if let Some(PeerIdentity {
        user: Some(user), ..
    }) = peer
    {
        let mut u = user.clone();
        add_authenticated(&mut u);
        return Ok(u);
    }
    Err(ApiError::unauthorized("Unauthorized"))
}

pub fn add_authenticated(u: &mut UserInfo) {
    if u.name != "system:anonymous" && !u.groups.iter().any(|g| g == "system:authenticated") {
        u.groups.push("system:authenticated".into());
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    #[error("reading the token file {path}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("token file {path}, line {line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
}

/// Static bearer tokens from a CSV file like kube-apiserver's `--token-auth-file`:
/// `token,user,uid,"group1,group2"` (groups optional).
#[derive(Debug, Default)]
pub struct StaticTokens {
    users: HashMap<String, UserInfo>,
}

impl StaticTokens {
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, origin: &str) -> Result<Self, TokenFileError> {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(text.as_bytes());
        let mut users = HashMap::new();
        for (i, record) in reader.records().enumerate() {
            let invalid = |message: String| TokenFileError::Invalid {
                path: origin.to_string(),
                line: i + 1,
                message,
            };
            let record = record.map_err(|e| invalid(e.to_string()))?;
            if record.len() == 1 && record.get(0).is_some_and(|f| f.trim().is_empty()) {
                continue;
            }
            if record.len() < 3 {
                return Err(invalid(
                    "expected token,user,uid[,\"group1,group2\"]".into(),
                ));
            }
            let token = record.get(0).unwrap_or_default().trim();
            let name = record.get(1).unwrap_or_default().trim();
            if token.is_empty() || name.is_empty() {
                return Err(invalid("token and user must not be empty".into()));
            }
            let groups: Vec<String> = record
                .get(3)
                .map(|g| {
                    g.split(',')
                        .map(str::trim)
                        .filter(|g| !g.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            users.insert(
                token.to_string(),
                UserInfo {
                    name: name.into(),
                    uid: record.get(2).unwrap_or_default().trim().into(),
                    groups,
                    extra: BTreeMap::new(),
                },
            );
        }
        Ok(Self { users })
    }

    /// The user a token names.
    pub fn get(&self, token: &str) -> Option<&UserInfo> {
        self.users.get(token)
    }
}

/// Static tokens are audience-agnostic: good for whatever audiences are asked.
#[async_trait::async_trait]
impl TokenAuthenticator for StaticTokens {
    async fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, InvalidToken> {
        Ok(self.get(token).map(|user| TokenUser {
            user: user.clone(),
            audiences: audiences.to_vec(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Knows "good" (alice) and refuses "revoked"; anything else is not its kind.
    struct OneToken;
    #[async_trait::async_trait]
    impl TokenAuthenticator for OneToken {
        async fn authenticate(
            &self,
            token: &str,
            _audiences: &[String],
        ) -> Result<Option<TokenUser>, InvalidToken> {
            match token {
                "good" => Ok(Some(TokenUser {
                    user: UserInfo::new("alice", &["dev"]),
                    audiences: Vec::new(),
                })),
                "revoked" => Err(InvalidToken("revoked".into())),
                _ => Ok(None),
            }
        }
    }

    #[tokio::test]
    async fn certificate_token_and_anonymous() {
        let peer = PeerIdentity::user(UserInfo::new("admin", &["system:masters"]));
        let u = authenticate(Some(&peer), &HeaderMap::new(), None)
            .await
            .unwrap();
        assert_eq!(u.name, "admin");
        assert!(u.groups.contains(&"system:authenticated".to_string()));
        assert_eq!(
            authenticate(None, &HeaderMap::new(), None)
                .await
                .unwrap_err()
                .code,
            401
        );
        let tokens: Arc<dyn TokenAuthenticator> = Arc::new(OneToken);
        let mut h = HeaderMap::new();
        h.insert(http::header::AUTHORIZATION, "Bearer good".parse().unwrap());
        assert_eq!(
            authenticate(None, &h, Some(&tokens)).await.unwrap().name,
            "alice"
        );
        for bad in ["Bearer bad", "Bearer revoked"] {
            h.insert(http::header::AUTHORIZATION, bad.parse().unwrap());
            assert_eq!(
                authenticate(Some(&peer), &h, Some(&tokens))
                    .await
                    .unwrap_err()
                    .code,
                401,
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn union_takes_the_first_acceptance_and_reports_refusals() {
        let file = StaticTokens::parse("static,bob,u9\n", "t.csv").unwrap();
        let union = TokenAuthenticators::new(vec![Arc::new(OneToken), Arc::new(file)]);
        let auds = vec!["vault".to_string()];
        let bob = union.authenticate("static", &auds).await.unwrap().unwrap();
        assert_eq!((bob.user.name.as_str(), bob.audiences), ("bob", auds));
        let alice = union.authenticate("good", &[]).await.unwrap().unwrap();
        assert_eq!(alice.user.name, "alice");
        assert_eq!(union.authenticate("nobody", &[]).await, Ok(None));
        assert_eq!(
            union.authenticate("revoked", &[]).await,
            Err(InvalidToken("revoked".into()))
        );
    }

    #[tokio::test]
    async fn front_proxy_headers_only_from_the_front_proxy() {
        let mut h = HeaderMap::new();
        h.insert(REMOTE_USER, "carol".parse().unwrap());
        h.append(REMOTE_GROUP, "team-a".parse().unwrap());
        h.append(REMOTE_GROUP, "team-b".parse().unwrap());
        h.insert("x-remote-extra-scopes%2Fread", "yes".parse().unwrap());
        let proxy = PeerIdentity {
            user: None,
            front_proxy: true,
        };
        let u = authenticate(Some(&proxy), &h, None).await.unwrap();
        assert_eq!(u.name, "carol");
        assert_eq!(u.groups, vec!["team-a", "team-b", "system:authenticated"]);
        assert_eq!(u.extra["scopes/read"], vec!["yes"]);
        // The same headers from an ordinary client certificate are a forgery.
        let admin = PeerIdentity::user(UserInfo::new("admin", &["system:masters"]));
        assert_eq!(
            authenticate(Some(&admin), &h, None).await.unwrap_err().code,
            401
        );
        // A front proxy that names nobody is not authenticated.
        assert_eq!(
            authenticate(Some(&proxy), &HeaderMap::new(), None)
                .await
                .unwrap_err()
                .code,
            401
        );
    }

    #[test]
    fn token_file_parses_like_kube() {
        let t = StaticTokens::parse("abc,alice,u1,\"dev,ops\"\n\nxyz,bob,u2\n", "t.csv").unwrap();
        let a = t.get("abc").unwrap();
        assert_eq!(
            (a.name.as_str(), a.uid.as_str(), a.groups.clone()),
            ("alice", "u1", vec!["dev".to_string(), "ops".to_string()])
        );
        assert!(t.get("xyz").unwrap().groups.is_empty());
        assert!(t.get("nope").is_none());
        assert!(matches!(
            StaticTokens::parse("only,two\n", "t.csv"),
            Err(TokenFileError::Invalid { line: 1, .. })
        ));
    }
}
