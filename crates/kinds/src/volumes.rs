//! core/v1 PersistentVolume: capacity (`storage` only, positive), exactly one volume source,
//! access modes, reclaim policy and volume mode; the source is fixed after creation. Defaults:
//! reclaim policy `Retain`, volume mode `Filesystem`, phase `Pending` (on the host nothing
//! binds a volume, so it stays there).

use k8s_openapi::api::core::v1::PersistentVolume;
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, join, key};
use crate::kind::Ctx;
use crate::names;
use crate::quota;

/// The volume sources of a PersistentVolumeSpec, in the order kube-apiserver checks them.
const SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "glusterfs",
    "flocker",
    "nfs",
    "rbd",
    "quobyte",
    "cephfs",
    "iscsi",
    "cinder",
    "fc",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// Fields of a source that must be set, by source.
fn required_fields(source: &str) -> &'static [&'static str] {
    match source {
        "hostPath" | "local" => &["path"],
        "nfs" => &["server", "path"],
        "csi" => &["driver", "volumeHandle"],
        "iscsi" => &["targetPortal", "iqn"],
        "rbd" => &["image"],
        "glusterfs" => &["endpoints", "path"],
        _ => &[],
    }
}

pub(crate) fn validate_pv(ctx: &Ctx<'_, PersistentVolume>, errs: &mut Errs) {
    let Some(spec) = &ctx.new.spec else {
        errs.required("spec.accessModes", "");
        errs.required("spec.capacity", "");
        errs.required("spec", "must specify a volume type");
        return;
    };
    let modes = spec.access_modes.as_deref().unwrap_or_default();
    if modes.is_empty() {
        errs.required("spec.accessModes", "");
    }
    for m in modes {
        errs.one_of("spec.accessModes", Some(m), ACCESS_MODES);
    }
    let once_pod = modes.iter().any(|m| m == "ReadWriteOncePod");
    let others = modes
        .iter()
        .any(|m| m != "ReadWriteOncePod" && ACCESS_MODES.contains(&m.as_str()));
    if once_pod && others {
        errs.forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        );
    }

    let capacity = spec.capacity.as_ref().filter(|c| !c.is_empty());
    match capacity {
        None => errs.required("spec.capacity", ""),
        Some(c) => {
            if !c.contains_key("storage") || c.len() > 1 {
                let keys: Vec<&String> = c.keys().collect();
                errs.not_supported_shown("spec.capacity", &json!(keys), &["storage"]);
            }
            for (name, q) in c {
                let field = key("spec.capacity", name);
                if let Some(v) = quota::milli(q, &field, errs)
                    && v <= 0
                {
                    errs.invalid_shown(&field, &q.0, "must be greater than zero");
                }
            }
        }
    }
    errs.one_of(
        "spec.persistentVolumeReclaimPolicy",
        spec.persistent_volume_reclaim_policy.as_deref(),
        &["Delete", "Recycle", "Retain"],
    );
    errs.one_of(
        "spec.volumeMode",
        spec.volume_mode.as_deref(),
        &["Block", "Filesystem"],
    );
    if let Some(class) = spec.storage_class_name.as_deref().filter(|c| !c.is_empty())
        && let Err(m) = names::dns1123_subdomain(class)
    {
        errs.invalid("spec.storageClassName", &Value::from(class), &m);
    }

    let raw_spec = ctx.raw.get("spec").unwrap_or(&Value::Null);
    let present: Vec<&str> = SOURCES
        .iter()
        .copied()
        .filter(|s| defaults::present(raw_spec, s))
        .collect();
    match present.as_slice() {
        [] => errs.required("spec", "must specify a volume type"),
        [first, rest @ ..] => {
            for field in required_fields(first) {
                let set = raw_spec
                    .pointer(&format!("/{first}/{field}"))
                    .and_then(Value::as_str)
                    .is_some_and(|v| !v.is_empty());
                if !set {
                    errs.required(&join(&join("spec", first), field), "");
                }
            }
            for extra in rest {
                errs.forbidden(
                    &join("spec", extra),
                    "may not specify more than 1 volume type",
                );
            }
        }
    }
    if spec.local.is_some() && spec.node_affinity.is_none() {
        errs.required("spec.nodeAffinity", "Local volume requires node affinity");
    }
    if let Some(na) = &spec.node_affinity
        && na.required.is_none()
    {
        errs.required(
            "spec.nodeAffinity.required",
            "must specify required node constraints",
        );
    }
    let root = spec
        .host_path
        .as_ref()
        .is_some_and(|h| h.path.trim_end_matches('/').is_empty());
    if root && spec.persistent_volume_reclaim_policy.as_deref() == Some("Recycle") {
        errs.forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        );
    }

    if let Some((old, old_raw)) = ctx.old {
        let sources = |raw: &Value| {
            let mut copy = raw.clone();
            default_pv(&mut copy);
            SOURCES
                .iter()
                .map(|s| copy.pointer(&format!("/spec/{s}")).cloned())
                .collect::<Vec<_>>()
        };
        if sources(ctx.raw) != sources(old_raw) {
            errs.forbidden(
                "spec.persistentvolumesource",
                "spec.persistentvolumesource is immutable after creation",
            );
        }
        let mode = |s: Option<&String>| s.map_or("Filesystem", String::as_str).to_string();
        let (new_mode, old_mode) = (
            mode(spec.volume_mode.as_ref()),
            mode(old.spec.as_ref().and_then(|s| s.volume_mode.as_ref())),
        );
        errs.immutable("volumeMode", &new_mode, &old_mode);
    }
}

pub(crate) fn default_pv(obj: &mut Value) {
    if let Some(spec) = defaults::object(obj, "spec") {
        defaults::set(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
        defaults::set(spec, "volumeMode", json!("Filesystem"));
        if let Some(h) = defaults::existing(spec, "hostPath") {
            defaults::set(h, "type", json!(""));
        }
    }
    if let Some(status) = defaults::object(obj, "status") {
        defaults::set(status, "phase", json!("Pending"));
    }
}
