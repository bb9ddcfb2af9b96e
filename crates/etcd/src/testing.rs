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

/// The files of an etcd cluster serving TLS and requiring client certificates.
pub struct TlsFiles {
    /// The CA that signed the members' serving certificates and the client's.
    pub ca_pem: Vec<u8>,
    /// A client certificate and key the members accept.
    pub client_cert_pem: Vec<u8>,
    pub client_key_pem: Vec<u8>,
    ca_file: PathBuf,
    cert_file: PathBuf,
    key_file: PathBuf,
}

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
    tls: Option<TlsFiles>,
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
        Self::start_with(size, false).await
    }

    /// Starts `size` members serving clients over TLS only and requiring a client
    /// certificate signed by the CA in [`EtcdCluster::tls`].
    pub async fn start_tls(size: usize) -> Self {
        Self::start_with(size, true).await
    }

    /// The TLS files of a cluster started with [`EtcdCluster::start_tls`].
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    async fn start_with(size: usize, tls: bool) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for etcd");
        let tls = tls.then(|| {
            let ca = flotilla_pki::CertificateAuthority::generate("etcd-test-ca").unwrap();
            let loopback = [std::net::IpAddr::from([127, 0, 0, 1])];
            let server = ca
                .issue_server("etcd", &["localhost".to_owned()], &loopback)
                .unwrap();
            let client = ca.issue_client("flotilla-apiserver", &[]).unwrap();
            let write = |name: &str, contents: &str| {
                let path = dir.path().join(name);
                std::fs::write(&path, contents).unwrap();
                path
            };
            TlsFiles {
                ca_pem: ca.cert_pem().as_bytes().to_vec(),
                client_cert_pem: client.cert_pem.into_bytes(),
                client_key_pem: client.key_pem.into_bytes(),
                ca_file: write("ca.crt", ca.cert_pem()),
                cert_file: write("server.crt", &server.cert_pem),
                key_file: write("server.key", &server.key_pem),
            }
        });
        let scheme = if tls.is_some() { "https" } else { "http" };
        let members: Vec<Member> = (0..size)
            .map(|i| Member {
                name: format!("m{i}"),
                client_url: format!("{scheme}://127.0.0.1:{}", free_port()),
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
            tls,
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
        let mut command = Command::new(etcd_bin());
        if let Some(tls) = &self.tls {
            command
                .arg(format!("--cert-file={}", tls.cert_file.display()))
                .arg(format!("--key-file={}", tls.key_file.display()))
                .arg(format!("--trusted-ca-file={}", tls.ca_file.display()))
                .arg("--client-cert-auth");
        }
        let child = command
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
            let client = Client::new(&self.connect_options(vec![m.client_url.clone()])).unwrap();
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

    /// How a client reaches `endpoints` of this cluster (with the client certificate when it
    /// serves TLS).
    pub fn connect_options(&self, endpoints: Vec<String>) -> ConnectOptions {
        ConnectOptions {
            endpoints,
            ca_pem: self.tls.as_ref().map(|t| t.ca_pem.clone()),
            client_identity: self
                .tls
                .as_ref()
                .map(|t| (t.client_cert_pem.clone(), t.client_key_pem.clone())),
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
