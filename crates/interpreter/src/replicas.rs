//! Replicas of a template and the per-replica requirements the scheduler places, and the
//! revision of one cluster's copy to its share (Karmada's `replica.go`, `revisereplica.go`
//! and the binding controller's Job completions split).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use flotilla_karmada_api::binding::{NodeClaim, ReplicaRequirements, TargetCluster};
use k8s_openapi::api::core::v1::PodSpec;
use serde_json::{Map, Value};

use crate::fields::str_at;
use crate::{InterpretError, Kind};

/// Replicas and per-replica requirements of a template.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReplicaInfo {
    pub replicas: i32,
    pub requirements: Option<ReplicaRequirements>,
}

/// Whether the kind has a replica rule (Deployment, StatefulSet, ReplicaSet, Job, Pod).
pub fn has_replicas(api_version: &str, kind: &str) -> bool {
    matches!(
        Kind::new(api_version, kind),
        Kind::Deployment | Kind::StatefulSet | Kind::ReplicaSet | Kind::Job | Kind::Pod
    )
}

/// An `int32` field: absent is `None`, a non-integer or out-of-range value is an error.
fn int32_field(obj: &Value, path: &'static str) -> Result<Option<i32>, InterpretError> {
    let Some(v) = crate::fields::at(obj, path) else {
        return Ok(None);
    };
    if v.is_null() {
        return Ok(None);
    }
    v.as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .map(Some)
        .ok_or_else(|| InterpretError::FieldType {
            kind: str_at(obj, "/kind").to_string(),
            path,
            expected: "a 32-bit integer",
        })
}

/// Replicas and per-replica requirements; None for kinds without replicas (DaemonSet,
/// ConfigMap, CRD kinds...).
pub fn get_replicas(obj: &Value) -> Result<Option<ReplicaInfo>, InterpretError> {
    let kind = Kind::of(obj);
    let replicas = match kind {
        // The API server defaults an absent count to 1.
        Kind::Deployment | Kind::StatefulSet | Kind::ReplicaSet => {
            int32_field(obj, "/spec/replicas")?.unwrap_or(1)
        }
        Kind::Job => {
            // A Job never runs more pods at once than completions remain, so a higher
            // parallelism is not what it asks the scheduler for.
            let parallelism = int32_field(obj, "/spec/parallelism")?.unwrap_or(1);
            let completions = int32_field(obj, "/spec/completions")?.unwrap_or(parallelism);
            parallelism.min(completions)
        }
        Kind::Pod => 1,
        _ => return Ok(None),
    };
    Ok(Some(ReplicaInfo {
        replicas,
        requirements: requirements(obj, kind)?,
    }))
}

/// Requirements of one pod of the template: None when it has neither a node claim nor
/// resource requests (Karmada's `GenerateReplicaRequirements`).
fn requirements(obj: &Value, kind: Kind) -> Result<Option<ReplicaRequirements>, InterpretError> {
    let Some(spec) = kind.pod_spec_path().and_then(|p| obj.pointer(p)) else {
        return Ok(None);
    };
    let spec: PodSpec =
        serde_json::from_value(spec.clone()).map_err(|source| InterpretError::PodTemplate {
            kind: str_at(obj, "/kind").to_string(),
            source,
        })?;
    let resource_request = flotilla_pod_resources::pod_spec_requests(&spec).to_list();
    let hard_node_affinity = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .clone()
        });
    let node_selector = spec.node_selector.clone().unwrap_or_default();
    let tolerations = spec.tolerations.clone().unwrap_or_default();
    let node_claim =
        (hard_node_affinity.is_some() || !node_selector.is_empty() || !tolerations.is_empty())
            .then_some(NodeClaim {
                hard_node_affinity,
                node_selector,
                tolerations,
            });
    if node_claim.is_none() && resource_request.is_empty() {
        return Ok(None);
    }
    let namespace = str_at(obj, "/metadata/namespace");
    Ok(Some(ReplicaRequirements {
        node_claim,
        resource_request,
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        priority_class_name: spec.priority_class_name.filter(|p| !p.is_empty()),
    }))
}

fn spec_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, InterpretError> {
    let kind = str_at(obj, "/kind").to_string();
    let Some(o) = obj.as_object_mut() else {
        return Err(InterpretError::FieldType {
            kind,
            path: "",
            expected: "an object",
        });
    };
    o.entry("spec")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or(InterpretError::FieldType {
            kind,
            path: "/spec",
            expected: "an object",
        })
}

/// Sets one cluster's share into a copy of the template: `cluster_replicas` of `total`
/// (Deployment/StatefulSet/ReplicaSet `spec.replicas`; Job `spec.parallelism` and, when the
/// template sets it, `spec.completions` = ceil(completions × share / total), see the crate
/// docs; no-op for kinds without replicas).
pub fn revise_replicas(
    obj: &mut Value,
    cluster_replicas: i32,
    total: i32,
) -> Result<(), InterpretError> {
    if cluster_replicas < 0 || total < 0 {
        return Err(InterpretError::NegativeReplicas {
            replicas: cluster_replicas,
            total,
        });
    }
    let completions = match Kind::of(obj) {
        Kind::Job => int32_field(obj, "/spec/completions")?.map(|c| {
            if total == 0 {
                return c;
            }
            let share = (i64::from(c) * i64::from(cluster_replicas) + i64::from(total) - 1)
                / i64::from(total);
            i32::try_from(share.min(i64::from(c))).unwrap_or(c)
        }),
        _ => None,
    };
    revise(obj, cluster_replicas, completions)
}

/// Writes the share; `completions` only for Jobs that set them.
fn revise(obj: &mut Value, replicas: i32, completions: Option<i32>) -> Result<(), InterpretError> {
    match Kind::of(obj) {
        Kind::Deployment | Kind::StatefulSet | Kind::ReplicaSet => {
            spec_mut(obj)?.insert("replicas".into(), Value::from(replicas));
        }
        Kind::Job => {
            let spec = spec_mut(obj)?;
            spec.insert("parallelism".into(), Value::from(replicas));
            if let Some(c) = completions {
                spec.insert("completions".into(), Value::from(c));
            }
        }
        _ => {}
    }
    Ok(())
}

/// [`revise_replicas`] for `cluster` knowing every target of a Divided binding: a Job's
/// completions are split exactly over the targets (see [`divide_job_completions`]), so the
/// members together run exactly the completions asked for.
pub fn revise_replicas_among(
    obj: &mut Value,
    cluster: &str,
    targets: &[TargetCluster],
) -> Result<(), InterpretError> {
    let mine = targets.iter().find(|t| t.name == cluster).ok_or_else(|| {
        InterpretError::UnknownCluster {
            cluster: cluster.to_string(),
        }
    })?;
    if mine.replicas < 0 {
        return Err(InterpretError::NegativeReplicas {
            replicas: mine.replicas,
            total: targets.iter().map(|t| t.replicas).sum(),
        });
    }
    let completions = divide_job_completions(obj, targets)?.and_then(|m| m.get(cluster).copied());
    revise(obj, mine.replicas, completions)
}

/// A Job's `spec.completions` divided over `targets` by the Webster (Sainte-Laguë) method
/// weighted by their replicas, as Karmada's binding controller divides them; None for other
/// kinds, Jobs without completions, or targets without replicas. Ties go to the cluster with
/// fewer seats, then by name, ascending or descending by the parity of the FNV-1a hash of the
/// template's UID (stable per object, as Karmada's tie-breaker).
pub fn divide_job_completions(
    obj: &Value,
    targets: &[TargetCluster],
) -> Result<Option<BTreeMap<String, i32>>, InterpretError> {
    if Kind::of(obj) != Kind::Job {
        return Ok(None);
    }
    let Some(completions) = int32_field(obj, "/spec/completions")? else {
        return Ok(None);
    };
    if targets.iter().all(|t| t.replicas <= 0) {
        return Ok(None);
    }
    let descending = fnv1a32(str_at(obj, "/metadata/uid").as_bytes()) & 1 == 1
        && !str_at(obj, "/metadata/uid").is_empty();
    Ok(Some(webster(completions, targets, descending)))
}

fn fnv1a32(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(*b)).wrapping_mul(0x0100_0193)
    })
}

/// Seats to parties by Sainte-Laguë: each seat to the highest votes/(2·seats+1), compared
/// exactly by cross-multiplying.
fn webster(seats: i32, parties: &[TargetCluster], descending: bool) -> BTreeMap<String, i32> {
    let mut state: Vec<(&str, i64, i32)> = parties
        .iter()
        .map(|t| (t.name.as_str(), i64::from(t.replicas.max(0)), 0))
        .collect();
    let better = |a: &(&str, i64, i32), b: &(&str, i64, i32)| -> Ordering {
        let pa = i128::from(a.1) * i128::from(2 * i64::from(b.2) + 1);
        let pb = i128::from(b.1) * i128::from(2 * i64::from(a.2) + 1);
        pa.cmp(&pb).then_with(|| b.2.cmp(&a.2)).then_with(|| {
            if descending {
                a.0.cmp(b.0)
            } else {
                b.0.cmp(a.0)
            }
        })
    };
    for _ in 0..seats.max(0) {
        let Some(best) = (0..state.len()).max_by(|&i, &j| better(&state[i], &state[j])) else {
            break;
        };
        state[best].2 += 1;
    }
    state
        .into_iter()
        .map(|(name, _, seats)| (name.to_string(), seats))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy(replicas: Option<i64>, pod_spec: Value) -> Value {
        let mut d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod", "generation": 1},
            "spec": {"template": {"spec": pod_spec}},
        });
        if let Some(r) = replicas {
            d["spec"]["replicas"] = json!(r);
        }
        d
    }

    fn requests(info: &ReplicaInfo) -> Vec<(String, String)> {
        info.requirements
            .as_ref()
            .map(|r| {
                r.resource_request
                    .iter()
                    .map(|(k, v)| (k.clone(), v.0.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    type Pairs = Vec<(String, String)>;
    type Split = Vec<(&'static str, i32)>;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn replicas_per_kind() {
        let pod_spec = json!({"containers": [{"name": "c", "image": "x"}]});
        let job = |parallelism: Option<i64>, completions: Option<i64>| {
            let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                "spec": {"template": {"spec": pod_spec.clone()}}});
            if let Some(p) = parallelism {
                j["spec"]["parallelism"] = json!(p);
            }
            if let Some(c) = completions {
                j["spec"]["completions"] = json!(c);
            }
            j
        };
        let table: Vec<(&str, Value, Option<i32>)> = vec![
            ("deployment", deploy(Some(3), pod_spec.clone()), Some(3)),
            (
                "deployment replicas 0",
                deploy(Some(0), pod_spec.clone()),
                Some(0),
            ),
            (
                "deployment defaulted",
                deploy(None, pod_spec.clone()),
                Some(1),
            ),
            (
                "statefulset",
                json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 5, "template": {"spec": pod_spec}}}),
                Some(5),
            ),
            (
                "replicaset",
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "spec": {"replicas": 2}}),
                Some(2),
            ),
            ("job parallelism", job(Some(4), Some(10)), Some(4)),
            ("job fewer completions", job(Some(4), Some(2)), Some(2)),
            ("job defaults", job(None, None), Some(1)),
            ("job work queue", job(Some(3), None), Some(3)),
            (
                "pod",
                json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}}),
                Some(1),
            ),
            (
                "daemonset",
                json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"template": {"spec": pod_spec}}}),
                None,
            ),
            (
                "cronjob",
                json!({"apiVersion": "batch/v1", "kind": "CronJob", "spec": {}}),
                None,
            ),
            (
                "configmap",
                json!({"apiVersion": "v1", "kind": "ConfigMap"}),
                None,
            ),
            (
                "crd",
                json!({"apiVersion": "example.io/v1", "kind": "Deployment", "spec": {"replicas": 9}}),
                None,
            ),
        ];
        for (name, obj, want) in table {
            let got = get_replicas(&obj).unwrap().map(|i| i.replicas);
            assert_eq!(got, want, "{name}");
            let kind = str_at(&obj, "/kind");
            assert_eq!(
                has_replicas(str_at(&obj, "/apiVersion"), kind),
                want.is_some(),
                "{name}"
            );
        }
    }

    #[test]
    fn requirements_table() {
        let table: Vec<(&str, Value, Pairs)> = vec![
            (
                "requests",
                json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "128Mi"}}}]}),
                pairs(&[("cpu", "250m"), ("memory", "128Mi")]),
            ),
            (
                "limits only",
                json!({"containers": [{"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]}),
                pairs(&[("cpu", "2"), ("memory", "1Gi")]),
            ),
            (
                "init container peak and sidecar",
                json!({
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [
                        {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                        {"name": "i", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}},
                    ],
                }),
                pairs(&[("cpu", "1050m"), ("memory", "64Mi")]),
            ),
            (
                "missing requests",
                json!({"containers": [{"name": "c"}]}),
                vec![],
            ),
        ];
        for (name, spec, want) in table {
            let info = get_replicas(&deploy(Some(2), spec)).unwrap().unwrap();
            assert_eq!(requests(&info), want, "{name}");
            if want.is_empty() {
                assert_eq!(info.requirements, None, "{name}: nothing to claim");
            } else {
                let r = info.requirements.unwrap();
                assert_eq!(r.namespace.as_deref(), Some("prod"), "{name}");
                assert_eq!(r.node_claim, None, "{name}");
            }
        }
    }

    #[test]
    fn node_claim_and_priority() {
        let spec = json!({
            "containers": [{"name": "c"}],
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
            "priorityClassName": "high",
        });
        let r = get_replicas(&deploy(Some(1), spec))
            .unwrap()
            .unwrap()
            .requirements
            .unwrap();
        let claim = r.node_claim.unwrap();
        assert_eq!(
            claim.node_selector.get("disk").map(String::as_str),
            Some("ssd")
        );
        assert_eq!(claim.tolerations.len(), 1);
        assert_eq!(
            claim.hard_node_affinity.unwrap().node_selector_terms[0]
                .match_expressions
                .as_ref()
                .map(Vec::len),
            Some(1)
        );
        assert_eq!(r.priority_class_name.as_deref(), Some("high"));
        assert!(r.resource_request.is_empty());

        // Empty selector and tolerations claim nothing.
        let spec = json!({"containers": [{"name": "c"}], "nodeSelector": {}, "tolerations": []});
        let info = get_replicas(&deploy(Some(1), spec)).unwrap().unwrap();
        assert_eq!(info.requirements, None);
    }

    #[test]
    fn pod_requirements_come_from_its_spec() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                     "overhead": {"cpu": "100m"}}});
        let info = get_replicas(&pod).unwrap().unwrap();
        assert_eq!(requests(&info), pairs(&[("cpu", "1100m")]));
    }

    #[test]
    fn bad_fields_are_errors() {
        let d =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "three"}});
        assert!(matches!(
            get_replicas(&d),
            Err(InterpretError::FieldType {
                path: "/spec/replicas",
                ..
            })
        ));
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "spec": {"replicas": 1, "template": {"spec": {"containers": "nope"}}}});
        assert!(matches!(
            get_replicas(&d),
            Err(InterpretError::PodTemplate { .. })
        ));
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 1i64 << 40}});
        assert!(get_replicas(&d).is_err());
    }

    fn job(completions: Option<i64>, uid: &str) -> Value {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "uid": uid}, "spec": {"parallelism": 4}});
        if let Some(c) = completions {
            j["spec"]["completions"] = json!(c);
        }
        j
    }

    #[test]
    fn revise_table() {
        // (object, cluster replicas, total, expected spec fields)
        let table: Vec<(&str, Value, i32, i32, Value)> = vec![
            (
                "deployment",
                deploy(Some(6), json!({})),
                2,
                6,
                json!({"replicas": 2}),
            ),
            (
                "deployment to 0",
                deploy(Some(6), json!({})),
                0,
                6,
                json!({"replicas": 0}),
            ),
            (
                "job 10 completions, 3 of 4",
                job(Some(10), ""),
                3,
                4,
                json!({"parallelism": 3, "completions": 8}),
            ),
            (
                "job 10 completions, 1 of 4",
                job(Some(10), ""),
                1,
                4,
                json!({"parallelism": 1, "completions": 3}),
            ),
            (
                "job duplicated",
                job(Some(10), ""),
                4,
                4,
                json!({"parallelism": 4, "completions": 10}),
            ),
            (
                "job work queue keeps completions unset",
                job(None, ""),
                2,
                4,
                json!({"parallelism": 2}),
            ),
        ];
        for (name, mut obj, r, total, want) in table {
            revise_replicas(&mut obj, r, total).unwrap();
            for (k, v) in want.as_object().unwrap() {
                assert_eq!(&obj["spec"][k], v, "{name}: {k}");
            }
            if want.get("completions").is_none() {
                assert!(obj["spec"].get("completions").is_none(), "{name}");
            }
        }
        // Kinds without replicas are left as they are.
        for obj in [
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "spec": {"x": 1}}),
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": []}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}),
        ] {
            let mut copy = obj.clone();
            revise_replicas(&mut copy, 3, 5).unwrap();
            assert_eq!(copy, obj);
        }
        let mut d = deploy(Some(1), json!({}));
        assert!(matches!(
            revise_replicas(&mut d, -1, 3),
            Err(InterpretError::NegativeReplicas { .. })
        ));
    }

    fn targets(t: &[(&str, i32)]) -> Vec<TargetCluster> {
        t.iter()
            .map(|(n, r)| TargetCluster {
                name: n.to_string(),
                replicas: *r,
                components: Vec::new(),
            })
            .collect()
    }

    #[test]
    fn completions_split_exactly_by_webster() {
        // (completions, targets, uid, expected split)
        let table: Vec<(i64, Vec<TargetCluster>, &str, Split)> = vec![
            // 3:1 weights over 10 seats: ties go to fewer seats -> 7:3.
            (
                10,
                targets(&[("a", 3), ("b", 1)]),
                "",
                vec![("a", 7), ("b", 3)],
            ),
            (
                4,
                targets(&[("a", 3), ("b", 1)]),
                "",
                vec![("a", 3), ("b", 1)],
            ),
            (
                6,
                targets(&[("a", 1), ("b", 1), ("c", 1)]),
                "",
                vec![("a", 2), ("b", 2), ("c", 2)],
            ),
            // One seat between equals: name ascending without a UID...
            (
                1,
                targets(&[("a", 1), ("b", 1)]),
                "",
                vec![("a", 1), ("b", 0)],
            ),
            // ...and by the UID hash's parity otherwise (fnv1a32("a") is even, "b" odd).
            (
                1,
                targets(&[("a", 1), ("b", 1)]),
                "a",
                vec![("a", 1), ("b", 0)],
            ),
            (
                1,
                targets(&[("a", 1), ("b", 1)]),
                "b",
                vec![("a", 0), ("b", 1)],
            ),
            (
                5,
                targets(&[("a", 2), ("b", 0)]),
                "",
                vec![("a", 5), ("b", 0)],
            ),
        ];
        for (completions, t, uid, want) in table {
            let obj = job(Some(completions), uid);
            let got = divide_job_completions(&obj, &t).unwrap().unwrap();
            let want: BTreeMap<String, i32> =
                want.into_iter().map(|(n, s)| (n.to_string(), s)).collect();
            assert_eq!(got, want, "{completions} over {t:?} uid {uid:?}");
            assert_eq!(got.values().sum::<i32>() as i64, completions);
        }
        assert_eq!(fnv1a32(b"a") & 1, 0);
        assert_eq!(fnv1a32(b"b") & 1, 1);
        assert_eq!(
            divide_job_completions(&job(None, ""), &targets(&[("a", 1)])).unwrap(),
            None
        );
        assert_eq!(
            divide_job_completions(&deploy(Some(1), json!({})), &targets(&[("a", 1)])).unwrap(),
            None
        );
    }

    #[test]
    fn revise_among_targets() {
        let t = targets(&[("a", 3), ("b", 1)]);
        let mut a = job(Some(10), "");
        let mut b = a.clone();
        revise_replicas_among(&mut a, "a", &t).unwrap();
        revise_replicas_among(&mut b, "b", &t).unwrap();
        assert_eq!(
            (&a["spec"]["parallelism"], &a["spec"]["completions"]),
            (&json!(3), &json!(7))
        );
        assert_eq!(
            (&b["spec"]["parallelism"], &b["spec"]["completions"]),
            (&json!(1), &json!(3))
        );
        let mut d = deploy(Some(4), json!({}));
        revise_replicas_among(&mut d, "b", &t).unwrap();
        assert_eq!(d["spec"]["replicas"], json!(1));
        assert!(matches!(
            revise_replicas_among(&mut d, "zz", &t),
            Err(InterpretError::UnknownCluster { .. })
        ));
    }
}
