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
//! Components do not write that loop themselves: [`run_elected`] runs a component once per
//! term of leadership (or once, without election) and is the only such loop in Flotilla;
//! [`LeaderOptions::for_component`] names every component's Lease the same way.

use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::sync::watch;
use tokio::task::JoinHandle;

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
}

impl LeaderOptions {
    /// Kubernetes' defaults: 15 s lease, 10 s renew deadline, 2 s retry period.
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
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
    HeldByOther(String),
}

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
                    Ok(Attempt::HeldByOther(String::from("(just created)")))
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
            let renewed = spec
                .renew_time
                .as_ref()
                .or(spec.acquire_time.as_ref())
                .map(|t| t.0);
            let expired = match renewed {
                Some(at) => {
                    let age = Timestamp::now().duration_since(at);
                    age.as_secs_f64() > duration.as_secs_f64()
                }
                None => true,
            };
            if !expired {
                return Ok(Attempt::HeldByOther(holder));
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
                Ok(Attempt::HeldByOther(String::from("(conflict)")))
            }
            Err(e) => Err(self.write_error(e)),
        }
    }

    /// Waits until this candidate holds the Lease, then keeps renewing it in the background.
    pub async fn acquire(&self) -> Leadership {
        let mut logged_holder = String::new();
        loop {
            match self.try_acquire_or_renew().await {
                Ok(Attempt::Acquired) => break,
                Ok(Attempt::HeldByOther(holder)) => {
                    if holder != logged_holder {
                        tracing::info!(lease = %self.opts.name, %holder, "waiting for the leader's Lease");
                        logged_holder = holder;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, source = ?std::error::Error::source(&e), "leader election attempt failed")
                }
            }
            tokio::time::sleep(self.opts.retry_period).await;
        }
        tracing::info!(lease = %self.opts.name, identity = %self.opts.identity, "became leader");
        let (lost_tx, lost) = watch::channel(false);
        let (stop, mut stop_rx) = watch::channel(false);
        let elector = self.clone();
        let renewer = tokio::spawn(async move {
            let mut last_renewal = tokio::time::Instant::now();
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(elector.opts.retry_period) => {}
                    _ = stop_rx.changed() => {
                        elector.release().await;
                        lost_tx.send_replace(true);
                        return;
                    }
                }
                match elector.try_acquire_or_renew().await {
                    Ok(Attempt::Acquired) => last_renewal = tokio::time::Instant::now(),
                    Ok(Attempt::HeldByOther(holder)) => {
                        tracing::warn!(lease = %elector.opts.name, %holder, "lost the Lease to another holder");
                        lost_tx.send_replace(true);
                        return;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "renewing the Lease failed");
                        if last_renewal.elapsed() > elector.opts.renew_deadline {
                            tracing::warn!(lease = %elector.opts.name, "renew deadline passed; stepping down");
                            lost_tx.send_replace(true);
                            return;
                        }
                    }
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
        drive(&mut term, false, async {
            shutdown.await;
            TermEnd::Shutdown
        })
        .await;
        return;
    };
    let elector = LeaderElector::new(client, opts);
    loop {
        let mut leadership = tokio::select! {
            l = elector.acquire() => l,
            _ = &mut shutdown => return,
        };
        let end = drive(&mut term, true, async {
            tokio::select! {
                _ = leadership.lost() => TermEnd::Lost,
                _ = &mut shutdown => TermEnd::Shutdown,
            }
        })
        .await;
        if end == TermEnd::Shutdown {
            leadership.release().await;
            return;
        }
    }
}

/// Runs one term: its future until `until` says why it ends, then (told so) to completion.
async fn drive<F, Fut>(term: &mut F, elected: bool, until: impl Future<Output = TermEnd>) -> TermEnd
where
    F: FnMut(Term) -> Fut,
    Fut: Future<Output = ()>,
{
    let (tx, end) = watch::channel(None);
    let work = term(Term { end, elected });
    tokio::pin!(work);
    let why = tokio::select! {
        _ = &mut work => return TermEnd::Shutdown,
        why = until => why,
    };
    tx.send_replace(Some(why));
    work.await;
    why
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
