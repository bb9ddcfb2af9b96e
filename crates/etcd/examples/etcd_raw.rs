//! How fast etcd itself takes writes on this machine, through Flotilla's etcd client and
//! through the storage layer over it, with 16 concurrent writers: the ceiling the API
//! server's creates on etcd are measured against. Needs `etcd` on PATH.
//!
//! Run: `cargo run --release -p flotilla-etcd --features test-support --example etcd_raw`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use flotilla_etcd::rpc::{Compare, PutRequest, RequestOp, TxnRequest, request_op};
use flotilla_etcd::testing::EtcdCluster;
use flotilla_storage::Storage;

const WRITERS: usize = 16;
const PHASE: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let etcd = EtcdCluster::start(1).await;
    let client = flotilla_etcd::rpc::Client::new(&etcd.connect_options(etcd.endpoints()))?;
    let value = bytes::Bytes::from(vec![b'x'; 1600]);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let client = client.clone();
        let value = value.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while started.elapsed() < PHASE {
                let key = format!("/raw/{w}/{n}").into_bytes();
                let txn = TxnRequest {
                    compare: vec![Compare::absent(&key)],
                    success: vec![RequestOp {
                        request: Some(request_op::Request::Put(PutRequest {
                            key,
                            value: value.clone(),
                        })),
                    }],
                    failure: vec![],
                };
                if client.txn(txn).await.is_ok() {
                    n += 1;
                }
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await?;
    }
    println!(
        "etcd transactions (create of 1.6 KB, {WRITERS} writers, one client): {:.0}/s",
        total as f64 / started.elapsed().as_secs_f64()
    );

    let storage = Arc::new(
        flotilla_etcd::open(flotilla_etcd::EtcdOptions::new(etcd.endpoints(), "/bench")).await?,
    );
    let started = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let storage = Arc::clone(&storage);
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while started.elapsed() < PHASE {
                let object = serde_json::json!({"metadata": {"name": format!("o{n}")}, "data": {"x": "y".repeat(1500)}});
                if storage.create(&format!("/configmaps/{w}/{n}"), object).await.is_ok() {
                    n += 1;
                }
            }
            n
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await?;
    }
    println!(
        "storage creates on etcd (acknowledged once the cache applied them, {WRITERS} writers): {:.0}/s",
        total as f64 / started.elapsed().as_secs_f64()
    );
    Ok(())
}
