//! The default RBAC policy a server creates at start (idempotently): the user-facing
//! ClusterRoles (`cluster-admin`, `admin`, `edit`, `view`), the roles every authenticated or
//! anonymous client needs for discovery and self-review, the approver role of the client
//! certificate signer, the roles of Flotilla's own components (one identity each, see
//! [`component_roles`]), and their ClusterRoleBindings.
//!
//! `admin`, `edit` and `view` are aggregated roles as in Kubernetes: their permissions live in
//! `system:aggregate-to-{admin,edit,view}`, `view` is labelled into `edit` and `edit` into
//! `admin`, so anyone can extend them with a ClusterRole carrying the right
//! `rbac.authorization.k8s.io/aggregate-to-*` label.

use serde_json::{Value, json};

use crate::{PolicyRule, RbacAuthorizer};

const BOOTSTRAP_LABEL: &str = "kubernetes.io/bootstrapping";
const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "delete",
    "deletecollection",
    "patch",
    "update",
];

fn metadata(name: &str, extra_labels: &[(&str, &str)]) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert(BOOTSTRAP_LABEL.into(), json!("rbac-defaults"));
    for (k, v) in extra_labels {
        labels.insert((*k).into(), json!(v));
    }
    json!({
        "name": name,
        "labels": labels,
        "annotations": {AUTOUPDATE_ANNOTATION: "true"},
    })
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: &[PolicyRule]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": rules.iter().map(PolicyRule::to_json).collect::<Vec<_>>(),
    })
}

fn aggregated_role(name: &str, labels: &[(&str, &str)], selector_label: &str) -> Value {
    let mut role = cluster_role(name, labels, &[]);
    role["aggregationRule"] =
        json!({"clusterRoleSelectors": [{"matchLabels": {selector_label: "true"}}]});
    role
}

fn cluster_role_binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

fn user_role_binding(name: &str, role: &str, user: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
    })
}

/// The users of Flotilla's components (the CNs of their client certificates, issued by
/// `flotilla_pki`), each bound to the ClusterRole of the same name.
pub const SCHEDULER_USER: &str = "system:flotilla-scheduler";
pub const CONTROLLER_MANAGER_USER: &str = "system:flotilla-controller-manager";
pub const AGGREGATED_APISERVER_USER: &str = "system:flotilla-aggregated-apiserver";

/// Each component's ClusterRole, named after its user: what it needs and no more.
///
/// - The scheduler reads Clusters and writes ResourceBindings and ClusterResourceBindings (spec
///   and status), Events and its Lease. Nothing else: in particular not Secrets, where member
///   credentials live (`Cluster.spec.secretRef`).
/// - The controller-manager (as `deploy/controllers.yaml` grants it on a Kubernetes host):
///   the detector watches and claims templates of every kind and the binding controller
///   writes their status, the garbage collector deletes any kind and edits ownerReferences
///   (read, patch, update and delete on everything, but it creates only its own objects:
///   bindings, Works, execution namespaces, Leases, Events); the cluster controllers write
///   Cluster finalizers, taints and status; the execution controller reads member
///   credentials.
/// - The aggregated API server reads everything (merged reads serve any template kind, the
///   cluster proxy reads member credentials), asks the host to authorize its callers
///   (SubjectAccessReview, TokenReview), registers its APIServices and, as one of several
///   replicas, its own EndpointSlice of their Service (creating `karmada-system` if needed).
///   It writes nothing else.
pub fn component_roles() -> Vec<(&'static str, Vec<PolicyRule>)> {
    let lease_verbs = ["get", "list", "watch", "create", "update", "patch"];
    let event_verbs = ["create", "patch", "update"];
    let binding_verbs = ["get", "list", "watch", "patch", "update"];
    vec![
        (
            SCHEDULER_USER,
            vec![
                r(READ, "cluster.karmada.io", &["clusters", "clusters/status"]),
                r(
                    &binding_verbs,
                    "work.karmada.io",
                    &[
                        "resourcebindings",
                        "resourcebindings/status",
                        "clusterresourcebindings",
                        "clusterresourcebindings/status",
                    ],
                ),
                r(&event_verbs, "", &["events"]),
                r(&event_verbs, "events.k8s.io", &["events"]),
                r(&lease_verbs, "coordination.k8s.io", &["leases"]),
            ],
        ),
        (
            CONTROLLER_MANAGER_USER,
            vec![
                PolicyRule::resource(
                    &["get", "list", "watch", "patch", "update", "delete"],
                    &["*"],
                    &["*"],
                ),
                r(READ_WRITE, "work.karmada.io", &["*"]),
                r(
                    &["get", "list", "watch", "update", "patch"],
                    "cluster.karmada.io",
                    &["clusters", "clusters/status"],
                ),
                r(&["create"], "", &["namespaces"]),
                r(&lease_verbs, "coordination.k8s.io", &["leases"]),
                r(&event_verbs, "", &["events"]),
                r(&event_verbs, "events.k8s.io", &["events"]),
            ],
        ),
        (
            AGGREGATED_APISERVER_USER,
            vec![
                PolicyRule::resource(READ, &["*"], &["*"]),
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["subjectaccessreviews"],
                ),
                r(&["create"], "authentication.k8s.io", &["tokenreviews"]),
                r(READ_WRITE, "apiregistration.k8s.io", &["apiservices"]),
                r(READ_WRITE, "discovery.k8s.io", &["endpointslices"]),
                r(&["create"], "", &["namespaces"]),
                r(&event_verbs, "", &["events"]),
            ],
        ),
    ]
}

fn r(verbs: &[&str], group: &str, resources: &[&str]) -> PolicyRule {
    PolicyRule::resource(verbs, &[group], resources)
}

/// Read access to the namespaced application resources, secrets excepted (reading them would
/// reveal service account tokens and so more than "view").
fn view_rules() -> Vec<PolicyRule> {
    vec![
        r(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        r(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        r(READ, "", &["namespaces"]),
        r(READ, "discovery.k8s.io", &["endpointslices"]),
        r(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/status",
                "statefulsets/scale",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/status",
                "deployments/scale",
                "replicasets",
                "replicasets/status",
                "replicasets/scale",
            ],
        ),
        r(
            READ,
            "autoscaling",
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        r(
            READ,
            "batch",
            &["jobs", "jobs/status", "cronjobs", "cronjobs/status"],
        ),
        r(
            READ,
            "extensions",
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        r(
            READ,
            "policy",
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        r(
            READ,
            "networking.k8s.io",
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
        r(READ, "coordination.k8s.io", &["leases"]),
    ]
}

/// Write access to the namespaced application resources, plus the powerful pod subresources
/// and secrets (which is why "edit" is effectively able to act as any service account of
/// the namespace, and gets `impersonate` on them).
fn edit_rules() -> Vec<PolicyRule> {
    vec![
        r(
            READ,
            "",
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        r(&["impersonate"], "", &["serviceaccounts"]),
        r(
            WRITE,
            "",
            &[
                "pods",
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
            ],
        ),
        r(&["create"], "", &["pods/eviction"]),
        r(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        r(&["create"], "", &["serviceaccounts/token"]),
        r(
            WRITE,
            "apps",
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        r(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        r(WRITE, "batch", &["jobs", "cronjobs"]),
        r(
            WRITE,
            "extensions",
            &[
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "ingresses",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
                "networkpolicies",
            ],
        ),
        r(WRITE, "policy", &["poddisruptionbudgets"]),
        r(
            WRITE,
            "networking.k8s.io",
            &["networkpolicies", "ingresses"],
        ),
        r(WRITE, "coordination.k8s.io", &["leases"]),
    ]
}

/// What a namespace owner has beyond "edit": managing access within the namespace.
fn admin_rules() -> Vec<PolicyRule> {
    vec![
        r(
            &["create"],
            "authorization.k8s.io",
            &["localsubjectaccessreviews"],
        ),
        r(
            READ_WRITE,
            "rbac.authorization.k8s.io",
            &["roles", "rolebindings"],
        ),
    ]
}

/// The bootstrap ClusterRoles then ClusterRoleBindings, as `rbac.authorization.k8s.io/v1`
/// JSON, all labelled `kubernetes.io/bootstrapping=rbac-defaults` and annotated
/// `rbac.authorization.kubernetes.io/autoupdate=true`. The aggregated roles come with their
/// computed `rules` filled in, as kube's aggregation controller would write them.
pub fn bootstrap_policy() -> Vec<Value> {
    let discovery_urls = [
        "/api",
        "/api/*",
        "/apis",
        "/apis/*",
        "/healthz",
        "/livez",
        "/openapi",
        "/openapi/*",
        "/readyz",
        "/version",
        "/version/",
    ];
    let public_urls = ["/healthz", "/livez", "/readyz", "/version", "/version/"];
    // The service-account issuer's OIDC discovery documents, readable by service accounts.
    let issuer_discovery_urls = [
        "/.well-known/openid-configuration",
        "/.well-known/openid-configuration/",
        "/openid/v1/jwks",
        "/openid/v1/jwks/",
    ];
    let mut roles = vec![
        cluster_role(
            "cluster-admin",
            &[],
            &[
                PolicyRule::resource(&["*"], &["*"], &["*"]),
                PolicyRule::non_resource(&["*"], &["*"]),
            ],
        ),
        aggregated_role("admin", &[], AGGREGATE_TO_ADMIN),
        aggregated_role("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        aggregated_role("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            &admin_rules(),
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            &edit_rules(),
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            &view_rules(),
        ),
        cluster_role(
            "system:discovery",
            &[],
            &[PolicyRule::non_resource(&["get"], &discovery_urls)],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            &[
                r(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                r(
                    &["create"],
                    "authentication.k8s.io",
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            &[PolicyRule::non_resource(&["get"], &public_urls)],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            &[],
            &[PolicyRule::non_resource(&["get"], &issuer_discovery_urls)],
        ),
        // Bound to nobody by default, as in kube: binding it (with update on
        // certificatesigningrequests/approval) lets someone approve client certificates.
        cluster_role(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            &[],
            &[r(&["approve"], "certificates.k8s.io", &["signers"])
                .with_names(&["kubernetes.io/kube-apiserver-client"])],
        ),
    ];
    let components = component_roles();
    roles.extend(
        components
            .iter()
            .map(|(user, rules)| cluster_role(user, &[], rules)),
    );
    fill_aggregated_rules(&mut roles);
    roles.extend(
        components
            .iter()
            .map(|(user, _)| user_role_binding(user, user, user)),
    );
    roles.extend([
        cluster_role_binding("cluster-admin", "cluster-admin", &["system:masters"]),
        cluster_role_binding(
            "system:discovery",
            "system:discovery",
            &["system:authenticated"],
        ),
        cluster_role_binding(
            "system:basic-user",
            "system:basic-user",
            &["system:authenticated"],
        ),
        cluster_role_binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        cluster_role_binding(
            "system:service-account-issuer-discovery",
            "system:service-account-issuer-discovery",
            &["system:serviceaccounts"],
        ),
    ]);
    roles
}

/// Writes the aggregated roles' computed rules into their `rules` field.
fn fill_aggregated_rules(roles: &mut [Value]) {
    let authz = RbacAuthorizer::new();
    for role in roles.iter() {
        // Our own objects are well formed; one that were not would simply stay unfilled.
        let _ = authz.upsert("ClusterRole", role);
    }
    for role in roles.iter_mut() {
        let Some(name) = role["metadata"]["name"].as_str() else {
            continue;
        };
        if let Some(rules) = authz.aggregated_rules(name) {
            role["rules"] = Value::Array(rules.iter().map(PolicyRule::to_json).collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};

    #[test]
    fn objects_parse_as_kubernetes_types() {
        let objects = bootstrap_policy();
        let mut roles = Vec::new();
        let mut bindings = Vec::new();
        for obj in &objects {
            match obj["kind"].as_str().unwrap() {
                "ClusterRole" => {
                    roles.push(serde_json::from_value::<ClusterRole>(obj.clone()).unwrap())
                }
                "ClusterRoleBinding" => bindings
                    .push(serde_json::from_value::<ClusterRoleBinding>(obj.clone()).unwrap()),
                other => panic!("unexpected kind {other}"),
            }
        }
        // 12 of kube's and Flotilla's own; 3 for the components, each bound to its user.
        assert_eq!(roles.len(), 15);
        assert_eq!(bindings.len(), 8);
        for meta in roles
            .iter()
            .map(|r| &r.metadata)
            .chain(bindings.iter().map(|b| &b.metadata))
        {
            let labels = meta.labels.as_ref().unwrap();
            assert_eq!(labels[BOOTSTRAP_LABEL], "rbac-defaults", "{:?}", meta.name);
            assert_eq!(
                meta.annotations.as_ref().unwrap()[AUTOUPDATE_ANNOTATION],
                "true"
            );
        }

        let admin_binding = bindings
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some("cluster-admin"))
            .unwrap();
        assert_eq!(admin_binding.role_ref.kind, "ClusterRole");
        assert_eq!(admin_binding.role_ref.name, "cluster-admin");
        let subjects = admin_binding.subjects.as_ref().unwrap();
        assert_eq!(subjects.len(), 1);
        assert_eq!(
            (subjects[0].kind.as_str(), subjects[0].name.as_str()),
            ("Group", "system:masters")
        );

        let cluster_admin = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some("cluster-admin"))
            .unwrap();
        let rules = cluster_admin.rules.as_ref().unwrap();
        assert_eq!(rules[0].verbs, vec!["*"]);
        assert_eq!(rules[0].api_groups.as_deref(), Some(&["*".to_string()][..]));
        assert_eq!(
            rules[1].non_resource_urls.as_deref(),
            Some(&["*".to_string()][..])
        );

        let view = roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some("view"))
            .unwrap();
        let selectors = view
            .aggregation_rule
            .as_ref()
            .unwrap()
            .cluster_role_selectors
            .as_ref()
            .unwrap();
        assert_eq!(
            selectors[0].match_labels.as_ref().unwrap()[AGGREGATE_TO_VIEW],
            "true"
        );
        assert_eq!(
            view.metadata.labels.as_ref().unwrap()[AGGREGATE_TO_EDIT],
            "true"
        );
        let view_rules = view.rules.as_ref().unwrap();
        assert!(view_rules.iter().any(|r| {
            r.resources
                .as_ref()
                .is_some_and(|rs| rs.contains(&"pods".to_string()))
        }));
        assert!(!view_rules.iter().any(|r| {
            r.resources
                .as_ref()
                .is_some_and(|rs| rs.contains(&"secrets".to_string()))
        }));

        let public = bindings
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some("system:public-info-viewer"))
            .unwrap();
        let groups: Vec<&str> = public
            .subjects
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(groups, ["system:authenticated", "system:unauthenticated"]);
    }

    #[test]
    fn policy_gives_masters_everything_and_others_the_basics() {
        let authz = RbacAuthorizer::new();
        for obj in bootstrap_policy() {
            authz.upsert(obj["kind"].as_str().unwrap(), &obj).unwrap();
        }
        // Bypass the superuser shortcut: the binding alone must grant everything to the group.
        let masters = vec!["system:masters".to_string()];
        let root = crate::UserRef {
            name: "root",
            groups: &masters,
        };
        let granted = authz.rules_from_bindings(&root, "");
        assert!(granted.errors.is_empty());
        assert!(
            granted
                .rules
                .contains(&PolicyRule::resource(&["*"], &["*"], &["*"]))
        );
        assert!(
            granted
                .rules
                .contains(&PolicyRule::non_resource(&["*"], &["*"]))
        );
        // Without the group, the bindings give only discovery and self-review.
        let nobody = crate::UserRef {
            name: "root",
            groups: &[],
        };
        assert!(authz.rules_from_bindings(&nobody, "").rules.is_empty());
        let authenticated = vec!["system:authenticated".to_string()];
        let basic = crate::UserRef {
            name: "someone",
            groups: &authenticated,
        };
        let rules = authz.rules_from_bindings(&basic, "default").rules;
        assert!(
            rules
                .iter()
                .all(|r| r.verbs == ["get"] || r.verbs == ["create"]),
            "{rules:?}"
        );
    }

    #[test]
    fn each_component_gets_its_role_and_only_the_scheduler_is_kept_from_secrets() {
        use crate::{Attributes, UserRef};
        let authz = RbacAuthorizer::new();
        for obj in bootstrap_policy() {
            authz.upsert(obj["kind"].as_str().unwrap(), &obj).unwrap();
        }
        let groups = vec![
            "system:flotilla:components".to_string(),
            "system:authenticated".to_string(),
        ];
        let allowed = |user: &str, verb: &str, group: &str, resource: &str, sub: &str| {
            let attrs = Attributes {
                user: UserRef {
                    name: user,
                    groups: &groups,
                },
                verb,
                resource_request: true,
                api_group: group,
                resource,
                subresource: sub,
                namespace: flotilla_names::karmada::NAMESPACE_KARMADA_CLUSTER,
                name: "member1",
                path: "",
            };
            authz.authorize(&attrs).is_allowed()
        };
        for verb in ["get", "list", "watch"] {
            assert!(!allowed(SCHEDULER_USER, verb, "", "secrets", ""), "{verb}");
            assert!(allowed(CONTROLLER_MANAGER_USER, verb, "", "secrets", ""));
            assert!(allowed(AGGREGATED_APISERVER_USER, verb, "", "secrets", ""));
        }
        assert!(allowed(
            SCHEDULER_USER,
            "patch",
            "work.karmada.io",
            "resourcebindings",
            "status"
        ));
        assert!(allowed(
            SCHEDULER_USER,
            "watch",
            "cluster.karmada.io",
            "clusters",
            ""
        ));
        assert!(allowed(
            SCHEDULER_USER,
            "update",
            "coordination.k8s.io",
            "leases",
            ""
        ));
        assert!(!allowed(
            SCHEDULER_USER,
            "create",
            "work.karmada.io",
            "works",
            ""
        ));
        assert!(!allowed(SCHEDULER_USER, "get", "", "configmaps", ""));
        assert!(!allowed(
            AGGREGATED_APISERVER_USER,
            "create",
            "",
            "secrets",
            ""
        ));
        assert!(!allowed(
            AGGREGATED_APISERVER_USER,
            "delete",
            "apps",
            "deployments",
            ""
        ));
        assert!(allowed(
            CONTROLLER_MANAGER_USER,
            "create",
            "work.karmada.io",
            "works",
            ""
        ));
        assert!(allowed(
            CONTROLLER_MANAGER_USER,
            "delete",
            "apps",
            "deployments",
            ""
        ));
        assert!(allowed(
            CONTROLLER_MANAGER_USER,
            "create",
            "",
            "namespaces",
            ""
        ));
        assert!(!allowed(
            CONTROLLER_MANAGER_USER,
            "create",
            "",
            "secrets",
            ""
        ));
        assert!(!allowed(
            CONTROLLER_MANAGER_USER,
            "create",
            "apps",
            "deployments",
            ""
        ));
        // Another user in the components group gets none of it: the roles bind users.
        assert!(!allowed(
            "system:flotilla-someone",
            "get",
            "",
            "secrets",
            ""
        ));
        assert!(!allowed(
            "system:flotilla-someone",
            "list",
            "work.karmada.io",
            "resourcebindings",
            ""
        ));
    }
}
