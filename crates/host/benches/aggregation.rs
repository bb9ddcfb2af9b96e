//! Cost of API aggregation: the same GET of one Flunder, measured through the host (which
//! authenticates, authorizes and proxies it to the extension API server over TLS with its
//! front-proxy certificate) and directly against the extension (admin client certificate),
//! in the same run with the same clients.
//!
//! Both servers run in-process on loopback; the extension keeps its objects in memory. Each
//! of the [`CLIENTS`] workers has its own HTTP/1.1 client (one TLS connection, kept alive).
//! Prints requests/s, p50 and p99 of both paths and the overhead of going through the host.
//! It fails only when a request is answered wrongly.
//!
//! Run: `cargo bench -p flotilla-host --bench aggregation`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use bytes::Bytes;
use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::serve::PeerTrust;
use flotilla_apiserver::{ApiServer, Registry, ServerConfig};
use flotilla_pki::{CertificateAuthority, ChainVerifier};
use flotilla_storage::{MemoryStorage, Storage};
use http::{Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Concurrent clients per phase.
const CLIENTS: usize = 16;
/// How long each measured phase runs.
const PHASE: Duration = Duration::from_secs(5);
/// Unmeasured load before each phase (connections, caches).
const WARMUP: Duration = Duration::from_secs(1);
/// What the host may add, as a fraction of direct throughput, to meet the target.
const TARGET_OVERHEAD: f64 = 0.25;

const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const FLUNDER: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/bench";

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

fn https_client(ca_pem: &str, identity: (&str, &str)) -> Result<HttpsClient> {
    let tls = flotilla_pki::client_config(&[ca_pem.to_string()], Some(identity), false)?;
    let mut tls = (*tls).clone();
    tls.alpn_protocols.clear();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

async fn send(
    client: &HttpsClient,
    method: Method,
    url: &str,
    body: Option<&Value>,
) -> Result<(StatusCode, Bytes)> {
    let mut req = http::Request::builder().method(method).uri(url);
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Full::new(Bytes::from(serde_json::to_vec(b)?))
        }
        None => Full::new(Bytes::new()),
    };
    let resp = client
        .request(req.body(body)?)
        .await
        .with_context(|| format!("requesting {url}"))?;
    let status = resp.status();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

fn main() -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("building the tokio runtime")?;
    runtime.block_on(run())
}

async fn run() -> Result<()> {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("flotilla API aggregation benchmark");
    println!(
        "machine: {cores} cores shared by the host, the extension server and the clients \
         (one process; client CPU is included in every figure)"
    );

    let dir = tempfile::tempdir().context("temp data dir")?;
    let mut opts = flotilla_host::HostOptions::new(dir.path());
    opts.secure_port = 0;
    let host = flotilla_host::start(opts)
        .await
        .context("starting the host")?;
    let pki = dir.path().join("pki");
    let read =
        |f: &str| std::fs::read_to_string(pki.join(f)).with_context(|| format!("reading pki/{f}"));
    let host_ca = read("ca.crt")?;
    let front_proxy_ca = read("front-proxy-ca.crt")?;
    let admin_cert = read("admin.crt")?;
    let admin_key = read("admin.key")?;

    let (ext_addr, ext_ca) = start_extension(&host_ca, &front_proxy_ca).await?;
    let ext_url = format!("https://127.0.0.1:{}", ext_addr.port());
    println!("host: {}  extension: {ext_url}", host.url());

    // Register the extension and wait until the host finds it available.
    let admin = https_client(&host_ca, (&admin_cert, &admin_key))?;
    let apiservice = json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": "v1alpha1.wardle.example.com",
                     "annotations": {"apiregistration.flotilla.io/url": ext_url}},
        "spec": {"group": "wardle.example.com", "version": "v1alpha1",
                 "groupPriorityMinimum": 1000, "versionPriority": 15,
                 "service": {"namespace": "default", "name": "wardle", "port": 443},
                 "caBundle": base64::engine::general_purpose::STANDARD.encode(&ext_ca)},
    });
    let (status, body) = send(
        &admin,
        Method::POST,
        &format!("{}{APISERVICES}", host.url()),
        Some(&apiservice),
    )
    .await?;
    ensure!(
        status == StatusCode::CREATED,
        "creating the APIService: {status} {}",
        String::from_utf8_lossy(&body)
    );
    wait_available(&admin, &host.url()).await?;
    let flunder = json!({
        "apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": "bench", "namespace": "default"},
        "spec": {"reference": "a flunder of moderate size", "replicas": 3,
                 "labels": {"app": "wardle", "tier": "bench"}},
    });
    let (status, body) = send(
        &admin,
        Method::POST,
        &format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            host.url()
        ),
        Some(&flunder),
    )
    .await?;
    ensure!(
        status == StatusCode::CREATED,
        "creating the Flunder through the host: {status} {}",
        String::from_utf8_lossy(&body)
    );
    println!("object: GET {FLUNDER} answers {} B of JSON", body.len());

    let direct_clients = (0..CLIENTS)
        .map(|_| https_client(&ext_ca, (&admin_cert, &admin_key)))
        .collect::<Result<Vec<_>>>()?;
    let host_clients = (0..CLIENTS)
        .map(|_| https_client(&host_ca, (&admin_cert, &admin_key)))
        .collect::<Result<Vec<_>>>()?;
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bench", "namespace": "default"},
        "data": {"reference": "a config map of moderate size", "replicas": "3"},
    });
    let (status, body) = send(
        &admin,
        Method::POST,
        &format!("{}/api/v1/namespaces/default/configmaps", host.url()),
        Some(&cm),
    )
    .await?;
    ensure!(
        status == StatusCode::CREATED,
        "creating the ConfigMap: {status} {}",
        String::from_utf8_lossy(&body)
    );
    let local_url = format!("{}/api/v1/namespaces/default/configmaps/bench", host.url());
    let direct_url = format!("{ext_url}{FLUNDER}");
    let host_url = format!("{}{FLUNDER}", host.url());

    println!();
    println!(
        "== GET one Flunder: {CLIENTS} clients, HTTP/1.1 keep-alive, {WARMUP:?} warm-up + {PHASE:?} each =="
    );
    let direct = phase(&direct_clients, &direct_url, "direct to the extension").await?;
    let through = phase(&host_clients, &host_url, "through the host").await?;
    // For scale: what one request costs the host when it serves it itself.
    let local = phase(&host_clients, &local_url, "host's own ConfigMap").await?;

    println!();
    println!("== the same GET from 1 client (CPU not saturated: the latency the hop adds) ==");
    let direct_1 = phase(&direct_clients[..1], &direct_url, "direct to the extension").await?;
    let through_1 = phase(&host_clients[..1], &host_url, "through the host").await?;

    let throughput_overhead = direct.rps / through.rps - 1.0;
    let p50_ratio = through.p50.as_secs_f64() / direct.p50.as_secs_f64();
    let p99_ratio = through.p99.as_secs_f64() / direct.p99.as_secs_f64();
    println!();
    println!(
        "overhead of the host: throughput {:+.1}% (direct {:.0} req/s / host {:.0} req/s), \
         p50 x{p50_ratio:.2}, p99 x{p99_ratio:.2}",
        throughput_overhead * 100.0,
        direct.rps,
        through.rps
    );
    if let (Some(d), Some(t), Some(l)) = (
        direct.cpu_per_request,
        through.cpu_per_request,
        local.cpu_per_request,
    ) {
        println!(
            "CPU per request (clients + servers): direct {:.0} us, through the host {:.0} us \
             (+{:.0} us); a request the host answers itself costs {:.0} us",
            d.as_secs_f64() * 1e6,
            t.as_secs_f64() * 1e6,
            (t.as_secs_f64() - d.as_secs_f64()) * 1e6,
            l.as_secs_f64() * 1e6
        );
    }
    println!(
        "1 client: p50 direct {:.3} ms, through the host {:.3} ms (+{:.3} ms per request)",
        direct_1.p50.as_secs_f64() * 1000.0,
        through_1.p50.as_secs_f64() * 1000.0,
        (through_1.p50.as_secs_f64() - direct_1.p50.as_secs_f64()) * 1000.0
    );
    println!(
        "for scale: the host serving its own ConfigMap: {:.0} req/s, p50 {:.3} ms (a proxied \
         request costs the host about as much as a local one, plus the extension's work)",
        local.rps,
        local.p50.as_secs_f64() * 1000.0
    );
    println!(
        "target: overhead <= {:.0}%: {}",
        TARGET_OVERHEAD * 100.0,
        if throughput_overhead <= TARGET_OVERHEAD {
            "met"
        } else {
            "NOT met"
        }
    );

    host.stop().await;
    Ok(())
}

struct Figures {
    rps: f64,
    p50: Duration,
    p99: Duration,
    /// CPU time of the whole process (clients + host + extension) per request.
    cpu_per_request: Option<Duration>,
}

/// CPU time (user + system) this process has used, from `/proc/self/stat` (Linux; clock
/// ticks of 10 ms, precise enough over a phase of seconds).
fn process_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may contain spaces) start at field 3 (state);
    // utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    const TICKS_PER_SECOND: u64 = 100;
    Some(Duration::from_millis(
        (utime + stime) * 1000 / TICKS_PER_SECOND,
    ))
}

/// Warms up, then GETs `url` from every client for [`PHASE`] and prints the figures.
async fn phase(clients: &[HttpsClient], url: &str, label: &str) -> Result<Figures> {
    let _ = load(clients, url, WARMUP).await?;
    let cpu_before = process_cpu();
    let started = Instant::now();
    let mut latencies = load(clients, url, PHASE).await?;
    let elapsed = started.elapsed();
    let cpu = cpu_before
        .zip(process_cpu())
        .map(|(a, b)| b.saturating_sub(a));
    latencies.sort_unstable();
    ensure!(!latencies.is_empty(), "{label}: no request completed");
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    let f = Figures {
        rps: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50: pct(0.50),
        p99: pct(0.99),
        cpu_per_request: cpu.map(|c| c / latencies.len() as u32),
    };
    println!(
        "{label:<26} {:>7} requests  {:>8.0} req/s  p50 {:>7.3} ms  p99 {:>7.3} ms  cpu/request {}",
        latencies.len(),
        f.rps,
        f.p50.as_secs_f64() * 1000.0,
        f.p99.as_secs_f64() * 1000.0,
        f.cpu_per_request.map_or("n/a".to_string(), |c| format!(
            "{:.0} us",
            c.as_secs_f64() * 1e6
        )),
    );
    Ok(f)
}

/// Every client GETs `url` in a loop for `length`; returns all latencies.
async fn load(clients: &[HttpsClient], url: &str, length: Duration) -> Result<Vec<Duration>> {
    let deadline = Instant::now() + length;
    let tasks: Vec<_> = clients
        .iter()
        .map(|client| {
            let client = client.clone();
            let url = url.to_string();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let t = Instant::now();
                    let (status, body) = send(&client, Method::GET, &url, None).await?;
                    if status != StatusCode::OK {
                        bail!("GET {url}: {status} {}", String::from_utf8_lossy(&body));
                    }
                    latencies.push(t.elapsed());
                }
                anyhow::Ok(latencies)
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.context("worker panicked")??);
    }
    Ok(all)
}

async fn wait_available(admin: &HttpsClient, host_url: &str) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let (_, body) = send(
            admin,
            Method::GET,
            &format!("{host_url}{APISERVICES}/v1alpha1.wardle.example.com"),
            None,
        )
        .await?;
        let obj: Value = serde_json::from_slice(&body)?;
        let available = obj
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Available" && c["status"] == "True")
            });
        if available {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the APIService did not become available: {obj}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Starts the wardle extension server (trusting the host's CA for client certificates and
/// its front-proxy CA for `X-Remote-*`); returns its address and CA (PEM).
async fn start_extension(host_ca: &str, front_proxy_ca: &str) -> Result<(SocketAddr, String)> {
    let registry = Registry::new();
    registry.register(ResourceDef::new(
        "wardle.example.com",
        "v1alpha1",
        "Flunder",
        "flunders",
        true,
    ));
    let storage = Arc::new(MemoryStorage::new());
    storage
        .create(
            "/core/namespaces/default",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
        )
        .await?;
    let server = ApiServer::new(Arc::new(registry), storage, ServerConfig::default());
    let ca = CertificateAuthority::generate("wardle-ca")?;
    let cert = ca.issue_server(
        "wardle",
        &["localhost".to_string()],
        &["127.0.0.1".parse()?],
    )?;
    let tls = flotilla_pki::server_config(
        &cert.cert_pem,
        &cert.key_pem,
        &[host_ca.to_string(), front_proxy_ca.to_string()],
    )?;
    let trust = Arc::new(PeerTrust {
        client_ca: Some(ChainVerifier::new(&[host_ca.to_string()])?),
        request_header_ca: Some(ChainVerifier::new(&[front_proxy_ca.to_string()])?),
        front_proxy_names: vec![flotilla_pki::FRONT_PROXY_CLIENT_USER.into()],
    });
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(flotilla_apiserver::serve::serve_tls_with_trust(
        listener,
        tls,
        server.router(),
        std::future::pending::<()>(),
        trust,
    ));
    Ok((addr, ca.cert_pem().to_string()))
}
