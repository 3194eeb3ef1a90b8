//! Where an experiment's output directory stands (`fsage experiment status`), as data: each cell
//! done, failed, queued, running or left; and reading the plan the directory was run with.

use super::spec::Plan;
use fsage_sys::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Name of the marker file of an output directory.
pub const MARKER: &str = "experiment.json";

/// Where a cell stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CellState {
    Done {
        seconds: f64,
        ops_per_s: Option<f64>,
    },
    Failed {
        error: String,
    },
    /// In a Slurm job that waits (`reason`: why, as `squeue` says).
    Queued {
        slurm_state: String,
        reason: String,
    },
    /// In a Slurm job that runs on `node`.
    Running {
        slurm_state: String,
        node: String,
    },
    Left,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellLine {
    pub id: String,
    #[serde(flatten)]
    pub state: CellState,
    /// The Slurm array task of the last submission that holds this cell (`ARRAYJOB_TASK`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// For a cell left whose job Slurm no longer lists: how `sacct` says the job ended, when
    /// the cluster keeps accounting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_state: Option<String>,
    /// For a cell left whose base job ended without making its base and without recording a
    /// failure (killed, out of time, its binary refused): the job and the last line of its log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_job_ended: Option<String>,
}

/// A Slurm job of the last submission, and its state (`PENDING`, `RUNNING`; for an array the
/// states of its tasks; `ended` once Slurm no longer lists it and no accounting says more).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobLine {
    pub job_id: String,
    pub what: String,
    pub state: String,
}

/// `fsage experiment status`: what is done, failed and left, and how long the rest should take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    pub experiment: String,
    pub out: PathBuf,
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    /// Not done, not failed, and in no queued or running Slurm job.
    pub left: usize,
    /// In a Slurm job that waits, or runs (a directory with Slurm submissions).
    #[serde(default)]
    pub queued: usize,
    #[serde(default)]
    pub running: usize,
    /// Mean wall time of the finished cells (setup and workload; the time a cell spent making its
    /// state's base image is left out).
    pub mean_cell_s: Option<f64>,
    /// `left` × the mean of the finished cells, or the plan's estimate when none is finished.
    pub estimate_left_s: f64,
    /// How the estimate was made.
    pub estimate_from: String,
    pub cells: Vec<CellLine>,
    /// Results in the directory for cells the current plan does not have (an edited experiment).
    pub not_in_plan: Vec<String>,
    /// The jobs of the last Slurm submission, when the directory has one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub jobs: Vec<JobLine>,
    /// Why Slurm could not be asked where the cells not done stand (no `squeue` here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_note: Option<String>,
}

/// The plan an output directory was last run with (its `plan.json`).
pub fn read_plan(out: &Path) -> Result<Plan, Error> {
    let plan_path = out.join("plan.json");
    if !out.join(MARKER).exists() || !plan_path.exists() {
        return Err(Error::input(format!(
            "{}: not an experiment's output directory (no {MARKER} or plan.json); give the \
             output directory the experiment was run into",
            out.display()
        )));
    }
    let text = std::fs::read_to_string(&plan_path)
        .map_err(|e| Error::input(format!("{}: {e}", plan_path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::input(format!("{}: not a plan: {e}", plan_path.display())))
}
