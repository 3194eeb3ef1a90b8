//! Running a workload: filesets laid out under the target, then one OS thread per thread instance
//! in this process, each looping over its flowops until the time or the operation count is up.
//! Each thread keeps its own counters and HDR histograms (no lock on the hot path) and they are
//! merged when the threads have ended.
//!
//! The jobs: `config.rs` (what a run is asked and tells), this file (checking the target and the
//! sizes, laying out, repetitions, the result), `rep.rs` (one repetition's threads and its
//! monitor), `worker.rs` (one thread's loop over its flowops), `stats.rs` (the counters and
//! histograms, merged per flowop).

mod config;
mod rep;
mod stats;
mod worker;

pub use config::{default_warmup, NoObserver, Observer, Phase, Progress, RunConfig, Stop};
use rep::run_rep;

use crate::cgroup::MemCgroup;
use crate::error::Error;
use crate::fileset::{self, Layout};
use crate::kind::{DataOp, FlowopKind};
use crate::result::{BenchResult, CacheLimit, Environment, RepResult, Summary};
use crate::workload::Workload;
use rustix::fs::{Mode, OFlags};
use std::path::Path;
use std::time::{Duration, Instant};

const MARKER: &str = ".fsage-bench.json";

#[derive(serde::Serialize, serde::Deserialize)]
struct Marker {
    made_by: String,
    workload: String,
    filesets: Vec<String>,
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
        lock_contention: None,
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

fn settle(target: &Path) -> Result<(), Error> {
    let dir = rustix::fs::open(
        target,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::io("opening", target, e.into()))?;
    rustix::fs::syncfs(&dir).map_err(|e| Error::io("syncfs", target, e.into()))
}
