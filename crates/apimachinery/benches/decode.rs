//! What noting repeated keys costs when a request body is decoded: the same JSON bodies
//! decoded by `serde_json`'s own `Value` (the decoder before) and by
//! `flotilla_apimachinery::decode::json_from_slice` (the decoder now, one pass that also
//! records repeated keys), alternating rounds so both see the same machine.
//!
//! Bodies: a Deployment as kubectl sends it (~1.5 KB), a ConfigMap of 1,000 keys (~40 KB),
//! and a ConfigMap of one 1 MiB value. Prints the median time per decode of each and their
//! ratio; asserts nothing about time.
//!
//! Run: `cargo bench -p flotilla-apimachinery --bench decode`.

// A benchmark program: a broken body is a bug to stop on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Alternating rounds per body.
const ROUNDS: usize = 15;
/// How long each round decodes one body with one decoder.
const ROUND: Duration = Duration::from_millis(200);

fn deployment() -> Vec<u8> {
    let containers: Vec<Value> = (0..3)
        .map(|i| {
            json!({
                "name": format!("c{i}"), "image": "registry.example/app:1.2.3",
                "args": ["--port=8080", "--verbose"],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "two"}],
                "ports": [{"containerPort": 8080 + i, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
            })
        })
        .collect();
    serde_json::to_vec(&json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web", "tier": "front"},
                     "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}}},
    }))
    .unwrap()
}

fn many_keys() -> Vec<u8> {
    let data: serde_json::Map<String, Value> = (0..1000)
        .map(|i| (format!("key-{i:04}"), json!(format!("value number {i}"))))
        .collect();
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "many"}, "data": data})).unwrap()
}

fn one_mib() -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"blob": "x".repeat(1 << 20)}})).unwrap()
}

/// Decodes `body` with `decode` for one round; the time per decode.
fn round(body: &[u8], decode: &dyn Fn(&[u8]) -> Value) -> Duration {
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < ROUND {
        black_box(decode(black_box(body)));
        n += 1;
    }
    start.elapsed() / n
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let plain = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
    let noting = |b: &[u8]| {
        flotilla_apimachinery::decode::json_from_slice(b)
            .unwrap()
            .value
    };
    println!(
        "{:<24} {:>8} {:>14} {:>14} {:>7}",
        "body", "bytes", "serde_json", "noting keys", "ratio"
    );
    for (name, body) in [
        ("Deployment", deployment()),
        ("ConfigMap, 1000 keys", many_keys()),
        ("ConfigMap, 1 MiB value", one_mib()),
    ] {
        assert_eq!(plain(&body), noting(&body));
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for _ in 0..ROUNDS {
            before.push(round(&body, &plain));
            after.push(round(&body, &noting));
        }
        let (b, a) = (median(before), median(after));
        println!(
            "{name:<24} {:>8} {:>11.1} µs {:>11.1} µs {:>6.2}x",
            body.len(),
            b.as_secs_f64() * 1e6,
            a.as_secs_f64() * 1e6,
            a.as_secs_f64() / b.as_secs_f64()
        );
    }
}
