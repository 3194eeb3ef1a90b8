//! The Slurm executor's task side: `experiment run-cell`, one array task (or base job) running
//! its cells through the same runner loop and [`LabExecutor`] as a local run, and the record of
//! when it ran.

use crate::lab::LabExecutor;
use crate::runner::{self, RunObserver, RunSummary};
use crate::spec::{Cell, Plan};
use crate::storage::Scratch;
use crate::Error;
use fsage_sys::Blame;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

use super::{base_group, now_unix, SLURM_DIR};

/// When a Slurm job of a submission ran (`OUT/slurm/tasks/JOB.json`, written as it ends):
/// what shows that `--max-parallel` held, without Slurm's accounting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// `ARRAYJOB_TASK`, or the job id of a base job.
    pub job: String,
    pub base_only: bool,
    pub cells: Vec<String>,
    pub host: String,
    /// Unix time, in seconds, from `run-cell`'s start to its end.
    pub start_unix_s: f64,
    pub end_unix_s: f64,
    pub ok: bool,
}

/// Where the task records go, under `OUT/slurm/`.
pub const TASKS_DIR: &str = "tasks";

fn write_task_record(out: &Path, r: &TaskRecord) -> Result<(), Error> {
    let dir = out.join(SLURM_DIR).join(TASKS_DIR);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::operation(format!("{}: {e}", dir.display())))?;
    runner::write_json(&dir.join(format!("{}.json", r.job)), r)
}

fn unix_s() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// How `run-cell` runs.
#[derive(Debug, Clone, Default)]
pub struct RunCellOptions {
    /// The image directory (default `OUT/images`).
    pub images: Option<PathBuf>,
    /// Where the working copies go ([`Scratch`]; default: /dev/shm, a tmpfs).
    pub scratch: Scratch,
    /// Make the first cell's base image only (a submission's base job).
    pub base_only: bool,
}

/// What must hold on this node before a cell runs: root, its file systems' tools, the slow
/// device's /dev/fuse when a cell needs it.
fn preflight_cells(cells: &[&Cell]) -> Result<(), Error> {
    if !fsage_sys::is_root() {
        return Err(Error::input(
            "a cell mounts images and attaches loop devices: run it as root",
        ));
    }
    for c in cells {
        let kind = fsage_lab::FsKind::parse(&c.fs.kind).map_err(|e| Error::input(e.to_string()))?;
        kind.check_tools()
            .map_err(|e| Error::input(format!("{}: {e}", c.id)))?;
        // A cell that needs another kernel runs in a VM on the node, as in a local run.
        crate::guest::check_runs(&crate::spec::runs_of(c), &c.fs.label).map_err(|e| Error {
            message: format!("{}: {}", c.id, e.message),
            ..e
        })?;
        if c.device.is_some() && !Path::new("/dev/fuse").exists() {
            return Err(Error::input(format!(
                "{}: runs on the slow device, which needs /dev/fuse (not found on this node)",
                c.id
            )));
        }
    }
    Ok(())
}

/// `experiment run-cell OUT ID...`: runs the cells `ids` of `out`'s plan that are not done (or
/// with `base_only`, makes the base image of the first). A base image that cannot be made
/// fails the cells of that base that have no result, as a local run records them.
pub fn run_cells(
    out: &Path,
    ids: &[String],
    opts: &RunCellOptions,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let plan = runner::read_plan(out)?;
    let cells = runner::select(&plan, ids, out)?;
    let Some(first) = cells.first() else {
        return Err(Error::input("no cell id given"));
    };
    let start = unix_s();
    let r = run_selected(out, &cells, ids, opts, obs);
    if let Some(job) = crate::lab::slurm_job() {
        // Best effort: the record says when the job ran, not what it measured.
        let _ = write_task_record(
            out,
            &TaskRecord {
                job,
                base_only: opts.base_only,
                cells: ids.to_vec(),
                host: std::fs::read_to_string("/proc/sys/kernel/hostname")
                    .map(|h| h.trim().to_string())
                    .unwrap_or_default(),
                start_unix_s: start,
                end_unix_s: unix_s(),
                ok: r.is_ok(),
            },
        );
    }
    match r {
        // A base job that fails, at any step, records why in each cell of its base: without
        // Slurm's accounting nothing else would tell them from cells never run.
        Err(e)
            if opts.base_only && e.blame != Blame::Interrupted && !fsage_signals::interrupted() =>
        {
            record_base_failure(out, &plan, first, &e)?;
            Err(e)
        }
        r => r,
    }
}

fn run_selected(
    out: &Path,
    cells: &[&Cell],
    ids: &[String],
    opts: &RunCellOptions,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let first = cells[0];
    preflight_cells(cells)?;
    let images = opts.images.clone().unwrap_or_else(|| out.join("images"));
    let name = if opts.base_only {
        format!("base-{}", base_group(first))
    } else {
        first.id.clone()
    };
    let out_real = out.canonicalize().unwrap_or_else(|_| out.to_path_buf());
    let mut ex = LabExecutor::for_task(&out_real, &images, &opts.scratch, &name)?;
    let r = if opts.base_only {
        make_base(out, first, &mut ex, obs)
    } else {
        runner::run_ids(out, ids, &mut ex, obs)
    };
    let work = ex.work_dir().to_path_buf();
    drop(ex);
    // Empty after a clean run; never removed through a mount left in it.
    let _ = std::fs::remove_dir(&work);
    r
}

fn make_base(
    out: &Path,
    cell: &Cell,
    ex: &mut LabExecutor,
    obs: &mut dyn RunObserver,
) -> Result<RunSummary, Error> {
    let t0 = std::time::Instant::now();
    ex.make_base_of(cell, obs)?;
    Ok(RunSummary {
        out: out.to_path_buf(),
        total: 0,
        done_before: 0,
        ran: 0,
        failed: 0,
        failed_kept: 0,
        interrupted: false,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Records the failure of `cell`'s base in every cell of that base not done (a failure of an
/// earlier submission is replaced by this one's), as a local run records it, so that `status`
/// says why these cells did not run (Slurm cancels their array: its dependency can no longer
/// be met).
fn record_base_failure(out: &Path, plan: &Plan, cell: &Cell, e: &Error) -> Result<(), Error> {
    let rec = runner::recorded(out)?;
    let g = base_group(cell);
    let started = now_unix();
    let job = crate::lab::slurm_job().map_or(String::new(), |j| format!(" (job {j})"));
    for c in plan
        .cells
        .iter()
        .filter(|c| base_group(c) == g && !rec.get(&c.id).is_some_and(|r| r.is_done()))
    {
        let res = crate::CellResult {
            format: crate::result::RESULT_FORMAT,
            cell: c.clone(),
            status: crate::CellStatus::Failed {
                error: format!("base image{job}: {}", e.message),
            },
            started_unix: started,
            seconds: 0.0,
            base_seconds: None,
            environment: None,
            samples: Vec::new(),
            workload_report: None,
        };
        runner::write_json(&runner::cell_path(out, c), &res)?;
    }
    Ok(())
}
