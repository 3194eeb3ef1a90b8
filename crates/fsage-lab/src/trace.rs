//! Block-request tracing: the kernel's `block:block_rq_issue` tracepoint (and, for timed traces,
//! `block:block_rq_complete`) through tracefs, in a private trace instance per [`BlockTrace`]
//! (`instances/fsage-PID-N`), filtered on one device. Each request keeps its kind (from the
//! `rwbs` field), its issue time and, when timed, its completion time, so that [`device_trace`]
//! can hand it to `fsage-device` to cost on a model.
//! Two users at once (rollback tracking writes, Git aging timing a grep) each get their own
//! instance and buffer, so they never see or disturb each other's events. tracefs is mounted if
//! it is not, and unmounted again when the last trace this process started is gone.

use crate::{Error, Result};
use fsage_device::RqKind;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub(crate) const TRACEFS: &str = "/sys/kernel/tracing";

/// Which requests a trace keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RqFilter {
    /// Reads only (`R` in the request's flags, readahead and metadata reads included).
    Reads,
    /// Everything that is not a read and moves data: writes, discards, write-zeroes.
    Writes,
    /// Every request, flushes included.
    All,
}

impl RqFilter {
    fn keeps(self, kind: RqKind, sectors: u64) -> bool {
        match self {
            RqFilter::Reads => kind == RqKind::Read,
            RqFilter::Writes => kind != RqKind::Read && sectors > 0,
            RqFilter::All => true,
        }
    }
}

/// One block request as issued to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRq {
    /// First 512-byte sector.
    pub sector: u64,
    /// Length in 512-byte sectors (0 only for a flush).
    pub sectors: u64,
    /// `kind == RqKind::Read`.
    pub read: bool,
    pub kind: RqKind,
    /// When it was issued (the tracepoint's timestamp, monotonic clock, ns).
    pub issue_ns: u64,
    /// When it completed, if the trace recorded completions and saw this one's.
    pub complete_ns: Option<u64>,
}

/// One `block_rq_issue` or `block_rq_complete` trace line, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RqEvent {
    /// The event's timestamp in nanoseconds (tracefs prints microseconds: a multiple of 1000).
    pub at_ns: u64,
    /// The device, `major,minor`.
    pub dev: (u32, u32),
    /// A completion (else an issue).
    pub complete: bool,
    pub kind: RqKind,
    /// The first sector (a flush's completion says `18446744073709551615`: no sector).
    pub sector: u64,
    pub sectors: u64,
}

/// The request's kind from the tracepoint's `rwbs` field, as the kernel's `blk_fill_rwbs` writes
/// it: an optional `F` (a preflush), the operation (`R`ead, `W`rite, `D`iscard, `DE` secure
/// erase, `F`lush, `N` anything else: on a loop device, write-zeroes), then flags (`F`UA,
/// read`A`head, `S`ync, `M`eta).
pub fn rwbs_kind(rwbs: &str) -> Option<RqKind> {
    let b = rwbs.as_bytes();
    let op = match b {
        [b'F', next, ..] if b"RWDNF".contains(next) => *next,
        [first, ..] => *first,
        [] => return None,
    };
    Some(match op {
        b'R' => RqKind::Read,
        b'W' => RqKind::Write,
        b'D' => RqKind::Discard,
        b'F' => RqKind::Flush,
        b'N' => RqKind::WriteZeroes,
        _ => return None,
    })
}

/// The timestamp before `: block_rq_...` (`1995.326539`: seconds and a fraction) in ns.
pub(crate) fn timestamp_ns(head: &str) -> Option<u64> {
    let ts = head
        .trim_end()
        .strip_suffix(':')?
        .split_whitespace()
        .last()?;
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let secs: u64 = secs.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// Parses one trace line of `block_rq_issue` (`dd-16061 [001] ..... 1995.326539:
/// block_rq_issue: 7,0 WS 65536 () 0 + 128 be,0,4 [dd]`) or `block_rq_complete` (`... 7,0 WS ()
/// 0 + 128 be,0,4 [0]`); anything else is `None`.
pub fn parse_event(line: &str) -> Option<RqEvent> {
    let (head, complete, rest) = if let Some((h, r)) = line.split_once(" block_rq_issue: ") {
        (h, false, r)
    } else {
        let (h, r) = line.split_once(" block_rq_complete: ")?;
        (h, true, r)
    };
    let t: Vec<&str> = rest.split_whitespace().collect();
    let (ma, mi) = t.first()?.split_once(',')?;
    let kind = rwbs_kind(t.get(1)?)?;
    let plus = t.iter().position(|x| *x == "+")?;
    let sector: u64 = t.get(plus.checked_sub(1)?)?.parse().ok()?;
    let sectors: u64 = t.get(plus + 1)?.parse().ok()?;
    Some(RqEvent {
        at_ns: timestamp_ns(head)?,
        dev: (ma.parse().ok()?, mi.parse().ok()?),
        complete,
        kind,
        sector,
        sectors,
    })
}

/// Parses one `block_rq_issue` trace line (any device) that moves data (flushes and other
/// requests without sectors are left out).
pub fn parse_rq_line(line: &str) -> Option<BlockRq> {
    let e = parse_event(line).filter(|e| !e.complete && e.sectors > 0)?;
    Some(BlockRq {
        sector: e.sector,
        sectors: e.sectors,
        read: e.kind == RqKind::Read,
        kind: e.kind,
        issue_ns: e.at_ns,
        complete_ns: None,
    })
}

/// Pairs completions with the requests issued before them: by kind and first sector (any flush
/// for a flush, whose completion has no sector), the oldest outstanding first. A completion of
/// fewer sectors than outstanding (a request completed in parts) moves the request's remaining
/// range on; it is complete when nothing remains.
#[derive(Debug, Default)]
pub struct Matcher {
    /// (index into the requests, kind, first remaining sector, sectors remaining)
    pending: std::collections::VecDeque<(usize, RqKind, u64, u64)>,
}

impl Matcher {
    /// Takes one event; a kept issue (per `filter`) is pushed onto `out`, a completion sets the
    /// completion time of the request it matches in `out`.
    pub fn take(&mut self, e: &RqEvent, filter: RqFilter, out: &mut Vec<BlockRq>) {
        if !e.complete {
            if (e.sectors == 0 && e.kind != RqKind::Flush) || !filter.keeps(e.kind, e.sectors) {
                return;
            }
            self.pending
                .push_back((out.len(), e.kind, e.sector, e.sectors));
            out.push(BlockRq {
                sector: e.sector,
                sectors: e.sectors,
                read: e.kind == RqKind::Read,
                kind: e.kind,
                issue_ns: e.at_ns,
                complete_ns: None,
            });
            return;
        }
        let found = self.pending.iter().position(|&(_, k, s, n)| {
            k == e.kind && (k == RqKind::Flush || (s == e.sector && n >= e.sectors && n > 0))
        });
        let Some(p) = found else { return };
        let (i, k, s, n) = self.pending[p];
        if k != RqKind::Flush && e.sectors < n {
            self.pending[p] = (i, k, s + e.sectors, n - e.sectors);
            return;
        }
        self.pending.remove(p);
        out[i].complete_ns = Some(e.at_ns.max(out[i].issue_ns));
    }

    /// Requests issued and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.pending.len()
    }
}

/// The requests as a device trace (`fsage dev cost` reads it): bytes, and times from the first
/// issue. `device_size` is the traced device's size when known.
pub fn device_trace(
    rqs: &[BlockRq],
    source: impl Into<String>,
    device_size: Option<u64>,
) -> fsage_device::Trace {
    let mut v: Vec<&BlockRq> = rqs.iter().collect();
    v.sort_by_key(|r| r.issue_ns); // stable: ties keep the order they were read in
    let t0 = v.first().map_or(0, |r| r.issue_ns);
    fsage_device::Trace::new(
        source,
        device_size,
        v.into_iter()
            .map(|r| fsage_device::TraceRq {
                kind: r.kind,
                offset: r.sector * 512,
                len: r.sectors * 512,
                issue_ns: r.issue_ns - t0,
                complete_ns: r.complete_ns.map(|c| c.max(r.issue_ns) - t0),
            })
            .collect(),
    )
}

/// How many traces of this process are live, and whether this process mounted tracefs.
static TRACEFS_USERS: Mutex<(usize, bool)> = Mutex::new((0, false));
pub(crate) static INSTANCE_SEQ: AtomicU64 = AtomicU64::new(0);

type ReaderResult = Result<Vec<BlockRq>>;

/// A running trace of one device's block requests; [`BlockTrace::finish`] stops it and returns
/// them in issue order. Dropping it stops it too and removes its instance. A trace without
/// completions can also hand over what it has so far ([`BlockTrace::drain`]), so that a long
/// trace (a replay writing many gigabytes) is consumed as it goes instead of kept whole.
pub struct BlockTrace {
    instance: PathBuf,
    stop: Arc<AtomicBool>,
    /// Requests issued and not yet seen completing (with completions).
    outstanding: Arc<AtomicUsize>,
    completions: bool,
    reader: Option<std::thread::JoinHandle<ReaderResult>>,
    registered: bool,
    /// Without completions: the requests read and not yet drained.
    taken: Arc<Mutex<Vec<BlockRq>>>,
    /// How many times the reader found the buffer empty (a drain waits for two more: then
    /// every event recorded before it was called has been read).
    empty_reads: Arc<AtomicU64>,
}

pub(crate) fn wr(p: &Path, v: &str) -> Result<()> {
    fs::write(p, v).map_err(|e| Error::io(p, &format!("write {v:?}"), e))
}

pub(crate) fn register() -> Result<()> {
    let mut g = TRACEFS_USERS.lock().unwrap_or_else(|e| e.into_inner());
    let root = Path::new(TRACEFS);
    if !root.join("instances").is_dir() {
        if !root.is_dir() {
            crate::bail!("{TRACEFS}: missing (no tracefs in this kernel)");
        }
        match crate::mount::mount_device(Path::new("none"), root, "tracefs", "") {
            Ok(()) => g.1 = true,
            // Another process mounted it at the same moment: use theirs.
            Err(_) if root.join("instances").is_dir() => {}
            Err(e) => return Err(Error::operation(format!("cannot mount tracefs: {e}"))),
        }
    }
    g.0 += 1;
    Ok(())
}

pub(crate) fn unregister() {
    let mut g = TRACEFS_USERS.lock().unwrap_or_else(|e| e.into_inner());
    g.0 = g.0.saturating_sub(1);
    // Unmount what this process mounted, unless another fsage process traces through it now
    // (its instance is there): unmounting would break its trace.
    if g.0 == 0 && g.1 && !other_fsage_instances() {
        g.1 = false;
        let _ = crate::mount::umount_point(Path::new(TRACEFS));
    }
}

/// Is a trace instance of another fsage process there?
fn other_fsage_instances() -> bool {
    let mine = format!("fsage-{}", std::process::id());
    fs::read_dir(Path::new(TRACEFS).join("instances"))
        .map(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.starts_with("fsage-") && n.split('-').nth(1) != mine.split('-').nth(1)
            })
        })
        .unwrap_or(false)
}

/// The path of a new trace instance of this process (`instances/fsage-PID-N`, N counting up),
/// after removing what fsage processes that are gone left; the caller makes it.
pub(crate) fn next_instance() -> PathBuf {
    remove_stale_instances();
    let seq = INSTANCE_SEQ.fetch_add(1, Ordering::SeqCst);
    Path::new(TRACEFS).join(format!("instances/fsage-{}-{seq}", std::process::id()))
}

/// The instance's `trace_pipe`, opened non-blocking (the reader polls it and a stop flag).
pub(crate) fn open_pipe(instance: &Path) -> Result<fs::File> {
    let pipe = instance.join("trace_pipe");
    OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(&pipe)
        .map_err(|e| Error::io(&pipe, "", e))
}

/// Removes a trace instance, if it is there (cleanup: a failure is said, not returned).
pub(crate) fn remove_instance(instance: &Path) {
    if !instance.exists() {
        return;
    }
    // A child that another thread forked holds the instance's open files until it execs
    // (EBUSY for that moment): try again briefly.
    let mut r = fs::remove_dir(instance);
    for _ in 0..50 {
        match &r {
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::BUSY.raw_os_error()) => {
                std::thread::sleep(Duration::from_millis(10));
                r = fs::remove_dir(instance);
            }
            _ => break,
        }
    }
    if let Err(e) = r {
        eprintln!(
            "fsage: cleanup: {}: cannot remove the trace instance: {e}",
            instance.display()
        );
    }
}

/// Removes the trace instances of fsage processes that are gone (a `kill -9` leaves its own):
/// `instances/fsage-PID` or `fsage-PID-N` whose PID no longer runs.
pub(crate) fn remove_stale_instances() {
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
    /// [`crate::LoopDevice::rdev`] gives) that pass `filter`, with their issue times. Needs root.
    pub fn start(rdev: u64, filter: RqFilter) -> Result<BlockTrace> {
        Self::start_with(rdev, filter, false)
    }

    /// As [`BlockTrace::start`], and records each request's completion time too
    /// (`block:block_rq_complete` in the same instance), as costing a trace on a model needs.
    pub fn start_timed(rdev: u64, filter: RqFilter) -> Result<BlockTrace> {
        Self::start_with(rdev, filter, true)
    }

    fn start_with(rdev: u64, filter: RqFilter, completions: bool) -> Result<BlockTrace> {
        if !fsage_sys::is_root() {
            crate::bail!("block tracing needs root (tracefs)");
        }
        register()?;
        let mut t = BlockTrace {
            instance: next_instance(),
            stop: Arc::new(AtomicBool::new(false)),
            outstanding: Arc::new(AtomicUsize::new(0)),
            completions,
            reader: None,
            registered: true,
            taken: Arc::new(Mutex::new(Vec::new())),
            empty_reads: Arc::new(AtomicU64::new(0)),
        };
        fs::create_dir(&t.instance)
            .map_err(|e| Error::io(&t.instance, "cannot make a trace instance", e))?;
        let mut events = vec!["block_rq_issue"];
        if completions {
            events.push("block_rq_complete");
        }
        for name in &events {
            let ev = t.instance.join("events/block").join(name);
            if !ev.is_dir() {
                crate::bail!("{}: no {name} tracepoint", ev.display());
            }
        }
        // Generous buffers (per CPU), read continuously; one clock for every CPU, so that a
        // completion on another CPU than its issue is timed on the same clock.
        let _ = wr(&t.instance.join("buffer_size_kb"), "16384");
        let _ = wr(&t.instance.join("trace_clock"), "mono");
        let (ma, mi) = fsage_sys::mountinfo::dev_parts(rdev);
        let kdev = ((ma as u64) << 20) | mi as u64;
        for name in &events {
            let ev = t.instance.join("events/block").join(name);
            wr(&ev.join("filter"), &format!("dev == {kdev}"))?;
            wr(&ev.join("enable"), "1")?;
        }
        wr(&t.instance.join("tracing_on"), "1")?;
        let pipe = t.instance.join("trace_pipe");
        let mut f = open_pipe(&t.instance)?;
        let stop = t.stop.clone();
        let outstanding = t.outstanding.clone();
        let taken = t.taken.clone();
        let empty_reads = t.empty_reads.clone();
        let want_dev = (ma, mi);
        t.reader = Some(std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut matcher = Matcher::default();
            let mut buf = vec![0u8; 1 << 16];
            let mut partial = String::new();
            let mut idle_after_stop = 0;
            loop {
                match f.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                        while let Some(i) = partial.find('\n') {
                            let line: String = partial.drain(..=i).collect();
                            let Some(e) = parse_event(&line).filter(|e| e.dev == want_dev) else {
                                continue;
                            };
                            if completions {
                                matcher.take(&e, filter, &mut out);
                            } else if !e.complete
                                && e.sectors > 0
                                && filter.keeps(e.kind, e.sectors)
                            {
                                // Nothing to pair: hand the request over as it comes.
                                out.push(BlockRq {
                                    sector: e.sector,
                                    sectors: e.sectors,
                                    read: e.kind == RqKind::Read,
                                    kind: e.kind,
                                    issue_ns: e.at_ns,
                                    complete_ns: None,
                                });
                            }
                        }
                        if completions {
                            outstanding.store(matcher.outstanding(), Ordering::SeqCst);
                        } else if !out.is_empty() {
                            let mut t = taken.lock().unwrap_or_else(|e| e.into_inner());
                            t.append(&mut out);
                        }
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::operation(format!("{}: {e}", pipe.display()))),
                }
                empty_reads.fetch_add(1, Ordering::SeqCst);
                if stop.load(Ordering::SeqCst) {
                    idle_after_stop += 1;
                    if idle_after_stop >= 3 {
                        if !completions {
                            let mut t = taken.lock().unwrap_or_else(|e| e.into_inner());
                            out = std::mem::take(&mut *t);
                        }
                        return Ok(out);
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
        Ok(t)
    }

    /// A trace without completions: the requests recorded since the last drain (or the start),
    /// in issue order, every one issued before this call included (it waits until the reader
    /// has emptied the buffer twice since). The trace goes on.
    pub fn drain(&self) -> Result<Vec<BlockRq>> {
        if self.completions {
            crate::bail!("a trace with completions is read whole, by finish");
        }
        let seen = self.empty_reads.load(Ordering::SeqCst);
        let t = std::time::Instant::now();
        while self.empty_reads.load(Ordering::SeqCst) < seen + 2 {
            if self.reader.as_ref().is_none_or(|h| h.is_finished()) {
                crate::fail!("the trace's reader stopped");
            }
            if t.elapsed() > Duration::from_secs(120) {
                crate::fail!("the trace's reader did not catch up within 120 s");
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(self.take())
    }

    /// A trace without completions: the requests read so far and not yet taken (without
    /// waiting for the reader to catch up; [`BlockTrace::drain`] waits).
    pub fn take(&self) -> Vec<BlockRq> {
        let mut taken = self.taken.lock().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut *taken)
    }

    /// Events the trace buffer lost so far (it overflowed faster than it was read).
    pub fn lost_events(&self) -> u64 {
        self.overruns()
    }

    /// Stops recording; the requests in issue order, or an error when events were lost. With
    /// completions, requests still outstanding get up to 200 ms to complete (new issues are no
    /// longer recorded meanwhile); any that do not keep no completion time.
    pub fn finish(self) -> Result<Vec<BlockRq>> {
        let (rqs, lost) = self.finish_counting_losses()?;
        if lost > 0 {
            crate::fail!("the trace buffer lost {lost} events");
        }
        Ok(rqs)
    }

    /// As [`BlockTrace::finish`], and the events the buffer lost instead of an error for them.
    pub fn finish_counting_losses(mut self) -> Result<(Vec<BlockRq>, u64)> {
        let ev = self.instance.join("events/block/block_rq_issue/enable");
        wr(&ev, "0")?;
        if self.completions {
            let t = std::time::Instant::now();
            // Let the reader catch up with what is in the buffer before trusting its count.
            std::thread::sleep(Duration::from_millis(20));
            while self.outstanding.load(Ordering::SeqCst) > 0
                && t.elapsed() < Duration::from_millis(200)
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            let ev = self.instance.join("events/block/block_rq_complete/enable");
            wr(&ev, "0")?;
        }
        let _ = wr(&self.instance.join("tracing_on"), "0");
        self.stop.store(true, Ordering::SeqCst);
        let r = self
            .reader
            .take()
            .map(|h| h.join())
            .unwrap_or(Ok(Ok(Vec::new())))
            .map_err(|_| Error::operation("the trace reader thread panicked"))??;
        Ok((r, self.overruns()))
    }

    fn overruns(&self) -> u64 {
        overruns(&self.instance)
    }
}

/// Events a trace instance's buffer lost (it filled faster than it was read), over its CPUs.
pub(crate) fn overruns(instance: &Path) -> u64 {
    let mut lost = 0;
    if let Ok(rd) = fs::read_dir(instance.join("per_cpu")) {
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

impl Drop for BlockTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for name in ["block_rq_issue", "block_rq_complete"] {
            let _ = fs::write(
                self.instance.join("events/block").join(name).join("enable"),
                "0",
            );
        }
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        remove_instance(&self.instance);
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

    /// Lines as this machine's kernel (6.18) wrote them, tracing `dd` (direct writes and reads,
    /// `oflag=dsync` writes with their flushes), `blkdiscard` and `blkdiscard -z` on a loop device.
    const CAPTURED: &str = "\
              dd-16061   [001] .....  1995.326539: block_rq_issue: 7,0 WS 65536 () 0 + 128 be,0,4 [dd]
     ksoftirqd/0-14      [000] ..s..  1995.327842: block_rq_complete: 7,0 WS () 0 + 128 be,0,4 [0]
              dd-16062   [000] .....  1995.330051: block_rq_issue: 7,0 RS 131072 () 0 + 256 be,0,4 [dd]
              dd-16062   [001] .....  1995.330159: block_rq_issue: 7,0 RS 131072 () 256 + 256 be,0,4 [dd]
     ksoftirqd/0-14      [000] ..s..  1995.330207: block_rq_complete: 7,0 RS () 256 + 256 be,0,4 [0]
     ksoftirqd/0-14      [000] ..s..  1995.330300: block_rq_complete: 7,0 RS () 0 + 256 be,0,4 [0]
              dd-16063   [000] .....  1995.331873: block_rq_issue: 7,0 WS 4096 () 0 + 8 be,0,4 [dd]
     ksoftirqd/1-22      [001] ..s..  1995.331934: block_rq_complete: 7,0 WS () 0 + 8 be,0,4 [0]
    kworker/0:1H-44      [000] .....  1995.331986: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
     ksoftirqd/1-22      [001] ..s..  1995.332699: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
     ksoftirqd/1-22      [001] d.s1.  1995.332700: block_rq_complete: 7,0 WS () 0 + 0 be,0,4 [0]
      blkdiscard-16064   [001] .....  1995.335688: block_rq_issue: 7,0 RA 4096 () 130944 + 8 be,0,4 [blkdiscard]
     ksoftirqd/0-14      [000] ..s..  1995.335897: block_rq_complete: 7,0 RA () 130944 + 8 be,0,4 [0]
    kworker/1:1H-54      [001] .....  1995.340055: block_rq_issue: 7,0 DS 1048576 () 0 + 2048 be,0,4 [kworker/1:1H]
     ksoftirqd/1-22      [001] ..s..  1995.340635: block_rq_complete: 7,0 DS () 0 + 2048 be,0,4 [0]
    kworker/1:1H-54      [001] .....  1995.345929: block_rq_issue: 7,0 NS 1048576 () 2048 + 2048 be,0,4 [kworker/1:1H]
     ksoftirqd/0-14      [000] ..s..  1995.346048: block_rq_complete: 7,0 NS () 2048 + 2048 be,0,4 [0]
              dd-9       [003] .....  1995.400000: block_rq_issue: 8,16 R 4096 () 0 + 8 be,0,4 [dd]
";

    fn matched(filter: RqFilter) -> Vec<BlockRq> {
        let mut m = Matcher::default();
        let mut out = Vec::new();
        for l in CAPTURED.lines() {
            if let Some(e) = parse_event(l).filter(|e| e.dev == (7, 0)) {
                m.take(&e, filter, &mut out);
            }
        }
        out
    }

    #[test]
    fn captured_lines_parse_with_kind_and_time() {
        let mut l = CAPTURED.lines();
        let e = parse_event(l.next().unwrap()).unwrap();
        assert_eq!(
            e,
            RqEvent {
                at_ns: 1_995_326_539_000,
                dev: (7, 0),
                complete: false,
                kind: RqKind::Write,
                sector: 0,
                sectors: 128
            }
        );
        let c = parse_event(l.next().unwrap()).unwrap();
        assert!(c.complete && c.at_ns == 1_995_327_842_000 && c.sectors == 128);
        let kinds: Vec<(bool, RqKind)> = CAPTURED
            .lines()
            .filter_map(parse_event)
            .map(|e| (e.complete, e.kind))
            .filter(|(c, _)| !c)
            .collect();
        use RqKind::*;
        assert_eq!(
            kinds.iter().map(|k| k.1).collect::<Vec<_>>(),
            vec![
                Write,
                Read,
                Read,
                Write,
                Flush,
                Read,
                Discard,
                WriteZeroes,
                Read
            ]
        );
        // The old interface: data-moving issues only.
        assert_eq!(
            CAPTURED.lines().filter_map(parse_rq_line).count(),
            8,
            "flushes and completions are not issues with data"
        );
        assert!(parse_event("# tracer: nop").is_none());
        assert!(parse_event("x-1 [000] ..... bad: block_rq_issue: 7,0 R 0 () 0 + 8 [x]").is_none());
    }

    #[test]
    fn rwbs_kinds_follow_blk_fill_rwbs() {
        use RqKind::*;
        for (rwbs, k) in [
            ("R", Read),
            ("RA", Read),
            ("RM", Read),
            ("W", Write),
            ("WS", Write),
            ("WFS", Write), // write with FUA
            ("FWS", Write), // preflush, then a write
            ("FWFSM", Write),
            ("F", Flush),
            ("FF", Flush), // preflush of a flush
            ("FS", Flush),
            ("D", Discard),
            ("DE", Discard),
            ("N", WriteZeroes),
        ] {
            assert_eq!(rwbs_kind(rwbs), Some(k), "{rwbs}");
        }
        assert_eq!(rwbs_kind(""), None);
        assert_eq!(rwbs_kind("X"), None);
    }

    #[test]
    fn completions_match_issues_by_kind_and_sector() {
        let all = matched(RqFilter::All);
        let got: Vec<(RqKind, u64, u64, Option<u64>)> = all
            .iter()
            .map(|r| (r.kind, r.sector, r.issue_ns, r.complete_ns))
            .collect();
        use RqKind::*;
        let us = |x: u64| 1_995_000_000_000 + x * 1000;
        assert_eq!(
            got,
            vec![
                (Write, 0, us(326_539), Some(us(327_842))),
                // Completed out of order: matched by sector, not by order.
                (Read, 0, us(330_051), Some(us(330_300))),
                (Read, 256, us(330_159), Some(us(330_207))),
                (Write, 0, us(331_873), Some(us(331_934))),
                // A flush's completion has no sector; the 0-sector write completion after it
                // (the flush sequence's) matches nothing.
                (Flush, 0, us(331_986), Some(us(332_699))),
                (Read, 130_944, us(335_688), Some(us(335_897))),
                (Discard, 0, us(340_055), Some(us(340_635))),
                (WriteZeroes, 2048, us(345_929), Some(us(346_048))),
            ]
        );
        let reads = matched(RqFilter::Reads);
        assert_eq!(reads.len(), 3);
        assert!(reads.iter().all(|r| r.read && r.complete_ns.is_some()));
        let writes = matched(RqFilter::Writes);
        assert_eq!(writes.len(), 4, "writes, discard, write-zeroes; no flush");
        // The device trace: bytes, times from the first issue.
        let t = device_trace(&reads, "test", Some(64 << 20));
        assert_eq!(t.requests[0].offset, 0);
        assert_eq!(t.requests[0].len, 256 * 512);
        assert_eq!(t.requests[0].issue_ns, 0);
        assert_eq!(t.requests[0].complete_ns, Some(249_000));
        assert_eq!(t.requests[2].offset, 130_944 * 512);
        assert_eq!(t.requests[2].issue_ns, 5_637_000);
    }

    #[test]
    fn partial_completions_move_the_range_on() {
        let ev = |at, complete, sector, sectors| RqEvent {
            at_ns: at,
            dev: (7, 0),
            complete,
            kind: RqKind::Read,
            sector,
            sectors,
        };
        let mut m = Matcher::default();
        let mut out = Vec::new();
        m.take(&ev(10, false, 100, 16), RqFilter::Reads, &mut out);
        m.take(&ev(20, true, 100, 8), RqFilter::Reads, &mut out);
        assert_eq!((out[0].complete_ns, m.outstanding()), (None, 1));
        m.take(&ev(30, true, 108, 8), RqFilter::Reads, &mut out);
        assert_eq!((out[0].complete_ns, m.outstanding()), (Some(30), 0));
        // A completion of nothing outstanding changes nothing.
        m.take(&ev(40, true, 100, 16), RqFilter::Reads, &mut out);
        assert_eq!(out.len(), 1);
    }

    #[test]
    fn layout_counts_breaks_in_issue_order() {
        let rq = |sector, sectors| BlockRq {
            sector,
            sectors,
            read: true,
            kind: RqKind::Read,
            issue_ns: 0,
            complete_ns: None,
        };
        // 0..8, 8..16 contiguous; 100..108 a break; 16..24 a break (back again).
        let l = read_layout(&[rq(0, 8), rq(8, 8), rq(100, 8), rq(16, 8)], 4096);
        assert_eq!((l.requests, l.blocks, l.discontiguities), (4, 4, 2));
        assert_eq!(l.score, Some(0.5));
        // Writes do not count; nothing read gives no score.
        let w = BlockRq {
            read: false,
            kind: RqKind::Write,
            ..rq(0, 8)
        };
        assert_eq!(read_layout(&[w], 4096).score, None);
        assert_eq!(read_layout(&[rq(0, 256)], 4096).score, Some(1.0));
    }
}
