//! Background tasks with a lifecycle: one [`Tasks`] per server (or process) owns a
//! cancellation token and tracks every task spawned through it, so stopping is one call that
//! cancels them all and waits until they have ended.
//!
//! ```text
//!  Tasks::spawn(name, fut) ──> tokio task: select { token cancelled => end, fut => end }
//!  Tasks::shutdown(grace)  ──> cancel token -> wait for every task (grace) -> abort the rest
//! ```
//!
//! Sets nest: [`Tasks::child`] gives a component its own set whose token is cancelled with
//! its parent's, so a process stops everything with one call and a component alone with
//! another. [`AbortOnDrop`] is for a task owned by another task's state (a watch per
//! cluster) that must end when its owner drops it.
//!
//! A task is dropped at its next `.await` once the token fires: every loop spawned here
//! rebuilds its state from storage when it starts, so stopping between two awaits loses
//! nothing a restart would not redo. A task that does not end within the grace period (one
//! stuck in blocking code) is logged by name and aborted.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::task::{AbortHandle, JoinHandle};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How long [`Tasks::shutdown`] waits for tasks once cancelled, by default.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long aborted tasks get to unwind after the grace period.
const ABORT_GRACE: Duration = Duration::from_secs(1);

/// A set of background tasks sharing one cancellation token. Cloning shares the set.
#[derive(Clone, Default)]
pub struct Tasks {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    token: CancellationToken,
    tracker: TaskTracker,
    /// The running tasks by id.
    live: Mutex<BTreeMap<u64, LiveTask>>,
    next_id: AtomicU64,
}

/// A running task: its name (for logs) and how to abort it (once spawned).
type LiveTask = (Cow<'static, str>, Option<AbortHandle>);

/// Removes a task from the live set when its future is dropped (done, cancelled or aborted).
struct LiveGuard {
    inner: Arc<Inner>,
    id: u64,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.inner.live.lock().remove(&self.id);
    }
}

/// A task aborted when dropped, so the state owning it ends it with itself.
#[derive(Debug)]
pub struct AbortOnDrop(pub JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Tasks {
    pub fn new() -> Self {
        Self::default()
    }

    /// A new set whose token is cancelled when this set's is (a component's tasks under
    /// its process's); shutting the child down leaves the parent running.
    pub fn child(&self) -> Self {
        Self {
            inner: Arc::new(Inner {
                token: self.inner.token.child_token(),
                tracker: TaskTracker::new(),
                live: Mutex::new(BTreeMap::new()),
                next_id: AtomicU64::new(0),
            }),
        }
    }

    /// The token every task of this set ends on; hand it to work that must stop with them.
    pub fn token(&self) -> CancellationToken {
        self.inner.token.clone()
    }

    /// Whether shutdown has begun.
    pub fn is_cancelled(&self) -> bool {
        self.inner.token.is_cancelled()
    }

    /// Runs `task` in the background until it ends or the token fires. After shutdown has
    /// begun nothing is started (false is returned).
    pub fn spawn<F>(&self, name: impl Into<Cow<'static, str>>, task: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let token = self.inner.token.clone();
        self.track(name.into(), async move {
            tokio::select! {
                biased;
                _ = token.cancelled() => {}
                _ = task => {}
            }
        })
    }

    /// Takes a task spawned elsewhere (by a library that hands back its `JoinHandle`) into
    /// the set: when the token fires it is aborted, and shutdown waits until it has ended.
    pub fn adopt(&self, name: impl Into<Cow<'static, str>>, mut handle: JoinHandle<()>) -> bool {
        let token = self.inner.token.clone();
        let abort = handle.abort_handle();
        let adopted = self.track(name.into(), async move {
            tokio::select! {
                biased;
                _ = token.cancelled() => {
                    handle.abort();
                    // The JoinError of an aborted task is the expected end.
                    let _ = handle.await;
                }
                _ = &mut handle => {}
            }
        });
        if !adopted {
            abort.abort();
        }
        adopted
    }

    fn track<F>(&self, name: Cow<'static, str>, task: F) -> bool
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.is_cancelled() {
            tracing::debug!(task = %name, "not starting a task: shutting down");
            return false;
        }
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let guard = LiveGuard {
            inner: self.inner.clone(),
            id,
        };
        // The entry exists before the task does, so a task that ends at once leaves nothing
        // behind; the lock is not held across the spawn (a runtime shutting down drops the
        // future, and with it the guard, inside `spawn`).
        self.inner.live.lock().insert(id, (name, None));
        let handle = self.inner.tracker.spawn(async move {
            let _guard = guard;
            task.await;
        });
        if let Some(entry) = self.inner.live.lock().get_mut(&id) {
            entry.1 = Some(handle.abort_handle());
        }
        true
    }

    /// How many tasks are running.
    pub fn live(&self) -> usize {
        self.inner.live.lock().len()
    }

    /// The names of the running tasks, for logs and tests.
    pub fn live_names(&self) -> Vec<String> {
        self.inner
            .live
            .lock()
            .values()
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// Cancels every task and waits until all have ended; those still running after `grace`
    /// are logged and aborted. Tasks spawned later are refused.
    pub async fn shutdown(&self, grace: Duration) {
        self.inner.token.cancel();
        self.inner.tracker.close();
        if tokio::time::timeout(grace, self.inner.tracker.wait())
            .await
            .is_ok()
        {
            return;
        }
        let stuck: Vec<(String, AbortHandle)> = self
            .inner
            .live
            .lock()
            .values()
            .filter_map(|(name, handle)| Some((name.to_string(), handle.clone()?)))
            .collect();
        for (name, handle) in &stuck {
            tracing::warn!(task = %name, ?grace, "background task did not stop; aborting it");
            handle.abort();
        }
        if tokio::time::timeout(ABORT_GRACE, self.inner.tracker.wait())
            .await
            .is_err()
        {
            tracing::error!(tasks = ?self.live_names(), "background tasks survived being aborted");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn adopted_tasks_are_aborted_and_joined() {
        let tasks = Tasks::new();
        let (ended_tx, mut ended_rx) = tokio::sync::oneshot::channel::<()>();
        struct Ended(Option<tokio::sync::oneshot::Sender<()>>);
        impl Drop for Ended {
            fn drop(&mut self) {
                if let Some(tx) = self.0.take() {
                    let _ = tx.send(());
                }
            }
        }
        let ended = Ended(Some(ended_tx));
        let handle = tokio::spawn(async move {
            let _ended = ended;
            std::future::pending::<()>().await;
        });
        assert!(tasks.adopt("library-task", handle));
        assert_eq!(tasks.live_names(), ["library-task"]);
        tasks.shutdown(Duration::from_secs(5)).await;
        assert_eq!(tasks.live(), 0);
        // Joined: the adopted task's state was dropped before shutdown returned.
        assert!(ended_rx.try_recv().is_ok());
    }

    #[tokio::test]
    async fn a_child_set_stops_with_its_parent_and_alone() {
        let parent = Tasks::new();
        let child = parent.child();
        child.spawn("in-child", std::future::pending());
        parent.spawn("in-parent", std::future::pending());
        let other = parent.child();
        other.spawn("in-other", std::future::pending());
        tokio::task::yield_now().await;
        // Shutting one child down leaves the parent and its other children running.
        other.shutdown(Duration::from_secs(5)).await;
        assert_eq!((other.live(), child.live(), parent.live()), (0, 1, 1));
        assert!(!parent.is_cancelled());
        // The parent's shutdown cancels the child's token too.
        parent.shutdown(Duration::from_secs(5)).await;
        assert!(child.is_cancelled());
        child.shutdown(Duration::from_secs(5)).await;
        assert_eq!(child.live(), 0);
    }

    #[tokio::test]
    async fn shutdown_cancels_and_joins_every_task() {
        let tasks = Tasks::new();
        let (ended_tx, mut ended_rx) = tokio::sync::mpsc::unbounded_channel::<&str>();
        /// Reports when the task holding it is dropped, however it ended.
        struct Ended(
            &'static str,
            tokio::sync::mpsc::UnboundedSender<&'static str>,
        );
        impl Drop for Ended {
            fn drop(&mut self) {
                let _ = self.1.send(self.0);
            }
        }
        for name in ["a", "b"] {
            let ended = Ended(name, ended_tx.clone());
            tasks.spawn(name, async move {
                let _ended = ended;
                std::future::pending::<()>().await;
            });
        }
        tasks.spawn("forever", std::future::pending());
        tokio::task::yield_now().await;
        assert_eq!(tasks.live(), 3);
        tasks.shutdown(Duration::from_secs(5)).await;
        assert_eq!(tasks.live(), 0);
        assert!(tasks.is_cancelled());
        drop(ended_tx);
        let mut ended = Vec::new();
        while let Some(name) = ended_rx.recv().await {
            ended.push(name);
        }
        ended.sort_unstable();
        assert_eq!(ended, ["a", "b"]);
        // Nothing starts once stopped.
        assert!(!tasks.spawn("late", async {}));
        let late = tokio::spawn(std::future::pending::<()>());
        assert!(!tasks.adopt("late", late));
        assert_eq!(tasks.live(), 0);
    }

    #[tokio::test]
    async fn finished_tasks_leave_the_live_set() {
        let tasks = Tasks::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn("short", async move {
            let _ = tx.send(());
        });
        let _ = rx.await;
        // The task's guard drops right after it sends; shutdown joins it either way.
        tasks.shutdown(Duration::from_secs(5)).await;
        assert_eq!(tasks.live(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_returns_once_a_task_slower_than_the_grace_period_is_gone() {
        let tasks = Tasks::new();
        // Ignores cancellation: the select arm only wins at an await, and this one blocks a
        // worker thread briefly before awaiting forever in a way that never sees the token.
        tasks.spawn("stubborn", async {
            std::thread::sleep(Duration::from_millis(300));
            std::future::pending::<()>().await;
        });
        tokio::task::yield_now().await;
        tasks.shutdown(Duration::from_millis(50)).await;
        assert_eq!(tasks.live(), 0, "still running: {:?}", tasks.live_names());
    }
}
