//! Authentication of bound service-account tokens: after [`TokenIssuer::verify`] (signature,
//! issuer, times, audiences), the checks kube's bound-token validator makes against storage —
//! the ServiceAccount still exists with the uid in the token, and so does the object the token
//! is bound to (Secret, Pod or Node); an object whose deletionTimestamp is older than the
//! leeway counts as gone. Lookups are storage GETs (served from memory by the embedded store).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use flotilla_storage::{Storage, StoredObject};
use serde_json::Value;

use super::jwt::{LEEWAY_SECS, ObjectRef, TokenIssuer, VerifiedToken};
use crate::auth::{InvalidToken, TokenAuthenticator, TokenUser};
use crate::registry::Registry;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::objects::object_key;

/// `extra` key holding `JTI=<jti>`.
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";
pub const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
pub const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
pub const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
pub const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
/// Every service account is in this group, and in `system:serviceaccounts:<namespace>`.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// The identity of a service account (with what its token is bound to).
pub fn service_account_user(
    namespace: &str,
    name: &str,
    uid: &str,
    extra: BTreeMap<String, Vec<String>>,
) -> UserInfo {
    UserInfo {
        name: super::jwt::username(namespace, name),
        uid: uid.into(),
        groups: vec![
            ALL_SERVICE_ACCOUNTS_GROUP.into(),
            format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
        ],
        extra,
    }
}

/// Checks bearer tokens issued by a [`TokenIssuer`] against this server's storage.
pub struct ServiceAccountAuthenticator {
    issuer: Arc<TokenIssuer>,
    registry: Arc<Registry>,
    storage: Arc<dyn Storage>,
}

impl ServiceAccountAuthenticator {
    pub fn new(
        issuer: Arc<TokenIssuer>,
        registry: Arc<Registry>,
        storage: Arc<dyn Storage>,
    ) -> Self {
        Self {
            issuer,
            registry,
            storage,
        }
    }

    /// [`TokenAuthenticator::authenticate`] at `now` (unix seconds).
    pub async fn authenticate_at(
        &self,
        token: &str,
        audiences: &[String],
        now: i64,
    ) -> Result<Option<TokenUser>, InvalidToken> {
        let Some(VerifiedToken { claims, audiences }) =
            self.issuer.verify(token, audiences, now)?
        else {
            return self.authenticate_legacy(token, audiences).await;
        };
        let k = &claims.kubernetes;
        let ns = k.namespace.as_str();
        let deleted_before = now - LEEWAY_SECS;
        let sa_ref = &k.serviceaccount;
        let Some(sa) = self
            .lookup("serviceaccounts", Some(ns), &sa_ref.name)
            .await?
        else {
            return Err(InvalidToken(format!(
                "serviceaccounts \"{}\" not found",
                sa_ref.name
            )));
        };
        let sa_uid = uid_of(&sa);
        if sa_uid != sa_ref.uid {
            return Err(InvalidToken(format!(
                "service account UID ({sa_uid}) does not match claim ({})",
                sa_ref.uid
            )));
        }
        if deleted_since(&sa, deleted_before) {
            return Err(InvalidToken(format!(
                "service account {ns}/{} has been deleted",
                sa_ref.name
            )));
        }
        if let Some(secret) = &k.secret {
            self.check_bound("secrets", Some(ns), secret, "secret", deleted_before)
                .await?;
        }
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some(pod) = &k.pod {
            self.check_bound("pods", Some(ns), pod, "pod", deleted_before)
                .await?;
            extra.insert(POD_NAME_KEY.into(), vec![pod.name.clone()]);
            extra.insert(POD_UID_KEY.into(), vec![pod.uid.clone()]);
        }
        if let Some(node) = &k.node {
            // The node of a pod-bound token is informational; a Node-bound token needs it.
            if k.pod.is_none() {
                self.check_bound("nodes", None, node, "node", deleted_before)
                    .await?;
            }
            extra.insert(NODE_NAME_KEY.into(), vec![node.name.clone()]);
            if !node.uid.is_empty() {
                extra.insert(NODE_UID_KEY.into(), vec![node.uid.clone()]);
            }
        }
        if !claims.jti.is_empty() {
            extra.insert(
                CREDENTIAL_ID_KEY.into(),
                vec![format!("JTI={}", claims.jti)],
            );
        }
        Ok(Some(TokenUser {
            user: service_account_user(ns, &sa_ref.name, &sa_ref.uid, extra),
            audiences,
        }))
    }

    /// A legacy Secret-based token: its Secret must still hold exactly this token and name the
    /// same ServiceAccount, which must still exist with the claimed uid. It carries no
    /// audience, so it is accepted for the API audiences only (as kube's legacy validator).
    async fn authenticate_legacy(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, InvalidToken> {
        let Some(c) = self.issuer.verify_legacy(token)? else {
            return Ok(None);
        };
        if !audiences.is_empty()
            && !audiences
                .iter()
                .any(|a| self.issuer.api_audiences().contains(a))
        {
            return Err(InvalidToken(
                "legacy service account tokens are valid for the API audiences only".into(),
            ));
        }
        let ns = c.namespace.as_str();
        let invalidated = || InvalidToken("service account token has been invalidated".into());
        let secret = self
            .lookup("secrets", Some(ns), &c.secret_name)
            .await?
            .ok_or_else(invalidated)?;
        let held = secret
            .value()
            .pointer("/data/token")
            .and_then(Value::as_str)
            .and_then(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok());
        let names_sa = secret
            .value()
            .pointer(&format!(
                "/metadata/annotations/{}",
                SA_NAME_ANNOTATION.replace('/', "~1")
            ))
            .and_then(Value::as_str)
            == Some(c.service_account_name.as_str());
        if held.as_deref() != Some(token.as_bytes())
            || !names_sa
            || secret
                .value()
                .pointer("/metadata/deletionTimestamp")
                .is_some()
        {
            return Err(invalidated());
        }
        let Some(sa) = self
            .lookup("serviceaccounts", Some(ns), &c.service_account_name)
            .await?
        else {
            return Err(InvalidToken(format!(
                "serviceaccounts \"{}\" not found",
                c.service_account_name
            )));
        };
        let sa_uid = uid_of(&sa);
        if sa_uid != c.service_account_uid {
            return Err(InvalidToken(format!(
                "service account UID ({sa_uid}) does not match claim ({})",
                c.service_account_uid
            )));
        }
        let mut extra = BTreeMap::new();
        extra.insert(
            CREDENTIAL_ID_KEY.into(),
            vec![format!("token-secret={}", c.secret_name)],
        );
        Ok(Some(TokenUser {
            user: service_account_user(ns, &c.service_account_name, &sa_uid, extra),
            audiences: self.issuer.api_audiences().to_vec(),
        }))
    }

    /// The bound object must exist with the claimed uid and not have been deleted.
    async fn check_bound(
        &self,
        plural: &str,
        namespace: Option<&str>,
        claimed: &ObjectRef,
        what: &str,
        deleted_before: i64,
    ) -> Result<(), InvalidToken> {
        let invalidated = || InvalidToken("service account token has been invalidated".into());
        let Some(obj) = self.lookup(plural, namespace, &claimed.name).await? else {
            tracing::debug!(plural, name = %claimed.name, "the object a token is bound to is gone");
            return Err(invalidated());
        };
        let uid = uid_of(&obj);
        if uid != claimed.uid {
            return Err(InvalidToken(format!(
                "{what} UID ({uid}) does not match service account {what} ref claim ({})",
                claimed.uid
            )));
        }
        if deleted_since(&obj, deleted_before) {
            return Err(invalidated());
        }
        Ok(())
    }

    /// The core/v1 object `plural` `namespace/name`; `None` when it does not exist or this
    /// server does not serve the kind.
    async fn lookup(
        &self,
        plural: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Arc<StoredObject>>, InvalidToken> {
        let Some(def) = self.registry.get("", "v1", plural) else {
            return Ok(None);
        };
        self.storage
            .get(&object_key(&def, namespace, name))
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, plural, name, "looking up a service-account token's object");
                InvalidToken("token lookup failed".into())
            })
    }
}

#[async_trait::async_trait]
impl TokenAuthenticator for ServiceAccountAuthenticator {
    async fn authenticate(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<Option<TokenUser>, InvalidToken> {
        self.authenticate_at(token, audiences, chrono::Utc::now().timestamp())
            .await
    }
}

/// The annotation naming a token Secret's ServiceAccount.
pub const SA_NAME_ANNOTATION: &str = "kubernetes.io/service-account.name";
/// The annotation a token Secret gets with its ServiceAccount's uid.
pub const SA_UID_ANNOTATION: &str = "kubernetes.io/service-account.uid";
/// The Secret type of legacy tokens.
pub const TOKEN_SECRET_TYPE: &str = "kubernetes.io/service-account-token";

pub(crate) fn uid_of(obj: &StoredObject) -> String {
    obj.value()
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Whether the object's deletionTimestamp is before `before` (unix seconds).
fn deleted_since(obj: &StoredObject, before: i64) -> bool {
    obj.value()
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .is_some_and(|t| t.timestamp() < before)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serviceaccount::jwt::{IssuerOptions, TokenSpec};
    use flotilla_storage::MemoryStorage;
    use serde_json::json;

    const NOW: i64 = 1_700_000_000;

    struct Fixture {
        issuer: Arc<TokenIssuer>,
        registry: Arc<Registry>,
        storage: Arc<dyn Storage>,
        auth: ServiceAccountAuthenticator,
    }

    fn fixture() -> Fixture {
        let registry = Registry::new();
        for def in flotilla_kinds::builtin_resources().into_iter() {
            registry.register(def);
        }
        let registry = Arc::new(registry);
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let issuer = Arc::new(
            TokenIssuer::new(
                &flotilla_pki::ServiceAccountKey::generate().unwrap(),
                IssuerOptions::default(),
            )
            .unwrap(),
        );
        let auth =
            ServiceAccountAuthenticator::new(issuer.clone(), registry.clone(), storage.clone());
        Fixture {
            issuer,
            registry,
            storage,
            auth,
        }
    }

    impl Fixture {
        async fn put(&self, plural: &str, ns: Option<&str>, name: &str, uid: &str) {
            self.put_value(
                plural,
                ns,
                name,
                json!({"metadata": {"name": name, "namespace": ns, "uid": uid}}),
            )
            .await;
        }

        async fn put_value(&self, plural: &str, ns: Option<&str>, name: &str, value: Value) {
            let def = self.registry.get("", "v1", plural).unwrap();
            let key = object_key(&def, ns, name);
            let _ = self.storage.delete(&key, None).await;
            self.storage.create(&key, value).await.unwrap();
        }

        async fn remove(&self, plural: &str, ns: Option<&str>, name: &str) {
            let def = self.registry.get("", "v1", plural).unwrap();
            self.storage
                .delete(&object_key(&def, ns, name), None)
                .await
                .unwrap();
        }

        fn token(&self, tweak: impl FnOnce(&mut TokenSpec)) -> String {
            let mut spec = TokenSpec {
                namespace: "ns1".into(),
                service_account: ObjectRef::new("robot", "sa-uid-1"),
                audiences: self.issuer.api_audiences().to_vec(),
                expiration_seconds: 3600,
                pod: None,
                secret: None,
                node: None,
            };
            tweak(&mut spec);
            self.issuer.sign(&self.issuer.claims(&spec, NOW)).unwrap()
        }

        async fn check(&self, token: &str) -> Result<Option<TokenUser>, InvalidToken> {
            self.auth.authenticate_at(token, &[], NOW + 5).await
        }
    }

    #[tokio::test]
    async fn user_groups_and_extra() {
        let f = fixture();
        f.put("serviceaccounts", Some("ns1"), "robot", "sa-uid-1")
            .await;
        let token = f.token(|_| {});
        let got = f.check(&token).await.unwrap().unwrap();
        assert_eq!(got.user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(got.user.uid, "sa-uid-1");
        assert_eq!(
            got.user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns1"]
        );
        let jti = &got.user.extra[CREDENTIAL_ID_KEY][0];
        assert!(jti.starts_with("JTI=") && jti.len() > 10, "{jti}");
        assert_eq!(got.audiences, f.issuer.api_audiences());
        // Expired a while ago: refused before any lookup matters.
        let late = f.auth.authenticate_at(&token, &[], NOW + 7200).await;
        assert_eq!(
            late,
            Err(InvalidToken("service account token has expired".into()))
        );
    }

    #[tokio::test]
    async fn deleted_or_recreated_service_account() {
        let f = fixture();
        f.put("serviceaccounts", Some("ns1"), "robot", "sa-uid-1")
            .await;
        let token = f.token(|_| {});
        assert!(f.check(&token).await.unwrap().is_some());
        f.remove("serviceaccounts", Some("ns1"), "robot").await;
        let err = f.check(&token).await.unwrap_err();
        assert!(err.0.contains("not found"), "{err}");
        // Same name, new object: the old token names the old uid.
        f.put("serviceaccounts", Some("ns1"), "robot", "sa-uid-2")
            .await;
        let err = f.check(&token).await.unwrap_err();
        assert_eq!(
            err.0,
            "service account UID (sa-uid-2) does not match claim (sa-uid-1)"
        );
    }

    #[tokio::test]
    async fn being_deleted_counts_after_the_leeway() {
        let f = fixture();
        let ts = |secs_ago: i64| {
            chrono::DateTime::from_timestamp(NOW + 5 - secs_ago, 0)
                .unwrap()
                .to_rfc3339()
        };
        f.put("serviceaccounts", Some("ns1"), "robot", "sa-uid-1")
            .await;
        let sa = |ago| json!({"metadata": {"name": "robot", "namespace": "ns1", "uid": "sa-uid-1", "deletionTimestamp": ts(ago), "finalizers": ["x"]}});
        let token = f.token(|_| {});
        f.put_value("serviceaccounts", Some("ns1"), "robot", sa(10))
            .await;
        assert!(f.check(&token).await.unwrap().is_some());
        f.put_value("serviceaccounts", Some("ns1"), "robot", sa(LEEWAY_SECS + 1))
            .await;
        let err = f.check(&token).await.unwrap_err();
        assert!(err.0.contains("has been deleted"), "{err}");
    }

    #[tokio::test]
    async fn bound_secret_deleted_or_recreated() {
        let f = fixture();
        f.put("serviceaccounts", Some("ns1"), "robot", "sa-uid-1")
            .await;
        f.put("secrets", Some("ns1"), "s1", "secret-uid-1").await;
        let token = f.token(|s| s.secret = Some(ObjectRef::new("s1", "secret-uid-1")));
        let got = f.check(&token).await.unwrap().unwrap();
        assert!(!got.user.extra.contains_key(POD_NAME_KEY));
        f.put("secrets", Some("ns1"), "s1", "secret-uid-2").await;
        let err = f.check(&token).await.unwrap_err();
        assert!(err.0.contains("secret UID (secret-uid-2)"), "{err}");
        f.remove("secrets", Some("ns1"), "s1").await;
        assert_eq!(
            f.check(&token).await,
            Err(InvalidToken(
                "service account token has been invalidated".into()
            ))
        );
    }

    #[tokio::test]
    async fn bound_pod_and_node() {
        let f = fixture();
        f.put("serviceaccounts", Some("ns1"), "robot", "sa-uid-1")
            .await;
        f.put("pods", Some("ns1"), "p1", "pod-uid-1").await;
        f.put("nodes", None, "n1", "node-uid-1").await;
        // Pod-bound with its node: the node is reported, not checked.
        let pod_token = f.token(|s| {
            s.pod = Some(ObjectRef::new("p1", "pod-uid-1"));
            s.node = Some(ObjectRef::new("gone-node", ""));
        });
        let got = f.check(&pod_token).await.unwrap().unwrap();
        assert_eq!(got.user.extra[POD_NAME_KEY], ["p1"]);
        assert_eq!(got.user.extra[POD_UID_KEY], ["pod-uid-1"]);
        assert_eq!(got.user.extra[NODE_NAME_KEY], ["gone-node"]);
        assert!(!got.user.extra.contains_key(NODE_UID_KEY));
        // Node-bound: the node must exist.
        let node_token = f.token(|s| s.node = Some(ObjectRef::new("n1", "node-uid-1")));
        let got = f.check(&node_token).await.unwrap().unwrap();
        assert_eq!(got.user.extra[NODE_UID_KEY], ["node-uid-1"]);
        f.remove("nodes", None, "n1").await;
        assert!(f.check(&node_token).await.is_err());
        f.remove("pods", Some("ns1"), "p1").await;
        assert!(f.check(&pod_token).await.is_err());
    }

    #[tokio::test]
    async fn another_issuers_token_is_left_to_others() {
        let f = fixture();
        assert_eq!(f.check("static-token").await, Ok(None));
    }
}
