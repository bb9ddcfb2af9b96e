//! What the merge fuzz targets share: reading a JSON document as the API server would accept
//! it, and choosing the merge schema a target exercises.

use flotilla_apimachinery::nesting::{MAX_NESTING_DEPTH, json_exceeds};
use flotilla_patch::Schema;
use serde_json::Value;

/// `text` as JSON, when the API server would parse it at all (within its nesting limit).
pub fn parse(text: &[u8]) -> Option<Value> {
    if json_exceeds(text, MAX_NESTING_DEPTH) {
        return None;
    }
    serde_json::from_slice(text).ok()
}

/// A built-in kind's merge schema, or (one selector in five) the generic one.
pub fn schema(selector: u8) -> &'static Schema {
    const KINDS: [(&str, &str); 4] = [
        ("apps", "Deployment"),
        ("", "Pod"),
        ("", "Service"),
        ("", "ConfigMap"),
    ];
    KINDS
        .get(usize::from(selector % 5))
        .and_then(|(group, kind)| Schema::builtin(group, kind))
        .unwrap_or_else(Schema::generic)
}
