//! Checks made before a run touches anything: will the planner fit in memory?

use fsage_plan::{estimate_memory, MemoryEstimate, PlanConfig};
use fsage_profile::{human_bytes, Profile};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "the planner would need about {} of memory ({} live files, {} directories, {} histogram \
         cells), more than the {} this machine has available",
        human_bytes(.estimate.bytes), .estimate.live_files, .estimate.directories,
        .estimate.cells, human_bytes(*.limit)
    )]
    TooMuchMemory {
        estimate: MemoryEstimate,
        limit: u64,
    },
}

impl PreflightError {
    pub fn blame(&self) -> fsage_sys::Blame {
        fsage_sys::Blame::Input
    }
}

/// Memory available to new allocations (MemAvailable of /proc/meminfo); `None` where unknown.
pub fn memory_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Refuses a plan whose estimated memory exceeds `limit` (default: what is available now).
pub fn check_memory(
    profile: &Profile,
    cfg: &PlanConfig,
    limit: Option<u64>,
) -> Result<MemoryEstimate, PreflightError> {
    let estimate = estimate_memory(profile, cfg);
    if let Some(limit) = limit.or_else(memory_available) {
        if estimate.bytes > limit {
            return Err(PreflightError::TooMuchMemory { estimate, limit });
        }
    }
    Ok(estimate)
}

/// Planner decisions per second of a dry run, measured on this project's 2-core machines
/// (BENCHMARKS.md: 6.5 to 13.6 M/s; the low end, to warn early rather than late).
pub const DRY_RUN_TICKS_PER_S: f64 = 6.0e6;
/// Operations per second of a real run on ext4 in memory (BENCHMARKS.md: 33 k to 75 k ops/s);
/// slower devices are slower still.
pub const REAL_RUN_TICKS_PER_S: f64 = 5.0e4;

/// How long `ticks` take at the measured speeds.
pub fn estimate_seconds(ticks: u64, dry_run: bool) -> f64 {
    ticks as f64
        / if dry_run {
            DRY_RUN_TICKS_PER_S
        } else {
            REAL_RUN_TICKS_PER_S
        }
}
