//! The REST storage interface: what serves the verbs of one resource, in objects. Every
//! served resource has one implementation in the server's registry; the default is
//! the [`GenericStore`] (every verb on the object store, in [`crate::generic`]). A verb a
//! storage does not implement is not served (405), as kube's storages serve only the verbs
//! they implement; a storage that serves some verbs differently and the rest as the generic
//! store does says so, calling [`GenericStore`] for those.
//!
//! A storage takes the routed request ([`RequestContext`]: the resource, its parsed
//! [`RequestInfo`](crate::request::RequestInfo), the caller) and a decoded body, and answers
//! with objects ([`ObjectAnswer`]), a list page ([`ListAnswer`]) or a stream of events
//! ([`WatchAnswer`]). Only the API server's handlers decode bodies, negotiates the representation
//! and encodes (JSON, Tables built from the printers, watch event lines), once for every
//! storage.

use std::ops::Deref;
use std::sync::Arc;

use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_storage::StoredObject;
use futures::stream::BoxStream;
use http::StatusCode;
use serde_json::Value;

use crate::context::RequestContext;
use crate::objects::{DeleteOptions, Patch};
use crate::strict::Duplicates;

fn not_served() -> ApiError {
    ApiError::method_not_allowed("the server does not allow this method on the requested resource")
}

/// An object in an answer.
#[derive(Debug, Clone)]
pub enum Object {
    /// As stored: served from its bytes (converted when the served version differs).
    Stored(Arc<StoredObject>),
    /// Built by the storage (a merged object, a Scale, a review's answer), in the served
    /// version already.
    Built(Value),
}

/// An object's fields, borrowed or shared.
pub enum Fields<'a> {
    Shared(Arc<Value>),
    Borrowed(&'a Value),
}

impl Deref for Fields<'_> {
    type Target = Value;
    fn deref(&self) -> &Value {
        match self {
            Fields::Shared(v) => v,
            Fields::Borrowed(v) => v,
        }
    }
}

impl Object {
    /// The object's fields (a stored object's parse is shared while held).
    pub fn fields(&self) -> Fields<'_> {
        match self {
            Object::Stored(o) => Fields::Shared(o.value()),
            Object::Built(v) => Fields::Borrowed(v),
        }
    }

    /// The object's fields, owned.
    pub fn into_value(self) -> Value {
        match self {
            Object::Stored(o) => o.value().as_ref().clone(),
            Object::Built(v) => v,
        }
    }

    /// Its `metadata.resourceVersion`.
    pub fn resource_version(&self) -> Option<String> {
        match self {
            Object::Stored(o) => Some(o.revision.to_string()),
            Object::Built(v) => v
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

/// One object, with the status to answer it with.
#[derive(Debug, Clone)]
pub struct ObjectAnswer {
    pub object: Object,
    pub status: StatusCode,
    pub warnings: Vec<String>,
    /// Whether a client asking for a Table gets one (false for a Scale, which has no
    /// printer: it is answered as itself).
    pub printable: bool,
}

impl ObjectAnswer {
    pub fn new(object: Object, status: StatusCode) -> Self {
        Self {
            object,
            status,
            warnings: Vec::new(),
            printable: true,
        }
    }

    pub fn ok(object: Object) -> Self {
        Self::new(object, StatusCode::OK)
    }
}

/// One page of a list.
#[derive(Debug, Clone, Default)]
pub struct ListAnswer {
    pub items: Vec<Object>,
    pub resource_version: String,
    /// Set when more items follow.
    pub continue_token: Option<String>,
    /// How many items follow (with a continue token).
    pub remaining: usize,
    pub warnings: Vec<String>,
}

/// One event of a watch.
#[derive(Debug)]
pub enum WatchEvent {
    Added(Object),
    Modified(Object),
    Deleted(Object),
    /// Where the watch stands; `initial_events_end` marks the end of the initial events of a
    /// watch that asked for them (`sendInitialEvents=true`).
    Bookmark {
        resource_version: String,
        initial_events_end: bool,
    },
    /// The watch ends with this error (a 410 Expired asks the client to list again).
    Error(ApiError),
}

impl WatchEvent {
    /// The event's `type` on the wire.
    pub fn type_name(&self) -> &'static str {
        match self {
            WatchEvent::Added(_) => "ADDED",
            WatchEvent::Modified(_) => "MODIFIED",
            WatchEvent::Deleted(_) => "DELETED",
            WatchEvent::Bookmark { .. } => "BOOKMARK",
            WatchEvent::Error(_) => "ERROR",
        }
    }
}

/// A watch: its events, ending when the watch ends (a dropped stream stops the storage's
/// work for it).
pub struct WatchAnswer {
    pub events: BoxStream<'static, WatchEvent>,
    pub warnings: Vec<String>,
}

impl WatchAnswer {
    pub fn new(events: BoxStream<'static, WatchEvent>) -> Self {
        Self {
            events,
            warnings: Vec::new(),
        }
    }
}

/// A decoded create or update body.
#[derive(Debug, Clone)]
pub struct NewObject {
    pub value: Value,
    /// Keys the body repeats (refused or warned about as `fieldValidation` asks).
    pub duplicates: Duplicates,
}

/// A decoded PATCH body.
#[derive(Debug, Clone)]
pub struct PatchBody {
    pub patch: Patch,
    pub duplicates: Duplicates,
}

/// The verbs of one resource.
#[async_trait::async_trait]
pub trait RestStorage: Send + Sync + 'static {
    async fn get(&self, _ctx: &RequestContext) -> Result<ObjectAnswer, ApiError> {
        Err(not_served())
    }
    async fn list(&self, _ctx: &RequestContext) -> Result<ListAnswer, ApiError> {
        Err(not_served())
    }
    async fn watch(&self, _ctx: &RequestContext) -> Result<WatchAnswer, ApiError> {
        Err(not_served())
    }
    async fn create(
        &self,
        _ctx: &RequestContext,
        _body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        Err(not_served())
    }
    async fn update(
        &self,
        _ctx: &RequestContext,
        _body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        Err(not_served())
    }
    async fn patch(
        &self,
        _ctx: &RequestContext,
        _body: PatchBody,
    ) -> Result<ObjectAnswer, ApiError> {
        Err(not_served())
    }
    async fn delete(
        &self,
        _ctx: &RequestContext,
        _options: DeleteOptions,
    ) -> Result<ObjectAnswer, ApiError> {
        Err(not_served())
    }
    async fn delete_collection(
        &self,
        _ctx: &RequestContext,
        _options: DeleteOptions,
    ) -> Result<ListAnswer, ApiError> {
        Err(not_served())
    }

    /// The resource a Table of this storage's answers to `ctx` is printed as (its printer's
    /// columns); by default the served resource's own.
    fn table_resource(&self, ctx: &RequestContext) -> Arc<ResourceDef> {
        ctx.def.clone()
    }
}

/// The generic object store: every verb served from storage.
#[derive(Debug, Default, Clone, Copy)]
pub struct GenericStore;
