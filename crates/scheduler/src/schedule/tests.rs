//! End-to-end tests of the pipeline through [`schedule`].

use super::*;
use crate::resources::ResourceVector;
use crate::snapshot::NodeGroup;
use flotilla_karmada_api::policy::{
    ClusterAffinityTerm, ClusterPreferences, DynamicWeightFactor, FieldSelector, Placement,
    ReplicaDivisionPreference, ReplicaSchedulingStrategy, ReplicaSchedulingType, SpreadFieldValue,
    StaticClusterWeight,
};
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use proptest::prelude::*;

/// A ready cluster serving apps/v1 Deployment with room for `pods` one-core replicas.
fn cluster(name: &str, pods: i64) -> ClusterSnapshot {
    let mut s = ClusterSnapshot {
        name: name.into(),
        has_resource_summary: true,
        ready: true,
        free: ResourceVector::new()
            .with("cpu", pods * 1000)
            .with("memory", 1 << 40)
            .with("pods", 1000),
        ..ClusterSnapshot::default()
    };
    s.api_enablements.insert("apps/v1", "Deployment");
    s
}

fn arcs(v: Vec<ClusterSnapshot>) -> Vec<Arc<ClusterSnapshot>> {
    v.into_iter().map(Arc::new).collect()
}

fn one_cpu() -> ResourceVector {
    ResourceVector::new().with("cpu", 1000)
}

fn divided(pref: Option<ReplicaDivisionPreference>, w: Option<ClusterPreferences>) -> Placement {
    Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: pref,
            weight_preference: w,
        }),
        ..Placement::default()
    }
}

fn dynamic() -> Placement {
    divided(
        Some(ReplicaDivisionPreference::Weighted),
        Some(ClusterPreferences {
            static_weight_list: vec![],
            dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
        }),
    )
}

fn aggregated() -> Placement {
    divided(Some(ReplicaDivisionPreference::Aggregated), None)
}

fn weights(list: &[(&[&str], i64)]) -> Placement {
    divided(
        Some(ReplicaDivisionPreference::Weighted),
        Some(ClusterPreferences {
            static_weight_list: list
                .iter()
                .map(|(names, weight)| StaticClusterWeight {
                    target_cluster: ClusterAffinity {
                        cluster_names: names.iter().map(|n| (*n).to_owned()).collect(),
                        ..ClusterAffinity::default()
                    },
                    weight: *weight,
                })
                .collect(),
            dynamic_weight: None,
        }),
    )
}

fn targets(list: &[(&str, i32)]) -> Vec<TargetCluster> {
    list.iter()
        .map(|(n, r)| TargetCluster {
            name: (*n).into(),
            replicas: *r,
            components: Vec::new(),
        })
        .collect()
}

struct Run<'a> {
    placement: &'a Placement,
    replicas: i32,
    previous: &'a [TargetCluster],
    fresh: bool,
    evicted: &'a [String],
    observed_affinity: Option<&'a str>,
    request: ResourceVector,
    key: &'a str,
}

impl<'a> Run<'a> {
    fn new(placement: &'a Placement, replicas: i32) -> Self {
        Run {
            placement,
            replicas,
            previous: &[],
            fresh: false,
            evicted: &[],
            observed_affinity: None,
            request: one_cpu(),
            key: "uid-0",
        }
    }

    fn go(
        &self,
        clusters: &[Arc<ClusterSnapshot>],
        reserved: &Reservations,
    ) -> Result<ScheduleResult, ScheduleError> {
        let req = ScheduleRequest {
            key: self.key,
            api_version: "apps/v1",
            kind: "Deployment",
            replicas: self.replicas,
            per_replica: &self.request,
            placement: self.placement,
            previous: self.previous,
            fresh: self.fresh,
            evicted: self.evicted,
            observed_affinity: self.observed_affinity,
        };
        schedule(&req, clusters, reserved)
    }

    fn split(&self, clusters: &[Arc<ClusterSnapshot>]) -> Vec<(String, i32)> {
        self.go(clusters, &Reservations::default())
            .unwrap()
            .clusters
            .into_iter()
            .map(|t| (t.name, t.replicas))
            .collect()
    }
}

fn pairs(list: &[(&str, i32)]) -> Vec<(String, i32)> {
    list.iter().map(|(n, r)| ((*n).to_owned(), *r)).collect()
}

fn three(caps: [i64; 3]) -> Vec<Arc<ClusterSnapshot>> {
    arcs(vec![
        cluster("m1", caps[0]),
        cluster("m2", caps[1]),
        cluster("m3", caps[2]),
    ])
}

#[test]
fn static_weights_1_2_4() {
    let p = weights(&[(&["m1"], 1), (&["m2"], 2), (&["m3"], 4)]);
    let c = three([0, 0, 0]); // capacity is not considered
    assert_eq!(
        Run::new(&p, 7).split(&c),
        pairs(&[("m1", 1), ("m2", 2), ("m3", 4)])
    );
}

#[test]
fn static_weights_unmatched_clusters_are_dropped() {
    let p = weights(&[(&["m1"], 1), (&["m2"], 3)]);
    let c = three([0, 0, 0]);
    assert_eq!(Run::new(&p, 8).split(&c), pairs(&[("m1", 2), ("m2", 6)]));
    // No entry matches any cluster: DESIGN §5 / Karmada's zero-sum rule gives weight 1 each.
    let p = weights(&[(&["elsewhere"], 3)]);
    assert_eq!(
        Run::new(&p, 3).split(&c),
        pairs(&[("m1", 1), ("m2", 1), ("m3", 1)])
    );
}

#[test]
fn static_weight_ties_follow_the_key_order() {
    let p = weights(&[]);
    let c = three([0, 0, 0]);
    let mut asc = Run::new(&p, 1);
    let mut desc = Run::new(&p, 1);
    // Find one key of each parity.
    let keys: Vec<String> = (0..10).map(|i| format!("uid-{i}")).collect();
    asc.key = keys.iter().find(|k| !ties_descending(k)).unwrap();
    desc.key = keys.iter().find(|k| ties_descending(k)).unwrap();
    assert_eq!(asc.split(&c), pairs(&[("m1", 1)]));
    assert_eq!(desc.split(&c), pairs(&[("m3", 1)]));
    // The input order does not matter.
    let mut shuffled = c.clone();
    shuffled.reverse();
    assert_eq!(asc.split(&shuffled), pairs(&[("m1", 1)]));
    assert_eq!(desc.split(&shuffled), pairs(&[("m3", 1)]));
}

#[test]
fn dynamic_weights_10_5_0() {
    let p = dynamic();
    let c = three([10, 5, 0]);
    assert_eq!(Run::new(&p, 9).split(&c), pairs(&[("m1", 6), ("m2", 3)]));
    assert_eq!(Run::new(&p, 15).split(&c), pairs(&[("m1", 10), ("m2", 5)]));
    let e = Run::new(&p, 18)
        .go(&c, &Reservations::default())
        .unwrap_err();
    assert_eq!(e.reason(), "Unschedulable");
    assert_eq!(
        e.message(),
        "insufficient capacity: 3 of 18 replicas cannot be placed (free capacity 15)"
    );
}

#[test]
fn scale_up_6_to_9_keeps_the_first_6() {
    let p = dynamic();
    // After placing 4 + 2, the members report less free capacity.
    let c = three([4, 4, 4]);
    let prev = targets(&[("m1", 4), ("m2", 2)]);
    let mut r = Run::new(&p, 9);
    r.previous = &prev;
    assert_eq!(r.split(&c), pairs(&[("m1", 5), ("m2", 3), ("m3", 1)]));
    // Unchanged total: unchanged assignment, whatever the capacities say.
    let mut same = Run::new(&p, 6);
    same.previous = &prev;
    assert_eq!(
        same.split(&three([0, 0, 100])),
        pairs(&[("m1", 4), ("m2", 2)])
    );
}

#[test]
fn scale_down_9_to_4_is_proportional() {
    let p = dynamic();
    let c = three([0, 0, 50]);
    let prev = targets(&[("m1", 6), ("m2", 3)]);
    let mut r = Run::new(&p, 4);
    r.previous = &prev;
    assert_eq!(r.split(&c), pairs(&[("m1", 3), ("m2", 1)]));
}

#[test]
fn fresh_mode_recomputes_everything() {
    let p = dynamic();
    let c = three([2, 4, 12]);
    let prev = targets(&[("m1", 4), ("m2", 2)]);
    let mut r = Run::new(&p, 12);
    r.previous = &prev;
    r.fresh = true;
    // Weights free + current = 6/6/12.
    assert_eq!(r.split(&c), pairs(&[("m1", 3), ("m2", 3), ("m3", 6)]));
}

#[test]
fn aggregated_uses_the_fewest_clusters() {
    let p = aggregated();
    let c = three([3, 10, 6]);
    assert_eq!(Run::new(&p, 8).split(&c), pairs(&[("m2", 8)]));
    assert_eq!(Run::new(&p, 12).split(&c), pairs(&[("m2", 7), ("m3", 5)]));
    // A cluster already holding replicas comes first.
    let prev = targets(&[("m1", 1)]);
    let mut r = Run::new(&p, 3);
    r.previous = &prev;
    assert_eq!(r.split(&c), pairs(&[("m1", 3)]));
    let e = Run::new(&p, 20)
        .go(&c, &Reservations::default())
        .unwrap_err();
    assert_eq!(
        e.message(),
        "insufficient capacity: 1 of 20 replicas cannot be placed (free capacity 19)"
    );
}

#[test]
fn duplicated_and_non_workloads() {
    let dup = Placement::default(); // no replicaScheduling: Duplicated
    let c = three([0, 1, 2]);
    assert_eq!(
        Run::new(&dup, 3).split(&c),
        pairs(&[("m1", 3), ("m2", 3), ("m3", 3)])
    );
    // Zero replicas: every selected cluster gets 0, whatever the strategy.
    for p in [dup, dynamic(), aggregated(), weights(&[(&["m1"], 1)])] {
        assert_eq!(
            Run::new(&p, 0).split(&c),
            pairs(&[("m1", 0), ("m2", 0), ("m3", 0)]),
            "{p:?}"
        );
    }
}

#[test]
fn spread_constraints() {
    let mut c = vec![
        cluster("a1", 10),
        cluster("a2", 9),
        cluster("b1", 5),
        cluster("c1", 3),
    ];
    for (s, region) in c.iter_mut().zip(["eu", "eu", "us", "ap"]) {
        s.region = Some(region.into());
    }
    let c = arcs(c);
    let spread = |field, min, max| flotilla_karmada_api::policy::SpreadConstraint {
        spread_by_field: Some(field),
        spread_by_label: None,
        min_groups: Some(min),
        max_groups: Some(max),
    };
    let mut p = Placement {
        spread_constraints: vec![
            spread(SpreadFieldValue::Region, 2, 2),
            spread(SpreadFieldValue::Cluster, 2, 2),
        ],
        ..Placement::default()
    };
    assert_eq!(Run::new(&p, 2).split(&c), pairs(&[("a1", 2), ("b1", 2)]));
    p.spread_constraints = vec![spread(SpreadFieldValue::Region, 4, 4)];
    let e = Run::new(&p, 2)
        .go(&c, &Reservations::default())
        .unwrap_err();
    assert!(matches!(e, ScheduleError::SpreadConstraint { .. }), "{e:?}");
    assert_eq!(e.reason(), "SchedulerError");
    p.spread_constraints = vec![spread(SpreadFieldValue::Cluster, 5, 5)];
    assert!(matches!(
        Run::new(&p, 2).go(&c, &Reservations::default()),
        Err(ScheduleError::SpreadConstraint { .. })
    ));
    // Cluster maxGroups limits a dynamic division to the best clusters.
    let mut d = dynamic();
    d.spread_constraints = vec![spread(SpreadFieldValue::Cluster, 1, 2)];
    assert_eq!(Run::new(&d, 19).split(&c), pairs(&[("a1", 10), ("a2", 9)]));
    // Clusters lacking the grouped property are filtered, and said so.
    let mut p = Placement {
        spread_constraints: vec![spread(SpreadFieldValue::Provider, 1, 1)],
        ..Placement::default()
    };
    let e = Run::new(&p, 1)
        .go(&c, &Reservations::default())
        .unwrap_err();
    assert_eq!(
        e.message(),
        "0/4 clusters are available: 4 cluster(s) did not have the provider property."
    );
    // Static weights ignore spread constraints (Karmada).
    p.replica_scheduling = weights(&[(&["a1", "a2", "b1", "c1"], 1)]).replica_scheduling;
    assert_eq!(
        Run::new(&p, 4).split(&c),
        pairs(&[("a1", 1), ("a2", 1), ("b1", 1), ("c1", 1)])
    );
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: Some("true".into()),
        effect: effect.into(),
        time_added: None,
    }
}

fn toleration(key: &str, op: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some(op.into()),
        value: Some("true".into()),
        effect: Some(effect.into()).filter(|e: &String| !e.is_empty()),
        toleration_seconds: None,
    }
}

#[test]
fn taints_and_tolerations() {
    let mut c = vec![cluster("m1", 5), cluster("m2", 5), cluster("m3", 5)];
    c[0].taints = vec![taint("maint", "NoSchedule")];
    c[1].taints = vec![taint("down", "NoExecute")];
    c[2].taints = vec![taint("soft", "PreferNoSchedule")];
    let c = arcs(c);
    let mut p = Placement::default();
    assert_eq!(Run::new(&p, 1).split(&c), pairs(&[("m3", 1)]));
    // Existing placements are kept whatever the taint (Karmada's filter skips clusters the
    // binding already uses; an untolerated NoExecute taint is the failover's to act on).
    let prev = targets(&[("m1", 1), ("m2", 1)]);
    let mut r = Run::new(&p, 1);
    r.previous = &prev;
    assert_eq!(r.split(&c), pairs(&[("m1", 1), ("m2", 1), ("m3", 1)]));
    // Kept, but given nothing more: a scale-up by capacity goes to the untainted clusters.
    let dynamic_placement = dynamic();
    let prev = targets(&[("m1", 2), ("m2", 2), ("m3", 2)]);
    let mut r = Run::new(&dynamic_placement, 9);
    r.previous = &prev;
    assert_eq!(r.split(&c), pairs(&[("m1", 2), ("m2", 2), ("m3", 5)]));
    type Case = (Vec<Toleration>, Vec<(&'static str, i32)>);
    let cases: Vec<Case> = vec![
        (
            vec![toleration("maint", "Exists", "NoSchedule")],
            vec![("m1", 1), ("m3", 1)],
        ),
        (
            vec![toleration("maint", "Equal", "")],
            vec![("m1", 1), ("m3", 1)],
        ),
        (
            vec![toleration("down", "Equal", "NoExecute")],
            vec![("m2", 1), ("m3", 1)],
        ),
        (
            vec![toleration("down", "Equal", "NoSchedule")],
            vec![("m3", 1)],
        ),
        (
            vec![toleration("", "Exists", "")],
            vec![("m1", 1), ("m2", 1), ("m3", 1)],
        ),
    ];
    for (tolerations, want) in cases {
        p.cluster_tolerations = tolerations;
        assert_eq!(
            Run::new(&p, 1).split(&c),
            pairs(&want),
            "{:?}",
            p.cluster_tolerations
        );
    }
}

#[test]
fn no_fit_message_counts_per_filter() {
    let mut c = vec![cluster("m1", 5), cluster("m2", 5), cluster("m3", 5)];
    c[0].taints = vec![taint("maint", "NoSchedule")];
    let c = arcs(c);
    let p = Placement {
        cluster_affinity: Some(ClusterAffinity {
            exclude_clusters: vec!["m2".into(), "m3".into()],
            ..ClusterAffinity::default()
        }),
        ..Placement::default()
    };
    let e = Run::new(&p, 1)
        .go(&c, &Reservations::default())
        .unwrap_err();
    assert_eq!(e.reason(), "NoClusterFit");
    assert_eq!(
        e.message(),
        "0/3 clusters are available: 1 cluster(s) had untolerated taint {maint: true}, \
         2 cluster(s) did not match the placement cluster affinity constraint."
    );
}

#[test]
fn node_level_fit() {
    // 6 cores free in the cluster, 1.5 per node: 2-core replicas fit no node.
    let mut s = cluster("m1", 6);
    s.node_groups = vec![NodeGroup {
        count: 4,
        available: ResourceVector::new().with("cpu", 1500).with("pods", 50),
    }];
    let c = arcs(vec![s]);
    let p = dynamic();
    let mut r = Run::new(&p, 1);
    r.request = ResourceVector::new().with("cpu", 2000);
    let e = r.go(&c, &Reservations::default()).unwrap_err();
    assert_eq!(
        e.message(),
        "insufficient capacity: 1 of 1 replicas cannot be placed (free capacity 0)"
    );
    r.request = ResourceVector::new().with("cpu", 500);
    r.replicas = 12;
    assert_eq!(r.split(&c), pairs(&[("m1", 12)]));
}

#[test]
fn affinity_label_and_field_selectors() {
    let mut c = vec![cluster("m1", 5), cluster("m2", 5), cluster("m3", 5)];
    c[0].labels.insert("env".into(), "prod".into());
    c[1].labels.insert("env".into(), "dev".into());
    c[0].provider = Some("aws".into());
    c[2].provider = Some("gcp".into());
    let c = arcs(c);
    let by_label = Placement {
        cluster_affinity: Some(ClusterAffinity {
            label_selector: Some(LabelSelector {
                match_labels: Some([("env".to_owned(), "prod".to_owned())].into()),
                match_expressions: None,
            }),
            ..ClusterAffinity::default()
        }),
        ..Placement::default()
    };
    assert_eq!(Run::new(&by_label, 1).split(&c), pairs(&[("m1", 1)]));
    let by_field = |op: &str| Placement {
        cluster_affinity: Some(ClusterAffinity {
            field_selector: Some(FieldSelector {
                match_expressions: vec![NodeSelectorRequirement {
                    key: "provider".into(),
                    operator: op.into(),
                    values: Some(vec!["aws".into()]),
                }],
            }),
            ..ClusterAffinity::default()
        }),
        ..Placement::default()
    };
    assert_eq!(Run::new(&by_field("In"), 1).split(&c), pairs(&[("m1", 1)]));
    assert_eq!(
        Run::new(&by_field("NotIn"), 1).split(&c),
        pairs(&[("m2", 1), ("m3", 1)])
    );
    let names = Placement {
        cluster_affinity: Some(ClusterAffinity {
            cluster_names: vec!["m2".into(), "m3".into()],
            exclude_clusters: vec!["m3".into()],
            ..ClusterAffinity::default()
        }),
        ..Placement::default()
    };
    assert_eq!(Run::new(&names, 1).split(&c), pairs(&[("m2", 1)]));
}

fn term(name: &str, clusters: &[&str]) -> ClusterAffinityTerm {
    ClusterAffinityTerm {
        affinity_name: name.into(),
        affinity: ClusterAffinity {
            cluster_names: clusters.iter().map(|c| (*c).to_owned()).collect(),
            ..ClusterAffinity::default()
        },
        overflow_affinities: Vec::new(),
    }
}

#[test]
fn cluster_affinities_fall_through() {
    let mut c = vec![cluster("m1", 2), cluster("m2", 10), cluster("m3", 10)];
    c[2].taints = vec![taint("maint", "NoSchedule")];
    let c = arcs(c);
    let mut p = dynamic();
    p.cluster_affinities = vec![
        term("primary", &["m1"]),
        term("tainted", &["m3"]),
        term("backup", &["m2"]),
    ];
    let reserved = Reservations::default();
    // Fits the first term.
    let r = Run::new(&p, 2).go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("primary"));
    assert_eq!(r.clusters, targets(&[("m1", 2)]));
    // Too big for the first, no fit in the second: the third.
    let r = Run::new(&p, 5).go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("backup"));
    assert_eq!(r.clusters, targets(&[("m2", 5)]));
    // Nothing fits: the first term's error.
    let e = Run::new(&p, 50).go(&c, &reserved).unwrap_err();
    assert_eq!(e.reason(), "Unschedulable");
    // Once on a later term, a steady reschedule stays there.
    let prev = targets(&[("m2", 5)]);
    let mut steady = Run::new(&p, 1);
    steady.previous = &prev;
    let r = steady.go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("backup"));
    assert_eq!(r.clusters, targets(&[("m2", 1)]));
    // A fresh reschedule starts over.
    steady.fresh = true;
    assert_eq!(
        steady.go(&c, &reserved).unwrap().affinity_name.as_deref(),
        Some("primary")
    );
}

#[test]
fn cluster_affinities_resume_at_the_observed_term() {
    // m2 is in both terms, so the placement alone cannot tell which term put it there.
    let c = arcs(vec![cluster("m1", 10), cluster("m2", 10)]);
    let mut p = dynamic();
    p.cluster_affinities = vec![term("primary", &["m1", "m2"]), term("backup", &["m2"])];
    let reserved = Reservations::default();
    let prev = targets(&[("m2", 4)]);
    let mut steady = Run::new(&p, 6);
    steady.previous = &prev;
    // The status says the last schedule used "backup": stay there, all on m2.
    steady.observed_affinity = Some("backup");
    let r = steady.go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("backup"));
    assert_eq!(r.clusters, targets(&[("m2", 6)]));
    // Without it, the first term accepting every current target is used.
    steady.observed_affinity = None;
    let r = steady.go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("primary"));
    assert_eq!(r.clusters.iter().map(|t| t.replicas).sum::<i32>(), 6);
    // A name no longer in the placement counts as unknown.
    steady.observed_affinity = Some("removed");
    let r = steady.go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("primary"));
    // A fresh reschedule starts at the first term whatever was observed.
    steady.observed_affinity = Some("backup");
    steady.fresh = true;
    let r = steady.go(&c, &reserved).unwrap();
    assert_eq!(r.affinity_name.as_deref(), Some("primary"));
}

#[test]
fn api_enablement_filter() {
    let mut c = vec![cluster("m1", 5), cluster("m2", 5), cluster("m3", 5)];
    c[1].api_enablements.clear(); // nothing reported
    c[2].api_enablements.clear();
    c[2].api_enablements.insert("apps/v1", "StatefulSet");
    let c = arcs(c);
    let p = Placement::default();
    assert_eq!(Run::new(&p, 1).split(&c), pairs(&[("m1", 1)]));
    let mut c2: Vec<ClusterSnapshot> = c.iter().map(|a| (**a).clone()).collect();
    c2[0].api_enablements.clear();
    let e = Run::new(&p, 1)
        .go(&arcs(c2), &Reservations::default())
        .unwrap_err();
    assert_eq!(
        e.message(),
        "0/3 clusters are available: 3 cluster(s) did not have the API resource."
    );
}

#[test]
fn deleting_and_evicted_clusters_are_not_targets() {
    let mut c = vec![cluster("m1", 5), cluster("m2", 5), cluster("m3", 5)];
    c[0].deleting = true;
    let c = arcs(c);
    let p = Placement::default();
    let evicted = vec!["m2".to_owned()];
    let mut r = Run::new(&p, 1);
    r.evicted = &evicted;
    assert_eq!(r.split(&c), pairs(&[("m3", 1)]));
}

#[test]
fn reservations_prevent_double_booking() {
    let p = dynamic();
    let c = three([4, 4, 0]);
    let mut reserved = Reservations::default();
    let first = Run::new(&p, 8);
    let r = first.go(&c, &reserved).unwrap();
    assert_eq!(r.clusters, targets(&[("m1", 4), ("m2", 4)]));
    for t in &r.clusters {
        reserved.reserve(&t.name, &first.request, i64::from(t.replicas));
    }
    // A second binding in the same instant finds nothing left.
    let mut second = Run::new(&p, 1);
    second.key = "uid-other";
    let e = second.go(&c, &reserved).unwrap_err();
    assert_eq!(e.reason(), "Unschedulable");
    // The member reports (its free capacity now counts the replicas): reservations go.
    reserved.clear_cluster("m1");
    let after = three([2, 0, 0]);
    assert_eq!(second.split(&after), pairs(&[("m1", 1)]));
    assert_eq!(
        second.go(&after, &reserved).unwrap().clusters,
        targets(&[("m1", 1)])
    );
}

#[test]
fn dropped_previous_clusters_are_replaced() {
    // m2 got an untolerated NoExecute taint and is being evicted: its 3 replicas are
    // re-placed (steady scale-up).
    let mut c = vec![cluster("m1", 10), cluster("m2", 10), cluster("m3", 10)];
    c[1].taints = vec![taint("down", "NoExecute")];
    let c = arcs(c);
    let p = dynamic();
    let prev = targets(&[("m1", 3), ("m2", 3)]);
    let evicted = ["m2".to_owned()];
    let mut r = Run::new(&p, 6);
    r.previous = &prev;
    r.evicted = &evicted;
    let got = r.split(&c);
    assert_eq!(got.iter().map(|(_, n)| n).sum::<i32>(), 6);
    assert!(got.iter().all(|(n, _)| n != "m2"));
    assert!(got.contains(&("m1".to_owned(), 4)) || got.contains(&("m1".to_owned(), 5)));
}

#[test]
fn negative_replicas_are_rejected() {
    let p = Placement::default();
    let e = Run::new(&p, -1)
        .go(&three([1, 1, 1]), &Reservations::default())
        .unwrap_err();
    assert_eq!(e.reason(), "SchedulerError");
}

fn arb_clusters() -> impl proptest::strategy::Strategy<Value = Vec<(i64, i64)>> {
    // (capacity, previous replicas or -1 for none)
    proptest::collection::vec((0i64..60, -1i64..20), 1..12)
}

fn build(spec: &[(i64, i64)]) -> (Vec<Arc<ClusterSnapshot>>, Vec<TargetCluster>) {
    let clusters = arcs(
        spec.iter()
            .enumerate()
            .map(|(i, (cap, _))| cluster(&format!("c{i:02}"), *cap))
            .collect(),
    );
    let prev = spec
        .iter()
        .enumerate()
        .filter(|(_, (_, p))| *p >= 0)
        .map(|(i, (_, p))| TargetCluster {
            name: format!("c{i:02}"),
            replicas: *p as i32,
            components: Vec::new(),
        })
        .collect();
    (clusters, prev)
}

proptest! {
    #[test]
    fn divided_sums_to_the_desired_count(
        spec in arb_clusters(),
        replicas in 1i32..300,
        fresh in any::<bool>(),
        mode in 0u8..3,
        key in "[a-z0-9]{1,8}",
    ) {
        let (clusters, prev) = build(&spec);
        let p = match mode {
            0 => dynamic(),
            1 => aggregated(),
            _ => weights(&[(&["c00", "c01"], 2), (&["c02"], 5)]),
        };
        let mut run = Run::new(&p, replicas);
        run.previous = &prev;
        run.fresh = fresh;
        run.key = &key;
        if let Ok(r) = run.go(&clusters, &Reservations::default()) {
            prop_assert_eq!(r.clusters.iter().map(|t| i64::from(t.replicas)).sum::<i64>(), i64::from(replicas));
            prop_assert!(r.clusters.iter().all(|t| t.replicas > 0));
            prop_assert!(r.clusters.windows(2).all(|w| w[0].name < w[1].name));
        } else {
            // Only capacity-driven modes may fail, and only for lack of capacity.
            prop_assert!(mode != 2);
        }
    }

    #[test]
    fn dynamic_never_exceeds_capacity(
        spec in arb_clusters(),
        replicas in 1i32..300,
        aggregated_mode in any::<bool>(),
        with_prev in any::<bool>(),
    ) {
        let (clusters, prev) = build(&spec);
        let p = if aggregated_mode { aggregated() } else { dynamic() };
        let mut run = Run::new(&p, replicas);
        // Fresh mode may use the previous replicas' room again; the first schedule may not.
        if with_prev { run.previous = &prev; run.fresh = true; }
        let total_cap: i64 = spec.iter().map(|(c, p)| c + if with_prev { (*p).max(0) } else { 0 }).sum();
        match run.go(&clusters, &Reservations::default()) {
            Ok(r) => {
                for t in &r.clusters {
                    let i: usize = t.name[1..].parse().unwrap();
                    let (cap, p) = spec[i];
                    let room = cap + if with_prev { p.max(0) } else { 0 };
                    prop_assert!(i64::from(t.replicas) <= room, "{} got {} > {}", t.name, t.replicas, room);
                }
            }
            Err(e) => {
                prop_assert_eq!(e.reason(), "Unschedulable");
                prop_assert!(total_cap < i64::from(replicas));
            }
        }
    }

    #[test]
    fn deterministic(
        spec in arb_clusters(),
        replicas in 0i32..300,
        mode in 0u8..4,
        key in "[a-z0-9]{1,8}",
    ) {
        let (clusters, prev) = build(&spec);
        let p = match mode {
            0 => dynamic(),
            1 => aggregated(),
            2 => weights(&[(&["c00"], 2), (&["c01", "c03"], 3)]),
            _ => Placement::default(),
        };
        let mut run = Run::new(&p, replicas);
        run.previous = &prev;
        run.key = &key;
        let a = run.go(&clusters, &Reservations::default());
        let mut reversed = clusters.clone();
        reversed.reverse();
        let b = run.go(&reversed, &Reservations::default());
        prop_assert_eq!(a, b);
    }
}
