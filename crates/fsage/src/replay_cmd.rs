//! `fsage replay`: an op log's system calls with no planner (`fsage_exec::replay`).

use crate::age_cmd::WriteModeArg;
use crate::exit::CmdResult;
use clap::Args;
use fsage_exec::WriteMode;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// An op log written by `fsage age --op-log`.
    pub op_log: PathBuf,
    /// Empty directory to replay into.
    pub target: PathBuf,
    /// How files get their blocks. Default: fallocate, or write on nilfs2 (which has no
    /// fallocate).
    #[arg(long, value_enum)]
    pub write_mode: Option<WriteModeArg>,
    /// Replay into a non-empty directory.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: ReplayArgs) -> CmdResult {
    let mode = args.write_mode.map(|m| match m {
        WriteModeArg::Fallocate => WriteMode::Fallocate,
        WriteModeArg::Write => WriteMode::Write,
    });
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
