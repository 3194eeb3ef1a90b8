//! `fsage bench run|list|show`: the Filebench-compatible workload engine (fsage-workload); `fsage
//! bench planner`: the planner's speed and memory per live file (`fsage_exec::planner_bench`), so
//! BENCHMARKS.md can show decisions per second and bytes per live file from 10^4 to 10^7 files.

use crate::exit::{bad_input, interrupted, CmdResult};
use clap::{Args, Subcommand};
use fsage_exec::planner_bench;
use fsage_profile::human_bytes;
use fsage_report::{export, Json, Text};
use fsage_sys::write_atomic;
use fsage_workload::{Observer, Phase, Progress, RunConfig, Stop, Workload, BUILTINS};
use std::io::Write;
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// Planner speed and memory per live file at several live-file counts (no I/O).
    Planner(PlannerArgs),
    /// Run a Filebench workload (a built-in or a .f file) on TARGET_DIR.
    Run(Box<RunArgs>),
    /// The built-in workloads.
    List,
    /// Print a workload as .f text (with --set applied).
    Show(ShowArgs),
}

#[derive(Args, Debug)]
pub struct PlannerArgs {
    #[arg(long, default_value = "agrawal")]
    pub profile: String,
    /// Live-file counts to measure at (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "10000,100000,1000000,10000000"
    )]
    pub live: Vec<u64>,
    /// Stable-phase decisions to time at each count.
    #[arg(long, default_value_t = 5_000_000)]
    pub ticks: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// A built-in (fileserver, varmail, webserver, webproxy) or a Filebench .f file.
    pub workload: String,
    /// Where the filesets go: an empty directory (made if missing), or one an earlier run
    /// filled (with --reuse).
    pub target: PathBuf,
    /// Override a variable of the workload: --set nfiles=50000 (repeatable).
    #[arg(long = "set", value_name = "VAR=VALUE")]
    pub set: Vec<String>,
    /// Measured time per repetition, e.g. 60s or 5m (default: the workload's `run N`, else 60s).
    #[arg(long, conflicts_with = "ops", value_name = "DUR", value_parser = crate::util::positive_duration)]
    pub duration: Option<std::time::Duration>,
    /// Stop after N operations (all threads together) instead of after a time.
    #[arg(long)]
    pub ops: Option<u64>,
    /// Run this long before measuring (e.g. 10s; 0 for none). Default: a tenth of the
    /// measured time, 1 to 10 s; none for --ops and for run-until-done workloads.
    #[arg(long, value_name = "DUR", value_parser = fsage_units::parse_duration)]
    pub warmup: Option<std::time::Duration>,
    /// Instances of every thread (instead of the workload's).
    #[arg(long)]
    pub threads: Option<u64>,
    /// Fixes every random choice: fileset sizes, which files exist, each thread's picks.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Repetitions (each from the same fileset state); the report gives the mean and 95% CI.
    #[arg(long, default_value_t = 1)]
    pub reps: u32,
    /// sync and drop the page, dentry and inode caches before each repetition.
    #[arg(long)]
    pub drop_caches: bool,
    /// Limit the page cache to R x the fileset's bytes with a memory cgroup (0.5 = 1:2).
    #[arg(long, value_name = "R")]
    pub cache_ratio: Option<f64>,
    /// Write the full result as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Use a TARGET_DIR that holds a fileset from an earlier run (brought back to its start).
    #[arg(long)]
    pub reuse: bool,
    /// Do not time operations (only to measure what latency recording costs).
    #[arg(long)]
    pub no_latency: bool,
    /// Record a time series every DUR (e.g. 1s): CPU utilization (user, system, iowait, idle),
    /// the target device's requests in flight and busy time, and ops/s, into --json and the
    /// report (CPU-bound or device-bound?).
    #[arg(long, value_name = "DUR", value_parser = crate::util::positive_duration)]
    pub sample: Option<std::time::Duration>,
    /// What the written bytes hold, the fileset's layout included: incompressible
    /// (pseudo-random, the default), zeros, filebench (what Filebench 1.5 writes: zeros from its
    /// zeroed thread memory, which reads land in too), or N% (each 4 KiB block random bytes then
    /// N% zeros, as fio's buffer_compress_percentage: a compressor takes about N% away).
    #[arg(long, value_name = "PATTERN", default_value = "incompressible", value_parser = fsage_workload::DataPattern::parse)]
    pub data: fsage_workload::DataPattern,
    /// Record lock contention by lock instance over the measured phase (the first repetition's):
    /// the kernel's lock:contention_begin/end tracepoints (kernels since 5.19), each lock's
    /// waits and callers, into the table and --json. Needs root.
    #[arg(long)]
    pub lock_stats: bool,
    /// No progress line and no table (the exit code and --json only).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    /// A built-in name or a .f file.
    pub workload: String,
    /// Override a variable: --set nfiles=50000 (repeatable).
    #[arg(long = "set", value_name = "VAR=VALUE")]
    pub set: Vec<String>,
}

pub fn run(cmd: BenchCmd) -> CmdResult {
    match cmd {
        BenchCmd::List => {
            println!("{:<12} description", "name");
            for (n, d, _) in BUILTINS {
                println!("{n:<12} {d}");
            }
            println!("\n`fsage bench show NAME` prints one as .f text; `fsage bench run NAME|FILE.f TARGET_DIR` runs it.");
            Ok(())
        }
        BenchCmd::Show(a) => {
            let w = Workload::resolve(&a.workload)?.with_assignments(&a.set)?;
            print!("{}", w.to_f_text());
            Ok(())
        }
        BenchCmd::Run(a) => run_bench(*a),
        BenchCmd::Planner(a) => planner(a),
    }
}

struct Bar {
    enabled: bool,
    drawn: bool,
}

impl Observer for Bar {
    fn note(&mut self, msg: &str) {
        self.clear();
        eprintln!("fsage: note: {msg}");
    }

    fn progress(&mut self, p: &Progress) {
        if !self.enabled {
            return;
        }
        let rep = if p.reps > 1 {
            format!("rep {}/{} ", p.rep + 1, p.reps)
        } else {
            String::new()
        };
        let line = match p.phase {
            Phase::Layout => format!(
                "{rep}laying out filesets: {}/{} files",
                p.done,
                p.total.unwrap_or(0)
            ),
            ph => format!(
                "{rep}{} {:>7.1} s  {:>10.0} ops/s now  {} ops",
                if ph == Phase::Warmup {
                    "warmup "
                } else {
                    "running"
                },
                p.elapsed.as_secs_f64(),
                p.ops_per_sec_now,
                p.done
            ),
        };
        eprint!("\r\x1b[K{line}");
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }
}

impl Bar {
    fn clear(&mut self) {
        if self.drawn {
            eprint!("\r\x1b[K");
            self.drawn = false;
        }
    }
}

/// The flag of a run setting.
fn flag(s: fsage_workload::Setting) -> &'static str {
    use fsage_workload::Setting::*;
    match s {
        Reps => "--reps",
        Threads => "--threads",
        CacheRatio => "--cache-ratio",
        Ops => "--ops",
    }
}

fn run_bench(a: RunArgs) -> CmdResult {
    fsage_signals::install();
    let w = Workload::resolve(&a.workload)?.with_assignments(&a.set)?;
    let stop = match (a.duration, a.ops) {
        (Some(d), _) => Some(Stop::Duration(d)),
        (None, Some(n)) => Some(Stop::Ops(n)),
        (None, None) => None,
    };
    let warmup = a
        .warmup
        .unwrap_or_else(|| fsage_workload::default_warmup(w.model(), stop));
    let cfg = RunConfig {
        stop,
        warmup,
        seed: a.seed,
        threads: a.threads,
        cache_ratio: a.cache_ratio,
        drop_caches: a.drop_caches,
        reps: a.reps,
        reuse: a.reuse,
        record_latency: !a.no_latency,
        sample: a.sample,
        data: a.data,
    };
    // Checked before anything is written, the library's rule with the flag's name.
    cfg.check().map_err(|e| match e {
        fsage_workload::Error::Setting {
            setting,
            value,
            why,
        } => bad_input(format!("{} {value}: {why}", flag(setting))),
        e => e.into(),
    })?;
    if let Some(p) = &a.json {
        fsage_sys::check_writable_file(p).map_err(|e| bad_input(format!("--json {e}")))?;
    }
    if a.lock_stats {
        if !fsage_sys::is_root() {
            return Err(bad_input("--lock-stats needs root (tracefs)"));
        }
        fsage_lab::locks::available().map_err(|e| bad_input(format!("--lock-stats: {e}")))?;
    }
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut bar = Bar {
        enabled: tty && !a.quiet,
        drawn: false,
    };
    let mut rec = fsage_host::LockStats::new(&mut bar, a.lock_stats);
    let r = fsage_workload::run(&w, &cfg, &a.target, &mut rec);
    let locks = rec.finish();
    bar.clear();
    let mut r = r?;
    r.lock_contention =
        locks.map_err(|e| fsage_lab::Error::operation(format!("--lock-stats: {e}")))?;
    if let Some(p) = &a.json {
        write_atomic(p, export(&Json, &r).as_bytes())?;
    }
    if !a.quiet {
        print!("{}", export(&Text, &r));
    }
    if r.interrupted {
        return Err(interrupted());
    }
    Ok(())
}

fn planner(args: PlannerArgs) -> CmdResult {
    let profile = fsage_profile::resolve(&args.profile)?;
    // Every count is checked (memory included) before the first is measured.
    let capacities = planner_bench::check(&profile, &args.live, args.seed, None)?;
    println!(
        "profile {}; {} stable ticks per size; one line per live-file count",
        profile.name, args.ticks
    );
    println!(
        "{:>10} {:>10} {:>12} {:>12} {:>14} {:>12} {:>12}",
        "live", "capacity", "rapid s", "ns/decision", "decisions/s", "heap B/file", "rss B/file"
    );
    for (&target, &capacity) in args.live.iter().zip(&capacities) {
        let r = planner_bench::measure(&profile, target, capacity, args.ticks, args.seed)?;
        let live = r.live.max(1) as f64;
        println!(
            "{:>10} {:>10} {:>12.2} {:>12.1} {:>14.0} {:>12.1} {:>12.1}",
            r.live,
            human_bytes(r.capacity),
            r.rapid_s,
            r.stable_s * 1e9 / r.decisions.max(1) as f64,
            r.decisions as f64 / r.stable_s.max(1e-9),
            r.heap_bytes as f64 / live,
            r.rss_bytes as f64 / live
        );
    }
    Ok(())
}
