//! Field selector parsing (`?fieldSelector=`, with `\,` `\=` `\\` escapes): any text either
//! parses or is an error, never a panic; the printed form of what parses is canonical (it
//! parses and prints to itself).
#![no_main]

use flotilla_apimachinery::selector::FieldSelector;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(selector) = FieldSelector::parse(text) else {
        return;
    };
    let printed = selector.to_string();
    match FieldSelector::parse(&printed) {
        Ok(again) => assert_eq!(again.to_string(), printed, "{text:?}"),
        Err(e) => panic!("{text:?} printed as {printed:?}, which does not parse: {e}"),
    }
    let _ = selector.matches(|field| Some(field.to_string()));
});
