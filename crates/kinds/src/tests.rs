//! Whole-registration tests: names against kube-apiserver's discovery, and each kind's
//! validation and defaulting through the `ResourceDef` hooks.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use flotilla_apimachinery::ResourceDef;
use flotilla_apimachinery::resource::Validation;
use serde_json::{Value, json};

use super::*;

/// Built once: generating the schemas of every kind is the slow part.
fn all() -> Vec<ResourceDef> {
    static ALL: OnceLock<Vec<ResourceDef>> = OnceLock::new();
    ALL.get_or_init(builtin_resources).clone()
}

fn find(group: &str, plural: &str) -> ResourceDef {
    all()
        .into_iter()
        .find(|d| d.group == group && d.plural == plural)
        .unwrap_or_else(|| panic!("no {plural}.{group}"))
}

fn validate(group: &str, plural: &str, obj: &Value, old: Option<&Value>) -> Validation {
    let d = find(group, plural);
    (d.validate.as_ref().unwrap())(obj, old)
}

/// `field: message` of every cause.
fn causes(v: &Validation) -> Vec<String> {
    v.causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

fn defaulted(group: &str, plural: &str, mut obj: Value) -> Value {
    let d = find(group, plural);
    (d.default.as_ref().unwrap())(&mut obj);
    obj
}

#[test]
fn names_match_kube_discovery() {
    // (group, version, kind, plural, singular, shortNames, categories, namespaced, status, scale)
    type Row = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static [&'static str],
        bool,
        bool,
        bool,
        bool,
    );
    let expected: &[Row] = &[
        (
            "",
            "v1",
            "Namespace",
            "namespaces",
            "namespace",
            &["ns"],
            false,
            false,
            true,
            false,
        ),
        (
            "",
            "v1",
            "ConfigMap",
            "configmaps",
            "configmap",
            &["cm"],
            false,
            true,
            false,
            false,
        ),
        (
            "",
            "v1",
            "Secret",
            "secrets",
            "secret",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "",
            "v1",
            "Service",
            "services",
            "service",
            &["svc"],
            true,
            true,
            true,
            false,
        ),
        (
            "",
            "v1",
            "ServiceAccount",
            "serviceaccounts",
            "serviceaccount",
            &["sa"],
            false,
            true,
            false,
            false,
        ),
        (
            "",
            "v1",
            "PersistentVolumeClaim",
            "persistentvolumeclaims",
            "persistentvolumeclaim",
            &["pvc"],
            false,
            true,
            true,
            false,
        ),
        (
            "",
            "v1",
            "Event",
            "events",
            "event",
            &["ev"],
            false,
            true,
            false,
            false,
        ),
        (
            "apps",
            "v1",
            "Deployment",
            "deployments",
            "deployment",
            &["deploy"],
            true,
            true,
            true,
            true,
        ),
        (
            "apps",
            "v1",
            "StatefulSet",
            "statefulsets",
            "statefulset",
            &["sts"],
            true,
            true,
            true,
            true,
        ),
        (
            "apps",
            "v1",
            "DaemonSet",
            "daemonsets",
            "daemonset",
            &["ds"],
            true,
            true,
            true,
            false,
        ),
        (
            "apps",
            "v1",
            "ReplicaSet",
            "replicasets",
            "replicaset",
            &["rs"],
            true,
            true,
            true,
            true,
        ),
        (
            "batch",
            "v1",
            "Job",
            "jobs",
            "job",
            &[],
            true,
            true,
            true,
            false,
        ),
        (
            "batch",
            "v1",
            "CronJob",
            "cronjobs",
            "cronjob",
            &["cj"],
            true,
            true,
            true,
            false,
        ),
        (
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            "lease",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            "event",
            &["ev"],
            false,
            true,
            false,
            false,
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            "role",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            "clusterrole",
            &[],
            false,
            false,
            false,
            false,
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            "rolebinding",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            "clusterrolebinding",
            &[],
            false,
            false,
            false,
            false,
        ),
        (
            "",
            "v1",
            "Pod",
            "pods",
            "pod",
            &["po"],
            true,
            true,
            true,
            false,
        ),
        (
            "",
            "v1",
            "Node",
            "nodes",
            "node",
            &["no"],
            false,
            false,
            true,
            false,
        ),
        (
            "",
            "v1",
            "PodTemplate",
            "podtemplates",
            "podtemplate",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "",
            "v1",
            "ReplicationController",
            "replicationcontrollers",
            "replicationcontroller",
            &["rc"],
            true,
            true,
            true,
            true,
        ),
        (
            "",
            "v1",
            "Endpoints",
            "endpoints",
            "endpoints",
            &["ep"],
            false,
            true,
            false,
            false,
        ),
        (
            "",
            "v1",
            "LimitRange",
            "limitranges",
            "limitrange",
            &["limits"],
            false,
            true,
            false,
            false,
        ),
        (
            "",
            "v1",
            "ResourceQuota",
            "resourcequotas",
            "resourcequota",
            &["quota"],
            false,
            true,
            true,
            false,
        ),
        (
            "",
            "v1",
            "PersistentVolume",
            "persistentvolumes",
            "persistentvolume",
            &["pv"],
            false,
            false,
            true,
            false,
        ),
        // Issue 18's groups (HorizontalPodAutoscaler: v2 here, v1 checked below).
        (
            "autoscaling",
            "v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            &["hpa"],
            true,
            true,
            true,
            false,
        ),
        (
            "policy",
            "v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets",
            "poddisruptionbudget",
            &["pdb"],
            false,
            true,
            true,
            false,
        ),
        (
            "networking.k8s.io",
            "v1",
            "Ingress",
            "ingresses",
            "ingress",
            &["ing"],
            false,
            true,
            true,
            false,
        ),
        (
            "networking.k8s.io",
            "v1",
            "IngressClass",
            "ingressclasses",
            "ingressclass",
            &[],
            false,
            false,
            false,
            false,
        ),
        (
            "networking.k8s.io",
            "v1",
            "IPAddress",
            "ipaddresses",
            "ipaddress",
            &["ip"],
            false,
            false,
            false,
            false,
        ),
        (
            "networking.k8s.io",
            "v1",
            "ServiceCIDR",
            "servicecidrs",
            "servicecidr",
            &[],
            false,
            false,
            true,
            false,
        ),
        (
            "storage.k8s.io",
            "v1",
            "CSIStorageCapacity",
            "csistoragecapacities",
            "csistoragecapacity",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            "networkpolicy",
            &["netpol"],
            false,
            true,
            false,
            false,
        ),
        (
            "storage.k8s.io",
            "v1",
            "StorageClass",
            "storageclasses",
            "storageclass",
            &["sc"],
            false,
            false,
            false,
            false,
        ),
        (
            "storage.k8s.io",
            "v1",
            "CSIDriver",
            "csidrivers",
            "csidriver",
            &[],
            false,
            false,
            false,
            false,
        ),
        (
            "storage.k8s.io",
            "v1",
            "CSINode",
            "csinodes",
            "csinode",
            &[],
            false,
            false,
            false,
            false,
        ),
        (
            "storage.k8s.io",
            "v1",
            "VolumeAttachment",
            "volumeattachments",
            "volumeattachment",
            &[],
            false,
            false,
            true,
            false,
        ),
        (
            "scheduling.k8s.io",
            "v1",
            "PriorityClass",
            "priorityclasses",
            "priorityclass",
            &["pc"],
            false,
            false,
            false,
            false,
        ),
        (
            "discovery.k8s.io",
            "v1",
            "EndpointSlice",
            "endpointslices",
            "endpointslice",
            &[],
            false,
            true,
            false,
            false,
        ),
        (
            "node.k8s.io",
            "v1",
            "RuntimeClass",
            "runtimeclasses",
            "runtimeclass",
            &[],
            false,
            false,
            false,
            false,
        ),
        (
            "apps",
            "v1",
            "ControllerRevision",
            "controllerrevisions",
            "controllerrevision",
            &[],
            false,
            true,
            false,
            false,
        ),
    ];
    let defs = all();
    // autoscaling/v1 horizontalpodautoscalers is the one resource served at two versions.
    assert_eq!(defs.len(), expected.len() + 1);
    let hpa_v1 = defs
        .iter()
        .find(|d| d.group == "autoscaling" && d.version == "v1")
        .unwrap();
    assert_eq!(hpa_v1.storage_api_version(), "autoscaling/v2");
    assert!(hpa_v1.converts() && hpa_v1.convert.is_some());
    assert_eq!(hpa_v1.short_names, vec!["hpa"]);
    for (group, version, kind, plural, singular, short, in_all, namespaced, status, scale) in
        expected
    {
        let d = find(group, plural);
        let what = format!("{plural}.{group}");
        assert_eq!(d.version, *version, "{what}");
        assert_eq!(d.kind, *kind, "{what}");
        assert_eq!(d.list_kind, format!("{kind}List"), "{what}");
        assert_eq!(d.singular, *singular, "{what}");
        assert_eq!(
            d.short_names,
            short.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
            "{what}"
        );
        let categories: Vec<String> = if *in_all { vec!["all".into()] } else { vec![] };
        assert_eq!(d.categories, categories, "{what}");
        assert_eq!(d.namespaced, *namespaced, "{what}");
        assert_eq!(d.has_status, *status, "{what}");
        assert_eq!(d.scale.is_some(), *scale, "{what}");
        assert!(d.strategic_merge, "{what}");
        assert!(d.validate.is_some(), "{what}");
        assert!(d.printer.is_some(), "{what} has no Table printer");
        let openapi = d.openapi.as_ref().unwrap();
        let root = &openapi.components[&openapi.root];
        assert_eq!(
            root[GVK_EXTENSION],
            json!([{"group": group, "kind": kind, "version": version}]),
            "{what}"
        );
    }
    // Nothing served is also listed as deliberately not served.
    for (resource, reason) in NOT_SERVED {
        assert!(!reason.is_empty());
        assert!(defs.iter().all(|d| d.plural != *resource), "{resource}");
    }
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web", "tier": "front"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}
            }
        }
    })
}

#[test]
fn valid_deployment_passes_before_and_after_defaulting() {
    let v = validate("apps", "deployments", &deployment(), None);
    assert!(
        v.decode_error.is_none() && v.unknown_fields.is_empty() && v.causes.is_empty(),
        "{v:?}"
    );
    let d = defaulted("apps", "deployments", deployment());
    let v = validate("apps", "deployments", &d, Some(&d));
    assert!(v.causes.is_empty(), "{v:?}");
}

#[test]
fn deployment_rejects_negative_replicas() {
    let mut d = deployment();
    d["spec"]["replicas"] = json!(-1);
    let v = validate("apps", "deployments", &d, None);
    assert_eq!(
        causes(&v),
        vec!["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
    );
    assert_eq!(v.causes[0].reason, "FieldValueInvalid");
}

#[test]
fn deployment_requires_an_image() {
    let mut d = deployment();
    d["spec"]["template"]["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("image");
    let v = validate("apps", "deployments", &d, None);
    assert_eq!(
        causes(&v),
        vec!["spec.template.spec.containers[0].image: Required value"]
    );
    assert_eq!(v.causes[0].reason, "FieldValueRequired");
}

#[test]
fn deployment_rejects_a_bad_name() {
    let mut d = deployment();
    d["metadata"]["name"] = json!("Web_1");
    let c = causes(&validate("apps", "deployments", &d, None));
    assert_eq!(c.len(), 1);
    assert!(
        c[0].starts_with("metadata.name: Invalid value: \"Web_1\": a lowercase RFC 1123 subdomain"),
        "{c:?}"
    );
}

#[test]
fn deployment_selector_must_match_template() {
    let mut d = deployment();
    d["spec"]["selector"]["matchLabels"]["app"] = json!("api");
    let c = causes(&validate("apps", "deployments", &d, None));
    assert_eq!(
        c,
        vec![
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"front\"}: \
             `selector` does not match template `labels`"
        ]
    );
    let mut missing = deployment();
    missing["spec"].as_object_mut().unwrap().remove("selector");
    assert_eq!(
        causes(&validate("apps", "deployments", &missing, None)),
        vec!["spec.selector: Required value"]
    );
    let mut empty = deployment();
    empty["spec"]["selector"] = json!({});
    let c = causes(&validate("apps", "deployments", &empty, None));
    assert_eq!(
        c,
        vec!["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
    );
}

#[test]
fn unknown_fields_are_listed() {
    let mut d = deployment();
    d["spec"]["foo"] = json!(1);
    d["spec"]["template"]["spec"]["containers"][0]["badField"] = json!("x");
    let v = validate("apps", "deployments", &d, None);
    assert!(v.decode_error.is_none());
    assert!(v.causes.is_empty());
    // In document order.
    assert_eq!(
        v.unknown_fields,
        vec!["spec.template.spec.containers[0].badField", "spec.foo"]
    );
}

#[test]
fn wrong_types_are_decode_errors() {
    let mut d = deployment();
    d["spec"]["replicas"] = json!("three");
    let v = validate("apps", "deployments", &d, None);
    let err = v.decode_error.unwrap();
    assert!(
        err.starts_with("spec.replicas: invalid type: string \"three\""),
        "{err}"
    );
    assert!(v.causes.is_empty());
}

#[test]
fn selector_is_immutable() {
    let old = defaulted("apps", "deployments", deployment());
    let mut new = old.clone();
    new["spec"]["selector"]["matchLabels"]["tier"] = json!("front");
    let v = validate("apps", "deployments", &new, Some(&old));
    let c = causes(&v);
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(
        c[0].starts_with("spec.selector: Invalid value: ")
            && c[0].ends_with(": field is immutable"),
        "{c:?}"
    );
    // Changing the replicas is fine.
    let mut scaled = old.clone();
    scaled["spec"]["replicas"] = json!(5);
    assert!(
        validate("apps", "deployments", &scaled, Some(&old))
            .causes
            .is_empty()
    );
    // The same rule for the other selector-owning kinds.
    for (plural, kind) in [
        ("replicasets", "ReplicaSet"),
        ("statefulsets", "StatefulSet"),
        ("daemonsets", "DaemonSet"),
    ] {
        let mut o = deployment();
        o["kind"] = json!(kind);
        o["spec"].as_object_mut().unwrap().remove("replicas");
        let mut n = o.clone();
        n["spec"]["selector"] = json!({"matchLabels": {"tier": "front"}});
        let c = causes(&validate("apps", plural, &n, Some(&o)));
        assert!(
            c.iter()
                .any(|c| c.starts_with("spec.selector:") && c.ends_with("field is immutable")),
            "{plural}: {c:?}"
        );
    }
}

#[test]
fn statefulset_spec_is_mostly_fixed() {
    let mut sts = deployment();
    sts["kind"] = json!("StatefulSet");
    sts["spec"]["serviceName"] = json!("web");
    let old = defaulted("apps", "statefulsets", sts.clone());
    // Not defaulted: must still compare equal to the defaulted stored object.
    let mut new = sts.clone();
    new["spec"]["replicas"] = json!(1);
    assert!(
        validate("apps", "statefulsets", &new, Some(&old))
            .causes
            .is_empty()
    );
    new["spec"]["podManagementPolicy"] = json!("Parallel");
    let c = causes(&validate("apps", "statefulsets", &new, Some(&old)));
    assert_eq!(c.len(), 1);
    assert!(
        c[0].starts_with("spec: Forbidden: updates to statefulset spec"),
        "{c:?}"
    );
}

#[test]
fn deployment_defaults() {
    let d = defaulted("apps", "deployments", deployment());
    let spec = &d["spec"];
    assert_eq!(spec["replicas"], 3, "given values stay");
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Always");
    assert_eq!(pod["dnsPolicy"], "ClusterFirst");
    assert_eq!(pod["schedulerName"], "default-scheduler");
    assert_eq!(pod["terminationGracePeriodSeconds"], 30);
    assert_eq!(pod["securityContext"], json!({}));
    let c = &pod["containers"][0];
    assert_eq!(c["imagePullPolicy"], "IfNotPresent");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");

    let mut bare = deployment();
    bare["spec"].as_object_mut().unwrap().remove("replicas");
    bare["spec"]["strategy"] = json!({"type": "Recreate"});
    bare["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx");
    let d = defaulted("apps", "deployments", bare);
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "Always"
    );
    // Idempotent.
    assert_eq!(defaulted("apps", "deployments", d.clone()), d);
}

#[test]
fn statefulset_replicaset_daemonset_defaults() {
    let mut sts = deployment();
    sts["kind"] = json!("StatefulSet");
    sts["spec"].as_object_mut().unwrap().remove("replicas");
    let s = defaulted("apps", "statefulsets", sts);
    assert_eq!(s["spec"]["replicas"], 1);
    assert_eq!(s["spec"]["podManagementPolicy"], "OrderedReady");
    assert_eq!(s["spec"]["updateStrategy"]["type"], "RollingUpdate");
    assert_eq!(s["spec"]["template"]["spec"]["restartPolicy"], "Always");

    let mut rs = deployment();
    rs["kind"] = json!("ReplicaSet");
    rs["spec"]["replicas"] = json!(0);
    let r = defaulted("apps", "replicasets", rs);
    assert_eq!(r["spec"]["replicas"], 0);
    assert_eq!(r["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");

    let mut ds = deployment();
    ds["kind"] = json!("DaemonSet");
    ds["spec"].as_object_mut().unwrap().remove("replicas");
    let d = defaulted("apps", "daemonsets", ds);
    assert_eq!(
        d["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert!(d["spec"].get("replicas").is_none());
}

fn job() -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "pi", "image": "perl:5.34", "command": ["perl"]}]}}}})
}

#[test]
fn jobs_need_onfailure_or_never_and_get_no_restart_default() {
    assert!(validate("batch", "jobs", &job(), None).causes.is_empty());
    let mut j = job();
    j["spec"]["template"]["spec"]
        .as_object_mut()
        .unwrap()
        .remove("restartPolicy");
    let d = defaulted("batch", "jobs", j.clone());
    assert!(d["spec"]["template"]["spec"].get("restartPolicy").is_none());
    assert_eq!(
        causes(&validate("batch", "jobs", &d, None)),
        vec![
            "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
        ]
    );
    j["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    assert_eq!(
        causes(&validate("batch", "jobs", &j, None)),
        vec![
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        ]
    );
    assert_eq!(
        validate("batch", "jobs", &j, None).causes[0].reason,
        "FieldValueNotSupported"
    );
}

#[test]
fn job_defaults() {
    let d = defaulted("batch", "jobs", job());
    assert_eq!(d["spec"]["backoffLimit"], 6);
    assert_eq!(d["spec"]["completions"], 1);
    assert_eq!(d["spec"]["parallelism"], 1);
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Never");
    let mut j = job();
    j["spec"]["parallelism"] = json!(4);
    j["spec"]["backoffLimit"] = json!(0);
    let d = defaulted("batch", "jobs", j);
    assert_eq!(d["spec"]["parallelism"], 4);
    assert_eq!(d["spec"]["backoffLimit"], 0);
    assert!(
        d["spec"].get("completions").is_none(),
        "work-queue jobs keep completions unset"
    );
}

#[test]
fn cronjob_checks_schedule_and_template() {
    let cj = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "t", "image": "busybox"}]}}}}}});
    assert!(validate("batch", "cronjobs", &cj, None).causes.is_empty());
    let d = defaulted("batch", "cronjobs", cj.clone());
    assert_eq!(d["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(
        d["spec"]["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"],
        "ClusterFirst"
    );
    let mut bad = cj;
    bad["spec"]["schedule"] = json!("");
    bad["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let c = causes(&validate("batch", "cronjobs", &bad, None));
    assert_eq!(c[0], "spec.schedule: Required value");
    assert!(
        c[1].starts_with("spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value"),
        "{c:?}"
    );
}

#[test]
fn containers_must_be_named_uniquely_with_valid_ports() {
    let mut d = deployment();
    d["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "a", "image": "x", "ports": [{"containerPort": 70000}]},
        {"name": "a", "image": "y"},
        {"image": "z"}
    ]);
    let c = causes(&validate("apps", "deployments", &d, None));
    assert_eq!(
        c,
        vec![
            "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.template.spec.containers[1].name: Duplicate value: \"a\"",
            "spec.template.spec.containers[2].name: Required value",
        ]
    );
    let mut none = deployment();
    none["spec"]["template"]["spec"]["containers"] = json!([]);
    assert_eq!(
        causes(&validate("apps", "deployments", &none, None)),
        vec!["spec.template.spec.containers: Required value"]
    );
}

#[test]
fn services() {
    let svc = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}});
    assert!(validate("", "services", &svc, None).causes.is_empty());
    let d = defaulted("", "services", svc.clone());
    assert_eq!(d["spec"]["type"], "ClusterIP");
    assert_eq!(d["spec"]["sessionAffinity"], "None");
    assert_eq!(
        d["spec"]["ports"][0],
        json!({"port": 80, "protocol": "TCP", "targetPort": 80})
    );

    let mut bad = svc.clone();
    bad["spec"]["type"] = json!("Foo");
    bad["spec"]["ports"] = json!([{"port": 0}, {"name": "b", "targetPort": 8080}]);
    let c = causes(&validate("", "services", &bad, None));
    assert_eq!(
        c,
        vec![
            "spec.type: Unsupported value: \"Foo\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ports[0].name: Required value",
            "spec.ports[1].port: Required value",
        ]
    );
    let mut named = svc.clone();
    named["metadata"]["name"] = json!("1web");
    assert_eq!(causes(&validate("", "services", &named, None)).len(), 1);
    let mut noports = svc;
    noports["spec"].as_object_mut().unwrap().remove("ports");
    assert_eq!(
        causes(&validate("", "services", &noports, None)),
        vec!["spec.ports: Required value"]
    );
}

#[test]
fn configmap_and_secret_keys() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"ok.key": "1", "bad key": "2"}});
    let c = causes(&validate("", "configmaps", &cm, None));
    assert_eq!(c.len(), 1);
    assert!(
        c[0].starts_with("data[bad key]: Invalid value: \"bad key\": a valid config key"),
        "{c:?}"
    );
    let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"a/b": "x"}});
    assert_eq!(causes(&validate("", "secrets", &s, None)).len(), 1);
    let d = defaulted("", "secrets", s);
    assert_eq!(d["type"], "Opaque");
    let typed =
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Fixed"});
    assert_eq!(defaulted("", "secrets", typed)["type"], "Fixed");
    let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "kubernetes.io/tls",
        "data": {"tls.crt": "YQ=="}});
    assert_eq!(
        causes(&validate("", "secrets", &tls, None)),
        vec!["data[tls.key]: Required value"]
    );
    let bad64 = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "not base64!"}});
    assert!(validate("", "secrets", &bad64, None).decode_error.is_some());
}

#[test]
fn secret_string_data_is_written_into_data() {
    let s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"keep": "YQ==", "token": "b2xk"}, "stringData": {"token": "new", "ca": "pem"}});
    let d = defaulted("", "secrets", s);
    assert_eq!(d.get("stringData"), None, "{d}");
    assert_eq!(
        d["data"],
        json!({"keep": "YQ==", "token": "bmV3", "ca": "cGVt"})
    );
    let only = defaulted(
        "",
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": ""}}),
    );
    assert_eq!(only["data"], json!({"k": ""}));
    // A non-string value stays for decoding to reject.
    let bad = defaulted(
        "",
        "secrets",
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"k": 1}}),
    );
    assert_eq!(bad["stringData"], json!({"k": 1}));
    assert!(validate("", "secrets", &bad, None).decode_error.is_some());
}

#[test]
fn namespaces() {
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}});
    assert!(validate("", "namespaces", &ns, None).causes.is_empty());
    let d = defaulted("", "namespaces", ns);
    assert_eq!(d["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(d["status"]["phase"], "Active");
    let dotted = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}});
    assert_eq!(
        causes(&validate("", "namespaces", &dotted, None)).len(),
        1,
        "namespace names are labels"
    );
    let given = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}, "status": {"phase": "Terminating"}});
    assert_eq!(
        defaulted("", "namespaces", given)["status"]["phase"],
        "Terminating"
    );
}

#[test]
fn rbac_bindings() {
    let rb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "read"},
        "roleRef": {"kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "name": "jane"}, {"kind": "ServiceAccount", "name": "default", "namespace": "x"}]});
    assert!(
        validate("rbac.authorization.k8s.io", "rolebindings", &rb, None)
            .causes
            .is_empty()
    );
    let d = defaulted("rbac.authorization.k8s.io", "rolebindings", rb.clone());
    assert_eq!(d["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(d["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");

    let mut norole = rb.clone();
    norole.as_object_mut().unwrap().remove("roleRef");
    assert_eq!(
        causes(&validate(
            "rbac.authorization.k8s.io",
            "rolebindings",
            &norole,
            None
        )),
        vec!["roleRef: Required value"]
    );

    let mut changed = d.clone();
    changed["roleRef"]["name"] = json!("writer");
    let c = causes(&validate(
        "rbac.authorization.k8s.io",
        "rolebindings",
        &changed,
        Some(&d),
    ));
    assert_eq!(c.len(), 1);
    assert!(
        c[0].starts_with("roleRef: Invalid value: ") && c[0].ends_with("cannot change roleRef"),
        "{c:?}"
    );
    // Defaulting alone is not a change.
    assert!(
        validate("rbac.authorization.k8s.io", "rolebindings", &rb, Some(&d))
            .causes
            .is_empty()
    );

    let crb = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "system:x"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]});
    let c = causes(&validate(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        &crb,
        None,
    ));
    assert_eq!(
        c,
        vec![
            "roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\"",
            "subjects[0].namespace: Required value",
        ]
    );
}

#[test]
fn rbac_rules() {
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}, {"resources": ["pods"], "verbs": []},
                  {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]});
    let c = causes(&validate("rbac.authorization.k8s.io", "roles", &role, None));
    assert_eq!(c.len(), 3, "{c:?}");
    assert!(c[0].starts_with("rules[1].verbs: Required value"));
    assert!(c[1].starts_with("rules[1].apiGroups: Required value"));
    assert!(c[2].starts_with("rules[2].nonResourceURLs: Invalid value"));
    let cr = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:health"},
        "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]});
    assert!(
        validate("rbac.authorization.k8s.io", "clusterroles", &cr, None)
            .causes
            .is_empty()
    );
}

#[test]
fn pods_and_pvcs() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:latest"}]}});
    assert!(validate("", "pods", &pod, None).causes.is_empty());
    let d = defaulted("", "pods", pod);
    assert_eq!(d["spec"]["restartPolicy"], "Never");
    assert_eq!(d["spec"]["enableServiceLinks"], true);
    assert_eq!(d["spec"]["containers"][0]["imagePullPolicy"], "Always");

    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    assert!(
        validate("", "persistentvolumeclaims", &pvc, None)
            .causes
            .is_empty()
    );
    let old = defaulted("", "persistentvolumeclaims", pvc.clone());
    let mut bigger = pvc.clone();
    bigger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert!(
        validate("", "persistentvolumeclaims", &bigger, Some(&old))
            .causes
            .is_empty()
    );
    let mut other_mode = pvc;
    other_mode["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    let c = causes(&validate(
        "",
        "persistentvolumeclaims",
        &other_mode,
        Some(&old),
    ));
    assert!(
        c.len() == 1 && c[0].starts_with("spec: Forbidden:"),
        "{c:?}"
    );
    let empty = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d"}, "spec": {}});
    assert_eq!(
        causes(&validate("", "persistentvolumeclaims", &empty, None)),
        vec![
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value"
        ]
    );
}

#[test]
fn label_checks_apply_to_every_kind() {
    for d in all() {
        let obj = json!({"apiVersion": d.api_version(), "kind": d.kind, "metadata": {"name": "ok", "labels": {"-bad": "x"}}});
        let v = (d.validate.as_ref().unwrap())(&obj, None);
        assert!(v.decode_error.is_none(), "{}: {v:?}", d.plural);
        assert!(
            v.causes
                .iter()
                .any(|c| c.field == "metadata.labels" && c.message.contains("\"-bad\"")),
            "{}: {:?}",
            d.plural,
            v.causes
        );
    }
}

#[test]
fn every_kind_defaults_idempotently_and_its_schemas_are_closed() {
    for d in all() {
        let base =
            json!({"apiVersion": d.api_version(), "kind": d.kind, "metadata": {"name": "x"}});
        if let Some(f) = &d.default {
            let mut once = base.clone();
            f(&mut once);
            let mut twice = once.clone();
            f(&mut twice);
            assert_eq!(once, twice, "{}", d.plural);
        }
        let s = d.openapi.as_ref().unwrap();
        let mut refs = Vec::new();
        s.components
            .values()
            .for_each(|v| crate::openapi::refs(v, &mut refs));
        for r in refs {
            let name = r.strip_prefix("#/components/schemas/").unwrap();
            assert!(
                s.components.contains_key(name),
                "{}: dangling {r}",
                d.plural
            );
        }
    }
    let _: BTreeMap<String, Value> = common_schemas();
}

#[test]
fn kubectl_style_objects_decode() {
    // Numeric quantities and `creationTimestamp: null` are what kubectl users send.
    let mut d = deployment();
    d["metadata"]["creationTimestamp"] = Value::Null;
    d["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
    d["spec"]["template"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"cpu": 1, "memory": "128Mi"}, "requests": {"cpu": 0.5}});
    d["status"] = json!({});
    let v = validate("apps", "deployments", &d, None);
    assert!(
        v.decode_error.is_none() && v.unknown_fields.is_empty() && v.causes.is_empty(),
        "{v:?}"
    );
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "web", "image": "nginx", "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}})
}

#[test]
fn pod_defaults_match_kube() {
    let d = defaulted("", "pods", pod());
    let spec = &d["spec"];
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(spec["schedulerName"], "default-scheduler");
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["enableServiceLinks"], true);
    let c = &spec["containers"][0];
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    // Requests default to limits, which makes the pod Guaranteed.
    assert_eq!(
        c["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(
        d["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );
    let mut plain = pod();
    plain["spec"]["containers"][0]
        .as_object_mut()
        .unwrap()
        .remove("resources");
    assert_eq!(
        defaulted("", "pods", plain)["status"]["qosClass"],
        "BestEffort"
    );
    let mut burst = pod();
    burst["spec"]["containers"][0]["resources"] = json!({"requests": {"cpu": "100m"}});
    assert_eq!(
        defaulted("", "pods", burst)["status"]["qosClass"],
        "Burstable"
    );
}

#[test]
fn pod_checks_and_update_rules() {
    assert!(causes(&validate("", "pods", &pod(), None)).is_empty());
    let mut bad = pod();
    bad["spec"]["restartPolicy"] = json!("Sometimes");
    bad["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(70000);
    bad["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
    assert_eq!(
        causes(&validate("", "pods", &bad, None)),
        vec![
            "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[0].volumeMounts[0].name: Not found: \"data\"",
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
        ]
    );
    let mut dup = pod();
    dup["spec"]["containers"] = json!([{"name": "a", "image": "x"}, {"name": "a", "image": "y"}]);
    dup["spec"]["volumes"] = json!([{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}]);
    assert_eq!(
        causes(&validate("", "pods", &dup, None)),
        vec![
            "spec.volumes[1].name: Duplicate value: \"v\"",
            "spec.containers[1].name: Duplicate value: \"a\"",
        ]
    );
    let no_spec = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
    assert_eq!(
        causes(&validate("", "pods", &no_spec, None)),
        vec!["spec.containers: Required value"]
    );

    // Updates: the image and labels may change, the rest of the spec may not.
    let old = defaulted("", "pods", pod());
    let mut image = old.clone();
    image["spec"]["containers"][0]["image"] = json!("nginx:1.27");
    image["metadata"]["labels"] = json!({"tier": "front"});
    assert!(causes(&validate("", "pods", &image, Some(&old))).is_empty());
    let mut restart = old.clone();
    restart["spec"]["restartPolicy"] = json!("Never");
    let c = causes(&validate("", "pods", &restart, Some(&old)));
    assert!(
        c.len() == 1 && c[0].starts_with("spec: Forbidden: pod updates may not change fields"),
        "{c:?}"
    );
}

fn rc() -> Value {
    json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}})
}

#[test]
fn replicationcontroller_selector_and_defaults() {
    assert!(causes(&validate("", "replicationcontrollers", &rc(), None)).is_empty());
    let d = defaulted("", "replicationcontrollers", rc());
    assert_eq!(d["spec"]["replicas"], 1);
    assert_eq!(d["spec"]["selector"], json!({"app": "web"}));
    assert_eq!(d["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    let mut own = rc();
    own["metadata"]["labels"] = json!({"team": "a"});
    own["spec"]["selector"] = json!({"app": "web"});
    let d = defaulted("", "replicationcontrollers", own);
    assert_eq!(d["metadata"]["labels"], json!({"team": "a"}));

    let mut mismatch = rc();
    mismatch["spec"]["selector"] = json!({"app": "db"});
    mismatch["spec"]["replicas"] = json!(-1);
    mismatch["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    assert_eq!(
        causes(&validate("", "replicationcontrollers", &mismatch, None)),
        vec![
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`",
            "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
        ]
    );
    let mut unlabeled = rc();
    unlabeled["spec"]["template"]["metadata"] = json!({});
    assert_eq!(
        causes(&validate("", "replicationcontrollers", &unlabeled, None)),
        vec!["spec.selector: Required value"]
    );
    let empty = json!({"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "x"}, "spec": {}});
    assert_eq!(
        causes(&validate("", "replicationcontrollers", &empty, None)),
        vec![
            "spec.selector: Required value",
            "spec.template: Required value"
        ]
    );
}

#[test]
fn podtemplates() {
    let t = json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
        "template": {"metadata": {"labels": {"app": "x"}}, "spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}});
    assert!(causes(&validate("", "podtemplates", &t, None)).is_empty());
    let d = defaulted("", "podtemplates", t.clone());
    assert_eq!(d["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(d["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    let mut bad = t;
    bad["template"]["spec"]["containers"] = json!([]);
    assert_eq!(
        causes(&validate("", "podtemplates", &bad, None)),
        vec!["template.spec.containers: Required value"]
    );
}

#[test]
fn endpoints_addresses_and_ports() {
    let ep = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]});
    assert!(causes(&validate("", "endpoints", &ep, None)).is_empty());
    assert_eq!(
        defaulted("", "endpoints", ep)["subsets"][0]["ports"][0]["protocol"],
        "TCP"
    );
    let bad = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "web"},
        "subsets": [{"ports": [{"port": 80, "protocol": "HTTP"}]},
                    {"addresses": [{"ip": "127.0.0.1"}, {"ip": "nope"}], "ports": [{"port": 0, "name": "a"}, {"port": 81}]}]});
    assert_eq!(
        causes(&validate("", "endpoints", &bad, None)),
        vec![
            "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
            "subsets[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "subsets[1].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8)",
            "subsets[1].addresses[1].ip: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "subsets[1].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "subsets[1].ports[1].name: Required value",
        ]
    );
}

#[test]
fn limitranges_order_their_bounds() {
    let lr = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}}]}});
    assert!(causes(&validate("", "limitranges", &lr, None)).is_empty());
    let d = defaulted("", "limitranges", lr);
    let item = &d["spec"]["limits"][0];
    assert_eq!(item["default"], json!({"cpu": "2"}));
    assert_eq!(
        item["defaultRequest"],
        json!({"cpu": "2", "memory": "64Mi"})
    );
    assert!(causes(&validate("", "limitranges", &d, None)).is_empty());

    let bad = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
        "spec": {"limits": [
            {"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}, "maxLimitRequestRatio": {"memory": "500m"}},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "Pod"},
            {"type": "Bogus"},
            {"type": "PersistentVolumeClaim", "max": {"cpu": "-1"}}]}});
    assert_eq!(
        causes(&validate("", "limitranges", &bad, None)),
        vec![
            "spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1",
            "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value: 500m: ratio 500m is less than 1",
            "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
            "spec.limits[2].type: Duplicate value: \"Pod\"",
            "spec.limits[3].type: Invalid value: \"Bogus\": must be a standard limit type or fully qualified",
            "spec.limits[4].max[cpu]: Invalid value: -1: must be greater than or equal to 0",
            "spec.limits[4].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
        ]
    );
    let garbage = json!({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "l"},
        "spec": {"limits": [{"type": "Container", "max": {"cpu": "lots"}}]}});
    let c = causes(&validate("", "limitranges", &garbage, None));
    assert!(
        c.len() == 1
            && c[0].starts_with(
                "spec.limits[0].max[cpu]: Invalid value: \"lots\": quantities must match"
            ),
        "{c:?}"
    );
}

#[test]
fn resourcequotas_check_names_scopes_and_values() {
    let q = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "10", "requests.cpu": "4", "count/deployments.apps": "5"}, "scopes": ["NotTerminating"]}});
    assert!(causes(&validate("", "resourcequotas", &q, None)).is_empty());
    let bad = json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"},
        "spec": {"hard": {"pods": "1500m", "widgets": "1", "cpu": "-1"}, "scopes": ["BestEffort", "NotBestEffort"]}});
    assert_eq!(
        causes(&validate("", "resourcequotas", &bad, None)),
        vec![
            "spec.hard[cpu]: Invalid value: -1: must be greater than or equal to 0",
            "spec.hard[pods]: Invalid value: 1500m: must be an integer",
            "spec.hard[widgets]: Invalid value: \"widgets\": must be a standard resource for quota",
            "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\"]: unsupported scope applied to resource",
            "spec.scopes: Invalid value: [\"BestEffort\",\"NotBestEffort\"]: conflicting scopes",
        ]
    );
    let old = q.clone();
    let mut rescoped = q;
    rescoped["spec"]["scopes"] = json!(["Terminating"]);
    assert_eq!(
        causes(&validate("", "resourcequotas", &rescoped, Some(&old))),
        vec!["spec.scopes: Invalid value: [\"Terminating\"]: field is immutable"]
    );
}

fn pv() -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteOnce"],
            "hostPath": {"path": "/data"}}})
}

#[test]
fn persistentvolumes() {
    assert!(causes(&validate("", "persistentvolumes", &pv(), None)).is_empty());
    let d = defaulted("", "persistentvolumes", pv());
    assert_eq!(d["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    assert_eq!(d["spec"]["volumeMode"], "Filesystem");
    assert_eq!(d["spec"]["hostPath"]["type"], "");
    assert_eq!(d["status"]["phase"], "Pending");

    let none = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "x"},
        "spec": {"accessModes": ["ReadWriteOncePod", "ReadWriteOnce"], "capacity": {"storage": "0"},
            "persistentVolumeReclaimPolicy": "Keep"}});
    assert_eq!(
        causes(&validate("", "persistentvolumes", &none, None)),
        vec![
            "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            "spec.capacity[storage]: Invalid value: 0: must be greater than zero",
            "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
            "spec: Required value: must specify a volume type",
        ]
    );
    let mut two = pv();
    two["spec"]["nfs"] = json!({"server": "s", "path": "/x"});
    two["spec"]["capacity"] = json!({"cpu": "1"});
    two["spec"]["accessModes"] = json!([]);
    assert_eq!(
        causes(&validate("", "persistentvolumes", &two, None)),
        vec![
            "spec.accessModes: Required value",
            "spec.capacity: Unsupported value: [\"cpu\"]: supported values: \"storage\"",
            "spec.nfs: Forbidden: may not specify more than 1 volume type",
        ]
    );
    let mut local = pv();
    local["spec"].as_object_mut().unwrap().remove("hostPath");
    local["spec"]["local"] = json!({"path": ""});
    assert_eq!(
        causes(&validate("", "persistentvolumes", &local, None)),
        vec![
            "spec.local.path: Required value",
            "spec.nodeAffinity: Required value: Local volume requires node affinity",
        ]
    );
    let old = defaulted("", "persistentvolumes", pv());
    let mut moved = old.clone();
    moved["spec"]["hostPath"]["path"] = json!("/elsewhere");
    moved["spec"]["persistentVolumeReclaimPolicy"] = json!("Delete");
    assert_eq!(
        causes(&validate("", "persistentvolumes", &moved, Some(&old))),
        vec![
            "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation"
        ]
    );
}

#[test]
fn nodes() {
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1"},
        "spec": {"podCIDRs": ["10.244.1.0/24"], "taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4", "pods": "110"}}});
    assert!(causes(&validate("", "nodes", &node, None)).is_empty());
    assert_eq!(
        defaulted("", "nodes", node.clone())["status"]["allocatable"],
        json!({"cpu": "4", "pods": "110"})
    );
    let mut bad = node.clone();
    bad["spec"] = json!({"podCIDRs": ["10.0.0.0/33"], "taints": [{"key": "a", "effect": "Sometimes"}, {"key": "b", "effect": ""}]});
    assert_eq!(
        causes(&validate("", "nodes", &bad, None)),
        vec![
            "spec.podCIDRs[0]: Invalid value: \"10.0.0.0/33\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
            "spec.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoExecute\", \"NoSchedule\", \"PreferNoSchedule\"",
            "spec.taints[1].effect: Required value",
        ]
    );
    let mut recidr = node.clone();
    recidr["spec"]["podCIDRs"] = json!(["10.244.2.0/24"]);
    let c = causes(&validate("", "nodes", &recidr, Some(&node)));
    assert!(
        c.len() == 1 && c[0].starts_with("spec.podCIDRs: Forbidden"),
        "{c:?}"
    );
}

#[test]
fn not_served_lists_reasons() {
    let names: Vec<&str> = NOT_SERVED.iter().map(|(n, _)| *n).collect();
    assert!(names.contains(&"componentstatuses"), "{names:?}");
    assert!(names.contains(&"pods/ephemeralcontainers"), "{names:?}");
}

#[test]
fn an_update_may_bind_an_unbound_pod_once() {
    let old = defaulted("", "pods", pod());
    let mut bound = old.clone();
    bound["spec"]["nodeName"] = json!("node-1");
    assert!(causes(&validate("", "pods", &bound, Some(&old))).is_empty());
    let mut moved = bound.clone();
    moved["spec"]["nodeName"] = json!("node-2");
    let c = causes(&validate("", "pods", &moved, Some(&bound)));
    assert!(c.len() == 1 && c[0].starts_with("spec: Forbidden"), "{c:?}");
}

/// The field paths of the semantic checks of issue 18's kinds.
#[test]
fn group_kinds_semantic_checks() {
    let fields = |group: &str, plural: &str, obj: Value| -> Vec<String> {
        let obj = defaulted_if(group, plural, obj);
        validate(group, plural, &obj, None)
            .causes
            .iter()
            .map(|c| c.field.clone())
            .collect()
    };
    let hpa = |spec: Value| json!({"metadata": {"name": "h"}, "spec": spec});
    let target = json!({"kind": "Deployment", "name": "web"});
    assert!(
        fields(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(json!({"scaleTargetRef": target, "maxReplicas": 3}))
        )
        .is_empty()
    );
    assert_eq!(
        fields(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(json!({"scaleTargetRef": target, "minReplicas": 0, "maxReplicas": 3}))
        ),
        ["spec.minReplicas"]
    );
    assert_eq!(
        fields(
            "autoscaling",
            "horizontalpodautoscalers",
            hpa(
                json!({"scaleTargetRef": {"kind": "Deployment"}, "minReplicas": 4, "maxReplicas": 3,
                "metrics": [{"type": "Resource"}, {"type": "Pods", "pods": {"metric": {"name": "q"},
                    "target": {"type": "Utilization"}}}]})
            )
        ),
        [
            "spec.scaleTargetRef.name",
            "spec.maxReplicas",
            "spec.metrics[0].resource",
            "spec.metrics[1].pods.target.averageUtilization"
        ]
    );
    assert_eq!(
        fields(
            "policy",
            "poddisruptionbudgets",
            json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "maxUnavailable": "120%"}})
        ),
        ["spec", "spec.maxUnavailable"]
    );
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    assert_eq!(
        fields(
            "networking.k8s.io",
            "ingresses",
            json!({"metadata": {"name": "i"}, "spec": {"rules": [
            {"host": "a.example.com", "http": {"paths": [
                {"path": "/", "backend": backend},
                {"path": "x", "pathType": "Prefix", "backend": {"service": {"name": "web"}}},
                {"path": "/", "pathType": "Exact", "backend": {"service": {"name": "web", "port": {"number": 80}},
                    "resource": {"kind": "Bucket", "name": "b"}}}]}}]}})
        ),
        [
            "spec.rules[0].http.paths[0].pathType",
            "spec.rules[0].http.paths[1].path",
            "spec.rules[0].http.paths[1].backend.service.port",
            "spec.rules[0].http.paths[2].backend"
        ]
    );
    assert_eq!(
        fields(
            "networking.k8s.io",
            "ingresses",
            json!({"metadata": {"name": "i"}, "spec": {}})
        ),
        ["spec"]
    );
    assert_eq!(
        fields(
            "networking.k8s.io",
            "networkpolicies",
            json!({"metadata": {"name": "n"}, "spec": {
            "ingress": [{"ports": [{"port": 90, "endPort": 80}], "from": [{}]}],
            "egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/40"}}]}]}})
        ),
        [
            "spec.ingress[0].ports[0].endPort",
            "spec.ingress[0].from[0]",
            "spec.egress[0].to[0].ipBlock.cidr"
        ]
    );
    assert_eq!(
        fields(
            "storage.k8s.io",
            "storageclasses",
            json!({"metadata": {"name": "s"}, "reclaimPolicy": "Recycle"})
        ),
        ["provisioner", "reclaimPolicy"]
    );
    assert_eq!(
        fields(
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"metadata": {"name": "p"}, "value": 2_000_000_000})
        ),
        ["value"]
    );
    assert_eq!(
        fields(
            "node.k8s.io",
            "runtimeclasses",
            json!({"metadata": {"name": "r"}, "handler": "A_B"})
        ),
        ["handler"]
    );
    assert_eq!(
        fields(
            "discovery.k8s.io",
            "endpointslices",
            json!({"metadata": {"name": "e"},
            "addressType": "IPv6", "endpoints": [{"addresses": ["10.0.0.1"]}]})
        ),
        ["endpoints[0].addresses[0]"]
    );
    assert_eq!(
        fields(
            "networking.k8s.io",
            "ipaddresses",
            json!({"metadata": {"name": "10.000.0.1"},
            "spec": {"parentRef": {"resource": "services"}}})
        ),
        ["metadata.name", "spec.parentRef.name"]
    );
    assert!(
        fields(
            "networking.k8s.io",
            "ipaddresses",
            json!({"metadata": {"name": "2001:db8::1"},
        "spec": {"parentRef": {"resource": "services", "name": "web"}}})
        )
        .is_empty()
    );
    assert_eq!(
        fields(
            "networking.k8s.io",
            "servicecidrs",
            json!({"metadata": {"name": "c"},
            "spec": {"cidrs": ["10.0.0.0/16", "10.1.0.0/16"]}})
        ),
        ["spec.cidrs"]
    );
    assert_eq!(
        fields(
            "storage.k8s.io",
            "csistoragecapacities",
            json!({"metadata": {"name": "c"}, "capacity": "-1Gi"})
        ),
        ["storageClassName", "capacity"]
    );
    // Updates: StorageClass parameters and PriorityClass value are immutable.
    let sc = json!({"metadata": {"name": "s"}, "provisioner": "a.b", "parameters": {"k": "1"}});
    let mut sc2 = sc.clone();
    sc2["parameters"]["k"] = json!("2");
    let v = validate("storage.k8s.io", "storageclasses", &sc2, Some(&sc));
    assert_eq!(
        causes(&v),
        ["parameters: Forbidden: updates to parameters are forbidden."]
    );
    let pc = json!({"metadata": {"name": "p"}, "value": 10});
    let v = validate(
        "scheduling.k8s.io",
        "priorityclasses",
        &json!({"metadata": {"name": "p"}, "value": 11}),
        Some(&pc),
    );
    assert_eq!(
        causes(&v),
        ["value: Forbidden: may not be changed in an update."]
    );
}

fn defaulted_if(group: &str, plural: &str, obj: Value) -> Value {
    if find(group, plural).default.is_some() {
        defaulted(group, plural, obj)
    } else {
        obj
    }
}

#[test]
fn group_kinds_defaults() {
    let sc = defaulted(
        "storage.k8s.io",
        "storageclasses",
        json!({"provisioner": "a"}),
    );
    assert_eq!(
        (sc["reclaimPolicy"].clone(), sc["volumeBindingMode"].clone()),
        (json!("Delete"), json!("Immediate"))
    );
    let pc = defaulted("scheduling.k8s.io", "priorityclasses", json!({"value": 1}));
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    let hpa = defaulted(
        "autoscaling",
        "horizontalpodautoscalers",
        json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "w"}, "maxReplicas": 2}}),
    );
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
        80
    );
    let np = defaulted(
        "networking.k8s.io",
        "networkpolicies",
        json!({"spec": {"podSelector": {}}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
}
