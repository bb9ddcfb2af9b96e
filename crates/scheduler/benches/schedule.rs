//! Throughput of the pure scheduling algorithm (`cargo bench -p flotilla-scheduler`).
//!
//! (a) bindings per second over 100 clusters for each replica strategy;
//! (b) wall time to schedule 10,000 bindings over 1,000 clusters, reserving as it goes.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use flotilla_karmada_api::binding::TargetCluster;
use flotilla_karmada_api::cluster::{
    ApiEnablement, ApiResource, ClusterSpec, ClusterStatus, ClusterSyncMode, NodeCapacityGroup,
    ResourceSummary,
};
use flotilla_karmada_api::policy::{
    ClusterAffinity, ClusterPreferences, DynamicWeightFactor, Placement, ReplicaDivisionPreference,
    ReplicaSchedulingStrategy, ReplicaSchedulingType, StaticClusterWeight,
};
use flotilla_karmada_api::{Cluster, ResourceList};
use flotilla_scheduler::{
    ClusterSnapshot, Reservations, ResourceVector, ScheduleRequest, schedule,
};
use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// CPU time of this thread (user + system), from /proc; the machine is shared, so wall time
/// alone understates the algorithm's speed. `None` where /proc is unavailable.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // USER_HZ is 100 on Linux.
    Some((utime + stime) / 100.0)
}

/// Runs `f` and returns (wall seconds, CPU seconds).
fn timed(f: impl FnOnce()) -> (f64, f64) {
    let cpu0 = cpu_seconds();
    let start = Instant::now();
    f();
    let wall = start.elapsed().as_secs_f64();
    let cpu = match (cpu0, cpu_seconds()) {
        (Some(a), Some(b)) if b > a => b - a,
        _ => wall,
    };
    (wall, cpu)
}

fn list(pairs: &[(&str, String)]) -> ResourceList {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity(v.clone())))
        .collect()
}

fn cluster(i: usize) -> Cluster {
    let mut c = Cluster::new(
        &format!("member-{i:04}"),
        ClusterSpec {
            id: None,
            sync_mode: ClusterSyncMode::Push,
            api_endpoint: None,
            secret_ref: None,
            impersonator_secret_ref: None,
            insecure_skip_tls_verification: None,
            proxy_url: None,
            proxy_header: BTreeMap::new(),
            provider: Some(["aws", "gcp", "azure"][i % 3].into()),
            region: Some(format!("region-{}", i % 7)),
            zone: None,
            zones: vec![format!("zone-{}", i % 13)],
            taints: if i % 10 == 9 {
                vec![Taint {
                    key: "maintenance".into(),
                    value: None,
                    effect: "NoSchedule".into(),
                    time_added: None,
                }]
            } else {
                vec![]
            },
            resource_models: vec![],
        },
    );
    c.metadata.labels = Some([("env".to_owned(), ["prod", "dev"][i % 2].to_owned())].into());
    let cores = 64 + (i * 37) % 512;
    c.status = Some(ClusterStatus {
        api_enablements: vec![
            ApiEnablement {
                group_version: "apps/v1".into(),
                resources: ["Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"]
                    .iter()
                    .map(|k| ApiResource {
                        name: k.to_lowercase() + "s",
                        kind: (*k).into(),
                    })
                    .collect(),
            },
            ApiEnablement {
                group_version: "v1".into(),
                resources: ["ConfigMap", "Secret", "Service", "Pod"]
                    .iter()
                    .map(|k| ApiResource {
                        name: k.to_lowercase() + "s",
                        kind: (*k).into(),
                    })
                    .collect(),
            },
        ],
        resource_summary: Some(ResourceSummary {
            allocatable: list(&[
                ("cpu", format!("{cores}")),
                ("memory", format!("{}Gi", cores * 4)),
                ("pods", format!("{}", cores * 10)),
            ]),
            allocated: list(&[("cpu", format!("{}m", cores * 300)), ("pods", "40".into())]),
            allocating: ResourceList::new(),
            allocatable_modelings: vec![],
        }),
        node_capacities: vec![
            NodeCapacityGroup {
                count: i32::try_from(cores / 16).unwrap_or(1),
                available: list(&[
                    ("cpu", "10".into()),
                    ("memory", "40Gi".into()),
                    ("pods", "100".into()),
                ]),
            },
            NodeCapacityGroup {
                count: 3,
                available: list(&[
                    ("cpu", "1500m".into()),
                    ("memory", "2Gi".into()),
                    ("pods", "5".into()),
                ]),
            },
        ],
        ..ClusterStatus::default()
    });
    c
}

fn snapshots(n: usize) -> Vec<Arc<ClusterSnapshot>> {
    (0..n)
        .map(|i| Arc::new(ClusterSnapshot::from_cluster(&cluster(i))))
        .collect()
}

fn divided(pref: ReplicaDivisionPreference, weights: Option<ClusterPreferences>) -> Placement {
    Placement {
        cluster_tolerations: vec![Toleration {
            key: Some("dedicated".into()),
            operator: Some("Exists".into()),
            ..Toleration::default()
        }],
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            replica_division_preference: Some(pref),
            weight_preference: weights,
        }),
        ..Placement::default()
    }
}

fn placements(clusters: usize) -> Vec<(&'static str, Placement)> {
    let static_list = (0..clusters.min(20))
        .map(|i| StaticClusterWeight {
            target_cluster: ClusterAffinity {
                cluster_names: vec![format!("member-{i:04}")],
                ..ClusterAffinity::default()
            },
            weight: 1 + (i as i64 % 5),
        })
        .collect();
    vec![
        (
            "duplicated (env=prod label affinity)",
            Placement {
                cluster_affinity: Some(ClusterAffinity {
                    label_selector: Some(
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                            match_labels: Some([("env".to_owned(), "prod".to_owned())].into()),
                            match_expressions: None,
                        },
                    ),
                    ..ClusterAffinity::default()
                }),
                ..Placement::default()
            },
        ),
        (
            "static weights (20 entries)",
            divided(
                ReplicaDivisionPreference::Weighted,
                Some(ClusterPreferences {
                    static_weight_list: static_list,
                    dynamic_weight: None,
                }),
            ),
        ),
        (
            "dynamic weights",
            divided(
                ReplicaDivisionPreference::Weighted,
                Some(ClusterPreferences {
                    static_weight_list: vec![],
                    dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
                }),
            ),
        ),
        (
            "aggregated",
            divided(ReplicaDivisionPreference::Aggregated, None),
        ),
    ]
}

fn request_for<'a>(
    key: &'a str,
    replicas: i32,
    per_replica: &'a ResourceVector,
    placement: &'a Placement,
    previous: &'a [TargetCluster],
) -> ScheduleRequest<'a> {
    ScheduleRequest {
        key,
        api_version: "apps/v1",
        kind: "Deployment",
        replicas,
        per_replica,
        placement,
        previous,
        fresh: false,
        evicted: &[],
        observed_affinity: None,
    }
}

/// Schedules `iters` bindings and prints the throughput by wall and by CPU time.
fn throughput(
    label: &str,
    iters: usize,
    clusters: &[Arc<ClusterSnapshot>],
    replicas: i32,
    per_replica: &ResourceVector,
    placement: &Placement,
    previous: &[TargetCluster],
) {
    let keys: Vec<String> = (0..4096).map(|i| format!("uid-{i:08x}")).collect();
    let none = Reservations::default();
    let run = |n: usize| {
        for i in 0..n {
            let req = request_for(
                &keys[i % keys.len()],
                replicas,
                per_replica,
                placement,
                previous,
            );
            black_box(schedule(&req, clusters, &none).ok());
        }
    };
    run(iters / 20); // warm-up
    let (wall, cpu) = timed(|| run(iters));
    println!(
        "  {label:<40} {:>9.0} bindings/s wall, {:>9.0} bindings/s CPU ({:.2} us CPU each)",
        iters as f64 / wall,
        iters as f64 / cpu,
        cpu * 1e6 / iters as f64
    );
}

fn main() {
    let request = ResourceVector::new()
        .with("cpu", 500)
        .with("memory", 512 << 20);

    println!("(a) 100 clusters, 40 replicas each, first schedule:");
    let clusters = snapshots(100);
    for (name, placement) in placements(100) {
        throughput(name, 60_000, &clusters, 40, &request, &placement, &[]);
    }

    println!("(a') 100 clusters, steady scale-up 40 -> 50 with 5 previous clusters:");
    let previous: Vec<TargetCluster> = (0..5)
        .map(|i| TargetCluster {
            name: format!("member-{:04}", i * 3),
            replicas: 8,
            components: Vec::new(),
        })
        .collect();
    for (name, placement) in placements(100).into_iter().skip(2) {
        throughput(name, 60_000, &clusters, 50, &request, &placement, &previous);
    }

    println!("(a'') 100 clusters, 1,000,000 replicas (quota-first Webster):");
    let tiny = ResourceVector::new().with("cpu", 1);
    for (name, placement) in placements(100).into_iter().skip(1) {
        throughput(name, 20_000, &clusters, 1_000_000, &tiny, &placement, &[]);
    }

    println!("(b) 10,000 bindings over 1,000 clusters (10 replicas each, reserving as it goes):");
    let start = Instant::now();
    let clusters = snapshots(1000);
    println!(
        "  ClusterSnapshot::from_cluster x 1,000: {:.1} ms",
        start.elapsed().as_secs_f64() * 1e3
    );
    let keys: Vec<String> = (0..10_000).map(|i| format!("binding-{i}")).collect();
    for (name, placement) in placements(1000) {
        let mut reserved = Reservations::default();
        let mut placed = 0i64;
        let mut failed = 0usize;
        let (wall, cpu) = timed(|| {
            for key in &keys {
                let req = request_for(key, 10, &request, &placement, &[]);
                match schedule(&req, &clusters, &reserved) {
                    Ok(r) => {
                        for t in &r.clusters {
                            reserved.reserve(&t.name, &request, i64::from(t.replicas));
                            placed += i64::from(t.replicas);
                        }
                    }
                    Err(_) => failed += 1,
                }
            }
        });
        println!(
            "  {name:<40} {:>7.0} ms wall, {:>7.0} ms CPU ({placed} replicas placed, {failed} failed)",
            wall * 1e3,
            cpu * 1e3
        );
    }
}
