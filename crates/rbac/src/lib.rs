//! Kubernetes RBAC authorization for the Flotilla API servers, with no IO: the server feeds
//! Roles, ClusterRoles, RoleBindings and ClusterRoleBindings (`rbac.authorization.k8s.io/v1`
//! JSON) into an [`RbacAuthorizer`] as it sees writes and watch events, and asks it about each
//! request.
//!
//! - [`authorizer`]: the index of roles and bindings and the decision ([`RbacAuthorizer`]);
//! - [`rule`]: policy rules, request matching and the escalation ("covers") check;
//! - [`message`]: the texts of kube-apiserver's 403 answers;
//! - [`bootstrap`]: the default ClusterRoles and ClusterRoleBindings created at start.

pub mod authorizer;
pub mod bootstrap;
pub mod message;
pub mod rule;

pub use authorizer::{RbacAuthorizer, SubjectRules};
pub use bootstrap::{
    AGGREGATED_APISERVER_USER, CONTROLLER_MANAGER_USER, SCHEDULER_USER, bootstrap_policy,
    component_roles,
};
pub use message::{escalation_message, forbidden_error, forbidden_message};
pub use rule::{PolicyRule, uncovered};

/// The group whose members may do anything, whatever the policy says.
pub const SUPERUSER_GROUP: &str = "system:masters";

/// Errors for objects the index cannot take in.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RbacError {
    #[error("unknown RBAC kind {0:?}")]
    UnknownKind(String),
    #[error("{kind} has no metadata.name")]
    MissingName { kind: String },
    #[error("{kind} {name:?} has no metadata.namespace")]
    MissingNamespace { kind: String, name: String },
    #[error("invalid RBAC object: {0}")]
    Invalid(String),
}

/// Who is asking.
#[derive(Debug, Clone, Copy)]
pub struct UserRef<'a> {
    pub name: &'a str,
    pub groups: &'a [String],
}

impl UserRef<'_> {
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The request being authorized (kube's `authorizer.Attributes`).
#[derive(Debug, Clone, Copy)]
pub struct Attributes<'a> {
    pub user: UserRef<'a>,
    /// `get list watch create update patch delete deletecollection impersonate bind escalate`
    /// (or any custom verb); for non-resource requests the lowercase HTTP method.
    pub verb: &'a str,
    pub resource_request: bool,
    pub api_group: &'a str,
    pub resource: &'a str,
    pub subresource: &'a str,
    /// `""` for cluster-scoped resources and requests across all namespaces.
    pub namespace: &'a str,
    pub name: &'a str,
    /// For non-resource requests: `/healthz`, `/api`, `/version`, `/metrics`, ...
    pub path: &'a str,
}

/// The answer. kube's "no opinion" is folded into `Deny`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// `reason` names the binding that allowed it, e.g.
    /// `RBAC: allowed by ClusterRoleBinding "x" of ClusterRole "view" to User "alice"`.
    Allow { reason: String },
    /// `reason` is empty unless evaluation met problems (bindings to missing roles), as in
    /// kube: `RBAC: clusterrole.rbac.authorization.k8s.io "x" not found`. kube-apiserver
    /// appends a non-empty reason to the 403 message after `": "` ([`forbidden_error`] does).
    Deny { reason: String },
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow { .. })
    }

    pub fn reason(&self) -> &str {
        match self {
            Decision::Allow { reason } | Decision::Deny { reason } => reason,
        }
    }
}
