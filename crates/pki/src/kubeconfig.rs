//! Kubeconfig files as kubectl, client-go and kube-rs read them: building the ones Flotilla
//! hands out (client certificate or bearer token), writing them privately, and loading any
//! kubeconfig back to resolve one context into a server URL and credentials.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Deserializer, Serialize};
use serde_norway::Value;

use crate::error::{PkiError, Result};
use crate::fsutil;

/// A kubeconfig document (`apiVersion: v1`, `kind: Config`).
///
/// Fields this crate does not interpret (exec plugins, auth providers, extensions...) are kept
/// in the `extra` maps so a load-modify-write cycle does not drop them.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Kubeconfig {
    #[serde(
        rename = "apiVersion",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferences: Option<Value>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub clusters: Vec<NamedCluster>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub users: Vec<NamedUser>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub contexts: Vec<NamedContext>,
    #[serde(
        rename = "current-context",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub current_context: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
    /// Directory relative file references are resolved against (the file's directory when
    /// loaded with [`Kubeconfig::load`]; the working directory otherwise).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct NamedCluster {
    pub name: String,
    #[serde(default)]
    pub cluster: Cluster,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct NamedUser {
    pub name: String,
    #[serde(default)]
    pub user: User,
}

#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct NamedContext {
    pub name: String,
    #[serde(default)]
    pub context: Context,
}

/// `clusters[].cluster`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub struct Cluster {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub insecure_skip_tls_verify: bool,
    /// Path to a PEM file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority: Option<String>,
    /// Base64 of PEM; wins over `certificate_authority`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_authority_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// `users[].user` (client-go calls it AuthInfo).
#[derive(Serialize, Deserialize, Clone, PartialEq, Default)]
#[serde(rename_all = "kebab-case")]
pub struct User {
    /// Path to a PEM file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate: Option<String>,
    /// Base64 of PEM; wins over `client_certificate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_certificate_data: Option<String>,
    /// Path to a PEM file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// Base64 of PEM; wins over `client_key`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key_data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// kubeconfig spells this one in camelCase.
    #[serde(rename = "tokenFile", default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl fmt::Debug for User {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |v: &Option<String>| v.as_ref().map(|_| "[elided]");
        f.debug_struct("User")
            .field("client_certificate", &self.client_certificate)
            .field("client_certificate_data", &self.client_certificate_data)
            .field("client_key", &self.client_key)
            .field("client_key_data", &hidden(&self.client_key_data))
            .field("token", &hidden(&self.token))
            .field("token_file", &self.token_file)
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("extra", &self.extra.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// `contexts[].context`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct Context {
    #[serde(default)]
    pub cluster: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One context with everything needed to connect, file references already read.
#[derive(Clone, PartialEq, Eq)]
pub struct ResolvedContext {
    pub context_name: String,
    pub cluster_name: String,
    /// Empty when the context names no user.
    pub user_name: String,
    pub server: String,
    pub namespace: Option<String>,
    pub tls_server_name: Option<String>,
    pub ca_pem: Option<String>,
    pub insecure_skip_tls_verify: bool,
    pub client_cert_pem: Option<String>,
    pub client_key_pem: Option<String>,
    pub token: Option<String>,
}

impl fmt::Debug for ResolvedContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResolvedContext")
            .field("context_name", &self.context_name)
            .field("cluster_name", &self.cluster_name)
            .field("user_name", &self.user_name)
            .field("server", &self.server)
            .field("namespace", &self.namespace)
            .field("tls_server_name", &self.tls_server_name)
            .field("ca_pem", &self.ca_pem.is_some())
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("client_cert_pem", &self.client_cert_pem.is_some())
            .field("client_key_pem", &self.client_key_pem.is_some())
            .field("token", &self.token.as_ref().map(|_| "[elided]"))
            .finish()
    }
}

impl ResolvedContext {
    /// A rustls client configuration for this context's server and client certificate.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>> {
        let cas: Vec<String> = self.ca_pem.iter().cloned().collect();
        let client_cert = match (&self.client_cert_pem, &self.client_key_pem) {
            (Some(cert), Some(key)) => Some((cert.as_str(), key.as_str())),
            _ => None,
        };
        crate::tls::client_config(&cas, client_cert, self.insecure_skip_tls_verify)
    }
}

impl Kubeconfig {
    /// A kubeconfig with one cluster, one user authenticating with a client certificate, and
    /// one context named `cluster_name` that is the current context.
    pub fn new_client_cert(
        server_url: &str,
        cluster_name: &str,
        user_name: &str,
        ca_pem: &str,
        cert_pem: &str,
        key_pem: &str,
    ) -> Self {
        let user = User {
            client_certificate_data: Some(BASE64.encode(cert_pem)),
            client_key_data: Some(BASE64.encode(key_pem)),
            ..User::default()
        };
        Self::single(server_url, cluster_name, user_name, ca_pem, user)
    }

    /// A kubeconfig with one cluster, one user authenticating with a bearer token, and one
    /// context named `cluster_name` that is the current context.
    pub fn new_token(
        server_url: &str,
        cluster_name: &str,
        user_name: &str,
        ca_pem: &str,
        token: &str,
    ) -> Self {
        let user = User {
            token: Some(token.to_string()),
            ..User::default()
        };
        Self::single(server_url, cluster_name, user_name, ca_pem, user)
    }

    fn single(
        server_url: &str,
        cluster_name: &str,
        user_name: &str,
        ca_pem: &str,
        user: User,
    ) -> Self {
        Self {
            api_version: Some("v1".into()),
            kind: Some("Config".into()),
            preferences: Some(Value::Mapping(Default::default())),
            clusters: vec![NamedCluster {
                name: cluster_name.into(),
                cluster: Cluster {
                    server: Some(server_url.into()),
                    certificate_authority_data: Some(BASE64.encode(ca_pem)),
                    ..Cluster::default()
                },
            }],
            users: vec![NamedUser {
                name: user_name.into(),
                user,
            }],
            contexts: vec![NamedContext {
                name: cluster_name.into(),
                context: Context {
                    cluster: cluster_name.into(),
                    user: user_name.into(),
                    ..Context::default()
                },
            }],
            current_context: Some(cluster_name.into()),
            extra: BTreeMap::new(),
            base_dir: None,
        }
    }

    /// Parses kubeconfig YAML; relative file references resolve against the working directory.
    pub fn from_yaml(yaml: &str) -> Result<Self> {
        serde_norway::from_str(yaml).map_err(|source| PkiError::ParseKubeconfig {
            what: "text".into(),
            source,
        })
    }

    /// The YAML text of this kubeconfig.
    pub fn to_yaml(&self) -> Result<String> {
        serde_norway::to_string(self).map_err(PkiError::SerializeKubeconfig)
    }

    /// Reads and parses a kubeconfig file; relative file references in it resolve against the
    /// file's directory, as kubectl does.
    pub fn load(path: &Path) -> Result<Self> {
        let text = fsutil::read_to_string(path)?;
        let mut config: Self =
            serde_norway::from_str(&text).map_err(|source| PkiError::ParseKubeconfig {
                what: path.display().to_string(),
                source,
            })?;
        config.base_dir = path.parent().map(Path::to_path_buf);
        Ok(config)
    }

    /// Writes the kubeconfig with mode 0600 (it holds credentials), creating parent
    /// directories.
    pub fn write(&self, path: &Path) -> Result<()> {
        fsutil::write_file(path, self.to_yaml()?.as_bytes(), true)
    }

    /// Resolves context `name`, or `current-context` when `None`: the cluster's server and CA,
    /// and the user's credentials, reading `*-data` fields or else the referenced files.
    pub fn context(&self, name: Option<&str>) -> Result<ResolvedContext> {
        let context_name = match name {
            Some(n) => n,
            None => self
                .current_context
                .as_deref()
                .filter(|c| !c.is_empty())
                .ok_or(PkiError::NoCurrentContext)?,
        };
        let context = &self
            .contexts
            .iter()
            .find(|c| c.name == context_name)
            .ok_or_else(|| PkiError::ContextNotFound {
                name: context_name.to_string(),
            })?
            .context;
        let cluster = &self
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .ok_or_else(|| PkiError::ClusterNotFound {
                context: context_name.to_string(),
                name: context.cluster.clone(),
            })?
            .cluster;
        let user = if context.user.is_empty() {
            User::default()
        } else {
            self.users
                .iter()
                .find(|u| u.name == context.user)
                .ok_or_else(|| PkiError::UserNotFound {
                    context: context_name.to_string(),
                    name: context.user.clone(),
                })?
                .user
                .clone()
        };
        let server = cluster
            .server
            .clone()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| PkiError::MissingServer {
                context: context_name.to_string(),
                cluster: context.cluster.clone(),
            })?;
        let field = |kind: &str, name: &str, key: &str| format!("{kind}s[{name}].{kind}.{key}");
        let cluster_field = |key| field("cluster", &context.cluster, key);
        let user_field = |key| field("user", &context.user, key);
        let token = match (&user.token, &user.token_file) {
            (Some(token), _) => Some(token.clone()),
            (None, Some(file)) => Some(
                fsutil::read_to_string(&self.resolve_path(file))?
                    .trim()
                    .to_string(),
            ),
            (None, None) => None,
        };
        Ok(ResolvedContext {
            context_name: context_name.to_string(),
            cluster_name: context.cluster.clone(),
            user_name: context.user.clone(),
            server,
            namespace: context.namespace.clone().filter(|n| !n.is_empty()),
            tls_server_name: cluster.tls_server_name.clone(),
            ca_pem: self.data_or_file(
                &cluster.certificate_authority_data,
                &cluster.certificate_authority,
                &cluster_field("certificate-authority-data"),
            )?,
            insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
            client_cert_pem: self.data_or_file(
                &user.client_certificate_data,
                &user.client_certificate,
                &user_field("client-certificate-data"),
            )?,
            client_key_pem: self.data_or_file(
                &user.client_key_data,
                &user.client_key,
                &user_field("client-key-data"),
            )?,
            token,
        })
    }

    /// Inline base64 data wins over a file reference, as in client-go.
    fn data_or_file(
        &self,
        data: &Option<String>,
        file: &Option<String>,
        field: &str,
    ) -> Result<Option<String>> {
        if let Some(data) = data.as_deref().filter(|d| !d.is_empty()) {
            // Tolerate line-wrapped base64 as some tools write it.
            let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
            let bytes = BASE64
                .decode(compact)
                .map_err(|source| PkiError::DecodeBase64 {
                    field: field.to_string(),
                    source,
                })?;
            let text = String::from_utf8(bytes).map_err(|_| PkiError::NotUtf8 {
                field: field.to_string(),
            })?;
            return Ok(Some(text));
        }
        match file.as_deref().filter(|f| !f.is_empty()) {
            Some(file) => Ok(Some(fsutil::read_to_string(&self.resolve_path(file))?)),
            None => Ok(None),
        }
    }

    fn resolve_path(&self, file: &str) -> PathBuf {
        let path = Path::new(file);
        match &self.base_dir {
            Some(base) if path.is_relative() => base.join(path),
            _ => path.to_path_buf(),
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// kubectl writes `users: null` for an empty list; treat it as empty.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(deserializer)?.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nQ0E=\n-----END CERTIFICATE-----\n";
    const CERT: &str = "-----BEGIN CERTIFICATE-----\nY2VydA==\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\na2V5\n-----END PRIVATE KEY-----\n";

    #[test]
    fn client_cert_kubeconfig_round_trips_through_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/dir/kubeconfig");
        let config = Kubeconfig::new_client_cert(
            "https://127.0.0.1:6443",
            "flotilla",
            "admin",
            CA,
            CERT,
            KEY,
        );
        config.write(&path).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for key in [
            "apiVersion: v1",
            "kind: Config",
            "certificate-authority-data:",
            "client-certificate-data:",
            "client-key-data:",
            "current-context: flotilla",
        ] {
            assert!(text.contains(key), "missing {key:?} in\n{text}");
        }
        let loaded = Kubeconfig::load(&path).unwrap();
        assert_eq!(loaded.base_dir.as_deref(), path.parent());
        let ctx = loaded.context(None).unwrap();
        assert_eq!(ctx.context_name, "flotilla");
        assert_eq!(ctx.cluster_name, "flotilla");
        assert_eq!(ctx.user_name, "admin");
        assert_eq!(ctx.server, "https://127.0.0.1:6443");
        assert_eq!(ctx.ca_pem.as_deref(), Some(CA));
        assert_eq!(ctx.client_cert_pem.as_deref(), Some(CERT));
        assert_eq!(ctx.client_key_pem.as_deref(), Some(KEY));
        assert_eq!(ctx.token, None);
        assert!(!ctx.insecure_skip_tls_verify);
        assert!(!format!("{ctx:?}").contains("PRIVATE"));
    }

    #[test]
    fn token_kubeconfig_round_trips() {
        let config = Kubeconfig::new_token("https://h:1", "member1", "member1-admin", CA, "s3cret");
        let yaml = config.to_yaml().unwrap();
        assert!(yaml.contains("token: s3cret"));
        let ctx = Kubeconfig::from_yaml(&yaml)
            .unwrap()
            .context(Some("member1"))
            .unwrap();
        assert_eq!(ctx.token.as_deref(), Some("s3cret"));
        assert_eq!(ctx.client_cert_pem, None);
        assert_eq!(ctx.client_key_pem, None);
        assert_eq!(ctx.ca_pem.as_deref(), Some(CA));
        assert_eq!(ctx.user_name, "member1-admin");
    }

    #[test]
    fn file_references_resolve_relative_to_the_kubeconfig() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("pki")).unwrap();
        std::fs::write(dir.path().join("pki/ca.crt"), CA).unwrap();
        std::fs::write(dir.path().join("pki/admin.crt"), CERT).unwrap();
        let abs_key = dir.path().join("pki/admin.key");
        std::fs::write(&abs_key, KEY).unwrap();
        std::fs::write(dir.path().join("token"), "tok-from-file\n").unwrap();
        let yaml = format!(
            "apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://example:6443
    certificate-authority: pki/ca.crt
    insecure-skip-tls-verify: true
    tls-server-name: api.internal
users:
- name: u
  user:
    client-certificate: pki/admin.crt
    client-key: {}
    tokenFile: token
    exec:
      command: ignored
contexts:
- name: ctx
  context:
    cluster: c
    user: u
    namespace: team-a
current-context: ctx
",
            abs_key.display()
        );
        let path = dir.path().join("config");
        std::fs::write(&path, &yaml).unwrap();
        let config = Kubeconfig::load(&path).unwrap();
        // Unknown fields survive a round trip.
        assert!(config.to_yaml().unwrap().contains("command: ignored"));
        let ctx = config.context(None).unwrap();
        assert_eq!(ctx.ca_pem.as_deref(), Some(CA));
        assert_eq!(ctx.client_cert_pem.as_deref(), Some(CERT));
        assert_eq!(ctx.client_key_pem.as_deref(), Some(KEY));
        assert_eq!(ctx.token.as_deref(), Some("tok-from-file"));
        assert_eq!(ctx.namespace.as_deref(), Some("team-a"));
        assert_eq!(ctx.tls_server_name.as_deref(), Some("api.internal"));
        assert!(ctx.insecure_skip_tls_verify);

        // A dangling reference names the file.
        std::fs::remove_file(dir.path().join("pki/ca.crt")).unwrap();
        let err = config.context(None).unwrap_err();
        assert!(err.to_string().contains("ca.crt"), "{err}");
    }

    #[test]
    fn inline_data_wins_over_a_file_reference() {
        let mut config = Kubeconfig::new_token("https://h", "c", "u", CA, "t");
        config.clusters[0].cluster.certificate_authority = Some("/does/not/exist".into());
        assert_eq!(config.context(None).unwrap().ca_pem.as_deref(), Some(CA));
    }

    #[test]
    fn missing_context_cluster_or_user_is_a_named_error() {
        let config = Kubeconfig::new_token("https://h", "c", "u", CA, "t");
        let err = config.context(Some("nope")).unwrap_err();
        assert!(matches!(&err, PkiError::ContextNotFound { name } if name == "nope"));
        assert!(err.to_string().contains("\"nope\""), "{err}");

        let mut broken = config.clone();
        broken.users.clear();
        assert!(matches!(
            broken.context(None),
            Err(PkiError::UserNotFound { name, .. }) if name == "u"
        ));
        let mut broken = config.clone();
        broken.clusters[0].name = "other".into();
        assert!(matches!(
            broken.context(None),
            Err(PkiError::ClusterNotFound { name, .. }) if name == "c"
        ));
        let mut broken = config;
        broken.current_context = None;
        assert!(matches!(
            broken.context(None),
            Err(PkiError::NoCurrentContext)
        ));
    }

    #[test]
    fn null_lists_and_bad_base64_are_handled() {
        let config = Kubeconfig::from_yaml(
            "apiVersion: v1\nkind: Config\nclusters: null\nusers: null\ncontexts: null\ncurrent-context: \"\"\n",
        )
        .unwrap();
        assert!(config.clusters.is_empty());
        assert!(matches!(
            config.context(None),
            Err(PkiError::NoCurrentContext)
        ));

        let mut config = Kubeconfig::new_token("https://h", "c", "u", CA, "t");
        config.clusters[0].cluster.certificate_authority_data = Some("!!!".into());
        let err = config.context(None).unwrap_err();
        assert!(matches!(err, PkiError::DecodeBase64 { .. }));
        assert!(
            err.to_string().contains("certificate-authority-data"),
            "{err}"
        );
        assert!(matches!(
            Kubeconfig::from_yaml("clusters: 5"),
            Err(PkiError::ParseKubeconfig { .. })
        ));
    }
}
