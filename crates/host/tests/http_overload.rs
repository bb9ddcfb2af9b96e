//! The HTTP layer under overload and bad bodies, over TLS against an in-process host, with
//! clients that behave as the ones that broke it:
//!
//! - a client that writes its whole oversized body before reading (Python's http.client,
//!   curl without `Expect`) reads the 413 and sees the connection closed, not a reset;
//! - many HTTP/2 streams on one connection, most refused with 429 while their bodies are
//!   still coming, each end with a complete answer and none is reset;
//! - a LIST keeps its read place while its body goes out to a slow reader, so readers past
//!   the limit get 429; a reader that stops reading gives the place up at the request
//!   timeout (and still gets its whole list).
//!
//! The limited caller is `alice` (the admin impersonating her): the admin's own group,
//! `system:masters`, is never limited.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use flotilla_testwait::eventually;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use common::TestHost;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// How the limited caller is named on raw requests (the admin's certificate impersonates her).
const AS_ALICE: [(&str, &str); 2] = [
    ("impersonate-user", "alice"),
    ("impersonate-group", "developers"),
];

/// An upper bound that only catches a hang.
const HANG: Duration = Duration::from_secs(60);

/// Gives `alice` cluster-admin, so what limits her is the server's load, not RBAC.
async fn bind_alice(t: &TestHost) {
    let crb: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(t.client.clone())
        .create(&PostParams::default(), &crb)
        .await
        .unwrap();
}

/// A kube-rs client acting as `alice`, without kube-rs's retries of 429.
async fn alice(t: &TestHost) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::read_from(&t.host.kubeconfig).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.auth_info.impersonate = Some("alice".into());
    config.auth_info.impersonate_groups = Some(vec!["developers".into()]);
    config.default_retry = false;
    kube::Client::try_from(config).unwrap()
}

/// A TLS connection to the host with the admin's certificate, offering only `alpn`.
async fn connect(t: &TestHost, alpn: &[u8]) -> TlsStream<TcpStream> {
    let context = flotilla_pki::Kubeconfig::load(&t.host.kubeconfig)
        .unwrap()
        .context(None)
        .unwrap();
    let mut config = (*context.client_config().unwrap()).clone();
    config.alpn_protocols = vec![alpn.to_vec()];
    let tcp = TcpStream::connect(t.host.addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(alpn));
    tls
}

/// An HTTP/1.1 request head.
fn head(method: &str, path: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut text = format!("{method} {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for (name, value) in headers {
        text.push_str(&format!("{name}: {value}\r\n"));
    }
    text.push_str("\r\n");
    text.into_bytes()
}

/// An HTTP/1.1 response head: status and headers (names lowercase).
struct ResponseHead {
    status: u16,
    headers: Vec<(String, String)>,
}

impl ResponseHead {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Reads a response head from `conn`; returns it with the body bytes read past it.
async fn read_head(conn: &mut TlsStream<TcpStream>) -> (ResponseHead, Vec<u8>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = conn.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection ended before a response head");
        buf.extend_from_slice(&chunk[..n]);
    };
    let text = String::from_utf8(buf[..end].to_vec()).unwrap();
    let mut lines = text.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    (ResponseHead { status, headers }, buf[end + 4..].to_vec())
}

/// Reads the rest of a `content-length` body after `read` of it came with the head.
async fn read_body(conn: &mut TlsStream<TcpStream>, head: &ResponseHead, read: Vec<u8>) -> Vec<u8> {
    let length: usize = head
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .expect("a content-length");
    let mut body = read;
    let mut rest = vec![0u8; length - body.len()];
    conn.read_exact(&mut rest).await.unwrap();
    body.extend_from_slice(&rest);
    body
}

/// A ConfigMap manifest whose body is `size` bytes or a little more.
fn configmap_body(name: &str, size: usize) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"blob": "x".repeat(size)},
    }))
    .unwrap()
}

const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn a_client_that_writes_its_whole_oversized_body_before_reading_gets_413_then_close() {
    const LIMIT: usize = 64 * 1024;
    let t = common::start_with(|o| o.server.max_body_bytes = LIMIT).await;
    // Past what the kernel buffers between the two ends (some MB on loopback): without the
    // server reading it, the client cannot finish writing.
    let body = configmap_body("big", 16 * 1024 * 1024);
    let length = body.len().to_string();
    let headers = [
        ("content-type", "application/json"),
        ("content-length", length.as_str()),
    ];

    // Written whole before anything is read, as Python's http.client does.
    let mut conn = connect(&t, b"http/1.1").await;
    let mut request = head("POST", CONFIGMAPS, &headers);
    request.extend_from_slice(&body);
    tokio::time::timeout(HANG, conn.write_all(&request))
        .await
        .unwrap()
        .expect("the server read the body on: writing it whole succeeds");
    let (answer, read) = read_head(&mut conn).await;
    assert_eq!(answer.status, 413);
    assert_eq!(answer.header("connection"), Some("close"));
    let status: Value = serde_json::from_slice(&read_body(&mut conn, &answer, read).await).unwrap();
    assert_eq!(status["reason"], "RequestEntityTooLarge", "{status}");
    assert_eq!(
        status["message"],
        format!("Request entity too large: limit is {LIMIT}")
    );
    // Then the server closes the connection, cleanly.
    let mut after = Vec::new();
    let n = tokio::time::timeout(HANG, conn.read_to_end(&mut after))
        .await
        .unwrap()
        .expect("a clean close after the answer, not a reset");
    assert_eq!(n, 0);

    // A client that waits for `100 Continue` before sending gets the 413 instead, at once.
    let mut conn = connect(&t, b"http/1.1").await;
    let mut expecting = headers.to_vec();
    expecting.push(("expect", "100-continue"));
    conn.write_all(&head("POST", CONFIGMAPS, &expecting))
        .await
        .unwrap();
    let (answer, _) = tokio::time::timeout(HANG, read_head(&mut conn))
        .await
        .unwrap();
    assert_eq!(answer.status, 413, "{:?}", answer.headers);

    // curl over HTTP/1.1 without `Expect` writes the body first too.
    if let Some(curl) = curl() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("body.json");
        std::fs::write(&file, &body).unwrap();
        let pki = t.dir.path().join("pki");
        let out = tokio::process::Command::new(curl)
            .args(["-sS", "--http1.1", "-H", "Expect:", "-w", "\n%{http_code}"])
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", file.display()))
            .arg("--cacert")
            .arg(pki.join("ca.crt"))
            .arg("--cert")
            .arg(pki.join("admin.crt"))
            .arg("--key")
            .arg(pki.join("admin.key"))
            .arg(format!("{}{CONFIGMAPS}", t.host.url()))
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "curl failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (text, code) = stdout.rsplit_once('\n').unwrap();
        assert_eq!(code, "413", "{stdout}");
        assert!(
            text.contains("\"reason\":\"RequestEntityTooLarge\""),
            "{text}"
        );
    }

    // Nothing was stored.
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
    assert!(cms.get_opt("big").await.unwrap().is_none());
    t.host.stop().await;
}

/// `curl` when it is on this machine (the test says so when it is not).
fn curl() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join("curl"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        eprintln!("curl is not installed: its case is not run");
    }
    found
}

/// `apiserver_request_total` answers with `code`, from the host's metrics.
async fn answered(t: &TestHost, code: u16) -> usize {
    metric_sum(t, "apiserver_request_total", &format!("code=\"{code}\"")).await
}

/// The sum of the samples of `metric` whose labels contain `label`.
async fn metric_sum(t: &TestHost, metric: &str, label: &str) -> usize {
    use http_body_util::BodyExt;
    let body = t.host.server.metrics.render().into_body();
    let text = String::from_utf8(body.collect().await.unwrap().to_bytes().to_vec()).unwrap();
    text.lines()
        .filter(|l| l.starts_with(metric) && l.contains(label))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as usize
}

#[tokio::test]
async fn http2_streams_refused_with_429_while_sending_their_bodies_end_with_their_answer() {
    const LIMIT: usize = 2;
    const STREAMS: usize = 60;
    let t = common::start_with(|o| o.server.max_mutating_requests_inflight = LIMIT).await;
    bind_alice(&t).await;
    let conn = connect(&t, b"h2").await;
    let (client, mut connection) = h2::client::handshake(conn).await.unwrap();
    let mut ping = connection.ping_pong().unwrap();
    let connection = tokio::spawn(connection);

    // Every stream's head goes out first; its body follows once the server has answered
    // the ones it refuses (the refused answer while the body is still coming).
    let before = answered(&t, 429).await;
    let mut streams = Vec::new();
    for i in 0..STREAMS {
        let body = configmap_body(&format!("cm-{i}"), 2048);
        let mut req = http::Request::post(CONFIGMAPS)
            .header("content-type", "application/json")
            .header("content-length", body.len());
        for (name, value) in AS_ALICE {
            req = req.header(name, value);
        }
        let mut client = client.clone().ready().await.unwrap();
        let (answer, sending) = client.send_request(req.body(()).unwrap(), false).unwrap();
        streams.push((answer, sending, body));
    }
    // The server holds LIMIT requests waiting for their bodies and has answered the others.
    eventually("the refusals", HANG, || async {
        answered(&t, 429).await >= before + STREAMS - LIMIT
    })
    .await;

    let mut stream_errors = Vec::new();
    let mut pending = Vec::new();
    for (answer, mut sending, body) in streams {
        if let Err(e) = sending.send_data(Bytes::from(body), true) {
            stream_errors.push(format!("sending the body: {e}"));
        }
        pending.push((answer, sending));
    }
    let mut codes = std::collections::BTreeMap::new();
    let mut sent = Vec::new();
    for (answer, sending) in pending {
        match tokio::time::timeout(HANG, answer).await.unwrap() {
            Ok(resp) => {
                let code = resp.status().as_u16();
                let mut body = resp.into_body();
                let mut read = 0;
                while let Some(chunk) = body.data().await {
                    match chunk {
                        Ok(c) => {
                            read += c.len();
                            let _ = body.flow_control().release_capacity(c.len());
                        }
                        Err(e) => stream_errors.push(format!("reading the answer: {e}")),
                    }
                }
                assert!(read > 0, "an empty {code} answer");
                *codes.entry(code).or_insert(0) += 1;
            }
            Err(e) => stream_errors.push(format!("awaiting the answer: {e}")),
        }
        sent.push(sending);
    }
    // Every frame the server sent before its PONG has been read by now: a reset of any
    // stream would be known.
    ping.ping(h2::Ping::opaque()).await.unwrap();
    for sending in &mut sent {
        let reset = std::future::poll_fn(|cx| Poll::Ready(sending.poll_reset(cx))).await;
        if let Poll::Ready(Ok(reason)) = reset {
            stream_errors.push(format!("stream reset by the server: {reason:?}"));
        }
    }
    assert!(stream_errors.is_empty(), "{stream_errors:?}");
    assert_eq!(
        codes,
        [(201, LIMIT), (429, STREAMS - LIMIT)].into_iter().collect(),
        "every stream answered: the admitted ones created, the others refused"
    );
    // The connection is still good for more.
    let mut req = http::Request::get(CONFIGMAPS);
    for (name, value) in AS_ALICE {
        req = req.header(name, value);
    }
    let mut client = client.ready().await.unwrap();
    let (answer, _) = client.send_request(req.body(()).unwrap(), true).unwrap();
    assert_eq!(answer.await.unwrap().status(), 200);
    drop(client);
    connection.abort();
    t.host.stop().await;
}

/// A namespace `big` of 16 ConfigMaps of 500 KB: a list of 8 MB, more than the connection
/// buffers hold while its reader does not read. Its path.
async fn big_collection(t: &TestHost) -> String {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(t.client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "big"}})).unwrap(),
        )
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "big");
    for i in 0..BIG_ITEMS {
        let cm =
            json!({"metadata": {"name": format!("cm-{i}")}, "data": {"blob": "y".repeat(500_000)}});
        cms.create(&PostParams::default(), &serde_json::from_value(cm).unwrap())
            .await
            .unwrap();
    }
    "/api/v1/namespaces/big/configmaps".to_string()
}

const BIG_ITEMS: usize = 16;

/// A reader of `path` as alice that has the answer's head and reads nothing more for now.
struct SlowReader {
    conn: TlsStream<TcpStream>,
    head: ResponseHead,
    read: Vec<u8>,
}

impl SlowReader {
    async fn start(t: &TestHost, path: &str) -> SlowReader {
        let mut conn = connect(t, b"http/1.1").await;
        conn.write_all(&head("GET", path, &AS_ALICE)).await.unwrap();
        let (head, read) = tokio::time::timeout(HANG, read_head(&mut conn))
            .await
            .unwrap();
        assert_eq!(head.status, 200);
        SlowReader { conn, head, read }
    }

    /// Reads the rest of the list: every item is there.
    async fn finish(mut self) {
        let body = tokio::time::timeout(HANG, read_body(&mut self.conn, &self.head, self.read))
            .await
            .unwrap();
        let list: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(list["items"].as_array().unwrap().len(), BIG_ITEMS);
    }
}

/// The read-only places taken, from the host's gauge.
async fn reading(t: &TestHost) -> usize {
    metric_sum(
        t,
        "apiserver_current_inflight_requests",
        "request_kind=\"readOnly\"",
    )
    .await
}

/// A list as alice: its status code.
async fn list_as_alice(t: &TestHost) -> u16 {
    let small: Api<ConfigMap> = Api::namespaced(alice(t).await, "default");
    match small.list(&ListParams::default()).await {
        Ok(_) => 200,
        Err(kube::Error::Api(s)) => {
            assert!(s.code != 429 || s.reason == "TooManyRequests", "{s:?}");
            s.code
        }
        Err(e) => panic!("listing as alice: {e}"),
    }
}

#[tokio::test]
async fn a_list_keeps_its_read_place_until_a_slow_reader_has_its_body() {
    const LIMIT: usize = 2;
    let t = common::start_with(|o| o.server.max_requests_inflight = LIMIT).await;
    bind_alice(&t).await;
    let path = big_collection(&t).await;
    let mut readers = Vec::new();
    for _ in 0..LIMIT {
        readers.push(SlowReader::start(&t, &path).await);
    }
    assert_eq!(
        reading(&t).await,
        LIMIT,
        "the lists being sent hold their places"
    );
    assert_eq!(list_as_alice(&t).await, 429, "another read while they are");
    // Once the readers have their bodies, the places are free.
    for reader in readers {
        reader.finish().await;
    }
    eventually("the places freed", HANG, || async {
        reading(&t).await == 0
    })
    .await;
    assert_eq!(list_as_alice(&t).await, 200);
    t.host.stop().await;
}

#[tokio::test]
async fn a_reader_that_stops_reading_leaves_its_place_at_the_request_timeout() {
    const LIMIT: usize = 1;
    let t = common::start_with(|o| {
        o.server.max_requests_inflight = LIMIT;
        o.server.request_timeout = Duration::from_secs(2);
    })
    .await;
    bind_alice(&t).await;
    let path = big_collection(&t).await;
    let reader = SlowReader::start(&t, &path).await;
    assert_eq!(list_as_alice(&t).await, 429);
    // Past the request timeout the place is free although the reader has not read on.
    eventually("the place freed at the request timeout", HANG, || async {
        reading(&t).await == 0
    })
    .await;
    assert_eq!(list_as_alice(&t).await, 200);
    // The slow reader still gets its whole list.
    reader.finish().await;
    t.host.stop().await;
}
