//! How deeply a request body may nest arrays and objects, and the two cheap measurements that
//! enforce it: a byte scan of JSON text done before any parsing, and a walk of an already
//! decoded value (YAML and protobuf bodies, whose parsers bound their own recursion).
//!
//! Why a limit of our own: the parsers stop at 128 levels, but everything after them (strategic
//! merge, server-side apply, structural schemas, field paths, managedFields) walks a body
//! recursively, and a stored object is later wrapped again (a list's `items`, a watch event, a
//! Table row, a Karmada Work's manifests: about five more levels), so a stored object must stay
//! well below what every reader of it, kube-rs included, can parse. Real objects stay far below
//! it: the deepest built-in kind nests about 20 levels, a CRD's schema a few dozen.

/// The deepest nesting of arrays and objects accepted in a request body.
pub const MAX_NESTING_DEPTH: usize = 100;

/// Whether JSON text nests arrays and objects deeper than `limit`, found by one pass over the
/// bytes that counts brackets outside strings, and stops at the first level past the limit.
/// Text that is not JSON gets an answer too (the parser rejects it afterwards).
pub fn json_exceeds(text: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// The nesting depth of a decoded value (a scalar is 0, `{}` and `[]` are 1), measured without
/// recursion so a deep value cannot exhaust the stack here.
pub fn value_depth(value: &serde_json::Value) -> usize {
    use serde_json::Value;
    let mut deepest = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match v {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        let depth = depth + 1;
        deepest = deepest.max(depth);
        stack.extend(children.map(|c| (c, depth)));
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(levels: usize) -> String {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn counts_arrays_and_objects_up_to_the_limit() {
        assert!(!json_exceeds(nested(3).as_bytes(), 3));
        assert!(json_exceeds(nested(4).as_bytes(), 3));
        assert!(!json_exceeds(br#"{"a":{"b":[1,{"c":2}]}}"#, 4));
        assert!(json_exceeds(br#"{"a":{"b":[1,{"c":2}]}}"#, 3));
        // Siblings do not add up.
        assert!(!json_exceeds(br#"[[1],[2],[3],{"a":1}]"#, 2));
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let text = br#"{"a":"[[[[{{{{","b":"\"[[[[\\","c":["x"]}"#;
        assert!(!json_exceeds(text, 2));
        assert!(json_exceeds(text, 1));
    }

    #[test]
    fn a_megabyte_of_brackets_is_refused_at_the_limit() {
        let text = "[".repeat(1 << 20);
        assert!(json_exceeds(text.as_bytes(), MAX_NESTING_DEPTH));
    }

    #[test]
    fn value_depth_matches_the_text() {
        assert_eq!(value_depth(&json!(1)), 0);
        assert_eq!(value_depth(&json!({})), 1);
        assert_eq!(value_depth(&json!({"a": [1, {"b": []}], "c": 2})), 4);
        let deep: serde_json::Value = serde_json::from_str(&nested(100)).unwrap();
        assert_eq!(value_depth(&deep), 100);
    }
}
