//! What the planner decides and reports: its operations on live files, its configuration,
//! its errors and its counters (plain serde types, apart from the planner that makes them).

use crate::tree::DirId;
use serde::{Deserialize, Serialize};

/// A live file. Its name is `f<created>`: the tick of its creation identifies it and fixes its age.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveFile {
    pub created: u64,
    pub size: u64,
    pub dir: DirId,
}

impl LiveFile {
    pub fn name(&self) -> String {
        format!("f{}", self.created)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpKind {
    Create,
    Delete,
}

/// One decision: at `tick`, create or delete `file`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Op {
    pub tick: u64,
    pub kind: OpKind,
    pub file: LiveFile,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    Rapid,
    Stable,
    Done,
}

/// Everything that changes decisions (besides the profile).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PlanConfig {
    /// Capacity C in bytes.
    pub capacity: u64,
    pub fullness: f64,
    /// Allocation unit: every file is counted rounded up to it, every directory as one.
    pub block_size: u64,
    pub seed: u64,
    /// Every file exactly its bin's upper edge (the original tool's behaviour).
    pub exact_sizes: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// The directory tree alone needs more than the target bytes.
    TooSmall {
        needed: u64,
        target: u64,
    },
    /// No file of the profile fits in the capacity.
    NothingFits,
    BadConfig(String),
    /// Directory paths that do not make a tree (a child before its parent, a `..`).
    BadTree(String),
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::TooSmall { needed, target } => write!(
                f,
                "capacity too small: the profile's directory tree alone takes {needed} bytes, \
                 more than the {target} bytes of the target fullness"
            ),
            PlanError::NothingFits => write!(
                f,
                "capacity too small: not one file of the profile fits in the target fullness"
            ),
            PlanError::BadConfig(m) | PlanError::BadTree(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for PlanError {}

/// A size bin that cannot be met at this capacity: its smallest file does not fit in the room
/// left above the target fullness, or is so large that one file swings the fullness by more than 1%.
/// The run makes no files in it; reports list it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnmeetableBin {
    pub bin: usize,
    pub min_bytes: u64,
    pub room_bytes: u64,
    pub target_fraction: f64,
    pub reason: String,
}

/// Counters of a run so far, for progress and reports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Counters {
    pub creates: u64,
    pub deletes: u64,
    /// Logical bytes of all files created.
    pub bytes_written: u64,
    /// Ticks whose coin was overridden to keep the fullness band.
    pub forced_creates: u64,
    pub forced_deletes: u64,
    /// Largest |allocated - target| seen during the stable phase, in bytes.
    pub max_deviation: u64,
    /// Creates refused by the file system for lack of space (see [`crate::Planner::reject_create`]).
    pub enospc: u64,
}
