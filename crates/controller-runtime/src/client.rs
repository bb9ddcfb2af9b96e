//! kube-rs clients whose idle connections close.
//!
//! kube-rs builds its client over hyper-util's pool without a timer, and without one the
//! pool's idle timeout never fires: a connection opened for a burst of requests stays open
//! for the life of the process (a controller-manager starting on 5,000 Clusters once kept
//! 4,600). The clients built here are kube-rs's own layers (base URI, authentication, extra
//! headers, the retry of server errors) over a pool that has a timer, so a connection idle
//! for [`IDLE_CONNECTION_TIMEOUT`] is closed, as Go's transport (and so client-go) does.
//!
//! A proxy URL or a TLS server name other than the endpoint's host is left to kube-rs's own
//! stack, which speaks them (and keeps idle connections).

use std::time::Duration;

use http::{Request, Response};
use http_body_util::BodyExt;
use kube::client::retry::RetryPolicy;
use kube::client::{Body, ClientBuilder, ConfigExt, DynBody};
use tower::retry::RetryLayer;
use tower::util::BoxService;
use tower::{BoxError, ServiceBuilder};

/// How long a pooled connection may stay idle before it is closed (Go's default).
pub const IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(90);

/// How a client's connections are pooled.
#[derive(Debug, Clone, Copy)]
pub struct Pooling {
    /// An idle connection older than this is closed.
    pub idle_timeout: Duration,
    /// The exact size of each connection's read buffer; `None` lets hyper grow it with the
    /// largest response (and keep that size).
    pub read_buffer: Option<usize>,
}

impl Default for Pooling {
    fn default() -> Self {
        Self {
            idle_timeout: IDLE_CONNECTION_TIMEOUT,
            read_buffer: None,
        }
    }
}

/// The service under a client built here, the same type as kube-rs's own (so layers such
/// as a write throttle go on either).
pub type ClientService = BoxService<Request<Body>, Response<Box<DynBody>>, BoxError>;

/// A client from `config` whose idle connections close after [`IDLE_CONNECTION_TIMEOUT`].
pub fn kube_client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    Ok(client_builder(config)?.build())
}

/// [`kube_client`], for a caller that adds its own layers.
pub fn client_builder(config: kube::Config) -> Result<ClientBuilder<ClientService>, kube::Error> {
    if config.proxy_url.is_some() || config.tls_server_name.is_some() {
        return ClientBuilder::try_from(config);
    }
    let tls = config.rustls_client_config()?;
    client_builder_with(&config, tls, Pooling::default())
}

/// A client from `config` over TLS configured by `tls` (used as is: a caller may keep TLS
/// sessions in it for resumption), pooled as `pooling` says. `config`'s proxy URL and TLS
/// server name are not used.
pub fn kube_client_with(
    config: &kube::Config,
    tls: rustls::ClientConfig,
    pooling: Pooling,
) -> Result<kube::Client, kube::Error> {
    Ok(client_builder_with(config, tls, pooling)?.build())
}

/// [`kube_client_with`], for a caller that adds its own layers.
pub fn client_builder_with(
    config: &kube::Config,
    tls: rustls::ClientConfig,
    pooling: Pooling,
) -> Result<ClientBuilder<ClientService>, kube::Error> {
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(config.connect_timeout);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    // kube-rs's read and write timeouts: a server that stops answering mid-response fails.
    let mut https = hyper_timeout::TimeoutConnector::new(https);
    https.set_read_timeout(config.read_timeout);
    https.set_write_timeout(config.write_timeout);
    let mut pool = hyper_util::client::legacy::Builder::new(hyper_util::rt::TokioExecutor::new());
    pool.pool_timer(hyper_util::rt::TokioTimer::new())
        .pool_idle_timeout(pooling.idle_timeout);
    if let Some(size) = pooling.read_buffer {
        pool.http1_read_buf_exact_size(size);
    }
    let pool = pool.build::<_, kube::client::Body>(https);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .map_response(|response: Response<hyper::body::Incoming>| {
            response.map(|body| Box::new(body.map_err(BoxError::from)) as Box<DynBody>)
        })
        .service(pool);
    Ok(ClientBuilder::new(
        BoxService::new(service),
        config.default_namespace.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use tokio::sync::{Semaphore, mpsc};

    /// What the test server saw of its connections.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Opened,
        Closed,
    }

    /// A plain-HTTP server answering `/version` once `gate` lets it, telling each connection
    /// opened and closed.
    async fn server(gate: Arc<Semaphore>) -> (String, mpsc::UnboundedReceiver<Seen>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (seen, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = seen.send(Seen::Opened);
                let (seen, gate) = (seen.clone(), gate.clone());
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |_req| {
                        let gate = gate.clone();
                        async move {
                            let _permit = gate.acquire().await;
                            let body = serde_json::json!({"major": "1", "minor": "33",
                                "gitVersion": "v1.33.0", "gitCommit": "", "gitTreeState": "",
                                "buildDate": "", "goVersion": "", "compiler": "",
                                "platform": ""});
                            Ok::<_, std::convert::Infallible>(http::Response::new(
                                http_body_util::Full::new(bytes::Bytes::from(body.to_string())),
                            ))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), service)
                        .await;
                    let _ = seen.send(Seen::Closed);
                });
            }
        });
        (url, events)
    }

    async fn next(events: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
        tokio::time::timeout(Duration::from_secs(10), events.recv())
            .await
            .expect("nothing seen within 10 s")
            .expect("the server stopped")
    }

    #[tokio::test]
    async fn connections_opened_for_a_burst_close_once_idle() {
        let gate = Arc::new(Semaphore::new(0));
        let (url, mut events) = server(gate.clone()).await;
        let config = kube::Config::new(url.parse().unwrap());
        let tls = config.rustls_client_config().unwrap();
        let pooling = Pooling {
            idle_timeout: Duration::from_millis(200),
            read_buffer: None,
        };
        let client = kube_client_with(&config, tls, pooling).unwrap();
        // Three requests at once, held until all three are in: three connections.
        let burst: Vec<_> = (0..3)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move { client.apiserver_version().await })
            })
            .collect();
        for _ in 0..3 {
            assert_eq!(next(&mut events).await, Seen::Opened);
        }
        gate.add_permits(3);
        for request in burst {
            assert_eq!(request.await.unwrap().unwrap().git_version, "v1.33.0");
        }
        // Idle in the pool now, and closed by its timer (the client is still alive).
        for _ in 0..3 {
            assert_eq!(next(&mut events).await, Seen::Closed);
        }
        gate.add_permits(1);
        assert_eq!(client.apiserver_version().await.unwrap().minor, "33");
        assert_eq!(next(&mut events).await, Seen::Opened);
    }
}
