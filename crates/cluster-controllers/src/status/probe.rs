//! What the status controller asks a member: health (`/readyz`, falling back to `/healthz`
//! on servers without it), version, and discovery (every group/version and its resources,
//! subresources left out as Karmada does).

use flotilla_karmada_api::cluster::{ApiEnablement, ApiResource};
use flotilla_membership::{MemberReader, MembershipError};
use futures::StreamExt;
use http::StatusCode;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList, APIVersions};
use kube::core::discovery::v2::{ACCEPT_AGGREGATED_DISCOVERY_V2, APIGroupDiscovery};

use crate::readiness::Observed;

/// How many discovery documents of one member are fetched at once: one. A member's reader
/// keeps one connection, and each document read beside another opens one more; at thousands
/// of members, eight at once meant tens of thousands of sockets (and their TLS buffers) on
/// both sides. The status pool already bounds how many members are synced together.
const DISCOVERY_CONCURRENCY: usize = 1;

/// What the documents read here are asked for as.
const JSON: &str = "application/json";

async fn get_status(member: &MemberReader, path: &str) -> Result<StatusCode, MembershipError> {
    // Only the status matters; the body (a few bytes) is dropped with the response.
    Ok(member.get(path, "*/*").await?.status)
}

fn classify(status: StatusCode) -> (Observed, String) {
    if status == StatusCode::OK {
        (Observed::Healthy, String::new())
    } else if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        // Karmada counts a refused client as an unreachable cluster; the condition also says
        // why, which Karmada's only logs.
        let why = format!("the member refused the cluster's credentials ({status})");
        (
            Observed::Refused {
                reason: crate::readiness::REASON_NOT_REACHABLE,
                message: format!("{}: {why}", crate::readiness::MESSAGE_NOT_REACHABLE),
            },
            why,
        )
    } else {
        (
            Observed::Unhealthy,
            format!("health endpoint answered {status}"),
        )
    }
}

/// One health probe: what it saw and, when not healthy, why (for logs).
pub(crate) async fn health(member: &MemberReader) -> (Observed, String) {
    match get_status(member, "/readyz").await {
        Ok(StatusCode::NOT_FOUND) => match get_status(member, "/healthz").await {
            Ok(status) => classify(status),
            Err(e) => (Observed::Unreachable, crate::error_chain(&e)),
        },
        Ok(status) => classify(status),
        Err(e) => (Observed::Unreachable, crate::error_chain(&e)),
    }
}

/// The member's `gitVersion`.
pub(crate) async fn version(member: &MemberReader) -> Result<String, MembershipError> {
    let info: k8s_openapi::apimachinery::pkg::version::Info =
        member.get_json("/version", JSON).await?;
    Ok(info.git_version)
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
    member: &MemberReader,
) -> Result<(Vec<ApiEnablement>, bool), MembershipError> {
    if let Some(core) = aggregated(member, "/api").await? {
        if let Some(groups) = aggregated(member, "/apis").await? {
            return Ok(from_aggregated(core.into_iter().chain(groups)));
        }
    }
    legacy_api_enablements(member).await
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
    member: &MemberReader,
    path: &str,
) -> Result<Option<Vec<APIGroupDiscovery>>, MembershipError> {
    let list: AggregatedList = member
        .get_json(path, ACCEPT_AGGREGATED_DISCOVERY_V2)
        .await?;
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
    member: &MemberReader,
) -> Result<(Vec<ApiEnablement>, bool), MembershipError> {
    let core: APIVersions = member.get_json("/api", JSON).await?;
    let groups: APIGroupList = member.get_json("/apis", JSON).await?;
    let mut wanted: Vec<(String, bool)> = core.versions.into_iter().map(|v| (v, true)).collect();
    for group in groups.groups {
        for v in group.versions {
            wanted.push((v.group_version, false));
        }
    }
    let total = wanted.len();
    let mut out: Vec<ApiEnablement> = futures::stream::iter(wanted)
        .map(|(gv, core)| async move {
            let path = if core {
                format!("/api/{gv}")
            } else {
                format!("/apis/{gv}")
            };
            let list = member.get_json::<APIResourceList>(&path, JSON).await;
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

    /// A reader of the member at `endpoint` with `credentials`.
    async fn reader(
        endpoint: &str,
        credentials: &flotilla_membership::MemberCredentials,
    ) -> MemberReader {
        let target = flotilla_membership::MemberTarget {
            endpoint: Some(endpoint.to_string()),
            secret_ref: None,
            insecure: false,
            proxy_url: None,
        };
        target
            .reader("m", credentials, std::time::Duration::from_secs(5))
            .await
            .unwrap()
    }

    /// A member served over TLS (members are reached only over TLS) and a reader of it.
    struct Served {
        reader: MemberReader,
        _member: flotilla_testenv::TlsServer,
    }

    impl std::ops::Deref for Served {
        type Target = MemberReader;
        fn deref(&self) -> &MemberReader {
            &self.reader
        }
    }

    /// Serves `router` on a free port; a reader of it.
    async fn serve(router: Router) -> Served {
        let member = flotilla_testenv::serve_tls(router).await.unwrap();
        let credentials = flotilla_membership::MemberCredentials::token("t", &member.ca_pem);
        Served {
            reader: reader(&member.url, &credentials).await,
            _member: member,
        }
    }

    #[tokio::test]
    async fn refused_credentials_say_so() {
        for status in [StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN] {
            let member =
                serve(Router::new().route("/readyz", get(move || async move { (status, "no") })))
                    .await;
            match health(&member).await.0 {
                Observed::Refused { reason, message } => {
                    assert_eq!(reason, "ClusterNotReachable");
                    assert!(
                        message.starts_with("cluster is not reachable: ")
                            && message.contains("refused the cluster's credentials")
                            && message.contains(status.as_str()),
                        "{message}"
                    );
                }
                other => panic!("{status}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn healthz_is_the_fallback_when_readyz_is_missing() {
        let member = serve(Router::new().route("/healthz", get(|| async { "ok" }))).await;
        assert_eq!(health(&member).await.0, Observed::Healthy);
        let member = serve(Router::new().route(
            "/readyz",
            get(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "[-]etcd failed") }),
        ))
        .await;
        assert_eq!(health(&member).await.0, Observed::Unhealthy);
        // Neither endpoint: answered, but not healthy.
        let member = serve(Router::new()).await;
        assert_eq!(health(&member).await.0, Observed::Unhealthy);
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let credentials = flotilla_membership::MemberCredentials::token("t", "");
        let member = reader(&format!("https://{addr}"), &credentials).await;
        let (observed, detail) = health(&member).await;
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
        let member = serve(router).await;
        let (enablements, complete) = api_enablements(&member).await.unwrap();
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
        let sim = flotilla_membersim::start(opts).await.unwrap();
        // Over TLS with the member's own credentials, as the status controller reads it.
        let context = flotilla_pki::Kubeconfig::load(&sim.kubeconfig)
            .unwrap()
            .context(None)
            .unwrap();
        let credentials = flotilla_membership::MemberCredentials::from_context(&context);
        let member = reader(&context.server, &credentials).await;
        assert!(aggregated(&member, "/apis").await.unwrap().is_some());
        let read = api_enablements(&member).await.unwrap();
        let legacy = legacy_api_enablements(&member).await.unwrap();
        assert!(read.1);
        assert!(read.0.iter().any(|e| e.group_version == "apps/v1"));
        assert_eq!(read, legacy);
        sim.stop().await;
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
        let member = serve(router).await;
        let (enablements, complete) = api_enablements(&member).await.unwrap();
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
        // Refused credentials: not reached at all, as Karmada counts them.
        assert!(matches!(
            classify(StatusCode::UNAUTHORIZED).0,
            Observed::Refused { .. }
        ));
    }
}
