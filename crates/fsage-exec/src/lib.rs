//! Execution: operation sources (the planner, an op log) feed a run loop that hands each step to a
//! backend (POSIX, parallel POSIX, dry run, mock) behind one trait, watches the stopping
//! conditions, checkpoints, and produces the run report (the data; `fsage-report` exports it).

pub mod backend;
pub mod checkpoint;
pub mod live_ticks;
pub mod mock;
pub mod op;
pub mod oplog;
pub mod pace;
pub mod parallel;
pub mod planner_bench;
pub mod posix;
pub mod preflight;
pub mod reconcile;
pub mod replay;
pub mod report;
pub mod runner;
pub mod source;
pub mod status;
pub mod stop;

pub use backend::{Backend, DryRun, FreeSpace, OpError};
pub use checkpoint::{RunRecord, SavedStop, State, StateError, STATE_FORMAT};
pub use op::{FileRef, OpSource, Operation, Step};
pub use oplog::{OpLog, OpLogContents, OpLogError, OpLogSource};
pub use pace::{time_left, End, Pace, TimeLeft};
pub use parallel::{Parallel, Sharding};
pub use posix::{Posix, WriteMode};
pub use reconcile::{reconcile, Reconciled};
pub use report::{ClippedBin, Fit, RunReport, StopReason};
pub use runner::{
    report, run, run_source, Checkpointing, Observer, Outcome, Progress, RunCtx, RunMeta, Silent,
};
pub use source::PlanSource;
pub use status::{RunPhase, RunStatus};
pub use stop::StopConditions;
