//! The caller of a request, as authentication established it.

use std::collections::BTreeMap;

/// The authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    pub fn new(name: &str, groups: &[&str]) -> Self {
        Self {
            name: name.into(),
            uid: String::new(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            extra: BTreeMap::new(),
        }
    }

    /// This user as a kind's create hook sees it.
    pub fn requester(&self) -> flotilla_apimachinery::Requester<'_> {
        flotilla_apimachinery::Requester {
            name: &self.name,
            uid: &self.uid,
            groups: &self.groups,
            extra: &self.extra,
        }
    }
}
