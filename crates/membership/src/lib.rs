//! Joining member clusters: what `flotillactl join` and `flotilla local-up` do on the host.
//! A member is a Secret in `karmada-cluster` (keys `token`, `caBundle`) and a Push-mode
//! `cluster.karmada.io/v1alpha1` Cluster pointing at it. Writes are server-side applies under
//! one field manager, so joining again converges instead of duplicating.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;
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
}

/// What the host needs to reach a member.
#[derive(Debug, Clone)]
pub struct Member {
    pub name: String,
    pub api_endpoint: String,
    pub token: String,
    pub ca_pem: String,
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
        data: Some(BTreeMap::from([
            (
                "token".to_string(),
                ByteString(member.token.clone().into_bytes()),
            ),
            (
                "caBundle".to_string(),
                ByteString(member.ca_pem.clone().into_bytes()),
            ),
        ])),
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
