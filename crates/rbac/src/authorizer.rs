//! The RBAC authorizer: an index of Roles, ClusterRoles, RoleBindings and ClusterRoleBindings
//! kept up to date incrementally, and the decision for a request.
//!
//! Bindings are indexed by the user names and groups their subjects stand for, so deciding a
//! request costs the bindings of that user (and their groups), not all bindings. Aggregated
//! ClusterRoles (`aggregationRule`) get their rules recomputed whenever a ClusterRole that
//! could change them is written, so evaluation only reads precomputed rules.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use flotilla_apimachinery::selector::LabelSelector;
use parking_lot::RwLock;
use serde_json::{Map, Value, json};

use crate::rule::{PolicyRule, rules_of, uncovered};
use crate::{Attributes, Decision, RbacError, SUPERUSER_GROUP, UserRef};

type Rules = Arc<[PolicyRule]>;

/// Thread-safe index of RBAC objects and the authorizer over it. Cheap to share behind an
/// `Arc`; all methods take `&self`.
#[derive(Default)]
pub struct RbacAuthorizer {
    index: RwLock<Index>,
}

/// The rules that apply to a user in a namespace (SelfSubjectRulesReview).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubjectRules {
    /// Resource and non-resource rules, without duplicates, in evaluation order.
    pub rules: Vec<PolicyRule>,
    /// Problems met on the way (bindings to missing roles); non-empty means incomplete.
    pub errors: Vec<String>,
}

impl SubjectRules {
    /// The `status` of a `SelfSubjectRulesReview`: `resourceRules`, `nonResourceRules`,
    /// `incomplete` and, when incomplete, `evaluationError`.
    pub fn to_review_status(&self) -> Value {
        let (non_resource, resource): (Vec<&PolicyRule>, Vec<&PolicyRule>) =
            self.rules.iter().partition(|r| r.is_non_resource());
        let mut status = json!({
            "resourceRules": resource.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "nonResourceRules": non_resource.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
            "incomplete": !self.errors.is_empty(),
        });
        if !self.errors.is_empty() {
            status["evaluationError"] = Value::String(aggregate_errors(&self.errors));
        }
        status
    }
}

/// What a subject entry of a binding stands for once resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    User(String),
    Group(String),
}

#[derive(Debug, Clone)]
struct Subject {
    kind: String,
    name: String,
    /// For service accounts: the account's namespace, defaulted to the binding's.
    namespace: String,
    /// `None` for subjects that can never match (unknown kinds, service accounts without a
    /// namespace in a ClusterRoleBinding).
    key: Option<Key>,
}

impl Subject {
    fn parse(value: &Value, binding_namespace: &str) -> Result<Self, RbacError> {
        let field = |f: &str| value.get(f).and_then(Value::as_str).unwrap_or_default();
        let (kind, name) = (field("kind"), field("name"));
        if kind.is_empty() || name.is_empty() {
            return Err(RbacError::Invalid(
                "a subject needs a kind and a name".to_string(),
            ));
        }
        let mut namespace = field("namespace").to_string();
        let key = match kind {
            "User" => Some(Key::User(name.to_string())),
            "Group" => Some(Key::Group(name.to_string())),
            "ServiceAccount" => {
                // A RoleBinding may leave out the namespace of an account in its own namespace.
                if namespace.is_empty() {
                    namespace = binding_namespace.to_string();
                }
                (!namespace.is_empty())
                    .then(|| Key::User(format!("system:serviceaccount:{namespace}:{name}")))
            }
            _ => None,
        };
        Ok(Self {
            kind: kind.to_string(),
            name: name.to_string(),
            namespace,
            key,
        })
    }

    fn applies_to(&self, user: &UserRef) -> bool {
        match &self.key {
            Some(Key::User(name)) => name == user.name,
            Some(Key::Group(group)) => user.in_group(group),
            None => false,
        }
    }

    fn describe(&self) -> String {
        if self.kind == "ServiceAccount" {
            format!(
                "{} {:?}",
                self.kind,
                format!("{}/{}", self.name, self.namespace)
            )
        } else {
            format!("{} {:?}", self.kind, self.name)
        }
    }
}

#[derive(Debug, Clone)]
struct Binding {
    name: String,
    /// `""` for ClusterRoleBindings.
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

impl Binding {
    fn parse(obj: &Value, name: &str, namespace: &str) -> Result<Self, RbacError> {
        let role_ref = obj.get("roleRef");
        let field = |f: &str| {
            role_ref
                .and_then(|r| r.get(f))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .ok_or_else(|| RbacError::Invalid(format!("roleRef.{f} is required")))
        };
        let (role_kind, role_name) = (field("kind")?, field("name")?);
        let subjects = match obj.get("subjects") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(subjects)) => subjects
                .iter()
                .map(|s| Subject::parse(s, namespace))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(RbacError::Invalid("subjects must be a list".to_string())),
        };
        Ok(Self {
            name: name.to_string(),
            namespace: namespace.to_string(),
            role_kind,
            role_name,
            subjects,
        })
    }

    /// `ClusterRoleBinding "x" of ClusterRole "view" to User "alice"`, or for a RoleBinding
    /// `RoleBinding "x/ns" of Role "r" to Group "g"`.
    fn describe(&self, subject: &Subject) -> String {
        let binding = if self.namespace.is_empty() {
            format!("ClusterRoleBinding {:?}", self.name)
        } else {
            format!(
                "RoleBinding {:?}",
                format!("{}/{}", self.name, self.namespace)
            )
        };
        format!(
            "{binding} of {} {:?} to {}",
            self.role_kind,
            self.role_name,
            subject.describe()
        )
    }
}

/// The bindings of one namespace (or the ClusterRoleBindings), indexed by subject.
#[derive(Debug, Default)]
struct BindingSet {
    bindings: HashMap<String, Binding>,
    by_user: HashMap<String, BTreeSet<String>>,
    by_group: HashMap<String, BTreeSet<String>>,
}

impl BindingSet {
    fn insert(&mut self, binding: Binding) {
        self.remove(&binding.name);
        for subject in &binding.subjects {
            let (map, key) = match &subject.key {
                Some(Key::User(user)) => (&mut self.by_user, user),
                Some(Key::Group(group)) => (&mut self.by_group, group),
                None => continue,
            };
            map.entry(key.clone())
                .or_default()
                .insert(binding.name.clone());
        }
        self.bindings.insert(binding.name.clone(), binding);
    }

    fn remove(&mut self, name: &str) -> bool {
        let Some(binding) = self.bindings.remove(name) else {
            return false;
        };
        for subject in &binding.subjects {
            let (map, key) = match &subject.key {
                Some(Key::User(user)) => (&mut self.by_user, user),
                Some(Key::Group(group)) => (&mut self.by_group, group),
                None => continue,
            };
            if let Some(names) = map.get_mut(key) {
                names.remove(name);
                if names.is_empty() {
                    map.remove(key);
                }
            }
        }
        true
    }

    /// The bindings with a subject standing for the user or one of their groups, by name.
    fn candidates<'a>(&'a self, user: &UserRef) -> Vec<&'a Binding> {
        let mut names: BTreeSet<&str> = BTreeSet::new();
        if let Some(found) = self.by_user.get(user.name) {
            names.extend(found.iter().map(String::as_str));
        }
        for group in user.groups {
            if let Some(found) = self.by_group.get(group) {
                names.extend(found.iter().map(String::as_str));
            }
        }
        names
            .into_iter()
            .filter_map(|name| self.bindings.get(name))
            .collect()
    }
}

#[derive(Debug)]
struct ClusterRole {
    labels: Map<String, Value>,
    own: Rules,
    /// `Some` when the role has an `aggregationRule`: its rules are then the union of the
    /// selected ClusterRoles' rules and its own `rules` field is ignored, as kube's
    /// aggregation controller overwrites that field.
    selectors: Option<Vec<LabelSelector>>,
    effective: Rules,
}

impl ClusterRole {
    fn selects(&self, labels: &Map<String, Value>) -> bool {
        self.selectors
            .iter()
            .flatten()
            .any(|s| s.matches(Some(labels)))
    }
}

#[derive(Debug, Default)]
struct Index {
    /// namespace → name → rules
    roles: HashMap<String, HashMap<String, Rules>>,
    cluster_roles: HashMap<String, ClusterRole>,
    cluster_bindings: BindingSet,
    /// namespace → bindings
    role_bindings: HashMap<String, BindingSet>,
}

/// `metadata.name` and `metadata.namespace` (the latter required for namespaced kinds).
fn name_and_namespace<'a>(
    kind: &str,
    obj: &'a Value,
    namespaced: bool,
) -> Result<(&'a str, &'a str), RbacError> {
    let meta = |f: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let name = meta("name");
    if name.is_empty() {
        return Err(RbacError::MissingName {
            kind: kind.to_string(),
        });
    }
    let namespace = if namespaced { meta("namespace") } else { "" };
    if namespaced && namespace.is_empty() {
        return Err(RbacError::MissingNamespace {
            kind: kind.to_string(),
            name: name.to_string(),
        });
    }
    Ok((name, namespace))
}

fn parse_cluster_role(obj: &Value) -> Result<ClusterRole, RbacError> {
    let labels = obj
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let own: Rules = rules_of(obj)?.into();
    let selectors = match obj.get("aggregationRule") {
        None | Some(Value::Null) => None,
        Some(rule) => Some(match rule.get("clusterRoleSelectors") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(selectors)) => selectors
                .iter()
                .map(|s| {
                    LabelSelector::from_object(s).map_err(|e| RbacError::Invalid(e.to_string()))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(RbacError::Invalid(
                    "aggregationRule.clusterRoleSelectors must be a list".to_string(),
                ));
            }
        }),
    };
    let effective = if selectors.is_some() {
        Rules::from(Vec::new())
    } else {
        own.clone()
    };
    Ok(ClusterRole {
        labels,
        own,
        selectors,
        effective,
    })
}

/// kube's rendering of several errors: one alone, or `[a, b]`.
fn aggregate_errors(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

impl Index {
    fn role_rules(&self, binding: &Binding) -> Result<&Rules, String> {
        let name = &binding.role_name;
        match binding.role_kind.as_str() {
            "ClusterRole" => self
                .cluster_roles
                .get(name)
                .map(|r| &r.effective)
                .ok_or_else(|| format!("clusterrole.rbac.authorization.k8s.io {name:?} not found")),
            "Role" => self
                .roles
                .get(&binding.namespace)
                .and_then(|roles| roles.get(name))
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {name:?} not found")),
            other => Err(format!("unsupported role reference kind: {other:?}")),
        }
    }

    /// Calls `visit` with each rule granted to the user by a ClusterRoleBinding, then (for a
    /// non-empty namespace) by a RoleBinding in `namespace`, with the binding and the subject
    /// that brought it, until `visit` returns false. Returns the problems met.
    fn visit<'a>(
        &'a self,
        user: &UserRef,
        namespace: &str,
        mut visit: impl FnMut(&'a Binding, &'a Subject, &'a PolicyRule) -> bool,
    ) -> Vec<String> {
        let mut errors = Vec::new();
        let mut bindings = self.cluster_bindings.candidates(user);
        if !namespace.is_empty()
            && let Some(set) = self.role_bindings.get(namespace)
        {
            bindings.extend(set.candidates(user));
        }
        for binding in bindings {
            let Some(subject) = binding.subjects.iter().find(|s| s.applies_to(user)) else {
                continue;
            };
            match self.role_rules(binding) {
                Ok(rules) => {
                    for rule in rules.iter() {
                        if !visit(binding, subject, rule) {
                            return errors;
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        errors
    }

    /// Whether writing a ClusterRole with these labels (before and after) or aggregation
    /// rules can change some aggregated role's rules.
    fn affects_aggregation(&self, old: Option<&ClusterRole>, new: Option<&ClusterRole>) -> bool {
        let roles = [old, new];
        if roles.iter().flatten().any(|r| r.selectors.is_some()) {
            return true;
        }
        self.cluster_roles.values().any(|aggregated| {
            roles
                .iter()
                .flatten()
                .any(|r| aggregated.selects(&r.labels))
        })
    }

    /// Recomputes every aggregated ClusterRole's rules: the union of the rules of the
    /// ClusterRoles its selectors pick (itself excepted), where a picked role that is itself
    /// aggregated contributes its aggregated rules. Iterates to a fixpoint, which also settles
    /// chains (admin ← edit ← view) and cycles.
    fn recompute_aggregation(&mut self) {
        let mut aggregated: Vec<&String> = self
            .cluster_roles
            .iter()
            .filter(|(_, r)| r.selectors.is_some())
            .map(|(name, _)| name)
            .collect();
        aggregated.sort();
        let selected: HashMap<&String, Vec<&String>> = aggregated
            .iter()
            .map(|&name| {
                let role = &self.cluster_roles[name];
                let mut picked: Vec<&String> = self
                    .cluster_roles
                    .iter()
                    .filter(|(other, r)| *other != name && role.selects(&r.labels))
                    .map(|(other, _)| other)
                    .collect();
                picked.sort();
                (name, picked)
            })
            .collect();
        let mut current: HashMap<&String, Vec<PolicyRule>> =
            aggregated.iter().map(|&name| (name, Vec::new())).collect();
        // Sets only grow, and each pass settles at least one more link of every chain.
        for _ in 0..=aggregated.len() {
            let mut changed = false;
            for &name in &aggregated {
                let mut union = Vec::new();
                let mut seen = HashSet::new();
                for &picked in selected.get(name).into_iter().flatten() {
                    let rules: &[PolicyRule] = match current.get(picked) {
                        Some(rules) => rules,
                        None => &self.cluster_roles[picked].own,
                    };
                    for rule in rules {
                        if seen.insert(rule) {
                            union.push(rule.clone());
                        }
                    }
                }
                if current.get(name).map(Vec::len) != Some(union.len()) {
                    changed = true;
                }
                current.insert(name, union);
            }
            if !changed {
                break;
            }
        }
        let results: Vec<(String, Rules)> = current
            .into_iter()
            .map(|(name, rules)| (name.clone(), rules.into()))
            .collect();
        for (name, rules) in results {
            if let Some(role) = self.cluster_roles.get_mut(&name) {
                role.effective = rules;
            }
        }
    }

    fn set_cluster_role(&mut self, name: &str, role: Option<ClusterRole>) -> bool {
        let old = match role {
            Some(role) => {
                let affects = self.affects_aggregation(self.cluster_roles.get(name), Some(&role));
                let old = self.cluster_roles.insert(name.to_string(), role);
                if affects {
                    self.recompute_aggregation();
                }
                old
            }
            None => {
                let old = self.cluster_roles.remove(name);
                if self.affects_aggregation(old.as_ref(), None) {
                    self.recompute_aggregation();
                }
                old
            }
        };
        old.is_some()
    }
}

impl RbacAuthorizer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an object. `kind` is `Role`, `ClusterRole`, `RoleBinding` or
    /// `ClusterRoleBinding`; `obj` its `rbac.authorization.k8s.io/v1` JSON. On error the index
    /// is unchanged.
    pub fn upsert(&self, kind: &str, obj: &Value) -> Result<(), RbacError> {
        match kind {
            "Role" => {
                let (name, namespace) = name_and_namespace(kind, obj, true)?;
                let rules: Rules = rules_of(obj)?.into();
                self.index
                    .write()
                    .roles
                    .entry(namespace.to_string())
                    .or_default()
                    .insert(name.to_string(), rules);
            }
            "ClusterRole" => {
                let (name, _) = name_and_namespace(kind, obj, false)?;
                let role = parse_cluster_role(obj)?;
                self.index.write().set_cluster_role(name, Some(role));
            }
            "RoleBinding" => {
                let (name, namespace) = name_and_namespace(kind, obj, true)?;
                let binding = Binding::parse(obj, name, namespace)?;
                self.index
                    .write()
                    .role_bindings
                    .entry(namespace.to_string())
                    .or_default()
                    .insert(binding);
            }
            "ClusterRoleBinding" => {
                let (name, _) = name_and_namespace(kind, obj, false)?;
                let binding = Binding::parse(obj, name, "")?;
                self.index.write().cluster_bindings.insert(binding);
            }
            other => return Err(RbacError::UnknownKind(other.to_string())),
        }
        Ok(())
    }

    /// Removes an object; `namespace` is needed for Roles and RoleBindings. Returns whether it
    /// was known.
    pub fn remove(&self, kind: &str, namespace: Option<&str>, name: &str) -> bool {
        let mut index = self.index.write();
        let namespace = namespace.unwrap_or_default();
        match kind {
            "Role" => {
                let Some(roles) = index.roles.get_mut(namespace) else {
                    return false;
                };
                let removed = roles.remove(name).is_some();
                if roles.is_empty() {
                    index.roles.remove(namespace);
                }
                removed
            }
            "ClusterRole" => index.set_cluster_role(name, None),
            "RoleBinding" => {
                let Some(set) = index.role_bindings.get_mut(namespace) else {
                    return false;
                };
                let removed = set.remove(name);
                if set.bindings.is_empty() {
                    index.role_bindings.remove(namespace);
                }
                removed
            }
            "ClusterRoleBinding" => index.cluster_bindings.remove(name),
            _ => false,
        }
    }

    /// Forgets everything (before a relist).
    pub fn clear(&self) {
        *self.index.write() = Index::default();
    }

    /// Decides a request. Members of `system:masters` are always allowed. Otherwise the
    /// ClusterRoleBindings and (for a namespaced request) the RoleBindings of the request's
    /// namespace whose subjects include the user are searched, in name order, for a rule
    /// allowing it.
    pub fn authorize(&self, attrs: &Attributes) -> Decision {
        if attrs.user.in_group(SUPERUSER_GROUP) {
            return Decision::Allow {
                reason: format!("user is in the superuser group {SUPERUSER_GROUP:?}"),
            };
        }
        let index = self.index.read();
        let mut allowed_by = None;
        let errors = index.visit(&attrs.user, attrs.namespace, |binding, subject, rule| {
            if rule.allows(attrs) {
                allowed_by = Some((binding, subject));
                return false;
            }
            true
        });
        match allowed_by {
            Some((binding, subject)) => Decision::Allow {
                reason: format!("RBAC: allowed by {}", binding.describe(subject)),
            },
            None if errors.is_empty() => Decision::Deny {
                reason: String::new(),
            },
            None => Decision::Deny {
                reason: format!("RBAC: {}", aggregate_errors(&errors)),
            },
        }
    }

    /// All rules granted to the user in `namespace` (`""`: cluster-wide grants only), for
    /// SelfSubjectRulesReview and the escalation check. The superuser gets `*` rules.
    pub fn rules_for(&self, user: &UserRef, namespace: &str) -> SubjectRules {
        if user.in_group(SUPERUSER_GROUP) {
            return SubjectRules {
                rules: vec![
                    PolicyRule::resource(&["*"], &["*"], &["*"]),
                    PolicyRule::non_resource(&["*"], &["*"]),
                ],
                errors: Vec::new(),
            };
        }
        self.rules_from_bindings(user, namespace)
    }

    /// [`Self::rules_for`] without the superuser shortcut: what the bindings alone grant.
    pub(crate) fn rules_from_bindings(&self, user: &UserRef, namespace: &str) -> SubjectRules {
        let index = self.index.read();
        let mut rules: Vec<PolicyRule> = Vec::new();
        let mut seen: HashSet<&PolicyRule> = HashSet::new();
        let errors = index.visit(user, namespace, |_, _, rule| {
            if seen.insert(rule) {
                rules.push(rule.clone());
            }
            true
        });
        SubjectRules { rules, errors }
    }

    /// The privilege-escalation check made before a user creates or updates a Role or
    /// ClusterRole (`requested` = its rules) or a binding (`requested` = the rules of the
    /// role it references, see [`Self::role_rules`]): allowed when the user already holds
    /// every requested permission in `namespace` (`""` for cluster-wide objects). `Err`
    /// carries the permissions they lack. The server should let `escalate` (for roles) or
    /// `bind` (for bindings) on the role override this, as kube does.
    pub fn escalation_check(
        &self,
        user: &UserRef,
        namespace: &str,
        requested: &[PolicyRule],
    ) -> Result<(), Vec<PolicyRule>> {
        let owned = self.rules_for(user, namespace);
        let missing = uncovered(&owned.rules, requested);
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing)
        }
    }

    /// The rules a binding's `roleRef` grants: `kind` `Role` (looked up in `namespace`) or
    /// `ClusterRole` (aggregated rules for aggregated roles). `None` if it does not exist.
    pub fn role_rules(&self, kind: &str, namespace: &str, name: &str) -> Option<Vec<PolicyRule>> {
        let index = self.index.read();
        let rules = match kind {
            "Role" => index.roles.get(namespace)?.get(name)?,
            "ClusterRole" => &index.cluster_roles.get(name)?.effective,
            _ => return None,
        };
        Some(rules.to_vec())
    }

    /// The computed rules of an aggregated ClusterRole (`None` if it does not exist or has no
    /// `aggregationRule`), for a controller that writes them back into its `rules` field.
    pub fn aggregated_rules(&self, name: &str) -> Option<Vec<PolicyRule>> {
        let index = self.index.read();
        let role = index.cluster_roles.get(name)?;
        role.selectors.as_ref()?;
        Some(role.effective.to_vec())
    }
}

#[cfg(test)]
mod tests;
