//! The part of etcd's v3 gRPC API Flotilla uses (KV: Range, Txn, Compact; Watch;
//! Maintenance: Status), as prost messages declared here and a tonic client over them.
//!
//! The messages are declared by hand with `prost` derives instead of generated from etcd's
//! `.proto` files at build time: generation needs `protoc` installed, and the build must work
//! on a fresh machine with nothing but cargo. Only the fields Flotilla reads or sets are
//! declared; protobuf skips unknown fields, so etcd's other fields cost nothing. Field
//! numbers are etcd's wire contract (`etcdserverpb`, `mvccpb`, stable since v3.0).
//!
//! [`Client`] holds one lazily connected channel per member and retries a call on the next
//! member until its deadline: a client of a three-member cluster rides out the loss of one
//! member, the leader's included, within a moment of the election (see [`Client`]). The
//! failures are told apart as retrying needs them: refused before anything was proposed, or
//! lost after it was sent (then a write may have been applied: [`Reply::uncertain`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::time::Instant;

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
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    /// `http://host:port` or `https://host:port`, one per member.
    pub endpoints: Vec<String>,
    /// PEM CA bundle that signed the members' serving certificates (https endpoints).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM client certificate and key, when etcd requires client certificates.
    pub client_identity: Option<(Vec<u8>, Vec<u8>)>,
    /// How long one call may take with all its retries before it fails with
    /// [`EtcdError::Unavailable`] or [`EtcdError::Timeout`].
    pub request_timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            endpoints: Vec::new(),
            ca_pem: None,
            client_identity: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
        }
    }
}

/// [`ConnectOptions::request_timeout`] by default: above etcd's own deadline for a proposal
/// (5 s + two election timeouts, 7 s with etcd's defaults), so a member that is merely slow
/// answers for itself, and well below kube-apiserver's 60 s request deadline, so a client
/// gets its 503/504 while it still waits.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long connecting to one member may take (members are on a LAN or loopback; a member
/// that does not accept in a second is treated as down and the next one is tried).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// HTTP/2 pings on idle connections find a member that vanished without closing them (a
/// watch stream would otherwise wait on it forever).
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a call waits for its answer before asking its member whether it still follows
/// the leader the call was sent under, and then between asks.
const LEADER_CHECK_EVERY: Duration = Duration::from_millis(250);
/// How long that question may take before the member counts as gone.
const LEADER_CHECK_TIMEOUT: Duration = Duration::from_secs(1);
/// The pause after every member failed once, doubling up to [`MAX_BACKOFF`]: short, since
/// the usual cause is an election, which ends a moment after the first refusal.
const FIRST_BACKOFF: Duration = Duration::from_millis(25);
const MAX_BACKOFF: Duration = Duration::from_millis(250);
/// etcd's default request limit is 1.5 MiB, but responses (a page of a range, a batch of
/// watch events) can be far larger; tonic's default decode limit (4 MiB) would cut them.
const MAX_MESSAGE: usize = 256 << 20;

/// The gRPC metadata with which a member without a leader refuses a call at once ("etcdserver:
/// no leader") instead of holding it until its own timeout, and cancels a watch stream when
/// it loses its leader (etcd's `WithRequireLeader`).
const REQUIRE_LEADER: (&str, &str) = ("hasleader", "true");

/// A response carrying etcd's header; its raft term tells a leader change.
pub trait Headed {
    fn header(&self) -> Option<&ResponseHeader>;
}

macro_rules! headed {
    ($($t:ty),*) => {$(
        impl Headed for $t {
            fn header(&self) -> Option<&ResponseHeader> {
                self.header.as_ref()
            }
        }
    )*};
}
headed!(
    RangeResponse,
    TxnResponse,
    CompactionResponse,
    StatusResponse
);

/// The answer to a call that may have been sent more than once.
#[derive(Debug)]
pub struct Reply<T> {
    pub response: T,
    /// An earlier attempt failed after it was sent, without telling whether it was applied:
    /// a write's refusal may then be the effect of that attempt (see the backend).
    pub uncertain: bool,
}

/// One member of the cluster.
struct Member {
    url: String,
    channel: Channel,
    /// The highest raft term this member reported; a call sent under a lower term than the
    /// member reports later was sent to a leader that is gone.
    term: AtomicU64,
    /// The last answer to "who is your leader", shared by the calls waiting on this member
    /// (one question at a time).
    leader: tokio::sync::Mutex<Option<(Instant, Result<Leadership, String>)>>,
}

#[derive(Clone, Copy, Debug)]
struct Leadership {
    leader: u64,
    term: u64,
}

/// How a failed attempt leaves its call.
#[derive(Debug, PartialEq, Eq)]
enum Failure {
    /// Not applied (never sent, or refused before it was proposed): another member, or the
    /// same one after an election, may take it.
    Refused,
    /// Sent, and lost or abandoned without an answer: it may have been applied.
    Unknown,
    /// The request is over etcd's size limit.
    TooLarge,
    /// An answer that retrying cannot change.
    Final,
}

impl Failure {
    fn of(status: &Status, sent: bool) -> Self {
        let message = status.message();
        if !sent || connect_error(status) {
            return Failure::Refused;
        }
        match status.code() {
            Code::InvalidArgument if message.contains("request is too large") => Failure::TooLarge,
            // Past the member's gRPC receive limit (etcd's request limit plus its overhead).
            Code::ResourceExhausted if message.contains("larger than max") => Failure::TooLarge,
            // Checked before anything is proposed.
            _ if message.contains("etcdserver: no leader")
                || message.contains("etcdserver: too many requests")
                || message.contains("raft proposal dropped") =>
            {
                Failure::Refused
            }
            Code::Unavailable | Code::DeadlineExceeded | Code::Unknown | Code::Cancelled => {
                Failure::Unknown
            }
            _ => Failure::Final,
        }
    }
}

/// Whether the call failed while connecting (so it was never sent).
fn connect_error(status: &Status) -> bool {
    let mut source = std::error::Error::source(status);
    while let Some(error) = source {
        if error.is::<tonic::ConnectError>() {
            return true;
        }
        source = error.source();
    }
    false
}

/// A failover-capable client of one etcd cluster.
///
/// A call goes to the current member. When it fails there it is sent to the next member,
/// round the cluster, with a short pause after each round, until it succeeds or its
/// [`ConnectOptions::request_timeout`] has passed. Every call requires its member to have a
/// leader, so a member in an election refuses at once rather than holding the call. A call
/// sent to a follower whose leader dies is lost without an answer (etcd answers only after
/// its own 7 s timeout): while a call waits, its member is asked every 250 ms
/// (`LEADER_CHECK_EVERY`) who its leader is, and the call is abandoned and sent again once
/// the member has no leader, a newer one, or no answer.
#[derive(Clone)]
pub struct Client {
    members: Arc<[Member]>,
    /// Index of the member calls go to first.
    current: Arc<AtomicUsize>,
    request_timeout: Duration,
}

impl Client {
    /// A client of the members at `opts.endpoints`; connections are made on first use.
    pub fn new(opts: &ConnectOptions) -> Result<Self, EtcdError> {
        if opts.endpoints.is_empty() {
            return Err(EtcdError::Config("no etcd endpoints given".to_owned()));
        }
        let mut members = Vec::with_capacity(opts.endpoints.len());
        for url in &opts.endpoints {
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| EtcdError::Config(format!("etcd endpoint {url:?}: {e}")))?
                .connect_timeout(CONNECT_TIMEOUT)
                .tcp_nodelay(true)
                .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
                .keep_alive_timeout(KEEPALIVE_TIMEOUT)
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
            members.push(Member {
                url: url.clone(),
                channel: endpoint.connect_lazy(),
                term: AtomicU64::new(0),
                leader: tokio::sync::Mutex::new(None),
            });
        }
        Ok(Self {
            members: members.into(),
            current: Arc::new(AtomicUsize::new(0)),
            request_timeout: opts.request_timeout,
        })
    }

    fn grpc(&self, index: usize) -> tonic::client::Grpc<Channel> {
        tonic::client::Grpc::new(self.members[index].channel.clone())
            .max_decoding_message_size(MAX_MESSAGE)
    }

    /// Calls `path` until a member answers it, as the type docs say.
    async fn unary<Req, Resp>(
        &self,
        path: &'static str,
        request: Req,
    ) -> Result<Reply<Resp>, EtcdError>
    where
        Req: prost::Message + Clone + 'static,
        Resp: prost::Message + Default + Headed + 'static,
    {
        let deadline = Instant::now() + self.request_timeout;
        let mut uncertain = false;
        // What a member answered tells more than a member that could not be reached.
        let mut telling: Option<Status> = None;
        let mut failures = 0usize;
        let mut backoff = FIRST_BACKOFF;
        loop {
            let index = self.current.load(Ordering::Relaxed) % self.members.len();
            let (status, sent) = match self
                .attempt::<Req, Resp>(index, path, &request, deadline)
                .await
            {
                Ok(response) => {
                    if let Some(header) = response.header() {
                        self.members[index]
                            .term
                            .fetch_max(header.raft_term, Ordering::Relaxed);
                    }
                    return Ok(Reply {
                        response,
                        uncertain,
                    });
                }
                Err(failed) => failed,
            };
            match Failure::of(&status, sent) {
                Failure::TooLarge => return Err(EtcdError::TooLarge(status.message().to_owned())),
                Failure::Final => return Err(EtcdError::Rpc(status)),
                Failure::Unknown => uncertain = true,
                Failure::Refused => {}
            }
            tracing::debug!(
                endpoint = %self.members[index].url,
                failures,
                uncertain,
                error = %status.message(),
                "etcd call failed; trying the next member"
            );
            self.rotate(index);
            if telling.is_none() || (sent && !connect_error(&status)) {
                telling = Some(status);
            }
            failures += 1;
            if failures.is_multiple_of(self.members.len()) {
                tokio::time::sleep_until(deadline.min(Instant::now() + backoff)).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            if Instant::now() >= deadline {
                let last = telling.unwrap_or_else(|| Status::unavailable("no etcd member"));
                return Err(self.gave_up(&last, uncertain));
            }
        }
    }

    /// The error of a call that ran out of time, its last failure `status`.
    fn gave_up(&self, status: &Status, uncertain: bool) -> EtcdError {
        let timeout = self.request_timeout;
        if uncertain {
            EtcdError::Timeout(format!(
                "etcd did not complete the request within {timeout:?}: {}",
                status.message()
            ))
        } else {
            EtcdError::Unavailable(format!(
                "etcd is unavailable: {} (every member tried for {timeout:?})",
                status.message()
            ))
        }
    }

    /// One attempt of a call on member `index`; the error says whether it was sent.
    async fn attempt<Req, Resp>(
        &self,
        index: usize,
        path: &'static str,
        request: &Req,
        deadline: Instant,
    ) -> Result<Resp, (Status, bool)>
    where
        Req: prost::Message + Clone + 'static,
        Resp: prost::Message + Default + 'static,
    {
        let member = &self.members[index];
        let term = member.term.load(Ordering::Relaxed);
        let mut grpc = self.grpc(index);
        let call = async {
            grpc.ready().await.map_err(|e| {
                (
                    Status::unavailable(format!("connecting to {}: {e}", member.url)),
                    false,
                )
            })?;
            let mut request = tonic::Request::new(request.clone());
            request.metadata_mut().insert(
                REQUIRE_LEADER.0,
                tonic::metadata::MetadataValue::from_static(REQUIRE_LEADER.1),
            );
            grpc.unary(
                request,
                PathAndQuery::from_static(path),
                ProstCodec::<Req, Resp>::default(),
            )
            .await
            .map(tonic::Response::into_inner)
            .map_err(|status| (status, true))
        };
        tokio::select! {
            answered = call => answered,
            lost = self.leader_lost(index, term) => Err((Status::unavailable(lost), true)),
            () = tokio::time::sleep_until(deadline) => Err((
                Status::deadline_exceeded(format!("{} did not answer {path} in time", member.url)),
                true,
            )),
        }
    }

    /// Returns (why) once member `index` no longer follows the leader of raft term `term`
    /// (0: the call did not know it; the member's first answer tells it): it has no leader, a
    /// newer one, or does not answer. Never returns while the member keeps its leader.
    async fn leader_lost(&self, index: usize, term: u64) -> String {
        let url = &self.members[index].url;
        let mut known = (term != 0).then_some(term);
        loop {
            tokio::time::sleep(LEADER_CHECK_EVERY).await;
            match self.leadership(index).await {
                Ok(Leadership { leader: 0, .. }) => {
                    return format!("etcd member {url} lost its leader");
                }
                Ok(Leadership { term, .. }) => match known {
                    Some(known) if term > known => {
                        return format!(
                            "etcd member {url} has a new leader (raft term {known} -> {term})"
                        );
                    }
                    Some(_) => {}
                    None => known = Some(term),
                },
                Err(e) => return format!("etcd member {url} does not answer: {e}"),
            }
        }
    }

    /// Member `index`'s leader and term, asked at most once per [`LEADER_CHECK_EVERY`] however
    /// many calls wait on it.
    async fn leadership(&self, index: usize) -> Result<Leadership, String> {
        let member = &self.members[index];
        let mut last = member.leader.lock().await;
        if let Some((at, answer)) = &*last
            && at.elapsed() < LEADER_CHECK_EVERY
        {
            return answer.clone();
        }
        let mut grpc = self.grpc(index);
        let ask = async {
            grpc.ready()
                .await
                .map_err(|e| Status::unavailable(format!("connecting: {e}")))?;
            grpc.unary(
                tonic::Request::new(StatusRequest {}),
                PathAndQuery::from_static(STATUS),
                ProstCodec::<StatusRequest, StatusResponse>::default(),
            )
            .await
        };
        let answer = match tokio::time::timeout(LEADER_CHECK_TIMEOUT, ask).await {
            Ok(Ok(response)) => {
                let response = response.into_inner();
                let term = response.header.map_or(0, |h| h.raft_term);
                member.term.fetch_max(term, Ordering::Relaxed);
                Ok(Leadership {
                    leader: response.leader,
                    term,
                })
            }
            Ok(Err(status)) => Err(status.message().to_owned()),
            Err(_) => Err(format!("no answer in {LEADER_CHECK_TIMEOUT:?}")),
        };
        *last = Some((Instant::now(), answer.clone()));
        answer
    }

    /// Moves calls to the member after `failed` (unless another call already moved them).
    fn rotate(&self, failed: usize) {
        let _ = self.current.compare_exchange(
            failed,
            (failed + 1) % self.members.len(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    pub async fn range(&self, request: RangeRequest) -> Result<RangeResponse, EtcdError> {
        Ok(self
            .unary("/etcdserverpb.KV/Range", request)
            .await?
            .response)
    }

    /// A transaction, and whether an earlier attempt of it may have been applied.
    pub async fn txn(&self, request: TxnRequest) -> Result<Reply<TxnResponse>, EtcdError> {
        self.unary("/etcdserverpb.KV/Txn", request).await
    }

    pub async fn compact(&self, revision: i64) -> Result<CompactionResponse, EtcdError> {
        let request = CompactionRequest {
            revision,
            physical: false,
        };
        Ok(self
            .unary("/etcdserverpb.KV/Compact", request)
            .await?
            .response)
    }

    pub async fn status(&self) -> Result<StatusResponse, EtcdError> {
        Ok(self.unary(STATUS, StatusRequest {}).await?.response)
    }

    /// Opens a watch stream on the current member with one watch created by `create`.
    pub async fn watch(
        &self,
        create: WatchCreateRequest,
    ) -> Result<Streaming<WatchResponse>, EtcdError> {
        let index = self.current.load(Ordering::Relaxed) % self.members.len();
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
            let mut request = tonic::Request::new(ReceiverStream::new(rx));
            // A member that loses its leader ends the stream, and the watch moves on.
            request.metadata_mut().insert(
                REQUIRE_LEADER.0,
                tonic::metadata::MetadataValue::from_static(REQUIRE_LEADER.1),
            );
            let response = grpc
                .streaming(
                    request,
                    PathAndQuery::from_static("/etcdserverpb.Watch/Watch"),
                    ProstCodec::<WatchRequest, WatchResponse>::default(),
                )
                .await?;
            // Keep the sender alive as long as the response stream: leak it into a task that
            // ends when the stream's channel closes.
            tokio::spawn(async move { tx.closed().await });
            Ok::<_, Status>(response.into_inner())
        };
        match tokio::time::timeout(self.request_timeout, opened).await {
            Ok(Ok(stream)) => Ok(stream),
            Ok(Err(status)) => {
                if Failure::of(&status, true) != Failure::Final {
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

    /// The first change of `key` after `revision` (a put, or a delete with the value it
    /// removed), from etcd's history; `None` when that history is compacted.
    pub async fn first_change(
        &self,
        key: &[u8],
        revision: i64,
    ) -> Result<Option<Event>, EtcdError> {
        let read = async {
            let mut stream = self
                .watch(WatchCreateRequest {
                    key: key.to_vec(),
                    range_end: Vec::new(),
                    start_revision: revision.saturating_add(1),
                    prev_kv: true,
                })
                .await?;
            while let Some(response) = stream.message().await? {
                if response.compact_revision != 0 || response.canceled {
                    return Ok(None);
                }
                if let Some(event) = response.events.into_iter().next() {
                    return Ok(Some(event));
                }
            }
            Ok(None)
        };
        tokio::time::timeout(self.request_timeout, read)
            .await
            .map_err(|_| {
                EtcdError::Timeout(format!(
                    "etcd did not show the history of a key within {:?}",
                    self.request_timeout
                ))
            })?
    }

    /// The endpoint calls go to now (for logs).
    pub fn current_endpoint(&self) -> &str {
        let index = self.current.load(Ordering::Relaxed) % self.members.len();
        &self.members[index].url
    }

    /// Moves calls away from the current endpoint (its watch stream broke).
    pub fn skip_current(&self) {
        self.rotate(self.current.load(Ordering::Relaxed) % self.members.len());
    }
}

const STATUS: &str = "/etcdserverpb.Maintenance/Status";

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
    fn failures_are_told_apart_as_retrying_needs() {
        // etcd's own answers (its rpctypes), as they reach the client.
        let refused = [
            Status::unavailable("etcdserver: no leader"),
            Status::unknown("raft proposal dropped"),
            Status::resource_exhausted("etcdserver: too many requests"),
        ];
        for status in &refused {
            assert_eq!(Failure::of(status, true), Failure::Refused, "{status:?}");
        }
        let unknown = [
            Status::unavailable("etcdserver: request timed out"),
            Status::unavailable(
                "etcdserver: request timed out, possibly due to previous leader failure",
            ),
            Status::unavailable("etcdserver: leader changed"),
            Status::unknown("h2 protocol error: connection reset"),
            Status::cancelled("the call was cancelled"),
        ];
        for status in &unknown {
            assert_eq!(Failure::of(status, true), Failure::Unknown, "{status:?}");
            // Not sent at all: nothing can have been applied.
            assert_eq!(Failure::of(status, false), Failure::Refused, "{status:?}");
        }
        assert_eq!(
            Failure::of(
                &Status::invalid_argument("etcdserver: request is too large"),
                true
            ),
            Failure::TooLarge
        );
        assert_eq!(
            Failure::of(
                &Status::resource_exhausted(
                    "grpc: received message larger than max (1048660 vs. 590848)"
                ),
                true
            ),
            Failure::TooLarge
        );
        for status in [
            Status::resource_exhausted("etcdserver: mvcc: database space exceeded"),
            Status::out_of_range("etcdserver: mvcc: required revision has been compacted"),
            Status::permission_denied("etcdserver: permission denied"),
        ] {
            assert_eq!(Failure::of(&status, true), Failure::Final, "{status:?}");
        }
        // A connection that could not be made: the call was never sent.
        let connect = Status::from_error(Box::new(tonic::ConnectError(Box::new(
            std::io::Error::from(std::io::ErrorKind::ConnectionRefused),
        ))));
        assert!(connect_error(&connect), "{connect:?}");
        assert_eq!(Failure::of(&connect, true), Failure::Refused);
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
