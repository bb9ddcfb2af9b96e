//! Resource amounts and the effective request of a pod. The cluster status controller, the
//! member simulator, the detector (per-replica requests of a template) and the scheduler all
//! need "what does this pod ask for"; if each computed it its own way, a member could be
//! reported as having room for a pod its scheduler refuses.
//!
//! A pod's request follows the kube-scheduler's rule: the larger of the sum of its containers
//! (plus restartable init containers, i.e. sidecars) and its largest init container (plus the
//! sidecars started before it), plus the pod overhead; a resource a container only limits
//! counts its limit as the request, as the API server's defaulting would.
//!
//! ```text
//!   PodSpec (typed)  ──pod_spec_requests───────┐
//!                                              ├─ per container: requests ∪ limits-only
//!   spec (JSON Value) ─pod_spec_value_requests─┘   then effective(): max(app, init) + overhead
//! ```
//!
//! Both entry points only read fields; the rule itself is [`effective`], written once.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde_json::Value;

use flotilla_apimachinery::quantity::Round;

// === impl ResourceName ===

/// A resource name; the common ones without an allocation.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceName {
    Cpu,
    Memory,
    EphemeralStorage,
    Pods,
    Other(Arc<str>),
}

impl ResourceName {
    pub fn new(name: &str) -> Self {
        match name {
            "cpu" => Self::Cpu,
            "memory" => Self::Memory,
            "ephemeral-storage" => Self::EphemeralStorage,
            "pods" => Self::Pods,
            other => Self::Other(Arc::from(other)),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Cpu => "cpu",
            Self::Memory => "memory",
            Self::EphemeralStorage => "ephemeral-storage",
            Self::Pods => "pods",
            Self::Other(name) => name,
        }
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self, Self::Cpu)
    }

    /// Resources counted in bytes (printed with binary suffixes).
    pub fn is_bytes(&self) -> bool {
        match self {
            Self::Memory | Self::EphemeralStorage => true,
            Self::Other(name) => name.starts_with("hugepages-"),
            _ => false,
        }
    }

    /// Parses a Kubernetes quantity (`500m`, `2`, `1.5Gi`, `1e3`, `100M`) into this
    /// resource's integer unit (millicores for CPU, whole units otherwise), saturating at the
    /// i64 range; `None` when it is not a quantity.
    pub fn parse_quantity(&self, text: &str, round: Round) -> Option<i64> {
        flotilla_apimachinery::quantity::parse(text, self.is_cpu(), round)
    }

    /// Prints a value of this resource back as a canonical quantity: CPU as whole cores or
    /// millicores, byte-sized resources with the largest binary suffix that divides them
    /// exactly, other resources as plain integers.
    pub fn format_quantity(&self, value: i64) -> String {
        if self.is_cpu() {
            return if value % 1000 == 0 {
                (value / 1000).to_string()
            } else {
                format!("{value}m")
            };
        }
        if self.is_bytes() && value != 0 {
            for (suffix, shift) in [
                ("Ei", 60),
                ("Pi", 50),
                ("Ti", 40),
                ("Gi", 30),
                ("Mi", 20),
                ("Ki", 10),
            ] {
                let unit = 1i64 << shift;
                if value % unit == 0 {
                    return format!("{}{suffix}", value / unit);
                }
            }
        }
        value.to_string()
    }
}

// === impl Resources ===

/// A small map resource -> amount (in the units of [`ResourceName::parse_quantity`]), kept sorted by name. Pods
/// name two or three resources, so a sorted vector beats a map in size and speed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Resources(Vec<(ResourceName, i64)>);

impl Resources {
    /// Parses a `ResourceList`; entries that are not quantities are skipped.
    pub fn from_list(list: &BTreeMap<String, Quantity>, round: Round) -> Self {
        let mut out = Self::default();
        for (name, q) in list {
            let name = ResourceName::new(name);
            if let Some(v) = name.parse_quantity(&q.0, round) {
                out.add(&name, v);
            }
        }
        out
    }

    /// The amount of `name` (0 when absent).
    pub fn get(&self, name: &ResourceName) -> i64 {
        self.0
            .binary_search_by(|(n, _)| n.cmp(name))
            .map(|i| self.0[i].1)
            .unwrap_or(0)
    }

    /// Whether `name` is present (even with 0).
    pub fn has(&self, name: &ResourceName) -> bool {
        self.0.binary_search_by(|(n, _)| n.cmp(name)).is_ok()
    }

    fn entry(&mut self, name: &ResourceName) -> &mut i64 {
        let i = match self.0.binary_search_by(|(n, _)| n.cmp(name)) {
            Ok(i) => i,
            Err(i) => {
                self.0.insert(i, (name.clone(), 0));
                i
            }
        };
        &mut self.0[i].1
    }

    pub fn add(&mut self, name: &ResourceName, value: i64) {
        let slot = self.entry(name);
        *slot = slot.saturating_add(value);
    }

    pub fn add_all(&mut self, other: &Resources) {
        for (name, value) in &other.0 {
            self.add(name, *value);
        }
    }

    /// Per resource, the larger of the two.
    pub fn max_with(&mut self, other: &Resources) {
        for (name, value) in &other.0 {
            let slot = self.entry(name);
            *slot = (*slot).max(*value);
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (&ResourceName, i64)> {
        self.0.iter().map(|(n, v)| (n, *v))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// As a `ResourceList` of canonical quantities.
    pub fn to_list(&self) -> BTreeMap<String, Quantity> {
        self.0
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), Quantity(n.format_quantity(*v))))
            .collect()
    }

    /// Drops spare capacity: caches keep one of these per pod or node for a long time.
    pub fn compact(mut self) -> Self {
        self.0.shrink_to_fit();
        self
    }
}

// === the pod rule ===

/// One container's request from its `requests` and `limits` entries (name, quantity text):
/// a resource only limited counts its limit, as the API server defaults it. Unparsable
/// quantities count as nothing (the API server would have refused them).
fn container_request<'a>(
    requests: impl Iterator<Item = (&'a str, Cow<'a, str>)>,
    limits: impl Iterator<Item = (&'a str, Cow<'a, str>)>,
) -> Resources {
    let mut out = Resources::default();
    let mut requested: Vec<&str> = Vec::new();
    for (name, text) in requests {
        requested.push(name);
        let name = ResourceName::new(name);
        if let Some(v) = name.parse_quantity(&text, Round::Up) {
            out.add(&name, v);
        }
    }
    for (name, text) in limits {
        if requested.contains(&name) {
            continue;
        }
        let name = ResourceName::new(name);
        if let Some(v) = name.parse_quantity(&text, Round::Up) {
            out.add(&name, v);
        }
    }
    out
}

/// The effective request of a pod from its containers' requests, its init containers'
/// (request, is a sidecar) in order, and its overhead.
fn effective(
    containers: impl Iterator<Item = Resources>,
    init_containers: impl Iterator<Item = (Resources, bool)>,
    overhead: Resources,
) -> Resources {
    let mut sum = Resources::default();
    for c in containers {
        sum.add_all(&c);
    }
    let mut sidecars = Resources::default();
    let mut init_peak = Resources::default();
    for (request, sidecar) in init_containers {
        if sidecar {
            // A sidecar keeps running beside the app containers and later init containers.
            sum.add_all(&request);
            sidecars.add_all(&request);
            init_peak.max_with(&sidecars);
        } else {
            let mut during = request;
            during.add_all(&sidecars);
            init_peak.max_with(&during);
        }
    }
    sum.max_with(&init_peak);
    sum.add_all(&overhead);
    sum
}

fn typed_container_request(c: &Container) -> Resources {
    let Some(res) = &c.resources else {
        return Resources::default();
    };
    container_request(
        typed_entries(res.requests.as_ref()),
        typed_entries(res.limits.as_ref()),
    )
}

fn typed_entries(
    list: Option<&BTreeMap<String, Quantity>>,
) -> impl Iterator<Item = (&str, Cow<'_, str>)> {
    list.into_iter()
        .flatten()
        .map(|(k, q)| (k.as_str(), Cow::Borrowed(q.0.as_str())))
}

/// The effective request of one replica of `spec` (without the `pods` count).
pub fn pod_spec_requests(spec: &PodSpec) -> Resources {
    effective(
        spec.containers.iter().map(typed_container_request),
        spec.init_containers.iter().flatten().map(|c| {
            (
                typed_container_request(c),
                c.restart_policy.as_deref() == Some("Always"),
            )
        }),
        spec.overhead
            .as_ref()
            .map(|o| Resources::from_list(o, Round::Up))
            .unwrap_or_default(),
    )
    .compact()
}

/// A quantity written in JSON: a string, or a bare number (YAML authors write `cpu: 2`).
fn value_quantity(v: &Value) -> Option<Cow<'_, str>> {
    match v {
        Value::String(s) => Some(Cow::Borrowed(s.as_str())),
        Value::Number(n) => Some(Cow::Owned(n.to_string())),
        _ => None,
    }
}

fn value_entries<'a>(list: Option<&'a Value>) -> impl Iterator<Item = (&'a str, Cow<'a, str>)> {
    list.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), value_quantity(v)?)))
}

fn value_container_request(c: &Value) -> Resources {
    container_request(
        value_entries(c.pointer("/resources/requests")),
        value_entries(c.pointer("/resources/limits")),
    )
}

/// [`pod_spec_requests`] for a pod spec held as JSON (`pod["spec"]`), for callers that keep
/// objects untyped and must not pay for a conversion per pod. Fields of the wrong type count
/// as absent.
pub fn pod_spec_value_requests(spec: &Value) -> Resources {
    let list = |key: &str| {
        spec.get(key)
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
    };
    let mut overhead = Resources::default();
    for (name, text) in value_entries(spec.get("overhead")) {
        let name = ResourceName::new(name);
        if let Some(v) = name.parse_quantity(&text, Round::Up) {
            overhead.add(&name, v);
        }
    }
    effective(
        list("containers").iter().map(value_container_request),
        list("initContainers").iter().map(|c| {
            (
                value_container_request(c),
                c.get("restartPolicy").and_then(Value::as_str) == Some("Always"),
            )
        }),
        overhead,
    )
    .compact()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cpu(s: &str, r: Round) -> Option<i64> {
        ResourceName::Cpu.parse_quantity(s, r)
    }

    fn mem(s: &str, r: Round) -> Option<i64> {
        ResourceName::Memory.parse_quantity(s, r)
    }

    #[test]
    fn cpu_in_millicores() {
        assert_eq!(cpu("500m", Round::Up), Some(500));
        assert_eq!(cpu("2", Round::Up), Some(2000));
        assert_eq!(cpu("0.25", Round::Up), Some(250));
        assert_eq!(cpu("1.0005", Round::Up), Some(1001));
        assert_eq!(cpu("1.0005", Round::Down), Some(1000));
        assert_eq!(cpu("1e3", Round::Up), Some(1_000_000));
        assert_eq!(cpu("100u", Round::Up), Some(1));
    }

    #[test]
    fn memory_in_bytes_rounded_as_asked() {
        assert_eq!(mem("128Mi", Round::Up), Some(128 << 20));
        assert_eq!(mem("1G", Round::Up), Some(1_000_000_000));
        assert_eq!(mem("1.5Ki", Round::Up), Some(1536));
        assert_eq!(mem("500m", Round::Up), Some(1));
        assert_eq!(mem("500m", Round::Down), Some(0));
        assert_eq!(mem("-1.5", Round::Up), Some(-1));
        assert_eq!(mem("-1.5", Round::Down), Some(-2));
        assert_eq!(mem("", Round::Up), None);
        assert_eq!(mem(".", Round::Up), None);
        assert_eq!(mem("1.2.3", Round::Up), None);
        assert_eq!(mem("12Zi", Round::Up), None);
        assert_eq!(
            mem("99999999999Ei", Round::Up),
            Some(i64::MAX),
            "absurd values saturate"
        );
    }

    #[test]
    fn canonical_output() {
        assert_eq!(ResourceName::Cpu.format_quantity(8000), "8");
        assert_eq!(ResourceName::Cpu.format_quantity(1500), "1500m");
        assert_eq!(ResourceName::Cpu.format_quantity(0), "0");
        assert_eq!(ResourceName::Memory.format_quantity(32 << 30), "32Gi");
        assert_eq!(ResourceName::Memory.format_quantity(1536), "1536");
        assert_eq!(ResourceName::Memory.format_quantity(3 << 10), "3Ki");
        assert_eq!(
            ResourceName::Memory.format_quantity(1_000_000_000),
            "1000000000"
        );
        assert_eq!(ResourceName::Pods.format_quantity(110), "110");
        assert_eq!(
            ResourceName::EphemeralStorage.format_quantity(100 << 30),
            "100Gi"
        );
        for v in [0, 1, 999, 1 << 20, (5 << 30) + 7] {
            let text = ResourceName::Memory.format_quantity(v);
            assert_eq!(mem(&text, Round::Up), Some(v), "{text}");
        }
    }

    fn typed(spec: &Value) -> Resources {
        let spec: PodSpec = serde_json::from_value(spec.clone()).unwrap();
        pod_spec_requests(&spec)
    }

    /// (cpu millis, memory bytes) of a result, 0 when absent.
    fn cm(r: &Resources) -> (i64, i64) {
        (r.get(&ResourceName::Cpu), r.get(&ResourceName::Memory))
    }

    #[test]
    fn pod_rule_table_typed_and_untyped_agree() {
        let cases: Vec<(&str, Value, (i64, i64))> = vec![
            ("no containers", json!({"containers": []}), (0, 0)),
            (
                "missing requests",
                json!({"containers": [{"name": "a"}, {"name": "b", "resources": {}}]}),
                (0, 0),
            ),
            (
                "sum of containers",
                json!({"containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "1", "memory": "64Mi"}}},
                ]}),
                (1250, 128 << 20),
            ),
            (
                "limits only count as requests",
                json!({"containers": [
                    {"name": "a", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}},
                ]}),
                (500, 1 << 30),
            ),
            (
                "a request wins over its limit; other limits fill in",
                json!({"containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "2", "memory": "256Mi"}}},
                ]}),
                (100, 256 << 20),
            ),
            (
                "init container peak above the app",
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}],
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1", "memory": "32Mi"}}}],
                }),
                (1000, 64 << 20),
            ),
            (
                "sidecars add to the app and to later init containers",
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [
                        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "50m"}}},
                        {"name": "init", "resources": {"requests": {"cpu": "500m"}}},
                    ],
                }),
                (550, 0),
            ),
            (
                "an init container started before a sidecar runs without it",
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [
                        {"name": "init", "resources": {"requests": {"cpu": "500m"}}},
                        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "450m"}}},
                    ],
                }),
                (550, 0),
            ),
            (
                "init containers run one at a time: the largest counts, not their sum",
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [
                        {"name": "i1", "resources": {"requests": {"cpu": "300m"}}},
                        {"name": "i2", "resources": {"requests": {"cpu": "400m"}}},
                    ],
                }),
                (400, 0),
            ),
            (
                "overhead on top of the init peak",
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "1"}}}],
                    "overhead": {"cpu": "10m"},
                }),
                (1010, 0),
            ),
            (
                "overhead on top",
                json!({
                    "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}],
                    "overhead": {"cpu": "10m", "memory": "1Mi"},
                }),
                (110, 1 << 20),
            ),
            (
                "requests round up",
                json!({"containers": [{"name": "a", "resources": {"requests": {"cpu": "0.0001", "memory": "0.5"}}}]}),
                (1, 1),
            ),
        ];
        for (name, spec, want) in cases {
            assert_eq!(cm(&typed(&spec)), want, "typed: {name}");
            assert_eq!(cm(&pod_spec_value_requests(&spec)), want, "value: {name}");
            assert_eq!(typed(&spec), pod_spec_value_requests(&spec), "{name}");
        }
    }

    #[test]
    fn untyped_specs_tolerate_numbers_and_garbage() {
        let spec = json!({"containers": [
            {"name": "a", "resources": {"requests": {"cpu": 2, "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": "nonsense"}},
            {"name": "c", "resources": {"requests": {"cpu": "not-a-quantity"}}},
        ]});
        assert_eq!(cm(&pod_spec_value_requests(&spec)), (2000, 1 << 30));
        assert!(pod_spec_value_requests(&json!(null)).is_empty());
        assert!(pod_spec_value_requests(&json!({"containers": 3})).is_empty());
    }

    #[test]
    fn extended_resources_are_kept() {
        let spec = json!({"containers": [
            {"name": "a", "resources": {"limits": {"nvidia.com/gpu": "1"}}},
            {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "2"}}},
        ]});
        let r = pod_spec_value_requests(&spec);
        assert_eq!(r.get(&ResourceName::new("nvidia.com/gpu")), 3);
        assert_eq!(
            r.to_list().get("nvidia.com/gpu"),
            Some(&Quantity("3".into()))
        );
    }

    #[test]
    fn resources_stay_sorted_and_add() {
        let mut r = Resources::default();
        r.add(&ResourceName::new("nvidia.com/gpu"), 1);
        r.add(&ResourceName::Pods, 2);
        r.add(&ResourceName::Cpu, 3);
        r.add(&ResourceName::Cpu, 4);
        let names: Vec<&str> = r.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["cpu", "pods", "nvidia.com/gpu"]);
        assert_eq!(r.get(&ResourceName::Cpu), 7);
        assert_eq!(r.get(&ResourceName::Memory), 0);
        assert!(r.has(&ResourceName::Pods) && !r.has(&ResourceName::Memory));
        assert!(ResourceName::new("hugepages-2Mi").is_bytes());
        let mut m = Resources::default();
        m.add(&ResourceName::Cpu, 10);
        m.add(&ResourceName::Memory, 5);
        r.max_with(&m);
        assert_eq!(
            (r.get(&ResourceName::Cpu), r.get(&ResourceName::Memory)),
            (10, 5)
        );
        r.add(&ResourceName::Cpu, i64::MAX);
        assert_eq!(r.get(&ResourceName::Cpu), i64::MAX, "saturates");
    }
}
