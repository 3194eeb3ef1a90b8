//! Where a saved run stands, from its state file alone: what `fsage status` shows.

use crate::checkpoint::{SavedStop, State};
use crate::pace::{time_left, TimeLeft};
use crate::report::StopReason;
use fsage_plan::stats::{rmse, to_fractions};
use fsage_plan::Phase;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// Ticks per second over the run so far (all sessions, up to the last checkpoint).
    pub ticks_per_s: Option<f64>,
    /// Time left at that rate to the first end the run will reach (T, --max-ops, --max-time).
    pub time_left: Option<TimeLeft>,
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
        let rate =
            (r.elapsed_s > 0.0 && r.elapsed_s.is_finite()).then(|| p.tick() as f64 / r.elapsed_s);
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
            ticks_per_s: rate,
            time_left: time_left(
                p.tick(),
                p.total(),
                Duration::try_from_secs_f64(r.elapsed_s.max(0.0)).unwrap_or(Duration::ZERO),
                rate,
                &r.stop.into(),
            ),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::RunRecord;
    use crate::pace::End;
    use fsage_plan::{PlanConfig, Planner};

    fn state(ticks: u64, elapsed_s: f64, stop: SavedStop) -> State {
        let p = fsage_profile::builtin("agrawal").unwrap();
        let mut plan = Planner::new(
            &p,
            PlanConfig {
                capacity: 64 << 20,
                fullness: 0.5,
                block_size: 4096,
                seed: 3,
                exact_sizes: false,
            },
        )
        .unwrap();
        for _ in 0..ticks {
            plan.next_op();
        }
        State {
            record: RunRecord {
                fsage_version: "test".into(),
                profile_name: p.name.clone(),
                profile_toml: fsage_profile::to_toml(&p),
                target: None,
                write_mode: "fallocate".into(),
                image: None,
                fs: None,
                op_log: None,
                op_log_len: 0,
                elapsed_s,
                stop,
                stopped: None,
                error: None,
                json: None,
            },
            plan,
        }
    }

    /// The rate is the run's ticks over its run time; the time left is what is left of T (or of
    /// a nearer limit) at that rate.
    #[test]
    fn rate_and_time_left_from_the_saved_run() {
        let st = state(20_000, 4.0, SavedStop::default()).status(Path::new("s"));
        assert_eq!(st.ticks, 20_000);
        assert_eq!(st.ticks_per_s, Some(5000.0));
        let tl = st.time_left.unwrap();
        assert_eq!(tl.until, End::Total);
        let want = (st.t_estimate - 20_000) as f64 / 5000.0;
        assert!((tl.secs - want).abs() < 1e-9, "{} vs {want}", tl.secs);
        // A nearer --max-ops.
        let stop = SavedStop {
            max_ops: Some(30_000),
            ..SavedStop::default()
        };
        let tl = state(20_000, 4.0, stop)
            .status(Path::new("s"))
            .time_left
            .unwrap();
        assert_eq!((tl.secs, tl.until), (2.0, End::MaxOps));
        // A run saved before its first tick (elapsed 0): no rate, no estimate.
        let st = state(0, 0.0, SavedStop::default()).status(Path::new("s"));
        assert_eq!((st.ticks_per_s, st.time_left), (None, None));
    }
}
