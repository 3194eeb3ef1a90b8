//! The terminal summary of a benchmark run: Filebench's per-flowop columns (ops, ops/s, MB/s,
//! ms/op) plus latency percentiles, its "IO Summary" line, and the repetitions with their
//! confidence interval.

use fsage_results::bench::{BenchResult, OpStats, RepResult};
use std::fmt::Write;

fn ms(x: Option<f64>) -> String {
    match x {
        None => "-".into(),
        Some(us) if us >= 100_000.0 => format!("{:.0}", us / 1e3),
        Some(us) if us >= 1_000.0 => format!("{:.2}", us / 1e3),
        Some(us) => format!("{:.3}", us / 1e3),
    }
}

fn row(out: &mut String, name: &str, s: &OpStats, cpu_us: Option<f64>) {
    let _ = writeln!(
        out,
        "{:<18} {:>10} {:>11.1} {:>8.1} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}{}",
        name,
        s.ops,
        s.ops_per_sec,
        s.mb_per_sec,
        ms(s.mean_us),
        ms(s.p50_us),
        ms(s.p90_us),
        ms(s.p99_us),
        ms(s.p999_us),
        ms(s.max_us),
        cpu_us.map_or("-".into(), |c| format!("{c:.1}")),
        if s.enospc > 0 {
            format!("  ENOSPC x{}", s.enospc)
        } else {
            String::new()
        }
    );
}

fn rep_table(out: &mut String, r: &RepResult) {
    let _ = writeln!(
        out,
        "{:<18} {:>10} {:>11} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "flowop",
        "ops",
        "ops/s",
        "MB/s",
        "ms/op",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "cpu us/op"
    );
    for f in &r.flowops {
        row(out, &f.name, &f.stats, f.cpu_us_per_op);
    }
    let (mut rd, mut wr) = (0.0, 0.0);
    for f in &r.flowops {
        match f.kind.as_str() {
            "read" | "readwholefile" => rd += f.stats.ops_per_sec,
            "write" | "writewholefile" | "appendfile" | "appendfilerand" | "aiowrite" => {
                wr += f.stats.ops_per_sec
            }
            _ => {}
        }
    }
    let o = &r.overall;
    let _ = writeln!(
        out,
        "IO Summary: {} ops {:.1} ops/s {:.0}/{:.0} rd/wr {:.1} MB/s ({:.1} MiB/s) {} ms/op {} us cpu/op over {:.3} s ({} threads){}",
        o.ops,
        o.ops_per_sec,
        rd,
        wr,
        o.mb_per_sec,
        o.mb_per_sec * 1e6 / 1048576.0,
        ms(o.mean_us),
        r.cpu_us_per_op.map_or("-".into(), |c| format!("{c:.1}")),
        r.measured_secs,
        r.threads,
        if r.interrupted { "  INTERRUPTED" } else { "" }
    );
    let _ = writeln!(
        out,
        "            latency p50 {} p90 {} p99 {} p99.9 {} max {} ms",
        ms(o.p50_us),
        ms(o.p90_us),
        ms(o.p99_us),
        ms(o.p999_us),
        ms(o.max_us)
    );
    if let Some(d) = &r.done {
        let _ = writeln!(out, "ended when done: {d}");
    }
}

pub fn render(b: &BenchResult) -> String {
    let mut out = String::new();
    let e = &b.environment;
    let _ = writeln!(
        out,
        "{} on {} ({}, Linux {}), {}, seed {}{}",
        b.workload,
        e.target,
        e.target_fs,
        e.kernel,
        b.stop,
        e.seed,
        if b.drop_caches {
            ", caches dropped before each repetition"
        } else {
            ""
        }
    );
    if let Some(l) = e.platform.label() {
        let _ = writeln!(
            out,
            "platform: {l}: its timings compare only with runs on the same platform"
        );
    }
    match &b.cache_limit {
        None => {
            let _ = writeln!(out, "page cache: not limited");
        }
        Some(c) => {
            let _ = writeln!(
                out,
                "page cache: limited by a cgroup {} to {:.2} x {} B fileset = {} B (+{} B for fsage's own memory: limit {} B); peak usage {} B, peak page cache {} B",
                c.cgroup, c.ratio, c.fileset_bytes, c.cache_bytes, c.own_bytes, c.limit_bytes, c.peak_bytes, c.peak_cache_bytes
            );
        }
    }
    if !b.latency_recorded {
        let _ = writeln!(out, "latency: not recorded");
    }
    if !b.data.is_incompressible() {
        let _ = writeln!(out, "data written: {}", b.data);
    }
    for r in &b.reps {
        if b.reps.len() > 1 {
            let _ = writeln!(out, "\nrepetition {}", r.rep + 1);
        } else {
            out.push('\n');
        }
        rep_table(&mut out, r);
    }
    let s = &b.summary;
    if s.reps > 1 {
        let _ = writeln!(
            out,
            "\n{} repetitions: {:.1} ops/s mean, 95% CI ± {:.1} ({:.2}%), CV {:.2}%, {:.1} MB/s",
            s.reps,
            s.ops_per_sec_mean,
            s.ops_per_sec_ci95.unwrap_or(f64::NAN),
            100.0 * s.ops_per_sec_ci95.unwrap_or(f64::NAN) / s.ops_per_sec_mean,
            100.0 * s.ops_per_sec_cv.unwrap_or(f64::NAN),
            s.mb_per_sec_mean
        );
    }
    if s.reps > 1 && !s.flowops.is_empty() {
        let _ = writeln!(
            out,
            "\nper flowop over {} repetitions: mean ops/s ± 95% CI, mean latency",
            s.reps
        );
        for f in &s.flowops {
            let _ = writeln!(
                out,
                "{:<18} {:>11.1} ± {:<9} {:>9} ms/op",
                f.name,
                f.ops_per_sec_mean,
                f.ops_per_sec_ci95.map_or("-".into(), |c| format!("{c:.1}")),
                ms(f.mean_us)
            );
        }
    }
    let _ = writeln!(
        out,
        "MB/s is 10^6 bytes per second; MiB/s (2^20), Filebench's mb/s, is MB/s x 0.954"
    );
    if let Some(l) = &b.lock_contention {
        out.push('\n');
        out.push_str(&crate::lock_text::render(l, ""));
    }
    if b.interrupted {
        let _ = writeln!(
            out,
            "\ninterrupted: the last repetition holds what was measured until then"
        );
    }
    out
}
