//! Authentication: who is calling, in kube-apiserver's order.
//!
//! 1. Front-proxy request headers (`X-Remote-User`, `X-Remote-Group`, `X-Remote-Extra-*`),
//!    believed only from a connection whose client certificate chains to the request-header
//!    CA and whose CN is allowed. Such headers on any other connection are a forgery: 401.
//! 2. A bearer token checked by a [`TokenAuthenticator`] (e.g. a static token file).
//! 3. A client certificate verified against the client CA (CN = user, O = groups).
//!
//! Requests with none of these get 401, except the public health and version endpoints.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use flotilla_apimachinery::ApiError;
use http::HeaderMap;

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(name: &str, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
        }
    }

    /// This user as a kind's create hook sees it.
    pub fn requester(&self) -> flotilla_apimachinery::Requester<'_> {
        flotilla_apimachinery::Requester {
            name: &self.name,
            uid: &self.uid,
            groups: &self.groups,
            extra: &self.extra,
        }
    }
}

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

const REMOTE_USER: &str = "x-remote-user";
const REMOTE_GROUP: &str = "x-remote-group";
const REMOTE_EXTRA: &str = "x-remote-extra-";

/// Resolves the caller from front-proxy headers, a bearer token or the peer certificate.
pub fn authenticate(
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
}

impl TokenAuthenticator for StaticTokens {
    fn authenticate(&self, token: &str) -> Option<UserInfo> {
        self.users.get(token).cloned()
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
        let peer = PeerIdentity::user(UserInfo::new("admin", &["system:masters"]));
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

    #[test]
    fn front_proxy_headers_only_from_the_front_proxy() {
        let mut h = HeaderMap::new();
        h.insert(REMOTE_USER, "carol".parse().unwrap());
        h.append(REMOTE_GROUP, "team-a".parse().unwrap());
        h.append(REMOTE_GROUP, "team-b".parse().unwrap());
        h.insert("x-remote-extra-scopes%2Fread", "yes".parse().unwrap());
        let proxy = PeerIdentity {
            user: None,
            front_proxy: true,
        };
        let u = authenticate(Some(&proxy), &h, None).unwrap();
        assert_eq!(u.name, "carol");
        assert_eq!(u.groups, vec!["team-a", "team-b", "system:authenticated"]);
        assert_eq!(u.extra["scopes/read"], vec!["yes"]);
        // The same headers from an ordinary client certificate are a forgery.
        let admin = PeerIdentity::user(UserInfo::new("admin", &["system:masters"]));
        assert_eq!(authenticate(Some(&admin), &h, None).unwrap_err().code, 401);
        // A front proxy that names nobody is not authenticated.
        assert_eq!(
            authenticate(Some(&proxy), &HeaderMap::new(), None)
                .unwrap_err()
                .code,
            401
        );
    }

    #[test]
    fn token_file_parses_like_kube() {
        let t = StaticTokens::parse("abc,alice,u1,\"dev,ops\"\n\nxyz,bob,u2\n", "t.csv").unwrap();
        let a = t.authenticate("abc").unwrap();
        assert_eq!(
            (a.name.as_str(), a.uid.as_str(), a.groups.clone()),
            ("alice", "u1", vec!["dev".to_string(), "ops".to_string()])
        );
        assert!(t.authenticate("xyz").unwrap().groups.is_empty());
        assert!(t.authenticate("nope").is_none());
        assert!(matches!(
            StaticTokens::parse("only,two\n", "t.csv"),
            Err(TokenFileError::Invalid { line: 1, .. })
        ));
    }
}
