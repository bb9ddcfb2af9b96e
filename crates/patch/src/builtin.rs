//! The catalogue of built-in kinds: merge schemas written from the list merge facts in
//! `shared/MERGE-KEYS.md` (strategic merge strategy and apply list type per list field) plus
//! the atomic structs/maps of the upstream types (LabelSelector, NodeSelector,
//! `nodeSelector`, Service `selector`, object references). Fields not described here are
//! `Any`: maps merge key by key and lists are atomic, which is what every unlisted
//! built-in list does.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::Schema;
use crate::schema::{
    ListType, Node, PatchStrategy, atomic, keyed, list, map_keys, merge_key, obj, object_meta,
    retain, scalar_set,
};

/// group -> kind -> schema (nested so lookups borrow their arguments).
#[derive(Default)]
struct Catalogue(HashMap<&'static str, HashMap<&'static str, Schema>>);

impl Catalogue {
    fn insert(&mut self, (group, kind): (&'static str, &'static str), schema: Schema) {
        self.0.entry(group).or_default().insert(kind, schema);
    }
}

fn catalogue() -> &'static Catalogue {
    static CATALOGUE: OnceLock<Catalogue> = OnceLock::new();
    CATALOGUE.get_or_init(build)
}

impl Schema {
    /// The schema of a built-in kind, e.g. `("apps", "Deployment")` or `("", "Pod")`
    /// (the core group may also be spelt `"core"` or `"v1"`). `None` for unknown kinds.
    pub fn builtin(group: &str, kind: &str) -> Option<&'static Schema> {
        let group = match group {
            "core" | "v1" => "",
            g => g,
        };
        catalogue().0.get(group)?.get(kind)
    }

    /// The group/kind pairs [`Schema::builtin`] knows.
    pub fn builtin_kinds() -> Vec<(&'static str, &'static str)> {
        let mut v: Vec<_> = catalogue()
            .0
            .iter()
            .flat_map(|(g, kinds)| kinds.keys().map(move |k| (*g, *k)))
            .collect();
        v.sort_unstable();
        v
    }
}

fn replace_set() -> Node {
    list(PatchStrategy::Replace, ListType::Set, Node::Any)
}

/// `conditions` of most statuses: strategic merge and apply both keyed by `type`.
fn conditions_status() -> Node {
    obj([("conditions", keyed("type", Node::Any))])
}

fn env_var() -> Node {
    obj([(
        "valueFrom",
        obj([
            ("configMapKeyRef", atomic()),
            ("secretKeyRef", atomic()),
            ("fieldRef", atomic()),
            ("resourceFieldRef", atomic()),
        ]),
    )])
}

/// Container and EphemeralContainer share these list fields.
fn container() -> Node {
    obj([
        (
            "ports",
            list(
                merge_key("containerPort"),
                map_keys(&["containerPort", "protocol"], &[("protocol", "TCP")]),
                Node::Any,
            ),
        ),
        ("env", keyed("name", env_var())),
        (
            "resources",
            obj([(
                "claims",
                list(PatchStrategy::Replace, map_keys(&["name"], &[]), Node::Any),
            )]),
        ),
        ("volumeMounts", keyed("mountPath", Node::Any)),
        ("volumeDevices", keyed("devicePath", Node::Any)),
    ])
}

fn pod_spec() -> Node {
    let containers = container();
    obj([
        (
            "volumes",
            list(merge_key("name"), map_keys(&["name"], &[]), retain([])),
        ),
        ("initContainers", keyed("name", containers.clone())),
        ("containers", keyed("name", containers.clone())),
        ("ephemeralContainers", keyed("name", containers)),
        ("imagePullSecrets", keyed("name", atomic())),
        ("hostAliases", keyed("ip", Node::Any)),
        (
            "topologySpreadConstraints",
            list(
                merge_key("topologyKey"),
                map_keys(&["topologyKey", "whenUnsatisfiable"], &[]),
                obj([("labelSelector", atomic())]),
            ),
        ),
        ("schedulingGates", keyed("name", Node::Any)),
        (
            "resourceClaims",
            list(merge_key("name"), map_keys(&["name"], &[]), retain([])),
        ),
        ("nodeSelector", atomic()),
        (
            "affinity",
            obj([(
                "nodeAffinity",
                obj([("requiredDuringSchedulingIgnoredDuringExecution", atomic())]),
            )]),
        ),
    ])
}

fn pod_status() -> Node {
    let statuses = obj([
        ("volumeMounts", keyed("mountPath", Node::Any)),
        ("allocatedResourcesStatus", keyed("name", Node::Any)),
    ]);
    obj([
        ("conditions", keyed("type", Node::Any)),
        (
            "hostIPs",
            list(merge_key("ip"), ListType::Atomic, Node::Any),
        ),
        ("podIPs", keyed("ip", Node::Any)),
        (
            "initContainerStatuses",
            list(PatchStrategy::Replace, ListType::Atomic, statuses.clone()),
        ),
        (
            "containerStatuses",
            list(PatchStrategy::Replace, ListType::Atomic, statuses.clone()),
        ),
        (
            "ephemeralContainerStatuses",
            list(PatchStrategy::Replace, ListType::Atomic, statuses),
        ),
        (
            "resourceClaimStatuses",
            list(merge_key("name"), map_keys(&["name"], &[]), retain([])),
        ),
    ])
}

fn pod_template_spec() -> Node {
    obj([("metadata", object_meta()), ("spec", pod_spec())])
}

fn pvc() -> Node {
    obj([
        ("metadata", object_meta()),
        (
            "spec",
            obj([("selector", atomic()), ("dataSource", atomic())]),
        ),
        ("status", conditions_status()),
    ])
}

fn job_spec() -> Node {
    obj([("selector", atomic()), ("template", pod_template_spec())])
}

/// A kind's root object: ObjectMeta plus the given fields.
fn kind<'a>(fields: impl IntoIterator<Item = (&'a str, Node)>) -> Schema {
    Schema {
        root: obj(std::iter::once(("metadata", object_meta())).chain(fields)),
    }
}

fn build() -> Catalogue {
    let mut c = Catalogue::default();
    let workload_status = conditions_status;

    // core/v1
    c.insert(
        ("", "Pod"),
        kind([("spec", pod_spec()), ("status", pod_status())]),
    );
    c.insert(
        ("", "PodTemplate"),
        kind([("template", pod_template_spec())]),
    );
    c.insert(("", "Namespace"), kind([("status", conditions_status())]));
    c.insert(("", "ConfigMap"), kind([]));
    c.insert(("", "Secret"), kind([]));
    c.insert(
        ("", "Service"),
        kind([
            (
                "spec",
                obj([
                    (
                        "ports",
                        list(
                            merge_key("port"),
                            map_keys(&["port", "protocol"], &[("protocol", "TCP")]),
                            Node::Any,
                        ),
                    ),
                    ("selector", atomic()),
                ]),
            ),
            ("status", conditions_status()),
        ]),
    );
    c.insert(
        ("", "ServiceAccount"),
        kind([("secrets", keyed("name", atomic()))]),
    );
    c.insert(("", "PersistentVolumeClaim"), Schema { root: pvc() });
    c.insert(
        ("", "PersistentVolume"),
        kind([(
            "spec",
            obj([
                ("claimRef", atomic()),
                ("nodeAffinity", obj([("required", atomic())])),
            ]),
        )]),
    );
    c.insert(
        ("", "Event"),
        kind([("involvedObject", atomic()), ("related", atomic())]),
    );
    c.insert(
        ("", "Node"),
        kind([
            ("spec", obj([("podCIDRs", scalar_set())])),
            (
                "status",
                obj([
                    ("conditions", keyed("type", Node::Any)),
                    ("addresses", keyed("type", Node::Any)),
                ]),
            ),
        ]),
    );
    c.insert(("", "Endpoints"), kind([]));
    c.insert(
        ("", "ReplicationController"),
        kind([
            (
                "spec",
                obj([("selector", atomic()), ("template", pod_template_spec())]),
            ),
            ("status", conditions_status()),
        ]),
    );
    c.insert(("", "LimitRange"), kind([]));
    c.insert(("", "ResourceQuota"), kind([]));

    // apps/v1
    c.insert(
        ("apps", "Deployment"),
        kind([
            (
                "spec",
                obj([
                    ("selector", atomic()),
                    ("template", pod_template_spec()),
                    ("strategy", retain([])),
                ]),
            ),
            ("status", workload_status()),
        ]),
    );
    c.insert(
        ("apps", "StatefulSet"),
        kind([
            (
                "spec",
                obj([
                    ("selector", atomic()),
                    ("template", pod_template_spec()),
                    (
                        "volumeClaimTemplates",
                        list(PatchStrategy::Replace, ListType::Atomic, pvc()),
                    ),
                ]),
            ),
            ("status", workload_status()),
        ]),
    );
    for k in ["DaemonSet", "ReplicaSet"] {
        c.insert(
            ("apps", k),
            kind([
                (
                    "spec",
                    obj([("selector", atomic()), ("template", pod_template_spec())]),
                ),
                ("status", workload_status()),
            ]),
        );
    }
    c.insert(("apps", "ControllerRevision"), kind([]));

    // batch/v1
    let job_status = || {
        obj([
            (
                "conditions",
                list(merge_key("type"), ListType::Atomic, Node::Any),
            ),
            (
                "uncountedTerminatedPods",
                obj([("succeeded", replace_set()), ("failed", replace_set())]),
            ),
        ])
    };
    c.insert(
        ("batch", "Job"),
        kind([("spec", job_spec()), ("status", job_status())]),
    );
    c.insert(
        ("batch", "CronJob"),
        kind([(
            "spec",
            obj([(
                "jobTemplate",
                obj([("metadata", object_meta()), ("spec", job_spec())]),
            )]),
        )]),
    );

    // coordination, rbac, policy, networking, events, extension APIs: lists are atomic.
    c.insert(("coordination.k8s.io", "Lease"), kind([]));
    for k in ["Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"] {
        c.insert(("rbac.authorization.k8s.io", k), kind([]));
    }
    c.insert(
        ("policy", "PodDisruptionBudget"),
        kind([
            ("spec", obj([("selector", atomic())])),
            ("status", conditions_status()),
        ]),
    );
    c.insert(
        ("networking.k8s.io", "NetworkPolicy"),
        kind([("spec", obj([("podSelector", atomic())]))]),
    );
    c.insert(("networking.k8s.io", "Ingress"), kind([]));
    c.insert(("networking.k8s.io", "IngressClass"), kind([]));
    c.insert(("discovery.k8s.io", "EndpointSlice"), kind([]));
    c.insert(
        ("events.k8s.io", "Event"),
        kind([("regarding", atomic()), ("related", atomic())]),
    );
    c.insert(
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
        kind([]),
    );
    c.insert(("apiregistration.k8s.io", "APIService"), kind([]));
    // `webhooks` merge by name (patchMergeKey and listMapKey); selectors are atomic.
    for k in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        c.insert(
            ("admissionregistration.k8s.io", k),
            kind([(
                "webhooks",
                keyed(
                    "name",
                    obj([
                        ("namespaceSelector", atomic()),
                        ("objectSelector", atomic()),
                    ]),
                ),
            )]),
        );
    }
    c.insert(("scheduling.k8s.io", "PriorityClass"), kind([]));
    c.insert(("storage.k8s.io", "StorageClass"), kind([]));
    // Issue 18's groups. HorizontalPodAutoscaler (v1 and v2 share group and kind; v1 has no
    // lists): v2 status conditions merge by type, metrics and behavior policies are atomic.
    c.insert(
        ("autoscaling", "HorizontalPodAutoscaler"),
        kind([("status", conditions_status())]),
    );
    // CSINode drivers merge by name (patchMergeKey and listMapKey); the rest is atomic.
    c.insert(
        ("storage.k8s.io", "CSINode"),
        kind([("spec", obj([("drivers", keyed("name", Node::Any))]))]),
    );
    // CSIDriver volumeLifecycleModes: replaced by strategic merge, a set for apply.
    c.insert(
        ("storage.k8s.io", "CSIDriver"),
        kind([("spec", obj([("volumeLifecycleModes", replace_set())]))]),
    );
    c.insert(("storage.k8s.io", "VolumeAttachment"), kind([]));
    c.insert(
        ("storage.k8s.io", "CSIStorageCapacity"),
        kind([("nodeTopology", atomic())]),
    );
    c.insert(("networking.k8s.io", "IPAddress"), kind([]));
    c.insert(
        ("networking.k8s.io", "ServiceCIDR"),
        kind([("status", conditions_status())]),
    );
    // RuntimeClass scheduling.nodeSelector is an atomic map.
    c.insert(
        ("node.k8s.io", "RuntimeClass"),
        kind([("scheduling", obj([("nodeSelector", atomic())]))]),
    );
    c
}
