//! Resource vectors: a `ResourceList` turned into integers once, so that capacity arithmetic
//! in the hot path is integer-only.
//!
//! Units: `memory`, `ephemeral-storage`, `storage` and `hugepages-*` in bytes, `pods` as a
//! count, `cpu` and every other resource in milli-units (so fractional extended resources keep
//! their precision). Requests round up and capacities round down, so estimates stay safe.

use flotilla_karmada_api::ResourceList;

use crate::SchedulerError;

/// Index of `cpu` in the fixed slots.
const CPU: usize = 0;
/// Index of `memory` in the fixed slots.
const MEMORY: usize = 1;
/// Index of `pods` in the fixed slots.
pub(crate) const PODS: usize = 2;
/// Index of `ephemeral-storage` in the fixed slots.
const EPHEMERAL: usize = 3;
/// Number of fixed slots.
pub(crate) const FIXED: usize = 4;

pub(crate) use flotilla_apimachinery::quantity::Round;

/// Per-resource integer amounts. Absent resources are 0.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ResourceVector {
    /// `cpu`, `memory`, `pods`, `ephemeral-storage`, in their integer units.
    pub(crate) fixed: [i64; FIXED],
    /// Other resources, sorted by name, without zero entries.
    pub(crate) extended: Vec<(String, i64)>,
}

impl ResourceVector {
    /// An empty vector (no resources).
    pub fn new() -> Self {
        Self::default()
    }

    /// Parses a request (`replicaRequirements.resourceRequest`), rounding up.
    pub fn from_resource_list(list: &ResourceList) -> Result<ResourceVector, SchedulerError> {
        let mut v = ResourceVector::new();
        for (name, q) in list {
            let value = parse_quantity(&q.0, is_milli(name), Round::Up).ok_or_else(|| {
                SchedulerError::InvalidQuantity {
                    resource: name.clone(),
                    value: q.0.clone(),
                }
            })?;
            v.set(name, value);
        }
        Ok(v)
    }

    /// Parses a capacity, rounding down; unparsable entries count as 0 (none available).
    pub(crate) fn from_capacity_list(list: &ResourceList, round: Round) -> ResourceVector {
        let mut v = ResourceVector::new();
        for (name, q) in list {
            v.set(
                name,
                parse_quantity(&q.0, is_milli(name), round).unwrap_or(0),
            );
        }
        v
    }

    /// Sets one resource, in its integer unit (milli-cpu, bytes, pods...).
    pub fn set(&mut self, name: &str, value: i64) {
        if let Some(i) = fixed_slot(name) {
            self.fixed[i] = value;
            return;
        }
        match self
            .extended
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
        {
            Ok(i) if value == 0 => {
                self.extended.remove(i);
            }
            Ok(i) => self.extended[i].1 = value,
            Err(_) if value == 0 => {}
            Err(i) => self.extended.insert(i, (name.to_owned(), value)),
        }
    }

    /// Builder form of [`ResourceVector::set`].
    pub fn with(mut self, name: &str, value: i64) -> Self {
        self.set(name, value);
        self
    }

    /// One resource, in its integer unit; 0 when absent.
    pub fn get(&self, name: &str) -> i64 {
        match fixed_slot(name) {
            Some(i) => self.fixed[i],
            None => self.extended_get(name),
        }
    }

    pub(crate) fn extended_get(&self, name: &str) -> i64 {
        self.extended
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .map_or(0, |i| self.extended[i].1)
    }

    /// Whether no resource is set.
    pub fn is_empty(&self) -> bool {
        self.fixed.iter().all(|v| *v == 0) && self.extended.is_empty()
    }

    /// `self += other * times` (saturating), resource by resource.
    pub(crate) fn add_scaled(&mut self, other: &ResourceVector, times: i64) {
        for i in 0..FIXED {
            self.fixed[i] = self.fixed[i].saturating_add(other.fixed[i].saturating_mul(times));
        }
        for (name, v) in &other.extended {
            let cur = self.extended_get(name);
            self.set(name, cur.saturating_add(v.saturating_mul(times)));
        }
    }

    /// The request actually charged per replica: like `self`, with at least one pod.
    pub(crate) fn effective_request(&self) -> ResourceVector {
        let mut r = self.clone();
        r.fixed[PODS] = r.fixed[PODS].max(1);
        r
    }

    /// How many copies of `request` fit in `self - minus` (0 when a requested resource is
    /// missing). `request` must be an [effective request](Self::effective_request), so that
    /// the pod slot bounds the result.
    pub(crate) fn fits(&self, minus: Option<&ResourceVector>, request: &ResourceVector) -> i64 {
        let mut best = i64::MAX;
        for i in 0..FIXED {
            let r = request.fixed[i];
            if r <= 0 {
                continue;
            }
            let avail = self.fixed[i].saturating_sub(minus.map_or(0, |m| m.fixed[i]));
            if avail < r {
                return 0;
            }
            best = best.min(avail / r);
        }
        for (name, r) in &request.extended {
            if *r <= 0 {
                continue;
            }
            let avail = self
                .extended_get(name)
                .saturating_sub(minus.map_or(0, |m| m.extended_get(name)));
            if avail < *r {
                return 0;
            }
            best = best.min(avail / r);
        }
        if best == i64::MAX { 0 } else { best }
    }

    /// The smallest number of replicas of `request` that accounts for `used`, resource by
    /// resource: max over requested r of ceil(used_r / request_r).
    pub(crate) fn replicas_worth(used: &ResourceVector, request: &ResourceVector) -> i64 {
        let mut worst = 0i64;
        for i in 0..FIXED {
            let r = request.fixed[i];
            if r > 0 && used.fixed[i] > 0 {
                worst = worst.max(ceil_div(used.fixed[i], r));
            }
        }
        for (name, r) in &request.extended {
            let u = used.extended_get(name);
            if *r > 0 && u > 0 {
                worst = worst.max(ceil_div(u, *r));
            }
        }
        worst
    }
}

fn ceil_div(a: i64, b: i64) -> i64 {
    a / b + i64::from(a % b != 0)
}

fn fixed_slot(name: &str) -> Option<usize> {
    match name {
        "cpu" => Some(CPU),
        "memory" => Some(MEMORY),
        "pods" => Some(PODS),
        "ephemeral-storage" => Some(EPHEMERAL),
        _ => None,
    }
}

/// Whether a resource is counted in milli-units (everything but byte sizes and pods).
fn is_milli(name: &str) -> bool {
    !(matches!(name, "memory" | "ephemeral-storage" | "storage" | "pods")
        || name.starts_with("hugepages-"))
}

/// Parses a Kubernetes quantity into an integer in units (or milli-units), rounding as asked
/// and saturating at the i64 range.
pub(crate) fn parse_quantity(text: &str, milli: bool, round: Round) -> Option<i64> {
    flotilla_apimachinery::quantity::parse(text, milli, round)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    #[test]
    fn resource_list_units() {
        let list: ResourceList = [
            ("cpu", "250m"),
            ("memory", "1Gi"),
            ("nvidia.com/gpu", "1"),
            ("hugepages-2Mi", "4Mi"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), Quantity(v.to_owned())))
        .collect();
        let v = ResourceVector::from_resource_list(&list).unwrap();
        assert_eq!(v.get("cpu"), 250);
        assert_eq!(v.get("memory"), 1 << 30);
        assert_eq!(v.get("nvidia.com/gpu"), 1000);
        assert_eq!(v.get("hugepages-2Mi"), 4 << 20);
        assert_eq!(v.get("pods"), 0);
        let bad: ResourceList = [("cpu".to_owned(), Quantity("lots".to_owned()))].into();
        assert!(matches!(
            ResourceVector::from_resource_list(&bad),
            Err(SchedulerError::InvalidQuantity { .. })
        ));
    }

    #[test]
    fn fits_takes_the_scarcest_resource() {
        let free = ResourceVector::new()
            .with("cpu", 4000)
            .with("memory", 10)
            .with("pods", 100)
            .with("gpu", 3000);
        let req = ResourceVector::new().with("cpu", 1000).effective_request();
        assert_eq!(free.fits(None, &req), 4);
        let req = req.with("memory", 3);
        assert_eq!(free.fits(None, &req), 3);
        let req = req.with("gpu", 2000);
        assert_eq!(free.fits(None, &req), 1);
        let req = req.with("fpga", 1);
        assert_eq!(free.fits(None, &req), 0);
        // Only pods limit an empty request.
        assert_eq!(
            free.fits(None, &ResourceVector::new().effective_request()),
            100
        );
        let minus = ResourceVector::new().with("cpu", 3500);
        let req = ResourceVector::new().with("cpu", 1000).effective_request();
        assert_eq!(free.fits(Some(&minus), &req), 0);
    }
}
