//! The REST storage of a Kubernetes-style API server, without HTTP: what a server's handlers
//! call once they have routed, authenticated, authorized and decoded a request, and what
//! they encode afterwards.
//!
//! ```text
//!  handlers (flotilla-apiserver) ──▶ RestStorage ──▶ GenericStore ──▶ Objects ──▶ Storage
//!        decode / negotiate / encode     rest            generic       objects     (flotilla-storage)
//!                                                                      └─ admission, builtin_admission
//! ```
//!
//! - [`request`]: the parsed request ([`request::RequestInfo`]: verb, resource path, options);
//! - [`user`]: the caller;
//! - [`context`]: what a storage gets per request and per server;
//! - [`rest`]: the [`rest::RestStorage`] seam, answering objects, lists and event streams;
//! - [`generic`]: the generic store's verbs; [`watch`]: its event streams;
//! - [`objects`]: the object rules (metadata, writes, patch and apply, deletion and
//!   finalizers, scale, field selectors' values);
//! - [`admission`] and [`builtin_admission`]: dynamic admission webhooks and compiled-in
//!   validating plugins on the write path;
//! - [`filter`]: label and field selection; [`table`]: Tables from the printers;
//!   [`strict`]: repeated keys and strict field validation.

pub mod admission;
pub mod builtin_admission;
pub mod context;
pub mod filter;
pub mod generic;
pub mod objects;
pub mod request;
pub mod rest;
pub mod strict;
pub mod table;
pub mod user;
pub mod watch;

pub use user::UserInfo;
