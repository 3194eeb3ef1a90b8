//! What the analyses of an experiment take and give, as plain serde data: the samples
//! ([`Sample`], [`State`]), their options, and the analysis JSON ([`Analysis`]: means, aged
//! against fresh, rank orders, per-flowop latencies, latency sweeps and inversions), with the
//! percentile curves ([`latency_curves`]) and the verdicts against fresh ([`verdicts`]). The
//! analyses themselves, pure functions of these, are fsage-analysis'.

pub mod latency_curves;
pub mod stats;
pub mod sweep;
pub mod verdicts;

pub use stats::{t975, MeanCi};
pub use sweep::{Inversion, ModelFit, SweepClass, SweepFit, SweepPoint};

use serde::{Deserialize, Serialize};

/// Version of the analysis JSON layout.
pub const ANALYSIS_FORMAT: u32 = 1;

/// The state a file system was benchmarked in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum State {
    /// Freshly formatted.
    Fresh,
    /// Aged by `fsage age` with a profile (the label tells apart the same profile with other
    /// options, e.g. `meyer-0.9`).
    Aged { profile: String, label: String },
    /// An aged image restored from the library.
    Image { name: String },
    /// A file system state on a drive that is not its own (an SSD model's drive state:
    /// `erased`, or the drive an aged state aged, `aged.LABEL`). Compared against fresh like an
    /// aged state: it is one of the two agings Geriatrix separates.
    OnDrive { fs: Box<State>, drive: String },
}

impl State {
    pub fn is_fresh(&self) -> bool {
        matches!(self, State::Fresh)
    }
    /// Short name for tables and legends: `fresh`, `aged:LABEL`, `image:NAME`.
    pub fn label(&self) -> String {
        match self {
            State::Fresh => "fresh".into(),
            State::Aged { label, .. } => format!("aged:{label}"),
            State::Image { name } => format!("image:{name}"),
            State::OnDrive { fs, drive } => format!("{} on drive {drive}", fs.label()),
        }
    }
}

/// Tail latency of one flowop in one repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowopLatency {
    pub flowop: String,
    pub p99_us: f64,
    pub max_us: f64,
}

/// One repetition of one workload on one file system in one state at one device latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// File system label (e.g. `ext4`, or `ext4-nojournal` for one with mkfs options).
    pub fs: String,
    pub state: State,
    pub workload: String,
    /// Added device latency in µs; `None` when no slow device was used (a plain image) or the
    /// device ran a model.
    pub latency_us: Option<f64>,
    /// The device model the cell ran on (`hdd-7200`), by name; then `latency_us` is `None`. A
    /// model is not a point on the latency axis: its groups are compared aged against fresh and
    /// ranked, but left out of sweeps and inversions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<String>,
    pub rep: u32,
    pub ops_per_s: f64,
    #[serde(default)]
    pub flowops: Vec<FlowopLatency>,
    /// An SSD model's counters over the cell (absent on other devices).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flash: Option<FlashCounters>,
    /// Where the cell's workload ran: absent (native) unless in a VM. Samples of different
    /// platforms are analysed apart: emulated timings compare only with each other.
    #[serde(default, skip_serializing_if = "fsage_sys::PlatformKind::is_native")]
    pub platform: fsage_sys::PlatformKind,
}

/// What an SSD model's drive did during one cell: the pages the host wrote, the pages
/// programmed (the host's and garbage collection's), the pages collection copied, the blocks
/// erased, the seconds the dies spent collecting, and the free blocks left at the end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlashCounters {
    pub host_pages: u64,
    pub programs: u64,
    pub gc_copies: u64,
    pub erases: u64,
    pub gc_s: f64,
    pub free_blocks: u64,
}

impl From<&fsage_device::ssd::SsdCounters> for FlashCounters {
    fn from(m: &fsage_device::ssd::SsdCounters) -> Self {
        FlashCounters {
            host_pages: m.host_pages,
            programs: m.programs,
            gc_copies: m.gc_copies,
            erases: m.erases,
            gc_s: m.gc_ns as f64 / 1e9,
            free_blocks: m.free_blocks,
        }
    }
}

impl FlashCounters {
    /// Pages programmed per page the host wrote (none before it wrote any).
    pub fn write_amplification(&self) -> Option<f64> {
        (self.host_pages > 0).then(|| self.programs as f64 / self.host_pages as f64)
    }
}

/// Means over the repetitions of a group of the drive's counters (see [`FlashCounters`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlashMeans {
    /// Total pages programmed / total host pages over the repetitions.
    pub write_amplification: Option<f64>,
    pub gc_copies: f64,
    pub erases: f64,
    pub gc_s: f64,
    pub free_blocks: f64,
}

impl FlashMeans {
    /// The means of `xs`' counters (`None` for none): a group's drive, for the analyses.
    pub fn of(xs: &[&FlashCounters]) -> Option<FlashMeans> {
        if xs.is_empty() {
            return None;
        }
        let n = xs.len() as f64;
        let sum = |f: &dyn Fn(&FlashCounters) -> f64| xs.iter().map(|x| f(x)).sum::<f64>();
        let host = sum(&|x| x.host_pages as f64);
        Some(FlashMeans {
            write_amplification: (host > 0.0).then(|| sum(&|x| x.programs as f64) / host),
            gc_copies: sum(&|x| x.gc_copies as f64) / n,
            erases: sum(&|x| x.erases as f64) / n,
            gc_s: sum(&|x| x.gc_s) / n,
            free_blocks: sum(&|x| x.free_blocks as f64) / n,
        })
    }
}

/// Settings of the analyses; the defaults are the slippery-slope study's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisOptions {
    /// The two device latencies (µs) the model is calibrated on.
    pub calibration_us: (f64, f64),
    /// Relative distance from the model still counted as "on the model" (0.10 = ±10%).
    pub tolerance: f64,
    /// Latency (µs) separating the range where class I follows the model from the one where it
    /// falls below (the study's 1 ms).
    pub knee_us: f64,
    /// Relative difference of means below which two file systems count as tied (no order, so no
    /// inversion); intervals that overlap also count as tied.
    pub inversion_margin: f64,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            calibration_us: (5000.0, 10000.0),
            tolerance: 0.10,
            knee_us: 1000.0,
            inversion_margin: 0.02,
        }
    }
}

/// Mean ops/s of one group of repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupMean {
    pub fs: String,
    pub state: State,
    pub workload: String,
    pub latency_us: Option<f64>,
    /// The device model, by name (then `latency_us` is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<String>,
    pub ops_per_s: MeanCi,
    /// The SSD drive's counters, averaged (on an SSD model only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flash: Option<FlashMeans>,
}

/// One aged state against the fresh state of the same file system, workload and latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgedVsFresh {
    pub fs: String,
    pub workload: String,
    pub latency_us: Option<f64>,
    /// The device model, by name (then `latency_us` is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<String>,
    pub state: State,
    pub fresh: MeanCi,
    pub aged: MeanCi,
    /// (fresh - aged) / fresh in percent: positive when aging made it slower.
    pub slowdown_percent: f64,
    /// Whether the two 95% intervals are apart (the difference is more than noise); false when
    /// either side has no interval (one repetition): no verdict about noise is possible then
    /// ([`AgedVsFresh::no_interval`]).
    pub significant: bool,
    /// The drive's write amplification fresh and aged (on an SSD model only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_wa: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aged_wa: Option<f64>,
}

impl AgedVsFresh {
    /// Either side rests on one repetition, so it has no interval and nothing can be said about
    /// noise.
    pub fn no_interval(&self) -> bool {
        self.fresh.ci95.is_none() || self.aged.ci95.is_none()
    }
}

/// The order of the file systems (fastest first) in one state, against the fresh order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankOrder {
    pub workload: String,
    pub latency_us: Option<f64>,
    /// The device model, by name (then `latency_us` is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<String>,
    pub state: State,
    /// File systems, fastest first.
    pub order: Vec<String>,
    /// The fresh order of the same file systems (empty when there is no fresh state).
    pub fresh_order: Vec<String>,
    /// The rank order really changed: some pair of file systems is in the other order than
    /// fresh, and the pair is apart in both states (both 95% intervals exist, from two or more
    /// repetitions, and do not overlap). Only this is flagged.
    pub changed: bool,
    /// The order of the means differs from the fresh one, but no swapped pair is apart in both
    /// states: the swap is within noise, not a rank change.
    #[serde(default)]
    pub within_noise: bool,
}

/// One flowop's tail latency, aged against fresh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowopCompare {
    pub fs: String,
    pub workload: String,
    pub latency_us: Option<f64>,
    /// The device model, by name (then `latency_us` is `None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_model: Option<String>,
    pub state: State,
    pub flowop: String,
    /// Mean over repetitions of each repetition's p99, in µs.
    pub fresh_p99_us: Option<f64>,
    pub aged_p99_us: f64,
    /// Largest latency over all repetitions, in µs.
    pub fresh_max_us: Option<f64>,
    pub aged_max_us: f64,
    /// aged / fresh p99.
    pub p99_ratio: Option<f64>,
    pub max_ratio: Option<f64>,
}

/// Everything [`analyze`] finds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub format: u32,
    pub options: AnalysisOptions,
    pub samples: usize,
    pub means: Vec<GroupMean>,
    pub aged_vs_fresh: Vec<AgedVsFresh>,
    pub ranks: Vec<RankOrder>,
    pub flowops: Vec<FlowopCompare>,
    pub sweeps: Vec<SweepFit>,
    pub inversions: Vec<Inversion>,
    /// Samples left out, and why (NaN or negative throughput); device models left out of the
    /// sweeps, by name.
    pub notes: Vec<String>,
}
