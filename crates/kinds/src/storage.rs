//! storage.k8s.io/v1 StorageClass, CSIDriver, CSINode, VolumeAttachment and
//! CSIStorageCapacity: their checks and defaults.

use k8s_openapi::api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment,
};
use serde_json::{Value, json};

use crate::defaults;
use crate::field::{Errs, index, join};
use crate::kind::Ctx;
use crate::names;

/// A CSI driver or provisioner name: a DNS-1123 subdomain of at most 63 characters.
fn driver_name(field: &str, name: &str, errs: &mut Errs) {
    if name.is_empty() {
        errs.required(field, "");
    } else if name.len() > 63 {
        errs.invalid(
            field,
            &Value::from(name),
            "must be no more than 63 characters",
        );
    } else if let Err(m) = names::dns1123_subdomain(&name.to_lowercase()) {
        errs.invalid(field, &Value::from(name), &m);
    }
}

pub(crate) fn validate_storage_class(ctx: &Ctx<'_, StorageClass>, errs: &mut Errs) {
    let sc = ctx.new;
    driver_name("provisioner", &sc.provisioner, errs);
    errs.one_of(
        "reclaimPolicy",
        sc.reclaim_policy.as_deref(),
        &["Delete", "Retain"],
    );
    errs.one_of(
        "volumeBindingMode",
        sc.volume_binding_mode.as_deref(),
        &["Immediate", "WaitForFirstConsumer"],
    );
    let params = sc.parameters.as_ref().map_or(0, |p| p.len());
    if params > 512 {
        errs.invalid(
            "parameters",
            &Value::from(params),
            "must have at most 512 parameters",
        );
    }
    if let Some((old, _)) = ctx.old {
        if sc.parameters != old.parameters {
            errs.forbidden("parameters", "updates to parameters are forbidden.");
        }
        if sc.provisioner != old.provisioner {
            errs.forbidden("provisioner", "updates to provisioner are forbidden.");
        }
        if sc.reclaim_policy != old.reclaim_policy {
            errs.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.");
        }
        errs.immutable(
            "volumeBindingMode",
            &sc.volume_binding_mode,
            &old.volume_binding_mode,
        );
    }
}

/// `reclaimPolicy: Delete`, `volumeBindingMode: Immediate`.
pub(crate) fn default_storage_class(obj: &mut Value) {
    defaults::set(obj, "reclaimPolicy", json!("Delete"));
    defaults::set(obj, "volumeBindingMode", json!("Immediate"));
}

pub(crate) fn validate_csi_driver(ctx: &Ctx<'_, CSIDriver>, errs: &mut Errs) {
    let spec = &ctx.new.spec;
    errs.one_of(
        "spec.fsGroupPolicy",
        spec.fs_group_policy.as_deref(),
        &["File", "None", "ReadWriteOnceWithFSType"],
    );
    for (i, m) in spec.volume_lifecycle_modes.iter().flatten().enumerate() {
        if !["Ephemeral", "Persistent"].contains(&m.as_str()) {
            errs.not_supported(
                &index("spec.volumeLifecycleModes", i),
                m,
                &["Ephemeral", "Persistent"],
            );
        }
    }
    if let Some((old, _)) = ctx.old {
        errs.immutable(
            "spec.attachRequired",
            &spec.attach_required,
            &old.spec.attach_required,
        );
        errs.immutable(
            "spec.volumeLifecycleModes",
            &spec.volume_lifecycle_modes,
            &old.spec.volume_lifecycle_modes,
        );
    }
}

/// The CSIDriver flags kube fills: attach required, no pod info, persistent volumes only,
/// no storage capacity tracking, fsGroup by fs type, no republish, SELinux mount off.
pub(crate) fn default_csi_driver(obj: &mut Value) {
    let Some(spec) = defaults::object(obj, "spec") else {
        return;
    };
    defaults::set(spec, "attachRequired", json!(true));
    defaults::set(spec, "podInfoOnMount", json!(false));
    defaults::set(spec, "storageCapacity", json!(false));
    defaults::set(spec, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    defaults::set(spec, "requiresRepublish", json!(false));
    defaults::set(spec, "seLinuxMount", json!(false));
    defaults::set(spec, "volumeLifecycleModes", json!(["Persistent"]));
}

pub(crate) fn validate_csi_node(ctx: &Ctx<'_, CSINode>, errs: &mut Errs) {
    let mut seen = std::collections::BTreeSet::new();
    for (i, d) in ctx.new.spec.drivers.iter().enumerate() {
        let p = index("spec.drivers", i);
        driver_name(&join(&p, "name"), &d.name, errs);
        if !d.name.is_empty() && !seen.insert(d.name.as_str()) {
            errs.duplicate(&join(&p, "name"), &Value::from(d.name.as_str()));
        }
        if d.node_id.is_empty() {
            errs.required(&join(&p, "nodeID"), "");
        }
    }
}

pub(crate) fn validate_volume_attachment(ctx: &Ctx<'_, VolumeAttachment>, errs: &mut Errs) {
    let spec = &ctx.new.spec;
    driver_name("spec.attacher", &spec.attacher, errs);
    if spec.node_name.is_empty() {
        errs.required("spec.nodeName", "");
    } else if let Err(m) = names::dns1123_subdomain(&spec.node_name) {
        errs.invalid("spec.nodeName", &Value::from(spec.node_name.as_str()), &m);
    }
    match (
        &spec.source.persistent_volume_name,
        &spec.source.inline_volume_spec,
    ) {
        (Some(_), Some(_)) => errs.forbidden(
            "spec.source",
            "must specify exactly one of persistentVolumeName and inlineVolumeSpec",
        ),
        (None, None) => errs.required(
            "spec.source",
            "must specify exactly one of persistentVolumeName and inlineVolumeSpec",
        ),
        (Some(pv), None) if pv.is_empty() => errs.required("spec.source.persistentVolumeName", ""),
        _ => {}
    }
    if let Some((old, _)) = ctx.old {
        errs.immutable("spec", spec, &old.spec);
    }
}

pub(crate) fn validate_csi_storage_capacity(ctx: &Ctx<'_, CSIStorageCapacity>, errs: &mut Errs) {
    let c = ctx.new;
    if c.storage_class_name.is_empty() {
        errs.required("storageClassName", "");
    } else if let Err(m) = names::dns1123_subdomain(&c.storage_class_name) {
        errs.invalid(
            "storageClassName",
            &Value::from(c.storage_class_name.as_str()),
            &m,
        );
    }
    for (field, q) in [
        ("capacity", &c.capacity),
        ("maximumVolumeSize", &c.maximum_volume_size),
    ] {
        if let Some(q) = q
            && q.0.trim_start().starts_with('-')
        {
            errs.invalid(
                field,
                &Value::from(q.0.as_str()),
                "must be greater than or equal to 0",
            );
        }
    }
    if let Some((old, _)) = ctx.old {
        errs.immutable(
            "storageClassName",
            &c.storage_class_name,
            &old.storage_class_name,
        );
        errs.immutable("nodeTopology", &c.node_topology, &old.node_topology);
    }
}
