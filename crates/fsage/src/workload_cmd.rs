//! `fsage bench run|list|show`: the Filebench-compatible workload engine (fsage-workload).

use crate::cli::BenchCmd;
use crate::exit::{bad_input, interrupted, CmdResult};
use crate::util::parse_duration;
use clap::Args;
use fsage_report::{export, Json, Text};
use fsage_sys::write_atomic;
use fsage_workload::{Observer, Phase, Progress, RunConfig, Stop, Workload, BUILTINS};
use std::io::Write;
use std::path::PathBuf;

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
    /// Measured time per repetition (default: the workload's `run N`, else 60s).
    #[arg(long, conflicts_with = "ops")]
    pub duration: Option<String>,
    /// Stop after N operations (all threads together) instead of after a time.
    #[arg(long)]
    pub ops: Option<u64>,
    /// Run this long before measuring.
    #[arg(long)]
    pub warmup: Option<String>,
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
        BenchCmd::Planner(_) => unreachable!("dispatched in main"),
    }
}

struct Bar {
    enabled: bool,
    drawn: bool,
}

impl Observer for Bar {
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

fn run_bench(a: RunArgs) -> CmdResult {
    fsage_signals::install();
    let w = Workload::resolve(&a.workload)?.with_assignments(&a.set)?;
    let stop = match (&a.duration, a.ops) {
        (Some(d), _) => Some(Stop::Duration(parse_duration("--duration", d)?)),
        (None, Some(0)) => return Err(bad_input("--ops 0: must be at least 1")),
        (None, Some(n)) => Some(Stop::Ops(n)),
        (None, None) => None,
    };
    let warmup = match &a.warmup {
        Some(d) if d.trim() == "0" => std::time::Duration::ZERO,
        Some(d) => parse_duration("--warmup", d)?,
        None => std::time::Duration::ZERO,
    };
    if a.reps == 0 {
        return Err(bad_input("--reps 0: must be at least 1"));
    }
    if a.threads == Some(0) {
        return Err(bad_input("--threads 0: must be at least 1"));
    }
    if let Some(r) = a.cache_ratio {
        if !(r > 0.0 && r.is_finite()) {
            return Err(bad_input(format!("--cache-ratio {r}: must be above 0")));
        }
    }
    if let Some(p) = &a.json {
        fsage_sys::check_writable_file(p).map_err(|e| bad_input(format!("--json {e}")))?;
    }
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
    };
    let tty = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let mut bar = Bar {
        enabled: tty && !a.quiet,
        drawn: false,
    };
    let r = fsage_workload::run(&w, &cfg, &a.target, &mut bar);
    bar.clear();
    let r = r?;
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
