//! What can go wrong while applying an overrider, and the error that names the policy and the
//! overrider it happened in (the binding controller records it on the Work).

use std::fmt;

use thiserror::Error;

/// Which kind of policy an override comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OverrideScope {
    /// A ClusterOverridePolicy. Ordered first: cluster-wide policies are applied before the
    /// namespace's own, so the namespace's win.
    Cluster,
    /// An OverridePolicy in the template's namespace.
    Namespaced,
}

impl OverrideScope {
    /// The kind of the policy, as users know it.
    pub fn kind(self) -> &'static str {
        match self {
            OverrideScope::Cluster => "ClusterOverridePolicy",
            OverrideScope::Namespaced => "OverridePolicy",
        }
    }
}

impl fmt::Display for OverrideScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.kind())
    }
}

/// An overrider that could not be applied to the template: which policy, which overrider and
/// what failed, e.g. `OverridePolicy demo/eu-registry: plaintext path "/spec/foo/bar": parent
/// does not exist`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{scope} {policy}: {overrider}: {failure}")]
pub struct OverrideError {
    /// Kind of the failing policy.
    pub scope: OverrideScope,
    /// The policy: `namespace/name` for an OverridePolicy (the template's namespace), `name`
    /// for a ClusterOverridePolicy.
    pub policy: String,
    /// The overrider, in the policy's terms (`plaintext path "/spec/replicas"`,
    /// `imageOverrider Registry replace, image at "/spec/containers/0/image"`, ...).
    pub overrider: String,
    /// What failed.
    pub failure: OverrideFailure,
}

/// Why one overrider could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OverrideFailure {
    /// A path in the policy is not a JSON pointer.
    #[error("not a valid JSON pointer: {0}")]
    InvalidPointer(String),
    /// `add` below an object or array that is not there (RFC 6902 does not create parents).
    #[error("parent does not exist")]
    ParentMissing,
    /// `remove` or `replace` of something that is not there, or a field to read that is not.
    #[error("path does not exist")]
    PathMissing,
    /// The pointer goes through a string, number, boolean or null.
    #[error("parent is neither an object nor an array")]
    ParentNotContainer,
    /// An array step that is not an index of the array (`-` only appends with `add`).
    #[error("{token:?} is not a valid index into an array of length {len}")]
    BadIndex {
        /// The pointer's token.
        token: String,
        /// Length of the array.
        len: usize,
    },
    /// `remove` with the empty pointer.
    #[error("cannot remove the whole document")]
    RemoveRoot,
    /// A value of the template has the wrong JSON type.
    #[error("{what} is not {expected}")]
    UnexpectedType {
        /// Which value.
        what: String,
        /// What it should be ("a string", "an object", "a list of strings").
        expected: &'static str,
    },
    /// An image the imageOverrider has to change is not an image reference.
    #[error("invalid image reference {image:?}: {reason}")]
    InvalidImage {
        /// The image string.
        image: String,
        /// Why it does not parse.
        reason: &'static str,
    },
    /// The string a fieldOverrider changes does not hold a document of its format.
    #[error("field does not hold valid {format}: {reason}")]
    InvalidDocument {
        /// "JSON" or "YAML".
        format: &'static str,
        /// The parser's message.
        reason: String,
    },
    /// The changed document could not be written back.
    #[error("cannot write the document back as {format}: {reason}")]
    Serialize {
        /// "JSON" or "YAML".
        format: &'static str,
        /// The serializer's message.
        reason: String,
    },
    /// A JSON patch failure not explained by the cases above.
    #[error("{0}")]
    Patch(String),
}
