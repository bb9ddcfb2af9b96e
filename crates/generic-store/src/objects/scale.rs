//! The `scale` subresource of the generic store: a Scale read from and written to the
//! kind's replica fields, admitted as kube admits `*/scale`.

use super::*;

impl Objects<'_> {
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
    pub(super) async fn admit_scale(
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
