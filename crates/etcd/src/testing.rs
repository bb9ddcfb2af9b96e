//! Real etcd processes for tests: one member, or a cluster of several, on loopback ports
//! with data in a temporary directory. The `etcd` binary comes from `ETCD_BIN` or `PATH`
//! (the test command installs Debian's `etcd-server` when it is missing).

// Test support: a failure to start etcd is a test failure, reported with its cause.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::rpc::{Client, ConnectOptions};

struct Member {
    name: String,
    client_url: String,
    peer_url: String,
    data_dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// An etcd cluster of real processes, killed when dropped.
pub struct EtcdCluster {
    members: Vec<Member>,
    initial_cluster: String,
    _dir: tempfile::TempDir,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

fn etcd_bin() -> String {
    std::env::var("ETCD_BIN").unwrap_or_else(|_| "etcd".to_owned())
}

impl EtcdCluster {
    /// Starts `size` members and waits until they have elected a leader.
    pub async fn start(size: usize) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for etcd");
        let members: Vec<Member> = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("http://127.0.0.1:{}", free_port()),
                peer_url: format!("http://127.0.0.1:{}", free_port()),
                data_dir: dir.path().join(format!("m{i}")),
                log: dir.path().join(format!("m{i}.log")),
                child: None,
            })
            .collect();
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}={}", m.name, m.peer_url))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Self {
            members,
            initial_cluster,
            _dir: dir,
        };
        for i in 0..size {
            cluster.spawn(i);
        }
        cluster.wait_ready().await;
        cluster
    }

    fn spawn(&mut self, i: usize) {
        let initial_cluster = self.initial_cluster.clone();
        let m = &mut self.members[i];
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&m.log)
            .expect("the etcd log file");
        let child = Command::new(etcd_bin())
            .arg(format!("--name={}", m.name))
            .arg(format!("--data-dir={}", m.data_dir.display()))
            .arg(format!("--listen-client-urls={}", m.client_url))
            .arg(format!("--advertise-client-urls={}", m.client_url))
            .arg(format!("--listen-peer-urls={}", m.peer_url))
            .arg(format!("--initial-advertise-peer-urls={}", m.peer_url))
            .arg(format!("--initial-cluster={initial_cluster}"))
            .arg("--initial-cluster-state=new")
            .arg("--initial-cluster-token=flotilla-test")
            .arg("--logger=zap")
            .arg("--log-level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the etcd log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "starting {} (install Debian's etcd-server, or set ETCD_BIN): {e}",
                    etcd_bin()
                )
            });
        m.child = Some(child);
    }

    /// Waits until every running member answers and the cluster has a leader.
    pub async fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for m in self.members.iter().filter(|m| m.child.is_some()) {
            let client = Client::new(&ConnectOptions {
                endpoints: vec![m.client_url.clone()],
                ..ConnectOptions::default()
            })
            .unwrap();
            loop {
                match client.status().await {
                    Ok(status) if status.leader != 0 => break,
                    other => {
                        assert!(
                            Instant::now() < deadline,
                            "etcd member {} not ready: {:?}; log:\n{}",
                            m.name,
                            other.map(|s| s.leader),
                            std::fs::read_to_string(&m.log).unwrap_or_default()
                        );
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            }
        }
    }

    /// The client URLs of every member (running or not).
    pub fn endpoints(&self) -> Vec<String> {
        self.members.iter().map(|m| m.client_url.clone()).collect()
    }

    /// `--etcd-servers` for a server command line.
    pub fn servers_flag(&self) -> String {
        self.endpoints().join(",")
    }

    /// kill -9 of member `i`.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts member `i` again on its data directory.
    pub async fn restart(&mut self, i: usize) {
        self.kill(i);
        self.spawn(i);
        self.wait_ready().await;
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill(i);
        }
    }
}
