//! Feeds the RBAC authorizer from storage: lists Roles, ClusterRoles, RoleBindings and
//! ClusterRoleBindings before the server serves, then follows their changes with one watch
//! per kind (re-listing when a watch expires), so authorization never reads storage.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use flotilla_rbac::RbacAuthorizer;
use flotilla_storage::{EventType, Storage, StorageError, StoredObject, WatchEvent};
use serde_json::Value;

use crate::informer::{Handler, Informer};
use crate::tasks::Tasks;

/// The pause before listing again after a failed watch.
const RETRY_AFTER: Duration = Duration::from_millis(50);

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

/// Keeps the authorizer in step with one kind.
struct KindSync {
    authz: Arc<RbacAuthorizer>,
    kind: &'static str,
    /// What the authorizer holds of this kind, to drop what a re-list no longer has.
    seen: Seen,
}

impl KindSync {
    fn upsert(&mut self, obj: &StoredObject) {
        if let Err(e) = self.authz.upsert(self.kind, &obj.value()) {
            tracing::warn!(kind = self.kind, key = %obj.key, error = %e, "RBAC object not indexed");
        }
        self.seen.insert(ident(&obj.value()));
    }
}

impl Handler for KindSync {
    async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
        let before = std::mem::take(&mut self.seen);
        for obj in &items {
            self.upsert(obj);
        }
        for (ns, name) in before.difference(&self.seen) {
            self.authz.remove(self.kind, ns.as_deref(), name);
        }
    }

    async fn changed(&mut self, event: WatchEvent) {
        if event.event_type == EventType::Deleted {
            let (ns, name) = ident(&event.object.value());
            self.authz.remove(self.kind, ns.as_deref(), &name);
            self.seen.remove(&(ns, name));
        } else {
            self.upsert(&event.object);
        }
    }
}

/// Loads every RBAC object, then keeps the authorizer in step in the background (one task
/// per kind in `tasks`).
pub async fn start(
    storage: Arc<dyn Storage>,
    authz: Arc<RbacAuthorizer>,
    tasks: &Tasks,
) -> Result<(), StorageError> {
    for (kind, prefix) in KINDS {
        let mut sync = KindSync {
            authz: authz.clone(),
            kind,
            seen: Seen::new(),
        };
        let mut informer = Informer::new(storage.clone(), prefix).with_backoff(RETRY_AFTER);
        informer.list(&mut sync).await?;
        let token = tasks.token();
        tasks.spawn(format!("rbac-sync {kind}"), async move {
            informer.run(sync, token).await;
        });
    }
    Ok(())
}
