//! The object rules every write of the generic store applies: create identity, kind and
//! apiVersion, names, defaults, pruning and validation, status filling, generation
//! comparisons, generated names, encoded sizes, and metadata access.

use super::*;

/// After mutating admission of a create: the name and namespace are still the request's.
pub(super) fn check_create_identity(
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
pub(super) fn write_options_value(opts: &WriteOptions) -> Value {
    let mut v = json!({"fieldManager": opts.field_manager});
    if opts.dry_run {
        v["dryRun"] = json!(["All"]);
    }
    v
}

pub(super) fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

pub(super) fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
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
pub(super) fn check_kind(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
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
pub(super) fn check_path_segment_name(def: &ResourceDef, name: &str) -> Result<(), ApiError> {
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
pub(super) fn prune_and_default(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
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
pub(super) fn validate_defaulted(
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
pub(super) fn fill_status(def: &ResourceDef, obj: &mut Value) {
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
pub(super) fn spec_part(obj: &Value) -> Value {
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
pub(super) fn comparable(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
        m.remove("managedFields");
    }
    v
}

pub(super) const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

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

    pub(super) fn suffix(&self) -> String {
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
pub(super) struct ByteCounter {
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
pub(super) fn encoded_size_within(obj: &Value, limit: usize) -> Option<usize> {
    let mut counter = ByteCounter {
        count: 0,
        bound: limit,
    };
    serde_json::to_writer(&mut counter, obj)
        .ok()
        .map(|()| counter.count)
}
