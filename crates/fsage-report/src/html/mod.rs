//! The HTML report: one self-contained page (inline SVG from plotters, inline CSS, one small
//! inline script that checks every section drew; no network), with a table of numbers beside each
//! plot and a "how this was made" note per section.

pub mod plots;

use crate::inputs::{Named, ReportSet};
use crate::latency_curves::FlowopCurve;
use crate::Exporter;
use fsage_core::against::{AgainstFresh, AgingFigures};
use fsage_exec::report::{Histogram, RunReport};
use fsage_experiment::analysis::{Analysis, FlowopCompare, MeanCi, State, SweepClass};
use fsage_measure::FragReport;
use fsage_profile::human_bytes;
use fsage_units::format_latency_us;
use plots::{Bar, BarChart, BarSeries, Line, LineChart};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Section kinds, in page order (`--section` takes these names).
pub const SECTIONS: [&str; 9] = [
    "aging",
    "git",
    "frag",
    "against-fresh",
    "aged-vs-fresh",
    "latency",
    "sweep",
    "inversions",
    "cells",
];

/// The HTML exporter. `sections` empty means all.
#[derive(Debug, Clone, Default)]
pub struct Html {
    pub sections: Vec<String>,
}

impl Exporter<ReportSet> for Html {
    fn export(&self, set: &ReportSet) -> String {
        render(set, &self.sections)
    }
}

pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = r#"
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { border-bottom: 2px solid #0072b2; padding-bottom: .2em; margin-top: 2em; }
h3 { margin: 1.4em 0 .4em; }
nav a { margin-right: 1em; }
.how { background: #f4f7fa; border-left: 4px solid #0072b2; padding: .5em 1em; font-size: .92em; margin: .6em 0 1em; }
.fig { display: flex; flex-wrap: wrap; gap: 1.2em; align-items: flex-start; margin-bottom: 1em; }
.fig svg { flex: none; border: 1px solid #ddd; }
table { border-collapse: collapse; font-size: .85em; }
th, td { border: 1px solid #ccc; padding: .2em .5em; text-align: right; white-space: nowrap; }
th { background: #eef2f5; white-space: normal; max-width: 9em; vertical-align: bottom; }
td.l, th.l { text-align: left; }
.flag { color: #b00; font-weight: bold; }
.verdict { font-size: 1.05em; font-weight: 600; margin: .4em 0; }
.note { color: #555; font-size: .9em; }
.tablewrap { max-height: 460px; overflow: auto; }
"#;

/// Run by the page itself (and read back by the headless-Chromium test): every section but the
/// table-only ones (inversions, cells) must hold an `<svg>` with a size and drawn marks (more than
/// a background), no section may carry a "(no plot: ...)" note, and the table-only ones need a
/// table or a verdict line. Each section gets `data-rendered` and, when not, `data-why`.
const CHECK_SCRIPT: &str = r#"
(function () {
  var TABLE_ONLY = ['inversions', 'cells'];
  var secs = document.querySelectorAll('section.fsage');
  var ok = 0, bad = [];
  secs.forEach(function (s) {
    var why = [];
    var svgs = s.querySelectorAll('svg');
    if (TABLE_ONLY.indexOf(s.getAttribute('data-kind')) >= 0) {
      if (s.querySelector('table') === null && s.querySelector('.verdict') === null) why.push('no table');
    } else if (svgs.length === 0) {
      why.push('no plot');
    }
    svgs.forEach(function (v) {
      var b = v.getBBox();
      var marks = v.querySelectorAll('path, line, polyline, polygon, circle, ellipse, rect').length;
      if (!(b.width > 0 && b.height > 0) || marks < 2) why.push('an empty plot');
    });
    s.querySelectorAll('.note').forEach(function (n) {
      if (n.textContent.indexOf('(no plot') === 0) why.push(n.textContent);
    });
    s.setAttribute('data-rendered', why.length ? 'no' : 'yes');
    if (why.length) { s.setAttribute('data-why', why.join('; ')); bad.push(s.id + ' (' + why.join('; ') + ')'); } else ok++;
  });
  document.body.setAttribute('data-sections', String(secs.length));
  document.body.setAttribute('data-sections-ok', String(ok));
  if (bad.length) console.error('fsage report: sections that did not render: ' + bad.join(', '));
})();
"#;

struct Page {
    body: String,
    nav: Vec<(String, String)>,
    n: usize,
}

impl Page {
    fn section(&mut self, kind: &str, title: &str, how: &str, content: &str) {
        self.n += 1;
        let id = format!("{kind}-{}", self.n);
        self.nav.push((id.clone(), title.to_string()));
        let _ = write!(
            self.body,
            "<section class=\"fsage\" id=\"{id}\" data-kind=\"{kind}\">\n<h2>{}</h2>\n\
             <div class=\"how\"><b>How this was made.</b> {how}</div>\n{content}</section>\n",
            esc(title)
        );
    }
}

fn plot_or_note(r: Result<String, plots::PlotError>) -> String {
    match r {
        Ok(svg) => svg,
        Err(e) => format!("<p class=\"note\">(no plot: {})</p>", esc(&e.0)),
    }
}

/// A table: header cells, then rows; a cell starting with `<` is raw HTML, else escaped. The first
/// column and words are left-aligned, numbers right.
fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let mut t = String::from("<div class=\"tablewrap\"><table><thead><tr>");
    for (i, h) in head.iter().enumerate() {
        let _ = write!(
            t,
            "<th{}>{}</th>",
            if i == 0 { " class=\"l\"" } else { "" },
            esc(h)
        );
    }
    t.push_str("</tr></thead><tbody>\n");
    for r in rows {
        t.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let cell = if c.starts_with('<') {
                c.clone()
            } else {
                esc(c)
            };
            // Numbers right, words left.
            let numeric = c
                .chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_digit() || "+-–.".contains(ch));
            let _ = write!(
                t,
                "<td{}>{cell}</td>",
                if i == 0 || !numeric {
                    " class=\"l\""
                } else {
                    ""
                }
            );
        }
        t.push_str("</tr>\n");
    }
    t.push_str("</tbody></table></div>");
    t
}

fn fig(parts: &[String]) -> String {
    format!("<div class=\"fig\">{}</div>\n", parts.concat())
}

fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or("–".into(), f)
}

fn ops(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

fn mean_ci(m: &MeanCi) -> String {
    match m.ci95 {
        Some(c) if m.mean >= 100.0 => format!("{:.0} ± {c:.0}", m.mean),
        Some(c) => format!("{:.2} ± {c:.2}", m.mean),
        None => ops(m.mean),
    }
}

fn lat(l: Option<f64>) -> String {
    l.map_or("plain image".into(), |v| {
        format!("device {}", format_latency_us(v))
    })
}

/// A measured latency in µs, to three digits.
fn us(x: f64) -> String {
    fsage_units::format_latency_round(x)
}

pub fn render(set: &ReportSet, only: &[String]) -> String {
    let want = |k: &str| only.is_empty() || only.iter().any(|o| o == k);
    let mut p = Page {
        body: String::new(),
        nav: Vec::new(),
        n: 0,
    };
    if want("aging") && !set.runs.is_empty() {
        aging(&mut p, &set.runs);
    }
    if want("git") && !set.git.is_empty() {
        git(&mut p, &set.git);
    }
    if want("frag") && !set.frags.is_empty() {
        frag(&mut p, &set.frags);
    }
    if want("against-fresh") && !set.against.is_empty() {
        against(&mut p, &set.against);
    }
    if want("against-fresh") && !set.verdicts.is_empty() {
        experiment_verdicts(&mut p, &set.verdicts);
    }
    let curves = crate::latency_curves::from_cells(&set.cells);
    for a in &set.analyses {
        let suffix = if set.analyses.len() > 1 {
            format!(" ({})", a.name)
        } else {
            String::new()
        };
        if want("aged-vs-fresh") && !a.item.aged_vs_fresh.is_empty() {
            aged_vs_fresh(&mut p, &a.item, &suffix);
        }
        if want("latency") && !a.item.flowops.is_empty() {
            // The cells' percentiles belong to the analysis computed from them.
            let cv: &[FlowopCurve] = if a.path.as_os_str().is_empty() {
                &curves
            } else {
                &[]
            };
            latency(&mut p, &a.item, &suffix, cv);
        }
        if want("sweep") && !a.item.sweeps.is_empty() {
            sweep(&mut p, &a.item, &suffix);
        }
        if want("inversions") && !a.item.sweeps.is_empty() {
            inversions(&mut p, &a.item, &suffix);
        }
    }
    if want("cells") && !set.cells.is_empty() {
        cells(&mut p, set);
    }
    let mut inputs = Vec::new();
    for r in &set.runs {
        inputs.push(vec![
            r.name.clone(),
            "aging run".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.git {
        inputs.push(vec![
            r.name.clone(),
            "Git-aging series".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.frags {
        inputs.push(vec![
            r.name.clone(),
            "frag report".into(),
            r.path.display().to_string(),
        ]);
    }
    for r in &set.against {
        inputs.push(vec![
            r.name.clone(),
            "against fresh".into(),
            r.path.display().to_string(),
        ]);
    }
    if !set.cells.is_empty() {
        inputs.push(vec![
            format!("{} cells", set.cells.len()),
            "cell results".into(),
            set.cells
                .iter()
                .filter_map(|c| c.path.parent())
                .map(|d| d.display().to_string())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    for a in set
        .analyses
        .iter()
        .filter(|a| !a.path.as_os_str().is_empty())
    {
        inputs.push(vec![
            a.name.clone(),
            "analysis".into(),
            a.path.display().to_string(),
        ]);
    }
    let mut head = String::new();
    let _ = write!(
        head,
        "<h1>fsage report</h1>\n<p class=\"note\">Made by fsage {} from {} input(s). Every plot is \
         inline SVG: this file needs nothing else.</p>\n<nav>",
        env!("CARGO_PKG_VERSION"),
        inputs.len()
    );
    for (id, t) in &p.nav {
        let _ = write!(head, "<a href=\"#{id}\">{}</a>", esc(t));
    }
    head.push_str("</nav>\n<details><summary>Inputs</summary>");
    head.push_str(&table(&["name", "kind", "path"], &inputs));
    if !set.skipped.is_empty() {
        let rows: Vec<Vec<String>> = set
            .skipped
            .iter()
            .map(|(p, why)| vec![p.display().to_string(), why.clone()])
            .collect();
        head.push_str("<p>Skipped:</p>");
        head.push_str(&table(&["file", "why"], &rows));
    }
    head.push_str("</details>\n");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>fsage \
         report</title>\n<style>{CSS}</style>\n</head>\n<body>\n{head}{}<script>{CHECK_SCRIPT}</script>\n</body>\n</html>\n",
        p.body
    )
}

// ---------------------------------------------------------------------------------------------
// Aging runs

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
                        })
                    })
                    .collect(),
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
                        })
                    })
                    .collect(),
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

fn aging(p: &mut Page, runs: &[Named<RunReport>]) {
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
        "aging",
        "Aging runs: target against actual",
        "From the JSON reports of <code>fsage age --json</code>. <i>Target</i> is the profile's \
         share of files in each bin, <i>actual</i> the share of live files at the end of the run \
         (age: each file's age relative to the run's length). RMSE is over the bins, in percent \
         points of the share of files. Fullness and RMSE over ticks are not recorded in the \
         report, so they are not drawn.",
        &c,
    );
}

// ---------------------------------------------------------------------------------------------
// Fragmentation

fn frag_figures_rows(frags: &[(&str, &FragReport)]) -> Vec<Vec<String>> {
    frags
        .iter()
        .map(|(name, r)| {
            let f = AgingFigures::of(r);
            let fs = r.free_space.as_ref();
            let files = r.files.as_ref();
            vec![
                name.to_string(),
                r.fs_type.clone(),
                fs.map_or("–".into(), |f| human_bytes(f.fs_blocks * f.block_size)),
                fs.map_or("–".into(), |f| match f.unallocated_blocks {
                    Some(u) => format!(
                        "{} ({} unallocated)",
                        human_bytes(f.free_blocks * f.block_size),
                        human_bytes(u * f.block_size)
                    ),
                    None => human_bytes(f.free_blocks * f.block_size),
                }),
                fs.map_or("–".into(), |f| f.free_extents.to_string()),
                opt(f.free_extents_per_gib, |v| format!("{v:.1}")),
                opt(f.free_under_1mib_percent, |v| format!("{v:.1}")),
                fs.map_or("–".into(), |f| {
                    human_bytes((f.avg_blocks * f.block_size as f64) as u64)
                }),
                files.map_or("–".into(), |f| f.files.to_string()),
                files.map_or("–".into(), |f| format!("{:.2}", f.fragments_per_file)),
                opt(files.and_then(|f| f.layout_score), |v| {
                    format!("{:.2}%", 100.0 * v)
                }),
                opt(f.dynamic_layout_score, |v| format!("{:.2}%", 100.0 * v)),
                r.probe.as_ref().map_or("–".into(), |p| {
                    format!("{} in {}", p.fragments, human_bytes(p.bytes))
                }),
                opt(f.probe_fragments_per_100mib, |v| format!("{v:.1}")),
            ]
        })
        .collect()
}

const FIG_HEAD: [&str; 14] = [
    "image",
    "fs",
    "size",
    "free",
    "free extents",
    "free extents / GiB free",
    "% free in extents < 1 MiB",
    "mean free extent",
    "files",
    "fragments / file",
    "layout score",
    "dynamic layout score",
    "probe fragments",
    "probe fragments / 100 MiB",
];

/// Free-space and file-fragment histograms of several reports side by side.
fn frag_plots(frags: &[(&str, &FragReport)]) -> Vec<String> {
    let mut out = Vec::new();
    // Free extents binned by size in bytes (blocks x block size), share of free space.
    let mut bins: BTreeSet<u64> = BTreeSet::new();
    for (_, r) in frags {
        if let Some(f) = &r.free_space {
            for b in &f.bins {
                bins.insert(b.min_blocks * f.block_size);
            }
        }
    }
    let bins: Vec<u64> = bins.into_iter().collect();
    if !bins.is_empty() {
        let series = frags
            .iter()
            .map(|(name, r)| BarSeries {
                name: name.to_string(),
                bars: bins
                    .iter()
                    .map(|&lo| {
                        let f = r.free_space.as_ref()?;
                        let pct = f
                            .bins
                            .iter()
                            .find(|b| b.min_blocks * f.block_size == lo)
                            .map_or(0.0, |b| b.percent);
                        Some(Bar {
                            value: pct,
                            interval: None,
                            flag: false,
                        })
                    })
                    .collect(),
            })
            .collect();
        let chart = BarChart {
            title: "free space by extent size".into(),
            x_desc: "free extent size (at least)".into(),
            y_desc: "share of free space (%)".into(),
            groups: bins.iter().map(|b| human_bytes(*b)).collect(),
            series,
            log_y: false,
            size: (760, 380),
        };
        out.push(plot_or_note(plots::bars(&chart)));
    }
    let mut fbins: BTreeSet<(u64, u64)> = BTreeSet::new();
    for (_, r) in frags {
        if let Some(f) = &r.files {
            for b in &f.fragments_distribution {
                fbins.insert((b.min, b.max));
            }
        }
    }
    let fbins: Vec<(u64, u64)> = fbins.into_iter().collect();
    if !fbins.is_empty() {
        let series = frags
            .iter()
            .map(|(name, r)| BarSeries {
                name: name.to_string(),
                bars: fbins
                    .iter()
                    .map(|&(lo, hi)| {
                        let f = r.files.as_ref()?;
                        let total: u64 = f.fragments_distribution.iter().map(|b| b.files).sum();
                        let n = f
                            .fragments_distribution
                            .iter()
                            .find(|b| b.min == lo && b.max == hi)
                            .map_or(0, |b| b.files);
                        (total > 0).then(|| Bar {
                            value: 100.0 * n as f64 / total as f64,
                            interval: None,
                            flag: false,
                        })
                    })
                    .collect(),
            })
            .collect();
        let chart = BarChart {
            title: "files by number of fragments".into(),
            x_desc: "fragments per file".into(),
            y_desc: "share of files with blocks (%), log".into(),
            groups: fbins
                .iter()
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}–{b}")
                    }
                })
                .collect(),
            series,
            log_y: true,
            size: (640, 380),
        };
        out.push(plot_or_note(plots::bars(&chart)));
    }
    out
}

fn frag(p: &mut Page, frags: &[Named<FragReport>]) {
    let list: Vec<(&str, &FragReport)> = frags.iter().map(|f| (f.name.as_str(), &f.item)).collect();
    let mut c = fig(&frag_plots(&list));
    c.push_str(&table(&FIG_HEAD, &frag_figures_rows(&list)));
    p.section(
        "frag",
        "Fragmentation, side by side",
        "From <code>fsage frag --json</code> reports. Free space: free extents from GETFSMAP \
         (ext4, xfs) or the btrfs trees (the gaps in data block groups, and each gap of \
         unallocated device space as an extent of its own; the <i>free</i> column says how much \
         is unallocated), binned by size in powers of two; each bar is the \
         share of the free space in extents of that size. Files: FIEMAP of every regular file, \
         binned by fragments (a fragment is a run of physically contiguous extents); the share is \
         of files with blocks, on a log axis. Probe: one new file of the given size written, \
         synced, mapped and deleted. The four figures that separate fresh from aged are free \
         extents per GiB of free space, the share of free space in extents under 1 MiB, probe \
         fragments per 100 MiB, and the dynamic layout score.",
        &c,
    );
}

fn against(p: &mut Page, items: &[Named<AgainstFresh>]) {
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
        "against-fresh",
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
fn experiment_verdicts(p: &mut Page, items: &[crate::verdicts::BaseVerdict]) {
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
                },
                BarSeries {
                    name: "probe fragments per 100 MiB".into(),
                    bars: judged
                        .iter()
                        .map(|(_, a)| ratio(a.probe_fragments_ratio))
                        .collect(),
                },
            ],
            log_y: true,
            size: (760, 360),
        };
        c.push_str(&plot_or_note(plots::bars(&chart)));
    }
    p.section(
        "against-fresh",
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

// ---------------------------------------------------------------------------------------------
// Aged against fresh

fn state_order(states: &BTreeSet<State>) -> Vec<State> {
    let mut v: Vec<State> = states.iter().cloned().collect();
    v.sort_by_key(|s| (!s.is_fresh(), s.label()));
    v
}

fn aged_vs_fresh(p: &mut Page, a: &Analysis, suffix: &str) {
    let mut c = String::new();
    // Per (workload, latency): groups = file systems, series = states.
    let mut keys: Vec<(String, Option<f64>)> = Vec::new();
    for m in &a.means {
        let k = (m.workload.clone(), m.latency_us);
        if !keys
            .iter()
            .any(|x| x.0 == k.0 && x.1.map(|v| v.to_bits()) == k.1.map(|v| v.to_bits()))
        {
            keys.push(k);
        }
    }
    let same = |x: Option<f64>, y: Option<f64>| x.map(|v| v.to_bits()) == y.map(|v| v.to_bits());
    for (wl, l) in keys {
        let means: Vec<_> = a
            .means
            .iter()
            .filter(|m| m.workload == wl && same(m.latency_us, l))
            .collect();
        let states: BTreeSet<State> = means.iter().map(|m| m.state.clone()).collect();
        if !states.iter().any(|s| s.is_fresh()) || states.len() < 2 {
            continue;
        }
        let states = state_order(&states);
        let fss: Vec<String> = means
            .iter()
            .map(|m| m.fs.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let changed: BTreeSet<String> = a
            .ranks
            .iter()
            .filter(|r| r.workload == wl && same(r.latency_us, l) && r.changed)
            .map(|r| r.state.label())
            .collect();
        let series: Vec<BarSeries> = states
            .iter()
            .map(|st| BarSeries {
                name: if changed.contains(&st.label()) {
                    format!("{} ⚑ order changed", st.label())
                } else {
                    st.label()
                },
                bars: fss
                    .iter()
                    .map(|fs| {
                        means
                            .iter()
                            .find(|m| &m.fs == fs && &m.state == st)
                            .map(|m| Bar {
                                value: m.ops_per_s.mean,
                                interval: m
                                    .ops_per_s
                                    .ci95
                                    .map(|_| (m.ops_per_s.low(), m.ops_per_s.high())),
                                flag: changed.contains(&st.label()),
                            })
                    })
                    .collect(),
            })
            .collect();
        let chart = BarChart {
            title: format!("{wl}, {}: mean ops/s with 95% CI", lat(l)),
            x_desc: "file system".into(),
            y_desc: "throughput (ops/s)".into(),
            groups: fss.clone(),
            series,
            log_y: false,
            size: (640, 360),
        };
        let rows: Vec<Vec<String>> = a
            .aged_vs_fresh
            .iter()
            .filter(|r| r.workload == wl && same(r.latency_us, l))
            .map(|r| {
                vec![
                    r.fs.clone(),
                    r.state.label(),
                    mean_ci(&r.fresh),
                    mean_ci(&r.aged),
                    r.aged.n.to_string(),
                    format!("{:+.1}", r.slowdown_percent),
                    if r.significant {
                        "yes".into()
                    } else {
                        "no (CIs overlap)".into()
                    },
                ]
            })
            .collect();
        let ranks: Vec<Vec<String>> = a
            .ranks
            .iter()
            .filter(|r| r.workload == wl && same(r.latency_us, l))
            .map(|r| {
                vec![
                    r.state.label(),
                    r.order.join(" > "),
                    if r.state.is_fresh() {
                        "–".into()
                    } else if r.changed {
                        "<span class=\"flag\">⚑ changed</span>".into()
                    } else if r.within_noise {
                        format!("within noise (fresh: {})", esc(&r.fresh_order.join(" > ")))
                    } else {
                        "same".into()
                    },
                ]
            })
            .collect();
        let _ = write!(c, "<h3>{} — {}</h3>", esc(&wl), esc(&lat(l)));
        c.push_str(&fig(&[
            plot_or_note(plots::bars(&chart)),
            format!(
                "<div>{}<p></p>{}</div>",
                table(
                    &[
                        "fs",
                        "state",
                        "fresh ops/s",
                        "aged ops/s",
                        "n",
                        "slowdown %",
                        "beyond noise"
                    ],
                    &rows
                ),
                table(&["state", "rank order (fastest first)", "vs fresh"], &ranks)
            ),
        ]));
    }
    p.section(
        "aged-vs-fresh",
        &format!("Aged against fresh{suffix}"),
        "Each bar is the mean ops/s over the repetitions of a cell; whiskers are the 95% \
         confidence interval (Student t, n − 1 degrees of freedom; none for one repetition). \
         Slowdown = (fresh − aged) / fresh, positive when aging made the file system slower; \
         <i>beyond noise</i> when the two intervals do not overlap. The rank order sorts the file \
         systems by mean ops/s in each state; ⚑ marks a state whose order changed against the fresh \
         one: a pair of file systems in the other order whose 95% intervals are apart in both \
         states (two or more repetitions each). A swap of means whose intervals overlap in either \
         state, or that rests on one repetition, is shown as <i>within noise</i> and not flagged.",
        &c,
    );
}

/// The percentile panels of one (file system, workload, device latency): from the cells' full
/// workload reports when there are any (p50 to max), else the analysis' p99 and max.
fn latency_panels(
    fs: &str,
    wl: &str,
    l: Option<f64>,
    lk: Option<i64>,
    rows: &[&FlowopCompare],
    flowops: &[String],
    curves: &[FlowopCurve],
) -> plots::PercentilePanels {
    let mine: Vec<&FlowopCurve> = curves
        .iter()
        .filter(|c| {
            c.fs == fs && c.workload == wl && c.latency_us.map(|v| (v * 1000.0) as i64) == lk
        })
        .collect();
    let title = format!(
        "{fs}, {wl}, {}: latency percentiles per flowop (log axis)",
        lat(l)
    );
    let mut fos: Vec<String> = flowops.to_vec();
    let (percentiles, states, panels) = if !mine.is_empty() {
        for c in &mine {
            if !fos.contains(&c.flowop) {
                fos.push(c.flowop.clone());
            }
        }
        let states = state_order(&mine.iter().map(|c| c.state.clone()).collect());
        let pcts: Vec<String> = crate::latency_curves::PERCENTILES
            .iter()
            .map(|(_, p)| p.to_string())
            .filter(|p| mine.iter().any(|c| c.points.iter().any(|(q, _)| q == p)))
            .collect();
        let panels = panels_of(&fos, &states, |fo, st| {
            let c = mine.iter().find(|c| c.flowop == fo && &c.state == st);
            pcts.iter()
                .map(|p| {
                    c.and_then(|c| c.points.iter().find(|(q, _)| q == p))
                        .map(|x| x.1)
                })
                .collect()
        });
        (pcts, states, panels)
    } else {
        let mut states = vec![State::Fresh];
        states.extend(state_order(&rows.iter().map(|r| r.state.clone()).collect()));
        let panels = panels_of(&fos, &states, |fo, st| {
            if st.is_fresh() {
                let r = rows.iter().find(|r| r.flowop == fo);
                vec![
                    r.and_then(|r| r.fresh_p99_us),
                    r.and_then(|r| r.fresh_max_us),
                ]
            } else {
                let r = rows.iter().find(|r| r.flowop == fo && &r.state == st);
                vec![r.map(|r| r.aged_p99_us), r.map(|r| r.aged_max_us)]
            }
        });
        (vec!["p99".to_string(), "max".to_string()], states, panels)
    };
    plots::PercentilePanels {
        title,
        percentiles,
        series: states.iter().map(State::label).collect(),
        panels,
        columns: 4,
        panel_size: (250, 200),
    }
}

/// One panel per flowop, one series per state, the values `of` gives for each pair.
#[allow(clippy::type_complexity)]
fn panels_of(
    flowops: &[String],
    states: &[State],
    of: impl Fn(&str, &State) -> Vec<Option<f64>>,
) -> Vec<(String, Vec<Vec<Option<f64>>>)> {
    flowops
        .iter()
        .map(|fo| (fo.clone(), states.iter().map(|st| of(fo, st)).collect()))
        .collect()
}

fn latency(p: &mut Page, a: &Analysis, suffix: &str, curves: &[FlowopCurve]) {
    let mut c = String::new();
    let mut keys: BTreeMap<(String, String, Option<i64>), Option<f64>> = BTreeMap::new();
    for f in &a.flowops {
        keys.insert(
            (
                f.workload.clone(),
                f.fs.clone(),
                f.latency_us.map(|v| (v * 1000.0) as i64),
            ),
            f.latency_us,
        );
    }
    for ((wl, fs, lk), l) in keys {
        let rows: Vec<_> = a
            .flowops
            .iter()
            .filter(|f| {
                f.workload == wl && f.fs == fs && f.latency_us.map(|v| (v * 1000.0) as i64) == lk
            })
            .collect();
        let flowops: Vec<String> = {
            let mut v: Vec<String> = Vec::new();
            for r in &rows {
                if !v.contains(&r.flowop) {
                    v.push(r.flowop.clone());
                }
            }
            v
        };
        let chart = latency_panels(&fs, &wl, l, lk, &rows, &flowops, curves);
        let trows: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.flowop.clone(),
                    r.state.label(),
                    opt(r.fresh_p99_us, us),
                    us(r.aged_p99_us),
                    opt(r.p99_ratio, |v| format!("{v:.2}×")),
                    opt(r.fresh_max_us, us),
                    us(r.aged_max_us),
                    opt(r.max_ratio, |v| format!("{v:.2}×")),
                ]
            })
            .collect();
        let _ = write!(c, "<h3>{} — {} — {}</h3>", esc(&fs), esc(&wl), esc(&lat(l)));
        c.push_str(&fig(&[plot_or_note(plots::percentile_panels(&chart))]));
        c.push_str(&fig(&[table(
            &[
                "flowop",
                "state",
                "fresh p99",
                "aged p99",
                "p99 aged/fresh",
                "fresh max",
                "aged max",
                "max aged/fresh",
            ],
            &trows,
        )]));
    }
    p.section(
        "latency",
        &format!("Tail latency per flowop{suffix}"),
        "One panel per flowop: its latency percentiles (p50, p90, p99, p99.9 and max, from the \
         workload engine's HDR histograms, as each cell's full workload report keeps them; only \
         p99 and max when the input is an analysis without its cells), one line per state, \
         fresh and aged in the same colours in every panel. Each percentile is the mean over \
         repetitions of each repetition's percentile; max is the largest latency seen in any \
         repetition. The latency axis is logarithmic (flowops differ by orders of magnitude) \
         and each panel has its own range. The table gives p99 and max aged against fresh.",
        &c,
    );
}

fn sweep(p: &mut Page, a: &Analysis, suffix: &str) {
    let mut c = String::new();
    let mut keys: Vec<(String, State)> = Vec::new();
    for s in &a.sweeps {
        if !keys.iter().any(|k| k.0 == s.workload && k.1 == s.state) {
            keys.push((s.workload.clone(), s.state.clone()));
        }
    }
    let (c1, c2) = a.options.calibration_us;
    for (wl, st) in keys {
        let sweeps: Vec<_> = a
            .sweeps
            .iter()
            .filter(|s| s.workload == wl && s.state == st)
            .collect();
        let xmax = sweeps
            .iter()
            .flat_map(|s| s.points.iter().map(|q| q.latency_us))
            .fold(0.0, f64::max);
        // x in ms for the full range, in µs for the 0-1 ms panel.
        let mk = |x_hi: f64, div: f64| {
            let mut lines = Vec::new();
            for (i, s) in sweeps.iter().enumerate() {
                lines.push(Line {
                    name: s.fs.clone(),
                    color: i,
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
                    dashed: false,
                    dots: true,
                    rings: s
                        .points
                        .iter()
                        .filter(|q| q.calibration)
                        .map(|q| (q.latency_us / div, q.measured.mean))
                        .collect(),
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
                        name,
                        color: i,
                        points: (0..=n)
                            .map(|k| {
                                let l = x_hi * k as f64 / n as f64;
                                (l / div, m.predict(l))
                            })
                            .collect(),
                        intervals: vec![],
                        dashed: true,
                        dots: false,
                        rings: vec![],
                    });
                }
            }
            lines
        };
        let full = LineChart {
            title: format!("{wl}, {}: throughput against device latency", st.label()),
            x_desc: "device latency (ms)".into(),
            y_desc: "throughput (ops/s)".into(),
            x_range: (0.0, (xmax / 1000.0).max(0.001)),
            lines: mk(xmax, 1000.0),
            size: (700, 420),
        };
        let sub_hi = xmax.min(1000.0);
        let zoom = LineChart {
            title: format!("0 to {}", format_latency_us(sub_hi)),
            x_desc: "device latency (µs)".into(),
            y_desc: "throughput (ops/s)".into(),
            x_range: (0.0, sub_hi.max(1.0)),
            lines: mk(sub_hi, 1.0),
            size: (520, 420),
        };
        let class_rows: Vec<Vec<String>> = sweeps
            .iter()
            .map(|s| {
                let f = |m: Option<&fsage_experiment::analysis::ModelFit>| {
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
        let _ = write!(c, "<h3>{} — {}</h3>", esc(&wl), esc(&st.label()));
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
        "sweep",
        &format!("Latency sweeps and the model{suffix}"),
        &how,
        &c,
    );
}

fn inversions(p: &mut Page, a: &Analysis, suffix: &str) {
    let rows: Vec<Vec<String>> = a
        .inversions
        .iter()
        .map(|i| {
            vec![
                i.workload.clone(),
                i.state.label(),
                i.faster_slow_device.clone(),
                i.faster_fast_device.clone(),
                format!(
                    "between {} and {}",
                    format_latency_us(i.from_us),
                    format_latency_us(i.to_us)
                ),
                if i.confirmed {
                    "yes".into()
                } else {
                    "unconfirmed (one repetition)".into()
                },
            ]
        })
        .collect();
    let mut c = if rows.is_empty() {
        "<p class=\"verdict\">No inversion: wherever two file systems' order is clear, it is the \
         same at every latency.</p>"
            .to_string()
    } else {
        String::new()
    };
    c.push_str(&table(
        &[
            "workload",
            "state",
            "faster on the slower device",
            "faster on the faster device",
            "order changes",
            "confirmed",
        ],
        &rows,
    ));
    // The paper's Table 1 form: per fs and workload, which file systems it inverts with.
    let mut t1: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for i in &a.inversions {
        let mark = if i.confirmed { "" } else { " (unconfirmed)" };
        t1.entry((i.faster_slow_device.clone(), i.workload.clone()))
            .or_default()
            .insert(format!("{}{mark}", i.faster_fast_device));
        t1.entry((i.faster_fast_device.clone(), i.workload.clone()))
            .or_default()
            .insert(format!("{}{mark}", i.faster_slow_device));
    }
    if !t1.is_empty() {
        let rows: Vec<Vec<String>> = t1
            .into_iter()
            .map(|((fs, wl), with)| vec![fs, wl, with.into_iter().collect::<Vec<_>>().join(", ")])
            .collect();
        c.push_str("<p></p>");
        c.push_str(&table(&["fs", "workload", "inverts with"], &rows));
    }
    p.section(
        "inversions",
        &format!("Performance inversions{suffix}"),
        &format!(
            "Walking from the slowest device to the fastest, a pair of file systems is inverted \
             where the faster one at one latency is the slower one at the next latency at which \
             their order is clear. An order is clear when the means differ by more than {:.0}% \
             and their 95% intervals do not overlap; tied latencies are skipped. Where one of the \
             two has a single repetition there is no interval: the order of the means is taken, \
             and an inversion that rests on it is marked <i>unconfirmed</i> (it may be noise; \
             run more repetitions).",
            100.0 * a.options.inversion_margin
        ),
        &c,
    );
}

fn cells(p: &mut Page, set: &ReportSet) {
    let done = set.cells.iter().filter(|c| c.item.is_done()).count();
    let failed: Vec<Vec<String>> = set
        .cells
        .iter()
        .filter_map(|c| match &c.item.status {
            fsage_experiment::CellStatus::Failed { error } => {
                Some(vec![c.item.cell.id.clone(), error.clone()])
            }
            _ => None,
        })
        .collect();
    let mut c = format!(
        "<p class=\"verdict\">{} cells: {done} done, {} failed.</p>",
        set.cells.len(),
        failed.len()
    );
    if !failed.is_empty() {
        c.push_str(&table(&["cell", "error"], &failed));
    }
    let env: BTreeSet<String> = set
        .cells
        .iter()
        .filter_map(|c| c.item.environment.as_ref())
        .map(|e| {
            format!(
                "fsage {}, kernel {}, {} CPUs, {}",
                e.fsage_version,
                e.kernel,
                e.cpus,
                human_bytes(e.memory_bytes)
            )
        })
        .collect();
    if !env.is_empty() {
        let rows: Vec<Vec<String>> = env.into_iter().map(|e| vec![e]).collect();
        c.push_str("<p></p>");
        c.push_str(&table(&["environment"], &rows));
    }
    p.section(
        "cells",
        "Cells",
        "Cell results as written by the experiment runner, one JSON file per cell. Failed cells \
         are left out of every analysis above.",
        &c,
    );
}

/// Git-history aging (Conway et al.): grep seconds per GiB of the aged and the clean instance
/// against pulls, their ratio, and the layout scores of the greps' reads.
fn git(p: &mut Page, series: &[Named<fsage_git::GitSeries>]) {
    let mut c = String::new();
    let xmax = series
        .iter()
        .flat_map(|s| s.item.rows.iter().map(|r| r.pulls as f64))
        .fold(1.0, f64::max);
    let mut per_gib = Vec::new();
    let mut ratio = Vec::new();
    let mut layout = Vec::new();
    let mut model_ratio = Vec::new();
    let mut model_per_gib = Vec::new();
    let mut model_color = 0;
    for (i, s) in series.iter().enumerate() {
        let g = &s.item;
        let name = format!("{} {}", s.name, g.fs);
        let pts = |f: &dyn Fn(&fsage_git::GitRow) -> Option<f64>| -> Vec<(f64, f64)> {
            g.rows
                .iter()
                .filter_map(|r| f(r).map(|y| (r.pulls as f64, y)))
                .collect()
        };
        let line = |name: String, points: Vec<(f64, f64)>, dashed: bool| Line {
            name,
            color: i,
            points,
            intervals: vec![],
            dashed,
            dots: true,
            rings: vec![],
        };
        // The spread of the timed greps, per GiB, as whiskers (none for one sample).
        let spread = |f: &dyn Fn(&fsage_git::GitRow) -> &fsage_git::InstanceFigures| {
            g.rows
                .iter()
                .filter(|r| f(r).grep_samples.len() > 1 && r.du_bytes > 0)
                .map(|r| {
                    let (lo, hi) = f(r).grep_spread();
                    let gib = r.du_bytes as f64 / (1u64 << 30) as f64;
                    (r.pulls as f64, lo / gib, hi / gib)
                })
                .collect::<Vec<_>>()
        };
        let mut aged = line(
            format!("{name} aged"),
            pts(&|r| Some(r.aged.grep_seconds_per_gib)),
            false,
        );
        aged.intervals = spread(&|r| &r.aged);
        per_gib.push(aged);
        let mut clean = line(
            format!("{name} clean"),
            pts(&|r| Some(r.clean.grep_seconds_per_gib)),
            true,
        );
        clean.intervals = spread(&|r| &r.clean);
        per_gib.push(clean);
        for m in g.model_names() {
            let ml = |name: String, points: Vec<(f64, f64)>, dashed: bool| Line {
                name,
                color: model_color,
                points,
                intervals: vec![],
                dashed,
                dots: true,
                rings: vec![],
            };
            model_ratio.push(ml(
                format!("{name} on {m}"),
                pts(&|r| r.modeled_ratio_on(m)),
                false,
            ));
            model_per_gib.push(ml(
                format!("{name} aged on {m}"),
                pts(&|r| r.aged.modeled_on(m).map(|x| x.seconds_per_gib)),
                false,
            ));
            model_per_gib.push(ml(
                format!("{name} clean on {m}"),
                pts(&|r| r.clean.modeled_on(m).map(|x| x.seconds_per_gib)),
                true,
            ));
            model_color += 1;
        }
        ratio.push(line(name.clone(), pts(&|r| r.ratio), false));
        let la = pts(&|r| r.aged.layout_score);
        if !la.is_empty() {
            layout.push(line(format!("{name} aged"), la, false));
            layout.push(line(
                format!("{name} clean"),
                pts(&|r| r.clean.layout_score),
                true,
            ));
        }
    }
    let chart = |title: &str, y: &str, lines: Vec<Line>| {
        plot_or_note(plots::lines(&LineChart {
            title: title.into(),
            x_desc: "pulls (commits replayed)".into(),
            y_desc: y.into(),
            x_range: (0.0, xmax),
            lines,
            size: (620, 380),
        }))
    };
    let mut parts = vec![
        chart(
            "Cold-cache grep, seconds per GiB (aged solid, clean dashed)",
            "grep time (s/GiB)",
            per_gib,
        ),
        chart("Aged over clean grep time", "aged / clean", ratio),
    ];
    if !model_ratio.is_empty() {
        parts.push(chart(
            "Aged over clean on device models (the first grep's trace, costed)",
            "modeled aged / clean",
            model_ratio,
        ));
        parts.push(chart(
            "Modeled grep, seconds per GiB (aged solid, clean dashed)",
            "modeled grep time (s/GiB)",
            model_per_gib,
        ));
    }
    if !layout.is_empty() {
        parts.push(chart(
            "Layout score of the grep's reads (aged solid, clean dashed)",
            "1 - discontiguities / blocks",
            layout,
        ));
    }
    c.push_str(&fig(&parts));
    for s in series {
        let g = &s.item;
        let _ = writeln!(
            c,
            "<h3>{} ({}, {}, {} mode)</h3><p class=\"note\">{} of {} commits replayed{}, \
             measured every {}; replay {:.0} s{}, measurements {:.0} s; git {}, {}.</p>",
            esc(&s.name),
            esc(&g.fs),
            human_bytes(g.size_bytes),
            esc(&g.mode),
            g.pulls_done,
            g.commits_total,
            if g.finished { "" } else { " (not finished)" },
            g.every,
            g.replay_seconds,
            g.commits_per_second
                .map_or(String::new(), |r| format!(" ({r:.2} commits/s)")),
            g.measure_seconds,
            esc(&g.git_version),
            esc(&g.grep_version)
        );
        let rows: Vec<Vec<String>> = g
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.pulls.to_string(),
                    r.commit.chars().take(10).collect(),
                    r.commit_date.chars().take(10).collect(),
                    human_bytes(r.du_bytes),
                    format!("{:.3}", r.aged.grep_seconds),
                    format!("{:.3}", r.aged.grep_seconds_per_gib),
                    format!("{:.3}", r.clean.grep_seconds),
                    format!("{:.3}", r.clean.grep_seconds_per_gib),
                    opt(r.ratio, |x| format!("{x:.2}")),
                    opt(r.aged.layout_score, |x| format!("{x:.3}")),
                    opt(r.clean.layout_score, |x| format!("{x:.3}")),
                    opt(r.aged.frag.fragments_per_file, |x| format!("{x:.3}")),
                    opt(r.clean.frag.fragments_per_file, |x| format!("{x:.3}")),
                ]
            })
            .collect();
        c.push_str(&table(
            &[
                "pulls",
                "commit",
                "date",
                "du -s",
                "aged grep s",
                "aged s/GiB",
                "clean grep s",
                "clean s/GiB",
                "aged/clean",
                "aged layout",
                "clean layout",
                "aged frags/file",
                "clean frags/file",
            ],
            &rows,
        ));
    }
    p.section(
        "git",
        "Git-history aging",
        "<code>fsage git-age</code> replays a repository's first-parent history one <code>git \
         pull</code> per commit (Conway et al., FAST '17). Every N pulls the aged file system is \
         unmounted, mounted again and its caches dropped, then <code>grep -r</code> reads the \
         whole tree (.git included) for a string that is not there; the same tree copied with \
         <code>cp -a</code> onto a freshly made file system of the same kind and size (the clean \
         instance) is read the same way. Time is divided by the <code>du -s</code> size. The \
         layout score is 1 − discontiguities ÷ blocks over the grep's block reads in issue \
         order (tracefs <code>block:block_rq_issue</code>). With several timed greps the line is \
         their median and the whiskers span the fastest to the slowest. With cost models, the \
         first grep's block reads (issue and completion times, \
         <code>block:block_rq_complete</code>) are replayed on each model in simulated time \
         (<code>fsage dev cost</code>'s rule): one line per model.",
        &c,
    );
}

#[cfg(test)]
mod sweep_tests {
    use super::*;
    use fsage_experiment::analysis::{analyze, AnalysisOptions, Sample};

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
                    rep,
                    ops_per_s: t * (1.0 + 0.001 * rep as f64),
                    flowops: vec![],
                });
            }
        }
        let a = analyze(&samples, &AnalysisOptions::default());
        let s = &a.sweeps[0];
        assert!(matches!(s.class, SweepClass::NoFit { .. }), "{:?}", s.class);
        assert!(s.calibration.is_none() && s.least_squares.is_some());
        let mut p = Page {
            body: String::new(),
            nav: vec![],
            n: 0,
        };
        sweep(&mut p, &a, "");
        assert!(p.body.contains("ext4 least-squares model"), "{}", p.body);
    }
}
