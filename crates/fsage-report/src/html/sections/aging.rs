//! Aging runs: each histogram of the profile (file sizes, directory depths, relative ages),
//! target against the live files at the end of the run.

use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries};
use crate::html::Section;
use crate::inputs::Named;
use fsage_exec::report::{Histogram, RunReport};
use fsage_profile::human_bytes;
use std::fmt::Write as _;

fn hist_plot(title: &str, h: &Histogram, x_desc: &str) -> (String, String) {
    // Trailing bins empty in both target and actual add nothing.
    let last = h
        .bins
        .iter()
        .rposition(|b| b.ideal > 0.0 || b.actual > 0.0)
        .map_or(0, |i| i + 1);
    let first = h
        .bins
        .iter()
        .position(|b| b.ideal > 0.0 || b.actual > 0.0)
        .unwrap_or(0)
        .min(last);
    let bins = &h.bins[first..last];
    let chart = BarChart {
        title: title.to_string(),
        x_desc: x_desc.to_string(),
        y_desc: "share of files (%)".into(),
        groups: bins.iter().map(|b| b.label.clone()).collect(),
        series: vec![
            BarSeries {
                name: "target (profile)".into(),
                bars: bins
                    .iter()
                    .map(|b| {
                        Some(Bar {
                            value: 100.0 * b.ideal,
                            interval: None,
                            flag: false,
                            color: None,
                        })
                    })
                    .collect(),
                color: None,
            },
            BarSeries {
                name: "actual (end of run)".into(),
                bars: bins
                    .iter()
                    .map(|b| {
                        Some(Bar {
                            value: 100.0 * b.actual,
                            interval: None,
                            flag: false,
                            color: None,
                        })
                    })
                    .collect(),
                color: None,
            },
        ],
        log_y: false,
        size: (760, 380),
    };
    let rows: Vec<Vec<String>> = bins
        .iter()
        .map(|b| {
            vec![
                b.label.clone(),
                format!("{:.2}", 100.0 * b.ideal),
                format!("{:.2}", 100.0 * b.actual),
                b.count.to_string(),
            ]
        })
        .collect();
    (
        plot_or_note(plots::bars(&chart)),
        table(&["bin", "target %", "actual %", "files"], &rows),
    )
}

pub(in crate::html) fn render(p: &mut Page, runs: &[Named<RunReport>]) {
    let mut c = String::new();
    for r in runs {
        let x = &r.item;
        let _ = write!(
            c,
            "<h3>{}</h3><p>profile <b>{}</b>, capacity {}, fullness {:.2}, seed {}; {} of T = {} \
             ticks ({:.1}%), stopped: {}; {} live files, {} allocated; age RMSE {:.4}%, size \
             RMSE {:.4}%, depth RMSE {:.4}%{}</p>",
            esc(&r.name),
            esc(&x.profile),
            human_bytes(x.capacity),
            x.fullness,
            x.seed,
            x.ticks,
            x.t_estimate,
            100.0 * x.ticks as f64 / x.t_estimate.max(1) as f64,
            esc(&crate::run_text::stop_reason_text(x.stop_reason)),
            x.live_files,
            human_bytes(x.live_bytes),
            100.0 * x.age.rmse,
            100.0 * x.size.rmse,
            100.0 * x.depth.rmse,
            if x.converged { "; converged" } else { "" }
        );
        for (h, t, xd) in [
            (&x.size, "file sizes", "file size bin"),
            (&x.depth, "directory depths", "depth of the file"),
            (&x.age, "relative ages", "relative age bin (age / oldest)"),
        ] {
            let (svg, tab) = hist_plot(&format!("{}: {t}, target vs actual", r.name), h, xd);
            c.push_str(&fig(&[svg, tab]));
        }
    }
    p.section(
        Section::Aging,
        "Aging runs: target against actual",
        "From the JSON reports of <code>fsage age --json</code>. <i>Target</i> is the profile's \
         share of files in each bin, <i>actual</i> the share of live files at the end of the run \
         (age: each file's age relative to the run's length). RMSE is over the bins, in percent \
         points of the share of files. Fullness and RMSE over ticks are not recorded in the \
         report, so they are not drawn.",
        &c,
    );
}
