//! Running the aggregated API server: its own storage and serving certificate, trust in the
//! host's client CA and front-proxy CA, authorization delegated to the host, and the
//! APIService registration that puts it behind the host.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use base64::Engine;
use flotilla_apiserver::serve::{PeerTrust, ServerHandle};
use flotilla_apiserver::{ApiServer, Registry, ServerConfig, ServerOptions};
use flotilla_etcd::StorageChoice;
use flotilla_names::karmada;
use flotilla_pki::ChainVerifier;
use flotilla_storage::Storage;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

use crate::admission::ClusterCredentialsAdmission;
use crate::cluster::{GROUP, VERSION, cluster_resource};
use crate::delegated::DelegatedAuthorizer;
use crate::members::MemberConnections;
use crate::proxy::ClusterProxy;
use crate::search::{self, MergedReadOptions, MergedStore, SearchProxy, TemplateStore, Templates};
use flotilla_names::merged_reads;

#[derive(Debug, thiserror::Error)]
pub enum AggregatedError {
    #[error(transparent)]
    Boot(#[from] flotilla_apiserver::BootError),
    #[error("registering the APIService on the host")]
    Register(#[source] kube::Error),
    #[error("reading kube-system/extension-apiserver-authentication from the host")]
    AuthenticationConfig(#[source] kube::Error),
    #[error("kube-system/extension-apiserver-authentication has no {0}")]
    MissingAuthenticationKey(&'static str),
    #[error("reading the host's CA {path}")]
    ReadHostCa {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the host does not serve Clusters through the APIService within {0:?}")]
    NotServed(std::time::Duration),
}

flotilla_apiserver::boot_error_conversions!(AggregatedError);

/// How to run the aggregated API server.
pub struct AggregatedOptions {
    /// Its own storage and certificates.
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// 0 picks a free port.
    pub secure_port: u16,
    /// A client of the host API server (reads cluster Secrets, asks SubjectAccessReviews).
    pub host: kube::Client,
    /// CAs whose client certificates authenticate directly (the host's client CA).
    pub client_ca_pems: Vec<String>,
    /// The CA of the front proxy (the host's aggregator) allowed to send `X-Remote-*`.
    pub request_header_ca_pem: String,
    /// CNs allowed as front proxy (empty: any certificate of that CA).
    pub front_proxy_names: Vec<String>,
    /// A serving certificate and key (PEM) to use instead of generating one. When the
    /// certificate file holds its chain up to a self-signed CA, that CA is the APIService's
    /// caBundle ([`flotilla_pki::chain_root_pem`]).
    pub serving: Option<(String, String)>,
    pub watch_history: usize,
    /// Merged reads (`search.karmada.io` `proxying/karmada/proxy`); `None` serves none.
    pub merged_reads: Option<MergedReadOptions>,
    /// The host's template store when the host runs in this process (merged reads read it
    /// directly); `None` reads templates through `host`.
    pub templates: Option<Arc<dyn TemplateStore>>,
    /// Request limits (body size, timeout, in-flight).
    pub server: ServerConfig,
    /// Where the Cluster objects are kept (embedded in `data_dir`, or etcd).
    pub storage: StorageChoice,
}

/// The host's published trust (`kube-system/extension-apiserver-authentication`): client CA,
/// request-header CA and allowed front-proxy names.
pub async fn authentication_config(
    host: &kube::Client,
) -> Result<(String, String, Vec<String>), AggregatedError> {
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(host.clone(), "kube-system");
    let cm = cms
        .get("extension-apiserver-authentication")
        .await
        .map_err(AggregatedError::AuthenticationConfig)?;
    let data = cm.data.unwrap_or_default();
    let client_ca = data
        .get("client-ca-file")
        .cloned()
        .ok_or(AggregatedError::MissingAuthenticationKey("client-ca-file"))?;
    let request_header_ca = data.get("requestheader-client-ca-file").cloned().ok_or(
        AggregatedError::MissingAuthenticationKey("requestheader-client-ca-file"),
    )?;
    let names: Vec<String> = data
        .get("requestheader-allowed-names")
        .and_then(|n| serde_json::from_str(n).ok())
        .unwrap_or_default();
    Ok((client_ca, request_header_ca, names))
}

impl AggregatedOptions {
    pub fn new(
        data_dir: impl Into<PathBuf>,
        host: kube::Client,
        client_ca_pem: String,
        request_header_ca_pem: String,
    ) -> Self {
        Self {
            data_dir: data_dir.into(),
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            secure_port: 0,
            host,
            client_ca_pems: vec![client_ca_pem],
            request_header_ca_pem,
            front_proxy_names: vec![flotilla_pki::FRONT_PROXY_CLIENT_USER.to_string()],
            serving: None,
            watch_history: 100_000,
            merged_reads: Some(MergedReadOptions::default()),
            templates: None,
            server: ServerConfig::default(),
            storage: StorageChoice::Embedded,
        }
    }
}

/// A running aggregated API server.
pub struct RunningAggregated {
    pub addr: SocketAddr,
    /// The CA of its serving certificate (the APIService's caBundle); empty when a given
    /// certificate file does not end with its self-signed root.
    pub ca_pem: String,
    pub server: Arc<ApiServer>,
    /// Whether merged reads are served (then `v1alpha1.search.karmada.io` is registered).
    pub merged_reads: bool,
    /// The merged reads' storage, for a host in this process to install on its resources.
    pub merged_store: Option<Arc<MergedStore>>,
    handle: ServerHandle,
}

impl RunningAggregated {
    pub fn url(&self) -> String {
        self.handle.url()
    }

    /// Stops serving, then stops and joins the API server's background tasks.
    pub async fn stop(self) {
        self.handle.stop().await;
        self.server
            .tasks
            .shutdown(flotilla_apiserver::tasks::SHUTDOWN_GRACE)
            .await;
    }

    /// Waits until the server ends, then stops the background tasks.
    pub async fn wait(self) {
        self.handle.wait().await;
        self.server
            .tasks
            .shutdown(flotilla_apiserver::tasks::SHUTDOWN_GRACE)
            .await;
    }
}

/// The serving certificate, its key, and the CA clients verify it with.
struct Serving {
    cert_pem: String,
    key_pem: String,
    ca_pem: String,
}

pub async fn start(opts: AggregatedOptions) -> Result<RunningAggregated, AggregatedError> {
    flotilla_apiserver::boot::create_data_dir(&opts.data_dir)?;
    let serving = match &opts.serving {
        Some((cert_pem, key_pem)) => Serving {
            cert_pem: cert_pem.clone(),
            key_pem: key_pem.clone(),
            // Unknown when the file holds no root: whoever registers the APIServices
            // (deploy/ manifests with --no-register) gives the caBundle.
            ca_pem: flotilla_pki::chain_root_pem(cert_pem).unwrap_or_default(),
        },
        None => {
            let pki = flotilla_pki::ensure_server_pki(&opts.data_dir, &[])?;
            Serving {
                cert_pem: pki.apiserver.cert_pem,
                key_pem: pki.apiserver.key_pem,
                ca_pem: pki.ca.cert_pem,
            }
        }
    };
    let storage: Arc<dyn Storage> = opts
        .storage
        .open(&opts.data_dir, opts.watch_history)
        .await?;
    let registry = Registry::new();
    registry.register(cluster_resource());
    if opts.merged_reads.is_some() {
        registry.register(search::proxying_resource());
    }
    let authorizer: Arc<dyn flotilla_apiserver::authz::Authorizer> =
        Arc::new(DelegatedAuthorizer::new(opts.host.clone()));
    let options = ServerOptions {
        authorizer: Some(authorizer.clone()),
        admission_plugins: vec![Arc::new(ClusterCredentialsAdmission::new(authorizer))],
        ..ServerOptions::default()
    };
    let server = ApiServer::with_options(Arc::new(registry), storage, opts.server.clone(), options);
    let members = Arc::new(MemberConnections::new(opts.host.clone()));
    server.add_subresource_handler(
        GROUP,
        "clusters",
        "proxy",
        Arc::new(ClusterProxy::new(members.clone())),
    );
    let merged_store = opts.merged_reads.as_ref().map(|merged| {
        let templates = match &opts.templates {
            Some(store) => Templates::InProcess(store.clone()),
            None => Templates::Remote(opts.host.clone()),
        };
        let store = Arc::new(MergedStore::new(
            &server,
            members,
            opts.host.clone(),
            templates,
            merged,
        ));
        server.add_subresource_handler(
            merged_reads::SEARCH_GROUP,
            search::PROXYING,
            "proxy",
            Arc::new(SearchProxy::new(&server, store.clone())),
        );
        store
    });
    server.start_background().await?;

    let mut client_cas = opts.client_ca_pems.clone();
    client_cas.push(opts.request_header_ca_pem.clone());
    let tls = flotilla_pki::server_config(&serving.cert_pem, &serving.key_pem, &client_cas)?;
    let trust = Arc::new(PeerTrust {
        client_ca: Some(ChainVerifier::new(&opts.client_ca_pems)?),
        request_header_ca: Some(ChainVerifier::new(std::slice::from_ref(
            &opts.request_header_ca_pem,
        ))?),
        front_proxy_names: opts.front_proxy_names.clone(),
    });
    let addr = SocketAddr::new(opts.bind_address, opts.secure_port);
    let (listener, addr) = flotilla_apiserver::boot::listen(addr).await?;
    let handle = flotilla_apiserver::boot::serve(listener, addr, tls, server.router(), trust)?;
    tracing::info!(%addr, "aggregated API server serving cluster.karmada.io");
    Ok(RunningAggregated {
        addr,
        ca_pem: serving.ca_pem,
        server,
        merged_reads: opts.merged_reads.is_some(),
        merged_store,
        handle,
    })
}

/// Creates or updates the host's APIService `v1alpha1.cluster.karmada.io` pointing at `url`.
pub async fn register_apiservice(
    host: &kube::Client,
    url: &str,
    ca_pem: &str,
) -> Result<(), AggregatedError> {
    apply_apiservice(host, GROUP, VERSION, 2000, url, ca_pem).await
}

/// Creates or updates the host's APIService `v1alpha1.search.karmada.io` (merged reads)
/// pointing at `url`.
pub async fn register_search_apiservice(
    host: &kube::Client,
    url: &str,
    ca_pem: &str,
) -> Result<(), AggregatedError> {
    apply_apiservice(
        host,
        merged_reads::SEARCH_GROUP,
        merged_reads::SEARCH_VERSION,
        1000,
        url,
        ca_pem,
    )
    .await
}

async fn apply_apiservice(
    host: &kube::Client,
    group: &str,
    version: &str,
    group_priority: i64,
    url: &str,
    ca_pem: &str,
) -> Result<(), AggregatedError> {
    let api: Api<APIService> = Api::all(host.clone());
    let name = format!("{version}.{group}");
    let body = json!({
        "apiVersion": "apiregistration.k8s.io/v1",
        "kind": "APIService",
        "metadata": {"name": name, "annotations": {flotilla_apiserver::aggregator::URL_ANNOTATION: url}},
        "spec": {
            "group": group,
            "version": version,
            "groupPriorityMinimum": group_priority,
            "versionPriority": 10,
            "service": {
                "namespace": karmada::NAMESPACE_KARMADA_SYSTEM,
                "name": karmada::AGGREGATED_APISERVER_SERVICE,
                "port": 443,
            },
            "caBundle": base64::engine::general_purpose::STANDARD.encode(ca_pem),
        },
    });
    api.patch(
        &name,
        &PatchParams::apply("flotilla-aggregated-apiserver").force(),
        &Patch::Apply(body),
    )
    .await
    .map_err(AggregatedError::Register)?;
    Ok(())
}

/// The all-in-one wiring (local-up, in-process tests): starts the aggregated server with its
/// storage in `data_dir`, trusting the client and front-proxy CAs of the Flotilla host whose
/// certificates are in `host_pki_dir`, registers its APIService on the host, and waits until
/// the host serves Clusters through it.
pub async fn start_registered(
    host: &kube::Client,
    host_pki_dir: &std::path::Path,
    data_dir: impl Into<PathBuf>,
    merged_reads: Option<MergedReadOptions>,
    templates: Option<Arc<dyn TemplateStore>>,
    storage: StorageChoice,
) -> Result<RunningAggregated, AggregatedError> {
    let read = |file: &str| {
        let path = host_pki_dir.join(file);
        std::fs::read_to_string(&path)
            .map_err(|source| AggregatedError::ReadHostCa { path, source })
    };
    let mut opts = AggregatedOptions::new(
        data_dir,
        host.clone(),
        read("ca.crt")?,
        read("front-proxy-ca.crt")?,
    );
    opts.merged_reads = merged_reads;
    opts.templates = templates;
    opts.storage = storage;
    let running = start(opts).await?;
    register_apiservice(host, &running.url(), &running.ca_pem).await?;
    if running.merged_reads {
        register_search_apiservice(host, &running.url(), &running.ca_pem).await?;
    }
    let clusters: Api<flotilla_karmada_api::Cluster> = Api::all(host.clone());
    let timeout = std::time::Duration::from_secs(30);
    let deadline = tokio::time::Instant::now() + timeout;
    while clusters.list(&Default::default()).await.is_err() {
        if tokio::time::Instant::now() > deadline {
            running.stop().await;
            return Err(AggregatedError::NotServed(timeout));
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    Ok(running)
}
