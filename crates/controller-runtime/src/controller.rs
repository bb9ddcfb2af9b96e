//! The controller skeleton: triggers (changes a [`Reflector`] sees, mapped to keys, or keys
//! added by hand) → a deduplicating [`WorkQueue`] with per-key backoff → `reconcile` on a
//! pool of workers → what to do next ([`Action`]). Every controller built here is counted on
//! the manager's `/metrics` under its name.

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_tasks::AbortOnDrop;
use kube::Resource;

use crate::metrics::ControllerMetrics;
use crate::queue::WorkQueue;
use crate::reflector::Reflector;

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing until something changes.
    Done,
    /// Look again after this long.
    RequeueAfter(Duration),
    /// Look again after the key's backoff, which grows with each such answer in a row (a
    /// binding no cluster can take yet: not an error, but nothing to hurry for).
    RequeueWithBackoff,
}

/// An error a reconcile may end with: a write that lost an optimistic-concurrency race is
/// retried at once on fresh data, anything else after the queue's backoff.
pub trait ReconcileError: std::error::Error + Send + Sync + 'static {
    fn is_conflict(&self) -> bool {
        false
    }
}

/// How a controller runs; [`crate::Manager::controller`] starts one.
#[derive(Debug, Clone)]
pub struct ControllerOptions {
    /// Reconciles at once (a key is never reconciled by two at once).
    pub workers: usize,
    /// First retry delay of a failed reconcile; doubles per failure.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_max: Duration,
    /// Whether the controller reports its queue's depth; off for one of several controllers
    /// under one name (one per member cluster), whose owner reports their sum.
    pub report_queue_depth: bool,
}

impl Default for ControllerOptions {
    fn default() -> Self {
        Self {
            workers: 1,
            retry_base: Duration::from_millis(200),
            retry_max: Duration::from_secs(30),
            report_queue_depth: true,
        }
    }
}

/// A controller: its queue (for triggers) and, once [`Controller::run`], its workers.
pub struct Controller<Key> {
    name: &'static str,
    queue: Arc<WorkQueue<Key>>,
    workers: usize,
    report_queue_depth: bool,
    metrics: Arc<ControllerMetrics>,
}

impl<Key> Controller<Key>
where
    Key: Clone + Eq + Hash + Send + Sync + Debug + 'static,
{
    pub(crate) fn new(
        name: &'static str,
        options: &ControllerOptions,
        metrics: Arc<ControllerMetrics>,
    ) -> Self {
        Self {
            name,
            queue: WorkQueue::new(options.retry_base, options.retry_max),
            workers: options.workers.max(1),
            report_queue_depth: options.report_queue_depth,
            metrics,
        }
    }

    /// The controller's name (its metrics' `controller` label).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The queue, for triggers of its own (a periodic look, another controller's signal).
    pub fn queue(&self) -> &Arc<WorkQueue<Key>> {
        &self.queue
    }

    /// Queues the keys `map` gives for each change `reflector` sees (the objects it holds
    /// now first).
    pub fn watches<K, I>(
        &self,
        reflector: &Reflector<K>,
        map: impl Fn(&K, bool) -> I + Send + Sync + 'static,
    ) where
        K: Resource + Clone + 'static,
        K::DynamicType: Clone + Eq + Hash,
        I: IntoIterator<Item = Key>,
    {
        let queue = self.queue.clone();
        reflector.subscribe(move |obj, deleted| {
            for key in map(obj, deleted) {
                queue.add(key);
            }
        });
    }

    /// Reconciles queued keys until the queue is shut down or the returned future dropped
    /// (which ends the workers: a stopped component, a lost leadership).
    pub async fn run<F, Fut, E>(self, reconcile: F)
    where
        F: Fn(Key) -> Fut + Clone + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: ReconcileError,
    {
        let (name, report_queue_depth) = (self.name, self.report_queue_depth);
        let workers: Vec<AbortOnDrop> = (0..self.workers)
            .map(|_| {
                let (queue, metrics, reconcile) =
                    (self.queue.clone(), self.metrics.clone(), reconcile.clone());
                AbortOnDrop(tokio::spawn(async move {
                    while let Some(key) = queue.pop().await {
                        let started = Instant::now();
                        let result = reconcile(key.clone()).await;
                        metrics.reconciled(name, result.is_ok(), started.elapsed());
                        match result {
                            Ok(Action::Done) => queue.forget(&key),
                            Ok(Action::RequeueAfter(delay)) => {
                                queue.forget(&key);
                                queue.add_after(key.clone(), delay);
                            }
                            Ok(Action::RequeueWithBackoff) => {
                                queue.retry(key.clone());
                            }
                            Err(e) if e.is_conflict() => {
                                tracing::debug!(controller = name, ?key, "write conflict; retrying");
                                queue.add(key.clone());
                            }
                            Err(e) => {
                                let delay = queue.retry(key.clone());
                                tracing::warn!(controller = name, ?key, error = %crate::error_chain(&e), ?delay, "reconcile failed; retrying");
                            }
                        }
                        queue.done(&key);
                        if report_queue_depth {
                            metrics.queue_depth(name, queue.len());
                        }
                    }
                }))
            })
            .collect();
        for worker in workers {
            let mut worker = worker;
            // Ended by the queue's shutdown; `worker` aborts it if this future is dropped first.
            let _ = (&mut worker.0).await;
        }
    }
}

#[cfg(test)]
mod tests {
    // Test code: a panic is how a step reports failure.
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{message}")]
    struct Failed {
        message: &'static str,
        conflict: bool,
    }

    impl ReconcileError for Failed {
        fn is_conflict(&self) -> bool {
            self.conflict
        }
    }

    fn controller(metrics: &Arc<ControllerMetrics>) -> Controller<&'static str> {
        let options = ControllerOptions {
            workers: 2,
            retry_base: Duration::from_millis(5),
            retry_max: Duration::from_millis(20),
            ..ControllerOptions::default()
        };
        Controller::new("test", &options, metrics.clone())
    }

    /// Waits until `seen` reaches `n`, as the workers run.
    async fn reaches(seen: &AtomicU32, n: u32) {
        tokio::time::timeout(Duration::from_secs(5), async {
            while seen.load(Ordering::SeqCst) < n {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await
        .unwrap();
    }

    #[tokio::test]
    async fn keys_are_reconciled_requeued_and_retried_as_the_reconcile_answers() {
        let metrics = Arc::new(ControllerMetrics::default());
        let c = controller(&metrics);
        let queue = c.queue().clone();
        let later = Arc::new(AtomicU32::new(0));
        let (done, again, failing, conflicting) = (
            Arc::new(AtomicU32::new(0)),
            Arc::new(AtomicU32::new(0)),
            Arc::new(AtomicU32::new(0)),
            Arc::new(AtomicU32::new(0)),
        );
        let counters = (
            done.clone(),
            again.clone(),
            failing.clone(),
            conflicting.clone(),
        );
        let counted_later = later.clone();
        let run = tokio::spawn(c.run(move |key: &'static str| {
            let (done, again, failing, conflicting) = counters.clone();
            let later = counted_later.clone();
            async move {
                match key {
                    "done" => {
                        done.fetch_add(1, Ordering::SeqCst);
                        Ok(Action::Done)
                    }
                    "again" => {
                        let n = again.fetch_add(1, Ordering::SeqCst);
                        Ok(if n < 2 {
                            Action::RequeueAfter(Duration::from_millis(5))
                        } else {
                            Action::Done
                        })
                    }
                    "later" => {
                        let n = later.fetch_add(1, Ordering::SeqCst);
                        Ok(if n < 2 {
                            Action::RequeueWithBackoff
                        } else {
                            Action::Done
                        })
                    }
                    "failing" => {
                        let n = failing.fetch_add(1, Ordering::SeqCst);
                        if n < 2 {
                            Err(Failed {
                                message: "refused",
                                conflict: false,
                            })
                        } else {
                            Ok(Action::Done)
                        }
                    }
                    _ => {
                        let n = conflicting.fetch_add(1, Ordering::SeqCst);
                        if n < 1 {
                            Err(Failed {
                                message: "conflict",
                                conflict: true,
                            })
                        } else {
                            Ok(Action::Done)
                        }
                    }
                }
            }
        }));
        for key in ["done", "done", "again", "later", "failing", "conflicting"] {
            queue.add(key);
        }
        reaches(&again, 3).await;
        reaches(&later, 3).await;
        reaches(&failing, 3).await;
        reaches(&conflicting, 2).await;
        reaches(&done, 1).await;
        assert_eq!(
            done.load(Ordering::SeqCst),
            1,
            "two adds of one key coalesce"
        );
        let text = metrics.render();
        for expected in [
            "flotilla_controller_reconciles_total{controller=\"test\",result=\"error\"} 3",
            "flotilla_controller_reconcile_duration_seconds_count{controller=\"test\"}",
            "flotilla_controller_queue_depth{controller=\"test\"}",
        ] {
            assert!(text.contains(expected), "{expected} missing in {text}");
        }
        queue.shut_down();
        tokio::time::timeout(Duration::from_secs(5), run)
            .await
            .unwrap()
            .unwrap();
    }
}
