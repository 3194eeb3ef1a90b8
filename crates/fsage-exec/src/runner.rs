//! The run loop: takes the planner's decisions one tick at a time, hands them to a backend, watches
//! the stopping conditions, and builds the report.

use crate::backend::{Backend, OpError};
use crate::live_ticks::LiveTicks;
use crate::oplog::OpLog;
use fsage_plan::stats::{chi2_p, rmse, to_fractions};
use fsage_plan::{OpKind, Phase, Planner};
use fsage_report::{human_bytes, Conditions, Histogram, RunReport, StopReason, UnmetBin};
use std::time::{Duration, Instant};

/// The optional stopping conditions; perfect convergence (T ticks) always applies.
#[derive(Debug, Clone, Default)]
pub struct StopConditions {
    pub max_time: Option<Duration>,
    /// Bytes written divided by the capacity.
    pub max_overwrites: Option<f64>,
    /// Stop once the chi-squared fit of the age histogram has at least this p-value.
    pub confidence: Option<f64>,
    /// Total ticks (operations), the rapid phase included.
    pub max_ops: Option<u64>,
}

/// What a progress display needs; computed only when asked for.
#[derive(Debug, Clone)]
pub struct Progress {
    pub phase: Phase,
    pub tick: u64,
    pub total: u64,
    pub elapsed: Duration,
    pub ops_per_s: f64,
    pub overwrites: f64,
    /// RMSE of the age histogram if the run ended now (walks the live files: call rarely).
    pub age_rmse: f64,
}

pub trait Observer {
    /// Called about every 4096 ticks; implementations decide themselves whether to redraw.
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
    pub elapsed: Duration,
    pub chi2_p: f64,
    pub op_log_error: Option<std::io::Error>,
    /// Refused creates for which the file system had no free inode left.
    pub enospc_inodes: u64,
}

fn overwrites(p: &Planner) -> f64 {
    p.counters.bytes_written as f64 / p.config().capacity.max(1) as f64
}

/// Makes the tree, then runs ticks until a stopping condition fires.
pub fn run<B: Backend>(
    planner: &mut Planner,
    backend: &mut B,
    mut oplog: Option<&mut OpLog>,
    stop: &StopConditions,
    observer: &mut dyn Observer,
) -> Outcome {
    let start = Instant::now();
    let outcome = |reason, error, planner: &Planner, op_log_error| Outcome {
        reason,
        error,
        elapsed: start.elapsed(),
        chi2_p: chi2_p(&planner.age_counts_now(), planner.age_targets()),
        op_log_error,
        enospc_inodes: 0,
    };
    let mut enospc_inodes = 0;
    if planner.tick() == 0 {
        if let Err(e) = backend.make_dirs(planner.tree()) {
            return outcome(StopReason::IoError, Some(e), planner, None);
        }
        if let Some(log) = oplog.as_deref_mut() {
            if let Err(e) = log.dirs(planner.tree()) {
                return outcome(StopReason::IoError, None, planner, Some(e));
            }
        }
    }
    let mut live_ticks = stop.confidence.map(|_| {
        let mut lt = LiveTicks::new(planner.total());
        for f in planner.live_files() {
            lt.insert(f.created);
        }
        lt
    });
    let mut log_error = None;
    let mut next_check = planner.tick() + 1000;
    let mut next_poll = planner.tick();
    let reason = loop {
        let tick = planner.tick();
        if stop.max_ops.is_some_and(|m| tick >= m) {
            break StopReason::MaxOps;
        }
        if stop
            .max_overwrites
            .is_some_and(|m| overwrites(planner) >= m)
        {
            break StopReason::MaxOverwrites;
        }
        if tick >= next_poll {
            next_poll = tick + 4096;
            let elapsed = start.elapsed();
            if crate::signals::interrupted() {
                break StopReason::Interrupted;
            }
            if stop.max_time.is_some_and(|m| elapsed >= m) {
                break StopReason::MaxTime;
            }
            let p: &Planner = planner;
            observer.update(
                &|| Progress {
                    phase: p.phase(),
                    tick: p.tick(),
                    total: p.total(),
                    elapsed,
                    ops_per_s: p.tick() as f64 / elapsed.as_secs_f64().max(1e-9),
                    overwrites: overwrites(p),
                    age_rmse: rmse(p.age_targets(), &to_fractions(&p.age_counts_now())),
                },
                elapsed,
            );
        }
        if let (Some(lt), Some(want)) = (live_ticks.as_ref(), stop.confidence) {
            if tick >= next_check {
                next_check = tick + 1000;
                let counts = lt.age_counts(planner.age_edges(), tick);
                if chi2_p(&counts, planner.age_targets()) >= want {
                    break StopReason::Confidence;
                }
            }
        }
        let Some(op) = planner.next_op() else {
            break if planner.tick() >= planner.total() && planner.live() > 0 {
                StopReason::Converged
            } else {
                StopReason::NothingFits
            };
        };
        match backend.apply(&op, planner.tree()) {
            Ok(()) => {
                if let Some(lt) = live_ticks.as_mut() {
                    match op.kind {
                        OpKind::Create => lt.insert(op.file.created),
                        OpKind::Delete => lt.remove(op.file.created),
                    }
                }
                if let Some(log) = oplog.as_deref_mut() {
                    if let Err(e) = log.op(&op, planner.tree()) {
                        log_error = Some(e);
                        break StopReason::IoError;
                    }
                }
            }
            Err(e) if e.is_no_space() && op.kind == OpKind::Create => {
                if backend.free_space().and_then(|f| f.inodes) == Some(0) {
                    enospc_inodes += 1;
                }
                planner.reject_create(&op);
                if let Some(log) = oplog.as_deref_mut() {
                    let _ = log.refused(&op, planner.tree());
                }
            }
            Err(e) => {
                let _ = backend.finish();
                if let Some(log) = oplog.as_deref_mut() {
                    let _ = log.flush();
                }
                let mut out = outcome(StopReason::IoError, Some(e), planner, None);
                out.enospc_inodes = enospc_inodes;
                return out;
            }
        }
    };
    let finish_err = backend.finish().err();
    if let Some(log) = oplog {
        if let Err(e) = log.flush() {
            log_error.get_or_insert(e);
        }
    }
    observer.finish();
    let mut out = match finish_err {
        Some(e) => outcome(StopReason::IoError, Some(e), planner, log_error),
        None => outcome(reason, None, planner, log_error),
    };
    out.enospc_inodes = enospc_inodes;
    out
}

/// A percentage with enough digits for bins from 0.001% to 100%.
fn pct(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.4}")
    }
}

/// Who ran what, for the report.
#[derive(Debug, Clone)]
pub struct RunMeta {
    pub profile: String,
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
                .map(|e| format!("<= {}%", pct(100.0 * e)))
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
    let elapsed = outcome.elapsed.as_secs_f64();
    let ticks = planner.tick();
    let age_counts = planner.age_counts_now();
    let ow = overwrites(planner);
    RunReport {
        fsage_version: env!("CARGO_PKG_VERSION").to_string(),
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
        ops_per_s: ticks as f64 / elapsed.max(1e-9),
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
    }
}
