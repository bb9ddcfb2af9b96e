//! A member's API server as the status controller reads it: GETs over one HTTP/1.1
//! connection that is kept between syncs and costs next to nothing while idle.
//!
//! Why not kube-rs's client: at thousands of members the status controller keeps one
//! connection per member, idle for all but a few milliseconds of every sync period. Through
//! hyper and kube-rs such an idle connection holds a connection task, hyper's request channel
//! (about 27 KB), its read and write buffers (about 30 KB) and kube-rs's tower buffer (about
//! 10 KB), measured with heaptrack at 1,000 members: most of what a member cost. None of
//! them can be given back while the connection waits. Here an idle connection is the socket
//! and its rustls state ([`tls`]); buffers live only during a request, and no task runs.
//! Connections are kept only between requests, by the reader that made them: a reader sends
//! one request at a time on a connection, and one sent while another is out opens its own.
//!
//! Only what the status probes need is spoken: `GET` with `Accept` and a bearer token (or
//! the TLS client certificate), responses framed by `Content-Length`, chunked transfer
//! coding or the end of the connection. A kept connection the member closed meanwhile is
//! noticed on reuse and the request is sent again on a new one, as HTTP clients do for
//! idempotent requests. A redirect is an answer like any other, never followed: the token
//! goes to the member's own endpoint only. There is no plain HTTP: every request carries the
//! member's credentials. Set-ups this does not speak (a proxy URL, a TLS server name other
//! than the endpoint's host) go through kube-rs's client instead.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::StatusCode;
use tokio::net::TcpStream;

use crate::MembershipError;

/// The largest response body read; a member answering more is misbehaving.
const MAX_BODY: usize = 1 << 30;
/// The largest response head read.
const MAX_HEAD: usize = 64 * 1024;
/// How much the read buffer grows by at a time.
const READ_CHUNK: usize = 16 * 1024;
/// Consumed bytes of a chunked body are dropped from the read buffer past this much.
const COMPACT_AT: usize = 64 * 1024;
/// Headers a response head may have.
const MAX_HEADERS: usize = 64;

/// A response as read: its status and whole body.
#[derive(Debug)]
pub struct MemberResponse {
    pub status: StatusCode,
    pub body: Vec<u8>,
}

/// Read-only access to one member's API server (see the module docs).
pub struct MemberReader {
    inner: Inner,
}

enum Inner {
    Direct(Box<Direct>),
    Kube(kube::Client),
}

impl std::fmt::Debug for MemberReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner {
            Inner::Direct(d) => write!(f, "MemberReader({}{})", d.authority, d.base_path),
            Inner::Kube(_) => f.write_str("MemberReader(kube)"),
        }
    }
}

/// Everything to open a connection to the member, and the connection kept open.
struct Direct {
    host: String,
    port: u16,
    /// The `Host` header.
    authority: String,
    /// The endpoint's path (no trailing slash), put before every request path.
    base_path: String,
    tls: (
        Arc<rustls::ClientConfig>,
        rustls::pki_types::ServerName<'static>,
    ),
    /// The `Authorization` header's value.
    authorization: Option<String>,
    connect_timeout: Duration,
    idle: Mutex<Option<Conn>>,
}

/// A connection to the member: TLS, whose buffers exist only while in use. There is no plain
/// HTTP: every request carries the member's credentials ([`crate::is_plain_http`]).
type Conn = Box<tls::LeanTls>;

/// How an exchange on a connection went wrong.
enum Failure {
    /// Nothing came back on a reused connection: the member had closed it (send again).
    Stale(std::io::Error),
    Io(std::io::Error),
    Protocol(String),
}

impl MemberReader {
    /// A reader that connects straight to `endpoint` with `tls` (used as is: its session
    /// store makes a new connection resume the last one's session) and `token`.
    pub(crate) fn direct(
        cluster: &str,
        endpoint: &http::Uri,
        tls: Arc<rustls::ClientConfig>,
        token: Option<&str>,
        connect_timeout: Duration,
    ) -> Result<Self, MembershipError> {
        let invalid = |reason: &str| MembershipError::InvalidEndpoint {
            cluster: cluster.to_string(),
            endpoint: endpoint.to_string(),
            reason: reason.to_string(),
        };
        match endpoint.scheme_str() {
            Some("https") => {}
            Some(scheme) if scheme.eq_ignore_ascii_case("http") => {
                return Err(MembershipError::PlainHttp {
                    cluster: cluster.to_string(),
                    endpoint: endpoint.to_string(),
                });
            }
            _ => return Err(invalid("the scheme must be https")),
        }
        let authority = endpoint
            .authority()
            .ok_or_else(|| invalid("no host"))?
            .as_str()
            .rsplit('@')
            .next()
            .unwrap_or_default()
            .to_string();
        let host = endpoint
            .host()
            .ok_or_else(|| invalid("no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = endpoint.port_u16().unwrap_or(443);
        let name = rustls::pki_types::ServerName::try_from(host.clone())
            .map_err(|_| invalid("the host is not a valid TLS server name"))?;
        let tls = (tls, name);
        let authorization = token
            .map(|t| format!("Bearer {t}"))
            .filter(|value| http::HeaderValue::from_str(value).is_ok());
        Ok(Self {
            inner: Inner::Direct(Box::new(Direct {
                host,
                port,
                authority,
                base_path: endpoint.path().trim_end_matches('/').to_string(),
                tls,
                authorization,
                connect_timeout,
                idle: Mutex::new(None),
            })),
        })
    }

    /// A reader through kube-rs's `client`.
    pub(crate) fn kube(client: kube::Client) -> Self {
        Self {
            inner: Inner::Kube(client),
        }
    }

    /// `GET path` with `Accept: accept`; any status is a response. Only connecting is
    /// bounded in time here: callers bound each request (the status controller bounds every
    /// call), and a request given up drops its connection with it.
    pub async fn get(&self, path: &str, accept: &str) -> Result<MemberResponse, MembershipError> {
        match &self.inner {
            Inner::Direct(direct) => direct.get(path, accept).await,
            Inner::Kube(client) => {
                let request = http::Request::get(path)
                    .header(http::header::ACCEPT, accept)
                    .body(kube::client::Body::empty())
                    .map_err(|e| request_error(path, e.to_string()))?;
                let response = client
                    .send(request)
                    .await
                    .map_err(|e| request_error(path, crate::error_chain(&e)))?;
                let status = response.status();
                let body = http_body_util::BodyExt::collect(response.into_body())
                    .await
                    .map_err(|e| request_error(path, crate::error_chain(&e)))?
                    .to_bytes()
                    .to_vec();
                Ok(MemberResponse { status, body })
            }
        }
    }

    /// `GET path` decoded from JSON; a status other than 2xx is [`MembershipError::MemberStatus`]
    /// with the message of the `Status` the member sent, if it sent one.
    pub async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        accept: &str,
    ) -> Result<T, MembershipError> {
        let response = self.get(path, accept).await?;
        if !response.status.is_success() {
            let message = serde_json::from_slice::<serde_json::Value>(&response.body)
                .ok()
                .and_then(|v| v.get("message")?.as_str().map(str::to_string))
                .unwrap_or_else(|| {
                    String::from_utf8_lossy(&response.body[..response.body.len().min(256)])
                        .into_owned()
                });
            return Err(MembershipError::MemberStatus {
                path: path.to_string(),
                code: response.status.as_u16(),
                message,
            });
        }
        serde_json::from_slice(&response.body).map_err(|source| MembershipError::MemberDecode {
            path: path.to_string(),
            source,
        })
    }

    /// Closes the kept connection, if any; the next request opens (and resumes) a new one.
    pub fn disconnect(&self) {
        if let Inner::Direct(direct) = &self.inner {
            direct.take_idle();
        }
    }

    /// Whether a connection is kept open.
    pub fn is_connected(&self) -> bool {
        match &self.inner {
            Inner::Direct(direct) => direct.idle.lock().is_ok_and(|idle| idle.is_some()),
            Inner::Kube(_) => false,
        }
    }
}

#[cfg(test)]
impl MemberReader {
    /// Bytes the buffers of the kept connection hold (`None`: no connection kept).
    pub(crate) fn idle_buffers(&self) -> Option<usize> {
        let Inner::Direct(direct) = &self.inner else {
            return None;
        };
        let idle = direct.idle.lock().ok()?;
        idle.as_ref().map(|conn| conn.buffered())
    }
}

impl Direct {
    fn take_idle(&self) -> Option<Conn> {
        // A poisoned lock only means a panic elsewhere mid-request; the slot is still sound.
        match self.idle.lock() {
            Ok(mut idle) => idle.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        }
    }

    fn keep_idle(&self, io: Conn) {
        match self.idle.lock() {
            Ok(mut idle) => *idle = Some(io),
            Err(poisoned) => *poisoned.into_inner() = Some(io),
        }
    }

    async fn get(&self, path: &str, accept: &str) -> Result<MemberResponse, MembershipError> {
        let head = self.request_head(path, accept)?;
        // A kept connection first; if the member closed it meanwhile, once more on a new one.
        if let Some(io) = self.take_idle() {
            match self.exchange(io, &head).await {
                Ok(response) => return Ok(response),
                Err(Failure::Stale(_)) => {}
                Err(failure) => return Err(failed(path, failure)),
            }
        }
        let io = self
            .connect()
            .await
            .map_err(|reason| request_error(path, reason))?;
        self.exchange(io, &head)
            .await
            .map_err(|failure| failed(path, failure))
    }

    fn request_head(&self, path: &str, accept: &str) -> Result<Vec<u8>, MembershipError> {
        let invalid = |what: &str| request_error(path, format!("invalid {what}"));
        // Both go into the request head as they are: nothing that could end a line.
        let target = format!("{}{path}", self.base_path);
        if !target.starts_with('/') || target.parse::<http::uri::PathAndQuery>().is_err() {
            return Err(invalid("path"));
        }
        if http::HeaderValue::from_str(accept).is_err() {
            return Err(invalid("Accept header"));
        }
        let mut head = format!(
            "GET {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: flotilla/{}\r\nAccept: {accept}\r\n",
            self.authority,
            env!("CARGO_PKG_VERSION"),
        );
        if let Some(authorization) = &self.authorization {
            head.push_str("Authorization: ");
            head.push_str(authorization);
            head.push_str("\r\n");
        }
        head.push_str("\r\n");
        Ok(head.into_bytes())
    }

    async fn connect(&self) -> Result<Conn, String> {
        let connect = async {
            let tcp = TcpStream::connect((self.host.as_str(), self.port))
                .await
                .map_err(|e| format!("connecting: {}", crate::error_chain(&e)))?;
            // Requests are one small write each; waiting to fill a segment only adds delay.
            let _ = tcp.set_nodelay(true);
            let (config, name) = &self.tls;
            let io = tls::LeanTls::connect(config.clone(), name.clone(), tcp)
                .await
                .map_err(|e| format!("TLS handshake: {}", crate::error_chain(&e)))?;
            Ok(Box::new(io))
        };
        match tokio::time::timeout(self.connect_timeout, connect).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "connecting: no connection within {:?}",
                self.connect_timeout
            )),
        }
    }

    /// Sends `head` on `io` and reads the response; keeps `io` for the next request when the
    /// response allows it.
    async fn exchange(&self, mut io: Conn, head: &[u8]) -> Result<MemberResponse, Failure> {
        if let Err(e) = write_head(&mut io, head).await {
            return Err(Failure::Stale(e));
        }
        let (response, reusable) = read_response(&mut io).await?;
        if reusable && io.settle() {
            self.keep_idle(io);
        }
        Ok(response)
    }
}

fn request_error(path: &str, reason: String) -> MembershipError {
    MembershipError::MemberRequest {
        path: path.to_string(),
        reason,
    }
}

fn failed(path: &str, failure: Failure) -> MembershipError {
    let reason = match failure {
        Failure::Stale(e) | Failure::Io(e) => crate::error_chain(&e),
        Failure::Protocol(reason) => reason,
    };
    request_error(path, reason)
}

async fn write_head(io: &mut Conn, head: &[u8]) -> std::io::Result<()> {
    io.write_all(head).await
}

/// What the response head says of the body that follows.
struct Head {
    status: StatusCode,
    /// Bytes of the head, which the buffer starts with.
    len: usize,
    framing: Framing,
    close: bool,
}

enum Framing {
    Length(usize),
    Chunked,
    /// Until the member closes the connection.
    Close,
}

/// Reads one response from `io`: the response and whether `io` may carry another request.
async fn read_response(io: &mut Conn) -> Result<(MemberResponse, bool), Failure> {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let head = loop {
        let read = fill(io, &mut buf).await;
        match read {
            // Nothing at all on a reused connection: closed by the member while idle.
            Ok(0) if buf.is_empty() => {
                return Err(Failure::Stale(std::io::ErrorKind::UnexpectedEof.into()));
            }
            Err(e) if buf.is_empty() => return Err(Failure::Stale(e)),
            Ok(0) => return Err(Failure::Protocol("connection closed mid-head".into())),
            Err(e) => return Err(Failure::Io(e)),
            Ok(_) => {}
        }
        if let Some(head) = parse_head(&mut buf)? {
            break head;
        }
        if buf.len() > MAX_HEAD {
            return Err(Failure::Protocol("response head too large".into()));
        }
    };
    buf.drain(..head.len);
    let no_body = head.status == StatusCode::NO_CONTENT
        || head.status == StatusCode::NOT_MODIFIED
        || head.status.is_informational();
    let (body, framed) = if no_body {
        (Vec::new(), true)
    } else {
        match head.framing {
            Framing::Length(len) => (read_length(io, buf, len).await?, true),
            Framing::Chunked => read_chunked(io, buf).await?,
            Framing::Close => (read_to_end(io, buf).await?, false),
        }
    };
    Ok((
        MemberResponse {
            status: head.status,
            body,
        },
        framed && !head.close,
    ))
}

/// Reads more of the response into `buf`; the count read (0 at the end of the stream).
async fn fill(io: &mut Conn, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    if buf.capacity() - buf.len() < READ_CHUNK / 4 {
        buf.reserve(READ_CHUNK);
    }
    io.read_buf(buf).await
}

/// The head at the start of `buf`, when it is all there. Informational responses before it
/// (`100 Continue`) are dropped from `buf`.
fn parse_head(buf: &mut Vec<u8>) -> Result<Option<Head>, Failure> {
    loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(Failure::Protocol(format!("malformed response head: {e}"))),
        };
        let code = response.code.unwrap_or_default();
        let status = StatusCode::from_u16(code)
            .map_err(|_| Failure::Protocol(format!("invalid status {code}")))?;
        if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
            buf.drain(..len);
            continue;
        }
        let mut length = None;
        let mut chunked = false;
        // HTTP/1.0 closes unless told otherwise; HTTP/1.1 keeps unless told otherwise.
        let mut close = response.version != Some(1);
        for header in response.headers.iter() {
            let value = String::from_utf8_lossy(header.value);
            let value = value.trim();
            if header.name.eq_ignore_ascii_case("content-length") {
                let parsed = value
                    .parse::<usize>()
                    .map_err(|_| Failure::Protocol(format!("invalid Content-Length {value:?}")))?;
                if length.is_some_and(|l| l != parsed) {
                    return Err(Failure::Protocol("conflicting Content-Length".into()));
                }
                length = Some(parsed);
            } else if header.name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value
                    .rsplit(',')
                    .next()
                    .is_some_and(|last| last.trim().eq_ignore_ascii_case("chunked"));
                if !chunked {
                    return Err(Failure::Protocol(format!(
                        "unsupported Transfer-Encoding {value:?}"
                    )));
                }
            } else if header.name.eq_ignore_ascii_case("connection") {
                for token in value.split(',') {
                    let token = token.trim();
                    if token.eq_ignore_ascii_case("close") {
                        close = true;
                    } else if token.eq_ignore_ascii_case("keep-alive") {
                        close = false;
                    }
                }
            }
        }
        // Chunked wins over a length (RFC 9112, 6.3), and then the connection is not reused.
        let framing = match (chunked, length) {
            (true, Some(_)) => {
                close = true;
                Framing::Chunked
            }
            (true, None) => Framing::Chunked,
            (false, Some(len)) => Framing::Length(len),
            (false, None) => Framing::Close,
        };
        if let Framing::Length(len) = framing {
            if len > MAX_BODY {
                return Err(Failure::Protocol(format!("response body of {len} bytes")));
            }
        }
        return Ok(Some(Head {
            status,
            len,
            framing,
            close,
        }));
    }
}

async fn read_length(io: &mut Conn, mut body: Vec<u8>, len: usize) -> Result<Vec<u8>, Failure> {
    if body.len() > len {
        return Err(Failure::Protocol("more bytes than Content-Length".into()));
    }
    body.reserve_exact(len - body.len());
    while body.len() < len {
        let n = io.read_buf(&mut body).await.map_err(Failure::Io)?;
        if n == 0 {
            return Err(Failure::Protocol("connection closed mid-body".into()));
        }
        if body.len() > len {
            return Err(Failure::Protocol("more bytes than Content-Length".into()));
        }
    }
    Ok(body)
}

async fn read_to_end(io: &mut Conn, mut body: Vec<u8>) -> Result<Vec<u8>, Failure> {
    loop {
        if fill(io, &mut body).await.map_err(Failure::Io)? == 0 {
            return Ok(body);
        }
        if body.len() > MAX_BODY {
            return Err(Failure::Protocol("response body too large".into()));
        }
    }
}

/// Decodes a chunked body whose first bytes are in `buf`, through its trailers; and whether
/// nothing came after it (anything more would be taken for the next response).
async fn read_chunked(io: &mut Conn, mut buf: Vec<u8>) -> Result<(Vec<u8>, bool), Failure> {
    let mut body = Vec::new();
    let mut pos = 0;
    let protocol = |what: &str| Failure::Protocol(format!("malformed chunked body: {what}"));
    // Reads more; the end of the stream before the last chunk is an error.
    macro_rules! more {
        () => {
            if pos >= COMPACT_AT {
                buf.drain(..pos);
                pos = 0;
            }
            if fill(io, &mut buf).await.map_err(Failure::Io)? == 0 {
                return Err(Failure::Protocol("connection closed mid-body".into()));
            }
        };
    }
    loop {
        let size = match httparse::parse_chunk_size(&buf[pos..]) {
            Ok(httparse::Status::Complete((used, size))) => {
                pos += used;
                usize::try_from(size).map_err(|_| protocol("chunk too large"))?
            }
            Ok(httparse::Status::Partial) => {
                more!();
                continue;
            }
            Err(_) => return Err(protocol("invalid chunk size")),
        };
        if size == 0 {
            break;
        }
        if body.len().saturating_add(size) > MAX_BODY {
            return Err(Failure::Protocol("response body too large".into()));
        }
        while buf.len() - pos < size + 2 {
            more!();
        }
        body.extend_from_slice(&buf[pos..pos + size]);
        if &buf[pos + size..pos + size + 2] != b"\r\n" {
            return Err(protocol("chunk not followed by CRLF"));
        }
        pos += size + 2;
    }
    // Trailer lines, up to the empty line that ends the message.
    loop {
        match buf[pos..].windows(2).position(|w| w == b"\r\n") {
            Some(0) => return Ok((body, buf.len() == pos + 2)),
            Some(line) => pos += line + 2,
            None => {
                if buf.len() - pos > MAX_HEAD {
                    return Err(protocol("trailers too large"));
                }
                more!();
            }
        }
    }
}

#[cfg(test)]
mod tests;
mod tls;
