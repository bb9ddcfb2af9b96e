//! A slow member (`MemberOptions::latency`): every request waits this long before the API
//! server sees it, as over a slow network link to a far-away cluster. Health checks wait too
//! (a probe crosses the same link); a watch waits once, when it is opened.

use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::middleware::Next;

/// `router` answering every request `latency` later (unchanged when it is zero).
pub(crate) fn with_latency(router: Router, latency: Duration) -> Router {
    if latency.is_zero() {
        return router;
    }
    router.layer(axum::middleware::from_fn(
        move |req: Request, next: Next| async move {
            tokio::time::sleep(latency).await;
            next.run(req).await
        },
    ))
}
