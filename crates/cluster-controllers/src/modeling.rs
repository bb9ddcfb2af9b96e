//! Karmada's cluster resource modeling: `status.resourceSummary.allocatableModelings`, how
//! many of a member's nodes fall in each grade of the Cluster's `spec.resourceModels`.
//!
//! How a node is graded (Karmada's rule, `pkg/modeling`): the grades are read as ordered
//! intervals per resource, each starting at its `min` and ending where the next grade's
//! starts (`max` is not consulted, so the last grade has no upper bound). For each resource
//! the node lands in the last grade whose `min` is at most what the node has free; the node's
//! grade is the lowest of those, because a grade promises every one of its resources. A node
//! below the first grade's `min` in any resource is counted nowhere. A resource the node
//! does not report counts as zero.
//!
//! Which nodes count: Ready nodes that are not cordoned, with their free capacity
//! (allocatable minus the requests of their unfinished pods), skipping nodes whose pod slots
//! are all taken — they can take nothing more, whatever their CPU or memory.

use flotilla_karmada_api::cluster::{AllocatableModeling, ResourceModel};

use flotilla_apimachinery::quantity::Round;
use flotilla_pod_resources::{ResourceName, Resources};

/// Why a Cluster's `spec.resourceModels` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("grade {grade} has no resource ranges")]
    NoRanges { grade: u32 },
    #[error("grade {grade} does not name the same resources as grade {first}")]
    MismatchedResources { grade: u32, first: u32 },
    #[error("grade {grade} has an invalid min {min:?} for {resource}")]
    InvalidMin {
        grade: u32,
        resource: String,
        min: String,
    },
}

/// Parsed resource models, ready to grade nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grades {
    /// Grade numbers, in spec order.
    grades: Vec<u32>,
    /// The resources every grade names.
    names: Vec<ResourceName>,
    /// `mins[i][r]`: the min of grade `i` for `names[r]`.
    mins: Vec<Vec<i64>>,
}

impl Grades {
    /// Parses `models`; every grade must name the same resources.
    pub fn new(models: &[ResourceModel]) -> Result<Self, ModelError> {
        let mut names: Vec<ResourceName> = Vec::new();
        let mut grades = Vec::with_capacity(models.len());
        let mut mins = Vec::with_capacity(models.len());
        for (i, model) in models.iter().enumerate() {
            if model.ranges.is_empty() {
                return Err(ModelError::NoRanges { grade: model.grade });
            }
            let mut these: Vec<ResourceName> = model
                .ranges
                .iter()
                .map(|r| ResourceName::new(&r.name))
                .collect();
            these.sort();
            these.dedup();
            if i == 0 {
                names = these;
            } else if these != names || model.ranges.len() != names.len() {
                return Err(ModelError::MismatchedResources {
                    grade: model.grade,
                    first: models[0].grade,
                });
            }
            let mut row = Vec::with_capacity(names.len());
            for name in &names {
                let range = model
                    .ranges
                    .iter()
                    .find(|r| ResourceName::new(&r.name) == *name)
                    .ok_or(ModelError::MismatchedResources {
                        grade: model.grade,
                        first: models[0].grade,
                    })?;
                // Up: a fractional min is only reached by the next whole unit.
                let min = name
                    .parse_quantity(&range.min.0, Round::Up)
                    .ok_or_else(|| ModelError::InvalidMin {
                        grade: model.grade,
                        resource: range.name.clone(),
                        min: range.min.0.clone(),
                    })?;
                row.push(min);
            }
            grades.push(model.grade);
            mins.push(row);
        }
        Ok(Self {
            grades,
            names,
            mins,
        })
    }

    /// The index (in spec order) of the grade `free` falls in, if any.
    pub fn index_of(&self, free: &Resources) -> Option<usize> {
        let mut lowest: Option<usize> = None;
        for (r, name) in self.names.iter().enumerate() {
            let have = free.get(name);
            let this = self.mins.iter().rposition(|row| row[r] <= have)?;
            lowest = Some(lowest.map_or(this, |l| l.min(this)));
        }
        lowest
    }

    /// One entry per grade, in spec order (zero counts included), counting `nodes` — the
    /// free capacity of each schedulable node.
    pub fn count<'a>(
        &self,
        nodes: impl IntoIterator<Item = &'a Resources>,
    ) -> Vec<AllocatableModeling> {
        let mut counts = vec![0i64; self.grades.len()];
        for free in nodes {
            if free.has(&ResourceName::Pods) && free.get(&ResourceName::Pods) <= 0 {
                continue;
            }
            if let Some(i) = self.index_of(free) {
                counts[i] += 1;
            }
        }
        self.grades
            .iter()
            .zip(counts)
            .map(|(&grade, count)| AllocatableModeling { grade, count })
            .collect()
    }
}

/// `allocatableModelings` for `models` and the free capacity of the schedulable nodes: empty
/// without models; `Err` when the models are unusable.
pub fn allocatable_modelings<'a>(
    models: &[ResourceModel],
    nodes: impl IntoIterator<Item = &'a Resources>,
) -> Result<Vec<AllocatableModeling>, ModelError> {
    Ok(parse(models)?.map(|g| g.count(nodes)).unwrap_or_default())
}

/// `models` parsed once, for a Cluster kept between syncs; `None` when it has none (nothing
/// is then counted).
pub fn parse(models: &[ResourceModel]) -> Result<Option<Grades>, ModelError> {
    if models.is_empty() {
        return Ok(None);
    }
    Grades::new(models).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Karmada's default models, as the aggregated server fills them in.
    fn defaults() -> Vec<ResourceModel> {
        let cpu = ["0", "1", "2", "4", "8", "16", "32", "64", "128"];
        let mem = [
            "0", "4Gi", "16Gi", "32Gi", "64Gi", "128Gi", "256Gi", "512Gi", "1024Gi",
        ];
        (0..9)
            .map(|g| {
                let next = |a: &[&'static str]| -> &'static str {
                    a.get(g + 1).copied().unwrap_or("9223372036854775807")
                };
                serde_json::from_value(json!({"grade": g, "ranges": [
                    {"name": "cpu", "min": cpu[g], "max": next(&cpu)},
                    {"name": "memory", "min": mem[g], "max": next(&mem)},
                ]}))
                .unwrap()
            })
            .collect()
    }

    fn free(cpu_millis: i64, memory: i64, pods: Option<i64>) -> Resources {
        let mut r = Resources::default();
        r.add(&ResourceName::Cpu, cpu_millis);
        r.add(&ResourceName::Memory, memory);
        if let Some(p) = pods {
            r.add(&ResourceName::Pods, p);
        }
        r
    }

    const GI: i64 = 1 << 30;

    #[test]
    fn grade_is_the_lowest_of_the_per_resource_grades() {
        let g = Grades::new(&defaults()).unwrap();
        // (cpu millis, memory bytes) -> grade index
        let table = [
            (0, 0, Some(0)),
            (999, 100 * GI, Some(0)), // cpu below 1 core keeps it in grade 0
            (1000, 4 * GI - 1, Some(0)), // memory just under 4Gi
            (1000, 4 * GI, Some(1)),  // both exactly at grade 1's mins
            (1999, 15 * GI, Some(1)), // upper ends are exclusive
            (2000, 16 * GI, Some(2)),
            (4000, 8 * GI, Some(1)),  // 4 cores alone would be grade 3
            (8000, 16 * GI, Some(2)), // memory limits
            (16_000, 32 * GI, Some(3)),
            (127_000, 1000 * GI, Some(7)),   // both in grade 7
            (1_000_000, 4096 * GI, Some(8)), // the last grade has no upper bound
        ];
        for (cpu, mem, want) in table {
            assert_eq!(g.index_of(&free(cpu, mem, None)), want, "{cpu}m {mem}B");
        }
    }

    #[test]
    fn below_the_first_min_counts_nowhere() {
        let mut models = defaults();
        models[0].ranges[0].min =
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("500m".into());
        let g = Grades::new(&models).unwrap();
        assert_eq!(g.index_of(&free(499, 100 * GI, None)), None);
        assert_eq!(g.index_of(&free(500, 100 * GI, None)), Some(0));
        // A resource the node does not report is zero.
        assert_eq!(g.index_of(&Resources::default()), None);
    }

    #[test]
    fn counts_every_grade_in_order_and_skips_full_nodes() {
        let nodes = [
            free(4000, 8 * GI, Some(110)),  // grade 1
            free(1000, 6 * GI, Some(108)),  // grade 1
            free(8000, 16 * GI, Some(110)), // grade 2
            free(8000, 16 * GI, Some(0)),   // no pod slot left: skipped
            free(500, GI, None),            // grade 0 (no pods resource: not skipped)
        ];
        let out = allocatable_modelings(&defaults(), &nodes).unwrap();
        let counts: Vec<(u32, i64)> = out.iter().map(|m| (m.grade, m.count)).collect();
        assert_eq!(
            counts,
            [
                (0, 1),
                (1, 2),
                (2, 1),
                (3, 0),
                (4, 0),
                (5, 0),
                (6, 0),
                (7, 0),
                (8, 0)
            ]
        );
        assert_eq!(allocatable_modelings(&[], &nodes).unwrap(), vec![]);
    }

    #[test]
    fn unusable_models_are_errors() {
        let mut models = defaults();
        models[3].ranges.pop();
        assert_eq!(
            Grades::new(&models),
            Err(ModelError::MismatchedResources { grade: 3, first: 0 })
        );
        let mut models = defaults();
        models[2].ranges[1].name = "ephemeral-storage".into();
        assert!(matches!(
            Grades::new(&models),
            Err(ModelError::MismatchedResources { grade: 2, .. })
        ));
        let mut models = defaults();
        models[1].ranges[0].min =
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("lots".into());
        assert!(matches!(
            Grades::new(&models),
            Err(ModelError::InvalidMin { grade: 1, .. })
        ));
        let empty: ResourceModel =
            serde_json::from_value(json!({"grade": 0, "ranges": []})).unwrap();
        assert_eq!(
            Grades::new(&[empty]),
            Err(ModelError::NoRanges { grade: 0 })
        );
    }
}
