//! Many simulated members in one process ([`start_many`]) for scale tests, and the
//! `--unreachable-file` / `--unhealthy-file` switches `flotilla member-sim` polls for
//! failover tests ([`follow_failure_files`]).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use crate::{
    DEFAULT_WATCH_HISTORY, MemberError, MemberOptions, MemberPki, RunningMember, serving_hosts,
};

/// How often [`follow_failure_files`] looks at its files.
const FAILURE_POLL: Duration = Duration::from_millis(500);

/// How to run `count` simulated members named `<name_prefix>1` .. `<name_prefix><count>`,
/// each on its own port (picked by the OS) with its files under `<data_dir>/<name>/`.
#[derive(Debug, Clone)]
pub struct ManyOptions {
    pub name_prefix: String,
    pub count: u32,
    /// Holds the shared certificates (`pki/`) and a directory per member.
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// Keep every member's objects in memory (the default: scale runs need no durability).
    pub in_memory: bool,
    /// Per member: node count and per-node capacity.
    pub nodes: u32,
    pub node_cpu: String,
    pub node_memory: String,
    pub node_pods: u32,
    pub ready_delay: Duration,
    /// Watch events each member keeps.
    pub watch_history: usize,
    /// How many members start at once.
    pub parallelism: usize,
    /// Added to every request of every member (see [`crate::MemberOptions::latency`]).
    pub latency: Duration,
    /// Largest object each member stores, as encoded.
    pub max_object_bytes: usize,
    /// Each member runs the ServiceAccount token controller
    /// ([`crate::MemberOptions::token_controller`]).
    pub token_controller: bool,
    /// Images whose pull fails ([`crate::MemberOptions::unpullable_images`]).
    pub unpullable_images: Vec<String>,
    /// Each member keeps PodDisruptionBudgets' status.
    pub disruption_controller: bool,
}

impl ManyOptions {
    pub fn new(name_prefix: impl Into<String>, count: u32, data_dir: impl Into<PathBuf>) -> Self {
        Self {
            name_prefix: name_prefix.into(),
            count,
            data_dir: data_dir.into(),
            bind_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
            in_memory: true,
            nodes: 3,
            node_cpu: "4".into(),
            node_memory: "8Gi".into(),
            node_pods: 110,
            ready_delay: Duration::from_millis(500),
            watch_history: DEFAULT_WATCH_HISTORY,
            parallelism: 8,
            latency: Duration::ZERO,
            max_object_bytes: flotilla_generic_store::objects::DEFAULT_MAX_OBJECT_BYTES,
            token_controller: true,
            unpullable_images: vec![crate::DEFAULT_UNPULLABLE_IMAGES.to_string()],
            disruption_controller: true,
        }
    }

    /// The options of member `i` (1-based).
    pub fn member(&self, i: u32, pki: &Arc<MemberPki>) -> MemberOptions {
        let name = format!("{}{i}", self.name_prefix);
        let mut opts = MemberOptions::new(&name, self.data_dir.join(&name));
        opts.bind_address = self.bind_address;
        opts.in_memory = self.in_memory;
        opts.nodes = self.nodes;
        opts.node_cpu = self.node_cpu.clone();
        opts.node_memory = self.node_memory.clone();
        opts.node_pods = self.node_pods;
        opts.ready_delay = self.ready_delay;
        opts.watch_history = self.watch_history;
        opts.latency = self.latency;
        opts.max_object_bytes = self.max_object_bytes;
        opts.token_controller = self.token_controller;
        opts.unpullable_images = self.unpullable_images.clone();
        opts.disruption_controller = self.disruption_controller;
        opts.shared_pki = Some(pki.clone());
        opts
    }
}

/// Members started by [`start_many`], in name order.
pub struct RunningMembers {
    members: Vec<RunningMember>,
    /// The certificates every member serves with (`<data_dir>/pki/`).
    pub pki: Arc<MemberPki>,
}

impl RunningMembers {
    pub fn members(&self) -> &[RunningMember] {
        &self.members
    }

    pub fn iter(&self) -> std::slice::Iter<'_, RunningMember> {
        self.members.iter()
    }

    pub fn get(&self, name: &str) -> Option<&RunningMember> {
        self.members.iter().find(|m| m.name == name)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Stops every member (concurrently).
    pub async fn stop_all(self) {
        futures::future::join_all(self.members.into_iter().map(RunningMember::stop)).await;
    }
}

impl<'a> IntoIterator for &'a RunningMembers {
    type Item = &'a RunningMember;
    type IntoIter = std::slice::Iter<'a, RunningMember>;

    fn into_iter(self) -> Self::IntoIter {
        self.members.iter()
    }
}

/// Starts `opts.count` members sharing one set of certificates (made once, under
/// `<data_dir>/pki/`) and one resource registry. Each still has its own storage, token,
/// port, simulation and kubeconfigs (`<data_dir>/<name>/kubeconfig`). When one fails to
/// start, those already started are stopped and the first error is returned.
pub async fn start_many(opts: ManyOptions) -> Result<RunningMembers, MemberError> {
    flotilla_apiserver::boot::create_data_dir(&opts.data_dir)?;
    let pki = MemberPki::ensure(&opts.data_dir, &serving_hosts(opts.bind_address))?;
    // Each start runs as its own task so starts use every worker thread.
    let results: Vec<_> = futures::stream::iter(1..=opts.count)
        .map(|i| tokio::spawn(crate::start(opts.member(i, &pki))))
        .buffered(opts.parallelism.max(1))
        .collect()
        .await;
    let mut members = Vec::with_capacity(results.len());
    let mut first_error = None;
    for result in results {
        match result {
            Ok(Ok(member)) => members.push(member),
            Ok(Err(e)) => {
                first_error.get_or_insert(e);
            }
            Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
            // Cancelled: only when the runtime shuts down under us.
            Err(_) => {}
        }
    }
    let started = RunningMembers { members, pki };
    match first_error {
        Some(e) => {
            started.stop_all().await;
            Err(e)
        }
        None => Ok(started),
    }
}

/// Files that switch simulated failures of members on and off while they exist
/// ([`follow_failure_files`]). Each lists the members it applies to, one name per line
/// (blank lines and `#` comments ignored); an empty file applies to every member.
#[derive(Debug, Clone, Default)]
pub struct FailureFiles {
    /// Listed members are unreachable ([`RunningMember::set_reachable`]).
    pub unreachable: Option<PathBuf>,
    /// Listed members answer but fail their health checks ([`RunningMember::set_healthy`]).
    pub unhealthy: Option<PathBuf>,
}

/// A failure a file switches.
#[derive(Debug, Clone, Copy)]
enum Failure {
    Unreachable,
    Unhealthy,
}

impl Failure {
    fn file(self) -> &'static str {
        match self {
            Failure::Unreachable => "unreachable file",
            Failure::Unhealthy => "unhealthy file",
        }
    }

    fn is_failing(self, member: &RunningMember) -> bool {
        match self {
            Failure::Unreachable => !member.is_reachable(),
            Failure::Unhealthy => !member.is_healthy(),
        }
    }

    async fn set_failing(self, member: &RunningMember, failing: bool) {
        match self {
            Failure::Unreachable => {
                if let Err(e) = member.set_reachable(!failing).await {
                    tracing::warn!(name = %member.name, error = %e, "changing reachability");
                }
            }
            Failure::Unhealthy => member.set_healthy(!failing),
        }
    }
}

/// Whether the contents of a failure file apply to `name`: an empty file applies to every
/// member, otherwise the members named on its lines (blank lines and `#` comments ignored).
pub(crate) fn names_member(contents: &str, name: &str) -> bool {
    let mut names = contents
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .peekable();
    names.peek().is_none() || names.any(|n| n == name)
}

/// Keeps each failure of `files` on for the members its file names while that file exists
/// and off otherwise, looking every 500 ms. A file that cannot be read leaves its failure as
/// it is until the next look. Runs until dropped (never ends, even without files).
pub async fn follow_failure_files(files: &FailureFiles, members: &[&RunningMember]) {
    let followed: Vec<(Failure, &Path)> = [
        (Failure::Unreachable, files.unreachable.as_deref()),
        (Failure::Unhealthy, files.unhealthy.as_deref()),
    ]
    .into_iter()
    .filter_map(|(failure, path)| Some((failure, path?)))
    .collect();
    loop {
        for &(failure, path) in &followed {
            let contents = match tokio::fs::read_to_string(path).await {
                Ok(contents) => Some(contents),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    // Leave things as they are rather than guess.
                    tracing::warn!(path = %path.display(), error = %e, "reading the {}", failure.file());
                    continue;
                }
            };
            for member in members {
                let failing = contents
                    .as_deref()
                    .is_some_and(|c| names_member(c, &member.name));
                if failure.is_failing(member) != failing {
                    failure.set_failing(member, failing).await;
                }
            }
        }
        tokio::time::sleep(FAILURE_POLL).await;
    }
}

/// Keeps `members` unreachable while `path` exists (all of them when it is empty, else the
/// ones it names, one per line) and reachable otherwise, looking every 500 ms. Runs until
/// dropped. [`follow_failure_files`] with only an unreachable file.
pub async fn follow_unreachable_file(path: &Path, members: &[&RunningMember]) {
    let files = FailureFiles {
        unreachable: Some(path.to_path_buf()),
        unhealthy: None,
    };
    follow_failure_files(&files, members).await;
}

#[cfg(test)]
mod tests {
    use super::names_member;

    #[test]
    fn failure_file_contents() {
        assert!(names_member("", "member1"));
        assert!(names_member("\n  \n", "member1"));
        assert!(names_member("# all of them\n", "member1"));
        assert!(names_member("member2\nmember1\n", "member1"));
        assert!(!names_member("member2\n", "member1"));
        assert!(!names_member("member10\n", "member1"));
    }
}
