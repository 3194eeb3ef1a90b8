//! Latency sweeps against the slippery-slope model: throughput against device latency with the
//! model dashed (full range and the 0 to 1 ms panel), each file system's class and the points.

use crate::html::format::{mean_ci, ops, opt, us};
use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Line, LineChart};
use crate::html::Section;
use fsage_analysis::{Analysis, State, SweepClass};
use fsage_units::format_latency_us;
use std::fmt::Write as _;

/// `, emulated (TCG)` (or KVM) after a chart's title; nothing for native runs.
fn on_platform(p: fsage_sys::PlatformKind) -> String {
    match p {
        fsage_sys::PlatformKind::Native => String::new(),
        fsage_sys::PlatformKind::Tcg => ", emulated (TCG)".into(),
        fsage_sys::PlatformKind::Kvm => ", in a KVM guest".into(),
    }
}

pub(in crate::html) fn render(p: &mut Page, a: &Analysis, suffix: &str) {
    let mut c = String::new();
    // One chart per workload, state and platform: an emulated (TCG) sweep is never drawn beside a
    // native one.
    let mut keys: Vec<(String, State, fsage_sys::PlatformKind)> = Vec::new();
    for s in &a.sweeps {
        if !keys
            .iter()
            .any(|k| k.0 == s.workload && k.1 == s.state && k.2 == s.platform)
        {
            keys.push((s.workload.clone(), s.state.clone(), s.platform));
        }
    }
    let (c1, c2) = a.options.calibration_us;
    for (wl, st, platform) in keys {
        let sweeps: Vec<_> = a
            .sweeps
            .iter()
            .filter(|s| s.workload == wl && s.state == st && s.platform == platform)
            .collect();
        let xmax = sweeps
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.latency_us))
            .fold(0.0, f64::max);
        // x in ms for the full range, in µs for the 0-1 ms panel.
        let names: Vec<&str> = sweeps.iter().map(|s| s.fs.as_str()).collect();
        let cols = plots::series_colors(&names);
        let mk = |x_hi: f64, div: f64| {
            let mut lines = Vec::new();
            for (i, s) in sweeps.iter().enumerate() {
                lines.push(Line {
                    name: s.fs.clone(),
                    color: cols[i],
                    points: s
                        .points
                        .iter()
                        .map(|q| (q.latency_us / div, q.measured.mean))
                        .collect(),
                    intervals: s
                        .points
                        .iter()
                        .filter(|q| q.measured.ci95.is_some())
                        .map(|q| (q.latency_us / div, q.measured.low(), q.measured.high()))
                        .collect(),
                    dash: plots::Dash::Solid,
                    dots: true,
                    rings: s
                        .points
                        .iter()
                        .filter(|q| q.calibration)
                        .map(|q| (q.latency_us / div, q.measured.mean))
                        .collect(),
                    marker: None,
                    end_label: None,
                });
                // The calibrated model when there is one; else the least-squares one, named so
                // (also when the calibration gave no fit).
                let model = match (s.classified_with.as_str(), &s.calibration) {
                    ("calibration", Some(m)) => Some((m, format!("{} model", s.fs))),
                    _ => s
                        .least_squares
                        .as_ref()
                        .map(|m| (m, format!("{} least-squares model", s.fs))),
                };
                if let Some((m, name)) = model {
                    let n = 200;
                    lines.push(Line {
                        color: cols[i],
                        name,
                        points: (0..=n)
                            .map(|k| {
                                let l = x_hi * k as f64 / n as f64;
                                (l / div, m.predict(l))
                            })
                            .collect(),
                        intervals: vec![],
                        dash: plots::Dash::Dashed,
                        dots: false,
                        rings: vec![],
                        marker: None,
                        end_label: None,
                    });
                }
            }
            lines
        };
        let full = LineChart {
            title: format!(
                "{wl}, {}{}: throughput against device latency",
                st.label(),
                on_platform(platform)
            ),
            x_desc: "device latency (ms)".into(),
            y_desc: "throughput (ops/s)".into(),
            x_range: (0.0, (xmax / 1000.0).max(0.001)),
            lines: mk(xmax, 1000.0),
            size: (700, 420),
            reference_y: None,
            clip_outliers: false,
        };
        let sub_hi = xmax.min(1000.0);
        let zoom = LineChart {
            title: format!("0 to {}", format_latency_us(sub_hi)),
            x_desc: "device latency (µs)".into(),
            y_desc: "throughput (ops/s)".into(),
            x_range: (0.0, sub_hi.max(1.0)),
            lines: mk(sub_hi, 1.0),
            size: (520, 420),
            reference_y: None,
            clip_outliers: false,
        };
        let class_rows: Vec<Vec<String>> = sweeps
            .iter()
            .map(|s| {
                let f = |m: Option<&fsage_analysis::ModelFit>| {
                    m.map_or("–".into(), |m| format!("{:.4e} / {}", m.c, us(m.l_sw_us)))
                };
                let class = match &s.class {
                    SweepClass::NoFit { .. } | SweepClass::Unclassified { .. } => {
                        format!("<span class=\"flag\">{}</span>", esc(&s.class.describe()))
                    }
                    other => esc(&other.describe()),
                };
                vec![
                    s.fs.clone(),
                    f(s.calibration.as_ref()),
                    f(s.least_squares.as_ref()),
                    s.classified_with.replace('_', " "),
                    format!("<span>{class}</span>"),
                ]
            })
            .collect();
        let mut point_rows = Vec::new();
        for s in &sweeps {
            for q in &s.points {
                point_rows.push(vec![
                    s.fs.clone(),
                    format!(
                        "{}{}",
                        format_latency_us(q.latency_us),
                        if q.calibration { " (cal.)" } else { "" }
                    ),
                    mean_ci(&q.measured),
                    opt(q.predicted, ops),
                    opt(q.error, |e| format!("{:+.1}%", 100.0 * e)),
                    opt(q.lsq_predicted, ops),
                    opt(q.lsq_error, |e| format!("{:+.1}%", 100.0 * e)),
                ]);
            }
        }
        let zoom_svg = if sweeps
            .iter()
            .any(|s| s.points.iter().filter(|q| q.latency_us <= 1000.0).count() >= 2)
        {
            plot_or_note(plots::lines(&zoom))
        } else {
            "<p class=\"note\">(no 0–1 ms panel: fewer than two latencies at or under 1 ms)</p>"
                .into()
        };
        let _ = write!(
            c,
            "<h3>{} — {}{}</h3>",
            esc(&wl),
            esc(&st.label()),
            esc(&on_platform(platform))
        );
        c.push_str(&fig(&[plot_or_note(plots::lines(&full)), zoom_svg]));
        c.push_str(&fig(&[
            table(
                &[
                    "fs",
                    "calibrated C (ops/s·µs) / l_sw",
                    "least squares C / l_sw",
                    "classed with",
                    "class",
                ],
                &class_rows,
            ),
            table(
                &[
                    "fs",
                    "latency",
                    "measured ops/s",
                    "model",
                    "error",
                    "least squares",
                    "error",
                ],
                &point_rows,
            ),
        ]));
    }
    let how = format!(
        "Mean ops/s per device latency (dots, whiskers the 95% CI) with the slippery-slope \
         model Throughput = C / (l_dev + l_sw) dashed, in the same colour. The model is \
         calibrated on the points at {} and {} (ringed); where those were not measured, it is \
         the least-squares fit of the relative error over all points. Where the calibrated \
         model gives no fit, the dashed line is the least-squares model (named so in the \
         legend), when that fit exists. Classes, with tolerance τ = {:.0}% and knee {}: <b>no \
         fit</b> when, over the fitted range (from the lower to the upper calibration latency, \
         or every latency for the least-squares model), the least-squares slope of throughput \
         against latency is positive (throughput falls as the device gets faster, which no \
         model with C &gt; 0 follows), or when no model with C &gt; 0 and l_sw &gt; 0 goes \
         through the calibration points; then, over the points below the lower calibration \
         latency, <b>III</b> when a point at \
         or above the knee is more than τ below the model (it departs at the highest such \
         latency); <b>II</b> when no point is more than τ below and some point is more than τ \
         above; <b>I</b> when every point at or above the knee is within τ and some point under \
         it is more than τ below; <b>follows</b> when every point is within τ.",
        format_latency_us(c1),
        format_latency_us(c2),
        100.0 * a.options.tolerance,
        format_latency_us(a.options.knee_us)
    );
    p.section(
        Section::Sweep,
        &format!("Latency sweeps and the model{suffix}"),
        &how,
        &c,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_analysis::{analyze, AnalysisOptions, Sample};

    /// A sweep whose calibration points admit no model (10 ms faster than 5 ms) still gets a
    /// dashed line: the least-squares model, named so in the legend.
    #[test]
    fn no_calibrated_fit_draws_the_least_squares_model() {
        let model = |l: f64| 6e7 / (l + 400.0);
        let mut samples = Vec::new();
        for k in 0..=10 {
            let l = k as f64 * 1000.0;
            let t = if k == 10 {
                model(5000.0) * 1.01
            } else {
                model(l)
            };
            for rep in 0..2 {
                samples.push(Sample {
                    fs: "ext4".into(),
                    state: State::Fresh,
                    workload: "fileserver".into(),
                    latency_us: Some(l),
                    device_model: None,
                    rep,
                    ops_per_s: t * (1.0 + 0.001 * rep as f64),
                    flowops: vec![],
                    flash: None,
                    platform: Default::default(),
                });
            }
        }
        let a = analyze(&samples, &AnalysisOptions::default());
        let s = &a.sweeps[0];
        assert!(matches!(s.class, SweepClass::NoFit { .. }), "{:?}", s.class);
        assert!(s.calibration.is_none() && s.least_squares.is_some());
        let mut p = Page::default();
        render(&mut p, &a, "");
        assert!(p.body.contains("ext4 least-squares model"), "{}", p.body);
    }

    /// An emulated sweep is never drawn in the chart of a native one: each platform gets its own.
    #[test]
    fn native_and_emulated_sweeps_are_drawn_apart() {
        let mut samples = Vec::new();
        for (fs, platform) in [
            ("ext4", fsage_sys::PlatformKind::Native),
            ("f2fs, emulated (TCG)", fsage_sys::PlatformKind::Tcg),
        ] {
            for k in 0..=2 {
                samples.push(Sample {
                    fs: fs.into(),
                    state: State::Fresh,
                    workload: "varmail".into(),
                    latency_us: Some(k as f64 * 1000.0),
                    device_model: None,
                    rep: 0,
                    ops_per_s: 1e6 / (k as f64 * 1000.0 + 100.0),
                    flowops: vec![],
                    flash: None,
                    platform,
                });
            }
        }
        let a = analyze(&samples, &AnalysisOptions::default());
        assert_eq!(a.sweeps.len(), 2);
        let mut p = Page::default();
        render(&mut p, &a, "");
        let native = p
            .body
            .find("<h3>varmail — fresh</h3>")
            .expect("a native chart");
        let tcg = p
            .body
            .find("<h3>varmail — fresh, emulated (TCG)</h3>")
            .expect("an emulated chart");
        // Each chart names only its own file system.
        let (first, second) = p.body.split_at(tcg.max(native));
        let (native_part, tcg_part) = if native < tcg {
            (first, second)
        } else {
            (second, first)
        };
        assert!(!native_part.contains("f2fs"), "f2fs in the native chart");
        assert!(!tcg_part.contains(">ext4<"), "ext4 in the emulated chart");
    }
}
