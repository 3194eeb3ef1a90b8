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

/// A model's counters: busy time and where it went, and its caches (two lines).
pub(crate) fn model_stats(st: &ModelStats) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "device     busy {:.3} s: seeks {} ({:.3} s), rotation {:.3} s, transfer {:.3} s",
        st.busy_ns as f64 / 1e9,
        st.seeks,
        st.seek_ns as f64 / 1e9,
        st.rotation_ns as f64 / 1e9,
        st.transfer_ns as f64 / 1e9
    );
    let _ = writeln!(
        s,
        "cache      {} read hits, {} writes cached, {} write-backs",
        st.read_hits, st.cached_writes, st.write_backs
    );
    if st.host_pages > 0 || st.flash_reads > 0 || st.erases > 0 {
        let _ = writeln!(
            s,
            "flash      {} page reads, {} programs for {} host pages (write amplification {}), \
             {} copied by garbage collection ({:.3} s), {} erases, {} free blocks",
            st.flash_reads,
            st.programs,
            st.host_pages,
            st.write_amplification()
                .map_or("-".into(), |w| format!("{w:.2}")),
            st.gc_copies,
            st.gc_ns as f64 / 1e9,
            st.erases,
            st.free_blocks
        );
    }
    s + &ssd_reads(st)
}

/// An SSD's reads: their sizes, how much flash and how many dies each needed, where pages
/// waited for their dies, and the pages served without a flash read of their own (three lines;
/// none for a model that counts none of it).
pub(crate) fn ssd_reads(st: &ModelStats) -> String {
    let mut s = String::new();
    if st.read_bytes == 0 && st.host_flash_reads == 0 && st.unwritten_reads == 0 {
        return s;
    }
    let per = |x: u64| {
        if st.reads == 0 {
            "-".to_string()
        } else {
            format!("{:.2}", x as f64 / st.reads as f64)
        }
    };
    let limits = fsage_device::ReadSizes::LIMITS_KIB;
    let sizes: Vec<String> = st
        .read_sizes
        .0
        .iter()
        .enumerate()
        .map(|(i, n)| match limits.get(i) {
            Some(k) => format!("{n} ≤{k}K"),
            None => format!("{n} more"),
        })
        .collect();
    let _ = writeln!(
        s,
        "reads      {} host reads, mean {} ({}); {} flash page reads and {} dies per read",
        st.reads,
        st.mean_read_bytes()
            .map_or("-".into(), |b| format_size(b.round() as u64)),
        sizes.join(", "),
        per(st.host_flash_reads),
        per(st.read_dies)
    );
    let _ = writeln!(
        s,
        "die waits  {} page reads waited for a die busy with the same read, {} for one busy with \
         another request ({:.3} s in all)",
        st.die_waits_same,
        st.die_waits_other,
        st.die_wait_ns as f64 / 1e9
    );
    let _ = writeln!(
        s,
        "pages      {} never written by the drive's history, {} discarded (zeros), {} from the \
         write buffer",
        st.unwritten_reads, st.discarded_reads, st.buffer_reads
    );
    s
}
