//! core/v1 kinds: Namespace, ConfigMap, Secret, Service, ServiceAccount,
//! PersistentVolumeClaim, Event, Pod, Endpoints and Node: their checks and defaults.
//!
//! On the host a Pod is a template: nothing schedules or runs it, so it keeps the
//! `status.phase: Pending` it gets at creation (a member cluster's simulated kubelet moves it on).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{
    ConfigMap, EndpointAddress, EndpointPort, Endpoints, Node, PersistentVolumeClaim, Pod, Secret,
    Service,
};
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

/// The most data a ConfigMap or Secret may hold (kube's `MaxSecretSize`, 1 MiB): the bytes of
/// its values, decoded, summed over every key.
pub(crate) const MAX_DATA_BYTES: usize = 1024 * 1024;

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
    let size: usize = cm
        .data
        .iter()
        .flatten()
        .map(|(_, v)| v.len())
        .sum::<usize>()
        + cm.binary_data
            .iter()
            .flatten()
            .map(|(_, v)| v.0.len())
            .sum::<usize>();
    if size > MAX_DATA_BYTES {
        // kube reports it on the path `[]`: the whole object.
        errs.too_long("[]", MAX_DATA_BYTES);
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
    // Counted as stored: `stringData` has gone into `data` by now, unless a value of it was
    // no string (then decoding reports it); a key in both is stored once.
    let data = s.data.as_ref();
    let size: usize = data
        .iter()
        .flat_map(|d| d.values())
        .map(|v| v.0.len())
        .sum::<usize>()
        + s.string_data
            .iter()
            .flatten()
            .filter(|(k, _)| !data.is_some_and(|d| d.contains_key(*k)))
            .map(|(_, v)| v.len())
            .sum::<usize>();
    if size > MAX_DATA_BYTES {
        errs.too_long("data", MAX_DATA_BYTES);
    }
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
    if let Some((_, old_raw)) = ctx.old {
        check_pod_update(ctx.raw, old_raw, errs);
    }
}

/// The pod spec fields an update may change: container images, `activeDeadlineSeconds`,
/// `tolerations` and `terminationGracePeriodSeconds`. Everything else is fixed at creation
/// (the kubelet runs what was created). Unlike kube-apiserver, which binds only through
/// `pods/binding`, an update may also set the `nodeName` of a pod that has none: that is how
/// member-sim's scheduler binds.
fn check_pod_update(new: &Value, old: &Value, errs: &mut Errs) {
    let unbound = old
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let fixed = |raw: &Value| {
        let mut copy = raw.clone();
        default_pod(&mut copy);
        let mut spec = copy.get("spec").cloned().unwrap_or(Value::Null);
        if let Some(m) = spec.as_object_mut() {
            if unbound {
                m.remove("nodeName");
            }
            for f in [
                "activeDeadlineSeconds",
                "tolerations",
                "terminationGracePeriodSeconds",
            ] {
                m.remove(f);
            }
            for list in ["containers", "initContainers"] {
                for c in m
                    .get_mut(list)
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    if let Some(c) = c.as_object_mut() {
                        c.remove("image");
                    }
                }
            }
        }
        spec
    };
    if fixed(new) != fixed(old) {
        errs.forbidden(
            "spec",
            "pod updates may not change fields other than `spec.containers[*].image`,\
             `spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` \
             (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` \
             (allow it to be set to 1 if it was previously negative)",
        );
    }
}

pub(crate) fn default_pod(obj: &mut Value) {
    if let Some(spec) = defaults::object(obj, "spec") {
        podspec::default_spec(spec, Restart::Pod);
        defaults::set(spec, "enableServiceLinks", json!(true));
        // Requests default to the limits given (a pod's own defaulting, not a template's).
        for list in ["initContainers", "containers"] {
            for c in defaults::items(spec, list) {
                requests_from_limits(c);
            }
        }
    }
    let qos = qos_class(obj);
    if let Some(status) = defaults::object(obj, "status") {
        defaults::set(status, "phase", json!("Pending"));
        defaults::set(status, "qosClass", json!(qos));
    }
}

/// Copies each limit without a request into `resources.requests`.
fn requests_from_limits(container: &mut Value) {
    let Some(resources) = defaults::existing(container, "resources") else {
        return;
    };
    let Some(limits) = resources
        .get("limits")
        .and_then(Value::as_object)
        .filter(|l| !l.is_empty())
        .cloned()
    else {
        return;
    };
    if let Some(requests) = defaults::object(resources, "requests") {
        for (k, v) in limits {
            defaults::set(requests, &k, v);
        }
    }
}

/// The pod's quality of service class: `Guaranteed` when every container limits CPU and
/// memory and requests exactly that, `BestEffort` when none requests or limits either,
/// `Burstable` otherwise.
fn qos_class(pod: &Value) -> &'static str {
    let containers: Vec<&Value> = ["initContainers", "containers"]
        .iter()
        .flat_map(|l| {
            pod.pointer(&format!("/spec/{l}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .collect();
    let compute = |c: &Value, kind: &str, name: &str| {
        c.pointer(&format!("/resources/{kind}/{name}"))
            .filter(|v| !v.is_null())
            .cloned()
    };
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        for name in ["cpu", "memory"] {
            let (req, lim) = (compute(c, "requests", name), compute(c, "limits", name));
            any |= req.is_some() || lim.is_some();
            match (req, lim) {
                (Some(r), Some(l)) if r == l => {}
                (None, Some(_)) => {}
                _ => guaranteed = false,
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

pub(crate) fn validate_endpoints(ctx: &Ctx<'_, Endpoints>, errs: &mut Errs) {
    for (i, subset) in ctx.new.subsets.iter().flatten().enumerate() {
        let at = index("subsets", i);
        let ready = subset.addresses.as_deref().unwrap_or_default();
        let not_ready = subset.not_ready_addresses.as_deref().unwrap_or_default();
        if ready.is_empty() && not_ready.is_empty() {
            errs.required(&at, "must specify `addresses` or `notReadyAddresses`");
        }
        for (list, addresses) in [("addresses", ready), ("notReadyAddresses", not_ready)] {
            for (j, a) in addresses.iter().enumerate() {
                endpoint_address(a, &index(&join(&at, list), j), errs);
            }
        }
        let ports = subset.ports.as_deref().unwrap_or_default();
        for (j, p) in ports.iter().enumerate() {
            endpoint_port(p, ports.len() > 1, &index(&join(&at, "ports"), j), errs);
        }
    }
}

fn endpoint_address(a: &EndpointAddress, at: &str, errs: &mut Errs) {
    let ip_path = join(at, "ip");
    match a.ip.parse::<std::net::IpAddr>() {
        Err(_) => errs.invalid(
            &ip_path,
            &Value::from(a.ip.as_str()),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        ),
        Ok(ip) => {
            let (unspecified, loopback, link_local, link_local_multicast) = match ip {
                std::net::IpAddr::V4(v4) => (
                    v4.is_unspecified(),
                    v4.is_loopback(),
                    v4.is_link_local(),
                    v4.octets()[..3] == [224, 0, 0],
                ),
                std::net::IpAddr::V6(v6) => (
                    v6.is_unspecified(),
                    v6.is_loopback(),
                    v6.segments()[0] & 0xffc0 == 0xfe80,
                    v6.segments()[0] & 0xff0f == 0xff02,
                ),
            };
            let shown = Value::from(a.ip.as_str());
            if unspecified {
                errs.invalid(&ip_path, &shown, "may not be unspecified (0.0.0.0)");
            }
            if loopback {
                errs.invalid(
                    &ip_path,
                    &shown,
                    "may not be in the loopback range (127.0.0.0/8)",
                );
            }
            if link_local {
                errs.invalid(
                    &ip_path,
                    &shown,
                    "may not be in the link-local range (169.254.0.0/16)",
                );
            }
            if link_local_multicast {
                errs.invalid(
                    &ip_path,
                    &shown,
                    "may not be in the link-local multicast range (224.0.0.0/24)",
                );
            }
        }
    }
    if let Some(h) = a.hostname.as_deref().filter(|h| !h.is_empty())
        && let Err(m) = names::dns1123_label(h)
    {
        errs.invalid(&join(at, "hostname"), &Value::from(h), &m);
    }
    if let Some(n) = a.node_name.as_deref()
        && let Err(m) = names::dns1123_subdomain(n)
    {
        errs.invalid(&join(at, "nodeName"), &Value::from(n), &m);
    }
}

fn endpoint_port(p: &EndpointPort, name_required: bool, at: &str, errs: &mut Errs) {
    match p.name.as_deref().filter(|n| !n.is_empty()) {
        None if name_required => errs.required(&join(at, "name"), ""),
        None => {}
        Some(n) => {
            if let Err(m) = names::dns1123_label(n) {
                errs.invalid(&join(at, "name"), &Value::from(n), &m);
            }
        }
    }
    errs.port(&join(at, "port"), p.port);
    match p.protocol.as_deref().filter(|p| !p.is_empty()) {
        // Defaulting fills TCP; validation accepts the object before it.
        None => {}
        Some(proto) => errs.one_of(&join(at, "protocol"), Some(proto), PROTOCOLS),
    }
}

pub(crate) fn default_endpoints(obj: &mut Value) {
    for subset in defaults::items(obj, "subsets") {
        for p in defaults::items(subset, "ports") {
            defaults::set(p, "protocol", json!("TCP"));
        }
    }
}

const TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "PreferNoSchedule"];

pub(crate) fn validate_node(ctx: &Ctx<'_, Node>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else { return };
    let cidrs = spec.pod_cidrs.as_deref().unwrap_or_default();
    for (i, c) in cidrs.iter().enumerate() {
        if !is_cidr(c) {
            errs.invalid(
                &index("spec.podCIDRs", i),
                &Value::from(c.as_str()),
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            );
        }
    }
    if cidrs.len() > 2 {
        errs.invalid(
            "spec.podCIDRs",
            &json!(cidrs),
            "may specify no more than one CIDR for each IP family",
        );
    }
    let mut seen = BTreeSet::new();
    for (i, t) in spec.taints.iter().flatten().enumerate() {
        let at = index("spec.taints", i);
        if let Err(m) = flotilla_apimachinery::names::is_qualified_name(&t.key) {
            errs.invalid(&join(&at, "key"), &Value::from(t.key.as_str()), &m);
        }
        if t.effect.is_empty() {
            errs.required(&join(&at, "effect"), "");
        } else {
            errs.one_of(&join(&at, "effect"), Some(&t.effect), TAINT_EFFECTS);
        }
        if !seen.insert((t.key.as_str(), t.effect.as_str())) {
            errs.duplicate(&at, &json!({"key": t.key, "effect": t.effect}));
        }
    }
    if let Some(old) = ctx.old.and_then(|(o, _)| o.spec.as_ref()) {
        // Once set, the pod CIDRs and the provider ID stay.
        let old_cidrs = old.pod_cidrs.as_deref().unwrap_or_default();
        if !old_cidrs.is_empty() && old_cidrs != cidrs {
            errs.forbidden(
                "spec.podCIDRs",
                "node updates may not change podCIDR except from \"\" to valid",
            );
        }
        if old.provider_id.as_deref().is_some_and(|p| !p.is_empty())
            && old.provider_id != spec.provider_id
        {
            errs.forbidden(
                "spec.providerID",
                "node updates may not change providerID except from \"\" to valid",
            );
        }
    }
}

/// `address/prefix` with an IP address and a prefix length that fits it.
fn is_cidr(text: &str) -> bool {
    let Some((ip, bits)) = text.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => bits <= 32,
        Ok(std::net::IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Allocatable resources default to the capacity (what a kubelet reports when it reserves
/// nothing).
pub(crate) fn default_node(obj: &mut Value) {
    let Some(capacity) = obj
        .pointer("/status/capacity")
        .filter(|c| c.is_object())
        .cloned()
    else {
        return;
    };
    if let Some(status) = defaults::existing(obj, "status") {
        defaults::set(status, "allocatable", capacity);
    }
}
