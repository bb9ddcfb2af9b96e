//! Joining member clusters: what `flotillactl join` and `flotilla local-up` do on the host.
//! A member is a Secret in `karmada-cluster` (keys `token`, `caBundle`) and a Push-mode
//! `cluster.karmada.io/v1alpha1` Cluster pointing at it. Writes are server-side applies under
//! one field manager, so joining again converges instead of duplicating.
//!
//! `flotillactl` adds the checks an operator needs before anything is written (a valid name,
//! a reachable member, a name not in use: [`probe_member`], [`ensure_not_joined`],
//! [`join_new`]) and an unjoin that waits for the cluster controller to clean up
//! ([`unjoin_and_wait`]).

mod credentials;
mod probe;
mod reader;
mod sessions;
mod target;
#[cfg(test)]
mod test_member;
mod validate;

pub use credentials::{
    KEY_CA_BUNDLE, KEY_CLIENT_CERT, KEY_CLIENT_KEY, KEY_TOKEN, MemberCredentials,
};
pub use flotilla_controller_runtime::error_chain;
pub use probe::{PROBE_TIMEOUT, probe_member, probe_member_within};
pub use reader::{MemberReader, MemberResponse};
pub use target::{MemberConnector, MemberTarget};
pub use validate::{
    MAX_CLUSTER_NAME_LEN, is_plain_http, validate_cluster_name, validate_endpoint, validate_label,
};

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use flotilla_names::karmada;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use kube::core::GroupVersionKind;
use serde_json::json;

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
    Client {
        cluster: String,
        source: kube::Error,
    },
    #[error("cluster {cluster} has no spec.apiEndpoint")]
    NoEndpoint { cluster: String },
    #[error("cluster {cluster} has an invalid spec.proxyURL {url:?}")]
    ProxyUrl { cluster: String, url: String },
    #[error("cluster {cluster} has no spec.secretRef")]
    NoSecretRef { cluster: String },
    #[error(
        "cluster {cluster}'s spec.apiEndpoint {endpoint} is plain HTTP, and its credentials are \
         sent only over TLS: use an https:// endpoint"
    )]
    PlainHttp { cluster: String, endpoint: String },
    #[error("reading the credentials Secret {namespace}/{name} of cluster {cluster}")]
    ReadSecret {
        cluster: String,
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("invalid cluster name {name:?}: {reason}")]
    InvalidName { name: String, reason: String },
    #[error("invalid label {key:?}: {reason}")]
    InvalidLabel { key: String, reason: String },
    #[error("invalid API endpoint {endpoint:?} for cluster {cluster}: {reason}")]
    InvalidEndpoint {
        cluster: String,
        endpoint: String,
        reason: String,
    },
    #[error("the credentials for cluster {cluster} are unusable: {reason}")]
    BadCredentials { cluster: String, reason: String },
    #[error("cannot reach cluster {cluster} at {endpoint}: {reason}")]
    Unreachable {
        cluster: String,
        endpoint: String,
        reason: String,
    },
    #[error("cluster {cluster} at {endpoint} rejected the credentials: {reason}")]
    Rejected {
        cluster: String,
        endpoint: String,
        reason: String,
    },
    #[error("GET {path} on the member: {reason}")]
    MemberRequest { path: String, reason: String },
    #[error("GET {path} on the member answered {code}: {message}")]
    MemberStatus {
        path: String,
        code: u16,
        message: String,
    },
    #[error("decoding the member's answer to GET {path}")]
    MemberDecode {
        path: String,
        source: serde_json::Error,
    },
    #[error("cluster {cluster} is already joined (apiEndpoint {endpoint}); unjoin it first")]
    AlreadyJoined { cluster: String, endpoint: String },
    #[error("cluster {cluster} is not joined (no Cluster and no credentials Secret)")]
    NotJoined { cluster: String },
    #[error("reading {what} of cluster {cluster}")]
    Read {
        what: &'static str,
        cluster: String,
        source: kube::Error,
    },
    #[error(
        "cluster {cluster} is still there after {waited:?}: {left}; the credentials Secret \
         karmada-cluster/{cluster} is kept until the Cluster is gone (run unjoin again \
         to keep waiting)"
    )]
    UnjoinTimeout {
        cluster: String,
        waited: Duration,
        /// What holds the Cluster: its finalizers and the Works still in its execution
        /// namespace.
        left: String,
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

impl Member {
    /// A member with no labels, region, zone or provider.
    pub fn new(
        name: impl Into<String>,
        api_endpoint: impl Into<String>,
        credentials: MemberCredentials,
    ) -> Self {
        Self {
            name: name.into(),
            api_endpoint: api_endpoint.into(),
            credentials,
            labels: BTreeMap::new(),
            region: None,
            zone: None,
            provider: None,
        }
    }
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
    join_with(host, member, &JoinOptions::default()).await
}

/// How a join writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinOptions {
    /// Sets `spec.insecureSkipTLSVerification` on the Cluster.
    pub insecure_skip_tls_verification: bool,
    /// Sends every write with `dryRun=All`: the host validates the namespace, the Secret and
    /// the Cluster as it would store them, and stores nothing.
    pub dry_run: bool,
}

/// Fails with [`MembershipError::AlreadyJoined`] when a Cluster named `name` exists.
pub async fn ensure_not_joined(host: &kube::Client, name: &str) -> Result<(), MembershipError> {
    let existing = clusters(host)
        .get_opt(name)
        .await
        .map_err(|source| MembershipError::Read {
            what: "the Cluster",
            cluster: name.into(),
            source,
        })?;
    match existing {
        None => Ok(()),
        Some(cluster) => Err(MembershipError::AlreadyJoined {
            cluster: name.into(),
            endpoint: cluster
                .data
                .pointer("/spec/apiEndpoint")
                .and_then(|v| v.as_str())
                .unwrap_or("none")
                .to_string(),
        }),
    }
}

/// Joins a new member: checks its name, labels and endpoint, refuses a name already in use,
/// then writes the Secret and the Cluster (`spec.insecureSkipTLSVerification` set when asked).
/// The member should have been probed ([`probe_member`]) first.
pub async fn join_new(
    host: &kube::Client,
    member: &Member,
    options: &JoinOptions,
) -> Result<(), MembershipError> {
    validate_cluster_name(&member.name)?;
    validate_endpoint(&member.name, &member.api_endpoint)?;
    for (key, value) in &member.labels {
        validate_label(key, value)?;
    }
    if !member.credentials.authenticates() {
        return Err(MembershipError::NoCredentials {
            cluster: member.name.clone(),
        });
    }
    ensure_not_joined(host, &member.name).await?;
    join_with(host, member, options).await
}

/// [`join`] with [`JoinOptions`]. When the Cluster cannot be written, a credentials Secret
/// this call created is removed again, so a rejected join leaves nothing behind.
pub async fn join_with(
    host: &kube::Client,
    member: &Member,
    options: &JoinOptions,
) -> Result<(), MembershipError> {
    let write = |what: &'static str| {
        let cluster = member.name.clone();
        move |source| MembershipError::Write {
            what,
            cluster,
            source,
        }
    };
    let mut params = PatchParams::apply(MANAGER).force();
    params.dry_run = options.dry_run;
    let namespaces: Api<Namespace> = Api::all(host.clone());
    // A dry run cannot create the namespace, and a Secret in a missing namespace is refused:
    // then only the namespace and the Cluster are checked.
    let namespace_existed = !options.dry_run
        || namespaces
            .get_metadata_opt(karmada::NAMESPACE_KARMADA_CLUSTER)
            .await
            .map_err(|source| MembershipError::Read {
                what: "the credentials namespace",
                cluster: member.name.clone(),
                source,
            })?
            .is_some();
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": karmada::NAMESPACE_KARMADA_CLUSTER}});
    namespaces
        .patch(
            karmada::NAMESPACE_KARMADA_CLUSTER,
            &params,
            &Patch::Apply(ns),
        )
        .await
        .map_err(write("the credentials namespace"))?;
    let secrets: Api<Secret> = Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_CLUSTER);
    let secret_existed = secrets
        .get_metadata_opt(&member.name)
        .await
        .map_err(|source| MembershipError::Read {
            what: "the credentials Secret",
            cluster: member.name.clone(),
            source,
        })?
        .is_some();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(member.name.clone()),
            namespace: Some(karmada::NAMESPACE_KARMADA_CLUSTER.into()),
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
    if namespace_existed {
        secrets
            .patch(&member.name, &params, &Patch::Apply(secret_body))
            .await
            .map_err(write("the credentials Secret"))?;
    }
    let mut spec = json!({
        "syncMode": "Push",
        "apiEndpoint": member.api_endpoint,
        "secretRef": {"namespace": karmada::NAMESPACE_KARMADA_CLUSTER, "name": member.name},
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
    if options.insecure_skip_tls_verification {
        spec["insecureSkipTLSVerification"] = json!(true);
    }
    let cluster = json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": member.name, "labels": member.labels},
        "spec": spec,
    });
    if let Err(e) = clusters(host)
        .patch(&member.name, &params, &Patch::Apply(cluster))
        .await
    {
        if !secret_existed && !options.dry_run {
            // Best effort: the error worth reporting is the Cluster's.
            let _ = secrets.delete(&member.name, &DeleteParams::default()).await;
        }
        return Err(write("the Cluster")(e));
    }
    Ok(())
}

/// The credentials of a joined cluster, read from the Secret its `spec.secretRef` names.
pub async fn credentials_of(
    host: &kube::Client,
    cluster: &flotilla_karmada_api::Cluster,
) -> Result<MemberCredentials, MembershipError> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    MemberTarget::of(cluster).credentials(host, name).await
}

/// A kube-rs client for a joined cluster: its `spec.apiEndpoint`, the credentials Secret and
/// `spec.insecureSkipTLSVerification`.
pub async fn member_client(
    host: &kube::Client,
    cluster: &flotilla_karmada_api::Cluster,
) -> Result<kube::Client, MembershipError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let target = MemberTarget::of(cluster);
    if target.endpoint.is_none() {
        return Err(MembershipError::NoEndpoint { cluster: name });
    }
    let credentials = credentials_of(host, cluster).await?;
    target.client(&name, &credentials, PROBE_TIMEOUT).await
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
    let secrets: Api<Secret> = Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_CLUSTER);
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

/// What [`unjoin_and_wait`] found once the Cluster was gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnjoinReport {
    /// Whether there was a Cluster to delete (else only a leftover Secret was removed).
    pub cluster_deleted: bool,
    /// Works still in `karmada-es-<name>` (none when the cluster controller cleaned up).
    pub works_left: Vec<String>,
    /// Whether `karmada-es-<name>` still exists.
    pub execution_namespace_left: bool,
}

fn is_not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

fn works(host: &kube::Client, namespace: &str) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("work.karmada.io", "v1alpha1", "Work"),
        "works",
    );
    Api::namespaced_with(host.clone(), namespace, &resource)
}

/// Names of the Works in the execution namespace of `name` (none when it or the Work API
/// does not exist).
pub async fn remaining_works(
    host: &kube::Client,
    name: &str,
) -> Result<Vec<String>, MembershipError> {
    match works(host, &karmada::execution_namespace(name))
        .list_metadata(&Default::default())
        .await
    {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .filter_map(|w| w.metadata.name)
            .collect()),
        Err(e) if is_not_found(&e) => Ok(Vec::new()),
        Err(source) => Err(MembershipError::Read {
            what: "the Works",
            cluster: name.into(),
            source,
        }),
    }
}

/// How often [`unjoin_and_wait`] looks whether the Cluster is gone.
const UNJOIN_POLL: Duration = Duration::from_millis(250);

/// Removes a member the way an operator expects: deletes the Cluster, waits up to `timeout`
/// until it is gone (the cluster controller's [`karmada::CLUSTER_CONTROLLER_FINALIZER`] holds it until the
/// cluster's Works and `karmada-es-<name>` are deleted), then deletes the credentials Secret.
/// The Secret stays while the Cluster does, since the controller may still need it to clean
/// up on the member. Running it again after a timeout resumes the wait.
pub async fn unjoin_and_wait(
    host: &kube::Client,
    name: &str,
    timeout: Duration,
) -> Result<UnjoinReport, MembershipError> {
    let read = |what: &'static str| {
        let cluster = name.to_string();
        move |source| MembershipError::Read {
            what,
            cluster,
            source,
        }
    };
    let remove = |what: &'static str| {
        let cluster = name.to_string();
        move |source| MembershipError::Remove {
            what,
            cluster,
            source,
        }
    };
    let clusters = clusters(host);
    let secrets: Api<Secret> = Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_CLUSTER);
    let mut current = clusters.get_opt(name).await.map_err(read("the Cluster"))?;
    let cluster_deleted = current.is_some();
    if current.is_none() {
        let secret = secrets
            .get_metadata_opt(name)
            .await
            .map_err(read("the credentials Secret"))?;
        if secret.is_none() {
            return Err(MembershipError::NotJoined {
                cluster: name.into(),
            });
        }
    } else {
        match clusters.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => current = None,
            Err(e) => return Err(remove("the Cluster")(e)),
        }
    }
    let started = Instant::now();
    while let Some(cluster) = &current {
        if started.elapsed() >= timeout {
            let finalizers = cluster.metadata.finalizers.clone().unwrap_or_default();
            let works = remaining_works(host, name).await?;
            let mut left = Vec::new();
            if !finalizers.is_empty() {
                left.push(format!("finalizers {}", finalizers.join(", ")));
            }
            if !works.is_empty() {
                left.push(format!(
                    "{} Works remaining in {} ({})",
                    works.len(),
                    karmada::execution_namespace(name),
                    works.join(", ")
                ));
            }
            if left.is_empty() {
                left.push("the Cluster has not been removed".into());
            }
            return Err(MembershipError::UnjoinTimeout {
                cluster: name.into(),
                waited: timeout,
                left: left.join("; "),
            });
        }
        tokio::time::sleep(UNJOIN_POLL).await;
        current = clusters.get_opt(name).await.map_err(read("the Cluster"))?;
    }
    if let Err(e) = secrets.delete(name, &DeleteParams::default()).await {
        if !is_not_found(&e) {
            return Err(remove("the credentials Secret")(e));
        }
    }
    let namespaces: Api<Namespace> = Api::all(host.clone());
    let execution_namespace_left = namespaces
        .get_metadata_opt(&karmada::execution_namespace(name))
        .await
        .map_err(read("the execution namespace"))?
        .is_some();
    Ok(UnjoinReport {
        cluster_deleted,
        works_left: remaining_works(host, name).await?,
        execution_namespace_left,
    })
}
