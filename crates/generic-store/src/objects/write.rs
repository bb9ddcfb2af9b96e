//! The write path of the generic store: create (with generateName), update (with
//! status/spec separation and generation), patch (JSON, merge, strategic) and server-side
//! apply with field ownership, optimistic concurrency and retries.

use super::*;

impl Objects<'_> {
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

    pub(super) async fn create_once(
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
        }
        let name = meta_str(&obj, "name").unwrap_or_default().to_string();
        let mut warnings = self.admit_new(&mut obj, namespace, &name, opts).await?;
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
        warnings.extend(self.validate_new(&mut obj, opts).await?);
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

    pub(super) async fn store_new(
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
    pub(super) async fn write_update(
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
        if def.generation {
            meta_mut(&mut new).insert("generation".into(), json!(old_generation));
        } else {
            meta_mut(&mut new).remove("generation");
        }
        let mut warnings = mutating_warnings;
        warnings.extend(validate_defaulted(
            def,
            &mut new,
            Some(old_value),
            pruned,
            &self.duplicates,
            opts.field_validation,
        )?);
        if def.generation && spec_part(&new) != spec_part(old_value) {
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

    pub(super) fn prepare_apply_body(
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

    /// What every create does to a new object once its name and namespace are set: system
    /// metadata (uid, creationTimestamp, generation 1; no resourceVersion or deletion
    /// fields), the name's path check, no status, defaults, mutating admission (which may not
    /// rename or move it), the kind's own preparation, and validation. Returns the warnings.
    pub(super) async fn admit_new(
        &self,
        obj: &mut Value,
        namespace: Option<&str>,
        name: &str,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        let def = self.def;
        {
            let m = meta_mut(obj);
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(now_rfc3339()));
            if def.generation {
                m.insert("generation".into(), json!(1));
            } else {
                m.remove("generation");
            }
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
        let pruned = prune_and_default(def, obj);
        let mut warnings = self
            .admit_mutating(Operation::Create, None, obj, None, opts)
            .await?;
        if self.admission.is_some() {
            check_create_identity(def, obj, namespace, name)?;
        }
        if let Some(prepare) = &def.prepare_create {
            prepare(obj, self.requester.as_ref());
        }
        warnings.extend(validate_defaulted(
            def,
            obj,
            None,
            pruned,
            &self.duplicates,
            opts.field_validation,
        )?);
        Ok(warnings)
    }

    /// The last steps of a create before it is stored: the status a kind starts with, then
    /// validating admission. Returns the warnings.
    pub(super) async fn validate_new(
        &self,
        obj: &mut Value,
        opts: &WriteOptions,
    ) -> Result<Vec<String>, ApiError> {
        fill_status(self.def, obj);
        self.admit_validating(
            Operation::Create,
            None,
            Some(obj),
            None,
            write_options_value(opts),
            opts.dry_run,
        )
        .await
    }

    /// Server-side apply of an object that does not exist yet: a create owned by the applier.
    pub(super) async fn apply_create(
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
        }
        let mut warnings = self.admit_new(&mut obj, namespace, name, opts).await?;
        warnings.extend(self.validate_new(&mut obj, opts).await?);
        self.store_new(namespace, name, obj, opts, warnings).await
    }

    /// Applies a JSON, merge or strategic merge patch to `current`.
    pub(super) fn apply_patch(
        &self,
        current: &Value,
        patch: &Patch,
        name: &str,
    ) -> Result<Value, ApiError> {
        let def = self.def;
        match patch {
            Patch::Json(ops) => {
                merge::json_patch::apply(current, ops).map_err(|e| json_patch_refused(e, def, name))
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

pub(super) fn dry_run_object(key: &str, value: Value) -> Arc<StoredObject> {
    let revision = meta_str(&value, "resourceVersion")
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Arc::new(StoredObject::new(key, revision, value))
}

pub(super) fn apply_error(def: &ResourceDef, name: &str, err: merge::ApplyError) -> ApiError {
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

pub(super) fn unsupported_strategic(def: &ResourceDef) -> ApiError {
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (strategic merge patch is not supported for {})",
        flotilla_apimachinery::status::qualified_resource(&def.group, &def.plural)
    ))
}

/// A refused JSON patch as kube-apiserver answers it: 400 for a body that is not a list of
/// operations, 413 past the operation bound, else 422 with the library's message as the cause.
pub fn json_patch_refused(
    e: merge::json_patch::JsonPatchError,
    def: &ResourceDef,
    name: &str,
) -> ApiError {
    use merge::json_patch::JsonPatchError;
    match e {
        JsonPatchError::Decode(m) => ApiError::bad_request(m),
        e @ JsonPatchError::TooManyOperations(_) => {
            ApiError::new(413, "RequestEntityTooLarge", e.to_string())
        }
        JsonPatchError::DoesNotApply(m) => ApiError::new(
            422,
            "Invalid",
            format!("the server rejected our request due to an error in our request: {m}"),
        )
        .with_details(&def.group, &def.plural, name)
        // kubectl prints only the causes of an Invalid error that names its object, so the
        // failed operation must be one to be seen.
        .with_causes(vec![Cause::new("UnexpectedServerResponse", m, "")]),
    }
}
