//! Keys a request body repeats, and how strict field validation reports them, in
//! kube-apiserver's words: `duplicate field "metadata.name"` for JSON, `json patch duplicate
//! field "[0].op"` for a JSON patch, and for YAML the YAML decoder's own
//! `yaml: unmarshal errors:` list (`line 4: key "name" already set in map`). Under
//! `fieldValidation=Strict` they join the unknown fields in one `strict decoding error`;
//! under `Warn` each is a warning.
//!
//! Repeated keys are found while the body is decoded ([`flotilla_apimachinery::decode`]);
//! only when a YAML body has some is it read once more, by an event parser, for the lines
//! kube names.

use std::collections::HashSet;

use saphyr_parser::{Event, Parser};

/// What a body repeats, as its format spells the problems.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Duplicates {
    #[default]
    None,
    /// Paths of repeated keys in a JSON object body.
    Json(Vec<String>),
    /// Paths of repeated keys in a JSON patch (a list of operations).
    JsonPatch(Vec<String>),
    /// A YAML body's repeated keys as the YAML decoder reports them (`line N: key "k"
    /// already set in map`).
    Yaml(Vec<String>),
}

impl Duplicates {
    /// The repetitions in a JSON body.
    pub fn json(paths: Vec<String>) -> Self {
        if paths.is_empty() {
            Self::None
        } else {
            Self::Json(paths)
        }
    }

    /// The repetitions in a JSON patch body.
    pub fn json_patch(paths: Vec<String>) -> Self {
        if paths.is_empty() {
            Self::None
        } else {
            Self::JsonPatch(paths)
        }
    }

    /// The repetitions in a YAML body `text`, whose decoding found them at `paths`. Their
    /// lines come from reading the text again; a text the event parser cannot read (it
    /// differs from the decoder at the edges) keeps the paths, in JSON's words.
    pub fn yaml(text: &[u8], paths: Vec<String>) -> Self {
        if paths.is_empty() {
            return Self::None;
        }
        match std::str::from_utf8(text).ok().and_then(yaml_lines) {
            Some(lines) if !lines.is_empty() => Self::Yaml(lines),
            _ => Self::Json(paths),
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Self::None)
    }

    /// The items these add to a `strict decoding error: ` list (kube lists the YAML
    /// decoder's error as one item).
    pub fn strict_items(&self) -> Vec<String> {
        match self {
            Self::None => Vec::new(),
            Self::Json(paths) => paths.iter().map(|p| json_item(p)).collect(),
            Self::JsonPatch(paths) => paths
                .iter()
                .map(|p| format!("json patch {}", json_item(p)))
                .collect(),
            Self::Yaml(lines) => vec![yaml_error(lines)],
        }
    }

    /// One warning per repeated key (kube splits the YAML decoder's list into its lines).
    pub fn warnings(&self) -> Vec<String> {
        match self {
            Self::Yaml(lines) => lines.clone(),
            other => other.strict_items(),
        }
    }

    /// The YAML decoder's error for these, when they came from YAML.
    pub fn yaml_decoder_error(&self) -> Option<String> {
        match self {
            Self::Yaml(lines) => Some(yaml_error(lines)),
            _ => None,
        }
    }
}

fn json_item(path: &str) -> String {
    format!("duplicate field {path:?}")
}

fn yaml_error(lines: &[String]) -> String {
    format!("yaml: unmarshal errors:\n  {}", lines.join("\n  "))
}

/// A collection being read: a mapping's keys so far and whether the next node is a key.
enum Frame {
    Mapping {
        keys: HashSet<String>,
        /// Nodes completed in this mapping: even means the next one is a key.
        nodes: usize,
        /// A key just seen again: reported at its value's line, as kube's decoder does.
        repeated: Option<String>,
    },
    Sequence,
}

/// `line N: key "k" already set in map` for each repeated key of `text`, in document order;
/// `None` when the event parser cannot read it.
fn yaml_lines(text: &str) -> Option<Vec<String>> {
    let mut lines = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.ok()?;
        // A node starts: a key or a value of the mapping it is in.
        if matches!(
            event,
            Event::Scalar(..)
                | Event::Alias(_)
                | Event::MappingStart(..)
                | Event::SequenceStart(..)
        ) {
            if let Some(Frame::Mapping {
                keys,
                nodes,
                repeated,
            }) = stack.last_mut()
            {
                if *nodes % 2 == 0 {
                    if let Event::Scalar(key, ..) = &event {
                        if !keys.insert(key.to_string()) {
                            *repeated = Some(key.to_string());
                        }
                    }
                } else if let Some(key) = repeated.take() {
                    if lines.len() < flotilla_apimachinery::decode::MAX_DUPLICATES {
                        lines.push(format!(
                            "line {}: key {key:?} already set in map",
                            span.start.line()
                        ));
                    }
                }
            }
        }
        match event {
            Event::MappingStart(..) => stack.push(Frame::Mapping {
                keys: HashSet::new(),
                nodes: 0,
                repeated: None,
            }),
            Event::SequenceStart(..) => stack.push(Frame::Sequence),
            Event::MappingEnd | Event::SequenceEnd => {
                stack.pop();
                completed(&mut stack);
            }
            Event::Scalar(..) | Event::Alias(_) => completed(&mut stack),
            _ => {}
        }
    }
    Some(lines)
}

/// A node of the innermost mapping (if it is one) is complete.
fn completed(stack: &mut [Frame]) {
    if let Some(Frame::Mapping { nodes, .. }) = stack.last_mut() {
        *nodes += 1;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn yaml_repetitions_are_reported_at_their_values_lines() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\ndata:\n  x: \"1\"\n  y: \"2\"\n  x: \"3\"\n";
        let d = Duplicates::yaml(
            text.as_bytes(),
            vec!["metadata.name".into(), "data.x".into()],
        );
        assert_eq!(
            d,
            Duplicates::Yaml(vec![
                r#"line 5: key "name" already set in map"#.into(),
                r#"line 9: key "x" already set in map"#.into(),
            ])
        );
        assert_eq!(
            d.strict_items(),
            [
                "yaml: unmarshal errors:\n  line 5: key \"name\" already set in map\n  line 9: key \"x\" already set in map"
            ]
        );
        assert_eq!(d.warnings().len(), 2);
    }

    #[test]
    fn json_in_a_yaml_body_is_read_as_yaml() {
        let text = r#"{"metadata": {"name": "a", "labels": {"k": "v"}, "name": "b"}}"#;
        let d = Duplicates::yaml(text.as_bytes(), vec!["metadata.name".into()]);
        assert_eq!(d.warnings(), [r#"line 1: key "name" already set in map"#]);
        // Keys of nested mappings and lists are their own.
        let text = "a:\n  - k: 1\n  - k: 2\nb:\n  k: 3\n";
        assert_eq!(yaml_lines(text).unwrap(), Vec::<String>::new());
    }

    #[test]
    fn json_repetitions_use_paths() {
        let d = Duplicates::json(vec!["metadata.name".into()]);
        assert_eq!(d.strict_items(), [r#"duplicate field "metadata.name""#]);
        assert_eq!(d.warnings(), d.strict_items());
        let d = Duplicates::json_patch(vec!["[0].op".into()]);
        assert_eq!(d.strict_items(), [r#"json patch duplicate field "[0].op""#]);
        assert!(Duplicates::json(Vec::new()).is_empty());
        // Unreadable as YAML by the event parser: the decoder's paths stand.
        assert_eq!(
            Duplicates::yaml(&[0xff, 0xfe], vec!["a".into()]),
            Duplicates::Json(vec!["a".into()])
        );
    }
}
