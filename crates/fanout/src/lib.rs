//! The merge rules of merged reads on the host, as pure functions and state without IO.
//!
//! On the Flotilla host a read of a workload kind (`kubectl get deploy`, pods, ...) is answered
//! by asking every member cluster and merging their answers with the host's template store.
//! The IO (fan-out requests, watches, reconnects) lives elsewhere; this crate owns what the
//! answer is:
//!
//! ```text
//!  labelSelector ─clusters::split_selector─▶ ClusterFilter + the selector sent onwards
//!  template + member objects ─merge::merge_item─▶ one merged object
//!  template list + member lists ─list::merge_list─▶ merged list ─list::page─▶ one page
//!  template/member events ─view::MergedView─▶ merged watch events
//!  positions of every source ─version::CompositeVersion─▶ resourceVersion / continue token
//! ```
//!
//! Status of a merged object is aggregated by `flotilla_interpreter::aggregate_status` over
//! items built by `flotilla_interpreter::applied_item`: the same rule propagation uses to write
//! a template's status, so a merged read and the stored template agree once propagation has
//! caught up.

pub mod clusters;
pub mod list;
pub mod merge;
pub mod version;
pub mod view;

pub use clusters::{ClusterFilter, split_selector};
pub use list::{Page, SourceObject, Sources, merge_list, page};
pub use merge::{
    MemberObject, cluster_replicas, clusters_cell, clusters_wide_cell, merge_item, merged_resource,
};
pub use version::{CompositeVersion, ContinueToken};
pub use view::{EventKind, MergedEvent, MergedView, Source, SourceEvent};

/// Annotation a merged object carries naming the member clusters that hold it, sorted, with
/// `(readyReplicas/replicas)` per cluster for kinds whose status has `replicas`:
/// `member1(3/3),member2(2/2)`, or `member1,member2`.
pub const CLUSTERS_ANNOTATION: &str = "search.flotilla.io/clusters";

/// Annotation keys the merge adds to objects; they describe a read, not the object, so the
/// host strips them from writes.
pub const RESERVED_ANNOTATIONS: &[&str] = &[CLUSTERS_ANNOTATION];

/// Why a merged-read input was rejected; messages are meant for a `400 BadRequest` Status.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FanoutError {
    /// A resourceVersion that claims to be (or must be) a merged-read version but is not.
    #[error("resourceVersion \"{value}\" is not a merged-read version: {reason}")]
    MalformedVersion { value: String, reason: String },
    /// A continue token this server did not issue (or that was altered).
    #[error("continue token \"{value}\" is not valid: {reason}")]
    MalformedContinue { value: String, reason: String },
    /// A label selector that does not parse.
    #[error("{0}")]
    Selector(String),
}

/// How much of a rejected value an error message quotes: enough to recognise it, not a
/// 64 KiB echo.
const QUOTED_MAX: usize = 64;

/// `value` shortened for an error message (on a char boundary).
pub(crate) fn quoted(value: &str) -> String {
    if value.len() <= QUOTED_MAX {
        return value.to_string();
    }
    let mut end = QUOTED_MAX;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &value[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_shortens_long_values_on_char_boundaries() {
        let table: Vec<(String, String)> = vec![
            ("abc".into(), "abc".into()),
            ("a".repeat(64), "a".repeat(64)),
            ("a".repeat(65), format!("{}...", "a".repeat(64))),
            (
                format!("{}é", "a".repeat(62)),
                format!("{}é", "a".repeat(62)),
            ),
            (
                format!("{}é", "a".repeat(63)),
                format!("{}...", "a".repeat(63)),
            ),
        ];
        for (input, want) in table {
            assert_eq!(quoted(&input), want, "{input}");
        }
    }

    #[test]
    fn reserved_annotations_hold_what_the_merge_adds() {
        assert!(RESERVED_ANNOTATIONS.contains(&CLUSTERS_ANNOTATION));
    }
}
