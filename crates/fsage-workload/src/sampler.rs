//! A run's time series (`bench run --sample 1s`): CPU utilization (user, system, iowait, idle)
//! from `/proc/stat`, the target device's requests in flight and busy time from its
//! `/sys/dev/block/M:m/stat`, and the operations done, one point per interval, so that a run
//! that slows down can be seen to be CPU-bound or device-bound (the slippery slope's Figure 7).
//! Lock contention comes from `/proc/lock_stat` where the kernel has it (CONFIG_LOCK_STAT;
//! Debian's kernels do not), and the timeline says so otherwise.

pub use fsage_results::bench::{LockContention, Timeline, TimelinePoint};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The all-CPU counters of `/proc/stat`'s first line, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CpuTicks {
    user: u64,
    system: u64,
    iowait: u64,
    idle: u64,
    steal: u64,
}

/// Parses `/proc/stat`'s `cpu` line: user nice system idle iowait irq softirq steal ...
pub(crate) fn parse_proc_stat(text: &str) -> Option<CpuTicks> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    let at = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(CpuTicks {
        user: at(0) + at(1),
        system: at(2) + at(5) + at(6),
        idle: at(3),
        iowait: at(4),
        steal: at(7),
    })
}

/// The fields of a block device's `stat` file fsage uses: completed reads and writes, the time
/// it had requests (ms) and the time requests spent in it, summed (ms).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct DevTicks {
    ios: u64,
    io_ticks_ms: u64,
    time_in_queue_ms: u64,
}

/// Parses `/sys/block/X/stat` (Documentation/block/stat.rst: fields 1 and 5 the reads and writes
/// completed, 10 io_ticks, 11 time_in_queue).
pub(crate) fn parse_dev_stat(text: &str) -> Option<DevTicks> {
    let v: Vec<u64> = text
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 11 {
        return None;
    }
    Some(DevTicks {
        ios: v[0] + v[4],
        io_ticks_ms: v[9],
        time_in_queue_ms: v[10],
    })
}

/// Parses `/proc/lock_stat` (version 0.4): the class lines `name: con-bounces contentions
/// waittime-min waittime-max waittime-total ...`, most contended first, `top` of them.
pub(crate) fn parse_lock_stat(text: &str, top: usize) -> Vec<LockContention> {
    let mut v: Vec<LockContention> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#') && !l.trim_start().starts_with('-'))
        .filter_map(|l| {
            let (name, rest) = l.rsplit_once(": ")?;
            let f: Vec<f64> = rest
                .split_whitespace()
                .map(|x| x.parse().ok())
                .collect::<Option<_>>()?;
            if f.len() < 5 || name.trim().is_empty() {
                return None;
            }
            Some(LockContention {
                name: name.trim().to_string(),
                contentions: f[1] as u64,
                wait_total_us: f[4],
            })
        })
        .filter(|c| c.contentions > 0)
        .collect();
    v.sort_by_key(|c| std::cmp::Reverse(c.contentions));
    v.truncate(top);
    v
}

/// The `/sys/dev/block/M:m` directory of the block device holding `target`, or why none.
fn device_of_target(target: &Path) -> Result<(String, PathBuf), String> {
    use std::os::unix::fs::MetadataExt;
    let dev = fsage_sys::device_of(target).map_err(|e| format!("{}: {e}", target.display()))?;
    let (maj, min) = fsage_sys::mountinfo::dev_parts(dev);
    let mounts = fsage_sys::mountinfo::mounts().map_err(|e| format!("the mount table: {e}"))?;
    let entry = mounts.iter().rev().find(|m| m.dev == (maj, min));
    // A file system on one device (ext4, xfs, f2fs, nilfs2) reports it as st_dev; btrfs reports
    // an anonymous device, and its mount's source names the block device.
    let sys = |maj: u32, min: u32| PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    if maj != 0 && sys(maj, min).join("stat").exists() {
        let name = entry.map_or_else(|| format!("{maj}:{min}"), |m| m.source.clone());
        return Ok((name, sys(maj, min)));
    }
    let Some(m) = entry else {
        return Err(format!(
            "{} is on no mount in the mount table",
            target.display()
        ));
    };
    let rdev = std::fs::metadata(&m.source)
        .ok()
        .filter(|md| fsage_sys::is_block_device(Path::new(&m.source)) && md.rdev() != 0)
        .map(|md| fsage_sys::mountinfo::dev_parts(md.rdev()))
        .ok_or_else(|| {
            format!(
                "{} is on {} ({}), not a block device",
                target.display(),
                m.source,
                m.fstype
            )
        })?;
    let dir = sys(rdev.0, rdev.1);
    if dir.join("stat").exists() {
        Ok((m.source.clone(), dir))
    } else {
        Err(format!(
            "{} has no {}",
            m.source,
            dir.join("stat").display()
        ))
    }
}

/// Takes the points of one repetition; `tick` is called often (every 50 ms) and samples when an
/// interval has passed.
pub(crate) struct Sampler {
    interval: Duration,
    start: Instant,
    last: Instant,
    last_ops: u64,
    cpu: Option<CpuTicks>,
    dev_dir: Option<PathBuf>,
    dev: Option<DevTicks>,
    timeline: Timeline,
    lock_stat: bool,
}

const LOCK_STAT: &str = "/proc/lock_stat";

impl Sampler {
    pub(crate) fn new(interval: Duration, target: &Path, start: Instant) -> Sampler {
        let (device, device_note, dev_dir) = match device_of_target(target) {
            Ok((name, dir)) => (Some(name), None, Some(dir)),
            Err(why) => (None, Some(why), None),
        };
        // Lock statistics: cleared at the start so the repetition's own are read at its end.
        let lock_stat = Path::new(LOCK_STAT).exists()
            && std::fs::write("/proc/sys/kernel/lock_stat", "1").is_ok()
            && std::fs::write(LOCK_STAT, "0").is_ok();
        let locks_note = (!lock_stat).then(|| {
            if Path::new(LOCK_STAT).exists() {
                format!("{LOCK_STAT} could not be enabled or cleared (needs root)")
            } else {
                format!(
                    "this kernel has no {LOCK_STAT} (CONFIG_LOCK_STAT, not in Debian's kernels): \
                     no lock contention recorded"
                )
            }
        });
        let mut s = Sampler {
            interval,
            start,
            last: start,
            last_ops: 0,
            cpu: None,
            dev_dir,
            dev: None,
            timeline: Timeline {
                interval_secs: interval.as_secs_f64(),
                device,
                device_note,
                cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
                points: Vec::new(),
                locks: Vec::new(),
                locks_note,
            },
            lock_stat,
        };
        s.cpu = s.read_cpu();
        s.dev = s.read_dev();
        s
    }

    fn read_cpu(&self) -> Option<CpuTicks> {
        parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    fn read_dev(&self) -> Option<DevTicks> {
        let dir = self.dev_dir.as_ref()?;
        parse_dev_stat(&std::fs::read_to_string(dir.join("stat")).ok()?)
    }

    /// Records a point if an interval has passed; `ops` is the repetition's operations so far.
    pub(crate) fn tick(&mut self, now: Instant, ops: u64) {
        if now.duration_since(self.last) >= self.interval {
            self.point(now, ops);
        }
    }

    fn point(&mut self, now: Instant, ops: u64) {
        let dt = now.duration_since(self.last).as_secs_f64();
        if dt <= 0.0 {
            return;
        }
        let cpu = self.read_cpu();
        let dev = self.read_dev();
        let share = match (self.cpu, cpu) {
            (Some(a), Some(b)) => {
                let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
                let parts = [
                    d(a.user, b.user),
                    d(a.system, b.system),
                    d(a.iowait, b.iowait),
                    d(a.idle, b.idle),
                    d(a.steal, b.steal),
                ];
                let total: f64 = parts.iter().sum();
                if total > 0.0 {
                    parts.map(|p| 100.0 * p / total)
                } else {
                    [0.0; 5]
                }
            }
            _ => [0.0; 5],
        };
        let ms = dt * 1e3;
        let (in_flight, busy, iops) = match (self.dev, dev) {
            (Some(a), Some(b)) => (
                Some(b.time_in_queue_ms.saturating_sub(a.time_in_queue_ms) as f64 / ms),
                Some((100.0 * b.io_ticks_ms.saturating_sub(a.io_ticks_ms) as f64 / ms).min(100.0)),
                Some(b.ios.saturating_sub(a.ios) as f64 / dt),
            ),
            _ => (None, None, None),
        };
        self.timeline.points.push(TimelinePoint {
            t_secs: now.duration_since(self.start).as_secs_f64(),
            ops_per_sec: ops.saturating_sub(self.last_ops) as f64 / dt,
            cpu_user: share[0],
            cpu_system: share[1],
            cpu_iowait: share[2],
            cpu_idle: share[3],
            cpu_steal: share[4],
            in_flight,
            device_busy: busy,
            device_iops: iops,
        });
        self.last = now;
        self.last_ops = ops;
        self.cpu = cpu;
        self.dev = dev;
    }

    /// The timeline, with a last (partial) point if at least a tenth of an interval is left.
    pub(crate) fn finish(mut self, now: Instant, ops: u64) -> Timeline {
        if now.duration_since(self.last) >= self.interval / 10 {
            self.point(now, ops);
        }
        if self.lock_stat {
            match std::fs::read_to_string(LOCK_STAT) {
                Ok(t) => self.timeline.locks = parse_lock_stat(&t, 10),
                Err(e) => self.timeline.locks_note = Some(format!("{LOCK_STAT}: {e}")),
            }
        }
        self.timeline
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_folds_nice_into_user_and_irqs_into_system() {
        let t = "cpu  100 5 40 800 30 2 3 7 0 0\ncpu0 50 2 20 400 15 1 1 3 0 0\nintr 1 2\n";
        let c = parse_proc_stat(t).unwrap();
        assert_eq!(
            c,
            CpuTicks {
                user: 105,
                system: 45,
                iowait: 30,
                idle: 800,
                steal: 7
            }
        );
        assert_eq!(parse_proc_stat("intr 1 2\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 x 3 4\n"), None);
    }

    #[test]
    fn dev_stat_takes_completions_busy_time_and_time_in_queue() {
        // Linux 6.x: 17 fields (with discards and flushes).
        let t = "    1200    3  9600  500  300  0  2400  700  2  900  1250  0 0 0 0  10  4\n";
        let d = parse_dev_stat(t).unwrap();
        assert_eq!(
            d,
            DevTicks {
                ios: 1500,
                io_ticks_ms: 900,
                time_in_queue_ms: 1250
            }
        );
        assert_eq!(parse_dev_stat("1 2 3"), None);
    }

    #[test]
    fn lock_stat_lists_the_most_contended_first() {
        let t = "lock_stat version 0.4\n\
-----------------------------------------------------------------------------\n\
                              class name    con-bounces    contentions   waittime-min   waittime-max waittime-total   waittime-avg    acq-bounces   acquisitions   holdtime-min   holdtime-max holdtime-total   holdtime-avg\n\
-----------------------------------------------------------------------------\n\
\n\
                &nilfs->ns_segctor_sem-W:            10             25           0.10          50.00         400.50          16.02            100           2000           0.05          10.00         900.00           0.45\n\
                 &sb->s_type->i_lock_key:             3              4           0.20           5.00          10.00           2.50             50            600           0.01           1.00          30.00           0.05\n\
                       &idle_lock:                    0              0           0.00           0.00           0.00           0.00              1             10           0.01           1.00           3.00           0.30\n";
        let v = parse_lock_stat(t, 10);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].name, "&nilfs->ns_segctor_sem-W");
        assert_eq!(v[0].contentions, 25);
        assert!((v[0].wait_total_us - 400.5).abs() < 1e-9);
        assert_eq!(v[1].contentions, 4);
        assert_eq!(parse_lock_stat(t, 1).len(), 1);
    }

    #[test]
    fn a_sampler_on_a_directory_records_cpu_shares_and_operations() {
        let dir = tempfile::tempdir().unwrap();
        let t0 = Instant::now();
        let mut s = Sampler::new(Duration::from_millis(20), dir.path(), t0);
        // Busy this thread so that user time moves.
        let mut x = 0u64;
        let end = Instant::now() + Duration::from_millis(60);
        while Instant::now() < end {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        s.tick(Instant::now(), 1000);
        let tl = s.finish(Instant::now(), 1000);
        assert!(!tl.points.is_empty());
        let p = &tl.points[0];
        let sum = p.cpu_user + p.cpu_system + p.cpu_iowait + p.cpu_idle + p.cpu_steal;
        assert!(sum == 0.0 || (sum - 100.0).abs() < 1e-6, "{p:?}");
        assert!(p.ops_per_sec > 0.0, "{p:?}");
        // Either a device was found (its counters are numbers) or the timeline says why not.
        assert!(tl.device.is_some() || tl.device_note.is_some());
        assert_eq!(tl.device.is_some(), p.in_flight.is_some());
        assert!(tl.locks.is_empty() || tl.locks_note.is_none());
    }
}
