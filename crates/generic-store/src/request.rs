//! Request info: what a request asks for, parsed once when it arrives (kube's RequestInfo
//! filter). The path becomes an [`ApiPath`] (which API, resource, namespace, name,
//! subresource), the method and path one [`Verb`] (the single table authorization, metrics,
//! audit and dispatch all read), and the query the options of that verb ([`ListOptions`],
//! [`WriteQuery`], [`DeleteQuery`]). Query strings may start with `?&` (kube-rs sends them
//! that way). A malformed option is kept as the error the request is answered with once it
//! has been authenticated and authorized, as kube answers it from its handlers.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use flotilla_apimachinery::ApiError;
use http::{HeaderMap, Method, header};

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

/// A `resourceVersion` as clients send and receive it: opaque at the API layer. Only the
/// storage serving a resource knows its form (the generic store's are decimal revisions; a
/// merged read's are composite), so it is parsed there, never in the handlers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceVersion(String);

impl ResourceVersion {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// `"0"`: "any version" for every storage (kube's semantics for lists and watches).
    pub fn is_any(&self) -> bool {
        self.0 == "0"
    }
}

impl fmt::Display for ResourceVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<u64> for ResourceVersion {
    fn from(revision: u64) -> Self {
        Self(revision.to_string())
    }
}

/// The verb of a request. Resource requests get kube's resource verbs; other requests the
/// lowercase method (`get` for GET and HEAD).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    /// A non-resource POST.
    Post,
    /// A non-resource PUT.
    Put,
    /// A method no verb covers.
    Unknown,
}

impl Verb {
    /// Resource verbs from the method, whether a name is given and `watch=true`.
    fn for_resource(method: &Method, named: bool, watch: bool) -> Self {
        match (method.as_str(), named) {
            ("GET" | "HEAD", _) if watch => Verb::Watch,
            ("GET" | "HEAD", false) => Verb::List,
            ("GET" | "HEAD", true) => Verb::Get,
            ("POST", _) => Verb::Create,
            ("PUT", _) => Verb::Update,
            ("PATCH", _) => Verb::Patch,
            ("DELETE", false) => Verb::DeleteCollection,
            ("DELETE", true) => Verb::Delete,
            _ => Verb::Unknown,
        }
    }

    fn for_non_resource(method: &Method) -> Self {
        match method.as_str() {
            "GET" | "HEAD" => Verb::Get,
            "POST" => Verb::Post,
            "PUT" => Verb::Put,
            "PATCH" => Verb::Patch,
            "DELETE" => Verb::Delete,
            _ => Verb::Unknown,
        }
    }

    /// The verb as RBAC, metrics and the audit log name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Unknown => "unknown",
        }
    }

    /// Verbs whose request carries a body.
    pub fn has_body(self) -> bool {
        matches!(
            self,
            Verb::Create | Verb::Update | Verb::Patch | Verb::Delete | Verb::DeleteCollection
        )
    }
}

/// The options of a list, watch or deletecollection.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub resource_version: Option<ResourceVersion>,
    pub resource_version_match: Option<String>,
    /// A positive page size (`limit=0` means no limit).
    pub limit: Option<u64>,
    pub continue_token: Option<String>,
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub timeout: Option<Duration>,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    fn parse(q: &Query) -> Result<Self, ApiError> {
        let send_initial_events = match q.get("sendInitialEvents") {
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "invalid sendInitialEvents {other:?}"
                )));
            }
            None => None,
        };
        Ok(Self {
            resource_version: q.get("resourceVersion").map(ResourceVersion::new),
            resource_version_match: q.get("resourceVersionMatch").map(str::to_string),
            limit: q.u64("limit")?.filter(|l| *l > 0),
            continue_token: q.get("continue").map(str::to_string),
            label_selector: q.get("labelSelector").map(str::to_string),
            field_selector: q.get("fieldSelector").map(str::to_string),
            timeout: q.u64("timeoutSeconds")?.map(Duration::from_secs),
            allow_bookmarks: q.flag("allowWatchBookmarks"),
            send_initial_events,
        })
    }
}

/// The query options of create, update and patch.
#[derive(Debug, Clone)]
pub struct WriteQuery {
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// As sent; defaulted from the user agent by the store when absent.
    pub field_manager: Option<String>,
    /// `force` of a server-side apply.
    pub force: bool,
}

impl WriteQuery {
    fn parse(q: &Query) -> Result<Self, ApiError> {
        let force = match q.get("force") {
            None | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                return Err(ApiError::bad_request(format!(
                    "invalid value for force: {other:?}"
                )));
            }
        };
        if let Some(m) = q.get("fieldManager") {
            if m.len() > 128 {
                return Err(ApiError::bad_request(
                    "fieldManager must be at most 128 characters",
                ));
            }
        }
        Ok(Self {
            dry_run: q.dry_run()?,
            field_validation: q.field_validation()?,
            field_manager: q.get("fieldManager").map(str::to_string),
            force,
        })
    }
}

/// The query options of a GET of one object.
#[derive(Debug, Clone, Default)]
pub struct GetQuery {
    /// Read a state at least this new (opaque here; the serving storage parses it).
    pub resource_version: Option<ResourceVersion>,
}

impl GetQuery {
    fn parse(q: &Query) -> Self {
        Self {
            resource_version: q.get("resourceVersion").map(ResourceVersion::new),
        }
    }
}

/// The query options of delete and deletecollection.
#[derive(Debug, Clone, Default)]
pub struct DeleteQuery {
    pub dry_run: bool,
    pub propagation_policy: Option<String>,
    pub grace_period_seconds: Option<i64>,
}

impl DeleteQuery {
    fn parse(q: &Query) -> Result<Self, ApiError> {
        let grace_period_seconds =
            match q.get("gracePeriodSeconds") {
                None => None,
                Some(g) => Some(g.parse::<i64>().map_err(|_| {
                    ApiError::bad_request(format!("invalid gracePeriodSeconds {g:?}"))
                })?),
            };
        Ok(Self {
            dry_run: q.dry_run()?,
            propagation_policy: q.get("propagationPolicy").map(str::to_string),
            grace_period_seconds,
        })
    }
}

/// The parsed options of a resource request's verb.
#[derive(Debug, Clone, Default)]
pub struct VerbOptions {
    pub get: GetQuery,
    pub list: ListOptions,
    pub write: Option<WriteQuery>,
    pub delete: DeleteQuery,
}

/// Everything the filters and handlers need to know about a request, parsed once.
#[derive(Debug, Clone)]
pub struct RequestInfo {
    pub method: Method,
    /// The path, percent-encoding kept.
    pub path: String,
    /// Path and query, for the audit log.
    pub uri: String,
    pub user_agent: String,
    pub query: Query,
    /// `None` for paths outside `/api` and `/apis`.
    pub api: Option<ApiPath>,
    pub verb: Verb,
    /// The verb's options, or the error a malformed one gets.
    pub options: Result<VerbOptions, ApiError>,
}

impl RequestInfo {
    pub fn parse(method: &Method, uri: &http::Uri, headers: &HeaderMap) -> Self {
        let path = uri.path().to_string();
        let query = Query::parse(uri.query());
        let api = parse_api_path(&path);
        let watch = query.flag("watch");
        let verb = match &api {
            Some(ApiPath::Resource(rp)) => Verb::for_resource(method, rp.name.is_some(), watch),
            _ => Verb::for_non_resource(method),
        };
        let options = match (&api, verb) {
            (Some(ApiPath::Resource(_)), _) => Self::parse_options(verb, &query),
            _ => Ok(VerbOptions::default()),
        };
        Self {
            method: method.clone(),
            uri: uri
                .path_and_query()
                .map(|pq| pq.to_string())
                .unwrap_or_else(|| path.clone()),
            path,
            user_agent: headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
            query,
            api,
            verb,
            options,
        }
    }

    fn parse_options(verb: Verb, q: &Query) -> Result<VerbOptions, ApiError> {
        let mut options = VerbOptions::default();
        match verb {
            Verb::Get => options.get = GetQuery::parse(q),
            Verb::List | Verb::Watch => options.list = ListOptions::parse(q)?,
            Verb::DeleteCollection => {
                options.list = ListOptions::parse(q)?;
                options.delete = DeleteQuery::parse(q)?;
            }
            Verb::Delete => options.delete = DeleteQuery::parse(q)?,
            Verb::Create | Verb::Update | Verb::Patch => {
                options.write = Some(WriteQuery::parse(q)?)
            }
            _ => {}
        }
        Ok(options)
    }

    /// The resource the request targets, when it is a resource request.
    pub fn resource(&self) -> Option<&ResourcePath> {
        match &self.api {
            Some(ApiPath::Resource(rp)) => Some(rp),
            _ => None,
        }
    }

    /// The namespace of a resource request (for the audit log).
    pub fn namespace(&self) -> Option<&str> {
        self.resource().and_then(|rp| rp.namespace.as_deref())
    }

    /// The verb's options, or the error a malformed one got.
    pub fn options(&self) -> Result<&VerbOptions, ApiError> {
        self.options.as_ref().map_err(Clone::clone)
    }

    /// `resource` or `resource/subresource`, as metrics label a resource request.
    pub fn resource_label(&self) -> String {
        match self.resource() {
            Some(rp) => match &rp.subresource {
                Some(sub) => format!("{}/{sub}", rp.resource),
                None => rp.resource.clone(),
            },
            None => String::new(),
        }
    }
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

    fn info(method: Method, uri: &str) -> RequestInfo {
        RequestInfo::parse(&method, &uri.parse().unwrap(), &HeaderMap::new())
    }

    #[test]
    fn one_verb_table_for_every_request() {
        let cases = [
            (Method::GET, "/api/v1/namespaces/a/pods", Verb::List),
            (Method::HEAD, "/api/v1/namespaces/a/pods", Verb::List),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods?watch=1",
                Verb::Watch,
            ),
            (Method::GET, "/api/v1/namespaces/a/pods/p", Verb::Get),
            (Method::HEAD, "/api/v1/namespaces/a/pods/p", Verb::Get),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p?watch=true",
                Verb::Watch,
            ),
            (Method::POST, "/api/v1/namespaces/a/pods", Verb::Create),
            // POST with a name (pods/binding, serviceaccounts/token) is a create, as for
            // authorization.
            (
                Method::POST,
                "/api/v1/namespaces/a/pods/p/binding",
                Verb::Create,
            ),
            (Method::PUT, "/api/v1/namespaces/a/pods/p", Verb::Update),
            (Method::PATCH, "/api/v1/namespaces/a/pods/p", Verb::Patch),
            (Method::DELETE, "/api/v1/namespaces/a/pods/p", Verb::Delete),
            (
                Method::DELETE,
                "/api/v1/namespaces/a/pods",
                Verb::DeleteCollection,
            ),
            (Method::OPTIONS, "/api/v1/namespaces/a/pods", Verb::Unknown),
            (Method::GET, "/healthz", Verb::Get),
            (Method::HEAD, "/apis", Verb::Get),
            (Method::POST, "/metrics", Verb::Post),
        ];
        for (method, uri, verb) in cases {
            assert_eq!(info(method.clone(), uri).verb, verb, "{method} {uri}");
        }
    }

    #[test]
    fn options_are_parsed_for_their_verb_only() {
        let list = info(
            Method::GET,
            "/api/v1/pods?limit=5&continue=abc&resourceVersion=12&labelSelector=a%3Db&timeoutSeconds=3",
        );
        let o = list.options().unwrap();
        assert_eq!(o.list.limit, Some(5));
        assert_eq!(o.list.continue_token.as_deref(), Some("abc"));
        assert_eq!(
            o.list
                .resource_version
                .as_ref()
                .map(ResourceVersion::as_str),
            Some("12")
        );
        assert_eq!(o.list.label_selector.as_deref(), Some("a=b"));
        assert_eq!(o.list.timeout, Some(Duration::from_secs(3)));
        assert_eq!(
            info(Method::GET, "/api/v1/pods?limit=x")
                .options()
                .unwrap_err()
                .code,
            400
        );
        // A GET by name ignores list options, as kube does, and keeps its resourceVersion
        // as sent for the storage to read.
        let get = info(
            Method::GET,
            "/api/v1/namespaces/a/pods/p?limit=x&resourceVersion=abc",
        );
        assert_eq!(
            get.options()
                .unwrap()
                .get
                .resource_version
                .as_ref()
                .map(ResourceVersion::as_str),
            Some("abc")
        );
        let write = info(
            Method::POST,
            "/api/v1/namespaces/a/pods?dryRun=All&fieldManager=me&fieldValidation=Strict",
        );
        let w = write.options().unwrap().write.clone().unwrap();
        assert!(w.dry_run);
        assert_eq!(w.field_manager.as_deref(), Some("me"));
        assert_eq!(w.field_validation, FieldValidation::Strict);
        assert_eq!(
            info(Method::POST, "/api/v1/namespaces/a/pods?dryRun=Some")
                .options()
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            info(
                Method::DELETE,
                "/api/v1/namespaces/a/pods/p?gracePeriodSeconds=x"
            )
            .options()
            .unwrap_err()
            .code,
            400
        );
        let rv = ResourceVersion::from(42);
        assert_eq!(rv.as_str(), "42");
        assert!(ResourceVersion::new("0").is_any());
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
