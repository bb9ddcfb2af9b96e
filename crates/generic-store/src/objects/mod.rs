//! The REST semantics of one resource over storage, independent of HTTP: storage keys, object
//! metadata on create and update (uid, timestamps, generation, finalizers and
//! deletionTimestamp), the `status` and `scale` subresources and the partial ones (such as
//! `approval`), a kind's own create/update preparation, patches and server-side apply with
//! field ownership, optimistic concurrency, and deletion.
//!
//! By concern: [`meta`] (the object rules on every write: identity, names, kind and version,
//! defaults and validation, sizes, metadata), [`write`] (create, update, patch and apply),
//! [`delete`] (deletion, finalizers, DeleteOptions), [`scale`] (the `scale` subresource),
//! [`fields`] (field paths and selector formatting). This module holds [`Objects`] itself,
//! its admission steps, reads, and the storage keys.

mod delete;
mod fields;
mod meta;
mod scale;
mod write;

pub use delete::*;
pub use fields::*;
pub use meta::*;
pub use write::*;

use std::sync::Arc;

use chrono::{SecondsFormat, Utc};
use flotilla_apimachinery::status::Cause;
use flotilla_apimachinery::{ApiError, Requester, ResourceDef};
use flotilla_patch as merge;
use flotilla_storage::{Storage, StorageError, StoredObject};
use rand::Rng;
use serde_json::{Map, Value, json};

use flotilla_admission::{Attributes, Operation};

use crate::UserInfo;
use crate::admission::Admission;
use crate::builtin_admission::{self, PluginRequest, Plugins};
use crate::request::{FieldValidation, ResourceVersion};
use crate::strict::Duplicates;

/// How many times a patch without a precondition is re-applied after losing a write race.
pub(crate) const PATCH_ATTEMPTS: u32 = 128;

/// Who is writing and how: the options every write shares.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub field_manager: String,
    pub field_validation: FieldValidation,
    pub dry_run: bool,
}

/// The outcome of a write: the object as stored (or as it would be under dry run) and
/// warnings for the client.
#[derive(Debug)]
pub struct Written {
    pub object: Arc<StoredObject>,
    pub warnings: Vec<String>,
    /// For deletes: false while finalizers hold the object (answered with 202).
    pub deleted: bool,
    /// For apply/PUT that created the object.
    pub created: bool,
}

/// The storage key of an object.
pub fn object_key(def: &ResourceDef, namespace: Option<&str>, name: &str) -> String {
    let group = if def.group.is_empty() {
        "core"
    } else {
        def.group.as_str()
    };
    match namespace {
        Some(ns) if def.namespaced => format!("/{group}/{}/{ns}/{name}", def.plural),
        _ => format!("/{group}/{}/{name}", def.plural),
    }
}

/// The storage prefix of a collection (all namespaces when `namespace` is None).
pub fn collection_prefix(def: &ResourceDef, namespace: Option<&str>) -> String {
    let group = if def.group.is_empty() {
        "core"
    } else {
        def.group.as_str()
    };
    match namespace {
        Some(ns) if def.namespaced => format!("/{group}/{}/{ns}/", def.plural),
        _ => format!("/{group}/{}/", def.plural),
    }
}

/// The generic store's reading of a resourceVersion: the storage revision it names (a
/// decimal number), or 400 in kube-apiserver's words (its storage's `ParseResourceVersion`
/// error under `invalid resource version: `, as for a GET, LIST or WATCH served by etcd).
pub fn revision_of(rv: &ResourceVersion) -> Result<flotilla_storage::Revision, ApiError> {
    let text = rv.as_str();
    text.parse().map_err(|_| {
        // Go's strconv.ParseUint: digits that do not fit are out of range, anything else
        // (signs, spaces, letters, nothing) is bad syntax.
        let why = if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {text:?}: strconv.ParseUint: parsing {text:?}: {why}"
        ))
    })
}

pub fn now_rfc3339() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Maps storage errors onto API errors for the object `name` of `def`.
pub fn storage_error(def: &ResourceDef, name: &str, err: StorageError) -> ApiError {
    match err {
        StorageError::NotFound(_) => ApiError::not_found(&def.group, &def.plural, name),
        StorageError::AlreadyExists(_) => ApiError::already_exists(&def.group, &def.plural, name),
        StorageError::Conflict { .. } => ApiError::conflict(&def.group, &def.plural, name),
        other => storage_failure(other),
    }
}

/// Maps a storage failure that is not about one object's state (an expired revision, the
/// store unreachable or out of time, an object over the store's own size limit) onto the
/// API error kube-apiserver answers.
pub fn storage_failure(err: StorageError) -> ApiError {
    match err {
        StorageError::Expired { requested, oldest } => {
            ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
        }
        StorageError::Unavailable(message) => ApiError::service_unavailable(message),
        StorageError::Timeout(message) => ApiError::timeout(message),
        StorageError::TooLarge(message) => ApiError::too_large(message),
        other => ApiError::internal(other.to_string()),
    }
}

/// Who a write is admitted for: the server's webhooks and the caller.
#[derive(Clone, Copy)]
pub struct AdmissionScope<'a> {
    pub admission: &'a Admission,
    pub user: &'a UserInfo,
}

/// The ResourceDef-level operations on one resource.
#[derive(Clone)]
pub struct Objects<'a> {
    pub def: &'a ResourceDef,
    pub storage: &'a Arc<dyn Storage>,
    /// The merge schema of a custom resource (from its CRD); built-in kinds use theirs.
    pub merge_schema: Option<Arc<merge::Schema>>,
    /// Dynamic admission of writes; `None` for the server's own writes.
    pub admission: Option<AdmissionScope<'a>>,
    /// Compiled-in validating admission ([`crate::builtin_admission`]); empty for the
    /// server's own writes.
    pub plugins: &'a Plugins,
    /// Who writes, for kinds that record it on create ([`ResourceDef::prepare_create`]).
    pub requester: Option<Requester<'a>>,
    /// The largest object written, as encoded for storage.
    pub max_object_bytes: usize,
    /// The random part of `generateName` names.
    pub names: NameGenerator,
    /// Keys the request body repeated: strict field validation reports them.
    pub duplicates: Duplicates,
}

impl<'a> Objects<'a> {
    pub fn new(def: &'a ResourceDef, storage: &'a Arc<dyn Storage>) -> Self {
        Self {
            def,
            storage,
            merge_schema: None,
            admission: None,
            plugins: &[],
            requester: None,
            max_object_bytes: DEFAULT_MAX_OBJECT_BYTES,
            names: NameGenerator::default(),
            duplicates: Duplicates::None,
        }
    }

    /// The keys the written body repeated, for strict field validation.
    pub fn with_duplicates(mut self, duplicates: Duplicates) -> Self {
        self.duplicates = duplicates;
        self
    }

    /// Writes objects up to `max_object_bytes` (encoded) and names generated ones with
    /// `names`.
    pub fn with_limits(mut self, max_object_bytes: usize, names: NameGenerator) -> Self {
        self.max_object_bytes = max_object_bytes;
        self.names = names;
        self
    }

    /// Refuses an object whose encoding is over the limit with 413. As kube-apiserver does
    /// when etcd refuses a write as too large, `managedFields` (which can be large and are
    /// safe to lose) are dropped first if that makes the object fit.
    fn check_object_size(&self, name: &str, obj: &mut Value) -> Result<(), ApiError> {
        let limit = self.max_object_bytes;
        if encoded_size_within(obj, limit).is_some() {
            return Ok(());
        }
        let had_managed_fields = meta_mut(obj).remove("managedFields").is_some();
        if had_managed_fields && encoded_size_within(obj, limit).is_some() {
            tracing::debug!(
                resource = %self.def.plural,
                name,
                "managedFields dropped to keep the object within the size limit"
            );
            return Ok(());
        }
        let size = serde_json::to_vec(obj).map(|v| v.len()).unwrap_or_default();
        Err(ApiError::too_large(format!(
            "Request entity too large: {} {name:?} is {size} bytes when stored, over the limit of {limit} bytes",
            flotilla_apimachinery::status::qualified_resource(&self.def.group, &self.def.plural),
        ))
        .with_details(&self.def.group, &self.def.plural, name))
    }

    /// Writes go through these compiled-in admission checks.
    pub fn with_plugins(mut self, plugins: &'a Plugins) -> Self {
        self.plugins = plugins;
        self
    }

    /// Runs the compiled-in admission checks.
    async fn admit_plugins(
        &self,
        operation: Operation,
        subresource: Option<&str>,
        object: Option<&Value>,
        old_object: Option<&Value>,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        if self.plugins.is_empty() {
            return Ok(());
        }
        builtin_admission::run(
            self.plugins,
            &PluginRequest {
                operation,
                def: self.def,
                subresource,
                object,
                old_object,
                dry_run,
                user: self.requester,
            },
        )
        .await
    }

    pub fn with_requester(mut self, requester: Option<Requester<'a>>) -> Self {
        self.requester = requester;
        self
    }

    pub fn with_merge_schema(mut self, schema: Option<Arc<merge::Schema>>) -> Self {
        self.merge_schema = schema;
        self
    }

    /// Writes go through dynamic admission for `user`.
    pub fn with_admission(mut self, admission: Option<AdmissionScope<'a>>) -> Self {
        self.admission = admission.filter(|_| Admission::admits(&self.def.group));
        self
    }

    fn admission_attributes(
        &self,
        operation: Operation,
        subresource: Option<&str>,
        object: Option<&Value>,
        old: Option<&Value>,
        options: Value,
        dry_run: bool,
    ) -> Attributes {
        let def = self.def;
        let user = self.admission.map(|s| s.user);
        let named = object.or(old);
        Attributes {
            operation,
            group: def.group.clone(),
            version: def.version.clone(),
            resource: def.plural.clone(),
            subresource: subresource.unwrap_or_default().to_string(),
            kind_group: def.group.clone(),
            kind_version: def.version.clone(),
            kind: def.kind.clone(),
            namespaced: def.namespaced,
            namespace: named
                .and_then(|o| meta_str(o, "namespace"))
                .unwrap_or_default()
                .to_string(),
            name: named
                .and_then(|o| meta_str(o, "name"))
                .unwrap_or_default()
                .to_string(),
            object: object.cloned(),
            old_object: old.cloned(),
            dry_run,
            user: user
                .map(|u| flotilla_admission::UserInfo {
                    username: u.name.clone(),
                    uid: u.uid.clone(),
                    groups: u.groups.clone(),
                    extra: u.extra.clone(),
                })
                .unwrap_or_default(),
            options,
        }
    }

    /// Mutating admission of `obj` (already defaulted); re-defaults it when a webhook changed
    /// it. Returns the webhooks' warnings.
    async fn admit_mutating(
        &self,
        operation: Operation,
        subresource: Option<&str>,
        obj: &mut Value,
        old: Option<&Value>,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        let Some(scope) = self.admission else {
            return Ok(Vec::new());
        };
        let mut attrs = self.admission_attributes(
            operation,
            subresource,
            Some(obj),
            old,
            write_options_value(opts),
            opts.dry_run,
        );
        let warnings = scope.admission.mutate(&mut attrs).await?;
        if let Some(mutated) = attrs.object {
            if mutated != *obj {
                *obj = mutated;
                check_type(self.def, obj)?;
                prune_and_default(self.def, obj);
            }
        }
        Ok(warnings)
    }

    /// Admission of a DELETE of `old`: the compiled-in checks, mutating webhooks called with
    /// no object (as kube-apiserver does; nothing is left to change), then validating ones.
    pub async fn admit_delete(
        &self,
        old: &Value,
        options: &DeleteOptions,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        self.admit_plugins(Operation::Delete, None, None, Some(old), dry_run)
            .await?;
        let Some(scope) = self.admission else {
            return Ok(());
        };
        let mut opts = json!({});
        if let Some(p) = options.propagation {
            opts["propagationPolicy"] = json!(format!("{p:?}"));
        }
        if dry_run {
            opts["dryRun"] = json!(["All"]);
        }
        let mut attrs =
            self.admission_attributes(Operation::Delete, None, None, Some(old), opts, dry_run);
        scope.admission.mutate(&mut attrs).await?;
        scope.admission.validate(&attrs).await?;
        Ok(())
    }

    /// Validating admission: the compiled-in checks, then the webhooks; returns the
    /// webhooks' warnings.
    async fn admit_validating(
        &self,
        operation: Operation,
        subresource: Option<&str>,
        obj: Option<&Value>,
        old: Option<&Value>,
        options: Value,
        dry_run: bool,
    ) -> Result<Vec<String>, ApiError> {
        self.admit_plugins(operation, subresource, obj, old, dry_run)
            .await?;
        let Some(scope) = self.admission else {
            return Ok(Vec::new());
        };
        let attrs = self.admission_attributes(operation, subresource, obj, old, options, dry_run);
        scope.admission.validate(&attrs).await
    }

    fn schema(&self) -> &merge::Schema {
        if let Some(s) = &self.merge_schema {
            return s;
        }
        if self.def.strategic_merge {
            merge::Schema::builtin(&self.def.group, &self.def.kind)
                .unwrap_or_else(merge::Schema::generic)
        } else {
            merge::Schema::generic()
        }
    }

    pub async fn get(
        &self,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.read(namespace, name, false).await
    }

    /// [`Objects::get`] with `any_version`: the object as this server's cache holds it now,
    /// without waiting for a shared store's latest writes (kube's `resourceVersion=0`,
    /// "any": served from the watch cache, so it answers while etcd is out of reach).
    pub async fn read(
        &self,
        namespace: Option<&str>,
        name: &str,
        any_version: bool,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let key = object_key(self.def, namespace, name);
        let found = if any_version {
            self.storage.get_cached(&key).await
        } else {
            self.storage.get(&key).await
        };
        match found {
            Ok(Some(o)) => Ok(o),
            Ok(None) => Err(ApiError::not_found(&self.def.group, &self.def.plural, name)),
            Err(e) => Err(storage_error(self.def, name, e)),
        }
    }
}
