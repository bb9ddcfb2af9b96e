//! The cluster health monitor (part of the cluster controller): every `monitor_period` it
//! checks each Cluster's heartbeat and, when nobody has posted its status for too long,
//! turns its Ready condition Unknown — which the cluster controller then maps to the
//! `cluster.karmada.io/unreachable` taints. This is what catches Pull-mode clusters whose
//! agent is gone (or never came) and clusters whose status controller stopped.
//!
//! The heartbeat of a cluster is the latest of
//! - for a Pull cluster its Lease's renewTime (`karmada-cluster/<name>`, see
//!   [`crate::lease`]), renewed by its agent; for a Push cluster the last time the status
//!   controller of this process finished a sync while it keeps that cluster
//!   ([`crate::status::schedule::Liveness`]) — Push clusters have no Lease,
//! - its Ready condition's lastTransitionTime (the Cluster's creation when it has none),
//! - the moment this monitor last saw either of them (or the whole Ready condition) change,
//!   or first saw the cluster.
//!
//! The last item makes the judgement robust to clock skew between writers and this process,
//! as the node lifecycle controller's probe timestamps do, and gives a controller-manager
//! that just became leader a fresh start: nothing is marked before it has watched a cluster
//! for the startup grace. The grace is `monitor_grace_period`, or `startup_grace_period` for
//! a cluster that never had a Ready condition and for every cluster until its first
//! observed change.
//!
//! Live Push clusters are never touched: their Ready condition is the status controller's,
//! from its probes (an unreachable member is Ready=False, ClusterNotReachable), and that
//! controller makes progress every few milliseconds. Only Ready is changed,
//! only into Unknown, with Karmada's reasons and messages; the writes carry the
//! resourceVersion read, so a status posted meanwhile wins.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_karmada_api::Cluster;
use flotilla_karmada_api::cluster::ClusterSyncMode;
use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, reflector as reflect, watcher};
use serde_json::json;
use tracing::{debug, info, warn};

use crate::readiness::{CONDITION_READY, with_condition};
use crate::status::schedule::Liveness;
use crate::{
    AbortOnDrop, CLUSTER_FIELD_MANAGER, ControllerManagerOptions, Error, Metrics, error_chain,
};
use flotilla_names::karmada;

pub const REASON_STATUS_UNKNOWN: &str = "ClusterStatusUnknown";
pub const MESSAGE_STATUS_UNKNOWN: &str =
    "Cluster status controller stopped posting cluster status.";
pub const REASON_NEVER_UPDATED: &str = "ClusterStatusNeverUpdated";
pub const MESSAGE_NEVER_UPDATED: &str = "Cluster status controller never posted cluster status.";

const CONTROLLER: &str = "cluster-monitor";

/// What the monitor reads of one cluster at one check.
#[derive(Debug, Clone, Copy)]
pub struct Signals<'a> {
    pub created: Option<Timestamp>,
    pub ready: Option<&'a Condition>,
    /// The Lease's renewTime (Pull), or when the status controller last made progress
    /// (Push).
    pub renewed: Option<Timestamp>,
}

/// What the monitor remembers of one cluster between checks.
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    ready: Option<Condition>,
    renewed: Option<Timestamp>,
    /// When a change of either was last observed, or the cluster first seen.
    changed_at: Timestamp,
    /// Nothing has changed since the first sight.
    first_sight: bool,
}

impl Seen {
    /// Records the Ready condition the monitor itself wrote: not a sign of life.
    pub fn wrote(&mut self, ready: Condition) {
        self.ready = Some(ready);
    }
}

/// The grace periods (see the module docs).
#[derive(Debug, Clone, Copy)]
pub struct Graces {
    pub monitor: Duration,
    pub startup: Duration,
}

/// The outcome of one check of one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    /// What to remember until the next check.
    pub seen: Seen,
    /// The cluster's heartbeat and the grace that applies to it.
    pub heartbeat: Timestamp,
    pub grace: Duration,
    /// The Ready condition to write, when the heartbeat is stale and Ready is not Unknown yet.
    pub write: Option<Condition>,
}

fn later(a: Timestamp, b: Option<Timestamp>) -> Timestamp {
    b.map_or(a, |b| a.max(b))
}

/// One check of one cluster at `now`, given what was remembered from the previous check.
pub fn assess(
    previous: Option<&Seen>,
    signals: &Signals<'_>,
    graces: Graces,
    now: Timestamp,
) -> Assessment {
    let seen = match previous {
        Some(p) if p.ready.as_ref() == signals.ready && p.renewed == signals.renewed => p.clone(),
        _ => Seen {
            ready: signals.ready.cloned(),
            renewed: signals.renewed,
            changed_at: now,
            first_sight: previous.is_none(),
        },
    };
    let posted = signals
        .ready
        .map(|c| c.last_transition_time.0)
        .or(signals.created);
    let heartbeat = later(later(seen.changed_at, posted), signals.renewed);
    let grace = if signals.ready.is_none() || seen.first_sight {
        graces.startup
    } else {
        graces.monitor
    };
    let age = now
        .as_millisecond()
        .saturating_sub(heartbeat.as_millisecond());
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let write = if age > grace_ms {
        match signals.ready {
            None => Some(Condition {
                type_: CONDITION_READY.into(),
                status: "Unknown".into(),
                reason: REASON_NEVER_UPDATED.into(),
                message: MESSAGE_NEVER_UPDATED.into(),
                last_transition_time: Time(now),
                observed_generation: None,
            }),
            Some(c) if c.status != "Unknown" => Some(Condition {
                status: "Unknown".into(),
                reason: REASON_STATUS_UNKNOWN.into(),
                message: MESSAGE_STATUS_UNKNOWN.into(),
                last_transition_time: Time(now),
                ..c.clone()
            }),
            Some(_) => None,
        }
    } else {
        None
    };
    Assessment {
        seen,
        heartbeat,
        grace,
        write,
    }
}

/// Runs the monitor over the Clusters in `clusters` (the cluster controller's store) until
/// the task is aborted.
pub(crate) async fn run(
    host: kube::Client,
    clusters: Store<Cluster>,
    opts: Arc<ControllerManagerOptions>,
    metrics: Arc<Metrics>,
    liveness: Arc<Liveness>,
) {
    let (leases, writer) = reflector::store::<Lease>();
    let lease_api: Api<Lease> = Api::namespaced(host.clone(), karmada::NAMESPACE_KARMADA_CLUSTER);
    let lease_metrics = metrics.clone();
    let _lease_watch = AbortOnDrop(tokio::spawn(async move {
        let mut events = reflect(writer, watcher(lease_api, watcher::Config::default()))
            .default_backoff()
            .boxed();
        while let Some(event) = events.next().await {
            if let Err(e) = event {
                lease_metrics.error(CONTROLLER, "watch");
                warn!(error = %error_chain(&e), "watching cluster Leases failed; backing off");
            }
        }
    }));
    // Judging from a half-filled cache would mark live clusters Unknown.
    if !ready(&clusters).await || !ready(&leases).await {
        return;
    }
    debug!("cluster and Lease caches ready; monitoring");
    let graces = Graces {
        monitor: opts.monitor_grace_period,
        startup: opts.startup_grace_period,
    };
    let mut memory: HashMap<String, Seen> = HashMap::new();
    let mut ticker = tokio::time::interval(opts.monitor_period.max(Duration::from_millis(1)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let now = Timestamp::now();
        let mut present = HashSet::new();
        for cluster in clusters.state() {
            let name = cluster.name_any();
            if cluster.metadata.deletion_timestamp.is_some() {
                // Being cleaned up; its Lease is about to go.
                continue;
            }
            present.insert(name.clone());
            let renewed = if cluster.spec.sync_mode == ClusterSyncMode::Push {
                liveness.heartbeat(&name).map(|at| timestamp_of(at, now))
            } else {
                leases
                    .get(&ObjectRef::new(&name).within(karmada::NAMESPACE_KARMADA_CLUSTER))
                    .and_then(|l| l.spec.as_ref()?.renew_time.as_ref().map(|t| t.0))
            };
            let ready = cluster
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.type_ == CONDITION_READY));
            let signals = Signals {
                created: cluster.metadata.creation_timestamp.as_ref().map(|t| t.0),
                ready,
                renewed,
            };
            let mut assessment = assess(memory.get(&name), &signals, graces, now);
            if let Some(condition) = assessment.write.take() {
                match mark_unknown(&host, &cluster, &name, condition.clone()).await {
                    Ok(()) => {
                        info!(
                            cluster = %name,
                            reason = %condition.reason,
                            heartbeat = %assessment.heartbeat,
                            grace = ?assessment.grace,
                            "no cluster status posted within the grace period; Ready is now Unknown"
                        );
                        metrics.reconciled(CONTROLLER, true);
                        assessment.seen.wrote(condition);
                    }
                    Err(e) if e.is_conflict() => {
                        debug!(cluster = %name, "cluster changed under the monitor; checked again next period");
                    }
                    Err(e) => {
                        metrics.reconciled(CONTROLLER, false);
                        metrics.error(CONTROLLER, e.kind());
                        warn!(cluster = %name, error = %error_chain(&e), "marking the cluster Unknown failed");
                    }
                }
            }
            memory.insert(name, assessment.seen);
        }
        memory.retain(|name, _| present.contains(name));
    }
}

/// The wall-clock time of `at`, an instant in the past, seen from `now` (millisecond
/// precision: what the judgement works in).
fn timestamp_of(at: Instant, now: Timestamp) -> Timestamp {
    let ago = i64::try_from(at.elapsed().as_millis()).unwrap_or(i64::MAX);
    Timestamp::from_millisecond(now.as_millisecond().saturating_sub(ago)).unwrap_or(now)
}

/// Waits until `store` has been filled by its first list; false when its writer is gone.
///
/// Polled in short rounds because of kube-runtime: `Store::wait_until_ready` polls one shared
/// oneshot receiver, which keeps only the last poller's waker, so when two tasks wait on
/// clones of one store (the cluster controller's and this monitor) one of them is never
/// woken. A fresh poll every 100 ms sees the value once it is there.
async fn ready<K>(store: &Store<K>) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    loop {
        match tokio::time::timeout(Duration::from_millis(100), store.wait_until_ready()).await {
            Ok(result) => return result.is_ok(),
            Err(_) => continue,
        }
    }
}

async fn mark_unknown(
    host: &kube::Client,
    cluster: &Cluster,
    name: &str,
    ready: Condition,
) -> Result<(), Error> {
    let conditions = cluster
        .status
        .as_ref()
        .map(|s| s.conditions.as_slice())
        .unwrap_or_default();
    let patch = json!({
        "metadata": {"resourceVersion": cluster.metadata.resource_version},
        "status": {"conditions": with_condition(conditions, ready)},
    });
    let api: Api<Cluster> = Api::all(host.clone());
    let params = PatchParams {
        field_manager: Some(CLUSTER_FIELD_MANAGER.into()),
        ..Default::default()
    };
    api.patch_status(name, &params, &Patch::Merge(&patch))
        .await
        .map_err(|source| Error::WriteStatus {
            cluster: name.to_string(),
            source,
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    const GRACES: Graces = Graces {
        monitor: Duration::from_secs(40),
        startup: Duration::from_secs(60),
    };

    fn ready(status: &str, since: i64) -> Condition {
        Condition {
            type_: "Ready".into(),
            status: status.into(),
            reason: "ClusterReady".into(),
            message: "m".into(),
            last_transition_time: Time(at(since)),
            observed_generation: Some(3),
        }
    }

    /// Runs checks at the given times with fixed signals; the first write (time, condition).
    fn first_write(
        signals: &Signals<'_>,
        times: impl IntoIterator<Item = i64>,
    ) -> Option<(i64, Condition)> {
        let mut seen: Option<Seen> = None;
        for t in times {
            let a = assess(seen.as_ref(), signals, GRACES, at(t));
            if let Some(c) = a.write {
                return Some((t, c));
            }
            seen = Some(a.seen);
        }
        None
    }

    #[test]
    fn never_posted_cluster_goes_unknown_after_the_startup_grace() {
        let signals = Signals {
            created: Some(at(0)),
            ready: None,
            renewed: None,
        };
        let (t, c) = first_write(&signals, (0..=120).step_by(5)).unwrap();
        assert_eq!(t, 65, "first check past 60 s after creation");
        assert_eq!(
            (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
            ("Ready", "Unknown", REASON_NEVER_UPDATED)
        );
        assert_eq!(c.message, MESSAGE_NEVER_UPDATED);
        assert_eq!(c.last_transition_time, Time(at(65)));
    }

    #[test]
    fn a_new_leader_waits_the_startup_grace_from_first_sight() {
        // Ready=True posted an hour ago, no Lease: stale, but first seen at t=3600.
        let r = ready("True", 0);
        let signals = Signals {
            created: Some(at(-100)),
            ready: Some(&r),
            renewed: None,
        };
        let (t, c) = first_write(&signals, (3600..=3800).step_by(5)).unwrap();
        assert_eq!(t, 3665);
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            ("Unknown", REASON_STATUS_UNKNOWN, MESSAGE_STATUS_UNKNOWN)
        );
        // The rest of the condition is kept; the transition time is now.
        assert_eq!(c.observed_generation, Some(3));
        assert_eq!(c.last_transition_time, Time(at(3665)));
        // A never-posted cluster seen late is given the same start.
        let signals = Signals {
            created: Some(at(0)),
            ready: None,
            renewed: None,
        };
        assert_eq!(first_write(&signals, [3600, 3659]), None);
    }

    #[test]
    fn a_renewing_lease_keeps_a_cluster_alive_indefinitely() {
        let r = ready("True", 0);
        let mut seen: Option<Seen> = None;
        for t in (0..=600).step_by(5) {
            // Renewed every 10 s.
            let signals = Signals {
                created: Some(at(0)),
                ready: Some(&r),
                renewed: Some(at(t / 10 * 10)),
            };
            let a = assess(seen.as_ref(), &signals, GRACES, at(t));
            assert_eq!(a.write, None, "at {t}");
            seen = Some(a.seen);
        }
    }

    #[test]
    fn a_lease_that_stops_makes_the_cluster_unknown_after_the_grace() {
        let r = ready("False", 0);
        let mut seen: Option<Seen> = None;
        let mut written = None;
        for t in (0..=300).step_by(5) {
            let signals = Signals {
                created: Some(at(0)),
                ready: Some(&r),
                renewed: Some(at(t.min(100))),
            };
            let a = assess(seen.as_ref(), &signals, GRACES, at(t));
            if let Some(c) = a.write {
                written = Some((t, c));
                break;
            }
            seen = Some(a.seen);
        }
        let (t, c) = written.unwrap();
        assert_eq!(t, 145, "last renewal at 100 plus 40 s");
        assert_eq!(c.status, "Unknown");
        assert_eq!(c.reason, REASON_STATUS_UNKNOWN);
    }

    #[test]
    fn already_unknown_is_left_alone_and_own_writes_are_no_heartbeat() {
        let unknown = ready("Unknown", 0);
        let signals = Signals {
            created: Some(at(0)),
            ready: Some(&unknown),
            renewed: None,
        };
        assert_eq!(first_write(&signals, (0..=600).step_by(5)), None);

        // After the monitor's own write the stored condition is the one it wrote: not a
        // change, so the heartbeat stays where it was.
        let r = ready("True", 0);
        let before = Signals {
            created: Some(at(0)),
            ready: Some(&r),
            renewed: Some(at(0)),
        };
        let first = assess(None, &before, GRACES, at(0));
        let changed = assess(
            Some(&first.seen),
            &Signals {
                renewed: Some(at(10)),
                ..before
            },
            GRACES,
            at(10),
        );
        let stale = assess(
            Some(&changed.seen),
            &Signals {
                renewed: Some(at(10)),
                ..before
            },
            GRACES,
            at(55),
        );
        let mut seen = stale.seen;
        let c = stale.write.unwrap();
        seen.wrote(c.clone());
        let after = assess(
            Some(&seen),
            &Signals {
                created: Some(at(0)),
                ready: Some(&c),
                renewed: Some(at(10)),
            },
            GRACES,
            at(60),
        );
        assert_eq!(
            after.heartbeat,
            at(55),
            "the written transition time, not a sighting"
        );
        assert_eq!(after.write, None);
    }

    #[test]
    fn monitor_grace_applies_after_the_first_change() {
        let r = ready("True", 0);
        let t0 = Signals {
            created: Some(at(0)),
            ready: Some(&r),
            renewed: Some(at(0)),
        };
        let a = assess(None, &t0, GRACES, at(0));
        assert_eq!(a.grace, GRACES.startup);
        let t1 = Signals {
            renewed: Some(at(10)),
            ..t0
        };
        let b = assess(Some(&a.seen), &t1, GRACES, at(10));
        assert_eq!(b.grace, GRACES.monitor);
        assert_eq!(b.heartbeat, at(10));
        assert_eq!(assess(Some(&b.seen), &t1, GRACES, at(50)).write, None);
        assert!(assess(Some(&b.seen), &t1, GRACES, at(51)).write.is_some());
    }

    #[test]
    fn writer_clock_ahead_or_behind() {
        // Writer clock behind by 30 s: its renewTime looks old, but each renewal is seen as
        // a change, so the cluster stays alive.
        let r = ready("True", -1000);
        let mut seen = None;
        for t in (0..=300).step_by(5) {
            let signals = Signals {
                created: Some(at(-1000)),
                ready: Some(&r),
                renewed: Some(at(t / 10 * 10 - 30)),
            };
            let a = assess(seen.as_ref(), &signals, GRACES, at(t));
            assert_eq!(a.write, None, "at {t}");
            seen = Some(a.seen);
        }
    }
}
