//! The built-in Kubernetes kinds Flotilla's API servers serve, each as one
//! [`ResourceDef`] registration: the names discovery publishes (as kube-apiserver spells them),
//! scope and subresources, validation (decoding into the k8s-openapi type, unknown-field
//! detection, the semantic checks users meet most), the defaults kube-apiserver fills in, the
//! Table printer and OpenAPI v3 schemas.
//!
//! - [`builtin_resources`]: what the host stores as templates and a (simulated) member cluster
//!   serves as well (core/v1, apps/v1, batch/v1, coordination.k8s.io/v1, events.k8s.io/v1,
//!   rbac.authorization.k8s.io/v1, and the non-core groups of `group_resources`: autoscaling
//!   v2 and v1 (stored as v2, converted by field mapping), policy/v1, networking.k8s.io/v1,
//!   storage.k8s.io/v1, scheduling.k8s.io/v1, discovery.k8s.io/v1, node.k8s.io/v1, apps/v1
//!   controllerrevisions); [`NOT_SERVED`] lists the core/v1 resources of kube-apiserver 1.33
//!   left out on purpose, with the reason;
//! - [`certificate_resources`]: CertificateSigningRequests, which only the host serves (it
//!   holds the CA that signs them);
//! - [`common_schemas`]: OpenAPI schemas every document refers to (Scale, Status, ...).
//!
//! Validation accepts an object before or after defaulting: a check never fails on a field the
//! defaults would fill.

mod admission;
mod apiextensions;
mod autoscaling;
mod certificates;
mod core;
mod decode;
mod defaults;
mod field;
mod kind;
mod meta;
mod names;
mod networking;
mod openapi;
mod other;
mod podspec;
mod policy;
mod quota;
mod rbac;
mod selector;
mod storage;
mod volumes;
mod workloads;

use std::sync::Arc;

use flotilla_apimachinery::{ResourceDef, ScaleDef};
use k8s_openapi::Resource;
use k8s_openapi::api::apps::v1 as apps;
use k8s_openapi::api::batch::v1 as batch;
use k8s_openapi::api::coordination::v1 as coordination;
use k8s_openapi::api::core::v1 as corev1;
use k8s_openapi::api::events::v1 as events;
use k8s_openapi::api::rbac::v1 as rbacv1;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::kind::{Check, Scoped, def, defaulter, no_check, pruner, validator};
use crate::meta::NameRule;

pub use crate::openapi::{GVK_EXTENSION, common_schemas};

/// Errors of this crate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindsError {
    /// The object does not decode into its kind's type; `path` locates the bad value
    /// (`spec.replicas`), empty for the object itself.
    #[error("{}{message}", if path.is_empty() { String::new() } else { format!("{path}: ") })]
    Decode { path: String, message: String },
}

/// A registration for `T` with its validation and (optional) defaulting.
fn kind<T>(rule: NameRule, check: Check<T>, default: Option<fn(&mut Value)>) -> ResourceDef
where
    T: Resource + JsonSchema + DeserializeOwned + serde::Serialize + 'static,
    T::Scope: Scoped,
{
    let mut d = def::<T>();
    d.prune = Some(pruner::<T>());
    d.validate = Some(validator::<T>(rule, check));
    d.default = default.map(defaulter);
    d
}

/// core/v1 resources kube-apiserver 1.33 serves that Flotilla's servers deliberately do not,
/// as (resource, reason). Subresources are named `resource/subresource`.
pub const NOT_SERVED: &[(&str, &str)] = &[
    (
        "bindings",
        "deprecated since 1.7 in favour of pods/binding (which is served)",
    ),
    (
        "componentstatuses",
        "deprecated since 1.19; kube-apiserver computes it by probing etcd, the scheduler and \
         the controller-manager on their local ports, which Flotilla's components do not expose",
    ),
    (
        "pods/ephemeralcontainers",
        "adds debug containers to a running pod; a template pod on the host never runs",
    ),
    (
        "pods/eviction",
        "evicts a running pod subject to PodDisruptionBudgets; template pods never run",
    ),
    (
        "pods/attach, pods/exec, pods/log, pods/portforward, pods/proxy",
        "streams to a kubelet; the host has none (member-sim serves pods/log)",
    ),
    (
        "pods/resize",
        "resizes the containers of a running pod; template pods never run",
    ),
    (
        "nodes/proxy, services/proxy",
        "proxies to a kubelet or a service endpoint; the host has neither",
    ),
];

/// The non-core groups issue 18 adds, every resource kube-apiserver 1.33 serves in them by
/// default: autoscaling horizontalpodautoscalers (v2 stored, v1 converted), policy/v1
/// poddisruptionbudgets, networking.k8s.io/v1 ingresses, ingressclasses, networkpolicies,
/// ipaddresses, servicecidrs, storage.k8s.io/v1 storageclasses, csidrivers, csinodes,
/// csistoragecapacities, volumeattachments, scheduling.k8s.io/v1 priorityclasses,
/// discovery.k8s.io/v1 endpointslices, node.k8s.io/v1 runtimeclasses and apps/v1
/// controllerrevisions. One place, read by [`builtin_resources`].
fn group_resources() -> Vec<ResourceDef> {
    use NameRule::{PathSegment, Subdomain};
    use k8s_openapi::api::autoscaling::{v1 as autoscalingv1, v2 as autoscalingv2};
    use k8s_openapi::api::discovery::v1 as discoveryv1;
    use k8s_openapi::api::networking::v1 as networkingv1;
    use k8s_openapi::api::node::v1 as nodev1;
    use k8s_openapi::api::policy::v1 as policyv1;
    use k8s_openapi::api::scheduling::v1 as schedulingv1;
    use k8s_openapi::api::storage::v1 as storagev1;
    let hpa_v2 = || {
        kind::<autoscalingv2::HorizontalPodAutoscaler>(
            Subdomain,
            autoscaling::validate_hpa,
            Some(autoscaling::default_hpa),
        )
        .short_names(&["hpa"])
        .categories(&["all"])
        .with_status()
    };
    // v1 is served from the stored v2 objects: its requests are converted to v2 before the
    // v2 hooks (pruning, defaults, validation) run, so only names and schemas are v1's.
    let hpa_v1 = {
        let v2 = hpa_v2();
        let mut d = def::<autoscalingv1::HorizontalPodAutoscaler>()
            .short_names(&["hpa"])
            .categories(&["all"])
            .with_status()
            .stored_as("v2", std::sync::Arc::new(autoscaling::convert_hpa));
        // The server hands these hooks v2 objects; an object still labelled v1 (a caller
        // using the hooks directly) is converted first.
        let to_v2 = |v: &Value| -> Option<Value> {
            (v.get("apiVersion").and_then(Value::as_str) == Some("autoscaling/v1"))
                .then(|| autoscaling::convert_hpa(v, "v2"))
        };
        if let Some(validate) = v2.validate {
            d.validate = Some(std::sync::Arc::new(
                move |obj: &Value, old: Option<&Value>| {
                    let converted = to_v2(obj);
                    let old_v2 = old.and_then(to_v2);
                    validate(converted.as_ref().unwrap_or(obj), old_v2.as_ref().or(old))
                },
            ));
        }
        d.prune = v2.prune;
        d.default = v2.default;
        d
    };
    vec![
        hpa_v2(),
        hpa_v1,
        kind::<policyv1::PodDisruptionBudget>(Subdomain, policy::validate_pdb, None)
            .short_names(&["pdb"])
            .with_status(),
        kind::<networkingv1::Ingress>(Subdomain, networking::validate_ingress, None)
            .short_names(&["ing"])
            .with_status(),
        kind::<networkingv1::IngressClass>(
            Subdomain,
            networking::validate_ingress_class,
            Some(networking::default_ingress_class),
        ),
        kind::<networkingv1::IPAddress>(PathSegment, networking::validate_ip_address, None)
            .short_names(&["ip"]),
        kind::<networkingv1::ServiceCIDR>(Subdomain, networking::validate_service_cidr, None)
            .with_status(),
        kind::<networkingv1::NetworkPolicy>(
            Subdomain,
            networking::validate_network_policy,
            Some(networking::default_network_policy),
        )
        .short_names(&["netpol"]),
        kind::<storagev1::StorageClass>(
            Subdomain,
            storage::validate_storage_class,
            Some(storage::default_storage_class),
        )
        .short_names(&["sc"]),
        kind::<storagev1::CSIDriver>(
            Subdomain,
            storage::validate_csi_driver,
            Some(storage::default_csi_driver),
        ),
        kind::<storagev1::CSINode>(Subdomain, storage::validate_csi_node, None),
        kind::<storagev1::CSIStorageCapacity>(
            Subdomain,
            storage::validate_csi_storage_capacity,
            None,
        ),
        kind::<storagev1::VolumeAttachment>(Subdomain, storage::validate_volume_attachment, None)
            .with_status(),
        kind::<schedulingv1::PriorityClass>(
            Subdomain,
            policy::validate_priority_class,
            Some(policy::default_priority_class),
        )
        .short_names(&["pc"]),
        kind::<discoveryv1::EndpointSlice>(
            Subdomain,
            networking::validate_endpoint_slice,
            Some(networking::default_endpoint_slice),
        ),
        kind::<nodev1::RuntimeClass>(Subdomain, policy::validate_runtime_class, None),
        kind::<apps::ControllerRevision>(Subdomain, policy::validate_controller_revision, None),
    ]
}

/// Every built-in resource the host serves (as resource templates; a member cluster serves the
/// same), the one table discovery, OpenAPI and the tests read: core/v1 namespaces, configmaps,
/// secrets, services, serviceaccounts, persistentvolumeclaims, persistentvolumes, pods,
/// podtemplates, replicationcontrollers, endpoints, limitranges, resourcequotas, nodes, events;
/// apps/v1 deployments, statefulsets, daemonsets, replicasets; batch/v1 jobs, cronjobs;
/// coordination.k8s.io/v1 leases; events.k8s.io/v1 events; rbac.authorization.k8s.io/v1
/// roles, clusterroles, rolebindings, clusterrolebindings; and the non-core groups of
/// `group_resources`.
pub fn builtin_resources() -> Vec<ResourceDef> {
    use NameRule::{Dns1035, Label, PathSegment, Subdomain};
    vec![
        // core/v1
        kind::<corev1::Namespace>(Label, no_check, Some(core::default_namespace))
            .short_names(&["ns"])
            .with_status(),
        kind::<corev1::ConfigMap>(Subdomain, core::validate_configmap, None).short_names(&["cm"]),
        kind::<corev1::Secret>(Subdomain, core::validate_secret, Some(core::default_secret)),
        kind::<corev1::Service>(Dns1035, core::validate_service, Some(core::default_service))
            .short_names(&["svc"])
            .categories(&["all"])
            .with_status(),
        kind::<corev1::ServiceAccount>(Subdomain, no_check, None).short_names(&["sa"]),
        kind::<corev1::PersistentVolumeClaim>(
            Subdomain,
            core::validate_pvc,
            Some(core::default_pvc),
        )
        .short_names(&["pvc"])
        .with_status(),
        kind::<corev1::Event>(Subdomain, no_check, None).short_names(&["ev"]),
        kind::<corev1::Pod>(Subdomain, core::validate_pod, Some(core::default_pod))
            .short_names(&["po"])
            .categories(&["all"])
            .with_status(),
        kind::<corev1::PodTemplate>(
            Subdomain,
            workloads::validate_podtemplate,
            Some(workloads::default_podtemplate),
        ),
        kind::<corev1::ReplicationController>(
            Subdomain,
            workloads::validate_replicationcontroller,
            Some(workloads::default_replicationcontroller),
        )
        .short_names(&["rc"])
        .categories(&["all"])
        .with_status()
        .with_scale(ScaleDef::standard()),
        kind::<corev1::Endpoints>(
            Subdomain,
            core::validate_endpoints,
            Some(core::default_endpoints),
        )
        .short_names(&["ep"]),
        kind::<corev1::LimitRange>(
            Subdomain,
            quota::validate_limitrange,
            Some(quota::default_limitrange),
        )
        .short_names(&["limits"]),
        kind::<corev1::ResourceQuota>(Subdomain, quota::validate_resourcequota, None)
            .short_names(&["quota"])
            .with_status(),
        kind::<corev1::PersistentVolume>(
            Subdomain,
            volumes::validate_pv,
            Some(volumes::default_pv),
        )
        .short_names(&["pv"])
        .with_status(),
        kind::<corev1::Node>(Subdomain, core::validate_node, Some(core::default_node))
            .short_names(&["no"])
            .with_status(),
        // apps/v1
        kind::<apps::Deployment>(
            Subdomain,
            workloads::validate_deployment,
            Some(workloads::default_deployment),
        )
        .short_names(&["deploy"])
        .categories(&["all"])
        .with_status()
        .with_scale(ScaleDef::standard()),
        kind::<apps::StatefulSet>(
            Subdomain,
            workloads::validate_statefulset,
            Some(workloads::default_statefulset),
        )
        .short_names(&["sts"])
        .categories(&["all"])
        .with_status()
        .with_scale(ScaleDef::standard()),
        kind::<apps::DaemonSet>(
            Subdomain,
            workloads::validate_daemonset,
            Some(workloads::default_daemonset),
        )
        .short_names(&["ds"])
        .categories(&["all"])
        .with_status(),
        kind::<apps::ReplicaSet>(
            Subdomain,
            workloads::validate_replicaset,
            Some(workloads::default_replicaset),
        )
        .short_names(&["rs"])
        .categories(&["all"])
        .with_status()
        .with_scale(ScaleDef::standard()),
        // batch/v1
        kind::<batch::Job>(
            Subdomain,
            workloads::validate_job,
            Some(workloads::default_job),
        )
        .categories(&["all"])
        .with_status(),
        kind::<batch::CronJob>(
            Subdomain,
            workloads::validate_cronjob,
            Some(workloads::default_cronjob),
        )
        .short_names(&["cj"])
        .categories(&["all"])
        .with_status(),
        // coordination.k8s.io/v1
        kind::<coordination::Lease>(Subdomain, other::validate_lease, None),
        // events.k8s.io/v1
        kind::<events::Event>(Subdomain, no_check, None).short_names(&["ev"]),
        // rbac.authorization.k8s.io/v1
        kind::<rbacv1::Role>(PathSegment, rbac::validate_role, None),
        kind::<rbacv1::ClusterRole>(PathSegment, rbac::validate_clusterrole, None),
        kind::<rbacv1::RoleBinding>(
            PathSegment,
            rbac::validate_rolebinding,
            Some(rbac::default_binding),
        ),
        kind::<rbacv1::ClusterRoleBinding>(
            PathSegment,
            rbac::validate_clusterrolebinding,
            Some(rbac::default_binding),
        ),
    ]
    .into_iter()
    .chain(group_resources())
    .collect()
}

/// The API-extension kinds a host serves: apiextensions.k8s.io/v1 CustomResourceDefinition
/// (whose objects the API server's CRD controller turns into served resources),
/// admissionregistration.k8s.io/v1 Mutating/ValidatingWebhookConfiguration (enforced by the
/// API server's dynamic admission) and apiregistration.k8s.io/v1 APIService.
pub fn extension_resources() -> Vec<ResourceDef> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    vec![
        kind::<apiext::CustomResourceDefinition>(
            NameRule::Subdomain,
            apiextensions::validate_crd,
            None,
        )
        .short_names(&["crd", "crds"])
        .with_status(),
        kind::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>(
            NameRule::Subdomain,
            admission::validate_mutating,
            Some(admission::default_mutating),
        ),
        kind::<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration>(
            NameRule::Subdomain,
            admission::validate_validating,
            Some(admission::default_validating),
        ),
        kind::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(
            NameRule::PathSegment,
            apiextensions::validate_apiservice,
            None,
        )
        .with_status(),
    ]
}

/// What only the host serves: certificates.k8s.io/v1 CertificateSigningRequests
/// (cluster-scoped, short name `csr`, with the `status` and `approval` subresources), which
/// the host's signer answers with certificates from its CA.
pub fn certificate_resources() -> Vec<ResourceDef> {
    use k8s_openapi::api::certificates::v1 as certificatesv1;
    let mut csr = kind::<certificatesv1::CertificateSigningRequest>(
        NameRule::PathSegment,
        certificates::validate_csr,
        None,
    )
    .short_names(&["csr"])
    .with_status()
    .with_partial_subresource(certificates::approval_subresource());
    csr.prepare_create = Some(Arc::new(certificates::prepare_create));
    csr.prepare_update = Some(Arc::new(certificates::prepare_update));
    vec![csr]
}

#[cfg(test)]
mod tests;
