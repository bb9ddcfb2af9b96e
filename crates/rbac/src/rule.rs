//! Policy rules (`rbac.authorization.k8s.io/v1 PolicyRule`): parsing from JSON, matching a
//! request against a rule, and deciding whether one set of rules covers another (the
//! privilege-escalation check made when someone writes a role or a binding).

use serde::Serialize;
use serde_json::Value;

use crate::{Attributes, RbacError};

/// The wildcard that matches every verb, API group, resource or non-resource URL.
pub const ALL: &str = "*";

/// One rule of a Role or ClusterRole. A resource rule has `api_groups` and `resources`; a
/// non-resource rule has `non_resource_urls`. Serializes in the `PolicyRule` wire shape.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    pub verbs: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// Builds a rule from string slices; the bootstrap policy and tests read better with it.
fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

impl PolicyRule {
    /// A resource rule: `verbs` on `resources` in `api_groups`.
    pub fn resource(verbs: &[&str], api_groups: &[&str], resources: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            api_groups: strings(api_groups),
            resources: strings(resources),
            ..Self::default()
        }
    }

    /// A non-resource rule: `verbs` on the URLs (exact, or prefixes ending in `*`).
    pub fn non_resource(verbs: &[&str], urls: &[&str]) -> Self {
        Self {
            verbs: strings(verbs),
            non_resource_urls: strings(urls),
            ..Self::default()
        }
    }

    /// Restricts a resource rule to the named objects.
    pub fn with_names(mut self, names: &[&str]) -> Self {
        self.resource_names = strings(names);
        self
    }

    /// Parses one `PolicyRule` JSON object. Absent or `null` lists are empty.
    pub fn from_json(rule: &Value) -> Result<Self, RbacError> {
        if !rule.is_object() {
            return Err(RbacError::Invalid("a rule must be an object".to_string()));
        }
        Ok(Self {
            verbs: string_list(rule, "verbs")?,
            api_groups: string_list(rule, "apiGroups")?,
            resources: string_list(rule, "resources")?,
            resource_names: string_list(rule, "resourceNames")?,
            non_resource_urls: string_list(rule, "nonResourceURLs")?,
        })
    }

    /// The rule as a `PolicyRule` JSON object.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// Whether this rule allows the request.
    pub fn allows(&self, attrs: &Attributes) -> bool {
        if !has_or_all(&self.verbs, attrs.verb) {
            return false;
        }
        if attrs.resource_request {
            has_or_all(&self.api_groups, attrs.api_group)
                && self.resource_matches(attrs.resource, attrs.subresource)
                && self.name_matches(attrs.name)
        } else {
            self.non_resource_urls
                .iter()
                .any(|pattern| url_matches(pattern, attrs.path))
        }
    }

    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        self.resources.iter().any(|pattern| {
            if pattern == ALL {
                return true;
            }
            match pattern.split_once('/') {
                // `pods/log`, `*/scale` (any resource's scale) and `pods/*` (any subresource
                // of pods) only ever match subresource requests.
                Some((res, sub)) => {
                    !subresource.is_empty()
                        && (res == ALL || res == resource)
                        && (sub == ALL || sub == subresource)
                }
                None => subresource.is_empty() && pattern == resource,
            }
        })
    }

    /// A rule listing names only matches requests for one of them: a request without a name
    /// (list, watch, create, deletecollection) is never restricted to named objects.
    fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty()
            || (!name.is_empty() && self.resource_names.iter().any(|n| n == name))
    }

    /// Whether this is a non-resource rule (rather than a resource rule).
    pub fn is_non_resource(&self) -> bool {
        !self.non_resource_urls.is_empty()
    }

    /// Splits the rule into one rule per verb × group × resource × name (or per verb × URL).
    fn atoms(&self) -> Vec<PolicyRule> {
        let mut out = Vec::new();
        for verb in &self.verbs {
            for url in &self.non_resource_urls {
                out.push(PolicyRule {
                    verbs: vec![verb.clone()],
                    non_resource_urls: vec![url.clone()],
                    ..PolicyRule::default()
                });
            }
            for group in &self.api_groups {
                for resource in &self.resources {
                    let atom = PolicyRule {
                        verbs: vec![verb.clone()],
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        ..PolicyRule::default()
                    };
                    if self.resource_names.is_empty() {
                        out.push(atom);
                    } else {
                        for name in &self.resource_names {
                            let mut named = atom.clone();
                            named.resource_names = vec![name.clone()];
                            out.push(named);
                        }
                    }
                }
            }
        }
        out
    }

    /// Whether this rule grants everything the single-valued rule `atom` grants. A wildcard in
    /// `atom` is only covered by a wildcard here.
    fn covers_atom(&self, atom: &PolicyRule) -> bool {
        let (Some(verb), true) = (atom.verbs.first(), atom.verbs.len() == 1) else {
            return false;
        };
        if !has_or_all(&self.verbs, verb) {
            return false;
        }
        if let Some(url) = atom.non_resource_urls.first() {
            return self
                .non_resource_urls
                .iter()
                .any(|pattern| url_matches(pattern, url));
        }
        let (Some(group), Some(resource)) = (atom.api_groups.first(), atom.resources.first())
        else {
            return true;
        };
        if !has_or_all(&self.api_groups, group) {
            return false;
        }
        let resource_covered = self.resources.iter().any(|pattern| {
            if pattern == ALL || pattern == resource {
                return true;
            }
            match (pattern.split_once('/'), resource.split_once('/')) {
                (Some((pr, ps)), Some((ar, as_))) => {
                    (pr == ALL || pr == ar) && (ps == ALL || ps == as_)
                }
                _ => false,
            }
        });
        if !resource_covered {
            return false;
        }
        match atom.resource_names.first() {
            None => self.resource_names.is_empty(),
            Some(name) => self.resource_names.is_empty() || self.resource_names.contains(name),
        }
    }
}

/// The parts of `requested` that no rule of `owner` grants, one rule per uncovered
/// verb × group × resource × name (or verb × URL). Empty means `owner` covers `requested`:
/// someone holding `owner` may grant `requested` without escalating their privileges.
pub fn uncovered(owner: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing: Vec<PolicyRule> = Vec::new();
    for rule in requested {
        for atom in rule.atoms() {
            if !owner.iter().any(|o| o.covers_atom(&atom)) && !missing.contains(&atom) {
                missing.push(atom);
            }
        }
    }
    missing
}

/// Parses the `rules` list of a Role or ClusterRole object (absent or `null` is empty).
pub fn rules_of(obj: &Value) -> Result<Vec<PolicyRule>, RbacError> {
    match obj.get("rules") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(rules)) => rules.iter().map(PolicyRule::from_json).collect(),
        Some(_) => Err(RbacError::Invalid("rules must be a list".to_string())),
    }
}

fn string_list(obj: &Value, field: &str) -> Result<Vec<String>, RbacError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| RbacError::Invalid(format!("{field} must hold strings")))
            })
            .collect(),
        Some(_) => Err(RbacError::Invalid(format!("{field} must be a list"))),
    }
}

fn has_or_all(list: &[String], wanted: &str) -> bool {
    list.iter().any(|v| v == ALL || v == wanted)
}

/// `*` matches every path; a pattern ending in `*` matches paths with that prefix.
fn url_matches(pattern: &str, path: &str) -> bool {
    if pattern == ALL || pattern == path {
        return true;
    }
    match pattern.strip_suffix('*') {
        Some(prefix) => path.starts_with(prefix.trim_end_matches('*')),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::UserRef;
    use serde_json::json;

    fn res<'a>(
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user: UserRef {
                name: "u",
                groups: &[],
            },
            verb,
            resource_request: true,
            api_group: group,
            resource,
            subresource: sub,
            namespace: "ns",
            name,
            path: "",
        }
    }

    fn path<'a>(verb: &'a str, path: &'a str) -> Attributes<'a> {
        Attributes {
            user: UserRef {
                name: "u",
                groups: &[],
            },
            verb,
            resource_request: false,
            api_group: "",
            resource: "",
            subresource: "",
            namespace: "",
            name: "",
            path,
        }
    }

    #[test]
    fn resource_patterns() {
        let cases: &[(&[&str], &str, &str, bool)] = &[
            (&["pods"], "pods", "", true),
            (&["pods"], "pods", "log", false),
            (&["pods/log"], "pods", "log", true),
            (&["pods/log"], "pods", "", false),
            (&["pods/log"], "pods", "exec", false),
            (&["*"], "pods", "log", true),
            (&["*"], "secrets", "", true),
            (&["*/scale"], "deployments", "scale", true),
            (&["*/scale"], "deployments", "status", false),
            (&["*/scale"], "deployments", "", false),
            (&["pods/*"], "pods", "exec", true),
            (&["pods/*"], "pods", "", false),
            (&["pods/*"], "services", "proxy", false),
            (&["services", "pods"], "pods", "", true),
        ];
        for (resources, resource, sub, want) in cases {
            let rule = PolicyRule::resource(&["get"], &[""], resources);
            assert_eq!(
                rule.allows(&res("get", "", resource, sub, "x")),
                *want,
                "{resources:?} vs {resource}/{sub}"
            );
        }
    }

    #[test]
    fn verbs_groups_and_names() {
        let rule = PolicyRule::resource(&["get", "update"], &["apps"], &["deployments"])
            .with_names(&["web"]);
        assert!(rule.allows(&res("get", "apps", "deployments", "", "web")));
        assert!(!rule.allows(&res("get", "apps", "deployments", "", "db")));
        assert!(!rule.allows(&res("get", "", "deployments", "", "web")));
        assert!(!rule.allows(&res("delete", "apps", "deployments", "", "web")));
        // Requests without a name never match a rule restricted to names.
        let listing = PolicyRule::resource(&["list", "get"], &["*"], &["*"]).with_names(&["web"]);
        assert!(!listing.allows(&res("list", "apps", "deployments", "", "")));
        let wild = PolicyRule::resource(&["*"], &["*"], &["*"]);
        assert!(wild.allows(&res("deletecollection", "batch", "jobs", "", "")));
        // A resource rule never matches a non-resource request and vice versa.
        assert!(!wild.allows(&path("get", "/healthz")));
        let urls = PolicyRule::non_resource(&["get"], &["/healthz"]);
        assert!(!urls.allows(&res("get", "", "pods", "", "")));
    }

    #[test]
    fn url_patterns() {
        let rule = PolicyRule::non_resource(&["get"], &["/healthz", "/apis/*", "/version/"]);
        assert!(rule.allows(&path("get", "/healthz")));
        assert!(!rule.allows(&path("get", "/healthz/etcd")));
        assert!(!rule.allows(&path("post", "/healthz")));
        assert!(rule.allows(&path("get", "/apis/apps/v1")));
        assert!(!rule.allows(&path("get", "/apis")));
        assert!(rule.allows(&path("get", "/version/")));
        assert!(!rule.allows(&path("get", "/version")));
        assert!(PolicyRule::non_resource(&["*"], &["*"]).allows(&path("delete", "/metrics")));
    }

    #[test]
    fn parses_json_and_round_trips() {
        let v = json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": null});
        let rule = PolicyRule::from_json(&v).unwrap();
        assert_eq!(rule, PolicyRule::resource(&["get"], &[""], &["pods"]));
        assert_eq!(
            rule.to_json(),
            json!({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]})
        );
        let urls = PolicyRule::non_resource(&["get"], &["/x"]).to_json();
        assert_eq!(urls, json!({"verbs": ["get"], "nonResourceURLs": ["/x"]}));
        assert!(PolicyRule::from_json(&json!({"verbs": "get"})).is_err());
        assert!(PolicyRule::from_json(&json!({"verbs": [1]})).is_err());
        assert!(rules_of(&json!({"rules": {}})).is_err());
        assert_eq!(rules_of(&json!({"rules": null})).unwrap(), vec![]);
    }

    #[test]
    fn covering() {
        let owner = vec![
            PolicyRule::resource(&["get", "list"], &["", "apps"], &["pods", "deployments/*"]),
            PolicyRule::resource(&["*"], &[""], &["configmaps"]).with_names(&["a"]),
            PolicyRule::non_resource(&["get"], &["/apis/*"]),
        ];
        let ok = vec![
            PolicyRule::resource(&["get"], &["apps"], &["deployments/scale"]),
            PolicyRule::resource(&["delete"], &[""], &["configmaps"]).with_names(&["a"]),
            PolicyRule::non_resource(&["get"], &["/apis/apps"]),
        ];
        assert_eq!(uncovered(&owner, &ok), vec![]);
        let too_much = vec![
            PolicyRule::resource(&["get", "delete"], &[""], &["pods"]),
            PolicyRule::resource(&["get"], &[""], &["configmaps"]),
            PolicyRule::resource(&["get"], &["*"], &["pods"]),
            PolicyRule::non_resource(&["get"], &["/api"]),
        ];
        assert_eq!(
            uncovered(&owner, &too_much),
            vec![
                PolicyRule::resource(&["delete"], &[""], &["pods"]),
                PolicyRule::resource(&["get"], &[""], &["configmaps"]),
                PolicyRule::resource(&["get"], &["*"], &["pods"]),
                PolicyRule::non_resource(&["get"], &["/api"]),
            ]
        );
        let admin = vec![
            PolicyRule::resource(&["*"], &["*"], &["*"]),
            PolicyRule::non_resource(&["*"], &["*"]),
        ];
        assert_eq!(uncovered(&admin, &too_much), vec![]);
    }
}
