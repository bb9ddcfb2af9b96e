//! CustomResourceDefinitions of every kind Karmada installs as a CRD, generated from the Rust
//! types, and their YAML form (the files under `crds/`, kept fresh by the `crds_are_fresh`
//! test). The host installs all of them at start.
//!
//! Cluster is not among them: Flotilla serves it from its aggregated server.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use kube::CustomResourceExt;

use crate::ApiError;
use crate::apps::WorkloadRebalancer;
use crate::autoscaling::{CronFederatedHPA, FederatedHPA};
use crate::binding::{ClusterResourceBinding, ResourceBinding};
use crate::cluster::Cluster;
use crate::config::{ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration};
use crate::mcs::{ServiceExport, ServiceImport};
use crate::networking::{MultiClusterIngress, MultiClusterService};
use crate::overrides::{ClusterOverridePolicy, OverridePolicy};
use crate::policy::{ClusterPropagationPolicy, PropagationPolicy};
use crate::quota::FederatedResourceQuota;
use crate::remedy::Remedy;
use crate::taints::ClusterTaintPolicy;
use crate::work::Work;

/// Header of every generated file.
const HEADER: &str = "# Generated from the Rust types of crates/karmada-api; do not edit.\n\
# Regenerate: FLOTILLA_WRITE_CRDS=1 cargo test -p flotilla-karmada-api crds_are_fresh\n";

/// The CRDs of every kind Karmada installs as a CRD: the policies (propagation, override,
/// cluster taint, federated quota), the bindings and Works, autoscaling, interpreter
/// configuration, networking, rebalancing, remedies, and the Multi-Cluster Services API.
pub fn crds() -> Vec<CustomResourceDefinition> {
    [
        PropagationPolicy::crd(),
        ClusterPropagationPolicy::crd(),
        OverridePolicy::crd(),
        ClusterOverridePolicy::crd(),
        ResourceBinding::crd(),
        ClusterResourceBinding::crd(),
        Work::crd(),
        ClusterTaintPolicy::crd(),
        FederatedResourceQuota::crd(),
        FederatedHPA::crd(),
        CronFederatedHPA::crd(),
        ResourceInterpreterCustomization::crd(),
        ResourceInterpreterWebhookConfiguration::crd(),
        MultiClusterService::crd(),
        MultiClusterIngress::crd(),
        WorkloadRebalancer::crd(),
        Remedy::crd(),
        ServiceExport::crd(),
        ServiceImport::crd(),
    ]
    .into_iter()
    .map(normalize)
    .collect()
}

/// `(file name, YAML)` for each CRD of [`crds`]; file names follow controller-gen's
/// `<group>_<plural>.yaml`.
pub fn crd_yaml_files() -> Result<Vec<(String, String)>, ApiError> {
    crds()
        .into_iter()
        .map(|crd| {
            let name = crd.metadata.name.clone().unwrap_or_default();
            let file = format!("{}_{}.yaml", crd.spec.group, crd.spec.names.plural);
            let yaml =
                serde_norway::to_string(&crd).map_err(|source| ApiError::Yaml { name, source })?;
            Ok((file, format!("{HEADER}{yaml}")))
        })
        .collect()
}

/// Cluster's schema in CRD form, for the aggregated server (OpenAPI publishing, validation).
/// Not installed as a CRD.
pub fn cluster_crd() -> CustomResourceDefinition {
    normalize(Cluster::crd())
}

/// Brings kube's derived CRD to the form Karmada publishes: no `nullable`, no `title`, the
/// root's `apiVersion`/`kind`/`metadata` declared, `listKind` set.
fn normalize(mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
    if crd.spec.names.list_kind.is_none() {
        crd.spec.names.list_kind = Some(format!("{}List", crd.spec.names.kind));
    }
    for version in &mut crd.spec.versions {
        if let Some(schema) = version
            .schema
            .as_mut()
            .and_then(|s| s.open_api_v3_schema.as_mut())
        {
            strip_nullable_and_title(schema);
            declare_type_and_object_meta(schema);
        }
    }
    crd
}

fn declare_type_and_object_meta(root: &mut JSONSchemaProps) {
    let properties = root.properties.get_or_insert_with(Default::default);
    let string = |description: &str| JSONSchemaProps {
        description: Some(description.to_owned()),
        type_: Some("string".to_owned()),
        ..Default::default()
    };
    properties
        .entry("apiVersion".to_owned())
        .or_insert_with(|| {
            string("Versioned schema of this representation of an object (group/version).")
        });
    properties
        .entry("kind".to_owned())
        .or_insert_with(|| string("The REST resource this object represents, in CamelCase."));
    properties
        .entry("metadata".to_owned())
        .or_insert_with(|| JSONSchemaProps {
            type_: Some("object".to_owned()),
            ..Default::default()
        });
}

/// kube marks every `Option` field `nullable`. Karmada's CRDs do not: an explicit `null` is
/// dropped by the server (then defaulted) rather than stored, which is what Go clients (and
/// our `Option` fields) mean by it.
/// `title` is kube's addition too (the Rust type name).
fn strip_nullable_and_title(schema: &mut JSONSchemaProps) {
    schema.nullable = None;
    schema.title = None;
    let children = schema
        .properties
        .iter_mut()
        .flat_map(|p| p.values_mut())
        .chain(
            schema
                .pattern_properties
                .iter_mut()
                .flat_map(|p| p.values_mut()),
        )
        .chain(schema.all_of.iter_mut().flatten())
        .chain(schema.any_of.iter_mut().flatten())
        .chain(schema.one_of.iter_mut().flatten())
        .chain(schema.not.as_deref_mut());
    for child in children {
        strip_nullable_and_title(child);
    }
    match &mut schema.items {
        Some(JSONSchemaPropsOrArray::Schema(item)) => strip_nullable_and_title(item),
        Some(JSONSchemaPropsOrArray::Schemas(items)) => {
            items.iter_mut().for_each(strip_nullable_and_title)
        }
        None => {}
    }
    if let Some(JSONSchemaPropsOrBool::Schema(value)) = &mut schema.additional_properties {
        strip_nullable_and_title(value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn find(name: &str) -> CustomResourceDefinition {
        crds()
            .into_iter()
            .find(|c| c.metadata.name.as_deref() == Some(name))
            .unwrap()
    }

    #[test]
    fn one_served_storage_version_each_and_unique_names() {
        // Names, scopes, short names, categories and subresources are checked against
        // Karmada's list in tests/karmada.rs.
        let all = crds();
        let mut names: Vec<_> = all.iter().map(|c| c.metadata.name.clone()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
        for crd in &all {
            let kind = &crd.spec.names.kind;
            assert_eq!(
                crd.spec.names.list_kind.as_deref(),
                Some(format!("{kind}List").as_str())
            );
            assert_eq!(crd.spec.versions.len(), 1, "{kind}");
            let version = &crd.spec.versions[0];
            assert!(version.served && version.storage, "{kind}");
        }
    }

    fn columns(crd: &CustomResourceDefinition) -> Vec<(String, String, i32)> {
        crd.spec.versions[0]
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| (c.name.clone(), c.json_path.clone(), c.priority.unwrap_or(0)))
            .collect()
    }

    #[test]
    fn printer_columns() {
        let binding = columns(&find("resourcebindings.work.karmada.io"));
        assert_eq!(
            binding,
            [
                (
                    "SCHEDULED".into(),
                    r#".status.conditions[?(@.type=="Scheduled")].status"#.into(),
                    0
                ),
                (
                    "FULLYAPPLIED".into(),
                    r#".status.conditions[?(@.type=="FullyApplied")].status"#.into(),
                    0
                ),
                ("AGE".into(), ".metadata.creationTimestamp".into(), 0),
            ]
        );
        let work = columns(&find("works.work.karmada.io"));
        assert_eq!(
            work.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
            ["WORKLOAD-KIND", "APPLIED", "AGE"]
        );
        assert_eq!(
            work[1].1,
            r#".status.conditions[?(@.type=="Applied")].status"#
        );
        // No columns: the server prints NAME AGE.
        assert!(columns(&find("overridepolicies.policy.karmada.io")).is_empty());
        let cluster = columns(&cluster_crd());
        let wide: Vec<_> = cluster
            .iter()
            .filter(|c| c.2 == 1)
            .map(|c| c.0.as_str())
            .collect();
        let narrow: Vec<_> = cluster
            .iter()
            .filter(|c| c.2 == 0)
            .map(|c| c.0.as_str())
            .collect();
        assert_eq!(narrow, ["Version", "Mode", "Ready", "Age"]);
        assert_eq!(
            wide,
            ["Zones", "Region", "Provider", "API-Endpoint", "Proxy-URL"]
        );
        assert_eq!(
            cluster[2].1,
            r#".status.conditions[?(@.type=="Ready")].status"#
        );
    }

    fn keys_anywhere(v: &Value, key: &str, path: &str, found: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, child) in map {
                    if k == key {
                        found.push(path.to_owned());
                    }
                    keys_anywhere(child, key, &format!("{path}.{k}"), found);
                }
            }
            Value::Array(items) => items
                .iter()
                .for_each(|child| keys_anywhere(child, key, path, found)),
            _ => {}
        }
    }

    #[test]
    fn schemas_have_no_nullable_or_title_and_declare_the_root_fields() {
        for crd in crds().into_iter().chain([cluster_crd()]) {
            let name = crd.metadata.name.clone().unwrap();
            let schema = serde_json::to_value(
                crd.spec.versions[0]
                    .schema
                    .as_ref()
                    .unwrap()
                    .open_api_v3_schema
                    .as_ref()
                    .unwrap(),
            )
            .unwrap();
            for key in ["nullable", "title"] {
                let mut found = Vec::new();
                keys_anywhere(&schema, key, "", &mut found);
                assert!(found.is_empty(), "{name}: {key} at {found:?}");
            }
            for (field, ty) in [
                ("apiVersion", "string"),
                ("kind", "string"),
                ("metadata", "object"),
            ] {
                assert_eq!(schema["properties"][field]["type"], ty, "{name}.{field}");
            }
            // Most kinds require a spec; these have none, or an optional one, or their
            // fields at the top level.
            let required = match crd.spec.names.kind.as_str() {
                "ServiceExport" | "ServiceImport" | "MultiClusterIngress" => Value::Null,
                "ResourceInterpreterWebhookConfiguration" => serde_json::json!(["webhooks"]),
                _ => serde_json::json!(["spec"]),
            };
            assert_eq!(schema["required"], required, "{name}");
        }
    }

    #[test]
    fn kinds_without_a_spec_keep_their_fields_at_the_top_level() {
        use crate::config::ResourceInterpreterWebhookConfiguration;
        use crate::mcs::ServiceExport;
        use crate::networking::MultiClusterIngress;
        let value = serde_json::json!({
            "apiVersion": "config.karmada.io/v1alpha1",
            "kind": "ResourceInterpreterWebhookConfiguration",
            "metadata": {"name": "w"},
            "webhooks": [{"name": "a.example.com", "clientConfig": {"url": "https://a.example.com"},
                          "interpreterContextVersions": ["v1alpha1"]}]
        });
        let config: ResourceInterpreterWebhookConfiguration =
            serde_json::from_value(value.clone()).unwrap();
        assert_eq!(config.spec.webhooks[0].name, "a.example.com");
        assert_eq!(serde_json::to_value(&config).unwrap(), value);
        let export = serde_json::json!({
            "apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceExport",
            "metadata": {"name": "web", "namespace": "shop"}
        });
        let parsed: ServiceExport = serde_json::from_value(export.clone()).unwrap();
        assert_eq!(serde_json::to_value(&parsed).unwrap(), export);
        // A MultiClusterIngress may come without a spec; its spec is the Ingress's.
        let bare = serde_json::json!({
            "apiVersion": "networking.karmada.io/v1alpha1", "kind": "MultiClusterIngress",
            "metadata": {"name": "web", "namespace": "shop"}
        });
        let mci: MultiClusterIngress = serde_json::from_value(bare.clone()).unwrap();
        assert!(mci.spec.spec.is_none());
        assert_eq!(serde_json::to_value(&mci).unwrap(), bare);
    }

    #[test]
    fn yaml_files_are_named_like_controller_gen() {
        let names: Vec<String> = crd_yaml_files()
            .unwrap()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            names,
            [
                "policy.karmada.io_propagationpolicies.yaml",
                "policy.karmada.io_clusterpropagationpolicies.yaml",
                "policy.karmada.io_overridepolicies.yaml",
                "policy.karmada.io_clusteroverridepolicies.yaml",
                "work.karmada.io_resourcebindings.yaml",
                "work.karmada.io_clusterresourcebindings.yaml",
                "work.karmada.io_works.yaml",
                "policy.karmada.io_clustertaintpolicies.yaml",
                "policy.karmada.io_federatedresourcequotas.yaml",
                "autoscaling.karmada.io_federatedhpas.yaml",
                "autoscaling.karmada.io_cronfederatedhpas.yaml",
                "config.karmada.io_resourceinterpretercustomizations.yaml",
                "config.karmada.io_resourceinterpreterwebhookconfigurations.yaml",
                "networking.karmada.io_multiclusterservices.yaml",
                "networking.karmada.io_multiclusteringresses.yaml",
                "apps.karmada.io_workloadrebalancers.yaml",
                "remedy.karmada.io_remedies.yaml",
                "multicluster.x-k8s.io_serviceexports.yaml",
                "multicluster.x-k8s.io_serviceimports.yaml",
            ]
        );
    }
}
