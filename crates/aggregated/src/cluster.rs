//! The Cluster resource: names, printer columns (NAME VERSION MODE READY AGE, wide ZONES
//! REGION PROVIDER API-ENDPOINT PROXY-URL), validation (sync mode, endpoint URL, zone vs
//! zones, taints, names, no credentials with a plain HTTP endpoint: [`validate_transport`]) and defaults (resource
//! model grades), as Karmada users know them.

use std::sync::Arc;

use flotilla_apimachinery::{Cause, ResourceDef};
use serde_json::{Value, json};

pub const GROUP: &str = "cluster.karmada.io";
pub const VERSION: &str = "v1alpha1";

fn invalid(field: &str, value: &Value, detail: &str) -> Cause {
    let shown = match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    };
    Cause::new(
        "FieldValueInvalid",
        format!("Invalid value: {shown}: {detail}"),
        field,
    )
}

/// The fields of a Cluster's spec that decide where its credentials go.
const CONNECTION_FIELDS: [&str; 5] = [
    "apiEndpoint",
    "proxyURL",
    "insecureSkipTLSVerification",
    "secretRef",
    "impersonatorSecretRef",
];

/// The spec fields that name credentials Secrets.
const SECRET_REFERENCES: [&str; 2] = ["secretRef", "impersonatorSecretRef"];

/// A Secret a Cluster names: the field naming it, its namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretReference {
    pub field: &'static str,
    pub namespace: String,
    pub name: String,
}

/// The Secrets `cluster` names, in field order (a reference without a name names nothing:
/// validation refuses it).
pub fn secret_references(cluster: &Value) -> Vec<SecretReference> {
    SECRET_REFERENCES
        .iter()
        .filter_map(|field| {
            let reference = cluster.get("spec")?.get(*field)?;
            let part = |key: &str| {
                reference
                    .get(key)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string()
            };
            let name = part("name");
            (!name.is_empty()).then(|| SecretReference {
                field,
                namespace: part("namespace"),
                name,
            })
        })
        .collect()
}

/// A connection field as compared across an update: absent, `null`, `""` and `false` are
/// all "not set".
fn connection_field<'a>(cluster: &'a Value, field: &str) -> Option<&'a Value> {
    cluster
        .get("spec")
        .and_then(|spec| spec.get(field))
        .filter(|v| !matches!(v, Value::Null | Value::Bool(false)) && v.as_str() != Some(""))
}

/// Whether an update changes where or how the Cluster's credentials are sent.
pub fn connection_changed(old: &Value, new: &Value) -> bool {
    CONNECTION_FIELDS
        .iter()
        .any(|field| connection_field(old, field) != connection_field(new, field))
}

/// The checks kube-apiserver-style validation makes on a Cluster.
pub fn validate(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str) {
        if let Err(msg) = flotilla_apimachinery::names::is_dns1123_label(name) {
            causes.push(invalid("metadata.name", &json!(name), &msg));
        } else if name.len() > 48 {
            causes.push(invalid(
                "metadata.name",
                &json!(name),
                "must be no more than 48 characters",
            ));
        }
    }
    if let Some(labels) = obj.pointer("/metadata/labels").and_then(Value::as_object) {
        for (value, msg) in flotilla_apimachinery::names::validate_labels(labels) {
            causes.push(invalid("metadata.labels", &json!(value), &msg));
        }
    }
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    match spec.get("syncMode").and_then(Value::as_str) {
        Some("Push") | Some("Pull") => {}
        Some(other) => causes.push(Cause::new(
            "FieldValueNotSupported",
            format!("Unsupported value: {other:?}: supported values: \"Push\", \"Pull\""),
            "spec.syncMode",
        )),
        None => causes.push(Cause::new(
            "FieldValueRequired",
            "Required value",
            "spec.syncMode",
        )),
    }
    if let Some(endpoint) = spec
        .get("apiEndpoint")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        if let Err(msg) = check_endpoint(endpoint) {
            causes.push(invalid("spec.apiEndpoint", &json!(endpoint), &msg));
        }
    }
    if let Some(proxy) = spec
        .get("proxyURL")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        if proxy
            .parse::<http::Uri>()
            .map(|u| u.host().is_none())
            .unwrap_or(true)
        {
            causes.push(invalid(
                "spec.proxyURL",
                &json!(proxy),
                "must be a URL with a host",
            ));
        }
    }
    let zone = spec
        .get("zone")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty());
    let zones = spec
        .get("zones")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty());
    if zone.is_some() && zones.is_some() {
        causes.push(invalid(
            "spec.zone",
            &json!(zone),
            "zone is deprecated; it may not be set together with zones",
        ));
    }
    for (field, pointer) in [
        ("spec.secretRef", "/secretRef"),
        ("spec.impersonatorSecretRef", "/impersonatorSecretRef"),
    ] {
        if let Some(r) = spec.pointer(pointer).filter(|r| !r.is_null()) {
            for part in ["namespace", "name"] {
                if r.get(part)
                    .and_then(Value::as_str)
                    .is_none_or(str::is_empty)
                {
                    causes.push(Cause::new(
                        "FieldValueRequired",
                        "Required value",
                        format!("{field}.{part}"),
                    ));
                }
            }
        }
    }
    if let Some(taints) = spec.get("taints").and_then(Value::as_array) {
        for (i, t) in taints.iter().enumerate() {
            if t.get("key")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                causes.push(Cause::new(
                    "FieldValueRequired",
                    "Required value",
                    format!("spec.taints[{i}].key"),
                ));
            }
            match t.get("effect").and_then(Value::as_str) {
                Some("NoSchedule" | "PreferNoSchedule" | "NoExecute") => {}
                Some(other) => causes.push(Cause::new(
                    "FieldValueNotSupported",
                    format!("Unsupported value: {other:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""),
                    format!("spec.taints[{i}].effect"),
                )),
                None => causes.push(Cause::new("FieldValueRequired", "Required value", format!("spec.taints[{i}].effect"))),
            }
        }
    }
    causes
}

/// A Cluster naming credentials must have an https endpoint: whoever reaches the member
/// would send them in clear. Checked on create and on updates that change where the
/// credentials go; a Cluster stored before this check existed stays writable (its status,
/// finalizers and taints) until its connection changes, as kube ratchets new validation, and
/// is never contacted meanwhile (`flotilla_membership::is_plain_http`).
pub fn validate_transport(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    if old.is_some_and(|old| !connection_changed(old, obj)) {
        return Vec::new();
    }
    let Some(endpoint) = obj
        .pointer("/spec/apiEndpoint")
        .and_then(Value::as_str)
        .filter(|e| flotilla_membership::is_plain_http(e))
    else {
        return Vec::new();
    };
    secret_references(obj)
        .first()
        .map(|reference| {
            invalid(
                "spec.apiEndpoint",
                &json!(endpoint),
                &format!(
                    "a Cluster naming credentials (spec.{}) must have an https endpoint: \
                     credentials are sent only over TLS",
                    reference.field
                ),
            )
        })
        .into_iter()
        .collect()
}

/// An API endpoint must be an http(s) URL with a host and nothing after the path.
pub fn check_endpoint(endpoint: &str) -> Result<http::Uri, String> {
    let uri: http::Uri = endpoint
        .parse()
        .map_err(|e| format!("must be a URL: {e}"))?;
    match uri.scheme_str() {
        Some("https") | Some("http") => {}
        _ => return Err("must be an http or https URL".into()),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err("must have a host".into());
    }
    if uri.query().is_some() {
        return Err("must not have a query".into());
    }
    Ok(uri)
}

/// Karmada's default resource model: nine grades of CPU and memory ranges.
fn default_resource_models() -> Value {
    let cpu = [0, 1, 2, 4, 8, 16, 32, 64, 128];
    let mem = [
        "0", "4Gi", "16Gi", "32Gi", "64Gi", "128Gi", "256Gi", "512Gi", "1024Gi",
    ];
    let models: Vec<Value> = (0..9)
        .map(|g| {
            let cpu_max = if g + 1 < 9 {
                json!(cpu[g + 1].to_string())
            } else {
                json!("9223372036854775807")
            };
            let mem_max = if g + 1 < 9 {
                json!(mem[g + 1])
            } else {
                json!("9223372036854775807")
            };
            json!({"grade": g, "ranges": [
                {"name": "cpu", "min": cpu[g].to_string(), "max": cpu_max},
                {"name": "memory", "min": mem[g], "max": mem_max},
            ]})
        })
        .collect();
    Value::Array(models)
}

pub fn apply_defaults(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec
        .get("resourceModels")
        .is_none_or(|m| m.as_array().is_some_and(Vec::is_empty) || m.is_null())
    {
        spec.insert("resourceModels".into(), default_resource_models());
    }
}

/// The `clusters` resource definition: the structural schema of `flotilla-karmada-api`'s Cluster
/// (pruning, schema defaults and validation, OpenAPI for `kubectl explain`) plus the checks
/// and defaults above, the `proxy` subresource, strategic merge (Cluster is a typed kind in
/// Karmada) and Karmada's columns.
pub fn cluster_resource() -> ResourceDef {
    let from_schema = serde_json::to_value(flotilla_karmada_api::crd::cluster_crd())
        .ok()
        .and_then(|crd| match flotilla_apiserver::crds::defs_for_crd(&crd) {
            Ok(defs) => defs.into_iter().find(|d| d.version == VERSION),
            Err(causes) => {
                tracing::error!(
                    ?causes,
                    "the Cluster schema does not build; serving Cluster without it"
                );
                None
            }
        });
    let mut def = from_schema.unwrap_or_else(|| {
        ResourceDef::new(GROUP, VERSION, "Cluster", "clusters", false).with_status()
    });
    def.storage_version = None;
    def.strategic_merge = true;
    def.connect_subresources = vec!["proxy".into()];
    let schema_validation = def.validate.take();
    def.validate = Some(Arc::new(move |obj: &Value, old: Option<&Value>| {
        let mut v = schema_validation
            .as_ref()
            .map(|f| f(obj, old))
            .unwrap_or_default();
        for cause in validate(obj)
            .into_iter()
            .chain(validate_transport(obj, old))
        {
            if !v.causes.iter().any(|c| c.field == cause.field) {
                v.causes.push(cause);
            }
        }
        v
    }));
    let schema_defaults = def.default.take();
    def.default = Some(Arc::new(move |obj: &mut Value| {
        if let Some(f) = &schema_defaults {
            f(obj);
        }
        apply_defaults(obj);
    }));
    let columns = json!([
        {"name": "Version", "type": "string", "jsonPath": ".status.kubernetesVersion"},
        {"name": "Mode", "type": "string", "jsonPath": ".spec.syncMode"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Zones", "type": "string", "jsonPath": ".spec.zones", "priority": 1},
        {"name": "Region", "type": "string", "jsonPath": ".spec.region", "priority": 1},
        {"name": "Provider", "type": "string", "jsonPath": ".spec.provider", "priority": 1},
        {"name": "API-Endpoint", "type": "string", "jsonPath": ".spec.apiEndpoint", "priority": 1},
        {"name": "Proxy-URL", "type": "string", "jsonPath": ".spec.proxyURL", "priority": 1},
    ]);
    def.printer = columns
        .as_array()
        .and_then(|c| flotilla_printers::custom_printer(c).ok());
    def
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_names::karmada::NAMESPACE_KARMADA_CLUSTER as NS;

    #[test]
    fn validation_catches_what_users_get_wrong() {
        let ok = json!({"metadata": {"name": "member1"}, "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1", "secretRef": {"namespace": flotilla_names::karmada::NAMESPACE_KARMADA_CLUSTER, "name": "member1"}}});
        assert!(validate(&ok).is_empty(), "{:?}", validate(&ok));
        let bad = json!({"metadata": {"name": "Member_1"}, "spec": {"syncMode": "Sideways", "apiEndpoint": "ftp://x", "zone": "a", "zones": ["a"], "secretRef": {"name": "s"}, "taints": [{"key": "k", "effect": "Bogus"}]}});
        let fields: Vec<String> = validate(&bad).into_iter().map(|c| c.field).collect();
        for f in [
            "metadata.name",
            "spec.syncMode",
            "spec.apiEndpoint",
            "spec.zone",
            "spec.secretRef.namespace",
            "spec.taints[0].effect",
        ] {
            assert!(fields.iter().any(|x| x == f), "{f} missing in {fields:?}");
        }
        assert!(check_endpoint("https://host:6443/prefix").is_ok());
        assert!(check_endpoint("not a url").is_err());
        assert!(check_endpoint("https://host/?x=1").is_err());
    }

    #[test]
    fn credentials_need_an_https_endpoint() {
        for reference in ["secretRef", "impersonatorSecretRef"] {
            let plain = json!({"metadata": {"name": "m1"}, "spec": {"syncMode": "Push",
                "apiEndpoint": "HTTP://127.0.0.1:8080",
                reference: {"namespace": NS, "name": "m1"}}});
            assert!(validate(&plain).is_empty());
            let causes = validate_transport(&plain, None);
            assert_eq!(causes.len(), 1, "{causes:?}");
            assert_eq!(causes[0].field, "spec.apiEndpoint");
            assert!(
                causes[0].message.contains(&format!("spec.{reference}"))
                    && causes[0].message.contains("only over TLS"),
                "{}",
                causes[0].message
            );
        }
        // Nothing to send, nothing to protect: a plain endpoint alone is still a URL.
        let bare = json!({"metadata": {"name": "m1"}, "spec": {"syncMode": "Push",
            "apiEndpoint": "http://127.0.0.1:8080"}});
        assert!(validate_transport(&bare, None).is_empty());
        // Stored before the check: its other writes go on until its connection changes.
        let stored = json!({"metadata": {"name": "m1"}, "spec": {"syncMode": "Push",
            "apiEndpoint": "http://127.0.0.1:8080",
            "secretRef": {"namespace": NS, "name": "m1"}}});
        let mut tainted = stored.clone();
        tainted["spec"]["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
        assert!(validate_transport(&tainted, Some(&stored)).is_empty());
        let mut moved = stored.clone();
        moved["spec"]["apiEndpoint"] = json!("http://127.0.0.1:9090");
        assert_eq!(validate_transport(&moved, Some(&stored)).len(), 1);
    }

    #[test]
    fn cluster_resource_uses_the_schema_and_prunes_unknown_fields() {
        let def = cluster_resource();
        assert!(def.openapi.is_some() && def.has_status && def.strategic_merge);
        let mut obj = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m1"}, "spec": {"syncMode": "Push", "bogus": 1}});
        let pruned = def.prune.as_ref().map(|p| p(&mut obj)).unwrap_or_default();
        assert_eq!(pruned, vec!["spec.bogus".to_string()]);
        assert!(obj["spec"].get("bogus").is_none());
        let v = def
            .validate
            .as_ref()
            .map(|f| {
                f(
                    &json!({"metadata": {"name": "m1"}, "spec": {"syncMode": "Nope"}}),
                    None,
                )
            })
            .unwrap_or_default();
        assert!(
            v.causes.iter().any(|c| c.field == "spec.syncMode"),
            "{:?}",
            v.causes
        );
    }

    #[test]
    fn defaults_fill_nine_resource_grades_once() {
        let mut c = json!({"spec": {"syncMode": "Push"}});
        apply_defaults(&mut c);
        assert_eq!(
            c["spec"]["resourceModels"].as_array().map(Vec::len),
            Some(9)
        );
        let mut custom = json!({"spec": {"resourceModels": [{"grade": 0, "ranges": []}]}});
        apply_defaults(&mut custom);
        assert_eq!(
            custom["spec"]["resourceModels"].as_array().map(Vec::len),
            Some(1)
        );
    }
}
