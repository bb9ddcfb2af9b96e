//! The registry of served resources: each resource's definition ([`ResourceDef`]: kind,
//! scope, schema, subresources) and the [`RestStorage`] serving its verbs (the
//! [`GenericStore`] unless another implementation was registered for it), plus the custom
//! subresources ([`SubresourceHandler`]s). Built-in kinds are registered at start; CRDs add
//! and remove entries at run time, so lookups go through a lock-protected index and every
//! change bumps a generation that discovery and OpenAPI (which list what is registered here,
//! once per resource) use as their cache hash.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flotilla_apimachinery::ResourceDef;
use parking_lot::RwLock;

use crate::subresource::SubresourceHandler;
use flotilla_generic_store::rest::{GenericStore, RestStorage};

/// A served group with its versions in preference order.
#[derive(Debug, Clone)]
pub struct GroupInfo {
    pub name: String,
    pub versions: Vec<String>,
}

#[derive(Default)]
pub struct Registry {
    inner: RwLock<Inner>,
    generation: AtomicU64,
    /// The storage of resources not served by the generic store, by (group, plural): kept
    /// apart from the definitions so a CRD re-registering its versions keeps it.
    storage: RwLock<HashMap<(String, String), Arc<dyn RestStorage>>>,
    /// Custom subresources by (group, plural, subresource).
    subresources: RwLock<HashMap<SubresourceKey, Arc<dyn SubresourceHandler>>>,
}

/// (group, plural, subresource)
type SubresourceKey = (String, String, String);

#[derive(Default)]
struct Inner {
    /// (group, version, plural) -> definition
    resources: BTreeMap<(String, String, String), Arc<ResourceDef>>,
    /// group order as registered (core first by convention)
    group_order: Vec<String>,
}

impl flotilla_generic_store::admission::ServedVersions for Registry {
    fn served_versions(&self, group: &str, resource: &str) -> Vec<String> {
        self.all()
            .into_iter()
            .filter(|d| d.group == group && d.plural == resource)
            .map(|d| d.version.clone())
            .collect()
    }
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a resource.
    pub fn register(&self, def: ResourceDef) {
        let mut inner = self.inner.write();
        if !inner.group_order.contains(&def.group) {
            inner.group_order.push(def.group.clone());
        }
        inner.resources.insert(
            (def.group.clone(), def.version.clone(), def.plural.clone()),
            Arc::new(def),
        );
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Removes every version of `group`/`plural`.
    pub fn unregister(&self, group: &str, plural: &str) {
        let mut inner = self.inner.write();
        inner
            .resources
            .retain(|(g, _, p), _| !(g == group && p == plural));
        let still_served = inner.resources.keys().any(|(g, _, _)| g == group);
        if !still_served {
            inner.group_order.retain(|g| g != group);
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Removes one version of `group`/`plural`.
    pub fn unregister_version(&self, group: &str, version: &str, plural: &str) {
        let mut inner = self.inner.write();
        inner
            .resources
            .remove(&(group.to_string(), version.to_string(), plural.to_string()));
        let still_served = inner.resources.keys().any(|(g, _, _)| g == group);
        if !still_served {
            inner.group_order.retain(|g| g != group);
        }
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.inner
            .read()
            .resources
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// The definition and the storage serving `group`/`version`/`plural`.
    pub fn resolve(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Option<(Arc<ResourceDef>, Arc<dyn RestStorage>)> {
        let def = self.get(group, version, plural)?;
        Some((def, self.storage_of(group, plural)))
    }

    /// The storage serving every version of `group`/`plural`.
    pub fn storage_of(&self, group: &str, plural: &str) -> Arc<dyn RestStorage> {
        self.storage
            .read()
            .get(&(group.to_string(), plural.to_string()))
            .cloned()
            .unwrap_or_else(|| Arc::new(GenericStore))
    }

    /// Serves `group`/`plural` with `storage` instead of the generic store (its provided
    /// methods keep the verbs it does not override on the store).
    pub fn set_storage(&self, group: &str, plural: &str, storage: Arc<dyn RestStorage>) {
        self.storage
            .write()
            .insert((group.to_string(), plural.to_string()), storage);
    }

    /// Serves `group`/`plural`/`{name}`/`subresource` with `handler`.
    pub fn add_subresource(
        &self,
        group: &str,
        plural: &str,
        subresource: &str,
        handler: Arc<dyn SubresourceHandler>,
    ) {
        self.subresources.write().insert(
            (
                group.to_string(),
                plural.to_string(),
                subresource.to_string(),
            ),
            handler,
        );
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// The custom handler of a subresource, if one is registered.
    pub fn subresource(
        &self,
        group: &str,
        plural: &str,
        subresource: &str,
    ) -> Option<Arc<dyn SubresourceHandler>> {
        self.subresources
            .read()
            .get(&(
                group.to_string(),
                plural.to_string(),
                subresource.to_string(),
            ))
            .cloned()
    }

    /// Any version of a group/resource (all share one storage location).
    pub fn any_version(&self, group: &str, plural: &str) -> Option<Arc<ResourceDef>> {
        self.inner
            .read()
            .resources
            .iter()
            .find(|((g, _, p), _)| g == group && p == plural)
            .map(|(_, d)| d.clone())
    }

    /// Every served resource in registration group order, then version, then plural.
    pub fn all(&self) -> Vec<Arc<ResourceDef>> {
        let inner = self.inner.read();
        let mut out = Vec::with_capacity(inner.resources.len());
        for group in &inner.group_order {
            for ((g, _, _), def) in inner.resources.iter() {
                if g == group {
                    out.push(def.clone());
                }
            }
        }
        out
    }

    pub fn resources_in(&self, group: &str, version: &str) -> Vec<Arc<ResourceDef>> {
        self.inner
            .read()
            .resources
            .iter()
            .filter(|((g, v, _), _)| g == group && v == version)
            .map(|(_, d)| d.clone())
            .collect()
    }

    /// Served groups (core group `""` included) with versions, preferred version first
    /// (Kubernetes version priority: GA > beta > alpha, higher numbers first).
    pub fn groups(&self) -> Vec<GroupInfo> {
        let inner = self.inner.read();
        inner
            .group_order
            .iter()
            .map(|group| {
                let mut versions: Vec<String> = inner
                    .resources
                    .keys()
                    .filter(|(g, _, _)| g == group)
                    .map(|(_, v, _)| v.clone())
                    .collect();
                versions.dedup();
                versions.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
                GroupInfo {
                    name: group.clone(),
                    versions,
                }
            })
            .collect()
    }

    /// Marks served APIs as changed for discovery and OpenAPI caches (e.g. an aggregated
    /// API became available).
    pub fn touch(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Changes whenever the set of served resources changes.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }
}

/// Sort key for Kubernetes versions: v1 > v1beta2 > v1beta1 > v1alpha1; non-matching last.
pub fn version_priority(v: &str) -> (u8, u32, u32) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0);
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let Ok(major) = digits.parse::<u32>() else {
        return (0, 0, 0);
    };
    let tail = &rest[digits.len()..];
    if tail.is_empty() {
        return (3, major, 0);
    }
    for (stage, rank) in [("beta", 2u8), ("alpha", 1u8)] {
        if let Some(n) = tail.strip_prefix(stage) {
            if let Ok(minor) = n.parse::<u32>() {
                return (rank, major, minor);
            }
        }
    }
    (0, 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_order() {
        let mut v = vec!["v1alpha1", "v2", "v1beta1", "v1", "v1beta2", "foo"];
        v.sort_by_key(|x| std::cmp::Reverse(version_priority(x)));
        assert_eq!(v, vec!["v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]);
    }

    #[test]
    fn register_and_unregister() {
        let r = Registry::new();
        r.register(ResourceDef::new("", "v1", "ConfigMap", "configmaps", true));
        r.register(ResourceDef::new(
            "example.com",
            "v1",
            "Widget",
            "widgets",
            true,
        ));
        r.register(ResourceDef::new(
            "example.com",
            "v1beta1",
            "Widget",
            "widgets",
            true,
        ));
        assert_eq!(r.groups()[1].versions, vec!["v1", "v1beta1"]);
        assert!(r.get("example.com", "v1beta1", "widgets").is_some());
        let before = r.generation();
        r.unregister("example.com", "widgets");
        assert!(r.any_version("example.com", "widgets").is_none());
        assert_eq!(r.groups().len(), 1);
        assert!(r.generation() > before);
    }
}
