//! Facts of merged reads that the host (which routes reads) and the aggregated API server
//! (which serves them) must agree on: where the merged view is served, which resources are
//! merged by default, and how a client asks for the template store instead.

/// Karmada's search group, whose `proxying/karmada/proxy` serves the merged view.
pub const SEARCH_GROUP: &str = "search.karmada.io";
pub const SEARCH_VERSION: &str = "v1alpha1";
/// The path prefix of the merged view: `{prefix}/api/v1/pods`, `{prefix}/apis/apps/v1/...`.
pub const SEARCH_PROXY_PREFIX: &str = "/apis/search.karmada.io/v1alpha1/proxying/karmada/proxy";

/// A read carrying this header with [`TEMPLATE_READ_VALUE`] is answered from the host's
/// template store, never merged (what the aggregated server itself sends to the host).
pub const TEMPLATE_READ_HEADER: &str = "x-flotilla-read-from";
pub const TEMPLATE_READ_VALUE: &str = "templates";

/// The resources merged by default, as `plural.group` (`pods` for the core group): the
/// workload kinds and what users look for next to them.
pub const DEFAULT_RESOURCES: &[&str] = &[
    "deployments.apps",
    "statefulsets.apps",
    "daemonsets.apps",
    "replicasets.apps",
    "jobs.batch",
    "cronjobs.batch",
    "pods",
    "services",
];

/// [`DEFAULT_RESOURCES`] as owned strings (the default of every merged-resources setting).
pub fn default_resources() -> Vec<String> {
    DEFAULT_RESOURCES.iter().map(|r| r.to_string()).collect()
}

/// `plural.group` -> (group, plural); `pods` -> ("", "pods").
pub fn parse_resource(text: &str) -> (String, String) {
    match text.split_once('.') {
        Some((plural, group)) => (group.to_string(), plural.to_string()),
        None => (String::new(), text.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_name_their_group() {
        assert_eq!(
            parse_resource("deployments.apps"),
            ("apps".into(), "deployments".into())
        );
        assert_eq!(parse_resource("pods"), (String::new(), "pods".into()));
        assert_eq!(
            parse_resource("ingresses.networking.k8s.io"),
            ("networking.k8s.io".into(), "ingresses".into())
        );
    }
}
