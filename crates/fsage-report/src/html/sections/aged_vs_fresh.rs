//! Aged against fresh: mean throughput per file system and state with 95% intervals, the
//! slowdowns, and the rank orders (flagged where aging changed them beyond noise).

use crate::html::format::{lat, mean_ci, state_order};
use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries};
use crate::html::Section;
use fsage_experiment::analysis::{Analysis, State};
use std::collections::BTreeSet;
use std::fmt::Write as _;

pub(in crate::html) fn render(p: &mut Page, a: &Analysis, suffix: &str) {
    let mut c = String::new();
    // Per (workload, device): groups = file systems, series = states. A device is a model by
    // name or a latency.
    let mut keys: Vec<(String, Option<String>, Option<f64>)> = Vec::new();
    for m in &a.means {
        let k = (m.workload.clone(), m.device_model.clone(), m.latency_us);
        if !keys.iter().any(|x| {
            x.0 == k.0 && x.1 == k.1 && x.2.map(|v| v.to_bits()) == k.2.map(|v| v.to_bits())
        }) {
            keys.push(k);
        }
    }
    for (wl, model, l) in keys {
        let same = |dm: &Option<String>, x: Option<f64>| {
            *dm == model && x.map(|v| v.to_bits()) == l.map(|v| v.to_bits())
        };
        let means: Vec<_> = a
            .means
            .iter()
            .filter(|m| m.workload == wl && same(&m.device_model, m.latency_us))
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
            .filter(|r| r.workload == wl && same(&r.device_model, r.latency_us) && r.changed)
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
            title: format!("{wl}, {}: mean ops/s with 95% CI", lat(&model, l)),
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
            .filter(|r| r.workload == wl && same(&r.device_model, r.latency_us))
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
            .filter(|r| r.workload == wl && same(&r.device_model, r.latency_us))
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
        let _ = write!(c, "<h3>{} — {}</h3>", esc(&wl), esc(&lat(&model, l)));
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
        Section::AgedVsFresh,
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
