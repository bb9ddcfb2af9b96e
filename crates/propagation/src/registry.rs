//! The host's resources as discovery tells them: for each group/version/kind its plural,
//! scope, verbs and whether it has a status subresource. Refreshed periodically and on demand
//! (a CustomResourceDefinition added or removed), so kinds users add later are propagated
//! without a restart. Subscribers learn of each refresh through a revision counter.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject};
use kube::core::GroupVersionKind;
use kube::discovery::{Discovery, Scope, verbs};
use parking_lot::RwLock;
use tokio::sync::{Notify, watch};
use tracing::{debug, warn};

/// What the controllers need to know of one resource.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    pub resource: ApiResource,
    pub namespaced: bool,
    /// Supports list and watch (so it can be watched as templates).
    pub watchable: bool,
    /// Has a `status` subresource.
    pub has_status: bool,
    /// The group's preferred version of this kind: the one templates are watched in (the
    /// same objects are served in every version).
    pub preferred: bool,
}

/// The resource map, shared by the controllers.
pub struct Registry {
    resources: RwLock<HashMap<GroupVersionKind, ResourceInfo>>,
    revision: watch::Sender<u64>,
    refresh: Notify,
}

impl Registry {
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            resources: RwLock::new(HashMap::new()),
            revision: watch::Sender::new(0),
            refresh: Notify::new(),
        })
    }

    /// The resource of a kind, when the host serves it.
    pub fn get(&self, gvk: &GroupVersionKind) -> Option<ResourceInfo> {
        self.resources.read().get(gvk).cloned()
    }

    /// The resource of an `apiVersion` and `kind`.
    pub fn lookup(&self, api_version: &str, kind: &str) -> Option<ResourceInfo> {
        self.get(&gvk_of(api_version, kind))
    }

    /// Every resource.
    pub fn all(&self) -> Vec<(GroupVersionKind, ResourceInfo)> {
        self.resources
            .read()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Notified after every refresh that changed the map.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.revision.subscribe()
    }

    /// Waits until the host's discovery has been read once. A controller that starts (a new
    /// leader taking over) would otherwise find no kind served and back off for seconds.
    pub async fn loaded(&self) {
        let mut revision = self.revision.subscribe();
        let _ = revision.wait_for(|r| *r > 0).await;
    }

    /// Asks for a refresh now (a CRD changed).
    pub fn request_refresh(&self) {
        self.refresh.notify_one();
    }

    /// Reads discovery once; true when the map changed.
    pub async fn refresh_once(&self, host: &kube::Client) -> Result<bool, kube::Error> {
        let discovery = Discovery::new(host.clone()).run().await?;
        let mut next = HashMap::new();
        for group in discovery.groups() {
            let preferred: Vec<ApiResource> = group
                .recommended_resources()
                .into_iter()
                .map(|(r, _)| r)
                .collect();
            for version in group.versions() {
                for (resource, caps) in group.versioned_resources(version) {
                    let has_status = caps
                        .subresources
                        .iter()
                        .any(|(sub, _)| sub.plural == "status");
                    let info = ResourceInfo {
                        namespaced: caps.scope == Scope::Namespaced,
                        watchable: caps.supports_operation(verbs::LIST)
                            && caps.supports_operation(verbs::WATCH),
                        has_status,
                        preferred: preferred.iter().any(|p| p == &resource),
                        resource: resource.clone(),
                    };
                    next.insert(
                        GroupVersionKind::gvk(&resource.group, &resource.version, &resource.kind),
                        info,
                    );
                }
            }
        }
        let changed = {
            let mut current = self.resources.write();
            let same = current.len() == next.len()
                && next.iter().all(|(k, v)| {
                    current.get(k).is_some_and(|c| {
                        c.resource.plural == v.resource.plural && c.has_status == v.has_status
                    })
                });
            if !same {
                *current = next;
            }
            !same
        };
        if changed {
            self.revision.send_modify(|r| *r += 1);
        }
        Ok(changed)
    }

    /// Refreshes every `period` and on request, until the task is aborted.
    pub async fn run(self: Arc<Self>, host: kube::Client, period: Duration) {
        loop {
            match self.refresh_once(&host).await {
                Ok(changed) => debug!(changed, "host discovery refreshed"),
                Err(e) => warn!(error = %e, "host discovery failed"),
            }
            tokio::select! {
                _ = tokio::time::sleep(period) => {}
                _ = self.refresh.notified() => {}
            }
        }
    }
}

/// `apps/v1` + `Deployment` as a GroupVersionKind.
pub fn gvk_of(api_version: &str, kind: &str) -> GroupVersionKind {
    match api_version.split_once('/') {
        Some((group, version)) => GroupVersionKind::gvk(group, version, kind),
        None => GroupVersionKind::gvk("", api_version, kind),
    }
}

/// `apiVersion` of a GroupVersionKind.
pub fn api_version_of(gvk: &GroupVersionKind) -> String {
    if gvk.group.is_empty() {
        gvk.version.clone()
    } else {
        format!("{}/{}", gvk.group, gvk.version)
    }
}

/// A dynamic API for one resource, namespaced or not.
pub(crate) fn dynamic_api(
    client: &kube::Client,
    resource: &ApiResource,
    namespace: Option<&str>,
) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_split_into_group_and_version() {
        assert_eq!(
            gvk_of("apps/v1", "Deployment"),
            GroupVersionKind::gvk("apps", "v1", "Deployment")
        );
        assert_eq!(
            gvk_of("v1", "ConfigMap"),
            GroupVersionKind::gvk("", "v1", "ConfigMap")
        );
        assert_eq!(api_version_of(&gvk_of("v1", "Pod")), "v1");
        assert_eq!(api_version_of(&gvk_of("batch/v1", "Job")), "batch/v1");
    }
}
