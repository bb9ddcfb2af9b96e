//! The texts of kube-apiserver's 403 answers, which kubectl prints verbatim (and which scripts
//! and tests match on), so their wording follows kube-apiserver exactly.

use flotilla_apimachinery::{ApiError, status::qualified_resource};

use crate::{Attributes, PolicyRule, UserRef};

/// The message of the 403 `Status` for a denied request, e.g.
/// `deployments.apps "web" is forbidden: User "alice" cannot delete resource "deployments" in
/// API group "apps" in the namespace "dev"` or `forbidden: User "bob" cannot get path
/// "/metrics"`. The object part names the resource without its subresource; the sentence
/// names `resource/subresource`.
pub fn forbidden_message(attrs: &Attributes) -> String {
    let user = attrs.user.name;
    let verb = attrs.verb;
    if !attrs.resource_request {
        return format!(
            "forbidden: User {user:?} cannot {verb} path {:?}",
            attrs.path
        );
    }
    let mut resource = attrs.resource.to_string();
    if !attrs.subresource.is_empty() {
        resource = format!("{resource}/{}", attrs.subresource);
    }
    let group = attrs.api_group;
    let sentence = if attrs.namespace.is_empty() {
        format!(
            "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
        )
    } else {
        format!(
            "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
            attrs.namespace
        )
    };
    let object = qualified_resource(group, attrs.resource);
    match (object.is_empty(), attrs.name.is_empty()) {
        (true, _) => format!("forbidden: {sentence}"),
        (false, true) => format!("{object} is forbidden: {sentence}"),
        (false, false) => format!("{object} {:?} is forbidden: {sentence}", attrs.name),
    }
}

/// The 403 error for a denied request: [`forbidden_message`], then `": "` and the decision's
/// reason when it has one, with `details` (group, kind = resource, name) as kube fills them.
pub fn forbidden_error(attrs: &Attributes, reason: &str) -> ApiError {
    let mut message = forbidden_message(attrs);
    if !reason.is_empty() {
        message.push_str(": ");
        message.push_str(reason);
    }
    let mut err = ApiError::forbidden(message);
    if attrs.resource_request {
        let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
        err.group = non_empty(attrs.api_group);
        err.kind = non_empty(attrs.resource);
        err.name = non_empty(attrs.name);
    }
    err
}

/// Why writing a role or binding was refused: the user would grant `missing` (as returned by
/// [`crate::uncovered`]) which they do not hold. The server prefixes it like any 403, e.g.
/// `roles.rbac.authorization.k8s.io "r" is forbidden: user "alice" (groups=["g"]) is
/// attempting to grant RBAC permissions not currently held:` and one rule per line.
pub fn escalation_message(user: &UserRef, missing: &[PolicyRule]) -> String {
    let mut out = format!(
        "user {:?} (groups={}) is attempting to grant RBAC permissions not currently held:",
        user.name,
        go_list(user.groups)
    );
    for rule in compact(missing) {
        out.push('\n');
        out.push_str(&compact_string(&rule));
    }
    out
}

/// Merges rules that differ only in their verbs, so one line lists all verbs of a resource.
fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let same_target = |o: &&mut PolicyRule| {
            o.api_groups == rule.api_groups
                && o.resources == rule.resources
                && o.resource_names == rule.resource_names
                && o.non_resource_urls == rule.non_resource_urls
        };
        match out.iter_mut().find(same_target) {
            Some(existing) => {
                for verb in &rule.verbs {
                    if !existing.verbs.contains(verb) {
                        existing.verbs.push(verb.clone());
                    }
                }
            }
            None => out.push(rule.clone()),
        }
    }
    out
}

/// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`.
fn compact_string(rule: &PolicyRule) -> String {
    let fields = [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("ResourceNames", &rule.resource_names),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("Verbs", &rule.verbs),
    ];
    let parts: Vec<String> = fields
        .iter()
        .filter(|(_, values)| !values.is_empty())
        .map(|(name, values)| format!("{name}:{}", go_list(values)))
        .collect();
    format!("{{{}}}", parts.join(", "))
}

/// A string list the way Go's `%q` prints one: `["a" "b"]`.
fn go_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs<'a>(
        user: &'a str,
        verb: &'a str,
        group: &'a str,
        resource: &'a str,
        sub: &'a str,
        ns: &'a str,
        name: &'a str,
    ) -> Attributes<'a> {
        Attributes {
            user: UserRef {
                name: user,
                groups: &[],
            },
            verb,
            resource_request: true,
            api_group: group,
            resource,
            subresource: sub,
            namespace: ns,
            name,
            path: "",
        }
    }

    #[test]
    fn forbidden_messages() {
        let cases = [
            (
                attrs("alice", "list", "apps", "deployments", "", "default", ""),
                r#"deployments.apps is forbidden: User "alice" cannot list resource "deployments" in API group "apps" in the namespace "default""#,
            ),
            (
                attrs("alice", "delete", "apps", "deployments", "", "dev", "web"),
                r#"deployments.apps "web" is forbidden: User "alice" cannot delete resource "deployments" in API group "apps" in the namespace "dev""#,
            ),
            (
                attrs("bob", "list", "", "namespaces", "", "", ""),
                r#"namespaces is forbidden: User "bob" cannot list resource "namespaces" in API group "" at the cluster scope"#,
            ),
            (
                attrs("bob", "get", "", "namespaces", "", "", "kube-system"),
                r#"namespaces "kube-system" is forbidden: User "bob" cannot get resource "namespaces" in API group "" at the cluster scope"#,
            ),
            (
                attrs(
                    "alice",
                    "update",
                    "apps",
                    "deployments",
                    "scale",
                    "dev",
                    "web",
                ),
                r#"deployments.apps "web" is forbidden: User "alice" cannot update resource "deployments/scale" in API group "apps" in the namespace "dev""#,
            ),
            (
                attrs(
                    "system:serviceaccount:dev:ci",
                    "get",
                    "",
                    "pods",
                    "log",
                    "dev",
                    "p",
                ),
                r#"pods "p" is forbidden: User "system:serviceaccount:dev:ci" cannot get resource "pods/log" in API group "" in the namespace "dev""#,
            ),
        ];
        for (a, want) in cases {
            assert_eq!(forbidden_message(&a), want);
        }
        let path = Attributes {
            resource_request: false,
            path: "/metrics",
            ..attrs("bob", "get", "", "", "", "", "")
        };
        assert_eq!(
            forbidden_message(&path),
            r#"forbidden: User "bob" cannot get path "/metrics""#
        );
    }

    #[test]
    fn forbidden_error_appends_reason_and_details() {
        let a = attrs("alice", "get", "apps", "deployments", "", "dev", "web");
        let err = forbidden_error(&a, "RBAC: role.rbac.authorization.k8s.io \"r\" not found");
        assert_eq!(err.code, 403);
        assert_eq!(err.reason, "Forbidden");
        assert!(err.message.ends_with(
            r#"in the namespace "dev": RBAC: role.rbac.authorization.k8s.io "r" not found"#
        ));
        let status = err.to_status();
        assert_eq!(status["details"]["group"], "apps");
        assert_eq!(status["details"]["kind"], "deployments");
        assert_eq!(status["details"]["name"], "web");
        let list = attrs("bob", "list", "", "namespaces", "", "", "");
        let status = forbidden_error(&list, "").to_status();
        assert_eq!(status["message"], forbidden_message(&list));
        assert_eq!(status["details"], serde_json::json!({"kind": "namespaces"}));
    }

    #[test]
    fn escalation_messages() {
        let groups = vec!["system:authenticated".to_string(), "dev".to_string()];
        let user = UserRef {
            name: "alice",
            groups: &groups,
        };
        let missing = vec![
            PolicyRule::resource(&["create"], &["apps"], &["deployments"]),
            PolicyRule::resource(&["delete"], &["apps"], &["deployments"]),
            PolicyRule::resource(&["get"], &[""], &["secrets"]).with_names(&["s"]),
            PolicyRule::non_resource(&["get"], &["/metrics"]),
        ];
        assert_eq!(
            escalation_message(&user, &missing),
            "user \"alice\" (groups=[\"system:authenticated\" \"dev\"]) is attempting to grant RBAC permissions not currently held:\n\
             {APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"create\" \"delete\"]}\n\
             {APIGroups:[\"\"], Resources:[\"secrets\"], ResourceNames:[\"s\"], Verbs:[\"get\"]}\n\
             {NonResourceURLs:[\"/metrics\"], Verbs:[\"get\"]}"
        );
    }
}
