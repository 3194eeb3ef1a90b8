//! `fsage rollback track|restore`: record the blocks a benchmark writes, then roll the image
//! back (fsage-lab).

use crate::exit::{CmdError, CmdResult};
use clap::{Args, Subcommand};
use fsage_lab::rollback;
use fsage_profile::human_bytes;
use fsage_sys::Blame;
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum RollbackCmd {
    /// Run a benchmark on an image, recording the blocks it writes (tracefs block_rq_issue).
    Track(TrackArgs),
    /// Rewrite the recorded blocks from the snapshot and check the image equals it again.
    Restore {
        image: PathBuf,
        /// The log of `rollback track` (default IMAGE.rollback.json).
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// Compare the whole image with the snapshot instead of using the recorded blocks.
        #[arg(long)]
        compare: bool,
        /// Skip the final check that the image equals the snapshot.
        #[arg(long)]
        no_verify: bool,
    },
}

#[derive(Args, Debug)]
pub struct TrackArgs {
    /// Unmounted image file.
    pub image: PathBuf,
    /// Raw snapshot to roll back to (default IMAGE.snapshot, made from IMAGE if missing).
    #[arg(long, value_name = "FILE")]
    pub snapshot: Option<PathBuf>,
    /// Log file (default IMAGE.rollback.json).
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Mount point for the benchmark (default: a temporary directory). The command gets it in
    /// $FSAGE_MOUNT, the loop device in $FSAGE_DEVICE.
    #[arg(long, value_name = "DIR")]
    pub mount: Option<PathBuf>,
    /// Do not mount; the command gets only the device.
    #[arg(long)]
    pub no_mount: bool,
    /// Mount options.
    #[arg(short = 'o', long, default_value = "")]
    pub options: String,
    /// Do not trace: roll back by comparing with the snapshot.
    #[arg(long)]
    pub compare: bool,
    /// Skip checking that the image equals an existing snapshot before the run.
    #[arg(long)]
    pub no_check: bool,
    /// The benchmark command.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

pub fn run(cmd: RollbackCmd) -> CmdResult {
    fsage_signals::install();
    match cmd {
        RollbackCmd::Track(a) => {
            let log = rollback::track(
                &a.image,
                &a.command,
                &rollback::TrackOptions {
                    snapshot: a.snapshot,
                    log: a.log.clone(),
                    mount_point: a.mount,
                    no_mount: a.no_mount,
                    mount_options: a.options,
                    compare: a.compare,
                    no_check: a.no_check,
                },
            )?;
            let log_path = a.log.unwrap_or_else(|| rollback::default_log(&a.image));
            match log.method {
                rollback::Method::Trace => println!(
                    "tracked {} write requests: {} in {} ranges; log {}",
                    log.requests,
                    human_bytes(log.written_bytes),
                    log.ranges.len(),
                    log_path.display()
                ),
                rollback::Method::Compare => println!(
                    "not traced ({}): `rollback restore` will compare with the snapshot; log {}",
                    log.fallback_reason.as_deref().unwrap_or("-"),
                    log_path.display()
                ),
            }
            match log.exit_code {
                Some(0) => Ok(()),
                c => {
                    eprintln!(
                        "fsage: the benchmark command `{}` failed ({}); its writes are logged",
                        log.command.join(" "),
                        c.map_or("killed by a signal".into(), |c| format!("exit code {c}"))
                    );
                    Err(CmdError::said(Blame::Operation))
                }
            }
        }
        RollbackCmd::Restore {
            image,
            log,
            compare,
            no_verify,
        } => {
            let log = log.unwrap_or_else(|| rollback::default_log(&image));
            let r = rollback::restore(&image, &log, compare, !no_verify)?;
            println!(
                "rolled back {} ({}): {} in {} ranges rewritten in {:.3}s{}",
                image.display(),
                r.method.describe(),
                human_bytes(r.bytes),
                r.ranges,
                r.seconds,
                if r.verified {
                    format!(
                        "; identical to the snapshot (checked in {:.3}s)",
                        r.verify_seconds
                    )
                } else {
                    "; not checked (--no-verify)".into()
                }
            );
            Ok(())
        }
    }
}
