//! `POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token`: the TokenRequest subresource
//! (`authentication.k8s.io/v1`, what `kubectl create token` and kubelets call). It checks the
//! request as kube-apiserver does (names match the path, `spec.expirationSeconds` between ten
//! minutes and 2^32 seconds, default one hour, shortened to the configured maximum with a
//! warning; `spec.audiences` default to the API audiences; a `boundObjectRef` to a Pod, Secret
//! or Node must exist and match its uid), signs a token and answers the TokenRequest with
//! `status.token` and `status.expirationTimestamp`. Nothing is stored.
//!
//! Authorization (`create` on `serviceaccounts/token`) happens before, like any request.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use flotilla_apimachinery::{ApiError, Cause, GroupVersionKind, ResourceDef};
use http::StatusCode;
use serde_json::{Value, json};

use super::jwt::{ObjectRef, TokenIssuer, TokenSpec};
use super::validate::uid_of;
use crate::registry::Registry;
use crate::response::{add_warnings, error_response, json_value};
use crate::subresource::SubresourceHandler;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::context::StoreContext;
use flotilla_generic_store::request::ResourcePath;

pub const GROUP: &str = "authentication.k8s.io";
pub const KIND: &str = "TokenRequest";
/// `spec.expirationSeconds` when none is asked for.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest token kube-apiserver issues.
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest expiration kube-apiserver accepts at all.
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

/// Serves `serviceaccounts/token`.
pub struct TokenRequestHandler {
    issuer: Arc<TokenIssuer>,
    /// The kinds a token can be bound to are looked up here (weak: the registry holds this
    /// handler).
    registry: std::sync::Weak<Registry>,
}

impl TokenRequestHandler {
    pub fn new(issuer: Arc<TokenIssuer>, registry: &Arc<Registry>) -> Self {
        Self {
            issuer,
            registry: Arc::downgrade(registry),
        }
    }

    /// The served definition of core/v1 `plural`, if this server serves it.
    fn core_kind(&self, plural: &str) -> Option<Arc<ResourceDef>> {
        self.registry.upgrade()?.get("", "v1", plural)
    }
}

#[async_trait::async_trait]
impl SubresourceHandler for TokenRequestHandler {
    async fn handle(
        &self,
        store: &Arc<StoreContext>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Response {
        let (ctx, body) =
            match crate::handlers::post_to_subresource(store, def, path, req, user).await {
                Ok(read) => read,
                Err(e) => return error_response(&e),
            };
        match self.create(&ctx, &body).await {
            Ok((answer, warnings)) => {
                let mut resp = json_value(StatusCode::CREATED, &answer);
                add_warnings(&mut resp, &warnings);
                resp
            }
            Err(e) => error_response(&e),
        }
    }
}

impl TokenRequestHandler {
    async fn create(
        &self,
        ctx: &RequestContext,
        body: &bytes::Bytes,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let (Some(namespace), Some(name)) =
            (ctx.path.namespace.as_deref(), ctx.path.name.as_deref())
        else {
            return Err(ApiError::bad_request("namespace is required"));
        };
        // Repeated keys are not checked here (the last value wins).
        let (mut req, _) = crate::handlers::decode_body(ctx, body)?;
        let kind = req.get("kind").and_then(Value::as_str).unwrap_or(KIND);
        let api_version = req
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or("authentication.k8s.io/v1");
        if kind != KIND || api_version != "authentication.k8s.io/v1" {
            return Err(ApiError::bad_request(format!(
                "expected authentication.k8s.io/v1 TokenRequest, got {api_version} {kind}"
            )));
        }
        let meta_str = |req: &Value, field: &str| {
            req.pointer(&format!("/metadata/{field}"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        for (field, want, what) in [
            ("name", name, "service account name"),
            ("namespace", namespace, "service account namespace"),
        ] {
            let given = meta_str(&req, field);
            if !given.is_empty() && given != want {
                return Err(invalid(
                    name,
                    &format!("metadata.{field}"),
                    &format!("Invalid value: \"{given}\": must match the {what} if specified"),
                ));
            }
        }

        let sa_def = ctx.def.as_ref();
        let sa = flotilla_generic_store::objects::Objects::new(sa_def, &ctx.store.storage)
            .get(Some(namespace), name)
            .await?;
        let sa_uid = uid_of(&sa).to_string();

        let spec = req.get("spec").cloned().unwrap_or_else(|| json!({}));
        let mut audiences: Vec<String> = spec
            .get("audiences")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if audiences.is_empty() {
            audiences = self.issuer.api_audiences().to_vec();
        }
        let mut expiration = match spec.get("expirationSeconds") {
            None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
            Some(v) => v.as_i64().ok_or_else(|| {
                invalid(
                    "",
                    "spec.expirationSeconds",
                    &format!("Invalid value: {v}: must be an integer"),
                )
            })?,
        };
        if expiration < MIN_EXPIRATION_SECONDS {
            return Err(invalid(
                "",
                "spec.expirationSeconds",
                &format!(
                    "Invalid value: {expiration}: may not specify a duration less than 10 minutes"
                ),
            ));
        }
        if expiration > MAX_EXPIRATION_SECONDS {
            return Err(invalid(
                "",
                "spec.expirationSeconds",
                &format!(
                    "Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds"
                ),
            ));
        }

        let bound = match spec.get("boundObjectRef").filter(|v| !v.is_null()) {
            Some(r) => Some(self.resolve_bound(ctx, namespace, name, r).await?),
            None => None,
        };

        let mut warnings = Vec::new();
        if let Some(max) = self.issuer.max_expiration_seconds() {
            if expiration > max {
                warnings.push(format!(
                    "requested expiration of {expiration} seconds shortened to {max} seconds"
                ));
                expiration = max;
            }
        }

        let now = chrono::Utc::now();
        let token_spec = TokenSpec {
            namespace: namespace.to_string(),
            service_account: ObjectRef::new(name, &sa_uid),
            audiences: audiences.clone(),
            expiration_seconds: expiration,
            pod: bound.as_ref().and_then(|b| b.pod.clone()),
            secret: bound.as_ref().and_then(|b| b.secret.clone()),
            node: bound.as_ref().and_then(|b| b.node.clone()),
        };
        let claims = self.issuer.claims(&token_spec, now.timestamp());
        let token = self.issuer.sign(&claims).map_err(|e| {
            tracing::error!(error = %e, "signing a service-account token");
            ApiError::internal(format!("failed to generate token: {e}"))
        })?;
        tracing::info!(
            namespace,
            service_account = name,
            credential_id = %format!("JTI={}", claims.jti),
            expiration_seconds = expiration,
            "issued a service-account token"
        );

        let expires = now + chrono::Duration::seconds(expiration);
        let rfc3339 =
            |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        if let Some(m) = req.as_object_mut() {
            m.insert("kind".into(), json!(KIND));
            m.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
            let meta = m.entry("metadata").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("name".into(), json!(name));
                meta.insert("namespace".into(), json!(namespace));
                meta.insert("creationTimestamp".into(), json!(rfc3339(now)));
            }
            let mut spec = spec;
            spec["audiences"] = json!(audiences);
            spec["expirationSeconds"] = json!(expiration);
            if spec.get("boundObjectRef").is_some_and(Value::is_null) {
                if let Some(s) = spec.as_object_mut() {
                    s.remove("boundObjectRef");
                }
            }
            m.insert("spec".into(), spec);
            m.insert(
                "status".into(),
                json!({"token": token, "expirationTimestamp": rfc3339(expires)}),
            );
        }
        Ok((req, warnings))
    }

    /// Looks the bound object up: it must exist (in the service account's namespace unless it
    /// is a Node), match `uid` when given, and (a Pod) run as this service account.
    async fn resolve_bound(
        &self,
        ctx: &RequestContext,
        namespace: &str,
        sa_name: &str,
        r: &Value,
    ) -> Result<Bound, ApiError> {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or_default();
        let (kind, api_version, obj_name, want_uid) =
            (s("kind"), s("apiVersion"), s("name"), s("uid"));
        let group = api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
        let plural = match (group, kind) {
            ("", "Pod") => "pods",
            ("", "Secret") => "secrets",
            ("", "Node") => "nodes",
            _ => {
                let version = api_version.rsplit('/').next().unwrap_or_default();
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {}",
                    GroupVersionKind::new(group, version, kind)
                )));
            }
        };
        let ns = (plural != "nodes").then_some(namespace);
        let Some(def) = self.core_kind(plural) else {
            // This server does not serve the kind, so no such object exists here.
            return Err(ApiError::not_found("", plural, obj_name));
        };
        let obj = flotilla_generic_store::objects::Objects::new(&def, &ctx.store.storage)
            .get(ns, obj_name)
            .await?;
        let uid = uid_of(&obj).to_string();
        if !want_uid.is_empty() && want_uid != uid {
            return Err(ApiError::conflict_message(format!(
                "Operation cannot be fulfilled on {kind} \"{obj_name}\": the UID in the bound object reference ({want_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ))
            .with_details("", kind, obj_name));
        }
        let this = Some(ObjectRef::new(obj_name, &uid));
        match plural {
            "secrets" => Ok(Bound {
                secret: this,
                ..Bound::default()
            }),
            "nodes" => Ok(Bound {
                node: this,
                ..Bound::default()
            }),
            _ => {
                let pod_value = obj.value();
                let pod_sa = pod_value
                    .pointer("/spec/serviceAccountName")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .unwrap_or("default");
                if pod_sa != sa_name {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount \"{sa_name}\" to pod running with different serviceaccount name."
                    )));
                }
                // The pod's node goes into the token too (uid only when the Node is known).
                let node = match obj
                    .value()
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty())
                {
                    None => None,
                    Some(node_name) => {
                        let node_uid = match self.core_kind("nodes") {
                            Some(nd) => flotilla_generic_store::objects::Objects::new(
                                &nd,
                                &ctx.store.storage,
                            )
                            .get(None, node_name)
                            .await
                            .ok()
                            .map(|n| uid_of(&n).to_string())
                            .unwrap_or_default(),
                            None => String::new(),
                        };
                        Some(ObjectRef::new(node_name, &node_uid))
                    }
                };
                Ok(Bound {
                    pod: this,
                    node,
                    ..Bound::default()
                })
            }
        }
    }
}

/// What a token is bound to.
#[derive(Debug, Default)]
struct Bound {
    pod: Option<ObjectRef>,
    secret: Option<ObjectRef>,
    node: Option<ObjectRef>,
}

/// `422 TokenRequest.authentication.k8s.io "<name>" is invalid: <field>: <message>`.
fn invalid(name: &str, field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        GROUP,
        KIND,
        name,
        vec![Cause::new("FieldValueInvalid", message, field)],
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::body::Body;
    use base64::Engine;
    use flotilla_storage::{MemoryStorage, Storage};
    use http::Method;
    use http::{Request, header};
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    use super::*;
    use crate::auth::PeerIdentity;
    use crate::serviceaccount::{DEFAULT_ISSUER, IssuerOptions};
    use crate::{ApiServer, ServerConfig, ServerOptions};

    fn server(max_expiration: Option<Duration>) -> Arc<ApiServer> {
        let registry = Registry::new();
        for def in flotilla_kinds::builtin_resources()
            .into_iter()
            .chain(crate::reviews::review_resources())
        {
            registry.register(def);
        }
        let storage: Arc<dyn Storage> = Arc::new(MemoryStorage::new());
        let issuer = TokenIssuer::new(
            &flotilla_pki::ServiceAccountKey::generate().unwrap(),
            IssuerOptions {
                max_expiration,
                ..IssuerOptions::default()
            },
        )
        .unwrap();
        ApiServer::with_options(
            Arc::new(registry),
            storage,
            ServerConfig::default(),
            ServerOptions {
                service_account_issuer: Some(Arc::new(issuer)),
                ..ServerOptions::default()
            },
        )
    }

    enum As<'a> {
        Admin,
        Bearer(&'a str),
    }

    async fn call(
        s: &Arc<ApiServer>,
        who: As<'_>,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, http::HeaderMap, Value) {
        let mut req = Request::builder()
            .method(method)
            .uri(path)
            .header(header::CONTENT_TYPE, "application/json");
        match who {
            As::Admin => {}
            As::Bearer(t) => req = req.header(header::AUTHORIZATION, format!("Bearer {t}")),
        }
        let mut req = req
            .body(body.map(|b| Body::from(b.to_string())).unwrap_or_default())
            .unwrap();
        if let As::Admin = who {
            req.extensions_mut()
                .insert(PeerIdentity::user(UserInfo::new(
                    "admin",
                    &["system:masters"],
                )));
        }
        let resp = s.router().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (
            status,
            headers,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn create(s: &Arc<ApiServer>, path: &str, obj: Value) -> Value {
        let (status, _, body) = call(s, As::Admin, Method::POST, path, Some(obj)).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        body
    }

    const SA_PATH: &str = "/api/v1/namespaces/default/serviceaccounts";
    const TOKEN_PATH: &str = "/api/v1/namespaces/default/serviceaccounts/robot/token";

    async fn with_robot(max_expiration: Option<Duration>) -> (Arc<ApiServer>, String) {
        let s = server(max_expiration);
        create(
            &s,
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
        )
        .await;
        let sa = create(
            &s,
            SA_PATH,
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
        )
        .await;
        let uid = sa["metadata"]["uid"].as_str().unwrap().to_string();
        (s, uid)
    }

    fn token_request(spec: Value) -> Value {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    }

    fn payload(token: &str) -> Value {
        let p = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .unwrap(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn issues_a_token_the_server_then_accepts() {
        let (s, uid) = with_robot(None).await;
        let (status, _, tr) = call(
            &s,
            As::Admin,
            Method::POST,
            TOKEN_PATH,
            Some(token_request(json!({}))),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{tr}");
        assert_eq!(tr["kind"], KIND);
        assert_eq!(tr["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(tr["metadata"]["name"], "robot");
        assert_eq!(tr["metadata"]["namespace"], "default");
        assert_eq!(tr["spec"]["audiences"], json!([DEFAULT_ISSUER]));
        assert_eq!(tr["spec"]["expirationSeconds"], 3600);
        let token = tr["status"]["token"].as_str().unwrap();
        let claims = payload(token);
        assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
        assert_eq!(
            claims["kubernetes.io"]["serviceaccount"]["uid"],
            uid.as_str()
        );
        let exp = claims["exp"].as_i64().unwrap();
        assert_eq!(exp - claims["iat"].as_i64().unwrap(), 3600);
        let expires = chrono::DateTime::parse_from_rfc3339(
            tr["status"]["expirationTimestamp"].as_str().unwrap(),
        )
        .unwrap();
        assert_eq!(expires.timestamp(), exp);

        // The token authenticates requests as the service account...
        let (status, _, review) = call(
            &s,
            As::Bearer(token),
            Method::POST,
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{review}");
        let info = &review["status"]["userInfo"];
        assert_eq!(info["username"], "system:serviceaccount:default:robot");
        assert_eq!(info["uid"], uid.as_str());
        assert_eq!(
            info["groups"],
            json!([
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ])
        );
        assert_eq!(
            info["extra"]["authentication.kubernetes.io/credential-id"],
            json!([format!("JTI={}", claims["jti"].as_str().unwrap())])
        );
        // ...and passes a TokenReview for the API audiences, but not for another audience.
        let review = |auds: Value| json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token, "audiences": auds}});
        let path = "/apis/authentication.k8s.io/v1/tokenreviews";
        let (_, _, ok) = call(&s, As::Admin, Method::POST, path, Some(review(json!([])))).await;
        assert_eq!(ok["status"]["authenticated"], true, "{ok}");
        assert_eq!(ok["status"]["audiences"], json!([DEFAULT_ISSUER]));
        assert_eq!(
            ok["status"]["user"]["username"],
            "system:serviceaccount:default:robot"
        );
        let (_, _, no) = call(
            &s,
            As::Admin,
            Method::POST,
            path,
            Some(review(json!(["vault"]))),
        )
        .await;
        assert_eq!(no["status"]["authenticated"], false, "{no}");
        assert!(
            no["status"]["error"]
                .as_str()
                .unwrap()
                .contains("invalid for the target audiences"),
            "{no}"
        );
    }

    #[tokio::test]
    async fn validation_like_kube() {
        let (s, _) = with_robot(None).await;
        let post = |body: Value| call(&s, As::Admin, Method::POST, TOKEN_PATH, Some(body));
        let (status, _, e) = post(token_request(json!({"expirationSeconds": 599}))).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            e["message"],
            "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
        );
        let (status, _, _) = post(token_request(
            json!({"expirationSeconds": (1i64 << 32) + 1}),
        ))
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        let (status, _, e) = post(json!({"metadata": {"name": "other"}})).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{e}");
        let (status, _, e) = call(
            &s,
            As::Admin,
            Method::POST,
            "/api/v1/namespaces/default/serviceaccounts/ghost/token",
            Some(token_request(json!({}))),
        )
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(e["message"], "serviceaccounts \"ghost\" not found");
        let (status, _, _) = call(&s, As::Admin, Method::GET, TOKEN_PATH, None).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn expiration_is_shortened_to_the_maximum_with_a_warning() {
        let (s, _) = with_robot(Some(Duration::from_secs(1200))).await;
        let (status, headers, tr) = call(
            &s,
            As::Admin,
            Method::POST,
            TOKEN_PATH,
            Some(token_request(
                json!({"expirationSeconds": 86400, "audiences": ["vault"]}),
            )),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{tr}");
        assert_eq!(tr["spec"]["expirationSeconds"], 1200);
        assert_eq!(tr["spec"]["audiences"], json!(["vault"]));
        let warning = headers.get(header::WARNING).unwrap().to_str().unwrap();
        assert!(
            warning.contains("requested expiration of 86400 seconds shortened to 1200 seconds"),
            "{warning}"
        );
        let claims = payload(tr["status"]["token"].as_str().unwrap());
        assert_eq!(claims["aud"], json!(["vault"]));
        assert_eq!(
            claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
            1200
        );
    }

    #[tokio::test]
    async fn bound_objects_must_exist_and_match() {
        let (s, _) = with_robot(None).await;
        let secret = create(
            &s,
            "/api/v1/namespaces/default/secrets",
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}}),
        )
        .await;
        let secret_uid = secret["metadata"]["uid"].as_str().unwrap();
        let bind = |r: Value| token_request(json!({"boundObjectRef": r}));
        let post = |body: Value| call(&s, As::Admin, Method::POST, TOKEN_PATH, Some(body));

        let (status, _, tr) = post(bind(
            json!({"kind": "Secret", "apiVersion": "v1", "name": "s1", "uid": secret_uid}),
        ))
        .await;
        assert_eq!(status, StatusCode::CREATED, "{tr}");
        let claims = payload(tr["status"]["token"].as_str().unwrap());
        assert_eq!(
            claims["kubernetes.io"]["secret"],
            json!({"name": "s1", "uid": secret_uid})
        );
        let (status, _, e) = post(bind(
            json!({"kind": "Secret", "apiVersion": "v1", "name": "s1", "uid": "stale"}),
        ))
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{e}");
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("the UID in the bound object reference (stale) does not match")
        );
        let (status, _, e) = post(bind(
            json!({"kind": "Secret", "apiVersion": "v1", "name": "nope"}),
        ))
        .await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(e["message"], "secrets \"nope\" not found");
        let (status, _, e) = post(bind(
            json!({"kind": "Deployment", "apiVersion": "apps/v1", "name": "web"}),
        ))
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(
            e["message"],
            "cannot bind token to object of type apps/v1, Kind=Deployment"
        );

        // A pod must run as this service account; its node goes into the token.
        let node = create(
            &s,
            "/api/v1/nodes",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
        )
        .await;
        let pod = |name: &str, sa: &str| json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"serviceAccountName": sa, "nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}});
        create(&s, "/api/v1/namespaces/default/pods", pod("mine", "robot")).await;
        create(
            &s,
            "/api/v1/namespaces/default/pods",
            pod("theirs", "other"),
        )
        .await;
        let (status, _, e) = post(bind(
            json!({"kind": "Pod", "apiVersion": "v1", "name": "theirs"}),
        ))
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
        let (status, _, tr) = post(bind(
            json!({"kind": "Pod", "apiVersion": "v1", "name": "mine"}),
        ))
        .await;
        assert_eq!(status, StatusCode::CREATED, "{tr}");
        let claims = payload(tr["status"]["token"].as_str().unwrap());
        assert_eq!(claims["kubernetes.io"]["pod"]["name"], "mine");
        assert_eq!(
            claims["kubernetes.io"]["node"],
            json!({"name": "n1", "uid": node["metadata"]["uid"]})
        );
        // A Node-bound token needs no namespace for its node.
        let (status, _, tr) = post(bind(
            json!({"kind": "Node", "apiVersion": "v1", "name": "n1"}),
        ))
        .await;
        assert_eq!(status, StatusCode::CREATED, "{tr}");
    }

    #[tokio::test]
    async fn discovery_and_oidc_documents() {
        let (s, _) = with_robot(None).await;
        let (status, _, list) = call(&s, As::Admin, Method::GET, "/api/v1", None).await;
        assert_eq!(status, StatusCode::OK);
        let token = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "serviceaccounts/token")
            .unwrap();
        assert_eq!(token["kind"], "TokenRequest");
        assert_eq!(token["group"], "authentication.k8s.io");
        assert_eq!(token["version"], "v1");
        assert_eq!(token["verbs"], json!(["create"]));
        let (_, _, conf) = call(
            &s,
            As::Admin,
            Method::GET,
            "/.well-known/openid-configuration",
            None,
        )
        .await;
        assert_eq!(conf["issuer"], DEFAULT_ISSUER);
        let (status, headers, jwks) =
            call(&s, As::Admin, Method::GET, "/openid/v1/jwks", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "application/jwk-set+json");
        assert_eq!(jwks["keys"][0]["kty"], "EC");
    }
}
