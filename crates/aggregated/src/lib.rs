//! Flotilla's aggregated API server (what karmada-aggregated-apiserver is to Karmada): serves
//! `cluster.karmada.io/v1alpha1` Cluster objects (cluster-scoped, with `status`) and
//! `clusters/{name}/proxy/{path}`, which forwards any request to that member cluster's API
//! server with the cluster's credentials, impersonating the caller so member RBAC applies.
//!
//! ```text
//!  host (APIService v1alpha1.cluster.karmada.io) --front-proxy cert + X-Remote-*--> here
//!     authn: front-proxy headers or own client certs; authz: SubjectAccessReview to the host
//!     clusters, clusters/status: generic server over its own storage; naming a Secret
//!       needs `get` on it (admission.rs)
//!     clusters/proxy: cluster + Secret (from the host) -> member apiEndpoint, Impersonate-*
//!     search.karmada.io proxying/karmada/proxy: merged reads (template store + every member)
//! ```

pub mod admission;
pub mod cluster;
pub mod delegated;
pub mod endpoints;
pub mod members;
pub mod proxy;
pub mod search;
pub mod server;

pub use endpoints::{EndpointError, deregister_endpoint, register_endpoint};
pub use server::{
    AggregatedError, AggregatedOptions, RunningAggregated, authentication_config,
    register_apiservice, register_search_apiservice, start, start_registered,
};
