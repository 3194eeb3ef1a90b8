//! The validated experiment. The types its matrix is made of (file systems, states, workloads,
//! cells, the plan) are fsage-results', re-exported here.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use fsage_results::experiment::spec::*;

/// A parsed, validated experiment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentSpec {
    pub name: String,
    pub description: String,
    /// The file it was read from.
    pub origin: String,
    pub file_systems: Vec<FsSpec>,
    pub states: Vec<StateSpec>,
    /// The devices of `[devices] latencies` and `ranges`, each a model: `None` is a plain image
    /// without the slow device, a latency is the `fixed` model of that latency
    /// ([`fsage_device::ModelSpec::fixed`]). `None` first, then the latencies fastest to
    /// slowest, then the other models (`hdd-7200`, a model file) in the order given, so that
    /// their cells come after the latencies' in each comparison.
    pub devices: Vec<Option<fsage_device::ModelSpec>>,
    /// The drives of the cells on models that keep state (`[devices] drives`): `None` is each
    /// file system's own drive; the default is that alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drives: Vec<Option<DriveSpec>>,
    /// Where aged states are aged on a model that keeps state (`[devices] age_on`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub age_on: AgeOn,
    /// How each cell's image reaches a drive that keeps state, crossed (`[devices] copy` and
    /// `drive`); empty: the drive its aging left, not copied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placements: Vec<Placement>,
    pub workloads: Vec<WorkloadSpec>,
    pub duration_s: f64,
    pub warmup_s: f64,
    pub repetitions: u32,
    pub cache_ratio: Option<f64>,
    /// Each cell's workload records a time series every this many seconds (`sample = "1s"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sample_s: Option<f64>,
    /// Each cell's workload records lock contention by lock instance over its measured phase
    /// (`lock_stats = true`: the kernel's lock:contention_begin/end tracepoints).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lock_stats: bool,
    pub seed: u64,
    pub image_size: u64,
    /// The profile files of the aged states, by state label (built-in profiles have none).
    #[serde(default)]
    pub profile_files: BTreeMap<String, ProfileFile>,
}

fn is_default<T: Default + PartialEq>(v: &T) -> bool {
    *v == T::default()
}

/// Where `c`'s steps run: as planned ([`Cell::runs`]), or, for a plan that did not record it,
/// in a guest when its `[[fs]]` names a kernel or this kernel lacks it.
pub fn runs_of(c: &Cell) -> Runs {
    c.runs
        .clone()
        .unwrap_or_else(|| fsage_host::decide(&c.fs.kind, c.fs.kernel.as_deref()))
}
