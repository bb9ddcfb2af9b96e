//! A generic Kubernetes-style API server library: what kube-apiserver does for kubectl and
//! kube-rs, for any set of [`ResourceDef`](flotilla_apimachinery::ResourceDef)s over any
//! [`Storage`](flotilla_storage::Storage). Flotilla's host API server and its simulated member
//! clusters are both built from it.
//!
//! ```text
//!  serve (TLS, client-cert identity) -> server (authn, routing, timeouts, metrics)
//!        -> discovery | openapi | handlers (decode, negotiate, encode)
//!        -> REST storages (flotilla-generic-store: objects, lists, watch events, no HTTP)
//!        -> storage
//! ```

pub mod aggregator;
pub mod apiservices;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod binding;
pub mod boot;
pub mod crds;
pub mod discovery;
pub mod filters;
pub mod handlers;
pub mod inflight;
pub mod informer;
pub mod list_body;
pub mod metrics;
pub mod namespaces;
pub mod openapi;
pub mod openapi_v2;
pub mod proxy;
pub mod rbac_sync;
pub mod registry;
pub mod response;
pub mod reviews;
pub mod serve;
pub mod server;
pub mod serviceaccount;
pub mod state;
pub mod subresource;

pub use auth::{TokenAuthenticator, TokenAuthenticators, TokenUser};
pub use boot::BootError;
/// Background tasks with a lifecycle (the `flotilla-tasks` crate).
pub use flotilla_tasks as tasks;
pub use registry::Registry;
pub use server::ServerOptions;
pub use state::{ApiServer, ServerConfig};
