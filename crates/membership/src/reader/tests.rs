use std::time::Duration;

use serde_json::json;

use crate::test_member::{Seen, member, member_with_hang_up, next};
use crate::{MemberCredentials, MemberReader, MemberTarget, MembershipError};

async fn reader_of(endpoint: &str, credentials: &MemberCredentials) -> MemberReader {
    let cluster: flotilla_karmada_api::Cluster = serde_json::from_value(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "m1"},
        "spec": {"syncMode": "Push", "apiEndpoint": endpoint},
    }))
    .unwrap();
    MemberTarget::of(&cluster)
        .reader("m1", credentials, Duration::from_secs(5))
        .await
        .unwrap()
}

fn request_path(seen: Seen) -> String {
    match seen {
        Seen::Request(head) => head.split(' ').nth(1).unwrap_or_default().to_string(),
        other => panic!("expected a request, saw {other:?}"),
    }
}

#[derive(serde::Deserialize, Debug, PartialEq)]
struct Answer {
    answer: u32,
}

#[tokio::test]
async fn one_kept_connection_carries_every_request_whatever_its_framing() {
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    let (endpoint, mut seen) = member(&ca).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t0k", ca.cert_pem())).await;
    assert!(!reader.is_connected());

    for path in ["/length", "/chunked", "/continue", "/length"] {
        let answer: Answer = reader.get_json(path, "application/json").await.unwrap();
        assert_eq!(answer, Answer { answer: 42 }, "{path}");
    }
    let big = reader.get("/big", "application/json").await.unwrap();
    assert_eq!(big.status, http::StatusCode::OK);
    assert_eq!(big.body.len(), 1 << 20);
    let text: String = serde_json::from_slice(&big.body).unwrap();
    assert!(text.bytes().all(|b| b == b'x'));
    assert!(reader.is_connected());
    // Kept idle, the connection holds no buffer (a 1 MiB response went through it).
    assert_eq!(reader.idle_buffers(), Some(0));

    assert_eq!(
        next(&mut seen).await,
        Seen::Connected(Some(rustls::HandshakeKind::Full))
    );
    for path in ["/length", "/chunked", "/continue", "/length", "/big"] {
        let Seen::Request(head) = next(&mut seen).await else {
            panic!("expected the request for {path}");
        };
        assert!(
            head.starts_with(&format!("get {path} http/1.1\r\n")),
            "{head}"
        );
        assert!(head.contains("\r\nauthorization: bearer t0k\r\n"), "{head}");
        assert!(head.contains("\r\naccept: application/json\r\n"), "{head}");
        let host = endpoint.trim_start_matches("https://");
        assert!(head.contains(&format!("\r\nhost: {host}\r\n")), "{head}");
    }
    // Dropping the reader closes its connection.
    drop(reader);
    assert_eq!(next(&mut seen).await, Seen::Closed);
}

#[tokio::test]
async fn a_connection_the_member_closed_while_idle_is_replaced_and_resumed() {
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    let (endpoint, mut seen, hang_up) = member_with_hang_up(&ca).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", ca.cert_pem())).await;

    let answer: Answer = reader
        .get_json("/hangup", "application/json")
        .await
        .unwrap();
    assert_eq!(answer.answer, 42);
    assert!(reader.is_connected());
    assert_eq!(
        next(&mut seen).await,
        Seen::Connected(Some(rustls::HandshakeKind::Full))
    );
    assert_eq!(request_path(next(&mut seen).await), "/hangup");
    // The member closes the connection while the reader keeps it idle.
    hang_up.notify_one();
    assert_eq!(next(&mut seen).await, Seen::Closed);

    let answer: Answer = reader
        .get_json("/length", "application/json")
        .await
        .unwrap();
    assert_eq!(answer.answer, 42);
    assert_eq!(
        next(&mut seen).await,
        Seen::Connected(Some(rustls::HandshakeKind::Resumed))
    );
    assert_eq!(request_path(next(&mut seen).await), "/length");
}

#[tokio::test]
async fn disconnect_closes_and_the_next_request_resumes_the_session() {
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    let (endpoint, mut seen) = member(&ca).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", ca.cert_pem())).await;
    reader.get("/length", "application/json").await.unwrap();
    reader.disconnect();
    assert!(!reader.is_connected());
    reader.get("/length", "application/json").await.unwrap();

    use rustls::HandshakeKind::{Full, Resumed};
    let expected = [
        Seen::Connected(Some(Full)),
        Seen::Request(String::new()),
        Seen::Closed,
        Seen::Connected(Some(Resumed)),
        Seen::Request(String::new()),
    ];
    for want in expected {
        match (next(&mut seen).await, want) {
            (Seen::Request(_), Seen::Request(_)) => {}
            (got, want) => assert_eq!(got, want),
        }
    }
}

#[tokio::test]
async fn responses_that_end_the_connection_are_read_whole_and_not_kept() {
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    // The member ends the connection with a closing alert.
    let (endpoint, mut seen) = member(&ca).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", ca.cert_pem())).await;
    for path in ["/close", "/until-close"] {
        let answer: Answer = reader.get_json(path, "application/json").await.unwrap();
        assert_eq!(answer.answer, 42, "{path}");
        assert!(!reader.is_connected(), "{path}");
        assert!(matches!(next(&mut seen).await, Seen::Connected(_)));
        assert_eq!(request_path(next(&mut seen).await), path);
        assert_eq!(next(&mut seen).await, Seen::Closed);
    }
}

#[tokio::test]
async fn an_error_status_carries_the_members_message_and_keeps_the_connection() {
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    let (endpoint, _seen) = member(&ca).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", ca.cert_pem())).await;
    let err = reader
        .get_json::<Answer>("/missing", "application/json")
        .await
        .unwrap_err();
    match &err {
        MembershipError::MemberStatus {
            path,
            code,
            message,
        } => {
            assert_eq!(path, "/missing");
            assert_eq!(*code, 404);
            assert_eq!(message, "the server could not find the requested resource");
        }
        other => panic!("expected MemberStatus, got {other:?}"),
    }
    assert!(reader.is_connected());
}

#[tokio::test]
async fn bad_input_and_bad_answers_are_errors() {
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    let (endpoint, mut seen) = member(&ca).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", ca.cert_pem())).await;
    // Nothing that could end the request line or a header is sent.
    for (path, accept) in [
        ("/length\r\nX-Evil: 1", "application/json"),
        ("/length", "application/json\r\nX-Evil: 1"),
        ("length", "application/json"),
    ] {
        let err = reader.get(path, accept).await.unwrap_err();
        assert!(
            matches!(err, MembershipError::MemberRequest { .. }),
            "{err:?}"
        );
    }
    let err = reader
        .get("/bad-chunk", "application/json")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("chunk"), "{err}");
    assert!(!reader.is_connected());
    let err = reader
        .get_json::<Answer>("/chunked-not-json", "application/json")
        .await
        .unwrap_err();
    assert!(
        matches!(err, MembershipError::MemberStatus { code: 500, .. }),
        "{err:?}"
    );
    // The member saw the bad chunk's request first: the refused ones never left.
    assert!(matches!(next(&mut seen).await, Seen::Connected(Some(_))));
    assert_eq!(request_path(next(&mut seen).await), "/bad-chunk");
}

#[tokio::test]
async fn a_closed_port_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
    let endpoint = format!("https://127.0.0.1:{port}");
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", ca.cert_pem())).await;
    let err = reader.get("/readyz", "*/*").await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("connecting") && text.to_lowercase().contains("refused"),
        "{text}"
    );
}
