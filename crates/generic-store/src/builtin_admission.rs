//! Compiled-in validating admission: checks a server is built with, run on writes in the
//! same place as kube-apiserver's compiled-in validating admission plugins — after the
//! object's own validation (schema, defaults), before the validating webhooks — for every
//! kind the server serves, built-in or custom.
//!
//! The library has none of its own; a server passes its plugins in
//! [`ServerOptions::admission_plugins`](crate::ServerOptions). The host uses this for the
//! checks Karmada's webhook makes on the Karmada control plane (deletion protection, policy
//! validation), so that they hold on the host without a webhook server and not on the
//! simulated members, which are plain Kubernetes clusters.
//!
//! A plugin sees who writes ([`PluginRequest::user`]) and may ask an authorizer about them:
//! checks such as "may this user name that Secret" are admission, not authorization, since
//! they depend on the object written (kube's own `NodeRestriction` and `OwnerReferencesPermissionEnforcement`
//! plugins work the same way). Plugins are therefore async.
//!
//! Plugins run for requests and for the namespace cleanup, which in Kubernetes is the
//! namespace controller deleting through the API (so admission refuses what it refuses for
//! anyone); the server's own bootstrap writes skip them. A plugin answers with the error the
//! client gets, as a Kubernetes `Status` (`403 Forbidden` for a denial, `422 Invalid` with
//! causes for a bad object).

use std::sync::Arc;

pub use flotilla_admission::Operation;
use flotilla_apimachinery::{ApiError, Requester, ResourceDef};
use serde_json::Value;

/// What a plugin sees of one write.
#[derive(Debug, Clone, Copy)]
pub struct PluginRequest<'a> {
    pub operation: Operation,
    /// The resource written (for a subresource write, the resource it belongs to).
    pub def: &'a ResourceDef,
    /// `status`, `scale`, ...; `None` for the object itself.
    pub subresource: Option<&'a str>,
    /// The object as it will be stored (create, update); `None` for a delete.
    pub object: Option<&'a Value>,
    /// The stored object (update, delete); `None` for a create.
    pub old_object: Option<&'a Value>,
    pub dry_run: bool,
    /// Who writes; `None` for the server's own writes (namespace cleanup).
    pub user: Option<Requester<'a>>,
}

impl PluginRequest<'_> {
    /// The object's name, from the new object or else the old one.
    pub fn name(&self) -> &str {
        self.object
            .or(self.old_object)
            .and_then(|o| o.pointer("/metadata/name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// A compiled-in validating admission check. It may only refuse, never change the object.
#[async_trait::async_trait]
pub trait ValidatingPlugin: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &str;

    /// `Ok` admits the write; `Err` refuses it with that error.
    async fn validate(&self, request: &PluginRequest<'_>) -> Result<(), ApiError>;
}

/// The plugins of one server, run in order; the first refusal wins (as kube-apiserver's
/// chain stops at the first plugin that refuses).
pub type Plugins = [Arc<dyn ValidatingPlugin>];

/// Runs `plugins` over `request`.
pub async fn run(plugins: &Plugins, request: &PluginRequest<'_>) -> Result<(), ApiError> {
    for plugin in plugins {
        if let Err(e) = plugin.validate(request).await {
            tracing::debug!(
                plugin = plugin.name(),
                operation = request.operation.as_str(),
                resource = %request.def.plural,
                name = request.name(),
                code = e.code,
                "admission plugin refused the request"
            );
            return Err(e);
        }
    }
    Ok(())
}
