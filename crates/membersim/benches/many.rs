//! Starts many in-memory simulated members in one process (default 200 clusters of 10
//! nodes) and prints how long that took and the process's resident memory, before and after
//! the simulations settle. `cargo bench -p flotilla-membersim --bench many -- [CLUSTERS]
//! [NODES]`.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::time::{Duration, Instant};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(|a| a.parse::<u32>().expect("CLUSTERS and NODES are numbers"));
    let clusters = args.next().unwrap_or(200);
    let nodes = args.next().unwrap_or(10);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let dir = tempfile::tempdir().unwrap();
        let before = rss_kib();
        let mut opts = flotilla_membersim::ManyOptions::new("member", clusters, dir.path());
        opts.nodes = nodes;
        let started = Instant::now();
        let members = flotilla_membersim::start_many(opts).await.unwrap();
        let took = started.elapsed();
        let at_start = rss_kib();
        // Let every simulation write its nodes' status and go quiet.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let settled = rss_kib();
        let per = |kib: u64| (kib.saturating_sub(before)) as f64 / f64::from(clusters.max(1));
        println!("{clusters} clusters x {nodes} nodes started in {took:.2?}");
        println!(
            "RSS: {:.1} MiB at start ({:.0} KiB/member), {:.1} MiB settled ({:.0} KiB/member); {:.1} MiB before",
            at_start as f64 / 1024.0,
            per(at_start),
            settled as f64 / 1024.0,
            per(settled),
            before as f64 / 1024.0,
        );
        let stopping = Instant::now();
        members.stop_all().await;
        println!("stopped in {:.2?}", stopping.elapsed());
    });
}
