//! The filters a request passes before it is routed, in kube-apiserver's order, each a step
//! of its own: authentication → impersonation → in-flight limits → authorization. A server's
//! chain holds the steps it has what for (no authorizer, no authorization step); each step
//! reads the request and what the steps before it established ([`Filtered`]), and adds to it
//! or answers the request with an error Status. After the response, [`observe`] counts it,
//! logs one line and writes the audit record from the same state.
//!
//! ```text
//!  entry: RequestInfo parsed once ─▶ span ─▶ [Authentication ─▶ Impersonation ─▶ InFlight
//!         ─▶ Authorization] ─▶ route ─▶ in-flight place held until the body is sent
//!         ─▶ observe (metrics, debug line, audit)
//! ```

use std::sync::Arc;
use std::time::Instant;

use axum::response::Response;
use flotilla_apimachinery::ApiError;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::request::RequestInfo;
use http::{HeaderMap, StatusCode, header};

use crate::auth::{self, PeerIdentity};
use crate::authz::{self, RequestAttributes};
use crate::inflight::{self, InFlight};
use crate::state::ApiServer;

/// One step of the chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filter {
    /// Who is calling: front-proxy headers, bearer tokens, the client certificate; a public
    /// path (version, health) may be called anonymously.
    Authentication,
    /// `Impersonate-*` headers: the request runs as the impersonated user when the caller
    /// may impersonate.
    Impersonation,
    /// The max-in-flight limits: a place is taken here and held until the response body is
    /// sent (429 past the limit).
    InFlight,
    /// The request's attributes checked against the server's authorizer.
    Authorization,
}

impl Filter {
    /// The chain of a server with (or without) an authorizer, in order.
    pub fn chain(authorizer: bool) -> Vec<Filter> {
        let mut chain = vec![
            Filter::Authentication,
            Filter::Impersonation,
            Filter::InFlight,
        ];
        if authorizer {
            chain.push(Filter::Authorization);
        }
        chain
    }

    /// Runs this step on a request with `headers` from `peer`: adds what it establishes to
    /// `state`, or refuses the request.
    pub(crate) async fn apply(
        self,
        server: &ApiServer,
        headers: &HeaderMap,
        peer: Option<&PeerIdentity>,
        state: &mut Filtered,
    ) -> Result<(), ApiError> {
        match self {
            Filter::Authentication => {
                match auth::authenticate(peer, headers, server.tokens.as_ref()).await {
                    Ok(user) => {
                        tracing::Span::current().record("user", user.name.as_str());
                        state.user = Some(user);
                    }
                    Err(_) if state.public => {}
                    Err(e) => return Err(e),
                }
            }
            Filter::Impersonation => {
                let Some(caller) = &state.user else {
                    return Ok(());
                };
                if let Some(as_user) =
                    authz::impersonate(server.authorizer.as_deref(), caller, headers).await?
                {
                    tracing::Span::current().record("user", as_user.name.as_str());
                    state.impersonator = state.user.replace(as_user);
                }
            }
            Filter::InFlight => {
                let class =
                    inflight::classify_in(&server.registry, &state.info, state.user.as_ref());
                state.inflight = Some(server.inflight.admit(class)?);
            }
            Filter::Authorization => {
                if let (Some(user), Some(authorizer), false) =
                    (&state.user, &server.authorizer, state.public)
                {
                    let attrs = RequestAttributes::for_request(&state.info);
                    authorizer.authorize(user, &attrs).await?;
                }
            }
        }
        Ok(())
    }
}

/// What the filters established about one request.
pub(crate) struct Filtered {
    pub info: Arc<RequestInfo>,
    pub started: Instant,
    /// A path anyone may call (version, health).
    pub public: bool,
    /// As whom the request runs: the authenticated caller, or whom it impersonates.
    pub user: Option<UserInfo>,
    /// The authenticated caller when the request runs as someone else.
    pub impersonator: Option<UserInfo>,
    inflight: Option<InFlight>,
}

impl Filtered {
    pub fn new(info: Arc<RequestInfo>, started: Instant) -> Self {
        Self {
            public: auth::is_public_path(&info.path),
            info,
            started,
            user: None,
            impersonator: None,
            inflight: None,
        }
    }

    /// The response, holding the request's in-flight place until its body is sent (at most
    /// what is left of the request timeout).
    pub fn hold_until_sent(&mut self, resp: Response, server: &ApiServer) -> Response {
        match self.inflight.take() {
            Some(place) => {
                let left = server
                    .config
                    .request_timeout
                    .saturating_sub(self.started.elapsed());
                place.hold_until_sent(resp, left)
            }
            None => resp,
        }
    }
}

/// After the response: the connection closed after a body over the limit, the request
/// counted, one debug line, and the audit record.
pub(crate) fn observe(
    server: &ApiServer,
    state: &Filtered,
    mut resp: Response,
    version: http::Version,
    span: &tracing::Span,
) -> Response {
    // After a body over the limit the client is told to reconnect, as Go's server does: part
    // of that body may be left unread (past the drain bound of `serve`).
    if resp.status() == StatusCode::PAYLOAD_TOO_LARGE && version < http::Version::HTTP_2 {
        resp.headers_mut()
            .insert(header::CONNECTION, http::HeaderValue::from_static("close"));
    }
    let info = &state.info;
    let code = resp.status().as_u16();
    let elapsed = state.started.elapsed();
    let verb = info.verb.as_str();
    let resource = info.resource_label();
    server.metrics.observe(verb, &resource, code, elapsed);
    span.in_scope(|| {
        tracing::debug!(verb, resource = %resource, code, latency_ms = elapsed.as_secs_f64() * 1000.0, "handled")
    });
    if let Some(audit) = &server.audit {
        audit.record(&serde_json::json!({
            "time": flotilla_generic_store::objects::now_rfc3339(),
            "user": state.user.as_ref().map(|u| u.name.clone()),
            "groups": state.user.as_ref().map(|u| u.groups.clone()),
            "impersonatedBy": state.impersonator.as_ref().map(|u| u.name.clone()),
            "verb": verb,
            "resource": resource,
            "method": info.method.as_str(),
            "requestURI": info.uri,
            "namespace": info.namespace(),
            "code": code,
            "latencyMs": (elapsed.as_secs_f64() * 1000.0 * 1000.0).round() / 1000.0,
        }));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_without_an_authorizer_has_no_authorization_step() {
        assert_eq!(
            Filter::chain(true),
            [
                Filter::Authentication,
                Filter::Impersonation,
                Filter::InFlight,
                Filter::Authorization
            ]
        );
        assert!(!Filter::chain(false).contains(&Filter::Authorization));
    }
}
