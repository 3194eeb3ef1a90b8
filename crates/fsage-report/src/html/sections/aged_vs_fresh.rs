//! Aged against fresh: mean throughput per file system and state with 95% intervals, the
//! slowdowns, and the rank orders (flagged where aging changed them beyond noise).

use crate::html::format::{lat, mean_ci, state_order};
use crate::html::page::{esc, fig, plot_or_note, table, table_or, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries};
use crate::html::Section;
use fsage_analysis::{Analysis, State};
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
                                color: None,
                            })
                    })
                    .collect(),
                color: None,
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
                    if r.no_interval() {
                        "one repetition: no interval".into()
                    } else if r.significant {
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
        // An SSD model's drive: what it did in each group (the aging of the drive shows here).
        let mut drive_rows: Vec<Vec<String>> = Vec::new();
        for st in &states {
            for fs in &fss {
                let Some(f) = means
                    .iter()
                    .find(|m| &m.fs == fs && &m.state == st)
                    .and_then(|m| m.flash.as_ref())
                else {
                    continue;
                };
                drive_rows.push(vec![
                    fs.clone(),
                    st.label(),
                    f.write_amplification
                        .map_or("–".into(), |w| format!("{w:.2}")),
                    format!("{:.0}", f.gc_copies),
                    format!("{:.0}", f.erases),
                    format!("{:.2}", f.gc_s),
                    format!("{:.0}", f.free_blocks),
                ]);
            }
        }
        let drive_table = if drive_rows.is_empty() {
            String::new()
        } else {
            format!(
                "<p></p>{}",
                table(
                    &[
                        "fs",
                        "state",
                        "write amplification",
                        "GC page copies",
                        "erases",
                        "GC busy s",
                        "free blocks at end"
                    ],
                    &drive_rows
                )
            )
        };
        let _ = write!(c, "<h3>{} — {}</h3>", esc(&wl), esc(&lat(&model, l)));
        c.push_str(&fig(&[
            plot_or_note(plots::bars(&chart)),
            format!(
                "<div>{}<p></p>{}</div>",
                table_or(
                    &[
                        "fs",
                        "state",
                        "fresh ops/s",
                        "aged ops/s",
                        "n",
                        "slowdown %",
                        "beyond noise"
                    ],
                    &rows,
                    "No slowdown: no file system ran both fresh and in an aged state here."
                ),
                table_or(
                    &["state", "rank order (fastest first)", "vs fresh"],
                    &ranks,
                    if fss.len() < 2 {
                        "No rank order: one file system here (an order needs two or more)."
                    } else {
                        "No rank order: no state here ran two or more file systems."
                    }
                )
            ),
        ]));
        c.push_str(&drive_table);
    }
    p.section(
        Section::AgedVsFresh,
        &format!("Aged against fresh{suffix}"),
        "Each bar is the mean ops/s over the repetitions of a cell; whiskers are the 95% \
         confidence interval (Student t, n − 1 degrees of freedom; none for one repetition). \
         Slowdown = (fresh − aged) / fresh, positive when aging made the file system slower; \
         <i>beyond noise</i> when the two intervals do not overlap; with one repetition on either \
         side there is no interval and no verdict (<i>one repetition: no interval</i>). The rank \
         order sorts the file \
         systems by mean ops/s in each state; ⚑ marks a state whose order changed against the fresh \
         one: a pair of file systems in the other order whose 95% intervals are apart in both \
         states (two or more repetitions each). A swap of means whose intervals overlap in either \
         state, or that rests on one repetition, is shown as <i>within noise</i> and not flagged. \
         On an SSD model, a state <i>on drive X</i> ran on a drive that is not its own (an erased \
         one, or the drive another state aged), and a table gives what each group's drive did: \
         write amplification (pages programmed per page written by the host, over the \
         repetitions), pages copied and blocks erased by garbage collection and the dies' time \
         in it (means per cell, fileset creation and warm-up included), and the free blocks left.",
        &c,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::page::Page;
    use fsage_analysis::{analyze, FlashCounters, Sample};

    fn crossed_again() -> State {
        State::OnDrive {
            fs: Box::new(State::Fresh),
            drive: "aged.meyer".into(),
        }
    }

    #[test]
    fn an_ssd_group_shows_what_its_drive_did() {
        let sample = |state: State, ops: f64, programs: u64| Sample {
            fs: "ext4".into(),
            state,
            workload: "fileserver".into(),
            latency_us: None,
            device_model: Some("ssd-92".into()),
            rep: 0,
            ops_per_s: ops,
            flowops: vec![],
            flash: Some(FlashCounters {
                host_pages: 1000,
                programs,
                gc_copies: programs - 1000,
                erases: 7,
                gc_s: 0.5,
                free_blocks: 16,
            }),
            platform: Default::default(),
        };
        let crossed = State::OnDrive {
            fs: Box::new(State::Fresh),
            drive: "aged.meyer".into(),
        };
        let a = analyze(
            &[
                sample(State::Fresh, 100.0, 1000),
                sample(crossed, 20.0, 2630),
            ],
            &Default::default(),
        );
        let mut p = Page::default();
        render(&mut p, &a, "");
        for want in [
            "write amplification",
            "fresh on drive aged.meyer",
            "2.63",
            "1630",
            "+80.0",
        ] {
            assert!(p.body.contains(want), "{want} missing:\n{}", p.body);
        }
        // Without a drive's counters there is no drive table.
        let bare = |s: Sample| Sample { flash: None, ..s };
        let a = analyze(
            &[
                bare(sample(State::Fresh, 100.0, 1000)),
                bare(sample(crossed_again(), 20.0, 2630)),
            ],
            &Default::default(),
        );
        let mut p = Page::default();
        render(&mut p, &a, "");
        assert!(p.body.contains("+80.0"), "{}", p.body);
        assert!(!p.body.contains("GC page copies"), "{}", p.body);
    }
}
