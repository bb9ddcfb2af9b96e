//! The review APIs extension servers and `kubectl auth` use: authorization.k8s.io/v1
//! SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectAccessReview,
//! SelfSubjectRulesReview, and authentication.k8s.io/v1 TokenReview (any token the server's
//! authenticators accept: static and service-account tokens, for the review's audiences) and
//! SelfSubjectReview.
//! They are virtual: a `create` computes the `status` and nothing is stored.

use std::collections::BTreeMap;
use std::sync::{Arc, Weak};

use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_rbac::{Decision, UserRef};
use http::StatusCode;
use serde_json::{Value, json};

use crate::authz::RequestAttributes;
use crate::state::ApiServer;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::rest::{NewObject, Object, ObjectAnswer, RestStorage};

/// The REST storage of the review resources: `create` computes the review with the
/// server's RBAC index (access reviews) and token authenticators (TokenReview).
pub struct ReviewStorage {
    /// Weak: the server holds this storage (and its authenticators hold the registry).
    server: Weak<ApiServer>,
}

impl ReviewStorage {
    /// Serves every review resource `server` serves.
    pub(crate) fn install(server: &Arc<ApiServer>) {
        let storage: Arc<dyn RestStorage> = Arc::new(Self {
            server: Arc::downgrade(server),
        });
        for def in review_resources() {
            if server
                .registry
                .any_version(&def.group, &def.plural)
                .is_some()
            {
                server
                    .registry
                    .set_storage(&def.group, &def.plural, storage.clone());
            }
        }
    }
}

#[async_trait::async_trait]
impl RestStorage for ReviewStorage {
    async fn create(
        &self,
        ctx: &RequestContext,
        body: NewObject,
    ) -> Result<ObjectAnswer, ApiError> {
        if ctx.path.name.is_some() || ctx.path.subresource.is_some() {
            return Err(ApiError::method_not_allowed(
                "POST is only allowed on collections",
            ));
        }
        // Repeated keys are not checked here (the last value wins).
        let obj = body.value;
        let Some(server) = self.server.upgrade() else {
            return Err(ApiError::service_unavailable("the server is shutting down"));
        };
        review(&server, ctx, obj).await
    }
}

/// The review resources, for registration.
pub fn review_resources() -> Vec<ResourceDef> {
    let review = |group: &str, kind: &str, plural: &str, namespaced: bool| {
        let mut d = ResourceDef::new(group, "v1", kind, plural, namespaced);
        d.create_only = true;
        d
    };
    vec![
        review(
            "authorization.k8s.io",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        ),
        review(
            "authorization.k8s.io",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
        ),
        review(
            "authorization.k8s.io",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
        ),
        review(
            "authentication.k8s.io",
            "TokenReview",
            "tokenreviews",
            false,
        ),
        review(
            "authentication.k8s.io",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
        ),
    ]
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn extra_of(v: Option<&Value>) -> BTreeMap<String, Vec<String>> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, vals)| (k.clone(), strings(Some(vals))))
                .collect()
        })
        .unwrap_or_default()
}

fn user_json(u: &UserInfo) -> Value {
    let mut v = json!({"username": u.name, "groups": u.groups});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    if !u.extra.is_empty() {
        v["extra"] = json!(u.extra);
    }
    v
}

/// Attributes of an access review's spec.
fn spec_attributes(
    spec: &Value,
    namespace_override: Option<&str>,
) -> Result<RequestAttributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes") {
        let s = |k: &str| {
            r.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        return Ok(RequestAttributes {
            verb: s("verb"),
            resource_request: true,
            api_group: s("group"),
            resource: s("resource"),
            subresource: s("subresource"),
            namespace: namespace_override
                .map(str::to_string)
                .unwrap_or_else(|| s("namespace")),
            name: s("name"),
            path: String::new(),
        });
    }
    if let Some(n) = spec.get("nonResourceAttributes") {
        let s = |k: &str| {
            n.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        return Ok(RequestAttributes {
            verb: s("verb"),
            resource_request: false,
            api_group: String::new(),
            resource: String::new(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            path: s("path"),
        });
    }
    Err(ApiError::invalid(
        "authorization.k8s.io",
        "SubjectAccessReview",
        "",
        vec![flotilla_apimachinery::Cause::new(
            "FieldValueRequired",
            "Required value: exactly one of nonResourceAttributes or resourceAttributes must be specified",
            "spec.resourceAttributes",
        )],
    ))
}

fn decide(
    rbac: Option<&flotilla_rbac::RbacAuthorizer>,
    user: &UserInfo,
    attrs: &RequestAttributes,
) -> Value {
    match rbac {
        None => json!({"allowed": true, "reason": "no authorization is configured"}),
        Some(authz) => match authz.authorize(&attrs.as_rbac(user)) {
            Decision::Allow { reason } => json!({"allowed": true, "reason": reason}),
            Decision::Deny { reason } => json!({"allowed": false, "reason": reason}),
        },
    }
}

async fn review(
    server: &ApiServer,
    ctx: &RequestContext,
    mut body: Value,
) -> Result<ObjectAnswer, ApiError> {
    let spec = body.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match ctx.def.plural.as_str() {
        "subjectaccessreviews" | "localsubjectaccessreviews" => {
            let user = UserInfo {
                name: spec
                    .get("user")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                uid: spec
                    .get("uid")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                groups: strings(spec.get("groups")),
                extra: extra_of(spec.get("extra")),
            };
            if user.name.is_empty() && user.groups.is_empty() {
                return Err(ApiError::invalid(
                    "authorization.k8s.io",
                    &ctx.def.kind,
                    "",
                    vec![flotilla_apimachinery::Cause::new(
                        "FieldValueRequired",
                        "Required value: at least one of user or group must be specified",
                        "spec.user",
                    )],
                ));
            }
            let ns = if ctx.def.namespaced {
                ctx.path.namespace.as_deref()
            } else {
                None
            };
            if let (Some(ns), Some(spec_ns)) = (
                ns,
                spec.pointer("/resourceAttributes/namespace")
                    .and_then(Value::as_str),
            ) {
                if !spec_ns.is_empty() && spec_ns != ns {
                    return Err(ApiError::bad_request(format!(
                        "spec.resourceAttributes.namespace must match the namespace of the request ({ns})"
                    )));
                }
            }
            decide(server.rbac.as_deref(), &user, &spec_attributes(&spec, ns)?)
        }
        "selfsubjectaccessreviews" => decide(
            server.rbac.as_deref(),
            &ctx.user,
            &spec_attributes(&spec, None)?,
        ),
        "selfsubjectrulesreviews" => {
            let ns = spec
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match &server.rbac {
                Some(authz) => authz
                    .rules_for(
                        &UserRef {
                            name: &ctx.user.name,
                            groups: &ctx.user.groups,
                        },
                        ns,
                    )
                    .to_review_status(),
                None => {
                    json!({"resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}], "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}], "incomplete": false})
                }
            }
        }
        "tokenreviews" => {
            let token = spec
                .get("token")
                .and_then(Value::as_str)
                .unwrap_or_default();
            // Empty: the token must be good for this server's own API audiences.
            let audiences = strings(spec.get("audiences"));
            let verdict = match &server.tokens {
                Some(t) if !token.is_empty() => t.authenticate(token, &audiences).await,
                _ => Ok(None),
            };
            match verdict {
                Ok(Some(crate::auth::TokenUser {
                    mut user,
                    audiences,
                })) => {
                    crate::auth::add_authenticated(&mut user);
                    json!({"authenticated": true, "user": user_json(&user), "audiences": audiences})
                }
                Ok(None) => json!({"authenticated": false, "error": "invalid bearer token"}),
                Err(e) => json!({"authenticated": false, "error": e.to_string()}),
            }
        }
        "selfsubjectreviews" => json!({"userInfo": user_json(&ctx.user)}),
        _ => {
            return Err(ApiError::method_not_allowed(
                "this resource only supports create",
            ));
        }
    };
    if let Some(m) = body.as_object_mut() {
        m.insert("apiVersion".into(), json!(ctx.def.api_version()));
        m.insert("kind".into(), json!(ctx.def.kind));
        m.entry("metadata").or_insert_with(|| json!({}));
        m.insert("status".into(), status);
    }
    Ok(ObjectAnswer::new(Object::Built(body), StatusCode::CREATED))
}
