//! rbac.authorization.k8s.io/v1 kinds: Role, ClusterRole, RoleBinding, ClusterRoleBinding.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, index, join};
use crate::kind::Ctx;
use crate::names;

const GROUP: &str = "rbac.authorization.k8s.io";

fn validate_rules(rules: Option<&Vec<PolicyRule>>, namespaced: bool, errs: &mut Errs) {
    for (i, r) in rules.into_iter().flatten().enumerate() {
        let at = index("rules", i);
        if r.verbs.is_empty() {
            errs.required(&join(&at, "verbs"), "verbs must contain at least one value");
        }
        let urls = r.non_resource_urls.as_deref().unwrap_or_default();
        let resources = r.resources.as_deref().unwrap_or_default();
        if !urls.is_empty() {
            let shown = Value::from(urls.to_vec());
            if namespaced {
                errs.invalid(
                    &join(&at, "nonResourceURLs"),
                    &shown,
                    "namespaced rules cannot apply to non-resource URLs",
                );
            } else if !resources.is_empty() || r.api_groups.as_ref().is_some_and(|g| !g.is_empty())
            {
                errs.invalid(
                    &join(&at, "nonResourceURLs"),
                    &shown,
                    "rules cannot apply to both regular resources and non-resource URLs",
                );
            }
            continue;
        }
        if r.api_groups.as_ref().is_none_or(|g| g.is_empty()) {
            errs.required(
                &join(&at, "apiGroups"),
                "resource rules must supply at least one api group",
            );
        }
        if resources.is_empty() {
            errs.required(
                &join(&at, "resources"),
                "resource rules must supply at least one resource",
            );
        }
    }
}

pub(crate) fn validate_role(ctx: &Ctx<'_, Role>, errs: &mut Errs) {
    validate_rules(ctx.new.rules.as_ref(), true, errs);
}

pub(crate) fn validate_clusterrole(ctx: &Ctx<'_, ClusterRole>, errs: &mut Errs) {
    // An aggregated role's rules are filled in by the aggregation controller.
    if ctx.new.aggregation_rule.is_none() {
        validate_rules(ctx.new.rules.as_ref(), false, errs);
    }
}

fn validate_binding(
    role_ref: &RoleRef,
    subjects: Option<&Vec<Subject>>,
    raw: &Value,
    namespaced: bool,
    errs: &mut Errs,
) {
    if !defaults::present(raw, "roleRef") {
        errs.required("roleRef", "");
    } else {
        // An empty apiGroup is defaulted to the RBAC group.
        if !role_ref.api_group.is_empty() {
            errs.one_of("roleRef.apiGroup", Some(&role_ref.api_group), &[GROUP]);
        }
        let kinds: &[&str] = if namespaced {
            &["Role", "ClusterRole"]
        } else {
            &["ClusterRole"]
        };
        if !kinds.contains(&role_ref.kind.as_str()) {
            errs.not_supported("roleRef.kind", &role_ref.kind, kinds);
        }
        if role_ref.name.is_empty() {
            errs.required("roleRef.name", "");
        } else if let Err(m) = names::path_segment(&role_ref.name) {
            errs.invalid("roleRef.name", &Value::from(role_ref.name.as_str()), &m);
        }
    }
    for (i, s) in subjects.into_iter().flatten().enumerate() {
        let at = index("subjects", i);
        if s.name.is_empty() {
            errs.required(&join(&at, "name"), "");
        }
        let group = s.api_group.as_deref().unwrap_or_default();
        match s.kind.as_str() {
            "ServiceAccount" => {
                if !group.is_empty() {
                    errs.not_supported(&join(&at, "apiGroup"), group, &[""]);
                }
                if !s.name.is_empty()
                    && let Err(m) = names::dns1123_subdomain(&s.name)
                {
                    errs.invalid(&join(&at, "name"), &Value::from(s.name.as_str()), &m);
                }
                if !namespaced && s.namespace.as_deref().is_none_or(str::is_empty) {
                    errs.required(&join(&at, "namespace"), "");
                }
            }
            "User" | "Group" => {
                if !group.is_empty() && group != GROUP {
                    errs.not_supported(&join(&at, "apiGroup"), group, &[GROUP]);
                }
            }
            other => errs.not_supported(
                &join(&at, "kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            ),
        }
    }
}

/// `roleRef` never changes: a binding to another role is a new binding.
fn role_ref_fixed(new: &RoleRef, old: &RoleRef, errs: &mut Errs) {
    let norm = |r: &RoleRef| {
        let mut r = r.clone();
        if r.api_group.is_empty() {
            r.api_group = GROUP.to_string();
        }
        r
    };
    let (new, old) = (norm(new), norm(old));
    if new != old {
        let shown = serde_json::to_value(&new).unwrap_or(Value::Null);
        errs.invalid("roleRef", &shown, "cannot change roleRef");
    }
}

pub(crate) fn validate_rolebinding(ctx: &Ctx<'_, RoleBinding>, errs: &mut Errs) {
    validate_binding(
        &ctx.new.role_ref,
        ctx.new.subjects.as_ref(),
        ctx.raw,
        true,
        errs,
    );
    if let Some((old, _)) = ctx.old {
        role_ref_fixed(&ctx.new.role_ref, &old.role_ref, errs);
    }
}

pub(crate) fn validate_clusterrolebinding(ctx: &Ctx<'_, ClusterRoleBinding>, errs: &mut Errs) {
    validate_binding(
        &ctx.new.role_ref,
        ctx.new.subjects.as_ref(),
        ctx.raw,
        false,
        errs,
    );
    if let Some((old, _)) = ctx.old {
        role_ref_fixed(&ctx.new.role_ref, &old.role_ref, errs);
    }
}

/// Bindings: `roleRef.apiGroup` and User/Group subjects' `apiGroup` default to the RBAC group.
pub(crate) fn default_binding(obj: &mut Value) {
    if let Some(r) = defaults::existing(obj, "roleRef") {
        set_if_empty(r, "apiGroup", GROUP);
    }
    for s in defaults::items(obj, "subjects") {
        match s.get("kind").and_then(Value::as_str) {
            Some("User" | "Group") => set_if_empty(s, "apiGroup", GROUP),
            Some("ServiceAccount") => defaults::set(s, "apiGroup", json!("")),
            _ => {}
        }
    }
}

/// Go cannot tell an empty string from an absent one, so kube defaults both.
fn set_if_empty(obj: &mut Value, key: &str, value: &str) {
    if obj.get(key).and_then(Value::as_str) == Some("") {
        obj[key] = json!(value);
    }
    defaults::set(obj, key, json!(value));
}
