//! What the slow device reports: how a device was made (`device.json`), what `dev list` and `dev
//! stats` show, what an application measured on it and `dev bench`'s report. Plain serde data;
//! fsage-slowdev makes them and re-exports them where they always were.

use fsage_device::{FixedParams, ModelSpec, ModelStats, UnwrittenReads};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Per-request latencies in nanoseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Latencies {
    pub read_ns: u64,
    pub write_ns: u64,
    /// A flush (fsync reaching the device).
    pub flush_ns: u64,
}

impl Latencies {
    /// The same latency for reads, writes and flushes.
    pub fn uniform(ns: u64) -> Latencies {
        Latencies {
            read_ns: ns,
            write_ns: ns,
            flush_ns: ns,
        }
    }
}

/// `device.json`: how a device was made and where its parts are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    /// `sd0`, `sd1`...: the name of the device's directory.
    pub name: String,
    /// The block device, once the daemon has attached it.
    pub device: Option<PathBuf>,
    /// The daemon's process id, once it runs.
    pub daemon_pid: Option<u32>,
    pub fuse_mountpoint: PathBuf,
    pub backing_file: PathBuf,
    /// A scratch file fsage made, removed by destroy.
    pub remove_backing: bool,
    pub size: u64,
    pub latencies: Latencies,
    pub bandwidth: Option<u64>,
    pub queue_depth: Option<u32>,
    pub threads: usize,
    /// The daemon's threads run `SCHED_FIFO`.
    #[serde(default)]
    pub realtime: bool,
    /// Seconds since the Unix epoch.
    pub created_unix: u64,
    /// The device model it runs (none: the latencies, bandwidth and queue depth above; a
    /// fixed-latency model is also written there).
    #[serde(default)]
    pub model: Option<ModelSpec>,
    /// Every request of the model goes through the model thread (tests of that path).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub model_thread: bool,
    /// Why the daemon is not marked an I/O flusher (`PR_SET_IO_FLUSHER` failed), if it is not.
    #[serde(default)]
    pub io_flusher_error: Option<String>,
    /// Where the model's drive state (an SSD's FTL) is kept between devices: `IMAGE.ftl` beside
    /// a kept image; none for a scratch image or a model without state.
    #[serde(default)]
    pub state_file: Option<PathBuf>,
    /// The drive state was loaded from `state_file` (else the drive started fresh), and why.
    #[serde(default)]
    pub state_note: Option<String>,
    /// How the model reads pages its drive never saw written, when not its own rule (free).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwritten_reads: Option<UnwrittenReads>,
}

impl DeviceRecord {
    /// Does the device's timing need the daemon's model thread (a model whose kind does not
    /// answer every request at its arrival, or every answer sent through it for a test), rather
    /// than the fast path a fixed latency takes?
    pub fn model_runs_in_thread(&self) -> bool {
        match &self.model {
            Some(m) => self.model_thread || !m.capabilities().answers_at_arrival,
            None => false,
        }
    }

    /// The model the device runs: its own, or the fixed-latency model of its latencies,
    /// bandwidth and queue depth (a device made with `--latency`, or changed by `dev set`).
    pub fn model_spec(&self) -> ModelSpec {
        match &self.model {
            Some(m) => m.clone(),
            None => ModelSpec::fixed_with(FixedParams {
                read_ns: self.latencies.read_ns,
                write_ns: self.latencies.write_ns,
                flush_ns: self.latencies.flush_ns,
                bandwidth: self.bandwidth,
                queue_depth: self.queue_depth,
            }),
        }
    }
}

/// A device as `fsage dev list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceInfo {
    #[serde(flatten)]
    pub record: DeviceRecord,
    /// Is the daemon running?
    pub alive: bool,
    /// Where the block device is mounted.
    pub mounted_on: Vec<PathBuf>,
    /// Reads, writes, flushes, discards and write-zeroes served (none when the daemon does not
    /// answer).
    pub requests: Option<u64>,
    /// The model's counters (seeks, cache hits...), for a device whose model runs in the daemon.
    pub model_stats: Option<ModelStats>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    RandRead,
    RandWrite,
    /// Sequential reads, each thread in its own stretch of the device.
    SeqRead,
    SeqWrite,
}

impl Pattern {
    pub fn name(self) -> &'static str {
        match self {
            Pattern::RandRead => "randread",
            Pattern::RandWrite => "randwrite",
            Pattern::SeqRead => "read",
            Pattern::SeqWrite => "write",
        }
    }
    pub fn writes(self) -> bool {
        matches!(self, Pattern::RandWrite | Pattern::SeqWrite)
    }
}

/// What an application saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    pub pattern: Pattern,
    pub block_size: usize,
    pub queue_depth: usize,
    pub ops: u64,
    pub seconds: f64,
    pub iops: f64,
    /// Bytes per second.
    pub throughput: f64,
    pub latency: LatencySummary,
}

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
    pub fn of(h: &Histogram<u64>) -> LatencySummary {
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
    pub fn from_kinds(k: &[KindStats]) -> DiskStats {
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

    /// The line of `/proc/diskstats` text for `name` (`loop3`), if any.
    pub fn parse(text: &str, name: &str) -> Option<DiskStats> {
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
    pub latencies: Latencies,
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
    pub stats: Option<ModelStats>,
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

/// One row of the accuracy table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccuracyRow {
    pub setting_ns: u64,
    pub pattern: Pattern,
    pub measured: Measurement,
    /// Mean latency minus the floor's mean.
    pub added_mean_ns: f64,
    /// (added mean - setting) / setting; 0 for the 0 setting.
    pub mean_error: f64,
    /// p99 minus the floor's p99: how far the device moved the tail. A delay that adds exactly
    /// the setting to every request moves every percentile by the setting, so this is what the
    /// issue's "p99 within 10%" is checked on.
    pub p99_shift_ns: f64,
    /// (p99 shift - setting) / setting; 0 for the 0 setting.
    pub p99_error: f64,
    /// p99 minus the floor's p50: the tail added over a typical floor request, which also holds
    /// the floor's own jitter (its p99 minus its p50, some 17 us here) at every setting.
    pub added_p99_ns: f64,
    /// Within 2% (or 2 us) for the mean and 10% (or 10 us) for the p99 shift.
    pub within_target: bool,
    /// The same requests as the daemon timed them (arrival to answer): the emulator's own
    /// precision, without the kernel's path and scheduling.
    pub daemon: LatencySummary,
    /// How late the daemon's answers were against the model's completion time.
    pub daemon_late: LatencySummary,
}

/// `fsage dev bench`'s result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub size: u64,
    pub realtime_measurement: bool,
    /// 1-minute load average when the run started and ended.
    pub load_before: f64,
    pub load_after: f64,
    /// 4 KiB random reads and writes, QD1, on a plain direct-I/O loop device over the image.
    pub plain: Vec<Measurement>,
    /// The same on the slow device at 0 latency.
    pub floor: Vec<Measurement>,
    /// Sequential 1 MiB reads and writes, QD4: plain loop device, then slow device at 0.
    pub seq_plain: Vec<Measurement>,
    pub seq_floor: Vec<Measurement>,
    pub accuracy: Vec<AccuracyRow>,
    /// 4 KiB random reads at 1 ms, QD16.
    pub parallel: Measurement,
    /// The same with a device queue depth of 4.
    pub parallel_qd4: Measurement,
}
