//! The work queue between the graph and the workers, with client-go's workqueue semantics:
//! an item queued twice is processed once; an item queued while being processed is processed
//! again afterwards (never by two workers at once); failures come back after a growing delay.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

struct State<T> {
    queue: VecDeque<T>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    failures: HashMap<T, u32>,
    shut_down: bool,
}

/// A deduplicating work queue.
pub struct Queue<T> {
    state: Mutex<State<T>>,
    notify: Notify,
    base_delay: Duration,
    max_delay: Duration,
}

impl<T: Clone + Eq + Hash + Send + 'static> Queue<T> {
    pub fn new(base_delay: Duration, max_delay: Duration) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                dirty: HashSet::new(),
                processing: HashSet::new(),
                failures: HashMap::new(),
                shut_down: false,
            }),
            notify: Notify::new(),
            base_delay,
            max_delay,
        })
    }

    /// Queues `item` unless it is already waiting.
    pub fn add(&self, item: T) {
        let mut s = self.state.lock();
        if s.shut_down || !s.dirty.insert(item.clone()) {
            return;
        }
        if !s.processing.contains(&item) {
            s.queue.push_back(item);
            drop(s);
            self.notify.notify_one();
        }
    }

    /// The next item; it is being processed until [`Queue::done`].
    pub async fn next(&self) -> T {
        loop {
            {
                let mut s = self.state.lock();
                if let Some(item) = s.queue.pop_front() {
                    s.dirty.remove(&item);
                    s.processing.insert(item.clone());
                    // Others may be waiting while more items are queued.
                    if !s.queue.is_empty() {
                        self.notify.notify_one();
                    }
                    return item;
                }
            }
            self.notify.notified().await;
        }
    }

    /// Processing of `item` ended; `ok` forgets its failures, else it comes back after
    /// `base × 2^failures` (at most `max_delay`).
    pub fn done(self: &Arc<Self>, item: T, ok: bool) {
        let retry_in = {
            let mut s = self.state.lock();
            s.processing.remove(&item);
            if s.dirty.contains(&item) {
                s.queue.push_back(item.clone());
                self.notify.notify_one();
            }
            if ok {
                s.failures.remove(&item);
                None
            } else {
                let n = s.failures.entry(item.clone()).or_insert(0);
                let delay = self
                    .base_delay
                    .saturating_mul(2u32.saturating_pow((*n).min(20)))
                    .min(self.max_delay);
                *n += 1;
                Some(delay)
            }
        };
        if let Some(delay) = retry_in {
            let queue = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                queue.add(item);
            });
        }
    }

    /// Items waiting (for metrics and tests).
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether nothing is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops accepting items (delayed retries then fall on the floor).
    pub fn shut_down(&self) {
        let mut s = self.state.lock();
        s.shut_down = true;
        s.queue.clear();
        s.dirty.clear();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn duplicates_collapse_and_busy_items_come_back_once() {
        let q = Queue::new(Duration::from_millis(1), Duration::from_millis(10));
        q.add("a");
        q.add("a");
        q.add("b");
        assert_eq!(q.len(), 2);
        let a = q.next().await;
        assert_eq!(a, "a");
        // Re-added while processing: not handed to another worker now...
        q.add("a");
        assert_eq!(q.next().await, "b");
        assert!(q.is_empty());
        q.done("b", true);
        // ...but after it is done.
        q.done("a", true);
        assert_eq!(q.next().await, "a");
        q.done("a", true);
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn failures_come_back_after_a_delay() {
        let q = Queue::new(Duration::from_millis(5), Duration::from_millis(20));
        q.add(1);
        let item = q.next().await;
        q.done(item, false);
        let again = tokio::time::timeout(Duration::from_secs(5), q.next())
            .await
            .unwrap();
        assert_eq!(again, 1);
        q.shut_down();
        q.add(2);
        assert!(q.is_empty());
    }
}
