//! The report of an aging run: plain data (so that measurement and export stay apart), a human
//! summary and JSON.

pub use fsage_profile::human_bytes;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

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
}

impl StopReason {
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::Converged => "perfect convergence: all T ticks done",
            StopReason::MaxTime => "--max-time reached",
            StopReason::MaxOverwrites => "--max-overwrites reached",
            StopReason::Confidence => "--confidence reached by the age histogram's chi-squared fit",
            StopReason::MaxOps => "--max-ops reached",
            StopReason::NothingFits => "no file fits any more and nothing is left to delete",
            StopReason::Interrupted => "interrupted by a signal",
            StopReason::IoError => "an I/O error stopped the run",
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    pub fsage_version: String,
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
}

fn limit<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

impl RunReport {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serialises")
    }

    /// The human summary printed at the end of a run.
    pub fn render_text(&self) -> String {
        let mut o = String::new();
        let c = &self.conditions;
        let _ = writeln!(
            o,
            "fsage {}: profile {} on {} ({}), seed {}",
            self.fsage_version, self.profile, self.target, self.backend, self.seed
        );
        let _ = writeln!(
            o,
            "stopped: {}{}",
            self.stop_reason.describe(),
            self.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
        let _ = writeln!(o, "stopping conditions (value / limit):");
        let _ = writeln!(
            o,
            "  ticks       {:>14} / {} (T from the convergence theorem)",
            c.ticks, c.t_estimate
        );
        let _ = writeln!(
            o,
            "  time        {:>13.1}s / {}",
            c.elapsed_s,
            limit(c.max_time_s.map(|s| format!("{s}s")))
        );
        let _ = writeln!(
            o,
            "  overwrites  {:>14.3} / {}",
            c.overwrites,
            limit(c.max_overwrites)
        );
        let _ = writeln!(
            o,
            "  age fit p   {:>14.4} / {}",
            c.chi2_p,
            limit(c.confidence)
        );
        let _ = writeln!(o, "  ops         {:>14} / {}", c.ops, limit(c.max_ops));
        let _ = writeln!(
            o,
            "run: {} creates, {} deletes in {:.2}s ({:.0} ops/s), {} written",
            self.creates,
            self.deletes,
            self.elapsed_s,
            self.ops_per_s,
            human_bytes(self.bytes_written)
        );
        let _ = writeln!(
            o,
            "live: {} files, {} allocated of {} capacity ({:.2}% full, target {:.2}%), {} directories",
            self.live_files,
            human_bytes(self.live_bytes),
            human_bytes(self.capacity),
            100.0 * self.live_bytes as f64 / self.capacity.max(1) as f64,
            100.0 * self.target_bytes as f64 / self.capacity.max(1) as f64,
            self.directories
        );
        if self.stable_ticks == 0 {
            let _ = writeln!(o, "fullness: no stable phase yet");
        } else {
            let _ = writeln!(
                o,
                "fullness: largest deviation from target in the stable phase {} ({:.3}% of capacity); band +/-{}; coin overridden {} times",
                human_bytes(self.max_fullness_deviation_bytes),
                100.0 * self.max_fullness_deviation,
                human_bytes(self.fullness_band_bytes),
                self.forced_creates + self.forced_deletes
            );
        }
        if self.enospc_events > 0 {
            let inodes = if self.enospc_out_of_inodes > 0 {
                format!(
                    " ({} of them with no free inode left: the file system has too few inodes for this profile)",
                    self.enospc_out_of_inodes
                )
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "file system full: {} creates refused (ENOSPC){inodes}; the ceiling went down to {} and the target from {} to {}",
                self.enospc_events,
                human_bytes(self.ceiling_bytes),
                human_bytes(self.target_bytes_initial),
                human_bytes(self.target_bytes)
            );
        }
        for (d, n) in &self.directories_added {
            let _ = writeln!(
                o,
                "note: the profile has no directories at depth {d} but needs them; made {n}"
            );
        }
        for u in &self.unmet_size_bins {
            let _ = writeln!(
                o,
                "cannot be met at this capacity: size bin {} (target {:.4}%): {}",
                u.label,
                100.0 * u.ideal,
                u.reason
            );
        }
        for (name, h) in [
            ("age", &self.age),
            ("size", &self.size),
            ("depth", &self.depth),
        ] {
            let _ = writeln!(
                o,
                "{name} histogram: RMSE {:.6}%, worst bin off by {:.4} percentage points",
                100.0 * h.rmse,
                100.0 * h.max_abs_error
            );
            let _ = writeln!(
                o,
                "  {:<22} {:>10} {:>10} {:>12}",
                "bin", "ideal %", "actual %", "files"
            );
            for b in &h.bins {
                let _ = writeln!(
                    o,
                    "  {:<22} {:>10.4} {:>10.4} {:>12}",
                    b.label,
                    100.0 * b.ideal,
                    100.0 * b.actual,
                    b.count
                );
            }
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_errors() {
        let h = Histogram::new(vec!["a".into(), "b".into()], &[0.5, 0.5], &[6, 4]);
        assert!((h.rmse - 0.1).abs() < 1e-12);
        assert!((h.max_abs_error - 0.1).abs() < 1e-12);
        assert_eq!(h.bins[0].count, 6);
    }
}
