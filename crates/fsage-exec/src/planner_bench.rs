//! The planner benchmark (`fsage bench planner`): the planner's speed and memory at a given
//! number of live files. Each size is checked against the memory this process may allocate before
//! its planner is built, so an absurd count is refused with the estimate instead of being
//! OOM-killed.

use crate::preflight::{check_memory, PreflightError};
use fsage_plan::{PlanConfig, PlanError, Planner};
use fsage_profile::Profile;
use std::time::Instant;

/// One measured live-file count.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlannerBenchRow {
    /// Files live after the stable decisions.
    pub live: u64,
    /// The capacity chosen to hold about the asked number of live files.
    pub capacity: u64,
    /// Seconds of the rapid phase (building the tree to fullness).
    pub rapid_s: f64,
    /// Stable-phase decisions timed.
    pub decisions: u64,
    /// Seconds those decisions took.
    pub stable_s: f64,
    /// The planner's own heap bytes (its estimate of itself).
    pub heap_bytes: u64,
    /// Resident-set growth while the planner lived.
    pub rss_bytes: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum PlannerBenchError {
    #[error("a live-file count of 0: the benchmark needs at least one live file")]
    NoLiveFiles,
    #[error("at {live} live files")]
    Memory {
        live: u64,
        #[source]
        source: PreflightError,
    },
    #[error("at {live} live files")]
    Plan {
        live: u64,
        #[source]
        source: PlanError,
    },
}

impl fsage_sys::Blamed for PlannerBenchError {
    /// Every variant is a count or profile the user chose: bad input.
    fn blame(&self) -> fsage_sys::Blame {
        fsage_sys::Blame::Input
    }
}

fn config(capacity: u64, seed: u64) -> PlanConfig {
    PlanConfig {
        capacity,
        fullness: 0.8,
        block_size: 4096,
        seed,
        exact_sizes: false,
    }
}

/// The capacity that holds about `live` files of `profile`, scaled from a 1 GiB probe plan.
pub fn capacity_for(profile: &Profile, live: u64, seed: u64) -> Result<u64, PlannerBenchError> {
    if live == 0 {
        return Err(PlannerBenchError::NoLiveFiles);
    }
    let probe_cap = 1u64 << 30;
    let probe = Planner::new(profile, config(probe_cap, seed))
        .map_err(|source| PlannerBenchError::Plan { live, source })?;
    let per_file = probe_cap as f64 / probe.steady_state().max(1) as f64;
    Ok((live as f64 * per_file).min(u64::MAX as f64) as u64)
}

/// Checks every count before any planner is built: a list that ends with an impossible count is
/// refused before hours are spent on the ones before it.
pub fn check(
    profile: &Profile,
    lives: &[u64],
    seed: u64,
    memory_limit: Option<u64>,
) -> Result<Vec<u64>, PlannerBenchError> {
    lives
        .iter()
        .map(|&live| {
            let capacity = capacity_for(profile, live, seed)?;
            check_memory(profile, &config(capacity, seed), memory_limit)
                .map_err(|source| PlannerBenchError::Memory { live, source })?;
            Ok(capacity)
        })
        .collect()
}

/// Resident bytes (statm counts 4 KiB pages on the architectures fsage runs on).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|x| x.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4096)
}

/// Builds a planner at `capacity` (from [`check`]), runs its rapid phase and times `ticks`
/// stable decisions.
pub fn measure(
    profile: &Profile,
    live: u64,
    capacity: u64,
    ticks: u64,
    seed: u64,
) -> Result<PlannerBenchRow, PlannerBenchError> {
    let rss0 = rss_bytes();
    let t0 = Instant::now();
    let mut p = Planner::new(profile, config(capacity, seed))
        .map_err(|source| PlannerBenchError::Plan { live, source })?;
    while p.tick() < p.rapid_files() {
        p.next_op();
    }
    let rapid_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut done = 0u64;
    while done < ticks {
        if p.next_op().is_none() {
            break;
        }
        done += 1;
    }
    Ok(PlannerBenchRow {
        live: p.live(),
        capacity,
        rapid_s,
        decisions: done,
        stable_s: t1.elapsed().as_secs_f64(),
        heap_bytes: p.heap_bytes(),
        rss_bytes: rss_bytes().saturating_sub(rss0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_sys::Blamed;

    #[test]
    fn zero_live_files_is_refused() {
        let p = fsage_profile::builtin("agrawal").unwrap();
        let e = check(&p, &[1000, 0], 1, None).unwrap_err();
        assert!(matches!(e, PlannerBenchError::NoLiveFiles), "{e}");
        assert_eq!(e.blame(), fsage_sys::Blame::Input);
    }

    #[test]
    fn a_count_beyond_memory_is_refused_before_any_planner_is_built() {
        let p = fsage_profile::builtin("agrawal").unwrap();
        // 10^12 live files need terabytes; the limit is 1 GiB.
        let e = check(&p, &[10_000, 1_000_000_000_000], 1, Some(1 << 30)).unwrap_err();
        match &e {
            PlannerBenchError::Memory { live, source } => {
                assert_eq!(*live, 1_000_000_000_000);
                let PreflightError::TooMuchMemory { estimate, limit } = source;
                assert_eq!(*limit, 1 << 30);
                assert!(estimate.bytes > 1 << 40, "{estimate:?}");
            }
            e => panic!("{e}"),
        }
        let cause = std::error::Error::source(&e).unwrap().to_string();
        assert!(cause.contains("memory"), "{cause}");
        assert!(!e.to_string().contains("memory"), "said once: {e}");
        assert_eq!(e.blame(), fsage_sys::Blame::Input);
        // A small count passes.
        assert_eq!(check(&p, &[10_000], 1, Some(1 << 30)).unwrap().len(), 1);
    }

    #[test]
    fn measure_reports_decisions() {
        let p = fsage_profile::builtin("agrawal").unwrap();
        let caps = check(&p, &[2000], 1, None).unwrap();
        let row = measure(&p, 2000, caps[0], 1000, 1).unwrap();
        assert_eq!(row.decisions, 1000);
        assert!(row.live > 500, "{row:?}");
    }
}
