//! What a planner will hold in memory, estimated from the profile and the configuration alone,
//! before anything is allocated: a capacity of exabytes or a profile of billions of directories is
//! refused with a number instead of being found out by the kernel's OOM killer.

use crate::planner::PlanConfig;
use fsage_profile::Profile;

/// Heap bytes per live file: a 24-byte cell entry with vector growth slack, plus its share of the
/// rapid phase's list. `fsage bench planner` measures 28 to 40 bytes of RSS per live file
/// (BENCHMARKS.md); this errs on the high side.
pub const BYTES_PER_LIVE_FILE: u64 = 64;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryEstimate {
    /// Files live at the target fullness (K, or the steady state).
    pub live_files: u64,
    pub directories: u64,
    /// Histogram cells (age x size x depth bins).
    pub cells: u64,
    pub bytes: u64,
}

/// Estimates the planner's heap for `profile` at `cfg`, in O(bins) time and no allocation that
/// grows with the capacity.
pub fn estimate_memory(profile: &Profile, cfg: &PlanConfig) -> MemoryEstimate {
    let bs = cfg.block_size.max(1) as f64;
    let target = cfg.capacity as f64 * cfg.fullness;
    let room = cfg.capacity as f64 - target;
    let churn_limit = (target / 100.0).max(bs);
    let alloc = |x: f64| (x / bs).ceil().max(1.0) * bs;
    // Mean bytes of a file over the size bins the run makes files in (see Planner::new).
    let fracs = profile.size_fractions();
    let (mut weight, mut bytes) = (0.0, 0.0);
    let mut lo = 0.0;
    for (b, &f) in profile.sizes.iter().zip(&fracs) {
        let hi = b.max_bytes as f64;
        let (first, mean) = if cfg.exact_sizes {
            (hi, alloc(hi))
        } else {
            (lo, alloc((lo + hi) / 2.0))
        };
        if f > 0.0 && alloc(first) <= room && alloc(first) <= churn_limit {
            weight += f;
            bytes += f * mean;
        }
        lo = hi + 1.0;
    }
    let live_files = if bytes > 0.0 {
        (target * weight / bytes).ceil().min(u64::MAX as f64 / 2.0) as u64
    } else {
        0
    };
    // Directories: a parent id, a String and its path ("d<id>/" per level).
    let directories: u64 = profile
        .depths
        .iter()
        .map(|d| d.subdirs)
        .fold(0u64, u64::saturating_add);
    let digits = (directories.max(1) as f64).log10().ceil() + 2.0;
    let dir_bytes: f64 = profile
        .depths
        .iter()
        .map(|d| d.subdirs as f64 * (28.0 + (d.depth as f64 + 1.0) * digits))
        .sum();
    let cells = (profile.ages.len() as u64)
        .saturating_mul(profile.sizes.len() as u64)
        .saturating_mul(profile.depths.len() as u64);
    let total = live_files as f64 * BYTES_PER_LIVE_FILE as f64 + dir_bytes + cells as f64 * 24.0;
    MemoryEstimate {
        live_files,
        directories,
        cells,
        bytes: total.min(u64::MAX as f64) as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Planner;

    fn cfg(capacity: u64) -> PlanConfig {
        PlanConfig {
            capacity,
            fullness: 0.8,
            block_size: 4096,
            seed: 1,
            exact_sizes: false,
        }
    }

    #[test]
    fn the_estimate_covers_what_a_planner_holds() {
        for name in ["agrawal", "dabre", "meyer"] {
            let p = fsage_profile::builtin(name).unwrap();
            let c = cfg(1 << 30);
            let est = estimate_memory(&p, &c);
            let planner = Planner::new(&p, c).unwrap();
            let held = planner.heap_bytes();
            assert!(
                est.bytes >= held && est.bytes <= 4 * held.max(1 << 20),
                "{name}: estimate {} for {held} held",
                est.bytes
            );
            let k = planner.rapid_files().max(planner.steady_state()) as f64;
            let ratio = est.live_files as f64 / k;
            assert!(
                (0.5..2.0).contains(&ratio),
                "{name}: {} vs {k}",
                est.live_files
            );
        }
    }

    #[test]
    fn exabytes_are_estimated_without_allocating() {
        let p = fsage_profile::builtin("agrawal").unwrap();
        let est = estimate_memory(&p, &cfg(8 << 60));
        assert!(est.bytes > 1 << 50, "{}", est.bytes);
    }
}
