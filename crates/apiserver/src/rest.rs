//! The REST storage interface: what serves the verbs of one resource. Every served resource
//! has one implementation in the [`Registry`](crate::Registry); the default is the
//! [`GenericStore`] (every verb on the object store, [`crate::handlers`]). Another
//! implementation overrides what it serves differently and keeps the rest: a merged read
//! serves `get`/`list`/`watch` from every member cluster while `create`/`update`/`patch`/
//! `delete` still go to the store (the trait's provided methods are the generic store's).
//!
//! Implementations receive the routed request ([`RequestContext`]: the resource, its
//! parsed [`RequestInfo`](crate::request::RequestInfo), the caller) and answer with the
//! response; the encoders in [`crate::handlers`] and [`crate::watch`] are public so another
//! implementation answers in the same wire forms (JSON, Table, watch events).

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::{ApiError, ResourceDef};

use crate::auth::UserInfo;
use crate::handlers::{self, RequestContext};
use crate::request::ResourcePath;
use crate::server::ApiServer;

/// The verbs of one resource.
#[async_trait::async_trait]
pub trait RestStorage: Send + Sync + 'static {
    async fn get(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        handlers::get(ctx).await
    }
    async fn list(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        handlers::list(ctx).await
    }
    async fn watch(&self, ctx: &RequestContext) -> Result<Response, ApiError> {
        crate::watch::watch(ctx).await
    }
    async fn create(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        handlers::create(ctx, body).await
    }
    async fn update(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        handlers::update(ctx, body).await
    }
    async fn patch(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        handlers::patch(ctx, body).await
    }
    async fn delete(&self, ctx: &RequestContext, body: &Bytes) -> Result<Response, ApiError> {
        handlers::delete(ctx, body).await
    }
    async fn delete_collection(
        &self,
        ctx: &RequestContext,
        body: &Bytes,
    ) -> Result<Response, ApiError> {
        handlers::delete_collection(ctx, body).await
    }
}

/// The generic object store: every verb served from storage.
#[derive(Debug, Default, Clone, Copy)]
pub struct GenericStore;

impl RestStorage for GenericStore {}

/// Serves a subresource the generic verbs do not cover (a `proxy` to another server,
/// `pods/binding`, ...). Gets the request untouched (body unread, so it can stream); its
/// parsed [`RequestInfo`](crate::request::RequestInfo) is in the request's extensions.
#[async_trait::async_trait]
pub trait SubresourceHandler: Send + Sync {
    async fn handle(
        &self,
        server: &Arc<ApiServer>,
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
