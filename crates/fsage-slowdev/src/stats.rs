//! What a device served: requests and bytes by kind, the latency each request actually got (from
//! its arrival in the daemon to its answer), and the kernel's own count for the loop device.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
#[cfg(feature = "daemon")]
use std::sync::Mutex;

/// The kinds of request the daemon times: the device models' kinds, counted in this order.
#[cfg(feature = "daemon")]
pub(crate) use fsage_device::RqKind as Kind;
#[cfg(feature = "daemon")]
pub(crate) const KINDS: [Kind; 5] = Kind::ALL;

/// The largest read or write FUSE hands the daemon (its `max_write`, and `max_pages` pages for
/// reads): a kernel request larger than this (the loop device takes up to 1,280 KiB) arrives as
/// several.
#[cfg(feature = "daemon")]
pub(crate) const FUSE_MAX_REQUEST: u64 = 1 << 20;

/// Percentiles of a latency distribution, in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl LatencySummary {
    pub(crate) fn of(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        LatencySummary {
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p90_ns: h.value_at_quantile(0.9),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }
}

/// One kind of request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindStats {
    /// `read`, `write`, `flush`, `discard` or `write_zeroes`.
    pub kind: String,
    pub requests: u64,
    pub bytes: u64,
    /// Requests of FUSE's largest size (1 MiB): each may be a piece of a larger kernel request
    /// (so the daemon may count more requests than the kernel, by at most these).
    #[serde(default)]
    pub at_limit: u64,
    /// From arrival in the daemon to the answer sent.
    pub latency: LatencySummary,
    /// How late the answer was against the model's completion time (arrival + delay).
    pub lateness: LatencySummary,
}

/// The kernel's counters for the loop device (`/proc/diskstats`), since it was attached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskStats {
    pub reads: u64,
    pub sectors_read: u64,
    pub writes: u64,
    pub sectors_written: u64,
    pub discards: u64,
    pub sectors_discarded: u64,
    pub flushes: u64,
}

impl DiskStats {
    /// The line of `/proc/diskstats` for `name` (`loop3`), if any.
    pub fn read(name: &str) -> Option<DiskStats> {
        let text = std::fs::read_to_string("/proc/diskstats").ok()?;
        DiskStats::parse(&text, name)
    }

    /// Field by field `self - other`, never below zero.
    pub fn minus(&self, o: &DiskStats) -> DiskStats {
        DiskStats {
            reads: self.reads.saturating_sub(o.reads),
            sectors_read: self.sectors_read.saturating_sub(o.sectors_read),
            writes: self.writes.saturating_sub(o.writes),
            sectors_written: self.sectors_written.saturating_sub(o.sectors_written),
            discards: self.discards.saturating_sub(o.discards),
            sectors_discarded: self.sectors_discarded.saturating_sub(o.sectors_discarded),
            flushes: self.flushes.saturating_sub(o.flushes),
        }
    }

    /// The counters as the kernel would show the daemon's counts: the kernel counts a
    /// write-zeroes request as a write (requests and sectors).
    pub(crate) fn from_kinds(k: &[KindStats]) -> DiskStats {
        let get = |name: &str| {
            k.iter()
                .find(|s| s.kind == name)
                .map_or((0, 0), |s| (s.requests, s.bytes / 512))
        };
        let (w, z) = (get("write"), get("write_zeroes"));
        DiskStats {
            reads: get("read").0,
            sectors_read: get("read").1,
            writes: w.0 + z.0,
            sectors_written: w.1 + z.1,
            discards: get("discard").0,
            sectors_discarded: get("discard").1,
            flushes: get("flush").0,
        }
    }

    pub(crate) fn parse(text: &str, name: &str) -> Option<DiskStats> {
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 14 || f[2] != name {
                continue;
            }
            let n = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            return Some(DiskStats {
                reads: n(3),
                sectors_read: n(5),
                writes: n(7),
                sectors_written: n(9),
                discards: n(14),
                sectors_discarded: n(16),
                flushes: n(18),
            });
        }
        None
    }
}

/// `fsage dev stats`: what the daemon served, and what the kernel counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceStats {
    pub name: String,
    pub device: String,
    pub latencies: crate::Latencies,
    pub bandwidth: Option<u64>,
    pub queue_depth: Option<u32>,
    /// Seconds since the daemon started serving.
    pub uptime_s: f64,
    pub kinds: Vec<KindStats>,
    /// FUSE requests other than the timed kinds (lookup, open, getattr, release...).
    pub other_requests: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// The daemon's spin window before each deadline (ns), adapted to how late timers wake.
    pub spin_window_ns: u64,
    /// `/proc/diskstats` for the loop device, counted from when this device was attached (a
    /// loop device's counters survive detach and reattach; none when the device is gone).
    pub diskstats: Option<DiskStats>,
    /// The device model's name and description, when the device runs one (none: the
    /// latencies above).
    #[serde(default)]
    pub model: Option<ModelInfo>,
    /// Why the daemon is not marked an I/O flusher (`PR_SET_IO_FLUSHER` failed), if it is not:
    /// it may then wait for memory reclaim that waits for its own device.
    #[serde(default)]
    pub io_flusher_error: Option<String>,
    /// What the model's drive state started from and where it is saved (SSD models).
    #[serde(default)]
    pub drive_state: Option<String>,
}

/// A device model as `dev stats` and `dev list` show it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub name: String,
    /// The built model's own description (`hard disk: 7200 rpm, ...`).
    pub description: String,
    /// The model's counters (seeks, cache hits...) since the daemon started or the last reset;
    /// none when a fixed-latency model runs as plain latencies (it keeps no counters).
    pub stats: Option<fsage_device::ModelStats>,
}

impl DeviceStats {
    pub fn kind(&self, kind: &str) -> Option<&KindStats> {
        self.kinds.iter().find(|k| k.kind == kind)
    }

    /// How many more reads and writes the daemon counted than the kernel: pieces of kernel
    /// requests larger than FUSE passes at once (when they agree, see
    /// [`DeviceStats::disagreements`]).
    pub fn pieces(&self) -> (u64, u64) {
        let Some(k) = self.diskstats else {
            return (0, 0);
        };
        let d = DiskStats::from_kinds(&self.kinds);
        (
            d.reads.saturating_sub(k.reads),
            d.writes.saturating_sub(k.writes),
        )
    }

    /// Differences between the daemon's counts and the kernel's, one line each (empty: they
    /// agree). Reads and their bytes must match exactly. The kernel counts a write-zeroes request
    /// as a write; one that may deallocate (no `REQ_NOUNMAP`) reaches the daemon as a hole punch,
    /// exactly as a discard does, and the daemon counts it as a discard: so the kernel's written
    /// sectors may exceed the daemon's by what the daemon counted as discarded beyond the
    /// kernel's discards, and written plus discarded sectors must match exactly. The kernel
    /// counts an fsync of the block device as an empty write plus a flush, so its writes may
    /// exceed the daemon's by at most its flushes (and those hole punches).
    ///
    /// Requests are compared as far as they can be: FUSE hands the daemon at most 1 MiB at a
    /// time, so a larger kernel request (the loop device takes 1,280 KiB) arrives as several,
    /// each but the last of 1 MiB. The daemon may count more reads or writes than the kernel by
    /// at most its requests of 1 MiB ([`KindStats::at_limit`]); sectors match exactly.
    pub fn disagreements(&self) -> Vec<String> {
        let Some(k) = self.diskstats else {
            return vec!["no /proc/diskstats line for the device".into()];
        };
        let d = DiskStats::from_kinds(&self.kinds);
        let split = |kind: &str| self.kind(kind).map_or(0, |s| s.at_limit);
        let mut out = Vec::new();
        if d.reads < k.reads
            || d.reads > k.reads + split("read")
            || d.sectors_read != k.sectors_read
        {
            out.push(format!(
                "reads: daemon {} requests, {} sectors; kernel {} requests, {} sectors",
                d.reads, d.sectors_read, k.reads, k.sectors_read
            ));
        }
        let punched = d.discards.saturating_sub(k.discards);
        let total_agrees =
            d.sectors_written + d.sectors_discarded == k.sectors_written + k.sectors_discarded;
        if !total_agrees
            || k.sectors_written < d.sectors_written
            || d.writes > k.writes + split("write")
            || k.writes > d.writes + k.flushes + punched
        {
            out.push(format!(
                "writes: daemon {} requests, {} sectors (write-zeroes included); kernel {} \
                 requests ({} flushes), {} sectors",
                d.writes, d.sectors_written, k.writes, k.flushes, k.sectors_written
            ));
        }
        if !total_agrees || k.sectors_discarded > d.sectors_discarded {
            out.push(format!(
                "discards: daemon {} sectors; kernel {} sectors",
                d.sectors_discarded, k.sectors_discarded
            ));
        }
        out
    }
}

#[cfg(feature = "daemon")]
struct KindCollector {
    requests: u64,
    bytes: u64,
    at_limit: u64,
    latency: Histogram<u64>,
    lateness: Histogram<u64>,
}

/// The daemon's counters, one lock per kind.
#[cfg(feature = "daemon")]
pub(crate) struct Collector {
    kinds: [Mutex<KindCollector>; 5],
    pub(crate) other: std::sync::atomic::AtomicU64,
    pub(crate) errors: std::sync::atomic::AtomicU64,
}

#[cfg(feature = "daemon")]
fn hist() -> Histogram<u64> {
    // 1 ns to 100 s at 3 significant digits; auto-resize keeps any outlier.
    let mut h = Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds");
    h.auto(true);
    h
}

#[cfg(feature = "daemon")]
impl Collector {
    pub(crate) fn new() -> Collector {
        let k = || {
            Mutex::new(KindCollector {
                requests: 0,
                bytes: 0,
                at_limit: 0,
                latency: hist(),
                lateness: hist(),
            })
        };
        Collector {
            kinds: [k(), k(), k(), k(), k()],
            other: Default::default(),
            errors: Default::default(),
        }
    }

    pub(crate) fn record(&self, kind: Kind, bytes: u64, latency_ns: u64, late_ns: u64) {
        let mut k = self.kinds[kind as usize]
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        k.requests += 1;
        k.bytes += bytes;
        if kind.moves_data() && bytes >= FUSE_MAX_REQUEST {
            k.at_limit += 1;
        }
        let _ = k.latency.record(latency_ns.max(1));
        let _ = k.lateness.record(late_ns.max(1));
    }

    /// Starts counting again (histograms and counts of every kind).
    pub(crate) fn reset(&self) {
        for k in &self.kinds {
            let mut k = k.lock().unwrap_or_else(|e| e.into_inner());
            k.requests = 0;
            k.bytes = 0;
            k.at_limit = 0;
            k.latency.reset();
            k.lateness.reset();
        }
        self.other.store(0, std::sync::atomic::Ordering::Relaxed);
        self.errors.store(0, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn summary(&self) -> Vec<KindStats> {
        KINDS
            .iter()
            .map(|&kind| {
                let k = self.kinds[kind as usize]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                KindStats {
                    kind: kind.name().into(),
                    requests: k.requests,
                    bytes: k.bytes,
                    at_limit: k.at_limit,
                    latency: LatencySummary::of(&k.latency),
                    lateness: LatencySummary::of(&k.lateness),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diskstats_line_parses() {
        let text = "   7       3 loop3 120 0 960 15 40 0 320 9 0 30 24 2 0 16 0 5 1\n\
                    \x20  7       4 loop4 1 0 8 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        let d = DiskStats::parse(text, "loop3").unwrap();
        assert_eq!(d.reads, 120);
        assert_eq!(d.sectors_read, 960);
        assert_eq!(d.writes, 40);
        assert_eq!(d.sectors_written, 320);
        assert_eq!(d.discards, 2);
        assert_eq!(d.flushes, 5);
        assert!(DiskStats::parse(text, "loop9").is_none());
    }

    /// One 1,280 KiB kernel write (as ext4's large folios make them on the loop device) arrives
    /// as a 1 MiB and a 256 KiB FUSE write: the daemon counts two, the kernel one, and they agree;
    /// a third write, or a sector more, does not.
    #[test]
    #[cfg(feature = "daemon")]
    fn a_kernel_request_split_at_fuses_limit_agrees() {
        let c = Collector::new();
        c.record(Kind::Write, 1 << 20, 1_000, 1);
        c.record(Kind::Write, 256 << 10, 1_000, 1);
        c.record(Kind::Read, 1 << 20, 1_000, 1);
        c.record(Kind::Read, 1 << 20, 1_000, 1);
        let kernel = DiskStats {
            reads: 1,
            sectors_read: 4096,
            writes: 1,
            sectors_written: 2560,
            ..Default::default()
        };
        let stats = |kinds: Vec<KindStats>, k: DiskStats| DeviceStats {
            name: "t".into(),
            device: "/dev/loop9".into(),
            latencies: crate::Latencies::uniform(0),
            bandwidth: None,
            queue_depth: None,
            uptime_s: 1.0,
            kinds,
            other_requests: 0,
            errors: 0,
            spin_window_ns: 0,
            diskstats: Some(k),
            model: None,
            io_flusher_error: None,
            drive_state: None,
        };
        let s = stats(c.summary(), kernel);
        assert_eq!(s.kind("write").unwrap().at_limit, 1);
        assert!(s.disagreements().is_empty(), "{:?}", s.disagreements());
        // Three pieces where one could be split off: more than the split explains.
        c.record(Kind::Write, 4096, 1_000, 1);
        let s = stats(
            c.summary(),
            DiskStats {
                sectors_written: 2568,
                ..kernel
            },
        );
        assert!(
            s.disagreements()[0].starts_with("writes"),
            "{:?}",
            s.disagreements()
        );
        // The same requests with a sector missing at the kernel.
        let s = stats(
            c.summary(),
            DiskStats {
                sectors_written: 2567,
                writes: 2,
                ..kernel
            },
        );
        assert!(!s.disagreements().is_empty());
        // Fewer daemon requests than the kernel's is never a split.
        let s = stats(
            c.summary(),
            DiskStats {
                reads: 3,
                sectors_written: 2568,
                writes: 2,
                ..kernel
            },
        );
        assert!(
            s.disagreements()[0].starts_with("reads"),
            "{:?}",
            s.disagreements()
        );
    }

    #[test]
    #[cfg(feature = "daemon")]
    fn collector_summarises() {
        let c = Collector::new();
        for i in 1..=100u64 {
            c.record(Kind::Read, 4096, i * 1000, 10);
        }
        let s = c.summary();
        let r = &s[0];
        assert_eq!(r.requests, 100);
        assert_eq!(r.bytes, 409_600);
        assert!((r.latency.mean_ns - 50_500.0).abs() < 100.0);
        assert!(r.latency.p99_ns >= 98_900 && r.latency.p99_ns <= 100_100);
    }
}
