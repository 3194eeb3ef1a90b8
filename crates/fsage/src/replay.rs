//! `fsage replay`: the same system calls as an aging run, from an op log, with no planner. Its speed
//! is the ceiling the POSIX backend is measured against, so it drives the backend directly rather
//! than through the run loop.

use crate::cli::{ReplayArgs, WriteModeArg};
#[allow(unused_imports)]
use crate::exit::{bad_input, CmdResult};
use fsage_exec::{oplog, Backend, Posix, WriteMode};
use std::process::ExitCode;
use std::time::Instant;

pub fn run(args: ReplayArgs) -> CmdResult {
    let text = std::fs::read_to_string(&args.op_log)
        .map_err(|e| bad_input(format!("{}: {e}", args.op_log.display())))?;
    let log = oplog::read(&text, &args.op_log.display().to_string())?;
    drop(text);
    fsage_exec::preflight::prepare_target(&args.target, args.force)?;
    let mode = match args.write_mode {
        WriteModeArg::Fallocate => WriteMode::Fallocate,
        WriteModeArg::Write => WriteMode::Write,
    };
    let mut b = Posix::open(&args.target, mode, 0)
        .map_err(|e| bad_input(format!("{}: {e}", args.target.display())))?;
    let start = Instant::now();
    b.make_dirs(&log.tree)?;
    for step in &log.steps {
        b.apply(step)?;
    }
    b.finish()?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "replayed {} directories and {} operations in {:.3}s: {:.0} ops/s",
        log.tree.len() - 1,
        log.steps.len(),
        secs,
        log.steps.len() as f64 / secs.max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}
