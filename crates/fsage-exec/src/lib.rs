//! Execution of an aging plan: backends behind one trait, the run loop with its stopping
//! conditions, the op log, and the report it builds.

pub mod backend;
pub mod checkpoint;
pub mod live_ticks;
pub mod oplog;
pub mod parallel;
pub mod posix;
pub mod reconcile;
pub mod runner;
pub mod signals;

pub use backend::{Backend, DryRun, FreeSpace, OpError};
pub use checkpoint::{State, StateError, StateOf, STATE_FORMAT};
pub use oplog::OpLog;
pub use parallel::Parallel;
pub use posix::{Posix, WriteMode};
pub use reconcile::{reconcile, Reconciled};
pub use runner::{
    report, run, Checkpointing, Observer, Outcome, Progress, RunCtx, RunMeta, Silent,
    StopConditions,
};
