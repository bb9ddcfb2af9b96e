//! Certificates, TLS and kubeconfig files for Flotilla's Kubernetes-style API servers.
//!
//! This crate owns:
//! - [`CertificateAuthority`]: ECDSA P-256 CAs that issue serving certificates and Kubernetes
//!   client certificates (CN = user, O = groups);
//! - [`parse_certificate_request`] / [`CertificateAuthority::sign_request`]: PKCS#10 requests
//!   (the Kubernetes CSR API's `spec.request`) checked and signed;
//! - [`ensure_server_pki`]: the idempotent on-disk certificate set of an API server
//!   (cluster CA, serving, admin, front-proxy CA and client, service-account signing key);
//! - [`ServiceAccountKey`]: the ECDSA P-256 key service-account tokens are signed with;
//! - [`server_config`] / [`client_config`]: rustls configurations using the ring provider;
//! - [`identity_from_cert`] / [`peer_identity`]: the user and groups of a verified client;
//! - [`Kubeconfig`]: building, writing, loading and resolving kubeconfig files.

// Tests unwrap freely: a panic is a failed test.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod ca;
mod csr;
mod der;
mod error;
mod fsutil;
mod identity;
mod kubeconfig;
mod pem;
mod server_pki;
mod service_account;
mod tls;

#[cfg(test)]
mod handshake_tests;
#[cfg(test)]
mod kubectl_tests;

pub use ca::{CertFiles, CertificateAuthority, IssuedCert, cert_paths};
pub use csr::{
    CertificateRequest, RequestError, SigningProfile, certificate_pem_problem, key_usages,
    parse_certificate_request,
};
pub use error::{PkiError, Result};
pub use identity::{ClientIdentity, identity_from_cert, peer_identity};
pub use kubeconfig::{
    Cluster, Context, Kubeconfig, NamedCluster, NamedContext, NamedUser, ResolvedContext, User,
};
pub use pem::parse_certificates;
pub use server_pki::{
    ADMIN_GROUP, ADMIN_USER, AGGREGATED_APISERVER, APISERVER_COMMON_NAME, CA_COMMON_NAME,
    COMPONENT_IDENTITIES, COMPONENTS_GROUP, COMPONENTS_USER, CONTROLLER_MANAGER, ComponentIdentity,
    FRONT_PROXY_CA_COMMON_NAME, FRONT_PROXY_CLIENT_USER, SCHEDULER, ServerPki, ensure_server_pki,
    share_pki,
};
pub use service_account::{
    SERVICE_ACCOUNT_KEY_BASENAME, ServiceAccountKey, ServiceAccountKeyFiles,
    service_account_key_paths,
};
pub use tls::{
    ALPN_PROTOCOLS, ChainVerifier, chain_root_pem, client_config, parse_private_key, server_config,
};
