//! Service-account JWTs, without storage: the claims kube-apiserver puts in a bound token, the
//! issuer that signs them with the server's key (ES256), and the checks of a presented token
//! that need no lookup (issuer, signature, times, audiences, well-formed private claims).
//! Whether the service account and the bound object still exist is [`super::validate`]'s.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use flotilla_pki::ServiceAccountKey;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use crate::auth::InvalidToken;

/// Clock skew tolerated on `exp`, `nbf` and `iat`, and how long a deleted object's tokens
/// keep working after its deletionTimestamp (go-jose's default leeway, which kube uses).
pub const LEEWAY_SECS: i64 = 60;
/// The issuer kube-apiserver is usually configured with.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// `system:serviceaccount:` + `<namespace>:<name>` is a service account's user name.
pub const USER_PREFIX: &str = "system:serviceaccount:";
/// The issuer of the legacy tokens kept in `kubernetes.io/service-account-token` Secrets.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The claims of a legacy Secret-based token (no expiry, no audience): valid as long as its
/// Secret holds it and the ServiceAccount is the same.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LegacyClaims {
    pub iss: String,
    pub sub: String,
    #[serde(rename = "kubernetes.io/serviceaccount/namespace")]
    pub namespace: String,
    #[serde(rename = "kubernetes.io/serviceaccount/secret.name")]
    pub secret_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.name")]
    pub service_account_name: String,
    #[serde(rename = "kubernetes.io/serviceaccount/service-account.uid")]
    pub service_account_uid: String,
}

impl LegacyClaims {
    /// The claims of the token for ServiceAccount `name` (uid `uid`) kept in Secret `secret`.
    pub fn new(namespace: &str, name: &str, uid: &str, secret: &str) -> Self {
        Self {
            iss: LEGACY_ISSUER.into(),
            sub: username(namespace, name),
            namespace: namespace.into(),
            secret_name: secret.into(),
            service_account_name: name.into(),
            service_account_uid: uid.into(),
        }
    }
}

/// `system:serviceaccount:<namespace>:<name>`.
pub fn username(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

#[derive(Debug, thiserror::Error)]
pub enum TokenKeyError {
    #[error("loading the service-account signing key: {0}")]
    Key(#[source] jsonwebtoken::errors::Error),
    #[error("signing a service-account token: {0}")]
    Sign(#[source] jsonwebtoken::errors::Error),
    #[error("the service-account issuer must not be empty")]
    EmptyIssuer,
}

/// A name and uid in the private claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

impl ObjectRef {
    pub fn new(name: &str, uid: &str) -> Self {
        Self {
            name: name.into(),
            uid: uid.into(),
        }
    }
}

/// The private `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaims {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(default)]
    pub serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
    /// The node of a Node-bound token, or the node a bound pod runs on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<ObjectRef>,
}

/// The claims of a bound service-account token, serialised with kube's names (in the
/// alphabetical order kube's encoder produces).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    #[serde(default, deserialize_with = "string_or_list")]
    pub aud: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exp: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iat: Option<i64>,
    #[serde(default)]
    pub iss: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(rename = "kubernetes.io", default)]
    pub kubernetes: KubernetesClaims,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nbf: Option<i64>,
    #[serde(default)]
    pub sub: String,
}

/// JWT `aud` is a string or a list of strings.
fn string_or_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match Option::<OneOrMany>::deserialize(d)? {
        None => Vec::new(),
        Some(OneOrMany::One(s)) => vec![s],
        Some(OneOrMany::Many(v)) => v,
    })
}

/// What a token is issued for.
#[derive(Debug, Clone)]
pub struct TokenSpec {
    pub namespace: String,
    pub service_account: ObjectRef,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    pub pod: Option<ObjectRef>,
    pub secret: Option<ObjectRef>,
    pub node: Option<ObjectRef>,
}

/// How the issuer is configured.
#[derive(Debug, Clone)]
pub struct IssuerOptions {
    /// `iss` of issued tokens; only tokens with this issuer are checked here.
    pub issuer: String,
    /// The audiences of this API server (kube's `--api-audiences`); empty means the issuer.
    pub api_audiences: Vec<String>,
    /// Longer requests are shortened to this (kube's
    /// `--service-account-max-token-expiration`); `None`: no limit.
    pub max_expiration: Option<Duration>,
    /// `jwks_uri` of the OIDC discovery document; `None`: `<issuer>/openid/v1/jwks`.
    pub jwks_uri: Option<String>,
}

impl Default for IssuerOptions {
    fn default() -> Self {
        Self {
            issuer: DEFAULT_ISSUER.into(),
            api_audiences: Vec::new(),
            max_expiration: None,
            jwks_uri: None,
        }
    }
}

/// Signs and checks service-account tokens with one key.
pub struct TokenIssuer {
    issuer: String,
    api_audiences: Vec<String>,
    max_expiration_seconds: Option<i64>,
    jwks_uri: String,
    key_id: String,
    encoding: EncodingKey,
    decoding: DecodingKey,
    /// The public key as a JWK (`kty` EC, `crv` P-256, `x`, `y`).
    jwk: Value,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("issuer", &self.issuer)
            .field("api_audiences", &self.api_audiences)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// A token that passed every check that needs no lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub claims: Claims,
    /// The token's audiences that were asked for.
    pub audiences: Vec<String>,
}

impl TokenIssuer {
    pub fn new(key: &ServiceAccountKey, options: IssuerOptions) -> Result<Self, TokenKeyError> {
        if options.issuer.is_empty() {
            return Err(TokenKeyError::EmptyIssuer);
        }
        // kube's key id: the unpadded base64url SHA-256 of the public key's DER (SPKI).
        let digest = ring::digest::digest(&ring::digest::SHA256, &key.public_key_der);
        let key_id = URL_SAFE_NO_PAD.encode(digest.as_ref());
        let point = &key.public_key_point;
        let (x, y) = if point.len() == 65 {
            (&point[1..33], &point[33..65])
        } else {
            (&point[..0], &point[..0])
        };
        let jwk = json!({
            "use": "sig",
            "kty": "EC",
            "kid": key_id,
            "crv": "P-256",
            "alg": "ES256",
            "x": URL_SAFE_NO_PAD.encode(x),
            "y": URL_SAFE_NO_PAD.encode(y),
        });
        let api_audiences = if options.api_audiences.is_empty() {
            vec![options.issuer.clone()]
        } else {
            options.api_audiences
        };
        let jwks_uri = options
            .jwks_uri
            .unwrap_or_else(|| format!("{}/openid/v1/jwks", options.issuer.trim_end_matches('/')));
        let issuer = Self {
            issuer: options.issuer,
            api_audiences,
            max_expiration_seconds: options
                .max_expiration
                .map(|d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
            jwks_uri,
            key_id,
            encoding: EncodingKey::from_ec_der(&key.private_key_der),
            decoding: DecodingKey::from_ec_der(&key.public_key_point),
            jwk,
        };
        // Fail at start-up, not on the first token request, when the key is unusable.
        let probe = jsonwebtoken::encode(
            &Header::new(Algorithm::ES256),
            &json!({"probe": true}),
            &issuer.encoding,
        )
        .map_err(TokenKeyError::Key)?;
        jsonwebtoken::decode::<Value>(&probe, &issuer.decoding, &signature_only())
            .map_err(TokenKeyError::Key)?;
        Ok(issuer)
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }
    pub fn api_audiences(&self) -> &[String] {
        &self.api_audiences
    }
    pub fn max_expiration_seconds(&self) -> Option<i64> {
        self.max_expiration_seconds
    }
    pub fn key_id(&self) -> &str {
        &self.key_id
    }

    /// The claims of a token for `spec` issued at `now` (unix seconds), with a fresh `jti`.
    pub fn claims(&self, spec: &TokenSpec, now: i64) -> Claims {
        Claims {
            aud: spec.audiences.clone(),
            exp: Some(now.saturating_add(spec.expiration_seconds)),
            iat: Some(now),
            iss: self.issuer.clone(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaims {
                namespace: spec.namespace.clone(),
                serviceaccount: spec.service_account.clone(),
                pod: spec.pod.clone(),
                secret: spec.secret.clone(),
                node: spec.node.clone(),
            },
            nbf: Some(now),
            sub: username(&spec.namespace, &spec.service_account.name),
        }
    }

    /// The signed JWT (`header.payload.signature`, header `{"alg":"ES256","kid":...}`).
    pub fn sign(&self, claims: &Claims) -> Result<String, TokenKeyError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = None;
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(TokenKeyError::Sign)
    }

    /// A signed legacy token.
    pub fn sign_legacy(&self, claims: &LegacyClaims) -> Result<String, TokenKeyError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = None;
        header.kid = Some(self.key_id.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).map_err(TokenKeyError::Sign)
    }

    /// Checks the signature and claims of a legacy token; `Ok(None)` when it is not one.
    /// Whether its Secret still holds it is for the caller to check.
    pub fn verify_legacy(&self, token: &str) -> Result<Option<LegacyClaims>, InvalidToken> {
        if unverified_issuer(token).as_deref() != Some(LEGACY_ISSUER) {
            return Ok(None);
        }
        let data = jsonwebtoken::decode::<LegacyClaims>(token, &self.decoding, &signature_only())
            .map_err(|_| {
            InvalidToken("invalid bearer token, token could not be verified".into())
        })?;
        let c = data.claims;
        if c.namespace.is_empty()
            || c.service_account_name.is_empty()
            || c.secret_name.is_empty()
            || c.sub != username(&c.namespace, &c.service_account_name)
        {
            return Err(InvalidToken(
                "legacy service account token is missing or contradicts its claims".into(),
            ));
        }
        Ok(Some(c))
    }

    /// Checks `token` at `now` (unix seconds) for `audiences` (empty: the API audiences).
    /// `Ok(None)` when it is not a JWT of this issuer (another authenticator may know it).
    pub fn verify(
        &self,
        token: &str,
        audiences: &[String],
        now: i64,
    ) -> Result<Option<VerifiedToken>, InvalidToken> {
        if unverified_issuer(token).as_deref() != Some(self.issuer.as_str()) {
            return Ok(None);
        }
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &signature_only())
            .map_err(|e| {
                tracing::debug!(error = %e, "service-account token signature check failed");
                InvalidToken("invalid bearer token, token could not be verified".into())
            })?;
        let claims = data.claims;
        check_times(&claims, now)?;
        let asked: &[String] = if audiences.is_empty() {
            &self.api_audiences
        } else {
            audiences
        };
        let token_audiences: &[String] = if claims.aud.is_empty() {
            &self.api_audiences
        } else {
            &claims.aud
        };
        let matched: Vec<String> = token_audiences
            .iter()
            .filter(|a| asked.contains(a))
            .cloned()
            .collect();
        if matched.is_empty() {
            return Err(InvalidToken(format!(
                "token audiences {token_audiences:?} is invalid for the target audiences {asked:?}"
            )));
        }
        let k = &claims.kubernetes;
        if k.namespace.is_empty() || k.serviceaccount.name.is_empty() {
            return Err(InvalidToken(
                "service account token is missing the kubernetes.io namespace or serviceaccount claim"
                    .into(),
            ));
        }
        if claims.sub != username(&k.namespace, &k.serviceaccount.name) {
            return Err(InvalidToken(
                "service account token subject does not match its kubernetes.io claims".into(),
            ));
        }
        Ok(Some(VerifiedToken {
            claims,
            audiences: matched,
        }))
    }

    /// `/.well-known/openid-configuration`.
    pub fn openid_configuration(&self) -> Value {
        json!({
            "issuer": self.issuer,
            "jwks_uri": self.jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": ["ES256"],
        })
    }

    /// `/openid/v1/jwks`.
    pub fn jwks(&self) -> Value {
        json!({"keys": [self.jwk]})
    }
}

/// Signature and algorithm only: the claims are checked here, with kube's messages.
fn signature_only() -> Validation {
    let mut v = Validation::new(Algorithm::ES256);
    v.required_spec_claims.clear();
    v.validate_exp = false;
    v.validate_nbf = false;
    v.validate_aud = false;
    v
}

/// `iss` of a JWT before any check, to tell whether it is ours at all.
fn unverified_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_header, payload, _sig) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    v.get("iss").and_then(Value::as_str).map(str::to_string)
}

fn check_times(claims: &Claims, now: i64) -> Result<(), InvalidToken> {
    match claims.exp {
        Some(exp) if now - LEEWAY_SECS <= exp => {}
        _ => return Err(InvalidToken("service account token has expired".into())),
    }
    if claims.nbf.is_some_and(|nbf| now + LEEWAY_SECS < nbf) {
        return Err(InvalidToken(
            "service account token is not valid yet".into(),
        ));
    }
    if claims.iat.is_some_and(|iat| now + LEEWAY_SECS < iat) {
        return Err(InvalidToken(
            "service account token is issued in the future".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn issuer() -> TokenIssuer {
        TokenIssuer::new(
            &ServiceAccountKey::generate().unwrap(),
            IssuerOptions::default(),
        )
        .unwrap()
    }

    fn spec() -> TokenSpec {
        TokenSpec {
            namespace: "ns1".into(),
            service_account: ObjectRef::new("robot", "uid-sa"),
            audiences: vec![DEFAULT_ISSUER.into()],
            expiration_seconds: 3600,
            pod: None,
            secret: Some(ObjectRef::new("s1", "uid-s1")),
            node: None,
        }
    }

    fn part(token: &str, i: usize) -> Value {
        let p = token.split('.').nth(i).unwrap();
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(p).unwrap()).unwrap()
    }

    #[test]
    fn legacy_tokens_round_trip_and_tampering_is_refused() {
        let iss = issuer();
        let claims = LegacyClaims::new("ns", "robot", "u1", "robot-token");
        let token = iss.sign_legacy(&claims).unwrap();
        assert_eq!(iss.verify_legacy(&token).unwrap(), Some(claims.clone()));
        // Not a legacy token: another authenticator's business.
        assert_eq!(iss.verify_legacy("not-a-jwt").unwrap(), None);
        // A claim changed after signing fails the signature.
        let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
        let mut forged = claims;
        forged.service_account_name = "admin".into();
        forged.sub = username("ns", "admin");
        parts[1] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
        assert!(iss.verify_legacy(&parts.join(".")).is_err());
        // Signed by another key: refused.
        let other = issuer();
        assert!(
            iss.verify_legacy(
                &other
                    .sign_legacy(&LegacyClaims::new("ns", "robot", "u1", "robot-token"))
                    .unwrap()
            )
            .is_err()
        );
    }

    #[test]
    fn claims_are_kubes() {
        let iss = issuer();
        let now = 1_700_000_000;
        let token = iss.sign(&iss.claims(&spec(), now)).unwrap();
        assert_eq!(
            part(&token, 0),
            json!({"alg": "ES256", "kid": iss.key_id()})
        );
        let payload = part(&token, 1);
        let keys: Vec<&str> = payload
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "aud",
                "exp",
                "iat",
                "iss",
                "jti",
                "kubernetes.io",
                "nbf",
                "sub"
            ]
        );
        assert_eq!(payload["aud"], json!([DEFAULT_ISSUER]));
        assert_eq!(payload["iss"], DEFAULT_ISSUER);
        assert_eq!(payload["sub"], "system:serviceaccount:ns1:robot");
        assert_eq!(
            (
                payload["iat"].clone(),
                payload["nbf"].clone(),
                payload["exp"].clone()
            ),
            (json!(now), json!(now), json!(now + 3600))
        );
        assert!(uuid::Uuid::parse_str(payload["jti"].as_str().unwrap()).is_ok());
        assert_eq!(
            payload["kubernetes.io"],
            json!({"namespace": "ns1", "serviceaccount": {"name": "robot", "uid": "uid-sa"}, "secret": {"name": "s1", "uid": "uid-s1"}})
        );
        // Two tokens for the same spec differ in their jti.
        let other = iss.sign(&iss.claims(&spec(), now)).unwrap();
        assert_ne!(part(&other, 1)["jti"], payload["jti"]);

        let verified = iss.verify(&token, &[], now + 10).unwrap().unwrap();
        assert_eq!(verified.claims.kubernetes.serviceaccount.uid, "uid-sa");
        assert_eq!(verified.audiences, [DEFAULT_ISSUER]);
    }

    #[test]
    fn expiry_and_not_before_with_leeway() {
        let iss = issuer();
        let now = 1_700_000_000;
        let token = iss.sign(&iss.claims(&spec(), now)).unwrap();
        assert!(iss.verify(&token, &[], now + 3600 + LEEWAY_SECS).is_ok());
        assert_eq!(
            iss.verify(&token, &[], now + 3600 + LEEWAY_SECS + 1),
            Err(InvalidToken("service account token has expired".into()))
        );
        assert!(iss.verify(&token, &[], now - LEEWAY_SECS).is_ok());
        assert_eq!(
            iss.verify(&token, &[], now - LEEWAY_SECS - 1),
            Err(InvalidToken(
                "service account token is not valid yet".into()
            ))
        );
        let mut no_exp = iss.claims(&spec(), now);
        no_exp.exp = None;
        let token = iss.sign(&no_exp).unwrap();
        assert!(iss.verify(&token, &[], now).is_err());
    }

    #[test]
    fn audiences_must_intersect() {
        let iss = issuer();
        let now = 1_700_000_000;
        let mut s = spec();
        s.audiences = vec!["vault".into(), "other".into()];
        let token = iss.sign(&iss.claims(&s, now)).unwrap();
        // Not for this API server...
        let err = iss.verify(&token, &[], now).unwrap_err();
        assert!(err.0.contains("invalid for the target audiences"), "{err}");
        // ...but for whoever asks for one of its audiences (a TokenReview from vault).
        let ok = iss
            .verify(&token, &["vault".into(), "x".into()], now)
            .unwrap()
            .unwrap();
        assert_eq!(ok.audiences, ["vault"]);
    }

    #[test]
    fn other_keys_issuers_and_garbage() {
        let iss = issuer();
        let now = 1_700_000_000;
        // Same issuer, another key: ours by issuer, refused by signature.
        let stranger = issuer();
        let forged = stranger.sign(&stranger.claims(&spec(), now)).unwrap();
        let err = iss.verify(&forged, &[], now).unwrap_err();
        assert!(err.0.contains("could not be verified"), "{err}");
        // A tampered payload with the original signature.
        let good = iss.sign(&iss.claims(&spec(), now)).unwrap();
        let mut claims = iss.claims(&spec(), now);
        claims.kubernetes.serviceaccount.name = "admin".into();
        claims.sub = username("ns1", "admin");
        let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
        let parts: Vec<&str> = good.split('.').collect();
        let tampered = format!("{}.{payload}.{}", parts[0], parts[2]);
        assert!(iss.verify(&tampered, &[], now).is_err());
        // Another issuer's token, a static token, garbage: not ours.
        let elsewhere = TokenIssuer::new(
            &ServiceAccountKey::generate().unwrap(),
            IssuerOptions {
                issuer: "https://elsewhere".into(),
                ..IssuerOptions::default()
            },
        )
        .unwrap();
        let theirs = elsewhere.sign(&elsewhere.claims(&spec(), now)).unwrap();
        assert_eq!(iss.verify(&theirs, &[], now), Ok(None));
        assert_eq!(iss.verify("abc123", &[], now), Ok(None));
        assert_eq!(iss.verify("a.b.c", &[], now), Ok(None));
    }

    #[test]
    fn discovery_documents_and_jwk() {
        let iss = issuer();
        let conf = iss.openid_configuration();
        assert_eq!(conf["issuer"], DEFAULT_ISSUER);
        assert_eq!(conf["jwks_uri"], format!("{DEFAULT_ISSUER}/openid/v1/jwks"));
        let jwks = iss.jwks();
        let jwk = &jwks["keys"][0];
        assert_eq!(jwk["kid"], iss.key_id());
        // The published key verifies issued tokens.
        let key =
            DecodingKey::from_ec_components(jwk["x"].as_str().unwrap(), jwk["y"].as_str().unwrap())
                .unwrap();
        let token = iss.sign(&iss.claims(&spec(), 1_700_000_000)).unwrap();
        assert!(jsonwebtoken::decode::<Value>(&token, &key, &signature_only()).is_ok());
        assert_eq!(iss.api_audiences(), [DEFAULT_ISSUER]);
    }
}
