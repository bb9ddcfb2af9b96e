//! Strategic merge patch: an object and a patch (two JSON documents separated by a NUL byte,
//! each within the API server's nesting limit, as the server only merges such bodies), merged
//! under a built-in kind's schema or the generic one. Any error is fine; a panic is not.
#![no_main]

use flotilla_fuzz::{parse, schema};
use flotilla_patch::strategic_merge;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some((original, patch)) = two_documents(rest) else {
        return;
    };
    let schema = schema(selector);
    if let Ok(merged) = strategic_merge(&original, &patch, schema) {
        // The same patch again over its own result (directives now meet merged lists).
        let _ = strategic_merge(&merged, &patch, schema);
    }
});

fn two_documents(data: &[u8]) -> Option<(Value, Value)> {
    let split = data.iter().position(|&b| b == 0)?;
    let (a, b) = (&data[..split], &data[split + 1..]);
    Some((parse(a)?, parse(b)?))
}
