//! Who may point a Cluster at credentials: the aggregated server's compiled-in admission of
//! Cluster writes ([`flotilla_generic_store::builtin_admission`]).
//!
//! A Cluster's `spec.secretRef` and `spec.impersonatorSecretRef` name Secrets on the host
//! whose token the controller-manager and the `proxy` subresource send to `spec.apiEndpoint`
//! (or through `spec.proxyURL`). Were naming a Secret enough, anyone allowed to create or
//! update Clusters could read any Secret: name it, point the endpoint at a listener of their
//! own, and catch the token. So naming a Secret is allowed only to a user who may `get` it
//! (asked of the host's authorizer, as kube's own admission plugins ask theirs), and the same
//! holds for every change of where or how the named credentials are sent: the endpoint, the
//! proxy URL, TLS verification, or the references themselves.
//!
//! | write | needs `get` on |
//! |---|---|
//! | create naming Secrets | each Secret named |
//! | update changing `apiEndpoint`, `proxyURL`, `insecureSkipTLSVerification`, `secretRef` or `impersonatorSecretRef` | each Secret the updated Cluster names |
//! | any other write (labels, taints, status, delete) | nothing |
//!
//! Writes without a user (the server's own) are not checked. The refusal is `403 Forbidden`
//! naming the field, the Secret and the permission missing. Credentials named together with
//! a plain `http://` endpoint are refused by validation ([`crate::cluster::validate`]), for
//! everyone.

use std::sync::Arc;

use flotilla_apimachinery::status::qualified_resource;
use flotilla_apimachinery::{ApiError, Requester};
use flotilla_apiserver::authz::{Authorizer, RequestAttributes};
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::builtin_admission::{Operation, PluginRequest, ValidatingPlugin};

use crate::cluster::{GROUP, SecretReference, connection_changed, secret_references};

/// The Secrets the writer of `request` must be allowed to `get` (see the module docs).
pub fn secrets_to_check(request: &PluginRequest<'_>) -> Vec<SecretReference> {
    if request.def.group != GROUP || request.def.plural != "clusters" {
        return Vec::new();
    }
    if request.subresource.is_some() {
        return Vec::new();
    }
    let Some(new) = request.object else {
        return Vec::new();
    };
    match (request.operation, request.old_object) {
        (Operation::Create, _) => secret_references(new),
        (Operation::Update, Some(old)) if connection_changed(old, new) => secret_references(new),
        _ => Vec::new(),
    }
}

/// Refuses Cluster writes that would send a Secret's credentials somewhere on behalf of a
/// user who may not read that Secret.
pub struct ClusterCredentialsAdmission {
    authorizer: Arc<dyn Authorizer>,
}

impl ClusterCredentialsAdmission {
    /// Checks with `authorizer`: the host's, through which the caller's own RBAC decides.
    pub fn new(authorizer: Arc<dyn Authorizer>) -> Self {
        Self { authorizer }
    }
}

fn user_of(requester: &Requester<'_>) -> UserInfo {
    UserInfo {
        name: requester.name.to_string(),
        uid: requester.uid.to_string(),
        groups: requester.groups.to_vec(),
        extra: requester.extra.clone(),
    }
}

/// The refusal: which field names which Secret, and the permission the writer lacks.
fn refusal(cluster: &str, user: &str, secret: &SecretReference) -> ApiError {
    let resource = qualified_resource(GROUP, "clusters");
    ApiError::forbidden(format!(
        "{resource} \"{cluster}\" is forbidden: spec.{field} names the Secret \
         \"{namespace}/{name}\", and user \"{user}\" may not get it: naming a Secret in a \
         Cluster requires permission to get that Secret (get secrets \"{name}\" in the \
         namespace \"{namespace}\"), since the Cluster's endpoint receives its credentials",
        field = secret.field,
        namespace = secret.namespace,
        name = secret.name,
    ))
    .with_details(GROUP, "clusters", cluster)
}

#[async_trait::async_trait]
impl ValidatingPlugin for ClusterCredentialsAdmission {
    fn name(&self) -> &str {
        "ClusterCredentials"
    }

    async fn validate(&self, request: &PluginRequest<'_>) -> Result<(), ApiError> {
        let Some(requester) = request.user else {
            return Ok(());
        };
        let secrets = secrets_to_check(request);
        if secrets.is_empty() {
            return Ok(());
        }
        let user = user_of(&requester);
        for secret in &secrets {
            let attrs = RequestAttributes {
                verb: "get".into(),
                resource_request: true,
                api_group: String::new(),
                resource: "secrets".into(),
                subresource: String::new(),
                namespace: secret.namespace.clone(),
                name: secret.name.clone(),
                path: format!(
                    "/api/v1/namespaces/{}/secrets/{}",
                    secret.namespace, secret.name
                ),
            };
            match self.authorizer.authorize(&user, &attrs).await {
                Ok(()) => {}
                // Denied: say which reference the writer may not make.
                Err(e) if e.code == 403 => {
                    tracing::info!(
                        user = %user.name,
                        cluster = request.name(),
                        field = secret.field,
                        secret = %format!("{}/{}", secret.namespace, secret.name),
                        "refused a Cluster naming a Secret its writer may not get"
                    );
                    return Err(refusal(request.name(), &user.name, secret));
                }
                // The authorizer could not decide (the host is down): fail closed.
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_apimachinery::ResourceDef;
    use flotilla_names::karmada::NAMESPACE_KARMADA_CLUSTER as NS;
    use parking_lot::Mutex;
    use serde_json::{Value, json};

    /// Allows `get` on the Secrets listed, denies the rest, and records what it was asked.
    struct Secrets {
        readable: Vec<(&'static str, &'static str)>,
        asked: Mutex<Vec<String>>,
    }

    #[async_trait::async_trait]
    impl Authorizer for Secrets {
        async fn authorize(&self, user: &UserInfo, a: &RequestAttributes) -> Result<(), ApiError> {
            self.asked.lock().push(format!(
                "{} {} {} {}/{}",
                user.name, a.verb, a.resource, a.namespace, a.name
            ));
            if self
                .readable
                .iter()
                .any(|(ns, name)| a.namespace == *ns && a.name == *name)
            {
                Ok(())
            } else {
                Err(ApiError::forbidden("denied"))
            }
        }
    }

    fn def() -> ResourceDef {
        ResourceDef::new(GROUP, "v1alpha1", "Cluster", "clusters", false)
    }

    fn cluster(spec: Value) -> Value {
        json!({"metadata": {"name": "edge"}, "spec": spec})
    }

    fn joined() -> Value {
        cluster(
            json!({"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:6443",
            "secretRef": {"namespace": NS, "name": "edge"}}),
        )
    }

    fn check(
        readable: Vec<(&'static str, &'static str)>,
        operation: Operation,
        subresource: Option<&str>,
        new: &Value,
        old: Option<&Value>,
    ) -> (Result<(), ApiError>, Vec<String>) {
        let plugin_authz = Arc::new(Secrets {
            readable,
            asked: Mutex::new(Vec::new()),
        });
        let plugin = ClusterCredentialsAdmission::new(plugin_authz.clone());
        let groups = vec!["system:authenticated".to_string()];
        let extra = Default::default();
        let def = def();
        let request = PluginRequest {
            operation,
            def: &def,
            subresource,
            object: Some(new),
            old_object: old,
            dry_run: false,
            user: Some(Requester {
                name: "bob",
                uid: "",
                groups: &groups,
                extra: &extra,
            }),
        };
        let result = futures::executor::block_on(plugin.validate(&request));
        let asked = plugin_authz.asked.lock().clone();
        (result, asked)
    }

    #[test]
    fn naming_a_secret_on_create_needs_get_on_it() {
        let (result, asked) = check(vec![], Operation::Create, None, &joined(), None);
        let err = result.unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
        assert!(
            err.message
                .contains("spec.secretRef names the Secret \"karmada-cluster/edge\"")
                && err.message.contains("user \"bob\" may not get it"),
            "{}",
            err.message
        );
        assert_eq!(asked, ["bob get secrets karmada-cluster/edge"]);
        let (result, _) = check(vec![(NS, "edge")], Operation::Create, None, &joined(), None);
        assert!(result.is_ok());
    }

    #[test]
    fn every_reference_is_checked_the_impersonator_one_too() {
        let mut both = joined();
        both["spec"]["impersonatorSecretRef"] = json!({"namespace": "tenant", "name": "sa-token"});
        let (result, asked) = check(vec![(NS, "edge")], Operation::Create, None, &both, None);
        let err = result.unwrap_err();
        assert!(
            err.message
                .contains("spec.impersonatorSecretRef names the Secret \"tenant/sa-token\""),
            "{}",
            err.message
        );
        assert_eq!(asked.len(), 2);
    }

    #[test]
    fn a_cluster_without_credentials_needs_nothing() {
        let bare = cluster(json!({"syncMode": "Pull"}));
        let (result, asked) = check(vec![], Operation::Create, None, &bare, None);
        assert!(result.is_ok());
        assert!(asked.is_empty());
    }

    #[test]
    fn changing_where_credentials_go_needs_get_on_them() {
        let old = joined();
        for (field, value) in [
            ("apiEndpoint", json!("https://127.0.0.9:1")),
            ("proxyURL", json!("http://127.0.0.9:3128")),
            ("insecureSkipTLSVerification", json!(true)),
            ("secretRef", json!({"namespace": NS, "name": "other"})),
            (
                "impersonatorSecretRef",
                json!({"namespace": NS, "name": "edge"}),
            ),
        ] {
            let mut new = old.clone();
            new["spec"][field] = value;
            let (result, asked) = check(vec![], Operation::Update, None, &new, Some(&old));
            assert_eq!(result.map_err(|e| e.code), Err(403), "{field}");
            assert!(!asked.is_empty(), "{field}");
        }
    }

    #[test]
    fn other_updates_and_subresources_need_nothing() {
        let old = joined();
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"tier": "edge"});
        new["spec"]["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
        // Unset and empty are the same setting.
        new["spec"]["proxyURL"] = json!("");
        new["spec"]["insecureSkipTLSVerification"] = json!(false);
        let (result, asked) = check(vec![], Operation::Update, None, &new, Some(&old));
        assert!(result.is_ok());
        assert!(asked.is_empty());
        let mut moved = old.clone();
        moved["spec"]["apiEndpoint"] = json!("https://127.0.0.9:1");
        let (result, asked) = check(
            vec![],
            Operation::Update,
            Some("status"),
            &moved,
            Some(&old),
        );
        assert!(result.is_ok() && asked.is_empty());
        // Removing the credentials sends nothing anywhere.
        let mut removed = moved.clone();
        removed["spec"]
            .as_object_mut()
            .map(|spec| spec.remove("secretRef"));
        let (result, asked) = check(vec![], Operation::Update, None, &removed, Some(&old));
        assert!(result.is_ok() && asked.is_empty());
    }

    #[test]
    fn the_servers_own_writes_are_not_checked() {
        let plugin = ClusterCredentialsAdmission::new(Arc::new(Secrets {
            readable: vec![],
            asked: Mutex::new(Vec::new()),
        }));
        let def = def();
        let new = joined();
        let request = PluginRequest {
            operation: Operation::Create,
            def: &def,
            subresource: None,
            object: Some(&new),
            old_object: None,
            dry_run: false,
            user: None,
        };
        assert!(futures::executor::block_on(plugin.validate(&request)).is_ok());
    }
}
