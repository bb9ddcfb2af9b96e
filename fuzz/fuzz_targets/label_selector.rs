//! Label selector parsing (`?labelSelector=`): any text either parses or is an error, never a
//! panic; what parses prints back to a selector that parses to the same requirements, and
//! matching never panics.
#![no_main]

use flotilla_apimachinery::selector::LabelSelector;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(selector) = LabelSelector::parse(text) else {
        return;
    };
    let printed = selector.to_string();
    match LabelSelector::parse(&printed) {
        Ok(again) => assert_eq!(again, selector, "{text:?} printed as {printed:?}"),
        Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e}"),
    }
    let mut labels = Map::new();
    for r in selector.requirements() {
        if let Some(v) = r.values().first() {
            labels.insert(r.key().to_string(), Value::String(v.clone()));
        }
    }
    let _ = selector.matches(Some(&labels));
    let _ = selector.matches(None);
});
