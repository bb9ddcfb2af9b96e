//! Resource types as users type them on the command line (`deploy`, `deployments`,
//! `Deployment`, `deployments.apps`): the short names kubectl knows for the kinds Flotilla
//! propagates, and resolving a typed name to a served resource through the host's discovery.

use anyhow::{anyhow, bail};
use kube::core::ApiResource;
use kube::discovery::{Discovery, Scope};

/// The lowercased singular kind a typed name stands for (`deploy` → `deployment`), and
/// whether that kind is cluster-scoped; any other word is taken as a namespaced kind.
pub(crate) fn alias(typed: &str) -> (String, bool) {
    let lower = typed.to_ascii_lowercase();
    let (singular, cluster_scoped) = match lower.as_str() {
        "deploy" | "deployment" | "deployments" => ("deployment", false),
        "sts" | "statefulset" | "statefulsets" => ("statefulset", false),
        "ds" | "daemonset" | "daemonsets" => ("daemonset", false),
        "rs" | "replicaset" | "replicasets" => ("replicaset", false),
        "job" | "jobs" => ("job", false),
        "cj" | "cronjob" | "cronjobs" => ("cronjob", false),
        "svc" | "service" | "services" => ("service", false),
        "cm" | "configmap" | "configmaps" => ("configmap", false),
        "secret" | "secrets" => ("secret", false),
        "sa" | "serviceaccount" | "serviceaccounts" => ("serviceaccount", false),
        "pvc" | "persistentvolumeclaim" | "persistentvolumeclaims" => {
            ("persistentvolumeclaim", false)
        }
        "ing" | "ingress" | "ingresses" => ("ingress", false),
        "ns" | "namespace" | "namespaces" => ("namespace", true),
        "clusterrole" | "clusterroles" => ("clusterrole", true),
        "clusterrolebinding" | "clusterrolebindings" => ("clusterrolebinding", true),
        "crd" | "customresourcedefinition" | "customresourcedefinitions" => {
            ("customresourcedefinition", true)
        }
        other => return (other.to_string(), false),
    };
    (singular.to_string(), cluster_scoped)
}

/// The host's Clusters (`cluster.karmada.io/v1alpha1`).
pub(crate) fn clusters(host: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::all_with(
        host.clone(),
        &ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
            "clusters",
        ),
    )
}

/// A served resource: its group/version/kind/plural and whether it is namespaced.
#[derive(Clone, Debug)]
pub(crate) struct Resolved {
    pub resource: ApiResource,
    pub namespaced: bool,
}

impl Resolved {
    /// `deployment.apps`, `service`: how kubectl names the type in its output.
    pub fn type_name(&self) -> String {
        let kind = self.resource.kind.to_ascii_lowercase();
        if self.resource.group.is_empty() {
            kind
        } else {
            format!("{kind}.{}", self.resource.group)
        }
    }
}

/// Resolves `typed` (an alias, kind, plural or `plural.group`) among the resources the host
/// serves, preferring the core group, then the first group discovery lists.
pub(crate) async fn resolve(client: &kube::Client, typed: &str) -> anyhow::Result<Resolved> {
    let (word, group) = match typed.split_once('.') {
        Some((w, g)) => (w, Some(g)),
        None => (typed, None),
    };
    if word.is_empty() || group.is_some_and(str::is_empty) {
        bail!("{typed:?} is not a resource type (e.g. deployment, deploy, deployments.apps)");
    }
    let (singular, _) = alias(word);
    let lower = word.to_ascii_lowercase();
    let discovery = Discovery::new(client.clone())
        .run()
        .await
        .map_err(|e| anyhow!(e).context("discovering the host's resource types"))?;
    let mut found: Vec<Resolved> = Vec::new();
    for api_group in discovery.groups() {
        if group.is_some_and(|g| g != api_group.name()) {
            continue;
        }
        for (resource, caps) in api_group.recommended_resources() {
            if resource.plural.contains('/') {
                continue;
            }
            let kind = resource.kind.to_ascii_lowercase();
            if kind == singular || resource.plural == lower {
                found.push(Resolved {
                    namespaced: caps.scope == Scope::Namespaced,
                    resource,
                });
            }
        }
    }
    found.sort_by_key(|r| !r.resource.group.is_empty());
    found
        .into_iter()
        .next()
        .ok_or_else(|| anyhow!("the server doesn't have a resource type {typed:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_name_their_kind_and_scope() {
        assert_eq!(alias("deploy"), ("deployment".into(), false));
        assert_eq!(alias("Deployments"), ("deployment".into(), false));
        assert_eq!(alias("ns"), ("namespace".into(), true));
        assert_eq!(alias("MyApp"), ("myapp".into(), false));
    }
}
