//! API aggregation end to end: a test extension API server (built from the same library, with
//! its own CA and serving certificate, trusting the host's CA for clients and the host's
//! front-proxy CA for `X-Remote-*` headers) is registered on the host with an APIService and
//! then used through the host by raw HTTP and by the real `kubectl`.
//!
//! What the extension authenticated is observed by a middleware on its router that records,
//! per request, the identity headers and whether the connection presented a trusted
//! front-proxy certificate.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Kubectl, write_manifest};

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use base64::Engine;
use bytes::Bytes;
use flotilla_apimachinery::ResourceDef;
use flotilla_apiserver::auth::PeerIdentity;
use flotilla_apiserver::serve::PeerTrust;
use flotilla_apiserver::{ApiServer, Registry, ServerConfig};
use flotilla_pki::{CertificateAuthority, ChainVerifier};
use flotilla_storage::{MemoryStorage, Storage};
use flotilla_testwait::eventually;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const GROUP: &str = "wardle.example.com";
const VERSION: &str = "v1alpha1";
const APISERVICE: &str = "v1alpha1.wardle.example.com";
const APISERVICES: &str = "/apis/apiregistration.k8s.io/v1/apiservices";
const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
const V2_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The availability controller checks every 5 s; allow three rounds.
const AVAILABILITY_WAIT: Duration = Duration::from_secs(15);

// === HTTP client ===

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A small HTTPS client trusting `ca_pem`, presenting `identity` (cert, key) when given.
fn https_client(ca_pem: &str, identity: Option<(&str, &str)>) -> HttpsClient {
    let tls = flotilla_pki::client_config(&[ca_pem.to_string()], identity, false).unwrap();
    let mut tls = (*tls).clone();
    // hyper-rustls sets ALPN itself from the enabled HTTP versions.
    tls.alpn_protocols.clear();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(connector)
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "response ({}) is not JSON: {e}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

async fn send(
    client: &HttpsClient,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let mut req = http::Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Full::new(Bytes::from(serde_json::to_vec(b).unwrap()))
        }
        None => Full::new(Bytes::new()),
    };
    let resp = tokio::time::timeout(
        Duration::from_secs(20),
        client.request(req.body(body).unwrap()),
    )
    .await
    .unwrap_or_else(|_| panic!("{url}: no response within 20 s"))
    .unwrap_or_else(|e| panic!("{url}: {e:?}"));
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        headers,
        body,
    }
}

// === The host side ===

/// The host with an admin HTTP client and its PKI read from its data directory.
struct Host {
    t: common::TestHost,
    admin: HttpsClient,
    ca_pem: String,
    front_proxy_ca_pem: String,
    admin_cert: String,
    admin_key: String,
}

impl Host {
    async fn start() -> Self {
        let t = common::start().await;
        let pki = t.dir.path().join("pki");
        let read = |f: &str| std::fs::read_to_string(pki.join(f)).unwrap();
        let ca_pem = read("ca.crt");
        let admin_cert = read("admin.crt");
        let admin_key = read("admin.key");
        let admin = https_client(&ca_pem, Some((&admin_cert, &admin_key)));
        Self {
            front_proxy_ca_pem: read("front-proxy-ca.crt"),
            t,
            admin,
            ca_pem,
            admin_cert,
            admin_key,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.t.host.url())
    }

    async fn get(&self, path: &str) -> Reply {
        send(&self.admin, Method::GET, &self.url(path), &[], None).await
    }

    async fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        send(&self.admin, Method::GET, &self.url(path), headers, None).await
    }

    async fn post(&self, path: &str, body: &Value) -> Reply {
        send(&self.admin, Method::POST, &self.url(path), &[], Some(body)).await
    }

    async fn delete(&self, path: &str) -> Reply {
        send(&self.admin, Method::DELETE, &self.url(path), &[], None).await
    }

    /// The APIService's Available condition, once it has one.
    async fn available(&self, name: &str) -> Option<Value> {
        let r = self.get(&format!("{APISERVICES}/{name}")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
        r.json()
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Available").cloned())
    }

    /// Waits until the APIService's Available condition has `status`; returns the condition.
    async fn wait_available(&self, name: &str, status: &str) -> Value {
        eventually(
            &format!("APIService {name} Available={status}"),
            AVAILABILITY_WAIT,
            || async {
                match self.available(name).await {
                    Some(c) if c["status"] == status => Ok(c),
                    other => Err(format!("last condition {other:?}")),
                }
            },
        )
        .await
    }

    fn kubectl(&self) -> Kubectl {
        Kubectl::new(&self.t.host.kubeconfig)
    }
}

fn apiservice(name: &str, group: &str, version: &str, url: &str, ca_pem: Option<&str>) -> Value {
    let mut obj = json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name, "annotations": {"apiregistration.flotilla.io/url": url}},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": 1000,
            "versionPriority": 15,
            "service": {"namespace": "default", "name": "wardle", "port": 443},
        },
    });
    if let Some(pem) = ca_pem {
        obj["spec"]["caBundle"] = json!(base64::engine::general_purpose::STANDARD.encode(pem));
    }
    obj
}

fn flunder(name: &str, reference: &str) -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"reference": reference},
    })
}

// === The extension API server ===

/// What the extension saw of one request before authenticating it.
#[derive(Debug, Clone)]
struct Seen {
    method: Method,
    path: String,
    query: String,
    /// The HTTP version the request came over (lists over HTTP/1.1, the rest HTTP/2).
    version: http::Version,
    /// The connection presented a certificate from the front-proxy CA with an allowed CN.
    front_proxy: bool,
    remote_user: Option<String>,
    remote_groups: Vec<String>,
}

type SeenLog = Arc<Mutex<Vec<Seen>>>;

/// The wardle extension server: `flunders` (namespaced) in `wardle.example.com/v1alpha1`,
/// in-memory storage kept across restarts.
struct Extension {
    server: Arc<ApiServer>,
    ca_pem: String,
    tls: Arc<rustls::ServerConfig>,
    trust: Arc<PeerTrust>,
    seen: SeenLog,
    addr: SocketAddr,
    running: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
}

impl Extension {
    async fn start(host: &Host) -> Self {
        let registry = Registry::new();
        registry.register(ResourceDef::new(
            GROUP, VERSION, "Flunder", "flunders", true,
        ));
        let storage = Arc::new(MemoryStorage::new());
        // Namespaced creates need the namespace object in the extension's own storage.
        storage
            .create(
                "/core/namespaces/default",
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
            )
            .await
            .unwrap();
        let server = ApiServer::new(Arc::new(registry), storage, ServerConfig::default());
        let ca = CertificateAuthority::generate("wardle-ca").unwrap();
        let cert = ca
            .issue_server(
                "wardle",
                &["localhost".to_string()],
                &["127.0.0.1".parse().unwrap()],
            )
            .unwrap();
        let tls = flotilla_pki::server_config(
            &cert.cert_pem,
            &cert.key_pem,
            &[host.ca_pem.clone(), host.front_proxy_ca_pem.clone()],
        )
        .unwrap();
        let trust = Arc::new(PeerTrust {
            client_ca: Some(ChainVerifier::new(std::slice::from_ref(&host.ca_pem)).unwrap()),
            request_header_ca: Some(
                ChainVerifier::new(std::slice::from_ref(&host.front_proxy_ca_pem)).unwrap(),
            ),
            front_proxy_names: vec![flotilla_pki::FRONT_PROXY_CLIENT_USER.into()],
        });
        let mut ext = Self {
            server,
            ca_pem: ca.cert_pem().to_string(),
            tls,
            trust,
            seen: Arc::new(Mutex::new(Vec::new())),
            addr: "127.0.0.1:0".parse().unwrap(),
            running: None,
        };
        ext.serve().await;
        ext
    }

    /// Serves on `self.addr` (a free port the first time, the same port afterwards).
    async fn serve(&mut self) {
        let listener = TcpListener::bind(self.addr).await.unwrap();
        self.addr = listener.local_addr().unwrap();
        let seen = self.seen.clone();
        let router = self.server.router().layer(axum::middleware::from_fn(
            move |req: Request, next: Next| {
                let seen = seen.clone();
                async move {
                    let headers = req.headers();
                    let entry = Seen {
                        method: req.method().clone(),
                        path: req.uri().path().to_string(),
                        query: req.uri().query().unwrap_or_default().to_string(),
                        version: req.version(),
                        front_proxy: req
                            .extensions()
                            .get::<PeerIdentity>()
                            .is_some_and(|p| p.front_proxy),
                        remote_user: headers
                            .get("x-remote-user")
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string),
                        remote_groups: headers
                            .get_all("x-remote-group")
                            .iter()
                            .filter_map(|v| v.to_str().ok())
                            .map(str::to_string)
                            .collect(),
                    };
                    seen.lock().unwrap().push(entry);
                    next.run(req).await
                }
            },
        ));
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(flotilla_apiserver::serve::serve_tls_with_trust(
            listener,
            self.tls.clone(),
            router,
            async {
                let _ = rx.await;
            },
            self.trust.clone(),
        ));
        self.running = Some((tx, task));
    }

    async fn stop(&mut self) {
        if let Some((tx, task)) = self.running.take() {
            let _ = tx.send(());
            let _ = task.await;
        }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.addr.port())
    }

    /// Requests under `prefix` the extension saw from `user`.
    fn seen_from(&self, user: &str, prefix: &str) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.remote_user.as_deref() == Some(user) && s.path.starts_with(prefix))
            .cloned()
            .collect()
    }
}

/// Reads lines of `lines` until one satisfies `pred`, for at most `secs`.
async fn line_matching<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
    secs: u64,
    what: &str,
    seen: &mut Vec<String>,
    pred: impl Fn(&str) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Ok(Ok(Some(line))) => {
                let hit = pred(&line);
                seen.push(line);
                if hit {
                    return;
                }
            }
            Ok(Ok(None)) => panic!("{what}: stream ended; lines so far: {seen:?}"),
            Ok(Err(e)) => panic!("{what}: {e}"),
            Err(_) => panic!("{what}: nothing within {secs} s; lines so far: {seen:?}"),
        }
    }
}

// === Tests ===

/// `kubectl get flunders -n default` as alice of group devs (impersonated by the admin).
async fn flunders_as_alice(kubectl: &Kubectl) -> common::Ran {
    kubectl
        .run(&[
            "--as",
            "alice",
            "--as-group",
            "devs",
            "get",
            "flunders",
            "-n",
            "default",
        ])
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extension_api_is_served_through_the_host() {
    let host = Host::start().await;
    let mut ext = Extension::start(&host).await;

    // Register it.
    let r = host
        .post(
            APISERVICES,
            &apiservice(APISERVICE, GROUP, VERSION, &ext.url(""), Some(&ext.ca_pem)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let cond = host.wait_available(APISERVICE, "True").await;
    assert_eq!(cond["reason"], "Passed", "{cond}");

    // The availability check itself reached the extension through the front-proxy identity.
    let checks = ext.seen_from(
        "system:kube-aggregator",
        "/apis/wardle.example.com/v1alpha1",
    );
    assert!(!checks.is_empty() && checks.iter().all(|s| s.front_proxy));

    // Discovery: legacy, aggregated v2 (exact content type), the group document.
    let legacy = host
        .get_with("/apis", &[("accept", "application/json")])
        .await;
    assert_eq!(legacy.status, StatusCode::OK);
    let legacy = legacy.json();
    let wardle = legacy["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == GROUP)
        .unwrap_or_else(|| panic!("{GROUP} missing from /apis: {legacy}"));
    assert_eq!(
        wardle["preferredVersion"]["groupVersion"],
        "wardle.example.com/v1alpha1"
    );
    let v2 = host
        .get_with(
            "/apis",
            &[(
                "accept",
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
            )],
        )
        .await;
    assert_eq!(v2.status, StatusCode::OK);
    assert_eq!(
        v2.headers.get("content-type").unwrap().to_str().unwrap(),
        V2_DISCOVERY
    );
    let v2 = v2.json();
    assert_eq!(v2["kind"], "APIGroupDiscoveryList");
    let item = v2["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == GROUP)
        .unwrap_or_else(|| panic!("{GROUP} missing from aggregated discovery"));
    assert_eq!(item["versions"][0]["version"], VERSION, "{item}");
    let resources = item["versions"][0]["resources"].as_array().unwrap();
    let fl = resources
        .iter()
        .find(|r| r["resource"] == "flunders")
        .unwrap_or_else(|| panic!("flunders missing: {item}"));
    assert_eq!(fl["scope"], "Namespaced", "{fl}");
    assert_eq!(fl["responseKind"]["kind"], "Flunder", "{fl}");
    let group = host.get("/apis/wardle.example.com").await;
    assert_eq!(group.status, StatusCode::OK, "{}", group.text());
    assert_eq!(group.json()["kind"], "APIGroup");
    // The group/version document and OpenAPI come from the extension.
    let gv = host.get("/apis/wardle.example.com/v1alpha1").await;
    assert_eq!(gv.status, StatusCode::OK, "{}", gv.text());
    assert_eq!(gv.json()["resources"][0]["name"], "flunders");
    let openapi = host
        .get("/openapi/v3/apis/wardle.example.com/v1alpha1")
        .await;
    assert_eq!(openapi.status, StatusCode::OK, "{}", openapi.text());
    assert!(
        openapi.json()["paths"]
            .as_object()
            .is_some_and(|p| p.keys().any(|k| k.contains("flunders"))),
        "{}",
        openapi.text()
    );
    let index = host.get("/openapi/v3").await.json();
    assert!(
        index["paths"]
            .get("apis/wardle.example.com/v1alpha1")
            .is_some(),
        "{index}"
    );

    // kubectl through the host.
    let kubectl = host.kubectl();
    let files = tempfile::tempdir().unwrap();
    let out = kubectl.run(&["get", "flunders", "-n", "default"]).await;
    assert!(out.ok, "{}", out.stderr);
    assert!(out.stderr.contains("No resources found"), "{}", out.stderr);
    let f1 = write_manifest(files.path(), "f1.json", &flunder("f1", "one"));
    let out = kubectl.ok(&["create", "-f", &f1]).await;
    assert!(
        out.contains("flunder.wardle.example.com/f1 created"),
        "{out}"
    );
    let f2 = write_manifest(files.path(), "f2.json", &flunder("f2", "two"));
    let out = kubectl.ok(&["apply", "-f", &f2]).await;
    assert!(
        out.contains("flunder.wardle.example.com/f2 created"),
        "{out}"
    );
    let f2b = write_manifest(files.path(), "f2b.json", &flunder("f2", "two-changed"));
    let out = kubectl.ok(&["apply", "-f", &f2b]).await;
    assert!(
        out.contains("flunder.wardle.example.com/f2 configured"),
        "{out}"
    );
    let table = kubectl.ok(&["get", "flunders", "-n", "default"]).await;
    assert!(table.starts_with("NAME"), "{table}");
    assert!(table.contains("f1") && table.contains("f2"), "{table}");
    let yaml = kubectl
        .ok(&["get", "flunders", "-n", "default", "-o", "yaml"])
        .await;
    assert!(
        yaml.contains("kind: List") || yaml.contains("kind: FlunderList"),
        "{yaml}"
    );
    assert!(
        yaml.contains("name: f1") && yaml.contains("name: f2"),
        "{yaml}"
    );
    assert!(yaml.contains("reference: two-changed"), "{yaml}");
    assert!(
        yaml.contains("kubectl.kubernetes.io/last-applied-configuration"),
        "{yaml}"
    );
    // Stored in the extension, not in the host.
    let direct = ext
        .server
        .storage
        .get("/wardle.example.com/flunders/default/f2")
        .await
        .unwrap();
    assert!(direct.is_some(), "f2 not in the extension's storage");

    // A watch through the host streams a change made meanwhile.
    let mut child = kubectl
        .command(&["get", "flunders", "-n", "default", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut watched = Vec::new();
    line_matching(&mut lines, 20, "initial watch list", &mut watched, |l| {
        l.starts_with("f2")
    })
    .await;
    let r = host.post(FLUNDERS, &flunder("f3", "three")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    line_matching(&mut lines, 15, "watch event for f3", &mut watched, |l| {
        l.starts_with("f3")
    })
    .await;
    child.kill().await.unwrap();

    // The extension saw admin through the front-proxy certificate.
    let admin_seen = ext.seen_from("admin", "/apis/wardle.example.com");
    assert!(!admin_seen.is_empty());
    for s in &admin_seen {
        assert!(s.front_proxy, "{s:?}");
        assert!(
            s.remote_groups.iter().any(|g| g == "system:masters"),
            "{s:?}"
        );
    }
    // Lists, whose answers may be large, came over HTTP/1.1; the object reads, writes and
    // the watch over HTTP/2.
    let on_collection = |s: &&Seen| s.path == FLUNDERS;
    let lists: Vec<&Seen> = admin_seen
        .iter()
        .filter(on_collection)
        .filter(|s| s.method == Method::GET && !s.query.contains("watch=true"))
        .collect();
    assert!(!lists.is_empty(), "{admin_seen:?}");
    assert!(
        lists.iter().all(|s| s.version == http::Version::HTTP_11),
        "{lists:?}"
    );
    let others: Vec<&Seen> = admin_seen
        .iter()
        .filter(|s| !lists.iter().any(|l| std::ptr::eq(*l, *s)))
        .collect();
    assert!(
        others.iter().any(|s| s.query.contains("watch=true"))
            && others.iter().any(|s| s.method == Method::POST)
            && others.iter().any(|s| s.path.ends_with("/flunders/f2")),
        "{others:?}"
    );
    assert!(
        others.iter().all(|s| s.version == http::Version::HTTP_2),
        "{others:?}"
    );

    // Direct to the extension: the admin client certificate with a forged X-Remote-User is
    // refused, as is a request without any certificate; the plain admin certificate works.
    let direct_admin = https_client(&ext.ca_pem, Some((&host.admin_cert, &host.admin_key)));
    let url = ext.url(FLUNDERS);
    let forged = send(
        &direct_admin,
        Method::GET,
        &url,
        &[
            ("x-remote-user", "evil"),
            ("x-remote-group", "system:masters"),
        ],
        None,
    )
    .await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED, "{}", forged.text());
    assert_eq!(forged.json()["kind"], "Status");
    let anonymous = send(
        &https_client(&ext.ca_pem, None),
        Method::GET,
        &url,
        &[],
        None,
    )
    .await;
    assert_eq!(
        anonymous.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        anonymous.text()
    );
    let plain = send(&direct_admin, Method::GET, &url, &[], None).await;
    assert_eq!(plain.status, StatusCode::OK, "{}", plain.text());

    // Impersonation: authorized on the host as alice, forwarded as alice.
    let denied = flunders_as_alice(&kubectl).await;
    assert!(
        !denied.ok && denied.stderr.contains("forbidden"),
        "{}",
        denied.stderr
    );
    assert!(
        ext.seen_from("alice", "/apis/wardle.example.com/v1alpha1/namespaces")
            .is_empty(),
        "a request the host forbade reached the extension"
    );
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "flunder-reader"},
        "rules": [{"apiGroups": [GROUP], "resources": ["flunders"], "verbs": ["get", "list", "watch"]}],
    });
    let r = host
        .post("/apis/rbac.authorization.k8s.io/v1/clusterroles", &role)
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "devs-read-flunders"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "flunder-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "devs"}],
    });
    let r = host
        .post(
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            &binding,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let out = eventually(
        "alice may list flunders once bound",
        Duration::from_secs(10),
        || async {
            let out = flunders_as_alice(&kubectl).await;
            if out.ok { Ok(out) } else { Err(out.stderr) }
        },
    )
    .await;
    assert!(out.stdout.contains("f3"), "{}", out.stdout);
    let alice = ext.seen_from("alice", "/apis/wardle.example.com/v1alpha1/namespaces");
    assert!(!alice.is_empty());
    for s in &alice {
        assert!(s.front_proxy, "{s:?}");
        assert!(s.remote_groups.iter().any(|g| g == "devs"), "{s:?}");
        assert!(
            !s.remote_groups.iter().any(|g| g == "system:masters"),
            "{s:?}"
        );
    }

    // Stopping the extension: unavailable, 503 with a Status; the host keeps working.
    ext.stop().await;
    let cond = host.wait_available(APISERVICE, "False").await;
    assert_eq!(cond["reason"], "FailedDiscoveryCheck", "{cond}");
    let r = host.get(&format!("{FLUNDERS}/f1")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    let status = r.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["code"], 503, "{status}");
    let r = host.get("/api/v1/namespaces/default").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = host
        .get("/apis/apps/v1/namespaces/default/deployments")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let out = kubectl.run(&["get", "namespaces"]).await;
    assert!(
        out.ok && out.stdout.contains("kube-system"),
        "{}",
        out.stderr
    );

    // Restarting on the same port: available again, same data.
    let port = ext.addr.port();
    ext.serve().await;
    assert_eq!(ext.addr.port(), port);
    host.wait_available(APISERVICE, "True").await;
    let r = host.get(&format!("{FLUNDERS}/f1")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    assert_eq!(r.json()["spec"]["reference"], "one");
    let out = kubectl.ok(&["get", "flunder", "f2", "-n", "default"]).await;
    assert!(out.contains("f2"), "{out}");

    ext.stop().await;
    host.t.host.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_apiservices_are_rejected_or_isolated() {
    let host = Host::start().await;
    let mut ext = Extension::start(&host).await;
    let url = ext.url("");

    // A caBundle that is not PEM.
    let mut bad = apiservice(APISERVICE, GROUP, VERSION, &url, None);
    bad["spec"]["caBundle"] =
        json!(base64::engine::general_purpose::STANDARD.encode("definitely not a certificate"));
    let r = host.post(APISERVICES, &bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text());
    assert_eq!(r.json()["reason"], "Invalid", "{}", r.text());
    // A caBundle that is not even base64.
    bad["spec"]["caBundle"] = json!("%%% not base64 %%%");
    let r = host.post(APISERVICES, &bad).await;
    assert!(
        r.status == StatusCode::UNPROCESSABLE_ENTITY || r.status == StatusCode::BAD_REQUEST,
        "{} {}",
        r.status,
        r.text()
    );

    // insecureSkipTLSVerify together with a caBundle.
    let mut bad = apiservice(APISERVICE, GROUP, VERSION, &url, Some(&ext.ca_pem));
    bad["spec"]["insecureSkipTLSVerify"] = json!(true);
    let r = host.post(APISERVICES, &bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text());
    let status = r.json();
    assert_eq!(status["reason"], "Invalid");
    assert!(
        status["details"]["causes"].as_array().is_some_and(|cs| cs
            .iter()
            .any(|c| c["field"] == "spec.insecureSkipTLSVerify")),
        "{status}"
    );
    // Nothing was created by the rejected requests.
    let r = host.get(&format!("{APISERVICES}/{APISERVICE}")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text());

    // The real registration works alongside a broken one.
    let r = host
        .post(
            APISERVICES,
            &apiservice(APISERVICE, GROUP, VERSION, &url, Some(&ext.ca_pem)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    host.wait_available(APISERVICE, "True").await;
    let r = host.post(FLUNDERS, &flunder("f1", "one")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());

    // A wrong CA (valid PEM, not the one that signed the extension's certificate).
    let other_ca = CertificateAuthority::generate("some-other-ca").unwrap();
    let wrong = "v1.bogus.example.com";
    let r = host
        .post(
            APISERVICES,
            &apiservice(
                wrong,
                "bogus.example.com",
                "v1",
                &url,
                Some(other_ca.cert_pem()),
            ),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let cond = host.wait_available(wrong, "False").await;
    let message = cond["message"].as_str().unwrap_or_default().to_lowercase();
    assert!(
        message.contains("certificate") || message.contains("tls"),
        "{cond}"
    );
    let r = host.get("/apis/bogus.example.com/v1/widgets").await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
    assert_eq!(r.json()["kind"], "Status");
    let apis = host.get("/apis").await.json();
    let names: Vec<&str> = apis["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|g| g["name"].as_str())
        .collect();
    assert!(!names.contains(&"bogus.example.com"), "{names:?}");
    assert!(names.contains(&GROUP), "{names:?}");
    // Nothing else is affected: the good extension, the host's own APIs, kubectl discovery.
    assert_eq!(host.available(APISERVICE).await.unwrap()["status"], "True");
    let r = host.get(&format!("{FLUNDERS}/f1")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = host.get("/api/v1/namespaces").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let kubectl = host.kubectl();
    let out = kubectl
        .run(&["get", "flunders,configmaps", "-n", "default"])
        .await;
    assert!(out.ok, "{}", out.stderr);
    assert!(
        out.stdout.contains("flunder.wardle.example.com/f1"),
        "{}",
        out.stdout
    );
    // The broken backend was never sent a user request.
    assert!(ext.seen_from("admin", "/apis/bogus.example.com").is_empty());

    // Deleting APIServices removes their groups from discovery and stops proxying.
    let r = host.delete(&format!("{APISERVICES}/{wrong}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    let r = host.delete(&format!("{APISERVICES}/{APISERVICE}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    eventually(
        &format!("{GROUP} out of discovery after deleting its APIService"),
        Duration::from_secs(5),
        || async {
            let legacy = host.get("/apis").await.json();
            let v2 = host
                .get_with("/apis", &[("accept", V2_DISCOVERY)])
                .await
                .json();
            let in_legacy = legacy["groups"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["name"] == GROUP);
            let in_v2 = v2["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["metadata"]["name"] == GROUP);
            if in_legacy || in_v2 {
                Err(format!("still in legacy {in_legacy}, v2 {in_v2}"))
            } else {
                Ok(())
            }
        },
    )
    .await;
    let r = host.get(&format!("{FLUNDERS}/f1")).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text());
    let r = host.get("/apis/wardle.example.com").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text());

    ext.stop().await;
    host.t.host.stop().await;
}

// === Several replicas behind one APIService ===

impl Extension {
    /// Another replica of the same extension server: same storage, certificate and trust,
    /// its own port and request log.
    async fn replica(&self) -> Self {
        let mut other = Self {
            server: self.server.clone(),
            ca_pem: self.ca_pem.clone(),
            tls: self.tls.clone(),
            trust: self.trust.clone(),
            seen: Arc::new(Mutex::new(Vec::new())),
            addr: "127.0.0.1:0".parse().unwrap(),
            running: None,
        };
        other.serve().await;
        other
    }

    /// How many requests for flunders it served.
    fn flunder_requests(&self) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path.starts_with(FLUNDERS))
            .count()
    }
}

/// An EndpointSlice of Service `wardle-system/wardle` with one address.
fn endpoint_slice(name: &str, port: u16) -> Value {
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {"name": name, "namespace": "wardle-system",
                     "labels": {"kubernetes.io/service-name": "wardle"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"], "conditions": {"ready": true}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}],
    })
}

/// An APIService whose Service has two replicas (EndpointSlices, no URL annotation): the
/// host spreads requests over both, and when one stops, reads and writes go on through the
/// other without an error reaching the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apiservice_spreads_over_its_replicas_and_survives_losing_one() {
    let host = Host::start().await;
    let mut a = Extension::start(&host).await;
    let b = a.replica().await;
    let r = host
        .post(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle-system"}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    for (name, ext) in [("wardle-a", &a), ("wardle-b", &b)] {
        let r = host
            .post(
                "/apis/discovery.k8s.io/v1/namespaces/wardle-system/endpointslices",
                &endpoint_slice(name, ext.addr.port()),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    }
    let r = host
        .post(
            APISERVICES,
            &json!({
                "apiVersion": "apiregistration.k8s.io/v1",
                "kind": "APIService",
                "metadata": {"name": APISERVICE},
                "spec": {
                    "group": GROUP,
                    "version": VERSION,
                    "groupPriorityMinimum": 1000,
                    "versionPriority": 15,
                    "service": {"namespace": "wardle-system", "name": "wardle", "port": 443},
                    "caBundle": base64::engine::general_purpose::STANDARD.encode(&a.ca_pem),
                },
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    let cond = host.wait_available(APISERVICE, "True").await;
    assert_eq!(cond["reason"], "Passed", "{cond}");

    // Round-robin: a handful of requests reach both replicas.
    let r = host.post(FLUNDERS, &flunder("f1", "a")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text());
    for _ in 0..4 {
        let r = host.get(FLUNDERS).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text());
    }
    assert!(
        a.flunder_requests() > 0 && b.flunder_requests() > 0,
        "a saw {}, b saw {}",
        a.flunder_requests(),
        b.flunder_requests()
    );

    // a goes away (its port refuses connections): every read and write still succeeds, by
    // failing over to b, before any availability check has noticed.
    a.stop().await;
    let before = b.flunder_requests();
    for i in 0..4 {
        let r = host.get(&format!("{FLUNDERS}/f1")).await;
        assert_eq!(r.status, StatusCode::OK, "read {i}: {}", r.text());
        let name = format!("after-{i}");
        let r = host.post(FLUNDERS, &flunder(&name, "b")).await;
        assert_eq!(r.status, StatusCode::CREATED, "write {i}: {}", r.text());
    }
    assert_eq!(
        b.flunder_requests(),
        before + 8,
        "b served every request once"
    );
    let r = host.get(FLUNDERS).await;
    let names: Vec<String> = r.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["after-0", "after-1", "after-2", "after-3", "f1"]);
    let cond = host.available(APISERVICE).await.unwrap();
    assert_eq!(cond["status"], "True", "{cond}");
}
