//! The REST semantics of one resource over storage, independent of HTTP: storage keys, object
//! metadata on create and update (uid, timestamps, generation, finalizers and
//! deletionTimestamp), the `status` and `scale` subresources and the partial ones (such as
//! `approval`), a kind's own create/update preparation, patches and server-side apply with
//! field ownership, optimistic concurrency, and deletion.

use std::sync::Arc;

use chrono::{SecondsFormat, Utc};
use flotilla_apimachinery::status::Cause;
use flotilla_apimachinery::{ApiError, Requester, ResourceDef};
use flotilla_merge as merge;
use flotilla_storage::{Revision, Storage, StorageError, StoredObject};
use rand::Rng;
use serde_json::{Map, Value, json};

use flotilla_admission::{Attributes, Operation};

use crate::admission::Admission;
use crate::auth::UserInfo;
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

/// After mutating admission of a create: the name and namespace are still the request's.
fn check_create_identity(
    def: &ResourceDef,
    obj: &Value,
    namespace: Option<&str>,
    name: &str,
) -> Result<(), ApiError> {
    if meta_str(obj, "name") != Some(name) {
        return Err(ApiError::bad_request(format!(
            "a mutating admission webhook changed the name of {} {name:?}",
            def.kind
        )));
    }
    if def.namespaced && meta_str(obj, "namespace") != namespace {
        return Err(ApiError::bad_request(format!(
            "a mutating admission webhook changed the namespace of {} {name:?}",
            def.kind
        )));
    }
    Ok(())
}

/// The options of a write as an AdmissionReview's `options` show them.
fn write_options_value(opts: &WriteOptions) -> Value {
    let mut v = json!({"fieldManager": opts.field_manager});
    if opts.dry_run {
        v["dryRun"] = json!(["All"]);
    }
    v
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

fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(root) = obj else {
        unreachable!("made an object above")
    };
    let m = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    let Value::Object(m) = m else {
        unreachable!("made an object above")
    };
    m
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj).and_then(|m| m.get(field)).and_then(Value::as_str)
}

/// Checks `apiVersion`/`kind` of a body against the resource it was sent to (both may be
/// omitted; kube-apiserver fills them from the URL).
pub fn check_type(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
    let Some(map) = obj.as_object() else {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    };
    let expected_av = def.api_version();
    let storage_av = def.storage_api_version();
    // An absent apiVersion means the URL's version.
    let av = match map.get("apiVersion").and_then(Value::as_str) {
        None | Some("") => expected_av.clone(),
        Some(av) => av.to_string(),
    };
    if av != expected_av && av != storage_av {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({expected_av})"
        )));
    }
    if av != storage_av && def.convert.is_some() {
        // Versions that differ in shape: map the fields, not just the label.
        let storage = def.storage_version.clone().unwrap_or_default();
        *obj = def.convert_to(obj, &storage);
    } else if let Some(map) = obj.as_object_mut() {
        map.insert("apiVersion".into(), json!(storage_av));
    }
    check_kind(def, obj)
}

/// Checks (or fills) `kind` of a body against the resource it was sent to.
fn check_kind(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
    let Some(map) = obj.as_object_mut() else {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    };
    match map.get("kind").and_then(Value::as_str) {
        None | Some("") => {
            map.insert("kind".into(), json!(def.kind));
        }
        Some(k) if k == def.kind => {}
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
    }
    Ok(())
}

/// The object as served at `def`'s version (objects are stored at the storage version; most
/// resources share one schema across versions, so conversion rewrites `apiVersion` only, and
/// kinds whose versions differ carry their own conversion in `def.convert`).
pub fn to_served(def: &ResourceDef, value: &Value) -> Value {
    if def.converts() {
        def.convert_to(value, &def.version)
    } else {
        value.clone()
    }
}

/// The bytes to send for a stored object at `def`'s version.
pub fn served_bytes(def: &ResourceDef, obj: &StoredObject) -> bytes::Bytes {
    if def.converts() {
        bytes::Bytes::from(serde_json::to_vec(&to_served(def, &obj.value())).unwrap_or_default())
    } else {
        obj.bytes.clone()
    }
}

/// The generic name rule every resource shares (kinds add DNS rules in their validation).
fn check_path_segment_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
    let bad = if name == "." || name == ".." {
        Some(format!("may not be '{name}'"))
    } else if name.contains('/') || name.contains('%') {
        Some(format!(
            "may not contain '{}'",
            if name.contains('/') { "/" } else { "%" }
        ))
    } else {
        None
    };
    match bad {
        Some(msg) => Err(ApiError::invalid(
            &def.group,
            &def.kind,
            name,
            vec![Cause::new(
                "FieldValueInvalid",
                format!("Invalid value: {name:?}: {msg}"),
                "metadata.name",
            )],
        )),
        None => Ok(()),
    }
}

/// Drops undeclared fields (returning their paths) and fills the kind's defaults.
fn prune_and_default(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    let pruned = match &def.prune {
        Some(prune) => prune(obj),
        None => Vec::new(),
    };
    if let Some(default) = &def.default {
        default(obj);
    }
    pruned
}

/// Validates a pruned and defaulted object; `pruned` are the undeclared fields dropped and
/// `duplicates` the keys the body repeated. Returns warnings (both kinds of problem under
/// `fieldValidation=Warn`); under `Strict` they are one 400 listing them all, repeated keys
/// first, as kube's strict decoding error lists what its decoder met.
fn validate_defaulted(
    def: &ResourceDef,
    obj: &mut Value,
    old: Option<&Value>,
    pruned: Vec<String>,
    duplicates: &Duplicates,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let name = meta_str(obj, "name").unwrap_or_default().to_string();
    let (mut unknown, causes) = match &def.validate {
        Some(validate) => {
            let v = validate(obj, old);
            if let Some(err) = v.decode_error {
                return Err(ApiError::bad_request(format!(
                    "{} in version \"{}\" cannot be handled as a {}: {err}",
                    def.kind, def.version, def.kind
                )));
            }
            (v.unknown_fields, v.causes)
        }
        None => (Vec::new(), Vec::new()),
    };
    for field in pruned {
        if !unknown.contains(&field) {
            unknown.push(field);
        }
    }
    let unknown = unknown.iter().map(|f| format!("unknown field \"{f}\""));
    let mut warnings = Vec::new();
    match validation {
        FieldValidation::Strict => {
            let problems: Vec<String> = duplicates
                .strict_items()
                .into_iter()
                .chain(unknown)
                .collect();
            if !problems.is_empty() {
                return Err(ApiError::bad_request(format!(
                    "strict decoding error: {}",
                    problems.join(", ")
                )));
            }
        }
        FieldValidation::Warn => {
            warnings.extend(duplicates.warnings());
            warnings.extend(unknown);
        }
        FieldValidation::Ignore => {}
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
    }
    Ok(warnings)
}

/// A compiled-in kind with a status subresource always carries `status` (`{}` when empty),
/// as kube-apiserver's Go types serialise; client-go controllers read it unconditionally.
/// Custom resources do not: kube-apiserver drops their status on create and keeps it absent.
fn fill_status(def: &ResourceDef, obj: &mut Value) {
    // `strategic_merge` is what marks a compiled-in (typed) kind.
    if def.has_status && def.strategic_merge {
        if let Some(m) = obj.as_object_mut() {
            if m.get("status").is_none_or(Value::is_null) {
                m.insert("status".into(), json!({}));
            }
        }
    }
}

/// The object without the parts that do not make a new generation.
fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    v
}

/// The object without what changes on every write (for no-op detection).
fn comparable(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    v
}

const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// How many names a create with `generateName` tries before giving up (kube-apiserver's
/// `maxNameGenerationCreateAttempts`, RetryGenerateName being GA since 1.32).
pub const GENERATE_NAME_ATTEMPTS: usize = 8;

/// Makes the random part of names created from `generateName` (five characters from kube's
/// alphabet). Replaceable so that tests can make collisions certain.
#[derive(Clone)]
pub struct NameGenerator(Arc<dyn Fn() -> String + Send + Sync>);

impl NameGenerator {
    /// Suffixes from `suffix` (each call is one attempt's suffix).
    pub fn new(suffix: impl Fn() -> String + Send + Sync + 'static) -> Self {
        Self(Arc::new(suffix))
    }

    /// kube's generator: five random characters without vowels.
    pub fn random() -> Self {
        Self::new(|| {
            let mut rng = rand::rng();
            (0..5)
                .map(|_| GENERATE_ALPHABET[rng.random_range(0..GENERATE_ALPHABET.len())] as char)
                .collect()
        })
    }

    fn suffix(&self) -> String {
        (self.0)()
    }
}

impl Default for NameGenerator {
    fn default() -> Self {
        Self::random()
    }
}

impl std::fmt::Debug for NameGenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("NameGenerator")
    }
}

/// The largest object the generic store writes, as encoded for storage, by default: 1.5 MiB,
/// etcd's default request limit (`--max-request-bytes`), so that no backend is handed an
/// object etcd would refuse.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 3 * 512 * 1024;

/// Counts the bytes written to it, failing once past a bound (so an encoding stops there).
struct ByteCounter {
    count: usize,
    bound: usize,
}

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.count += buf.len();
        if self.count > self.bound {
            return Err(std::io::Error::other("over the bound"));
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of `obj`'s JSON encoding (what the storage keeps), or `None` when it is over
/// `limit` (counting stops there).
fn encoded_size_within(obj: &Value, limit: usize) -> Option<usize> {
    let mut counter = ByteCounter {
        count: 0,
        bound: limit,
    };
    serde_json::to_writer(&mut counter, obj)
        .ok()
        .map(|()| counter.count)
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
    pub(crate) async fn admit_delete(
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

    /// Create (POST to the collection). A name made from `generateName` that is taken is
    /// made again, up to [`GENERATE_NAME_ATTEMPTS`] names, as kube-apiserver does.
    pub async fn create(
        &self,
        namespace: Option<&str>,
        obj: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let generated = meta_str(&obj, "name").is_none_or(str::is_empty)
            && meta_str(&obj, "generateName").is_some_and(|p| !p.is_empty());
        if !generated {
            return self.create_once(namespace, obj, opts).await;
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.create_once(namespace, obj.clone(), opts).await {
                Err(e)
                    if e.code == 409
                        && e.reason == "AlreadyExists"
                        && attempt < GENERATE_NAME_ATTEMPTS =>
                {
                    tracing::debug!(
                        resource = %self.def.plural,
                        attempt,
                        "generated name taken; generating another"
                    );
                }
                other => return other,
            }
        }
    }

    async fn create_once(
        &self,
        namespace: Option<&str>,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        check_type(self.def, &mut obj)?;
        let def = self.def;
        {
            let m = meta_mut(&mut obj);
            let name = m
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if name.is_empty() {
                match m.get("generateName").and_then(Value::as_str) {
                    Some(prefix) if !prefix.is_empty() => {
                        let generated = format!("{prefix}{}", self.names.suffix());
                        m.insert("name".into(), json!(generated));
                    }
                    _ => {
                        return Err(ApiError::invalid(
                            &def.group,
                            &def.kind,
                            "",
                            vec![Cause::new(
                                "FieldValueRequired",
                                "Required value: name or generateName is required",
                                "metadata.name",
                            )],
                        ));
                    }
                }
            }
            if def.namespaced {
                let body_ns = m
                    .get("namespace")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                match namespace {
                    Some(ns) if body_ns.is_empty() || body_ns == ns => {
                        m.insert("namespace".into(), json!(ns));
                    }
                    Some(_) => {
                        return Err(ApiError::bad_request(
                            "the namespace of the provided object does not match the namespace sent on the request",
                        ));
                    }
                    None => {
                        return Err(ApiError::method_not_allowed(
                            "a namespaced object can only be created in a namespace",
                        ));
                    }
                }
            } else {
                m.remove("namespace");
            }
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(now_rfc3339()));
            m.insert("generation".into(), json!(1));
            for field in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                m.remove(field);
            }
        }
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        check_path_segment_name(def, &name)?;
        if def.has_status {
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        let pruned = prune_and_default(def, &mut obj);
        let mut warnings = self
            .admit_mutating(Operation::Create, None, &mut obj, None, opts)
            .await?;
        if self.admission.is_some() {
            // A webhook may not rename the object or move it.
            check_create_identity(def, &obj, namespace, &name)?;
        }
        if let Some(prepare) = &def.prepare_create {
            prepare(&mut obj, self.requester.as_ref());
        }
        warnings.extend(validate_defaulted(
            def,
            &mut obj,
            None,
            pruned,
            &self.duplicates,
            opts.field_validation,
        )?);
        merge::track_update(
            None,
            &mut obj,
            &merge::UpdateOptions {
                manager: &opts.field_manager,
                api_version: &def.api_version(),
                now: &now_rfc3339(),
                subresource: None,
            },
            self.schema(),
        );
        fill_status(def, &mut obj);
        warnings.extend(
            self.admit_validating(
                Operation::Create,
                None,
                Some(&obj),
                None,
                write_options_value(opts),
                opts.dry_run,
            )
            .await?,
        );
        let generate_name = meta_str(&obj, "generateName").is_some_and(|p| !p.is_empty());
        match self.store_new(namespace, &name, obj, opts, warnings).await {
            // The server chose the name: say so (kube's GenerateNameConflict), and when
            // to try again.
            Err(e) if generate_name && e.code == 409 && e.reason == "AlreadyExists" => {
                let mut e = ApiError::new(
                    409,
                    "AlreadyExists",
                    format!(
                        "{} {name:?} already exists, the server was not able to generate a unique name for the object",
                        flotilla_apimachinery::status::qualified_resource(
                            &self.def.group,
                            &self.def.plural
                        )
                    ),
                )
                .with_details(&self.def.group, &self.def.plural, &name);
                e.retry_after_seconds = Some(1);
                Err(e)
            }
            other => other,
        }
    }

    async fn store_new(
        &self,
        namespace: Option<&str>,
        name: &str,
        mut obj: Value,
        opts: &WriteOptions,
        warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        fill_status(self.def, &mut obj);
        self.check_object_size(name, &mut obj)?;
        let key = object_key(self.def, namespace, name);
        let object = if opts.dry_run {
            match self.storage.get(&key).await {
                Ok(Some(_)) => {
                    return Err(ApiError::already_exists(
                        &self.def.group,
                        &self.def.plural,
                        name,
                    ));
                }
                Ok(None) => dry_run_object(&key, obj),
                Err(e) => return Err(storage_error(self.def, name, e)),
            }
        } else {
            self.storage
                .create(&key, obj)
                .await
                .map_err(|e| storage_error(self.def, name, e))?
        };
        Ok(Written {
            object,
            warnings,
            deleted: false,
            created: true,
        })
    }

    /// Writes `new` over `old` applying update semantics; `subresource` is `status` for
    /// status writes. `manager_tracked` is true when managedFields were already computed
    /// (server-side apply).
    async fn write_update(
        &self,
        old: &Arc<StoredObject>,
        mut new: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
        manager_tracked: bool,
    ) -> Result<Written, ApiError> {
        let def = self.def;
        check_type(def, &mut new)?;
        let old_value: &Value = &old.value();
        let name = meta_str(old_value, "name").unwrap_or_default().to_string();
        let new_name = meta_str(&new, "name").unwrap_or_default();
        if !new_name.is_empty() && new_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({new_name}) does not match the name on the URL ({name})"
            )));
        }
        if def.namespaced {
            let old_ns = meta_str(old_value, "namespace").unwrap_or_default();
            let new_ns = meta_str(&new, "namespace").unwrap_or_default();
            if !new_ns.is_empty() && new_ns != old_ns {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        if let Some(uid) = meta_str(&new, "uid") {
            let old_uid = meta_str(old_value, "uid").unwrap_or_default();
            if !uid.is_empty() && uid != old_uid {
                return Err(ApiError::conflict_message(format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {old_uid}"
                )));
            }
        }
        if let Some(rv) = meta_str(&new, "resourceVersion").filter(|s| !s.is_empty()) {
            let rv = revision_of(&ResourceVersion::new(rv)).map_err(|_| {
                ApiError::invalid(
                    &def.group,
                    &def.kind,
                    &name,
                    vec![Cause::new(
                        "FieldValueInvalid",
                        format!("Invalid value: {rv:?}: must be a decimal number"),
                        "metadata.resourceVersion",
                    )],
                )
            })?;
            if rv != old.revision {
                return Err(ApiError::conflict(&def.group, &def.plural, &name));
            }
        }
        let pruned = prune_and_default(def, &mut new);
        let mutating_warnings = self
            .admit_mutating(
                Operation::Update,
                subresource,
                &mut new,
                Some(old_value),
                opts,
            )
            .await?;
        // Subresource semantics: a write through `status` (or a partial subresource such as
        // `approval`) changes only its part; main writes keep those parts as stored.
        match subresource.and_then(|s| def.subresource_path(s)) {
            Some(path) => {
                let mut merged = old_value.clone();
                copy_path(&new, &mut merged, path);
                if let Some(mf) = meta(&new).and_then(|m| m.get("managedFields")) {
                    meta_mut(&mut merged).insert("managedFields".into(), mf.clone());
                }
                new = merged;
            }
            None => {
                for path in def.subresource_owned_paths() {
                    copy_path(old_value, &mut new, path);
                }
            }
        }
        if let Some(prepare) = &def.prepare_update {
            let causes = prepare(&mut new, old_value, subresource);
            if !causes.is_empty() {
                return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
            }
        }
        {
            let old_meta = meta(old_value).cloned().unwrap_or_default();
            let m = meta_mut(&mut new);
            for field in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "namespace",
                "name",
            ] {
                match old_meta.get(field) {
                    Some(v) => {
                        m.insert(field.into(), v.clone());
                    }
                    None => {
                        m.remove(field);
                    }
                }
            }
            m.remove("selfLink");
            m.insert("resourceVersion".into(), json!(old.revision.to_string()));
        }
        let old_generation = meta(old_value)
            .and_then(|m| m.get("generation"))
            .and_then(Value::as_i64)
            .unwrap_or(1);
        meta_mut(&mut new).insert("generation".into(), json!(old_generation));
        let mut warnings = mutating_warnings;
        warnings.extend(validate_defaulted(
            def,
            &mut new,
            Some(old_value),
            pruned,
            &self.duplicates,
            opts.field_validation,
        )?);
        if spec_part(&new) != spec_part(old_value) {
            meta_mut(&mut new).insert("generation".into(), json!(old_generation + 1));
        }
        // Once marked for deletion, finalizers may only be removed.
        let terminating = meta(old_value).is_some_and(|m| m.contains_key("deletionTimestamp"));
        if terminating {
            let old_f = finalizers(old_value);
            let new_f = finalizers(&new);
            if new_f.iter().any(|f| !old_f.contains(f)) {
                return Err(ApiError::forbidden(format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {:?}",
                    new_f
                        .iter()
                        .filter(|f| !old_f.contains(f))
                        .collect::<Vec<_>>()
                )));
            }
        }
        if !manager_tracked {
            merge::track_update(
                Some(old_value),
                &mut new,
                &merge::UpdateOptions {
                    manager: &opts.field_manager,
                    api_version: &def.api_version(),
                    now: &now_rfc3339(),
                    subresource,
                },
                self.schema(),
            );
        }
        fill_status(def, &mut new);
        warnings.extend(
            self.admit_validating(
                Operation::Update,
                subresource,
                Some(&new),
                Some(old_value),
                write_options_value(opts),
                opts.dry_run,
            )
            .await?,
        );
        if comparable(&new) == comparable(old_value) && !opts.dry_run {
            return Ok(Written {
                object: old.clone(),
                warnings,
                deleted: false,
                created: false,
            });
        }
        let key = old.key.clone();
        if terminating && finalizers(&new).is_empty() {
            if opts.dry_run {
                return Ok(Written {
                    object: dry_run_object(&key, new),
                    warnings,
                    deleted: true,
                    created: false,
                });
            }
            let object = self
                .storage
                .delete(&key, Some(old.revision))
                .await
                .map_err(|e| storage_error(def, &name, e))?;
            return Ok(Written {
                object,
                warnings,
                deleted: true,
                created: false,
            });
        }
        self.check_object_size(&name, &mut new)?;
        if opts.dry_run {
            return Ok(Written {
                object: dry_run_object(&key, new),
                warnings,
                deleted: false,
                created: false,
            });
        }
        let object = self
            .storage
            .update(&key, new, Some(old.revision))
            .await
            .map_err(|e| storage_error(def, &name, e))?;
        Ok(Written {
            object,
            warnings,
            deleted: false,
            created: false,
        })
    }

    /// Update (PUT) of the object or its status.
    pub async fn update(
        &self,
        namespace: Option<&str>,
        name: &str,
        new: Value,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if !new.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request is not a JSON object",
            ));
        }
        let old = self.get(namespace, name).await?;
        self.write_update(&old, new, subresource, opts, false).await
    }

    /// PATCH of the object or its status. Retries on write races when the client gave no
    /// resourceVersion precondition, as kube-apiserver does.
    pub async fn patch(
        &self,
        namespace: Option<&str>,
        name: &str,
        patch: &Patch,
        subresource: Option<&str>,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let def = self.def;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let key = object_key(def, namespace, name);
            let current = self
                .storage
                .get(&key)
                .await
                .map_err(|e| storage_error(def, name, e))?;
            let creating = current.is_none();
            let result = match (current, patch) {
                (None, Patch::Apply { body, force }) => {
                    self.apply_create(namespace, name, body, *force, opts).await
                }
                (None, _) => return Err(ApiError::not_found(&def.group, &def.plural, name)),
                (Some(old), Patch::Apply { body, force }) => {
                    let applied = self.prepare_apply_body(body, namespace, name)?;
                    let new = merge::apply(
                        Some(&to_served(def, &old.value())),
                        &applied,
                        &merge::ApplyOptions {
                            manager: &opts.field_manager,
                            api_version: &def.api_version(),
                            force: *force,
                            now: &now_rfc3339(),
                            subresource,
                        },
                        self.schema(),
                    )
                    .map_err(|e| apply_error(def, name, e))?;
                    self.write_update(&old, new, subresource, opts, true).await
                }
                (Some(old), other) => {
                    let new = self.apply_patch(&to_served(def, &old.value()), other, name)?;
                    self.write_update(&old, new, subresource, opts, false).await
                }
            };
            // A patch without a precondition is re-applied to the newer object, as
            // kube-apiserver's update loop does: each round some writer wins, so a writer
            // among N concurrent ones loses at most N-1 times. The bound only stops a livelock.
            match result {
                Err(e)
                    if e.code == 409
                        && e.reason == "Conflict"
                        && attempts < PATCH_ATTEMPTS
                        && !patch.has_precondition() =>
                {
                    continue;
                }
                // Two applies creating the same object race: the loser applies onto the
                // winner's object instead of failing.
                Err(e)
                    if creating
                        && e.code == 409
                        && e.reason == "AlreadyExists"
                        && attempts < PATCH_ATTEMPTS =>
                {
                    continue;
                }
                other => return other,
            }
        }
    }

    fn prepare_apply_body(
        &self,
        body: &Value,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Value, ApiError> {
        let mut applied = body.clone();
        check_type(self.def, &mut applied)?;
        let body_name = meta_str(&applied, "name").unwrap_or_default();
        if body_name.is_empty() {
            return Err(ApiError::bad_request(
                "metadata.name is required in an apply patch",
            ));
        }
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if self.def.namespaced {
            let ns = meta_str(&applied, "namespace").unwrap_or_default();
            if !ns.is_empty() && Some(ns) != namespace {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
        Ok(applied)
    }

    /// Server-side apply of an object that does not exist yet: a create owned by the applier.
    async fn apply_create(
        &self,
        namespace: Option<&str>,
        name: &str,
        body: &Value,
        force: bool,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let def = self.def;
        let applied = self.prepare_apply_body(body, namespace, name)?;
        let mut obj = merge::apply(
            None,
            &applied,
            &merge::ApplyOptions {
                manager: &opts.field_manager,
                api_version: &def.api_version(),
                force,
                now: &now_rfc3339(),
                subresource: None,
            },
            self.schema(),
        )
        .map_err(|e| apply_error(def, name, e))?;
        {
            let m = meta_mut(&mut obj);
            if def.namespaced {
                if let Some(ns) = namespace {
                    m.insert("namespace".into(), json!(ns));
                }
            }
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(now_rfc3339()));
            m.insert("generation".into(), json!(1));
            for field in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                m.remove(field);
            }
        }
        check_path_segment_name(def, name)?;
        if def.has_status {
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
        let pruned = prune_and_default(def, &mut obj);
        let mut warnings = self
            .admit_mutating(Operation::Create, None, &mut obj, None, opts)
            .await?;
        if self.admission.is_some() {
            check_create_identity(def, &obj, namespace, name)?;
        }
        if let Some(prepare) = &def.prepare_create {
            prepare(&mut obj, self.requester.as_ref());
        }
        warnings.extend(validate_defaulted(
            def,
            &mut obj,
            None,
            pruned,
            &self.duplicates,
            opts.field_validation,
        )?);
        fill_status(def, &mut obj);
        warnings.extend(
            self.admit_validating(
                Operation::Create,
                None,
                Some(&obj),
                None,
                write_options_value(opts),
                opts.dry_run,
            )
            .await?,
        );
        self.store_new(namespace, name, obj, opts, warnings).await
    }

    /// Applies a JSON, merge or strategic merge patch to `current`.
    fn apply_patch(&self, current: &Value, patch: &Patch, name: &str) -> Result<Value, ApiError> {
        let def = self.def;
        match patch {
            Patch::Json(ops) => {
                let parsed: json_patch::Patch =
                    serde_json::from_value(ops.clone()).map_err(|e| {
                        ApiError::bad_request(format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ))
                    })?;
                let mut doc = current.clone();
                json_patch::patch(&mut doc, &parsed).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                    )
                    .with_details(&def.group, &def.plural, name)
                    // kubectl prints only the causes of an Invalid error that names its
                    // object, so the failed operation must be one to be seen.
                    .with_causes(vec![Cause::new(
                        "UnexpectedServerResponse",
                        e.to_string(),
                        "",
                    )])
                })?;
                Ok(doc)
            }
            Patch::Merge(p) => {
                let mut doc = current.clone();
                json_patch::merge(&mut doc, p);
                Ok(doc)
            }
            Patch::Strategic(p) => {
                if !def.strategic_merge {
                    return Err(unsupported_strategic(def));
                }
                merge::strategic_merge(current, p, self.schema()).map_err(|e| {
                    ApiError::bad_request(format!("unable to apply the strategic merge patch: {e}"))
                })
            }
            Patch::Apply { .. } => Err(ApiError::internal("apply patch routed to apply_patch")),
        }
    }

    /// DELETE of one object.
    ///
    /// As kube-apiserver's generic store does: the propagation policy first decides the
    /// garbage collector's finalizers (`orphan` for Orphan, `foregroundDeletion` for
    /// Foreground, neither for Background; without a policy the object's own finalizers
    /// stand). An object left with finalizers is only marked (deletionTimestamp,
    /// deletionGracePeriodSeconds 0 and, the first time, a generation bump) and stays until
    /// they are removed; one left without any is deleted at once, even when it was already
    /// being deleted (so `--cascade=background` ends a stuck foreground deletion).
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        options: &DeleteOptions,
        dry_run: bool,
    ) -> Result<Written, ApiError> {
        let def = self.def;
        let dry_run = dry_run || options.dry_run;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let old = self.get(namespace, name).await?;
            if let Some(uid) = &options.uid {
                let old_value = old.value();
                let actual = meta_str(&old_value, "uid").unwrap_or_default();
                if uid != actual {
                    return Err(ApiError::conflict_message(format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                    )));
                }
            }
            if let Some(rv) = options.resource_version {
                if rv != old.revision {
                    return Err(ApiError::conflict_message(format!(
                        "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                        old.revision
                    )));
                }
            }
            self.admit_delete(&old.value(), options, dry_run).await?;
            let old_finalizers = finalizers(&old.value());
            let new_finalizers = deletion_finalizers(&old_finalizers, options.propagation);
            let terminating =
                meta(&old.value()).is_some_and(|m| m.contains_key("deletionTimestamp"));
            let result = if !new_finalizers.is_empty() {
                if terminating && new_finalizers == old_finalizers {
                    // Already marked and nothing to change: the object is answered as it is.
                    return Ok(Written {
                        object: old,
                        warnings: vec![],
                        deleted: false,
                        created: false,
                    });
                }
                let mut new = (*old.value()).clone();
                {
                    let m = meta_mut(&mut new);
                    if !terminating {
                        m.insert("deletionTimestamp".into(), json!(now_rfc3339()));
                        // Controllers watching only metadata.generation (Karmada's) must see
                        // the deletion, as with kube-apiserver's markAsDeleting.
                        if let Some(g) = m.get("generation").and_then(Value::as_i64) {
                            if g > 0 {
                                m.insert("generation".into(), json!(g + 1));
                            }
                        }
                    }
                    m.insert("deletionGracePeriodSeconds".into(), json!(0));
                    m.insert("finalizers".into(), json!(new_finalizers));
                }
                if dry_run {
                    return Ok(Written {
                        object: dry_run_object(&old.key, new),
                        warnings: vec![],
                        deleted: false,
                        created: false,
                    });
                }
                self.storage
                    .update(&old.key, new, Some(old.revision))
                    .await
                    .map(|object| Written {
                        object,
                        warnings: vec![],
                        deleted: false,
                        created: false,
                    })
            } else {
                if dry_run {
                    return Ok(Written {
                        object: old,
                        warnings: vec![],
                        deleted: true,
                        created: false,
                    });
                }
                self.storage
                    .delete(&old.key, Some(old.revision))
                    .await
                    .map(|object| Written {
                        object,
                        warnings: vec![],
                        deleted: true,
                        created: false,
                    })
            };
            match result {
                Ok(w) => return Ok(w),
                Err(StorageError::Conflict { .. }) | Err(StorageError::NotFound(_))
                    if attempts < 8 && options.resource_version.is_none() =>
                {
                    continue;
                }
                Err(e) => return Err(storage_error(def, name, e)),
            }
        }
    }

    /// The `autoscaling/v1 Scale` view of an object.
    pub fn scale_of(&self, obj: &StoredObject) -> Result<Value, ApiError> {
        let scale = self
            .def
            .scale
            .as_ref()
            .ok_or_else(ApiError::path_not_found)?;
        let v = &obj.value();
        let spec_replicas = get_path(v, &scale.spec_replicas_path)
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let status_replicas = get_path(v, &scale.status_replicas_path)
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let selector = match &scale.label_selector_path {
            Some(path) => get_path(v, path)
                .and_then(Value::as_str)
                .map(str::to_string),
            None => v.pointer("/spec/selector").map(format_selector_field),
        };
        let m = meta(v).cloned().unwrap_or_default();
        let mut metadata = Map::new();
        for f in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(x) = m.get(f) {
                metadata.insert(f.into(), x.clone());
            }
        }
        let mut status = json!({"replicas": status_replicas});
        if let Some(sel) = selector.filter(|s| !s.is_empty()) {
            status["selector"] = json!(sel);
        }
        Ok(json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": metadata,
            "spec": {"replicas": spec_replicas},
            "status": status,
        }))
    }

    /// Writes a new Scale (from PUT or an already patched Scale) back into the object.
    pub async fn write_scale(
        &self,
        old: &Arc<StoredObject>,
        scale: &Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let def = self.def;
        let name = meta_str(&old.value(), "name")
            .unwrap_or_default()
            .to_string();
        let scale_def = def.scale.as_ref().ok_or_else(ApiError::path_not_found)?;
        let (scale, admission_warnings) = self.admit_scale(old, scale, opts).await?;
        let scale = &scale;
        let replicas = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if replicas < 0 {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                &name,
                vec![Cause::new(
                    "FieldValueInvalid",
                    format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                    "spec.replicas",
                )],
            ));
        }
        if let Some(rv) = meta_str(scale, "resourceVersion").filter(|s| !s.is_empty()) {
            if revision_of(&ResourceVersion::new(rv))? != old.revision {
                return Err(ApiError::conflict(&def.group, &def.plural, &name));
            }
        }
        let mut new = (*old.value()).clone();
        set_path(&mut new, &scale_def.spec_replicas_path, json!(replicas));
        // Admitted above as the Scale it is; the object write itself is not admitted again.
        let inner = Objects {
            admission: None,
            plugins: &[],
            ..self.clone()
        };
        let mut written = inner.write_update(old, new, None, opts, false).await?;
        written.warnings.splice(0..0, admission_warnings);
        Ok(written)
    }

    /// Admission of a `scale` write: webhooks see `autoscaling/v1` Scale objects, as from
    /// kube-apiserver. Returns the (possibly mutated) Scale and the warnings.
    async fn admit_scale(
        &self,
        old: &Arc<StoredObject>,
        scale: &Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        if !self.plugins.is_empty() {
            let old_scale = self.scale_of(old)?;
            self.admit_plugins(
                Operation::Update,
                Some("scale"),
                Some(scale),
                Some(&old_scale),
                opts.dry_run,
            )
            .await?;
        }
        let Some(scope) = self.admission else {
            return Ok((scale.clone(), Vec::new()));
        };
        let old_scale = self.scale_of(old)?;
        let mut attrs = self.admission_attributes(
            Operation::Update,
            Some("scale"),
            Some(scale),
            Some(&old_scale),
            write_options_value(opts),
            opts.dry_run,
        );
        attrs.kind_group = "autoscaling".into();
        attrs.kind_version = "v1".into();
        attrs.kind = "Scale".into();
        let mut warnings = scope.admission.mutate(&mut attrs).await?;
        warnings.extend(scope.admission.validate(&attrs).await?);
        Ok((attrs.object.unwrap_or_else(|| scale.clone()), warnings))
    }
}

/// A resourceVersion in the patch itself is a precondition (no retry then).
impl Patch {
    pub(crate) fn has_precondition(&self) -> bool {
        let body = match self {
            Patch::Merge(v) | Patch::Strategic(v) => v,
            Patch::Apply { body, .. } => body,
            Patch::Json(_) => return false,
        };
        body.pointer("/metadata/resourceVersion")
            .is_some_and(|v| v.is_string())
    }
}

/// A parsed PATCH body.
#[derive(Debug, Clone)]
pub enum Patch {
    Json(Value),
    Merge(Value),
    Strategic(Value),
    Apply { body: Value, force: bool },
}

pub use flotilla_apimachinery::{FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS};

/// `DeleteOptions.propagationPolicy`: what happens to an object's dependents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PropagationPolicy {
    /// Dependents lose their ownerReferences to the object and stay.
    Orphan,
    /// The object goes at once; the garbage collector deletes dependents afterwards.
    Background,
    /// The object stays (being deleted) until dependents that block it are gone.
    Foreground,
}

/// The parts of `DeleteOptions` the server acts on.
#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub uid: Option<String>,
    pub resource_version: Option<Revision>,
    /// The policy asked for (`propagationPolicy`, or `orphanDependents` true = Orphan and
    /// false = Background); `None` keeps the object's own GC finalizers, else Background.
    pub propagation: Option<PropagationPolicy>,
    /// `dryRun: ["All"]` in the body (kube-rs and `kubectl delete --dry-run=server` send it
    /// there rather than in the query).
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Parses a `DeleteOptions` body (may be empty) plus query parameters.
    pub fn parse(body: Option<&Value>, propagation_query: Option<&str>) -> Result<Self, ApiError> {
        let mut opts = DeleteOptions::default();
        let mut policy = propagation_query.map(str::to_string);
        let mut orphan_dependents = None;
        if let Some(b) = body {
            if let Some(kind) = b.get("kind").and_then(Value::as_str) {
                if kind != "DeleteOptions" {
                    return Err(ApiError::bad_request(format!(
                        "expected DeleteOptions in the request body, got {kind}"
                    )));
                }
            }
            if let Some(p) = b.get("preconditions") {
                opts.uid = p.get("uid").and_then(Value::as_str).map(str::to_string);
                if let Some(rv) = p.get("resourceVersion").and_then(Value::as_str) {
                    opts.resource_version = Some(revision_of(&ResourceVersion::new(rv))?);
                }
            }
            if let Some(p) = b.get("propagationPolicy").and_then(Value::as_str) {
                policy = Some(p.to_string());
            }
            orphan_dependents = b.get("orphanDependents").and_then(Value::as_bool);
            if let Some(modes) = b.get("dryRun").and_then(Value::as_array) {
                for m in modes {
                    if m.as_str() != Some("All") {
                        return Err(ApiError::bad_request(format!(
                            "dryRun must be \"All\", got {m}"
                        )));
                    }
                }
                opts.dry_run = !modes.is_empty();
            }
        }
        let from_policy = match policy.as_deref() {
            None => None,
            Some("Background") => Some(PropagationPolicy::Background),
            Some("Orphan") => Some(PropagationPolicy::Orphan),
            Some("Foreground") => Some(PropagationPolicy::Foreground),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "propagationPolicy must be one of Orphan, Background or Foreground, got {other:?}"
                )));
            }
        };
        opts.propagation = match (orphan_dependents, from_policy) {
            // kube-apiserver's ValidateDeleteOptions: the deprecated field and the policy
            // may not both be given.
            (Some(o), Some(_)) => {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "DeleteOptions",
                    "",
                    vec![Cause::new(
                        "FieldValueInvalid",
                        format!(
                            "Invalid value: {o}: OrphanDependents and DeletionPropagation cannot be both set"
                        ),
                        "orphanDependents",
                    )],
                ));
            }
            (Some(true), None) => Some(PropagationPolicy::Orphan),
            (Some(false), None) => Some(PropagationPolicy::Background),
            (None, p) => p,
        };
        Ok(opts)
    }
}

/// The finalizers an object has once deleted with `policy`: the garbage collector's two are
/// replaced by the one the policy asks for (none for Background); without a policy the
/// object's own stand (Background is every served kind's default). Other finalizers keep
/// their order.
fn deletion_finalizers(current: &[String], policy: Option<PropagationPolicy>) -> Vec<String> {
    let Some(policy) = policy else {
        return current.to_vec();
    };
    let mut out: Vec<String> = current
        .iter()
        .filter(|f| *f != FINALIZER_ORPHAN_DEPENDENTS && *f != FINALIZER_DELETE_DEPENDENTS)
        .cloned()
        .collect();
    match policy {
        PropagationPolicy::Orphan => out.push(FINALIZER_ORPHAN_DEPENDENTS.into()),
        PropagationPolicy::Foreground => out.push(FINALIZER_DELETE_DEPENDENTS.into()),
        PropagationPolicy::Background => {}
    }
    // Only a change of the set counts: reordering alone must not rewrite the object.
    let mut a = out.clone();
    let mut b = current.to_vec();
    a.sort();
    b.sort();
    if a == b { current.to_vec() } else { out }
}

fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn dry_run_object(key: &str, value: Value) -> Arc<StoredObject> {
    let revision = meta_str(&value, "resourceVersion")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Arc::new(StoredObject::new(key, revision, value))
}

fn apply_error(def: &ResourceDef, name: &str, err: merge::ApplyError) -> ApiError {
    match err {
        merge::ApplyError::Conflicts(conflicts) => {
            let causes = conflicts
                .iter()
                .map(|c| {
                    Cause::new(
                        "FieldManagerConflict",
                        format!("conflict with {}", c.manager_description()),
                        c.field.clone(),
                    )
                })
                .collect();
            let mut e = ApiError::conflict_message(merge::conflicts_message(&conflicts))
                .with_causes(causes);
            e.name = Some(name.to_string());
            e.group = Some(def.group.clone());
            e.kind = Some(def.plural.clone());
            e
        }
        merge::ApplyError::Invalid(msg) => ApiError::bad_request(msg),
    }
}

fn unsupported_strategic(def: &ResourceDef) -> ApiError {
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (strategic merge patch is not supported for {})",
        flotilla_apimachinery::status::qualified_resource(&def.group, &def.plural)
    ))
}

/// Reads a dot path like `.spec.replicas`.
pub fn get_path<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(v, |cur, seg| cur.get(seg))
}

fn set_path(v: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let mut cur = v;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        if i == segs.len() - 1 {
            map.insert(seg.to_string(), value);
            return;
        }
        cur = map.entry(seg.to_string()).or_insert_with(|| json!({}));
    }
}

/// Makes `path` (a dot path) of `to` what it is in `from`: copied when present there, removed
/// when absent.
fn copy_path(from: &Value, to: &mut Value, path: &str) {
    match get_path(from, path) {
        Some(v) => set_path(to, path, v.clone()),
        None => remove_path(to, path),
    }
}

fn remove_path(v: &mut Value, path: &str) {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let Some((last, parents)) = segs.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in parents {
        match cur.get_mut(*seg) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(map) = cur.as_object_mut() {
        map.remove(*last);
    }
}

/// A `spec.selector` as a string: a `LabelSelector` object, or the plain label map of a
/// ReplicationController (`{"app": "web"}` gives `app=web`).
fn format_selector_field(sel: &Value) -> String {
    let plain_map = sel.as_object().is_some_and(|m| {
        !m.contains_key("matchLabels")
            && !m.contains_key("matchExpressions")
            && m.values().all(Value::is_string)
    });
    if !plain_map {
        return format_label_selector(sel);
    }
    let mut pairs: Vec<String> = sel
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.FormatLabelSelector`: `app=web,tier in (a,b)`.
pub fn format_label_selector(sel: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(ml) = sel.get("matchLabels").and_then(Value::as_object) {
        let mut keys: Vec<&String> = ml.keys().collect();
        keys.sort();
        for k in keys {
            parts.push(format!("{k}={}", ml[k].as_str().unwrap_or_default()));
        }
    }
    if let Some(exprs) = sel.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            match e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "In" => parts.push(format!("{key} in ({})", values.join(","))),
                "NotIn" => parts.push(format!("{key} notin ({})", values.join(","))),
                "Exists" => parts.push(key.to_string()),
                "DoesNotExist" => parts.push(format!("!{key}")),
                _ => {}
            }
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod delete_tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn policies_set_the_gc_finalizers() {
        use PropagationPolicy::*;
        let none: Vec<String> = vec![];
        assert_eq!(deletion_finalizers(&none, None), none);
        assert_eq!(deletion_finalizers(&none, Some(Background)), none);
        assert_eq!(
            deletion_finalizers(&none, Some(Orphan)),
            strings(&["orphan"])
        );
        assert_eq!(
            deletion_finalizers(&strings(&["a"]), Some(Foreground)),
            strings(&["a", "foregroundDeletion"])
        );
        // A second delete switches policies; Background drops the GC's finalizers.
        assert_eq!(
            deletion_finalizers(&strings(&["foregroundDeletion", "a"]), Some(Orphan)),
            strings(&["a", "orphan"])
        );
        assert_eq!(
            deletion_finalizers(&strings(&["foregroundDeletion"]), Some(Background)),
            none
        );
        // Without a policy the object's own finalizers decide.
        assert_eq!(
            deletion_finalizers(&strings(&["orphan"]), None),
            strings(&["orphan"])
        );
        // Unchanged sets keep their order.
        assert_eq!(
            deletion_finalizers(&strings(&["orphan", "a"]), Some(Orphan)),
            strings(&["orphan", "a"])
        );
    }

    #[test]
    fn parses_policies_and_the_deprecated_field() {
        let p = |body: Value, q: Option<&str>| DeleteOptions::parse(Some(&body), q);
        assert_eq!(p(json!({}), None).unwrap().propagation, None);
        assert_eq!(
            p(json!({"propagationPolicy": "Foreground"}), None)
                .unwrap()
                .propagation,
            Some(PropagationPolicy::Foreground)
        );
        assert_eq!(
            p(json!({}), Some("Orphan")).unwrap().propagation,
            Some(PropagationPolicy::Orphan)
        );
        assert_eq!(
            p(json!({"orphanDependents": true}), None)
                .unwrap()
                .propagation,
            Some(PropagationPolicy::Orphan)
        );
        assert_eq!(
            p(json!({"orphanDependents": false}), None)
                .unwrap()
                .propagation,
            Some(PropagationPolicy::Background)
        );
        let both = p(
            json!({"orphanDependents": false, "propagationPolicy": "Orphan"}),
            None,
        )
        .unwrap_err();
        assert_eq!(both.code, 422);
        assert_eq!(p(json!({}), Some("Sometimes")).unwrap_err().code, 400);
        assert_eq!(p(json!({"kind": "Pod"}), None).unwrap_err().code, 400);
        assert!(p(json!({"dryRun": ["All"]}), None).unwrap().dry_run);
        assert!(!p(json!({"dryRun": []}), None).unwrap().dry_run);
        assert_eq!(p(json!({"dryRun": ["Some"]}), None).unwrap_err().code, 400);
    }
}
