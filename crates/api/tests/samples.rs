//! Karmada-shaped sample objects (tests/samples/*.yaml): each parses into its Rust type and
//! re-serialises to the same JSON, and the CRD kinds pass our server's structural schema
//! checks (nothing pruned, nothing invalid).

// Test helpers may panic: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::OnceLock;

use flotilla_api::{
    Cluster, ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
    ResourceBinding, Work, cluster_crd, crds,
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
        Some(flotilla_api::policy::PurgeMode::Directly)
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
        Some(flotilla_api::policy::DynamicWeightFactor::AvailableReplicas)
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
        Some(flotilla_api::work::ResourceHealth::Unknown)
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
    let crb: flotilla_api::ClusterResourceBinding = serde_json::from_value(input.clone()).unwrap();
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
    use flotilla_api::policy::{
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
