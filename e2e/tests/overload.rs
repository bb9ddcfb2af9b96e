//! Overload of the HTTP layer and of merged reads, against the `flotilla` binary, by a user
//! the limits apply to (a bearer-token user with cluster-admin rights, not `system:masters`).
//! Each test asserts behaviour and prints its figures as a line of `e2e/faults.sh`'s output:
//!
//! - the read limit: concurrent LISTs of a 12 MB collection, read slowly, against
//!   `--max-requests-inflight 10`: those past the limit get 429 with Retry-After, every one
//!   gets an answer, and each served one its whole body (how many got 429, p50/p99 of the
//!   served ones to their last byte);
//! - HTTP/2 under 429: curl multiplexing creates with 64 KB bodies over HTTP/2 against
//!   `--max-mutating-requests-inflight 2`: every transfer completes with 201 or 429, none
//!   with a stream error;
//! - merged reads: 200 concurrent merged LISTs of deployments against `local-up` with three
//!   members (30 Deployments, each in all three) and the default
//!   `--max-merged-reads-inflight`: those past the bound get 429 with Retry-After, the others
//!   a complete merged list (429 count, p50/p99 of the rest).
//!
//! Short in CI; the `#[ignore]`d `long_*` versions (more clients, several rounds) run with
//! `bash e2e/faults.sh --long`. Needs the binary: `cargo build --bin flotilla` (or
//! `FLOTILLA_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "support/load.rs"]
mod load;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use support::{
    ApiserverProcess, Kubectl, eventually, fault_row, kubectl_binary, percentile,
    start_apiserver_with_args, start_local_up, write_token_kubeconfig,
};

const WAIT: Duration = Duration::from_secs(120);
/// An upper bound on one request that only catches a hang.
const HANG: Duration = Duration::from_secs(120);
const TOKEN: &str = "overload-token";

/// The rounds of the long versions: `FAULTS_LONG_ROUNDS` (default 5), as `e2e/faults.sh`.
fn long_rounds() -> usize {
    std::env::var("FAULTS_LONG_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

/// The crowd's token file in `dir` (user `overload`, group `crowd`).
fn tokens_file(dir: &Path) -> PathBuf {
    let path = dir.join("tokens.csv");
    std::fs::write(&path, format!("{TOKEN},overload,overload-uid,\"crowd\"\n")).unwrap();
    path
}

/// Gives the crowd cluster-admin on the server `admin` manages, and writes its kubeconfig.
fn crowd_kubeconfig(server: &ApiserverProcess, admin: &Kubectl, dir: &Path) -> PathBuf {
    admin.ok(&[
        "create",
        "clusterrolebinding",
        "crowd-admin",
        "--clusterrole=cluster-admin",
        "--group=crowd",
    ]);
    let ca = server.kubeconfig.parent().unwrap().join("pki/ca.crt");
    let path = dir.join("crowd.kubeconfig");
    write_token_kubeconfig(&path, &server.url, &ca, TOKEN);
    path
}

/// What a crowd of requests got.
#[derive(Default)]
struct Outcomes {
    /// Seconds to the last byte of each served request.
    served: Vec<f64>,
    too_many: usize,
    without_retry_after: usize,
    /// Anything else: other codes, transport errors, incomplete bodies.
    failures: Vec<String>,
}

impl Outcomes {
    fn add(&mut self, outcome: Result<Answer, String>) {
        match outcome {
            Ok(Answer::Served(secs)) => self.served.push(secs),
            Ok(Answer::TooMany { retry_after }) => {
                self.too_many += 1;
                if !retry_after {
                    self.without_retry_after += 1;
                }
            }
            Err(e) => self.failures.push(e),
        }
    }

    /// Adds another round's.
    fn absorb(&mut self, round: Outcomes) {
        self.served.extend(round.served);
        self.too_many += round.too_many;
        self.without_retry_after += round.without_retry_after;
        self.failures.extend(round.failures);
    }

    /// `N served (p50 …, p99 …), M answered 429`.
    fn figures(&mut self) -> String {
        self.served.sort_by(f64::total_cmp);
        format!(
            "{} served (p50 {:.3} s, p99 {:.3} s, max {:.3} s), {} answered 429, {} failed",
            self.served.len(),
            percentile(&self.served, 0.5),
            percentile(&self.served, 0.99),
            self.served.last().copied().unwrap_or(f64::NAN),
            self.too_many,
            self.failures.len(),
        )
    }

    /// The behaviour every overload test asks for: some refused, some served, every refusal
    /// a 429 with Retry-After, nothing else.
    fn check(&self) {
        assert!(
            self.failures.is_empty(),
            "{} requests failed: {:?}",
            self.failures.len(),
            &self.failures[..self.failures.len().min(5)]
        );
        assert!(self.too_many > 0, "nothing was refused with 429");
        assert_eq!(self.without_retry_after, 0, "429 without Retry-After");
        assert!(!self.served.is_empty(), "nothing was served");
    }
}

enum Answer {
    Served(f64),
    TooMany { retry_after: bool },
}

/// `clients` clients, each on its own connection (as that many programs would be), all
/// connected before the first request so that the requests go out at once.
async fn connected_crowd(kubeconfig: &Path, clients: usize) -> Vec<kube::Client> {
    let mut crowd = Vec::with_capacity(clients);
    for _ in 0..clients {
        let client = load::no_retry_client(kubeconfig).await;
        let version = http::Request::get("/version").body(Vec::new()).unwrap();
        let resp = client.send(version.map(Into::into)).await.unwrap();
        resp.into_body().collect().await.unwrap();
        crowd.push(client);
    }
    crowd
}

/// One GET of `path` by each client of `crowd` at once; `read` takes a 200's body and says
/// whether it is whole.
async fn all_at_once<R, F>(crowd: &[kube::Client], path: &str, read: R) -> Outcomes
where
    R: Fn(http::Response<kube::client::Body>) -> F + Clone + Send + Sync + 'static,
    F: std::future::Future<Output = Result<(), String>> + Send,
{
    let start = Arc::new(tokio::sync::Barrier::new(crowd.len()));
    let mut tasks = Vec::new();
    for client in crowd {
        let (client, start, read, path) = (
            client.clone(),
            start.clone(),
            read.clone(),
            path.to_string(),
        );
        tasks.push(tokio::spawn(async move {
            start.wait().await;
            let t = Instant::now();
            let req = http::Request::get(&path).body(Vec::new()).unwrap();
            let answer = async {
                let resp = client
                    .send(req.map(Into::into))
                    .await
                    .map_err(|e| format!("transport: {e}"))?;
                match resp.status().as_u16() {
                    200 => {
                        read(resp).await?;
                        Ok(Answer::Served(t.elapsed().as_secs_f64()))
                    }
                    429 => {
                        let retry_after = resp.headers().contains_key(http::header::RETRY_AFTER);
                        resp.into_body()
                            .collect()
                            .await
                            .map_err(|e| format!("reading a 429: {e}"))?;
                        Ok(Answer::TooMany { retry_after })
                    }
                    code => Err(format!("answered {code}")),
                }
            };
            tokio::time::timeout(HANG, answer)
                .await
                .unwrap_or_else(|_| Err("no answer".into()))
        }));
    }
    let mut outcomes = Outcomes::default();
    for t in tasks {
        outcomes.add(t.await.unwrap());
    }
    outcomes
}

// === The read limit ===

const LIST_ITEMS: usize = 24;
const ITEM_BYTES: usize = 500_000;

/// `clients` slow readers of a 12 MB list at once against a read limit of `limit`, `rounds`
/// times.
async fn slow_lists_past_the_read_limit(clients: usize, limit: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let limit_arg = limit.to_string();
    let server = start_apiserver_with_args(
        &dir.path().join("host"),
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--max-requests-inflight",
            &limit_arg,
        ],
    );
    let admin = Kubectl::new(
        kubectl_binary("kubectl"),
        &server.kubeconfig,
        &dir.path().join("cache"),
    );
    let crowd_kubeconfig = crowd_kubeconfig(&server, &admin, dir.path());
    admin.ok(&["create", "namespace", "big"]);
    let cms: Api<DynamicObject> = Api::namespaced_with(
        support::kube_client(&server.kubeconfig, None).await,
        "big",
        &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    for i in 0..LIST_ITEMS {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("cm-{i}")},
            "data": {"blob": "z".repeat(ITEM_BYTES)},
        });
        cms.patch(
            &format!("cm-{i}"),
            &PatchParams::apply("overload-test"),
            &Patch::Apply(cm),
        )
        .await
        .unwrap();
    }

    let crowd = connected_crowd(&crowd_kubeconfig, clients).await;
    let mut all = Outcomes::default();
    for _ in 0..rounds {
        // A slow reader: a pause after every piece, as a client on a slow link.
        let read = |resp: http::Response<kube::client::Body>| async move {
            let length: usize = resp
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .ok_or("a list without content-length")?;
            let mut body = resp.into_body();
            let (mut read, mut last) = (0, Vec::new());
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| format!("reading a list: {e}"))?;
                if let Ok(data) = frame.into_data() {
                    read += data.len();
                    last = data[data.len().saturating_sub(2)..].to_vec();
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            if read == length && last == b"]}" {
                Ok(())
            } else {
                Err(format!("a list of {read} of {length} bytes"))
            }
        };
        all.absorb(all_at_once(&crowd, "/api/v1/namespaces/big/configmaps", read).await);
    }
    let figures = all.figures();
    fault_row(&format!(
        "Overload, read limit: {clients} concurrent slow-reading LISTs of {} MB ({rounds} round(s)) against --max-requests-inflight {limit}: {figures}",
        LIST_ITEMS * ITEM_BYTES / 1_000_000
    ));
    all.check();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_lists_past_the_read_limit_get_429_and_the_rest_their_whole_body() {
    slow_lists_past_the_read_limit(40, 10, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_slow_lists_past_the_read_limit() {
    slow_lists_past_the_read_limit(200, 20, long_rounds()).await;
}

// === HTTP/2 under 429 ===

/// `transfers` creates multiplexed by curl over HTTP/2 against a write limit of 2.
fn curl_http2_creates_past_the_write_limit(transfers: usize) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let server = start_apiserver_with_args(
        &dir.path().join("host"),
        &[
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--max-mutating-requests-inflight",
            "2",
        ],
    );
    let admin = Kubectl::new(
        kubectl_binary("kubectl"),
        &server.kubeconfig,
        &dir.path().join("cache"),
    );
    crowd_kubeconfig(&server, &admin, dir.path());
    // Bodies of 64 KB: several DATA frames each, still coming when a refusal is decided.
    let body = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": "h2-"},
        "data": {"blob": "h".repeat(64 * 1024)},
    });
    let body_file = dir.path().join("body.json");
    std::fs::write(&body_file, body.to_string()).unwrap();
    let url = format!("{}/api/v1/namespaces/default/configmaps", server.url);
    let config: String = (0..transfers)
        .map(|_| format!("url = \"{url}\"\noutput = /dev/null\n"))
        .collect();
    let config_file = dir.path().join("transfers.cfg");
    std::fs::write(&config_file, config).unwrap();
    let ca = server.kubeconfig.parent().unwrap().join("pki/ca.crt");
    let t = Instant::now();
    let out = support::run_bounded(
        std::process::Command::new("curl")
            .args(["-sS", "--http2", "--parallel", "--parallel-max", "100"])
            .arg("--cacert")
            .arg(&ca)
            .args(["-H", &format!("Authorization: Bearer {TOKEN}")])
            .args(["-H", "Content-Type: application/json"])
            .arg("--data-binary")
            .arg(format!("@{}", body_file.display()))
            .args(["-w", "%{http_code} %{http_version}\\n", "-K"])
            .arg(&config_file),
        support::COMMAND_TIMEOUT,
        "curl --parallel --http2",
    );
    let elapsed = t.elapsed().as_secs_f64();
    let mut codes = std::collections::BTreeMap::new();
    for line in out.stdout.lines() {
        *codes.entry(line.to_string()).or_insert(0usize) += 1;
    }
    let errors: Vec<&str> = out
        .stderr
        .split(['\r', '\n'])
        .filter(|l| l.starts_with("curl:"))
        .collect();
    fault_row(&format!(
        "Overload, HTTP/2 under 429: {transfers} curl transfers (64 KB creates, multiplexed) against --max-mutating-requests-inflight 2 in {elapsed:.1} s: {codes:?}, {} curl errors{}",
        errors.len(),
        errors
            .first()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    ));
    assert!(
        errors.is_empty(),
        "curl errors: {:?}",
        &errors[..errors.len().min(5)]
    );
    let refused = codes.get("429 2").copied().unwrap_or(0);
    let created = codes.get("201 2").copied().unwrap_or(0);
    assert_eq!(
        refused + created,
        transfers,
        "every transfer a complete HTTP/2 answer, 201 or 429: {codes:?}"
    );
    assert!(refused > 0, "nothing was refused: {codes:?}");
}

#[test]
fn curl_http2_transfers_refused_with_429_all_complete() {
    curl_http2_creates_past_the_write_limit(2_000);
}

#[test]
#[ignore = "long: bash e2e/faults.sh --long"]
fn long_curl_http2_transfers_refused_with_429() {
    curl_http2_creates_past_the_write_limit(16_000);
}

// === Merged reads ===

const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];
const DEPLOYMENTS: usize = 30;

/// `clients` merged LISTs of deployments at once against `local-up` with three members,
/// `rounds` times.
async fn merged_lists_at_once(clients: usize, rounds: usize) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = tokens_file(dir.path());
    let up = start_local_up(
        &dir.path().join("flotilla"),
        &[
            "--members",
            "3",
            "--token-auth-file",
            tokens.to_str().unwrap(),
        ],
    );
    let admin = Kubectl::new(
        kubectl_binary("kubectl"),
        &up.kubeconfig,
        &dir.path().join("cache"),
    );
    let crowd_kubeconfig = crowd_kubeconfig(&up, &admin, dir.path());
    admin.ok(&["create", "namespace", load::NAMESPACE]);
    // Every Deployment in all three members, so each merged item merges three copies.
    let mut items: Vec<Value> = (0..DEPLOYMENTS)
        .map(|i| load::deployment(&format!("d{i}"), 1))
        .collect();
    items.push(json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "all", "namespace": load::NAMESPACE},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}],
            "placement": {
                "clusterAffinity": {"clusterNames": MEMBERS},
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}
            }
        }
    }));
    let manifest = dir.path().join("deployments.json");
    std::fs::write(
        &manifest,
        json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    admin.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    let path = format!("/apis/apps/v1/namespaces/{}/deployments", load::NAMESPACE);
    eventually(
        WAIT,
        "every Deployment merged from the three members",
        || {
            let list = admin.get_json(&["deploy", "-n", load::NAMESPACE]);
            let in_all = list["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| {
                    let clusters = d["metadata"]["annotations"]
                        [flotilla_fanout::CLUSTERS_ANNOTATION]
                        .as_str()
                        .unwrap_or_default();
                    MEMBERS.iter().all(|m| clusters.contains(m))
                })
                .count();
            if in_all == DEPLOYMENTS {
                Ok(())
            } else {
                Err(format!("{in_all} of {DEPLOYMENTS} in all three members"))
            }
        },
    );

    let crowd = connected_crowd(&crowd_kubeconfig, clients).await;
    // What one merged LIST takes alone, for comparison.
    let mut alone = Outcomes::default();
    for _ in 0..5 {
        alone.absorb(all_at_once(&crowd[..1], &path, whole_merged_list).await);
    }
    let alone = alone.figures();
    let mut all = Outcomes::default();
    for _ in 0..rounds {
        all.absorb(all_at_once(&crowd, &path, whole_merged_list).await);
    }
    let figures = all.figures();
    fault_row(&format!(
        "Overload, merged reads: {clients} concurrent merged LISTs of {DEPLOYMENTS} Deployments in 3 members ({rounds} round(s)) against local-up's default --max-merged-reads-inflight ({}): {figures}; one at a time: {alone}",
        default_merged_bound()
    ));
    all.check();
}

/// local-up's default `--max-merged-reads-inflight` on this machine, from its help.
fn default_merged_bound() -> String {
    let out = support::run_bounded(
        std::process::Command::new(support::flotilla_bin()).args(["local-up", "--help"]),
        support::COMMAND_TIMEOUT,
        "flotilla local-up --help",
    );
    out.stdout
        .split("--max-merged-reads-inflight")
        .nth(1)
        .and_then(|help| help.split("[default: ").nth(1))
        .and_then(|rest| rest.split(']').next())
        .unwrap_or("?")
        .to_string()
}

/// Reads a merged list of deployments to its end: whole when it holds every Deployment.
async fn whole_merged_list(resp: http::Response<kube::client::Body>) -> Result<(), String> {
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("reading a merged list: {e}"))?
        .to_bytes();
    let list: Value = serde_json::from_slice(&body).map_err(|e| format!("a merged list: {e}"))?;
    match list["items"].as_array().map(Vec::len) {
        Some(DEPLOYMENTS) => Ok(()),
        n => Err(format!("a merged list of {n:?} items")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_merged_lists_at_once_get_429s_past_the_fan_out_bound() {
    merged_lists_at_once(200, 1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_merged_lists_at_once_in_rounds() {
    merged_lists_at_once(200, long_rounds()).await;
}
