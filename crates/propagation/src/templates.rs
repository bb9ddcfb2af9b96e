//! The template cache: one reflector per propagated kind, filled by the detector (which
//! decides what to watch) and read by the binding, override and dependency controllers, so
//! none of them lists templates from the host; and the template as an event's subject.

use std::sync::Arc;

use dashmap::DashMap;
use futures::FutureExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::DynamicObject;
use kube::core::GroupVersionKind;
use kube::runtime::reflector::{ObjectRef, Store};
use serde_json::Value;

use crate::registry::ResourceInfo;
use crate::skipped::SkippedNamespaces;
use flotilla_tasks::AbortOnDrop;

/// Whether the detector caches `obj`: not in a skipped namespace, where nothing is a
/// template (and each member has a credentials Secret in `karmada-cluster`).
pub(crate) fn cached(skipped: &SkippedNamespaces, obj: &DynamicObject) -> bool {
    !obj.metadata
        .namespace
        .as_deref()
        .is_some_and(|ns| skipped.skipped(ns))
}

/// The detector's watch of one kind of template: its resource and cache.
pub(crate) struct TemplateWatch {
    pub(crate) info: ResourceInfo,
    pub(crate) store: Store<DynamicObject>,
    pub(crate) _task: AbortOnDrop,
}

/// The template watches by kind (written by the detector, read by the binding, override and
/// dependency controllers), and the namespaces they leave out.
pub(crate) struct TemplateCache {
    watches: DashMap<GroupVersionKind, TemplateWatch>,
    pub(crate) skipped: SkippedNamespaces,
}

impl TemplateCache {
    pub(crate) fn new(skipped: SkippedNamespaces) -> Self {
        Self {
            watches: DashMap::new(),
            skipped,
        }
    }
}

impl std::ops::Deref for TemplateCache {
    type Target = DashMap<GroupVersionKind, TemplateWatch>;
    fn deref(&self) -> &Self::Target {
        &self.watches
    }
}

pub(crate) type Templates = Arc<TemplateCache>;

/// The cached template of a kind, when the detector watches that kind and its cache has
/// listed (`None` otherwise: the cache cannot tell; read it from the host, or look again).
/// `Some(None)`: the template does not exist.
pub(crate) fn cached_template(
    templates: &Templates,
    gvk: &GroupVersionKind,
    namespace: Option<&str>,
    name: &str,
) -> Option<Option<Arc<DynamicObject>>> {
    if namespace.is_some_and(|ns| templates.skipped.skipped(ns)) {
        // Not cached (see `cached`): the cache cannot tell.
        return None;
    }
    let w = templates.get(gvk)?;
    // Until its first list ends the store is empty, which is not "absent".
    w.store.wait_until_ready().now_or_never()?.ok()?;
    let mut r = ObjectRef::new_with(name, w.info.resource.clone());
    if let Some(ns) = namespace {
        r = r.within(ns);
    }
    Some(w.store.get(&r))
}

/// The template as an event's involved object.
pub(crate) fn involved(template: &Value) -> ObjectReference {
    let s = |p: &str| {
        template
            .pointer(p)
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    ObjectReference {
        api_version: s("/apiVersion"),
        kind: s("/kind"),
        namespace: s("/metadata/namespace"),
        name: s("/metadata/name"),
        uid: s("/metadata/uid"),
        ..Default::default()
    }
}
