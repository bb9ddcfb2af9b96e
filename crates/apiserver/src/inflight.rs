//! Overload protection: kube-apiserver's max-in-flight limits. A server holds at most
//! `max_requests_inflight` read-only and `max_mutating_requests_inflight` mutating requests at
//! once; one past the limit is answered at once with `429 TooManyRequests` and `Retry-After:
//! 1` (clients back off and retry) rather than queued behind the others.
//!
//! Not limited, as in kube-apiserver: long-running requests (watches, and the `proxy`,
//! `exec`, `attach`, `portforward` subresources and followed logs, which hold a connection for
//! as long as the client wants), the health and version endpoints (so a loaded server still
//! answers its probes), and callers in `system:masters` (the break-glass identity). Nor are
//! Flotilla's own components (`system:flotilla:components`, which no longer carry
//! `system:masters`): as kube's priority-and-fairness keeps kube-controller-manager and
//! kube-scheduler in a level users cannot starve, a load of user requests must not stop
//! propagation, scheduling or the aggregated server's authorization checks. A limit of 0 turns
//! that limit off. A proxy whose handler says it carries an API request this server answers
//! itself (Karmada's search proxy: a merged GET or LIST) counts as that request, not as a
//! proxy: otherwise every merged read through it would escape the read limit.
//!
//! A request keeps its place until its response body has been handed to the connection, not
//! only until the response is built: a LIST streams its items out in pieces
//! ([`crate::list_body`]), and a slow reader of a large list is as much load as a slow
//! handler (kube-apiserver's filter returns once the handler has written the whole body). A
//! reader that stops reading gives the place up at the request timeout.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::ApiError;
use http_body::{Frame, SizeHint};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::registry::Registry;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::request::{RequestInfo, Verb};

/// kube-apiserver's defaults (`--max-requests-inflight`, `--max-mutating-requests-inflight`).
pub const DEFAULT_MAX_REQUESTS_INFLIGHT: usize = 400;
pub const DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT: usize = 200;

const MASTERS_GROUP: &str = "system:masters";
const COMPONENTS_GROUP: &str = flotilla_pki::COMPONENTS_GROUP;
/// Subresources whose requests stay open as long as the client wants.
const LONG_RUNNING_SUBRESOURCES: [&str; 4] = ["proxy", "exec", "attach", "portforward"];

/// Which limit a request counts against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Not limited.
    Exempt,
    ReadOnly,
    Mutating,
}

impl Class {
    fn label(self) -> &'static str {
        match self {
            Class::Exempt => "exempt",
            Class::ReadOnly => "readOnly",
            Class::Mutating => "mutating",
        }
    }
}

/// Whether `user`'s requests are never limited: the break-glass identity and Flotilla's own
/// components.
pub fn exempt_user(user: &UserInfo) -> bool {
    user.groups
        .iter()
        .any(|g| g == MASTERS_GROUP || g == COMPONENTS_GROUP)
}

/// Which limit `info` from `user` counts against on a server serving `registry`: a proxy
/// that carries an API request (see [`SubresourceHandler::carried_request`]) counts as that
/// request.
///
/// [`SubresourceHandler::carried_request`]: crate::subresource::SubresourceHandler::carried_request
pub fn classify_in(registry: &Registry, info: &RequestInfo, user: Option<&UserInfo>) -> Class {
    let carried = info.resource().and_then(|r| {
        let sub = r.subresource.as_deref()?;
        registry
            .subresource(&r.group, &r.resource, sub)?
            .carried_request(info)
    });
    classify(carried.as_ref().unwrap_or(info), user)
}

/// Which limit `info` from `user` counts against.
pub fn classify(info: &RequestInfo, user: Option<&UserInfo>) -> Class {
    if crate::auth::is_public_path(&info.path)
        || user.is_some_and(exempt_user)
        || info.verb == Verb::Watch
    {
        return Class::Exempt;
    }
    if let Some(r) = info.resource() {
        match r.subresource.as_deref() {
            Some(s) if LONG_RUNNING_SUBRESOURCES.contains(&s) => return Class::Exempt,
            Some("log") if info.query.flag("follow") => return Class::Exempt,
            _ => {}
        }
    }
    match info.verb {
        Verb::Get | Verb::List | Verb::Watch | Verb::Unknown => Class::ReadOnly,
        Verb::Create
        | Verb::Update
        | Verb::Patch
        | Verb::Delete
        | Verb::DeleteCollection
        | Verb::Post
        | Verb::Put => Class::Mutating,
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, prometheus_client::encoding::EncodeLabelSet)]
struct KindLabel {
    request_kind: &'static str,
}

/// The two limits and a gauge of the requests each holds.
pub struct InFlightLimits {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
    current: Family<KindLabel, Gauge>,
}

/// A request's place within its limit; released when dropped.
pub struct InFlight {
    permit: Option<OwnedSemaphorePermit>,
    gauge: Option<Gauge>,
}

impl InFlight {
    /// `resp` with this place held until its body has been handed to the connection, the
    /// response is dropped (the client went away), or `at_most` has passed: a client that
    /// stops reading does not keep the place for longer than a request may last
    /// (kube-apiserver's timeout filter ends such a request).
    pub fn hold_until_sent(self, resp: Response, at_most: Duration) -> Response {
        if self.permit.is_none() && self.gauge.is_none() {
            return resp;
        }
        let place = Arc::new(parking_lot::Mutex::new(Some(self)));
        let (sent, sending) = tokio::sync::oneshot::channel::<std::convert::Infallible>();
        let expiring = place.clone();
        tokio::spawn(async move {
            if tokio::time::timeout(at_most, sending).await.is_err()
                && expiring.lock().take().is_some()
            {
                tracing::debug!(
                    "a response still being sent at the request timeout leaves its in-flight place"
                );
            }
        });
        resp.map(|inner| {
            Body::new(HeldBody {
                inner,
                place,
                _sent: sent,
            })
        })
    }
}

/// A response body that holds its request's place until its last frame is out.
struct HeldBody {
    inner: Body,
    /// Shared with the task that frees it at the request timeout.
    place: Arc<parking_lot::Mutex<Option<InFlight>>>,
    /// Dropped with the body: ends that task.
    _sent: tokio::sync::oneshot::Sender<std::convert::Infallible>,
}

impl Drop for HeldBody {
    fn drop(&mut self) {
        self.place.lock().take();
    }
}

impl http_body::Body for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        let done = match &polled {
            Poll::Ready(None | Some(Err(_))) => true,
            Poll::Ready(Some(Ok(_))) => this.inner.is_end_stream(),
            Poll::Pending => false,
        };
        if done {
            this.place.lock().take();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if let Some(g) = &self.gauge {
            g.dec();
        }
    }
}

impl InFlightLimits {
    /// Limits of `read_only` and `mutating` requests (0: unlimited).
    pub fn new(read_only: usize, mutating: usize) -> Self {
        let semaphore = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        Self {
            read_only: semaphore(read_only),
            mutating: semaphore(mutating),
            current: Family::default(),
        }
    }

    /// Registers `apiserver_current_inflight_requests{request_kind}` with `metrics`.
    pub fn register(&self, metrics: &crate::metrics::Metrics) {
        metrics.register(
            "apiserver_current_inflight_requests",
            "Requests being served, by the limit they count against",
            self.current.clone(),
        );
    }

    /// A place for a request of `class`, or the 429 to answer when its limit is reached.
    pub fn admit(&self, class: Class) -> Result<InFlight, ApiError> {
        let semaphore = match class {
            Class::Exempt => None,
            Class::ReadOnly => self.read_only.as_ref(),
            Class::Mutating => self.mutating.as_ref(),
        };
        let permit = match semaphore {
            None => None,
            Some(s) => Some(s.clone().try_acquire_owned().map_err(|_| too_many())?),
        };
        let gauge = (class != Class::Exempt).then(|| {
            let g = self
                .current
                .get_or_create(&KindLabel {
                    request_kind: class.label(),
                })
                .clone();
            g.inc();
            g
        });
        Ok(InFlight { permit, gauge })
    }
}

/// The answer past a limit: 429 with `Retry-After: 1`, as kube-apiserver words it.
pub fn too_many() -> ApiError {
    let mut e = ApiError::new(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
    );
    e.retry_after_seconds = Some(1);
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, Method, Uri};

    fn info(method: Method, uri: &str) -> RequestInfo {
        RequestInfo::parse(&method, &uri.parse::<Uri>().unwrap(), &HeaderMap::new())
    }

    fn user(groups: &[&str]) -> UserInfo {
        UserInfo {
            name: "u".into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: Default::default(),
        }
    }

    #[test]
    fn requests_are_classified_as_kube_apiserver_does() {
        let u = user(&["system:authenticated"]);
        let cases = [
            (Method::GET, "/api/v1/namespaces/d/pods", Class::ReadOnly),
            (Method::GET, "/api/v1/namespaces/d/pods/p", Class::ReadOnly),
            (Method::GET, "/api/v1/pods?watch=true", Class::Exempt),
            (Method::POST, "/api/v1/namespaces/d/pods", Class::Mutating),
            (
                Method::PATCH,
                "/apis/apps/v1/namespaces/d/deployments/w",
                Class::Mutating,
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/d/configmaps",
                Class::Mutating,
            ),
            (Method::GET, "/healthz", Class::Exempt),
            (Method::GET, "/readyz", Class::Exempt),
            (Method::GET, "/version", Class::Exempt),
            (Method::GET, "/apis", Class::ReadOnly),
            (
                Method::GET,
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods",
                Class::Exempt,
            ),
            (
                Method::POST,
                "/api/v1/namespaces/d/pods/p/exec",
                Class::Exempt,
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d/pods/p/log?follow=true",
                Class::Exempt,
            ),
            (
                Method::GET,
                "/api/v1/namespaces/d/pods/p/log",
                Class::ReadOnly,
            ),
        ];
        for (method, uri, want) in cases {
            assert_eq!(
                classify(&info(method.clone(), uri), Some(&u)),
                want,
                "{method} {uri}"
            );
        }
        for groups in [&["system:masters"], &["system:flotilla:components"]] {
            assert_eq!(
                classify(
                    &info(Method::POST, "/api/v1/namespaces/d/pods"),
                    Some(&user(groups))
                ),
                Class::Exempt,
                "{groups:?}"
            );
        }
    }

    /// A proxy whose path is the API request it carries.
    struct CarryingProxy;

    #[async_trait::async_trait]
    impl crate::subresource::SubresourceHandler for CarryingProxy {
        async fn handle(
            &self,
            _store: &Arc<flotilla_generic_store::context::StoreContext>,
            _def: &Arc<flotilla_apimachinery::ResourceDef>,
            _path: &flotilla_generic_store::request::ResourcePath,
            _req: axum::extract::Request,
            _user: &UserInfo,
        ) -> Response {
            Response::new(Body::empty())
        }

        fn carried_request(&self, info: &RequestInfo) -> Option<RequestInfo> {
            let r = info.resource()?;
            let query = info
                .uri
                .split_once('?')
                .map_or(String::new(), |(_, q)| format!("?{q}"));
            let inner = format!("{}{query}", r.sub_path.as_deref()?);
            Some(self::info(info.method.clone(), &inner))
        }
    }

    #[test]
    fn a_proxy_carrying_an_api_request_counts_as_that_request() {
        let registry = Registry::new();
        registry.add_subresource(
            "search.example.io",
            "proxying",
            "proxy",
            Arc::new(CarryingProxy),
        );
        let u = user(&["system:authenticated"]);
        let proxied = "/apis/search.example.io/v1/proxying/p/proxy/apis/apps/v1/deployments";
        let cases = [
            (proxied.to_string(), Class::ReadOnly),
            (format!("{proxied}/web"), Class::ReadOnly),
            (format!("{proxied}?watch=true"), Class::Exempt),
            // Another proxy is long-running, as in kube-apiserver.
            (
                "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods".to_string(),
                Class::Exempt,
            ),
        ];
        for (uri, want) in cases {
            let got = classify_in(&registry, &info(Method::GET, &uri), Some(&u));
            assert_eq!(got, want, "{uri}");
        }
        // Exempt callers stay exempt through it.
        let masters = user(&["system:masters"]);
        assert_eq!(
            classify_in(&registry, &info(Method::GET, proxied), Some(&masters)),
            Class::Exempt
        );
    }

    #[test]
    fn past_the_limit_a_request_gets_429_with_retry_after_until_a_place_frees() {
        let limits = InFlightLimits::new(2, 1);
        let a = limits.admit(Class::ReadOnly).unwrap();
        let _b = limits.admit(Class::ReadOnly).unwrap();
        let err = limits.admit(Class::ReadOnly).err().unwrap();
        assert_eq!((err.code, err.reason.as_str()), (429, "TooManyRequests"));
        assert_eq!(err.retry_after_seconds, Some(1));
        // The mutating limit is separate, and exempt requests are never refused.
        let m = limits.admit(Class::Mutating).unwrap();
        assert!(limits.admit(Class::Mutating).is_err());
        for _ in 0..10 {
            limits.admit(Class::Exempt).unwrap();
        }
        drop(a);
        let _c = limits.admit(Class::ReadOnly).unwrap();
        drop(m);
        limits.admit(Class::Mutating).unwrap();
        // 0 is no limit.
        let open = InFlightLimits::new(0, 0);
        let held: Vec<InFlight> = (0..1000)
            .map(|_| open.admit(Class::ReadOnly).unwrap())
            .collect();
        assert_eq!(held.len(), 1000);
    }
}
