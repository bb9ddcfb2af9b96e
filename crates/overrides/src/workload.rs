//! The overriders that know workloads: imageOverrider without `predicate`, commandOverrider
//! and argsOverrider.
//!
//! They know the pod spec of the kinds `flotilla_interpreter` knows, by apiVersion and kind:
//! `Pod` (`/spec`), `Deployment`, `ReplicaSet`, `StatefulSet`, `DaemonSet`, `Job`
//! (`/spec/template/spec`) and `CronJob` (`/spec/jobTemplate/spec/template/spec`); other kinds
//! (custom resources) are left unchanged, and for them `predicate` (image) or plaintext
//! (command, args) names the field. Both `containers` and `initContainers` are changed: an
//! image mirror must serve the init containers' images too. Karmada changes only
//! `containers` and does not know CronJobs (its issue #4283); `predicate` still reaches a
//! single image either way.
//!
//! commandOverrider/argsOverrider change every container named `containerName` (none: no
//! change): `add` appends the values, creating the list when the container has none;
//! `remove` drops every item equal to one of the values. `replace` is not an operator of
//! theirs (admission refuses it) and changes nothing. Differing from Karmada, `remove` on a
//! container without the list leaves it absent where Karmada writes an empty list; both
//! mean the same to the member's API server.

use flotilla_karmada_api::overrides::{CommandArgsOverrider, ImageOverrider, OverriderOperator};
use json_patch::jsonptr::PointerBuf;
use serde_json::Value;

use crate::Failed;
use crate::error::OverrideFailure;
use crate::image::{component_name, override_image};
use crate::patch::operator_name;

/// The container lists of the workload's pod spec (`containers`, then `initContainers`),
/// each with the pointer to it: empty when the kind has no pods or the lists are absent.
fn containers_mut(doc: &mut Value) -> Result<Vec<(PointerBuf, &mut Vec<Value>)>, OverrideFailure> {
    let Some(spec_at) = flotilla_interpreter::pod_spec_pointer(doc) else {
        return Ok(Vec::new());
    };
    let Some(Value::Object(spec)) = doc.pointer_mut(spec_at) else {
        return Ok(Vec::new());
    };
    let mut lists = Vec::new();
    for (key, value) in spec.iter_mut() {
        if key != "containers" && key != "initContainers" {
            continue;
        }
        let mut at = PointerBuf::parse(spec_at)
            .map_err(|e| OverrideFailure::InvalidPointer(e.to_string()))?;
        at.push_back(key.as_str());
        match value {
            Value::Null => {}
            Value::Array(items) => lists.push((at, items)),
            _ => {
                return Err(OverrideFailure::UnexpectedType {
                    what: format!("{:?}", at.as_str()),
                    expected: "a list",
                });
            }
        }
    }
    // `containers` first, whatever the order of the template's keys.
    lists.sort_by_key(|(at, _)| !at.as_str().ends_with("/containers"));
    Ok(lists)
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
    let lists = containers_mut(doc).map_err(|f| (overrider_name.clone(), f))?;
    for (at, containers) in lists {
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
            let image =
                override_image(image, overrider).map_err(|f| (describe(path.as_str()), f))?;
            container.insert("image".to_string(), Value::String(image));
        }
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
    let lists = containers_mut(doc).map_err(|f| (describe(), f))?;
    for container in lists.into_iter().flat_map(|(_, c)| c.iter_mut()) {
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
