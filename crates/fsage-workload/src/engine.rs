//! Running a workload: filesets laid out under the target, then one OS thread per thread instance
//! in this process, each looping over its flowops until the time or the operation count is up.
//! Each thread keeps its own counters and HDR histograms (no lock on the hot path) and they are
//! merged when the threads have ended.

use crate::cgroup::MemCgroup;
use crate::control::{self, Control, Counts};
use crate::error::{Error, Setting};
use crate::fileset::{self, Fileset, Layout};
use crate::flowop::{exec_data, exec_file, Buf, Fail, ThreadIo};
use crate::kind::{DataOp, FileOp, FlowopKind};
use crate::model::{FlowopDef, QuitMode};
use crate::result::{
    BenchResult, CacheLimit, Environment, FlowopResult, OpStats, RepResult, Summary,
};
use crate::sampler::Sampler;
use crate::workload::Workload;
use fsage_plan::{DataPattern, Rng};
use hdrhistogram::Histogram;
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::time::TimeVal;
use rustix::fs::{Mode, OFlags};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

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
}

/// An observer that ignores everything.
pub struct NoObserver;
impl Observer for NoObserver {}

const MARKER: &str = ".fsage-bench.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Marker {
    made_by: String,
    workload: String,
    filesets: Vec<String>,
}

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

/// Runs `w` on `target` as `cfg` says. The target must be an empty directory (made if missing,
/// when its parent exists) or hold a fileset an earlier run made (with `cfg.reuse`); nothing is
/// written outside it.
pub fn run(
    w: &Workload,
    cfg: &RunConfig,
    target: &Path,
    obs: &mut dyn Observer,
) -> Result<BenchResult, Error> {
    let model = w.model();
    cfg.check()?;
    let stop = cfg.stop.unwrap_or(Stop::Duration(Duration::from_secs(
        model.run_secs.unwrap_or(60),
    )));
    match stop {
        Stop::Duration(d) if d.is_zero() => {
            return Err(Error::Config("the duration must be above zero".into()))
        }
        Stop::Ops(0) => {
            return Err(Error::Config(
                "the operation count must be above zero".into(),
            ))
        }
        _ => {}
    }
    for n in &model.notes {
        obs.note(&format!("{}: {n}", w.origin));
    }
    let uses_aio = model
        .threads
        .iter()
        .flat_map(|t| &t.flowops)
        .any(|f| f.kind == FlowopKind::Data(DataOp::AioWrite));
    if uses_aio && !crate::aio::io_uring_available() {
        obs.note("aiowrite: this kernel refuses io_uring, so the writes are synchronous (pwrite) and aiowait has nothing to wait for");
    }
    let names: Vec<String> = model.filesets.iter().map(|f| f.name.clone()).collect();
    // Refused from the sizes alone, before anything is made or planned (planning 10^8 entries
    // takes minutes and gigabytes).
    let parent_stat = fsage_sys::fs_stat(if target.exists() {
        target
    } else {
        target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
    })
    .map_err(|e| Error::io("statfs", target, e))?;
    if cfg.cache_ratio.is_some() && parent_stat.magic == fsage_sys::TMPFS_MAGIC {
        return Err(Error::Config(
            "the page cache cannot be limited on tmpfs: its files live in the page cache".into(),
        ));
    }
    let mut est_bytes = 0f64;
    let mut plan_bytes = 0u64;
    let room = parent_stat.available as f64 * 1.1 + (64u64 << 20) as f64;
    for d in &model.filesets {
        let mine = d.entries as f64 * d.prealloc as f64 / 100.0 * d.size.mean();
        est_bytes += mine;
        if est_bytes > room && !cfg.reuse {
            return Err(Error::Parse {
                origin: w.origin.clone(),
                line: d.line,
                msg: format!(
                    "fileset {} does not fit: its preallocated files take about {:.0} MiB (entries x prealloc x mean size){}, and {} has {} MiB available",
                    d.name,
                    mine / 1048576.0,
                    if est_bytes > mine { format!(" plus {:.0} MiB for the filesets before it", (est_bytes - mine) / 1048576.0) } else { String::new() },
                    target.display(),
                    parent_stat.available >> 20
                ),
            });
        }
        // The plan keeps a path, a size and a state per entry: about 200 bytes (all the
        // filesets' plans are held at once).
        plan_bytes = plan_bytes.saturating_add(d.entries.saturating_mul(200));
        if let Some(avail) = available_memory() {
            if plan_bytes > avail / 2 {
                return Err(Error::Parse {
                    origin: w.origin.clone(),
                    line: d.line,
                    msg: format!(
                        "fileset {}: {} entries need about {} MiB of memory to plan and this machine has {} MiB available: lower entries",
                        d.name, d.entries, plan_bytes >> 20, avail >> 20
                    ),
                });
            }
        }
    }
    // Each thread instance holds a data buffer of its largest iosize (see `worker`), and a second
    // one for writes when reads must not change what they write (zeros, a compressibility).
    let buffers = if cfg.data.reads_share_the_write_buffer() {
        1
    } else {
        2
    };
    let mut buf_bytes = 0u64;
    for t in &model.threads {
        let iomax = t
            .flowops
            .iter()
            .filter_map(|f| f.iosize)
            .max()
            .unwrap_or(1 << 20)
            .max(4096)
            + 4096;
        let n = cfg.threads.unwrap_or(t.instances);
        buf_bytes = buf_bytes.saturating_add(iomax.saturating_mul(n).saturating_mul(buffers));
        if let Some(avail) = available_memory() {
            if buf_bytes > avail / 2 {
                return Err(Error::Parse {
                    origin: w.origin.clone(),
                    line: t.line,
                    msg: format!(
                        "thread {}: the threads' I/O buffers (instances x largest iosize) need about {} MiB of memory and this machine has {} MiB available: lower instances or iosize",
                        t.name, buf_bytes >> 20, avail >> 20
                    ),
                });
            }
        }
    }
    let made = !target.exists();
    let r = run_checked(w, cfg, target, obs, stop, &names);
    if made
        && r.as_ref().is_err_and(|e| {
            !matches!(
                e,
                Error::Interrupted
                    | Error::Io { .. }
                    | Error::NoResult(_)
                    | Error::RunDry { .. }
                    | Error::Workload { .. }
            )
        })
    {
        // A refusal leaves nothing behind: the directory it made and its marker go.
        let _ = std::fs::remove_file(target.join(MARKER));
        let _ = std::fs::remove_dir(target);
    }
    r
}

/// MemAvailable from /proc/meminfo, in bytes.
fn available_memory() -> Option<u64> {
    let t = std::fs::read_to_string("/proc/meminfo").ok()?;
    let l = t.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn run_checked(
    w: &Workload,
    cfg: &RunConfig,
    target: &Path,
    obs: &mut dyn Observer,
    stop: Stop,
    names: &[String],
) -> Result<BenchResult, Error> {
    let model = w.model();
    check_target(target, names, cfg.reuse)?;
    let layouts: Vec<Layout> = model
        .filesets
        .iter()
        .map(|d| fileset::plan(d, target, cfg.seed))
        .collect();
    // Does it fit?
    let st = fsage_sys::fs_stat(target).map_err(|e| Error::io("statfs", target, e))?;
    for (d, l) in model.filesets.iter().zip(&layouts) {
        let need = l.prealloc_bytes();
        let present = if cfg.reuse { l.present_bytes() } else { 0 };
        let others: u64 = layouts
            .iter()
            .filter(|o| o.name != l.name)
            .map(|o| o.prealloc_bytes())
            .sum();
        if need + others > st.available + present {
            return Err(Error::Parse {
                origin: w.origin.clone(),
                line: d.line,
                msg: format!(
                    "fileset {} does not fit: its preallocated files take {} bytes ({} of {} entries, mean {:.0} B){}, and {} has {} bytes available",
                    d.name,
                    need,
                    l.entries.iter().filter(|e| e.prealloc).count(),
                    d.entries,
                    d.size.mean(),
                    if others > 0 { format!(" plus {others} for the other filesets") } else { String::new() },
                    target.display(),
                    st.available + present
                ),
            });
        }
    }
    let target_fs = st.type_name();
    let marker = Marker {
        made_by: format!("fsage {}", env!("CARGO_PKG_VERSION")),
        workload: w.name.clone(),
        filesets: names.to_vec(),
    };
    fsage_sys::write_atomic(
        &target.join(MARKER),
        serde_json::to_string_pretty(&marker)
            .expect("marker serialises")
            .as_bytes(),
    )
    .map_err(|e| Error::io("writing", target.join(MARKER), e.err))?;

    let mut cg = match cfg.cache_ratio {
        Some(_) if st.magic == fsage_sys::TMPFS_MAGIC => {
            return Err(Error::Config(
                "the page cache cannot be limited on tmpfs: its files live in the page cache"
                    .into(),
            ))
        }
        Some(_) => {
            let mut c = MemCgroup::create()?;
            c.enter()?;
            Some(c)
        }
        None => None,
    };
    let fileset_bytes: u64 = layouts.iter().map(|l| l.total_bytes()).sum();
    let mut cache_limit: Option<CacheLimit> = None;
    let mut peak_reset = false;
    let mut reps = Vec::new();
    let mut interrupted = false;
    let outcome = (|| -> Result<(), Error> {
        for rep in 0..cfg.reps {
            let t_layout = Instant::now();
            for l in &layouts {
                l.materialize(cfg.data, |done, total| {
                    obs.progress(&Progress {
                        rep,
                        reps: cfg.reps,
                        phase: Phase::Layout,
                        elapsed: t_layout.elapsed(),
                        done,
                        total: Some(total),
                        ops_per_sec_now: 0.0,
                    });
                    !fsage_signals::interrupted()
                })?;
            }
            // Every repetition starts with nothing left to write back: otherwise the previous
            // one's dirty pages (gigabytes for fileserver) are written back during this one, by
            // an amount that differs from repetition to repetition.
            if cfg.drop_caches || cg.is_some() {
                rustix::fs::sync();
            } else {
                settle(target)?;
            }
            if cfg.drop_caches {
                std::fs::write("/proc/sys/vm/drop_caches", "3")
                    .map_err(|e| Error::io("writing 3 to", "/proc/sys/vm/drop_caches", e))?;
            }
            let r = run_rep(w, cfg, stop, &layouts, target, rep, obs, &mut |ready| {
                if let Some(c) = &cg {
                    if ready {
                        if cache_limit.is_none() {
                            let r = cfg.cache_ratio.unwrap_or(1.0);
                            let cache_bytes = (fileset_bytes as f64 * r) as u64;
                            let own = c.usage().saturating_sub(c.cache()) + (16 << 20);
                            let limit = cache_bytes + own;
                            c.set_limit(limit)?;
                            peak_reset = c.reset_peak();
                            cache_limit = Some(CacheLimit {
                                cgroup: c.version().into(),
                                ratio: r,
                                fileset_bytes,
                                cache_bytes,
                                own_bytes: own,
                                limit_bytes: limit,
                                peak_bytes: 0,
                                peak_cache_bytes: 0,
                            });
                        }
                    } else if let Some(l) = &mut cache_limit {
                        l.peak_cache_bytes = l.peak_cache_bytes.max(c.cache());
                        l.peak_bytes = l.peak_bytes.max(c.usage());
                    }
                }
                Ok(())
            })?;
            interrupted |= r.interrupted;
            obs.rep_done(&r);
            reps.push(r);
            if interrupted {
                break;
            }
        }
        Ok(())
    })();
    if let (Some(c), Some(l)) = (&cg, &mut cache_limit) {
        if peak_reset {
            l.peak_bytes = l.peak_bytes.max(c.peak());
        }
        l.peak_cache_bytes = l.peak_cache_bytes.max(c.cache());
    }
    if let Some(c) = cg.take() {
        let removed = c.remove();
        outcome?;
        removed?;
    } else {
        outcome?;
    }
    let total_ops: u64 = reps.iter().map(|r| r.overall.ops).sum();
    if total_ops == 0 {
        if interrupted {
            return Err(Error::Interrupted);
        }
        return Err(Error::NoResult(
            "no operation completed in the measured interval (a longer duration or more operations may help)".into(),
        ));
    }
    // An interrupted last repetition is reported but left out of the summary when complete
    // ones exist.
    let complete: Vec<RepResult> = reps.iter().filter(|r| !r.interrupted).cloned().collect();
    let summary = Summary::of(if complete.is_empty() {
        &reps
    } else {
        &complete
    });
    Ok(BenchResult {
        workload: w.name.clone(),
        workload_text: w.to_f_text(),
        stop: match stop {
            Stop::Duration(d) => format!("duration {}s", d.as_secs_f64()),
            Stop::Ops(n) => format!("ops {n}"),
        },
        environment: Environment {
            fsage_version: env!("CARGO_PKG_VERSION").into(),
            platform: fsage_sys::PlatformKind::current(),
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            target: target.display().to_string(),
            target_fs,
            seed: cfg.seed,
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        },
        cache_limit,
        drop_caches: cfg.drop_caches,
        latency_recorded: cfg.record_latency,
        data: cfg.data,
        reps,
        summary,
        interrupted,
    })
}

/// An empty directory (made if missing), or one holding only what an earlier run made.
fn check_target(target: &Path, filesets: &[String], reuse: bool) -> Result<(), Error> {
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return std::fs::create_dir(target).map_err(|e| Error::io("making", target, e));
        }
        Err(e) => return Err(Error::io("stat", target, e)),
        Ok(m) if !m.is_dir() => {
            return Err(Error::Target(format!(
                "{}: not a directory",
                target.display()
            )))
        }
        Ok(_) => {}
    }
    let mut others = Vec::new();
    let mut has_marker = false;
    for e in std::fs::read_dir(target).map_err(|e| Error::io("reading", target, e))? {
        let e = e.map_err(|e| Error::io("reading", target, e))?;
        let n = e.file_name().to_string_lossy().into_owned();
        if n == MARKER {
            has_marker = true;
        } else if !fsage_sys::is_fs_own_root_entry(&e.file_name()) {
            others.push(n);
        }
    }
    if others.is_empty() && !has_marker {
        return Ok(());
    }
    if !has_marker {
        return Err(Error::Target(format!(
            "{} is not empty and holds no fileset fsage made (found {}): give an empty directory",
            target.display(),
            others
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if !reuse {
        return Err(Error::Target(format!(
            "{} holds a fileset from an earlier fsage bench run: reuse it or give an empty directory",
            target.display()
        )));
    }
    if let Some(x) = others.iter().find(|o| !filesets.contains(o)) {
        return Err(Error::Target(format!(
            "{} holds {x}, which is not a fileset of this workload: give an empty directory",
            target.display()
        )));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// One repetition.

#[repr(align(64))]
struct Padded(AtomicU64);

/// Threads say they are ready (buffers allocated), then wait for the go (a barrier that the
/// main thread can also open when starting a thread failed).
struct Gate {
    ready: AtomicU64,
    go: AtomicBool,
}

struct Shared<'a> {
    filesets: Vec<Fileset>,
    stop: AtomicBool,
    tickets: AtomicU64,
    max_ops: Option<u64>,
    start: OnceLock<Instant>,
    warmup: Duration,
    duration: Option<Duration>,
    counters: Vec<Padded>,
    finished: AtomicU64,
    error: Mutex<Option<Error>>,
    record: bool,
    data: DataPattern,
    flowops: &'a [Vec<FlowopDef>],
    control: Control,
    mode: QuitMode,
    /// Why the first thread that finished did (a finish reached, a fileset used up).
    done: Mutex<Option<String>>,
}

impl Shared<'_> {
    fn fail(&self, e: Error) {
        let mut g = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_none() {
            *g = Some(e);
        }
        self.stop.store(true, Relaxed);
    }
}

#[derive(Default)]
struct FlowStats {
    ops: u64,
    read: u64,
    written: u64,
    enospc: u64,
    sum_ns: u128,
    max_ns: u64,
    hist: Option<Histogram<u64>>,
    /// CPU time of the sampled operations (one in [`CPU_SAMPLE_EVERY`]), and how many.
    cpu_ns: u64,
    cpu_samples: u64,
}

struct ThreadOut {
    def: usize,
    flows: Vec<FlowStats>,
    last_end: Option<Instant>,
    cpu_ns: Option<u64>,
}

/// The CPU time of the calling thread in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`): a system
/// call, so per operation it is read only for a sample.
fn thread_clock_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// One operation in this many has its CPU time measured, for the CPU time per flowop. Prime,
/// so that it does not keep falling on the same flowops of a thread's cycle.
const CPU_SAMPLE_EVERY: u64 = 251;

/// The calling thread's user and system time in nanoseconds (0 if the kernel refuses, which it
/// does not for `RUSAGE_THREAD`). rustix has no getrusage: nix.
fn thread_cpu_ns() -> u64 {
    let Ok(ru) = getrusage(UsageWho::RUSAGE_THREAD) else {
        return 0;
    };
    let t = |tv: TimeVal| tv.tv_sec() as u64 * 1_000_000_000 + tv.tv_usec() as u64 * 1000;
    t(ru.user_time()) + t(ru.system_time())
}

fn seed_of(seed: u64, rep: u32, thread: u64) -> u64 {
    let mut r = Rng::new(seed ^ (rep as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    for _ in 0..(thread % 7) {
        r.next_u64();
    }
    r.next_u64() ^ thread.wrapping_mul(0xbf58_476d_1ce4_e5b9)
}

#[allow(clippy::too_many_arguments)]
fn run_rep(
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
        barrier.go.store(true, Relaxed);
        let mut last = (Instant::now(), 0u64);
        while sh.finished.load(Relaxed) < n as u64 {
            std::thread::sleep(Duration::from_millis(50));
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
fn raise_fd_limit(want: u64) {
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

fn merge(
    w: &Workload,
    cfg: &RunConfig,
    rep: u32,
    threads: u64,
    start: Instant,
    outs: Vec<ThreadOut>,
    interrupted: bool,
) -> RepResult {
    let model = w.model();
    let w_end = start + cfg.warmup;
    let end = outs.iter().filter_map(|o| o.last_end).max();
    let secs = end.map_or(0.0, |e| e.saturating_duration_since(w_end).as_secs_f64());
    let mut merged: Vec<Vec<FlowStats>> = model
        .threads
        .iter()
        .map(|t| t.flowops.iter().map(|_| FlowStats::default()).collect())
        .collect();
    let mut cpu = 0u64;
    let mut cpu_known = false;
    let mut total = FlowStats::default();
    for o in outs {
        if let Some(c) = o.cpu_ns {
            cpu += c;
            cpu_known = true;
        }
        for (k, f) in o.flows.into_iter().enumerate() {
            let m = &mut merged[o.def][k];
            add(m, &f);
            if model.threads[o.def].flowops[k].kind.is_io() {
                add(&mut total, &f);
            }
        }
    }
    let stats = |f: &FlowStats| -> OpStats {
        let rate = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let lat = |q: f64| {
            f.hist
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| h.value_at_quantile(q) as f64 / 1e3)
        };
        OpStats {
            ops: f.ops,
            ops_per_sec: rate(f.ops as f64),
            mb_per_sec: rate((f.read + f.written) as f64 / 1e6),
            bytes_read: f.read,
            bytes_written: f.written,
            mean_us: (cfg.record_latency && f.ops > 0)
                .then(|| f.sum_ns as f64 / f.ops as f64 / 1e3),
            p50_us: lat(0.5),
            p90_us: lat(0.9),
            p99_us: lat(0.99),
            p999_us: lat(0.999),
            max_us: (cfg.record_latency && f.ops > 0).then(|| f.max_ns as f64 / 1e3),
            enospc: f.enospc,
        }
    };
    let mut flowops: Vec<FlowopResult> = Vec::new();
    for (d, t) in model.threads.iter().enumerate() {
        // A composite flowop expanded several times repeats its flowops' names: one row each.
        for (k, f) in t.flowops.iter().enumerate() {
            if let Some(first) = t.flowops[..k]
                .iter()
                .position(|x| x.name == f.name && x.kind == f.kind)
            {
                let (a, b) = merged[d].split_at_mut(k);
                add(&mut a[first], &b[0]);
                b[0] = FlowStats::default();
            }
        }
        for (k, f) in t.flowops.iter().enumerate() {
            if t.flowops[..k]
                .iter()
                .any(|x| x.name == f.name && x.kind == f.kind)
            {
                continue;
            }
            flowops.push(FlowopResult {
                name: f.name.clone(),
                kind: f.kind.name().into(),
                thread: t.name.clone(),
                stats: stats(&merged[d][k]),
                cpu_us_per_op: (merged[d][k].cpu_samples > 0)
                    .then(|| merged[d][k].cpu_ns as f64 / merged[d][k].cpu_samples as f64 / 1e3),
                cpu_samples: merged[d][k].cpu_samples,
            });
        }
    }
    let overall = stats(&total);
    RepResult {
        rep,
        seed: cfg.seed,
        threads,
        warmup_secs: cfg.warmup.as_secs_f64(),
        measured_secs: secs,
        cpu_us_per_op: (cpu_known && overall.ops > 0)
            .then(|| cpu as f64 / overall.ops as f64 / 1e3),
        flowops,
        overall,
        interrupted,
        done: None,
        timeline: None,
    }
}

fn add(m: &mut FlowStats, f: &FlowStats) {
    m.ops += f.ops;
    m.read += f.read;
    m.written += f.written;
    m.enospc += f.enospc;
    m.sum_ns += f.sum_ns;
    m.max_ns = m.max_ns.max(f.max_ns);
    m.cpu_ns += f.cpu_ns;
    m.cpu_samples += f.cpu_samples;
    if let Some(h) = &f.hist {
        match &mut m.hist {
            Some(mh) => {
                let _ = mh.add(h);
            }
            None => m.hist = Some(h.clone()),
        }
    }
}

fn settle(target: &Path) -> Result<(), Error> {
    let dir = rustix::fs::open(
        target,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io("opening", target, e.into()))?;
    rustix::fs::syncfs(&dir).map_err(|e| Error::io("syncfs", target, e.into()))
}

/// Told apart from a thread's seed for its buffer's bytes (the choices take the seed itself).
const DATA_SALT: u64 = 0xda7a_b0f5_5eed_0001;

/// Latencies above 100 s are recorded as 100 s in the histogram (the exact max is kept apart).
const HIST_MAX_NS: u64 = 100_000_000_000;

fn worker(sh: &Shared, def: usize, t: usize, seed: u64, barrier: &Gate) -> ThreadOut {
    let flowops = &sh.flowops[def];
    let iomax = flowops
        .iter()
        .filter_map(|f| f.iosize)
        .max()
        .unwrap_or(1 << 20)
        .max(4096) as usize;
    // The buffer's bytes come from a generator of their own: the choices (files, sizes,
    // offsets) of a seed are then the same whatever the data pattern and the buffer's size.
    let buf = Buf::new(iomax, sh.data, &mut Rng::new(seed ^ DATA_SALT));
    let mut tio = ThreadIo::new(buf, Rng::new(seed));
    let mut counts = Counts::new(flowops.len());
    let mut flows: Vec<FlowStats> = flowops
        .iter()
        .map(|_| FlowStats {
            hist: sh
                .record
                .then(|| Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid bounds")),
            ..FlowStats::default()
        })
        .collect();
    // What a sample's two clock reads cost by themselves: the median of a few empty samples,
    // taken off every sample.
    let clock_cost = {
        let mut v: Vec<u64> = (0..31)
            .map(|_| {
                let a = thread_clock_ns();
                thread_clock_ns().saturating_sub(a)
            })
            .collect();
        v.sort_unstable();
        v[v.len() / 2]
    };
    barrier.ready.fetch_add(1, Relaxed);
    while !barrier.go.load(Relaxed) {
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = *sh.start.get().expect("start set before the barrier");
    let w_end = start + sh.warmup;
    let end = sh.duration.map(|d| w_end + d);
    let mut measuring = false;
    let mut cpu0 = 0;
    let mut last_end = None;
    let mut done = 0u64;
    let stop_now = || sh.stop.load(Relaxed) || end.is_some_and(|e| Instant::now() >= e);
    'run: while !sh.stop.load(Relaxed) {
        for (k, f) in flowops.iter().enumerate() {
            for _ in 0..f.iters {
                let t0 = Instant::now();
                if sh.stop.load(Relaxed) || end.is_some_and(|e| t0 >= e) {
                    break 'run;
                }
                let counted = t0 >= w_end;
                if counted && !measuring {
                    measuring = true;
                    cpu0 = thread_cpu_ns();
                }
                if counted {
                    if let Some(max) = sh.max_ops {
                        if sh.tickets.fetch_add(1, Relaxed) >= max {
                            sh.stop.store(true, Relaxed);
                            break 'run;
                        }
                    }
                }
                let sample = sh.record && counted && done % CPU_SAMPLE_EVERY == 0;
                // A first clock read lets a switch to another thread that is already due happen
                // before the sample starts, so that the sample does not charge it to this
                // operation (with 50 threads on 2 CPUs one often is).
                let c0 = if sample {
                    let _ = thread_clock_ns();
                    thread_clock_ns()
                } else {
                    0
                };
                // The latency does not include the sample's clock reads.
                let t0 = if sample { Instant::now() } else { t0 };
                // Operations this flowop counts for (a pacing flowop may count none or several).
                let mut n = 1;
                let r = match f.kind {
                    FlowopKind::Pace(op) => {
                        control::exec(&sh.control, op, flowops, t, k, &mut counts, &stop_now).map(
                            |c| {
                                n = c;
                                (0, 0)
                            },
                        )
                    }
                    FlowopKind::File(op) => exec_file(&sh.filesets, f, op, &mut tio, &stop_now),
                    FlowopKind::Data(op) => exec_data(&sh.filesets, f, op, &mut tio, &stop_now),
                };
                let t1 = Instant::now();
                // Files the operation opened by itself: one more operation each (Filebench
                // counts them so), timed apart from the operation.
                let mut open_ns = 0;
                for ns in tio.opened.drain(..) {
                    open_ns += ns;
                    // Under --ops an open takes a ticket too; one past the last is not counted.
                    if counted {
                        if let Some(max) = sh.max_ops {
                            if sh.tickets.fetch_add(1, Relaxed) >= max {
                                sh.stop.store(true, Relaxed);
                                continue;
                            }
                        }
                    }
                    counts.add(k, f.kind, 0);
                    if sh.control.global {
                        sh.control.ops.fetch_add(1, Relaxed);
                    }
                    if counted {
                        let st = &mut flows[k];
                        st.ops += 1;
                        if sh.record {
                            st.sum_ns += ns as u128;
                            st.max_ns = st.max_ns.max(ns);
                            if let Some(h) = &mut st.hist {
                                h.saturating_record(ns.clamp(1, HIST_MAX_NS));
                            }
                        }
                    }
                }
                if let Ok((rd, wr)) = r {
                    for _ in 1..n {
                        counts.add(k, f.kind, 0);
                    }
                    if n > 0 {
                        counts.add(k, f.kind, rd + wr);
                    }
                    if sh.control.global && f.kind.is_io() {
                        sh.control.ops.fetch_add(1, Relaxed);
                        sh.control.bytes.fetch_add(rd + wr, Relaxed);
                    }
                }
                // A fileset used up ends the thread in a run-until-done workload.
                let r = match r {
                    Err(Fail::Fatal(Error::RunDry { fileset, msg }))
                        if sh.mode != QuitMode::Timeout =>
                    {
                        Err(Fail::Done(format!("fileset {fileset} used up ({msg})")))
                    }
                    r => r,
                };
                match r {
                    Ok((rd, wr)) => {
                        if counted && n > 0 {
                            let st = &mut flows[k];
                            if sample {
                                st.cpu_ns += thread_clock_ns()
                                    .saturating_sub(c0)
                                    .saturating_sub(clock_cost);
                                st.cpu_samples += 1;
                            }
                            st.ops += n;
                            st.read += rd;
                            st.written += wr;
                            if sh.record {
                                let ns = (t1.duration_since(t0).as_nanos() as u64)
                                    .saturating_sub(open_ns);
                                st.sum_ns += ns as u128;
                                st.max_ns = st.max_ns.max(ns / n);
                                if let Some(h) = &mut st.hist {
                                    for _ in 0..n {
                                        h.saturating_record((ns / n).clamp(1, HIST_MAX_NS));
                                    }
                                }
                            }
                            last_end = Some(t1);
                        }
                    }
                    Err(Fail::Enospc) => {
                        if counted {
                            flows[k].enospc += 1;
                            last_end = Some(t1);
                        }
                    }
                    Err(Fail::Stopped) => break 'run,
                    Err(Fail::Done(why)) => {
                        let finish = f.kind.is_finish();
                        let mut d = sh.done.lock().unwrap_or_else(|e| e.into_inner());
                        if d.is_none() {
                            *d = Some(why);
                        }
                        drop(d);
                        // A finish ends the run, except under alldone, where every thread
                        // must be done.
                        if (finish && sh.mode != QuitMode::AllDone)
                            || sh.mode == QuitMode::FirstDone
                        {
                            sh.stop.store(true, Relaxed);
                        }
                        if counted {
                            last_end = Some(t1);
                        }
                        break 'run;
                    }
                    Err(Fail::Fatal(e)) => {
                        sh.fail(e);
                        break 'run;
                    }
                }
                done += 1;
                sh.counters[t].0.store(done, Relaxed);
            }
        }
    }
    let cpu_ns = measuring.then(|| thread_cpu_ns().saturating_sub(cpu0));
    tio.close_all(&sh.filesets);
    sh.finished.fetch_add(1, Relaxed);
    ThreadOut {
        def,
        flows,
        last_end,
        cpu_ns,
    }
}
