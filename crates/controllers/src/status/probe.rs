//! What the status controller asks a member: health (`/readyz`, falling back to `/healthz`
//! on servers without it), version, and discovery (every group/version and its resources,
//! subresources left out as Karmada does).

use flotilla_api::cluster::{ApiEnablement, ApiResource};
use futures::StreamExt;
use http::StatusCode;
use kube::client::Body;
use kube::core::discovery::v2::{ACCEPT_AGGREGATED_DISCOVERY_V2, APIGroupDiscovery};

use crate::readiness::Observed;

/// How many discovery documents of one member are fetched at once: one. Each document read
/// at once needs its own connection, and the client keeps every connection it opened idle
/// in its pool afterwards; at thousands of members, eight at once meant tens of thousands of
/// sockets (and their TLS buffers) on both sides. The status pool already bounds how many
/// members are synced together.
const DISCOVERY_CONCURRENCY: usize = 1;

async fn get_status(client: &kube::Client, path: &str) -> Result<StatusCode, kube::Error> {
    let request = http::Request::get(path)
        .body(Body::empty())
        .map_err(kube::Error::HttpError)?;
    // Only the status matters; the body (a few bytes) is dropped with the response.
    Ok(client.send(request).await?.status())
}

fn classify(status: StatusCode) -> (Observed, String) {
    if status == StatusCode::OK {
        (Observed::Healthy, String::new())
    } else {
        (
            Observed::Unhealthy,
            format!("health endpoint answered {status}"),
        )
    }
}

/// One health probe: what it saw and, when not healthy, why (for logs).
pub(crate) async fn health(client: &kube::Client) -> (Observed, String) {
    match get_status(client, "/readyz").await {
        Ok(StatusCode::NOT_FOUND) => match get_status(client, "/healthz").await {
            Ok(status) => classify(status),
            Err(e) => (Observed::Unreachable, crate::error_chain(&e)),
        },
        Ok(status) => classify(status),
        Err(e) => (Observed::Unreachable, crate::error_chain(&e)),
    }
}

/// The member's `gitVersion`.
pub(crate) async fn version(client: &kube::Client) -> Result<String, kube::Error> {
    Ok(client.apiserver_version().await?.git_version)
}

/// Every group/version the member serves with its resources, sorted. A group/version whose
/// document cannot be read (or, aggregated, is marked stale) is left out (`complete` is then
/// false); only failing to read the group lists is an error.
///
/// Aggregated discovery first: two documents (`/api`, `/apis`) instead of one per
/// group/version, a few dozen on a real cluster. At thousands of members read every minute
/// that difference is most of the requests the controller-manager sends. Servers without it
/// (before Kubernetes 1.26) answer the legacy lists, read one document at a time.
pub(crate) async fn api_enablements(
    client: &kube::Client,
) -> Result<(Vec<ApiEnablement>, bool), kube::Error> {
    if let Some(core) = aggregated(client, "/api").await? {
        if let Some(groups) = aggregated(client, "/apis").await? {
            return Ok(from_aggregated(core.into_iter().chain(groups)));
        }
    }
    legacy_api_enablements(client).await
}

/// The part of an aggregated discovery document read here; `kind` tells it from the legacy
/// list a server without aggregated discovery answers with.
#[derive(serde::Deserialize)]
struct AggregatedList {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    items: Vec<APIGroupDiscovery>,
}

/// The aggregated discovery document at `path`, or `None` when the member answers with the
/// legacy one.
async fn aggregated(
    client: &kube::Client,
    path: &str,
) -> Result<Option<Vec<APIGroupDiscovery>>, kube::Error> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, ACCEPT_AGGREGATED_DISCOVERY_V2)
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    let list: AggregatedList = client.request(request).await?;
    Ok((list.kind == "APIGroupDiscoveryList").then_some(list.items))
}

fn from_aggregated(groups: impl Iterator<Item = APIGroupDiscovery>) -> (Vec<ApiEnablement>, bool) {
    let mut complete = true;
    let mut out = Vec::new();
    for group in groups {
        let name = group.metadata.and_then(|m| m.name).unwrap_or_default();
        for version in group.versions {
            let Some(v) = version.version else { continue };
            if version.freshness.as_deref() == Some("Stale") {
                // Served by an extension API server that did not answer: as unreadable as a
                // legacy document that failed.
                complete = false;
                continue;
            }
            let mut resources: Vec<ApiResource> = version
                .resources
                .into_iter()
                .filter_map(|r| {
                    Some(ApiResource {
                        name: r.resource?,
                        kind: r.response_kind.and_then(|k| k.kind).unwrap_or_default(),
                    })
                })
                .collect();
            resources.sort_by(|a, b| a.name.cmp(&b.name));
            out.push(ApiEnablement {
                group_version: if name.is_empty() {
                    v
                } else {
                    format!("{name}/{v}")
                },
                resources,
            });
        }
    }
    out.sort_by(|a, b| a.group_version.cmp(&b.group_version));
    (out, complete)
}

async fn legacy_api_enablements(
    client: &kube::Client,
) -> Result<(Vec<ApiEnablement>, bool), kube::Error> {
    let core = client.list_core_api_versions().await?;
    let groups = client.list_api_groups().await?;
    let mut wanted: Vec<(String, bool)> = core.versions.into_iter().map(|v| (v, true)).collect();
    for group in groups.groups {
        for v in group.versions {
            wanted.push((v.group_version, false));
        }
    }
    let total = wanted.len();
    let mut out: Vec<ApiEnablement> = futures::stream::iter(wanted)
        .map(|(gv, core)| async move {
            let list = if core {
                client.list_core_api_resources(&gv).await
            } else {
                client.list_api_group_resources(&gv).await
            };
            match list {
                Ok(list) => Some(list),
                Err(e) => {
                    tracing::debug!(group_version = %gv, error = %e, "discovery document unreadable");
                    None
                }
            }
        })
        .buffer_unordered(DISCOVERY_CONCURRENCY)
        .filter_map(|list| async move { list })
        .map(|list| {
            let mut resources: Vec<ApiResource> = list
                .resources
                .into_iter()
                .filter(|r| !r.name.contains('/'))
                .map(|r| ApiResource {
                    name: r.name,
                    kind: r.kind,
                })
                .collect();
            resources.sort_by(|a, b| a.name.cmp(&b.name));
            ApiEnablement {
                group_version: list.group_version,
                resources,
            }
        })
        .collect()
        .await;
    out.sort_by(|a, b| a.group_version.cmp(&b.group_version));
    let complete = out.len() == total;
    Ok((out, complete))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::routing::get;
    use serde_json::json;

    /// Serves `router` over plain HTTP on a free port; a client for it.
    async fn serve(router: Router) -> kube::Client {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
        kube::Client::try_from(config).unwrap()
    }

    #[tokio::test]
    async fn healthz_is_the_fallback_when_readyz_is_missing() {
        let client = serve(Router::new().route("/healthz", get(|| async { "ok" }))).await;
        assert_eq!(health(&client).await.0, Observed::Healthy);
        let client = serve(Router::new().route(
            "/readyz",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "[-]etcd failed") }),
        ))
        .await;
        assert_eq!(health(&client).await.0, Observed::Unhealthy);
        // Neither endpoint: answered, but not healthy.
        let client = serve(Router::new()).await;
        assert_eq!(health(&client).await.0, Observed::Unhealthy);
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let config = kube::Config::new(format!("http://{addr}").parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let (observed, detail) = health(&client).await;
        assert_eq!(observed, Observed::Unreachable);
        assert!(!detail.is_empty());
    }

    #[tokio::test]
    async fn discovery_lists_every_group_version_without_subresources() {
        let router = Router::new()
            .route(
                "/api",
                get(|| async { axum::Json(json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})) }),
            )
            .route(
                "/api/v1",
                get(|| async {
                    axum::Json(json!({"kind": "APIResourceList", "groupVersion": "v1", "resources": [
                        {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                        {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                        {"name": "nodes", "singularName": "node", "namespaced": false, "kind": "Node", "verbs": ["get"]},
                    ]}))
                }),
            )
            .route(
                "/apis",
                get(|| async {
                    axum::Json(json!({"kind": "APIGroupList", "groups": [
                        {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}},
                        {"name": "broken.io", "versions": [{"groupVersion": "broken.io/v1", "version": "v1"}]},
                    ]}))
                }),
            )
            .route(
                "/apis/apps/v1",
                get(|| async {
                    axum::Json(json!({"kind": "APIResourceList", "groupVersion": "apps/v1", "resources": [
                        {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": ["get"]},
                        {"name": "deployments/scale", "singularName": "", "namespaced": true, "kind": "Scale", "verbs": ["get"]},
                    ]}))
                }),
            );
        let client = serve(router).await;
        let (enablements, complete) = api_enablements(&client).await.unwrap();
        assert!(!complete, "broken.io/v1 has no document");
        assert_eq!(
            enablements,
            [
                enablement("apps/v1", &[("deployments", "Deployment")]),
                enablement("v1", &[("nodes", "Node"), ("pods", "Pod")]),
            ]
        );
    }

    /// An expected enablement: the group/version and its (resource, kind) pairs.
    fn enablement(group_version: &str, resources: &[(&str, &str)]) -> ApiEnablement {
        ApiEnablement {
            group_version: group_version.into(),
            resources: resources
                .iter()
                .map(|(name, kind)| ApiResource {
                    name: (*name).into(),
                    kind: (*kind).into(),
                })
                .collect(),
        }
    }

    #[tokio::test]
    async fn aggregated_discovery_reads_what_the_documents_say() {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = flotilla_membersim::MemberOptions::new("m", dir.path());
        opts.in_memory = true;
        let member = flotilla_membersim::start(opts).await.unwrap();
        let client = flotilla_testenv::client_for(&member.kubeconfig, None)
            .await
            .unwrap();
        assert!(aggregated(&client, "/apis").await.unwrap().is_some());
        let read = api_enablements(&client).await.unwrap();
        let legacy = legacy_api_enablements(&client).await.unwrap();
        assert!(read.1);
        assert!(read.0.iter().any(|e| e.group_version == "apps/v1"));
        assert_eq!(read, legacy);
        member.stop().await;
    }

    #[tokio::test]
    async fn a_stale_aggregated_version_is_left_out_and_incomplete() {
        let list = |items: serde_json::Value| {
            json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2",
                   "metadata": {}, "items": items})
        };
        let core = list(
            json!([{"metadata": {"name": ""}, "versions": [{"version": "v1",
            "freshness": "Current", "resources": [
                {"resource": "pods", "responseKind": {"group": "", "version": "v1", "kind": "Pod"},
                 "scope": "Namespaced", "verbs": ["get"],
                 "subresources": [{"subresource": "status", "verbs": ["get"]}]}]}]}]),
        );
        let groups = list(json!([
            {"metadata": {"name": "apps"}, "versions": [{"version": "v1", "freshness": "Current",
                "resources": [{"resource": "deployments", "responseKind": {"group": "apps",
                    "version": "v1", "kind": "Deployment"}, "scope": "Namespaced", "verbs": ["get"]}]}]},
            {"metadata": {"name": "metrics.k8s.io"}, "versions": [{"version": "v1beta1",
                "freshness": "Stale", "resources": []}]},
        ]));
        let router = Router::new()
            .route("/api", get(move || async move { axum::Json(core) }))
            .route("/apis", get(move || async move { axum::Json(groups) }));
        let client = serve(router).await;
        let (enablements, complete) = api_enablements(&client).await.unwrap();
        assert!(!complete, "metrics.k8s.io/v1beta1 is stale");
        assert_eq!(
            enablements,
            [
                enablement("apps/v1", &[("deployments", "Deployment")]),
                enablement("v1", &[("pods", "Pod")]),
            ]
        );
    }

    #[test]
    fn only_200_is_healthy() {
        assert_eq!(classify(StatusCode::OK).0, Observed::Healthy);
        assert_eq!(
            classify(StatusCode::INTERNAL_SERVER_ERROR).0,
            Observed::Unhealthy
        );
        assert_eq!(classify(StatusCode::UNAUTHORIZED).0, Observed::Unhealthy);
    }
}
