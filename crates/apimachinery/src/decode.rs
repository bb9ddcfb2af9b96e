//! Request bodies decoded into JSON values in one pass that also notes every key an object
//! repeats, for strict field validation (kube-apiserver's `duplicate field` errors).
//!
//! The decoder builds the same [`Value`] as `serde_json::Value`'s own `Deserialize` (a
//! repeated key keeps its first position and its last value, as kube keeps the last) from
//! any serde deserializer: JSON text, or YAML through its serde deserializer. The path of a
//! repeated key is spelled as kube's strict decoder spells it: keys joined by `.`, list
//! indices as `[i]` (`spec.template.spec.containers[0].name`, `[0].op` in a JSON patch).

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Number, Value};

/// kube's strict decoder stops recording problems after this many.
pub const MAX_DUPLICATES: usize = 100;

/// A decoded document and the paths of the keys it repeats (each path once, in the order
/// their values were decoded, at most [`MAX_DUPLICATES`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub value: Value,
    pub duplicates: Vec<String>,
}

/// Decodes JSON text (one value, nothing after it but whitespace).
pub fn json_from_slice(bytes: &[u8]) -> Result<Decoded, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let decoded = decode(&mut de)?;
    de.end()?;
    Ok(decoded)
}

/// Decodes one value from any self-describing deserializer.
pub fn decode<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Decoded, D::Error> {
    let mut state = State::default();
    let value = ValueSeed { state: &mut state }.deserialize(deserializer)?;
    let mut duplicates: Vec<String> = Vec::with_capacity(state.found.len());
    for path in state.found {
        if !duplicates.contains(&path) {
            duplicates.push(path);
        }
    }
    Ok(Decoded { value, duplicates })
}

/// What the decoder found. A repeated key is recorded where it is met, as a path relative to
/// the object holding it, and each enclosing object and list prefixes its own key or index
/// as the decoder returns through it: the common case, no repetition, costs one comparison
/// per value.
#[derive(Default)]
struct State {
    found: Vec<String>,
}

impl State {
    /// Records the repetition of `key` in the object being decoded.
    fn repeated(&mut self, key: &str) {
        if self.found.len() < MAX_DUPLICATES {
            self.found.push(key.to_owned());
        }
    }

    /// Prefixes the paths found since `mark` with the key or index (`[i]`) of the value
    /// they were found in.
    fn prefix(&mut self, mark: usize, segment: &str) {
        for path in &mut self.found[mark..] {
            let separator = if path.starts_with('[') { "" } else { "." };
            *path = format!("{segment}{separator}{path}");
        }
    }
}

struct ValueSeed<'s> {
    state: &'s mut State,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor { state: self.state })
    }
}

struct ValueVisitor<'s> {
    state: &'s mut State,
}

impl<'de> Visitor<'de> for ValueVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        Number::from_i128(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("number out of range: {v}")))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        Number::from_u128(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format!("number out of range: {v}")))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // Not a JSON number (NaN, infinities): null, as serde_json's own Value decodes it.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        ValueSeed { state: self.state }.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            let mark = self.state.found.len();
            match seq.next_element_seed(ValueSeed { state: self.state })? {
                Some(v) => {
                    if self.state.found.len() > mark {
                        self.state.prefix(mark, &format!("[{}]", items.len()));
                    }
                    items.push(v);
                }
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let mark = self.state.found.len();
            let value = access.next_value_seed(ValueSeed { state: self.state })?;
            if self.state.found.len() > mark {
                self.state.prefix(mark, &key);
            }
            match map.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(mut slot) => {
                    self.state.repeated(slot.key());
                    slot.insert(value);
                }
            }
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dups(text: &str) -> Vec<String> {
        json_from_slice(text.as_bytes()).unwrap().duplicates
    }

    #[test]
    fn builds_the_same_value_as_serde_json() {
        let text = r#"{"a": [1, -2, 3.5, 18446744073709551615, true, null, "s\u00e9"], "b": {"c": {}}, "d": []}"#;
        let decoded = json_from_slice(text.as_bytes()).unwrap();
        let plain: Value = serde_json::from_str(text).unwrap();
        assert_eq!(decoded.value, plain);
        assert_eq!(
            serde_json::to_string(&decoded.value).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
        assert!(decoded.duplicates.is_empty());
    }

    #[test]
    fn the_last_value_wins_in_the_first_position() {
        let text = r#"{"b": 1, "a": 2, "b": 3}"#;
        let decoded = json_from_slice(text.as_bytes()).unwrap();
        let plain: Value = serde_json::from_str(text).unwrap();
        assert_eq!(decoded.value, plain);
        assert_eq!(
            serde_json::to_string(&decoded.value).unwrap(),
            r#"{"b":3,"a":2}"#
        );
        assert_eq!(decoded.duplicates, ["b"]);
    }

    #[test]
    fn paths_are_spelled_as_kube_spells_them() {
        assert_eq!(
            dups(r#"{"metadata": {"name": "a", "name": "b"}}"#),
            ["metadata.name"]
        );
        assert_eq!(
            dups(
                r#"{"spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b", "image": "x", "name": "c"}]}}}}"#
            ),
            ["spec.template.spec.containers[1].name"]
        );
        // A JSON patch is a list at the root.
        assert_eq!(
            dups(r#"[{"op": "add", "op": "remove", "path": "/a"}]"#),
            ["[0].op"]
        );
        // Each repeated path once, in the order met.
        assert_eq!(
            dups(r#"{"x": 1, "y": 2, "x": 3, "x": 4, "y": 5}"#),
            ["x", "y"]
        );
    }

    #[test]
    fn at_most_a_hundred_are_recorded() {
        let keys: Vec<String> = (0..150)
            .map(|i| format!(r#""k{i}": 1, "k{i}": 2"#))
            .collect();
        let text = format!("{{{}}}", keys.join(","));
        let d = dups(&text);
        assert_eq!(d.len(), MAX_DUPLICATES);
        assert_eq!(d[0], "k0");
    }

    #[test]
    fn malformed_json_is_an_error() {
        for bad in [r#"{"a": "#, r#"{"a": 1} x"#, r#"{"a" 1}"#, ""] {
            assert!(json_from_slice(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(
            json_from_slice(b" {\"a\": 1} \n").unwrap().value,
            json!({"a": 1})
        );
    }
}
