//! What a served resource is: [`ResourceDef`] holds the names discovery publishes, the scope,
//! the subresources, and the per-kind hooks (validation, defaulting, Table printing, OpenAPI
//! schema). Built-in kinds and CRDs are both described this way, so adding a kind is one
//! registration, not a new handler.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::status::Cause;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(group: &str, version: &str, kind: &str) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }
    /// `apps/v1` or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// A subresource served by a custom handler with its own request and response kind, published
/// in discovery as declared (e.g. `serviceaccounts/token`: verb `create`, kind
/// `authentication.k8s.io/v1 TokenRequest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubresourceDef {
    pub name: String,
    pub kind: GroupVersionKind,
    pub verbs: Vec<String>,
}

impl SubresourceDef {
    pub fn new(name: &str, kind: GroupVersionKind, verbs: &[&str]) -> Self {
        Self {
            name: name.into(),
            kind,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
        }
    }
}

/// How the `scale` subresource maps onto the object (same shape as a CRD's
/// `subresources.scale`). Paths are dot paths from the object root, e.g. `.spec.replicas`.
#[derive(Debug, Clone)]
pub struct ScaleDef {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    /// Path of a string label selector in the object; `None` means: format `.spec.selector`
    /// (a `LabelSelector` object) as a string, as the built-in workload kinds do.
    pub label_selector_path: Option<String>,
}

impl ScaleDef {
    pub fn standard() -> Self {
        Self {
            spec_replicas_path: ".spec.replicas".into(),
            status_replicas_path: ".status.replicas".into(),
            label_selector_path: None,
        }
    }
}

/// A subresource written like `status`: PUT and PATCH through it change only the part of the
/// object at `path` (everything else is kept as stored), and writes to the main resource keep
/// that part as stored. GET returns the whole object. Discovery lists it with the verbs get,
/// patch and update. E.g. `certificatesigningrequests/approval` owns `.status.conditions`.
#[derive(Clone)]
pub struct PartialSubresource {
    /// `approval`.
    pub name: String,
    /// Dot path of the part it writes, from the object root (`.status.conditions`).
    pub path: String,
    /// Permissions a writer needs beyond `update`/`patch` on the subresource itself, computed
    /// from the stored object (kube's admission checks, e.g. `approve` on a CSR's signer).
    pub permission: Option<PermissionFn>,
}

impl fmt::Debug for PartialSubresource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartialSubresource")
            .field("name", &self.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A permission a write needs on top of the request's own: allowed when the writer may do
/// `verb` on `resource` of `group` under any one of `names`; otherwise the write is forbidden
/// with `message` (kube's admission wording, e.g. `user not permitted to approve requests with
/// signerName "example.com/x"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Permission {
    pub verb: String,
    pub group: String,
    pub resource: String,
    pub names: Vec<String>,
    pub message: String,
}

/// The extra permission writing a subresource of this stored object needs (`None`: none).
pub type PermissionFn = Arc<dyn Fn(&Value) -> Option<Permission> + Send + Sync>;

/// Who is writing, as a kind's [`PrepareCreateFn`] sees it (kube's `user.Info`).
#[derive(Debug, Clone, Copy)]
pub struct Requester<'a> {
    pub name: &'a str,
    pub uid: &'a str,
    pub groups: &'a [String],
    pub extra: &'a BTreeMap<String, Vec<String>>,
}

/// Adjusts an object about to be created from who creates it (kube's strategy
/// `PrepareForCreate`, e.g. a CSR records its requester). `None` when the write has no user
/// (the server's own bootstrap writes).
pub type PrepareCreateFn = Arc<dyn Fn(&mut Value, Option<&Requester<'_>>) + Send + Sync>;

/// A kind's own update rules that depend on which (sub)resource is written (kube's per-
/// subresource strategy `PrepareForUpdate` and `ValidateUpdate`): called with the new object
/// after the generic subresource merge, the stored object and the subresource (`None` for the
/// main resource, else e.g. `status`); may adjust the new object and returns the causes the
/// update is invalid for (`422`). Runs before defaulting and the kind's validation.
pub type PrepareUpdateFn =
    Arc<dyn Fn(&mut Value, &Value, Option<&str>) -> Vec<Cause> + Send + Sync>;

/// A Table column (`meta.k8s.io/v1 TableColumnDefinition`).
#[derive(Debug, Clone)]
pub struct TableColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`.
    pub column_type: String,
    /// `name` for the name column, otherwise empty.
    pub format: String,
    pub description: String,
    /// 0 = always shown; 1 = only with `-o wide`.
    pub priority: u32,
}

impl TableColumn {
    pub fn new(name: &str, column_type: &str, priority: u32) -> Self {
        Self {
            name: name.into(),
            column_type: column_type.into(),
            format: if name == "Name" {
                "name".into()
            } else {
                String::new()
            },
            description: String::new(),
            priority,
        }
    }
}

/// Computes one Table row's cells for an object (one per column, in order).
pub type CellsFn = Arc<dyn Fn(&Value, DateTime<Utc>) -> Vec<Value> + Send + Sync>;

/// The Table view of a kind.
#[derive(Clone)]
pub struct TablePrinter {
    pub columns: Vec<TableColumn>,
    pub cells: CellsFn,
    /// The only fields [`Self::cells`] reads besides `metadata`, as paths of field names from
    /// the object's root (`["status", "conditions"]`: that field and all under it); `None`:
    /// any field. A Table's rows parse only these, so large fields no column shows (a
    /// Cluster's `apiEnablements`) cost no allocations.
    pub reads: Option<Arc<Vec<Vec<String>>>>,
}

impl fmt::Debug for TablePrinter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TablePrinter")
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

/// What validating an incoming object found.
#[derive(Debug, Clone, Default)]
pub struct Validation {
    /// The body does not decode into the kind's type (wrong JSON types): `400 BadRequest`.
    pub decode_error: Option<String>,
    /// Fields the kind's type does not know, as dot paths (`spec.foo`); rejected under
    /// `fieldValidation=Strict`, reported as warnings under `Warn`, ignored under `Ignore`.
    pub unknown_fields: Vec<String>,
    /// Semantic errors (`422 Invalid`).
    pub causes: Vec<Cause>,
}

/// Validates an object about to be written; `old` is the stored version on updates.
pub type ValidateFn = Arc<dyn Fn(&Value, Option<&Value>) -> Validation + Send + Sync>;

/// Fills defaults into an object about to be written.
pub type DefaultFn = Arc<dyn Fn(&mut Value) + Send + Sync>;

/// Drops fields the kind does not declare from an object about to be written and returns
/// their paths (`spec.bogus`), as kube-apiserver does when it decodes into its types or prunes
/// by a CRD's structural schema. The server rejects them under `fieldValidation=Strict`.
pub type PruneFn = Arc<dyn Fn(&mut Value) -> Vec<String> + Send + Sync>;

/// Converts an object between the versions of one resource: given the object (at any served
/// version) and the target version (`v1`), returns it at that version with `apiVersion` set.
/// Only resources whose versions differ in shape (autoscaling's HorizontalPodAutoscaler) need
/// one; without it conversion rewrites `apiVersion` alone.
pub type ConvertFn = Arc<dyn Fn(&Value, &str) -> Value + Send + Sync>;

/// OpenAPI v3 schemas of a kind: the name of its root schema and every schema it refers to
/// (references written as `#/components/schemas/<name>`).
#[derive(Debug, Clone, Default)]
pub struct OpenApiSchemas {
    pub root: String,
    pub components: BTreeMap<String, Value>,
}

/// One served resource (a group/version/resource).
#[derive(Clone)]
pub struct ResourceDef {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// `DeploymentList`.
    pub list_kind: String,
    /// `deployments`.
    pub plural: String,
    /// `deployment`.
    pub singular: String,
    pub short_names: Vec<String>,
    /// e.g. `["all"]` to appear in `kubectl get all`.
    pub categories: Vec<String>,
    pub namespaced: bool,
    /// Whether the `status` subresource exists (then writes to the main resource keep the
    /// stored status and writes to `/status` keep everything but status).
    pub has_status: bool,
    pub scale: Option<ScaleDef>,
    /// Subresources other than `status` that write one part of the object.
    pub partial_subresources: Vec<PartialSubresource>,
    /// Subresources served by a custom handler of the server (e.g. `proxy`), listed in
    /// discovery with the connect verbs.
    pub connect_subresources: Vec<String>,
    /// Other subresources served by a custom handler, each with its own kind and verbs.
    pub custom_subresources: Vec<SubresourceDef>,
    /// Whether `application/strategic-merge-patch+json` is served (built-in kinds only;
    /// custom kinds answer 415).
    pub strategic_merge: bool,
    /// Whether objects carry `metadata.generation` (1 at create, one more at each change of
    /// what is not metadata or status). kube-apiserver keeps it for custom resources and the
    /// built-in kinds with a spec that controllers observe, not for ConfigMaps, Secrets,
    /// Services, RBAC objects and the like.
    pub generation: bool,
    /// The group/version whose objects are kept in storage (CRDs with several versions
    /// store one); `None` means this version itself.
    pub storage_version: Option<String>,
    /// Field mapping between this version and the storage version (see [`ConvertFn`]);
    /// `None` when the versions share one schema.
    pub convert: Option<ConvertFn>,
    /// A virtual resource that only answers `create` (access and token reviews): nothing is
    /// stored, the server computes the answer.
    pub create_only: bool,
    pub prune: Option<PruneFn>,
    pub validate: Option<ValidateFn>,
    pub default: Option<DefaultFn>,
    pub prepare_create: Option<PrepareCreateFn>,
    pub prepare_update: Option<PrepareUpdateFn>,
    pub printer: Option<TablePrinter>,
    pub openapi: Option<Arc<OpenApiSchemas>>,
}

impl fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceDef")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("kind", &self.kind)
            .field("plural", &self.plural)
            .field("namespaced", &self.namespaced)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// A resource with the usual derived names (`<Kind>List`, lowercase singular) and no hooks.
    pub fn new(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced,
            has_status: false,
            scale: None,
            partial_subresources: Vec::new(),
            connect_subresources: Vec::new(),
            custom_subresources: Vec::new(),
            strategic_merge: false,
            generation: true,
            storage_version: None,
            convert: None,
            create_only: false,
            prune: None,
            validate: None,
            default: None,
            prepare_create: None,
            prepare_update: None,
            printer: None,
            openapi: None,
        }
    }

    pub fn short_names(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn categories(mut self, names: &[&str]) -> Self {
        self.categories = names.iter().map(|s| s.to_string()).collect();
        self
    }
    pub fn with_status(mut self) -> Self {
        self.has_status = true;
        self
    }
    pub fn with_scale(mut self, scale: ScaleDef) -> Self {
        self.scale = Some(scale);
        self
    }
    pub fn with_partial_subresource(mut self, sub: PartialSubresource) -> Self {
        self.partial_subresources.push(sub);
        self
    }
    /// Publishes a subresource served by a custom handler (see [`SubresourceDef`]).
    pub fn with_subresource(mut self, sub: SubresourceDef) -> Self {
        self.custom_subresources.retain(|s| s.name != sub.name);
        self.custom_subresources.push(sub);
        self
    }
    pub fn with_strategic_merge(mut self) -> Self {
        self.strategic_merge = true;
        self
    }

    /// The path of the object a write through `subresource` may change: `.status` for
    /// `status` (when served), a partial subresource's own path, `None` for anything else.
    pub fn subresource_path(&self, subresource: &str) -> Option<&str> {
        if subresource == "status" && self.has_status {
            return Some(".status");
        }
        self.partial_subresources
            .iter()
            .find(|s| s.name == subresource)
            .map(|s| s.path.as_str())
    }

    /// The paths a write to the main resource keeps as stored: `.status` (when the `status`
    /// subresource exists) and every partial subresource's path.
    pub fn subresource_owned_paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        if self.has_status {
            out.push(".status");
        }
        out.extend(self.partial_subresources.iter().map(|s| s.path.as_str()));
        out
    }

    /// Serves this version from objects stored at `storage_version`, converted by `convert`.
    pub fn stored_as(mut self, storage_version: &str, convert: ConvertFn) -> Self {
        self.storage_version = Some(storage_version.to_string());
        self.convert = Some(convert);
        self
    }

    /// `value` (at any version of this resource) at `version`: the kind's conversion when it
    /// has one, otherwise the same object with its `apiVersion` rewritten.
    pub fn convert_to(&self, value: &Value, version: &str) -> Value {
        if let Some(convert) = &self.convert {
            return convert(value, version);
        }
        let mut v = value.clone();
        if let Some(m) = v.as_object_mut() {
            let av = GroupVersionKind::new(&self.group, version, &self.kind).api_version();
            m.insert("apiVersion".into(), Value::String(av));
        }
        v
    }

    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }
    /// `apps/v1` or `v1`.
    pub fn api_version(&self) -> String {
        self.gvk().api_version()
    }

    /// The kind's `{group, version, kind}` as OpenAPI documents name it
    /// (`x-kubernetes-group-version-kind`).
    pub fn openapi_gvk(&self) -> Value {
        serde_json::json!({"group": self.group, "version": self.version, "kind": self.kind})
    }

    /// The name of the kind's root schema in the OpenAPI documents: its own schema's, or
    /// kube's reversed-group form (`io.k8s.api.apps.v1.Deployment` style).
    pub fn openapi_root_schema(&self) -> String {
        match &self.openapi {
            Some(s) => s.root.clone(),
            None => {
                let reversed: Vec<&str> = self.group.split('.').rev().collect();
                format!("{}.{}.{}", reversed.join("."), self.version, self.kind)
            }
        }
    }
    /// The apiVersion objects of this resource are stored with.
    pub fn storage_api_version(&self) -> String {
        match &self.storage_version {
            Some(v) => GroupVersionKind::new(&self.group, v, &self.kind).api_version(),
            None => self.api_version(),
        }
    }

    /// Whether objects must be converted between the served and the stored version.
    pub fn converts(&self) -> bool {
        self.storage_version
            .as_ref()
            .is_some_and(|v| v != &self.version)
    }

    /// The verbs discovery lists for the main resource.
    pub fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            return vec!["create"];
        }
        vec![
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subresource_paths() {
        let plain = ResourceDef::new("g", "v1", "K", "ks", false);
        assert_eq!(plain.subresource_path("status"), None);
        assert!(plain.subresource_owned_paths().is_empty());
        let def = plain
            .with_status()
            .with_partial_subresource(PartialSubresource {
                name: "approval".into(),
                path: ".status.conditions".into(),
                permission: None,
            });
        assert_eq!(def.subresource_path("status"), Some(".status"));
        assert_eq!(def.subresource_path("approval"), Some(".status.conditions"));
        assert_eq!(def.subresource_path("scale"), None);
        assert_eq!(
            def.subresource_owned_paths(),
            [".status", ".status.conditions"]
        );
    }
}
