//! Content negotiation and response building: JSON bodies, `Status` errors, and the choice
//! between a plain object and a `meta.k8s.io/v1 Table` from the `Accept` header.

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use flotilla_apimachinery::ApiError;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

pub const JSON: &str = "application/json";

/// How a read should be rendered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    /// `application/json;as=Table;v=v1;g=meta.k8s.io` (or v1beta1)
    Table,
}

/// Picks the representation from `Accept`: a Table when the client lists one (kubectl get),
/// otherwise JSON. A client that only accepts protobuf gets 406.
pub fn negotiate(headers: &HeaderMap) -> Result<Format, ApiError> {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return Ok(Format::Json);
    };
    let mut json_ok = false;
    for part in accept.split(',') {
        let part = part.trim();
        let mut params = part.split(';').map(str::trim);
        let media = params.next().unwrap_or_default();
        let params: Vec<&str> = params.collect();
        let is_table = params.iter().any(|p| p.replace(' ', "") == "as=Table");
        if media == JSON || media == "application/*" || media == "*/*" || media.is_empty() {
            if is_table {
                return Ok(Format::Table);
            }
            json_ok = true;
        } else if media == "application/yaml" {
            json_ok = true;
        }
    }
    if json_ok {
        Ok(Format::Json)
    } else {
        Err(ApiError::not_acceptable(format!(
            "only the following media types are accepted: {JSON}, application/yaml"
        )))
    }
}

pub fn json_bytes(status: StatusCode, body: Bytes) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    resp
}

/// A JSON List: `head` (up to the items' opening bracket), then `items` as they are, written
/// out piece by piece (see [`crate::list_body`]).
pub fn json_list(head: Bytes, items: Vec<Bytes>) -> Response {
    let mut resp = Response::new(Body::new(crate::list_body::JsonList::new(head, items)));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(JSON));
    resp
}

pub fn json_value(status: StatusCode, body: &Value) -> Response {
    json_bytes(
        status,
        Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
    )
}

pub fn json_with_type(status: StatusCode, body: &Value, content_type: &'static str) -> Response {
    bytes_with_type(
        status,
        Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
        content_type,
    )
}

/// JSON already serialised, with a content type of its own (discovery's, say).
pub fn bytes_with_type(status: StatusCode, body: Bytes, content_type: &'static str) -> Response {
    let mut resp = json_bytes(status, body);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// The `Status` for an error, with its HTTP code.
pub fn error_response(err: &ApiError) -> Response {
    let code = StatusCode::from_u16(err.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = json_value(code, &err.to_status());
    if let Some(secs) = err.retry_after_seconds {
        if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
    }
    resp
}

/// Adds `Warning: 299 - "<text>"` headers (kubectl prints them as `Warning: <text>`).
pub fn add_warnings(resp: &mut Response, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn negotiates_tables_and_json() {
        assert_eq!(negotiate(&HeaderMap::new()).unwrap(), Format::Json);
        assert_eq!(
            negotiate(&accept("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")).unwrap(),
            Format::Table
        );
        assert_eq!(
            negotiate(&accept("application/json, */*")).unwrap(),
            Format::Json
        );
        assert_eq!(
            negotiate(&accept("application/vnd.kubernetes.protobuf"))
                .unwrap_err()
                .code,
            406
        );
    }
}
