//! `fsage replay`: an op log's system calls with no planner (`fsage_exec::replay`).

use crate::cli::{ReplayArgs, WriteModeArg};
use crate::exit::CmdResult;
use fsage_exec::WriteMode;

pub fn run(args: ReplayArgs) -> CmdResult {
    let mode = match args.write_mode {
        WriteModeArg::Fallocate => WriteMode::Fallocate,
        WriteModeArg::Write => WriteMode::Write,
    };
    let r = fsage_exec::replay::replay(&args.op_log, &args.target, mode, args.force)?;
    println!(
        "replayed {} directories and {} operations in {:.3}s: {:.0} ops/s",
        r.directories,
        r.operations,
        r.secs,
        r.operations as f64 / r.secs.max(1e-9)
    );
    Ok(())
}
