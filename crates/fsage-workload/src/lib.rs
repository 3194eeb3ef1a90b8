//! fsage's workload engine: Filebench's workload-model language (`.f` files) and its semantics,
//! run by threads in one process with a seed, a hard stop, latency percentiles and a fileset
//! that cannot run dry.
//!
//! ```no_run
//! use fsage_workload::{run, NoObserver, RunConfig, Stop, Workload};
//! let w = Workload::builtin("varmail")?.with_vars(&[("nfiles", "200")])?;
//! let cfg = RunConfig { stop: Some(Stop::Ops(10_000)), ..RunConfig::default() };
//! let result = run(&w, &cfg, std::path::Path::new("/mnt/scratch/bench"), &mut NoObserver)?;
//! println!("{:.0} ops/s", result.summary.ops_per_sec_mean);
//! # Ok::<(), fsage_workload::Error>(())
//! ```

pub mod aio;
pub mod cgroup;
mod control;
mod engine;
mod error;
pub mod fileset;
mod flowop;
pub mod gamma;
mod kind;
mod lang;
pub mod model;
pub mod randvar;
mod result;
pub mod sampler;
mod workload;

pub use engine::{default_warmup, run, NoObserver, Observer, Phase, Progress, RunConfig, Stop};
pub use error::{Error, Setting};
pub use fsage_plan::DataPattern;
pub use lang::{
    parse_size, MAX_COMPOSITE_DEPTH, MAX_ENTRIES, MAX_ERLANG_SHAPE, MAX_EXPANSION_STEPS,
    MAX_FLOWOPS, MAX_FLOWOPS_PER_THREAD, MAX_IOSIZE, MAX_THREADS,
};
pub use model::{
    DataOp, FileOp, FilesetDef, FlowopDef, FlowopKind, Model, PaceOp, QuitMode, SizeDist, ThreadDef,
};
pub use result::{
    BenchResult, CacheLimit, Environment, FlowopResult, FlowopSummary, OpStats, RepResult, Summary,
};
pub use sampler::{LockContention, Timeline, TimelinePoint};
pub use workload::{Workload, BUILTINS};
