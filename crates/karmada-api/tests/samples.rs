//! Karmada-shaped sample objects (tests/samples/*.yaml): each parses into its Rust type and
//! re-serialises to the same JSON, and the CRD kinds pass our server's structural schema
//! checks (nothing pruned, nothing invalid).

// Test helpers may panic: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use flotilla_karmada_api::{
    Cluster, ClusterOverridePolicy, ClusterPropagationPolicy, ClusterResourceBinding,
    ClusterTaintPolicy, CronFederatedHPA, FederatedHPA, FederatedResourceQuota,
    MultiClusterIngress, MultiClusterService, OverridePolicy, PropagationPolicy, Remedy,
    ResourceBinding, ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration,
    ServiceExport, ServiceImport, Work, WorkloadRebalancer, cluster_crd, crds,
};
use flotilla_schema::StructuralSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn sample(file: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/samples")
        .join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    serde_norway::from_str(&text).unwrap()
}

/// First path where two JSON values differ, for readable failures.
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys()) {
                let sub = format!("{path}.{key}");
                match (x.get(key), y.get(key)) {
                    (Some(l), Some(r)) => {
                        if let Some(d) = first_difference(l, r, &sub) {
                            return Some(d);
                        }
                    }
                    (l, r) => return Some(format!("{sub}: {l:?} vs {r:?}")),
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (l, r))| first_difference(l, r, &format!("{path}[{i}]"))),
        _ if a == b => None,
        _ => Some(format!("{path}: {a} vs {b}")),
    }
}

/// Parses `file` as `T`, re-serialises it and requires the same JSON back.
fn round_trip<T: DeserializeOwned + Serialize>(file: &str) -> (T, Value) {
    let input = sample(file);
    let typed: T = serde_json::from_value(input.clone())
        .unwrap_or_else(|e| panic!("{file} does not parse: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    if let Some(diff) = first_difference(&input, &back, "") {
        panic!("{file} does not round-trip; first difference (input vs output) at {diff}");
    }
    (typed, input)
}

/// The checked schema of each generated CRD, by CRD name (built once: generation is slow in
/// debug builds).
fn schema_for(crd_name: &str) -> StructuralSchema {
    static SCHEMAS: OnceLock<Vec<(String, StructuralSchema)>> = OnceLock::new();
    let schemas = SCHEMAS.get_or_init(|| {
        crds()
            .into_iter()
            .map(|crd| {
                let schema = crd.spec.versions[0]
                    .schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .unwrap();
                let schema = serde_json::to_value(schema).unwrap();
                let name = crd.metadata.name.unwrap();
                (
                    name,
                    StructuralSchema::new(&schema, "openAPIV3Schema").unwrap(),
                )
            })
            .collect()
    });
    schemas
        .iter()
        .find(|(name, _)| name == crd_name)
        .map(|(_, schema)| schema.clone())
        .unwrap_or_else(|| panic!("no CRD {crd_name}"))
}

/// The sample is fully described by the schema (nothing pruned) and valid.
fn assert_valid(crd_name: &str, file: &str, object: &Value) {
    let schema = schema_for(crd_name);
    let mut pruned = object.clone();
    let removed = schema.prune(&mut pruned);
    assert!(
        removed.is_empty(),
        "{file}: fields pruned by {crd_name}: {removed:?}"
    );
    let causes = schema.validate(object);
    assert!(
        causes.is_empty(),
        "{file}: invalid for {crd_name}: {causes:#?}"
    );
}

#[test]
fn cluster_sample_round_trips_and_fits_its_schema() {
    let (cluster, input): (Cluster, _) = round_trip("cluster.yaml");
    assert_eq!(cluster.spec.sync_mode.as_str(), "Push");
    assert_eq!(
        cluster.spec.proxy_url.as_deref(),
        Some("socks5://10.0.0.9:1080")
    );
    assert_eq!(
        cluster.spec.secret_ref.as_ref().unwrap().namespace,
        "karmada-cluster"
    );
    assert_eq!(cluster.spec.taints.len(), 2);
    assert_eq!(cluster.spec.resource_models[1].ranges[1].max.0, "16Gi");
    let status = cluster.status.as_ref().unwrap();
    assert_eq!(status.node_summary.as_ref().unwrap().ready_num, Some(3));
    let summary = status.resource_summary.as_ref().unwrap();
    assert_eq!(summary.allocated["cpu"].0, "2250m");
    assert_eq!(
        status.node_capacities.iter().map(|g| g.count).sum::<i32>(),
        3
    );

    let crd = cluster_crd();
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .unwrap()
        .open_api_v3_schema
        .as_ref()
        .unwrap();
    let schema = StructuralSchema::new(&serde_json::to_value(schema).unwrap(), "x").unwrap();
    let mut pruned = input.clone();
    assert_eq!(schema.prune(&mut pruned), Vec::<String>::new());
    assert_eq!(schema.validate(&input), vec![]);
}

#[test]
fn propagation_policy_weighted_sample() {
    let (pp, input): (PropagationPolicy, _) = round_trip("propagationpolicy-weighted.yaml");
    let placement = pp.spec.placement.as_ref().unwrap();
    let affinity = placement.cluster_affinity.as_ref().unwrap();
    assert_eq!(affinity.cluster_names, ["member1", "member2", "member3"]);
    assert_eq!(affinity.exclude_clusters, ["member4"]);
    let weights = &placement
        .replica_scheduling
        .as_ref()
        .unwrap()
        .weight_preference
        .as_ref()
        .unwrap()
        .static_weight_list;
    assert_eq!(weights.iter().map(|w| w.weight).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(placement.spread_constraints[0].min_groups, Some(2));
    assert_eq!(
        placement.cluster_tolerations[0].toleration_seconds,
        Some(30)
    );
    let failover = pp.spec.failover.as_ref().unwrap();
    assert_eq!(
        failover
            .application
            .as_ref()
            .unwrap()
            .decision_conditions
            .toleration_seconds,
        Some(120)
    );
    assert_eq!(
        failover.cluster.as_ref().unwrap().purge_mode,
        Some(flotilla_karmada_api::policy::PurgeMode::Directly)
    );
    assert_valid(
        "propagationpolicies.policy.karmada.io",
        "propagationpolicy-weighted.yaml",
        &input,
    );
}

#[test]
fn propagation_policy_dynamic_sample() {
    let (pp, input): (PropagationPolicy, _) = round_trip("propagationpolicy-dynamic.yaml");
    let placement = pp.spec.placement.as_ref().unwrap();
    assert_eq!(placement.cluster_affinities[0].affinity_name, "primary");
    assert_eq!(
        placement.cluster_affinities[0].affinity.cluster_names,
        ["member1", "member2"]
    );
    assert!(
        placement.cluster_affinities[1]
            .affinity
            .label_selector
            .is_some()
    );
    assert_eq!(
        placement
            .replica_scheduling
            .as_ref()
            .unwrap()
            .weight_preference
            .as_ref()
            .unwrap()
            .dynamic_weight,
        Some(flotilla_karmada_api::policy::DynamicWeightFactor::AvailableReplicas)
    );
    assert_valid(
        "propagationpolicies.policy.karmada.io",
        "propagationpolicy-dynamic.yaml",
        &input,
    );
}

#[test]
fn cluster_propagation_policy_sample() {
    let (cpp, input): (ClusterPropagationPolicy, _) = round_trip("clusterpropagationpolicy.yaml");
    // The spec derefs to the shared PropagationSpec.
    assert_eq!(cpp.spec.priority, Some(-5));
    assert_eq!(cpp.spec.resource_selectors.len(), 2);
    assert!(cpp.metadata.namespace.is_none());
    assert_valid(
        "clusterpropagationpolicies.policy.karmada.io",
        "clusterpropagationpolicy.yaml",
        &input,
    );
}

#[test]
fn override_policy_sample() {
    let (op, input): (OverridePolicy, _) = round_trip("overridepolicy.yaml");
    let first = &op.spec.override_rules[0].overriders;
    assert_eq!(first.plaintext[0].value, Some(json!(3)));
    assert_eq!(
        first.plaintext[1].value.as_ref().unwrap()["nested"][2]["three"],
        json!(3)
    );
    assert_eq!(first.plaintext[2].value, None);
    assert_eq!(
        first.image_overrider[1].predicate.as_ref().unwrap().path,
        "/spec/template/spec/containers/0/image"
    );
    assert_eq!(first.command_overrider[0].value, ["--cluster=member1"]);
    assert_eq!(first.args_overrider[0].container_name, "nginx");
    assert_eq!(first.labels_overrider[0].value["cluster"], "member1");
    assert_eq!(first.annotations_overrider[0].value["owner"], "team-a");
    assert_eq!(first.field_overrider[0].yaml[0].value, Some(json!(8081)));
    assert_eq!(op.spec.effective_rules().len(), 2);
    assert_valid(
        "overridepolicies.policy.karmada.io",
        "overridepolicy.yaml",
        &input,
    );
}

/// An OverridePolicy with `overriders` as given, and what the CRD schema says of it: the
/// (field, message) of each cause.
fn override_causes(kind: &str, overriders: Value) -> Vec<(String, String)> {
    let crd = match kind {
        "OverridePolicy" => "overridepolicies.policy.karmada.io",
        _ => "clusteroverridepolicies.policy.karmada.io",
    };
    let obj = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": kind,
        "metadata": {"name": "op"},
        "spec": {"overrideRules": [{"overriders": overriders}]},
    });
    schema_for(crd)
        .validate(&obj)
        .into_iter()
        .map(|c| (c.field, c.message))
        .collect()
}

#[test]
fn override_schemas_refuse_bad_operators_and_pointers() {
    let rule = "spec.overrideRules[0].overriders";
    for kind in ["OverridePolicy", "ClusterOverridePolicy"] {
        // An operator outside add/remove/replace.
        let causes = override_causes(
            kind,
            json!({"plaintext": [{"path": "/spec/replicas", "operator": "merge", "value": 1}]}),
        );
        assert_eq!(causes.len(), 1, "{causes:?}");
        assert_eq!(causes[0].0, format!("{rule}.plaintext[0].operator"));
        assert!(
            causes[0].1.contains("Unsupported value: \"merge\""),
            "{causes:?}"
        );
        // command/args take add and remove only.
        let causes = override_causes(
            kind,
            json!({"commandOverrider": [{"containerName": "c", "operator": "replace", "value": ["x"]}],
                   "argsOverrider": [{"containerName": "c", "operator": "replace", "value": ["x"]}]}),
        );
        let fields: Vec<&str> = causes.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(
            fields,
            [
                format!("{rule}.commandOverrider[0].operator"),
                format!("{rule}.argsOverrider[0].operator"),
            ]
        );
        // Each pointer field: not starting with '/', and '~' not followed by 0 or 1.
        for bad in ["spec/replicas", "", "/a~2b", "/a~"] {
            let causes = override_causes(
                kind,
                json!({
                    "plaintext": [{"path": bad, "operator": "remove"}],
                    "imageOverrider": [{"predicate": {"path": bad}, "component": "Tag",
                                        "operator": "replace", "value": "1"}],
                    "fieldOverrider": [{"fieldPath": bad,
                                        "yaml": [{"subPath": bad, "operator": "remove"}]}],
                }),
            );
            let fields: Vec<&str> = causes.iter().map(|c| c.0.as_str()).collect();
            assert_eq!(
                fields,
                [
                    format!("{rule}.plaintext[0].path"),
                    format!("{rule}.imageOverrider[0].predicate.path"),
                    format!("{rule}.fieldOverrider[0].fieldPath"),
                    format!("{rule}.fieldOverrider[0].yaml[0].subPath"),
                ],
                "{bad:?}"
            );
            assert!(causes[0].1.contains("should match"), "{causes:?}");
        }
    }
    // Good pointers, escapes included.
    for good in [
        "/",
        "/spec/replicas",
        "/metadata/labels/app.kubernetes.io~1name",
        "/a~0b",
        "/x//y",
    ] {
        let causes = override_causes(
            "OverridePolicy",
            json!({"plaintext": [{"path": good, "operator": "remove"}],
                   "fieldOverrider": [{"fieldPath": good, "json": [{"subPath": good, "operator": "remove"}]}]}),
        );
        assert!(causes.is_empty(), "{good:?}: {causes:?}");
    }
}

#[test]
fn cluster_override_policy_with_deprecated_fields() {
    let (cop, input): (ClusterOverridePolicy, _) =
        round_trip("clusteroverridepolicy-deprecated.yaml");
    let rules = cop.spec.effective_rules();
    assert_eq!(rules.len(), 1);
    assert_eq!(
        rules[0].target_cluster.as_ref().unwrap().cluster_names,
        ["member2"]
    );
    assert_eq!(rules[0].overriders.plaintext[0].value, Some(json!("eu")));
    assert_valid(
        "clusteroverridepolicies.policy.karmada.io",
        "clusteroverridepolicy-deprecated.yaml",
        &input,
    );
}

#[test]
fn resource_binding_sample() {
    let (rb, input): (ResourceBinding, _) = round_trip("resourcebinding.yaml");
    assert_eq!(rb.spec.replicas, 5);
    assert_eq!(rb.spec.clusters.iter().map(|c| c.replicas).sum::<i32>(), 5);
    assert_eq!(
        rb.spec
            .replica_requirements
            .as_ref()
            .unwrap()
            .resource_request["cpu"]
            .0,
        "250m"
    );
    assert_eq!(rb.spec.graceful_eviction_tasks[0].from_cluster, "member3");
    assert_eq!(
        rb.spec.suspension.as_ref().unwrap().suspension.dispatching,
        Some(true)
    );
    let status = rb.status.as_ref().unwrap();
    assert_eq!(
        status.scheduler_observed_affinity_name.as_deref(),
        Some("primary")
    );
    assert_eq!(
        status.aggregated_status[0].status.as_ref().unwrap()["readyReplicas"],
        json!(2)
    );
    assert_eq!(
        status.aggregated_status[1].health,
        Some(flotilla_karmada_api::work::ResourceHealth::Unknown)
    );
    assert_valid(
        "resourcebindings.work.karmada.io",
        "resourcebinding.yaml",
        &input,
    );
}

#[test]
fn cluster_resource_binding_shares_the_binding_shape() {
    // The same document as a ClusterResourceBinding (no namespace).
    let mut input = sample("resourcebinding.yaml");
    input["kind"] = json!("ClusterResourceBinding");
    input["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    let crb: flotilla_karmada_api::ClusterResourceBinding =
        serde_json::from_value(input.clone()).unwrap();
    assert_eq!(crb.spec.clusters.len(), 2);
    assert_eq!(serde_json::to_value(&crb).unwrap(), input);
    assert_valid(
        "clusterresourcebindings.work.karmada.io",
        "resourcebinding.yaml",
        &input,
    );
}

#[test]
fn work_sample() {
    let (work, input): (Work, _) = round_trip("work.yaml");
    let manifest = &work.spec.workload.manifests[0];
    assert_eq!(manifest.kind(), Some("Deployment"));
    assert_eq!(manifest.name(), Some("nginx"));
    assert_eq!(manifest.namespace(), Some("default"));
    let status = &work.status.as_ref().unwrap().manifest_statuses[0];
    assert_eq!(status.identifier.resource, "deployments");
    assert_eq!(status.status.as_ref().unwrap()["updatedReplicas"], json!(2));
    assert_valid("works.work.karmada.io", "work.yaml", &input);
}

// ---- samples using Karmada's newer fields and kinds ----

#[test]
fn propagation_policy_with_the_newer_placement_fields() {
    let (pp, input): (PropagationPolicy, _) = round_trip("propagationpolicy-newer-fields.yaml");
    assert_eq!(pp.spec.association, Some(true));
    let priority = pp.spec.schedule_priority.as_ref().unwrap();
    assert_eq!(priority.priority_class_name, "training-high");
    let placement = pp.spec.placement.as_ref().unwrap();
    let overflow = &placement.cluster_affinities[0].overflow_affinities;
    assert_eq!(
        overflow
            .iter()
            .map(|o| o.affinity_name.as_str())
            .collect::<Vec<_>>(),
        ["gpu-cloud", "anywhere"]
    );
    assert_eq!(overflow[1].affinity.exclude_clusters, ["member4"]);
    assert!(overflow[0].affinity.field_selector.is_some());
    let workload = placement.workload_affinity.as_ref().unwrap();
    assert_eq!(
        workload.affinity.as_ref().unwrap().group_by_label_key,
        "training.example.com/group"
    );
    assert_valid(PP, "propagationpolicy-newer-fields.yaml", &input);
    // The same spec is a ClusterPropagationPolicy's.
    let mut cluster = input.clone();
    cluster["kind"] = json!("ClusterPropagationPolicy");
    cluster["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("namespace");
    assert_valid(
        "clusterpropagationpolicies.policy.karmada.io",
        "propagationpolicy-newer-fields.yaml",
        &cluster,
    );
}

#[test]
fn schedule_priority_admits_kube_priority_classes_only() {
    let mut object = sample("propagationpolicy-newer-fields.yaml");
    object["spec"]["schedulePriority"]["priorityClassSource"] = json!("PodPriorityClass");
    assert_eq!(
        causes(PP, &object),
        ["spec.schedulePriority.priorityClassSource"]
    );
    object["spec"]["schedulePriority"] = json!({"priorityClassSource": "KubePriorityClass"});
    assert_eq!(
        causes(PP, &object),
        ["spec.schedulePriority.priorityClassName"]
    );
    object["spec"]["schedulePriority"] = json!({"priorityClassName": "x"});
    object["spec"]["placement"]["clusterAffinities"][0]["overflowAffinities"][0]["affinityName"] =
        json!("");
    object["spec"]["placement"]["workloadAffinity"]["affinity"] = json!({});
    let mut found = causes(PP, &object);
    found.sort();
    assert_eq!(
        found,
        [
            "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName",
            "spec.placement.workloadAffinity.affinity.groupByLabelKey",
            "spec.schedulePriority.priorityClassSource",
        ]
    );
}

#[test]
fn resource_binding_with_components() {
    let (rb, input): (ResourceBinding, _) = round_trip("resourcebinding-components.yaml");
    assert_eq!(
        rb.spec.components.iter().map(|c| c.replicas).sum::<i32>(),
        5
    );
    let task = &rb.spec.components[1];
    assert_eq!(
        task.replica_requirements.as_ref().unwrap().resource_request["memory"].0,
        "4Gi"
    );
    assert_eq!(rb.spec.clusters[0].components[1].replicas, 4);
    assert_eq!(
        rb.spec.required_by[0].clusters[0].components[0].name,
        "taskmanager"
    );
    assert_eq!(
        rb.spec.schedule_priority.as_ref().unwrap().priority,
        Some(1000)
    );
    assert_eq!(
        rb.spec
            .workload_affinity_groups
            .as_ref()
            .unwrap()
            .anti_affinity_group
            .as_deref(),
        Some("replica=blue")
    );
    assert_valid(
        "resourcebindings.work.karmada.io",
        "resourcebinding-components.yaml",
        &input,
    );
    let mut long = input.clone();
    long["spec"]["components"][0]["name"] = json!("c".repeat(33));
    assert_eq!(
        causes("resourcebindings.work.karmada.io", &long),
        ["spec.components[0].name"]
    );
}

#[test]
fn cluster_resource_binding_sample() {
    let (crb, input): (ClusterResourceBinding, _) = round_trip("clusterresourcebinding.yaml");
    assert_eq!(crb.spec.clusters.iter().map(|c| c.replicas).sum::<i32>(), 0);
    assert_eq!(
        crb.spec.schedule_priority.as_ref().unwrap().priority,
        Some(0)
    );
    assert_eq!(
        crb.status.as_ref().unwrap().aggregated_status[1].applied,
        Some(false)
    );
    let crd = "clusterresourcebindings.work.karmada.io";
    assert_valid(crd, "clusterresourcebinding.yaml", &input);
    let mut object = input;
    object["status"]["conditions"][0]["status"] = json!("Yes");
    object["status"]["conditions"][0]["reason"] = json!("not a reason!");
    let mut found = causes(crd, &object);
    found.sort();
    assert_eq!(
        found,
        ["status.conditions[0].reason", "status.conditions[0].status"]
    );
}

#[test]
fn federated_hpa_sample() {
    let (hpa, input): (FederatedHPA, _) = round_trip("federatedhpa.yaml");
    assert_eq!(hpa.spec.max_replicas, 10);
    assert_eq!(hpa.spec.metrics[1].type_, "Pods");
    assert_eq!(hpa.status.as_ref().unwrap().desired_replicas, 4);
    assert_valid(
        "federatedhpas.autoscaling.karmada.io",
        "federatedhpa.yaml",
        &input,
    );
    let mut object = input;
    object["spec"]
        .as_object_mut()
        .unwrap()
        .remove("maxReplicas");
    assert_eq!(
        causes("federatedhpas.autoscaling.karmada.io", &object),
        ["spec.maxReplicas"]
    );
}

#[test]
fn cron_federated_hpa_sample_and_defaults() {
    let crd = "cronfederatedhpas.autoscaling.karmada.io";
    let (cron, input): (CronFederatedHPA, _) = round_trip("cronfederatedhpa.yaml");
    assert_eq!(
        cron.spec.rules[0].time_zone.as_deref(),
        Some("Europe/Berlin")
    );
    let history = &cron.status.as_ref().unwrap().execution_histories;
    assert_eq!(
        history[0].successful_executions[0].applied_min_replicas,
        Some(5)
    );
    assert_valid(crd, "cronfederatedhpa.yaml", &input);
    let mut object = input.clone();
    schema_for(crd).apply_defaults(&mut object);
    let rule = &object["spec"]["rules"][1];
    assert_eq!(rule["successfulHistoryLimit"], json!(3));
    assert_eq!(rule["failedHistoryLimit"], json!(1));
    assert_eq!(object["spec"]["rules"][0]["suspend"], json!(false));
    let mut bad = input;
    bad["spec"]["rules"][0]["successfulHistoryLimit"] = json!(0);
    bad["spec"]["rules"][1]["name"] = json!("");
    let mut found = causes(crd, &bad);
    found.sort();
    assert_eq!(
        found,
        ["spec.rules[0].successfulHistoryLimit", "spec.rules[1].name"]
    );
}

#[test]
fn resource_interpreter_customization_sample() {
    let (ric, input): (ResourceInterpreterCustomization, _) =
        round_trip("resourceinterpretercustomization.yaml");
    assert_eq!(ric.spec.target.kind, "Workload");
    let rules = &ric.spec.customizations;
    assert!(
        rules
            .replica_resource
            .as_ref()
            .unwrap()
            .lua_script
            .contains("GetReplicas")
    );
    assert!(rules.component_resource.is_some() && rules.dependency_interpretation.is_some());
    assert!(ric.metadata.namespace.is_none());
    assert_valid(
        "resourceinterpretercustomizations.config.karmada.io",
        "resourceinterpretercustomization.yaml",
        &input,
    );
}

#[test]
fn resource_interpreter_webhook_configuration_sample() {
    let crd = "resourceinterpreterwebhookconfigurations.config.karmada.io";
    let (config, input): (ResourceInterpreterWebhookConfiguration, _) =
        round_trip("resourceinterpreterwebhookconfiguration.yaml");
    let webhook = &config.spec.webhooks[0];
    assert_eq!(webhook.rules[0].rule.kinds, ["Workload"]);
    assert_eq!(webhook.rules[0].operations.len(), 4);
    assert_eq!(
        webhook.client_config.service.as_ref().unwrap().port,
        Some(443)
    );
    assert_valid(crd, "resourceinterpreterwebhookconfiguration.yaml", &input);
    let mut object = input;
    object["webhooks"][0]
        .as_object_mut()
        .unwrap()
        .remove("interpreterContextVersions");
    assert_eq!(
        causes(crd, &object),
        ["webhooks[0].interpreterContextVersions"]
    );
}

#[test]
fn workload_rebalancer_sample() {
    let crd = "workloadrebalancers.apps.karmada.io";
    let (rebalancer, input): (WorkloadRebalancer, _) = round_trip("workloadrebalancer.yaml");
    assert_eq!(rebalancer.spec.workloads[1].namespace, None);
    assert_eq!(rebalancer.spec.ttl_seconds_after_finished, Some(60));
    let observed = &rebalancer.status.as_ref().unwrap().observed_workloads;
    assert_eq!(
        observed[1].reason.as_deref(),
        Some(flotilla_karmada_api::apps::REBALANCE_REFERENCED_BINDING_NOT_FOUND)
    );
    assert_valid(crd, "workloadrebalancer.yaml", &input);
    let mut object = input;
    object["spec"]["workloads"] = json!([]);
    assert_eq!(causes(crd, &object), ["spec.workloads"]);
}

#[test]
fn cluster_taint_policy_sample() {
    let crd = "clustertaintpolicies.policy.karmada.io";
    let (policy, input): (ClusterTaintPolicy, _) = round_trip("clustertaintpolicy.yaml");
    assert_eq!(policy.spec.taints[1].value.as_deref(), Some("true"));
    assert_eq!(policy.spec.add_on_conditions[0].operator, "NotIn");
    assert!(
        policy
            .spec
            .target_clusters
            .as_ref()
            .unwrap()
            .label_selector
            .is_some()
    );
    assert_valid(crd, "clustertaintpolicy.yaml", &input);
    let mut object = input;
    object["spec"]["taints"] = json!([]);
    assert_eq!(causes(crd, &object), ["spec.taints"]);
}

#[test]
fn multi_cluster_service_and_ingress_samples() {
    let (mcs, input): (MultiClusterService, _) = round_trip("multiclusterservice.yaml");
    assert_eq!(mcs.spec.types, ["CrossCluster"]);
    assert_eq!(mcs.spec.consumer_clusters[0].name, "member3");
    assert_eq!(
        mcs.status.as_ref().unwrap().conditions[0].type_,
        flotilla_karmada_api::networking::MCS_SERVICE_APPLIED
    );
    assert_valid(
        "multiclusterservices.networking.karmada.io",
        "multiclusterservice.yaml",
        &input,
    );
    let (mci, input): (MultiClusterIngress, _) = round_trip("multiclusteringress.yaml");
    let spec = mci.spec.spec.as_ref().unwrap();
    assert_eq!(spec.ingress_class_name.as_deref(), Some("nginx"));
    assert_valid(
        "multiclusteringresses.networking.karmada.io",
        "multiclusteringress.yaml",
        &input,
    );
}

#[test]
fn federated_resource_quota_sample() {
    let (quota, input): (FederatedResourceQuota, _) = round_trip("federatedresourcequota.yaml");
    assert_eq!(quota.spec.overall["memory"].0, "40Gi");
    assert_eq!(quota.spec.static_assignments[1].hard["cpu"].0, "500m");
    assert_eq!(
        quota.status.as_ref().unwrap().aggregated_status[0].used["cpu"].0,
        "3"
    );
    let crd = "federatedresourcequotas.policy.karmada.io";
    assert_valid(crd, "federatedresourcequota.yaml", &input);
    let mut object = input;
    object["spec"]["overall"]["cpu"] = json!("lots");
    assert_eq!(causes(crd, &object), ["spec.overall.cpu"]);
}

#[test]
fn remedy_sample() {
    let (remedy, input): (Remedy, _) = round_trip("remedy.yaml");
    let condition = remedy.spec.decision_matches[0]
        .cluster_condition_match
        .as_ref()
        .unwrap();
    assert_eq!(
        condition.operator,
        flotilla_karmada_api::remedy::ClusterConditionOperator::Equal
    );
    assert_eq!(
        remedy.spec.actions,
        [flotilla_karmada_api::remedy::ACTION_TRAFFIC_CONTROL]
    );
    let crd = "remedies.remedy.karmada.io";
    assert_valid(crd, "remedy.yaml", &input);
    let mut object = input;
    object["spec"]["decisionMatches"][0]["clusterConditionMatch"]["operator"] = json!("In");
    assert_eq!(
        causes(crd, &object),
        ["spec.decisionMatches[0].clusterConditionMatch.operator"]
    );
}

#[test]
fn service_export_and_import_samples() {
    let (export, input): (ServiceExport, _) = round_trip("serviceexport.yaml");
    assert_eq!(export.status.as_ref().unwrap().conditions[0].type_, "Valid");
    assert_valid(
        "serviceexports.multicluster.x-k8s.io",
        "serviceexport.yaml",
        &input,
    );
    let crd = "serviceimports.multicluster.x-k8s.io";
    let (import, input): (ServiceImport, _) = round_trip("serviceimport.yaml");
    let spec = import.spec.spec.as_ref().unwrap();
    assert_eq!(
        spec.type_,
        flotilla_karmada_api::mcs::ServiceImportType::ClusterSetIP
    );
    assert_eq!(import.status.as_ref().unwrap().clusters.len(), 2);
    assert_valid(crd, "serviceimport.yaml", &input);
    let mut object = input;
    object["spec"]["ips"] = json!(["10.42.0.10", "10.42.0.11"]);
    object["spec"]["type"] = json!("LoadBalancer");
    let mut found = causes(crd, &object);
    found.sort();
    assert_eq!(found, ["spec.ips", "spec.type"]);
}

// ---- the schemas reject what Karmada's reject, and default what Karmada's default ----

fn causes(crd_name: &str, object: &Value) -> Vec<String> {
    schema_for(crd_name)
        .validate(object)
        .into_iter()
        .map(|c| c.field)
        .collect()
}

const PP: &str = "propagationpolicies.policy.karmada.io";

#[test]
fn propagation_policy_schema_rejects_bad_values() {
    let base = sample("propagationpolicy-weighted.yaml");
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "spec.placement.replicaScheduling.replicaSchedulingType",
            Box::new(|v| {
                v["spec"]["placement"]["replicaScheduling"]["replicaSchedulingType"] =
                    json!("Spread")
            }),
        ),
        (
            "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight",
            Box::new(|v| {
                v["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"]
                    [0]["weight"] = json!(0)
            }),
        ),
        (
            "spec.resourceSelectors",
            Box::new(|v| v["spec"]["resourceSelectors"] = json!([])),
        ),
        (
            "spec.conflictResolution",
            Box::new(|v| v["spec"]["conflictResolution"] = json!("overwrite")),
        ),
        (
            "spec.failover.cluster.purgeMode",
            Box::new(|v| v["spec"]["failover"]["cluster"]["purgeMode"] = json!("Never")),
        ),
        (
            "spec.placement.spreadConstraints[0].spreadByField",
            Box::new(|v| {
                v["spec"]["placement"]["spreadConstraints"][0]["spreadByField"] = json!("Region")
            }),
        ),
        (
            "spec.placement.spreadConstraints[0].minGroups",
            Box::new(|v| v["spec"]["placement"]["spreadConstraints"][0]["minGroups"] = json!(-1)),
        ),
    ];
    for (field, mutate) in cases {
        let mut object = base.clone();
        mutate(&mut object);
        let found = causes(PP, &object);
        assert!(
            found.iter().any(|f| f == field),
            "expected a cause at {field}, got {found:?}"
        );
    }
}

#[test]
fn affinity_names_are_bounded() {
    let mut object = sample("propagationpolicy-dynamic.yaml");
    object["spec"]["placement"]["clusterAffinities"][0]["affinityName"] = json!("a".repeat(33));
    assert_eq!(
        causes(PP, &object),
        ["spec.placement.clusterAffinities[0].affinityName"]
    );
    object["spec"]["placement"]["clusterAffinities"][0]["affinityName"] = json!("");
    assert_eq!(
        causes(PP, &object),
        ["spec.placement.clusterAffinities[0].affinityName"]
    );
}

#[test]
fn override_schema_limits_command_operators_and_accepts_any_plaintext_value() {
    let crd = "overridepolicies.policy.karmada.io";
    let mut object = sample("overridepolicy.yaml");
    for value in [
        json!(null),
        json!("s"),
        json!([1, 2]),
        json!(false),
        json!({"a": {"b": 1}}),
    ] {
        object["spec"]["overrideRules"][0]["overriders"]["plaintext"][0]["value"] = value.clone();
        assert_eq!(causes(crd, &object), Vec::<String>::new(), "value {value}");
    }
    object["spec"]["overrideRules"][0]["overriders"]["commandOverrider"][0]["operator"] =
        json!("replace");
    assert_eq!(
        causes(crd, &object),
        ["spec.overrideRules[0].overriders.commandOverrider[0].operator"]
    );
}

#[test]
fn work_manifests_must_be_objects() {
    let crd = "works.work.karmada.io";
    let mut object = sample("work.yaml");
    object["spec"]["workload"]["manifests"][0] = json!("not an object");
    assert_eq!(causes(crd, &object), ["spec.workload.manifests[0]"]);
    assert!(serde_json::from_value::<Work>(object).is_err());
}

#[test]
fn unknown_fields_are_pruned() {
    let mut object = sample("propagationpolicy-dynamic.yaml");
    // Karmada's newer placement fields are known; made-up ones are not.
    object["spec"]["placement"]["workloadAffinity"] =
        json!({"affinity": {"groupByLabelKey": "app"}, "preferred": true});
    object["spec"]["bogus"] = json!(1);
    let mut removed = schema_for(PP).prune(&mut object);
    removed.sort();
    assert_eq!(
        removed,
        ["spec.bogus", "spec.placement.workloadAffinity.preferred"]
    );
    assert_eq!(
        object["spec"]["placement"]["workloadAffinity"],
        json!({"affinity": {"groupByLabelKey": "app"}})
    );
}

#[test]
fn karmada_defaults_are_schema_defaults() {
    let mut object = json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {"replicaScheduling": {}},
            "failover": {"application": {"decisionConditions": {}}, "cluster": {}}
        }
    });
    schema_for(PP).apply_defaults(&mut object);
    let spec = &object["spec"];
    assert_eq!(spec["priority"], json!(0));
    assert_eq!(spec["preemption"], json!("Never"));
    assert_eq!(spec["conflictResolution"], json!("Abort"));
    assert_eq!(spec["schedulerName"], json!("default-scheduler"));
    assert_eq!(
        spec["placement"]["replicaScheduling"]["replicaSchedulingType"],
        json!("Divided")
    );
    assert_eq!(
        spec["failover"]["application"]["purgeMode"],
        json!("Gracefully")
    );
    assert_eq!(
        spec["failover"]["application"]["decisionConditions"]["tolerationSeconds"],
        json!(300)
    );
    assert_eq!(
        spec["failover"]["cluster"]["purgeMode"],
        json!("Gracefully")
    );
    // The defaulted object still parses, and the Rust defaults agree.
    let pp: PropagationPolicy = serde_json::from_value(object).unwrap();
    use flotilla_karmada_api::policy::{
        ConflictResolution, PreemptionBehavior, PurgeMode, ReplicaSchedulingType,
    };
    assert_eq!(
        pp.spec.conflict_resolution,
        Some(ConflictResolution::default())
    );
    assert_eq!(pp.spec.preemption, Some(PreemptionBehavior::default()));
    let placement = pp.spec.placement.unwrap();
    assert_eq!(
        placement
            .replica_scheduling
            .unwrap()
            .replica_scheduling_type,
        Some(ReplicaSchedulingType::default())
    );
    assert_eq!(
        pp.spec.failover.unwrap().cluster.unwrap().purge_mode,
        Some(PurgeMode::default())
    );
}

#[test]
fn binding_schema_checks_eviction_reasons() {
    let crd = "resourcebindings.work.karmada.io";
    let mut object = sample("resourcebinding.yaml");
    object["spec"]["gracefulEvictionTasks"][0]["reason"] = json!("not a reason!");
    assert_eq!(
        causes(crd, &object),
        ["spec.gracefulEvictionTasks[0].reason"]
    );
}

#[test]
fn integer_quantities_are_accepted_and_written_as_strings() {
    let mut object = sample("resourcebinding.yaml");
    object["spec"]["replicaRequirements"]["resourceRequest"]["cpu"] = json!(2);
    assert_eq!(
        causes("resourcebindings.work.karmada.io", &object),
        Vec::<String>::new()
    );
    let rb: ResourceBinding = serde_json::from_value(object).unwrap();
    let back = serde_json::to_value(&rb).unwrap();
    assert_eq!(
        back["spec"]["replicaRequirements"]["resourceRequest"]["cpu"],
        json!("2")
    );
}

#[test]
fn malformed_quantities_are_rejected() {
    let crd = "resourcebindings.work.karmada.io";
    let mut object = sample("resourcebinding.yaml");
    for good in [
        json!("1.5"),
        json!("250m"),
        json!("1Gi"),
        json!("1e3"),
        json!(".5"),
        json!(4),
    ] {
        object["spec"]["replicaRequirements"]["resourceRequest"]["cpu"] = good.clone();
        assert_eq!(causes(crd, &object), Vec::<String>::new(), "{good}");
    }
    for bad in [json!("2 cores"), json!("1GB"), json!(""), json!(true)] {
        object["spec"]["replicaRequirements"]["resourceRequest"]["cpu"] = bad.clone();
        assert_eq!(
            causes(crd, &object),
            ["spec.replicaRequirements.resourceRequest.cpu"],
            "{bad}"
        );
    }
}
