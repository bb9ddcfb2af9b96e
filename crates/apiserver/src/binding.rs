//! `POST /api/v1/namespaces/{ns}/pods/{name}/binding`: assigns a pod to a node, as a scheduler
//! does. The body is a `v1 Binding` whose `metadata.name` is the pod's and whose `target`
//! names the node (`kind` empty or `Node`). A pod already assigned, or being deleted, answers
//! `409 Conflict`; otherwise `spec.nodeName` is set, the `PodScheduled` condition turns
//! `True`, and the answer is a `201` success Status. Nothing checks that the node exists
//! (neither does kube-apiserver).

use std::sync::Arc;

use axum::extract::Request;
use axum::response::Response;
use flotilla_apimachinery::{ApiError, Cause, GroupVersionKind, ResourceDef, SubresourceDef};
use http::StatusCode;
use serde_json::{Value, json};

use crate::registry::Registry;
use crate::response::{error_response, json_value};
use crate::subresource::SubresourceHandler;
use flotilla_generic_store::UserInfo;
use flotilla_generic_store::context::RequestContext;
use flotilla_generic_store::context::StoreContext;
use flotilla_generic_store::objects::{Objects, WriteOptions, now_rfc3339};
use flotilla_generic_store::request::ResourcePath;

/// Publishes `pods/binding` in discovery (when pods are served).
pub(crate) fn advertise(registry: &Registry) {
    if let Some(def) = registry.get("", "v1", "pods") {
        let def = (*def).clone().with_subresource(SubresourceDef::new(
            "binding",
            GroupVersionKind::new("", "v1", "Binding"),
            &["create"],
        ));
        registry.register(def);
    }
}

/// Serves `pods/binding` (when pods are served).
pub(crate) fn install(registry: &Registry) {
    if registry.get("", "v1", "pods").is_some() {
        registry.add_subresource("", "pods", "binding", Arc::new(PodBinding));
    }
}

/// The `pods/binding` handler.
pub struct PodBinding;

#[async_trait::async_trait]
impl SubresourceHandler for PodBinding {
    async fn handle(
        &self,
        store: &Arc<StoreContext>,
        def: &Arc<ResourceDef>,
        path: &ResourcePath,
        req: Request,
        user: &UserInfo,
    ) -> Response {
        let (ctx, body) =
            match crate::handlers::post_to_subresource(store, def, path, req, user).await {
                Ok(read) => read,
                Err(e) => return error_response(&e),
            };
        match bind(&ctx, &body).await {
            Ok(()) => json_value(
                StatusCode::CREATED,
                &json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Success", "code": 201}),
            ),
            Err(e) => error_response(&e),
        }
    }
}

/// The node a Binding targets, after kube's checks of the Binding itself.
fn target_node(binding: &Value, pod: &str) -> Result<String, ApiError> {
    let kind = binding
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Binding");
    if kind != "Binding" {
        return Err(ApiError::bad_request(format!(
            "expected a v1 Binding, got kind {kind:?}"
        )));
    }
    let name = binding
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if name != pod {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let mut causes = Vec::new();
    let target_kind = binding
        .pointer("/target/kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !target_kind.is_empty() && target_kind != "Node" {
        causes.push(Cause::new(
            "FieldValueInvalid",
            format!("Invalid value: {target_kind:?}: must be empty or 'Node'"),
            "target.kind",
        ));
    }
    let node = binding
        .pointer("/target/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if node.is_empty() {
        causes.push(Cause::new(
            "FieldValueRequired",
            "Required value",
            "target.name",
        ));
    }
    if causes.is_empty() {
        Ok(node.to_string())
    } else {
        Err(ApiError::invalid("", "Binding", pod, causes))
    }
}

async fn bind(ctx: &RequestContext, body: &bytes::Bytes) -> Result<(), ApiError> {
    let namespace = ctx.path.namespace.as_deref();
    let pod_name = ctx.path.name.as_deref().unwrap_or_default();
    // Repeated keys are not checked here (the last value wins).
    let (binding, _) = crate::handlers::decode_body(ctx, body)?;
    let node = target_node(&binding, pod_name)?;
    let objects: Objects<'_> = ctx.objects();
    let stored = objects.get(namespace, pod_name).await?;
    let pod_value = stored.value();
    let pod = pod_value.as_ref();
    let conflict = |message: String| {
        Err(ApiError::conflict_message(message).with_details("", "pods", pod_name))
    };
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return conflict(format!(
            "pod {pod_name} is being deleted, cannot be assigned to a host"
        ));
    }
    if let Some(current) = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
    {
        return conflict(format!(
            "pod {pod_name} is already assigned to node \"{current}\""
        ));
    }
    let query = ctx.write_query()?;
    let opts = WriteOptions {
        field_manager: query
            .field_manager
            .unwrap_or_else(|| "kube-scheduler".to_string()),
        field_validation: query.field_validation,
        dry_run: query.dry_run,
    };
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(node);
    let written = objects
        .update(namespace, pod_name, bound, None, &opts)
        .await?;
    let mut with_condition = written.object.value().as_ref().clone();
    set_scheduled(&mut with_condition);
    objects
        .update(namespace, pod_name, with_condition, Some("status"), &opts)
        .await?;
    Ok(())
}

/// Sets the `PodScheduled` condition to `True` (replacing one of that type).
fn set_scheduled(pod: &mut Value) {
    let condition = json!({"type": "PodScheduled", "status": "True",
                           "lastProbeTime": null, "lastTransitionTime": now_rfc3339()});
    let Some(obj) = pod.as_object_mut() else {
        return;
    };
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conditions = &mut status["conditions"];
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    if let Some(list) = conditions.as_array_mut() {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some("PodScheduled"));
        list.push(condition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bindings_are_checked() {
        let ok = json!({"kind": "Binding", "metadata": {"name": "web"}, "target": {"kind": "Node", "name": "n1"}});
        assert_eq!(target_node(&ok, "web").ok(), Some("n1".to_string()));
        assert!(target_node(&ok, "other").is_err());
        let bad = json!({"metadata": {"name": "web"}, "target": {"kind": "Pod"}});
        let err = target_node(&bad, "web").err().map(|e| e.code);
        assert_eq!(err, Some(422));
    }

    #[test]
    fn scheduled_condition_replaces_an_old_one() {
        let mut pod = json!({"status": {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
            {"type": "Ready", "status": "False"}]}});
        set_scheduled(&mut pod);
        let conditions = pod["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0]["type"], "Ready");
        assert_eq!(conditions[1]["type"], "PodScheduled");
        assert_eq!(conditions[1]["status"], "True");
    }
}
