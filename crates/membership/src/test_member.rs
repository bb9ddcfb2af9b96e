//! A scripted member for tests: raw HTTP/1.1 responses per path (`/redirect-to/PORT` sends
//! the client to another loopback port), over TLS, and a stream of what it saw (connections with their handshake kind, request heads, closes).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

/// What the test member saw, in order.
#[derive(Debug, PartialEq)]
pub(crate) enum Seen {
    /// A connection, with how its TLS handshake went.
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
    if let Some(port) = path.strip_prefix("/redirect-to/") {
        // Somewhere else on loopback: a client that follows would go there.
        return (
            format!(
                "HTTP/1.1 302 Found\r\nLocation: https://127.0.0.1:{port}/stolen\r\nContent-Length: 0\r\n\r\n"
            )
            .into_bytes(),
            false,
        );
    }
    match path {
        "/length" => (length(""), false),
        "/version" => {
            let info = json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0",
                "gitCommit": "", "gitTreeState": "", "buildDate": "", "goVersion": "",
                "compiler": "", "platform": ""})
            .to_string();
            (
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{info}",
                    info.len()
                )
                .into_bytes(),
                false,
            )
        }
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

/// A member on a free loopback port, over TLS signed by `ca`.
pub(crate) async fn member(
    ca: &flotilla_pki::CertificateAuthority,
) -> (String, mpsc::UnboundedReceiver<Seen>) {
    let (endpoint, seen, _) = member_with_hang_up(ca).await;
    (endpoint, seen)
}

/// [`member`], and what makes it close a connection that answered `/hangup`.
pub(crate) async fn member_with_hang_up(
    ca: &flotilla_pki::CertificateAuthority,
) -> (
    String,
    mpsc::UnboundedReceiver<Seen>,
    Arc<tokio::sync::Notify>,
) {
    let hang_up = Arc::new(tokio::sync::Notify::new());
    let hang_ups = hang_up.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let serving = ca
        .issue_server("member", &[], &["127.0.0.1".parse().unwrap()])
        .unwrap();
    let tls = flotilla_pki::server_config(&serving.cert_pem, &serving.key_pem, &[]).unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let (seen, events) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let seen = seen.clone();
            let hang_up = hang_ups.clone();
            let Ok(stream) = acceptor.accept(tcp).await else {
                continue;
            };
            let _ = seen.send(Seen::Connected(stream.get_ref().1.handshake_kind()));
            tokio::spawn(serve_connection(stream, seen, hang_up));
        }
    });
    (format!("https://{addr}"), events, hang_up)
}

pub(crate) async fn next(seen: &mut mpsc::UnboundedReceiver<Seen>) -> Seen {
    tokio::time::timeout(Duration::from_secs(10), seen.recv())
        .await
        .expect("the member saw nothing in 10 s")
        .expect("the member stopped")
}
