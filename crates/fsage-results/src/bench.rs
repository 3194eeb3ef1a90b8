//! What a benchmark run gives back: plain serde data, no formatting (exporters live in
//! fsage-report).
//!
//! How every figure is computed:
//! - an operation is one execution of one flowop (`iters=N` counts N); it is counted when it
//!   started after the warmup and completed; an operation that failed with ENOSPC is not counted
//!   as an operation but as an `enospc` of its flowop;
//! - the measured interval runs from the end of the warmup to the completion of the last counted
//!   operation of any thread (so an operation in flight at the deadline is counted, and its time
//!   is in the interval); ops/s = operations / measured interval; MB/s = bytes read and written
//!   by the counted operations / 10^6 / measured interval;
//! - latency is the wall time of one operation (its system calls, and a wait for a free file),
//!   recorded in nanoseconds in one HDR histogram per flowop per thread (3 significant digits),
//!   merged after the run; mean and max are exact;
//! - CPU per operation is the user + system time of all benchmark threads over the measured
//!   interval (getrusage per thread at its first and last counted operation) / operations;
//!   per flowop, it is the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) read around one
//!   operation in 251 of each thread (a prime, so a thread's cycle of flowops is sampled evenly
//!   unless its length is a multiple of 251; two clock reads on every operation would cost more
//!   than the fastest flowops), less the clock reads' own cost, averaged over the samples;
//! - with several repetitions: the mean of the repetitions' ops/s and a 95% confidence interval
//!   from Student's t with reps - 1 degrees of freedom.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OpStats {
    pub ops: u64,
    pub ops_per_sec: f64,
    pub mb_per_sec: f64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Latencies in microseconds; `None` when latency recording was off or nothing was measured.
    pub mean_us: Option<f64>,
    pub p50_us: Option<f64>,
    pub p90_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub p999_us: Option<f64>,
    pub max_us: Option<f64>,
    /// Operations the file system refused with ENOSPC (not counted in `ops`).
    pub enospc: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowopResult {
    /// The flowop's `name=`.
    pub name: String,
    /// Its type (`createfile`, `read`, ...).
    pub kind: String,
    /// The thread definition it belongs to.
    pub thread: String,
    pub stats: OpStats,
    /// CPU time (user + system) per operation of this flowop, from a sample of its operations
    /// (see the module documentation); `None` without latency recording or without a sample.
    #[serde(default)]
    pub cpu_us_per_op: Option<f64>,
    /// How many operations the CPU time was measured on.
    #[serde(default)]
    pub cpu_samples: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepResult {
    pub rep: u32,
    /// The seed of this repetition's thread choices.
    pub seed: u64,
    pub threads: u64,
    pub warmup_secs: f64,
    /// The measured interval (see the module documentation).
    pub measured_secs: f64,
    pub flowops: Vec<FlowopResult>,
    pub overall: OpStats,
    pub cpu_us_per_op: Option<f64>,
    pub interrupted: bool,
    /// Why the repetition ended before its time: a finish reached or a fileset used up
    /// (`None`: at its time or operation count).
    #[serde(default)]
    pub done: Option<String>,
    /// CPU utilization, the device's requests in flight and operations per interval, when the
    /// run was sampled (`bench run --sample`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub reps: u32,
    pub ops_per_sec_mean: f64,
    /// Half-width of the 95% confidence interval of the mean ops/s (`None` for one repetition).
    pub ops_per_sec_ci95: Option<f64>,
    /// Standard deviation / mean of ops/s across repetitions.
    pub ops_per_sec_cv: Option<f64>,
    pub mb_per_sec_mean: f64,
    /// Each flowop across the repetitions (thread, name): mean ops/s and its 95% interval.
    #[serde(default)]
    pub flowops: Vec<FlowopSummary>,
}

/// One flowop's ops/s over the repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowopSummary {
    pub thread: String,
    pub name: String,
    pub kind: String,
    pub ops_per_sec_mean: f64,
    pub ops_per_sec_ci95: Option<f64>,
    /// Mean latency over the repetitions (the mean of their means), in µs.
    pub mean_us: Option<f64>,
    pub p99_us_mean: Option<f64>,
}

fn mean_ci(xs: &[f64]) -> (f64, Option<f64>) {
    let n = xs.len();
    if n == 0 {
        return (0.0, None);
    }
    let mean = xs.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, None);
    }
    let sd = (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
    (mean, Some(t95(n as u32 - 1) * sd / (n as f64).sqrt()))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheLimit {
    /// "v1" or "v2".
    pub cgroup: String,
    pub ratio: f64,
    /// Bytes of the fileset if every entry existed (the ratio's base).
    pub fileset_bytes: u64,
    /// The page-cache share: ratio × fileset bytes.
    pub cache_bytes: u64,
    /// The benchmark's own memory when its threads were ready (buffers, stacks, histograms),
    /// which the cgroup also charges, plus a 16 MiB margin.
    pub own_bytes: u64,
    /// The limit set: cache_bytes + own_bytes.
    pub limit_bytes: u64,
    /// The cgroup's peak usage once the limit was set (v1: memory.max_usage_in_bytes, reset when
    /// the limit is set; v2: the largest memory.current sampled every 200 ms).
    pub peak_bytes: u64,
    /// The largest page cache of the cgroup seen (sampled every 200 ms).
    pub peak_cache_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub fsage_version: String,
    pub kernel: String,
    /// Where it ran: absent (native) unless in a VM, whose timings compare only with the same
    /// platform's (`tcg`: emulated).
    #[serde(default, skip_serializing_if = "fsage_sys::PlatformKind::is_native")]
    pub platform: fsage_sys::PlatformKind,
    pub target: String,
    /// The file system type of the target.
    pub target_fs: String,
    pub seed: u64,
    pub cpus: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub workload: String,
    /// The workload as run, as `.f` text (overrides applied).
    pub workload_text: String,
    /// `duration` or `ops`, and its value.
    pub stop: String,
    pub environment: Environment,
    /// `None`: the page cache was not limited.
    pub cache_limit: Option<CacheLimit>,
    pub drop_caches: bool,
    pub latency_recorded: bool,
    /// What the written bytes held (`bench run --data`; results written before the choice
    /// wrote incompressible data).
    #[serde(default)]
    pub data: fsage_plan::DataPattern,
    pub reps: Vec<RepResult>,
    pub summary: Summary,
    /// Ctrl-C (or SIGTERM) ended the run: the last repetition holds what was measured until then.
    pub interrupted: bool,
    /// Lock contention by lock instance over the measured phase, when asked for (an
    /// experiment's `lock_stats = true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lock_contention: Option<crate::locks::LockReport>,
}

/// Two-sided 95% Student t quantile for `df` degrees of freedom.
pub fn t95(df: u32) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df as usize - 1],
        _ => 1.96 + 2.4 / df as f64,
    }
}

impl Summary {
    pub fn of(reps: &[RepResult]) -> Summary {
        let xs: Vec<f64> = reps.iter().map(|r| r.overall.ops_per_sec).collect();
        let n = xs.len();
        let mean = if n == 0 {
            0.0
        } else {
            xs.iter().sum::<f64>() / n as f64
        };
        let mb = if n == 0 {
            0.0
        } else {
            reps.iter().map(|r| r.overall.mb_per_sec).sum::<f64>() / n as f64
        };
        let (ci, cv) = if n >= 2 {
            let sd =
                (xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1) as f64).sqrt();
            (
                Some(t95(n as u32 - 1) * sd / (n as f64).sqrt()),
                (mean > 0.0).then_some(sd / mean),
            )
        } else {
            (None, None)
        };
        let mut flowops = Vec::new();
        if let Some(first) = reps.first() {
            for f in &first.flowops {
                let same: Vec<&FlowopResult> = reps
                    .iter()
                    .filter_map(|r| {
                        r.flowops
                            .iter()
                            .find(|x| x.thread == f.thread && x.name == f.name)
                    })
                    .collect();
                let rates: Vec<f64> = same.iter().map(|x| x.stats.ops_per_sec).collect();
                let (m, ci) = mean_ci(&rates);
                let avg = |g: &dyn Fn(&OpStats) -> Option<f64>| {
                    let v: Vec<f64> = same.iter().filter_map(|x| g(&x.stats)).collect();
                    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
                };
                flowops.push(FlowopSummary {
                    thread: f.thread.clone(),
                    name: f.name.clone(),
                    kind: f.kind.clone(),
                    ops_per_sec_mean: m,
                    ops_per_sec_ci95: ci,
                    mean_us: avg(&|s| s.mean_us),
                    p99_us_mean: avg(&|s| s.p99_us),
                });
            }
        }
        Summary {
            flowops,
            reps: n as u32,
            ops_per_sec_mean: mean,
            ops_per_sec_ci95: ci,
            ops_per_sec_cv: cv,
            mb_per_sec_mean: mb,
        }
    }
}

/// One interval of a repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// The interval's end, in seconds since the repetition's threads started (warmup included).
    pub t_secs: f64,
    /// Operations per second over the interval (all threads).
    pub ops_per_sec: f64,
    /// Shares of all CPUs' time over the interval, in percent: user (with nice), system (with
    /// irq and softirq), iowait, idle, and steal (a VM's host took it).
    pub cpu_user: f64,
    pub cpu_system: f64,
    pub cpu_iowait: f64,
    pub cpu_idle: f64,
    #[serde(default)]
    pub cpu_steal: f64,
    /// The device's average requests in flight over the interval (its weighted time in queue
    /// over the interval), when the target's device is known.
    pub in_flight: Option<f64>,
    /// The share of the interval the device had at least one request, in percent.
    pub device_busy: Option<f64>,
    /// Requests the device completed per second (reads and writes).
    pub device_iops: Option<f64>,
}

/// One contended lock from `/proc/lock_stat`, over the repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockContention {
    pub name: String,
    pub contentions: u64,
    /// Total time waited, in microseconds.
    pub wait_total_us: f64,
}

/// A repetition's time series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timeline {
    pub interval_secs: f64,
    /// The block device whose requests are counted (`/dev/loop3`), or why none is.
    pub device: Option<String>,
    #[serde(default)]
    pub device_note: Option<String>,
    pub cpus: usize,
    pub points: Vec<TimelinePoint>,
    /// The most contended locks during the repetition (when the kernel has lock statistics).
    #[serde(default)]
    pub locks: Vec<LockContention>,
    /// Why there are no lock statistics, when there are none.
    #[serde(default)]
    pub locks_note: Option<String>,
}
