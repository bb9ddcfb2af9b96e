//! The status controller's cost bounds, against the real host (in-process) and loopback
//! stand-ins for members: the number of members probed at once never exceeds
//! `probe_concurrency`, and a member that cannot be reached is probed at growing intervals
//! up to the cap. Figures (how long, how much) are the scale bench's job (`e2e/benches`);
//! these tests check the behaviour only.

// Test code: a panic is how a step reports failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_testwait::eventually;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use flotilla_cluster_controllers::ControllerManagerOptions;
use flotilla_membership::{Member, MemberCredentials};
use parking_lot::Mutex;

/// Joins `url` (members are reached over TLS only) with a token and the CA `ca_pem`.
async fn join(client: &kube::Client, name: &str, url: &str, ca_pem: &str) {
    let member = Member::new(name, url, MemberCredentials::token("t", ca_pem));
    flotilla_membership::join(client, &member).await.unwrap();
}

/// A CA for members that never complete a handshake.
fn ca_pem() -> String {
    flotilla_pki::CertificateAuthority::generate("unused-ca")
        .unwrap()
        .cert_pem()
        .to_string()
}

#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    total: AtomicUsize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_in_flight_never_exceed_the_limit() {
    const LIMIT: usize = 3;
    const CLUSTERS: usize = 12;
    let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
    // A member whose /readyz takes 200 ms and counts how many are answered at once.
    let gauge = Arc::new(Gauge::default());
    let g = gauge.clone();
    let router = Router::new().route(
        "/readyz",
        get(move || {
            let g = g.clone();
            async move {
                let now = g.now.fetch_add(1, Ordering::SeqCst) + 1;
                g.max.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(200)).await;
                g.now.fetch_sub(1, Ordering::SeqCst);
                g.total.fetch_add(1, Ordering::SeqCst);
                "ok"
            }
        }),
    );
    let member = flotilla_testenv::serve_tls(router).await.unwrap();
    for i in 0..CLUSTERS {
        join(
            &plane.client,
            &format!("slow{i}"),
            &member.url,
            &member.ca_pem,
        )
        .await;
    }
    let options = ControllerManagerOptions {
        status_period: Duration::from_millis(100),
        probe_concurrency: LIMIT,
        probe_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    let manager = flotilla_cluster_controllers::spawn(plane.client.clone(), options);
    // Every cluster probed about three times: 36 probes of 200 ms through 3 workers.
    eventually("36 probes", Duration::from_secs(60), || async {
        gauge.total.load(Ordering::SeqCst) >= CLUSTERS * 3
    })
    .await;
    let max = gauge.max.load(Ordering::SeqCst);
    // All twelve are due at once and each probe takes 200 ms: the pool fills, never more.
    assert_eq!(max, LIMIT, "at most {LIMIT} probes at once, saw {max}");
    let metrics = manager.metrics_text();
    let in_flight = metrics
        .lines()
        .find_map(|l| l.strip_prefix("flotilla_cluster_controllers_status_syncs_in_flight "))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap();
    assert!(in_flight <= LIMIT, "{metrics}");
    manager.stop().await;
    member.stop().await;
    plane.aggregated.stop().await;
    plane.host.stop().await;
}

/// How long each counted request is held, so that requests sent together overlap.
const HOLD: Duration = Duration::from_millis(200);

/// A read of a cluster's execution namespace: each reconcile of a new cluster makes one.
fn reads_execution_namespace(request: &http::Request<kube::client::Body>) -> bool {
    request.method() == http::Method::GET
        && request
            .uri()
            .path()
            .strip_prefix("/api/v1/namespaces/")
            .is_some_and(|n| n.starts_with(flotilla_names::karmada::EXECUTION_NAMESPACE_PREFIX))
}

/// Counts the execution-namespace reads in flight on a host client, each held [`HOLD`].
#[derive(Clone)]
struct Counting<S> {
    inner: S,
    gauge: Arc<Gauge>,
}

impl<S> tower::Service<http::Request<kube::client::Body>> for Counting<S>
where
    S: tower::Service<http::Request<kube::client::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<kube::client::Body>) -> Self::Future {
        let counted = reads_execution_namespace(&request);
        let response = self.inner.call(request);
        let gauge = self.gauge.clone();
        Box::pin(async move {
            if !counted {
                return response.await;
            }
            let now = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
            gauge.max.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(HOLD).await;
            let answer = response.await;
            gauge.now.fetch_sub(1, Ordering::SeqCst);
            gauge.total.fetch_add(1, Ordering::SeqCst);
            answer
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_reconciles_in_flight_never_exceed_the_limit() {
    const LIMIT: u16 = 2;
    const CLUSTERS: usize = 16;
    let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
    // Joined before the controllers start: all sixteen are due at once, as when a
    // controller-manager starts on a fleet.
    for i in 0..CLUSTERS {
        // Port 1 of loopback: refused, so the status controller's probes end at once.
        join(
            &plane.client,
            &format!("c{i}"),
            "https://127.0.0.1:1",
            &ca_pem(),
        )
        .await;
    }
    // Each reconcile of a new cluster reads its execution namespace once: those reads are
    // counted, and each is held 200 ms.
    let kubeconfig = kube::config::Kubeconfig::read_from(&plane.host.kubeconfig).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let gauge = Arc::new(Gauge::default());
    let layer = tower::layer::layer_fn({
        let gauge = gauge.clone();
        move |inner| Counting {
            inner,
            gauge: gauge.clone(),
        }
    });
    let client = kube::client::ClientBuilder::try_from(config)
        .unwrap()
        .with_layer(&layer)
        .build();
    let options = ControllerManagerOptions {
        cluster_syncs: LIMIT,
        ..Default::default()
    };
    let manager = flotilla_cluster_controllers::spawn(client, options);
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(plane.client.clone());
    let prefix = flotilla_names::karmada::execution_namespace("c");
    eventually(
        "every execution namespace",
        Duration::from_secs(60),
        || async {
            let created = namespaces
                .list(&Default::default())
                .await
                .unwrap()
                .items
                .iter()
                .filter(|n| {
                    n.metadata
                        .name
                        .as_deref()
                        .is_some_and(|n| n.starts_with(&prefix))
                })
                .count();
            if created >= CLUSTERS {
                Ok(())
            } else {
                Err(format!("{created} so far"))
            }
        },
    )
    .await;
    assert!(gauge.total.load(Ordering::SeqCst) >= CLUSTERS);
    let max = gauge.max.load(Ordering::SeqCst);
    // Sixteen due at once, each holding its worker 200 ms: the workers fill, never more.
    assert_eq!(
        max,
        usize::from(LIMIT),
        "at most {LIMIT} reconciles at once, saw {max}"
    );
    manager.stop().await;
    plane.aggregated.stop().await;
    plane.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_member_is_probed_at_growing_intervals_up_to_the_cap() {
    const PERIOD: Duration = Duration::from_millis(100);
    const CAP: Duration = Duration::from_millis(1600);
    let plane = flotilla_testenv::ControlPlane::start().await.unwrap();
    // A member that accepts connections and drops them at once: unreachable, and every
    // probe leaves an accept behind.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let accepts: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let seen = accepts.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            seen.lock().push(Instant::now());
            drop(socket);
        }
    });
    join(&plane.client, "gone", &url, &ca_pem()).await;
    let options = ControllerManagerOptions {
        status_period: PERIOD,
        unreachable_backoff_max: CAP,
        probe_timeout: Duration::from_secs(1),
        ..Default::default()
    };
    let manager = flotilla_cluster_controllers::spawn(plane.client.clone(), options);
    // 0.1 + 0.2 + 0.4 + 0.8 + 1.6 + 1.6 + 1.6 s (± 10 % each) after the first probe.
    eventually("eight probes", Duration::from_secs(30), || async {
        probes(&accepts.lock()).len() >= 8
    })
    .await;
    let times = probes(&accepts.lock());
    let gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    let shown: Vec<u128> = gaps.iter().map(Duration::as_millis).collect();
    // The first probe reports Ready=False (a new cluster takes its first observation as
    // is), so the back-off starts at once: each gap about doubles until the cap.
    for pair in gaps[..4].windows(2) {
        let ratio = pair[1].as_secs_f64() / pair[0].as_secs_f64();
        assert!(ratio > 1.4, "gaps (ms) {shown:?} do not grow");
    }
    assert!(gaps[0] >= PERIOD.mul_f64(1.5), "gaps (ms) {shown:?}");
    for gap in &gaps[4..7] {
        // Capped: within jitter of the cap (plus scheduling slack), not growing further.
        assert!(
            *gap >= CAP.mul_f64(0.85) && *gap <= CAP.mul_f64(1.3),
            "gaps (ms) {shown:?} not capped at {CAP:?}"
        );
    }
    manager.stop().await;
    plane.aggregated.stop().await;
    plane.host.stop().await;
}

/// The accepts, one per probe: a client may open a second connection within the same probe
/// (a retried request), which is not another probe.
fn probes(accepts: &[Instant]) -> Vec<Instant> {
    let mut out: Vec<Instant> = Vec::new();
    for &t in accepts {
        if out
            .last()
            .is_none_or(|&l| t - l > Duration::from_millis(50))
        {
            out.push(t);
        }
    }
    out
}
