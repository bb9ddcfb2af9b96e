//! Which webhooks a request calls, by kube-apiserver's rules:
//!
//! - a rule matches when the operation, group, version, resource (with `/subresource`, `*`,
//!   `*/*`, `resource/*` and `*/subresource` forms) and scope all match;
//! - under `matchPolicy: Equivalent` a rule naming another served version of the same
//!   group and resource also matches, and the webhook is sent the object in that version;
//! - `namespaceSelector` is checked against the labels of the request's namespace (of the
//!   Namespace itself for namespace requests) and always holds for other cluster-scoped
//!   objects;
//! - `objectSelector` holds when the new or the old object's labels match.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::webhook::{Rule, Webhook};

/// The admission operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
    /// The `kind` of the request's options object.
    pub fn options_kind(self) -> &'static str {
        match self {
            Operation::Create => "CreateOptions",
            Operation::Update => "UpdateOptions",
            Operation::Delete => "DeleteOptions",
            Operation::Connect => "ConnectOptions",
        }
    }
}

/// The caller, as the AdmissionReview names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// Everything about a write that matching and the review need.
#[derive(Debug, Clone)]
pub struct Attributes {
    pub operation: Operation,
    pub group: String,
    pub version: String,
    pub resource: String,
    /// Empty for the main resource.
    pub subresource: String,
    /// The object's kind: the resource's own, or another for a subresource (`autoscaling/v1`
    /// `Scale` for `deployments/scale`).
    pub kind_group: String,
    pub kind_version: String,
    pub kind: String,
    /// The resource is namespaced.
    pub namespaced: bool,
    pub namespace: String,
    pub name: String,
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    pub dry_run: bool,
    pub user: UserInfo,
    /// CreateOptions / UpdateOptions / DeleteOptions fields (without kind/apiVersion).
    pub options: Value,
}

impl Attributes {
    fn is_namespace(&self) -> bool {
        self.group.is_empty() && self.resource == "namespaces" && self.subresource.is_empty()
    }
}

/// How a webhook's rules matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleMatch {
    /// A rule names the request's own version.
    Exact,
    /// Only an equivalent version matched: the webhook gets the object in this version.
    Equivalent(String),
    None,
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

fn resource_listed(list: &[String], resource: &str, subresource: &str) -> bool {
    list.iter().any(|r| {
        if r == "*/*" {
            return true;
        }
        if subresource.is_empty() {
            r == "*" || r == resource
        } else {
            r == &format!("{resource}/{subresource}")
                || r == &format!("*/{subresource}")
                || r == &format!("{resource}/*")
        }
    })
}

fn rule_matches(rule: &Rule, attrs: &Attributes, version: &str) -> bool {
    let scope_ok = match rule.scope.as_str() {
        "Cluster" => !attrs.namespaced,
        "Namespaced" => attrs.namespaced,
        _ => true,
    };
    scope_ok
        && listed(&rule.operations, attrs.operation.as_str())
        && listed(&rule.api_groups, &attrs.group)
        && listed(&rule.api_versions, version)
        && resource_listed(&rule.resources, &attrs.resource, &attrs.subresource)
}

impl Webhook {
    /// Whether the rules select the request; `versions` are the versions the server serves
    /// of the request's group and resource (for `matchPolicy: Equivalent`).
    pub fn match_rules(&self, attrs: &Attributes, versions: &[String]) -> RuleMatch {
        if self
            .rules
            .iter()
            .any(|r| rule_matches(r, attrs, &attrs.version))
        {
            return RuleMatch::Exact;
        }
        if self.match_equivalent {
            for v in versions.iter().filter(|v| **v != attrs.version) {
                if self.rules.iter().any(|r| rule_matches(r, attrs, v)) {
                    return RuleMatch::Equivalent(v.clone());
                }
            }
        }
        RuleMatch::None
    }

    /// `objectSelector`: the new or the old object's labels match.
    pub fn match_object(&self, attrs: &Attributes) -> bool {
        if self.object_selector.is_empty() {
            return true;
        }
        [&attrs.object, &attrs.old_object]
            .into_iter()
            .flatten()
            .any(|o| self.object_selector.matches(labels(o)))
    }

    /// `namespaceSelector` given the labels of the request's namespace (`None` when the
    /// request is not in a namespace).
    pub fn match_namespace(
        &self,
        attrs: &Attributes,
        namespace_labels: Option<&Map<String, Value>>,
    ) -> bool {
        if self.namespace_selector.is_empty() {
            return true;
        }
        if attrs.is_namespace() {
            let own = attrs.object.as_ref().or(attrs.old_object.as_ref());
            return self.namespace_selector.matches(own.and_then(labels));
        }
        if !attrs.namespaced {
            return true;
        }
        self.namespace_selector.matches(namespace_labels)
    }

    /// Whether the namespace's labels are needed to decide (so the server fetches them only
    /// then).
    pub fn needs_namespace(&self, attrs: &Attributes) -> bool {
        !self.namespace_selector.is_empty() && attrs.namespaced && !attrs.is_namespace()
    }
}

fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    obj.pointer("/metadata/labels").and_then(Value::as_object)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhook::{WebhookKind, webhooks_of};
    use serde_json::json;

    fn hook(extra: Value) -> Webhook {
        let mut w = json!({
            "name": "h.example.com",
            "clientConfig": {"url": "https://127.0.0.1/"},
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        });
        if let (Some(w), Some(e)) = (w.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                w.insert(k.clone(), v.clone());
            }
        }
        let config = json!({"metadata": {"name": "c"}, "webhooks": [w]});
        webhooks_of(WebhookKind::Validating, &config)
            .unwrap()
            .remove(0)
    }

    fn attrs(op: Operation, group: &str, version: &str, resource: &str, sub: &str) -> Attributes {
        Attributes {
            operation: op,
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            subresource: sub.into(),
            kind_group: group.into(),
            kind_version: version.into(),
            kind: String::new(),
            namespaced: true,
            namespace: "default".into(),
            name: "x".into(),
            object: Some(json!({"metadata": {"name": "x", "labels": {"app": "web"}}})),
            old_object: None,
            dry_run: false,
            user: UserInfo::default(),
            options: json!({}),
        }
    }

    fn rules(resources: &[&str]) -> Value {
        json!({"rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": resources}]})
    }

    #[test]
    fn resource_forms() {
        let cases: &[(&[&str], &str, bool)] = &[
            (&["deployments"], "", true),
            (&["deployments"], "status", false),
            (&["*"], "", true),
            (&["*"], "status", false),
            (&["*/*"], "status", true),
            (&["deployments/status"], "status", true),
            (&["deployments/status"], "", false),
            (&["deployments/*"], "scale", true),
            (&["*/scale"], "scale", true),
            (&["*/scale"], "status", false),
            (&["statefulsets"], "", false),
        ];
        for (resources, sub, want) in cases {
            let h = hook(rules(resources));
            let a = attrs(Operation::Update, "apps", "v1", "deployments", sub);
            assert_eq!(
                h.match_rules(&a, &[]) == RuleMatch::Exact,
                *want,
                "{resources:?} vs deployments/{sub}"
            );
        }
    }

    #[test]
    fn operations_groups_and_scope() {
        let h = hook(rules(&["deployments"]));
        assert_eq!(
            h.match_rules(
                &attrs(Operation::Delete, "apps", "v1", "deployments", ""),
                &[]
            ),
            RuleMatch::None
        );
        assert_eq!(
            h.match_rules(
                &attrs(Operation::Create, "batch", "v1", "deployments", ""),
                &[]
            ),
            RuleMatch::None
        );
        let cluster_only = hook(
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*"], "scope": "Cluster"}]}),
        );
        let mut a = attrs(Operation::Create, "apps", "v1", "deployments", "");
        assert_eq!(cluster_only.match_rules(&a, &[]), RuleMatch::None);
        a.namespaced = false;
        assert_eq!(cluster_only.match_rules(&a, &[]), RuleMatch::Exact);
    }

    #[test]
    fn equivalent_versions_match_unless_exact() {
        let rules = json!({"rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"], "apiVersions": ["v1"], "resources": ["widgets"]}]});
        let a = attrs(Operation::Create, "example.com", "v2", "widgets", "");
        let versions = vec!["v1".to_string(), "v2".to_string()];
        assert_eq!(
            hook(rules.clone()).match_rules(&a, &versions),
            RuleMatch::Equivalent("v1".into())
        );
        let mut exact = rules;
        exact["matchPolicy"] = json!("Exact");
        assert_eq!(hook(exact).match_rules(&a, &versions), RuleMatch::None);
    }

    #[test]
    fn object_selector_matches_new_or_old() {
        let h = hook(json!({"objectSelector": {"matchLabels": {"app": "db"}}}));
        let mut a = attrs(Operation::Update, "apps", "v1", "deployments", "");
        assert!(!h.match_object(&a));
        a.old_object = Some(json!({"metadata": {"labels": {"app": "db"}}}));
        assert!(h.match_object(&a));
    }

    #[test]
    fn namespace_selector() {
        let h = hook(
            json!({"namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}),
        );
        let a = attrs(Operation::Create, "apps", "v1", "deployments", "");
        assert!(h.needs_namespace(&a));
        let prod = json!({"env": "prod"});
        let dev = json!({"env": "dev"});
        assert!(h.match_namespace(&a, prod.as_object()));
        assert!(!h.match_namespace(&a, dev.as_object()));
        assert!(!h.match_namespace(&a, None));
        // Other cluster-scoped objects always match.
        let mut cluster = attrs(Operation::Create, "", "v1", "nodes", "");
        cluster.namespaced = false;
        assert!(!h.needs_namespace(&cluster));
        assert!(h.match_namespace(&cluster, None));
        // A Namespace is matched by its own labels.
        let mut ns = attrs(Operation::Create, "", "v1", "namespaces", "");
        ns.namespaced = false;
        ns.object = Some(json!({"metadata": {"name": "p", "labels": {"env": "prod"}}}));
        assert!(h.match_namespace(&ns, None));
        ns.object = Some(json!({"metadata": {"name": "d"}}));
        assert!(!h.match_namespace(&ns, None));
    }
}
