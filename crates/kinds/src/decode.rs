//! Decoding a JSON object into its k8s-openapi type while noting every field the type does not
//! know (for `fieldValidation=Strict|Warn`) and, on failure, where in the object the bad value is.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::KindsError;

/// A decoded object and the fields its type ignored.
#[derive(Debug)]
pub(crate) struct Decoded<T> {
    pub value: T,
    /// Dot paths such as `spec.template.spec.containers[0].badField`.
    pub unknown_fields: Vec<String>,
}

/// Decodes `value` as `T`. On failure the error names the path of the offending value; the
/// unknown fields seen before the failure are returned alongside it.
pub(crate) fn decode<T: DeserializeOwned>(
    value: &Value,
) -> Result<Decoded<T>, (KindsError, Vec<String>)> {
    let mut unknown = Vec::new();
    let mut track = serde_path_to_error::Track::new();
    let result = {
        let inner = serde_path_to_error::Deserializer::new(value, &mut track);
        serde_ignored::deserialize(inner, |path| unknown.push(ignored_path(&path)))
    };
    match result {
        Ok(value) => Ok(Decoded {
            value,
            unknown_fields: unknown,
        }),
        Err(err) => {
            let path = error_path(&track.path());
            Err((
                KindsError::Decode {
                    path,
                    message: err.to_string(),
                },
                unknown,
            ))
        }
    }
}

/// Spells a `serde_ignored` path as kube does: `a.b[0].c`.
fn ignored_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", ignored_path(parent)),
        Path::Map { parent, key } => {
            let parent = ignored_path(parent);
            if parent.is_empty() {
                key.clone()
            } else {
                format!("{parent}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => ignored_path(parent),
    }
}

/// Spells a `serde_path_to_error` path the same way.
fn error_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_reported_as_paths() {
        let v = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "bogus": 1},
            "spec": {"foo": true, "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y", "badField": 1}]}}}
        });
        let d = decode::<Deployment>(&v).unwrap();
        assert_eq!(
            d.unknown_fields,
            vec![
                "metadata.bogus",
                "spec.foo",
                "spec.template.spec.containers[1].badField"
            ]
        );
        assert_eq!(d.value.metadata.name.as_deref(), Some("web"));
    }

    #[test]
    fn type_errors_name_the_path() {
        let v = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "ports": [{"containerPort": "80"}]}]}}}});
        let (err, _) = decode::<Deployment>(&v).unwrap_err();
        let msg = err.to_string();
        assert!(msg.starts_with("spec.template.spec.containers[0].ports[0].containerPort: invalid type: string \"80\""), "{msg}");
    }
}
