//! Parsing of request paths and query strings into what a handler needs: which API
//! (group/version), which resource, namespace, name and subresource, and the options of the
//! verb. Query strings may start with `?&` (kube-rs sends them that way).

use std::collections::HashMap;

use flotilla_apimachinery::ApiError;

/// Where a resource request points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
    /// For subresources that take a path (`clusters/{name}/proxy/{path}`): everything after
    /// the subresource, starting with `/`, exactly as sent (percent-encoding kept).
    pub sub_path: Option<String>,
}

/// What a path under `/api` or `/apis` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiPath {
    /// `/api` or `/apis`
    Root {
        legacy: bool,
    },
    /// `/apis/{group}`
    Group {
        group: String,
    },
    /// `/api/v1` or `/apis/{group}/{version}`
    GroupVersion {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
}

/// Subresources of `namespaces/{name}` (otherwise `namespaces/{ns}/{resource}` is a
/// namespaced request).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Parses `/api/...` and `/apis/...` paths; `None` for anything else.
pub fn parse_api_path(path: &str) -> Option<ApiPath> {
    let trimmed = path.trim_end_matches('/');
    let parts: Vec<&str> = trimmed.split('/').skip(1).collect();
    let (group, version, rest) = match parts.as_slice() {
        ["api"] => return Some(ApiPath::Root { legacy: true }),
        ["apis"] => return Some(ApiPath::Root { legacy: false }),
        ["apis", group] => {
            return Some(ApiPath::Group {
                group: group.to_string(),
            });
        }
        ["api", version, rest @ ..] => (String::new(), version.to_string(), rest),
        ["apis", group, version, rest @ ..] => (group.to_string(), version.to_string(), rest),
        _ => return None,
    };
    if rest.is_empty() {
        return Some(ApiPath::GroupVersion { group, version });
    }
    // Empty segments are only allowed inside a subresource's own path.
    if rest
        .iter()
        .take(if rest.first() == Some(&"namespaces") {
            5
        } else {
            3
        })
        .any(|p| p.is_empty())
    {
        return None;
    }
    let (namespace, rest): (Option<String>, &[&str]) =
        if rest[0] == "namespaces" && rest.len() >= 3 && !NAMESPACE_SUBRESOURCES.contains(&rest[2])
        {
            (Some(rest[1].to_string()), &rest[2..])
        } else {
            (None, rest)
        };
    let sub_path = if rest.len() > 3 {
        // Segments before the sub-path: api|apis [group] version [namespaces ns] resource name sub.
        let consumed =
            if group.is_empty() { 2 } else { 3 } + if namespace.is_some() { 2 } else { 0 } + 3;
        let start = path.match_indices('/').nth(consumed).map(|(i, _)| i)?;
        Some(path[start..].to_string())
    } else {
        None
    };
    Some(ApiPath::Resource(ResourcePath {
        group,
        version,
        namespace,
        resource: rest[0].to_string(),
        name: rest.get(1).map(|s| s.to_string()),
        subresource: rest.get(2).map(|s| s.to_string()),
        sub_path,
    }))
}

/// The query string as a map (last value wins; empty keys ignored).
#[derive(Debug, Clone, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(query: Option<&str>) -> Self {
        let mut map = HashMap::new();
        if let Some(q) = query {
            for (k, v) in form_urlencoded::parse(q.as_bytes()) {
                if !k.is_empty() {
                    map.insert(k.into_owned(), v.into_owned());
                }
            }
        }
        Self(map)
    }
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }
    pub fn flag(&self, key: &str) -> bool {
        matches!(self.0.get(key).map(String::as_str), Some("true" | "1" | ""))
            && self.0.contains_key(key)
    }
    /// A non-negative integer parameter; 400 when present but malformed.
    pub fn u64(&self, key: &str) -> Result<Option<u64>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.parse::<u64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for {key}: {v:?}: must be a non-negative integer"
                ))
            }),
        }
    }
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        match self.get("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "unsupported dryRun value {other:?}: only All is supported"
            ))),
        }
    }
    pub fn field_validation(&self) -> Result<FieldValidation, ApiError> {
        match self.get("fieldValidation") {
            None | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation must be one of Ignore, Warn or Strict, got {other:?}"
            ))),
        }
    }
}

/// How unknown fields in a write are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// A resourceVersion query or body value: decimal or 400.
pub fn parse_resource_version(rv: &str) -> Result<u64, ApiError> {
    rv.parse::<u64>().map_err(|_| {
        ApiError::bad_request(format!(
            "invalid resource version {rv:?}: must be a decimal number"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse_api_path(path) {
            Some(ApiPath::Resource(r)) => r,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn parses_paths() {
        let r = res("/apis/apps/v1/namespaces/default/deployments/web/scale");
        assert_eq!(
            (
                r.group.as_str(),
                r.namespace.as_deref(),
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            (
                "apps",
                Some("default"),
                "deployments",
                Some("web"),
                Some("scale")
            )
        );
        let r = res("/api/v1/namespaces/foo");
        assert_eq!(
            (r.resource.as_str(), r.name.as_deref(), r.namespace),
            ("namespaces", Some("foo"), None)
        );
        let r = res("/api/v1/namespaces/foo/status");
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_deref(),
                r.subresource.as_deref()
            ),
            ("namespaces", Some("foo"), Some("status"))
        );
        let r = res("/api/v1/namespaces/foo/configmaps");
        assert_eq!(
            (r.resource.as_str(), r.namespace.as_deref(), r.name),
            ("configmaps", Some("foo"), None)
        );
        let r = res("/apis/apps/v1/deployments");
        assert_eq!((r.resource.as_str(), r.namespace), ("deployments", None));
        assert_eq!(
            parse_api_path("/apis"),
            Some(ApiPath::Root { legacy: false })
        );
        assert_eq!(
            parse_api_path("/api/v1"),
            Some(ApiPath::GroupVersion {
                group: String::new(),
                version: "v1".into()
            })
        );
        assert_eq!(parse_api_path("/healthz"), None);
        let r = res("/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/namespaces/");
        assert_eq!(
            (r.name.as_deref(), r.subresource.as_deref()),
            (Some("m1"), Some("proxy"))
        );
        assert_eq!(r.sub_path.as_deref(), Some("/api/v1/namespaces/"));
        let r = res("/api/v1/namespaces/a/pods/b/proxy/x%2Fy");
        assert_eq!(
            (r.namespace.as_deref(), r.sub_path.as_deref()),
            (Some("a"), Some("/x%2Fy"))
        );
        let r = res("/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy");
        assert_eq!(r.sub_path, None);
        assert_eq!(parse_api_path("/apis/g/v//x"), None);
    }

    #[test]
    fn parses_queries_with_leading_ampersand() {
        let q = Query::parse(Some("&limit=500&watch=true&labelSelector=app%3Dweb"));
        assert_eq!(q.u64("limit").unwrap(), Some(500));
        assert!(q.flag("watch"));
        assert_eq!(q.get("labelSelector"), Some("app=web"));
        assert!(Query::parse(Some("limit=x")).u64("limit").is_err());
    }
}
