//! The storage conformance suite on real etcd (one member per test, on loopback ports).

// Test code: a failed expectation is a panic with the value in the message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use flotilla_etcd::testing::EtcdCluster;
use flotilla_etcd::{EtcdOptions, EtcdStorage};

/// A fresh store on a fresh single-member etcd; the etcd lives as long as the guard.
fn make() -> (EtcdStorage, EtcdCluster) {
    // The conformance macro builds stores synchronously; the test runs on a multi-thread
    // runtime, so block in place on its handle.
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(async {
            let etcd = EtcdCluster::start(1).await;
            let storage = flotilla_etcd::open(EtcdOptions::new(etcd.endpoints(), "/flotilla-test"))
                .await
                .expect("open the etcd storage");
            (storage, etcd)
        })
    })
}

flotilla_storage::conformance_tests!(make);
