//! Block-request tracing: the kernel's `block:block_rq_issue` tracepoint through tracefs, in a
//! private trace instance per [`BlockTrace`] (`instances/fsage-PID-N`), filtered on one device.
//! Two users at once (rollback tracking writes, Git aging timing a grep) each get their own
//! instance and buffer, so they never see or disturb each other's events. tracefs is mounted if
//! it is not, and unmounted again when the last trace this process started is gone.

use crate::{sys, Error, Result};
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const TRACEFS: &str = "/sys/kernel/tracing";

/// Which requests a trace keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RqFilter {
    /// Reads only (`R` in the request's flags, readahead and metadata reads included).
    Reads,
    /// Everything that is not a read and moves data: writes, discards, write-zeroes.
    Writes,
}

/// One block request as issued to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRq {
    /// First 512-byte sector.
    pub sector: u64,
    /// Length in 512-byte sectors (never 0: flushes carry no data and are left out).
    pub sectors: u64,
    pub read: bool,
}

/// Parses one `block_rq_issue` trace line (any device).
pub fn parse_rq_line(line: &str) -> Option<BlockRq> {
    let rest = line.split_once("block_rq_issue: ")?.1;
    let t: Vec<&str> = rest.split_whitespace().collect();
    let rwbs = t.get(1)?;
    let plus = t.iter().position(|x| *x == "+")?;
    let sector: u64 = t.get(plus.checked_sub(1)?)?.parse().ok()?;
    let sectors: u64 = t.get(plus + 1)?.parse().ok()?;
    (sectors > 0).then_some(BlockRq {
        sector,
        sectors,
        read: rwbs.contains('R'),
    })
}

/// How many traces of this process are live, and whether this process mounted tracefs.
static TRACEFS_USERS: Mutex<(usize, bool)> = Mutex::new((0, false));
static INSTANCE_SEQ: AtomicU64 = AtomicU64::new(0);

type ReaderResult = std::result::Result<Vec<BlockRq>, String>;

/// A running trace of one device's block requests; [`BlockTrace::finish`] stops it and returns
/// them in issue order. Dropping it stops it too and removes its instance.
pub struct BlockTrace {
    instance: PathBuf,
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<ReaderResult>>,
    registered: bool,
}

fn wr(p: &Path, v: &str) -> Result<()> {
    fs::write(p, v).map_err(|e| Error::io(p, &format!("write {v:?}"), e))
}

fn register() -> Result<()> {
    let mut g = TRACEFS_USERS.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(TRACEFS);
    if !root.join("instances").is_dir() {
        if !root.is_dir() {
            crate::bail!("{TRACEFS}: missing (no tracefs in this kernel)");
        }
        crate::mount::mount_device(Path::new("none"), root, "tracefs", "")
            .map_err(|e| Error::operation(format!("cannot mount tracefs: {e}")))?;
        g.1 = true;
    }
    g.0 += 1;
    Ok(())
}

fn unregister() {
    let mut g = TRACEFS_USERS.lock().unwrap_or_else(|e| e.into_inner());
    g.0 = g.0.saturating_sub(1);
    if g.0 == 0 && g.1 {
        g.1 = false;
        let _ = crate::mount::umount_point(Path::new(TRACEFS));
    }
}

/// Removes the trace instances of fsage processes that are gone (a `kill -9` leaves its own):
/// `instances/fsage-PID` or `fsage-PID-N` whose PID no longer runs.
fn remove_stale_instances() {
    let Ok(rd) = fs::read_dir(Path::new(TRACEFS).join("instances")) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("fsage-")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

impl BlockTrace {
    /// Starts recording the requests of the block device `rdev` (a device number, as
    /// [`crate::LoopDevice::rdev`] gives) that pass `filter`. Needs root.
    pub fn start(rdev: u64, filter: RqFilter) -> Result<BlockTrace> {
        if !sys::is_root() {
            crate::bail!("block tracing needs root (tracefs)");
        }
        register()?;
        remove_stale_instances();
        let seq = INSTANCE_SEQ.fetch_add(1, Ordering::SeqCst);
        let mut t = BlockTrace {
            instance: Path::new(TRACEFS)
                .join(format!("instances/fsage-{}-{seq}", std::process::id())),
            stop: Arc::new(AtomicBool::new(false)),
            reader: None,
            registered: true,
        };
        fs::create_dir(&t.instance)
            .map_err(|e| Error::io(&t.instance, "cannot make a trace instance", e))?;
        let ev = t.instance.join("events/block/block_rq_issue");
        if !ev.is_dir() {
            crate::bail!("{}: no block_rq_issue tracepoint", ev.display());
        }
        // Generous buffers (per CPU), read continuously.
        let _ = wr(&t.instance.join("buffer_size_kb"), "16384");
        let (ma, mi) = sys::dev_parts(rdev);
        let kdev = ((ma as u64) << 20) | mi as u64;
        wr(&ev.join("filter"), &format!("dev == {kdev}"))?;
        wr(&ev.join("enable"), "1")?;
        wr(&t.instance.join("tracing_on"), "1")?;
        let pipe = t.instance.join("trace_pipe");
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(&pipe)
            .map_err(|e| Error::io(&pipe, "", e))?;
        let stop = t.stop.clone();
        let want_dev = format!("{ma},{mi} ");
        t.reader = Some(std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            let mut partial = String::new();
            let mut idle_after_stop = 0;
            loop {
                match f.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                        while let Some(i) = partial.find('\n') {
                            let line: String = partial.drain(..=i).collect();
                            let dev_ok = line
                                .split_once("block_rq_issue: ")
                                .is_some_and(|(_, r)| r.starts_with(&want_dev));
                            if !dev_ok {
                                continue;
                            }
                            if let Some(r) = parse_rq_line(&line) {
                                let keep = match filter {
                                    RqFilter::Reads => r.read,
                                    RqFilter::Writes => !r.read,
                                };
                                if keep {
                                    out.push(r);
                                }
                            }
                        }
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(format!("{}: {e}", pipe.display())),
                }
                if stop.load(Ordering::SeqCst) {
                    idle_after_stop += 1;
                    if idle_after_stop >= 3 {
                        return Ok(out);
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
        Ok(t)
    }

    /// Stops recording; the requests in issue order, or an error when events were lost.
    pub fn finish(mut self) -> Result<Vec<BlockRq>> {
        let ev = self.instance.join("events/block/block_rq_issue/enable");
        wr(&ev, "0")?;
        let _ = wr(&self.instance.join("tracing_on"), "0");
        self.stop.store(true, Ordering::SeqCst);
        let r = self
            .reader
            .take()
            .map(|h| h.join())
            .unwrap_or(Ok(Ok(Vec::new())))
            .map_err(|_| Error::operation("the trace reader thread panicked"))?
            .map_err(Error::operation)?;
        let lost = self.overruns();
        if lost > 0 {
            crate::fail!("the trace buffer lost {lost} events");
        }
        Ok(r)
    }

    fn overruns(&self) -> u64 {
        let mut lost = 0;
        if let Ok(rd) = fs::read_dir(self.instance.join("per_cpu")) {
            for e in rd.flatten() {
                if let Ok(s) = fs::read_to_string(e.path().join("stats")) {
                    for l in s.lines() {
                        if let Some(v) = l.strip_prefix("overrun:") {
                            lost += v.trim().parse::<u64>().unwrap_or(0);
                        }
                    }
                }
            }
        }
        lost
    }
}

impl Drop for BlockTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = fs::write(
            self.instance.join("events/block/block_rq_issue/enable"),
            "0",
        );
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        if self.instance.exists() {
            // A child that another thread forked holds the instance's open files until it
            // execs (EBUSY for that moment): try again briefly.
            let mut r = fs::remove_dir(&self.instance);
            for _ in 0..50 {
                match &r {
                    Err(e) if e.raw_os_error() == Some(rustix::io::Errno::BUSY.raw_os_error()) => {
                        std::thread::sleep(Duration::from_millis(10));
                        r = fs::remove_dir(&self.instance);
                    }
                    _ => break,
                }
            }
            if let Err(e) = r {
                eprintln!(
                    "fsage: cleanup: {}: cannot remove the trace instance: {e}",
                    self.instance.display()
                );
            }
        }
        if self.registered {
            self.registered = false;
            unregister();
        }
    }
}

/// The layout score of a stream of reads, as Conway et al.'s scripts define it over blktrace:
/// 1 − discontiguities ÷ blocks read, a discontiguity being a request that does not start where
/// the previous one (in issue order) ended. Blocks are counted in units of `block` bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadLayout {
    pub requests: u64,
    pub blocks: u64,
    pub discontiguities: u64,
    /// `None` when nothing was read.
    pub score: Option<f64>,
}

/// Scores `rqs` (in issue order); only reads count.
pub fn read_layout(rqs: &[BlockRq], block: u64) -> ReadLayout {
    let per = (block / 512).max(1);
    let (mut requests, mut sectors, mut disc) = (0u64, 0u64, 0u64);
    let mut prev_end: Option<u64> = None;
    for r in rqs.iter().filter(|r| r.read) {
        requests += 1;
        sectors += r.sectors;
        if prev_end.is_some_and(|e| e != r.sector) {
            disc += 1;
        }
        prev_end = Some(r.sector + r.sectors);
    }
    let blocks = sectors.div_ceil(per);
    ReadLayout {
        requests,
        blocks,
        discontiguities: disc,
        score: (blocks > 0).then(|| 1.0 - disc as f64 / blocks as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let w = "  kworker/u8:2-123 [001] ..... 12.5: block_rq_issue: 7,0 WS 4096 () 2048 + 8 none,0,0 [jbd2/loop0-8]";
        assert_eq!(
            parse_rq_line(w),
            Some(BlockRq {
                sector: 2048,
                sectors: 8,
                read: false
            })
        );
        let r = "grep-9 [000] ..... 1.0: block_rq_issue: 7,0 RA 4096 () 8 + 8 [grep]";
        assert!(parse_rq_line(r).unwrap().read);
        let flush = "x-1 [000] ..... 1.0: block_rq_issue: 7,0 FF 0 () 0 + 0 [x]";
        assert_eq!(parse_rq_line(flush), None);
    }

    #[test]
    fn layout_counts_breaks_in_issue_order() {
        let rq = |sector, sectors| BlockRq {
            sector,
            sectors,
            read: true,
        };
        // 0..8, 8..16 contiguous; 100..108 a break; 16..24 a break (back again).
        let l = read_layout(&[rq(0, 8), rq(8, 8), rq(100, 8), rq(16, 8)], 4096);
        assert_eq!((l.requests, l.blocks, l.discontiguities), (4, 4, 2));
        assert_eq!(l.score, Some(0.5));
        // Writes do not count; nothing read gives no score.
        let w = BlockRq {
            sector: 0,
            sectors: 8,
            read: false,
        };
        assert_eq!(read_layout(&[w], 4096).score, None);
        assert_eq!(read_layout(&[rq(0, 256)], 4096).score, Some(1.0));
    }
}
