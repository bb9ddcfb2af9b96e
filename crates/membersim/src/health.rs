//! A member that answers but is unhealthy ([`crate::RunningMember::set_healthy`]): while its
//! health flag is down, `/healthz`, `/livez` and `/readyz` (and their `etcd` check) answer
//! 500 with a per-check report as kube-apiserver writes one when its storage fails, while
//! every other path (the API itself, `/version`, the `ping` checks) keeps being served.
//!
//! This is a layer over the router of the API server library, so the library's own health
//! handlers stay untouched and the flag costs one atomic load per request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

/// The check the simulated failure fails, as a storage outage would.
const FAILED_CHECK: &str = "etcd";

/// The endpoints whose answers the failure changes.
const ENDPOINTS: [&str; 3] = ["healthz", "livez", "readyz"];

/// `router` answering the health endpoints with 500 while `healthy` is false.
pub(crate) fn with_health_switch(router: Router, healthy: Arc<AtomicBool>) -> Router {
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| {
            let healthy = healthy.clone();
            async move {
                if !healthy.load(Ordering::Relaxed) {
                    if let Some(body) = failure_body(req.uri().path()) {
                        return unhealthy_response(body);
                    }
                }
                next.run(req).await
            }
        },
    ))
}

/// What an unhealthy member answers on `path`, or `None` when the path is not a failing
/// health check (other paths, and the `ping` checks, which only say the server is up).
fn failure_body(path: &str) -> Option<String> {
    let path = path.strip_prefix('/')?;
    let (endpoint, check) = match path.split_once('/') {
        Some((endpoint, check)) => (endpoint, Some(check)),
        None => (path, None),
    };
    if !ENDPOINTS.contains(&endpoint) {
        return None;
    }
    match check {
        None => Some(format!(
            "[+]ping ok\n[+]log ok\n[-]{FAILED_CHECK} failed: reason withheld\n{endpoint} check failed\n"
        )),
        Some(FAILED_CHECK) => Some(format!(
            "internal server error: {FAILED_CHECK} check failed\n"
        )),
        Some(_) => None,
    }
}

fn unhealthy_response(body: String) -> Response {
    let mut response = (StatusCode::INTERNAL_SERVER_ERROR, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::failure_body;

    #[test]
    fn which_paths_fail() {
        assert_eq!(
            failure_body("/readyz").as_deref(),
            Some("[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\nreadyz check failed\n")
        );
        assert!(
            failure_body("/healthz")
                .unwrap()
                .ends_with("\nhealthz check failed\n")
        );
        assert!(
            failure_body("/livez")
                .unwrap()
                .ends_with("\nlivez check failed\n")
        );
        assert_eq!(
            failure_body("/readyz/etcd").as_deref(),
            Some("internal server error: etcd check failed\n")
        );
        for fine in [
            "/readyz/ping",
            "/livez/ping",
            "/version",
            "/api/v1/nodes",
            "/readyzz",
            "/api/readyz",
            "",
        ] {
            assert_eq!(failure_body(fine), None, "{fine}");
        }
    }
}
