//! etcd's own faults under `flotilla apiserver --storage etcd` on a three-member etcd, driven
//! over TLS with kube-rs (and kubectl):
//! - the etcd leader killed under a steady writer: writes resume, none fails, every
//!   acknowledged one is there; the stall is printed (kill to the first acknowledged write,
//!   the election to it, and the longest gap between acknowledged writes);
//! - quorum lost (two members of three killed): every request answers within the etcd
//!   request timeout, writes and consistent reads with 503 ServiceUnavailable or 504 Timeout
//!   and a Status naming etcd (kubectl prints it), while reads of any version
//!   (`resourceVersion=0`) and a watch are served from the cache; when one
//!   member returns, writes work again without restarting the server and the watch sees them.
//!
//! Each test prints a row of the fault table (appended to `$FAULTS_TABLE`, see
//! `e2e/faults.sh`); the timings are printed, never asserted. The `#[ignore]`d `long_*`
//! version kills the leader again and again (`bash e2e/faults.sh --long`).
//!
//! Needs `etcd` on PATH (the test command installs it) and the binary (`FLOTILLA_BIN`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

#[path = "support/load.rs"]
mod load;

use std::path::Path;
use std::time::{Duration, Instant};

use flotilla_etcd::testing::{EtcdCluster, SteadyWriter};
use futures::StreamExt;
use http_body_util::BodyExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};
use serde_json::{Value, json};
use support::{ApiserverProcess, Kubectl, fault_row, kubectl_binary, run_bounded};

const NAMESPACE: &str = "etcd-faults";
/// `flotilla apiserver`'s etcd request timeout (its default): how long one etcd call may
/// take, retries included, before its request fails.
const ETCD_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Past this a request counts as hung: the etcd request timeout and a generous margin (a
/// write's answer also waits for the watch cache; the host is a debug build on a busy
/// machine).
const HUNG: Duration = Duration::from_secs(25);

/// `flotilla apiserver` on `etcd`, its data under `dir`.
fn apiserver(dir: &Path, etcd: &EtcdCluster) -> ApiserverProcess {
    let servers = etcd.servers_flag();
    support::start_apiserver_with_args(
        &dir.join("host"),
        &["--storage", "etcd", "--etcd-servers", &servers],
    )
}

async fn configmaps(host: &ApiserverProcess) -> (kube::Client, Api<ConfigMap>) {
    let client = load::no_retry_client(&host.kubeconfig).await;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": NAMESPACE}})).unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    (client.clone(), Api::namespaced(client, NAMESPACE))
}

fn config_map(name: &str, value: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": NAMESPACE},
        "data": {"value": value},
    }))
    .unwrap()
}

// === The etcd leader killed ===

async fn leader_killed(rounds: usize) {
    let mut etcd = EtcdCluster::start(3).await;
    let dir = tempfile::tempdir().unwrap();
    let host = apiserver(dir.path(), &etcd);
    let (_, api) = configmaps(&host).await;
    let mut writer = {
        let api = api.clone();
        SteadyWriter::start(move |n| {
            let api = api.clone();
            async move {
                let name = format!("w{n:05}");
                let cm = config_map(&name, "v");
                let written =
                    tokio::time::timeout(HUNG, api.create(&PostParams::default(), &cm)).await;
                let version = match written {
                    Ok(Ok(cm)) => Ok(cm.metadata.resource_version.unwrap_or_default()),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer in {HUNG:?}")),
                };
                (name, version)
            }
        })
    };
    writer.wait_acked(20, "before the kill").await;

    // Per round: when the leader was killed, when the new one was elected, and how many
    // writes had been acknowledged before.
    let mut rounds_at = Vec::new();
    for round in 0..rounds {
        let leader = etcd.leader().await;
        let before = writer.acked();
        let killed = Instant::now();
        etcd.kill(leader);
        etcd.wait_for_new_leader(leader).await;
        let elected = Instant::now();
        writer
            .wait_acked(before + 20, &format!("after the kill ({round})"))
            .await;
        rounds_at.push((killed, elected, before));
        etcd.restart(leader).await;
    }
    let (acked, failed) = writer.stop().await;

    // Every acknowledged write is there, as it was acknowledged.
    let listed = api.list(&ListParams::default()).await.unwrap();
    let stored: std::collections::BTreeMap<String, String> = listed
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.name.clone().unwrap_or_default(),
                cm.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect();
    let found = acked
        .iter()
        .filter(|a| stored.get(&a.name) == Some(&a.version))
        .count();
    // Each stall: the longest gap from the last write acknowledged before the kill, and
    // when it ended (after the kill, after the election).
    let stalls: Vec<(Duration, Duration, Duration)> = rounds_at
        .iter()
        .map(|(killed, elected, before)| {
            let (gap, resumed) = SteadyWriter::longest_gap(&acked[before - 1..before + 20])
                .expect("writes around the kill");
            (
                gap,
                resumed.saturating_duration_since(*killed),
                resumed.saturating_duration_since(*elected),
            )
        })
        .collect();
    let worst_after_election = stalls.iter().map(|s| s.2).max().unwrap_or_default();
    let each: Vec<String> = stalls
        .iter()
        .map(|(gap, after_kill, after_election)| {
            format!(
                "stalled {:.2} s, resumed {:.2} s after the kill and {:.2} s after the election",
                gap.as_secs_f64(),
                after_kill.as_secs_f64(),
                after_election.as_secs_f64()
            )
        })
        .collect();
    fault_row(&format!(
        "| etcd leader killed (kill -9 of 1 of 3 members, restarted; x{rounds}) under `flotilla apiserver --storage etcd` | 1 kube-rs writer creating ConfigMaps one after another ({} failed) | {} | {found} | writes {} (target: resumed <= 2 s after the election; worst {:.2} s); longest gap between acknowledged writes {:.2} s |",
        failed.len(),
        acked.len(),
        each.join("; "),
        worst_after_election.as_secs_f64(),
        SteadyWriter::longest_gap(&acked).map_or(0.0, |(gap, _)| gap.as_secs_f64()),
    ));
    assert!(
        failed.is_empty(),
        "writes failed while etcd kept its quorum: {failed:?}"
    );
    for a in &acked {
        assert_eq!(
            stored.get(&a.name),
            Some(&a.version),
            "{} acknowledged at {}",
            a.name,
            a.version
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_leader_killed_under_a_steady_writer_loses_no_write() {
    leader_killed(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "long: bash e2e/faults.sh --long"]
async fn long_etcd_leader_killed_repeatedly() {
    let rounds = std::env::var("FAULTS_LONG_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    leader_killed(rounds).await;
}

// === Quorum lost ===

/// One raw request's answer: its status code, its body, and how long it took.
struct Answer {
    what: &'static str,
    code: u16,
    body: Value,
    took: Duration,
}

async fn send(
    client: &kube::Client,
    what: &'static str,
    request: http::Request<Vec<u8>>,
) -> Answer {
    let started = Instant::now();
    let answered = tokio::time::timeout(HUNG, async {
        let response = client.send(request.map(kube::client::Body::from)).await?;
        let code = response.status().as_u16();
        let bytes = response.into_body().collect().await?.to_bytes();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((code, bytes))
    })
    .await;
    let took = started.elapsed();
    match answered {
        Ok(Ok((code, bytes))) => Answer {
            what,
            code,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            took,
        },
        Ok(Err(e)) => panic!("{what}: no answer: {e}"),
        Err(_) => panic!("{what}: hung past {HUNG:?}"),
    }
}

fn request(
    method: &str,
    uri: &str,
    body: Option<Value>,
    content_type: &str,
) -> http::Request<Vec<u8>> {
    http::Request::builder()
        .method(method)
        .uri(uri)
        .header(http::header::CONTENT_TYPE, content_type)
        .header(http::header::ACCEPT, "application/json")
        .body(
            body.map(|b| serde_json::to_vec(&b).unwrap())
                .unwrap_or_default(),
        )
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_quorum_lost_every_request_answers_503_or_504_naming_etcd() {
    let mut etcd = EtcdCluster::start(3).await;
    let dir = tempfile::tempdir().unwrap();
    let host = apiserver(dir.path(), &etcd);
    let (client, api) = configmaps(&host).await;
    let a = api
        .create(&PostParams::default(), &config_map("a", "1"))
        .await
        .unwrap();
    api.create(&PostParams::default(), &config_map("b", "1"))
        .await
        .unwrap();
    let listed = api.list(&ListParams::default()).await.unwrap();
    let list_rv = listed.metadata.resource_version.clone().unwrap();

    let leader = etcd.leader().await;
    let other = (leader + 1) % 3;
    etcd.kill(leader);
    etcd.kill(other);

    let base = format!("/api/v1/namespaces/{NAMESPACE}/configmaps");
    let json = "application/json";
    let mut replaced = serde_json::to_value(&a).unwrap();
    replaced["data"]["value"] = json!("2");
    let requests = vec![
        (
            "create",
            request(
                "POST",
                &base,
                Some(serde_json::to_value(config_map("c", "1")).unwrap()),
                json,
            ),
        ),
        (
            "update",
            request("PUT", &format!("{base}/a"), Some(replaced), json),
        ),
        (
            "patch",
            request(
                "PATCH",
                &format!("{base}/a"),
                Some(json!({"data": {"value": "3"}})),
                "application/merge-patch+json",
            ),
        ),
        (
            "delete",
            request("DELETE", &format!("{base}/b"), None, json),
        ),
        ("get", request("GET", &format!("{base}/a"), None, json)),
        ("list", request("GET", &base, None, json)),
    ];
    let kubectl = {
        let k = Kubectl::new(
            kubectl_binary("kubectl"),
            &host.kubeconfig,
            &dir.path().join("cache"),
        );
        tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let out = run_bounded(
                &mut k.command(&[
                    "create",
                    "configmap",
                    "k",
                    "-n",
                    NAMESPACE,
                    "--from-literal=a=b",
                ]),
                HUNG,
                "kubectl create during quorum loss",
            );
            (out, started.elapsed())
        })
    };
    // A watch from the cache, from a version before the loss: opens, and will see the
    // first write after quorum returns.
    let watch = {
        let uri = format!("{base}?watch=1&resourceVersion={list_rv}");
        let response = tokio::time::timeout(
            HUNG,
            client.send(request("GET", &uri, None, json).map(kube::client::Body::from)),
        )
        .await
        .expect("the watch answers")
        .unwrap();
        assert_eq!(
            response.status(),
            200,
            "a watch from the cache during quorum loss"
        );
        response.into_body()
    };
    let answers =
        futures::future::join_all(requests.into_iter().map(|(what, r)| send(&client, what, r)))
            .await;
    let (kubectl_out, kubectl_took) = kubectl.await.unwrap();
    // Reads of any version (`resourceVersion=0`) are the cache's, as kube-apiserver's watch
    // cache serves them: they answer without etcd.
    let get_any = send(
        &client,
        "get rv=0",
        request("GET", &format!("{base}/a?resourceVersion=0"), None, json),
    )
    .await;
    assert_eq!(get_any.code, 200, "{}", get_any.body);
    assert_eq!(get_any.body["metadata"]["name"], "a");
    let list_any = send(
        &client,
        "list rv=0",
        request("GET", &format!("{base}?resourceVersion=0"), None, json),
    )
    .await;
    assert_eq!(list_any.code, 200, "{}", list_any.body);
    let names: Vec<&str> = list_any.body["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(names, ["a", "b"], "{}", list_any.body);

    let mut codes = std::collections::BTreeMap::<String, usize>::new();
    for answer in &answers {
        let Answer {
            what,
            code,
            body,
            took,
        } = answer;
        println!("{what} without quorum: {code} in {took:?}: {body}");
        assert!(matches!(code, 503 | 504), "{what}: {code} {body}");
        let reason = body["reason"].as_str().unwrap_or_default();
        let expected = if *code == 503 {
            "ServiceUnavailable"
        } else {
            "Timeout"
        };
        assert_eq!(reason, expected, "{what}: {body}");
        assert_eq!(body["kind"], "Status", "{what}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(message.contains("etcd"), "{what}: {message}");
        *codes.entry(format!("{code} {reason}")).or_default() += 1;
    }
    println!(
        "kubectl create without quorum ({kubectl_took:?}): {}",
        kubectl_out.stderr
    );
    assert!(
        !kubectl_out.status.success(),
        "kubectl create: {}",
        kubectl_out.stdout
    );
    // kubectl prints the Status message (`create configmap` as "failed to create").
    assert!(
        kubectl_out
            .stderr
            .contains("etcd did not complete the request")
            || kubectl_out.stderr.contains("etcd is unavailable"),
        "{}",
        kubectl_out.stderr
    );
    let slowest = answers
        .iter()
        .map(|a| a.took)
        .chain([kubectl_took])
        .max()
        .unwrap_or_default();

    // One member back: quorum again; writes work on the same server, and the watch opened
    // during the loss sees them.
    etcd.restart(other).await;
    let returned = Instant::now();
    let after = tokio::time::timeout(
        HUNG,
        api.create(&PostParams::default(), &config_map("after", "1")),
    )
    .await
    .expect("a write after quorum returned answers")
    .expect("a write after quorum returned succeeds");
    let writes_again = returned.elapsed();
    let mut events = watch.into_data_stream();
    let seen = tokio::time::timeout(Duration::from_secs(60), async {
        let mut text = String::new();
        while let Some(chunk) = events.next().await {
            text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            if text.contains("\"name\":\"after\"") {
                return text;
            }
        }
        panic!("the watch ended: {text}");
    })
    .await
    .expect("the watch opened during the loss delivers the write after it");
    assert!(seen.contains("\"type\":\"ADDED\""), "{seen}");
    assert!(after.metadata.resource_version.is_some());

    let codes: Vec<String> = codes.iter().map(|(c, n)| format!("{n}x {c}")).collect();
    fault_row(&format!(
        "| etcd quorum lost (kill -9 of 2 of 3 members; one restarted after) under `flotilla apiserver --storage etcd` | {} requests at once (create, update, patch, delete, get, list with kube-rs; kubectl create), a watch, and GET and LIST at resourceVersion=0 (served from the cache: 200) | 0 during the loss | 1 after quorum returned | slowest answer {:.1} s (etcd request timeout {:?}): {}; kubectl prints the Status message; the watch stayed open; writes again {:.2} s after quorum returned |",
        answers.len() + 1,
        slowest.as_secs_f64(),
        ETCD_REQUEST_TIMEOUT,
        codes.join(", "),
        writes_again.as_secs_f64(),
    ));
}

// === An object over etcd's request limit ===

/// etcd started with a request limit (256 KiB) below the server's own limits: a ConfigMap
/// over it gets 413 RequestEntityTooLarge with a message naming its size and etcd's limit
/// (kube-rs and kubectl), and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_over_etcds_request_limit_gets_413() {
    let etcd = EtcdCluster::start_with_args(1, &["--max-request-bytes=262144"]).await;
    let dir = tempfile::tempdir().unwrap();
    let host = apiserver(dir.path(), &etcd);
    let (_, api) = configmaps(&host).await;
    let big = config_map("big", &"x".repeat(300 << 10));
    match api.create(&PostParams::default(), &big).await {
        Err(kube::Error::Api(status)) => {
            println!(
                "kube-rs: {} {}: {}",
                status.code, status.reason, status.message
            );
            assert_eq!(
                (status.code, status.reason.as_str()),
                (413, "RequestEntityTooLarge")
            );
            assert!(
                status.message.contains("bytes") && status.message.contains("--max-request-bytes"),
                "{}",
                status.message
            );
        }
        other => panic!("a ConfigMap over etcd's limit: {other:?}"),
    }
    let kubectl = Kubectl::new(
        kubectl_binary("kubectl"),
        &host.kubeconfig,
        &dir.path().join("cache"),
    );
    let file = dir.path().join("big.json");
    std::fs::write(&file, serde_json::to_vec(&big).unwrap()).unwrap();
    let out = kubectl.fails(&["create", "-f", &file.display().to_string()]);
    println!("kubectl: {}", out.stderr);
    assert!(
        out.stderr
            .contains("Error from server (RequestEntityTooLarge)")
            && out.stderr.contains("etcd"),
        "{}",
        out.stderr
    );
    assert!(api.get_opt("big").await.unwrap().is_none());
    // Smaller objects are stored as ever.
    api.create(&PostParams::default(), &config_map("small", "1"))
        .await
        .unwrap();
}
