//! core/v1 kinds: Namespace, ConfigMap, Secret, Service, ServiceAccount,
//! PersistentVolumeClaim, Event, Pod and Node: their checks and defaults.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, index, join, key};
use crate::kind::Ctx;
use crate::meta;
use crate::names;
use crate::podspec::{self, Restart};

pub(crate) fn default_namespace(obj: &mut Value) {
    if let Some(spec) = defaults::object(obj, "spec") {
        defaults::set(spec, "finalizers", json!(["kubernetes"]));
    }
    if let Some(status) = defaults::object(obj, "status") {
        defaults::set(status, "phase", json!("Active"));
    }
}

/// Data keys of a ConfigMap or Secret at `field` (`data`, `binaryData`, `stringData`).
fn check_keys<'a>(keys: impl Iterator<Item = &'a String>, field: &str, errs: &mut Errs) {
    for k in keys {
        if let Err(m) = names::config_key(k) {
            errs.invalid(&key(field, k), &Value::from(k.as_str()), &m);
        }
    }
}

/// An update of an object marked `immutable: true` may not change its data or unmark it.
/// `changed` lists each data field and whether the update changes it.
fn check_immutable_data(
    old_immutable: Option<bool>,
    new_immutable: Option<bool>,
    changed: &[(&str, bool)],
    errs: &mut Errs,
) {
    if old_immutable != Some(true) {
        return;
    }
    if new_immutable != Some(true) {
        errs.forbidden("immutable", "field is immutable when `immutable` is set");
    }
    for (field, differs) in changed {
        if *differs {
            errs.forbidden(field, "field is immutable when `immutable` is set");
        }
    }
}

pub(crate) fn validate_configmap(ctx: &Ctx<'_, ConfigMap>, errs: &mut Errs) {
    let cm = ctx.new;
    check_keys(cm.data.iter().flat_map(|d| d.keys()), "data", errs);
    check_keys(
        cm.binary_data.iter().flat_map(|d| d.keys()),
        "binaryData",
        errs,
    );
    if let (Some(data), Some(binary)) = (&cm.data, &cm.binary_data) {
        for k in data.keys().filter(|k| binary.contains_key(*k)) {
            errs.invalid(
                &key("data", k),
                &Value::from(k.as_str()),
                "duplicate of key present in binaryData",
            );
        }
    }
    if let Some((old, _)) = ctx.old {
        let changed = [
            ("data", cm.data != old.data),
            ("binaryData", cm.binary_data != old.binary_data),
        ];
        check_immutable_data(old.immutable, cm.immutable, &changed, errs);
    }
}

/// Keys a typed Secret must carry (in `data` or `stringData`).
fn required_secret_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/ssh-auth" => &["ssh-privatekey"],
        _ => &[],
    }
}

pub(crate) fn validate_secret(ctx: &Ctx<'_, Secret>, errs: &mut Errs) {
    let s = ctx.new;
    check_keys(s.data.iter().flat_map(|d| d.keys()), "data", errs);
    check_keys(
        s.string_data.iter().flat_map(|d| d.keys()),
        "stringData",
        errs,
    );
    let keys: BTreeSet<&str> = s
        .data
        .iter()
        .flat_map(|d| d.keys())
        .chain(s.string_data.iter().flat_map(|d| d.keys()))
        .map(String::as_str)
        .collect();
    let kind = s
        .type_
        .as_deref()
        .filter(|t| !t.is_empty())
        .unwrap_or("Opaque");
    for k in required_secret_keys(kind) {
        if !keys.contains(k) {
            errs.required(&key("data", k), "");
        }
    }
    match kind {
        "kubernetes.io/basic-auth" if !keys.contains("username") && !keys.contains("password") => {
            errs.required(&key("data", "username"), "");
            errs.required(&key("data", "password"), "");
        }
        "kubernetes.io/service-account-token" => {
            let annotation = "kubernetes.io/service-account.name";
            let has = s
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.get(annotation).is_some_and(|v| !v.is_empty()));
            if !has {
                errs.required(&key("metadata.annotations", annotation), "");
            }
        }
        _ => {}
    }
    if let Some((old, _)) = ctx.old {
        let old_kind = old
            .type_
            .as_deref()
            .filter(|t| !t.is_empty())
            .unwrap_or("Opaque");
        if old_kind != kind {
            errs.invalid("type", &Value::from(kind), "field is immutable");
        }
        check_immutable_data(
            old.immutable,
            s.immutable,
            &[("data", s.data != old.data)],
            errs,
        );
    }
}

pub(crate) fn default_secret(obj: &mut Value) {
    defaults::set(obj, "type", json!("Opaque"));
    merge_string_data(obj);
}

/// `stringData` is write-only: its values go base64-encoded into `data` (replacing keys of
/// the same name) and the field is dropped, so readers find every value in `data`. Left alone
/// when any value is not a string, for decoding to report.
fn merge_string_data(obj: &mut Value) {
    use base64::Engine;
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let strings = match map.get("stringData") {
        Some(Value::Object(strings)) if strings.values().all(Value::is_string) => strings.clone(),
        Some(Value::Null) => {
            map.remove("stringData");
            return;
        }
        _ => return,
    };
    let data = map
        .entry("data")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if data.is_null() {
        *data = Value::Object(serde_json::Map::new());
    }
    let Some(data) = data.as_object_mut() else {
        return;
    };
    for (k, v) in strings {
        let text = v.as_str().unwrap_or_default();
        let encoded = base64::engine::general_purpose::STANDARD.encode(text);
        data.insert(k, Value::String(encoded));
    }
    map.remove("stringData");
}

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

pub(crate) fn validate_service(ctx: &Ctx<'_, Service>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.ports", "");
        return;
    };
    let kind = spec
        .type_
        .as_deref()
        .filter(|t| !t.is_empty())
        .unwrap_or("ClusterIP");
    errs.one_of("spec.type", Some(kind), SERVICE_TYPES);
    errs.one_of(
        "spec.sessionAffinity",
        spec.session_affinity.as_deref(),
        &["ClientIP", "None"],
    );
    meta::validate_label_btree(spec.selector.as_ref(), "spec.selector", errs);

    let ports = spec.ports.as_deref().unwrap_or_default();
    let headless = spec.cluster_ip.as_deref() == Some("None");
    if kind == "ExternalName" {
        match spec.external_name.as_deref().filter(|n| !n.is_empty()) {
            None => errs.required("spec.externalName", ""),
            Some(n) => {
                if let Err(m) = names::dns1123_subdomain(n.trim_end_matches('.')) {
                    errs.invalid("spec.externalName", &Value::from(n), &m);
                }
            }
        }
    } else if ports.is_empty() && !headless {
        errs.required("spec.ports", "");
    }

    let raw_ports = ctx.raw.pointer("/spec/ports").and_then(Value::as_array);
    let mut names_seen = BTreeSet::new();
    let mut seen = BTreeSet::new();
    for (i, p) in ports.iter().enumerate() {
        let at = index("spec.ports", i);
        let raw_has_port = raw_ports
            .and_then(|r| r.get(i))
            .is_some_and(|r| defaults::present(r, "port"));
        if !raw_has_port {
            errs.required(&join(&at, "port"), "");
        } else {
            errs.port(&join(&at, "port"), p.port);
        }
        let name = p.name.as_deref().unwrap_or_default();
        if name.is_empty() {
            if ports.len() > 1 {
                errs.required(&join(&at, "name"), "");
            }
        } else if let Err(m) = names::dns1123_label(name) {
            errs.invalid(&join(&at, "name"), &Value::from(name), &m);
        } else if !names_seen.insert(name) {
            errs.duplicate(&join(&at, "name"), &Value::from(name));
        }
        let protocol = p
            .protocol
            .as_deref()
            .filter(|p| !p.is_empty())
            .unwrap_or("TCP");
        errs.one_of(
            &join(&at, "protocol"),
            Some(protocol),
            &["TCP", "UDP", "SCTP"],
        );
        if raw_has_port && !seen.insert((p.port, protocol)) {
            errs.duplicate(&at, &json!({"port": p.port, "protocol": protocol}));
        }
        match &p.target_port {
            Some(IntOrString::Int(t)) if *t != 0 => errs.port(&join(&at, "targetPort"), *t),
            Some(IntOrString::String(s)) => {
                if let Err(m) = podspec::port_name(s) {
                    errs.invalid(&join(&at, "targetPort"), &Value::from(s.as_str()), &m);
                }
            }
            _ => {}
        }
        if let Some(np) = p.node_port.filter(|n| *n != 0) {
            if kind == "ClusterIP" || kind == "ExternalName" {
                errs.forbidden(
                    &join(&at, "nodePort"),
                    &format!("may not be used when `type` is '{kind}'"),
                );
            } else {
                errs.port(&join(&at, "nodePort"), np);
            }
        }
    }
}

pub(crate) fn default_service(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "type", json!("ClusterIP"));
    defaults::set(spec, "sessionAffinity", json!("None"));
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("ClusterIP")
        .to_string();
    if kind != "ExternalName" {
        defaults::set(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if kind == "NodePort" || kind == "LoadBalancer" {
        defaults::set(spec, "externalTrafficPolicy", json!("Cluster"));
    }
    if kind == "LoadBalancer" {
        defaults::set(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
    for p in defaults::items(spec, "ports") {
        defaults::set(p, "protocol", json!("TCP"));
        if let Some(port) = p.get("port").filter(|v| v.is_number()).cloned() {
            defaults::set(p, "targetPort", port);
        }
    }
}

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

pub(crate) fn validate_pvc(ctx: &Ctx<'_, PersistentVolumeClaim>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.accessModes", "at least 1 access mode is required");
        errs.required(&key("spec.resources", "storage"), "");
        return;
    };
    let modes = spec.access_modes.as_deref().unwrap_or_default();
    if modes.is_empty() {
        errs.required("spec.accessModes", "at least 1 access mode is required");
    }
    for m in modes {
        errs.one_of("spec.accessModes", Some(m), ACCESS_MODES);
    }
    let storage = spec
        .resources
        .as_ref()
        .and_then(|r| r.requests.as_ref())
        .and_then(|r| r.get("storage"));
    if storage.is_none() {
        errs.required(&key("spec.resources", "storage"), "");
    }
    errs.one_of(
        "spec.volumeMode",
        spec.volume_mode.as_deref(),
        &["Block", "Filesystem"],
    );
    if let Some((_, old_raw)) = ctx.old {
        // Only the requested size, the attributes class and a first binding may change.
        let fixed = |raw: &Value, keep_volume: bool| {
            let mut copy = raw.clone();
            default_pvc(&mut copy);
            let mut spec = copy.get("spec").cloned().unwrap_or(Value::Null);
            if let Some(m) = spec.as_object_mut() {
                m.remove("resources");
                m.remove("volumeAttributesClassName");
                if !keep_volume {
                    m.remove("volumeName");
                }
            }
            spec
        };
        let was_unbound = old_raw
            .pointer("/spec/volumeName")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if fixed(ctx.raw, !was_unbound) != fixed(old_raw, !was_unbound) {
            errs.forbidden(
                "spec",
                "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            );
        }
    }
}

pub(crate) fn default_pvc(obj: &mut Value) {
    if let Some(spec) = defaults::object(obj, "spec") {
        defaults::set(spec, "volumeMode", json!("Filesystem"));
    }
}

pub(crate) fn validate_pod(ctx: &Ctx<'_, Pod>, errs: &mut Errs) {
    match &ctx.new.spec {
        Some(spec) => podspec::validate_spec(spec, "spec", Restart::Pod, errs),
        None => errs.required("spec.containers", ""),
    }
}

pub(crate) fn default_pod(obj: &mut Value) {
    if let Some(spec) = defaults::object(obj, "spec") {
        podspec::default_spec(spec, Restart::Pod);
        defaults::set(spec, "enableServiceLinks", json!(true));
    }
}
