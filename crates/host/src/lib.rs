//! Flotilla's host API server: the generic [`flotilla_apiserver`] wired with the built-in
//! kinds, the embedded storage in a data directory, certificates and the service-account
//! signing key generated on first start (so issued service-account tokens stay valid across
//! restarts). [`start`] runs it in-process (tests, local-up); `flotilla apiserver` runs it
//! alone.
//!
//! - [`admission`]: the host's compiled-in admission (Karmada's deletion protection and
//!   OverridePolicy validation), for every kind it serves;
//! - [`csr_signer`]: the `kubernetes.io/kube-apiserver-client` signer, which answers approved
//!   CertificateSigningRequests with certificates from the host's cluster CA;
//! - [`token_controller`]: fills `kubernetes.io/service-account-token` Secrets with legacy
//!   tokens, as kube-controller-manager's tokens controller does.

pub mod admission;
pub mod csr_signer;
pub mod merged_reads;
pub mod token_controller;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use flotilla_apiserver::audit::AuditLog;
use flotilla_apiserver::auth::StaticTokens;
use flotilla_apiserver::serve::{PeerTrust, ServerHandle, https_url};
use flotilla_apiserver::serviceaccount::{IssuerOptions, TokenIssuer, TokenKeyError};
use flotilla_apiserver::tasks::SHUTDOWN_GRACE;
use flotilla_apiserver::{ApiServer, Registry, ServerConfig, ServerOptions};
use flotilla_etcd::StorageChoice;
use flotilla_pki::ChainVerifier;
use flotilla_storage::Storage;
use serde_json::json;

/// Namespaces every cluster has.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error(transparent)]
    Boot(#[from] flotilla_apiserver::BootError),
    #[error("loading the token file")]
    Tokens(#[from] flotilla_apiserver::auth::TokenFileError),
    #[error("preparing the service-account token issuer")]
    ServiceAccountIssuer(#[from] TokenKeyError),
    #[error("opening the audit log {path}")]
    Audit {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("creating the bootstrap object {name}: {message}")]
    Bootstrap { name: String, message: String },
    #[error("creating the system namespace {name}: {message}")]
    SystemNamespace { name: String, message: String },
}

flotilla_apiserver::boot_error_conversions!(HostError);

/// How to run the host API server.
#[derive(Debug, Clone)]
pub struct HostOptions {
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// 0 picks a free port.
    pub secure_port: u16,
    /// Extra names/IPs for the serving certificate.
    pub hosts: Vec<String>,
    /// Events kept for watch resumption.
    pub watch_history: usize,
    /// Static bearer tokens (`token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// Where to append the JSON-lines audit log.
    pub audit_log: Option<PathBuf>,
    /// RBAC (default) or, when false, every authenticated request is allowed.
    pub rbac: bool,
    /// `iss` of service-account tokens (kube's `--service-account-issuer`).
    pub service_account_issuer: String,
    /// Audiences of this API server (kube's `--api-audiences`); empty means the issuer.
    pub api_audiences: Vec<String>,
    /// Longest service-account token issued; longer requests are shortened (kube's
    /// `--service-account-max-token-expiration`). `None`: no limit.
    pub service_account_max_token_expiration: Option<Duration>,
    pub server: ServerConfig,
    /// The CSR signer of `kubernetes.io/kube-apiserver-client`.
    pub signer: csr_signer::SignerOptions,
    /// Where objects are kept: embedded in `data_dir` (the default) or a shared etcd, for
    /// several replicas.
    pub storage: StorageChoice,
}

impl HostOptions {
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            secure_port: 6443,
            hosts: Vec::new(),
            watch_history: 100_000,
            token_auth_file: None,
            audit_log: None,
            rbac: true,
            service_account_issuer: flotilla_apiserver::serviceaccount::DEFAULT_ISSUER.into(),
            api_audiences: Vec::new(),
            service_account_max_token_expiration: None,
            server: ServerConfig::default(),
            signer: csr_signer::SignerOptions::default(),
            storage: StorageChoice::Embedded,
        }
    }
}

/// A running host API server.
pub struct RunningHost {
    pub addr: SocketAddr,
    /// The administrator's kubeconfig (`<data-dir>/kubeconfig`).
    pub kubeconfig: PathBuf,
    /// The components' kubeconfig ([`COMPONENTS_KUBECONFIG`]).
    pub components_kubeconfig: PathBuf,
    pub server: Arc<ApiServer>,
    handle: ServerHandle,
}

impl RunningHost {
    /// `https://127.0.0.1:<port>` (or the bind address when it is not unspecified).
    pub fn url(&self) -> String {
        self.handle.url()
    }

    /// Stops accepting, finishes requests in flight, waits for the server to end, then
    /// stops and joins every background task (the API server's loops, the CSR signer, the
    /// token controller).
    pub async fn stop(self) {
        self.handle.stop().await;
        self.server.tasks.shutdown(SHUTDOWN_GRACE).await;
    }

    /// Waits until the server ends (it ends after `stop` or when its task fails), then stops
    /// the background tasks.
    pub async fn wait(self) {
        self.handle.wait().await;
        self.server.tasks.shutdown(SHUTDOWN_GRACE).await;
    }
}

/// The registry of every resource the host serves.
pub fn host_registry() -> Arc<Registry> {
    let registry = Registry::new();
    for def in flotilla_kinds::builtin_resources()
        .into_iter()
        .chain(flotilla_kinds::extension_resources())
        .chain(flotilla_kinds::certificate_resources())
        .chain(flotilla_apiserver::reviews::review_resources())
    {
        registry.register(def);
    }
    Arc::new(registry)
}

/// Starts `count` replicas of the host on one shared store (`opts.storage` must be etcd when
/// `count > 1`): the first in `opts.data_dir`, replica `i` in `<data_dir>-<i>` with the
/// first's CAs and signing key (so any replica accepts the others' credentials and tokens),
/// each on its own port. For tests and benchmarks of several replicas in one process.
pub async fn start_replicas(
    opts: HostOptions,
    count: usize,
) -> Result<Vec<RunningHost>, HostError> {
    let mut replicas = Vec::with_capacity(count);
    let first_dir = opts.data_dir.clone();
    for i in 0..count {
        let mut replica = opts.clone();
        if i > 0 {
            let mut dir = first_dir.clone().into_os_string();
            dir.push(format!("-{i}"));
            replica.data_dir = dir.into();
            flotilla_pki::share_pki(&first_dir, &replica.data_dir)?;
        }
        replicas.push(start(replica).await?);
    }
    Ok(replicas)
}

/// Opens storage, prepares certificates, binds, writes `<data-dir>/kubeconfig`, and serves.
pub async fn start(opts: HostOptions) -> Result<RunningHost, HostError> {
    flotilla_apiserver::boot::create_data_dir(&opts.data_dir)?;
    let pki = flotilla_pki::ensure_server_pki(&opts.data_dir, &opts.hosts)?;
    let storage: Arc<dyn Storage> = opts
        .storage
        .open(&opts.data_dir, opts.watch_history)
        .await?;
    let registry = host_registry();
    let mut options = ServerOptions::default();
    if let Some(path) = &opts.token_auth_file {
        options.tokens = Some(Arc::new(StaticTokens::load(path)?));
    }
    if let Some(path) = &opts.audit_log {
        let log = AuditLog::open(path).map_err(|source| HostError::Audit {
            path: path.clone(),
            source,
        })?;
        options.audit = Some(Arc::new(log));
    }
    if opts.rbac {
        options.rbac = Some(Arc::new(flotilla_rbac::RbacAuthorizer::new()));
    }
    let issuer = Arc::new(TokenIssuer::new(
        &pki.service_account.key,
        IssuerOptions {
            issuer: opts.service_account_issuer.clone(),
            api_audiences: opts.api_audiences.clone(),
            max_expiration: opts.service_account_max_token_expiration,
            jwks_uri: None,
        },
    )?);
    options.service_account_issuer = Some(issuer.clone());
    options.admission_plugins = admission::plugins();
    options.proxy_client = Some((
        pki.front_proxy_client.cert_pem.clone(),
        pki.front_proxy_client.key_pem.clone(),
    ));
    let server = ApiServer::with_options(registry, storage, opts.server.clone(), options);
    ensure_system_namespaces(&server).await?;
    ensure_bootstrap_policy(&server).await?;
    ensure_local_apiservices(&server).await?;
    install_crds(&server).await?;
    publish_authentication_config(&server, &pki).await?;
    server.start_background().await?;
    let ca = flotilla_pki::CertificateAuthority::from_pem(&pki.ca.cert_pem, &pki.ca.key_pem)?;
    csr_signer::start(server.clone(), ca, opts.signer.clone());
    token_controller::start(server.clone(), issuer, pki.ca.cert_pem.clone());

    let client_cas = [pki.ca.cert_pem.clone(), pki.front_proxy_ca.cert_pem.clone()];
    let tls =
        flotilla_pki::server_config(&pki.apiserver.cert_pem, &pki.apiserver.key_pem, &client_cas)?;
    let trust = Arc::new(PeerTrust {
        client_ca: Some(ChainVerifier::new(std::slice::from_ref(&pki.ca.cert_pem))?),
        request_header_ca: Some(ChainVerifier::new(std::slice::from_ref(
            &pki.front_proxy_ca.cert_pem,
        ))?),
        front_proxy_names: vec![flotilla_pki::FRONT_PROXY_CLIENT_USER.to_string()],
    });
    let addr = SocketAddr::new(opts.bind_address, opts.secure_port);
    let (listener, addr) = flotilla_apiserver::boot::listen(addr).await?;
    let kubeconfig = opts.data_dir.join("kubeconfig");
    let url = https_url(addr);
    write_kubeconfig(&kubeconfig, &url, &pki.ca.cert_pem, "admin", &pki.admin)?;
    let components_kubeconfig = opts.data_dir.join(COMPONENTS_KUBECONFIG);
    write_kubeconfig(
        &components_kubeconfig,
        &url,
        &pki.ca.cert_pem,
        "components",
        &pki.components,
    )?;
    for (identity, cert) in &pki.component_identities {
        let path = component_kubeconfig(&opts.data_dir, identity);
        write_kubeconfig(&path, &url, &pki.ca.cert_pem, identity.name, cert)?;
    }

    // The web UI's static routes sit beside the API (they carry no data; the browser reads
    // through the API with the user's own credential).
    let router = flotilla_ui::router().merge(server.router());
    let handle = flotilla_apiserver::boot::serve(listener, addr, tls, router, trust)?;
    tracing::info!(%addr, kubeconfig = %kubeconfig.display(), "host API server serving");
    Ok(RunningHost {
        addr,
        kubeconfig,
        components_kubeconfig,
        server,
        handle,
    })
}

/// `<data-dir>/components.kubeconfig`: the identity of Flotilla's own components
/// ([`flotilla_pki::COMPONENTS_GROUP`]), which reads the template store past merged reads.
pub const COMPONENTS_KUBECONFIG: &str = "components.kubeconfig";

/// `<data-dir>/<component>.kubeconfig` (`scheduler`, `controller-manager`,
/// `aggregated-apiserver`): one component's own identity, holding only its ClusterRole's
/// permissions (see [`flotilla_pki::COMPONENT_IDENTITIES`]).
pub fn component_kubeconfig(
    data_dir: &Path,
    identity: &flotilla_pki::ComponentIdentity,
) -> std::path::PathBuf {
    data_dir.join(format!("{}.kubeconfig", identity.name))
}

fn write_kubeconfig(
    path: &Path,
    url: &str,
    ca_pem: &str,
    user: &str,
    cert: &flotilla_pki::CertFiles,
) -> Result<(), HostError> {
    let kc = flotilla_pki::Kubeconfig::new_client_cert(
        url,
        "flotilla",
        user,
        ca_pem,
        &cert.cert_pem,
        &cert.key_pem,
    );
    kc.write(path)?;
    Ok(())
}

/// Creates the default RBAC policy (cluster-admin, admin, edit, view, discovery, ...) where
/// missing; objects an operator changed are left as they are.
pub async fn ensure_bootstrap_policy(server: &Arc<ApiServer>) -> Result<(), HostError> {
    let opts = flotilla_generic_store::objects::WriteOptions {
        field_manager: "flotilla-apiserver".into(),
        field_validation: flotilla_generic_store::request::FieldValidation::Strict,
        dry_run: false,
    };
    for obj in flotilla_rbac::bootstrap_policy() {
        let kind = obj
            .get("kind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default();
        let plural = match kind {
            "ClusterRole" => "clusterroles",
            "ClusterRoleBinding" => "clusterrolebindings",
            _ => continue,
        };
        let Some(def) = server
            .registry
            .get("rbac.authorization.k8s.io", "v1", plural)
        else {
            continue;
        };
        let name = obj
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string();
        match flotilla_generic_store::objects::Objects::new(&def, &server.storage)
            .create(None, obj, &opts)
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(HostError::Bootstrap {
                    name,
                    message: e.message,
                });
            }
        }
    }
    Ok(())
}

/// Publishes `kube-system/extension-apiserver-authentication` as kube-apiserver does: the
/// client CA and the request-header (front-proxy) CA with its allowed names, which extension
/// API servers read to trust this host.
async fn publish_authentication_config(
    server: &Arc<ApiServer>,
    pki: &flotilla_pki::ServerPki,
) -> Result<(), HostError> {
    let Some(def) = server.registry.get("", "v1", "configmaps") else {
        return Ok(());
    };
    let opts = flotilla_generic_store::objects::WriteOptions {
        field_manager: "flotilla-apiserver".into(),
        field_validation: flotilla_generic_store::request::FieldValidation::Strict,
        dry_run: false,
    };
    let name = "extension-apiserver-authentication";
    let data = json!({
        "client-ca-file": pki.ca.cert_pem,
        "requestheader-client-ca-file": pki.front_proxy_ca.cert_pem,
        "requestheader-allowed-names": format!("[\"{}\"]", flotilla_pki::FRONT_PROXY_CLIENT_USER),
        "requestheader-username-headers": "[\"X-Remote-User\"]",
        "requestheader-group-headers": "[\"X-Remote-Group\"]",
        "requestheader-extra-headers-prefix": "[\"X-Remote-Extra-\"]",
    });
    let objects = flotilla_generic_store::objects::Objects::new(&def, &server.storage);
    let result = match objects.get(Some("kube-system"), name).await {
        Ok(existing) if existing.value().get("data") == Some(&data) => Ok(()),
        Ok(existing) => {
            let mut updated = (*existing.value()).clone();
            updated["data"] = data;
            objects
                .update(Some("kube-system"), name, updated, None, &opts)
                .await
                .map(|_| ())
        }
        Err(e) if e.code == 404 => {
            let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "kube-system"}, "data": data});
            objects
                .create(Some("kube-system"), obj, &opts)
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    };
    result.map_err(|e| HostError::Bootstrap {
        name: name.into(),
        message: e.message,
    })
}

/// Installs the Karmada-compatible CRDs (policies, bindings, works) or brings their spec up
/// to date; the CRD controller then serves them.
async fn install_crds(server: &Arc<ApiServer>) -> Result<(), HostError> {
    let Some(def) = server
        .registry
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return Ok(());
    };
    let opts = flotilla_generic_store::objects::WriteOptions {
        field_manager: "flotilla-apiserver".into(),
        field_validation: flotilla_generic_store::request::FieldValidation::Strict,
        dry_run: false,
    };
    let objects = flotilla_generic_store::objects::Objects::new(&def, &server.storage);
    for crd in flotilla_karmada_api::crd::crds() {
        let value = serde_json::to_value(&crd).map_err(|e| HostError::Bootstrap {
            name: "crd".into(),
            message: e.to_string(),
        })?;
        let name = value
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string();
        let result = match objects.get(None, &name).await {
            Ok(existing) if existing.value().get("spec") == value.get("spec") => Ok(()),
            Ok(existing) => {
                let mut updated = (*existing.value()).clone();
                updated["spec"] = value["spec"].clone();
                objects
                    .update(None, &name, updated, None, &opts)
                    .await
                    .map(|_| ())
            }
            Err(e) if e.code == 404 => objects.create(None, value, &opts).await.map(|_| ()),
            Err(e) => Err(e),
        };
        result.map_err(|e| HostError::Bootstrap {
            name,
            message: e.message,
        })?;
    }
    Ok(())
}

/// Registers every built-in group/version as a Local APIService (as kube-apiserver does), so
/// `kubectl get apiservices` lists what is served here and extension servers add to it.
async fn ensure_local_apiservices(server: &Arc<ApiServer>) -> Result<(), HostError> {
    let Some(def) = server
        .registry
        .get("apiregistration.k8s.io", "v1", "apiservices")
    else {
        return Ok(());
    };
    let opts = flotilla_generic_store::objects::WriteOptions {
        field_manager: "flotilla-apiserver".into(),
        field_validation: flotilla_generic_store::request::FieldValidation::Strict,
        dry_run: false,
    };
    let mut seen = std::collections::BTreeSet::new();
    for d in server.registry.all() {
        if !seen.insert((d.group.clone(), d.version.clone())) {
            continue;
        }
        let name = format!("{}.{}", d.version, d.group);
        let priority = if d.group.is_empty() { 18000 } else { 17000 };
        let obj = json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": name, "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
            "spec": {"group": d.group, "version": d.version, "groupPriorityMinimum": priority, "versionPriority": 15},
        });
        match flotilla_generic_store::objects::Objects::new(&def, &server.storage)
            .create(None, obj, &opts)
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(HostError::Bootstrap {
                    name,
                    message: e.message,
                });
            }
        }
    }
    Ok(())
}

/// Creates `default`, `kube-system`, `kube-public` and `kube-node-lease` when missing.
pub async fn ensure_system_namespaces(server: &Arc<ApiServer>) -> Result<(), HostError> {
    let Some(def) = server.registry.get("", "v1", "namespaces") else {
        return Ok(());
    };
    let objects = flotilla_generic_store::objects::Objects::new(&def, &server.storage);
    let opts = flotilla_generic_store::objects::WriteOptions {
        field_manager: "flotilla-apiserver".into(),
        field_validation: flotilla_generic_store::request::FieldValidation::Strict,
        dry_run: false,
    };
    for name in SYSTEM_NAMESPACES {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        match objects.create(None, obj, &opts).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                return Err(HostError::SystemNamespace {
                    name: name.to_string(),
                    message: e.message,
                });
            }
        }
    }
    Ok(())
}
