//! The generated CRDs: the files under `crds/` are up to date, and every schema is one our own
//! server accepts.

// Test helpers may panic: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use flotilla_karmada_api::{crd_yaml_files, crds};
use flotilla_schema::StructuralSchema;

const REGENERATE: &str = "FLOTILLA_WRITE_CRDS=1 cargo test -p flotilla-karmada-api crds_are_fresh";

fn crds_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../crds")
}

/// Compares `crds/*.yaml` with the generated YAML; with `FLOTILLA_WRITE_CRDS=1` writes the
/// stale ones instead (the only place this crate writes files).
#[test]
fn crds_are_fresh() {
    let write = std::env::var("FLOTILLA_WRITE_CRDS").is_ok_and(|v| !v.is_empty() && v != "0");
    let dir = crds_dir();
    let mut stale = Vec::new();
    for (name, yaml) in crd_yaml_files().unwrap() {
        let path = dir.join(&name);
        let current = std::fs::read_to_string(&path).ok();
        if current.as_deref() == Some(yaml.as_str()) {
            continue;
        }
        if write {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, yaml).unwrap();
        } else {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "stale or missing CRD files in {}: {}\nregenerate with: {REGENERATE}",
        dir.display(),
        stale.join(", ")
    );
}

#[test]
fn generated_files_parse_back_to_the_same_crds() {
    let files = crd_yaml_files().unwrap();
    let crds = crds();
    assert_eq!(files.len(), crds.len());
    for ((name, yaml), crd) in files.iter().zip(&crds) {
        let parsed: k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
            serde_norway::from_str(yaml).unwrap();
        assert_eq!(&parsed, crd, "{name}");
        assert!(yaml.starts_with("# Generated"), "{name}");
    }
}

#[test]
fn every_crd_schema_is_structural_for_our_server() {
    for crd in crds() {
        let name = crd.metadata.name.clone().unwrap();
        for (i, version) in crd.spec.versions.iter().enumerate() {
            let schema = version
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .unwrap_or_else(|| panic!("{name} {} has no schema", version.name));
            let value = serde_json::to_value(schema).unwrap();
            let prefix = format!("spec.versions[{i}].schema.openAPIV3Schema");
            if let Err(causes) = StructuralSchema::new(&value, &prefix) {
                panic!("{name} {}: schema rejected: {causes:#?}", version.name);
            }
        }
    }
}
