//! etcd as Flotilla's storage: [`EtcdBackend`] under the shared cache layer
//! ([`flotilla_storage::Cached`]), so several API server replicas can share one store
//! (DESIGN.md section 6).
//!
//! ```text
//!  create/update/delete ──► one etcd Txn (compare create/mod revision, put or delete)
//!                              └─ acknowledged once the cache applied the write's revision
//!  etcd ── one watch over the whole keyspace ──► cache (objects under `prefix`, history,
//!                                                watchers; other keys only move its revision)
//!  get / list of the current state ── linearizable revision from etcd (one call shared by
//!                                     every read waiting at that moment) ──► wait for the
//!                                     cache to reach it ──► serve from memory
//! ```
//!
//! resourceVersion is etcd's mod revision. Objects are stored without it and stamped with
//! it when read back, as kube-apiserver does. The watch covers the whole keyspace because
//! etcd's revision counts every key: a cache that saw only its prefix could not tell that it
//! had caught up with a revision produced by another prefix (the aggregated API server's,
//! sharing the etcd). Events of other prefixes only advance the cache's revision.
//!
//! - [`rpc`]: the etcd v3 API messages (no protoc needed to build) and a client that moves
//!   between members, rides out elections and bounds every call by its request timeout.
//! - [`backend`]: the backend (writes, and whether a write lost in flight was applied; the
//!   feeding watch; compaction).
//! - [`testing`] (feature `test-support`): real etcd processes on loopback ports, a relay to
//!   cut or mute a member, a steady writer, for tests.
//!
//! etcd's failures reach the API as kube-apiserver answers them: a call no member completed
//! in time is [`StorageError::Unavailable`] (503) or, when a write may have been applied,
//! [`StorageError::Timeout`] (504); an object over etcd's request limit is
//! [`StorageError::TooLarge`] (413).

use std::path::PathBuf;
use std::sync::Arc;

use flotilla_storage::{EmbeddedOptions, EmbeddedStorage, HistoryLimits, Storage, StorageError};

pub mod backend;
pub mod rpc;
#[cfg(any(test, feature = "test-support"))]
pub mod testing;

pub use backend::{EtcdBackend, EtcdOptions, EtcdStorage, open};

#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("etcd configuration: {0}")]
    Config(String),
    /// An answer of etcd that retrying cannot change.
    #[error("etcd: {0}")]
    Rpc(#[from] tonic::Status),
    /// No member took the call before its deadline, and none may have applied it.
    #[error("{0}")]
    Unavailable(String),
    /// The call ran out of time after an attempt that may have been applied.
    #[error("{0}")]
    Timeout(String),
    /// The request is over etcd's `--max-request-bytes`.
    #[error("etcd refused the request as too large: {0}")]
    TooLarge(String),
    #[error("etcd returned {0}")]
    Protocol(String),
    #[error("reading {path}: {source}")]
    ReadFile {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl From<&EtcdError> for StorageError {
    fn from(err: &EtcdError) -> Self {
        match err {
            EtcdError::Unavailable(message) => StorageError::Unavailable(message.clone()),
            EtcdError::Timeout(message) => StorageError::Timeout(message.clone()),
            EtcdError::TooLarge(_) => StorageError::TooLarge(err.to_string()),
            other => StorageError::Backend(other.to_string()),
        }
    }
}

impl From<EtcdError> for StorageError {
    fn from(err: EtcdError) -> Self {
        StorageError::from(&err)
    }
}

/// Which store an API server keeps its objects in (`--storage`).
#[derive(Debug, Clone)]
pub enum StorageChoice {
    /// The embedded redb store in the server's data directory (the default).
    Embedded,
    /// A shared etcd cluster.
    Etcd(EtcdOptions),
}

impl StorageChoice {
    /// Opens the chosen store: embedded in `data_dir`, or etcd (connecting and loading its
    /// objects under the configured prefix).
    pub async fn open(
        &self,
        data_dir: &std::path::Path,
        history: usize,
    ) -> Result<Arc<dyn Storage>, StorageError> {
        Ok(match self {
            StorageChoice::Embedded => Arc::new(EmbeddedStorage::open(
                data_dir,
                EmbeddedOptions {
                    history,
                    ..EmbeddedOptions::default()
                },
            )?),
            StorageChoice::Etcd(opts) => {
                let opts = EtcdOptions {
                    history: HistoryLimits {
                        events: history,
                        ..opts.history
                    },
                    ..opts.clone()
                };
                Arc::new(open(opts).await?)
            }
        })
    }
}
