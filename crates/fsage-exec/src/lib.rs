//! Execution of an aging plan: backends behind one trait, the run loop with its stopping
//! conditions, the op log, and the report it builds.

pub mod backend;
pub mod live_ticks;
pub mod oplog;
pub mod posix;
pub mod runner;
pub mod signals;

pub use backend::{Backend, DryRun, FreeSpace, OpError};
pub use oplog::OpLog;
pub use posix::{Posix, WriteMode};
pub use runner::{report, run, Observer, Outcome, Progress, RunMeta, Silent, StopConditions};
