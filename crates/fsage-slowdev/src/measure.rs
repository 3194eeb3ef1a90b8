//! Latency and IOPS of a block device as an application sees them: random direct-I/O reads or
//! writes of one block size at a queue depth (that many threads, each with one request in
//! flight), like `fio --direct=1 --rw=randread --iodepth=1 --numjobs=N`.

use crate::stats::LatencySummary;
use crate::{Error, Result};
pub use fsage_results::slowdev::{Measurement, Pattern};
use hdrhistogram::Histogram;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// One measurement. Writes overwrite the device's data.
#[derive(Debug, Clone)]
pub struct MeasureSpec {
    pub device: PathBuf,
    pub pattern: Pattern,
    /// Bytes per request (a multiple of 512).
    pub block_size: usize,
    /// Requests in flight (threads).
    pub queue_depth: usize,
    /// Stop after this long...
    pub duration: Duration,
    /// ...or after this many requests in all, whichever comes first.
    pub max_ops: u64,
    /// Requests go to the first `span` bytes (0: the whole device).
    pub span: u64,
    /// Requests not counted at the start of each thread.
    pub warmup_ops: u64,
    pub seed: u64,
    /// Measuring threads run `SCHED_FIFO` (like `chrt -f`), so that other work on the CPUs does
    /// not inflate what is measured.
    pub realtime: bool,
}

impl MeasureSpec {
    pub fn new(device: impl Into<PathBuf>, pattern: Pattern, queue_depth: usize) -> MeasureSpec {
        MeasureSpec {
            device: device.into(),
            pattern,
            block_size: 4096,
            queue_depth,
            duration: Duration::from_secs(2),
            max_ops: u64::MAX,
            span: 0,
            warmup_ops: 20,
            seed: 1,
            realtime: false,
        }
    }
}

struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("layout");
        // SAFETY: a non-zero size layout.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!ptr.is_null(), "out of memory");
        AlignedBuf { ptr, layout }
    }
    fn slice(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: len <= the allocation, which this value owns.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.layout.size())) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Runs the measurement described by `spec`.
pub fn measure(spec: &MeasureSpec) -> Result<Measurement> {
    let bs = spec.block_size;
    if bs == 0 || bs % 512 != 0 {
        return Err(Error::input(format!("block size {bs}: a multiple of 512")));
    }
    if spec.queue_depth == 0 || spec.queue_depth > 1024 {
        return Err(Error::input(format!(
            "queue depth {}: give 1 to 1024",
            spec.queue_depth
        )));
    }
    let dev = &spec.device;
    let open = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(spec.pattern.writes())
            .custom_flags(libc::O_DIRECT)
            .open(dev)
            .map_err(|e| Error::io(dev, "cannot open with O_DIRECT", e))
    };
    let size = {
        let f = open()?;
        fsage_sys::file_size(&f, dev)?
    };
    let span = if spec.span == 0 {
        size
    } else {
        spec.span.min(size)
    };
    let blocks = span / bs as u64;
    if blocks == 0 {
        return Err(Error::input(format!(
            "{}: smaller than one {bs}-byte block",
            dev.display()
        )));
    }
    let qd = spec.queue_depth as u64;
    let per_thread_ops = spec.max_ops.div_ceil(qd);
    let start = Instant::now();
    let end = start + spec.duration;
    let results: Vec<Result<(Histogram<u64>, Duration)>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..qd)
            .map(|t| {
                let open = &open;
                sc.spawn(move || -> Result<(Histogram<u64>, Duration)> {
                    if spec.realtime {
                        crate::sched::set_realtime()
                            .map_err(|e| Error::operation(format!("SCHED_FIFO: {e}")))?;
                    }
                    let f = open()?;
                    let mut buf = AlignedBuf::new(bs);
                    let b = buf.slice(bs);
                    for (i, x) in b.iter_mut().enumerate() {
                        *x = (i as u64 ^ t).wrapping_mul(0x9E37_79B9) as u8;
                    }
                    let mut h =
                        Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3).expect("bounds");
                    h.auto(true);
                    let mut rng = spec
                        .seed
                        .wrapping_add(t.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                        | 1;
                    let stretch = (blocks / qd).max(1);
                    let mut seq = (t * stretch) % blocks;
                    let mut n = 0u64;
                    let mut counted_from = Instant::now();
                    loop {
                        let now = Instant::now();
                        if now >= end || h.len() >= per_thread_ops {
                            return Ok((h, now.duration_since(counted_from)));
                        }
                        let block = match spec.pattern {
                            Pattern::RandRead | Pattern::RandWrite => {
                                rng ^= rng << 13;
                                rng ^= rng >> 7;
                                rng ^= rng << 17;
                                rng % blocks
                            }
                            _ => {
                                seq = (seq + 1) % blocks;
                                seq
                            }
                        };
                        let off = block * bs as u64;
                        let t0 = Instant::now();
                        let r = if spec.pattern.writes() {
                            f.write_at(b, off)
                        } else {
                            f.read_at(b, off)
                        };
                        let lat = t0.elapsed();
                        match r {
                            Ok(k) if k == bs => {}
                            Ok(k) => {
                                return Err(Error::operation(format!(
                                    "{}: short transfer ({k} of {bs} bytes) at {off}",
                                    dev.display()
                                )))
                            }
                            Err(e) => return Err(Error::io(dev, &format!("I/O at {off}"), e)),
                        }
                        n += 1;
                        if n == spec.warmup_ops {
                            counted_from = Instant::now();
                        } else if n > spec.warmup_ops {
                            let _ = h.record(lat.as_nanos().max(1) as u64);
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::operation("a measuring thread panicked")))
            })
            .collect()
    });
    let mut all = Histogram::<u64>::new_with_bounds(1, 100_000_000_000, 3).expect("bounds");
    all.auto(true);
    let mut secs = 0f64;
    for r in results {
        let (h, d) = r?;
        let _ = all.add(&h);
        secs = secs.max(d.as_secs_f64());
    }
    let ops = all.len();
    let iops = if secs > 0.0 { ops as f64 / secs } else { 0.0 };
    Ok(Measurement {
        pattern: spec.pattern,
        block_size: bs,
        queue_depth: spec.queue_depth,
        ops,
        seconds: secs,
        iops,
        throughput: iops * bs as f64,
        latency: LatencySummary::of(&all),
    })
}
