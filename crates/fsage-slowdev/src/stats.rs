//! What a device served: requests and bytes by kind, the latency each request actually got (from
//! its arrival in the daemon to its answer), and the kernel's own count for the loop device.

pub use fsage_results::slowdev::{DeviceStats, DiskStats, KindStats, LatencySummary, ModelInfo};
#[cfg(feature = "daemon")]
use hdrhistogram::Histogram;

/// The line of `/proc/diskstats` for `name` (`loop3`), if any.
#[cfg(feature = "daemon")]
pub(crate) fn read_diskstats(name: &str) -> Option<DiskStats> {
    let text = std::fs::read_to_string("/proc/diskstats").ok()?;
    DiskStats::parse(&text, name)
}
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
