//! Karmada's well-known labels, annotations, finalizers and generated names, spelled exactly as
//! Karmada spells them (read from `pkg/apis/policy/v1alpha1` and `pkg/apis/work/v1alpha2`
//! `well_known_constants.go`, `pkg/util/constants.go` and `pkg/util/names`), so that objects
//! Flotilla writes are recognised by Karmada's tools and the other way round.
//!
//! ```text
//!  template ──claimed by──▶ policy      (PROPAGATION_POLICY_PERMANENT_ID_LABEL + name annotations)
//!     │
//!     ▼ binding_name(kind, name)
//!  ResourceBinding ──────────────────▶ Work  work_name(..) in execution_namespace(cluster)
//!                                        │   (RESOURCE_BINDING_* annotations, permanent ids)
//!                                        ▼
//!                                   member object (WORK_NAMESPACE/NAME annotations,
//!                                                  RESOURCE_TEMPLATE_GENERATION_ANNOTATION,
//!                                                  MANAGED_BY_KARMADA_LABEL)
//! ```
//!
//! It also owns what is one cluster's copy of an object rather than the object itself
//! ([`strip_instance_fields`]), which both directions between host and member drop.

use serde_json::Value;

use crate::NamesError;

// === policy.karmada.io ===

/// Label put on a template (and its binding) naming the claiming PropagationPolicy by the
/// permanent id Karmada's webhook gives each policy.
pub const PROPAGATION_POLICY_PERMANENT_ID_LABEL: &str = "propagationpolicy.karmada.io/permanent-id";
/// Same for a ClusterPropagationPolicy.
pub const CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL: &str =
    "clusterpropagationpolicy.karmada.io/permanent-id";
/// Annotation naming the namespace of the claiming PropagationPolicy.
pub const PROPAGATION_POLICY_NAMESPACE_ANNOTATION: &str = "propagationpolicy.karmada.io/namespace";
/// Annotation naming the claiming PropagationPolicy.
pub const PROPAGATION_POLICY_NAME_ANNOTATION: &str = "propagationpolicy.karmada.io/name";
/// Annotation naming the claiming ClusterPropagationPolicy.
pub const CLUSTER_PROPAGATION_POLICY_ANNOTATION: &str = "clusterpropagationpolicy.karmada.io/name";
/// Label on a Namespace keeping the namespace sync from propagating it.
pub const NAMESPACE_SKIP_AUTO_PROPAGATION_LABEL: &str =
    "namespace.karmada.io/skip-auto-propagation";

// === work.karmada.io: bindings and Works ===

/// Permanent id of a ResourceBinding, copied onto its Works and member objects.
pub const RESOURCE_BINDING_PERMANENT_ID_LABEL: &str = "resourcebinding.karmada.io/permanent-id";
/// Permanent id of a ClusterResourceBinding.
pub const CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL: &str =
    "clusterresourcebinding.karmada.io/permanent-id";
/// Permanent id of a Work.
pub const WORK_PERMANENT_ID_LABEL: &str = "work.karmada.io/permanent-id";
/// Annotation on a member object: namespace of the Work it came from.
pub const WORK_NAMESPACE_ANNOTATION: &str = "work.karmada.io/namespace";
/// Annotation on a member object: name of the Work it came from.
pub const WORK_NAME_ANNOTATION: &str = "work.karmada.io/name";
/// Annotation on a Work (and its manifest): namespace of the ResourceBinding.
pub const RESOURCE_BINDING_NAMESPACE_ANNOTATION: &str = "resourcebinding.karmada.io/namespace";
/// Annotation on a Work (and its manifest): name of the ResourceBinding.
pub const RESOURCE_BINDING_NAME_ANNOTATION: &str = "resourcebinding.karmada.io/name";
/// Annotation on a Work (and its manifest): name of the ClusterResourceBinding.
pub const CLUSTER_RESOURCE_BINDING_ANNOTATION: &str = "clusterresourcebinding.karmada.io/name";
/// Label on a binding naming the controller that manages it instead of a policy.
pub const BINDING_MANAGED_BY_LABEL: &str = "binding.karmada.io/managed-by";
/// Annotation on a manifest: the template's `metadata.generation` it was made from; the status
/// aggregation compares it with the template's to know a member runs the latest spec.
pub const RESOURCE_TEMPLATE_GENERATION_ANNOTATION: &str = "resourcetemplate.karmada.io/generation";
/// Annotation on a manifest: the template's UID.
pub const RESOURCE_TEMPLATE_UID_ANNOTATION: &str = "resourcetemplate.karmada.io/uid";
/// Annotation on a manifest listing the label keys Karmada manages on it.
pub const MANAGED_LABELS_ANNOTATION: &str = "resourcetemplate.karmada.io/managed-labels";
/// Annotation on a manifest listing the annotation keys Karmada manages on it.
pub const MANAGED_ANNOTATIONS_ANNOTATION: &str = "resourcetemplate.karmada.io/managed-annotations";
/// Label on a template that keeps the member's replicas (`"true"`).
pub const RETAIN_REPLICAS_LABEL: &str = "resourcetemplate.karmada.io/retain-replicas";
/// Label on a resource template (of any kind) that, set to [`DELETION_PROTECTED_ALWAYS`],
/// makes the host refuse to delete it until the label is removed or changed (Karmada's
/// `DeletionProtectionLabelKey`, checked by its `resourcedeletionprotection` webhook).
pub const DELETION_PROTECTED_LABEL: &str = "resourcetemplate.karmada.io/deletion-protected";
/// The one value of [`DELETION_PROTECTED_LABEL`] that protects; any other value does not.
pub const DELETION_PROTECTED_ALWAYS: &str = "Always";
/// Annotation on a template or Work: what to do when the member already has the object.
pub const CONFLICT_RESOLUTION_ANNOTATION: &str = "work.karmada.io/conflict-resolution";
/// [`CONFLICT_RESOLUTION_ANNOTATION`] value: take over the existing member object.
pub const CONFLICT_RESOLUTION_OVERWRITE: &str = "overwrite";
/// [`CONFLICT_RESOLUTION_ANNOTATION`] value: leave an existing member object alone (default).
pub const CONFLICT_RESOLUTION_ABORT: &str = "abort";

// === karmada.io ===

/// Label on member objects Karmada synchronises.
pub const MANAGED_BY_KARMADA_LABEL: &str = "karmada.io/managed";
/// The value of [`MANAGED_BY_KARMADA_LABEL`].
pub const MANAGED_BY_KARMADA_LABEL_VALUE: &str = "true";
/// Annotation on a binding recording the placement it was made with.
pub const POLICY_PLACEMENT_ANNOTATION: &str = "policy.karmada.io/applied-placement";
/// Annotation on a Work recording the OverridePolicies applied.
pub const APPLIED_OVERRIDES_ANNOTATION: &str = "policy.karmada.io/applied-overrides";
/// Annotation on a Work recording the ClusterOverridePolicies applied.
pub const APPLIED_CLUSTER_OVERRIDES_ANNOTATION: &str =
    "policy.karmada.io/applied-cluster-overrides";
/// Annotation on an independent binding listing its dependencies (JSON).
pub const DEPENDENCIES_ANNOTATION: &str = "resourcebinding.karmada.io/dependencies";

/// Finalizer on a Cluster until its execution namespace is gone.
pub const CLUSTER_CONTROLLER_FINALIZER: &str = "karmada.io/cluster-controller";
/// Finalizer on a Work until its member objects are deleted.
pub const EXECUTION_CONTROLLER_FINALIZER: &str = "karmada.io/execution-controller";
/// Finalizer on a ResourceBinding until its Works are deleted.
pub const BINDING_CONTROLLER_FINALIZER: &str = "karmada.io/binding-controller";
/// Finalizer on a ClusterResourceBinding until its Works are deleted.
pub const CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER: &str =
    "karmada.io/cluster-resource-binding-controller";
/// Finalizer on an independent binding until its attached bindings are cleaned up.
pub const BINDING_DEPENDENCIES_DISTRIBUTOR_FINALIZER: &str =
    "karmada.io/binding-dependencies-distributor";

// === cluster.karmada.io ===

/// Taint the cluster controller puts on a Cluster whose Ready condition is False.
pub const TAINT_CLUSTER_NOT_READY: &str = "cluster.karmada.io/not-ready";
/// Taint the cluster controller puts on a Cluster whose Ready condition is Unknown.
pub const TAINT_CLUSTER_UNREACHABLE: &str = "cluster.karmada.io/unreachable";
/// Karmada's reserved label naming a member cluster: merged reads on the host select member
/// clusters with it (`-l cluster.karmada.io/name=member1`) and put it on an object that only
/// one member holds.
pub const CLUSTER_NAME_LABEL: &str = "cluster.karmada.io/name";

// === names ===

/// Namespace of Karmada's own components.
pub const NAMESPACE_KARMADA_SYSTEM: &str = "karmada-system";
/// Namespace of cluster credentials (Push-mode Secrets) and of the per-cluster heartbeat
/// Leases (named like their Cluster).
pub const NAMESPACE_KARMADA_CLUSTER: &str = "karmada-cluster";
/// Service of the aggregated API server (in [`NAMESPACE_KARMADA_SYSTEM`]) that the
/// `cluster.karmada.io` APIService points at.
pub const AGGREGATED_APISERVER_SERVICE: &str = "karmada-aggregated-apiserver";
/// Prefix of execution namespaces.
pub const EXECUTION_NAMESPACE_PREFIX: &str = "karmada-es-";

/// Longest object name a DNS subdomain allows (Works are named like one).
const MAX_NAME_LEN: usize = 253;

/// Whether `namespace` is one of Karmada's own, never propagated nor holding templates:
/// `karmada-system`, `karmada-cluster` and every execution namespace `karmada-es-*`
/// (Karmada's `names.IsReservedNamespace`). Other `karmada-*` namespaces are users'.
pub fn is_reserved_namespace(namespace: &str) -> bool {
    namespace == NAMESPACE_KARMADA_SYSTEM
        || namespace == NAMESPACE_KARMADA_CLUSTER
        || namespace.starts_with(EXECUTION_NAMESPACE_PREFIX)
}

/// The namespace holding the Works of `cluster`: `karmada-es-<cluster>`.
pub fn execution_namespace(cluster: &str) -> String {
    format!("{EXECUTION_NAMESPACE_PREFIX}{cluster}")
}

/// The cluster whose Works `namespace` holds.
pub fn cluster_of_execution_namespace(namespace: &str) -> Result<&str, NamesError> {
    namespace
        .strip_prefix(EXECUTION_NAMESPACE_PREFIX)
        .ok_or_else(|| NamesError::NotExecutionNamespace {
            namespace: namespace.to_string(),
        })
}

/// Names of RBAC objects may contain `:`, which CRD object names (DNS subdomains) may not;
/// Karmada replaces it with `.` (other such characters are rare and left alone, as there).
fn dns_safe(name: &str) -> String {
    name.replace(':', ".").to_lowercase()
}

/// The (Cluster)ResourceBinding of a template: `<name>-<kind>`, lowercased, `:` -> `.`
/// (Karmada's `names.GenerateBindingName`).
pub fn binding_name(kind: &str, name: &str) -> String {
    format!("{}-{}", dns_safe(name), kind.to_lowercase())
}

/// 32-bit FNV-1a: tiny, stable across releases and platforms (unlike std's hasher).
fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for b in bytes {
        hash ^= u32::from(*b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// The digits of `n` in decimal, each written as a letter or digit of an alphabet without
/// vowels (and without `0`, `1`, `3`) so that no word forms: apimachinery's
/// `rand.SafeEncodeString` of the decimal string, as Karmada writes its hashes.
fn safe_encode_decimal(n: u32) -> String {
    const ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";
    n.to_string()
        .bytes()
        .map(|b| char::from(ALPHABET[usize::from(b) % ALPHABET.len()]))
        .collect()
}

/// The Work of a template in one execution namespace: `<name>-<hash>` with `name` lowercased
/// and `:` -> `.`, exactly as Karmada's `names.GenerateWorkName`, so tools that compute a
/// Work's name find it: the hash is 32-bit FNV-1a over the lowercased
/// `<namespace>-<name>-<kind>` (`<name>-<kind>` for cluster-scoped objects, `name` already
/// made DNS-safe), its decimal digits safe-encoded. The kind and namespace are in the hash,
/// so a Deployment and a Service of the same name get different Works. Where Karmada would
/// make a name longer than 253 characters (which the API refuses), the name part is
/// shortened (and stripped of trailing `-`/`.`).
pub fn work_name(namespace: &str, name: &str, kind: &str) -> String {
    let name = dns_safe(name);
    let key = if namespace.is_empty() {
        format!("{name}-{kind}")
    } else {
        format!("{namespace}-{name}-{kind}")
    }
    .to_lowercase();
    let hash = safe_encode_decimal(fnv1a32(key.as_bytes()));
    let room = MAX_NAME_LEN - 1 - hash.len();
    let mut prefix = name.as_str();
    if prefix.len() > room {
        let mut end = room;
        // Names are ASCII in practice; stay on a char boundary regardless.
        while !prefix.is_char_boundary(end) {
            end -= 1;
        }
        prefix = prefix[..end].trim_end_matches(['-', '.']);
    }
    format!("{prefix}-{hash}")
}

/// Metadata one API server fills in for its own copy of an object (identity, revision,
/// ownership, deletion state): never carried from a template to a member, nor from a member
/// back to a template (`flotillactl promote`).
pub const INSTANCE_METADATA: [&str; 10] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "selfLink",
];

/// Labels the API server or controllers put on a Job's pods from its uid.
const JOB_GENERATED_LABELS: [&str; 4] = [
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
    "job-name",
    "batch.kubernetes.io/job-name",
];

/// Removes from `obj` what belongs to one cluster's copy rather than to the object as its
/// user wrote it: [`INSTANCE_METADATA`], `status`, a Service's `clusterIP(s)` (unless
/// headless), a Pod's `nodeName`, a ServiceAccount's `secrets`, a Job's generated selector and
/// controller-uid labels (unless `manualSelector`). The propagation controllers drop them from
/// a template before applying it to a member (where the member sets its own), and `flotillactl
/// promote` from a member's object before making it a template.
pub fn strip_instance_fields(obj: &mut serde_json::Map<String, Value>) {
    obj.remove("status");
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        for key in INSTANCE_METADATA {
            meta.remove(key);
        }
    }
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    match (api_version, kind) {
        ("v1", "Service") => {
            if let Some(Value::Object(spec)) = obj.get_mut("spec") {
                if spec.get("clusterIP").and_then(Value::as_str) != Some("None") {
                    spec.remove("clusterIP");
                    spec.remove("clusterIPs");
                }
            }
        }
        ("v1", "Pod") => {
            if let Some(Value::Object(spec)) = obj.get_mut("spec") {
                spec.remove("nodeName");
            }
        }
        ("v1", "ServiceAccount") => {
            obj.remove("secrets");
        }
        ("batch/v1", "Job") => {
            if let Some(Value::Object(spec)) = obj.get_mut("spec") {
                if spec.get("manualSelector") != Some(&Value::Bool(true)) {
                    spec.remove("selector");
                    if let Some(Value::Object(labels)) = spec
                        .get_mut("template")
                        .and_then(|t| t.pointer_mut("/metadata/labels"))
                    {
                        for key in JOB_GENERATED_LABELS {
                            labels.remove(key);
                        }
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_karmada_strings() {
        let table = [
            (
                PROPAGATION_POLICY_PERMANENT_ID_LABEL,
                "propagationpolicy.karmada.io/permanent-id",
            ),
            (
                CLUSTER_PROPAGATION_POLICY_PERMANENT_ID_LABEL,
                "clusterpropagationpolicy.karmada.io/permanent-id",
            ),
            (
                PROPAGATION_POLICY_NAME_ANNOTATION,
                "propagationpolicy.karmada.io/name",
            ),
            (
                PROPAGATION_POLICY_NAMESPACE_ANNOTATION,
                "propagationpolicy.karmada.io/namespace",
            ),
            (
                CLUSTER_PROPAGATION_POLICY_ANNOTATION,
                "clusterpropagationpolicy.karmada.io/name",
            ),
            (
                RESOURCE_BINDING_PERMANENT_ID_LABEL,
                "resourcebinding.karmada.io/permanent-id",
            ),
            (
                CLUSTER_RESOURCE_BINDING_PERMANENT_ID_LABEL,
                "clusterresourcebinding.karmada.io/permanent-id",
            ),
            (WORK_PERMANENT_ID_LABEL, "work.karmada.io/permanent-id"),
            (WORK_NAMESPACE_ANNOTATION, "work.karmada.io/namespace"),
            (WORK_NAME_ANNOTATION, "work.karmada.io/name"),
            (
                RESOURCE_TEMPLATE_GENERATION_ANNOTATION,
                "resourcetemplate.karmada.io/generation",
            ),
            (
                RESOURCE_TEMPLATE_UID_ANNOTATION,
                "resourcetemplate.karmada.io/uid",
            ),
            (
                CONFLICT_RESOLUTION_ANNOTATION,
                "work.karmada.io/conflict-resolution",
            ),
            (MANAGED_BY_KARMADA_LABEL, "karmada.io/managed"),
            (
                DELETION_PROTECTED_LABEL,
                "resourcetemplate.karmada.io/deletion-protected",
            ),
            (DELETION_PROTECTED_ALWAYS, "Always"),
            (
                APPLIED_OVERRIDES_ANNOTATION,
                "policy.karmada.io/applied-overrides",
            ),
            (
                APPLIED_CLUSTER_OVERRIDES_ANNOTATION,
                "policy.karmada.io/applied-cluster-overrides",
            ),
            (
                RESOURCE_BINDING_NAME_ANNOTATION,
                "resourcebinding.karmada.io/name",
            ),
            (
                RESOURCE_BINDING_NAMESPACE_ANNOTATION,
                "resourcebinding.karmada.io/namespace",
            ),
            (
                BINDING_CONTROLLER_FINALIZER,
                "karmada.io/binding-controller",
            ),
            (
                EXECUTION_CONTROLLER_FINALIZER,
                "karmada.io/execution-controller",
            ),
            (
                CLUSTER_RESOURCE_BINDING_CONTROLLER_FINALIZER,
                "karmada.io/cluster-resource-binding-controller",
            ),
            (EXECUTION_NAMESPACE_PREFIX, "karmada-es-"),
            (NAMESPACE_KARMADA_SYSTEM, "karmada-system"),
            (NAMESPACE_KARMADA_CLUSTER, "karmada-cluster"),
            (
                CLUSTER_CONTROLLER_FINALIZER,
                "karmada.io/cluster-controller",
            ),
            (TAINT_CLUSTER_NOT_READY, "cluster.karmada.io/not-ready"),
            (TAINT_CLUSTER_UNREACHABLE, "cluster.karmada.io/unreachable"),
            (CLUSTER_NAME_LABEL, "cluster.karmada.io/name"),
        ];
        for (constant, want) in table {
            assert_eq!(constant, want);
        }
    }

    #[test]
    fn execution_namespaces_round_trip() {
        assert_eq!(execution_namespace("member1"), "karmada-es-member1");
        assert_eq!(
            cluster_of_execution_namespace("karmada-es-member1"),
            Ok("member1")
        );
        assert_eq!(
            cluster_of_execution_namespace("default"),
            Err(NamesError::NotExecutionNamespace {
                namespace: "default".into()
            })
        );
    }

    #[test]
    fn binding_names() {
        let table = [
            ("Deployment", "nginx", "nginx-deployment"),
            (
                "ClusterRole",
                "system:controller:foo",
                "system.controller.foo-clusterrole",
            ),
            ("ConfigMap", "MixedCase", "mixedcase-configmap"),
        ];
        for (kind, name, want) in table {
            assert_eq!(binding_name(kind, name), want);
        }
    }

    #[test]
    fn fnv_and_safe_encoding_known_values() {
        // FNV-1a 32 reference vectors.
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        // Digits 0..9 map to 4 5 6 7 8 9 b c d f.
        assert_eq!(safe_encode_decimal(1_234_567_890), "56789bcdf4");
        assert_eq!(safe_encode_decimal(0), "4");
    }

    #[test]
    fn work_names_are_karmadas() {
        // Names Karmada's GenerateWorkName gives the same objects.
        assert_eq!(
            work_name("", "system:dbg2-cr", "ClusterRole"),
            "system.dbg2-cr-5f87d9594b"
        );
        assert_eq!(
            work_name("default", "nginx", "Deployment"),
            "nginx-687f7fb96f"
        );
        assert_eq!(work_name("", "view", "ClusterRole"), "view-8774ddb95");
        assert_eq!(work_name("system", "dbg2-cr", "Role"), "dbg2-cr-c48cf9f5c");
    }

    #[test]
    fn work_names_are_stable_distinct_and_dns_safe() {
        let a = work_name("default", "nginx", "Deployment");
        assert_eq!(a, work_name("default", "nginx", "Deployment"), "stable");
        assert!(a.starts_with("nginx-"), "{a}");
        assert_eq!(
            a,
            format!(
                "nginx-{}",
                safe_encode_decimal(fnv1a32(b"default-nginx-deployment"))
            )
        );
        let others = [
            work_name("default", "nginx", "Service"),
            work_name("other", "nginx", "Deployment"),
            work_name("", "nginx", "Deployment"),
        ];
        for o in &others {
            assert_ne!(&a, o);
        }
        assert!(work_name("", "system:auth", "ClusterRole").starts_with("system.auth-"));
        let long = "a".repeat(300);
        let w = work_name("ns", &long, "ConfigMap");
        assert!(w.len() <= 253, "{}", w.len());
        let dashed = format!("{}-.x", "b".repeat(244));
        let w = work_name("ns", &dashed, "ConfigMap");
        assert!(w.len() <= 253);
        assert!(!w.contains("-.") && !w.contains("--"), "{w}");
        for w in others.iter().chain([&a, &w]) {
            assert!(
                w.bytes().all(|b| b.is_ascii_lowercase()
                    || b.is_ascii_digit()
                    || b == b'-'
                    || b == b'.'),
                "{w}"
            );
        }
    }
}
