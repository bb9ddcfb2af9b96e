//! The legacy ServiceAccount token controller, as kube-controller-manager's tokens controller
//! fills Secrets: a Secret of type `kubernetes.io/service-account-token` annotated with
//! `kubernetes.io/service-account.name` gets, once that ServiceAccount exists, the annotation
//! `kubernetes.io/service-account.uid` and `data.token` (a non-expiring token signed with the
//! service-account key), `data.ca.crt` (the cluster CA) and `data.namespace`. A Secret whose
//! token was made for another ServiceAccount uid (the account was recreated) gets a new one.
//! The host's authenticator accepts such a token only while its Secret holds it.
//!
//! It runs in the host process for the reason the CSR signer does: the signing key is there.
//!
//! ```text
//!  storage watch (secrets, serviceaccounts) -> decide (pure) -> fill the Secret (update)
//! ```

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::ApiServer;
use flotilla_apiserver::informer::{Handler, Informer};
use flotilla_apiserver::serviceaccount::{
    LegacyClaims, SA_NAME_ANNOTATION, SA_UID_ANNOTATION, TOKEN_SECRET_TYPE, TokenIssuer,
};
use flotilla_generic_store::objects::{Objects, WriteOptions, collection_prefix};
use flotilla_generic_store::request::FieldValidation;
use flotilla_storage::{EventType, StoredObject, WatchEvent};
use serde_json::{Value, json};

const FIELD_MANAGER: &str = "flotilla-token-controller";
const RETRY_AFTER: Duration = Duration::from_secs(2);

/// What to do with one Secret, given its ServiceAccount's uid (when it exists).
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Not a token Secret, or already filled for this ServiceAccount.
    Skip,
    /// Fill it for the ServiceAccount `name` with uid `uid`.
    Fill { name: String, uid: String },
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(key))
        .and_then(Value::as_str)
}

/// The pure rule: `sa_uid` is the uid of the ServiceAccount the Secret names, if it exists.
pub fn decide(secret: &Value, sa_uid: Option<&str>) -> Decision {
    if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE)
        || secret.pointer("/metadata/deletionTimestamp").is_some()
    {
        return Decision::Skip;
    }
    let (Some(name), Some(uid)) = (annotation(secret, SA_NAME_ANNOTATION), sa_uid) else {
        return Decision::Skip;
    };
    let filled = secret.pointer("/data/token").is_some_and(|t| t.is_string())
        && annotation(secret, SA_UID_ANNOTATION) == Some(uid);
    if filled {
        Decision::Skip
    } else {
        Decision::Fill {
            name: name.to_string(),
            uid: uid.to_string(),
        }
    }
}

/// Starts the controller in the server's background tasks (it stops with them); false when
/// the server serves no Secrets or ServiceAccounts.
pub fn start(server: Arc<ApiServer>, issuer: Arc<TokenIssuer>, ca_pem: String) -> bool {
    let (Some(secrets), Some(accounts)) = (
        server.registry.get("", "v1", "secrets"),
        server.registry.get("", "v1", "serviceaccounts"),
    ) else {
        return false;
    };
    let storage = server.storage.clone();
    let tasks = server.tasks.clone();
    let secret_informer =
        Informer::new(storage.clone(), collection_prefix(&secrets, None)).with_backoff(RETRY_AFTER);
    let account_informer =
        Informer::new(storage, collection_prefix(&accounts, None)).with_backoff(RETRY_AFTER);
    let controller = Arc::new(Controller {
        server,
        secrets,
        accounts,
        issuer,
        ca_pem,
    });
    let secrets = SecretSync {
        controller: controller.clone(),
        failed: false,
    };
    let accounts = AccountSync {
        controller,
        first: true,
        failed: false,
    };
    let token = tasks.token();
    let started = tasks.spawn("token-controller secrets", async move {
        secret_informer.run(secrets, token).await;
    });
    let token = tasks.token();
    started
        && tasks.spawn("token-controller serviceaccounts", async move {
            account_informer.run(accounts, token).await;
        })
}

struct Controller {
    server: Arc<ApiServer>,
    secrets: Arc<ResourceDef>,
    accounts: Arc<ResourceDef>,
    issuer: Arc<TokenIssuer>,
    ca_pem: String,
}

/// Handles every Secret and each change; when a write failed, lists again after
/// [`RETRY_AFTER`].
struct SecretSync {
    controller: Arc<Controller>,
    failed: bool,
}

impl Handler for SecretSync {
    async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
        self.failed = false;
        for obj in &items {
            self.failed |= !self.controller.handle_logged(&obj.value()).await;
        }
    }

    async fn changed(&mut self, event: WatchEvent) {
        if event.event_type != EventType::Deleted {
            self.failed |= !self.controller.handle_logged(&event.object.value()).await;
        }
    }

    fn relist_after(&self) -> Option<Duration> {
        self.failed.then_some(RETRY_AFTER)
    }
}

/// A new (or changed) ServiceAccount may complete the Secrets of its namespace that named it
/// first.
struct AccountSync {
    controller: Arc<Controller>,
    /// The first list: the Secrets' own first list covers every Secret already.
    first: bool,
    failed: bool,
}

impl Handler for AccountSync {
    async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
        if std::mem::take(&mut self.first) {
            return;
        }
        // Events may have been missed: every namespace with an account again.
        let namespaces: BTreeSet<String> = items
            .iter()
            .map(|o| namespace_of(&o.value()).to_string())
            .collect();
        self.failed = false;
        for ns in namespaces {
            self.failed |= !self.controller.handle_namespace(&ns).await;
        }
    }

    async fn changed(&mut self, event: WatchEvent) {
        if event.event_type != EventType::Deleted {
            let ns = namespace_of(&event.object.value()).to_string();
            self.failed |= !self.controller.handle_namespace(&ns).await;
        }
    }

    fn relist_after(&self) -> Option<Duration> {
        self.failed.then_some(RETRY_AFTER)
    }
}

fn namespace_of(obj: &Value) -> &str {
    obj.pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl Controller {
    /// Every Secret of `namespace`; false when a write failed.
    async fn handle_namespace(&self, namespace: &str) -> bool {
        let prefix = collection_prefix(&self.secrets, Some(namespace));
        let Ok(listed) = self.server.storage.list(&prefix, &Default::default()).await else {
            return false;
        };
        let mut ok = true;
        for obj in &listed.items {
            ok &= self.handle_logged(&obj.value()).await;
        }
        ok
    }

    /// False when the Secret should be looked at again.
    async fn handle_logged(&self, secret: &Value) -> bool {
        match self.handle(secret).await {
            Ok(()) => true,
            Err(message) => {
                tracing::warn!(secret = ?secret.pointer("/metadata/name"), %message, "token controller: will retry");
                false
            }
        }
    }

    async fn handle(&self, secret: &Value) -> Result<(), String> {
        if secret.get("type").and_then(Value::as_str) != Some(TOKEN_SECRET_TYPE) {
            return Ok(());
        }
        let ns = secret
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = secret
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let sa_uid = match annotation(secret, SA_NAME_ANNOTATION) {
            Some(sa) => match Objects::new(&self.accounts, &self.server.storage)
                .get(Some(ns), sa)
                .await
            {
                Ok(obj) => obj
                    .value()
                    .pointer("/metadata/uid")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                Err(e) if e.code == 404 => None,
                Err(e) => return Err(e.message),
            },
            None => None,
        };
        let Decision::Fill { name: sa_name, uid } = decide(secret, sa_uid.as_deref()) else {
            return Ok(());
        };
        let token = self
            .issuer
            .sign_legacy(&LegacyClaims::new(ns, &sa_name, &uid, name))
            .map_err(|e| e.to_string())?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let mut updated = secret.clone();
        updated["metadata"]["annotations"][SA_UID_ANNOTATION] = json!(uid);
        if !updated.get("data").is_some_and(Value::is_object) {
            updated["data"] = json!({});
        }
        updated["data"]["token"] = json!(b64(&token));
        updated["data"]["ca.crt"] = json!(b64(&self.ca_pem));
        updated["data"]["namespace"] = json!(b64(ns));
        let opts = WriteOptions {
            field_manager: FIELD_MANAGER.into(),
            field_validation: FieldValidation::Strict,
            dry_run: false,
        };
        match Objects::new(&self.secrets, &self.server.storage)
            .update(Some(ns), name, updated, None, &opts)
            .await
        {
            Ok(_) => {
                tracing::info!(namespace = ns, secret = name, service_account = %sa_name, "token controller: filled a token Secret");
                Ok(())
            }
            // Changed or deleted meanwhile: the watch brings the newer version.
            Err(e) if e.code == 409 || e.code == 404 => Ok(()),
            Err(e) => Err(e.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(extra: Value) -> Value {
        let mut s = json!({
            "type": TOKEN_SECRET_TYPE,
            "metadata": {"name": "robot-token", "namespace": "ns",
                         "annotations": {SA_NAME_ANNOTATION: "robot"}},
        });
        if let (Some(m), Some(e)) = (s.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                m.insert(k.clone(), v.clone());
            }
        }
        s
    }

    #[test]
    fn fills_token_secrets_of_existing_accounts_once_per_uid() {
        let fill = Decision::Fill {
            name: "robot".into(),
            uid: "u1".into(),
        };
        assert_eq!(decide(&secret(json!({})), Some("u1")), fill);
        // The account does not exist (yet): wait.
        assert_eq!(decide(&secret(json!({})), None), Decision::Skip);
        // Other Secret types are not ours.
        assert_eq!(
            decide(&secret(json!({"type": "Opaque"})), Some("u1")),
            Decision::Skip
        );
        // Filled for this uid: done; for an older uid (account recreated): again.
        let mut filled = secret(json!({"data": {"token": "dG9r"}}));
        filled["metadata"]["annotations"][SA_UID_ANNOTATION] = json!("u1");
        assert_eq!(decide(&filled, Some("u1")), Decision::Skip);
        assert_eq!(
            decide(&filled, Some("u2")),
            Decision::Fill {
                name: "robot".into(),
                uid: "u2".into()
            }
        );
        // Being deleted: left alone.
        let mut going = secret(json!({}));
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(decide(&going, Some("u1")), Decision::Skip);
    }
}
