//! `--mode tree`: each commit's changes (`git diff-tree -r -M`, renames detected) applied to a
//! plain working tree through fsage-exec's POSIX backend, with an op log. Per commit: deletions
//! first, then renames, then new and changed files (a changed file is deleted and made again,
//! as git's checkout does); a directory is made before its first entry and removed with its
//! last, as git does. File contents are fsage's pseudo-random data of each blob's size, not the
//! blob (paths and sizes match the commit; contents do not); submodules are left out and
//! symlinks become files of the link's size. The same repository and range give the same op log.

use crate::git;
use crate::{Error, Result};
use fsage_exec::{Backend, FileRef, OpLog, Operation, Posix, Step, WriteMode};
use fsage_plan::DirTree;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// Paths and sizes of the files of a tree (`/`-separated, relative).
pub type Files = BTreeMap<String, u64>;

/// Files of commit `id` in `src` with their sizes (`git ls-tree -r -l`), submodules left out.
pub fn ls_tree(src: &Path, id: &str) -> Result<Files> {
    let out = git::run(src, &["ls-tree", "-r", "-l", "-z", id])?;
    let mut files = Files::new();
    for rec in out.split('\0').filter(|r| !r.is_empty()) {
        let (meta, path) = rec
            .split_once('\t')
            .ok_or_else(|| Error::operation(format!("git ls-tree: odd line {rec:?}")))?;
        let f: Vec<&str> = meta.split_whitespace().collect();
        if f.get(1) != Some(&"blob") {
            continue;
        }
        let size = f.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
        files.insert(path.to_string(), size);
    }
    Ok(files)
}

/// Regular files under `dir` with their sizes (what tree mode leaves on disk).
pub fn disk_files(dir: &Path) -> Result<Files> {
    fn walk(root: &Path, rel: &str, out: &mut Files) -> Result<()> {
        let d = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(rel)
        };
        for e in std::fs::read_dir(&d).map_err(|e| crate::Error::io(&d, "readdir", e))? {
            let e = e.map_err(|e| crate::Error::io(&d, "readdir", e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            let p = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let m = e
                .metadata()
                .map_err(|er| crate::Error::io(&e.path(), "stat", er))?;
            if m.is_dir() {
                walk(root, &p, out)?;
            } else {
                out.insert(p, m.len());
            }
        }
        Ok(())
    }
    let mut out = Files::new();
    walk(dir, "", &mut out)?;
    Ok(out)
}

fn parent(p: &str) -> &str {
    p.rsplit_once('/').map_or("", |(d, _)| d)
}

/// One entry of `git diff-tree --raw`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Change {
    status: char,
    new_mode: String,
    old_id: String,
    new_id: String,
    path: String,
    /// The rename's source.
    from: Option<String>,
}

fn diff(src: &Path, prev: &str, id: &str) -> Result<Vec<Change>> {
    let out = git::run(
        src,
        &[
            "diff-tree",
            "-r",
            "-M",
            "-z",
            "--raw",
            "--no-commit-id",
            prev,
            id,
        ],
    )?;
    let mut it = out.split('\0');
    let mut v = Vec::new();
    while let Some(meta) = it.next() {
        if meta.is_empty() {
            continue;
        }
        let f: Vec<&str> = meta.trim_start_matches(':').split_whitespace().collect();
        if f.len() < 5 {
            return Err(Error::operation(format!(
                "git diff-tree: odd record {meta:?}"
            )));
        }
        let status = f[4].chars().next().unwrap_or('?');
        let first = it.next().unwrap_or("").to_string();
        let (from, path) = if status == 'R' || status == 'C' {
            (Some(first), it.next().unwrap_or("").to_string())
        } else {
            (None, first)
        };
        v.push(Change {
            status,
            new_mode: f[1].to_string(),
            old_id: f[2].to_string(),
            new_id: f[3].to_string(),
            path,
            from,
        });
    }
    Ok(v)
}

/// Sizes of the blobs `ids` (one `git cat-file --batch-check` per commit).
fn blob_sizes(src: &Path, ids: &[String]) -> Result<Vec<u64>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = git::command(src, &["cat-file", "--batch-check=%(objectsize)"]);
    c.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = c
        .spawn()
        .map_err(|e| Error::operation(format!("cannot run git cat-file: {e}")))?;
    let mut input = String::new();
    for id in ids {
        input.push_str(id);
        input.push('\n');
    }
    let mut stdin = child.stdin.take().expect("piped");
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child
        .wait_with_output()
        .map_err(|e| Error::operation(format!("git cat-file: {e}")))?;
    let _ = writer.join();
    let text = String::from_utf8_lossy(&out.stdout);
    let sizes: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    if sizes.len() != ids.len() {
        return Err(Error::operation(format!(
            "git cat-file gave {} sizes for {} blobs",
            sizes.len(),
            ids.len()
        )));
    }
    Ok(sizes)
}

/// Replays commits onto a working tree through the POSIX backend.
pub struct TreeReplay {
    src: PathBuf,
    dir: PathBuf,
    /// Closed while the file system is remounted for a measurement.
    backend: Option<Posix>,
    log: Option<OpLog>,
    tree: DirTree,
    tick: u64,
    files: Files,
    /// Directories (not the root) and how many entries each holds.
    dirs: BTreeMap<String, u64>,
}

impl TreeReplay {
    /// Opens the working tree `dir`, which holds `files` (empty for a new run, the checkpoint's
    /// commit for a resumed one); the op log is new, or cut back to `log_len` bytes on resume.
    pub fn open(
        dir: &Path,
        src: &Path,
        files: Files,
        op_log: Option<(&Path, Option<u64>)>,
        tick: u64,
    ) -> Result<TreeReplay> {
        let tree = DirTree::from_paths(&[]).map_err(|e| Error::operation(e.to_string()))?;
        let log = match op_log {
            None => None,
            Some((p, None)) => {
                Some(OpLog::create(p).map_err(|e| crate::Error::io(p, "create the op log", e))?)
            }
            Some((p, Some(len))) => Some(
                OpLog::resume(p, len).map_err(|e| crate::Error::io(p, "reopen the op log", e))?,
            ),
        };
        let mut t = TreeReplay {
            src: src.to_path_buf(),
            dir: dir.to_path_buf(),
            backend: None,
            log,
            tree,
            tick,
            files: Files::new(),
            dirs: BTreeMap::new(),
        };
        for (p, s) in files {
            t.add_entry(&p, false)?;
            t.files.insert(p, s);
        }
        Ok(t)
    }

    /// Closes the backend (it holds descriptors on the working tree); reopened by the next commit.
    pub fn suspend(&mut self) {
        self.backend = None;
    }

    fn backend(&mut self) -> Result<&mut Posix> {
        if self.backend.is_none() {
            let mut b = Posix::open(&self.dir, WriteMode::Write, 1)
                .map_err(|e| crate::Error::io(&self.dir, "open the working tree", e))?;
            b.make_dirs(&self.tree)
                .map_err(|e| Error::operation(e.to_string()))?;
            self.backend = Some(b);
        }
        Ok(self.backend.as_mut().expect("opened above"))
    }

    /// Steps carried out so far (the next step's tick).
    pub fn tick(&self) -> u64 {
        self.tick
    }

    /// Flushes the op log; its length.
    pub fn op_log_len(&mut self) -> Result<Option<u64>> {
        match self.log.as_mut() {
            Some(l) => l
                .flushed_len()
                .map(Some)
                .map_err(|e| Error::operation(format!("op log: {e}"))),
            None => Ok(None),
        }
    }

    fn apply(&mut self, op: Operation) -> Result<()> {
        let step = Step {
            tick: self.tick,
            op,
        };
        self.tick += 1;
        if let Some(l) = self.log.as_mut() {
            l.step(&step, &self.tree)
                .map_err(|e| Error::operation(format!("op log: {e}")))?;
        }
        self.backend()?
            .apply(&step)
            .map_err(|e| Error::operation(e.to_string()))
    }

    fn ensure_dir(&mut self, d: &str, emit: bool) -> Result<()> {
        if d.is_empty() || self.dirs.contains_key(d) {
            return Ok(());
        }
        self.add_entry(d, emit)?;
        if emit {
            self.apply(Operation::Mkdir {
                path: d.to_string(),
            })?;
        }
        self.dirs.insert(d.to_string(), 0);
        Ok(())
    }

    /// Counts a new entry at `p`, making its parents first.
    fn add_entry(&mut self, p: &str, emit: bool) -> Result<()> {
        let d = parent(p);
        self.ensure_dir(d, emit)?;
        if let Some(n) = self.dirs.get_mut(d) {
            *n += 1;
        }
        Ok(())
    }

    /// Uncounts the entry at `p`, removing directories it leaves empty.
    fn remove_entry(&mut self, p: &str) -> Result<()> {
        let d = parent(p);
        if d.is_empty() {
            return Ok(());
        }
        let left = match self.dirs.get_mut(d) {
            Some(n) => {
                *n = n.saturating_sub(1);
                *n
            }
            None => return Ok(()),
        };
        if left == 0 {
            self.dirs.remove(d);
            let d = d.to_string();
            self.apply(Operation::Rmdir { path: d.clone() })?;
            self.remove_entry(&d)?;
        }
        Ok(())
    }

    fn delete(&mut self, p: &str) -> Result<()> {
        let size = self.files.remove(p);
        self.apply(Operation::Delete {
            file: FileRef::Path(p.to_string()),
            size,
        })?;
        self.remove_entry(p)
    }

    fn create(&mut self, p: &str, size: u64) -> Result<()> {
        self.add_entry(p, true)?;
        self.apply(Operation::Create {
            file: FileRef::Path(p.to_string()),
            size,
        })?;
        self.files.insert(p.to_string(), size);
        Ok(())
    }

    /// Applies the changes from `prev` (None: the empty tree) to `id`.
    pub fn commit(&mut self, prev: Option<&str>, id: &str) -> Result<()> {
        let changes = diff(&self.src, prev.unwrap_or(git::EMPTY_TREE), id)?;
        let is_gitlink = |c: &Change| c.new_mode == "160000";
        let wanted: Vec<String> = changes
            .iter()
            .filter(|c| c.status != 'D' && !is_gitlink(c))
            .filter(|c| c.status != 'R' || c.old_id != c.new_id)
            .map(|c| c.new_id.clone())
            .collect();
        let mut sizes = blob_sizes(&self.src, &wanted)?.into_iter();
        // Deletions, then renames, then new and changed files.
        for c in changes.iter().filter(|c| c.status == 'D') {
            if self.files.contains_key(&c.path) {
                self.delete(&c.path)?;
            }
        }
        for c in changes.iter().filter(|c| c.status == 'R') {
            let from = c.from.as_deref().unwrap_or_default();
            if !self.files.contains_key(from) {
                continue;
            }
            self.add_entry(&c.path, true)?;
            self.apply(Operation::Rename {
                from: from.to_string(),
                to: c.path.clone(),
            })?;
            let s = self.files.remove(from).unwrap_or(0);
            self.files.insert(c.path.clone(), s);
            self.remove_entry(from)?;
        }
        for c in changes.iter().filter(|c| c.status != 'D') {
            if is_gitlink(c) {
                if self.files.contains_key(&c.path) {
                    self.delete(&c.path)?; // a file became a submodule
                }
                continue;
            }
            if c.status == 'R' && c.old_id == c.new_id {
                continue;
            }
            let size = sizes.next().unwrap_or(0);
            if self.files.contains_key(&c.path) {
                self.delete(&c.path)?;
            }
            self.create(&c.path, size)?;
        }
        Ok(())
    }

    /// The files the working tree should hold now.
    pub fn files(&self) -> &Files {
        &self.files
    }
}
