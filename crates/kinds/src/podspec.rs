//! Pod specs, shared by pods and by every workload's pod template: the checks users hit most
//! (containers, names, images, ports, volumes, resources, restart policy) and the defaults
//! kube-apiserver fills in (`-o yaml` shows them).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, index, join, key};
use crate::meta;
use crate::names;
use crate::quota;

/// Which `restartPolicy` values a pod spec may carry where it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Restart {
    /// A bare pod: any policy, optional.
    Pod,
    /// Templates of long-running workloads (Deployment, ReplicaSet, StatefulSet, DaemonSet).
    AlwaysOnly,
    /// Job templates: `OnFailure` or `Never`, and required (there is no default).
    Job,
}

const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"];
const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];

/// Validates a pod template at `path` (e.g. `spec.template`): its labels and its pod spec.
pub(crate) fn validate_template(
    template: &PodTemplateSpec,
    raw: Option<&Value>,
    path: &str,
    restart: Restart,
    errs: &mut Errs,
) {
    meta::validate_labels(
        raw.and_then(|t| t.get("metadata")),
        &join(path, "metadata"),
        errs,
    );
    match &template.spec {
        Some(spec) => validate_spec(spec, &join(path, "spec"), restart, errs),
        None => errs.required(&join(path, "spec.containers"), ""),
    }
}

/// Validates a pod spec at `path` (e.g. `spec` for a pod, `spec.template.spec` for templates).
pub(crate) fn validate_spec(spec: &PodSpec, path: &str, restart: Restart, errs: &mut Errs) {
    let volumes = validate_volumes(spec, path, errs);

    if spec.containers.is_empty() {
        errs.required(&join(path, "containers"), "");
    }
    // Container names are unique across regular and init containers.
    let mut seen = BTreeSet::new();
    let init = spec.init_containers.as_deref().unwrap_or_default();
    for (list, containers) in [
        ("initContainers", init),
        ("containers", spec.containers.as_slice()),
    ] {
        for (i, c) in containers.iter().enumerate() {
            let at = index(&join(path, list), i);
            validate_container(c, &at, &volumes, errs);
            if !c.name.is_empty() && !seen.insert(c.name.as_str()) {
                errs.duplicate(&join(&at, "name"), &Value::from(c.name.as_str()));
            }
        }
    }

    let restart_path = join(path, "restartPolicy");
    let policy = spec.restart_policy.as_deref().filter(|p| !p.is_empty());
    match restart {
        Restart::Pod => errs.one_of(&restart_path, policy, RESTART_POLICIES),
        Restart::AlwaysOnly => errs.one_of(&restart_path, policy, &["Always"]),
        Restart::Job => match policy {
            None => errs.required(&restart_path, "valid values: \"OnFailure\", \"Never\""),
            Some(p) => errs.one_of(&restart_path, Some(p), &["OnFailure", "Never"]),
        },
    }
    errs.one_of(
        &join(path, "dnsPolicy"),
        spec.dns_policy.as_deref(),
        DNS_POLICIES,
    );
    errs.non_negative(
        &join(path, "terminationGracePeriodSeconds"),
        spec.termination_grace_period_seconds,
    );
    if let Some(s) = spec.active_deadline_seconds.filter(|s| *s <= 0) {
        errs.invalid(
            &join(path, "activeDeadlineSeconds"),
            &Value::from(s),
            "must be greater than 0",
        );
    }
}

/// Checks the volumes and returns their names (for volumeMount references).
fn validate_volumes<'a>(spec: &'a PodSpec, path: &str, errs: &mut Errs) -> BTreeSet<&'a str> {
    let mut names_seen = BTreeSet::new();
    for (i, v) in spec.volumes.iter().flatten().enumerate() {
        let at = join(&index(&join(path, "volumes"), i), "name");
        if v.name.is_empty() {
            errs.required(&at, "");
        } else if let Err(m) = names::dns1123_label(&v.name) {
            errs.invalid(&at, &Value::from(v.name.as_str()), &m);
        } else if !names_seen.insert(v.name.as_str()) {
            errs.duplicate(&at, &Value::from(v.name.as_str()));
        }
    }
    names_seen
}

fn validate_container(c: &Container, at: &str, volumes: &BTreeSet<&str>, errs: &mut Errs) {
    let name_path = join(at, "name");
    if c.name.is_empty() {
        errs.required(&name_path, "");
    } else if let Err(m) = names::dns1123_label(&c.name) {
        errs.invalid(&name_path, &Value::from(c.name.as_str()), &m);
    }
    if c.image.as_deref().is_none_or(|i| i.trim().is_empty()) {
        errs.required(&join(at, "image"), "");
    }
    errs.one_of(
        &join(at, "imagePullPolicy"),
        c.image_pull_policy.as_deref(),
        PULL_POLICIES,
    );

    let mut port_names = BTreeSet::new();
    for (i, p) in c.ports.iter().flatten().enumerate() {
        let pat = index(&join(at, "ports"), i);
        errs.port(&join(&pat, "containerPort"), p.container_port);
        if let Some(h) = p.host_port.filter(|h| *h != 0) {
            errs.port(&join(&pat, "hostPort"), h);
        }
        errs.one_of(&join(&pat, "protocol"), p.protocol.as_deref(), PROTOCOLS);
        if let Some(n) = p.name.as_deref().filter(|n| !n.is_empty()) {
            let npath = join(&pat, "name");
            if let Err(m) = port_name(n) {
                errs.invalid(&npath, &Value::from(n), &m);
            } else if !port_names.insert(n) {
                errs.duplicate(&npath, &Value::from(n));
            }
        }
    }
    for (i, e) in c.env.iter().flatten().enumerate() {
        if e.name.is_empty() {
            errs.required(&join(&index(&join(at, "env"), i), "name"), "");
        }
    }
    for (i, m) in c.volume_mounts.iter().flatten().enumerate() {
        let mpath = index(&join(at, "volumeMounts"), i);
        if m.name.is_empty() {
            errs.required(&join(&mpath, "name"), "");
        } else if !volumes.contains(m.name.as_str()) {
            errs.not_found(&join(&mpath, "name"), &Value::from(m.name.as_str()));
        }
        if m.mount_path.is_empty() {
            errs.required(&join(&mpath, "mountPath"), "");
        }
    }
    if let Some(r) = &c.resources {
        validate_resources(r, &join(at, "resources"), errs);
    }
}

/// Container resources: known names, quantities that parse and are not negative, and no
/// request above its limit.
fn validate_resources(r: &ResourceRequirements, at: &str, errs: &mut Errs) {
    let mut limits = BTreeMap::new();
    for (list, values) in [("limits", &r.limits), ("requests", &r.requests)] {
        for (name, q) in values.iter().flatten() {
            let field = key(&join(at, list), name);
            quota::resource_name(
                name,
                &field,
                quota::is_standard_container_resource,
                "must be a standard resource for containers",
                errs,
            );
            let Some(v) = quota::non_negative(q, &field, errs) else {
                continue;
            };
            if list == "limits" {
                limits.insert(name.as_str(), (v, q.0.as_str()));
            } else if let Some((limit, shown)) = limits.get(name.as_str())
                && v > *limit
            {
                errs.invalid(
                    &join(at, "requests"),
                    &Value::from(q.0.as_str()),
                    &format!("must be less than or equal to {name} limit of {shown}"),
                );
            }
        }
    }
}

/// An IANA service name, as container and service port names must be.
pub(crate) fn port_name(name: &str) -> Result<(), String> {
    let b = name.as_bytes();
    if name.len() > 15 {
        return Err("must be no more than 15 characters".into());
    }
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        return Err(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into(),
        );
    }
    if name.contains("--") {
        return Err("must not contain consecutive hyphens".into());
    }
    if !b.iter().any(|c| c.is_ascii_lowercase()) {
        return Err("must contain at least one letter (a-z)".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must not begin or end with a hyphen".into());
    }
    Ok(())
}

/// Fills the defaults of the pod template at `template` (the `template` object itself).
pub(crate) fn default_template(template: &mut Value, restart: Restart) {
    if let Some(spec) = defaults::object(template, "spec") {
        default_spec(spec, restart);
    }
}

/// Fills the defaults of a pod spec object.
pub(crate) fn default_spec(spec: &mut Value, restart: Restart) {
    if restart != Restart::Job {
        defaults::set(spec, "restartPolicy", json!("Always"));
    }
    defaults::set(spec, "dnsPolicy", json!("ClusterFirst"));
    defaults::set(spec, "schedulerName", json!("default-scheduler"));
    defaults::set(spec, "terminationGracePeriodSeconds", json!(30));
    defaults::set(spec, "securityContext", json!({}));
    for list in ["initContainers", "containers"] {
        for c in defaults::items(spec, list) {
            default_container(c);
        }
    }
    for v in defaults::items(spec, "volumes") {
        for source in ["configMap", "secret", "downwardAPI", "projected"] {
            if let Some(s) = defaults::existing(v, source) {
                // 0644, as kube-apiserver stores it (decimal).
                defaults::set(s, "defaultMode", json!(420));
            }
        }
    }
}

fn default_container(c: &mut Value) {
    defaults::set(c, "terminationMessagePath", json!("/dev/termination-log"));
    defaults::set(c, "terminationMessagePolicy", json!("File"));
    // Go serialises the empty requirements struct, so kube's `-o yaml` shows `resources: {}`.
    defaults::set(c, "resources", json!({}));
    if let Some(image) = c.get("image").and_then(Value::as_str) {
        let policy = pull_policy(image);
        defaults::set(c, "imagePullPolicy", json!(policy));
    }
    for p in defaults::items(c, "ports") {
        defaults::set(p, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = defaults::existing(c, probe) {
            defaults::set(p, "timeoutSeconds", json!(1));
            defaults::set(p, "periodSeconds", json!(10));
            defaults::set(p, "successThreshold", json!(1));
            defaults::set(p, "failureThreshold", json!(3));
            if let Some(h) = defaults::existing(p, "httpGet") {
                defaults::set(h, "scheme", json!("HTTP"));
            }
        }
    }
}

/// `Always` for `:latest` or untagged images (nothing says the local copy is current),
/// `IfNotPresent` for any other tag or a digest.
pub(crate) fn pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // The tag follows the last ':' after the last '/' (a registry may carry a port).
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) if tag != "latest" && !tag.is_empty() => "IfNotPresent",
        _ => "Always",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(v: Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    fn check(v: Value, restart: Restart) -> Vec<(String, String)> {
        let mut e = Errs::default();
        validate_spec(&spec(v), "spec", restart, &mut e);
        e.into_causes()
            .into_iter()
            .map(|c| (c.field, c.message))
            .collect()
    }

    #[test]
    fn pull_policies() {
        assert_eq!(pull_policy("nginx"), "Always");
        assert_eq!(pull_policy("nginx:latest"), "Always");
        assert_eq!(pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(pull_policy("registry:5000/nginx"), "Always");
        assert_eq!(pull_policy("registry:5000/nginx:1.2"), "IfNotPresent");
        assert_eq!(pull_policy("nginx@sha256:abc"), "IfNotPresent");
    }

    #[test]
    fn containers_are_checked() {
        assert_eq!(
            check(json!({"containers": []}), Restart::Pod),
            vec![("spec.containers".into(), "Required value".into())]
        );
        let errs = check(
            json!({"containers": [
                {"name": "web", "ports": [{"containerPort": 0}]},
                {"name": "web", "image": "x", "volumeMounts": [{"name": "data", "mountPath": "/d"}]},
                {"name": "Bad_Name", "image": "x"}]}),
            Restart::Pod,
        );
        let fields: Vec<&str> = errs.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.containers[0].image",
                "spec.containers[0].ports[0].containerPort",
                "spec.containers[1].volumeMounts[0].name",
                "spec.containers[1].name",
                "spec.containers[2].name",
            ]
        );
        assert_eq!(errs[0].1, "Required value");
        assert_eq!(
            errs[1].1,
            "Invalid value: 0: must be between 1 and 65535, inclusive"
        );
        assert_eq!(errs[2].1, "Not found: \"data\"");
        assert_eq!(errs[3].1, "Duplicate value: \"web\"");
    }

    #[test]
    fn container_resources_are_checked() {
        let errs = check(
            json!({"containers": [{"name": "a", "image": "x", "resources": {
                "limits": {"cpu": "1", "memory": "-1Gi", "example.com/gpu": "1"},
                "requests": {"cpu": "1500m", "bogus": "1", "memory": "lots"}}}]}),
            Restart::Pod,
        );
        assert_eq!(
            errs,
            vec![
                (
                    "spec.containers[0].resources.limits[memory]".into(),
                    "Invalid value: -1Gi: must be greater than or equal to 0".into()
                ),
                (
                    "spec.containers[0].resources.requests[bogus]".into(),
                    "Invalid value: \"bogus\": must be a standard resource for containers".into()
                ),
                (
                    "spec.containers[0].resources.requests".into(),
                    "Invalid value: \"1500m\": must be less than or equal to cpu limit of 1".into()
                ),
                (
                    "spec.containers[0].resources.requests[memory]".into(),
                    "Invalid value: \"lots\": quantities must match the regular expression \
                     '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
                        .into()
                ),
            ]
        );
        let fine = json!({"containers": [{"name": "a", "image": "x", "resources": {
            "limits": {"cpu": 1, "memory": "128Mi"}, "requests": {"cpu": 0.5, "hugepages-2Mi": "2Mi"}}}]});
        assert!(check(fine, Restart::Pod).is_empty());
    }

    #[test]
    fn restart_policy_depends_on_the_owner() {
        let never = json!({"restartPolicy": "Never", "containers": [{"name": "a", "image": "x"}]});
        let none = json!({"containers": [{"name": "a", "image": "x"}]});
        assert!(check(never.clone(), Restart::Pod).is_empty());
        assert!(check(never.clone(), Restart::Job).is_empty());
        assert_eq!(
            check(never, Restart::AlwaysOnly),
            vec![(
                "spec.restartPolicy".into(),
                "Unsupported value: \"Never\": supported values: \"Always\"".into()
            )]
        );
        assert!(check(none.clone(), Restart::AlwaysOnly).is_empty());
        assert_eq!(
            check(none, Restart::Job),
            vec![(
                "spec.restartPolicy".into(),
                "Required value: valid values: \"OnFailure\", \"Never\"".into()
            )]
        );
    }

    #[test]
    fn spec_defaults_fill_only_absent_fields() {
        let mut v = json!({"dnsPolicy": "Default", "containers": [
            {"name": "a", "image": "nginx:1.27", "ports": [{"containerPort": 80}], "readinessProbe": {"httpGet": {"port": 80}}},
            {"name": "b", "image": "nginx", "imagePullPolicy": "Never", "terminationMessagePolicy": "FallbackToLogsOnError"}],
            "volumes": [{"name": "c", "configMap": {"name": "cm"}}]});
        default_spec(&mut v, Restart::AlwaysOnly);
        assert_eq!(v["restartPolicy"], "Always");
        assert_eq!(v["dnsPolicy"], "Default");
        assert_eq!(v["schedulerName"], "default-scheduler");
        assert_eq!(v["terminationGracePeriodSeconds"], 30);
        assert_eq!(v["securityContext"], json!({}));
        let a = &v["containers"][0];
        assert_eq!(a["imagePullPolicy"], "IfNotPresent");
        assert_eq!(a["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(a["terminationMessagePolicy"], "File");
        assert_eq!(a["ports"][0]["protocol"], "TCP");
        assert_eq!(a["readinessProbe"]["periodSeconds"], 10);
        assert_eq!(a["readinessProbe"]["httpGet"]["scheme"], "HTTP");
        let b = &v["containers"][1];
        assert_eq!(b["imagePullPolicy"], "Never");
        assert_eq!(b["terminationMessagePolicy"], "FallbackToLogsOnError");
        assert_eq!(v["volumes"][0]["configMap"]["defaultMode"], 420);

        let mut job = json!({"containers": []});
        default_spec(&mut job, Restart::Job);
        assert!(job.get("restartPolicy").is_none());
    }
}
