//! networking.k8s.io/v1 Ingress, IngressClass, NetworkPolicy, IPAddress and ServiceCIDR, and
//! discovery.k8s.io/v1 EndpointSlice: their checks and defaults.

use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{
    IPAddress, Ingress, IngressBackend, IngressClass, NetworkPolicy, NetworkPolicyPeer,
    NetworkPolicyPort, ServiceCIDR,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, index, join};
use crate::kind::Ctx;
use crate::names;

const PATH_TYPES: [&str; 3] = ["Exact", "ImplementationSpecific", "Prefix"];
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// A backend has a service (with a port by name xor number) or a resource, not both.
fn validate_backend(b: &IngressBackend, path: &str, errs: &mut Errs) {
    match (&b.service, &b.resource) {
        (Some(_), Some(_)) => errs.invalid(
            path,
            &Value::from(""),
            "cannot set both resource and service backends",
        ),
        (None, None) => errs.invalid(
            path,
            &Value::from(""),
            "resource or service backend is required",
        ),
        (Some(svc), None) => {
            let sp = join(path, "service");
            if svc.name.is_empty() {
                errs.required(&join(&sp, "name"), "");
            } else if let Err(m) = names::dns1035_label(&svc.name) {
                errs.invalid(&join(&sp, "name"), &Value::from(svc.name.as_str()), &m);
            }
            let pp = join(&sp, "port");
            match &svc.port {
                None => errs.required(&pp, "port name or number is required"),
                Some(port) => match (&port.name, port.number) {
                    (Some(n), Some(_)) if !n.is_empty() => errs.invalid(
                        &pp,
                        &Value::from(""),
                        "cannot set both port name & port number",
                    ),
                    (Some(n), _) if !n.is_empty() => {
                        if let Err(m) = crate::podspec::port_name(n) {
                            errs.invalid(&join(&pp, "name"), &Value::from(n.as_str()), &m);
                        }
                    }
                    (_, Some(num)) => errs.port(&join(&pp, "number"), num),
                    _ => errs.required(&pp, "port name or number is required"),
                },
            }
        }
        (None, Some(r)) => {
            let rp = join(path, "resource");
            if r.kind.is_empty() {
                errs.required(&join(&rp, "kind"), "");
            }
            if r.name.is_empty() {
                errs.required(&join(&rp, "name"), "");
            }
        }
    }
}

pub(crate) fn validate_ingress(ctx: &Ctx<'_, Ingress>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.invalid(
            "spec",
            &Value::from(""),
            "either `defaultBackend` or `rules` must be specified",
        );
        return;
    };
    let rules = spec.rules.as_deref().unwrap_or_default();
    if spec.default_backend.is_none() && rules.is_empty() {
        errs.invalid(
            "spec",
            &Value::from(""),
            "either `defaultBackend` or `rules` must be specified",
        );
    }
    if let Some(b) = &spec.default_backend {
        validate_backend(b, "spec.defaultBackend", errs);
    }
    if let Some(class) = spec.ingress_class_name.as_deref()
        && let Err(m) = names::dns1123_subdomain(class)
    {
        errs.invalid("spec.ingressClassName", &Value::from(class), &m);
    }
    for (i, rule) in rules.iter().enumerate() {
        let rp = index("spec.rules", i);
        if let Some(host) = rule.host.as_deref().filter(|h| !h.is_empty()) {
            let bare = host.strip_prefix("*.").unwrap_or(host);
            if host.contains(':') || names::dns1123_subdomain(bare).is_err() {
                errs.invalid(
                    &join(&rp, "host"),
                    &Value::from(host),
                    "a lowercase RFC 1123 subdomain (optionally with a leading `*.` wildcard) must consist of lower case alphanumeric characters, '-' or '.'",
                );
            }
        }
        let Some(http) = &rule.http else { continue };
        let paths_path = join(&rp, "http.paths");
        if http.paths.is_empty() {
            errs.required(&paths_path, "");
        }
        for (j, p) in http.paths.iter().enumerate() {
            let pp = index(&paths_path, j);
            let type_path = join(&pp, "pathType");
            if p.path_type.is_empty() {
                errs.required(&type_path, "pathType must be specified");
            } else if !PATH_TYPES.contains(&p.path_type.as_str()) {
                errs.not_supported(&type_path, &p.path_type, &PATH_TYPES);
            }
            let path = p.path.as_deref().unwrap_or_default();
            if matches!(p.path_type.as_str(), "Exact" | "Prefix") {
                if !path.starts_with('/') {
                    errs.invalid(
                        &join(&pp, "path"),
                        &Value::from(path),
                        "must be an absolute path",
                    );
                } else if path.contains("//") {
                    errs.invalid(
                        &join(&pp, "path"),
                        &Value::from(path),
                        "must not contain '//'",
                    );
                }
            } else if !path.is_empty() && !path.starts_with('/') {
                errs.invalid(
                    &join(&pp, "path"),
                    &Value::from(path),
                    "must be an absolute path",
                );
            }
            validate_backend(&p.backend, &join(&pp, "backend"), errs);
        }
    }
    for (i, tls) in spec.tls.iter().flatten().enumerate() {
        for (j, host) in tls.hosts.iter().flatten().enumerate() {
            let bare = host.strip_prefix("*.").unwrap_or(host);
            if names::dns1123_subdomain(bare).is_err() {
                errs.invalid(
                    &index(&join(&index("spec.tls", i), "hosts"), j),
                    &Value::from(host.as_str()),
                    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
                );
            }
        }
    }
}

pub(crate) fn validate_ingress_class(ctx: &Ctx<'_, IngressClass>, errs: &mut Errs) {
    let spec = ctx.new.spec.as_ref();
    let controller = spec.and_then(|s| s.controller.as_deref()).unwrap_or("");
    if controller.is_empty() {
        errs.required("spec.controller", "");
    } else if controller.len() > 250 {
        errs.invalid(
            "spec.controller",
            &Value::from(controller),
            "must be no more than 250 characters",
        );
    }
    if let Some(params) = spec.and_then(|s| s.parameters.as_ref()) {
        if params.kind.is_empty() {
            errs.required("spec.parameters.kind", "");
        }
        if params.name.is_empty() {
            errs.required("spec.parameters.name", "");
        }
        let scope = params.scope.as_deref().unwrap_or("Cluster");
        errs.one_of(
            "spec.parameters.scope",
            Some(scope),
            &["Cluster", "Namespace"],
        );
        match (scope, params.namespace.as_deref()) {
            ("Namespace", None | Some("")) => errs.required(
                "spec.parameters.namespace",
                "`parameters.scope` is set to 'Namespace'",
            ),
            ("Cluster", Some(ns)) if !ns.is_empty() => errs.forbidden(
                "spec.parameters.namespace",
                "`parameters.scope` is set to 'Cluster'",
            ),
            _ => {}
        }
    }
    if let Some((old, _)) = ctx.old {
        let old_controller = old.spec.as_ref().and_then(|s| s.controller.as_deref());
        errs.immutable(
            "spec.controller",
            &spec.and_then(|s| s.controller.as_deref()),
            &old_controller,
        );
    }
}

pub(crate) fn default_ingress_class(obj: &mut Value) {
    if let Some(params) =
        defaults::existing(obj, "spec").and_then(|s| defaults::existing(s, "parameters"))
    {
        defaults::set(params, "scope", json!("Cluster"));
    }
}

fn validate_np_ports(ports: &[NetworkPolicyPort], path: &str, errs: &mut Errs) {
    for (i, p) in ports.iter().enumerate() {
        let pp = index(path, i);
        errs.one_of(&join(&pp, "protocol"), p.protocol.as_deref(), &PROTOCOLS);
        match &p.port {
            Some(IntOrString::Int(n)) => {
                errs.port(&join(&pp, "port"), *n);
                if let Some(end) = p.end_port {
                    if end < *n {
                        errs.invalid(
                            &join(&pp, "endPort"),
                            &Value::from(end),
                            "must be greater than or equal to `port`",
                        );
                    } else {
                        errs.port(&join(&pp, "endPort"), end);
                    }
                }
            }
            Some(IntOrString::String(name)) => {
                if let Err(m) = crate::podspec::port_name(name) {
                    errs.invalid(&join(&pp, "port"), &Value::from(name.as_str()), &m);
                }
                if p.end_port.is_some() {
                    errs.invalid(
                        &join(&pp, "endPort"),
                        &Value::from(p.end_port),
                        "may not be specified when `port` is non-numeric",
                    );
                }
            }
            None => {
                if p.end_port.is_some() {
                    errs.invalid(
                        &join(&pp, "endPort"),
                        &Value::from(p.end_port),
                        "may not be specified when `port` is not specified",
                    );
                }
            }
        }
    }
}

fn validate_np_peers(peers: &[NetworkPolicyPeer], path: &str, errs: &mut Errs) {
    for (i, peer) in peers.iter().enumerate() {
        let pp = index(path, i);
        let selectors = peer.pod_selector.is_some() || peer.namespace_selector.is_some();
        match (&peer.ip_block, selectors) {
            (None, false) => errs.required(&pp, "must specify a peer"),
            (Some(_), true) => errs.forbidden(&pp, "may not specify more than 1 peer type"),
            _ => {}
        }
        if let Some(block) = &peer.ip_block {
            let bp = join(&pp, "ipBlock");
            if block.cidr.is_empty() {
                errs.required(&join(&bp, "cidr"), "");
            } else if !is_cidr(&block.cidr) {
                errs.invalid(
                    &join(&bp, "cidr"),
                    &Value::from(block.cidr.as_str()),
                    "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                );
            }
            for (j, e) in block.except.iter().flatten().enumerate() {
                if !is_cidr(e) {
                    errs.invalid(
                        &index(&join(&bp, "except"), j),
                        &Value::from(e.as_str()),
                        "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                    );
                }
            }
        }
    }
}

/// `address/prefix` with a prefix that fits the address family.
fn is_cidr(s: &str) -> bool {
    let Some((addr, prefix)) = s.split_once('/') else {
        return false;
    };
    let Ok(prefix) = prefix.parse::<u8>() else {
        return false;
    };
    match addr.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => prefix <= 32,
        Ok(std::net::IpAddr::V6(_)) => prefix <= 128,
        Err(_) => false,
    }
}

pub(crate) fn validate_network_policy(ctx: &Ctx<'_, NetworkPolicy>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else { return };
    for (i, rule) in spec.ingress.iter().flatten().enumerate() {
        let rp = index("spec.ingress", i);
        validate_np_ports(
            rule.ports.as_deref().unwrap_or_default(),
            &join(&rp, "ports"),
            errs,
        );
        validate_np_peers(
            rule.from.as_deref().unwrap_or_default(),
            &join(&rp, "from"),
            errs,
        );
    }
    for (i, rule) in spec.egress.iter().flatten().enumerate() {
        let rp = index("spec.egress", i);
        validate_np_ports(
            rule.ports.as_deref().unwrap_or_default(),
            &join(&rp, "ports"),
            errs,
        );
        validate_np_peers(
            rule.to.as_deref().unwrap_or_default(),
            &join(&rp, "to"),
            errs,
        );
    }
    let types = spec.policy_types.as_deref().unwrap_or_default();
    if types.len() > 2 {
        errs.invalid(
            "spec.policyTypes",
            &json!(types),
            "may not specify more than two policyTypes",
        );
    }
    for (i, t) in types.iter().enumerate() {
        if !["Egress", "Ingress"].contains(&t.as_str()) {
            errs.not_supported(&index("spec.policyTypes", i), t, &["Egress", "Ingress"]);
        }
    }
}

/// `policyTypes` from the rules given (Ingress always; Egress when egress rules exist), and
/// protocol TCP on every port.
pub(crate) fn default_network_policy(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "podSelector", json!({}));
    for dir in ["ingress", "egress"] {
        for rule in defaults::items(spec, dir) {
            for port in defaults::items(rule, "ports") {
                defaults::set(port, "protocol", json!("TCP"));
            }
        }
    }
    if !defaults::present(spec, "policyTypes") {
        let egress = spec
            .get("egress")
            .and_then(Value::as_array)
            .is_some_and(|e| !e.is_empty());
        let types = if egress {
            json!(["Ingress", "Egress"])
        } else {
            json!(["Ingress"])
        };
        spec["policyTypes"] = types;
    }
}

pub(crate) fn validate_endpoint_slice(ctx: &Ctx<'_, EndpointSlice>, errs: &mut Errs) {
    let s = ctx.new;
    let families = ["FQDN", "IPv4", "IPv6"];
    if s.address_type.is_empty() {
        errs.required("addressType", "");
    } else if !families.contains(&s.address_type.as_str()) {
        errs.not_supported("addressType", &s.address_type, &families);
    }
    if s.endpoints.len() > 1000 {
        errs.invalid(
            "endpoints",
            &Value::from(s.endpoints.len()),
            "must have at most 1000 items",
        );
    }
    for (i, ep) in s.endpoints.iter().enumerate() {
        let ep_path = index("endpoints", i);
        let ap = join(&ep_path, "addresses");
        if ep.addresses.is_empty() || ep.addresses.len() > 100 {
            errs.invalid(
                &ap,
                &Value::from(ep.addresses.len()),
                "must contain at least 1 and at most 100 addresses",
            );
        }
        for (j, a) in ep.addresses.iter().enumerate() {
            let ok = match s.address_type.as_str() {
                "IPv4" => a.parse::<std::net::Ipv4Addr>().is_ok(),
                "IPv6" => a.parse::<std::net::Ipv6Addr>().is_ok(),
                "FQDN" => names::dns1123_subdomain(a).is_ok(),
                _ => true,
            };
            if !ok {
                errs.invalid(
                    &index(&ap, j),
                    &Value::from(a.as_str()),
                    &format!("must be a valid {} address", s.address_type),
                );
            }
        }
        if let Some(h) = ep.hostname.as_deref()
            && let Err(m) = names::dns1123_label(h)
        {
            errs.invalid(&join(&ep_path, "hostname"), &Value::from(h), &m);
        }
    }
    for (i, p) in s.ports.iter().flatten().enumerate() {
        let pp = index("ports", i);
        errs.one_of(&join(&pp, "protocol"), p.protocol.as_deref(), &PROTOCOLS);
        if let Some(n) = p.port {
            errs.port(&join(&pp, "port"), n);
        }
        if let Some(name) = p.name.as_deref().filter(|n| !n.is_empty())
            && let Err(m) = names::dns1123_label(name)
        {
            errs.invalid(&join(&pp, "name"), &Value::from(name), &m);
        }
    }
    if let Some((old, _)) = ctx.old {
        errs.immutable("addressType", &s.address_type, &old.address_type);
    }
}

/// Port protocol TCP and an empty port name, as kube defaults them.
pub(crate) fn default_endpoint_slice(obj: &mut Value) {
    for port in defaults::items(obj, "ports") {
        defaults::set(port, "protocol", json!("TCP"));
        defaults::set(port, "name", json!(""));
    }
}

/// An IPAddress is named by the address it records, in canonical form (`10.0.0.1`,
/// `2001:db8::1`), and points at the object it is allocated to.
pub(crate) fn validate_ip_address(ctx: &Ctx<'_, IPAddress>, errs: &mut Errs) {
    let name = ctx.new.metadata.name.as_deref().unwrap_or_default();
    if !name.is_empty() {
        match name.parse::<std::net::IpAddr>() {
            Ok(ip) if ip.to_string() == name => {}
            Ok(ip) => errs.invalid(
                "metadata.name",
                &Value::from(name),
                &format!("must be in canonical form (\"{ip}\")"),
            ),
            Err(_) => errs.invalid(
                "metadata.name",
                &Value::from(name),
                "must be a valid IP address",
            ),
        }
    }
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.parentRef", "");
        return;
    };
    let r = &spec.parent_ref;
    if r.resource.is_empty() {
        errs.required("spec.parentRef.resource", "");
    }
    if r.name.is_empty() {
        errs.required("spec.parentRef.name", "");
    }
    if let Some((old, _)) = ctx.old {
        let old_ref = old.spec.as_ref().map(|s| &s.parent_ref);
        errs.immutable("spec.parentRef", &Some(r), &old_ref);
    }
}

/// One or two CIDRs, at most one per IP family.
pub(crate) fn validate_service_cidr(ctx: &Ctx<'_, ServiceCIDR>, errs: &mut Errs) {
    let cidrs = ctx
        .new
        .spec
        .as_ref()
        .and_then(|s| s.cidrs.as_deref())
        .unwrap_or_default();
    if cidrs.is_empty() || cidrs.len() > 2 {
        errs.invalid(
            "spec.cidrs",
            &json!(cidrs),
            "at least one and max two CIDRs are allowed",
        );
    }
    let mut families = Vec::new();
    for (i, c) in cidrs.iter().enumerate() {
        if !is_cidr(c) {
            errs.invalid(
                &index("spec.cidrs", i),
                &Value::from(c.as_str()),
                "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            );
        } else {
            families.push(c.contains(':'));
        }
    }
    if families.len() == 2 && families[0] == families[1] {
        errs.invalid(
            "spec.cidrs",
            &json!(cidrs),
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cidrs() {
        assert!(is_cidr("10.0.0.0/8"));
        assert!(is_cidr("2001:db8::/64"));
        assert!(!is_cidr("10.0.0.0/33"));
        assert!(!is_cidr("10.0.0.0"));
        assert!(!is_cidr("nope/8"));
    }

    #[test]
    fn policy_types_follow_the_rules_given() {
        let mut np = json!({"spec": {"egress": [{"ports": [{"port": 53}]}]}});
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        assert_eq!(np["spec"]["podSelector"], json!({}));
        let mut np = json!({"spec": {"podSelector": {}}});
        default_network_policy(&mut np);
        assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
    }
}
