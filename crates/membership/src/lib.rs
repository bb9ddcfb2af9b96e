//! Joining member clusters: what `flotillactl join` and `flotilla local-up` do on the host.
//! A member is a Secret in `karmada-cluster` (keys `token`, `caBundle`) and a Push-mode
//! `cluster.karmada.io/v1alpha1` Cluster pointing at it. Writes are server-side applies under
//! one field manager, so joining again converges instead of duplicating.

mod credentials;

pub use credentials::{
    KEY_CA_BUNDLE, KEY_CLIENT_CERT, KEY_CLIENT_KEY, KEY_TOKEN, MemberCredentials,
};

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::json;

pub const CREDENTIALS_NAMESPACE: &str = "karmada-cluster";
const MANAGER: &str = "flotilla-membership";

#[derive(Debug, thiserror::Error)]
pub enum MembershipError {
    #[error("writing {what} for cluster {cluster}")]
    Write {
        what: &'static str,
        cluster: String,
        source: kube::Error,
    },
    #[error("removing {what} of cluster {cluster}")]
    Remove {
        what: &'static str,
        cluster: String,
        source: kube::Error,
    },
    #[error("unusable member credentials")]
    Credentials { source: flotilla_pki::PkiError },
    #[error("cluster {cluster} has neither a token nor a client certificate to authenticate with")]
    NoCredentials { cluster: String },
    #[error("building the client configuration for cluster {cluster}")]
    ClientConfig {
        cluster: String,
        source: kube::config::KubeconfigError,
    },
    #[error("building a client for cluster {cluster}")]
    Client { cluster: String, source: kube::Error },
    #[error("cluster {cluster} has no spec.apiEndpoint")]
    NoEndpoint { cluster: String },
    #[error("cluster {cluster} has no spec.secretRef")]
    NoSecretRef { cluster: String },
    #[error("reading the credentials Secret {namespace}/{name} of cluster {cluster}")]
    ReadSecret {
        cluster: String,
        namespace: String,
        name: String,
        source: kube::Error,
    },
}

/// What the host needs to reach a member.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub api_endpoint: String,
    pub credentials: MemberCredentials,
    pub labels: BTreeMap<String, String>,
    pub region: Option<String>,
    pub zone: Option<String>,
    pub provider: Option<String>,
}

fn clusters(host: &kube::Client) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    );
    Api::all_with(host.clone(), &resource)
}

/// Creates or updates the credentials Secret and the Cluster.
pub async fn join(host: &kube::Client, member: &Member) -> Result<(), MembershipError> {
    let write = |what: &'static str| {
        let cluster = member.name.clone();
        move |source| MembershipError::Write {
            what,
            cluster,
            source,
        }
    };
    let params = PatchParams::apply(MANAGER).force();
    let namespaces: Api<Namespace> = Api::all(host.clone());
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": CREDENTIALS_NAMESPACE}});
    namespaces
        .patch(CREDENTIALS_NAMESPACE, &params, &Patch::Apply(ns))
        .await
        .map_err(write("the credentials namespace"))?;
    let secrets: Api<Secret> = Api::namespaced(host.clone(), CREDENTIALS_NAMESPACE);
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(member.name.clone()),
            namespace: Some(CREDENTIALS_NAMESPACE.into()),
            ..Default::default()
        },
        data: Some(member.credentials.secret_data()),
        ..Default::default()
    };
    let mut secret_body = serde_json::to_value(&secret).map_err(|e| MembershipError::Write {
        what: "the credentials Secret",
        cluster: member.name.clone(),
        source: kube::Error::SerdeError(e),
    })?;
    secret_body["apiVersion"] = json!("v1");
    secret_body["kind"] = json!("Secret");
    secrets
        .patch(&member.name, &params, &Patch::Apply(secret_body))
        .await
        .map_err(write("the credentials Secret"))?;
    let mut spec = json!({
        "syncMode": "Push",
        "apiEndpoint": member.api_endpoint,
        "secretRef": {"namespace": CREDENTIALS_NAMESPACE, "name": member.name},
    });
    for (key, value) in [
        ("region", &member.region),
        ("zone", &member.zone),
        ("provider", &member.provider),
    ] {
        if let Some(v) = value {
            spec[key] = json!(v);
        }
    }
    let cluster = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": member.name, "labels": member.labels},
        "spec": spec,
    });
    clusters(host)
        .patch(&member.name, &params, &Patch::Apply(cluster))
        .await
        .map_err(write("the Cluster"))?;
    Ok(())
}

/// The credentials of a joined cluster, read from the Secret its `spec.secretRef` names.
pub async fn credentials_of(
    host: &kube::Client,
    cluster: &flotilla_api::Cluster,
) -> Result<MemberCredentials, MembershipError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let Some(reference) = &cluster.spec.secret_ref else {
        return Err(MembershipError::NoSecretRef { cluster: name });
    };
    let secrets: Api<Secret> = Api::namespaced(host.clone(), &reference.namespace);
    let secret = secrets
        .get(&reference.name)
        .await
        .map_err(|source| MembershipError::ReadSecret {
            cluster: name,
            namespace: reference.namespace.clone(),
            name: reference.name.clone(),
            source,
        })?;
    Ok(MemberCredentials::from_secret(&secret))
}

/// A kube-rs client for a joined cluster: its `spec.apiEndpoint`, the credentials Secret and
/// `spec.insecureSkipTLSVerification`.
pub async fn member_client(
    host: &kube::Client,
    cluster: &flotilla_api::Cluster,
) -> Result<kube::Client, MembershipError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let endpoint = cluster
        .spec
        .api_endpoint
        .clone()
        .filter(|e| !e.is_empty())
        .ok_or_else(|| MembershipError::NoEndpoint {
            cluster: name.clone(),
        })?;
    let credentials = credentials_of(host, cluster).await?;
    let insecure = cluster.spec.insecure_skip_tls_verification == Some(true);
    credentials.client(&name, &endpoint, insecure).await
}

/// Removes the Cluster and its credentials Secret (missing ones are fine).
pub async fn unjoin(host: &kube::Client, name: &str) -> Result<(), MembershipError> {
    let gone = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
    if let Err(e) = clusters(host).delete(name, &DeleteParams::default()).await {
        if !gone(&e) {
            return Err(MembershipError::Remove {
                what: "the Cluster",
                cluster: name.into(),
                source: e,
            });
        }
    }
    let secrets: Api<Secret> = Api::namespaced(host.clone(), CREDENTIALS_NAMESPACE);
    if let Err(e) = secrets.delete(name, &DeleteParams::default()).await {
        if !gone(&e) {
            return Err(MembershipError::Remove {
                what: "the credentials Secret",
                cluster: name.into(),
                source: e,
            });
        }
    }
    Ok(())
}
