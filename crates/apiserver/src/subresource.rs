//! Subresources served by handlers of their own rather than by a REST storage: they take the
//! HTTP request itself (a stream, an upgrade) and answer with a response.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use flotilla_apimachinery::ResourceDef;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::StoreContext;
use flotilla_generic_store::request::ResourcePath;

/// Serves a subresource the generic verbs do not cover (a `proxy` to another server,
/// `pods/binding`, ...). Gets the request untouched (body unread, so it can stream); its
/// parsed [`RequestInfo`](flotilla_generic_store::request::RequestInfo) is in the request's extensions. Like a
/// [`RestStorage`], it gets the server's [`StoreContext`]; what else it needs it holds.
#[async_trait::async_trait]
pub trait SubresourceHandler: Send + Sync {
    async fn handle(
        &self,
        store: &Arc<StoreContext>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Response;

    /// The API request this subresource carries, when it is a proxy of reads this server
    /// answers itself (Karmada's search proxy): the in-flight limits count it as that request
    /// (a read; a watch is exempt) rather than as a proxy, which is exempt however short.
    fn carried_request(
        &self,
        _info: &flotilla_generic_store::request::RequestInfo,
    ) -> Option<flotilla_generic_store::request::RequestInfo> {
        None
    }
}
