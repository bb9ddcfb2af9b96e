//! The protobuf request body decoder (`application/vnd.kubernetes.protobuf`, kubectl 1.32+):
//! any bytes decode to a JSON object or an error, never a panic, and what decodes serializes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = flotilla_protobuf::decode_object(data) {
        assert!(value.is_object());
        let _ = serde_json::to_vec(&value);
    }
});
