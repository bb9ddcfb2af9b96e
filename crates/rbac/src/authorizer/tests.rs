use serde_json::json;

use super::*;
use crate::bootstrap_policy;

fn load(authz: &RbacAuthorizer, objects: &[Value]) {
    for obj in objects {
        let kind = obj["kind"].as_str().unwrap();
        authz.upsert(kind, obj).unwrap();
    }
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn role_binding(ns: &str, name: &str, role_kind: &str, role: &str, subjects: Value) -> Value {
    json!({
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": subjects,
    })
}

fn cluster_binding(name: &str, role: &str, subjects: Value) -> Value {
    json!({
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

fn user(name: &str) -> Value {
    json!([{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name}])
}

/// One request: `path` non-empty makes it a non-resource request.
#[derive(Clone, Copy)]
struct Req<'a> {
    user: &'a str,
    groups: &'a [&'a str],
    verb: &'a str,
    group: &'a str,
    resource: &'a str,
    sub: &'a str,
    ns: &'a str,
    name: &'a str,
    path: &'a str,
}

const BASE: Req<'static> = Req {
    user: "",
    groups: &["system:authenticated"],
    verb: "get",
    group: "",
    resource: "",
    sub: "",
    ns: "",
    name: "",
    path: "",
};

fn decide(authz: &RbacAuthorizer, r: Req) -> Decision {
    let groups: Vec<String> = r.groups.iter().map(|g| g.to_string()).collect();
    let attrs = Attributes {
        user: UserRef {
            name: r.user,
            groups: &groups,
        },
        verb: r.verb,
        resource_request: r.path.is_empty(),
        api_group: r.group,
        resource: r.resource,
        subresource: r.sub,
        namespace: r.ns,
        name: r.name,
        path: r.path,
    };
    authz.authorize(&attrs)
}

fn fixture() -> RbacAuthorizer {
    let authz = RbacAuthorizer::new();
    load(&authz, &bootstrap_policy());
    load(
        &authz,
        &[
            // alice may view in dev only.
            role_binding("dev", "alice-view", "ClusterRole", "view", user("alice")),
            // carol may read and update one ConfigMap.
            role(
                "dev",
                "config-editor",
                json!([{"apiGroups": [""], "resources": ["configmaps"],
                        "resourceNames": ["app-config"], "verbs": ["get", "update", "list"]}]),
            ),
            role_binding(
                "dev",
                "carol-config",
                "Role",
                "config-editor",
                user("carol"),
            ),
            // dave: subresources only.
            role(
                "dev",
                "debugger",
                json!([
                    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
                    {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["update", "patch"]},
                    {"apiGroups": [""], "resources": ["services/*"], "verbs": ["get"]},
                ]),
            ),
            role_binding("dev", "dave-debug", "Role", "debugger", user("dave")),
            // The ops-team group may do anything in apps, everywhere.
            cluster_role(
                "apps-admin",
                json!([{"apiGroups": ["apps"], "resources": ["*"], "verbs": ["*"]}]),
            ),
            cluster_binding(
                "ops-apps",
                "apps-admin",
                json!([{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "ops-team"}]),
            ),
            // prom may scrape.
            cluster_role(
                "metrics-reader",
                json!([{"nonResourceURLs": ["/metrics", "/logs/*"], "verbs": ["get"]}]),
            ),
            cluster_binding("prom-metrics", "metrics-reader", user("prom")),
            // Service accounts: namespace defaulted from the RoleBinding, explicit in the
            // ClusterRoleBinding, and an unqualified one in a ClusterRoleBinding (matches nobody).
            role_binding(
                "ci",
                "deployer-edit",
                "ClusterRole",
                "edit",
                json!([{"kind": "ServiceAccount", "name": "deployer"}]),
            ),
            cluster_binding(
                "watcher-view",
                "view",
                json!([{"kind": "ServiceAccount", "name": "watcher", "namespace": "monitoring"}]),
            ),
            cluster_binding(
                "nobody-admin",
                "cluster-admin",
                json!([{"kind": "ServiceAccount", "name": "default"}]),
            ),
            // Every service account of ci may list namespaces.
            cluster_role(
                "ns-lister",
                json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]}]),
            ),
            cluster_binding(
                "ci-sas-ns",
                "ns-lister",
                json!([{"kind": "Group", "name": "system:serviceaccounts:ci"}]),
            ),
            // A binding to a role that does not exist.
            role_binding(
                "dev",
                "broken",
                "ClusterRole",
                "does-not-exist",
                user("erin"),
            ),
        ],
    );
    authz
}

#[test]
fn table() {
    let authz = fixture();
    let sa = &[
        "system:serviceaccounts",
        "system:serviceaccounts:ci",
        "system:authenticated",
    ];
    #[rustfmt::skip]
    let cases: &[(&str, Req, bool)] = &[
        // namespaced view
        ("view: list pods in dev", Req { user: "alice", verb: "list", resource: "pods", ns: "dev", ..BASE }, true),
        ("view: watch deployments in dev", Req { user: "alice", verb: "watch", group: "apps", resource: "deployments", ns: "dev", ..BASE }, true),
        ("view: get a job", Req { user: "alice", group: "batch", resource: "jobs", ns: "dev", name: "j", ..BASE }, true),
        ("view: pod logs", Req { user: "alice", resource: "pods", sub: "log", ns: "dev", name: "p", ..BASE }, true),
        ("view: events", Req { user: "alice", verb: "list", resource: "events", ns: "dev", ..BASE }, true),
        ("view: other namespace", Req { user: "alice", verb: "list", resource: "pods", ns: "prod", ..BASE }, false),
        ("view: all namespaces", Req { user: "alice", verb: "list", resource: "pods", ..BASE }, false),
        ("view: create denied", Req { user: "alice", verb: "create", resource: "pods", ns: "dev", ..BASE }, false),
        ("view: delete denied", Req { user: "alice", verb: "delete", group: "apps", resource: "deployments", ns: "dev", name: "web", ..BASE }, false),
        ("view: no secrets", Req { user: "alice", verb: "list", resource: "secrets", ns: "dev", ..BASE }, false),
        ("view: no secret by name", Req { user: "alice", resource: "secrets", ns: "dev", name: "s", ..BASE }, false),
        ("view: no exec", Req { user: "alice", verb: "create", resource: "pods", sub: "exec", ns: "dev", name: "p", ..BASE }, false),
        ("view: no roles", Req { user: "alice", verb: "list", group: "rbac.authorization.k8s.io", resource: "roles", ns: "dev", ..BASE }, false),
        ("discovery for everyone", Req { user: "alice", path: "/apis/apps/v1", ..BASE }, true),
        ("version for everyone", Req { user: "nobody", path: "/version", ..BASE }, true),
        ("public info unauthenticated", Req { user: "system:anonymous", groups: &["system:unauthenticated"], path: "/healthz", ..BASE }, true),
        ("no discovery unauthenticated", Req { user: "system:anonymous", groups: &["system:unauthenticated"], path: "/apis", ..BASE }, false),
        ("basic user reviews self", Req { user: "zed", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectaccessreviews", ..BASE }, true),
        ("basic user rules review", Req { user: "zed", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectrulesreviews", ..BASE }, true),
        ("no subject access reviews", Req { user: "zed", verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews", ..BASE }, false),
        // resourceNames
        ("names: get named", Req { user: "carol", resource: "configmaps", ns: "dev", name: "app-config", ..BASE }, true),
        ("names: update named", Req { user: "carol", verb: "update", resource: "configmaps", ns: "dev", name: "app-config", ..BASE }, true),
        ("names: other name", Req { user: "carol", resource: "configmaps", ns: "dev", name: "other", ..BASE }, false),
        ("names: list without name", Req { user: "carol", verb: "list", resource: "configmaps", ns: "dev", ..BASE }, false),
        ("names: delete not granted", Req { user: "carol", verb: "delete", resource: "configmaps", ns: "dev", name: "app-config", ..BASE }, false),
        // subresources
        ("sub: pods/log", Req { user: "dave", resource: "pods", sub: "log", ns: "dev", name: "p", ..BASE }, true),
        ("sub: not the pod", Req { user: "dave", resource: "pods", ns: "dev", name: "p", ..BASE }, false),
        ("sub: not exec", Req { user: "dave", resource: "pods", sub: "exec", ns: "dev", name: "p", ..BASE }, false),
        ("sub: */scale deployments", Req { user: "dave", verb: "patch", group: "apps", resource: "deployments", sub: "scale", ns: "dev", name: "web", ..BASE }, true),
        ("sub: */scale statefulsets", Req { user: "dave", verb: "update", group: "apps", resource: "statefulsets", sub: "scale", ns: "dev", name: "db", ..BASE }, true),
        ("sub: */scale not status", Req { user: "dave", verb: "update", group: "apps", resource: "deployments", sub: "status", ns: "dev", name: "web", ..BASE }, false),
        ("sub: services/* proxy", Req { user: "dave", resource: "services", sub: "proxy", ns: "dev", name: "s", ..BASE }, true),
        ("sub: services/* not services", Req { user: "dave", resource: "services", ns: "dev", name: "s", ..BASE }, false),
        // wildcards via a group
        ("wild: delete deployment anywhere", Req { user: "olga", groups: &["ops-team"], verb: "delete", group: "apps", resource: "deployments", ns: "prod", name: "web", ..BASE }, true),
        ("wild: custom verb", Req { user: "olga", groups: &["ops-team"], verb: "frobnicate", group: "apps", resource: "replicasets", ns: "prod", ..BASE }, true),
        ("wild: cluster scope", Req { user: "olga", groups: &["ops-team"], verb: "list", group: "apps", resource: "deployments", ..BASE }, true),
        ("wild: subresource", Req { user: "olga", groups: &["ops-team"], verb: "update", group: "apps", resource: "deployments", sub: "scale", ns: "x", name: "w", ..BASE }, true),
        ("wild: other group", Req { user: "olga", groups: &["ops-team"], verb: "list", group: "batch", resource: "jobs", ns: "prod", ..BASE }, false),
        ("wild: not the user name", Req { user: "ops-team", groups: &[], verb: "list", group: "apps", resource: "deployments", ..BASE }, false),
        // non-resource URLs
        ("url: exact", Req { user: "prom", path: "/metrics", ..BASE }, true),
        ("url: prefix", Req { user: "prom", path: "/logs/kube-apiserver.log", ..BASE }, true),
        ("url: wrong verb", Req { user: "prom", verb: "post", path: "/metrics", ..BASE }, false),
        ("url: not granted", Req { user: "alice", path: "/metrics", ..BASE }, false),
        ("url: no resources", Req { user: "prom", verb: "list", resource: "pods", ns: "dev", ..BASE }, false),
        // service accounts
        ("sa: edit in own namespace", Req { user: "system:serviceaccount:ci:deployer", groups: sa, verb: "create", group: "apps", resource: "deployments", ns: "ci", ..BASE }, true),
        ("sa: secrets under edit", Req { user: "system:serviceaccount:ci:deployer", groups: sa, verb: "update", resource: "secrets", ns: "ci", name: "s", ..BASE }, true),
        ("sa: no roles under edit", Req { user: "system:serviceaccount:ci:deployer", groups: sa, verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", ns: "ci", ..BASE }, false),
        ("sa: not in other namespace", Req { user: "system:serviceaccount:ci:deployer", groups: sa, verb: "create", group: "apps", resource: "deployments", ns: "dev", ..BASE }, false),
        ("sa: same name other namespace", Req { user: "system:serviceaccount:dev:deployer", groups: &["system:serviceaccounts:dev"], verb: "create", group: "apps", resource: "deployments", ns: "ci", ..BASE }, false),
        ("sa: explicit namespace, cluster-wide view", Req { user: "system:serviceaccount:monitoring:watcher", verb: "list", resource: "pods", ns: "anything", ..BASE }, true),
        ("sa: unqualified in ClusterRoleBinding", Req { user: "system:serviceaccount:default:default", verb: "delete", resource: "nodes", name: "n", ..BASE }, false),
        ("sa group", Req { user: "system:serviceaccount:ci:other", groups: sa, verb: "list", resource: "namespaces", ..BASE }, true),
        // superuser
        ("superuser anything", Req { user: "root", groups: &["system:masters"], verb: "escalate", group: "rbac.authorization.k8s.io", resource: "clusterroles", name: "x", ..BASE }, true),
        ("superuser any path", Req { user: "root", groups: &["system:masters"], verb: "delete", path: "/whatever", ..BASE }, true),
        // missing role
        ("missing role grants nothing", Req { user: "erin", verb: "list", resource: "pods", ns: "dev", ..BASE }, false),
        ("missing role, discovery still fine", Req { user: "erin", path: "/api", ..BASE }, true),
    ];
    for (what, req, want) in cases {
        let got = decide(&authz, *req);
        assert_eq!(got.is_allowed(), *want, "{what}: {got:?}");
    }
}

#[test]
fn reasons() {
    let authz = fixture();
    let list_pods = Req {
        user: "alice",
        verb: "list",
        resource: "pods",
        ns: "dev",
        ..BASE
    };
    assert_eq!(
        decide(&authz, list_pods),
        Decision::Allow {
            reason: r#"RBAC: allowed by RoleBinding "alice-view/dev" of ClusterRole "view" to User "alice""#.into()
        }
    );
    let sa = Req {
        user: "system:serviceaccount:ci:deployer",
        verb: "create",
        resource: "pods",
        ns: "ci",
        ..BASE
    };
    assert_eq!(
        decide(&authz, sa).reason(),
        r#"RBAC: allowed by RoleBinding "deployer-edit/ci" of ClusterRole "edit" to ServiceAccount "deployer/ci""#
    );
    let masters = Req {
        user: "root",
        groups: &["system:masters"],
        verb: "list",
        resource: "pods",
        ..BASE
    };
    assert!(decide(&authz, masters).is_allowed());
    let disco = Req {
        user: "x",
        path: "/api",
        ..BASE
    };
    assert_eq!(
        decide(&authz, disco).reason(),
        r#"RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated""#
    );
    let ops = Req {
        user: "olga",
        groups: &["ops-team"],
        verb: "list",
        group: "apps",
        resource: "deployments",
        ..BASE
    };
    assert_eq!(
        decide(&authz, ops).reason(),
        r#"RBAC: allowed by ClusterRoleBinding "ops-apps" of ClusterRole "apps-admin" to Group "ops-team""#
    );
    // Plain denial: no reason, like kube.
    let other_ns = Req {
        ns: "prod",
        ..list_pods
    };
    assert_eq!(
        decide(&authz, other_ns),
        Decision::Deny {
            reason: String::new()
        }
    );
    // A missing role is reported but is not an error.
    let erin = Req {
        user: "erin",
        ..list_pods
    };
    assert_eq!(
        decide(&authz, erin),
        Decision::Deny {
            reason: r#"RBAC: clusterrole.rbac.authorization.k8s.io "does-not-exist" not found"#
                .into()
        }
    );
    // Several problems are listed together.
    load(
        &authz,
        &[role_binding(
            "dev",
            "broken-2",
            "Role",
            "gone",
            user("erin"),
        )],
    );
    assert_eq!(
        decide(&authz, erin).reason(),
        r#"RBAC: [clusterrole.rbac.authorization.k8s.io "does-not-exist" not found, role.rbac.authorization.k8s.io "gone" not found]"#
    );
    // Creating the role later makes the binding work.
    load(
        &authz,
        &[role(
            "dev",
            "gone",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]),
        )],
    );
    assert_eq!(
        decide(&authz, erin).reason(),
        r#"RBAC: allowed by RoleBinding "broken-2/dev" of Role "gone" to User "erin""#
    );
}

#[test]
fn role_in_other_namespace_or_from_cluster_binding_grants_nothing() {
    let authz = RbacAuthorizer::new();
    let rules = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    load(
        &authz,
        &[
            role("a", "reader", rules.clone()),
            role_binding("b", "rb", "Role", "reader", user("u")),
            json!({"kind": "ClusterRoleBinding", "metadata": {"name": "crb"},
                   "roleRef": {"kind": "Role", "name": "reader"}, "subjects": user("v")}),
        ],
    );
    let req = Req {
        user: "u",
        resource: "pods",
        ns: "b",
        name: "p",
        ..BASE
    };
    assert!(!decide(&authz, req).is_allowed());
    assert!(!decide(&authz, Req { ns: "a", ..req }).is_allowed());
    assert!(
        !decide(
            &authz,
            Req {
                user: "v",
                ns: "a",
                ..req
            }
        )
        .is_allowed()
    );
    // A ClusterRole bound by a RoleBinding grants only in the binding's namespace.
    load(
        &authz,
        &[
            cluster_role("pod-reader", rules),
            role_binding("b", "rb2", "ClusterRole", "pod-reader", user("u")),
        ],
    );
    assert!(decide(&authz, req).is_allowed());
    assert!(!decide(&authz, Req { ns: "a", ..req }).is_allowed());
    assert!(!decide(&authz, Req { ns: "", ..req }).is_allowed());
}

#[test]
fn updates_and_removals_keep_the_index_right() {
    let authz = fixture();
    let req = Req {
        user: "alice",
        verb: "list",
        resource: "pods",
        ns: "dev",
        ..BASE
    };
    assert!(decide(&authz, req).is_allowed());
    // Re-pointing the binding at someone else revokes alice.
    load(
        &authz,
        &[role_binding(
            "dev",
            "alice-view",
            "ClusterRole",
            "view",
            user("bob"),
        )],
    );
    assert!(!decide(&authz, req).is_allowed());
    assert!(decide(&authz, Req { user: "bob", ..req }).is_allowed());
    assert!(authz.remove("RoleBinding", Some("dev"), "alice-view"));
    assert!(!authz.remove("RoleBinding", Some("dev"), "alice-view"));
    assert!(!decide(&authz, Req { user: "bob", ..req }).is_allowed());

    // Editing a role's rules takes effect for existing bindings.
    let carol = Req {
        user: "carol",
        verb: "delete",
        resource: "configmaps",
        ns: "dev",
        name: "app-config",
        ..BASE
    };
    assert!(!decide(&authz, carol).is_allowed());
    load(
        &authz,
        &[role(
            "dev",
            "config-editor",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["delete"]}]),
        )],
    );
    assert!(decide(&authz, carol).is_allowed());
    assert!(authz.remove("Role", Some("dev"), "config-editor"));
    assert!(!decide(&authz, carol).is_allowed());

    let olga = Req {
        user: "olga",
        groups: &["ops-team"],
        verb: "list",
        group: "apps",
        resource: "deployments",
        ..BASE
    };
    assert!(decide(&authz, olga).is_allowed());
    assert!(authz.remove("ClusterRole", None, "apps-admin"));
    assert!(!decide(&authz, olga).is_allowed());
    assert!(authz.remove("ClusterRoleBinding", None, "ops-apps"));
    assert!(!authz.remove("Nonsense", None, "x"));

    authz.clear();
    assert!(
        !decide(
            &authz,
            Req {
                user: "x",
                path: "/api",
                ..BASE
            }
        )
        .is_allowed()
    );
}

#[test]
fn aggregation_follows_selected_roles() {
    let authz = RbacAuthorizer::new();
    let label = "example.com/aggregate-to-monitoring";
    load(
        &authz,
        &[
            json!({"kind": "ClusterRole", "metadata": {"name": "monitoring"},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {label: "true"}}]},
                   // Ignored: an aggregated role's rules are the selected roles' rules.
                   "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}]}),
            cluster_binding("frank-monitoring", "monitoring", user("frank")),
        ],
    );
    let pods = Req {
        user: "frank",
        verb: "list",
        resource: "pods",
        ns: "x",
        ..BASE
    };
    let nodes = Req {
        user: "frank",
        verb: "list",
        resource: "nodes",
        ..BASE
    };
    let secrets = Req {
        user: "frank",
        resource: "secrets",
        ns: "x",
        name: "s",
        ..BASE
    };
    assert!(!decide(&authz, pods).is_allowed());
    assert!(!decide(&authz, secrets).is_allowed());
    assert_eq!(authz.aggregated_rules("monitoring"), Some(vec![]));

    // A role added later is picked up.
    let pods_role = json!({"kind": "ClusterRole",
        "metadata": {"name": "mon-pods", "labels": {label: "true"}},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]});
    load(&authz, &[pods_role]);
    assert!(decide(&authz, pods).is_allowed());
    assert!(!decide(&authz, nodes).is_allowed());
    assert_eq!(
        decide(&authz, pods).reason(),
        r#"RBAC: allowed by ClusterRoleBinding "frank-monitoring" of ClusterRole "monitoring" to User "frank""#
    );

    // A second one, itself aggregated: chains resolve whatever the order of writes.
    load(
        &authz,
        &[
            json!({"kind": "ClusterRole",
                   "metadata": {"name": "a-nodes", "labels": {label: "true"}},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/nodes": "true"}}]}}),
            json!({"kind": "ClusterRole",
                   "metadata": {"name": "nodes-reader", "labels": {"example.com/nodes": "true"}},
                   "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]}),
        ],
    );
    assert!(decide(&authz, nodes).is_allowed());
    assert_eq!(
        authz.aggregated_rules("monitoring").unwrap(),
        vec![
            PolicyRule::resource(&["list"], &[""], &["nodes"]),
            PolicyRule::resource(&["list", "watch"], &[""], &["pods"]),
        ]
    );

    // Changing the selected role's rules or labels, or deleting it, updates the aggregate.
    load(
        &authz,
        &[json!({"kind": "ClusterRole",
                 "metadata": {"name": "nodes-reader", "labels": {"example.com/nodes": "true"}},
                 "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]})],
    );
    assert!(!decide(&authz, nodes).is_allowed());
    assert!(
        decide(
            &authz,
            Req {
                verb: "get",
                name: "n",
                ..nodes
            }
        )
        .is_allowed()
    );
    load(
        &authz,
        &[
            json!({"kind": "ClusterRole", "metadata": {"name": "mon-pods"},
                 "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]}]}),
        ],
    );
    assert!(!decide(&authz, pods).is_allowed());
    authz.remove("ClusterRole", None, "nodes-reader");
    assert!(
        !decide(
            &authz,
            Req {
                verb: "get",
                name: "n",
                ..nodes
            }
        )
        .is_allowed()
    );
    assert_eq!(authz.aggregated_rules("monitoring"), Some(vec![]));
    assert_eq!(authz.aggregated_rules("mon-pods"), None);
}

#[test]
fn aggregation_cycles_settle() {
    let authz = RbacAuthorizer::new();
    load(
        &authz,
        &[
            json!({"kind": "ClusterRole", "metadata": {"name": "a", "labels": {"to-b": "true"}},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-a": "true"}}]}}),
            json!({"kind": "ClusterRole", "metadata": {"name": "b", "labels": {"to-a": "true"}},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"to-b": "true"}}]}}),
            json!({"kind": "ClusterRole", "metadata": {"name": "leaf-a", "labels": {"to-a": "true"}},
                   "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
            json!({"kind": "ClusterRole", "metadata": {"name": "leaf-b", "labels": {"to-b": "true"}},
                   "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}]}),
        ],
    );
    let mut a = authz.aggregated_rules("a").unwrap();
    let mut b = authz.aggregated_rules("b").unwrap();
    a.sort_by_key(|r| r.resources.clone());
    b.sort_by_key(|r| r.resources.clone());
    assert_eq!(a.len(), 2);
    assert_eq!(a, b);
}

#[test]
fn bootstrap_roles_aggregate_like_kube() {
    let authz = RbacAuthorizer::new();
    load(&authz, &bootstrap_policy());
    let view = authz.aggregated_rules("view").unwrap();
    let edit = authz.aggregated_rules("edit").unwrap();
    let admin = authz.aggregated_rules("admin").unwrap();
    assert!(!view.is_empty());
    assert!(view.iter().all(|r| edit.contains(r)), "edit includes view");
    assert!(
        edit.iter().all(|r| admin.contains(r)),
        "admin includes edit"
    );
    assert!(admin.len() > edit.len() && edit.len() > view.len());
    // The rules written into the bootstrap objects are the computed ones.
    for obj in bootstrap_policy() {
        let name = obj["metadata"]["name"].as_str().unwrap();
        if obj.get("aggregationRule").is_some() {
            let written = rules_of(&obj).unwrap();
            assert_eq!(Some(written), authz.aggregated_rules(name), "{name}");
        }
    }
}

#[test]
fn invalid_objects_are_refused_and_change_nothing() {
    let authz = fixture();
    let bad: &[(&str, Value)] = &[
        ("Secret", json!({"metadata": {"name": "x"}})),
        ("Role", json!({"metadata": {"name": "x"}})),
        ("RoleBinding", json!({"metadata": {"namespace": "dev"}})),
        (
            "ClusterRole",
            json!({"metadata": {"name": "view"}, "rules": [{"verbs": "get"}]}),
        ),
        (
            "ClusterRole",
            json!({"metadata": {"name": "view"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchExpressions": [{"key": "a", "operator": "Bogus"}]}]}}),
        ),
        (
            "ClusterRoleBinding",
            json!({"metadata": {"name": "x"}, "subjects": []}),
        ),
        (
            "RoleBinding",
            json!({"metadata": {"name": "alice-view", "namespace": "dev"},
            "roleRef": {"kind": "ClusterRole", "name": "view"}, "subjects": [{"kind": "User"}]}),
        ),
    ];
    for (kind, obj) in bad {
        assert!(authz.upsert(kind, obj).is_err(), "{kind} {obj}");
    }
    assert!(matches!(
        authz.upsert("Role", &json!({"metadata": {"name": "x"}})),
        Err(RbacError::MissingNamespace { .. })
    ));
    let req = Req {
        user: "alice",
        verb: "list",
        resource: "pods",
        ns: "dev",
        ..BASE
    };
    assert!(decide(&authz, req).is_allowed());
}

#[test]
fn rules_review_and_escalation() {
    let authz = fixture();
    let groups = vec!["system:authenticated".to_string()];
    let carol = UserRef {
        name: "carol",
        groups: &groups,
    };
    let rules = authz.rules_for(&carol, "dev");
    assert!(rules.errors.is_empty());
    assert!(
        rules.rules.contains(
            &PolicyRule::resource(&["get", "update", "list"], &[""], &["configmaps"])
                .with_names(&["app-config"])
        )
    );
    let status = rules.to_review_status();
    assert_eq!(status["incomplete"], false);
    assert!(
        status["nonResourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nonResourceURLs"][0] == "/api")
    );
    assert!(
        status["resourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["resources"][0] == "selfsubjectaccessreviews")
    );
    // Outside dev carol has only the cluster-wide basics.
    assert!(
        !authz
            .rules_for(&carol, "prod")
            .rules
            .iter()
            .any(|r| r.resources.contains(&"configmaps".to_string()))
    );

    let erin = UserRef {
        name: "erin",
        groups: &groups,
    };
    let status = authz.rules_for(&erin, "dev").to_review_status();
    assert_eq!(status["incomplete"], true);
    assert_eq!(
        status["evaluationError"],
        r#"clusterrole.rbac.authorization.k8s.io "does-not-exist" not found"#
    );

    // carol can hand out what she holds, not more.
    let same =
        vec![PolicyRule::resource(&["get"], &[""], &["configmaps"]).with_names(&["app-config"])];
    assert_eq!(authz.escalation_check(&carol, "dev", &same), Ok(()));
    let more = vec![PolicyRule::resource(&["get"], &[""], &["configmaps"])];
    assert_eq!(
        authz.escalation_check(&carol, "dev", &more),
        Err(more.clone())
    );
    assert!(authz.escalation_check(&carol, "prod", &same).is_err());
    let masters = vec!["system:masters".to_string()];
    let root = UserRef {
        name: "root",
        groups: &masters,
    };
    assert_eq!(authz.escalation_check(&root, "", &more), Ok(()));
    // Binding `view` needs everything view grants: alice holds it in dev only.
    let alice = UserRef {
        name: "alice",
        groups: &groups,
    };
    let view = authz.role_rules("ClusterRole", "", "view").unwrap();
    assert_eq!(authz.escalation_check(&alice, "dev", &view), Ok(()));
    assert!(authz.escalation_check(&alice, "prod", &view).is_err());
    assert_eq!(authz.role_rules("Role", "dev", "nope"), None);
    assert!(authz.role_rules("Role", "dev", "debugger").is_some());
}

#[test]
fn shared_between_threads() {
    let authz = Arc::new(fixture());
    let writer = {
        let authz = Arc::clone(&authz);
        std::thread::spawn(move || {
            for i in 0..200 {
                let name = format!("b{i}");
                authz
                    .upsert(
                        "RoleBinding",
                        &role_binding("t", &name, "ClusterRole", "view", user("t")),
                    )
                    .unwrap();
            }
        })
    };
    for _ in 0..200 {
        let _ = decide(
            &authz,
            Req {
                user: "alice",
                verb: "list",
                resource: "pods",
                ns: "dev",
                ..BASE
            },
        );
    }
    writer.join().unwrap();
    let req = Req {
        user: "t",
        verb: "list",
        resource: "pods",
        ns: "t",
        ..BASE
    };
    assert_eq!(
        decide(&authz, req).reason(),
        r#"RBAC: allowed by RoleBinding "b0/t" of ClusterRole "view" to User "t""#
    );
}
