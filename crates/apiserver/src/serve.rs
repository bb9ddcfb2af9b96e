//! The TLS listener: accepts connections, completes the rustls handshake, reads the verified
//! client certificate's identity once per connection, and serves HTTP/1.1 and HTTP/2 (with
//! upgrades) on it. Shuts down gracefully: stops accepting, lets requests in flight finish
//! for a grace period, then closes whatever connections remain (open watches included).
//!
//! A request answered without its body having been read (refused with 429, 401 or 403, or a
//! body over the limit answered 413) is answered once the rest of its body has been read and
//! thrown away, up to [`DRAIN_BYTES`] and [`DRAIN_TIME`]. Answered at once, HTTP/1.1 closed
//! the connection with unread bytes, which the kernel turns into a reset: a client that
//! writes its whole body before reading (Python's http.client, curl without `Expect`) saw the
//! reset and not the answer. On HTTP/2 the stream was reset (`RST_STREAM`) while the client
//! still sent, which curl reports as a stream error although the answer had arrived. Reading
//! the rest only after answering is not enough there: curl, once it has the answer, cuts its
//! upload short, which h2 takes for a protocol error whose reset counts towards its limit of
//! 1,024 per connection, past which the whole connection goes (GOAWAY `ENHANCE_YOUR_CALM`)
//! with every other stream on it. Go's server reads 256 KiB on and then lingers half a second
//! before it closes; reading costs only bandwidth here, so the bound is larger.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use bytes::Bytes;
use http_body::{Body as _, Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use crate::auth::PeerIdentity;
use flotilla_generic_store::UserInfo;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// The most of an unread request body read (and discarded) before its answer: ten times
/// kube-apiserver's 3 MiB body limit, so that a client's oversized manifest still gets its
/// 413, while an endless body does not hold the connection.
pub const DRAIN_BYTES: u64 = 32 * 1024 * 1024;
/// How long the rest of an unread request body is read before giving up on it.
pub const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Which CAs a client certificate must chain to for what. Without it, every certificate the
/// listener accepted authenticates its CN/O.
#[derive(Debug, Default)]
pub struct PeerTrust {
    /// Certificates verifying here authenticate as their CN (user) and O (groups).
    pub client_ca: Option<flotilla_pki::ChainVerifier>,
    /// Certificates verifying here (with a CN in `front_proxy_names`, or any CN when that is
    /// empty) may assert the caller in `X-Remote-*` headers.
    pub request_header_ca: Option<flotilla_pki::ChainVerifier>,
    pub front_proxy_names: Vec<String>,
}

impl PeerTrust {
    fn identify(&self, conn: &rustls::ServerConnection) -> PeerIdentity {
        let Some(chain) = conn.peer_certificates() else {
            return PeerIdentity::default();
        };
        let identity = flotilla_pki::peer_identity(conn);
        let as_user = |id: &flotilla_pki::ClientIdentity| UserInfo {
            name: id.user.clone(),
            uid: String::new(),
            groups: id.groups.clone(),
            extra: Default::default(),
        };
        let client_ok = self.client_ca.as_ref().is_none_or(|v| v.verifies(chain));
        let front_proxy = self
            .request_header_ca
            .as_ref()
            .is_some_and(|v| v.verifies(chain))
            && identity.as_ref().is_some_and(|id| {
                self.front_proxy_names.is_empty() || self.front_proxy_names.contains(&id.user)
            });
        PeerIdentity {
            user: if client_ok {
                identity.as_ref().map(as_user)
            } else {
                None
            },
            front_proxy,
        }
    }
}

/// Serves `router` over TLS on `listener` until `shutdown` completes.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send,
) {
    serve_tls_with_trust(
        listener,
        tls,
        router,
        shutdown,
        Arc::new(PeerTrust::default()),
    )
    .await
}

/// [`serve_tls`] with explicit rules for what client certificates authenticate.
pub async fn serve_tls_with_trust(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = ()> + Send,
    trust: Arc<PeerTrust>,
) {
    let shutdown = async {
        shutdown.await;
        SHUTDOWN_GRACE
    };
    serve_until(listener, tls, router, shutdown, trust).await
}

/// The accept loop. `shutdown` yields the grace period given to connections once it fires;
/// connections still open after it are closed (their tasks aborted), so a watch cannot keep
/// a stopped server's connection alive.
async fn serve_until(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    shutdown: impl Future<Output = Duration> + Send,
    trust: Arc<PeerTrust>,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut connections = tokio::task::JoinSet::new();
    tokio::pin!(shutdown);
    let grace = loop {
        let (tcp, remote) = tokio::select! {
            grace = &mut shutdown => break grace,
            // Reap finished connections so the set only holds open ones.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let watcher = graceful.watcher();
        let trust = trust.clone();
        connections.spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%remote, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%remote, "TLS handshake timed out");
                    return;
                }
            };
            let identity = trust.identify(tls.get_ref().1);
            serve_connection(TokioIo::new(tls), router, identity, remote, watcher).await;
        });
    };
    // Refuse new connections from now on rather than leaving them in the backlog.
    drop(listener);
    if !grace.is_zero() {
        tokio::select! {
            _ = graceful.shutdown() => {}
            _ = tokio::time::sleep(grace) => tracing::info!("shutdown grace period over; closing connections"),
        }
    }
    connections.shutdown().await;
}

async fn serve_connection<I>(
    io: I,
    router: Router,
    identity: PeerIdentity,
    remote: SocketAddr,
    watcher: hyper_util::server::graceful::Watcher,
) where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req: http::Request<Incoming>| {
        let expects_continue = req
            .headers()
            .get(http::header::EXPECT)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
        let unread = Arc::new(parking_lot::Mutex::new(None));
        let mut req = req.map(|body| {
            axum::body::Body::new(RequestBody {
                inner: Some(body),
                polled: false,
                expects_continue,
                unread: unread.clone(),
            })
        });
        req.extensions_mut().insert(identity.clone());
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(remote));
        let router = router.clone();
        async move {
            let resp = router.oneshot(req).await;
            // The answer waits for the body the handler left unread.
            let left = unread.lock().take();
            if let Some(body) = left {
                drain(body).await;
            }
            resp
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection_with_upgrades(io, service);
    if let Err(e) = watcher.watch(conn.into_owned()).await {
        tracing::debug!(%remote, error = %e, "connection ended with an error");
    }
}

/// A request body that, dropped before its end, leaves the rest to be read before the
/// answer goes out (see the module's documentation), unless that cannot help: the client
/// waits for `100 Continue` before sending it, or it declares more than [`DRAIN_BYTES`].
struct RequestBody {
    inner: Option<Incoming>,
    polled: bool,
    expects_continue: bool,
    /// Where a body dropped before its end is left for the connection to read.
    unread: Arc<parking_lot::Mutex<Option<Incoming>>>,
}

impl http_body::Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = self.get_mut();
        this.polled = true;
        match this.inner.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Drop for RequestBody {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        // Asking for the body now would send `100 Continue` after the final answer.
        let waits_for_continue = self.expects_continue && !self.polled;
        if body.is_end_stream() || waits_for_continue || body.size_hint().lower() > DRAIN_BYTES {
            return;
        }
        *self.unread.lock() = Some(body);
    }
}

/// Reads `body` to its end, up to [`DRAIN_BYTES`] and [`DRAIN_TIME`], discarding it.
async fn drain(mut body: Incoming) {
    let read = async {
        let mut read = 0u64;
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                read += data.len() as u64;
                if read > DRAIN_BYTES {
                    tracing::debug!(
                        read,
                        "request body longer than the drain bound; left unread"
                    );
                    return;
                }
            }
        }
    };
    if tokio::time::timeout(DRAIN_TIME, read).await.is_err() {
        tracing::debug!("request body not finished within the drain time; left unread");
    }
}

/// A TLS server running in the background: where it listens and how to stop it. The host,
/// the aggregated API server and simulated members all hand one of these to their callers.
pub struct ServerHandle {
    pub addr: SocketAddr,
    /// Fired with the grace period open connections get.
    shutdown: Option<tokio::sync::oneshot::Sender<Duration>>,
    task: tokio::task::JoinHandle<()>,
}

impl ServerHandle {
    /// Serves `router` on the already bound `listener` in the background.
    pub fn spawn(
        listener: TcpListener,
        tls: Arc<rustls::ServerConfig>,
        router: Router,
        trust: Arc<PeerTrust>,
    ) -> std::io::Result<Self> {
        let addr = listener.local_addr()?;
        let (tx, rx) = tokio::sync::oneshot::channel::<Duration>();
        let task = tokio::spawn(serve_until(
            listener,
            tls,
            router,
            async { rx.await.unwrap_or(SHUTDOWN_GRACE) },
            trust,
        ));
        Ok(Self {
            addr,
            shutdown: Some(tx),
            task,
        })
    }

    /// `https://127.0.0.1:<port>` (the loopback address when bound to all interfaces).
    pub fn url(&self) -> String {
        https_url(self.addr)
    }

    /// Stops accepting, finishes requests in flight (for a grace period), and waits.
    pub async fn stop(self) {
        self.stop_within(SHUTDOWN_GRACE).await
    }

    /// Stops accepting and closes every connection at once: requests in flight fail and
    /// watches end, as when the server dies (simulated members going unreachable).
    pub async fn abort(self) {
        self.stop_within(Duration::ZERO).await
    }

    async fn stop_within(mut self, grace: Duration) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(grace);
        }
        let _ = (&mut self.task).await;
    }

    /// Waits until the server ends (after `stop`, or when its task fails).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// The URL clients use for a listening address.
pub fn https_url(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        ip if ip.is_unspecified() => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        ip => ip,
    };
    match ip {
        std::net::IpAddr::V6(v6) => format!("https://[{v6}]:{}", addr.port()),
        std::net::IpAddr::V4(v4) => format!("https://{v4}:{}", addr.port()),
    }
}
