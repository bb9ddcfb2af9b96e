//! The part of etcd's v3 gRPC API Flotilla uses (KV: Range, Txn, Compact; Watch;
//! Maintenance: Status), as prost messages declared here and a tonic client over them.
//!
//! The messages are declared by hand with `prost` derives instead of generated from etcd's
//! `.proto` files at build time: generation needs `protoc` installed, and the build must work
//! on a fresh machine with nothing but cargo. Only the fields Flotilla reads or sets are
//! declared; protobuf skips unknown fields, so etcd's other fields cost nothing. Field
//! numbers are etcd's wire contract (`etcdserverpb`, `mvccpb`, stable since v3.0).
//!
//! [`Client`] holds one lazily connected channel per endpoint and moves to the next endpoint
//! when a call fails with `Unavailable` (a member down, or one without a leader), so a client
//! of a three-member cluster rides out the loss of one member.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::uri::PathAndQuery;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Code, Status, Streaming};
use tonic_prost::ProstCodec;

use crate::EtcdError;

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseHeader {
    #[prost(uint64, tag = "1")]
    pub cluster_id: u64,
    #[prost(uint64, tag = "2")]
    pub member_id: u64,
    #[prost(int64, tag = "3")]
    pub revision: i64,
    #[prost(uint64, tag = "4")]
    pub raft_term: u64,
}

/// `mvccpb.KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(int64, tag = "2")]
    pub create_revision: i64,
    #[prost(int64, tag = "3")]
    pub mod_revision: i64,
    #[prost(int64, tag = "4")]
    pub version: i64,
    #[prost(bytes = "bytes", tag = "5")]
    pub value: bytes::Bytes,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub limit: i64,
    #[prost(int64, tag = "4")]
    pub revision: i64,
    #[prost(bool, tag = "7")]
    pub serializable: bool,
    #[prost(bool, tag = "8")]
    pub keys_only: bool,
    #[prost(bool, tag = "9")]
    pub count_only: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(message, repeated, tag = "2")]
    pub kvs: Vec<KeyValue>,
    #[prost(bool, tag = "3")]
    pub more: bool,
    #[prost(int64, tag = "4")]
    pub count: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PutRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "bytes", tag = "2")]
    pub value: bytes::Bytes,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PutResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(bool, tag = "3")]
    pub prev_kv: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DeleteRangeResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub deleted: i64,
    #[prost(message, repeated, tag = "3")]
    pub prev_kvs: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct RequestOp {
    #[prost(oneof = "request_op::Request", tags = "1, 2, 3")]
    pub request: Option<request_op::Request>,
}

pub mod request_op {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Request {
        #[prost(message, tag = "1")]
        Range(super::RangeRequest),
        #[prost(message, tag = "2")]
        Put(super::PutRequest),
        #[prost(message, tag = "3")]
        DeleteRange(super::DeleteRangeRequest),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ResponseOp {
    #[prost(oneof = "response_op::Response", tags = "1, 2, 3")]
    pub response: Option<response_op::Response>,
}

pub mod response_op {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Response {
        #[prost(message, tag = "1")]
        Range(super::RangeResponse),
        #[prost(message, tag = "2")]
        Put(super::PutResponse),
        #[prost(message, tag = "3")]
        DeleteRange(super::DeleteRangeResponse),
    }
}

/// `Compare.CompareResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum CompareResult {
    Equal = 0,
    Greater = 1,
    Less = 2,
    NotEqual = 3,
}

/// `Compare.CompareTarget`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum CompareTarget {
    Version = 0,
    Create = 1,
    Mod = 2,
    Value = 3,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Compare {
    #[prost(enumeration = "CompareResult", tag = "1")]
    pub result: i32,
    #[prost(enumeration = "CompareTarget", tag = "2")]
    pub target: i32,
    #[prost(bytes = "vec", tag = "3")]
    pub key: Vec<u8>,
    #[prost(oneof = "compare::TargetUnion", tags = "4, 5, 6")]
    pub target_union: Option<compare::TargetUnion>,
}

pub mod compare {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum TargetUnion {
        #[prost(int64, tag = "4")]
        Version(i64),
        #[prost(int64, tag = "5")]
        CreateRevision(i64),
        #[prost(int64, tag = "6")]
        ModRevision(i64),
    }
}

impl Compare {
    /// The key exists (its version is above zero).
    pub fn exists(key: &[u8]) -> Self {
        Self {
            result: CompareResult::Greater as i32,
            target: CompareTarget::Version as i32,
            key: key.to_vec(),
            target_union: Some(compare::TargetUnion::Version(0)),
        }
    }

    /// The key does not exist (it has no create revision).
    pub fn absent(key: &[u8]) -> Self {
        Self {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Create as i32,
            key: key.to_vec(),
            target_union: Some(compare::TargetUnion::CreateRevision(0)),
        }
    }

    /// The key was last written at `revision`.
    pub fn modified_at(key: &[u8], revision: i64) -> Self {
        Self {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Mod as i32,
            key: key.to_vec(),
            target_union: Some(compare::TargetUnion::ModRevision(revision)),
        }
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnRequest {
    #[prost(message, repeated, tag = "1")]
    pub compare: Vec<Compare>,
    #[prost(message, repeated, tag = "2")]
    pub success: Vec<RequestOp>,
    #[prost(message, repeated, tag = "3")]
    pub failure: Vec<RequestOp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TxnResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(bool, tag = "2")]
    pub succeeded: bool,
    #[prost(message, repeated, tag = "3")]
    pub responses: Vec<ResponseOp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactionRequest {
    #[prost(int64, tag = "1")]
    pub revision: i64,
    #[prost(bool, tag = "2")]
    pub physical: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CompactionResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
}

/// `mvccpb.Event.EventType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
pub enum EventType {
    Put = 0,
    Delete = 1,
}

/// `mvccpb.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    #[prost(enumeration = "EventType", tag = "1")]
    pub r#type: i32,
    #[prost(message, optional, tag = "2")]
    pub kv: Option<KeyValue>,
    #[prost(message, optional, tag = "3")]
    pub prev_kv: Option<KeyValue>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchRequest {
    #[prost(oneof = "watch_request::Request", tags = "1")]
    pub request: Option<watch_request::Request>,
}

pub mod watch_request {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Request {
        #[prost(message, tag = "1")]
        Create(super::WatchCreateRequest),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchCreateRequest {
    #[prost(bytes = "vec", tag = "1")]
    pub key: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub range_end: Vec<u8>,
    #[prost(int64, tag = "3")]
    pub start_revision: i64,
    #[prost(bool, tag = "6")]
    pub prev_kv: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct WatchResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(int64, tag = "2")]
    pub watch_id: i64,
    #[prost(bool, tag = "3")]
    pub created: bool,
    #[prost(bool, tag = "4")]
    pub canceled: bool,
    #[prost(int64, tag = "5")]
    pub compact_revision: i64,
    #[prost(string, tag = "6")]
    pub cancel_reason: String,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusRequest {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub header: Option<ResponseHeader>,
    #[prost(string, tag = "2")]
    pub version: String,
    #[prost(uint64, tag = "4")]
    pub leader: u64,
}

/// The end of the key range covering every key that starts with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    // Every byte was 0xff (or the prefix was empty): to the end of the keyspace.
    vec![0]
}

/// How a client reaches etcd.
#[derive(Clone, Debug, Default)]
pub struct ConnectOptions {
    /// `http://host:port` or `https://host:port`, one per member.
    pub endpoints: Vec<String>,
    /// PEM CA bundle that signed the members' serving certificates (https endpoints).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM client certificate and key, when etcd requires client certificates.
    pub client_identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// How long one unary call may take before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to one member may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// etcd's default request limit is 1.5 MiB, but responses (a page of a range, a batch of
/// watch events) can be far larger; tonic's default decode limit (4 MiB) would cut them.
const MAX_MESSAGE: usize = 256 << 20;

/// A failover-capable client of one etcd cluster.
#[derive(Clone)]
pub struct Client {
    channels: Arc<[(String, Channel)]>,
    /// Index of the endpoint calls go to first.
    current: Arc<AtomicUsize>,
}

impl Client {
    /// A client of the members at `opts.endpoints`; connections are made on first use.
    pub fn new(opts: &ConnectOptions) -> Result<Self, EtcdError> {
        if opts.endpoints.is_empty() {
            return Err(EtcdError::Config("no etcd endpoints given".to_owned()));
        }
        let mut channels = Vec::with_capacity(opts.endpoints.len());
        for url in &opts.endpoints {
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| EtcdError::Config(format!("etcd endpoint {url:?}: {e}")))?
                .connect_timeout(CONNECT_TIMEOUT)
                .tcp_nodelay(true)
                .http2_keep_alive_interval(Duration::from_secs(10))
                .keep_alive_timeout(Duration::from_secs(5))
                .keep_alive_while_idle(true);
            if url.starts_with("https://") {
                let mut tls = ClientTlsConfig::new();
                if let Some(ca) = &opts.ca_pem {
                    tls = tls.ca_certificate(Certificate::from_pem(ca));
                }
                if let Some((cert, key)) = &opts.client_identity {
                    tls = tls.identity(Identity::from_pem(cert, key));
                }
                endpoint = endpoint
                    .tls_config(tls)
                    .map_err(|e| EtcdError::Config(format!("etcd TLS for {url}: {e}")))?;
            } else if !url.starts_with("http://") {
                return Err(EtcdError::Config(format!(
                    "etcd endpoint {url:?} must start with http:// or https://"
                )));
            }
            channels.push((url.clone(), endpoint.connect_lazy()));
        }
        Ok(Self {
            channels: channels.into(),
            current: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn grpc(&self, index: usize) -> tonic::client::Grpc<Channel> {
        let (_, channel) = &self.channels[index % self.channels.len()];
        tonic::client::Grpc::new(channel.clone()).max_decoding_message_size(MAX_MESSAGE)
    }

    /// Calls `path` on the current endpoint, moving to the next one on `Unavailable` (and on
    /// a timed-out call), each endpoint at most twice.
    async fn unary<Req, Resp>(&self, path: &'static str, request: Req) -> Result<Resp, EtcdError>
    where
        Req: prost::Message + Clone + 'static,
        Resp: prost::Message + Default + 'static,
    {
        let attempts = self.channels.len() * 2;
        let mut last = None;
        for attempt in 0..attempts {
            let index = self.current.load(Ordering::Relaxed);
            let mut grpc = self.grpc(index);
            let call = async {
                grpc.ready()
                    .await
                    .map_err(|e| Status::unavailable(format!("connecting: {e}")))?;
                grpc.unary(
                    tonic::Request::new(request.clone()),
                    PathAndQuery::from_static(path),
                    ProstCodec::<Req, Resp>::default(),
                )
                .await
            };
            let status = match tokio::time::timeout(CALL_TIMEOUT, call).await {
                Ok(Ok(response)) => return Ok(response.into_inner()),
                Ok(Err(status)) => status,
                Err(_) => Status::deadline_exceeded(format!("{path} timed out")),
            };
            if !retryable(&status) {
                return Err(EtcdError::Rpc(status));
            }
            tracing::debug!(
                endpoint = %self.channels[index % self.channels.len()].0,
                attempt,
                error = %status,
                "etcd call failed; trying the next member"
            );
            self.rotate(index);
            last = Some(status);
            if attempt + 1 >= self.channels.len() {
                // Every member failed once: give a restarting member or an election a moment.
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        Err(EtcdError::Rpc(
            last.unwrap_or_else(|| Status::unavailable("no etcd endpoint")),
        ))
    }

    /// Moves calls to the endpoint after `failed` (unless another call already moved them).
    fn rotate(&self, failed: usize) {
        let _ = self.current.compare_exchange(
            failed,
            (failed + 1) % self.channels.len(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    pub async fn range(&self, request: RangeRequest) -> Result<RangeResponse, EtcdError> {
        self.unary("/etcdserverpb.KV/Range", request).await
    }

    pub async fn txn(&self, request: TxnRequest) -> Result<TxnResponse, EtcdError> {
        self.unary("/etcdserverpb.KV/Txn", request).await
    }

    pub async fn compact(&self, revision: i64) -> Result<CompactionResponse, EtcdError> {
        self.unary(
            "/etcdserverpb.KV/Compact",
            CompactionRequest {
                revision,
                physical: false,
            },
        )
        .await
    }

    pub async fn status(&self) -> Result<StatusResponse, EtcdError> {
        self.unary("/etcdserverpb.Maintenance/Status", StatusRequest {})
            .await
    }

    /// Opens a watch stream on the current endpoint with one watch created by `create`.
    pub async fn watch(
        &self,
        create: WatchCreateRequest,
    ) -> Result<Streaming<WatchResponse>, EtcdError> {
        let index = self.current.load(Ordering::Relaxed);
        let mut grpc = self.grpc(index);
        let opened = async {
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(format!("connecting: {e}")))?;
            // The request side stays open (dropping the sender would end the watch).
            let (tx, rx) = tokio::sync::mpsc::channel(1);
            tx.send(WatchRequest {
                request: Some(watch_request::Request::Create(create)),
            })
            .await
            .map_err(|_| Status::internal("watch request channel closed"))?;
            let response = grpc
                .streaming(
                    tonic::Request::new(ReceiverStream::new(rx)),
                    PathAndQuery::from_static("/etcdserverpb.Watch/Watch"),
                    ProstCodec::<WatchRequest, WatchResponse>::default(),
                )
                .await?;
            // Keep the sender alive as long as the response stream: leak it into a task that
            // ends when the stream's channel closes.
            tokio::spawn(async move { tx.closed().await });
            Ok::<_, Status>(response.into_inner())
        };
        match tokio::time::timeout(CALL_TIMEOUT, opened).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(status)) => {
                if retryable(&status) {
                    self.rotate(index);
                }
                Err(EtcdError::Rpc(status))
            }
            Err(_) => {
                self.rotate(index);
                Err(EtcdError::Rpc(Status::deadline_exceeded(
                    "opening the etcd watch timed out",
                )))
            }
        }
    }

    /// The endpoint calls go to now (for logs).
    pub fn current_endpoint(&self) -> &str {
        let index = self.current.load(Ordering::Relaxed) % self.channels.len();
        &self.channels[index].0
    }

    /// Moves calls away from the current endpoint (its watch stream broke).
    pub fn skip_current(&self) {
        self.rotate(self.current.load(Ordering::Relaxed));
    }
}

/// Whether another member (or the same one later) may answer: the member is down or
/// unreachable, has no leader, or is shutting down.
fn retryable(status: &Status) -> bool {
    matches!(
        status.code(),
        Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Cancelled
    ) || status.message().contains("leader changed")
        || status.message().contains("no leader")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end(b"/a/"), b"/a0".to_vec());
        assert_eq!(prefix_end(b"a\xff"), b"b".to_vec());
        assert_eq!(prefix_end(b"\xff\xff"), vec![0]);
        assert_eq!(prefix_end(b""), vec![0]);
    }

    #[test]
    fn a_txn_round_trips_through_the_wire_format() {
        use prost::Message;
        let txn = TxnRequest {
            compare: vec![Compare::modified_at(b"/k", 7)],
            success: vec![RequestOp {
                request: Some(request_op::Request::Put(PutRequest {
                    key: b"/k".to_vec(),
                    value: bytes::Bytes::from_static(b"{}"),
                })),
            }],
            failure: vec![RequestOp {
                request: Some(request_op::Request::Range(RangeRequest {
                    key: b"/k".to_vec(),
                    ..RangeRequest::default()
                })),
            }],
        };
        let decoded = TxnRequest::decode(txn.encode_to_vec().as_slice()).unwrap();
        assert_eq!(decoded, txn);
        // The compare's mod revision is field 6 of Compare (etcd's wire contract): tag byte
        // 6 << 3 | varint = 0x30.
        let compare = Compare::modified_at(b"/k", 7).encode_to_vec();
        assert!(compare.windows(2).any(|w| w == [0x30, 7]), "{compare:?}");
    }
}
