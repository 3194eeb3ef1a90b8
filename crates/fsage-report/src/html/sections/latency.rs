//! Tail latency per flowop: one panel per flowop with its percentiles, one line per state.

use crate::html::format::{lat, opt, state_order, us};
use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots;
use crate::html::Section;
use fsage_analysis::latency_curves::FlowopCurve;
use fsage_analysis::{Analysis, FlowopCompare, State};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The percentile panels of one (file system, workload, device latency): from the cells' full
/// workload reports when there are any (p50 to max), else the analysis' p99 and max.
fn latency_panels(
    (fs, wl): (&str, &str),
    (model, l, lk): (&Option<String>, Option<f64>, Option<i64>),
    rows: &[&FlowopCompare],
    flowops: &[String],
    curves: &[FlowopCurve],
) -> plots::PercentilePanels {
    let mine: Vec<&FlowopCurve> = curves
        .iter()
        .filter(|c| {
            c.fs == fs
                && c.workload == wl
                && c.device_model == *model
                && c.latency_us.map(|v| (v * 1000.0) as i64) == lk
        })
        .collect();
    let title = format!(
        "{fs}, {wl}, {}: latency percentiles per flowop (log axis)",
        lat(model, l)
    );
    let mut fos: Vec<String> = flowops.to_vec();
    let (percentiles, states, panels) = if !mine.is_empty() {
        for c in &mine {
            if !fos.contains(&c.flowop) {
                fos.push(c.flowop.clone());
            }
        }
        let states = state_order(&mine.iter().map(|c| c.state.clone()).collect());
        let pcts: Vec<String> = fsage_analysis::latency_curves::PERCENTILES
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
fn panels_of(
    flowops: &[String],
    states: &[State],
    of: impl Fn(&str, &State) -> Vec<Option<f64>>,
) -> Vec<plots::Panel> {
    flowops
        .iter()
        .map(|fo| (fo.clone(), states.iter().map(|st| of(fo, st)).collect()))
        .collect()
}

pub(in crate::html) fn render(p: &mut Page, a: &Analysis, suffix: &str, curves: &[FlowopCurve]) {
    let mut c = String::new();
    // Per (workload, file system, device): a device is a model by name or a latency.
    type Key = (String, String, Option<String>, Option<i64>);
    let mut keys: BTreeMap<Key, Option<f64>> = BTreeMap::new();
    for f in &a.flowops {
        keys.insert(
            (
                f.workload.clone(),
                f.fs.clone(),
                f.device_model.clone(),
                f.latency_us.map(|v| (v * 1000.0) as i64),
            ),
            f.latency_us,
        );
    }
    for ((wl, fs, model, lk), l) in keys {
        let rows: Vec<_> = a
            .flowops
            .iter()
            .filter(|f| {
                f.workload == wl
                    && f.fs == fs
                    && f.device_model == model
                    && f.latency_us.map(|v| (v * 1000.0) as i64) == lk
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
        let chart = latency_panels((&fs, &wl), (&model, l, lk), &rows, &flowops, curves);
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
        let _ = write!(
            c,
            "<h3>{} — {} — {}</h3>",
            esc(&fs),
            esc(&wl),
            esc(&lat(&model, l))
        );
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
        Section::Latency,
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
