//! Several simulated members in one process, cutting one off the network and back, making
//! one unhealthy and healthy again (directly and through a failure file), and restarting a
//! member on the same data directory and port.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use flotilla_testwait::eventually;
use std::path::Path;
use std::time::Duration;

use flotilla_membersim::{FailureFiles, ManyOptions, MemberOptions};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

/// How long a test waits for what it expects.
const WAIT: Duration = Duration::from_secs(10);

async fn client_for(kubeconfig: &Path, context: Option<&str>) -> kube::Client {
    flotilla_testenv::client_for(kubeconfig, context)
        .await
        .unwrap()
}

async fn node_count(client: &kube::Client) -> Option<usize> {
    Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .ok()
        .map(|l| l.items.len())
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "data": {"k": "v"},
    }))
    .unwrap()
}

#[tokio::test]
async fn many_members_share_certificates_and_are_each_reachable() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ManyOptions::new("m", 3, dir.path());
    opts.nodes = 2;
    let members = flotilla_membersim::start_many(opts).await.unwrap();
    assert_eq!(members.len(), 3);
    let names: Vec<_> = members.iter().map(|m| m.name.clone()).collect();
    assert_eq!(names, ["m1", "m2", "m3"]);
    let mut urls = std::collections::BTreeSet::new();
    for (i, member) in members.iter().enumerate() {
        assert_eq!(member.ca_pem, members.pki.ca_pem);
        assert_eq!(
            member.kubeconfig,
            dir.path().join(&member.name).join("kubeconfig")
        );
        urls.insert(member.url());
        // Each member is its own cluster: its own nodes, reachable with its own token.
        let client = client_for(&member.token_kubeconfig, None).await;
        let nodes: Vec<String> = Api::<Node>::all(client)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|n| n.metadata.name.unwrap())
            .collect();
        assert_eq!(
            nodes,
            [format!("m{}-node-0", i + 1), format!("m{}-node-1", i + 1)]
        );
    }
    assert_eq!(urls.len(), 3, "members share a port");
    // A token is only good for its own member.
    let m1 = members.get("m1").unwrap();
    let m2 = members.get("m2").unwrap();
    assert_ne!(m1.token, m2.token);
    let mut crossed = kube::config::Kubeconfig::read_from(&m2.token_kubeconfig).unwrap();
    crossed.clusters[0].cluster.as_mut().unwrap().server = Some(m1.url());
    let crossed = kube::Config::from_custom_kubeconfig(crossed, &Default::default())
        .await
        .unwrap();
    let err = Api::<Node>::all(kube::Client::try_from(crossed).unwrap())
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 401),
        "{err:?}"
    );
    members.stop_all().await;
}

#[tokio::test]
async fn unreachable_member_drops_connections_and_comes_back_on_the_same_url() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ManyOptions::new("u", 2, dir.path());
    opts.nodes = 1;
    let members = flotilla_membersim::start_many(opts).await.unwrap();
    let (u1, u2) = (members.get("u1").unwrap(), members.get("u2").unwrap());
    let c1 = client_for(&u1.kubeconfig, None).await;
    let c2 = client_for(&u2.kubeconfig, None).await;
    let cms: Api<ConfigMap> = Api::namespaced(c1.clone(), "default");
    cms.create(&PostParams::default(), &config_map("before"))
        .await
        .unwrap();
    let url = u1.url();

    // An open watch, already delivering events.
    let mut watch = cms
        .watch(&WatchParams::default().timeout(290), "0")
        .await
        .unwrap()
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), watch.next())
        .await
        .unwrap();
    assert!(matches!(first, Some(Ok(WatchEvent::Added(_)))), "{first:?}");

    u1.set_reachable(false).await.unwrap();
    assert!(!u1.is_reachable());
    // The watch ends (or fails) instead of hanging.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match watch.next().await {
                None | Some(Err(_)) => break,
                Some(Ok(WatchEvent::Error(_))) => break,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(
        ended.is_ok(),
        "the open watch survived set_reachable(false)"
    );
    // Requests fail at the connection, on a pooled client and on a fresh one.
    let err = cms.list(&ListParams::default()).await.unwrap_err();
    assert!(!matches!(err, kube::Error::Api(_)), "{err:?}");
    let fresh = client_for(&u1.kubeconfig, None).await;
    assert!(node_count(&fresh).await.is_none());
    let refused = tokio::net::TcpStream::connect(u1.addr).await;
    assert!(refused.is_err(), "the port still accepts connections");
    // The other member is unaffected.
    assert_eq!(node_count(&c2).await, Some(1));
    // The simulation keeps running: state changes made meanwhile are there afterwards.
    u1.set_node_ready(&u1.node_name(0), false);
    // Setting it again is a no-op.
    u1.set_reachable(false).await.unwrap();

    u1.set_reachable(true).await.unwrap();
    assert!(u1.is_reachable());
    assert_eq!(u1.url(), url);
    // Same URL, same certificates, same objects; the old client reconnects by itself.
    let names: Vec<String> = eventually("the member answers again", WAIT, || {
        let cms = cms.clone();
        async move { cms.list(&ListParams::default()).await.ok() }
    })
    .await
    .items
    .into_iter()
    .map(|c| c.metadata.name.unwrap())
    .collect();
    assert!(names.contains(&"before".to_string()), "{names:?}");
    eventually("the node NotReady", WAIT, || {
        let nodes: Api<Node> = Api::all(c1.clone());
        async move {
            let node = nodes.get("u1-node-0").await.ok()?;
            let ready = node
                .status?
                .conditions?
                .into_iter()
                .find(|c| c.type_ == "Ready")?;
            (ready.status == "False").then_some(())
        }
    })
    .await;
    members.stop_all().await;
}

#[tokio::test]
async fn restart_on_the_same_dir_and_port_keeps_token_and_objects() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = MemberOptions::new("r", dir.path());
    opts.nodes = 1;
    opts.ready_delay = Duration::from_millis(50);
    let member = flotilla_membersim::start(opts.clone()).await.unwrap();
    let token = member.token.clone();
    assert_eq!(
        std::fs::read_to_string(dir.path().join(flotilla_membersim::TOKEN_FILE))
            .unwrap()
            .trim(),
        token
    );
    let url = member.url();
    let client = client_for(&member.token_kubeconfig, None).await;
    Api::<ConfigMap>::namespaced(client, "default")
        .create(&PostParams::default(), &config_map("kept"))
        .await
        .unwrap();
    let port = member.addr.port();
    member.stop().await;

    opts.secure_port = port;
    let member = flotilla_membersim::start(opts).await.unwrap();
    assert_eq!(member.url(), url);
    assert_eq!(member.token, token);
    // The kubeconfig written before the restart still works: same URL, CA and token.
    let client = client_for(&dir.path().join("kubeconfig-flotilla"), None).await;
    let kept = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .get("kept")
        .await
        .unwrap();
    assert_eq!(kept.data.unwrap()["k"], "v");
    assert_eq!(node_count(&client).await, Some(1));
    member.stop().await;
}

#[tokio::test]
async fn an_explicit_token_is_used_as_given() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = MemberOptions::new("t", dir.path());
    opts.nodes = 1;
    opts.in_memory = true;
    opts.token = Some("given-token-0123456789".into());
    let member = flotilla_membersim::start(opts).await.unwrap();
    assert_eq!(member.token, "given-token-0123456789");
    let client = client_for(&member.token_kubeconfig, None).await;
    assert_eq!(node_count(&client).await, Some(1));
    member.stop().await;
}

/// `GET path` on a member: status and body.
async fn get_raw(client: &kube::Client, path: &str) -> (http::StatusCode, String) {
    let request = http::Request::get(path)
        .body(kube::client::Body::empty())
        .unwrap();
    let response = client.send(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect_bytes().await.unwrap();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test]
async fn unhealthy_member_fails_its_health_checks_but_serves_its_api() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ManyOptions::new("h", 2, dir.path());
    opts.nodes = 1;
    let members = flotilla_membersim::start_many(opts).await.unwrap();
    let (h1, h2) = (members.get("h1").unwrap(), members.get("h2").unwrap());
    let c1 = client_for(&h1.token_kubeconfig, None).await;
    let c2 = client_for(&h2.token_kubeconfig, None).await;
    assert!(h1.is_healthy());
    for path in ["/readyz", "/healthz", "/livez"] {
        assert_eq!(get_raw(&c1, path).await.0, http::StatusCode::OK, "{path}");
    }

    h1.set_healthy(false);
    assert!(!h1.is_healthy());
    let (status, body) = get_raw(&c1, "/readyz").await;
    assert_eq!(status, http::StatusCode::INTERNAL_SERVER_ERROR);
    assert!(
        body.contains("[-]etcd failed: reason withheld\n")
            && body.ends_with("readyz check failed\n"),
        "{body:?}"
    );
    for path in ["/healthz", "/livez"] {
        let (status, body) = get_raw(&c1, path).await;
        assert_eq!(status, http::StatusCode::INTERNAL_SERVER_ERROR, "{path}");
        assert!(body.contains("[-]etcd failed"), "{path}: {body:?}");
    }
    // The API keeps working: it answers, it is only unhealthy.
    assert_eq!(get_raw(&c1, "/api/v1/nodes").await.0, http::StatusCode::OK);
    assert_eq!(node_count(&c1).await, Some(1));
    assert_eq!(get_raw(&c1, "/readyz/ping").await.0, http::StatusCode::OK);
    // The other member is unaffected.
    assert_eq!(get_raw(&c2, "/readyz").await.0, http::StatusCode::OK);
    // Health is independent of reachability and survives a reconnect.
    h1.set_reachable(false).await.unwrap();
    h1.set_reachable(true).await.unwrap();
    let fresh = client_for(&h1.token_kubeconfig, None).await;
    assert_eq!(
        get_raw(&fresh, "/readyz").await.0,
        http::StatusCode::INTERNAL_SERVER_ERROR
    );

    h1.set_healthy(true);
    let (status, body) = get_raw(&fresh, "/readyz").await;
    assert_eq!((status, body.as_str()), (http::StatusCode::OK, "ok"));
    assert_eq!(get_raw(&fresh, "/healthz").await.0, http::StatusCode::OK);
    members.stop_all().await;
}

#[tokio::test]
async fn failure_files_switch_health_and_reachability_of_the_members_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = ManyOptions::new("f", 2, dir.path().join("members"));
    opts.nodes = 1;
    let members = flotilla_membersim::start_many(opts).await.unwrap();
    let (f1, f2) = (members.get("f1").unwrap(), members.get("f2").unwrap());
    let files = FailureFiles {
        unreachable: Some(dir.path().join("unreachable")),
        unhealthy: Some(dir.path().join("unhealthy")),
    };
    let all: Vec<_> = members.iter().collect();
    let follow = flotilla_membersim::follow_failure_files(&files, &all);
    let check = async {
        std::fs::write(dir.path().join("unhealthy"), "# only f2\nf2\n").unwrap();
        eventually("f2 unhealthy", WAIT, || async {
            (!f2.is_healthy()).then_some(())
        })
        .await;
        assert!(f1.is_healthy() && f1.is_reachable() && f2.is_reachable());
        let c2 = client_for(&f2.token_kubeconfig, None).await;
        assert_eq!(
            get_raw(&c2, "/readyz").await.0,
            http::StatusCode::INTERNAL_SERVER_ERROR
        );

        // An empty file names every member.
        std::fs::write(dir.path().join("unreachable"), "").unwrap();
        eventually("both unreachable", WAIT, || async {
            (!f1.is_reachable() && !f2.is_reachable()).then_some(())
        })
        .await;
        std::fs::remove_file(dir.path().join("unreachable")).unwrap();
        std::fs::remove_file(dir.path().join("unhealthy")).unwrap();
        eventually("all back", WAIT, || async {
            (f1.is_reachable() && f2.is_reachable() && f2.is_healthy()).then_some(())
        })
        .await;
        let c2 = client_for(&f2.token_kubeconfig, None).await;
        assert_eq!(get_raw(&c2, "/readyz").await.0, http::StatusCode::OK);
    };
    tokio::select! {
        () = follow => unreachable!("follow_failure_files ended"),
        () = check => {}
    }
    members.stop_all().await;
}
