//! Git-history aging after Conway et al. ("How to Fragment Your File System", FAST '17): replay a
//! repository's first-parent history onto a file system, one `git pull` per commit, and every N
//! commits time a cold-cache recursive grep of the aged file system against a clean copy of the
//! same tree on a freshly made file system of the same kind and size.
//!
//! # API
//! - [`git_age`] runs (or resumes) a replay with [`GitAgeOptions`], reporting to an
//!   [`Observer`]; it returns the [`GitSeries`] (a plain serde type; `fsage-report` exports it).
//! - [`git`]: the source repository (a directory or a bundle) and its commit list.
//! - [`tree`]: `--mode tree`, each commit's changes as fsage-exec operations.
//! - [`measure`]: one measurement of an instance (grep, own read, layout score, frag figures),
//!   and the greps' traces costed on device models ([`measure::cost_on_models`]).
//! - [`slow`]: measurements taken through a slow device running a chosen model, a fixed latency
//!   or one with state such as `hdd-7200` ([`MeasureDevice`]).
//! - [`drives`]: the drives an SSD cost model's greps are costed on, aged by each instance's
//!   own writes (the aged one kept in `IMAGE.drives/`).

pub mod copy;
pub mod drives;
pub mod git;
pub mod measure;
pub mod run;
pub mod series;
pub mod slow;
pub mod synthetic;
pub mod tree;

pub use run::{
    default_clean_image, git_age, source_clone_path, state_path, trace_file_name, traces_path,
    GitAgeOptions, Mode, Observer, Outcome, Target,
};
pub use series::{
    FragFigures, GitRow, GitSeries, InstanceFigures, MemoryFigures, ModeledFigures, ModeledRatio,
    SERIES_FORMAT,
};
pub use slow::MeasureDevice;

/// An error of Git aging: what went wrong, where, and who has to act on it (the type every
/// lab-side crate shares, so a lab error passes through unchanged).
pub use fsage_sys::Error;

pub type Result<T> = std::result::Result<T, Error>;
