//! The overriders that know workloads: imageOverrider without `predicate`, commandOverrider
//! and argsOverrider.
//!
//! Like Karmada they know the pod spec of six kinds only, by `kind` alone: `Pod` (`/spec`) and
//! `Deployment`, `ReplicaSet`, `StatefulSet`, `DaemonSet`, `Job` (`/spec/template/spec`); other
//! kinds (CronJob, custom resources) are left unchanged, and for them `predicate` (image) or
//! plaintext (command, args) names the field. Only `containers` are changed, not
//! `initContainers` or `ephemeralContainers` (Karmada issue #4283: init container images are
//! reached with `predicate`).
//!
//! commandOverrider/argsOverrider change every container named `containerName` (none: no
//! change): `add` appends the values, creating the list when the container has none;
//! `remove` drops every item equal to one of the values. `replace` is not an operator of
//! theirs (admission refuses it) and changes nothing. Differing from Karmada, `remove` on a
//! container without the list leaves it absent where Karmada writes an empty list; both
//! mean the same to the member's API server.

use flotilla_api::overrides::{CommandArgsOverrider, ImageOverrider, OverriderOperator};
use json_patch::jsonptr::PointerBuf;
use serde_json::Value;

use crate::Failed;
use crate::error::OverrideFailure;
use crate::image::{component_name, override_image};
use crate::patch::operator_name;

/// The tokens of the pointer to the pod spec of a workload of `kind`, if Karmada's overriders
/// know the kind.
fn pod_spec_tokens(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec"]),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" => {
            Some(&["spec", "template", "spec"])
        }
        _ => None,
    }
}

/// The `containers` of the workload's pod spec, with the pointer to the list: `None` when the
/// kind is not a known workload or the list is absent.
fn containers_mut(
    doc: &mut Value,
) -> Result<Option<(PointerBuf, &mut Vec<Value>)>, OverrideFailure> {
    let Some(tokens) = doc
        .get("kind")
        .and_then(Value::as_str)
        .and_then(pod_spec_tokens)
    else {
        return Ok(None);
    };
    let mut at = PointerBuf::from_tokens(tokens.iter().copied());
    at.push_back("containers");
    match doc.pointer_mut(at.as_str()) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(items)) => Ok(Some((at, items))),
        Some(_) => Err(OverrideFailure::UnexpectedType {
            what: format!("{:?}", at.as_str()),
            expected: "a list",
        }),
    }
}

/// Applies an imageOverrider without `predicate` to every container image of the workload.
pub(crate) fn apply_image_to_containers(
    doc: &mut Value,
    overrider: &ImageOverrider,
) -> Result<(), Failed> {
    let overrider_name = format!(
        "imageOverrider {} {}",
        component_name(overrider.component),
        operator_name(overrider.operator)
    );
    let describe = |at: &str| format!("{overrider_name}, image at {at:?}");
    let Some((at, containers)) = containers_mut(doc).map_err(|f| (overrider_name.clone(), f))?
    else {
        return Ok(());
    };
    for (i, container) in containers.iter_mut().enumerate() {
        let mut path = at.clone();
        path.push_back(i);
        path.push_back("image");
        let Value::Object(container) = container else {
            return Err((
                describe(path.as_str()),
                OverrideFailure::UnexpectedType {
                    what: "the container".to_string(),
                    expected: "an object",
                },
            ));
        };
        // A container without image reads as the empty image, which does not parse: Karmada
        // fails the same way.
        let image = match container.get("image") {
            None | Some(Value::Null) => "",
            Some(Value::String(image)) => image.as_str(),
            Some(_) => {
                return Err((
                    describe(path.as_str()),
                    OverrideFailure::UnexpectedType {
                        what: "the image".to_string(),
                        expected: "a string",
                    },
                ));
            }
        };
        let image = override_image(image, overrider).map_err(|f| (describe(path.as_str()), f))?;
        container.insert("image".to_string(), Value::String(image));
    }
    Ok(())
}

/// Which list a [`CommandArgsOverrider`] changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListField {
    Command,
    Args,
}

impl ListField {
    fn key(self) -> &'static str {
        match self {
            ListField::Command => "command",
            ListField::Args => "args",
        }
    }

    fn overrider(self) -> &'static str {
        match self {
            ListField::Command => "commandOverrider",
            ListField::Args => "argsOverrider",
        }
    }
}

/// Applies a commandOverrider or argsOverrider.
pub(crate) fn apply_command_args(
    doc: &mut Value,
    field: ListField,
    overrider: &CommandArgsOverrider,
) -> Result<(), Failed> {
    let describe = || {
        format!(
            "{} container {:?}",
            field.overrider(),
            overrider.container_name
        )
    };
    let containers = containers_mut(doc).map_err(|f| (describe(), f))?;
    let Some((_, containers)) = containers else {
        return Ok(());
    };
    for container in containers.iter_mut() {
        let Value::Object(container) = container else {
            return Err((
                describe(),
                OverrideFailure::UnexpectedType {
                    what: "a container".to_string(),
                    expected: "an object",
                },
            ));
        };
        if container.get("name").and_then(Value::as_str) != Some(overrider.container_name.as_str())
        {
            continue;
        }
        let current = match container.get(field.key()) {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<String>>>()
                    .ok_or_else(|| {
                        (
                            describe(),
                            OverrideFailure::UnexpectedType {
                                what: field.key().to_string(),
                                expected: "a list of strings",
                            },
                        )
                    })?,
            ),
            Some(_) => {
                return Err((
                    describe(),
                    OverrideFailure::UnexpectedType {
                        what: field.key().to_string(),
                        expected: "a list of strings",
                    },
                ));
            }
        };
        let updated = match (overrider.operator, current) {
            (OverriderOperator::Add, current) => {
                let mut items = current.unwrap_or_default();
                items.extend(overrider.value.iter().cloned());
                items
            }
            (OverriderOperator::Remove, Some(items)) => items
                .into_iter()
                .filter(|item| !overrider.value.contains(item))
                .collect(),
            (OverriderOperator::Remove, None) | (OverriderOperator::Replace, _) => continue,
        };
        container.insert(
            field.key().to_string(),
            Value::Array(updated.into_iter().map(Value::String).collect()),
        );
    }
    Ok(())
}
