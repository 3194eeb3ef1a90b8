//! Checks made before a run touches anything: will the planner fit in memory?

use fsage_plan::{estimate_memory, MemoryEstimate, PlanConfig};
use fsage_profile::{human_bytes, Profile};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "the planner would need about {} of memory ({} live files, {} directories, {} histogram \
         cells), more than the {} this process may allocate (free memory, its rlimits and its cgroup's limit)",
        human_bytes(.estimate.bytes), .estimate.live_files, .estimate.directories,
        .estimate.cells, human_bytes(*.limit)
    )]
    TooMuchMemory {
        estimate: MemoryEstimate,
        limit: u64,
    },
}

impl fsage_sys::Blamed for PreflightError {
    fn blame(&self) -> fsage_sys::Blame {
        fsage_sys::Blame::Input
    }
}

/// Memory this process may still allocate: the least of the machine's MemAvailable, the address
/// space and data limits (RLIMIT_AS, RLIMIT_DATA, less what is mapped now) and the memory limit of
/// the cgroup it runs in (v2 `memory.max` or v1 `memory.limit_in_bytes`, less its usage). `None`
/// where none of them is known.
pub fn memory_available() -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut take = |v: Option<u64>| {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    take(meminfo_available());
    let mapped = proc_status_kib("VmSize").unwrap_or(0) * 1024;
    for res in [
        rustix::process::Resource::As,
        rustix::process::Resource::Data,
    ] {
        if let Some(max) = rustix::process::getrlimit(res).current {
            take(Some(max.saturating_sub(mapped)));
        }
    }
    take(cgroup_room());
    best
}

fn meminfo_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn proc_status_kib(key: &str) -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = text
        .lines()
        .find(|l| l.strip_prefix(key).is_some_and(|r| r.starts_with(':')))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Room left under this process's cgroup memory limit, if it has one.
fn cgroup_room() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: String| -> Option<u64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let mut best: Option<u64> = None;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        let room =
            if ctrl.is_empty() {
                ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                    .iter()
                    .find_map(|root| {
                        let limit = read(format!("{root}{path}/memory.max"))?;
                        Some(limit.saturating_sub(
                            read(format!("{root}{path}/memory.current")).unwrap_or(0),
                        ))
                    })
            } else if ctrl.split(',').any(|c| c == "memory") {
                let root = "/sys/fs/cgroup/memory";
                read(format!("{root}{path}/memory.limit_in_bytes")).map(|limit| {
                    limit.saturating_sub(
                        read(format!("{root}{path}/memory.usage_in_bytes")).unwrap_or(0),
                    )
                })
            } else {
                None
            };
        if let Some(r) = room {
            best = Some(best.map_or(r, |b| b.min(r)));
        }
    }
    best
}

/// Refuses a plan whose estimated memory exceeds `limit` (default: what is available now).
pub fn check_memory(
    profile: &Profile,
    cfg: &PlanConfig,
    limit: Option<u64>,
) -> Result<MemoryEstimate, PreflightError> {
    let estimate = estimate_memory(profile, cfg);
    if let Some(limit) = limit.or_else(memory_available) {
        if estimate.bytes > limit {
            return Err(PreflightError::TooMuchMemory { estimate, limit });
        }
    }
    Ok(estimate)
}

/// Planner decisions per second of a dry run, measured on this project's 2-core machines
/// (BENCHMARKS.md: 6.5 to 13.6 M/s; the low end, to warn early rather than late).
pub const DRY_RUN_TICKS_PER_S: f64 = 6.0e6;
/// Operations per second of a real run on ext4 in memory (BENCHMARKS.md: 33 k to 75 k ops/s);
/// slower devices are slower still.
pub const REAL_RUN_TICKS_PER_S: f64 = 5.0e4;

/// How long `ticks` take at the measured speeds.
pub fn estimate_seconds(ticks: u64, dry_run: bool) -> f64 {
    ticks as f64
        / if dry_run {
            DRY_RUN_TICKS_PER_S
        } else {
            REAL_RUN_TICKS_PER_S
        }
}

/// Why a target cannot be aged as it is; every variant is the user's to fix.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{}: cannot create the target directory: {err}", path.display())]
    Create { path: PathBuf, err: std::io::Error },
    #[error("{}: {err}", path.display())]
    Io { path: PathBuf, err: std::io::Error },
    #[error("{}: not a directory", path.display())]
    NotADirectory { path: PathBuf },
    #[error(
        "{}: the target is not empty ({entries} entr{}); fsage writes only into an empty directory \
         so that nothing of yours is touched. Use an empty directory, or force it",
        path.display(), if *entries == 1 { "y" } else { "ies" }
    )]
    NotEmpty { path: PathBuf, entries: usize },
    #[error(
        "{}: a symbolic link to {}, which is on another file system ({}, {}) than the link \
         ({}, {}); the run would age that one. Give the real path, or force it",
        link.display(), real.display(), real_fs, human_bytes(*real_size), link_fs,
        human_bytes(*link_size)
    )]
    SymlinkElsewhere {
        link: PathBuf,
        real: PathBuf,
        link_fs: String,
        link_size: u64,
        real_fs: String,
        real_size: u64,
    },
    #[error("{}: cannot write there: {err}", path.display())]
    NotWritable { path: PathBuf, err: std::io::Error },
    #[error(
        "{}: the file system has {free} free inodes, but this run needs about {needed} ({dirs} \
         directories and the files); make the file system with more inodes (for ext4, mkfs.ext4 \
         -i 4096) or age a smaller capacity",
        path.display()
    )]
    TooFewInodes {
        path: PathBuf,
        free: u64,
        needed: u64,
        dirs: u64,
    },
    #[error(
        "{}: another fsage is running this run now ({holder}; it holds the lock {}); wait for it \
         or stop it",
        state.display(), lock.display()
    )]
    Locked {
        state: PathBuf,
        holder: String,
        lock: PathBuf,
    },
    #[error("{}: cannot open the run's lock: {err}", path.display())]
    Lock { path: PathBuf, err: std::io::Error },
    #[error("{message}")]
    UnsafeLockDir { message: String },
}

impl fsage_sys::Blamed for TargetError {
    fn blame(&self) -> fsage_sys::Blame {
        match self {
            TargetError::Lock { .. } => fsage_sys::Blame::Operation,
            _ => fsage_sys::Blame::Input,
        }
    }
    /// The refusals that protect what is there say "or force it": `--force` gets past them.
    fn remedy(&self) -> Option<fsage_sys::Remedy> {
        match self {
            TargetError::NotEmpty { .. } | TargetError::SymlinkElsewhere { .. } => {
                Some(fsage_sys::Remedy::Force)
            }
            _ => None,
        }
    }
}

/// Makes sure `target` is an empty directory fsage may age (creating it if missing), unless
/// `force`. A symbolic link that leads onto another file system is refused unless `force`: its
/// capacity would be taken from the file system the user did not name.
pub fn prepare_target(target: &Path, force: bool) -> Result<(), TargetError> {
    let io = |err| TargetError::Io {
        path: target.to_path_buf(),
        err,
    };
    match fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            fs::create_dir(target).map_err(|err| TargetError::Create {
                path: target.to_path_buf(),
                err,
            })
        }
        Err(e) => Err(io(e)),
        Ok(m) if m.file_type().is_symlink() => {
            let real = fs::metadata(target).map_err(io)?;
            if !real.is_dir() {
                return Err(TargetError::NotADirectory {
                    path: target.to_path_buf(),
                });
            }
            if !force {
                let parent = match target.parent() {
                    Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                let (a, b) = (
                    fsage_sys::device_of(&parent).map_err(io)?,
                    fsage_sys::device_of(target).map_err(io)?,
                );
                if a != b {
                    let (ls, rs) = (
                        fsage_sys::fs_stat(&parent).map_err(io)?,
                        fsage_sys::fs_stat(target).map_err(io)?,
                    );
                    return Err(TargetError::SymlinkElsewhere {
                        link: target.to_path_buf(),
                        real: fs::canonicalize(target).map_err(io)?,
                        link_fs: ls.type_name(),
                        link_size: ls.size,
                        real_fs: rs.type_name(),
                        real_size: rs.size,
                    });
                }
            }
            check_empty(target, force)
        }
        Ok(m) if !m.is_dir() => Err(TargetError::NotADirectory {
            path: target.to_path_buf(),
        }),
        Ok(_) => check_empty(target, force),
    }
}

fn check_empty(target: &Path, force: bool) -> Result<(), TargetError> {
    let entries = fs::read_dir(target)
        .map_err(|err| TargetError::Io {
            path: target.to_path_buf(),
            err,
        })?
        .filter_map(Result::ok)
        .filter(|e| !fsage_sys::is_fs_own_root_entry(&e.file_name()))
        .count();
    if entries > 0 && !force {
        return Err(TargetError::NotEmpty {
            path: target.to_path_buf(),
            entries,
        });
    }
    Ok(())
}

/// Refuses a target on a read-only file system or one this process may not write to.
pub fn check_writable(target: &Path) -> Result<(), TargetError> {
    fsage_sys::may_write(target).map_err(|err| TargetError::NotWritable {
        path: target.to_path_buf(),
        err,
    })
}

/// Refuses a run that needs more inodes than the target's file system has free (where it has a
/// fixed number), with 5% to spare.
pub fn check_inodes(target: &Path, dirs: u64, needed: u64) -> Result<(), TargetError> {
    if let Some(free) = fsage_sys::fs_stat(target).ok().and_then(|s| s.free_inodes) {
        if free < needed + needed / 20 {
            return Err(TargetError::TooFewInodes {
                path: target.to_path_buf(),
                free,
                needed,
                dirs,
            });
        }
    }
    Ok(())
}

/// A run's lock ([`fsage_sys::lock`]): held while this lives; its file is removed when it is
/// dropped, so lock files do not pile up.
#[derive(Debug, Clone)]
pub struct RunLock(#[allow(dead_code)] fsage_sys::lock::Lock);

/// Where run locks live: $FSAGE_LOCK_DIR, /run/fsage-locks, or the temporary directory's.
pub fn lock_dir() -> PathBuf {
    fsage_sys::lock::lock_dir()
}

/// Takes the lock of the run saved in `state` for as long as the guard lives: two sessions of one
/// run at once would undo each other's files. The lock file is named after the state file's
/// absolute path and lives in [`lock_dir`], so nothing is added beside the target, which may be on
/// the very file system being aged.
pub fn lock_run(state: &Path) -> Result<RunLock, TargetError> {
    let abs = std::path::absolute(state).unwrap_or_else(|_| state.to_path_buf());
    let abs = match (
        abs.parent().and_then(|p| p.canonicalize().ok()),
        abs.file_name(),
    ) {
        (Some(dir), Some(name)) => dir.join(name),
        _ => abs,
    };
    match fsage_sys::lock::take(&lock_dir(), "", &abs.to_string_lossy(), false, false) {
        Ok(l) => Ok(RunLock(l)),
        Err(fsage_sys::lock::LockError::Held { holder, lock }) => Err(TargetError::Locked {
            state: state.to_path_buf(),
            holder,
            lock,
        }),
        Err(fsage_sys::lock::LockError::Unusable(e)) => {
            Err(TargetError::UnsafeLockDir { message: e.message })
        }
    }
}

/// Removes the lock files in `dir` that nobody holds, except `keep` ([`fsage_sys::lock::sweep_stale`]).
pub fn sweep_stale_locks(dir: &Path, keep: &Path) -> usize {
    fsage_sys::lock::sweep_stale(dir, keep)
}
