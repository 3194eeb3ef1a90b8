//! The analyses of an experiment's samples, as pure functions on plain serde data: no I/O, no
//! formatting. Aged against fresh and the latency sweeps read only samples, so they live in
//! fsage-results (the report runs them without the runner) and are re-exported here; the two
//! that read cells or the plan are here:
//!
//! - Latency percentiles per flowop ([`latency_curves`]): p50 to max from the cells' full workload
//!   reports, over the repetitions.
//! - How far from fresh ([`verdicts`]): each aged base image of an experiment against its fresh
//!   base, from their layout measurements.

pub use fsage_results::analysis::*;

pub mod latency_curves;
pub mod verdicts;
