//! The human forms of `fsage dev list`, `dev stats` and `dev bench` (Markdown tables).

use crate::human_bytes;
use fsage_results::slowdev::BenchReport;
use fsage_results::slowdev::{DeviceInfo, DeviceStats, LatencySummary, Measurement};
use fsage_units::{format_bandwidth, format_latency};
use std::fmt::Write as _;

fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

fn lat_cell(l: &fsage_results::slowdev::Latencies) -> String {
    if l.read_ns == l.write_ns && l.write_ns == l.flush_ns {
        format_latency(l.read_ns)
    } else {
        format!(
            "r {} w {} f {}",
            format_latency(l.read_ns),
            format_latency(l.write_ns),
            format_latency(l.flush_ns)
        )
    }
}

pub fn list(devs: &[DeviceInfo]) -> String {
    if devs.is_empty() {
        return "no devices (fsage dev create makes one)\n".into();
    }
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<6} {:<12} {:<22} {:>9} {:>5} {:>10} {:<8} backing file",
        "name", "device", "latency", "bandwidth", "qd", "requests", "state"
    );
    for d in devs {
        let r = &d.record;
        let state = if !d.alive {
            "dead".to_string()
        } else if d.mounted_on.is_empty() {
            "up".to_string()
        } else {
            "mounted".to_string()
        };
        let _ = writeln!(
            o,
            "{:<6} {:<12} {:<22} {:>9} {:>5} {:>10} {:<8} {} ({})",
            r.name,
            r.device
                .as_deref()
                .map_or("-".into(), |p| p.display().to_string()),
            timing_cell(r),
            r.bandwidth
                .map_or("-".into(), |b| format_bandwidth(b as f64)),
            r.queue_depth.map_or("-".into(), |q| q.to_string()),
            d.requests.map_or("-".into(), |n| n.to_string()),
            state,
            r.backing_file.display(),
            human_bytes(r.size)
        );
        for m in &d.mounted_on {
            let _ = writeln!(o, "       mounted on {}", m.display());
        }
        if let Some(st) = &d.model_stats {
            let _ = writeln!(o, "       model: {}", st.brief());
        }
        if let Some(e) = &r.io_flusher_error {
            let _ = writeln!(o, "       not an I/O flusher: {e}");
        }
    }
    o
}

/// The latency column of `dev list`: the model's name, or the latencies.
fn timing_cell(r: &fsage_results::slowdev::DeviceRecord) -> String {
    match &r.model {
        Some(m) => m.name.clone(),
        None => lat_cell(&r.latencies),
    }
}

fn summary_cells(l: &LatencySummary) -> String {
    format!(
        "{} | {} | {} | {} | {}",
        us(l.mean_ns),
        us(l.p50_ns as f64),
        us(l.p99_ns as f64),
        us(l.p999_ns as f64),
        us(l.max_ns as f64)
    )
}

pub fn stats(s: &DeviceStats) -> String {
    let mut o = String::new();
    match s.model.as_ref().filter(|m| m.stats.is_some()) {
        Some(m) => {
            let _ = writeln!(
                o,
                "device {} ({}), model {} ({}), up {:.1}s",
                s.device, s.name, m.name, m.description, s.uptime_s
            );
        }
        None => {
            let _ = writeln!(
                o,
                "device {} ({}), {}latency {}, bandwidth {}, queue depth {}, up {:.1}s",
                s.device,
                s.name,
                s.model
                    .as_ref()
                    .map_or(String::new(), |m| format!("model {}: ", m.name)),
                lat_cell(&s.latencies),
                s.bandwidth
                    .map_or("unlimited".into(), |b| format_bandwidth(b as f64)),
                s.queue_depth.map_or("unlimited".into(), |q| q.to_string()),
                s.uptime_s
            );
        }
    }
    let _ = writeln!(
        o,
        "\n| kind | requests | bytes | mean µs | p50 µs | p99 µs | p99.9 µs | max µs | late p99 µs |"
    );
    let _ = writeln!(
        o,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for k in &s.kinds {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            k.kind,
            k.requests,
            human_bytes(k.bytes),
            summary_cells(&k.latency),
            us(k.lateness.p99_ns as f64)
        );
    }
    let _ = writeln!(
        o,
        "\nlatency: from the request's arrival in the daemon to its answer; late: after the \
         model's completion time. Other FUSE requests {}, errors {}, spin window {} µs.",
        s.other_requests,
        s.errors,
        us(s.spin_window_ns as f64)
    );
    if let Some(st) = s.model.as_ref().and_then(|m| m.stats.as_ref()) {
        o += "\nmodel's own counters:\n";
        o += &crate::device_text::model_stats(st);
    }
    if let Some(d) = &s.drive_state {
        let _ = writeln!(o, "drive state: {d}");
    }
    if let Some(e) = &s.io_flusher_error {
        let _ = writeln!(
            o,
            "not an I/O flusher ({e}): under memory pressure the daemon may wait for reclaim \
             that waits for this device"
        );
    }
    match &s.diskstats {
        Some(d) => {
            let _ = writeln!(
                o,
                "kernel (/proc/diskstats since attach): {} reads ({} sectors), {} writes ({} \
                 sectors), {} discards ({} sectors), {} flushes",
                d.reads,
                d.sectors_read,
                d.writes,
                d.sectors_written,
                d.discards,
                d.sectors_discarded,
                d.flushes
            );
            let dis = s.disagreements();
            if dis.is_empty() {
                let _ = write!(o, "daemon and kernel agree");
                match s.pieces() {
                    (0, 0) => o.push('\n'),
                    (r, w) => {
                        let _ = writeln!(
                            o,
                            " (the daemon's {r} more reads and {w} more writes are pieces of \
                             kernel requests over FUSE's 1 MiB)"
                        );
                    }
                }
            } else {
                for l in dis {
                    let _ = writeln!(o, "DISAGREE: {l}");
                }
            }
        }
        None => {
            let _ = writeln!(o, "kernel: no /proc/diskstats line for {}", s.device);
        }
    }
    o
}

fn mrow(o: &mut String, what: &str, m: &Measurement) {
    let _ = writeln!(
        o,
        "| {what} | {} | {} | {:.0} | {} |",
        m.pattern.name(),
        m.queue_depth,
        m.iops,
        summary_cells(&m.latency)
    );
}

pub fn bench(r: &BenchReport) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Image {} in /dev/shm; measuring threads {}; load average {:.1} before, {:.1} after.\n",
        human_bytes(r.size),
        if r.realtime_measurement {
            "SCHED_FIFO"
        } else {
            "normal priority"
        },
        r.load_before,
        r.load_after
    );
    let _ = writeln!(o, "Floor (4 KiB, QD1):\n");
    let _ = writeln!(
        o,
        "| device | pattern | QD | IOPS | mean µs | p50 µs | p99 µs | p99.9 µs | max µs |"
    );
    let _ = writeln!(
        o,
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for m in &r.plain {
        mrow(&mut o, "plain loop (dio)", m);
    }
    for m in &r.floor {
        mrow(&mut o, "slow device at 0", m);
    }
    let _ = writeln!(o, "\nSequential 1 MiB, QD4:\n");
    let _ = writeln!(o, "| device | pattern | MiB/s |");
    let _ = writeln!(o, "| --- | --- | ---: |");
    for (what, ms) in [
        ("plain loop (dio)", &r.seq_plain),
        ("slow device at 0", &r.seq_floor),
    ] {
        for m in ms {
            let _ = writeln!(
                o,
                "| {what} | {} | {:.0} |",
                m.pattern.name(),
                m.throughput / 1048576.0
            );
        }
    }
    let _ = writeln!(
        o,
        "\nAccuracy (4 KiB, QD1; added mean = mean minus the floor's mean; p99 shift = p99 minus \
         the floor's p99; target: added mean within 2% or 2 µs of the setting, p99 shift within \
         10% or 10 µs; the last column, p99 minus the floor's p50, also holds the floor's own \
         jitter):\n"
    );
    let _ = writeln!(
        o,
        "| setting | pattern | mean µs | added mean µs | error | p99 µs | p99 shift µs | error | target met | p99 − floor p50 µs |"
    );
    let _ = writeln!(
        o,
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |"
    );
    for a in &r.accuracy {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {:+.1}% | {} | {} | {:+.1}% | {} | {} |",
            format_latency(a.setting_ns),
            a.pattern.name(),
            us(a.measured.latency.mean_ns),
            us(a.added_mean_ns),
            a.mean_error * 100.0,
            us(a.measured.latency.p99_ns as f64),
            us(a.p99_shift_ns),
            a.p99_error * 100.0,
            if a.within_target { "yes" } else { "no" },
            us(a.added_p99_ns),
        );
    }
    let _ = writeln!(
        o,
        "\nThe same requests as the daemon timed them (arrival in the daemon to its answer; late: \
         after the model's completion time):\n"
    );
    let _ = writeln!(
        o,
        "| setting | pattern | daemon mean µs | error | daemon p99 µs | error | late p50 µs | late p99 µs |"
    );
    let _ = writeln!(
        o,
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for a in &r.accuracy {
        let s = a.setting_ns as f64;
        let err = |v: f64| if s == 0.0 { 0.0 } else { (v - s) / s * 100.0 };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:+.2}% | {} | {:+.2}% | {} | {} |",
            format_latency(a.setting_ns),
            a.pattern.name(),
            us(a.daemon.mean_ns),
            err(a.daemon.mean_ns),
            us(a.daemon.p99_ns as f64),
            err(a.daemon.p99_ns as f64),
            us(a.daemon_late.p50_ns as f64),
            us(a.daemon_late.p99_ns as f64)
        );
    }
    let _ = writeln!(o, "\nParallelism (4 KiB random reads at 1 ms, QD16):\n");
    let _ = writeln!(
        o,
        "| device queue depth | IOPS | target | mean µs | p99 µs |"
    );
    let _ = writeln!(o, "| --- | ---: | --- | ---: | ---: |");
    let _ = writeln!(
        o,
        "| unlimited | {:.0} | ≥ 12,800 ({}) | {} | {} |",
        r.parallel.iops,
        if r.parallel.iops >= 12_800.0 {
            "met"
        } else {
            "missed"
        },
        us(r.parallel.latency.mean_ns),
        us(r.parallel.latency.p99_ns as f64)
    );
    let _ = writeln!(
        o,
        "| 4 | {:.0} | ≤ 4,000 ({}) | {} | {} |",
        r.parallel_qd4.iops,
        if r.parallel_qd4.iops <= 4_000.0 {
            "met"
        } else {
            "missed"
        },
        us(r.parallel_qd4.latency.mean_ns),
        us(r.parallel_qd4.latency.p99_ns as f64)
    );
    o
}
