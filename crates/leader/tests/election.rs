//! Two candidates against a real host API server over TLS: only one leads at a time, a
//! released Lease passes at once, and an abandoned one passes after it expires.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use flotilla_leader::{LeaderElector, LeaderOptions};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;

async fn host() -> (tempfile::TempDir, flotilla_host::RunningHost, kube::Client) {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = flotilla_host::HostOptions::new(dir.path());
    opts.secure_port = 0;
    let host = flotilla_host::start(opts).await.unwrap();
    let kc = kube::config::Kubeconfig::read_from(&host.kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    (dir, host, client)
}

fn opts(identity: &str) -> LeaderOptions {
    let mut o = LeaderOptions::new("kube-system", "flotilla-test", identity);
    o.lease_duration = Duration::from_secs(2);
    o.renew_deadline = Duration::from_millis(1500);
    o.retry_period = Duration::from_millis(200);
    o
}

/// Someone outside the election writes itself into the test Lease as just renewed.
async fn intrude(leases: &Api<Lease>) {
    let mut lease = leases.get("flotilla-test").await.unwrap();
    let spec = lease.spec.as_mut().unwrap();
    spec.holder_identity = Some("intruder".into());
    spec.renew_time = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
        k8s_openapi::jiff::Timestamp::now(),
    ));
    leases
        .replace("flotilla-test", &Default::default(), &lease)
        .await
        .unwrap();
}

#[tokio::test]
async fn one_leader_at_a_time_and_handover() {
    let (_dir, host, client) = host().await;
    let a = LeaderElector::new(client.clone(), opts("a"));
    let b = LeaderElector::new(client.clone(), opts("b"));
    let lead_a = a.acquire().await;
    assert!(lead_a.is_leader());

    // b waits while a renews, well past the lease duration. Barrier instead of a pause: a's
    // renewals (the Lease's renewTime) advance two lease durations past where b started
    // waiting, so b had its chances at an expired Lease; a holds it all along.
    let waiting = tokio::spawn(async move { b.acquire().await });
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let renewed = |lease: Lease| {
        let spec = lease.spec.unwrap_or_default();
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        spec.renew_time.expect("a renewed Lease has a renewTime").0
    };
    let until = renewed(leases.get("flotilla-test").await.unwrap())
        + k8s_openapi::jiff::SignedDuration::try_from(opts("a").lease_duration * 2).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while renewed(leases.get("flotilla-test").await.unwrap()) < until {
        assert!(Instant::now() < deadline, "a stopped renewing");
        tokio::time::sleep(opts("a").retry_period).await;
    }
    assert!(!waiting.is_finished(), "b must not lead while a renews");

    // a releases: b takes over within a few retry periods, not a whole lease duration.
    let released = Instant::now();
    lead_a.release().await;
    let lead_b = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("b acquires after release")
        .unwrap();
    assert!(released.elapsed() < Duration::from_secs(2));
    let spec = leases.get("flotilla-test").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));

    // b vanishes without releasing (its renewer is aborted): c takes over after expiry.
    drop(lead_b);
    let c = LeaderElector::new(client.clone(), opts("c"));
    let mut lead_c = tokio::time::timeout(Duration::from_secs(10), c.acquire())
        .await
        .expect("c acquires once the abandoned Lease expires");
    assert!(lead_c.is_leader());

    // Someone else overwrites the Lease: c notices it lost leadership.
    intrude(&leases).await;
    tokio::time::timeout(Duration::from_secs(5), lead_c.lost())
        .await
        .expect("c sees the loss");
    assert!(!lead_c.is_leader());
    host.stop().await;
}

/// What the runners' terms report, in the order it happened.
type Events = tokio::sync::mpsc::UnboundedSender<String>;

/// `run_elected` as `who`, reporting each term's start and end, until `stop` fires.
fn runner(
    client: &kube::Client,
    who: &'static str,
    events: Events,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(flotilla_leader::run_elected(
        client.clone(),
        Some(opts(who)),
        async move {
            let _ = stop.await;
        },
        move |mut term| {
            let events = events.clone();
            async move {
                events
                    .send(format!("{who} start elected={}", term.elected()))
                    .unwrap();
                let end = term.ended().await;
                events.send(format!("{who} end {end:?}")).unwrap();
            }
        },
    ))
}

#[tokio::test]
async fn run_elected_runs_one_term_per_leadership() {
    let (_dir, host, client) = host().await;
    let (events, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let next = async |seen: &mut tokio::sync::mpsc::UnboundedReceiver<String>| {
        tokio::time::timeout(Duration::from_secs(10), seen.recv())
            .await
            .expect("the next term event")
            .unwrap()
    };
    let (stop_a, a_stops) = tokio::sync::oneshot::channel();
    let a = runner(&client, "a", events.clone(), a_stops);
    assert_eq!(next(&mut seen).await, "a start elected=true");

    // b competes while a leads; a stops: a's term ends before b's begins.
    let (stop_b, b_stops) = tokio::sync::oneshot::channel();
    let b = runner(&client, "b", events.clone(), b_stops);
    stop_a.send(()).unwrap();
    assert_eq!(next(&mut seen).await, "a end Shutdown");
    a.await.unwrap();
    assert_eq!(next(&mut seen).await, "b start elected=true");

    // Another holder takes the Lease: b's term ends as lost, and once that holder's Lease
    // expires b leads again in a new term.
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    intrude(&leases).await;
    assert_eq!(next(&mut seen).await, "b end Lost");
    assert_eq!(next(&mut seen).await, "b start elected=true");

    // b stops: its last term ends and the Lease is released.
    stop_b.send(()).unwrap();
    assert_eq!(next(&mut seen).await, "b end Shutdown");
    b.await.unwrap();
    let spec = leases.get("flotilla-test").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity, None);
    host.stop().await;
}
