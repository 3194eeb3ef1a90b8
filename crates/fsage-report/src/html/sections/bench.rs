//! Workload runs (`fsage bench run --json`), so that age, bench, report works by hand: ops/s per
//! flowop with 95% intervals over the repetitions, one series per run side by side; latency
//! percentiles per flowop; and per run its flowops, its repetitions and the workload as run.

use crate::html::format::{mean_pm, mib, opt, us};
use crate::html::page::{esc, fig, plot_or_note, table, Page};
use crate::html::plots::{self, Bar, BarChart, BarSeries, PercentilePanels};
use crate::html::Section;
use crate::inputs::Named;
use fsage_results::bench::{BenchResult, FlowopResult, Summary};
use fsage_sys::PlatformKind;
use std::fmt::Write as _;

/// One flowop of one run over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FlowopFigures {
    /// Its name, with its thread's when the run has the name in more than one thread.
    pub label: String,
    pub kind: String,
    pub ops_per_s: f64,
    /// Half-width of the 95% interval of the mean ops/s (`None` for one repetition).
    pub ops_per_s_ci95: Option<f64>,
    /// Mean over the repetitions.
    pub mb_per_s: f64,
    /// Each percentile: the mean over the repetitions that recorded it.
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    /// The largest of any repetition.
    pub max_us: Option<f64>,
    /// Operations refused with ENOSPC, over all repetitions.
    pub enospc: u64,
}

/// Every flowop of `b`, in the workload's order: ops/s from the run's own summary across
/// repetitions (recomputed from the repetitions for a report written before it had one), the
/// rest from the repetitions.
pub(crate) fn flowop_figures(b: &BenchResult) -> Vec<FlowopFigures> {
    let recomputed;
    let summary = if b.summary.flowops.is_empty() {
        recomputed = Summary::of(&b.reps).flowops;
        &recomputed
    } else {
        &b.summary.flowops
    };
    summary
        .iter()
        .map(|f| {
            let same: Vec<&FlowopResult> = b
                .reps
                .iter()
                .filter_map(|r| {
                    r.flowops
                        .iter()
                        .find(|x| x.thread == f.thread && x.name == f.name)
                })
                .collect();
            let mean = |g: fn(&FlowopResult) -> Option<f64>| {
                let v: Vec<f64> = same.iter().filter_map(|x| g(x)).collect();
                (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
            };
            let shared = summary
                .iter()
                .filter(|o| o.name == f.name && o.thread != f.thread)
                .count()
                > 0;
            FlowopFigures {
                label: if shared {
                    format!("{}/{}", f.thread, f.name)
                } else {
                    f.name.clone()
                },
                kind: f.kind.clone(),
                ops_per_s: f.ops_per_sec_mean,
                ops_per_s_ci95: f.ops_per_sec_ci95,
                mb_per_s: mean(|x| Some(x.stats.mb_per_sec)).unwrap_or(0.0),
                p50_us: mean(|x| x.stats.p50_us),
                p90_us: mean(|x| x.stats.p90_us),
                p99_us: mean(|x| x.stats.p99_us),
                p999_us: mean(|x| x.stats.p999_us),
                max_us: same.iter().filter_map(|x| x.stats.max_us).reduce(f64::max),
                enospc: same.iter().map(|x| x.stats.enospc).sum(),
            }
        })
        .collect()
}

/// The legend name of each run: its file name, with its target where two runs share one.
fn run_labels(runs: &[Named<BenchResult>]) -> Vec<String> {
    runs.iter()
        .map(|r| {
            if runs.iter().filter(|o| o.name == r.name).count() > 1 {
                format!("{} ({})", r.name, r.item.environment.target)
            } else {
                r.name.clone()
            }
        })
        .collect()
}

/// The flowop labels of every run, in the order they first appear.
fn all_flowops(figs: &[Vec<FlowopFigures>]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for f in figs.iter().flatten() {
        if !v.contains(&f.label) {
            v.push(f.label.clone());
        }
    }
    v
}

const PERCENTILES: [&str; 5] = ["p50", "p90", "p99", "p99.9", "max"];

fn percentiles(f: &FlowopFigures) -> Vec<Option<f64>> {
    vec![f.p50_us, f.p90_us, f.p99_us, f.p999_us, f.max_us]
}

/// One run's heading, overall line, flowop table, repetitions and workload text.
fn run_part(c: &mut String, label: &str, r: &Named<BenchResult>, figs: &[FlowopFigures]) {
    let b = &r.item;
    let e = &b.environment;
    let s = &b.summary;
    let _ = write!(
        c,
        "<h3>{}{} — {} on {} ({})</h3>\n<p class=\"verdict\">{} ops/s{} over {} repetition{}, {} \
         MB/s ({} MiB/s)</p>\n<p class=\"note\">{}, seed {}, Linux {}, {} CPUs, fsage {}; {}{}{}{}{}\
         </p>\n",
        esc(label),
        e.platform
            .label()
            .map(|l| format!(" [{l}]"))
            .unwrap_or_default(),
        esc(&b.workload),
        esc(&e.target),
        esc(&e.target_fs),
        mean_pm(s.ops_per_sec_mean, s.ops_per_sec_ci95),
        if s.ops_per_sec_ci95.is_some() {
            " (mean ± 95% CI)"
        } else {
            ""
        },
        s.reps,
        if s.reps == 1 { "" } else { "s" },
        fmt_mb(s.mb_per_sec_mean),
        fmt_mb(mib(s.mb_per_sec_mean)),
        esc(&b.stop),
        e.seed,
        esc(&e.kernel),
        e.cpus,
        esc(&e.fsage_version),
        match &b.cache_limit {
            None => "page cache not limited".to_string(),
            Some(l) => format!(
                "page cache limited to {:.2} of the fileset ({} bytes, cgroup {})",
                l.ratio,
                l.limit_bytes,
                esc(&l.cgroup)
            ),
        },
        if b.drop_caches {
            "; caches dropped before each repetition"
        } else {
            ""
        },
        if b.latency_recorded {
            ""
        } else {
            "; latency not recorded (--no-latency)"
        },
        if b.data.is_incompressible() {
            String::new()
        } else {
            format!("; data written: {}", b.data)
        },
        if b.interrupted {
            "; <span class=\"flag\">interrupted</span>: the last repetition is partial"
        } else {
            ""
        },
    );
    let rows: Vec<Vec<String>> = figs
        .iter()
        .map(|f| {
            vec![
                f.label.clone(),
                f.kind.clone(),
                mean_pm(f.ops_per_s, f.ops_per_s_ci95),
                fmt_mb(f.mb_per_s),
                fmt_mb(mib(f.mb_per_s)),
                opt(f.p50_us, us),
                opt(f.p99_us, us),
                opt(f.max_us, us),
                f.enospc.to_string(),
            ]
        })
        .collect();
    let reps: Vec<Vec<String>> = b
        .reps
        .iter()
        .map(|x| {
            vec![
                x.rep.to_string(),
                x.seed.to_string(),
                format!("{:.1}", x.warmup_secs),
                format!("{:.3}", x.measured_secs),
                x.overall.ops.to_string(),
                format!("{:.1}", x.overall.ops_per_sec),
                fmt_mb(x.overall.mb_per_sec),
                fmt_mb(mib(x.overall.mb_per_sec)),
                opt(x.overall.p99_us, us),
                if x.interrupted {
                    "interrupted".into()
                } else {
                    x.done
                        .clone()
                        .unwrap_or_else(|| "at its time or count".into())
                },
            ]
        })
        .collect();
    c.push_str(&fig(&[
        table(
            &[
                "flowop",
                "type",
                "ops/s (mean ± 95% CI)",
                "MB/s",
                "MiB/s",
                "p50",
                "p99",
                "max",
                "ENOSPC",
            ],
            &rows,
        ),
        table(
            &[
                "repetition",
                "seed",
                "warm-up s",
                "measured s",
                "ops",
                "ops/s",
                "MB/s",
                "MiB/s",
                "p99",
                "ended",
            ],
            &reps,
        ),
    ]));
    for x in &b.reps {
        if let Some(tl) = &x.timeline {
            c.push_str(&super::timeline::charts(
                tl,
                &format!("{label}, repetition {}", x.rep),
            ));
        }
    }
    let _ = writeln!(
        c,
        "<details><summary>The workload as run</summary><pre>{}</pre></details>",
        esc(&b.workload_text)
    );
}

/// MB/s to one decimal, two below 10.
fn fmt_mb(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// Runs measured on different platforms (native, KVM, TCG) are never drawn in one chart: an
/// emulated timing says nothing next to a native one. Each platform gets its own charts, under a
/// heading when there is more than one.
pub(in crate::html) fn render(p: &mut Page, runs: &[Named<BenchResult>]) {
    let mut groups: Vec<(PlatformKind, Vec<Named<BenchResult>>)> = Vec::new();
    for r in runs {
        let k = r.item.environment.platform;
        match groups.iter_mut().find(|(g, _)| *g == k) {
            Some((_, v)) => v.push(r.clone()),
            None => groups.push((k, vec![r.clone()])),
        }
    }
    let mut c = String::new();
    for (k, g) in &groups {
        if groups.len() > 1 || !k.is_native() {
            let _ = writeln!(
                c,
                "<h3>{}</h3>",
                match k.label() {
                    None => "Native runs".to_string(),
                    Some(l) => format!(
                        "Runs {l}: their timings compare only with each other, never with \
                         native runs"
                    ),
                }
            );
        }
        c.push_str(&group_content(g));
    }
    p.section(
        Section::Bench,
        "Benchmark runs",
        "Each input written by <code>fsage bench run --json</code>, one bar series per run \
         (named by its file name, and its target where two files share a name). A flowop's \
         ops/s is its operations after the warm-up over the measured interval of each \
         repetition; the bar is the mean over the repetitions and its whisker the 95% Student-t \
         interval (none for one repetition). Latency percentiles come from each repetition's \
         HDR histograms: p50 to p99.9 are the mean over the repetitions of each repetition's \
         percentile, max the largest latency of any repetition; the latency axis is \
         logarithmic, each panel with its own range. MB/s is 10<sup>6</sup> bytes per second, \
         MiB/s 2<sup>20</sup> (Filebench's <code>mb/s</code>), both the mean over the \
         repetitions. Flowops named alike in several threads carry their thread's name. Runs \
         made in a virtual machine are drawn apart from native ones, by platform.",
        &c,
    );
}

fn group_content(runs: &[Named<BenchResult>]) -> String {
    let labels = run_labels(runs);
    let figs: Vec<Vec<FlowopFigures>> = runs.iter().map(|r| flowop_figures(&r.item)).collect();
    let flowops = all_flowops(&figs);
    let find = |ri: usize, fo: &str| figs[ri].iter().find(|f| f.label == fo);
    let series: Vec<BarSeries> = labels
        .iter()
        .enumerate()
        .map(|(ri, name)| BarSeries {
            name: name.clone(),
            bars: flowops
                .iter()
                .map(|fo| {
                    find(ri, fo).map(|f| Bar {
                        value: f.ops_per_s,
                        interval: f
                            .ops_per_s_ci95
                            .map(|h| ((f.ops_per_s - h).max(0.0), f.ops_per_s + h)),
                        flag: false,
                        color: None,
                    })
                })
                .collect(),
            color: None,
        })
        .collect();
    let workloads: Vec<&str> = {
        let mut v: Vec<&str> = Vec::new();
        for r in runs {
            if !v.contains(&r.item.workload.as_str()) {
                v.push(&r.item.workload);
            }
        }
        v
    };
    let chart = BarChart {
        title: format!(
            "{}: ops/s per flowop, mean with 95% CI",
            workloads.join(", ")
        ),
        x_desc: "flowop".into(),
        y_desc: "throughput (ops/s)".into(),
        groups: flowops.clone(),
        series,
        log_y: false,
        size: (900, 420),
    };
    let mut c = String::new();
    let mut parts = vec![plot_or_note(plots::bars(&chart))];
    let any_latency = figs.iter().flatten().any(|f| f.max_us.is_some());
    if any_latency {
        let panels = PercentilePanels {
            title: "latency percentiles per flowop (log axis)".into(),
            percentiles: PERCENTILES.iter().map(|s| s.to_string()).collect(),
            series: labels.clone(),
            panels: flowops
                .iter()
                .map(|fo| {
                    let per_run = (0..runs.len())
                        .map(|ri| find(ri, fo).map_or(vec![None; 5], percentiles))
                        .collect();
                    (fo.clone(), per_run)
                })
                .collect(),
            columns: 4,
            panel_size: (250, 200),
        };
        parts.push(plot_or_note(plots::percentile_panels(&panels)));
    }
    c.push_str(&fig(&parts));
    if !any_latency {
        c.push_str(
            "<p class=\"note\">No latency percentiles: no run recorded latency (--no-latency).\
             </p>\n",
        );
    }
    for (ri, r) in runs.iter().enumerate() {
        run_part(&mut c, &labels[ri], r, &figs[ri]);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inputs::{detect, Kind};
    use std::path::PathBuf;

    fn fixture(name: &str) -> Named<BenchResult> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/bench")
            .join(name);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(detect(&v), Some(Kind::Bench), "{name}");
        Named {
            name: name.trim_end_matches(".json").into(),
            path,
            item: serde_json::from_value(v).unwrap(),
        }
    }

    #[test]
    fn flowop_figures_agree_with_the_repetitions() {
        let r = fixture("varmail-aged-ext4.json");
        let b = &r.item;
        let figs = flowop_figures(b);
        assert_eq!(figs.len(), b.reps[0].flowops.len());
        assert_eq!(figs[0].label, "deletefile1");
        let fsync = figs.iter().find(|f| f.label == "fsyncfile2").unwrap();
        let per_rep: Vec<&FlowopResult> = b
            .reps
            .iter()
            .map(|x| x.flowops.iter().find(|f| f.name == "fsyncfile2").unwrap())
            .collect();
        let n = per_rep.len() as f64;
        let rate = per_rep.iter().map(|f| f.stats.ops_per_sec).sum::<f64>() / n;
        assert!((fsync.ops_per_s - rate).abs() < 1e-6 * rate);
        let p50 = per_rep.iter().map(|f| f.stats.p50_us.unwrap()).sum::<f64>() / n;
        assert!((fsync.p50_us.unwrap() - p50).abs() < 1e-9 * p50);
        let max = per_rep
            .iter()
            .map(|f| f.stats.max_us.unwrap())
            .fold(0.0, f64::max);
        assert_eq!(fsync.max_us, Some(max));
        assert!(fsync.p50_us <= fsync.p99_us && fsync.p99_us <= fsync.max_us);
        // Three repetitions: an interval.
        assert!(fsync.ops_per_s_ci95.is_some());
        // A report without the summary's flowops gets the same figures from its repetitions.
        let mut old = b.clone();
        old.summary.flowops.clear();
        // (JSON keeps the summary's means to the last bit or one off.)
        let again = flowop_figures(&old);
        assert_eq!(again.len(), figs.len());
        for (x, y) in again.iter().zip(&figs) {
            assert_eq!(
                (&x.label, x.p50_us, x.max_us),
                (&y.label, y.p50_us, y.max_us)
            );
            assert!((x.ops_per_s - y.ops_per_s).abs() < 1e-9 * y.ops_per_s);
            let (cx, cy) = (x.ops_per_s_ci95.unwrap(), y.ops_per_s_ci95.unwrap());
            assert!((cx - cy).abs() < 1e-9 * cy);
        }
        // 1 MB/s is 0.954 MiB/s.
        assert!((mib(1.0) - 0.953_674).abs() < 1e-6);
    }

    #[test]
    fn emulated_runs_are_drawn_apart_from_native_ones() {
        let native = fixture("varmail-fresh-ext4.json");
        let mut tcg = fixture("varmail-aged-ext4.json");
        tcg.item.environment.platform = PlatformKind::Tcg;
        let mut p = Page::default();
        render(&mut p, &[native.clone(), tcg.clone()]);
        let h = &p.body;
        // Two charts of one series each (plus two of percentiles): never one chart of both.
        assert_eq!(
            h.matches("<svg").count(),
            4,
            "one pair of charts per platform"
        );
        for r in [&native, &tcg] {
            let legend = format!(">\n{}\n</text>", r.name);
            assert_eq!(
                h.matches(&legend).count(),
                2,
                "{} only in its own charts",
                r.name
            );
        }
        assert!(h.contains("Native runs"));
        assert!(h.contains("Runs emulated (TCG): their timings compare only with each other"));
        assert!(h.contains("[emulated (TCG)] — varmail"));
        // The text report says it too.
        let t = crate::bench_text::render(&tcg.item);
        assert!(t.contains("platform: emulated (TCG)"), "{t}");
        assert!(!crate::bench_text::render(&native.item).contains("platform:"));
    }

    #[test]
    fn two_runs_side_by_side_and_a_shared_name_gets_its_target() {
        let runs = vec![
            fixture("varmail-fresh-ext4.json"),
            fixture("varmail-aged-ext4.json"),
        ];
        let mut p = Page::default();
        render(&mut p, &runs);
        let h = &p.body;
        assert!(h.contains("data-kind=\"bench\""));
        // One series per run in the legends of both charts, one heading per run.
        for r in &runs {
            let legend = format!(">\n{}\n</text>", r.name);
            assert_eq!(h.matches(&legend).count(), 2, "{} in both legends", r.name);
        }
        assert_eq!(h.matches("<h3>").count(), 2);
        assert_eq!(h.matches("<svg").count(), 2);
        for f in &runs[0].item.summary.flowops {
            assert!(h.contains(&format!(">{}<", f.name)), "no {}", f.name);
        }
        // The run's overall figures, as its own summary has them, and both units.
        let s = &runs[1].item.summary;
        assert!(h.contains(&format!(
            "{} ops/s (mean ± 95% CI) over 3 repetitions, {} MB/s ({} MiB/s)",
            mean_pm(s.ops_per_sec_mean, s.ops_per_sec_ci95),
            fmt_mb(s.mb_per_sec_mean),
            fmt_mb(mib(s.mb_per_sec_mean))
        )));
        // Every repetition has its row.
        assert_eq!(
            h.matches("<td class=\"l\">at its time or count</td>")
                .count(),
            6
        );
        // Two files of one name: the legend tells them apart by target.
        let mut same = runs.clone();
        same[1].name = same[0].name.clone();
        let l = run_labels(&same);
        assert_ne!(l[0], l[1]);
        assert!(l[1].ends_with(&format!("({})", same[1].item.environment.target)));
    }

    #[test]
    fn a_flowop_name_in_two_threads_carries_the_thread() {
        let mut b = fixture("varmail-aged-ext4.json").item;
        for r in &mut b.reps {
            let mut twin = r.flowops[0].clone();
            twin.thread = "other".into();
            r.flowops.push(twin);
        }
        b.summary = Summary::of(&b.reps);
        let labels: Vec<String> = flowop_figures(&b).into_iter().map(|f| f.label).collect();
        assert!(labels.contains(&"filereaderthread/deletefile1".to_string()));
        assert!(labels.contains(&"other/deletefile1".to_string()));
        assert!(labels.contains(&"createfile2".to_string()));
    }
}
