//! The papers' published figures, reproduced: fsage's numbers beside the papers'.
//!
//! - [`published`]: the published numbers (`docs/reproductions/published.csv`, compiled in),
//!   one row per point, each with its paper, figure and source.
//! - [`catalog`]: one definition per figure: the paper's procedure as an fsage experiment or
//!   Git-aging runs, its scale, its expected run time, and what it needs.
//! - [`run`]: `fsage reproduce NAME --out DIR`: refuses when this build lacks a need (naming it),
//!   else runs the scaled procedure resumably through the experiment runner or Git aging.
//! - [`compare`]: each published point beside fsage's, the difference and the aim.

pub mod catalog;
pub mod compare;
pub mod published;
pub mod run;

pub use catalog::{Reproduction, REPRODUCTIONS};
pub use compare::{compare, Aim, Comparison, LockCell, PointComparison};
pub use published::{published, published_for, PublishedError, PublishedPoint, RowProblem};
pub use run::{reproduce, Observer, Options, Outcome, Record};

/// An error of a reproduction: bad input (an unknown name, a directory of something else) or a
/// refusal (a need this build lacks), named.
pub use fsage_sys::Error;
