//! Filesets: where their files go (a directory tree with a mean width), how big each is (drawn
//! once per seed), which exist before the run (`prealloc` percent, chosen by the seed), and the
//! pool that hands files to threads during the run.
//!
//! The pool keeps every entry in exactly one state: free (no file), idle (a file nobody holds),
//! open (a file one or more threads hold), or in transit (being created or deleted by one
//! thread). `createfile` takes a free entry, `deletefile` an idle one, `openfile` and `statfile`
//! any existing one; so the free and used entries stay balanced whatever the thread timing, and a
//! file another thread holds open is never deleted under it.

use crate::error::Error;
use crate::model::FilesetDef;
use fsage_plan::Rng;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Where a fileset's files go and how big each is.
#[derive(Debug, Clone)]
pub struct Layout {
    pub name: String,
    /// `TARGET/<fileset name>`.
    pub root: PathBuf,
    /// Directories under the root, parents first (relative paths).
    pub dirs: Vec<PathBuf>,
    /// Every entry: relative path, size, whether it exists before the run.
    pub entries: Vec<Entry>,
    /// Directories that hold files (the leaves of the tree).
    pub leaf_dirs: u64,
    /// The entries are directories (`leafdirs=`), not files.
    pub entry_dirs: bool,
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub rel: PathBuf,
    pub size: u64,
    pub prealloc: bool,
}

fn digits(n: u64) -> usize {
    n.max(1).to_string().len()
}

/// Plans a fileset: `ceil(entries / dirwidth)` leaf directories holding the files in equal
/// shares (so the mean is at most `dirwidth`), under a tree of directories at most `dirwidth`
/// wide; one leaf means the files sit in the fileset's root. Sizes and the preallocated entries
/// come from `seed`.
pub fn plan(def: &FilesetDef, target: &Path, seed: u64) -> Layout {
    let n = def.entries;
    let width = def.dirwidth.max(1);
    let leaves = n.div_ceil(width).max(1);
    let mut depth = 0u32;
    let mut cap = 1u64;
    while cap < leaves {
        cap = cap.saturating_mul(width);
        depth += 1;
    }
    let dw = digits(width - 1);
    let leaf_path = |j: u64| -> PathBuf {
        let mut parts = Vec::with_capacity(depth as usize);
        let mut x = j;
        for _ in 0..depth {
            parts.push(x % width);
            x /= width;
        }
        parts.iter().rev().map(|d| format!("d{d:0dw$}")).collect()
    };
    let mut dirs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    if depth > 0 {
        for j in 0..leaves {
            let p = leaf_path(j);
            let mut acc = PathBuf::new();
            for c in p.components() {
                acc.push(c);
                if seen.insert(acc.clone()) {
                    dirs.push(acc.clone());
                }
            }
        }
    }
    let mut rng = Rng::new(seed ^ hash_name(&def.name));
    let fw = digits(n - 1);
    let mut entries: Vec<Entry> = (0..n)
        .map(|i| {
            let leaf = (i as u128 * leaves as u128 / n as u128) as u64;
            let size = def.size.sample(&mut rng);
            let dir = if depth > 0 {
                leaf_path(leaf)
            } else {
                PathBuf::new()
            };
            Entry {
                rel: dir.join(if def.dirs {
                    format!("l{i:0fw$}")
                } else {
                    format!("f{i:0fw$}")
                }),
                size,
                prealloc: false,
            }
        })
        .collect();
    // Which entries exist: a seeded partial shuffle picks round(entries * prealloc / 100).
    let want = ((n as u128 * def.prealloc as u128 + 50) / 100) as u64;
    let mut idx: Vec<u64> = (0..n).collect();
    for k in 0..want {
        let j = k + rng.below(n - k);
        idx.swap(k as usize, j as usize);
        entries[idx[k as usize] as usize].prealloc = true;
    }
    Layout {
        name: def.name.clone(),
        root: target.join(&def.name),
        dirs,
        entries,
        leaf_dirs: leaves,
        entry_dirs: def.dirs,
    }
}

fn hash_name(s: &str) -> u64 {
    // FNV-1a: stable across versions, unlike std's hasher.
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

impl Layout {
    /// Bytes of the files that exist before the run.
    pub fn prealloc_bytes(&self) -> u64 {
        self.entries
            .iter()
            .filter(|e| e.prealloc)
            .map(|e| e.size)
            .sum()
    }

    /// Bytes of all entries (the fileset's size if every file existed).
    pub fn total_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.size).sum()
    }

    /// Bytes already on disk where a preallocated file should be (for a reused fileset).
    pub fn present_bytes(&self) -> u64 {
        self.entries
            .iter()
            .filter_map(|e| std::fs::symlink_metadata(self.root.join(&e.rel)).ok())
            .filter(|m| m.is_file())
            .map(|m| m.len())
            .sum()
    }

    /// Brings the disk to the planned state: directories made, every preallocated file present
    /// with its size (written with `data`: incompressible bytes by default; zeros for
    /// `filebench`, as Filebench's uninitialised allocation buffer holds in practice), every
    /// other entry absent. A fresh target gets everything written; a reused one only what
    /// differs. `tick` is called after every file with (done, total) and stops the layout when it
    /// returns false.
    pub fn materialize(
        &self,
        data_pattern: fsage_plan::DataPattern,
        mut tick: impl FnMut(u64, u64) -> bool,
    ) -> Result<(), Error> {
        mkdir(&self.root)?;
        for d in &self.dirs {
            mkdir(&self.root.join(d))?;
        }
        let mut data = vec![0u8; 1 << 20];
        let mut rng = Rng::new(0x5eed ^ hash_name(&self.name));
        data_pattern.fill(&mut data, &mut rng);
        let total = self.entries.len() as u64;
        for (i, e) in self.entries.iter().enumerate() {
            let p = self.root.join(&e.rel);
            let meta = std::fs::symlink_metadata(&p).ok();
            if self.entry_dirs {
                match (e.prealloc, meta.as_ref().map(|m| m.is_dir())) {
                    (true, Some(true)) | (false, None) => {}
                    (true, None) => mkdir(&p)?,
                    (false, Some(true)) => {
                        std::fs::remove_dir(&p).map_err(|err| Error::io("removing", &p, err))?
                    }
                    (_, Some(false)) => {
                        return Err(Error::Target(format!(
                            "{}: not a directory where the fileset keeps one",
                            p.display()
                        )))
                    }
                }
            } else if e.prealloc {
                if meta
                    .as_ref()
                    .is_some_and(|m| m.is_file() && m.len() == e.size)
                {
                    // Already there (a reused fileset).
                } else {
                    if meta.as_ref().is_some_and(|m| !m.is_file()) {
                        return Err(Error::Target(format!(
                            "{}: not a regular file where the fileset keeps one",
                            p.display()
                        )));
                    }
                    write_file(&p, e.size, &data).map_err(|err| {
                        if err.raw_os_error() == Some(rustix::io::Errno::NOSPC.raw_os_error()) {
                            Error::Target(format!(
                                "the file system filled up while laying out fileset {} ({} of {} files): make it smaller",
                                self.name, i, total
                            ))
                        } else {
                            Error::io("writing", &p, err)
                        }
                    })?;
                }
            } else if let Some(m) = meta {
                if !m.is_file() {
                    return Err(Error::Target(format!(
                        "{}: not a regular file where the fileset keeps one",
                        p.display()
                    )));
                }
                std::fs::remove_file(&p).map_err(|err| Error::io("removing", &p, err))?;
            }
            let done = i as u64 + 1;
            if (done % 256 == 0 || done == total) && !tick(done, total) {
                return Err(Error::Interrupted);
            }
        }
        Ok(())
    }
}

fn mkdir(p: &Path) -> Result<(), Error> {
    match std::fs::create_dir(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && p.is_dir() => Ok(()),
        Err(e) => Err(Error::io("making directory", p, e)),
    }
}

fn write_file(p: &Path, size: u64, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(p)?;
    let mut left = size;
    while left > 0 {
        let n = left.min(data.len() as u64) as usize;
        f.write_all(&data[..n])?;
        left -= n as u64;
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Idle,
    Open,
    Transit,
}

#[derive(Debug)]
struct Pool {
    free: Vec<u32>,
    idle: Vec<u32>,
    open: Vec<u32>,
    state: Vec<State>,
    /// Position of an entry in the list of its state.
    pos: Vec<u32>,
    refs: Vec<u32>,
    /// Threads waiting in [`Fileset::take`] for an entry to come back: only then does giving
    /// one back wake anybody (a condvar's notify is a system call even with nobody waiting).
    waiters: u32,
}

impl Pool {
    fn list(&mut self, s: State) -> &mut Vec<u32> {
        match s {
            State::Free => &mut self.free,
            State::Idle => &mut self.idle,
            State::Open => &mut self.open,
            State::Transit => unreachable!("entries in transit are in no list"),
        }
    }

    fn leave(&mut self, e: u32) {
        let s = self.state[e as usize];
        if s == State::Transit {
            return;
        }
        let at = self.pos[e as usize] as usize;
        let list = self.list(s);
        list.swap_remove(at);
        if let Some(&moved) = list.get(at) {
            self.pos[moved as usize] = at as u32;
        }
        self.state[e as usize] = State::Transit;
    }

    fn enter(&mut self, e: u32, s: State) {
        self.leave(e);
        self.state[e as usize] = s;
        if s != State::Transit {
            let list = self.list(s);
            list.push(e);
            let at = list.len() - 1;
            self.pos[e as usize] = at as u32;
        }
    }
}

/// What a flowop wants from the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// A free entry, to create (it is then in transit until [`Fileset::created`]).
    Create,
    /// An idle file, to delete (in transit until [`Fileset::deleted`]).
    Delete,
    /// Any existing file, held until [`Fileset::release`].
    Open,
}

/// A fileset during a run: the entries' absolute paths and sizes and the pool.
#[derive(Debug)]
pub struct Fileset {
    pub name: String,
    pub readonly: bool,
    /// The entries are directories.
    pub dirs: bool,
    pub paths: Vec<CString>,
    pub sizes: Vec<u64>,
    pool: Mutex<Pool>,
    cv: Condvar,
    /// Whether some flowop of the workload creates (deletes) files in this fileset: without one,
    /// an empty pool can never refill, and waiting would hang.
    pub has_create: bool,
    pub has_delete: bool,
}

/// How long a thread waits for another thread to give back an entry before the fileset is
/// declared dry.
const DRY_WAIT: Duration = Duration::from_secs(5);

impl Fileset {
    /// The run-time fileset for a laid-out `layout`: entries that exist on disk are idle.
    pub fn new(layout: &Layout, readonly: bool, has_create: bool, has_delete: bool) -> Fileset {
        let n = layout.entries.len();
        let mut pool = Pool {
            free: Vec::new(),
            idle: Vec::new(),
            open: Vec::new(),
            state: vec![State::Transit; n],
            pos: vec![0; n],
            refs: vec![0; n],
            waiters: 0,
        };
        for (i, e) in layout.entries.iter().enumerate() {
            pool.enter(i as u32, if e.prealloc { State::Idle } else { State::Free });
        }
        Fileset {
            name: layout.name.clone(),
            readonly,
            dirs: layout.entry_dirs,
            paths: layout
                .entries
                .iter()
                .map(|e| {
                    CString::new(layout.root.join(&e.rel).as_os_str().as_bytes())
                        .expect("fileset paths have no NUL")
                })
                .collect(),
            sizes: layout.entries.iter().map(|e| e.size).collect(),
            pool: Mutex::new(pool),
            cv: Condvar::new(),
            has_create,
            has_delete,
        }
    }

    /// Takes an entry for `want`, drawing among the candidates with `rng`. Waits while another
    /// thread may still give one back; `Err` (naming the fileset and what to raise) when none can
    /// come, and `Ok(None)` when `stop` says the run is over.
    pub fn take(
        &self,
        want: Want,
        rng: &mut Rng,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<u32>, Error> {
        self.take_at(want, None, rng, stop)
    }

    /// [`Fileset::take`], preferring entry `at` (`indexed=`) when it is in a state `want` can
    /// take; otherwise one drawn at random.
    pub fn take_at(
        &self,
        want: Want,
        at: Option<u32>,
        rng: &mut Rng,
        stop: &dyn Fn() -> bool,
    ) -> Result<Option<u32>, Error> {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = at.filter(|&e| (e as usize) < pool.state.len()) {
            let st = pool.state[e as usize];
            let ok = match want {
                Want::Create => st == State::Free,
                Want::Delete => st == State::Idle,
                Want::Open => st == State::Idle || st == State::Open,
            };
            if ok {
                match want {
                    Want::Create | Want::Delete => pool.enter(e, State::Transit),
                    Want::Open => {
                        pool.refs[e as usize] += 1;
                        if st == State::Idle {
                            pool.enter(e, State::Open);
                        }
                    }
                }
                return Ok(Some(e));
            }
        }
        let began = Instant::now();
        loop {
            let avail = match want {
                Want::Create => pool.free.len(),
                Want::Delete => pool.idle.len(),
                Want::Open => pool.idle.len() + pool.open.len(),
            };
            if avail > 0 {
                let k = rng.below(avail as u64) as usize;
                let e = match want {
                    Want::Create => pool.free[k],
                    Want::Delete => pool.idle[k],
                    Want::Open => {
                        if k < pool.idle.len() {
                            pool.idle[k]
                        } else {
                            pool.open[k - pool.idle.len()]
                        }
                    }
                };
                match want {
                    Want::Create | Want::Delete => pool.enter(e, State::Transit),
                    Want::Open => {
                        pool.refs[e as usize] += 1;
                        if pool.state[e as usize] == State::Idle {
                            pool.enter(e, State::Open);
                        }
                    }
                }
                return Ok(Some(e));
            }
            let refill_possible = match want {
                Want::Create => self.has_delete,
                // Open files become idle when closed; free ones become files when created.
                Want::Delete => !pool.open.is_empty() || self.has_create,
                Want::Open => self.has_create,
            };
            if !refill_possible || began.elapsed() > DRY_WAIT {
                let n = pool.state.len();
                let msg = match want {
                    Want::Create => format!(
                        "createfile needs a file that does not exist, but all {n} entries exist{}: raise entries or lower prealloc",
                        if self.has_delete { " and no thread deleted one for 5 s" } else { " and no flowop deletes any" }
                    ),
                    Want::Delete => format!(
                        "deletefile needs an existing file nobody holds open, but {} of {n} exist and {} are open{}: raise entries or prealloc",
                        pool.idle.len() + pool.open.len(),
                        pool.open.len(),
                        if self.has_create { ", and none came back for 5 s" } else { "" }
                    ),
                    Want::Open => format!(
                        "openfile/statfile need an existing file, but none of the {n} entries exists{}: raise prealloc",
                        if self.has_create { " and none was created for 5 s" } else { "" }
                    ),
                };
                return Err(Error::RunDry {
                    fileset: self.name.clone(),
                    msg,
                });
            }
            if stop() {
                return Ok(None);
            }
            pool.waiters += 1;
            pool = self
                .cv
                .wait_timeout(pool, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            pool.waiters -= 1;
        }
    }

    /// A create of `e` succeeded: the creating thread holds it open.
    pub fn created(&self, e: u32) {
        let mut p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        p.refs[e as usize] = 1;
        p.enter(e, State::Open);
        self.wake(p);
    }

    /// A create failed (ENOSPC): the entry is free again.
    pub fn create_failed(&self, e: u32) {
        self.set(e, State::Free);
    }

    /// A delete of `e` succeeded.
    pub fn deleted(&self, e: u32) {
        self.set(e, State::Free);
    }

    /// A delete failed: the file is still there.
    pub fn delete_failed(&self, e: u32) {
        self.set(e, State::Idle);
    }

    /// A hold taken with [`Want::Open`] (or by a create) ends.
    pub fn release(&self, e: u32) {
        let mut p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let r = &mut p.refs[e as usize];
        *r = r.saturating_sub(1);
        if *r == 0 {
            p.enter(e, State::Idle);
        }
        self.wake(p);
    }

    fn set(&self, e: u32, s: State) {
        let mut p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        p.enter(e, s);
        self.wake(p);
    }

    /// Unlocks the pool, waking the threads that wait for an entry if there are any.
    fn wake(&self, p: std::sync::MutexGuard<'_, Pool>) {
        let waiting = p.waiters > 0;
        drop(p);
        if waiting {
            self.cv.notify_all();
        }
    }

    /// (free, idle, open, in transit) counts.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let p = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let t = p.state.len() - p.free.len() - p.idle.len() - p.open.len();
        (p.free.len(), p.idle.len(), p.open.len(), t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SizeDist;

    fn def(entries: u64, dirwidth: u64, prealloc: u64) -> FilesetDef {
        FilesetDef {
            name: "fs".into(),
            path: None,
            size: SizeDist::Gamma {
                mean: 16384.0,
                shape: 1.5,
            },
            entries,
            dirwidth,
            prealloc,
            readonly: false,
            reuse: false,
            single_file: false,
            dirs: false,
            line: 1,
        }
    }

    #[test]
    fn layout_has_the_entries_and_mean_width() {
        let l = plan(&def(10_000, 20, 80), Path::new("/t"), 1);
        assert_eq!(l.entries.len(), 10_000);
        assert_eq!(l.leaf_dirs, 500);
        let mut per_dir = std::collections::HashMap::new();
        for e in &l.entries {
            *per_dir
                .entry(e.rel.parent().unwrap().to_path_buf())
                .or_insert(0u64) += 1;
        }
        assert_eq!(per_dir.len(), 500);
        assert!(per_dir.values().all(|&c| c == 20));
        // No directory has more than dirwidth subdirectories.
        let mut kids = std::collections::HashMap::new();
        for d in &l.dirs {
            *kids
                .entry(d.parent().unwrap().to_path_buf())
                .or_insert(0u64) += 1;
        }
        assert!(kids.values().all(|&c| c <= 20));
        assert_eq!(l.entries.iter().filter(|e| e.prealloc).count(), 8000);
        let one = plan(&def(1000, 1_000_000, 100), Path::new("/t"), 1);
        assert!(one.dirs.is_empty());
        assert!(one
            .entries
            .iter()
            .all(|e| e.rel.parent() == Some(Path::new(""))));
    }

    #[test]
    fn the_seed_fixes_sizes_and_prealloc() {
        let a = plan(&def(1000, 20, 50), Path::new("/t"), 7);
        let b = plan(&def(1000, 20, 50), Path::new("/t"), 7);
        let c = plan(&def(1000, 20, 50), Path::new("/t"), 8);
        let key = |l: &Layout| {
            l.entries
                .iter()
                .map(|e| (e.size, e.prealloc))
                .collect::<Vec<_>>()
        };
        assert_eq!(key(&a), key(&b));
        assert_ne!(key(&a), key(&c));
    }

    #[test]
    fn pool_stays_balanced_and_never_hands_out_a_held_file() {
        let l = plan(&def(10, 10, 50), Path::new("/t"), 1);
        let fs = Fileset::new(&l, false, true, true);
        let mut rng = Rng::new(3);
        let no = || false;
        assert_eq!(fs.counts(), (5, 5, 0, 0));
        // Hold every existing file open: nothing can be deleted.
        // (An open may pick a file already open: keep opening until none is idle.)
        let mut held = Vec::new();
        while fs.counts().1 > 0 {
            held.push(fs.take(Want::Open, &mut rng, &no).unwrap().unwrap());
            assert!(held.len() < 1000);
        }
        assert_eq!(fs.counts(), (5, 0, 5, 0));
        let c = fs.take(Want::Create, &mut rng, &no).unwrap().unwrap();
        assert!(!held.contains(&c));
        fs.created(c);
        fs.release(c);
        let d = fs.take(Want::Delete, &mut rng, &no).unwrap().unwrap();
        assert_eq!(d, c, "the only idle file is the one just created");
        fs.deleted(d);
        for h in held {
            fs.release(h);
        }
        assert_eq!(fs.counts(), (5, 5, 0, 0));
    }

    #[test]
    fn a_pool_that_cannot_refill_says_so() {
        let l = plan(&def(4, 4, 100), Path::new("/t"), 1);
        let fs = Fileset::new(&l, false, true, false);
        let err = fs
            .take(Want::Create, &mut Rng::new(1), &|| false)
            .unwrap_err();
        let msg = err.to_string();
        assert!(
            msg.contains("fileset fs ran dry") && msg.contains("raise entries"),
            "{msg}"
        );
    }
}
