//! The garbage collector's decisions, as pure functions of what it knows about an object,
//! its owners and its dependents (no IO, unit tested without a server).
//!
//! They follow kube-controller-manager's garbage collector:
//!
//! ```text
//!  dependent's ownerReferences ──classify (live GET of each owner)──▶ solid / dangling /
//!                                                                     waiting / unknown
//!    some solid, none dangling or waiting ─▶ nothing
//!    some solid, others dangling/waiting  ─▶ patch out the dangling and waiting references
//!    none solid, some waiting, has deps    ─▶ delete Foreground (unblocking refs to the
//!                                             waiting owners if a dependent of ours is
//!                                             itself deleting its dependents)
//!    otherwise (all absent)                ─▶ delete with the object's own policy
//!                                             (its orphan / foregroundDeletion finalizer,
//!                                             else Background)
//!  owner deleting with `foregroundDeletion` ─▶ delete dependents that block it; remove the
//!                                             finalizer once none blocks
//!  owner deleting with `orphan`             ─▶ remove the references to it from every
//!                                             dependent, then the finalizer
//! ```

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

/// The finalizers asking the collector to orphan the dependents first, and to delete the
/// (blocking) dependents first (defined once, with the API server that sets them).
pub use flotilla_apimachinery::{
    FINALIZER_DELETE_DEPENDENTS as FINALIZER_FOREGROUND,
    FINALIZER_ORPHAN_DEPENDENTS as FINALIZER_ORPHAN,
};

/// The propagation policy of a delete the collector sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    Background,
    Foreground,
    Orphan,
}

impl Policy {
    /// The policy as a metric label.
    pub fn label(self) -> &'static str {
        match self {
            Policy::Background => "background",
            Policy::Foreground => "foreground",
            Policy::Orphan => "orphan",
        }
    }
}

/// What a live read found about one owner reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerState {
    /// The owner exists (same uid) and is not waiting for its dependents.
    Solid,
    /// No object with that uid exists where the reference points.
    Dangling,
    /// The owner is being deleted in the foreground: it waits for its dependents.
    Waiting,
    /// The owner's kind is not (yet) served: decide nothing, try again later.
    Unknown,
}

/// What to do with one dependent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DependentAction {
    Nothing,
    /// Some owners remain: only the references to these uids go.
    RemoveOwnerRefs(Vec<String>),
    /// Delete; first set `blockOwnerDeletion: false` on the references to these uids (so an
    /// owner deleting in the foreground does not wait on us while we wait on our own
    /// dependents: a deadlock otherwise).
    Delete {
        policy: Policy,
        unblock: Vec<String>,
    },
    /// An owner kind is unknown: look again later.
    Retry,
}

/// Where to look for an owner of a dependent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OwnerLookup {
    /// In this namespace (`None`: cluster-scoped owner).
    At(Option<String>),
    /// A cluster-scoped dependent naming a namespaced owner: invalid, never resolved (and so
    /// never collected, as with Kubernetes since 1.20).
    Invalid,
}

/// Where an owner of the dependent in `dependent_namespace` is looked up: a namespaced
/// owner only in the dependent's own namespace.
pub fn owner_lookup(dependent_namespace: Option<&str>, owner_namespaced: bool) -> OwnerLookup {
    match (dependent_namespace, owner_namespaced) {
        (_, false) => OwnerLookup::At(None),
        (Some(ns), true) => OwnerLookup::At(Some(ns.to_string())),
        (None, true) => OwnerLookup::Invalid,
    }
}

/// The state of an owner reference given what a live read by name found: `None` for not
/// found, else `(uid, deletionTimestamp set, finalizers)`.
pub fn classify_live(ref_uid: &str, live: Option<(&str, bool, &[String])>) -> OwnerState {
    match live {
        None => OwnerState::Dangling,
        Some((uid, _, _)) if uid != ref_uid => OwnerState::Dangling,
        Some((_, deleting, finalizers)) => {
            if deleting && finalizers.iter().any(|f| f == FINALIZER_FOREGROUND) {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            }
        }
    }
}

/// The policy a dependent whose owners are all gone is deleted with: the one its own
/// finalizers already ask for, else Background.
pub fn deletion_policy(finalizers: &[String]) -> Policy {
    if finalizers.iter().any(|f| f == FINALIZER_ORPHAN) {
        Policy::Orphan
    } else if finalizers.iter().any(|f| f == FINALIZER_FOREGROUND) {
        Policy::Foreground
    } else {
        Policy::Background
    }
}

/// kube-controller-manager's attemptToDeleteItem decision for a dependent that is not being
/// deleted. `owners` pairs each owner uid with its state; `has_dependents` says whether the
/// dependent owns anything itself and `dependent_deleting_dependents` whether one of those
/// is itself in foreground deletion.
pub fn attempt_to_delete(
    finalizers: &[String],
    owners: &[(String, OwnerState)],
    has_dependents: bool,
    dependent_deleting_dependents: bool,
) -> DependentAction {
    if owners.is_empty() {
        return DependentAction::Nothing;
    }
    if owners.iter().any(|(_, s)| *s == OwnerState::Unknown) {
        return DependentAction::Retry;
    }
    let of = |state: OwnerState| -> Vec<String> {
        owners
            .iter()
            .filter(|(_, s)| *s == state)
            .map(|(u, _)| u.clone())
            .collect()
    };
    let solid = of(OwnerState::Solid);
    let dangling = of(OwnerState::Dangling);
    let waiting = of(OwnerState::Waiting);
    if !solid.is_empty() {
        if dangling.is_empty() && waiting.is_empty() {
            return DependentAction::Nothing;
        }
        let mut gone = dangling;
        gone.extend(waiting);
        return DependentAction::RemoveOwnerRefs(gone);
    }
    if !waiting.is_empty() && has_dependents {
        let unblock = if dependent_deleting_dependents {
            waiting
        } else {
            Vec::new()
        };
        return DependentAction::Delete {
            policy: Policy::Foreground,
            unblock,
        };
    }
    DependentAction::Delete {
        policy: deletion_policy(finalizers),
        unblock: Vec::new(),
    }
}

/// One dependent as the foreground step sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DependentView {
    pub uid: String,
    /// Its reference to the owner has `blockOwnerDeletion: true`.
    pub blocks: bool,
    /// It is itself being deleted in the foreground (then it is already on its way).
    pub deleting_dependents: bool,
}

/// What to do for an owner being deleted in the foreground.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForegroundAction {
    /// No dependent blocks it any more.
    RemoveFinalizer,
    /// These blocking dependents must be (looked at for) deletion first; the owner waits.
    DeleteDependents(Vec<String>),
}

/// kube-controller-manager's processDeletingDependentsItem: only dependents with
/// `blockOwnerDeletion: true` hold the owner.
pub fn foreground_step(dependents: &[DependentView]) -> ForegroundAction {
    let blocking: Vec<&DependentView> = dependents.iter().filter(|d| d.blocks).collect();
    if blocking.is_empty() {
        return ForegroundAction::RemoveFinalizer;
    }
    ForegroundAction::DeleteDependents(
        blocking
            .into_iter()
            .filter(|d| !d.deleting_dependents)
            .map(|d| d.uid.clone())
            .collect(),
    )
}

/// The ownerReferences without those to `uids`; `None` when none points to them (nothing
/// to write).
pub fn owner_refs_without(refs: &[OwnerReference], uids: &[String]) -> Option<Vec<OwnerReference>> {
    if !refs.iter().any(|r| uids.contains(&r.uid)) {
        return None;
    }
    Some(
        refs.iter()
            .filter(|r| !uids.contains(&r.uid))
            .cloned()
            .collect(),
    )
}

/// The ownerReferences with `blockOwnerDeletion: false` on those to `uids`; `None` when
/// none of them blocks.
pub fn owner_refs_unblocked(
    refs: &[OwnerReference],
    uids: &[String],
) -> Option<Vec<OwnerReference>> {
    let blocking =
        |r: &OwnerReference| uids.contains(&r.uid) && r.block_owner_deletion == Some(true);
    if !refs.iter().any(blocking) {
        return None;
    }
    Some(
        refs.iter()
            .map(|r| {
                let mut r = r.clone();
                if blocking(&r) {
                    r.block_owner_deletion = Some(false);
                }
                r
            })
            .collect(),
    )
}

/// The finalizers without `finalizer`; `None` when it is not there.
pub fn finalizers_without(finalizers: &[String], finalizer: &str) -> Option<Vec<String>> {
    if !finalizers.iter().any(|f| f == finalizer) {
        return None;
    }
    Some(
        finalizers
            .iter()
            .filter(|f| *f != finalizer)
            .cloned()
            .collect(),
    )
}

/// `(group, version)` of an `apiVersion` ("apps/v1" → ("apps", "v1"), "v1" → ("", "v1")).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(v: &[(&str, OwnerState)]) -> Vec<(String, OwnerState)> {
        v.iter().map(|(u, s)| (u.to_string(), *s)).collect()
    }

    fn oref(uid: &str, block: Option<bool>) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: format!("n-{uid}"),
            uid: uid.into(),
            block_owner_deletion: block,
            controller: None,
        }
    }

    use OwnerState::*;

    #[test]
    fn a_solid_owner_keeps_the_dependent_and_dangling_refs_are_patched_away() {
        assert_eq!(
            attempt_to_delete(&[], &owners(&[("a", Solid)]), false, false),
            DependentAction::Nothing
        );
        assert_eq!(
            attempt_to_delete(
                &[],
                &owners(&[("a", Solid), ("b", Dangling), ("c", Waiting)]),
                true,
                false
            ),
            DependentAction::RemoveOwnerRefs(vec!["b".into(), "c".into()])
        );
    }

    #[test]
    fn all_owners_gone_deletes_with_the_objects_own_policy() {
        let bg = attempt_to_delete(
            &[],
            &owners(&[("a", Dangling), ("b", Dangling)]),
            true,
            false,
        );
        assert_eq!(
            bg,
            DependentAction::Delete {
                policy: Policy::Background,
                unblock: vec![]
            }
        );
        let orphan =
            attempt_to_delete(&["orphan".into()], &owners(&[("a", Dangling)]), true, false);
        assert_eq!(
            orphan,
            DependentAction::Delete {
                policy: Policy::Orphan,
                unblock: vec![]
            }
        );
        assert_eq!(
            deletion_policy(&["x".into(), "foregroundDeletion".into()]),
            Policy::Foreground
        );
    }

    #[test]
    fn waiting_owners_cascade_in_the_foreground_only_through_dependents_with_dependents() {
        // A leaf goes in the background: nothing of its own to wait for.
        assert_eq!(
            attempt_to_delete(&[], &owners(&[("a", Waiting)]), false, false),
            DependentAction::Delete {
                policy: Policy::Background,
                unblock: vec![]
            }
        );
        assert_eq!(
            attempt_to_delete(
                &[],
                &owners(&[("a", Waiting), ("b", Dangling)]),
                true,
                false
            ),
            DependentAction::Delete {
                policy: Policy::Foreground,
                unblock: vec![]
            }
        );
        assert_eq!(
            attempt_to_delete(&[], &owners(&[("a", Waiting)]), true, true),
            DependentAction::Delete {
                policy: Policy::Foreground,
                unblock: vec!["a".into()]
            }
        );
    }

    #[test]
    fn unknown_owner_kinds_and_no_owners() {
        assert_eq!(
            attempt_to_delete(
                &[],
                &owners(&[("a", Dangling), ("b", Unknown)]),
                false,
                false
            ),
            DependentAction::Retry
        );
        assert_eq!(
            attempt_to_delete(&[], &[], false, false),
            DependentAction::Nothing
        );
    }

    #[test]
    fn live_reads_classify_by_uid_not_name() {
        assert_eq!(classify_live("u1", None), Dangling);
        assert_eq!(classify_live("u1", Some(("u2", false, &[]))), Dangling);
        assert_eq!(classify_live("u1", Some(("u1", false, &[]))), Solid);
        let fg = ["foregroundDeletion".to_string()];
        assert_eq!(classify_live("u1", Some(("u1", true, &fg))), Waiting);
        // Deleting without the foreground finalizer: still an owner until it is gone.
        let other = ["example.com/hold".to_string()];
        assert_eq!(classify_live("u1", Some(("u1", true, &other))), Solid);
        // The finalizer alone (no deletionTimestamp) does not make it wait.
        assert_eq!(classify_live("u1", Some(("u1", false, &fg))), Solid);
    }

    #[test]
    fn namespaced_owners_are_looked_up_in_the_dependents_namespace() {
        assert_eq!(
            owner_lookup(Some("ns1"), true),
            OwnerLookup::At(Some("ns1".into()))
        );
        assert_eq!(owner_lookup(Some("ns1"), false), OwnerLookup::At(None));
        assert_eq!(owner_lookup(None, false), OwnerLookup::At(None));
        assert_eq!(owner_lookup(None, true), OwnerLookup::Invalid);
    }

    #[test]
    fn only_blocking_dependents_hold_a_foreground_deletion() {
        let d = |uid: &str, blocks, deleting_dependents| DependentView {
            uid: uid.into(),
            blocks,
            deleting_dependents,
        };
        assert_eq!(foreground_step(&[]), ForegroundAction::RemoveFinalizer);
        assert_eq!(
            foreground_step(&[d("a", false, false)]),
            ForegroundAction::RemoveFinalizer
        );
        assert_eq!(
            foreground_step(&[
                d("a", true, false),
                d("b", false, false),
                d("c", true, true)
            ]),
            ForegroundAction::DeleteDependents(vec!["a".into()])
        );
    }

    #[test]
    fn reference_and_finalizer_edits() {
        let refs = vec![oref("a", Some(true)), oref("b", None)];
        assert_eq!(owner_refs_without(&refs, &["c".into()]), None);
        assert_eq!(
            owner_refs_without(&refs, &["a".into()]),
            Some(vec![oref("b", None)])
        );
        assert_eq!(
            owner_refs_without(&refs, &["a".into(), "b".into()]),
            Some(vec![])
        );
        assert_eq!(owner_refs_unblocked(&refs, &["b".into()]), None);
        assert_eq!(
            owner_refs_unblocked(&refs, &["a".into()]),
            Some(vec![oref("a", Some(false)), oref("b", None)])
        );
        let f = vec!["x".to_string(), "orphan".to_string()];
        assert_eq!(finalizers_without(&f, "foregroundDeletion"), None);
        assert_eq!(
            finalizers_without(&f, "orphan"),
            Some(vec!["x".to_string()])
        );
        assert_eq!(split_api_version("apps/v1"), ("apps", "v1"));
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(Policy::Foreground.label(), "foreground");
    }
}
