//! Feeds the RBAC authorizer from storage: lists Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings before the server serves, then follows their changes with one watch
//! per kind (re-listing when a watch expires), so authorization never reads storage.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use flotilla_rbac::RbacAuthorizer;
use flotilla_storage::{EventType, Revision, Storage, StorageError};
use futures::StreamExt;
use serde_json::Value;

const KINDS: [(&str, &str); 4] = [
    ("Role", "/rbac.authorization.k8s.io/roles/"),
    ("ClusterRole", "/rbac.authorization.k8s.io/clusterroles/"),
    ("RoleBinding", "/rbac.authorization.k8s.io/rolebindings/"),
    (
        "ClusterRoleBinding",
        "/rbac.authorization.k8s.io/clusterrolebindings/",
    ),
];

type Seen = BTreeSet<(Option<String>, String)>;

fn ident(v: &Value) -> (Option<String>, String) {
    let ns = v
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    let name = v
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    (ns, name)
}

async fn relist(
    storage: &Arc<dyn Storage>,
    authz: &RbacAuthorizer,
    kind: &str,
    prefix: &str,
    seen: &mut Seen,
) -> Result<Revision, StorageError> {
    let listed = storage.list(prefix, &Default::default()).await?;
    let mut now = Seen::new();
    for obj in &listed.items {
        if let Err(e) = authz.upsert(kind, &obj.value()) {
            tracing::warn!(kind, key = %obj.key, error = %e, "RBAC object not indexed");
        }
        now.insert(ident(&obj.value()));
    }
    for (ns, name) in seen.difference(&now) {
        authz.remove(kind, ns.as_deref(), name);
    }
    *seen = now;
    Ok(listed.revision)
}

/// Loads every RBAC object, then keeps the authorizer in step in the background.
pub async fn start(
    storage: Arc<dyn Storage>,
    authz: Arc<RbacAuthorizer>,
) -> Result<(), StorageError> {
    for (kind, prefix) in KINDS {
        let mut seen = Seen::new();
        let mut revision = relist(&storage, &authz, kind, prefix, &mut seen).await?;
        let storage = storage.clone();
        let authz = authz.clone();
        tokio::spawn(async move {
            loop {
                match storage.watch(prefix, revision).await {
                    Ok(mut events) => {
                        while let Some(event) = events.next().await {
                            match event {
                                Ok(ev) => {
                                    revision = ev.object.revision;
                                    let id = ident(&ev.object.value());
                                    if ev.event_type == EventType::Deleted {
                                        authz.remove(kind, id.0.as_deref(), &id.1);
                                        seen.remove(&id);
                                    } else {
                                        let _ = authz.upsert(kind, &ev.object.value());
                                        seen.insert(id);
                                    }
                                }
                                Err(_) => break,
                            }
                        }
                    }
                    Err(e) => tracing::debug!(kind, error = %e, "RBAC watch ended; re-listing"),
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                match relist(&storage, &authz, kind, prefix, &mut seen).await {
                    Ok(rev) => revision = rev,
                    Err(StorageError::Closed) => return,
                    Err(e) => tracing::warn!(kind, error = %e, "RBAC re-list failed"),
                }
            }
        });
    }
    Ok(())
}
