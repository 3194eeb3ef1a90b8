//! The report of an aging run: plain serde data, owned by the crate that produces it. Text, JSON
//! and HTML exporters live in `fsage-report`.

use serde::{Deserialize, Serialize};

/// Why the run ended. Any one stopping condition ends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// All T ticks of the convergence theorem done.
    Converged,
    MaxTime,
    MaxOverwrites,
    Confidence,
    MaxOps,
    /// Nothing live and no file fits any more.
    NothingFits,
    /// SIGINT or SIGTERM.
    Interrupted,
    /// An I/O error other than a full file system.
    IoError,
    /// A source with a fixed list of steps (an op log) carried them all out.
    Completed,
}

impl StopReason {
    /// Why the run ended, in words (no command-line flags: the text exporters add those).
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Converged => "all T ticks of the convergence theorem done",
            StopReason::MaxTime => "the time limit reached",
            StopReason::MaxOverwrites => "the overwrite limit reached",
            StopReason::Confidence => {
                "the confidence asked for reached by the age histogram's chi-squared fit"
            }
            StopReason::MaxOps => "the operation limit reached",
            StopReason::NothingFits => "no file fits any more and nothing is left to delete",
            StopReason::Interrupted => "interrupted by a signal",
            StopReason::IoError => "an I/O error stopped the run",
            StopReason::Completed => "every step carried out",
        }
    }
}

/// One histogram bin: what the profile asks for and what the run left.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// Human label of the bin ("<= 4 KiB", "depth 3", "<= 0.25").
    pub label: String,
    pub ideal: f64,
    pub actual: f64,
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    pub bins: Vec<Bin>,
    pub rmse: f64,
    /// Largest |actual - ideal| over the bins.
    pub max_abs_error: f64,
}

impl Histogram {
    pub fn new(labels: Vec<String>, ideal: &[f64], counts: &[u64]) -> Histogram {
        let total: u64 = counts.iter().sum();
        let bins: Vec<Bin> = labels
            .into_iter()
            .zip(ideal.iter().zip(counts))
            .map(|(label, (&ideal, &count))| Bin {
                label,
                ideal,
                actual: if total == 0 {
                    0.0
                } else {
                    count as f64 / total as f64
                },
                count,
            })
            .collect();
        let n = bins.len().max(1) as f64;
        let rmse = (bins
            .iter()
            .map(|b| (b.actual - b.ideal).powi(2))
            .sum::<f64>()
            / n)
            .sqrt();
        let max_abs_error = bins
            .iter()
            .map(|b| (b.actual - b.ideal).abs())
            .fold(0.0, f64::max);
        Histogram {
            bins,
            rmse,
            max_abs_error,
        }
    }
}

/// The value of every stopping condition at the end, and its limit when one was set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conditions {
    pub ticks: u64,
    pub t_estimate: u64,
    pub elapsed_s: f64,
    pub max_time_s: Option<f64>,
    pub overwrites: f64,
    pub max_overwrites: Option<f64>,
    pub chi2_p: f64,
    pub confidence: Option<f64>,
    pub ops: u64,
    pub max_ops: Option<u64>,
}

/// A size bin the capacity cannot hold at the target fullness.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnmetBin {
    pub label: String,
    pub min_bytes: u64,
    pub room_bytes: u64,
    pub ideal: f64,
    pub reason: String,
}

/// A size bin whose files the run makes only up to `max_bytes` (1% of the target bytes): larger
/// ones would each swing the fullness further than the run holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClippedBin {
    pub label: String,
    pub max_bytes: u64,
    pub ideal: f64,
}

/// What came out on target at the end of the run, by the thresholds the README states: age RMSE
/// below 0.1%, size and depth bins within 0.5 percentage points, fullness within 2 points of the
/// capacity. Ticks done say how long the run was; this says whether it got there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fit {
    pub age: bool,
    pub size: bool,
    pub depth: bool,
    pub fullness: bool,
    /// Live bytes minus target bytes, as a fraction of the capacity.
    pub fullness_off: f64,
}

impl Fit {
    pub const AGE_RMSE: f64 = 1e-3;
    pub const BIN_POINTS: f64 = 0.005;
    pub const FULLNESS_POINTS: f64 = 0.02;

    pub fn all(&self) -> bool {
        self.age && self.size && self.depth && self.fullness
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub fsage_version: String,
    /// What the written data held (`age --data`), for a run that wrote data; absent for one
    /// that allocated with fallocate, a dry run, and reports from before the choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<fsage_plan::DataPattern>,
    /// Where it ran: absent (native) unless in a VM, whose timings compare only with the same
    /// platform's (`tcg`: emulated).
    #[serde(default, skip_serializing_if = "fsage_sys::PlatformKind::is_native")]
    pub platform: fsage_sys::PlatformKind,
    pub profile: String,
    pub backend: String,
    pub target: String,
    pub seed: u64,
    pub capacity: u64,
    pub block_size: u64,
    pub fullness: f64,
    pub exact_sizes: bool,
    pub directories: u64,
    /// Depths where the profile gave no directories but needed some: (depth, made).
    pub directories_added: Vec<(u32, u64)>,
    /// K: files made by the rapid phase.
    pub rapid_files: u64,
    pub stop_reason: StopReason,
    /// Set when stop_reason is io_error: operation, path and errno.
    pub error: Option<String>,
    pub converged: bool,
    pub ticks: u64,
    pub t_estimate: u64,
    pub elapsed_s: f64,
    pub ops_per_s: f64,
    pub creates: u64,
    pub deletes: u64,
    pub bytes_written: u64,
    pub overwrites: f64,
    pub live_files: u64,
    /// Allocated bytes as counted (files rounded up to blocks, directories included).
    pub live_bytes: u64,
    /// Target bytes at the end (lowered if the file system filled up before it said it would).
    pub target_bytes: u64,
    /// u*C as configured.
    pub target_bytes_initial: u64,
    /// Ticks of the stable phase so far.
    pub stable_ticks: u64,
    /// Largest |allocated - target| during the stable phase, in bytes and as a fraction of capacity.
    pub max_fullness_deviation_bytes: u64,
    pub max_fullness_deviation: f64,
    pub fullness_band_bytes: u64,
    pub forced_creates: u64,
    pub forced_deletes: u64,
    /// Creates the file system refused for lack of space; each lowered the ceiling.
    pub enospc_events: u64,
    /// Of those, refusals when the file system had no free inode left.
    pub enospc_out_of_inodes: u64,
    /// Ceiling in bytes after those events (the capacity when there were none).
    pub ceiling_bytes: u64,
    pub chi2_p: f64,
    pub conditions: Conditions,
    pub age: Histogram,
    pub size: Histogram,
    pub depth: Histogram,
    pub unmet_size_bins: Vec<UnmetBin>,
    #[serde(default)]
    pub clipped_size_bins: Vec<ClippedBin>,
    /// `None` in reports written before fsage recorded it.
    #[serde(default)]
    pub fit: Option<Fit>,
    /// The whole profile in fsage's TOML format, so that a report (and an image saved with it)
    /// keeps a profile read from a file. `None` in reports written before fsage recorded it.
    #[serde(default)]
    pub profile_toml: Option<String>,
}
