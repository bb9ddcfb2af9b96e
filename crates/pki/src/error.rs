//! The crate's error type. Each variant is named for the action that failed, so a message
//! read in a log says what Flotilla was trying to do, not only what went wrong.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = PkiError> = std::result::Result<T, E>;

/// Everything that can go wrong while generating certificates, building TLS configurations or
/// reading and writing kubeconfig files.
#[derive(thiserror::Error, Debug)]
pub enum PkiError {
    #[error("generating a private key: {0}")]
    GenerateKey(#[source] rcgen::Error),

    #[error("generating the certificate authority {common_name:?}: {source}")]
    GenerateCa {
        common_name: String,
        #[source]
        source: rcgen::Error,
    },

    #[error("issuing a certificate for {common_name:?}: {source}")]
    IssueCertificate {
        common_name: String,
        #[source]
        source: rcgen::Error,
    },

    #[error("issuing a certificate for {common_name:?}: {reason}")]
    InvalidSubject { common_name: String, reason: String },

    #[error("re-encoding the certificate for {common_name:?}: {reason}")]
    EncodeCertificate { common_name: String, reason: String },

    #[error("parsing the certificate in {what}: {reason}")]
    ParseCertificate { what: String, reason: String },

    #[error("parsing the private key in {what}: {reason}")]
    ParsePrivateKey { what: String, reason: String },

    #[error(
        "loading the certificate authority from {what}: the private key does not belong to the certificate"
    )]
    KeyMismatch { what: String },

    #[error(
        "loading the certificate authority from {what}: the certificate is not a CA (basicConstraints CA:TRUE missing)"
    )]
    NotACa { what: String },

    #[error("reading the client identity: the certificate has no subject common name")]
    MissingCommonName,

    #[error("reading {path}: {source}")]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("writing {path}: {source}")]
    WriteFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("creating directory {path}: {source}")]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "loading the key pair: {present} exists but {missing} does not; restore it or remove both to generate a new pair"
    )]
    IncompletePair { present: PathBuf, missing: PathBuf },

    #[error("building the TLS configuration: {0}")]
    BuildTlsConfig(#[source] rustls::Error),

    #[error("building the client certificate verifier: {0}")]
    BuildClientVerifier(#[source] rustls::server::VerifierBuilderError),

    #[error("adding a trusted CA certificate: {0}")]
    AddTrustAnchor(#[source] rustls::Error),

    #[error(
        "building the TLS client configuration: no CA certificate given and certificate verification is not disabled"
    )]
    NoTrustAnchors,

    #[error("parsing the kubeconfig {what}: {source}")]
    ParseKubeconfig {
        what: String,
        #[source]
        source: serde_norway::Error,
    },

    #[error("serializing the kubeconfig: {0}")]
    SerializeKubeconfig(#[source] serde_norway::Error),

    #[error("resolving the kubeconfig context: no context given and current-context is not set")]
    NoCurrentContext,

    #[error("resolving the kubeconfig context: context {name:?} not found")]
    ContextNotFound { name: String },

    #[error("resolving the kubeconfig context {context:?}: cluster {name:?} not found")]
    ClusterNotFound { context: String, name: String },

    #[error("resolving the kubeconfig context {context:?}: user {name:?} not found")]
    UserNotFound { context: String, name: String },

    #[error("resolving the kubeconfig context {context:?}: cluster {cluster:?} has no server")]
    MissingServer { context: String, cluster: String },

    #[error("decoding kubeconfig field {field}: {source}")]
    DecodeBase64 {
        field: String,
        #[source]
        source: base64::DecodeError,
    },

    #[error("decoding kubeconfig field {field}: the content is not UTF-8 text")]
    NotUtf8 { field: String },
}
