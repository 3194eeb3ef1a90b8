//! `fsage experiment plan|run|status|submit|run-cell|cancel`.

use crate::exit::{interrupted, CmdError, CmdResult};
use clap::Subcommand;
use fsage_experiment::runner::{Event, RunObserver, RunOptions};
use fsage_experiment::slurm::{RunCellOptions, SubmitOptions};
use fsage_experiment::storage::Scratch;
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
        /// Where the base images go (default OUT/images).
        #[arg(long, value_name = "DIR")]
        images: Option<PathBuf>,
        /// Where each cell's working copy goes: `tmpfs` (/dev/shm, the default), `images`
        /// (beside the base images) or a directory; recorded in every cell's result.
        #[arg(long, value_name = "WHERE", default_value = "tmpfs")]
        scratch: Scratch,
        /// Run the cells recorded as failed again.
        #[arg(long)]
        retry_failed: bool,
        /// One line per cell only.
        #[arg(short, long)]
        quiet: bool,
    },
    /// What an experiment's output directory holds: cells done, failed and left, and the time
    /// the rest should take; after `experiment submit`, the cells queued and running with their
    /// Slurm job ids.
    Status {
        /// The output directory given to `experiment run --out` or `experiment submit --out`.
        out: PathBuf,
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Hands the cells of an experiment not done yet (failed ones included) to Slurm: one job
    /// per base image, then for each base a job array of its cells that waits for it
    /// (afterok). OUT (and the image directory) must be on storage every node sees.
    Submit {
        /// An experiment file (TOML).
        file: PathBuf,
        /// The output directory: new, empty, or this experiment's (from `run` or `submit`).
        #[arg(long)]
        out: PathBuf,
        /// Where the base images go (default OUT/images; shared by every node).
        #[arg(long, value_name = "DIR")]
        images: Option<PathBuf>,
        /// The Slurm partition of every job.
        #[arg(long, value_name = "P")]
        partition: Option<String>,
        /// At most N of the submission's jobs run at once: each job waits for the one
        /// submitted before it and each array runs N tasks at a time (the bases are then made
        /// one after another).
        #[arg(long, value_name = "N")]
        max_parallel: Option<u32>,
        /// Where each cell's working copy goes on the nodes: `tmpfs` (/dev/shm, the default),
        /// `images` or a directory, as in `experiment run`.
        #[arg(long, value_name = "WHERE", default_value = "tmpfs")]
        scratch: Scratch,
        /// Each job's time limit (`2h`, `30m`).
        #[arg(long, value_name = "DUR", value_parser = crate::util::positive_duration)]
        time: Option<std::time::Duration>,
        /// Cells one array task runs, one after the other.
        #[arg(long, value_name = "N", default_value_t = 1)]
        cells_per_task: usize,
        /// Given to every sbatch as they are (after `--`).
        #[arg(last = true, value_name = "SBATCH_ARGS")]
        sbatch_args: Vec<String>,
    },
    /// Runs cells of OUT's plan by id (what each Slurm task runs; usable by hand): the base is
    /// copied to the scratch (default: /dev/shm, node-local memory), the cell runs as
    /// `experiment run` runs it, and its result goes to OUT/cells/ID.json. A cell already done
    /// is skipped.
    RunCell {
        /// The output directory of `experiment submit` or `run`.
        out: PathBuf,
        /// Cell ids (`fsage experiment status OUT` lists them).
        #[arg(required = true, value_name = "ID")]
        ids: Vec<String>,
        /// The image directory holding the base images (default OUT/images).
        #[arg(long, value_name = "DIR")]
        images: Option<PathBuf>,
        /// Where the working copies go: `tmpfs` (/dev/shm, the default), `images` or a
        /// directory.
        #[arg(long, value_name = "WHERE", default_value = "tmpfs")]
        scratch: Scratch,
        /// Only make the base image of the first cell (a submission's base job).
        #[arg(long)]
        base_only: bool,
        /// One line per cell only.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Cancels the Slurm jobs `experiment submit` recorded in OUT that are still queued or
    /// running, and no other job.
    Cancel {
        /// The output directory given to `experiment submit --out`.
        out: PathBuf,
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
            let st = fsage_experiment::status(&out)?;
            if json {
                print!("{}", export(&Json, &st));
            } else {
                print!("{}", export(&Text, &st));
            }
            Ok(())
        }
        ExperimentCmd::Submit {
            file,
            out,
            images,
            partition,
            max_parallel,
            scratch,
            time,
            cells_per_task,
            sbatch_args,
        } => {
            let fsage = std::env::current_exe().map_err(|e| {
                CmdError::from(fsage_sys::Error::operation(format!(
                    "cannot find the fsage binary the jobs are to run: {e}"
                )))
            })?;
            let s = fsage_experiment::slurm::submit(
                &file,
                &out,
                &SubmitOptions {
                    images,
                    partition,
                    max_parallel,
                    time,
                    cells_per_task,
                    sbatch_args,
                    fsage,
                    scratch,
                },
            )?;
            for w in &s.warnings {
                eprintln!("fsage: warning: {w}");
            }
            match &s.submission {
                None => println!(
                    "{} cells, all done: nothing to submit; results in {}",
                    s.total,
                    s.out.join("cells").display()
                ),
                Some(sub) => {
                    println!(
                        "{} cells: {} done already, {} submitted (submission {})",
                        s.total, s.done, s.submitted, sub.number
                    );
                    for (b, a) in sub.bases.iter().zip(&sub.arrays) {
                        println!(
                            "  base {:<32} job {:<10} cells: array {} ({} tasks, after {})",
                            b.base,
                            b.job_id,
                            a.job_id,
                            a.tasks.len(),
                            a.after
                        );
                    }
                    println!(
                        "follow: fsage experiment status {}; stop: fsage experiment cancel {}",
                        fsage_sys::shell_arg(&s.out),
                        fsage_sys::shell_arg(&s.out)
                    );
                }
            }
            Ok(())
        }
        ExperimentCmd::RunCell {
            out,
            ids,
            images,
            scratch,
            base_only,
            quiet,
        } => {
            fsage_signals::install();
            let s = fsage_experiment::slurm::run_cells(
                &out,
                &ids,
                &RunCellOptions {
                    images,
                    scratch,
                    base_only,
                },
                &mut Lines { quiet },
            )?;
            if base_only {
                println!("base image of {} ready", ids[0]);
            } else {
                println!(
                    "{} cells: {} done before, {} run now, {} failed{}",
                    s.total,
                    s.done_before,
                    s.ran,
                    s.failed,
                    if s.interrupted { "; interrupted" } else { "" }
                );
            }
            if s.interrupted {
                Err(interrupted())
            } else if s.failed > 0 {
                Err(CmdError::said(Blame::Operation))
            } else {
                Ok(())
            }
        }
        ExperimentCmd::Cancel { out } => {
            let c = fsage_experiment::slurm::cancel(&out)?;
            if c.cancelled.is_empty() {
                println!("no job of {} is queued or running", c.out.display());
            } else {
                println!("cancelled: {}", c.cancelled.join(" "));
            }
            Ok(())
        }
        ExperimentCmd::Run {
            file,
            out,
            images,
            scratch,
            retry_failed,
            quiet,
        } => {
            fsage_signals::install();
            let s = fsage_experiment::run_file(
                &file,
                &out,
                images.as_deref(),
                &scratch,
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
pub(crate) struct Lines {
    pub(crate) quiet: bool,
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
