//! The composite resourceVersion of merged reads and the continue token of merged lists.
//!
//! A merged object or list has no single position: it combines the template store's stream
//! and every member cluster's. [`CompositeVersion`] holds them all and travels as an opaque
//! string (`f1.` + base64url of compact JSON), so that a client can hand it back (watch from
//! it, continue a list, precondition a write) without knowing it is composite. The prefix
//! keeps it apart from a plain Kubernetes resourceVersion, which is decimal.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use crate::{FanoutError, quoted};

/// Prefix of an encoded [`CompositeVersion`]; the `1` is the format's version.
const VERSION_PREFIX: &str = "f1.";
/// Prefix of an encoded [`ContinueToken`].
const CONTINUE_PREFIX: &str = "f1c.";
/// Longest text accepted: a version names one position per member cluster, so even a few
/// hundred clusters stay far below this; anything longer is not ours.
const MAX_ENCODED: usize = 64 * 1024;

/// Where a merged read stands in the template store and in each member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompositeVersion {
    /// Position in the template store's stream (a host resourceVersion), when known.
    pub template: Option<String>,
    /// The template object's own resourceVersion (write preconditions are checked against it).
    pub object: Option<String>,
    /// Position (or object resourceVersion) per member cluster.
    pub members: BTreeMap<String, String>,
}

impl CompositeVersion {
    /// The opaque text form: URL and header safe, equal for equal versions.
    pub fn encode(&self) -> String {
        encode(VERSION_PREFIX, &Value::Object(self.to_fields()))
    }

    /// The version `text` encodes; a message a user understands when it is not one.
    pub fn parse(text: &str) -> Result<Self, FanoutError> {
        let malformed = |reason: String| FanoutError::MalformedVersion {
            value: quoted(text),
            reason,
        };
        let fields = decode(VERSION_PREFIX, text).map_err(malformed)?;
        Self::from_fields(&fields, &[]).map_err(malformed)
    }

    /// Whether `text` is meant as a composite version (cheap: the prefix only).
    pub fn is_composite(text: &str) -> bool {
        text.starts_with(VERSION_PREFIX)
    }

    /// The revision a write precondition compares with the template: `object`, else None.
    pub fn template_object(&self) -> Option<&str> {
        self.object.as_deref()
    }

    /// Compact fields, absent ones omitted: `t`, `o`, `m`. Short keys because the text goes
    /// into every object of a list.
    fn to_fields(&self) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(t) = &self.template {
            out.insert("t".into(), Value::String(t.clone()));
        }
        if let Some(o) = &self.object {
            out.insert("o".into(), Value::String(o.clone()));
        }
        if !self.members.is_empty() {
            let members = self
                .members
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect();
            out.insert("m".into(), Value::Object(members));
        }
        out
    }

    /// The inverse of [`Self::to_fields`]; `extra` are keys another format adds alongside.
    fn from_fields(fields: &Map<String, Value>, extra: &[&str]) -> Result<Self, String> {
        let mut version = Self::default();
        for (key, value) in fields {
            match key.as_str() {
                "t" => version.template = Some(string_field(key, value)?),
                "o" => version.object = Some(string_field(key, value)?),
                "m" => {
                    let Value::Object(members) = value else {
                        return Err("field \"m\" is not an object".into());
                    };
                    for (cluster, position) in members {
                        if cluster.is_empty() {
                            return Err("a member cluster has an empty name".into());
                        }
                        let position = string_field(cluster, position)?;
                        version.members.insert(cluster.clone(), position);
                    }
                }
                k if extra.contains(&k) => {}
                k => return Err(format!("unknown field {k:?}")),
            }
        }
        Ok(version)
    }
}

/// Continue token of a merged list: the list's version plus the last key returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContinueToken {
    pub version: CompositeVersion,
    pub namespace: String,
    pub name: String,
}

impl ContinueToken {
    /// The opaque text form (`f1c.` + base64url of compact JSON).
    pub fn encode(&self) -> String {
        let mut fields = self.version.to_fields();
        if !self.namespace.is_empty() {
            fields.insert("ns".into(), Value::String(self.namespace.clone()));
        }
        fields.insert("n".into(), Value::String(self.name.clone()));
        encode(CONTINUE_PREFIX, &Value::Object(fields))
    }

    /// The token `text` encodes; [`FanoutError::MalformedContinue`] when it is not one.
    pub fn parse(text: &str) -> Result<Self, FanoutError> {
        let malformed = |reason: String| FanoutError::MalformedContinue {
            value: quoted(text),
            reason,
        };
        let fields = decode(CONTINUE_PREFIX, text).map_err(malformed)?;
        let version = CompositeVersion::from_fields(&fields, &["ns", "n"]).map_err(malformed)?;
        let namespace = match fields.get("ns") {
            Some(v) => string_field("ns", v).map_err(malformed)?,
            None => String::new(),
        };
        let name = match fields.get("n") {
            Some(v) => string_field("n", v).map_err(malformed)?,
            None => return Err(malformed("it names no last item".into())),
        };
        if name.is_empty() {
            return Err(malformed("it names no last item".into()));
        }
        Ok(Self {
            version,
            namespace,
            name,
        })
    }
}

fn string_field(key: &str, value: &Value) -> Result<String, String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        _ => Err(format!("field {key:?} is not a string")),
    }
}

fn encode(prefix: &str, fields: &Value) -> String {
    // Serialising a Value of strings and maps cannot fail; fall back to an empty object
    // rather than panic.
    let json = serde_json::to_vec(fields).unwrap_or_else(|_| b"{}".to_vec());
    format!("{prefix}{}", URL_SAFE_NO_PAD.encode(json))
}

/// The JSON object behind `text`, or why there is none (the reason completes a sentence that
/// starts with the rejected value).
fn decode(prefix: &str, text: &str) -> Result<Map<String, Value>, String> {
    if text.len() > MAX_ENCODED {
        return Err(format!(
            "it is {} bytes long, more than the {MAX_ENCODED} accepted",
            text.len()
        ));
    }
    let Some(body) = text.strip_prefix(prefix) else {
        return Err(format!(
            "it does not start with {prefix:?} (it was not returned by a merged read)"
        ));
    };
    let bytes = URL_SAFE_NO_PAD
        .decode(body)
        .map_err(|e| format!("it is not unpadded base64url ({e})"))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(fields)) => Ok(fields),
        Ok(_) => Err("it does not encode a JSON object".into()),
        Err(e) => Err(format!("it does not encode JSON ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(
        template: Option<&str>,
        object: Option<&str>,
        members: &[(&str, &str)],
    ) -> CompositeVersion {
        CompositeVersion {
            template: template.map(str::to_string),
            object: object.map(str::to_string),
            members: members
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    fn raw(prefix: &str, json: &str) -> String {
        format!("{prefix}{}", URL_SAFE_NO_PAD.encode(json))
    }

    #[test]
    fn versions_round_trip_and_are_stable() {
        let table = vec![
            version(None, None, &[]),
            version(Some("12"), None, &[]),
            version(None, Some("7"), &[]),
            version(
                Some("12"),
                Some("7"),
                &[("member1", "100"), ("member2", "abc/=+")],
            ),
            version(None, None, &[("ünïcode", "\"quoted\"")]),
        ];
        for v in table {
            let text = v.encode();
            assert!(CompositeVersion::is_composite(&text), "{text}");
            assert!(
                text.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)),
                "{text} is not URL safe"
            );
            assert_eq!(CompositeVersion::parse(&text), Ok(v.clone()));
            assert_eq!(v.clone().encode(), text, "stable");
        }
        // Member order of construction does not matter.
        let mut a = CompositeVersion::default();
        a.members.insert("b".into(), "2".into());
        a.members.insert("a".into(), "1".into());
        assert_eq!(
            a.encode(),
            version(None, None, &[("a", "1"), ("b", "2")]).encode()
        );
        assert_eq!(
            version(Some("1"), Some("2"), &[("m", "3")]).encode(),
            raw(VERSION_PREFIX, r#"{"t":"1","o":"2","m":{"m":"3"}}"#)
        );
        assert_eq!(version(None, None, &[]).encode(), raw(VERSION_PREFIX, "{}"));
    }

    #[test]
    fn plain_resource_versions_are_not_composite() {
        for text in ["", "0", "12345", "f1", "F1.abc", "f1c.abc"] {
            assert!(!CompositeVersion::is_composite(text), "{text}");
        }
    }

    #[test]
    fn template_object_is_the_object_revision() {
        assert_eq!(
            version(Some("9"), Some("4"), &[]).template_object(),
            Some("4")
        );
        assert_eq!(
            version(Some("9"), None, &[("m", "1")]).template_object(),
            None
        );
    }

    #[test]
    fn malformed_versions_say_why() {
        let long = format!("{VERSION_PREFIX}{}", "A".repeat(MAX_ENCODED));
        let table: Vec<(String, &str)> = vec![
            ("12345".into(), "does not start with \"f1.\""),
            ("f1.***".into(), "not unpadded base64url"),
            (format!("{VERSION_PREFIX}e30="), "not unpadded base64url"),
            (raw(VERSION_PREFIX, "not json"), "does not encode JSON"),
            (raw(VERSION_PREFIX, "[1]"), "does not encode a JSON object"),
            (
                raw(VERSION_PREFIX, r#"{"t":1}"#),
                "field \"t\" is not a string",
            ),
            (
                raw(VERSION_PREFIX, r#"{"o":null}"#),
                "field \"o\" is not a string",
            ),
            (
                raw(VERSION_PREFIX, r#"{"m":[]}"#),
                "field \"m\" is not an object",
            ),
            (
                raw(VERSION_PREFIX, r#"{"m":{"a":2}}"#),
                "field \"a\" is not a string",
            ),
            (raw(VERSION_PREFIX, r#"{"m":{"":"2"}}"#), "empty name"),
            (raw(VERSION_PREFIX, r#"{"x":"1"}"#), "unknown field \"x\""),
            (raw(VERSION_PREFIX, r#"{"n":"1"}"#), "unknown field \"n\""),
            (long, "more than the 65536 accepted"),
        ];
        for (text, want) in table {
            let err = CompositeVersion::parse(&text).unwrap_err();
            let FanoutError::MalformedVersion { .. } = &err else {
                panic!("{text}: {err:?}");
            };
            let message = err.to_string();
            assert!(
                message.starts_with("resourceVersion \"")
                    && message.contains("is not a merged-read version: "),
                "{message}"
            );
            assert!(message.contains(want), "{text}: {message}");
            assert!(message.len() < 300, "{message}");
        }
    }

    #[test]
    fn continue_tokens_round_trip() {
        let table = vec![
            ContinueToken {
                version: version(Some("5"), None, &[("m1", "8")]),
                namespace: "default".into(),
                name: "web".into(),
            },
            ContinueToken {
                version: CompositeVersion::default(),
                namespace: String::new(),
                name: "cluster-scoped".into(),
            },
        ];
        for token in table {
            let text = token.encode();
            assert!(!CompositeVersion::is_composite(&text), "{text}");
            assert_eq!(ContinueToken::parse(&text), Ok(token.clone()));
        }
    }

    #[test]
    fn malformed_continue_tokens_say_why() {
        let table: Vec<(String, &str)> = vec![
            (
                version(Some("1"), None, &[]).encode(),
                "does not start with \"f1c.\"",
            ),
            ("f1c.%%".into(), "not unpadded base64url"),
            (raw(CONTINUE_PREFIX, r#"{"t":"1"}"#), "names no last item"),
            (raw(CONTINUE_PREFIX, r#"{"n":""}"#), "names no last item"),
            (
                raw(CONTINUE_PREFIX, r#"{"n":3}"#),
                "field \"n\" is not a string",
            ),
            (
                raw(CONTINUE_PREFIX, r#"{"n":"a","ns":false}"#),
                "field \"ns\" is not a string",
            ),
            (
                raw(CONTINUE_PREFIX, r#"{"n":"a","z":"1"}"#),
                "unknown field \"z\"",
            ),
            (
                format!("{CONTINUE_PREFIX}{}", "A".repeat(MAX_ENCODED)),
                "accepted",
            ),
        ];
        for (text, want) in table {
            let err = ContinueToken::parse(&text).unwrap_err();
            assert!(
                matches!(err, FanoutError::MalformedContinue { .. }),
                "{err:?}"
            );
            let message = err.to_string();
            assert!(message.starts_with("continue token \""), "{message}");
            assert!(message.contains(want), "{text}: {message}");
        }
    }
}
