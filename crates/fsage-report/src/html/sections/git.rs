//! Git-history aging: grep time per GiB of the aged and the clean instance against pulls, their
//! ratio, the costed device models and the layout scores of the greps' reads.

use crate::html::format::opt;
use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Dash, Line, LineChart};
use crate::html::Section;
use crate::inputs::Named;
use fsage_profile::human_bytes;
use std::fmt::Write as _;

/// Git-history aging (Conway et al.): grep seconds per GiB of the aged and the clean instance
/// against pulls, their ratio, and the layout scores of the greps' reads.
pub(in crate::html) fn render(p: &mut Page, series: &[Named<fsage_results::git::GitSeries>]) {
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
    // One colour per file system in every plot (its aged instance in full, its clean one light),
    // one dash style per instance of the same file system and per device model.
    let models_max = series
        .iter()
        .map(|s| s.item.model_names().len())
        .max()
        .unwrap_or(0)
        .max(1);
    for (i, s) in series.iter().enumerate() {
        let g = &s.item;
        let name = format!("{} {}", s.name, series_tags(g));
        let col = plots::series_color(&g.fs, i);
        let instance = series[..i].iter().filter(|o| o.item.fs == g.fs).count();
        let pts = |f: &dyn Fn(&fsage_results::git::GitRow) -> Option<f64>| -> Vec<(f64, f64)> {
            g.rows
                .iter()
                .filter_map(|r| f(r).map(|y| (r.pulls as f64, y)))
                .collect()
        };
        let line = |name: String, points: Vec<(f64, f64)>, color, dash| Line {
            name,
            color,
            points,
            intervals: vec![],
            dash,
            dots: true,
            rings: vec![],
            marker: None,
            end_label: None,
        };
        let dash = Dash::nth(instance);
        // The spread of the timed greps, per GiB, as whiskers (none for one sample).
        let spread =
            |f: &dyn Fn(&fsage_results::git::GitRow) -> &fsage_results::git::InstanceFigures| {
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
            col,
            dash,
        );
        aged.intervals = spread(&|r| &r.aged);
        per_gib.push(aged);
        let mut clean = line(
            format!("{name} clean"),
            pts(&|r| Some(r.clean.grep_seconds_per_gib)),
            plots::light(col),
            dash,
        );
        clean.intervals = spread(&|r| &r.clean);
        per_gib.push(clean);
        for (mi, m) in g.model_names().into_iter().enumerate() {
            let md = Dash::nth(instance * models_max + mi);
            model_ratio.push(line(
                format!("{name} on {m}"),
                pts(&|r| r.modeled_ratio_on(m)),
                col,
                md,
            ));
            model_per_gib.push(line(
                format!("{name} aged on {m}"),
                pts(&|r| r.aged.modeled_on(m).map(|x| x.seconds_per_gib)),
                col,
                md,
            ));
            model_per_gib.push(line(
                format!("{name} clean on {m}"),
                pts(&|r| r.clean.modeled_on(m).map(|x| x.seconds_per_gib)),
                plots::light(col),
                md,
            ));
        }
        ratio.push(line(name.clone(), pts(&|r| r.ratio), col, dash));
        let la = pts(&|r| r.aged.layout_score);
        if !la.is_empty() {
            layout.push(line(format!("{name} aged"), la, col, dash));
            layout.push(line(
                format!("{name} clean"),
                pts(&|r| r.clean.layout_score),
                plots::light(col),
                dash,
            ));
        }
    }
    // Ratios get a line at 1 (no difference); every plot keeps its axis for the bulk of the
    // points (a noisy first grep is written at the top edge rather than squashing the rest).
    let chart = |title: &str, y: &str, lines: Vec<Line>, ratio: bool| {
        plot_or_note(plots::lines(&LineChart {
            title: title.into(),
            x_desc: "pulls (commits replayed)".into(),
            y_desc: y.into(),
            x_range: (0.0, xmax),
            lines,
            size: plots::WIDE,
            reference_y: ratio.then_some(1.0),
            clip_outliers: true,
        }))
    };
    let mut parts = vec![
        chart(
            "Cold-cache grep, seconds per GiB (aged in full colour, clean light)",
            "grep time (s/GiB)",
            per_gib,
            false,
        ),
        chart("Aged over clean grep time", "aged / clean", ratio, true),
    ];
    if !model_ratio.is_empty() {
        parts.push(chart(
            "Aged over clean on device models (the greps' traces, costed; a dash per model)",
            "modeled aged / clean",
            model_ratio,
            true,
        ));
        parts.push(chart(
            "Modeled grep, seconds per GiB (aged in full colour, clean light; a dash per model)",
            "modeled grep time (s/GiB)",
            model_per_gib,
            false,
        ));
    }
    if !layout.is_empty() {
        parts.push(chart(
            "Layout score of the grep's reads (aged in full colour, clean light)",
            "1 - discontiguities / blocks",
            layout,
            false,
        ));
    }
    c.push_str(&fig(&parts));
    for s in series {
        let g = &s.item;
        let _ = writeln!(
            c,
            "<h3>{} ({}, {} mode)</h3><p class=\"note\">{} of {} commits replayed{}, \
             measured every {}; replay {:.0} s{}, measurements {:.0} s; git {}, {}.{}{}</p>",
            esc(&s.name),
            esc(&series_tags(g)),
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
            esc(&g.grep_version),
            esc(&crate::git_series::how_costed(g)),
            if g.warm_cache {
                " The aged instance was measured warm (no caches dropped, not remounted: what \
                 the replay left in memory; fsage drops no cache in such a run, as a drop is \
                 machine-wide), the clean copy cold from its fresh mount (one grep), as in Conway \
                 et al.'s warm-cache figure."
            } else {
                ""
            }
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
        Section::Git,
        "Git-history aging",
        "<code>fsage git-age</code> replays a repository's first-parent history one <code>git \
         pull</code> per commit (Conway et al., FAST '17). Every N pulls the aged file system is \
         unmounted, mounted again and its caches dropped, then <code>grep -r</code> reads the \
         whole tree (.git included) for a string that is not there; the same tree copied with \
         <code>cp -a</code> onto a freshly made file system of the same kind and size (the clean \
         instance) is read the same way. Time is divided by the <code>du -s</code> size. The \
         layout score is 1 − discontiguities ÷ blocks over the grep's block reads in issue \
         order (tracefs <code>block:block_rq_issue</code>). With several timed greps the line is \
         their median and the whiskers span the fastest to the slowest. With cost models, each \
         timed grep's block reads (issue and completion times, \
         <code>block:block_rq_complete</code>) are replayed on each model in simulated time \
         (<code>fsage dev cost</code>'s rule, with the think time each series names below: by \
         default a fixed 50 µs before every read that waited for another, so that the cost is \
         the layout's and the model's, not the host's load): one line per model, the median \
         grep's cost (series that say no median below costed the first grep only).",
        &c,
    );
}

/// A series' file system, partition size, and warm cache and memory limit when it had them
/// (`ext4 20 GiB, warm, 512 MiB memory`): what tells apart series of one repository run with
/// other partition sizes or memory, as Conway et al.'s figures 5 and 6 compare.
fn series_tags(g: &fsage_results::git::GitSeries) -> String {
    let mut t = format!("{} {}", g.fs, human_bytes(g.size_bytes));
    if g.warm_cache {
        t.push_str(", warm");
    }
    if let Some(l) = g.mem_limit_bytes {
        let _ = write!(t, ", {} memory", human_bytes(l));
    }
    t
}
