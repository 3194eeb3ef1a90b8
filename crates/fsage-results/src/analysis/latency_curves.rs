//! Latency percentiles per flowop from the cells' full workload reports: each cell keeps the
//! engine's result (`workload_report`), whose flowops carry p50, p90, p99, p99.9 and max from
//! the engine's HDR histograms; the analysis' samples keep only p99 and max. The curves are made
//! from the cells by fsage-analysis (`latency_curves::from_cells`).

use super::State;
use serde::Serialize;

/// The percentiles drawn, in order: the key in the engine's `stats`, and the label.
pub const PERCENTILES: [(&str, &str); 5] = [
    ("p50_us", "p50"),
    ("p90_us", "p90"),
    ("p99_us", "p99"),
    ("p999_us", "p99.9"),
    ("max_us", "max"),
];

/// One flowop of one (file system, workload, device latency or model, state): its latency percentiles
/// over the repetitions (each percentile the mean of the repetitions'; max the largest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowopCurve {
    pub fs: String,
    pub workload: String,
    pub latency_us: Option<f64>,
    /// The device model the cells ran on, by name (then `latency_us` is `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_model: Option<String>,
    pub state: State,
    pub flowop: String,
    pub reps: usize,
    /// (label, µs) for each percentile of [`PERCENTILES`] that was measured.
    pub points: Vec<(String, f64)>,
}
