//! The host's compiled-in admission ([`flotilla_generic_store::builtin_admission`]): the checks
//! Karmada's webhook makes on the Karmada control plane, made by the host itself for every
//! kind it serves, so they hold without a webhook server and never on the members.
//!
//! - [`DeletionProtection`]: an object labelled
//!   `resourcetemplate.karmada.io/deletion-protected=Always` is not deleted
//!   (`403 Forbidden`, in the words of Karmada's `resourcedeletionprotection.karmada.io`
//!   webhook) until the label is removed or set to anything else.
//! - [`OverridePolicyValidation`]: an OverridePolicy or ClusterOverridePolicy that its CRD
//!   schema accepts but that cannot be applied (a value missing for `add`/`replace`, JSON and
//!   YAML changes on one field, the deprecated fields mixed with `overrideRules`, command or
//!   args `replace`, label keys that are not qualified names: `flotilla_overrides::validate`)
//!   is refused with `422 Invalid`, naming each field. What a schema can say (operators, JSON pointer
//!   syntax) is said by the CRD schema in `flotilla_karmada_api::overrides`, so `kubectl explain`
//!   shows it and any host enforces it.
//!
//! Deletion protection and collections: kube-apiserver admits a `deletecollection` item by
//! item and stops at the first item admission refuses, answering that refusal; the items
//! before it are gone, it and the items after it stay. The generic store's collection delete
//! does the same, so a collection delete that meets a protected object fails with the same
//! 403 and leaves every protected object in place. Namespace cleanup runs the same check, so
//! a namespace holding a protected object stays Terminating (as on Karmada) until the label
//! goes.

use std::sync::Arc;

use flotilla_apimachinery::{ApiError, Cause};
use flotilla_generic_store::builtin_admission::{Operation, PluginRequest, ValidatingPlugin};
use flotilla_karmada_api::overrides::OverrideSpec;
use flotilla_names::karmada::{DELETION_PROTECTED_ALWAYS, DELETION_PROTECTED_LABEL};
use serde_json::Value;

/// The name Karmada's deletion-protection webhook answers under; kubectl users (and
/// Karmada's e2e tests) recognise the refusal by its text, so the host words it the same.
const DELETION_PROTECTION_WEBHOOK: &str = "resourcedeletionprotection.karmada.io";

/// The group of the webhook configurations, which kube-apiserver never sends to webhooks;
/// Karmada's protection is a webhook, so they are not protected there either.
const ADMISSION_REGISTRATION_GROUP: &str = "admissionregistration.k8s.io";

const POLICY_GROUP: &str = "policy.karmada.io";

/// Every compiled-in check of the host, in order.
pub fn plugins() -> Vec<Arc<dyn ValidatingPlugin>> {
    vec![
        Arc::new(DeletionProtection),
        Arc::new(OverridePolicyValidation),
    ]
}

/// Refuses to delete an object labelled `resourcetemplate.karmada.io/deletion-protected=Always`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeletionProtection;

/// Whether `obj` carries the protecting label with the one value that protects.
pub fn is_deletion_protected(obj: &Value) -> bool {
    obj.pointer("/metadata/labels")
        .and_then(|labels| labels.get(DELETION_PROTECTED_LABEL))
        .and_then(Value::as_str)
        == Some(DELETION_PROTECTED_ALWAYS)
}

/// The refusal, as a client of Karmada's webhook reads it.
pub fn deletion_protected_error() -> ApiError {
    ApiError::forbidden(format!(
        "admission webhook \"{DELETION_PROTECTION_WEBHOOK}\" denied the request: This resource \
         is protected, please make sure to remove the label: {DELETION_PROTECTED_LABEL}"
    ))
}

#[async_trait::async_trait]
impl ValidatingPlugin for DeletionProtection {
    fn name(&self) -> &str {
        "DeletionProtection"
    }

    async fn validate(&self, request: &PluginRequest<'_>) -> Result<(), ApiError> {
        if request.operation != Operation::Delete
            || request.subresource.is_some()
            || request.def.group == ADMISSION_REGISTRATION_GROUP
        {
            return Ok(());
        }
        match request.old_object {
            Some(old) if is_deletion_protected(old) => Err(deletion_protected_error()),
            _ => Ok(()),
        }
    }
}

/// Refuses OverridePolicies and ClusterOverridePolicies that cannot be applied (see the
/// module docs); runs on create and update of the object itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct OverridePolicyValidation;

#[async_trait::async_trait]
impl ValidatingPlugin for OverridePolicyValidation {
    fn name(&self) -> &str {
        "OverridePolicyValidation"
    }

    async fn validate(&self, request: &PluginRequest<'_>) -> Result<(), ApiError> {
        let def = request.def;
        let is_override_policy = def.group == POLICY_GROUP
            && matches!(
                def.kind.as_str(),
                "OverridePolicy" | "ClusterOverridePolicy"
            );
        if !is_override_policy
            || !matches!(request.operation, Operation::Create | Operation::Update)
            || request.subresource.is_some()
        {
            return Ok(());
        }
        let Some(spec) = request.object.and_then(|o| o.get("spec")) else {
            return Ok(());
        };
        // The CRD schema has already checked the shape; a spec that still does not decode
        // (a stale CRD) is the schema's business, not this check's.
        let Ok(spec) = serde_json::from_value::<OverrideSpec>(spec.clone()) else {
            return Ok(());
        };
        let causes: Vec<Cause> = override_spec_problems(&spec)
            .into_iter()
            .map(|(field, message)| {
                let reason = if message.starts_with("Required value") {
                    "FieldValueRequired"
                } else if message.starts_with("Forbidden") {
                    "FieldValueForbidden"
                } else {
                    "FieldValueInvalid"
                };
                Cause::new(reason, message, field)
            })
            .collect();
        if causes.is_empty() {
            return Ok(());
        }
        Err(ApiError::invalid(
            &def.group,
            &def.kind,
            request.name(),
            causes,
        ))
    }
}

/// What is wrong with an override spec beyond what its schema checks, as
/// `(field path from the object root, message)` in kube's wording
/// (`spec.overrideRules[0].overriders.plaintext[1].value`, `Required value: ...`): the
/// overrides engine's own checks (`flotilla_overrides::validate`), so admission and the
/// engine cannot disagree about what a policy means.
pub fn override_spec_problems(spec: &OverrideSpec) -> Vec<(String, String)> {
    flotilla_overrides::validate(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flotilla_apimachinery::ResourceDef;
    use serde_json::json;

    fn delete(def: &ResourceDef, old: &Value) -> Result<(), ApiError> {
        futures::executor::block_on(DeletionProtection.validate(&PluginRequest {
            operation: Operation::Delete,
            def,
            subresource: None,
            object: None,
            old_object: Some(old),
            dry_run: false,
            user: None,
        }))
    }

    fn labelled(value: &str) -> Value {
        json!({"metadata": {"name": "web", "labels": {DELETION_PROTECTED_LABEL: value}}})
    }

    #[test]
    fn only_always_protects_and_the_refusal_is_karmadas() {
        let deploy = ResourceDef::new("apps", "v1", "Deployment", "deployments", true);
        let err = delete(&deploy, &labelled("Always")).unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            err.message,
            "admission webhook \"resourcedeletionprotection.karmada.io\" denied the request: \
             This resource is protected, please make sure to remove the label: \
             resourcetemplate.karmada.io/deletion-protected"
        );
        for other in ["Never", "always", ""] {
            assert!(delete(&deploy, &labelled(other)).is_ok(), "{other:?}");
        }
        assert!(delete(&deploy, &json!({"metadata": {"name": "web"}})).is_ok());
        // Custom resources and cluster-scoped kinds alike.
        let cr = ResourceDef::new("example.com", "v1", "Widget", "widgets", false);
        assert!(delete(&cr, &labelled("Always")).is_err());
    }

    #[test]
    fn protection_is_about_deletes_of_the_object_only() {
        let deploy = ResourceDef::new("apps", "v1", "Deployment", "deployments", true);
        let obj = labelled("Always");
        for (operation, subresource) in [
            (Operation::Update, None),
            (Operation::Create, None),
            (Operation::Update, Some("status")),
        ] {
            let request = PluginRequest {
                operation,
                def: &deploy,
                subresource,
                object: Some(&obj),
                old_object: Some(&obj),
                dry_run: false,
                user: None,
            };
            assert!(futures::executor::block_on(DeletionProtection.validate(&request)).is_ok());
        }
        // Webhook configurations are out of the webhook's reach on Karmada too.
        let hooks = ResourceDef::new(
            ADMISSION_REGISTRATION_GROUP,
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
        );
        assert!(delete(&hooks, &obj).is_ok());
    }

    fn policy_def(kind: &str) -> ResourceDef {
        ResourceDef::new(POLICY_GROUP, "v1alpha1", kind, "overridepolicies", true)
    }

    fn admit(kind: &str, spec: Value) -> Result<(), ApiError> {
        let obj = json!({"metadata": {"name": "op"}, "spec": spec});
        futures::executor::block_on(OverridePolicyValidation.validate(&PluginRequest {
            operation: Operation::Create,
            def: &policy_def(kind),
            subresource: None,
            object: Some(&obj),
            old_object: None,
            dry_run: false,
            user: None,
        }))
    }

    fn fields(err: &ApiError) -> Vec<String> {
        err.causes.iter().map(|c| c.field.clone()).collect()
    }

    #[test]
    fn add_and_replace_need_a_value() {
        let spec = json!({"overrideRules": [{"overriders": {"plaintext": [
            {"path": "/spec/replicas", "operator": "replace", "value": 2},
            {"path": "/metadata/labels/a", "operator": "add"},
            {"path": "/spec/paused", "operator": "replace"},
            {"path": "/spec/paused", "operator": "remove"},
        ]}}]});
        let err = admit("OverridePolicy", spec).unwrap_err();
        assert_eq!((err.code, err.reason.as_str()), (422, "Invalid"));
        assert_eq!(
            fields(&err),
            [
                "spec.overrideRules[0].overriders.plaintext[1].value",
                "spec.overrideRules[0].overriders.plaintext[2].value",
            ]
        );
        assert_eq!(err.causes[0].reason, "FieldValueRequired");
        assert!(
            err.message
                .contains("OverridePolicy.policy.karmada.io \"op\" is invalid")
        );
        // The deprecated top-level overriders are checked the same way, cluster-wide too.
        let err = admit(
            "ClusterOverridePolicy",
            json!({"overriders": {"plaintext": [{"path": "/a", "operator": "add"}]}}),
        )
        .unwrap_err();
        assert_eq!(fields(&err), ["spec.overriders.plaintext[0].value"]);
    }

    #[test]
    fn field_overrider_documents() {
        let spec = json!({"overrideRules": [{"overriders": {"fieldOverrider": [
            {"fieldPath": "/data/config", "yaml": [
                {"subPath": "/a", "operator": "add"},
                {"subPath": "/b", "operator": "remove", "value": 1},
                {"subPath": "/c", "operator": "replace", "value": {"x": 1}},
            ]},
            {"fieldPath": "/data/other",
             "json": [{"subPath": "/a", "operator": "remove"}],
             "yaml": [{"subPath": "/a", "operator": "remove"}]},
        ]}}]});
        let err = admit("OverridePolicy", spec).unwrap_err();
        assert_eq!(
            fields(&err),
            [
                "spec.overrideRules[0].overriders.fieldOverrider[0].yaml[0].value",
                "spec.overrideRules[0].overriders.fieldOverrider[0].yaml[1].value",
                "spec.overrideRules[0].overriders.fieldOverrider[1]",
            ]
        );
    }

    #[test]
    fn rules_and_deprecated_fields_do_not_mix() {
        let spec = json!({
            "overrideRules": [{"overriders": {}}],
            "targetCluster": {"clusterNames": ["member1"]},
            "overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]},
        });
        let err = admit("OverridePolicy", spec).unwrap_err();
        assert_eq!(fields(&err), ["spec.targetCluster", "spec.overriders"]);
    }

    #[test]
    fn good_policies_and_other_kinds_pass() {
        let spec = json!({"overrideRules": [{"overriders": {
            "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 0}],
            "imageOverrider": [{"component": "Registry", "operator": "replace", "value": "r.example"}],
            "commandOverrider": [{"containerName": "c", "operator": "add", "value": ["x"]}],
            "fieldOverrider": [{"fieldPath": "/data/d", "json": [{"subPath": "/a", "operator": "add", "value": null}]}],
        }}]});
        // A JSON null is no value: refused, since add needs one.
        assert!(admit("OverridePolicy", spec.clone()).is_err());
        let mut good = spec;
        good["overrideRules"][0]["overriders"]["fieldOverrider"][0]["json"][0]["value"] =
            json!(false);
        assert!(admit("OverridePolicy", good.clone()).is_ok());
        assert!(admit("ClusterOverridePolicy", good).is_ok());
        // Not an override policy: not looked at.
        let bad = json!({"overriders": {"plaintext": [{"path": "/a", "operator": "add"}]}});
        assert!(admit("PropagationPolicy", bad).is_ok());
    }
}
