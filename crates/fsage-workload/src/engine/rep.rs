//! One repetition: the thread instances started on a barrier, the main thread watching them
//! (progress, interrupts, the time series, the cache limit's hook) until all have ended.

use super::stats::{merge, ThreadOut};
use super::worker::worker;
use super::{Observer, Phase, Progress, RunConfig, Stop};
use crate::control::Control;
use crate::error::Error;
use crate::fileset::{Fileset, Layout};
use crate::kind::{FileOp, FlowopKind};
use crate::model::{FlowopDef, QuitMode};
use crate::result::RepResult;
use crate::sampler::Sampler;
use crate::workload::Workload;
use fsage_plan::{DataPattern, Rng};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

#[repr(align(64))]
pub(super) struct Padded(pub(super) AtomicU64);

/// Threads say they are ready (buffers allocated), then wait for the go (a barrier that the
/// main thread can also open when starting a thread failed).
pub(super) struct Gate {
    pub(super) ready: AtomicU64,
    pub(super) go: AtomicBool,
}

pub(super) struct Shared<'a> {
    pub(super) filesets: Vec<Fileset>,
    pub(super) stop: AtomicBool,
    pub(super) tickets: AtomicU64,
    pub(super) max_ops: Option<u64>,
    pub(super) start: OnceLock<Instant>,
    pub(super) warmup: Duration,
    pub(super) duration: Option<Duration>,
    pub(super) counters: Vec<Padded>,
    pub(super) finished: AtomicU64,
    pub(super) error: Mutex<Option<Error>>,
    pub(super) record: bool,
    pub(super) data: DataPattern,
    pub(super) flowops: &'a [Vec<FlowopDef>],
    pub(super) control: Control,
    pub(super) mode: QuitMode,
    /// Why the first thread that finished did (a finish reached, a fileset used up).
    pub(super) done: Mutex<Option<String>>,
}

impl Shared<'_> {
    pub(super) fn fail(&self, e: Error) {
        let mut g = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.stop.store(true, Relaxed);
    }
}

pub(super) fn seed_of(seed: u64, rep: u32, thread: u64) -> u64 {
    let mut r = Rng::new(seed ^ (rep as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for _ in 0..(thread % 7) {
        r.next_u64();
    }
    r.next_u64() ^ thread.wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_rep(
    w: &Workload,
    cfg: &RunConfig,
    stop: Stop,
    layouts: &[Layout],
    target: &Path,
    rep: u32,
    obs: &mut dyn Observer,
    hook: &mut dyn FnMut(bool) -> Result<(), Error>,
) -> Result<RepResult, Error> {
    let model = w.model();
    let flowops: Vec<Vec<FlowopDef>> = model.threads.iter().map(|t| t.flowops.clone()).collect();
    let filesets: Vec<Fileset> = model
        .filesets
        .iter()
        .zip(layouts)
        .enumerate()
        .map(|(i, (d, l))| {
            let uses = |k: FileOp| {
                model
                    .threads
                    .iter()
                    .flat_map(|t| &t.flowops)
                    .any(|f| f.kind == FlowopKind::File(k) && f.fileset == Some(i))
            };
            Fileset::new(
                l,
                d.readonly,
                uses(FileOp::CreateFile) || uses(FileOp::MakeDir),
                uses(FileOp::DeleteFile) || uses(FileOp::RemoveDir),
            )
        })
        .collect();
    // Thread instances: (definition index, global index).
    let mut instances = Vec::new();
    for (d, t) in model.threads.iter().enumerate() {
        for _ in 0..cfg.threads.unwrap_or(t.instances) {
            instances.push(d);
        }
    }
    let n = instances.len();
    let rotors = instances
        .iter()
        .filter(|&&d| model.threads[d].flowops.iter().any(|f| f.opennext))
        .count();
    raise_fd_limit((rotors * crate::flowop::ROTOR + n * 8 + 256) as u64);
    let sh = Shared {
        filesets,
        stop: AtomicBool::new(false),
        tickets: AtomicU64::new(0),
        max_ops: match stop {
            Stop::Ops(k) => Some(k),
            Stop::Duration(_) => None,
        },
        start: OnceLock::new(),
        warmup: cfg.warmup,
        duration: match stop {
            Stop::Duration(d) => Some(d),
            Stop::Ops(_) => None,
        },
        counters: (0..n).map(|_| Padded(AtomicU64::new(0))).collect(),
        finished: AtomicU64::new(0),
        error: Mutex::new(None),
        record: cfg.record_latency,
        data: cfg.data,
        flowops: &flowops,
        control: Control::new(model, &instances),
        mode: model.mode,
        done: Mutex::new(None),
    };
    let barrier = Gate {
        ready: AtomicU64::new(0),
        go: AtomicBool::new(false),
    };
    let mut interrupted = false;
    let mut outs: Vec<ThreadOut> = Vec::with_capacity(n);
    let mut timeline = None;
    let start = std::thread::scope(|s| -> Result<Instant, Error> {
        let mut handles = Vec::with_capacity(n);
        for (t, &def) in instances.iter().enumerate() {
            let sh = &sh;
            let barrier = &barrier;
            let seed = seed_of(cfg.seed, rep, t as u64);
            let h = std::thread::Builder::new()
                .name(format!("fsage-bench-{t}"))
                .stack_size(256 << 10)
                .spawn_scoped(s, move || worker(sh, def, t, seed, barrier))
                .map_err(|e| Error::io("starting thread", format!("#{t}"), e));
            match h {
                Ok(h) => handles.push(h),
                Err(e) => {
                    // The threads started so far wait for the go: tell them to stop at once.
                    sh.stop.store(true, Relaxed);
                    let _ = sh.start.set(Instant::now());
                    barrier.go.store(true, Relaxed);
                    return Err(e);
                }
            }
        }
        // Every thread has its buffers: the memory the benchmark itself needs is allocated.
        while barrier.ready.load(Relaxed) < n as u64 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let hooked = hook(true);
        let start = Instant::now();
        let _ = sh.start.set(start);
        let mut sampler = cfg.sample.map(|i| Sampler::new(i, target, start));
        if hooked.is_err() {
            sh.stop.store(true, Relaxed);
        }
        let mut measuring = cfg.warmup.is_zero();
        if measuring {
            obs.measuring(true);
        }
        barrier.go.store(true, Relaxed);
        let mut last = (Instant::now(), 0u64);
        while sh.finished.load(Relaxed) < n as u64 {
            std::thread::sleep(Duration::from_millis(50));
            if !measuring && start.elapsed() >= cfg.warmup {
                measuring = true;
                obs.measuring(true);
            }
            if fsage_signals::interrupted() && !sh.stop.load(Relaxed) {
                interrupted = true;
                sh.stop.store(true, Relaxed);
            }
            let now = Instant::now();
            if let Some(s) = sampler.as_mut() {
                s.tick(now, sh.counters.iter().map(|c| c.0.load(Relaxed)).sum());
            }
            if now.duration_since(last.0) >= Duration::from_millis(200) {
                let done: u64 = sh.counters.iter().map(|c| c.0.load(Relaxed)).sum();
                let rate = (done - last.1) as f64 / now.duration_since(last.0).as_secs_f64();
                last = (now, done);
                let el = now.duration_since(start);
                let _ = hook(false);
                obs.progress(&Progress {
                    rep,
                    reps: cfg.reps,
                    phase: if el < cfg.warmup {
                        Phase::Warmup
                    } else {
                        Phase::Measure
                    },
                    elapsed: el,
                    done,
                    total: sh.max_ops,
                    ops_per_sec_now: rate,
                });
            }
        }
        for h in handles {
            match h.join() {
                Ok(o) => outs.push(o),
                Err(_) => sh.fail(Error::NoResult("a benchmark thread panicked".into())),
            }
        }
        if measuring {
            obs.measuring(false);
        }
        timeline = sampler.map(|s| {
            s.finish(
                Instant::now(),
                sh.counters.iter().map(|c| c.0.load(Relaxed)).sum(),
            )
        });
        hooked?;
        Ok(start)
    })?;
    let _ = hook(false);
    if let Some(e) = sh.error.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(e);
    }
    let done = sh.done.lock().unwrap_or_else(|e| e.into_inner()).take();
    let mut r = merge(w, cfg, rep, n as u64, start, outs, interrupted);
    r.done = done;
    r.timeline = timeline;
    Ok(r)
}

/// Raises the open-file limit to `want` where it is lower (the hard limit too, which root may):
/// Filebench's threads are processes with a descriptor table each, fsage's share one, and
/// oltp's 210 `opennext` threads keep 128 files open each. Where it cannot, the opens past the
/// limit fail with their error.
pub(super) fn raise_fd_limit(want: u64) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    if now.current.is_some_and(|c| c >= want) {
        return;
    }
    let max = now.maximum.map_or(want, |m| m.max(want));
    let raised = Rlimit {
        current: Some(want),
        maximum: Some(max),
    };
    if setrlimit(Resource::Nofile, raised).is_err() {
        // Not allowed to raise the hard limit: the soft one up to it.
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: now.maximum.map(|m| m.min(want)),
                maximum: now.maximum,
            },
        );
    }
}
