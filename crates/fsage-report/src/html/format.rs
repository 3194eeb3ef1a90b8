//! How numbers and states print in the page's tables, titles and legends, one spelling for every
//! section.

use fsage_analysis::{MeanCi, State};
use fsage_units::format_latency_us;
use std::collections::BTreeSet;

/// `f(x)`, or a dash for a figure not there.
pub(super) fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("–".into(), f)
}

/// Throughput: whole numbers from 100 up, else two decimals.
pub(super) fn ops(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// A mean and its 95% interval, in the precision of [`ops`].
pub(super) fn mean_ci(m: &MeanCi) -> String {
    mean_pm(m.mean, m.ci95)
}

/// A mean and the half-width of its 95% interval (none for one value), as [`mean_ci`].
pub(super) fn mean_pm(mean: f64, ci95: Option<f64>) -> String {
    match ci95 {
        Some(c) if mean >= 100.0 => format!("{mean:.0} ± {c:.0}"),
        Some(c) => format!("{mean:.2} ± {c:.2}"),
        None => ops(mean),
    }
}

/// A group's device: a device model by name (a model is no point on the latency axis), a
/// latency, or "plain image" for none.
pub(super) fn lat(model: &Option<String>, l: Option<f64>) -> String {
    match model {
        Some(m) => format!("device model {m}"),
        None => l.map_or("plain image".into(), |v| {
            format!("device {}", format_latency_us(v))
        }),
    }
}

/// A measured latency in µs, to three digits.
pub(super) fn us(x: f64) -> String {
    fsage_units::format_latency_round(x)
}

/// States in the order every table and legend shows them: fresh first, then by label.
pub(super) fn state_order(states: &BTreeSet<State>) -> Vec<State> {
    let mut v: Vec<State> = states.iter().cloned().collect();
    v.sort_by_key(|s| (!s.is_fresh(), s.label()));
    v
}

/// MB/s (10^6 bytes) as MiB/s (2^20 bytes, Filebench's `mb/s`).
pub(crate) fn mib(mb_per_s: f64) -> f64 {
    mb_per_s * 1e6 / 1_048_576.0
}
