//! Deletion in the generic store: preconditions, finalizers and the garbage collector's
//! propagation policies, graceful marking, DeleteOptions.

use super::*;

impl Objects<'_> {
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
        let precondition_revision = options
            .resource_version
            .as_ref()
            .map(revision_of)
            .transpose()?;
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
            if let Some(rv) = precondition_revision {
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
}

use flotilla_apimachinery::{FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS};

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
    /// `preconditions.resourceVersion`, as given (a storage may translate it first).
    pub resource_version: Option<ResourceVersion>,
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
                    opts.resource_version = Some(ResourceVersion::new(rv));
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
pub(super) fn deletion_finalizers(
    current: &[String],
    policy: Option<PropagationPolicy>,
) -> Vec<String> {
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

pub(super) fn finalizers(obj: &Value) -> Vec<String> {
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
