//! The APIService controller: follows `apiregistration.k8s.io` APIService objects into the
//! [`Aggregator`]'s backends (a Service's ready EndpointSlices, or the URL annotation),
//! checks each backend's discovery document, and records its `Available` condition.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use flotilla_storage::{EventType, ListOptions, StorageError, StoredObject, WatchEvent};
use http::{Uri, header};
use serde_json::{Value, json};

use crate::aggregator::{
    APISERVICE_PREFIX, Aggregator, Backend, Endpoint, SERVICE_NAME_LABEL, URL_ANNOTATION,
    slice_urls,
};
use crate::informer::{Handler, Informer};
use crate::state::ApiServer;
use flotilla_generic_store::objects::{meta_str, now_rfc3339};

/// Storage prefix of EndpointSlices (`/<group>/<plural>/<namespace>/<name>`).
const ENDPOINT_SLICES: &str = "/discovery.k8s.io/endpointslices/";
const CHECK_INTERVAL: Duration = Duration::from_secs(5);
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);
/// The pause before listing APIServices again after a failed watch.
const RETRY_AFTER: Duration = Duration::from_millis(200);

/// The Service's replicas from its EndpointSlices, else the annotation's URL.
async fn resolve(server: &ApiServer, backend: &Backend) -> Vec<Uri> {
    let mut urls = Vec::new();
    if let Some(svc) = &backend.service {
        let prefix = format!("{ENDPOINT_SLICES}{}/", svc.namespace);
        match server.storage.list(&prefix, &ListOptions::default()).await {
            Ok(list) => {
                for item in &list.items {
                    let slice = item.value();
                    let label = slice
                        .pointer(&format!(
                            "/metadata/labels/{}",
                            SERVICE_NAME_LABEL.replace('/', "~1")
                        ))
                        .and_then(Value::as_str);
                    if label == Some(svc.name.as_str()) {
                        urls.extend(slice_urls(&slice, svc.port));
                    }
                }
            }
            Err(e) => {
                tracing::warn!(apiservice = %backend.name, error = %e, "listing EndpointSlices")
            }
        }
    }
    if urls.is_empty() {
        urls.extend(backend.fallback.clone());
    }
    urls.sort_by_key(|u| u.to_string());
    urls.dedup();
    urls
}

/// Starts the APIService controller and availability checks in the server's background
/// tasks.
pub async fn start(server: Arc<ApiServer>) {
    let Some(agg) = server.aggregator.clone() else {
        return;
    };
    // The first pass runs before the server serves, so Local APIServices are recorded and the
    // server is quiet once started; backends are checked in the background.
    let mut controller = ApiServiceController {
        server: server.clone(),
        agg: agg.clone(),
        specs: BTreeMap::new(),
    };
    let mut informer =
        Informer::new(server.storage.clone(), APISERVICE_PREFIX).with_backoff(RETRY_AFTER);
    if let Err(e) = informer.list(&mut controller).await {
        // The background loop lists again.
        tracing::warn!(error = %e, "listing APIServices at start");
    }
    let token = server.tasks.token();
    server.tasks.spawn("apiservice-controller", async move {
        informer.run(controller, token).await;
    });
    let s = server.clone();
    server.tasks.spawn("apiservice-availability", async move {
        loop {
            tokio::time::sleep(CHECK_INTERVAL).await;
            let backends: Vec<Arc<Backend>> = agg
                .backends
                .read()
                .values()
                .filter(|b| !b.local)
                .cloned()
                .collect();
            futures::future::join_all(backends.iter().map(|b| check_and_record(&s, b))).await;
        }
    });
}

/// Follows the APIService objects into the aggregator's backends.
struct ApiServiceController {
    server: Arc<ApiServer>,
    agg: Arc<Aggregator>,
    /// The spec and annotations each backend was built from, to tell spec changes from our
    /// own status updates.
    specs: BTreeMap<String, SpecKey>,
}

impl Handler for ApiServiceController {
    async fn listed(&mut self, items: Vec<Arc<StoredObject>>) {
        self.agg.backends.write().clear();
        self.specs.clear();
        for obj in &items {
            self.upsert(&obj.value()).await;
        }
    }

    async fn changed(&mut self, event: WatchEvent) {
        match event.event_type {
            EventType::Deleted => {
                let name = meta_str(&event.object.value(), "name")
                    .unwrap_or_default()
                    .to_string();
                self.agg.backends.write().retain(|_, b| b.name != name);
                self.specs.remove(&name);
                self.server.registry.touch();
            }
            _ => self.upsert(&event.object.value()).await,
        }
    }
}

impl ApiServiceController {
    async fn upsert(&mut self, obj: &Value) {
        let (server, agg) = (&self.server, &self.agg);
        let name = meta_str(obj, "name").unwrap_or_default().to_string();
        // Status-only changes (our own writes) keep the current backend and its connections.
        let existing = agg
            .backends
            .read()
            .values()
            .find(|b| b.name == name)
            .cloned();
        let previous_spec = self.specs.get(&name).cloned();
        if let Some(existing) = &existing {
            let same = existing.group
                == obj
                    .pointer("/spec/group")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                && existing.version
                    == obj
                        .pointer("/spec/version")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
            if same && previous_spec.as_ref() == Some(&spec_key(obj)) {
                return;
            }
        }
        agg.backends.write().retain(|_, b| b.name != name);
        match agg.build_backend(obj) {
            Ok(backend) => {
                // Only the annotations changed (replicas each writing their URL): the replicas,
                // their connections and the availability carry over, so requests do not see
                // a 503 until the next check.
                if let (Some(old), Some((old_spec, _))) = (&existing, &previous_spec) {
                    if !backend.local
                        && old.group == backend.group
                        && old.version == backend.version
                        && old_spec.as_ref() == obj.get("spec")
                    {
                        *backend.state.write() = old.state.read().clone();
                        *backend.endpoints.write() = old.endpoints.read().clone();
                    }
                }
                let backend = Arc::new(backend);
                self.specs.insert(name.clone(), spec_key(obj));
                agg.backends.write().insert(
                    (backend.group.clone(), backend.version.clone()),
                    backend.clone(),
                );
                if backend.local {
                    record_status(
                        server,
                        &name,
                        true,
                        "Local",
                        "Local APIServices are always available",
                    )
                    .await;
                } else {
                    let (s, backend) = (server.clone(), backend.clone());
                    let name = format!("apiservice-check {}", backend.name);
                    server.tasks.spawn(name, async move {
                        check_and_record(&s, &backend).await;
                    });
                }
            }
            Err(message) => {
                self.specs.remove(&name);
                record_status(server, &name, false, "ServiceNotResolvable", &message).await;
            }
        }
        server.registry.touch();
    }
}

type SpecKey = (Option<Value>, Option<Value>);

fn spec_key(obj: &Value) -> SpecKey {
    (
        obj.get("spec").cloned(),
        obj.pointer("/metadata/annotations").cloned(),
    )
}

/// Resolves the backend's replicas, fetches each one's discovery document for its
/// group/version, and records availability: available while any replica passes.
async fn check_and_record(server: &Arc<ApiServer>, backend: &Arc<Backend>) {
    let urls = resolve(server, backend).await;
    backend.set_endpoints(urls);
    let endpoints = backend.endpoints.read().clone();
    let results = futures::future::join_all(endpoints.iter().map(|e| check(backend, e))).await;
    let mut discovery = None;
    let mut failures = Vec::new();
    for (endpoint, result) in endpoints.iter().zip(results) {
        endpoint.healthy.store(result.is_ok(), Ordering::Relaxed);
        match result {
            Ok(doc) => {
                discovery.get_or_insert(doc);
            }
            Err(m) => failures.push(m),
        }
    }
    let (ok, reason, message) = if endpoints.is_empty() {
        let message = match &backend.service {
            Some(s) => format!(
                "service {}/{} has no ready endpoints (EndpointSlices labelled {SERVICE_NAME_LABEL}={}) and no {URL_ANNOTATION} annotation",
                s.namespace, s.name, s.name
            ),
            None => "no backend".to_string(),
        };
        (false, "MissingEndpoints".to_string(), message)
    } else if discovery.is_some() {
        (true, "Passed".to_string(), "all checks passed".to_string())
    } else {
        (
            false,
            "FailedDiscoveryCheck".to_string(),
            failures.join("; "),
        )
    };
    let changed = {
        let mut st = backend.state.write();
        let changed = st.available != ok || st.message != message;
        st.available = ok;
        st.reason = reason.clone();
        st.message = message.clone();
        if let Some(doc) = discovery {
            st.discovery = Some(doc);
        }
        changed
    };
    if changed {
        server.registry.touch();
    }
    record_status(server, &backend.name, ok, &reason, &message).await;
}

async fn check(backend: &Backend, endpoint: &Endpoint) -> Result<Value, String> {
    let upstream = &endpoint.upstream;
    let base = &upstream.base;
    let uri = upstream.uri(
        &format!("/apis/{}/{}", backend.group, backend.version),
        None,
    )?;
    let req = http::Request::get(uri)
        .header("x-remote-user", "system:kube-aggregator")
        .header("x-remote-group", "system:authenticated")
        .header(header::ACCEPT, "application/json")
        .body(Body::empty())
        .map_err(|e| e.to_string())?;
    let resp = tokio::time::timeout(CHECK_TIMEOUT, upstream.send(req))
        .await
        .map_err(|_| format!("failing or missing response from {base}: timed out"))?
        .map_err(|e| format!("failing or missing response from {base}: {e}"))?;
    let status = resp.status();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .map_err(|e| format!("reading the discovery response from {base}: {e}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!(
            "failing or missing response from {base}: bad status from {}: {status}",
            backend.name
        ));
    }
    serde_json::from_slice(&body)
        .map_err(|e| format!("invalid discovery document from {base}: {e}"))
}

async fn record_status(server: &Arc<ApiServer>, name: &str, ok: bool, reason: &str, message: &str) {
    let key = format!("{APISERVICE_PREFIX}{name}");
    for _ in 0..3 {
        let Ok(Some(current)) = server.storage.get(&key).await else {
            return;
        };
        let conditions = current
            .value()
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let status_word = if ok { "True" } else { "False" };
        let previous = conditions
            .iter()
            .find(|c| c.get("type").and_then(Value::as_str) == Some("Available"));
        if previous.is_some_and(|p| {
            p.get("status").and_then(Value::as_str) == Some(status_word)
                && p.get("reason").and_then(Value::as_str) == Some(reason)
                && p.get("message").and_then(Value::as_str) == Some(message)
        }) {
            return;
        }
        let transition = match previous {
            Some(p) if p.get("status").and_then(Value::as_str) == Some(status_word) => p
                .get("lastTransitionTime")
                .cloned()
                .unwrap_or_else(|| json!(now_rfc3339())),
            _ => json!(now_rfc3339()),
        };
        let mut new = (*current.value()).clone();
        new["status"] = json!({"conditions": [{
            "type": "Available", "status": status_word, "lastTransitionTime": transition, "reason": reason, "message": message,
        }]});
        match server
            .storage
            .update(&key, new, Some(current.revision))
            .await
        {
            Ok(_) => return,
            Err(StorageError::Conflict { .. }) => continue,
            Err(e) => {
                tracing::warn!(apiservice = %name, error = %e, "recording APIService status");
                return;
            }
        }
    }
}
