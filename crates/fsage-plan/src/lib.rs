//! The aging planner: pure decisions, no I/O, so that it is testable in memory and a dry run is the
//! very algorithm a real run executes.

pub mod data;
pub mod memory;
mod op;
pub mod planner;
pub mod rng;
pub mod snapshot;
pub mod stats;
pub mod theorem;
pub mod tree;

pub use data::{BadDataPattern, DataPattern};
pub use memory::{estimate_memory, MemoryEstimate};
pub use planner::{
    Counters, LiveFile, Op, OpKind, Phase, PlanConfig, PlanError, Planner, UnmeetableBin,
};
pub use rng::Rng;
pub use snapshot::{Snapshot, SnapshotRef};
pub use tree::{DirId, DirTree};
