//! apiextensions.k8s.io/v1 CustomResourceDefinition: the checks kube-apiserver makes on a CRD
//! before it is stored (names, scope, versions with exactly one storage version, structural
//! schemas, subresources, printer columns, immutable group and scope).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::field::Errs;
use crate::kind::Ctx;

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

pub(crate) fn validate_crd(ctx: &Ctx<'_, CustomResourceDefinition>, errs: &mut Errs) {
    let raw = ctx.raw;
    let group = str_at(raw, "/spec/group").unwrap_or_default();
    let plural = str_at(raw, "/spec/names/plural").unwrap_or_default();
    let kind = str_at(raw, "/spec/names/kind").unwrap_or_default();
    let name = str_at(raw, "/metadata/name").unwrap_or_default();
    if group.is_empty() {
        errs.required("spec.group", "");
    } else if !group.contains('.') {
        errs.invalid(
            "spec.group",
            &Value::from(group),
            "should be a domain with at least one dot",
        );
    } else if let Err(msg) = flotilla_apimachinery::names::is_dns1123_subdomain(group) {
        errs.invalid("spec.group", &Value::from(group), &msg);
    }
    if plural.is_empty() {
        errs.required("spec.names.plural", "");
    } else if !dns_label(plural) {
        errs.invalid(
            "spec.names.plural",
            &Value::from(plural),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
        );
    }
    if let Some(singular) = str_at(raw, "/spec/names/singular").filter(|s| !s.is_empty()) {
        if !dns_label(singular) {
            errs.invalid("spec.names.singular", &Value::from(singular), "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'");
        }
    }
    if kind.is_empty() {
        errs.required("spec.names.kind", "");
    } else if !kind.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        || !kind.chars().all(|c| c.is_ascii_alphanumeric())
    {
        errs.invalid(
            "spec.names.kind",
            &Value::from(kind),
            "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
        );
    }
    if !name.is_empty()
        && !plural.is_empty()
        && !group.is_empty()
        && name != format!("{plural}.{group}")
    {
        errs.invalid(
            "metadata.name",
            &Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        );
    }
    match str_at(raw, "/spec/scope") {
        Some("Namespaced") | Some("Cluster") => {}
        Some(other) => errs.not_supported("spec.scope", other, &["Cluster", "Namespaced"]),
        None => errs.required("spec.scope", ""),
    }
    let versions = raw
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errs.required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    let mut storage = 0;
    for (i, v) in versions.iter().enumerate() {
        let at = format!("spec.versions[{i}]");
        let vname = v.get("name").and_then(Value::as_str).unwrap_or_default();
        if vname.is_empty() {
            errs.required(&format!("{at}.name"), "");
        } else if !dns_label(vname) {
            errs.invalid(
                &format!("{at}.name"),
                &Value::from(vname),
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-'",
            );
        } else if !seen.insert(vname.to_string()) {
            errs.duplicate(&format!("{at}.name"), &Value::from(vname));
        }
        if v.get("storage").and_then(Value::as_bool) == Some(true) {
            storage += 1;
        }
        match v.pointer("/schema/openAPIV3Schema") {
            None => errs.required(
                &format!("{at}.schema.openAPIV3Schema"),
                "schemas are required",
            ),
            Some(schema) => {
                if let Err(causes) = flotilla_schema::StructuralSchema::new(
                    schema,
                    &format!("{at}.schema.openAPIV3Schema"),
                ) {
                    errs.extend(causes);
                }
            }
        }
        if let Some(scale) = v.pointer("/subresources/scale") {
            match scale.get("specReplicasPath").and_then(Value::as_str) {
                Some(p) if p.starts_with(".spec.") => {}
                Some(p) => errs.invalid(
                    &format!("{at}.subresources.scale.specReplicasPath"),
                    &Value::from(p),
                    "should be a json path under .spec",
                ),
                None => errs.required(&format!("{at}.subresources.scale.specReplicasPath"), ""),
            }
            match scale.get("statusReplicasPath").and_then(Value::as_str) {
                Some(p) if p.starts_with(".status.") => {}
                Some(p) => errs.invalid(
                    &format!("{at}.subresources.scale.statusReplicasPath"),
                    &Value::from(p),
                    "should be a json path under .status",
                ),
                None => errs.required(&format!("{at}.subresources.scale.statusReplicasPath"), ""),
            }
        }
        if let Some(columns) = v.get("additionalPrinterColumns").and_then(Value::as_array) {
            if let Err(e) = flotilla_printers::custom_printer(columns) {
                errs.invalid(
                    &format!("{at}.additionalPrinterColumns"),
                    &Value::Array(columns.clone()),
                    &e.to_string(),
                );
            }
        }
    }
    if !versions.is_empty() && storage != 1 {
        errs.invalid(
            "spec.versions",
            &Value::Array(versions.clone()),
            "must have exactly one version marked as storage version",
        );
    }
    if let Some((_, old)) = ctx.old {
        for (field, pointer) in [
            ("spec.group", "/spec/group"),
            ("spec.scope", "/spec/scope"),
            ("spec.names.plural", "/spec/names/plural"),
        ] {
            let before = old.pointer(pointer);
            let after = raw.pointer(pointer);
            if before != after {
                errs.invalid(field, after.unwrap_or(&Value::Null), "field is immutable");
            }
        }
    }
}

/// apiregistration.k8s.io/v1 APIService: `<version>.<group>` names, priorities in range,
/// a service or none (Local), a PEM caBundle, and not both caBundle and
/// insecureSkipTLSVerify.
pub(crate) fn validate_apiservice(
    ctx: &Ctx<'_, k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>,
    errs: &mut Errs,
) {
    let raw = ctx.raw;
    let group = str_at(raw, "/spec/group").unwrap_or_default();
    let version = str_at(raw, "/spec/version").unwrap_or_default();
    let name = str_at(raw, "/metadata/name").unwrap_or_default();
    if version.is_empty() {
        errs.required("spec.version", "");
    }
    if !version.is_empty() && name != format!("{version}.{group}") {
        errs.invalid(
            "metadata.name",
            &Value::from(name),
            &format!("must be {version}.{group}"),
        );
    }
    let service = raw.pointer("/spec/service").filter(|s| !s.is_null());
    if service.is_some() {
        match raw
            .pointer("/spec/groupPriorityMinimum")
            .and_then(Value::as_i64)
        {
            Some(p) if (1..=20000).contains(&p) => {}
            Some(p) => errs.invalid(
                "spec.groupPriorityMinimum",
                &Value::from(p),
                "must be positive and less than 20000",
            ),
            None => errs.invalid(
                "spec.groupPriorityMinimum",
                &Value::from(0),
                "must be positive and less than 20000",
            ),
        }
        match raw.pointer("/spec/versionPriority").and_then(Value::as_i64) {
            Some(p) if (1..=1000).contains(&p) => {}
            Some(p) => errs.invalid(
                "spec.versionPriority",
                &Value::from(p),
                "must be positive and less than 1000",
            ),
            None => errs.invalid(
                "spec.versionPriority",
                &Value::from(0),
                "must be positive and less than 1000",
            ),
        }
        if str_at(raw, "/spec/service/name")
            .unwrap_or_default()
            .is_empty()
        {
            errs.required("spec.service.name", "");
        }
        if str_at(raw, "/spec/service/namespace")
            .unwrap_or_default()
            .is_empty()
        {
            errs.required("spec.service.namespace", "");
        }
    }
    let insecure = raw
        .pointer("/spec/insecureSkipTLSVerify")
        .and_then(Value::as_bool)
        == Some(true);
    if let Some(bundle) = str_at(raw, "/spec/caBundle") {
        if insecure {
            errs.invalid(
                "spec.insecureSkipTLSVerify",
                &Value::Bool(true),
                "may not be true if caBundle is present",
            );
        }
        use base64::Engine;
        let ok = base64::engine::general_purpose::STANDARD
            .decode(bundle)
            .ok()
            .and_then(|der| String::from_utf8(der).ok())
            .is_some_and(|pem| {
                pem.contains("-----BEGIN CERTIFICATE-----")
                    && flotilla_pki::parse_certificates(&pem).is_ok_and(|c| !c.is_empty())
            });
        if !ok {
            errs.invalid(
                "spec.caBundle",
                &Value::from("<bytes>"),
                "must hold PEM-encoded CA certificates",
            );
        }
    } else if service.is_some() && !insecure {
        errs.required(
            "spec.caBundle",
            "a caBundle is required unless insecureSkipTLSVerify is set",
        );
    }
}
