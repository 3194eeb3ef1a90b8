//! Running an experiment's cells on a Slurm cluster, without a scheduler of fsage's own.
//!
//! `submit` plans the cells and hands those not done to `sbatch`: first one job per base image
//! (a file system in a state: made once in the image directory, which every node must see), then
//! for each base one job array of its cells, which waits for its base job (`afterok`) and is
//! cancelled by Slurm if that job fails (`--kill-on-invalid-dep=yes`). Each array task runs
//! `fsage experiment run-cell DIR ID...` ([`run_cells`]), which goes through the same runner
//! loop and the same [`LabExecutor`](crate::lab::LabExecutor) as a local `experiment run`, with the cell's working copy in
//! node-local memory, and writes `DIR/cells/ID.json` atomically. The job ids are recorded in
//! `DIR/slurm/submissions.json`, which `status` and `cancel` read: nothing but the jobs recorded
//! there is ever asked about or cancelled.
//!
//! A base per array (rather than one array for all cells) lets the cells of a fresh file system
//! start while another base is still aging, and a base that fails stops only its own cells.

mod jobs;
mod submit;
mod task;

pub use jobs::{annotate, cancel, CancelSummary, LiveJob};
pub use submit::{slurm_time, submit, SubmitOptions, SubmitSummary, BINARY};
pub use task::{run_cells, RunCellOptions, TaskRecord, TASKS_DIR};

use crate::spec::Cell;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where the batch scripts, task lists, logs and job ids go, under the output directory.
pub const SLURM_DIR: &str = "slurm";
/// The record of every submission (job ids and what each job runs).
pub const SUBMISSIONS: &str = "submissions.json";

/// What can go wrong between fsage and Slurm.
#[derive(Debug, thiserror::Error)]
pub enum SlurmError {
    #[error(
        "{0} not found: install Slurm's client commands (Debian: slurm-client) or put them on PATH"
    )]
    Missing(&'static str),
    #[error("{cmd} failed ({status}): {stderr}")]
    Failed {
        cmd: String,
        status: String,
        stderr: String,
    },
    #[error("{cmd} answered {answer:?}, not a job id")]
    NoJobId { cmd: String, answer: String },
    #[error("jobs of an earlier submission are still queued or running ({jobs}): wait for them, or `fsage experiment cancel {dir}` first")]
    StillQueued { jobs: String, dir: String },
    #[error("{path}: {what}: {err}")]
    Io {
        path: PathBuf,
        what: &'static str,
        err: std::io::Error,
    },
    #[error("{path}: not a submission record: {err}")]
    BadRecord { path: PathBuf, err: String },
    #[error("{0}")]
    BadPartition(String),
    #[error(
        "{err}; jobs already submitted: {jobs} (recorded in {dir}/slurm/submissions.json): \
         cancel them with `fsage experiment cancel {dir}`, or let them run and `submit` again once \
         they end to submit the rest"
    )]
    Partial {
        err: Box<SlurmError>,
        jobs: String,
        dir: String,
    },
    #[error("{path}: the fsage binary the jobs are to run: {err}")]
    Binary { path: PathBuf, err: String },
    #[error("cells per task must be at least 1")]
    CellsPerTask,
    #[error("--max-parallel must be at least 1")]
    MaxParallel,
}

impl From<SlurmError> for Error {
    fn from(e: SlurmError) -> Error {
        match e {
            SlurmError::Missing(_)
            | SlurmError::StillQueued { .. }
            | SlurmError::BadRecord { .. }
            | SlurmError::BadPartition(_)
            | SlurmError::CellsPerTask
            | SlurmError::MaxParallel => Error::input(e.to_string()),
            SlurmError::Io { ref err, .. }
                if matches!(
                    err.kind(),
                    std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::NotFound
                ) =>
            {
                Error::input(e.to_string())
            }
            _ => Error::operation(e.to_string()),
        }
    }
}

/// One job of a submission.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseJob {
    pub job_id: String,
    /// The file system and state (`LABEL-STATE`), and the cell whose base it makes.
    pub base: String,
    pub cell: String,
}

/// A job array: task `i` runs the cells of `tasks[i]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArrayJob {
    pub job_id: String,
    pub base: String,
    /// The base job it waits for.
    pub after: String,
    pub tasks: Vec<Vec<String>>,
    /// The file the tasks read their cell ids from (line `i + 1` for task `i`).
    pub task_file: PathBuf,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    pub number: usize,
    pub submitted_unix: u64,
    pub bases: Vec<BaseJob>,
    pub arrays: Vec<ArrayJob>,
    /// Jobs `experiment cancel` cancelled: a base job among them that ended without its base was
    /// stopped on purpose, and its cells are left (to submit again), not failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancelled: Vec<String>,
}

impl Submission {
    /// Every job id of the submission (the arrays' ids stand for all their tasks).
    pub fn job_ids(&self) -> Vec<String> {
        self.bases
            .iter()
            .map(|b| b.job_id.clone())
            .chain(self.arrays.iter().map(|a| a.job_id.clone()))
            .collect()
    }
}

/// The base a cell starts from, as a name: its file system and state. Cells of one plan with
/// the same name have the same base image (the image's content key adds only what the plan
/// fixes: the size, the profile's text, the library image's checksum).
pub fn base_group(cell: &Cell) -> String {
    // As the lab's base key: an aged base whose drive ages with it is one per drive model.
    match (&cell.state, crate::lab::aging_model(cell)) {
        (crate::spec::StateSpec::Aged { .. }, Some(m)) => {
            format!("{}-{}-{}", cell.fs.label, cell.state.id_part(), m.name)
        }
        _ => format!("{}-{}", cell.fs.label, cell.state.id_part()),
    }
}

pub(crate) fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn need(cmd: &'static str) -> Result<PathBuf, SlurmError> {
    fsage_sys::find_cmd(cmd).ok_or(SlurmError::Missing(cmd))
}

/// Runs a Slurm command and returns its standard output.
fn slurm_cmd(cmd: &Path, args: &[String]) -> Result<String, SlurmError> {
    let name = cmd
        .file_name()
        .map_or_else(|| cmd.display().to_string(), |n| n.to_string_lossy().into());
    let o = Command::new(cmd)
        .args(args)
        .output()
        .map_err(|err| SlurmError::Io {
            path: cmd.to_path_buf(),
            what: "cannot run it",
            err,
        })?;
    if !o.status.success() {
        return Err(SlurmError::Failed {
            cmd: format!("{name} {}", args.join(" ")),
            status: o.status.to_string(),
            stderr: String::from_utf8_lossy(&o.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The submissions recorded in `out` (none when it has no record).
pub fn read_submissions(out: &Path) -> Result<Vec<Submission>, Error> {
    let path = out.join(SLURM_DIR).join(SUBMISSIONS);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| {
            SlurmError::BadRecord {
                path,
                err: e.to_string(),
            }
            .into()
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(err) => Err(SlurmError::Io {
            path,
            what: "cannot read",
            err,
        }
        .into()),
    }
}
