//! Where a saved run stands, from its state file alone: what `fsage status` shows.

use crate::checkpoint::{SavedStop, State};
use crate::report::StopReason;
use fsage_plan::stats::{rmse, to_fractions};
use fsage_plan::Phase;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunPhase {
    Rapid,
    Stable,
    Done,
}

impl From<Phase> for RunPhase {
    fn from(p: Phase) -> RunPhase {
        match p {
            Phase::Rapid => RunPhase::Rapid,
            Phase::Stable => RunPhase::Stable,
            Phase::Done => RunPhase::Done,
        }
    }
}

/// A saved run's standing. Absent values are `None` (JSON `null`), never empty strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatus {
    pub state: PathBuf,
    pub fsage_version: String,
    pub profile: String,
    pub seed: u64,
    pub capacity: u64,
    pub fullness: f64,
    pub block_size: u64,
    /// The aged directory; `None` for a dry run.
    pub target: Option<PathBuf>,
    /// For a run made with `age --fs`: the image and its file system.
    pub image: Option<PathBuf>,
    pub fs: Option<String>,
    pub op_log: Option<PathBuf>,
    pub phase: RunPhase,
    pub ticks: u64,
    pub t_estimate: u64,
    pub elapsed_s: f64,
    pub overwrites: f64,
    /// RMSE of the age histogram if the run ended now.
    pub age_rmse: f64,
    pub live_files: u64,
    pub live_bytes: u64,
    /// The stopping conditions in force.
    pub stop: SavedStop,
    /// Why the last session stopped; `None` while it runs or after a crash.
    pub stopped: Option<StopReason>,
    pub error: Option<String>,
}

impl State {
    pub fn status(&self, path: &Path) -> RunStatus {
        let p = &self.plan;
        let r = &self.record;
        RunStatus {
            state: path.to_path_buf(),
            fsage_version: r.fsage_version.clone(),
            profile: r.profile_name.clone(),
            seed: p.config().seed,
            capacity: p.config().capacity,
            fullness: p.config().fullness,
            block_size: p.config().block_size,
            target: r.target.clone(),
            image: r.image.clone(),
            fs: r.fs.clone(),
            op_log: r.op_log.clone(),
            phase: p.phase().into(),
            ticks: p.tick(),
            t_estimate: p.total(),
            elapsed_s: r.elapsed_s,
            overwrites: p.counters.bytes_written as f64 / p.config().capacity.max(1) as f64,
            age_rmse: rmse(p.age_targets(), &to_fractions(&p.age_counts_now())),
            live_files: p.live(),
            live_bytes: p.allocated(),
            stop: r.stop,
            stopped: r.stopped,
            error: r.error.clone(),
        }
    }
}
