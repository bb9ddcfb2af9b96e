//! The OverridePolicy/ClusterOverridePolicy engine: applies the overriders of the policies that
//! matched a template to the manifest sent to one member cluster, records what was applied
//! for the Work's annotations, and checks a policy's overriders where that needs no template.
//!
//! Pure: the caller (the binding controller) matches policies to the template (resource
//! selectors, and so the implicit priority) and clusters to `targetCluster`; this crate owns
//! the order and the semantics of the overriders, which follow Karmada's overridemanager:
//!
//! * Order: ClusterOverridePolicies, then OverridePolicies; within each, ascending implicit
//!   priority, then name; so the most specific policy is applied last and wins
//!   ([`sort_for_application`]). A policy's rules in their order (`overrideRules`, or the
//!   deprecated `targetCluster`/`overriders` pair as one rule); a rule without
//!   `targetCluster` applies to every cluster. Within a rule: image, command, args, labels,
//!   annotations, field, plaintext, each list in its order.
//! * plaintext: RFC 6902 `add`/`remove`/`replace` at a JSON pointer: `add` does not create
//!   parents, `remove`/`replace` of a missing path fail (as with evanphx/json-patch).
//! * imageOverrider: with `predicate`, the image string at its pointer (any kind); without,
//!   the image of every `containers` entry of a Pod, Deployment, ReplicaSet, StatefulSet,
//!   DaemonSet or Job (not init containers, not other kinds: Karmada's coverage). Registry and
//!   Repository `add` append `value`, `replace` sets, `remove` clears; Tag `add` appends to
//!   the tag, `replace` sets the tag or digest, `remove` drops it (details in the `image` module).
//! * commandOverrider/argsOverrider: the `containers` entry named `containerName` of the same
//!   kinds (none: no change); `add` appends (creating the list), `remove` drops equal items.
//! * labelsOverrider/annotationsOverrider: `add` sets keys, `replace` sets existing keys only,
//!   `remove` deletes existing keys.
//! * fieldOverrider: the string at `fieldPath` is read as YAML (`yaml` operations) or JSON
//!   (`json`), changed like plaintext at each `subPath`, and written back in its format; a
//!   missing or non-string field is an error.
//!
//! [`apply_overrides`] is all-or-nothing for the whole call: it works on a copy of the
//! manifest and writes it back only when every overrider applied, since Karmada fails the
//! whole rendering of a Work when one overrider fails.

mod error;
mod field;
mod image;
mod metadata;
mod patch;
mod validate;
mod workload;

use flotilla_karmada_api::overrides::{ImageOverrider, OverrideSpec, Overriders};
use flotilla_karmada_api::policy::ClusterAffinity;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use error::{OverrideError, OverrideFailure, OverrideScope};
pub use validate::validate;

use metadata::MetadataMap;
use workload::ListField;

/// The Work annotations listing the applied policies (Karmada's keys).
pub use flotilla_names::karmada::{
    APPLIED_CLUSTER_OVERRIDES_ANNOTATION, APPLIED_OVERRIDES_ANNOTATION,
};

/// The overrider that failed, in the policy's terms, and why.
pub(crate) type Failed = (String, OverrideFailure);

/// A policy that matched the template, with how specifically (Karmada's implicit priority:
/// 1 kind only or empty selectors, 2 label selector, 3 name). The caller does the matching.
#[derive(Clone, Copy, Debug)]
pub struct MatchedPolicy<'a> {
    /// ClusterOverridePolicy or OverridePolicy.
    pub scope: OverrideScope,
    /// Name of the policy (an OverridePolicy is in the template's namespace).
    pub name: &'a str,
    /// How specifically the policy's resource selectors matched.
    pub implicit_priority: u8,
    /// The policy's spec.
    pub spec: &'a OverrideSpec,
}

/// Sorts into application order: ClusterOverridePolicies before OverridePolicies, then
/// ascending implicit priority, then name. Stable, so equal keys keep the caller's order.
pub fn sort_for_application(policies: &mut [MatchedPolicy<'_>]) {
    policies.sort_by(|a, b| {
        (a.scope, a.implicit_priority, a.name).cmp(&(b.scope, b.implicit_priority, b.name))
    });
}

/// One applied rule of a policy, in the shape of Karmada's applied-overrides annotation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedPolicy {
    /// Name of the policy.
    pub policy_name: String,
    /// The overriders of the rule.
    pub overriders: Overriders,
}

/// What [`apply_overrides`] applied: per scope, one entry per applied rule (a policy with two
/// rules for the cluster appears twice, as in Karmada), in application order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AppliedOverrides {
    /// Rules of ClusterOverridePolicies.
    pub cluster: Vec<AppliedPolicy>,
    /// Rules of OverridePolicies.
    pub namespaced: Vec<AppliedPolicy>,
}

impl AppliedOverrides {
    /// True when no rule applied.
    pub fn is_empty(&self) -> bool {
        self.cluster.is_empty() && self.namespaced.is_empty()
    }

    /// The Work annotations: key and JSON text, a key only for a scope that applied something.
    /// The text is a JSON array of `{"policyName", "overriders"}` sorted by policy name (rules
    /// of one policy in application order), which is what Karmada writes.
    pub fn annotations(&self) -> Vec<(&'static str, String)> {
        [
            (APPLIED_CLUSTER_OVERRIDES_ANNOTATION, &self.cluster),
            (APPLIED_OVERRIDES_ANNOTATION, &self.namespaced),
        ]
        .into_iter()
        .filter(|(_, items)| !items.is_empty())
        .filter_map(|(key, items)| {
            let mut sorted: Vec<&AppliedPolicy> = items.iter().collect();
            sorted.sort_by(|a, b| a.policy_name.cmp(&b.policy_name));
            // Cannot fail: every map in these types has string keys.
            serde_json::to_string(&sorted).ok().map(|json| (key, json))
        })
        .collect()
    }
}

/// Applies the rules of `policies` (already in application order) whose targetCluster
/// matches (`target_matches(affinity)`; a rule without targetCluster matches every cluster)
/// to `manifest`, in place. Returns what was applied, for the Work's annotations. On error
/// `manifest` is unchanged.
pub fn apply_overrides(
    manifest: &mut Value,
    policies: &[MatchedPolicy<'_>],
    target_matches: impl Fn(&ClusterAffinity) -> bool,
) -> Result<AppliedOverrides, OverrideError> {
    let namespace = manifest
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut applied = AppliedOverrides::default();
    let mut work: Option<Value> = None;
    for policy in policies {
        for rule in policy.spec.effective_rules() {
            if rule
                .target_cluster
                .as_ref()
                .is_some_and(|a| !target_matches(a))
            {
                continue;
            }
            // Copied on the first matching rule only: most templates match no policy.
            let doc = work.get_or_insert_with(|| manifest.clone());
            apply_overriders(doc, &rule.overriders).map_err(|(overrider, failure)| {
                OverrideError {
                    scope: policy.scope,
                    policy: match (policy.scope, namespace.as_str()) {
                        (OverrideScope::Namespaced, ns) if !ns.is_empty() => {
                            format!("{ns}/{}", policy.name)
                        }
                        _ => policy.name.to_string(),
                    },
                    overrider,
                    failure,
                }
            })?;
            let entry = AppliedPolicy {
                policy_name: policy.name.to_string(),
                overriders: rule.overriders,
            };
            match policy.scope {
                OverrideScope::Cluster => applied.cluster.push(entry),
                OverrideScope::Namespaced => applied.namespaced.push(entry),
            }
        }
    }
    if let Some(work) = work {
        *manifest = work;
    }
    Ok(applied)
}

/// The overriders of one rule, in Karmada's order.
fn apply_overriders(doc: &mut Value, overriders: &Overriders) -> Result<(), Failed> {
    for overrider in &overriders.image_overrider {
        match &overrider.predicate {
            Some(predicate) => apply_image_at(doc, overrider, &predicate.path)?,
            None => workload::apply_image_to_containers(doc, overrider)?,
        }
    }
    for overrider in &overriders.command_overrider {
        workload::apply_command_args(doc, ListField::Command, overrider)?;
    }
    for overrider in &overriders.args_overrider {
        workload::apply_command_args(doc, ListField::Args, overrider)?;
    }
    for overrider in &overriders.labels_overrider {
        metadata::apply(doc, MetadataMap::Labels, overrider)?;
    }
    for overrider in &overriders.annotations_overrider {
        metadata::apply(doc, MetadataMap::Annotations, overrider)?;
    }
    for overrider in &overriders.field_overrider {
        field::apply(doc, overrider)?;
    }
    for overrider in &overriders.plaintext {
        let describe = || format!("plaintext path {:?}", overrider.path);
        let ptr = patch::parse(&overrider.path).map_err(|f| (describe(), f))?;
        patch::apply(doc, overrider.operator, ptr, overrider.value.as_ref())
            .map_err(|f| (describe(), f))?;
    }
    Ok(())
}

/// An imageOverrider with `predicate`: the image string at `path` only, whatever the kind.
fn apply_image_at(doc: &mut Value, overrider: &ImageOverrider, path: &str) -> Result<(), Failed> {
    let describe = || {
        format!(
            "imageOverrider {} {}, image at {path:?}",
            image::component_name(overrider.component),
            patch::operator_name(overrider.operator)
        )
    };
    let ptr = patch::parse(path).map_err(|f| (describe(), f))?;
    match doc.pointer_mut(ptr.as_str()) {
        None => Err((describe(), OverrideFailure::PathMissing)),
        Some(Value::String(image)) => {
            *image = image::override_image(image, overrider).map_err(|f| (describe(), f))?;
            Ok(())
        }
        Some(_) => Err((
            describe(),
            OverrideFailure::UnexpectedType {
                what: "the image".to_string(),
                expected: "a string",
            },
        )),
    }
}

#[cfg(test)]
mod tests;
