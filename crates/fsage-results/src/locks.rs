//! Lock contention by lock instance over a workload's measured phase, from the kernel's
//! `lock:contention_begin` / `lock:contention_end` tracepoints (kernels since 5.19; no lockdep
//! or lock_stat needed): each contending task's wait from begin to end, keyed by the lock's
//! address, with the caller from a stack trace of the begin.

use serde::{Deserialize, Serialize};

/// The contended lock instances of one run, most waited-on first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockReport {
    /// How it was recorded (`lock:contention_begin/end tracepoints, tracefs instance ...`).
    pub source: String,
    /// The kernel it was recorded under (`uname -r`).
    pub kernel: String,
    /// How long the recording ran (the workload's measured phase), in seconds.
    pub recorded_s: f64,
    /// Waits recorded (a begin matched by its end), over every lock.
    pub waits: u64,
    /// Total wait over every lock, in nanoseconds (tasks waiting at once each count).
    pub wait_total_ns: u64,
    /// Begins still waiting when the recording stopped (not counted in the waits).
    pub unfinished: u64,
    /// Events the trace buffer lost (it filled faster than it was read): when not 0, the
    /// waits are a lower bound.
    pub lost_events: u64,
    /// The instances with the most wait, most first (at most [`LockReport::TOP`]).
    pub locks: Vec<LockInstance>,
    /// The instances left out of `locks`: how many and their total wait.
    pub others: u64,
    pub others_wait_ns: u64,
}

impl LockReport {
    /// How many instances a report keeps.
    pub const TOP: usize = 40;

    /// The instances named `name` (e.g. [`DIR_RWSEM`]), most waited-on first.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a LockInstance> + 'a {
        self.locks
            .iter()
            .filter(move |l| l.name.as_deref() == Some(name))
    }
}

/// What fsage calls a directory inode's `i_rwsem` (the lock class lockdep and `perf lock`
/// call `i_mutex_dir_key`).
pub const DIR_RWSEM: &str = "directory i_rwsem (i_mutex_dir_key)";
/// A regular file's `i_rwsem` (lockdep's `i_mutex_key`).
pub const FILE_RWSEM: &str = "file i_rwsem (i_mutex_key)";

/// One lock instance (one address) and its waits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockInstance {
    /// The lock's address as the tracepoint prints it (hashed by the kernel's `%p`: the same
    /// lock gives the same text within one boot, and no kernel address is recorded).
    pub addr: String,
    /// The lock's type from the tracepoint's flags: `rwsem`, `mutex`, `spinlock`, `rwlock`,
    /// `percpu-rwsem`, `rt-mutex`.
    pub kind: String,
    /// What it is, when its callers tell (`directory i_rwsem (i_mutex_dir_key)`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// How `name` was decided (which callers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identified_by: Option<String>,
    pub waits: u64,
    pub wait_total_ns: u64,
    pub wait_max_ns: u64,
    /// Waits for it as a writer (exclusive); the rest as readers (rwsems, rwlocks) or plain.
    pub write_waits: u64,
    /// Its callers, most waited first (at most [`LockInstance::CALLERS`]).
    pub callers: Vec<LockCaller>,
}

impl LockInstance {
    /// How many callers an instance keeps.
    pub const CALLERS: usize = 10;
}

/// Where the waits for a lock came from: the first function of the stack outside the locking
/// code, and the frames above it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockCaller {
    /// `path_openat`, `do_unlinkat`; `unknown` when no stack was recorded.
    pub function: String,
    /// The next frames outward (callers of `function`), up to four.
    #[serde(default)]
    pub path: Vec<String>,
    pub waits: u64,
    pub wait_total_ns: u64,
}
