//! A generic Kubernetes-style API server library: what kube-apiserver does for kubectl and
//! kube-rs, for any set of [`ResourceDef`](flotilla_apimachinery::ResourceDef)s over any
//! [`Storage`](flotilla_storage::Storage). Flotilla's host API server and its simulated member
//! clusters are both built from it.
//!
//! ```text
//!  serve (TLS, client-cert identity) -> server (authn, routing, timeouts, metrics)
//!        -> discovery | openapi | handlers (decode, negotiate, encode)
//!        -> rest storages (objects, lists, watch events): generic | watch | others
//!        -> objects (metadata, subresources, patch/apply, concurrency) -> storage
//! ```

pub mod admission;
pub mod aggregator;
pub mod apiservices;
pub mod audit;
pub mod auth;
pub mod authz;
pub mod binding;
pub mod boot;
pub mod builtin_admission;
pub mod context;
pub mod crds;
pub mod discovery;
pub mod filter;
pub mod generic;
pub mod handlers;
pub mod inflight;
pub mod informer;
pub mod list_body;
pub mod metrics;
pub mod namespaces;
pub mod objects;
pub mod openapi;
pub mod openapi_v2;
pub mod proxy;
pub mod rbac_sync;
pub mod registry;
pub mod request;
pub mod response;
pub mod rest;
pub mod reviews;
pub mod serve;
pub mod server;
pub mod serviceaccount;
pub mod state;
pub mod strict;
pub mod table;
pub mod watch;

pub use auth::{TokenAuthenticator, TokenAuthenticators, TokenUser, UserInfo};
pub use boot::BootError;
/// Background tasks with a lifecycle (the `flotilla-tasks` crate).
pub use flotilla_tasks as tasks;
pub use registry::Registry;
pub use server::ServerOptions;
pub use state::{ApiServer, ServerConfig};
