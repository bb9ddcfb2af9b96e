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

// === a leader cut off from the API server ===

/// A TCP relay to the host that can be cut like a network partition: once cut, bytes stop
/// flowing on every connection and new connections are held open unanswered, so requests
/// hang rather than fail.
struct Relay {
    port: u16,
    cut: tokio::sync::watch::Sender<bool>,
}

async fn relay(target: std::net::SocketAddr) -> Relay {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (cut, cut_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        loop {
            let Ok((mut inbound, _)) = listener.accept().await else {
                return;
            };
            let mut cut_rx = cut_rx.clone();
            tokio::spawn(async move {
                let already_cut = *cut_rx.borrow();
                if already_cut {
                    std::future::pending::<()>().await;
                }
                let mut outbound = tokio::net::TcpStream::connect(target).await.unwrap();
                let cut = tokio::select! {
                    _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => false,
                    _ = cut_rx.wait_for(|c| *c) => true,
                };
                if cut {
                    // Both sockets stay open: the client waits for an answer that never
                    // comes.
                    std::future::pending::<()>().await;
                }
            });
        }
    });
    Relay { port, cut }
}

/// A client for the host that goes through `relay`.
async fn relayed_client(host: &flotilla_host::RunningHost, relay: &Relay) -> kube::Client {
    let mut kc = kube::config::Kubeconfig::read_from(&host.kubeconfig).unwrap();
    for cluster in &mut kc.clusters {
        if let Some(c) = cluster.cluster.as_mut() {
            c.server = Some(format!("https://127.0.0.1:{}", relay.port));
        }
    }
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .unwrap();
    kube::Client::try_from(config).unwrap()
}

fn host_addr(host: &flotilla_host::RunningHost) -> std::net::SocketAddr {
    let kc = kube::config::Kubeconfig::read_from(&host.kubeconfig).unwrap();
    let server = kc.clusters[0]
        .cluster
        .as_ref()
        .unwrap()
        .server
        .clone()
        .unwrap();
    let uri: http::Uri = server.parse().unwrap();
    format!("127.0.0.1:{}", uri.port_u16().unwrap())
        .parse()
        .unwrap()
}

async fn next_event(seen: &mut tokio::sync::mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("the next term event")
        .unwrap()
}

/// No double-apply: a leader whose renewals hang (partitioned from the API server) ends its
/// term at its renew deadline, before its Lease expires for the other candidate, so the
/// other's term starts only after the first one stopped.
#[tokio::test]
async fn a_partitioned_leader_stops_before_another_leads() {
    let (_dir, host, client) = host().await;
    let relay = relay(host_addr(&host)).await;
    let a_client = relayed_client(&host, &relay).await;
    let (events, mut seen) = tokio::sync::mpsc::unbounded_channel();
    let (_stop_a, a_stops) = tokio::sync::oneshot::channel();
    let _a = runner(&a_client, "a", events.clone(), a_stops);
    assert_eq!(next_event(&mut seen).await, "a start elected=true");
    let (stop_b, b_stops) = tokio::sync::oneshot::channel();
    let b = runner(&client, "b", events.clone(), b_stops);

    relay.cut.send_replace(true);
    // One channel carries both runners' events, so their order is the order they happened.
    assert_eq!(next_event(&mut seen).await, "a end Lost");
    assert_eq!(next_event(&mut seen).await, "b start elected=true");
    let leases: Api<Lease> = Api::namespaced(client.clone(), "kube-system");
    let spec = leases.get("flotilla-test").await.unwrap().spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    stop_b.send(()).unwrap();
    assert_eq!(next_event(&mut seen).await, "b end Shutdown");
    b.await.unwrap();
    host.stop().await;
}

static OVERRAN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A term that goes on writing after its Lease is lost is cut off (and the overrun hook,
/// where the binaries exit, runs) before the other candidate can lead.
#[tokio::test]
async fn a_term_that_keeps_writing_is_cut_off_before_another_leads() {
    let (_dir, host, client) = host().await;
    let relay = relay(host_addr(&host)).await;
    let a_client = relayed_client(&host, &relay).await;
    let (events, mut seen) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut a_opts = opts("a");
    a_opts.on_step_down_overrun = Some(|| OVERRAN.store(true, std::sync::atomic::Ordering::SeqCst));
    let a_events = events.clone();
    let a = tokio::spawn(flotilla_leader::run_elected(
        a_client,
        Some(a_opts),
        std::future::pending(),
        move |mut term| {
            let events = a_events.clone();
            async move {
                events.send("a start".into()).unwrap();
                term.ended().await;
                events.send("a told to stop".into()).unwrap();
                // Ignores it and goes on "writing".
                loop {
                    events.send("a write".into()).unwrap();
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        },
    ));
    assert_eq!(next_event(&mut seen).await, "a start");
    let (_stop_b, b_stops) = tokio::sync::oneshot::channel();
    let _b = runner(&client, "b", events.clone(), b_stops);
    relay.cut.send_replace(true);
    assert_eq!(next_event(&mut seen).await, "a told to stop");
    // a's run ends (its term dropped) before b leads: every "a write" precedes b's start.
    loop {
        match next_event(&mut seen).await.as_str() {
            "a write" => continue,
            "b start elected=true" => break,
            other => panic!("unexpected {other}"),
        }
    }
    tokio::time::timeout(Duration::from_secs(1), a)
        .await
        .expect("a's run ended when its term overran")
        .unwrap();
    assert!(OVERRAN.load(std::sync::atomic::Ordering::SeqCst));
    host.stop().await;
}
