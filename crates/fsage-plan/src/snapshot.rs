//! The planner's persisted form: only the state a run changes (generator, tick, the live files in
//! their cells and order, the rapid phase's end, the coin's pending half, target, ceiling and
//! counters). Everything derived from the profile and the configuration (bins, cumulative weights,
//! the directory tree, T) is recomputed on restore, and checked against what was saved, so a state
//! file does not depend on the planner's in-memory layout.

use crate::planner::{Counters, LiveFile, PlanConfig, PlanError, Planner};
use fsage_profile::Profile;
use serde::{Deserialize, Serialize};

/// Borrowed view written by a checkpoint (no copy of millions of live files).
#[derive(Debug, Serialize)]
pub struct SnapshotRef<'a> {
    pub config: PlanConfig,
    pub rng: [u64; 4],
    pub tick: u64,
    /// T, saved so that a restore can tell a planner that would now decide differently.
    pub total: u64,
    pub rapid_len: u64,
    /// The rapid phase was cut short by a full file system: its undecided files are dropped.
    pub rapid_dropped: bool,
    pub pending: Option<bool>,
    pub target: u64,
    pub ceiling: u64,
    pub counters: &'a Counters,
    /// Live files cell by cell (age bin, size bin, depth bin), each in its order: a delete picks a
    /// file by its index in a cell, so the order is part of the state.
    pub cells: &'a [Vec<LiveFile>],
}

/// The same fields, owned: what a restore reads. Field order must match [`SnapshotRef`].
#[derive(Debug, Clone, Deserialize)]
pub struct Snapshot {
    pub config: PlanConfig,
    pub rng: [u64; 4],
    pub tick: u64,
    pub total: u64,
    pub rapid_len: u64,
    pub rapid_dropped: bool,
    pub pending: Option<bool>,
    pub target: u64,
    pub ceiling: u64,
    pub counters: Counters,
    pub cells: Vec<Vec<LiveFile>>,
}

impl Planner {
    pub fn snapshot(&self) -> SnapshotRef<'_> {
        let (rapid_len, rapid_dropped, pending, target, ceiling, cells) = self.dynamic_state();
        SnapshotRef {
            config: *self.config(),
            rng: self.rng_state(),
            tick: self.tick(),
            total: self.total(),
            rapid_len,
            rapid_dropped,
            pending,
            target,
            ceiling,
            counters: &self.counters,
            cells,
        }
    }

    /// Rebuilds a planner from `profile` and a snapshot, refusing one that does not fit: a
    /// different number of cells, files in cells they do not belong to, or a T this planner would
    /// not compute (a state written by an fsage that decides differently).
    pub fn restore(profile: &Profile, s: Snapshot) -> Result<Planner, PlanError> {
        let mut p = Planner::new(profile, s.config)?;
        if p.total() != s.total {
            return Err(PlanError::BadConfig(format!(
                "the saved run has T = {} ticks but this fsage computes {} for the same profile \
                 and options: it was written by an fsage that plans differently",
                s.total,
                p.total()
            )));
        }
        p.set_dynamic_state(
            s.rng,
            s.tick,
            s.rapid_len,
            s.rapid_dropped,
            s.pending,
            s.target,
            s.ceiling,
            s.counters,
            s.cells,
        )?;
        p.check_consistency()?;
        Ok(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(p: &Planner, profile: &Profile) -> Planner {
        // Through serde_json-like self-check: serialise the borrowed view, read the owned one.
        let bytes = serde_json::to_vec(&p.snapshot()).unwrap();
        let s: Snapshot = serde_json::from_slice(&bytes).unwrap();
        Planner::restore(profile, s).unwrap()
    }

    #[test]
    fn a_restored_planner_decides_exactly_as_the_original() {
        let profile = fsage_profile::builtin("agrawal").unwrap();
        let cfg = PlanConfig {
            capacity: 256 << 20,
            fullness: 0.8,
            block_size: 4096,
            seed: 7,
            exact_sizes: false,
        };
        let mut a = Planner::new(&profile, cfg).unwrap();
        // Stop once in the rapid phase and once in the stable phase.
        for stop_at in [100u64, a.rapid_files() + 5000] {
            while a.tick() < stop_at {
                a.next_op();
            }
            let mut b = roundtrip(&a, &profile);
            let mut a2 = a.clone();
            for _ in 0..20_000 {
                assert_eq!(a2.next_op(), b.next_op());
            }
            assert_eq!(a2.counters, b.counters);
        }
    }

    #[test]
    fn a_snapshot_of_another_profile_is_refused() {
        let agrawal = fsage_profile::builtin("agrawal").unwrap();
        let dabre = fsage_profile::builtin("dabre").unwrap();
        let cfg = PlanConfig {
            capacity: 256 << 20,
            fullness: 0.8,
            block_size: 4096,
            seed: 1,
            exact_sizes: false,
        };
        let a = Planner::new(&agrawal, cfg).unwrap();
        let bytes = serde_json::to_vec(&a.snapshot()).unwrap();
        let s: Snapshot = serde_json::from_slice(&bytes).unwrap();
        assert!(Planner::restore(&dabre, s).is_err());
    }
}
