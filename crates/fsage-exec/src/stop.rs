//! The stopping conditions of a run: their own module, so that the run loop and the state file
//! (which saves them for a resume) both depend on it rather than on each other.

use std::time::Duration;

/// The optional stopping conditions; the source running out (T ticks for the planner) always
/// applies.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StopConditions {
    pub max_time: Option<Duration>,
    /// Bytes written divided by the capacity.
    pub max_overwrites: Option<f64>,
    /// Stop once the chi-squared fit of the age histogram has at least this p-value.
    pub confidence: Option<f64>,
    /// Total ticks (operations), the rapid phase included.
    pub max_ops: Option<u64>,
}
