//! The run loop: takes steps from an operation source one at a time, hands them to a backend,
//! watches the stopping conditions, checkpoints, and builds the report.

use crate::backend::{Backend, OpError};
use crate::checkpoint::{RunRecord, SavedStop};
use crate::op::{OpSource, Step};
use crate::oplog::OpLog;
use crate::pace::{time_left, Pace, TimeLeft};
use crate::report::{ClippedBin, Conditions, Fit, Histogram, RunReport, StopReason, UnmetBin};
use crate::source::PlanSource;
pub use crate::stop::StopConditions;
use fsage_plan::stats::chi2_p;
use fsage_plan::{Phase, Planner};
use fsage_profile::human_bytes;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a progress display needs; computed only when asked for.
#[derive(Debug, Clone)]
pub struct Progress {
    /// The planner's phase, for a planner source.
    pub phase: Option<Phase>,
    pub tick: u64,
    /// Steps in all; 0 when the source does not know.
    pub total: u64,
    /// Run time over all sessions.
    pub elapsed: Duration,
    /// Ticks per second over the whole run (all sessions).
    pub ops_per_s: f64,
    /// Ticks per second over the last minute ([`Pace`]); `None` until it is known.
    pub rate: Option<f64>,
    /// Time left at `rate` to the first end the run will reach (T, `--max-ops`, `--max-time`).
    pub time_left: Option<TimeLeft>,
    pub overwrites: f64,
    /// RMSE of the age histogram if the run ended now (walks the live files: call rarely).
    pub age_rmse: Option<f64>,
}

pub trait Observer {
    /// Called about every 4096 steps; implementations decide themselves whether to redraw.
    fn update(&mut self, _progress: &dyn Fn() -> Progress, _elapsed: Duration) {}
    fn finish(&mut self) {}
}

/// Observes nothing.
pub struct Silent;
impl Observer for Silent {}

#[derive(Debug)]
pub struct Outcome {
    pub reason: StopReason,
    pub error: Option<OpError>,
    /// This session's run time; `elapsed_total` adds the sessions before a resume.
    pub elapsed: Duration,
    pub elapsed_total: Duration,
    /// Steps done in this session.
    pub session_ticks: u64,
    pub chi2_p: f64,
    pub op_log_error: Option<std::io::Error>,
    /// Refused creates for which the file system had no free inode left.
    pub enospc_inodes: u64,
    /// Checkpoints written, and the last one's failure if any.
    pub checkpoints: u64,
    pub state_error: Option<String>,
}

/// Where and how often to save the run's state, and what to save besides the source.
#[derive(Debug, Clone)]
pub struct Checkpointing {
    pub path: PathBuf,
    pub interval: Duration,
    pub profile_name: String,
    pub profile_toml: String,
    pub target: Option<PathBuf>,
    pub write_mode: String,
    pub op_log: Option<PathBuf>,
    pub image: Option<PathBuf>,
    pub fs: Option<String>,
    /// Where the report is written as JSON, kept so that a resume writes it there too.
    pub json: Option<PathBuf>,
}

/// Everything besides the source, the backend and the op log that shapes a run.
#[derive(Debug, Clone, Default)]
pub struct RunCtx {
    pub stop: StopConditions,
    pub checkpoint: Option<Checkpointing>,
    /// Run time of the sessions before this one (a resumed run).
    pub elapsed_before: Duration,
}

struct Session<'a, S: OpSource, B: Backend> {
    source: &'a mut S,
    backend: &'a mut B,
    oplog: Option<&'a mut OpLog>,
    ctx: &'a RunCtx,
    start: Instant,
    enospc_inodes: u64,
    checkpoints: u64,
    pace: Pace,
}

impl<S: OpSource, B: Backend> Session<'_, S, B> {
    fn elapsed_total(&self) -> Duration {
        self.ctx.elapsed_before + self.start.elapsed()
    }

    /// A create the file system refused for lack of space: the source drops it and adapts.
    fn refused(&mut self, step: &Step) {
        if self.backend.free_space().and_then(|f| f.inodes) == Some(0) {
            self.enospc_inodes += 1;
        }
        self.source.refused(step);
        if let Some(log) = self.oplog.as_deref_mut() {
            let _ = log.refused(step, self.source.tree());
        }
    }

    /// Handles failures an asynchronous backend reports late; an error other than a full file
    /// system ends the run.
    fn absorb_failures(&mut self) -> Result<(), OpError> {
        for (step, e) in self.backend.take_failures() {
            if e.is_no_space() && step.is_create() {
                self.refused(&step);
            } else {
                return Err(e);
            }
        }
        Ok(())
    }

    /// Waits for the backend, flushes the op log and writes the state file.
    fn checkpoint(
        &mut self,
        stopped: Option<StopReason>,
        error: Option<String>,
    ) -> Result<(), String> {
        let Some(cp) = &self.ctx.checkpoint else {
            return Ok(());
        };
        let op_log_len = match self.oplog.as_deref_mut() {
            Some(log) => log.flushed_len().map_err(|e| format!("op log: {e}"))?,
            None => 0,
        };
        let record = RunRecord {
            fsage_version: env!("CARGO_PKG_VERSION").to_string(),
            profile_name: cp.profile_name.clone(),
            profile_toml: cp.profile_toml.clone(),
            target: cp.target.clone(),
            write_mode: cp.write_mode.clone(),
            image: cp.image.clone(),
            fs: cp.fs.clone(),
            op_log: cp.op_log.clone(),
            op_log_len,
            elapsed_s: self.elapsed_total().as_secs_f64(),
            stop: SavedStop::from(&self.ctx.stop),
            stopped,
            error,
            json: cp.json.clone(),
        };
        if self
            .source
            .save_state(&cp.path, &record)
            .map_err(|e| e.to_string())?
        {
            self.checkpoints += 1;
        }
        Ok(())
    }
}

fn outcome(
    reason: StopReason,
    error: Option<OpError>,
    log_error: Option<std::io::Error>,
    state_error: Option<String>,
) -> Outcome {
    // The measurements (times, ticks, fit, counters) are filled in once, by `run_source`, after
    // the final checkpoint.
    Outcome {
        reason,
        error,
        elapsed: Duration::ZERO,
        elapsed_total: Duration::ZERO,
        session_ticks: 0,
        chi2_p: 0.0,
        op_log_error: log_error,
        enospc_inodes: 0,
        checkpoints: 0,
        state_error,
    }
}

/// Runs the planner's decisions: [`run_source`] over a [`PlanSource`], with the age fit at the end.
pub fn run<B: Backend>(
    planner: &mut Planner,
    backend: &mut B,
    oplog: Option<&mut OpLog>,
    ctx: &RunCtx,
    observer: &mut dyn Observer,
) -> Outcome {
    let mut source = PlanSource::new(planner, ctx.stop.confidence.is_some());
    let mut out = run_source(&mut source, backend, oplog, ctx, observer);
    out.chi2_p = chi2_p(&planner.age_counts_now(), planner.age_targets());
    out
}

/// Makes (or, on a resume, reopens) the source's tree, then runs steps until a stopping condition
/// fires or the source runs out. With checkpointing, the state is saved before the first step,
/// every `interval`, and at the end.
pub fn run_source<S: OpSource, B: Backend>(
    source: &mut S,
    backend: &mut B,
    oplog: Option<&mut OpLog>,
    ctx: &RunCtx,
    observer: &mut dyn Observer,
) -> Outcome {
    let first_tick = source.position();
    let mut s = Session {
        source,
        backend,
        oplog,
        ctx,
        start: Instant::now(),
        enospc_inodes: 0,
        checkpoints: 0,
        pace: Pace::new(Pace::WINDOW),
    };
    let mut out = drive(&mut s, observer);
    // Whatever stopped the run, leave a state to resume from.
    if let Err(e) = s.backend.finish() {
        if out.error.is_none() {
            out.reason = StopReason::IoError;
            out.error = Some(e);
        }
    }
    if let Err(e) = s.absorb_failures() {
        if out.error.is_none() {
            out.reason = StopReason::IoError;
            out.error = Some(e);
        }
    }
    let err_text = out.error.as_ref().map(|e| e.to_string());
    if let Err(e) = s.checkpoint(Some(out.reason), err_text) {
        out.state_error.get_or_insert(e);
    }
    if let Some(log) = s.oplog.as_deref_mut() {
        if let Err(e) = log.flush() {
            out.op_log_error.get_or_insert(e);
        }
    }
    observer.finish();
    out.checkpoints = s.checkpoints;
    out.enospc_inodes = s.enospc_inodes;
    out.elapsed = s.start.elapsed();
    out.elapsed_total = s.elapsed_total();
    out.session_ticks = s.source.position() - first_tick;
    out
}

fn drive<S: OpSource, B: Backend>(
    s: &mut Session<'_, S, B>,
    observer: &mut dyn Observer,
) -> Outcome {
    let stop = &s.ctx.stop;
    if let Err(e) = s.checkpoint(None, None) {
        return outcome(StopReason::IoError, None, None, Some(e));
    }
    if let Err(e) = s.backend.make_dirs(s.source.tree()) {
        return outcome(StopReason::IoError, Some(e), None, None);
    }
    if let Some(log) = s.oplog.as_deref_mut() {
        match log.flushed_len() {
            Ok(0) => {
                if let Err(e) = log.dirs(s.source.tree()) {
                    return outcome(StopReason::IoError, None, Some(e), None);
                }
            }
            Ok(_) => {}
            Err(e) => return outcome(StopReason::IoError, None, Some(e), None),
        }
    }
    let interval = s.ctx.checkpoint.as_ref().map(|c| c.interval);
    let mut last_checkpoint = Instant::now();
    let mut next_check = s.source.position() + 1000;
    let mut next_poll = s.source.position();
    loop {
        let tick = s.source.position();
        if stop.max_ops.is_some_and(|m| tick >= m) {
            return outcome(StopReason::MaxOps, None, None, None);
        }
        if let (Some(m), Some(ow)) = (stop.max_overwrites, s.source.overwrites()) {
            if ow >= m {
                return outcome(StopReason::MaxOverwrites, None, None, None);
            }
        }
        if tick >= next_poll {
            next_poll = tick + 4096;
            let elapsed = s.elapsed_total();
            if fsage_signals::interrupted() {
                return outcome(StopReason::Interrupted, None, None, None);
            }
            if stop.max_time.is_some_and(|m| elapsed >= m) {
                return outcome(StopReason::MaxTime, None, None, None);
            }
            if interval.is_some_and(|i| last_checkpoint.elapsed() >= i) {
                if let Err(e) = s.backend.finish().and_then(|()| s.absorb_failures()) {
                    return outcome(StopReason::IoError, Some(e), None, None);
                }
                let began = Instant::now();
                if let Err(e) = s.checkpoint(None, None) {
                    return outcome(StopReason::IoError, None, None, Some(e));
                }
                // A large state takes a while to write: keep that under a tenth of the run.
                last_checkpoint = Instant::now() + began.elapsed() * 9;
            }
            s.pace.record(elapsed, tick);
            let src: &S = s.source;
            let session = s.start.elapsed();
            let rate = s.pace.rate();
            observer.update(
                &|| Progress {
                    phase: src.phase(),
                    tick,
                    total: src.total().unwrap_or(0),
                    elapsed,
                    ops_per_s: tick as f64 / elapsed.as_secs_f64().max(1e-9),
                    rate,
                    time_left: time_left(tick, src.total().unwrap_or(0), elapsed, rate, stop),
                    overwrites: src.overwrites().unwrap_or(0.0),
                    age_rmse: src.age_rmse(),
                },
                session,
            );
        }
        if let Some(want) = stop.confidence {
            if tick >= next_check {
                next_check = tick + 1000;
                if s.source.fit().is_some_and(|p| p >= want) {
                    return outcome(StopReason::Confidence, None, None, None);
                }
            }
        }
        let Some(step) = s.source.next_step() else {
            return outcome(s.source.exhausted(), None, None, None);
        };
        match s.backend.apply(&step) {
            Ok(()) => {
                s.source.applied(&step);
                if let Some(log) = s.oplog.as_deref_mut() {
                    if let Err(e) = log.step(&step, s.source.tree()) {
                        return outcome(StopReason::IoError, None, Some(e), None);
                    }
                }
                if s.backend.has_failures() {
                    if let Err(e) = s.absorb_failures() {
                        return outcome(StopReason::IoError, Some(e), None, None);
                    }
                }
            }
            Err(e) if e.is_no_space() && step.is_create() => s.refused(&step),
            Err(e) => {
                // The op log records decisions: this one stands, and a resume carries it out
                // when it brings the target back to the saved state.
                if let Some(log) = s.oplog.as_deref_mut() {
                    let _ = log.step(&step, s.source.tree());
                }
                return outcome(StopReason::IoError, Some(e), None, None);
            }
        }
    }
}

/// Who ran what, for the report.
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub profile: String,
    /// The profile in fsage's TOML format, copied into the report.
    pub profile_toml: String,
    pub backend: String,
    pub target: String,
    pub size_labels: Vec<String>,
    pub depth_labels: Vec<String>,
    pub age_labels: Vec<String>,
}

impl RunMeta {
    pub fn new(profile: &fsage_profile::Profile, backend: String, target: String) -> RunMeta {
        let mut prev = 0;
        let size_labels = profile
            .sizes
            .iter()
            .map(|b| {
                let l = format!("{} - {}", human_bytes(prev), human_bytes(b.max_bytes));
                prev = b.max_bytes;
                l
            })
            .collect();
        RunMeta {
            profile: profile.name.clone(),
            profile_toml: fsage_profile::to_toml(profile),
            backend,
            target,
            size_labels,
            depth_labels: profile
                .depths
                .iter()
                .map(|b| format!("depth {}", b.depth))
                .collect(),
            age_labels: profile
                .age_edges()
                .iter()
                .map(|e| format!("<= {}", fsage_profile::percent(100.0 * e)))
                .collect(),
        }
    }
}

pub fn report(
    planner: &Planner,
    outcome: &Outcome,
    meta: &RunMeta,
    stop: &StopConditions,
) -> RunReport {
    let cfg = planner.config();
    let c = &planner.counters;
    let elapsed = outcome.elapsed_total.as_secs_f64();
    let session = outcome.elapsed.as_secs_f64();
    let ticks = planner.tick();
    let age_counts = planner.age_counts_now();
    let ow = c.bytes_written as f64 / cfg.capacity.max(1) as f64;
    let mut rep = RunReport {
        data: None,
        fsage_version: env!("CARGO_PKG_VERSION").to_string(),
        platform: fsage_sys::PlatformKind::current(),
        profile: meta.profile.clone(),
        backend: meta.backend.clone(),
        target: meta.target.clone(),
        seed: cfg.seed,
        capacity: cfg.capacity,
        block_size: cfg.block_size,
        fullness: cfg.fullness,
        exact_sizes: cfg.exact_sizes,
        directories: planner.tree().len() as u64 - 1,
        directories_added: planner
            .tree()
            .adjusted
            .iter()
            .map(|&(d, _, made)| (d, made))
            .collect(),
        rapid_files: planner.rapid_files(),
        stop_reason: outcome.reason,
        error: outcome.error.as_ref().map(|e| e.to_string()).or_else(|| {
            outcome
                .op_log_error
                .as_ref()
                .map(|e| format!("op log: {e}"))
        }),
        converged: outcome.reason == StopReason::Converged,
        ticks,
        t_estimate: planner.total(),
        elapsed_s: elapsed,
        ops_per_s: outcome.session_ticks as f64 / session.max(1e-9),
        creates: c.creates,
        deletes: c.deletes,
        bytes_written: c.bytes_written,
        overwrites: ow,
        live_files: planner.live(),
        live_bytes: planner.allocated(),
        target_bytes: planner.target_bytes(),
        target_bytes_initial: planner.initial_target_bytes(),
        stable_ticks: ticks.saturating_sub(planner.rapid_files()),
        max_fullness_deviation_bytes: c.max_deviation,
        max_fullness_deviation: c.max_deviation as f64 / cfg.capacity.max(1) as f64,
        fullness_band_bytes: planner.band(),
        forced_creates: c.forced_creates,
        forced_deletes: c.forced_deletes,
        enospc_events: c.enospc,
        enospc_out_of_inodes: outcome.enospc_inodes,
        ceiling_bytes: planner.ceiling(),
        chi2_p: outcome.chi2_p,
        conditions: Conditions {
            ticks,
            t_estimate: planner.total(),
            elapsed_s: elapsed,
            max_time_s: stop.max_time.map(|d| d.as_secs_f64()),
            overwrites: ow,
            max_overwrites: stop.max_overwrites,
            chi2_p: outcome.chi2_p,
            confidence: stop.confidence,
            ops: ticks,
            max_ops: stop.max_ops,
        },
        age: Histogram::new(meta.age_labels.clone(), planner.age_targets(), &age_counts),
        size: Histogram::new(
            meta.size_labels.clone(),
            planner.size_targets(),
            planner.size_counts(),
        ),
        depth: Histogram::new(
            meta.depth_labels.clone(),
            planner.depth_targets(),
            planner.depth_counts(),
        ),
        unmet_size_bins: planner
            .unmeetable_bins()
            .into_iter()
            .map(|u| UnmetBin {
                label: meta.size_labels[u.bin].clone(),
                min_bytes: u.min_bytes,
                room_bytes: u.room_bytes,
                ideal: u.target_fraction,
                reason: u.reason,
            })
            .collect(),
        clipped_size_bins: planner
            .clipped_bins()
            .into_iter()
            .map(|(bin, max_bytes)| ClippedBin {
                label: meta.size_labels[bin].clone(),
                max_bytes,
                ideal: planner.size_targets()[bin],
            })
            .collect(),
        fit: None,
        profile_toml: Some(meta.profile_toml.clone()),
    };
    let off = (rep.live_bytes as f64 - rep.target_bytes as f64) / cfg.capacity.max(1) as f64;
    rep.fit = Some(Fit {
        age: rep.age.rmse < Fit::AGE_RMSE,
        size: rep.size.max_abs_error < Fit::BIN_POINTS,
        depth: rep.depth.max_abs_error < Fit::BIN_POINTS,
        fullness: off.abs() < Fit::FULLNESS_POINTS,
        fullness_off: off,
    });
    rep
}
