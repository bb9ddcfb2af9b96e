//! Flotilla's web UI: a read-only, live view of the fleet served under [`PREFIX`] by the
//! host API server.
//!
//! This crate owns the `/ui/` routes and the static assets (HTML, CSS, ES modules) compiled
//! into the binary, so the UI needs nothing installed and nothing fetched but the host. The
//! assets carry no data: every read is an ordinary API request the browser makes with the
//! user's own credential (a bearer token, or the client certificate the TLS layer already
//! authenticated), so authentication and RBAC apply exactly as for kubectl and the UI has no
//! privileged backend. The routes therefore sit in front of authentication, like `/healthz`.
//!
//! Page routes are resolved in the browser (`assets/app.js` is their one list); the server
//! answers any path under [`PREFIX`] that is not an asset with the page shell, with status
//! 404 when [`is_page`] does not know it, so a wrong link gets a clear "not found" page and
//! an honest status.

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get};
use http::{HeaderValue, Method, StatusCode, header};

/// Where the UI is served.
pub const PREFIX: &str = "/ui/";

/// The assets, by their path under `/ui/assets/`.
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/app.js"),
    ),
    (
        "api.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/api.js"),
    ),
    (
        "views.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/views.js"),
    ),
    (
        "dom.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../assets/dom.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../assets/style.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_bytes!("../assets/favicon.svg"),
    ),
];

/// The page shell every page route answers with.
const INDEX_HTML: &str = include_str!("../assets/index.html");

/// The top-level page routes the browser knows (see `routes` in `assets/app.js`); a
/// workload's detail page is `workloads/<namespace>/<binding>`.
const PAGES: &[&str] = &["", "fleet", "workloads", "scheduling", "login"];

/// The strict policy the assets are served under: scripts, styles and data come from the
/// host only (which keeps a token in session storage out of reach of injected markup).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

/// Why a UI request is answered with an error.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    #[error("no UI asset {0}")]
    AssetNotFound(String),
    #[error("the UI only answers GET and HEAD, not {0}")]
    MethodNotAllowed(Method),
}

impl IntoResponse for UiError {
    fn into_response(self) -> Response {
        let status = match &self {
            UiError::AssetNotFound(_) => StatusCode::NOT_FOUND,
            UiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
        };
        let mut resp = (status, self.to_string()).into_response();
        secure_headers(&mut resp);
        resp
    }
}

/// The `/ui` routes, to merge into the host's router (they need no state).
pub fn router() -> Router {
    Router::new()
        .route("/ui", get(|| async { Redirect::permanent(PREFIX) }))
        .route("/ui/", any(serve))
        .route("/ui/{*path}", any(serve))
}

/// True when `path` (under [`PREFIX`], without it) is a page the browser renders.
pub fn is_page(path: &str) -> bool {
    let path = path.trim_end_matches('/');
    let mut parts = path.split('/');
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.collect();
    match first {
        "workloads" => rest.is_empty() || (rest.len() == 2 && rest.iter().all(|p| !p.is_empty())),
        _ => rest.is_empty() && PAGES.contains(&first),
    }
}

async fn serve(req: Request) -> Response {
    match answer(req.method(), req.uri().path()) {
        Ok(resp) => resp,
        Err(e) => e.into_response(),
    }
}

/// The answer to `method path`.
fn answer(method: &Method, path: &str) -> Result<Response, UiError> {
    if method != Method::GET && method != Method::HEAD {
        return Err(UiError::MethodNotAllowed(method.clone()));
    }
    let rest = path.strip_prefix(PREFIX).unwrap_or_default();
    if let Some(name) = rest.strip_prefix("assets/") {
        let (_, content_type, bytes) = ASSETS
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| UiError::AssetNotFound(name.to_string()))?;
        return Ok(respond(StatusCode::OK, content_type, Body::from(*bytes)));
    }
    let status = if is_page(rest) {
        StatusCode::OK
    } else {
        StatusCode::NOT_FOUND
    };
    Ok(respond(
        status,
        "text/html; charset=utf-8",
        Body::from(INDEX_HTML),
    ))
}

fn respond(status: StatusCode, content_type: &'static str, body: Body) -> Response {
    let mut resp = Response::new(body);
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // The assets change with the binary; revalidating each load keeps an upgraded host's UI
    // consistent with its API.
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    secure_headers(&mut resp);
    resp
}

fn secure_headers(resp: &mut Response) {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(path: &str) -> (StatusCode, Option<String>, String) {
        let resp = router()
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_string());
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, ct, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn pages_get_the_shell_and_unknown_paths_a_404_shell() {
        for page in [
            "/ui/",
            "/ui/workloads",
            "/ui/workloads/default/web-deployment",
            "/ui/scheduling",
            "/ui/login",
        ] {
            let (status, ct, body) = get(page).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            assert_eq!(ct.as_deref(), Some("text/html; charset=utf-8"));
            assert!(body.contains("assets/app.js"), "{page}");
        }
        for page in [
            "/ui/nope",
            "/ui/workloads/a",
            "/ui/workloads/a/b/c",
            "/ui/fleet/x",
        ] {
            let (status, _, body) = get(page).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
            assert!(body.contains("assets/app.js"), "{page}");
        }
    }

    #[tokio::test]
    async fn assets_are_served_with_their_type_and_a_missing_one_is_404() {
        let (status, ct, body) = get("/ui/assets/app.js").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(ct.as_deref(), Some("text/javascript; charset=utf-8"));
        assert!(body.contains("import"));
        let (status, _, body) = get("/ui/assets/missing.js").await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(body.contains("missing.js"));
    }

    #[tokio::test]
    async fn ui_redirects_to_its_prefix_and_refuses_writes() {
        let resp = router()
            .oneshot(Request::get("/ui").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::PERMANENT_REDIRECT);
        assert_eq!(resp.headers()[header::LOCATION], "/ui/");
        let resp = router()
            .oneshot(Request::post("/ui/").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    }

    /// The names after each `marker` in `text` up to `end`.
    fn refs<'a>(text: &'a str, marker: &str, end: char) -> Vec<&'a str> {
        text.split(marker)
            .skip(1)
            .filter_map(|rest| rest.split(end).next())
            .collect()
    }

    #[test]
    fn every_asset_the_shell_and_the_modules_load_is_served() {
        let served = |name: &str| ASSETS.iter().any(|(n, _, _)| *n == name);
        let shell = refs(INDEX_HTML, "/ui/assets/", '"');
        assert_eq!(shell, ["favicon.svg", "style.css", "app.js"]);
        let mut imports = Vec::new();
        for (name, content_type, bytes) in ASSETS {
            if content_type.starts_with("text/javascript") {
                let text = std::str::from_utf8(bytes).unwrap();
                imports.extend(refs(text, "from './", '\''));
                assert!(
                    !text.contains(".innerHTML"),
                    "{name} builds markup from strings"
                );
            }
        }
        assert!(imports.contains(&"views.js"), "{imports:?}");
        for name in shell.into_iter().chain(imports) {
            assert!(served(name), "{name} is loaded but not served");
        }
    }
}
