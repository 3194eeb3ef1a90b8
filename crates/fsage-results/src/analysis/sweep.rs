//! Latency sweeps against the slippery-slope model (Santana et al., INFLOW '15):
//! Throughput(l_dev) = C / (l_dev + l_sw), latencies in µs, throughput in ops/s (so C is in
//! ops/s·µs and l_sw, the software's share of an operation's latency, in µs).

use super::{MeanCi, State};
use fsage_units::format_latency_us;
use serde::{Deserialize, Serialize};

/// The model's two constants.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelFit {
    /// C, in ops/s·µs.
    pub c: f64,
    /// l_sw, in µs.
    pub l_sw_us: f64,
}

impl ModelFit {
    pub fn predict(&self, latency_us: f64) -> f64 {
        self.c / (latency_us + self.l_sw_us)
    }
}

/// One latency of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub latency_us: f64,
    pub measured: MeanCi,
    /// The calibrated model's prediction, and (measured - predicted) / predicted.
    pub predicted: Option<f64>,
    pub error: Option<f64>,
    /// The least-squares model's prediction and relative error.
    pub lsq_predicted: Option<f64>,
    pub lsq_error: Option<f64>,
    /// One of the two calibration latencies.
    pub calibration: bool,
}

/// How a file system and workload scale against the model, by this rule. With e(l) the relative
/// error of the measured mean against the model at latency l, τ the tolerance, k the knee (1 ms)
/// and P the points below the lower calibration latency (those the model predicts rather than
/// fits), checked in this order:
/// 1. `NoFit`: throughput falls as the device gets faster over the fitted range (the latencies
///    from the lower to the upper calibration latency, or every latency when the model is the
///    least-squares one): the least-squares slope of the measured means against latency over
///    that range is positive, which no model C / (l + l_sw) with C > 0 can follow. Or no model
///    with C > 0 and l_sw > 0 goes through the calibration points (or fits by least squares).
///    A curve that behaves over the fitted range and drops at lower latencies is not `NoFit`:
///    that drop is what `III` and `I` describe.
/// 2. `III`: some point of P at l ≥ k is below the model by more than τ; it departs at the
///    highest such latency.
/// 3. `II`: no point of P is below the model by more than τ, and some point is above it by more
///    than τ.
/// 4. `I`: every point of P at l ≥ k is within τ, and some point under k is below by more than τ.
/// 5. `Follows`: every point of P is within τ (the model holds at every latency measured).
/// 6. `Unclassified`: anything else (above the model at some latencies, below under k), with why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "class", rename_all = "snake_case")]
pub enum SweepClass {
    #[serde(rename = "I")]
    I {
        below_from_us: f64,
    },
    #[serde(rename = "II")]
    II,
    #[serde(rename = "III")]
    III {
        /// The highest latency at which the curve is below the model by more than τ.
        departs_us: f64,
        /// The next higher latency measured, still on the model (absent when none).
        last_on_model_us: Option<f64>,
    },
    Follows,
    NoFit {
        reason: String,
    },
    Unclassified {
        reason: String,
    },
}

impl SweepClass {
    /// "I", "II", "III", "follows", "no fit", "unclassified".
    pub fn name(&self) -> &'static str {
        match self {
            SweepClass::I { .. } => "I",
            SweepClass::II => "II",
            SweepClass::III { .. } => "III",
            SweepClass::Follows => "follows",
            SweepClass::NoFit { .. } => "no fit",
            SweepClass::Unclassified { .. } => "unclassified",
        }
    }
    /// One line: the class and what it means here.
    pub fn describe(&self) -> String {
        let ms = format_latency_us;
        match self {
            SweepClass::I { below_from_us } => format!(
                "I: follows the model down to the knee, below it from {} down",
                ms(*below_from_us)
            ),
            SweepClass::II => "II: above the model (faster than expected)".into(),
            SweepClass::III {
                departs_us,
                last_on_model_us,
            } => match last_on_model_us {
                Some(l) => format!(
                    "III: below the model from {} down (on it at {})",
                    ms(*departs_us),
                    ms(*l)
                ),
                None => format!("III: below the model from {} down", ms(*departs_us)),
            },
            SweepClass::Follows => "follows the model at every latency measured".into(),
            SweepClass::NoFit { reason } => format!("no fit: {reason}"),
            SweepClass::Unclassified { reason } => format!("unclassified: {reason}"),
        }
    }
}

/// One file system and workload in one state across device latencies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFit {
    pub fs: String,
    pub workload: String,
    pub state: State,
    /// Fastest device (lowest latency) first.
    pub points: Vec<SweepPoint>,
    pub calibration: Option<ModelFit>,
    pub least_squares: Option<ModelFit>,
    /// Which model the class and the per-point errors use: "calibration" when both calibration
    /// latencies were measured, else "least_squares".
    pub classified_with: String,
    pub class: SweepClass,
    /// Where its cells ran (absent: native): a report draws each platform's sweeps apart.
    #[serde(default, skip_serializing_if = "fsage_sys::PlatformKind::is_native")]
    pub platform: fsage_sys::PlatformKind,
}

/// Two file systems whose order changes as the device gets faster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inversion {
    pub workload: String,
    pub state: State,
    /// Faster on the slower device (at `from_us`).
    pub faster_slow_device: String,
    /// Faster on the faster device (at `to_us`).
    pub faster_fast_device: String,
    /// The two latencies (µs) between which the order changes: the leader at `from_us` is
    /// behind at `to_us` (from_us > to_us), with no clear order in between.
    pub from_us: f64,
    pub to_us: f64,
    /// Both orders are backed by 95% intervals that do not overlap (two or more repetitions
    /// on each side). `false`: at `from_us` or `to_us` one of the two has a single repetition,
    /// so the order there rests on the means alone and the inversion may be noise.
    #[serde(default = "yes")]
    pub confirmed: bool,
}

fn yes() -> bool {
    true
}
