//! What a run is asked to do ([`RunConfig`], [`Stop`]) and what it tells its caller on the way
//! ([`Observer`], [`Progress`]).

use crate::error::{Error, Setting};
use crate::model::QuitMode;
use crate::result::RepResult;
use fsage_plan::DataPattern;
use std::time::Duration;

/// When a repetition ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// After this long, measured from the end of the warmup (a hard stop: no operation starts
    /// after it).
    Duration(Duration),
    /// After this many operations started in the measured phase, counted across all threads.
    Ops(u64),
}

#[derive(Debug, Clone)]
pub struct RunConfig {
    /// `None`: the workload's `run N` (60 s without one).
    pub stop: Option<Stop>,
    pub warmup: Duration,
    /// Fixes the fileset (sizes, which files exist) and every thread's choices.
    pub seed: u64,
    /// Instances of every thread definition, instead of the workload's.
    pub threads: Option<u64>,
    /// Page cache limited to this × the fileset bytes, through a memory cgroup.
    pub cache_ratio: Option<f64>,
    /// sync and drop the page, dentry and inode caches before each repetition.
    pub drop_caches: bool,
    pub reps: u32,
    /// Accept a target that holds a fileset an earlier run made (brought back to its start).
    pub reuse: bool,
    /// Time every operation into histograms (off only to measure what recording costs).
    pub record_latency: bool,
    /// Record a time series of CPU utilization, the device's requests in flight and the
    /// operations done, one point per this interval (`bench run --sample`).
    pub sample: Option<Duration>,
    /// What the written bytes hold, the fileset's layout included (`bench run --data`).
    pub data: DataPattern,
}

impl Default for RunConfig {
    fn default() -> RunConfig {
        RunConfig {
            stop: None,
            warmup: Duration::ZERO,
            seed: 1,
            threads: None,
            cache_ratio: None,
            drop_caches: false,
            reps: 1,
            reuse: false,
            record_latency: true,
            sample: None,
            data: DataPattern::Incompressible,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Layout,
    Warmup,
    Measure,
}

/// What a progress display may show.
#[derive(Debug, Clone)]
pub struct Progress {
    pub rep: u32,
    pub reps: u32,
    pub phase: Phase,
    /// Since the start of the repetition's threads (or of its layout).
    pub elapsed: Duration,
    /// Operations so far in this repetition (warmup included), or files laid out.
    pub done: u64,
    /// Of the layout: the total files; of a run with an op count: that count.
    pub total: Option<u64>,
    /// Operations per second over the last interval.
    pub ops_per_sec_now: f64,
}

/// Hooks a caller (the CLI, the experiment runner) implements; all have empty defaults.
pub trait Observer {
    fn progress(&mut self, _p: &Progress) {}
    fn rep_done(&mut self, _r: &RepResult) {}
    /// A note worth telling the user (a variable the engine ignores, a limit set).
    fn note(&mut self, _msg: &str) {}
    /// A repetition's measured phase starts (`true`, at the end of its warmup, to within the
    /// engine's 50 ms watch) or has ended (`false`, its threads done): a caller that records
    /// something over the measured phase (lock contention) starts and stops it here.
    fn measuring(&mut self, _started: bool) {}
}

/// An observer that ignores everything.
pub struct NoObserver;
impl Observer for NoObserver {}

impl RunConfig {
    /// Refuses the settings no run can have (no repetitions, no threads, a page-cache ratio out of
    /// range, zero operations), naming the setting for the caller to name its flag.
    pub fn check(&self) -> Result<(), Error> {
        let bad = |setting, value: String, why| {
            Err(Error::Setting {
                setting,
                value,
                why,
            })
        };
        if self.reps == 0 {
            return bad(Setting::Reps, "0".into(), "must be at least 1");
        }
        if self.threads == Some(0) {
            return bad(Setting::Threads, "0".into(), "must be at least 1");
        }
        if let Some(r) = self.cache_ratio {
            if !(r > 0.0 && r.is_finite() && r <= 1000.0) {
                return bad(Setting::CacheRatio, r.to_string(), "must be above 0");
            }
        }
        if self.stop == Some(Stop::Ops(0)) {
            return bad(Setting::Ops, "0".into(), "must be at least 1");
        }
        Ok(())
    }
}

/// The warm-up `bench run` uses when none is given: a tenth of the measured time, from 1 to
/// 10 s (a first repetition measured from a cold start ran 15% slow); none for a run of a
/// fixed operation count or a run-until-done workload (`set mode quit firstdone|alldone`, a
/// finish flowop), whose operations all count.
pub fn default_warmup(m: &crate::model::Model, stop: Option<Stop>) -> Duration {
    let until_done = m.mode != QuitMode::Timeout
        || m.threads
            .iter()
            .flat_map(|t| &t.flowops)
            .any(|f| f.kind.is_finish());
    let secs = match stop {
        Some(Stop::Ops(_)) => return Duration::ZERO,
        Some(Stop::Duration(d)) => d.as_secs_f64(),
        None => m.run_secs.unwrap_or(60) as f64,
    };
    if until_done {
        return Duration::ZERO;
    }
    Duration::from_secs_f64((secs / 10.0).clamp(1.0, 10.0))
}
