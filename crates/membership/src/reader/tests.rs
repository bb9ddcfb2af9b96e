use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::{MemberCredentials, MemberReader, MemberTarget, MembershipError};

/// What the test member saw, in order.
#[derive(Debug, PartialEq)]
enum Seen {
    /// A connection, with how its TLS handshake went (`None` for plain HTTP).
    Connected(Option<rustls::HandshakeKind>),
    /// A request head, lower-cased.
    Request(String),
    Closed,
}

/// The raw response the test member writes for `path`, and whether it closes the
/// connection after writing it.
fn respond(path: &str) -> (Vec<u8>, bool) {
    let body = r#"{"answer":42}"#;
    let length = |extra: &str| {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    };
    match path {
        "/length" => (length(""), false),
        // Answers, then closes the connection without saying so when told to (an idle
        // timeout).
        "/hangup" => (length(""), false),
        "/close" => (length("Connection: close\r\n"), true),
        "/until-close" => (format!("HTTP/1.1 200 OK\r\n\r\n{body}").into_bytes(), true),
        "/continue" => (
            [b"HTTP/1.1 100 Continue\r\n\r\n".as_slice(), &length("")].concat(),
            false,
        ),
        "/chunked" => {
            let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for piece in [&body[..5], &body[5..]] {
                out.extend(format!("{:x};ext=1\r\n{piece}\r\n", piece.len()).bytes());
            }
            out.extend(b"0\r\nX-Trailer: t\r\n\r\n");
            (out, false)
        }
        "/big" => {
            // 1 MiB of JSON in chunks of 8 KiB (a large pod list).
            let text = format!("\"{}\"", "x".repeat((1 << 20) - 2));
            let mut out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
            for piece in text.as_bytes().chunks(8192) {
                out.extend(format!("{:x}\r\n", piece.len()).bytes());
                out.extend(piece);
                out.extend(b"\r\n");
            }
            out.extend(b"0\r\n\r\n");
            (out, false)
        }
        "/missing" => {
            let status = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                "message": "the server could not find the requested resource", "code": 404});
            let text = status.to_string();
            (
                format!(
                    "HTTP/1.1 404 Not Found\r\nContent-Length: {}\r\n\r\n{text}",
                    text.len()
                )
                .into_bytes(),
                false,
            )
        }
        "/bad-chunk" => (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n".to_vec(),
            true,
        ),
        _ => (
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n".to_vec(),
            false,
        ),
    }
}

async fn serve_connection<S>(
    mut io: S,
    seen: mpsc::UnboundedSender<Seen>,
    hang_up: Arc<tokio::sync::Notify>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    'requests: loop {
        let end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            let mut piece = [0u8; 4096];
            match io.read(&mut piece).await {
                Ok(0) | Err(_) => break 'requests,
                Ok(n) => buf.extend_from_slice(&piece[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
        buf.drain(..end);
        let path = head.split(' ').nth(1).unwrap_or_default().to_string();
        let _ = seen.send(Seen::Request(head));
        let (response, close) = respond(&path);
        if io.write_all(&response).await.is_err() || close {
            break;
        }
        if path == "/hangup" {
            hang_up.notified().await;
            break;
        }
    }
    let _ = io.shutdown().await;
    drop(io);
    let _ = seen.send(Seen::Closed);
}

/// A member on a free loopback port, over TLS signed by `ca` or plain HTTP without one.
async fn member(
    ca: Option<&flotilla_pki::CertificateAuthority>,
) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let (endpoint, seen, _) = member_with_hang_up(ca).await;
    (endpoint, seen)
}

/// [`member`], and what makes it close a connection that answered `/hangup`.
async fn member_with_hang_up(
    ca: Option<&flotilla_pki::CertificateAuthority>,
) -> (
    String,
    mpsc::UnboundedReceiver<Seen>,
    Arc<tokio::sync::Notify>,
) {
    let hang_up = Arc::new(tokio::sync::Notify::new());
    let hang_ups = hang_up.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let acceptor = ca.map(|ca| {
        let serving = ca
            .issue_server("member", &[], &["127.0.0.1".parse().unwrap()])
            .unwrap();
        let tls = flotilla_pki::server_config(&serving.cert_pem, &serving.key_pem, &[]).unwrap();
        tokio_rustls::TlsAcceptor::from(tls)
    });
    let scheme = if acceptor.is_some() { "https" } else { "http" };
    let (seen, events) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let seen = seen.clone();
            let hang_up = hang_ups.clone();
            match &acceptor {
                Some(acceptor) => {
                    let Ok(stream) = acceptor.accept(tcp).await else {
                        continue;
                    };
                    let _ = seen.send(Seen::Connected(stream.get_ref().1.handshake_kind()));
                    tokio::spawn(serve_connection(stream, seen, hang_up));
                }
                None => {
                    let _ = seen.send(Seen::Connected(None));
                    tokio::spawn(serve_connection(tcp, seen, hang_up));
                }
            }
        }
    });
    (format!("{scheme}://{addr}"), events, hang_up)
}

async fn reader_of(endpoint: &str, credentials: &MemberCredentials) -> MemberReader {
    let cluster: flotilla_api::Cluster = serde_json::from_value(json!({
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

async fn next(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("the member saw nothing in 10 s")
        .expect("the member stopped")
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
    let (endpoint, mut seen) = member(Some(&ca)).await;
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
    let (endpoint, mut seen, hang_up) = member_with_hang_up(Some(&ca)).await;
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
    let (endpoint, mut seen) = member(Some(&ca)).await;
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
    let (endpoint, mut seen) = member(None).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", "")).await;
    for path in ["/close", "/until-close"] {
        let answer: Answer = reader.get_json(path, "application/json").await.unwrap();
        assert_eq!(answer.answer, 42, "{path}");
        assert!(!reader.is_connected(), "{path}");
        assert_eq!(next(&mut seen).await, Seen::Connected(None));
        assert_eq!(request_path(next(&mut seen).await), path);
        assert_eq!(next(&mut seen).await, Seen::Closed);
    }
}

#[tokio::test]
async fn an_error_status_carries_the_members_message_and_keeps_the_connection() {
    let (endpoint, _seen) = member(None).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", "")).await;
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
    let (endpoint, mut seen) = member(None).await;
    let reader = reader_of(&endpoint, &MemberCredentials::token("t", "")).await;
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
    assert_eq!(next(&mut seen).await, Seen::Connected(None));
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
