//! The REST storage interface: what serves the verbs of one resource. Every served resource
//! has one implementation in the [`Registry`](crate::Registry); the default is the
//! [`GenericStore`] (every verb on the object store, implemented in [`crate::handlers`]).
//! A verb a storage does not implement is not served (405), as kube's storages serve only
//! the verbs they implement; a storage that serves some verbs differently and the rest as
//! the generic store does says so, calling [`GenericStore`] for those.
//!
//! Implementations receive the routed request ([`RequestContext`]: the resource, its
//! parsed [`RequestInfo`](crate::request::RequestInfo), the caller, and the parts of the
//! server the generic store works with) and answer with the response; the encoders in
//! [`crate::handlers`] and [`crate::watch`] are public so another implementation answers in
//! the same wire forms (JSON, Table, watch events).

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::{ApiError, ResourceDef};

use crate::auth::UserInfo;
use crate::context::{RequestContext, StoreContext};
use crate::request::ResourcePath;

fn not_served() -> ApiError {
    ApiError::method_not_allowed("the server does not allow this method on the requested resource")
}

/// The verbs of one resource.
#[async_trait::async_trait]
pub trait RestStorage: Send + Sync + 'static {
    async fn get(&self, _ctx: &RequestContext) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn list(&self, _ctx: &RequestContext) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn watch(&self, _ctx: &RequestContext) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn create(&self, _ctx: &RequestContext, _body: &Bytes) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn update(&self, _ctx: &RequestContext, _body: &Bytes) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn patch(&self, _ctx: &RequestContext, _body: &Bytes) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn delete(&self, _ctx: &RequestContext, _body: &Bytes) -> Result<Response, ApiError> {
        Err(not_served())
    }
    async fn delete_collection(
        &self,
        _ctx: &RequestContext,
        _body: &Bytes,
    ) -> Result<Response, ApiError> {
        Err(not_served())
    }
}

/// The generic object store: every verb served from storage.
#[derive(Debug, Default, Clone, Copy)]
pub struct GenericStore;

/// Serves a subresource the generic verbs do not cover (a `proxy` to another server,
/// `pods/binding`, ...). Gets the request untouched (body unread, so it can stream); its
/// parsed [`RequestInfo`](crate::request::RequestInfo) is in the request's extensions. Like a
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
        _info: &crate::request::RequestInfo,
    ) -> Option<crate::request::RequestInfo> {
        None
    }
}
