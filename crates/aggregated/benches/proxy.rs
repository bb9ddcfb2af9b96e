//! What the cluster proxy costs: GET of one ConfigMap in a member cluster, either through
//! `host/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/...` (host → aggregated
//! server → member, with delegated authorization and impersonation) or straight from the
//! member, by 16 concurrent clients for about 5 s each. Prints p50/p99 latency, requests per
//! second, and the p50 overhead of the proxy (target: at most 20%).
//!
//! Everything runs in this process: the host, the aggregated server behind its APIService,
//! and the member (another host with a token file). Run with
//! `cargo bench -p flotilla-aggregated --bench proxy`.

// A benchmark is a program whose failure is a panic.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Secret};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

const CLIENTS: usize = 16;
const DURATION: Duration = Duration::from_secs(5);
const WARMUP: Duration = Duration::from_secs(1);
const MEMBER_TOKEN: &str = "bench-member-token";
const CM_PATH: &str = "/api/v1/namespaces/default/configmaps/x";

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>;

/// A client with its own connection pool, trusting the CA in `pki_dir` and presenting its
/// admin certificate (as kubectl with the admin kubeconfig would).
fn https_client(pki_dir: &Path) -> HttpsClient {
    let read = |f: &str| std::fs::read_to_string(pki_dir.join(f)).unwrap();
    let (cert, key) = (read("admin.crt"), read("admin.key"));
    let tls = flotilla_pki::client_config(&[read("ca.crt")], Some((&cert, &key)), false).unwrap();
    let mut tls = (*tls).clone();
    tls.alpn_protocols.clear();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_all_versions()
        .build();
    Client::builder(TokioExecutor::new()).build(connector)
}

async fn get(client: &HttpsClient, url: &str) -> Bytes {
    let resp = client.get(url.parse().unwrap()).await.unwrap();
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert!(
        status.is_success(),
        "GET {url}: {status} {}",
        String::from_utf8_lossy(&body)
    );
    body
}

async fn kube_client(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .unwrap();
    kube::Client::try_from(config).unwrap()
}

struct Result {
    name: &'static str,
    p50: Duration,
    p99: Duration,
    rps: f64,
    count: usize,
}

/// `clients` tasks, each with its own connection, GET `url` in a loop for `DURATION`.
async fn measure(name: &'static str, clients: usize, url: &str, pki_dir: &Path) -> Result {
    let url: Arc<str> = Arc::from(url);
    let run = |length: Duration, url: Arc<str>| {
        let pki_dir = pki_dir.to_path_buf();
        async move {
            let mut tasks = Vec::new();
            for _ in 0..clients {
                let client = https_client(&pki_dir);
                let url = url.clone();
                tasks.push(tokio::spawn(async move {
                    let mut latencies = Vec::new();
                    let end = Instant::now() + length;
                    while Instant::now() < end {
                        let t = Instant::now();
                        get(&client, &url).await;
                        latencies.push(t.elapsed());
                    }
                    latencies
                }));
            }
            let started = Instant::now();
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.unwrap());
            }
            (all, started.elapsed())
        }
    };
    let _ = run(WARMUP, url.clone()).await;
    let (mut latencies, elapsed) = run(DURATION, url).await;
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
    Result {
        name,
        p50: at(0.50),
        p99: at(0.99),
        rps: latencies.len() as f64 / elapsed.as_secs_f64(),
        count: latencies.len(),
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(bench());
}

async fn bench() {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let member_dir = dir.path().join("member");

    let mut opts = flotilla_host::HostOptions::new(&host_dir);
    opts.secure_port = 0;
    let host = flotilla_host::start(opts).await.unwrap();
    let host_client = kube_client(&host.kubeconfig).await;
    let host_pki = host_dir.join("pki");
    let aggregated = flotilla_aggregated::start(flotilla_aggregated::AggregatedOptions::new(
        dir.path().join("aggregated"),
        host_client.clone(),
        std::fs::read_to_string(host_pki.join("ca.crt")).unwrap(),
        std::fs::read_to_string(host_pki.join("front-proxy-ca.crt")).unwrap(),
    ))
    .await
    .unwrap();
    flotilla_aggregated::register_apiservice(&host_client, &aggregated.url(), &aggregated.ca_pem)
        .await
        .unwrap();

    std::fs::create_dir_all(&member_dir).unwrap();
    let tokens = member_dir.join("tokens.csv");
    std::fs::write(
        &tokens,
        format!("{MEMBER_TOKEN},flotilla-member,u1,\"system:masters\"\n"),
    )
    .unwrap();
    let mut opts = flotilla_host::HostOptions::new(&member_dir);
    opts.secure_port = 0;
    opts.token_auth_file = Some(tokens);
    let member = flotilla_host::start(opts).await.unwrap();
    let member_client = kube_client(&member.kubeconfig).await;
    let member_pki = member_dir.join("pki");

    // The member's ConfigMap, its credentials on the host, and the Cluster.
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "x"},
        "data": {"greeting": "hello from member1", "payload": "y".repeat(512)},
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(member_client, "default")
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let ns: Namespace =
        serde_json::from_value(json!({"metadata": {"name": "karmada-cluster"}})).unwrap();
    Api::<Namespace>::all(host_client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let secret: Secret = serde_json::from_value(json!({
        "metadata": {"name": "member1"},
        "stringData": {
            "token": MEMBER_TOKEN,
            "caBundle": std::fs::read_to_string(member_pki.join("ca.crt")).unwrap(),
        },
    }))
    .unwrap();
    Api::<Secret>::namespaced(host_client.clone(), "karmada-cluster")
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.karmada.io", "v1alpha1", "Cluster"),
        "clusters",
    );
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1",
        "kind": "Cluster",
        "metadata": {"name": "member1"},
        "spec": {
            "syncMode": "Push",
            "apiEndpoint": member.url(),
            "secretRef": {"namespace": "karmada-cluster", "name": "member1"},
        },
    }))
    .unwrap();
    let clusters: Api<DynamicObject> = Api::all_with(host_client.clone(), &ar);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match clusters.create(&PostParams::default(), &cluster).await {
            Ok(_) => break,
            Err(e) if Instant::now() > deadline => panic!("creating the Cluster: {e}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }

    let proxied = format!(
        "{}/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy{CM_PATH}",
        host.url()
    );
    let direct = format!("{}{CM_PATH}", member.url());
    // Both paths return the same object.
    let a: serde_json::Value =
        serde_json::from_slice(&get(&https_client(&host_pki), &proxied).await).unwrap();
    let b: serde_json::Value =
        serde_json::from_slice(&get(&https_client(&member_pki), &direct).await).unwrap();
    assert_eq!(a["metadata"]["uid"], b["metadata"]["uid"]);
    assert_eq!(a["data"]["greeting"], "hello from member1");

    println!(
        "GET {CM_PATH}: {CLIENTS} concurrent clients, {} s each, after {} s warm-up",
        DURATION.as_secs(),
        WARMUP.as_secs()
    );
    let (direct_url, proxied_url) = (direct.clone(), proxied.clone());
    let direct = measure("direct to member", CLIENTS, &direct, &member_pki).await;
    let proxied = measure("via host proxy", CLIENTS, &proxied, &host_pki).await;
    // For reference: one hop through the host to the aggregated server (no member involved).
    let cluster_url = format!(
        "{}/apis/cluster.karmada.io/v1alpha1/clusters/member1",
        host.url()
    );
    let cluster_get = measure("(Cluster via host)", CLIENTS, &cluster_url, &host_pki).await;
    println!(
        "{:<18} {:>10} {:>10} {:>10} {:>9}",
        "path", "p50", "p99", "req/s", "requests"
    );
    for r in [&direct, &proxied, &cluster_get] {
        println!(
            "{:<18} {:>8.2}ms {:>8.2}ms {:>10.0} {:>9}",
            r.name,
            r.p50.as_secs_f64() * 1000.0,
            r.p99.as_secs_f64() * 1000.0,
            r.rps,
            r.count
        );
    }
    // For reference: latency without queueing (one client), where each hop's own cost shows.
    let direct_1 = measure("direct, 1 client", 1, &direct_url, &member_pki).await;
    let proxied_1 = measure("proxy, 1 client", 1, &proxied_url, &host_pki).await;
    for r in [&direct_1, &proxied_1] {
        println!(
            "{:<18} {:>8.2}ms {:>8.2}ms {:>10.0} {:>9}",
            r.name,
            r.p50.as_secs_f64() * 1000.0,
            r.p99.as_secs_f64() * 1000.0,
            r.rps,
            r.count
        );
    }
    let ratio = proxied.p50.as_secs_f64() / direct.p50.as_secs_f64();
    let overhead = (ratio - 1.0) * 100.0;
    println!(
        "p50 ratio proxy/direct: {ratio:.2} (overhead {overhead:+.0}%; target <= +20%: {})",
        if overhead <= 20.0 { "met" } else { "NOT met" }
    );

    aggregated.stop().await;
    member.stop().await;
    host.stop().await;
}
