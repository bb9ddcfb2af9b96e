//! API errors and their wire form, the `meta.k8s.io/v1 Status` object (the shape kubectl
//! parses: `kind`/`apiVersion` are required or it prints generic text).

use serde_json::{Value, json};

/// One field-level cause of an error (`details.causes[]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldManagerConflict`, ...
    pub reason: String,
    pub message: String,
    /// A field path such as `spec.replicas`.
    pub field: String,
}

impl Cause {
    pub fn new(
        reason: impl Into<String>,
        message: impl Into<String>,
        field: impl Into<String>,
    ) -> Self {
        Self {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }
    }
}

/// An error answered as a `Status`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    /// The `StatusReason`: `NotFound`, `AlreadyExists`, `Conflict`, `Invalid`, ...
    pub reason: String,
    pub message: String,
    /// `details.name`
    pub name: Option<String>,
    /// `details.group`
    pub group: Option<String>,
    /// `details.kind` (kube-apiserver puts the resource plural here)
    pub kind: Option<String>,
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`
    pub retry_after_seconds: Option<u32>,
}

/// `deployments.apps` or `configmaps` (core group): how kube-apiserver names a resource in messages.
pub fn qualified_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    pub fn new(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.to_string(),
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after_seconds: None,
        }
    }

    /// Adds `details` naming the object the error is about.
    pub fn with_details(mut self, group: &str, resource: &str, name: &str) -> Self {
        self.group = Some(group.to_string());
        self.kind = Some(resource.to_string());
        self.name = Some(name.to_string());
        self
    }

    pub fn with_causes(mut self, causes: Vec<Cause>) -> Self {
        self.causes = causes;
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(401, "Unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(403, "Forbidden", message)
    }
    /// `404 NotFound` for an object: `deployments.apps "web" not found`.
    pub fn not_found(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!(
                "{} \"{name}\" not found",
                qualified_resource(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }
    /// `404 NotFound` for a path that serves nothing.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }
    pub fn not_acceptable(message: impl Into<String>) -> Self {
        Self::new(406, "NotAcceptable", message)
    }
    pub fn already_exists(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "AlreadyExists",
            format!(
                "{} \"{name}\" already exists",
                qualified_resource(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }
    /// `409 Conflict` for a stale resourceVersion.
    pub fn conflict(group: &str, resource: &str, name: &str) -> Self {
        Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                qualified_resource(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }
    /// `409 Conflict` with a custom message (e.g. field manager conflicts).
    pub fn conflict_message(message: impl Into<String>) -> Self {
        Self::new(409, "Conflict", message)
    }
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, "Gone", message)
    }
    /// `410 Expired`: a resourceVersion older than the retained history.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }
    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(413, "RequestEntityTooLarge", message)
    }
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }
    /// `422 Invalid`: `The Deployment "web" is invalid: spec.replicas: Invalid value: ...`.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        let detail = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect::<Vec<_>>();
        let detail = if detail.len() == 1 {
            detail[0].clone()
        } else {
            format!("[{}]", detail.join(", "))
        };
        let mut e = Self::new(
            422,
            "Invalid",
            format!(
                "{} \"{name}\" is invalid: {detail}",
                if group.is_empty() {
                    kind.to_string()
                } else {
                    format!("{kind}.{group}")
                }
            ),
        );
        e.group = Some(group.to_string());
        e.kind = Some(kind.to_string());
        e.name = Some(name.to_string());
        e.causes = causes;
        e
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }
    pub fn service_unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, "Timeout", message)
    }

    /// The `Status` object as sent on the wire.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        let mut details = serde_json::Map::new();
        if let Some(name) = &self.name {
            details.insert("name".into(), json!(name));
        }
        if let Some(group) = &self.group {
            details.insert("group".into(), json!(group));
        }
        if let Some(kind) = &self.kind {
            details.insert("kind".into(), json!(kind));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(secs) = self.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(secs));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

impl ApiError {
    /// The error a `Status` body answered with HTTP `code` says (what another API server
    /// refused with, passed on); a body that is no `Status` becomes its text, shortened.
    pub fn from_status(code: u16, body: &[u8]) -> Self {
        let Ok(status) = serde_json::from_slice::<Value>(body) else {
            let text: String = String::from_utf8_lossy(body).chars().take(200).collect();
            return Self::new(code, "Unknown", text);
        };
        let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
        let mut e = Self::new(
            code,
            &text(&status, "reason").unwrap_or_else(|| "Unknown".into()),
            text(&status, "message").unwrap_or_default(),
        );
        if let Some(details) = status.get("details") {
            e.name = text(details, "name");
            e.group = text(details, "group");
            e.kind = text(details, "kind");
            e.retry_after_seconds = details
                .get("retryAfterSeconds")
                .and_then(Value::as_u64)
                .and_then(|s| u32::try_from(s).ok());
            e.causes = details
                .get("causes")
                .and_then(Value::as_array)
                .map(|causes| {
                    causes
                        .iter()
                        .map(|c| {
                            Cause::new(
                                text(c, "reason").unwrap_or_default(),
                                text(c, "message").unwrap_or_default(),
                                text(c, "field").unwrap_or_default(),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
        }
        e
    }
}

/// A successful `Status` (as returned by some deletes).
pub fn success_status(details: Value) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

/// An error and its causes, joined with ": " (as Go's wrapped errors print): the message of a
/// Status or a log line that names why a call to another server failed.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_status_body_reads_back_as_the_error_it_encodes() {
        let mut e =
            ApiError::not_found("apps", "deployments", "web").with_causes(vec![Cause::new(
                "FieldValueInvalid",
                "bad",
                "spec.replicas",
            )]);
        e.retry_after_seconds = Some(3);
        let body = serde_json::to_vec(&e.to_status()).unwrap();
        assert_eq!(ApiError::from_status(404, &body), e);
        let plain = ApiError::from_status(502, b"upstream went away");
        assert_eq!(
            (plain.code, plain.message.as_str()),
            (502, "upstream went away")
        );
    }
    use super::*;

    #[test]
    fn not_found_names_the_qualified_resource() {
        let e = ApiError::not_found("apps", "deployments", "web");
        let s = e.to_status();
        assert_eq!(s["kind"], "Status");
        assert_eq!(s["apiVersion"], "v1");
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["message"], "deployments.apps \"web\" not found");
        assert_eq!(s["details"]["kind"], "deployments");
        let core = ApiError::not_found("", "configmaps", "x");
        assert_eq!(core.message, "configmaps \"x\" not found");
    }

    #[test]
    fn invalid_lists_causes() {
        let e = ApiError::invalid(
            "apps",
            "Deployment",
            "bad",
            vec![Cause::new(
                "FieldValueInvalid",
                "Invalid value: -1: must be greater than or equal to 0",
                "spec.replicas",
            )],
        );
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Deployment.apps \"bad\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            e.to_status()["details"]["causes"][0]["field"],
            "spec.replicas"
        );
    }
}
