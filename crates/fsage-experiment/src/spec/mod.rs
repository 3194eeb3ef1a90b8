//! The experiment file (TOML; `FORMAT/EXPERIMENT.md` in this crate documents it) and its matrix
//! of cells.
//!
//! [`load`] reads and validates a file: every error names the file, the line and what is wrong.
//! [`ExperimentSpec::plan`] expands it into [`Cell`]s in the order a runner goes through them
//! (repetition, file system, workload, latency, state: the states compared run back to back),
//! each with an id that depends only on what the cell measures, so that a runner can skip the
//! cells whose results exist after an edit of unrelated parts of the file.

mod cells;
mod parser;
mod types;

pub use cells::{cell_id, setup_allowance_s, CELL_FORMAT};
pub use parser::{load, load_with_text, parse, MAX_CELLS, MAX_LIST};
pub use types::{
    runs_of, AgeOn, Cell, CopyMethod, DriveBefore, DriveSpec, ExperimentSpec, FsSpec, Placement,
    Plan, ProfileFile, Runs, StateSpec, WorkloadSource, WorkloadSpec, BUILTIN_WORKLOADS, FS_KINDS,
};

#[cfg(test)]
mod tests;
