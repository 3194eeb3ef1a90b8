//! The device's own benchmark (`fsage dev bench`): the floor against a plain direct-I/O loop
//! device on the same image, accuracy at queue depth 1 over a range of latencies, sequential
//! throughput at 0 latency, and parallelism at 1 ms (queue depth 16, with and without a device
//! queue depth of 4).

use crate::measure::{measure, MeasureSpec, Pattern};
use crate::{Backing, DeviceSpec, Error, Latencies, Result, SlowDevice};
pub use fsage_results::slowdev::{AccuracyRow, BenchReport};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    /// Size of the scratch image in /dev/shm.
    pub size: u64,
    /// Time per measurement at queue depth 1 (the 10 ms point gets at least 3 s).
    pub duration: Duration,
    /// Latencies of the accuracy table, in nanoseconds.
    pub latencies: Vec<u64>,
    /// Measuring threads run `SCHED_FIFO`.
    pub realtime: bool,
    pub registry: PathBuf,
    pub daemon_cmd: Option<Vec<OsString>>,
}

fn load() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0.0)
}

/// Runs the benchmark; `progress` hears one line per step.
pub fn run(spec: &BenchSpec, progress: &mut dyn FnMut(&str)) -> Result<BenchReport> {
    if spec.latencies.is_empty() {
        return Err(Error::input("no latencies to measure"));
    }
    let load_before = load();
    // A random name made exclusively: nothing of anyone else's is removed or opened.
    let image = PathBuf::from(format!(
        "/dev/shm/fsage-dev-bench-{}.img",
        fsage_sys::safe::random_hex()
    ));
    let f =
        fsage_sys::safe::create_new(&image, 0o600).map_err(|e| crate::Error::io(&image, "", e))?;
    // Real data, not holes: both devices then read what a used disk holds.
    f.set_len(spec.size)
        .map_err(|e| crate::Error::io(&image, "", e))?;
    drop(f);
    struct Remove(PathBuf);
    impl Drop for Remove {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
    let _rm = Remove(image.clone());

    let m = |dev: &std::path::Path, pattern: Pattern, qd: usize, bs: usize, d: Duration| {
        let mut s = MeasureSpec::new(dev, pattern, qd);
        s.block_size = bs;
        s.duration = d;
        s.realtime = spec.realtime;
        s.warmup_ops = 50;
        measure(&s)
    };
    let d = spec.duration;
    let seq_d = Duration::from_millis(1500).min(d);

    progress("plain direct-I/O loop device");
    let plain_dev = fsage_lab::LoopDevice::attach_with(
        &image,
        fsage_lab::LoopOptions {
            read_only: false,
            direct_io: true,
        },
    )?;
    // Fill the image once (sequential writes), so reads find data.
    let seq_w = m(plain_dev.path(), Pattern::SeqWrite, 4, 1 << 20, seq_d)?;
    let plain = vec![
        m(plain_dev.path(), Pattern::RandRead, 1, 4096, d)?,
        m(plain_dev.path(), Pattern::RandWrite, 1, 4096, d)?,
    ];
    let seq_plain = vec![
        m(plain_dev.path(), Pattern::SeqRead, 4, 1 << 20, seq_d)?,
        seq_w,
    ];
    plain_dev.detach_and_wait(Duration::from_secs(5))?;

    let mut dspec = DeviceSpec::new(Backing::Image(image.clone()), 0);
    dspec.registry = spec.registry.clone();
    dspec.daemon_cmd = spec.daemon_cmd.clone();
    let mut dev = SlowDevice::create(&dspec)?.into_guard();
    progress(&format!("slow device {} at 0", dev.path().display()));
    let floor = vec![
        m(dev.path(), Pattern::RandRead, 1, 4096, d)?,
        m(dev.path(), Pattern::RandWrite, 1, 4096, d)?,
    ];
    let seq_floor = vec![
        m(dev.path(), Pattern::SeqRead, 4, 1 << 20, seq_d)?,
        m(dev.path(), Pattern::SeqWrite, 4, 1 << 20, seq_d)?,
    ];
    let mut accuracy = Vec::new();
    for &lat in &spec.latencies {
        progress(&format!("accuracy at {}", fsage_units::format_latency(lat)));
        dev.device_mut()
            .set_latency(Latencies::uniform(lat), None)?;
        // Enough requests for a p99 at long latencies.
        let dur = d.max(Duration::from_nanos(lat.saturating_mul(300)));
        for (i, pattern) in [Pattern::RandRead, Pattern::RandWrite]
            .into_iter()
            .enumerate()
        {
            dev.device().stats_and_reset()?;
            let r = m(dev.path(), pattern, 1, 4096, dur)?;
            let st = dev.device().stats()?;
            let kind = if pattern == Pattern::RandRead {
                "read"
            } else {
                "write"
            };
            let ks = st.kind(kind).cloned();
            let fl = &floor[i];
            let added_mean = r.latency.mean_ns - fl.latency.mean_ns;
            let added_p99 = r.latency.p99_ns as f64 - fl.latency.p50_ns as f64;
            let shift_p99 = r.latency.p99_ns as f64 - fl.latency.p99_ns as f64;
            let s = lat as f64;
            let err = |v: f64| if lat == 0 { 0.0 } else { (v - s) / s };
            let within = (added_mean - s).abs() <= (0.02 * s).max(2_000.0)
                && (shift_p99 - s).abs() <= (0.10 * s).max(10_000.0);
            accuracy.push(AccuracyRow {
                setting_ns: lat,
                pattern,
                added_mean_ns: added_mean,
                mean_error: err(added_mean),
                p99_shift_ns: shift_p99,
                p99_error: err(shift_p99),
                added_p99_ns: added_p99,
                within_target: within,
                measured: r,
                daemon: ks.as_ref().map(|k| k.latency).unwrap_or_default(),
                daemon_late: ks.map(|k| k.lateness).unwrap_or_default(),
            });
        }
    }
    progress("parallelism at 1 ms, QD16");
    dev.device_mut()
        .set_latency(Latencies::uniform(1_000_000), None)?;
    let parallel = m(dev.path(), Pattern::RandRead, 16, 4096, d)?;
    dev.destroy()?;
    progress("parallelism at 1 ms, QD16, device queue depth 4");
    dspec.latencies = Latencies::uniform(1_000_000);
    dspec.queue_depth = Some(4);
    let dev = SlowDevice::create(&dspec)?.into_guard();
    let parallel_qd4 = m(dev.path(), Pattern::RandRead, 16, 4096, d)?;
    dev.destroy()?;
    Ok(BenchReport {
        size: spec.size,
        realtime_measurement: spec.realtime,
        load_before,
        load_after: load(),
        plain,
        floor,
        seq_plain,
        seq_floor,
        accuracy,
        parallel,
        parallel_qd4,
    })
}
