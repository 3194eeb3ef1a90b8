//! The papers' published numbers beside fsage's, one part per reproduction: the paper's bars in
//! grey beside fsage's in its file system's colour (losses), or the paper's points as grey
//! markers on fsage's lines (ratios against pulls); then every point with its source, the
//! difference and whether it is within the aim.

use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries, Dash, Line, LineChart};
use crate::html::Section;
use crate::inputs::ReportSet;
use fsage_results::repro::compare::{Comparison, PointComparison};
use std::fmt::Write as _;

pub(in crate::html) fn render(p: &mut Page, set: &ReportSet) {
    let mut c = String::new();
    for (r, cmp) in set.reproductions.iter().zip(set.comparisons()) {
        let git: Vec<(&str, &fsage_results::git::GitSeries)> = set
            .reproduction_series(r)
            .into_iter()
            .map(|g| (g.name.as_str(), &g.item))
            .collect();
        part(&mut c, &cmp, &git);
    }
    p.section(
        Section::Published,
        "Published numbers beside fsage's",
        &format!(
            "Each reproduction (<code>fsage reproduce NAME --out DIR</code>) runs a paper's \
             procedure scaled down; its published numbers come from <code>{}</code> in fsage's \
             repository, one row per point with its paper, figure and source (the paper's text \
             by seed file and line, or the authors' data files). The paper's numbers are grey \
             (a range as a whisker over its middle), fsage's in the colour of their file system. \
             The difference is fsage's number minus the nearest end of the published range. \
             The aims: a Geriatrix loss within 10 percentage points; a Conway aged/clean ratio \
             within 25% of the published one (the ;login: text and the authors' own data \
             differ by up to 15% at one point); grep times in s/GiB and lock waits have no \
             numeric aim (compared by shape). fsage's Conway ratios are the modeled ones: each \
             grep's block trace costed on the model of the paper's drive.",
            fsage_results::repro::published::PUBLISHED_PATH
        ),
        &c,
    );
}

/// One reproduction: a heading with its scale, a plot, the table.
fn part(c: &mut String, cmp: &Comparison, git: &[(&str, &fsage_results::git::GitSeries)]) {
    let rec = &cmp.record;
    let (n, with, within) = cmp.counts();
    let _ = writeln!(
        c,
        "<h3>{}: {}, {}</h3><p class=\"note\">{}; drives: {}. {} published points, {} with an \
         fsage number, {} of them within the aim.</p>",
        esc(&rec.name),
        esc(&rec.paper),
        esc(&rec.figure),
        esc(&rec.scale_text()),
        esc(&if rec.models.is_empty() {
            "-".to_string()
        } else {
            rec.models.join(", ")
        }),
        n,
        with,
        within
    );
    let on_pulls = cmp.points.iter().all(|p| {
        p.published.x_number().is_some() && matches!(p.published.unit.as_str(), "x" | "s/GiB")
    });
    let plot = if on_pulls && !cmp.points.is_empty() {
        lines(cmp, git)
    } else {
        bars(cmp)
    };
    c.push_str(&fig(&[plot]));
    c.push_str(&points_table(&cmp.points));
}

/// The paper's bar (grey, its range as a whisker) beside fsage's, per point.
fn bars(cmp: &Comparison) -> String {
    let groups: Vec<String> = cmp
        .points
        .iter()
        .map(|p| {
            let q = &p.published;
            if q.unit == "% loss" {
                format!("{} on {}", q.fs, q.device)
            } else {
                format!("{} {} at {}", q.fs, q.series, q.x)
            }
        })
        .collect();
    let paper = BarSeries {
        name: "paper".into(),
        bars: cmp
            .points
            .iter()
            .map(|p| {
                let q = &p.published;
                Some(Bar {
                    value: q.mid(),
                    interval: q.high.filter(|h| *h != q.low).map(|h| (q.low, h)),
                    flag: false,
                    color: None,
                })
            })
            .collect(),
        color: Some(plots::PUBLISHED),
    };
    let fsage = BarSeries {
        name: "fsage (its file system's colour)".into(),
        bars: cmp
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| {
                p.fsage.map(|v| Bar {
                    value: v,
                    interval: None,
                    flag: false,
                    color: Some(plots::series_color(&p.published.fs, i)),
                })
            })
            .collect(),
        color: None,
    };
    let unit = cmp
        .points
        .first()
        .map_or(String::new(), |p| p.published.unit.clone());
    plot_or_note(plots::bars(&BarChart {
        title: format!(
            "{} {}: the paper (grey) beside fsage",
            cmp.record.name, cmp.record.figure
        ),
        x_desc: String::new(),
        y_desc: unit,
        groups,
        series: vec![paper, fsage],
        log_y: false,
        size: plots::WIDE,
    }))
}

/// fsage's series against pulls (a file system's colour, a dash per run) with the paper's
/// points as grey markers on the same axes.
fn lines(cmp: &Comparison, git: &[(&str, &fsage_results::git::GitSeries)]) -> String {
    let rec = &cmp.record;
    let unit = cmp.points[0].published.unit.clone();
    let ratio = unit == "x";
    let mut out = Vec::new();
    let mut xmax = cmp
        .points
        .iter()
        .filter_map(|p| p.published.x_number())
        .fold(1.0, f64::max);
    for (i, run) in rec.git_runs.iter().enumerate() {
        let Some((_, s)) = git.iter().find(|(n, _)| *n == run.name) else {
            continue;
        };
        let col = plots::series_color(&run.fs, i);
        let same_fs = rec.git_runs[..i].iter().filter(|o| o.fs == run.fs).count();
        // The model of the drive the paper's points were measured on (a series costed on
        // others too draws those only when it has none of it: Conway's runs are costed on
        // both of the paper's drives and the generic models, and each figure is one drive's),
        // a dash per run of the same file system and per model.
        let all = s.model_names();
        let papers: Vec<&str> = all
            .iter()
            .copied()
            .filter(|m| {
                cmp.points
                    .iter()
                    .any(|p| fsage_results::repro::compare::same_device(m, &p.published.device))
            })
            .collect();
        let models = if papers.is_empty() { all } else { papers };
        let per_run = models.len();
        for (mi, m) in models.into_iter().enumerate() {
            let pts: Vec<(f64, f64)> = s
                .rows
                .iter()
                .filter_map(|r| {
                    let v = if ratio {
                        r.modeled_ratio_on(m)
                    } else {
                        r.aged.modeled_on(m).map(|x| x.seconds_per_gib)
                    };
                    v.map(|v| (r.pulls as f64, v))
                })
                .collect();
            xmax = pts.iter().map(|p| p.0).fold(xmax, f64::max);
            out.push(Line {
                name: format!("fsage {} on {m}", run.name),
                color: col,
                points: pts,
                intervals: vec![],
                dash: Dash::nth(same_fs * per_run + mi),
                dots: true,
                rings: vec![],
                marker: None,
                end_label: None,
            });
        }
    }
    // The paper's points, one marker set per published series and kind.
    let mut keys: Vec<(String, String)> = Vec::new();
    for p in &cmp.points {
        let k = (p.published.series.clone(), p.published.kind.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (series, kind) in keys {
        let pts: Vec<(f64, f64)> = cmp
            .points
            .iter()
            .filter(|p| p.published.series == series && p.published.kind == kind)
            .filter_map(|p| p.published.x_number().map(|x| (x, p.published.mid())))
            .collect();
        out.push(Line {
            name: format!("paper: {series} ({kind})"),
            color: plots::PUBLISHED,
            points: pts,
            intervals: vec![],
            dash: Dash::Markers,
            dots: false,
            rings: vec![],
            marker: None,
            end_label: None,
        });
    }
    plot_or_note(plots::lines(&LineChart {
        title: format!(
            "{} {}: fsage's lines, the paper's points in grey",
            rec.name, rec.figure
        ),
        x_desc: "pulls (commits replayed)".into(),
        y_desc: if ratio {
            "aged / clean".into()
        } else {
            unit.clone()
        },
        x_range: (0.0, xmax),
        lines: out,
        size: plots::WIDE,
        reference_y: ratio.then_some(1.0),
        clip_outliers: false,
    }))
}

fn points_table(points: &[PointComparison]) -> String {
    let num = |v: f64| {
        let s = format!("{v:.2}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    let rows: Vec<Vec<String>> = points
        .iter()
        .map(|p| {
            let q = &p.published;
            vec![
                q.figure.clone(),
                q.fs.clone(),
                q.device.clone(),
                q.series.clone(),
                q.x.clone(),
                format!("{} {}", q.value_text(), q.unit),
                match (p.fsage, &p.fsage_at) {
                    (Some(v), Some(at)) => format!("{} (at {at})", num(v)),
                    (Some(v), None) => num(v),
                    (None, _) => "–".into(),
                },
                p.difference.map_or("–".into(), |d| {
                    format!(
                        "{}{} {}",
                        if d > 0.0 { "+" } else { "" },
                        num(d),
                        p.difference_unit
                    )
                }),
                p.aim.text(),
                match p.within_aim {
                    Some(true) => "yes".into(),
                    Some(false) => "<span class=\"flag\">no</span>".into(),
                    None => "–".into(),
                },
                format!("{} ({})", q.source, q.kind),
                [p.missing.clone().unwrap_or_default(), q.note.clone()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
            ]
        })
        .collect();
    table(
        &[
            "figure",
            "file system",
            "device",
            "series",
            "x",
            "paper",
            "fsage",
            "difference",
            "aim",
            "within the aim",
            "source",
            "note",
        ],
        &rows,
    )
}
