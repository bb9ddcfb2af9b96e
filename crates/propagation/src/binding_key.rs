//! The name a binding is queued by, of either kind, and the binding a Work belongs to: shared
//! by the binding, override and dependency controllers and the Work watch that wakes them.

use flotilla_karmada_api::work::Work;
use flotilla_names::karmada;
use kube::ResourceExt;

/// A ResourceBinding (with a namespace) or ClusterResourceBinding (without).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BindingKey {
    pub namespace: Option<String>,
    pub name: String,
}

impl BindingKey {
    /// The key of the binding with this metadata (a ClusterResourceBinding has no namespace).
    pub fn of(meta: &kube::api::ObjectMeta) -> Self {
        Self {
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

/// The binding a Work belongs to, from its annotations.
pub fn binding_of_work(work: &Work) -> Option<BindingKey> {
    let a = work.annotations();
    if let Some(name) = a.get(karmada::RESOURCE_BINDING_NAME_ANNOTATION) {
        return Some(BindingKey {
            namespace: a
                .get(karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION)
                .cloned(),
            name: name.clone(),
        });
    }
    a.get(karmada::CLUSTER_RESOURCE_BINDING_ANNOTATION)
        .map(|name| BindingKey {
            namespace: None,
            name: name.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn works_name_their_binding() {
        let w: Work = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": karmada::execution_namespace("m1"), "annotations": {
                karmada::RESOURCE_BINDING_NAME_ANNOTATION: "web-deployment",
                karmada::RESOURCE_BINDING_NAMESPACE_ANNOTATION: "demo"}},
            "spec": {}
        }))
        .unwrap();
        assert_eq!(
            binding_of_work(&w),
            Some(BindingKey {
                namespace: Some("demo".into()),
                name: "web-deployment".into()
            })
        );
        let c: Work = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": karmada::execution_namespace("m1"), "annotations": {
                karmada::CLUSTER_RESOURCE_BINDING_ANNOTATION: "view-clusterrole"}},
            "spec": {}
        }))
        .unwrap();
        assert_eq!(binding_of_work(&c).unwrap().namespace, None);
        let none: Work = serde_json::from_value(json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": karmada::execution_namespace("m1")}, "spec": {}
        }))
        .unwrap();
        assert_eq!(binding_of_work(&none), None);
    }
}
