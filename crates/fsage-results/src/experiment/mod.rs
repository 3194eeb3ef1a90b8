//! An experiment's results as data: the cells and plan its file expands into ([`spec`]), what a
//! runner writes for each cell ([`result`]) and each base image ([`base`]), where a cell's
//! working copy lived ([`storage`]) and where an output directory stands ([`status`]). Parsing the file, running the cells and Slurm
//! are fsage-experiment's, which re-exports these where they were.

pub mod base;
pub mod result;
pub mod spec;
pub mod status;
pub mod storage;

/// Seconds a guest takes to boot under TCG on this machine (BENCHMARKS.md: 3-8 s, more under
/// load): what the plan adds per cell that runs in a VM.
pub const BOOT_ALLOWANCE_S: f64 = 10.0;
