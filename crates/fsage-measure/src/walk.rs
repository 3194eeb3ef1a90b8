//! A parallel directory walker that keeps readdir order: worker threads list directories and
//! visit their files in parallel; the results are then put back in the order a single-threaded
//! recursive reader (readdir order, each subdirectory entered where it is met, like `grep -r`)
//! would meet them. It never follows symlinks and never leaves the root's file system.

use std::collections::VecDeque;
use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

/// What the visitor learns about one regular file.
pub struct FileCtx<'a> {
    pub path: &'a Path,
    /// Directories between the root and the file (0 = in the root).
    pub depth: u32,
    pub meta: &'a fs::Metadata,
}

/// What a walk skipped and counted.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WalkStats {
    /// Regular files visited (hard links once).
    pub files: u64,
    /// Directories below the root.
    pub dirs: u64,
    /// Directories below the root per depth: `dirs_at_depth[d]` = directories whose parent is at
    /// depth d (the root is depth 0).
    pub dirs_at_depth: Vec<u64>,
    pub symlinks: u64,
    /// Sockets, fifos, devices.
    pub specials: u64,
    /// Extra names of a hard-linked file (the file itself is visited once).
    pub hardlink_dups: u64,
    /// Directories on another file system (mount points), not entered.
    pub other_fs: u64,
    /// Entries that could not be listed or stat'ed; the first few errors are in `errors`.
    pub unreadable: u64,
    pub errors: Vec<String>,
}

const MAX_ERRORS: usize = 20;

impl WalkStats {
    fn error(&mut self, msg: String) {
        self.unreadable += 1;
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(msg);
        }
    }
    fn merge(&mut self, o: WalkStats) {
        self.files += o.files;
        self.dirs += o.dirs;
        if self.dirs_at_depth.len() < o.dirs_at_depth.len() {
            self.dirs_at_depth.resize(o.dirs_at_depth.len(), 0);
        }
        for (a, b) in self.dirs_at_depth.iter_mut().zip(&o.dirs_at_depth) {
            *a += b;
        }
        self.symlinks += o.symlinks;
        self.specials += o.specials;
        self.hardlink_dups += o.hardlink_dups;
        self.other_fs += o.other_fs;
        self.unreadable += o.unreadable;
        for e in o.errors {
            if self.errors.len() < MAX_ERRORS {
                self.errors.push(e);
            }
        }
    }
}

enum Item<T> {
    File(T),
    Dir(usize),
}

struct Job {
    id: usize,
    path: PathBuf,
    depth: u32,
}

struct Shared<T> {
    queue: VecDeque<Job>,
    /// Jobs queued or running.
    pending: usize,
    next_id: usize,
    /// Items of each directory job, by id.
    out: Vec<Option<Vec<Item<T>>>>,
    /// (dev, ino) of files with more than one link, seen so far.
    links: std::collections::HashSet<(u64, u64)>,
}

/// Walks `root` with `threads` workers. `visit` is called once for every regular file (a hard
/// link's first name met) and returns what to keep, or an error that counts the file as
/// unreadable; the kept values come back in recursive readdir order. Unreadable entries are skipped and counted, never fatal; only an unreadable
/// root is an error.
pub fn walk<T, F>(
    root: &Path,
    threads: usize,
    visit: F,
) -> Result<(Vec<T>, WalkStats), crate::Error>
where
    T: Send,
    F: Fn(&FileCtx) -> Result<T, crate::Error> + Sync,
{
    let meta = fs::metadata(root).map_err(|e| format!("{}: {e}", root.display()))?;
    if !meta.is_dir() {
        return Err(format!("{}: not a directory", root.display()).into());
    }
    fs::read_dir(root).map_err(|e| format!("{}: cannot list: {e}", root.display()))?;
    let root_dev = meta.dev();
    let shared = Mutex::new(Shared::<T> {
        queue: VecDeque::from([Job {
            id: 0,
            path: root.to_path_buf(),
            depth: 0,
        }]),
        pending: 1,
        next_id: 1,
        out: Vec::new(),
        links: Default::default(),
    });
    let cv = Condvar::new();
    let threads = threads.max(1);
    let stats: Vec<WalkStats> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| worker(&shared, &cv, root_dev, &visit)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let mut total = WalkStats::default();
    for st in stats {
        total.merge(st);
    }
    let mut sh = shared
        .into_inner()
        .map_err(|_| "walker poisoned".to_string())?;
    // Put the items back in recursive readdir order.
    let mut result = Vec::with_capacity(total.files as usize);
    let mut stack: Vec<std::vec::IntoIter<Item<T>>> = vec![sh
        .out
        .get_mut(0)
        .and_then(Option::take)
        .unwrap_or_default()
        .into_iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(Item::File(t)) => result.push(t),
            Some(Item::Dir(id)) => {
                let items = sh
                    .out
                    .get_mut(id)
                    .and_then(Option::take)
                    .unwrap_or_default();
                stack.push(items.into_iter());
            }
            None => {
                stack.pop();
            }
        }
    }
    Ok((result, total))
}

fn worker<T, F>(shared: &Mutex<Shared<T>>, cv: &Condvar, root_dev: u64, visit: &F) -> WalkStats
where
    F: Fn(&FileCtx) -> Result<T, crate::Error>,
{
    let mut st = WalkStats::default();
    loop {
        let job = {
            let mut sh = shared.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                if let Some(j) = sh.queue.pop_back() {
                    break Some(j);
                }
                if sh.pending == 0 {
                    break None;
                }
                sh = cv.wait(sh).unwrap_or_else(|p| p.into_inner());
            }
        };
        let Some(job) = job else {
            cv.notify_all();
            return st;
        };
        let mut items: Vec<Item<T>> = Vec::new();
        let mut subdirs: Vec<Job> = Vec::new();
        list_dir(
            &job,
            root_dev,
            visit,
            shared,
            &mut st,
            &mut items,
            &mut subdirs,
        );
        let mut sh = shared.lock().unwrap_or_else(|p| p.into_inner());
        // Give the subdirectories ids now, in order, and queue them.
        let mut k = 0;
        for it in items.iter_mut() {
            if let Item::Dir(slot) = it {
                let id = sh.next_id;
                sh.next_id += 1;
                *slot = id;
                let mut j = std::mem::replace(
                    &mut subdirs[k],
                    Job {
                        id: 0,
                        path: PathBuf::new(),
                        depth: 0,
                    },
                );
                j.id = id;
                k += 1;
                sh.queue.push_back(j);
                sh.pending += 1;
            }
        }
        if sh.out.len() <= job.id {
            sh.out.resize_with(job.id + 1, || None);
        }
        sh.out[job.id] = Some(items);
        sh.pending -= 1;
        drop(sh);
        cv.notify_all();
    }
}

fn list_dir<T, F>(
    job: &Job,
    root_dev: u64,
    visit: &F,
    shared: &Mutex<Shared<T>>,
    st: &mut WalkStats,
    items: &mut Vec<Item<T>>,
    subdirs: &mut Vec<Job>,
) where
    F: Fn(&FileCtx) -> Result<T, crate::Error>,
{
    let rd = match fs::read_dir(&job.path) {
        Ok(rd) => rd,
        Err(e) => {
            st.error(format!("{}: cannot list: {e}", job.path.display()));
            return;
        }
    };
    for ent in rd {
        let ent = match ent {
            Ok(e) => e,
            Err(e) => {
                st.error(format!("{}: readdir: {e}", job.path.display()));
                break;
            }
        };
        let ft = match ent.file_type() {
            Ok(t) => t,
            Err(e) => {
                st.error(format!("{}: {e}", ent.path().display()));
                continue;
            }
        };
        if ft.is_symlink() {
            st.symlinks += 1;
            continue;
        }
        if ft.is_socket() || ft.is_fifo() || ft.is_block_device() || ft.is_char_device() {
            st.specials += 1;
            continue;
        }
        let path = ent.path();
        let meta = match ent.metadata() {
            Ok(m) => m,
            Err(e) => {
                st.error(format!("{}: stat: {e}", path.display()));
                continue;
            }
        };
        if ft.is_dir() {
            if meta.dev() != root_dev {
                st.other_fs += 1;
                continue;
            }
            st.dirs += 1;
            let d = job.depth as usize;
            if st.dirs_at_depth.len() <= d {
                st.dirs_at_depth.resize(d + 1, 0);
            }
            st.dirs_at_depth[d] += 1;
            subdirs.push(Job {
                id: 0,
                path,
                depth: job.depth + 1,
            });
            items.push(Item::Dir(0));
            continue;
        }
        if !ft.is_file() {
            st.specials += 1;
            continue;
        }
        if meta.nlink() > 1 {
            let mut sh = shared.lock().unwrap_or_else(|p| p.into_inner());
            if !sh.links.insert((meta.dev(), meta.ino())) {
                st.hardlink_dups += 1;
                continue;
            }
        }
        let ctx = FileCtx {
            path: &path,
            depth: job.depth,
            meta: &meta,
        };
        match visit(&ctx) {
            Ok(t) => {
                st.files += 1;
                items.push(Item::File(t));
            }
            Err(e) => st.error(e.to_string()),
        }
    }
}

/// Worker threads to use by default: the CPUs available.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}
