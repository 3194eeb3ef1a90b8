//! Device models and trace costs as a terminal shows them (`fsage dev models`, `dev cost`).

use fsage_device::{CostReport, Dist, ModelSpec, ModelStats};
use fsage_units::{format_duration, format_latency, format_size};
use std::fmt::Write;

/// Every built-in model: its description and each parameter with its value and source.
pub fn models(specs: &[ModelSpec]) -> String {
    let mut s = String::new();
    for m in specs {
        let _ = writeln!(s, "{}  {}", m.name, m.description);
        let width = m.params.keys().map(|k| k.len()).max().unwrap_or(0);
        for (k, p) in &m.params {
            let v = match &p.value {
                toml::Value::String(t) => t.clone(),
                other => other.to_string(),
            };
            let _ = writeln!(s, "  {k:width$}  {v:>9}  {}", p.source);
        }
        s.push('\n');
    }
    s
}

/// An SSD model's write amplification under random overwrites (`fsage dev wa`).
pub fn write_amplification(r: &fsage_device::sim::WaReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "{}: {}", r.model, r.describe);
    let _ = writeln!(
        s,
        "device {}, span {} ({:.1}%), FTL pools {} of {} blocks, dies {}",
        format_size(r.device_bytes),
        format_size(r.span_bytes),
        100.0 * r.span_bytes as f64 / r.device_bytes as f64,
        r.pools,
        r.blocks_per_pool,
        r.dies
    );
    let o = &r.options;
    let _ = writeln!(
        s,
        "span written in order, {} spans of random 4 KiB overwrites, then {} measured at \
         depth {} (seed {})",
        o.warm, o.measured, o.queue_depth, o.seed
    );
    let _ = writeln!(
        s,
        "write amplification {:.3} ({} programs for {} host pages; greedy analytic {:.2}), \
         {} erases",
        r.write_amplification, r.programs, r.host_pages, r.analytic, r.erases
    );
    let _ = writeln!(
        s,
        "simulated {}: {:.0} IOPS, mean latency {}",
        format_duration(r.simulated_ns as f64 / 1e9),
        r.iops,
        format_latency(r.mean_latency_ns.round() as u64)
    );
    s
}

/// A model's read curve (`fsage dev read-curve`).
pub fn read_curve(points: &[fsage_device::sim::ReadPoint]) -> String {
    let mut s = String::from("read size   reads   mean time    MB/s\n");
    for p in points {
        let _ = writeln!(
            s,
            "{:>9} {:>7} {:>11} {:>7.1}",
            format_size(p.bytes),
            p.reads,
            format_latency(p.mean_ns.round() as u64),
            p.rate / 1e6
        );
    }
    s
}

/// A latency to three significant digits (distributions, not exact values).
fn short(ns: u64) -> String {
    let digits = (ns.max(1) as f64).log10().floor() as u32;
    let step = 10u64.pow(digits.saturating_sub(2));
    format_latency((ns + step / 2) / step * step)
}

fn dist(d: &Dist) -> String {
    format!(
        "mean {}, p50 {}, p90 {}, p99 {}, max {}",
        short(d.mean_ns.round() as u64),
        short(d.p50_ns),
        short(d.p90_ns),
        short(d.p99_ns),
        short(d.max_ns)
    )
}

/// A trace's cost on a model.
pub fn cost(r: &CostReport) -> String {
    let mut s = String::new();
    let secs = |ns: u64| format_duration(ns as f64 / 1e9);
    let _ = writeln!(s, "model      {}", r.model);
    let _ = writeln!(
        s,
        "requests   {} ({} read, {} written)",
        r.requests,
        format_size(r.bytes_read),
        format_size(r.bytes_written)
    );
    let _ = writeln!(
        s,
        "time       {} on the model ({:.3} s), {} as recorded ({:.3} s){}",
        secs(r.total_ns),
        r.total_ns as f64 / 1e9,
        secs(r.recorded_ns),
        r.recorded_ns as f64 / 1e9,
        if r.closed_loop {
            ""
        } else {
            "; the trace has no completions: issue gaps kept (open loop)"
        }
    );
    if r.host_path_ns > 0 {
        let _ = writeln!(
            s,
            "host path  {} added to every completion the issuer sees",
            format_latency(r.host_path_ns)
        );
    }
    let _ = writeln!(
        s,
        "think      {} ({} in all, before {} of the requests{})",
        r.think,
        secs(r.think_ns),
        r.waited,
        r.median_think_ns.map_or(String::new(), |m| format!(
            "; the trace's median recorded think time {}",
            format_latency(m)
        ))
    );
    let _ = writeln!(s, "response   {}", dist(&r.response));
    if let Some(d) = &r.drive {
        let _ = writeln!(
            s,
            "drive      {d}; pages it never saw written read {}",
            match r.unwritten {
                fsage_device::UnwrittenReads::LbaOrder =>
                    "as data written in logical order from erased (lba-order)",
                fsage_device::UnwrittenReads::Free => "as zeros without flash (free)",
            }
        );
    }
    s + &model_stats(&r.stats)
}

/// A model's counters, whatever its kind: one line per group of counters (a hard disk's `disk`
/// and `cache`, an SSD's `flash` and `collection`), each counter by its own name.
pub(crate) fn model_stats(st: &ModelStats) -> String {
    let mut s = String::new();
    let counters = st.counters();
    let mut i = 0;
    while i < counters.len() {
        let group = counters[i].group;
        let line: Vec<String> = counters[i..]
            .iter()
            .take_while(|c| c.group == group)
            .map(|c| format!("{} {}", c.label, c.value.human()))
            .collect();
        i += line.len();
        let _ = writeln!(s, "{group:<10} {}", line.join(", "));
    }
    s
}
