//! What a request brings to a REST storage: the routed request ([`RequestContext`]: the
//! resource, its parsed [`RequestInfo`], the caller, the headers) and the parts of its server
//! the generic store works with ([`StoreContext`]: storage, object limits, merge schemas,
//! admission). Deliberately not the whole server: a storage gets what it serves with, and
//! whatever else it needs it is given when it is installed.

use std::sync::Arc;

use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_storage::Storage;
use http::HeaderMap;

use crate::UserInfo;
use crate::admission::Admission;
use crate::builtin_admission::ValidatingPlugin;
use crate::objects::{self, NameGenerator, Objects, WriteOptions};
use crate::request::{ListOptions, RequestInfo, ResourcePath, WriteQuery};
use crate::table::IncludeObject;

/// Merge schemas of custom resources (from their CRD's schema), by (group, plural), for
/// server-side apply of list-map fields.
pub type MergeSchemas = dashmap::DashMap<(String, String), Arc<flotilla_patch::Schema>>;

/// The parts of a server the generic store works with.
pub struct StoreContext {
    pub storage: Arc<dyn Storage>,
    /// Largest request body read (kube-apiserver: 3 MiB).
    pub max_body_bytes: usize,
    /// Largest object written, as encoded for storage.
    pub max_object_bytes: usize,
    /// The random part of names made from `generateName`.
    pub name_generator: NameGenerator,
    pub merge_schemas: Arc<MergeSchemas>,
    /// Dynamic admission (present when the webhook configuration kinds are served).
    pub admission: Option<Arc<Admission>>,
    /// Compiled-in validating admission, run before the validating webhooks.
    pub admission_plugins: Vec<Arc<dyn ValidatingPlugin>>,
}

/// One resource request after routing.
pub struct RequestContext {
    /// What the generic store works with; shared by every request to this server.
    pub store: Arc<StoreContext>,
    pub def: Arc<ResourceDef>,
    /// The target, as parsed into `info`.
    pub path: ResourcePath,
    pub info: Arc<RequestInfo>,
    pub headers: HeaderMap,
    pub user: UserInfo,
}

impl RequestContext {
    pub fn objects(&self) -> Objects<'_> {
        let store = &self.store;
        // Only custom resources have merge schemas of their own (built-in kinds merge by
        // their strategic-merge schema); a read of a built-in kind looks nothing up.
        let schema = if self.def.strategic_merge {
            None
        } else {
            store
                .merge_schemas
                .get(&(self.def.group.clone(), self.def.plural.clone()))
                .map(|s| s.value().clone())
        };
        Objects::new(&self.def, &store.storage)
            .with_limits(store.max_object_bytes, store.name_generator.clone())
            .with_merge_schema(schema)
            .with_requester(Some(self.user.requester()))
            .with_plugins(&store.admission_plugins)
            .with_admission(
                store
                    .admission
                    .as_deref()
                    .map(|admission| objects::AdmissionScope {
                        admission,
                        user: &self.user,
                    }),
            )
    }
    pub(crate) fn namespace(&self) -> Option<&str> {
        self.path.namespace.as_deref()
    }
    pub(crate) fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or_default()
    }
    pub(crate) fn subresource(&self) -> Option<&str> {
        self.path.subresource.as_deref()
    }

    /// The options of a list, watch or deletecollection.
    pub fn list_options(&self) -> Result<&ListOptions, ApiError> {
        Ok(&self.info.options()?.list)
    }

    /// The query options of a create, update or patch.
    pub fn write_query(&self) -> Result<WriteQuery, ApiError> {
        match &self.info.options()?.write {
            Some(w) => Ok(w.clone()),
            // Custom subresources reached with another verb: parse what they need now.
            None => Ok(WriteQuery {
                dry_run: self.info.query.dry_run()?,
                field_validation: self.info.query.field_validation()?,
                field_manager: self.info.query.get("fieldManager").map(str::to_string),
                force: false,
            }),
        }
    }

    /// `includeObject` of a Table request.
    pub fn include_object(&self) -> IncludeObject {
        IncludeObject::from_query(self.info.query.get("includeObject"))
    }

    /// `fieldManager`, defaulting to the user agent's program name as kube-apiserver does.
    pub(crate) fn field_manager(
        &self,
        query: &WriteQuery,
        required: bool,
    ) -> Result<String, ApiError> {
        match &query.field_manager {
            Some(m) => Ok(m.clone()),
            None if required => Err(ApiError::bad_request(
                "PATCH request with apply content type requires fieldManager to be set",
            )),
            None => {
                let prefix = self
                    .info
                    .user_agent
                    .split('/')
                    .next()
                    .unwrap_or_default()
                    .trim();
                Ok(if prefix.is_empty() {
                    "unknown".to_string()
                } else {
                    prefix.chars().take(128).collect()
                })
            }
        }
    }

    pub fn write_options(&self, manager_required: bool) -> Result<WriteOptions, ApiError> {
        let query = self.write_query()?;
        Ok(WriteOptions {
            field_manager: self.field_manager(&query, manager_required)?,
            field_validation: query.field_validation,
            dry_run: query.dry_run,
        })
    }
}
