//! `flotillactl promote`: adopt an object that already runs in one member cluster into
//! Flotilla's management without recreating it, as `karmadactl promote` does. The object is
//! read from the member through the host's cluster proxy, stripped of what is that cluster's
//! copy (`flotilla_names::karmada::strip_instance_fields`), marked
//! `work.karmada.io/conflict-resolution: overwrite` and created on the host as a template;
//! a PropagationPolicy (ClusterPropagationPolicy for a cluster-scoped kind) placing it on that
//! cluster is created unless `--policy` names one. The execution controller then finds the
//! member object not yet its own and, because of the annotation, takes it over with a
//! server-side apply of the same content: same uid, same pods.
//!
//! Every check (cluster joined, type served, object in the member and not managed yet, no
//! template of that name, the policy's name free or the given policy selecting the object,
//! the namespace on the host) runs before the first write; if the template cannot be created
//! after a new policy was, that policy is deleted again, so a failed promote changes nothing.

use anyhow::{Context, anyhow, bail};
use clap::Args;
use flotilla_names::karmada;
use kube::api::{Api, DeleteParams, DynamicObject, GetParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use crate::kinds::{self, Resolved};

/// The field manager of the objects promote creates.
const FIELD_MANAGER: &str = "flotillactl";

/// Set by the member's Deployment controller; meaningless on the host.
const MEMBER_ANNOTATIONS: [&str; 1] = ["deployment.kubernetes.io/revision"];

#[derive(Args, Debug)]
#[command(after_help = "Examples:
  # Adopt Deployment nginx running in cluster member1 (namespace default); a PropagationPolicy
  # nginx-deployment placing it on member1 is created
  flotillactl promote deployment nginx -C member1

  # The same with TYPE/NAME, in namespace web, with the policy named web-policy
  flotillactl promote deploy/nginx -n web -C member1 --policy-name web-policy

  # Adopt a ConfigMap under an existing PropagationPolicy that selects it
  flotillactl promote configmap settings -n web -C member1 --policy web-config

  # Check everything and let the host validate the writes, storing nothing
  flotillactl promote deployment nginx -C member1 --dry-run")]
pub(crate) struct PromoteArgs {
    /// The resource type (deployment, deploy, configmap, deployments.apps, ...), or TYPE/NAME.
    resource: String,
    /// The object's name (omitted when RESOURCE is TYPE/NAME).
    name: Option<String>,
    /// Namespace of the object (ignored for cluster-scoped types).
    #[arg(short = 'n', long, default_value = "default")]
    namespace: String,
    /// The member cluster the object runs in.
    #[arg(short = 'C', long)]
    cluster: String,
    /// An existing PropagationPolicy (ClusterPropagationPolicy for a cluster-scoped type) that
    /// selects the object; none is created.
    #[arg(long, conflicts_with = "policy_name")]
    policy: Option<String>,
    /// Name of the policy to create (default: <name>-<kind>).
    #[arg(long)]
    policy_name: Option<String>,
    /// Run every check and send the writes with dryRun=All, so the host validates them, but
    /// store nothing.
    #[arg(long)]
    dry_run: bool,
}

/// The type and name a command line names: `TYPE NAME` or `TYPE/NAME`.
fn type_and_name(resource: &str, name: Option<&str>) -> anyhow::Result<(String, String)> {
    let (typed, name) = match (resource.split_once('/'), name) {
        (Some(_), Some(extra)) => bail!(
            "give the object as TYPE NAME or TYPE/NAME, not both ({resource:?} and {extra:?})"
        ),
        (Some((t, n)), None) => (t, n),
        (None, Some(n)) => (resource, n),
        (None, None) => bail!("name the object: TYPE NAME or TYPE/NAME (e.g. deployment nginx)"),
    };
    if typed.is_empty() || name.is_empty() || name.contains('/') {
        bail!("{resource:?} is not TYPE/NAME (e.g. deployment/nginx)");
    }
    flotilla_apimachinery::names::is_dns1123_subdomain(name)
        .map_err(|e| anyhow!("invalid name {name:?}: {e}"))?;
    Ok((typed.to_string(), name.to_string()))
}

/// `member` as a template: what is the member's own dropped, the adoption mark added.
fn template_from_member(member: &Value) -> anyhow::Result<Value> {
    let mut obj = member.clone();
    let Value::Object(map) = &mut obj else {
        bail!("the member answered something that is not an object");
    };
    karmada::strip_instance_fields(map);
    let meta = map
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .ok_or_else(|| anyhow!("the member's object has no metadata"))?;
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| anyhow!("the member's object has annotations that are not a map"))?;
    for key in MEMBER_ANNOTATIONS {
        annotations.remove(key);
    }
    annotations.insert(
        karmada::CONFLICT_RESOLUTION_ANNOTATION.into(),
        json!(karmada::CONFLICT_RESOLUTION_OVERWRITE),
    );
    Ok(obj)
}

/// Why `member` cannot be promoted because Flotilla already manages it, if it does.
fn already_managed(member: &Value) -> Option<String> {
    let meta = &member["metadata"];
    let work = meta["annotations"][karmada::WORK_NAME_ANNOTATION].as_str();
    let work_ns = meta["annotations"][karmada::WORK_NAMESPACE_ANNOTATION].as_str();
    match (work_ns, work) {
        (Some(ns), Some(name)) => Some(format!("Work {ns}/{name}")),
        _ if meta["labels"][karmada::MANAGED_BY_KARMADA_LABEL]
            == karmada::MANAGED_BY_KARMADA_LABEL_VALUE =>
        {
            Some(format!("label {}", karmada::MANAGED_BY_KARMADA_LABEL))
        }
        _ => None,
    }
}

fn policy_resource(namespaced: bool) -> (ApiResource, &'static str) {
    let (kind, plural, shown) = if namespaced {
        (
            "PropagationPolicy",
            "propagationpolicies",
            "propagationpolicy.policy.karmada.io",
        )
    } else {
        (
            "ClusterPropagationPolicy",
            "clusterpropagationpolicies",
            "clusterpropagationpolicy.policy.karmada.io",
        )
    };
    (
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("policy.karmada.io", "v1alpha1", kind),
            plural,
        ),
        shown,
    )
}

/// The policy promote creates: the object on `cluster` alone, taking the member's copy over.
fn new_policy(
    name: &str,
    resolved: &Resolved,
    namespace: Option<&str>,
    object: &str,
    cluster: &str,
) -> Value {
    let mut selector = json!({
        "apiVersion": resolved.resource.api_version,
        "kind": resolved.resource.kind,
        "name": object,
    });
    let mut metadata = json!({"name": name});
    if let Some(ns) = namespace {
        metadata["namespace"] = json!(ns);
        selector["namespace"] = json!(ns);
    }
    let (resource, _) = policy_resource(namespace.is_some());
    json!({
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        "metadata": metadata,
        "spec": {
            "resourceSelectors": [selector],
            "placement": {"clusterAffinity": {"clusterNames": [cluster]}},
            "conflictResolution": "Overwrite",
        },
    })
}

/// Whether one of `policy`'s resource selectors can select the object (a label selector
/// is taken as able to: the detector decides).
fn selects(policy: &Value, resolved: &Resolved, namespace: Option<&str>, object: &str) -> bool {
    policy["spec"]["resourceSelectors"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| {
            s["apiVersion"] == resolved.resource.api_version.as_str()
                && s["kind"] == resolved.resource.kind.as_str()
                && s["name"].as_str().is_none_or(|n| n == object)
                && match (s["namespace"].as_str(), namespace) {
                    (Some(sel), Some(ns)) => sel == ns,
                    _ => true,
                }
        })
}

fn post_params(dry_run: bool) -> PostParams {
    PostParams {
        dry_run,
        field_manager: Some(FIELD_MANAGER.into()),
    }
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

/// Reads the object from `cluster` through the host's cluster proxy.
async fn read_from_member(
    host: &kube::Client,
    cluster: &str,
    resolved: &Resolved,
    namespace: Option<&str>,
    name: &str,
    shown: &str,
) -> anyhow::Result<Value> {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(host.clone(), ns, &resolved.resource),
        None => Api::all_with(host.clone(), &resolved.resource),
    };
    let url = format!(
        "/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy{}",
        api.resource_url()
    );
    let request = kube::core::Request::new(url)
        .get(name, &GetParams::default())
        .map_err(|e| anyhow!(e).context("building the request to the cluster proxy"))?;
    let where_ = match namespace {
        Some(ns) => format!("namespace {ns} of cluster {cluster}"),
        None => format!("cluster {cluster}"),
    };
    host.request::<Value>(request).await.map_err(|e| {
        if not_found(&e) {
            anyhow!("{shown} not found in {where_}")
        } else {
            anyhow!(e).context(format!(
                "reading {shown} from {where_} through the cluster proxy"
            ))
        }
    })
}

/// Runs `promote`; `host` connects to the host, awaited once the command line has been checked.
pub(crate) async fn promote(
    host: impl Future<Output = anyhow::Result<kube::Client>>,
    args: PromoteArgs,
) -> anyhow::Result<()> {
    let (typed, name) = type_and_name(&args.resource, args.name.as_deref())?;
    let cluster = args.cluster.as_str();
    flotilla_membership::validate_cluster_name(cluster)?;
    if let Some(p) = args.policy.as_deref().or(args.policy_name.as_deref()) {
        flotilla_apimachinery::names::is_dns1123_subdomain(p)
            .map_err(|e| anyhow!("invalid policy name {p:?}: {e}"))?;
    }
    let host = host.await?;
    let resolved = kinds::resolve(&host, &typed).await?;
    let namespace = resolved.namespaced.then_some(args.namespace.as_str());
    if let Some(ns) = namespace {
        flotilla_apimachinery::names::is_dns1123_label(ns)
            .map_err(|e| anyhow!("invalid namespace {ns:?}: {e}"))?;
    }
    let shown = format!("{}/{name}", resolved.type_name());

    let clusters = kinds::clusters(&host);
    if clusters
        .get_opt(cluster)
        .await
        .context("reading the Clusters")?
        .is_none()
    {
        bail!("cluster {cluster} is not joined (see flotillactl join)");
    }

    let member = read_from_member(&host, cluster, &resolved, namespace, &name, &shown).await?;
    if let Some(by) = already_managed(&member) {
        bail!("{shown} in cluster {cluster} is already managed by Flotilla ({by})");
    }

    let templates: Api<DynamicObject> = match namespace {
        Some(ns) => {
            let namespaces: Api<DynamicObject> = Api::all_with(
                host.clone(),
                &ApiResource::from_gvk_with_plural(
                    &GroupVersionKind::gvk("", "v1", "Namespace"),
                    "namespaces",
                ),
            );
            if namespaces
                .get_opt(ns)
                .await
                .context("reading the host's namespaces")?
                .is_none()
            {
                bail!(
                    "namespace {ns} does not exist on the host: create it there first \
                     (kubectl create namespace {ns})"
                );
            }
            Api::namespaced_with(host.clone(), ns, &resolved.resource)
        }
        None => Api::all_with(host.clone(), &resolved.resource),
    };
    if templates
        .get_opt(&name)
        .await
        .with_context(|| format!("reading {shown} on the host"))?
        .is_some()
    {
        bail!(
            "{shown} already exists on the host: promote adopts an object that exists only in a \
             member (a template there is propagated by its policies already)"
        );
    }

    let (policy_res, policy_shown) = policy_resource(namespace.is_some());
    let policies: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(host.clone(), ns, &policy_res),
        None => Api::all_with(host.clone(), &policy_res),
    };
    let new_policy_name = match &args.policy {
        Some(given) => {
            let found = policies
                .get_opt(given)
                .await
                .with_context(|| format!("reading {policy_shown}/{given}"))?
                .ok_or_else(|| anyhow!("{policy_shown}/{given} not found"))?;
            let found = serde_json::to_value(found)?;
            if !selects(&found, &resolved, namespace, &name) {
                bail!(
                    "{policy_shown}/{given} does not select {shown} (no resourceSelector names it)"
                );
            }
            None
        }
        None => {
            let policy_name = args
                .policy_name
                .clone()
                .unwrap_or_else(|| karmada::binding_name(&resolved.resource.kind, &name));
            if policies
                .get_opt(&policy_name)
                .await
                .with_context(|| format!("reading {policy_shown}/{policy_name}"))?
                .is_some()
            {
                bail!(
                    "{policy_shown}/{policy_name} already exists: choose another with \
                     --policy-name, or use it with --policy"
                );
            }
            Some(policy_name)
        }
    };
    let template: DynamicObject = serde_json::from_value(template_from_member(&member)?)
        .context("reading the member's object")?;

    let suffix = if args.dry_run {
        " (server dry run)"
    } else {
        ""
    };
    let params = post_params(args.dry_run);
    if let Some(policy_name) = &new_policy_name {
        let body: DynamicObject = serde_json::from_value(new_policy(
            policy_name,
            &resolved,
            namespace,
            &name,
            cluster,
        ))?;
        policies
            .create(&params, &body)
            .await
            .with_context(|| format!("creating {policy_shown}/{policy_name}"))?;
        println!("{policy_shown}/{policy_name} created{suffix}");
    }
    if let Err(e) = templates.create(&params, &template).await {
        let mut err = anyhow!(e).context(format!("creating {shown} on the host"));
        if let (Some(policy_name), false) = (&new_policy_name, args.dry_run) {
            if let Err(undo) = policies.delete(policy_name, &DeleteParams::default()).await {
                err = err.context(format!(
                    "and deleting the {policy_shown}/{policy_name} just created failed too ({undo}): delete it by hand"
                ));
            }
        }
        return Err(err);
    }
    println!("{shown} promoted from cluster {cluster}{suffix}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_as_type_name_or_type_slash_name() {
        assert_eq!(
            type_and_name("deploy/nginx", None).unwrap(),
            ("deploy".into(), "nginx".into())
        );
        assert_eq!(
            type_and_name("deployment", Some("nginx")).unwrap(),
            ("deployment".into(), "nginx".into())
        );
        for (r, n) in [
            ("deploy/nginx", Some("x")),
            ("deployment", None),
            ("/nginx", None),
            ("deploy/", None),
            ("deploy/a/b", None),
            ("deployment", Some("Not_Valid")),
        ] {
            assert!(type_and_name(r, n).is_err(), "{r} {n:?}");
        }
    }

    #[test]
    fn a_template_keeps_the_object_and_drops_the_members_copy() {
        let member = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "demo", "uid": "u", "resourceVersion": "7",
                         "generation": 2, "creationTimestamp": "2026-01-01T00:00:00Z",
                         "managedFields": [{}], "labels": {"app": "web"},
                         "annotations": {"deployment.kubernetes.io/revision": "1", "team": "a"}},
            "spec": {"replicas": 3},
            "status": {"replicas": 3},
        });
        let t = template_from_member(&member).unwrap();
        let meta = t["metadata"].as_object().unwrap();
        for gone in karmada::INSTANCE_METADATA {
            assert!(!meta.contains_key(gone), "{gone}");
        }
        assert!(t.get("status").is_none());
        assert_eq!(t["spec"]["replicas"], 3);
        assert_eq!(meta["labels"]["app"], "web");
        assert_eq!(meta["annotations"]["team"], "a");
        assert!(
            meta["annotations"]
                .get("deployment.kubernetes.io/revision")
                .is_none()
        );
        assert_eq!(
            meta["annotations"][karmada::CONFLICT_RESOLUTION_ANNOTATION],
            karmada::CONFLICT_RESOLUTION_OVERWRITE
        );
        assert!(already_managed(&member).is_none());
        let mut managed = member.clone();
        managed["metadata"]["labels"][karmada::MANAGED_BY_KARMADA_LABEL] = json!("true");
        assert!(already_managed(&managed).is_some());
    }

    #[test]
    fn a_new_policy_places_the_object_on_its_cluster_and_overwrites() {
        let resolved = Resolved {
            resource: ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("apps", "v1", "Deployment"),
                "deployments",
            ),
            namespaced: true,
        };
        let p = new_policy("web-deployment", &resolved, Some("demo"), "web", "member1");
        assert_eq!(p["kind"], "PropagationPolicy");
        assert_eq!(p["metadata"]["namespace"], "demo");
        assert_eq!(
            p["spec"]["placement"]["clusterAffinity"]["clusterNames"],
            json!(["member1"])
        );
        assert_eq!(p["spec"]["conflictResolution"], "Overwrite");
        assert!(selects(&p, &resolved, Some("demo"), "web"));
        assert!(!selects(&p, &resolved, Some("demo"), "other"));
        assert!(!selects(&p, &resolved, Some("prod"), "web"));
    }
}
