//! A TLS client connection whose buffers exist only while it is used, over rustls's
//! unbuffered API. tokio-rustls (over rustls's buffered connection) keeps a 4 KB receive
//! buffer in every connection for its whole life, and the status controller keeps a
//! connection per member between syncs: at thousands of members that buffer was the largest
//! part of what an idle connection cost. Here, once a response has been read,
//! [`LeanTls::settle`] gives back every buffer, and an idle connection is its socket and
//! rustls's connection state.

use std::io;
use std::sync::Arc;

use rustls::client::UnbufferedClientConnection;
use rustls::pki_types::ServerName;
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How much room a read from the socket gets: a whole TLS record and its header.
const RECORD_ROOM: usize = 16 * 1024 + 256;

/// What [`LeanTls::drive`] runs the connection until.
enum Until<'a> {
    /// The handshake is done: application data may be sent.
    Handshaken,
    /// These bytes are encrypted and sent.
    Sent(&'a [u8]),
    /// Application data has arrived, or the member has closed the connection.
    Received,
}

pub(super) struct LeanTls {
    tcp: TcpStream,
    tls: UnbufferedClientConnection,
    /// TLS bytes received and not yet processed.
    incoming: Vec<u8>,
    /// TLS bytes to send.
    outgoing: Vec<u8>,
    /// Decrypted bytes not yet read, from `read_at` on.
    plaintext: Vec<u8>,
    read_at: usize,
    /// The member closed the connection (cleanly or not): nothing more will arrive.
    closed: bool,
}

impl LeanTls {
    /// Runs the handshake with `server` over `tcp`.
    pub async fn connect(
        config: Arc<rustls::ClientConfig>,
        server: ServerName<'static>,
        tcp: TcpStream,
    ) -> io::Result<Self> {
        let tls = UnbufferedClientConnection::new(config, server).map_err(tls_error)?;
        let mut connection = Self {
            tcp,
            tls,
            incoming: Vec::new(),
            outgoing: Vec::new(),
            plaintext: Vec::new(),
            read_at: 0,
            closed: false,
        };
        connection.drive(Until::Handshaken).await?;
        if connection.closed {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection during the handshake",
            ));
        }
        Ok(connection)
    }

    /// Encrypts and sends `data`.
    pub async fn write_all(&mut self, data: &[u8]) -> io::Result<()> {
        if self.closed {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        self.drive(Until::Sent(data)).await
    }

    /// Appends received application data to `buf` (up to its spare capacity, at least a
    /// little); how much, 0 once the member has closed the connection.
    pub async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        if self.read_at == self.plaintext.len() {
            self.plaintext.clear();
            self.read_at = 0;
            if self.closed {
                // rustls reports the member's closing alert once; then there is nothing more.
                return Ok(0);
            }
            self.drive(Until::Received).await?;
        }
        let available = &self.plaintext[self.read_at..];
        let room = (buf.capacity() - buf.len()).max(64);
        let n = available.len().min(room);
        buf.extend_from_slice(&available[..n]);
        self.read_at += n;
        Ok(n)
    }

    /// Before the connection is kept idle: gives back its buffers, and whether it is fit to
    /// keep (nothing unread, and not closed by the member, as far as the socket tells
    /// without waiting).
    pub fn settle(&mut self) -> bool {
        if self.closed || self.read_at != self.plaintext.len() {
            return false;
        }
        self.plaintext = Vec::new();
        self.read_at = 0;
        self.outgoing = Vec::new();
        let mut probe = [0u8; 64];
        let fit = match self.tcp.try_read(&mut probe) {
            Err(e) => e.kind() == io::ErrorKind::WouldBlock,
            Ok(0) => false,
            // TLS records sent unasked (a session ticket, an alert): processed at the
            // next use, which a closing alert makes fail as a stale connection.
            Ok(n) => {
                self.incoming.extend_from_slice(&probe[..n]);
                true
            }
        };
        if self.incoming.is_empty() {
            self.incoming = Vec::new();
        }
        fit
    }

    /// Bytes its buffers hold.
    #[cfg(test)]
    pub fn buffered(&self) -> usize {
        self.incoming.capacity() + self.outgoing.capacity() + self.plaintext.capacity()
    }

    /// Processes what was received and sends what rustls asks to, reading from the socket
    /// whenever rustls needs more, until `until` is met.
    async fn drive(&mut self, until: Until<'_>) -> io::Result<()> {
        let mut to_send = match until {
            Until::Sent(data) => Some(data),
            _ => None,
        };
        loop {
            let mut transmit = false;
            let mut done = false;
            let mut need_input = false;
            let UnbufferedStatus { mut discard, state } =
                self.tls.process_tls_records(&mut self.incoming);
            match state.map_err(tls_error)? {
                ConnectionState::ReadTraffic(mut traffic) => {
                    while let Some(record) = traffic.next_record() {
                        let record = record.map_err(tls_error)?;
                        discard += record.discard;
                        self.plaintext.extend_from_slice(record.payload);
                    }
                    done = matches!(until, Until::Received);
                }
                ConnectionState::EncodeTlsData(mut encode) => {
                    // Asked with no room, it says how much it needs and keeps the record.
                    let needed = match encode.encode(&mut []) {
                        Err(EncodeError::InsufficientSize(e)) => e.required_size,
                        Ok(_) => 0,
                        Err(e) => return Err(io::Error::other(e.to_string())),
                    };
                    if needed > 0 {
                        let start = self.outgoing.len();
                        self.outgoing.resize(start + needed, 0);
                        encode
                            .encode(&mut self.outgoing[start..])
                            .map_err(|e| io::Error::other(e.to_string()))?;
                    }
                }
                ConnectionState::TransmitTlsData(data) => {
                    // Sent below, before anything else is processed.
                    data.done();
                    transmit = true;
                }
                ConnectionState::BlockedHandshake => need_input = true,
                ConnectionState::WriteTraffic(mut traffic) => match (&until, to_send.take()) {
                    (Until::Sent(_), Some(data)) => {
                        encrypt(&mut traffic, data, &mut self.outgoing)?;
                        transmit = true;
                        done = true;
                    }
                    (Until::Received, _) => need_input = true,
                    _ => done = true,
                },
                ConnectionState::PeerClosed | ConnectionState::Closed => {
                    self.closed = true;
                    if matches!(until, Until::Sent(_)) {
                        return Err(io::ErrorKind::BrokenPipe.into());
                    }
                    done = true;
                }
                _ => {
                    return Err(io::Error::other("unexpected TLS connection state"));
                }
            }
            self.incoming.drain(..discard);
            if transmit && !self.outgoing.is_empty() {
                self.tcp.write_all(&self.outgoing).await?;
                self.outgoing.clear();
            }
            if done {
                return Ok(());
            }
            if need_input {
                self.incoming.reserve(RECORD_ROOM);
                if self.tcp.read_buf(&mut self.incoming).await? == 0 {
                    // Closed without a closing alert: what came may have been cut short (a
                    // body that runs to the end of the connection could be truncated).
                    self.closed = true;
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the member closed the connection without a TLS closing alert",
                    ));
                }
            }
        }
    }
}

/// Encrypts `data` onto the end of `outgoing`.
fn encrypt(
    traffic: &mut rustls::unbuffered::WriteTraffic<'_, rustls::client::ClientConnectionData>,
    data: &[u8],
    outgoing: &mut Vec<u8>,
) -> io::Result<()> {
    let start = outgoing.len();
    // Records of at most 16 KB, each with its header and tag.
    let room = data.len() + (data.len() / (16 * 1024) + 1) * 64;
    outgoing.resize(start + room, 0);
    let n = match traffic.encrypt(data, &mut outgoing[start..]) {
        Ok(n) => n,
        Err(EncryptError::InsufficientSize(e)) => {
            outgoing.resize(start + e.required_size, 0);
            traffic
                .encrypt(data, &mut outgoing[start..])
                .map_err(|e| io::Error::other(e.to_string()))?
        }
        Err(e) => return Err(io::Error::other(e.to_string())),
    };
    outgoing.truncate(start + n);
    Ok(())
}

fn tls_error(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn after_the_members_closing_alert_reads_end_and_writes_fail() {
        let ca = flotilla_pki::CertificateAuthority::generate("member-ca").unwrap();
        let (endpoint, _seen) = crate::test_member::member(&ca).await;
        let addr = endpoint.trim_start_matches("https://");
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut config = (*flotilla_pki::client_config(&[ca.cert_pem().to_string()], None, false)
            .unwrap())
        .clone();
        // As the reader's: no ALPN, so HTTP/1.1.
        config.alpn_protocols.clear();
        let config = Arc::new(config);
        let server = ServerName::try_from("127.0.0.1").unwrap();
        let mut tls = LeanTls::connect(config, server, tcp).await.unwrap();

        // A body that runs to the end of the connection, which the member ends with its
        // closing alert.
        tls.write_all(b"GET /until-close HTTP/1.1\r\nHost: m\r\n\r\n")
            .await
            .unwrap();
        let mut response = Vec::new();
        while tls.read_buf(&mut response).await.unwrap() > 0 {}
        let response = String::from_utf8(response).unwrap();
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.ends_with("{\"answer\":42}"), "{response}");
        // The end stays the end, and the connection is not kept nor written to.
        assert_eq!(tls.read_buf(&mut Vec::new()).await.unwrap(), 0);
        assert!(!tls.settle());
        let write = tls
            .write_all(b"GET /length HTTP/1.1\r\nHost: m\r\n\r\n")
            .await;
        assert_eq!(write.unwrap_err().kind(), io::ErrorKind::BrokenPipe);
    }
}
