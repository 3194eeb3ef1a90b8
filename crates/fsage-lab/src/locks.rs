//! Lock contention by lock instance: the kernel's `lock:contention_begin` and
//! `lock:contention_end` tracepoints (kernels since 5.19: no lockdep, no lock_stat) through a
//! private tracefs instance (`instances/fsage-PID-N`, so that nobody else's tracing is touched),
//! with a `stacktrace` trigger on the begins of sleeping and reader-writer locks for the caller.
//! Each task's wait runs from its begin to the end of the same lock; waits are summed per lock
//! address ([`LockTrace::finish`] gives a [`LockReport`]). The kernel prints the address hashed
//! (`%p`): stable within a boot, which is all a key needs, and no kernel address is recorded.
//!
//! A lock instance is named from its callers, never from its address: an rwsem whose waits all
//! come from the VFS's directory-locking sites (create through open, `filename_create`,
//! `do_unlinkat`, `do_rmdir`, the slow lookup, rename, readdir) is a directory inode's
//! `i_rwsem`, the lock class lockdep calls `i_mutex_dir_key`.
//!
//! Costs: every contention is an event, and a stack is taken at every begin but a plain
//! spinlock's, before the task waits; the stack's cost (a few microseconds) is inside the wait
//! it measures.

use crate::trace::{self, wr, TRACEFS};
use crate::{Error, Result};
pub use fsage_results::locks::{LockCaller, LockInstance, LockReport, DIR_RWSEM, FILE_RWSEM};
use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The tracepoint's flags (include/trace/events/lock.h).
const F_SPIN: u32 = 1;
const F_READ: u32 = 2;
const F_WRITE: u32 = 4;
const F_RT: u32 = 8;
const F_PERCPU: u32 = 16;
const F_MUTEX: u32 = 32;

/// A stack for every begin but a plain spinlock's (the most frequent, and short).
const TRIGGER: &str = "stacktrace if flags != 1";

/// One trace line that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockLine {
    Begin {
        pid: u32,
        at_ns: u64,
        addr: String,
        flags: u32,
    },
    End {
        pid: u32,
        at_ns: u64,
        addr: String,
    },
    /// The header of a stack the trigger recorded (its frames follow).
    Stack {
        pid: u32,
    },
    /// One frame of the stack being read (` => path_openat`).
    Frame(String),
}

/// The flags as `__print_flags` writes them (`WRITE`, `MUTEX|SPIN`; `0x...` for unknown bits).
fn parse_flags(s: &str) -> Option<u32> {
    let mut f = 0;
    for p in s.split('|') {
        f |= match p {
            "SPIN" => F_SPIN,
            "READ" => F_READ,
            "WRITE" => F_WRITE,
            "RT" => F_RT,
            "PERCPU" => F_PERCPU,
            "MUTEX" => F_MUTEX,
            "" | "0" | "0x0" => 0,
            other => u32::from_str_radix(other.trim_start_matches("0x"), 16).ok()?,
        };
    }
    Some(f)
}

/// The PID of a line's head (`  bash-7791    [001] d..2. 51648.916148:`): the token before the
/// `[CPU]` field, after its last `-` (a command name may hold `-` and spaces).
fn head_pid(head: &str) -> Option<u32> {
    let toks: Vec<&str> = head.split_whitespace().collect();
    let cpu = toks.iter().rposition(|t| {
        t.len() > 2
            && t.starts_with('[')
            && t.ends_with(']')
            && t[1..t.len() - 1].bytes().all(|c| c.is_ascii_digit())
    })?;
    let (_, pid) = toks.get(cpu.checked_sub(1)?)?.rsplit_once('-')?;
    pid.parse().ok()
}

/// Reads one line of the instance's trace.
pub fn parse_line(line: &str) -> Option<LockLine> {
    let line = line.trim_end();
    if let Some(f) = line.trim_start().strip_prefix("=> ") {
        return Some(LockLine::Frame(f.trim().to_string()));
    }
    if let Some((head, rest)) = line.split_once(" contention_begin: ") {
        let (addr, flags) = rest.split_once(" (flags=")?;
        return Some(LockLine::Begin {
            pid: head_pid(head)?,
            at_ns: trace::timestamp_ns(head)?,
            addr: addr.trim().to_string(),
            flags: parse_flags(flags.strip_suffix(')')?)?,
        });
    }
    if let Some((head, rest)) = line.split_once(" contention_end: ") {
        let (addr, _) = rest.split_once(" (ret=")?;
        return Some(LockLine::End {
            pid: head_pid(head)?,
            at_ns: trace::timestamp_ns(head)?,
            addr: addr.trim().to_string(),
        });
    }
    if let Some((head, _)) = line.split_once(" <stack trace>") {
        return Some(LockLine::Stack {
            pid: head_pid(head)?,
        });
    }
    None
}

/// A frame of the locking code itself (and of the tracing), skipped to find the caller.
fn is_lock_frame(f: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "trace_",
        "__trace",
        "perf_trace_",
        "event_trigger",
        "stack_trace",
        "_raw_",
        "__raw_",
        "do_raw_",
        "queued_",
        "__pv_queued",
        "pv_queued",
        "native_queued",
        "rwsem_",
        "__rwsem",
        "down_",
        "__down",
        "down",
        "mutex_",
        "__mutex_",
        "ww_mutex",
        "rt_mutex",
        "__rt_mutex",
        "rtlock",
        "rt_spin",
        "rt_read",
        "rt_write",
        "percpu_down",
        "__percpu_down",
        "percpu_rwsem",
        "osq_",
    ];
    let name = f.split('+').next().unwrap_or(f);
    PREFIXES.iter().any(|p| name.starts_with(p))
}

/// The caller (the first frame outside the locking code) and up to four frames above it.
fn caller_of(stack: &[String]) -> (String, Vec<String>) {
    let clean = |f: &String| f.split('+').next().unwrap_or(f).to_string();
    match stack.iter().position(|f| !is_lock_frame(f)) {
        Some(i) => (
            clean(&stack[i]),
            stack[i + 1..].iter().take(4).map(clean).collect(),
        ),
        None => ("unknown".into(), Vec::new()),
    }
}

/// The VFS's directory-locking sites: an rwsem waited on from these is a directory's
/// `i_rwsem` (each takes the parent directory's inode lock: fs/namei.c, fs/readdir.c).
const DIR_SITES: &[(&str, &str)] = &[
    (
        "path_openat",
        "create or look up through open (open_last_lookups)",
    ),
    ("open_last_lookups", "create or look up through open"),
    ("filename_create", "create (mkdir, mknod, link, symlink)"),
    ("do_unlinkat", "unlink"),
    ("do_rmdir", "rmdir"),
    ("lookup_slow", "slow lookup"),
    ("__lookup_slow", "slow lookup"),
    ("lock_rename", "rename"),
    ("lock_two_directories", "rename"),
    ("do_renameat2", "rename"),
    ("iterate_dir", "readdir"),
];

/// A regular file's `i_rwsem` sites (writes, truncation, fallocate).
const FILE_SITES: &[&str] = &[
    "generic_file_write_iter",
    "ext4_buffered_write_iter",
    "ext4_file_write_iter",
    "ext4_dio_write_iter",
    "btrfs_do_write_iter",
    "btrfs_buffered_write",
    "f2fs_file_write_iter",
    "do_truncate",
    "vfs_fallocate",
    "ext4_fallocate",
    "generic_file_llseek_size",
];

/// nilfs2's segment constructor semaphore: `nilfs_transaction_begin` takes
/// `nilfs->ns_segctor_sem` shared, `nilfs_transaction_lock` exclusive, and
/// `nilfs_relax_pressure_in_lock` trades its shared hold for an exclusive one
/// (fs/nilfs2/segment.c); none of them takes another rwsem. Many other sites take it too (the
/// ioctls nilfs_cleanerd calls, sysfs, checkpoint attach), so one of these among an instance's
/// callers names it.
const NILFS_SEGCTOR_SITES: &[&str] = &[
    "nilfs_transaction_begin",
    "nilfs_transaction_lock",
    "nilfs_relax_pressure_in_lock",
];

/// What fsage calls nilfs2's `ns_segctor_sem`.
pub const NILFS_SEGCTOR_SEM: &str = "nilfs2 segment constructor rwsem (ns_segctor_sem)";

/// The lock's type from the flags its begins carried.
fn kind_of(flags: u32) -> &'static str {
    if flags & F_MUTEX != 0 {
        if flags & F_RT != 0 {
            "rt-mutex"
        } else {
            "mutex"
        }
    } else if flags & F_PERCPU != 0 {
        "percpu-rwsem"
    } else if flags & F_RT != 0 {
        "rt-mutex"
    } else if flags & F_SPIN != 0 {
        if flags & (F_READ | F_WRITE) != 0 {
            "rwlock"
        } else {
            "spinlock"
        }
    } else if flags & (F_READ | F_WRITE) != 0 {
        "rwsem"
    } else {
        "unknown"
    }
}

/// A begin still waiting for its end.
#[derive(Debug)]
struct Open {
    addr: String,
    at_ns: u64,
    flags: u32,
    stack: Option<Vec<String>>,
}

#[derive(Debug, Default)]
struct Acc {
    flags: u32,
    waits: u64,
    total: u64,
    max: u64,
    write_waits: u64,
    /// (caller, path) -> (waits, total)
    callers: HashMap<(String, Vec<String>), (u64, u64)>,
}

/// Pairs begins with ends per task and sums the waits per lock instance, line by line.
#[derive(Debug, Default)]
pub struct LockAggregator {
    open: HashMap<u32, Vec<Open>>,
    /// The PID and frames of the stack being read.
    stack: Option<(u32, Vec<String>)>,
    locks: HashMap<String, Acc>,
}

impl LockAggregator {
    /// Takes one trace line (anything else is ignored).
    pub fn line(&mut self, line: &str) {
        match parse_line(line) {
            Some(l) => self.take(l),
            None => self.end_stack(),
        }
    }

    fn end_stack(&mut self) {
        let Some((pid, frames)) = self.stack.take() else {
            return;
        };
        // The trigger records the stack just after its begin, on the same CPU: it belongs to
        // the task's latest begin (a mutex's second begin, when it goes to sleep after
        // spinning, keeps the first one's).
        if let Some(o) = self.open.get_mut(&pid).and_then(|v| v.last_mut()) {
            if o.stack.is_none() {
                o.stack = Some(frames);
            }
        }
    }

    pub fn take(&mut self, l: LockLine) {
        if let LockLine::Frame(f) = l {
            if let Some((_, frames)) = &mut self.stack {
                frames.push(f);
            }
            return;
        }
        self.end_stack();
        match l {
            LockLine::Frame(_) => {}
            LockLine::Stack { pid } => self.stack = Some((pid, Vec::new())),
            LockLine::Begin {
                pid,
                at_ns,
                addr,
                flags,
            } => {
                let v = self.open.entry(pid).or_default();
                // A mutex spins first (MUTEX|SPIN), then sleeps (MUTEX) with one end for both:
                // one wait, from the first begin.
                if let Some(o) = v.iter_mut().rev().find(|o| o.addr == addr) {
                    o.flags |= flags;
                } else {
                    v.push(Open {
                        addr,
                        at_ns,
                        flags,
                        stack: None,
                    });
                }
            }
            LockLine::End { pid, at_ns, addr } => {
                let Some(v) = self.open.get_mut(&pid) else {
                    return; // began before the recording did
                };
                let Some(i) = v.iter().rposition(|o| o.addr == addr) else {
                    return;
                };
                let o = v.remove(i);
                let wait = at_ns.saturating_sub(o.at_ns);
                let a = self.locks.entry(o.addr).or_default();
                a.flags |= o.flags;
                a.waits += 1;
                a.total += wait;
                a.max = a.max.max(wait);
                if o.flags & F_WRITE != 0 {
                    a.write_waits += 1;
                }
                let key = match &o.stack {
                    Some(s) => caller_of(s),
                    None => ("unknown".to_string(), Vec::new()),
                };
                let c = a.callers.entry(key).or_default();
                c.0 += 1;
                c.1 += wait;
            }
        }
    }

    /// The report: every instance, most waited-on first, the top [`LockReport::TOP`] kept.
    pub fn report(mut self, recorded_s: f64, lost_events: u64, source: &str) -> LockReport {
        self.end_stack();
        let unfinished = self.open.values().map(|v| v.len() as u64).sum();
        let mut locks: Vec<LockInstance> = self
            .locks
            .into_iter()
            .map(|(addr, a)| instance(addr, a))
            .collect();
        locks.sort_by(|a, b| {
            b.wait_total_ns
                .cmp(&a.wait_total_ns)
                .then(a.addr.cmp(&b.addr))
        });
        let waits = locks.iter().map(|l| l.waits).sum();
        let wait_total_ns = locks.iter().map(|l| l.wait_total_ns).sum();
        let rest: Vec<LockInstance> = locks.split_off(locks.len().min(LockReport::TOP));
        LockReport {
            source: source.into(),
            kernel: fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_string())
                .unwrap_or_default(),
            recorded_s,
            waits,
            wait_total_ns,
            unfinished,
            lost_events,
            locks,
            others: rest.len() as u64,
            others_wait_ns: rest.iter().map(|l| l.wait_total_ns).sum(),
        }
    }
}

/// One instance's summary, named from its callers where they tell.
fn instance(addr: String, a: Acc) -> LockInstance {
    let kind = kind_of(a.flags);
    let mut callers: Vec<LockCaller> = a
        .callers
        .into_iter()
        .map(|((function, path), (waits, total))| LockCaller {
            function,
            path,
            waits,
            wait_total_ns: total,
        })
        .collect();
    callers.sort_by(|x, y| {
        y.wait_total_ns
            .cmp(&x.wait_total_ns)
            .then(x.function.cmp(&y.function))
    });
    let (name, identified_by) = name_of(kind, &callers);
    callers.truncate(LockInstance::CALLERS);
    LockInstance {
        addr,
        kind: kind.into(),
        name,
        identified_by,
        waits: a.waits,
        wait_total_ns: a.total,
        wait_max_ns: a.max,
        write_waits: a.write_waits,
        callers,
    }
}

/// A directory's or a file's `i_rwsem` when every caller with a stack is one of that kind's
/// sites (and there is one); nilfs2's `ns_segctor_sem` when a caller is one of the sites that
/// take only it and none is a directory's or a file's site (all callers of one instance wait
/// for the same lock); otherwise no name.
fn name_of(kind: &str, callers: &[LockCaller]) -> (Option<String>, Option<String>) {
    if kind != "rwsem" {
        return (None, None);
    }
    let known: Vec<&LockCaller> = callers.iter().filter(|c| c.function != "unknown").collect();
    if known.is_empty() {
        return (None, None);
    }
    let dir = |c: &LockCaller| {
        DIR_SITES
            .iter()
            .find(|(f, _)| *f == c.function)
            .map(|(_, what)| *what)
    };
    if known.iter().all(|c| dir(c).is_some()) {
        let mut what: Vec<&str> = known.iter().filter_map(|c| dir(c)).collect();
        what.dedup();
        let sites: Vec<&str> = known.iter().map(|c| c.function.as_str()).collect();
        return (
            Some(DIR_RWSEM.into()),
            Some(format!(
                "an rwsem waited on only from the VFS's directory-locking sites ({}: {})",
                sites.join(", "),
                what.join(", ")
            )),
        );
    }
    if known
        .iter()
        .all(|c| FILE_SITES.contains(&c.function.as_str()))
    {
        let sites: Vec<&str> = known.iter().map(|c| c.function.as_str()).collect();
        return (
            Some(FILE_RWSEM.into()),
            Some(format!(
                "an rwsem waited on only from regular files' write and truncate sites ({})",
                sites.join(", ")
            )),
        );
    }
    let segctor = |c: &LockCaller| NILFS_SEGCTOR_SITES.contains(&c.function.as_str());
    let inode = |c: &LockCaller| dir(c).is_some() || FILE_SITES.contains(&c.function.as_str());
    if known.iter().any(|c| segctor(c)) && !known.iter().any(|c| inode(c)) {
        let mut sites: Vec<&str> = known
            .iter()
            .filter(|c| segctor(c))
            .map(|c| c.function.as_str())
            .collect();
        sites.sort();
        sites.dedup();
        let mut others: Vec<&str> = known
            .iter()
            .filter(|c| !segctor(c))
            .map(|c| c.function.as_str())
            .collect();
        others.sort();
        others.dedup();
        return (
            Some(NILFS_SEGCTOR_SEM.into()),
            Some(format!(
                "an rwsem waited on from nilfs2's transaction sites ({}), which take \
                 ns_segctor_sem and no other rwsem{}",
                sites.join(", "),
                if others.is_empty() {
                    String::new()
                } else {
                    format!("; its other callers: {}", others.join(", "))
                }
            )),
        );
    }
    (None, None)
}

/// This kernel has no lock contention tracepoints (they came with Linux 5.19).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoLockTracepoints {
    /// The running kernel's release (`/proc/sys/kernel/osrelease`).
    pub release: String,
}

impl std::fmt::Display for NoLockTracepoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "this kernel ({}) has no lock:contention_begin tracepoint (kernels since 5.19 have it)",
            self.release
        )
    }
}

impl std::error::Error for NoLockTracepoints {}

/// Whether this kernel has the tracepoints (tracefs mounted or not: its event directory).
pub fn available() -> std::result::Result<(), NoLockTracepoints> {
    let release = fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    for root in [TRACEFS, "/sys/kernel/debug/tracing"] {
        if Path::new(root)
            .join("events/lock/contention_begin")
            .is_dir()
        {
            return Ok(());
        }
    }
    if Path::new(TRACEFS).join("events").is_dir() {
        return Err(NoLockTracepoints { release });
    }
    Ok(()) // tracefs is not mounted: LockTrace::start mounts it and checks again
}

/// A recording over a workload's measured phase, driven by the workload's
/// `Observer::measuring` hook: started when the first repetition's measured phase starts,
/// stopped when it ends (one recording per run: later repetitions are not recorded).
#[derive(Default)]
pub struct PhaseRecorder {
    trace: Option<LockTrace>,
    report: Option<LockReport>,
    error: Option<Error>,
}

impl PhaseRecorder {
    /// The measured phase starts (`true`) or has ended (`false`).
    pub fn measuring(&mut self, started: bool) {
        if started {
            if self.trace.is_none() && self.report.is_none() && self.error.is_none() {
                match LockTrace::start() {
                    Ok(t) => self.trace = Some(t),
                    Err(e) => self.error = Some(e),
                }
            }
        } else if let Some(t) = self.trace.take() {
            match t.finish() {
                Ok(r) => self.report = Some(r),
                Err(e) => self.error = Some(e),
            }
        }
    }

    /// The report (`None` when no measured phase began), or why recording failed.
    pub fn finish(mut self) -> Result<Option<LockReport>> {
        self.measuring(false);
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.report),
        }
    }
}

/// A running recording of lock contention; [`LockTrace::finish`] stops it. Dropping it stops it
/// too and removes its instance.
pub struct LockTrace {
    instance: PathBuf,
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<Result<LockAggregator>>>,
    started: Instant,
    registered: bool,
}

impl LockTrace {
    /// Starts recording every task's lock contention. Needs root.
    pub fn start() -> Result<LockTrace> {
        if !fsage_sys::is_root() {
            crate::bail!("lock contention tracing needs root (tracefs)");
        }
        trace::register()?;
        let mut t = LockTrace {
            instance: PathBuf::new(),
            stop: Arc::new(AtomicBool::new(false)),
            reader: None,
            started: Instant::now(),
            registered: true,
        };
        let instance = trace::next_instance();
        fs::create_dir(&instance)
            .map_err(|e| Error::io(&instance, "cannot make a trace instance", e))?;
        t.instance = instance;
        let ev = t.instance.join("events/lock");
        if !ev.join("contention_begin").is_dir() || !ev.join("contention_end").is_dir() {
            let release = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
            crate::bail!(
                "{}: this kernel ({}) has no lock:contention_begin/contention_end tracepoints \
                 (kernels since 5.19 have them)",
                ev.display(),
                release.trim()
            );
        }
        let _ = wr(&t.instance.join("buffer_size_kb"), "16384");
        // One clock on every CPU: a task may wait on one CPU and wake on another.
        let _ = wr(&t.instance.join("trace_clock"), "mono");
        wr(&ev.join("contention_begin/trigger"), TRIGGER)?;
        wr(&ev.join("contention_begin/enable"), "1")?;
        wr(&ev.join("contention_end/enable"), "1")?;
        wr(&t.instance.join("tracing_on"), "1")?;
        let pipe = t.instance.join("trace_pipe");
        let mut f = trace::open_pipe(&t.instance)?;
        let stop = t.stop.clone();
        t.started = Instant::now();
        t.reader = Some(std::thread::spawn(move || {
            let mut agg = LockAggregator::default();
            let mut buf = vec![0u8; 1 << 16];
            let mut partial = String::new();
            let mut idle_after_stop = 0;
            loop {
                match f.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        partial.push_str(&String::from_utf8_lossy(&buf[..n]));
                        let mut start = 0;
                        while let Some(i) = partial[start..].find('\n') {
                            agg.line(&partial[start..start + i]);
                            start += i + 1;
                        }
                        partial.drain(..start);
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::operation(format!("{}: {e}", pipe.display()))),
                }
                if stop.load(Ordering::SeqCst) {
                    idle_after_stop += 1;
                    if idle_after_stop >= 3 {
                        return Ok(agg);
                    }
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        }));
        Ok(t)
    }

    /// Stops recording; the waits per lock instance.
    pub fn finish(mut self) -> Result<LockReport> {
        let recorded_s = self.started.elapsed().as_secs_f64();
        self.disable();
        self.stop.store(true, Ordering::SeqCst);
        let agg = self
            .reader
            .take()
            .map(|h| h.join())
            .unwrap_or_else(|| Ok(Ok(LockAggregator::default())))
            .map_err(|_| Error::operation("the lock trace's reader thread panicked"))??;
        let lost = trace::overruns(&self.instance);
        Ok(agg.report(
            recorded_s,
            lost,
            "lock:contention_begin/contention_end tracepoints (tracefs instance; a stack \
             trace at each begin but a plain spinlock's)",
        ))
    }

    fn disable(&self) {
        let ev = self.instance.join("events/lock");
        let _ = fs::write(ev.join("contention_begin/enable"), "0");
        let _ = fs::write(ev.join("contention_end/enable"), "0");
        let _ = fs::write(self.instance.join("tracing_on"), "0");
        let _ = fs::write(ev.join("contention_begin/trigger"), format!("!{TRIGGER}"));
    }
}

impl Drop for LockTrace {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if self.instance.as_os_str().is_empty() {
            if self.registered {
                trace::unregister();
            }
            return;
        }
        self.disable();
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        trace::remove_instance(&self.instance);
        if self.registered {
            self.registered = false;
            trace::unregister();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as this machine's kernel (6.18) wrote them: six shells creating and removing files
    /// in one ext4 directory (addresses hashed by the kernel), interleaved with another CPU's
    /// events, a spinlock without a stack, and a mutex that spun and then slept.
    const CAPTURED: &str = "\
            bash-7791    [001] d..2. 51648.916148: contention_begin: 0000000068ec0384 (flags=WRITE)
           <...>-9011    [000] d..2. 51648.916150: contention_begin: 00000000e1952503 (flags=SPIN)
            bash-7791    [001] d..2. 51648.916180: <stack trace>
 => trace_event_raw_event_contention_begin
 => rwsem_down_write_slowpath
 => down_write
 => path_openat
 => do_filp_open
 => do_sys_openat2
 => __x64_sys_openat
 => do_syscall_64
 => entry_SYSCALL_64_after_hwframe
           <...>-9011    [000] d..2. 51648.916151: contention_end: 00000000e1952503 (ret=0)
              rm-8557    [000] d..2. 51648.917247: contention_begin: 0000000068ec0384 (flags=WRITE)
              rm-8557    [000] d..2. 51648.917277: <stack trace>
 => trace_event_raw_event_contention_begin
 => rwsem_down_write_slowpath
 => down_write
 => do_unlinkat
 => __x64_sys_unlinkat
 => do_syscall_64
 => entry_SYSCALL_64_after_hwframe
            bash-7791    [001] ...1. 51648.917919: contention_end: 0000000068ec0384 (ret=0)
              rm-8557    [000] ...1. 51648.918919: contention_end: 0000000068ec0384 (ret=0)
 kworker/u8:1-xy-4192    [001] d..1. 51649.000000: contention_begin: 00000000aaaaaaaa (flags=MUTEX|SPIN)
 kworker/u8:1-xy-4192    [001] d..1. 51649.000001: <stack trace>
 => trace_event_raw_event_contention_begin
 => __mutex_lock.constprop.0
 => nilfs_segctor_thread+0x1a/0x30
 => kthread
 kworker/u8:1-xy-4192    [001] d..1. 51649.000100: contention_begin: 00000000aaaaaaaa (flags=MUTEX)
 kworker/u8:1-xy-4192    [001] d..1. 51649.000101: <stack trace>
 => trace_event_raw_event_contention_begin
 => __mutex_lock.constprop.0
 => other_caller
 kworker/u8:1-xy-4192    [001] d..1. 51649.002000: contention_end: 00000000aaaaaaaa (ret=0)
            bash-7795    [001] d..2. 51649.100000: contention_begin: 00000000bbbbbbbb (flags=READ)
";

    #[test]
    fn lines_parse_with_pid_time_address_and_flags() {
        let mut l = CAPTURED.lines();
        assert_eq!(
            parse_line(l.next().unwrap()),
            Some(LockLine::Begin {
                pid: 7791,
                at_ns: 51_648_916_148_000,
                addr: "0000000068ec0384".into(),
                flags: F_WRITE
            })
        );
        assert!(matches!(
            parse_line(l.next().unwrap()),
            Some(LockLine::Begin {
                pid: 9011,
                flags: F_SPIN,
                ..
            })
        ));
        assert_eq!(
            parse_line(l.next().unwrap()),
            Some(LockLine::Stack { pid: 7791 })
        );
        assert_eq!(
            parse_line(" => down_write"),
            Some(LockLine::Frame("down_write".into()))
        );
        assert_eq!(parse_flags("MUTEX|SPIN"), Some(F_MUTEX | F_SPIN));
        assert_eq!(
            head_pid(" kworker/u8:1-xy-4192    [001] d..1. 1.0:"),
            Some(4192)
        );
        assert_eq!(head_pid(" Web Content-77 [000] ..... 1.0:"), Some(77));
        assert!(parse_line("# tracer: nop").is_none());
    }

    #[test]
    fn waits_pair_per_task_and_name_the_directory_lock_by_its_callers() {
        let mut a = LockAggregator::default();
        for l in CAPTURED.lines() {
            a.line(l);
        }
        let r = a.report(2.0, 0, "test");
        assert_eq!(r.unfinished, 1, "bash-7795's READ begin never ended");
        assert_eq!(r.waits, 4);
        let top = &r.locks[0];
        assert_eq!(top.addr, "0000000068ec0384");
        assert_eq!(top.kind, "rwsem");
        // 916148 -> 917919 and 917247 -> 918919 (microseconds).
        assert_eq!(top.waits, 2);
        assert_eq!(top.wait_total_ns, 1_771_000 + 1_672_000);
        assert_eq!(top.wait_max_ns, 1_771_000);
        assert_eq!(top.write_waits, 2);
        assert_eq!(top.name.as_deref(), Some(DIR_RWSEM));
        let fns: Vec<&str> = top.callers.iter().map(|c| c.function.as_str()).collect();
        assert_eq!(fns, ["path_openat", "do_unlinkat"]);
        assert_eq!(top.callers[0].path[0], "do_filp_open");
        assert!(top
            .identified_by
            .as_deref()
            .unwrap()
            .contains("path_openat"));
        // The mutex that spun then slept: one wait from its first begin, its first stack.
        let m = r.locks.iter().find(|l| l.kind == "mutex").unwrap();
        assert_eq!((m.waits, m.wait_total_ns), (1, 2_000_000));
        assert_eq!(m.callers[0].function, "nilfs_segctor_thread");
        assert_eq!(m.callers[0].path, ["kthread"]);
        assert_eq!(m.name, None);
        // The spinlock: no stack, caller unknown, no name.
        let s = r.locks.iter().find(|l| l.kind == "spinlock").unwrap();
        assert_eq!((s.waits, s.wait_total_ns), (1, 1_000));
        assert_eq!(s.callers[0].function, "unknown");
        assert_eq!(r.wait_total_ns, 1_771_000 + 1_672_000 + 2_000_000 + 1_000);
    }

    #[test]
    fn a_lock_with_callers_of_several_kinds_gets_no_name() {
        let c = |f: &str| LockCaller {
            function: f.into(),
            path: vec![],
            waits: 1,
            wait_total_ns: 1,
        };
        assert_eq!(
            name_of("rwsem", &[c("do_unlinkat"), c("filename_create")]).0,
            Some(DIR_RWSEM.into())
        );
        assert_eq!(
            name_of("rwsem", &[c("generic_file_write_iter")]).0,
            Some(FILE_RWSEM.into())
        );
        assert_eq!(
            name_of("rwsem", &[c("do_unlinkat"), c("vm_mmap_pgoff")]).0,
            None
        );
        assert_eq!(name_of("mutex", &[c("do_unlinkat")]).0, None);
        assert_eq!(
            name_of(
                "rwsem",
                &[
                    c("nilfs_transaction_begin"),
                    c("nilfs_relax_pressure_in_lock")
                ]
            )
            .0,
            Some(NILFS_SEGCTOR_SEM.into())
        );
        // One transaction site names it whatever else waits on it (the cleaner's ioctls), but
        // not beside a directory's site.
        assert_eq!(
            name_of(
                "rwsem",
                &[c("nilfs_transaction_begin"), c("nilfs_ioctl_do_get_suinfo")]
            )
            .0,
            Some(NILFS_SEGCTOR_SEM.into())
        );
        assert_eq!(
            name_of("rwsem", &[c("nilfs_transaction_begin"), c("do_unlinkat")]).0,
            None
        );
        assert_eq!(name_of("rwsem", &[c("unknown")]).0, None);
        assert_eq!(kind_of(F_SPIN | F_READ), "rwlock");
        assert_eq!(kind_of(F_PERCPU | F_READ), "percpu-rwsem");
        assert!(is_lock_frame("rwsem_down_write_slowpath") && !is_lock_frame("do_unlinkat"));
    }
}
