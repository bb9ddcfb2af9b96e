//! Service-account tokens, as kube-apiserver issues and checks them: bound JWTs signed with the
//! server's service-account key.
//!
//! ```text
//!  POST .../serviceaccounts/{name}/token --> token_request: TokenRequest -> jwt::TokenIssuer::sign
//!  Authorization: Bearer <jwt> ----------> validate: jwt::TokenIssuer::verify (signature, iss,
//!  TokenReview {spec.token, audiences}      exp/nbf, aud) + storage (ServiceAccount and bound
//!                                           Secret/Pod/Node exist with the claimed uid)
//!  GET /.well-known/openid-configuration, /openid/v1/jwks --> the issuer's public key (oidc)
//! ```
//!
//! [`install`] wires it into a server: the `serviceaccounts/token` handler, its discovery
//! entry (verb `create`, kind `authentication.k8s.io/v1 TokenRequest`), and the OIDC documents;
//! the [`validate::ServiceAccountAuthenticator`] joins the server's token authenticators.

pub mod jwt;
pub mod token_request;
pub mod validate;

use std::sync::Arc;

use axum::response::Response;
use flotilla_apimachinery::{GroupVersionKind, SubresourceDef};
use http::StatusCode;

pub use jwt::{
    DEFAULT_ISSUER, IssuerOptions, LEGACY_ISSUER, LegacyClaims, TokenIssuer, TokenKeyError,
};
pub use validate::ServiceAccountAuthenticator;
pub use validate::{SA_NAME_ANNOTATION, SA_UID_ANNOTATION, TOKEN_SECRET_TYPE};

use crate::registry::Registry;
use crate::response::json_with_type;

pub const OPENID_CONFIGURATION_PATH: &str = "/.well-known/openid-configuration";
pub const JWKS_PATH: &str = "/openid/v1/jwks";

/// Publishes `serviceaccounts/token` in discovery (when service accounts are served).
pub(crate) fn advertise(registry: &Registry) {
    if let Some(def) = registry.get("", "v1", "serviceaccounts") {
        let def = (*def).clone().with_subresource(SubresourceDef::new(
            "token",
            GroupVersionKind::new(token_request::GROUP, "v1", token_request::KIND),
            &["create"],
        ));
        registry.register(def);
    }
}

/// Serves `serviceaccounts/token` with `issuer` on `server`.
pub(crate) fn install(registry: &Arc<Registry>, issuer: Arc<TokenIssuer>) {
    registry.add_subresource(
        "",
        "serviceaccounts",
        "token",
        Arc::new(token_request::TokenRequestHandler::new(issuer, registry)),
    );
}

/// The OIDC discovery document or key set, when `path` asks for one.
pub(crate) fn serve_oidc(issuer: &TokenIssuer, path: &str) -> Option<Response> {
    match path.trim_end_matches('/') {
        OPENID_CONFIGURATION_PATH => Some(json_with_type(
            StatusCode::OK,
            &issuer.openid_configuration(),
            "application/json",
        )),
        JWKS_PATH => Some(json_with_type(
            StatusCode::OK,
            &issuer.jwks(),
            "application/jwk-set+json",
        )),
        _ => None,
    }
}
