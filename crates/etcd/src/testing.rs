//! Real etcd processes for tests: one member, or a cluster of several, on loopback ports
//! with data in a temporary directory, and a [`Relay`] in front of a member to cut or mute
//! a server's connections to it. The `etcd` binary comes from `ETCD_BIN` or `PATH` (the
//! test command installs Debian's `etcd-server` when it is missing).

// Test support: a failure to start etcd is a test failure, reported with its cause.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::rpc::{Client, ConnectOptions, StatusResponse};

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
    /// More `etcd` flags for every member (e.g. `--max-request-bytes=N`).
    extra_args: Vec<String>,
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
        Self::start_with(size, false, &[]).await
    }

    /// Starts `size` members with more `etcd` flags (e.g. `--max-request-bytes=N`).
    pub async fn start_with_args(size: usize, args: &[&str]) -> Self {
        Self::start_with(size, false, args).await
    }

    /// Starts `size` members serving clients over TLS only and requiring a client
    /// certificate signed by the CA in [`EtcdCluster::tls`].
    pub async fn start_tls(size: usize) -> Self {
        Self::start_with(size, true, &[]).await
    }

    /// The TLS files of a cluster started with [`EtcdCluster::start_tls`].
    pub fn tls(&self) -> Option<&TlsFiles> {
        self.tls.as_ref()
    }

    async fn start_with(size: usize, tls: bool, extra_args: &[&str]) -> Self {
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
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
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
            .args(&self.extra_args)
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
            ..ConnectOptions::default()
        }
    }

    /// What running member `i` says of itself now (its id in the header, its leader), or
    /// `None` when it does not answer at once (down, or without a leader).
    pub async fn member_status(&self, i: usize) -> Option<StatusResponse> {
        self.members[i].child.as_ref()?;
        let mut opts = self.connect_options(vec![self.members[i].client_url.clone()]);
        opts.request_timeout = Duration::from_millis(200);
        Client::new(&opts).ok()?.status().await.ok()
    }

    /// The index of the member that leads now, as the running members see it (waits up to
    /// 30 s for one to be elected).
    pub async fn leader(&self) -> usize {
        self.wait_for_leader(None).await
    }

    /// Waits until the running members follow a leader other than member `old` (after it was
    /// killed): the new leader's index, as soon as one reports it (polled every 10 ms, so a
    /// test can time the election).
    pub async fn wait_for_new_leader(&self, old: usize) -> usize {
        self.wait_for_leader(Some(old)).await
    }

    async fn wait_for_leader(&self, not: Option<usize>) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut ids = vec![None; self.members.len()];
        loop {
            for i in 0..self.members.len() {
                let Some(status) = self.member_status(i).await else {
                    continue;
                };
                ids[i] = status.header.as_ref().map(|h| h.member_id);
                if status.leader == 0 {
                    continue;
                }
                if let Some(leader) = ids.iter().position(|id| *id == Some(status.leader))
                    && Some(leader) != not
                    && self.members[leader].child.is_some()
                {
                    return leader;
                }
            }
            assert!(
                Instant::now() < deadline,
                "no etcd leader (other than {not:?}) within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
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

/// What a [`Relay`] does with its connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayState {
    /// Passes bytes both ways.
    Open,
    /// Passes requests to the member and drops its answers: a call is applied and lost in
    /// flight.
    Muted,
    /// Closes open connections and refuses new ones: the member is unreachable.
    Cut,
}

/// A loopback relay to one etcd member, to partition one server from it.
pub struct Relay {
    url: String,
    state: tokio::sync::watch::Sender<RelayState>,
}

impl Relay {
    /// A relay to the member at `target` (`http://host:port`), open.
    pub async fn start(target: &str) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let target = target.trim_start_matches("http://").to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (state, watch) = tokio::sync::watch::channel(RelayState::Open);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let mut state = watch.clone();
                if *state.borrow_and_update() == RelayState::Cut {
                    continue;
                }
                let target = target.clone();
                tokio::spawn(async move {
                    let Ok(outbound) = tokio::net::TcpStream::connect(&target).await else {
                        return;
                    };
                    let (mut from_client, mut to_client) = inbound.into_split();
                    let (mut from_member, mut to_member) = outbound.into_split();
                    let answers = state.clone();
                    let down = async move {
                        let mut buf = vec![0u8; 64 << 10];
                        loop {
                            let n = from_member.read(&mut buf).await?;
                            if n == 0 {
                                return Ok::<_, std::io::Error>(());
                            }
                            if *answers.borrow() == RelayState::Open {
                                to_client.write_all(&buf[..n]).await?;
                            }
                        }
                    };
                    tokio::select! {
                        _ = tokio::io::copy(&mut from_client, &mut to_member) => {}
                        _ = down => {}
                        _ = state.wait_for(|s| *s == RelayState::Cut) => {}
                    }
                });
            }
        });
        Self { url, state }
    }

    /// `http://127.0.0.1:PORT`, to use as the member's endpoint.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn set(&self, state: RelayState) {
        self.state.send_replace(state);
    }
}

/// A write a [`SteadyWriter`] was told succeeded.
#[derive(Clone, Debug)]
pub struct Acked {
    pub name: String,
    /// The version it was written at (its resourceVersion).
    pub version: String,
    /// When the answer came.
    pub at: Instant,
}

/// A writer for fault tests: makes write `n` for n = 0, 1, ..., one after another, each as
/// soon as the previous one is answered, until stopped, and keeps what it was told.
pub struct SteadyWriter {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    acked: tokio::sync::watch::Receiver<Vec<Acked>>,
    task: tokio::task::JoinHandle<Vec<(String, String)>>,
}

impl SteadyWriter {
    /// Starts writing: `write(n)` answers write `n`'s name and its version, or an error.
    pub fn start<F, Fut>(mut write: F) -> Self
    where
        F: FnMut(u64) -> Fut + Send + 'static,
        Fut: Future<Output = (String, Result<String, String>)> + Send,
    {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, acked) = tokio::sync::watch::channel(Vec::new());
        let stopped = std::sync::Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut failed = Vec::new();
            let mut n = 0;
            while !stopped.load(std::sync::atomic::Ordering::Relaxed) {
                match write(n).await {
                    (name, Ok(version)) => tx.send_modify(|a| {
                        a.push(Acked {
                            name,
                            version,
                            at: Instant::now(),
                        })
                    }),
                    (name, Err(e)) => failed.push((name, e)),
                }
                n += 1;
            }
            failed
        });
        Self { stop, acked, task }
    }

    /// How many writes were acknowledged so far.
    pub fn acked(&self) -> usize {
        self.acked.borrow().len()
    }

    /// When the `i`th acknowledged write was answered.
    pub fn acked_at(&self, i: usize) -> Instant {
        self.acked.borrow()[i].at
    }

    /// Waits until `n` writes in all have been acknowledged (at most 90 s: `what` says which
    /// wait failed).
    pub async fn wait_acked(&mut self, n: usize, what: &str) {
        tokio::time::timeout(
            Duration::from_secs(90),
            self.acked.wait_for(|a| a.len() >= n),
        )
        .await
        .unwrap_or_else(|_| panic!("{what}: {n} writes acknowledged within 90 s"))
        .unwrap();
    }

    /// Stops: the acknowledged writes, in order, and the failed ones with their errors.
    pub async fn stop(self) -> (Vec<Acked>, Vec<(String, String)>) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let failed = self.task.await.unwrap();
        let acked = self.acked.borrow().clone();
        (acked, failed)
    }

    /// The longest time between two acknowledged writes of `acked` that followed each other,
    /// and when the later one was answered: the stall a fault caused, and when it ended.
    pub fn longest_gap(acked: &[Acked]) -> Option<(Duration, Instant)> {
        acked
            .windows(2)
            .map(|w| (w[1].at - w[0].at, w[1].at))
            .max_by_key(|(gap, _)| *gap)
    }
}
