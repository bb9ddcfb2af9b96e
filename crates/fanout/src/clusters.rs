//! Which member clusters a merged read asks: the part of a `labelSelector` on Karmada's
//! reserved cluster-name label ([`CLUSTER_NAME_LABEL`]) selects clusters, not objects, so it is
//! split off here; the rest goes on to the members and the template store unchanged in
//! meaning (re-serialised in canonical form).

use flotilla_apimachinery::selector::{LabelSelector, Requirement};
use flotilla_names::karmada::CLUSTER_NAME_LABEL;

use crate::FanoutError;

/// The clusters a read is restricted to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterFilter {
    /// No requirement on the cluster name: every cluster, and templates alone are visible.
    All,
    /// Requirements on the cluster name (ANDed): only clusters that satisfy all of them, and
    /// only objects such a cluster holds. Every requirement's key is [`CLUSTER_NAME_LABEL`].
    Matching(Vec<Requirement>),
}

impl ClusterFilter {
    /// Whether a read with this filter asks `cluster`.
    pub fn allows(&self, cluster: &str) -> bool {
        match self {
            Self::All => true,
            Self::Matching(requirements) => requirements
                .iter()
                .all(|r| r.matches_lookup(|key| (key == CLUSTER_NAME_LABEL).then_some(cluster))),
        }
    }

    /// Whether the read names clusters at all (then objects no selected member holds,
    /// templates included, are not part of the answer).
    pub fn is_restricted(&self) -> bool {
        !matches!(self, Self::All)
    }
}

/// Splits a label selector string (`labelSelector` query value) into the part on
/// [`CLUSTER_NAME_LABEL`] and the rest, re-serialised as a selector string to send to the
/// members and to the template store.
///
/// The rest is `None` when no selector was given and `Some("")` when a selector was given but
/// nothing but cluster requirements was in it. Several requirements on the key are ANDed;
/// unknown cluster names simply match nothing. A selector that does not parse is
/// [`FanoutError::Selector`].
pub fn split_selector(
    selector: Option<&str>,
) -> Result<(ClusterFilter, Option<String>), FanoutError> {
    let Some(text) = selector else {
        return Ok((ClusterFilter::All, None));
    };
    let parsed = LabelSelector::parse(text).map_err(|e| FanoutError::Selector(e.to_string()))?;
    let (on_cluster, rest): (Vec<Requirement>, Vec<Requirement>) = parsed
        .requirements()
        .iter()
        .cloned()
        .partition(|r| r.key() == CLUSTER_NAME_LABEL);
    let filter = if on_cluster.is_empty() {
        ClusterFilter::All
    } else {
        ClusterFilter::Matching(on_cluster)
    };
    let rest = LabelSelector::from_requirements(rest).to_string();
    Ok((filter, Some(rest)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLUSTERS: [&str; 4] = ["member1", "member2", "member3", "other"];

    #[test]
    fn splits_cluster_requirements_from_the_rest() {
        let k = CLUSTER_NAME_LABEL;
        let other_key = format!("x.{k}=member1");
        // (selector, rest, clusters allowed, restricted)
        type Case<'a> = (Option<String>, Option<&'a str>, Vec<&'a str>, bool);
        let table: Vec<Case<'_>> = vec![
            (None, None, CLUSTERS.to_vec(), false),
            (Some(String::new()), Some(""), CLUSTERS.to_vec(), false),
            (
                Some("app=web".into()),
                Some("app=web"),
                CLUSTERS.to_vec(),
                false,
            ),
            (
                Some(format!("{k}=member1")),
                Some(""),
                vec!["member1"],
                true,
            ),
            (
                Some(format!("{k}==member2,app=web")),
                Some("app=web"),
                vec!["member2"],
                true,
            ),
            (
                Some(format!("{k}!=member1")),
                Some(""),
                vec!["member2", "member3", "other"],
                true,
            ),
            (
                Some(format!("tier in (b,a), {k} in (member3,member1),app")),
                Some("app,tier in (a,b)"),
                vec!["member1", "member3"],
                true,
            ),
            (
                Some(format!("{k} notin (member1,member2)")),
                Some(""),
                vec!["member3", "other"],
                true,
            ),
            (Some(k.to_string()), Some(""), CLUSTERS.to_vec(), true),
            (Some(format!("!{k}")), Some(""), vec![], true),
            // ANDed: in (1,2) and != 2.
            (
                Some(format!("{k} in (member1,member2),{k}!=member2")),
                Some(""),
                vec!["member1"],
                true,
            ),
            // Unknown names match nothing, without an error.
            (Some(format!("{k}=nope")), Some(""), vec![], true),
            // Only the exact key is reserved.
            (
                Some(format!("x.{k}=member1")),
                Some(other_key.as_str()),
                CLUSTERS.to_vec(),
                false,
            ),
        ];
        for (selector, want_rest, want_allowed, restricted) in table {
            let (filter, rest) = split_selector(selector.as_deref()).unwrap();
            assert_eq!(rest.as_deref(), want_rest, "{selector:?}");
            let allowed: Vec<&str> = CLUSTERS.into_iter().filter(|c| filter.allows(c)).collect();
            assert_eq!(allowed, want_allowed, "{selector:?}");
            assert_eq!(filter.is_restricted(), restricted, "{selector:?}");
        }
    }

    #[test]
    fn bad_selectors_are_errors() {
        for bad in ["a in (", "a=b c", "!a=b", "bad key=x"] {
            let Err(FanoutError::Selector(message)) = split_selector(Some(bad)) else {
                panic!("{bad} was accepted");
            };
            // The parser's own message, unchanged.
            assert_eq!(
                message,
                LabelSelector::parse(bad).unwrap_err().to_string(),
                "{bad}"
            );
        }
        let k = CLUSTER_NAME_LABEL;
        assert!(split_selector(Some(&format!("{k}=Not_A_Valid-Value-"))).is_err());
    }
}
