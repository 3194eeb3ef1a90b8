//! The terminal summary `fsage report` prints.

use crate::inputs::ReportSet;
use fsage_results::against::AgingFigures;
use fsage_units::format_latency_us;
use std::fmt::Write as _;

/// The device of a group: a model by name (never a latency: a model is no point on that
/// axis), a latency, or a plain image.
fn dev(model: &Option<String>, l: Option<f64>) -> String {
    match model {
        Some(m) => format!("model {m}"),
        None => l.map_or("plain".into(), format_latency_us),
    }
}

pub fn render(set: &ReportSet) -> String {
    let mut o = String::new();
    for c in set.comparisons() {
        let (n, with, within) = c.counts();
        let _ = writeln!(
            o,
            "reproduction {} ({} {}; {}): {n} published points, {with} with an fsage number, \
             {within} of them within the aim",
            c.record.name,
            c.record.paper,
            c.record.figure,
            c.record.scale_text()
        );
        for p in c.points.iter().filter(|p| p.fsage.is_some()) {
            let q = &p.published;
            let _ = writeln!(
                o,
                "  {} {} {} at {}: paper {} {}, fsage {:.2}{} ({}{:.1} {}, {})",
                q.figure,
                q.fs,
                q.device,
                q.x,
                q.value_text(),
                q.unit,
                p.fsage.unwrap_or_default(),
                p.fsage_at
                    .as_deref()
                    .map_or(String::new(), |a| format!(" at {a}")),
                if p.difference.unwrap_or_default() > 0.0 {
                    "+"
                } else {
                    ""
                },
                p.difference.unwrap_or_default(),
                p.difference_unit,
                match p.within_aim {
                    Some(true) => format!("{}: yes", p.aim.text()),
                    Some(false) => format!("{}: no", p.aim.text()),
                    None => p.aim.text(),
                }
            );
        }
    }
    for r in &set.runs {
        let x = &r.item;
        let _ = writeln!(
            o,
            "aging run {}: profile {}, {} of {} ticks, stopped: {}; RMSE age {:.3}%, size {:.3}%, \
             depth {:.3}%",
            r.name,
            x.profile,
            x.ticks,
            x.t_estimate,
            crate::run_text::stop_reason_text(x.stop_reason),
            100.0 * x.age.rmse,
            100.0 * x.size.rmse,
            100.0 * x.depth.rmse
        );
        if let Some(l) = x.platform.label() {
            let _ = writeln!(
                o,
                "  {l}: its timings compare only with runs on the same platform"
            );
        }
    }
    for g in &set.git {
        let x = &g.item;
        let _ = writeln!(
            o,
            "git-age {} ({}, {} mode): {} of {} commits{}, {} measurements; last aged/clean grep \
             time {}",
            g.name,
            x.fs,
            x.mode,
            x.pulls_done,
            x.commits_total,
            if x.finished { "" } else { " (not finished)" },
            x.rows.len(),
            x.final_ratio().map_or("-".into(), |r| format!("{r:.2}"))
        );
    }
    for f in &set.frags {
        let g = AgingFigures::of(&f.item);
        let _ = writeln!(
            o,
            "frag {} ({}): {} free extents/GiB, {} of free space in extents < 1 MiB, probe {} \
             fragments/100 MiB, dynamic layout score {}",
            f.name,
            f.item.fs_type,
            g.free_extents_per_gib
                .map_or("-".into(), |v| format!("{v:.1}")),
            g.free_under_1mib_percent
                .map_or("-".into(), |v| format!("{v:.1}%")),
            g.probe_fragments_per_100mib
                .map_or("-".into(), |v| format!("{v:.1}")),
            g.dynamic_layout_score
                .map_or("-".into(), |v| format!("{:.2}%", 100.0 * v)),
        );
    }
    for a in &set.against {
        let _ = writeln!(o, "against fresh: {}", a.item.summary);
    }
    for v in &set.verdicts {
        let _ = writeln!(o, "against fresh: {}", v.line());
    }
    for b in &set.bench {
        let x = &b.item;
        let sm = &x.summary;
        let _ = writeln!(
            o,
            "bench {}: {} on {} ({}), {} repetition{} of {}: {:.1}{} ops/s, {:.1} MB/s ({:.1} \
             MiB/s){}",
            b.name,
            x.workload,
            x.environment.target,
            x.environment.target_fs,
            sm.reps,
            if sm.reps == 1 { "" } else { "s" },
            x.stop,
            sm.ops_per_sec_mean,
            sm.ops_per_sec_ci95
                .map_or(String::new(), |c| format!(" ± {c:.1}")),
            sm.mb_per_sec_mean,
            crate::html::mib(sm.mb_per_sec_mean),
            if x.interrupted { " (interrupted)" } else { "" }
        );
        if let Some(l) = x.environment.platform.label() {
            let _ = writeln!(o, "  {l}: compare only with runs on the same platform");
        }
        if let Some(l) = &x.lock_contention {
            o.push_str(&crate::lock_text::render(l, "  "));
        }
    }
    if !set.cells.is_empty() {
        let done = set.cells.iter().filter(|c| c.item.is_done()).count();
        let _ = writeln!(
            o,
            "cells: {} ({done} done, {} failed)",
            set.cells.len(),
            set.cells.len() - done
        );
    }
    for c in &set.cells {
        let Some(l) = c
            .item
            .workload_part::<fsage_results::locks::LockReport>("lock_contention")
        else {
            continue;
        };
        let _ = writeln!(
            o,
            "cell {}{}:",
            c.item.cell.id,
            c.item
                .samples
                .first()
                .and_then(|s| fsage_results::experiment::result::platform_label(s.platform))
                .map_or(String::new(), |p| format!(" ({p}: the waits are emulated)"))
        );
        o.push_str(&crate::lock_text::render(&l, "  "));
    }
    for a in &set.analyses {
        let x = &a.item;
        let _ = writeln!(o, "analysis of {} ({} samples):", a.name, x.samples);
        for r in &x.aged_vs_fresh {
            let _ = writeln!(
                o,
                "  {:<10} {:<12} {:<8} {:<16} {:>9.0} -> {:>9.0} ops/s  slowdown {:+6.1}%{}",
                r.fs,
                r.workload,
                dev(&r.device_model, r.latency_us),
                r.state.label(),
                r.fresh.mean,
                r.aged.mean,
                r.slowdown_percent,
                if r.no_interval() {
                    "  (one repetition: no interval)"
                } else if r.significant {
                    ""
                } else {
                    "  (within noise)"
                }
            );
        }
        for r in x.ranks.iter().filter(|r| r.changed || r.within_noise) {
            let _ = writeln!(
                o,
                "  {}: {} {} {}: {} (fresh: {})",
                if r.changed {
                    "rank order changed"
                } else {
                    "rank order swapped within noise (not a change)"
                },
                r.workload,
                dev(&r.device_model, r.latency_us),
                r.state.label(),
                r.order.join(" > "),
                r.fresh_order.join(" > ")
            );
        }
        for s in &x.sweeps {
            let _ = writeln!(
                o,
                "  sweep {:<10} {:<12} {:<16} {}",
                s.fs,
                s.workload,
                s.state.label(),
                s.class.describe()
            );
        }
        for i in &x.inversions {
            let _ = writeln!(
                o,
                "  inversion {} {}: {} faster at {}, {} faster at {}{}",
                i.workload,
                i.state.label(),
                i.faster_slow_device,
                format_latency_us(i.from_us),
                i.faster_fast_device,
                format_latency_us(i.to_us),
                if i.confirmed {
                    ""
                } else {
                    " (unconfirmed: one repetition, may be noise)"
                }
            );
        }
        for n in &x.notes {
            let _ = writeln!(o, "  note: {n}");
        }
    }
    for (p, why) in &set.skipped {
        let _ = writeln!(o, "skipped {}: {why}", p.display());
    }
    o
}

/// `fsage frag --against-fresh`: the figures side by side, then the one-line verdict.
pub fn against(a: &fsage_results::against::AgainstFresh) -> String {
    let f = |x: Option<f64>, d: usize| x.map_or("-".to_string(), |v| format!("{v:.d$}"));
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\nagainst a fresh {} of the same size (made, measured and removed):",
        a.fs_type
    );
    let _ = writeln!(o, "  {:<40} {:>12} {:>12}", "", "this", "fresh");
    let rows = [
        (
            "free extents per GiB of free space",
            a.aged.free_extents_per_gib,
            a.fresh.free_extents_per_gib,
            1,
        ),
        (
            "% of free space in extents < 1 MiB",
            a.aged.free_under_1mib_percent,
            a.fresh.free_under_1mib_percent,
            1,
        ),
        (
            "probe fragments per 100 MiB",
            a.aged.probe_fragments_per_100mib,
            a.fresh.probe_fragments_per_100mib,
            1,
        ),
        (
            "dynamic layout score",
            a.aged.dynamic_layout_score.map(|v| 100.0 * v),
            a.fresh.dynamic_layout_score.map(|v| 100.0 * v),
            2,
        ),
    ];
    for (name, x, y, d) in rows {
        let _ = writeln!(o, "  {name:<40} {:>12} {:>12}", f(x, d), f(y, d));
    }
    if a.aged.probe_fragments_per_100mib.is_none() {
        let _ = writeln!(
            o,
            "  (no probe: give --probe SIZE to compare a new file's fragments too)"
        );
    }
    let _ = writeln!(o, "{}", a.summary);
    o
}
