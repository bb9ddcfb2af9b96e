//! What the journeys, examples and README tests share about `flotilla local-up`'s default
//! members: starting it with fast failure detection, one kubectl per member (each member's
//! own kubeconfig under `DATA/members/`), the replicas of a Deployment per member, and
//! failing a member through local-up's `--unreachable-file` (default `DATA/unreachable`).
//!
//! Included with `#[path = "support/members.rs"] mod members;` next to `mod support;`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::support::{
    ApiserverProcess, FAST_FAILURE, Kubectl, eventually, kubectl_binary, start_local_up,
};

/// local-up's default members.
pub const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

/// How long a propagation or a failover may take in these tests.
pub const WAIT: Duration = Duration::from_secs(120);

/// `flotilla local-up` with its three default members and [`FAST_FAILURE`], in `data`.
pub fn start_default_local_up(data: &Path) -> ApiserverProcess {
    let mut args = vec!["--members", "3"];
    args.extend_from_slice(FAST_FAILURE);
    start_local_up(data, &args)
}

/// [`start_default_local_up`] in `dir/flotilla` with kubectls for it (caches in
/// `dir/cache`), once every member is Ready.
pub fn up_and_ready(dir: &Path) -> (ApiserverProcess, Clusters) {
    let data = dir.join("flotilla");
    let up = start_default_local_up(&data);
    let c = Clusters::new(&data, &up.kubeconfig, &dir.join("cache"));
    c.wait_all_ready();
    (up, c)
}

/// A kubectl for the host and one for each default member.
pub struct Clusters {
    pub host: Kubectl,
    pub members: Vec<(String, Kubectl)>,
    pub data: PathBuf,
}

impl Clusters {
    /// Kubectls for the local-up in `data` (host kubeconfig `host_kubeconfig`), with discovery
    /// caches under `cache`.
    pub fn new(data: &Path, host_kubeconfig: &Path, cache: &Path) -> Self {
        let kubectl = kubectl_binary("kubectl");
        let members = MEMBERS
            .iter()
            .map(|m| {
                let kc = data.join("members").join(format!("{m}.kubeconfig"));
                (
                    m.to_string(),
                    Kubectl::new(kubectl.clone(), &kc, &cache.join(m)),
                )
            })
            .collect();
        Self {
            host: Kubectl::new(kubectl, host_kubeconfig, &cache.join("host")),
            members,
            data: data.to_path_buf(),
        }
    }

    /// The member's kubectl.
    pub fn member(&self, name: &str) -> &Kubectl {
        &self.members.iter().find(|(n, _)| n == name).unwrap().1
    }

    /// `spec.replicas` of Deployment `ns/name` in each member that has it (members in
    /// `skip` are not asked: a failed member cannot answer).
    pub fn replicas(
        &self,
        ns: &str,
        name: &str,
        skip: &[&str],
    ) -> Result<BTreeMap<String, i64>, String> {
        let mut found = BTreeMap::new();
        for (m, k) in &self.members {
            if skip.contains(&m.as_str()) {
                continue;
            }
            if let Some(d) = k.try_get(&["deploy", "-n", ns, name])? {
                found.insert(m.clone(), d["spec"]["replicas"].as_i64().unwrap_or(0));
            }
        }
        Ok(found)
    }

    /// Waits until the per-member replicas of `ns/name` satisfy `ok`, returning them.
    pub fn wait_replicas(
        &self,
        ns: &str,
        name: &str,
        what: &str,
        ok: impl Fn(&BTreeMap<String, i64>) -> bool,
    ) -> BTreeMap<String, i64> {
        self.wait_replicas_skipping(ns, name, &[], what, ok)
    }

    /// [`Clusters::wait_replicas`] without asking the members in `skip`.
    pub fn wait_replicas_skipping(
        &self,
        ns: &str,
        name: &str,
        skip: &[&str],
        what: &str,
        ok: impl Fn(&BTreeMap<String, i64>) -> bool,
    ) -> BTreeMap<String, i64> {
        eventually(WAIT, what, || {
            let r = self.replicas(ns, name, skip)?;
            if ok(&r) { Ok(r) } else { Err(format!("{r:?}")) }
        })
    }

    /// Waits until `kubectl get clusters` on the host shows every default member Ready.
    pub fn wait_all_ready(&self) {
        self.wait_ready(&MEMBERS, "True");
    }

    /// Waits until each of `names` has the READY column `ready` (`True`, `False`, `Unknown`).
    pub fn wait_ready(&self, names: &[&str], ready: &str) {
        eventually(WAIT, &format!("{names:?} READY={ready}"), || {
            let out = self.host.ok(&["get", "clusters", "--no-headers"]);
            let all = names.iter().all(|n| {
                out.lines().any(|l| {
                    let cols: Vec<&str> = l.split_whitespace().collect();
                    cols.first() == Some(n) && cols.get(3) == Some(&ready)
                })
            });
            if all { Ok(()) } else { Err(out) }
        });
    }

    /// Fails `names` (they refuse connections) through local-up's unreachable file; an
    /// empty list brings every member back.
    pub fn set_unreachable(&self, names: &[&str]) {
        let file = self.data.join("unreachable");
        if names.is_empty() {
            let _ = std::fs::remove_file(file);
        } else {
            std::fs::write(file, names.join("\n") + "\n").unwrap();
        }
    }

    /// The clusters in the host's ResourceBinding `ns/name` (`spec.clusters`), with replicas.
    pub fn binding_clusters(&self, ns: &str, name: &str) -> BTreeMap<String, i64> {
        let rb = self.host.get_json(&["rb", "-n", ns, name]);
        crate::support::binding_targets(&rb).into_iter().collect()
    }
}

/// The sum of per-member replicas.
pub fn total(r: &BTreeMap<String, i64>) -> i64 {
    r.values().sum()
}
