//! Server-side apply: a live object and an applied configuration (two JSON documents separated
//! by a NUL byte, within the server's nesting limit), applied by one manager, then the result
//! updated by another and applied again by the first, with and without force, under a
//! built-in kind's schema or the generic one. Conflicts and errors are fine; a panic is not.
#![no_main]

use flotilla_fuzz::{parse, schema};
use flotilla_patch::{ApplyOptions, UpdateOptions, apply, track_update};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const NOW: &str = "2026-01-01T00:00:00Z";

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let Some(split) = rest.iter().position(|&b| b == 0) else {
        return;
    };
    let (Some(live), Some(applied)) = (parse(&rest[..split]), parse(&rest[split + 1..])) else {
        return;
    };
    let schema = schema(selector);
    let force = selector & 0x80 != 0;
    let opts = |manager| ApplyOptions {
        manager,
        api_version: "apps/v1",
        force,
        now: NOW,
        subresource: (selector & 0x40 != 0).then_some("status"),
    };
    let live = live.is_object().then_some(live);
    let Ok(mut applied_once) = apply(live.as_ref(), &applied, &opts("one"), schema) else {
        return;
    };
    // Another writer changes it with an ordinary update: the old object, then the new one.
    let before = applied_once.clone();
    if let Some(obj) = applied_once.as_object_mut() {
        obj.insert(
            "spec".into(),
            applied.get("spec").cloned().unwrap_or(Value::Null),
        );
    }
    track_update(
        Some(&before),
        &mut applied_once,
        &UpdateOptions {
            manager: "two",
            api_version: "apps/v1",
            now: NOW,
            subresource: None,
        },
        schema,
    );
    let _ = apply(Some(&applied_once), &applied, &opts("one"), schema);
    let _ = apply(
        Some(&applied_once),
        &Value::Object(Default::default()),
        &opts("two"),
        schema,
    );
});
