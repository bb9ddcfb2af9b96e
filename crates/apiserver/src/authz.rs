//! Authorization: turns a request into RBAC attributes (resource or non-resource, verb,
//! group, resource, subresource, namespace, name), asks the authorizer, and handles
//! impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`,
//! `Impersonate-Extra-*`; `kubectl --as/--as-group`), which needs the `impersonate` verb.
//! Also the extra permission a partial subresource may ask of its writers (e.g. `approve` on
//! a CSR's signer for `certificatesigningrequests/approval`), checked like kube's admission.

use std::collections::BTreeMap;
use std::sync::Arc;

use flotilla_apimachinery::{ApiError, ResourceDef};
use flotilla_rbac::{Attributes, Decision, RbacAuthorizer, UserRef};
use flotilla_storage::StoredObject;
use http::HeaderMap;

use flotilla_generic_store::UserInfo;
use flotilla_generic_store::request::{RequestInfo, ResourcePath};

/// What is being asked, owned.
#[derive(Debug, Clone)]
pub struct RequestAttributes {
    pub verb: String,
    pub resource_request: bool,
    pub api_group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub path: String,
}

impl RequestAttributes {
    /// The attributes of a request from its parsed info.
    pub fn for_request(info: &RequestInfo) -> Self {
        match info.resource() {
            Some(rp) => {
                // kube-apiserver treats a namespace object's own name as its namespace.
                let namespace = match (
                    &rp.namespace,
                    rp.resource.as_str(),
                    rp.group.as_str(),
                    &rp.name,
                ) {
                    (Some(ns), _, _, _) => ns.clone(),
                    (None, "namespaces", "", Some(name)) => name.clone(),
                    _ => String::new(),
                };
                Self {
                    verb: info.verb.as_str().to_string(),
                    resource_request: true,
                    api_group: rp.group.clone(),
                    resource: rp.resource.clone(),
                    subresource: rp.subresource.clone().unwrap_or_default(),
                    namespace,
                    name: rp.name.clone().unwrap_or_default(),
                    path: info.path.clone(),
                }
            }
            None => Self {
                verb: match info.verb {
                    // Methods no verb covers keep their own name, as kube lowercases them.
                    flotilla_generic_store::request::Verb::Unknown => {
                        info.method.as_str().to_lowercase()
                    }
                    verb => verb.as_str().to_string(),
                },
                resource_request: false,
                api_group: String::new(),
                resource: String::new(),
                subresource: String::new(),
                namespace: String::new(),
                name: String::new(),
                path: info.path.clone(),
            },
        }
    }

    pub fn as_rbac<'a>(&'a self, user: &'a UserInfo) -> Attributes<'a> {
        Attributes {
            user: UserRef {
                name: &user.name,
                groups: &user.groups,
            },
            verb: &self.verb,
            resource_request: self.resource_request,
            api_group: &self.api_group,
            resource: &self.resource,
            subresource: &self.subresource,
            namespace: &self.namespace,
            name: &self.name,
            path: &self.path,
        }
    }
}

/// Decides whether a user may do something; 403 (or another error) when not.
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync {
    async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Result<(), ApiError>;
}

#[async_trait::async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, user: &UserInfo, attrs: &RequestAttributes) -> Result<(), ApiError> {
        authorize(self, user, attrs)
    }
}

/// Allows or answers 403 with kube-apiserver's message.
pub fn authorize(
    authorizer: &RbacAuthorizer,
    user: &UserInfo,
    attrs: &RequestAttributes,
) -> Result<(), ApiError> {
    let rbac = attrs.as_rbac(user);
    match authorizer.authorize(&rbac) {
        Decision::Allow { .. } => Ok(()),
        Decision::Deny { reason } => Err(flotilla_rbac::forbidden_error(&rbac, &reason)),
    }
}

/// For an update or patch through a partial subresource that asks for an extra
/// [`Permission`](flotilla_apimachinery::Permission) (computed from the stored object): allowed
/// when the authorizer allows the verb on any of its names, else 403 naming the object, as
/// kube's admission plugins answer. A missing object passes (the write then answers 404).
///
/// `stored` reads the object; it is called only when the subresource asks for a permission.
pub async fn authorize_subresource_write<F, Fut>(
    authorizer: &dyn Authorizer,
    def: &ResourceDef,
    rp: &ResourcePath,
    user: &UserInfo,
    stored: F,
) -> Result<(), ApiError>
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = Result<Arc<StoredObject>, ApiError>>,
{
    let (Some(sub), Some(name)) = (rp.subresource.as_deref(), rp.name.as_deref()) else {
        return Ok(());
    };
    let Some(permission_of) = def
        .partial_subresources
        .iter()
        .find(|s| s.name == sub)
        .and_then(|s| s.permission.as_ref())
    else {
        return Ok(());
    };
    let stored = match stored().await {
        Ok(o) => o,
        Err(e) if e.code == 404 => return Ok(()),
        Err(e) => return Err(e),
    };
    let Some(permission) = permission_of(&stored.value()) else {
        return Ok(());
    };
    for target in &permission.names {
        let attrs = RequestAttributes {
            verb: permission.verb.clone(),
            resource_request: true,
            api_group: permission.group.clone(),
            resource: permission.resource.clone(),
            subresource: String::new(),
            namespace: String::new(),
            name: target.clone(),
            path: String::new(),
        };
        if authorizer.authorize(user, &attrs).await.is_ok() {
            return Ok(());
        }
    }
    tracing::debug!(user = %user.name, verb = %permission.verb, resource = %permission.resource, names = ?permission.names, "subresource write not permitted");
    Err(ApiError::forbidden(format!(
        "{} {name:?} is forbidden: {}",
        flotilla_apimachinery::status::qualified_resource(&def.group, &def.plural),
        permission.message
    ))
    .with_details(&def.group, &def.plural, name))
}

const IMPERSONATE_USER: &str = "impersonate-user";
const IMPERSONATE_GROUP: &str = "impersonate-group";
const IMPERSONATE_UID: &str = "impersonate-uid";
const IMPERSONATE_EXTRA: &str = "impersonate-extra-";

/// Applies `Impersonate-*` headers: checks the caller may impersonate each part and returns
/// the identity the request then runs as. `None` when the request impersonates nobody.
pub async fn impersonate(
    authorizer: Option<&dyn Authorizer>,
    caller: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    let user = headers
        .get(IMPERSONATE_USER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let groups: Vec<String> = headers
        .get_all(IMPERSONATE_GROUP)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(str::to_string)
        .collect();
    let uid = headers
        .get(IMPERSONATE_UID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in headers.iter() {
        if let Some(key) = k.as_str().strip_prefix(IMPERSONATE_EXTRA) {
            if let Ok(val) = v.to_str() {
                extra
                    .entry(key.to_lowercase())
                    .or_default()
                    .push(val.to_string());
            }
        }
    }
    let Some(name) = user else {
        if !groups.is_empty() || uid.is_some() || !extra.is_empty() {
            return Err(ApiError::bad_request(
                "requested impersonation of groups, uid or extra fields without impersonating a user",
            ));
        }
        return Ok(None);
    };
    let mut checks: Vec<(String, String, String, String)> = Vec::new();
    match name
        .strip_prefix("system:serviceaccount:")
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, sa)) => checks.push((
            "serviceaccounts".into(),
            String::new(),
            ns.into(),
            sa.into(),
        )),
        None => checks.push(("users".into(), String::new(), String::new(), name.clone())),
    }
    for g in &groups {
        checks.push(("groups".into(), String::new(), String::new(), g.clone()));
    }
    if let Some(u) = &uid {
        checks.push((
            "uids".into(),
            "authentication.k8s.io".into(),
            String::new(),
            u.clone(),
        ));
    }
    for (key, values) in &extra {
        for v in values {
            checks.push((
                format!("userextras/{key}"),
                "authentication.k8s.io".into(),
                String::new(),
                v.clone(),
            ));
        }
    }
    if let Some(authz) = authorizer {
        for (resource, group, namespace, target) in checks {
            let (resource, subresource) = match resource.split_once('/') {
                Some((r, s)) => (r.to_string(), s.to_string()),
                None => (resource, String::new()),
            };
            let attrs = RequestAttributes {
                verb: "impersonate".into(),
                resource_request: true,
                api_group: group,
                resource,
                subresource,
                namespace,
                name: target,
                path: String::new(),
            };
            authz.authorize(caller, &attrs).await?;
        }
    }
    let mut as_user = UserInfo {
        name,
        uid: uid.unwrap_or_default(),
        groups,
        extra,
    };
    crate::auth::add_authenticated(&mut as_user);
    Ok(Some(as_user))
}
