//! Client-side rate limiting of the controllers' writes to the host: a token bucket of
//! `qps` tokens per second holding at most `burst` (Karmada's `--kube-api-qps` and
//! `--kube-api-burst`), applied as a tower layer inside a kube [`kube::Client`], so every
//! controller sharing that client shares the budget. Only mutating requests (POST, PUT,
//! PATCH, DELETE) take a token: reads and watches are left to the API server's in-flight
//! limits, and a controller re-establishing its watches is never held behind its own writes.
//!
//! A request reserves its token when handed to the client and, when the bucket is empty,
//! waits for its turn before it is sent; waiting requests queue in reservation order.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Method, Request};
use parking_lot::Mutex;

/// A token bucket that hands out reservations: how long the caller must wait for its token.
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    state: Mutex<BucketState>,
}

#[derive(Debug)]
struct BucketState {
    /// Negative when reservations are ahead of the refill.
    tokens: f64,
    at: Instant,
}

impl TokenBucket {
    /// `qps` tokens per second, at most `burst` (at least 1) saved up; starts full. `None`
    /// for a `qps` that is not a positive number (no limit).
    pub fn new(qps: f64, burst: u32) -> Option<Self> {
        if !(qps.is_finite() && qps > 0.0) {
            return None;
        }
        let burst = f64::from(burst.max(1));
        Some(Self {
            qps,
            burst,
            state: Mutex::new(BucketState {
                tokens: burst,
                at: Instant::now(),
            }),
        })
    }

    /// Takes a token at `now`; how long until it is the caller's to use.
    pub fn reserve_at(&self, now: Instant) -> Duration {
        let mut s = self.state.lock();
        let elapsed = now.saturating_duration_since(s.at).as_secs_f64();
        s.at = s.at.max(now);
        s.tokens = (s.tokens + elapsed * self.qps).min(self.burst) - 1.0;
        if s.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-s.tokens / self.qps)
        }
    }
}

/// Whether `method` changes something (and so takes a token).
fn mutating(method: &Method) -> bool {
    !matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS)
}

/// The tower layer limiting the writes of a kube client:
/// `ClientBuilder::try_from(config)?.with_layer(&WriteThrottleLayer::new(..)).build()`.
#[derive(Debug, Clone)]
pub struct WriteThrottleLayer {
    bucket: Option<Arc<TokenBucket>>,
}

impl WriteThrottleLayer {
    /// See [`TokenBucket::new`]; a `qps` of 0 (or less) means no limit.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            bucket: TokenBucket::new(qps, burst).map(Arc::new),
        }
    }
}

impl<S> tower::Layer<S> for WriteThrottleLayer {
    type Service = WriteThrottle<S>;

    fn layer(&self, inner: S) -> Self::Service {
        WriteThrottle {
            inner,
            bucket: self.bucket.clone(),
        }
    }
}

/// See [`WriteThrottleLayer`].
#[derive(Debug, Clone)]
pub struct WriteThrottle<S> {
    inner: S,
    bucket: Option<Arc<TokenBucket>>,
}

impl<S, B> tower::Service<Request<B>> for WriteThrottle<S>
where
    S: tower::Service<Request<B>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let wait = match &self.bucket {
            Some(bucket) if mutating(request.method()) => bucket.reserve_at(Instant::now()),
            _ => Duration::ZERO,
        };
        // The client stack's futures do nothing until polled, so the request leaves only
        // after the wait.
        let response = self.inner.call(request);
        Box::pin(async move {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            response.await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use tower::{Layer, Service, ServiceExt};

    #[test]
    fn burst_then_one_token_per_interval() {
        let bucket = TokenBucket::new(10.0, 3).unwrap();
        let t0 = Instant::now();
        let waits: Vec<u128> = (0..6).map(|_| bucket.reserve_at(t0).as_millis()).collect();
        // Three saved up, then each 100 ms further behind.
        assert_eq!(waits, [0, 0, 0, 100, 200, 300]);
        // One second later the debt (3) is paid and 7 more accrued, capped at the burst.
        let t1 = t0 + Duration::from_secs(1);
        let waits: Vec<u128> = (0..4).map(|_| bucket.reserve_at(t1).as_millis()).collect();
        assert_eq!(waits, [0, 0, 0, 100]);
    }

    #[test]
    fn no_positive_rate_is_no_limit() {
        assert!(TokenBucket::new(0.0, 10).is_none());
        assert!(TokenBucket::new(-1.0, 10).is_none());
        assert!(TokenBucket::new(f64::NAN, 10).is_none());
        // A zero burst still lets one through.
        let b = TokenBucket::new(1.0, 0).unwrap();
        assert_eq!(b.reserve_at(Instant::now()), Duration::ZERO);
    }

    fn request(method: Method) -> Request<()> {
        Request::builder().method(method).body(()).unwrap()
    }

    /// Polls one call once: whether it finished without waiting.
    async fn immediate<S>(svc: &mut S, method: Method) -> bool
    where
        S: Service<Request<()>, Response = (), Error = Infallible>,
    {
        use futures::FutureExt;
        let ready = svc.ready().await.unwrap();
        ready.call(request(method)).now_or_never().is_some()
    }

    #[tokio::test]
    async fn only_writes_wait_for_tokens() {
        let svc = tower::service_fn(|_req: Request<()>| async { Ok::<_, Infallible>(()) });
        // Two tokens saved up, then one every 1000 s: the third write has to wait.
        let mut svc = WriteThrottleLayer::new(0.001, 2).layer(svc);
        assert!(immediate(&mut svc, Method::POST).await);
        assert!(immediate(&mut svc, Method::PATCH).await);
        assert!(
            !immediate(&mut svc, Method::DELETE).await,
            "third write let through"
        );
        assert!(!immediate(&mut svc, Method::PUT).await);
        // Reads never wait.
        for _ in 0..10 {
            assert!(immediate(&mut svc, Method::GET).await);
        }
        // No limit at all with qps 0.
        let svc = tower::service_fn(|_req: Request<()>| async { Ok::<_, Infallible>(()) });
        let mut free = WriteThrottleLayer::new(0.0, 0).layer(svc);
        for _ in 0..10 {
            assert!(immediate(&mut free, Method::PATCH).await);
        }
    }
}
