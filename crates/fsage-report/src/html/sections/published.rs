//! The papers' published numbers beside fsage's, one part per reproduction: the paper's bars in
//! grey beside fsage's in its file system's colour (losses), or the paper's points as grey
//! markers on fsage's lines (ratios against pulls); then every point with its source, the
//! difference and whether it is within the aim.

use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries, Dash, Line, LineChart, Marker};
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
/// points as grey markers on the same axes: a marker shape per published series, joined by a
/// thin dotted line, and the same shape on the points of the run that answers it (which is
/// labelled with the series at its right end), so that the eye pairs them.
fn lines(cmp: &Comparison, git: &[(&str, &fsage_results::git::GitSeries)]) -> String {
    plot_or_note(plots::lines(&line_chart(cmp, git)))
}

/// The chart [`lines`] draws.
fn line_chart(cmp: &Comparison, git: &[(&str, &fsage_results::git::GitSeries)]) -> LineChart {
    let rec = &cmp.record;
    let unit = cmp.points[0].published.unit.clone();
    let ratio = unit == "x";
    let mut out = Vec::new();
    let paper_model = |m: &str| {
        cmp.points
            .iter()
            .any(|p| fsage_results::repro::compare::same_device(m, &p.published.device))
    };
    let mut xmax = cmp
        .points
        .iter()
        .filter_map(|p| p.published.x_number())
        .fold(1.0, f64::max);
    // The published series, one per series and kind, each with the run that answers it (as
    // the comparison pairs them): that run's line takes the series' marker shape.
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut answered_by: Vec<Option<&str>> = Vec::new();
    for p in &cmp.points {
        let k = (p.published.series.clone(), p.published.kind.clone());
        if !keys.contains(&k) {
            keys.push(k);
            answered_by.push(
                fsage_results::repro::compare::answering_run(rec, &p.published)
                    .map(|r| r.name.as_str()),
            );
        }
    }
    // A run's series: the first it answers whose numbers its line shows (the line is the aged
    // instance's: a `clean` series is its clean instance's, not drawn).
    let shows = |series: &str| ratio || !series.split_whitespace().any(|w| w == "clean");
    let paired = |run: &str| {
        keys.iter()
            .zip(&answered_by)
            .enumerate()
            .find(|(_, ((series, _), by))| **by == Some(run) && shows(series))
            .map(|(k, ((series, _), _))| (Marker::nth(k), series.clone()))
    };
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
        let papers: Vec<&str> = all.iter().copied().filter(|m| paper_model(m)).collect();
        let models = if papers.is_empty() { all } else { papers };
        let per_run = models.len();
        let pair = paired(&run.name);
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
                // The pair on the paper's drive only (a run's other models answer nothing).
                marker: pair.as_ref().filter(|_| paper_model(m)).map(|(mk, _)| *mk),
                // The series it answers, or what it answers when no published series is it
                // (`warm 2048 MB`).
                end_label: match &pair {
                    Some((_, s)) if paper_model(m) => Some(s.clone()),
                    Some(_) => None,
                    None => run.answers.clone(),
                },
            });
        }
    }
    // The paper's points: a grey marker shape per published series and kind.
    for (k, (series, kind)) in keys.iter().enumerate() {
        let pts: Vec<(f64, f64)> = cmp
            .points
            .iter()
            .filter(|p| &p.published.series == series && &p.published.kind == kind)
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
            marker: Some(Marker::nth(k)),
            end_label: None,
        });
    }
    LineChart {
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
        // Taller with many lines, so that the legend (a row each, above the data) leaves the
        // data the height it has with a few.
        size: (
            plots::WIDE.0,
            plots::WIDE.1.max(400 + 15 * out.len() as u32),
        ),
        lines: out,
        reference_y: ratio.then_some(1.0),
        clip_outliers: false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use fsage_results::git::GitSeries;
    use fsage_results::repro::record::Record;

    /// A Git series costed on Conway's disk, `per_gib` s/GiB (aged) at every pull.
    fn series(per_gib: f64) -> GitSeries {
        let mut s: GitSeries =
            serde_json::from_str(include_str!("../../../tests/fixtures/git/zlib-ext4.json"))
                .unwrap();
        s.cost_models = fsage_device::models::builtins()
            .into_iter()
            .filter(|m| m.name == "st500dm002")
            .collect();
        for r in &mut s.rows {
            r.aged.modeled = vec![serde_json::from_value(serde_json::json!({
                "model": "st500dm002", "seconds": 1.0, "seconds_per_gib": per_gib, "requests": 1
            }))
            .unwrap()];
        }
        s
    }

    /// Conway's Figure 5 with the cold run and `warm` warm runs (of 768, 1024, ... MB).
    fn fig5(warm: &[u32]) -> (Comparison, Vec<(String, GitSeries)>) {
        let mut runs = vec![("ext4-cold".to_string(), "cold".to_string())];
        runs.extend(
            warm.iter()
                .map(|mb| (format!("ext4-warm-{mb}"), format!("warm {mb} MB"))),
        );
        let rec: Record = serde_json::from_value(serde_json::json!({
            "format": "fsage-reproduction/1", "name": "conway-fig5", "paper": "Conway",
            "figure": "Figure 5", "scale_bytes": 1u64 << 32, "scale_of": "the partition",
            "paper_scale": "20 GiB", "models": ["st500dm002"], "made_by": "test",
            "git_runs": runs.iter().map(|(name, answers)| serde_json::json!({
                "name": name, "fs": "ext4", "size": 1u64 << 32, "every": 500,
                "cost_models": ["st500dm002"], "answers": answers
            })).collect::<Vec<_>>()
        }))
        .unwrap();
        let git: Vec<(String, GitSeries)> = runs
            .iter()
            .enumerate()
            .map(|(i, (name, _))| (name.clone(), series(100.0 * (i + 1) as f64)))
            .collect();
        let refs: Vec<(&str, &GitSeries)> = git.iter().map(|(n, s)| (n.as_str(), s)).collect();
        let points = fsage_results::repro::published::published_for("conway-fig5");
        let cmp = fsage_results::repro::compare::compare(&rec, &points, &[], &refs, &[]);
        (cmp, git)
    }

    /// Six published series are six grey shapes, each run of the one file system has its own
    /// dash, and a run's points take the shape of the series it answers (issue: six identical
    /// grey squares in the legend, five identical dashed blue lines).
    #[test]
    fn each_published_series_has_a_shape_and_its_run_shares_it() {
        let (cmp, git) = fig5(&[768, 1024, 1280, 1536, 2048]);
        let refs: Vec<(&str, &GitSeries)> = git.iter().map(|(n, s)| (n.as_str(), s)).collect();
        let c = line_chart(&cmp, &refs);
        let paper: Vec<&Line> = c.lines.iter().filter(|l| l.dash == Dash::Markers).collect();
        let fsage: Vec<&Line> = c.lines.iter().filter(|l| l.dash != Dash::Markers).collect();
        assert_eq!((paper.len(), fsage.len()), (6, 6));
        let shape = |name: &str| {
            paper
                .iter()
                .find(|l| l.name == format!("paper: {name} (data)"))
                .unwrap_or_else(|| panic!("no {name}"))
                .marker
        };
        let shapes: Vec<_> = paper.iter().map(|l| l.marker).collect();
        for (i, s) in shapes.iter().enumerate() {
            assert!(s.is_some() && !shapes[..i].contains(s), "{shapes:?}");
        }
        let mut dashes: Vec<Dash> = fsage.iter().map(|l| l.dash).collect();
        assert_eq!(dashes[0], Dash::Solid, "the cold run is solid");
        dashes.sort_by_key(|d| *d as u8);
        dashes.dedup();
        assert_eq!(dashes.len(), 6, "a dash per run: {dashes:?}");
        let run = |name: &str| fsage.iter().find(|l| l.name.contains(name)).unwrap();
        assert_eq!(run("ext4-warm-768 ").marker, shape("warm 768 MB"));
        assert_eq!(run("ext4-warm-1536 ").marker, shape("warm 1536 MB"));
        assert_eq!(
            run("ext4-warm-768 ").end_label.as_deref(),
            Some("warm 768 MB")
        );
        // The cold run's line is its aged instance: it pairs with the aged series.
        assert_eq!(run("ext4-cold ").marker, shape("cold aged"));
        // No published series for 2048 MB: no shape; the label says what it answers.
        assert_eq!(run("ext4-warm-2048 ").marker, None);
        assert_eq!(
            run("ext4-warm-2048 ").end_label.as_deref(),
            Some("warm 2048 MB")
        );
        assert!(fsage.iter().all(|l| l.color == plots::FS_COLORS[0].1));
    }

    /// The drawn plot: two grey shapes of different kinds, the answering run's shape in ext4's
    /// blue, and the series written at the run's end.
    #[test]
    fn the_drawn_plot_pairs_the_shapes() {
        let (cmp, git) = fig5(&[768]);
        let refs: Vec<(&str, &GitSeries)> = git.iter().map(|(n, s)| (n.as_str(), s)).collect();
        let svg = lines(&cmp, &refs);
        assert!(svg.contains("<polygon") && svg.contains("fill=\"#969696\""));
        let grey_circle = svg
            .lines()
            .any(|l| l.starts_with("<circle") && l.contains("fill=\"#969696\""));
        let grey_polygon = svg
            .lines()
            .any(|l| l.starts_with("<polygon") && l.contains("fill=\"#969696\""));
        assert!(grey_circle && grey_polygon, "two grey shapes");
        assert!(svg
            .lines()
            .any(|l| l.starts_with("<polygon") && l.contains("fill=\"#0072B2\"")));
        assert!(svg.contains(">\nwarm 768 MB\n</text>"), "the end label");
    }
}
