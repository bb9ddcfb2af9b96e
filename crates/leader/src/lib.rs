//! Leader election on a `coordination.k8s.io/v1` Lease, so that two replicas of a component
//! (the scheduler, the controller-manager) can run and only one acts.
//!
//! ```text
//!   acquire() --(Lease free, expired, or ours)--> Leadership --renew every retry_period-->
//!        ^                                            |  renewal failing for renew_deadline
//!        +------------------ lost() resolves <--------+  or another holder took the Lease
//! ```
//!
//! Writes carry the Lease's resourceVersion, so two candidates racing for an expired Lease
//! cannot both win: the loser gets 409 Conflict and retries. A leader that stops cleanly
//! releases the Lease (empty holder) so its successor does not wait for expiry.
//!
//! Timing, and why there is never a moment with two leaders acting:
//!
//! - A candidate judges a held Lease by its own clock, not by the `renewTime` written on
//!   another machine: the Lease expires `lease_duration` after the candidate *first saw* its
//!   current version (as client-go does), so clock skew between machines cannot shorten it.
//!   The candidate then wakes exactly at that expiry instead of at its next retry tick, so a
//!   killed leader (which does not release) is replaced within
//!   `lease_duration + retry_period` of its last renewal.
//! - A leader counts its `renew_deadline` from the *start* of its last successful renewal
//!   (the `renewTime` it wrote is no earlier than that), and bounds every attempt by that
//!   deadline, so a hung request cannot keep it leading. At the deadline it steps down: the
//!   term is told to end, and since `renew_deadline < lease_duration` no one else can have
//!   acquired yet. The term then has the rest, `lease_duration - renew_deadline`, to stop
//!   writing; one that overruns it is dropped and [`LeaderOptions::on_step_down_overrun`]
//!   runs (the binaries exit there, as kube's components do when they lose their Lease).
//!
//! Components do not write that loop themselves: [`run_elected`] runs a component once per
//! term of leadership (or once, without election) and is the only such loop in Flotilla;
//! [`LeaderOptions::for_component`] names every component's Lease the same way.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("reading Lease {namespace}/{name}")]
    Read {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error("writing Lease {namespace}/{name}")]
    Write {
        namespace: String,
        name: String,
        source: kube::Error,
    },
    #[error(
        "leader election timings: need lease duration ({lease_duration:?}) > renew deadline \
         ({renew_deadline:?}) > retry period ({retry_period:?}) > 0"
    )]
    Timings {
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    },
}

/// Where the Lease lives and how long leadership lasts.
#[derive(Debug, Clone)]
pub struct LeaderOptions {
    pub namespace: String,
    pub name: String,
    /// This candidate's identity (host name plus a random suffix is a good choice).
    pub identity: String,
    /// How long a Lease stays valid without renewal; others take over after it.
    pub lease_duration: Duration,
    /// A leader that could not renew for this long steps down (must be < lease_duration).
    pub renew_deadline: Duration,
    /// How often candidates retry and leaders renew.
    pub retry_period: Duration,
    /// Runs when a term that lost the Lease has not stopped within
    /// `lease_duration - renew_deadline` (after which a successor may be writing). The
    /// binaries exit the process here; without it the term's future is dropped.
    pub on_step_down_overrun: Option<fn()>,
}

/// Default Lease duration. Shorter than kube's 15 s so that a killed leader is replaced
/// within 15 s: the worst case is `lease_duration + retry_period` (9 s) plus the time the
/// successor needs to start its watches.
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(8);
/// Default renew deadline: four renewal attempts may fail before the leader steps down, and
/// it has 3 s left to stop writing before the Lease can pass.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(5);
/// Default retry period: half kube's, so a candidate sees a killed leader's last renewal
/// (and a released Lease) within a second; the cost is one small read a second.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(1);

impl LeaderOptions {
    /// Flotilla's defaults: [`DEFAULT_LEASE_DURATION`], [`DEFAULT_RENEW_DEADLINE`],
    /// [`DEFAULT_RETRY_PERIOD`].
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            on_step_down_overrun: None,
        }
    }

    /// Checks `lease_duration > renew_deadline > retry_period > 0`: a leader must step down
    /// before its Lease can pass, and must get more than one renewal attempt before that.
    pub fn validate(&self) -> Result<(), LeaderError> {
        let ok = self.lease_duration > self.renew_deadline
            && self.renew_deadline > self.retry_period
            && !self.retry_period.is_zero();
        if ok {
            Ok(())
        } else {
            Err(LeaderError::Timings {
                lease_duration: self.lease_duration,
                renew_deadline: self.renew_deadline,
                retry_period: self.retry_period,
            })
        }
    }

    /// How long a term that lost the Lease has to stop writing.
    pub fn step_down_grace(&self) -> Duration {
        self.lease_duration.saturating_sub(self.renew_deadline)
    }

    /// The Lease of Flotilla component `component` (`controller-manager`, `scheduler`):
    /// `kube-system/flotilla-<component>`, competed for as [`default_identity`].
    pub fn for_component(component: &str) -> Self {
        Self::new(
            COMPONENT_LEASE_NAMESPACE,
            &format!("flotilla-{component}"),
            &default_identity(),
        )
    }
}

/// Namespace of the components' leader-election Leases (as kube's own components use).
pub const COMPONENT_LEASE_NAMESPACE: &str = "kube-system";

/// A unique-enough identity for this process: `<hostname>_<pid>_<random>`.
pub fn default_identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|h| h.trim().to_string())
        })
        .unwrap_or_else(|| "flotilla".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{host}_{}_{nanos:08x}", std::process::id())
}

/// Competes for one Lease.
#[derive(Clone)]
pub struct LeaderElector {
    api: Api<Lease>,
    opts: LeaderOptions,
    /// The other holder's Lease version this candidate last saw, and when it first saw it.
    observed: Arc<parking_lot::Mutex<Option<Observed>>>,
}

/// One version of a Lease held by someone else, as a candidate saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// What identifies the version: holder, renewTime and resourceVersion.
    record: String,
    /// When this candidate first saw it (its own clock).
    since: Instant,
    /// The Lease's duration as written by its holder.
    duration: Duration,
}

impl Observed {
    /// Records `record` as seen at `now`: a new version restarts the clock, the same one
    /// keeps the time it was first seen.
    pub fn see(
        previous: Option<&Observed>,
        record: String,
        duration: Duration,
        now: Instant,
    ) -> Self {
        match previous {
            Some(p) if p.record == record => p.clone(),
            _ => Observed {
                record,
                since: now,
                duration,
            },
        }
    }

    /// How long until this version expires, from `now`; `None` once it has.
    pub fn remaining(&self, now: Instant) -> Option<Duration> {
        (self.since + self.duration)
            .checked_duration_since(now)
            .filter(|d| !d.is_zero())
    }
}

/// Held while this candidate leads; renewal runs in the background.
pub struct Leadership {
    lost: watch::Receiver<bool>,
    stop: watch::Sender<bool>,
    renewer: Option<JoinHandle<()>>,
}

impl Drop for Leadership {
    /// Dropped without `release`: stop renewing (the Lease then expires for others).
    fn drop(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
    }
}

impl Leadership {
    /// Resolves when leadership is lost (renewal failed past the deadline, or another
    /// holder took the Lease).
    pub async fn lost(&mut self) {
        while !*self.lost.borrow() {
            if self.lost.changed().await.is_err() {
                return;
            }
        }
    }

    /// Whether leadership is still held.
    pub fn is_leader(&self) -> bool {
        !*self.lost.borrow()
    }

    /// Stops renewing and releases the Lease so a successor takes over at once.
    pub async fn release(mut self) {
        self.stop.send_replace(true);
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.await;
        }
    }
}

enum Attempt {
    Acquired,
    /// Held by this holder for at most this long (unknown: retry at the usual period).
    HeldByOther(String, Option<Duration>),
}

/// Wake-up margin past a Lease's expiry, so the next attempt finds it expired.
const EXPIRY_SLACK: Duration = Duration::from_millis(20);

fn now() -> MicroTime {
    MicroTime(Timestamp::now())
}

fn secs(d: Duration) -> i32 {
    i32::try_from(d.as_secs().max(1)).unwrap_or(i32::MAX)
}

impl LeaderElector {
    pub fn new(client: kube::Client, opts: LeaderOptions) -> Self {
        Self {
            api: Api::namespaced(client, &opts.namespace),
            opts,
            observed: Arc::default(),
        }
    }

    fn read_error(&self, source: kube::Error) -> LeaderError {
        LeaderError::Read {
            namespace: self.opts.namespace.clone(),
            name: self.opts.name.clone(),
            source,
        }
    }

    fn write_error(&self, source: kube::Error) -> LeaderError {
        LeaderError::Write {
            namespace: self.opts.namespace.clone(),
            name: self.opts.name.clone(),
            source,
        }
    }

    /// One attempt to take or renew the Lease.
    async fn try_acquire_or_renew(&self) -> Result<Attempt, LeaderError> {
        let me = &self.opts.identity;
        let existing = self
            .api
            .get_opt(&self.opts.name)
            .await
            .map_err(|e| self.read_error(e))?;
        let Some(mut lease) = existing else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.opts.name.clone()),
                    namespace: Some(self.opts.namespace.clone()),
                    ..Default::default()
                },
                spec: Some(LeaseSpec {
                    holder_identity: Some(me.clone()),
                    lease_duration_seconds: Some(secs(self.opts.lease_duration)),
                    acquire_time: Some(now()),
                    renew_time: Some(now()),
                    lease_transitions: Some(0),
                    ..Default::default()
                }),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(Attempt::Acquired),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    Ok(Attempt::HeldByOther(String::from("(just created)"), None))
                }
                Err(e) => Err(self.write_error(e)),
            };
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        let holder = spec.holder_identity.clone().unwrap_or_default();
        if !holder.is_empty() && holder != *me {
            let duration = spec
                .lease_duration_seconds
                .map(|s| Duration::from_secs(u64::try_from(s).unwrap_or(0)))
                .unwrap_or(self.opts.lease_duration);
            // Any write to the Lease (a renewal) changes its resourceVersion.
            let record = format!(
                "{holder}/{:?}/{}",
                spec.renew_time.as_ref().map(|t| t.0),
                lease
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or_default()
            );
            let remaining = {
                let mut observed = self.observed.lock();
                let seen = Observed::see(observed.as_ref(), record, duration, Instant::now());
                let remaining = seen.remaining(Instant::now());
                *observed = Some(seen);
                remaining
            };
            if let Some(left) = remaining {
                return Ok(Attempt::HeldByOther(holder, Some(left)));
            }
        }
        if holder != *me {
            spec.acquire_time = Some(now());
            spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        }
        spec.holder_identity = Some(me.clone());
        spec.lease_duration_seconds = Some(secs(self.opts.lease_duration));
        spec.renew_time = Some(now());
        match self
            .api
            .replace(&self.opts.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(Attempt::Acquired),
            // Someone else wrote the Lease since we read it: they won this round.
            Err(kube::Error::Api(s)) if s.code == 409 => {
                Ok(Attempt::HeldByOther(String::from("(conflict)"), None))
            }
            Err(e) => Err(self.write_error(e)),
        }
    }

    /// Waits until this candidate holds the Lease, then keeps renewing it in the background.
    pub async fn acquire(&self) -> Leadership {
        let mut logged_holder = String::new();
        let acquired_at = loop {
            let started = Instant::now();
            let mut pause = self.opts.retry_period;
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Acquired) => break started,
                Ok(Attempt::HeldByOther(holder, left)) => {
                    if holder != logged_holder {
                        tracing::info!(lease = %self.opts.name, %holder, "waiting for the leader's Lease");
                        logged_holder = holder;
                    }
                    // Wake when the Lease expires rather than at the next tick after it: a
                    // killed leader's successor takes over up to a retry period sooner.
                    if let Some(left) = left {
                        pause = pause.min(left + EXPIRY_SLACK);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, source = ?std::error::Error::source(&e), "leader election attempt failed")
                }
            }
            tokio::time::sleep(pause).await;
        };
        *self.observed.lock() = None;
        tracing::info!(lease = %self.opts.name, identity = %self.opts.identity, "became leader");
        let (lost_tx, lost) = watch::channel(false);
        let (stop, mut stop_rx) = watch::channel(false);
        let elector = self.clone();
        let renewer = tokio::spawn(async move {
            // The renewTime we last wrote is no earlier than the start of that attempt, so
            // counting the deadline from there keeps it inside the Lease others see.
            let mut deadline = acquired_at + elector.opts.renew_deadline;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(elector.opts.retry_period) => {}
                    _ = stop_rx.changed() => {
                        elector.release().await;
                        lost_tx.send_replace(true);
                        return;
                    }
                    _ = tokio::time::sleep_until(deadline) => {}
                }
                let started = Instant::now();
                // A renewal still hanging at the deadline counts as failed.
                match tokio::time::timeout_at(deadline, elector.try_acquire_or_renew()).await {
                    Ok(Ok(Attempt::Acquired)) => {
                        deadline = started + elector.opts.renew_deadline;
                        continue;
                    }
                    Ok(Ok(Attempt::HeldByOther(holder, _))) => {
                        tracing::warn!(lease = %elector.opts.name, %holder, "lost the Lease to another holder");
                        lost_tx.send_replace(true);
                        return;
                    }
                    Ok(Err(e)) => tracing::warn!(error = %e, "renewing the Lease failed"),
                    Err(_) => tracing::warn!("renewing the Lease timed out"),
                }
                if Instant::now() >= deadline {
                    tracing::warn!(lease = %elector.opts.name, "renew deadline passed; stepping down");
                    lost_tx.send_replace(true);
                    return;
                }
            }
        });
        Leadership {
            lost,
            stop,
            renewer: Some(renewer),
        }
    }

    /// Clears the holder if it is still us.
    async fn release(&self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.opts.name).await else {
            return;
        };
        let Some(spec) = lease.spec.as_mut() else {
            return;
        };
        if spec.holder_identity.as_deref() != Some(self.opts.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        // kube-apiserver requires leaseDurationSeconds >= 1; keep it and let the empty holder
        // say the Lease is free.
        if let Err(e) = self
            .api
            .replace(&self.opts.name, &PostParams::default(), &lease)
            .await
        {
            tracing::warn!(error = %e, "releasing the Lease failed");
        } else {
            tracing::info!(lease = %self.opts.name, "released the Lease");
        }
    }
}

// === run_elected ===

/// Why a [`Term`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TermEnd {
    /// The Lease was lost (another holder, or renewal failed past the deadline); the
    /// process competes again and may start another term.
    Lost,
    /// The process is stopping; no term follows.
    Shutdown,
}

/// One term of a component's run: while this process holds the Lease, or (without
/// election) the whole run. The component works until [`Term::ended`] resolves, then stops.
pub struct Term {
    end: watch::Receiver<Option<TermEnd>>,
    elected: bool,
}

impl Term {
    /// Whether this term holds a Lease (false when running without election).
    pub fn elected(&self) -> bool {
        self.elected
    }

    /// Resolves when the term is over, saying why.
    pub async fn ended(&mut self) -> TermEnd {
        match self.end.wait_for(Option::is_some).await {
            Ok(end) => end.unwrap_or(TermEnd::Shutdown),
            // The runner is gone: nothing will lead this term any longer.
            Err(_) => TermEnd::Shutdown,
        }
    }
}

/// Runs `term` for each term this process leads until `shutdown` resolves.
///
/// Without `leader`, there is one term, started at once and ended by `shutdown`. With it,
/// a term starts each time the Lease is acquired and ends when it is lost (then the process
/// competes again) or at `shutdown` (then the Lease is released once the term's future has
/// finished, so the successor starts after this one stopped). A term's future that returns
/// before its end is signalled ends the whole run the same way.
pub async fn run_elected<F, Fut>(
    client: kube::Client,
    leader: Option<LeaderOptions>,
    shutdown: impl Future<Output = ()>,
    mut term: F,
) where
    F: FnMut(Term) -> Fut,
    Fut: Future<Output = ()>,
{
    tokio::pin!(shutdown);
    let Some(opts) = leader else {
        drive(
            &mut term,
            false,
            async {
                shutdown.await;
                TermEnd::Shutdown
            },
            None,
        )
        .await;
        return;
    };
    if let Err(e) = opts.validate() {
        // The binaries validate their flags first; a library caller gets the error logged.
        tracing::error!(error = %e, "not competing for the Lease");
        return;
    }
    let grace = opts.step_down_grace();
    let on_overrun = opts.on_step_down_overrun;
    let elector = LeaderElector::new(client, opts);
    loop {
        let mut leadership = tokio::select! {
            l = elector.acquire() => l,
            _ = &mut shutdown => return,
        };
        let end = drive(
            &mut term,
            true,
            async {
                tokio::select! {
                    _ = leadership.lost() => TermEnd::Lost,
                    _ = &mut shutdown => TermEnd::Shutdown,
                }
            },
            Some(grace),
        )
        .await;
        match end {
            Ended::Shutdown => {
                leadership.release().await;
                return;
            }
            Ended::Lost => {}
            Ended::Overran => {
                tracing::error!(
                    ?grace,
                    "the term did not stop writing before the Lease could pass to another"
                );
                if let Some(hook) = on_overrun {
                    hook();
                }
                return;
            }
        }
    }
}

/// How [`drive`] finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    Lost,
    Shutdown,
    /// The Lease was lost and the term's future did not finish within its grace; it was
    /// dropped.
    Overran,
}

/// Runs one term: its future until `until` says why it ends, then (told so) to completion,
/// within `lost_grace` when the Lease was lost.
async fn drive<F, Fut>(
    term: &mut F,
    elected: bool,
    until: impl Future<Output = TermEnd>,
    lost_grace: Option<Duration>,
) -> Ended
where
    F: FnMut(Term) -> Fut,
    Fut: Future<Output = ()>,
{
    let (tx, end) = watch::channel(None);
    let work = term(Term { end, elected });
    tokio::pin!(work);
    let why = tokio::select! {
        _ = &mut work => return Ended::Shutdown,
        why = until => why,
    };
    tx.send_replace(Some(why));
    match (why, lost_grace) {
        (TermEnd::Lost, Some(grace)) => match tokio::time::timeout(grace, work).await {
            Ok(()) => Ended::Lost,
            Err(_) => Ended::Overran,
        },
        (TermEnd::Lost, None) => {
            work.await;
            Ended::Lost
        }
        (TermEnd::Shutdown, _) => {
            work.await;
            Ended::Shutdown
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use tokio::sync::mpsc;

    /// A client that is never used: without election `run_elected` talks to no server.
    fn unused_client() -> kube::Client {
        let config = kube::Config::new("http://127.0.0.1:9".parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn without_election_one_term_ends_at_shutdown() {
        let (events, mut seen) = mpsc::unbounded_channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(run_elected(
            unused_client(),
            None,
            async move {
                let _ = stopped.await;
            },
            move |mut term| {
                let events = events.clone();
                async move {
                    events
                        .send(format!("start elected={}", term.elected()))
                        .unwrap();
                    let end = term.ended().await;
                    events.send(format!("end {end:?}")).unwrap();
                }
            },
        ));
        assert_eq!(seen.recv().await.unwrap(), "start elected=false");
        stop.send(()).unwrap();
        assert_eq!(seen.recv().await.unwrap(), "end Shutdown");
        run.await.unwrap();
        assert_eq!(seen.recv().await, None, "exactly one term");
    }

    #[test]
    fn timings_must_leave_room_to_step_down() {
        let mut o = LeaderOptions::new("ns", "l", "me");
        assert!(o.validate().is_ok());
        assert_eq!(o.step_down_grace(), Duration::from_secs(3));
        // The defaults replace a killed leader within 15 s, with time to start.
        assert!(o.lease_duration + o.retry_period <= Duration::from_secs(9));
        o.renew_deadline = o.lease_duration;
        assert!(
            o.validate().is_err(),
            "a leader must step down before its Lease passes"
        );
        o.renew_deadline = o.retry_period;
        assert!(
            o.validate().is_err(),
            "more than one renewal before the deadline"
        );
        o.renew_deadline = Duration::from_secs(5);
        o.retry_period = Duration::ZERO;
        assert!(o.validate().is_err());
    }

    #[test]
    fn a_lease_expires_by_the_candidates_clock_from_first_sight() {
        let lease = Duration::from_secs(10);
        let t0 = Instant::now();
        let seen = Observed::see(None, "a/1".into(), lease, t0);
        // The same version seen later keeps its first sighting: it does not live longer.
        let again = Observed::see(
            Some(&seen),
            "a/1".into(),
            lease,
            t0 + Duration::from_secs(6),
        );
        assert_eq!(
            again.remaining(t0 + Duration::from_secs(6)),
            Some(Duration::from_secs(4))
        );
        assert_eq!(again.remaining(t0 + lease), None);
        // A renewal (new version) restarts the clock.
        let renewed = Observed::see(
            Some(&again),
            "a/2".into(),
            lease,
            t0 + Duration::from_secs(8),
        );
        assert_eq!(renewed.remaining(t0 + lease), Some(Duration::from_secs(8)));
    }

    /// A term told its Lease is lost that keeps working past the grace is dropped, and
    /// the run reports the overrun, before the grace (the time a successor needs) is over.
    #[tokio::test]
    async fn a_term_that_does_not_stop_in_time_is_dropped() {
        let grace = Duration::from_millis(300);
        let (lost_tx, lost_rx) = tokio::sync::oneshot::channel::<()>();
        let (events, mut seen) = mpsc::unbounded_channel();
        let mut term = move |mut term: Term| {
            let events = events.clone();
            async move {
                let end = term.ended().await;
                events.send(format!("told {end:?}")).unwrap();
                // Ignores the end and keeps "writing".
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    events.send("write".to_string()).unwrap();
                }
            }
        };
        let started = Instant::now();
        let drove = drive(
            &mut term,
            true,
            async move {
                let _ = lost_rx.await;
                TermEnd::Lost
            },
            Some(grace),
        );
        lost_tx.send(()).unwrap();
        assert_eq!(drove.await, Ended::Overran);
        // Dropped at the grace, not when the term chose to stop (it never would).
        assert!(started.elapsed() >= grace);
        assert_eq!(seen.recv().await.unwrap(), "told Lost");
        drop(term);
        // Once dropped it writes no more: its sender is gone and the channel closes.
        while let Some(e) = seen.recv().await {
            assert_eq!(e, "write");
        }
    }

    #[tokio::test]
    async fn a_term_that_stops_in_time_ends_as_lost() {
        let mut term = |mut term: Term| async move {
            term.ended().await;
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let ended = drive(
            &mut term,
            true,
            async { TermEnd::Lost },
            Some(Duration::from_secs(30)),
        );
        assert_eq!(ended.await, Ended::Lost);
    }

    #[tokio::test]
    async fn a_term_that_returns_early_ends_the_run() {
        let mut terms = 0;
        run_elected(unused_client(), None, std::future::pending(), |_term| {
            terms += 1;
            async {}
        })
        .await;
        assert_eq!(terms, 1);
    }
}
