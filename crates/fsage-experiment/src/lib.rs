//! Experiments: the comparisons aging is for.
//!
//! - [`spec`]: the experiment file (TOML, documented in `FORMAT/EXPERIMENT.md`), its validation
//!   with `file:line` errors, and its expansion into the matrix of [`spec::Cell`]s, each with a
//!   stable id and an estimated duration ([`spec::Plan`]).
//! - [`result`]: what a runner writes for each cell ([`result::CellResult`], one JSON file per
//!   cell), and reading a directory of them back.
//! - [`analysis`]: pure functions on [`analysis::Sample`]s: aged against fresh, latency sweeps
//!   against the slippery-slope model, classes and inversions.
//!
//! The runner that executes cells is not in this crate yet.

pub mod analysis;
pub mod result;
pub mod spec;

pub use analysis::{analyze, Analysis, AnalysisOptions, Sample, State};
pub use result::{CellResult, CellStatus, Environment};
pub use spec::{Cell, ExperimentSpec, Plan};

/// An error of this crate: a bad experiment file (with its file and line) or an unreadable result.
pub use fsage_sys::Error;
