//! The aggregated API server as two replicas behind its APIService: each `flotilla
//! aggregated-apiserver` process writes its own EndpointSlice of the Service, the host's
//! aggregator spreads requests over both, and after one is killed with SIGKILL every
//! `kubectl get clusters` through the host still answers, served by the other.
//!
//! In the first test each replica has its own embedded storage, which makes the replica that
//! served a read visible: a Cluster created directly in replica B is listed through the host
//! only when B answered. In the second they share one etcd, as replicas are meant to run: a
//! Cluster created through one is listed through the other, and through the host after
//! either is killed.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{Kubectl, eventually, flotilla_bin, kubectl_binary, start_apiserver};

const WAIT: Duration = Duration::from_secs(60);

/// A kubeconfig for the aggregated replica at `url`, as the host's admin (the replicas trust
/// the host's client CA) and trusting the replica's serving CA in `replica_dir`.
fn replica_kubeconfig(path: &Path, url: &str, host_dir: &Path, replica_dir: &Path) {
    let pki = host_dir.join("pki");
    std::fs::write(
        path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: replica
  cluster:
    server: {url}
    certificate-authority: {}
users:
- name: admin
  user:
    client-certificate: {}
    client-key: {}
contexts:
- name: replica
  context: {{cluster: replica, user: admin}}
current-context: replica
",
            replica_dir.join("pki/ca.crt").display(),
            pki.join("admin.crt").display(),
            pki.join("admin.key").display(),
        ),
    )
    .unwrap();
}

fn cluster_names(k: &Kubectl) -> Result<Vec<String>, String> {
    let out = k.run(&["get", "clusters", "-o", "name"]);
    if !out.status.success() {
        return Err(out.stderr);
    }
    Ok(out
        .stdout
        .lines()
        .map(|l| {
            l.trim_start_matches("cluster.cluster.karmada.io/")
                .to_string()
        })
        .collect())
}

const MARKER: &str = "only-in-b";

#[test]
fn a_killed_aggregated_replica_is_not_noticed_by_clients() {
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let host = start_apiserver(&host_dir);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    let (a_dir, b_dir) = (dir.path().join("agg-a"), dir.path().join("agg-b"));
    let mut a = replica(&host_dir, &a_dir, &[]);
    // Replicas share their serving certificate (one caBundle on the APIService).
    std::fs::create_dir_all(b_dir.join("pki")).unwrap();
    for entry in std::fs::read_dir(a_dir.join("pki")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), b_dir.join("pki").join(entry.file_name())).unwrap();
    }
    let b = replica(&host_dir, &b_dir, &[]);

    let slices = k.get_json(&["endpointslices", "-n", "karmada-system"]);
    let addresses: Vec<String> = slices["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ports"][0]["port"].to_string())
        .collect();
    assert_eq!(
        addresses.len(),
        2,
        "one EndpointSlice per replica: {slices}"
    );

    // A Cluster only B stores (its own storage), created on B directly.
    let b_kubeconfig = dir.path().join("b.kubeconfig");
    replica_kubeconfig(&b_kubeconfig, &b.url, &host_dir, &b_dir);
    let kb = Kubectl::new(
        kubectl_binary("kubectl"),
        &b_kubeconfig,
        &dir.path().join("cache-b"),
    );
    let marker = dir.path().join("marker.json");
    std::fs::write(
        &marker,
        format!(
            r#"{{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster",
"metadata":{{"name":"{MARKER}"}},"spec":{{"syncMode":"Push","apiEndpoint":"https://127.0.0.1:1"}}}}"#
        ),
    )
    .unwrap();
    kb.ok(&["create", "-f", marker.to_str().unwrap()]);

    // Through the host, reads reach both replicas: some lists have the marker (B), some
    // not (A).
    let mut seen = (false, false);
    eventually(WAIT, "lists served by both replicas", || {
        let names = cluster_names(&k)?;
        if names.iter().any(|n| n == MARKER) {
            seen.1 = true;
        } else {
            seen.0 = true;
        }
        if seen.0 && seen.1 {
            Ok(())
        } else {
            Err(format!("served by A: {}, by B: {}", seen.0, seen.1))
        }
    });

    // A dies without a word: every read through the host still answers at once, from B.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    for i in 0..10 {
        let names = cluster_names(&k).unwrap_or_else(|e| panic!("read {i} after the kill: {e}"));
        assert_eq!(names, [MARKER], "read {i} after the kill");
    }
    let discovery = k.ok(&["api-resources", "--api-group", "cluster.karmada.io"]);
    assert!(discovery.contains("clusters"), "{discovery}");
    // Writes go to B too.
    let second = marker
        .to_str()
        .unwrap()
        .replace("marker.json", "second.json");
    std::fs::write(
        &second,
        std::fs::read_to_string(&marker)
            .unwrap()
            .replace(MARKER, "created-after-the-kill"),
    )
    .unwrap();
    k.ok(&["create", "-f", &second]);
    let names = cluster_names(&kb).unwrap();
    assert_eq!(names, ["created-after-the-kill", MARKER]);
    drop(b);
    drop(host);
}

/// A `flotilla aggregated-apiserver` replica; killed when dropped.
struct Replica {
    child: Child,
    url: String,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts an aggregated API server replica for the host in `host_dir` as its own component
/// user (only its own ClusterRole), its certificates in `data_dir` (and its objects, unless
/// `storage` says etcd), and waits for its `ready at URL` line.
fn replica(host_dir: &Path, data_dir: &Path, storage: &[&str]) -> Replica {
    std::fs::create_dir_all(data_dir).unwrap();
    let pki = host_dir.join("pki");
    let log = std::fs::File::create(data_dir.join("aggregated.log")).unwrap();
    let mut child = Command::new(flotilla_bin())
        .arg("aggregated-apiserver")
        .arg("--kubeconfig")
        .arg(host_dir.join("aggregated-apiserver.kubeconfig"))
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--secure-port", "0"])
        .arg("--client-ca-file")
        .arg(pki.join("ca.crt"))
        .arg("--requestheader-client-ca-file")
        .arg(pki.join("front-proxy-ca.crt"))
        .args(storage)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("ready at ").nth(1) {
                let _ = tx.send(rest.trim().to_string());
            }
        }
    });
    let url = rx.recv_timeout(WAIT).unwrap_or_else(|e| {
        panic!(
            "no ready line ({e}); log:\n{}",
            std::fs::read_to_string(data_dir.join("aggregated.log")).unwrap_or_default()
        )
    });
    Replica { child, url }
}

fn cluster_file(dir: &Path, name: &str) -> String {
    let path = dir.join(format!("{name}.json"));
    std::fs::write(
        &path,
        format!(
            r#"{{"apiVersion":"cluster.karmada.io/v1alpha1","kind":"Cluster",
"metadata":{{"name":"{name}"}},"spec":{{"syncMode":"Push","apiEndpoint":"https://127.0.0.1:1"}}}}"#
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn aggregated_replicas_on_one_etcd_serve_the_same_clusters_and_survive_a_kill() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let etcd = rt.block_on(flotilla_etcd::testing::EtcdCluster::start(1));
    let servers = etcd.servers_flag();
    let dir = tempfile::tempdir().unwrap();
    let host_dir = dir.path().join("host");
    let host = start_apiserver(&host_dir);
    let k = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    let (a_dir, b_dir) = (dir.path().join("agg-a"), dir.path().join("agg-b"));
    let on_etcd = ["--storage", "etcd", "--etcd-servers", servers.as_str()];
    let mut a = replica(&host_dir, &a_dir, &on_etcd);
    std::fs::create_dir_all(b_dir.join("pki")).unwrap();
    for entry in std::fs::read_dir(a_dir.join("pki")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), b_dir.join("pki").join(entry.file_name())).unwrap();
    }
    let b = replica(&host_dir, &b_dir, &on_etcd);
    let direct = |name: &str, replica: &Replica, replica_dir: &Path| {
        let path = dir.path().join(format!("{name}.kubeconfig"));
        replica_kubeconfig(&path, &replica.url, &host_dir, replica_dir);
        Kubectl::new(
            kubectl_binary("kubectl"),
            &path,
            &dir.path().join(format!("cache-{name}")),
        )
    };
    let (ka, kb) = (direct("a", &a, &a_dir), direct("b", &b, &b_dir));

    // Written through A, read through B (a consistent list waits for etcd's revision).
    ka.ok(&["create", "-f", &cluster_file(dir.path(), "through-a")]);
    assert_eq!(cluster_names(&kb).unwrap(), ["through-a"]);
    kb.ok(&["create", "-f", &cluster_file(dir.path(), "through-b")]);
    assert_eq!(cluster_names(&ka).unwrap(), ["through-a", "through-b"]);
    // Through the host, whichever replica answers.
    for _ in 0..4 {
        assert_eq!(cluster_names(&k).unwrap(), ["through-a", "through-b"]);
    }

    // A kube-rs reflector of Clusters through the host: its watch is on one replica or the
    // other, and re-established (resuming at its resourceVersion, an etcd revision both
    // replicas share) when that one dies.
    let client = rt.block_on(support::kube_client(&host.kubeconfig, None));
    let (reader, writer) = kube::runtime::reflector::store::<flotilla_karmada_api::Cluster>();
    let watch = kube::runtime::reflector(
        writer,
        kube::runtime::WatchStreamExt::default_backoff(kube::runtime::watcher(
            kube::Api::all(client),
            Default::default(),
        )),
    );
    let _reflector = rt.spawn(futures::StreamExt::for_each(watch, |_| async {}));
    let reflected = || {
        let mut names: Vec<String> = reader
            .state()
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        names.sort();
        names
    };
    eventually(WAIT, "the reflector has both Clusters", || {
        let names = reflected();
        if names == ["through-a", "through-b"] {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    });

    // A is killed: reads and writes through the host go on, served by B.
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed = std::time::Instant::now();
    for i in 0..10 {
        let names = cluster_names(&k).unwrap_or_else(|e| panic!("read {i} after the kill: {e}"));
        assert_eq!(names, ["through-a", "through-b"], "read {i} after the kill");
    }
    k.ok(&["create", "-f", &cluster_file(dir.path(), "after-the-kill")]);
    assert_eq!(
        cluster_names(&kb).unwrap(),
        ["after-the-kill", "through-a", "through-b"]
    );
    eventually(
        WAIT,
        "the reflector sees the Cluster created after the kill",
        || {
            let names = reflected();
            if names == ["after-the-kill", "through-a", "through-b"] {
                Ok(())
            } else {
                Err(format!("{names:?}"))
            }
        },
    );
    println!(
        "the reflector had the Cluster created after the kill {:.1} s after the kill",
        killed.elapsed().as_secs_f64()
    );
    drop(b);
    drop(host);
    drop(etcd);
}
