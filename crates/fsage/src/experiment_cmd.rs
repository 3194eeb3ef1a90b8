//! `fsage experiment plan|run|status`.

use crate::exit::{interrupted, CmdError, CmdResult};
use clap::Subcommand;
use fsage_experiment::runner::{Event, RunObserver, RunOptions};
use fsage_experiment::CellStatus;
use fsage_report::plan_text::human_duration;
use fsage_report::{export, Json, Text};
use fsage_sys::Blame;
use std::path::PathBuf;

#[derive(Subcommand, Debug)]
pub enum ExperimentCmd {
    /// The cells an experiment file expands to, with their ids and an estimated duration; runs
    /// nothing.
    Plan {
        /// An experiment file (TOML; see crates/fsage-experiment/FORMAT/EXPERIMENT.md).
        file: PathBuf,
        /// Print the plan as JSON (every cell in full).
        #[arg(long)]
        json: bool,
    },
    /// Runs every cell of an experiment that OUT has no result for, writing each cell's result
    /// to OUT/cells/ the moment it ends: run it again after a crash or Ctrl-C and it goes on.
    Run {
        /// An experiment file (TOML).
        file: PathBuf,
        /// The output directory: new, empty, or one an earlier run of this experiment made.
        #[arg(long)]
        out: PathBuf,
        /// Where the base images and each cell's working copy go (default OUT/images; put it
        /// in /dev/shm for speed).
        #[arg(long, value_name = "DIR")]
        images: Option<PathBuf>,
        /// Run the cells recorded as failed again.
        #[arg(long)]
        retry_failed: bool,
        /// One line per cell only.
        #[arg(short, long)]
        quiet: bool,
    },
    /// What an experiment's output directory holds: cells done, failed and left, and the time
    /// the rest should take.
    Status {
        /// The output directory given to `experiment run --out`.
        out: PathBuf,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(cmd: ExperimentCmd) -> CmdResult {
    match cmd {
        ExperimentCmd::Plan { file, json } => {
            let plan = fsage_experiment::plan_file(&file)?;
            for w in &plan.warnings {
                eprintln!("fsage: warning: {w}");
            }
            if json {
                print!("{}", export(&Json, &plan));
            } else {
                print!("{}", export(&Text, &plan));
            }
            Ok(())
        }
        ExperimentCmd::Status { out, json } => {
            let st = fsage_experiment::runner::status(&out)?;
            if json {
                print!("{}", export(&Json, &st));
            } else {
                print!("{}", export(&Text, &st));
            }
            Ok(())
        }
        ExperimentCmd::Run {
            file,
            out,
            images,
            retry_failed,
            quiet,
        } => {
            fsage_signals::install();
            let s = fsage_experiment::run_file(
                &file,
                &out,
                images.as_deref(),
                &RunOptions { retry_failed },
                &mut Lines { quiet },
            )?;
            let done = s.done_before + s.ran - s.failed;
            println!(
                "{} of {} cells done ({} before this run, {} now{}){}; results in {}",
                done,
                s.total,
                s.done_before,
                s.ran - s.failed,
                if s.failed + s.failed_kept > 0 {
                    format!(", {} failed", s.failed + s.failed_kept)
                } else {
                    String::new()
                },
                if s.interrupted {
                    "; interrupted: run the same command again to go on"
                } else {
                    ""
                },
                s.out.join("cells").display()
            );
            if !s.interrupted && done == s.total {
                println!(
                    "report: fsage report {} -o {}",
                    s.out.display(),
                    s.out.join("report.html").display()
                );
            }
            if s.interrupted {
                Err(interrupted())
            } else if s.failed + s.failed_kept > 0 {
                Err(CmdError::said(Blame::Operation))
            } else {
                Ok(())
            }
        }
    }
}

/// One line per cell on stdout, notes on stderr.
struct Lines {
    quiet: bool,
}

impl RunObserver for Lines {
    fn event(&mut self, e: &Event) {
        match e {
            Event::Start {
                total,
                done,
                failed,
                to_run,
            } => {
                println!(
                    "{total} cells: {done} done already, {failed} failed earlier (kept), {to_run} to run"
                );
            }
            Event::CellStart {
                index,
                to_run,
                cell,
                eta_s,
            } if !self.quiet => {
                eprintln!(
                    "[{index}/{to_run}] {}{}",
                    cell.id,
                    eta_s.map_or(String::new(), |s| format!(
                        " (about {} left)",
                        human_duration(s)
                    ))
                );
            }
            Event::CellEnd { result, .. } => match &result.status {
                CellStatus::Done => {
                    let ops = result.samples.first().map_or(0.0, |s| s.ops_per_s);
                    println!(
                        "done    {:<56} {:>10.0} ops/s  ({})",
                        result.cell.id,
                        ops,
                        human_duration(result.seconds)
                    );
                }
                CellStatus::Failed { error } => {
                    println!("FAILED  {:<56} {error}", result.cell.id);
                }
            },
            Event::Note(n) if !self.quiet => eprintln!("  {n}"),
            _ => {}
        }
    }
}
