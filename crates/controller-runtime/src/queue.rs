//! A work queue keyed by object: repeated adds of a key coalesce into one pending item, a key
//! is never handed to two workers at once (an add while it is processed re-queues it after
//! `done`), and failures re-add it after an exponentially growing delay.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

struct State<K> {
    queue: VecDeque<K>,
    /// Keys that are queued, or must be queued again once their processing ends.
    dirty: HashSet<K>,
    processing: HashSet<K>,
    failures: HashMap<K, u32>,
    /// Earliest pending delayed add per key (later delayed adds of the key are dropped).
    delayed: HashMap<K, Instant>,
}

/// The queue; share it as `Arc<WorkQueue<K>>`.
pub struct WorkQueue<K> {
    state: Mutex<State<K>>,
    notify: Notify,
    shutdown: watch::Sender<bool>,
    backoff_base: Duration,
    backoff_max: Duration,
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    /// An empty queue whose retries wait `backoff_base * 2^failures`, at most `backoff_max`.
    pub fn new(backoff_base: Duration, backoff_max: Duration) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                failures: HashMap::new(),
                delayed: HashMap::new(),
            }),
            notify: Notify::new(),
            shutdown: watch::channel(false).0,
            backoff_base,
            backoff_max,
        })
    }

    /// Queues `key` unless it is already pending.
    pub fn add(&self, key: K) {
        if *self.shutdown.borrow() {
            return;
        }
        let mut s = self.state.lock();
        if !s.dirty.insert(key.clone()) {
            return;
        }
        if !s.processing.contains(&key) {
            s.queue.push_back(key);
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Queues `key` after `delay` (an earlier pending delayed add of the key wins).
    pub fn add_after(self: &Arc<Self>, key: K, delay: Duration) {
        if delay.is_zero() {
            self.add(key);
            return;
        }
        let at = Instant::now() + delay;
        {
            let mut s = self.state.lock();
            match s.delayed.get(&key) {
                Some(existing) if *existing <= at => return,
                _ => {
                    s.delayed.insert(key.clone(), at);
                }
            }
        }
        let queue = Arc::clone(self);
        let mut shutdown = self.shutdown.subscribe();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep_until(at) => {
                    {
                        let mut s = queue.state.lock();
                        if s.delayed.get(&key) == Some(&at) {
                            s.delayed.remove(&key);
                        }
                    }
                    queue.add(key);
                }
                _ = shutdown.wait_for(|stop| *stop) => {}
            }
        });
    }

    /// Re-queues `key` after its backoff delay and counts one more failure.
    pub fn retry(self: &Arc<Self>, key: K) -> Duration {
        let delay = {
            let mut s = self.state.lock();
            let n = s.failures.entry(key.clone()).or_insert(0);
            let delay = backoff(self.backoff_base, self.backoff_max, *n);
            *n = n.saturating_add(1);
            delay
        };
        self.add_after(key, delay);
        delay
    }

    /// Forgets the failures of `key` (its next retry starts from the base delay again).
    pub fn forget(&self, key: &K) {
        self.state.lock().failures.remove(key);
    }

    /// Takes the next key; `None` once the queue is shut down.
    pub async fn pop(&self) -> Option<K> {
        loop {
            if *self.shutdown.borrow() {
                return None;
            }
            {
                let mut s = self.state.lock();
                if let Some(key) = s.queue.pop_front() {
                    s.dirty.remove(&key);
                    s.processing.insert(key.clone());
                    return Some(key);
                }
            }
            let mut shutdown = self.shutdown.subscribe();
            tokio::select! {
                _ = self.notify.notified() => {}
                _ = shutdown.wait_for(|stop| *stop) => return None,
            }
        }
    }

    /// Ends the processing of `key`; queues it again if it was added meanwhile.
    pub fn done(&self, key: &K) {
        let mut s = self.state.lock();
        s.processing.remove(key);
        if s.dirty.contains(key) {
            s.queue.push_back(key.clone());
            drop(s);
            self.notify.notify_one();
        }
    }

    /// Keys waiting (not counting those being processed or delayed).
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Wakes every waiting `pop` with `None`; later adds are ignored.
    pub fn shut_down(&self) {
        // Stored even when no `pop` is waiting: busy workers must see it when they come back.
        self.shutdown.send_replace(true);
        self.notify.notify_waiters();
    }
}

/// `base * 2^failures`, at most `max`.
pub fn backoff(base: Duration, max: Duration, failures: u32) -> Duration {
    let factor = 1u32.checked_shl(failures.min(31)).unwrap_or(u32::MAX);
    base.checked_mul(factor).unwrap_or(max).min(max)
}

#[cfg(test)]
mod tests {
    // Test code: a panic is how a step reports failure.
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let b = Duration::from_millis(100);
        let m = Duration::from_secs(30);
        assert_eq!(backoff(b, m, 0), Duration::from_millis(100));
        assert_eq!(backoff(b, m, 3), Duration::from_millis(800));
        assert_eq!(backoff(b, m, 20), m);
        assert_eq!(backoff(b, m, 200), m);
    }

    #[tokio::test]
    async fn repeated_adds_coalesce() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        assert_eq!(q.pop().await, Some("a"));
        assert_eq!(q.pop().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn an_add_during_processing_requeues_after_done() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.add("a");
        let k = q.pop().await.unwrap();
        q.add("a");
        // Not handed out twice while processing.
        assert!(q.is_empty());
        q.done(&k);
        assert_eq!(q.pop().await, Some("a"));
        q.done(&"a");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn retries_come_back_after_the_delay() {
        let q = WorkQueue::new(Duration::from_millis(20), Duration::from_secs(1));
        let start = Instant::now();
        assert_eq!(q.retry("a"), Duration::from_millis(20));
        assert_eq!(q.pop().await, Some("a"));
        assert!(start.elapsed() >= Duration::from_millis(20));
        q.done(&"a");
        assert_eq!(q.retry("a"), Duration::from_millis(40));
        q.forget(&"a");
        assert_eq!(q.retry("b"), Duration::from_millis(20));
    }

    #[tokio::test]
    async fn shutdown_while_every_worker_is_busy_still_ends_their_next_pop() {
        let q = WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.add("a");
        // The only worker is busy: nobody waits in `pop` when the queue shuts down.
        let busy = q.pop().await.unwrap();
        q.shut_down();
        q.done(&busy);
        let next = tokio::time::timeout(Duration::from_secs(2), q.pop()).await;
        assert_eq!(next, Ok(None), "a pop after shutdown must end");
    }

    #[tokio::test]
    async fn shutdown_wakes_waiters() {
        let q: Arc<WorkQueue<&str>> =
            WorkQueue::new(Duration::from_millis(1), Duration::from_millis(10));
        let q2 = q.clone();
        let waiter = tokio::spawn(async move { q2.pop().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        q.shut_down();
        assert_eq!(waiter.await.unwrap(), None);
        q.add("a");
        assert!(q.is_empty());
    }
}
