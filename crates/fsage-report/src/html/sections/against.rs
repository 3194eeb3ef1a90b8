//! How far from fresh: `frag --against-fresh` comparisons, and the verdicts on an experiment's
//! base images (both under the `against-fresh` section kind).

use super::frag::frag_plots;
use crate::html::format::opt;
use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries};
use crate::html::Section;
use crate::inputs::Named;
use fsage_analysis::verdicts::BaseVerdict;
use fsage_profile::human_bytes;
use fsage_results::against::AgainstFresh;
use std::fmt::Write as _;

pub(in crate::html) fn render(p: &mut Page, items: &[Named<AgainstFresh>]) {
    let mut c = String::new();
    for a in items {
        let x = &a.item;
        let _ = write!(
            c,
            "<h3>{}</h3><p class=\"verdict\">{}</p>",
            esc(&a.name),
            esc(&x.summary)
        );
        let list = [("image", &x.aged_report), ("fresh twin", &x.fresh_report)];
        let ratio = |r: Option<f64>| opt(r, |v| format!("{v:.1}×"));
        let rows = vec![
            vec![
                "free extents per GiB of free space".into(),
                opt(x.aged.free_extents_per_gib, |v| format!("{v:.1}")),
                opt(x.fresh.free_extents_per_gib, |v| format!("{v:.1}")),
                ratio(x.free_extents_ratio),
            ],
            vec![
                "% of free space in extents < 1 MiB".into(),
                opt(x.aged.free_under_1mib_percent, |v| format!("{v:.1}")),
                opt(x.fresh.free_under_1mib_percent, |v| format!("{v:.1}")),
                opt(x.free_under_1mib_points, |v| format!("{v:+.1} points")),
            ],
            vec![
                "probe fragments per 100 MiB".into(),
                opt(x.aged.probe_fragments_per_100mib, |v| format!("{v:.1}")),
                opt(x.fresh.probe_fragments_per_100mib, |v| format!("{v:.1}")),
                ratio(x.probe_fragments_ratio),
            ],
            vec![
                "dynamic layout score".into(),
                opt(x.aged.dynamic_layout_score, |v| {
                    format!("{:.2}%", 100.0 * v)
                }),
                opt(x.fresh.dynamic_layout_score, |v| {
                    format!("{:.2}%", 100.0 * v)
                }),
                "–".into(),
            ],
        ];
        let mut parts = frag_plots(&list).into_iter();
        let t = table(&["figure", "image", "fresh twin", "image vs fresh"], &rows);
        c.push_str(&fig(&[parts.next().unwrap_or_default(), t]));
        c.push_str(&fig(&parts.collect::<Vec<_>>()));
    }
    p.section(
        Section::AgainstFresh,
        "How far from fresh",
        "From <code>fsage frag --against-fresh</code>: the image is measured, then a fresh file \
         system of the same kind and size is made in memory, measured the same way (same probe \
         size) and removed. Ratios count the fresh figure as at least 1. Verdict: <i>heavily \
         aged</i> when free extents per GiB or probe fragments are 10× the fresh ones or more, \
         or the share of free space in extents under 1 MiB is 25 points higher or more; <i>close \
         to fresh</i> when both ratios are at most 2× and the share at most 5 points higher; \
         <i>aged</i> otherwise. A fresh file system has no files, so its dynamic layout score is \
         absent (a perfect layout scores 100%).",
        &c,
    );
}

/// Each aged base image of an experiment beside the fresh base of the same file system and size:
/// the table of the four figures, then the one-line verdict per image.
pub(in crate::html) fn experiment_verdicts(p: &mut Page, items: &[BaseVerdict]) {
    let f1 = |x: Option<f64>| opt(x, |v| format!("{v:.1}"));
    let pair = |a: Option<f64>, b: Option<f64>| format!("{} / {}", f1(a), f1(b));
    let rows: Vec<Vec<String>> = items
        .iter()
        .map(|v| match &v.against {
            Some(a) => vec![
                v.fs.clone(),
                v.state.clone(),
                human_bytes(v.image_size),
                pair(a.aged.free_extents_per_gib, a.fresh.free_extents_per_gib),
                opt(a.free_extents_ratio, |r| format!("{r:.1}×")),
                pair(
                    a.aged.free_under_1mib_percent,
                    a.fresh.free_under_1mib_percent,
                ),
                opt(a.free_under_1mib_points, |v| format!("{v:+.1}")),
                pair(
                    a.aged.probe_fragments_per_100mib,
                    a.fresh.probe_fragments_per_100mib,
                ),
                opt(a.probe_fragments_ratio, |r| format!("{r:.1}×")),
                opt(a.aged.dynamic_layout_score, |v| {
                    format!("{:.2}%", 100.0 * v)
                }),
                a.verdict.describe().to_string(),
            ],
            None => {
                let mut r = vec![v.fs.clone(), v.state.clone(), human_bytes(v.image_size)];
                r.extend(std::iter::repeat_n("–".to_string(), 7));
                r.push(format!(
                    "no verdict: {}",
                    v.missing.as_deref().unwrap_or("nothing to compare")
                ));
                r
            }
        })
        .collect();
    let mut c = table(
        &[
            "fs",
            "state",
            "image size",
            "free extents / GiB free (this / fresh)",
            "free extents vs fresh",
            "% free in extents < 1 MiB (this / fresh)",
            "points vs fresh",
            "probe fragments / 100 MiB (this / fresh)",
            "probe vs fresh",
            "dynamic layout score",
            "verdict",
        ],
        &rows,
    );
    for v in items {
        let _ = write!(c, "<p class=\"verdict\">{}</p>", esc(&v.line()));
    }
    // The two ratios that separate aged from fresh, per image with a verdict, on a log axis (the
    // verdict's thresholds are 2x and 10x).
    let judged: Vec<_> = items
        .iter()
        .filter_map(|v| v.against.as_ref().map(|a| (v, a)))
        .collect();
    if judged.is_empty() {
        c.push_str(
            "<p class=\"note\">(no plot: no aged base image has a fresh base to compare with)</p>",
        );
    } else {
        let ratio = |r: Option<f64>| {
            r.map(|value| Bar {
                value,
                interval: None,
                flag: false,
                color: None,
            })
        };
        let chart = BarChart {
            title: "aged base images against the fresh base".into(),
            x_desc: "base image (file system, state)".into(),
            y_desc: "this image / fresh (×, log)".into(),
            groups: judged
                .iter()
                .map(|(v, _)| format!("{} {}", v.fs, v.state))
                .collect(),
            series: vec![
                BarSeries {
                    name: "free extents per GiB free".into(),
                    bars: judged
                        .iter()
                        .map(|(_, a)| ratio(a.free_extents_ratio))
                        .collect(),
                    color: None,
                },
                BarSeries {
                    name: "probe fragments per 100 MiB".into(),
                    bars: judged
                        .iter()
                        .map(|(_, a)| ratio(a.probe_fragments_ratio))
                        .collect(),
                    color: None,
                },
            ],
            log_y: true,
            size: (760, 360),
        };
        c.push_str(&plot_or_note(plots::bars(&chart)));
    }
    p.section(
        Section::AgainstFresh,
        "How far from fresh: the experiment's base images",
        "Every base image of the experiment was measured once it was made (<code>frag/</code> \
         in the output directory: free space, files, and a small probe file written on a scratch \
         copy of the image). Each aged or library base is set beside the fresh base of the same \
         file system and image size, with the comparison <code>fsage frag --against-fresh</code> \
         makes: ratios count the fresh figure as at least 1; <i>heavily aged</i> when free \
         extents per GiB or probe fragments are 10× the fresh ones or more, or the share of free \
         space in extents under 1 MiB is 25 points higher or more; <i>close to fresh</i> when \
         both ratios are at most 2× and the share at most 5 points higher; <i>aged</i> \
         otherwise. Experiments run before the probe was added have no probe figures.",
        &c,
    );
}
